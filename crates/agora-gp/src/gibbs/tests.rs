use super::*;
use crate::exact::ExactGp;
use crate::kernel::{Kernel, Stationary, StationaryKind, hadamard_sum};
use agora_core::Error;
use agora_math::fd::{Tol, assert_gradient, check_gradient, fd_jacobian};
use agora_math::rng::stream;
use faer::Mat;
use faer::Side;
use rand::RngExt;

/// `n` augmented rows (d, m) with x, μ̄ uniform in [0, 1] and σ̄ uniform in [lo, hi].
fn rows(n: usize, d: usize, m: usize, (lo, hi): (f64, f64), seed: u64) -> Mat<f64> {
    let mut rng = stream(seed, &[n as u64, d as u64, m as u64]);
    Mat::from_fn(n, d + 2 * m, |_, j| {
        let u: f64 = rng.random();
        if j < d + m { u } else { lo + u * (hi - lo) }
    })
}

fn kernel(d: usize, m: usize, mode: AlphaMode) -> AugmentedGibbs {
    let mut k = AugmentedGibbs::new(d, m, mode, 0.5, 1.0, DEFAULT_FLOOR).unwrap();
    let mut p: Vec<f64> = (0..d).map(|j| (0.2 + 0.15 * j as f64).ln()).collect();
    p.extend((0..k.n_params() - d).map(|i| (0.7 + 0.4 * i as f64).ln()));
    k.set_params(&p).unwrap();
    k
}

/// Eq. 6 of the paper, one pair at a time, written out independently of the kernel.
fn eq6(x: &[f64], y: &[f64], ls: &[f64], alphas: &[f64], floor: f64) -> f64 {
    let (d, m) = (ls.len(), alphas.len());
    let mut k = 1.0;
    for j in 0..d {
        k *= (-(x[j] - y[j]).powi(2) / (2.0 * ls[j] * ls[j])).exp();
    }
    for i in 0..m {
        let a = (alphas[i] * x[d + m + i]).max(floor);
        let b = (alphas[i] * y[d + m + i]).max(floor);
        let s = a * a + b * b;
        k *= (2.0 * a * b / s).sqrt() * (-(x[d + i] - y[d + i]).powi(2) / s).exp();
    }
    k
}

fn row(x: &Mat<f64>, r: usize) -> Vec<f64> {
    (0..x.ncols()).map(|j| x[(r, j)]).collect()
}

#[test]
fn values_match_eq6_and_sigma_columns_are_not_distances() {
    let k = kernel(2, 2, AlphaMode::PerProperty);
    let x = rows(6, 2, 2, (0.0, 0.5), 1);
    let g = k.gram(x.as_ref());
    for r in 0..6 {
        for c in 0..6 {
            let want = eq6(
                &row(&x, r),
                &row(&x, c),
                &k.lengthscales(),
                &k.alphas(),
                0.01,
            );
            assert!(
                (g[(r, c)] - want).abs() < 1e-14,
                "({r},{c}) {} vs {want}",
                g[(r, c)]
            );
        }
    }
    // Same x and μ̄, different σ̄: only the Gibbs prefactor remains,
    // Π_i sqrt(2ab/(a² + b²)) with a = α_i σ̄_i, b = α_i σ̄′_i.
    let a = faer::mat![[0.3, 0.4, 0.6, 0.2]];
    let b = faer::mat![[0.3, 0.4, 0.6, 0.5]];
    let k1 = AugmentedGibbs::new(2, 1, AlphaMode::Shared, 0.5, 1.5, 0.01).unwrap();
    let (p, q): (f64, f64) = (1.5 * 0.2, 1.5 * 0.5);
    let want = (2.0 * p * q / (p * p + q * q)).sqrt();
    assert!((k1.cross(a.as_ref(), b.as_ref())[(0, 0)] - want).abs() < 1e-15);
}

