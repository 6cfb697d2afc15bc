//! agora-server: the HTTP API over the study operations, and the embedded web page where a
//! facilitator runs a meeting and participants answer from their phones.
//!
//! Every operation is the one the CLI runs ([`agora_study::live::LiveStudy`]); the server
//! adds tokens, JSON and live updates. A ballot is acknowledged (HTTP 200) only after its
//! event is committed to the store (a SQLite file or a PostgreSQL database), so a crash
//! loses no acknowledged vote, and a restarted server replays the log to the exact same
//! next query. The ballots that arrive for a study while its previous ones are being
//! stored are stored together, in one transaction (group commit).
//!
//! **Replicas.** On PostgreSQL, several servers may serve the same studies, and a
//! participant may reach any of them. Each server follows the database's change feed
//! ([`AppState::follow`]: LISTEN/NOTIFY), reads what the others append to the studies it
//! holds, and announces it on its own live streams; before every change it catches up
//! with the log, and when another server appended first it catches up and tries again.
//! The log's sequence numbers keep the servers from ever diverging.
//!
//! **Tokens.** Each study has a facilitator token (everything, except writing someone
//! else's private vote) and one token per participant (their own ballots; public
//! information). Tokens travel as `Authorization: Bearer …` or `?token=…` (for links and
//! for the browser's `EventSource`). Creating studies over HTTP needs the server's admin
//! token, and so does the studies index (`GET /api/studies`: every study's state and
//! links). Private ballots are written only with their participant's token and read only
//! with the facilitator's.
//!
//! **Errors** are JSON: `{"error": {"code": …, "message": …}}` with 400 (bad input: the
//! message names the field and the allowed values), 401 (no or unknown token), 403 (token
//! not allowed to do this), 404 (unknown study or route), 409 (the query is no longer
//! open), 413 (body over 64 KiB; a study definition over 16 MiB), 500 (the store failed) and 503 with `Retry-After`
//! (`unavailable`: the database server is unreachable, the next request reconnects;
//! `busy`: other servers kept writing to the study at the same moment): nothing was
//! stored, send the request again.

mod batch;
pub mod bench;
pub mod demo;
mod doc;
mod follow;
pub mod load;

use agora_study::live::{
    Actor, Ballot, BallotRequest, LiveStudy, Outcome, SqliteStore, StorageUrl, Store, StoreError,
    StoredStudy, StudyError, StudySpec, Subscription,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use doc::{
    BallotBody, BestReply, Changed, CloseBody, Created, EnqueueBody, ErrorBody, ErrorCode,
    ErrorDetail, EventsReply, ImportBody, IndexRow, Links, Me, PendingReply, Role, StatusReply,
    StudiesReply,
};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// Largest request body accepted (but a study's definition and a media file).
pub const BODY_LIMIT: usize = 64 * 1024;

/// Largest study definition `POST /api/studies` takes: a candidate set's media files (each
/// at most 1 MiB) travel in it.
pub const SPEC_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// The OpenAPI document served at `/api/openapi.json` (generated from the request and
/// response types), with `servers` naming `host` when given.
pub fn openapi_document(host: Option<&str>) -> serde_json::Value {
    doc::document(host)
}

const INDEX_HTML: &str = include_str!("../web/index.html");
const APP_JS: &str = include_str!("../web/app.js");
const STYLE_CSS: &str = include_str!("../web/style.css");

/// How many times an operation is run again when another process appended first
/// ([`StoreError::Conflict`]) before the request fails with 503 (retry later).
const CONFLICT_RETRIES: u32 = 16;

/// What a study's live stream announces: the log length and the open query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Live {
    /// Events in the log.
    pub seq: u64,
    /// The open query's id, if a query is open.
    pub query: Option<u64>,
}

impl Live {
    fn of(s: &LiveStudy) -> Live {
        Live {
            seq: s.seq(),
            query: s.pending().map(|q| q.id),
        }
    }
}

/// One open study: its definition and tokens, its state, the ballots waiting to be
/// stored together ([`batch`]) and a channel announcing changes.
struct Entry {
    stored: StoredStudy,
    study: Mutex<LiveStudy>,
    ballots: batch::Queue,
    live: watch::Sender<Live>,
}

impl Entry {
    fn new(study: LiveStudy) -> Entry {
        let (live, _) = watch::channel(Live::of(&study));
        Entry {
            stored: study.stored().clone(),
            study: Mutex::new(study),
            ballots: batch::Queue::default(),
            live,
        }
    }

    /// The study, locked (a panic of an earlier holder does not lock it for good).
    fn lock(&self) -> std::sync::MutexGuard<'_, LiveStudy> {
        self.study.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tell the live streams when the log or the open query changed.
    fn announce(&self, s: &LiveStudy) {
        let now = Live::of(s);
        self.live.send_if_modified(|v| {
            let changed = *v != now;
            *v = now;
            changed
        });
    }
}

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    studies: Mutex<HashMap<String, Arc<Entry>>>,
    /// Held while a study is opened (its log replayed).
    opening: Mutex<()>,
    admin_token: Option<String>,
    /// Whether the store's change feed keeps the open studies current ([`AppState::follow`]):
    /// reads then skip the store.
    following: AtomicBool,
    /// The change feed, while followed.
    feed: Mutex<Option<Subscription>>,
    /// The most ballots stored in one transaction (0: all that are waiting).
    batch_limit: std::sync::atomic::AtomicUsize,
    /// Stored studies found to have no time limit: a definition never changes, so the
    /// deadline scan reads each study once, not every ten seconds.
    untimed: Mutex<std::collections::HashSet<String>>,
}

