//! `agora reproduce sbo`: Social BO and its baselines on simulated groups
//! (../shared/notes/social-bo.md §4).
//!
//! Metrics per round `t` (note §4.3): the welfare regret `S* − S(x_t)` of the option
//! proposed (true utilities, the facilitator's ρ), cumulative and simple regret, the
//! cumulative private votes `|Q^u_t|` (initial design included), the graph error
//! `‖Â − A‖_F` (SBO), and the wall time of the round's model work.

use crate::report::mean_se;
use agora_core::{Result, Space};
use agora_methods::{Sbo, SboConfig, SboVariant, Strategy};
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
    c
}

/// Run `method` on `task` for `rounds` proposal rounds.
pub fn run_one(task: &SocialTask, variant: SboVariant, seed: u64, rounds: usize) -> Result<SboRun> {
    let space = match &task.options {
        Some(opts) => Space::Candidates {
            names: (0..opts.len()).map(|i| i.to_string()).collect(),
            features: opts.clone(),
        },
        None => Space::reals(&vec![(0.0, 1.0); task.dim])?,
    };
    let method = variant.name().to_string();
    let mut s = Sbo::new(space, config(task, variant), seed)?;
    let mut group = SocialGroup::new(task, agora_math::rng::derive_seed(seed, &[0x6B]));
    let (_, s_star) = task.optimum();
    let truth: Vec<f64> = task.graph.iter().flatten().copied().collect();
    let mut run = SboRun {
        task: task.name.clone(),
        method,
        seed,
        regret: Vec::new(),
        private: Vec::new(),
        graph_error: Vec::new(),
        seconds: Vec::new(),
        bound: 0.0,
    };
    let mut seen = 0;
    while s.rounds().len() < rounds || s.private_pending() {
        let q = s.ask()?;
        let a = group.answer(&q)?;
        s.tell(&a)?;
        while seen < s.rounds().len() {
            let r = &s.rounds()[seen];
            run.regret.push((s_star - task.welfare_at(&r.x)).max(0.0));
            run.seconds.push(r.seconds);
            if !r.graph.is_empty() {
                run.graph_error.push(
                    r.graph
                        .iter()
                        .zip(&truth)
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum::<f64>()
                        .sqrt(),
                );
            }
            run.private.push(s.counts()[0]);
            seen += 1;
        }
        // A private follow-up belongs to the round it follows.
        if let Some(p) = run.private.last_mut() {
            *p = s.counts()[0];
        }
    }
    run.regret.truncate(rounds);
    run.private.truncate(rounds);
    run.seconds.truncate(rounds);
    run.graph_error.truncate(rounds);
    run.bound = s.model().config().bound;
    Ok(run)
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
