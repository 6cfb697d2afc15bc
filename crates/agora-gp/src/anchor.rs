//! Input-dependent comparison noise from "anchors", the inputs a person judges reliably
//! (Sinaga et al. 2024, heteroscedastic PBO, Eqs. 7–9):
//!
//! `σ̂²(x) = a · exp(−p̂(x | h, X0))`, with `p̂` a Gaussian kernel density estimate over the
//! anchors `X0`.
//!
//! Decisions the paper leaves open (docs/notes/heteroscedastic-pbo.md §9.6):
//! - the KDE is the normalized `d`-dimensional Gaussian
//!   `p̂(x) = (1/n) Σ_i (2π h²)^{−d/2} exp(−‖x − x_i‖² / (2h²))` (the paper's
//!   `h^{−d} k(‖·‖/h)` with a 1-D kernel is not a density for `d > 1`);
//! - it lives in the model's coordinates, the unit cube of the search space, so the noise
//!   does not depend on the units the person uses;
//! - `σ̂²` is floored at `1e-9 · a`, so two duels on top of dense anchor clusters keep a finite
//!   likelihood slope.

use agora_core::{Error, Result};
use agora_math::optim::{self, LbfgsbOptions};
use faer::{Mat, MatRef};

/// Relative floor of the noise variance.
const FLOOR: f64 = 1e-9;
/// Bandwidth search range (unit-cube lengths) for leave-one-out fitting.
pub const BANDWIDTH_RANGE: (f64, f64) = (1e-3, 10.0);

/// Gaussian kernel density estimate over anchors.
#[derive(Debug, Clone, PartialEq)]
pub struct AnchorKde {
    anchors: Mat<f64>,
    h: f64,
}

fn check_h(h: f64) -> Result<()> {
    if !(h.is_finite() && h > 0.0) {
        return Err(Error::invalid(
            "bandwidth",
            format!("must be a finite number > 0, got {h}"),
        ));
    }
    Ok(())
}

