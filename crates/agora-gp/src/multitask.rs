//! The intrinsic-coregionalization (multi-task) kernel `k((x, i), (x′, j)) = k_X(x, x′) ·
//! K_E[i, j]`: inputs carry the task index in their last column. With `K_E` the agents'
//! covariance it is Social BO's multi-task GP prior `u ~ GP(0, k_X ⊗ K_E)`, and with
//! `A K_E Aᵀ` the induced prior of the public utilities `v = A u` (App. F.1, Eqs. 149–150).
//!
//! `K_E` is fixed (validated symmetric positive semidefinite); the hyperparameters are those
//! of `k_X`. Task indices outside `0..tasks` are clamped, as [`crate::Precomputed`] does with
//! its indices: callers validate them.

use crate::kernel::{Kernel, ParamKind};
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use faer::{Mat, MatRef};

/// `k_X ⊗ K_E` over inputs `[x, task]`.
#[derive(Debug, Clone)]
pub struct MultiTask {
    base: Box<dyn Kernel>,
    task_cov: Mat<f64>,
}

impl MultiTask {
    /// `base` on the first `d` columns, `task_cov` (`tasks × tasks`, symmetric PSD) on the
    /// last. Errors name `task_cov`.
    pub fn new(base: Box<dyn Kernel>, task_cov: Mat<f64>) -> Result<MultiTask> {
        let t = task_cov.nrows();
        if t == 0 || task_cov.ncols() != t {
            return Err(Error::dim("task_cov", t.max(1), task_cov.ncols()));
        }
        for i in 0..t {
            for j in 0..t {
                let (a, b) = (task_cov[(i, j)], task_cov[(j, i)]);
                if !a.is_finite() || (a - b).abs() > 1e-12 * (1.0 + a.abs()) {
                    return Err(Error::invalid(
                        format!("task_cov[{i}][{j}]"),
                        "must be finite and symmetric",
                    ));
                }
            }
        }
        // PSD: factor with a tiny relative jitter.
        let mut j = task_cov.clone();
        let scale = (0..t)
            .map(|i| j[(i, i)].abs())
            .fold(0.0, f64::max)
            .max(1e-300);
        for i in 0..t {
            j[(i, i)] += 1e-10 * scale;
        }
        Cholesky::new(j.as_ref())
            .map_err(|_| Error::invalid("task_cov", "must be positive semidefinite"))?;
        Ok(MultiTask { base, task_cov })
    }

    /// Number of tasks.
    pub fn tasks(&self) -> usize {
        self.task_cov.nrows()
    }

    fn task(&self, v: f64) -> usize {
        (v.max(0.0).round() as usize).min(self.tasks() - 1)
    }

    fn split<'a>(x: MatRef<'a, f64>) -> MatRef<'a, f64> {
        x.subcols(0, x.ncols() - 1)
    }
}

impl Kernel for MultiTask {
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
        let mut k = self.base.cross(Self::split(a), Self::split(b));
        let (ta, tb) = (a.ncols() - 1, b.ncols() - 1);
        for i in 0..a.nrows() {
            let ti = self.task(a[(i, ta)]);
            for j in 0..b.nrows() {
                k[(i, j)] *= self.task_cov[(ti, self.task(b[(j, tb)]))];
            }
        }
        k
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        let t = x.ncols() - 1;
        self.base
            .diag(Self::split(x))
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                let ti = self.task(x[(i, t)]);
                v * self.task_cov[(ti, ti)]
            })
            .collect()
    }
    fn grad_contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>) -> Vec<f64> {
        // ∂K/∂θ = ∂K_X/∂θ ∘ T with T_ij = K_E[t_i, t_j].
        let t = x.ncols() - 1;
        let wt = Mat::from_fn(w.nrows(), w.ncols(), |i, j| {
            w[(i, j)] * self.task_cov[(self.task(x[(i, t)]), self.task(x[(j, t)]))]
        });
        self.base.grad_contract(Self::split(x), wt.as_ref())
    }
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        let d = x.len() - 1;
        let tx = self.task(x[d]);
        let g = self.base.grad_x(&x[..d], Self::split(b));
        let tb = b.ncols() - 1;
        Mat::from_fn(b.nrows(), d + 1, |i, j| {
            if j < d {
                g[(i, j)] * self.task_cov[(tx, self.task(b[(i, tb)]))]
            } else {
                0.0
            }
        })
    }
}

