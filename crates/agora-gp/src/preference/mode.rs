//! The Laplace mode `f̂`: Newton's method with Armijo backtracking on the convex `S(f)`.

use super::{Comparison, PrefLikelihood, terms};
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use faer::Mat;

pub(super) struct Mode {
    pub(super) f: Vec<f64>,
    pub(super) lambda: Vec<f64>,
    pub(super) dlambda: Vec<f64>,
    pub(super) loglik: f64,
    pub(super) chol_a: Cholesky,
    pub(super) iters: usize,
}

/// `K⁻¹` as a dense symmetric matrix, and `W = Dᵀ diag(λ) D` added into a matrix.
fn add_w(a: &mut Mat<f64>, comps: &[Comparison], lambda: &[f64]) {
    for (c, l) in comps.iter().zip(lambda) {
        let (w, s) = (c.winner, c.loser);
        a[(w, w)] += l;
        a[(s, s)] += l;
        a[(w, s)] -= l;
        a[(s, w)] -= l;
    }
}

/// Newton with Armijo backtracking on `S(f)`.
pub(super) fn find_mode(
    lik: PrefLikelihood,
    mean0: f64,
    comps: &[Comparison],
    chol_k: &Cholesky,
    kinv: &Mat<f64>,
    start: Option<&[f64]>,
) -> Result<Mode> {
    let n = chol_k.dim();
    let eval = |f: &[f64]| -> (f64, f64, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        // (S, loglik, grad loglik wrt f, λ, λ', K⁻¹(f − m0))
        let mut ll = 0.0;
        let mut g = vec![0.0; n];
        let mut lam = Vec::with_capacity(comps.len());
        let mut dlam = Vec::with_capacity(comps.len());
        for c in comps {
            let t = terms(lik, f[c.winner] - f[c.loser], c.scale);
            ll += t.lp;
            g[c.winner] += t.r;
            g[c.loser] -= t.r;
            lam.push(t.lam);
            dlam.push(t.dlam);
        }
        let centred: Vec<f64> = f.iter().map(|v| v - mean0).collect();
        // K⁻¹(f − m0) by two triangular solves: more accurate than a product with K⁻¹.
        let kf = chol_k.solve_vec(&centred);
        let quad: f64 = centred.iter().zip(&kf).map(|(a, b)| a * b).sum();
        (0.5 * quad - ll, ll, g, lam, dlam, kf)
    };
    // A warm start (the mode for other hyperparameters or data) can carry components along
    // K's near-null directions that K⁻¹ magnifies enormously; start from the prior mean
    // whenever that is better.
    let prior_start = vec![mean0; n];
    let at_prior = eval(&prior_start);
    let (mut f, first) = match start {
        Some(s) if s.len() == n && s.iter().all(|v| v.is_finite()) => {
            let at_start = eval(s);
            if at_start.0 < at_prior.0 {
                (s.to_vec(), at_start)
            } else {
                (prior_start, at_prior)
            }
        }
        _ => (prior_start, at_prior),
    };
    let (mut s_val, mut ll, mut g, mut lam, mut dlam, mut kf) = first;
    let mut iters = 0;
    for it in 0..200 {
        iters = it + 1;
        // ∇S = K⁻¹(f − m0) − ∇ log P.
        let grad: Vec<f64> = (0..n).map(|i| kf[i] - g[i]).collect();
        let gmax = grad.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if gmax < 1e-10 * (1.0 + s_val.abs()) {
            break;
        }
        let mut a = kinv.clone();
        add_w(&mut a, comps, &lam);
        let chol_a = Cholesky::new(a.as_ref())?;
        let step: Vec<f64> = chol_a.solve_vec(&grad).into_iter().map(|v| -v).collect();
        let slope: f64 = grad.iter().zip(&step).map(|(a, b)| a * b).sum();
        if slope >= 0.0 {
            break;
        }
        let mut t = 1.0;
        let mut accepted = false;
        for _ in 0..60 {
            let trial: Vec<f64> = f.iter().zip(&step).map(|(a, b)| a + t * b).collect();
            let out = eval(&trial);
            if out.0.is_finite() && out.0 <= s_val + 1e-4 * t * slope {
                f = trial;
                let decrease = s_val - out.0;
                (s_val, ll, g, lam, dlam, kf) = out;
                accepted = true;
                // At round-off level nothing more can be gained.
                if decrease <= 1e-14 * (1.0 + s_val.abs()) {
                    t = 0.0;
                }
                break;
            }
            t *= 0.5;
        }
        if !accepted || t == 0.0 {
            break;
        }
    }
    let _ = ll;
    let mut a = kinv.clone();
    add_w(&mut a, comps, &lam);
    let chol_a = Cholesky::new(a.as_ref())?;
    // The evidence uses log P at the clamped z (CONVENTIONS.md §6).
    let ll: f64 = comps
        .iter()
        .map(|c| terms(lik, f[c.winner] - f[c.loser], c.scale).lp_evidence)
        .sum();
    if f.iter().any(|v| !v.is_finite()) || !ll.is_finite() {
        return Err(Error::Numerical("preference GP mode is not finite".into()));
    }
    Ok(Mode {
        f,
        lambda: lam,
        dlambda: dlam,
        loglik: ll,
        chol_a,
        iters,
    })
}
