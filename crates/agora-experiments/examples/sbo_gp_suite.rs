//! The GP-variant part of `agora reproduce sbo` alone, on chosen tasks, with each method's
//! cumulative regret and SBO-GP's verdict against every baseline (paired by seed, the
//! report's rule):
//!
//! `cargo run --release -p agora-experiments --example sbo_gp_suite -- <runs.json> [seeds] [rounds] [task ...]`
//!
//! Defaults: 10 seeds, 60 rounds, tasks toy, thermal and toy-egalitarian. The runs are written
//! to `<runs.json>` (the report's `SboRun` records) before the table is printed.
use agora_core::{Error, Result};
use agora_experiments::sbo::{SboRun, run_gp_one};
use agora_experiments::stats::{Better, mean_se, pm, verdict_by_seed};
use agora_methods::SboGpVariant;
use agora_problems::social::SocialTask;
use rayon::prelude::*;
use std::collections::BTreeMap;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = args
        .first()
        .ok_or_else(|| Error::invalid("runs.json", "name the file the runs are written to"))?;
    let number = |k: usize, default: usize| -> Result<usize> {
        args.get(k).map_or(Ok(default), |s| {
            s.parse()
                .map_err(|_| Error::invalid("seeds/rounds", format!("a count, got {s}")))
        })
    };
    let (seeds, rounds) = (number(1, 10)?, number(2, 60)?);
    let names: Vec<String> = if args.len() > 3 {
        args[3..].to_vec()
    } else {
        ["toy", "thermal", "toy-egalitarian"]
            .map(String::from)
            .to_vec()
    };
    let tasks: Vec<SocialTask> = names
        .iter()
        .map(|n| SocialTask::by_name(n))
        .collect::<Result<_>>()?;
    let jobs: Vec<(usize, SboGpVariant, u64)> = (0..tasks.len())
        .flat_map(|t| {
            SboGpVariant::all()
                .into_iter()
                .flat_map(move |v| (0..seeds as u64).map(move |s| (t, v, s)))
        })
        .collect();
    let runs: Vec<SboRun> = jobs
        .par_iter()
        .map(|&(t, v, s)| run_gp_one(&tasks[t], v, s, rounds))
        .collect::<Result<_>>()?;
    let json = serde_json::to_string(&runs).map_err(|e| Error::invalid("runs", e.to_string()))?;
    std::fs::write(out, json).map_err(|e| Error::invalid("runs.json", e.to_string()))?;
    let cumulative = |task: &str, method: &str| -> BTreeMap<u64, f64> {
        runs.iter()
            .filter(|r| r.task == task && r.method == method)
            .map(|r| (r.seed, r.regret.iter().sum()))
            .collect()
    };
    for t in &tasks {
        println!(
            "\n{} ({seeds} seeds, {rounds} rounds): cumulative regret",
            t.name
        );
        let sbo = cumulative(&t.name, "sbo-gp");
        for v in SboGpVariant::all() {
            let c = cumulative(&t.name, v.name());
            let (m, se) = mean_se(&c.values().copied().collect::<Vec<_>>());
            let private: Vec<f64> = runs
                .iter()
                .filter(|r| r.task == t.name && r.method == v.name())
                .map(|r| *r.private.last().unwrap_or(&0) as f64)
                .collect();
            let (pm_, ps) = mean_se(&private);
            let versus = if v == SboGpVariant::SboGp {
                String::new()
            } else {
                let j = verdict_by_seed(&sbo, &c, Better::Lower)?;
                format!("  sbo-gp beats it: {} {}", j.verdict.label(), j.describe(3))
            };
            println!(
                "  {:<13} {}  private {}{versus}",
                v.name(),
                pm(m, se, 3),
                pm(pm_, ps, 1)
            );
        }
    }
    Ok(())
}
