//! Exact Gaussian-process regression with Gaussian noise (Rasmussen & Williams 2006,
//! Alg. 2.1 and Eq. 5.9), MAP hyperparameter fitting, prediction, joint sampling and cheap
//! conditioning.
//!
//! The defaults of [`GpConfig::botorch`] reproduce BoTorch 0.18's `SingleTaskGP` (outcome
//! standardization, RBF ARD without output scale, LogNormal lengthscale and noise priors,
//! constant mean; docs/anchors/RESULTS.md §1), so results are comparable.

use crate::kernel::{GramScratch, Kernel, ParamKind, Scale, Stationary, StationaryKind};
use crate::mll::{LN_2PI, log_marginal_likelihood_parts};
use crate::prior::Prior;
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use agora_math::optim::{self, LbfgsbOptions};
use faer::{Mat, MatRef};
use rand::Rng;

/// How an [`ExactGp`] is built and fitted.
#[derive(Debug, Clone, PartialEq)]
pub struct GpConfig {
    /// Radial profile of the ARD kernel.
    pub kernel: StationaryKind,
    /// Learn an output scale (`ScaleKernel`); without it the signal variance is 1 in
    /// standardized units.
    pub outputscale: bool,
    /// Prior on each lengthscale.
    pub lengthscale_prior: Prior,
    /// Prior on the output scale (if learned).
    pub outputscale_prior: Prior,
    /// Prior on the noise variance (standardized units).
    pub noise_prior: Prior,
    /// Bounds on each lengthscale.
    pub lengthscale_bounds: (f64, f64),
    /// Bounds on the output scale.
    pub outputscale_bounds: (f64, f64),
    /// Bounds on the noise variance (standardized units). Equal bounds fix it.
    pub noise_bounds: (f64, f64),
    /// Starting lengthscale.
    pub init_lengthscale: f64,
    /// Starting output scale.
    pub init_outputscale: f64,
    /// Starting noise variance.
    pub init_noise: f64,
    /// Learn the constant mean (otherwise it stays 0 in standardized units).
    pub learn_mean: bool,
    /// Standardize y (mean 0, sample std with ddof = 1) before fitting.
    pub standardize: bool,
    /// Extra random starts drawn from the priors (0 = start from the init values only).
    pub restarts: usize,
    /// With a warm start ([`ExactGp::fit_from`]), fit from it alone and fall back to the
    /// init values only if that fit fails, as Optuna's `GPSampler` does (it starts from the
    /// previous trial's hyperparameters); otherwise the init values are always a start too.
    pub warm_start_only: bool,
    /// Divide the loss by n (BoTorch's convention) or not (Optuna's); this changes what
    /// the optimizer's gradient tolerance means.
    pub loss_per_point: bool,
    /// L-BFGS-B settings.
    pub optimizer: LbfgsbOptions,
}

impl GpConfig {
    /// BoTorch 0.18 `SingleTaskGP` defaults for `d` inputs: RBF ARD, no output scale,
    /// `l ~ LogNormal(√2 + ½ ln d, √3)` with `l ≥ 0.025` and start at its mode,
    /// noise `~ LogNormal(−4, 1)` with noise `≥ 1e-4` and start `e^{−5}`, learned constant
    /// mean from 0, standardized outcomes, scipy's L-BFGS-B defaults.
    pub fn botorch(d: usize) -> GpConfig {
        let mu = std::f64::consts::SQRT_2 + 0.5 * (d.max(1) as f64).ln();
        let sigma = 3f64.sqrt();
        GpConfig {
            kernel: StationaryKind::Rbf,
            outputscale: false,
            lengthscale_prior: Prior::LogNormal { mu, sigma },
            outputscale_prior: Prior::None,
            noise_prior: Prior::LogNormal {
                mu: -4.0,
                sigma: 1.0,
            },
            lengthscale_bounds: (0.025, 1e4),
            outputscale_bounds: (1e-4, 1e4),
            noise_bounds: (1e-4, 1e4),
            // BoTorch initializes in float32: 0.5016229152679443 (RESULTS.md §1).
            init_lengthscale: (mu - sigma * sigma).exp() as f32 as f64,
            init_outputscale: 1.0,
            init_noise: (-5f64).exp(),
            learn_mean: true,
            standardize: true,
            restarts: 0,
            warm_start_only: false,
            loss_per_point: true,
            optimizer: LbfgsbOptions::default(),
        }
    }

