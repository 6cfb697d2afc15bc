//! A study being run with people: its strategy, rebuilt from the log, and the operations
//! the CLI and the server share (ask, ballot, tell, close, status, best, export).
//!
//! **Exact resume.** The strategy is a deterministic function of (spec, answers). Opening a
//! study replays its log into a fresh strategy: every stored query is asked again and must
//! come out bit for bit the same (a mismatch is an error naming the event, so a study is
//! never silently continued by a different agora), and every stored answer is told again.
//! The next proposal after a restart is therefore the one an uninterrupted process makes.
//!
//! **Durability.** A ballot or answer is acknowledged only after its event is committed.
//! When a ballot completes a group query, the ballot and the assembled answer are committed
//! together; the next query is computed afterwards and stored as its own event (a crash in
//! between is repaired on open by asking again, which gives the same query).
//!
//! **Workers.** Several processes may evaluate one `bo` study at once ([`LiveStudy::ask_worker`]):
//! each worker holds at most one open query. A worker that asks gets the query it holds,
//! else the open query nobody holds (the one asked after the last answer), else a new one
//! the strategy asks with the others pending ([`Strategy::ask_parallel`]); the handing-out
//! is stored as an `Asked` event naming the worker, so a replay hands out the same queries
//! in the same order. Two workers asking at once race for the same sequence number: the
//! loser replays the log (its strategy asked a query the log does not hold) and asks again,
//! so a point is never handed out twice. An answer names its query by id
//! ([`LiveStudy::tell`] takes the answer of any open query); when nothing is left open the
//! next query is asked for nobody, as without workers, and goes to the next worker who
//! asks. A study without workers never sees any of this.

use super::media::{Media, MediaView};
use super::spec::StudySpec;
use super::store::{
    Ballot, Event, EventKind, Store, StoreError, StoredSnapshot, StoredStudy, new_token, now_ms,
};
use agora_core::snapshot::{FNV_OFFSET, fnv1a, fnv1a_extend};
use agora_core::{
    Answer, AnswerKind, Channel, Error, Observation, Param, ParamValue, Point, Query, QueryKind,
    Space,
};
use agora_methods::Strategy;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Errors of live-study operations.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// Bad input (field named, allowed values said) or a state the operation does not fit.
    #[error(transparent)]
    Input(#[from] Error),
    /// The store failed or refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The answer is for a query that is not open.
    #[error("{0}")]
    NotPending(String),
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// Replaying the log did not reproduce it.
    #[error("{0}")]
    Diverged(String),
}

/// Result of live-study operations.
pub type StudyResult<T> = std::result::Result<T, StudyError>;

/// Who is acting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// Whoever holds the study file (the CLI): full access.
    Owner,
    /// The facilitator (by token): full access except writing another person's private vote.
    Facilitator,
    /// A participant (by token): their own ballots, and public information.
    Participant(String),
}

impl Actor {
    fn sees_private(&self) -> bool {
        matches!(self, Actor::Owner | Actor::Facilitator)
    }
}

/// One participant's ballot, as [`LiveStudy::ballots`] takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct BallotRequest {
    /// Who sends it.
    pub actor: Actor,
    /// The query voted on.
    pub query_id: u64,
    /// Whose ballot it is.
    pub participant: String,
    /// The vote or rating.
    pub ballot: Ballot,
}

/// What a submission did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Stored; the query is still waiting for other ballots.
    Recorded,
    /// The same ballot or answer was stored before; nothing changed.
    Duplicate,
    /// Stored, and the query is answered; the strategy has moved on.
    Answered,
}

/// One option of a query, in the people's units.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OptionView {
    /// The option as the strategy proposed it.
    pub point: Point,
    /// Its label (candidate name, or `A`, `B`, ...).
    pub label: String,
    /// Parameter names and values in user units.
    pub params: Vec<(String, ParamValue)>,
    /// How it looks: a description, a link, or an image or sound file (left out when it
    /// has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media: Option<MediaView>,
}

/// The open query, as a person sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PendingView {
    /// The query id to answer.
    pub query_id: u64,
    /// `compare`, `evaluate`, `group_vote`, `group_rate`.
    #[cfg_attr(feature = "openapi", schema(schema_with = super::schema::query_kind))]
    pub kind: &'static str,
    /// For group queries: `public` or `private`.
    pub channel: Option<Channel>,
    /// For comparisons by an expert: the property compared; for others, the rater named.
    pub rater: Option<String>,
    /// The options shown.
    pub options: Vec<OptionView>,
    /// Who is asked (group queries: participants in ballot order).
    pub asked: Vec<String>,
    /// Who has cast a ballot so far.
    pub voted: Vec<String>,
    /// The ballots the viewer may see (all for the facilitator; public ones and their own
    /// for a participant).
    pub ballots: BTreeMap<String, Ballot>,
    /// One-line instruction for a person.
    pub prompt: String,
    /// The worker holding the query (left out of the JSON for the query nobody holds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// When a group vote with a time limit (the spec's `round_seconds`) closes itself
    /// (ms since the epoch; left out without a limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<i64>,
}

/// An open query held by a worker.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HeldQuery {
    /// The worker.
    pub worker: String,
    /// The query it evaluates.
    pub query_id: u64,
}

/// The recommendation so far.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Recommendation {
    /// The option.
    pub option: OptionView,
    /// The strategy's value for it (best observed value, posterior utility, or welfare).
    pub value: f64,
    /// What `value` means for this method.
    pub value_meaning: &'static str,
    /// Posterior mean and standard deviation of the model at the option, where the model
    /// predicts at arbitrary points.
    pub belief: Option<(f64, f64)>,
}

/// A study's state at a glance.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Status {
    /// Study name.
    pub study: String,
    /// What it optimizes.
    pub description: String,
    /// The method (spec name) and the strategy's own name.
    pub method: String,
    /// Participants.
    pub participants: Vec<String>,
    /// Queries answered.
    pub answered: usize,
    /// The queries held by workers (empty, and left out of the JSON, without workers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<HeldQuery>,
    /// Group queries answered on each channel (public, private).
    pub public_rounds: usize,
    /// Private rounds answered.
    pub private_rounds: usize,
    /// Events in the log.
    pub events: u64,
    /// The open query.
    pub pending: Option<PendingView>,
    /// Why there is no open query, when the strategy failed to ask one.
    pub stalled: Option<String>,
    /// The recommendation so far.
    pub recommendation: Option<Recommendation>,
    /// How much the model trusts each rater, for methods that learn it (`raters =
    /// "learned"`); left out of the JSON otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub raters: Vec<RaterWeight>,
    /// Whether the facilitator may put options of their own into the next question
    /// (`agora study enqueue`, `POST .../enqueue`): a box space and a method that takes them.
    pub takes_options: bool,
}

/// One rater's learned reliability: the noise scale the method fits to their answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RaterWeight {
    /// The rater.
    pub rater: String,
    /// Their noise scale, in multiples of the model's noise.
    pub noise: f64,
    /// Their weight in the model (1/noise²) relative to the most trusted rater's: 1 for
    /// the most trusted, near 0 for one who answers at random.
    pub weight: f64,
}

/// A study with its strategy in memory.
pub struct LiveStudy {
    store: Arc<dyn Store>,
    stored: StoredStudy,
    strategy: Box<dyn Strategy>,
    /// Events applied so far (= next sequence number).
    next_seq: u64,
    /// The open query nobody holds (the study's open query without workers).
    pending: Option<Query>,
    /// When `pending` was asked (its event's time, ms since the epoch): the start of its
    /// round's time limit.
    pending_asked_ms: i64,
    /// The group votes closed by their time limit (answered `by: "deadline"`).
    expired: BTreeSet<u64>,
    /// The open queries held by workers: query id → (worker, query).
    held: BTreeMap<u64, (String, Query)>,
    /// A query the strategy asked that the log does not hold yet (its append failed or is
    /// under way), and whether it was a parallel ask. A plain ask is the query the log's
    /// next plain `Asked` event must hold; anything else, or a parallel ask, makes the
    /// next [`LiveStudy::sync`] replay the log from the start.
    unlogged: Option<(Query, bool)>,
    /// Ballots on the pending query, by participant position.
    ballots: BTreeMap<usize, Ballot>,
    /// Media posted for the options of open queries: (query id, option) → media.
    media: BTreeMap<(u64, usize), Media>,
    /// Every ballot ever cast, by (query id, participant position): for idempotent retries.
    history: BTreeMap<(u64, usize), Ballot>,
    /// Every answer, by query id.
    answers: BTreeMap<u64, Answer>,
    /// Channel of every answered group query, in order.
    channels: Vec<Channel>,
    /// Why the strategy could not ask its next query, when it could not (the study stays
    /// readable: status, export and plot work; the next answer-changing call retries).
    stalled: Option<String>,
    /// The recommendation computed at a log length (it only changes with the answers).
    recommendation: std::sync::Mutex<Option<(u64, Option<Recommendation>)>>,
    /// FNV-1a over the applied events' bodies (one newline after each): which log a
    /// snapshot belongs to.
    log_hash: u64,
    /// While applying the events a restored snapshot covers: bookkeeping only, the
    /// strategy already holds their effect.
    restoring: bool,
    /// Answers applied when the last snapshot was written or restored.
    snapshot_answers: usize,
    /// What happened to snapshots on opening or writing, when it was not the plain case
    /// (a snapshot refused and the log replayed, or one that could not be written).
    snapshot_note: Option<String>,
    /// The events the snapshot this study was opened from covers, if it was.
    restored_seq: Option<u64>,
}