impl AnchorKde {
    /// A KDE over `anchors` (rows, unit-cube coordinates) with bandwidth `h`. Errors name
    /// `anchors[i][j]` (outside `[0, 1]` or not finite), an empty anchor set, or `h ≤ 0`.
    pub fn new(anchors: Mat<f64>, h: f64) -> Result<AnchorKde> {
        if anchors.nrows() == 0 {
            return Err(Error::invalid(
                "anchors",
                "give at least one anchor (an input the person judges reliably)",
            ));
        }
        for i in 0..anchors.nrows() {
            for j in 0..anchors.ncols() {
                let v = anchors[(i, j)];
                if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                    return Err(Error::invalid(
                        format!("anchors[{i}][{j}]"),
                        format!(
                            "must lie in the search domain (unit coordinate in [0, 1]), got {v}"
                        ),
                    ));
                }
            }
        }
        check_h(h)?;
        Ok(AnchorKde { anchors, h })
    }

    /// A KDE whose bandwidth minimizes the leave-one-out negative log-likelihood (note
    /// §2.4a, Eq. S9) by L-BFGS-B on `log h` over [`BANDWIDTH_RANGE`], started from a grid
    /// of 16 log-spaced values (the best one). Needs at least two anchors.
    pub fn fit_loo(anchors: Mat<f64>) -> Result<AnchorKde> {
        let kde = AnchorKde::new(anchors, 0.1)?;
        let n = kde.anchors.nrows();
        if n < 2 {
            return Err(Error::invalid(
                "anchors",
                format!(
                    "leave-one-out bandwidth needs at least 2 anchors, got {n}; give the bandwidth instead"
                ),
            ));
        }
        let (lo, hi) = (BANDWIDTH_RANGE.0.ln(), BANDWIDTH_RANGE.1.ln());
        let start = (0..16)
            .map(|i| lo + (hi - lo) * i as f64 / 15.0)
            .map(|t| (t, kde.loo_nll(t.exp()).0))
            .fold((lo, f64::INFINITY), |b, c| if c.1 < b.1 { c } else { b })
            .0;
        let obj = |t: &[f64], g: &mut [f64]| -> Result<f64> {
            let (v, dv) = kde.loo_nll(t[0].exp());
            g[0] = dv;
            Ok(v)
        };
        let m = optim::minimize(&obj, &[start], &[(lo, hi)], LbfgsbOptions::default())?;
        AnchorKde::new(kde.anchors, m.x[0].exp())
    }

    /// Bandwidth.
    pub fn bandwidth(&self) -> f64 {
        self.h
    }

    /// Anchors (rows, unit cube).
    pub fn anchors(&self) -> MatRef<'_, f64> {
        self.anchors.as_ref()
    }

    /// The same anchors with another bandwidth.
    pub fn with_bandwidth(&self, h: f64) -> Result<AnchorKde> {
        check_h(h)?;
        Ok(AnchorKde {
            anchors: self.anchors.clone(),
            h,
        })
    }

    fn log_norm(&self) -> f64 {
        let d = self.anchors.ncols() as f64;
        -0.5 * d * (2.0 * std::f64::consts::PI * self.h * self.h).ln()
    }

    /// `p̂(x)`.
    pub fn density(&self, x: &[f64]) -> f64 {
        self.density_grad(x).0
    }

    /// `p̂(x)` and `∇ₓ p̂(x)`.
    pub fn density_grad(&self, x: &[f64]) -> (f64, Vec<f64>) {
        let (n, d) = (self.anchors.nrows(), self.anchors.ncols());
        let h2 = self.h * self.h;
        let c = self.log_norm().exp() / n as f64;
        let mut p = 0.0;
        let mut g = vec![0.0; d];
        for i in 0..n {
            let r2: f64 = (0..d).map(|j| (x[j] - self.anchors[(i, j)]).powi(2)).sum();
            let k = c * (-0.5 * r2 / h2).exp();
            p += k;
            for j in 0..d {
                g[j] -= k * (x[j] - self.anchors[(i, j)]) / h2;
            }
        }
        (p, g)
    }

    /// `∂p̂(x)/∂ log h`.
    pub fn density_dlog_h(&self, x: &[f64]) -> f64 {
        let (n, d) = (self.anchors.nrows(), self.anchors.ncols());
        let h2 = self.h * self.h;
        let c = self.log_norm().exp() / n as f64;
        (0..n)
            .map(|i| {
                let r2: f64 = (0..d).map(|j| (x[j] - self.anchors[(i, j)]).powi(2)).sum();
                c * (-0.5 * r2 / h2).exp() * (r2 / h2 - d as f64)
            })
            .sum()
    }

    /// Leave-one-out negative mean log-likelihood `−(1/n) Σ_i log p̂_{−i}(x_i)` at bandwidth
    /// `h`, and its derivative in `log h`. Log-sum-exp throughout, so tiny bandwidths stay
    /// finite.
    pub fn loo_nll(&self, h: f64) -> (f64, f64) {
        let (n, d) = (self.anchors.nrows(), self.anchors.ncols());
        let h2 = h * h;
        let log_c =
            -0.5 * d as f64 * (2.0 * std::f64::consts::PI * h2).ln() - ((n - 1) as f64).ln();
        let mut total = 0.0;
        let mut dtotal = 0.0;
        let mut e = vec![0.0; n];
        for i in 0..n {
            let mut mx = f64::NEG_INFINITY;
            let mut r2s = vec![0.0; n];
            for k in 0..n {
                if k == i {
                    e[k] = f64::NEG_INFINITY;
                    continue;
                }
                r2s[k] = (0..d)
                    .map(|j| (self.anchors[(i, j)] - self.anchors[(k, j)]).powi(2))
                    .sum();
                e[k] = -0.5 * r2s[k] / h2;
                mx = mx.max(e[k]);
            }
            let mut s = 0.0;
            let mut ds = 0.0;
            for k in 0..n {
                if k != i {
                    let w = (e[k] - mx).exp();
                    s += w;
                    ds += w * (r2s[k] / h2 - d as f64);
                }
            }
            total += log_c + mx + s.ln();
            dtotal += ds / s;
        }
        (-total / n as f64, -dtotal / n as f64)
    }
}