    /// Optuna 5 `GPSampler`-style model: Matérn-5/2 ARD with output scale, its heuristic
    /// priors (`−(0.1/ι + 0.1ι)` on inverse squared lengthscales, Gamma(2, 1) on the scale,
    /// Gamma(1.1, 30) on the noise), noise ≥ 1e-6, zero mean on standardized outcomes.
    pub fn optuna(_d: usize) -> GpConfig {
        GpConfig {
            kernel: StationaryKind::Matern52,
            outputscale: true,
            lengthscale_prior: Prior::OptunaInvSqLengthscale,
            outputscale_prior: Prior::Gamma {
                alpha: 2.0,
                beta: 1.0,
            },
            noise_prior: Prior::Gamma {
                alpha: 1.1,
                beta: 30.0,
            },
            lengthscale_bounds: (1e-3, 1e3),
            outputscale_bounds: (1e-3, 1e3),
            noise_bounds: (1e-6, 10.0),
            init_lengthscale: 1.0,
            init_outputscale: 1.0,
            init_noise: 1e-2,
            learn_mean: false,
            standardize: true,
            restarts: 0,
            warm_start_only: true,
            loss_per_point: false,
            optimizer: LbfgsbOptions {
                pgtol: 1e-2,
                ..LbfgsbOptions::default()
            },
        }
    }

    /// Validate bounds and starting values; errors name the field.
    pub fn validate(&self) -> Result<()> {
        for (name, (lo, hi)) in [
            ("lengthscale_bounds", self.lengthscale_bounds),
            ("outputscale_bounds", self.outputscale_bounds),
            ("noise_bounds", self.noise_bounds),
        ] {
            if !(lo.is_finite() && hi.is_finite() && lo > 0.0 && lo <= hi) {
                return Err(Error::invalid(
                    name,
                    format!("needs 0 < lo <= hi, finite; got ({lo}, {hi})"),
                ));
            }
        }
        for (name, v) in [
            ("init_lengthscale", self.init_lengthscale),
            ("init_outputscale", self.init_outputscale),
            ("init_noise", self.init_noise),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::invalid(
                    name,
                    format!("must be a positive finite number, got {v}"),
                ));
            }
        }
        Ok(())
    }

    /// The kernel this configuration describes, at its starting values.
    pub fn build_kernel(&self, d: usize) -> Box<dyn Kernel> {
        let base = Stationary::ard(self.kernel, d, self.init_lengthscale);
        if self.outputscale {
            Box::new(Scale::new(Box::new(base), self.init_outputscale))
        } else {
            Box::new(base)
        }
    }
}

/// Hyperparameters of an exact GP, in standardized units.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Hyper {
    /// Kernel parameters (log space, in the kernel's order).
    pub kernel: Vec<f64>,
    /// Noise variance.
    pub noise: f64,
    /// Constant mean.
    pub mean: f64,
}

/// What a fit did.
#[derive(Debug, Clone, PartialEq)]
pub struct FitReport {
    /// Final loss `−(log marginal likelihood + log priors)`, divided by n when
    /// [`GpConfig::loss_per_point`].
    pub loss: f64,
    /// Loss at the first start.
    pub initial_loss: f64,
    /// Loss-and-gradient evaluations over all starts.
    pub evals: usize,
    /// L-BFGS-B iterations of the winning start.
    pub iters: u64,
    /// Number of starts.
    pub starts: usize,
    /// Diagonal jitter the final Cholesky needed (0 = none).
    pub jitter: f64,
}

/// A Gaussian-process regression model conditioned on data.
#[derive(Debug, Clone)]
pub struct ExactGp {
    kernel: Box<dyn Kernel>,
    noise: f64,
    mean: f64,
    x: Mat<f64>,
    ys: Vec<f64>,
    y_shift: f64,
    y_scale: f64,
    chol: Cholesky,
    alpha: Vec<f64>,
}

fn check_data(x: MatRef<'_, f64>, y: &[f64]) -> Result<()> {
    if x.nrows() == 0 {
        return Err(Error::invalid(
            "x_train",
            "needs at least one training point",
        ));
    }
    if x.ncols() == 0 {
        return Err(Error::invalid(
            "x_train",
            "needs at least one input dimension",
        ));
    }
    if y.len() != x.nrows() {
        return Err(Error::dim("y_train", x.nrows(), y.len()));
    }
    agora_core::check_finite_slice("y_train", y)?;
    check_finite_rows("x_train", x)
}

