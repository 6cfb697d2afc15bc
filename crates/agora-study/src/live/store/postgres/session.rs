//! The connection behind a [`PostgresStore`](super::PostgresStore): one thread owning one
//! `postgres::Client`, the schema check and migrations when it connects, and what a failed
//! call means (a lost connection, retryable; or the server's refusal), with the password and
//! host scrubbed from every message.
//!
//! The synchronous `postgres` client drives its connection with a private single-threaded
//! tokio runtime, which may not be started on a thread that runs async tasks. So the client
//! lives on a thread of its own and every call is handed to it ([`Worker`]): the store is
//! safe to call from anywhere (a plain thread, `spawn_blocking`, even an async task, which
//! it merely blocks for the round trip).

use super::super::url::{PgHost, PostgresUrl};
use super::super::{StoreError, StoreResult, now_ms};
use ::postgres::{Client, Config, NoTls, Statement};
use std::sync::mpsc;
use std::time::Duration;

/// The table of migrations run (created before the first migration).
const SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS agora_schema (
    version INTEGER PRIMARY KEY,
    applied_ms BIGINT NOT NULL
)";

/// Key of the advisory lock that lets one process at a time migrate ("agora" in ASCII).
const MIGRATION_LOCK: i64 = 0x61_67_6f_72_61;

/// A call handed to the connection's thread.
type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// The handle to the connection's thread.
pub(super) struct Worker {
    jobs: mpsc::Sender<Job>,
}

impl Worker {
    /// Start the thread for the database `url` names, and connect (see
    /// [`Session::connect`]).
    pub(super) fn start(
        url: &PostgresUrl,
        create: bool,
        migrations: &'static [&'static str],
    ) -> StoreResult<Worker> {
        let mut session = Session {
            config: config(url),
            secrets: url.secrets(),
            shown: url.to_string(),
            migrations,
            conn: None,
        };
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("agora-postgres".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    // A panic inside one call must not take the store down for the others:
                    // its caller sees the reply channel close, and the connection is renewed.
                    let run = std::panic::AssertUnwindSafe(|| job(&mut session));
                    if std::panic::catch_unwind(run).is_err() {
                        session.conn = None;
                    }
                }
            })
            .map_err(|e| StoreError::Unavailable {
                reason: format!("could not start the PostgreSQL connection thread: {e}"),
            })?;
        let worker = Worker { jobs };
        worker.job(move |s| s.connect(create).map(|_| ()))?;
        Ok(worker)
    }

    /// Run `f` on the connection's thread and wait for its answer.
    fn job<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |s| {
            let _ = tx.send(f(s));
        });
        let stopped = || StoreError::Unavailable {
            reason: "the PostgreSQL connection thread stopped".into(),
        };
        self.jobs.send(job).map_err(|_| stopped())?;
        rx.recv().map_err(|_| stopped())?
    }

    /// Run one operation on a live connection (see [`Session::run`]).
    pub(super) fn call<T: Send + 'static>(
        &self,
        op: impl FnMut(&mut Conn) -> Result<T, Fail> + Send + 'static,
    ) -> StoreResult<T> {
        self.job(move |s| s.run(op))
    }
}

/// The client configuration for the database `url` names.
pub(super) fn config(url: &PostgresUrl) -> Config {
    let mut c = Config::new();
    c.user(&url.user)
        .dbname(&url.dbname)
        .port(url.port)
        .connect_timeout(url.connect_timeout)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30))
        .application_name(url.application_name.as_deref().unwrap_or("agora"))
        // Notices ("relation already exists, skipping") are not errors; drop them.
        .notice_callback(|_| {});
    match &url.host {
        PgHost::Tcp(h) => c.host(h),
        PgHost::Socket(p) => c.host_path(p),
    };
    if let Some(p) = &url.password {
        c.password(p);
    }
    if let Some(o) = &url.options {
        c.options(o);
    }
    c
}

/// A live connection and its prepared statements.
pub(super) struct Conn {
    pub(super) client: Client,
    pub(super) st: Statements,
}

pub(super) struct Statements {
    pub(super) exists: Statement,
    pub(super) names: Statement,
    pub(super) study: Statement,
    pub(super) tokens: Statement,
    pub(super) events: Statement,
    pub(super) head: Statement,
    pub(super) insert_study: Statement,
    pub(super) insert_participant: Statement,
    pub(super) append: Statement,
    pub(super) version: Statement,
}

