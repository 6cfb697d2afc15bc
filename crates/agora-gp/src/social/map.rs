//! The constrained MAP of the social model (Social BO paper, problem (52a)) and the separate
//! MLEs of each channel, solved by agora's augmented-Lagrangian solver from several starts
//! (checked against IPOPT on recorded cases, conformance/sbo-map).

use super::{Coupling, SocialModel, bt_loglik};
use agora_core::{Channel, Error, Result};
use agora_math::constrained::{AlOptions, AlResult, Constraint, Kind, minimize_al, minimize_al_in};
use agora_math::optim::Objective;
use rayon::prelude::*;

/// The MAP and the separate MLEs.
#[derive(Debug, Clone, PartialEq)]
pub struct SocialFit {
    /// Whitened utilities, agent-major `n × m`.
    pub alpha: Vec<f64>,
    /// `Â`, row-major.
    pub a: Vec<f64>,
    /// `Ĵ`.
    pub objective: f64,
    /// `ℓ̂_u` (0 without private votes; NaN unless [`SocialConfig::separate_lr`](super::SocialConfig::separate_lr)).
    pub mle_u: f64,
    /// `ℓ̂_v` (0 without public votes; NaN unless [`SocialConfig::separate_lr`](super::SocialConfig::separate_lr)).
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

/// The variables of a problem over the confidence set, in the order the solver sees them:
/// `[α (n·m), β (n, extended only), A (n², learned graph only), τ (epigraph only)]`.
/// `α` holds the whitened utilities at the points (agent `i` at `i·m .. (i+1)·m`), `β_i`
/// agent `i`'s coordinate at a new point ([`SocialModel::extension`]), `τ` a free scalar
/// an acquisition may bound by extra constraints. Built by [`SocialModel::layout`].
#[derive(Debug, Clone, Copy)]
pub struct SetLayout {
    pub(super) n: usize,
    pub(super) m: usize,
    pub(super) ext: bool,
    pub(super) a: bool,
    pub(super) tau: bool,
}

impl SetLayout {
    /// Offset of `β` (agent `i`'s new coordinate is at `beta() + i`; extended layouts).
    pub fn beta(&self) -> usize {
        self.n * self.m
    }

    /// Offset of the graph `A` (row-major), when learned.
    pub fn a_off(&self) -> usize {
        self.beta() + if self.ext { self.n } else { 0 }
    }

    /// Index of the epigraph variable `τ` (epigraph layouts).
    pub fn tau(&self) -> usize {
        self.a_off() + if self.a { self.n * self.n } else { 0 }
    }

    /// Number of variables.
    pub fn len(&self) -> usize {
        self.tau() + usize::from(self.tau)
    }

