//! Predictions of the preference GP: marginals, joint covariance, input gradients and the
//! pair moments preference acquisitions need.

use super::PreferenceGp;
use agora_core::{Error, Result};
use faer::{Mat, MatRef};

impl PreferenceGp {
    pub(super) fn check_inputs(&self, xs: MatRef<'_, f64>) -> Result<()> {
        crate::check_mat("x", xs, self.dim())
    }

    /// Posterior mean and latent variance of the utility at each row of `xs`.
    pub fn predict(&self, xs: MatRef<'_, f64>) -> Result<(Vec<f64>, Vec<f64>)> {
        self.check_inputs(xs)?;
        let n = self.x.nrows();
        let ks = self.kernel.cross(self.x.as_ref(), xs); // n × m
        let kss = self.kernel.diag(xs);
        let mut a = ks.clone();
        self.chol_k.solve_in_place(a.as_mut()); // K⁻¹ k*
        let mut b = a.clone();
        self.chol_a.solve_lower_in_place(b.as_mut()); // L_A⁻¹ K⁻¹ k*
        let m = xs.nrows();
        let mut mean = Vec::with_capacity(m);
        let mut var = Vec::with_capacity(m);
        for c in 0..m {
            let mut mu = self.mean0;
            let mut q1 = 0.0;
            let mut q2 = 0.0;
            for r in 0..n {
                mu += ks[(r, c)] * self.alpha[r];
                q1 += ks[(r, c)] * a[(r, c)];
                q2 += b[(r, c)] * b[(r, c)];
            }
            mean.push(mu);
            var.push((kss[c] - q1 + q2).max(0.0));
        }
        Ok((mean, var))
    }

    /// Posterior mean and joint latent covariance at the rows of `xs`.
    pub fn predict_cov(&self, xs: MatRef<'_, f64>) -> Result<(Vec<f64>, Mat<f64>)> {
        self.check_inputs(xs)?;
        let n = self.x.nrows();
        let m = xs.nrows();
        let ks = self.kernel.cross(self.x.as_ref(), xs);
        let mut a = ks.clone();
        self.chol_k.solve_in_place(a.as_mut());
        let mut b = a.clone();
        self.chol_a.solve_lower_in_place(b.as_mut());
        let mean = (0..m)
            .map(|c| self.mean0 + (0..n).map(|r| ks[(r, c)] * self.alpha[r]).sum::<f64>())
            .collect();
        let mut cov = self.kernel.gram(xs);
        faer::linalg::matmul::matmul(
            cov.as_mut(),
            faer::Accum::Add,
            ks.transpose(),
            a.as_ref(),
            -1.0,
            faer::Par::Seq,
        );
        faer::linalg::matmul::matmul(
            cov.as_mut(),
            faer::Accum::Add,
            b.transpose(),
            b.as_ref(),
            1.0,
            faer::Par::Seq,
        );
        Ok((mean, cov))
    }

    /// `(μ, σ², ∇μ, ∇σ²)` at one point.
    pub fn predict_with_grad(&self, x: &[f64]) -> Result<(f64, f64, Vec<f64>, Vec<f64>)> {
        if x.len() != self.dim() {
            return Err(Error::dim("x", self.dim(), x.len()));
        }
        agora_core::check_finite_slice("x", x)?;
        let n = self.x.nrows();
        let xm = Mat::from_fn(1, x.len(), |_, j| x[j]);
        let k = self.kernel.cross(self.x.as_ref(), xm.as_ref());
        let kv: Vec<f64> = (0..n).map(|i| k[(i, 0)]).collect();
        let a = self.chol_k.solve_vec(&kv); // K⁻¹ k
        let ainv_a = self.chol_a.solve_vec(&a); // A⁻¹ K⁻¹ k
        let b = self.chol_k.solve_vec(&ainv_a); // K⁻¹ A⁻¹ K⁻¹ k
        let kss = self.kernel.diag(xm.as_ref())[0];
        let mu = self.mean0 + kv.iter().zip(&self.alpha).map(|(p, q)| p * q).sum::<f64>();
        let var = kss - kv.iter().zip(&a).map(|(p, q)| p * q).sum::<f64>()
            + a.iter().zip(&ainv_a).map(|(p, q)| p * q).sum::<f64>();
        let dk = self.kernel.grad_x(x, self.x.as_ref());
        let dself = self.kernel.diag_grad_x(x);
        let d = self.dim();
        let mut dmu = vec![0.0; d];
        let mut dvar = vec![0.0; d];
        for j in 0..d {
            let mut s_mu = 0.0;
            let mut s_var = 0.0;
            for i in 0..n {
                s_mu += dk[(i, j)] * self.alpha[i];
                s_var += dk[(i, j)] * (b[i] - a[i]);
            }
            dmu[j] = s_mu;
            dvar[j] = dself[j] + 2.0 * s_var;
        }
        Ok((mu, var.max(0.0), dmu, dvar))
    }

