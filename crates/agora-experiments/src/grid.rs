//! Method × problem × seed grids on test functions, answered by the [`Oracle`]: the
//! `standard` and `preference` suites and `agora run`.

use agora_core::{AnswerKind, Error, Point, QueryKind, Result};
use agora_methods::Strategy;
use agora_methods::registry::Setup;
use agora_problems::{Oracle, Problem, RaterModel};
use serde::{Deserialize, Serialize};

/// A method × problem × seed grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Method names (see `agora_methods::registry`).
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
                agora_methods::registry::build(m, &[], Setup::new(prob.space.clone(), 0))?;
            }
        }
        Ok(())
    }
}

/// One answered query of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Method name.
    pub method: String,
    /// Problem name.
    pub problem: String,
    /// Seed.
    pub seed: u64,
    /// Query index (0-based).
    pub iter: usize,
    /// The points asked about, in user units.
    pub points: Vec<Vec<f64>>,
    /// The answer: observed values for evaluations, `[winner index]` for comparisons,
    /// `[]` for a tie and for a Hessian (the point is recorded, the matrix is not).
    pub answer: Vec<f64>,
    /// The strategy's recommendation after this answer, in user units.
    pub recommended: Vec<f64>,
    /// Noiseless objective at the recommendation.
    pub recommended_f: f64,
    /// Simple regret of the recommendation: optimum − `recommended_f` (≥ 0).
    pub regret: f64,
    /// Wall seconds in `ask` (acquisition); not deterministic.
    pub ask_seconds: f64,
    /// Wall seconds in `tell` (model refit, for strategies that fit on tell); not
    /// deterministic.
    pub tell_seconds: f64,
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

/// The spread (max − min) of a problem's objective over 10,000 seeded uniform points: the
/// scale of a simulated person's comparison noise (RESULTS.md §2 uses 0.1 × this).
pub fn value_range(problem: &Problem) -> Result<f64> {
    use rand::RngExt;
    let mut rng = agora_math::rng::stream(12345, &[]);
    let d = problem.space.dim();
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for _ in 0..10_000 {
        let u: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
        let v = problem.value_at_unit(&u)?;
        lo = lo.min(v);
        hi = hi.max(v);
    }
    Ok(hi - lo)
}

/// Run one method on one problem for `budget` answered queries. Evaluation queries get
/// values with `N(0, noise_std²)` noise; comparison queries are answered by a probit rater
/// with noise `rater_frac × value_range(problem)`; Hessian queries (DSBO's structure
/// phase) by central finite differences of the noiseless objective, and they count
/// against the budget like any other query.
pub fn run_one(
    method: &str,
    problem: &str,
    seed: u64,
    budget: usize,
    noise_std: f64,
) -> Result<Vec<Record>> {
    run_one_with(method, problem, seed, budget, noise_std, 0.1)
}

/// [`run_one`] with an explicit rater noise fraction.
pub fn run_one_with(
    method: &str,
    problem: &str,
    seed: u64,
    budget: usize,
    noise_std: f64,
    rater_frac: f64,
) -> Result<Vec<Record>> {
    let prob = Problem::by_name(problem)?;
    let space = prob.space.clone();
    let opt = prob.function.optimum_value();
    let rs = run_seed(seed, method, problem);
    let mut strategy: Box<dyn Strategy> =
        agora_methods::registry::build(method, &[], Setup::new(space.clone(), rs))?;
    let oracle_seed = agora_math::rng::derive_seed(rs, &[u64::MAX]);
    let sigma = rater_frac * value_range(&prob)?;
    let scorer = Problem::by_name(problem)?;
    let mut oracle = Oracle::new(prob, noise_std, oracle_seed)?;
    if sigma > 0.0 {
        oracle.set_rater(RaterModel::Probit { sigma })?;
    }
    let mut out = Vec::with_capacity(budget);
    crate::runner::drive(strategy.as_mut(), &mut oracle, budget, |step| {
        let points = match &step.query.kind {
            QueryKind::Evaluate { points } | QueryKind::Compare { points, .. } => points,
            QueryKind::Hessian { point } => std::slice::from_ref(point),
            _ => {
                return Err(Error::State(
                    "the grid runner handles evaluations, comparisons and Hessians".into(),
                ));
            }
        };
        let user: Vec<Vec<f64>> = points
            .iter()
            .map(|p| match p {
                Point::Unit(u) => space.to_user_reals(u),
                Point::Index(_) => Err(Error::State("benchmark problems are boxes".into())),
            })
            .collect::<Result<_>>()?;
        let ans = match &step.answer.kind {
            AnswerKind::Values { values } => values.clone(),
            AnswerKind::Choice { winner, .. } => vec![*winner as f64],
            _ => Vec::new(),
        };
        let (recommended, recommended_f) = match step.strategy.recommend() {
            Some((Point::Unit(u), _)) => (space.to_user_reals(&u)?, scorer.value_at_unit(&u)?),
            _ => (Vec::new(), f64::NEG_INFINITY),
        };
        out.push(Record {
            method: method.to_string(),
            problem: problem.to_string(),
            seed,
            iter: step.iter,
            points: user,
            answer: ans,
            recommended,
            recommended_f,
            regret: (opt - recommended_f).max(0.0),
            ask_seconds: step.ask_seconds,
            tell_seconds: step.tell_seconds,
        });
        Ok(std::ops::ControlFlow::Continue(()))
    })?;
    Ok(out)
}

/// Run the whole grid in parallel; records come back grouped by (problem, method, seed)
/// in grid order, whatever the thread count (or the number of workers, in a sweep).
pub fn run_grid(spec: &RunSpec, runner: &crate::runner::Runner) -> Result<Vec<Record>> {
    spec.validate()?;
    let mut jobs = Vec::new();
    for p in &spec.problems {
        for m in &spec.methods {
            for &s in &spec.seeds {
                jobs.push((m.clone(), p.clone(), s));
            }
        }
    }
    let results = runner.run_parallel("runs", &jobs, |(m, p, s)| {
        run_one(m, p, *s, spec.budget, spec.noise_std)
    })?;
    Ok(results.into_iter().flatten().collect())
}
