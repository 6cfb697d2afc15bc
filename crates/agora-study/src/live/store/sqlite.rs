//! The embedded store: one SQLite file in WAL mode, shared safely by the processes of one
//! machine (the CLI beside `agora serve`).
//!
//! Writes take SQLite's write lock for the length of one transaction (`BEGIN IMMEDIATE`),
//! and `synchronous = FULL` makes a commit survive power loss. `PRAGMA user_version`
//! records how many migrations have run, so an older agora also refuses a newer file.

use super::{
    Event, EventKind, SCHEMA_VERSION, SNAPSHOTS_KEPT, Store, StoreError, StoreResult,
    StoredSnapshot, StoredStudy, event_bodies, hash_from_db, hash_to_db, now_ms, parse_event,
    parse_spec, seq_from, unknown_study,
};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// The schema migrations, in order; `PRAGMA user_version` records how many have run.
const MIGRATIONS: &[&str] = &[
    // 1: studies, participants, events.
    "CREATE TABLE studies (
        name TEXT PRIMARY KEY,
        spec TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        facilitator_token TEXT NOT NULL
    );
    CREATE TABLE participants (
        study TEXT NOT NULL REFERENCES studies(name),
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        token TEXT NOT NULL UNIQUE,
        PRIMARY KEY (study, position)
    );
    CREATE TABLE events (
        study TEXT NOT NULL REFERENCES studies(name),
        seq INTEGER NOT NULL,
        at_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (study, seq)
    );",
    // 2: nothing. Sweeps (migration 2 on PostgreSQL) need a database server that workers on
    // several machines reach; on one machine the local runner already uses every core.
    "",
    // 3: strategy snapshots beside the log (a cache; see `StoredSnapshot`).
    "CREATE TABLE snapshots (
        study TEXT NOT NULL REFERENCES studies(name),
        seq INTEGER NOT NULL,
        build TEXT NOT NULL,
        log_hash INTEGER NOT NULL,
        checksum INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (study, seq)
    );",
];

const _: () = assert!(MIGRATIONS.len() as u32 == SCHEMA_VERSION);

/// A SQLite file in WAL mode (or an in-memory database for tests).
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteStore")
    }
}

impl SqliteStore {
    /// Open (creating if needed) the store at `path`, migrating its schema.
    pub fn open(path: &Path) -> StoreResult<SqliteStore> {
        Self::open_with(path, true)
    }

