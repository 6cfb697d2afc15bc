//! One module per subcommand; `main` parses and dispatches.

use anyhow::{Context, Result};
use std::path::Path;

pub mod bench;
pub mod list;
pub mod report;
pub mod reproduce;
pub mod run;
pub mod serve;
pub mod study;
pub mod sweep;

pub(crate) fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> Result<()> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(path, serde_json::to_string_pretty(v)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Print a benchmark table and, when asked, write its rows as JSON.
pub(crate) fn emit<T: serde::Serialize>(table: &str, rows: &T, json: Option<&Path>) -> Result<()> {
    println!("{table}");
    match json {
        Some(p) => write_json(p, rows),
        None => Ok(()),
    }
}
