//! Durable studies: the append-only event log behind the [`Store`] trait, with SQLite
//! ([`SqliteStore`]) as the embedded default and PostgreSQL ([`PostgresStore`]) as the
//! shared store for several processes or machines. A storage URL ([`StorageUrl`],
//! [`open_store`]) names which.
//!
//! **The contract** every backend keeps (one test suite, `tests/store_contract.rs`, runs on
//! each):
//!
//! - Every append is committed in its own transaction before the call returns, so an event
//!   that has been acknowledged survives a crash (`kill -9`) of the process that wrote it.
//! - Events carry a per-study sequence number (0, 1, 2, ...). Appending names the number
//!   the writer expects next; when the log does not have exactly that many events the
//!   append stores nothing and returns [`StoreError::Conflict`]: the writer reloads and
//!   retries. Two writers racing for one number are told apart by the unique key
//!   `(study, seq)`, not by a lock held across a request, so writers in several processes
//!   (the CLI beside `agora serve`, several servers, many workers) never interleave unseen.
//! - The schema is versioned; opening an older store migrates it, and a store written by a
//!   newer agora is refused ([`StoreError::NewerSchema`]) before anything is read or written.
//! - A lost connection to a database server is [`StoreError::Unavailable`]: retryable, and
//!   the next call reconnects.
//! - Errors and displayed URLs never show a database password or host.
//!
//! **Change feeds.** A backend may also report, as they are committed, the appends every
//! process makes ([`Store::subscribe`]): PostgreSQL does (LISTEN/NOTIFY), so that several
//! servers on one database learn of each other's writes without polling; SQLite does not
//! (there, read the log again before relying on it).

mod postgres;
mod sqlite;
mod url;

pub use self::postgres::{PostgresStore, ScratchSchema};
pub use self::sqlite::SqliteStore;
pub use self::url::{PostgresUrl, StorageUrl, open_store};

use super::spec::StudySpec;
use agora_core::{Answer, Query};
use serde::{Deserialize, Serialize};

/// What can go wrong in a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No study by that name (the second field is a hint: the known names, or how to create
    /// a study).
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
    /// The storage URL does not parse (the message never repeats a password or host).
    #[error(
        "invalid `storage`: {reason}; allowed: a file path (SQLite, e.g. agora.db), \
         sqlite:///relative/path, sqlite:////absolute/path, or \
         postgresql://user:password@host:port/database (also postgres://)"
    )]
    InvalidStorage {
        /// What is wrong.
        reason: String,
    },
    /// Opening without `create` found no store there (no file, or a database without
    /// agora's tables).
    #[error("no study store at `{storage}`")]
    NotFound {
        /// The storage, as [`StorageUrl`] displays it (password and host hidden).
        storage: String,
    },
    /// The store was written by a newer agora.
    #[error(
        "the study store has schema version {found}, but this agora knows versions up to \
         {supported}; upgrade agora to open it"
    )]
    NewerSchema {
        /// The store's schema version.
        found: u32,
        /// The newest version this build knows ([`SCHEMA_VERSION`]).
        supported: u32,
    },
    /// The store could not be set up as agora needs it.
    #[error("{0}")]
    Schema(String),
    /// The SQLite database failed (disk full, locked for too long, not a database file).
    #[error("study store: {0}")]
    Db(#[from] rusqlite::Error),
    /// The PostgreSQL server refused or failed a request (not a lost connection). The
    /// message never shows the password or the host.
    #[error("study store: the PostgreSQL server: {0}")]
    Postgres(String),
    /// The database server cannot be reached, or the connection was lost: retry (the next
    /// call reconnects). A write that was cut off may or may not have been stored: a retry
    /// reloads first, and the sequence numbers make it exact.
    #[error("study store: {reason}; the call can be retried (the next call reconnects)")]
    Unavailable {
        /// What failed, without password or host.
        reason: String,
    },
    /// A stored record does not parse (hand-edited or corrupt data).
    #[error("study store: stored record does not parse: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// Whether the same call may succeed if simply made again later (the server was
    /// unreachable). A [`StoreError::Conflict`] is not: the caller must reload first.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Unavailable { .. })
    }
}

/// Result of store operations.
pub type StoreResult<T> = std::result::Result<T, StoreError>;

