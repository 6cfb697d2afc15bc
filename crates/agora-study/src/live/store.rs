//! Durable studies: the append-only event log and the [`Store`] trait, with SQLite as the
//! embedded default.
//!
//! Every event is committed in its own transaction before the call returns, so an answer
//! that has been acknowledged survives a crash (`kill -9`) of the process that took it.
//! Events carry a per-study sequence number; appending names the sequence number the
//! writer expects next, so two processes sharing one file (the CLI beside `agora serve`)
//! never interleave writes unseen: the second gets [`StoreError::Conflict`], reloads and
//! retries.

use super::spec::StudySpec;
use agora_core::{Answer, Query};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// What can go wrong in a store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No study by that name.
    #[error("unknown study `{0}`{1}")]
    UnknownStudy(String, String),
    /// A study by that name exists already.
    #[error("a study named `{0}` exists already; pick another name")]
    Exists(String),
    /// Someone else appended first: reload and retry.
    #[error(
        "study `{study}` changed underneath (expected event {expected}, the log has {found}); reload and retry"
    )]
    Conflict {
        /// The study.
        study: String,
        /// The sequence number the writer expected to write.
        expected: u64,
        /// The number of events actually in the log.
        found: u64,
    },
    /// The file was written by a newer agora.
    #[error("{0}")]
    Schema(String),
    /// The database itself failed (disk full, locked for too long, corrupt file).
    #[error("study store: {0}")]
    Db(#[from] rusqlite::Error),
    /// A stored record does not parse (hand-edited or corrupt file).
    #[error("study store: stored record does not parse: {0}")]
    Corrupt(String),
}

/// Result of store operations.
pub type StoreResult<T> = std::result::Result<T, StoreError>;

/// One participant's part of a group query: a vote on a pair or a rating of one option.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Ballot {
    /// The index of the option preferred, or `None` for "can't tell".
    Vote {
        /// Index into the query's points.
        choice: Option<usize>,
    },
    /// A rating of the option (larger is better).
    Rating {
        /// The value.
        value: f64,
    },
}

/// What happened in a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// The strategy asked this (stored as it was emitted; replay checks it bit for bit).
    Asked {
        /// The query.
        query: Query,
    },
    /// A participant's ballot on an open group query (a later ballot of the same
    /// participant on the same query replaces the earlier one).
    Ballot {
        /// The query answered.
        query_id: u64,
        /// Who voted.
        participant: String,
        /// The vote or rating.
        ballot: Ballot,
    },
    /// The complete answer the strategy was told.
    Answered {
        /// The answer.
        answer: Answer,
        /// Who gave it (the rater, or `facilitator` when a round was closed by hand).
        by: Option<String>,
    },
}

/// An event with its place and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the study's log (0, 1, 2, ...).
    pub seq: u64,
    /// Milliseconds since the Unix epoch when it was stored.
    pub at_ms: i64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// A stored study's definition and credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredStudy {
    /// The definition.
    pub spec: StudySpec,
    /// When it was created (ms since the epoch).
    pub created_ms: i64,
    /// The facilitator's token: full access.
    pub facilitator_token: String,
    /// Each participant's token, in the spec's participant order.
    pub participant_tokens: Vec<String>,
}

