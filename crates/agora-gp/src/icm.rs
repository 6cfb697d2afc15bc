//! Multi-output GP regression with the intrinsic coregionalization model (ICM) on
//! *isotopic* data (every input point carries a value for every task):
//! `Cov(y_j(x), y_j′(x′)) = C[j, j′] k_X(x, x′) + δ σ_j²`, per-task constant means.
//!
//! This is the model behind Social BO's GP variant (App. F.1: `v(x, :) ~ N(0, k_X(x, x) A K_E Aᵀ)`,
//! Eqs. 149–150) and its MT-GP-UCB baselines. With `N` points and `T` tasks the covariance
//! `C ⊗ K + D ⊗ I` is `NT × NT`; whitening by `D^{−1/2}` turns it into `C̃ ⊗ K + I` with
//! `C̃ = D^{−1/2} C D^{−1/2}`, whose eigenvectors are Kronecker products of those of `C̃`
//! and `K`. Fitting costs one `N × N` and one `T × T` eigendecomposition; each prediction
//! costs `O(N² + N T²)`. The tests check every quantity against a dense Cholesky solve.
//!
//! Hyperparameters: [`profile_fit`] chooses, per task, the output scale and noise ratio
//! by maximizing the marginal likelihood with the output scale profiled out in closed
//! form, over a grid of noise ratios and a list of candidate kernels (e.g. lengthscales);
//! the kernel shared by all tasks is the one with the largest summed likelihood.

use crate::kernel::Kernel;
use crate::mll::LN_2PI;
use agora_core::{Error, Result};
use faer::{Mat, MatRef};

/// Symmetric eigendecomposition with eigenvalues clamped at zero (Gram matrices are PSD up
/// to rounding).
fn eigh(a: MatRef<'_, f64>, field: &str) -> Result<(Mat<f64>, Vec<f64>)> {
    let (u, s) = agora_math::linalg::sym_eigen(a, field)?;
    Ok((u, s.into_iter().map(|v| v.max(0.0)).collect()))
}

/// An isotopic ICM GP conditioned on data.
#[derive(Debug, Clone)]
pub struct Icm {
    kernel: Box<dyn Kernel>,
    x: Mat<f64>,
    task_cov: Mat<f64>,
    noise: Vec<f64>,
    mean: Vec<f64>,
    q: Mat<f64>,
    lam: Vec<f64>,
    /// `g[j] = Pᵀ D^{−1/2} C[:, j]` (rows: tasks j, columns: eigen-index a).
    g: Mat<f64>,
    gam: Vec<f64>,
    /// `α C` (N × T): `mean_j(x) = μ_j + k(X, x)ᵀ (α C)[:, j]`.
    alpha_c: Mat<f64>,
    log_ml: f64,
}