/// Input-dependent noise variance of a person's judgement.
#[derive(Debug, Clone, PartialEq)]
pub enum NoiseModel {
    /// The same variance everywhere (vanilla, homoscedastic PBO).
    Constant(f64),
    /// `a · exp(−p̂(x))` from anchors.
    Anchors {
        /// Scale `a` (the variance far from every anchor).
        a: f64,
        /// The density over anchors.
        kde: AnchorKde,
    },
}

/// A [`NoiseModel`] as plain data (for snapshots of the strategies that fit one).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum NoiseState {
    /// [`NoiseModel::Constant`].
    Constant(f64),
    /// [`NoiseModel::Anchors`]: scale, bandwidth and the anchors (rows).
    Anchors {
        /// Scale `a`.
        a: f64,
        /// Bandwidth `h`.
        h: f64,
        /// The anchors, unit-cube rows.
        anchors: Vec<Vec<f64>>,
    },
}

impl NoiseModel {
    /// The model as plain data.
    pub fn state(&self) -> NoiseState {
        match self {
            NoiseModel::Constant(v) => NoiseState::Constant(*v),
            NoiseModel::Anchors { a, kde } => NoiseState::Anchors {
                a: *a,
                h: kde.h,
                anchors: (0..kde.anchors.nrows())
                    .map(|i| {
                        (0..kde.anchors.ncols())
                            .map(|j| kde.anchors[(i, j)])
                            .collect()
                    })
                    .collect(),
            },
        }
    }

    /// The model a [`NoiseModel::state`] describes; errors as the constructors'.
    pub fn from_state(st: &NoiseState) -> Result<NoiseModel> {
        match st {
            NoiseState::Constant(v) => NoiseModel::constant(*v),
            NoiseState::Anchors { a, h, anchors } => {
                let d = anchors.first().map_or(0, Vec::len);
                if let Some(r) = anchors.iter().find(|r| r.len() != d) {
                    return Err(Error::dim("anchors", d, r.len()));
                }
                let m = Mat::from_fn(anchors.len(), d, |i, j| anchors[i][j]);
                NoiseModel::anchors(*a, AnchorKde::new(m, *h)?)
            }
        }
    }

    /// Homoscedastic noise; errors unless `var > 0`.
    pub fn constant(var: f64) -> Result<NoiseModel> {
        if !(var.is_finite() && var > 0.0) {
            return Err(Error::invalid(
                "noise_variance",
                format!("must be a finite number > 0, got {var}"),
            ));
        }
        Ok(NoiseModel::Constant(var))
    }

    /// Anchor noise with scale `a`; errors unless `a > 0`.
    pub fn anchors(a: f64, kde: AnchorKde) -> Result<NoiseModel> {
        if !(a.is_finite() && a > 0.0) {
            return Err(Error::invalid(
                "a",
                format!("the noise scale must be a finite number > 0, got {a}"),
            ));
        }
        Ok(NoiseModel::Anchors { a, kde })
    }

    /// `σ̂²(x)`.
    pub fn variance(&self, x: &[f64]) -> f64 {
        self.variance_grad(x).0
    }

    /// `σ̂²(x)` and its input gradient.
    pub fn variance_grad(&self, x: &[f64]) -> (f64, Vec<f64>) {
        match self {
            NoiseModel::Constant(v) => (*v, vec![0.0; x.len()]),
            NoiseModel::Anchors { a, kde } => {
                let (p, gp) = kde.density_grad(x);
                let v = a * (-p).exp();
                if v <= FLOOR * a {
                    (FLOOR * a, vec![0.0; x.len()])
                } else {
                    (v, gp.into_iter().map(|g| -v * g).collect())
                }
            }
        }
    }

