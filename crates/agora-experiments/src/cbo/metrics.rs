//! What a collaborative run records, its per-round metrics and their summaries
//! (docs/notes/collaborative-fair-bo.md §1 and §4; the authors' notebook formulas).

use crate::stats::mean_se;
use agora_core::{AnswerKind, Error, Query, Respondent, Result};
use agora_math::welfare::Welfare;
use agora_methods::Strategy;
use serde::{Deserialize, Serialize};
use std::ops::ControlFlow;

/// `ρ_eval` of the unfairness and fair-regret metrics.
pub const RHO_EVAL: f64 = 0.2;

/// One run's trajectory: `f[t][i]` and `y[t][i]` for round `t`, party `i`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CboRun {
    /// Variant label.
    pub variant: String,
    /// Seed.
    pub seed: u64,
    /// Noiseless values per round and party.
    pub f: Vec<Vec<f64>>,
    /// Observed values.
    pub y: Vec<Vec<f64>>,
    /// Wall seconds of each model-based round (`ask` + `tell`).
    pub round_seconds: Vec<f64>,
    /// Graph runs: size of each model-based round's candidate product.
    #[serde(default)]
    pub search_batches: Vec<f64>,
    /// Graph runs: batches the exact search scored in each model-based round.
    #[serde(default)]
    pub search_leaves: Vec<u64>,
}

impl CboRun {
    /// An empty run of `variant` on `seed`.
    pub fn new(variant: impl Into<String>, seed: u64) -> CboRun {
        CboRun {
            variant: variant.into(),
            seed,
            f: Vec::new(),
            y: Vec::new(),
            round_seconds: Vec::new(),
            search_batches: Vec::new(),
            search_leaves: Vec::new(),
        }
    }
}

/// The noiseless values of a query's points, when the parties observe with noise.
pub(super) type Noiseless<'a> = &'a dyn Fn(&Query) -> Result<Vec<f64>>;

