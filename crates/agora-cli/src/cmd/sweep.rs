//! `--worker --sweep NAME`: `agora run` and `agora reproduce` as one worker of a sweep whose
//! runs workers on any number of machines claim from a PostgreSQL database; and the
//! store's side of `agora report --sweep NAME`.

use agora_experiments::Runner;
use agora_experiments::sweep::{SweepCommand, SweepRun};
use agora_study::sweep::SweepStore;
use anyhow::{Result, bail};
use clap::Args;
use std::time::Duration;

/// Running a command as one worker of a sweep.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// Run as one worker of a sweep: claim this command's runs from a PostgreSQL storage,
    /// beside any number of other workers (on any machines) given the same command and
    /// --sweep; each writes the same files a single process writes. Needs --sweep.
    #[arg(long, requires = "sweep")]
    pub worker: bool,
    /// The sweep's name: workers with the same name and command share its runs
    /// (`agora report --sweep NAME` assembles its report later).
    #[arg(long, value_name = "NAME", requires = "worker")]
    pub sweep: Option<String>,
    /// The sweep's database: postgresql://user:password@host:port/database. Default:
    /// $AGORA_STORAGE, else $AGORA_DB.
    #[arg(long, value_name = "URL", requires = "worker")]
    pub storage: Option<String>,
    /// How long a claimed run stays this worker's without news from it (renewed every
    /// third of it while it computes); a killed worker's runs go to others after this.
    /// E.g. 30s, 500ms, 2m.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        value_parser = parse_duration,
        requires = "worker"
    )]
    pub lease: Duration,
}

impl SweepArgs {
    /// The runner for this command: local, or a worker of the sweep (joined here, so that
    /// a sweep started by another command is refused before anything runs).
    pub fn runner(&self, progress: bool, command: SweepCommand) -> Result<Runner> {
        if !self.worker {
            return Ok(Runner::local(progress));
        }
        let Some(name) = self.sweep.as_deref() else {
            bail!("--worker needs --sweep NAME");
        };
        let store = open(self.storage.as_deref())?;
        let run = SweepRun::worker(store, name, &command, self.lease)?;
        eprintln!("worker {} joined sweep `{name}`", run.worker_id());
        Ok(Runner::sweep(progress, run))
    }
}

/// Say what this worker computed.
pub fn done(runner: &Runner) {
    if let Some(s) = runner.sweep_run().filter(|s| !s.worker_id().is_empty()) {
        eprintln!(
            "worker {} computed {} runs of sweep `{}`",
            s.worker_id(),
            s.computed(),
            s.name()
        );
    }
}

/// The sweeps' database a storage flag (or the environment) names.
pub fn open(flag: Option<&str>) -> Result<SweepStore> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let Some(url) = flag
        .map(str::to_string)
        .or_else(|| env("AGORA_STORAGE"))
        .or_else(|| env("AGORA_DB"))
    else {
        bail!(
            "invalid `storage`: a sweep needs a PostgreSQL database: give --storage \
             postgresql://user:password@host:port/database (or set AGORA_STORAGE)"
        );
    };
    let url = super::study::storage_url(Some(&url))?;
    Ok(SweepStore::open(&url)?)
}

/// A duration: a number and a unit (`ms`, `s`, `m`, `h`), e.g. `30s`, `500ms`, `2m`.
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ms" => 1e-3,
        "s" | "" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        u => {
            return Err(format!(
                "unknown unit `{u}`; allowed: ms, s, m, h (e.g. 30s)"
            ));
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration; e.g. 30s, 500ms, 2m"))?;
    let secs = v * scale;
    if !(0.1..=86_400.0).contains(&secs) {
        return Err(format!("must be between 100ms and 24h, got {s}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_units_and_bad_ones_say_why() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        assert!(
            parse_duration("3 weeks")
                .unwrap_err()
                .contains("allowed: ms, s, m, h")
        );
        assert!(
            parse_duration("10ms")
                .unwrap_err()
                .contains("between 100ms")
        );
        assert!(parse_duration("s").unwrap_err().contains("not a duration"));
    }
}
