//! Preferential BO through the ask/tell protocol.

use agora_core::{Answer, AnswerKind, Point, QueryKind};
use agora_methods::{PairRule, Pbo, PboConfig, Strategy};
use agora_problems::{Oracle, Problem, RaterModel};

fn run(rule: PairRule, seed: u64, n: usize) -> (Vec<Vec<Vec<f64>>>, Pbo) {
    let p = Problem::by_name("branin").unwrap();
    let mut o = Oracle::with_rater(
        Problem::by_name("branin").unwrap(),
        RaterModel::Probit { sigma: 3.0 },
        seed,
    )
    .unwrap();
    let mut s = Pbo::new(p.space.clone(), PboConfig::new(rule), seed).unwrap();
    let mut asked = Vec::new();
    for _ in 0..n {
        let q = s.ask().unwrap();
        let QueryKind::Compare { points, .. } = &q.kind else {
            panic!("PBO asks comparisons")
        };
        asked.push(
            points
                .iter()
                .map(|p| match p {
                    Point::Unit(u) => u.clone(),
                    _ => panic!(),
                })
                .collect(),
        );
        s.tell(&o.answer(&q).unwrap()).unwrap();
    }
    (asked, s)
}

#[test]
fn same_seed_same_pairs_and_the_winner_rule_keeps_the_winner() {
    for rule in [PairRule::Eubo, PairRule::Bald, PairRule::WinnerVsEubo] {
        let (a, _) = run(rule, 2, 10);
        let (b, _) = run(rule, 2, 10);
        assert_eq!(a, b, "{rule:?}");
    }
    let (asked, s) = run(PairRule::WinnerVsEubo, 3, 12);
    assert_eq!(s.comparisons().len(), 12);
    // After the random pairs, the first option is always the previous winner.
    for t in 7..12 {
        let prev = &asked[t - 1];
        assert!(
            prev.contains(&asked[t][0]),
            "pair {t} does not start with a previous option"
        );
    }
}

#[test]
fn pbo_finds_good_branin_points_with_a_reliable_rater() {
    // σ = 3 (1% of Branin's range): after 30 pairs the recommendation is near an optimum.
    let p = Problem::by_name("branin").unwrap();
    let opt = p.function.optimum_value();
    let regrets: Vec<f64> = (0..3)
        .map(|seed| {
            let (_, s) = run(PairRule::Eubo, seed, 30);
            let (Point::Unit(u), _) = s.recommend().unwrap() else {
                panic!()
            };
            opt - p.value_at_unit(&u).unwrap()
        })
        .collect();
    let mean = regrets.iter().sum::<f64>() / 3.0;
    // Random points have mean regret ≈ 54 on Branin.
    assert!(mean < 5.0, "regrets {regrets:?}");
}

#[test]
fn ties_best_of_k_and_bad_answers() {
    let p = Problem::by_name("branin").unwrap();
    let mut s = Pbo::new(p.space.clone(), PboConfig::new(PairRule::Eubo), 0).unwrap();
    let q = s.ask().unwrap();
    // Wrong kinds and indices are rejected without changing anything.
    assert!(
        s.tell(&Answer {
            query_id: q.id,
            kind: AnswerKind::Values {
                values: vec![1.0, 2.0]
            }
        })
        .is_err()
    );
    let e = s
        .tell(&Answer {
            query_id: q.id,
            kind: AnswerKind::Choice {
                winner: 5,
                rater: None,
            },
        })
        .unwrap_err();
    assert!(e.to_string().contains("winner"), "{e}");
    assert_eq!(s.n_answered(), 0);
    // A tie is recorded as a no-information event.
    s.tell(&Answer {
        query_id: q.id,
        kind: AnswerKind::Tie {
            rater: Some("ann".into()),
        },
    })
    .unwrap();
    assert_eq!((s.ties(), s.comparisons().len(), s.n_answered()), (1, 0, 1));
    assert!(s.recommend().is_none());
    let q = s.ask().unwrap();
    s.tell(&Answer {
        query_id: q.id,
        kind: AnswerKind::Choice {
            winner: 1,
            rater: None,
        },
    })
    .unwrap();
    assert_eq!(s.comparisons().len(), 1);
    assert!(s.model().is_some());
    let (Point::Unit(best), _) = s.recommend().unwrap() else {
        panic!()
    };
    let QueryKind::Compare { points, .. } = &q.kind else {
        panic!()
    };
    assert_eq!(
        Point::Unit(best),
        points[1],
        "the winner of the only comparison is recommended"
    );
    // A candidate-set space is refused with a clear error.
    let cands = agora_core::Space::Candidates {
        names: vec!["a".into()],
        features: vec![vec![0.0]],
    };
    assert!(
        Pbo::new(cands, PboConfig::new(PairRule::Eubo), 0)
            .unwrap_err()
            .to_string()
            .contains("box")
    );
}

