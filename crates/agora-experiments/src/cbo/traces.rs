//! Fairness along the run (the appendix's C.3 and C.7): unfairness `U_t/n − g_t` against
//! the mean cumulative utility `U_t/n` rather than t (Fig. 7: "to ensure that larger
//! unfairness is not due to larger `U_t/n`"), and the realized cumulative utilities
//! `λ_t^i = Σ_{t'<t} y_{t'}^i` as their gap to the lowest, `λ_t^i − min_j λ_t^j` (Fig. 13).
//!
//! Judged per seed: unfairness at the largest `U_t/n` both runs of a seed reach
//! ([`unfairness_at_same_u`]); the time-averaged largest gap `max_i λ_t^i − min_i λ_t^i`
//! and how often the party with the largest λ changes ([`LambdaTrace`]), after the random
//! rounds (whose picks are no method's).

use super::metrics::{CboRun, RHO_EVAL, labels};
use super::rationality::at_common_x;
use crate::stats::{self, Better, Verdict};
use agora_core::Result;
use agora_math::welfare::Welfare;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// `(U_t/n, U_t/n − g_t)` of a run step by step (`U` from the noiseless values, Gini
/// welfare with `ρ_eval`, as [`super::metrics::metrics`]).
pub fn unfairness_curve(run: &CboRun) -> Vec<(f64, f64)> {
    let n = run.f.first().map_or(0, Vec::len);
    let w = Welfare::Gini { rho: RHO_EVAL };
    let mut u = vec![0.0; n];
    run.f
        .iter()
        .map(|row| {
            for (ui, v) in u.iter_mut().zip(row) {
                *ui += v;
            }
            let mean = u.iter().sum::<f64>() / n as f64;
            (mean, mean - w.normalized_value(&u))
        })
        .collect()
}

/// A variant's mean [`unfairness_curve`] over its runs, step by step (Fig. 7's line).
pub fn mean_unfairness_curve(runs: &[&CboRun]) -> Vec<(f64, f64)> {
    let curves: Vec<Vec<(f64, f64)>> = runs.iter().map(|r| unfairness_curve(r)).collect();
    let steps = curves.iter().map(Vec::len).min().unwrap_or(0);
    let k = curves.len().max(1) as f64;
    (0..steps)
        .map(|t| {
            let (x, y) = curves
                .iter()
                .fold((0.0, 0.0), |a, c| (a.0 + c[t].0, a.1 + c[t].1));
            (x / k, y / k)
        })
        .collect()
}

/// Per seed, the unfairness of variants `a` and `b` at the largest `U_t/n` both runs reach.
pub fn unfairness_at_same_u(
    runs: &[CboRun],
    a: &str,
    b: &str,
) -> (BTreeMap<u64, f64>, BTreeMap<u64, f64>) {
    at_common_x(runs, a, b, unfairness_curve)
}

/// A run's realized cumulative utilities before each round, as gaps to the lowest.
#[derive(Debug, Clone, PartialEq)]
pub struct LambdaTrace {
    /// `gaps[t][i] = λ_t^i − min_j λ_t^j`, with `λ_t^i = Σ_{t'<t} y_{t'}^i` (round t
    /// counted from 0, so `gaps[0]` is all zeros).
    pub gaps: Vec<Vec<f64>>,
}

impl LambdaTrace {
    /// The trace of a run's observations.
    pub fn of(run: &CboRun) -> LambdaTrace {
        let n = run.y.first().map_or(0, Vec::len);
        let mut lambda = vec![0.0; n];
        let mut gaps = Vec::with_capacity(run.y.len());
        for row in &run.y {
            let lo = lambda.iter().copied().fold(f64::INFINITY, f64::min);
            gaps.push(lambda.iter().map(|l| l - lo).collect());
            for (l, y) in lambda.iter_mut().zip(row) {
                *l += y;
            }
        }
        LambdaTrace { gaps }
    }

    /// Mean over rounds `from..` of the largest gap `max_i λ_t^i − min_i λ_t^i`.
    pub fn mean_spread(&self, from: usize) -> f64 {
        let s: Vec<f64> = self
            .gaps
            .iter()
            .skip(from)
            .map(|g| g.iter().copied().fold(0.0, f64::max))
            .collect();
        s.iter().sum::<f64>() / s.len().max(1) as f64
    }

    /// How many times, over rounds `from..`, the party with the largest λ differs from
    /// the previous round's (ties go to the lowest index).
    pub fn leader_changes(&self, from: usize) -> usize {
        let leader = |g: &Vec<f64>| {
            g.iter()
                .enumerate()
                .fold(
                    (0, f64::NEG_INFINITY),
                    |b, (i, v)| if *v > b.1 { (i, *v) } else { b },
                )
                .0
        };
        let ls: Vec<usize> = self.gaps.iter().skip(from).map(leader).collect();
        ls.windows(2).filter(|w| w[0] != w[1]).count()
    }
}

