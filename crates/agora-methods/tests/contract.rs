//! The contract every registered method keeps (the shared open-query rules of
//! `agora_methods::open` and determinism), checked over the whole registry: an entry added
//! later is checked without touching this file, and an entry this file cannot serve fails
//! with a message saying what to add.
//!
//! For each method, on the unit square answered by a simulated respondent (the [`Oracle`]
//! for evaluations, comparisons and Hessians; a small simulated group and expert here):
//! - `tell` before `ask` is `NoOpenQuery`; asking twice returns the same query;
//! - the same seed and answers give the same query sequence;
//! - every bad answer (wrong id, wrong count, NaN, wrong kind) is an error, the next `ask`
//!   returns the same query, and the run continues exactly as one that never saw it;
//! - replaying the recorded answers into a fresh strategy asks the same queries;
//! - `ask_parallel` (a second open query) works for exactly the methods listed in
//!   `PARALLEL_METHODS`: a new query with a fresh id, answerable before the older one, the
//!   same again on a replay; every other method refuses it with an error naming the
//!   method (as the strategy names itself) and `worker`, and its run goes on exactly as one that was never asked.
//!
//! Budgets are small: knobs counting initial designs (`n_init`, `init`, `init_pairs`) take
//! their smallest allowed value so that the model-based queries are reached.

use agora_core::{Answer, AnswerKind, Error, Point, Query, QueryKind, Respondent, Result, Space};
use agora_methods::registry::{self, Feedback, KnobKind, Method, Setup};
use agora_methods::{PARALLEL_METHODS, Strategy};
use agora_problems::{Oracle, Problem, TestFunction};
use serde_json::Value;

/// Answered queries per run.
const BUDGET: usize = 8;
const SEED: u64 = 11;

/// `−‖x − (0.3, 0.6)‖²` on the unit square.
#[derive(Debug)]
struct Bowl;

impl TestFunction for Bowl {
    fn name(&self) -> &str {
        "bowl"
    }
    fn dim(&self) -> usize {
        2
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(0.0, 1.0); 2]
    }
    fn eval(&self, x: &[f64]) -> f64 {
        -((x[0] - 0.3).powi(2) + (x[1] - 0.6).powi(2))
    }
    fn optimum_value(&self) -> f64 {
        0.0
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        vec![vec![0.3, 0.6]]
    }
}

/// The oracle, plus a group (agent `k` likes points near its ideal) and an expert (property
/// `j` of a design is its coordinate `j mod 2`).
struct Simulated {
    oracle: Oracle,
    properties: Vec<String>,
}

fn unit(p: &Point) -> Result<&[f64]> {
    match p {
        Point::Unit(u) => Ok(u),
        Point::Index(_) => Err(Error::invalid("point", "the contract test uses boxes")),
    }
}

/// Agent `k`'s utility of `x`.
fn utility(k: usize, x: &[f64]) -> f64 {
    let ideal = [0.2 + 0.25 * k as f64, 0.5];
    -((x[0] - ideal[0]).powi(2) + (x[1] - ideal[1]).powi(2))
}

impl Respondent for Simulated {
    fn answer(&mut self, q: &Query) -> Result<Answer> {
        let kind = match &q.kind {
            QueryKind::GroupVote { points, agents, .. } => {
                let (a, b) = (unit(&points[0])?, unit(&points[1])?);
                let votes = (0..agents.len())
                    .map(|k| match utility(k, a) - utility(k, b) {
                        d if d > 0.0 => Some(0),
                        d if d < 0.0 => Some(1),
                        _ => None,
                    })
                    .collect();
                AnswerKind::Votes { votes }
            }
            QueryKind::GroupRate {
                point,
                agents,
                channel,
            } => {
                let x = unit(point)?;
                let shift = if *channel == agora_core::Channel::Public {
                    0.1
                } else {
                    0.0
                };
                let values = (0..agents.len()).map(|k| utility(k, x) + shift).collect();
                AnswerKind::Values { values }
            }
            QueryKind::Compare {
                points,
                rater: Some(r),
            } if self.properties.contains(r) => {
                let j = self.properties.iter().position(|p| p == r).unwrap_or(0) % 2;
                let (a, b) = (unit(&points[0])?[j], unit(&points[1])?[j]);
                AnswerKind::Choice {
                    winner: usize::from(b > a),
                    rater: Some(r.clone()),
                }
            }
            _ => return self.oracle.answer(q),
        };
        Ok(Answer {
            query_id: q.id,
            kind,
        })
    }
}

