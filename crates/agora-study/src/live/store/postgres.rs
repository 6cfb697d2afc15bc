//! The shared store: a PostgreSQL database, for studies written by several processes or
//! machines (several servers on one meeting, many workers on one study).
//!
//! **Same contract as SQLite.** Each append is one transaction committed before the call
//! returns (`synchronous_commit` is forced on for agora's sessions). A writer checks that
//! the log has the number of events it expects and inserts at that number; two writers
//! racing for one number are told apart by the primary key `(study, seq)`: the second
//! insert fails with a unique violation and becomes [`StoreError::Conflict`]. No lock is
//! held between requests. Tables are prefixed `agora_` so that the database can hold
//! other things; `agora_schema` records the migrations that have run, and a database
//! whose schema is newer than this build is refused.
//!
//! **Connections.** Each [`PostgresStore`] owns one connection, on a thread of its own
//! ([`session`]): the synchronous client may not run on a thread that runs async tasks, so
//! every call is handed to that thread, and the store is safe to call from anywhere. Calls
//! on one store are served in order, as on one SQLite connection.
//!
//! **Change feed.** Each append also calls `pg_notify` in its transaction, so the
//! notification goes out when (and only if) the append commits; [`Store::subscribe`]
//! LISTENs on a connection of its own and reconnects when it is lost ([`listen`]).
//!
//! **Failures.** A lost or refused connection is [`StoreError::Unavailable`]
//! ([`StoreError::is_retryable`]); the connection is dropped and the next call opens a new
//! one. A connection that went stale while idle (the server restarted) is replaced at once
//! when nothing had been written on it yet. Errors never show the password or the host.
//!
//! **No TLS.** agora speaks to PostgreSQL in clear: keep the server on loopback, a Unix
//! socket or a trusted network.

mod listen;
mod session;
mod sweep;

use self::session::{Conn, Fail, Worker, commit, read};
use super::url::PostgresUrl;
use super::{
    ChangeHandler, Event, EventKind, SCHEMA_VERSION, SNAPSHOTS_KEPT, Store, StoreError,
    StoreResult, StoredSnapshot, StoredStudy, Subscription, event_bodies, hash_from_db, hash_to_db,
    now_ms, parse_event, parse_spec, seq_from, unknown_study,
};
use ::postgres::error::SqlState;

/// The schema migrations, in order; `agora_schema` holds one row per migration run.
const MIGRATIONS: &[&str] = &[
    // 1: studies, participants, events.
    "CREATE TABLE agora_studies (
        name TEXT PRIMARY KEY,
        spec TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        facilitator_token TEXT NOT NULL
    );
    CREATE TABLE agora_participants (
        study TEXT NOT NULL REFERENCES agora_studies(name),
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        token TEXT NOT NULL UNIQUE,
        PRIMARY KEY (study, position)
    );
    CREATE TABLE agora_events (
        study TEXT NOT NULL REFERENCES agora_studies(name),
        seq BIGINT NOT NULL CHECK (seq >= 0),
        at_ms BIGINT NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (study, seq)
    );",
    // 2: sweeps (`crate::sweep`): grids whose cells workers on many machines claim.
    "CREATE TABLE agora_sweeps (
        name TEXT PRIMARY KEY,
        command TEXT NOT NULL,
        created_ms BIGINT NOT NULL
    );
    CREATE TABLE agora_sweep_phases (
        sweep TEXT NOT NULL REFERENCES agora_sweeps(name),
        phase INTEGER NOT NULL CHECK (phase >= 0),
        label TEXT NOT NULL,
        cells INTEGER NOT NULL CHECK (cells >= 0),
        PRIMARY KEY (sweep, phase)
    );
    CREATE TABLE agora_sweep_cells (
        sweep TEXT NOT NULL,
        phase INTEGER NOT NULL,
        cell INTEGER NOT NULL CHECK (cell >= 0),
        fingerprint TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending'
            CHECK (state IN ('pending', 'running', 'done', 'failed')),
        worker TEXT,
        lease_until BIGINT,
        claims INTEGER NOT NULL DEFAULT 0,
        done_by TEXT,
        done_ms BIGINT,
        result TEXT,
        error TEXT,
        PRIMARY KEY (sweep, phase, cell),
        FOREIGN KEY (sweep, phase) REFERENCES agora_sweep_phases(sweep, phase)
    );",
    // 3: strategy snapshots beside the log (a cache; see `StoredSnapshot`).
    "CREATE TABLE agora_snapshots (
        study TEXT NOT NULL REFERENCES agora_studies(name),
        seq BIGINT NOT NULL CHECK (seq >= 0),
        build TEXT NOT NULL,
        log_hash BIGINT NOT NULL,
        checksum BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (study, seq)
    );",
];