impl Icm {
    /// Condition on `y` (`N × T`, row `p` = the tasks' values at `x[p]`) with kernel `k_X`,
    /// task covariance `task_cov` (`T × T`, symmetric PSD), per-task noise variances
    /// (`> 0`) and constant means. Errors name the offending argument.
    pub fn new(
        x: Mat<f64>,
        y: MatRef<'_, f64>,
        kernel: Box<dyn Kernel>,
        task_cov: Mat<f64>,
        noise: &[f64],
        mean: &[f64],
    ) -> Result<Icm> {
        let (n, t) = (x.nrows(), y.ncols());
        if n == 0 || t == 0 {
            return Err(Error::invalid("y", "needs at least one point and one task"));
        }
        if y.nrows() != n {
            return Err(Error::dim("y rows", n, y.nrows()));
        }
        if task_cov.nrows() != t || task_cov.ncols() != t {
            return Err(Error::dim("task_cov", t, task_cov.nrows()));
        }
        if noise.len() != t {
            return Err(Error::dim("noise", t, noise.len()));
        }
        if mean.len() != t {
            return Err(Error::dim("mean", t, mean.len()));
        }
        for (j, s) in noise.iter().enumerate() {
            if !(s.is_finite() && *s > 0.0) {
                return Err(Error::invalid(
                    format!("noise[{j}]"),
                    format!("must be a positive noise variance, got {s}"),
                ));
            }
        }
        agora_core::check_finite_slice("mean", mean)?;
        crate::check_mat("x", x.as_ref(), x.ncols())?;
        for p in 0..n {
            for j in 0..t {
                if !y[(p, j)].is_finite() {
                    return Err(Error::invalid(
                        format!("y[{p}][{j}]"),
                        format!("must be a finite number, got {}", y[(p, j)]),
                    ));
                }
            }
        }
        let kxx = kernel.gram(x.as_ref());
        let (q, lam) = eigh(kxx.as_ref(), "k_X gram")?;
        let dinv: Vec<f64> = noise.iter().map(|s| 1.0 / s.sqrt()).collect();
        let ct = Mat::from_fn(t, t, |i, j| {
            0.5 * (task_cov[(i, j)] + task_cov[(j, i)]) * dinv[i] * dinv[j]
        });
        let (p, gam) = eigh(ct.as_ref(), "task_cov")?;
        // g[j, a] = Σ_i P[i, a] D^{-1/2}_i C[i, j].
        let g = Mat::from_fn(t, t, |j, a| {
            (0..t).map(|i| p[(i, a)] * dinv[i] * task_cov[(i, j)]).sum()
        });
        // Whitened residuals M = (Y − 1μᵀ) D^{-1/2}, projected Z = Qᵀ M P.
        let m = Mat::from_fn(n, t, |r, j| (y[(r, j)] - mean[j]) * dinv[j]);
        let z0 = q.transpose() * &m * &p;
        let mut quad = 0.0;
        let mut logdet: f64 = n as f64 * noise.iter().map(|s| s.ln()).sum::<f64>();
        let mut z = z0.clone();
        for b in 0..n {
            for a in 0..t {
                let den = gam[a] * lam[b] + 1.0;
                quad += z0[(b, a)] * z0[(b, a)] / den;
                logdet += den.ln();
                z[(b, a)] /= den;
            }
        }
        let mut alpha = &q * &z * p.transpose();
        for r in 0..n {
            for j in 0..t {
                alpha[(r, j)] *= dinv[j];
            }
        }
        let alpha_c = &alpha * &task_cov;
        let log_ml = -0.5 * (quad + logdet + (n * t) as f64 * LN_2PI);
        Ok(Icm {
            kernel,
            x,
            task_cov,
            noise: noise.to_vec(),
            mean: mean.to_vec(),
            q,
            lam,
            g,
            gam,
            alpha_c,
            log_ml,
        })
    }

    /// Number of tasks.
    pub fn tasks(&self) -> usize {
        self.task_cov.nrows()
    }

    /// Number of training points.
    pub fn n(&self) -> usize {
        self.x.nrows()
    }

