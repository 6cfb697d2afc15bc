//! Analytic acquisitions on a Gaussian marginal `N(μ(x), σ²(x))`, with input gradients by
//! the chain rule through `(μ, σ²)`.
//!
//! With `σ = √max(σ², 1e-12)` and `u = (μ − f*)/σ` (maximization), `h(u) = φ(u) + uΦ(u)`:
//! - EI (Jones et al. 1998): `σ h(u)`;
//! - LogEI (Ament et al. 2023, Eq. 9): `log σ + log h(u)`, finite for any `u`;
//! - PI (Kushner 1964): `Φ(u)`;
//! - UCB (Srinivas et al. 2010): `μ + √β σ`.
//!
//! EUBO for a pair (Lin et al. 2022, Eq. 4) is here as a function of the pair's joint
//! moments: `E[max(f₀, f₁)] = s h((m₀ − m₁)/s) + m₁`, `s² = Var(f₀ − f₁)` floored at 1e-8.

use crate::{Acquisition, Model};
use agora_core::Result;
use agora_math::special::{h, log_h, log_ndtr, log_norm_pdf, norm_cdf, norm_pdf};
use faer::MatRef;

/// Variance floor of the single-point acquisitions (σ ≥ 1e-6), as in BoTorch.
pub const VAR_FLOOR: f64 = 1e-12;
/// Floor on `Var(f₀ − f₁)` for EUBO (s ≥ 1e-4), as in BoTorch.
pub const EUBO_VAR_FLOOR: f64 = 1e-8;

/// Which analytic acquisition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AnalyticKind {
    /// Expected improvement over `best_f`.
    Ei {
        /// Incumbent value.
        best_f: f64,
    },
    /// Log expected improvement over `best_f`.
    LogEi {
        /// Incumbent value.
        best_f: f64,
    },
    /// Probability of improvement over `best_f`.
    Pi {
        /// Incumbent value.
        best_f: f64,
    },
    /// Upper confidence bound `μ + √β σ`.
    Ucb {
        /// Exploration weight β.
        beta: f64,
    },
}

impl AnalyticKind {
    /// The value alone at moments `(μ, σ²)`: the first entry of
    /// [`AnalyticKind::on_moments`], without its derivatives (what scoring many points needs).
    pub fn value(self, mean: f64, var: f64) -> f64 {
        let sd = var.max(VAR_FLOOR).sqrt();
        match self {
            AnalyticKind::Ei { best_f } => sd * h((mean - best_f) / sd),
            AnalyticKind::LogEi { best_f } => sd.ln() + log_h((mean - best_f) / sd),
            AnalyticKind::Pi { best_f } => norm_cdf((mean - best_f) / sd),
            AnalyticKind::Ucb { beta } => mean + beta.max(0.0).sqrt() * sd,
        }
    }

    /// Value and partial derivatives `(a, ∂a/∂μ, ∂a/∂σ²)` at moments `(μ, σ²)`.
    pub fn on_moments(self, mean: f64, var: f64) -> (f64, f64, f64) {
        let floored = var < VAR_FLOOR;
        let sd = var.max(VAR_FLOOR).sqrt();
        // ∂σ/∂σ² (zero on the floor).
        let dsd = if floored { 0.0 } else { 0.5 / sd };
        match self {
            AnalyticKind::Ei { best_f } => {
                let u = (mean - best_f) / sd;
                // ∂EI/∂μ = Φ(u), ∂EI/∂σ = φ(u).
                (sd * h(u), norm_cdf(u), norm_pdf(u) * dsd)
            }
            AnalyticKind::LogEi { best_f } => {
                let u = (mean - best_f) / sd;
                let lh = log_h(u);
                // h'(u) = Φ(u): ∂/∂μ = Φ(u)/(h σ); ∂/∂σ = φ(u)/(h σ). Ratios in log space.
                let r_cdf = (log_ndtr(u) - lh).exp();
                let r_pdf = (log_norm_pdf(u) - lh).exp();
                (sd.ln() + lh, r_cdf / sd, r_pdf / sd * dsd)
            }
            AnalyticKind::Pi { best_f } => {
                let u = (mean - best_f) / sd;
                let p = norm_pdf(u);
                (norm_cdf(u), p / sd, -u * p / sd * dsd)
            }
            AnalyticKind::Ucb { beta } => {
                let b = beta.max(0.0).sqrt();
                (mean + b * sd, 1.0, b * dsd)
            }
        }
    }
}

/// Analytic EUBO of a pair from its joint moments: `E[max(f₀, f₁)]`.
pub fn eubo_on_moments(m0: f64, m1: f64, cov: [[f64; 2]; 2]) -> f64 {
    let s = (cov[0][0] + cov[1][1] - cov[0][1] - cov[1][0])
        .max(EUBO_VAR_FLOOR)
        .sqrt();
    s * h((m0 - m1) / s) + m1
}

