//! Suggesters on histories supplied from outside: GP-BO's suggester against GpBo itself,
//! canonical suggestions on mixed spaces, determinism, bad input, and preferential BO with
//! a noiseless rater against random search.

use agora_core::{Answer, Error, Param, ParamValue, Point, QueryKind, Space};
use agora_methods::{
    GpBo, GpBoConfig, GpSuggester, PreferenceSuggester, PreferenceSuggesterConfig, StandardAcq,
    Strategy,
};
use agora_problems::Problem;
use rand::RngExt;

/// A real, a log-real, an integer and a categorical parameter (d = 6).
fn mixed_space() -> Space {
    Space::boxed(vec![
        Param::Real {
            name: "x".into(),
            lo: -2.0,
            hi: 3.0,
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
    .unwrap()
}

/// Best at x = 0.5, rate = 0.01, layers = 3, kind = b (value 0).
fn mixed_value(space: &Space, u: &[f64]) -> f64 {
    let v = space.to_user(u).unwrap();
    let (ParamValue::Float(x), ParamValue::Float(r), ParamValue::Int(l), ParamValue::Choice(k)) =
        (&v[0], &v[1], &v[2], &v[3])
    else {
        panic!("decoded types {v:?}")
    };
    -(x - 0.5).powi(2)
        - (r.log10() + 2.0).powi(2)
        - ((l - 3) as f64).powi(2)
        - if k == "b" { 0.0 } else { 1.0 }
}

/// Branin (maximized) at a unit-cube point.
fn branin_at(u: &[f64]) -> f64 {
    Problem::by_name("branin")
        .unwrap()
        .value_at_unit(u)
        .unwrap()
}

/// Whether `u` is a canonical unit-cube point of `space`: in the cube, and decoding then
/// encoding gives it back (integers at their slice centre, categoricals one-hot; reals
/// within rounding).
fn assert_canonical(space: &Space, u: &[f64]) {
    assert_eq!(u.len(), space.dim());
    assert!(u.iter().all(|v| (0.0..=1.0).contains(v)), "{u:?}");
    let back = space.from_user(&space.to_user(u).unwrap()).unwrap();
    for (a, b) in back.iter().zip(u) {
        assert!((a - b).abs() < 1e-12, "{u:?} is not canonical: {back:?}");
    }
}

/// GpBo with `n_init` Sobol points against a GpSuggester fed GpBo's evaluations: after the
/// Sobol points, every GpBo ask is the suggester's suggestion, bit for bit.
fn suggester_follows_gp_bo(space: Space, acq: StandardAcq, f: &dyn Fn(&[f64]) -> f64, seed: u64) {
    let n_init = 6;
    let cfg = GpBoConfig {
        n_init,
        ..GpBoConfig::new(acq, space.dim())
    };
    let mut bo = GpBo::new(space.clone(), cfg, seed).unwrap();
    let mut sug = GpSuggester::new(space, acq, seed).unwrap();
    for t in 0..n_init + 4 {
        let q = bo.ask().unwrap();
        let QueryKind::Evaluate { points } = &q.kind else {
            panic!("GP-BO evaluates")
        };
        let Point::Unit(u) = &points[0] else {
            panic!("a box space")
        };
        if t >= n_init {
            assert_eq!(
                &sug.suggest().unwrap(),
                u,
                "{acq:?}, seed {seed}, round {t}"
            );
        }
        let y = f(u);
        bo.tell(&Answer::values(&q, vec![y]).unwrap()).unwrap();
        sug.observe(u, y).unwrap();
    }
    assert_eq!(sug.n_observed(), n_init + 4);
}

#[test]
fn gp_suggester_fed_gp_bo_history_proposes_gp_bo_next_points() {
    let branin = Problem::by_name("branin").unwrap().space;
    for acq in [
        StandardAcq::LogEi,
        StandardAcq::Ei,
        StandardAcq::Ucb { beta: 2.0 },
        StandardAcq::Thompson,
    ] {
        suggester_follows_gp_bo(branin.clone(), acq, &branin_at, 3);
    }
    let mixed = mixed_space();
    let f = |u: &[f64]| mixed_value(&mixed_space(), u);
    suggester_follows_gp_bo(mixed, StandardAcq::LogEi, &f, 5);
}

#[test]
fn gp_suggestions_are_canonical_on_a_mixed_space_and_improve() {
    let space = mixed_space();
    let mut s = GpSuggester::new(space.clone(), StandardAcq::LogEi, 11).unwrap();
    assert_canonical(&space, &s.suggest().unwrap());
    // Start-up trials from elsewhere, not canonical (a categorical block that is not
    // one-hot, an integer off its slice centre): observe snaps them.
    let mut rng = agora_math::rng::stream(11, &[99]);
    for _ in 0..8 {
        let u: Vec<f64> = (0..space.dim()).map(|_| rng.random::<f64>()).collect();
        s.observe(&u, mixed_value(&space, &u)).unwrap();
    }
    let start_best = (0..8)
        .map(|_| {
            let u: Vec<f64> = (0..space.dim()).map(|_| rng.random::<f64>()).collect();
            mixed_value(&space, &u)
        })
        .fold(f64::NEG_INFINITY, f64::max);
    let mut best = f64::NEG_INFINITY;
    for _ in 0..20 {
        let u = s.suggest().unwrap();
        assert_canonical(&space, &u);
        let y = mixed_value(&space, &u);
        best = best.max(y);
        s.observe(&u, y).unwrap();
    }
    assert!(
        best > -0.05,
        "best {best} (random start-up points reached {start_best})"
    );
    let next = s.suggest().unwrap();
    let b = s.belief(&[next]).unwrap();
    assert!(b[0].0.is_finite() && b[0].1 >= 0.0, "{b:?}");
}

#[test]
fn gp_suggester_is_deterministic() {
    let space = Problem::by_name("branin").unwrap().space;
    let xs: Vec<Vec<f64>> = agora_math::design::sobol(9, 2, 4).unwrap();
    let ys: Vec<f64> = xs.iter().map(|u| branin_at(u)).collect();
    let mut a = GpSuggester::new(space.clone(), StandardAcq::LogEi, 8).unwrap();
    let mut b = GpSuggester::new(space.clone(), StandardAcq::LogEi, 8).unwrap();
    for (x, y) in xs.iter().zip(&ys) {
        a.observe(x, *y).unwrap();
    }
    b.observe_many(&xs, &ys).unwrap();
    let first = a.suggest().unwrap();
    assert_eq!(b.suggest().unwrap(), first);
    // Reading the belief changes nothing; reset makes the suggester as new.
    a.belief(&xs).unwrap();
    a.observe(&first, branin_at(&first)).unwrap();
    let second = a.suggest().unwrap();
    a.reset();
    assert_eq!(a.n_observed(), 0);
    a.observe_many(&xs, &ys).unwrap();
    assert_eq!(a.suggest().unwrap(), first);
    a.observe(&first, branin_at(&first)).unwrap();
    assert_eq!(a.suggest().unwrap(), second);
    // A clone continues exactly as the original.
    let mut c = a.clone();
    assert_eq!(c.suggest().unwrap(), a.suggest().unwrap());
}

fn invalid_field(e: Error) -> String {
    match e {
        Error::InvalidInput { field, .. } | Error::Dimension { field, .. } => field,
        other => panic!("not an input error: {other}"),
    }
}

#[test]
fn gp_suggester_refuses_bad_input_and_keeps_its_state() {
    let space = mixed_space();
    let mut s = GpSuggester::new(space.clone(), StandardAcq::LogEi, 1).unwrap();
    let ok = vec![0.5; space.dim()];
    assert_eq!(invalid_field(s.observe(&ok, f64::NAN).unwrap_err()), "y");
    assert_eq!(
        invalid_field(s.observe(&ok, f64::INFINITY).unwrap_err()),
        "y"
    );
    assert_eq!(invalid_field(s.observe(&[0.5, 0.5], 1.0).unwrap_err()), "x");
    let mut bad = ok.clone();
    bad[1] = 1.5;
    assert_eq!(invalid_field(s.observe(&bad, 1.0).unwrap_err()), "x[1]");
    bad[1] = f64::NAN;
    assert_eq!(invalid_field(s.observe(&bad, 1.0).unwrap_err()), "x[1]");
    let xs = vec![ok.clone(), ok.clone()];
    assert_eq!(
        invalid_field(s.observe_many(&xs, &[1.0]).unwrap_err()),
        "ys"
    );
    assert_eq!(
        invalid_field(s.observe_many(&xs, &[1.0, f64::NAN]).unwrap_err()),
        "ys[1]"
    );
    assert_eq!(
        invalid_field(
            s.observe_many(&[ok.clone(), vec![0.1]], &[1.0, 2.0])
                .unwrap_err()
        ),
        "xs[1]"
    );
    assert_eq!(s.n_observed(), 0, "nothing recorded");
    assert!(matches!(
        s.belief(std::slice::from_ref(&ok)),
        Err(Error::State(_))
    ));
    s.observe(&ok, 1.0).unwrap();
    assert_eq!(
        invalid_field(s.belief(&[vec![0.5]]).unwrap_err()),
        "points[0]"
    );
    let cands = Space::Candidates {
        names: vec!["a".into()],
        features: vec![vec![0.0]],
    };
    assert_eq!(
        invalid_field(GpSuggester::new(cands.clone(), StandardAcq::LogEi, 1).unwrap_err()),
        "space"
    );
    assert_eq!(
        invalid_field(PreferenceSuggester::new(cands, 1).unwrap_err()),
        "space"
    );
    assert_eq!(
        invalid_field(GpSuggester::new(space, StandardAcq::Ucb { beta: -1.0 }, 1).unwrap_err()),
        "beta"
    );
}

#[test]
fn suggesters_are_send() {
    fn send<T: Send + Clone + std::fmt::Debug>() {}
    send::<GpSuggester>();
    send::<PreferenceSuggester>();
}

/// One preferential run against a noiseless rater of `f`: two options, then each suggestion
/// against the option it is meant for ([`PreferenceSuggester::reference`], the person's
/// standing favourite), `comparisons` answers in all. Returns the suggester and the true
/// value of the final reference (the person's pick).
fn preference_run_with(
    space: &Space,
    f: &dyn Fn(&[f64]) -> f64,
    cfg: PreferenceSuggesterConfig,
    seed: u64,
    comparisons: usize,
) -> (PreferenceSuggester, f64) {
    let mut s = PreferenceSuggester::with_config(space.clone(), seed, cfg).unwrap();
    let x0 = s.suggest().unwrap();
    let a = s.add_option(&x0).unwrap();
    let x1 = s.suggest().unwrap();
    let b = s.add_option(&x1).unwrap();
    let answer = |s: &mut PreferenceSuggester, i: usize, j: usize| {
        let (fi, fj) = (f(s.option(i).unwrap()), f(s.option(j).unwrap()));
        if fi > fj {
            s.prefer(i, j).unwrap()
        } else if fj > fi {
            s.prefer(j, i).unwrap()
        } else {
            s.tie(i, j).unwrap()
        }
    };
    answer(&mut s, a, b);
    for _ in 1..comparisons {
        let x = s.suggest().unwrap();
        assert_canonical(space, &x);
        let c = s.add_option(&x).unwrap();
        let reference = s.reference().unwrap();
        answer(&mut s, reference, c);
    }
    assert_eq!(s.n_comparisons() + s.ties(), comparisons);
    let pick = s.reference().unwrap();
    let v = f(s.option(pick).unwrap());
    (s, v)
}

fn preference_run(
    space: &Space,
    f: &dyn Fn(&[f64]) -> f64,
    seed: u64,
    comparisons: usize,
) -> (PreferenceSuggester, f64) {
    preference_run_with(
        space,
        f,
        PreferenceSuggesterConfig::default(),
        seed,
        comparisons,
    )
}

/// Paired over 40 seeds: the true value of the person's pick after 20 noiseless
/// comparisons (21 options) against the best of 21 uniform points (what random challengers
/// reach against a noiseless rater); the mean paired gain must exceed 2 standard errors
/// (the project's rule). Measured when written: gain +0.89 (2 SE 0.73), the pick's regret
/// 0.97 against random search's 1.86 on average; a thin margin (over seeds 0–19 alone:
/// +1.06, 2 SE 0.96; over 0–9 it is not significant).
///
/// With [`PreferenceSuggesterConfig::pairwise_gp`] (BoTorch's `PairwiseGP` preset, EUBO over
/// the whole box) the same run loses to random search: gain −4.49 (2 SE 1.35), regret 6.35.
/// With an unbounded output scale a noiseless loss saturates the probit, the comparison's
/// Laplace curvature vanishes, and EUBO keeps asking at the box's corners.
#[test]
fn preference_suggester_beats_random_search_on_branin() {
    let space = Problem::by_name("branin").unwrap().space;
    let n = 20;
    let pairs: Vec<(f64, f64)> = (0..40u64)
        .map(|seed| {
            let (_, pick) = preference_run(&space, &branin_at, seed, n);
            let mut rng = agora_math::rng::stream(seed, &[7]);
            let random = (0..=n)
                .map(|_| branin_at(&[rng.random::<f64>(), rng.random::<f64>()]))
                .fold(f64::NEG_INFINITY, f64::max);
            (pick, random)
        })
        .collect();
    let diffs: Vec<f64> = pairs.iter().map(|(p, r)| p - r).collect();
    let k = diffs.len() as f64;
    let mean = diffs.iter().sum::<f64>() / k;
    let sd = (diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
    let se = sd / k.sqrt();
    assert!(
        mean > 2.0 * se,
        "mean paired gain {mean:.3} vs 2 SE {:.3}; (pick, random best) per seed: {pairs:.2?}",
        2.0 * se
    );
}

#[test]
fn preference_suggester_follows_a_noiseless_raters_favourite() {
    // After 20 noiseless comparisons on Branin, each suggestion compared with the reference:
    // the reference is always the option that won the latest comparison (the person's
    // favourite), so at the end it is the truly best compared option; and the posterior
    // means reproduce the comparisons made (the winner's mean is the larger) in at least
    // 85% of them (18 to 20 of 20 when written). Not all: the bounded output scale reads a
    // person's answers as noisy.
    let space = Problem::by_name("branin").unwrap().space;
    for seed in 0..5 {
        let (s, v) = preference_run(&space, &branin_at, seed, 20);
        let compared: Vec<usize> = (0..s.n_options())
            .filter(|i| {
                s.comparisons()
                    .iter()
                    .any(|c| c.winner == *i || c.loser == *i)
            })
            .collect();
        let truth = compared
            .iter()
            .map(|&i| branin_at(s.option(i).unwrap()))
            .fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(v, truth, "seed {seed}");
        assert_eq!(s.reference(), s.comparisons().last().map(|c| c.winner));
        let points: Vec<Vec<f64>> = (0..s.n_options())
            .map(|i| s.option(i).unwrap().to_vec())
            .collect();
        let belief = s.belief(&points).unwrap();
        let kept = s
            .comparisons()
            .iter()
            .filter(|c| belief[c.winner].0 > belief[c.loser].0)
            .count();
        assert!(
            kept * 20 >= s.n_comparisons() * 17,
            "seed {seed}: {kept} of {} comparisons reproduced",
            s.n_comparisons()
        );
    }
}

#[test]
fn preference_suggester_handles_a_categorical_choice() {
    let space = Space::boxed(vec![
        Param::Real {
            name: "x".into(),
            lo: 0.0,
            hi: 1.0,
        },
        Param::Categorical {
            name: "kind".into(),
            choices: vec!["a".into(), "b".into(), "c".into()],
        },
    ])
    .unwrap();
    let f = |u: &[f64]| {
        let v = space.to_user(u).unwrap();
        let (ParamValue::Float(x), ParamValue::Choice(k)) = (&v[0], &v[1]) else {
            panic!("{v:?}")
        };
        let penalty = match k.as_str() {
            "b" => 0.0,
            "c" => 0.5,
            _ => 1.0,
        };
        -4.0 * (x - 0.3).powi(2) - penalty
    };
    for seed in 0..3 {
        let (s, v) = preference_run(&space, &f, seed, 15);
        let best = s.option(s.best().unwrap()).unwrap();
        assert_eq!(
            space.to_user(best).unwrap()[1],
            ParamValue::Choice("b".into()),
            "seed {seed}: best {best:?} ({v})"
        );
        assert!(v > -0.1, "seed {seed}: best {best:?} ({v})");
    }
}

#[test]
fn preference_suggester_counts_ties_and_refuses_unknown_options() {
    let space = Space::reals(&[(0.0, 1.0), (0.0, 1.0)]).unwrap();
    let mut s = PreferenceSuggester::new(space.clone(), 4).unwrap();
    // Before any informative comparison: random canonical points, no incumbent, no belief.
    let r = s.suggest().unwrap();
    assert_canonical(&space, &r);
    assert_eq!(s.best(), None);
    assert!(matches!(
        s.belief(std::slice::from_ref(&r)),
        Err(Error::State(_))
    ));
    let a = s.add_option(&[0.2, 0.2]).unwrap();
    let b = s.add_option(&[0.8, 0.6]).unwrap();
    // Within 1e-4 in every coordinate: the same option.
    assert_eq!(s.add_option(&[0.20005, 0.19995]).unwrap(), a);
    assert_eq!(s.n_options(), 2);
    s.tie(a, b).unwrap();
    s.prefer(a, a).unwrap();
    assert_eq!((s.ties(), s.n_comparisons()), (2, 0));
    assert_eq!(s.best(), None, "ties carry no information");
    assert_eq!(invalid_field(s.prefer(a, 2).unwrap_err()), "loser");
    assert_eq!(invalid_field(s.prefer(7, a).unwrap_err()), "winner");
    assert_eq!(invalid_field(s.tie(a, 2).unwrap_err()), "second");
    assert_eq!(
        invalid_field(s.prefer_many(&[(a, b), (b, 5)]).unwrap_err()),
        "comparisons[1].loser"
    );
    assert_eq!(invalid_field(s.add_option(&[0.5]).unwrap_err()), "x");
    assert_eq!(
        invalid_field(s.add_option(&[0.5, -0.1]).unwrap_err()),
        "x[1]"
    );
    assert_eq!((s.ties(), s.n_comparisons(), s.n_options()), (2, 0, 2));
    s.prefer(b, a).unwrap();
    assert_eq!(s.best(), Some(b));
    let m = s.belief(&[vec![0.2, 0.2], vec![0.8, 0.6]]).unwrap();
    assert!(m[1].0 > m[0].0, "{m:?}");
    // The same calls with one prefer_many give the same model and suggestion.
    let mut t = PreferenceSuggester::new(space, 4).unwrap();
    t.add_option(&[0.2, 0.2]).unwrap();
    t.add_option(&[0.8, 0.6]).unwrap();
    t.tie(a, b).unwrap();
    t.prefer_many(&[(a, a), (b, a)]).unwrap();
    assert_eq!(t.suggest().unwrap(), s.suggest().unwrap());
    assert_eq!(
        invalid_field(s.suggest_against(2).unwrap_err()),
        "reference"
    );
}

#[test]
fn preference_suggester_suggests_against_the_standing_option() {
    // The reference is, of the options that won their latest comparison, the one with the
    // highest posterior mean; suggest() is suggest_against(reference).
    let space = Space::reals(&[(0.0, 1.0), (0.0, 1.0)]).unwrap();
    let mut s = PreferenceSuggester::new(space.clone(), 9).unwrap();
    assert_eq!(s.reference(), None);
    let [a, b, c, d] =
        [[0.1, 0.1], [0.9, 0.2], [0.5, 0.9], [0.4, 0.4]].map(|x| s.add_option(&x).unwrap());
    s.prefer(a, b).unwrap();
    assert_eq!(s.reference(), Some(a));
    s.prefer(c, a).unwrap();
    assert_eq!(s.reference(), Some(c), "a lost its latest comparison");
    s.prefer(b, c).unwrap();
    assert_eq!(
        s.reference(),
        Some(b),
        "b won its latest comparison, c lost its"
    );
    assert_eq!(s.suggest().unwrap(), s.suggest_against(b).unwrap());
    // Two standing options (c beat d after losing to b): the one with the larger mean.
    s.prefer(c, d).unwrap();
    let m = s
        .belief(&[s.option(b).unwrap().to_vec(), s.option(c).unwrap().to_vec()])
        .unwrap();
    assert_eq!(
        s.reference(),
        Some(if m[0].0 > m[1].0 { b } else { c }),
        "{m:?}"
    );
    // The suggestion lies in the trust region: within half a lengthscale of the reference.
    let spec = s.model().unwrap().kernel().spectral(2).unwrap();
    for r in [a, b, c, d] {
        let x = s.suggest_against(r).unwrap();
        assert_canonical(&space, &x);
        let o = s.option(r).unwrap();
        for j in 0..2 {
            let half = 0.5 * spec.lengthscales[j];
            assert!(
                (x[j] - o[j]).abs() <= half + 1e-12,
                "{x:?} vs {o:?}, half {half}"
            );
        }
    }
}

#[test]
fn preference_suggester_refuses_bad_settings() {
    let space = Space::reals(&[(0.0, 1.0)]).unwrap();
    let with = |cfg: PreferenceSuggesterConfig| {
        invalid_field(PreferenceSuggester::with_config(space.clone(), 0, cfg).unwrap_err())
    };
    for t in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let cfg = PreferenceSuggesterConfig {
            trust_region: Some(t),
            ..PreferenceSuggesterConfig::default()
        };
        assert_eq!(with(cfg), "trust_region");
    }
    let cfg = PreferenceSuggesterConfig {
        merge_tol: -1e-4,
        ..PreferenceSuggesterConfig::default()
    };
    assert_eq!(with(cfg), "merge_tol");
}

#[test]
fn awkward_histories_give_points_or_errors_never_panics() {
    let space = mixed_space();
    let d = space.dim();
    let cases: Vec<Vec<(Vec<f64>, f64)>> = vec![
        vec![(vec![0.5; d], 1.0)],                                // one observation
        vec![(vec![0.5; d], 1.0), (vec![0.5; d], 1.0)],           // a repeated point
        (0..5).map(|i| (vec![i as f64 / 4.0; d], 3.0)).collect(), // constant values
        vec![(vec![0.0; d], 1e308), (vec![1.0; d], -1e308)],      // extreme values
    ];
    for obs in &cases {
        let mut s = GpSuggester::new(space.clone(), StandardAcq::LogEi, 2).unwrap();
        for (x, y) in obs {
            s.observe(x, *y).unwrap();
        }
        match s.suggest() {
            Ok(u) => assert_canonical(&space, &u),
            // Values near f64::MAX overflow the model's arithmetic: an error, as in GpBo.
            Err(e) => assert!(obs[0].1 > 1e300, "{e}"),
        }
        let _ = s.belief(&[vec![0.5; d]]);
    }
    // Contradictory and repeated comparisons on a mixed space.
    let mut p = PreferenceSuggester::new(space.clone(), 2).unwrap();
    let a = p.add_option(&vec![0.2; d]).unwrap();
    let b = p.add_option(&vec![0.8; d]).unwrap();
    p.prefer_many(&[(a, b), (b, a), (a, b), (a, b)]).unwrap();
    assert_eq!(p.n_comparisons(), 4);
    assert_canonical(&space, &p.suggest().unwrap());
}
