//! A preference GP over duels with input-dependent noise, with three inference methods
//! behind one posterior (heteroscedastic PBO, Sinaga et al. 2024, §3.3 and App. A–B).
//!
//! Duel `k` says `w_k ≻ l_k`: `f(w_k) + ε(w_k) > f(l_k) + ε(l_k)` with
//! `ε(x) ~ N(0, σ²(x))`, so with `Δ_k = f(w_k) − f(l_k)` and `s²_k = σ²(w_k) + σ²(l_k)`
//! the likelihood is `Φ(Δ_k / s_k)` (Eq. S1). The prior of the differences is
//! `Δ ~ N(0, C)`, `C = D K Dᵀ` (`C_kj = k(w_k,w_j) − k(w_k,l_j) − k(l_k,w_j) + k(l_k,l_j)`),
//! and `Cov(f(x), Δ_k) = c(x)_k = k(x, w_k) − k(x, l_k)`.
//!
//! Every method below ends in the same Gaussian form: site precisions `τ` and a vector `α`
//! with
//!
//! - mean `μ(x) = c(x)ᵀ α`,
//! - latent variance `σ²(x) = k(x, x) − ‖L⁻¹ (√τ ∘ c(x))‖²`, `L Lᵀ = B = I + √τ C √τ`,
//!
//! so `C` is never inverted (it is singular whenever duels repeat or chain through the
//! previous winner) and the predictive variance is the latent, noise-free one (note §9.11).
//!
//! - **Hallucination believer** (Takeno et al. 2023; the paper's default): one Gibbs draw `ṽ`
//!   of `v = −Δ + ε_l − ε_w ~ N(0, C + diag(s²))` truncated to `v < 0`, then exact GP
//!   regression of `Δ` on `−ṽ` with noise `s²` (Eqs. S11–S15): `τ = 1/s²`,
//!   `α = √τ B⁻¹ √τ (−ṽ)`.
//! - **Laplace**: Newton's method on `Δ` (Rasmussen & Williams Alg. 3.1 with `K → C`) with a
//!   backtracking line search; `τ = λ(Δ̂)`, `α = ∇ log p(Δ̂)`. Its log evidence
//!   `−½ aᵀΔ̂ + Σ log Φ(Δ̂_k/s_k) − Σ log L_ii` is the Chu–Ghahramani
//!   `S(f̂) + ½ log|I + LΛ|` of the note's corrected Eq. S7 (\[ERRATUM\] §2.6), with its exact
//!   gradient in the kernel hyperparameters (R&W Alg. 5.1 with `K → C`).
//! - **Expectation propagation** (Minka 2001; R&W §3.6 with `K → C`): Gaussian sites on each
//!   `Δ_k`, parallel updates with damping, until the site parameters change by less than a
//!   tolerance.

use crate::anchor::NoiseModel;
use crate::kernel::Kernel;
use crate::preference::{PrefLikelihood, terms};
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use agora_math::optim::{self, LbfgsbOptions};
use agora_math::special::{log_ndtr, log_norm_pdf};
use agora_math::truncnorm::tmvn_negative_gibbs;
use faer::{Mat, MatRef};
use rand::Rng;

/// Settings of expectation propagation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpOptions {
    /// Damping `δ` of the parallel site updates: new = (1 − δ)·old + δ·update.
    pub damping: f64,
    /// Maximum number of sweeps.
    pub max_sweeps: usize,
    /// Convergence: largest change of any site's natural parameters.
    pub tol: f64,
}

impl Default for EpOptions {
    fn default() -> Self {
        EpOptions {
            damping: 0.5,
            max_sweeps: 500,
            tol: 1e-8,
        }
    }
}

/// How the posterior over the latent utility is approximated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DuelInference {
    /// One Gibbs hallucination after `sweeps` sweeps (Takeno et al.: 1000), then exact GP
    /// prediction.
    Hallucination {
        /// Gibbs sweeps from `v = 0`.
        sweeps: usize,
    },
    /// Laplace approximation.
    Laplace,
    /// Expectation propagation.
    Ep(EpOptions),
}

impl DuelInference {
    /// Parse `hb`, `laplace` or `ep`.
    pub fn parse(s: &str) -> Result<DuelInference> {
        match s {
            "hb" | "hallucination" => Ok(DuelInference::Hallucination { sweeps: 1000 }),
            "laplace" => Ok(DuelInference::Laplace),
            "ep" => Ok(DuelInference::Ep(EpOptions::default())),
            _ => Err(Error::invalid(
                "inference",
                format!("unknown inference `{s}`; allowed: hb, laplace, ep"),
            )),
        }
    }

    /// Short name.
    pub fn name(&self) -> &'static str {
        match self {
            DuelInference::Hallucination { .. } => "hb",
            DuelInference::Laplace => "laplace",
            DuelInference::Ep(_) => "ep",
        }
    }
}

/// Duels `winners[k] ≻ losers[k]` (rows in the unit cube).
#[derive(Debug, Clone)]
pub struct Duels {
    winners: Mat<f64>,
    losers: Mat<f64>,
    stacked: Mat<f64>,
}

impl Duels {
    /// Check shapes and values (errors name `winners[i][j]` / `losers[i][j]`).
    pub fn new(winners: Mat<f64>, losers: Mat<f64>) -> Result<Duels> {
        let d = winners.ncols();
        crate::check_mat("winners", winners.as_ref(), d)?;
        crate::check_mat("losers", losers.as_ref(), d)?;
        if winners.nrows() != losers.nrows() {
            return Err(Error::dim("losers", winners.nrows(), losers.nrows()));
        }
        if winners.nrows() == 0 {
            return Err(Error::invalid("duels", "needs at least one duel"));
        }
        let m = winners.nrows();
        let stacked = Mat::from_fn(2 * m, d, |i, j| {
            if i < m {
                winners[(i, j)]
            } else {
                losers[(i - m, j)]
            }
        });
        Ok(Duels {
            winners,
            losers,
            stacked,
        })
    }

