//! The studies index: one line per study, read from the store alone (the study's
//! definition and its log; no strategy is built or replayed), so listing many studies costs
//! a read each. `agora study list` prints it; `GET /api/studies` serves it to the holder of
//! the server's admin token, with each study's links.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::store::{EventKind, Store, StoreResult, StoredStudy};

/// Where a study stands, from its log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StudySummary {
    /// The study's name.
    pub name: String,
    /// Its description (may be empty).
    pub description: String,
    /// The method's name (`sbo`, `pairs`, ...).
    pub method: String,
    /// The participants, in the spec's order (empty for a one-person study).
    pub participants: Vec<String>,
    /// When it was created (ms since the epoch).
    pub created_ms: i64,
    /// When its last event was stored, or `created_ms` before the first.
    pub last_activity_ms: i64,
    /// Events in its log.
    pub events: u64,
    /// Answers the strategy was told.
    pub answered: usize,
    /// The queries asked and not yet answered, oldest first.
    pub open: Vec<OpenQuerySummary>,
}

/// One unanswered query in a study's summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OpenQuerySummary {
    /// The query's id.
    pub query_id: u64,
    /// When it was asked (ms since the epoch).
    pub asked_ms: i64,
    /// The participants with a ballot on it, in name order.
    pub voted: Vec<String>,
}

impl StudySummary {
    /// `waiting for N of M votes`, `question open`, `no question yet` or `N answered, idle`:
    /// the state in a few words for a list.
    pub fn state(&self) -> String {
        match self.open.first() {
            Some(q) if !self.participants.is_empty() => format!(
                "question {} open: {} of {} voted",
                q.query_id,
                q.voted.len(),
                self.participants.len()
            ),
            Some(q) => format!("question {} open", q.query_id),
            None if self.events == 0 => "no question yet".to_string(),
            None => "between questions".to_string(),
        }
    }
}

/// The summary of study `name` (its definition and log must be readable; an unknown name
/// is the store's `NotFound`).
pub fn summarize(store: &dyn Store, name: &str) -> StoreResult<StudySummary> {
    summarize_stored(store, &store.study(name)?)
}

/// [`summarize`] of a study whose definition was already read (its log is read here).
pub fn summarize_stored(store: &dyn Store, stored: &StoredStudy) -> StoreResult<StudySummary> {
    let events = store.events(&stored.spec.name, 0)?;
    let mut open: BTreeMap<u64, (i64, BTreeSet<String>)> = BTreeMap::new();
    let mut answered = 0;
    for e in &events {
        match &e.kind {
            EventKind::Asked { query, .. } => {
                open.entry(query.id)
                    .or_insert_with(|| (e.at_ms, BTreeSet::new()));
            }
            EventKind::Ballot {
                query_id,
                participant,
                ..
            } => {
                if let Some((_, voted)) = open.get_mut(query_id) {
                    voted.insert(participant.clone());
                }
            }
            EventKind::Answered { answer, .. } => {
                answered += 1;
                open.remove(&answer.query_id);
            }
            // An import withdraws the open query; the next is asked afresh.
            EventKind::Imported { .. } => open.clear(),
            EventKind::Enqueued { .. } | EventKind::Media { .. } => {}
        }
    }
    let mut open: Vec<OpenQuerySummary> = open
        .into_iter()
        .map(|(query_id, (asked_ms, voted))| OpenQuerySummary {
            query_id,
            asked_ms,
            voted: voted.into_iter().collect(),
        })
        .collect();
    open.sort_by_key(|q| (q.asked_ms, q.query_id));
    Ok(StudySummary {
        name: stored.spec.name.clone(),
        description: stored.spec.description.clone(),
        method: stored.spec.method.name().to_string(),
        participants: stored.spec.participants.clone(),
        created_ms: stored.created_ms,
        last_activity_ms: events.last().map_or(stored.created_ms, |e| e.at_ms),
        events: events.len() as u64,
        answered,
        open,
    })
}

/// Every study in the store, summarized, in the store's name order.
pub fn summarize_all(store: &dyn Store) -> StoreResult<Vec<StudySummary>> {
    store.list()?.iter().map(|n| summarize(store, n)).collect()
}
