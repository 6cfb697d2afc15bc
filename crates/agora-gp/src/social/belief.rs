//! A Laplace approximation of the social model's posterior at its MAP: each agent's
//! utility at any point as a mean and a covariance, for the facilitator's picture (not for
//! the search, which uses the confidence set).
//!
//! The vote model of Social BO (Adachi et al.; docs/notes/social-bo.md §2.3–2.5) gives
//! confidence *sets* (Lemma D.2), not a posterior. Its GP variant (App. F.1.1) approximates
//! the posterior of its graph by Laplace, `N(B̂, Λ⁻¹)` with `Λ = −∇∇ log P` at the optimum
//! (note §2.7). agora applies the same device to the vote model's MAP (problem (52a)):
//! the posterior `p(α, A | votes) ∝ exp J(α, A)` on the feasible set is approximated by the
//! Gaussian centred at the MAP whose precision is the negative Hessian `H = −∇²J` restricted
//! to the tangent space of the active constraints,
//!
//! `Σ = Z (Zᵀ H Z)⁻¹ Zᵀ`, `Z` an orthonormal basis of `{δ : E δ = 0}`,
//!
//! `E` the normals of the active constraints (`Σ` is the top-left block of the inverse of the
//! KKT matrix `[[H, Eᵀ], [E, 0]]`). `J` is the MAP objective of `map` (log-likelihoods of
//! both channels, the graph's log-prior and the ridge `−(r/2)‖α‖²`).
//!
//! `H` is analytic. In the utilities `U` a Bradley–Terry vote with difference `d` adds
//! `p(1 − p) ∇d ∇dᵀ` (`p = σ(d)`), where `∇d` is `e_a − e_b` for a private vote and
//! `(A_i· ⊗ (e_a − e_b), U_·a − U_·b)` in `(U, A_i·)` for a public one; a public vote on a
//! learned graph also adds the second-order term of its bilinear `d = Σ_j A_ij (U_ja − U_jb)`,
//! `−s σ(−s d) ∂²d/∂U∂A` (`s = ±1` the vote's direction), which makes `H` indefinite away
//! from the data's fit; the graph prior adds `(κ − 1)/A_ij² + 2ξ` on its diagonal. `U = C α`
//! is linear, so `H_α = Cᵀ H_U C` blockwise, and the ridge adds `r I`. The tests check `H`
//! against finite differences of the exact gradient.
//!
//! Approximations and decisions:
//! - A Gaussian at one mode: `J` is biconvex, not concave (`SocialFit::modes` may hold
//!   other local maxima); the belief is at the best one, the fit's MAP.
//! - Active constraints are treated as equalities: the belief lives on the face the MAP sits
//!   on, with no variance across it. The row sums of `A` always; an entry of `A` within 1e-6
//!   of its bound `δ_A` or `1 − δ_A`; an agent's ball `‖α_i‖ ≤ L` when `‖α_i‖ ≥ L(1 − 1e-6)`
//!   and its multiplier `μ_i` is positive, whose curvature `2μ_i I` (the Hessian of the
//!   Lagrangian) is then added to that agent's block. The box `|α_ik| ≤ L` the solver also
//!   keeps is implied by the ball and not treated separately. Inactive constraints are
//!   ignored: the Gaussian is not truncated at them.
//! - The new point's coordinate `β_i` (`u(x, i) = c·α_i + s β_i`, [`SocialModel::extension`])
//!   enters no vote, so its posterior is its prior `N(0, 1/r)` (the ridge), independent of
//!   `(α, A)` and across agents: far from the data the belief reverts to the prior,
//!   `sd → √((k(x, x) + jitter)/r)`. With `r = 0` (the paper's uniform prior) there is no
//!   proper belief away from the data, and votes fix only differences of utilities, so
//!   [`SocialModel::belief_at`] is an error naming `ridge`.
//! - `u(x, :)` depends on `α` only, so its covariance is `c`-weighted blocks of `Σ`'s `α`
//!   block (the graph's uncertainty enters through its correlation with `α`), plus `s²/r I`.

use super::votes::sigmoid;
use super::{Coupling, SetLayout, SocialModel};
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};

#[cfg(test)]
mod tests;

/// How close to a bound a variable must be for the bound to count as active.
const ACTIVE_TOL: f64 = 1e-6;

/// The constraints the Laplace approximation treats as equalities besides the row sums of
/// `A` (see the module docs).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ActiveConstraints {
    /// Agents whose ball `‖α_i‖ ≤ L` is active, with its multiplier `μ_i > 0`.
    pub balls: Vec<(usize, f64)>,
    /// Entries `(i, j)` of a learned `A` at a bound (`δ_A` or `1 − δ_A`).
    pub graph_bounds: Vec<(usize, usize)>,
}