    /// Number of duels.
    pub fn len(&self) -> usize {
        self.winners.nrows()
    }

    /// Always false (a duel set is never empty).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Input dimension.
    pub fn dim(&self) -> usize {
        self.winners.ncols()
    }

    /// Winners.
    pub fn winners(&self) -> MatRef<'_, f64> {
        self.winners.as_ref()
    }

    /// Losers.
    pub fn losers(&self) -> MatRef<'_, f64> {
        self.losers.as_ref()
    }

    /// `s²_k = σ²(w_k) + σ²(l_k)` under `noise`.
    pub fn noise_sums(&self, noise: &NoiseModel) -> Vec<f64> {
        (0..self.len())
            .map(|k| {
                noise.variance(&row(self.winners.as_ref(), k))
                    + noise.variance(&row(self.losers.as_ref(), k))
            })
            .collect()
    }

    /// `C = D K Dᵀ` from the Gram matrix over the stacked points.
    fn diff_cov(&self, kernel: &dyn Kernel) -> Mat<f64> {
        let m = self.len();
        let g = kernel.gram(self.stacked.as_ref());
        Mat::from_fn(m, m, |k, j| {
            g[(k, j)] - g[(k, m + j)] - g[(m + k, j)] + g[(m + k, m + j)]
        })
    }

    /// `Σ_kj W_kj ∂C_kj/∂θ` for every kernel hyperparameter (`W` symmetric `m × m`).
    fn diff_grad_contract(&self, kernel: &dyn Kernel, w: &Mat<f64>) -> Vec<f64> {
        let m = self.len();
        // Σ W ∘ ∂(D K Dᵀ) = Σ (Dᵀ W D) ∘ ∂K with D = [I, −I].
        let g = Mat::from_fn(2 * m, 2 * m, |i, j| {
            let s = if (i < m) == (j < m) { 1.0 } else { -1.0 };
            s * w[(i % m, j % m)]
        });
        kernel.grad_contract(self.stacked.as_ref(), g.as_ref())
    }

    /// `c(x)_k = k(x, w_k) − k(x, l_k)` for every row of `xs` (`nx × m`).
    fn cross(&self, kernel: &dyn Kernel, xs: MatRef<'_, f64>) -> Mat<f64> {
        let kw = kernel.cross(xs, self.winners.as_ref());
        let kl = kernel.cross(xs, self.losers.as_ref());
        kw - kl
    }
}

fn row(x: MatRef<'_, f64>, i: usize) -> Vec<f64> {
    (0..x.ncols()).map(|j| x[(i, j)]).collect()
}

fn probit(delta: f64, s2: f64) -> crate::preference::Terms {
    terms(PrefLikelihood::Probit, delta, (0.5 * s2).sqrt())
}

/// `B = I + √τ C √τ`, factored.
fn factor_b(c: &Mat<f64>, sqrt_tau: &[f64]) -> Result<Cholesky> {
    let m = c.nrows();
    let b = Mat::from_fn(m, m, |i, j| {
        sqrt_tau[i] * c[(i, j)] * sqrt_tau[j] + if i == j { 1.0 } else { 0.0 }
    });
    Cholesky::new(b.as_ref())
}

fn matvec(a: &Mat<f64>, x: &[f64]) -> Vec<f64> {
    (0..a.nrows())
        .map(|i| (0..a.ncols()).map(|j| a[(i, j)] * x[j]).sum())
        .collect()
}

/// `√τ ∘ B⁻¹ (√τ ∘ x)`.
fn r_apply(chol: &Cholesky, sqrt_tau: &[f64], x: &[f64]) -> Vec<f64> {
    let y: Vec<f64> = x.iter().zip(sqrt_tau).map(|(a, s)| a * s).collect();
    chol.solve_vec(&y)
        .into_iter()
        .zip(sqrt_tau)
        .map(|(a, s)| a * s)
        .collect()
}

/// Laplace mode of the differences: `(a, Δ̂, log evidence, Newton iterations, B factor, √λ)`.
struct LaplaceMode {
    converged: bool,
    a: Vec<f64>,
    delta: Vec<f64>,
    log_z: f64,
    iters: usize,
    chol: Cholesky,
    sqrt_lam: Vec<f64>,
}

