//! The change feed of a [`PostgresStore`](super::PostgresStore): LISTEN on a connection of
//! its own, on a thread of its own.
//!
//! Every append calls `pg_notify` on [`CHANNEL`] inside its transaction, with the study,
//! the log's new length and the writer's schema as JSON; PostgreSQL delivers it to every
//! listener when (and only if) the transaction commits. Notifications go to every listener
//! of the database, so a listener keeps those of its own schema (several agora stores may
//! share one database, in schemas of their own).
//!
//! Notifications sent while a listener is disconnected are lost. So when the connection
//! breaks the feed reports [`Change::Lost`], reconnects with a growing pause (0.1 s up to
//! 2 s), and once it listens again reports [`Change::Resync`]: the subscriber then reads
//! every study it holds again. A connection that breaks silently is noticed by a probe
//! after 5 s without notifications.

use super::super::url::PostgresUrl;
use super::super::{Change, ChangeHandler, StoreError, StoreResult, Subscription};
use super::session::{config, store_error};
use ::postgres::fallible_iterator::FallibleIterator;
use ::postgres::{Client, Config, NoTls};
use serde::Deserialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// The notification channel of agora's appends.
pub(super) const CHANNEL: &str = "agora_events";

/// How long the feed waits for a notification before checking whether it should stop.
const WAIT: Duration = Duration::from_millis(250);
/// After this long without a notification the connection is probed.
const PROBE_AFTER: Duration = Duration::from_secs(5);
/// Pauses between reconnection attempts.
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(2);

/// A notification's payload, as the append's `pg_notify` writes it.
#[derive(Deserialize)]
struct Payload {
    schema: Option<String>,
    study: String,
    events: i64,
}

/// A connection that listens, and the schema whose notifications it keeps.
struct Listening {
    client: Client,
    schema: Option<String>,
}

/// Connect and LISTEN (before returning, so that whatever the caller reads afterwards
/// is followed), then follow. The client lives on the feed's thread only: the synchronous
/// client runs a runtime of its own, which may not start on a thread of an async runtime.
pub(super) fn subscribe(url: &PostgresUrl, on_change: ChangeHandler) -> StoreResult<Subscription> {
    let config = config(url);
    let secrets = url.secrets();
    let stop = Arc::new(AtomicBool::new(false));
    let feed = Feed {
        config,
        stop: stop.clone(),
        on_change,
    };
    let (started, first) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("agora-postgres-listen".into())
        .spawn(move || match listen(&feed.config) {
            Ok(l) => {
                let _ = started.send(Ok(()));
                feed.run(l);
            }
            Err(e) => {
                let _ = started.send(Err(store_error(&e, &secrets)));
            }
        })
        .map_err(|e| StoreError::Unavailable {
            reason: format!("could not start the PostgreSQL listening thread: {e}"),
        })?;
    first.recv().map_err(|_| StoreError::Unavailable {
        reason: "the PostgreSQL listening thread stopped".into(),
    })??;
    Ok(Subscription::new(stop))
}

fn listen(config: &Config) -> Result<Listening, ::postgres::Error> {
    let mut client = config.connect(NoTls)?;
    client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
    let schema = client.query_one("SELECT current_schema()", &[])?.get(0);
    Ok(Listening { client, schema })
}

struct Feed {
    config: Config,
    stop: Arc<AtomicBool>,
    on_change: ChangeHandler,
}

impl Feed {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn run(mut self, first: Listening) {
        let mut conn = Some(first);
        let mut backoff = BACKOFF_FIRST;
        while !self.stopped() {
            match conn.as_mut() {
                Some(l) => {
                    if !self.follow(l) {
                        conn = None;
                        (self.on_change)(Change::Lost);
                    }
                }
                None => {
                    self.pause(backoff);
                    if self.stopped() {
                        break;
                    }
                    match listen(&self.config) {
                        Ok(l) => {
                            conn = Some(l);
                            backoff = BACKOFF_FIRST;
                            (self.on_change)(Change::Resync);
                        }
                        Err(_) => backoff = (backoff * 2).min(BACKOFF_MAX),
                    }
                }
            }
        }
    }

    /// Pass on notifications until `stop` is raised (true) or the connection is lost
    /// (false).
    fn follow(&mut self, l: &mut Listening) -> bool {
        let mut quiet_since = Instant::now();
        while !self.stopped() {
            let mut notes = l.client.notifications();
            let mut it = notes.timeout_iter(WAIT);
            loop {
                match it.next() {
                    Ok(Some(n)) => {
                        quiet_since = Instant::now();
                        if n.channel() != CHANNEL {
                            continue;
                        }
                        let Ok(p) = serde_json::from_str::<Payload>(n.payload()) else {
                            continue;
                        };
                        if p.schema == l.schema {
                            (self.on_change)(Change::Appended {
                                study: p.study,
                                events: p.events.max(0) as u64,
                            });
                        }
                        if self.stopped() {
                            return true;
                        }
                    }
                    Ok(None) => break,
                    Err(_) => return false,
                }
            }
            drop(it);
            drop(notes);
            if l.client.is_closed() {
                return false;
            }
            if quiet_since.elapsed() >= PROBE_AFTER {
                if l.client.is_valid(PROBE_AFTER).is_err() {
                    return false;
                }
                quiet_since = Instant::now();
            }
        }
        true
    }

    /// Sleep `d`, waking early when `stop` is raised.
    fn pause(&self, d: Duration) {
        let until = Instant::now() + d;
        while !self.stopped() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20).min(until - Instant::now()));
        }
    }
}
