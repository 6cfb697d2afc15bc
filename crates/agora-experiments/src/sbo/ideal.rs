//! The ideal graph estimator: how well the social graph `A` can be identified from `k`
//! private group votes by an estimator that is better informed than any vote-based method
//! (Social BO, docs/notes/social-bo.md §1.4, §2.2–2.3).
//!
//! **What it knows that a real method does not.** The public utilities `v(x) = A u(x)` are
//! known *exactly* at every point voted on (a real method sees only public Bradley–Terry
//! votes, and must model `v` with an RKHS ball or a GP). It also knows that votes follow
//! Bradley–Terry with unit scale and that `A` is row-stochastic with entries `≥ δ_A`. So the
//! only unknown is `A`: for a candidate `Â`, the private utilities are `u = Â⁻¹ v` and the
//! private votes' likelihood is a function of `Â` alone.
//!
//! **Estimate.** `k` private group votes (every agent votes on one random pair `(a, b)`:
//! uniform points of the unit cube, or two distinct options of a finite set); `Â` maximizes
//! the Bradley–Terry log-likelihood of the private votes (Eq. 33) with
//! `u(a) − u(b) = Â⁻¹ (v(a) − v(b))`, plus the log of agora's graph prior
//! ([`SocialPrior::coherent`]: `Σ_ij (κ − 1) log A_ij − ξ A_ij²`, Eq. 26), over row-stochastic
//! `Â` with entries `≥ δ_A`. Rows are parametrized as `A_ij = δ + (1 − nδ) w_ij` with `w_i`
//! on the simplex by stick-breaking fractions in `[0, 1]` ([`graph_of_sticks`]; a softmax
//! stalls on plateaus near the boundary, see there), and the `n(n − 1)` fractions (exact
//! gradient) are fitted by L-BFGS-B from a near-uniform and a near-identity start and 16
//! Sobol points, then from every column permutation of the best one (the label-switched
//! modes); the best fit is kept. `Â` is factored once per evaluation (partial-pivoting LU) and never inverted.
//!
//! **Singular `Â`.** A solve with non-finite results (a singular `Â`, objective `+∞`) is
//! never used: [`log_likelihood`] errors, and a fit whose line search steps onto one
//! restarts from the best point seen (counted, [`IdealRow::singular_trials`]). With few
//! votes the private votes are often *separable*: near some singular `Â`, `u = Â⁻¹ v` is huge
//! with every vote's sign right, the likelihood tends to 1 and the MAP does not exist. Such
//! a fit ends at the best finite point on the way and is counted
//! ([`IdealRow::at_singular`], [`ideal_singular_markdown`]); its `Â` depends on where the
//! optimizer stopped. Any other failure is an error.
//!
//! **Report.** `‖Â − A‖_F` over independent vote sets (median and quartiles), beside the
//! uniform guess `‖(1/n) 11ᵀ − A‖_F`. A real method's graph error at `k` private votes
//! should not be far below this reference. A singular `A` (rows equal, `toy-wishy-washy`)
//! is not identifiable: `u = A⁻¹ v` does not exist, and [`GraphError::NotIdentifiable`] says so.

use crate::stats::quantile;
use crate::table::{Align, Table};
use agora_core::{Error, Result};
use agora_gp::social::SocialPrior;
use agora_math::optim::{LbfgsbOptions, minimize};
use agora_math::rng::{Rng, stream};
use agora_problems::social::SocialTask;
use faer::linalg::solvers::Solve;
use faer::{Mat, MatRef};
use rand::RngExt;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// The private-vote counts of [`ideal_markdown`]'s usual table.
pub const IDEAL_KS: [usize; 5] = [5, 10, 20, 40, 80];

/// The seed of [`ideal_table`] (every task and `k` share it: common random numbers).
pub const IDEAL_SEED: u64 = 0x1DEA;

/// A singular value below this times the largest makes `A` singular (not identifiable).
const SINGULAR_RTOL: f64 = 1e-10;

/// The task's true utilities at `x`, checked finite: the one call into the task's utility
/// function (where `SocialTask::utilities_at(x) -> Result<Vec<f64>>` exists, this body
/// becomes that call).
fn utilities(task: &SocialTask, x: &[f64]) -> Result<Vec<f64>> {
    let u = task.utilities_at(x)?;
    if u.len() != task.agents {
        return Err(Error::dim("utilities", task.agents, u.len()));
    }
    agora_core::check_finite_slice("utilities", &u)?;
    Ok(u)
}

/// The task's graph as a matrix, checked: `n × n`, finite, rows summing to 1.
fn true_graph(task: &SocialTask) -> Result<Mat<f64>> {
    let n = task.agents;
    if n == 0 {
        return Err(Error::invalid("agents", "needs at least one agent"));
    }
    if task.graph.len() != n {
        return Err(Error::dim("graph", n, task.graph.len()));
    }
    for (i, row) in task.graph.iter().enumerate() {
        if row.len() != n {
            return Err(Error::dim(format!("graph[{i}]"), n, row.len()));
        }
        agora_core::check_finite_slice(&format!("graph[{i}]"), row)?;
        let s: f64 = row.iter().sum();
        if (s - 1.0).abs() > 1e-9 {
            return Err(Error::invalid(
                format!("graph[{i}]"),
                format!("rows must sum to 1, got {s}"),
            ));
        }
    }
    Ok(Mat::from_fn(n, n, |i, j| task.graph[i][j]))
}

/// `k` private group votes on random pairs, reduced to what the estimator uses.
#[derive(Debug, Clone)]
pub struct PrivateVotes {
    /// The pairs `(a, b)` voted on (unit-cube features).
    pub pairs: Vec<(Vec<f64>, Vec<f64>)>,
    /// `v(a) − v(b)`, known exactly to the ideal estimator: `n × k`, column `τ` = vote `τ`.
    pub public_differences: Mat<f64>,
    /// `+1` where agent `i` preferred `a` in vote `τ`, `−1` where `b`: `n × k`.
    pub signs: Mat<f64>,
}

