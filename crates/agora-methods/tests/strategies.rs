//! Strategies through the ask/tell protocol against oracles.

use agora_core::{Answer, AnswerKind, Error, Point, QueryKind};
use agora_methods::Strategy;
use agora_methods::registry::{self, Setup};
use agora_problems::{Oracle, Problem};

/// A registered method with its default knobs.
fn by_name(
    method: &str,
    space: agora_core::Space,
    seed: u64,
) -> agora_core::Result<Box<dyn Strategy>> {
    registry::build(method, &[], Setup::new(space, seed))
}

fn run(method: &str, problem: &str, seed: u64, budget: usize) -> (Vec<Vec<f64>>, f64) {
    let p = Problem::by_name(problem).unwrap();
    let space = p.space.clone();
    let opt = p.function.optimum_value();
    let mut oracle = Oracle::new(p, 0.0, seed).unwrap();
    let mut s = by_name(method, space, seed).unwrap();
    let mut xs = Vec::new();
    for _ in 0..budget {
        let q = s.ask().unwrap();
        let QueryKind::Evaluate { points } = &q.kind else {
            panic!()
        };
        if let Point::Unit(u) = &points[0] {
            xs.push(u.clone());
        }
        let a = oracle.answer(&q).unwrap();
        s.tell(&a).unwrap();
    }
    (xs, opt - s.recommend().unwrap().1)
}

#[test]
fn same_seed_same_proposals() {
    for m in ["random", "sobol", "gp-logei", "gp-ts"] {
        let (a, _) = run(m, "branin", 3, 14);
        let (b, _) = run(m, "branin", 3, 14);
        assert_eq!(a, b, "{m}");
        let (c, _) = run(m, "branin", 4, 14);
        assert_ne!(a, c, "{m}");
    }
}

#[test]
fn bad_answers_are_rejected_and_state_is_kept() {
    let p = Problem::by_name("branin").unwrap();
    let mut s = by_name("gp-ei", p.space.clone(), 0).unwrap();
    let e = s
        .tell(&Answer {
            query_id: 0,
            kind: AnswerKind::Values { values: vec![1.0] },
        })
        .unwrap_err();
    assert!(matches!(e, Error::NoOpenQuery), "{e}");
    let q = s.ask().unwrap();
    assert_eq!(s.ask().unwrap(), q, "asking twice returns the open query");
    let e = s
        .tell(&Answer {
            query_id: q.id,
            kind: AnswerKind::Values {
                values: vec![f64::NAN],
            },
        })
        .unwrap_err();
    assert!(e.to_string().contains("values[0]"), "{e}");
    let e = s
        .tell(&Answer {
            query_id: q.id + 7,
            kind: AnswerKind::Values { values: vec![1.0] },
        })
        .unwrap_err();
    assert!(e.to_string().contains("query_id"), "{e}");
    assert_eq!(s.n_answered(), 0);
    s.tell(&Answer {
        query_id: q.id,
        kind: AnswerKind::Values { values: vec![1.0] },
    })
    .unwrap();
    assert_eq!(s.n_answered(), 1);
    assert!(
        by_name("nope", p.space.clone(), 0)
            .unwrap_err()
            .to_string()
            .contains("gp-logei")
    );
}

#[test]
fn gp_bo_beats_random_search_on_branin() {
    // Mean simple regret over 4 seeds after 30 evaluations.
    let mean = |m: &str| (0..4).map(|s| run(m, "branin", s, 30).1).sum::<f64>() / 4.0;
    let (gp, rs) = (mean("gp-logei"), mean("random"));
    assert!(gp < 0.05, "gp-logei regret {gp}");
    assert!(gp < rs / 5.0, "gp-logei {gp} vs random {rs}");
    let ucb = mean("gp-ucb");
    let ts = mean("gp-ts");
    assert!(ucb < rs && ts < rs, "ucb {ucb}, ts {ts}, random {rs}");
}

#[test]
fn gp_bo_on_a_candidate_set_proposes_fresh_indices() {
    use agora_core::Space;
    // 40 candidates on a line; the value peaks at row 29.
    let features: Vec<Vec<f64>> = (0..40).map(|i| vec![i as f64 / 39.0]).collect();
    let names = (0..40).map(|i| format!("c{i}")).collect();
    let space = Space::Candidates {
        names,
        features: features.clone(),
    };
    let value = |i: usize| -((features[i][0] - 29.0 / 39.0) * 6.0).powi(2);
    for method in ["random", "gp-logei", "gp-ts", "gp-ucb"] {
        let mut s = by_name(method, space.clone(), 5).unwrap();
        let mut seen = Vec::new();
        for _ in 0..15 {
            let q = s.ask().unwrap();
            let QueryKind::Evaluate { points } = &q.kind else {
                panic!()
            };
            let Point::Index(i) = points[0] else {
                panic!("candidate sets propose indices")
            };
            assert!(!seen.contains(&i), "{method} repeated candidate {i}");
            seen.push(i);
            s.tell(&Answer::values(&q, vec![value(i)]).unwrap())
                .unwrap();
        }
        if method != "random" {
            assert_eq!(
                s.recommend().unwrap().0,
                Point::Index(29),
                "{method} missed the peak: {seen:?}"
            );
        }
    }
}

