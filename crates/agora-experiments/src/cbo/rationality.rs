//! Individual rationality along t (the appendix's C.5, Figs. 10 and 11): a party gains from
//! the collaboration if it reaches a lower simple regret (SR) for the same cumulative regret
//! (CR) than running GP-UCB alone. The appendix plots, for each step t, the worst case
//! `max_r max_i SR_t^i` against `max_r max_i CR_t^i` and the median case
//! `median_r median_i SR_t^i` against `median_r median_i CR_t^i` (r over runs, i over
//! parties), with `r_t^i = f* − f(x_t^i)`, `SR_t^i = min_{t'≤t} r_{t'}^i` and
//! `CR_t^i = Σ_{t'≤t} r_{t'}^i`.
//!
//! The curves pool runs, so they cannot be judged by the paired rule as drawn. The claim is
//! judged per seed instead: within one run, the worst (or median) party's SR and CR at each
//! t trace a curve whose CR never decreases; the collaborative and the solo run of the same
//! seed are compared at the largest CR both reach (`c = min` of their final CRs), each
//! curve's SR read at the first step whose CR reaches `c` ([`y_at_x`]). The paired
//! difference is solo SR minus collaborative SR at that common CR.

use super::metrics::{CboRun, labels};
use crate::stats::{self, Better, median};
use agora_core::Result;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Which party a curve follows at each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// The largest SR and the largest CR over parties (Fig. 10).
    Worst,
    /// The median SR and the median CR over parties (Fig. 11).
    Median,
}

impl Case {
    fn pick(self, v: &[f64]) -> f64 {
        match self {
            Case::Worst => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Case::Median => median(v),
        }
    }

    /// "worst" or "median".
    pub fn name(self) -> &'static str {
        match self {
            Case::Worst => "worst",
            Case::Median => "median",
        }
    }
}

/// `(CR_t, SR_t)` of one run, step by step, for `case` over its parties.
///
/// Both coordinates are non-decreasing / non-increasing per party, and the maximum or
/// median over parties keeps that, so CR never decreases along the curve.
pub fn run_curve(run: &CboRun, f_star: f64, case: Case) -> Vec<(f64, f64)> {
    let n = run.f.first().map_or(0, Vec::len);
    let mut cr = vec![0.0; n];
    let mut sr = vec![f64::INFINITY; n];
    run.f
        .iter()
        .map(|row| {
            for (i, v) in row.iter().enumerate() {
                let r = f_star - v;
                cr[i] += r;
                sr[i] = sr[i].min(r);
            }
            (case.pick(&cr), case.pick(&sr))
        })
        .collect()
}

/// The appendix's pooled curve of a variant's runs: at each step, the maximum (worst case)
/// or the median (median case) over runs of [`run_curve`]'s coordinates, each taken
/// separately as the appendix does.
pub fn pooled_curve(runs: &[&CboRun], f_star: f64, case: Case) -> Vec<(f64, f64)> {
    let curves: Vec<Vec<(f64, f64)>> = runs.iter().map(|r| run_curve(r, f_star, case)).collect();
    let steps = curves.iter().map(Vec::len).min().unwrap_or(0);
    (0..steps)
        .map(|t| {
            let xs: Vec<f64> = curves.iter().map(|c| c[t].0).collect();
            let ys: Vec<f64> = curves.iter().map(|c| c[t].1).collect();
            (case.pick(&xs), case.pick(&ys))
        })
        .collect()
}

/// The y of a curve whose x never decreases, at x = `c`: at the first step whose x reaches
/// `c` (the last step's y when none does; `NaN` for an empty curve). On a [`run_curve`],
/// the SR at cumulative regret `c`.
pub fn y_at_x(curve: &[(f64, f64)], c: f64) -> f64 {
    curve
        .iter()
        .find(|p| p.0 >= c)
        .or(curve.last())
        .map_or(f64::NAN, |p| p.1)
}

