//! The duel model's Gaussian posterior, built by any of the three inference methods.

use super::{Duels, ep, factor_b, laplace_mode, r_apply};
use crate::anchor::NoiseModel;
use crate::kernel::Kernel;
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use agora_math::truncnorm::tmvn_negative_gibbs;
use faer::{Mat, MatRef};
use rand::Rng;

/// Settings of expectation propagation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpOptions {
    /// Damping `δ` of the parallel site updates: new = (1 − δ)·old + δ·update.
    pub damping: f64,
    /// Maximum number of sweeps.
    pub max_sweeps: usize,
    /// Convergence: largest change of any site's natural parameters.
    pub tol: f64,
}

impl Default for EpOptions {
    fn default() -> Self {
        EpOptions {
            damping: 0.5,
            max_sweeps: 500,
            tol: 1e-8,
        }
    }
}

/// How the posterior over the latent utility is approximated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DuelInference {
    /// One Gibbs hallucination after `sweeps` sweeps (Takeno et al.: 1000), then exact GP
    /// prediction.
    Hallucination {
        /// Gibbs sweeps from `v = 0`.
        sweeps: usize,
    },
    /// Laplace approximation.
    Laplace,
    /// Expectation propagation.
    Ep(EpOptions),
}

impl DuelInference {
    /// Parse `hb`, `laplace` or `ep`.
    pub fn parse(s: &str) -> Result<DuelInference> {
        match s {
            "hb" | "hallucination" => Ok(DuelInference::Hallucination { sweeps: 1000 }),
            "laplace" => Ok(DuelInference::Laplace),
            "ep" => Ok(DuelInference::Ep(EpOptions::default())),
            _ => Err(Error::invalid(
                "inference",
                format!("unknown inference `{s}`; allowed: hb, laplace, ep"),
            )),
        }
    }

    /// Short name.
    pub fn name(&self) -> &'static str {
        match self {
            DuelInference::Hallucination { .. } => "hb",
            DuelInference::Laplace => "laplace",
            DuelInference::Ep(_) => "ep",
        }
    }
}

/// Diagnostics of one posterior construction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DuelInfo {
    /// Newton iterations (Laplace), sweeps (EP) or Gibbs sweeps (HB).
    pub iterations: usize,
    /// Whether the method met its convergence test (always true for HB).
    pub converged: bool,
    /// Jitter the factorization of `B` needed.
    pub jitter: f64,
}

/// The Gaussian posterior of a duel model (see the module docs).
#[derive(Debug, Clone)]
pub struct DuelGp {
    kernel: Box<dyn Kernel>,
    duels: Duels,
    sqrt_tau: Vec<f64>,
    chol: Cholesky,
    alpha: Vec<f64>,
    log_evidence: Option<f64>,
    hallucination: Option<Vec<f64>>,
    info: DuelInfo,
}

impl DuelGp {
    /// The posterior of `duels` under `kernel`, `noise` and `inference`; `rng` drives the
    /// Gibbs hallucination (unused otherwise).
    pub fn new<R: Rng + ?Sized>(
        kernel: Box<dyn Kernel>,
        duels: Duels,
        noise: &NoiseModel,
        inference: DuelInference,
        rng: &mut R,
    ) -> Result<DuelGp> {
        if let Some(nd) = noise.dim().filter(|nd| *nd != duels.dim()) {
            return Err(Error::dim("anchors columns", duels.dim(), nd));
        }
        let s2 = duels.noise_sums(noise);
        let c = duels.diff_cov(kernel.as_ref());
        let m = duels.len();
        let (sqrt_tau, chol, alpha, log_evidence, hallucination, info) = match inference {
            DuelInference::Hallucination { sweeps } => {
                let mut sv = c.clone();
                for k in 0..m {
                    sv[(k, k)] += s2[k];
                }
                let v = tmvn_negative_gibbs(sv.as_ref(), None, sweeps.max(1), rng)?;
                let sqrt_tau: Vec<f64> = s2.iter().map(|s| 1.0 / s.sqrt()).collect();
                let chol = factor_b(&c, &sqrt_tau)?;
                let y: Vec<f64> = v.iter().map(|x| -x).collect();
                let alpha = r_apply(&chol, &sqrt_tau, &y);
                let info = DuelInfo {
                    iterations: sweeps,
                    converged: true,
                    jitter: chol.jitter(),
                };
                (sqrt_tau, chol, alpha, None, Some(v), info)
            }
            DuelInference::Laplace => {
                let mode = laplace_mode(&c, &s2, None)?;
                let info = DuelInfo {
                    iterations: mode.iters,
                    converged: mode.converged,
                    jitter: mode.chol.jitter(),
                };
                (
                    mode.sqrt_lam,
                    mode.chol,
                    mode.a,
                    Some(mode.log_z),
                    None,
                    info,
                )
            }
            DuelInference::Ep(opts) => ep(&c, &s2, opts)?,
        };
        Ok(DuelGp {
            kernel,
            duels,
            sqrt_tau,
            chol,
            alpha,
            log_evidence,
            hallucination,
            info,
        })
    }

