//! Corollary F.2 of the Social BO paper with the public posterior's cross-agent covariance:
//! the moments of `u(x, :) = B v(x, :)` (Eq. 152) when `v(x, :) ~ N(m, Σ_v)` is the ICM's
//! joint posterior across agents at `x` and the rows `b_i ~ N(b̂_i, Σ_i)` are the Laplace
//! posterior of `B`, independent of `v` and of each other.
//!
//! By the law of total covariance, conditioning on `B` (`E[u | B] = B m`,
//! `Cov(u | B) = B Σ_v Bᵀ`):
//!
//! ```text
//! E[u_i]          = b̂_iᵀ m
//! Cov(u_i, u_k)   = E[b_iᵀ Σ_v b_k] + Cov(b_iᵀ m, b_kᵀ m)
//!                 = b̂_iᵀ Σ_v b̂_k + δ_ik (tr(Σ_i Σ_v) + mᵀ Σ_i m)
//! Var u_i         = b̂_iᵀ Σ_v b̂_i            (var_v: v's uncertainty)
//!                 + mᵀ Σ_i m + tr(Σ_i Σ_v)   (var_b: B's, alone and with v's)
//! ```
//!
//! With `Σ_v` and `Σ_i` diagonal this is Goodman's per-term formula
//! `Σ_j [(σ²_bij + b̂_ij²)(C_j + m_j²) − b̂_ij² m_j²]` that the corollary's proof derives
//! (the printed corollary's products are a **\[PAPER-BUG\]**, note §2.7). Keeping `Σ_v`'s
//! off-diagonal terms matters because `B` inverts a graph whose rows are alike: its rows mix
//! strongly correlated public utilities with large weights of both signs, and the diagonal
//! form overstates `Var u_i` (2×, 15× and 14× for thermal's agents under the prior with the
//! true graph). Because every row of `B` sums to `s` ([`super::estimate`]), `Σ_i 1 = 0`:
//! shifting every agent's `v` by `c` shifts every `u_i` by `c s` and leaves `var_b` unchanged.

use super::estimate::BFit;
use agora_core::{Error, Result};
use faer::{Mat, MatRef};

/// The moments of `u(x, :)` at one option.
#[derive(Debug, Clone, PartialEq)]
pub struct UMoments {
    /// `E[u_i] = b̂_iᵀ m`.
    pub mean: Vec<f64>,
    /// `mᵀ Σ_i m + tr(Σ_i Σ_v)`: the variance due to `B`'s uncertainty.
    pub var_b: Vec<f64>,
    /// `b̂_iᵀ Σ_v b̂_i`: the variance due to `v`'s uncertainty.
    pub var_v: Vec<f64>,
    /// `Cov(u_i, u_k) = b̂_iᵀ Σ_v b̂_k + δ_ik var_b[i]` (`n × n`).
    pub cov: Mat<f64>,
}