impl PrivateVotes {
    /// Agents.
    pub fn agents(&self) -> usize {
        self.signs.nrows()
    }

    /// Votes.
    pub fn len(&self) -> usize {
        self.signs.ncols()
    }

    /// Whether there are no votes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Simulate `k` private group votes: pairs of uniform points in `[0, 1]^dim` (or two
/// distinct random options of a finite set), then agent `i` prefers `a` with probability
/// `σ(u_i(a) − u_i(b))` (one uniform draw per agent). Draws are sequential, so the first `k`
/// votes of a longer simulation from the same generator are this one's.
pub fn simulate_private_votes(task: &SocialTask, k: usize, rng: &mut Rng) -> Result<PrivateVotes> {
    let n = task.agents;
    let graph = true_graph(task)?;
    let mut pairs = Vec::with_capacity(k);
    let mut public_differences = Mat::zeros(n, k);
    let mut signs = Mat::zeros(n, k);
    for tau in 0..k {
        let (a, b) = match &task.options {
            Some(opts) => {
                if opts.len() < 2 {
                    return Err(Error::invalid(
                        "options",
                        format!("a vote needs two distinct options, got {}", opts.len()),
                    ));
                }
                let i = rng.random_range(0..opts.len());
                let mut j = rng.random_range(0..opts.len() - 1);
                if j >= i {
                    j += 1;
                }
                (opts[i].clone(), opts[j].clone())
            }
            None => {
                let a: Vec<f64> = (0..task.dim).map(|_| rng.random::<f64>()).collect();
                let b: Vec<f64> = (0..task.dim).map(|_| rng.random::<f64>()).collect();
                (a, b)
            }
        };
        let (ua, ub) = (utilities(task, &a)?, utilities(task, &b)?);
        for i in 0..n {
            let p = sigmoid(ua[i] - ub[i]);
            signs[(i, tau)] = if rng.random::<f64>() < p { 1.0 } else { -1.0 };
            // v = A u is linear: v(a) − v(b) = A (u(a) − u(b)).
            public_differences[(i, tau)] = (0..n).map(|j| graph[(i, j)] * (ua[j] - ub[j])).sum();
        }
        pairs.push((a, b));
    }
    Ok(PrivateVotes {
        pairs,
        public_differences,
        signs,
    })
}

/// `σ(z) = 1 / (1 + e^{−z})`, without overflow.
fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// `log σ(z)`, without overflow or cancellation.
fn log_sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        -(-z).exp().ln_1p()
    } else {
        z - z.exp().ln_1p()
    }
}

/// The private votes' Bradley–Terry log-likelihood (Eq. 33) at a candidate graph `Â`, with
/// `u(a) − u(b) = Â⁻¹ (v(a) − v(b))`, and its gradient with respect to every entry of `Â`
/// (`Â` is not assumed row-stochastic here): with `U = Â⁻¹ D` and
/// `G_iτ = s_iτ σ(−s_iτ U_iτ)`, `∂ℓ/∂Â = −Â⁻ᵀ G Uᵀ`.
///
/// # Errors
///
/// `graph` not `n × n` for the votes' `n` agents, or a solve with `Â` giving non-finite
/// values (`Â` singular): [`Error::Numerical`] naming `graph`.
pub fn log_likelihood(votes: &PrivateVotes, graph: MatRef<'_, f64>) -> Result<(f64, Mat<f64>)> {
    try_log_likelihood(votes, graph)?.ok_or_else(|| singular_error(graph))
}

/// The error of a singular `Â`.
fn singular_error(graph: MatRef<'_, f64>) -> Error {
    let rows: Vec<Vec<f64>> = (0..graph.nrows())
        .map(|i| (0..graph.ncols()).map(|j| graph[(i, j)]).collect())
        .collect();
    Error::Numerical(format!(
        "graph: solving Â u = v gave non-finite values (Â singular to working precision): \
         Â = {rows:?}"
    ))
}

/// [`log_likelihood`], with `None` for a singular `Â` (a solve with non-finite values).
fn try_log_likelihood(
    votes: &PrivateVotes,
    graph: MatRef<'_, f64>,
) -> Result<Option<(f64, Mat<f64>)>> {
    let n = votes.agents();
    if graph.nrows() != n || graph.ncols() != n {
        return Err(Error::dim("graph", n, graph.nrows().max(graph.ncols())));
    }
    let k = votes.len();
    if k == 0 {
        return Ok(Some((0.0, Mat::zeros(n, n))));
    }
    let lu = graph.partial_piv_lu();
    let u = lu.solve(votes.public_differences.as_ref());
    let mut ll = 0.0;
    let mut g = Mat::zeros(n, k);
    for tau in 0..k {
        for i in 0..n {
            let (s, z) = (votes.signs[(i, tau)], u[(i, tau)]);
            if !z.is_finite() {
                return Ok(None);
            }
            ll += log_sigmoid(s * z);
            g[(i, tau)] = s * sigmoid(-s * z);
        }
    }
    let w = lu.solve_transpose(g.as_ref());
    let grad = -(&w * u.transpose());
    if !ll.is_finite() || (0..n).any(|i| (0..n).any(|j| !grad[(i, j)].is_finite())) {
        return Ok(None);
    }
    Ok(Some((ll, grad)))
}