    /// Open the store at `path`, migrating its schema; without `create`, a missing file is
    /// [`StoreError::NotFound`] and nothing is created.
    pub fn open_with(path: &Path, create: bool) -> StoreResult<SqliteStore> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        } else if !path.is_file() {
            return Err(StoreError::NotFound {
                storage: path.display().to_string(),
            });
        }
        let conn = Connection::open_with_flags(path, flags)?;
        Self::init(conn, true, MIGRATIONS)
    }

    /// A fresh in-memory store.
    pub fn in_memory() -> StoreResult<SqliteStore> {
        Self::init(Connection::open_in_memory()?, false, MIGRATIONS)
    }

    fn init(mut conn: Connection, file: bool, migrations: &[&str]) -> StoreResult<SqliteStore> {
        conn.busy_timeout(Duration::from_secs(10))?;
        if file {
            let mode: String =
                conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(StoreError::Schema(format!(
                    "could not switch the study file to WAL mode (got {mode})"
                )));
            }
            // FULL: a committed transaction survives power loss, not only a process crash.
            conn.pragma_update(None, "synchronous", "FULL")?;
        }
        conn.pragma_update(None, "foreign_keys", "ON")?;
        migrate(&mut conn, migrations)?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite half-written (transactions roll
        // back on drop), so a poisoned lock is safe to reuse.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Run the migrations the file has not had yet, in one transaction; refuse a newer file.
fn migrate(conn: &mut Connection, migrations: &[&str]) -> StoreResult<()> {
    let known = migrations.len() as u32;
    let version: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > known {
        return Err(StoreError::NewerSchema {
            found: version,
            supported: known,
        });
    }
    if version == known {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Read again under the write lock: another process may have migrated meanwhile.
    let version: u32 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > known {
        return Err(StoreError::NewerSchema {
            found: version,
            supported: known,
        });
    }
    for (i, sql) in migrations.iter().enumerate().skip(version as usize) {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as u32)?;
    }
    tx.commit()?;
    Ok(())
}

fn study_exists(conn: &Connection, name: &str) -> StoreResult<bool> {
    let found: Option<i64> = conn
        .query_row("SELECT 1 FROM studies WHERE name = ?1", [name], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(found.is_some())
}

fn names(conn: &Connection) -> StoreResult<Vec<String>> {
    let mut st = conn.prepare("SELECT name FROM studies ORDER BY created_ms, name")?;
    let rows = st.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

impl Store for SqliteStore {
    fn create(&self, study: &StoredStudy) -> StoreResult<()> {
        let name = &study.spec.name;
        let spec =
            serde_json::to_string(&study.spec).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if study_exists(&tx, name)? {
            return Err(StoreError::Exists(name.clone()));
        }
        tx.execute(
            "INSERT INTO studies (name, spec, created_ms, facilitator_token) VALUES (?1, ?2, ?3, ?4)",
            params![name, spec, study.created_ms, study.facilitator_token],
        )?;
        for (i, (p, t)) in study
            .spec
            .participants
            .iter()
            .zip(&study.participant_tokens)
            .enumerate()
        {
            tx.execute(
                "INSERT INTO participants (study, position, name, token) VALUES (?1, ?2, ?3, ?4)",
                params![name, i as i64, p, t],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    fn list(&self) -> StoreResult<Vec<String>> {
        names(&self.conn())
    }

    fn study(&self, name: &str) -> StoreResult<StoredStudy> {
        let conn = self.conn();
        let row: Option<(String, i64, String)> = conn
            .query_row(
                "SELECT spec, created_ms, facilitator_token FROM studies WHERE name = ?1",
                [name],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let Some((spec, created_ms, facilitator_token)) = row else {
            return Err(unknown_study(name, &names(&conn)?));
        };
        let spec = parse_spec(name, &spec)?;
        let mut st =
            conn.prepare("SELECT token FROM participants WHERE study = ?1 ORDER BY position")?;
        let participant_tokens = st
            .query_map([name], |r| r.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(StoredStudy {
            spec,
            created_ms,
            facilitator_token,
            participant_tokens,
        })
    }

    fn events(&self, name: &str, from: u64) -> StoreResult<Vec<Event>> {
        let conn = self.conn();
        let mut st = conn.prepare(
            "SELECT seq, at_ms, body FROM events WHERE study = ?1 AND seq >= ?2 ORDER BY seq",
        )?;
        let rows = st.query_map(params![name, seq_from(from)], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, at_ms, body) = row?;
            out.push(parse_event(name, seq, at_ms, &body)?);
        }
        if out.is_empty() && !study_exists(&conn, name)? {
            return Err(unknown_study(name, &names(&conn)?));
        }
        Ok(out)
    }

    fn append(&self, name: &str, next: u64, kinds: &[EventKind]) -> StoreResult<Vec<Event>> {
        let bodies = event_bodies(kinds)?;
        let mut conn = self.conn();
        // The write lock is held only for this transaction; the sequence check is what
        // detects another writer.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if !study_exists(&tx, name)? {
            let known = names(&tx)?;
            return Err(unknown_study(name, &known));
        }
        let count: i64 = tx.query_row(
            "SELECT COUNT(*) FROM events WHERE study = ?1",
            [name],
            |r| r.get(0),
        )?;
        if count as u64 != next {
            return Err(StoreError::Conflict {
                study: name.into(),
                expected: next,
                found: count as u64,
            });
        }
        let at_ms = now_ms();
        let mut out = Vec::with_capacity(kinds.len());
        for (i, (kind, body)) in kinds.iter().zip(&bodies).enumerate() {
            let seq = next + i as u64;
            tx.execute(
                "INSERT INTO events (study, seq, at_ms, kind, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![name, seq_from(seq), at_ms, kind.tag(), body],
            )?;
            out.push(Event {
                seq,
                at_ms,
                kind: kind.clone(),
            });
        }
        tx.commit()?;
        Ok(out)
    }

    fn schema_version(&self) -> StoreResult<u32> {
        Ok(self
            .conn()
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
    }

    fn put_snapshot(&self, name: &str, snap: &StoredSnapshot) -> StoreResult<()> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if !study_exists(&tx, name)? {
            return Err(unknown_study(name, &names(&tx)?));
        }
        tx.execute(
            "INSERT OR REPLACE INTO snapshots (study, seq, build, log_hash, checksum, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                name,
                seq_from(snap.seq),
                snap.build,
                hash_to_db(snap.log_hash),
                hash_to_db(snap.checksum),
                snap.body
            ],
        )?;
        tx.execute(
            "DELETE FROM snapshots WHERE study = ?1 AND seq NOT IN
             (SELECT seq FROM snapshots WHERE study = ?1 ORDER BY seq DESC LIMIT ?2)",
            params![name, SNAPSHOTS_KEPT],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn latest_snapshot(&self, name: &str) -> StoreResult<Option<StoredSnapshot>> {
        let conn = self.conn();
        let row = conn
            .query_row(
                "SELECT seq, build, log_hash, checksum, body FROM snapshots
                 WHERE study = ?1 ORDER BY seq DESC LIMIT 1",
                [name],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, String>(4)?,
                    ))
                },
            )
            .optional()?;
        Ok(
            row.map(|(seq, build, log_hash, checksum, body)| StoredSnapshot {
                seq: seq.max(0) as u64,
                build,
                log_hash: hash_from_db(log_hash),
                checksum: hash_from_db(checksum),
                body,
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::stored;
    use super::*;
    use agora_core::{Answer, AnswerKind, Point, Query, QueryKind};

    #[test]
    fn events_are_appended_in_order_and_conflicts_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let s = SqliteStore::open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        let a = stored("a");
        s.create(&a).unwrap();
        assert!(matches!(s.create(&stored("a")), Err(StoreError::Exists(_))));
        let q = Query {
            id: 0,
            kind: QueryKind::Compare {
                points: vec![Point::Unit(vec![0.1]), Point::Unit(vec![0.3 + 1e-17])],
                rater: None,
            },
        };
        let k1 = EventKind::Asked {
            query: q.clone(),
            worker: None,
        };
        let k2 = EventKind::Answered {
            answer: Answer {
                query_id: 0,
                kind: AnswerKind::Choice {
                    winner: 1,
                    rater: Some("ann".into()),
                },
            },
            by: Some("ann".into()),
        };
        s.append("a", 0, std::slice::from_ref(&k1)).unwrap();
        let e = s.append("a", 0, std::slice::from_ref(&k2)).unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::Conflict {
                    expected: 0,
                    found: 1,
                    ..
                }
            ),
            "{e}"
        );
        s.append("a", 1, std::slice::from_ref(&k2)).unwrap();
        drop(s);
        // Reopening (a restart) sees the same log, floats bit for bit.
        let s = SqliteStore::open(&path).unwrap();
        let ev = s.events("a", 0).unwrap();
        assert_eq!(
            ev.iter().map(|e| e.kind.clone()).collect::<Vec<_>>(),
            vec![k1, k2]
        );
        assert_eq!(s.events("a", 1).unwrap().len(), 1);
        assert_eq!(s.study("a").unwrap(), a);
        let e = s.study("zz").unwrap_err().to_string();
        assert!(
            e.contains("unknown study `zz`") && e.contains("known: a"),
            "{e}"
        );
    }

    #[test]
    fn a_newer_schema_is_refused_with_a_clear_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        drop(SqliteStore::open(&path).unwrap());
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        drop(c);
        let e = SqliteStore::open(&path).unwrap_err().to_string();
        assert!(e.contains("upgrade agora"), "{e}");
    }

    /// A later migration runs on a file at an earlier version, once, keeping its data;
    /// processes that open a new file together migrate it once.
    #[test]
    fn an_older_file_is_migrated_forward_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| SqliteStore::open(&path).unwrap());
            }
        });
        let s = SqliteStore::open(&path).unwrap();
        s.create(&stored("a")).unwrap();
        drop(s);
        let next: &[&str] = &[
            MIGRATIONS[0],
            MIGRATIONS[1],
            MIGRATIONS[2],
            "CREATE TABLE later (x INTEGER); INSERT INTO later VALUES (7);",
        ];
        for _ in 0..2 {
            let c = Connection::open(&path).unwrap();
            let s = SqliteStore::init(c, true, next).unwrap();
            assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION + 1);
            assert_eq!(s.list().unwrap(), vec!["a".to_string()]);
            let n: i64 = s
                .conn()
                .query_row("SELECT COUNT(*) FROM later", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 1);
        }
        // This build refuses the file the later one wrote.
        let e = SqliteStore::open(&path).unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::NewerSchema {
                    found: 4,
                    supported: 3
                }
            ),
            "{e}"
        );
    }
}
