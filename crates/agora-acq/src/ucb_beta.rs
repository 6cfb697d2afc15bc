//! Schedules of GP-UCB's exploration weight `β_t` in `μ + √β_t σ` (Srinivas et al. 2010,
//! Theorem 2; DSBO paper, App. G). The UCB itself is [`crate::AnalyticKind::Ucb`].

use agora_core::{Error, Result};

/// The exploration weight `β_t` of GP-UCB (`μ + √β_t σ`), at `t̃ = 1, 2, …` (the number of
/// GP-UCB picks so far, this one included). Formula values are clamped at 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Beta {
    /// A constant `β`.
    Constant(f64),
    /// DSBO App. G, as printed:
    /// `2 log(t̃² 2π²/(3δ6²)) + 2D log(t̃² D b r √(log(4Da/δ6)))`.
    AppG {
        /// `δ6 ∈ (0, 1)`.
        delta: f64,
        /// Lipschitz-tail constant `a > 0` of the sample paths.
        a: f64,
        /// Lipschitz-tail constant `b > 0`.
        b: f64,
        /// Side of the box `[0, r]^D`, `r > 0`.
        r: f64,
    },
    /// Srinivas et al. (2010), Theorem 2 (the same form with `δ` where App. G has `δ6²`):
    /// `2 log(t² 2π²/(3δ)) + 2d log(t² d b r √(log(4da/δ)))`.
    Srinivas {
        /// `δ ∈ (0, 1)`.
        delta: f64,
        /// Constant `a > 0`.
        a: f64,
        /// Constant `b > 0`.
        b: f64,
        /// Box side `r > 0`.
        r: f64,
    },
}

impl Beta {
    /// Check the constants; errors name the field.
    pub fn validate(&self) -> Result<()> {
        match *self {
            Beta::Constant(b) => {
                if !(b.is_finite() && b >= 0.0) {
                    return Err(Error::invalid(
                        "beta",
                        format!("must be a finite number >= 0, got {b}"),
                    ));
                }
            }
            Beta::AppG { delta, a, b, r } | Beta::Srinivas { delta, a, b, r } => {
                if !(delta > 0.0 && delta < 1.0) {
                    return Err(Error::invalid(
                        "beta.delta",
                        format!("must lie in (0, 1), got {delta}"),
                    ));
                }
                for (name, v) in [("beta.a", a), ("beta.b", b), ("beta.r", r)] {
                    if !(v.is_finite() && v > 0.0) {
                        return Err(Error::invalid(
                            name,
                            format!("must be a positive finite number, got {v}"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// `β_t` at pick `t` (`t = 0` is treated as 1) in `dim` dimensions.
    pub fn at(&self, t: usize, dim: usize) -> f64 {
        let t = t.max(1) as f64;
        let d = dim as f64;
        let pi2 = std::f64::consts::PI * std::f64::consts::PI;
        let tail = |delta: f64, a: f64, b: f64, r: f64| {
            let inner = (4.0 * d * a / delta).ln().max(0.0).sqrt();
            2.0 * d * (t * t * d * b * r * inner).ln()
        };
        let v = match *self {
            Beta::Constant(b) => b,
            Beta::AppG { delta, a, b, r } => {
                2.0 * (t * t * 2.0 * pi2 / (3.0 * delta * delta)).ln() + tail(delta, a, b, r)
            }
            Beta::Srinivas { delta, a, b, r } => {
                2.0 * (t * t * 2.0 * pi2 / (3.0 * delta)).ln() + tail(delta, a, b, r)
            }
        };
        if v.is_nan() { 0.0 } else { v.max(0.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn beta_formulas_match_hand_computed_values() {
        // Python 3: 2*math.log(t*t*2*math.pi**2/(3*d*d)) + 2*D*math.log(t*t*D*b*r*math.sqrt(math.log(4*D*a/d))).
        let g = Beta::AppG {
            delta: 0.1,
            a: 1.0,
            b: 1.0,
            r: 1.0,
        };
        assert!(close(g.at(3, 2), 31.88928852412483, 1e-13));
        let s = Beta::Srinivas {
            delta: 0.1,
            a: 1.0,
            b: 1.0,
            r: 1.0,
        };
        assert!(close(s.at(3, 2), 27.284118338136743, 1e-13));
        let g = Beta::AppG {
            delta: 0.05,
            a: 2.0,
            b: 0.5,
            r: 1.5,
        };
        assert!(close(g.at(10, 5), 93.72955969177963, 1e-13));
        assert_eq!(g.at(0, 5), g.at(1, 5));
        assert_eq!(Beta::Constant(0.7).at(99, 500), 0.7);
        assert!(Beta::Constant(-1.0).validate().is_err());
        assert!(
            Beta::AppG {
                delta: 1.5,
                a: 1.0,
                b: 1.0,
                r: 1.0
            }
            .validate()
            .is_err()
        );
    }
}
