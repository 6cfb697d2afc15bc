//! One command's grids on many machines: the worker's side of a sweep
//! ([`agora_study::sweep`] holds the database's side and the claim/lease protocol).
//!
//! A worker runs the command as usual; each grid it reaches ([`Runner::run_parallel`]) is
//! the sweep's next *phase*. The worker makes the phase's cells (one per job, keyed by the
//! job's index and a fingerprint of the job) if no worker has, then claims cells with every
//! thread, computes them and stores each result as JSON, renewing its leases from a
//! heartbeat thread meanwhile. When nothing is left to claim it waits for the cells other
//! workers hold (claiming those whose lease ran out: their worker died), reads every
//! result back in job order, and goes on. So every worker, and a reader that computes
//! nothing ([`SweepRun::reader`], behind `agora report --sweep`), writes the report a
//! single process writes.
//!
//! [`Runner::run_parallel`]: crate::runner::Runner::run_parallel

use crate::grid::RunSpec;
use agora_core::{Error, Result};
use agora_study::sweep::{SweepError, SweepStore};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// The command a sweep runs, as stored with it: every worker must give the same one, and
/// `agora report --sweep` runs it again, reading every result from the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum SweepCommand {
    /// `agora run`: a method × problem × seed grid.
    Run {
        /// The grid.
        spec: RunSpec,
    },
    /// `agora reproduce`: one suite, or every suite (`None`).
    Reproduce {
        /// The suite's name.
        suite: Option<String>,
        /// The `--quick` grids.
        quick: bool,
    },
}

impl SweepCommand {
    /// The stored text: JSON, compared byte for byte between workers.
    pub fn text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parse a stored command.
    pub fn parse(text: &str) -> Result<SweepCommand> {
        serde_json::from_str(text).map_err(|e| {
            Error::invalid(
                "sweep",
                format!("its stored command is not one this agora runs ({e}): {text}"),
            )
        })
    }
}

/// Whether this process computes cells or only reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Work,
    Read,
}

/// One process's part in a sweep: a worker that claims and computes cells, or a reader.
pub struct SweepRun {
    store: Arc<SweepStore>,
    name: String,
    worker: String,
    lease: Duration,
    mode: Mode,
    computed: AtomicUsize,
    heartbeat: Option<Heartbeat>,
}

impl std::fmt::Debug for SweepRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SweepRun")
            .field("name", &self.name)
            .field("worker", &self.worker)
            .field("mode", &self.mode)
            .finish()
    }
}

impl SweepRun {
    /// Join sweep `name` (starting it if new) as a worker running `command`, with cells
    /// leased for `lease` at a time (renewed while it computes; a killed worker's cells are
    /// claimed again once it runs out). The worker's id is `HOST-PID-RANDOM`.
    pub fn worker(
        store: SweepStore,
        name: &str,
        command: &SweepCommand,
        lease: Duration,
    ) -> Result<SweepRun> {
        if lease < Duration::from_millis(100) {
            return Err(Error::invalid(
                "lease",
                format!("must be at least 100ms, got {}ms", lease.as_millis()),
            ));
        }
        store
            .join(name, &command.text())
            .map_err(|e| sweep_error(name, e))?;
        let store = Arc::new(store);
        let worker = worker_id();
        let heartbeat = Heartbeat::start(store.clone(), name, &worker, lease);
        Ok(SweepRun {
            store,
            name: name.into(),
            worker,
            lease,
            mode: Mode::Work,
            computed: AtomicUsize::new(0),
            heartbeat: Some(heartbeat),
        })
    }

    /// Read sweep `name` without computing anything; returns its command too.
    pub fn reader(store: SweepStore, name: &str) -> Result<(SweepRun, SweepCommand)> {
        let text = store.command(name).map_err(|e| sweep_error(name, e))?;
        let command = SweepCommand::parse(&text)?;
        let run = SweepRun {
            store: Arc::new(store),
            name: name.into(),
            worker: String::new(),
            lease: Duration::from_secs(1),
            mode: Mode::Read,
            computed: AtomicUsize::new(0),
            heartbeat: None,
        };
        Ok((run, command))
    }

    /// The sweep's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This worker's id, as stored in the cells it claims (empty for a reader).
    pub fn worker_id(&self) -> &str {
        &self.worker
    }

    /// How many cells this process has computed and stored.
    pub fn computed(&self) -> usize {
        self.computed.load(Ordering::SeqCst)
    }

