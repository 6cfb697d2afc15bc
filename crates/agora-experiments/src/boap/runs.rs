//! The runs of the BOAP suite: its tasks, expert settings and jobs, and one run through
//! the runner.

use agora_core::{AnswerKind, Error, Respondent, Result, Space};
use agora_methods::{Arm, Boap, BoapConfig, BoapExtension, BoapVariant};
use agora_problems::boap::{BenchmarkTruth, BoapBenchmark, Features, Pool, SimulatedExpert};
use agora_problems::{BoapRespondent, ObjectiveTruth};
use serde::{Deserialize, Serialize};
use std::ops::ControlFlow;

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

/// Threshold of the property-quality gate ([`BoapExtension::gate`]) in `boap+gate`: about
/// two standard deviations of `|2c − 1|` for coin-flip answers over 50 comparisons.
pub const GATE: f64 = 0.3;

/// The σ̄ floor of `boap+floor` ([`BoapExtension::sigma_floor`]), in units of the
/// normalized rank-GP mean μ̄ (whose designs span [0, 1]): half that span, so that
/// `ℓ = α max(σ̄, floor)` is nearly the same at every design, Eq. 6's prefactor is nearly
/// 1, and α acts as a plain lengthscale on μ̄ (issue notes: the prefactor does not depend
/// on α, so without a floor a useless property damps every cross-covariance).
pub const SIGMA_FLOOR: f64 = 0.5;

/// A method of the suite: a variant, and an extension beyond the paper.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Method {
    /// The variant.
    pub variant: BoapVariant,
    /// The extension (`None`: the paper's method).
    pub ext: Option<Ext>,
}

/// Extensions of BOAP beyond the paper run by the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ext {
    /// One α per property (`+pa`).
    PerPropertyAlpha,
    /// The property-quality gate at [`GATE`] (`+gate`).
    Gate,
    /// The σ̄ floor at [`SIGMA_FLOOR`] (`+floor`).
    SigmaFloor,
}

impl Method {
    /// The paper's `variant`.
    pub fn paper(variant: BoapVariant) -> Method {
        Method { variant, ext: None }
    }

    /// Name: the variant's, with `+pa`, `+gate` or `+floor`.
    pub fn name(&self) -> String {
        let v = self.variant.name();
        match self.ext {
            None => v.to_string(),
            Some(Ext::PerPropertyAlpha) => format!("{v}+pa"),
            Some(Ext::Gate) => format!("{v}+gate"),
            Some(Ext::SigmaFloor) => format!("{v}+floor"),
        }
    }