fn laplace_mode(c: &Mat<f64>, s2: &[f64], warm: Option<&[f64]>) -> Result<LaplaceMode> {
    let m = c.nrows();
    let psi = |a: &[f64], delta: &[f64]| -> f64 {
        let quad: f64 = a.iter().zip(delta).map(|(x, y)| x * y).sum();
        -0.5 * quad
            + delta
                .iter()
                .zip(s2)
                .map(|(d, s)| probit(*d, *s).lp)
                .sum::<f64>()
    };
    // Start from the warm `a` if it is better than the prior mean.
    let mut a = vec![0.0; m];
    let mut delta = vec![0.0; m];
    let mut obj = psi(&a, &delta);
    if let Some(w) = warm.filter(|w| w.len() == m) {
        let dw = matvec(c, w);
        let ow = psi(w, &dw);
        if ow > obj {
            (a, delta, obj) = (w.to_vec(), dw, ow);
        }
    }
    let mut iters = 0;
    let mut converged = false;
    for _ in 0..100 {
        iters += 1;
        let t: Vec<_> = delta.iter().zip(s2).map(|(d, s)| probit(*d, *s)).collect();
        let sqrt_lam: Vec<f64> = t.iter().map(|t| t.lam.max(0.0).sqrt()).collect();
        let chol = factor_b(c, &sqrt_lam)?;
        let b: Vec<f64> = (0..m).map(|k| t[k].lam * delta[k] + t[k].r).collect();
        let cb = matvec(c, &b);
        let corr = r_apply(&chol, &sqrt_lam, &cb);
        let a_new: Vec<f64> = b.iter().zip(&corr).map(|(x, y)| x - y).collect();
        // Backtracking on the step in `a` (the objective is concave in Δ).
        let mut step = 1.0;
        let mut accepted = None;
        for _ in 0..30 {
            let a_try: Vec<f64> = a
                .iter()
                .zip(&a_new)
                .map(|(o, n)| o + step * (n - o))
                .collect();
            let d_try = matvec(c, &a_try);
            let o_try = psi(&a_try, &d_try);
            if o_try >= obj - 1e-12 * obj.abs().max(1.0) {
                accepted = Some((a_try, d_try, o_try));
                break;
            }
            step *= 0.5;
        }
        let Some((a_t, d_t, o_t)) = accepted else {
            break;
        };
        let gain = o_t - obj;
        (a, delta, obj) = (a_t, d_t, o_t);
        if gain.abs() < 1e-10 * obj.abs().max(1.0) {
            converged = true;
            break;
        }
    }
    let t: Vec<_> = delta.iter().zip(s2).map(|(d, s)| probit(*d, *s)).collect();
    let sqrt_lam: Vec<f64> = t.iter().map(|t| t.lam.max(0.0).sqrt()).collect();
    let chol = factor_b(c, &sqrt_lam)?;
    let half_log_det = 0.5 * chol.log_det();
    let quad: f64 = a.iter().zip(&delta).map(|(x, y)| x * y).sum();
    let log_z = -0.5 * quad + t.iter().map(|t| t.lp_evidence).sum::<f64>() - half_log_det;
    if !log_z.is_finite() {
        return Err(Error::Numerical(
            "Laplace evidence of the duel model is not finite".into(),
        ));
    }
    Ok(LaplaceMode {
        converged,
        a,
        delta,
        log_z,
        iters,
        chol,
        sqrt_lam,
    })
}

/// Laplace log evidence of `duels` under `kernel` and noise sums `s2`, with its gradient in
/// the kernel's log hyperparameters, and the mode's `a` (for warm starts).
pub fn laplace_evidence(
    kernel: &dyn Kernel,
    duels: &Duels,
    s2: &[f64],
    warm: Option<&[f64]>,
) -> Result<(f64, Vec<f64>, Vec<f64>)> {
    let c = duels.diff_cov(kernel);
    let mode = laplace_mode(&c, s2, warm)?;
    let m = duels.len();
    // R = √λ B⁻¹ √λ, posterior covariance of Δ: C − C R C.
    let mut r = Mat::zeros(m, m);
    for j in 0..m {
        let mut e = vec![0.0; m];
        e[j] = 1.0;
        let col = r_apply(&mode.chol, &mode.sqrt_lam, &e);
        for i in 0..m {
            r[(i, j)] = col[i];
        }
    }
    let cr = &c * &r;
    let post_diag: Vec<f64> = (0..m)
        .map(|k| c[(k, k)] - (0..m).map(|j| cr[(k, j)] * c[(j, k)]).sum::<f64>())
        .collect();
    // s2 of R&W Alg. 5.1: ½ diag(Σ_post) ∘ ∂³log p = −½ diag(Σ_post) ∘ dλ/dΔ.
    let sv: Vec<f64> = (0..m)
        .map(|k| -0.5 * post_diag[k] * probit(mode.delta[k], s2[k]).dlam)
        .collect();
    // u = (I − R C) sv.
    let csv = matvec(&c, &sv);
    let rcsv = matvec(&r, &csv);
    let u: Vec<f64> = sv.iter().zip(&rcsv).map(|(a, b)| a - b).collect();
    let a = &mode.a;
    let w = Mat::from_fn(m, m, |i, j| {
        0.5 * a[i] * a[j] - 0.5 * r[(i, j)] + 0.5 * (u[i] * a[j] + a[i] * u[j])
    });
    let grad = duels.diff_grad_contract(kernel, &w);
    Ok((mode.log_z, grad, mode.a))
}

/// Settings of the lengthscale (and optionally bandwidth) fit by Laplace evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct DuelFit {
    /// Lengthscale bounds (unit-cube lengths).
    pub lengthscale_bounds: (f64, f64),
    /// Sobol starts in log-lengthscale space besides the previous value.
    pub starts: usize,
    /// Also fit the KDE bandwidth by the evidence (note §2.4b), within
    /// [`crate::anchor::BANDWIDTH_RANGE`].
    pub fit_bandwidth: bool,
    /// L-BFGS-B settings.
    pub lbfgs: LbfgsbOptions,
}

impl Default for DuelFit {
    /// Takeno et al.'s bounds shifted down to 0.05 (Sine1D's period is 0.5 on the unit
    /// interval), 4 Sobol starts plus the previous value.
    fn default() -> Self {
        DuelFit {
            lengthscale_bounds: (0.05, 0.5),
            starts: 4,
            fit_bandwidth: false,
            lbfgs: LbfgsbOptions {
                max_iter: 100,
                ..LbfgsbOptions::default()
            },
        }
    }
}