impl Inner {
    /// The open studies.
    fn entries(&self) -> Vec<(String, Arc<Entry>)> {
        let map = self.studies.lock().unwrap_or_else(|p| p.into_inner());
        map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

impl AppState {
    /// State over a store; `admin_token` enables creating studies over HTTP.
    pub fn new(store: Arc<dyn Store>, admin_token: Option<String>) -> AppState {
        AppState {
            inner: Arc::new(Inner {
                store,
                studies: Mutex::new(HashMap::new()),
                opening: Mutex::new(()),
                admin_token,
                following: AtomicBool::new(false),
                feed: Mutex::new(None),
                batch_limit: std::sync::atomic::AtomicUsize::new(0),
                untimed: Mutex::new(std::collections::HashSet::new()),
            }),
        }
    }

    /// State over the SQLite file at `path`.
    pub fn open(path: &std::path::Path, admin_token: Option<String>) -> Result<AppState, ApiError> {
        let store = SqliteStore::open(path).map_err(|e| ApiError::from(StudyError::from(e)))?;
        Ok(AppState::new(Arc::new(store), admin_token))
    }

    /// State over the store `storage` names (created if missing), following its change
    /// feed when it has one ([`AppState::follow`]: PostgreSQL).
    pub fn open_storage(
        storage: &StorageUrl,
        admin_token: Option<String>,
    ) -> Result<AppState, StoreError> {
        let state = AppState::new(storage.open(true)?, admin_token);
        state.follow()?;
        Ok(state)
    }

    /// Follow the store's change feed, when it has one (PostgreSQL's LISTEN/NOTIFY), so
    /// that several servers can share one database: what another server or process
    /// appends to a study this server holds is read (on a thread of its own, a burst of
    /// changes at a time) and announced to this server's live streams, and reads answer
    /// from memory. When the feed loses its connection, reads go to the store again until
    /// it is back and every open study has been read again. Returns whether the store has
    /// a feed (SQLite has none: every request then reads the log first, as the CLI may
    /// write the same file).
    pub fn follow(&self) -> Result<bool, StoreError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let feed = self.inner.store.subscribe(Box::new(move |c| {
            let _ = tx.send(c);
        }))?;
        let Some(feed) = feed else {
            return Ok(false);
        };
        follow::spawn(Arc::downgrade(&self.inner), rx).map_err(|e| StoreError::Unavailable {
            reason: format!("could not start the thread that follows the store: {e}"),
        })?;
        *self.inner.feed.lock().unwrap_or_else(|p| p.into_inner()) = Some(feed);
        self.inner.following.store(true, Ordering::SeqCst);
        Ok(true)
    }

    /// Store at most `limit` ballots of a study in one transaction (0, the default: all
    /// that are waiting; 1: each ballot in a transaction of its own, as without group
    /// commit, for comparison).
    pub fn set_batch_limit(&self, limit: usize) {
        self.inner.batch_limit.store(limit, Ordering::Relaxed);
    }

    /// The store.
    pub fn store(&self) -> Arc<dyn Store> {
        self.inner.store.clone()
    }

    /// The open study `name`, if this server holds it.
    fn cached(&self, name: &str) -> Option<Arc<Entry>> {
        let map = self.inner.studies.lock().unwrap_or_else(|p| p.into_inner());
        map.get(name).cloned()
    }

    /// The study `name`, opened (its log replayed) the first time. Blocks: call it on a
    /// blocking thread, or [`AppState::entry_async`].
    fn entry(&self, name: &str) -> Result<Arc<Entry>, ApiError> {
        if let Some(e) = self.cached(name) {
            return Ok(e);
        }
        // One replay at a time, not one per request that arrives meanwhile (hundreds of
        // phones reconnecting to a fresh replica); without holding the map, so that open
        // studies are served meanwhile.
        let _one = self.inner.opening.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = self.cached(name) {
            return Ok(e);
        }
        let study = LiveStudy::open(self.inner.store.clone(), name)?;
        let mut map = self.inner.studies.lock().unwrap_or_else(|p| p.into_inner());
        Ok(map
            .entry(name.to_string())
            .or_insert_with(|| Arc::new(Entry::new(study)))
            .clone())
    }

    /// [`AppState::entry`] from async code.
    async fn entry_async(&self, name: &str) -> Result<Arc<Entry>, ApiError> {
        if let Some(e) = self.cached(name) {
            return Ok(e);
        }
        let (state, name) = (self.clone(), name.to_string());
        tokio::task::spawn_blocking(move || state.entry(&name))
            .await
            .map_err(|e| ApiError::internal(format!("worker failed: {e}")))?
    }

    /// Run `f` on the study `name` on a blocking thread, announcing a change when the log
    /// or the open query changed.
    async fn with_study<T, F>(&self, name: String, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut LiveStudy) -> Result<T, ApiError> + Send + 'static,
    {
        let state = self.clone();
        tokio::task::spawn_blocking(move || {
            let entry = state.entry(&name)?;
            let mut study = entry.lock();
            let out = f(&mut study);
            entry.announce(&study);
            out
        })
        .await
        .map_err(|e| ApiError::internal(format!("worker failed: {e}")))?
    }

    /// Run a change `op` on the study `name`, again (after catching up) each time another
    /// process appended first, up to [`CONFLICT_RETRIES`] times.
    async fn change<T, F>(&self, name: String, op: F) -> Result<(T, u64, Option<u64>), ApiError>
    where
        T: Send + 'static,
        F: Fn(&mut LiveStudy) -> Result<T, StudyError> + Send + 'static,
    {
        self.with_study(name, move |s| {
            let mut conflicts = 0;
            loop {
                match op(s) {
                    Err(StudyError::Store(StoreError::Conflict { .. }))
                        if conflicts < CONFLICT_RETRIES =>
                    {
                        conflicts += 1;
                    }
                    Err(e) => return Err(ApiError::from_change(e)),
                    Ok(v) => return Ok((v, s.seq(), s.pending().map(|q| q.id))),
                }
            }
        })
        .await
    }

    /// Close every open group vote whose time limit ([`StudySpec::round_seconds`]) has
    /// passed, as the facilitator's **Close round** would (answered `by: "deadline"`), and
    /// return how many were closed. With `scan_store`, first open every stored study that
    /// has a limit and that this server does not hold yet (one made by the CLI, or before
    /// a restart). [`AppState::run_deadlines`] calls it every second. Replicas race
    /// harmlessly: the log keeps one close.
    pub async fn close_expired_rounds(&self, scan_store: bool) -> Result<usize, ApiError> {
        if scan_store {
            let state = self.clone();
            let names = tokio::task::spawn_blocking(move || -> Result<Vec<String>, StoreError> {
                let held: std::collections::HashSet<String> =
                    state.inner.entries().into_iter().map(|(n, _)| n).collect();
                let mut timed = Vec::new();
                for name in state.store().list()? {
                    let untimed = || {
                        let u = state.inner.untimed.lock();
                        u.unwrap_or_else(|p| p.into_inner())
                    };
                    if held.contains(&name) || untimed().contains(&name) {
                        continue;
                    }
                    if state.store().study(&name)?.spec.round_seconds.is_some() {
                        timed.push(name);
                    } else {
                        untimed().insert(name);
                    }
                }
                Ok(timed)
            })
            .await
            .map_err(|e| ApiError::internal(format!("worker failed: {e}")))?
            .map_err(|e| ApiError::from(StudyError::from(e)))?;
            for name in names {
                self.entry_async(&name).await?;
            }
        }
        let now = agora_study::live::store::now_ms();
        // A study's lock may be held by a long model fit: look on a blocking thread.
        let state = self.clone();
        let due = tokio::task::spawn_blocking(move || {
            state
                .inner
                .entries()
                .into_iter()
                .filter(|(_, e)| e.lock().deadline_ms().is_some_and(|d| d <= now))
                .map(|(name, _)| name)
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| ApiError::internal(format!("worker failed: {e}")))?;
        let mut closed = 0;
        for name in due {
            let (outcome, _, _) = self.change(name, move |s| s.close_expired(now)).await?;
            closed += usize::from(outcome.is_some());
        }
        Ok(closed)
    }

    /// Close rounds whose time ran out ([`AppState::close_expired_rounds`]) every second,
    /// looking for new studies with a time limit every ten, until the runtime stops. A
    /// failure (the database unreachable) is printed and retried on the next tick.
    pub async fn run_deadlines(self) {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for n in 0u64.. {
            tick.tick().await;
            if let Err(e) = self.close_expired_rounds(n % 10 == 0).await {
                eprintln!("agora serve: closing rounds whose time ran out: {e}");
            }
        }
    }

    /// Create a study (as the server's owner would) and return its stored record.
    pub fn create_study(
        &self,
        spec: StudySpec,
    ) -> Result<agora_study::live::StoredStudy, ApiError> {
        let study = LiveStudy::create(self.inner.store.clone(), spec)?;
        let stored = study.stored().clone();
        let mut map = self.inner.studies.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(stored.spec.name.clone(), Arc::new(Entry::new(study)));
        Ok(stored)
    }

    /// Cast a ballot as `participant` (used by the demo's simulated agents).
    pub async fn cast(
        &self,
        study: &str,
        participant: &str,
        query_id: u64,
        ballot: Ballot,
    ) -> Result<Outcome, ApiError> {
        let request = BallotRequest {
            actor: Actor::Participant(participant.to_string()),
            query_id,
            participant: participant.to_string(),
            ballot,
        };
        Ok(self.cast_ballot(study, request).await?.outcome)
    }

    /// Run `f` on a study (read-only use), after reading what other processes appended
    /// (unless the change feed keeps it current: [`AppState::follow`]).
    pub async fn inspect<T, F>(&self, study: &str, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&LiveStudy) -> T + Send + 'static,
    {
        let following = self.inner.following.load(Ordering::SeqCst);
        self.with_study(study.to_string(), move |s| {
            if !following {
                s.sync()?;
            }
            Ok(f(s))
        })
        .await
    }

    /// A receiver that changes when the study's log or open query changes.
    pub async fn subscribe(&self, study: &str) -> Result<watch::Receiver<Live>, ApiError> {
        Ok(self.entry_async(study).await?.live.subscribe())
    }
}

/// An API error with its HTTP status and a machine-readable code.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    code: ErrorCode,
    message: String,
    field: Option<String>,
}

impl ApiError {
    fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
        }
    }

    fn internal(message: String) -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            message,
        )
    }

    fn unauthorized() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            ErrorCode::Unauthorized,
            "a token is required: `Authorization: Bearer TOKEN` or `?token=TOKEN` (the \
             facilitator's or a participant's, as printed by `agora study create`)",
        )
    }

    fn bad(field: &str, message: impl Into<String>) -> ApiError {
        let mut e = ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidInput, message);
        e.field = Some(field.to_string());
        e
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The error of a change that failed: a conflict still there after
    /// [`CONFLICT_RETRIES`] retries is 503 (busy: retry later), the rest as
    /// [`From<StudyError>`] says.
    fn from_change(e: StudyError) -> ApiError {
        match e {
            StudyError::Store(StoreError::Conflict { study, .. }) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::Busy,
                format!(
                    "study `{study}` kept changing underneath (other servers or processes \
                     are writing to it at the same time); nothing was stored: retry"
                ),
            ),
            e => ApiError::from(e),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.status, self.code, self.message)
    }
}