/// The belief about every agent's utility at one point.
#[derive(Debug, Clone)]
pub struct UtilityBelief {
    /// The MAP utilities `Û(x, i) = c·α̂_i`, as [`SocialModel::map_at`] gives them.
    pub mean: Vec<f64>,
    /// The Laplace covariance of `u(x, :)`, `n × n` (cross-agent terms through the joint
    /// posterior of `(α, A)`).
    pub cov: Mat<f64>,
}

impl UtilityBelief {
    /// Each agent's standard deviation, `√cov_ii`.
    pub fn sd(&self) -> Vec<f64> {
        (0..self.mean.len())
            .map(|i| self.cov[(i, i)].max(0.0).sqrt())
            .collect()
    }
}

/// Beliefs at several points, and how the approximation was computed.
#[derive(Debug, Clone)]
pub struct SocialBelief {
    /// One belief per point asked about, in order.
    pub points: Vec<UtilityBelief>,
    /// Jitter the reduced precision `Zᵀ H Z` needed to factor (0 when it factored as is).
    pub jitter: f64,
    /// The constraints treated as active.
    pub active: ActiveConstraints,
}

/// The Laplace approximation over the MAP's variables `[α, A]` (a [`SetLayout`] without
/// extension or epigraph).
pub(super) struct Laplace {
    /// Orthonormal basis of the tangent space, `p × q`.
    pub(super) z: Mat<f64>,
    /// Factor of the reduced precision `Zᵀ H Z` (the ball's curvature included).
    pub(super) chol: Cholesky,
    pub(super) active: ActiveConstraints,
}

/// `k − 1` orthonormal vectors orthogonal to the unit vector `v` in `R^k`: columns 2..k of
/// the Householder reflection mapping `v` to `∓e_1`.
fn complement(v: &[f64]) -> Vec<Vec<f64>> {
    let k = v.len();
    let mut w = v.to_vec();
    w[0] += if v[0] >= 0.0 { 1.0 } else { -1.0 };
    let ww: f64 = w.iter().map(|x| x * x).sum();
    (1..k)
        .map(|col| {
            (0..k)
                .map(|row| f64::from(u8::from(row == col)) - 2.0 * w[row] * w[col] / ww)
                .collect()
        })
        .collect()
}

impl SocialModel {
    /// The negative Hessian `−∇²J` of the MAP objective in `lay`'s variables `[α, A]`
    /// (`lay` without extension or epigraph), analytic (module docs).
    pub(super) fn neg_hessian(&self, x: &[f64], lay: &SetLayout) -> Mat<f64> {
        let (n, m) = (self.n, self.m());
        let nm = n * m;
        let na = if lay.a { n * n } else { 0 };
        let u = self.utilities_of(&x[..nm]);
        // In (U, A): U agent-major (`U_ik` at `i·m + k`), A row-major.
        let mut hu = Mat::<f64>::zeros(nm, nm);
        let mut hua = Mat::<f64>::zeros(nm, na);
        let mut haa = Mat::<f64>::zeros(na, na);
        for v in &self.private {
            let (a, b) = (v.agent * m + v.a, v.agent * m + v.b);
            let d = u[a] - u[b];
            let w = sigmoid(d) * sigmoid(-d);
            hu[(a, a)] += w;
            hu[(b, b)] += w;
            hu[(a, b)] -= w;
            hu[(b, a)] -= w;
        }
        if !matches!(self.cfg.coupling, Coupling::Independent) {
            let g = self.graph_of(x, lay);
            for v in &self.public {
                let i = v.agent;
                let dj: Vec<f64> = (0..n).map(|j| u[j * m + v.a] - u[j * m + v.b]).collect();
                let d: f64 = (0..n).map(|j| g[i * n + j] * dj[j]).sum();
                let s = if v.a_wins { 1.0 } else { -1.0 };
                let w = sigmoid(d) * sigmoid(-d);
                for j in 0..n {
                    let (ja, jb) = (j * m + v.a, j * m + v.b);
                    for k in 0..n {
                        let (ka, kb) = (k * m + v.a, k * m + v.b);
                        let c = w * g[i * n + j] * g[i * n + k];
                        hu[(ja, ka)] += c;
                        hu[(jb, kb)] += c;
                        hu[(ja, kb)] -= c;
                        hu[(jb, ka)] -= c;
                    }
                }
                if lay.a {
                    // ∂ log σ(s d)/∂d, times ∂²d/∂U_ja∂A_ij = 1 (and −1 at b).
                    let t = s * sigmoid(-s * d);
                    for j in 0..n {
                        let (ja, jb) = (j * m + v.a, j * m + v.b);
                        for k in 0..n {
                            let c = w * g[i * n + j] * dj[k];
                            hua[(ja, i * n + k)] += c;
                            hua[(jb, i * n + k)] -= c;
                            haa[(i * n + j, i * n + k)] += w * dj[j] * dj[k];
                        }
                        hua[(ja, i * n + j)] -= t;
                        hua[(jb, i * n + j)] += t;
                    }
                }
            }
        }
        if lay.a {
            let p = &self.cfg.prior;
            let g = self.graph_of(x, lay);
            for (k, aij) in g.iter().enumerate() {
                haa[(k, k)] += (p.kappa - 1.0) / (aij * aij) + 2.0 * p.xi;
            }
        }
        // To α: U_i = C α_i per agent.
        let c = self.c.as_ref();
        let mut h = Mat::<f64>::zeros(lay.len(), lay.len());
        let mut t = Mat::<f64>::zeros(m, m);
        for bi in 0..n {
            for bj in 0..n {
                let blk = hu.as_ref().submatrix(bi * m, bj * m, m, m);
                matmul(t.as_mut(), Accum::Replace, blk, c, 1.0, Par::Seq);
                matmul(
                    h.as_mut().submatrix_mut(bi * m, bj * m, m, m),
                    Accum::Replace,
                    c.transpose(),
                    t.as_ref(),
                    1.0,
                    Par::Seq,
                );
            }
        }
        if lay.a {
            let off = lay.a_off();
            let mut ta = Mat::<f64>::zeros(m, na);
            for bi in 0..n {
                let blk = hua.as_ref().submatrix(bi * m, 0, m, na);
                matmul(
                    ta.as_mut(),
                    Accum::Replace,
                    c.transpose(),
                    blk,
                    1.0,
                    Par::Seq,
                );
                h.as_mut()
                    .submatrix_mut(bi * m, off, m, na)
                    .copy_from(ta.as_ref());
                h.as_mut()
                    .submatrix_mut(off, bi * m, na, m)
                    .copy_from(ta.transpose());
            }
            h.as_mut()
                .submatrix_mut(off, off, na, na)
                .copy_from(haa.as_ref());
        }
        let r = self.cfg.ridge;
        if r > 0.0 {
            for k in 0..nm {
                h[(k, k)] += r;
            }
        }
        h
    }

