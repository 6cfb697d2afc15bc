use super::*;
use crate::anchor::NoiseModel;
use crate::kernel::Kernel;
use crate::kernel::{Stationary, StationaryKind};
use crate::preference::PrefLikelihood;
use agora_math::fd::{Tol, assert_gradient, fd_gradient, fd_jacobian};
use agora_math::linalg::Cholesky;
use agora_math::rng::stream;
use agora_math::special::norm_cdf;
use faer::Mat;

fn rbf(d: usize, l: f64) -> Box<dyn Kernel> {
    Box::new(Stationary::ard(StationaryKind::Rbf, d, l))
}

/// 1-D, three duels over four points: 0.1 ≻ 0.4, 0.7 ≻ 0.9, 0.4 ≻ 0.7; noise 0.3 each.
fn case() -> (Duels, NoiseModel) {
    let w = Mat::from_fn(3, 1, |i, _| [0.1, 0.7, 0.4][i]);
    let l = Mat::from_fn(3, 1, |i, _| [0.4, 0.9, 0.7][i]);
    (
        Duels::new(w, l).unwrap(),
        NoiseModel::constant(0.3).unwrap(),
    )
}

/// Exact posterior mean and covariance of Δ by quadrature on a 3-D grid.
fn quadrature(c: &Mat<f64>, s2: &[f64]) -> (Vec<f64>, Mat<f64>) {
    let chol = Cholesky::new(c.as_ref()).unwrap();
    let l = chol.l();
    let (n, lim) = (90usize, 6.0);
    let step = 2.0 * lim / n as f64;
    let mut z0 = 0.0;
    let mut z1 = [0.0; 3];
    let mut z2 = [[0.0; 3]; 3];
    // Integrate over standardized u with Δ = L u (prior weight φ(u)).
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let u = [
                    -lim + (i as f64 + 0.5) * step,
                    -lim + (j as f64 + 0.5) * step,
                    -lim + (k as f64 + 0.5) * step,
                ];
                let dl: Vec<f64> = (0..3)
                    .map(|r| (0..=r).map(|q| l[(r, q)] * u[q]).sum())
                    .collect();
                let mut w = (-(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]) / 2.0).exp();
                for r in 0..3 {
                    w *= norm_cdf(dl[r] / s2[r].sqrt());
                }
                z0 += w;
                for r in 0..3 {
                    z1[r] += w * dl[r];
                    for q in 0..3 {
                        z2[r][q] += w * dl[r] * dl[q];
                    }
                }
            }
        }
    }
    let mean: Vec<f64> = z1.iter().map(|v| v / z0).collect();
    let cov = Mat::from_fn(3, 3, |r, q| z2[r][q] / z0 - mean[r] * mean[q]);
    (mean, cov)
}

#[test]
fn ep_laplace_and_hb_against_numerical_integration() {
    let (duels, noise) = case();
    let kernel = rbf(1, 0.3);
    let c = duels.diff_cov(kernel.as_ref());
    let s2 = duels.noise_sums(&noise);
    let (qm, qc) = quadrature(&c, &s2);
    // Exact predictive moments at x* = 0.55: f* | Δ is Gaussian with E = c*ᵀ C⁻¹ Δ.
    let xs = Mat::from_fn(1, 1, |_, _| 0.1);
    let cx = duels.cross(kernel.as_ref(), xs.as_ref());
    let cvec: Vec<f64> = (0..3).map(|k| cx[(0, k)]).collect();
    let chol_c = Cholesky::new(c.as_ref()).unwrap();
    let g = chol_c.solve_vec(&cvec); // C⁻¹ c*
    let exact_mean: f64 = g.iter().zip(&qm).map(|(a, b)| a * b).sum();
    let gqg: f64 = (0..3)
        .map(|r| (0..3).map(|q| g[r] * qc[(r, q)] * g[q]).sum::<f64>())
        .sum();
    let exact_var = 1.0 - cvec.iter().zip(&g).map(|(a, b)| a * b).sum::<f64>() + gqg;
    let moments = |inf| {
        let gp = DuelGp::new(
            kernel.box_clone(),
            duels.clone(),
            &noise,
            inf,
            &mut stream(1, &[0]),
        )
        .unwrap();
        let (m, v) = gp.predict(xs.as_ref()).unwrap();
        (m[0], v[0], gp)
    };
    let (em, ev, ep_gp) = moments(DuelInference::Ep(EpOptions::default()));
    assert!(ep_gp.info().converged);
    let (lm, lv, _) = moments(DuelInference::Laplace);
    assert!(
        (em - exact_mean).abs() < 0.02 * exact_mean.abs(),
        "EP mean {em} vs {exact_mean}"
    );
    assert!(
        (ev - exact_var).abs() < 0.03 * exact_var,
        "EP var {ev} vs {exact_var}"
    );
    assert!(
        (lm - exact_mean).abs() < 0.15 * exact_mean.abs(),
        "Laplace mean {lm} vs {exact_mean}"
    );
    assert!(
        (lv - exact_var).abs() < 0.15 * exact_var,
        "Laplace var {lv} vs {exact_var}"
    );
    assert!((em - exact_mean).abs() <= (lm - exact_mean).abs());
    // HB: the mean over hallucinations is the exact posterior mean (E[f*|v] is linear in v).
    let n = 4000;
    let mut sum = 0.0;
    for i in 0..n {
        let gp = DuelGp::new(
            kernel.box_clone(),
            duels.clone(),
            &noise,
            DuelInference::Hallucination { sweeps: 20 },
            &mut stream(2, &[i]),
        )
        .unwrap();
        assert!(gp.hallucination().unwrap().iter().all(|v| *v <= 0.0));
        sum += gp.predict(xs.as_ref()).unwrap().0[0];
    }
    let hb = sum / n as f64;
    assert!(
        (hb - exact_mean).abs() < 0.03 * exact_mean.abs() + 0.01,
        "HB mean {hb} vs {exact_mean}"
    );
}

