//! The files, figures and report of the BOAP suite: tables of simple regret and a verdict
//! per claim of note §4.6 under the one rule ([`stats::RULE`]).

use super::{BoapRun, Setting, Task, jobs, run_one, tasks};
use crate::report::write_file;
use crate::stats::{self, Better, Judged, Verdict, mean_se, pm_adaptive, verdict_by_seed};
use crate::table::Table;
use agora_core::{Error, Result};
use agora_methods::Arm;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Digits after the point of the report's regrets (smaller means print in scientific
/// notation, [`pm_adaptive`]).
const DECIMALS: usize = 4;

/// Run the suite in parallel (progress bar) and write runs, plots and the report.
pub fn reproduce(
    quick: bool,
    dir: &Path,
    runner: &crate::runner::Runner,
    extra: Vec<Task>,
) -> Result<Vec<BoapRun>> {
    let seeds: Vec<u64> = if quick {
        (0..3).collect()
    } else {
        (0..10).collect()
    };
    let mut task_list = tasks(quick);
    task_list.extend(extra);
    let mut all = Vec::new();
    for (ti, setting, m) in jobs(&task_list, quick) {
        for &s in &seeds {
            all.push((ti, setting, m, s));
        }
    }
    // Long jobs first.
    all.sort_by_key(|(ti, _, m, _)| {
        (
            std::cmp::Reverse(task_list[*ti].init_budget().1),
            usize::from(!m.variant.uses_expert()),
        )
    });
    let t0 = std::time::Instant::now();
    let runs: Vec<BoapRun> = runner.run_parallel("boap", &all, |&(ti, setting, m, s)| {
        run_one(&task_list[ti], setting, m, s)
    })?;
    let wall = t0.elapsed().as_secs_f64();
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::invalid("out", format!("cannot create {}: {e}", dir.display())))?;
    let json = serde_json::to_string_pretty(&runs).map_err(|e| Error::Numerical(e.to_string()))?;
    write_file(&dir.join("runs.json"), &json)?;
    crate::suites::write_manifest(dir, "boap", quick, &[("wall", wall)])?;
    let figs = figures(dir, &task_list, &runs)?;
    let md = report_markdown(&task_list, &runs, quick, wall, &figs)?;
    write_file(&dir.join("report.md"), &md)?;
    Ok(runs)
}

/// Rebuild the figures and report from the `runs.json` of a finished suite in `dir`
/// (`agora report`). Runs on a user's pool are rebuilt with the suite's own tasks only.
pub fn rebuild(dir: &Path, m: &crate::suites::Manifest) -> Result<()> {
    let runs: Vec<BoapRun> = crate::suites::read_json(&dir.join("runs.json"))?;
    let task_list = tasks(m.quick);
    let figs = figures(dir, &task_list, &runs)?;
    let md = report_markdown(&task_list, &runs, m.quick, m.seconds("wall"), &figs)?;
    write_file(&dir.join("report.md"), &md)
}

/// One simple-regret figure per (task, setting), SVG and PNG; returns the file names.
fn figures(dir: &Path, tasks: &[Task], runs: &[BoapRun]) -> Result<Vec<String>> {
    let mut figs = Vec::new();
    for t in tasks {
        for setting in t.settings() {
            let series: Vec<(String, Vec<f64>, Vec<f64>)> = methods_of(runs, &t.name(), setting)
                .into_iter()
                .map(|m| {
                    let (mean, se) = Group::of(runs, &t.name(), setting, &m).curve();
                    (m, mean, se)
                })
                .collect();
            let stem = format!(
                "{}_{}_regret",
                t.name(),
                match setting {
                    Setting::Accurate => "accurate",
                    Setting::Inaccurate => "ia",
                    Setting::Noisy(_) => "np",
                }
            );
            figs.extend(crate::curves::plot(
                dir,
                &stem,
                &format!("{} ({}): simple regret", t.name(), setting.name()),
                "simple regret",
                &series,
            )?);
        }
    }
    Ok(figs)
}