#[test]
fn gram_is_symmetric_with_unit_diagonal_and_equals_cross() {
    for mode in [AlphaMode::Shared, AlphaMode::PerProperty] {
        let k = kernel(3, 2, mode);
        let x = rows(20, 3, 2, (0.0, 0.8), 2);
        let g = k.gram(x.as_ref());
        let c = k.cross(x.as_ref(), x.as_ref());
        let d = k.diag(x.as_ref());
        for r in 0..20 {
            assert_eq!(g[(r, r)], 1.0);
            assert_eq!(d[r], 1.0);
            for s in 0..20 {
                assert_eq!(g[(r, s)], g[(s, r)]);
                assert!((g[(r, s)] - c[(r, s)]).abs() < 1e-15);
            }
        }
        // cross(a, b) = cross(b, a)ᵀ.
        let y = rows(7, 3, 2, (0.0, 0.8), 3);
        let ab = k.cross(x.as_ref(), y.as_ref());
        let ba = k.cross(y.as_ref(), x.as_ref());
        for r in 0..20 {
            for s in 0..7 {
                assert!((ab[(r, s)] - ba[(s, r)]).abs() < 1e-15);
            }
        }
    }
}

#[test]
fn gram_is_positive_semidefinite_on_random_inputs() {
    for (seed, mode, sig) in [
        (4, AlphaMode::Shared, (0.0, 1.0)),
        (5, AlphaMode::PerProperty, (0.0, 0.3)),
        (6, AlphaMode::Shared, (0.001, 0.02)), // mostly on the floor
        (7, AlphaMode::PerProperty, (0.5, 3.0)),
    ] {
        let k = kernel(3, 2, mode);
        let x = rows(80, 3, 2, sig, seed);
        let ev = k
            .gram(x.as_ref())
            .self_adjoint_eigenvalues(Side::Lower)
            .unwrap();
        let min = ev.iter().cloned().fold(f64::INFINITY, f64::min);
        assert!(min >= -1e-10, "seed {seed}: smallest eigenvalue {min}");
    }
}

#[test]
fn constant_sigma_reduces_to_ard_se_on_x_and_mu() {
    let (d, m) = (3, 2);
    // Per property: constant σ̄ = (0.3, 0.12) → ℓ = (α₁·0.3, α₂·0.12).
    for mode in [AlphaMode::Shared, AlphaMode::PerProperty] {
        let k = kernel(d, m, mode);
        let mut x = rows(15, d, m, (0.0, 1.0), 8);
        let mut y = rows(9, d, m, (0.0, 1.0), 9);
        for mat in [&mut x, &mut y] {
            for r in 0..mat.nrows() {
                mat[(r, d + m)] = 0.3;
                mat[(r, d + m + 1)] = 0.12;
            }
        }
        let al = k.alphas();
        let mut se = Stationary::on(StationaryKind::Rbf, (0..d + m).collect(), 1.0);
        let mut p: Vec<f64> = k.lengthscales().iter().map(|l| l.ln()).collect();
        p.push((al[0] * 0.3).ln());
        p.push((al[1] * 0.12).ln());
        se.set_params(&p).unwrap();
        let (kg, sg) = (
            k.cross(x.as_ref(), y.as_ref()),
            se.cross(x.as_ref(), y.as_ref()),
        );
        for r in 0..15 {
            for c in 0..9 {
                assert!((kg[(r, c)] - sg[(r, c)]).abs() < 1e-14);
            }
        }
    }
    // On the floor (σ̄ = 0): the augmented lengthscale is the floor itself.
    let k = AugmentedGibbs::new(1, 1, AlphaMode::Shared, 0.4, 1.0, 0.05).unwrap();
    let a = faer::mat![[0.1, 0.50, 0.0]];
    let b = faer::mat![[0.3, 0.52, 0.0]];
    let want = (-0.5 * (0.2f64 / 0.4).powi(2) - 0.5 * (0.02f64 / 0.05).powi(2)).exp();
    assert!((k.cross(a.as_ref(), b.as_ref())[(0, 0)] - want).abs() < 1e-15);
}

#[test]
fn parameter_gradients_match_central_differences() {
    for (mode, seed) in [(AlphaMode::Shared, 10), (AlphaMode::PerProperty, 11)] {
        let k = kernel(2, 2, mode);
        // σ̄ ∈ [0, 0.3]: a few rows fall on the floor (α σ̄ < 0.01), none near the kink.
        let mut x = rows(12, 2, 2, (0.0, 0.3), seed);
        for r in 0..12 {
            for i in 0..2 {
                let v = x[(r, 4 + i)];
                let l = k.alphas()[i] * v;
                if (l - 0.01).abs() < 2e-3 {
                    x[(r, 4 + i)] = v + 0.01;
                }
            }
        }
        let mut rng = stream(seed, &[99]);
        let w = Mat::from_fn(12, 12, |_, _| rng.random::<f64>() - 0.5);
        let g = k.grad_contract(x.as_ref(), w.as_ref());
        let gg = k.grad_contract_with_gram(x.as_ref(), w.as_ref(), k.gram(x.as_ref()).as_ref());
        let p0 = k.params();
        assert_eq!(g.len(), p0.len());
        for i in 0..p0.len() {
            assert!((g[i] - gg[i]).abs() < 1e-14);
        }
        let f = |p: &[f64]| {
            let mut kk = k.clone();
            kk.set_params(p).unwrap();
            hadamard_sum(w.as_ref(), kk.gram(x.as_ref()).as_ref())
        };
        check_gradient(
            f,
            &p0,
            1e-6,
            &g,
            Tol::ScaledByFd(1e-7),
            &format!("{mode:?}"),
        );
    }
}

