//! `agora bench sbo`: time per Social BO iteration against the paper's bound (App. H.4).

use super::run::Method;
use super::run::{SboRun, run_one};
use crate::stats::{mean_se, pm};
use crate::table::Table;
use agora_core::Result;
use agora_methods::SboVariant;
use agora_problems::social::SocialTask;
use serde::{Deserialize, Serialize};

/// One row of `agora bench sbo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SboBenchRow {
    /// Round `t`.
    pub t: usize,
    /// Runs.
    pub runs: usize,
    /// Wall seconds of round `t` (mean ± SE over runs; the mean of rounds t−2..t+2 per run).
    pub seconds: (f64, f64),
    /// The paper's bound, "< 30 s at t = 50" on a 2019 laptop, divided by agora's mean.
    pub ratio_vs_paper: f64,
}

/// The paper's time per iteration at t = 50 (App. H.4: "< 30 s").
pub const PAPER_SECONDS_T50: f64 = 30.0;

/// `agora bench sbo`: SBO on thermal comfort (n = 3) for 52 rounds, `runs` seeds one at a
/// time; time per iteration at t = 10, 25, 50.
pub fn bench(runs: usize) -> Result<Vec<SboBenchRow>> {
    let task = SocialTask::by_name("thermal")?;
    let rs: Vec<SboRun> = (0..runs.max(1) as u64)
        .map(|s| {
            let sbo = Method {
                variant: SboVariant::Sbo,
                table5: false,
            };
            run_one(&task, &sbo, s, 52)
        })
        .collect::<Result<_>>()?;
    Ok([10usize, 25, 50]
        .iter()
        .map(|&t| {
            let per: Vec<f64> = rs
                .iter()
                .map(|r| {
                    let lo = t.saturating_sub(3);
                    let hi = (t + 2).min(r.seconds.len());
                    r.seconds[lo..hi].iter().sum::<f64>() / (hi - lo).max(1) as f64
                })
                .collect();
            let (m, se) = mean_se(&per);
            SboBenchRow {
                t,
                runs: rs.len(),
                seconds: (m, se),
                ratio_vs_paper: PAPER_SECONDS_T50 / m,
            }
        })
        .collect())
}

/// The table of [`bench()`].
pub fn bench_table(rows: &[SboBenchRow]) -> String {
    let mut table = Table::new(&[
        "t",
        "runs",
        "s / iteration (thermal, n = 3)",
        "paper's bound at t = 50 / agora",
    ]);
    for r in rows {
        table.row([
            r.t.to_string(),
            r.runs.to_string(),
            pm(r.seconds.0, r.seconds.1, 3),
            format!("{:.0}x", r.ratio_vs_paper),
        ]);
    }
    table.markdown()
}