/// Whether this file can answer a feedback kind (the match fails to compile when a kind is
/// added, so the respondent above is extended with it).
fn served(f: Feedback) -> bool {
    match f {
        Feedback::Evaluations | Feedback::Pairs | Feedback::Hessians => true, // the oracle
        Feedback::GroupVotes | Feedback::GroupRatings | Feedback::PropertyComparisons => true,
    }
}

/// How a method is set up here: its knobs and participants.
struct Case {
    method: &'static Method,
    knobs: Vec<(String, Value)>,
    participants: Vec<String>,
}

impl Case {
    fn new(method: &'static Method) -> Case {
        let space = space();
        assert!(
            method.spaces.admits(&space),
            "{}: searches {:?}, which the contract test has no problem for; add one",
            method.name,
            method.spaces
        );
        for f in method.feedback {
            assert!(
                served(*f),
                "{}: no simulated respondent for {f:?}",
                method.name
            );
        }
        let knobs = method
            .knobs
            .iter()
            .filter_map(|k| match (k.name, k.kind, k.default_text()) {
                ("n_init" | "init" | "init_pairs", KnobKind::Integer { min, .. }, _) => {
                    Some((k.name.to_string(), Value::from(min.max(1))))
                }
                (_, _, None) => Some((
                    k.name.to_string(),
                    registry::parse_text(k.default_or_example()),
                )),
                _ => None,
            })
            .collect();
        let participants = match method.participants {
            Some(p) => (0..p.min.max(2).min(p.max))
                .map(|k| format!("p{k}"))
                .collect(),
            None => Vec::new(),
        };
        Case {
            method,
            knobs,
            participants,
        }
    }

    fn strategy(&self) -> Box<dyn Strategy> {
        let setup = Setup::new(space(), SEED).with_participants(self.participants.clone());
        registry::build(self.method.name, &self.knobs, setup)
            .unwrap_or_else(|e| panic!("{}: building failed: {e}", self.method.name))
    }

