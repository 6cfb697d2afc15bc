//! Laplace inference on the duel differences (R&W Alg. 3.1 with `K → C`) and its evidence
//! with the exact hyperparameter gradient (R&W Alg. 5.1), plus the `B = I + √τ C √τ`
//! algebra every inference shares.

use super::Duels;
use crate::kernel::Kernel;
use crate::preference::{PrefLikelihood, terms};
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use faer::Mat;

fn probit(delta: f64, s2: f64) -> crate::preference::Terms {
    terms(PrefLikelihood::Probit, delta, (0.5 * s2).sqrt())
}

/// `B = I + √τ C √τ`, factored.
pub(super) fn factor_b(c: &Mat<f64>, sqrt_tau: &[f64]) -> Result<Cholesky> {
    let m = c.nrows();
    let b = Mat::from_fn(m, m, |i, j| {
        sqrt_tau[i] * c[(i, j)] * sqrt_tau[j] + if i == j { 1.0 } else { 0.0 }
    });
    Cholesky::new(b.as_ref())
}

pub(super) fn matvec(a: &Mat<f64>, x: &[f64]) -> Vec<f64> {
    (0..a.nrows())
        .map(|i| (0..a.ncols()).map(|j| a[(i, j)] * x[j]).sum())
        .collect()
}

/// `√τ ∘ B⁻¹ (√τ ∘ x)`.
pub(super) fn r_apply(chol: &Cholesky, sqrt_tau: &[f64], x: &[f64]) -> Vec<f64> {
    let y: Vec<f64> = x.iter().zip(sqrt_tau).map(|(a, s)| a * s).collect();
    chol.solve_vec(&y)
        .into_iter()
        .zip(sqrt_tau)
        .map(|(a, s)| a * s)
        .collect()
}

/// Laplace mode of the differences: `(a, Δ̂, log evidence, Newton iterations, B factor, √λ)`.
pub(super) struct LaplaceMode {
    pub(super) converged: bool,
    pub(super) a: Vec<f64>,
    pub(super) delta: Vec<f64>,
    pub(super) log_z: f64,
    pub(super) iters: usize,
    pub(super) chol: Cholesky,
    pub(super) sqrt_lam: Vec<f64>,
}