impl From<StudyError> for ApiError {
    fn from(e: StudyError) -> ApiError {
        let msg = e.to_string();
        match e {
            StudyError::Input(agora_core::Error::InvalidInput { field, .. })
            | StudyError::Input(agora_core::Error::Dimension { field, .. }) => {
                let mut a = ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidInput, msg);
                a.field = Some(field);
                a
            }
            StudyError::Input(agora_core::Error::UnknownId { kind, .. }) => {
                let mut a = ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidInput, msg);
                a.field = Some(kind);
                a
            }
            StudyError::Input(agora_core::Error::State(_)) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::InvalidState, msg)
            }
            StudyError::Input(_) => ApiError::internal(msg),
            StudyError::NotPending(_) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::NotPending, msg)
            }
            StudyError::Forbidden(_) => {
                ApiError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, msg)
            }
            StudyError::Diverged(_) => ApiError::internal(msg),
            // The message does not list the other studies (the store's does, for the CLI).
            StudyError::Store(StoreError::UnknownStudy(name, _)) => ApiError::new(
                StatusCode::NOT_FOUND,
                ErrorCode::UnknownStudy,
                format!("unknown study `{name}`"),
            ),
            StudyError::Store(StoreError::Exists(_)) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::Exists, msg)
            }
            StudyError::Store(StoreError::Conflict { .. }) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::Conflict, msg)
            }
            StudyError::Store(e) if e.is_retryable() => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::Unavailable, msg)
            }
            StudyError::Store(_) => ApiError::internal(msg),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
                field: self.field,
            },
        };
        let mut r = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        r
    }
}

