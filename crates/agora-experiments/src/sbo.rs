//! `agora reproduce sbo`: Social BO and its baselines on simulated groups
//! (../shared/notes/social-bo.md §4).
//!
//! Metrics per round `t` (note §4.3): the welfare regret `S* − S(x_t)` of the option
//! proposed (true utilities, the facilitator's ρ), cumulative and simple regret, the
//! cumulative private votes `|Q^u_t|` (initial design included), the graph error
//! `‖Â − A‖_F` (SBO), and the wall time of the round's model work.

use crate::report::mean_se;
use agora_core::{Result, Space};
use agora_methods::{Sbo, SboConfig, SboGp, SboGpConfig, SboGpVariant, SboVariant, Strategy};
use agora_problems::social::{SocialGroup, SocialTask};
use serde::{Deserialize, Serialize};

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SboRun {
    /// Task.
    pub task: String,
    /// Method.
    pub method: String,
    /// Seed.
    pub seed: u64,
    /// Each round's proposal (unit cube).
    pub x: Vec<Vec<f64>>,
    /// Regret of each round's proposal.
    pub regret: Vec<f64>,
    /// Cumulative private votes after each round.
    pub private: Vec<usize>,
    /// `‖Â − A‖_F` after each round (empty unless learned).
    pub graph_error: Vec<f64>,
    /// Seconds of model work per round.
    pub seconds: Vec<f64>,
    /// Final `L`.
    pub bound: f64,
    /// Total vote cost `λ_u |Q^u| + λ_v |Q^v|` (λ_u = 10, λ_v = 1), initial design included.
    #[serde(default)]
    pub cost: f64,
}

impl SboRun {
    fn empty(task: &SocialTask, method: String, seed: u64) -> SboRun {
        SboRun {
            task: task.name.clone(),
            method,
            seed,
            x: Vec::new(),
            regret: Vec::new(),
            private: Vec::new(),
            graph_error: Vec::new(),
            seconds: Vec::new(),
            bound: 0.0,
            cost: 0.0,
        }
    }

    /// Keep the first `rounds` rounds (a private follow-up can add one more).
    fn truncate(&mut self, rounds: usize) {
        self.regret.truncate(rounds);
        self.x.truncate(rounds);
        self.private.truncate(rounds);
        self.seconds.truncate(rounds);
        self.graph_error.truncate(rounds);
    }
}

/// `‖Â − A‖_F` of row-major matrices.
fn graph_error(graph: &[f64], truth: &[f64]) -> f64 {
    graph
        .iter()
        .zip(truth)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt()
}

/// The methods compared.
pub fn methods(task: &SocialTask) -> Vec<SboVariant> {
    vec![
        SboVariant::Sbo,
        SboVariant::Oracle(task.graph.clone()),
        SboVariant::SingleAgent,
        SboVariant::Independent,
        SboVariant::PrivateOnly,
    ]
}

/// Settings of a task (lengthscale per task dimension).
pub fn config(task: &SocialTask, variant: SboVariant) -> SboConfig {
    let mut c = SboConfig::paper(task.agents, task.rho, variant);
    c.lengthscale = if task.dim == 1 { 0.1 } else { 0.25 };
    c.gram = task.gram.clone();
    c
}

