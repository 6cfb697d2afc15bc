//! Truncated normal sampling: one-sided univariate draws (Robert 1995) and a Gibbs sampler
//! for a zero-mean multivariate normal truncated to the negative orthant (Takeno et al. 2023,
//! Alg. 2, with the conditional mean corrected as in docs/notes/heteroscedastic-pbo.md
//! §2.5).

use crate::linalg::Cholesky;
use crate::special::erfcx;
use agora_core::{Error, Result};
use faer::MatRef;
use rand::{Rng, RngExt};
use rand_distr::{Distribution, Exp, StandardNormal};

/// Standardized lower bound above which the exponential proposal is used: Robert (1995)
/// shows plain rejection from N(0, 1) is better below it.
const ROBERT_SWITCH: f64 = 0.257;

/// One draw of `Z ~ N(0, 1)` conditioned on `Z ≥ lower`.
///
/// For `lower ≤ 0.257`, rejection from N(0, 1) (acceptance ≥ 0.4). Above, Robert's (1995)
/// translated exponential proposal `z = lower + E`, `E ~ Exp(rate α)` with the optimal
/// `α = (lower + √(lower² + 4)) / 2`, accepted with probability `exp(−(z − α)² / 2)`.
/// (The note's \[REVIEWED\] remark: numpy's `exponential(α)` takes a *scale*; the rate is
/// what Robert's algorithm needs.) Exact in the far tail: no `Φ` inversion is involved.
pub fn std_normal_above<R: Rng + ?Sized>(lower: f64, rng: &mut R) -> f64 {
    // Degenerate bounds: NaN propagates, +∞ has no mass above it (return the bound).
    if !lower.is_finite() {
        return if lower == f64::NEG_INFINITY {
            StandardNormal.sample(rng)
        } else {
            lower
        };
    }
    if lower <= ROBERT_SWITCH {
        loop {
            let z: f64 = StandardNormal.sample(rng);
            if z >= lower {
                return z;
            }
        }
    }
    let alpha = 0.5 * (lower + (lower * lower + 4.0).sqrt());
    let exp = Exp::new(alpha).expect("alpha is positive and finite");
    loop {
        let z = lower + exp.sample(rng);
        let u: f64 = rng.random();
        if u <= (-0.5 * (z - alpha) * (z - alpha)).exp() {
            return z;
        }
    }
}

/// One draw of `N(mean, sd²)` conditioned on `≤ upper`.
pub fn normal_below<R: Rng + ?Sized>(mean: f64, sd: f64, upper: f64, rng: &mut R) -> f64 {
    // X ≤ upper  ⇔  Z = (mean − X)/sd ≥ (mean − upper)/sd.
    mean - sd * std_normal_above((mean - upper) / sd, rng)
}

/// Mean of `N(0, 1)` conditioned on `Z ≥ lower`: `φ(lower) / (1 − Φ(lower))` (for tests
/// and diagnostics), computed as `√(2/π) / erfcx(lower/√2)` so it stays finite in the far
/// tail.
pub fn std_normal_above_mean(lower: f64) -> f64 {
    (2.0 / std::f64::consts::PI).sqrt() / erfcx(lower / std::f64::consts::SQRT_2)
}

