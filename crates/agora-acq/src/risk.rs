//! Risk-averse acquisitions for a person whose judgement noise `σ²_ε(x)` depends on the
//! input (heteroscedastic PBO, Sinaga et al. 2024, §3.4):
//!
//! - ANPEI (Griffiths et al. 2021): `EI(x) − γ·σ_ε(x)`, with EI for maximization
//!   `(μ − μ*)Φ(u) + σφ(u)`, `u = (μ − μ*)/σ`. The paper's Eq. 10 prints the improvement
//!   reversed, `E[(f(x*) − f(x))₊]` (\[ERRATUM\], docs/notes/heteroscedastic-pbo.md §3);
//!   agora uses the maximization form. The penalty is the noise *standard deviation*.
//! - RAHBO (Makarova et al. 2021): `μ + η σ − γ σ²_ε(x)`.
//! - The risk-neutral baselines EI (`γ = 0`) and UCB `μ + η σ`.
//!
//! `μ, σ` are the latent posterior moments of the utility (noise-free, note §9.11); `μ*` is
//! the largest posterior mean over the points queried so far (note §3).

use crate::analytic::AnalyticKind;
use crate::{Acquisition, Model};
use agora_core::{Error, Result};
use agora_gp::NoiseModel;

/// Which risk-aware acquisition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RiskKind {
    /// Expected improvement over the incumbent.
    Ei,
    /// `μ + η σ`.
    Ucb {
        /// Exploration weight η.
        eta: f64,
    },
    /// `EI − γ σ_ε`.
    Anpei {
        /// Noise penalty γ.
        gamma: f64,
    },
    /// `μ + η σ − γ σ²_ε`.
    Rahbo {
        /// Exploration weight η.
        eta: f64,
        /// Noise penalty γ.
        gamma: f64,
    },
}

impl RiskKind {
    /// Parse `ei`, `ucb`, `anpei` or `rahbo` with the given weights.
    pub fn parse(s: &str, eta: f64, gamma: f64) -> Result<RiskKind> {
        for (name, v) in [("eta", eta), ("gamma", gamma)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::invalid(
                    name,
                    format!("must be a finite number >= 0, got {v}"),
                ));
            }
        }
        match s {
            "ei" => Ok(RiskKind::Ei),
            "ucb" => Ok(RiskKind::Ucb { eta }),
            "anpei" => Ok(RiskKind::Anpei { gamma }),
            "rahbo" => Ok(RiskKind::Rahbo { eta, gamma }),
            _ => Err(Error::invalid(
                "acquisition",
                format!("unknown acquisition `{s}`; allowed: anpei, rahbo, ei, ucb"),
            )),
        }
    }

    /// Short name.
    pub fn name(&self) -> &'static str {
        match self {
            RiskKind::Ei => "ei",
            RiskKind::Ucb { .. } => "ucb",
            RiskKind::Anpei { .. } => "anpei",
            RiskKind::Rahbo { .. } => "rahbo",
        }
    }

    /// Value and partials `(α, ∂α/∂μ, ∂α/∂σ², ∂α/∂σ²_ε)` at latent moments `(μ, σ²)`, noise
    /// variance `σ²_ε` and incumbent `μ*`.
    pub fn on_moments(self, mean: f64, var: f64, noise_var: f64, incumbent: f64) -> [f64; 4] {
        match self {
            RiskKind::Ei => {
                let (a, dm, dv) = AnalyticKind::Ei { best_f: incumbent }.on_moments(mean, var);
                [a, dm, dv, 0.0]
            }
            RiskKind::Ucb { eta } => {
                let (a, dm, dv) = AnalyticKind::Ucb { beta: eta * eta }.on_moments(mean, var);
                [a, dm, dv, 0.0]
            }
            RiskKind::Anpei { gamma } => {
                let (a, dm, dv) = AnalyticKind::Ei { best_f: incumbent }.on_moments(mean, var);
                let sd = noise_var.max(0.0).sqrt();
                let dn = if sd > 0.0 { -gamma * 0.5 / sd } else { 0.0 };
                [a - gamma * sd, dm, dv, dn]
            }
            RiskKind::Rahbo { eta, gamma } => {
                let (a, dm, dv) = AnalyticKind::Ucb { beta: eta * eta }.on_moments(mean, var);
                [a - gamma * noise_var, dm, dv, -gamma]
            }
        }
    }
}

/// A risk-aware acquisition over a model and a noise model (both on the unit cube).
pub struct RiskAverse<'a> {
    /// The utility model.
    pub model: &'a dyn Model,
    /// The person's noise variance.
    pub noise: &'a NoiseModel,
    /// Which acquisition.
    pub kind: RiskKind,
    /// `μ*` for EI and ANPEI.
    pub incumbent: f64,
}

