//! The lengthscale (and optionally bandwidth) fit by Laplace evidence.

use super::{Duels, laplace_evidence};
use crate::anchor::NoiseModel;
use crate::kernel::Kernel;
use agora_core::Result;
use agora_math::optim::{self, LbfgsbOptions};

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
    if fit_h {
        let (hlo, hhi) = crate::anchor::BANDWIDTH_RANGE;
        bounds.push((hlo.ln(), hhi.ln()));
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
    let mut first = kernel.params();
    if fit_h {
        first.push(noise.kde().map(|k| k.bandwidth()).unwrap_or(0.1).ln());
    }
    let starts = optim::box_starts(&first, &bounds, cfg.starts, seed)?;
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