/// Drive a per-party strategy (one point per party each round) against `respondent` for
/// `rounds` rounds and record the run: `y` as answered, `f` from `noiseless` of the query
/// (the answers themselves when `None`, for noiseless parties), and the seconds of each
/// model-based round (from round `n_init` on, `ask` + `tell`). `extra` records what else
/// the suite reads of the strategy after each round.
pub(super) fn drive_parties<S, R>(
    strategy: &mut S,
    respondent: &mut R,
    rounds: usize,
    n_init: usize,
    noiseless: Option<Noiseless<'_>>,
    mut run: CboRun,
    mut extra: impl FnMut(&S, &mut CboRun),
) -> Result<CboRun>
where
    S: Strategy + ?Sized,
    R: Respondent,
{
    crate::runner::drive(strategy, respondent, rounds, |step| {
        let AnswerKind::Values { values } = &step.answer.kind else {
            return Err(Error::invalid("answer", "the parties answer with values"));
        };
        let f = match noiseless {
            Some(f) => f(step.query)?,
            None => values.clone(),
        };
        if step.iter >= n_init {
            run.round_seconds.push(step.ask_seconds + step.tell_seconds);
            extra(step.strategy, &mut run);
        }
        run.y.push(values.clone());
        run.f.push(f);
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(run)
}

/// Per-round metrics of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CboMetrics {
    /// `R_t/n`.
    pub r_over_n: Vec<f64>,
    /// `U_t/n − g_t`.
    pub unfairness: Vec<f64>,
    /// `S_t`.
    pub fair_regret: Vec<f64>,
    /// Worst simple regret.
    pub worst_sr: Vec<f64>,
    /// Average simple regret.
    pub avg_sr: Vec<f64>,
    /// `U_T^i`.
    pub final_u: Vec<f64>,
}

/// Fair cumulative regret computed round by round from its definition (Lemma 6, with λ
/// built from f): `S_t = Σ_{s≤t} [W̃(f*·1 + λ_s) − W̃(f(X_s) + λ_s)]`, `λ_s = U_{s−1}`,
/// normalized Gini weights with `ρ_eval`. An independent check of [`metrics`]'
/// closed form `t f* − g_t`.
pub fn fair_regret_by_rounds(f: &[Vec<f64>], f_star: f64) -> Vec<f64> {
    let n = f.first().map_or(0, |r| r.len());
    let w = Welfare::Gini { rho: RHO_EVAL };
    let mut lambda = vec![0.0; n];
    let mut total = 0.0;
    let mut out = Vec::with_capacity(f.len());
    for row in f {
        let best: Vec<f64> = lambda.iter().map(|l| l + f_star).collect();
        let got: Vec<f64> = lambda.iter().zip(row).map(|(l, v)| l + v).collect();
        total += w.normalized_value(&best) - w.normalized_value(&got);
        out.push(total);
        for (l, v) in lambda.iter_mut().zip(row) {
            *l += v;
        }
    }
    out
}

/// The metrics of a trajectory (`f_star` the optimum), all counting the `T0` random rounds:
/// - `R_t/n = mean_i Σ_{s≤t} (f* − f(x_s^i))` (noiseless f);
/// - `U_t^i = Σ_{s≤t} f(x_s^i)`, Gini welfare `g_t = Σ_k w̃_k U_t^(k)` with normalized
///   weights `ρ_eval^{k−1}` on the ascending `U_t`; unfairness `U_t/n − g_t`;
/// - fair cumulative regret `S_t = t f* − g_t`, which equals `R_t/n + (U_t/n − g_t)`;
/// - worst and average simple regret `max_i / mean_i min_{s≤t} (f* − f(x_s^i))`.
pub fn metrics(f: &[Vec<f64>], f_star: f64) -> CboMetrics {
    let n = f.first().map_or(0, |r| r.len());
    let w = Welfare::Gini { rho: RHO_EVAL };
    let mut u = vec![0.0; n];
    let mut best = vec![f64::INFINITY; n];
    let mut m = CboMetrics {
        r_over_n: Vec::new(),
        unfairness: Vec::new(),
        fair_regret: Vec::new(),
        worst_sr: Vec::new(),
        avg_sr: Vec::new(),
        final_u: Vec::new(),
    };
    let mut cum_r = 0.0;
    for (t, row) in f.iter().enumerate() {
        for i in 0..n {
            u[i] += row[i];
            cum_r += f_star - row[i];
            best[i] = best[i].min(f_star - row[i]);
        }
        let mean_u = u.iter().sum::<f64>() / n as f64;
        let g = w.normalized_value(&u);
        m.r_over_n.push(cum_r / n as f64);
        m.unfairness.push(mean_u - g);
        m.fair_regret.push((t + 1) as f64 * f_star - g);
        m.worst_sr
            .push(best.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
        m.avg_sr.push(best.iter().sum::<f64>() / n as f64);
    }
    m.final_u = u;
    m
}

/// Per-party simple regret at the end (`f* − best value`), for individual rationality.
pub fn final_party_sr(run: &CboRun, f_star: f64) -> Vec<f64> {
    let n = run.f.first().map_or(0, |r| r.len());
    (0..n)
        .map(|i| {
            run.f
                .iter()
                .map(|r| f_star - r[i])
                .fold(f64::INFINITY, f64::min)
        })
        .collect()
}

/// Summary of one variant over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CboSummary {
    /// Variant.
    pub variant: String,
    /// Runs.
    pub runs: usize,
    /// `R_T/n`.
    pub r_over_n: (f64, f64),
    /// Time-averaged unfairness (mean over t = 1..T).
    pub unfairness_avg: (f64, f64),
    /// Unfairness at T.
    pub unfairness_final: (f64, f64),
    /// Worst simple regret at T.
    pub worst_sr: (f64, f64),
    /// Average simple regret at T.
    pub avg_sr: (f64, f64),
    /// `S_T`.
    pub fair_regret: (f64, f64),
    /// Mean wall seconds per model-based round.
    pub round_seconds: (f64, f64),
    /// Mean `R_t/n` per round.
    pub r_curve: Vec<f64>,
    /// Mean unfairness per round.
    pub unfair_curve: Vec<f64>,
    /// Mean worst simple regret per round.
    pub worst_curve: Vec<f64>,
}

/// Variant labels in the order their runs first appear.
pub(super) fn labels(runs: &[CboRun]) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for r in runs {
        if !labels.contains(&r.variant) {
            labels.push(r.variant.clone());
        }
    }
    labels
}

/// A per-run metric at the end of the run.
pub(super) type Final = fn(&CboMetrics) -> f64;

/// `R_T/n`.
pub(super) fn r_final(m: &CboMetrics) -> f64 {
    *m.r_over_n.last().unwrap_or(&f64::NAN)
}

