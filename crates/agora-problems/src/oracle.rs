//! Oracles: simulated answerers for benchmark problems.

use crate::functions::TestFunction;
use agora_core::{Answer, AnswerKind, Error, Point, Query, QueryKind, Result, Space};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// A benchmark problem: a test function on its box, seen by strategies as the unit cube.
#[derive(Debug)]
pub struct Problem {
    /// The objective (maximized).
    pub function: Box<dyn TestFunction>,
    /// The box space built from the function's bounds.
    pub space: Space,
}

impl Problem {
    /// The problem for a named test function (see [`crate::functions::names`]).
    pub fn by_name(name: &str) -> Result<Problem> {
        Problem::new(crate::functions::by_name(name)?)
    }

    /// Wrap a test function.
    pub fn new(function: Box<dyn TestFunction>) -> Result<Problem> {
        let space = Space::reals(&function.bounds())?;
        Ok(Problem { function, space })
    }

    /// Noiseless objective at a unit-cube point.
    pub fn value_at_unit(&self, u: &[f64]) -> Result<f64> {
        let x = self.space.to_user_reals(u)?;
        Ok(self.function.eval(&x))
    }

    /// Simple regret of a unit-cube point: optimum minus its true value (≥ 0).
    pub fn regret_at_unit(&self, u: &[f64]) -> Result<f64> {
        Ok((self.function.optimum_value() - self.value_at_unit(u)?).max(0.0))
    }
}

/// Answers evaluation queries on a [`Problem`], optionally with Gaussian observation noise
/// (seeded: the same seed and queries give the same answers).
#[derive(Debug)]
pub struct Oracle {
    problem: Problem,
    noise_std: f64,
    rng: ChaCha8Rng,
}

impl Oracle {
    /// An oracle adding `N(0, noise_std²)` noise to each value (`noise_std = 0`: exact).
    pub fn new(problem: Problem, noise_std: f64, seed: u64) -> Result<Oracle> {
        if !(noise_std.is_finite() && noise_std >= 0.0) {
            return Err(Error::invalid(
                "noise_std",
                format!("must be a finite number >= 0, got {noise_std}"),
            ));
        }
        Ok(Oracle {
            problem,
            noise_std,
            rng: ChaCha8Rng::seed_from_u64(seed),
        })
    }

    /// The problem answered.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// Answer one query.
    pub fn answer(&mut self, query: &Query) -> Result<Answer> {
        match &query.kind {
            QueryKind::Evaluate { points } => {
                let mut values = Vec::with_capacity(points.len());
                for (i, p) in points.iter().enumerate() {
                    let Point::Unit(u) = p else {
                        return Err(Error::invalid(
                            format!("points[{i}]"),
                            "a test-function oracle evaluates unit-cube points, not candidate indices",
                        ));
                    };
                    let mut v = self.problem.value_at_unit(u)?;
                    if self.noise_std > 0.0 {
                        let n = Normal::new(0.0, self.noise_std)
                            .map_err(|e| Error::invalid("noise_std", e.to_string()))?;
                        v += n.sample(&mut self.rng);
                    }
                    values.push(v);
                }
                Ok(Answer {
                    query_id: query.id,
                    kind: AnswerKind::Values { values },
                })
            }
            #[allow(unreachable_patterns)]
            other => Err(Error::invalid(
                "query",
                format!("this oracle answers only evaluation queries, got {other:?}"),
            )),
        }
    }
}