    fn extension(&self) -> BoapExtension {
        match self.ext {
            None => BoapExtension::default(),
            Some(Ext::PerPropertyAlpha) => BoapExtension {
                per_property_alpha: true,
                ..BoapExtension::default()
            },
            Some(Ext::Gate) => BoapExtension {
                gate: Some(GATE),
                ..BoapExtension::default()
            },
            Some(Ext::SigmaFloor) => BoapExtension {
                sigma_floor: SIGMA_FLOOR,
                ..BoapExtension::default()
            },
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

    /// The space the strategies search: the unit cube of a benchmark, the rows of a pool.
    pub fn space(&self) -> Result<Space> {
        match self {
            Task::Bench(b) => Space::reals(&vec![(0.0, 1.0); b.dim()]),
            Task::Pool(_, p, ..) => p.space(),
        }
    }

    /// The expert settings run on the task: all three on a benchmark, accurate on a pool.
    pub fn settings(&self) -> Vec<Setting> {
        match self {
            Task::Bench(_) => vec![Setting::Accurate, Setting::Inaccurate, Setting::Noisy(0.3)],
            Task::Pool(..) => vec![Setting::Accurate],
        }
    }

    /// Initial designs `t′` and budget `T` (evaluations in all).
    pub fn init_budget(&self) -> (usize, usize) {
        match self {
            Task::Bench(b) => (b.initial_designs(), b.budget()),
            Task::Pool(_, _, i, t) => (*i, *t),
        }
    }
}

/// The respondent of a run: the task's objective and the `setting`'s expert on `truth`, the
/// noisy expert seeded by `seed`. Returns it with the property names and the optimum.
fn respondent<T: ObjectiveTruth + 'static>(
    truth: T,
    setting: Setting,
    seed: u64,
) -> Result<(Box<dyn Respondent>, Vec<String>, f64)> {
    let props = truth.property_names();
    let f_star = truth.optimum_value();
    let expert = match setting {
        Setting::Noisy(d) => SimulatedExpert::noisy(truth, d, seed)?,
        _ => SimulatedExpert::exact(truth),
    };
    Ok((Box::new(BoapRespondent::new(expert)), props, f_star))
}

/// Run `method` on `task` with the `setting` expert, through [`crate::runner::drive`]
/// until `T` evaluations are answered.
pub fn run_one(task: &Task, setting: Setting, method: Method, seed: u64) -> Result<BoapRun> {
    let variant = method.variant;
    let (init, budget) = task.init_budget();
    let expert_seed = agora_math::rng::derive_seed(seed, &[0xE4]);
    let (mut respondent, props, f_star) = match task {
        Task::Bench(b) => {
            let features = if setting == Setting::Inaccurate {
                Features::Inaccurate
            } else {
                Features::Accurate
            };
            respondent(BenchmarkTruth::new(*b, features)?, setting, expert_seed)?
        }
        Task::Pool(_, pool, ..) => respondent((**pool).clone(), setting, expert_seed)?,
    };
    let mut cfg = BoapConfig::paper(props.len(), init, variant);
    cfg.properties = props;
    cfg.extension = method.extension();
    let mut s = Boap::new(task.space()?, cfg, seed)?;
    let mut best = f64::NEG_INFINITY;
    let mut regret = Vec::with_capacity(budget);
    let mut comparisons = 0;
    crate::runner::drive(&mut s, &mut respondent, usize::MAX, |step| {
        match &step.answer.kind {
            AnswerKind::Values { values } => {
                best = values.iter().fold(best, |b, v| b.max(*v));
                regret.push((f_star - best).max(0.0));
            }
            AnswerKind::Choice { .. } | AnswerKind::Tie { .. } => comparisons += 1,
            _ => {
                return Err(Error::State("BOAP asks evaluations and comparisons".into()));
            }
        }
        Ok(if regret.len() < budget {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        })
    })?;
    Ok(BoapRun {
        task: task.name(),
        setting,
        method: method.name(),
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

/// The jobs of the suite: `(task, setting, method)`. The extensions run on the functions,
/// with accurate features and under the IA expert (the guard); not in `--quick`, which
/// stays under a minute.
pub fn jobs(tasks: &[Task], quick: bool) -> Vec<(usize, Setting, Method)> {
    let paper = [
        BoapVariant::Boap,
        BoapVariant::BoapFullData,
        BoapVariant::BoapOa,
        BoapVariant::BoTs,
        BoapVariant::BoEi,
    ];
    let ext = [
        Method {
            variant: BoapVariant::Boap,
            ext: Some(Ext::PerPropertyAlpha),
        },
        Method {
            variant: BoapVariant::Boap,
            ext: Some(Ext::Gate),
        },
        Method {
            variant: BoapVariant::Boap,
            ext: Some(Ext::SigmaFloor),
        },
    ];
    let mut v = Vec::new();
    for (ti, t) in tasks.iter().enumerate() {
        for m in paper {
            v.push((ti, Setting::Accurate, Method::paper(m)));
        }
        let ext: &[Method] = if quick { &[] } else { &ext };
        if let Task::Bench(_) = t {
            for m in ext {
                v.push((ti, Setting::Accurate, *m));
            }
            for setting in [Setting::Inaccurate, Setting::Noisy(0.3)] {
                for m in [
                    BoapVariant::Boap,
                    BoapVariant::BoapFullData,
                    BoapVariant::BoapOa,
                ] {
                    v.push((ti, setting, Method::paper(m)));
                }
            }
            for m in ext {
                v.push((ti, Setting::Inaccurate, *m));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The full suite runs each extension (+pa, +gate, +floor) on each function, with
    /// accurate features and under the IA expert, and the floor reaches the method's
    /// settings; `--quick` runs none of them.
    #[test]
    fn the_full_suite_runs_every_extension_on_each_function() {
        let tasks = [
            Task::Bench(BoapBenchmark::Benchmark1d),
            Task::Bench(BoapBenchmark::Griewank5d),
        ];
        let full = jobs(&tasks, false);
        for ext in [Ext::PerPropertyAlpha, Ext::Gate, Ext::SigmaFloor] {
            for setting in [Setting::Accurate, Setting::Inaccurate] {
                let n = full
                    .iter()
                    .filter(|(_, s, m)| *s == setting && m.ext == Some(ext))
                    .count();
                assert_eq!(n, tasks.len(), "{ext:?} {setting:?}");
            }
        }
        assert!(jobs(&tasks, true).iter().all(|(_, _, m)| m.ext.is_none()));
        let floor = Method {
            variant: BoapVariant::Boap,
            ext: Some(Ext::SigmaFloor),
        };
        assert_eq!(floor.name(), "boap+floor");
        assert_eq!(floor.extension().sigma_floor, SIGMA_FLOOR);
        assert_eq!(
            Method::paper(BoapVariant::Boap).extension().sigma_floor,
            0.0
        );
    }
}
