//! Summaries (mean ± standard error over seeds), tables, files and SVG regret plots.

use crate::grid::Record;
use agora_core::{Error, Result};
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::stats::{mean_se, median};

/// Results of one method on one problem over its seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Problem.
    pub problem: String,
    /// Method.
    pub method: String,
    /// Seeds run.
    pub seeds: usize,
    /// Evaluations per run.
    pub budget: usize,
    /// Final simple regret, mean over seeds.
    pub final_regret_mean: f64,
    /// Its standard error.
    pub final_regret_se: f64,
    /// Mean regret after each evaluation.
    pub regret_mean: Vec<f64>,
    /// Standard error of the regret after each evaluation.
    pub regret_se: Vec<f64>,
    /// Median wall seconds per query (`ask` + `tell`).
    pub median_ask_seconds: f64,
}

/// Summarize records by (problem, method), in first-appearance order.
pub fn summarize(records: &[Record]) -> Vec<Summary> {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut groups: BTreeMap<(String, String), BTreeMap<u64, Vec<&Record>>> = BTreeMap::new();
    for r in records {
        let key = (r.problem.clone(), r.method.clone());
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups
            .entry(key)
            .or_default()
            .entry(r.seed)
            .or_default()
            .push(r);
    }
    order
        .into_iter()
        .map(|key| {
            let runs = &groups[&key];
            let budget = runs.values().map(|v| v.len()).max().unwrap_or(0);
            let mut regret_mean = Vec::with_capacity(budget);
            let mut regret_se = Vec::with_capacity(budget);
            for t in 0..budget {
                // A run shorter than the budget keeps its last regret.
                let at: Vec<f64> = runs
                    .values()
                    .filter_map(|v| v.get(t).or(v.last()).map(|r| r.regret))
                    .collect();
                let (m, s) = mean_se(&at);
                regret_mean.push(m);
                regret_se.push(s);
            }
            let finals: Vec<f64> = runs
                .values()
                .filter_map(|v| v.last().map(|r| r.regret))
                .collect();
            let (fm, fs) = mean_se(&finals);
            let asks: Vec<f64> = runs
                .values()
                .flatten()
                .map(|r| r.ask_seconds + r.tell_seconds)
                .collect();
            Summary {
                problem: key.0.clone(),
                method: key.1.clone(),
                seeds: runs.len(),
                budget,
                final_regret_mean: fm,
                final_regret_se: fs,
                regret_mean,
                regret_se,
                median_ask_seconds: median(&asks),
            }
        })
        .collect()
}

/// A markdown table of final regrets, one row per (problem, method).
pub fn markdown_table(summaries: &[Summary]) -> String {
    let mut s = String::from(
        "| problem | method | seeds | budget | final regret (mean ± SE) | median ms / query |\n|---|---|---|---|---|---|\n",
    );
    for m in summaries {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.4} ± {:.4} | {:.2} |",
            m.problem,
            m.method,
            m.seeds,
            m.budget,
            m.final_regret_mean,
            m.final_regret_se,
            m.median_ask_seconds * 1e3
        );
    }
    s
}

fn io(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::invalid("out", format!("cannot write {}: {e}", path.display()))
}

/// Write `contents` to `path`, creating parent folders.
pub fn write_file(path: &Path, contents: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    std::fs::write(path, contents).map_err(|e| io(path, e))
}

/// Write `value` as pretty JSON to `path` (creating its folder).
pub fn write_json<T: serde::Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let json = serde_json::to_string_pretty(value).map_err(|e| Error::Numerical(e.to_string()))?;
    write_file(path, &json)
}

