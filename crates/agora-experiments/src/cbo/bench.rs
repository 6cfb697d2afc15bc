//! `agora bench cbo` (Hartmann-6d rounds against the authors' timing) and
//! `agora bench cbo-traffic` (the two exact graph searches on full traffic runs).

use super::hartmann::{CboVariant, REFERENCE, SEEDS, run_one};
use super::metrics::{CboRun, summarize};
use super::report::pm3;
use super::traffic::{TRAFFIC_SEEDS, TRAFFIC_T, WorstCase, run_traffic_with, traffic_worst_case};
use crate::stats::mean_se;
use crate::table::Table;
use agora_core::Result;
use agora_methods::GraphSearch;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// One row of `agora bench cbo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CboBenchRow {
    /// Variant.
    pub variant: String,
    /// Runs (sequential, nothing else running).
    pub runs: usize,
    /// Mean wall seconds per model-based round (joint 18-D acquisition), mean ± SE over runs.
    pub round_seconds: (f64, f64),
    /// The authors' 1.75 s divided by agora's mean.
    pub speedup_vs_authors: f64,
    /// R_T/n, mean ± SE.
    pub r_over_n: (f64, f64),
    /// The authors' R_T/n (re-run here), mean ± SE.
    pub authors_r_over_n: (f64, f64),
}

/// The authors' mean wall seconds per BO round (both ρ, docs/anchors/RESULTS-collaborative-bo.md).
pub const AUTHORS_ROUND_SECONDS: f64 = 1.75;

/// `agora bench cbo`: Hartmann-6d rounds at ρ = 1 and 0.2, `runs` seeds each, one run at
/// a time.
pub fn bench(runs: usize) -> Result<Vec<CboBenchRow>> {
    let mut rows = Vec::new();
    for (rho, refs) in REFERENCE {
        let v = CboVariant::new(rho, false, false);
        let rs: Vec<CboRun> = SEEDS[..runs.min(SEEDS.len())]
            .iter()
            .map(|s| run_one(&v, *s))
            .collect::<Result<_>>()?;
        let sums = summarize(&rs);
        let s = &sums[0];
        rows.push(CboBenchRow {
            variant: v.label.clone(),
            runs: rs.len(),
            round_seconds: s.round_seconds,
            speedup_vs_authors: AUTHORS_ROUND_SECONDS / s.round_seconds.0,
            r_over_n: s.r_over_n,
            authors_r_over_n: refs[0],
        });
    }
    Ok(rows)
}

/// The table of [`bench()`].
pub fn bench_table(rows: &[CboBenchRow]) -> String {
    let mut t = Table::new(&[
        "variant",
        "runs",
        "s / round",
        "authors s / round",
        "speed-up",
        "R_T/n",
        "authors R_T/n",
    ]);
    for r in rows {
        t.row([
            r.variant.clone(),
            r.runs.to_string(),
            pm3(r.round_seconds),
            AUTHORS_ROUND_SECONDS.to_string(),
            format!("{:.1}x", r.speedup_vs_authors),
            pm3(r.r_over_n),
            pm3(r.authors_r_over_n),
        ]);
    }
    t.markdown()
}

/// One row of `agora bench cbo-traffic`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficBenchRow {
    /// Variant.
    pub variant: String,
    /// Runs (sequential).
    pub runs: usize,
    /// Mean ms per model-based round with branch-and-bound (mean ± SE over runs).
    pub bnb_ms: (f64, f64),
    /// Mean ms per model-based round with exhaustive search (mean ± SE over runs).
    pub exhaustive_ms: (f64, f64),
    /// Mean candidate product per round.
    pub mean_batches: f64,
    /// Both searches chose the same batches in every round of every run.
    pub same_batches: bool,
}

/// `agora bench cbo-traffic`: full traffic runs (T = 60) at ρ = 1 and 0.4 with both exact
/// searches, `runs` seeds each, one run at a time, plus the `8^8` worst case.
pub fn bench_traffic(runs: usize) -> Result<(Vec<TrafficBenchRow>, WorstCase)> {
    let mut rows = Vec::new();
    for rho in [1.0, 0.4] {
        let (mut b, mut e, mut prods, mut same) = (Vec::new(), Vec::new(), Vec::new(), true);
        for &seed in &TRAFFIC_SEEDS[..runs.clamp(1, TRAFFIC_SEEDS.len())] {
            let rb = run_traffic_with(
                Some(rho),
                false,
                seed,
                TRAFFIC_T,
                GraphSearch::BranchAndBound,
            )?;
            let re = run_traffic_with(Some(rho), false, seed, TRAFFIC_T, GraphSearch::Exhaustive)?;
            same &= rb.f == re.f;
            let mean = |v: &[f64]| 1e3 * v.iter().sum::<f64>() / v.len().max(1) as f64;
            b.push(mean(&rb.round_seconds));
            e.push(mean(&re.round_seconds));
            prods.extend(rb.search_batches.iter().copied());
        }
        rows.push(TrafficBenchRow {
            variant: format!("rho={rho}"),
            runs: b.len(),
            bnb_ms: mean_se(&b),
            exhaustive_ms: mean_se(&e),
            mean_batches: prods.iter().sum::<f64>() / prods.len().max(1) as f64,
            same_batches: same,
        });
    }
    Ok((rows, traffic_worst_case()?))
}

/// The table of [`bench_traffic`].
pub fn bench_traffic_table(rows: &[TrafficBenchRow], worst: WorstCase) -> String {
    let mut t = Table::new(&[
        "variant",
        "runs",
        "ms / round, branch-and-bound",
        "ms / round, exhaustive",
        "exhaustive / bnb",
        "mean batches / round",
        "same batches",
    ]);
    for r in rows {
        t.row([
            r.variant.clone(),
            r.runs.to_string(),
            pm3(r.bnb_ms),
            pm3(r.exhaustive_ms),
            format!("{:.1}x", r.exhaustive_ms.0 / r.bnb_ms.0),
            format!("{:.0}", r.mean_batches),
            (if r.same_batches { "yes" } else { "NO" }).to_string(),
        ]);
    }
    let mut md = t.markdown();
    let (t_ex, t_bb, scored, total) = worst;
    let _ = writeln!(
        md,
        "\nWorst case, {total:.0} batches (8 parties × 8 candidates): exhaustive {:.1} ms, branch-and-bound {:.2} ms \
         ({:.0}x), {scored} batches scored; the same batch.",
        1e3 * t_ex,
        1e3 * t_bb,
        t_ex / t_bb
    );
    md
}
