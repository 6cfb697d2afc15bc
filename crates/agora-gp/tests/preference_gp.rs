//! The Laplace preference GP against independent references: the BoTorch / numpy fixtures
//! of conformance/preference-gp, a brute-force optimizer, finite differences, and
//! degenerate data.

mod common;
use agora_gp::kernel::{Kernel, Scale, Stationary, StationaryKind};
use agora_gp::preference::merge_duplicates;
use agora_gp::{Comparison, PrefConfig, PrefLikelihood, PreferenceGp};
use agora_math::fd::{Tol, assert_gradient, fd_gradient, fd_jacobian};
use common::{floats, rows};
use faer::Mat;

fn rbf(ls: &[f64], s: f64) -> Box<dyn Kernel> {
    let mut k = Stationary::ard(StationaryKind::Rbf, ls.len(), 1.0);
    k.set_params(&ls.iter().map(|l| l.ln()).collect::<Vec<_>>())
        .unwrap();
    Box::new(Scale::new(Box::new(k), s))
}

fn check(name: &str, actual: &[f64], expected: &[f64], abs: f64, rel: f64, out: &mut Vec<String>) {
    assert_eq!(actual.len(), expected.len(), "{name}: length");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        if (a - e).abs() > abs + rel * e.abs() {
            out.push(format!("{name}[{i}]: {a} vs {e}"));
        }
    }
}

#[test]
fn conformance_preference_gp_fixtures() {
    let files = common::fixture_files("preference-gp");
    let mut failures = Vec::new();
    let mut checked = 0;
    for f in &files {
        let c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let d = c["d"].as_u64().unwrap() as usize;
        let x = agora_gp::rows_to_mat("datapoints", &rows(&c["datapoints"]), d).unwrap();
        let xt = agora_gp::rows_to_mat("x_test", &rows(&c["x_test"]), d).unwrap();
        let comps: Vec<Comparison> = rows(&c["comparisons"])
            .iter()
            .map(|p| Comparison::new(p[0] as usize, p[1] as usize))
            .collect();
        let kernel = rbf(
            &floats(&c["kernel"]["lengthscales"]),
            c["kernel"]["outputscale"].as_f64().unwrap(),
        );
        let (abs, rel) = (
            c["tolerance"]["abs"].as_f64().unwrap(),
            c["tolerance"]["rel"].as_f64().unwrap(),
        );
        let id = c["case_id"].as_str().unwrap_or("?").to_string();
        let clamp = c["likelihood"]["z_clamp"].as_f64().unwrap();
        // The pure probit (agora's default) against `expected_without_clamp` where present,
        // and BoTorch's clamped probit against `expected` everywhere.
        let mut runs = vec![(
            PrefLikelihood::ProbitClamped(clamp),
            &c["expected"],
            "clamped",
        )];
        let pure = if c["expected_without_clamp"].is_object() {
            &c["expected_without_clamp"]
        } else {
            &c["expected"]
        };
        runs.push((PrefLikelihood::Probit, pure, "probit"));
        for (lik, exp, label) in runs {
            let gp = PreferenceGp::new(x.clone(), comps.clone(), kernel.clone(), lik).unwrap();
            let (m, v) = gp.predict(xt.as_ref()).unwrap();
            let tag = format!("{id} {label}");
            check(
                &format!("{tag} utility"),
                gp.utility(),
                &floats(&exp["utility"]),
                abs,
                rel,
                &mut failures,
            );
            check(
                &format!("{tag} mean"),
                &m,
                &floats(&exp["mean"]),
                abs,
                rel,
                &mut failures,
            );
            check(
                &format!("{tag} variance"),
                &v,
                &floats(&exp["variance"]),
                abs,
                rel,
                &mut failures,
            );
            let lml = exp["log_marginal_likelihood"].as_f64().unwrap();
            check(
                &format!("{tag} evidence"),
                &[gp.log_evidence()],
                &[lml],
                abs,
                rel,
                &mut failures,
            );
            checked += 1;
        }
    }
    assert!(checked > 0);
    assert!(
        failures.is_empty(),
        "{} values off:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn toy() -> (Mat<f64>, Vec<Comparison>) {
    let x = Mat::from_fn(6, 2, |i, j| {
        ((i as f64 + 1.0) * if j == 0 { 0.37 } else { 0.71 }).fract()
    });
    let comps = vec![
        Comparison::new(0, 1),
        Comparison::new(2, 1),
        Comparison::new(3, 4),
        Comparison::new(4, 3),
        Comparison::new(5, 0),
        Comparison {
            winner: 2,
            loser: 5,
            scale: 0.5,
        },
        Comparison::new(0, 1),
    ];
    (x, comps)
}

/// Central differences at steps 5e-4 and 1e-3 combined by Richardson extrapolation (error
/// O(h⁴)): the mode is exact only to round-off (~1e-9 in the evidence), so moderate steps
/// beat tiny ones.
fn richardson_gradient(f: &dyn Fn(&[f64]) -> f64, p0: &[f64]) -> Vec<f64> {
    let central = |h: f64| fd_gradient(f, p0, h);
    let (fine, coarse) = (central(5e-4), central(1e-3));
    fine.iter()
        .zip(&coarse)
        .map(|(f, c)| (4.0 * f - c) / 3.0)
        .collect()
}

/// `S(f) = ½ fᵀK⁻¹f − Σ log P(c | f)` with `log P = logp(f_w − f_l, scale)`.
fn map_objective<'a>(
    kinv: &'a Mat<f64>,
    comps: &'a [Comparison],
    logp: impl Fn(f64, f64) -> f64 + 'a,
) -> impl Fn(&[f64]) -> f64 + 'a {
    move |f: &[f64]| {
        let n = kinv.nrows();
        let q: f64 = (0..n)
            .map(|i| (0..n).map(|j| f[i] * kinv[(i, j)] * f[j]).sum::<f64>())
            .sum();
        0.5 * q
            - comps
                .iter()
                .map(|c| logp(f[c.winner] - f[c.loser], c.scale))
                .sum::<f64>()
    }
}

