//! The one runner: a strategy asks, a respondent answers, the strategy is told, and the
//! suite watches. Every simulated experiment in agora goes through [`drive`]; grids of runs
//! go through [`Runner::run_parallel`], here or as a sweep on many machines.
//!
//! A suite never writes its own ask/answer/tell loop: it builds a [`Strategy`] (from the
//! method registry or directly), a [`Respondent`] (an oracle, a simulated group, person,
//! expert or environment from agora-problems), and an observer that records what the suite
//! measures after each answered query and says when to stop.

use agora_core::{Answer, Query, Respondent, Result};
use agora_methods::Strategy;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU32, Ordering};
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

/// How a command's grids are run: on this machine's threads ([`Runner::local`]), or as
/// one worker of a sweep shared through a database ([`Runner::sweep`], see
/// [`crate::sweep`]). Every grid of every suite goes through [`Runner::run_parallel`], so
/// the same command runs either way and writes the same files.
pub struct Runner {
    progress: bool,
    sweep: Option<crate::sweep::SweepRun>,
    /// The number of the next grid this command runs (a sweep's phase).
    next_phase: AtomicU32,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("progress", &self.progress)
            .field("sweep", &self.sweep.as_ref().map(|s| s.name()))
            .finish()
    }
}

impl Runner {
    /// Run every grid here, in parallel (rayon), with a progress bar when `progress`.
    pub fn local(progress: bool) -> Runner {
        Runner {
            progress,
            sweep: None,
            next_phase: AtomicU32::new(0),
        }
    }

    /// Run every grid as cells of `sweep` (claimed, computed and stored by this worker and
    /// others, or only read back, as `sweep` says).
    pub fn sweep(progress: bool, sweep: crate::sweep::SweepRun) -> Runner {
        Runner {
            progress,
            sweep: Some(sweep),
            next_phase: AtomicU32::new(0),
        }
    }

    /// Whether progress bars are drawn.
    pub fn progress(&self) -> bool {
        self.progress
    }

    /// The sweep this runner works on, if any.
    pub fn sweep_run(&self) -> Option<&crate::sweep::SweepRun> {
        self.sweep.as_ref()
    }

    /// Run `job` over `jobs` and return the results in the jobs' order; the first error
    /// wins. Locally the jobs run in parallel (rayon) with a progress bar labelled `label`.
    /// In a sweep, the grid is the sweep's next phase: its jobs are cells that this worker
    /// and others claim; every worker gets every cell's result, read back from the store
    /// (results therefore go through JSON, which keeps every finite `f64` exactly).
    pub fn run_parallel<J, R, F>(&self, label: &str, jobs: &[J], job: F) -> Result<Vec<R>>
    where
        J: Sync + std::fmt::Debug,
        R: Send + Serialize + DeserializeOwned,
        F: Fn(&J) -> Result<R> + Sync,
    {
        let phase = self.next_phase.fetch_add(1, Ordering::SeqCst);
        let bar = progress_bar(label, jobs.len(), self.progress);
        let out = match &self.sweep {
            None => {
                use rayon::prelude::*;
                jobs.par_iter()
                    .map(|j| {
                        let r = job(j);
                        bar.inc(1);
                        r
                    })
                    .collect::<Result<Vec<R>>>()
            }
            Some(sweep) => sweep.run_phase(phase, label, jobs, &job, &bar),
        };
        bar.finish_and_clear();
        out
    }
}

/// A progress bar over `n` runs (hidden unless `show`).
fn progress_bar(label: &str, n: usize, show: bool) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressStyle};
    let bar = if show {
        ProgressBar::new(n as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{label} {{bar:40}} {{pos}}/{{len}} runs [{{elapsed_precise}} < {{eta}}]"
        ))
        .expect("valid template"),
    );
    bar
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