    /// `∂σ̂²(x)/∂ log h` (0 for constant noise).
    pub fn variance_dlog_h(&self, x: &[f64]) -> f64 {
        match self {
            NoiseModel::Constant(_) => 0.0,
            NoiseModel::Anchors { a, kde } => {
                let v = a * (-kde.density(x)).exp();
                if v <= FLOOR * a {
                    0.0
                } else {
                    -v * kde.density_dlog_h(x)
                }
            }
        }
    }

    /// Input dimension of the anchors (`None` for constant noise).
    pub fn dim(&self) -> Option<usize> {
        self.kde().map(|k| k.anchors.ncols())
    }

    /// The anchor KDE, if any.
    pub fn kde(&self) -> Option<&AnchorKde> {
        match self {
            NoiseModel::Constant(_) => None,
            NoiseModel::Anchors { kde, .. } => Some(kde),
        }
    }

    /// The same model with another KDE bandwidth (constant noise is returned unchanged).
    pub fn with_bandwidth(&self, h: f64) -> Result<NoiseModel> {
        Ok(match self {
            NoiseModel::Constant(v) => NoiseModel::Constant(*v),
            NoiseModel::Anchors { a, kde } => NoiseModel::Anchors {
                a: *a,
                kde: kde.with_bandwidth(h)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mat(rows: &[&[f64]]) -> Mat<f64> {
        Mat::from_fn(rows.len(), rows[0].len(), |i, j| rows[i][j])
    }

    #[test]
    fn kde_matches_the_closed_form_gaussian_and_integrates_to_one() {
        // Two anchors in 2-D: p = ½ Σ N(x; x_i, h² I).
        let kde = AnchorKde::new(mat(&[&[0.2, 0.3], &[0.6, 0.5]]), 0.15).unwrap();
        let x = [0.35, 0.42];
        let n = |c: [f64; 2]| {
            let r2 = (x[0] - c[0]).powi(2) + (x[1] - c[1]).powi(2);
            (-r2 / (2.0 * 0.0225)).exp() / (2.0 * std::f64::consts::PI * 0.0225)
        };
        let want = 0.5 * (n([0.2, 0.3]) + n([0.6, 0.5]));
        assert!((kde.density(&x) - want).abs() < 1e-12 * want);
        // Midpoint-rule integral over a wide box.
        let (lo, hi, k) = (-1.0, 2.0, 300);
        let step = (hi - lo) / k as f64;
        let mut s = 0.0;
        for i in 0..k {
            for j in 0..k {
                let p = [lo + (i as f64 + 0.5) * step, lo + (j as f64 + 0.5) * step];
                s += kde.density(&p) * step * step;
            }
        }
        assert!((s - 1.0).abs() < 1e-6, "{s}");
    }

    #[test]
    fn kde_gradients_match_finite_differences() {
        use agora_math::fd::{Tol, assert_gradient, check_gradient, fd_derivative};
        let kde = AnchorKde::new(mat(&[&[0.2, 0.3], &[0.6, 0.5], &[0.9, 0.1]]), 0.2).unwrap();
        let noise = NoiseModel::anchors(1.5, kde.clone()).unwrap();
        let x = [0.4, 0.35];
        let (_, g) = noise.variance_grad(&x);
        let eps = 1e-6;
        let variance = |z: &[f64]| noise.variance(z);
        check_gradient(variance, &x, eps, &g, Tol::Abs(1e-7), "noise variance");
        let t = 0.2f64.ln();
        let at_bandwidth = |t: f64| noise.with_bandwidth(t.exp()).unwrap().variance(&x);
        let fd = fd_derivative(at_bandwidth, t, eps);
        assert_gradient(
            &[noise.variance_dlog_h(&x)],
            &[fd],
            Tol::Abs(1e-7),
            "d/d log h",
        );
        let (_, dl) = kde.loo_nll(0.2);
        let fd = fd_derivative(|t| kde.loo_nll(t.exp()).0, t, eps);
        assert_gradient(&[dl], &[fd], Tol::Abs(1e-6), "leave-one-out NLL");
    }

    #[test]
    fn noise_is_bounded_low_at_anchors_and_reverts_to_a_far_away() {
        let kde = AnchorKde::new(mat(&[&[0.3], &[0.32], &[0.29]]), 0.05).unwrap();
        let noise = NoiseModel::anchors(0.7, kde).unwrap();
        let near = noise.variance(&[0.3]);
        let far = noise.variance(&[0.95]);
        assert!(near > 0.0 && near < 0.7 * (-7.0f64).exp());
        assert!((far - 0.7).abs() < 1e-9 && far <= 0.7);
        for i in 0..=100 {
            let v = noise.variance(&[i as f64 / 100.0]);
            assert!(v > 0.0 && v <= 0.7);
        }
        assert_eq!(NoiseModel::constant(0.3).unwrap().variance(&[0.1]), 0.3);
    }

    #[test]
    fn loo_bandwidth_matches_a_grid_search() {
        // 20 anchors from two clusters (fixed, deterministic).
        let rows: Vec<Vec<f64>> = (0..20)
            .map(|i| {
                let c = if i % 2 == 0 { 0.25 } else { 0.7 };
                let t = (i as f64 * 0.618_033_988_7).fract() - 0.5;
                vec![
                    c + 0.1 * t,
                    0.5 + 0.2 * (i as f64 * 0.414_213_562).fract() - 0.1,
                ]
            })
            .collect();
        let a = Mat::from_fn(20, 2, |i, j| rows[i][j]);
        let kde = AnchorKde::fit_loo(a.clone()).unwrap();
        let grid = AnchorKde::new(a, 0.1).unwrap();
        let (mut best_h, mut best) = (0.0, f64::INFINITY);
        for i in 0..20_000 {
            let h = (BANDWIDTH_RANGE.0.ln()
                + (BANDWIDTH_RANGE.1 / BANDWIDTH_RANGE.0).ln() * i as f64 / 19_999.0)
                .exp();
            let v = grid.loo_nll(h).0;
            if v < best {
                (best_h, best) = (h, v);
            }
        }
        assert!(
            (kde.bandwidth() / best_h - 1.0).abs() < 2e-3,
            "{} vs {best_h}",
            kde.bandwidth()
        );
        assert!(
            best_h > 0.01 && best_h < 0.3,
            "interior minimum, got {best_h}"
        );
    }

    #[test]
    fn bad_anchor_inputs_are_named() {
        let e = AnchorKde::new(mat(&[&[0.2, 1.3]]), 0.1).unwrap_err();
        assert!(e.to_string().contains("anchors[0][1]"), "{e}");
        let e = AnchorKde::new(Mat::zeros(0, 2), 0.1).unwrap_err();
        assert!(e.to_string().contains("anchors"), "{e}");
        let e = AnchorKde::new(mat(&[&[0.2]]), 0.0).unwrap_err();
        assert!(e.to_string().contains("bandwidth"), "{e}");
        let e = AnchorKde::new(mat(&[&[0.2]]), -1.0).unwrap_err();
        assert!(e.to_string().contains("bandwidth"), "{e}");
        let kde = AnchorKde::new(mat(&[&[0.2]]), 0.1).unwrap();
        let e = NoiseModel::anchors(0.0, kde.clone()).unwrap_err();
        assert!(e.to_string().contains("noise scale"), "{e}");
        assert!(NoiseModel::anchors(f64::NAN, kde).is_err());
        let e = AnchorKde::fit_loo(mat(&[&[0.2]])).unwrap_err();
        assert!(e.to_string().contains("at least 2"), "{e}");
    }
}