/// `metric` of each run of `variant`'s [`LambdaTrace`] by seed.
pub fn lambda_per_seed(
    runs: &[CboRun],
    variant: &str,
    metric: impl Fn(&LambdaTrace) -> f64,
) -> BTreeMap<u64, f64> {
    runs.iter()
        .filter(|r| r.variant == variant)
        .map(|r| (r.seed, metric(&LambdaTrace::of(r))))
        .collect()
}

/// Fig. 7 of a task: each collaborative variant's mean unfairness against its mean `U_t/n`
/// (`{stem}_unfairness_vs_u`).
pub fn unfairness_plot(dir: &Path, stem: &str, name: &str, runs: &[CboRun]) -> Result<Vec<String>> {
    let series: Vec<(String, Vec<(f64, f64)>)> = labels(runs)
        .into_iter()
        .filter(|l| l.contains("rho="))
        .map(|l| {
            let rs: Vec<&CboRun> = runs.iter().filter(|r| r.variant == l).collect();
            let c = mean_unfairness_curve(&rs);
            (l, c)
        })
        .collect();
    crate::curves::plot_xy(
        dir,
        &format!("{stem}_unfairness_vs_u"),
        &format!("{name}: unfairness vs U_t/n (rho_eval = 0.2)"),
        ("U_t/n (mean over runs)", "U_t/n - g_t (mean over runs)"),
        &series,
    )
}

/// Fig. 13: `λ_t^i − min_j λ_t^j` of each party along one run (seed `seed`) of each
/// variant in `variants` (`lambda_{variant}`, spaces and `=` as `_`).
pub fn lambda_plots(
    dir: &Path,
    runs: &[CboRun],
    variants: &[&str],
    seed: u64,
) -> Result<Vec<String>> {
    let mut figs = Vec::new();
    for v in variants {
        let Some(r) = runs.iter().find(|r| r.variant == *v && r.seed == seed) else {
            continue;
        };
        let tr = LambdaTrace::of(r);
        let n = tr.gaps.first().map_or(0, Vec::len);
        let series: Vec<(String, Vec<f64>, Vec<f64>)> = (0..n)
            .map(|i| {
                let y: Vec<f64> = tr.gaps.iter().map(|g| g[i]).collect();
                let z = vec![0.0; y.len()];
                (format!("party {}", i + 1), y, z)
            })
            .collect();
        let stem = format!("lambda_{}", v.replace([' ', '=', '.'], "_"));
        figs.extend(crate::curves::plot(
            dir,
            &stem,
            &format!("{v}, seed {seed}: lambda_t^i - min_j lambda_t^j"),
            "gap to the lowest realized utility",
            &series,
        )?);
    }
    Ok(figs)
}

