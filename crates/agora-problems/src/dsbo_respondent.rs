//! DSBO's environments as a [`Respondent`] (DSBO paper, Alg. 4 and §4.5): evaluation
//! queries answered with the episodic return `v(θ)` of the HOM policy at θ, Hessian queries
//! with the surrogate policy Hessian over the states its rollouts visit. Every rollout's
//! return is kept ([`DsboRespondent::returns`]): Phase 1's Hessian rollouts are episodes
//! too, and an experiment that counts episodes counts them.

use crate::dsbo_env::{DsboTask, TeamEnv};
use crate::hom::{HessianOptions, HomPolicy};
use agora_core::{Answer, AnswerKind, Error, Point, Query, QueryKind, Respondent, Result, Space};

/// The real coordinates (user units) of query point `p`, named `field` in errors.
pub(crate) fn user_point(space: &Space, p: &Point, field: &str) -> Result<Vec<f64>> {
    match p {
        Point::Unit(u) => space.to_user_reals(u),
        Point::Index(_) => Err(Error::invalid(
            field,
            "a box of real parameters is asked unit-cube points, not candidate indices",
        )),
    }
}

/// A [`DsboTask`] answering queries in the box `[−1, 1]^D` of its policy parameters.
pub struct DsboRespondent {
    task: DsboTask,
    space: Space,
    policy: HomPolicy,
    env: Box<dyn TeamEnv + Send>,
    options: HessianOptions,
    hessian_states: usize,
    returns: Vec<f64>,
}

impl std::fmt::Debug for DsboRespondent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DsboRespondent")
            .field("task", &self.task)
            .field("hessian_states", &self.hessian_states)
            .field("returns", &self.returns.len())
            .finish()
    }
}

impl DsboRespondent {
    /// Answers for `task`; a Hessian is the surrogate policy Hessian (default Sinkhorn /
    /// sigmoid relaxation) over at most `hessian_states` visited states.
    ///
    /// Errors: an invalid task, or `hessian_states = 0`.
    pub fn new(task: DsboTask, hessian_states: usize) -> Result<DsboRespondent> {
        if hessian_states == 0 {
            return Err(Error::invalid("hessian_states", "must be at least 1"));
        }
        let (lo, hi) = task.bounds()?;
        let bounds: Vec<(f64, f64)> = lo.into_iter().zip(hi).collect();
        Ok(DsboRespondent {
            space: Space::reals(&bounds)?,
            policy: task.policy()?,
            env: task.make_env()?,
            task,
            options: HessianOptions::default(),
            hessian_states,
            returns: Vec::new(),
        })
    }

    /// Use these relaxation settings for Hessian queries.
    pub fn with_hessian_options(mut self, options: HessianOptions) -> DsboRespondent {
        self.options = options;
        self
    }

    /// The box of policy parameters queries are asked in (`x0 … x{D−1}` in `[−1, 1]`).
    pub fn space(&self) -> &Space {
        &self.space
    }

    /// The task.
    pub fn task(&self) -> &DsboTask {
        &self.task
    }

    /// `v(θ)` of every rollout so far, in order: one per evaluated point and one per
    /// Hessian query.
    pub fn returns(&self) -> &[f64] {
        &self.returns
    }
}

impl Respondent for DsboRespondent {
    fn answer(&mut self, query: &Query) -> Result<Answer> {
        match &query.kind {
            QueryKind::Evaluate { points } => {
                let mut values = Vec::with_capacity(points.len());
                for (i, p) in points.iter().enumerate() {
                    let theta = user_point(&self.space, p, &format!("points[{i}]"))?;
                    let v = self
                        .task
                        .evaluate_in(self.env.as_mut(), &self.policy, &theta)?;
                    self.returns.push(v);
                    values.push(v);
                }
                Answer::values(query, values)
            }
            QueryKind::Hessian { point } => {
                let theta = user_point(&self.space, point, "point")?;
                let (h, v) = self.task.surrogate_hessian_and_return(
                    &theta,
                    &self.options,
                    self.hessian_states,
                )?;
                self.returns.push(v);
                let rows = h.data.chunks(h.dim.max(1)).map(<[f64]>::to_vec).collect();
                Ok(Answer {
                    query_id: query.id,
                    kind: AnswerKind::Matrix { rows },
                })
            }
            _ => Err(Error::unsupported_query("dsbo environment", query)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsbo_env::DsboEnvKind;
    use crate::mpe::RewardSchedule;

    #[test]
    fn answers_evaluations_and_hessians_and_counts_every_rollout() {
        let task = DsboTask::new(DsboEnvKind::PredPrey, 2)
            .unwrap()
            .with_distance_shaping(true)
            .with_schedule(RewardSchedule::Sparse { period: 5 })
            .unwrap()
            .with_seed(3);
        let mut r = DsboRespondent::new(task.clone(), 4).unwrap();
        let d = r.space().dim();
        assert_eq!(d, task.dim().unwrap());
        let u: Vec<f64> = (0..d).map(|j| (j % 7) as f64 / 7.0).collect();
        let theta = r.space().to_user_reals(&u).unwrap();
        let q = Query {
            id: 0,
            kind: QueryKind::Evaluate {
                points: vec![Point::Unit(u.clone())],
            },
        };
        let a = r.answer(&q).unwrap();
        let v = task.evaluate(&theta).unwrap();
        assert_eq!(a, Answer::values(&q, vec![v]).unwrap());
        let q = Query {
            id: 1,
            kind: QueryKind::Hessian {
                point: Point::Unit(u),
            },
        };
        let a = r.answer(&q).unwrap();
        a.check_against(&q).unwrap();
        let h = task
            .surrogate_hessian(&theta, &HessianOptions::default(), 4)
            .unwrap();
        let AnswerKind::Matrix { rows } = &a.kind else {
            panic!("{a:?}")
        };
        assert_eq!(rows[1][2], h.get(1, 2));
        assert_eq!(r.returns(), &[v, v]);
        // Candidate indices and other query kinds are refused by name.
        let q = Query {
            id: 2,
            kind: QueryKind::Evaluate {
                points: vec![Point::Index(0)],
            },
        };
        assert!(r.answer(&q).unwrap_err().to_string().contains("points[0]"));
        let q = Query {
            id: 3,
            kind: QueryKind::Compare {
                points: vec![],
                rater: None,
            },
        };
        assert!(matches!(r.answer(&q), Err(Error::UnsupportedQuery { .. })));
        assert!(DsboRespondent::new(task, 0).is_err());
    }
}