const _: () = assert!(MIGRATIONS.len() as u32 == SCHEMA_VERSION);

/// A PostgreSQL database holding agora's studies.
pub struct PostgresStore {
    shown: String,
    url: PostgresUrl,
    worker: Worker,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PostgresStore({})", self.shown)
    }
}

impl PostgresStore {
    /// Connect to the database `url` names and check (with `create`, set up or migrate)
    /// its schema. Without `create`, a database without agora's tables is
    /// [`StoreError::NotFound`] and nothing is written.
    pub fn open(url: &PostgresUrl, create: bool) -> StoreResult<PostgresStore> {
        Self::open_with(url, create, MIGRATIONS)
    }

    fn open_with(
        url: &PostgresUrl,
        create: bool,
        migrations: &'static [&'static str],
    ) -> StoreResult<PostgresStore> {
        Ok(PostgresStore {
            shown: url.to_string(),
            url: url.clone(),
            worker: Worker::start(url, create, migrations)?,
        })
    }

    fn call<T: Send + 'static>(
        &self,
        op: impl FnMut(&mut Conn) -> Result<T, Fail> + Send + 'static,
    ) -> StoreResult<T> {
        self.worker.call(op)
    }
}

/// A schema of its own in a PostgreSQL database, for a benchmark or a test that must not
/// touch what else the database holds: created empty, and dropped with everything in it
/// when this is dropped.
#[derive(Debug)]
pub struct ScratchSchema {
    base: PostgresUrl,
    name: String,
    url: PostgresUrl,
}

impl ScratchSchema {
    /// Create schema `name` (lower-case letters, digits and `_`, at most 63; an old one of
    /// that name is dropped first) in the database `base` names.
    pub fn create(base: &PostgresUrl, name: &str) -> StoreResult<ScratchSchema> {
        if name.is_empty()
            || name.len() > 63
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(StoreError::InvalidStorage {
                reason: format!("schema name `{name}`: allowed are 1 to 63 of a-z, 0-9 and '_'"),
            });
        }
        admin(
            base,
            format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"),
        )?;
        Ok(ScratchSchema {
            base: base.clone(),
            name: name.to_string(),
            url: base.in_schema(name),
        })
    }

    /// The database with agora's tables in this schema.
    pub fn url(&self) -> &PostgresUrl {
        &self.url
    }

    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for ScratchSchema {
    fn drop(&mut self) {
        let _ = admin(
            &self.base,
            format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name),
        );
    }
}

/// Run `sql` on a connection of its own, on a thread of its own (the synchronous client may
/// not run on a thread of an async runtime).
fn admin(url: &PostgresUrl, sql: String) -> StoreResult<()> {
    let config = session::config(url);
    let secrets = url.secrets();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut client = config
                .connect(::postgres::NoTls)
                .map_err(|e| session::store_error(&e, &secrets))?;
            client
                .batch_execute(&sql)
                .map_err(|e| session::store_error(&e, &secrets))
        })
        .join()
        .unwrap_or_else(|_| {
            Err(StoreError::Unavailable {
                reason: "the PostgreSQL admin thread failed".into(),
            })
        })
    })
}

