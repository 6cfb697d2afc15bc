//! A BOAP task as one [`Respondent`] (Kumar A V et al. 2024, Alg. 1): objective evaluations
//! of a benchmark or a pool, and the simulated expert's comparisons on the abstract
//! property a [`QueryKind::Compare`]'s `rater` names (`docs/notes/boap.md` §4).

use crate::boap::{BenchmarkTruth, BoapFunction, Pool, PropertyTruth, SimulatedExpert};
use crate::functions::TestFunction;
use agora_core::{Answer, Error, Point, Query, QueryKind, Respondent, Result};

/// What a BOAP task measures besides its properties: the objective (maximised) at a design
/// and its optimum, the reference of simple regret.
pub trait ObjectiveTruth: PropertyTruth {
    /// The objective at `design`; errors name the point.
    fn objective_value(&self, design: &Point) -> Result<f64>;
    /// The largest objective value.
    fn optimum_value(&self) -> f64;
}

impl ObjectiveTruth for BenchmarkTruth {
    /// The benchmark at a unit-cube point of its box (clamped to `[0, 1]`).
    fn objective_value(&self, design: &Point) -> Result<f64> {
        let Point::Unit(u) = design else {
            return Err(Error::invalid(
                "point",
                "a benchmark task evaluates unit-cube points, not candidate indices",
            ));
        };
        let x = self.space().to_user_reals(u)?;
        Ok(BoapFunction { bench: self.bench }.eval(&x))
    }

    fn optimum_value(&self) -> f64 {
        BoapFunction { bench: self.bench }.optimum_value()
    }
}

impl ObjectiveTruth for Pool {
    /// The objective of a row.
    fn objective_value(&self, design: &Point) -> Result<f64> {
        let Point::Index(row) = design else {
            return Err(Error::invalid(
                "point",
                "a pool task evaluates rows (candidate indices), not unit-cube points",
            ));
        };
        self.objective_at(*row)
    }

    fn optimum_value(&self) -> f64 {
        Pool::optimum_value(self)
    }
}

/// A BOAP task answering both of BOAP's kinds of query: [`QueryKind::Evaluate`] gets the
/// objective at each point (noise-free, note A15), [`QueryKind::Compare`] the expert's
/// answer on the property named by its `rater` ([`SimulatedExpert::answer`]). Only
/// comparisons draw from the expert's stream, so evaluations in between do not change its
/// answers.
#[derive(Debug, Clone)]
pub struct BoapRespondent<T: ObjectiveTruth> {
    expert: SimulatedExpert<T>,
}

impl<T: ObjectiveTruth> BoapRespondent<T> {
    /// The task of `expert`'s truth, compared by `expert`.
    pub fn new(expert: SimulatedExpert<T>) -> BoapRespondent<T> {
        BoapRespondent { expert }
    }

    /// The expert.
    pub fn expert(&self) -> &SimulatedExpert<T> {
        &self.expert
    }

    /// The task: objective and properties.
    pub fn truth(&self) -> &T {
        self.expert.truth()
    }
}