/// Fit the kernel's log hyperparameters (its lengthscales; the variance is fixed, as the
/// paper learns `θ = {λ}` only) and, when asked, the KDE bandwidth, by maximizing the
/// Laplace evidence with multistart L-BFGS-B. The bandwidth derivative of the evidence is
/// a central finite difference in `log h` (the lengthscale gradient is exact). Returns the
/// fitted kernel, noise model and log evidence.
pub fn fit_duel_hypers(
    kernel: &dyn Kernel,
    duels: &Duels,
    noise: &NoiseModel,
    cfg: &DuelFit,
    seed: u64,
) -> Result<(Box<dyn Kernel>, NoiseModel, f64)> {
    let nk = kernel.n_params();
    let fit_h = cfg.fit_bandwidth && noise.kde().is_some();
    let (llo, lhi) = (cfg.lengthscale_bounds.0.ln(), cfg.lengthscale_bounds.1.ln());
    let mut bounds = vec![(llo, lhi); nk];
    let (hlo, hhi) = (
        crate::anchor::BANDWIDTH_RANGE.0.ln(),
        crate::anchor::BANDWIDTH_RANGE.1.ln(),
    );
    if fit_h {
        bounds.push((hlo, hhi));
    }
    let s2_fixed = duels.noise_sums(noise);
    let obj = |p: &[f64], g: &mut [f64]| -> Result<f64> {
        let mut k = kernel.box_clone();
        k.set_params(&p[..nk])?;
        let (nz, s2) = if fit_h {
            let nz = noise.with_bandwidth(p[nk].exp())?;
            let s2 = duels.noise_sums(&nz);
            (Some(nz), s2)
        } else {
            (None, s2_fixed.clone())
        };
        let (lz, grad, a) = laplace_evidence(k.as_ref(), duels, &s2, None)?;
        for (gi, v) in g.iter_mut().zip(&grad) {
            *gi = -v;
        }
        if let Some(nz) = nz {
            let eps = 1e-5;
            let ev = |t: f64| -> Result<f64> {
                let s = duels.noise_sums(&nz.with_bandwidth(t.exp())?);
                Ok(laplace_evidence(k.as_ref(), duels, &s, Some(&a))?.0)
            };
            g[nk] = -(ev(p[nk] + eps)? - ev(p[nk] - eps)?) / (2.0 * eps);
        }
        Ok(-lz)
    };
    let mut starts = vec![{
        let mut p: Vec<f64> = kernel.params().iter().map(|v| v.clamp(llo, lhi)).collect();
        if fit_h {
            let h = noise.kde().map(|k| k.bandwidth()).unwrap_or(0.1);
            p.push(h.ln().clamp(hlo, hhi));
        }
        p
    }];
    for s in agora_math::design::sobol(cfg.starts, bounds.len(), seed)? {
        starts.push(
            s.iter()
                .zip(&bounds)
                .map(|(u, (lo, hi))| lo + u * (hi - lo))
                .collect(),
        );
    }
    let minima = optim::multistart(&obj, &starts, &bounds, cfg.lbfgs)?;
    let best = optim::best(&minima).expect("multistart returns at least one minimum");
    let mut k = kernel.box_clone();
    k.set_params(&best.x[..nk])?;
    let nz = if fit_h {
        noise.with_bandwidth(best.x[nk].exp())?
    } else {
        noise.clone()
    };
    Ok((k, nz, -best.f))
}

/// Diagnostics of one posterior construction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DuelInfo {
    /// Newton iterations (Laplace), sweeps (EP) or Gibbs sweeps (HB).
    pub iterations: usize,
    /// Whether the method met its convergence test (always true for HB).
    pub converged: bool,
    /// Jitter the factorization of `B` needed.
    pub jitter: f64,
}

/// The Gaussian posterior of a duel model (see the module docs).
#[derive(Debug, Clone)]
pub struct DuelGp {
    kernel: Box<dyn Kernel>,
    duels: Duels,
    sqrt_tau: Vec<f64>,
    chol: Cholesky,
    alpha: Vec<f64>,
    log_evidence: Option<f64>,
    hallucination: Option<Vec<f64>>,
    info: DuelInfo,
}

impl DuelGp {
    /// The posterior of `duels` under `kernel`, `noise` and `inference`; `rng` drives the
    /// Gibbs hallucination (unused otherwise).
    pub fn new<R: Rng + ?Sized>(
        kernel: Box<dyn Kernel>,
        duels: Duels,
        noise: &NoiseModel,
        inference: DuelInference,
        rng: &mut R,
    ) -> Result<DuelGp> {
        if let Some(nd) = noise.dim().filter(|nd| *nd != duels.dim()) {
            return Err(Error::dim("anchors columns", duels.dim(), nd));
        }
        let s2 = duels.noise_sums(noise);
        let c = duels.diff_cov(kernel.as_ref());
        let m = duels.len();
        let (sqrt_tau, chol, alpha, log_evidence, hallucination, info) = match inference {
            DuelInference::Hallucination { sweeps } => {
                let mut sv = c.clone();
                for k in 0..m {
                    sv[(k, k)] += s2[k];
                }
                let v = tmvn_negative_gibbs(sv.as_ref(), None, sweeps.max(1), rng)?;
                let sqrt_tau: Vec<f64> = s2.iter().map(|s| 1.0 / s.sqrt()).collect();
                let chol = factor_b(&c, &sqrt_tau)?;
                let y: Vec<f64> = v.iter().map(|x| -x).collect();
                let alpha = r_apply(&chol, &sqrt_tau, &y);
                let info = DuelInfo {
                    iterations: sweeps,
                    converged: true,
                    jitter: chol.jitter(),
                };
                (sqrt_tau, chol, alpha, None, Some(v), info)
            }
            DuelInference::Laplace => {
                let mode = laplace_mode(&c, &s2, None)?;
                let info = DuelInfo {
                    iterations: mode.iters,
                    converged: mode.converged,
                    jitter: mode.chol.jitter(),
                };
                (
                    mode.sqrt_lam,
                    mode.chol,
                    mode.a,
                    Some(mode.log_z),
                    None,
                    info,
                )
            }
            DuelInference::Ep(opts) => ep(&c, &s2, opts)?,
        };
        Ok(DuelGp {
            kernel,
            duels,
            sqrt_tau,
            chol,
            alpha,
            log_evidence,
            hallucination,
            info,
        })
    }

