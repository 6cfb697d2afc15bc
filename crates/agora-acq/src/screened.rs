//! Screen-and-refine maximization over a finite pool of options, for acquisitions too costly
//! to score everywhere or without gradients (Social BO's optimistic improvement solves a
//! constrained problem per option; the GP variant's welfare UCB is a kinked max-min):
//!
//! 1. **screen**: score every option of the pool with one or more cheap criteria;
//! 2. **shortlist**: keep the `keep` best options of each criterion (ties to the lower
//!    index, NaN last), criterion by criterion, without repeats;
//! 3. **refine**: score the shortlist with the exact acquisition (in parallel) — or, without
//!    one, by the first criterion — and take the first best;
//! 4. **local search** (optional): score Gaussian perturbations of the winner, clamped to
//!    the unit cube and projected (e.g. onto a space's grid), by the same score; the first
//!    that beats the winner replaces it.
//!
//! Social BO (docs/notes/social-bo.md §8) screens a fresh scrambled Sobol set by the
//! MAP-fixed optimism and the MAP welfare and solves the exact optimism on the shortlist;
//! the GP variant screens by its acquisition itself (`keep = 1`, no exact score) and then
//! searches locally.

use agora_core::{Error, Result};
use agora_math::rng::Rng;
use rayon::prelude::*;
use std::cmp::Ordering;

/// Cheap criteria: for a batch of options, one score vector per criterion (each as long as
/// the batch); larger is better.
pub type ScreenFn<'a> = dyn Fn(&[Vec<f64>]) -> Result<Vec<Vec<f64>>> + Sync + 'a;

/// The exact acquisition at one option.
pub type ExactFn<'a> = dyn Fn(&[f64]) -> Result<f64> + Sync + 'a;

/// Gaussian perturbations of the winner (stage 4 of [`maximize_screened`]).
pub struct LocalSearch<'a> {
    /// Number of perturbations.
    pub count: usize,
    /// Their standard deviation in unit-cube coordinates.
    pub sd: f64,
    /// Their random stream (`count × d` standard normal draws, point by point).
    pub rng: Rng,
    /// Maps a perturbed point (already clamped to `[0, 1]^d`) onto the search space.
    pub project: &'a dyn Fn(&[f64]) -> Result<Vec<f64>>,
}

/// Screen-and-refine maximization of an acquisition over `pool` (see the module doc):
/// `screen` scores options cheaply, the `keep` best per criterion are scored by `exact`
/// (or by the first criterion when `exact` is `None`), and `local` optionally searches
/// around the winner. Returns the best option and its score.
///
/// # Errors
///
/// An empty pool, a criterion of the wrong length, or an error of `screen`, `exact` or
/// `project`.
pub fn maximize_screened(
    pool: &[Vec<f64>],
    screen: &ScreenFn<'_>,
    keep: usize,
    exact: Option<&ExactFn<'_>>,
    local: Option<LocalSearch<'_>>,
) -> Result<(Vec<f64>, f64)> {
    if pool.is_empty() {
        return Err(Error::invalid("pool", "needs at least one option"));
    }
    let criteria = screen(pool)?;
    if criteria.is_empty() {
        return Err(Error::invalid("screen", "needs at least one criterion"));
    }
    if let Some(c) = criteria.iter().find(|c| c.len() != pool.len()) {
        return Err(Error::dim("screen scores", pool.len(), c.len()));
    }
    let shortlist = shortlist(&criteria, keep.max(1));
    let values: Vec<f64> = match exact {
        Some(f) => shortlist
            .par_iter()
            .map(|&k| f(&pool[k]))
            .collect::<Result<_>>()?,
        None => shortlist.iter().map(|&k| criteria[0][k]).collect(),
    };
    let mut best: Option<(f64, usize)> = None;
    for (&k, &v) in shortlist.iter().zip(&values) {
        if best.is_none_or(|(b, _)| v > b) {
            best = Some((v, k));
        }
    }
    let (v0, k0) = best.expect("the shortlist holds at least one option");
    let (mut best_v, mut best_x) = (v0, pool[k0].clone());
    if let Some(mut ls) = local.filter(|l| l.count > 0) {
        use rand_distr::Distribution;
        let tries: Vec<Vec<f64>> = (0..ls.count)
            .map(|_| {
                let x: Vec<f64> = best_x
                    .iter()
                    .map(|c| {
                        let e: f64 = rand_distr::StandardNormal.sample(&mut ls.rng);
                        (c + ls.sd * e).clamp(0.0, 1.0)
                    })
                    .collect();
                (ls.project)(&x)
            })
            .collect::<Result<_>>()?;
        let scores: Vec<f64> = match exact {
            Some(f) => tries.par_iter().map(|x| f(x)).collect::<Result<_>>()?,
            None => screen(&tries)?.swap_remove(0),
        };
        for (x, v) in tries.into_iter().zip(scores) {
            if v > best_v {
                (best_v, best_x) = (v, x);
            }
        }
    }
    Ok((best_x, best_v))
}