#[test]
fn warm_started_fits_reach_the_same_mode_as_cold_solves() {
    // Regression: Newton warm-started from a mode for other hyperparameters once stopped far
    // from the mode (evidence off by hundreds of nats), which misled the hyperparameter fit.
    let p = Problem::by_name("hartmann6").unwrap();
    let mut o = Oracle::with_rater(
        Problem::by_name("hartmann6").unwrap(),
        RaterModel::Probit { sigma: 0.3 },
        3,
    )
    .unwrap();
    let mut s = Pbo::new(p.space.clone(), PboConfig::new(PairRule::Eubo), 3).unwrap();
    for _ in 0..40 {
        let q = s.ask().unwrap();
        s.tell(&o.answer(&q).unwrap()).unwrap();
        let gp = s.model().unwrap();
        let cold = agora_gp::PreferenceGp::new(
            gp.x().to_owned(),
            gp.comparisons().to_vec(),
            gp.kernel().box_clone(),
            gp.likelihood(),
        )
        .unwrap();
        assert!(
            (cold.log_evidence() - gp.log_evidence()).abs()
                < 1e-6 * (1.0 + cold.log_evidence().abs()),
            "warm {} vs cold {}",
            gp.log_evidence(),
            cold.log_evidence()
        );
    }
}

#[test]
fn initial_pairs_come_first_and_bad_settings_are_refused() {
    let p = Problem::by_name("branin").unwrap();
    let mut cfg = PboConfig::new(PairRule::Eubo);
    cfg.initial_pairs = vec![
        [vec![0.1, 0.2], vec![0.3, 0.4]],
        [vec![0.5, 0.6], vec![0.7, 0.8]],
    ];
    let mut s = Pbo::new(p.space.clone(), cfg.clone(), 0).unwrap();
    let mut o = Oracle::with_rater(
        Problem::by_name("branin").unwrap(),
        RaterModel::Probit { sigma: 3.0 },
        0,
    )
    .unwrap();
    for pair in &cfg.initial_pairs {
        let q = s.ask().unwrap();
        assert_eq!(
            q.kind.points(),
            vec![Point::Unit(pair[0].clone()), Point::Unit(pair[1].clone())]
        );
        s.tell(&o.answer(&q).unwrap()).unwrap();
    }
    // Then random pairs, not a repeat.
    let q = s.ask().unwrap();
    assert!(!q.kind.points().contains(&Point::Unit(vec![0.5, 0.6])));

    let refused = |f: fn(&mut PboConfig)| {
        let mut c = PboConfig::new(PairRule::Eubo);
        f(&mut c);
        Pbo::new(p.space.clone(), c, 0).unwrap_err().to_string()
    };
    let e = refused(|c| c.initial_pairs = vec![[vec![0.1], vec![0.2, 0.3]]]);
    assert!(e.contains("initial_pairs[0]"), "{e}");
    let e = refused(|c| c.initial_pairs = vec![[vec![0.1, 1.5], vec![0.2, 0.3]]]);
    assert!(
        e.contains("initial_pairs[0]") && e.contains("[0, 1]"),
        "{e}"
    );
    let e = refused(|c| c.trust_region = Some(0.5));
    assert!(e.contains("trust_region") && e.contains("winner"), "{e}");
    let e = refused(|c| {
        c.rule = PairRule::WinnerVsEubo;
        c.trust_region = Some(f64::NAN);
    });
    assert!(e.contains("trust_region"), "{e}");
}