    /// The duels.
    pub fn duels(&self) -> &Duels {
        &self.duels
    }

    /// The kernel.
    pub fn kernel(&self) -> &dyn Kernel {
        self.kernel.as_ref()
    }

    /// Laplace log evidence (Laplace inference only).
    pub fn log_evidence(&self) -> Option<f64> {
        self.log_evidence
    }

    /// The Gibbs hallucination `ṽ` (HB only).
    pub fn hallucination(&self) -> Option<&[f64]> {
        self.hallucination.as_deref()
    }

    /// Diagnostics.
    pub fn info(&self) -> DuelInfo {
        self.info
    }

    /// Input dimension.
    pub fn dim(&self) -> usize {
        self.duels.dim()
    }

    /// Posterior mean and latent variance at each row of `xs`.
    pub fn predict(&self, xs: MatRef<'_, f64>) -> Result<(Vec<f64>, Vec<f64>)> {
        crate::check_mat("x", xs, self.dim())?;
        let cx = self.duels.cross(self.kernel.as_ref(), xs);
        let kd = self.kernel.diag(xs);
        let m = self.duels.len();
        let mut mean = Vec::with_capacity(xs.nrows());
        let mut var = Vec::with_capacity(xs.nrows());
        for i in 0..xs.nrows() {
            let c: Vec<f64> = (0..m).map(|k| cx[(i, k)]).collect();
            mean.push(c.iter().zip(&self.alpha).map(|(a, b)| a * b).sum());
            let y: Vec<f64> = c.iter().zip(&self.sqrt_tau).map(|(a, s)| a * s).collect();
            let z = self.chol.solve_lower_vec(&y);
            var.push((kd[i] - z.iter().map(|v| v * v).sum::<f64>()).max(1e-12 * kd[i]));
        }
        Ok((mean, var))
    }

    /// `(μ, σ², ∇μ, ∇σ²)` at one point.
    pub fn predict_with_grad(&self, x: &[f64]) -> Result<(f64, f64, Vec<f64>, Vec<f64>)> {
        let d = self.dim();
        if x.len() != d {
            return Err(Error::dim("x", d, x.len()));
        }
        agora_core::check_finite_slice("x", x)?;
        let xm = Mat::from_fn(1, d, |_, j| x[j]);
        let m = self.duels.len();
        let cx = self.duels.cross(self.kernel.as_ref(), xm.as_ref());
        let c: Vec<f64> = (0..m).map(|k| cx[(0, k)]).collect();
        let gw = self.kernel.grad_x(x, self.duels.winners());
        let gl = self.kernel.grad_x(x, self.duels.losers());
        let mean = c.iter().zip(&self.alpha).map(|(a, b)| a * b).sum();
        let u = r_apply(&self.chol, &self.sqrt_tau, &c);
        let var =
            self.kernel.diag(xm.as_ref())[0] - c.iter().zip(&u).map(|(a, b)| a * b).sum::<f64>();
        let dk = self.kernel.diag_grad_x(x);
        let mut gm = vec![0.0; d];
        let mut gv = dk;
        for k in 0..m {
            for j in 0..d {
                let dc = gw[(k, j)] - gl[(k, j)];
                gm[j] += dc * self.alpha[k];
                gv[j] -= 2.0 * dc * u[k];
            }
        }
        Ok((mean, var.max(0.0), gm, gv))
    }
}