#[test]
fn hb_prediction_is_brute_force_joint_gaussian_conditioning() {
    let (duels, noise) = case();
    let kernel = rbf(1, 0.25);
    let gp = DuelGp::new(
        kernel.box_clone(),
        duels.clone(),
        &noise,
        DuelInference::Hallucination { sweeps: 50 },
        &mut stream(3, &[0]),
    )
    .unwrap();
    let v = gp.hallucination().unwrap().to_vec();
    // Σ_vv = C + diag(s²), Σ_*v = −c*: mean = Σ_*v Σ_vv⁻¹ ṽ, var = k − Σ_*v Σ_vv⁻¹ Σ_v*.
    let c = duels.diff_cov(kernel.as_ref());
    let s2 = duels.noise_sums(&noise);
    let mut svv = c.clone();
    for k in 0..3 {
        svv[(k, k)] += s2[k];
    }
    let ch = Cholesky::new(svv.as_ref()).unwrap();
    for &x in &[0.0, 0.33, 0.8] {
        let xs = Mat::from_fn(1, 1, |_, _| x);
        let cx = duels.cross(kernel.as_ref(), xs.as_ref());
        let sv: Vec<f64> = (0..3).map(|k| -cx[(0, k)]).collect();
        let a = ch.solve_vec(&v);
        let mean: f64 = sv.iter().zip(&a).map(|(p, q)| p * q).sum();
        let b = ch.solve_vec(&sv);
        let var = 1.0 - sv.iter().zip(&b).map(|(p, q)| p * q).sum::<f64>();
        let (pm, pv) = gp.predict(xs.as_ref()).unwrap();
        assert!((pm[0] - mean).abs() < 1e-10, "{} vs {mean}", pm[0]);
        assert!((pv[0] - var).abs() < 1e-10, "{} vs {var}", pv[0]);
    }
    // Huge noise: the posterior is the prior.
    let loud = NoiseModel::constant(1e12).unwrap();
    let gp = DuelGp::new(
        kernel,
        duels,
        &loud,
        DuelInference::Hallucination { sweeps: 5 },
        &mut stream(3, &[1]),
    )
    .unwrap();
    let (m, v) = gp.predict(Mat::from_fn(1, 1, |_, _| 0.3).as_ref()).unwrap();
    assert!(
        m[0].abs() < 1e-4 && (v[0] - 1.0).abs() < 1e-6,
        "{m:?} {v:?}"
    );
}

