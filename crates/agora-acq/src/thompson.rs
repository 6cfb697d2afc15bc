//! Thompson sampling.
//!
//! On a box: a random-Fourier-feature approximation of one posterior draw (Rahimi & Recht
//! 2007; Hernández-Lobato et al. 2014, §2.1): `f(x) = m + √(2s/M) Σ_k w_k cos(ω_kᵀx + b_k)`
//! with `ω` from the kernel's spectral density (Gaussian for RBF, Student-t with 2ν degrees
//! of freedom for Matérn-ν), `b ~ U[0, 2π]`, and `w` drawn from its Bayesian-linear-
//! regression posterior given the data. The draw is a smooth function with an exact
//! gradient, so it is maximized like any other acquisition.
//!
//! On a finite set: exact joint posterior draws (see [`sample_argmax_finite`]).

use crate::Acquisition;
use agora_core::{Error, Result};
use agora_gp::{ExactGp, StationaryKind};
use agora_math::linalg::Cholesky;
use faer::{Mat, MatRef};
use rand::{Rng, RngExt};
use rand_distr::{ChiSquared, Distribution, StandardNormal};

/// One approximate posterior draw of an [`ExactGp`] as a function on the input space.
#[derive(Debug, Clone)]
pub struct RffSample {
    omega: Mat<f64>, // M × d
    b: Vec<f64>,
    w: Vec<f64>,
    amp: f64,
    shift: f64,
    scale: f64,
    mean: f64,
}

impl RffSample {
    /// Draw a function from `gp`'s posterior with `n_features` random features. Needs a
    /// (scaled) stationary kernel.
    pub fn draw<R: Rng + ?Sized>(
        gp: &ExactGp,
        n_features: usize,
        rng: &mut R,
    ) -> Result<RffSample> {
        let d = gp.dim();
        let spec = gp.kernel().spectral(d).ok_or_else(|| {
            Error::invalid("kernel", "random Fourier features need a stationary kernel")
        })?;
        if n_features == 0 {
            return Err(Error::invalid("n_features", "must be at least 1"));
        }
        let m = n_features;
        let dof = match spec.kind {
            StationaryKind::Rbf => None,
            StationaryKind::Matern12 => Some(1.0),
            StationaryKind::Matern32 => Some(3.0),
            StationaryKind::Matern52 => Some(5.0),
        };
        let chi = dof
            .map(|k: f64| ChiSquared::new(k).map_err(|e| Error::Numerical(e.to_string())))
            .transpose()?;
        let mut omega = Mat::zeros(m, d);
        for k in 0..m {
            // Student-t: z · √(ν'/χ²_ν'), ν' = 2ν.
            let t = match (&chi, dof) {
                (Some(c), Some(k2)) => {
                    let u: f64 = c.sample(rng);
                    (k2 / u.max(1e-300)).sqrt()
                }
                _ => 1.0,
            };
            for j in 0..d {
                let z: f64 = StandardNormal.sample(rng);
                let l = spec.lengthscales[j];
                omega[(k, j)] = if l.is_finite() { z * t / l } else { 0.0 };
            }
        }
        let b: Vec<f64> = (0..m)
            .map(|_| rng.random::<f64>() * std::f64::consts::TAU)
            .collect();
        let amp = (2.0 * spec.scale / m as f64).sqrt();
        let (shift, scale) = gp.standardization();
        let h = gp.hyper();
        let x = gp.x();
        let n = gp.n();
        let ys: Vec<f64> = gp
            .y()
            .iter()
            .map(|v| (v - shift) / scale - h.mean)
            .collect();
        // Φ: n × M.
        let phi = features(&omega, &b, amp, x);
        // w ~ N(A⁻¹Φᵀy, σ² A⁻¹) with A = ΦᵀΦ + σ²I, drawn by Matheron's rule in the n-dim
        // dual (Wilson et al. 2020): w = w₀ + Φᵀ(ΦΦᵀ + σ²I)⁻¹(y − Φw₀ − ε), w₀ ~ N(0, I),
        // ε ~ N(0, σ²I). Exact for this posterior, and O(n²M + n³) instead of O(M³).
        let noise = h.noise.max(1e-6);
        let mut g = Mat::zeros(n, n);
        faer::linalg::matmul::matmul(
            g.as_mut(),
            faer::Accum::Replace,
            phi.as_ref(),
            phi.transpose(),
            1.0,
            faer::Par::Seq,
        );
        for i in 0..n {
            g[(i, i)] += noise;
        }
        let chol = Cholesky::new(g.as_ref())?;
        let w0: Vec<f64> = (0..m).map(|_| StandardNormal.sample(rng)).collect();
        let sd = noise.sqrt();
        let resid: Vec<f64> = (0..n)
            .map(|i| {
                let eps: f64 = StandardNormal.sample(rng);
                let fw: f64 = (0..m).map(|k| phi[(i, k)] * w0[k]).sum();
                ys[i] - fw - sd * eps
            })
            .collect();
        let v = chol.solve_vec(&resid);
        let w = (0..m)
            .map(|k| w0[k] + (0..n).map(|i| phi[(i, k)] * v[i]).sum::<f64>())
            .collect();
        Ok(RffSample {
            omega,
            b,
            w,
            amp,
            shift,
            scale,
            mean: h.mean,
        })
    }
}