#[test]
fn gp_bo_on_a_mixed_space_proposes_representable_points() {
    use agora_core::{Param, ParamValue, Space};
    let space = Space::boxed(vec![
        Param::Real {
            name: "x".into(),
            lo: -2.0,
            hi: 2.0,
        },
        Param::LogReal {
            name: "rate".into(),
            lo: 1e-3,
            hi: 1.0,
        },
        Param::Integer {
            name: "layers".into(),
            lo: 1,
            hi: 5,
        },
        Param::Categorical {
            name: "kind".into(),
            choices: vec!["a".into(), "b".into(), "c".into()],
        },
    ])
    .unwrap();
    // Best at x = 0.5, rate = 0.01, layers = 3, kind = b.
    let value = |v: &[ParamValue]| -> f64 {
        let (ParamValue::Float(x), ParamValue::Float(r), ParamValue::Int(l), ParamValue::Choice(k)) =
            (&v[0], &v[1], &v[2], &v[3])
        else {
            panic!("decoded types")
        };
        -(x - 0.5).powi(2)
            - (r.log10() + 2.0).powi(2)
            - ((l - 3) as f64).powi(2)
            - if k == "b" { 0.0 } else { 1.0 }
    };
    let mut s = by_name("gp-logei", space.clone(), 1).unwrap();
    for _ in 0..30 {
        let q = s.ask().unwrap();
        let QueryKind::Evaluate { points } = &q.kind else {
            panic!()
        };
        let Point::Unit(u) = &points[0] else { panic!() };
        // Snapped: decoding and re-encoding is the identity.
        let v = space.to_user(u).unwrap();
        assert_eq!(&space.from_user(&v).unwrap(), u);
        s.tell(&Answer::values(&q, vec![value(&v)]).unwrap())
            .unwrap();
    }
    let (Point::Unit(best), f) = s.recommend().unwrap() else {
        panic!()
    };
    let v = space.to_user(&best).unwrap();
    assert_eq!(v[2], ParamValue::Int(3), "{v:?} ({f})");
    assert_eq!(v[3], ParamValue::Choice("b".into()), "{v:?} ({f})");
    assert!(f > -0.01, "best value {f} at {v:?}");
}

/// GP-BO's belief is read from a fresh fit: asking for it between rounds leaves every
/// proposal unchanged, and the noiseless GP nearly interpolates what it was told.
#[test]
fn gp_bo_belief_does_not_change_its_proposals() {
    let p = Problem::by_name("forrester").unwrap();
    let space = p.space.clone();
    let mut plain = by_name("gp-ei", space.clone(), 5).unwrap();
    let mut looked_at = by_name("gp-ei", space, 5).unwrap();
    assert!(
        looked_at.belief(&[vec![0.5]]).is_none(),
        "no data, no belief"
    );
    let mut oracle = Oracle::new(p, 0.0, 5).unwrap();
    let mut told = Vec::new();
    for _ in 0..13 {
        let q = plain.ask().unwrap();
        assert_eq!(looked_at.ask().unwrap(), q);
        let a = oracle.answer(&q).unwrap();
        plain.tell(&a).unwrap();
        looked_at.tell(&a).unwrap();
        let (QueryKind::Evaluate { points }, AnswerKind::Values { values }) = (&q.kind, &a.kind)
        else {
            panic!("GP-BO evaluates")
        };
        let Point::Unit(u) = &points[0] else {
            panic!("a box space")
        };
        told.push((u.clone(), values[0]));
        let b = looked_at.belief(&[u.clone(), vec![0.25]]).unwrap();
        assert!(b.iter().all(|(m, s)| m.is_finite() && *s >= 0.0));
    }
    // Forrester spans about [-6, 16]: interpolation within 5 % of that range.
    let xs: Vec<Vec<f64>> = told.iter().map(|(u, _)| u.clone()).collect();
    let b = looked_at.belief(&xs).unwrap();
    for ((m, _), (_, y)) in b.iter().zip(&told) {
        assert!((m - y).abs() < 1.0, "mean {m} at a point valued {y}");
    }
}