#[test]
fn the_trust_region_keeps_the_challenger_near_the_winner() {
    let p = Problem::by_name("branin").unwrap();
    let mut cfg = PboConfig::new(PairRule::WinnerVsEubo);
    cfg.trust_region = Some(0.25);
    let mut s = Pbo::new(p.space.clone(), cfg, 4).unwrap();
    let mut o = Oracle::with_rater(
        Problem::by_name("branin").unwrap(),
        RaterModel::Probit { sigma: 3.0 },
        4,
    )
    .unwrap();
    for t in 0..14 {
        let q = s.ask().unwrap();
        if t >= 6 {
            let pts = q.kind.points();
            let (Point::Unit(w), Point::Unit(c)) = (&pts[0], &pts[1]) else {
                panic!()
            };
            let ls = s
                .model()
                .unwrap()
                .kernel()
                .spectral(2)
                .unwrap()
                .lengthscales;
            for j in 0..2 {
                assert!(
                    (w[j] - c[j]).abs() <= 0.25 * ls[j] + 1e-12,
                    "pair {t}: coordinate {j} moved {} > 0.25 × {}",
                    (w[j] - c[j]).abs(),
                    ls[j]
                );
            }
        }
        s.tell(&o.answer(&q).unwrap()).unwrap();
    }
}

/// The mechanism behind `model=capped` (`agora_methods::pbo::capped_model`): on Hartmann6
/// with the paired protocol's rater (σ = 10 % of the range), the Laplace evidence of
/// BoTorch's preset pushes the output scale beyond 8 and its EUBO pairs onto the box's
/// faces; the capped preset keeps the scale within [0.5, 8] and asks fewer coordinates on
/// a bound. Counted over three seeds, 14 random and 26 EUBO pairs each.
#[test]
fn the_capped_model_bounds_the_output_scale_and_leaves_the_faces() {
    let p = Problem::by_name("hartmann6").unwrap();
    let run = |model: Option<agora_gp::PrefConfig>, seed: u64| {
        let mut cfg = PboConfig::new(PairRule::Eubo);
        if let Some(m) = model {
            cfg.model = m;
        }
        let mut o = Oracle::with_rater(
            Problem::by_name("hartmann6").unwrap(),
            RaterModel::Probit { sigma: 0.33 },
            seed,
        )
        .unwrap();
        let mut s = Pbo::new(p.space.clone(), cfg, seed).unwrap();
        let (mut on_face, mut asked) = (0usize, 0usize);
        for t in 0..40 {
            let q = s.ask().unwrap();
            if t >= 14 {
                for pt in q.kind.points() {
                    let Point::Unit(u) = pt else { panic!() };
                    on_face += u.iter().filter(|v| **v < 1e-3 || **v > 1.0 - 1e-3).count();
                    asked += u.len();
                }
            }
            s.tell(&o.answer(&q).unwrap()).unwrap();
        }
        let scale = s.model().unwrap().kernel().params()[0].exp();
        (scale, on_face as f64 / asked as f64)
    };
    let (mut face_b, mut face_c, mut max_b) = (0.0, 0.0, 0.0f64);
    for seed in 0..3 {
        let (sb, fb) = run(None, seed);
        let (sc, fc) = run(Some(agora_methods::pbo::capped_model()), seed);
        eprintln!("seed {seed}: scale {sb:.2} / {sc:.2}, on a face {fb:.3} / {fc:.3}");
        assert!((0.5..=8.0).contains(&sc), "capped scale {sc}");
        max_b = max_b.max(sb);
        face_b += fb;
        face_c += fc;
    }
    assert!(max_b > 8.0, "BoTorch's preset stayed at {max_b}");
    assert!(
        face_c < face_b / 3.0,
        "on a face: capped {face_c}, BoTorch {face_b}"
    );
}

