//! `agora report DIR`: rebuild reports from the runs `agora reproduce` saved, without
//! running anything; `agora report --sweep NAME DIR`: assemble a sweep's report from the
//! runs its workers stored, without running anything either.

use agora_experiments::Runner;
use agora_experiments::sweep::{SweepCommand, SweepRun};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `agora report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A suite's output folder (with `suite.json`), or the output folder of `agora
    /// reproduce` (one sub-folder per suite); with --sweep, the folder to write the sweep's
    /// files into.
    #[arg(default_value = "out/reproduce")]
    pub dir: PathBuf,
    /// Assemble the report of this sweep from the runs its workers stored (every run must
    /// be done; nothing is computed): the files its command writes on one machine.
    #[arg(long, value_name = "NAME")]
    pub sweep: Option<String>,
    /// The sweep's database (postgresql://...). Default: $AGORA_STORAGE, else $AGORA_DB.
    #[arg(long, value_name = "URL", requires = "sweep")]
    pub storage: Option<String>,
}

/// Rebuild every report under the folder (or assemble the sweep's) and say where they are.
pub fn run(args: ReportArgs) -> Result<()> {
    if let Some(name) = args.sweep.as_deref() {
        let store = super::sweep::open(args.storage.as_deref())?;
        let (reader, command) = SweepRun::reader(store, name)?;
        let runner = Runner::sweep(false, reader);
        match command {
            SweepCommand::Run { spec } => super::run::write(&spec, &runner, &args.dir)?,
            SweepCommand::Reproduce { suite, quick } => {
                super::reproduce::write(suite.as_deref(), quick, &runner, &args.dir)?
            }
        }
        return Ok(());
    }
    for path in agora_experiments::suites::rebuild(&args.dir)? {
        println!("rebuilt {}", path.display());
    }
    Ok(())
}