    /// Whether there are no variables (no points yet).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A constraint `c(x) ≤ 0` (or `= 0`, or an objective) over a [`SetLayout`]'s variables:
/// writes its gradient into the second argument and returns its value.
pub type SetConstraint<'a> = Box<dyn Fn(&[f64], &mut [f64]) -> Result<f64> + Sync + 'a>;

/// Inequality constraints (`≤ 0`), as the solver takes them.
pub(super) fn constraints<'a>(ineq: &[&'a [SetConstraint<'a>]]) -> Vec<Constraint<'a>> {
    ineq.iter()
        .flat_map(|set| set.iter())
        .map(|f| Constraint {
            kind: Kind::Inequality,
            f: f.as_ref(),
        })
        .collect()
}

/// `(log a, 1/a)` for `a ≥ eps`, continued below `eps` by its second-order Taylor
/// polynomial at `eps` (C², finite everywhere). The graph prior's `log A_ij` only sees
/// `A_ij ≥ δ_A > eps` on the set; the continuation keeps the objective finite where a
/// line search steps past an eliminated diagonal's floor ([`SocialModel::solve_al`]).
pub(super) fn log_extended(a: f64, eps: f64) -> (f64, f64) {
    if a >= eps {
        (a.ln(), 1.0 / a)
    } else {
        let d = (a - eps) / eps;
        (eps.ln() + d - 0.5 * d * d, (1.0 - d) / eps)
    }
}

/// A preconditioner for problems over the confidence set: `α_i = α̂_i + L_i⁻ᵀ y_i` with
/// `L_i L_iᵀ` agent `i`'s diagonal block of `H_αα`, the MAP objective's negative Hessian at
/// the fit ([`SocialModel::neg_hessian`]; the cross-agent blocks from public votes are left
/// out, so the transforms cost `n` times less), and diagonal scalings of `β` and `A`. Near
/// the MAP the likelihood ratio is then roughly `½‖y‖²`, so L-BFGS-B's quasi-Newton model
/// starts close to the problem's curvature. Measured at t = 50 on thermal comfort (`H_αα`'s
/// condition number ~100 there): the width problems with the graph known took half the
/// objective evaluations (with the whole `α` block), and `agora bench sbo` went from 0.34
/// to 0.19 s per iteration at an L-BFGS-B memory of 10 (0.22 s with the `1/L²` floor
/// below, which IPOPT conformance needs at ridge 0).
#[derive(Debug)]
pub(super) struct Precond {
    /// `α̂`, agent-major.
    center: Vec<f64>,
    /// `L` (`nm × nm`, lower), row-major and column-major: both triangular solves below run
    /// as `axpy`s over contiguous memory, which vectorize.
    rows: Vec<f64>,
    cols: Vec<f64>,
    /// The size of each agent's block (`m`).
    block: usize,
    /// A new point's coordinates `β_i` (extended layouts) as `β = y / √r`: their only
    /// curvature is the ridge `r` (floored at `1/L²`, as `H_αα`'s).
    beta_scale: f64,
    /// Each off-diagonal entry of a learned `A` as `A_ij = s_ij y`, `s_ij` one over the
    /// square root of its (eliminated) curvature: a diagonal scaling, which keeps the box.
    a_scale: Vec<f64>,
}

impl Precond {
    /// From `H = −∇²J` over `[α, A]` (`A` row-major, may be absent) at the MAP `α̂`.
    pub(super) fn new(
        center: Vec<f64>,
        h: faer::MatRef<'_, f64>,
        n: usize,
        ridge: f64,
        bound: f64,
    ) -> Option<Precond> {
        let nm = center.len();
        // Votes fix only differences, and points without votes see only the prior: with a
        // small ridge `H_αα` is near singular. Its curvature is floored at `1/L²`, the ball's
        // scale (a unit step in `y` then moves `α` by at most `L` in a flat direction).
        let floor = 1.0 / (bound * bound);
        let lift = (floor - ridge).max(0.0);
        let a_scale = if h.nrows() == nm + n * n {
            (0..n * n)
                .map(|e| {
                    let (i, d) = (e / n, nm + (e / n) * n + e / n);
                    let k = nm + e;
                    // The curvature along e_ij − e_ii (A_ii follows its row).
                    let c = h[(k, k)] + h[(d, d)] - 2.0 * h[(k, d)];
                    if e % n != i && c.is_finite() && c > 0.0 {
                        1.0 / c.sqrt()
                    } else {
                        1.0
                    }
                })
                .collect()
        } else {
            vec![1.0; n * n]
        };
        // Each agent's own block (the cross-agent blocks, from public votes, dropped): the
        // factor is block-diagonal and the transforms cost n times less.
        let block = nm / n;
        let h = faer::Mat::from_fn(nm, nm, |r, c| {
            if r == c {
                h[(r, c)] + lift
            } else if r / block == c / block {
                h[(r, c)]
            } else {
                0.0
            }
        });
        let chol = agora_math::linalg::Cholesky::new(h.as_ref()).ok()?;
        let l = chol.l();
        let k = center.len();
        if l.nrows() != k {
            return None;
        }
        let rows = (0..k * k).map(|e| l[(e / k, e % k)]).collect();
        let cols = (0..k * k).map(|e| l[(e % k, e / k)]).collect();
        let beta_scale = 1.0 / ridge.max(floor).sqrt();
        Some(Precond {
            center,
            rows,
            cols,
            block,
            beta_scale,
            a_scale,
        })
    }

    /// `α = α̂ + L⁻ᵀ y`: `Lᵀ z = y` by back substitution, row `i` of `L` updating the
    /// entries before `i` once `z_i` is known.
    fn forward(&self, y: &[f64], alpha: &mut [f64]) {
        let k = self.center.len();
        alpha.copy_from_slice(y);
        for i in (0..k).rev() {
            let b0 = i / self.block * self.block;
            let row = &self.rows[i * k + b0..i * k + i + 1];
            let zi = alpha[i] / row[i - b0];
            alpha[i] = zi;
            for (a, l) in alpha[b0..i].iter_mut().zip(row) {
                *a -= l * zi;
            }
        }
        for (a, c) in alpha.iter_mut().zip(&self.center) {
            *a += c;
        }
    }

    /// `gy = L⁻¹ gα`: forward substitution, column `i` of `L` updating the entries after
    /// `i` once `w_i` is known.
    fn pullback(&self, g: &[f64], gy: &mut [f64]) {
        let k = self.center.len();
        gy.copy_from_slice(g);
        for i in 0..k {
            let b1 = (i / self.block + 1) * self.block;
            let col = &self.cols[i * k + i..i * k + b1];
            let wi = gy[i] / col[0];
            gy[i] = wi;
            for (a, l) in gy[i + 1..b1].iter_mut().zip(&col[1..]) {
                *a -= l * wi;
            }
        }
    }

    /// `y = Lᵀ (α − α̂)`.
    fn inverse(&self, alpha: &[f64], y: &mut [f64]) {
        let k = self.center.len();
        for (i, yi) in y.iter_mut().enumerate().take(k) {
            let col = &self.cols[i * k..(i + 1) * k];
            let b1 = (i / self.block + 1) * self.block;
            *yi = (i..b1).map(|r| col[r] * (alpha[r] - self.center[r])).sum();
        }
    }
}

/// The solver's variables for a problem in a [`SetLayout`] ([`SocialModel::solve_al`]): the
/// layout's minus each diagonal `A_ii` of a learned graph, eliminated as
/// `A_ii = 1 − Σ_{j≠i} A_ij`, with the utilities' coordinates optionally preconditioned
/// ([`Precond`]). The map is affine; the solver evaluates the objective and every
/// constraint at the layout's point and pulls their summed gradient back once.
pub(super) struct SetVars<'p> {
    n: usize,
    /// Offset of `A` in the layout (`len` without a learned graph: nothing eliminated).
    off: usize,
    len: usize,
    a: bool,
    /// The layout's indices of the solver's variables, ascending (`α` first).
    keep: Vec<usize>,
    /// Each solver variable after the utilities as `x = s y` (`β` and `A` when
    /// preconditioned, else 1), and whether its box is dropped (`β`'s is implied by the ball).
    scale: Vec<(f64, bool)>,
    pre: Option<&'p Precond>,
}

impl<'p> SetVars<'p> {
    pub(super) fn new(lay: &SetLayout, pre: Option<&'p Precond>) -> SetVars<'p> {
        let (n, len, off) = (lay.n, lay.len(), lay.a_off());
        let in_a = |k: usize| lay.a && k >= off && k < off + n * n;
        let in_diag = |k: usize| in_a(k) && (k - off) / n == (k - off) % n;
        let pre = pre.filter(|p| p.center.len() == lay.n * lay.m && p.a_scale.len() == n * n);
        let keep: Vec<usize> = (0..len).filter(|&k| !in_diag(k)).collect();
        let scale = keep
            .iter()
            .map(|&k| match pre {
                Some(p) if lay.ext && k >= lay.beta() && k < lay.beta() + n => (p.beta_scale, true),
                Some(p) if in_a(k) => (p.a_scale[k - off], false),
                _ => (1.0, false),
            })
            .collect();
        SetVars {
            n,
            off,
            len,
            a: lay.a,
            keep,
            scale,
            pre,
        }
    }

    fn diag(&self, i: usize) -> usize {
        self.off + i * self.n + i
    }

    /// The layout's variables.
    pub(super) fn expand(&self, y: &[f64]) -> Vec<f64> {
        let mut x = vec![0.0; self.len];
        agora_math::constrained::Reparam::forward(self, y, &mut x);
        x
    }

    /// The solver's variables of a layout point (its diagonals dropped).
    pub(super) fn reduce(&self, x: &[f64]) -> Vec<f64> {
        let mut y: Vec<f64> = self.keep.iter().map(|&k| x[k]).collect();
        if let Some(p) = self.pre {
            let k = p.center.len();
            p.inverse(&x[..k], &mut y[..k]);
        }
        for (v, (s, _)) in y.iter_mut().zip(&self.scale) {
            *v /= s;
        }
        y
    }

    /// Box bounds of the solver's variables: the layout's, but none on preconditioned
    /// utilities and new coordinates (their box `|α_ik|, |β_i| ≤ L` is implied by the balls).
    pub(super) fn bounds(&self, b: &[(f64, f64)]) -> Vec<(f64, f64)> {
        let k = self.pre.map_or(0, |p| p.center.len());
        self.keep
            .iter()
            .enumerate()
            .map(|(i, &full)| {
                let (s, free) = self.scale[i];
                if i < k || free {
                    (f64::NEG_INFINITY, f64::INFINITY)
                } else {
                    (b[full].0 / s, b[full].1 / s)
                }
            })
            .collect()
    }
}

impl agora_math::constrained::Reparam for SetVars<'_> {
    fn dim_x(&self) -> usize {
        self.len
    }

