//! `agora reproduce boap`: BOAP and its baselines on the paper's synthetic functions, the
//! IA / NP ablations, and pool-based tasks (../shared/notes/boap.md §4).
//!
//! Budget (note A2): `T = 10d + 5` evaluations in all, the `t′ = d + 3` initial designs
//! included (the paper's loop `t = t′+1..T`). Evaluations are noise-free (A15). Simple
//! regret after evaluation `t` is `f* − max_{j≤t} f(x_j)`. Every method of a seed shares
//! its initial designs (the same seed draws them).

use crate::report::mean_se;
use agora_core::{Answer, AnswerKind, Error, Point, QueryKind, Result, Space};
use agora_methods::{Arm, Boap, BoapConfig, BoapVariant, Strategy};
use agora_problems::boap::{
    BenchmarkTruth, BoapBenchmark, Features, Pool, PropertyTruth, SimulatedExpert,
};
use serde::{Deserialize, Serialize};

/// Which expert a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// Exact answers on Table 1's accurate features.
    Accurate,
    /// Exact answers on Table 2's uninformative features (BOAP-IA).
    Inaccurate,
    /// Accurate features, each answer flipped with probability δ (BOAP-NP).
    Noisy(f64),
}

impl Setting {
    /// Short name.
    pub fn name(self) -> String {
        match self {
            Setting::Accurate => "accurate".into(),
            Setting::Inaccurate => "IA".into(),
            Setting::Noisy(d) => format!("NP (δ = {d})"),
        }
    }
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoapRun {
    /// Task.
    pub task: String,
    /// Expert setting.
    pub setting: Setting,
    /// Method.
    pub method: String,
    /// Seed.
    pub seed: u64,
    /// Simple regret after each evaluation (initial design included).
    pub regret: Vec<f64>,
    /// Arm pulled per iteration.
    pub arms: Vec<Arm>,
    /// `(score_h, score_f)` per iteration (None when not computed: one-arm methods).
    pub scores: Vec<(Option<f64>, Option<f64>)>,
    /// Property comparisons answered.
    pub comparisons: usize,
    /// Seconds per proposal.
    pub seconds: Vec<f64>,
}

/// A task: a function on a box or a pool of rows.
#[derive(Debug, Clone)]
pub enum Task {
    /// A synthetic benchmark.
    Bench(BoapBenchmark),
    /// A pool (name, pool, initial designs, budget).
    Pool(String, Box<Pool>, usize, usize),
}

impl Task {
    /// Name.
    pub fn name(&self) -> String {
        match self {
            Task::Bench(b) => b.name().to_string(),
            Task::Pool(n, ..) => n.clone(),
        }
    }

    fn space(&self) -> Result<Space> {
        match self {
            Task::Bench(b) => Space::reals(&vec![(0.0, 1.0); b.dim()]),
            Task::Pool(_, p, ..) => p.space(),
        }
    }