    /// The task covariance `C`.
    pub fn task_cov(&self) -> MatRef<'_, f64> {
        self.task_cov.as_ref()
    }

    /// Per-task noise variances.
    pub fn noise(&self) -> &[f64] {
        &self.noise
    }

    /// Per-task constant means.
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// The input kernel `k_X`.
    pub fn kernel(&self) -> &dyn Kernel {
        self.kernel.as_ref()
    }

    /// Log marginal likelihood of the data.
    pub fn log_marginal_likelihood(&self) -> f64 {
        self.log_ml
    }

    /// `w[j, b] = Σ_a g[j, a]² / (γ_a λ_b + 1)`.
    fn weights(&self) -> Mat<f64> {
        let (t, n) = (self.tasks(), self.n());
        Mat::from_fn(t, n, |j, b| {
            (0..t)
                .map(|a| self.g[(j, a)] * self.g[(j, a)] / (self.gam[a] * self.lam[b] + 1.0))
                .sum()
        })
    }

    /// Posterior means and variances (latent, without noise) of every task at `xs`
    /// (`m × T` each).
    pub fn predict(&self, xs: MatRef<'_, f64>) -> Result<(Mat<f64>, Mat<f64>)> {
        crate::check_mat("xs", xs, self.x.ncols())?;
        let (t, n, m) = (self.tasks(), self.n(), xs.nrows());
        let kx = self.kernel.cross(self.x.as_ref(), xs); // N × m
        let kq = self.q.transpose() * &kx; // N × m
        let kd = self.kernel.diag(xs);
        let w = self.weights();
        let mean = Mat::from_fn(m, t, |i, j| {
            self.mean[j]
                + (0..n)
                    .map(|p| kx[(p, i)] * self.alpha_c[(p, j)])
                    .sum::<f64>()
        });
        let var = Mat::from_fn(m, t, |i, j| {
            let red: f64 = (0..n).map(|b| w[(j, b)] * kq[(b, i)] * kq[(b, i)]).sum();
            (self.task_cov[(j, j)] * kd[i] - red).max(0.0)
        });
        Ok((mean, var))
    }

    /// Posterior covariance (latent) across tasks at each row of `xs`: one `T × T` matrix
    /// per point, `Cov(f_j(x), f_k(x) | y) = C[j, k] k_X(x, x) − Σ_b q_b(x)² Σ_a g[j, a]
    /// g[k, a] / (γ_a λ_b + 1)` with `q(x) = Qᵀ k_X(X, x)` (the whitened Kronecker solve of
    /// the module doc, cross terms kept); its diagonal is [`Icm::predict`]'s variance.
    pub fn cross_task_cov(&self, xs: MatRef<'_, f64>) -> Result<Vec<Mat<f64>>> {
        crate::check_mat("xs", xs, self.x.ncols())?;
        let (t, n) = (self.tasks(), self.n());
        let kq = self.q.transpose() * self.kernel.cross(self.x.as_ref(), xs);
        let kd = self.kernel.diag(xs);
        Ok((0..xs.nrows())
            .map(|i| {
                // h[a] = Σ_b q_b² / (γ_a λ_b + 1).
                let h: Vec<f64> = (0..t)
                    .map(|a| {
                        (0..n)
                            .map(|b| kq[(b, i)] * kq[(b, i)] / (self.gam[a] * self.lam[b] + 1.0))
                            .sum()
                    })
                    .collect();
                let c = Mat::from_fn(t, t, |j, k| {
                    self.task_cov[(j, k)] * kd[i]
                        - (0..t)
                            .map(|a| self.g[(j, a)] * self.g[(k, a)] * h[a])
                            .sum::<f64>()
                });
                Mat::from_fn(t, t, |j, k| 0.5 * (c[(j, k)] + c[(k, j)]))
            })
            .collect())
    }

    /// Joint posterior covariance (latent) of every task at every row of `xs`, task-major:
    /// entry `(j·m + p, k·m + q)` is `Cov(f_j(x_p), f_k(x_q) | y) = C[j, k] k_X(x_p, x_q) −
    /// Σ_a g[j, a] g[k, a] Σ_b q_b(x_p) q_b(x_q) / (γ_a λ_b + 1)` (`mT × mT`); its diagonal
    /// blocks are [`Icm::task_cov_at`], its per-point blocks [`Icm::cross_task_cov`].
    pub fn joint_cov(&self, xs: MatRef<'_, f64>) -> Result<Mat<f64>> {
        crate::check_mat("xs", xs, self.x.ncols())?;
        let (t, n, m) = (self.tasks(), self.n(), xs.nrows());
        let kq = self.q.transpose() * self.kernel.cross(self.x.as_ref(), xs);
        let kss = self.kernel.gram(xs);
        // w_a = qᵀ diag(1 / (γ_a λ + 1)) q (m × m), one per eigen-index a of the tasks.
        let w: Vec<Mat<f64>> = (0..t)
            .map(|a| {
                let sq = Mat::from_fn(n, m, |b, p| {
                    kq[(b, p)] / (self.gam[a] * self.lam[b] + 1.0).sqrt()
                });
                sq.transpose() * &sq
            })
            .collect();
        let out = Mat::from_fn(t * m, t * m, |r, c| {
            let (j, p, k, q) = (r / m, r % m, c / m, c % m);
            self.task_cov[(j, k)] * kss[(p, q)]
                - (0..t)
                    .map(|a| self.g[(j, a)] * self.g[(k, a)] * w[a][(p, q)])
                    .sum::<f64>()
        });
        Ok(Mat::from_fn(t * m, t * m, |r, c| {
            0.5 * (out[(r, c)] + out[(c, r)])
        }))
    }

    /// Posterior covariance (latent) of task `j` between the points `xs` (`m × m`).
    pub fn task_cov_at(&self, xs: MatRef<'_, f64>, j: usize) -> Result<Mat<f64>> {
        crate::check_mat("xs", xs, self.x.ncols())?;
        if j >= self.tasks() {
            return Err(Error::invalid(
                "task",
                format!("must be in 0..{}, got {j}", self.tasks()),
            ));
        }
        let n = self.n();
        let kx = self.kernel.cross(self.x.as_ref(), xs);
        let kq = self.q.transpose() * &kx;
        let kss = self.kernel.gram(xs);
        let w = self.weights();
        let m = xs.nrows();
        Ok(Mat::from_fn(m, m, |a, b| {
            self.task_cov[(j, j)] * kss[(a, b)]
                - (0..n)
                    .map(|r| w[(j, r)] * kq[(r, a)] * kq[(r, b)])
                    .sum::<f64>()
        }))
    }
}