/// The moments of `u(x, :) = B v(x, :)` from `v(x, :) ~ N(m, Σ_v)` (`m`: `n`, `sigma_v`:
/// `n × n`) and the Laplace posterior `b` of `B` (module doc). Errors name `m` or
/// `sigma_v` when their sizes differ from `B`'s.
pub fn propagate(b: &BFit, m: &[f64], sigma_v: MatRef<'_, f64>) -> Result<UMoments> {
    let n = b.b.nrows();
    if m.len() != n {
        return Err(Error::dim("m", n, m.len()));
    }
    if sigma_v.nrows() != n || sigma_v.ncols() != n {
        return Err(Error::dim("sigma_v", n, sigma_v.nrows()));
    }
    let bh = &b.b;
    let mean = (0..n)
        .map(|i| (0..n).map(|j| bh[(i, j)] * m[j]).sum())
        .collect();
    // Σ_v B̂ᵀ, then B̂ Σ_v B̂ᵀ.
    let svb = sigma_v * bh.transpose();
    let var_b: Vec<f64> = (0..n)
        .map(|i| {
            let s = &b.row_cov[i];
            let mut v = 0.0;
            for a in 0..n {
                for c in 0..n {
                    v += s[(a, c)] * (m[a] * m[c] + sigma_v[(c, a)]);
                }
            }
            v.max(0.0)
        })
        .collect();
    let mut cov = Mat::from_fn(n, n, |i, k| {
        (0..n).map(|j| bh[(i, j)] * svb[(j, k)]).sum::<f64>()
    });
    let mut var_v = vec![0.0; n];
    for i in 0..n {
        var_v[i] = cov[(i, i)].max(0.0);
        cov[(i, i)] = var_v[i] + var_b[i];
    }
    let cov = Mat::from_fn(n, n, |i, k| 0.5 * (cov[(i, k)] + cov[(k, i)]));
    Ok(UMoments {
        mean,
        var_b,
        var_v,
        cov,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Icm;
    use crate::social_gp::tests::{THERMAL, data, rbf};
    use crate::social_gp::{SocialGpConfig, estimate_b};
    use agora_math::linalg::{Cholesky, sym_eigen};
    use rand_distr::{Distribution, StandardNormal};

    /// `B`'s Laplace fit on thermal-graph ratings, and the public posterior `(m, Σ_v)` at an
    /// option away from the public data, where the graph's cross-agent correlation
    /// dominates and the posterior means are the constant means.
    fn setting() -> (BFit, Vec<f64>, Mat<f64>) {
        let [xp, v, xu, u] = data(&THERMAL, 10, 6, 0.05, 5);
        let a = Mat::from_fn(3, 3, |i, j| THERMAL[i][j]);
        let task = &a * a.transpose();
        let mean = [1.0, -0.5, 2.0];
        let icm = Icm::new(xp, v.as_ref(), rbf(0.2), task, &[0.0025; 3], &mean).unwrap();
        let (mu, _) = icm.predict(xu.as_ref()).unwrap();
        let joint = icm.joint_cov(xu.as_ref()).unwrap();
        let cfg = SocialGpConfig::default();
        let fit = estimate_b(
            mu.as_ref(),
            joint.as_ref(),
            u.as_ref(),
            &[0.0025; 3],
            &cfg,
            None,
        )
        .unwrap();
        let x = Mat::from_fn(1, 1, |_, _| 1.25);
        let (m, _) = icm.predict(x.as_ref()).unwrap();
        let sv = icm.cross_task_cov(x.as_ref()).unwrap().remove(0);
        (fit, (0..3).map(|j| m[(0, j)]).collect(), sv)
    }

    /// Mean and standard error of a sample.
    fn mean_se(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
        (m, (var / n).sqrt())
    }

    /// Monte Carlo: `v ~ N(m, Σ_v)` with strong cross-agent correlation, each row
    /// `b_i ~ N(b̂_i, Σ_i)` independently, `u = B v`; 200,000 draws. The formula's means,
    /// variances and cross-agent covariances lie within 4 standard errors of the sample's;
    /// the diagonal form (`Σ_v`'s off-diagonal dropped, the old propagation) does not.
    #[test]
    fn moments_match_monte_carlo_with_correlated_v_and_the_diagonal_formula_does_not() {
        let (fit, m, sv) = setting();
        let n = 3;
        let corr = sv[(0, 1)] / (sv[(0, 0)] * sv[(1, 1)]).sqrt();
        assert!(corr > 0.8, "cross-agent correlation {corr}");
        let p = propagate(&fit, &m, sv.as_ref()).unwrap();
        let lv = Cholesky::new(sv.as_ref()).unwrap();
        let roots: Vec<Mat<f64>> = fit
            .row_cov
            .iter()
            .map(|c| {
                let (e, l) = sym_eigen(c.as_ref(), "row_cov").unwrap();
                Mat::from_fn(n, n, |a, k| e[(a, k)] * l[k].max(0.0).sqrt())
            })
            .collect();
        let mut rng = agora_math::rng::stream(11, &[]);
        let mut z = || -> f64 { StandardNormal.sample(&mut rng) };
        let draws = 200_000;
        let mut us: Vec<Vec<f64>> = (0..n).map(|_| Vec::with_capacity(draws)).collect();
        for _ in 0..draws {
            let e: Vec<f64> = (0..n).map(|_| z()).collect();
            let v: Vec<f64> = (0..n)
                .map(|a| m[a] + (0..=a).map(|k| lv.l()[(a, k)] * e[k]).sum::<f64>())
                .collect();
            for (i, root) in roots.iter().enumerate() {
                let e: Vec<f64> = (0..n).map(|_| z()).collect();
                let ui: f64 = (0..n)
                    .map(|a| {
                        let ba = fit.b[(i, a)] + (0..n).map(|k| root[(a, k)] * e[k]).sum::<f64>();
                        ba * v[a]
                    })
                    .sum();
                us[i].push(ui);
            }
        }
        let mut diagonal_outside = 0;
        for i in 0..n {
            let (mu, se) = mean_se(&us[i]);
            assert!(
                (mu - p.mean[i]).abs() < 4.0 * se,
                "mean {i}: {mu} ± {se} vs {}",
                p.mean[i]
            );
            let sq: Vec<f64> = us[i].iter().map(|x| (x - mu).powi(2)).collect();
            let (var, se_var) = mean_se(&sq);
            let want = p.var_b[i] + p.var_v[i];
            assert!(
                (var - want).abs() < 4.0 * se_var,
                "var {i}: {var} ± {se_var} vs {want}"
            );
            assert_eq!(p.cov[(i, i)], want);
            for k in i + 1..n {
                let (mk, _) = mean_se(&us[k]);
                let prod: Vec<f64> = us[i]
                    .iter()
                    .zip(&us[k])
                    .map(|(a, b)| (a - mu) * (b - mk))
                    .collect();
                let (cv, se_cv) = mean_se(&prod);
                let want = p.cov[(i, k)];
                assert!(
                    (cv - want).abs() < 4.0 * se_cv,
                    "cov {i} {k}: {cv} ± {se_cv} vs {want}"
                );
            }
            // The old propagation: b̂ᵀ diag(Σ_v) b̂ + mᵀ Σ_i m + Σ_j Σ_i[j, j] Σ_v[j, j].
            let s = &fit.row_cov[i];
            let diag: f64 = (0..n)
                .map(|j| {
                    fit.b[(i, j)].powi(2) * sv[(j, j)]
                        + s[(j, j)] * sv[(j, j)]
                        + (0..n).map(|k| m[j] * s[(j, k)] * m[k]).sum::<f64>()
                })
                .sum();
            if (diag - var).abs() > 4.0 * se_var {
                diagonal_outside += 1;
            }
            println!("agent {i}: MC {var:.5} ± {se_var:.5}, formula {want:.5}, diagonal {diag:.5}");
        }
        assert_eq!(
            diagonal_outside, n,
            "the diagonal formula should fail for every agent"
        );
    }

    /// With `Σ_v` and every `Σ_i` diagonal the formula is Goodman's per-term one
    /// (Corollary F.2's proof; [`crate::multitask::goodman_variance`]).
    #[test]
    fn diagonal_covariances_give_goodmans_formula() {
        let n = 3;
        let bh = [[0.9, -0.2, 0.3], [0.1, 1.2, -0.3], [-0.5, 0.4, 1.1]];
        let bv = [[0.01, 0.04, 0.09], [0.02, 0.03, 0.01], [0.05, 0.01, 0.02]];
        let fit = BFit {
            b: Mat::from_fn(n, n, |i, j| bh[i][j]),
            row_sum: 1.0,
            var: Mat::from_fn(n, n, |i, j| bv[i][j]),
            row_cov: (0..n)
                .map(|i| Mat::from_fn(n, n, |a, c| if a == c { bv[i][a] } else { 0.0 }))
                .collect(),
            log_lik: 0.0,
            grad_norm: 0.0,
            iters: 0,
            jitter: 0.0,
        };
        let (m, c) = ([1.5, -0.7, 0.2], [0.3, 0.5, 0.1]);
        let sv = Mat::from_fn(n, n, |a, b| if a == b { c[a] } else { 0.0 });
        let p = propagate(&fit, &m, sv.as_ref()).unwrap();
        for i in 0..n {
            let g = crate::multitask::goodman_variance(&bh[i], &bv[i], &m, &c).unwrap();
            assert!((p.var_b[i] + p.var_v[i] - g).abs() < 1e-12, "{i}");
        }
        assert!(propagate(&fit, &m[..2], sv.as_ref()).is_err());
    }

    /// Adding `c` to every agent's `v` adds exactly `c s` to every `u_i` and nothing to any
    /// variance, because `B̂ 1 = s 1` and `Σ_i 1 = 0`; a row covariance not flat along `1`
    /// (the unconstrained fit's) makes the `B` part grow as `c² 1ᵀ Σ_i 1`.
    #[test]
    fn a_common_shift_of_v_moves_u_by_c_s_and_leaves_the_b_part() {
        let (fit, m, sv) = setting();
        let p0 = propagate(&fit, &m, sv.as_ref()).unwrap();
        for c in [1.0, 10.0, 100.0, -1000.0] {
            let mc: Vec<f64> = m.iter().map(|v| v + c).collect();
            let p = propagate(&fit, &mc, sv.as_ref()).unwrap();
            for i in 0..3 {
                let tol = 1e-12 * (1.0 + c.abs()) * (1.0 + p0.mean[i].abs());
                assert!(
                    (p.mean[i] - p0.mean[i] - c * fit.row_sum).abs() < tol,
                    "{c} {i}"
                );
                assert!(
                    (p.var_b[i] - p0.var_b[i]).abs() < 1e-9 * p0.var_b[i],
                    "{c} {i}"
                );
                assert_eq!(p.var_v[i], p0.var_v[i]);
            }
        }
        let mut loose = fit.clone();
        for s in &mut loose.row_cov {
            *s = Mat::from_fn(3, 3, |a, b| s[(a, b)] + 0.01);
        }
        let q0 = propagate(&loose, &m, sv.as_ref()).unwrap();
        let q = propagate(
            &loose,
            &m.iter().map(|v| v + 10.0).collect::<Vec<_>>(),
            sv.as_ref(),
        )
        .unwrap();
        assert!(
            q.var_b[0] > q0.var_b[0] + 1.0,
            "{} {}",
            q.var_b[0],
            q0.var_b[0]
        );
    }
}