/// Check a graph prior for `n` agents: `0 < δ_A < 1/n` (so the simplex has room), `κ`, `ξ`
/// finite and `≥ 0`.
fn check_prior(prior: &SocialPrior, n: usize) -> Result<()> {
    if !(prior.delta_a > 0.0 && prior.delta_a * (n as f64) < 1.0) {
        return Err(Error::invalid(
            "prior.delta_a",
            format!(
                "must lie in (0, 1/n) = (0, {}), got {}",
                1.0 / n as f64,
                prior.delta_a
            ),
        ));
    }
    for (name, v) in [("prior.kappa", prior.kappa), ("prior.xi", prior.xi)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(Error::invalid(
                name,
                format!("must be finite and >= 0, got {v}"),
            ));
        }
    }
    Ok(())
}

/// The row-stochastic graph of stick-breaking fractions `s ∈ [0, 1]^{n(n−1)}` (row `i`
/// owns `s[i(n−1)..(i+1)(n−1)]`): `A_ij = δ + (1 − nδ) w_ij` with
/// `w_ij = s_ij Π_{l<j} (1 − s_il)` for `j < n` and `w_in = Π_{l<n} (1 − s_il)`.
///
/// Every row-stochastic `A` with entries `≥ δ` has such an `s` ([`sticks_of_graph`]); the
/// map is smooth on the box and has no flat regions inside it, unlike a softmax, whose
/// gradient vanishes exponentially as a row nears the simplex's boundary (where the MAP
/// often lies at small `k`), which stalls L-BFGS on a plateau.
///
/// # Errors
///
/// `s` of the wrong length, or with entries outside `[0, 1]`.
pub fn graph_of_sticks(sticks: &[f64], n: usize, delta: f64) -> Result<Mat<f64>> {
    let m = n.saturating_sub(1);
    if sticks.len() != n * m {
        return Err(Error::dim("sticks", n * m, sticks.len()));
    }
    if let Some(i) = sticks.iter().position(|x| !(0.0..=1.0).contains(x)) {
        return Err(Error::invalid(
            format!("sticks[{i}]"),
            format!("must lie in [0, 1], got {}", sticks[i]),
        ));
    }
    let c = 1.0 - n as f64 * delta;
    let mut a = Mat::zeros(n, n);
    for i in 0..n {
        let mut rest = 1.0;
        for j in 0..m {
            let x = sticks[i * m + j];
            a[(i, j)] = delta + c * x * rest;
            rest *= 1.0 - x;
        }
        a[(i, n - 1)] = delta + c * rest;
    }
    Ok(a)
}

/// Stick-breaking fractions of a row-stochastic graph (inverse of [`graph_of_sticks`];
/// a fraction left undetermined by an exhausted row is 1/2). Entries below `δ` are taken as
/// `δ`.
pub fn sticks_of_graph(graph: MatRef<'_, f64>, delta: f64) -> Vec<f64> {
    let n = graph.nrows();
    let c = 1.0 - n as f64 * delta;
    let mut sticks = Vec::with_capacity(n * n.saturating_sub(1));
    for i in 0..n {
        let mut rest = 1.0;
        for j in 0..n.saturating_sub(1) {
            let w = ((graph[(i, j)] - delta) / c).max(0.0);
            let x = if rest > 1e-12 {
                (w / rest).clamp(0.0, 1.0)
            } else {
                0.5
            };
            sticks.push(x);
            rest *= 1.0 - x;
        }
    }
    sticks
}

/// The negative log posterior of the stick-breaking fractions `s` (what L-BFGS minimizes):
/// `−ℓ(Â) − log p(Â)` with `log p(Â) = Σ_ij (κ − 1) log Â_ij − ξ Â_ij²` (Eq. 26 up to a
/// constant), `Â` from [`graph_of_sticks`]; writes its exact gradient in `s` into `grad`.
///
/// # Errors
///
/// Sizes (`grad`, `sticks`), fractions outside `[0, 1]`, or a singular `Â`
/// ([`log_likelihood`]).
pub fn negative_log_posterior(
    votes: &PrivateVotes,
    prior: &SocialPrior,
    sticks: &[f64],
    grad: &mut [f64],
) -> Result<f64> {
    match try_negative_log_posterior(votes, prior, sticks, grad)? {
        Some(f) => Ok(f),
        None => Err(singular_error(
            graph_of_sticks(sticks, votes.agents(), prior.delta_a)?.as_ref(),
        )),
    }
}

/// [`negative_log_posterior`], with `None` for a singular `Â`.
fn try_negative_log_posterior(
    votes: &PrivateVotes,
    prior: &SocialPrior,
    sticks: &[f64],
    grad: &mut [f64],
) -> Result<Option<f64>> {
    let n = votes.agents();
    let m = n.saturating_sub(1);
    if grad.len() != n * m {
        return Err(Error::dim("grad", n * m, grad.len()));
    }
    let a = graph_of_sticks(sticks, n, prior.delta_a)?;
    let Some((ll, gl)) = try_log_likelihood(votes, a.as_ref())? else {
        return Ok(None);
    };
    let mut log_prior = 0.0;
    // ∂f/∂A_ij of f = −ℓ − log p.
    let mut ga = Mat::zeros(n, n);
    for i in 0..n {
        for j in 0..n {
            let x = a[(i, j)];
            log_prior += (prior.kappa - 1.0) * x.ln() - prior.xi * x * x;
            ga[(i, j)] = -(gl[(i, j)] + (prior.kappa - 1.0) / x - 2.0 * prior.xi * x);
        }
    }
    // ∂A_ij/∂s_ik = c ∂w_ij/∂s_ik: `Π_{l<k} (1 − s_il)` for j = k, and for j > k minus
    // `w_ij` without its factor `(1 − s_ik)` (products taken directly, no division).
    let c = 1.0 - n as f64 * prior.delta_a;
    for i in 0..n {
        let row = &sticks[i * m..(i + 1) * m];
        for k in 0..m {
            let mut d = ga[(i, k)] * row[..k].iter().map(|x| 1.0 - x).product::<f64>();
            for j in k + 1..n {
                let own = if j < m { row[j] } else { 1.0 };
                let others: f64 = (0..j).filter(|&l| l != k).map(|l| 1.0 - row[l]).product();
                d -= ga[(i, j)] * own * others;
            }
            grad[i * m + k] = c * d;
        }
    }
    Ok(Some(-(ll + log_prior)))
}