/// The numbers behind a [`Recommendation`], as a snapshot keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
struct Recommended {
    point: Point,
    #[serde(with = "agora_core::snapshot::nonfinite")]
    value: f64,
    has_belief: bool,
    #[serde(with = "agora_core::snapshot::nonfinite")]
    belief_mean: f64,
    #[serde(with = "agora_core::snapshot::nonfinite")]
    belief_sd: f64,
}

/// What a stored snapshot's body holds: the strategy's state, and the recommendation at
/// that point (with its belief: for Social BO a Laplace approximation, the costliest part
/// of a status).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
struct SnapshotBody {
    strategy: serde_json::Value,
    answered: usize,
    recommended: Option<Recommended>,
}

/// The agora build that writes and reads snapshots: a hash of the workspace's sources,
/// manifests, lock file and compiler version (`crates/agora-study/build.rs`).
const BUILD_ID: &str = env!("AGORA_BUILD_ID");

/// Who closed a group vote whose time limit passed (the `by` of its answer).
pub const DEADLINE: &str = "deadline";

/// A snapshot is written once this many answers were applied since the last one (when the
/// next query has been stored, so that it holds the open query and opening asks nothing).
pub const SNAPSHOT_EVERY_ANSWERS: usize = 1;

/// The log hash after one more event.
fn extend_log_hash(h: u64, kind: &EventKind) -> u64 {
    let body = serde_json::to_vec(kind).unwrap_or_default();
    fnv1a_extend(fnv1a_extend(h, &body), b"\n")
}

impl std::fmt::Debug for LiveStudy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveStudy")
            .field("study", &self.stored.spec.name)
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

impl LiveStudy {
    /// Create and store a study; its first query is computed and stored.
    pub fn create(store: Arc<dyn Store>, spec: StudySpec) -> StudyResult<LiveStudy> {
        spec.validate()?;
        let stored = StoredStudy {
            participant_tokens: spec.participants.iter().map(|_| new_token()).collect(),
            facilitator_token: new_token(),
            created_ms: now_ms(),
            spec,
        };
        if stored.facilitator_token.is_empty()
            || stored.participant_tokens.iter().any(String::is_empty)
        {
            return Err(StudyError::Input(Error::State(
                "the operating system's random generator failed; cannot make tokens".into(),
            )));
        }
        store.create(&stored)?;
        let mut s = LiveStudy::from_stored(store, stored)?;
        s.advance()?;
        Ok(s)
    }

    /// Open a stored study, replaying its log (exact resume). If the strategy cannot ask
    /// its next query (e.g. a numerical failure on extreme answers), the study still opens,
    /// with no open query and the reason in [`LiveStudy::stalled`].
    ///
    /// When the store holds a snapshot of the strategy this build wrote for this log, the
    /// strategy is restored from it and only the events after it are replayed; a snapshot
    /// that does not check out (another build, a damaged body, another log, a state that
    /// disagrees with the log) is not used, the whole log is replayed, and
    /// [`LiveStudy::snapshot_note`] says why.
    pub fn open(store: Arc<dyn Store>, name: &str) -> StudyResult<LiveStudy> {
        let stored = store.study(name)?;
        let mut s = LiveStudy::resume(store, stored)?;
        if let Err(e) = s.advance() {
            s.stalled = Some(e.to_string());
        }
        Ok(s)
    }

    /// The strategy from the latest usable snapshot and the log's tail, or from the whole
    /// log.
    fn resume(store: Arc<dyn Store>, stored: StoredStudy) -> StudyResult<LiveStudy> {
        let mut s = LiveStudy::from_stored(store.clone(), stored.clone())?;
        let reason = match s.restore_snapshot() {
            Ok(false) => {
                s.sync()?;
                return Ok(s);
            }
            // The log's tail must replay onto the restored state; if it does not, the
            // snapshot was wrong: replay the whole log instead.
            Ok(true) => match s.sync() {
                Ok(()) => return Ok(s),
                Err(e) => format!("the log's tail did not replay onto it: {e}"),
            },
            Err(reason) => reason,
        };
        let mut s = LiveStudy::from_stored(store, stored)?;
        s.snapshot_note = Some(format!(
            "the stored snapshot was not used ({reason}); the whole log was replayed"
        ));
        s.sync()?;
        Ok(s)
    }

    /// Restore the latest snapshot and apply the events it covers as bookkeeping; `Ok(false)`
    /// when there is none to use, `Err` (the reason) when one was refused: then `self` is
    /// in an undefined state and must be rebuilt.
    fn restore_snapshot(&mut self) -> Result<bool, String> {
        let name = self.stored.spec.name.clone();
        let Some(snap) = self
            .store
            .latest_snapshot(&name)
            .map_err(|e| format!("reading it failed: {e}"))?
        else {
            return Ok(false);
        };
        if snap.build != BUILD_ID {
            return Err(format!(
                "written by agora build {}, this is {BUILD_ID}",
                snap.build
            ));
        }
        if fnv1a(snap.body.as_bytes()) != snap.checksum {
            return Err("its checksum does not match its body".into());
        }
        let events = self
            .store
            .events(&name, 0)
            .map_err(|e| format!("reading the log failed: {e}"))?;
        if (events.len() as u64) < snap.seq {
            return Err(format!(
                "it covers {} events, the log has {}",
                snap.seq,
                events.len()
            ));
        }
        let body: SnapshotBody =
            serde_json::from_str(&snap.body).map_err(|e| format!("unreadable: {e}"))?;
        self.strategy
            .restore(&body.strategy)
            .map_err(|e| format!("the strategy refused it: {e}"))?;
        self.restoring = true;
        for e in events.into_iter().take(snap.seq as usize) {
            self.apply(e)
                .map_err(|e| format!("the log's events did not apply: {e}"))?;
        }
        self.restoring = false;
        if self.log_hash != snap.log_hash {
            return Err("it belongs to another log (the events' checksum differs)".into());
        }
        if self.strategy.n_answered() != self.answers.len() {
            return Err(format!(
                "it holds {} answers, the log {}",
                self.strategy.n_answered(),
                self.answers.len()
            ));
        }
        if let Some(q) = self.pending.clone() {
            let asked = self
                .strategy
                .ask()
                .map_err(|e| format!("asking after restoring failed: {e}"))?;
            if asked != q {
                return Err(format!(
                    "its open query differs from the log's (query {})",
                    q.id
                ));
            }
        }
        if !self.held.is_empty() {
            return Err("queries held by workers are not restored from snapshots".into());
        }
        if body.answered != self.answers.len() {
            return Err(format!(
                "its recommendation is for {} answers, the log has {}",
                body.answered,
                self.answers.len()
            ));
        }
        let rec = body.recommended.and_then(|r| self.recommendation_of(r));
        *self
            .recommendation
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some((body.answered as u64, rec));
        self.snapshot_answers = self.answers.len();
        self.restored_seq = Some(snap.seq);
        Ok(true)
    }

    /// When this study was opened from a snapshot: the number of events it covered (the
    /// rest of the log was replayed).
    pub fn restored_from(&self) -> Option<u64> {
        self.restored_seq
    }

    /// What happened to snapshots when this study was opened or last wrote one, when it
    /// was not the plain case: a snapshot refused (and why; the whole log was replayed), or
    /// one that could not be written.
    pub fn snapshot_note(&self) -> Option<&str> {
        self.snapshot_note.as_deref()
    }

