//! Issue 18's acceptance for many workers on one study: four workers evaluate one GP-BO
//! study at once, each a loop of real `agora` processes (`agora ask --worker ID --json`,
//! then `agora tell --query ID --values Y`) on one store, SQLite and PostgreSQL (when
//! `AGORA_TEST_POSTGRES` names a server; a fresh schema). All four take their first query
//! before any answers (a barrier), so four evaluations are pending at once and the first
//! asks race for the same sequence number. Checked: no query id and no point is handed
//! out twice; asking again returns the worker's own query; the final log replays exactly
//! (the study opens fresh, re-asking every stored query bit for bit, and an independent
//! replay of the log's asks and answers into a fresh strategy asks the same queries).

use agora_core::{Point, Query, QueryKind};
use agora_methods::Strategy;
use agora_study::live::{Event, EventKind, LiveStudy, StudySpec, open_store};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::{Arc, Barrier};

const WORKERS: usize = 4;
const ROUNDS: usize = 10;

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn agora(storage: &str, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_agora"))
        .args(args)
        .arg("--storage")
        .arg(storage)
        .env("RUST_BACKTRACE", "0")
        .env_remove("AGORA_DB")
        .env_remove("AGORA_STORAGE")
        .output()
        .expect("run agora");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn ok(storage: &str, args: &[&str]) -> String {
    let r = agora(storage, args);
    assert!(r.ok, "agora {args:?} failed:\n{}\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    r.stdout
}

fn json(storage: &str, args: &[&str]) -> Value {
    let s = ok(storage, args);
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}):\n{s}"))
}

/// Branin (negated: larger is better) at a unit-square point.
fn branin(u: &[f64]) -> f64 {
    let (x1, x2) = (-5.0 + 15.0 * u[0], 15.0 * u[1]);
    let pi = std::f64::consts::PI;
    let b = 5.1 / (4.0 * pi * pi);
    let c = 5.0 / pi;
    let t = 1.0 / (8.0 * pi);
    -((x2 - b * x1 * x1 + c * x1 - 6.0).powi(2) + 10.0 * (1.0 - t) * x1.cos() + 10.0)
}

/// What one worker was handed: (worker, query id, unit point), in order.
type Handed = Vec<(String, u64, Vec<f64>)>;

/// One worker: `ROUNDS` times ask, evaluate, tell; all workers meet at `barrier` after
/// their first ask (so four evaluations are pending at once).
fn worker(storage: String, name: String, barrier: Arc<Barrier>) -> Handed {
    let mut handed = Vec::new();
    for round in 0..ROUNDS {
        let view = json(&storage, &["ask", "fleet", "--worker", &name, "--json"]);
        assert_eq!(view["kind"], "evaluate", "{view}");
        assert_eq!(view["worker"], name.as_str(), "{view}");
        let id = view["query_id"].as_u64().expect("query_id");
        let u: Vec<f64> = view["options"][0]["point"]["unit"]
            .as_array()
            .expect("a box point")
            .iter()
            .map(|x| x.as_f64().expect("a number"))
            .collect();
        if round == 0 {
            barrier.wait();
            // Asking again, with every worker holding a query, returns this worker's own.
            let again = json(&storage, &["ask", "fleet", "--worker", &name, "--json"]);
            assert_eq!(again["query_id"].as_u64(), Some(id), "{name}: asked again");
        }
        handed.push((name.clone(), id, u.clone()));
        let y = format!("{}", branin(&u));
        let said = ok(
            &storage,
            &["tell", "fleet", "--query", &id.to_string(), "--values", &y],
        );
        assert!(said.contains(&format!("query {id} answered")), "{said}");
    }
    handed
}

