//! `agora run`: a method × problem × seed grid on test functions.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

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
}

/// Run the grid and write records, summary and plots.
pub fn run(args: RunArgs, progress: bool) -> Result<()> {
    let RunArgs {
        methods,
        problems,
        seeds,
        budget,
        noise,
        out,
    } = args;
    let spec = agora_experiments::RunSpec {
        methods,
        problems,
        seeds: (0..seeds).collect(),
        budget,
        noise_std: noise,
    };
    let records = agora_experiments::run_grid(&spec, progress)?;
    let sums = agora_experiments::report::summarize(&records);
    let files = agora_experiments::report::write_outputs(&out, &records, &sums)?;
    println!("{}", agora_experiments::report::markdown_table(&sums));
    println!("wrote {} in {}", files.join(", "), out.display());
    Ok(())
}