/// The methods run on (task, setting), in the report's order.
fn methods_of(runs: &[BoapRun], task: &str, setting: Setting) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in runs
        .iter()
        .filter(|r| r.task == task && r.setting == setting)
    {
        if !v.contains(&r.method) {
            v.push(r.method.clone());
        }
    }
    let order = [
        "boap",
        "boap-fd",
        "boap-oa",
        "bo-ts",
        "bo-ei",
        "boap+pa",
        "boap+gate",
        "boap+floor",
    ];
    v.sort_by_key(|m| order.iter().position(|o| o == m).unwrap_or(9));
    v
}

/// Simple regret after the last evaluation.
fn final_regret(r: &BoapRun) -> f64 {
    *r.regret.last().unwrap_or(&f64::NAN)
}

/// Simple regret averaged over the run's evaluations (the area under the regret curve, per
/// evaluation): it separates methods that all end at zero.
fn mean_regret(r: &BoapRun) -> f64 {
    r.regret.iter().sum::<f64>() / r.regret.len().max(1) as f64
}

/// Fraction of the run's iterations on which Arm-𝔣 was pulled.
fn control_fraction(r: &BoapRun) -> f64 {
    let c = r.arms.iter().filter(|a| **a == Arm::Control).count();
    c as f64 / r.arms.len().max(1) as f64
}

/// Fraction of the run's consecutive iterations on which the arm changed (NaN with fewer
/// than two iterations).
fn switch_rate(r: &BoapRun) -> f64 {
    if r.arms.len() < 2 {
        return f64::NAN;
    }
    let s = r.arms.windows(2).filter(|w| w[0] != w[1]).count();
    s as f64 / (r.arms.len() - 1) as f64
}

/// The runs of one (task, setting, method), in seed order.
struct Group<'a> {
    runs: Vec<&'a BoapRun>,
}