    fn init_budget(&self) -> (usize, usize) {
        match self {
            Task::Bench(b) => (b.initial_designs(), b.budget()),
            Task::Pool(_, _, i, t) => (*i, *t),
        }
    }
}

/// The expert of a run, over either truth.
enum Expert {
    Bench(SimulatedExpert<BenchmarkTruth>),
    Pool(SimulatedExpert<Pool>),
}

impl Expert {
    fn answer(&mut self, q: &agora_core::Query) -> Result<Answer> {
        match self {
            Expert::Bench(e) => e.answer(q),
            Expert::Pool(e) => e.answer(q),
        }
    }
}

/// The objective of a task at a point (unit cube or pool row).
type Objective = dyn Fn(&Point) -> Result<f64>;

/// Run `variant` on `task` with the `setting` expert.
pub fn run_one(task: &Task, setting: Setting, variant: BoapVariant, seed: u64) -> Result<BoapRun> {
    let (init, budget) = task.init_budget();
    let expert_seed = agora_math::rng::derive_seed(seed, &[0xE4]);
    let (mut expert, props, objective): (Expert, Vec<String>, Box<Objective>) = match task {
        Task::Bench(b) => {
            let features = if setting == Setting::Inaccurate {
                Features::Inaccurate
            } else {
                Features::Accurate
            };
            let truth = BenchmarkTruth::new(*b, features)?;
            let props = truth.property_names();
            let e = match setting {
                Setting::Noisy(d) => SimulatedExpert::noisy(truth, d, expert_seed)?,
                _ => SimulatedExpert::exact(truth),
            };
            let f = b.function();
            let space = Space::reals(&b.bounds())?;
            (
                Expert::Bench(e),
                props,
                Box::new(move |p: &Point| match p {
                    Point::Unit(u) => Ok(f.eval(&space.to_user_reals(u)?)),
                    Point::Index(_) => Err(Error::invalid("point", "a box task takes unit points")),
                }),
            )
        }
        Task::Pool(_, pool, ..) => {
            let props = pool.property_names.clone();
            let e = match setting {
                Setting::Noisy(d) => SimulatedExpert::noisy((**pool).clone(), d, expert_seed)?,
                _ => SimulatedExpert::exact((**pool).clone()),
            };
            let p2 = (**pool).clone();
            (
                Expert::Pool(e),
                props,
                Box::new(move |p: &Point| match p {
                    Point::Index(r) => p2.objective_at(*r),
                    Point::Unit(_) => Err(Error::invalid("point", "a pool task takes row indices")),
                }),
            )
        }
    };
    let f_star = match task {
        Task::Bench(b) => b.function().optimum_value(),
        Task::Pool(_, p, ..) => p.optimum_value(),
    };
    let mut cfg = BoapConfig::paper(props.len(), init, variant);
    cfg.properties = props;
    let mut s = Boap::new(task.space()?, cfg, seed)?;
    let mut best = f64::NEG_INFINITY;
    let mut regret = Vec::with_capacity(budget);
    let mut comparisons = 0;
    while regret.len() < budget {
        let q = s.ask()?;
        let a = match &q.kind {
            QueryKind::Evaluate { points } => {
                let v = objective(&points[0])?;
                best = best.max(v);
                regret.push((f_star - best).max(0.0));
                Answer {
                    query_id: q.id,
                    kind: AnswerKind::Values { values: vec![v] },
                }
            }
            QueryKind::Compare { .. } => {
                comparisons += 1;
                expert.answer(&q)?
            }
            _ => {
                return Err(Error::invalid(
                    "query",
                    "BOAP asks evaluations and comparisons",
                ));
            }
        };
        s.tell(&a)?;
    }
    Ok(BoapRun {
        task: task.name(),
        setting,
        method: variant.name().to_string(),
        seed,
        regret,
        arms: s.records().iter().map(|r| r.arm).collect(),
        scores: s
            .records()
            .iter()
            .map(|r| {
                let f = |v: f64| v.is_finite().then_some(v);
                (f(r.score_human), f(r.score_control))
            })
            .collect(),
        comparisons,
        seconds: s.records().iter().map(|r| r.seconds).collect(),
    })
}

/// The jobs of the suite: `(task, setting, method)`.
pub fn jobs(tasks: &[Task]) -> Vec<(usize, Setting, BoapVariant)> {
    let mut v = Vec::new();
    for (ti, t) in tasks.iter().enumerate() {
        for m in [
            BoapVariant::Boap,
            BoapVariant::BoapFullData,
            BoapVariant::BoapOa,
            BoapVariant::BoTs,
            BoapVariant::BoEi,
        ] {
            v.push((ti, Setting::Accurate, m));
        }
        if let Task::Bench(_) = t {
            for setting in [Setting::Inaccurate, Setting::Noisy(0.3)] {
                for m in [
                    BoapVariant::Boap,
                    BoapVariant::BoapFullData,
                    BoapVariant::BoapOa,
                ] {
                    v.push((ti, setting, m));
                }
            }
        }
    }
    v
}

/// Tasks of the suite: the three functions and the synthetic electrode pool (`--quick`:
/// Benchmark-1d and Rosenbrock-3d).
pub fn tasks(quick: bool) -> Vec<Task> {
    let mut t = vec![
        Task::Bench(BoapBenchmark::Benchmark1d),
        Task::Bench(BoapBenchmark::Rosenbrock3d),
    ];
    if !quick {
        t.push(Task::Bench(BoapBenchmark::Griewank5d));
        t.push(electrode_task(0));
    }
    t
}

/// The synthetic electrode pool with the paper's real-world protocol: 4 initial rows and 50
/// iterations.
pub fn electrode_task(seed: u64) -> Task {
    Task::Pool(
        "electrode-pool".into(),
        Box::new(agora_problems::boap::synthetic_electrode_pool(seed)),
        4,
        54,
    )
}

/// Run the suite in parallel (progress bar) and write runs, plots and the report.
pub fn reproduce(
    quick: bool,
    dir: &std::path::Path,
    progress: bool,
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
    for (ti, setting, m) in jobs(&task_list) {
        for &s in &seeds {
            all.push((ti, setting, m, s));
        }
    }
    // Long jobs first.
    all.sort_by_key(|(ti, _, m, _)| {
        (
            std::cmp::Reverse(task_list[*ti].init_budget().1),
            usize::from(!m.uses_expert()),
        )
    });
    let t0 = std::time::Instant::now();
    let runs: Vec<BoapRun> =
        crate::runner::run_parallel("boap", &all, progress, |&(ti, setting, m, s)| {
            run_one(&task_list[ti], setting, m, s)
        })?;
    let wall = t0.elapsed().as_secs_f64();
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::invalid("out", format!("cannot create {}: {e}", dir.display())))?;
    let json = serde_json::to_string_pretty(&runs).map_err(|e| Error::Numerical(e.to_string()))?;
    crate::report::write_file(&dir.join("runs.json"), &json)?;
    let mut figs = Vec::new();
    for t in &task_list {
        let settings: Vec<Setting> = match t {
            Task::Bench(_) => vec![Setting::Accurate, Setting::Inaccurate, Setting::Noisy(0.3)],
            Task::Pool(..) => vec![Setting::Accurate],
        };
        for setting in settings {
            let series: Vec<(String, Vec<f64>, Vec<f64>)> = methods_of(&runs, &t.name(), setting)
                .into_iter()
                .map(|m| {
                    let rs: Vec<&BoapRun> = select(&runs, &t.name(), setting, &m);
                    let (mean, se) = curve(&rs);
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
            figs.extend(crate::hpbo::plot(
                dir,
                &stem,
                &format!("{} ({}): simple regret", t.name(), setting.name()),
                "simple regret",
                &series,
            )?);
        }
    }
    let md = report_markdown(&task_list, &runs, quick, wall, &figs);
    crate::report::write_file(&dir.join("report.md"), &md)?;
    Ok(runs)
}

fn select<'a>(runs: &'a [BoapRun], task: &str, setting: Setting, method: &str) -> Vec<&'a BoapRun> {
    runs.iter()
        .filter(|r| r.task == task && r.setting == setting && r.method == method)
        .collect()
}

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
    let order = ["boap", "boap-fd", "boap-oa", "bo-ts", "bo-ei"];
    v.sort_by_key(|m| order.iter().position(|o| o == m).unwrap_or(9));
    v
}