/// One participant's part of a group query: a vote on a pair or a rating of one option.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    ///
    /// With `worker` set, the query was handed to that worker (`agora ask --worker`):
    /// either the open query nobody held yet (same id; the strategy is not asked again),
    /// or a new query the strategy asked while others were open
    /// ([`agora_methods::Strategy::ask_parallel`]). Without it (every study that has no
    /// workers) the body is what it always was.
    Asked {
        /// The query.
        query: Query,
        /// The worker it was handed to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worker: Option<String>,
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
    /// Earlier evaluations or comparisons the facilitator imported before the first
    /// answer (`agora study import`): the strategy learned from them, and the query open
    /// then was withdrawn (the next `asked` event is asked in their light).
    Imported {
        /// The data, unit-cube points.
        data: Vec<agora_core::Observation>,
    },
    /// An option of the facilitator's own, put into the next query the strategy asks
    /// after this event (`agora study enqueue`).
    Enqueued {
        /// Its unit-cube coordinates.
        option: Vec<f64>,
    },
    /// How an option of an open query looks: a rendering (or description, or link) posted
    /// by the facilitator or the renderer (`POST .../media`, `agora study media`). The
    /// strategy never sees it; a later one for the same option replaces it.
    Media {
        /// The query.
        query_id: u64,
        /// The option's index in the query.
        option: usize,
        /// The media.
        media: crate::live::media::Media,
    },
    /// The complete answer the strategy was told.
    Answered {
        /// The answer.
        answer: Answer,
        /// Who gave it (the rater, or `facilitator` when a round was closed by hand).
        by: Option<String>,
    },
}

impl EventKind {
    /// The event's type as stored beside its body (`asked`, `ballot`, `answered`,
    /// `imported`, `enqueued`, `media`).
    pub fn tag(&self) -> &'static str {
        match self {
            EventKind::Asked { .. } => "asked",
            EventKind::Ballot { .. } => "ballot",
            EventKind::Answered { .. } => "answered",
            EventKind::Imported { .. } => "imported",
            EventKind::Enqueued { .. } => "enqueued",
            EventKind::Media { .. } => "media",
        }
    }
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

/// A strategy's state kept beside a study's log ([`agora_methods::Strategy::snapshot`]),
/// so that opening the study replays only the events after it. A cache, outside the log's
/// contract: a lost or refused snapshot costs a full replay, never an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSnapshot {
    /// The events it covers: the log's first `seq`.
    pub seq: u64,
    /// The agora build that wrote it (a snapshot of another build is not used).
    pub build: String,
    /// Checksum of those events ([`crate::live::study`]'s log hash): the log it belongs to.
    pub log_hash: u64,
    /// FNV-1a of `body`.
    pub checksum: u64,
    /// The strategy's state, JSON.
    pub body: String,
}

/// Where studies live: the five operations of the contract in the module docs, which every
/// backend keeps.
pub trait Store: Send + Sync {
    /// Store a new study (its spec must already be valid); [`StoreError::Exists`] when the
    /// name is taken, leaving the first study as it was.
    fn create(&self, study: &StoredStudy) -> StoreResult<()>;
    /// Names of all studies, oldest first.
    fn list(&self) -> StoreResult<Vec<String>>;
    /// A study's definition and tokens.
    fn study(&self, name: &str) -> StoreResult<StoredStudy>;
    /// The study's events with `seq >= from`, in order.
    fn events(&self, name: &str, from: u64) -> StoreResult<Vec<Event>>;
    /// Append `kinds` as events `next, next + 1, ...` in one transaction, committed before
    /// returning; [`StoreError::Conflict`] (and nothing stored) when the log does not have
    /// exactly `next` events.
    fn append(&self, name: &str, next: u64, kinds: &[EventKind]) -> StoreResult<Vec<Event>>;
    /// The schema version of the open store ([`SCHEMA_VERSION`] once opened by this build).
    fn schema_version(&self) -> StoreResult<u32>;
    /// Follow the appends every process makes to this store's studies: `on_change` is
    /// called, on a thread of the feed's own, with each [`Change`] once it is committed,
    /// until the returned [`Subscription`] is dropped. `Ok(None)` when the backend has no
    /// change feed (SQLite): then read the log again before relying on it. Changes may
    /// come more than once, and late; they are hints to read the log, which stays the
    /// truth.
    fn subscribe(&self, on_change: ChangeHandler) -> StoreResult<Option<Subscription>> {
        let _ = on_change;
        Ok(None)
    }
    /// Keep `snapshot` for study `name` (replacing one at the same `seq`), and drop all but
    /// the latest [`SNAPSHOTS_KEPT`]. The default keeps nothing (a backend without
    /// snapshots: opening replays the log).
    fn put_snapshot(&self, name: &str, snapshot: &StoredSnapshot) -> StoreResult<()> {
        let _ = (name, snapshot);
        Ok(())
    }
    /// The snapshot of study `name` covering the most events, if any.
    fn latest_snapshot(&self, name: &str) -> StoreResult<Option<StoredSnapshot>> {
        let _ = name;
        Ok(None)
    }
}

/// Snapshots kept per study (the latest; an older one is a spare should the newest be
/// refused).
pub const SNAPSHOTS_KEPT: i64 = 2;

/// A stored checksum (`u64`) as a database integer, bit for bit.
fn hash_to_db(h: u64) -> i64 {
    h as i64
}

/// A database integer back to the checksum it stores.
fn hash_from_db(v: i64) -> u64 {
    v as u64
}