/// Per-task hyperparameters chosen by [`profile_fit`].
#[derive(Debug, Clone, PartialEq)]
pub struct IcmHyper {
    /// Index of the chosen kernel among the candidates.
    pub kernel: usize,
    /// Per-task output scale `s_j²` (the diagonal of the task covariance).
    pub outputscale: Vec<f64>,
    /// Per-task noise variance.
    pub noise: Vec<f64>,
    /// Per-task constant mean (the sample mean).
    pub mean: Vec<f64>,
    /// Summed profile log marginal likelihood at the choice.
    pub log_ml: f64,
}

/// Noise-to-signal ratios searched by [`profile_fit`]: `10^−4 … 10^0` in 17 steps.
pub fn noise_ratio_grid() -> Vec<f64> {
    (0..17)
        .map(|k| 10f64.powf(-4.0 + 0.25 * k as f64))
        .collect()
}

/// Per-task independent GP hyperparameters by the profile marginal likelihood: for each
/// candidate kernel (the same for every task) and noise ratio `η`, the output scale
/// `s² = rᵀ(K + ηI)⁻¹r / N` is optimal in closed form; the kernel with the largest summed
/// likelihood wins, each task keeping its best `η`. `y` is `N × T`. A task with
/// (numerically) constant values gets output scale `floor` and noise `floor·1e−2`.
pub fn profile_fit(
    x: MatRef<'_, f64>,
    y: MatRef<'_, f64>,
    kernels: &[Box<dyn Kernel>],
    floor: f64,
) -> Result<IcmHyper> {
    let (n, t) = (x.nrows(), y.ncols());
    if kernels.is_empty() {
        return Err(Error::invalid("kernels", "needs at least one candidate"));
    }
    if n == 0 || y.nrows() != n {
        return Err(Error::dim("y rows", n.max(1), y.nrows()));
    }
    let mean: Vec<f64> = (0..t)
        .map(|j| (0..n).map(|p| y[(p, j)]).sum::<f64>() / n as f64)
        .collect();
    agora_core::check_finite_slice("y", &mean)?;
    let grid = noise_ratio_grid();
    let mut best: Option<IcmHyper> = None;
    for (ki, k) in kernels.iter().enumerate() {
        let (q, lam) = eigh(k.gram(x).as_ref(), "k_X gram")?;
        let mut total = 0.0;
        let mut scale = vec![0.0; t];
        let mut noise = vec![0.0; t];
        for j in 0..t {
            let r: Vec<f64> = (0..n).map(|p| y[(p, j)] - mean[j]).collect();
            let qr: Vec<f64> = (0..n)
                .map(|b| (0..n).map(|p| q[(p, b)] * r[p]).sum())
                .collect();
            let mut bj = (f64::NEG_INFINITY, floor, floor * 1e-2);
            for &eta in &grid {
                let quad: f64 = (0..n).map(|b| qr[b] * qr[b] / (lam[b] + eta)).sum();
                let s2 = quad / n as f64;
                if s2 <= floor {
                    continue;
                }
                let logdet: f64 = (0..n).map(|b| (lam[b] + eta).ln()).sum();
                let ll = -0.5 * (n as f64 * (s2.ln() + 1.0 + LN_2PI) + logdet);
                if ll > bj.0 {
                    bj = (ll, s2, eta * s2);
                }
            }
            if bj.0.is_finite() {
                total += bj.0;
            }
            scale[j] = bj.1;
            noise[j] = bj.2;
        }
        if best.as_ref().is_none_or(|b| total > b.log_ml) {
            best = Some(IcmHyper {
                kernel: ki,
                outputscale: scale,
                noise,
                mean: mean.clone(),
                log_ml: total,
            });
        }
    }
    Ok(best.expect("at least one kernel"))
}

