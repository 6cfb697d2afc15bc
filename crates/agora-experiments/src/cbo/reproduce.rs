//! `agora reproduce cbo`: every experiment's grid in parallel, the runs and summaries, the
//! plots and the report.

use super::hartmann::{CboVariant, SEEDS, run_one, variants};
use super::metrics::CboRun;
use super::metrics::{CboSummary, summarize, summarize_with};
use super::report::report_markdown;
use super::task_report::{cnn_markdown, traffic_markdown, tuning_markdown, tuning50_markdown};
use super::traffic::{
    TRAFFIC_SEEDS, TRAFFIC_T, run_traffic_with, traffic_graph, traffic_worst_case,
};
use super::tuning::{CNN_T, TUNING_50_T, TUNING_PARTIES, TUNING_T, run_cnn, run_tuning_n};
use super::{rationality, traces};
use crate::report;
use crate::runner::Runner;
use agora_core::Result;
use agora_methods::GraphSearch;
use std::path::Path;
use std::time::Instant;

/// `(variant, seed)` jobs of a grid, variant-major.
fn grid<V: Copy>(variants: &[V], seeds: &[u64]) -> Vec<(V, u64)> {
    variants
        .iter()
        .flat_map(|v| seeds.iter().map(move |s| (*v, *s)))
        .collect()
}

/// A mean curve per summary (no SE band: the curves are means over runs).
fn series(
    sums: &[CboSummary],
    curve: fn(&CboSummary) -> &Vec<f64>,
) -> Vec<(String, Vec<f64>, Vec<f64>)> {
    sums.iter()
        .map(|s| {
            let c = curve(s).clone();
            let z = vec![0.0; c.len()];
            (s.variant.clone(), c, z)
        })
        .collect()
}

/// Run the grid (parallel over runs) and write the report into `dir`.
pub fn reproduce(quick: bool, dir: &Path, runner: &Runner) -> Result<Vec<CboSummary>> {
    let vs = variants(quick);
    let seeds: &[u64] = if quick { &SEEDS[..2] } else { &SEEDS };
    let vrefs: Vec<&CboVariant> = vs.iter().collect();
    let t0 = Instant::now();
    let runs = runner.run_parallel("cbo", &grid(&vrefs, seeds), |(v, s)| run_one(v, *s))?;
    // Tuning: five ρ with fixed c1, the four ρ < 1 with varying c1, and solo GP-UCB.
    let tune_rounds = if quick { 8 } else { TUNING_T };
    let rhos: &[f64] = if quick {
        &[1.0, 0.2]
    } else {
        &[1.0, 0.8, 0.6, 0.4, 0.2]
    };
    let mut tune_variants: Vec<(Option<f64>, bool)> =
        rhos.iter().map(|r| (Some(*r), false)).collect();
    tune_variants.extend(rhos.iter().filter(|r| **r < 1.0).map(|r| (Some(*r), true)));
    tune_variants.push((None, false));
    let tuning =
        runner.run_parallel("cbo tuning", &grid(&tune_variants, seeds), |((r, v), s)| {
            run_tuning_n(TUNING_PARTIES, *r, *v, *s, tune_rounds)
        })?;
    // Traffic: the same variants (cheap: milliseconds a round).
    let traffic_rounds = if quick { 20 } else { TRAFFIC_T };
    let traffic_seeds: &[u64] = if quick {
        &TRAFFIC_SEEDS[..2]
    } else {
        &TRAFFIC_SEEDS
    };
    let traffic = runner.run_parallel(
        "cbo traffic",
        &grid(&tune_variants, traffic_seeds),
        |((r, v), s)| run_traffic_with(*r, *v, *s, traffic_rounds, GraphSearch::BranchAndBound),
    )?;
    // n = 50 tuning (ρ ≥ 0.9).
    let t50_rounds = if quick { 4 } else { TUNING_50_T };
    let t50_seeds: &[u64] = if quick { &SEEDS[..1] } else { &SEEDS };
    let tuning50 = runner.run_parallel(
        "cbo tuning n=50",
        &grid(&[Some(1.0), Some(0.9), None], t50_seeds),
        |(v, s)| run_tuning_n(50, *v, false, *s, t50_rounds),
    )?;
    // CNN tuning (the paper's FEMNIST task's stand-in): five ρ and solo GP-UCB.
    let cnn_rounds = if quick { 6 } else { CNN_T };
    let cnn_variants: Vec<Option<f64>> = rhos.iter().map(|r| Some(*r)).chain([None]).collect();
    let cnn = runner.run_parallel("cbo cnn", &grid(&cnn_variants, seeds), |(r, s)| {
        run_cnn(*r, *s, cnn_rounds)
    })?;
    let wall = t0.elapsed().as_secs_f64();
    std::fs::create_dir_all(dir).map_err(|e| {
        agora_core::Error::invalid("out", format!("cannot create {}: {e}", dir.display()))
    })?;
    report::write_json(&dir.join("runs.json"), &runs)?;
    report::write_json(&dir.join("tuning_runs.json"), &tuning)?;
    report::write_json(&dir.join("traffic_runs.json"), &traffic)?;
    report::write_json(&dir.join("tuning50_runs.json"), &tuning50)?;
    report::write_json(&dir.join("cnn_runs.json"), &cnn)?;
    crate::suites::write_manifest(dir, "cbo", quick, &[("wall", wall)])?;
    write_report(dir, quick, wall, &runs, &tuning, &traffic, &tuning50, &cnn)
}

