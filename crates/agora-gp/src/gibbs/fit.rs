//! Augmented inputs and the kernel's own marginal-likelihood fit (Eq. 20 within
//! [`AugmentedGibbs::log_bounds`]).

use super::{ALPHA_BOUNDS, AugmentedGibbs, LENGTHSCALE_BOUNDS, positive};
use crate::exact::ExactGp;
use crate::kernel::Kernel;
use crate::mll::log_marginal_likelihood_parts;
use agora_core::{Error, Result};
use agora_math::optim::{self, LbfgsbOptions};
use faer::{Mat, MatRef};

/// Augmented rows `[x, μ̄, σ̄]` from `x` (`n × d`), the normalised rank-GP means `mu_bar`
/// (`n × m`) and their rescaled stds `sigma_bar` (`n × m`, each `≥ 0`). Errors name the
/// argument and entry.
pub fn augment(
    x: MatRef<'_, f64>,
    mu_bar: MatRef<'_, f64>,
    sigma_bar: MatRef<'_, f64>,
) -> Result<Mat<f64>> {
    let (n, d, m) = (x.nrows(), x.ncols(), mu_bar.ncols());
    for (name, a) in [("mu_bar", mu_bar), ("sigma_bar", sigma_bar)] {
        if a.nrows() != n {
            return Err(Error::dim(format!("{name} rows"), n, a.nrows()));
        }
    }
    crate::check_mat("x", x, d)?;
    crate::check_mat("mu_bar", mu_bar, m)?;
    crate::check_mat("sigma_bar", sigma_bar, m)?;
    for r in 0..n {
        for i in 0..m {
            if sigma_bar[(r, i)] < 0.0 {
                return Err(Error::invalid(
                    format!("sigma_bar[{r}][{i}]"),
                    format!("must be >= 0, got {}", sigma_bar[(r, i)]),
                ));
            }
        }
    }
    Ok(Mat::from_fn(n, d + 2 * m, |r, j| {
        if j < d {
            x[(r, j)]
        } else if j < d + m {
            mu_bar[(r, j - d)]
        } else {
            sigma_bar[(r, j - d - m)]
        }
    }))
}

/// How [`fit_augmented`] fits Arm-𝔥.
#[derive(Debug, Clone, PartialEq)]
pub struct AugmentedFit {
    /// Noise variance `σ_η²` in the units of the `y` given (paper: 0.1 on standardised y).
    pub noise: f64,
    /// Box of the design lengthscales.
    pub lengthscale_bounds: (f64, f64),
    /// Box of α.
    pub alpha_bounds: (f64, f64),
    /// Scrambled-Sobol starts in the log box, besides the kernel's current parameters.
    pub starts: usize,
    /// L-BFGS-B settings.
    pub lbfgs: LbfgsbOptions,
}

impl Default for AugmentedFit {
    /// The paper's settings (σ_η² = 0.1, `l ∈ [0.1, 1]`, `α ∈ [0.01, 2]`) with 10 starts.
    fn default() -> Self {
        AugmentedFit {
            noise: 0.1,
            lengthscale_bounds: LENGTHSCALE_BOUNDS,
            alpha_bounds: ALPHA_BOUNDS,
            starts: 10,
            lbfgs: LbfgsbOptions::default(),
        }
    }
}

/// The result of [`fit_augmented`].
#[derive(Debug, Clone)]
pub struct AugmentedFitResult {
    /// The fitted kernel.
    pub kernel: AugmentedGibbs,
    /// A zero-mean GP with the fitted kernel and the configured noise, conditioned on the
    /// data as given (so in the units of `y`).
    pub gp: ExactGp,
    /// Maximised log marginal likelihood (Eq. 20).
    pub log_marginal_likelihood: f64,
    /// Objective evaluations over all starts.
    pub evals: usize,
}

/// Log marginal likelihood `log N(y | 0, K + noise·I)` (Eq. 20) and its gradient in the
/// kernel's log parameters (Rasmussen & Williams Eq. 5.9).
pub fn log_marginal_likelihood(
    kernel: &AugmentedGibbs,
    x: MatRef<'_, f64>,
    y: &[f64],
    noise: f64,
) -> Result<(f64, Vec<f64>)> {
    let k = kernel.gram(x);
    let (mll, _, w) = log_marginal_likelihood_parts(k.as_ref(), noise, y)?;
    Ok((mll, kernel.contract(x, w.as_ref(), k.as_ref())))
}

/// Fit Arm-𝔥's `θ_h = {l_1..l_d, α}` by maximising the log marginal likelihood (Eq. 20)
/// with multistart L-BFGS-B in the log box of `cfg`, from `kernel`'s current parameters
/// plus `cfg.starts` Sobol points (scrambled by `seed`). `x` holds augmented rows
/// ([`augment`]); pass standardised `y` to follow the paper (App. A.4.1). Errors name the
/// offending input.
pub fn fit_augmented(
    kernel: &AugmentedGibbs,
    x: MatRef<'_, f64>,
    y: &[f64],
    cfg: &AugmentedFit,
    seed: u64,
) -> Result<AugmentedFitResult> {
    if x.nrows() == 0 {
        return Err(Error::invalid("x", "needs at least one training point"));
    }
    if y.len() != x.nrows() {
        return Err(Error::dim("y", x.nrows(), y.len()));
    }
    agora_core::check_finite_slice("y", y)?;
    kernel.check_inputs("x", x)?;
    positive("noise", cfg.noise)?;
    let bounds = kernel.log_bounds_with(cfg.lengthscale_bounds, cfg.alpha_bounds)?;
    let obj = |p: &[f64], g: &mut [f64]| -> Result<f64> {
        let mut k = kernel.clone();
        k.set_params(p)?;
        let (mll, grad) = log_marginal_likelihood(&k, x, y, cfg.noise)?;
        for (gi, v) in g.iter_mut().zip(grad) {
            *gi = -v;
        }
        Ok(-mll)
    };
    let starts = optim::box_starts(&kernel.params(), &bounds, cfg.starts, seed)?;
    let minima = optim::multistart(&obj, &starts, &bounds, cfg.lbfgs)?;
    let evals = minima.iter().map(|m| m.evals).sum();
    let best =
        optim::best(&minima).ok_or_else(|| Error::Numerical("no Arm-h fit succeeded".into()))?;
    let mut fitted = kernel.clone();
    fitted.set_params(&best.x)?;
    let gp = ExactGp::new(x.to_owned(), y, Box::new(fitted.clone()), cfg.noise, 0.0)?;
    Ok(AugmentedFitResult {
        kernel: fitted,
        gp,
        log_marginal_likelihood: -best.f,
        evals,
    })
}