/// The token of a request: `Authorization: Bearer`, else `?token=`.
fn token_of(headers: &HeaderMap, q: &TokenQuery) -> Option<String> {
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        && let Some(t) = v.strip_prefix("Bearer ")
    {
        return Some(t.trim().to_string());
    }
    q.token.clone()
}

#[derive(Debug, Default)]
struct TokenQuery {
    token: Option<String>,
    format: Option<String>,
}

impl TokenQuery {
    /// `token=` and `format=` from a query string (tokens are hex and formats plain words,
    /// so no percent-decoding is needed; anything else is ignored).
    fn parse(raw: Option<&str>) -> TokenQuery {
        let mut q = TokenQuery::default();
        for pair in raw.unwrap_or("").split('&') {
            match pair.split_once('=') {
                Some(("token", v)) => q.token = Some(v.to_string()),
                Some(("format", v)) => q.format = Some(v.to_string()),
                _ => {}
            }
        }
        q
    }
}

/// The study name, token and options of a request; never rejects with anything but a
/// structured [`ApiError`].
struct Ctx {
    name: String,
    token: Option<String>,
    format: Option<String>,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Ctx {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let Path(name) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad("study", e.body_text()))?;
        let q = TokenQuery::parse(parts.uri.query());
        let token = token_of(&parts.headers, &q);
        Ok(Ctx {
            name,
            token,
            format: q.format,
        })
    }
}

fn body_ok(
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Bytes, ApiError> {
    body.map_err(|e| {
        let status = e.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                status,
                ErrorCode::PayloadTooLarge,
                format!("the request body is over the {BODY_LIMIT}-byte limit"),
            )
        } else {
            ApiError::new(status, ErrorCode::BadBody, e.body_text())
        }
    })
}

/// A body that could not be read whole: 413 with `limit` when it is over its limit, else
/// 400 (the client broke off or sent a malformed stream).
fn read_error(e: &axum::Error, limit: String) -> ApiError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<http_body_util::LengthLimitError>() {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                ErrorCode::PayloadTooLarge,
                limit,
            );
        }
        cause = c.source();
    }
    ApiError::new(
        StatusCode::BAD_REQUEST,
        ErrorCode::BadBody,
        format!("the request body could not be read: {e}"),
    )
}

fn parse_body<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad(
            "body",
            format!("the request body is not valid JSON for this endpoint: {e}"),
        )
    })
}

fn check_name(name: &str) -> Result<(), ApiError> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
    {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::UnknownStudy,
            format!("unknown study `{name}`: names are 1 to 64 characters of a-z, 0-9, '-', '_'"),
        ));
    }
    Ok(())
}

async fn actor(state: &AppState, name: &str, token: Option<String>) -> Result<Actor, ApiError> {
    check_name(name)?;
    let token = token.ok_or_else(ApiError::unauthorized)?;
    let entry = state.entry_async(name).await?;
    entry.stored.actor_for_token(&token).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            ErrorCode::Unauthorized,
            "unknown token for this study",
        )
    })
}

fn me(a: &Actor) -> Me {
    match a {
        Actor::Owner | Actor::Facilitator => Me {
            role: Role::Facilitator,
            participant: None,
        },
        Actor::Participant(p) => Me {
            role: Role::Participant,
            participant: Some(p.clone()),
        },
    }
}

