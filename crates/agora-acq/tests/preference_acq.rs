//! Pair acquisitions on a fitted preference GP: EUBO vs Monte Carlo (10⁶ draws), BALD vs
//! a Monte Carlo mutual information, qEUBO(q = 2) vs EUBO, gradients vs finite differences.

use agora_acq::Acquisition;
use agora_acq::preference::{Bald, Eubo, QEubo};
use agora_gp::kernel::{Kernel, Scale, Stationary, StationaryKind};
use agora_gp::{Comparison, PrefLikelihood, PreferenceGp};
use agora_math::fd::{Tol, check_gradient};
use faer::Mat;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

fn gp() -> PreferenceGp {
    let x = Mat::from_fn(8, 2, |i, j| {
        ((i as f64 + 1.0) * if j == 0 { 0.618_034 } else { 0.414_214 }).fract()
    });
    let comps: Vec<Comparison> = [
        (0, 1),
        (2, 1),
        (3, 4),
        (5, 0),
        (6, 2),
        (7, 3),
        (2, 5),
        (6, 7),
    ]
    .iter()
    .map(|&(w, l)| Comparison::new(w, l))
    .collect();
    let mut k = Stationary::ard(StationaryKind::Rbf, 2, 1.0);
    k.set_params(&[0.35f64.ln(), 0.5f64.ln()]).unwrap();
    PreferenceGp::new(
        x,
        comps,
        Box::new(Scale::new(Box::new(k), 1.5)),
        PrefLikelihood::Probit,
    )
    .unwrap()
}

fn joint_draws(g: &PreferenceGp, x0: &[f64], x1: &[f64], n: usize, seed: u64) -> Vec<(f64, f64)> {
    let xs = Mat::from_fn(2, 2, |i, j| if i == 0 { x0[j] } else { x1[j] });
    let (m, c) = g.predict_cov(xs.as_ref()).unwrap();
    let l00 = c[(0, 0)].sqrt();
    let l10 = c[(1, 0)] / l00;
    let l11 = (c[(1, 1)] - l10 * l10).sqrt();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let z0: f64 = StandardNormal.sample(&mut rng);
            let z1: f64 = StandardNormal.sample(&mut rng);
            (m[0] + l00 * z0, m[1] + l10 * z0 + l11 * z1)
        })
        .collect()
}

#[test]
fn eubo_matches_monte_carlo_with_a_million_draws() {
    let g = gp();
    for (x0, x1) in [
        ([0.2, 0.7], [0.8, 0.3]),
        ([0.5, 0.5], [0.55, 0.45]),
        ([0.05, 0.95], [0.9, 0.9]),
    ] {
        let e = Eubo {
            gp: &g,
            fixed: None,
        };
        let a = e.value_grad(&[x0[0], x0[1], x1[0], x1[1]], None).unwrap();
        let draws = joint_draws(&g, &x0, &x1, 1_000_000, 1);
        let n = draws.len() as f64;
        let vals: Vec<f64> = draws.iter().map(|(a, b)| a.max(*b)).collect();
        let mc = vals.iter().sum::<f64>() / n;
        let sd = (vals.iter().map(|v| (v - mc).powi(2)).sum::<f64>() / n).sqrt();
        assert!(
            (a - mc).abs() < 4.0 * sd / n.sqrt() + 1e-12,
            "EUBO {a} vs MC {mc} ± {}",
            sd / n.sqrt()
        );
        // With x0 fixed, the same value.
        let ef = Eubo {
            gp: &g,
            fixed: Some(x0.to_vec()),
        };
        assert!((ef.value_grad(&x1, None).unwrap() - a).abs() < 1e-14);
    }
}

