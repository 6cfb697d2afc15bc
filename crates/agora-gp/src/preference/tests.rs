use super::*;
use agora_math::fd::{Tol, assert_gradient, fd_derivative};

#[test]
fn likelihood_terms_match_finite_differences() {
    for lik in [PrefLikelihood::Probit, PrefLikelihood::BradleyTerry] {
        for (delta, scale) in [(0.3, 1.0), (-2.0, 0.7), (5.0, 1.3), (-9.0, 1.0)] {
            let Terms { r, lam, dlam, .. } = terms(lik, delta, scale);
            let h = 1e-5;
            let lp = |d: f64| terms(lik, d, scale).lp;
            let r_fd = fd_derivative(lp, delta, h);
            let lam_fd = -(lp(delta + h) - 2.0 * lp(delta) + lp(delta - h)) / (h * h);
            let dlam_fd = fd_derivative(|d| terms(lik, d, scale).lam, delta, h);
            let what = format!("{lik:?} at {delta}");
            assert_gradient(&[r], &[r_fd], Tol::ScaledByAnalytic(1e-7), &what);
            assert!(
                (lam - lam_fd).abs() < 1e-4 * (1.0 + lam.abs()),
                "{lik:?} {delta}: λ {lam} vs {lam_fd}"
            );
            assert_gradient(&[dlam], &[dlam_fd], Tol::ScaledByAnalytic(1e-6), &what);
        }
    }
}