    /// The Laplace approximation at the last fit (module docs). Errors before a fit, with
    /// `ridge ≤ 0`, or when the reduced precision stays indefinite at the largest jitter.
    pub(super) fn laplace(&self) -> Result<Laplace> {
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let r = self.cfg.ridge;
        if !(r.is_finite() && r > 0.0) {
            return Err(Error::invalid(
                "ridge",
                format!(
                    "a belief needs a proper Gaussian prior on the utilities: ridge must be \
                     finite and > 0, got {r} (with 0, the paper's uniform prior, votes fix \
                     only differences and nothing is known about a new point)"
                ),
            ));
        }
        let (n, m) = (self.n, self.m());
        let lay = self.layout(false, false);
        let x = self.map_point(&lay)?;
        let mut h = self.neg_hessian(&x, &lay);
        let mut grad = vec![0.0; lay.len()];
        self.parts(&x, &lay, [1.0; 3], Some(&mut grad));
        let mut active = ActiveConstraints::default();
        // Tangent directions, sparse: (coordinate, value) pairs.
        let mut dirs: Vec<Vec<(usize, f64)>> = Vec::new();
        let l = self.cfg.bound;
        for i in 0..n {
            let ai = &fit.alpha[i * m..(i + 1) * m];
            let norm = ai.iter().map(|v| v * v).sum::<f64>().sqrt();
            // KKT of max J s.t. ‖α_i‖² ≤ L²: ∇_i J = 2 μ_i α_i.
            let mu = if norm > 0.0 {
                grad[i * m..(i + 1) * m]
                    .iter()
                    .zip(ai)
                    .map(|(g, a)| g * a)
                    .sum::<f64>()
                    / (2.0 * norm * norm)
            } else {
                0.0
            };
            if norm >= l * (1.0 - ACTIVE_TOL) && mu > 0.0 {
                active.balls.push((i, mu));
                for k in 0..m {
                    h[(i * m + k, i * m + k)] += 2.0 * mu;
                }
                let unit: Vec<f64> = ai.iter().map(|v| v / norm).collect();
                dirs.extend(complement(&unit).into_iter().map(|d| {
                    d.into_iter()
                        .enumerate()
                        .map(|(k, v)| (i * m + k, v))
                        .collect()
                }));
            } else {
                dirs.extend((0..m).map(|k| vec![(i * m + k, 1.0)]));
            }
        }
        if lay.a {
            let bounds = self.bounds_for(&lay);
            let off = lay.a_off();
            for i in 0..n {
                let mut free = Vec::new();
                for j in 0..n {
                    let k = off + i * n + j;
                    let (lo, hi) = bounds[k];
                    if x[k] <= lo + ACTIVE_TOL || x[k] >= hi - ACTIVE_TOL {
                        active.graph_bounds.push((i, j));
                    } else {
                        free.push(k);
                    }
                }
                if free.len() >= 2 {
                    let unit = vec![1.0 / (free.len() as f64).sqrt(); free.len()];
                    dirs.extend(
                        complement(&unit)
                            .into_iter()
                            .map(|d| free.iter().copied().zip(d).collect()),
                    );
                }
            }
        }
        let z = basis(lay.len(), &dirs);
        let mut hz = Mat::<f64>::zeros(lay.len(), z.ncols());
        matmul(
            hz.as_mut(),
            Accum::Replace,
            h.as_ref(),
            z.as_ref(),
            1.0,
            Par::Seq,
        );
        let mut hr = Mat::<f64>::zeros(z.ncols(), z.ncols());
        matmul(
            hr.as_mut(),
            Accum::Replace,
            z.transpose(),
            hz.as_ref(),
            1.0,
            Par::Seq,
        );
        let chol = Cholesky::new(hr.as_ref()).map_err(|e| {
            Error::Numerical(format!(
                "the social model's Laplace precision (the negative Hessian of the MAP \
                 objective on the constraints' tangent space) is not positive definite: the \
                 MAP is not a strict local maximum ({e})"
            ))
        })?;
        Ok(Laplace { z, chol, active })
    }