pub(super) fn laplace_mode(c: &Mat<f64>, s2: &[f64], warm: Option<&[f64]>) -> Result<LaplaceMode> {
    let m = c.nrows();
    let psi = |a: &[f64], delta: &[f64]| -> f64 {
        let quad: f64 = a.iter().zip(delta).map(|(x, y)| x * y).sum();
        -0.5 * quad
            + delta
                .iter()
                .zip(s2)
                .map(|(d, s)| probit(*d, *s).lp)
                .sum::<f64>()
    };
    // Start from the warm `a` if it is better than the prior mean.
    let mut a = vec![0.0; m];
    let mut delta = vec![0.0; m];
    let mut obj = psi(&a, &delta);
    if let Some(w) = warm.filter(|w| w.len() == m) {
        let dw = matvec(c, w);
        let ow = psi(w, &dw);
        if ow > obj {
            (a, delta, obj) = (w.to_vec(), dw, ow);
        }
    }
    let mut iters = 0;
    let mut converged = false;
    for _ in 0..100 {
        iters += 1;
        let t: Vec<_> = delta.iter().zip(s2).map(|(d, s)| probit(*d, *s)).collect();
        let sqrt_lam: Vec<f64> = t.iter().map(|t| t.lam.max(0.0).sqrt()).collect();
        let chol = factor_b(c, &sqrt_lam)?;
        let b: Vec<f64> = (0..m).map(|k| t[k].lam * delta[k] + t[k].r).collect();
        let cb = matvec(c, &b);
        let corr = r_apply(&chol, &sqrt_lam, &cb);
        let a_new: Vec<f64> = b.iter().zip(&corr).map(|(x, y)| x - y).collect();
        // Backtracking on the step in `a` (the objective is concave in Δ).
        let mut step = 1.0;
        let mut accepted = None;
        for _ in 0..30 {
            let a_try: Vec<f64> = a
                .iter()
                .zip(&a_new)
                .map(|(o, n)| o + step * (n - o))
                .collect();
            let d_try = matvec(c, &a_try);
            let o_try = psi(&a_try, &d_try);
            if o_try >= obj - 1e-12 * obj.abs().max(1.0) {
                accepted = Some((a_try, d_try, o_try));
                break;
            }
            step *= 0.5;
        }
        let Some((a_t, d_t, o_t)) = accepted else {
            break;
        };
        let gain = o_t - obj;
        (a, delta, obj) = (a_t, d_t, o_t);
        if gain.abs() < 1e-10 * obj.abs().max(1.0) {
            converged = true;
            break;
        }
    }
    let t: Vec<_> = delta.iter().zip(s2).map(|(d, s)| probit(*d, *s)).collect();
    let sqrt_lam: Vec<f64> = t.iter().map(|t| t.lam.max(0.0).sqrt()).collect();
    let chol = factor_b(c, &sqrt_lam)?;
    let half_log_det = 0.5 * chol.log_det();
    let quad: f64 = a.iter().zip(&delta).map(|(x, y)| x * y).sum();
    let log_z = -0.5 * quad + t.iter().map(|t| t.lp_evidence).sum::<f64>() - half_log_det;
    if !log_z.is_finite() {
        return Err(Error::Numerical(
            "Laplace evidence of the duel model is not finite".into(),
        ));
    }
    Ok(LaplaceMode {
        converged,
        a,
        delta,
        log_z,
        iters,
        chol,
        sqrt_lam,
    })
}

/// Laplace log evidence of `duels` under `kernel` and noise sums `s2`, with its gradient in
/// the kernel's log hyperparameters, and the mode's `a` (for warm starts).
pub fn laplace_evidence(
    kernel: &dyn Kernel,
    duels: &Duels,
    s2: &[f64],
    warm: Option<&[f64]>,
) -> Result<(f64, Vec<f64>, Vec<f64>)> {
    let c = duels.diff_cov(kernel);
    let mode = laplace_mode(&c, s2, warm)?;
    let m = duels.len();
    // R = √λ B⁻¹ √λ, posterior covariance of Δ: C − C R C.
    let mut r = Mat::zeros(m, m);
    for j in 0..m {
        let mut e = vec![0.0; m];
        e[j] = 1.0;
        let col = r_apply(&mode.chol, &mode.sqrt_lam, &e);
        for i in 0..m {
            r[(i, j)] = col[i];
        }
    }
    let cr = &c * &r;
    let post_diag: Vec<f64> = (0..m)
        .map(|k| c[(k, k)] - (0..m).map(|j| cr[(k, j)] * c[(j, k)]).sum::<f64>())
        .collect();
    // s2 of R&W Alg. 5.1: ½ diag(Σ_post) ∘ ∂³log p = −½ diag(Σ_post) ∘ dλ/dΔ.
    let sv: Vec<f64> = (0..m)
        .map(|k| -0.5 * post_diag[k] * probit(mode.delta[k], s2[k]).dlam)
        .collect();
    // u = (I − R C) sv.
    let csv = matvec(&c, &sv);
    let rcsv = matvec(&r, &csv);
    let u: Vec<f64> = sv.iter().zip(&rcsv).map(|(a, b)| a - b).collect();
    let a = &mode.a;
    let w = Mat::from_fn(m, m, |i, j| {
        0.5 * a[i] * a[j] - 0.5 * r[(i, j)] + 0.5 * (u[i] * a[j] + a[i] * u[j])
    });
    let grad = duels.diff_grad_contract(kernel, &w);
    Ok((mode.log_z, grad, mode.a))
}
