//! Social BO's GP variant (App. F.1; docs/notes/social-bo.md §2.7): agents rate options
//! directly (`u^{(i)}_t = u^{(i)}(x_t) + ξ_t`, Assumption F.1), publicly (`v = A u`) or
//! privately (`u`).
//!
//! - The public utilities get the multi-task prior induced by the graph,
//!   `v(x, :) ~ N(0, k_X(x, x) A K_E Aᵀ)` (Eqs. 149–150), with `K_E = I` and per-agent output
//!   scales: the task covariance is `diag(s) corr(Â Âᵀ) diag(s)` from the previous estimate
//!   `Â` (the identity before one exists), and the data are isotopic (every agent rates every
//!   public option), so [`crate::Icm`] conditions on them exactly.
//! - `B = (A + λI)⁻¹` (`u(x, :) ≈ B v(x, :)`, λ = 1e−4) is estimated by maximizing the
//!   predictive log-likelihood of the private ratings under the public posterior (Eq. 151):
//!   row `i` of `B` maps the public posterior at the private options to agent `i`'s private
//!   ratings, `U_i ~ N(M b_i, Σ_j b_ij² C_j + σ_i² I)` with `M`, `C_j` the public posterior
//!   means and per-agent covariances (the paper's per-agent form; cross-agent posterior
//!   covariance is dropped, as the corollary's independence assumption does). The rows
//!   separate, so each is a small Newton problem. A Gaussian prior `b_i ~ N(e_i, τ² I)`
//!   (τ = 1 by default; agora's choice, the paper gives none) keeps `B` defined while the
//!   private ratings are fewer than the agents.
//! - Laplace: `P(B | D) ≈ N(B̂, Λ⁻¹)` with `Λ` the Hessian of the negative log posterior at
//!   `B̂` (central differences of the analytic gradient; block diagonal over rows).
//! - Corollary F.2: `μ^{u(i)}(x) = B̂(i, :) m^v(x)` and Goodman's variance
//!   `Σ_j [(σ²_bij + b̂_ij²)(C_j + m_j²) − b̂_ij² m_j²]` (the per-term form; the printed
//!   corollary's products are a **\[PAPER-BUG\]**, note §2.7). [`UPrediction`] splits it into
//!   the part due to `B` (`Σ_j σ²_bij (C_j + m_j²)`) and the part due to `v`
//!   (`Σ_j b̂_ij² C_j`), which drive the private-rating rule.

use crate::icm::{Icm, profile_fit};
use crate::kernel::Kernel;
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use faer::linalg::solvers::DenseSolveCore;
use faer::{Mat, MatRef};

/// Settings of [`SocialGp`].
#[derive(Debug, Clone, PartialEq)]
pub struct SocialGpConfig {
    /// `λ` of `B = (A + λI)⁻¹`.
    pub lambda: f64,
    /// Prior standard deviation `τ` of each `b_ij` around the identity.
    pub b_prior_sd: f64,
    /// Smallest output scale and noise floor of the hyperparameter fit.
    pub floor: f64,
    /// Floor `δ_A` of the entries of the reported graph `Â`.
    pub delta: f64,
}

impl Default for SocialGpConfig {
    fn default() -> Self {
        SocialGpConfig {
            lambda: 1e-4,
            b_prior_sd: 1.0,
            floor: 1e-8,
            delta: 0.01,
        }
    }
}

/// The Laplace posterior of `B`.
#[derive(Debug, Clone, PartialEq)]
pub struct BFit {
    /// `B̂` (`n × n`).
    pub b: Mat<f64>,
    /// Marginal posterior variances `σ²_bij` (the diagonal of each row's `Λ_i⁻¹`).
    pub var: Mat<f64>,
    /// Each row's full Laplace covariance `Λ_i⁻¹` (`n × n`).
    pub row_cov: Vec<Mat<f64>>,
    /// Eq. 151 at `B̂`: the mean over agents of the private ratings' log-likelihood.
    pub log_lik: f64,
    /// Largest gradient entry of the negative log posterior at `B̂` (a KKT residual).
    pub grad_norm: f64,
    /// Newton iterations, summed over rows.
    pub iters: usize,
    /// Jitter added to any `Λ_i` that was not positive definite.
    pub jitter: f64,
}