/// Mean ± SE of simple regret per evaluation.
fn curve(runs: &[&BoapRun]) -> (Vec<f64>, Vec<f64>) {
    let t = runs.iter().map(|r| r.regret.len()).min().unwrap_or(0);
    (0..t)
        .map(|k| mean_se(&runs.iter().map(|r| r.regret[k]).collect::<Vec<_>>()))
        .unzip()
}

fn final_regret(runs: &[&BoapRun]) -> (f64, f64) {
    mean_se(
        &runs
            .iter()
            .map(|r| *r.regret.last().unwrap_or(&f64::NAN))
            .collect::<Vec<_>>(),
    )
}

/// Mean ± SE over runs of the simple regret averaged over the run's evaluations (the area
/// under the regret curve, per evaluation): it separates methods that all end at zero.
fn mean_regret(runs: &[&BoapRun]) -> (f64, f64) {
    mean_se(
        &runs
            .iter()
            .map(|r| r.regret.iter().sum::<f64>() / r.regret.len().max(1) as f64)
            .collect::<Vec<_>>(),
    )
}

fn ms((m, s): (f64, f64)) -> String {
    if m.abs() < 1e-3 && m != 0.0 {
        format!("{m:.2e} ± {s:.1e}")
    } else {
        format!("{m:.4} ± {s:.4}")
    }
}

