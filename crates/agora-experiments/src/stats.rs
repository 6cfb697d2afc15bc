//! The statistics every report uses, and its one rule for "a claim holds".
//!
//! Comparisons of methods are paired: each seed runs every method on the same task with the
//! same respondent streams, so the difference `a_s − b_s` per seed removes the seed's own
//! luck. A claim "A beats B" **holds** when the mean paired difference favours A by more than
//! two standard errors of that difference ([`verdict`]); it **holds in the mean only** when it
//! favours A by less; otherwise it **does not hold**. [`RULE`] states this in every report.

use agora_core::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The verdict rule, as printed in every report that states claims.
pub const RULE: &str = "A claim that A beats B **holds** when the mean over seeds of the paired \
difference (A − B on the same seed, signed so that positive favours A) exceeds 2 standard errors \
of that difference; it **holds in the mean only** when the difference favours A by less; \
otherwise it **does not hold**.";

/// Mean and standard error (sample standard deviation / √n; 0 for one value, NaN for none).
pub fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (m, 0.0);
    }
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

/// Median (NaN for none).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let k = s.len();
    if k % 2 == 1 {
        s[k / 2]
    } else {
        0.5 * (s[k / 2 - 1] + s[k / 2])
    }
}

/// The `p`-quantile (`0 ≤ p ≤ 1`) by linear interpolation between order statistics
/// (Hyndman–Fan type 7, numpy's default): position `p (len − 1)` in the sorted values. NaN
/// for no values or a `p` outside [0, 1]; `quantile(v, 0.5)` is [`median`].
pub fn quantile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let h = p * (s.len() - 1) as f64;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(s.len() - 1);
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

/// Mean and standard error of the paired differences `a[s] − b[s]`. Errors name `b` when the
/// two do not have one value per seed each.
pub fn paired_difference(a: &[f64], b: &[f64]) -> Result<(f64, f64)> {
    if a.len() != b.len() {
        return Err(Error::dim("b", a.len(), b.len()));
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    Ok(mean_se(&d))
}

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Better {
    /// Larger values are better (returns, welfare, accuracy).
    Higher,
    /// Smaller values are better (regret, error).
    Lower,
}

/// The outcome of a claim under [`RULE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// The paired difference favours A by more than 2 SE.
    Holds,
    /// It favours A, by at most 2 SE.
    InMeanOnly,
    /// It does not favour A.
    DoesNotHold,
}

impl Verdict {
    /// The verdict as it reads in a report.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Holds => "**holds**",
            Verdict::InMeanOnly => "**holds in the mean only** (within 2 SE)",
            Verdict::DoesNotHold => "**does not hold**",
        }
    }

    /// Whether the claim holds outright.
    pub fn holds(self) -> bool {
        self == Verdict::Holds
    }

    /// The verdict of a claim made of comparisons that must all hold ("A and B beat C and
    /// D"): the weakest of theirs, so it holds only when every one holds, and does not hold
    /// when any does not (nor for no comparisons at all).
    pub fn all(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        let rank = |v: Verdict| match v {
            Verdict::Holds => 2,
            Verdict::InMeanOnly => 1,
            Verdict::DoesNotHold => 0,
        };
        let mut weakest = None;
        for v in verdicts {
            weakest = Some(match weakest {
                Some(w) if rank(w) <= rank(v) => w,
                _ => v,
            });
        }
        weakest.unwrap_or(Verdict::DoesNotHold)
    }
}

/// A judged claim "A beats B": the paired difference (positive favours A), its SE, the
/// number of seeds and the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// Mean paired difference, signed so that positive favours A.
    pub difference: f64,
    /// Its standard error.
    pub se: f64,
    /// Seeds paired.
    pub seeds: usize,
    /// The verdict under [`RULE`].
    pub verdict: Verdict,
}

impl Judged {
    /// `difference ± se (n seeds)`, with `decimals` digits.
    pub fn describe(&self, decimals: usize) -> String {
        format!(
            "paired difference {} ({} seed{})",
            pm(self.difference, self.se, decimals),
            self.seeds,
            if self.seeds == 1 { "" } else { "s" }
        )
    }
}

/// Judge "A beats B" from per-seed values of one metric (same seed order in both).
pub fn verdict(a: &[f64], b: &[f64], better: Better) -> Result<Judged> {
    let (m, se) = paired_difference(a, b)?;
    let d = match better {
        Better::Higher => m,
        // `0 − m`, not `−m`: no difference prints as 0, not −0.
        Better::Lower => 0.0 - m,
    };
    Ok(Judged {
        difference: d,
        se,
        seeds: a.len(),
        verdict: verdict_of(d, se),
    })
}

/// [`verdict`] on per-seed values keyed by seed, paired on the seeds both have (runs of
/// two experiments that share seeds pair as well as two methods of one experiment).
pub fn verdict_by_seed(
    a: &BTreeMap<u64, f64>,
    b: &BTreeMap<u64, f64>,
    better: Better,
) -> Result<Judged> {
    let (x, y): (Vec<f64>, Vec<f64>) = a.iter().filter_map(|(s, v)| Some((*v, *b.get(s)?))).unzip();
    verdict(&x, &y, better)
}

/// [`RULE`] applied to a difference (positive favours A) and its standard error.
pub fn verdict_of(difference: f64, se: f64) -> Verdict {
    if difference > 2.0 * se && difference > 0.0 {
        Verdict::Holds
    } else if difference > 0.0 {
        Verdict::InMeanOnly
    } else {
        Verdict::DoesNotHold
    }
}