fn features(omega: &Mat<f64>, b: &[f64], amp: f64, x: MatRef<'_, f64>) -> Mat<f64> {
    let mut proj = Mat::zeros(x.nrows(), omega.nrows());
    faer::linalg::matmul::matmul(
        proj.as_mut(),
        faer::Accum::Replace,
        x,
        omega.transpose(),
        1.0,
        faer::Par::Seq,
    );
    Mat::from_fn(x.nrows(), omega.nrows(), |i, k| {
        amp * (proj[(i, k)] + b[k]).cos()
    })
}

impl Acquisition for RffSample {
    fn dim(&self) -> usize {
        self.omega.ncols()
    }
    fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
        let d = self.dim();
        if x.len() != d {
            return Err(Error::dim("x", d, x.len()));
        }
        let mut f = 0.0;
        let mut g = vec![0.0; d];
        for k in 0..self.w.len() {
            let arg = (0..d).map(|j| self.omega[(k, j)] * x[j]).sum::<f64>() + self.b[k];
            f += self.w[k] * arg.cos();
            let s = -self.w[k] * arg.sin();
            for (j, gj) in g.iter_mut().enumerate() {
                *gj += s * self.omega[(k, j)];
            }
        }
        if let Some(out) = grad {
            for j in 0..d {
                out[j] = g[j] * self.amp * self.scale;
            }
        }
        Ok((self.mean + self.amp * f) * self.scale + self.shift)
    }
    fn values(&self, xs: MatRef<'_, f64>) -> Result<Vec<f64>> {
        if xs.ncols() != self.dim() {
            return Err(Error::dim("xs columns", self.dim(), xs.ncols()));
        }
        let phi = features(&self.omega, &self.b, self.amp, xs);
        Ok((0..xs.nrows())
            .map(|i| {
                let f: f64 = (0..self.w.len()).map(|k| phi[(i, k)] * self.w[k]).sum();
                (self.mean + f) * self.scale + self.shift
            })
            .collect())
    }
}

/// Thompson sampling on a finite set: one exact joint posterior draw over the candidate
/// rows, and the index of its maximum (skipping `exclude`d rows).
pub fn sample_argmax_finite<R: Rng + ?Sized>(
    gp: &ExactGp,
    candidates: MatRef<'_, f64>,
    exclude: &[bool],
    rng: &mut R,
) -> Result<usize> {
    let draw = gp.sample(candidates, 1, rng)?;
    let draw = draw
        .into_iter()
        .next()
        .ok_or_else(|| Error::Numerical("no sample drawn".into()))?;
    draw.iter()
        .enumerate()
        .filter(|(i, _)| !exclude.get(*i).copied().unwrap_or(false))
        .fold(None, |acc: Option<(usize, f64)>, (i, &v)| match acc {
            Some((_, bv)) if bv >= v => acc,
            _ => Some((i, v)),
        })
        .map(|(i, _)| i)
        .ok_or_else(|| Error::invalid("candidates", "every candidate is excluded"))
}
