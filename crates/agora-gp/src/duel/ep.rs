//! Expectation propagation on the duel differences (Minka 2001; R&W §3.6 with `K → C`).

use super::{DuelInfo, EpOptions, factor_b, matvec, r_apply};
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use agora_math::special::{log_ndtr, log_norm_pdf};
use faer::Mat;

/// Parallel EP with damping over the difference sites.
#[allow(clippy::type_complexity)]
pub(super) fn ep(
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