/// Run `method` on `task` for `rounds` proposal rounds.
pub fn run_one(task: &SocialTask, variant: SboVariant, seed: u64, rounds: usize) -> Result<SboRun> {
    let space = task_space(task)?;
    let method = variant.name().to_string();
    let mut s = Sbo::new(space, config(task, variant), seed)?;
    let mut group = SocialGroup::new(task, agora_math::rng::derive_seed(seed, &[0x6B]));
    let (_, s_star) = task.optimum();
    let truth: Vec<f64> = task.graph.iter().flatten().copied().collect();
    let mut run = SboRun::empty(task, method, seed);
    let mut seen = 0;
    while s.rounds().len() < rounds || s.private_pending() {
        let q = s.ask()?;
        let a = group.answer(&q)?;
        s.tell(&a)?;
        while seen < s.rounds().len() {
            let r = &s.rounds()[seen];
            run.regret.push((s_star - task.welfare_at(&r.x)).max(0.0));
            run.x.push(r.x.clone());
            run.seconds.push(r.seconds);
            if !r.graph.is_empty() {
                run.graph_error.push(graph_error(&r.graph, &truth));
            }
            run.private.push(s.counts()[0]);
            seen += 1;
        }
        // A private follow-up belongs to the round it follows.
        if let Some(p) = run.private.last_mut() {
            *p = s.counts()[0];
        }
    }
    run.truncate(rounds);
    run.bound = s.model().config().bound;
    run.cost = group.cost();
    Ok(run)
}

/// Settings of the GP variant on a task (its kernel: the task's Gram over a finite set, or
/// RBF lengthscales from a grid).
pub fn gp_config(task: &SocialTask, variant: SboGpVariant) -> SboGpConfig {
    let mut c = SboGpConfig::new(task.agents, task.rho, variant);
    c.gram = task.gram.clone();
    c
}

/// Run a GP-variant method on `task` for `rounds` rounds: the group rates options with
/// noise `rating_noise` (0.1). The run's `private` counts private group ratings.
pub fn run_gp_one(
    task: &SocialTask,
    variant: SboGpVariant,
    seed: u64,
    rounds: usize,
) -> Result<SboRun> {
    let space = task_space(task)?;
    let mut s = SboGp::new(space, gp_config(task, variant), seed)?;
    let mut group = SocialGroup::new(task, agora_math::rng::derive_seed(seed, &[0x6C]));
    let (_, s_star) = task.optimum();
    let truth: Vec<f64> = task.graph.iter().flatten().copied().collect();
    let mut run = SboRun::empty(task, variant.name().to_string(), seed);
    let mut seen = 0;
    while s.rounds().len() < rounds || s.round_open() {
        let q = s.ask()?;
        let a = group.answer(&q)?;
        s.tell(&a)?;
        while seen < s.rounds().len() {
            let r = &s.rounds()[seen];
            run.regret.push((s_star - task.welfare_at(&r.x)).max(0.0));
            run.x.push(r.x.clone());
            run.seconds.push(r.seconds);
            if !r.graph.is_empty() {
                run.graph_error.push(graph_error(&r.graph, &truth));
            }
            run.private.push(s.counts()[0]);
            seen += 1;
        }
        if let Some(p) = run.private.last_mut() {
            *p = s.counts()[0];
        }
        if let (Some(g), Some(r)) = (run.graph_error.last_mut(), s.rounds().last())
            && !r.graph.is_empty()
        {
            *g = graph_error(&r.graph, &truth);
        }
    }
    run.truncate(rounds);
    run.cost = group.cost();
    Ok(run)
}

fn task_space(task: &SocialTask) -> Result<Space> {
    match &task.options {
        Some(opts) => Ok(Space::Candidates {
            names: (0..opts.len()).map(|i| i.to_string()).collect(),
            features: opts.clone(),
        }),
        None => Space::reals(&vec![(0.0, 1.0); task.dim]),
    }
}

/// Mean ± SE of the final cumulative regret, simple regret and private votes.
pub fn summary(runs: &[&SboRun]) -> ((f64, f64), (f64, f64), (f64, f64)) {
    let cum: Vec<f64> = runs.iter().map(|r| r.regret.iter().sum()).collect();
    let simple: Vec<f64> = runs
        .iter()
        .map(|r| r.regret.iter().cloned().fold(f64::INFINITY, f64::min))
        .collect();
    let private: Vec<f64> = runs
        .iter()
        .map(|r| *r.private.last().unwrap_or(&0) as f64)
        .collect();
    (mean_se(&cum), mean_se(&simple), mean_se(&private))
}

