//! Uniform random search over a box of real parameters: the baseline of DSBO's comparison
//! (one ChaCha stream for the whole run, so its points differ from [`crate::RandomSearch`]'s
//! per-query streams).

use crate::Strategy;
use crate::evaluations::{
    Evaluations, continuous_box, evaluate_query, evaluated, evaluations_strategy, uniform_point,
};
use crate::open::{AskTell, OpenQuery};
use agora_core::{Answer, Query, Result, Space};
use agora_math::rng::{Rng, stream};

/// Uniform random points of the unit cube, drawn in order from ChaCha stream `[]` of the
/// seed.
#[derive(Debug, Clone)]
pub struct UniformSearch {
    dim: usize,
    rng: Rng,
    evals: Evaluations,
    open: OpenQuery<()>,
}

impl UniformSearch {
    /// Random search on `space` (a box of real parameters).
    ///
    /// Errors: a bad space (naming the field).
    pub fn new(space: &Space, seed: u64) -> Result<UniformSearch> {
        Ok(UniformSearch {
            dim: continuous_box(space)?,
            rng: stream(seed, &[]),
            evals: Evaluations::default(),
            open: OpenQuery::default(),
        })
    }
}

impl AskTell for UniformSearch {
    type Pending = ();

    fn open_query(&mut self) -> &mut OpenQuery<()> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, ())> {
        let u = uniform_point(&mut self.rng, self.dim);
        Ok((evaluate_query(self.evals.len() as u64, &u), ()))
    }

    fn record(&mut self, query: &Query, _: &(), answer: &Answer) -> Result<()> {
        let (u, y) = evaluated(query, answer)?;
        self.evals.push(u, y);
        Ok(())
    }
}

impl Strategy for UniformSearch {
    fn name(&self) -> String {
        "uniform".into()
    }
    evaluations_strategy!();
}