/// Per seed, the worst (or median) party's SR of the collaborative and of the solo run at
/// the largest CR both reach: [`at_common_x`] of their [`run_curve`]s. Solo minus
/// collaborative is positive when the collaboration reaches a lower SR for the same CR.
pub fn sr_at_same_cr(
    runs: &[CboRun],
    collab: &str,
    solo: &str,
    f_star: f64,
    case: Case,
) -> (BTreeMap<u64, f64>, BTreeMap<u64, f64>) {
    at_common_x(runs, collab, solo, |r| run_curve(r, f_star, case))
}

/// Per seed that both variants ran, each run's `curve` (x never decreasing) read by
/// [`y_at_x`] at the largest x both runs reach (the smaller of their last x).
pub fn at_common_x(
    runs: &[CboRun],
    a: &str,
    b: &str,
    curve: impl Fn(&CboRun) -> Vec<(f64, f64)>,
) -> (BTreeMap<u64, f64>, BTreeMap<u64, f64>) {
    let curves = |v: &str| -> BTreeMap<u64, Vec<(f64, f64)>> {
        runs.iter()
            .filter(|r| r.variant == v)
            .map(|r| (r.seed, curve(r)))
            .collect()
    };
    let (ca, cb) = (curves(a), curves(b));
    let (mut ya, mut yb) = (BTreeMap::new(), BTreeMap::new());
    for (seed, pa) in &ca {
        let Some(pb) = cb.get(seed) else { continue };
        let (Some(la), Some(lb)) = (pa.last(), pb.last()) else {
            continue;
        };
        let c = la.0.min(lb.0);
        ya.insert(*seed, y_at_x(pa, c));
        yb.insert(*seed, y_at_x(pb, c));
    }
    (ya, yb)
}

/// The two claims (worst and median case) that `collab` reaches a lower SR than `solo`
/// for the same CR, each by the one verdict rule, as report lines.
pub fn claims_markdown(runs: &[CboRun], f_star: f64, collab: &str, solo: &str) -> Result<String> {
    let mut md = String::new();
    for (case, fig) in [(Case::Worst, "Fig. 10"), (Case::Median, "Fig. 11")] {
        let (a, b) = sr_at_same_cr(runs, collab, solo, f_star, case);
        let j = stats::verdict_by_seed(&a, &b, Better::Lower)?;
        let (ma, mb) = (stats::mean_se(&vals(&a)).0, stats::mean_se(&vals(&b)).0);
        let _ = writeln!(
            md,
            "- **Individual rationality along t, {} party ({fig}): {collab} reaches a lower simple regret than \
             {solo} for the same cumulative regret**: {} — the {} party's SR at the largest CR both runs of a seed \
             reach, {ma:.4} (collaborative) vs {mb:.4} (solo); solo minus collaborative, {}.",
            case.name(),
            j.verdict.label(),
            case.name(),
            j.describe(4)
        );
    }
    Ok(md)
}

fn vals(m: &BTreeMap<u64, f64>) -> Vec<f64> {
    m.values().copied().collect()
}

