//! The figures of the HPBO suite: one mean ± SE plot per (experiment, problem, metric).

use super::{HpboExperiment, HpboSummary, METRICS};
use agora_core::Result;
use std::path::Path;

/// Write every figure of `exps` into `dir` (SVG and PNG); returns the file names.
pub fn figures(dir: &Path, exps: &[HpboExperiment], sums: &[HpboSummary]) -> Result<Vec<String>> {
    let mut figs = Vec::new();
    for e in exps {
        for p in &e.problems {
            let of: Vec<&HpboSummary> = sums
                .iter()
                .filter(|s| s.experiment == e.name && &s.problem == p)
                .collect();
            for (name, desc) in METRICS {
                let series: Vec<(String, Vec<f64>, Vec<f64>)> = of
                    .iter()
                    .filter_map(|s| {
                        let c = s.curves.iter().find(|c| c.0 == name)?;
                        Some((s.method.clone(), c.1.clone(), c.2.clone()))
                    })
                    .collect();
                let stem = format!("{}_{}_{}", e.name, p, name);
                figs.extend(crate::curves::plot(
                    dir,
                    &stem,
                    &format!("{p} ({})", e.name),
                    desc,
                    &series,
                )?);
            }
        }
    }
    Ok(figs)
}