    /// The duels.
    pub fn duels(&self) -> &Duels {
        &self.duels
    }

    /// The kernel.
    pub fn kernel(&self) -> &dyn Kernel {
        self.kernel.as_ref()
    }

    /// Laplace log evidence (Laplace inference only).
    pub fn log_evidence(&self) -> Option<f64> {
        self.log_evidence
    }

    /// The Gibbs hallucination `ṽ` (HB only).
    pub fn hallucination(&self) -> Option<&[f64]> {
        self.hallucination.as_deref()
    }

    /// Diagnostics.
    pub fn info(&self) -> DuelInfo {
        self.info
    }

    /// Input dimension.
    pub fn dim(&self) -> usize {
        self.duels.dim()
    }

    /// Posterior mean and latent variance at each row of `xs`.
    pub fn predict(&self, xs: MatRef<'_, f64>) -> Result<(Vec<f64>, Vec<f64>)> {
        crate::check_mat("x", xs, self.dim())?;
        let cx = self.duels.cross(self.kernel.as_ref(), xs);
        let kd = self.kernel.diag(xs);
        let m = self.duels.len();
        let mut mean = Vec::with_capacity(xs.nrows());
        let mut var = Vec::with_capacity(xs.nrows());
        for i in 0..xs.nrows() {
            let c: Vec<f64> = (0..m).map(|k| cx[(i, k)]).collect();
            mean.push(c.iter().zip(&self.alpha).map(|(a, b)| a * b).sum());
            let y: Vec<f64> = c.iter().zip(&self.sqrt_tau).map(|(a, s)| a * s).collect();
            let z = self.chol.solve_lower_vec(&y);
            var.push((kd[i] - z.iter().map(|v| v * v).sum::<f64>()).max(1e-12 * kd[i]));
        }
        Ok((mean, var))
    }

    /// `(μ, σ², ∇μ, ∇σ²)` at one point.
    pub fn predict_with_grad(&self, x: &[f64]) -> Result<(f64, f64, Vec<f64>, Vec<f64>)> {
        let d = self.dim();
        if x.len() != d {
            return Err(Error::dim("x", d, x.len()));
        }
        agora_core::check_finite_slice("x", x)?;
        let xm = Mat::from_fn(1, d, |_, j| x[j]);
        let m = self.duels.len();
        let cx = self.duels.cross(self.kernel.as_ref(), xm.as_ref());
        let c: Vec<f64> = (0..m).map(|k| cx[(0, k)]).collect();
        let gw = self.kernel.grad_x(x, self.duels.winners());
        let gl = self.kernel.grad_x(x, self.duels.losers());
        let mean = c.iter().zip(&self.alpha).map(|(a, b)| a * b).sum();
        let u = r_apply(&self.chol, &self.sqrt_tau, &c);
        let var =
            self.kernel.diag(xm.as_ref())[0] - c.iter().zip(&u).map(|(a, b)| a * b).sum::<f64>();
        let dk = self.kernel.diag_grad_x(x);
        let mut gm = vec![0.0; d];
        let mut gv = dk;
        for k in 0..m {
            for j in 0..d {
                let dc = gw[(k, j)] - gl[(k, j)];
                gm[j] += dc * self.alpha[k];
                gv[j] -= 2.0 * dc * u[k];
            }
        }
        Ok((mean, var.max(0.0), gm, gv))
    }
}
