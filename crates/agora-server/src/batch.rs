//! Group commit of ballots: the ballots that arrive for one study while its previous ones
//! are being stored wait in a queue, and one blocking task stores all that are waiting in
//! one transaction ([`store_ballots`](agora_study::live::LiveStudy::store_ballots)). Each is acknowledged only after that
//! commit, so the guarantee is the one of a ballot alone; what changes is that hundreds of
//! voters pay for one commit, one read of the log and one round trip to the database
//! instead of one each. When a ballot completes the round, the batch is acknowledged
//! before the strategy computes the next question (the reply's `open_query` is then
//! `null`; the live stream announces the question when it is stored).
//!
//! When another process appended first ([`StoreError::Conflict`]: another server on the
//! same database), the study has already caught up and the batch is checked and stored
//! again, up to [`CONFLICT_RETRIES`] times; after that each ballot gets 503 (busy: retry).
//! Nothing acknowledged is lost and nothing is stored twice: a ballot that another server
//! stored meanwhile (a client's retry) is a duplicate the second time.

use crate::{ApiError, AppState, CONFLICT_RETRIES, Entry};
use agora_study::live::{BallotRequest, Outcome, StoreError, StudyError};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// A stored ballot's outcome, with the log length and the open query after its batch.
pub(crate) struct Done {
    pub(crate) outcome: Outcome,
    pub(crate) seq: u64,
    pub(crate) open: Option<u64>,
}

type Reply = oneshot::Sender<Result<Done, ApiError>>;

/// The ballots waiting for one study, and whether a task is storing them.
#[derive(Default)]
pub(crate) struct Queue {
    state: Mutex<QueueState>,
}

#[derive(Default)]
struct QueueState {
    waiting: Vec<(BallotRequest, Reply)>,
    draining: bool,
}

impl Queue {
    /// Add a ballot; true when no task is storing this study's ballots (the caller starts
    /// one).
    fn push(&self, request: BallotRequest, reply: Reply) -> bool {
        let mut q = self.state.lock().unwrap_or_else(|p| p.into_inner());
        q.waiting.push((request, reply));
        !std::mem::replace(&mut q.draining, true)
    }

    /// The first `limit` waiting (all when `limit` is 0), or `None` (and the task ends)
    /// when none are.
    fn take(&self, limit: usize) -> Option<Vec<(BallotRequest, Reply)>> {
        let mut q = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if q.waiting.is_empty() {
            q.draining = false;
            return None;
        }
        if limit == 0 || q.waiting.len() <= limit {
            return Some(std::mem::take(&mut q.waiting));
        }
        Some(q.waiting.drain(..limit).collect())
    }
}

impl AppState {
    /// Store a ballot on the study `name` with the others waiting, and wait for its
    /// outcome.
    pub(crate) async fn cast_ballot(
        &self,
        name: &str,
        request: BallotRequest,
    ) -> Result<Done, ApiError> {
        let entry = self.entry_async(name).await?;
        let (tx, rx) = oneshot::channel();
        if entry.ballots.push(request, tx) {
            let limit = self.inner.batch_limit.load(Ordering::Relaxed);
            tokio::task::spawn_blocking(move || drain(&entry, limit));
        }
        rx.await
            .map_err(|_| ApiError::internal("the ballot's worker failed".into()))?
    }
}

/// Store batches of waiting ballots (at most `limit` a batch, 0 for no limit) until none
/// are waiting.
fn drain(entry: &Arc<Entry>, limit: usize) {
    while let Some(batch) = entry.ballots.take(limit) {
        // A panic in one batch (its callers see their reply dropped: 500) must not leave
        // the queue marked as drained by a task that is gone.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| store(entry, batch)));
    }
}

/// Store one batch and reply to each of its ballots.
fn store(entry: &Entry, batch: Vec<(BallotRequest, Reply)>) {
    let (requests, replies): (Vec<BallotRequest>, Vec<Reply>) = batch.into_iter().unzip();
    let mut study = entry.lock();
    let mut results: Vec<Result<Outcome, ApiError>> = Vec::with_capacity(requests.len());
    let mut conflicts = 0;
    while results.len() < requests.len() {
        match study.store_ballots(&requests[results.len()..]) {
            Ok(outcomes) => results.extend(outcomes.into_iter().map(|o| o.map_err(ApiError::from))),
            Err(StudyError::Store(StoreError::Conflict { .. })) if conflicts < CONFLICT_RETRIES => {
                conflicts += 1;
            }
            Err(e) => {
                let e = ApiError::from_change(e);
                results.resize(requests.len(), Err(e));
            }
        }
    }
    entry.announce(&study);
    let (seq, open) = (study.seq(), study.pending().map(|q| q.id));
    for (reply, result) in replies.into_iter().zip(results) {
        let _ = reply.send(result.map(|outcome| Done { outcome, seq, open }));
    }
    // The ballots are acknowledged; now the strategy computes the next question (when one
    // completed the round). A failure is left to the next operation's catch-up.
    if study.pending().is_none() {
        let _ = study.catch_up();
        entry.announce(&study);
    }
}