/// Every entry of `x` finite; errors name `name[i][j]`.
pub(crate) fn check_finite_rows(name: &str, x: MatRef<'_, f64>) -> Result<()> {
    for i in 0..x.nrows() {
        for j in 0..x.ncols() {
            if !x[(i, j)].is_finite() {
                return Err(Error::invalid(
                    format!("{name}[{i}][{j}]"),
                    format!("must be a finite number, got {}", x[(i, j)]),
                ));
            }
        }
    }
    Ok(())
}

/// The checks of [`ExactGp::new`]: data, a finite `mean` and a finite `noise ≥ 0`.
fn check_inputs(x: MatRef<'_, f64>, y: &[f64], noise: f64, mean: f64) -> Result<()> {
    check_data(x, y)?;
    agora_core::check_finite("noise", noise)?;
    agora_core::check_finite("mean", mean)?;
    if noise < 0.0 {
        return Err(Error::invalid(
            "noise",
            format!("must be >= 0, got {noise}"),
        ));
    }
    Ok(())
}

/// `(shift, scale)` so that `(y − shift)/scale` has mean 0 and sample std 1 (ddof = 1);
/// scale 1 when fewer than two points or no spread.
pub fn standardization(y: &[f64]) -> (f64, f64) {
    let n = y.len() as f64;
    let mut m = y.iter().sum::<f64>() / n;
    if !m.is_finite() {
        // The sum overflowed (values near f64::MAX): average the scaled values instead.
        m = y.iter().map(|v| v / n).sum::<f64>();
    }
    if y.len() < 2 {
        return (m, 1.0);
    }
    let v = y.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0);
    let mut s = v.sqrt();
    if !s.is_finite() {
        // The squares overflowed (|y| above ~1e154): factor out the largest deviation.
        let big = y.iter().map(|v| (v - m).abs()).fold(0.0, f64::max);
        let r = y.iter().map(|v| ((v - m) / big).powi(2)).sum::<f64>() / (n - 1.0);
        s = big * r.sqrt();
    }
    (m, if s > 1e-12 * (1.0 + m.abs()) { s } else { 1.0 })
}

/// `A = K + noise·I`.
fn noisy_gram(kernel: &dyn Kernel, x: MatRef<'_, f64>, noise: f64) -> Mat<f64> {
    let mut a = kernel.gram(x);
    for i in 0..a.nrows() {
        a[(i, i)] += noise;
    }
    a
}

/// Loss and gradient of the fit objective for the optimization vector
/// `[kernel params.., log noise, (mean)]`.
struct Objective<'a> {
    kernel: &'a dyn Kernel,
    x: MatRef<'a, f64>,
    ys: &'a [f64],
    cfg: &'a GpConfig,
    kinds: Vec<ParamKind>,
}

impl Objective<'_> {
    fn unpack(&self, v: &[f64]) -> (Vec<f64>, f64, f64) {
        let nk = self.kinds.len();
        let mean = if self.cfg.learn_mean { v[nk + 1] } else { 0.0 };
        (v[..nk].to_vec(), v[nk].exp(), mean)
    }

    fn eval(&self, v: &[f64], grad: &mut [f64]) -> Result<f64> {
        let (kp, noise, mean) = self.unpack(v);
        let mut kernel = self.kernel.box_clone();
        kernel.set_params(&kp)?;
        let n = self.ys.len();
        let mut scratch = GramScratch::default();
        let k = kernel.gram_scratch(self.x, &mut scratch);
        let r: Vec<f64> = self.ys.iter().map(|y| y - mean).collect();
        let (mll, alpha, w) = log_marginal_likelihood_parts(k.as_ref(), noise, &r)?;
        let gk = kernel.grad_contract_scratch(self.x, w.as_ref(), k.as_ref(), 1.0, &scratch);
        let trace_w: f64 = (0..n).map(|i| w[(i, i)]).sum();
        let mut lp = 0.0;
        let nk = self.kinds.len();
        let n = if self.cfg.loss_per_point { n } else { 1 };
        for (i, kind) in self.kinds.iter().enumerate() {
            let prior = match kind {
                ParamKind::Lengthscale => self.cfg.lengthscale_prior,
                ParamKind::Outputscale => self.cfg.outputscale_prior,
            };
            let (l, dl) = prior.log_density_grad(kp[i]);
            lp += l;
            grad[i] = -(gk[i] + dl) / n as f64;
        }
        let (l, dl) = self.cfg.noise_prior.log_density_grad(v[nk]);
        lp += l;
        grad[nk] = -(noise * trace_w + dl) / n as f64;
        if self.cfg.learn_mean {
            grad[nk + 1] = -alpha.iter().sum::<f64>() / n as f64;
        }
        Ok(-(mll + lp) / n as f64)
    }
}

