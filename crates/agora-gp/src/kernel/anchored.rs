//! A kernel conditioned to vanish at an anchor point.

use super::{Kernel, ParamKind};
use agora_core::{Error, Result};
use faer::{Mat, MatRef};

/// `k'(a, b) = k(a, b) − k(a, x₀) k(x₀, b) / k(x₀, x₀)`: the covariance of a process with
/// kernel `k` conditioned on being 0 at the anchor `x₀`. Its RKHS is the subspace of `k`'s
/// RKHS of functions with `f(x₀) = 0`, with the same norm, so an RKHS ball of `k'` is the
/// slice `f(x₀) = 0` of the ball of `k`.
///
/// Social BO uses it to fix each agent's utility scale: Bradley–Terry votes see only
/// differences `u(a) − u(b)`, so each agent's utility is identified up to a constant, and a
/// welfare with `ρ < 1` depends on those constants. Anchoring every agent's zero at a
/// status-quo option known to the model and the group makes the welfare identifiable.
#[derive(Debug)]
pub struct Anchored {
    base: Box<dyn Kernel>,
    anchor: Vec<f64>,
}

impl Clone for Anchored {
    fn clone(&self) -> Self {
        Anchored {
            base: self.base.box_clone(),
            anchor: self.anchor.clone(),
        }
    }
}

impl Anchored {
    /// Condition `base` to vanish at `anchor`. Errors name `anchor` when it is not finite or
    /// the base kernel's variance there is not positive (nothing to condition on).
    pub fn new(base: Box<dyn Kernel>, anchor: &[f64]) -> Result<Anchored> {
        agora_core::check_finite_slice("anchor", anchor)?;
        let a = MatRef::from_row_major_slice(anchor, 1, anchor.len());
        let k00 = base.diag(a)[0];
        if !(k00.is_finite() && k00 > 0.0) {
            return Err(Error::invalid(
                "anchor",
                format!("the kernel's variance at the anchor must be > 0, got {k00}"),
            ));
        }
        Ok(Anchored {
            base,
            anchor: anchor.to_vec(),
        })
    }

    /// The anchor `x₀`.
    pub fn anchor(&self) -> &[f64] {
        &self.anchor
    }

    /// The unconditioned kernel.
    pub fn base(&self) -> &dyn Kernel {
        self.base.as_ref()
    }

    fn x0(&self) -> MatRef<'_, f64> {
        MatRef::from_row_major_slice(&self.anchor, 1, self.anchor.len())
    }

    fn k00(&self) -> f64 {
        self.base.diag(self.x0())[0]
    }

    /// `k(x_i, x₀)` for each row.
    fn to_anchor(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        let k = self.base.cross(x, self.x0());
        (0..x.nrows()).map(|i| k[(i, 0)]).collect()
    }
}