/// A row's Newton result: `(b, objective, gradient, log-likelihood, iterations)`.
type RowMin = (Vec<f64>, f64, Vec<f64>, f64, usize);

struct Row<'a> {
    m: MatRef<'a, f64>,
    c: &'a [Mat<f64>],
    u: Vec<f64>,
    noise: f64,
    i: usize,
    tau2: f64,
}

impl Row<'_> {
    fn s(&self, b: &[f64]) -> Mat<f64> {
        let t = self.u.len();
        let mut s = Mat::from_fn(t, t, |p, q| {
            b.iter()
                .enumerate()
                .map(|(j, bj)| bj * bj * self.c[j][(p, q)])
                .sum::<f64>()
        });
        for p in 0..t {
            s[(p, p)] += self.noise;
        }
        s
    }

    /// Negative log posterior (up to a constant), its gradient, and the log-likelihood.
    fn eval(&self, b: &[f64]) -> Result<(f64, Vec<f64>, f64)> {
        let (t, n) = (self.u.len(), b.len());
        let ch = Cholesky::new(self.s(b).as_ref())?;
        let r: Vec<f64> = (0..t)
            .map(|p| self.u[p] - (0..n).map(|j| self.m[(p, j)] * b[j]).sum::<f64>())
            .collect();
        let al = ch.solve_vec(&r);
        let quad: f64 = r.iter().zip(&al).map(|(a, b)| a * b).sum();
        let ll = -0.5 * (quad + ch.log_det() + t as f64 * 1.837_877_066_409_345_5);
        let prior: f64 = (0..n)
            .map(|j| {
                let e = b[j] - f64::from(u8::from(j == self.i));
                e * e
            })
            .sum::<f64>()
            / (2.0 * self.tau2);
        let sinv = ch.inverse();
        let grad = (0..n)
            .map(|j| {
                let mta: f64 = (0..t).map(|p| self.m[(p, j)] * al[p]).sum();
                let aca: f64 = (0..t)
                    .map(|p| al[p] * (0..t).map(|q| self.c[j][(p, q)] * al[q]).sum::<f64>())
                    .sum();
                let tr: f64 = (0..t)
                    .map(|p| {
                        (0..t)
                            .map(|q| sinv[(p, q)] * self.c[j][(q, p)])
                            .sum::<f64>()
                    })
                    .sum();
                -mta - b[j] * (aca - tr) + (b[j] - f64::from(u8::from(j == self.i))) / self.tau2
            })
            .collect();
        Ok((-ll + prior, grad, ll))
    }

    fn hessian(&self, b: &[f64]) -> Result<Mat<f64>> {
        let n = b.len();
        let mut h = Mat::zeros(n, n);
        for k in 0..n {
            let step = 1e-5 * (1.0 + b[k].abs());
            let (mut bp, mut bm) = (b.to_vec(), b.to_vec());
            bp[k] += step;
            bm[k] -= step;
            let (gp, gm) = (self.eval(&bp)?.1, self.eval(&bm)?.1);
            for j in 0..n {
                h[(j, k)] = (gp[j] - gm[j]) / (2.0 * step);
            }
        }
        Ok(Mat::from_fn(n, n, |a, c| 0.5 * (h[(a, c)] + h[(c, a)])))
    }

    /// Damped Newton from `b0`; returns (b, f, grad, ll, iters).
    fn minimize(&self, b0: Vec<f64>) -> Result<RowMin> {
        let n = b0.len();
        let mut b = b0;
        let (mut f, mut g, mut ll) = self.eval(&b)?;
        let mut mu = 1e-6;
        let mut iters = 0;
        while iters < 100 {
            let gmax = g.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            if gmax < 1e-9 * (1.0 + f.abs()) {
                break;
            }
            iters += 1;
            let h = self.hessian(&b)?;
            let mut improved = false;
            for _ in 0..40 {
                let mut hm = h.clone();
                for k in 0..n {
                    hm[(k, k)] += mu;
                }
                let Ok(ch) = Cholesky::with_policy(
                    hm.as_ref(),
                    agora_math::linalg::JitterPolicy {
                        initial: 1.0,
                        factor: 10.0,
                        max: 0.0,
                    },
                ) else {
                    mu *= 10.0;
                    continue;
                };
                let step = ch.solve_vec(&g);
                let cand: Vec<f64> = b.iter().zip(&step).map(|(x, s)| x - s).collect();
                if let Ok((fc, gc, lc)) = self.eval(&cand)
                    && fc <= f
                {
                    let tiny = step.iter().fold(0.0f64, |a, v| a.max(v.abs())) < 1e-13;
                    b = cand;
                    f = fc;
                    g = gc;
                    ll = lc;
                    mu = (mu * 0.1).max(1e-12);
                    improved = !tiny;
                    break;
                }
                mu *= 10.0;
            }
            if !improved {
                break;
            }
        }
        Ok((b, f, g, ll, iters))
    }
}