#[test]
fn bald_matches_a_monte_carlo_mutual_information() {
    // I = H[p̄] − E_f[H(p(f))] with p(f) = Φ((f0 − f1)/√2), entropies in bits.
    let g = gp();
    let hb = |p: f64| {
        if p <= 0.0 || p >= 1.0 {
            0.0
        } else {
            -(p * p.log2() + (1.0 - p) * (1.0 - p).log2())
        }
    };
    for (x0, x1) in [([0.2, 0.7], [0.8, 0.3]), ([0.05, 0.95], [0.9, 0.9])] {
        let b = Bald {
            gp: &g,
            fixed: None,
            noise: 1.0,
        };
        let a = b.value_grad(&[x0[0], x0[1], x1[0], x1[1]], None).unwrap();
        let draws = joint_draws(&g, &x0, &x1, 400_000, 2);
        let ps: Vec<f64> = draws
            .iter()
            .map(|(f0, f1)| agora_math::special::norm_cdf((f0 - f1) / 2f64.sqrt()))
            .collect();
        let pbar = ps.iter().sum::<f64>() / ps.len() as f64;
        let mi = hb(pbar) - ps.iter().map(|p| hb(*p)).sum::<f64>() / ps.len() as f64;
        // Houlsby's closed form approximates E[H(Φ)] by a Gaussian-shaped curve: close, not exact.
        assert!((a - mi).abs() < 0.01 + 0.05 * mi, "BALD {a} vs MC {mi}");
    }
}

#[test]
fn batched_values_equal_pointwise_values() {
    let g = gp();
    let xs = Mat::from_fn(7, 4, |i, j| ((i * 4 + j) as f64 * 0.377).fract());
    for acq in [Box::new(Eubo {
        gp: &g,
        fixed: None,
    }) as Box<dyn Acquisition>]
    {
        let batch = acq.values(xs.as_ref()).unwrap();
        for (i, b) in batch.iter().enumerate() {
            let row: Vec<f64> = (0..4).map(|j| xs[(i, j)]).collect();
            assert!((acq.value_grad(&row, None).unwrap() - b).abs() < 1e-12);
        }
    }
    let fixed = Eubo {
        gp: &g,
        fixed: Some(vec![0.3, 0.4]),
    };
    let xs2 = xs.as_ref().submatrix(0, 0, 7, 2);
    let batch = fixed.values(xs2).unwrap();
    for (i, b) in batch.iter().enumerate() {
        assert!((fixed.value_grad(&[xs2[(i, 0)], xs2[(i, 1)]], None).unwrap() - b).abs() < 1e-12);
    }
}

#[test]
fn pair_gradients_match_finite_differences() {
    let g = gp();
    let acqs: Vec<Box<dyn Acquisition>> = vec![
        Box::new(Eubo {
            gp: &g,
            fixed: None,
        }),
        Box::new(Bald {
            gp: &g,
            fixed: None,
            noise: 1.0,
        }),
        Box::new(Eubo {
            gp: &g,
            fixed: Some(vec![0.3, 0.4]),
        }),
        Box::new(Bald {
            gp: &g,
            fixed: Some(vec![0.3, 0.4]),
            noise: 0.7,
        }),
    ];
    for (k, a) in acqs.iter().enumerate() {
        let x: Vec<f64> = [0.21, 0.77, 0.64, 0.12]
            .iter()
            .take(a.dim())
            .cloned()
            .collect();
        let mut grad = vec![0.0; a.dim()];
        a.value_grad(&x, Some(&mut grad)).unwrap();
        let value = |z: &[f64]| a.value_grad(z, None).unwrap();
        let what = format!("acq {k}");
        check_gradient(value, &x, 1e-6, &grad, Tol::ScaledByFd(1e-5), &what);
    }
}

#[test]
fn qeubo_with_two_points_agrees_with_eubo() {
    let g = gp();
    let q = QEubo::new(&g, 2, 200_000, &mut ChaCha8Rng::seed_from_u64(3)).unwrap();
    let x = [0.2, 0.7, 0.8, 0.3];
    let a = Eubo {
        gp: &g,
        fixed: None,
    }
    .value_grad(&x, None)
    .unwrap();
    let b = q.value_grad(&x, None).unwrap();
    assert!((a - b).abs() < 5e-3, "EUBO {a} vs qEUBO {b}");
    let q3 = QEubo::new(&g, 3, 20_000, &mut ChaCha8Rng::seed_from_u64(3)).unwrap();
    // Adding a third option never lowers the expected best.
    let c = q3
        .value_grad(&[0.2, 0.7, 0.8, 0.3, 0.5, 0.5], None)
        .unwrap();
    assert!(c >= b - 5e-3);
    assert!(QEubo::new(&g, 1, 10, &mut ChaCha8Rng::seed_from_u64(3)).is_err());
}