impl Kernel for Anchored {
    fn box_clone(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
    fn n_params(&self) -> usize {
        self.base.n_params()
    }
    fn params(&self) -> Vec<f64> {
        self.base.params()
    }
    fn set_params(&mut self, p: &[f64]) -> Result<()> {
        self.base.set_params(p)
    }
    fn param_kinds(&self) -> Vec<ParamKind> {
        self.base.param_kinds()
    }
    fn param_names(&self) -> Vec<String> {
        self.base.param_names()
    }
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        let (ga, gb, g) = (self.to_anchor(a), self.to_anchor(b), self.k00());
        let mut k = self.base.cross(a, b);
        for j in 0..b.nrows() {
            for i in 0..a.nrows() {
                k[(i, j)] -= ga[i] * gb[j] / g;
            }
        }
        k
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        let (gx, g) = (self.to_anchor(x), self.k00());
        self.base
            .diag(x)
            .into_iter()
            .zip(gx)
            .map(|(k, h)| (k - h * h / g).max(0.0))
            .collect()
    }
    /// By the product and quotient rules on the points with the anchor appended:
    /// `∂k'_ab = ∂k_ab − (∂k_a0 g_b + g_a ∂k_0b)/γ + g_a g_b ∂γ/γ²` (`g = k(·, x₀)`,
    /// `γ = k(x₀, x₀)`), i.e. the base contraction over `[x; x₀]` with weights
    /// `W̃ = [[W, −W g/γ], [−gᵀW/γ, gᵀWg/γ²]]`.
    fn grad_contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>) -> Vec<f64> {
        let n = x.nrows();
        let d = x.ncols();
        let (gx, g) = (self.to_anchor(x), self.k00());
        let xa = Mat::from_fn(
            n + 1,
            d,
            |i, j| {
                if i < n { x[(i, j)] } else { self.anchor[j] }
            },
        );
        let wg: Vec<f64> = (0..n)
            .map(|a| (0..n).map(|b| w[(a, b)] * gx[b]).sum())
            .collect();
        let gw: Vec<f64> = (0..n)
            .map(|b| (0..n).map(|a| gx[a] * w[(a, b)]).sum())
            .collect();
        let gwg: f64 = (0..n).map(|a| gx[a] * wg[a]).sum();
        let wa = Mat::from_fn(n + 1, n + 1, |i, j| match (i < n, j < n) {
            (true, true) => w[(i, j)],
            (true, false) => -wg[i] / g,
            (false, true) => -gw[j] / g,
            (false, false) => gwg / (g * g),
        });
        self.base.grad_contract(xa.as_ref(), wa.as_ref())
    }
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        let d = x.len();
        let (gb, g) = (self.to_anchor(b), self.k00());
        let mut out = self.base.grad_x(x, b);
        let dx0 = self.base.grad_x(x, self.x0());
        for i in 0..b.nrows() {
            for j in 0..d {
                out[(i, j)] -= dx0[(0, j)] * gb[i] / g;
            }
        }
        out
    }
    fn diag_grad_x(&self, x: &[f64]) -> Vec<f64> {
        let xm = MatRef::from_row_major_slice(x, 1, x.len());
        let (h, g) = (self.to_anchor(xm)[0], self.k00());
        let dx0 = self.base.grad_x(x, self.x0());
        self.base
            .diag_grad_x(x)
            .into_iter()
            .enumerate()
            .map(|(j, v)| v - 2.0 * h * dx0[(0, j)] / g)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Stationary, StationaryKind};

    fn rbf(l: f64) -> Box<dyn Kernel> {
        Box::new(Stationary::ard(StationaryKind::Rbf, 2, l))
    }

    #[test]
    fn vanishes_at_the_anchor_and_is_the_conditional_covariance() {
        let x0 = [0.3, 0.6];
        let k = Anchored::new(rbf(0.4), &x0).unwrap();
        let pts = Mat::from_fn(4, 2, |i, j| {
            [[0.3, 0.6], [0.1, 0.2], [0.9, 0.5], [0.5, 0.5]][i][j]
        });
        let g = k.gram(pts.as_ref());
        // Row and column of the anchor vanish.
        for j in 0..4 {
            assert!(g[(0, j)].abs() < 1e-15 && g[(j, 0)].abs() < 1e-15);
        }
        // The Gaussian conditional covariance, computed from the 5×5 joint by hand.
        let base = rbf(0.4);
        let raw = base.gram(pts.as_ref());
        for i in 0..4 {
            for j in 0..4 {
                let want = raw[(i, j)] - raw[(i, 0)] * raw[(0, j)] / raw[(0, 0)];
                assert!((g[(i, j)] - want).abs() < 1e-15);
            }
        }
        let diag = k.diag(pts.as_ref());
        for i in 0..4 {
            assert!((diag[i] - g[(i, i)]).abs() < 1e-15);
        }
        assert!(Anchored::new(rbf(0.4), &[f64::NAN, 0.0]).is_err());
    }

    #[test]
    fn gradients_match_finite_differences() {
        let k = Anchored::new(rbf(0.4), &[0.3, 0.6]).unwrap();
        let pts = Mat::from_fn(3, 2, |i, j| [[0.1, 0.2], [0.9, 0.5], [0.5, 0.45]][i][j]);
        let w = Mat::from_fn(3, 3, |i, j| 0.3 + 0.1 * (i * 3 + j) as f64);
        let grad = k.grad_contract(pts.as_ref(), w.as_ref());
        let p = k.params();
        for (t, gt) in grad.iter().enumerate() {
            let h = 1e-6;
            let at = |s: f64| {
                let mut kk = k.clone();
                let mut q = p.clone();
                q[t] += s;
                kk.set_params(&q).unwrap();
                let g = kk.gram(pts.as_ref());
                (0..3)
                    .flat_map(|a| (0..3).map(move |b| (a, b)))
                    .map(|(a, b)| w[(a, b)] * g[(a, b)])
                    .sum::<f64>()
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            assert!((gt - fd).abs() < 1e-6 * (1.0 + fd.abs()), "{gt} {fd}");
        }
        let x = [0.2, 0.7];
        let gx = k.grad_x(&x, pts.as_ref());
        for j in 0..2 {
            let h = 1e-6;
            let shift = |s: f64| {
                let mut y = x;
                y[j] += s;
                k.cross(MatRef::from_row_major_slice(&y, 1, 2), pts.as_ref())
            };
            let (hi, lo) = (shift(h), shift(-h));
            for i in 0..3 {
                let fd = (hi[(0, i)] - lo[(0, i)]) / (2.0 * h);
                assert!((gx[(i, j)] - fd).abs() < 1e-7, "{} {fd}", gx[(i, j)]);
            }
            let dg = k.diag_grad_x(&x)[j];
            let dd = |s: f64| {
                let mut y = x;
                y[j] += s;
                k.diag(MatRef::from_row_major_slice(&y, 1, 2))[0]
            };
            let fd = (dd(h) - dd(-h)) / (2.0 * h);
            assert!((dg - fd).abs() < 1e-7, "{dg} {fd}");
        }
    }
}
