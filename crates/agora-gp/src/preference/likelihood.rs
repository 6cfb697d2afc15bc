//! The comparison likelihoods (probit, BoTorch's clamped probit, Bradley–Terry) and their
//! per-comparison terms as functions of `Δ = f_w − f_l`.

use agora_math::special::{log_ndtr, log_norm_pdf};

/// The comparison likelihood.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefLikelihood {
    /// `Φ(Δ / (√2 σ))`.
    Probit,
    /// BoTorch's probit: value, slope and curvature taken at `z` clamped to `[−c, c]`
    /// (the negative log-likelihood continued linearly beyond).
    ProbitClamped(f64),
    /// `sigmoid(Δ / σ)`.
    BradleyTerry,
}

/// Per-comparison likelihood terms as functions of `Δ = f_w − f_l`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Terms {
    /// `log P` as the MAP objective sees it (continued linearly beyond a clamp).
    pub(crate) lp: f64,
    /// `log P` as the evidence uses it (at the clamped z).
    pub(crate) lp_evidence: f64,
    /// `d log P / dΔ`.
    pub(crate) r: f64,
    /// `λ = −d² log P / dΔ²` (at the clamped z).
    pub(crate) lam: f64,
    /// `dλ/dΔ` (0 beyond a clamp, where λ is constant).
    pub(crate) dlam: f64,
}

pub(crate) fn terms(lik: PrefLikelihood, delta: f64, scale: f64) -> Terms {
    match lik {
        PrefLikelihood::Probit | PrefLikelihood::ProbitClamped(_) => {
            let c = std::f64::consts::SQRT_2 * scale;
            let z = delta / c;
            let (zc, clamped) = match lik {
                PrefLikelihood::ProbitClamped(b) if z.abs() > b => (z.clamp(-b, b), true),
                _ => (z, false),
            };
            // h = φ/Φ (inverse Mills ratio), in log space for the far tail.
            let lpc = log_ndtr(zc);
            let h = (log_norm_pdf(zc) - lpc).exp();
            let d2 = -h * (h + zc); // d² log Φ / dz² (= h')
            let d3 = -(d2 * (h + zc) + h * (d2 + 1.0)); // d³ log Φ / dz³
            Terms {
                lp: lpc + h * (z - zc),
                lp_evidence: lpc,
                r: h / c,
                lam: -d2 / (c * c),
                dlam: if clamped { 0.0 } else { -d3 / (c * c * c) },
            }
        }
        PrefLikelihood::BradleyTerry => {
            let u = delta / scale;
            // log sigmoid(u) = −softplus(−u), computed stably.
            let lp = if u > 0.0 {
                -(-u).exp().ln_1p()
            } else {
                u - u.exp().ln_1p()
            };
            let s = 1.0 / (1.0 + (-u).exp()); // sigmoid(u)
            let sm = 1.0 - s; // sigmoid(−u)
            Terms {
                lp,
                lp_evidence: lp,
                r: sm / scale,
                lam: s * sm / (scale * scale),
                dlam: s * sm * (1.0 - 2.0 * s) / (scale * scale * scale),
            }
        }
    }
}