    fn forward(&self, y: &[f64], x: &mut [f64]) {
        let k = self.pre.map_or(0, |p| p.center.len());
        for ((&full, v), (s, _)) in self.keep.iter().zip(y).zip(&self.scale).skip(k) {
            x[full] = s * v;
        }
        if let Some(p) = self.pre {
            p.forward(&y[..k], &mut x[..k]);
        }
        if self.a {
            let (n, off) = (self.n, self.off);
            for i in 0..n {
                let rest: f64 = (0..n).filter(|&j| j != i).map(|j| x[off + i * n + j]).sum();
                x[self.diag(i)] = 1.0 - rest;
            }
        }
    }

    /// The chain rule: `∂/∂A_ij = ∂_ij − ∂_ii` for `j ≠ i`, and `L⁻¹ ∂_α`.
    fn pullback(&self, gx: &[f64], gy: &mut [f64]) {
        let a = self.off..self.off + self.n * self.n;
        for (k, &full) in self.keep.iter().enumerate() {
            gy[k] = gx[full];
            if self.a && a.contains(&full) {
                gy[k] -= gx[self.diag((full - self.off) / self.n)];
            }
            gy[k] *= self.scale[k].0;
        }
        if let Some(p) = self.pre {
            let k = p.center.len();
            p.pullback(&gx[..k], &mut gy[..k]);
        }
    }
}

/// Label permutations are tried as MAP starts up to this many agents (4! = 24 starts).
const MAX_PERMUTED_AGENTS: usize = 4;

/// Largest relative stationarity residual of a usable solve that stopped short of its own
/// (tighter) tolerance at its iteration limit.
const USABLE_STATIONARITY: f64 = 1e-4;

/// Whether a solve can be used: its point is feasible (to 10× its tolerance), and it met its
/// tolerances or stopped at a KKT point to [`USABLE_STATIONARITY`] (relative to `1 + |f|`).
/// Anything else is never used: an infeasible point is outside the set, and a point far from
/// stationary is not the maximum the problem asks for.
pub(super) fn usable(r: &AlResult, feas_tol: f64) -> bool {
    feasible(r, feas_tol)
        && (r.converged || r.kkt.stationarity <= USABLE_STATIONARITY * (1.0 + r.f.abs()))
}

/// Whether a solve's point is feasible, to 10× the solver's tolerance.
pub(super) fn feasible(r: &AlResult, feas_tol: f64) -> bool {
    r.kkt.feasibility <= feas_tol.max(1e-9) * 10.0
}

/// Largest constraint violation of a point accepted from a problem over the confidence set:
/// 1e−4 nats of a likelihood-ratio slack β = 0.5 (or of `L²` in a ball), far below anything
/// the bounds and the acquisition can resolve. (The bound solver aims at 1e−6 and reaches
/// it almost always; the exceptions measured on the suite's runs violate by ~1e−5.)
pub(super) const SET_FEASIBILITY: f64 = 1e-4;

/// The error for a problem none of whose solves is usable, with the best residuals seen.
pub(super) fn unusable(what: &str, results: &[AlResult]) -> Error {
    let best = results
        .iter()
        .map(|r| (r.kkt.feasibility, r.kkt.stationarity))
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    Error::Numerical(format!(
        "the {what} did not converge to a feasible point from any of its {} starts \
         (smallest infeasibility and stationarity residual: {:?}); the solver's settings or \
         the data (e.g. contradictory votes on the same pair) need attention",
        results.len(),
        best
    ))
}

/// All permutations of `0..n` (identity first), in lexicographic order.
pub(super) fn permutations(n: usize) -> Vec<Vec<usize>> {
    fn rec(prefix: &mut Vec<usize>, left: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if left.is_empty() {
            out.push(prefix.clone());
            return;
        }
        for k in 0..left.len() {
            let v = left.remove(k);
            prefix.push(v);
            rec(prefix, left, out);
            prefix.pop();
            left.insert(k, v);
        }
    }
    let mut out = Vec::new();
    rec(&mut Vec::new(), &mut (0..n).collect(), &mut out);
    out
}

impl SocialModel {
    /// `(α, A)` relabelled by `perm`: agent `i` takes agent `perm[i]`'s utilities and column
    /// `perm[i]` of `A` moves to column `i`, so `A u` (the public utilities) is unchanged.
    pub(super) fn permuted(&self, x: &[f64], perm: &[usize], lay: &SetLayout) -> Vec<f64> {
        let (n, m) = (self.n, self.m());
        let mut y = x.to_vec();
        for i in 0..n {
            y[i * m..(i + 1) * m].copy_from_slice(&x[perm[i] * m..(perm[i] + 1) * m]);
            if lay.a {
                for r in 0..n {
                    y[lay.a_off() + r * n + i] = x[lay.a_off() + r * n + perm[i]];
                }
            }
        }
        y
    }