#[test]
fn input_gradients_match_central_differences() {
    let k = kernel(2, 2, AlphaMode::PerProperty);
    let b = rows(6, 2, 2, (0.05, 0.5), 12);
    // Second property's σ̄ puts ℓ on the floor: its σ̄ gradient is exactly 0.
    let x = [0.4, 0.7, 0.35, 0.6, 0.2, 0.001];
    let g = k.grad_x(&x, b.as_ref());
    let row = |z: &[f64]| {
        let kz = k.cross(Mat::from_fn(1, 6, |_, c| z[c]).as_ref(), b.as_ref());
        (0..6).map(|r| kz[(0, r)]).collect::<Vec<f64>>()
    };
    for (j, fd) in fd_jacobian(row, &x, 1e-6).iter().enumerate() {
        let analytic: Vec<f64> = (0..6).map(|r| g[(r, j)]).collect();
        assert_gradient(&analytic, fd, Tol::Abs(1e-7), &format!("input {j}"));
    }
    assert!((0..6).all(|r| g[(r, 5)] == 0.0));
}

#[test]
fn marginal_likelihood_agrees_with_exact_gp_and_its_gradient_with_differences() {
    let k = kernel(2, 1, AlphaMode::Shared);
    let x = rows(15, 2, 1, (0.05, 0.6), 13);
    let y: Vec<f64> = (0..15)
        .map(|r| (3.0 * x[(r, 0)]).sin() + 2.0 * x[(r, 2)] - 1.0)
        .collect();
    let (mll, g) = log_marginal_likelihood(&k, x.as_ref(), &y, 0.1).unwrap();
    let gp = ExactGp::new(x.clone(), &y, Box::new(k.clone()), 0.1, 0.0).unwrap();
    assert!((mll - gp.log_marginal_likelihood()).abs() < 1e-10);
    let f = |p: &[f64]| {
        let mut kk = k.clone();
        kk.set_params(p).unwrap();
        ExactGp::new(x.clone(), &y, Box::new(kk), 0.1, 0.0)
            .unwrap()
            .log_marginal_likelihood()
    };
    check_gradient(
        f,
        &k.params(),
        1e-5,
        &g,
        Tol::ScaledByFd(1e-6),
        "log marginal likelihood",
    );
}

#[test]
fn fit_beats_a_brute_force_grid_over_the_paper_box() {
    // y depends on x and strongly on the property mean: the fit must find an
    // optimum at least as good as the best of a 25 × 25 grid over (log l, log α).
    let k = AugmentedGibbs::paper(1, 1).unwrap();
    let x = rows(25, 1, 1, (0.05, 0.4), 14);
    let y: Vec<f64> = (0..25)
        .map(|r| (2.0 * x[(r, 0)]).cos() + (6.0 * x[(r, 1)]).sin())
        .collect();
    let (sh, sc) = crate::exact::standardization(&y);
    let ys: Vec<f64> = y.iter().map(|v| (v - sh) / sc).collect();
    let fit = fit_augmented(&k, x.as_ref(), &ys, &AugmentedFit::default(), 3).unwrap();
    let b = k.log_bounds();
    let mut best = f64::NEG_INFINITY;
    for i in 0..25 {
        for j in 0..25 {
            let p = [
                b[0].0 + (b[0].1 - b[0].0) * i as f64 / 24.0,
                b[1].0 + (b[1].1 - b[1].0) * j as f64 / 24.0,
            ];
            let mut kk = k.clone();
            kk.set_params(&p).unwrap();
            let gp = ExactGp::new(x.clone(), &ys, Box::new(kk), 0.1, 0.0).unwrap();
            best = best.max(gp.log_marginal_likelihood());
        }
    }
    assert!(
        fit.log_marginal_likelihood >= best - 1e-6,
        "{} < {best}",
        fit.log_marginal_likelihood
    );
    assert!((fit.gp.log_marginal_likelihood() - fit.log_marginal_likelihood).abs() < 1e-9);
    for (v, (lo, hi)) in fit.kernel.params().iter().zip(&b) {
        assert!(*v >= lo - 1e-12 && *v <= hi + 1e-12);
    }
    // The fitted GP predicts through ExactGp at augmented rows.
    let (mu, var) = fit.gp.predict(x.as_ref()).unwrap();
    assert_eq!(mu.len(), 25);
    assert!(var.iter().all(|v| *v >= 0.0 && *v <= 1.0));
}