    /// After a query was stored: write a snapshot if [`SNAPSHOT_EVERY_ANSWERS`] answers
    /// came since the last one and the strategy keeps snapshots. A snapshot that cannot be
    /// taken, verified or stored is skipped with a note; the study goes on.
    fn write_snapshot(&mut self) {
        if self.answers.is_empty()
            || self.answers.len() < self.snapshot_answers + SNAPSHOT_EVERY_ANSWERS
            || !self.held.is_empty()
        {
            return;
        }
        match self.take_snapshot() {
            Ok(true) => {
                self.snapshot_answers = self.answers.len();
                self.snapshot_note = None;
            }
            Ok(false) => {}
            Err(e) => self.snapshot_note = Some(format!("no snapshot written: {e}")),
        }
    }

    /// Take, verify (restored into a freshly built strategy, it gives the same snapshot)
    /// and store a snapshot; `Ok(false)` for a method that keeps none.
    fn take_snapshot(&self) -> Result<bool, String> {
        let Some(state) = self.strategy.snapshot().map_err(|e| e.to_string())? else {
            return Ok(false);
        };
        let text = serde_json::to_string(&state).map_err(|e| e.to_string())?;
        let mut fresh = self.stored.spec.build().map_err(|e| e.to_string())?;
        fresh
            .restore(&state)
            .map_err(|e| format!("it does not restore: {e}"))?;
        let again = fresh
            .snapshot()
            .map_err(|e| e.to_string())?
            .map(|v| serde_json::to_string(&v).unwrap_or_default());
        if again.as_deref() != Some(text.as_str()) {
            return Err("restored, it does not give the same snapshot".into());
        }
        let body = serde_json::to_string(&SnapshotBody {
            strategy: state,
            answered: self.answers.len(),
            recommended: self.recommended(),
        })
        .map_err(|e| e.to_string())?;
        let snap = StoredSnapshot {
            seq: self.next_seq,
            build: BUILD_ID.to_string(),
            log_hash: self.log_hash,
            checksum: fnv1a(body.as_bytes()),
            body,
        };
        self.store
            .put_snapshot(&self.stored.spec.name, &snap)
            .map_err(|e| e.to_string())?;
        Ok(true)
    }

    /// Why the strategy could not ask its next query, if it could not.
    pub fn stalled(&self) -> Option<&str> {
        self.stalled.as_deref()
    }

    fn from_stored(store: Arc<dyn Store>, stored: StoredStudy) -> StudyResult<LiveStudy> {
        let strategy = stored.spec.build()?;
        Ok(LiveStudy {
            store,
            stored,
            strategy,
            next_seq: 0,
            pending: None,
            pending_asked_ms: 0,
            expired: BTreeSet::new(),
            held: BTreeMap::new(),
            unlogged: None,
            ballots: BTreeMap::new(),
            media: BTreeMap::new(),
            history: BTreeMap::new(),
            answers: BTreeMap::new(),
            channels: Vec::new(),
            stalled: None,
            recommendation: std::sync::Mutex::new(None),
            log_hash: FNV_OFFSET,
            restoring: false,
            snapshot_answers: 0,
            snapshot_note: None,
            restored_seq: None,
        })
    }

    /// The study's definition.
    pub fn spec(&self) -> &StudySpec {
        &self.stored.spec
    }

    /// The study's stored record (with tokens).
    pub fn stored(&self) -> &StoredStudy {
        &self.stored
    }

    /// The open query nobody holds, if any (without workers: the open query).
    pub fn pending(&self) -> Option<&Query> {
        self.pending.as_ref()
    }

