//! `agora report DIR`: rebuild reports from the runs `agora reproduce` saved, without
//! running anything.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `agora report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A suite's output folder (with `suite.json`), or the output folder of `agora
    /// reproduce` (one sub-folder per suite).
    #[arg(default_value = "out/reproduce")]
    pub dir: PathBuf,
}

/// Rebuild every report under the folder and say where they are.
pub fn run(args: ReportArgs) -> Result<()> {
    for path in agora_experiments::suites::rebuild(&args.dir)? {
        println!("rebuilt {}", path.display());
    }
    Ok(())
}