    /// One grid as phase `phase` of the sweep (see the module docs).
    pub(crate) fn run_phase<J, R, F>(
        &self,
        phase: u32,
        label: &str,
        jobs: &[J],
        job: &F,
        bar: &indicatif::ProgressBar,
    ) -> Result<Vec<R>>
    where
        J: Sync + std::fmt::Debug,
        R: Send + Serialize + DeserializeOwned,
        F: Fn(&J) -> Result<R> + Sync,
    {
        let fingerprints: Vec<String> = jobs.iter().map(fingerprint).collect();
        let work = self.mode == Mode::Work;
        self.retry(|| {
            self.store
                .phase(&self.name, phase, label, &fingerprints, work)
        })?;
        if work {
            let poll = (self.lease / 4).clamp(Duration::from_millis(50), Duration::from_secs(2));
            loop {
                self.claim_and_compute(phase, jobs, job, bar)?;
                let p = self.retry(|| self.store.progress(&self.name, phase))?;
                if let Some(failed) = p.failed {
                    return Err(self.cell_failed(phase, label, failed));
                }
                if p.done == p.cells {
                    break;
                }
                // Other workers hold the rest: wait, then claim any whose lease ran out.
                std::thread::sleep(poll);
            }
        }
        let texts = self.retry(|| self.store.results(&self.name, phase))?;
        let done = texts.iter().filter(|t| t.is_some()).count() as u64;
        if done < jobs.len() as u64 || texts.len() != jobs.len() {
            let p = self.retry(|| self.store.progress(&self.name, phase))?;
            if let Some(failed) = p.failed {
                return Err(self.cell_failed(phase, label, failed));
            }
            return Err(self.error(SweepError::Incomplete {
                sweep: self.name.clone(),
                phase,
                label: label.into(),
                done,
                cells: jobs.len() as u64,
            }));
        }
        texts
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                serde_json::from_str(t.as_deref().unwrap_or_default()).map_err(|e| {
                    Error::invalid(
                        "sweep",
                        format!(
                            "sweep `{}`: the stored result of run {i} of grid {phase} (`{label}`) \
                             does not parse ({e}); the workers run different agora versions",
                            self.name
                        ),
                    )
                })
            })
            .collect()
    }

    /// Claim and compute cells of the phase with every thread until none can be claimed;
    /// a job's error is stored with its cell (so every worker stops with it) and returned.
    fn claim_and_compute<J, R, F>(
        &self,
        phase: u32,
        jobs: &[J],
        job: &F,
        bar: &indicatif::ProgressBar,
    ) -> Result<()>
    where
        J: Sync,
        R: Serialize + DeserializeOwned,
        F: Fn(&J) -> Result<R> + Sync,
    {
        let failed: Mutex<Option<Error>> = Mutex::new(None);
        let stop = |e: Error| {
            let mut f = failed.lock().unwrap_or_else(|p| p.into_inner());
            f.get_or_insert(e);
        };
        let stopped = || failed.lock().unwrap_or_else(|p| p.into_inner()).is_some();
        rayon::scope(|s| {
            for _ in 0..rayon::current_num_threads().max(1) {
                s.spawn(|_| {
                    while !stopped() {
                        let claim = match self.retry(|| {
                            self.store
                                .claim(&self.name, phase, &self.worker, self.lease)
                        }) {
                            Ok(Some(c)) => c,
                            Ok(None) => break,
                            Err(e) => return stop(e),
                        };
                        let Some(j) = jobs.get(claim.cell) else {
                            return stop(Error::invalid(
                                "sweep",
                                format!(
                                    "sweep `{}` has a cell {} beyond its grid",
                                    self.name, claim.cell
                                ),
                            ));
                        };
                        match job(j).and_then(|r| encode(&r)) {
                            Ok(text) => {
                                let stored = self.retry(|| {
                                    self.store.finish(
                                        &self.name,
                                        phase,
                                        claim.cell,
                                        &self.worker,
                                        &text,
                                    )
                                });
                                match stored {
                                    Ok(_) => {
                                        self.computed.fetch_add(1, Ordering::SeqCst);
                                        bar.inc(1);
                                    }
                                    Err(e) => return stop(e),
                                }
                            }
                            Err(e) => {
                                let _ = self.store.fail(
                                    &self.name,
                                    phase,
                                    claim.cell,
                                    &self.worker,
                                    &e.to_string(),
                                );
                                return stop(e);
                            }
                        }
                    }
                });
            }
        });
        match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// `op`, again while the database is unreachable (up to about half a minute).
    fn retry<T>(&self, mut op: impl FnMut() -> std::result::Result<T, SweepError>) -> Result<T> {
        let mut tries = 0;
        loop {
            match op() {
                Ok(v) => return Ok(v),
                Err(e) if e.is_retryable() && tries < 60 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(e) => return Err(self.error(e)),
            }
        }
    }

    /// The error every worker stops with when a run of the phase failed: (cell, the
    /// worker that ran it, its error), as [`agora_study::sweep::Progress::failed`] has it.
    fn cell_failed(&self, phase: u32, label: &str, failed: (usize, String, String)) -> Error {
        let (cell, worker, error) = failed;
        self.error(SweepError::CellFailed {
            sweep: self.name.clone(),
            phase,
            label: label.into(),
            cell,
            worker,
            error,
        })
    }

    fn error(&self, e: SweepError) -> Error {
        sweep_error(&self.name, e)
    }
}