/// The minimizer of `obj` over six utilities by plain gradient descent with tiny steps and
/// finite-difference gradients, from 0.3 everywhere (a different algorithm from Newton).
fn descend(obj: &dyn Fn(&[f64]) -> f64, step: f64, iters: usize) -> Vec<f64> {
    let mut f = vec![0.3; 6];
    for _ in 0..iters {
        let g = fd_gradient(obj, &f, 1e-7);
        for i in 0..6 {
            f[i] -= step * g[i];
        }
    }
    f
}

#[test]
fn newton_mode_matches_a_brute_force_optimizer() {
    // Minimize S(f) = ½ fᵀK⁻¹f − Σ log P by plain gradient descent with tiny steps
    // (a different algorithm), from a different start.
    let (x, comps) = toy();
    for lik in [PrefLikelihood::Probit, PrefLikelihood::BradleyTerry] {
        let k = rbf(&[0.4, 0.6], 1.3);
        let gp = PreferenceGp::new(x.clone(), comps.clone(), k.clone(), lik).unwrap();
        let kinv = agora_math::linalg::Cholesky::new(k.gram(x.as_ref()).as_ref())
            .unwrap()
            .inverse();
        let logp = |d: f64, s: f64| match lik {
            PrefLikelihood::BradleyTerry => -(-d / s).exp().ln_1p(),
            _ => agora_math::special::log_ndtr(d / (std::f64::consts::SQRT_2 * s)),
        };
        let obj = map_objective(&kinv, &comps, logp);
        let f = descend(&obj, 2e-3, 200_000);
        for (a, b) in gp.utility().iter().zip(&f) {
            assert!(
                (a - b).abs() < 1e-4,
                "{lik:?}: newton {:?} vs descent {f:?}",
                gp.utility()
            );
        }
        assert!(obj(gp.utility()) <= obj(&f) + 1e-10);
    }
}