/// Estimate `B` by Eq. 151 with its Laplace covariance. `mean` (`t × n`): the public
/// posterior means of `v_j` at the `t` privately rated options; `cov[j]` (`t × t`): agent
/// `j`'s public posterior covariance there; `u` (`t × n`): the private ratings; `noise[i]`:
/// agent `i`'s rating noise variance; `warm`: a previous `B̂` to start from (the identity and
/// the least-squares fit are always tried too).
pub fn estimate_b(
    mean: MatRef<'_, f64>,
    cov: &[Mat<f64>],
    u: MatRef<'_, f64>,
    noise: &[f64],
    cfg: &SocialGpConfig,
    warm: Option<MatRef<'_, f64>>,
) -> Result<BFit> {
    let (t, n) = (u.nrows(), u.ncols());
    if t == 0 {
        return Err(Error::invalid("u", "needs at least one private rating"));
    }
    if mean.nrows() != t || mean.ncols() != n {
        return Err(Error::dim("mean", t, mean.nrows()));
    }
    if cov.len() != n || cov.iter().any(|c| c.nrows() != t || c.ncols() != t) {
        return Err(Error::dim("cov", n, cov.len()));
    }
    if noise.len() != n {
        return Err(Error::dim("noise", n, noise.len()));
    }
    if !(cfg.b_prior_sd.is_finite() && cfg.b_prior_sd > 0.0) {
        return Err(Error::invalid(
            "b_prior_sd",
            format!("must be finite and > 0, got {}", cfg.b_prior_sd),
        ));
    }
    let mut fit = BFit {
        b: Mat::zeros(n, n),
        var: Mat::zeros(n, n),
        row_cov: Vec::with_capacity(n),
        log_lik: 0.0,
        grad_norm: 0.0,
        iters: 0,
        jitter: 0.0,
    };
    // Least squares M b ≈ U_i with a small ridge, as one more start.
    let mtm = Mat::from_fn(n, n, |a, c| {
        (0..t).map(|p| mean[(p, a)] * mean[(p, c)]).sum::<f64>() + if a == c { 1e-6 } else { 0.0 }
    });
    let ls = Cholesky::new(mtm.as_ref()).ok();
    for i in 0..n {
        let row = Row {
            m: mean,
            c: cov,
            u: (0..t).map(|p| u[(p, i)]).collect(),
            noise: noise[i].max(cfg.floor),
            i,
            tau2: cfg.b_prior_sd * cfg.b_prior_sd,
        };
        let mut starts = vec![
            (0..n)
                .map(|j| f64::from(u8::from(j == i)))
                .collect::<Vec<_>>(),
        ];
        if let Some(w) = warm
            && w.nrows() == n
            && w.ncols() == n
        {
            starts.push((0..n).map(|j| w[(i, j)]).collect());
        }
        if let Some(ls) = &ls {
            let rhs: Vec<f64> = (0..n)
                .map(|a| (0..t).map(|p| mean[(p, a)] * row.u[p]).sum())
                .collect();
            starts.push(ls.solve_vec(&rhs));
        }
        let mut best: Option<RowMin> = None;
        for s in starts {
            if s.iter().any(|v| !v.is_finite()) {
                continue;
            }
            let r = row.minimize(s)?;
            fit.iters += r.4;
            if best.as_ref().is_none_or(|b| r.1 < b.1) {
                best = Some(r);
            }
        }
        let (b, _, g, ll, _) = best.expect("the identity start is finite");
        let h = row.hessian(&b)?;
        let ch = Cholesky::new(h.as_ref())?;
        fit.jitter = fit.jitter.max(ch.jitter());
        let cov = ch.inverse();
        for j in 0..n {
            fit.var[(i, j)] = cov[(j, j)].max(0.0);
            fit.b[(i, j)] = b[j];
        }
        fit.row_cov.push(cov);
        fit.log_lik += ll / n as f64;
        fit.grad_norm = g.iter().fold(fit.grad_norm, |a, v| a.max(v.abs()));
    }
    Ok(fit)
}