impl Acquisition for RiskAverse<'_> {
    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
        let (m, v, gm, gv) = self.model.predict_with_grad(x)?;
        let (nv, gn) = self.noise.variance_grad(x);
        let [a, dm, dv, dn] = self.kind.on_moments(m, v, nv, self.incumbent);
        if let Some(g) = grad {
            for j in 0..x.len() {
                g[j] = dm * gm[j] + dv * gv[j] + dn * gn[j];
            }
        }
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_gp::{AnchorKde, DuelGp, DuelInference, Duels, Stationary, StationaryKind};
    use agora_math::fd::{Tol, check_gradient};
    use faer::Mat;

    #[test]
    fn formulas_on_fixed_inputs() {
        // μ = 0.3, σ² = 0.25, σ²_ε = 0.04, μ* = 0.1. EI = 0.2 Φ(0.4) + 0.5 φ(0.4)
        // = 0.315219... (scipy: 0.2*norm.cdf(.4)+.5*norm.pdf(.4)).
        let ei = 0.2 * 0.655_421_741_610_324_2 + 0.5 * 0.368_270_140_303_323_1;
        let v = RiskKind::Ei.on_moments(0.3, 0.25, 0.04, 0.1)[0];
        assert!((v - ei).abs() < 1e-12, "{v} vs {ei}");
        let v = RiskKind::Anpei { gamma: 1.5 }.on_moments(0.3, 0.25, 0.04, 0.1)[0];
        assert!((v - (ei - 1.5 * 0.2)).abs() < 1e-12);
        let v = RiskKind::Ucb { eta: 2.0 }.on_moments(0.3, 0.25, 0.04, 0.1)[0];
        assert!((v - 1.3).abs() < 1e-12);
        let v = RiskKind::Rahbo {
            eta: 2.0,
            gamma: 3.0,
        }
        .on_moments(0.3, 0.25, 0.04, 0.1)[0];
        assert!((v - (1.3 - 0.12)).abs() < 1e-12);
        // γ = 0 reduces to the risk-neutral ones.
        assert_eq!(
            RiskKind::Anpei { gamma: 0.0 }.on_moments(0.3, 0.25, 0.04, 0.1)[0],
            RiskKind::Ei.on_moments(0.3, 0.25, 0.04, 0.1)[0]
        );
        assert_eq!(
            RiskKind::Rahbo {
                eta: 2.0,
                gamma: 0.0
            }
            .on_moments(0.3, 0.25, 0.04, 0.1)[0],
            RiskKind::Ucb { eta: 2.0 }.on_moments(0.3, 0.25, 0.04, 0.1)[0]
        );
        assert!(
            RiskKind::parse("pi", 2.0, 1.0)
                .unwrap_err()
                .to_string()
                .contains("anpei, rahbo, ei, ucb")
        );
        assert!(
            RiskKind::parse("ucb", -1.0, 1.0)
                .unwrap_err()
                .to_string()
                .contains("eta")
        );
    }

    #[test]
    fn gradients_match_finite_differences_through_model_and_noise() {
        let w = Mat::from_fn(3, 2, |i, j| [[0.1, 0.2], [0.7, 0.6], [0.4, 0.9]][i][j]);
        let l = Mat::from_fn(3, 2, |i, j| [[0.4, 0.4], [0.9, 0.1], [0.7, 0.6]][i][j]);
        let kde = AnchorKde::new(
            Mat::from_fn(2, 2, |i, j| [[0.3, 0.3], [0.5, 0.6]][i][j]),
            0.2,
        )
        .unwrap();
        let noise = NoiseModel::anchors(0.8, kde).unwrap();
        let gp = DuelGp::new(
            Box::new(Stationary::ard(StationaryKind::Rbf, 2, 0.3)),
            Duels::new(w, l).unwrap(),
            &noise,
            DuelInference::Laplace,
            &mut agora_math::rng::stream(0, &[0]),
        )
        .unwrap();
        for kind in [
            RiskKind::Ei,
            RiskKind::Ucb { eta: 2.0 },
            RiskKind::Anpei { gamma: 1.0 },
            RiskKind::Rahbo {
                eta: 2.0,
                gamma: 1.0,
            },
        ] {
            let acq = RiskAverse {
                model: &gp,
                noise: &noise,
                kind,
                incumbent: 0.05,
            };
            let x = [0.42, 0.37];
            let mut g = [0.0; 2];
            acq.value_grad(&x, Some(&mut g)).unwrap();
            let value = |z: &[f64]| acq.value_grad(z, None).unwrap();
            check_gradient(value, &x, 1e-6, &g, Tol::Abs(1e-6), &format!("{kind:?}"));
        }
    }
}