/// Figs. 10 and 11 of a task: every variant's pooled SR-against-CR curve, worst and median
/// case (`{stem}_ir_worst`, `{stem}_ir_median`).
pub fn plots(
    dir: &Path,
    stem: &str,
    name: &str,
    runs: &[CboRun],
    f_star: f64,
) -> Result<Vec<String>> {
    let mut figs = Vec::new();
    for case in [Case::Worst, Case::Median] {
        let series: Vec<(String, Vec<(f64, f64)>)> = labels(runs)
            .into_iter()
            .filter(|l| !l.starts_with("ifu"))
            .map(|l| {
                let rs: Vec<&CboRun> = runs.iter().filter(|r| r.variant == l).collect();
                let c = pooled_curve(&rs, f_star, case);
                (l, c)
            })
            .collect();
        let (agg, who) = match case {
            Case::Worst => ("max over runs", "max over parties"),
            Case::Median => ("median over runs", "median over parties"),
        };
        figs.extend(crate::curves::plot_xy(
            dir,
            &format!("{stem}_ir_{}", case.name()),
            &format!("{name}: SR vs CR, {} case", case.name()),
            (
                &format!("CR_t ({agg} of {who})"),
                &format!("SR_t ({agg} of {who})"),
            ),
            &series,
        )?);
    }
    Ok(figs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, seed: u64, f: Vec<Vec<f64>>) -> CboRun {
        let mut r = CboRun::new(label, seed);
        r.f = f;
        r
    }

    /// Hand-computed curves: f* = 1, two parties over three steps.
    #[test]
    fn curves_follow_the_definitions() {
        let r = run("a", 0, vec![vec![0.5, 0.0], vec![0.9, 0.2], vec![0.0, 1.0]]);
        // Regrets: (0.5, 1.0), (0.1, 0.8), (1.0, 0.0).
        // CR: (0.5, 1.0), (0.6, 1.8), (1.6, 1.8); SR: (0.5, 1.0), (0.1, 0.8), (0.1, 0.0).
        let w = run_curve(&r, 1.0, Case::Worst);
        let want = [(1.0, 1.0), (1.8, 0.8), (1.8, 0.1)];
        for (g, e) in w.iter().zip(want) {
            assert!(
                (g.0 - e.0).abs() < 1e-12 && (g.1 - e.1).abs() < 1e-12,
                "{w:?}"
            );
        }
        let m = run_curve(&r, 1.0, Case::Median);
        let want = [(0.75, 0.75), (1.2, 0.45), (1.7, 0.05)];
        for (g, e) in m.iter().zip(want) {
            assert!(
                (g.0 - e.0).abs() < 1e-12 && (g.1 - e.1).abs() < 1e-12,
                "{m:?}"
            );
        }
        // Pooled over two runs, coordinates maximized separately: at the last step the CR
        // comes from the second run (2.0 against 1.8), the SR from the first (0.1 against 0).
        let r2 = run("a", 1, vec![vec![0.0, 1.0], vec![0.0, 1.0], vec![1.0, 1.0]]);
        let p = pooled_curve(&[&r, &r2], 1.0, Case::Worst);
        assert_eq!(p[0], (1.0, 1.0));
        assert!(
            (p[2].0 - 2.0).abs() < 1e-12 && (p[2].1 - 0.1).abs() < 1e-12,
            "{p:?}"
        );
    }

    /// SR at a common CR: the solo run spends its regret early and stops improving; the
    /// collaborative one reaches a lower SR with less regret. Brute force over the steps
    /// agrees with the reading.
    #[test]
    fn same_cr_comparison_reads_the_curves_at_the_common_regret() {
        let collab = run("c", 3, vec![vec![0.5], vec![0.8], vec![0.95], vec![0.99]]);
        let solo = run("s", 3, vec![vec![0.0], vec![0.1], vec![0.9], vec![0.9]]);
        let (a, b) = sr_at_same_cr(&[collab.clone(), solo.clone()], "c", "s", 1.0, Case::Worst);
        // Collab CR: 0.5, 0.7, 0.75, 0.76; solo CR: 1.0, 1.9, 2.0, 2.1. Common c = 0.76:
        // the collaboration's SR at its last step (0.01), solo's at its first (1.0).
        assert!((a[&3] - 0.01).abs() < 1e-12, "{a:?}");
        assert!((b[&3] - 1.0).abs() < 1e-12, "{b:?}");
        // Brute force: the smallest step whose CR reaches c, for each curve.
        for (r, got) in [(&collab, a[&3]), (&solo, b[&3])] {
            let c = run_curve(&r.clone(), 1.0, Case::Worst);
            let k = (0..c.len()).find(|&k| c[k].0 >= 0.76 - 1e-12).unwrap();
            assert_eq!(c[k].1, got);
        }
        // A seed only one variant ran is skipped.
        let lone = run("c", 9, vec![vec![0.5]]);
        let (a, _) = sr_at_same_cr(&[collab, solo, lone], "c", "s", 1.0, Case::Worst);
        assert!(!a.contains_key(&9));
        assert!(y_at_x(&[], 1.0).is_nan());
    }
}