/// The log's asks and answers fed into a fresh strategy built from the spec (not through
/// `LiveStudy`): a worker's `Asked` of the query asked for nobody hands it over; any other
/// worker's `Asked` is `ask_parallel`, a plain one `ask`. Returns the queries asked.
fn independent_replay(spec: &StudySpec, events: &[Event]) -> usize {
    let mut s: Box<dyn Strategy> = spec.build().unwrap();
    let mut unheld: Option<u64> = None;
    let mut asked = 0;
    for e in events {
        match &e.kind {
            EventKind::Asked { query, worker } => {
                if worker.is_some() && unheld == Some(query.id) {
                    unheld = None;
                    continue;
                }
                let q = match worker {
                    None => s.ask().unwrap(),
                    Some(_) => s.ask_parallel().unwrap(),
                };
                assert_eq!(
                    &q, query,
                    "event {}: the strategy asks something else",
                    e.seq
                );
                unheld = worker.is_none().then_some(q.id);
                asked += 1;
            }
            EventKind::Answered { answer, .. } => {
                if unheld == Some(answer.query_id) {
                    unheld = None;
                }
                s.tell(answer).unwrap();
            }
            EventKind::Ballot { .. } => panic!("no ballots in a bo study"),
            EventKind::Imported { .. } | EventKind::Enqueued { .. } | EventKind::Media { .. } => {
                panic!("the workers' tests import, enqueue and show nothing")
            }
        }
    }
    asked
}

fn unit(q: &Query) -> Vec<f64> {
    match &q.kind {
        QueryKind::Evaluate { points } => match &points[0] {
            Point::Unit(u) => u.clone(),
            Point::Index(i) => panic!("a box, not index {i}"),
        },
        k => panic!("an evaluation, got {k:?}"),
    }
}

fn four_workers_on(storage: &str) {
    let out = ok(
        storage,
        &[
            "study",
            "create",
            "fleet",
            "--method",
            "bo",
            "--set",
            "strategy=gp-logei",
            "--param",
            "x1:real:-5:10",
            "--param",
            "x2:real:0:15",
            "--seed",
            "3",
        ],
    );
    assert!(out.contains("created study `fleet`"), "{out}");
    let barrier = Arc::new(Barrier::new(WORKERS));
    let threads: Vec<_> = (0..WORKERS)
        .map(|k| {
            let (s, b) = (storage.to_string(), barrier.clone());
            std::thread::spawn(move || worker(s, format!("w{k}"), b))
        })
        .collect();
    let handed: Handed = threads
        .into_iter()
        .flat_map(|t| t.join().expect("a worker failed"))
        .collect();

    // No point handed out twice: ids and points are distinct, each id to one worker.
    assert_eq!(handed.len(), WORKERS * ROUNDS);
    let ids: BTreeSet<u64> = handed.iter().map(|h| h.1).collect();
    assert_eq!(
        ids,
        (0..(WORKERS * ROUNDS) as u64).collect(),
        "ids 0..40, once each"
    );
    for i in 0..handed.len() {
        for j in 0..i {
            assert_ne!(
                handed[i].2, handed[j].2,
                "{:?} and {:?}",
                handed[i], handed[j]
            );
        }
    }

    // The log: each query handed to exactly one worker, as that worker was told.
    let export = json(storage, &["export", "fleet", "--format", "json"]);
    let spec: StudySpec = serde_json::from_value(export["study"].clone()).unwrap();
    let events: Vec<Event> = serde_json::from_value(export["events"].clone()).unwrap();
    let mut holder: BTreeMap<u64, String> = BTreeMap::new();
    let mut answered = 0;
    let mut max_open = 0;
    let mut open = BTreeSet::new();
    for e in &events {
        match &e.kind {
            EventKind::Asked {
                query,
                worker: Some(w),
            } => {
                assert!(
                    holder.insert(query.id, w.clone()).is_none(),
                    "query {} handed twice",
                    query.id
                );
                open.insert(query.id);
                max_open = max_open.max(open.len());
            }
            EventKind::Answered { answer, .. } => {
                answered += 1;
                open.remove(&answer.query_id);
            }
            _ => {}
        }
    }
    assert_eq!(answered, WORKERS * ROUNDS);
    assert_eq!(max_open, WORKERS, "four evaluations were pending at once");
    for (w, id, _) in &handed {
        assert_eq!(holder.get(id), Some(w), "query {id}");
    }

    // The final log replays exactly: the study opens fresh (every stored query re-asked
    // bit for bit), the CLI reports it, and an independent replay asks the same queries.
    let store = open_store(storage, false).unwrap();
    let fresh = LiveStudy::open(store, "fleet").unwrap();
    assert_eq!(
        fresh.status(&agora_study::live::Actor::Owner).answered,
        WORKERS * ROUNDS
    );
    assert!(
        fresh.held().next().is_none(),
        "every worker's query was answered"
    );
    let next = fresh
        .pending()
        .expect("the next query, asked for nobody")
        .clone();
    assert!(
        !handed.iter().any(|h| h.2 == unit(&next)),
        "the next point is new"
    );
    let status = json(storage, &["status", "fleet", "--json"]);
    assert_eq!(status["answered"], (WORKERS * ROUNDS) as u64);
    assert!(status.get("workers").is_none(), "{status}");
    let asked = independent_replay(&spec, &events);
    assert_eq!(
        asked,
        WORKERS * ROUNDS + 1,
        "the strategy asked each handed query and the next one once"
    );
}