/// Status.
///
/// The study at a glance: the open query, progress by channel, the recommendation, and who
/// you are.
#[utoipa::path(get, path = "/api/studies/{name}", tag = "studies", params(doc::StudyPath),
    responses((status = 200, description = "OK", body = StatusReply), doc::StudyErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn status(State(state): State<AppState>, ctx: Ctx) -> Result<Response, ApiError> {
    let name = ctx.name;
    let a = actor(&state, &name, ctx.token).await?;
    let who = me(&a);
    let (st, seq) = state
        .inspect(&name, move |s| (s.status(&a), s.seq()))
        .await?;
    let now_ms = agora_study::live::store::now_ms();
    Ok(axum::Json(StatusReply {
        you: who,
        seq,
        status: st,
        now_ms,
    })
    .into_response())
}

/// The open query.
///
/// As the caller may see it; `pending` is null when no query is open.
#[utoipa::path(get, path = "/api/studies/{name}/query", tag = "studies", params(doc::StudyPath),
    responses((status = 200, description = "OK", body = PendingReply), doc::StudyErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn pending(State(state): State<AppState>, ctx: Ctx) -> Result<Response, ApiError> {
    let name = ctx.name;
    let a = actor(&state, &name, ctx.token).await?;
    let v = state.inspect(&name, move |s| s.pending_view(&a)).await?;
    Ok(axum::Json(PendingReply { pending: v }).into_response())
}

/// The recommendation.
///
/// With the model's mean and sd where it has them.
#[utoipa::path(get, path = "/api/studies/{name}/best", tag = "studies", params(doc::StudyPath),
    responses((status = 200, description = "OK", body = BestReply), doc::StudyErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn best(State(state): State<AppState>, ctx: Ctx) -> Result<Response, ApiError> {
    let name = ctx.name;
    actor(&state, &name, ctx.token).await?;
    let r = state.inspect(&name, |s| s.recommendation()).await?;
    Ok(axum::Json(BestReply { recommendation: r }).into_response())
}

/// The reply to a change: the outcome, the log length and the open query.
fn changed(outcome: Outcome, seq: u64, open: Option<u64>) -> Response {
    axum::Json(Changed {
        outcome,
        seq,
        open_query: open,
    })
    .into_response()
}

/// A POST that changes the study: parse the body as `B`, run `op` as the token's actor
/// (again when another process appended first), and reply with [`changed`].
async fn mutate<B, F>(
    state: AppState,
    ctx: Ctx,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
    op: F,
) -> Result<Response, ApiError>
where
    B: serde::de::DeserializeOwned + Send + Sync + 'static,
    F: Fn(&mut LiveStudy, &Actor, &B) -> Result<Outcome, StudyError> + Send + 'static,
{
    let body = body_ok(body)?;
    let a = actor(&state, &ctx.name, ctx.token).await?;
    let b: B = parse_body(&body)?;
    let (outcome, seq, open) = state.change(ctx.name, move |s| op(s, &a, &b)).await?;
    Ok(changed(outcome, seq, open))
}

/// Cast a ballot on the open group query.
///
/// A participant votes or rates with their own
/// token; private ballots only so. Recasting the same ballot is idempotent (`duplicate`);
/// the last ballot completing the round answers it (`answered`).
#[utoipa::path(post, path = "/api/studies/{name}/ballot", tag = "studies", params(doc::StudyPath),
    request_body = BallotBody,
    responses((status = 200, description = "OK", body = Changed), doc::StudyErrors, doc::ChangeErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn ballot(
    State(state): State<AppState>,
    ctx: Ctx,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body_ok(body)?;
    let a = actor(&state, &ctx.name, ctx.token).await?;
    let b: BallotBody = parse_body(&body)?;
    let participant = match (b.participant, &a) {
        (Some(p), _) => p,
        (None, Actor::Participant(p)) => p.clone(),
        (None, _) => {
            return Err(ApiError::bad(
                "participant",
                "the facilitator must name the participant whose (public) vote this is",
            ));
        }
    };
    let request = BallotRequest {
        actor: a,
        query_id: b.query_id,
        participant,
        ballot: b.ballot,
    };
    let done = state.cast_ballot(&ctx.name, request).await?;
    Ok(changed(done.outcome, done.seq, done.open))
}

/// The query string of `POST .../media`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct MediaQuery {
    /// The open query's id.
    query_id: u64,
    /// The option's index in the query (0 for the first).
    option: usize,
    /// The token, when not sent as `Authorization: Bearer`.
    #[allow(dead_code)]
    token: Option<String>,
}

/// Show media with an option of the open query.
///
/// For a box-space study: a rendering of the option (an image or a sound, its bytes the
/// body with their `Content-Type`: one of image/png, image/jpeg, image/gif, image/webp,
/// image/svg+xml, audio/mpeg, audio/wav, audio/ogg; at most 1 MiB, and the bytes must be
/// of that type), a description (`text/plain`) or a link (`text/uri-list`, one http(s)
/// URL). By the facilitator's token or the study's renderer token (which may do nothing
/// else). Stored in the study's log: every server shows it; another post for the same
/// option replaces it.
#[utoipa::path(post, path = "/api/studies/{name}/media", tag = "studies",
    params(doc::StudyPath, MediaQuery),
    request_body(content(
        (doc::Binary = "image/png"), (doc::Binary = "image/jpeg"), (doc::Binary = "image/gif"),
        (doc::Binary = "image/webp"), (String = "image/svg+xml"), (doc::Binary = "audio/mpeg"),
        (doc::Binary = "audio/wav"), (doc::Binary = "audio/ogg"), (String = "text/plain"),
        (String = "text/uri-list"))),
    responses((status = 200, description = "OK", body = Changed), doc::StudyErrors,
        doc::ChangeErrors,
        (status = 415, description = "A media type the server does not take", body = ErrorBody)),
    security(("bearer" = []), ("query_token" = [])))]
async fn post_media(
    State(state): State<AppState>,
    ctx: Ctx,
    headers: HeaderMap,
    uri: axum::http::Uri,
    body: axum::body::Body,
) -> Result<Response, ApiError> {
    use agora_study::live::media::{CONTENT_TYPES, MAX_FILE_BYTES, Media};
    check_name(&ctx.name)?;
    let token = ctx.token.ok_or_else(ApiError::unauthorized)?;
    let entry = state.entry_async(&ctx.name).await?;
    let actor = if entry.stored.is_renderer_token(&token) {
        Actor::Facilitator
    } else {
        entry.stored.actor_for_token(&token).ok_or_else(|| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                ErrorCode::Unauthorized,
                "unknown token for this study",
            )
        })?
    };
    let axum::extract::Query(q) =
        axum::extract::Query::<MediaQuery>::try_from_uri(&uri).map_err(|e| {
            ApiError::bad(
                "query_id",
                format!(
                    "query_id and option (whole numbers from 0) are required: {}",
                    e.body_text()
                ),
            )
        })?;
    let ctype = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let textual = ctype == "text/plain" || ctype == "text/uri-list";
    if !textual && !CONTENT_TYPES.contains(&ctype.as_str()) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::UnsupportedMediaType,
            format!(
                "Content-Type {ctype:?} is not taken; allowed: {}, text/plain, text/uri-list",
                CONTENT_TYPES.join(", ")
            ),
        ));
    }
    let bytes = axum::body::to_bytes(body, MAX_FILE_BYTES)
        .await
        .map_err(|e| {
            read_error(
                &e,
                format!("a media file is at most {MAX_FILE_BYTES} bytes"),
            )
        })?;
    let text = || {
        String::from_utf8(bytes.to_vec())
            .map(|t| t.trim().to_string())
            .map_err(|_| ApiError::bad("body", "the text is not UTF-8"))
    };
    let media = match ctype.as_str() {
        "text/plain" => Media::Text { text: text()? },
        "text/uri-list" => Media::Url { url: text()? },
        ct => Media::file(ct, &bytes, "body").map_err(|e| ApiError::from(StudyError::from(e)))?,
    };
    let (outcome, seq, open) = state
        .change(ctx.name, move |s| {
            s.post_media(&actor, q.query_id, q.option, media.clone())
        })
        .await?;
    Ok(changed(outcome, seq, open))
}

