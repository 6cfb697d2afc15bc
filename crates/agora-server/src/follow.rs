//! Following the store's change feed ([`AppState::follow`](crate::AppState::follow)): a
//! thread takes the changes the feed reports, a burst at a time, and brings each open
//! study they name up to date (reading the log, and asking the next query when another
//! server stored an answer but not yet its next query), then announces it to this
//! server's live streams. A burst of appends to one study costs one read, whatever its
//! size; a study already as long as the change says (this server wrote it) costs nothing.
//!
//! When the feed loses its connection, the server stops answering reads from memory; once
//! the feed is back, every open study is read again (what happened meanwhile went
//! unreported) and reads answer from memory again. A study that cannot be read then (the
//! database is still flapping) is tried again every second.

use crate::Inner;
use agora_study::live::Change;
use std::collections::HashMap;
use std::sync::Weak;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// How long to wait before reading the open studies again after a failed resync.
const RESYNC_AGAIN: Duration = Duration::from_secs(1);

/// Start the thread; it ends when the feed (the sender) or the state is gone.
pub(crate) fn spawn(state: Weak<Inner>, changes: Receiver<Change>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("agora-follow".into())
        .spawn(move || run(&state, &changes))
        .map(|_| ())
}

fn run(state: &Weak<Inner>, changes: &Receiver<Change>) {
    let mut resync = false;
    loop {
        let first = if resync {
            match changes.recv_timeout(RESYNC_AGAIN) {
                Ok(c) => Some(c),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        } else {
            match changes.recv() {
                Ok(c) => Some(c),
                Err(_) => return,
            }
        };
        let mut grown: HashMap<String, u64> = HashMap::new();
        for change in first.into_iter().chain(changes.try_iter()) {
            match change {
                Change::Appended { study, events } => {
                    let n = grown.entry(study).or_insert(0);
                    *n = (*n).max(events);
                }
                Change::Lost => {
                    resync = false;
                    if let Some(inner) = state.upgrade() {
                        inner.following.store(false, Ordering::SeqCst);
                    }
                }
                Change::Resync => resync = true,
                _ => resync = true,
            }
        }
        let Some(inner) = state.upgrade() else {
            return;
        };
        let mut all_read = true;
        for (name, entry) in inner.entries() {
            let target = grown.get(&name).copied();
            // Nothing new (most often: this server's own appends) costs no lock.
            let known = entry.live.borrow().seq;
            if !resync && target.is_none_or(|t| known >= t) {
                continue;
            }
            let mut study = entry.lock();
            if !resync && target.is_some_and(|t| study.seq() >= t) {
                continue;
            }
            // A failure (the database unreachable) leaves the study as it was: the next
            // change, request or resync reads it again.
            all_read &= study.catch_up().is_ok();
            entry.announce(&study);
        }
        if resync && all_read {
            resync = false;
            inner.following.store(true, Ordering::SeqCst);
        }
    }
}