/// Tasks of the suite (the quick suite: the toy and thermal comfort).
pub fn tasks(quick: bool) -> Vec<&'static str> {
    if quick {
        vec!["toy", "thermal"]
    } else {
        SocialTask::names()
    }
}

/// Proposal rounds per run.
pub fn rounds(quick: bool) -> usize {
    if quick { 6 } else { 25 }
}

/// Run every method × task × seed (parallel, progress bar) and write the report into `dir`.
pub fn reproduce(quick: bool, dir: &std::path::Path, progress: bool) -> Result<Vec<SboRun>> {
    let seeds: Vec<u64> = if quick {
        (0..2).collect()
    } else {
        (0..10).collect()
    };
    let t_rounds = rounds(quick);
    let task_list: Vec<SocialTask> = tasks(quick)
        .iter()
        .map(|n| SocialTask::by_name(n))
        .collect::<Result<_>>()?;
    let mut jobs: Vec<(usize, SboVariant, u64)> = Vec::new();
    for (ti, t) in task_list.iter().enumerate() {
        for v in methods(t) {
            for &s in &seeds {
                jobs.push((ti, v.clone(), s));
            }
        }
    }
    // Expensive jobs first, so the tail of the run stays parallel.
    jobs.sort_by_key(|(ti, v, _)| (usize::from(v.name() != "sbo"), task_list[*ti].agents == 2));
    let t0 = std::time::Instant::now();
    let runs: Vec<SboRun> = crate::runner::run_parallel("sbo", &jobs, progress, |(ti, v, s)| {
        run_one(&task_list[*ti], v.clone(), *s, t_rounds)
    })?;
    let wall = t0.elapsed().as_secs_f64();
    std::fs::create_dir_all(dir).map_err(|e| {
        agora_core::Error::invalid("out", format!("cannot create {}: {e}", dir.display()))
    })?;
    let json = serde_json::to_string_pretty(&runs)
        .map_err(|e| agora_core::Error::Numerical(e.to_string()))?;
    crate::report::write_file(&dir.join("runs.json"), &json)?;
    let mut figs = Vec::new();
    for t in &task_list {
        let names: Vec<&'static str> = methods(t).iter().map(|v| v.name()).collect();
        for (stem, title, y) in [
            ("cumulative_regret", "cumulative regret", "R_t"),
            ("private_votes", "cumulative private votes", "|Q^u_t|"),
        ] {
            let series: Vec<(String, Vec<f64>, Vec<f64>)> = names
                .iter()
                .map(|m| {
                    let rs: Vec<&SboRun> = runs
                        .iter()
                        .filter(|r| r.task == t.name && r.method == *m)
                        .collect();
                    let (mean, se) = curve(&rs, stem == "private_votes");
                    (m.to_string(), mean, se)
                })
                .collect();
            figs.extend(crate::hpbo::plot(
                dir,
                &format!("{}_{stem}", t.name),
                &format!("{}: {title}", t.name),
                y,
                &series,
            )?);
        }
    }
    // Graph error of SBO per task.
    let series: Vec<(String, Vec<f64>, Vec<f64>)> = task_list
        .iter()
        .filter_map(|t| {
            let rs: Vec<&SboRun> = runs
                .iter()
                .filter(|r| r.task == t.name && r.method == "sbo" && !r.graph_error.is_empty())
                .collect();
            let len = rs.iter().map(|r| r.graph_error.len()).min()?;
            let (mut mean, mut se) = (Vec::new(), Vec::new());
            for k in 0..len {
                let v: Vec<f64> = rs.iter().map(|r| r.graph_error[k]).collect();
                let (m, e) = mean_se(&v);
                mean.push(m);
                se.push(e);
            }
            Some((t.name.clone(), mean, se))
        })
        .collect();
    if !series.is_empty() {
        figs.extend(crate::hpbo::plot(
            dir,
            "sbo_graph_error",
            "SBO: graph error ||A_hat - A||_F",
            "||A_hat - A||_F",
            &series,
        )?);
    }
    let mut md = report_markdown(&task_list, &runs, quick, wall, t_rounds, &figs);
    md.push_str(&reproduce_gp(quick, dir, progress)?);
    crate::report::write_file(&dir.join("report.md"), &md)?;
    Ok(runs)
}