/// The known study names, for an unknown-study hint.
fn names(c: &mut Conn) -> Result<Vec<String>, Fail> {
    let rows = c.client.query(&c.st.names, &[]).map_err(read)?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

impl Store for PostgresStore {
    fn create(&self, study: &StoredStudy) -> StoreResult<()> {
        let spec =
            serde_json::to_string(&study.spec).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let study = study.clone();
        self.call(move |c| {
            let name = &study.spec.name;
            let mut tx = c.client.transaction().map_err(read)?;
            let n = tx
                .execute(
                    &c.st.insert_study,
                    &[name, &spec, &study.created_ms, &study.facilitator_token],
                )
                .map_err(read)?;
            if n == 0 {
                return Err(StoreError::Exists(name.clone()).into());
            }
            for (i, (p, t)) in study
                .spec
                .participants
                .iter()
                .zip(&study.participant_tokens)
                .enumerate()
            {
                tx.execute(&c.st.insert_participant, &[name, &(i as i32), p, t])
                    .map_err(read)?;
            }
            tx.commit().map_err(commit)
        })
    }

    fn list(&self) -> StoreResult<Vec<String>> {
        self.call(names)
    }

    fn study(&self, name: &str) -> StoreResult<StoredStudy> {
        let name = name.to_string();
        self.call(move |c| {
            let row = c.client.query_opt(&c.st.study, &[&name]).map_err(read)?;
            let Some(row) = row else {
                return Err(unknown_study(&name, &names(c)?).into());
            };
            let spec = parse_spec(&name, row.get(0))?;
            let tokens = c.client.query(&c.st.tokens, &[&name]).map_err(read)?;
            Ok(StoredStudy {
                spec,
                created_ms: row.get(1),
                facilitator_token: row.get(2),
                participant_tokens: tokens.iter().map(|r| r.get(0)).collect(),
            })
        })
    }

    fn events(&self, name: &str, from: u64) -> StoreResult<Vec<Event>> {
        let name = name.to_string();
        self.call(move |c| {
            let rows = c
                .client
                .query(&c.st.events, &[&name, &seq_from(from)])
                .map_err(read)?;
            let mut out = Vec::with_capacity(rows.len());
            for r in &rows {
                out.push(parse_event(&name, r.get(0), r.get(1), r.get(2))?);
            }
            if out.is_empty()
                && c.client
                    .query_opt(&c.st.exists, &[&name])
                    .map_err(read)?
                    .is_none()
            {
                return Err(unknown_study(&name, &names(c)?).into());
            }
            Ok(out)
        })
    }

    fn append(&self, name: &str, next: u64, kinds: &[EventKind]) -> StoreResult<Vec<Event>> {
        let bodies = event_bodies(kinds)?;
        let name = name.to_string();
        let kinds = kinds.to_vec();
        self.call(move |c| {
            let tags: Vec<&str> = kinds.iter().map(EventKind::tag).collect();
            let at_ms = now_ms();
            let mut tx = c.client.transaction().map_err(read)?;
            let row = match tx.query_one(
                &c.st.append,
                &[&name, &seq_from(next), &at_ms, &tags, &bodies],
            ) {
                Ok(row) => row,
                Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                    // Another writer took these numbers between our check and our insert.
                    drop(tx);
                    let found = c
                        .client
                        .query_one(&c.st.head, &[&name])
                        .map(|r| r.get::<_, i64>(1).max(0) as u64)
                        .unwrap_or(next + 1);
                    return Err(conflict(&name, next, found));
                }
                Err(e) => return Err(read(e)),
            };
            if !row.get::<_, bool>(0) {
                drop(tx);
                return Err(unknown_study(&name, &names(c)?).into());
            }
            let found = row.get::<_, i64>(1).max(0) as u64;
            if found != next {
                return Err(conflict(&name, next, found));
            }
            if row.get::<_, i64>(2) != kinds.len() as i64 {
                return Err(StoreError::Schema(format!(
                    "study `{name}`: an append of {} events stored {}",
                    kinds.len(),
                    row.get::<_, i64>(2)
                ))
                .into());
            }
            tx.commit().map_err(commit)?;
            Ok(kinds
                .iter()
                .enumerate()
                .map(|(i, kind)| Event {
                    seq: next + i as u64,
                    at_ms,
                    kind: kind.clone(),
                })
                .collect())
        })
    }

    fn schema_version(&self) -> StoreResult<u32> {
        self.call(|c| {
            let v: i32 = c.client.query_one(&c.st.version, &[]).map_err(read)?.get(0);
            Ok(v.max(0) as u32)
        })
    }

    /// LISTEN on a connection of its own, reconnecting after a loss (see the module docs).
    fn subscribe(&self, on_change: ChangeHandler) -> StoreResult<Option<Subscription>> {
        listen::subscribe(&self.url, on_change).map(Some)
    }

    fn put_snapshot(&self, name: &str, snap: &StoredSnapshot) -> StoreResult<()> {
        let name = name.to_string();
        let snap = snap.clone();
        self.call(move |c| {
            let mut tx = c.client.transaction().map_err(read)?;
            if tx
                .query_opt(&c.st.exists, &[&name])
                .map_err(read)?
                .is_none()
            {
                drop(tx);
                return Err(unknown_study(&name, &names(c)?).into());
            }
            tx.execute(
                "INSERT INTO agora_snapshots (study, seq, build, log_hash, checksum, body)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (study, seq) DO UPDATE SET build = EXCLUDED.build,
                   log_hash = EXCLUDED.log_hash, checksum = EXCLUDED.checksum,
                   body = EXCLUDED.body",
                &[
                    &name,
                    &seq_from(snap.seq),
                    &snap.build,
                    &hash_to_db(snap.log_hash),
                    &hash_to_db(snap.checksum),
                    &snap.body,
                ],
            )
            .map_err(read)?;
            tx.execute(
                "DELETE FROM agora_snapshots WHERE study = $1 AND seq NOT IN
                 (SELECT seq FROM agora_snapshots WHERE study = $1 ORDER BY seq DESC LIMIT $2)",
                &[&name, &SNAPSHOTS_KEPT],
            )
            .map_err(read)?;
            tx.commit().map_err(commit)
        })
    }

    fn latest_snapshot(&self, name: &str) -> StoreResult<Option<StoredSnapshot>> {
        let name = name.to_string();
        self.call(move |c| {
            let row = c
                .client
                .query_opt(
                    "SELECT seq, build, log_hash, checksum, body FROM agora_snapshots
                     WHERE study = $1 ORDER BY seq DESC LIMIT 1",
                    &[&name],
                )
                .map_err(read)?;
            Ok(row.map(|r| StoredSnapshot {
                seq: r.get::<_, i64>(0).max(0) as u64,
                build: r.get(1),
                log_hash: hash_from_db(r.get(2)),
                checksum: hash_from_db(r.get(3)),
                body: r.get(4),
            }))
        })
    }
}

