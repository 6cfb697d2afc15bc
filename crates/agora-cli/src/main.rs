//! `agora`: reproduce papers' experiments, run method × problem grids, benchmark, and run
//! studies with people. Each subcommand lives in its own module under `cmd/`.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use std::io::IsTerminal;

mod cmd;

#[derive(Parser)]
#[command(
    name = "agora",
    version,
    about = "Bayesian optimization with people and agents in the loop"
)]
struct Cli {
    /// Worker threads for grids (default: all cores). Results do not depend on it.
    #[arg(long, global = true)]
    threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Reproduce a paper's experiments (all suites when no name is given).
    Reproduce(cmd::reproduce::ReproduceArgs),
    /// Rebuild reports from the runs `reproduce` saved (no runs are repeated).
    Report(cmd::report::ReportArgs),
    /// Run a method × problem × seed grid.
    Run(cmd::run::RunArgs),
    /// Benchmarks side by side with the Python anchors.
    Bench {
        #[command(subcommand)]
        which: cmd::bench::Bench,
    },
    /// List methods, problems and reproduce suites.
    List,
    /// Studies with people: study create/list/tokens, ask, tell, status, best, export, plot.
    #[command(flatten)]
    Live(cmd::study::LiveCommand),
    /// Serve the HTTP API and the web page (loopback by default); `--demo` seeds a meeting.
    Serve(cmd::serve::ServeArgs),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    if let Some(t) = cli.threads {
        if t == 0 {
            bail!("--threads must be at least 1");
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build_global()
            .context("configuring threads")?;
    }
    let progress = std::io::stderr().is_terminal();
    match cli.command {
        Command::Reproduce(args) => cmd::reproduce::run(args, progress),
        Command::Report(args) => cmd::report::run(args),
        Command::Run(args) => cmd::run::run(args, progress),
        Command::Bench { which } => cmd::bench::run(which, progress),
        Command::List => {
            cmd::list::run();
            Ok(())
        }
        Command::Live(c) => cmd::study::execute(c, &mut std::io::stdout().lock()),
        Command::Serve(args) => cmd::serve::run(args),
    }
}
