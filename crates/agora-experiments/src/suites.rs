//! `agora reproduce` suites: each is a grid plus a markdown report. Method issues add
//! their papers' suites here.

use crate::grid::{RunSpec, run_grid};
use crate::report::{self, Summary};
use agora_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// One reproducible experiment.
#[derive(Debug, Clone)]
pub struct Suite {
    /// Name used on the command line.
    pub name: &'static str,
    /// Title of the report.
    pub title: &'static str,
    /// What the suite shows and where its reference numbers come from.
    pub about: &'static str,
    /// The full grid.
    pub full: RunSpec,
    /// The `--quick` grid (minutes on two cores).
    pub quick: RunSpec,
}

fn spec(methods: &[&str], problems: &[&str], seeds: u64, budget: usize) -> RunSpec {
    RunSpec {
        methods: methods.iter().map(|s| s.to_string()).collect(),
        problems: problems.iter().map(|s| s.to_string()).collect(),
        seeds: (0..seeds).collect(),
        budget,
        noise_std: 0.0,
    }
}

/// Every suite, in the order `agora reproduce --quick` runs them.
pub fn suites() -> Vec<Suite> {
    vec![
        Suite {
            name: "standard",
            title: "Standard Bayesian optimization on synthetic test functions",
            about: "Random search, scrambled Sobol and GP-BO (LogEI, EI, UCB with beta = 2, Thompson sampling) on \
                noiseless test functions, 10 Sobol points then the model. The reference stack \
                (docs/anchors/RESULTS.md §3) reaches a final regret on Hartmann6 after 60 evaluations of \
                0.1490 ± 0.0527 (BoTorch SingleTaskGP + LogEI) and 0.0039 ± 0.0014 (Optuna 5 GPSampler), 5 seeds; \
                `gp-logei-botorch` is agora's GP-BO with BoTorch's model defaults.",
            full: spec(
                &[
                    "random",
                    "sobol",
                    "gp-ei",
                    "gp-logei",
                    "gp-ucb",
                    "gp-ts",
                    "gp-logei-botorch",
                ],
                &["forrester", "branin", "hartmann3", "hartmann6", "ackley5"],
                10,
                60,
            ),
            quick: spec(
                &["random", "sobol", "gp-logei", "gp-ts"],
                &["branin", "hartmann6"],
                3,
                30,
            ),
        },
        Suite {
            name: "preference",
            title: "Preferential BO from pairwise comparisons",
            about: "A simulated person compares pairs of designs (probit noise with σ = 0.1 × the objective's \
                range, the rule of docs/anchors/RESULTS.md §2); the strategies learn a Laplace preference \
                GP (BoTorch PairwiseGP defaults) and choose the next pair by EUBO, pairwise BALD, or the \
                previous winner against the EUBO-best challenger. Regret is that of the compared point with \
                the highest posterior mean; the first 2d + 2 pairs are random. Reference (RESULTS.md §2, \
                BoTorch PairwiseGP + EUBO, 5 seeds, 40 pairs after the initial ones): Branin 8.36 ± 1.78, \
                Hartmann6 0.463 ± 0.070.",
            full: spec(
                &["pbo-eubo", "pbo-winner", "pbo-bald"],
                &["branin", "hartmann6"],
                10,
                54,
            ),
            quick: spec(&["pbo-eubo", "pbo-winner"], &["branin"], 2, 20),
        },
    ]
}

/// Names of the suites (the grid suites, then `hpbo`, which has its own runner and metrics).
pub fn suite_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = suites().iter().map(|s| s.name).collect();
    v.push("hpbo");
    v.push("cbo");
    v.push("sbo");
    v.push("boap");
    v.push("dsbo");
    v
}

/// What `agora reproduce` writes beside a suite's runs (`suite.json`), so that
/// `agora report DIR` can rebuild the report from them without running anything.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The suite's name (see [`suite_names`]).
    pub suite: String,
    /// Whether the runs are the `--quick` grid.
    pub quick: bool,
    /// Wall times the report quotes, by name (`wall`, `runs`), in seconds.
    pub seconds: BTreeMap<String, f64>,
}

