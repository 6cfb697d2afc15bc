//! Behaviour of acquisitions on fitted models: gradients vs finite differences, RFF draws vs
//! the exact posterior, maximizers vs brute force.

use agora_acq::analytic::{Analytic, AnalyticKind};
use agora_acq::thompson::{RffSample, sample_argmax_finite};
use agora_acq::{Acquisition, BoxMaximizer, maximize_box, maximize_finite};
use agora_gp::{ExactGp, GpConfig};
use agora_math::fd::{Tol, check_gradient};
use faer::Mat;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn toy_gp(kernel: agora_gp::StationaryKind) -> ExactGp {
    // f(x) = sin(6 x0) + cos(4 x1) on 12 Halton-like points.
    let n = 12;
    let x = Mat::from_fn(n, 2, |i, j| {
        ((i as f64 + 0.5) * if j == 0 { 0.618_034 } else { 0.414_214 }).fract()
    });
    let y: Vec<f64> = (0..n)
        .map(|i| (6.0 * x[(i, 0)]).sin() + (4.0 * x[(i, 1)]).cos())
        .collect();
    let mut cfg = GpConfig::botorch(2);
    cfg.kernel = kernel;
    let (gp, _) = ExactGp::fit(x, &y, &cfg, &mut ChaCha8Rng::seed_from_u64(0)).unwrap();
    gp
}

#[test]
fn acquisition_gradients_match_finite_differences() {
    let gp = toy_gp(agora_gp::StationaryKind::Matern52);
    let best = gp.y().iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let rff = RffSample::draw(&gp, 256, &mut rng).unwrap();
    let acqs: Vec<Box<dyn Acquisition>> = vec![
        Box::new(Analytic {
            model: &gp,
            kind: AnalyticKind::Ei { best_f: best },
        }),
        Box::new(Analytic {
            model: &gp,
            kind: AnalyticKind::LogEi { best_f: best + 1.0 },
        }),
        Box::new(Analytic {
            model: &gp,
            kind: AnalyticKind::Pi { best_f: best },
        }),
        Box::new(Analytic {
            model: &gp,
            kind: AnalyticKind::Ucb { beta: 4.0 },
        }),
        Box::new(rff),
    ];
    for (a, acq) in acqs.iter().enumerate() {
        for p in [[0.21, 0.77], [0.64, 0.12], [0.9, 0.5]] {
            let mut g = [0.0; 2];
            let v = acq.value_grad(&p, Some(&mut g)).unwrap();
            assert!((v - acq.value_grad(&p, None).unwrap()).abs() < 1e-10 * (1.0 + v.abs()));
            let xs = Mat::from_fn(1, 2, |_, j| p[j]);
            assert!((v - acq.values(xs.as_ref()).unwrap()[0]).abs() < 1e-9 * (1.0 + v.abs()));
            let value = |z: &[f64]| acq.value_grad(z, None).unwrap();
            let what = format!("acq {a} at {p:?}");
            check_gradient(value, &p, 1e-6, &g, Tol::ScaledByFd(1e-4), &what);
        }
    }
}

#[test]
fn rff_draws_reproduce_the_posterior_moments() {
    // Mean and variance over many RFF draws approach the exact posterior's.
    let gp = toy_gp(agora_gp::StationaryKind::Rbf);
    let xs = Mat::from_fn(4, 2, |i, j| {
        [[0.1, 0.9], [0.5, 0.5], [0.33, 0.2], [0.95, 0.05]][i][j]
    });
    let (mu, var) = gp.predict(xs.as_ref()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let draws: Vec<Vec<f64>> = (0..300)
        .map(|_| {
            RffSample::draw(&gp, 500, &mut rng)
                .unwrap()
                .values(xs.as_ref())
                .unwrap()
        })
        .collect();
    for i in 0..4 {
        let m = draws.iter().map(|d| d[i]).sum::<f64>() / draws.len() as f64;
        let v = draws.iter().map(|d| (d[i] - m).powi(2)).sum::<f64>() / (draws.len() - 1) as f64;
        let sd = var[i].sqrt();
        // Monte Carlo error of the mean is sd/√300 ≈ 0.06 sd; allow feature error on top.
        assert!(
            (m - mu[i]).abs() < 0.15 * sd + 0.02,
            "point {i}: mean {m} vs {}",
            mu[i]
        );
        assert!(
            (v.sqrt() - sd).abs() < 0.2 * sd + 0.02,
            "point {i}: sd {} vs {sd}",
            v.sqrt()
        );
    }
}

#[test]
fn box_maximizer_beats_a_dense_grid() {
    let gp = toy_gp(agora_gp::StationaryKind::Matern52);
    let acq = Analytic {
        model: &gp,
        kind: AnalyticKind::Ucb { beta: 2.0 },
    };
    let (x, v) = maximize_box(&acq, &BoxMaximizer::default(), &[], None, 7).unwrap();
    let n = 201;
    let grid = Mat::from_fn(n * n, 2, |i, j| {
        if j == 0 {
            (i / n) as f64 / (n - 1) as f64
        } else {
            (i % n) as f64 / (n - 1) as f64
        }
    });
    let gv = acq.values(grid.as_ref()).unwrap();
    let gmax = gv.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    assert!(
        v >= gmax - 1e-6,
        "maximizer {v} at {x:?} below grid max {gmax}"
    );
    assert!(x.iter().all(|c| (0.0..=1.0).contains(c)));
    // Same seed, same answer.
    assert_eq!(
        maximize_box(&acq, &BoxMaximizer::default(), &[], None, 7)
            .unwrap()
            .0,
        x
    );
    // Finite maximizer agrees with a plain scan, honours exclusions.
    let (i, fv) = maximize_finite(&acq, grid.as_ref(), &[]).unwrap();
    assert_eq!(fv, gmax);
    let mut ex = vec![false; n * n];
    ex[i] = true;
    let (j, _) = maximize_finite(&acq, grid.as_ref(), &ex).unwrap();
    assert_ne!(i, j);
    let k = sample_argmax_finite(
        &gp,
        grid.as_ref().subrows(0, 50),
        &[],
        &mut ChaCha8Rng::seed_from_u64(1),
    )
    .unwrap();
    assert!(k < 50);
}
