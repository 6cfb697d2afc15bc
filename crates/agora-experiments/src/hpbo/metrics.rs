//! The metrics of the HPBO suite (note §6.3) and their summaries over seeds: mean ± SE
//! curves per round, and per-seed values for the paired verdicts of the report.

use super::HpboRecord;
use crate::stats::{mean_se, median};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The metrics summarized and plotted, with their record accessor.
pub const METRICS: [(&str, &str); 8] = [
    (
        "ra_cum_regret",
        "risk-averse cumulative regret (rho = 3 f(x_max))",
    ),
    ("cum_regret", "cumulative regret (rho = 0)"),
    ("ra_regret", "risk-averse simple regret"),
    ("regret", "simple regret (rho = 0)"),
    ("best_f", "best value found"),
    ("best_mv", "risk-averse best value found"),
    ("noise_var", "true noise variance at the query"),
    ("noise_var_est", "inferred noise variance at the query"),
];

/// The value of metric `name` (one of [`METRICS`]) in a record; NaN for another name.
pub fn metric(r: &HpboRecord, name: &str) -> f64 {
    match name {
        "ra_cum_regret" => r.ra_cum_regret,
        "cum_regret" => r.cum_regret,
        "ra_regret" => r.ra_regret,
        "regret" => r.regret,
        "best_f" => r.best_f,
        "best_mv" => r.best_mv,
        "noise_var" => r.noise_var,
        "noise_var_est" => r.noise_var_est,
        _ => f64::NAN,
    }
}

/// Mean ± SE of every metric per round for one (experiment, problem, method).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HpboSummary {
    /// Experiment.
    pub experiment: String,
    /// Problem.
    pub problem: String,
    /// Method label.
    pub method: String,
    /// Seeds.
    pub seeds: usize,
    /// Metric name → (mean per round, SE per round).
    pub curves: Vec<(String, Vec<f64>, Vec<f64>)>,
    /// Mean over seeds of the per-run mean noise variance at the queries.
    pub mean_noise_var: (f64, f64),
    /// Median wall seconds per round.
    pub median_seconds: f64,
}

impl HpboSummary {
    /// Final (last-round) mean and SE of a metric.
    pub fn last(&self, name: &str) -> (f64, f64) {
        self.curves
            .iter()
            .find(|c| c.0 == name)
            .and_then(|c| Some((*c.1.last()?, *c.2.last()?)))
            .unwrap_or((f64::NAN, f64::NAN))
    }
}

/// Summaries in first-appearance order of (experiment, problem, method).
pub fn summarize(records: &[HpboRecord]) -> Vec<HpboSummary> {
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in records {
        let k = (r.experiment.clone(), r.problem.clone(), r.method.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(e, p, m)| {
            let rs: Vec<&HpboRecord> = records
                .iter()
                .filter(|r| r.experiment == e && r.problem == p && r.method == m)
                .collect();
            let mut seeds: Vec<u64> = rs.iter().map(|r| r.seed).collect();
            seeds.sort_unstable();
            seeds.dedup();
            let iters = rs.iter().map(|r| r.iter).max().unwrap_or(0);
            let curves = METRICS
                .iter()
                .map(|(name, _)| {
                    let (mut ms, mut ses) = (Vec::new(), Vec::new());
                    for t in 1..=iters {
                        let v: Vec<f64> = rs
                            .iter()
                            .filter(|r| r.iter == t)
                            .map(|r| metric(r, name))
                            .collect();
                        let (mm, se) = mean_se(&v);
                        ms.push(mm);
                        ses.push(se);
                    }
                    (name.to_string(), ms, ses)
                })
                .collect();
            let per_run: Vec<f64> = mean_noise_per_seed(records, &e, &p, &m)
                .into_values()
                .collect();
            let secs: Vec<f64> = rs.iter().map(|r| r.seconds).collect();
            HpboSummary {
                experiment: e,
                problem: p,
                method: m,
                seeds: seeds.len(),
                curves,
                mean_noise_var: mean_se(&per_run),
                median_seconds: median(&secs),
            }
        })
        .collect()
}

/// The records of one run group, by seed (each seed's records in round order).
fn by_seed<'a>(
    records: &'a [HpboRecord],
    experiment: &str,
    problem: &str,
    method: &str,
) -> BTreeMap<u64, Vec<&'a HpboRecord>> {
    let mut out: BTreeMap<u64, Vec<&HpboRecord>> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.experiment == experiment && r.problem == problem && r.method == method)
    {
        out.entry(r.seed).or_default().push(r);
    }
    out
}

/// Per seed, the last round's value of metric `name` for one (experiment, problem,
/// method); seeds in increasing order.
pub fn final_per_seed(
    records: &[HpboRecord],
    experiment: &str,
    problem: &str,
    method: &str,
    name: &str,
) -> BTreeMap<u64, f64> {
    by_seed(records, experiment, problem, method)
        .into_iter()
        .filter_map(|(s, rs)| Some((s, metric(rs.iter().max_by_key(|r| r.iter)?, name))))
        .collect()
}

/// Per seed, the run's mean true noise variance at its queries (Figs. S1/S2).
pub fn mean_noise_per_seed(
    records: &[HpboRecord],
    experiment: &str,
    problem: &str,
    method: &str,
) -> BTreeMap<u64, f64> {
    by_seed(records, experiment, problem, method)
        .into_iter()
        .map(|(s, rs)| {
            let v: Vec<f64> = rs.iter().map(|r| r.noise_var).collect();
            (s, v.iter().sum::<f64>() / v.len().max(1) as f64)
        })
        .collect()
}