impl Statements {
    fn prepare(c: &mut Client) -> Result<Statements, ::postgres::Error> {
        Ok(Statements {
            exists: c.prepare("SELECT 1 FROM agora_studies WHERE name = $1")?,
            // COLLATE "C": byte order, as SQLite sorts, whatever the database's locale.
            names: c.prepare(
                "SELECT name FROM agora_studies ORDER BY created_ms, name COLLATE \"C\"",
            )?,
            study: c.prepare(
                "SELECT spec, created_ms, facilitator_token FROM agora_studies WHERE name = $1",
            )?,
            tokens: c.prepare(
                "SELECT token FROM agora_participants WHERE study = $1 ORDER BY position",
            )?,
            events: c.prepare(
                "SELECT seq, at_ms, body FROM agora_events WHERE study = $1 AND seq >= $2 \
                 ORDER BY seq",
            )?,
            head: c.prepare(
                "SELECT EXISTS (SELECT 1 FROM agora_studies WHERE name = $1), \
                 (SELECT COALESCE(MAX(seq) + 1, 0) FROM agora_events WHERE study = $1)",
            )?,
            insert_study: c.prepare(
                "INSERT INTO agora_studies (name, spec, created_ms, facilitator_token) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING",
            )?,
            insert_participant: c.prepare(
                "INSERT INTO agora_participants (study, position, name, token) \
                 VALUES ($1, $2, $3, $4)",
            )?,
            // One round trip for a whole batch: check that the log has `$2` events, insert
            // the events `$2, $2 + 1, ...`, and notify the listeners (see `listen`; the
            // notification goes out when the transaction commits, and not at all if the
            // insert fails). Returns whether the study exists, the log's length before, and
            // how many events went in.
            append: c.prepare(&format!(
                "WITH head AS ( \
                     SELECT EXISTS (SELECT 1 FROM agora_studies WHERE name = $1) AS known, \
                            (SELECT COALESCE(MAX(seq) + 1, 0) FROM agora_events \
                             WHERE study = $1) AS found), \
                 ins AS ( \
                     INSERT INTO agora_events (study, seq, at_ms, kind, body) \
                     SELECT $1, $2::bigint + e.i - 1, $3::bigint, e.k, e.b \
                     FROM head, unnest($4::text[], $5::text[]) WITH ORDINALITY AS e(k, b, i) \
                     WHERE head.known AND head.found = $2::bigint \
                     RETURNING 1), \
                 note AS ( \
                     SELECT pg_notify('{}', json_build_object('schema', current_schema(), \
                         'study', $1::text, 'events', $2::bigint + (SELECT COUNT(*) FROM ins) \
                     )::text) FROM head WHERE head.known AND head.found = $2::bigint) \
                 SELECT head.known, head.found, (SELECT COUNT(*) FROM ins), \
                        (SELECT COUNT(*) FROM note) \
                 FROM head",
                super::listen::CHANNEL
            ))?,
            version: c.prepare("SELECT COALESCE(MAX(version), 0) FROM agora_schema")?,
        })
    }
}

/// Why an operation failed.
pub(super) enum Fail {
    /// The database said no or the connection broke; `Again` when nothing had been written
    /// on the connection yet, so the operation may run again on a fresh one.
    Pg(::postgres::Error, Again),
    /// An answer of the contract (unknown study, conflict, corrupt record).
    Store(StoreError),
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Again {
    Safe,
    Unsafe,
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Fail {
        Fail::Store(e)
    }
}

/// Tag a database error of a statement that leaves nothing behind when the connection
/// breaks: a read, or a statement inside a transaction not yet committed (the server rolls
/// an open transaction back when its connection goes).
pub(super) fn read(e: ::postgres::Error) -> Fail {
    Fail::Pg(e, Again::Safe)
}

/// Tag a database error of a `COMMIT`: when the connection breaks there, the write may or
/// may not have been stored.
pub(super) fn commit(e: ::postgres::Error) -> Fail {
    Fail::Pg(e, Again::Unsafe)
}

/// The connection's thread's state.
struct Session {
    config: Config,
    /// The host and password, scrubbed from every message.
    secrets: Vec<String>,
    shown: String,
    migrations: &'static [&'static str],
    conn: Option<Conn>,
}

impl Session {
    /// The live connection, opening one (and checking the schema) when there is none.
    fn connect(&mut self, create: bool) -> StoreResult<&mut Conn> {
        if self.conn.is_none() {
            let conn = self.establish(create)?;
            self.conn = Some(conn);
        }
        self.conn.as_mut().ok_or_else(|| StoreError::Unavailable {
            reason: "no connection to the PostgreSQL server".into(),
        })
    }

    fn establish(&mut self, create: bool) -> StoreResult<Conn> {
        let mut client = self.config.connect(NoTls).map_err(|e| self.error(&e))?;
        client
            .batch_execute("SET synchronous_commit = on")
            .map_err(|e| self.error(&e))?;
        let known = self.migrations.len() as u32;
        let version = match self.version(&mut client)? {
            None if !create => {
                return Err(StoreError::NotFound {
                    storage: self.shown.clone(),
                });
            }
            None => 0,
            Some(v) => v,
        };
        if version > known {
            return Err(StoreError::NewerSchema {
                found: version,
                supported: known,
            });
        }
        if version < known {
            self.migrate(&mut client)?;
        }
        let st = Statements::prepare(&mut client).map_err(|e| self.error(&e))?;
        Ok(Conn { client, st })
    }

    /// The schema version, or `None` when the database has no agora tables.
    fn version(&self, client: &mut Client) -> StoreResult<Option<u32>> {
        let row = client
            .query_one("SELECT to_regclass('agora_schema') IS NOT NULL", &[])
            .map_err(|e| self.error(&e))?;
        if !row.get::<_, bool>(0) {
            return Ok(None);
        }
        let row = client
            .query_one("SELECT COALESCE(MAX(version), 0) FROM agora_schema", &[])
            .map_err(|e| self.error(&e))?;
        Ok(Some(row.get::<_, i32>(0).max(0) as u32))
    }