impl ExactGp {
    /// A GP with fixed hyperparameters on raw (unstandardized) data: `noise` and `mean`
    /// are in the units of `y`.
    pub fn new(
        x: Mat<f64>,
        y: &[f64],
        kernel: Box<dyn Kernel>,
        noise: f64,
        mean: f64,
    ) -> Result<ExactGp> {
        check_inputs(x.as_ref(), y, noise, mean)?;
        ExactGp::assemble(kernel, noise, mean, x, y.to_vec(), 0.0, 1.0)
    }

    /// As [`ExactGp::new`], with the noiseless Gram `kernel.gram(x)` supplied by the caller
    /// (e.g. kept up to date across iterations by [`crate::AdditiveGrams`]), so that it is
    /// not rebuilt; it must be that Gram (the model is then the same, bit for bit).
    ///
    /// Errors: as [`ExactGp::new`], or `gram` is not `n × n` (naming `gram`).
    pub fn with_gram(
        x: Mat<f64>,
        y: &[f64],
        kernel: Box<dyn Kernel>,
        noise: f64,
        mean: f64,
        mut gram: Mat<f64>,
    ) -> Result<ExactGp> {
        check_inputs(x.as_ref(), y, noise, mean)?;
        let n = x.nrows();
        if gram.nrows() != n || gram.ncols() != n {
            return Err(Error::invalid(
                "gram",
                format!(
                    "must be {n} x {n} (one row per training point), got {} x {}",
                    gram.nrows(),
                    gram.ncols()
                ),
            ));
        }
        for i in 0..n {
            gram[(i, i)] += noise;
        }
        let chol = Cholesky::new(gram.as_ref())?;
        Ok(ExactGp::with_factor(
            kernel,
            noise,
            mean,
            x,
            y.to_vec(),
            (0.0, 1.0),
            chol,
        ))
    }

    /// The factor of `K + noise·I` and `α = (K + noise·I)⁻¹ (y − mean)` (for posteriors
    /// evaluated outside this type, e.g. clique by clique).
    pub(crate) fn factor(&self) -> (&Cholesky, &[f64]) {
        (&self.chol, &self.alpha)
    }

    fn assemble(
        kernel: Box<dyn Kernel>,
        noise: f64,
        mean: f64,
        x: Mat<f64>,
        ys: Vec<f64>,
        y_shift: f64,
        y_scale: f64,
    ) -> Result<ExactGp> {
        let a = noisy_gram(kernel.as_ref(), x.as_ref(), noise);
        let chol = Cholesky::new(a.as_ref())?;
        Ok(ExactGp::with_factor(
            kernel,
            noise,
            mean,
            x,
            ys,
            (y_shift, y_scale),
            chol,
        ))
    }

    /// The model from its parts and the factor of `K + noise·I` (computes `α`).
    fn with_factor(
        kernel: Box<dyn Kernel>,
        noise: f64,
        mean: f64,
        x: Mat<f64>,
        ys: Vec<f64>,
        (y_shift, y_scale): (f64, f64),
        chol: Cholesky,
    ) -> ExactGp {
        let r: Vec<f64> = ys.iter().map(|y| y - mean).collect();
        let alpha = chol.solve_vec(&r);
        ExactGp {
            kernel,
            noise,
            mean,
            x,
            ys,
            y_shift,
            y_scale,
            chol,
            alpha,
        }
    }

    /// Fit by MAP (L-BFGS-B in log hyperparameters from the configured start plus
    /// `cfg.restarts` prior draws; the best loss wins) and condition on the data.
    pub fn fit<R: Rng + ?Sized>(
        x: Mat<f64>,
        y: &[f64],
        cfg: &GpConfig,
        rng: &mut R,
    ) -> Result<(ExactGp, FitReport)> {
        ExactGp::fit_from(x, y, cfg, None, rng)
    }