/// Parallel EP with damping over the difference sites.
#[allow(clippy::type_complexity)]
fn ep(
    c: &Mat<f64>,
    s2: &[f64],
    opts: EpOptions,
) -> Result<(
    Vec<f64>,
    Cholesky,
    Vec<f64>,
    Option<f64>,
    Option<Vec<f64>>,
    DuelInfo,
)> {
    if !(opts.damping > 0.0 && opts.damping <= 1.0) {
        return Err(Error::invalid(
            "damping",
            format!("EP damping must be in (0, 1], got {}", opts.damping),
        ));
    }
    let m = c.nrows();
    let mut tau = vec![0.0; m];
    let mut nu = vec![0.0; m];
    let mut sweeps = 0;
    let mut converged = false;
    // Posterior marginals of Δ under the current sites.
    let marginals = |tau: &[f64], nu: &[f64]| -> Result<(Vec<f64>, Vec<f64>, Cholesky, Vec<f64>)> {
        let st: Vec<f64> = tau.iter().map(|t| t.max(0.0).sqrt()).collect();
        let chol = factor_b(c, &st)?;
        // μ = (C − C R C) ν, Σ_kk = C_kk − (C R C)_kk.
        let cnu = matvec(c, nu);
        let rc = r_apply(&chol, &st, &cnu);
        let crc = matvec(c, &rc);
        let mu: Vec<f64> = cnu.iter().zip(&crc).map(|(a, b)| a - b).collect();
        let mut var = vec![0.0; m];
        for k in 0..m {
            let ck: Vec<f64> = (0..m).map(|j| c[(j, k)] * st[j]).collect();
            let z = chol.solve_lower_vec(&ck);
            var[k] = c[(k, k)] - z.iter().map(|v| v * v).sum::<f64>();
        }
        Ok((mu, var, chol, st))
    };
    for sweep in 0..opts.max_sweeps {
        sweeps = sweep + 1;
        let (mu, var, _, _) = marginals(&tau, &nu)?;
        let mut change: f64 = 0.0;
        for k in 0..m {
            // A marginal variance lost to cancellation (near-deterministic duels) or an
            // improper cavity: leave this site as it is for this sweep.
            if var[k].is_nan() || var[k] <= 1e-12 * c[(k, k)].max(1e-300) {
                continue;
            }
            let tau_c = 1.0 / var[k] - tau[k];
            let nu_c = mu[k] / var[k] - nu[k];
            if !(tau_c > 0.0 && tau_c.is_finite() && nu_c.is_finite()) {
                continue;
            }
            let (mc, vc) = (nu_c / tau_c, 1.0 / tau_c);
            let sd = (s2[k] + vc).sqrt();
            let z = mc / sd;
            let h = (log_norm_pdf(z) - log_ndtr(z)).exp();
            let mhat = mc + vc * h / sd;
            // Probit moment matching shrinks the variance by the factor 1 − vc·h(z+h)/sd² in
            // (0, 1); keep it there numerically and cap site precisions at 1e12.
            let shrink = (vc * h * (z + h) / (sd * sd)).clamp(0.0, 1.0 - 1e-12);
            let vhat = vc * (1.0 - shrink);
            let tau_new = (1.0 / vhat - tau_c).clamp(0.0, 1e12);
            let nu_new = mhat / vhat - nu_c;
            if !(tau_new.is_finite() && nu_new.is_finite()) {
                continue;
            }
            let t = (1.0 - opts.damping) * tau[k] + opts.damping * tau_new;
            let n = (1.0 - opts.damping) * nu[k] + opts.damping * nu_new;
            change = change.max((t - tau[k]).abs()).max((n - nu[k]).abs());
            tau[k] = t;
            nu[k] = n;
        }
        if change < opts.tol {
            converged = true;
            break;
        }
    }
    let (_, _, chol, st) = marginals(&tau, &nu)?;
    // α = ν − √τ B⁻¹ √τ C ν (R&W Eq. 3.60 with K → C).
    let cnu = matvec(c, &nu);
    let corr = r_apply(&chol, &st, &cnu);
    let alpha: Vec<f64> = nu.iter().zip(&corr).map(|(a, b)| a - b).collect();
    let info = DuelInfo {
        iterations: sweeps,
        converged,
        jitter: chol.jitter(),
    };
    Ok((st, chol, alpha, None, None, info))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Stationary, StationaryKind};
    use agora_math::rng::stream;
    use agora_math::special::norm_cdf;

    fn rbf(d: usize, l: f64) -> Box<dyn Kernel> {
        Box::new(Stationary::ard(StationaryKind::Rbf, d, l))
    }

    /// 1-D, three duels over four points: 0.1 ≻ 0.4, 0.7 ≻ 0.9, 0.4 ≻ 0.7; noise 0.3 each.
    fn case() -> (Duels, NoiseModel) {
        let w = Mat::from_fn(3, 1, |i, _| [0.1, 0.7, 0.4][i]);
        let l = Mat::from_fn(3, 1, |i, _| [0.4, 0.9, 0.7][i]);
        (
            Duels::new(w, l).unwrap(),
            NoiseModel::constant(0.3).unwrap(),
        )
    }

    /// Exact posterior mean and covariance of Δ by quadrature on a 3-D grid.
    fn quadrature(c: &Mat<f64>, s2: &[f64]) -> (Vec<f64>, Mat<f64>) {
        let chol = Cholesky::new(c.as_ref()).unwrap();
        let l = chol.l();
        let (n, lim) = (90usize, 6.0);
        let step = 2.0 * lim / n as f64;
        let mut z0 = 0.0;
        let mut z1 = [0.0; 3];
        let mut z2 = [[0.0; 3]; 3];
        // Integrate over standardized u with Δ = L u (prior weight φ(u)).
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    let u = [
                        -lim + (i as f64 + 0.5) * step,
                        -lim + (j as f64 + 0.5) * step,
                        -lim + (k as f64 + 0.5) * step,
                    ];
                    let dl: Vec<f64> = (0..3)
                        .map(|r| (0..=r).map(|q| l[(r, q)] * u[q]).sum())
                        .collect();
                    let mut w = (-(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]) / 2.0).exp();
                    for r in 0..3 {
                        w *= norm_cdf(dl[r] / s2[r].sqrt());
                    }
                    z0 += w;
                    for r in 0..3 {
                        z1[r] += w * dl[r];
                        for q in 0..3 {
                            z2[r][q] += w * dl[r] * dl[q];
                        }
                    }
                }
            }
        }
        let mean: Vec<f64> = z1.iter().map(|v| v / z0).collect();
        let cov = Mat::from_fn(3, 3, |r, q| z2[r][q] / z0 - mean[r] * mean[q]);
        (mean, cov)
    }

    #[test]
    fn ep_laplace_and_hb_against_numerical_integration() {
        let (duels, noise) = case();
        let kernel = rbf(1, 0.3);
        let c = duels.diff_cov(kernel.as_ref());
        let s2 = duels.noise_sums(&noise);
        let (qm, qc) = quadrature(&c, &s2);
        // Exact predictive moments at x* = 0.55: f* | Δ is Gaussian with E = c*ᵀ C⁻¹ Δ.
        let xs = Mat::from_fn(1, 1, |_, _| 0.1);
        let cx = duels.cross(kernel.as_ref(), xs.as_ref());
        let cvec: Vec<f64> = (0..3).map(|k| cx[(0, k)]).collect();
        let chol_c = Cholesky::new(c.as_ref()).unwrap();
        let g = chol_c.solve_vec(&cvec); // C⁻¹ c*
        let exact_mean: f64 = g.iter().zip(&qm).map(|(a, b)| a * b).sum();
        let gqg: f64 = (0..3)
            .map(|r| (0..3).map(|q| g[r] * qc[(r, q)] * g[q]).sum::<f64>())
            .sum();
        let exact_var = 1.0 - cvec.iter().zip(&g).map(|(a, b)| a * b).sum::<f64>() + gqg;
        let moments = |inf| {
            let gp = DuelGp::new(
                kernel.box_clone(),
                duels.clone(),
                &noise,
                inf,
                &mut stream(1, &[0]),
            )
            .unwrap();
            let (m, v) = gp.predict(xs.as_ref()).unwrap();
            (m[0], v[0], gp)
        };
        let (em, ev, ep_gp) = moments(DuelInference::Ep(EpOptions::default()));
        assert!(ep_gp.info().converged);
        let (lm, lv, _) = moments(DuelInference::Laplace);
        assert!(
            (em - exact_mean).abs() < 0.02 * exact_mean.abs(),
            "EP mean {em} vs {exact_mean}"
        );
        assert!(
            (ev - exact_var).abs() < 0.03 * exact_var,
            "EP var {ev} vs {exact_var}"
        );
        assert!(
            (lm - exact_mean).abs() < 0.15 * exact_mean.abs(),
            "Laplace mean {lm} vs {exact_mean}"
        );
        assert!(
            (lv - exact_var).abs() < 0.15 * exact_var,
            "Laplace var {lv} vs {exact_var}"
        );
        assert!((em - exact_mean).abs() <= (lm - exact_mean).abs());
        // HB: the mean over hallucinations is the exact posterior mean (E[f*|v] is linear in v).
        let n = 4000;
        let mut sum = 0.0;
        for i in 0..n {
            let gp = DuelGp::new(
                kernel.box_clone(),
                duels.clone(),
                &noise,
                DuelInference::Hallucination { sweeps: 20 },
                &mut stream(2, &[i]),
            )
            .unwrap();
            assert!(gp.hallucination().unwrap().iter().all(|v| *v <= 0.0));
            sum += gp.predict(xs.as_ref()).unwrap().0[0];
        }
        let hb = sum / n as f64;
        assert!(
            (hb - exact_mean).abs() < 0.03 * exact_mean.abs() + 0.01,
            "HB mean {hb} vs {exact_mean}"
        );
    }

    #[test]
    fn hb_prediction_is_brute_force_joint_gaussian_conditioning() {
        let (duels, noise) = case();
        let kernel = rbf(1, 0.25);
        let gp = DuelGp::new(
            kernel.box_clone(),
            duels.clone(),
            &noise,
            DuelInference::Hallucination { sweeps: 50 },
            &mut stream(3, &[0]),
        )
        .unwrap();
        let v = gp.hallucination().unwrap().to_vec();
        // Σ_vv = C + diag(s²), Σ_*v = −c*: mean = Σ_*v Σ_vv⁻¹ ṽ, var = k − Σ_*v Σ_vv⁻¹ Σ_v*.
        let c = duels.diff_cov(kernel.as_ref());
        let s2 = duels.noise_sums(&noise);
        let mut svv = c.clone();
        for k in 0..3 {
            svv[(k, k)] += s2[k];
        }
        let ch = Cholesky::new(svv.as_ref()).unwrap();
        for &x in &[0.0, 0.33, 0.8] {
            let xs = Mat::from_fn(1, 1, |_, _| x);
            let cx = duels.cross(kernel.as_ref(), xs.as_ref());
            let sv: Vec<f64> = (0..3).map(|k| -cx[(0, k)]).collect();
            let a = ch.solve_vec(&v);
            let mean: f64 = sv.iter().zip(&a).map(|(p, q)| p * q).sum();
            let b = ch.solve_vec(&sv);
            let var = 1.0 - sv.iter().zip(&b).map(|(p, q)| p * q).sum::<f64>();
            let (pm, pv) = gp.predict(xs.as_ref()).unwrap();
            assert!((pm[0] - mean).abs() < 1e-10, "{} vs {mean}", pm[0]);
            assert!((pv[0] - var).abs() < 1e-10, "{} vs {var}", pv[0]);
        }
        // Huge noise: the posterior is the prior.
        let loud = NoiseModel::constant(1e12).unwrap();
        let gp = DuelGp::new(
            kernel,
            duels,
            &loud,
            DuelInference::Hallucination { sweeps: 5 },
            &mut stream(3, &[1]),
        )
        .unwrap();
        let (m, v) = gp.predict(Mat::from_fn(1, 1, |_, _| 0.3).as_ref()).unwrap();
        assert!(
            m[0].abs() < 1e-4 && (v[0] - 1.0).abs() < 1e-6,
            "{m:?} {v:?}"
        );
    }

    #[test]
    fn laplace_matches_the_preference_gp_and_its_evidence_gradient_is_exact() {
        let (duels, noise) = case();
        let kernel = rbf(1, 0.3);
        let s2 = duels.noise_sums(&noise);
        let (lz, grad, _) = laplace_evidence(kernel.as_ref(), &duels, &s2, None).unwrap();
        // Same model through PreferenceGp over the 4 unique points, scale σ = √(s²/2).
        let x = Mat::from_fn(4, 1, |i, _| [0.1, 0.4, 0.7, 0.9][i]);
        let sc = (0.5 * 0.6f64).sqrt();
        let comps = vec![
            crate::Comparison {
                winner: 0,
                loser: 1,
                scale: sc,
            },
            crate::Comparison {
                winner: 2,
                loser: 3,
                scale: sc,
            },
            crate::Comparison {
                winner: 1,
                loser: 2,
                scale: sc,
            },
        ];
        let pg =
            crate::PreferenceGp::new(x, comps, kernel.box_clone(), PrefLikelihood::Probit).unwrap();
        assert!(
            (pg.log_evidence() - lz).abs() < 1e-7,
            "{} vs {lz}",
            pg.log_evidence()
        );
        let dgp = DuelGp::new(
            kernel.box_clone(),
            duels.clone(),
            &noise,
            DuelInference::Laplace,
            &mut stream(0, &[0]),
        )
        .unwrap();
        let xs = Mat::from_fn(3, 1, |i, _| [0.05, 0.5, 0.95][i]);
        let (m1, v1) = dgp.predict(xs.as_ref()).unwrap();
        let (m2, v2) = pg.predict(xs.as_ref()).unwrap();
        for i in 0..3 {
            assert!((m1[i] - m2[i]).abs() < 1e-6 && (v1[i] - v2[i]).abs() < 1e-6);
        }
        let eps = 1e-6;
        let mut k = kernel.box_clone();
        let p0 = k.params();
        k.set_params(&[p0[0] + eps]).unwrap();
        let up = laplace_evidence(k.as_ref(), &duels, &s2, None).unwrap().0;
        k.set_params(&[p0[0] - eps]).unwrap();
        let dn = laplace_evidence(k.as_ref(), &duels, &s2, None).unwrap().0;
        assert!(
            (grad[0] - (up - dn) / (2.0 * eps)).abs() < 1e-6,
            "{} vs {}",
            grad[0],
            (up - dn) / (2.0 * eps)
        );
    }

    #[test]
    fn prediction_gradients_match_finite_differences() {
        let w = Mat::from_fn(3, 2, |i, j| [[0.1, 0.2], [0.7, 0.6], [0.4, 0.9]][i][j]);
        let l = Mat::from_fn(3, 2, |i, j| [[0.4, 0.4], [0.9, 0.1], [0.7, 0.6]][i][j]);
        let duels = Duels::new(w, l).unwrap();
        let noise = NoiseModel::constant(0.2).unwrap();
        for inf in [
            DuelInference::Laplace,
            DuelInference::Ep(EpOptions::default()),
            DuelInference::Hallucination { sweeps: 30 },
        ] {
            let gp = DuelGp::new(
                rbf(2, 0.3),
                duels.clone(),
                &noise,
                inf,
                &mut stream(4, &[0]),
            )
            .unwrap();
            let x = [0.35, 0.55];
            let (m, v, gm, gv) = gp.predict_with_grad(&x).unwrap();
            let (pm, pv) = gp
                .predict(Mat::from_fn(1, 2, |_, j| x[j]).as_ref())
                .unwrap();
            assert!((m - pm[0]).abs() < 1e-12 && (v - pv[0]).abs() < 1e-12);
            for j in 0..2 {
                let eps = 1e-6;
                let mut a = x;
                let mut b = x;
                a[j] += eps;
                b[j] -= eps;
                let (ma, va, _, _) = gp.predict_with_grad(&a).unwrap();
                let (mb, vb, _, _) = gp.predict_with_grad(&b).unwrap();
                assert!((gm[j] - (ma - mb) / (2.0 * eps)).abs() < 1e-6);
                assert!((gv[j] - (va - vb) / (2.0 * eps)).abs() < 1e-6);
            }
        }
    }

    #[test]
    fn repeated_duels_and_bad_inputs() {
        // The same duel five times, and its reverse twice: C is singular; all methods work.
        let w = Mat::from_fn(7, 1, |i, _| if i < 5 { 0.2 } else { 0.6 });
        let l = Mat::from_fn(7, 1, |i, _| if i < 5 { 0.6 } else { 0.2 });
        let duels = Duels::new(w, l).unwrap();
        let noise = NoiseModel::constant(0.5).unwrap();
        for inf in [
            DuelInference::Laplace,
            DuelInference::Ep(EpOptions::default()),
            DuelInference::Hallucination { sweeps: 100 },
        ] {
            let gp = DuelGp::new(
                rbf(1, 0.2),
                duels.clone(),
                &noise,
                inf,
                &mut stream(5, &[0]),
            )
            .unwrap();
            let (m, v) = gp
                .predict(Mat::from_fn(2, 1, |i, _| [0.2, 0.6][i]).as_ref())
                .unwrap();
            assert!(m.iter().chain(&v).all(|x| x.is_finite()));
            if !matches!(inf, DuelInference::Hallucination { .. }) {
                assert!(m[0] > m[1], "{inf:?}: {m:?}");
            }
        }
        let e = Duels::new(Mat::from_fn(1, 1, |_, _| f64::NAN), Mat::zeros(1, 1)).unwrap_err();
        assert!(e.to_string().contains("winners[0][0]"), "{e}");
        let e = Duels::new(Mat::zeros(2, 1), Mat::zeros(1, 1)).unwrap_err();
        assert!(e.to_string().contains("losers"), "{e}");
        assert!(
            DuelInference::parse("vb")
                .unwrap_err()
                .to_string()
                .contains("hb, laplace, ep")
        );
    }
}