    /// Joint moments at many pairs at once (rows of `x0s` against rows of `x1s`):
    /// `(m₀, m₁, var₀, var₁, cov₀₁)` per pair, with matrix solves instead of per-pair ones.
    #[allow(clippy::type_complexity)]
    pub fn pair_moments_batch(
        &self,
        x0s: MatRef<'_, f64>,
        x1s: MatRef<'_, f64>,
    ) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>)> {
        self.check_inputs(x0s)?;
        self.check_inputs(x1s)?;
        if x0s.nrows() != x1s.nrows() {
            return Err(Error::dim("x1s rows", x0s.nrows(), x1s.nrows()));
        }
        let (n, m) = (self.x.nrows(), x0s.nrows());
        let k0 = self.kernel.cross(self.x.as_ref(), x0s);
        let k1 = self.kernel.cross(self.x.as_ref(), x1s);
        let mut a0 = k0.clone();
        self.chol_k.solve_in_place(a0.as_mut());
        let mut a1 = k1.clone();
        self.chol_k.solve_in_place(a1.as_mut());
        let mut b0 = a0.clone();
        self.chol_a.solve_lower_in_place(b0.as_mut());
        let mut b1 = a1.clone();
        self.chol_a.solve_lower_in_place(b1.as_mut());
        let d0 = self.kernel.diag(x0s);
        let d1 = self.kernel.diag(x1s);
        let col = |mat: &Mat<f64>, c: usize| -> Vec<f64> { (0..n).map(|r| mat[(r, c)]).collect() };
        let dot = |p: &[f64], q: &[f64]| p.iter().zip(q).map(|(u, v)| u * v).sum::<f64>();
        let (mut m0, mut m1, mut v0, mut v1, mut c01) = (
            Vec::with_capacity(m),
            Vec::with_capacity(m),
            Vec::with_capacity(m),
            Vec::with_capacity(m),
            Vec::with_capacity(m),
        );
        for c in 0..m {
            let (k0c, k1c, a0c, a1c, b0c, b1c) = (
                col(&k0, c),
                col(&k1, c),
                col(&a0, c),
                col(&a1, c),
                col(&b0, c),
                col(&b1, c),
            );
            let x0 = Mat::from_fn(1, x0s.ncols(), |_, j| x0s[(c, j)]);
            let x1 = Mat::from_fn(1, x1s.ncols(), |_, j| x1s[(c, j)]);
            let k01 = self.kernel.cross(x0.as_ref(), x1.as_ref())[(0, 0)];
            m0.push(self.mean0 + dot(&k0c, &self.alpha));
            m1.push(self.mean0 + dot(&k1c, &self.alpha));
            v0.push((d0[c] - dot(&k0c, &a0c) + dot(&b0c, &b0c)).max(0.0));
            v1.push((d1[c] - dot(&k1c, &a1c) + dot(&b1c, &b1c)).max(0.0));
            c01.push(k01 - dot(&k0c, &a1c) + dot(&b0c, &b1c));
        }
        Ok((m0, m1, v0, v1, c01))
    }

    /// Joint moments of the utility at two points with their input gradients (what EUBO
    /// and BALD need). Gradients are with respect to each point's own coordinates.
    pub fn pair_moments(&self, x0: &[f64], x1: &[f64]) -> Result<PairMoments> {
        let d = self.dim();
        for (name, x) in [("x0", x0), ("x1", x1)] {
            if x.len() != d {
                return Err(Error::dim(name, d, x.len()));
            }
            agora_core::check_finite_slice(name, x)?;
        }
        let n = self.x.nrows();
        let pts = [x0, x1];
        let mut a = Vec::with_capacity(2); // K⁻¹ k_i
        let mut kb = Vec::with_capacity(2); // K⁻¹ A⁻¹ K⁻¹ k_i
        let mut kv = Vec::with_capacity(2);
        let mut dk = Vec::with_capacity(2);
        for x in pts {
            let xm = Mat::from_fn(1, d, |_, j| x[j]);
            let k = self.kernel.cross(self.x.as_ref(), xm.as_ref());
            let kk: Vec<f64> = (0..n).map(|i| k[(i, 0)]).collect();
            let ai = self.chol_k.solve_vec(&kk);
            let bi = self.chol_a.solve_vec(&ai);
            kb.push(self.chol_k.solve_vec(&bi));
            a.push(ai);
            kv.push(kk);
            dk.push(self.kernel.grad_x(x, self.x.as_ref()));
        }
        let dot = |p: &[f64], q: &[f64]| p.iter().zip(q).map(|(u, v)| u * v).sum::<f64>();
        let x0m = Mat::from_fn(1, d, |_, j| x0[j]);
        let x1m = Mat::from_fn(1, d, |_, j| x1[j]);
        let k01 = self.kernel.cross(x0m.as_ref(), x1m.as_ref())[(0, 0)];
        let kss = [
            self.kernel.diag(x0m.as_ref())[0],
            self.kernel.diag(x1m.as_ref())[0],
        ];
        // cov_ij = k(x_i, x_j) − k_iᵀ K⁻¹ k_j + (K⁻¹k_i)ᵀ A⁻¹ (K⁻¹k_j); A⁻¹K⁻¹k_j = K (K⁻¹A⁻¹K⁻¹k_j).
        let cov = |i: usize, j: usize, kij: f64| kij - dot(&kv[i], &a[j]) + dot(&kv[i], &kb[j]);
        let c = [
            [cov(0, 0, kss[0]), cov(0, 1, k01)],
            [cov(1, 0, k01), cov(1, 1, kss[1])],
        ];
        let m = [
            self.mean0 + dot(&kv[0], &self.alpha),
            self.mean0 + dot(&kv[1], &self.alpha),
        ];
        // ∂/∂x_i of k_iᵀ v is dk_iᵀ v.
        let grad = |i: usize, v: &[f64]| -> Vec<f64> {
            (0..d)
                .map(|j| (0..n).map(|r| dk[i][(r, j)] * v[r]).sum())
                .collect()
        };
        let diff =
            |p: &[f64], q: &[f64]| -> Vec<f64> { p.iter().zip(q).map(|(u, v)| u - v).collect() };
        let dk01_0 = self.kernel.grad_x(x0, x1m.as_ref());
        let dk01_1 = self.kernel.grad_x(x1, x0m.as_ref());
        let self0 = self.kernel.diag_grad_x(x0);
        let self1 = self.kernel.diag_grad_x(x1);
        let g00 = grad(0, &diff(&kb[0], &a[0]));
        let g11 = grad(1, &diff(&kb[1], &a[1]));
        let g01_0 = grad(0, &diff(&kb[1], &a[1]));
        let g01_1 = grad(1, &diff(&kb[0], &a[0]));
        Ok(PairMoments {
            mean: m,
            cov: c,
            dmean: [grad(0, &self.alpha), grad(1, &self.alpha)],
            dvar: [
                (0..d).map(|j| self0[j] + 2.0 * g00[j]).collect(),
                (0..d).map(|j| self1[j] + 2.0 * g11[j]).collect(),
            ],
            dcov: [
                (0..d).map(|j| dk01_0[(0, j)] + g01_0[j]).collect(),
                (0..d).map(|j| dk01_1[(0, j)] + g01_1[j]).collect(),
            ],
        })
    }
}

/// Joint utility moments at a pair of points, with gradients (see
/// [`PreferenceGp::pair_moments`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PairMoments {
    /// Posterior means `[m₀, m₁]`.
    pub mean: [f64; 2],
    /// Joint covariance.
    pub cov: [[f64; 2]; 2],
    /// `∂mᵢ/∂xᵢ`.
    pub dmean: [Vec<f64>; 2],
    /// `∂cov_ii/∂xᵢ`.
    pub dvar: [Vec<f64>; 2],
    /// `∂cov₀₁/∂x₀` and `∂cov₀₁/∂x₁`.
    pub dcov: [Vec<f64>; 2],
}
