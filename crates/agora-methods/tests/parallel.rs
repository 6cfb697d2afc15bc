//! GP-BO with several open queries (asynchronous workers): the answers of any open query
//! are taken by id, open points never coincide, the run is a deterministic function of the
//! seed and the ordered asks and answers (a replay gives the same queries), bad answers
//! change nothing, and finite sets hand out distinct candidates.

use agora_core::{Answer, AnswerKind, Error, Point, Query, QueryKind, Space};
use agora_methods::registry::{self, Setup};
use agora_problems::{Oracle, Problem};

/// What happened, in order: a parallel ask (and the query it gave) or an answer.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Asked(Query),
    Answered(Answer),
}

fn unit(q: &Query) -> Vec<f64> {
    match &q.kind {
        QueryKind::Evaluate { points } => match &points[0] {
            Point::Unit(u) => u.clone(),
            Point::Index(i) => vec![*i as f64],
        },
        other => panic!("GP-BO asks evaluations, got {other:?}"),
    }
}

/// `workers` workers on `method` over Branin for `budget` answers: each answer goes to an
/// open query picked by a fixed pattern (not the oldest), then a new query is asked.
fn asynchronous(method: &str, seed: u64, workers: usize, budget: usize) -> Vec<Step> {
    let problem = Problem::by_name("branin").unwrap();
    let mut s = registry::build(method, &[], Setup::new(problem.space.clone(), seed)).unwrap();
    let mut oracle = Oracle::new(problem, 0.0, 0).unwrap();
    let mut open: Vec<Query> = Vec::new();
    let mut log = Vec::new();
    for t in 0..budget {
        while open.len() < workers {
            let q = s.ask_parallel().unwrap();
            log.push(Step::Asked(q.clone()));
            open.push(q);
        }
        let u: Vec<Vec<f64>> = open.iter().map(unit).collect();
        for i in 0..u.len() {
            for j in 0..i {
                assert_ne!(u[i], u[j], "{method}: two open queries share a point");
            }
        }
        let q = open.remove((3 * t + 1) % open.len());
        let a = oracle.answer(&q).unwrap();
        s.tell(&a).unwrap();
        log.push(Step::Answered(a));
    }
    log
}

/// Feed `log`'s asks and answers into a fresh strategy; it must ask the same queries.
fn replay(method: &str, seed: u64, log: &[Step]) {
    let space = Problem::by_name("branin").unwrap().space;
    let mut s = registry::build(method, &[], Setup::new(space, seed)).unwrap();
    for (i, step) in log.iter().enumerate() {
        match step {
            Step::Asked(q) => assert_eq!(&s.ask_parallel().unwrap(), q, "{method}: step {i}"),
            Step::Answered(a) => s.tell(a).unwrap(),
        }
    }
}

#[test]
fn four_workers_get_distinct_points_and_a_replay_asks_the_same_queries() {
    for method in ["gp-logei", "gp-ts", "gp-ucb"] {
        let log = asynchronous(method, 3, 4, 16);
        assert_eq!(
            log,
            asynchronous(method, 3, 4, 16),
            "{method}: same seed, same run"
        );
        replay(method, 3, &log);
        let asked: Vec<&Query> = log
            .iter()
            .filter_map(|s| match s {
                Step::Asked(q) => Some(q),
                Step::Answered(_) => None,
            })
            .collect();
        let ids: Vec<u64> = asked.iter().map(|q| q.id).collect();
        assert_eq!(
            ids,
            (0..ids.len() as u64).collect::<Vec<_>>(),
            "{method}: ids in order"
        );
        for i in 0..asked.len() {
            for j in 0..i {
                assert_ne!(
                    unit(asked[i]),
                    unit(asked[j]),
                    "{method}: point asked twice"
                );
            }
        }
    }
}