/// The `keep` best indices of each criterion in turn (descending, ties to the lower index,
/// NaN last), without repeats.
fn shortlist(criteria: &[Vec<f64>], keep: usize) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for c in criteria {
        let mut order: Vec<usize> = (0..c.len()).collect();
        order.sort_by(|&a, &b| descending(c[a], c[b]).then(a.cmp(&b)));
        for &k in order.iter().take(keep) {
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out
}

/// Larger first, NaN after every number.
fn descending(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (false, false) => b.total_cmp(&a),
        (a_nan, b_nan) => a_nan.cmp(&b_nan),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(n: usize) -> Vec<Vec<f64>> {
        (0..n).map(|k| vec![k as f64 / (n - 1) as f64]).collect()
    }

    #[test]
    fn the_exact_score_decides_among_the_shortlists_of_every_criterion() {
        let pool = grid(11);
        // Criterion 0 prefers large x, criterion 1 small x; the exact score peaks at 0.
        let screen = |xs: &[Vec<f64>]| -> Result<Vec<Vec<f64>>> {
            Ok(vec![
                xs.iter().map(|x| x[0]).collect(),
                xs.iter().map(|x| -x[0]).collect(),
            ])
        };
        let exact = |x: &[f64]| -> Result<f64> { Ok(-(x[0] - 0.05).abs()) };
        let (x, v) = maximize_screened(&pool, &screen, 2, Some(&exact), None).unwrap();
        assert_eq!(x, vec![0.0]);
        assert!((v + 0.05).abs() < 1e-12);
        // Without the second criterion the shortlist is {1.0, 0.9}: the exact score picks 0.9.
        let one = |xs: &[Vec<f64>]| -> Result<Vec<Vec<f64>>> {
            Ok(vec![xs.iter().map(|x| x[0]).collect()])
        };
        let (x, _) = maximize_screened(&pool, &one, 2, Some(&exact), None).unwrap();
        assert_eq!(x, vec![0.9]);
        assert!(maximize_screened(&[], &one, 2, None, None).is_err());
    }

    #[test]
    fn ties_go_to_the_first_option_and_nan_never_wins() {
        assert_eq!(shortlist(&[vec![1.0, f64::NAN, 3.0, 3.0]], 2), vec![2, 3]);
        assert_eq!(shortlist(&[vec![f64::NAN, 0.0]], 1), vec![1]);
    }

    #[test]
    fn local_search_improves_on_the_pool_and_respects_the_projection() {
        let pool = grid(5);
        let score = |xs: &[Vec<f64>]| -> Result<Vec<Vec<f64>>> {
            Ok(vec![xs.iter().map(|x| -(x[0] - 0.6).powi(2)).collect()])
        };
        let snap = |x: &[f64]| -> Result<Vec<f64>> { Ok(vec![(x[0] * 100.0).round() / 100.0]) };
        let local = LocalSearch {
            count: 64,
            sd: 0.05,
            rng: agora_math::rng::stream(1, &[2]),
            project: &snap,
        };
        let (x, v) = maximize_screened(&pool, &score, 1, None, Some(local)).unwrap();
        assert!(v > -(0.5f64 - 0.6).powi(2), "{x:?}");
        assert!((x[0] - 0.6).abs() < 0.05 && x[0] == (x[0] * 100.0).round() / 100.0);
    }
}