/// Where studies live. SQLite ([`SqliteStore`]) is the embedded default; a shared server
/// database implements the same five operations.
pub trait Store: Send + Sync {
    /// Store a new study (its spec must already be valid).
    fn create(&self, study: &StoredStudy) -> StoreResult<()>;
    /// Names of all studies, oldest first.
    fn list(&self) -> StoreResult<Vec<String>>;
    /// A study's definition and tokens.
    fn study(&self, name: &str) -> StoreResult<StoredStudy>;
    /// The study's events with `seq >= from`, in order.
    fn events(&self, name: &str, from: u64) -> StoreResult<Vec<Event>>;
    /// Append `kinds` as events `next, next + 1, ...` in one transaction, committed before
    /// returning; [`StoreError::Conflict`] when the log does not have exactly `next` events.
    fn append(&self, name: &str, next: u64, kinds: &[EventKind]) -> StoreResult<Vec<Event>>;
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

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
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

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
        let conn = Connection::open(path)?;
        Self::init(conn, true)
    }

    /// A fresh in-memory store.
    pub fn in_memory() -> StoreResult<SqliteStore> {
        Self::init(Connection::open_in_memory()?, false)
    }

    fn init(mut conn: Connection, file: bool) -> StoreResult<SqliteStore> {
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
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: u32 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::Schema(format!(
                "the study file has schema version {version}, but this agora knows versions up \
                 to {SCHEMA_VERSION}; upgrade agora to open it"
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as u32)?;
        }
        tx.commit()?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite half-written (transactions roll
        // back on drop), so a poisoned lock is safe to reuse.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The schema version of the open file.
    pub fn schema_version(&self) -> StoreResult<u32> {
        Ok(self
            .conn()
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
    }
}

fn kind_tag(k: &EventKind) -> &'static str {
    match k {
        EventKind::Asked { .. } => "asked",
        EventKind::Ballot { .. } => "ballot",
        EventKind::Answered { .. } => "answered",
    }
}

impl Store for SqliteStore {
    fn create(&self, study: &StoredStudy) -> StoreResult<()> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let name = &study.spec.name;
        let exists: Option<i64> = tx
            .query_row("SELECT 1 FROM studies WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .optional()?;
        if exists.is_some() {
            return Err(StoreError::Exists(name.clone()));
        }
        let spec =
            serde_json::to_string(&study.spec).map_err(|e| StoreError::Corrupt(e.to_string()))?;
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
        let conn = self.conn();
        let mut st = conn.prepare("SELECT name FROM studies ORDER BY created_ms, name")?;
        let rows = st.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
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
            drop(conn);
            let known = self.list()?;
            let hint = if known.is_empty() {
                "; there are no studies yet (create one with `agora study create`)".to_string()
            } else {
                format!("; known: {}", known.join(", "))
            };
            return Err(StoreError::UnknownStudy(name.into(), hint));
        };
        let spec: StudySpec =
            serde_json::from_str(&spec).map_err(|e| StoreError::Corrupt(e.to_string()))?;
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
        let rows = st.query_map(params![name, from as i64], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, at_ms, body) = row?;
            let kind: EventKind = serde_json::from_str(&body)
                .map_err(|e| StoreError::Corrupt(format!("event {seq}: {e}")))?;
            out.push(Event {
                seq: seq as u64,
                at_ms,
                kind,
            });
        }
        Ok(out)
    }

    fn append(&self, name: &str, next: u64, kinds: &[EventKind]) -> StoreResult<Vec<Event>> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
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
        for (i, kind) in kinds.iter().enumerate() {
            let seq = next + i as u64;
            let body =
                serde_json::to_string(kind).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            tx.execute(
                "INSERT INTO events (study, seq, at_ms, kind, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![name, seq as i64, at_ms, kind_tag(kind), body],
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
}

/// A fresh random token (128 bits from the operating system, hex).
pub fn new_token() -> String {
    let mut b = [0u8; 16];
    // The OS generator failing is not recoverable for credentials; fall back to a clear
    // panic-free degraded token would be unsafe, so surface it as an empty token that
    // `LiveStudy::create` rejects.
    if getrandom::fill(&mut b).is_err() {
        return String::new();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::spec::MethodSpec;
    use agora_core::{AnswerKind, Point, QueryKind, Space};

    fn stored(name: &str) -> StoredStudy {
        StoredStudy {
            spec: StudySpec {
                name: name.into(),
                description: "d".into(),
                space: Space::reals(&[(0.0, 1.0)]).unwrap(),
                method: MethodSpec::from_knobs("pairs", &[]).unwrap(),
                seed: 4,
                participants: vec!["ann".into()],
            },
            created_ms: 1,
            facilitator_token: new_token(),
            participant_tokens: vec![new_token()],
        }
    }

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
        let k1 = EventKind::Asked { query: q.clone() };
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

    #[test]
    fn tokens_are_long_and_distinct() {
        let a = new_token();
        assert_eq!(a.len(), 32);
        assert_ne!(a, new_token());
    }
}