    pub(super) fn graph_of<'x>(&'x self, x: &'x [f64], lay: &SetLayout) -> &'x [f64] {
        match &self.cfg.coupling {
            Coupling::Known(g) => g.entries(),
            _ if lay.a => &x[lay.a_off()..lay.a_off() + self.n * self.n],
            _ => &[],
        }
    }

    /// `(ℓ_u, ℓ_v, log prior)` and the gradient of `wu ℓ_u + wv ℓ_v + wp prior` in the
    /// variables, added into `g`.
    pub(super) fn parts(
        &self,
        x: &[f64],
        lay: &SetLayout,
        w: [f64; 3],
        g: Option<&mut [f64]>,
    ) -> [f64; 3] {
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
            let eps = 0.5 * p.delta_a;
            for (k, &aij) in a.iter().enumerate() {
                let (l, dl) = log_extended(aij, eps);
                v += (p.kappa - 1.0) * l - p.xi * aij * aij;
                ga[k] += w[2] * ((p.kappa - 1.0) * dl - 2.0 * p.xi * aij);
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

    pub(super) fn bounds_for(&self, lay: &SetLayout) -> Vec<(f64, f64)> {
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

    pub(super) fn learned(&self) -> bool {
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
        let lay = SetLayout {
            n,
            m,
            ext: false,
            a: self.learned(),
            tau: false,
        };
        let obj = |x: &[f64], g: &mut [f64]| -> Result<f64> {
            g.iter_mut().for_each(|v| *v = 0.0);
            let p = self.parts(x, &lay, [-1.0, -1.0, -1.0], Some(g));
            Ok(-(p[0] + p[1] + p[2]))
        };
        let balls = self.ball_fns(&lay);
        let cons = constraints(&[&balls]);
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
        let warm = !starts.is_empty();
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
        // On fresh refits, the label-switched copies of the warm start: `v = A u` is
        // unchanged by `(A P, Pᵀ u)` for a permutation `P`, so with few private votes the MAP
        // has up to n! modes that differ by which agent's utility is whose.
        if fresh > 0 && lay.a && warm && n <= MAX_PERMUTED_AGENTS {
            let warm = starts[0].clone();
            for perm in permutations(n).into_iter().skip(1) {
                starts.push(self.permuted(&warm, &perm, &lay));
            }
        }
        // The starts are independent: solved in parallel, kept in start order.
        let solve =
            |x0: &Vec<f64>| self.solve_al(&lay, &obj, &cons, (x0, None), self.cfg.solver, None);
        let mut results: Vec<AlResult> = starts.par_iter().map(solve).collect::<Result<_>>()?;
        let best_of = |results: &[AlResult]| {
            (0..results.len())
                .filter(|k| usable(&results[*k], self.cfg.solver.feas_tol))
                .min_by(|a, b| results[*a].f.total_cmp(&results[*b].f).then(a.cmp(b)))
        };
        // Without a warm start, the label-switched copies of the best cold solution (the
        // same reasoning): their local maxima inside the set become modes, from which the
        // bound problems start.
        if !warm
            && lay.a
            && n <= MAX_PERMUTED_AGENTS
            && n > 1
            && let Some(b) = best_of(&results)
        {
            let x = &results[b].x;
            let more: Vec<Vec<f64>> = permutations(n)
                .into_iter()
                .skip(1)
                .map(|perm| self.permuted(x, &perm, &lay))
                .collect();
            let more: Vec<AlResult> = more.par_iter().map(solve).collect::<Result<_>>()?;
            results.extend(more);
        }
        let bi = best_of(&results).ok_or_else(|| unusable("MAP of the social model", &results))?;
        let best = results[bi].clone();
        // Distinct other modes inside the set.
        let mut modes: Vec<Vec<f64>> = Vec::new();
        for (k, r) in results.iter().enumerate() {
            if k == bi || r.f > best.f + self.cfg.beta || !usable(r, self.cfg.solver.feas_tol) {
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
        let lay = SetLayout {
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
        let cons = constraints(&[&balls]);
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

    pub(super) fn ball_fns(&self, lay: &SetLayout) -> Vec<SetConstraint<'_>> {
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
                }) as SetConstraint<'_>
            })
            .collect()
    }

    /// [`minimize_al`] over `lay`'s variables in their box ([`SocialModel::bounds_for`])
    /// subject to `ineq` (inequalities), with the rows of a learned `A` held to sum 1, in the
    /// solver variables [`SetVars`] (`pre` preconditions the utilities). The rows are not
    /// equality constraints of the augmented Lagrangian: each diagonal entry is eliminated,
    /// `A_ii = 1 − Σ_{j≠i} A_ij`, and its floor `A_ii ≥ δ_A` becomes one linear inequality
    /// per row (its ceiling `1 − δ_A` is implied by the other entries' floors). Equality
    /// penalties `r (Σ_j A_ij − 1)²` with `r` up to 1e6 made the subproblems ill-conditioned
    /// (hundreds to thousands of L-BFGS-B iterations each, measured at t = 50 on thermal
    /// comfort); the eliminated problem is the same problem over the same set.
    ///
    /// The start `(x0, multipliers)`: `x0` and the result are in `lay`'s variables (the
    /// diagonal recomputed from the rest, so the rows sum to 1 to rounding).
    /// `multipliers` and the result's hold one per `ineq`,
    /// then one per row of a learned `A` (its diagonal floor's).
    pub(super) fn solve_al(
        &self,
        lay: &SetLayout,
        f: &Objective<'_>,
        ineq: &[Constraint<'_>],
        (x0, multipliers): (&[f64], Option<&[f64]>),
        opts: AlOptions,
        pre: Option<&Precond>,
    ) -> Result<AlResult> {
        let bounds = self.bounds_for(lay);
        if !lay.a && pre.is_none() {
            return minimize_al(f, ineq, &bounds, x0, multipliers, opts);
        }
        let (n, len, off) = (self.n, lay.len(), lay.a_off());
        if x0.len() != len || bounds.len() != len {
            return Err(Error::dim("x0", len, x0.len()));
        }
        let vars = SetVars::new(lay, pre);
        let mut cons: Vec<Constraint<'_>> = ineq
            .iter()
            .map(|c| Constraint {
                kind: c.kind,
                f: c.f,
            })
            .collect();
        // Row i's diagonal floor, lo_ii − A_ii ≤ 0, in the layout's variables.
        let floors: Vec<_> = if lay.a {
            (0..n)
                .map(|i| {
                    let d = off + i * n + i;
                    let lo = bounds[d].0;
                    // The ceiling of each diagonal entry must follow from the other
                    // entries' floors.
                    let others: f64 = (0..n)
                        .filter(|&j| j != i)
                        .map(|j| bounds[off + i * n + j].0)
                        .sum();
                    if 1.0 - others > bounds[d].1 + 1e-12 {
                        return Err(Error::Numerical(format!(
                            "the graph's bounds do not imply A[{i}][{i}] <= {}",
                            bounds[d].1
                        )));
                    }
                    Ok(move |x: &[f64], g: &mut [f64]| -> Result<f64> {
                        g.iter_mut().for_each(|e| *e = 0.0);
                        g[d] = -1.0;
                        Ok(lo - x[d])
                    })
                })
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        cons.extend(floors.iter().map(|h| Constraint {
            kind: Kind::Inequality,
            f: h,
        }));
        let rb = vars.bounds(&bounds);
        let y0 = vars.reduce(
            &x0.iter()
                .zip(&bounds)
                .map(|(v, (l, h))| v.clamp(*l, *h))
                .collect::<Vec<_>>(),
        );
        let mut r = minimize_al_in(f, &cons, &vars, &rb, &y0, multipliers, opts)?;
        r.x = vars.expand(&r.x);
        Ok(r)
    }

    /// The layout of a problem over the confidence set: `extended` adds one coordinate per
    /// agent for a new point, `epigraph` a free scalar `τ`.
    pub fn layout(&self, extended: bool, epigraph: bool) -> SetLayout {
        SetLayout {
            n: self.n,
            m: self.m(),
            ext: extended,
            a: self.learned(),
            tau: epigraph,
        }
    }
}