/// What a change feed reports ([`Store::subscribe`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// Events were appended to `study`'s log, which now has at least `events` events.
    Appended {
        /// The study.
        study: String,
        /// The log's length after the append.
        events: u64,
    },
    /// The feed lost its connection: appends from now until [`Change::Resync`] go
    /// unreported, so what a process holds in memory may be behind the log.
    Lost,
    /// The feed is back after [`Change::Lost`] (reconnected and listening): any study may
    /// have changed meanwhile, so read each again.
    Resync,
}

/// The callback of a change feed.
pub type ChangeHandler = Box<dyn FnMut(Change) + Send + 'static>;

/// A running change feed; dropping it stops the feed (its thread ends within a second).
#[derive(Debug)]
pub struct Subscription {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Subscription {
    /// A subscription whose feed watches `stop` and ends once it is raised.
    pub(crate) fn new(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Subscription {
        Subscription { stop }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The schema version this build writes, on every backend: the number of migrations.
pub const SCHEMA_VERSION: u32 = 3;

/// The PostgreSQL server that tests of code on a store use: the URL in
/// `AGORA_TEST_POSTGRES`, or `None` when it is unset (the test then passes, printing that it
/// was skipped). With `CI` set, an unset `AGORA_TEST_POSTGRES` panics instead: PostgreSQL
/// tests must run in CI (`.ci/run` starts a server with `tools/postgres`). One rule for
/// every test suite of the workspace.
pub fn test_postgres_url() -> Option<String> {
    if let Ok(u) = std::env::var("AGORA_TEST_POSTGRES")
        && !u.trim().is_empty()
    {
        return Some(u);
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    assert!(
        !ci,
        "CI is set but AGORA_TEST_POSTGRES is not: PostgreSQL tests must run in CI \
         (.ci/run starts a server with tools/postgres)"
    );
    println!("skipped: set AGORA_TEST_POSTGRES");
    None
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A fresh random token (128 bits from the operating system, hex).
pub fn new_token() -> String {
    let mut b = [0u8; 16];
    // The OS generator failing is not recoverable for credentials; a degraded token would be
    // unsafe, so surface it as an empty token that `LiveStudy::create` rejects.
    if getrandom::fill(&mut b).is_err() {
        return String::new();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// [`StoreError::UnknownStudy`] for `name`, with the known names as a hint.
fn unknown_study(name: &str, known: &[String]) -> StoreError {
    let hint = if known.is_empty() {
        "; there are no studies yet (create one with `agora study create`)".to_string()
    } else {
        format!("; known: {}", known.join(", "))
    };
    StoreError::UnknownStudy(name.into(), hint)
}

/// A stored spec, parsed.
fn parse_spec(name: &str, spec: &str) -> StoreResult<StudySpec> {
    serde_json::from_str(spec)
        .map_err(|e| StoreError::Corrupt(format!("study `{name}`, its spec: {e}")))
}

/// A stored event body, parsed.
fn parse_event(name: &str, seq: i64, at_ms: i64, body: &str) -> StoreResult<Event> {
    let kind: EventKind = serde_json::from_str(body)
        .map_err(|e| StoreError::Corrupt(format!("study `{name}`, event {seq}: {e}")))?;
    let seq = u64::try_from(seq)
        .map_err(|_| StoreError::Corrupt(format!("study `{name}`: negative event number {seq}")))?;
    Ok(Event { seq, at_ms, kind })
}

/// The JSON bodies of `kinds`, checked before anything is written.
fn event_bodies(kinds: &[EventKind]) -> StoreResult<Vec<String>> {
    kinds
        .iter()
        .map(|k| serde_json::to_string(k).map_err(|e| StoreError::Corrupt(e.to_string())))
        .collect()
}

/// `from` as a database integer (beyond the largest, nothing is there anyway).
fn seq_from(from: u64) -> i64 {
    i64::try_from(from).unwrap_or(i64::MAX)
}

#[cfg(test)]
pub(crate) mod testing {
    //! What the backends' unit tests share.
    use super::*;
    use crate::live::spec::MethodSpec;
    use agora_core::Space;

    /// A small valid study record.
    pub fn stored(name: &str) -> StoredStudy {
        StoredStudy {
            spec: StudySpec {
                name: name.into(),
                description: "d".into(),
                space: Space::reals(&[(0.0, 1.0)]).unwrap(),
                method: MethodSpec::from_knobs("pairs", &[]).unwrap(),
                seed: 4,
                participants: vec!["ann".into()],
                round_seconds: None,
                media: Vec::new(),
            },
            created_ms: 1,
            facilitator_token: new_token(),
            participant_tokens: vec![new_token()],
        }
    }

    /// The PostgreSQL server named by `AGORA_TEST_POSTGRES`, or `None` (the test then
    /// passes, saying it was skipped); under CI (`CI` set) a missing server fails.
    pub fn postgres_url() -> Option<String> {
        super::test_postgres_url()
    }

    #[test]
    fn tokens_are_long_and_distinct() {
        let a = new_token();
        assert_eq!(a.len(), 32);
        assert_ne!(a, new_token());
    }
}
