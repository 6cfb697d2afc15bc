//! Several workers on one `bo` study (`LiveStudy::ask_worker`, `tell` by query id), on
//! SQLite and on PostgreSQL (when `AGORA_TEST_POSTGRES` names a server, in a fresh schema):
//! races for the next sequence number are staged deterministically by a store that lets
//! "another process" write just before this one appends; the loser never hands out the
//! winner's query. Logs replay exactly, bad input names its field and stores nothing, and
//! the event format of studies without workers is what it always was.

use agora_core::{Answer, AnswerKind, Point, Query, QueryKind, Space};
use agora_methods::Strategy;
use agora_study::live::{
    Actor, Event, EventKind, LiveStudy, MethodSpec, Outcome, SqliteStore, Store, StoreResult,
    StoredStudy, StudyError, StudySpec, open_store,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn spec(name: &str, strategy: &str) -> StudySpec {
    StudySpec {
        name: name.into(),
        description: "workers".into(),
        space: Space::reals(&[(0.0, 1.0), (-1.0, 1.0)]).unwrap(),
        method: MethodSpec::from_knobs("bo", &[("strategy".into(), strategy.into())]).unwrap(),
        seed: 7,
        participants: Vec::new(),
        round_seconds: None,
        media: Vec::new(),
    }
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

/// The measured value of a query's point (a smooth bump).
fn measure(q: &Query) -> Answer {
    let u = unit(q);
    let y = -((u[0] - 0.3).powi(2) + (u[1] - 0.7).powi(2)) + 0.1 * (7.0 * u[0]).sin();
    Answer {
        query_id: q.id,
        kind: AnswerKind::Values { values: vec![y] },
    }
}

/// A store that runs `race` (another process's write) once, just before its next append.
struct Racing {
    inner: Arc<dyn Store>,
    race: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Racing {
    fn new(inner: Arc<dyn Store>) -> Arc<Racing> {
        Arc::new(Racing {
            inner,
            race: Mutex::new(None),
        })
    }
    fn before_next_append(&self, f: impl FnOnce() + Send + 'static) {
        *self.race.lock().unwrap() = Some(Box::new(f));
    }
}

impl Store for Racing {
    fn create(&self, study: &StoredStudy) -> StoreResult<()> {
        self.inner.create(study)
    }
    fn list(&self) -> StoreResult<Vec<String>> {
        self.inner.list()
    }
    fn study(&self, name: &str) -> StoreResult<StoredStudy> {
        self.inner.study(name)
    }
    fn events(&self, name: &str, from: u64) -> StoreResult<Vec<Event>> {
        self.inner.events(name, from)
    }
    fn append(&self, name: &str, next: u64, kinds: &[EventKind]) -> StoreResult<Vec<Event>> {
        let race = self.race.lock().unwrap().take();
        if let Some(f) = race {
            f();
        }
        self.inner.append(name, next, kinds)
    }
    fn schema_version(&self) -> StoreResult<u32> {
        self.inner.schema_version()
    }
}

/// A fresh PostgreSQL schema, dropped with the guard.
struct PgSchema {
    base: String,
    schema: String,
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut c) = ::postgres::Client::connect(&self.base, ::postgres::NoTls) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

/// The PostgreSQL server named by `AGORA_TEST_POSTGRES`, or `None` (the test then says it
/// was skipped); under CI (`CI` set) a missing server fails.
fn postgres_url() -> Option<String> {
    agora_study::live::test_postgres_url()
}

/// A store to run a test on, its label, and what must live as long as it (the temporary
/// folder, the schema's guard).
type TestStore = (String, Arc<dyn Store>, Box<dyn std::any::Any>);

/// The stores to run a test on: a SQLite file, and a PostgreSQL schema when a server is
/// named.
fn stores(test: &str) -> Vec<TestStore> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.path().join("w.db")).unwrap());
    let mut out: Vec<TestStore> = vec![("sqlite".into(), sqlite, Box::new(dir))];
    if let Some(base) = postgres_url() {
        let schema = format!(
            "workers_{}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            test
        );
        let mut admin = ::postgres::Client::connect(&base, ::postgres::NoTls).unwrap();
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .unwrap();
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
        let store = open_store(&url, true).unwrap();
        out.push((
            "postgresql".into(),
            store,
            Box::new(PgSchema { base, schema }),
        ));
    }
    out
}

/// The study's log as (asks, answers) fed into a fresh strategy built from the spec: a
/// worker's `Asked` event of a query nobody held hands that query over (nothing asked);
/// any other worker's `Asked` is a parallel ask; the strategy must ask the logged queries.
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
                if worker.is_none() {
                    unheld = Some(q.id);
                }
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