/// Gibbs sampler for `v ~ N(0, Σ)` conditioned on `v < 0` (every coordinate).
///
/// Each sweep visits the coordinates in order and draws `v_j` from its conditional
/// `N(v_j − (Qv)_j / Q_jj, 1 / Q_jj)` truncated to `(−∞, 0]`, with `Q = Σ⁻¹`. The paper
/// prints the mean as `(Qv)_j / Q_jj`; the zero-mean conditional is
/// `−Σ_{k≠j} Q_jk v_k / Q_jj = v_j − (Qv)_j / Q_jj` (\[ERRATUM\] in the note, §2.5).
///
/// The sampler needs the precision matrix itself (one row per coordinate update), so `Σ`
/// is factored once with the robust Cholesky and inverted from the factor. `start` must be
/// feasible (all ≤ 0; `None` starts at 0 as Takeno et al. do). Returns the state after
/// `sweeps` sweeps (the last sample of the chain; HB keeps one).
pub fn tmvn_negative_gibbs<R: Rng + ?Sized>(
    cov: MatRef<'_, f64>,
    start: Option<&[f64]>,
    sweeps: usize,
    rng: &mut R,
) -> Result<Vec<f64>> {
    let m = cov.nrows();
    let chol = Cholesky::new(cov)?;
    let q = chol.inverse();
    let mut v = match start {
        Some(s) => {
            if s.len() != m {
                return Err(Error::dim("start", m, s.len()));
            }
            if let Some(j) = s.iter().position(|x| !(x.is_finite() && *x <= 0.0)) {
                return Err(Error::invalid(
                    format!("start[{j}]"),
                    format!("must be finite and <= 0 (feasible), got {}", s[j]),
                ));
            }
            s.to_vec()
        }
        None => vec![0.0; m],
    };
    if let Some(j) = (0..m).find(|&j| !(q[(j, j)].is_finite() && q[(j, j)] > 0.0)) {
        return Err(Error::Numerical(format!(
            "truncated-normal Gibbs: precision diagonal {j} is {} (covariance too ill-conditioned)",
            q[(j, j)]
        )));
    }
    let sd: Vec<f64> = (0..m).map(|j| (1.0 / q[(j, j)]).sqrt()).collect();
    for _ in 0..sweeps {
        for j in 0..m {
            let qv: f64 = (0..m).map(|k| q[(k, j)] * v[k]).sum();
            let mean = v[j] - qv / q[(j, j)];
            v[j] = normal_below(mean, sd[j], 0.0, rng).min(0.0);
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use faer::Mat;

    #[test]
    fn one_sided_draws_match_the_closed_form_mean_in_body_and_tail() {
        // E[Z | Z ≥ a] = φ(a)/(1 − Φ(a)); 2.3732 at a = 2 (the note's check), and far tails.
        assert!((std_normal_above_mean(2.0) - 2.373_215_532_822_843).abs() < 1e-9);
        let mut rng = stream(1, &[0]);
        for &a in &[-1.0, 0.0, 0.2, 2.0, 8.0, 40.0] {
            let n = 40_000;
            let draws: Vec<f64> = (0..n).map(|_| std_normal_above(a, &mut rng)).collect();
            assert!(draws.iter().all(|z| *z >= a));
            let mean = draws.iter().sum::<f64>() / n as f64;
            let var = draws.iter().map(|z| (z - mean).powi(2)).sum::<f64>() / n as f64;
            let want = std_normal_above_mean(a);
            // Monte Carlo standard error ≤ sqrt(var/n).
            assert!(
                (mean - want).abs() < 5.0 * (var / n as f64).sqrt() + 1e-12,
                "a={a}: {mean} vs {want}"
            );
        }
    }

    #[test]
    fn gibbs_matches_rejection_moments_on_a_correlated_truncated_normal() {
        // Σ = [[1, .6, .2], [.6, 1.5, -.3], [.2, -.3, .8]], truncated to v < 0.
        let s = [[1.0, 0.6, 0.2], [0.6, 1.5, -0.3], [0.2, -0.3, 0.8]];
        let cov = Mat::from_fn(3, 3, |i, j| s[i][j]);
        let l = Cholesky::new(cov.as_ref()).unwrap();
        // Brute force: rejection from the untruncated normal.
        let mut rng = stream(2, &[0]);
        let mut acc = Vec::new();
        while acc.len() < 60_000 {
            let z: Vec<f64> = (0..3).map(|_| StandardNormal.sample(&mut rng)).collect();
            let v: Vec<f64> = (0..3)
                .map(|i| (0..=i).map(|k| l.l()[(i, k)] * z[k]).sum())
                .collect();
            if v.iter().all(|x| *x < 0.0) {
                acc.push(v);
            }
        }
        // Gibbs: independent chains (one kept sample each, 30 sweeps) — the HB usage.
        let mut gibbs = Vec::new();
        for c in 0..20_000u64 {
            let mut r = stream(3, &[c]);
            let v = tmvn_negative_gibbs(cov.as_ref(), None, 30, &mut r).unwrap();
            assert!(v.iter().all(|x| *x <= 0.0));
            gibbs.push(v);
        }
        let moments = |xs: &[Vec<f64>]| {
            let n = xs.len() as f64;
            let m: Vec<f64> = (0..3)
                .map(|i| xs.iter().map(|v| v[i]).sum::<f64>() / n)
                .collect();
            let c: Vec<Vec<f64>> = (0..3)
                .map(|i| {
                    (0..3)
                        .map(|j| {
                            xs.iter()
                                .map(|v| (v[i] - m[i]) * (v[j] - m[j]))
                                .sum::<f64>()
                                / n
                        })
                        .collect()
                })
                .collect();
            (m, c)
        };
        let (mr, cr) = moments(&acc);
        let (mg, cg) = moments(&gibbs);
        for i in 0..3 {
            assert!(
                (mr[i] - mg[i]).abs() < 0.02,
                "mean {i}: {} vs {}",
                mr[i],
                mg[i]
            );
            for j in 0..3 {
                assert!(
                    (cr[i][j] - cg[i][j]).abs() < 0.02,
                    "cov {i}{j}: {} vs {}",
                    cr[i][j],
                    cg[i][j]
                );
            }
        }
    }

    #[test]
    fn gibbs_one_dimensional_mean_is_the_half_normal_mean() {
        // N(0, s²) truncated to v < 0 has mean −s·sqrt(2/π).
        let s: f64 = 1.7;
        let cov = Mat::from_fn(1, 1, |_, _| s * s);
        let mut rng = stream(4, &[0]);
        let n = 50_000;
        let mut sum = 0.0;
        let mut v = vec![0.0];
        for _ in 0..n {
            v = tmvn_negative_gibbs(cov.as_ref(), Some(&v), 1, &mut rng).unwrap();
            sum += v[0];
        }
        let want = -s * (2.0 / std::f64::consts::PI).sqrt();
        assert!(
            (sum / n as f64 - want).abs() < 0.02,
            "{} vs {want}",
            sum / n as f64
        );
    }

    #[test]
    fn infeasible_start_is_rejected_by_name() {
        let cov = Mat::from_fn(2, 2, |i, j| if i == j { 1.0 } else { 0.0 });
        let mut rng = stream(5, &[0]);
        let e = tmvn_negative_gibbs(cov.as_ref(), Some(&[-1.0, 0.5]), 1, &mut rng).unwrap_err();
        assert!(e.to_string().contains("start[1]"), "{e}");
    }
}