/// A sweep error as the runner's error: the database's failures and a failed run as
/// [`Error::State`], the rest (a name, a command or a grid that does not match, an
/// incomplete sweep, a SQLite storage) as invalid input naming `sweep` or `storage`.
fn sweep_error(name: &str, e: SweepError) -> Error {
    match e {
        SweepError::Store(e) => Error::State(format!("sweep `{name}`: {e}")),
        SweepError::CellFailed { .. } => Error::State(e.to_string()),
        SweepError::NeedsPostgres { storage } => Error::invalid(
            "storage",
            format!(
                "sweeps need a PostgreSQL storage (postgresql://user:password@host:port/database), \
                 which workers on every machine reach; `{storage}` is a SQLite file"
            ),
        ),
        e => Error::invalid("sweep", e.to_string()),
    }
}

impl Drop for SweepRun {
    fn drop(&mut self) {
        if let Some(h) = self.heartbeat.take() {
            h.stop();
        }
    }
}

/// A job's fingerprint: FNV-1a (64 bits, hex) of its debug text, which names every
/// parameter of the run (method, problem, seed, variant, budget, ...).
fn fingerprint<J: std::fmt::Debug>(job: &J) -> String {
    let text = format!("{job:?}");
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |a, b| {
        (a ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{h:016x}")
}

/// A result as stored: JSON that reads back to the same value. `serde_json` writes the
/// shortest text that parses back to the same `f64` (its `float_roundtrip` feature), but
/// writes NaN and ±∞ as `null`: such a result is refused rather than changed.
fn encode<R: Serialize + DeserializeOwned>(r: &R) -> Result<String> {
    let text = serde_json::to_string(r).map_err(|e| Error::Numerical(e.to_string()))?;
    let back: R = serde_json::from_str(&text).map_err(|e| {
        Error::Numerical(format!(
            "a run's result does not survive JSON ({e}): it holds NaN or infinity, which a \
             sweep cannot store"
        ))
    })?;
    let again = serde_json::to_string(&back).map_err(|e| Error::Numerical(e.to_string()))?;
    if again != text {
        return Err(Error::Numerical(
            "a run's result does not survive JSON unchanged: a sweep cannot store it".into(),
        ));
    }
    Ok(text)
}

/// `HOST-PID-RANDOM`: unique among the processes of a sweep.
fn worker_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into());
    let token = agora_study::live::new_token();
    format!(
        "{host}-{}-{}",
        std::process::id(),
        token.get(..6).unwrap_or("0")
    )
}

/// The thread that renews a worker's leases every third of a lease.
struct Heartbeat {
    stop: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Heartbeat {
    fn start(store: Arc<SweepStore>, sweep: &str, worker: &str, lease: Duration) -> Heartbeat {
        let (stop, rx) = mpsc::channel::<()>();
        let (sweep, worker) = (sweep.to_string(), worker.to_string());
        let thread = std::thread::spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(lease / 3) {
                // A failed renewal is tried again at the next beat; if the database stays
                // away longer than a lease, other workers may take the cells over, which
                // costs time, never correctness (a cell is done once).
                let _ = store.renew(&sweep, &worker, lease);
            }
        });
        Heartbeat { stop, thread }
    }

    fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_that_json_keeps_exactly_are_encoded_others_refused() {
        let v = vec![0.1 + 0.2, 1e-300, -0.0, f64::MIN_POSITIVE, 2.0f64.sqrt()];
        let text = encode(&v).unwrap();
        let back: Vec<f64> = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        let e = encode(&vec![1.0, f64::NEG_INFINITY]).unwrap_err();
        assert!(e.to_string().contains("NaN or infinity"), "{e}");
    }

    #[test]
    fn fingerprints_tell_jobs_apart() {
        let a = fingerprint(&("gp-logei", "branin", 0u64));
        assert_eq!(a, fingerprint(&("gp-logei", "branin", 0u64)));
        assert_ne!(a, fingerprint(&("gp-logei", "branin", 1u64)));
        assert_eq!(a.len(), 16);
    }

    #[test]
    fn commands_round_trip_through_their_text() {
        let c = SweepCommand::Reproduce {
            suite: Some("standard".into()),
            quick: true,
        };
        assert_eq!(SweepCommand::parse(&c.text()).unwrap(), c);
        assert!(SweepCommand::parse("{\"command\":\"serve\"}").is_err());
    }
}
