//! The grid runner.

use agora_core::{AnswerKind, Error, Point, QueryKind, Result};
use agora_methods::Strategy;
use agora_problems::{Oracle, Problem};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// A method × problem × seed grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Method names (see `agora_methods::method_names`).
    pub methods: Vec<String>,
    /// Problem names (see `agora_problems::functions::names`).
    pub problems: Vec<String>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Evaluations per run.
    pub budget: usize,
    /// Standard deviation of Gaussian observation noise (0 = exact).
    pub noise_std: f64,
}

impl RunSpec {
    /// Check names, budget and noise; errors name the field and list allowed values.
    pub fn validate(&self) -> Result<()> {
        if self.methods.is_empty() {
            return Err(Error::invalid("methods", "name at least one method"));
        }
        if self.problems.is_empty() {
            return Err(Error::invalid("problems", "name at least one problem"));
        }
        if self.seeds.is_empty() {
            return Err(Error::invalid("seeds", "give at least one seed"));
        }
        if self.budget == 0 {
            return Err(Error::invalid("budget", "must be at least 1"));
        }
        if !(self.noise_std.is_finite() && self.noise_std >= 0.0) {
            return Err(Error::invalid(
                "noise",
                format!("must be a finite number >= 0, got {}", self.noise_std),
            ));
        }
        for p in &self.problems {
            let prob = Problem::by_name(p)?;
            for m in &self.methods {
                agora_methods::by_name(m, prob.space.clone(), 0)?;
            }
        }
        Ok(())
    }
}

/// One evaluation of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Method name.
    pub method: String,
    /// Problem name.
    pub problem: String,
    /// Seed.
    pub seed: u64,
    /// Evaluation index (0-based).
    pub iter: usize,
    /// The point in user units.
    pub x: Vec<f64>,
    /// Observed value (with noise, if any).
    pub y: f64,
    /// Noiseless value at the point.
    pub f: f64,
    /// Best noiseless value among the points evaluated so far.
    pub best_f: f64,
    /// Simple regret: optimum − best_f.
    pub regret: f64,
    /// Wall seconds the strategy spent in `ask` (not deterministic; excluded from
    /// reproducibility comparisons).
    pub ask_seconds: f64,
}

/// A per-run seed that depends on the method and problem names too, so runs in a grid are
/// independent and their results do not depend on where they sit in the grid.
pub fn run_seed(seed: u64, method: &str, problem: &str) -> u64 {
    let h = |s: &str| {
        s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |a, b| {
            (a ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        })
    };
    agora_math::rng::derive_seed(seed, &[h(method), h(problem)])
}

/// Run one method on one problem for `budget` evaluations.
pub fn run_one(
    method: &str,
    problem: &str,
    seed: u64,
    budget: usize,
    noise_std: f64,
) -> Result<Vec<Record>> {
    let prob = Problem::by_name(problem)?;
    let space = prob.space.clone();
    let opt = prob.function.optimum_value();
    let rs = run_seed(seed, method, problem);
    let mut strategy: Box<dyn Strategy> = agora_methods::by_name(method, space.clone(), rs)?;
    let mut oracle = Oracle::new(
        prob,
        noise_std,
        agora_math::rng::derive_seed(rs, &[u64::MAX]),
    )?;
    let mut out = Vec::with_capacity(budget);
    let mut best_f = f64::NEG_INFINITY;
    for iter in 0..budget {
        let t = Instant::now();
        let q = strategy.ask()?;
        let ask_seconds = t.elapsed().as_secs_f64();
        let answer = oracle.answer(&q)?;
        let QueryKind::Evaluate { points } = &q.kind else {
            return Err(Error::State(
                "the runner handles evaluation queries only".into(),
            ));
        };
        let AnswerKind::Values { values } = &answer.kind else {
            return Err(Error::State("oracle returned no values".into()));
        };
        for (p, &y) in points.iter().zip(values) {
            let Point::Unit(u) = p else {
                return Err(Error::State("benchmark problems are boxes".into()));
            };
            let f = oracle.problem().value_at_unit(u)?;
            best_f = best_f.max(f);
            out.push(Record {
                method: method.to_string(),
                problem: problem.to_string(),
                seed,
                iter,
                x: space.to_user_reals(u)?,
                y,
                f,
                best_f,
                regret: (opt - best_f).max(0.0),
                ask_seconds,
            });
        }
        strategy.tell(&answer)?;
    }
    Ok(out)
}

/// Run the whole grid in parallel; records come back grouped by (problem, method, seed)
/// in grid order, whatever the thread count. `show_progress` draws a bar on a terminal.
pub fn run_grid(spec: &RunSpec, show_progress: bool) -> Result<Vec<Record>> {
    spec.validate()?;
    let mut jobs = Vec::new();
    for p in &spec.problems {
        for m in &spec.methods {
            for &s in &spec.seeds {
                jobs.push((m.clone(), p.clone(), s));
            }
        }
    }
    let bar = if show_progress {
        let b = ProgressBar::new(jobs.len() as u64);
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} runs {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let results: Vec<Result<Vec<Record>>> = jobs
        .par_iter()
        .map(|(m, p, s)| {
            let r = run_one(m, p, *s, spec.budget, spec.noise_std);
            bar.inc(1);
            bar.set_message(format!("{m} on {p}"));
            r
        })
        .collect();
    bar.finish_and_clear();
    let mut out = Vec::new();
    for r in results {
        out.extend(r?);
    }
    Ok(out)
}