/// Fraction of iterations on which Arm-𝔣 was pulled, over BOAP runs.
fn control_share(runs: &[&BoapRun]) -> (usize, usize) {
    let arms: Vec<&Arm> = runs.iter().flat_map(|r| r.arms.iter()).collect();
    (
        arms.iter().filter(|a| ***a == Arm::Control).count(),
        arms.len(),
    )
}

/// The report: tables of final simple regret and a verdict per claim of note §4.6.
pub fn report_markdown(
    tasks: &[Task],
    runs: &[BoapRun],
    quick: bool,
    wall: f64,
    figs: &[String],
) -> String {
    use std::fmt::Write as _;
    let mut md = String::from("# BOAP: BO with preferences on abstract properties\n\n");
    let _ = writeln!(
        md,
        "Methods: **boap** (two arms chosen by the held-out predictive log-density of the most recent 20 % of \
         the designs), **boap-fd** (two arms chosen by the maximized marginal likelihood on all data, as the \
         authors' code does), **boap-oa** (augmented arm only), **bo-ts** and **bo-ei** (a GP on x with Thompson \
         sampling / expected improvement). Rank GPs: probit with σ̃² = 0.1, lengthscales by the Laplace \
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
        let settings: Vec<Setting> = match t {
            Task::Bench(_) => vec![Setting::Accurate, Setting::Inaccurate, Setting::Noisy(0.3)],
            Task::Pool(..) => vec![Setting::Accurate],
        };
        let (init, budget) = t.init_budget();
        let _ = writeln!(
            md,
            "\n## {name} (t′ = {init}, T = {budget})\n\n| expert | method | final simple regret | mean simple regret over the run | Arm-𝔣 share | comparisons | s / proposal |\n|---|---|---|---|---|---|---|"
        );
        for &setting in &settings {
            for m in methods_of(runs, &name, setting) {
                let rs = select(runs, &name, setting, &m);
                let (c, n) = control_share(&rs);
                let comps: f64 =
                    rs.iter().map(|r| r.comparisons as f64).sum::<f64>() / rs.len().max(1) as f64;
                let secs: f64 = rs.iter().flat_map(|r| r.seconds.iter()).sum::<f64>()
                    / rs.iter().map(|r| r.seconds.len()).sum::<usize>().max(1) as f64;
                let _ = writeln!(
                    md,
                    "| {} | {m} | {} | {} | {} | {comps:.0} | {secs:.3} |",
                    setting.name(),
                    ms(final_regret(&rs)),
                    ms(mean_regret(&rs)),
                    if m == "boap" || m == "boap-fd" {
                        format!("{c}/{n}")
                    } else {
                        "–".into()
                    },
                );
            }
        }
        let get = |setting: Setting, m: &str| final_regret(&select(runs, &name, setting, m));
        let boap = get(Setting::Accurate, "boap");
        let ts = get(Setting::Accurate, "bo-ts");
        let ei = get(Setting::Accurate, "bo-ei");
        let ok = boap.0 <= ts.0 && boap.0 <= ei.0;
        let near =
            |a: (f64, f64), b: (f64, f64)| a.0 <= b.0 + 2.0 * (a.1.powi(2) + b.1.powi(2)).sqrt();
        claims.push(ok);
        let _ = writeln!(
            md,
            "\n- **Accurate features: BOAP's final regret ≤ BO-TS and BO-EI**: {} — BOAP {}, BO-TS {}, BO-EI {}.",
            if ok {
                "supported"
            } else if near(boap, ts) && near(boap, ei) {
                "not supported, within 2 combined SE of both"
            } else {
                "not supported"
            },
            ms(boap),
            ms(ts),
            ms(ei)
        );
        let auc = |m: &str| mean_regret(&select(runs, &name, Setting::Accurate, m));
        let _ = writeln!(
            md,
            "- Mean simple regret over the run (accurate features): BOAP {}, BOAP-FD {}, BOAP-OA {}, BO-TS {}, BO-EI {}.",
            ms(auc("boap")),
            ms(auc("boap-fd")),
            ms(auc("boap-oa")),
            ms(auc("bo-ts")),
            ms(auc("bo-ei"))
        );
        if let Task::Bench(_) = t {
            for setting in [Setting::Inaccurate, Setting::Noisy(0.3)] {
                let b = get(setting, "boap");
                let within = b.0 <= ts.0 + 2.0 * (b.1.powi(2) + ts.1.powi(2)).sqrt();
                let _ = writeln!(
                    md,
                    "- **{}: BOAP not materially worse than BO-TS** (within 2 combined SE or better): {} — BOAP {}, BO-TS {}.",
                    setting.name(),
                    if within { "supported" } else { "not supported" },
                    ms(b),
                    ms(ts)
                );
            }
            let (ca, na) = control_share(&select(runs, &name, Setting::Accurate, "boap"));
            let (ci, ni) = control_share(&select(runs, &name, Setting::Inaccurate, "boap"));
            let fa = ca as f64 / na.max(1) as f64;
            let fi = ci as f64 / ni.max(1) as f64;
            let _ = writeln!(
                md,
                "- **Arm-𝔣 is pulled more often under IA than with accurate features**: {} — {ci}/{ni} ({:.0} %) \
                 under IA against {ca}/{na} ({:.0} %) accurate.",
                if fi > fa {
                    "supported"
                } else {
                    "not supported"
                },
                100.0 * fi,
                100.0 * fa
            );
            // Why: what the augmented arm does alone, and what the arm choice adds.
            let oa = get(Setting::Accurate, "boap-oa");
            let fd = get(Setting::Accurate, "boap-fd");
            let verdict = |a: (f64, f64), b: (f64, f64)| {
                let gap = 2.0 * (a.1.powi(2) + b.1.powi(2)).sqrt();
                if a.0 + gap < b.0 {
                    "better than"
                } else if a.0 > b.0 + gap {
                    "worse than"
                } else {
                    "within 2 SE of"
                }
            };
            let (cf, nf) = control_share(&select(runs, &name, Setting::Accurate, "boap-fd"));
            let (cfi, nfi) = control_share(&select(runs, &name, Setting::Inaccurate, "boap-fd"));
            let _ = writeln!(
                md,
                "- *Reading:* the augmented arm alone (BOAP-OA, {}) is {} BO-TS ({}), so on this function the \
                 expert's features {}. Two-arm BOAP pulls Arm-𝔣 on {ca}/{na} iterations with the held-out rule \
                 ({}); the full-data rule (BOAP-FD, {}) pulls it on {cf}/{nf} with accurate features and on \
                 {cfi}/{nfi} under IA.",
                ms(oa),
                verdict(oa, ts),
                ms(ts),
                match verdict(oa, ts) {
                    "better than" => "help the surrogate",
                    "worse than" => "mislead the surrogate",
                    _ => "make no clear difference",
                },
                ms(boap),
                ms(fd)
            );
        }
    }
    md.push_str(
        "\n**Why the headline does not carry over in full.** The paper reports plots only (no numbers), so agora \
         compares methods on the same seeds. Three measured effects decide the outcome here: (1) whether the \
         augmented arm itself models the function better (the BOAP-OA rows: it depends on the function); (2) the \
         arm choice: the held-out rule scores each arm on the most recent 20 % of the designs (2 to 11 points, \
         clustered where Thompson sampling went), a noisy score under which the arms alternate, and each switch \
         changes the model the next draw comes from; the full-data rule (the authors' code, BOAP-FD) falls back \
         to Arm-𝔣 more under the IA expert, which is the guard the paper describes (the Reading lines give the \
         counts); (3) the baselines themselves: BO-EI, whose exploitation suits these noise-free functions, is the \
         strongest method on some of them (see the tables).\n",
    );
    let _ = writeln!(
        md,
        "\n**Summary.** With accurate features BOAP's final regret is at most BO-TS's and BO-EI's on {} of {} tasks.",
        claims.iter().filter(|c| **c).count(),
        claims.len()
    );
    md.push_str("\n## Figures\n\n");
    for f in figs.iter().filter(|f| f.ends_with(".svg")) {
        let _ = writeln!(md, "- [{f}]({f})");
    }
    md
}