/// The claims of Figs. 7 and 13 on a grid with collaborative variants `fixed` (largest ρ
/// first) and BO-IFU's fairest variant `ifu`, read after the `from` random rounds.
pub fn claims_markdown(
    runs: &[CboRun],
    fixed: &[&str],
    ifu: Option<&str>,
    from: usize,
) -> Result<String> {
    let mut md = String::new();
    let (Some(hi), Some(lo)) = (fixed.first(), fixed.last()) else {
        return Ok(md);
    };
    if hi == lo {
        return Ok(md);
    }
    let (a, b) = unfairness_at_same_u(runs, lo, hi);
    let j = stats::verdict_by_seed(&a, &b, Better::Lower)?;
    let _ = writeln!(
        md,
        "- **Smaller ρ gives lower unfairness at the same U_t/n** (Fig. 7: not because U_t/n is smaller): {} — \
         unfairness at the largest U_t/n both runs of a seed reach, {lo} minus {hi}: {}.",
        j.verdict.label(),
        j.describe(3)
    );
    let spread = |v: &str| lambda_per_seed(runs, v, |t| t.mean_spread(from));
    let changes = |v: &str| lambda_per_seed(runs, v, |t| t.leader_changes(from) as f64);
    let mean = |m: &BTreeMap<u64, f64>| stats::mean_se(&m.values().copied().collect::<Vec<_>>()).0;
    let (spread_lo, spread_hi) = (spread(lo), spread(hi));
    let j = stats::verdict_by_seed(&spread_lo, &spread_hi, Better::Lower)?;
    let _ = writeln!(
        md,
        "- **Smaller ρ narrows the gaps between the parties' realized utilities** (Fig. 13b–c): {} — mean over \
         rounds after the random ones of max_i λ_t^i − min_i λ_t^i, {hi} {:.3}, {lo} {:.3}; {lo} minus {hi}: {}.",
        j.verdict.label(),
        mean(&spread_hi),
        mean(&spread_lo),
        j.describe(3)
    );
    if let Some(ifu) = ifu {
        let spread_ifu = spread(ifu);
        let mut verdicts = Vec::new();
        let mut parts = Vec::new();
        for v in &fixed[1..] {
            let sv = spread(v);
            let j = stats::verdict_by_seed(&sv, &spread_ifu, Better::Lower)?;
            verdicts.push(j.verdict);
            parts.push(format!("{v} {:.3}: {}", mean(&sv), j.describe(3)));
        }
        let _ = writeln!(
            md,
            "- **BO-IFU's realized utilities drift further apart than ours** (Fig. 13a against 13b–c): {} — mean \
             largest gap, {ifu} {:.3}; ours at ρ < 1 minus it: {}.",
            Verdict::all(verdicts).label(),
            mean(&spread_ifu),
            parts.join("; ")
        );
        let (changes_lo, changes_ifu) = (changes(lo), changes(ifu));
        let j = stats::verdict_by_seed(&changes_lo, &changes_ifu, Better::Higher)?;
        let _ = writeln!(
            md,
            "- **Under ours the best-off party changes more often than under BO-IFU** (Fig. 13: \"alternates less \
             frequently\" for BO-IFU): {} — changes of the party with the largest λ after the random rounds, {lo} \
             {:.1}, {ifu} {:.1}; {lo} minus {ifu}: {}.",
            j.verdict.label(),
            mean(&changes_lo),
            mean(&changes_ifu),
            j.describe(1)
        );
    }
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cbo::metrics::metrics;

    fn run(label: &str, seed: u64, f: Vec<Vec<f64>>) -> CboRun {
        let mut r = CboRun::new(label, seed);
        r.y = f.clone();
        r.f = f;
        r
    }

    /// The curve's y is the metrics' unfairness, its x the mean cumulative utility.
    #[test]
    fn unfairness_curve_matches_the_metrics() {
        let r = run(
            "a",
            0,
            vec![
                vec![1.0, 0.5, 0.2],
                vec![0.3, 2.0, 0.1],
                vec![0.0, 1.0, 1.5],
            ],
        );
        let m = metrics(&r.f, 3.0);
        let c = unfairness_curve(&r);
        assert_eq!(c.len(), 3);
        for (t, (x, y)) in c.iter().enumerate() {
            assert!((y - m.unfairness[t]).abs() < 1e-12);
            let u: f64 = r.f[..=t].iter().flatten().sum::<f64>() / 3.0;
            assert!((x - u).abs() < 1e-12);
        }
        let mean = mean_unfairness_curve(&[&r, &r]);
        assert!((mean[2].1 - c[2].1).abs() < 1e-12);
    }

    /// λ before each round, gaps to the lowest, spread and leader changes by hand.
    #[test]
    fn lambda_trace_by_hand() {
        let r = run(
            "a",
            0,
            vec![
                vec![1.0, 0.0],
                vec![0.0, 2.0],
                vec![0.0, 0.0],
                vec![3.0, 0.0],
            ],
        );
        let tr = LambdaTrace::of(&r);
        // λ before rounds 0..4: (0,0), (1,0), (1,2), (1,2).
        assert_eq!(
            tr.gaps,
            vec![
                vec![0.0, 0.0],
                vec![1.0, 0.0],
                vec![0.0, 1.0],
                vec![0.0, 1.0]
            ]
        );
        assert!((tr.mean_spread(1) - 1.0).abs() < 1e-12);
        assert!((tr.mean_spread(0) - 0.75).abs() < 1e-12);
        // Leaders from round 1: 0, 1, 1: one change.
        assert_eq!(tr.leader_changes(1), 1);
        let by_seed = lambda_per_seed(&[r], "a", |t| t.leader_changes(0) as f64);
        // Round 0 ties at 0 (leader 0), then 0, 1, 1.
        assert_eq!(by_seed[&0], 1.0);
    }

    /// Unfairness at the same U: a run that is unfair early but catches up is read at the
    /// other run's final U, not at its own.
    #[test]
    fn unfairness_is_read_at_the_common_utility() {
        let a = run("a", 1, vec![vec![2.0, 0.0], vec![0.0, 2.0]]);
        let b = run("b", 1, vec![vec![0.5, 0.5], vec![0.5, 0.5]]);
        let (ua, ub) = unfairness_at_same_u(&[a.clone(), b], "a", "b");
        // b's final U/n = 1.0; a reaches U/n = 1.0 at its first step, unfair there.
        let first = unfairness_curve(&a)[0];
        assert_eq!(first.0, 1.0);
        assert_eq!(ua[&1], first.1);
        assert!(ua[&1] > 0.0);
        assert_eq!(ub[&1], 0.0);
    }
}