/// Write `records.jsonl`, `records.csv`, `summary.json`, `summary.md` and one
/// `regret_<problem>.svg` per problem into `dir`. Returns the files written.
pub fn write_outputs(dir: &Path, records: &[Record], summaries: &[Summary]) -> Result<Vec<String>> {
    let mut files = Vec::new();
    let mut jsonl = String::new();
    let mut csv = String::from(
        "method,problem,seed,iter,answer,recommended_f,regret,ask_seconds,tell_seconds,points\n",
    );
    for r in records {
        jsonl.push_str(&serde_json::to_string(r).map_err(|e| Error::Numerical(e.to_string()))?);
        jsonl.push('\n');
        let fmt = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x}"))
                .collect::<Vec<_>>()
                .join(";")
        };
        let pts: Vec<String> = r.points.iter().map(|p| fmt(p)).collect();
        let _ = writeln!(
            csv,
            "{},{},{},{},\"{}\",{},{},{},{},\"{}\"",
            r.method,
            r.problem,
            r.seed,
            r.iter,
            fmt(&r.answer),
            r.recommended_f,
            r.regret,
            r.ask_seconds,
            r.tell_seconds,
            pts.join("|")
        );
    }
    for (name, body) in [
        ("records.jsonl", jsonl),
        ("records.csv", csv),
        (
            "summary.json",
            serde_json::to_string_pretty(summaries).map_err(|e| Error::Numerical(e.to_string()))?,
        ),
        ("summary.md", markdown_table(summaries)),
    ] {
        write_file(&dir.join(name), &body)?;
        files.push(name.to_string());
    }
    let mut problems: Vec<&str> = Vec::new();
    for s in summaries {
        if !problems.contains(&s.problem.as_str()) {
            problems.push(&s.problem);
        }
    }
    for p in problems {
        let name = format!("regret_{p}.svg");
        let of: Vec<&Summary> = summaries.iter().filter(|s| s.problem == p).collect();
        plot_regret(&dir.join(&name), &format!("simple regret on {p}"), &of)?;
        files.push(name);
    }
    Ok(files)
}

/// Distinguishable line colours (matplotlib's tab10).
/// An SVG plot of mean simple regret (log scale) with ± SE bands, one line per method.
pub fn plot_regret(path: &Path, title: &str, summaries: &[&Summary]) -> Result<()> {
    let budget = summaries.iter().map(|s| s.budget).max().unwrap_or(1).max(2);
    let floor = 1e-6;
    let vals = summaries
        .iter()
        .flat_map(|s| s.regret_mean.iter().cloned())
        .filter(|v| v.is_finite());
    let (mut lo, mut hi) = vals.fold((f64::INFINITY, 0.0f64), |(l, h), v| {
        (l.min(v.max(floor)), h.max(v))
    });
    if !lo.is_finite() || hi <= 0.0 {
        lo = floor;
        hi = 1.0;
    }
    if hi <= lo {
        hi = lo * 10.0;
    }
    let err = |e: &dyn std::fmt::Display| io(path, e);
    agora_study::chart::ensure_fonts();
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(1f64..budget as f64, (lo * 0.8..hi * 1.25).log_scale())
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("evaluations")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.2e}"))
        .y_desc("simple regret (mean ± SE)")
        .draw()
        .map_err(|e| err(&e))?;
    for (k, s) in summaries.iter().enumerate() {
        let color = agora_study::chart::TAB10[k % agora_study::chart::TAB10.len()].to_rgba();
        // Queries before a method's first recommendation (e.g. DSBO's Hessian queries)
        // have no regret: its line starts at the first one.
        let pts = |sign: f64| -> Vec<(f64, f64)> {
            s.regret_mean
                .iter()
                .zip(&s.regret_se)
                .enumerate()
                .filter(|(_, (m, _))| m.is_finite())
                .map(|(i, (m, e))| {
                    let e = if e.is_finite() { *e } else { 0.0 };
                    ((i + 1) as f64, (m + sign * e).max(lo * 0.8))
                })
                .collect()
        };
        let mut band = pts(1.0);
        band.extend(pts(-1.0).into_iter().rev());
        chart
            .draw_series(std::iter::once(Polygon::new(
                band,
                color.mix(0.15).filled(),
            )))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(LineSeries::new(pts(0.0), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(s.method.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