/// An option's media file.
///
/// The bytes of the image or sound shown with option `option` of the open query
/// `query_id` (a candidate's file, or a rendering posted for it), with its `Content-Type`.
/// Any token of the study. Texts and links are in the query itself (`options[i].media`).
#[utoipa::path(get, path = "/api/studies/{name}/media/{query_id}/{option}", tag = "studies",
    params(doc::StudyPath,
        ("query_id" = u64, Path, description = "The open query's id"),
        ("option" = usize, Path, description = "The option's index in the query")),
    responses((status = 200, description = "The file", content(
            (doc::Binary = "image/png"), (doc::Binary = "image/jpeg"), (doc::Binary = "image/gif"),
            (doc::Binary = "image/webp"), (String = "image/svg+xml"), (doc::Binary = "audio/mpeg"),
            (doc::Binary = "audio/wav"), (doc::Binary = "audio/ogg"))),
        doc::StudyErrors),
    security(("bearer" = []), ("query_token" = [])))]
async fn get_media(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    Path((name, query_id, option)): Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    let q = TokenQuery::parse(uri.query());
    actor(&state, &name, token_of(&headers, &q)).await?;
    let (query_id, option) = match (query_id.parse::<u64>(), option.parse::<usize>()) {
        (Ok(a), Ok(b)) => (a, b),
        _ => {
            return Err(ApiError::bad(
                "query_id",
                "query_id and option are whole numbers from 0",
            ));
        }
    };
    let file = state
        .inspect(&name, move |s| {
            s.option_media(query_id, option).and_then(|m| match m {
                agora_study::live::media::Media::File { content_type, .. } => {
                    Some((content_type.clone(), m.bytes()?))
                }
                _ => None,
            })
        })
        .await?;
    let Some((ctype, bytes)) = file else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::NoMedia,
            format!(
                "option {option} of query {query_id} has no media file (or the query is not \
                 open); texts and links are in the query's options"
            ),
        ));
    };
    let ctype = HeaderValue::from_str(&ctype)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    Ok((
        [
            (header::CONTENT_TYPE, ctype),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, max-age=3600"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            // An SVG opened on its own runs no script and loads nothing.
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; sandbox"),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// Answer the open query.
///
/// A comparison, a tie, values for an evaluation, or all of a public group's votes at once
/// (facilitator). The same answer again is idempotent.
#[utoipa::path(post, path = "/api/studies/{name}/answer", tag = "studies", params(doc::StudyPath),
    request_body = agora_core::Answer,
    responses((status = 200, description = "OK", body = Changed), doc::StudyErrors, doc::ChangeErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn answer(
    State(state): State<AppState>,
    ctx: Ctx,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    mutate(state, ctx, body, |s, a, ans: &agora_core::Answer| {
        s.tell(a, ans.clone())
    })
    .await
}

/// Close the open group vote.
///
/// Facilitator only. Missing votes count as can't tell.
#[utoipa::path(post, path = "/api/studies/{name}/close", tag = "studies", params(doc::StudyPath),
    request_body = CloseBody,
    responses((status = 200, description = "OK", body = Changed), doc::StudyErrors, doc::ChangeErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn close(
    State(state): State<AppState>,
    ctx: Ctx,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    mutate(state, ctx, body, |s, a, b: &CloseBody| {
        s.close(a, b.query_id)
    })
    .await
}

/// Import earlier data.
///
/// Facilitator only, before the first answer or ballot (as `agora study import`):
/// evaluations for GP-BO studies, comparisons for `pairs` and `group-pairs`. Every row is
/// checked against the space first; a bad one is refused with its row named and nothing is
/// stored. The data stand in for the random start, do not count as answers, and the open
/// question is asked again in their light.
#[utoipa::path(post, path = "/api/studies/{name}/import", tag = "studies", params(doc::StudyPath),
    request_body = ImportBody,
    responses((status = 200, description = "OK", body = Changed), doc::StudyErrors, doc::ChangeErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn import(
    State(state): State<AppState>,
    ctx: Ctx,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    mutate(state, ctx, body, |s, a, b: &ImportBody| {
        if b.rows.is_empty() {
            return Err(agora_core::Error::invalid("rows", "no rows: give at least one").into());
        }
        // Read as `agora study import` reads a JSON-lines file.
        let data = agora_study::live::import::read_objects(&s.spec().space, b.rows.clone())?;
        s.import(a, data).map(|()| Outcome::Recorded)
    })
    .await
}

/// Put an option into the next question.
///
/// Facilitator only (as `agora study enqueue`): the option goes into the next question
/// after the open one; GP-BO evaluates it, PBO compares it with its EUBO challenger.
#[utoipa::path(post, path = "/api/studies/{name}/enqueue", tag = "studies", params(doc::StudyPath),
    request_body = EnqueueBody,
    responses((status = 200, description = "OK", body = Changed), doc::StudyErrors, doc::ChangeErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn enqueue(
    State(state): State<AppState>,
    ctx: Ctx,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    mutate(state, ctx, body, |s, a, b: &EnqueueBody| {
        let json = serde_json::Value::Object(b.option.clone()).to_string();
        let x = agora_study::live::import::read_option(&s.spec().space, &json)?;
        s.enqueue(a, x).map(|()| Outcome::Recorded)
    })
    .await
}

/// The event log.
///
/// JSON, or CSV with `format=csv`. Participants do not see others' private ballots.
#[utoipa::path(get, path = "/api/studies/{name}/events", tag = "studies",
    params(doc::StudyPath, doc::EventsQuery),
    responses((status = 200, description = "The log", content(
        (EventsReply = "application/json"),
        (String = "text/csv"))), doc::StudyErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn events(State(state): State<AppState>, ctx: Ctx) -> Result<Response, ApiError> {
    let name = ctx.name;
    let a = actor(&state, &name, ctx.token).await?;
    match ctx.format.as_deref() {
        None | Some("json") => {
            let ev = state.with_study(name, move |s| Ok(s.events(&a)?)).await?;
            let events = ev
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()
                .map_err(|e| ApiError::internal(e.to_string()))?;
            Ok(axum::Json(EventsReply { events }).into_response())
        }
        Some("csv") => {
            let csv = state
                .with_study(name, move |s| Ok(s.export_csv(&a)?))
                .await?;
            Ok(([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], csv).into_response())
        }
        Some(f) => Err(ApiError::bad(
            "format",
            format!("unknown format {f:?}; allowed: json, csv"),
        )),
    }
}

/// What the model believes.
///
/// The posterior mean and sd at the open query's options and at
/// the recommendation, and over the figure's grid (1-D, 2-D, or a 2-D slice through the
/// recommendation). With the facilitator's token, group models add each person's
/// estimated utility (`people`; it reflects private ballots).
#[utoipa::path(get, path = "/api/studies/{name}/belief", tag = "studies", params(doc::StudyPath),
    responses((status = 200, description = "OK", body = agora_study::live::plot::BeliefView), doc::StudyErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn belief(State(state): State<AppState>, ctx: Ctx) -> Result<Response, ApiError> {
    let name = ctx.name;
    let a = actor(&state, &name, ctx.token).await?;
    let people = !matches!(a, Actor::Participant(_));
    let view = state
        .with_study(name, move |s| {
            s.sync()?;
            Ok(agora_study::live::plot::belief_view(s, people)?)
        })
        .await?;
    Ok(axum::Json(view).into_response())
}

/// Plot.
///
/// Progress and the model's current belief (1-D and 2-D spaces), as SVG.
#[utoipa::path(get, path = "/api/studies/{name}/plot.svg", tag = "studies", params(doc::StudyPath),
    responses((status = 200, description = "The figure", content_type = "image/svg+xml", body = String),
        doc::StudyErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn plot(State(state): State<AppState>, ctx: Ctx) -> Result<Response, ApiError> {
    let name = ctx.name;
    actor(&state, &name, ctx.token).await?;
    let svg = state
        .with_study(name, |s| {
            s.sync()?;
            Ok(agora_study::live::plot::plot_svg(s)?)
        })
        .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        svg,
    )
        .into_response())
}

/// Live updates.
///
/// Server-sent events: an event `changed` with the log length whenever
/// the study changes, and an event `query` with the open query's id (`none` when no query
/// is open) whenever the open query changes; both at once first. Changes that other
/// servers on the same database store are announced too.
#[utoipa::path(get, path = "/api/studies/{name}/stream", tag = "studies", params(doc::StudyPath),
    responses((status = 200, description = "The event stream", content_type = "text/event-stream", body = String),
        doc::StudyErrors), security(("bearer" = []), ("query_token" = [])),)]
async fn stream(State(state): State<AppState>, ctx: Ctx) -> Result<Response, ApiError> {
    let name = ctx.name;
    actor(&state, &name, ctx.token).await?;
    let rx = state.subscribe(&name).await?;
    // `changed` on every change; `query` when the open query changed (both at once first).
    let s =
        futures_util::stream::unfold((rx, None), |(mut rx, last): (_, Option<Live>)| async move {
            if last.is_some() && rx.changed().await.is_err() {
                return None;
            }
            let now = *rx.borrow_and_update();
            let mut events = vec![
                SseEvent::default()
                    .event("changed")
                    .data(now.seq.to_string()),
            ];
            if last.map(|l| l.query) != Some(now.query) {
                let q = now
                    .query
                    .map_or_else(|| "none".to_string(), |q| q.to_string());
                events.push(SseEvent::default().event("query").data(q));
            }
            let events = events.into_iter().map(Ok::<_, std::convert::Infallible>);
            Some((futures_util::stream::iter(events), (rx, Some(now))))
        })
        .flatten();
    Ok(Sse::new(s).keep_alive(KeepAlive::default()).into_response())
}

/// Refuse (401) a request without the server's admin token; `what` names the operation.
fn admin_only(
    state: &AppState,
    headers: &HeaderMap,
    uri: &axum::http::Uri,
    what: &str,
) -> Result<(), ApiError> {
    let q = TokenQuery::parse(uri.query());
    let ok = match (&state.inner.admin_token, token_of(headers, &q)) {
        (Some(admin), Some(t)) => admin.len() == t.len() && admin.as_bytes() == t.as_bytes(),
        _ => false,
    };
    if ok {
        return Ok(());
    }
    let how = if state.inner.admin_token.is_some() {
        "printed by `agora serve`"
    } else {
        "this server has none: start it with `agora serve --admin-token TOKEN`"
    };
    Err(ApiError::new(
        StatusCode::UNAUTHORIZED,
        ErrorCode::Unauthorized,
        format!("{what} needs the server's admin token ({how})"),
    ))
}

/// The page's link for `token` on `study` (relative to the server).
fn page_link(study: &str, token: &str) -> String {
    format!("/?study={study}&token={token}")
}

/// List the studies.
///
/// Every study on the server with its state and its page links (which
/// carry the study's tokens). Needs the server's admin token.
#[utoipa::path(get, path = "/api/studies", tag = "admin",
    responses((status = 200, description = "OK", body = StudiesReply),
        (status = 401, description = "No token, or not the server's admin token", body = ErrorBody),
        (status = 503, description = "The database cannot be reached; retry", body = ErrorBody)),
    security(("bearer" = []), ("query_token" = [])),)]
async fn index(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Result<Response, ApiError> {
    admin_only(&state, &headers, &uri, "the studies index")?;
    let store = state.store();
    let rows = tokio::task::spawn_blocking(move || {
        let mut rows = Vec::new();
        for name in store.list()? {
            let stored = store.study(&name)?;
            let summary = agora_study::live::summarize_stored(store.as_ref(), &stored)?;
            let participants = stored
                .spec
                .participants
                .iter()
                .zip(&stored.participant_tokens)
                .map(|(p, t)| (p.clone(), page_link(&name, t)))
                .collect();
            rows.push(IndexRow {
                renderer_token: stored.renderer_token(),
                state: summary.state(),
                summary,
                links: Links {
                    facilitator: page_link(&name, &stored.facilitator_token),
                    participants,
                },
            });
        }
        Ok::<_, StoreError>(rows)
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
    .map_err(|e| ApiError::from(StudyError::from(e)))?;
    Ok(axum::Json(StudiesReply { studies: rows }).into_response())
}

/// Create a study.
///
/// Needs the server's admin token (printed by `agora serve`). Returns the
/// facilitator's and each participant's token.
#[utoipa::path(post, path = "/api/studies", tag = "admin", request_body = StudySpec,
    responses((status = 201, description = "Created", body = Created),
        (status = 400, description = "Bad input: `error.field` names the field and the message the allowed values", body = ErrorBody),
        (status = 401, description = "No token, or not the server's admin token", body = ErrorBody),
        (status = 409, description = "A study of that name exists", body = ErrorBody),
        (status = 413, description = "Body over 16 MiB", body = ErrorBody),
        (status = 503, description = "The database cannot be reached; retry", body = ErrorBody)),
    security(("bearer" = [])))]
async fn create(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    body: axum::body::Body,
) -> Result<Response, ApiError> {
    // The admin's token first: only then is a large body read.
    admin_only(&state, &headers, &uri, "creating a study")?;
    let body = axum::body::to_bytes(body, SPEC_BODY_LIMIT)
        .await
        .map_err(|e| {
            read_error(
                &e,
                format!("a study's definition is at most {SPEC_BODY_LIMIT} bytes"),
            )
        })?;
    let spec: StudySpec = parse_body(&body)?;
    let st = state.clone();
    let stored = tokio::task::spawn_blocking(move || st.create_study(spec))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))??;
    let participant_tokens = stored
        .spec
        .participants
        .iter()
        .cloned()
        .zip(stored.participant_tokens.iter().cloned())
        .collect();
    Ok((
        StatusCode::CREATED,
        axum::Json(Created {
            renderer_token: stored.renderer_token(),
            study: stored.spec.name,
            facilitator_token: stored.facilitator_token,
            participant_tokens,
        }),
    )
        .into_response())
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ErrorCode::NotFound,
        "no such endpoint; see /api/openapi.json",
    )
}

fn page(body: &'static str, ctype: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(ctype)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

/// This document.
///
/// Its `servers` entry the address the client reached (the request's
/// `Host`), so a generated client calls this server whatever port it listens on.
#[utoipa::path(get, path = "/api/openapi.json", tag = "meta",
    responses((status = 200, description = "The OpenAPI document", body = Object)))]
async fn openapi(headers: HeaderMap) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-.:[]".contains(c))
        });
    (
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))],
        axum::Json(doc::document(host)),
    )
        .into_response()
}