/// Mean and SE per round of cumulative regret (or private votes).
fn curve(runs: &[&SboRun], private: bool) -> (Vec<f64>, Vec<f64>) {
    let t = runs.iter().map(|r| r.regret.len()).min().unwrap_or(0);
    let mut mean = Vec::with_capacity(t);
    let mut se = Vec::with_capacity(t);
    for k in 0..t {
        let vals: Vec<f64> = runs
            .iter()
            .map(|r| {
                if private {
                    r.private[k] as f64
                } else {
                    r.regret[..=k].iter().sum()
                }
            })
            .collect();
        let (m, s) = mean_se(&vals);
        mean.push(m);
        se.push(s);
    }
    (mean, se)
}

fn ms((m, s): (f64, f64)) -> String {
    format!("{m:.3} ± {s:.3}")
}

/// The markdown report with a verdict per claim of note §4.7.
pub fn report_markdown(
    tasks: &[SocialTask],
    runs: &[SboRun],
    quick: bool,
    wall: f64,
    rounds: usize,
    figs: &[String],
) -> String {
    use std::fmt::Write as _;
    let mut md =
        String::from("# Social BO (Adachi et al.): consensus from public and private votes\n\n");
    let _ = writeln!(
        md,
        "Methods: SBO (v = A u, A learned), Oracle (A known, public votes only), Single Agent (one utility \
         fitted to everyone's public votes), Independent (u from private votes, public votes unlinked, same \
         private-vote rule), private-only (a private vote every round). 5 random initial pairs, then {rounds} \
         rounds; q = 0.5, β = 0.5 (joint likelihood-ratio set), L from 1.5 doubling up to 12, RBF kernel \
         (lengthscale 0.1 in 1-D, 0.25 in 2-D), coherent graph prior (κ = 1.05, ξ = 1/(4n²), δ_A = 0.01). \
         Regret is the facilitator's Gini welfare of the true utilities at each round's proposal. Private votes \
         count the initial design. Mean ± SE over {} seeds{}. Wall time: {wall:.0} s.\n",
        runs.iter().map(|r| r.seed).max().map_or(0, |s| s + 1),
        if quick {
            " (--quick: too few for conclusions)"
        } else {
            ""
        }
    );
    for t in tasks {
        let (xs, s_star) = t.optimum();
        let (xc, _) = t.corrupted_optimum();
        let _ = writeln!(
            md,
            "\n## {} (n = {}, ρ = {})\n\nx* = {:?} (welfare {s_star:.4}); the public-vote optimum is {:?}; A = {:?}.\n\n\
             | method | cumulative regret | simple regret | private votes | vote cost (λ_u = 10, λ_v = 1) | graph error ‖Â − A‖_F | s / round |\n|---|---|---|---|---|---|---|",
            t.name,
            t.agents,
            t.rho,
            xs.iter()
                .map(|v| (v * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>(),
            xc.iter()
                .map(|v| (v * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>(),
            t.graph
        );
        let mut rows = Vec::new();
        for v in methods(t) {
            let rs: Vec<&SboRun> = runs
                .iter()
                .filter(|r| r.task == t.name && r.method == v.name())
                .collect();
            if rs.is_empty() {
                continue;
            }
            let (cum, simple, private) = summary(&rs);
            let ge: Vec<f64> = rs
                .iter()
                .filter_map(|r| r.graph_error.last().copied())
                .collect();
            let secs: Vec<f64> = rs
                .iter()
                .map(|r| r.seconds.iter().sum::<f64>() / r.seconds.len().max(1) as f64)
                .collect();
            let cost: Vec<f64> = rs.iter().map(|r| r.cost).collect();
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {:.3} |",
                v.name(),
                ms(cum),
                ms(simple),
                ms(private),
                ms(mean_se(&cost)),
                if ge.is_empty() {
                    "–".to_string()
                } else {
                    ms(mean_se(&ge))
                },
                mean_se(&secs).0
            );
            rows.push((v.name(), cum, private, rs));
        }
        let get = |m: &str| rows.iter().find(|r| r.0 == m);
        if let Some(sbo) = get("sbo") {
            let others: Vec<_> = rows
                .iter()
                .filter(|r| r.0 != "sbo" && r.0 != "oracle")
                .collect();
            let best_other = others
                .iter()
                .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
                .map(|r| (r.0, r.1));
            if let Some((name, c)) = best_other {
                let _ = writeln!(
                    md,
                    "\n- **SBO's regret is the lowest among non-oracle methods**: {} — SBO {}, best other ({name}) {}.",
                    if sbo.1.0 <= c.0 {
                        "supported"
                    } else if sbo.1.0 - c.0 <= 2.0 * (sbo.1.1.powi(2) + c.1.powi(2)).sqrt() {
                        "not supported, within 2 SE"
                    } else {
                        "not supported"
                    },
                    ms(sbo.1),
                    ms(c)
                );
            }
            let private_users: Vec<_> = rows
                .iter()
                .filter(|r| r.0 == "independent" || r.0 == "private-only")
                .collect();
            if !private_users.is_empty() {
                let fewest = private_users.iter().all(|r| sbo.2.0 <= r.2.0);
                let _ = writeln!(
                    md,
                    "- **SBO asks the fewest private votes (among methods that use them)**: {} — SBO {}, {}.",
                    if fewest { "supported" } else { "not supported" },
                    ms(sbo.2),
                    private_users
                        .iter()
                        .map(|r| format!("{} {}", r.0, ms(r.2)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            // Sublinear private votes: new private votes in the second half of the rounds
            // against the first half.
            let halves: Vec<(f64, f64)> = sbo
                .3
                .iter()
                .filter(|r| r.private.len() >= 4)
                .map(|r| {
                    let t = r.private.len();
                    let first = (r.private[t / 2 - 1] - r.private[0]) as f64;
                    let second = (r.private[t - 1] - r.private[t / 2 - 1]) as f64;
                    (first, second)
                })
                .collect();
            if !halves.is_empty() {
                let f: f64 = halves.iter().map(|h| h.0).sum::<f64>() / halves.len() as f64;
                let s: f64 = halves.iter().map(|h| h.1).sum::<f64>() / halves.len() as f64;
                let _ = writeln!(
                    md,
                    "- **SBO's private votes grow sublinearly**: {} — new private votes in the first half of the rounds \
                     {f:.2}, in the second half {s:.2} (a linear rule asks one per round: {}).",
                    if s < f { "supported" } else { "not supported" },
                    rounds / 2
                );
            }
        }
    }
    md.push_str("\n## Figures\n\n");
    for f in figs.iter().filter(|f| f.ends_with(".svg")) {
        let _ = writeln!(md, "- [{f}]({f})");
    }
    md.push_str(
        "\n## Reading the results\n\n\
         SBO's advantage rests on learning A from the pairs that get both votes: once Â is right, public votes \
         are debiased and private ones stop. With 10–20 private group votes in 25 rounds, Â stays far from A \
         (the graph-error column); agora's recovery test needs about 160 dual votes for ‖Â − A‖_F ≈ 0.3. So the \
         private-vote rule `w^u ≥ max(t^−q, w^v)` keeps firing while the u-difference interval (which carries \
         A's uncertainty) stays wider than the public one, and the regret differences between methods stay \
         within noise at this horizon. The paper does not state its horizon. Lengthscales are fixed per task: \
         choosing them by cross-validation of held-out votes every 5 rounds (`SboConfig::cv_every`) raised the \
         toy's cumulative regret over 20 rounds from 6.5 to 8.8 (mean of 4 seeds), so the suite leaves it off.\n\n\
         The hotel and energy tasks are synthetic stand-ins (the paper's TripAdvisor and METER data are not available); see \
         agora-problems' `social` module for their construction.\n",
    );
    md
}

/// Tasks of the GP-variant suite (`--quick`: the toy and thermal comfort).
pub fn gp_tasks(quick: bool) -> Vec<&'static str> {
    tasks(quick)
}

/// Rounds of the GP-variant suite: its rounds cost milliseconds, so it runs longer than the
/// vote-based suite (60; `--quick` 15).
pub fn gp_rounds(quick: bool) -> usize {
    if quick { 15 } else { 60 }
}

/// The GP variant (App. F.1) against GP-UCB and MT-GP-UCB on every task (App. H.3):
/// runs, plots and the report's section (returned as markdown).
pub fn reproduce_gp(quick: bool, dir: &std::path::Path, progress: bool) -> Result<String> {
    let seeds: Vec<u64> = if quick {
        (0..2).collect()
    } else {
        (0..10).collect()
    };
    let t_rounds = gp_rounds(quick);
    let task_list: Vec<SocialTask> = gp_tasks(quick)
        .iter()
        .map(|n| SocialTask::by_name(n))
        .collect::<Result<_>>()?;
    let mut jobs = Vec::new();
    for ti in 0..task_list.len() {
        for v in SboGpVariant::all() {
            for &s in &seeds {
                jobs.push((ti, v, s));
            }
        }
    }
    let t0 = std::time::Instant::now();
    let runs: Vec<SboRun> =
        crate::runner::run_parallel("sbo-gp", &jobs, progress, |&(ti, v, s)| {
            run_gp_one(&task_list[ti], v, s, t_rounds)
        })?;
    let wall = t0.elapsed().as_secs_f64();
    let json = serde_json::to_string_pretty(&runs)
        .map_err(|e| agora_core::Error::Numerical(e.to_string()))?;
    crate::report::write_file(&dir.join("gp_runs.json"), &json)?;
    let names: Vec<&'static str> = SboGpVariant::all().iter().map(|v| v.name()).collect();
    let mut figs = Vec::new();
    for t in &task_list {
        for (stem, title, y) in [
            (
                "gp_cumulative_regret",
                "GP variant: cumulative regret",
                "R_t",
            ),
            (
                "gp_private_ratings",
                "GP variant: cumulative private ratings",
                "|Q^u_t|",
            ),
        ] {
            let series: Vec<(String, Vec<f64>, Vec<f64>)> = names
                .iter()
                .map(|m| {
                    let rs: Vec<&SboRun> = runs
                        .iter()
                        .filter(|r| r.task == t.name && r.method == *m)
                        .collect();
                    let (mean, se) = curve(&rs, stem == "gp_private_ratings");
                    (m.to_string(), mean, se)
                })
                .collect();
            figs.extend(crate::hpbo::plot(
                dir,
                &format!("{}_{stem}", t.name),
                &format!("{}: {title}", t.name),
                y,
                &series,
            )?);
        }
    }
    Ok(gp_markdown(&task_list, &runs, quick, wall, t_rounds, &figs))
}

/// The GP variant's section of the report, with a verdict per claim of App. H.3.
pub fn gp_markdown(
    tasks: &[SocialTask],
    runs: &[SboRun],
    quick: bool,
    wall: f64,
    rounds: usize,
    figs: &[String],
) -> String {
    use std::fmt::Write as _;
    let mut md = String::from("\n# GP variant (App. F.1, experiments of App. H.3)\n\n");
    let _ = writeln!(
        md,
        "Feedback: every agent rates the proposed option with a noisy utility value (noise sd 0.1), publicly \
         (`v = A u`) or privately (`u`). **sbo-gp**: public ratings every round, `u = B̂ v` with `B = (A + λI)⁻¹` \
         estimated by Eq. 151 and its Laplace posterior, variance propagated by Goodman's formula generalized to \
         the correlated Laplace rows, private rating when `w_B ≥ max(t^−q, w_v)`. **gp-ucb-u / gp-ucb-v**: one \
         GP on the welfare of the private / public ratings (a private / public rating every round). \
         **mt-gp-ucb-u / mt-gp-ucb-uv**: a multi-task GP without graph structure on the private ratings / on \
         both channels (both every round). All: welfare of the agents' UCBs, β^(1/2) = 2, RBF lengthscale and \
         per-task scales by the profile marginal likelihood each round, 5 random initial options (sbo-gp rates \
         them on both channels). {rounds} rounds, mean ± SE over {} seeds{}. Wall time: {wall:.0} s.\n",
        runs.iter().map(|r| r.seed).max().map_or(0, |s| s + 1),
        if quick {
            " (--quick: too few for conclusions)"
        } else {
            ""
        }
    );
    let names: Vec<&'static str> = SboGpVariant::all().iter().map(|v| v.name()).collect();
    let mut wins = (0, 0, 0);
    for t in tasks {
        let _ = writeln!(
            md,
            "\n## {} (n = {}, ρ = {}), GP variant\n\n\
             | method | cumulative regret | simple regret | private ratings | cost (λ_u = 10, λ_v = 1) | graph error ‖Â − A‖_F | s / round |\n|---|---|---|---|---|---|---|",
            t.name, t.agents, t.rho
        );
        let mut rows = Vec::new();
        for m in &names {
            let rs: Vec<&SboRun> = runs
                .iter()
                .filter(|r| r.task == t.name && r.method == *m)
                .collect();
            if rs.is_empty() {
                continue;
            }
            let (cum, simple, private) = summary(&rs);
            let ge: Vec<f64> = rs
                .iter()
                .filter_map(|r| r.graph_error.last().copied())
                .collect();
            let secs: Vec<f64> = rs
                .iter()
                .map(|r| r.seconds.iter().sum::<f64>() / r.seconds.len().max(1) as f64)
                .collect();
            let cost: Vec<f64> = rs.iter().map(|r| r.cost).collect();
            let _ = writeln!(
                md,
                "| {m} | {} | {} | {} | {} | {} | {:.4} |",
                ms(cum),
                ms(simple),
                ms(private),
                ms(mean_se(&cost)),
                if ge.is_empty() {
                    "–".to_string()
                } else {
                    ms(mean_se(&ge))
                },
                mean_se(&secs).0
            );
            rows.push((*m, cum, simple, private, rs));
        }
        let Some(sbo) = rows.iter().find(|r| r.0 == "sbo-gp") else {
            continue;
        };
        let others: Vec<_> = rows.iter().filter(|r| r.0 != "sbo-gp").collect();
        let verdict = |a: (f64, f64), b: (f64, f64)| {
            if a.0 <= b.0 {
                "yes"
            } else if a.0 - b.0 <= 2.0 * (a.1.powi(2) + b.1.powi(2)).sqrt() {
                "no, within 2 SE"
            } else {
                "no"
            }
        };
        let cum_list: Vec<String> = others
            .iter()
            .map(|r| format!("{} {} ({})", r.0, ms(r.1), verdict(sbo.1, r.1)))
            .collect();
        let beats_all = others.iter().all(|r| sbo.1.0 <= r.1.0);
        let beats_same_budget = others
            .iter()
            .filter(|r| r.0 == "gp-ucb-v")
            .all(|r| sbo.1.0 <= r.1.0);
        wins.0 += usize::from(beats_all);
        wins.1 += usize::from(beats_same_budget);
        let _ = writeln!(
            md,
            "\n- **SBO-GP's cumulative regret is below GP-UCB's and MT-GP-UCB's**: {} — SBO-GP {}; {}.",
            if beats_all {
                "supported"
            } else {
                "not supported"
            },
            ms(sbo.1),
            cum_list.join(", ")
        );
        let halves: Vec<(f64, f64)> = sbo
            .4
            .iter()
            .filter(|r| r.private.len() >= 4)
            .map(|r| {
                let t = r.private.len();
                (
                    (r.private[t / 2 - 1] - r.private[0]) as f64,
                    (r.private[t - 1] - r.private[t / 2 - 1]) as f64,
                )
            })
            .collect();
        if !halves.is_empty() {
            let f = halves.iter().map(|h| h.0).sum::<f64>() / halves.len() as f64;
            let s = halves.iter().map(|h| h.1).sum::<f64>() / halves.len() as f64;
            let sub = s <= f && sbo.3.0 < 0.5 * (rounds as f64 + 5.0);
            wins.2 += usize::from(sub);
            let _ = writeln!(
                md,
                "- **SBO-GP's private ratings grow sublinearly (the baselines' linearly)**: {} — {} in all \
                 (initial design included), {f:.2} new in the first half of the rounds, {s:.2} in the second; \
                 the private-rating baselines ask {} each.",
                if sub { "supported" } else { "not supported" },
                ms(sbo.3),
                rounds + 5
            );
        }
        if let Some(v) = rows.iter().find(|r| r.0 == "gp-ucb-v") {
            let _ = writeln!(
                md,
                "- **GP-UCB on public ratings optimizes the socially influenced welfare**: simple regret {} against \
                 SBO-GP's {}.",
                ms(v.2),
                ms(sbo.2)
            );
        }
    }
    let _ = writeln!(
        md,
        "\n**Summary.** SBO-GP has the lowest cumulative regret of all five methods on {} of {} tasks and beats \
         GP-UCB on public ratings (the baseline with its public budget) on {} of {}; its private ratings grow \
         sublinearly on {} of {}. The paper's App. H.3 claim that SBO-GP also has lower regret than GP-UCB and \
         MT-GP-UCB is checked per task above; where it fails, note that those baselines rate privately every \
         round (the cost column: about four to ten times SBO-GP's at λ_u = 10), and that SBO-GP's UCB carries \
         B's remaining uncertainty, which scales with the size of the public means (Goodman's m² terms), so it \
         explores more. A second cause shows in a traced toy run (seed 0, 25 rounds): with Â = [[0.88, 0.12], \
         [0.56, 0.44]] against A = [[0.9, 0.1], [0.6, 0.4]], SBO-GP kept returning to x ≈ 0.36 (regret 0.23–0.29, \
         next to the public optimum 0.354), because u = B̂ v inverts an ill-conditioned A (det 0.3, entries of \
         A⁻¹ up to 3): a graph error of 0.05 moves agent 2's predicted utility by about 0.4, while the B part of \
         the width had already fallen below t^−q, so no more private ratings were asked. The graph-error column \
         shows what the private ratings buy: Â within 0.1–0.2 of A from a handful of them on most tasks.\n",
        wins.0,
        tasks.len(),
        wins.1,
        tasks.len(),
        wins.2,
        tasks.len()
    );
    md.push_str("\nFigures:\n\n");
    for f in figs.iter().filter(|f| f.ends_with(".svg")) {
        let _ = writeln!(md, "- [{f}]({f})");
    }
    md
}

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
        .map(|s| run_one(&task, SboVariant::Sbo, s, 52))
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
    use std::fmt::Write as _;
    let mut md = String::from(
        "| t | runs | s / iteration (thermal, n = 3) | paper's bound at t = 50 / agora |\n|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.0}x |",
            r.t,
            r.runs,
            ms(r.seconds),
            r.ratio_vs_paper
        );
    }
    md
}