/// Imported comparisons and enqueued options (pbo and GP-BO): imports stand in for the
/// random start and are not answers; an enqueued option is asked next (compared with the
/// EUBO challenger against it, or evaluated); a snapshot taken with an option still queued
/// restores to the same questions; wrong data and bad points are refused and change nothing.
#[test]
fn imports_and_enqueued_options_survive_a_snapshot() {
    use agora_core::Observation;
    let p = Problem::by_name("branin").unwrap();
    let comparisons: Vec<Observation> = (0..6)
        .map(|k| {
            let a = 0.1 + 0.13 * k as f64;
            Observation::Comparison {
                winner: vec![a, 0.8],
                loser: vec![1.0 - a, 0.1],
            }
        })
        .collect();
    let mut s = Pbo::new(p.space.clone(), PboConfig::new(PairRule::Eubo), 4).unwrap();
    let first = s.ask().unwrap();
    let e = s
        .import(&[Observation::Evaluation {
            point: vec![0.5, 0.5],
            value: 1.0,
        }])
        .unwrap_err();
    assert!(e.to_string().contains("import[0]"), "{e}");
    let e = s
        .import(&[Observation::Comparison {
            winner: vec![0.5, 1.5],
            loser: vec![0.1, 0.1],
        }])
        .unwrap_err();
    assert!(e.to_string().contains("import[0].winner"), "{e}");
    assert_eq!(s.ask().unwrap(), first, "a refused import changes nothing");
    s.import(&comparisons).unwrap();
    assert_eq!(s.n_answered(), 0);
    assert_eq!(s.comparisons().len(), 6);
    assert!(
        s.raters()
            .iter()
            .all(|r| r.as_deref() == Some(agora_methods::pbo::IMPORTED_RATER))
    );
    let second = s.ask().unwrap();
    assert_ne!(second, first, "the model's pair, not the random start");
    assert!(s.enqueue(&[0.5]).is_err());
    s.enqueue(&[0.25, 0.75]).unwrap();
    let snap = s.snapshot().unwrap().unwrap();
    let mut r = Pbo::new(p.space.clone(), PboConfig::new(PairRule::Eubo), 4).unwrap();
    r.restore(&snap).unwrap();
    let mut o = Oracle::with_rater(
        Problem::by_name("branin").unwrap(),
        RaterModel::Probit { sigma: 3.0 },
        4,
    )
    .unwrap();
    let a = o.answer(&second).unwrap();
    s.tell(&a).unwrap();
    r.tell(&a).unwrap();
    let (q, qr) = (s.ask().unwrap(), r.ask().unwrap());
    assert_eq!(q, qr);
    assert_eq!(q.kind.points()[0], Point::Unit(vec![0.25, 0.75]));
    assert!(s.import(&comparisons).is_err(), "no import after an answer");

    let mut g = agora_methods::GpBo::new(
        p.space.clone(),
        agora_methods::GpBoConfig::new(agora_methods::StandardAcq::LogEi, 2),
        2,
    )
    .unwrap();
    let design = g.ask().unwrap();
    let evals: Vec<Observation> = (0..6)
        .map(|k| Observation::Evaluation {
            point: vec![0.15 * k as f64, 0.3],
            value: -(k as f64 - 2.0).powi(2),
        })
        .collect();
    assert!(g.import(&comparisons).is_err());
    g.import(&evals).unwrap();
    assert_eq!(g.n_answered(), 0);
    let q = g.ask().unwrap();
    assert_ne!(q, design);
    assert_eq!(g.recommend().unwrap().1, 0.0, "the best imported value");
    g.enqueue(&[0.9, 0.9]).unwrap();
    let snap = g.snapshot().unwrap().unwrap();
    let mut gr = agora_methods::GpBo::new(
        p.space.clone(),
        agora_methods::GpBoConfig::new(agora_methods::StandardAcq::LogEi, 2),
        2,
    )
    .unwrap();
    gr.restore(&snap).unwrap();
    let a = o.answer(&q).unwrap();
    g.tell(&a).unwrap();
    gr.tell(&a).unwrap();
    let (q2, q2r) = (g.ask().unwrap(), gr.ask().unwrap());
    assert_eq!(q2, q2r);
    assert_eq!(q2.kind.points(), vec![Point::Unit(vec![0.9, 0.9])]);
    assert_eq!(g.n_answered(), 1);
}