fn conflict(study: &str, expected: u64, found: u64) -> Fail {
    Fail::Store(StoreError::Conflict {
        study: study.into(),
        expected,
        found,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{postgres_url, stored};
    use super::super::url::StorageUrl;
    use super::*;
    use ::postgres::{Client, NoTls};

    /// A fresh schema on the test server, dropped when done.
    struct Schema {
        admin: Client,
        name: String,
        url: PostgresUrl,
    }

    impl Schema {
        fn new(name: &str) -> Option<Schema> {
            let base = postgres_url()?;
            let mut admin = Client::connect(&base, NoTls).unwrap();
            let name = format!("unit_{name}_{}", std::process::id());
            admin
                .batch_execute(&format!(
                    "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
                ))
                .unwrap();
            let sep = if base.contains('?') { '&' } else { '?' };
            let url = format!("{base}{sep}options=-c%20search_path%3D{name}");
            let StorageUrl::Postgres(url) = StorageUrl::parse(&url).unwrap() else {
                panic!("AGORA_TEST_POSTGRES is not a PostgreSQL URL");
            };
            Some(Schema { admin, name, url })
        }

        fn count(&mut self, sql: &str) -> i64 {
            let sql = format!("SET search_path TO {}; {sql}", self.name);
            let mut out = 0;
            for m in self.admin.simple_query(&sql).unwrap() {
                if let ::postgres::SimpleQueryMessage::Row(r) = m {
                    out = r.get(0).unwrap().parse().unwrap();
                }
            }
            out
        }
    }

    impl Drop for Schema {
        fn drop(&mut self) {
            let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name);
            let _ = self.admin.batch_execute(&sql);
        }
    }

    /// A later migration runs on a database at an earlier version, once, keeping its data;
    /// processes that open a new database together migrate it once.
    #[test]
    fn an_older_database_is_migrated_forward_once() {
        static NEXT: [&str; 4] = [
            MIGRATIONS[0],
            MIGRATIONS[1],
            MIGRATIONS[2],
            "CREATE TABLE agora_later (x INTEGER); INSERT INTO agora_later VALUES (7);",
        ];
        let Some(mut db) = Schema::new("migrate") else {
            return;
        };
        std::thread::scope(|sc| {
            for _ in 0..4 {
                let url = db.url.clone();
                sc.spawn(move || PostgresStore::open(&url, true).unwrap());
            }
        });
        assert_eq!(
            db.count("SELECT COUNT(*) FROM agora_schema"),
            i64::from(SCHEMA_VERSION)
        );
        let s = PostgresStore::open(&db.url, false).unwrap();
        s.create(&stored("a")).unwrap();
        drop(s);
        for _ in 0..2 {
            let s = PostgresStore::open_with(&db.url, false, &NEXT).unwrap();
            assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION + 1);
            assert_eq!(s.list().unwrap(), ["a"]);
            assert_eq!(db.count("SELECT COUNT(*) FROM agora_later"), 1);
        }
        let e = PostgresStore::open(&db.url, false).unwrap_err();
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