#[test]
fn the_loser_of_a_race_for_the_same_point_gets_another_one() {
    for (label, store, _keep) in stores("race") {
        let racing = Racing::new(store.clone());
        let name = "race";
        LiveStudy::create(racing.clone(), spec(name, "gp-logei")).unwrap();
        // Answer the Sobol design in one process, so the next asks are the GP's.
        let mut one = LiveStudy::open(store.clone(), name).unwrap();
        for _ in 0..10 {
            let q = one.pending().unwrap().clone();
            one.tell(&Actor::Owner, measure(&q)).unwrap();
        }
        // Query 10 is open for nobody: two workers race for it.
        let mut a = LiveStudy::open(racing.clone(), name).unwrap();
        let other = store.clone();
        racing.before_next_append(move || {
            let mut b = LiveStudy::open(other, name).unwrap();
            let q = b.ask_worker("b").unwrap();
            assert_eq!(q.id, 10, "b takes the open query");
        });
        let qa = a.ask_worker("a").unwrap();
        assert_eq!(qa.id, 11, "{label}: a lost query 10 to b and got a new one");
        // Nothing open for nobody now: both ask the strategy in parallel, and would ask
        // the same point with the same two pending; the loser must replay and ask anew.
        let mut c = LiveStudy::open(racing.clone(), name).unwrap();
        let other = store.clone();
        let winner = Arc::new(Mutex::new(None));
        let w = winner.clone();
        racing.before_next_append(move || {
            let mut d = LiveStudy::open(other, name).unwrap();
            *w.lock().unwrap() = Some(d.ask_worker("d").unwrap());
        });
        let qc = c.ask_worker("c").unwrap();
        let qd = winner.lock().unwrap().clone().unwrap();
        assert_eq!((qd.id, qc.id), (12, 13), "{label}");
        let points: Vec<Vec<f64>> = [&qa, &qc, &qd].iter().map(|q| unit(q)).collect();
        assert!(
            points[1] != points[2] && points[0] != points[1],
            "{label}: {points:?}"
        );
        let held: Vec<(String, u64)> = c.held().map(|h| (h.worker, h.query_id)).collect();
        assert_eq!(
            held,
            vec![
                ("b".into(), 10),
                ("a".into(), 11),
                ("d".into(), 12),
                ("c".into(), 13)
            ],
            "{label}"
        );
        // Asking again returns the worker's query, without a new event.
        let events = c.seq();
        assert_eq!(c.ask_worker("c").unwrap(), qc);
        assert_eq!(c.seq(), events);
        // A worker's answer that loses a race catches up and is stored.
        let other = store.clone();
        racing.before_next_append(move || {
            let mut e = LiveStudy::open(other, name).unwrap();
            e.ask_worker("e").unwrap();
        });
        assert_eq!(
            c.tell(&Actor::Owner, measure(&qa)).unwrap(),
            Outcome::Answered
        );
        assert_eq!(
            c.tell(&Actor::Owner, measure(&qa)).unwrap(),
            Outcome::Duplicate,
            "{label}: a retried answer is recorded once"
        );
        let fresh = LiveStudy::open(store.clone(), name).unwrap();
        let held: Vec<u64> = fresh.held().map(|h| h.query_id).collect();
        assert_eq!(held, vec![10, 12, 13, 14], "{label}");
        assert!(
            fresh.pending().is_none(),
            "{label}: nothing asked for nobody"
        );
        let events = store.events(name, 0).unwrap();
        assert_eq!(independent_replay(&fresh.stored().spec, &events), 15);
    }
}