/// Whether two independent estimates `(mean, SE)` agree: they differ by at most 2 combined
/// standard errors `√(SE_a² + SE_b²)`. For comparing with published or re-run reference
/// numbers, where no pairing by seed is possible; claims between agora's own methods use
/// [`verdict`].
pub fn agree(a: (f64, f64), b: (f64, f64)) -> bool {
    (a.0 - b.0).abs() <= 2.0 * (a.1 * a.1 + b.1 * b.1).sqrt()
}

/// `mean ± se` with `decimals` digits after the point, the one way reports print it.
pub fn pm(mean: f64, se: f64, decimals: usize) -> String {
    format!("{mean:.decimals$} ± {se:.decimals$}")
}

/// [`pm`], except that a nonzero mean below `10^(1 − decimals)` in magnitude prints in
/// scientific notation (`1.23e-5 ± 4.0e-6`), so small regrets keep their digits.
pub fn pm_adaptive(mean: f64, se: f64, decimals: usize) -> String {
    if mean != 0.0 && mean.abs() < 10f64.powi(1 - decimals as i32) {
        format!("{mean:.2e} ± {se:.1e}")
    } else {
        pm(mean, se, decimals)
    }
}

/// `mean ± se` of a sample with `decimals` digits.
pub fn pm_of(v: &[f64], decimals: usize) -> String {
    let (m, s) = mean_se(v);
    pm(m, s, decimals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_se_and_median_by_hand() {
        // 1, 2, 3, 4: mean 2.5, sample variance 5/3, SE sqrt(5/12).
        let (m, s) = mean_se(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        assert!((s - (5.0f64 / 12.0).sqrt()).abs() < 1e-15);
        assert_eq!(mean_se(&[7.0]), (7.0, 0.0));
        assert!(mean_se(&[]).0.is_nan());
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        // numpy.quantile([1, 2, 3, 4], [0.25, 0.5, 0.75]) = [1.75, 2.5, 3.25].
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(quantile(&v, 0.25), 1.75);
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert_eq!(quantile(&v, 0.75), 3.25);
        assert_eq!((quantile(&v, 0.0), quantile(&v, 1.0)), (1.0, 4.0));
        assert_eq!(quantile(&[5.0], 0.3), 5.0);
        assert!(quantile(&[], 0.5).is_nan() && quantile(&v, 1.5).is_nan());
    }

    #[test]
    fn verdicts_pair_by_seed() {
        // A beats B by exactly 1 on every seed but both vary a lot across seeds: the paired
        // difference has SE 0, so the claim holds though the unpaired SEs overlap.
        let b = [0.0, 10.0, -7.0, 3.0];
        let a: Vec<f64> = b.iter().map(|x| x + 1.0).collect();
        let j = verdict(&a, &b, Better::Higher).unwrap();
        assert_eq!((j.difference, j.se, j.verdict), (1.0, 0.0, Verdict::Holds));
        // Regret: lower is better, so the same numbers judge the other way.
        let j = verdict(&a, &b, Better::Lower).unwrap();
        assert_eq!(j.verdict, Verdict::DoesNotHold);
        // Differences 1, -1, 2, 0: mean 0.5, sample variance 5/3, SE sqrt(5/12) ≈ 0.645.
        let j = verdict(&[1.0, -1.0, 2.0, 0.0], &[0.0; 4], Better::Higher).unwrap();
        assert_eq!(j.verdict, Verdict::InMeanOnly);
        assert!((j.se - (5.0f64 / 12.0).sqrt()).abs() < 1e-15);
        assert!(matches!(
            verdict(&[1.0], &[1.0, 2.0], Better::Higher),
            Err(Error::Dimension { .. })
        ));
        assert_eq!(verdict_of(0.0, 0.0), Verdict::DoesNotHold);
        // Keyed by seed: only the seeds both have pair (here 1 and 2, differences 1 and 3).
        let a = BTreeMap::from([(0, 5.0), (1, 2.0), (2, 4.0)]);
        let b = BTreeMap::from([(1, 1.0), (2, 1.0), (7, 0.0)]);
        let j = verdict_by_seed(&a, &b, Better::Higher).unwrap();
        assert_eq!((j.difference, j.se, j.seeds), (2.0, 1.0, 2));
        assert_eq!(j.verdict, Verdict::InMeanOnly);
        // No difference is 0, not −0, whichever way is better.
        let j = verdict(&[1.0], &[1.0], Better::Lower).unwrap();
        assert_eq!(j.describe(1), "paired difference 0.0 ± 0.0 (1 seed)");
        // 1 ± 0.3 and 2 ± 0.4: 2 combined SE = 1.0.
        assert!(agree((1.0, 0.3), (2.0, 0.4)));
        assert!(!agree((1.0, 0.3), (2.01, 0.4)));
    }

    #[test]
    fn plus_minus() {
        assert_eq!(pm(1.23456, 0.0412, 3), "1.235 ± 0.041");
        assert_eq!(pm_of(&[1.0, 3.0], 1), "2.0 ± 1.0");
        assert_eq!(pm_adaptive(0.0123, 0.004, 4), "0.0123 ± 0.0040");
        assert_eq!(pm_adaptive(0.000123, 0.00004, 4), "1.23e-4 ± 4.0e-5");
        assert_eq!(pm_adaptive(0.0, 0.0, 4), "0.0000 ± 0.0000");
    }

    #[test]
    fn a_conjunction_is_as_strong_as_its_weakest_comparison() {
        use Verdict::*;
        assert_eq!(Verdict::all([Holds, Holds]), Holds);
        assert_eq!(Verdict::all([Holds, InMeanOnly, Holds]), InMeanOnly);
        assert_eq!(Verdict::all([InMeanOnly, DoesNotHold, Holds]), DoesNotHold);
        assert_eq!(Verdict::all([]), DoesNotHold);
    }
}