    fn respondent(&self) -> Simulated {
        let properties = self
            .knobs
            .iter()
            .find(|(k, _)| k == "properties")
            .and_then(|(_, v)| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        Simulated {
            oracle: Oracle::new(Problem::new(Box::new(Bowl)).unwrap(), 0.01, 5).unwrap(),
            properties,
        }
    }
}

fn space() -> Space {
    Space::reals(&[(0.0, 1.0); 2]).unwrap()
}

/// One run answered by a fresh respondent: the queries and answers.
fn run(case: &Case) -> Vec<(Query, Answer)> {
    let name = case.method.name;
    let mut s = case.strategy();
    let mut r = case.respondent();
    let e = s.tell(&Answer {
        query_id: 0,
        kind: AnswerKind::Values { values: vec![0.0] },
    });
    assert_eq!(e, Err(Error::NoOpenQuery), "{name}: tell before ask");
    let mut out = Vec::new();
    for i in 0..BUDGET {
        let q = s.ask().unwrap_or_else(|e| panic!("{name}: ask {i}: {e}"));
        assert_eq!(s.ask().unwrap(), q, "{name}: asking twice, query {i}");
        let a = r
            .answer(&q)
            .unwrap_or_else(|e| panic!("{name}: no answer to {q:?}: {e}"));
        s.tell(&a)
            .unwrap_or_else(|e| panic!("{name}: tell {i} ({a:?}): {e}"));
        out.push((q, a));
    }
    out
}

/// Answers that do not fit `q` (whose good answer is `good`), each with what is wrong.
fn bad_answers(q: &Query, good: &Answer) -> Vec<(&'static str, Answer)> {
    let with = |kind: AnswerKind| Answer {
        query_id: q.id,
        kind,
    };
    let mut bad = vec![(
        "wrong id",
        Answer {
            query_id: q.id + 1,
            kind: good.kind.clone(),
        },
    )];
    let n_points = match &q.kind {
        QueryKind::Evaluate { points }
        | QueryKind::Compare { points, .. }
        | QueryKind::GroupVote { points, .. } => points.len(),
        _ => 2,
    };
    match &good.kind {
        AnswerKind::Values { values } => {
            let mut more = values.clone();
            more.push(0.0);
            bad.push(("wrong count", with(AnswerKind::Values { values: more })));
            let mut nan = values.clone();
            nan[0] = f64::NAN;
            bad.push(("NaN", with(AnswerKind::Values { values: nan })));
            bad.push((
                "wrong kind",
                with(AnswerKind::Choice {
                    winner: 0,
                    rater: None,
                }),
            ));
        }
        AnswerKind::Choice { rater, .. } | AnswerKind::Tie { rater } => {
            let out_of_range = AnswerKind::Choice {
                winner: n_points,
                rater: rater.clone(),
            };
            bad.push(("winner out of range", with(out_of_range)));
            bad.push(("wrong kind", with(AnswerKind::Values { values: vec![0.0] })));
        }
        AnswerKind::Votes { votes } => {
            let fewer = votes[..votes.len() - 1].to_vec();
            bad.push(("wrong count", with(AnswerKind::Votes { votes: fewer })));
            let mut out = votes.clone();
            out[0] = Some(n_points);
            bad.push(("vote out of range", with(AnswerKind::Votes { votes: out })));
            bad.push((
                "wrong kind",
                with(AnswerKind::Values {
                    values: vec![0.0; votes.len()],
                }),
            ));
        }
        AnswerKind::Matrix { rows } => {
            let mut more = rows.clone();
            more.push(rows[0].clone());
            bad.push(("wrong count", with(AnswerKind::Matrix { rows: more })));
            let mut nan = rows.clone();
            nan[0][0] = f64::NAN;
            bad.push(("NaN", with(AnswerKind::Matrix { rows: nan })));
            bad.push(("wrong kind", with(AnswerKind::Values { values: vec![0.0] })));
        }
        other => panic!("the contract test cannot spoil a {other:?} answer; add a case"),
    }
    bad
}

/// Replay `recorded` into a fresh strategy, which must ask the same queries; before each
/// recorded answer, every bad answer is tried and must change nothing.
fn replay_with_bad_answers(case: &Case, recorded: &[(Query, Answer)]) {
    let name = case.method.name;
    let mut s = case.strategy();
    for (i, (q, a)) in recorded.iter().enumerate() {
        let asked = s
            .ask()
            .unwrap_or_else(|e| panic!("{name}: replayed ask {i}: {e}"));
        assert_eq!(&asked, q, "{name}: replay asked something else at {i}");
        for (what, bad) in bad_answers(q, a) {
            let before = s.n_answered();
            assert!(
                s.tell(&bad).is_err(),
                "{name}: query {i} accepted an answer with {what}: {bad:?}"
            );
            assert_eq!(s.n_answered(), before, "{name}: {what} counted");
            assert_eq!(
                &s.ask().unwrap(),
                q,
                "{name}: after an answer with {what}, query {i} changed"
            );
        }
        s.tell(a)
            .unwrap_or_else(|e| panic!("{name}: replayed tell {i}: {e}"));
    }
}

/// The parallel-query contract (module docs) on a fresh strategy after `recorded`'s first
/// `n_init`-covering answers.
fn parallel(case: &Case, recorded: &[(Query, Answer)]) {
    let name = case.method.name;
    let supports = PARALLEL_METHODS.contains(&name);
    // Twice, to check the same sequence of asks and answers gives the same queries.
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut s = case.strategy();
        let mut r = case.respondent();
        let mut asked = Vec::new();
        for (i, (q, a)) in recorded.iter().enumerate().take(BUDGET / 2) {
            assert_eq!(&s.ask().unwrap(), q, "{name}: ask {i}");
            s.tell(a).unwrap();
        }
        let q0 = s.ask().unwrap();
        match s.ask_parallel() {
            Ok(q1) => {
                assert!(
                    supports,
                    "{name}: accepts ask_parallel; list it in PARALLEL_METHODS"
                );
                assert_ne!(
                    q1.id, q0.id,
                    "{name}: the second open query needs its own id"
                );
                assert_ne!(
                    q1.kind, q0.kind,
                    "{name}: the second open query repeats the first"
                );
                assert_eq!(
                    s.ask().unwrap(),
                    q0,
                    "{name}: ask returns the oldest open query"
                );
                let q2 = s.ask_parallel().unwrap();
                // Answer out of order: the newest, then the oldest, then the middle one.
                for q in [&q2, &q0, &q1] {
                    s.tell(&r.answer(q).unwrap())
                        .unwrap_or_else(|e| panic!("{name}: answering {}: {e}", q.id));
                }
                let after = s.ask().unwrap();
                assert!(after.id > q2.id, "{name}: ids are never reused");
                asked.extend([q0, q1, q2, after]);
            }
            Err(e) => {
                assert!(
                    !supports,
                    "{name}: listed in PARALLEL_METHODS but refuses: {e}"
                );
                let own = s.name();
                assert!(
                    matches!(&e, Error::InvalidInput { field, reason }
                        if field == "worker" && reason.contains(&format!("`{own}`"))),
                    "{name}: refusing ask_parallel must name the method and `worker`: {e:?}"
                );
                // Nothing changed: the run continues as recorded.
                for (i, (q, a)) in recorded.iter().enumerate().skip(BUDGET / 2) {
                    assert_eq!(
                        &s.ask().unwrap(),
                        q,
                        "{name}: after a refused ask_parallel, ask {i}"
                    );
                    s.tell(a).unwrap();
                }
            }
        }
        runs.push(asked);
    }
    assert_eq!(
        runs[0], runs[1],
        "{name}: same asks and answers, different parallel queries"
    );
}

