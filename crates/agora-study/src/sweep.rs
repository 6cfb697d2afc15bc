//! Sweeps: a grid of simulated runs shared out to worker processes on any number of
//! machines, coordinated by a PostgreSQL database and nothing else.
//!
//! A sweep has a name and the command that defines it (stored once; a worker with another
//! command is refused). The command's grids are *phases*, numbered in the order the command
//! runs them; a phase has one *cell* per job, each with a fingerprint of its job, so that
//! a worker whose jobs differ from the stored ones is refused too.
//!
//! **Claim and lease.** A worker claims a cell in one short statement
//! (`UPDATE ... WHERE cell = (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING ...`):
//! the first cell that is pending, or running under a lease that has run out. The claim
//! leases the cell (`lease_until`, on the database server's clock); the worker renews its
//! leases while it computes ([`SweepStore::renew`]), then stores the result and marks the
//! cell done ([`SweepStore::finish`]). A worker that is killed stops renewing, its lease
//! runs out, and the next claim takes the cell again. A cell is done once: a second result
//! for it (from a worker that was merely slow) is not stored. Results are JSON text, stored
//! as they were written.
//!
//! Tables (migration 2 of the PostgreSQL store, beside the studies): `agora_sweeps`,
//! `agora_sweep_phases`, `agora_sweep_cells`. A SQLite store has no sweeps: workers on
//! several machines need a database server, and on one machine the local runner already
//! uses every core.

use crate::live::{PostgresStore, StorageUrl, StoreError};

/// What can go wrong with a sweep.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// The storage is a SQLite file.
    #[error(
        "invalid `storage`: sweeps with --worker need a PostgreSQL storage \
         (postgresql://user:password@host:port/database), which workers on every machine \
         reach; `{storage}` is a SQLite file"
    )]
    NeedsPostgres {
        /// The storage as displayed (no password or host).
        storage: String,
    },
    /// A sweep name that cannot be used.
    #[error("invalid `sweep`: {0}")]
    BadName(String),
    /// No sweep by that name.
    #[error("unknown sweep `{name}`; {known}")]
    UnknownSweep {
        /// The name asked for.
        name: String,
        /// The known sweeps, or how to start one.
        known: String,
    },
    /// The sweep exists with another command.
    #[error(
        "sweep `{sweep}` was started by another command: it runs {stored}, this is {given}; \
         give the same command to join it, or another --sweep name"
    )]
    OtherCommand {
        /// The sweep.
        sweep: String,
        /// Its stored command.
        stored: String,
        /// The command given.
        given: String,
    },
    /// A phase's jobs differ from the stored ones.
    #[error(
        "sweep `{sweep}`: grid {phase} (`{label}`) does not match the stored one ({reason}); \
         the workers run different agora versions or commands"
    )]
    OtherPhase {
        /// The sweep.
        sweep: String,
        /// The phase's number.
        phase: u32,
        /// The phase's label here.
        label: String,
        /// What differs.
        reason: String,
    },
    /// A phase has cells that are not done (a report needs every cell).
    #[error(
        "sweep `{sweep}` is not complete: grid {phase} (`{label}`) has {done} of {cells} runs \
         done; start workers (agora run/reproduce ... --worker --sweep {sweep}) to finish it"
    )]
    Incomplete {
        /// The sweep.
        sweep: String,
        /// The phase's number.
        phase: u32,
        /// The phase's label.
        label: String,
        /// Cells done.
        done: u64,
        /// Cells in all.
        cells: u64,
    },
    /// A cell's job failed on a worker.
    #[error(
        "sweep `{sweep}`: run {cell} of grid {phase} (`{label}`) failed on worker {worker}: {error}"
    )]
    CellFailed {
        /// The sweep.
        sweep: String,
        /// The phase's number.
        phase: u32,
        /// The phase's label.
        label: String,
        /// The cell.
        cell: usize,
        /// The worker it failed on.
        worker: String,
        /// The error.
        error: String,
    },
    /// The store failed (see [`StoreError`]; [`StoreError::Unavailable`] is retryable).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SweepError {
    /// Whether the same call may succeed if made again later (the server was unreachable).
    pub fn is_retryable(&self) -> bool {
        matches!(self, SweepError::Store(e) if e.is_retryable())
    }
}