#[test]
fn evidence_gradient_matches_finite_differences() {
    let (x, comps) = toy();
    for lik in [
        PrefLikelihood::Probit,
        PrefLikelihood::BradleyTerry,
        PrefLikelihood::ProbitClamped(3.0),
    ] {
        let k0 = rbf(&[0.4, 0.6], 1.3);
        let p0 = k0.params();
        let ev = |p: &[f64]| {
            let mut k = k0.clone();
            k.set_params(p).unwrap();
            PreferenceGp::new(x.clone(), comps.clone(), k, lik).unwrap()
        };
        let g = ev(&p0).log_evidence_grad();
        let fd = richardson_gradient(&|p: &[f64]| ev(p).log_evidence(), &p0);
        assert_gradient(&g, &fd, Tol::ScaledByFd(1e-5), &format!("{lik:?}"));
    }
}

#[test]
fn predictive_gradients_and_joint_covariance_agree() {
    let (x, comps) = toy();
    let gp = PreferenceGp::new(x, comps, rbf(&[0.4, 0.6], 1.3), PrefLikelihood::Probit).unwrap();
    let p = [0.3, 0.55];
    let (m, v, dm, dv) = gp.predict_with_grad(&p).unwrap();
    let pm = Mat::from_fn(1, 2, |_, j| p[j]);
    let (m2, v2) = gp.predict(pm.as_ref()).unwrap();
    let (_, c) = gp.predict_cov(pm.as_ref()).unwrap();
    assert!(
        (m - m2[0]).abs() < 1e-12 && (v - v2[0]).abs() < 1e-12 && (c[(0, 0)] - v).abs() < 1e-12
    );
    let moments = |z: &[f64]| {
        let (m, v, _, _) = gp.predict_with_grad(z).unwrap();
        vec![m, v]
    };
    let fd = fd_jacobian(moments, &p, 1e-6);
    let (fdm, fdv): (Vec<f64>, Vec<f64>) = fd.iter().map(|r| (r[0], r[1])).unzip();
    assert_gradient(&dm, &fdm, Tol::Abs(1e-6), "mean");
    assert_gradient(&dv, &fdv, Tol::Abs(1e-6), "variance");
}

