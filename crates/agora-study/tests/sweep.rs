//! Sweeps on PostgreSQL: joining, phases and their fingerprints, claims under row locks
//! (`SKIP LOCKED`), leases that run out, results stored once. Each test works in a fresh
//! schema of the server `AGORA_TEST_POSTGRES` names; without one the tests say they were
//! skipped and pass, except under CI (`CI` set), where they fail.

use agora_study::live::{StorageUrl, StoreError};
use agora_study::sweep::{CellState, SweepError, SweepStore};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The server the tests may use, or `None` (the test passes, saying it was skipped).
fn postgres_url() -> Option<String> {
    agora_study::live::test_postgres_url()
}

/// A fresh schema, dropped at the end.
struct Schema {
    admin: Mutex<::postgres::Client>,
    base: String,
    name: String,
}

impl Schema {
    fn new(test: &str) -> Option<Schema> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let base = postgres_url()?;
        let mut admin = ::postgres::Client::connect(&base, ::postgres::NoTls).unwrap();
        let name = format!(
            "sweep_{}_{}_{test}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
            ))
            .unwrap();
        Some(Schema {
            admin: Mutex::new(admin),
            base,
            name,
        })
    }

    fn url(&self) -> StorageUrl {
        let sep = if self.base.contains('?') { '&' } else { '?' };
        StorageUrl::parse(&format!(
            "{}{sep}options=-c%20search_path%3D{}",
            self.base, self.name
        ))
        .unwrap()
    }

    fn open(&self) -> SweepStore {
        SweepStore::open(&self.url()).unwrap()
    }

    fn exec(&self, sql: &str) {
        let sql = format!("SET search_path TO {}; {sql}", self.name);
        self.admin.lock().unwrap().batch_execute(&sql).unwrap();
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name);
        let _ = self.admin.lock().unwrap().batch_execute(&sql);
    }
}

fn fps(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{i:016x}")).collect()
}

const LONG: Duration = Duration::from_secs(600);

#[test]
fn a_sweep_is_joined_with_its_own_command_only() {
    let Some(db) = Schema::new("join") else {
        return;
    };
    let s = db.open();
    let e = s.command("nope").unwrap_err();
    assert!(
        e.to_string().contains("no sweeps in this database yet"),
        "{e}"
    );
    s.join("a", "cmd one").unwrap();
    db.open().join("a", "cmd one").unwrap();
    let e = db.open().join("a", "cmd two").unwrap_err();
    assert!(matches!(e, SweepError::OtherCommand { .. }), "{e}");
    assert!(
        e.to_string().contains("runs cmd one, this is cmd two"),
        "{e}"
    );
    assert_eq!(s.command("a").unwrap(), "cmd one");
    let e = s.command("b").unwrap_err();
    assert!(e.to_string().contains("unknown sweep `b`; known: a"), "{e}");
    let e = s.join(" ", "x").unwrap_err();
    assert!(e.to_string().starts_with("invalid `sweep`"), "{e}");
}

#[test]
fn a_phase_is_made_once_and_a_different_grid_is_refused() {
    let Some(db) = Schema::new("phase") else {
        return;
    };
    let s = db.open();
    s.join("a", "c").unwrap();
    let e = s.phase("a", 0, "runs", &fps(3), false).unwrap_err();
    assert!(
        matches!(
            e,
            SweepError::Incomplete {
                done: 0,
                cells: 3,
                ..
            }
        ),
        "{e}"
    );
    s.phase("a", 0, "runs", &fps(3), true).unwrap();
    s.phase("a", 0, "runs", &fps(3), true).unwrap();
    s.phase("a", 0, "runs", &fps(3), false).unwrap();
    let e = s.phase("a", 0, "other", &fps(3), true).unwrap_err();
    assert!(e.to_string().contains("it is `runs`"), "{e}");
    let e = s.phase("a", 0, "runs", &fps(4), true).unwrap_err();
    assert!(
        e.to_string().contains("it has 3 runs, this command 4"),
        "{e}"
    );
    let mut other = fps(3);
    other[1] = "ffffffffffffffff".into();
    let e = s.phase("a", 0, "runs", &other, true).unwrap_err();
    assert!(e.to_string().contains("run 1 differs"), "{e}");
    let p = s.progress("a", 0).unwrap();
    assert_eq!((p.cells, p.done, p.running, p.failed), (3, 0, 0, None));
}

/// Many claimers on one phase (threads with a connection each, as separate workers have)
/// each get distinct cells, and every cell is claimed exactly once.
#[test]
fn concurrent_claims_take_every_cell_exactly_once() {
    let Some(db) = Schema::new("claims") else {
        return;
    };
    let n = 60;
    let s = db.open();
    s.join("a", "c").unwrap();
    s.phase("a", 0, "runs", &fps(n), true).unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|sc| {
        for w in 0..6 {
            let (got, url) = (got.clone(), db.url());
            sc.spawn(move || {
                let s = SweepStore::open(&url).unwrap();
                let me = format!("w{w}");
                while let Some(c) = s.claim("a", 0, &me, LONG).unwrap() {
                    assert_eq!(c.claims, 1);
                    assert!(
                        s.finish("a", 0, c.cell, &me, &format!("[{}]", c.cell))
                            .unwrap()
                    );
                    got.lock().unwrap().push(c.cell);
                }
            });
        }
    });
    let got = got.lock().unwrap().clone();
    assert_eq!(got.len(), n);
    assert_eq!(got.iter().copied().collect::<BTreeSet<_>>().len(), n);
    let res = s.results("a", 0).unwrap();
    let want: Vec<Option<String>> = (0..n).map(|i| Some(format!("[{i}]"))).collect();
    assert_eq!(res, want);
    assert!(s.cells("a").unwrap().iter().all(|c| c.claims == 1));
}