impl Manifest {
    /// A recorded wall time, 0 when absent.
    pub fn seconds(&self, name: &str) -> f64 {
        self.seconds.get(name).copied().unwrap_or(0.0)
    }
}

/// Write `dir/suite.json`.
pub fn write_manifest(dir: &Path, suite: &str, quick: bool, seconds: &[(&str, f64)]) -> Result<()> {
    let m = Manifest {
        suite: suite.to_string(),
        quick,
        seconds: seconds.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    };
    let json = serde_json::to_string_pretty(&m).map_err(|e| Error::Numerical(e.to_string()))?;
    report::write_file(&dir.join("suite.json"), &json)
}

/// Read a JSON file a suite wrote; errors name the file.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::invalid("dir", format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        Error::invalid(
            path.display().to_string(),
            format!("not a saved run file: {e}"),
        )
    })
}

/// Read a JSON-lines file a suite wrote; errors name the file and line.
pub fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::invalid("dir", format!("cannot read {}: {e}", path.display())))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                Error::invalid(
                    format!("{}:{}", path.display(), i + 1),
                    format!("not a saved record: {e}"),
                )
            })
        })
        .collect()
}

/// `agora report DIR`: rebuild the report of every suite saved under `dir` (a suite's own
/// folder, or the output folder of `agora reproduce` with one sub-folder per suite) from its
/// saved runs, without running anything. Returns the reports written.
pub fn rebuild(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let mut dirs = Vec::new();
    if dir.join("suite.json").is_file() {
        dirs.push(dir.to_path_buf());
    } else {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| Error::invalid("dir", format!("cannot read {}: {e}", dir.display())))?;
        let mut subs: Vec<std::path::PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("suite.json").is_file())
            .collect();
        subs.sort();
        dirs.extend(subs);
    }
    if dirs.is_empty() {
        // The Python MuJoCo experiment's runs alone (`python -m agora.experiments.dsbo_mujoco`).
        if let Some(path) = crate::dsbo_mujoco::rebuild_alone(dir)? {
            return Ok(vec![path]);
        }
        return Err(Error::invalid(
            "dir",
            format!(
                "{} holds no saved suite (no suite.json in it or its sub-folders); run `agora reproduce` first",
                dir.display()
            ),
        ));
    }
    let mut written = Vec::new();
    for d in dirs {
        let m: Manifest = read_json(&d.join("suite.json"))?;
        match m.suite.as_str() {
            "hpbo" => crate::hpbo::rebuild(&d, &m)?,
            "boap" => crate::boap::rebuild(&d, &m)?,
            "dsbo" => crate::dsbo::rebuild(&d, &m)?,
            "sbo" => crate::sbo::rebuild(&d, &m)?,
            "cbo" => crate::cbo::rebuild(&d, &m)?,
            name => match suites().into_iter().find(|s| s.name == name) {
                Some(s) => {
                    let records: Vec<crate::grid::Record> = read_jsonl(&d.join("records.jsonl"))?;
                    write_grid_report(&s, m.quick, &d, &records)?;
                }
                None => {
                    return Err(Error::unknown(
                        "suite (in suite.json)",
                        name,
                        &suite_names(),
                    ));
                }
            },
        }
        written.push(d.join("report.md"));
    }
    Ok(written)
}

/// Run one suite into `out` and write its `report.md`; returns the summaries.
pub fn run_suite(
    suite: &Suite,
    quick: bool,
    out: &Path,
    runner: &crate::runner::Runner,
) -> Result<Vec<Summary>> {
    let spec = if quick { &suite.quick } else { &suite.full };
    let t0 = std::time::Instant::now();
    let records = run_grid(spec, runner)?;
    write_manifest(
        out,
        suite.name,
        quick,
        &[("wall", t0.elapsed().as_secs_f64())],
    )?;
    write_grid_report(suite, quick, out, &records)
}