#[test]
fn degenerate_data_gives_errors_or_sane_posteriors() {
    let k = || rbf(&[0.5], 1.0);
    let x = Mat::from_fn(2, 1, |i, _| i as f64 * 0.5);
    // All-contradictory: a ≻ b and b ≻ a, 50 times each: equal utilities, finite evidence.
    let mut comps = Vec::new();
    for _ in 0..50 {
        comps.push(Comparison::new(0, 1));
        comps.push(Comparison::new(1, 0));
    }
    let gp = PreferenceGp::new(x.clone(), comps, k(), PrefLikelihood::Probit).unwrap();
    assert!((gp.utility()[0] - gp.utility()[1]).abs() < 1e-9);
    assert!(gp.log_evidence().is_finite());
    // Many repeats of one comparison: finite utilities, winner above loser.
    let gp = PreferenceGp::new(
        x.clone(),
        vec![Comparison::new(1, 0); 500],
        k(),
        PrefLikelihood::Probit,
    )
    .unwrap();
    assert!(gp.utility()[1] > gp.utility()[0] && gp.utility().iter().all(|u| u.is_finite()));
    // A single comparison.
    let gp = PreferenceGp::new(
        x.clone(),
        vec![Comparison::new(0, 1)],
        k(),
        PrefLikelihood::BradleyTerry,
    )
    .unwrap();
    let (m, v) = gp.predict(x.as_ref()).unwrap();
    assert!(m[0] > m[1] && v.iter().all(|v| v.is_finite() && *v > 0.0));
    // Self-comparison, unknown ids, NaN input, bad scale: clear errors.
    let e = PreferenceGp::new(
        x.clone(),
        vec![Comparison::new(1, 1)],
        k(),
        PrefLikelihood::Probit,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("comparisons[0]") && e.to_string().contains("itself"),
        "{e}"
    );
    let e = PreferenceGp::new(
        x.clone(),
        vec![Comparison::new(0, 7)],
        k(),
        PrefLikelihood::Probit,
    )
    .unwrap_err();
    assert!(e.to_string().contains("comparisons[0].loser"), "{e}");
    let e = PreferenceGp::new(x.clone(), vec![], k(), PrefLikelihood::Probit).unwrap_err();
    assert!(e.to_string().contains("comparisons"), "{e}");
    let nan = Mat::from_fn(2, 1, |i, _| if i == 1 { f64::NAN } else { 0.0 });
    let e = PreferenceGp::new(
        nan,
        vec![Comparison::new(0, 1)],
        k(),
        PrefLikelihood::Probit,
    )
    .unwrap_err();
    assert!(e.to_string().contains("points[1][0]"), "{e}");
    let e = PreferenceGp::new(
        x.clone(),
        vec![Comparison {
            winner: 0,
            loser: 1,
            scale: -1.0,
        }],
        k(),
        PrefLikelihood::Probit,
    )
    .unwrap_err();
    assert!(e.to_string().contains("scale"), "{e}");
    let e = gp
        .predict(Mat::from_fn(1, 2, |_, _| 0.0).as_ref())
        .unwrap_err();
    assert!(e.to_string().contains("columns"), "{e}");
    // Duplicates within 1e-4 merge; a comparison that becomes a self-comparison is rejected.
    let (u, c, map) = merge_duplicates(
        &[vec![0.2], vec![0.20005], vec![0.9]],
        &[Comparison::new(0, 2), Comparison::new(1, 0)],
        1e-4,
    );
    assert_eq!(u.len(), 2);
    assert_eq!(map, vec![0, 0, 1]);
    let x2 = agora_gp::rows_to_mat("points", &u, 1).unwrap();
    assert!(
        PreferenceGp::new(x2, c, k(), PrefLikelihood::Probit)
            .unwrap_err()
            .to_string()
            .contains("itself")
    );
}

#[test]
fn fitting_hyperparameters_increases_the_evidence() {
    let (x, comps) = toy();
    let cfg = PrefConfig::botorch();
    let start = PreferenceGp::new(
        x.clone(),
        comps.clone(),
        cfg.build_kernel(2),
        cfg.likelihood,
    )
    .unwrap();
    let (gp, rep) = PreferenceGp::fit(x, comps, &cfg, None).unwrap();
    assert!(rep.evals > 0);
    // The fitted loss is no worse than the start's (evidence + priors).
    let prior = |k: &dyn Kernel| -> f64 {
        let p = k.params();
        cfg.outputscale_prior.log_density_grad(p[0]).0
            + p[1..]
                .iter()
                .map(|q| cfg.lengthscale_prior.log_density_grad(*q).0)
                .sum::<f64>()
    };
    let l0 = -(start.log_evidence() + prior(start.kernel()));
    let l1 = -(gp.log_evidence() + prior(gp.kernel()));
    assert!(
        (l1 - rep.loss).abs() < 1e-9 && l1 <= l0 + 1e-12,
        "{l1} vs start {l0}"
    );
}

