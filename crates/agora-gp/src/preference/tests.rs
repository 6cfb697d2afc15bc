use super::*;

#[test]
fn likelihood_terms_match_finite_differences() {
    for lik in [PrefLikelihood::Probit, PrefLikelihood::BradleyTerry] {
        for (delta, scale) in [(0.3, 1.0), (-2.0, 0.7), (5.0, 1.3), (-9.0, 1.0)] {
            let Terms { r, lam, dlam, .. } = terms(lik, delta, scale);
            let h = 1e-5;
            let lp = |d: f64| terms(lik, d, scale).lp;
            let r_fd = (lp(delta + h) - lp(delta - h)) / (2.0 * h);
            let lam_fd = -(lp(delta + h) - 2.0 * lp(delta) + lp(delta - h)) / (h * h);
            let dlam_fd =
                (terms(lik, delta + h, scale).lam - terms(lik, delta - h, scale).lam) / (2.0 * h);
            assert!(
                (r - r_fd).abs() < 1e-7 * (1.0 + r.abs()),
                "{lik:?} {delta}: r {r} vs {r_fd}"
            );
            assert!(
                (lam - lam_fd).abs() < 1e-4 * (1.0 + lam.abs()),
                "{lik:?} {delta}: λ {lam} vs {lam_fd}"
            );
            assert!(
                (dlam - dlam_fd).abs() < 1e-6 * (1.0 + dlam.abs()),
                "{lik:?} {delta}: λ' {dlam} vs {dlam_fd}"
            );
        }
    }
}
