//! Behaviour tests of the exact GP against independent references: a hand-solved case,
//! finite differences, the fixtures of ../conformance/exact-gp (mpmath / BoTorch), and the
//! BoTorch fit of docs/anchors/RESULTS.md §1 (copied to data/anchors).

mod common;
use agora_gp::kernel::{Kernel, Scale, Stationary, StationaryKind};
use agora_gp::{ExactGp, GpConfig};
use agora_math::fd::{Tol, assert_gradient, check_gradient, fd_gradient, fd_jacobian};
use common::{floats, rows};
use faer::Mat;
use rand::SeedableRng;

fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn close(actual: f64, expected: f64, abs: f64, rel: f64) -> bool {
    (actual - expected).abs() <= abs + rel * expected.abs()
}

#[test]
fn conformance_exact_gp_fixtures() {
    let files = common::fixture_files("exact-gp");
    let mut failures = Vec::new();
    for f in &files {
        let c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let d = c["d"].as_u64().unwrap() as usize;
        let ls = floats(&c["kernel"]["lengthscales"]);
        let kind = StationaryKind::parse(c["kernel"]["type"].as_str().unwrap()).unwrap();
        let mut st = Stationary::ard(kind, d, 1.0);
        st.set_params(&ls.iter().map(|l| l.ln()).collect::<Vec<_>>())
            .unwrap();
        let kernel = Scale::new(Box::new(st), c["kernel"]["outputscale"].as_f64().unwrap());
        let x = agora_gp::rows_to_mat("x_train", &rows(&c["x_train"]), d).unwrap();
        let xt = agora_gp::rows_to_mat("x_test", &rows(&c["x_test"]), d).unwrap();
        let y = floats(&c["y_train"]);
        let gp = ExactGp::new(
            x,
            &y,
            Box::new(kernel),
            c["noise_variance"].as_f64().unwrap(),
            c["mean"].as_f64().unwrap(),
        )
        .unwrap();
        let (mean, var) = gp.predict(xt.as_ref()).unwrap();
        let (abs, rel) = (
            c["tolerance"]["abs"].as_f64().unwrap(),
            c["tolerance"]["rel"].as_f64().unwrap(),
        );
        let id = c["case_id"].as_str().unwrap_or("?").to_string();
        for (i, (m, e)) in mean.iter().zip(floats(&c["expected"]["mean"])).enumerate() {
            if !close(*m, e, abs, rel) {
                failures.push(format!("{id} mean[{i}]: {m} vs {e}"));
            }
        }
        for (i, (v, e)) in var
            .iter()
            .zip(floats(&c["expected"]["variance"]))
            .enumerate()
        {
            if !close(*v, e, abs, rel) {
                failures.push(format!("{id} variance[{i}]: {v} vs {e}"));
            }
        }
        let lml = gp.log_marginal_likelihood();
        let e = c["expected"]["log_marginal_likelihood"].as_f64().unwrap();
        if !close(lml, e, abs, rel) {
            failures.push(format!("{id} lml: {lml} vs {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture values off:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn posterior_matches_a_hand_solved_case() {
    // One training point x = 0, y = 1, RBF l = 1, s = 1, noise 0.5, mean 0.
    // At x* = 1: k* = e^{-1/2}; mean = k*·1/(1 + 0.5); var = 1 − k*²/1.5.
    let gp = ExactGp::new(
        faer::mat![[0.0]],
        &[1.0],
        Box::new(Stationary::ard(StationaryKind::Rbf, 1, 1.0)),
        0.5,
        0.0,
    )
    .unwrap();
    let (m, v) = gp.predict(faer::mat![[1.0]].as_ref()).unwrap();
    let ks = (-0.5f64).exp();
    assert!((m[0] - ks / 1.5).abs() < 1e-15);
    assert!((v[0] - (1.0 - ks * ks / 1.5)).abs() < 1e-15);
    // LML = log N(1 | 0, 1.5).
    let lml = -0.5 / 1.5 - 0.5 * 1.5f64.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln();
    assert!((gp.log_marginal_likelihood() - lml).abs() < 1e-14);
}

fn anchor_data(n: usize) -> (Mat<f64>, Vec<f64>) {
    let text = std::fs::read_to_string(repo().join("data/anchors/gp_train_n2000.csv")).unwrap();
    let rows: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .take(n)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    let x = Mat::from_fn(n, 6, |i, j| rows[i][j]);
    (x, rows.iter().map(|r| r[7]).collect())
}

#[test]
fn botorch_loss_and_fit_at_n100() {
    // RESULTS.md §1, n = 100: loss at init 1.703188, final loss 1.189434, noise 5.347e-3,
    // lengthscales 0.3089, 0.3178, 2.8720, 0.3853, 0.3409, 0.3184, constant −0.3151.
    let (x, y) = anchor_data(100);
    let cfg = GpConfig::botorch(6);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let (gp, rep) = ExactGp::fit(x, &y, &cfg, &mut rng).unwrap();
    assert!(
        (rep.initial_loss - 1.703188).abs() < 2e-6,
        "init loss {}",
        rep.initial_loss
    );
    assert!(
        (rep.loss - 1.189434).abs() < 1e-4,
        "final loss {}",
        rep.loss
    );
    let h = gp.hyper();
    let ls: Vec<f64> = h.kernel.iter().map(|p| p.exp()).collect();
    for (a, b) in ls
        .iter()
        .zip([0.3089, 0.3178, 2.8720, 0.3853, 0.3409, 0.3184])
    {
        assert!((a - b).abs() < 0.02 * b, "lengthscales {ls:?}");
    }
    assert!(
        (h.noise - 5.347e-3).abs() < 0.02 * 5.347e-3,
        "noise {}",
        h.noise
    );
    assert!((h.mean + 0.3151).abs() < 0.01, "mean {}", h.mean);
    let (m, s) = gp.standardization();
    assert!((m - 0.27518).abs() < 1e-5 && (s - 0.38888).abs() < 1e-5);
}

#[test]
fn mll_gradient_matches_finite_differences_through_fit_objective() {
    // The fit converges to a stationary point only if the gradient is right; check directly
    // that the LML moves as the kernel gradient predicts, for a Matérn kernel with scale.
    let (x, y) = anchor_data(30);
    let mut cfg = GpConfig::optuna(6);
    cfg.optimizer.max_iter = 0;
    let base = |p: &[f64]| {
        let mut k = cfg.build_kernel(6);
        k.set_params(p).unwrap();
        ExactGp::new(x.clone(), &y, k, 0.01, 0.2)
            .unwrap()
            .log_marginal_likelihood()
    };
    let p0: Vec<f64> = vec![0.3, -0.5, -0.2, 0.1, -0.9, -0.4, -0.3];
    let mut k = cfg.build_kernel(6);
    k.set_params(&p0).unwrap();
    let gp = ExactGp::new(x.clone(), &y, k.box_clone(), 0.01, 0.2).unwrap();
    // ∂LML/∂θ = Σ W ∘ ∂K/∂θ with W = ½(ααᵀ − A⁻¹), formed here independently of the fit code.
    let mut a = k.gram(x.as_ref());
    for i in 0..30 {
        a[(i, i)] += 0.01;
    }
    let chol = agora_math::linalg::Cholesky::new(a.as_ref()).unwrap();
    let r: Vec<f64> = y.iter().map(|v| v - 0.2).collect();
    let al = chol.solve_vec(&r);
    let inv = chol.inverse();
    let w = Mat::from_fn(30, 30, |i, j| 0.5 * (al[i] * al[j] - inv[(i, j)]));
    let g = k.grad_contract(x.as_ref(), w.as_ref());
    assert!((gp.log_marginal_likelihood() - base(&p0)).abs() < 1e-12);
    check_gradient(
        &base,
        &p0,
        1e-5,
        &g,
        Tol::ScaledByFd(1e-5),
        "log marginal likelihood",
    );
}

#[test]
fn conditioning_equals_refitting_with_fixed_hyperparameters() {
    let (x, y) = anchor_data(40);
    let k = GpConfig::botorch(6).build_kernel(6);
    let head = ExactGp::new(
        x.as_ref().submatrix(0, 0, 30, 6).to_owned(),
        &y[..30],
        k.clone(),
        0.01,
        0.1,
    )
    .unwrap();
    let cond = head
        .condition(x.as_ref().submatrix(30, 0, 10, 6), &y[30..])
        .unwrap();
    let full = ExactGp::new(x.clone(), &y, k, 0.01, 0.1).unwrap();
    let xt = x.as_ref().submatrix(0, 0, 5, 6);
    let (m1, v1) = cond.predict(xt).unwrap();
    let (m2, v2) = full.predict(xt).unwrap();
    for i in 0..5 {
        assert!((m1[i] - m2[i]).abs() < 1e-10 && (v1[i] - v2[i]).abs() < 1e-10);
    }
    assert!((cond.log_marginal_likelihood() - full.log_marginal_likelihood()).abs() < 1e-9);
}

#[test]
fn predictive_gradients_match_finite_differences() {
    let (x, y) = anchor_data(25);
    let cfg = GpConfig::optuna(6);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let (gp, _) = ExactGp::fit(x, &y, &cfg, &mut rng).unwrap();
    let p = [0.3, 0.6, 0.2, 0.8, 0.5, 0.4];
    let (_, _, dm, dv) = gp.predict_with_grad(&p).unwrap();
    let moments = |z: &[f64]| {
        let (m, v, _, _) = gp.predict_with_grad(z).unwrap();
        vec![m, v]
    };
    let fd = fd_jacobian(moments, &p, 1e-6);
    let (fdm, fdv): (Vec<f64>, Vec<f64>) = fd.iter().map(|r| (r[0], r[1])).unzip();
    assert_gradient(&dm, &fdm, Tol::ScaledByAnalytic(1e-5), "mean");
    assert_gradient(&dv, &fdv, Tol::ScaledByAnalytic(1e-5), "variance");
    // predict and predict_with_grad agree, and the covariance diagonal is the variance.
    let pm = Mat::from_fn(1, 6, |_, j| p[j]);
    let (m, v) = gp.predict(pm.as_ref()).unwrap();
    let (m2, v2, _, _) = gp.predict_with_grad(&p).unwrap();
    let (_, c) = gp.predict_cov(pm.as_ref()).unwrap();
    assert!(
        (m[0] - m2).abs() < 1e-12 && (v[0] - v2).abs() < 1e-12 && (c[(0, 0)] - v[0]).abs() < 1e-12
    );
}

#[test]
fn bad_input_is_named_and_duplicates_work() {
    let k = || Box::new(Stationary::ard(StationaryKind::Rbf, 2, 0.5)) as Box<dyn Kernel>;
    let e = ExactGp::new(faer::mat![[0.0, f64::NAN]], &[1.0], k(), 0.1, 0.0).unwrap_err();
    assert!(e.to_string().contains("x_train[0][1]"), "{e}");
    let e = ExactGp::new(faer::mat![[0.0, 0.1]], &[f64::INFINITY], k(), 0.1, 0.0).unwrap_err();
    assert!(e.to_string().contains("y_train[0]"), "{e}");
    let e = ExactGp::new(faer::mat![[0.0, 0.1]], &[1.0, 2.0], k(), 0.1, 0.0).unwrap_err();
    assert!(e.to_string().contains("y_train"), "{e}");
    let e = ExactGp::new(Mat::zeros(0, 2), &[], k(), 0.1, 0.0).unwrap_err();
    assert!(e.to_string().contains("x_train"), "{e}");
    // Exact duplicates with zero noise: singular Gram, rescued by reported jitter.
    let gp = ExactGp::new(
        faer::mat![[0.2, 0.3], [0.2, 0.3], [0.7, 0.1]],
        &[1.0, 1.0, 0.0],
        k(),
        0.0,
        0.0,
    )
    .unwrap();
    assert!(gp.jitter() > 0.0);
    let e = gp
        .predict(faer::mat![[0.1, 0.2, 0.3]].as_ref())
        .unwrap_err();
    assert!(e.to_string().contains("x_test"), "{e}");
    // Fitting with duplicates also works.
    let x = faer::mat![[0.2, 0.3], [0.2, 0.3], [0.7, 0.1], [0.4, 0.9]];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    assert!(ExactGp::fit(x, &[1.0, 1.0, 0.0, 0.5], &GpConfig::botorch(2), &mut rng).is_ok());
}

#[test]
fn joint_vjp_matches_finite_differences() {
    // 12 training points in 2-D, a 3-point batch, random weights on mean and covariance.
    let x = Mat::from_fn(12, 2, |i, j| ((i * 7 + j * 3) % 11) as f64 / 11.0);
    let y: Vec<f64> = (0..12).map(|i| (i as f64 * 0.7).sin()).collect();
    let kernel = Box::new(Scale::new(
        Box::new(Stationary::ard(StationaryKind::Rbf, 2, 0.3)),
        0.8,
    ));
    let gp = ExactGp::new(x, &y, kernel, 0.01, 0.1).unwrap();
    let xs = Mat::from_fn(3, 2, |i, j| [[0.2, 0.7], [0.55, 0.1], [0.9, 0.45]][i][j]);
    let gm = [0.3, -1.1, 0.7];
    let gc = Mat::from_fn(3, 3, |i, j| {
        [[0.5, 0.2, -0.3], [0.2, 1.0, 0.4], [-0.3, 0.4, 0.8]][i][j]
    });
    let f = |xs: &Mat<f64>| {
        let (m, c) = gp.predict_cov(xs.as_ref()).unwrap();
        let mut v: f64 = m.iter().zip(&gm).map(|(a, b)| a * b).sum();
        for a in 0..3 {
            for b in 0..3 {
                v += gc[(a, b)] * c[(a, b)];
            }
        }
        v
    };
    let g = gp.joint_vjp(xs.as_ref(), &gm, gc.as_ref()).unwrap();
    // Row-major over the batch: coordinate 2a + j is input j of point a.
    let flat = |m: &Mat<f64>| -> Vec<f64> { (0..3).flat_map(|a| [m[(a, 0)], m[(a, 1)]]).collect() };
    let fd = fd_gradient(
        |v| f(&Mat::from_fn(3, 2, |a, j| v[2 * a + j])),
        &flat(&xs),
        1e-6,
    );
    assert_gradient(&flat(&g), &fd, Tol::Abs(1e-6), "joint VJP");
}

#[test]
fn optuna_preset_fits_from_the_warm_start_alone_and_reaches_the_same_optimum() {
    // Optuna's GPSampler starts each fit from the previous trial's hyperparameters only.
    let (x, y) = anchor_data(60);
    let cfg = GpConfig::optuna(6);
    assert!(cfg.warm_start_only && !GpConfig::botorch(6).warm_start_only);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let (cold, rep) = ExactGp::fit_from(x.clone(), &y, &cfg, None, &mut rng).unwrap();
    assert_eq!(rep.starts, 1);
    // Warm-started at the optimum it found: one start, and the same loss (it stays there).
    let warm = cold.hyper();
    let (again, rep2) = ExactGp::fit_from(x.clone(), &y, &cfg, Some(&warm), &mut rng).unwrap();
    assert_eq!(rep2.starts, 1);
    assert!(
        (rep2.loss - rep.loss).abs() < 1e-6 * rep.loss.abs().max(1.0),
        "{} vs {}",
        rep2.loss,
        rep.loss
    );
    assert!((rep2.initial_loss - rep.loss).abs() < 1e-6 * rep.loss.abs().max(1.0));
    let (m1, _) = cold.predict(x.as_ref()).unwrap();
    let (m2, _) = again.predict(x.as_ref()).unwrap();
    for (a, b) in m1.iter().zip(&m2) {
        assert!((a - b).abs() < 1e-4 * (1.0 + a.abs()), "{a} vs {b}");
    }
    // Without the switch, the init values are a start too.
    let both = GpConfig {
        warm_start_only: false,
        ..cfg
    };
    let (_, rep3) = ExactGp::fit_from(x, &y, &both, Some(&warm), &mut rng).unwrap();
    assert_eq!(rep3.starts, 2);
}

/// GIBO's gradient information against brute force: the trace of the posterior covariance of
/// `∇f(θ)` by central differences of `predict_cov`, before and after conditioning on a noisy
/// observation at `z` (the covariance does not depend on the observed value).
#[test]
fn gradient_information_is_the_drop_in_the_gradient_covariance_trace() {
    let d = 3;
    let x = Mat::from_fn(7, d, |i, j| {
        ((i * 5 + j * 3) % 7) as f64 / 7.0 + 0.05 * j as f64
    });
    let y: Vec<f64> = (0..7).map(|i| (i as f64 * 0.7).sin()).collect();
    let kernel = Box::new(Stationary::ard(StationaryKind::Matern52, d, 0.4));
    let gp = ExactGp::new(x.clone(), &y, kernel, 0.01, 0.0).unwrap();
    let theta = [0.4, 0.55, 0.3];
    let h = 1e-4;
    let trace = |g: &ExactGp| -> f64 {
        let mut pts = Mat::zeros(2 * d, d);
        for j in 0..d {
            for l in 0..d {
                pts[(2 * j, l)] = theta[l] + if l == j { h } else { 0.0 };
                pts[(2 * j + 1, l)] = theta[l] - if l == j { h } else { 0.0 };
            }
        }
        let (_, c) = g.predict_cov(pts.as_ref()).unwrap();
        (0..d)
            .map(|j| {
                (c[(2 * j, 2 * j)] - 2.0 * c[(2 * j, 2 * j + 1)] + c[(2 * j + 1, 2 * j + 1)])
                    / (4.0 * h * h)
            })
            .sum()
    };
    let before = trace(&gp);
    let zs = Mat::from_fn(3, d, |i, j| {
        [[0.45, 0.5, 0.35], [0.9, 0.1, 0.8], [0.4, 0.55, 0.3]][i][j]
    });
    let info = gp.gradient_information(&theta, zs.as_ref()).unwrap();
    for c in 0..3 {
        let z = Mat::from_fn(1, d, |_, j| zs[(c, j)]);
        let after = trace(&gp.condition(z.as_ref(), &[0.0]).unwrap());
        assert!(
            close(info[c], before - after, 1e-5, 1e-3),
            "z {c}: {} vs brute force {}",
            info[c],
            before - after
        );
    }
    // A point near θ tells more about the gradient than a far one.
    assert!(info[0] > info[1], "{info:?}");
}