/// Sample correlation of the columns of `y`, shrunk by `w` toward the identity:
/// `(1 − w) R + w I`. Constant columns get unit variance. A task covariance for an [`Icm`]
/// when nothing structures the tasks (Social BO's multi-task baselines, App. H.3).
pub fn sample_correlation(y: MatRef<'_, f64>, w: f64) -> Mat<f64> {
    let (n, t) = (y.nrows(), y.ncols());
    let mean: Vec<f64> = (0..t)
        .map(|j| (0..n).map(|p| y[(p, j)]).sum::<f64>() / n as f64)
        .collect();
    let cov = Mat::from_fn(t, t, |a, b| {
        (0..n)
            .map(|p| (y[(p, a)] - mean[a]) * (y[(p, b)] - mean[b]))
            .sum::<f64>()
            / n as f64
    });
    Mat::from_fn(t, t, |a, b| {
        if a == b {
            1.0
        } else {
            let d = (cov[(a, a)] * cov[(b, b)]).sqrt();
            let r = if d > 0.0 { cov[(a, b)] / d } else { 0.0 };
            (1.0 - w) * r
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Stationary, StationaryKind};
    use agora_math::linalg::Cholesky;
    use rand::RngExt;

    /// Dense reference: the full `NT × NT` covariance, factored by Cholesky.
    fn dense(
        x: &Mat<f64>,
        y: &Mat<f64>,
        k: &dyn Kernel,
        c: &Mat<f64>,
        noise: &[f64],
        mean: &[f64],
        xs: &Mat<f64>,
    ) -> (f64, Mat<f64>, Mat<f64>, Mat<f64>) {
        let (n, t) = (x.nrows(), y.ncols());
        let kxx = k.gram(x.as_ref());
        let sig = Mat::from_fn(n * t, n * t, |a, b| {
            let (ja, pa, jb, pb) = (a / n, a % n, b / n, b % n);
            c[(ja, jb)] * kxx[(pa, pb)] + if a == b { noise[ja] } else { 0.0 }
        });
        let ch = Cholesky::new(sig.as_ref()).unwrap();
        let r: Vec<f64> = (0..n * t)
            .map(|a| y[(a % n, a / n)] - mean[a / n])
            .collect();
        let al = ch.solve_vec(&r);
        let ll = -0.5
            * (r.iter().zip(&al).map(|(a, b)| a * b).sum::<f64>()
                + ch.log_det()
                + (n * t) as f64 * LN_2PI);
        let kx = k.cross(x.as_ref(), xs.as_ref());
        let kd = k.diag(xs.as_ref());
        let m = xs.nrows();
        let mut mu = Mat::zeros(m, t);
        let mut var = Mat::zeros(m, t);
        for i in 0..m {
            for j in 0..t {
                let cv: Vec<f64> = (0..n * t).map(|a| c[(a / n, j)] * kx[(a % n, i)]).collect();
                let s = ch.solve_vec(&cv);
                mu[(i, j)] = mean[j] + cv.iter().zip(&al).map(|(a, b)| a * b).sum::<f64>();
                var[(i, j)] =
                    c[(j, j)] * kd[i] - cv.iter().zip(&s).map(|(a, b)| a * b).sum::<f64>();
            }
        }
        // Joint covariance, task-major: C[j, k] k(x_p, x_q) − c_jpᵀ Σ⁻¹ c_kq.
        let kss = k.gram(xs.as_ref());
        let cross: Vec<Vec<f64>> = (0..m * t)
            .map(|r| {
                let (j, p) = (r / m, r % m);
                (0..n * t).map(|a| c[(a / n, j)] * kx[(a % n, p)]).collect()
            })
            .collect();
        let solved: Vec<Vec<f64>> = cross.iter().map(|v| ch.solve_vec(v)).collect();
        let joint = Mat::from_fn(m * t, m * t, |r, q| {
            let (j, p, kk, pq) = (r / m, r % m, q / m, q % m);
            c[(j, kk)] * kss[(p, pq)]
                - cross[r]
                    .iter()
                    .zip(&solved[q])
                    .map(|(a, b)| a * b)
                    .sum::<f64>()
        });
        (ll, mu, var, joint)
    }

    #[test]
    fn kronecker_solves_equal_the_dense_reference() {
        let mut rng = agora_math::rng::stream(7, &[1]);
        for (n, t, d) in [(6, 3, 1), (9, 2, 2), (4, 4, 3), (1, 2, 1)] {
            let x = Mat::from_fn(n, d, |_, _| rng.random::<f64>());
            let y = Mat::from_fn(n, t, |_, _| rng.random::<f64>() * 2.0 - 1.0);
            let l = Mat::from_fn(t, t, |_, _| rng.random::<f64>() - 0.3);
            let c = &l * l.transpose();
            let noise: Vec<f64> = (0..t).map(|j| 0.01 + 0.05 * j as f64).collect();
            let mean: Vec<f64> = (0..t).map(|j| 0.1 * j as f64).collect();
            let mut k = Stationary::ard(StationaryKind::Rbf, d, 0.3);
            k.set_params(&vec![(0.3f64).ln(); d]).unwrap();
            let xs = Mat::from_fn(5, d, |_, _| rng.random::<f64>());
            let icm = Icm::new(
                x.clone(),
                y.as_ref(),
                Box::new(k.clone()),
                c.clone(),
                &noise,
                &mean,
            )
            .unwrap();
            let (ll, mu, var, joint) = dense(&x, &y, &k, &c, &noise, &mean, &xs);
            assert!((icm.log_marginal_likelihood() - ll).abs() < 1e-8 * (1.0 + ll.abs()));
            let (m2, v2) = icm.predict(xs.as_ref()).unwrap();
            for i in 0..5 {
                for j in 0..t {
                    assert!((m2[(i, j)] - mu[(i, j)]).abs() < 1e-8, "mean {i} {j}");
                    assert!(
                        (v2[(i, j)] - var[(i, j)].max(0.0)).abs() < 1e-8,
                        "var {i} {j}"
                    );
                }
            }
            // Task covariance at xs: its diagonal is the predictive variance.
            let cj = icm.task_cov_at(xs.as_ref(), t - 1).unwrap();
            for i in 0..5 {
                assert!((cj[(i, i)].max(0.0) - v2[(i, t - 1)]).abs() < 1e-8);
            }
            // The joint covariance across tasks and points, and its per-point blocks.
            let jc = icm.joint_cov(xs.as_ref()).unwrap();
            let per_point = icm.cross_task_cov(xs.as_ref()).unwrap();
            for r in 0..5 * t {
                for q in 0..5 * t {
                    assert!(
                        (jc[(r, q)] - joint[(r, q)]).abs() < 1e-8,
                        "joint {r} {q}: {} vs {}",
                        jc[(r, q)],
                        joint[(r, q)]
                    );
                    let (j, p, kk, pq) = (r / 5, r % 5, q / 5, q % 5);
                    if p == pq {
                        assert!((per_point[p][(j, kk)] - joint[(r, q)]).abs() < 1e-8);
                    }
                }
            }
        }
    }

    #[test]
    fn profile_fit_recovers_signal_and_noise_scale() {
        // Two tasks sampled from known GPs: output scales 4 and 0.25, noise 0.01.
        let mut rng = agora_math::rng::stream(3, &[2]);
        let n = 60;
        let x = Mat::from_fn(n, 1, |i, _| i as f64 / (n - 1) as f64);
        let mut k = Stationary::ard(StationaryKind::Rbf, 1, 0.2);
        k.set_params(&[(0.2f64).ln()]).unwrap();
        let ch = Cholesky::new(k.gram(x.as_ref()).as_ref()).unwrap();
        let mut y = Mat::zeros(n, 2);
        for (j, s2) in [4.0f64, 0.25].iter().enumerate() {
            let z: Vec<f64> = (0..n)
                .map(|_| rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng))
                .collect();
            for p in 0..n {
                let f: f64 = (0..=p).map(|q| ch.l()[(p, q)] * z[q]).sum();
                let e: f64 =
                    rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
                y[(p, j)] = s2.sqrt() * f + 0.1 * e;
            }
        }
        let kernels: Vec<Box<dyn Kernel>> = [0.05, 0.2, 0.8]
            .iter()
            .map(|l: &f64| {
                let mut k = Stationary::ard(StationaryKind::Rbf, 1, *l);
                k.set_params(&[l.ln()]).unwrap();
                Box::new(k) as Box<dyn Kernel>
            })
            .collect();
        let h = profile_fit(x.as_ref(), y.as_ref(), &kernels, 1e-9).unwrap();
        assert_eq!(h.kernel, 1, "{h:?}");
        assert!(h.outputscale[0] > 1.0 && h.outputscale[0] < 16.0, "{h:?}");
        assert!(h.outputscale[1] > 0.06 && h.outputscale[1] < 1.0, "{h:?}");
        for j in 0..2 {
            assert!(h.noise[j] > 0.002 && h.noise[j] < 0.05, "{h:?}");
        }
        // Bad input is named.
        assert!(profile_fit(x.as_ref(), y.as_ref(), &[], 1e-9).is_err());
        let e = Icm::new(
            x.clone(),
            y.as_ref(),
            kernels[0].clone(),
            Mat::identity(2, 2),
            &[0.1, -1.0],
            &[0.0, 0.0],
        )
        .unwrap_err();
        assert!(e.to_string().contains("noise[1]"), "{e}");
    }

    #[test]
    fn sample_correlation_is_a_shrunk_correlation() {
        let y = Mat::from_fn(5, 3, |p, j| match j {
            0 => p as f64,
            1 => 2.0 * p as f64 + 1.0,
            _ => -(p as f64),
        });
        let r = sample_correlation(y.as_ref(), 0.5);
        assert!((r[(0, 1)] - 0.5).abs() < 1e-12);
        assert!((r[(0, 2)] + 0.5).abs() < 1e-12);
        assert_eq!(r[(1, 1)], 1.0);
    }
}