impl<T: ObjectiveTruth> Respondent for BoapRespondent<T> {
    fn answer(&mut self, query: &Query) -> Result<Answer> {
        match &query.kind {
            QueryKind::Evaluate { points } => {
                let values = points
                    .iter()
                    .map(|p| self.truth().objective_value(p))
                    .collect::<Result<Vec<f64>>>()?;
                Answer::values(query, values)
            }
            QueryKind::Compare { .. } => self.expert.answer(query),
            _ => Err(Error::unsupported_query("BOAP task", query)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boap::{BoapBenchmark, Features, synthetic_electrode_pool};
    use agora_core::{AnswerKind, Channel};

    fn evaluate(id: u64, p: Point) -> Query {
        Query {
            id,
            kind: QueryKind::Evaluate { points: vec![p] },
        }
    }

    fn compare(id: u64, a: Point, b: Point, property: &str) -> Query {
        Query {
            id,
            kind: QueryKind::Compare {
                points: vec![a, b],
                rater: Some(property.into()),
            },
        }
    }

    #[test]
    fn a_benchmark_task_answers_values_and_the_experts_comparisons() {
        let bench = BoapBenchmark::Rosenbrock3d;
        let truth = BenchmarkTruth::new(bench, Features::Accurate).unwrap();
        let mut r = BoapRespondent::new(SimulatedExpert::noisy(truth.clone(), 0.3, 5).unwrap());
        // An expert of its own with the same seed, asked the same comparisons only.
        let mut alone = SimulatedExpert::noisy(truth, 0.3, 5).unwrap();
        let problem = bench.problem().unwrap();
        let mut rng = agora_math::rng::stream(9, &[]);
        use rand::RngExt;
        let mut unit = || (0..3).map(|_| rng.random::<f64>()).collect::<Vec<f64>>();
        let mut flips = 0;
        for k in 0..30u64 {
            let (a, b) = (unit(), unit());
            let got = r.answer(&evaluate(2 * k, Point::Unit(a.clone()))).unwrap();
            assert_eq!(
                got,
                Answer::values(
                    &evaluate(2 * k, Point::Unit(a.clone())),
                    vec![problem.value_at_unit(&a).unwrap()]
                )
                .unwrap()
            );
            let q = compare(
                2 * k + 1,
                Point::Unit(a.clone()),
                Point::Unit(b.clone()),
                "omega2",
            );
            let got = r.answer(&q).unwrap();
            assert_eq!(got, alone.answer(&q).unwrap());
            // Against the property itself: the answer is the truthful one or its flip.
            let user = |u: &[f64]| problem.space.to_user_reals(u).unwrap();
            let w = |u: &[f64]| bench.property(Features::Accurate, 1, &user(u)).unwrap();
            let truthful = usize::from(w(&b) > w(&a));
            let AnswerKind::Choice { winner, rater } = got.kind else {
                panic!("no tie expected")
            };
            assert_eq!(rater.as_deref(), Some("omega2"));
            flips += usize::from(winner != truthful);
        }
        assert!((3..=18).contains(&flips), "{flips} flips of 30 at δ = 0.3");
        assert_eq!(r.truth().optimum_value(), 0.0);
    }

    #[test]
    fn a_pool_task_answers_rows_and_refuses_what_it_cannot_answer() {
        let pool = synthetic_electrode_pool(1);
        let mut r = BoapRespondent::new(SimulatedExpert::exact(pool.clone()));
        for row in [0, 17, 879] {
            let a = r.answer(&evaluate(row as u64, Point::Index(row))).unwrap();
            assert_eq!(
                a.kind,
                AnswerKind::Values {
                    values: vec![pool.objective[row]]
                }
            );
        }
        let best = pool.best_row();
        assert_eq!(r.truth().optimum_value(), pool.objective[best]);
        let name = pool.property_names[0].clone();
        let (a, b) = (3, 4);
        let want = usize::from(pool.properties[0][b] > pool.properties[0][a]);
        let got = r
            .answer(&compare(5, Point::Index(a), Point::Index(b), &name))
            .unwrap();
        assert_eq!(
            got.kind,
            AnswerKind::Choice {
                winner: want,
                rater: Some(name)
            }
        );
        let e = r
            .answer(&evaluate(6, Point::Unit(vec![0.5; 8])))
            .unwrap_err();
        assert!(e.to_string().contains("rows"), "{e}");
        assert!(r.answer(&evaluate(7, Point::Index(880))).is_err());
        let vote = Query {
            id: 8,
            kind: QueryKind::GroupVote {
                points: vec![Point::Index(0), Point::Index(1)],
                channel: Channel::Public,
                agents: vec!["a".into()],
            },
        };
        assert!(matches!(
            r.answer(&vote),
            Err(Error::UnsupportedQuery { .. })
        ));
    }
}
