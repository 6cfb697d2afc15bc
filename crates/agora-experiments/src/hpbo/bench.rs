//! `agora bench hpbo`: wall time per acquisition round.

use super::{HpboMethod, HpboRecord, run_one};
use crate::stats::{mean_se, median};
use crate::table::Table;
use agora_core::Result;
use agora_problems::HpboProblem;
use serde::{Deserialize, Serialize};

/// One row of `agora bench hpbo`: median wall seconds of one acquisition round (`ask` +
/// `tell`: noise model, hyperparameter refit when due, Gibbs hallucination, acquisition
/// maximization) at round `t`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HpboBenchRow {
    /// Problem.
    pub problem: String,
    /// Method label.
    pub method: String,
    /// Acquisition round.
    pub t: usize,
    /// Duels in the model after the round (initial ones included).
    pub duels: usize,
    /// Median over seeds of the round's wall seconds.
    pub seconds: f64,
    /// Mean over seeds of the wall seconds of rounds `t − 2 ..= t + 2` (refits every 5 duels
    /// land in this window).
    pub window_mean_seconds: f64,
}

/// `agora bench hpbo`: per-round wall time at rounds 10, 50 and 100, every method on every
/// problem of the main experiment, `seeds` seeds, run one after another (no other load).
pub fn bench(seeds: u64) -> Result<Vec<HpboBenchRow>> {
    let mut rows = Vec::new();
    for problem in ["sine1d", "branin2d", "hartmann4d"] {
        let d = HpboProblem::by_name(problem)?.dim();
        for acq in ["rahbo", "anpei", "ei", "ucb"] {
            let m = HpboMethod::new(acq, "hb", "loo");
            let runs: Vec<Vec<HpboRecord>> = (0..seeds)
                .map(|s| run_one("bench", &m, problem, s, 102))
                .collect::<Result<_>>()?;
            for t in [10usize, 50, 100] {
                let at: Vec<f64> = runs.iter().map(|r| r[t - 1].seconds).collect();
                let win: Vec<f64> = runs
                    .iter()
                    .flat_map(|r| r[t - 3..t + 2].iter().map(|x| x.seconds))
                    .collect();
                rows.push(HpboBenchRow {
                    problem: problem.into(),
                    method: m.label.clone(),
                    t,
                    duels: 2 * d + 2 + t,
                    seconds: median(&at),
                    window_mean_seconds: mean_se(&win).0,
                });
            }
        }
    }
    Ok(rows)
}

/// The table of [`bench()`].
pub fn bench_table(rows: &[HpboBenchRow]) -> String {
    let mut t = Table::new(&[
        "problem",
        "method",
        "round t",
        "duels",
        "median s/round",
        "mean s/round (t±2)",
    ]);
    for r in rows {
        t.row([
            r.problem.clone(),
            r.method.clone(),
            r.t.to_string(),
            r.duels.to_string(),
            format!("{:.4}", r.seconds),
            format!("{:.4}", r.window_mean_seconds),
        ]);
    }
    t.markdown()
}