/// L-BFGS restarts allowed per fit after a trial point with a singular `Â`.
const MAX_SINGULAR_RESTARTS: usize = 20;

/// One L-BFGS-B fit (with its restarts).
#[derive(Debug, Clone)]
struct Run {
    /// The best fractions seen (never a singular point).
    sticks: Vec<f64>,
    /// The negative log posterior there.
    f: f64,
    /// Trial points with a singular `Â`.
    singular_trials: usize,
    /// Whether the fit ended against a singular `Â` (no progress after a restart).
    at_singular: bool,
}

/// What stopped an L-BFGS run early.
enum Failure {
    /// A trial point had a singular `Â` (objective `+∞`).
    Singular,
    /// Anything else: an error.
    Fatal(Error),
}

/// Largest move of any fraction in L-BFGS-B's first step (see [`fit_from`]).
const FIRST_STEP: f64 = 0.1;

/// One fit of the fractions `s` from `start`.
///
/// L-BFGS-B's first trial point is the Cauchy point `s − ∇f` clipped to the box; with
/// many votes the gradient is large and that point would put every fraction on a bound
/// (rows on the same vertex: a singular `Â`). So the objective is divided by
/// `max(1, ‖∇f(start)‖_∞ / 0.1)`: a first step of at most 0.1 per fraction (later steps use
/// the curvature L-BFGS has seen and do not depend on the scale).
///
/// The objective is `+∞` where `Â` is singular (`u = Â⁻¹ v` does not exist), which the
/// L-BFGS-B driver cannot take: it stops at such a trial point. The fit then restarts from
/// the best point seen (never the singular one). When a restart makes no progress (or after
/// 20 restarts) the fit ends there, flagged `at_singular`: the posterior keeps increasing
/// toward a singular `Â`. That happens when the private votes are separable: some `Â`
/// near the singular set makes `u = Â⁻¹ v` huge with every vote's sign right, so the
/// likelihood tends to its supremum 1 there and the MAP does not exist (few votes). The
/// best finite point is then the estimate, and the flag is counted in
/// [`IdealRow::at_singular`]. Any other objective failure is an error.
fn fit_from(votes: &PrivateVotes, prior: &SocialPrior, start: &[f64]) -> Result<Run> {
    let bounds = vec![(0.0, 1.0); start.len()];
    let opts = LbfgsbOptions {
        pgtol: 1e-9,
        ftol: 1e-12,
        ..LbfgsbOptions::default()
    };
    let mut x = start.to_vec();
    let mut last_f = f64::INFINITY;
    let mut singular_trials = 0;
    loop {
        let mut g0 = vec![0.0; x.len()];
        negative_log_posterior(votes, prior, &x, &mut g0)?;
        let scale = 1f64.max(g0.iter().fold(0.0, |m: f64, g| m.max(g.abs())) / FIRST_STEP);
        let failure: Mutex<Option<Failure>> = Mutex::new(None);
        let objective = |sticks: &[f64], g: &mut [f64]| -> Result<f64> {
            let (record, result) = match try_negative_log_posterior(votes, prior, sticks, g) {
                Ok(Some(f)) => {
                    g.iter_mut().for_each(|v| *v /= scale);
                    return Ok(f / scale);
                }
                Ok(None) => (
                    Failure::Singular,
                    Err(Error::Numerical("graph: singular trial point".into())),
                ),
                Err(e) => (Failure::Fatal(e.clone()), Err(e)),
            };
            if let Ok(mut f) = failure.lock() {
                f.get_or_insert(record);
            }
            result
        };
        let m = minimize(&objective, &x, &bounds, opts)?;
        let failed = failure
            .into_inner()
            .map_err(|_| Error::State("ideal estimator: objective lock poisoned".into()))?;
        let f = m.f * scale;
        let at_singular = match failed {
            None => false,
            Some(Failure::Fatal(e)) => return Err(e),
            Some(Failure::Singular) => {
                singular_trials += 1;
                if singular_trials <= MAX_SINGULAR_RESTARTS && f < last_f {
                    // Progress since the last restart: restart from the best point.
                    last_f = f;
                    x = m.x;
                    continue;
                }
                true
            }
        };
        return Ok(Run {
            sticks: m.x,
            f,
            singular_trials,
            at_singular,
        });
    }
}

/// Every permutation of `0..n` (lexicographic order; the identity first).
fn permutations(n: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut p: Vec<usize> = (0..n).collect();
    loop {
        out.push(p.clone());
        // Next permutation in lexicographic order.
        let Some(i) = (1..n).rev().find(|&i| p[i - 1] < p[i]) else {
            return out;
        };
        let j = (i..n).rev().find(|&j| p[j] > p[i - 1]).unwrap_or(i);
        p.swap(i - 1, j);
        p[i..].reverse();
    }
}

/// Space-filling starts of [`estimate_graph`] besides the near-uniform and near-identity ones.
pub const SOBOL_STARTS: usize = 64;

/// The seed of those starts' scrambling (fixed: the estimate is a function of the votes).
const SOBOL_SEED: u64 = 0x57A7;

/// The most agents [`estimate_graph`] takes (it restarts from all `n!` column permutations).
pub const MAX_AGENTS: usize = 6;