#[test]
fn bounds_follow_the_paper_and_bad_input_is_rejected() {
    let k = AugmentedGibbs::new(3, 2, AlphaMode::PerProperty, 0.5, 1.0, 0.01).unwrap();
    let b = k.log_bounds();
    assert_eq!(b.len(), 5);
    assert!((b[0].0 - 0.1f64.ln()).abs() < 1e-15 && b[0].1 == 0.0);
    assert!((b[4].0 - 0.01f64.ln()).abs() < 1e-15 && (b[4].1 - 2f64.ln()).abs() < 1e-15);
    assert_eq!(AugmentedGibbs::paper(3, 2).unwrap().log_bounds().len(), 4);
    assert_eq!(
        k.param_names(),
        [
            "lengthscale[0]",
            "lengthscale[1]",
            "lengthscale[2]",
            "alpha[0]",
            "alpha[1]"
        ]
    );
    let field = |e: Error| match e {
        Error::InvalidInput { field, .. } | Error::Dimension { field, .. } => field,
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(
        field(k.log_bounds_with((0.0, 1.0), (0.1, 2.0)).unwrap_err()),
        "lengthscale_bounds"
    );
    assert_eq!(
        field(k.log_bounds_with((0.1, 1.0), (2.0, 1.0)).unwrap_err()),
        "alpha_bounds"
    );
    assert_eq!(
        field(AugmentedGibbs::new(0, 2, AlphaMode::Shared, 0.5, 1.0, 0.01).unwrap_err()),
        "d"
    );
    assert_eq!(
        field(AugmentedGibbs::new(2, 2, AlphaMode::Shared, 0.5, -1.0, 0.01).unwrap_err()),
        "alpha0"
    );
    assert_eq!(
        field(AugmentedGibbs::new(2, 2, AlphaMode::Shared, 0.5, 1.0, 0.0).unwrap_err()),
        "floor"
    );
    let mut x = rows(4, 3, 2, (0.0, 1.0), 15);
    assert!(k.check_inputs("x", x.as_ref()).is_ok());
    x[(2, 6)] = -0.1;
    assert_eq!(
        field(k.check_inputs("x", x.as_ref()).unwrap_err()),
        "x[2][6]"
    );
    x[(2, 6)] = f64::NAN;
    assert_eq!(
        field(k.check_inputs("x", x.as_ref()).unwrap_err()),
        "x[2][6]"
    );
    let narrow = rows(4, 3, 1, (0.0, 1.0), 16);
    assert_eq!(
        field(k.check_inputs("x", narrow.as_ref()).unwrap_err()),
        "x columns"
    );
    // A wrong width gives NaN rather than a panic.
    assert!(k.gram(narrow.as_ref())[(0, 1)].is_nan());
    let mut kk = k.clone();
    assert!(kk.set_params(&[0.0; 4]).is_err());
    assert!(kk.set_params(&[0.0, 0.0, f64::INFINITY, 0.0, 0.0]).is_err());
    // augment: shapes and a negative std are named.
    let xs = Mat::<f64>::zeros(3, 2);
    let mu = Mat::<f64>::zeros(3, 2);
    let mut sd = Mat::<f64>::zeros(3, 2);
    assert_eq!(
        augment(xs.as_ref(), mu.as_ref(), sd.as_ref())
            .unwrap()
            .ncols(),
        6
    );
    sd[(1, 0)] = -1.0;
    assert_eq!(
        field(augment(xs.as_ref(), mu.as_ref(), sd.as_ref()).unwrap_err()),
        "sigma_bar[1][0]"
    );
    let short = Mat::<f64>::zeros(2, 2);
    assert_eq!(
        field(augment(xs.as_ref(), short.as_ref(), sd.as_ref()).unwrap_err()),
        "mu_bar rows"
    );
}
