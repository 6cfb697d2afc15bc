//! `agora run`: a method × problem × seed grid on test functions, here or as one worker of
//! a sweep (`--worker --sweep NAME`).

use super::sweep::SweepArgs;
use agora_experiments::sweep::SweepCommand;
use agora_experiments::{RunSpec, Runner};
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};

/// Arguments of `agora run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Comma-separated methods (see `agora list`).
    #[arg(long, value_delimiter = ',', default_value = "random,gp-logei")]
    pub methods: Vec<String>,
    /// Comma-separated problems (see `agora list`).
    #[arg(long, value_delimiter = ',', default_value = "branin")]
    pub problems: Vec<String>,
    /// Number of seeds (0..N).
    #[arg(long, default_value_t = 5)]
    pub seeds: u64,
    /// Evaluations per run.
    #[arg(long, default_value_t = 40)]
    pub budget: usize,
    /// Standard deviation of Gaussian observation noise.
    #[arg(long, default_value_t = 0.0)]
    pub noise: f64,
    /// Output folder (records, summary, plots).
    #[arg(long, default_value = "out/run")]
    pub out: PathBuf,
    /// Sharing the grid with other workers.
    #[command(flatten)]
    pub sweep: SweepArgs,
}

/// Run the grid (here, or as a worker of a sweep) and write records, summary and plots.
pub fn run(args: RunArgs, progress: bool) -> Result<()> {
    let RunArgs {
        methods,
        problems,
        seeds,
        budget,
        noise,
        out,
        sweep,
    } = args;
    let spec = RunSpec {
        methods,
        problems,
        seeds: (0..seeds).collect(),
        budget,
        noise_std: noise,
    };
    spec.validate()?;
    let runner = sweep.runner(progress, SweepCommand::Run { spec: spec.clone() })?;
    write(&spec, &runner, &out)?;
    super::sweep::done(&runner);
    Ok(())
}

/// Run (or, in a sweep, gather) the grid's runs and write records, summary and plots into
/// `out`.
pub fn write(spec: &RunSpec, runner: &Runner, out: &Path) -> Result<()> {
    let records = agora_experiments::run_grid(spec, runner)?;
    let sums = agora_experiments::report::summarize(&records);
    let files = agora_experiments::report::write_outputs(out, &records, &sums)?;
    println!("{}", agora_experiments::report::markdown_table(&sums));
    println!("wrote {} in {}", files.join(", "), out.display());
    Ok(())
}
