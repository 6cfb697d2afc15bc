//! The core of CMA-ES in the unit cube: the standard `(μ/μ_w, λ)` form with cumulative
//! step-size adaptation and rank-one plus rank-μ covariance updates (Hansen 2016, "The CMA
//! Evolution Strategy: A Tutorial", Table 1 defaults and Fig. 6). It samples and updates;
//! whoever evaluates the samples (an ask/tell strategy) lives elsewhere.

use crate::rng::Rng;
use faer::Mat;
use rand_distr::{Distribution, StandardNormal};

/// The strategy parameters of Hansen's Table 1 for `dim` coordinates and population `λ`.
#[derive(Debug, Clone, PartialEq)]
pub struct CmaParams {
    /// Population size `λ` (at least 2).
    pub lambda: usize,
    /// Parents `μ = ⌊λ/2⌋`.
    pub mu: usize,
    /// Recombination weights `w_1 ≥ … ≥ w_μ > 0`, summing to 1.
    pub weights: Vec<f64>,
    /// Variance-effective selection mass `μ_eff = 1/Σ w_i²`.
    pub mueff: f64,
    /// Learning rate of the rank-one evolution path `c_c`.
    pub cc: f64,
    /// Learning rate of the step-size path `c_σ`.
    pub cs: f64,
    /// Rank-one learning rate `c_1`.
    pub c1: f64,
    /// Rank-μ learning rate `c_μ`.
    pub cmu: f64,
    /// Step-size damping `d_σ`.
    pub damps: f64,
    /// `E‖N(0, I)‖ ≈ √n (1 − 1/(4n) + 1/(21n²))`.
    pub chin: f64,
}

impl CmaParams {
    /// Table 1's defaults in `dim` dimensions; `popsize` overrides `λ = 4 + ⌊3 ln n⌋`
    /// (either way at least 2).
    pub fn new(dim: usize, popsize: Option<usize>) -> CmaParams {
        let n = dim as f64;
        let lambda = popsize
            .unwrap_or(4 + (3.0 * n.ln()).floor() as usize)
            .max(2);
        let mu = lambda / 2;
        let raw: Vec<f64> = (0..mu)
            .map(|i| ((lambda as f64 + 1.0) / 2.0).ln() - ((i + 1) as f64).ln())
            .collect();
        let wsum: f64 = raw.iter().sum();
        let weights: Vec<f64> = raw.iter().map(|v| v / wsum).collect();
        let mueff = 1.0 / weights.iter().map(|v| v * v).sum::<f64>();
        let cc = (4.0 + mueff / n) / (n + 4.0 + 2.0 * mueff / n);
        let cs = (mueff + 2.0) / (n + mueff + 5.0);
        let c1 = 2.0 / ((n + 1.3).powi(2) + mueff);
        let cmu = (1.0 - c1).min(2.0 * (mueff - 2.0 + 1.0 / mueff) / ((n + 2.0).powi(2) + mueff));
        let damps = 1.0 + 2.0 * (((mueff - 1.0) / (n + 1.0)).sqrt() - 1.0).max(0.0) + cs;
        let chin = n.sqrt() * (1.0 - 1.0 / (4.0 * n) + 1.0 / (21.0 * n * n));
        CmaParams {
            lambda,
            mu,
            weights,
            mueff,
            cc,
            cs,
            c1,
            cmu,
            damps,
            chin,
        }
    }
}

/// One CMA-ES run's state: mean `m`, step size `σ`, evolution paths `p_c`, `p_σ`, and the
/// covariance `C = B D² Bᵀ` with its eigendecomposition.
#[derive(Debug, Clone)]
pub struct CmaState {
    /// The search distribution's mean.
    pub mean: Vec<f64>,
    /// The step size `σ`.
    pub sigma: f64,
    pc: Vec<f64>,
    ps: Vec<f64>,
    cov: Mat<f64>,
    b: Mat<f64>,
    dg: Vec<f64>,
    generation: i32,
}

/// What an update leaves: a run that goes on, or one to restart (the step size collapsed,
/// the covariance became ill-conditioned, or its eigendecomposition failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmaStep {
    /// Sample the next generation.
    Continue,
    /// Start afresh.
    Restart,
}

impl CmaState {
    /// A fresh run from `mean` with step size `sigma0` and `C = I`.
    pub fn new(mean: Vec<f64>, sigma0: f64) -> CmaState {
        let dim = mean.len();
        CmaState {
            mean,
            sigma: sigma0,
            pc: vec![0.0; dim],
            ps: vec![0.0; dim],
            cov: Mat::<f64>::identity(dim, dim),
            b: Mat::<f64>::identity(dim, dim),
            dg: vec![1.0; dim],
            generation: 0,
        }
    }

    /// One sample `m + σ B D z`, `z ~ N(0, I)`, kept in the unit cube: a sample outside
    /// is redrawn up to `max_resamples` times, then clamped.
    pub fn sample_in_unit_cube(&self, rng: &mut Rng, max_resamples: usize) -> Vec<f64> {
        let dim = self.mean.len();
        let mut x = vec![0.0; dim];
        for attempt in 0..=max_resamples {
            let z: Vec<f64> = (0..dim)
                .map(|_| StandardNormal.sample(rng))
                .collect::<Vec<f64>>();
            for (i, xi) in x.iter_mut().enumerate() {
                let bdz: f64 = (0..dim).map(|k| self.b[(i, k)] * self.dg[k] * z[k]).sum();
                *xi = self.mean[i] + self.sigma * bdz;
            }
            if attempt == max_resamples || x.iter().all(|v| (0.0..=1.0).contains(v)) {
                break;
            }
        }
        x.iter_mut().for_each(|v| *v = v.clamp(0.0, 1.0));
        x
    }