#[test]
fn four_workers_take_turns_and_the_log_replays_exactly() {
    for (label, store, _keep) in stores("turns") {
        let name = "turns";
        LiveStudy::create(store.clone(), spec(name, "gp-ei")).unwrap();
        let workers = ["w0", "w1", "w2", "w3"];
        let mut out: Vec<(&str, Query)> = Vec::new();
        let mut all: Vec<Query> = Vec::new();
        for w in workers {
            let mut s = LiveStudy::open(store.clone(), name).unwrap();
            let q = s.ask_worker(w).unwrap();
            out.push((w, q.clone()));
            all.push(q);
        }
        for _ in 0..20 {
            // The oldest but one answers (not in asking order), then asks again.
            let (w, q) = out.remove(1);
            let mut s = LiveStudy::open(store.clone(), name).unwrap();
            assert_eq!(
                s.tell(&Actor::Owner, measure(&q)).unwrap(),
                Outcome::Answered
            );
            let next = s.ask_worker(w).unwrap();
            out.push((w, next.clone()));
            all.push(next);
        }
        for i in 0..all.len() {
            for j in 0..i {
                assert!(
                    all[i].id != all[j].id && unit(&all[i]) != unit(&all[j]),
                    "{label}"
                );
            }
        }
        let fresh = LiveStudy::open(store.clone(), name).unwrap();
        let status = fresh.status(&Actor::Owner);
        assert_eq!(status.answered, 20, "{label}");
        assert_eq!(status.workers.len(), 4, "{label}");
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["workers"].as_array().unwrap().len(), 4);
        let events = store.events(name, 0).unwrap();
        // 24 queries handed out (query 0 asked for nobody, then handed to w0), 20 answers.
        assert_eq!(events.len(), 1 + 24 + 20, "{label}");
        assert_eq!(independent_replay(&fresh.stored().spec, &events), 24);
        let csv = fresh.export_csv(&Actor::Owner).unwrap();
        assert!(
            csv.lines().nth(2).unwrap().contains(",asked,0,w0,"),
            "{csv}"
        );
    }
}

#[test]
fn bad_worker_input_names_the_field_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.path().join("b.db")).unwrap());
    let mut s = LiveStudy::create(store.clone(), spec("bad", "gp-logei")).unwrap();
    let before = s.seq();
    for w in ["", " w", "a\nb", &"x".repeat(65)] {
        let e = s.ask_worker(w).unwrap_err().to_string();
        assert!(e.contains("`worker`") && e.contains("1-64"), "{w:?}: {e}");
    }
    let q = s.ask_worker("w").unwrap();
    let q2 = s.ask_worker("v").unwrap();
    let before_answers = s.seq();
    let nan = Answer {
        query_id: q.id,
        kind: AnswerKind::Values {
            values: vec![f64::NAN],
        },
    };
    let e = s.tell(&Actor::Owner, nan).unwrap_err().to_string();
    assert!(e.contains("values[0]"), "{e}");
    let unknown = Answer {
        query_id: 42,
        kind: AnswerKind::Values { values: vec![1.0] },
    };
    let e = s.tell(&Actor::Owner, unknown).unwrap_err();
    assert!(matches!(e, StudyError::NotPending(_)), "{e}");
    let e = e.to_string();
    assert!(
        e.contains("query 42 is not open") && e.contains("0 (w), 1 (v)"),
        "{e}"
    );
    assert_eq!(s.seq(), before_answers, "nothing stored");
    assert_eq!(before + 2, before_answers);
    assert_eq!(
        s.tell(&Actor::Owner, measure(&q2)).unwrap(),
        Outcome::Answered
    );

    // A method that keeps one open query: the first worker takes it, the second is told.
    let mut one = LiveStudy::create(store.clone(), spec("one", "boap-ei")).unwrap();
    one.ask_worker("a").unwrap();
    let e = one.ask_worker("b").unwrap_err().to_string();
    assert!(
        e.contains("`worker`") && e.contains("one open query at a time"),
        "{e}"
    );
    // Studies that ask people do not take workers.
    let mut pairs = spec("pairs", "gp-logei");
    pairs.method = MethodSpec::from_knobs("pairs", &[]).unwrap();
    pairs.participants = vec!["ann".into()];
    let mut p = LiveStudy::create(store.clone(), pairs).unwrap();
    let e = p.ask_worker("a").unwrap_err().to_string();
    assert!(e.contains("`worker`") && e.contains("pairs"), "{e}");
    assert!(p.pending().is_some() && p.held().next().is_none());
}

#[test]
fn events_without_a_worker_keep_their_old_json() {
    let q = Query {
        id: 3,
        kind: QueryKind::Evaluate {
            points: vec![Point::Unit(vec![0.25, 0.5])],
        },
    };
    let old = r#"{"type":"asked","query":{"id":3,"kind":{"type":"evaluate","points":[{"unit":[0.25,0.5]}]}}}"#;
    let plain = EventKind::Asked {
        query: q.clone(),
        worker: None,
    };
    assert_eq!(serde_json::to_string(&plain).unwrap(), old);
    assert_eq!(serde_json::from_str::<EventKind>(old).unwrap(), plain);
    let handed = EventKind::Asked {
        query: q,
        worker: Some("w1".into()),
    };
    let text = serde_json::to_string(&handed).unwrap();
    assert!(text.ends_with(r#","worker":"w1"}"#), "{text}");
    assert_eq!(serde_json::from_str::<EventKind>(&text).unwrap(), handed);
}