#[test]
fn four_workers_on_sqlite_hand_out_no_point_twice_and_the_log_replays_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fleet.db");
    four_workers_on(db.to_str().unwrap());
}

#[test]
fn four_workers_on_postgres_hand_out_no_point_twice_and_the_log_replays_exactly() {
    let Some(base) = std::env::var("AGORA_TEST_POSTGRES")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(
            !ci,
            "CI is set but AGORA_TEST_POSTGRES is not: PostgreSQL tests must run in CI"
        );
        println!("skipped: set AGORA_TEST_POSTGRES");
        return;
    };
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).unwrap();
    let schema = format!("cli_workers_{}", std::process::id());
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .unwrap();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
    let result = std::panic::catch_unwind(|| four_workers_on(&url));
    let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

#[test]
fn worker_flags_explain_their_mistakes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let storage = db.to_str().unwrap();
    ok(
        storage,
        &[
            "study",
            "create",
            "w",
            "--method",
            "bo",
            "--param",
            "x:real:0:1",
        ],
    );
    let said = ok(storage, &["ask", "w", "--worker", "ann"]);
    assert!(
        said.contains("held by worker: ann") && said.contains("--query 0 --values"),
        "{said}"
    );
    let r = agora(storage, &["tell", "w", "--values", "1"]);
    assert!(
        !r.ok
            && r.stderr.contains("queries held by workers: 0 (ann)")
            && r.stderr.contains("--worker"),
        "{}",
        r.stderr
    );
    let r = agora(storage, &["tell", "w", "--worker", "bob", "--values", "1"]);
    assert!(
        !r.ok && r.stderr.contains("`worker`") && r.stderr.contains("ann"),
        "{}",
        r.stderr
    );
    let r = agora(
        storage,
        &[
            "tell", "w", "--worker", "ann", "--query", "3", "--values", "1",
        ],
    );
    assert!(
        !r.ok && r.stderr.contains("`query`") && r.stderr.contains("query 0"),
        "{}",
        r.stderr
    );
    let r = agora(
        storage,
        &["tell", "w", "--worker", "ann", "--values", "nan"],
    );
    assert!(!r.ok && r.stderr.contains("values[0]"), "{}", r.stderr);
    let r = agora(storage, &["ask", "w", "--worker", ""]);
    assert!(!r.ok && r.stderr.contains("`worker`"), "{}", r.stderr);
    let said = ok(
        storage,
        &["tell", "w", "--worker", "ann", "--values", "0.5"],
    );
    assert!(said.contains("query 0 answered"), "{said}");
    let events = json(storage, &["export", "w", "--format", "json"])["events"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        events, 4,
        "asked, handed to ann, answered, the next asked: nothing else"
    );
}
