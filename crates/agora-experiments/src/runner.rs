//! The one runner: a strategy asks, a respondent answers, the strategy is told, and the
//! suite watches. Every simulated experiment in agora goes through [`drive`]; grids of runs
//! go through [`run_parallel`].
//!
//! A suite never writes its own ask/answer/tell loop: it builds a [`Strategy`] (from the
//! method registry or directly), a [`Respondent`] (an oracle, a simulated group, person,
//! expert or environment from agora-problems), and an observer that records what the suite
//! measures after each answered query and says when to stop.

use agora_core::{Answer, Query, Respondent, Result};
use agora_methods::Strategy;
use std::ops::ControlFlow;
use std::time::Instant;

/// One answered query, as the runner shows it to the observer.
#[derive(Debug)]
pub struct Step<'a, S: ?Sized> {
    /// Index of the query in this run (0-based).
    pub iter: usize,
    /// The query the strategy asked.
    pub query: &'a Query,
    /// The respondent's answer, already told to the strategy.
    pub answer: &'a Answer,
    /// The strategy after the answer (read-only: its rounds, model, recommendation).
    pub strategy: &'a S,
    /// Wall seconds in `ask` (not deterministic).
    pub ask_seconds: f64,
    /// Wall seconds in `tell` (not deterministic).
    pub tell_seconds: f64,
}

/// Drive `strategy` with `respondent` until `observe` breaks or `max_queries` queries have
/// been answered, whichever comes first; returns the number of queries answered.
///
/// `observe` sees every answered query (after `tell`) and returns
/// [`ControlFlow::Break`] to stop. Errors from the strategy, the respondent or the observer
/// end the run and are returned as they are.
///
/// # Example
///
/// ```
/// use agora_experiments::runner::drive;
/// use agora_methods::{RandomSearch, Strategy};
/// use agora_problems::{Oracle, Problem};
/// use std::ops::ControlFlow;
///
/// let problem = Problem::by_name("branin").unwrap();
/// let mut strategy = RandomSearch::new(problem.space.clone(), 7).unwrap();
/// let mut oracle = Oracle::new(problem, 0.0, 1).unwrap();
/// let mut best = f64::NEG_INFINITY;
/// let n = drive(&mut strategy, &mut oracle, 20, |step| {
///     best = step.strategy.recommend().map_or(best, |(_, v)| v);
///     Ok(ControlFlow::Continue(()))
/// })
/// .unwrap();
/// assert_eq!(n, 20);
/// assert!(best > -50.0); // Branin, negated so that larger is better
/// ```
pub fn drive<S, R, F>(
    strategy: &mut S,
    respondent: &mut R,
    max_queries: usize,
    mut observe: F,
) -> Result<usize>
where
    S: Strategy + ?Sized,
    R: Respondent + ?Sized,
    F: FnMut(Step<'_, S>) -> Result<ControlFlow<()>>,
{
    for iter in 0..max_queries {
        let t = Instant::now();
        let query = strategy.ask()?;
        let ask_seconds = t.elapsed().as_secs_f64();
        let answer = respondent.answer(&query)?;
        let t = Instant::now();
        strategy.tell(&answer)?;
        let tell_seconds = t.elapsed().as_secs_f64();
        let step = Step {
            iter,
            query: &query,
            answer: &answer,
            strategy,
            ask_seconds,
            tell_seconds,
        };
        if observe(step)?.is_break() {
            return Ok(iter + 1);
        }
    }
    Ok(max_queries)
}

/// Run `job` over `jobs` in parallel (rayon) with a progress bar labelled `label` (hidden
/// unless `progress`); results keep the jobs' order, and the first error wins.
pub fn run_parallel<J, R, F>(label: &str, jobs: &[J], progress: bool, job: F) -> Result<Vec<R>>
where
    J: Sync,
    R: Send,
    F: Fn(&J) -> Result<R> + Sync,
{
    use indicatif::{ProgressBar, ProgressStyle};
    use rayon::prelude::*;
    let bar = if progress {
        ProgressBar::new(jobs.len() as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{label} {{bar:40}} {{pos}}/{{len}} runs [{{elapsed_precise}} < {{eta}}]"
        ))
        .expect("valid template"),
    );
    let out = jobs
        .par_iter()
        .map(|j| {
            let r = job(j);
            bar.inc(1);
            r
        })
        .collect::<Result<Vec<R>>>();
    bar.finish_and_clear();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::{AnswerKind, Error, QueryKind, Space};
    use agora_methods::RandomSearch;

    /// Answers evaluations with the first coordinate; counts the queries it saw.
    struct First(usize);

    impl Respondent for First {
        fn answer(&mut self, q: &Query) -> Result<Answer> {
            self.0 += 1;
            let QueryKind::Evaluate { points } = &q.kind else {
                return Err(Error::unsupported_query("first", q));
            };
            let v = points
                .iter()
                .map(|p| match p {
                    agora_core::Point::Unit(u) => u[0],
                    agora_core::Point::Index(i) => *i as f64,
                })
                .collect();
            Answer::values(q, v)
        }
    }

    #[test]
    fn drives_until_the_observer_stops_or_the_cap() {
        let space = Space::reals(&[(0.0, 1.0), (0.0, 1.0)]).unwrap();
        let mut s = RandomSearch::new(space.clone(), 3).unwrap();
        let mut r = First(0);
        let mut seen = Vec::new();
        let n = drive(&mut s, &mut r, 100, |step| {
            let AnswerKind::Values { values } = &step.answer.kind else {
                unreachable!()
            };
            seen.push((step.iter, step.query.id, values[0]));
            Ok(if step.iter == 4 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        })
        .unwrap();
        assert_eq!((n, r.0, s.n_answered()), (5, 5, 5));
        assert_eq!(
            seen.iter().map(|t| t.1).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        // The same seed and answers give the same queries: a second strategy told the
        // recorded answers by the same loop sees the same values.
        let mut s2 = RandomSearch::new(space, 3).unwrap();
        let mut again = Vec::new();
        let n = drive(&mut s2, &mut First(0), 5, |step| {
            let AnswerKind::Values { values } = &step.answer.kind else {
                unreachable!()
            };
            again.push((step.iter, step.query.id, values[0]));
            Ok(ControlFlow::Continue(()))
        })
        .unwrap();
        assert_eq!((n, &again), (5, &seen));
        // A respondent's error ends the run and comes back as it is.
        let mut g = agora_methods::Pbo::new(
            Space::reals(&[(0.0, 1.0)]).unwrap(),
            agora_methods::PboConfig::new(agora_methods::PairRule::Eubo),
            0,
        )
        .unwrap();
        let e = drive(&mut g, &mut First(0), 3, |_| Ok(ControlFlow::Continue(()))).unwrap_err();
        assert!(matches!(e, Error::UnsupportedQuery { .. }), "{e}");
    }
}