/// Predicted private utilities at some options.
#[derive(Debug, Clone, PartialEq)]
pub struct UPrediction {
    /// `μ^{u(i)}(x) = B̂(i, :) m^v(x)` (`m × n`).
    pub mean: Mat<f64>,
    /// The variance due to `B`'s uncertainty, `Σ_j σ²_bij (C_j + m_j²)`.
    pub var_b: Mat<f64>,
    /// The variance due to `v`'s uncertainty, `Σ_j b̂_ij² C_j`.
    pub var_v: Mat<f64>,
}

impl UPrediction {
    /// Goodman's total variance (`var_b + var_v`).
    pub fn var(&self, k: usize, i: usize) -> f64 {
        self.var_b[(k, i)] + self.var_v[(k, i)]
    }
}

/// The GP variant's model: the public multi-task GP and the Laplace posterior of `B`.
#[derive(Debug, Clone)]
pub struct SocialGp {
    public: Icm,
    b: BFit,
    cfg: SocialGpConfig,
}

/// `Â = B⁻¹ − λI` with rows clipped at `δ` and renormalized (row-stochastic, entries ≥ δ
/// up to the renormalization).
pub fn graph_of(b: MatRef<'_, f64>, lambda: f64, delta: f64) -> Result<Mat<f64>> {
    let n = b.nrows();
    let lu = b.partial_piv_lu();
    let inv = lu.inverse();
    let mut a = Mat::from_fn(n, n, |i, j| inv[(i, j)] - if i == j { lambda } else { 0.0 });
    for i in 0..n {
        let mut s = 0.0;
        for j in 0..n {
            let v = a[(i, j)];
            a[(i, j)] = if v.is_finite() { v.max(delta) } else { delta };
            s += a[(i, j)];
        }
        for j in 0..n {
            a[(i, j)] /= s;
        }
    }
    Ok(a)
}

impl SocialGp {
    /// Fit to public ratings `v` at `x_pub` (`N × n`) and private ratings `u` at `x_priv`
    /// (`M × n`, possibly `M = 0`). `kernels` are the candidate input kernels of the
    /// hyperparameter fit ([`profile_fit`]); `warm` a previous `B̂`. The private ratings'
    /// noise is taken to be each agent's fitted public noise.
    pub fn fit(
        x_pub: Mat<f64>,
        v: MatRef<'_, f64>,
        x_priv: MatRef<'_, f64>,
        u: MatRef<'_, f64>,
        kernels: &[Box<dyn Kernel>],
        cfg: &SocialGpConfig,
        warm: Option<MatRef<'_, f64>>,
    ) -> Result<SocialGp> {
        let n = v.ncols();
        if u.ncols() != n {
            return Err(Error::dim("u columns", n, u.ncols()));
        }
        if u.nrows() != x_priv.nrows() {
            return Err(Error::dim("u rows", x_priv.nrows(), u.nrows()));
        }
        let hyper = profile_fit(x_pub.as_ref(), v, kernels, cfg.floor)?;
        let kernel = kernels[hyper.kernel].clone();
        let s: Vec<f64> = hyper.outputscale.iter().map(|v| v.sqrt()).collect();
        let mut b = match warm {
            Some(w) if w.nrows() == n && w.ncols() == n => w.to_owned(),
            _ => Mat::identity(n, n),
        };
        let mut fit = None;
        // Two passes: the task covariance uses the current B̂, which the private ratings then
        // re-estimate.
        for _ in 0..2 {
            let a = graph_of(b.as_ref(), cfg.lambda, cfg.delta)?;
            let aat = &a * a.transpose();
            let task = Mat::from_fn(n, n, |i, j| {
                s[i] * s[j] * aat[(i, j)] / (aat[(i, i)] * aat[(j, j)]).sqrt()
            });
            let public = Icm::new(
                x_pub.clone(),
                v,
                kernel.clone(),
                task,
                &hyper.noise,
                &hyper.mean,
            )?;
            let bf = if x_priv.nrows() == 0 {
                BFit {
                    b: Mat::identity(n, n),
                    var: Mat::from_fn(n, n, |_, _| cfg.b_prior_sd * cfg.b_prior_sd),
                    row_cov: vec![
                        Mat::from_fn(n, n, |a, c| if a == c {
                            cfg.b_prior_sd * cfg.b_prior_sd
                        } else {
                            0.0
                        });
                        n
                    ],
                    log_lik: 0.0,
                    grad_norm: 0.0,
                    iters: 0,
                    jitter: 0.0,
                }
            } else {
                let (m, _) = public.predict(x_priv)?;
                let covs: Vec<Mat<f64>> = (0..n)
                    .map(|j| public.task_cov_at(x_priv, j))
                    .collect::<Result<_>>()?;
                estimate_b(m.as_ref(), &covs, u, &hyper.noise, cfg, Some(b.as_ref()))?
            };
            b = bf.b.clone();
            fit = Some(SocialGp {
                public,
                b: bf,
                cfg: cfg.clone(),
            });
            if x_priv.nrows() == 0 {
                break;
            }
        }
        Ok(fit.expect("one pass ran"))
    }