#[test]
fn with_nothing_open_a_parallel_ask_is_the_sequential_ask() {
    let problem = Problem::by_name("branin").unwrap();
    let build = || registry::build("gp-logei", &[], Setup::new(problem.space.clone(), 5)).unwrap();
    let (mut a, mut b) = (build(), build());
    let mut oracle = Oracle::new(Problem::by_name("branin").unwrap(), 0.0, 0).unwrap();
    for _ in 0..14 {
        let q = a.ask().unwrap();
        assert_eq!(b.ask_parallel().unwrap(), q);
        let answer = oracle.answer(&q).unwrap();
        a.tell(&answer).unwrap();
        b.tell(&answer).unwrap();
    }
}

#[test]
fn answers_go_to_the_query_they_name_and_bad_ones_change_nothing() {
    let problem = Problem::by_name("branin").unwrap();
    let mut s = registry::build("gp-ei", &[], Setup::new(problem.space.clone(), 1)).unwrap();
    let mut oracle = Oracle::new(problem, 0.0, 0).unwrap();
    for _ in 0..11 {
        let q = s.ask().unwrap();
        s.tell(&oracle.answer(&q).unwrap()).unwrap();
    }
    let qs: Vec<Query> = (0..3).map(|_| s.ask_parallel().unwrap()).collect();
    assert_eq!(s.ask().unwrap(), qs[0], "ask returns the oldest open query");
    let good = oracle.answer(&qs[1]).unwrap();
    let unknown = Answer {
        query_id: 99,
        kind: good.kind.clone(),
    };
    let e = s.tell(&unknown).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput { field, reason } if field == "query_id"
            && reason.contains("99") && reason.contains("11, 12, 13")),
        "{e}"
    );
    let nan = Answer {
        query_id: qs[1].id,
        kind: AnswerKind::Values {
            values: vec![f64::NAN],
        },
    };
    assert!(s.tell(&nan).unwrap_err().to_string().contains("values[0]"));
    let two = Answer {
        query_id: qs[1].id,
        kind: AnswerKind::Values {
            values: vec![1.0, 2.0],
        },
    };
    assert!(matches!(s.tell(&two), Err(Error::Dimension { .. })));
    assert_eq!(s.n_answered(), 11, "bad answers are not counted");
    s.tell(&good).unwrap();
    assert!(s.tell(&good).is_err(), "an answered query is closed");
    assert_eq!(s.ask().unwrap(), qs[0]);
    s.tell(&oracle.answer(&qs[2]).unwrap()).unwrap();
    s.tell(&oracle.answer(&qs[0]).unwrap()).unwrap();
    assert_eq!(s.n_answered(), 14);
    assert_eq!(s.ask().unwrap().id, 14);
}

#[test]
fn finite_sets_hand_each_worker_a_candidate_nobody_has() {
    let features: Vec<Vec<f64>> = (0..30)
        .map(|i| vec![(i % 6) as f64 / 5.0, (i / 6) as f64 / 4.0])
        .collect();
    let space = Space::Candidates {
        names: (0..30).map(|i| format!("c{i}")).collect(),
        features: features.clone(),
    };
    for method in ["gp-logei", "gp-ts", "random", "sobol"] {
        let mut s = registry::build(method, &[], Setup::new(space.clone(), 2)).unwrap();
        let mut taken: Vec<usize> = Vec::new();
        let index = |q: &Query| match &q.kind {
            QueryKind::Evaluate { points } => match points[0] {
                Point::Index(i) => i,
                Point::Unit(_) => panic!("a finite set gives indices"),
            },
            _ => panic!("evaluations only"),
        };
        for t in 0..12 {
            let q = s.ask().unwrap();
            let i = index(&q);
            taken.push(i);
            let f = &features[i];
            let y = -((f[0] - 0.3).powi(2) + (f[1] - 0.7).powi(2)) + 0.01 * t as f64;
            s.tell(&Answer {
                query_id: q.id,
                kind: AnswerKind::Values { values: vec![y] },
            })
            .unwrap();
        }
        for _ in 0..4 {
            let i = index(&s.ask_parallel().unwrap());
            assert!(
                !taken.contains(&i),
                "{method}: candidate {i} handed out again"
            );
            taken.push(i);
        }
    }
}
