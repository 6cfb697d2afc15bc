//! The social model of Social BO (Adachi et al., "Bayesian Optimization for Building
//! Social-Influence-Free Consensus"; ../shared/notes/social-bo.md §1–2).
//!
//! `n` agents have true utilities `u(·, i)` in an RKHS ball `‖u(·, i)‖_k ≤ L`; a
//! row-stochastic social graph `A` (entries ≥ δ_A) bends them into the public utilities
//! `v = A u`. Every vote is Bradley–Terry: agent `i` prefers `a` to `b` with probability
//! `σ(f_i(a) − f_i(b))`, `f = u` on the private channel and `f = v` on the public one.
//!
//! By the representer theorem everything lives on the utilities at the `m` points voted on.
//! agora works in whitened coordinates: `U_i = C α_i` with `K + jitter·I = C Cᵀ`, so the
//! RKHS ball is `‖α_i‖ ≤ L` and well conditioned even when points crowd. The variables of
//! the MAP (note (52a)) are `(α, A)`; `V = A U` is eliminated (its ball is implied: rows
//! of `A` are convex weights). The objective
//!
//! `J(U, A) = ℓ_u(U) + ℓ_v(A U) + Σ_ij (κ − 1) log A_ij − ξ Σ_ij A_ij²`
//!
//! is concave in `U` for fixed `A` and in `A` for fixed `U`, but bilinear jointly
//! (biconvex; the paper calls it convex). It is solved with agora's augmented-Lagrangian
//! solver ([`agora_math::constrained`]) from several starts, warm-started from the last
//! fit, with KKT residuals reported, and checked against IPOPT on recorded cases
//! (conformance/sbo-map).
//!
//! Prior **\[PAPER-BUG\]**: the paper's Table 5 values (`ξ = 1/(2δ_A²n²)`, `κ < 1`) contradict
//! its own requirements (`κ > 1`, `ξ < 1/(2n²)`) and pin `Â` to the uniform, rank-one matrix
//! whatever the data (note §2.2). agora's default is the coherent flat prior
//! [`SocialPrior::coherent`] (`κ = 1.05`, `ξ = 1/(4n²)`); the literal values stay available
//! as [`SocialPrior::paper_table5`].
//!
//! Confidence sets (Lemma D.2, Remarks D.3–D.5): `(U, A)` with `J ≥ Ĵ − β`; optionally
//! ([`SocialConfig::separate_lr`]) also `ℓ_u(U) ≥ ℓ̂_u − β_u` and `ℓ_v(AU) ≥ ℓ̂_v − β_v`,
//! where `ℓ̂_u`, `ℓ̂_v` are the separate MLEs (u from private votes; a free `V` from public
//! votes). A bound at a new point `x` extends the Gram by `x` (one more whitened coordinate
//! per agent).

// Dense triangular and row loops read as the algebra does.
#![allow(clippy::needless_range_loop)]

use crate::Kernel;
use agora_core::{Channel, Error, Result};
use agora_math::constrained::{AlOptions, AlResult, Constraint, Kind, minimize_al};
use agora_math::linalg::Cholesky;
use agora_math::optim::Objective;
use agora_math::welfare::Welfare;
use faer::Mat;
use rayon::prelude::*;

/// A validated row-stochastic social graph.
#[derive(Debug, Clone, PartialEq)]
pub struct SocialGraph {
    n: usize,
    a: Vec<f64>,
}

impl SocialGraph {
    /// Rows of `A`: each sums to 1 (within 1e-9) with every entry in `[δ_A, 1 − δ_A]`
    /// (`δ_A ≥ 0`; use 0 for a graph that need not be strictly positive, e.g. a dictator).
    /// Errors name the entry or row.
    pub fn new(rows: &[Vec<f64>], delta_a: f64) -> Result<SocialGraph> {
        let n = rows.len();
        if n == 0 {
            return Err(Error::invalid("graph", "needs at least one agent"));
        }
        if !(0.0..0.5).contains(&delta_a) && n > 1 {
            return Err(Error::invalid(
                "delta_a",
                format!("must lie in [0, 0.5), got {delta_a}"),
            ));
        }
        let mut a = Vec::with_capacity(n * n);
        for (i, r) in rows.iter().enumerate() {
            if r.len() != n {
                return Err(Error::dim(format!("graph[{i}]"), n, r.len()));
            }
            for (j, v) in r.iter().enumerate() {
                let hi = if n == 1 { 1.0 } else { 1.0 - delta_a };
                if !v.is_finite() || *v < delta_a - 1e-12 || *v > hi + 1e-12 {
                    return Err(Error::invalid(
                        format!("graph[{i}][{j}]"),
                        format!("must lie in [δ_A, 1 − δ_A] = [{delta_a}, {hi}], got {v}"),
                    ));
                }
            }
            let s: f64 = r.iter().sum();
            if (s - 1.0).abs() > 1e-9 {
                return Err(Error::invalid(
                    format!("graph[{i}]"),
                    format!("each row must sum to 1 (row-stochastic), got {s}"),
                ));
            }
            a.extend(r);
        }
        Ok(SocialGraph { n, a })
    }

    /// Number of agents.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Entry `A_ij`.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.a[i * self.n + j]
    }

    /// Row-major entries.
    pub fn entries(&self) -> &[f64] {
        &self.a
    }

    /// Rows.
    pub fn rows(&self) -> Vec<Vec<f64>> {
        self.a.chunks(self.n).map(|r| r.to_vec()).collect()
    }

    /// `v = A u`.
    pub fn apply(&self, u: &[f64]) -> Vec<f64> {
        self.a
            .chunks(self.n)
            .map(|r| r.iter().zip(u).map(|(a, b)| a * b).sum())
            .collect()
    }

    /// `‖A − B‖_F`.
    pub fn frobenius_distance(&self, other: &[f64]) -> f64 {
        self.a
            .iter()
            .zip(other)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt()
    }
}

/// One agent's vote: `a_wins` is whether agent `agent` preferred point `a` to point `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vote {
    /// Public or private.
    pub channel: Channel,
    /// Agent index.
    pub agent: usize,
    /// First point (index into the model's points).
    pub a: usize,
    /// Second point.
    pub b: usize,
    /// `a` preferred.
    pub a_wins: bool,
}

/// The graph prior `p(A) ∝ exp(−ξ‖A‖_F²) Π_i Dir(A_i; κ)` on `δ_A ≤ A_ij`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SocialPrior {
    /// Entry floor `δ_A`.
    pub delta_a: f64,
    /// Dirichlet concentration `κ` (all entries).
    pub kappa: f64,
    /// Frobenius weight `ξ`.
    pub xi: f64,
}

impl SocialPrior {
    /// agora's default: `δ_A = 0.01`, `κ = 1.05 > 1`, `ξ = 1/(4n²) < 1/(2n²)`, a flat prior
    /// meeting the paper's Thm 3.6 side conditions (note §2.2, §8.5).
    pub fn coherent(n: usize) -> SocialPrior {
        SocialPrior {
            delta_a: 0.01,
            kappa: 1.05,
            xi: 1.0 / (4.0 * (n * n) as f64),
        }
    }

    /// The paper's Table 5 values, `ξ = 1/(2δ_A²n²)` and `κ = 1 + (2δ_A² − 1)/n²`: they pull
    /// `Â` to the uniform matrix (note §2.2); kept for comparison only.
    pub fn paper_table5(n: usize) -> SocialPrior {
        let d = 0.01f64;
        let n2 = (n * n) as f64;
        SocialPrior {
            delta_a: d,
            kappa: 1.0 + (2.0 * d * d - 1.0) / n2,
            xi: 1.0 / (2.0 * d * d * n2),
        }
    }

    fn check(&self, n: usize) -> Result<()> {
        if !(self.delta_a > 0.0 && self.delta_a * n as f64 <= 1.0) {
            return Err(Error::invalid(
                "delta_a",
                format!(
                    "must lie in (0, 1/n] = (0, {}], got {}",
                    1.0 / n as f64,
                    self.delta_a
                ),
            ));
        }
        for (name, v) in [("kappa", self.kappa), ("xi", self.xi)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::invalid(
                    name,
                    format!("must be finite and >= 0, got {v}"),
                ));
            }
        }
        Ok(())
    }
}