/// The ideal estimate of the graph.
#[derive(Debug, Clone)]
pub struct GraphFit {
    /// `Â`: row-stochastic, entries `≥ δ_A`.
    pub graph: Mat<f64>,
    /// Its negative log posterior (up to a constant).
    pub negative_log_posterior: f64,
    /// Trial points with a singular `Â` that stopped an L-BFGS run, each followed by a
    /// restart from the best point seen (the objective is `+∞` there, which the L-BFGS-B
    /// driver takes as an error; the singular point itself is never used).
    pub singular_trials: usize,
    /// Whether the kept fit ended against a singular `Â`: the posterior increases toward
    /// it (separable votes, no MAP), and `graph` is the best finite point on the way.
    pub at_singular: bool,
}

/// The ideal estimate `Â`: the MAP of the private votes with `u = Â⁻¹ v` ([module
/// docs](self)).
///
/// Starts: near-uniform (`0.8 · (1/n) 11ᵀ + 0.2 I`; the uniform matrix itself is singular),
/// near-identity (`0.2 · (1/n) 11ᵀ + 0.8 I`), [`SOBOL_STARTS`] scrambled Sobol points of the
/// fractions' box (the same for every call: with 5 votes the posterior has several modes
/// that the first two starts miss, for `n = 4` in most vote sets), then every other column
/// permutation of the best fit so far (the label-switched modes); the best fit is kept.
///
/// # Errors
///
/// A bad prior (named field), more than [`MAX_AGENTS`] agents, a non-finite objective other
/// than at a singular `Â`, or more than 20 singular trial points in one fit (or a restart
/// that makes no progress): [`Error::Numerical`] naming `graph`.
pub fn estimate_graph(votes: &PrivateVotes, prior: &SocialPrior) -> Result<GraphFit> {
    let n = votes.agents();
    if !(2..=MAX_AGENTS).contains(&n) {
        return Err(Error::invalid(
            "agents",
            format!("the ideal estimator takes 2 to {MAX_AGENTS} agents, got {n}"),
        ));
    }
    check_prior(prior, n)?;
    let delta = prior.delta_a;
    let tilted = |t: f64| -> Vec<f64> {
        let w = Mat::from_fn(n, n, |i, j| {
            (1.0 - t) / n as f64 + if i == j { t } else { 0.0 }
        });
        sticks_of_graph(w.as_ref(), delta)
    };
    let mut singular_trials = 0;
    let mut best: Option<Run> = None;
    let mut consider = |run: Run, best: &mut Option<Run>| {
        singular_trials += run.singular_trials;
        if best.as_ref().is_none_or(|b| run.f < b.f) {
            *best = Some(run);
        }
    };
    consider(fit_from(votes, prior, &tilted(0.2))?, &mut best);
    consider(fit_from(votes, prior, &tilted(0.8))?, &mut best);
    for start in agora_math::design::sobol(SOBOL_STARTS, n * (n - 1), SOBOL_SEED)? {
        consider(fit_from(votes, prior, &start)?, &mut best);
    }
    // The permutation starts: the columns of the best fit so far, permuted.
    let anchor = match &best {
        Some(b) => graph_of_sticks(&b.sticks, n, delta)?,
        None => return Err(Error::Numerical("graph: no fit".into())),
    };
    for perm in permutations(n).into_iter().skip(1) {
        let permuted = Mat::from_fn(n, n, |i, j| anchor[(i, perm[j])]);
        consider(
            fit_from(votes, prior, &sticks_of_graph(permuted.as_ref(), delta))?,
            &mut best,
        );
    }
    let best = best.ok_or_else(|| Error::Numerical("graph: no fit".into()))?;
    Ok(GraphFit {
        graph: graph_of_sticks(&best.sticks, n, delta)?,
        negative_log_posterior: best.f,
        singular_trials,
        at_singular: best.at_singular,
    })
}

/// `‖X − Y‖_F`.
fn frobenius_distance(x: MatRef<'_, f64>, y: MatRef<'_, f64>) -> f64 {
    (x - y).norm_l2()
}

/// How well `A` was identified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum GraphError {
    /// `‖Â − A‖_F` over the replicates.
    Estimated {
        /// Median.
        median: f64,
        /// First quartile.
        lower_quartile: f64,
        /// Third quartile.
        upper_quartile: f64,
    },
    /// `A` is singular: not identifiable (no `A⁻¹ v`), nothing was estimated.
    NotIdentifiable {
        /// `A`'s smallest singular value (relative to its largest).
        relative_singular_value: f64,
    },
}

/// One task at one number of private votes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdealRow {
    /// Task name.
    pub task: String,
    /// Agents `n`.
    pub agents: usize,
    /// Private group votes `k` per replicate.
    pub private_votes: usize,
    /// Independent vote sets.
    pub replicates: usize,
    /// `‖Â − A‖_F` of the ideal estimator.
    pub graph_error: GraphError,
    /// `‖(1/n) 11ᵀ − A‖_F`, the uniform guess's error.
    pub uniform_error: f64,
    /// L-BFGS trial points with a singular `Â` over all replicates
    /// ([`GraphFit::singular_trials`]).
    pub singular_trials: usize,
    /// Replicates whose estimate ended against a singular `Â` (separable votes, no MAP;
    /// [`GraphFit::at_singular`]).
    pub at_singular: usize,
}

/// The ideal estimator's graph error on `task` from `private_votes` private group votes,
/// over `replicates` independent vote sets (replicate `r` draws from
/// `stream(seed, [r])`, so the same seed gives the same numbers, and a smaller `k` uses the
/// first votes of a larger one), with agora's coherent prior. A singular `A` gives
/// [`GraphError::NotIdentifiable`] and no estimate.
///
/// # Errors
///
/// Zero `private_votes` or `replicates` (named), a malformed task, or a failed fit.
pub fn ideal_graph_error(
    task: &SocialTask,
    private_votes: usize,
    replicates: usize,
    seed: u64,
) -> Result<IdealRow> {
    let prior = SocialPrior::coherent(task.agents);
    ideal_graph_error_with(task, private_votes, replicates, seed, &prior)
}