    /// The open queries held by workers, by query id.
    pub fn held(&self) -> impl Iterator<Item = HeldQuery> + '_ {
        self.held.iter().map(|(id, (w, _))| HeldQuery {
            worker: w.clone(),
            query_id: *id,
        })
    }

    /// The open query with id `id`: the one nobody holds, or one a worker holds.
    pub fn open_query(&self, id: u64) -> Option<&Query> {
        match &self.pending {
            Some(q) if q.id == id => Some(q),
            _ => self.held.get(&id).map(|(_, q)| q),
        }
    }

    /// The open query `worker` holds, if any.
    pub fn worker_query(&self, worker: &str) -> Option<&Query> {
        self.held
            .values()
            .find(|(w, _)| w == worker)
            .map(|(_, q)| q)
    }

    /// The strategy (read-only).
    pub fn strategy(&self) -> &dyn Strategy {
        self.strategy.as_ref()
    }

    /// Number of events applied.
    pub fn seq(&self) -> u64 {
        self.next_seq
    }

    /// Which actor a token belongs to.
    pub fn actor_for_token(&self, token: &str) -> Option<Actor> {
        self.stored.actor_for_token(token)
    }

    /// Apply events other processes appended since this one last looked. When this
    /// process's strategy asked a query the log does not hold and the log went on
    /// differently (another worker's query), the log is replayed from the start instead.
    pub fn sync(&mut self) -> StudyResult<()> {
        let events = self.store.events(&self.stored.spec.name, self.next_seq)?;
        if let Some((q, parallel)) = &self.unlogged {
            let agrees = !parallel
                && match events.first() {
                    None => true,
                    Some(Event {
                        kind:
                            EventKind::Asked {
                                query,
                                worker: None,
                            },
                        ..
                    }) => query == q,
                    Some(_) => false,
                };
            if !agrees {
                return self.reload();
            }
            if !events.is_empty() {
                self.unlogged = None;
            }
        }
        for e in events {
            self.apply(e)?;
        }
        Ok(())
    }

    /// Rebuild the strategy from the latest snapshot and the log, or the whole log (exact
    /// resume, as on open).
    fn reload(&mut self) -> StudyResult<()> {
        *self = LiveStudy::resume(self.store.clone(), self.stored.clone())?;
        Ok(())
    }

    /// [`LiveStudy::sync`], then, when no query is open, ask and store the next one: another
    /// process may have stored an answer and not yet its next query (or died in between),
    /// or this one failed to store it. A strategy that cannot ask leaves the study
    /// [`LiveStudy::stalled`] and is not an error here; a store's failure is.
    pub fn catch_up(&mut self) -> StudyResult<()> {
        self.sync()?;
        if self.pending.is_none() {
            match self.advance() {
                Ok(()) | Err(StudyError::Input(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn apply(&mut self, e: Event) -> StudyResult<()> {
        if e.seq != self.next_seq {
            return Err(StudyError::Diverged(format!(
                "event {} found where event {} was expected",
                e.seq, self.next_seq
            )));
        }
        let hash = extend_log_hash(self.log_hash, &e.kind);
        let at_ms = e.at_ms;
        match e.kind {
            EventKind::Asked {
                query,
                worker: Some(worker),
            } => {
                if let Some(p) = self.pending.take_if(|p| p.id == query.id) {
                    if p != query {
                        return Err(StudyError::Diverged(format!(
                            "replaying study `{}` diverged at event {}: it hands query {} to \
                             worker {worker:?}, but the open query differs",
                            self.stored.spec.name, e.seq, query.id
                        )));
                    }
                } else if !self.restoring {
                    let q = self.strategy.ask_parallel()?;
                    if q != query {
                        return Err(self.diverged(e.seq, &query, &q));
                    }
                }
                if let Some((w, _)) = self.held.values().find(|(w, _)| *w == worker) {
                    return Err(StudyError::Diverged(format!(
                        "event {} hands query {} to worker {w:?}, who holds another open query",
                        e.seq, query.id
                    )));
                }
                self.held.insert(query.id, (worker, query));
            }
            EventKind::Asked {
                query,
                worker: None,
            } => {
                if !self.restoring {
                    let q = self.strategy.ask()?;
                    if q != query {
                        return Err(self.diverged(e.seq, &query, &q));
                    }
                }
                self.pending = Some(query);
                self.pending_asked_ms = at_ms;
                self.ballots.clear();
            }
            EventKind::Ballot {
                query_id,
                participant,
                ballot,
            } => {
                let k = self.position(&participant)?;
                if self.pending.as_ref().map(|q| q.id) == Some(query_id) {
                    self.ballots.insert(k, ballot.clone());
                }
                self.history.insert((query_id, k), ballot);
            }
            EventKind::Answered { answer, by } => {
                if by.as_deref() == Some(DEADLINE) {
                    self.expired.insert(answer.query_id);
                }
                let q = match self.pending.take_if(|p| p.id == answer.query_id) {
                    Some(q) => q,
                    None => match self.held.remove(&answer.query_id) {
                        Some((_, q)) => q,
                        None if self.held.is_empty() => self.pending.take().ok_or_else(|| {
                            StudyError::Diverged(format!(
                                "event {} answers with no open query",
                                e.seq
                            ))
                        })?,
                        None => {
                            return Err(StudyError::Diverged(format!(
                                "event {} answers query {}, which is not open",
                                e.seq, answer.query_id
                            )));
                        }
                    },
                };
                if !self.restoring {
                    self.strategy.tell(&answer)?;
                }
                if let QueryKind::GroupVote { channel, .. } | QueryKind::GroupRate { channel, .. } =
                    &q.kind
                {
                    self.channels.push(*channel);
                }
                let done = answer.query_id;
                self.media.retain(|(q, _), _| *q != done);
                self.answers.insert(answer.query_id, answer);
                self.ballots.clear();
            }
            EventKind::Imported { data } => {
                if !self.restoring {
                    self.strategy.import(&data)?;
                }
                self.pending = None;
                self.ballots.clear();
                self.media.clear();
            }
            EventKind::Media {
                query_id,
                option,
                media,
            } => {
                self.media.insert((query_id, option), media);
            }
            EventKind::Enqueued { option } => {
                if !self.restoring {
                    self.strategy.enqueue(&option)?;
                }
            }
        }
        self.next_seq += 1;
        self.log_hash = hash;
        Ok(())
    }

    /// The error of a replay that asked `asked` where the log has `logged` (event `seq`).
    fn diverged(&self, seq: u64, logged: &Query, asked: &Query) -> StudyError {
        StudyError::Diverged(format!(
            "replaying study `{}` diverged at event {}: the log has query {} as {}, \
             but this agora asks {}. The study was made by a different agora version; \
             open it with that version or export it",
            self.stored.spec.name,
            seq,
            logged.id,
            serde_json::to_string(logged).unwrap_or_default(),
            serde_json::to_string(asked).unwrap_or_default()
        ))
    }

    fn position(&self, participant: &str) -> StudyResult<usize> {
        self.stored
            .spec
            .participants
            .iter()
            .position(|p| p == participant)
            .ok_or_else(|| {
                StudyError::Input(Error::unknown(
                    "participant",
                    participant,
                    &self.stored.spec.participants,
                ))
            })
    }

    /// Append events, applying them; on a conflict, catch up and report it.
    fn append(&mut self, kinds: Vec<EventKind>) -> StudyResult<()> {
        match self
            .store
            .append(&self.stored.spec.name, self.next_seq, &kinds)
        {
            Ok(events) => {
                for e in events {
                    self.apply(e)?;
                }
                Ok(())
            }
            Err(e) => {
                self.sync()?;
                Err(e.into())
            }
        }
    }

    /// If nothing is open, ask the strategy and store the query.
    pub fn advance(&mut self) -> StudyResult<()> {
        if self.pending.is_some() || !self.held.is_empty() {
            return Ok(());
        }
        // Ask on the strategy first (deterministic), then store; apply() asks again, which
        // returns the same open query.
        let q = match self.strategy.ask() {
            Ok(q) => {
                self.stalled = None;
                q
            }
            Err(e) => {
                self.stalled = Some(e.to_string());
                return Err(e.into());
            }
        };
        self.unlogged = Some((q.clone(), false));
        let event = EventKind::Asked {
            query: q.clone(),
            worker: None,
        };
        match self.store.append(
            &self.stored.spec.name,
            self.next_seq,
            std::slice::from_ref(&event),
        ) {
            Ok(stored) => {
                self.unlogged = None;
                self.pending = Some(q);
                self.pending_asked_ms = stored.first().map_or_else(now_ms, |e| e.at_ms);
                self.ballots.clear();
                self.next_seq += 1;
                self.log_hash = extend_log_hash(self.log_hash, &event);
                self.write_snapshot();
                Ok(())
            }
            Err(StoreError::Conflict { .. }) => {
                // Another process stored the next event first: the same query (then catching
                // up applies it), or a worker's (then `sync` replays the log).
                self.sync()
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The open query `worker` holds, else (storing an `Asked` event that names the
    /// worker) the open query nobody holds, else a new query the strategy asks with the
    /// open ones pending ([`Strategy::ask_parallel`]). When another process stores an
    /// event first, this one catches up (replaying the log if its strategy had asked) and
    /// asks again, so no query is handed to two workers. Only `bo` studies take workers,
    /// and only methods that keep several open queries take more than one at a time.
    ///
    /// Errors: a worker id that is not 1–64 printable characters, a study of another
    /// method, a method without [`Strategy::ask_parallel`] while a query is out (each names
    /// `worker`), the strategy failing to propose, or the store failing.
    pub fn ask_worker(&mut self, worker: &str) -> StudyResult<Query> {
        check_worker(worker)?;
        if !matches!(self.stored.spec.method, super::spec::MethodSpec::Bo { .. }) {
            return Err(Error::invalid(
                "worker",
                format!(
                    "study `{}` asks its participants ({} method); workers evaluate points of \
                     `bo` studies",
                    self.stored.spec.name,
                    self.stored.spec.method.name()
                ),
            )
            .into());
        }
        let mut conflicts = 0;
        loop {
            self.sync()?;
            if let Some(q) = self.worker_query(worker) {
                return Ok(q.clone());
            }
            let (q, parallel) = match &self.pending {
                Some(q) => (q.clone(), false),
                None => match self.strategy.ask_parallel() {
                    Ok(q) => {
                        self.stalled = None;
                        (q, true)
                    }
                    Err(e) => {
                        if self.held.is_empty() {
                            self.stalled = Some(e.to_string());
                        }
                        return Err(e.into());
                    }
                },
            };
            if parallel {
                self.unlogged = Some((q.clone(), true));
            }
            let event = EventKind::Asked {
                query: q.clone(),
                worker: Some(worker.to_string()),
            };
            match self.store.append(
                &self.stored.spec.name,
                self.next_seq,
                std::slice::from_ref(&event),
            ) {
                Ok(_) => {
                    self.unlogged = None;
                    self.pending.take_if(|p| p.id == q.id);
                    self.held.insert(q.id, (worker.to_string(), q.clone()));
                    self.next_seq += 1;
                    self.log_hash = extend_log_hash(self.log_hash, &event);
                    return Ok(q);
                }
                Err(StoreError::Conflict { .. }) if conflicts < MAX_CONFLICTS => {
                    // Someone else stored first: catch up (the loop's `sync`) and ask again.
                    conflicts += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn closed_message(&self, query_id: u64) -> String {
        let mut open = match &self.pending {
            Some(q) => format!("the open query is {}", q.id),
            None => "no query is open".into(),
        };
        if !self.held.is_empty() {
            let held: Vec<String> = self
                .held
                .iter()
                .map(|(id, (w, _))| format!("{id} ({w})"))
                .collect();
            if self.pending.is_none() {
                open = "no query is open for nobody".into();
            }
            open = format!("{open}; queries held by workers: {}", held.join(", "));
        }
        if self.expired.contains(&query_id) {
            format!("query {query_id} is closed: its time ran out; {open}")
        } else if self.answers.contains_key(&query_id) {
            format!("query {query_id} is closed: it was already answered; {open}")
        } else {
            format!("query {query_id} is not open; {open}")
        }
    }

    /// A participant's ballot on the open group query. A ballot that completes the query
    /// answers it (ballot and answer committed together) and the next query is asked.
    pub fn ballot(
        &mut self,
        actor: &Actor,
        query_id: u64,
        participant: &str,
        ballot: Ballot,
    ) -> StudyResult<Outcome> {
        let request = BallotRequest {
            actor: actor.clone(),
            query_id,
            participant: participant.to_string(),
            ballot,
        };
        self.ballots(std::slice::from_ref(&request))?
            .pop()
            .unwrap_or_else(|| Err(Error::State("the ballot was not processed".into()).into()))
    }

    /// Several ballots stored in one transaction (group commit). Each is checked in order
    /// as [`LiveStudy::ballot`] checks it, against the study with the earlier ones cast;
    /// those accepted are appended together, so each is acknowledged only once all are
    /// committed. A ballot that completes the open query ends the batch: its answer is
    /// stored with it, the next query is asked, and the requests after it are left for
    /// the next call.
    ///
    /// Returns the outcomes of the first `n >= 1` requests (all of them unless one
    /// completed the query); call again with the rest. An `Err` means nothing was stored
    /// and applies to every request passed: the store failed, or another process appended
    /// first ([`StoreError::Conflict`]: this study has caught up, so call again).
    pub fn ballots(
        &mut self,
        requests: &[BallotRequest],
    ) -> StudyResult<Vec<StudyResult<Outcome>>> {
        let outcomes = self.store_ballots(requests)?;
        if self.pending.is_none() {
            // The ballots are stored: acknowledge them even if the next query cannot be
            // stored now (the next call's catch-up asks again).
            let _ = self.advance();
        }
        Ok(outcomes)
    }

    /// [`LiveStudy::ballots`] without asking the next query when a ballot completes the
    /// open one: a server acknowledges the stored ballots first, then calls
    /// [`LiveStudy::catch_up`], which asks it (every operation that changes the study
    /// catches up first, so the question is asked in any case).
    pub fn store_ballots(
        &mut self,
        requests: &[BallotRequest],
    ) -> StudyResult<Vec<StudyResult<Outcome>>> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        self.catch_up()?;
        // A ballot after the round's time limit closes the round first (and is refused:
        // its query is no longer open), as the server's timer would have.
        let now = now_ms();
        if self.deadline_ms().is_some_and(|d| d <= now) {
            self.close_expired(now)?;
        }
        let mut ballots = self.ballots.clone();
        let mut cast: BTreeMap<(u64, usize), Ballot> = BTreeMap::new();
        let mut events = Vec::new();
        let mut outcomes = Vec::with_capacity(requests.len());
        let mut complete = false;
        for r in requests {
            let outcome = match self.check_ballot(r, &cast) {
                Err(e) => Err(e),
                Ok(None) => Ok(Outcome::Duplicate),
                Ok(Some((k, q, agents))) => {
                    let before = ballots.insert(k, r.ballot.clone());
                    let answer = if ballots.len() == agents {
                        match assemble(&q, &ballots, agents) {
                            Ok(a) => Some(a),
                            Err(e) => {
                                match before {
                                    Some(b) => ballots.insert(k, b),
                                    None => ballots.remove(&k),
                                };
                                outcomes.push(Err(e));
                                continue;
                            }
                        }
                    } else {
                        None
                    };
                    cast.insert((r.query_id, k), r.ballot.clone());
                    events.push(EventKind::Ballot {
                        query_id: r.query_id,
                        participant: r.participant.clone(),
                        ballot: r.ballot.clone(),
                    });
                    match answer {
                        Some(answer) => {
                            events.push(EventKind::Answered {
                                answer,
                                by: Some("ballots".into()),
                            });
                            complete = true;
                            Ok(Outcome::Answered)
                        }
                        None => Ok(Outcome::Recorded),
                    }
                }
            };
            outcomes.push(outcome);
            if complete {
                break;
            }
        }
        if !events.is_empty() {
            self.append(events)?;
        }
        Ok(outcomes)
    }

    /// Check one ballot request against the open query, with `cast` the ballots staged
    /// before it in the same batch: `None` when it repeats the participant's last ballot,
    /// else the participant's position, the open query and the number asked.
    fn check_ballot(
        &self,
        r: &BallotRequest,
        cast: &BTreeMap<(u64, usize), Ballot>,
    ) -> StudyResult<Option<(usize, Query, usize)>> {
        let (actor, query_id, participant, ballot) =
            (&r.actor, r.query_id, r.participant.as_str(), &r.ballot);
        let k = self.position(participant)?;
        if let Actor::Participant(me) = actor
            && me != participant
        {
            return Err(StudyError::Forbidden(format!(
                "participant {me:?} cannot vote for {participant:?}"
            )));
        }
        let last = cast
            .get(&(query_id, k))
            .or_else(|| self.history.get(&(query_id, k)));
        if last == Some(ballot) {
            return Ok(None);
        }
        let q = match &self.pending {
            Some(q) if q.id == query_id => q.clone(),
            _ => return Err(StudyError::NotPending(self.closed_message(query_id))),
        };
        let (agents, channel) = match &q.kind {
            QueryKind::GroupVote {
                points,
                channel,
                agents,
            } => {
                match ballot {
                    Ballot::Vote { choice: Some(c) } if *c >= points.len() => {
                        return Err(Error::invalid(
                            "choice",
                            format!(
                                "must be one of the {} options (0..{}) or null for can't tell; got {c}",
                                points.len(),
                                points.len()
                            ),
                        )
                        .into());
                    }
                    Ballot::Vote { .. } => {}
                    Ballot::Rating { .. } => {
                        return Err(Error::invalid(
                            "ballot",
                            "this query is a vote on a pair: send a vote (choice), not a rating",
                        )
                        .into());
                    }
                }
                (agents.len(), *channel)
            }
            QueryKind::GroupRate {
                channel, agents, ..
            } => {
                match ballot {
                    Ballot::Rating { value } => agora_core::check_finite("value", *value)?,
                    Ballot::Vote { .. } => {
                        return Err(Error::invalid(
                            "ballot",
                            "this query asks for a rating of one option: send a value, not a vote",
                        )
                        .into());
                    }
                }
                (agents.len(), *channel)
            }
            _ => {
                return Err(Error::invalid(
                    "ballot",
                    "the open query is not a group query; answer it with `tell`",
                )
                .into());
            }
        };
        if k >= agents {
            return Err(Error::invalid(
                "participant",
                format!("{participant:?} is not asked in this query"),
            )
            .into());
        }
        if channel == Channel::Private && *actor != Actor::Owner {
            match actor {
                Actor::Participant(me) if me == participant => {}
                _ => {
                    return Err(StudyError::Forbidden(format!(
                        "a private vote can be cast only by {participant:?} with their own token"
                    )));
                }
            }
        }
        Ok(Some((k, q, agents)))
    }

    /// Import earlier evaluations or comparisons (unit-cube points; see
    /// [`super::import`] for reading them from a file) before the first answer: stored as
    /// one `imported` event, the strategy learns from them, the open query is withdrawn
    /// and the next one is asked in their light. Errors (a participant acting, answers or
    /// ballots already in the log, a query held by a worker, data the method does not
    /// take) store nothing.
    pub fn import(&mut self, actor: &Actor, data: Vec<Observation>) -> StudyResult<()> {
        self.catch_up()?;
        if matches!(actor, Actor::Participant(_)) {
            return Err(StudyError::Forbidden(
                "only the facilitator can import data".into(),
            ));
        }
        if !self.answers.is_empty() || !self.history.is_empty() || !self.held.is_empty() {
            return Err(StudyError::Input(Error::invalid(
                "import",
                "data can only be imported before the first answer or ballot",
            )));
        }
        if data.is_empty() {
            return Err(StudyError::Input(Error::invalid(
                "import",
                "nothing to import: the file has no rows",
            )));
        }
        // The strategy checks the data and learns from them (a refusal changes nothing),
        // then the event is stored; should storing fail, the strategy is rebuilt from the log.
        self.strategy.import(&data)?;
        self.pending = None;
        self.ballots.clear();
        self.store_applied(EventKind::Imported { data })?;
        self.advance()
    }

    /// Store `event`, which the strategy has already applied; on failure rebuild the
    /// strategy from the log (which then does not hold it) and report the failure.
    fn store_applied(&mut self, event: EventKind) -> StudyResult<()> {
        match self.store.append(
            &self.stored.spec.name,
            self.next_seq,
            std::slice::from_ref(&event),
        ) {
            Ok(_) => {
                self.next_seq += 1;
                self.log_hash = extend_log_hash(self.log_hash, &event);
                Ok(())
            }
            Err(e) => {
                self.reload()?;
                Err(e.into())
            }
        }
    }

    /// Put an option of the facilitator's own (unit-cube coordinates) into the next query
    /// the strategy asks after the open one (stored as an `enqueued` event). Errors (a
    /// participant acting, an option the method does not take) store nothing.
    pub fn enqueue(&mut self, actor: &Actor, option: Vec<f64>) -> StudyResult<()> {
        self.catch_up()?;
        if matches!(actor, Actor::Participant(_)) {
            return Err(StudyError::Forbidden(
                "only the facilitator can enqueue options".into(),
            ));
        }
        self.strategy.enqueue(&option)?;
        self.store_applied(EventKind::Enqueued { option })?;
        self.advance()
    }

    /// Show `media` with option `option` of the open query `query_id` (a box-space study:
    /// a candidate set's media are named when it is created), stored as a `media` event.
    /// The facilitator (or the renderer, whose token the server takes for this alone) may;
    /// participants may not. The same media again is a duplicate; other media replace it.
    pub fn post_media(
        &mut self,
        actor: &Actor,
        query_id: u64,
        option: usize,
        media: Media,
    ) -> StudyResult<Outcome> {
        self.catch_up()?;
        if matches!(actor, Actor::Participant(_)) {
            return Err(StudyError::Forbidden(
                "only the facilitator or the renderer can show media with an option".into(),
            ));
        }
        if matches!(self.stored.spec.space, Space::Candidates { .. }) {
            return Err(Error::State(
                "a candidate-set study's media are named when it is created (its `media`, \
                 e.g. `agora study create --space candidates.csv --media-column COLUMN`)"
                    .into(),
            )
            .into());
        }
        let n = match &self.pending {
            Some(q) if q.id == query_id => self.query_points(q).len(),
            _ => return Err(StudyError::NotPending(self.closed_message(query_id))),
        };
        if option >= n {
            return Err(Error::invalid(
                "option",
                format!(
                    "{option} is out of range: query {query_id} has options 0 to {}",
                    n - 1
                ),
            )
            .into());
        }
        media.validate("media")?;
        if self.media.get(&(query_id, option)) == Some(&media) {
            return Ok(Outcome::Duplicate);
        }
        self.store_applied(EventKind::Media {
            query_id,
            option,
            media: media.clone(),
        })?;
        self.media.insert((query_id, option), media);
        Ok(Outcome::Recorded)
    }

    /// The media of option `option` of the open query `query_id`: a candidate's from the
    /// spec, or the one posted last; `None` when it has none (or the query is not open).
    pub fn option_media(&self, query_id: u64, option: usize) -> Option<&Media> {
        let q = self
            .pending
            .as_ref()
            .filter(|q| q.id == query_id)
            .or_else(|| self.held.get(&query_id).map(|(_, q)| q))?;
        match self.query_points(q).get(option)? {
            Point::Index(k) => self.stored.spec.media.get(*k)?.as_ref(),
            Point::Unit(_) => self.media.get(&(query_id, option)),
        }
    }

    /// The options a query shows, in order.
    fn query_points(&self, q: &Query) -> Vec<Point> {
        match &q.kind {
            QueryKind::Compare { points, .. }
            | QueryKind::Evaluate { points }
            | QueryKind::GroupVote { points, .. } => points.clone(),
            QueryKind::GroupRate { point, .. } => vec![point.clone()],
            _ => Vec::new(),
        }
    }

    /// Close the open group vote with the ballots cast: the missing ones count as "can't
    /// tell". (A rating round cannot be closed early: every rating is needed.)
    pub fn close(&mut self, actor: &Actor, query_id: u64) -> StudyResult<Outcome> {
        self.catch_up()?;
        if matches!(actor, Actor::Participant(_)) {
            return Err(StudyError::Forbidden(
                "only the facilitator can close a round".into(),
            ));
        }
        if self.answers.contains_key(&query_id) {
            return Ok(Outcome::Duplicate);
        }
        let q = match &self.pending {
            Some(q) if q.id == query_id => q.clone(),
            _ => return Err(StudyError::NotPending(self.closed_message(query_id))),
        };
        self.close_round(&q, "facilitator")
    }

    /// When the open group vote's time limit ([`StudySpec::round_seconds`]) has passed at
    /// `now_ms`, close it as [`LiveStudy::close`] would, answered `by: "deadline"` (an
    /// event like any other, so replay stays exact whatever the clock says then). Returns
    /// `None` when nothing was due. Several processes may race to do it: the log keeps one.
    pub fn close_expired(&mut self, now_ms: i64) -> StudyResult<Option<Outcome>> {
        self.catch_up()?;
        match (self.deadline_ms(), self.pending.clone()) {
            (Some(d), Some(q)) if d <= now_ms => match self.close_round(&q, DEADLINE) {
                Ok(o) => Ok(Some(o)),
                // Another process closed it first, or a last vote completed it.
                Err(StudyError::Store(StoreError::Conflict { .. })) => {
                    self.catch_up()?;
                    Ok(None)
                }
                Err(e) => Err(e),
            },
            _ => Ok(None),
        }
    }

    /// When the open group vote closes itself, if it has a time limit.
    pub fn deadline_ms(&self) -> Option<i64> {
        let secs = self.stored.spec.round_seconds?;
        match &self.pending.as_ref()?.kind {
            QueryKind::GroupVote { .. } => {
                Some(self.pending_asked_ms.saturating_add(secs as i64 * 1000))
            }
            _ => None,
        }
    }

    fn close_round(&mut self, q: &Query, by: &str) -> StudyResult<Outcome> {
        let QueryKind::GroupVote { agents, .. } = &q.kind else {
            return Err(Error::invalid(
                "query",
                "only a group vote can be closed early (missing votes count as can't tell)",
            )
            .into());
        };
        let mut ballots = self.ballots.clone();
        for k in 0..agents.len() {
            ballots.entry(k).or_insert(Ballot::Vote { choice: None });
        }
        let answer = assemble(q, &ballots, agents.len())?;
        self.append(vec![EventKind::Answered {
            answer,
            by: Some(by.into()),
        }])?;
        self.advance()?;
        Ok(Outcome::Answered)
    }

    /// A complete answer to the open query (comparisons, evaluations, or all of a group's
    /// ballots at once), or to a query a worker holds (by its id). Retrying with the same
    /// answer is a no-op. A worker's answer that loses a race with another process catches
    /// up and is stored then.
    pub fn tell(&mut self, actor: &Actor, answer: Answer) -> StudyResult<Outcome> {
        let mut conflicts = 0;
        loop {
            self.catch_up()?;
            if let Some(prev) = self.answers.get(&answer.query_id) {
                return if *prev == answer {
                    Ok(Outcome::Duplicate)
                } else {
                    Err(StudyError::NotPending(self.closed_message(answer.query_id)))
                };
            }
            let Some(q) = self.open_query(answer.query_id).cloned() else {
                return Err(StudyError::NotPending(self.closed_message(answer.query_id)));
            };
            answer.check_against(&q)?;
            match (&q.kind, actor) {
                (_, Actor::Owner) => {}
                (
                    QueryKind::GroupVote { channel, .. } | QueryKind::GroupRate { channel, .. },
                    _,
                ) if *channel == Channel::Private => {
                    return Err(StudyError::Forbidden(
                        "private votes are cast one by one, each with its participant's token"
                            .into(),
                    ));
                }
                (_, Actor::Participant(me))
                    if !matches!(
                        q.kind,
                        QueryKind::Compare { .. } | QueryKind::Evaluate { .. }
                    ) =>
                {
                    return Err(StudyError::Forbidden(format!(
                        "participant {me:?} answers group queries with their own ballot"
                    )));
                }
                _ => {}
            }
            let by = match actor {
                Actor::Owner => None,
                Actor::Facilitator => Some("facilitator".to_string()),
                Actor::Participant(p) => Some(p.clone()),
            };
            let held = self.held.contains_key(&q.id);
            match self.append(vec![EventKind::Answered {
                answer: answer.clone(),
                by,
            }]) {
                Ok(()) => break,
                // A worker's answer races with the other workers' asks and answers: catch up
                // (done by `append`) and answer again. Without workers a conflict is reported,
                // as it always was.
                Err(StudyError::Store(StoreError::Conflict { .. }))
                    if held && conflicts < MAX_CONFLICTS =>
                {
                    conflicts += 1;
                }
                Err(e) => return Err(e),
            }
        }
        self.advance()?;
        Ok(Outcome::Answered)
    }

    /// The options of a query in user units.
    pub fn options(&self, points: &[Point]) -> Vec<OptionView> {
        points
            .iter()
            .enumerate()
            .map(|(i, p)| option_view(&self.stored.spec.space, &self.stored.spec.media, p, i))
            .collect()
    }

    /// The open query as `actor` may see it.
    pub fn pending_view(&self, actor: &Actor) -> Option<PendingView> {
        let q = self.pending.as_ref()?;
        Some(self.query_view(q, actor, &self.ballots, None))
    }

    /// The open query `worker` holds, as the worker sees it (with `worker` set).
    pub fn worker_view(&self, worker: &str) -> Option<PendingView> {
        let q = self.worker_query(worker)?;
        Some(self.query_view(q, &Actor::Owner, &BTreeMap::new(), Some(worker)))
    }

    fn query_view(
        &self,
        q: &Query,
        actor: &Actor,
        ballots: &BTreeMap<usize, Ballot>,
        worker: Option<&str>,
    ) -> PendingView {
        let participants = &self.stored.spec.participants;
        let name = |k: usize| {
            participants
                .get(k)
                .cloned()
                .unwrap_or_else(|| format!("#{k}"))
        };
        let (kind, channel, rater, points, asked): (_, _, _, Vec<Point>, Vec<String>) =
            match &q.kind {
                QueryKind::Compare { points, rater } => (
                    "compare",
                    None,
                    rater.clone().or_else(|| participants.first().cloned()),
                    points.clone(),
                    vec![],
                ),
                QueryKind::Evaluate { points } => ("evaluate", None, None, points.clone(), vec![]),
                QueryKind::GroupVote {
                    points,
                    channel,
                    agents,
                } => (
                    "group_vote",
                    Some(*channel),
                    None,
                    points.clone(),
                    (0..agents.len()).map(name).collect(),
                ),
                QueryKind::GroupRate {
                    point,
                    channel,
                    agents,
                } => (
                    "group_rate",
                    Some(*channel),
                    None,
                    vec![point.clone()],
                    (0..agents.len()).map(name).collect(),
                ),
                _ => ("unknown", None, None, vec![], vec![]),
            };
        let voted: Vec<String> = ballots.keys().map(|k| name(*k)).collect();
        let ballots = ballots
            .iter()
            .filter(|(k, _)| {
                actor.sees_private()
                    || channel != Some(Channel::Private)
                    || matches!(actor, Actor::Participant(me) if *me == name(**k))
            })
            .map(|(k, b)| (name(*k), b.clone()))
            .collect();
        let prompt = match kind {
            "compare" => match &rater {
                Some(r) if self.is_property(r) => {
                    format!("Which option has more {r}? (or can't tell)")
                }
                _ => "Which option do you prefer? (or can't tell)".to_string(),
            },
            "evaluate" => format!(
                "Measure {} and report the value{} (larger is better)",
                if points.len() == 1 {
                    "this option"
                } else {
                    "these options"
                },
                if points.len() == 1 { "" } else { "s, in order" }
            ),
            "group_vote" => format!(
                "Everyone votes {} on which option they prefer (or can't tell)",
                if channel == Some(Channel::Private) {
                    "privately (secret ballot)"
                } else {
                    "publicly (show of hands)"
                }
            ),
            "group_rate" => format!(
                "Everyone rates this option {}",
                if channel == Some(Channel::Private) {
                    "privately"
                } else {
                    "publicly"
                }
            ),
            _ => "unknown query kind".into(),
        };
        PendingView {
            query_id: q.id,
            kind,
            channel,
            rater,
            options: {
                let mut options = self.options(&points);
                for (i, o) in options.iter_mut().enumerate() {
                    if let Some(m) = self.media.get(&(q.id, i)) {
                        o.media = Some(MediaView::from(m));
                    }
                }
                options
            },
            asked,
            voted,
            ballots,
            prompt,
            worker: worker.map(str::to_string),
            deadline_ms: match (&self.pending, worker) {
                (Some(p), None) if p.id == q.id => self.deadline_ms(),
                _ => None,
            },
        }
    }

    fn is_property(&self, r: &str) -> bool {
        matches!(&self.stored.spec.method, super::spec::MethodSpec::Boap { properties, .. } if properties.iter().any(|p| p == r))
    }

    /// The recommendation so far, with the model's belief where it has one (computed once
    /// per answer: status pages ask for it on every change).
    pub fn recommendation(&self) -> Option<Recommendation> {
        let answered = self.answers.len() as u64;
        let mut cache = self
            .recommendation
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some((n, r)) = cache.as_ref()
            && *n == answered
        {
            return r.clone();
        }
        let r = self.compute_recommendation();
        *cache = Some((answered, r.clone()));
        r
    }

    fn compute_recommendation(&self) -> Option<Recommendation> {
        self.recommendation_of(self.recommended()?)
    }

    /// The strategy's recommendation and its belief there: the numbers behind a
    /// [`Recommendation`] (the expensive part, kept in snapshots).
    fn recommended(&self) -> Option<Recommended> {
        let (p, value) = self.strategy.recommend()?;
        let belief = match &p {
            Point::Unit(u) => self
                .strategy
                .belief(std::slice::from_ref(u))
                .and_then(|b| b.first().copied()),
            Point::Index(i) => match &self.stored.spec.space {
                Space::Candidates { features, .. } => features
                    .get(*i)
                    .and_then(|f| self.strategy.belief(std::slice::from_ref(f)))
                    .and_then(|b| b.first().copied()),
                Space::Box { .. } => None,
            },
        };
        Some(Recommended {
            point: p,
            value,
            belief_mean: belief.map_or(f64::NAN, |b| b.0),
            belief_sd: belief.map_or(f64::NAN, |b| b.1),
            has_belief: belief.is_some(),
        })
    }

    fn recommendation_of(&self, r: Recommended) -> Option<Recommendation> {
        let Recommended {
            point: p, value, ..
        } = r;
        let belief = r.has_belief.then_some((r.belief_mean, r.belief_sd));
        let mut option = option_view(&self.stored.spec.space, &self.stored.spec.media, &p, 0);
        option.label = "recommended".into();
        Some(Recommendation {
            option,
            value,
            value_meaning: self.stored.spec.method.value_meaning(),
            belief,
        })
    }

    /// The study at a glance, as `actor` may see it.
    pub fn status(&self, actor: &Actor) -> Status {
        let public = self
            .channels
            .iter()
            .filter(|c| **c == Channel::Public)
            .count();
        Status {
            study: self.stored.spec.name.clone(),
            description: self.stored.spec.description.clone(),
            method: format!(
                "{} ({})",
                self.stored.spec.method.name(),
                self.strategy.name()
            ),
            participants: self.stored.spec.participants.clone(),
            answered: self.answers.len(),
            workers: self.held().collect(),
            public_rounds: public,
            private_rounds: self.channels.len() - public,
            events: self.next_seq,
            pending: self.pending_view(actor),
            stalled: self.stalled.clone(),
            recommendation: self.recommendation(),
            raters: self.rater_weights(),
            takes_options: matches!(self.stored.spec.space, Space::Box { .. })
                && self.strategy.enqueues(),
        }
    }

    /// Each rater's learned reliability, most trusted first (empty for methods that treat
    /// every rater alike).
    pub fn rater_weights(&self) -> Vec<RaterWeight> {
        let Some(noise) = self.strategy.rater_noise() else {
            return Vec::new();
        };
        let top = noise.iter().map(|(_, n)| 1.0 / (n * n)).fold(0.0, f64::max);
        let mut out: Vec<RaterWeight> = noise
            .into_iter()
            .map(|(rater, n)| RaterWeight {
                rater,
                noise: n,
                weight: 1.0 / (n * n) / top,
            })
            .collect();
        out.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.rater.cmp(&b.rater)));
        out
    }

    /// The log as `actor` may see it: participants do not see others' private ballots.
    pub fn events(&self, actor: &Actor) -> StudyResult<Vec<Event>> {
        let events = self.store.events(&self.stored.spec.name, 0)?;
        if actor.sees_private() {
            return Ok(events);
        }
        let private: std::collections::BTreeSet<u64> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Asked { query, .. } => match &query.kind {
                    QueryKind::GroupVote { channel, .. } | QueryKind::GroupRate { channel, .. }
                        if *channel == Channel::Private =>
                    {
                        Some(query.id)
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let me = match actor {
            Actor::Participant(p) => Some(p.as_str()),
            _ => None,
        };
        Ok(events
            .into_iter()
            .filter(|e| match &e.kind {
                EventKind::Ballot {
                    query_id,
                    participant,
                    ..
                } => !private.contains(query_id) || Some(participant.as_str()) == me,
                EventKind::Answered { answer, .. } => !private.contains(&answer.query_id),
                EventKind::Asked { .. } => true,
                // The facilitator's own data and options: not shown to participants.
                EventKind::Imported { .. } | EventKind::Enqueued { .. } => actor.sees_private(),
                // How the options look: what everyone is shown anyway.
                EventKind::Media { .. } => true,
            })
            .collect())
    }

    /// The log as CSV: one row per event with the options in user units.
    pub fn export_csv(&self, actor: &Actor) -> StudyResult<String> {
        let mut out =
            String::from("seq,time_utc,event,query_id,participant,channel,options,answer\n");
        let mut channels: BTreeMap<u64, Channel> = BTreeMap::new();
        for e in self.events(actor)? {
            let time = iso_utc(e.at_ms);
            let (event, qid, who, channel, options, answer) = match &e.kind {
                EventKind::Asked { query, worker } => {
                    let (pts, ch): (Vec<Point>, Option<Channel>) = match &query.kind {
                        QueryKind::Compare { points, .. } | QueryKind::Evaluate { points } => {
                            (points.clone(), None)
                        }
                        QueryKind::GroupVote {
                            points, channel, ..
                        } => (points.clone(), Some(*channel)),
                        QueryKind::GroupRate { point, channel, .. } => {
                            (vec![point.clone()], Some(*channel))
                        }
                        _ => (vec![], None),
                    };
                    if let Some(c) = ch {
                        channels.insert(query.id, c);
                    }
                    let opts: Vec<String> = self.options(&pts).iter().map(option_text).collect();
                    (
                        "asked",
                        Some(query.id),
                        worker.clone().unwrap_or_default(),
                        ch,
                        opts.join(" | "),
                        String::new(),
                    )
                }
                EventKind::Ballot {
                    query_id,
                    participant,
                    ballot,
                } => (
                    "ballot",
                    Some(*query_id),
                    participant.clone(),
                    channels.get(query_id).copied(),
                    String::new(),
                    match ballot {
                        Ballot::Vote { choice: Some(c) } => format!("option {c}"),
                        Ballot::Vote { choice: None } => "can't tell".into(),
                        Ballot::Rating { value } => format!("{value}"),
                    },
                ),
                EventKind::Answered { answer, by } => (
                    "answered",
                    Some(answer.query_id),
                    by.clone().unwrap_or_default(),
                    channels.get(&answer.query_id).copied(),
                    String::new(),
                    serde_json::to_string(&answer.kind).unwrap_or_default(),
                ),
                // Each row in user units: `point -> value`, or `winner > loser`.
                EventKind::Imported { data } => {
                    let text = |x: &[f64]| {
                        self.options(&[Point::Unit(x.to_vec())])
                            .iter()
                            .map(option_text)
                            .collect::<String>()
                    };
                    let rows: Vec<String> = data
                        .iter()
                        .map(|o| match o {
                            Observation::Evaluation { point, value } => {
                                format!("{} -> {value}", text(point))
                            }
                            Observation::Comparison { winner, loser } => {
                                format!("{} > {}", text(winner), text(loser))
                            }
                        })
                        .collect();
                    (
                        "imported",
                        None,
                        "facilitator".into(),
                        None,
                        rows.join(" | "),
                        format!("{} rows", data.len()),
                    )
                }
                EventKind::Media {
                    query_id,
                    option,
                    media,
                } => (
                    "media",
                    Some(*query_id),
                    "facilitator".into(),
                    None,
                    format!("option {option}"),
                    match MediaView::from(media) {
                        MediaView::Text { text } => format!("text: {text}"),
                        MediaView::Url { url } => format!("url: {url}"),
                        MediaView::File {
                            content_type,
                            bytes,
                        } => format!("file: {content_type}, {bytes} bytes"),
                    },
                ),
                EventKind::Enqueued { option } => (
                    "enqueued",
                    None,
                    "facilitator".into(),
                    None,
                    self.options(&[Point::Unit(option.clone())])
                        .iter()
                        .map(option_text)
                        .collect::<String>(),
                    String::new(),
                ),
            };
            let ch = match channel {
                Some(Channel::Public) => "public",
                Some(Channel::Private) => "private",
                None => "",
            };
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{}\n",
                e.seq,
                time,
                event,
                qid.map(|q| q.to_string()).unwrap_or_default(),
                csv_field(&who),
                ch,
                csv_field(&options),
                csv_field(&answer)
            ));
        }
        Ok(out)
    }
}

/// An option as `name=value` pairs (the export's options column).
fn option_text(o: &OptionView) -> String {
    o.params
        .iter()
        .map(|(n, v)| format!("{n}={}", value_text(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// How many times a worker's ask catches up with other processes before giving up (each
/// lost race means another worker got a query, so this is only reached under a storm).
const MAX_CONFLICTS: usize = 64;

/// A worker id: 1–64 characters, none a control character, no surrounding spaces.
fn check_worker(worker: &str) -> agora_core::Result<()> {
    let n = worker.chars().count();
    if n == 0 || n > 64 || worker.trim() != worker || worker.chars().any(char::is_control) {
        return Err(Error::invalid(
            "worker",
            format!("must be 1-64 printable characters without surrounding spaces, got {worker:?}"),
        ));
    }
    Ok(())
}

/// The complete answer of a group query from one ballot per asked participant.
fn assemble(q: &Query, ballots: &BTreeMap<usize, Ballot>, n: usize) -> StudyResult<Answer> {
    let kind = match &q.kind {
        QueryKind::GroupVote { .. } => AnswerKind::Votes {
            votes: (0..n)
                .map(|k| match ballots.get(&k) {
                    Some(Ballot::Vote { choice }) => *choice,
                    _ => None,
                })
                .collect(),
        },
        QueryKind::GroupRate { .. } => AnswerKind::Values {
            values: (0..n)
                .map(|k| match ballots.get(&k) {
                    Some(Ballot::Rating { value }) => Ok(*value),
                    _ => Err(Error::invalid(
                        "ballots",
                        format!("participant #{k} has not rated yet"),
                    )),
                })
                .collect::<agora_core::Result<Vec<f64>>>()?,
        },
        _ => {
            return Err(Error::invalid("query", "not a group query").into());
        }
    };
    let a = Answer {
        query_id: q.id,
        kind,
    };
    a.check_against(q)?;
    Ok(a)
}

fn option_view(space: &Space, media: &[Option<Media>], p: &Point, i: usize) -> OptionView {
    let letter = |i: usize| {
        if i < 26 {
            ((b'A' + i as u8) as char).to_string()
        } else {
            format!("#{i}")
        }
    };
    match (space, p) {
        (Space::Candidates { names, features }, Point::Index(k)) => OptionView {
            point: p.clone(),
            label: names.get(*k).cloned().unwrap_or_else(|| letter(i)),
            params: features
                .get(*k)
                .map(|f| {
                    f.iter()
                        .enumerate()
                        .map(|(j, v)| (format!("feature{j}"), ParamValue::Float(*v)))
                        .collect()
                })
                .unwrap_or_default(),
            media: media.get(*k).and_then(Option::as_ref).map(MediaView::from),
        },
        (Space::Box { params }, Point::Unit(u)) => {
            let values = space.to_user(u).unwrap_or_default();
            OptionView {
                point: p.clone(),
                label: letter(i),
                params: params
                    .iter()
                    .map(Param::name)
                    .map(str::to_string)
                    .zip(values.into_iter().map(round_value))
                    .collect(),
                media: None,
            }
        }
        _ => OptionView {
            point: p.clone(),
            label: letter(i),
            params: vec![],
            media: None,
        },
    }
}

/// Values shown to people: 4 significant digits are plenty and stable across platforms.
fn round_value(v: ParamValue) -> ParamValue {
    match v {
        ParamValue::Float(x) if x != 0.0 && x.is_finite() => {
            let mag = x.abs().log10().floor() as i32;
            let scale = 10f64.powi(3 - mag);
            ParamValue::Float((x * scale).round() / scale)
        }
        v => v,
    }
}

fn value_text(v: &ParamValue) -> String {
    match v {
        ParamValue::Float(x) => format!("{x}"),
        ParamValue::Int(i) => format!("{i}"),
        ParamValue::Choice(s) => s.clone(),
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the epoch (proleptic Gregorian).
pub fn iso_utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

impl StoredStudy {
    /// The renderer's token: it may only post media for the open query's options
    /// (`POST .../media`), for a script that draws each option a box-space study asks. Derived
    /// from the facilitator's token by SHA-256, so every server agrees on it without storing
    /// it, and holding it reveals nothing of the facilitator's.
    pub fn renderer_token(&self) -> String {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(b"agora renderer token\0");
        h.update(self.facilitator_token.as_bytes());
        h.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Whether `token` is the renderer's ([`StoredStudy::renderer_token`]; constant time).
    pub fn is_renderer_token(&self, token: &str) -> bool {
        constant_time_eq(token, &self.renderer_token())
    }

    /// Which actor a token belongs to (compared in constant time).
    pub fn actor_for_token(&self, token: &str) -> Option<Actor> {
        if constant_time_eq(token, &self.facilitator_token) {
            return Some(Actor::Facilitator);
        }
        self.participant_tokens
            .iter()
            .position(|t| constant_time_eq(token, t))
            .map(|i| Actor::Participant(self.spec.participants[i].clone()))
    }
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() || b.is_empty() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
