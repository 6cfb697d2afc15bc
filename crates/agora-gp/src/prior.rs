//! Priors over positive hyperparameters (lengthscales, output scales, noise variances).
//!
//! Densities are over the value `θ > 0` itself, not over `log θ`, as in GPyTorch. The
//! optimizer moves in `p = log θ` without a Jacobian term, so the MAP point is the same
//! one GPyTorch finds when it optimizes `θ` directly.

use agora_math::special::ln_gamma;
use serde::{Deserialize, Serialize};

/// A prior density on a positive hyperparameter.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Prior {
    /// No prior (flat in θ).
    None,
    /// `log θ ~ N(mu, sigma²)`.
    LogNormal {
        /// Mean of `log θ`.
        mu: f64,
        /// Standard deviation of `log θ`.
        sigma: f64,
    },
    /// Gamma with shape `alpha` and rate `beta`.
    Gamma {
        /// Shape.
        alpha: f64,
        /// Rate.
        beta: f64,
    },
    /// GPyTorch's `SmoothedBoxPrior(a, b, sigma)`: flat on `[a, b]`, Gaussian tails of
    /// width `sigma` outside; `log p = log N(dist; 0, sigma²) − log(1 + (b − a)/(√(2π) sigma))`
    /// with `dist` the distance from θ to `[a, b]`.
    SmoothedBox {
        /// Lower end of the flat part.
        a: f64,
        /// Upper end of the flat part.
        b: f64,
        /// Tail width.
        sigma: f64,
    },
    /// Optuna's GPSampler heuristic prior on a lengthscale `l` through the inverse squared
    /// lengthscale `ι = 1/l²`: `log p = −(0.1/ι + 0.1·ι)` (unnormalized).
    OptunaInvSqLengthscale,
}

impl Prior {
    /// `(log p(θ), d log p / d log θ)` at `θ = exp(p)`.
    pub fn log_density_grad(&self, p: f64) -> (f64, f64) {
        let theta = p.exp();
        match *self {
            Prior::None => (0.0, 0.0),
            Prior::LogNormal { mu, sigma } => {
                let z = (p - mu) / sigma;
                let lp = -p - sigma.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln() - 0.5 * z * z;
                (lp, -1.0 - z / sigma)
            }
            Prior::Gamma { alpha, beta } => {
                let lp = alpha * beta.ln() - ln_gamma(alpha) + (alpha - 1.0) * p - beta * theta;
                (lp, (alpha - 1.0) - beta * theta)
            }
            Prior::SmoothedBox { a, b, sigma } => {
                let dist = if theta < a {
                    a - theta
                } else if theta > b {
                    theta - b
                } else {
                    0.0
                };
                let ln_norm = -0.5 * (2.0 * std::f64::consts::PI).ln() - sigma.ln();
                let lp = ln_norm
                    - 0.5 * (dist / sigma).powi(2)
                    - (1.0 + (b - a) / ((2.0 * std::f64::consts::PI).sqrt() * sigma)).ln();
                // d dist / dθ = −1 below a, +1 above b.
                let ddist = if theta < a {
                    -1.0
                } else if theta > b {
                    1.0
                } else {
                    0.0
                };
                (lp, -(dist / (sigma * sigma)) * ddist * theta)
            }
            Prior::OptunaInvSqLengthscale => {
                let iota = (-2.0 * p).exp();
                // d iota / dp = -2 iota
                let lp = -(0.1 / iota + 0.1 * iota);
                let dlp_diota = 0.1 / (iota * iota) - 0.1;
                (lp, dlp_diota * (-2.0 * iota))
            }
        }
    }

    /// The mode of θ (a natural starting value), if the prior has one.
    pub fn mode(&self) -> Option<f64> {
        match *self {
            Prior::LogNormal { mu, sigma } => Some((mu - sigma * sigma).exp()),
            Prior::Gamma { alpha, beta } if alpha >= 1.0 => Some((alpha - 1.0) / beta),
            Prior::OptunaInvSqLengthscale => Some(1.0),
            _ => None,
        }
    }

    /// A draw of `log θ` for a multistart (a wide default when the prior is flat).
    pub fn sample_log<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        use rand_distr::{Distribution, Gamma, Normal};
        match *self {
            Prior::LogNormal { mu, sigma } => Normal::new(mu, sigma).map_or(mu, |n| n.sample(rng)),
            Prior::Gamma { alpha, beta } => {
                Gamma::new(alpha, 1.0 / beta).map_or(0.0, |g| g.sample(rng).max(1e-12).ln())
            }
            Prior::SmoothedBox { a, b, .. } => {
                use rand::RngExt;
                let (la, lb) = (a.max(1e-12).ln(), b.max(a * 1.0001).ln());
                la + rng.random::<f64>() * (lb - la)
            }
            Prior::OptunaInvSqLengthscale | Prior::None => {
                Normal::new(0.0, 1.0).map_or(0.0, |n| n.sample(rng))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_math::fd::{Tol, assert_gradient, fd_derivative};

    #[test]
    fn densities_match_closed_forms_and_gradients_match_differences() {
        // LogNormal(0, 1) at θ = 1: 1/sqrt(2π).
        let (lp, _) = Prior::LogNormal {
            mu: 0.0,
            sigma: 1.0,
        }
        .log_density_grad(0.0);
        assert!((lp - (-(0.5 * (2.0 * std::f64::consts::PI).ln()))).abs() < 1e-14);
        // Gamma(2, 1) at θ = 1: θ e^{-θ} = e^{-1}.
        let (lp, _) = Prior::Gamma {
            alpha: 2.0,
            beta: 1.0,
        }
        .log_density_grad(0.0);
        assert!((lp + 1.0).abs() < 1e-13);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-13);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
        for prior in [
            Prior::LogNormal {
                mu: 1.2,
                sigma: 1.7,
            },
            Prior::Gamma {
                alpha: 2.4,
                beta: 2.7,
            },
            Prior::OptunaInvSqLengthscale,
            Prior::SmoothedBox {
                a: 0.5,
                b: 2.0,
                sigma: 0.3,
            },
        ] {
            for p in [-2.0, -0.3, 0.4, 1.5] {
                let fd = fd_derivative(|q| prior.log_density_grad(q).0, p, 1e-6);
                let g = prior.log_density_grad(p).1;
                let what = format!("{prior:?} at {p}");
                assert_gradient(&[g], &[fd], Tol::ScaledByAnalytic(1e-6), &what);
            }
        }
        // BoTorch's lengthscale prior mode for d = 6 (RESULTS.md §1): 0.50162.
        let mu = 2f64.sqrt() + 0.5 * 6f64.ln();
        let m = Prior::LogNormal {
            mu,
            sigma: 3f64.sqrt(),
        }
        .mode()
        .unwrap();
        assert!((m - 0.5016229).abs() < 1e-6);
    }
}