/// [`ideal_graph_error`] with another graph prior (e.g. [`SocialPrior::paper_table5`], or a
/// flat one, `κ = 1`, `ξ = 0`).
///
/// # Errors
///
/// As [`ideal_graph_error`], and a bad prior (named field).
pub fn ideal_graph_error_with(
    task: &SocialTask,
    private_votes: usize,
    replicates: usize,
    seed: u64,
    prior: &SocialPrior,
) -> Result<IdealRow> {
    if private_votes == 0 {
        return Err(Error::invalid("private_votes", "needs at least one vote"));
    }
    if replicates == 0 {
        return Err(Error::invalid("replicates", "needs at least one replicate"));
    }
    let n = task.agents;
    let graph = true_graph(task)?;
    let uniform = Mat::from_fn(n, n, |_, _| 1.0 / n as f64);
    let uniform_error = frobenius_distance(uniform.as_ref(), graph.as_ref());
    let row = |graph_error, singular_trials, at_singular| IdealRow {
        task: task.name.clone(),
        agents: n,
        private_votes,
        replicates,
        graph_error,
        uniform_error,
        singular_trials,
        at_singular,
    };
    let sv = graph
        .singular_values()
        .map_err(|e| Error::Numerical(format!("graph: singular values failed: {e:?}")))?;
    let (hi, lo) = (
        sv.first().copied().unwrap_or(0.0),
        sv.last().copied().unwrap_or(0.0),
    );
    if lo <= SINGULAR_RTOL * hi {
        return Ok(row(
            GraphError::NotIdentifiable {
                relative_singular_value: if hi > 0.0 { lo / hi } else { 0.0 },
            },
            0,
            0,
        ));
    }
    check_prior(prior, n)?;
    let fits: Vec<(f64, usize, bool)> = (0..replicates as u64)
        .into_par_iter()
        .map(|r| {
            let votes = simulate_private_votes(task, private_votes, &mut stream(seed, &[r]))?;
            let fit = estimate_graph(&votes, prior)?;
            Ok((
                frobenius_distance(fit.graph.as_ref(), graph.as_ref()),
                fit.singular_trials,
                fit.at_singular,
            ))
        })
        .collect::<Result<_>>()?;
    let errors: Vec<f64> = fits.iter().map(|f| f.0).collect();
    Ok(row(
        GraphError::Estimated {
            median: quantile(&errors, 0.5),
            lower_quartile: quantile(&errors, 0.25),
            upper_quartile: quantile(&errors, 0.75),
        },
        fits.iter().map(|f| f.1).sum(),
        fits.iter().filter(|f| f.2).count(),
    ))
}

/// [`ideal_graph_error`] for every task and every `k` in `ks` (task-major order), seed
/// [`IDEAL_SEED`].
pub fn ideal_table(tasks: &[SocialTask], ks: &[usize], replicates: usize) -> Result<Vec<IdealRow>> {
    let mut rows = Vec::with_capacity(tasks.len() * ks.len());
    for task in tasks {
        for &k in ks {
            rows.push(ideal_graph_error(task, k, replicates, IDEAL_SEED)?);
        }
    }
    Ok(rows)
}

/// The table of [`ideal_table`]: one line per task, its median `‖Â − A‖_F` (quartiles in
/// brackets) at each number of private votes in order of appearance, then the uniform
/// guess's error.
pub fn ideal_markdown(rows: &[IdealRow]) -> String {
    let (tasks, ks) = tasks_and_ks(rows);
    let mut header = vec!["task".to_string()];
    header.extend(ks.iter().map(|k| format!("k = {k}")));
    header.push("uniform guess".into());
    let mut align = vec![Align::Left];
    align.extend(std::iter::repeat_n(Align::Right, ks.len() + 1));
    let mut table = Table::new(&header).aligned(&align);
    for t in tasks {
        let mine: Vec<&IdealRow> = rows.iter().filter(|r| r.task == t).collect();
        let mut cells = vec![format!("{t} (n = {})", mine[0].agents)];
        for k in &ks {
            cells.push(
                match mine
                    .iter()
                    .find(|r| r.private_votes == *k)
                    .map(|r| &r.graph_error)
                {
                    Some(GraphError::Estimated {
                        median,
                        lower_quartile,
                        upper_quartile,
                    }) => format!("{median:.3} [{lower_quartile:.2}, {upper_quartile:.2}]"),
                    Some(GraphError::NotIdentifiable { .. }) => "not identifiable".into(),
                    None => String::new(),
                },
            );
        }
        cells.push(format!("{:.3}", mine[0].uniform_error));
        table.row(cells);
    }
    table.markdown()
}

/// For each task (rows) and number of private votes (columns): the replicates whose estimate
/// ended against a singular `Â` (separable votes, no MAP; [`IdealRow::at_singular`]), out of
/// all replicates; `—` where `A` is not identifiable.
pub fn ideal_singular_markdown(rows: &[IdealRow]) -> String {
    let (tasks, ks) = tasks_and_ks(rows);
    let mut header = vec!["task".to_string()];
    header.extend(ks.iter().map(|k| format!("k = {k}")));
    let mut align = vec![Align::Left];
    align.extend(std::iter::repeat_n(Align::Right, ks.len()));
    let mut table = Table::new(&header).aligned(&align);
    for t in tasks {
        let mut cells = vec![t.to_string()];
        for k in &ks {
            cells.push(
                match rows.iter().find(|r| r.task == t && r.private_votes == *k) {
                    Some(r) if matches!(r.graph_error, GraphError::NotIdentifiable { .. }) => {
                        "—".into()
                    }
                    Some(r) => format!("{}/{}", r.at_singular, r.replicates),
                    None => String::new(),
                },
            );
        }
        table.row(cells);
    }
    table.markdown()
}