/// Methods that keep no snapshots (a live study of one replays its log on opening). A
/// method that starts keeping them is removed here; the test fails until it is.
const REPLAY_ONLY: &[&str] = &[
    "cbo",
    "dsbo",
    "gp-ucb-full",
    "uniform",
    "turbo",
    "line-bo",
    "gibo",
    "alebo",
    "tree-bo",
    "cma-es",
];

/// Snapshots: at every point of the recorded run (a query open, or none), the snapshot
/// restored into a fresh strategy gives the same snapshot again, and both go on asking the
/// recorded queries, and end with the same recommendation and belief, bit for bit. Returns
/// whether the method keeps snapshots.
fn snapshots(case: &Case, recorded: &[(Query, Answer)]) -> bool {
    let name = case.method.name;
    let bits = |s: &dyn Strategy| {
        let rec = s.recommend().map(|(p, v)| (format!("{p:?}"), v.to_bits()));
        let probe = [vec![0.25, 0.75], vec![0.6, 0.1]];
        let belief = s.belief(&probe).map(|b| {
            b.iter()
                .map(|(m, sd)| (m.to_bits(), sd.to_bits()))
                .collect::<Vec<_>>()
        });
        (rec, belief, s.n_answered())
    };
    for cut in 0..=2 * recorded.len() {
        let mut s = case.strategy();
        for (k, (q, a)) in recorded.iter().enumerate() {
            if 2 * k < cut {
                assert_eq!(&s.ask().unwrap(), q, "{name}: replay, query {k}");
            }
            if 2 * k + 1 < cut {
                s.tell(a).unwrap();
            }
        }
        let Some(state) = s.snapshot().unwrap() else {
            return false;
        };
        let mut t = case.strategy();
        t.restore(&state)
            .unwrap_or_else(|e| panic!("{name}: restoring the snapshot at step {cut}: {e}"));
        assert_eq!(
            t.snapshot().unwrap().as_ref(),
            Some(&state),
            "{name}: a restored snapshot, taken again, differs (step {cut})"
        );
        assert!(
            case.strategy()
                .restore(&Value::from("not a snapshot"))
                .is_err(),
            "{name}: restoring garbage must fail"
        );
        assert_eq!(bits(s.as_ref()), bits(t.as_ref()), "{name}: step {cut}");
        for (k, (q, a)) in recorded.iter().enumerate() {
            for (who, st) in [("original", &mut s), ("restored", &mut t)] {
                if 2 * k >= cut {
                    assert_eq!(
                        &st.ask().unwrap(),
                        q,
                        "{name} ({who}, from step {cut}): query {k}"
                    );
                }
                if 2 * k + 1 >= cut {
                    st.tell(a).unwrap();
                }
            }
        }
        assert_eq!(
            bits(s.as_ref()),
            bits(t.as_ref()),
            "{name}: end, from step {cut}"
        );
    }
    true
}

/// Check one method; returns its name and the seconds it took.
fn check(method: &'static Method) -> String {
    let t = std::time::Instant::now();
    let case = Case::new(method);
    let first = run(&case);
    let second = run(&case);
    let queries = |r: &[(Query, Answer)]| r.iter().map(|(q, _)| q.clone()).collect::<Vec<_>>();
    assert_eq!(
        queries(&first),
        queries(&second),
        "{}: same seed and answers, different queries",
        method.name
    );
    replay_with_bad_answers(&case, &first);
    parallel(&case, &first);
    // `enqueues` says whether `enqueue` takes an option (a page offers it by that).
    let took = case.strategy().enqueue(&[0.25, 0.75]);
    assert_eq!(
        took.is_ok(),
        case.strategy().enqueues(),
        "{}: enqueues() disagrees with enqueue: {took:?}",
        method.name
    );
    let snap = snapshots(&case, &first);
    assert_eq!(
        snap,
        !REPLAY_ONLY.contains(&method.name),
        "{}: keeps snapshots: {snap}; update REPLAY_ONLY",
        method.name
    );
    format!("{} {:.2}s", method.name, t.elapsed().as_secs_f64())
}

#[test]
fn every_registered_method_keeps_the_contract() {
    use rayon::prelude::*;
    let checked: Vec<String> = registry::methods().par_iter().map(check).collect();
    assert_eq!(checked.len(), registry::methods().len());
    println!("checked: {}", checked.join(", "));
}