/// Result of sweep operations.
pub type SweepResult<T> = std::result::Result<T, SweepError>;

/// A cell a worker has claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// The cell (the job's index in its phase).
    pub cell: usize,
    /// How many times the cell has been claimed, this claim included (more than 1: a
    /// worker before this one did not finish it in its lease).
    pub claims: u32,
}

/// How far a phase is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Cells in the phase.
    pub cells: u64,
    /// Cells done.
    pub done: u64,
    /// Cells claimed and not done (some may have run out of lease).
    pub running: u64,
    /// The first failed cell, if any: (cell, worker, error).
    pub failed: Option<(usize, String, String)>,
}

/// A cell's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellState {
    /// Not claimed yet.
    Pending,
    /// Claimed, not done.
    Running,
    /// Its result is stored.
    Done,
    /// Its job failed.
    Failed,
}

impl CellState {
    pub(crate) fn parse(s: &str) -> CellState {
        match s {
            "running" => CellState::Running,
            "done" => CellState::Done,
            "failed" => CellState::Failed,
            _ => CellState::Pending,
        }
    }
}

/// One cell as stored (without its result), for inspection and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellRecord {
    /// The phase's number.
    pub phase: u32,
    /// The phase's label.
    pub label: String,
    /// The cell.
    pub cell: usize,
    /// Its state.
    pub state: CellState,
    /// How many times it was claimed.
    pub claims: u32,
    /// The worker that claimed it last.
    pub worker: Option<String>,
    /// The worker that stored its result (or its error).
    pub done_by: Option<String>,
}

/// The sweeps in a PostgreSQL database (see the module docs for the protocol).
#[derive(Debug)]
pub struct SweepStore {
    db: PostgresStore,
}

/// What creating or joining something found.
pub(crate) enum Found<T> {
    /// It was made now, or it was there and matches.
    Ok,
    /// It was there and differs: what is stored.
    Differs(T),
    /// It is not there (and was not to be made).
    Missing,
}

/// A stored phase: its label and its cells' fingerprints, in cell order.
pub(crate) type StoredPhase = (String, Vec<String>);

/// Longest sweep name.
const MAX_NAME: usize = 100;

impl SweepStore {
    /// Connect to the database `url` names, making or migrating agora's tables. A SQLite
    /// storage is [`SweepError::NeedsPostgres`].
    pub fn open(url: &StorageUrl) -> SweepResult<SweepStore> {
        match url {
            StorageUrl::Postgres(pg) => Ok(SweepStore {
                db: PostgresStore::open(pg, true)?,
            }),
            StorageUrl::Sqlite(_) => Err(SweepError::NeedsPostgres {
                storage: url.to_string(),
            }),
        }
    }

    /// Start sweep `name` with `command` (any text that defines it, compared byte for
    /// byte), or join it when it exists with the same command.
    pub fn join(&self, name: &str, command: &str) -> SweepResult<()> {
        check_name(name)?;
        match self.db.sweep_join(name, command)? {
            Found::Ok | Found::Missing => Ok(()),
            Found::Differs(stored) => Err(SweepError::OtherCommand {
                sweep: name.into(),
                stored,
                given: command.into(),
            }),
        }
    }

    /// The command sweep `name` was started with.
    pub fn command(&self, name: &str) -> SweepResult<String> {
        check_name(name)?;
        match self.db.sweep_command(name)? {
            Some(c) => Ok(c),
            None => {
                let known = self.db.sweep_names()?;
                Err(SweepError::UnknownSweep {
                    name: name.into(),
                    known: if known.is_empty() {
                        "there are no sweeps in this database yet (start one with --worker --sweep NAME)"
                            .into()
                    } else {
                        format!("known: {}", known.join(", "))
                    },
                })
            }
        }
    }