/// BOAP's rank GP (Eq. 4–5) puts `K_σ = K + σ̃²I` under the utilities at the compared
/// points. With the nugget: the mode is the minimizer of `½ fᵀK_σ⁻¹f − Σ log Φ` found by
/// plain gradient descent; at new points the mean is `k(x)ᵀ b(f̂)` with `b = K_σ⁻¹ f̂` the
/// likelihood's gradient at the mode (the note's check, §2.2); the evidence gradient still
/// matches finite differences. Without the nugget the mode misses `K_σ`'s minimizer.
#[test]
fn a_nugget_puts_k_plus_sigma2_i_under_the_utilities() {
    let (x, comps) = toy();
    let lik = PrefLikelihood::Probit;
    let nugget = 0.1;
    let k = rbf(&[0.4, 0.6], 1.0);
    let gp = PreferenceGp::with_nugget(
        x.clone(),
        comps.clone(),
        k.clone(),
        lik,
        (0.0, None),
        nugget,
    )
    .unwrap();
    assert_eq!(gp.nugget(), nugget);
    let mut ks = k.gram(x.as_ref());
    for i in 0..6 {
        ks[(i, i)] += nugget;
    }
    let kinv = agora_math::linalg::Cholesky::new(ks.as_ref())
        .unwrap()
        .inverse();
    let s2 = std::f64::consts::SQRT_2;
    let obj = map_objective(&kinv, &comps, |d, s| {
        agora_math::special::log_ndtr(d / (s2 * s))
    });
    let f = descend(&obj, 5e-3, 100_000);
    drop(obj);
    for (a, b) in gp.utility().iter().zip(&f) {
        assert!((a - b).abs() < 1e-4, "{:?} vs descent {f:?}", gp.utility());
    }
    let plain = PreferenceGp::new(x.clone(), comps.clone(), k.clone(), lik).unwrap();
    let gap = plain
        .utility()
        .iter()
        .zip(&f)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(gap > 1e-2, "the nugget changes the mode ({gap})");
    // b(f̂): the log-likelihood's gradient in f at the mode.
    let mut b = [0.0; 6];
    for c in &comps {
        let s = s2 * c.scale;
        let z = (gp.utility()[c.winner] - gp.utility()[c.loser]) / s;
        let r = (agora_math::special::log_norm_pdf(z) - agora_math::special::log_ndtr(z)).exp() / s;
        b[c.winner] += r;
        b[c.loser] -= r;
    }
    let xt = Mat::from_fn(3, 2, |i, j| 0.15 + 0.3 * i as f64 + 0.1 * j as f64);
    let (mean, _) = gp.predict(xt.as_ref()).unwrap();
    let kx = k.cross(x.as_ref(), xt.as_ref());
    for (c, m) in mean.iter().enumerate() {
        let kb: f64 = (0..6).map(|r| kx[(r, c)] * b[r]).sum();
        assert!((m - kb).abs() < 1e-8, "mean {m} vs kᵀb {kb}");
    }
    let p0 = k.params();
    let ev = |p: &[f64]| {
        let mut kk = k.clone();
        kk.set_params(p).unwrap();
        PreferenceGp::with_nugget(x.clone(), comps.clone(), kk, lik, (0.0, None), nugget)
            .unwrap()
            .log_evidence()
    };
    let fd = richardson_gradient(&ev, &p0);
    assert_gradient(
        &gp.log_evidence_grad(),
        &fd,
        Tol::ScaledByFd(1e-5),
        "nugget",
    );
    let e = PreferenceGp::with_nugget(x, comps, k, lik, (0.0, None), -1.0).unwrap_err();
    assert!(e.to_string().contains("nugget"), "{e}");
}

/// `restart_from_init`: a fit warm-started far from the data's optimum (a tiny output scale,
/// where the evidence is flat) also runs from the configured start and keeps the better
/// optimum, so its loss is never above the warm-only fit's, and it equals the better of the
/// two single-start fits.
#[test]
fn restart_from_init_keeps_the_better_of_warm_and_configured_starts() {
    let (x, comps) = toy();
    let cfg = PrefConfig::botorch();
    let warm = [0.005f64.ln(), 1e3f64.ln(), 1e3f64.ln()];
    let (_, only_warm) = PreferenceGp::fit(x.clone(), comps.clone(), &cfg, Some(&warm)).unwrap();
    let (_, only_init) = PreferenceGp::fit(x.clone(), comps.clone(), &cfg, None).unwrap();
    let both_cfg = PrefConfig {
        restart_from_init: true,
        ..cfg
    };
    let (_, both) = PreferenceGp::fit(x, comps, &both_cfg, Some(&warm)).unwrap();
    assert_eq!(both.evals, only_warm.evals + only_init.evals);
    assert!((both.loss - only_warm.loss.min(only_init.loss)).abs() < 1e-9);
    assert!(both.loss <= only_warm.loss);
}