    /// As [`ExactGp::fit`], also starting from `warm` (e.g. the previous iteration's
    /// hyperparameters) when given.
    pub fn fit_from<R: Rng + ?Sized>(
        x: Mat<f64>,
        y: &[f64],
        cfg: &GpConfig,
        warm: Option<&Hyper>,
        rng: &mut R,
    ) -> Result<(ExactGp, FitReport)> {
        check_data(x.as_ref(), y)?;
        cfg.validate()?;
        let (y_shift, y_scale) = if cfg.standardize {
            standardization(y)
        } else {
            (0.0, 1.0)
        };
        let ys: Vec<f64> = y.iter().map(|v| (v - y_shift) / y_scale).collect();
        let kernel = cfg.build_kernel(x.ncols());
        let kinds = kernel.param_kinds();
        let nk = kinds.len();
        let obj = Objective {
            kernel: kernel.as_ref(),
            x: x.as_ref(),
            ys: &ys,
            cfg,
            kinds: kinds.clone(),
        };
        let mut bounds: Vec<(f64, f64)> = kinds
            .iter()
            .map(|k| {
                let (lo, hi) = match k {
                    ParamKind::Lengthscale => cfg.lengthscale_bounds,
                    ParamKind::Outputscale => cfg.outputscale_bounds,
                };
                (lo.ln(), hi.ln())
            })
            .collect();
        bounds.push((cfg.noise_bounds.0.ln(), cfg.noise_bounds.1.ln()));
        if cfg.learn_mean {
            bounds.push((f64::NEG_INFINITY, f64::INFINITY));
        }
        let clamp = |v: Vec<f64>| -> Vec<f64> {
            v.iter()
                .zip(&bounds)
                .map(|(x, (l, h))| x.clamp(*l, *h))
                .collect()
        };
        let mut first = kernel.params();
        first.push(cfg.init_noise.ln());
        if cfg.learn_mean {
            first.push(0.0);
        }
        let first_start = first.clone();
        let mut starts = vec![clamp(first)];
        if let Some(h) = warm
            && h.kernel.len() == nk
        {
            let mut v = h.kernel.clone();
            v.push(h.noise.max(1e-300).ln());
            if cfg.learn_mean {
                v.push(h.mean);
            }
            if v.iter().all(|x| x.is_finite()) {
                if cfg.warm_start_only {
                    starts.clear();
                }
                starts.push(clamp(v));
            }
        }
        for _ in 0..cfg.restarts {
            let mut v: Vec<f64> = kinds
                .iter()
                .map(|k| match k {
                    ParamKind::Lengthscale => cfg.lengthscale_prior.sample_log(rng),
                    ParamKind::Outputscale => cfg.outputscale_prior.sample_log(rng),
                })
                .collect();
            v.push(cfg.noise_prior.sample_log(rng));
            if cfg.learn_mean {
                v.push(0.0);
            }
            starts.push(clamp(v));
        }
        let f = |v: &[f64], g: &mut [f64]| obj.eval(v, g);
        let mut minima = optim::multistart(&f, &starts, &bounds, cfg.optimizer);
        if cfg.warm_start_only
            && starts.len() == 1 + cfg.restarts
            && warm.is_some()
            && minima.as_ref().map_or(true, |m| optim::best(m).is_none())
        {
            // The warm start alone failed: start from the init values as well.
            starts.insert(0, clamp(first_start.clone()));
            minima = optim::multistart(&f, &starts, &bounds, cfg.optimizer);
        }
        let minima = minima?;
        // The first start's first evaluation is the initial loss (evaluated again only
        // if that start was dropped or began elsewhere).
        let initial_loss = match minima.first() {
            Some(m) if minima.len() == starts.len() && !m.f_start.is_nan() => m.f_start,
            _ => {
                let mut g0 = vec![0.0; starts[0].len()];
                obj.eval(&starts[0], &mut g0).unwrap_or(f64::NAN)
            }
        };
        let evals = minima.iter().map(|m| m.evals).sum();
        let best =
            optim::best(&minima).ok_or_else(|| Error::Numerical("no fit succeeded".into()))?;
        let (kp, noise, mean) = obj.unpack(&best.x);
        let mut kernel = kernel;
        kernel.set_params(&kp)?;
        let gp = ExactGp::assemble(kernel, noise, mean, x, ys, y_shift, y_scale)?;
        let report = FitReport {
            loss: best.f,
            initial_loss,
            evals,
            iters: best.iters,
            starts: starts.len(),
            jitter: gp.chol.jitter(),
        };
        Ok((gp, report))
    }

    /// Number of training points.
    pub fn n(&self) -> usize {
        self.x.nrows()
    }

    /// Input dimension.
    pub fn dim(&self) -> usize {
        self.x.ncols()
    }