/// Rebuild the summaries, figures and report from the runs a finished suite saved in `dir`
/// (`agora report`).
pub fn rebuild(dir: &Path, m: &crate::suites::Manifest) -> Result<()> {
    let read = |f: &str| -> Result<Vec<CboRun>> { crate::suites::read_json(&dir.join(f)) };
    let (runs, tuning, traffic, tuning50) = (
        read("runs.json")?,
        read("tuning_runs.json")?,
        read("traffic_runs.json")?,
        read("tuning50_runs.json")?,
    );
    // Suites written before the CNN task have no CNN runs.
    let cnn = if dir.join("cnn_runs.json").exists() {
        read("cnn_runs.json")?
    } else {
        Vec::new()
    };
    write_report(
        dir,
        m.quick,
        m.seconds("wall"),
        &runs,
        &tuning,
        &traffic,
        &tuning50,
        &cnn,
    )?;
    Ok(())
}

/// Summaries, figures and `report.md` from the suite's runs.
#[allow(clippy::too_many_arguments)]
fn write_report(
    dir: &Path,
    quick: bool,
    wall: f64,
    runs: &[CboRun],
    tuning: &[CboRun],
    traffic: &[CboRun],
    tuning50: &[CboRun],
    cnn: &[CboRun],
) -> Result<Vec<CboSummary>> {
    let tune_rounds = if quick { 8 } else { TUNING_T };
    let traffic_rounds = if quick { 20 } else { TRAFFIC_T };
    let t50_rounds = if quick { 4 } else { TUNING_50_T };
    let cnn_rounds = if quick { 6 } else { CNN_T };
    let worst = if quick {
        None
    } else {
        Some(traffic_worst_case()?)
    };
    let sums = summarize(runs);
    report::write_json(&dir.join("summary.json"), &sums)?;
    let mut figs = Vec::new();
    let proposed: Vec<CboSummary> = sums
        .iter()
        .filter(|s| !s.variant.starts_with("ifu"))
        .cloned()
        .collect();
    for (stem, title, y, curve) in [
        (
            "r_over_n",
            "cumulative regret R_t/n",
            "R_t/n",
            (|s: &CboSummary| &s.r_curve) as fn(&CboSummary) -> &Vec<f64>,
        ),
        (
            "unfairness",
            "unfairness U_t/n - g_t (rho_eval = 0.2)",
            "U_t/n - g_t",
            |s| &s.unfair_curve,
        ),
        ("worst_sr", "worst simple regret", "max_i SR_t^i", |s| {
            &s.worst_curve
        }),
    ] {
        figs.extend(crate::curves::plot(
            dir,
            stem,
            title,
            y,
            &series(&proposed, curve),
        )?);
    }
    let h_star = agora_problems::TestFunction::optimum_value(&agora_problems::functions::Hartmann6);
    figs.extend(rationality::plots(
        dir,
        "hartmann",
        "Hartmann-6d",
        runs,
        h_star,
    )?);
    figs.extend(traces::unfairness_plot(
        dir,
        "hartmann",
        "Hartmann-6d",
        runs,
    )?);
    let fairest_ifu = sums
        .iter()
        .filter(|s| s.variant.starts_with("ifu"))
        .min_by(|a, b| a.unfairness_avg.0.total_cmp(&b.unfairness_avg.0))
        .map(|s| s.variant.clone());
    let mut shown: Vec<&str> = fairest_ifu.iter().map(String::as_str).collect();
    shown.extend(["rho=1", "rho=0.2"]);
    figs.extend(traces::lambda_plots(dir, runs, &shown, SEEDS[0])?);
    let (_, _, traffic_star) = traffic_graph()?;
    for (task_runs, f_star, stem, name) in [
        (tuning, 1.0, "tuning", "tuning n = 5"),
        (traffic, traffic_star, "traffic", "traffic n = 8"),
        (tuning50, 1.0, "tuning50", "tuning n = 50"),
        (cnn, 1.0, "cnn", "CNN tuning n = 10"),
    ] {
        if task_runs.is_empty() {
            continue;
        }
        figs.extend(rationality::plots(dir, stem, name, task_runs, f_star)?);
        figs.extend(traces::unfairness_plot(dir, stem, name, task_runs)?);
        let ts = summarize_with(task_runs, f_star);
        for (what, title, y, curve) in [
            (
                "r_over_n",
                "R_t/n",
                "R_t/n",
                (|s: &CboSummary| &s.r_curve) as fn(&CboSummary) -> &Vec<f64>,
            ),
            (
                "unfairness",
                "unfairness (rho_eval = 0.2)",
                "U_t/n - g_t",
                |s| &s.unfair_curve,
            ),
        ] {
            figs.extend(crate::curves::plot(
                dir,
                &format!("{stem}_{what}"),
                &format!("{name}: {title}"),
                y,
                &series(&ts, curve),
            )?);
        }
    }
    let mut md = report_markdown(&sums, runs, quick, wall, &figs)?;
    md.push_str(&tuning_markdown(tuning, tune_rounds)?);
    md.push_str(&traffic_markdown(
        traffic,
        traffic_rounds,
        traffic_star,
        worst,
    )?);
    md.push_str(&tuning50_markdown(tuning50, t50_rounds)?);
    if !cnn.is_empty() {
        md.push_str(&cnn_markdown(cnn, cnn_rounds)?);
    }
    report::write_file(&dir.join("report.md"), &md)?;
    Ok(sums)
}