    /// Make phase `phase` of sweep `sweep` with one pending cell per fingerprint, or check
    /// that the stored phase has the same label and fingerprints. Without `create`, a
    /// phase that is not there is [`SweepError::Incomplete`].
    pub fn phase(
        &self,
        sweep: &str,
        phase: u32,
        label: &str,
        fingerprints: &[String],
        create: bool,
    ) -> SweepResult<()> {
        match self
            .db
            .sweep_phase(sweep, phase, label, fingerprints, create)?
        {
            Found::Ok => Ok(()),
            Found::Missing => Err(SweepError::Incomplete {
                sweep: sweep.into(),
                phase,
                label: label.into(),
                done: 0,
                cells: fingerprints.len() as u64,
            }),
            Found::Differs((stored_label, stored)) => {
                let reason = if stored_label != label {
                    format!("it is `{stored_label}`")
                } else if stored.len() != fingerprints.len() {
                    format!(
                        "it has {} runs, this command {}",
                        stored.len(),
                        fingerprints.len()
                    )
                } else {
                    let i = stored
                        .iter()
                        .zip(fingerprints)
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    format!("run {i} differs")
                };
                Err(SweepError::OtherPhase {
                    sweep: sweep.into(),
                    phase,
                    label: label.into(),
                    reason,
                })
            }
        }
    }

    /// Claim a cell of the phase for `worker`: the first pending one, or one whose lease
    /// has run out; leased for `lease`. `None` when no cell can be claimed now.
    pub fn claim(
        &self,
        sweep: &str,
        phase: u32,
        worker: &str,
        lease: std::time::Duration,
    ) -> SweepResult<Option<Claim>> {
        Ok(self.db.sweep_claim(sweep, phase, worker, millis(lease))?)
    }

    /// Extend by `lease` (from now) the lease of every cell of the sweep that `worker`
    /// holds; returns how many it holds.
    pub fn renew(&self, sweep: &str, worker: &str, lease: std::time::Duration) -> SweepResult<u64> {
        Ok(self.db.sweep_renew(sweep, worker, millis(lease))?)
    }

    /// Store a cell's result and mark it done, unless it is done already; returns whether
    /// this call stored it.
    pub fn finish(
        &self,
        sweep: &str,
        phase: u32,
        cell: usize,
        worker: &str,
        result: &str,
    ) -> SweepResult<bool> {
        Ok(self
            .db
            .sweep_finish(sweep, phase, cell, worker, result, false)?)
    }

    /// Mark a cell failed with `error` (every worker then stops with it), unless it is
    /// done already.
    pub fn fail(
        &self,
        sweep: &str,
        phase: u32,
        cell: usize,
        worker: &str,
        error: &str,
    ) -> SweepResult<()> {
        self.db
            .sweep_finish(sweep, phase, cell, worker, error, true)?;
        Ok(())
    }

    /// How far the phase is.
    pub fn progress(&self, sweep: &str, phase: u32) -> SweepResult<Progress> {
        Ok(self.db.sweep_progress(sweep, phase)?)
    }

    /// The phase's results in cell order; `None` where a cell is not done.
    pub fn results(&self, sweep: &str, phase: u32) -> SweepResult<Vec<Option<String>>> {
        Ok(self.db.sweep_results(sweep, phase)?)
    }

    /// Every cell of the sweep (phase by phase), without results.
    pub fn cells(&self, sweep: &str) -> SweepResult<Vec<CellRecord>> {
        Ok(self.db.sweep_cells(sweep)?)
    }
}

fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}

fn check_name(name: &str) -> SweepResult<()> {
    if name.trim().is_empty() {
        return Err(SweepError::BadName("give the sweep a name".into()));
    }
    if name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(SweepError::BadName(format!(
            "at most {MAX_NAME} characters, no control characters"
        )));
    }
    Ok(())
}
