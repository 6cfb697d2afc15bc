//! `agora reproduce [SUITE] [--quick]`: the papers' experiments, and BOAP on a pool CSV.

use super::sweep::SweepArgs;
use agora_experiments::Runner;
use agora_experiments::sweep::SweepCommand;
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};

/// Arguments of `agora reproduce`.
#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Suite name (see `agora list`).
    pub suite: Option<String>,
    /// A small version of every grid, for a check in minutes.
    #[arg(long)]
    pub quick: bool,
    /// Output folder.
    #[arg(long, default_value = "out/reproduce")]
    pub out: PathBuf,
    /// `boap` only: also run the BOAP pipeline on a pool of designs from this CSV file
    /// (header row, numeric columns; BO picks rows, the expert compares property columns).
    #[arg(long)]
    pub pool: Option<PathBuf>,
    /// The pool's objective column (maximized).
    #[arg(long, requires = "pool")]
    pub objective: Option<String>,
    /// A pool column the simulated expert compares (repeat for several properties).
    #[arg(long = "property", requires = "pool")]
    pub properties: Vec<String>,
    /// Initial rows and total evaluations on the pool (the paper: 4 and 54).
    #[arg(long, requires = "pool", num_args = 2, value_names = ["INIT", "TOTAL"])]
    pub pool_budget: Option<Vec<usize>>,
    /// Sharing the suites' runs with other workers.
    #[command(flatten)]
    pub sweep: SweepArgs,
}

/// Run the suite(s), or BOAP on a pool when `--pool` is given.
pub fn run(args: ReproduceArgs, progress: bool) -> Result<()> {
    let ReproduceArgs {
        suite,
        quick,
        out,
        pool,
        objective,
        properties,
        pool_budget,
        sweep,
    } = args;
    if let Some(path) = pool {
        if sweep.worker {
            return Err(agora_core::Error::invalid(
                "pool",
                "a pool file is local to one machine: run BOAP on a pool without --worker",
            )
            .into());
        }
        if suite.as_deref() != Some("boap") {
            return Err(agora_core::Error::invalid(
                "pool",
                "a pool file goes with the boap suite: agora reproduce boap --pool FILE ...",
            )
            .into());
        }
        let objective = objective.ok_or_else(|| {
            agora_core::Error::invalid("objective", "name the pool's objective column")
        })?;
        if properties.is_empty() {
            return Err(agora_core::Error::invalid(
                "property",
                "name at least one property column (--property COLUMN)",
            )
            .into());
        }
        let cols = agora_problems::boap::PoolColumns {
            objective,
            properties,
            inputs: None,
        };
        let pool = agora_problems::boap::Pool::load_csv(&path, &cols)?;
        let (init, total) = match pool_budget.as_deref() {
            Some([i, t]) => (*i, *t),
            _ => (4, 54),
        };
        if init < 2 || total <= init || total > pool.len() {
            return Err(agora_core::Error::invalid(
                "pool_budget",
                format!(
                    "needs 2 <= INIT < TOTAL <= rows ({}), got {init} {total}",
                    pool.len()
                ),
            )
            .into());
        }
        let name = path
            .file_stem()
            .map_or("pool".into(), |s| s.to_string_lossy().to_string());
        let task = agora_experiments::boap::Task::Pool(name, Box::new(pool), init, total);
        agora_experiments::boap::reproduce(
            quick,
            &out.join("boap"),
            &Runner::local(progress),
            vec![task],
        )?;
        println!("report in {}/boap/report.md", out.display());
        return Ok(());
    }
    if let Some(name) = suite.as_deref() {
        let names = agora_experiments::suites::suite_names();
        if !names.contains(&name) {
            return Err(agora_core::Error::unknown("suite", name, &names).into());
        }
    }
    let runner = sweep.runner(
        progress,
        SweepCommand::Reproduce {
            suite: suite.clone(),
            quick,
        },
    )?;
    write(suite.as_deref(), quick, &runner, &out)?;
    super::sweep::done(&runner);
    Ok(())
}

/// Run (or, in a sweep, gather) the suite(s) and write their reports under `out`.
pub fn write(suite: Option<&str>, quick: bool, runner: &Runner, out: &Path) -> Result<()> {
    let results = agora_experiments::suites::reproduce(suite, quick, out, runner)?;
    for (name, sums) in &results {
        if sums.is_empty() {
            println!("## {name}: see {}/{name}/report.md", out.display());
        } else {
            println!(
                "## {name}\n\n{}",
                agora_experiments::report::markdown_table(sums)
            );
        }
    }
    println!("reports in {}/report.md", out.display());
    Ok(())
}