    /// Update from a full generation `(value, point)` (maximization: the largest values
    /// are selected; `pop` is sorted in place, best first, ties in their given order).
    pub fn update(&mut self, p: &CmaParams, pop: &mut [(f64, Vec<f64>)]) -> CmaStep {
        let dim = self.mean.len();
        let n = dim as f64;
        let (w, mu) = (&p.weights, p.mu.min(pop.len()));
        pop.sort_by(|a, b| b.0.total_cmp(&a.0));
        let sigma = self.sigma;
        let m_old = std::mem::take(&mut self.mean);
        self.mean = (0..dim)
            .map(|i| (0..mu).map(|k| w[k] * pop[k].1[i]).sum())
            .collect();
        let yw: Vec<f64> = (0..dim)
            .map(|i| (self.mean[i] - m_old[i]) / sigma)
            .collect();
        // C^{-1/2} y_w = B D⁻¹ Bᵀ y_w.
        let bty: Vec<f64> = (0..dim)
            .map(|k| (0..dim).map(|i| self.b[(i, k)] * yw[i]).sum::<f64>() / self.dg[k])
            .collect();
        let cinv_y: Vec<f64> = (0..dim)
            .map(|i| (0..dim).map(|k| self.b[(i, k)] * bty[k]).sum())
            .collect();
        let a_s = (p.cs * (2.0 - p.cs) * p.mueff).sqrt();
        for (ps, c) in self.ps.iter_mut().zip(&cinv_y) {
            *ps = (1.0 - p.cs) * *ps + a_s * c;
        }
        let ps_norm = self.ps.iter().map(|v| v * v).sum::<f64>().sqrt();
        self.generation += 1;
        let hsig = ps_norm / (1.0 - (1.0 - p.cs).powi(2 * self.generation)).sqrt() / p.chin
            < 1.4 + 2.0 / (n + 1.0);
        let hs = if hsig { 1.0 } else { 0.0 };
        let a_c = (p.cc * (2.0 - p.cc) * p.mueff).sqrt();
        for (pc, y) in self.pc.iter_mut().zip(&yw) {
            *pc = (1.0 - p.cc) * *pc + hs * a_c * y;
        }
        let ys: Vec<Vec<f64>> = (0..mu)
            .map(|k| (0..dim).map(|i| (pop[k].1[i] - m_old[i]) / sigma).collect())
            .collect();
        let keep = 1.0 - p.c1 - p.cmu + (1.0 - hs) * p.c1 * p.cc * (2.0 - p.cc);
        for i in 0..dim {
            for j in 0..=i {
                let rank_mu: f64 = (0..mu).map(|k| w[k] * ys[k][i] * ys[k][j]).sum();
                let v = keep * self.cov[(i, j)] + p.c1 * self.pc[i] * self.pc[j] + p.cmu * rank_mu;
                self.cov[(i, j)] = v;
                self.cov[(j, i)] = v;
            }
        }
        self.sigma *= ((p.cs / p.damps) * (ps_norm / p.chin - 1.0)).exp();
        let Ok((b, s)) = crate::linalg::sym_eigen(self.cov.as_ref(), "cov") else {
            return CmaStep::Restart;
        };
        self.b = b;
        self.dg = (0..dim).map(|k| s[k].max(1e-300).sqrt()).collect();
        let dmax = self.dg.iter().cloned().fold(0.0, f64::max);
        let dmin = self.dg.iter().cloned().fold(f64::INFINITY, f64::min);
        if !self.sigma.is_finite() || self.sigma * dmax < 1e-13 || dmax > 1e7 * dmin {
            return CmaStep::Restart;
        }
        CmaStep::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn table_one_defaults_in_ten_dimensions() {
        // Hansen (2016), Table 1 at n = 10: λ = 4 + ⌊3 ln 10⌋ = 10, μ = 5, and the weights
        // ln(5.5) − ln(i) normalized; μ_eff = 1/Σw² (computed independently below).
        let p = CmaParams::new(10, None);
        assert_eq!((p.lambda, p.mu), (10, 5));
        let raw: Vec<f64> = (1..=5).map(|i| 5.5f64.ln() - (i as f64).ln()).collect();
        let s: f64 = raw.iter().sum();
        for (w, r) in p.weights.iter().zip(&raw) {
            assert!((w - r / s).abs() < 1e-15);
        }
        let mueff = s * s / raw.iter().map(|r| r * r).sum::<f64>();
        assert!((p.mueff - mueff).abs() < 1e-12);
        assert_eq!(CmaParams::new(10, Some(1)).lambda, 2);
    }

    #[test]
    fn samples_stay_in_the_unit_cube_and_the_mean_moves_towards_the_better_half() {
        let p = CmaParams::new(3, Some(8));
        let mut st = CmaState::new(vec![0.5; 3], 0.3);
        let mut rng = stream(1, &[]);
        let mut pop: Vec<(f64, Vec<f64>)> = (0..p.lambda)
            .map(|_| {
                let x = st.sample_in_unit_cube(&mut rng, 10);
                assert!(x.iter().all(|v| (0.0..=1.0).contains(v)));
                (x[0], x)
            })
            .collect();
        let best_half: f64 = {
            let mut v: Vec<f64> = pop.iter().map(|(f, _)| *f).collect();
            v.sort_by(|a, b| b.total_cmp(a));
            v[..p.mu].iter().sum::<f64>() / p.mu as f64
        };
        assert_eq!(st.update(&p, &mut pop), CmaStep::Continue);
        // Maximizing x₀: the new mean is a weighted mean of the best half, above 0.5.
        assert!(st.mean[0] > 0.5 && best_half > 0.5, "{:?}", st.mean);
        assert!(pop.windows(2).all(|w| w[0].0 >= w[1].0));
    }
}