    /// The Laplace posterior of `B`.
    pub fn b(&self) -> &BFit {
        &self.b
    }

    /// The public multi-task GP.
    pub fn public(&self) -> &Icm {
        &self.public
    }

    /// The graph estimate `Â` ([`graph_of`] `B̂`).
    pub fn graph(&self) -> Result<Mat<f64>> {
        graph_of(self.b.b.as_ref(), self.cfg.lambda, self.cfg.delta)
    }

    /// Private utilities at `xs` (Corollary F.2). The variance generalizes Goodman's
    /// formula to the correlated Laplace posterior of each row `b_i ~ N(b̂_i, Σ_i)`,
    /// independent of `v(x, :) ~ N(m, diag C)`:
    /// `Var[b_i · v] = Σ_j b̂_ij² C_j + mᵀ Σ_i m + Σ_j Σ_i[j, j] C_j`, which is Goodman's
    /// `Σ_j [(σ²_bij + b̂_ij²)(C_j + m_j²) − b̂_ij² m_j²]` when `Σ_i` is diagonal (the
    /// corollary's independence assumption; [`SocialGp::predict_independent`]). With the
    /// private ratings concentrated at a few options, `b_i` is pinned down only along their
    /// public means; treating its entries as independent then overstates the uncertainty
    /// exactly where the data are (measured on the toy: the `B` part of the width stayed at
    /// 0.9 prior standard deviations after 20 private ratings at one option).
    pub fn predict(&self, xs: MatRef<'_, f64>) -> Result<UPrediction> {
        self.predict_with(xs, false)
    }

    /// [`SocialGp::predict`] with the paper's independence assumption (diagonal `Σ_i`):
    /// Goodman's variance exactly as Corollary F.2 derives it.
    pub fn predict_independent(&self, xs: MatRef<'_, f64>) -> Result<UPrediction> {
        self.predict_with(xs, true)
    }

