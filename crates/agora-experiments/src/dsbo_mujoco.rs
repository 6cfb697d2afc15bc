//! The DSBO report's multi-agent MuJoCo section: the runs `python -m
//! agora.experiments.dsbo_mujoco` saves in `mujoco.json` (MA-Ant and MA-Swimmer episodes
//! with agora's HOM policy, asked by agora's strategies from Python), drawn and judged here
//! by the same rule as the rest of the report. [`section`] adds it to the DSBO report of
//! the same folder; a folder holding only `mujoco.json` gets `mujoco.md` from `agora report`.

use crate::stats::{self, Better, RULE};
use agora_core::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

/// The file the Python experiment writes.
pub const FILE: &str = "mujoco.json";

/// One run: the best episode return after each evaluation.
#[derive(Debug, Clone, Deserialize)]
pub struct MujocoRun {
    /// `ma-ant-6` or `ma-swimmer-6`.
    pub task: String,
    /// The HOM variant: `med`, `sm`, `ra-off`, `ri-off`.
    pub variant: String,
    /// The method's label (`dss-gp-ucb`, `turbo`, ...).
    pub method: String,
    /// The seed (runs of one seed are paired).
    pub seed: u64,
    /// The policy's parameter count.
    pub dim: usize,
    /// Best return so far after each evaluation.
    pub curve: Vec<f64>,
    /// Hessian queries answered.
    #[serde(default)]
    pub hessians: usize,
    /// Wall time of the run.
    pub seconds: f64,
}

/// The saved file.
#[derive(Debug, Clone, Deserialize)]
pub struct MujocoRuns {
    /// The quick version (short episodes, few evaluations).
    pub quick: bool,
    /// Evaluations per run.
    pub evaluations: usize,
    /// Steps per episode.
    pub horizon: usize,
    /// The runs.
    pub runs: Vec<MujocoRun>,
}

/// The DSS-GP-UCB label, the method the claims are about.
const DSS: &str = "dss-gp-ucb";

/// Read `dir/mujoco.json`, if it is there.
pub fn read(dir: &Path) -> Result<Option<MujocoRuns>> {
    let path = dir.join(FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::invalid("dir", format!("cannot read {}: {e}", path.display())))?;
    let runs: MujocoRuns = serde_json::from_str(&text).map_err(|e| {
        Error::invalid(
            FILE,
            format!("{}: not the DSBO MuJoCo runs: {e}", path.display()),
        )
    })?;
    if let Some(r) = runs.runs.iter().find(|r| r.curve.is_empty()) {
        return Err(Error::invalid(
            FILE,
            format!(
                "run {} {} {} seed {} has no evaluations",
                r.task, r.variant, r.method, r.seed
            ),
        ));
    }
    Ok(Some(runs))
}

/// Mean and SE over seeds of the curves, step by step (to the shortest curve).
fn curve(runs: &[&MujocoRun]) -> (Vec<f64>, Vec<f64>) {
    let n = runs.iter().map(|r| r.curve.len()).min().unwrap_or(0);
    (0..n)
        .map(|i| stats::mean_se(&runs.iter().map(|r| r.curve[i]).collect::<Vec<_>>()))
        .unzip()
}

/// Final best return by seed, for one (task, variant, method).
fn finals(m: &MujocoRuns, task: &str, variant: &str, method: &str) -> Vec<(u64, f64)> {
    let mut v: Vec<(u64, f64)> = m
        .runs
        .iter()
        .filter(|r| r.task == task && r.variant == variant && r.method == method)
        .map(|r| (r.seed, *r.curve.last().unwrap_or(&f64::NAN)))
        .collect();
    v.sort_by_key(|x| x.0);
    v
}

/// Final best returns by seed, `label [a, b, ...]` (the evidence shown beside a claim that
/// does not hold).
fn per_seed(label: &str, v: &[(u64, f64)]) -> String {
    let xs: Vec<String> = v.iter().map(|(_, x)| format!("{x:.0}")).collect();
    format!("{label} [{}]", xs.join(", "))
}