/// Liveness.
///
/// `ok` while the server runs.
#[utoipa::path(get, path = "/healthz", tag = "meta",
    responses((status = 200, description = "ok", content_type = "text/plain", body = String)))]
async fn healthz() -> &'static str {
    "ok"
}

/// The API's routes and their document, from one list: each handler's `#[utoipa::path]`
/// gives both its route and its entry in the document, so neither can lack the other.
fn api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    use utoipa::OpenApi;
    use utoipa_axum::{router::OpenApiRouter, routes};
    OpenApiRouter::with_openapi(doc::ApiDoc::openapi())
        .routes(routes!(healthz))
        .routes(routes!(openapi))
        .routes(routes!(index, create))
        .routes(routes!(status))
        .routes(routes!(pending))
        .routes(routes!(best))
        .routes(routes!(ballot))
        .routes(routes!(answer))
        .routes(routes!(close))
        .routes(routes!(import))
        .routes(routes!(enqueue))
        .routes(routes!(post_media))
        .routes(routes!(get_media))
        .routes(routes!(events))
        .routes(routes!(plot))
        .routes(routes!(belief))
        .routes(routes!(stream))
        .split_for_parts()
}

/// The router: the API under `/api`, the page at `/`.
pub fn router(state: AppState) -> Router {
    api()
        .0
        .route(
            "/",
            get(|| async { page(INDEX_HTML, "text/html; charset=utf-8") }),
        )
        .route(
            "/app.js",
            get(|| async { page(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/style.css",
            get(|| async { page(STYLE_CSS, "text/css; charset=utf-8") }),
        )
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

/// Connections waiting to be accepted before new ones are refused. The usual 128 is too
/// few when hundreds of phones send their ballots the moment a question opens: connects
/// beyond it are dropped and retried by the client a second later.
pub const LISTEN_BACKLOG: u32 = 1024;

/// A listener on `addr` with a backlog of [`LISTEN_BACKLOG`] (the system may cap it:
/// `net.core.somaxconn`).
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serve `router(state)` on `addr` until Ctrl-C, closing rounds whose time ran out
/// ([`AppState::run_deadlines`]).
pub async fn serve(state: AppState, addr: std::net::SocketAddr) -> std::io::Result<()> {
    tokio::spawn(state.clone().run_deadlines());
    let listener = listen(addr)?;
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_database_is_503_with_retry_after() {
        let e = StudyError::Store(StoreError::Unavailable {
            reason: "the PostgreSQL server is unavailable (connection closed)".into(),
        });
        let r = ApiError::from(e).into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
        let r = ApiError::from(StudyError::Store(StoreError::Corrupt("x".into()))).into_response();
        assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[test]
    fn a_conflict_left_after_the_retries_is_503_busy_with_retry_after() {
        let e = StudyError::Store(StoreError::Conflict {
            study: "meet".into(),
            expected: 4,
            found: 6,
        });
        let a = ApiError::from_change(e);
        assert_eq!(a.code, ErrorCode::Busy);
        assert!(a.message.contains("retry"), "{}", a.message);
        let r = a.into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
    }
}