/// A cell whose lease ran out (its worker died) is claimed again; a renewed lease keeps
/// the cell its worker's; a result is stored once, by whoever finishes first.
#[test]
fn leases_that_run_out_are_claimed_again_and_results_are_stored_once() {
    let Some(db) = Schema::new("lease") else {
        return;
    };
    let s = db.open();
    s.join("a", "c").unwrap();
    s.phase("a", 0, "runs", &fps(2), true).unwrap();
    // Long enough that both claims happen before it runs out on a busy machine.
    let short = Duration::from_millis(2000);
    let c0 = s.claim("a", 0, "dead", short).unwrap().unwrap();
    let c1 = s.claim("a", 0, "alive", short).unwrap().unwrap();
    assert_eq!((c0.cell, c1.cell), (0, 1));
    // "alive" renews for long; "dead" does not.
    assert_eq!(s.renew("a", "alive", LONG).unwrap(), 1);
    std::thread::sleep(short + Duration::from_millis(300));
    let again = s.claim("a", 0, "heir", LONG).unwrap().unwrap();
    assert_eq!((again.cell, again.claims), (0, 2));
    assert_eq!(s.claim("a", 0, "heir", LONG).unwrap(), None);
    assert_eq!(s.renew("a", "dead", LONG).unwrap(), 0);
    assert!(s.finish("a", 0, 0, "heir", "[1.5]").unwrap());
    // The first worker was only slow: its late result is not stored.
    assert!(!s.finish("a", 0, 0, "dead", "[9.9]").unwrap());
    assert!(s.finish("a", 0, 1, "alive", "[2.5]").unwrap());
    assert_eq!(
        s.results("a", 0).unwrap(),
        [Some("[1.5]".to_string()), Some("[2.5]".to_string())]
    );
    let cells = s.cells("a").unwrap();
    assert_eq!(cells[0].state, CellState::Done);
    assert_eq!(cells[0].claims, 2);
    assert_eq!(cells[0].done_by.as_deref(), Some("heir"));
    assert_eq!(cells[1].done_by.as_deref(), Some("alive"));
}

#[test]
fn a_failed_run_is_reported_to_every_worker() {
    let Some(db) = Schema::new("fail") else {
        return;
    };
    let s = db.open();
    s.join("a", "c").unwrap();
    s.phase("a", 0, "runs", &fps(2), true).unwrap();
    let c = s.claim("a", 0, "w", LONG).unwrap().unwrap();
    s.fail("a", 0, c.cell, "w", "numerical failure: boom")
        .unwrap();
    let p = db.open().progress("a", 0).unwrap();
    assert_eq!(
        p.failed,
        Some((0, "w".to_string(), "numerical failure: boom".to_string()))
    );
    assert_eq!(s.results("a", 0).unwrap(), [None, None]);
}

/// A database at schema version 1 (as agora 0.1 wrote it) gets the sweep tables and keeps
/// its studies.
#[test]
fn a_version_one_database_gains_sweeps() {
    let Some(db) = Schema::new("v1") else {
        return;
    };
    db.exec(
        "CREATE TABLE agora_schema (version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL);
         INSERT INTO agora_schema (version, applied_ms) VALUES (1, 0);
         CREATE TABLE agora_studies (name TEXT PRIMARY KEY, spec TEXT NOT NULL,
             created_ms BIGINT NOT NULL, facilitator_token TEXT NOT NULL);
         CREATE TABLE agora_participants (study TEXT NOT NULL REFERENCES agora_studies(name),
             position INTEGER NOT NULL, name TEXT NOT NULL, token TEXT NOT NULL UNIQUE,
             PRIMARY KEY (study, position));
         CREATE TABLE agora_events (study TEXT NOT NULL REFERENCES agora_studies(name),
             seq BIGINT NOT NULL CHECK (seq >= 0), at_ms BIGINT NOT NULL, kind TEXT NOT NULL,
             body TEXT NOT NULL, PRIMARY KEY (study, seq));",
    );
    let s = db.open();
    s.join("a", "c").unwrap();
    s.phase("a", 0, "runs", &fps(1), true).unwrap();
    assert!(s.claim("a", 0, "w", LONG).unwrap().is_some());
    let store = agora_study::live::PostgresStore::open(
        match &db.url() {
            StorageUrl::Postgres(p) => p,
            StorageUrl::Sqlite(_) => unreachable!(),
        },
        false,
    )
    .unwrap();
    use agora_study::live::Store;
    assert_eq!(
        store.schema_version().unwrap(),
        agora_study::live::SCHEMA_VERSION
    );
    assert!(store.list().unwrap().is_empty());
}

#[test]
fn a_sqlite_storage_is_refused_with_the_reason() {
    let url = StorageUrl::parse("sweeps.db").unwrap();
    let e = SweepStore::open(&url).unwrap_err();
    assert!(matches!(e, SweepError::NeedsPostgres { .. }), "{e}");
    assert!(e.to_string().contains("need a PostgreSQL storage"), "{e}");
    assert!(!std::path::Path::new("sweeps.db").exists());
    let _: Option<StoreError> = None;
}