/// How the public utilities relate to the private ones.
#[derive(Debug, Clone, PartialEq)]
pub enum Coupling {
    /// `v = A u` with `A` learned (Social BO).
    Learned,
    /// `v = A u` with `A` known (the Oracle baseline).
    Known(SocialGraph),
    /// Public votes say nothing about `u` (the Independent baseline): `u` is fitted to the
    /// private votes only.
    Independent,
}

/// Settings of the social model.
#[derive(Debug, Clone, PartialEq)]
pub struct SocialConfig {
    /// RKHS-ball radius `L` of every agent's utility.
    pub bound: f64,
    /// Diagonal jitter added to the Gram.
    pub jitter: f64,
    /// Graph prior.
    pub prior: SocialPrior,
    /// Likelihood-ratio slacks `β`, `β_u`, `β_v` (the paper's experiments: 0.5 each).
    pub beta: f64,
    /// See `beta`.
    pub beta_u: f64,
    /// See `beta`.
    pub beta_v: f64,
    /// MAP starts besides the warm start (uniform `A`, near-identity `A`, seeded random rows).
    pub starts: usize,
    /// Coupling.
    pub coupling: Coupling,
    /// Also require `ℓ_u ≥ ℓ̂_u − β_u` and `ℓ_v ≥ ℓ̂_v − β_v` (problem (52b) as printed).
    /// Off by default: IPOPT on the recorded cases (conformance/sbo-map) finds the set
    /// empty in 5 of 6 cases at β = 0.5, because `ℓ̂_u` and `ℓ̂_v` are reached on the ball's
    /// edge by different utilities that `V = A U` cannot match at once (the shortfall grows
    /// with the number of votes, 0.3–5 nats). agora uses the joint set of Lemma D.2,
    /// `J ≥ Ĵ − β`, which always holds the MAP.
    pub separate_lr: bool,
    /// Weight `r` of a Gaussian prior `−(r/2) Σ_i ‖u_i‖²_k` on the utilities (in whitened
    /// coordinates `−(r/2)‖α‖²`, the new point's coordinate included in the bound
    /// problems). 0 is the paper's uniform prior. With few votes per pair the votes are
    /// separable, the uniform-prior MAP sits on the ball's edge (IPOPT finds the ball active
    /// for every agent in every recorded case), and no RKHS budget is left for optimism at new
    /// options: the search then settles on the first local optimum (measured on the toy). A
    /// weak prior (the view of the paper's GP variant, App. F.1) keeps the MAP inside and
    /// bounds the optimism at a new option by the likelihood-ratio slack, as in GP-UCB.
    pub ridge: f64,
    /// Solver settings of the MAP and the MLEs.
    pub solver: AlOptions,
    /// Solver settings of the bound, width and acquisition problems (looser: their values
    /// steer the search and the private-vote rule, where 1e−5 is plenty).
    pub bound_solver: AlOptions,
}

impl SocialConfig {
    /// The paper's settings for `n` agents (L = 1.5, β's = 0.5) with the coherent prior.
    pub fn paper(n: usize) -> SocialConfig {
        SocialConfig {
            bound: 1.5,
            jitter: 1e-6,
            prior: SocialPrior::coherent(n),
            beta: 0.5,
            beta_u: 0.5,
            beta_v: 0.5,
            starts: 2,
            coupling: Coupling::Learned,
            separate_lr: false,
            ridge: 0.1,
            solver: AlOptions {
                opt_tol: 1e-7,
                feas_tol: 1e-9,
                ..AlOptions::default()
            },
            bound_solver: AlOptions {
                opt_tol: 1e-5,
                feas_tol: 1e-7,
                f_tol: 1e-9,
                inner: agora_math::optim::LbfgsbOptions {
                    m: 12,
                    ftol: 1e-11,
                    pgtol: 1e-7,
                    max_iter: 2000,
                },
                ..AlOptions::default()
            },
        }
    }
}

/// The MAP and the separate MLEs.
#[derive(Debug, Clone, PartialEq)]
pub struct SocialFit {
    /// Whitened utilities, agent-major `n × m`.
    pub alpha: Vec<f64>,
    /// `Â`, row-major.
    pub a: Vec<f64>,
    /// `Ĵ`.
    pub objective: f64,
    /// `ℓ̂_u` (0 without private votes; NaN unless [`SocialConfig::separate_lr`]).
    pub mle_u: f64,
    /// `ℓ̂_v` (0 without public votes; NaN unless [`SocialConfig::separate_lr`]).
    pub mle_v: f64,
    /// Worst KKT residuals of the MAP (stationarity, feasibility, complementarity).
    pub kkt: [f64; 3],
    /// Whether the MAP solve met its tolerances.
    pub converged: bool,
    /// Other local maxima found from the starts that lie in the confidence set
    /// (`J ≥ Ĵ − β`), as `[α, A]` vectors: the set can hold several modes (A and its
    /// mirror image), and the bound problems start from each.
    pub modes: Vec<Vec<f64>>,
}

/// Points, votes, and the fitted social model.
#[derive(Debug, Clone)]
pub struct SocialModel {
    cfg: SocialConfig,
    n: usize,
    kernel: Box<dyn Kernel>,
    points: Mat<f64>,
    /// Lower factor of `K + jitter·I`.
    c: Mat<f64>,
    private: Vec<Vote>,
    public: Vec<Vote>,
    fit: Option<SocialFit>,
}

/// The screening scores of one option ([`SocialModel::screen`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Screen {
    /// Optimistic improvement over the previous option with the MAP fixed.
    pub optimism: f64,
    /// Welfare of the MAP utilities at the option.
    pub map_welfare: f64,
}

/// A constraint (or objective) with its gradient, boxed.
type ConFn<'a> = Box<dyn Fn(&[f64], &mut [f64]) -> Result<f64> + Sync + 'a>;

/// Inequality constraints (`≤ 0`) then equalities, as the solver takes them.
fn constraints<'a>(ineq: &[&'a [ConFn<'a>]], eq: &'a [ConFn<'a>]) -> Vec<Constraint<'a>> {
    let mut out: Vec<Constraint<'a>> = ineq
        .iter()
        .flat_map(|set| set.iter())
        .map(|f| Constraint {
            kind: Kind::Inequality,
            f: f.as_ref(),
        })
        .collect();
    out.extend(eq.iter().map(|f| Constraint {
        kind: Kind::Equality,
        f: f.as_ref(),
    }));
    out
}

/// Minimizes a linear objective over some set and returns the minimum.
type WidthSolve<'a> = dyn Fn(&Objective<'_>) -> Result<f64> + Sync + 'a;

/// Offsets of the variables `[α (n·m), β (n, extended only), A (n², coupled only), τ]`.
#[derive(Debug, Clone, Copy)]
struct Layout {
    n: usize,
    m: usize,
    ext: bool,
    a: bool,
    tau: bool,
}

impl Layout {
    fn beta(&self) -> usize {
        self.n * self.m
    }
    fn a_off(&self) -> usize {
        self.beta() + if self.ext { self.n } else { 0 }
    }
    fn tau(&self) -> usize {
        self.a_off() + if self.a { self.n * self.n } else { 0 }
    }
    fn len(&self) -> usize {
        self.tau() + usize::from(self.tau)
    }
}

fn log_sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        -(-z).exp().ln_1p()
    } else {
        z - z.exp().ln_1p()
    }
}

fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// Bradley–Terry log-likelihood of `votes` under utilities `f` (`n × m`, agent-major), with
/// its gradient added into `g` (same layout).
fn bt_loglik(votes: &[Vote], f: &[f64], m: usize, g: Option<&mut [f64]>) -> f64 {
    let mut ll = 0.0;
    match g {
        Some(g) => {
            for v in votes {
                let s = if v.a_wins { 1.0 } else { -1.0 };
                let d = f[v.agent * m + v.a] - f[v.agent * m + v.b];
                ll += log_sigmoid(s * d);
                let gd = s * sigmoid(-s * d);
                g[v.agent * m + v.a] += gd;
                g[v.agent * m + v.b] -= gd;
            }
        }
        None => {
            for v in votes {
                let s = if v.a_wins { 1.0 } else { -1.0 };
                ll += log_sigmoid(s * (f[v.agent * m + v.a] - f[v.agent * m + v.b]));
            }
        }
    }
    ll
}