/// Time-averaged unfairness.
pub(super) fn unfairness_avg(m: &CboMetrics) -> f64 {
    m.unfairness.iter().sum::<f64>() / m.unfairness.len() as f64
}

/// Worst simple regret at `T`.
pub(super) fn worst_final(m: &CboMetrics) -> f64 {
    *m.worst_sr.last().unwrap_or(&f64::NAN)
}

/// `metric` of every run of `variant` by seed, for paired comparisons.
pub(super) fn per_seed(
    runs: &[CboRun],
    variant: &str,
    f_star: f64,
    metric: impl Fn(&CboRun, &CboMetrics) -> f64,
) -> std::collections::BTreeMap<u64, f64> {
    runs.iter()
        .filter(|r| r.variant == variant)
        .map(|r| (r.seed, metric(r, &metrics(&r.f, f_star))))
        .collect()
}

/// Summaries in variant order (Hartmann-6: f* = 3.32237).
pub fn summarize(runs: &[CboRun]) -> Vec<CboSummary> {
    use agora_problems::TestFunction;
    summarize_with(runs, agora_problems::functions::Hartmann6.optimum_value())
}

/// Summaries in variant order against the optimum `f_star`.
pub fn summarize_with(runs: &[CboRun], f_star: f64) -> Vec<CboSummary> {
    labels(runs)
        .into_iter()
        .map(|l| {
            let rs: Vec<&CboRun> = runs.iter().filter(|r| r.variant == l).collect();
            let ms: Vec<CboMetrics> = rs.iter().map(|r| metrics(&r.f, f_star)).collect();
            let last = |sel: Final| mean_se(&ms.iter().map(sel).collect::<Vec<_>>());
            let rounds = ms.iter().map(|m| m.r_over_n.len()).min().unwrap_or(0);
            let curve = |sel: &dyn Fn(&CboMetrics) -> &Vec<f64>| -> Vec<f64> {
                (0..rounds)
                    .map(|t| ms.iter().map(|m| sel(m)[t]).sum::<f64>() / ms.len() as f64)
                    .collect()
            };
            let secs: Vec<f64> = rs
                .iter()
                .map(|r| r.round_seconds.iter().sum::<f64>() / r.round_seconds.len().max(1) as f64)
                .collect();
            CboSummary {
                variant: l.clone(),
                runs: rs.len(),
                r_over_n: last(r_final),
                unfairness_avg: last(unfairness_avg),
                unfairness_final: last(|m| *m.unfairness.last().unwrap_or(&f64::NAN)),
                worst_sr: last(worst_final),
                avg_sr: last(|m| *m.avg_sr.last().unwrap_or(&f64::NAN)),
                fair_regret: last(|m| *m.fair_regret.last().unwrap_or(&f64::NAN)),
                round_seconds: mean_se(&secs),
                r_curve: curve(&|m| &m.r_over_n),
                unfair_curve: curve(&|m| &m.unfairness),
                worst_curve: curve(&|m| &m.worst_sr),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fair_regret_identity_and_hand_metrics() {
        // Two parties, three rounds, f* = 2.
        let f = vec![vec![1.0, 0.5], vec![1.5, 2.0], vec![0.0, 1.0]];
        let m = metrics(&f, 2.0);
        // R_t/n: (1 + 1.5)/2, then + (0.5 + 0)/2, then + (2 + 1)/2.
        assert_eq!(m.r_over_n, vec![1.25, 1.5, 3.0]);
        // U_3 = (2.5, 3.5); g = (2.5 + 0.2·3.5)/1.2; unfairness = 3 − g.
        let g = (2.5 + 0.2 * 3.5) / 1.2;
        assert!((m.unfairness[2] - (3.0 - g)).abs() < 1e-12);
        let direct = fair_regret_by_rounds(&f, 2.0);
        for (t, d) in direct.iter().enumerate() {
            assert!((m.fair_regret[t] - d).abs() < 1e-12);
            assert!((m.fair_regret[t] - (m.r_over_n[t] + m.unfairness[t])).abs() < 1e-12);
        }
        // Simple regrets: party 0 best 0.5, party 1 best 0.0.
        assert_eq!(m.worst_sr[2], 0.5);
        assert_eq!(m.avg_sr[2], 0.25);
    }
}