impl<'a> Group<'a> {
    fn of(runs: &'a [BoapRun], task: &str, setting: Setting, method: &str) -> Group<'a> {
        Group {
            runs: runs
                .iter()
                .filter(|r| r.task == task && r.setting == setting && r.method == method)
                .collect(),
        }
    }

    /// Mean ± SE of simple regret per evaluation.
    fn curve(&self) -> (Vec<f64>, Vec<f64>) {
        let t = self.runs.iter().map(|r| r.regret.len()).min().unwrap_or(0);
        (0..t)
            .map(|k| mean_se(&self.runs.iter().map(|r| r.regret[k]).collect::<Vec<_>>()))
            .unzip()
    }

    /// Per seed, `value` of the seed's run.
    fn per_seed(&self, value: fn(&BoapRun) -> f64) -> BTreeMap<u64, f64> {
        self.runs.iter().map(|r| (r.seed, value(r))).collect()
    }

    /// Mean ± SE over the runs of `value`, as the report prints it.
    fn show(&self, value: fn(&BoapRun) -> f64) -> String {
        let (m, se) = mean_se(&self.runs.iter().map(|r| value(r)).collect::<Vec<_>>());
        pm_adaptive(m, se, DECIMALS)
    }

    /// Iterations on which Arm-𝔣 was pulled, and iterations, over the runs.
    fn control_share(&self) -> (usize, usize) {
        let arms: Vec<&Arm> = self.runs.iter().flat_map(|r| r.arms.iter()).collect();
        (
            arms.iter().filter(|a| ***a == Arm::Control).count(),
            arms.len(),
        )
    }
}

/// "A beats B" on final simple regret, paired by seed.
fn lower_final(a: &Group, b: &Group) -> Result<Judged> {
    verdict_by_seed(
        &a.per_seed(final_regret),
        &b.per_seed(final_regret),
        Better::Lower,
    )
}

/// The report: tables of final simple regret and a verdict per claim of note §4.6.
pub fn report_markdown(
    tasks: &[Task],
    runs: &[BoapRun],
    quick: bool,
    wall: f64,
    figs: &[String],
) -> Result<String> {
    let mut md = String::from("# BOAP: BO with preferences on abstract properties\n\n");
    let _ = writeln!(
        md,
        "Methods: **boap** (two arms chosen by 5-fold cross-validated predictive log-density, the rank GPs \
         refitted without each fold's designs), **boap-fd** (two arms chosen by the maximized marginal likelihood on all data, as the \
         authors' code does), **boap-oa** (augmented arm only), **bo-ts** and **bo-ei** (a GP on x with Thompson \
         sampling / expected improvement). Rank GPs: probit with σ̃² = 0.1, prior covariance K + σ̃²I, lengthscales by the Laplace \
         evidence; arms: σ_f² = 1, σ_η² = 0.1 on standardized y, l_d ∈ [0.1, 1], α ∈ [0.01, 2]; Thompson \
         sampling by one joint draw over 1,000 Sobol candidates plus 200 perturbations of the incumbent. \
         Budget T = 10d + 5 evaluations including t′ = d + 3 initial designs (all C(t′, 2) comparisons per \
         property, then each new design compared with every earlier one). Final simple regret, mean ± SE over \
         {} seeds{}. Wall time {wall:.0} s.\n",
        runs.iter().map(|r| r.seed).max().map_or(0, |s| s + 1),
        if quick {
            " (--quick: too few for conclusions)"
        } else {
            ""
        }
    );
    let mut claims = Vec::new();
    for t in tasks {
        let name = t.name();
        let (init, budget) = t.init_budget();
        let _ = writeln!(md, "\n## {name} (t′ = {init}, T = {budget})\n");
        let mut table = Table::new(&[
            "expert",
            "method",
            "final simple regret",
            "mean simple regret over the run",
            "Arm-𝔣 share",
            "comparisons",
            "s / proposal",
        ]);
        for setting in t.settings() {
            for m in methods_of(runs, &name, setting) {
                let g = Group::of(runs, &name, setting, &m);
                let (c, n) = g.control_share();
                let comps: f64 = g.runs.iter().map(|r| r.comparisons as f64).sum::<f64>()
                    / g.runs.len().max(1) as f64;
                let secs: f64 = g.runs.iter().flat_map(|r| r.seconds.iter()).sum::<f64>()
                    / g.runs.iter().map(|r| r.seconds.len()).sum::<usize>().max(1) as f64;
                table.row([
                    setting.name(),
                    m.clone(),
                    g.show(final_regret),
                    g.show(mean_regret),
                    if m.starts_with("boap") && m != "boap-oa" {
                        format!("{c}/{n}")
                    } else {
                        "–".into()
                    },
                    format!("{comps:.0}"),
                    format!("{secs:.3}"),
                ]);
            }
        }
        md.push_str(&table.markdown());
        let get = |setting: Setting, m: &str| Group::of(runs, &name, setting, m);
        let boap = get(Setting::Accurate, "boap");
        let ts = get(Setting::Accurate, "bo-ts");
        let ei = get(Setting::Accurate, "bo-ei");
        let (vs_ts, vs_ei) = (lower_final(&boap, &ts)?, lower_final(&boap, &ei)?);
        let claim = Verdict::all([vs_ts.verdict, vs_ei.verdict]);
        claims.push(claim.holds());
        let _ = writeln!(
            md,
            "\n- **Accurate features: BOAP has lower final regret than BO-TS and BO-EI**: {} — BOAP {}, BO-TS {}, \
             BO-EI {}; BOAP vs BO-TS {}, BOAP vs BO-EI {}.",
            claim.label(),
            boap.show(final_regret),
            ts.show(final_regret),
            ei.show(final_regret),
            vs_ts.describe(DECIMALS),
            vs_ei.describe(DECIMALS)
        );
        let auc = |m: &str| get(Setting::Accurate, m).show(mean_regret);
        let _ = writeln!(
            md,
            "- Mean simple regret over the run (accurate features): BOAP {}, BOAP-FD {}, BOAP-OA {}, BO-TS {}, BO-EI {}.",
            auc("boap"),
            auc("boap-fd"),
            auc("boap-oa"),
            auc("bo-ts"),
            auc("bo-ei")
        );
        if let Task::Bench(_) = t {
            for setting in [Setting::Inaccurate, Setting::Noisy(0.3)] {
                let b = get(setting, "boap");
                // Not materially worse: BO-TS does not beat it under the rule.
                let ts_beats = lower_final(&ts, &b)?;
                let _ = writeln!(
                    md,
                    "- **{}: BOAP not materially worse than BO-TS** (BO-TS does not beat it by the rule): {} — BOAP {}, \
                     BO-TS {}; BO-TS vs BOAP {}.",
                    setting.name(),
                    if ts_beats.verdict.holds() {
                        Verdict::DoesNotHold.label()
                    } else {
                        Verdict::Holds.label()
                    },
                    b.show(final_regret),
                    ts.show(final_regret),
                    ts_beats.describe(DECIMALS)
                );
            }
            let ia = get(Setting::Inaccurate, "boap");
            let (ca, na) = boap.control_share();
            let (ci, ni) = ia.control_share();
            let more = verdict_by_seed(
                &ia.per_seed(control_fraction),
                &boap.per_seed(control_fraction),
                Better::Higher,
            )?;
            let _ = writeln!(
                md,
                "- **Arm-𝔣 is pulled more often under IA than with accurate features**: {} — {ci}/{ni} ({:.0} %) \
                 under IA against {ca}/{na} ({:.0} %) accurate; share per run IA − accurate: {}.",
                more.verdict.label(),
                100.0 * ci as f64 / ni.max(1) as f64,
                100.0 * ca as f64 / na.max(1) as f64,
                more.describe(3)
            );
            // Why: what the augmented arm does alone, and what the arm choice adds.
            let oa = get(Setting::Accurate, "boap-oa");
            let fd = get(Setting::Accurate, "boap-fd");
            let oa_ts = lower_final(&oa, &ts)?;
            let (relation, effect) = if oa_ts.verdict.holds() {
                ("better than", "help the surrogate")
            } else if stats::verdict_of(-oa_ts.difference, oa_ts.se).holds() {
                ("worse than", "mislead the surrogate")
            } else {
                ("within 2 SE of", "make no clear difference")
            };
            let (cf, nf) = fd.control_share();
            let (cfi, nfi) = get(Setting::Inaccurate, "boap-fd").control_share();
            let _ = writeln!(
                md,
                "- *Reading:* the augmented arm alone (BOAP-OA, {}) is {relation} BO-TS ({}; {}), so on this \
                 function the expert's features {effect}. Two-arm BOAP pulls Arm-𝔣 on {ca}/{na} iterations with \
                 the cross-validated rule ({}); the full-data rule (BOAP-FD, {}) pulls it on {cf}/{nf} with \
                 accurate features and on {cfi}/{nfi} under IA. The arm changes between consecutive iterations \
                 at a rate of {} (BOAP, accurate), {} (BOAP, IA) and {} (BOAP-FD, accurate) per run.",
                oa.show(final_regret),
                ts.show(final_regret),
                oa_ts.describe(DECIMALS),
                boap.show(final_regret),
                fd.show(final_regret),
                boap.show(switch_rate),
                ia.show(switch_rate),
                fd.show(switch_rate)
            );
            extensions(&mut md, &get, &boap, &ia)?;
        }
    }
    md.push_str(
        "\n**Why the headline does not carry over in full.** The paper reports plots only (no numbers), so agora \
         compares methods on the same seeds. Three measured effects decide the outcome here: (1) whether the \
         augmented arm itself models the function better (the BOAP-OA rows: it depends on the function); (2) the \
         arm choice: the rule scores each arm by 5-fold cross-validation, with the rank GPs refitted without each \
         fold's designs (an earlier rule held out the most recent 20 % of the designs, the pulled arm's own last \
         Thompson picks, and let the rank GPs see their comparisons; under it the arms alternated more: the \
         switch rates in the Reading lines), and each switch changes the model the next draw comes from; the \
         full-data rule (the authors' code, BOAP-FD) falls back \
         to Arm-𝔣 more under the IA expert, which is the guard the paper describes (the Reading lines give the \
         counts); (3) the baselines themselves: BO-EI, whose exploitation suits these noise-free functions, is the \
         strongest method on some of them (see the tables).\n",
    );
    let _ = writeln!(
        md,
        "\n**Summary.** With accurate features, the claim that BOAP has lower final regret than BO-TS and BO-EI \
         holds on {} of {} tasks.\n\nVerdicts: {}",
        claims.iter().filter(|c| **c).count(),
        claims.len(),
        stats::RULE
    );
    md.push_str("\n## Figures\n\n");
    for f in figs.iter().filter(|f| f.ends_with(".svg")) {
        let _ = writeln!(md, "- [{f}]({f})");
    }
    Ok(md)
}

/// The extensions beyond the paper on one function: final regret against BOAP (accurate
/// features, paired), and the guard (Arm-𝔣 share under IA against accurate).
fn extensions<'a>(
    md: &mut String,
    get: &dyn Fn(Setting, &str) -> Group<'a>,
    boap: &Group,
    boap_ia: &Group,
) -> Result<()> {
    for (m, what) in [
        ("boap+pa", "one α per property (App. A.4.1's bold α)"),
        (
            "boap+gate",
            "the property-quality gate (a property whose comparisons order the values no better than |2c − 1| < 0.3 is left out)",
        ),
        (
            "boap+floor",
            "the σ̄ floor: the rank-GP std fed to the kernel floored at 0.5 of μ̄'s span, so α acts as a plain lengthscale",
        ),
    ] {
        let acc = get(Setting::Accurate, m);
        let ia = get(Setting::Inaccurate, m);
        if acc.runs.is_empty() {
            continue;
        }
        let vs = lower_final(&acc, boap)?;
        let vs_ia = lower_final(&ia, boap_ia)?;
        let (ca, na) = acc.control_share();
        let (ci, ni) = ia.control_share();
        let guard = verdict_by_seed(
            &ia.per_seed(control_fraction),
            &acc.per_seed(control_fraction),
            Better::Higher,
        )?;
        let _ = writeln!(
            md,
            "- *Extension beyond the paper, {m}* ({what}): final regret {} against BOAP's {} (accurate; lower \
             than BOAP: {}, {}); under IA {} against {} ({}). Arm-𝔣 pulled on {ca}/{na} iterations (accurate) \
             and {ci}/{ni} (IA): more often under IA — {}, {}; switch rate {} (accurate).",
            acc.show(final_regret),
            boap.show(final_regret),
            vs.verdict.label(),
            vs.describe(DECIMALS),
            ia.show(final_regret),
            boap_ia.show(final_regret),
            vs_ia.describe(DECIMALS),
            guard.verdict.label(),
            guard.describe(3),
            acc.show(switch_rate)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_problems::BoapBenchmark;

    fn run(setting: Setting, method: &str, seed: u64, last: f64) -> BoapRun {
        BoapRun {
            task: "benchmark1d".into(),
            setting,
            method: method.into(),
            seed,
            regret: vec![1.0, last],
            arms: vec![Arm::Control, Arm::Human],
            scores: vec![(None, None); 2],
            comparisons: 0,
            seconds: vec![0.0; 2],
        }
    }

    #[test]
    fn claims_pair_seeds_and_state_the_rule() {
        // BOAP ends below BO-TS and BO-EI by 0.5 on every seed, across seeds that differ.
        let mut runs = Vec::new();
        for (s, b) in [1.0, 3.0, 2.0].iter().enumerate() {
            let s = s as u64;
            for m in ["boap", "boap-fd", "boap-oa"] {
                for setting in [Setting::Accurate, Setting::Inaccurate, Setting::Noisy(0.3)] {
                    runs.push(run(setting, m, s, *b));
                }
            }
            runs.push(run(Setting::Accurate, "bo-ts", s, b + 0.5));
            runs.push(run(Setting::Accurate, "bo-ei", s, b + 0.5));
        }
        let tasks = [Task::Bench(BoapBenchmark::Benchmark1d)];
        let md = report_markdown(&tasks, &runs, true, 0.0, &[]).unwrap();
        assert!(md.contains(
            "**Accurate features: BOAP has lower final regret than BO-TS and BO-EI**: **holds**"
        ));
        assert!(md.contains("BOAP vs BO-TS paired difference 0.5000 ± 0.0000 (3 seeds)"));
        assert!(md.contains("holds on 1 of 1 tasks"));
        // Equal Arm-𝔣 shares: "more often under IA" does not hold.
        assert!(md.contains("accurate features**: **does not hold** — 3/6 (50 %)"));
        // Every run switches arm on its one step: a switch rate of 1.
        assert!(
            md.contains("at a rate of 1.0000 ± 0.0000 (BOAP, accurate)"),
            "{md}"
        );
        assert!(md.contains(stats::RULE));
    }
}