impl SocialModel {
    /// A model of `n` agents with `kernel` on points in `[0, 1]^d`.
    pub fn new(n: usize, kernel: Box<dyn Kernel>, cfg: SocialConfig) -> Result<SocialModel> {
        if n == 0 {
            return Err(Error::invalid(
                "agents",
                "needs at least one agent (n >= 1)",
            ));
        }
        cfg.prior.check(n)?;
        if let Coupling::Known(g) = &cfg.coupling
            && g.n() != n
        {
            return Err(Error::dim("graph", n, g.n()));
        }
        for (name, v) in [
            ("bound", cfg.bound),
            ("beta", cfg.beta),
            ("beta_u", cfg.beta_u),
            ("beta_v", cfg.beta_v),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::invalid(
                    name,
                    format!("must be finite and > 0, got {v}"),
                ));
            }
        }
        Ok(SocialModel {
            cfg,
            n,
            kernel,
            points: Mat::zeros(0, 0),
            c: Mat::zeros(0, 0),
            private: Vec::new(),
            public: Vec::new(),
            fit: None,
        })
    }

    /// Agents.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Points voted on so far.
    pub fn m(&self) -> usize {
        self.points.nrows()
    }

    /// Settings.
    pub fn config(&self) -> &SocialConfig {
        &self.cfg
    }

    /// Fresh MAP starts besides the warm start (0: the warm start only, when there is one).
    pub fn set_starts(&mut self, starts: usize) {
        self.cfg.starts = starts;
    }

    /// Change the ball radius `L` (refit needed).
    pub fn set_bound(&mut self, l: f64) -> Result<()> {
        if !(l.is_finite() && l > 0.0) {
            return Err(Error::invalid(
                "bound",
                format!("must be finite and > 0, got {l}"),
            ));
        }
        self.cfg.bound = l;
        Ok(())
    }

    /// Replace the kernel (refactors the Gram; refit needed).
    pub fn set_kernel(&mut self, kernel: Box<dyn Kernel>) -> Result<()> {
        self.kernel = kernel;
        self.refactor()
    }

    /// The kernel.
    pub fn kernel(&self) -> &dyn Kernel {
        self.kernel.as_ref()
    }

    /// The points (rows).
    pub fn points(&self) -> &Mat<f64> {
        &self.points
    }

    /// Private and public votes.
    pub fn votes(&self) -> (&[Vote], &[Vote]) {
        (&self.private, &self.public)
    }

    /// The last fit.
    pub fn fit(&self) -> Option<&SocialFit> {
        self.fit.as_ref()
    }

    fn refactor(&mut self) -> Result<()> {
        let m = self.m();
        if m == 0 {
            self.c = Mat::zeros(0, 0);
            return Ok(());
        }
        let mut k = self.kernel.gram(self.points.as_ref());
        for i in 0..m {
            k[(i, i)] += self.cfg.jitter;
        }
        let ch = Cholesky::new(k.as_ref())?;
        self.c = ch.l().to_owned();
        Ok(())
    }

    /// Add a point; returns its index. The whitened coordinates of the last fit are carried
    /// over (utilities at old points kept, the new point's at its interpolated value).
    pub fn add_point(&mut self, x: &[f64]) -> Result<usize> {
        let d = if self.m() == 0 {
            x.len()
        } else {
            self.points.ncols()
        };
        if x.len() != d {
            return Err(Error::dim("point", d, x.len()));
        }
        agora_core::check_finite_slice("point", x)?;
        let old_u = self.fit.as_ref().map(|f| self.utilities_of(&f.alpha));
        let m = self.m();
        let mut p = Mat::zeros(m + 1, d);
        for i in 0..m {
            for j in 0..d {
                p[(i, j)] = self.points[(i, j)];
            }
        }
        for j in 0..d {
            p[(m, j)] = x[j];
        }
        self.points = p;
        self.refactor()?;
        if let (Some(u_old), Some(fit)) = (old_u, self.fit.as_mut()) {
            // u at the new point: the minimum-norm interpolant C_old α at x.
            let n = self.n;
            let (cx, _) = ext_row(&self.c, m);
            let mut u = vec![0.0; n * (m + 1)];
            for i in 0..n {
                for k in 0..m {
                    u[i * (m + 1) + k] = u_old[i * m + k];
                }
                let ai = &fit.alpha[i * m..(i + 1) * m];
                u[i * (m + 1) + m] = cx.iter().zip(ai).map(|(a, b)| a * b).sum();
            }
            fit.alpha = whiten(&self.c, &u, n);
            // Keep the old coordinates within the ball after refactoring.
            for i in 0..n {
                let s = fit.alpha[i * (m + 1)..(i + 1) * (m + 1)]
                    .iter()
                    .map(|v| v * v)
                    .sum::<f64>()
                    .sqrt();
                if s > self.cfg.bound {
                    for v in &mut fit.alpha[i * (m + 1)..(i + 1) * (m + 1)] {
                        *v *= self.cfg.bound / s;
                    }
                }
            }
        }
        Ok(m)
    }

    /// Record a vote on two existing points; errors name an unknown agent or point.
    pub fn add_vote(&mut self, v: Vote) -> Result<()> {
        if v.agent >= self.n {
            return Err(Error::invalid(
                "agent",
                format!("{} is not an agent of this group (0..{})", v.agent, self.n),
            ));
        }
        for (name, p) in [("a", v.a), ("b", v.b)] {
            if p >= self.m() {
                return Err(Error::invalid(
                    name,
                    format!("{p} is not a point voted on (0..{})", self.m()),
                ));
            }
        }
        match v.channel {
            Channel::Private => self.private.push(v),
            Channel::Public => self.public.push(v),
        }
        Ok(())
    }

    /// Choose an RBF lengthscale from `grid` by `folds`-fold cross-validation of the votes'
    /// log-likelihood (held-out votes scored under the MAP fitted to the rest; the paper's
    /// leave-one-out on held-out votes, coarsened to folds), and install it. Returns the
    /// choice, or `None` (nothing changed) with fewer than `2·folds` votes.
    pub fn choose_lengthscale(
        &mut self,
        grid: &[f64],
        folds: usize,
        seed: u64,
    ) -> Result<Option<f64>> {
        let all: Vec<Vote> = self.private.iter().chain(&self.public).copied().collect();
        let folds = folds.max(2);
        if all.len() < 2 * folds || grid.is_empty() {
            return Ok(None);
        }
        if let Some(bad) = grid.iter().find(|l| !(l.is_finite() && **l > 0.0)) {
            return Err(Error::invalid(
                "lengthscale_grid",
                format!("lengthscales must be finite and > 0, got {bad}"),
            ));
        }
        let d = self.points.ncols();
        let mut best = (f64::NEG_INFINITY, grid[0]);
        for &l in grid {
            let mut score = 0.0;
            for fold in 0..folds {
                let mut m = self.clone();
                m.set_kernel(Box::new(crate::Stationary::ard(
                    crate::StationaryKind::Rbf,
                    d,
                    l,
                )))?;
                m.clear_votes();
                let mut held = Vec::new();
                for (k, v) in all.iter().enumerate() {
                    if k % folds == fold {
                        held.push(*v);
                    } else {
                        m.add_vote(*v)?;
                    }
                }
                m.refit(seed)?;
                score += m.log_likelihood_of(&held)?;
            }
            if score > best.0 {
                best = (score, l);
            }
        }
        self.set_kernel(Box::new(crate::Stationary::ard(
            crate::StationaryKind::Rbf,
            d,
            best.1,
        )))?;
        Ok(Some(best.1))
    }

    /// Drop every vote (points stay; refit needed).
    pub fn clear_votes(&mut self) {
        self.private.clear();
        self.public.clear();
        self.fit = None;
    }

    /// Log-likelihood of `votes` under the MAP: private votes on `Û`, public ones on
    /// `Â Û` (public votes are skipped for the independent model, whose `u` does not
    /// explain them).
    pub fn log_likelihood_of(&self, votes: &[Vote]) -> Result<f64> {
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let (n, m) = (self.n, self.m());
        let u = self.utilities_of(&fit.alpha);
        let private: Vec<Vote> = votes
            .iter()
            .filter(|v| v.channel == Channel::Private)
            .copied()
            .collect();
        let public: Vec<Vote> = votes
            .iter()
            .filter(|v| v.channel == Channel::Public)
            .copied()
            .collect();
        let mut ll = bt_loglik(&private, &u, m, None);
        if !public.is_empty() && !fit.a.is_empty() {
            let mut v = vec![0.0; n * m];
            for i in 0..n {
                for j in 0..n {
                    for k in 0..m {
                        v[i * m + k] += fit.a[i * n + j] * u[j * m + k];
                    }
                }
            }
            ll += bt_loglik(&public, &v, m, None);
        }
        Ok(ll)
    }

    /// `U = C α` per agent (agent-major `n × m`).
    pub fn utilities_of(&self, alpha: &[f64]) -> Vec<f64> {
        let (n, m) = (self.n, self.m());
        let mut u = vec![0.0; n * m];
        for i in 0..n {
            for r in 0..m {
                let mut s = 0.0;
                for k in 0..=r {
                    s += self.c[(r, k)] * alpha[i * m + k];
                }
                u[i * m + r] = s;
            }
        }
        u
    }

    /// `g_α = Cᵀ g_U` per agent, added into `out`.
    fn backprop(&self, gu: &[f64], out: &mut [f64]) {
        let (n, m) = (self.n, self.m());
        for i in 0..n {
            for k in 0..m {
                let mut s = 0.0;
                for r in k..m {
                    s += self.c[(r, k)] * gu[i * m + r];
                }
                out[i * m + k] += s;
            }
        }
    }

    fn graph_of<'x>(&'x self, x: &'x [f64], lay: &Layout) -> &'x [f64] {
        match &self.cfg.coupling {
            Coupling::Known(g) => g.entries(),
            _ if lay.a => &x[lay.a_off()..lay.a_off() + self.n * self.n],
            _ => &[],
        }
    }

    /// `(ℓ_u, ℓ_v, log prior)` and the gradient of `wu ℓ_u + wv ℓ_v + wp prior` in the
    /// variables, added into `g`.
    fn parts(&self, x: &[f64], lay: &Layout, w: [f64; 3], g: Option<&mut [f64]>) -> [f64; 3] {
        let (n, m) = (self.n, self.m());
        let u = self.utilities_of(&x[..n * m]);
        let want = g.is_some();
        let mut gu = vec![0.0; n * m];
        let lu = if self.private.is_empty() {
            0.0
        } else {
            let mut gp = vec![0.0; n * m];
            let v = bt_loglik(&self.private, &u, m, want.then_some(&mut gp[..]));
            for (a, b) in gu.iter_mut().zip(&gp) {
                *a += w[0] * b;
            }
            v
        };
        let couple = !matches!(self.cfg.coupling, Coupling::Independent);
        let a = self.graph_of(x, lay);
        let mut ga = vec![0.0; n * n];
        let lv = if self.public.is_empty() || !couple {
            0.0
        } else {
            let mut vmat = vec![0.0; n * m];
            for i in 0..n {
                for j in 0..n {
                    let aij = a[i * n + j];
                    for k in 0..m {
                        vmat[i * m + k] += aij * u[j * m + k];
                    }
                }
            }
            let mut gv = vec![0.0; n * m];
            let val = bt_loglik(&self.public, &vmat, m, want.then_some(&mut gv[..]));
            if want {
                for i in 0..n {
                    for j in 0..n {
                        let aij = a[i * n + j];
                        let mut s = 0.0;
                        for k in 0..m {
                            gu[j * m + k] += w[1] * aij * gv[i * m + k];
                            s += gv[i * m + k] * u[j * m + k];
                        }
                        ga[i * n + j] += w[1] * s;
                    }
                }
            }
            val
        };
        let mut lp = if lay.a {
            let p = &self.cfg.prior;
            let mut v = 0.0;
            for (k, aij) in a.iter().enumerate() {
                v += (p.kappa - 1.0) * aij.ln() - p.xi * aij * aij;
                ga[k] += w[2] * ((p.kappa - 1.0) / aij - 2.0 * p.xi * aij);
            }
            v
        } else {
            0.0
        };
        let r = self.cfg.ridge;
        let ridge_end = if lay.ext { lay.beta() + n } else { n * m };
        if r > 0.0 {
            lp -= 0.5 * r * x[..ridge_end].iter().map(|v| v * v).sum::<f64>();
        }
        if let Some(g) = g {
            self.backprop(&gu, &mut g[..n * m]);
            if r > 0.0 && w[2] != 0.0 {
                for k in 0..ridge_end {
                    g[k] -= w[2] * r * x[k];
                }
            }
            if lay.a {
                for (k, v) in ga.iter().enumerate() {
                    g[lay.a_off() + k] += v;
                }
            }
        }
        [lu, lv, lp]
    }

    fn bounds_for(&self, lay: &Layout) -> Vec<(f64, f64)> {
        let l = self.cfg.bound;
        let d = self.cfg.prior.delta_a;
        let mut b = vec![(-l, l); lay.len()];
        if lay.a {
            let hi = if self.n == 1 { 1.0 } else { 1.0 - d };
            for k in 0..self.n * self.n {
                b[lay.a_off() + k] = (d.min(hi), hi);
            }
        }
        if lay.tau {
            b[lay.tau()] = (-1e6, 1e6);
        }
        b
    }

    fn learned(&self) -> bool {
        matches!(self.cfg.coupling, Coupling::Learned)
    }

    /// Fit the MAP and the MLEs. Errors without points or votes.
    pub fn refit(&mut self, seed: u64) -> Result<&SocialFit> {
        let fit = self.solve_map(seed)?;
        self.fit = Some(fit);
        Ok(self.fit.as_ref().expect("just set"))
    }

    fn solve_map(&self, seed: u64) -> Result<SocialFit> {
        let (n, m) = (self.n, self.m());
        if m < 2 || self.private.len() + self.public.len() == 0 {
            return Err(Error::State(
                "the social model needs votes before fitting".into(),
            ));
        }
        let lay = Layout {
            n,
            m,
            ext: false,
            a: self.learned(),
            tau: false,
        };
        let bounds = self.bounds_for(&lay);
        let obj = |x: &[f64], g: &mut [f64]| -> Result<f64> {
            g.iter_mut().for_each(|v| *v = 0.0);
            let p = self.parts(x, &lay, [-1.0, -1.0, -1.0], Some(g));
            Ok(-(p[0] + p[1] + p[2]))
        };
        let balls = self.ball_fns(&lay);
        let rows = self.row_fns(&lay);
        let cons = constraints(&[&balls], &rows);
        let mut starts = Vec::new();
        if let Some(f) = &self.fit
            && f.alpha.len() == n * m
        {
            let mut x = f.alpha.clone();
            if lay.a {
                x.extend(&f.a);
            }
            starts.push(x);
        }
        let mut rng = agora_math::rng::stream(seed, &[0x50C1]);
        let fresh = if starts.is_empty() {
            self.cfg.starts.max(1)
        } else {
            self.cfg.starts
        };
        for s in 0..fresh {
            let mut x = vec![0.0; lay.len()];
            if lay.a {
                let d = self.cfg.prior.delta_a;
                for i in 0..n {
                    let row: Vec<f64> = match s {
                        0 => vec![1.0 / n as f64; n],
                        1 => (0..n)
                            .map(|j| if i == j { 1.0 - (n - 1) as f64 * d } else { d })
                            .collect(),
                        _ => {
                            use rand::RngExt;
                            let e: Vec<f64> = (0..n)
                                .map(|_| -rng.random::<f64>().max(1e-12).ln())
                                .collect();
                            let t: f64 = e.iter().sum();
                            e.iter().map(|v| d + (1.0 - n as f64 * d) * v / t).collect()
                        }
                    };
                    for j in 0..n {
                        x[lay.a_off() + i * n + j] = row[j];
                    }
                }
            }
            starts.push(x);
        }
        let mut results: Vec<AlResult> = Vec::new();
        for x0 in &starts {
            let r = minimize_al(&obj, &cons, &bounds, x0, None, self.cfg.solver)?;
            results.push(r);
        }
        let bi = (0..results.len())
            .min_by(|a, b| results[*a].f.total_cmp(&results[*b].f).then(a.cmp(b)))
            .expect("at least one start");
        let best = results[bi].clone();
        // Distinct other modes inside the set.
        let mut modes: Vec<Vec<f64>> = Vec::new();
        for (k, r) in results.iter().enumerate() {
            if k == bi || r.f > best.f + self.cfg.beta || r.kkt.feasibility > 1e-6 {
                continue;
            }
            let dist = |x: &[f64]| -> f64 {
                x.iter()
                    .zip(&r.x)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max)
            };
            if dist(&best.x) > 1e-3 && modes.iter().all(|m| dist(m) > 1e-3) {
                modes.push(r.x.clone());
            }
        }
        let alpha = best.x[..n * m].to_vec();
        let a = if lay.a {
            best.x[lay.a_off()..lay.a_off() + n * n].to_vec()
        } else {
            match &self.cfg.coupling {
                Coupling::Known(g) => g.entries().to_vec(),
                _ => Vec::new(),
            }
        };
        // The separate MLEs are needed by the separate likelihood-ratio constraints only;
        // `w^v` computes `ℓ̂_v` itself when it is missing.
        let (mle_u, mle_v) = if self.cfg.separate_lr {
            (self.mle(Channel::Private)?, self.mle(Channel::Public)?)
        } else {
            (f64::NAN, f64::NAN)
        };
        Ok(SocialFit {
            alpha,
            a,
            objective: -best.f,
            mle_u,
            mle_v,
            kkt: [
                best.kkt.stationarity,
                best.kkt.feasibility,
                best.kkt.complementarity,
            ],
            converged: best.converged,
            modes,
        })
    }

    /// The separate maximum likelihood of one channel's votes over its own ball (0 without
    /// votes): `ℓ̂_u` (private) or `ℓ̂_v` (public, a free `V`).
    pub fn mle(&self, channel: Channel) -> Result<f64> {
        let votes = match channel {
            Channel::Private => &self.private,
            Channel::Public => &self.public,
        };
        if votes.is_empty() {
            return Ok(0.0);
        }
        let (n, m) = (self.n, self.m());
        let lay = Layout {
            n,
            m,
            ext: false,
            a: false,
            tau: false,
        };
        let obj = |x: &[f64], g: &mut [f64]| -> Result<f64> {
            let f = self.utilities_of(x);
            let mut gf = vec![0.0; n * m];
            let v = bt_loglik(votes, &f, m, Some(&mut gf));
            g.iter_mut().for_each(|e| *e = 0.0);
            self.backprop(&gf, g);
            g.iter_mut().for_each(|e| *e = -*e);
            Ok(-v)
        };
        let balls = self.ball_fns(&lay);
        let cons = constraints(&[&balls], &[]);
        let r = minimize_al(
            &obj,
            &cons,
            &self.bounds_for(&lay),
            &vec![0.0; n * m],
            None,
            self.cfg.solver,
        )?;
        Ok(-r.f)
    }

    fn ball_fns(&self, lay: &Layout) -> Vec<ConFn<'_>> {
        let (n, m) = (self.n, self.m());
        let l2 = self.cfg.bound * self.cfg.bound;
        let lay = *lay;
        (0..n)
            .map(|i| {
                Box::new(move |x: &[f64], g: &mut [f64]| -> Result<f64> {
                    g.iter_mut().for_each(|e| *e = 0.0);
                    let mut s = 0.0;
                    for k in 0..m {
                        let v = x[i * m + k];
                        s += v * v;
                        g[i * m + k] = 2.0 * v;
                    }
                    if lay.ext {
                        let v = x[lay.beta() + i];
                        s += v * v;
                        g[lay.beta() + i] = 2.0 * v;
                    }
                    Ok(s - l2)
                }) as ConFn<'_>
            })
            .collect()
    }

    fn row_fns(&self, lay: &Layout) -> Vec<ConFn<'_>> {
        if !lay.a {
            return Vec::new();
        }
        let n = self.n;
        let off = lay.a_off();
        (0..n)
            .map(|i| {
                Box::new(move |x: &[f64], g: &mut [f64]| -> Result<f64> {
                    g.iter_mut().for_each(|e| *e = 0.0);
                    let mut s = -1.0;
                    for j in 0..n {
                        s += x[off + i * n + j];
                        g[off + i * n + j] = 1.0;
                    }
                    Ok(s)
                }) as ConFn<'_>
            })
            .collect()
    }

    /// Likelihood-ratio constraints of the confidence set (`≤ 0` form).
    fn lr_fns(&self, lay: &Layout) -> Result<Vec<ConFn<'_>>> {
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let lay = *lay;
        let mut out: Vec<ConFn<'_>> = Vec::new();
        let j_min = fit.objective - self.cfg.beta;
        out.push(Box::new(move |x: &[f64], g: &mut [f64]| {
            g.iter_mut().for_each(|e| *e = 0.0);
            let p = self.parts(x, &lay, [-1.0, -1.0, -1.0], Some(g));
            Ok(j_min - (p[0] + p[1] + p[2]))
        }));
        if !self.cfg.separate_lr {
            return Ok(out);
        }
        if !self.private.is_empty() {
            let lu_min = fit.mle_u - self.cfg.beta_u;
            out.push(Box::new(move |x: &[f64], g: &mut [f64]| {
                g.iter_mut().for_each(|e| *e = 0.0);
                let p = self.parts(x, &lay, [-1.0, 0.0, 0.0], Some(g));
                Ok(lu_min - p[0])
            }));
        }
        if !self.public.is_empty() && !matches!(self.cfg.coupling, Coupling::Independent) {
            let lv_min = fit.mle_v - self.cfg.beta_v;
            out.push(Box::new(move |x: &[f64], g: &mut [f64]| {
                g.iter_mut().for_each(|e| *e = 0.0);
                let p = self.parts(x, &lay, [0.0, -1.0, 0.0], Some(g));
                Ok(lv_min - p[1])
            }));
        }
        Ok(out)
    }

    /// Solve `min obj` over the confidence set (extended by one point when `lay.ext`),
    /// from the MAP (plus `extra` constraints).
    fn over_set(
        &self,
        lay: &Layout,
        obj: &Objective<'_>,
        extra: &[ConFn<'_>],
        x0: Vec<f64>,
    ) -> Result<AlResult> {
        let balls = self.ball_fns(lay);
        let rows = self.row_fns(lay);
        let lr = self.lr_fns(lay)?;
        let cons = constraints(&[&balls, &lr, extra], &rows);
        let bounds = self.bounds_for(lay);
        let mut best = minimize_al(obj, &cons, &bounds, &x0, None, self.cfg.bound_solver)?;
        // The other modes of the set, with the same extra coordinates as `x0`.
        let fit = self.fit.as_ref().expect("checked by lr_fns");
        let nm = self.n * self.m();
        for mode in &fit.modes {
            let mut x = x0.clone();
            x[..nm].copy_from_slice(&mode[..nm]);
            if lay.a {
                x[lay.a_off()..lay.a_off() + self.n * self.n].copy_from_slice(&mode[nm..]);
            }
            let r = minimize_al(obj, &cons, &bounds, &x, None, self.cfg.bound_solver)?;
            if r.kkt.feasibility <= 1e-6 && r.f < best.f {
                best = r;
            }
        }
        Ok(best)
    }

    fn start(&self, lay: &Layout) -> Result<Vec<f64>> {
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let mut x = vec![0.0; lay.len()];
        x[..self.n * self.m()].copy_from_slice(&fit.alpha);
        if lay.a {
            x[lay.a_off()..lay.a_off() + self.n * self.n].copy_from_slice(&fit.a);
        }
        Ok(x)
    }

    /// Whitened extension of the Gram by `x`: `(c, s)` with `u(x) = c·α + s β`.
    fn extension(&self, x: &[f64]) -> Result<(Vec<f64>, f64)> {
        if x.len() != self.points.ncols() {
            return Err(Error::dim("x", self.points.ncols(), x.len()));
        }
        agora_core::check_finite_slice("x", x)?;
        let xm = Mat::from_fn(1, x.len(), |_, j| x[j]);
        let kx = self.kernel.cross(self.points.as_ref(), xm.as_ref());
        let m = self.m();
        // c = C⁻¹ k_x (forward substitution).
        let mut c = vec![0.0; m];
        for r in 0..m {
            let mut s = kx[(r, 0)];
            for k in 0..r {
                s -= self.c[(r, k)] * c[k];
            }
            c[r] = s / self.c[(r, r)];
        }
        let kxx = self.kernel.diag(xm.as_ref())[0] + self.cfg.jitter;
        let s2 = kxx - c.iter().map(|v| v * v).sum::<f64>();
        Ok((c, s2.max(0.0).sqrt()))
    }

    fn layout(&self, ext: bool, tau: bool) -> Layout {
        Layout {
            n: self.n,
            m: self.m(),
            ext,
            a: self.learned(),
            tau,
        }
    }

    /// MAP utilities at `x`: `Û(x, i) = c·α̂_i` (the minimum-norm interpolant).
    pub fn map_at(&self, x: &[f64]) -> Result<Vec<f64>> {
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let (c, _) = self.extension(x)?;
        let m = self.m();
        Ok((0..self.n)
            .map(|i| {
                c.iter()
                    .zip(&fit.alpha[i * m..(i + 1) * m])
                    .map(|(a, b)| a * b)
                    .sum()
            })
            .collect())
    }

    /// MAP utilities at the points (agent-major `n × m`).
    pub fn map_utilities(&self) -> Option<Vec<f64>> {
        self.fit.as_ref().map(|f| self.utilities_of(&f.alpha))
    }

    /// `(LCB, UCB)` of agent `i`'s utility at `x` over the confidence set (note (70)/(71)).
    pub fn bounds_at(&self, x: &[f64], agent: usize) -> Result<(f64, f64)> {
        if agent >= self.n {
            return Err(Error::invalid(
                "agent",
                format!("{agent} is not an agent (0..{})", self.n),
            ));
        }
        let (c, s) = self.extension(x)?;
        let lay = self.layout(true, false);
        let m = self.m();
        let mut out = [0.0; 2];
        for (k, sign) in [1.0, -1.0].into_iter().enumerate() {
            let obj = |v: &[f64], g: &mut [f64]| -> Result<f64> {
                g.iter_mut().for_each(|e| *e = 0.0);
                let mut z = s * v[lay.beta() + agent];
                g[lay.beta() + agent] = -sign * s;
                for r in 0..m {
                    z += c[r] * v[agent * m + r];
                    g[agent * m + r] = -sign * c[r];
                }
                Ok(-sign * z)
            };
            let r = self.over_set(&lay, &obj, &[], self.start(&lay)?)?;
            out[k] = -sign * r.f;
        }
        // out[0] = max z (UCB), out[1] = min z (LCB).
        Ok((out[1], out[0]))
    }

    /// Per-agent width of the confidence interval of `u(a, i) − u(b, i)` (points `a`, `b`):
    /// `δ_hi − δ_lo` (note (72)–(74)); the projection weight `w^u` is its Euclidean norm.
    pub fn difference_widths(&self, a: usize, b: usize) -> Result<Vec<f64>> {
        let m = self.m();
        if a >= m || b >= m {
            return Err(Error::invalid("pair", format!("points must be in 0..{m}")));
        }
        let lay = self.layout(false, false);
        let x0 = self.start(&lay)?;
        self.widths_with(a, b, &|obj| {
            Ok(self.over_set(&lay, obj, &[], x0.clone())?.f)
        })
    }

    /// Per-agent widths `max − min` of `u_i(a) − u_i(b)`, each end the minimum of a linear
    /// objective found by `solve` over the caller's set (the 2n problems run in parallel).
    fn widths_with(&self, a: usize, b: usize, solve: &WidthSolve<'_>) -> Result<Vec<f64>> {
        let m = self.m();
        // d = (C α_i)[a] − (C α_i)[b] = (C[a,:] − C[b,:]) · α_i.
        let row: Vec<f64> = (0..m).map(|k| self.c[(a, k)] - self.c[(b, k)]).collect();
        let jobs: Vec<(usize, f64)> = (0..self.n).flat_map(|i| [(i, 1.0), (i, -1.0)]).collect();
        let ends: Vec<f64> = jobs
            .par_iter()
            .map(|&(i, sign)| {
                let obj = |v: &[f64], g: &mut [f64]| -> Result<f64> {
                    g.iter_mut().for_each(|e| *e = 0.0);
                    let mut d = 0.0;
                    for r in 0..m {
                        d += row[r] * v[i * m + r];
                        g[i * m + r] = -sign * row[r];
                    }
                    Ok(-sign * d)
                };
                Ok(-sign * solve(&obj)?)
            })
            .collect::<Result<_>>()?;
        Ok((0..self.n)
            .map(|i| (ends[2 * i] - ends[2 * i + 1]).max(0.0))
            .collect())
    }

    /// The same widths for the public utilities over the v-only set
    /// `{V : ‖V_i‖ ≤ L, ℓ_v(V) ≥ ℓ̂_v − β_v}` (`w^v`, which the paper leaves implicit;
    /// note §8.6). Without public votes the set is the whole ball, and so are the widths.
    pub fn public_difference_widths(&self, a: usize, b: usize) -> Result<Vec<f64>> {
        let (n, m) = (self.n, self.m());
        if a >= m || b >= m {
            return Err(Error::invalid("pair", format!("points must be in 0..{m}")));
        }
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let lay = Layout {
            n,
            m,
            ext: false,
            a: false,
            tau: false,
        };
        let balls = self.ball_fns(&lay);
        let mle_v = if fit.mle_v.is_finite() {
            fit.mle_v
        } else {
            self.mle(Channel::Public)?
        };
        let lv_min = mle_v - self.cfg.beta_v;
        let public = &self.public;
        let lv = move |x: &[f64], g: &mut [f64]| -> Result<f64> {
            let f = self.utilities_of(x);
            let mut gf = vec![0.0; n * m];
            let v = bt_loglik(public, &f, m, Some(&mut gf));
            g.iter_mut().for_each(|e| *e = 0.0);
            self.backprop(&gf, g);
            g.iter_mut().for_each(|e| *e = -*e);
            Ok(lv_min - v)
        };
        let mut cons = constraints(&[&balls], &[]);
        if !public.is_empty() {
            cons.push(Constraint {
                kind: Kind::Inequality,
                f: &lv,
            });
        }
        // Start from the MAP's public utilities V̂ = Â Û (whitened), scaled into the ball.
        let x0 = {
            let u = self.utilities_of(&fit.alpha);
            let a_hat: Vec<f64> = match (&self.cfg.coupling, fit.a.is_empty()) {
                (_, false) => fit.a.clone(),
                _ => (0..n * n)
                    .map(|k| if k / n == k % n { 1.0 } else { 0.0 })
                    .collect(),
            };
            let mut v = vec![0.0; n * m];
            for i in 0..n {
                for j in 0..n {
                    for k in 0..m {
                        v[i * m + k] += a_hat[i * n + j] * u[j * m + k];
                    }
                }
            }
            let mut x = whiten(&self.c, &v, n);
            for i in 0..n {
                let s = x[i * m..(i + 1) * m]
                    .iter()
                    .map(|e| e * e)
                    .sum::<f64>()
                    .sqrt();
                if s > self.cfg.bound {
                    x[i * m..(i + 1) * m]
                        .iter_mut()
                        .for_each(|e| *e *= self.cfg.bound / s);
                }
            }
            x
        };
        let bounds = self.bounds_for(&lay);
        self.widths_with(a, b, &|obj| {
            Ok(minimize_al(obj, &cons, &bounds, &x0, None, self.cfg.bound_solver)?.f)
        })
    }

    /// Cheap scores of an option for screening, from one Gram extension: the optimistic
    /// score (with `(α̂, Â)` fixed, every agent's utility at `x` at its largest value in
    /// the ball, `Û(x, i) + s_x min(sqrt(L² − ‖α̂_i‖²), sqrt(2β / ridge))`, aggregated, minus
    /// the aggregate at point `prev`) and the MAP welfare `W(Û(x, :))`.
    pub fn screen(&self, x: &[f64], prev: usize, welfare: &Welfare) -> Result<Screen> {
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let m = self.m();
        if prev >= m {
            return Err(Error::invalid(
                "prev",
                format!("{prev} is not a point (0..{m})"),
            ));
        }
        let (c, s) = self.extension(x)?;
        let l2 = self.cfg.bound * self.cfg.bound;
        let (mut z, mut mu, mut zp) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..self.n {
            let a = &fit.alpha[i * m..(i + 1) * m];
            let mu_i: f64 = c.iter().zip(a).map(|(p, q)| p * q).sum();
            let mut r = (l2 - a.iter().map(|v| v * v).sum::<f64>()).max(0.0).sqrt();
            if self.cfg.ridge > 0.0 {
                // The prior caps the new coordinate at sqrt(2β / ridge) within the set.
                r = r.min((2.0 * self.cfg.beta / self.cfg.ridge).sqrt());
            }
            z.push(mu_i + s * r);
            mu.push(mu_i);
            // Û at `prev`: row `prev` of C times α_i (no full U needed).
            zp.push((0..=prev).map(|k| self.c[(prev, k)] * a[k]).sum::<f64>());
        }
        Ok(Screen {
            optimism: welfare.normalized_value(&z) - welfare.normalized_value(&zp),
            map_welfare: welfare.normalized_value(&mu),
        })
    }

    /// The optimistic improvement `α(x, x_prev) = max over the confidence set of
    /// W(ũ(x, :)) − W(ũ(x_prev, :))` (Eq. 4 / (52b)), `W` the normalized welfare.
    ///
    /// `W` is concave and piecewise linear (`W(z) = min_π Σ_k w_k z_π(k)` for ascending
    /// weights' rearrangement), so `W(z)` enters through an epigraph variable with one
    /// linear constraint per permutation (n! ≤ 24 for n ≤ 4). `−W(z_prev)` is convex; it is
    /// handled by fixing the permutation that sorts `z_prev` and re-solving once with the sort
    /// of the solution (a difference-of-convex step; the second pass can only raise the value).
    pub fn optimism(&self, x: &[f64], prev: usize, welfare: &Welfare) -> Result<f64> {
        let n = self.n;
        let m = self.m();
        if prev >= m {
            return Err(Error::invalid(
                "prev",
                format!("{prev} is not a point (0..{m})"),
            ));
        }
        let (c, s) = self.extension(x)?;
        let lay = self.layout(true, true);
        let w = welfare.normalized_weights(n);
        let perms = agora_math::welfare::permutations(n);
        let z_of = |v: &[f64], i: usize| -> f64 {
            s * v[lay.beta() + i]
                + c.iter()
                    .zip(&v[i * m..(i + 1) * m])
                    .map(|(p, q)| p * q)
                    .sum::<f64>()
        };
        let prev_of = |v: &[f64], i: usize| -> f64 {
            let mut t = 0.0;
            for k in 0..=prev {
                t += self.c[(prev, k)] * v[i * m + k];
            }
            t
        };
        // Epigraph constraints: τ − Σ_k w_k z_π(k) ≤ 0.
        let epi: Vec<ConFn<'_>> = perms
            .iter()
            .map(|p| {
                let p = p.clone();
                let w = w.clone();
                let c = c.clone();
                Box::new(move |v: &[f64], g: &mut [f64]| -> Result<f64> {
                    g.iter_mut().for_each(|e| *e = 0.0);
                    let mut val = v[lay.tau()];
                    g[lay.tau()] = 1.0;
                    for (k, &i) in p.iter().enumerate() {
                        val -= w[k] * z_of(v, i);
                        g[lay.beta() + i] -= w[k] * s;
                        for r in 0..m {
                            g[i * m + r] -= w[k] * c[r];
                        }
                    }
                    Ok(val)
                }) as ConFn<'_>
            })
            .collect();
        let mut x0 = self.start(&lay)?;
        let zs: Vec<f64> = (0..n).map(|i| z_of(&x0, i)).collect();
        x0[lay.tau()] = welfare.normalized_value(&zs);
        let mut best = f64::NEG_INFINITY;
        let mut last_perm: Option<Vec<usize>> = None;
        for _pass in 0..2 {
            let zp: Vec<f64> = (0..n).map(|i| prev_of(&x0, i)).collect();
            let perm = agora_math::welfare::ascending_order(&zp);
            if last_perm.as_ref() == Some(&perm) {
                break;
            }
            let obj = |v: &[f64], g: &mut [f64]| -> Result<f64> {
                g.iter_mut().for_each(|e| *e = 0.0);
                // minimize −(τ − Σ_k w_k U[perm_k, prev]).
                let mut val = -v[lay.tau()];
                g[lay.tau()] = -1.0;
                for (k, &i) in perm.iter().enumerate() {
                    val += w[k] * prev_of(v, i);
                    for r in 0..=prev {
                        g[i * m + r] += w[k] * self.c[(prev, r)];
                    }
                }
                Ok(val)
            };
            let r = self.over_set(&lay, &obj, &epi, x0.clone())?;
            let z: Vec<f64> = (0..n).map(|i| z_of(&r.x, i)).collect();
            let zp: Vec<f64> = (0..n).map(|i| prev_of(&r.x, i)).collect();
            let val = welfare.normalized_value(&z) - welfare.normalized_value(&zp);
            if val > best {
                best = val;
            }
            x0 = r.x;
            last_perm = Some(perm);
        }
        Ok(best)
    }
}