/// An analytic acquisition on a model.
pub struct Analytic<'m, M: Model + ?Sized> {
    /// The model.
    pub model: &'m M,
    /// The acquisition.
    pub kind: AnalyticKind,
}

impl<M: Model + ?Sized> Acquisition for Analytic<'_, M> {
    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
        match grad {
            None => {
                let xm = faer::Mat::from_fn(1, x.len(), |_, j| x[j]);
                let (m, v) = self.model.predict(xm.as_ref())?;
                Ok(self.kind.value(m[0], v[0]))
            }
            Some(g) => {
                let (m, v, dm, dv) = self.model.predict_with_grad(x)?;
                let (a, da_dm, da_dv) = self.kind.on_moments(m, v);
                for (j, gj) in g.iter_mut().enumerate() {
                    *gj = da_dm * dm[j] + da_dv * dv[j];
                }
                Ok(a)
            }
        }
    }

    fn values(&self, xs: MatRef<'_, f64>) -> Result<Vec<f64>> {
        let (m, v) = self.model.predict(xs)?;
        Ok(m.iter()
            .zip(&v)
            .map(|(m, v)| self.kind.value(*m, *v))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_math::fd::{Tol, check_gradient};

    #[test]
    fn moment_derivatives_match_finite_differences() {
        for kind in [
            AnalyticKind::Ei { best_f: 0.3 },
            AnalyticKind::LogEi { best_f: 0.3 },
            AnalyticKind::LogEi { best_f: 40.0 },
            AnalyticKind::Pi { best_f: 0.3 },
            AnalyticKind::Ucb { beta: 2.0 },
        ] {
            for (m, v) in [(0.1, 0.04), (0.5, 0.2), (-1.0, 0.5)] {
                let (_, dm, dv) = kind.on_moments(m, v);
                let on = |z: &[f64]| kind.on_moments(z[0], z[1]).0;
                let what = format!("{kind:?} at (μ, σ²) = ({m}, {v})");
                check_gradient(
                    on,
                    &[m, v],
                    1e-6,
                    &[dm, dv],
                    Tol::ScaledByAnalytic(1e-6),
                    &what,
                );
            }
        }
    }

    #[test]
    fn value_alone_is_the_value_of_on_moments() {
        for kind in [
            AnalyticKind::Ei { best_f: 0.3 },
            AnalyticKind::LogEi { best_f: 0.3 },
            AnalyticKind::LogEi { best_f: 40.0 },
            AnalyticKind::Pi { best_f: 0.3 },
            AnalyticKind::Ucb { beta: 2.0 },
            AnalyticKind::Ucb { beta: -1.0 },
        ] {
            for (m, v) in [
                (0.1, 0.04),
                (0.5, 0.2),
                (-1.0, 0.5),
                (0.2, 0.0),
                (0.3, 1e-13),
            ] {
                let a = kind.value(m, v);
                let b = kind.on_moments(m, v).0;
                assert_eq!(a.to_bits(), b.to_bits(), "{kind:?} at ({m}, {v})");
            }
        }
    }

    #[test]
    fn log_ei_is_log_of_ei_where_both_are_finite() {
        for u in [-30.0, -10.0, -3.0, -0.5, 0.0, 0.7, 4.0] {
            let (m, v) = (u * 0.3, 0.09);
            let ei = AnalyticKind::Ei { best_f: 0.0 }.on_moments(m, v).0;
            let lei = AnalyticKind::LogEi { best_f: 0.0 }.on_moments(m, v).0;
            assert!(
                (ei.ln() - lei).abs() < 1e-12 * (1.0 + lei.abs()),
                "u {u}: {} vs {lei}",
                ei.ln()
            );
        }
    }

    #[test]
    fn eubo_is_expected_max_by_quadrature() {
        // E[max(f0, f1)] for a bivariate normal by brute-force 2-D quadrature.
        let (m0, m1): (f64, f64) = (0.3, -0.1);
        let cov: [[f64; 2]; 2] = [[0.5, 0.2], [0.2, 0.8]];
        let l00 = cov[0][0].sqrt();
        let l10 = cov[1][0] / l00;
        let l11 = (cov[1][1] - l10 * l10).sqrt();
        let (n, lim) = (1200, 8.0);
        let step = 2.0 * lim / n as f64;
        let mut acc = 0.0;
        for i in 0..n {
            let z0 = -lim + (i as f64 + 0.5) * step;
            for j in 0..n {
                let z1 = -lim + (j as f64 + 0.5) * step;
                let w = norm_pdf(z0) * norm_pdf(z1) * step * step;
                let f0 = m0 + l00 * z0;
                let f1 = m1 + l10 * z0 + l11 * z1;
                acc += w * f0.max(f1);
            }
        }
        assert!(
            (eubo_on_moments(m0, m1, cov) - acc).abs() < 1e-6,
            "{} vs {acc}",
            eubo_on_moments(m0, m1, cov)
        );
    }
}