    /// Run the migrations the database has not had, in one transaction, under an advisory
    /// lock so that processes starting together migrate once.
    fn migrate(&self, client: &mut Client) -> StoreResult<()> {
        let known = self.migrations.len() as u32;
        let mut tx = client.transaction().map_err(|e| self.error(&e))?;
        let steps = (|| {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
            tx.batch_execute(SCHEMA_TABLE)?;
            let v: i32 = tx
                .query_one("SELECT COALESCE(MAX(version), 0) FROM agora_schema", &[])?
                .get(0);
            Ok::<_, ::postgres::Error>(v.max(0) as u32)
        })();
        let version = steps.map_err(|e| self.error(&e))?;
        if version > known {
            return Err(StoreError::NewerSchema {
                found: version,
                supported: known,
            });
        }
        for (i, sql) in self.migrations.iter().enumerate().skip(version as usize) {
            tx.batch_execute(sql).map_err(|e| self.error(&e))?;
            tx.execute(
                "INSERT INTO agora_schema (version, applied_ms) VALUES ($1, $2)",
                &[&(i as i32 + 1), &now_ms()],
            )
            .map_err(|e| self.error(&e))?;
        }
        tx.commit().map_err(|e| self.error(&e))
    }

    /// Run `op` on the connection. When the connection turns out to be lost, it is dropped
    /// (the next call reconnects) and the call is [`StoreError::Unavailable`]; but when
    /// the connection had sat idle since an earlier call and `op` broke before any
    /// `COMMIT`, it was merely stale (the server restarted meanwhile) and `op` runs once
    /// more on a new one.
    fn run<T>(&mut self, mut op: impl FnMut(&mut Conn) -> Result<T, Fail>) -> StoreResult<T> {
        let reused = self.conn.is_some();
        let conn = self.connect(false)?;
        match op(conn) {
            Ok(v) => Ok(v),
            Err(Fail::Store(e)) => Err(e),
            Err(Fail::Pg(e, again)) => {
                let err = self.error(&e);
                if !err.is_retryable() {
                    return Err(err);
                }
                self.conn = None;
                if !(reused && again == Again::Safe) {
                    return Err(err);
                }
                let conn = self.connect(false)?;
                match op(conn) {
                    Ok(v) => Ok(v),
                    Err(Fail::Store(e)) => Err(e),
                    Err(Fail::Pg(e, _)) => {
                        let err = self.error(&e);
                        if err.is_retryable() {
                            self.conn = None;
                        }
                        Err(err)
                    }
                }
            }
        }
    }

    /// A database error as a [`StoreError`], without the host or the password.
    fn error(&self, e: &::postgres::Error) -> StoreError {
        store_error(e, &self.secrets)
    }
}

/// A database error as a [`StoreError`], with `secrets` (the host, the password) scrubbed:
/// [`StoreError::Unavailable`] when the connection is lost or refused, else
/// [`StoreError::Postgres`].
pub(super) fn store_error(e: &::postgres::Error, secrets: &[String]) -> StoreError {
    let (text, lost) = match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            let lost = code.starts_with("08") // connection exception
                || matches!(code, "57P01" | "57P02" | "57P03" | "53300");
            (format!("{} (SQLSTATE {code})", db.message()), lost)
        }
        None => {
            let io = std::error::Error::source(e)
                .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some());
            let kind = e.to_string();
            let lost = io
                || e.is_closed()
                || matches!(
                    kind.as_str(),
                    "error connecting to server"
                        | "timeout waiting for server"
                        | "error communicating with the server"
                        | "unexpected message from server"
                        | "error parsing response from server"
                );
            let text = match std::error::Error::source(e) {
                Some(s) => format!("{kind}: {s}"),
                None => kind,
            };
            (text, lost)
        }
    };
    let text = scrub(&text, secrets);
    if lost {
        StoreError::Unavailable {
            reason: format!("the PostgreSQL server is unavailable ({text})"),
        }
    } else {
        StoreError::Postgres(text)
    }
}

/// `text` with every whole-word occurrence of each secret replaced by `***`.
fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        let mut done = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(i) = rest.find(s.as_str()) {
            let before = rest[..i].chars().next_back();
            let after = rest[i + s.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            done.push_str(&rest[..i]);
            if word(before) || word(after) {
                done.push_str(s);
            } else {
                done.push_str("***");
            }
            rest = &rest[i + s.len()..];
        }
        done.push_str(rest);
        out = done;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_hides_whole_words_only() {
        let secrets = vec!["db".to_string(), "hunter2".to_string()];
        assert_eq!(
            scrub(
                "no pg_hba.conf entry for host \"db\", password hunter2",
                &secrets
            ),
            "no pg_hba.conf entry for host \"***\", password ***"
        );
        assert_eq!(scrub("database dbx", &secrets), "database dbx");
    }
}