/// The tasks and the numbers of private votes of `rows`, each in order of first appearance.
fn tasks_and_ks(rows: &[IdealRow]) -> (Vec<&str>, Vec<usize>) {
    let mut ks: Vec<usize> = Vec::new();
    let mut tasks: Vec<&str> = Vec::new();
    for r in rows {
        if !ks.contains(&r.private_votes) {
            ks.push(r.private_votes);
        }
        if !tasks.contains(&r.task.as_str()) {
            tasks.push(&r.task);
        }
    }
    (tasks, ks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_math::fd::{Tol, assert_gradient, fd_gradient};

    fn task(name: &str) -> SocialTask {
        SocialTask::by_name(name).unwrap()
    }

    /// `log σ(z)` written out, independently of [`log_sigmoid`].
    fn log_sigma(z: f64) -> f64 {
        -(1.0 + (-z).exp()).ln()
    }

    #[test]
    fn ideal_many_private_votes_recover_the_toy_graph() {
        let toy = task("toy");
        let votes = simulate_private_votes(&toy, 3000, &mut stream(11, &[])).unwrap();
        let fit = estimate_graph(&votes, &SocialPrior::coherent(2)).unwrap();
        let (estimate, f) = (fit.graph, fit.negative_log_posterior);
        let truth = Mat::from_fn(2, 2, |i, j| [[0.9, 0.1], [0.6, 0.4]][i][j]);
        let err = frobenius_distance(estimate.as_ref(), truth.as_ref());
        assert!(err < 0.1, "‖Â − A‖_F = {err}, Â = {estimate:?}");
        assert!(f.is_finite());
        // Row-stochastic with entries ≥ δ_A.
        for i in 0..2 {
            assert!((estimate[(i, 0)] + estimate[(i, 1)] - 1.0).abs() < 1e-12);
            assert!(estimate[(i, 0)] >= 0.01 && estimate[(i, 1)] >= 0.01);
        }
    }

    #[test]
    fn ideal_log_likelihood_gradient_matches_finite_differences() {
        // Raw entries of a (non-stochastic) invertible 3 × 3 matrix, thermal votes.
        let thermal = task("thermal");
        let votes = simulate_private_votes(&thermal, 40, &mut stream(5, &[])).unwrap();
        let raw = [0.7, 0.2, 0.15, 0.3, 0.5, 0.1, 0.2, 0.25, 0.6];
        let mat = |x: &[f64]| Mat::from_fn(3, 3, |i, j| x[i * 3 + j]);
        let (_, g) = log_likelihood(&votes, mat(&raw).as_ref()).unwrap();
        let analytic: Vec<f64> = (0..9).map(|ij| g[(ij / 3, ij % 3)]).collect();
        let fd = fd_gradient(
            |x| log_likelihood(&votes, mat(x).as_ref()).unwrap().0,
            &raw,
            1e-6,
        );
        assert_gradient(&analytic, &fd, Tol::ScaledByFd(1e-5), "∂ℓ/∂Â");
        // The gradient of the negative log posterior in the stick-breaking fractions.
        let prior = SocialPrior::coherent(3);
        let sticks = [0.3, 0.6, 0.5, 0.2, 0.7, 0.4];
        let mut g = vec![0.0; 6];
        negative_log_posterior(&votes, &prior, &sticks, &mut g).unwrap();
        let mut scratch = vec![0.0; 6];
        let fd = fd_gradient(
            |s| negative_log_posterior(&votes, &prior, s, &mut scratch).unwrap(),
            &sticks,
            1e-6,
        );
        assert_gradient(&g, &fd, Tol::ScaledByFd(1e-5), "∂f/∂s");
        // Round trip of the parametrization: rows sum to 1, entries ≥ δ, and back.
        let a = graph_of_sticks(&sticks, 3, 0.01).unwrap();
        for i in 0..3 {
            assert!(((0..3).map(|j| a[(i, j)]).sum::<f64>() - 1.0).abs() < 1e-14);
        }
        let back = sticks_of_graph(a.as_ref(), 0.01);
        assert!(back.iter().zip(&sticks).all(|(x, y)| (x - y).abs() < 1e-12));
    }

    #[test]
    fn ideal_likelihood_at_the_true_graph_is_the_simulators_and_beats_others() {
        let toy = task("toy");
        let votes = simulate_private_votes(&toy, 4000, &mut stream(2, &[])).unwrap();
        let truth = Mat::from_fn(2, 2, |i, j| [[0.9, 0.1], [0.6, 0.4]][i][j]);
        let (ll_true, _) = log_likelihood(&votes, truth.as_ref()).unwrap();
        // u = A⁻¹ v must give back the task's own utilities: the same log-likelihood as the
        // Bradley–Terry votes on u(a) − u(b) straight from the task.
        let direct: f64 = votes
            .pairs
            .iter()
            .enumerate()
            .map(|(tau, (a, b))| {
                let (ua, ub) = (utilities(&toy, a).unwrap(), utilities(&toy, b).unwrap());
                (0..2)
                    .map(|i| log_sigma(votes.signs[(i, tau)] * (ua[i] - ub[i])))
                    .sum::<f64>()
            })
            .sum();
        assert!(
            (ll_true - direct).abs() < 1e-9 * direct.abs(),
            "{ll_true} vs {direct}"
        );
        // The truth beats a near-uniform graph, the identity (u = v) and the label switch.
        for other in [
            [[0.55, 0.45], [0.45, 0.55]],
            [[1.0, 0.0], [0.0, 1.0]],
            [[0.1, 0.9], [0.4, 0.6]],
        ] {
            let m = Mat::from_fn(2, 2, |i, j| other[i][j]);
            let (ll, _) = log_likelihood(&votes, m.as_ref()).unwrap();
            assert!(ll_true > ll + 10.0, "{ll_true} vs {ll} at {other:?}");
        }
        // The uniform matrix is singular: an error, not a number.
        let uniform = Mat::from_fn(2, 2, |_, _| 0.5);
        let e = log_likelihood(&votes, uniform.as_ref()).unwrap_err();
        assert!(matches!(e, Error::Numerical(_)), "{e}");
    }

    /// `−ℓ − log p` of the 2 × 2 graph `[[a, 1 − a], [b, 1 − b]]`, written out with the
    /// closed-form inverse (independent of the estimator's LU and parametrization).
    fn two_agent_objective(votes: &PrivateVotes, a: f64, b: f64) -> f64 {
        let det = a - b;
        let mut f = 0.0;
        for tau in 0..votes.len() {
            let (d0, d1) = (
                votes.public_differences[(0, tau)],
                votes.public_differences[(1, tau)],
            );
            let u = [
                ((1.0 - b) * d0 - (1.0 - a) * d1) / det,
                (-b * d0 + a * d1) / det,
            ];
            for (i, ui) in u.iter().enumerate() {
                f -= log_sigma(votes.signs[(i, tau)] * ui);
            }
        }
        let xi = 1.0 / 16.0;
        for x in [a, 1.0 - a, b, 1.0 - b] {
            f -= 0.05 * x.ln() - xi * x * x;
        }
        f
    }

    #[test]
    fn ideal_estimate_is_the_brute_force_map_for_two_agents() {
        // n = 2: a 500² grid over (A_11, A_21) ∈ [δ, 1 − δ]² finds no better graph than the
        // fit (the toy's influencer graph, and the altruist's whose MAP sits on the
        // other side of the singular line A_11 = A_21).
        let prior = SocialPrior::coherent(2);
        for name in ["toy", "toy-altruist"] {
            let t = task(name);
            for r in 0..3 {
                let votes = simulate_private_votes(&t, 40, &mut stream(IDEAL_SEED, &[r])).unwrap();
                let fit = estimate_graph(&votes, &prior).unwrap();
                let f_fit = two_agent_objective(&votes, fit.graph[(0, 0)], fit.graph[(1, 0)]);
                assert!(
                    (f_fit - fit.negative_log_posterior).abs() < 1e-9 * f_fit.abs(),
                    "{f_fit} vs {}",
                    fit.negative_log_posterior
                );
                let m = 500;
                let grid = |i: usize| 0.01 + 0.98 * i as f64 / m as f64;
                let mut f_grid = f64::INFINITY;
                for i in 0..=m {
                    for j in (0..=m).filter(|&j| j != i) {
                        f_grid = f_grid.min(two_agent_objective(&votes, grid(i), grid(j)));
                    }
                }
                assert!(
                    f_fit <= f_grid + 1e-9,
                    "{name}, replicate {r}: fit {f_fit} at {:?}, grid {f_grid}",
                    fit.graph
                );
            }
        }
    }

    #[test]
    fn ideal_estimate_beats_random_starts_for_three_agents() {
        // n = 3 (thermal), 40 votes: no L-BFGS-B fit from 20 uniform random starts in the
        // fractions' box finds a lower negative log posterior than the estimate.
        let thermal = task("thermal");
        let prior = SocialPrior::coherent(3);
        for r in 0..2 {
            let votes =
                simulate_private_votes(&thermal, 40, &mut stream(IDEAL_SEED, &[r])).unwrap();
            let fit = estimate_graph(&votes, &prior).unwrap();
            let mut rng = stream(99, &[r]);
            for _ in 0..20 {
                let start: Vec<f64> = (0..6).map(|_| rng.random::<f64>()).collect();
                let run = fit_from(&votes, &prior, &start).unwrap();
                assert!(
                    fit.negative_log_posterior <= run.f + 1e-7,
                    "replicate {r}: estimate {} vs {} from {start:?}",
                    fit.negative_log_posterior,
                    run.f
                );
            }
        }
    }

    #[test]
    fn ideal_graph_error_is_deterministic() {
        let toy = task("toy");
        let a = ideal_graph_error(&toy, 10, 6, 3).unwrap();
        let b = ideal_graph_error(&toy, 10, 6, 3).unwrap();
        assert_eq!(a, b);
        let c = ideal_graph_error(&toy, 10, 6, 4).unwrap();
        assert_ne!(a.graph_error, c.graph_error);
        // ‖[[0.4, −0.4], [0.1, −0.1]]‖_F = √0.34.
        assert!((a.uniform_error - 0.34f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn ideal_singular_graph_is_not_identifiable() {
        let ww = task("toy-wishy-washy");
        let r = ideal_graph_error(&ww, 10, 3, 0).unwrap();
        assert!(
            matches!(r.graph_error, GraphError::NotIdentifiable { .. }),
            "{r:?}"
        );
        assert!(ideal_markdown(&[r]).contains("not identifiable"));
        assert!(ideal_graph_error(&task("toy"), 0, 3, 0).is_err());
        assert!(ideal_graph_error(&task("toy"), 5, 0, 0).is_err());
    }

    #[test]
    fn ideal_permutations_are_all_distinct() {
        let p = permutations(3);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0], vec![0, 1, 2]);
        for (i, a) in p.iter().enumerate() {
            assert!(p[i + 1..].iter().all(|b| a != b));
        }
        assert_eq!(permutations(1), vec![vec![0]]);
    }
}