    /// Training inputs.
    pub fn x(&self) -> MatRef<'_, f64> {
        self.x.as_ref()
    }

    /// Training outcomes in original units.
    pub fn y(&self) -> Vec<f64> {
        self.ys
            .iter()
            .map(|v| v * self.y_scale + self.y_shift)
            .collect()
    }

    /// The kernel (standardized units).
    pub fn kernel(&self) -> &dyn Kernel {
        self.kernel.as_ref()
    }

    /// Hyperparameters (standardized units).
    pub fn hyper(&self) -> Hyper {
        Hyper {
            kernel: self.kernel.params(),
            noise: self.noise,
            mean: self.mean,
        }
    }

    /// Noise variance in the units of y.
    pub fn noise_variance(&self) -> f64 {
        self.noise * self.y_scale * self.y_scale
    }

    /// `(shift, scale)` of the outcome standardization.
    pub fn standardization(&self) -> (f64, f64) {
        (self.y_shift, self.y_scale)
    }

    /// Diagonal jitter the Cholesky needed.
    pub fn jitter(&self) -> f64 {
        self.chol.jitter()
    }

    /// Log marginal likelihood `log N(y_s | m1, K + σ²I)` of the (standardized, if the
    /// model standardizes) training outcomes, total over points.
    pub fn log_marginal_likelihood(&self) -> f64 {
        let quad: f64 = self
            .ys
            .iter()
            .zip(&self.alpha)
            .map(|(y, a)| (y - self.mean) * a)
            .sum();
        -0.5 * quad - 0.5 * self.chol.log_det() - 0.5 * self.n() as f64 * LN_2PI
    }

    fn check_inputs(&self, xs: MatRef<'_, f64>) -> Result<()> {
        crate::check_mat("x_test", xs, self.dim())
    }

    /// Means at the rows of `xs` (units of y) and `V = L⁻¹ K(X, xs)` (n × m).
    fn mean_and_v(&self, xs: MatRef<'_, f64>) -> Result<(Vec<f64>, Mat<f64>)> {
        self.check_inputs(xs)?;
        let mut v = self.kernel.cross(self.x.as_ref(), xs);
        let mean = (0..xs.nrows())
            .map(|c| {
                let s: f64 = (0..self.n()).map(|r| v[(r, c)] * self.alpha[r]).sum();
                (self.mean + s) * self.y_scale + self.y_shift
            })
            .collect();
        self.chol.solve_lower_in_place(v.as_mut());
        Ok((mean, v))
    }

    /// Posterior mean and latent variance (no observation noise) at each row of `xs`, in
    /// the units of y.
    pub fn predict(&self, xs: MatRef<'_, f64>) -> Result<(Vec<f64>, Vec<f64>)> {
        let (mean, v) = self.mean_and_v(xs)?;
        let kss = self.kernel.diag(xs);
        let s2 = self.y_scale * self.y_scale;
        let var = (0..xs.nrows())
            .map(|c| {
                let q: f64 = (0..self.n()).map(|r| v[(r, c)] * v[(r, c)]).sum();
                (kss[c] - q).max(0.0) * s2
            })
            .collect();
        Ok((mean, var))
    }

    /// Posterior mean and full latent covariance at the rows of `xs`, in the units of y.
    pub fn predict_cov(&self, xs: MatRef<'_, f64>) -> Result<(Vec<f64>, Mat<f64>)> {
        let m = xs.nrows();
        let (mean, v) = self.mean_and_v(xs)?;
        let mut cov = self.kernel.gram(xs);
        faer::linalg::matmul::matmul(
            cov.as_mut(),
            faer::Accum::Add,
            v.transpose(),
            v.as_ref(),
            -1.0,
            faer::Par::Seq,
        );
        let s2 = self.y_scale * self.y_scale;
        for c in 0..m {
            for r in 0..m {
                cov[(r, c)] *= s2;
            }
        }
        Ok((mean, cov))
    }

    /// The gradient, with respect to every row `x_a` of the batch `xs`, of
    /// `Σ_i gm_i μ_i + Σ_ab gc_ab Σ_ab` (a vector–Jacobian product of the joint posterior;
    /// `gc` symmetric), in the units of y. With `v_b = L⁻¹ k(X, x_b)`:
    /// `∂/∂x_a = gm_a ∂μ_a + 2 Σ_{b≠a} gc_ab ∂k(x_a, x_b) − 2 ∂k(X, x_a)ᵀ L⁻ᵀ Σ_b gc_ab v_b`.
    /// Batch acquisitions (e.g. a log-determinant information term) use it for gradients
    /// in all `n·d` coordinates at the cost of one extra triangular solve.
    pub fn joint_vjp(
        &self,
        xs: MatRef<'_, f64>,
        gm: &[f64],
        gc: MatRef<'_, f64>,
    ) -> Result<Mat<f64>> {
        let (m, d) = (xs.nrows(), self.dim());
        if gm.len() != m {
            return Err(Error::dim("gm", m, gm.len()));
        }
        if gc.nrows() != m || gc.ncols() != m {
            return Err(Error::dim("gc rows", m, gc.nrows()));
        }
        let (_, v) = self.mean_and_v(xs)?;
        let n = self.n();
        let s2 = self.y_scale * self.y_scale;
        // u_a = Σ_b gc_ab v_b, then z_a = L⁻ᵀ u_a (columns of an n × m matrix).
        let mut z = Mat::from_fn(n, m, |r, a| {
            (0..m).map(|b| gc[(a, b)] * v[(r, b)]).sum::<f64>()
        });
        self.chol.solve_upper_in_place(z.as_mut());
        let mut out = Mat::zeros(m, d);
        for a in 0..m {
            let xa: Vec<f64> = (0..d).map(|j| xs[(a, j)]).collect();
            let dk_train = self.kernel.grad_x(&xa, self.x.as_ref()); // n × d
            let dk_batch = self.kernel.grad_x(&xa, xs); // m × d
            let dself = self.kernel.diag_grad_x(&xa);
            for j in 0..d {
                let mut dmu = 0.0;
                let mut dz = 0.0;
                for r in 0..n {
                    dmu += dk_train[(r, j)] * self.alpha[r];
                    dz += dk_train[(r, j)] * z[(r, a)];
                }
                let mut g = gm[a] * dmu * self.y_scale;
                let mut c = gc[(a, a)] * dself[j] - 2.0 * dz;
                for b in 0..m {
                    if b != a {
                        c += 2.0 * gc[(a, b)] * dk_batch[(b, j)];
                    }
                }
                g += c * s2;
                out[(a, j)] = g;
            }
        }
        Ok(out)
    }

    /// `n_samples` joint draws of the latent function at the rows of `xs` (each a vector
    /// of length `xs.nrows()`), via a jittered Cholesky of the posterior covariance.
    pub fn sample<R: Rng + ?Sized>(
        &self,
        xs: MatRef<'_, f64>,
        n_samples: usize,
        rng: &mut R,
    ) -> Result<Vec<Vec<f64>>> {
        use rand_distr::{Distribution, StandardNormal};
        let (mean, cov) = self.predict_cov(xs)?;
        let l = Cholesky::new(cov.as_ref())?;
        let m = mean.len();
        Ok((0..n_samples)
            .map(|_| {
                let z: Vec<f64> = (0..m).map(|_| StandardNormal.sample(rng)).collect();
                (0..m)
                    .map(|i| mean[i] + (0..=i).map(|j| l.l()[(i, j)] * z[j]).sum::<f64>())
                    .collect()
            })
            .collect())
    }

    /// Mean and latent variance at one point with their gradients in the input, in the
    /// units of y: `(μ, σ², ∇μ, ∇σ²)`. This is what continuous acquisition maximizers need.
    pub fn predict_with_grad(&self, x: &[f64]) -> Result<(f64, f64, Vec<f64>, Vec<f64>)> {
        if x.len() != self.dim() {
            return Err(Error::dim("x", self.dim(), x.len()));
        }
        agora_core::check_finite_slice("x", x)?;
        let xm = MatRef::from_row_major_slice(x, 1, x.len());
        // k(X, x) (n) and its input gradient (n × d).
        let (kv, dk) = self.kernel.cross_grad_x(x, self.x.as_ref());
        let mu_s = self.mean + kv.iter().zip(&self.alpha).map(|(a, b)| a * b).sum::<f64>();
        let w = self.chol.solve_vec(&kv); // A⁻¹ k
        let kss = self.kernel.diag(xm)[0];
        let var_s = (kss - kv.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>()).max(0.0);
        let dself = self.kernel.diag_grad_x(x);
        let d = self.dim();
        let mut dmu = vec![0.0; d];
        let mut dvar = vec![0.0; d];
        for j in 0..d {
            let mut a = 0.0;
            let mut b = 0.0;
            for i in 0..self.n() {
                a += dk[(i, j)] * self.alpha[i];
                b += dk[(i, j)] * w[i];
            }
            dmu[j] = a * self.y_scale;
            dvar[j] = (dself[j] - 2.0 * b) * self.y_scale * self.y_scale;
        }
        Ok((
            mu_s * self.y_scale + self.y_shift,
            var_s * self.y_scale * self.y_scale,
            dmu,
            dvar,
        ))
    }

    /// GIBO's gradient information (Müller, von Rohr & Trimpe 2021, "Local policy search
    /// with Bayesian optimization", Eq. 9) of observing `f` (with noise) at each row `z` of
    /// `zs`: `tr Σ_∇(θ | D) − tr Σ_∇(θ | D ∪ {z}) = ‖b(z)‖² / (σ²(z) + σ_n²)`, where
    /// `Σ_∇(θ | D)` is the posterior covariance of `∇f(θ)`, `b(z) = Cov(∇f(θ), f(z) | D)
    /// = ∂_θ k(θ, z) − ∂_θ k(θ, X) A⁻¹ k(X, z)` and `σ²(z)` the latent variance at `z`; in
    /// the units of y squared. Needs a kernel differentiable in its inputs.
    pub fn gradient_information(&self, theta: &[f64], zs: MatRef<'_, f64>) -> Result<Vec<f64>> {
        if theta.len() != self.dim() {
            return Err(Error::dim("theta", self.dim(), theta.len()));
        }
        agora_core::check_finite_slice("theta", theta)?;
        self.check_inputs(zs)?;
        let (n, d, k) = (self.n(), self.dim(), zs.nrows());
        let kxz = self.kernel.cross(self.x.as_ref(), zs); // n × k
        let mut w = kxz.clone();
        self.chol.solve_in_place(w.as_mut()); // A⁻¹ k(X, Z)
        let dx = self.kernel.grad_x(theta, self.x.as_ref()); // n × d
        let dz = self.kernel.grad_x(theta, zs); // k × d
        let kzz = self.kernel.diag(zs);
        let s2 = self.y_scale * self.y_scale;
        Ok((0..k)
            .map(|c| {
                let mut b2 = 0.0;
                for j in 0..d {
                    let mut b = dz[(c, j)];
                    for r in 0..n {
                        b -= dx[(r, j)] * w[(r, c)];
                    }
                    b2 += b * b;
                }
                let q: f64 = (0..n).map(|r| kxz[(r, c)] * w[(r, c)]).sum();
                let v = (kzz[c] - q).max(0.0) + self.noise;
                b2 / v * s2
            })
            .collect())
    }

    /// The same model conditioned on extra observations (same hyperparameters and
    /// standardization), by a bordered Cholesky update in `O(n² m)`.
    pub fn condition(&self, x_new: MatRef<'_, f64>, y_new: &[f64]) -> Result<ExactGp> {
        if x_new.ncols() != self.dim() {
            return Err(Error::dim("x_new columns", self.dim(), x_new.ncols()));
        }
        if y_new.len() != x_new.nrows() {
            return Err(Error::dim("y_new", x_new.nrows(), y_new.len()));
        }
        agora_core::check_finite_slice("y_new", y_new)?;
        self.check_inputs(x_new)?;
        let cross = self.kernel.cross(self.x.as_ref(), x_new);
        let corner = noisy_gram(self.kernel.as_ref(), x_new, self.noise);
        let chol = self.chol.extend(cross.as_ref(), corner.as_ref())?;
        let (n, m) = (self.n(), x_new.nrows());
        let x = Mat::from_fn(n + m, self.dim(), |i, j| {
            if i < n {
                self.x[(i, j)]
            } else {
                x_new[(i - n, j)]
            }
        });
        let mut ys = self.ys.clone();
        ys.extend(y_new.iter().map(|v| (v - self.y_shift) / self.y_scale));
        Ok(ExactGp::with_factor(
            self.kernel.clone(),
            self.noise,
            self.mean,
            x,
            ys,
            (self.y_shift, self.y_scale),
            chol,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::standardization;

    #[test]
    fn standardization_survives_values_whose_squares_overflow() {
        let (m, sd) = standardization(&[1e160, -1e160, 0.0]);
        assert_eq!(m, 0.0);
        // The sample sd of (1, -1, 0) is 1; here scaled by 1e160.
        assert!((sd / 1e160 - 1.0).abs() < 1e-12, "{sd}");
        assert_eq!(standardization(&[1.0, 2.0, 3.0]), (2.0, 1.0));
    }
}