#[test]
fn laplace_matches_the_preference_gp_and_its_evidence_gradient_is_exact() {
    let (duels, noise) = case();
    let kernel = rbf(1, 0.3);
    let s2 = duels.noise_sums(&noise);
    let (lz, grad, _) = laplace_evidence(kernel.as_ref(), &duels, &s2, None).unwrap();
    // Same model through PreferenceGp over the 4 unique points, scale σ = √(s²/2).
    let x = Mat::from_fn(4, 1, |i, _| [0.1, 0.4, 0.7, 0.9][i]);
    let sc = (0.5 * 0.6f64).sqrt();
    let comps = vec![
        crate::Comparison {
            winner: 0,
            loser: 1,
            scale: sc,
        },
        crate::Comparison {
            winner: 2,
            loser: 3,
            scale: sc,
        },
        crate::Comparison {
            winner: 1,
            loser: 2,
            scale: sc,
        },
    ];
    let pg =
        crate::PreferenceGp::new(x, comps, kernel.box_clone(), PrefLikelihood::Probit).unwrap();
    assert!(
        (pg.log_evidence() - lz).abs() < 1e-7,
        "{} vs {lz}",
        pg.log_evidence()
    );
    let dgp = DuelGp::new(
        kernel.box_clone(),
        duels.clone(),
        &noise,
        DuelInference::Laplace,
        &mut stream(0, &[0]),
    )
    .unwrap();
    let xs = Mat::from_fn(3, 1, |i, _| [0.05, 0.5, 0.95][i]);
    let (m1, v1) = dgp.predict(xs.as_ref()).unwrap();
    let (m2, v2) = pg.predict(xs.as_ref()).unwrap();
    for i in 0..3 {
        assert!((m1[i] - m2[i]).abs() < 1e-6 && (v1[i] - v2[i]).abs() < 1e-6);
    }
    let evidence = |p: &[f64]| {
        let mut k = kernel.box_clone();
        k.set_params(p).unwrap();
        laplace_evidence(k.as_ref(), &duels, &s2, None).unwrap().0
    };
    let fd = fd_gradient(evidence, &kernel.params(), 1e-6);
    assert_gradient(&grad[..1], &fd[..1], Tol::Abs(1e-6), "Laplace evidence");
}

#[test]
fn prediction_gradients_match_finite_differences() {
    let w = Mat::from_fn(3, 2, |i, j| [[0.1, 0.2], [0.7, 0.6], [0.4, 0.9]][i][j]);
    let l = Mat::from_fn(3, 2, |i, j| [[0.4, 0.4], [0.9, 0.1], [0.7, 0.6]][i][j]);
    let duels = Duels::new(w, l).unwrap();
    let noise = NoiseModel::constant(0.2).unwrap();
    for inf in [
        DuelInference::Laplace,
        DuelInference::Ep(EpOptions::default()),
        DuelInference::Hallucination { sweeps: 30 },
    ] {
        let gp = DuelGp::new(
            rbf(2, 0.3),
            duels.clone(),
            &noise,
            inf,
            &mut stream(4, &[0]),
        )
        .unwrap();
        let x = [0.35, 0.55];
        let (m, v, gm, gv) = gp.predict_with_grad(&x).unwrap();
        let (pm, pv) = gp
            .predict(Mat::from_fn(1, 2, |_, j| x[j]).as_ref())
            .unwrap();
        assert!((m - pm[0]).abs() < 1e-12 && (v - pv[0]).abs() < 1e-12);
        let moments = |z: &[f64]| {
            let (m, v, _, _) = gp.predict_with_grad(z).unwrap();
            vec![m, v]
        };
        let fd = fd_jacobian(moments, &x, 1e-6);
        let (fdm, fdv): (Vec<f64>, Vec<f64>) = fd.iter().map(|r| (r[0], r[1])).unzip();
        assert_gradient(&gm, &fdm, Tol::Abs(1e-6), &format!("{inf:?} mean"));
        assert_gradient(&gv, &fdv, Tol::Abs(1e-6), &format!("{inf:?} variance"));
    }
}

#[test]
fn repeated_duels_and_bad_inputs() {
    // The same duel five times, and its reverse twice: C is singular; all methods work.
    let w = Mat::from_fn(7, 1, |i, _| if i < 5 { 0.2 } else { 0.6 });
    let l = Mat::from_fn(7, 1, |i, _| if i < 5 { 0.6 } else { 0.2 });
    let duels = Duels::new(w, l).unwrap();
    let noise = NoiseModel::constant(0.5).unwrap();
    for inf in [
        DuelInference::Laplace,
        DuelInference::Ep(EpOptions::default()),
        DuelInference::Hallucination { sweeps: 100 },
    ] {
        let gp = DuelGp::new(
            rbf(1, 0.2),
            duels.clone(),
            &noise,
            inf,
            &mut stream(5, &[0]),
        )
        .unwrap();
        let (m, v) = gp
            .predict(Mat::from_fn(2, 1, |i, _| [0.2, 0.6][i]).as_ref())
            .unwrap();
        assert!(m.iter().chain(&v).all(|x| x.is_finite()));
        if !matches!(inf, DuelInference::Hallucination { .. }) {
            assert!(m[0] > m[1], "{inf:?}: {m:?}");
        }
    }
    let e = Duels::new(Mat::from_fn(1, 1, |_, _| f64::NAN), Mat::zeros(1, 1)).unwrap_err();
    assert!(e.to_string().contains("winners[0][0]"), "{e}");
    let e = Duels::new(Mat::zeros(2, 1), Mat::zeros(1, 1)).unwrap_err();
    assert!(e.to_string().contains("losers"), "{e}");
    assert!(
        DuelInference::parse("vb")
            .unwrap_err()
            .to_string()
            .contains("hb, laplace, ep")
    );
}