/// Variance of `Σ_j b_j v_j` for independent `b_j ~ (b̂_j, σ²_bj)` and `v_j ~ (m_j, C_j)`
/// (Goodman 1960): `Σ_j [(σ²_bj + b̂_j²)(C_j + m_j²) − b̂_j² m_j²]`. This is the per-term
/// formula the proof of Corollary F.2 derives for `u(x, i) = B(i, :) v(x, :)`; the printed
/// corollary carries stray products **\[PAPER-BUG\]** (note §2.7). Errors on unequal lengths.
pub fn goodman_variance(b_hat: &[f64], b_var: &[f64], m: &[f64], c: &[f64]) -> Result<f64> {
    let n = b_hat.len();
    for (name, v) in [("b_var", b_var), ("m", m), ("c", c)] {
        if v.len() != n {
            return Err(Error::dim(name, n, v.len()));
        }
    }
    Ok((0..n)
        .map(|j| {
            let (b2, m2) = (b_hat[j] * b_hat[j], m[j] * m[j]);
            (b_var[j] + b2) * (c[j] + m2) - b2 * m2
        })
        .sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Stationary, StationaryKind};
    use agora_math::fd::{Tol, assert_gradient, check_gradient, fd_jacobian};
    use agora_math::rng::stream;
    use rand::RngExt;

    fn task_cov() -> Mat<f64> {
        // A K_E Aᵀ for the thermal graph and K_E with unit variances, correlation 0.3.
        let a = [[0.8, 0.1, 0.1], [0.6, 0.1, 0.3], [0.4, 0.3, 0.3]];
        let ke = |i: usize, j: usize| if i == j { 1.0 } else { 0.3 };
        Mat::from_fn(3, 3, |i, j| {
            let mut s = 0.0;
            for k in 0..3 {
                for l in 0..3 {
                    s += a[i][k] * ke(k, l) * a[j][l];
                }
            }
            s
        })
    }

    #[test]
    fn one_task_is_the_base_kernel_and_gram_is_psd() {
        let base = Stationary::ard(StationaryKind::Rbf, 2, 0.3);
        let one = MultiTask::new(Box::new(base.clone()), Mat::from_fn(1, 1, |_, _| 1.0)).unwrap();
        let mut rng = stream(3, &[]);
        let x = Mat::from_fn(7, 3, |_, j| if j < 2 { rng.random::<f64>() } else { 0.0 });
        let a = one.gram(x.as_ref());
        let b = base.gram(x.subcols(0, 2));
        for i in 0..7 {
            for j in 0..7 {
                assert!((a[(i, j)] - b[(i, j)]).abs() < 1e-15);
            }
        }
        let mt = MultiTask::new(Box::new(base), task_cov()).unwrap();
        let x = Mat::from_fn(30, 3, |i, j| {
            if j < 2 {
                rng.random::<f64>()
            } else {
                (i % 3) as f64
            }
        });
        let mut g = mt.gram(x.as_ref());
        for i in 0..30 {
            g[(i, i)] += 1e-9;
        }
        assert_eq!(Cholesky::new(g.as_ref()).unwrap().jitter(), 0.0);
        // Same input, tasks i and j: the covariance is K_E[i, j] · k_X(x, x).
        let p = Mat::from_fn(2, 3, |i, j| [[0.2, 0.4, 0.0], [0.2, 0.4, 2.0]][i][j]);
        assert!((mt.cross(p.as_ref(), p.as_ref())[(0, 1)] - task_cov()[(0, 2)]).abs() < 1e-15);
        let bad = Mat::from_fn(2, 2, |i, j| if i == j { 1.0 } else { 2.0 });
        let e = MultiTask::new(Box::new(Stationary::ard(StationaryKind::Rbf, 1, 0.3)), bad)
            .unwrap_err();
        assert!(e.to_string().contains("task_cov"), "{e}");
    }

    #[test]
    fn goodman_variance_matches_monte_carlo() {
        use rand_distr::{Distribution, StandardNormal};
        let (bh, bv) = ([0.9, -0.2, 0.4], [0.01, 0.04, 0.09]);
        let (m, c) = ([1.5, -0.7, 0.2], [0.3, 0.5, 0.1]);
        let exact = goodman_variance(&bh, &bv, &m, &c).unwrap();
        let mut rng = stream(8, &[]);
        let n = 400_000;
        let (mut s, mut s2) = (0.0, 0.0);
        for _ in 0..n {
            let mut y = 0.0;
            for j in 0..3 {
                let z1: f64 = StandardNormal.sample(&mut rng);
                let z2: f64 = StandardNormal.sample(&mut rng);
                y += (bh[j] + bv[j].sqrt() * z1) * (m[j] + c[j].sqrt() * z2);
            }
            s += y;
            s2 += y * y;
        }
        let var = s2 / n as f64 - (s / n as f64).powi(2);
        // The sample variance's relative SE is about sqrt(2/n) ≈ 0.2 %; allow 1 %.
        assert!((var - exact).abs() < 0.01 * exact, "{var} vs {exact}");
        assert!(goodman_variance(&bh, &bv[..2], &m, &c).is_err());
    }

    #[test]
    fn gradients_match_finite_differences() {
        let mt = MultiTask::new(
            Box::new(Stationary::ard(StationaryKind::Rbf, 2, 0.3)),
            task_cov(),
        )
        .unwrap();
        let mut rng = stream(4, &[]);
        let x = Mat::from_fn(6, 3, |i, j| {
            if j < 2 {
                rng.random::<f64>()
            } else {
                (i % 3) as f64
            }
        });
        let w = Mat::from_fn(6, 6, |i, j| ((i * 7 + j * 3) % 5) as f64 - 2.0);
        let g = mt.grad_contract(x.as_ref(), w.as_ref());
        let p0 = mt.params();
        let contracted = |p: &[f64]| {
            let mut m = mt.clone();
            m.set_params(p).unwrap();
            crate::kernel::hadamard_sum(w.as_ref(), m.gram(x.as_ref()).as_ref())
        };
        check_gradient(contracted, &p0, 1e-6, &g, Tol::Abs(1e-6), "hyperparameters");
        let xq = [0.3, 0.6, 1.0];
        let gx = mt.grad_x(&xq, x.as_ref());
        // The continuous inputs only (the last column is the task index).
        let row = |z: &[f64]| {
            let k = mt.cross(
                Mat::from_fn(1, 3, |_, c| [z[0], z[1], xq[2]][c]).as_ref(),
                x.as_ref(),
            );
            (0..6).map(|i| k[(0, i)]).collect::<Vec<f64>>()
        };
        for (j, fd) in fd_jacobian(row, &xq[..2], 1e-6).iter().enumerate() {
            let analytic: Vec<f64> = (0..6).map(|i| gx[(i, j)]).collect();
            assert_gradient(&analytic, fd, Tol::Abs(1e-6), &format!("input {j}"));
        }
    }
}