/// `(c, s)` for the last row `m` of a factor already holding `m + 1` rows: `c` = row `m`
/// restricted to the first `m` columns.
fn ext_row(c: &Mat<f64>, m: usize) -> (Vec<f64>, f64) {
    ((0..m).map(|k| c[(m, k)]).collect(), c[(m, m)])
}

/// `α = C⁻¹ U` per agent.
fn whiten(c: &Mat<f64>, u: &[f64], n: usize) -> Vec<f64> {
    let m = c.nrows();
    let mut a = vec![0.0; n * m];
    for i in 0..n {
        for r in 0..m {
            let mut s = u[i * m + r];
            for k in 0..r {
                s -= c[(r, k)] * a[i * m + k];
            }
            a[i * m + r] = s / c[(r, r)];
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Stationary, StationaryKind};

    #[test]
    fn graphs_are_validated() {
        let g = SocialGraph::new(&[vec![0.9, 0.1], vec![0.6, 0.4]], 0.01).unwrap();
        assert_eq!(g.apply(&[1.0, 2.0]), vec![1.1, 1.4]);
        let e = SocialGraph::new(&[vec![0.9, 0.2], vec![0.6, 0.4]], 0.01).unwrap_err();
        assert!(
            e.to_string().contains("graph[0]") && e.to_string().contains("sum to 1"),
            "{e}"
        );
        let e = SocialGraph::new(&[vec![0.995, 0.005], vec![0.6, 0.4]], 0.01).unwrap_err();
        assert!(e.to_string().contains("graph[0][0]"), "{e}");
        let e = SocialGraph::new(&[vec![0.5, f64::NAN], vec![0.6, 0.4]], 0.01).unwrap_err();
        assert!(e.to_string().contains("graph[0][1]"), "{e}");
        let p = SocialPrior::paper_table5(2);
        assert!((p.xi - 1250.0).abs() < 1e-9 && (p.kappa - 0.75).abs() < 1e-4);
    }

    fn toy_model(coupling: Coupling) -> SocialModel {
        let k = Box::new(Stationary::ard(StationaryKind::Rbf, 1, 0.2));
        let mut cfg = SocialConfig::paper(2);
        cfg.bound = 3.0;
        cfg.coupling = coupling;
        let mut s = SocialModel::new(2, k, cfg).unwrap();
        let xs = [0.1, 0.5, 0.9, 0.3, 0.7];
        for x in xs {
            s.add_point(&[x]).unwrap();
        }
        // Agent 0 likes large x, agent 1 small x, privately; publicly both follow agent 0.
        for (a, b) in [(0, 1), (1, 2), (3, 4), (0, 2), (2, 3), (1, 4)] {
            let big = xs[a] > xs[b];
            for rep in 0..3 {
                s.add_vote(Vote {
                    channel: Channel::Private,
                    agent: 0,
                    a,
                    b,
                    a_wins: big ^ (rep == 2),
                })
                .unwrap();
                s.add_vote(Vote {
                    channel: Channel::Private,
                    agent: 1,
                    a,
                    b,
                    a_wins: !big ^ (rep == 2),
                })
                .unwrap();
                s.add_vote(Vote {
                    channel: Channel::Public,
                    agent: 0,
                    a,
                    b,
                    a_wins: big,
                })
                .unwrap();
                s.add_vote(Vote {
                    channel: Channel::Public,
                    agent: 1,
                    a,
                    b,
                    a_wins: big ^ (rep == 0),
                })
                .unwrap();
            }
        }
        s
    }

    #[test]
    fn map_gradients_and_kkt() {
        let mut s = toy_model(Coupling::Learned);
        let fit = s.refit(1).unwrap().clone();
        assert!(fit.converged, "{fit:?}");
        assert!(fit.kkt[1] < 1e-8);
        // Rows of Â are stochastic and floored.
        for i in 0..2 {
            let r: f64 = fit.a[i * 2..i * 2 + 2].iter().sum();
            assert!((r - 1.0).abs() < 1e-8);
        }
        // The objective's gradient matches finite differences at a random point.
        let lay = s.layout(false, false);
        let mut x: Vec<f64> = (0..lay.len())
            .map(|k| ((k * 7 % 11) as f64 / 11.0) - 0.4)
            .collect();
        x[lay.a_off()..].copy_from_slice(&[0.7, 0.3, 0.45, 0.55]);
        let mut g = vec![0.0; lay.len()];
        let f0 = s.parts(&x, &lay, [1.0, 1.0, 1.0], Some(&mut g));
        let _ = f0;
        for k in 0..lay.len() {
            let h = 1e-6;
            let mut a = x.clone();
            let mut b = x.clone();
            a[k] += h;
            b[k] -= h;
            let fa: f64 = s.parts(&a, &lay, [1.0; 3], None).iter().sum();
            let fb: f64 = s.parts(&b, &lay, [1.0; 3], None).iter().sum();
            assert!((g[k] - (fa - fb) / (2.0 * h)).abs() < 1e-5, "{k}");
        }
        // MLEs bound their parts of the MAP.
        let u = s.utilities_of(&fit.alpha);
        let mut gg = vec![0.0; 10];
        let lu = bt_loglik(&s.private, &u, s.m(), Some(&mut gg));
        assert!(lu <= s.mle(Channel::Private).unwrap() + 1e-6);
    }

    #[test]
    fn confidence_bounds_contain_the_map_and_shrink_with_data() {
        let mut s = toy_model(Coupling::Learned);
        s.refit(1).unwrap();
        for x in [0.2, 0.6] {
            let (lo, hi) = s.bounds_at(&[x], 0).unwrap();
            let mid = s.map_at(&[x]).unwrap()[0];
            assert!(lo <= mid + 1e-6 && mid <= hi + 1e-6, "{lo} {mid} {hi}");
            assert!(hi - lo > 1e-3);
        }
        // Votes identify differences, not levels (the ball bounds those): more votes on the
        // same pairs narrow the interval of a difference.
        let w1 = s.difference_widths(0, 2).unwrap();
        let mut more = toy_model(Coupling::Learned);
        for _ in 0..4 {
            let (pr, pu) = (more.private.clone(), more.public.clone());
            more.private.extend(pr);
            more.public.extend(pu);
        }
        more.refit(1).unwrap();
        let w2 = more.difference_widths(0, 2).unwrap();
        for i in 0..2 {
            assert!(w2[i] < 0.8 * w1[i], "agent {i}: {} vs {}", w2[i], w1[i]);
        }
        let w = s.difference_widths(0, 1).unwrap();
        assert!(w.iter().all(|v| *v > 0.0));
        let wv = s.public_difference_widths(0, 1).unwrap();
        assert_eq!(wv.len(), 2);
        let a = s.optimism(&[0.95], 4, &Welfare::Gini { rho: 1.0 }).unwrap();
        assert!(a > 0.0);
        assert!(
            s.bounds_at(&[0.5], 5)
                .unwrap_err()
                .to_string()
                .contains("agent")
        );
    }

    #[test]
    fn bad_votes_are_named() {
        let mut s = toy_model(Coupling::Learned);
        let e = s
            .add_vote(Vote {
                channel: Channel::Public,
                agent: 7,
                a: 0,
                b: 1,
                a_wins: true,
            })
            .unwrap_err();
        assert!(e.to_string().contains("agent"), "{e}");
        let e = s
            .add_vote(Vote {
                channel: Channel::Public,
                agent: 0,
                a: 0,
                b: 99,
                a_wins: true,
            })
            .unwrap_err();
        assert!(e.to_string().contains("`b`"), "{e}");
        assert!(s.add_point(&[0.1, 0.2]).is_err());
    }
}

#[cfg(test)]
mod lengthscale_cv {
    use super::*;
    use crate::{Stationary, StationaryKind};
    use rand::RngExt;

    /// Votes from a smooth utility pick a longer lengthscale than votes from a wiggly one.
    #[test]
    fn cross_validation_follows_the_data_scale() {
        let grid = [0.03, 0.1, 0.3, 1.0];
        let mut chosen = Vec::new();
        for f in [(|x: f64| 3.0 * (x - 0.5)) as fn(f64) -> f64, |x: f64| {
            3.0 * (25.0 * x).sin()
        }] {
            let mut cfg = SocialConfig::paper(1);
            cfg.coupling = Coupling::Independent;
            cfg.bound = 12.0;
            let k = Box::new(Stationary::ard(StationaryKind::Rbf, 1, 0.3));
            let mut s = SocialModel::new(1, k, cfg).unwrap();
            let m = 30;
            for i in 0..m {
                s.add_point(&[i as f64 / (m - 1) as f64]).unwrap();
            }
            let mut rng = agora_math::rng::stream(9, &[2]);
            for _ in 0..240 {
                let (a, b) = (rng.random_range(0..m), rng.random_range(0..m));
                if a == b {
                    continue;
                }
                let d = f(a as f64 / (m - 1) as f64) - f(b as f64 / (m - 1) as f64);
                let p = 1.0 / (1.0 + (-d).exp());
                s.add_vote(Vote {
                    channel: Channel::Private,
                    agent: 0,
                    a,
                    b,
                    a_wins: rng.random::<f64>() < p,
                })
                .unwrap();
            }
            chosen.push(s.choose_lengthscale(&grid, 5, 1).unwrap().unwrap());
        }
        println!("chosen lengthscales (smooth, wiggly): {chosen:?}");
        assert!(chosen[0] > chosen[1], "{chosen:?}");
        assert!(chosen[1] <= 0.1, "{chosen:?}");
    }
}

#[cfg(test)]
mod recovery {
    use super::*;
    use crate::{Stationary, StationaryKind};
    use rand::RngExt;

    /// Synthetic dual votes on random pairs of fixed points with known utilities: `Â → A`,
    /// the Frobenius error falling roughly like `|Q^u|^{−1/2}` (Thm 3.6).
    #[test]
    fn graph_error_falls_like_inverse_sqrt_of_private_votes() {
        let a_true = [[0.7, 0.3], [0.4, 0.6]];
        let m = 12;
        let mut rng = agora_math::rng::stream(5, &[1]);
        let xs: Vec<f64> = (0..m).map(|k| k as f64 / (m - 1) as f64).collect();
        // Smooth utilities within the ball, with distinct shapes (identifiable A).
        let u = |x: f64| [2.0 * (3.0 * x).sin(), 2.0 * (2.0 * x - 1.0)];
        let mut errors = Vec::new();
        let sizes = [40usize, 160, 640];
        for &q in &sizes {
            let mut cfg = SocialConfig::paper(2);
            cfg.bound = 20.0;
            cfg.ridge = 0.0;
            cfg.starts = 3;
            let k = Box::new(Stationary::ard(StationaryKind::Rbf, 1, 0.3));
            let mut s = SocialModel::new(2, k, cfg).unwrap();
            for x in &xs {
                s.add_point(&[*x]).unwrap();
            }
            let mut err = 0.0;
            let reps = 3;
            for _ in 0..reps {
                s.clear_votes();
                for _ in 0..q {
                    let (a, b) = (rng.random_range(0..m), rng.random_range(0..m));
                    if a == b {
                        continue;
                    }
                    let (ua, ub) = (u(xs[a]), u(xs[b]));
                    for i in 0..2 {
                        let dv = (0..2).map(|j| a_true[i][j] * (ua[j] - ub[j])).sum::<f64>();
                        for (ch, d) in [(Channel::Private, ua[i] - ub[i]), (Channel::Public, dv)] {
                            let p = 1.0 / (1.0 + (-d).exp());
                            s.add_vote(Vote {
                                channel: ch,
                                agent: i,
                                a,
                                b,
                                a_wins: rng.random::<f64>() < p,
                            })
                            .unwrap();
                        }
                    }
                }
                let fit = s.refit(3).unwrap();
                let flat: Vec<f64> = a_true.iter().flatten().copied().collect();
                err += fit
                    .a
                    .iter()
                    .zip(&flat)
                    .map(|(x, y)| (x - y).powi(2))
                    .sum::<f64>()
                    .sqrt();
            }
            errors.push(err / reps as f64);
        }
        // Decreasing, with a log-log slope near −1/2 over a 16-fold range of |Q^u|.
        assert!(errors[0] > errors[1] && errors[1] > errors[2], "{errors:?}");
        let slope = (errors[2] / errors[0]).ln() / (sizes[2] as f64 / sizes[0] as f64).ln();
        println!("graph errors {errors:?} at |Q^u| = {sizes:?}: log-log slope {slope:.2}");
        assert!(
            (-0.9..=-0.25).contains(&slope),
            "slope {slope}, errors {errors:?}"
        );
    }
}
