//! The hyperparameter fit: log evidence plus log hyperpriors, by L-BFGS-B in log space.

use super::{Comparison, PrefLikelihood, PreferenceGp};
use crate::kernel::{Kernel, ParamKind, Scale, Stationary, StationaryKind};
use crate::prior::Prior;
use agora_core::{Error, Result};
use agora_math::optim::{self, LbfgsbOptions};
use faer::Mat;

/// How a [`PreferenceGp`]'s hyperparameters are fitted: maximize log evidence plus log
/// hyperpriors with L-BFGS-B in log space.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefConfig {
    /// Radial profile of the ARD kernel (wrapped in an output scale).
    pub kernel: StationaryKind,
    /// The likelihood.
    pub likelihood: PrefLikelihood,
    /// Prior on each lengthscale.
    pub lengthscale_prior: Prior,
    /// Prior on the output scale.
    pub outputscale_prior: Prior,
    /// Lengthscale bounds.
    pub lengthscale_bounds: (f64, f64),
    /// Output-scale bounds.
    pub outputscale_bounds: (f64, f64),
    /// Starting lengthscale.
    pub init_lengthscale: f64,
    /// Starting output scale.
    pub init_outputscale: f64,
    /// L-BFGS-B settings.
    pub optimizer: LbfgsbOptions,
    /// Variance added to the prior covariance of the utilities at the compared points
    /// (`K + nugget·I`; BOAP's rank GPs use `σ̃² = 0.1`), not to covariances with new
    /// points. 0 in BoTorch's model.
    pub nugget: f64,
    /// When warm-started, also optimize from the configured starting values and keep the
    /// better optimum (the evidence is not concave in the hyperparameters: a warm start
    /// can stay in a flat mode the data have left). Off in BoTorch's model.
    pub restart_from_init: bool,
}

impl PrefConfig {
    /// BoTorch 0.18 `PairwiseGP` defaults (RESULTS.md §2): scaled RBF ARD, lengthscale
    /// prior Gamma(2.4, 2.7) with `l ≥ 1e-4` and start at its mode 0.5185, output scale
    /// SmoothedBoxPrior(0.01, 100, 0.01) on `[0.005, 200]` starting at 1, probit
    /// likelihood (unclamped: see the module docs), scipy's L-BFGS-B defaults.
    pub fn botorch() -> PrefConfig {
        PrefConfig {
            kernel: StationaryKind::Rbf,
            likelihood: PrefLikelihood::Probit,
            lengthscale_prior: Prior::Gamma {
                alpha: 2.4,
                beta: 2.7,
            },
            outputscale_prior: Prior::SmoothedBox {
                a: 0.01,
                b: 100.0,
                sigma: 0.01,
            },
            lengthscale_bounds: (1e-4, 1e3),
            outputscale_bounds: (0.005, 200.0),
            init_lengthscale: 1.4 / 2.7,
            init_outputscale: 1.0,
            optimizer: LbfgsbOptions::default(),
            nugget: 0.0,
            restart_from_init: false,
        }
    }

    /// The kernel at its starting values.
    pub fn build_kernel(&self, d: usize) -> Box<dyn Kernel> {
        Box::new(Scale::new(
            Box::new(Stationary::ard(self.kernel, d, self.init_lengthscale)),
            self.init_outputscale,
        ))
    }
}

/// What a preference-GP fit did.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefFitReport {
    /// Final `−(log evidence + log hyperpriors)`.
    pub loss: f64,
    /// Evidence evaluations.
    pub evals: usize,
}

impl PreferenceGp {
    /// Fit kernel hyperparameters by maximizing the Laplace evidence plus hyperpriors, from
    /// `warm` (kernel log-parameters) when given, else from the configured start; every
    /// evaluation warm-starts Newton from the last mode.
    pub fn fit(
        x: Mat<f64>,
        comps: Vec<Comparison>,
        cfg: &PrefConfig,
        warm: Option<&[f64]>,
    ) -> Result<(PreferenceGp, PrefFitReport)> {
        let d = x.ncols();
        let kernel = cfg.build_kernel(d);
        let kinds = kernel.param_kinds();
        let bounds: Vec<(f64, f64)> = kinds
            .iter()
            .map(|k| {
                let (lo, hi) = match k {
                    ParamKind::Lengthscale => cfg.lengthscale_bounds,
                    ParamKind::Outputscale => cfg.outputscale_bounds,
                };
                (lo.ln(), hi.ln())
            })
            .collect();
        // Validate once with the starting kernel (clear errors before optimizing).
        let first = PreferenceGp::with_nugget(
            x.clone(),
            comps.clone(),
            kernel.clone(),
            cfg.likelihood,
            (0.0, None),
            cfg.nugget,
        )?;
        let last_f = std::sync::Mutex::new(first.f.clone());
        let objective = |p: &[f64], grad: &mut [f64]| -> Result<f64> {
            let mut k = kernel.clone();
            k.set_params(p)?;
            let start = last_f.lock().map(|f| f.clone()).ok();
            let gp = PreferenceGp::with_nugget(
                x.clone(),
                comps.clone(),
                k,
                cfg.likelihood,
                (0.0, start.as_deref()),
                cfg.nugget,
            )?;
            if let Ok(mut f) = last_f.lock() {
                f.clone_from(&gp.f);
            }
            let ge = gp.log_evidence_grad();
            let mut lp = 0.0;
            for (i, kind) in kinds.iter().enumerate() {
                let prior = match kind {
                    ParamKind::Lengthscale => cfg.lengthscale_prior,
                    ParamKind::Outputscale => cfg.outputscale_prior,
                };
                let (l, dl) = prior.log_density_grad(p[i]);
                lp += l;
                grad[i] = -(ge[i] + dl);
            }
            Ok(-(gp.log_evidence + lp))
        };
        let clamp = |v: Vec<f64>| -> Vec<f64> {
            v.iter()
                .zip(&bounds)
                .map(|(x, (l, h))| x.clamp(*l, *h))
                .collect()
        };
        // The warm start when given (consecutive fits in a study change little), then the
        // configured initial values if asked for (or when there is no warm start).
        let init = clamp(kernel.params());
        let starts = match warm {
            Some(w) if w.len() == kinds.len() && w.iter().all(|v| v.is_finite()) => {
                let w = clamp(w.to_vec());
                if cfg.restart_from_init && w != init {
                    vec![w, init]
                } else {
                    vec![w]
                }
            }
            _ => vec![init],
        };
        let mut best: Option<optim::Minimum> = None;
        let mut evals = 0;
        for s in &starts {
            // Sequential: each evaluation warm-starts the mode from the previous one.
            let m = optim::minimize(&objective, s, &bounds, cfg.optimizer)?;
            evals += m.evals;
            if best.as_ref().is_none_or(|b| m.f < b.f) {
                best = Some(m);
            }
        }
        let best = best.ok_or_else(|| Error::Numerical("preference GP fit failed".into()))?;
        let mut k = kernel;
        k.set_params(&best.x)?;
        let start = last_f.lock().map(|f| f.clone()).ok();
        let gp = PreferenceGp::with_nugget(
            x,
            comps,
            k,
            cfg.likelihood,
            (0.0, start.as_deref()),
            cfg.nugget,
        )?;
        Ok((
            gp,
            PrefFitReport {
                loss: best.f,
                evals,
            },
        ))
    }
}