    fn predict_with(&self, xs: MatRef<'_, f64>, independent: bool) -> Result<UPrediction> {
        let (mv, cv) = self.public.predict(xs)?;
        let (m, n) = (xs.nrows(), self.b.b.nrows());
        let b = &self.b.b;
        let cov = |i: usize, a: usize, c: usize| -> f64 {
            if independent && a != c {
                0.0
            } else {
                self.b.row_cov[i][(a, c)]
            }
        };
        Ok(UPrediction {
            mean: Mat::from_fn(m, n, |k, i| (0..n).map(|j| b[(i, j)] * mv[(k, j)]).sum()),
            var_b: Mat::from_fn(m, n, |k, i| {
                let mut v = 0.0;
                for a in 0..n {
                    v += cov(i, a, a) * cv[(k, a)];
                    for c in 0..n {
                        v += mv[(k, a)] * cov(i, a, c) * mv[(k, c)];
                    }
                }
                v.max(0.0)
            }),
            var_v: Mat::from_fn(m, n, |k, i| {
                (0..n).map(|j| b[(i, j)] * b[(i, j)] * cv[(k, j)]).sum()
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Stationary, StationaryKind};
    use agora_math::fd::{Tol, check_gradient};

    fn rbf(l: f64) -> Box<dyn Kernel> {
        let mut k = Stationary::ard(StationaryKind::Rbf, 1, l);
        k.set_params(&[l.ln()]).unwrap();
        Box::new(k)
    }

    fn utilities(x: f64) -> [f64; 2] {
        [
            (6.0 * x).sin() + 0.5,
            (-(x - 0.3) * (x - 0.3) / 0.05).exp() * 2.0 - 0.5,
        ]
    }

    /// Ratings of two agents with graph `a` (public) and without (private), noise 0.05.
    fn data(a: [[f64; 2]; 2], n_pub: usize, n_priv: usize, seed: u64) -> [Mat<f64>; 4] {
        let mut rng = agora_math::rng::stream(seed, &[9]);
        let mut noise = || {
            0.05 * rand_distr::Distribution::<f64>::sample(&rand_distr::StandardNormal, &mut rng)
        };
        let xp = Mat::from_fn(n_pub, 1, |i, _| (i as f64 + 0.5) / n_pub as f64);
        let v = Mat::from_fn(n_pub, 2, |p, i| {
            let u = utilities(xp[(p, 0)]);
            a[i][0] * u[0] + a[i][1] * u[1]
        });
        let v = Mat::from_fn(n_pub, 2, |p, i| v[(p, i)] + noise());
        let xu = Mat::from_fn(n_priv, 1, |i, _| (i as f64 + 0.25) / n_priv as f64);
        let u = Mat::from_fn(n_priv, 2, |p, i| utilities(xu[(p, 0)])[i] + noise());
        [xp, v, xu, u]
    }

    #[test]
    fn gradient_of_eq151_matches_central_differences() {
        let [xp, v, xu, u] = data([[0.8, 0.2], [0.4, 0.6]], 12, 5, 1);
        let icm = Icm::new(
            xp,
            v.as_ref(),
            rbf(0.2),
            Mat::identity(2, 2),
            &[0.0025, 0.0025],
            &[0.0, 0.0],
        )
        .unwrap();
        let (m, _) = icm.predict(xu.as_ref()).unwrap();
        let covs: Vec<Mat<f64>> = (0..2)
            .map(|j| icm.task_cov_at(xu.as_ref(), j).unwrap())
            .collect();
        let row = Row {
            m: m.as_ref(),
            c: &covs,
            u: (0..5).map(|p| u[(p, 1)]).collect(),
            noise: 0.0025,
            i: 1,
            tau2: 1.0,
        };
        let b = [0.7, 1.9];
        let (_, g, _) = row.eval(&b).unwrap();
        let f = |v: &[f64]| row.eval(v).unwrap().0;
        check_gradient(f, &b, 1e-6, &g, Tol::ScaledByFd(1e-5), "row objective");
    }

    #[test]
    fn b_recovers_the_inverse_graph_and_shrinks_with_data() {
        let a = [[0.8, 0.2], [0.4, 0.6]];
        let truth = Mat::from_fn(2, 2, |i, j| a[i][j]);
        let kernels = vec![rbf(0.1), rbf(0.2), rbf(0.4)];
        let cfg = SocialGpConfig::default();
        let mut errs = Vec::new();
        let mut spread = Vec::new();
        for n_priv in [4, 24] {
            let [xp, v, xu, u] = data(a, 30, n_priv, 2);
            let m = SocialGp::fit(
                xp,
                v.as_ref(),
                xu.as_ref(),
                u.as_ref(),
                &kernels,
                &cfg,
                None,
            )
            .unwrap();
            assert!(m.b().grad_norm < 1e-6, "{:?}", m.b());
            let g = m.graph().unwrap();
            let e: f64 = (0..2)
                .flat_map(|i| (0..2).map(move |j| (i, j)))
                .map(|(i, j)| (g[(i, j)] - truth[(i, j)]).powi(2))
                .sum::<f64>()
                .sqrt();
            errs.push(e);
            spread.push((0..2).map(|i| m.b().var[(i, i)]).sum::<f64>());
            // u = B v: the mean at fresh points tracks the true utilities.
            let xs = Mat::from_fn(7, 1, |i, _| 0.1 + 0.13 * i as f64);
            let p = m.predict(xs.as_ref()).unwrap();
            for k in 0..7 {
                let tru = utilities(xs[(k, 0)]);
                for (i, tru_i) in tru.iter().enumerate() {
                    let sd = p.var(k, i).sqrt();
                    assert!(p.var_b[(k, i)] >= 0.0 && p.var_v[(k, i)] >= 0.0);
                    if n_priv == 24 {
                        assert!((p.mean[(k, i)] - tru_i).abs() < 0.15 + 3.0 * sd, "{k} {i}");
                    }
                }
                // Under the independence assumption the total is Goodman's formula.
                let pi = m.predict_independent(xs.subrows(k, 1)).unwrap();
                let (mv, cv) = m.public().predict(xs.subrows(k, 1)).unwrap();
                for i in 0..2 {
                    let bh: Vec<f64> = (0..2).map(|j| m.b().b[(i, j)]).collect();
                    let bv: Vec<f64> = (0..2).map(|j| m.b().var[(i, j)]).collect();
                    let mm: Vec<f64> = (0..2).map(|j| mv[(0, j)]).collect();
                    let cc: Vec<f64> = (0..2).map(|j| cv[(0, j)]).collect();
                    let gv = crate::multitask::goodman_variance(&bh, &bv, &mm, &cc).unwrap();
                    assert!((gv - pi.var(0, i)).abs() < 1e-10 * (1.0 + gv));
                    // The correlated form: mᵀ Σ_i m + Σ_j Σ_i[j, j] C_j + Σ_j b̂_ij² C_j,
                    // by a Monte Carlo check of Var[b · v].
                    let sc = &m.b().row_cov[i];
                    let l = Cholesky::new(sc.as_ref()).unwrap();
                    let mut rng = agora_math::rng::stream(5, &[k as u64, i as u64]);
                    let draws = 200_000;
                    let (mut s1, mut s2) = (0.0, 0.0);
                    for _ in 0..draws {
                        let z: Vec<f64> = (0..4)
                            .map(|_| {
                                rand_distr::Distribution::<f64>::sample(
                                    &rand_distr::StandardNormal,
                                    &mut rng,
                                )
                            })
                            .collect();
                        let bs: Vec<f64> = (0..2)
                            .map(|a| bh[a] + (0..=a).map(|c| l.l()[(a, c)] * z[c]).sum::<f64>())
                            .collect();
                        let val: f64 = (0..2)
                            .map(|j| bs[j] * (mm[j] + cc[j].sqrt() * z[2 + j]))
                            .sum();
                        s1 += val;
                        s2 += val * val;
                    }
                    let mc = s2 / draws as f64 - (s1 / draws as f64).powi(2);
                    assert!(
                        (mc - p.var(k, i)).abs() < 0.02 * p.var(k, i) + 1e-6,
                        "{mc} vs {}",
                        p.var(k, i)
                    );
                }
            }
        }
        assert!(errs[1] < 0.1, "{errs:?}");
        assert!(spread[1] < spread[0], "{spread:?}");
    }

    #[test]
    fn bad_input_is_named() {
        let m = Mat::<f64>::zeros(3, 2);
        let c = vec![Mat::<f64>::identity(3, 3); 2];
        let u = Mat::<f64>::zeros(3, 2);
        let cfg = SocialGpConfig {
            b_prior_sd: 0.0,
            ..Default::default()
        };
        let e = estimate_b(m.as_ref(), &c, u.as_ref(), &[0.1, 0.1], &cfg, None).unwrap_err();
        assert!(e.to_string().contains("b_prior_sd"), "{e}");
        let e = estimate_b(
            m.as_ref(),
            &c[..1],
            u.as_ref(),
            &[0.1, 0.1],
            &SocialGpConfig::default(),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("cov"), "{e}");
    }
}