/// "A beats B" on the seeds both have.
fn judge(a: &[(u64, f64)], b: &[(u64, f64)]) -> Option<stats::Judged> {
    let (x, y): (Vec<f64>, Vec<f64>) = a
        .iter()
        .filter_map(|(s, va)| b.iter().find(|(t, _)| t == s).map(|(_, vb)| (*va, *vb)))
        .unzip();
    if x.len() < 2 {
        return None;
    }
    stats::verdict(&x, &y, Better::Higher).ok()
}

/// The section's markdown and the figures it draws into `dir` (`None` without the file).
pub fn section(dir: &Path) -> Result<Option<(String, Vec<String>)>> {
    let Some(m) = read(dir)? else {
        return Ok(None);
    };
    let tasks: BTreeSet<&str> = m.runs.iter().map(|r| r.task.as_str()).collect();
    let mut md = String::from("## Multi-agent MuJoCo (MA-Ant, MA-Swimmer), from Python\n\n");
    let _ = writeln!(
        md,
        "Every evaluation is a MaMuJoCo episode of {} steps with agora's HOM policy, run from \
         Python (`python -m agora.experiments.dsbo_mujoco{}`): agora's strategies are asked \
         through `agora.Strategy`, DSBO's structure phase is answered with the surrogate policy \
         Hessian at the states the policy visits, and each evaluation is an episode's return \
         (`agora.mamujoco`: the tasks, their MaMuJoCo scenarios and observations). {} \
         evaluations per run{}. {RULE}\n",
        m.horizon,
        if m.quick { " --quick" } else { "" },
        m.evaluations,
        if m.quick {
            "; **quick version**: short episodes and few evaluations, so it checks that every \
             piece runs, not the claims"
        } else {
            ""
        }
    );
    let mut figs = Vec::new();
    for task in &tasks {
        let runs_of = |variant: &str, method: &str| -> Vec<&MujocoRun> {
            m.runs
                .iter()
                .filter(|r| r.task == *task && r.variant == variant && r.method == method)
                .collect()
        };
        // The labels in `pick`'s runs of this task, DSS-GP-UCB (or the full HOM) first.
        let labels = |pick: &dyn Fn(&MujocoRun) -> Option<String>, first: &str| {
            let set: BTreeSet<String> = m
                .runs
                .iter()
                .filter(|r| r.task == *task)
                .filter_map(pick)
                .collect();
            let mut v: Vec<String> = set.into_iter().collect();
            v.sort_by_key(|x| (x != first, x.clone()));
            v
        };
        let methods = labels(&|r| (r.variant == "med").then(|| r.method.clone()), DSS);
        let variants = labels(&|r| (r.method == DSS).then(|| r.variant.clone()), "med");
        let dim = |variant: &str| {
            m.runs
                .iter()
                .find(|r| r.task == *task && r.variant == variant)
                .map_or(0, |r| r.dim)
        };
        let _ = writeln!(md, "### {task}\n");
        let series: Vec<(String, Vec<f64>, Vec<f64>)> = methods
            .iter()
            .map(|me| {
                let (mu, se) = curve(&runs_of("med", me));
                (me.clone(), mu, se)
            })
            .collect();
        figs.extend(crate::curves::plot(
            dir,
            &format!("mujoco_{task}_methods"),
            &format!("{task} (HOM Med, D = {}): best return so far", dim("med")),
            "best return",
            &series,
        )?);
        let series: Vec<(String, Vec<f64>, Vec<f64>)> = variants
            .iter()
            .map(|v| {
                let (mu, se) = curve(&runs_of(v, DSS));
                (format!("{v} (D = {})", dim(v)), mu, se)
            })
            .collect();
        figs.extend(crate::curves::plot(
            dir,
            &format!("mujoco_{task}_ablation"),
            &format!("{task}: DSS-GP-UCB on the HOM and its ablations"),
            "best return",
            &series,
        )?);
        let _ = writeln!(md, "| HOM | method | seeds | final best return | s / run |");
        let _ = writeln!(md, "|---|---|---:|---:|---:|");
        let mut rows: Vec<(String, String)> = methods
            .iter()
            .map(|me| ("med".to_string(), me.clone()))
            .collect();
        rows.extend(
            variants
                .iter()
                .filter(|v| *v != "med")
                .map(|v| (v.clone(), DSS.to_string())),
        );
        for (v, me) in &rows {
            let rs = runs_of(v, me);
            let f: Vec<f64> = rs
                .iter()
                .map(|r| *r.curve.last().unwrap_or(&f64::NAN))
                .collect();
            let secs: Vec<f64> = rs.iter().map(|r| r.seconds).collect();
            let _ = writeln!(
                md,
                "| {v} | {me} | {} | {} | {:.1} |",
                rs.len(),
                stats::pm_of(&f, 2),
                stats::mean_se(&secs).0
            );
        }
        let _ = writeln!(md);
        let ant = task.contains("ant");
        let dss = finals(&m, task, "med", DSS);
        // Fig. 9: on MA-Ant the competitors keep up (the paper's reading of this simpler
        // task); MA-Swimmer is not in Fig. 9, so it is read the same way as context.
        let mut behind = Vec::new();
        let mut cells = Vec::new();
        for me in methods.iter().filter(|x| *x != DSS) {
            if let Some(j) = judge(&dss, &finals(&m, task, "med", me)) {
                if j.verdict.holds() {
                    behind.push(me.clone());
                }
                cells.push(format!("{me}: DSS-GP-UCB − {me} {}", j.describe(2)));
            }
        }
        if !cells.is_empty() {
            let _ = writeln!(
                md,
                "- *The high-dimensional BO competitors keep up with DSS-GP-UCB on this simpler task* \
                 ({}): {}. {}.",
                if ant {
                    "Fig. 9: \"competing works offer competitive performance for simpler tasks such as \
                     Multiagent Ant\""
                } else {
                    "not in the paper's Fig. 9; read as MA-Ant's claim, for context"
                },
                if behind.is_empty() {
                    "**holds**: no competitor is behind DSS-GP-UCB beyond 2 SE".to_string()
                } else {
                    format!(
                        "**does not hold**: {} behind DSS-GP-UCB beyond 2 SE",
                        behind.join(", ")
                    )
                },
                cells.join("; ")
            );
            if !behind.is_empty() {
                let mut seeds = vec![per_seed(DSS, &dss)];
                seeds.extend(
                    behind
                        .iter()
                        .map(|me| per_seed(me, &finals(&m, task, "med", me))),
                );
                let _ = writeln!(md, "  Final best return by seed: {}.", seeds.join("; "));
            }
        }
        // Figs. 3 and 7: little gain from RA or RI on the locomotion tasks; Sm hurts on MA-Ant.
        let gain: Vec<(String, stats::Judged)> = ["ra-off", "ri-off"]
            .iter()
            .filter_map(|v| judge(&dss, &finals(&m, task, v, DSS)).map(|j| (v.to_string(), j)))
            .collect();
        if !gain.is_empty() {
            let ahead: Vec<&str> = gain
                .iter()
                .filter(|(_, j)| j.verdict.holds())
                .map(|(v, _)| v.as_str())
                .collect();
            let _ = writeln!(
                md,
                "- *Role assignment and role interaction bring limited improvement here* ({}): {}. {}.",
                if ant {
                    "Fig. 3: \"for a simpler coordination task such as Multiagent Ant, we observe limited \
                     improvement through RA or RI\""
                } else {
                    "Fig. 7: MA-Swimmer \"shows similar behavior as the simpler task Multiagent Ant\""
                },
                if ahead.is_empty() {
                    "**holds**: the full HOM is not ahead of either ablation beyond 2 SE"
                        .to_string()
                } else {
                    format!(
                        "**does not hold**: the full HOM is ahead of {} beyond 2 SE",
                        ahead.join(" and ")
                    )
                },
                gain.iter()
                    .map(|(v, j)| format!("Med − {v} {}", j.describe(2)))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            if !ahead.is_empty() {
                let mut seeds = vec![per_seed("Med", &dss)];
                seeds.extend(ahead.iter().map(|v| per_seed(v, &finals(&m, task, v, DSS))));
                let _ = writeln!(md, "  Final best return by seed: {}.", seeds.join("; "));
            }
        }
        if let Some(j) = judge(&dss, &finals(&m, task, "sm", DSS)) {
            let _ = writeln!(
                md,
                "- *Overly shrinking the model (Sm) hurts* ({}): Med − Sm {}: {}.",
                if ant {
                    "Fig. 3: \"evidenced in the Multiagent Ant task\""
                } else {
                    "Fig. 7, MA-Swimmer as MA-Ant, for context"
                },
                j.describe(2),
                j.verdict.label()
            );
            if !j.verdict.holds() {
                let _ = writeln!(
                    md,
                    "  Final best return by seed: {}; {}.",
                    per_seed("Med", &dss),
                    per_seed("Sm", &finals(&m, task, "sm", DSS))
                );
            }
        }
        let _ = writeln!(md);
        for f in &figs {
            if f.starts_with(&format!("mujoco_{task}_")) && f.ends_with(".svg") {
                let _ = writeln!(md, "![{f}]({f})");
            }
        }
        let _ = writeln!(md);
    }
    Ok(Some((md, figs)))
}

/// `agora report DIR` for a folder holding only `mujoco.json`: writes `mujoco.md`.
pub fn rebuild_alone(dir: &Path) -> Result<Option<std::path::PathBuf>> {
    let Some((md, _)) = section(dir)? else {
        return Ok(None);
    };
    let path = dir.join("mujoco.md");
    crate::report::write_file(&path, &format!("# DSBO on multi-agent MuJoCo\n\n{md}"))?;
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic runs read by the rule: a competitor far behind makes "keep up" fail; an
    /// ablation level with the full HOM lets "limited improvement" hold; Sm far behind makes
    /// "Sm hurts" hold; a folder with only the runs gets `mujoco.md`.
    #[test]
    fn the_section_reads_the_papers_claims_by_the_rule() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = Vec::new();
        for seed in 0..5u64 {
            let noise = [0.3, -0.2, 0.1, -0.4, 0.2][seed as usize];
            for (variant, method, final_) in [
                ("med", DSS, 10.0),
                ("med", "turbo", 9.9),
                ("med", "uniform", 2.0),
                ("ra-off", DSS, 10.05),
                ("ri-off", DSS, 9.95),
                ("sm", DSS, 4.0),
            ] {
                let flip = variant != "med" && variant != "sm" || method == "turbo";
                let f = final_ + if flip { -noise } else { noise };
                runs.push(serde_json::json!({
                    "task": "ma-ant-6", "variant": variant, "method": method, "seed": seed,
                    "dim": 441, "curve": [f - 1.0, f], "hessians": 5, "seconds": 1.0,
                }));
            }
        }
        let doc =
            serde_json::json!({"quick": false, "evaluations": 2, "horizon": 500, "runs": runs});
        std::fs::write(dir.path().join(FILE), doc.to_string()).unwrap();
        let (md, figs) = section(dir.path()).unwrap().unwrap();
        assert!(
            md.contains("**does not hold**: uniform behind DSS-GP-UCB beyond"),
            "{md}"
        );
        assert!(md.contains("limited improvement here* (Fig. 3"), "{md}");
        assert!(
            md.contains("**holds**: the full HOM is not ahead of either ablation"),
            "{md}"
        );
        assert!(md.contains("Med − Sm paired difference 6.00"), "{md}");
        assert!(
            md.contains("by seed: dss-gp-ucb [10, 10, 10, 10, 10]; uniform [2, 2, 2, 2, 2]"),
            "{md}"
        );
        assert_eq!(figs.iter().filter(|f| f.ends_with(".svg")).count(), 2);
        let path = rebuild_alone(dir.path()).unwrap().unwrap();
        assert!(
            std::fs::read_to_string(path)
                .unwrap()
                .starts_with("# DSBO on multi-agent MuJoCo")
        );
        // A damaged file is refused with its name.
        std::fs::write(dir.path().join(FILE), "{\"runs\": 3}").unwrap();
        let e = section(dir.path()).unwrap_err();
        assert!(e.to_string().contains(FILE), "{e}");
    }
}