/// Records, summaries, figures and `report.md` of a grid suite.
fn write_grid_report(
    suite: &Suite,
    quick: bool,
    out: &Path,
    records: &[crate::grid::Record],
) -> Result<Vec<Summary>> {
    let spec = if quick { &suite.quick } else { &suite.full };
    let records = records.to_vec();
    let summaries = report::summarize(&records);
    let files = report::write_outputs(out, &records, &summaries)?;
    let mut md = format!("# {}\n\n{}\n\n", suite.title, suite.about);
    let _ = writeln!(
        md,
        "Grid: methods {}; problems {}; {} seeds; {} evaluations per run{}.\n",
        spec.methods.join(", "),
        spec.problems.join(", "),
        spec.seeds.len(),
        spec.budget,
        if quick { " (--quick)" } else { "" }
    );
    md.push_str(&report::markdown_table(&summaries));
    md.push_str("\nFigures: ");
    let figs: Vec<String> = files
        .iter()
        .filter(|f| f.ends_with(".svg"))
        .map(|f| format!("[{f}]({f})"))
        .collect();
    md.push_str(&figs.join(", "));
    md.push_str(
        "\n\nRaw per-evaluation records: records.jsonl / records.csv; summaries: summary.json.\n",
    );
    report::write_file(&out.join("report.md"), &md)?;
    Ok(summaries)
}

/// `agora reproduce [name]`: one suite, or all of them (each in its own sub-folder, with an
/// index `report.md` at the top).
pub fn reproduce(
    name: Option<&str>,
    quick: bool,
    out: &Path,
    runner: &crate::runner::Runner,
) -> Result<Vec<(String, Vec<Summary>)>> {
    let all = suites();
    let with_hpbo = matches!(name, None | Some("hpbo"));
    let with_cbo = matches!(name, None | Some("cbo"));
    let with_sbo = matches!(name, None | Some("sbo"));
    let with_boap = matches!(name, None | Some("boap"));
    let with_dsbo = matches!(name, None | Some("dsbo"));
    let chosen: Vec<&Suite> = match name {
        Some("hpbo") | Some("cbo") | Some("sbo") | Some("boap") | Some("dsbo") => vec![],
        Some(n) => vec![
            all.iter()
                .find(|s| s.name == n)
                .ok_or_else(|| Error::unknown("suite", n, &suite_names()))?,
        ],
        None => all.iter().collect(),
    };
    let mut results = Vec::new();
    let mut index = String::from("# agora reproduce\n\n");
    for s in chosen {
        let dir = out.join(s.name);
        let sums = run_suite(s, quick, &dir, runner)?;
        let _ = writeln!(index, "- [{}]({}/report.md): {}", s.title, s.name, s.name);
        results.push((s.name.to_string(), sums));
    }
    if with_hpbo {
        crate::hpbo::reproduce(quick, &out.join("hpbo"), runner)?;
        let _ = writeln!(
            index,
            "- [Heteroscedastic preferential BO (Sinaga et al. 2024)](hpbo/report.md): hpbo"
        );
        results.push(("hpbo".to_string(), Vec::new()));
    }
    if with_cbo {
        crate::cbo::reproduce(quick, &out.join("cbo"), runner)?;
        let _ = writeln!(
            index,
            "- [Collaborative BO with fair regret (Sim et al. 2021)](cbo/report.md): cbo"
        );
        results.push(("cbo".to_string(), Vec::new()));
    }
    if with_sbo {
        crate::sbo::reproduce(quick, &out.join("sbo"), runner)?;
        let _ = writeln!(index, "- [Social BO (Adachi et al.)](sbo/report.md): sbo");
        results.push(("sbo".to_string(), Vec::new()));
    }
    if with_boap {
        crate::boap::reproduce(quick, &out.join("boap"), runner, Vec::new())?;
        let _ = writeln!(
            index,
            "- [BOAP: BO with preferences on abstract properties (Kumar A V et al. 2024)](boap/report.md): boap"
        );
        results.push(("boap".to_string(), Vec::new()));
    }
    if with_dsbo {
        crate::dsbo::reproduce(quick, &out.join("dsbo"), runner)?;
        let _ = writeln!(
            index,
            "- [DSBO: dependency-structure search BO for multi-agent policies (Rajpal et al.)](dsbo/report.md): dsbo"
        );
        results.push(("dsbo".to_string(), Vec::new()));
    }
    report::write_file(&out.join("report.md"), &index)?;
    Ok(results)
}