    /// Each agent's utility at every point of `xs` (rows in the model's coordinates: the
    /// unit cube, or a candidate set's features) under the Laplace approximation of the
    /// posterior at the last fit (module docs; an approximation: a Gaussian at the MAP,
    /// active constraints as equalities, `β` from its prior). The means equal
    /// [`SocialModel::map_at`]. Errors before a fit, with `ridge ≤ 0` (naming `ridge`), for a
    /// point of the wrong length or not finite (naming `xs[k]`), and when the precision is
    /// not positive definite even with jitter.
    pub fn belief_at(&self, xs: &[Vec<f64>]) -> Result<SocialBelief> {
        let lap = self.laplace()?;
        let fit = self.fit.as_ref().expect("checked by laplace");
        let (n, m) = (self.n, self.m());
        let q = lap.z.ncols();
        // Cov(α) = Wᵀ W with W = L⁻¹ Z_αᵀ (q × nm).
        let mut w = lap
            .z
            .as_ref()
            .submatrix(0, 0, n * m, q)
            .transpose()
            .to_owned();
        lap.chol.solve_lower_in_place(w.as_mut());
        let r = self.cfg.ridge;
        let d = self.points.ncols();
        let mut points = Vec::with_capacity(xs.len());
        for (k, x) in xs.iter().enumerate() {
            let field = format!("xs[{k}]");
            if x.len() != d {
                return Err(Error::dim(field, d, x.len()));
            }
            agora_core::check_finite_slice(&field, x)?;
            let (c, s) = self.extension(x)?;
            let mean: Vec<f64> = (0..n)
                .map(|i| {
                    c.iter()
                        .zip(&fit.alpha[i * m..(i + 1) * m])
                        .map(|(a, b)| a * b)
                        .sum()
                })
                .collect();
            // wc_i = W[:, block i] c: agent i's utility as a functional of the q coordinates.
            let wc: Vec<Vec<f64>> = (0..n)
                .map(|i| {
                    let mut acc = vec![0.0; q];
                    for (kk, ck) in c.iter().enumerate() {
                        let col = w.col(i * m + kk);
                        for (row, a) in acc.iter_mut().enumerate() {
                            *a += col[row] * ck;
                        }
                    }
                    acc
                })
                .collect();
            let cov = Mat::from_fn(n, n, |i, j| {
                let dot: f64 = wc[i].iter().zip(&wc[j]).map(|(a, b)| a * b).sum();
                dot + if i == j { s * s / r } else { 0.0 }
            });
            points.push(UtilityBelief { mean, cov });
        }
        Ok(SocialBelief {
            points,
            jitter: lap.chol.jitter(),
            active: lap.active,
        })
    }
}

/// The `p × q` matrix whose columns are the sparse `(index, value)` lists `cols`.
fn basis(p: usize, cols: &[Vec<(usize, f64)>]) -> Mat<f64> {
    let mut z = Mat::<f64>::zeros(p, cols.len());
    for (j, c) in cols.iter().enumerate() {
        for &(i, v) in c {
            z[(i, j)] = v;
        }
    }
    z
}
