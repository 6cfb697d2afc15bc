//! The fair batch UCB of collaborative BO (Sim et al. 2021, Eq. 5): one query per party,
//!
//! `a(X) = W(λ + μ(X)) + sqrt(α_t · I(X))`, `I(X) = ½ log det(I + σ⁻² Σ_X)`,
//!
//! with `W` the Gini welfare ([`agora_math::welfare::Welfare`], unnormalized weights
//! `ρ^{k−1}`), `λ` the parties' cumulative utilities so far, `μ(X)` and `Σ_X` the posterior
//! mean and joint covariance at the batch, and `α_t = c1 · Σ_k w_k² · d · log(c2 · t)` (the
//! authors' practical schedule, docs/notes/collaborative-fair-bo.md §2).
//!
//! With `permute` (the proposed method for `ρ < 1`), the batch is unordered: the `k`-th
//! highest mean is scored for the party with the `k`-th lowest `λ` (the fairest
//! assignment, B.2), and [`FairBatchUcb::assign`] hands the inputs out that way. Without it
//! (`ρ = 1`, or per-party candidate sets), input `i` belongs to party `i`.

use crate::Acquisition;
use agora_core::{Error, Result};
use agora_gp::ExactGp;
use agora_math::linalg::Cholesky;
use agora_math::welfare::{Welfare, ascending_order, fairest_assignment};
use faer::Mat;

/// `α_t = c1 · Σ w² · d · log(c2 · t)` (floored at 0); `t` is 1-based and counts the random
/// rounds, as in the authors' code.
pub fn alpha_t(c1: f64, c2: f64, weights: &[f64], d: usize, t: usize) -> f64 {
    let sw2: f64 = weights.iter().map(|w| w * w).sum();
    (c1 * sw2 * d as f64 * (c2 * t as f64).ln()).max(0.0)
}

/// The "vary c1" factor `(Σw)² / (n Σw²)` in `(0, 1]` (1 at `ρ = 1`), applied once: it
/// keeps the exploration-to-exploitation weight ratio of `ρ = 1` (note §2). The authors'
/// script multiplies it into `c1` every round, which compounds (note §7.5); agora does not.
pub fn vary_c1_factor(weights: &[f64]) -> f64 {
    let s: f64 = weights.iter().sum();
    let s2: f64 = weights.iter().map(|w| w * w).sum();
    s * s / (weights.len() as f64 * s2)
}

/// `½ log det(I + Σ / σ²)`, the information a batch with posterior covariance `Σ` gives
/// under Gaussian noise `σ²`; also returns `G = ½ σ⁻² (I + Σ/σ²)⁻¹` (its gradient in `Σ`).
pub fn batch_information(cov: &Mat<f64>, noise_var: f64) -> Result<(f64, Mat<f64>)> {
    let n = cov.nrows();
    let a = Mat::from_fn(n, n, |i, j| {
        cov[(i, j)] / noise_var + if i == j { 1.0 } else { 0.0 }
    });
    let chol = Cholesky::new(a.as_ref())?;
    let inv = chol.inverse();
    let g = Mat::from_fn(n, n, |i, j| 0.5 * inv[(i, j)] / noise_var);
    Ok((0.5 * chol.log_det(), g))
}

/// Errors unless `α ≥ 0` and `σ² > 0` are finite (naming `alpha` / `noise_var`).
pub(crate) fn check_alpha_noise(alpha: f64, noise_var: f64) -> Result<()> {
    if !(alpha.is_finite() && alpha >= 0.0) {
        return Err(Error::invalid(
            "alpha",
            format!("must be finite and >= 0, got {alpha}"),
        ));
    }
    if !(noise_var.is_finite() && noise_var > 0.0) {
        return Err(Error::invalid(
            "noise_var",
            format!("must be finite and > 0, got {noise_var}"),
        ));
    }
    Ok(())
}

/// Fair batch UCB over the joint box `[0, 1]^{n·d}` (party-major: `x[i·d .. (i+1)·d]` is
/// party `i`'s input).
pub struct FairBatchUcb<'a> {
    /// The shared GP.
    pub gp: &'a ExactGp,
    /// The welfare rule.
    pub welfare: Welfare,
    /// Cumulative utilities `λ` (one per party).
    pub lambda: Vec<f64>,
    /// `α_t`.
    pub alpha: f64,
    /// Observation noise variance `σ²` of the information term.
    pub noise_var: f64,
    /// Score the fairest assignment of the batch (unordered batch).
    pub permute: bool,
    /// BO-IFU (Sim et al. C.6): score `Σ_k w_k μ_(k-th lowest)` (the Gini welfare of the
    /// batch's means, `w_1 > … > w_n`), using only the ranking of `λ` (for the assignment:
    /// the k-th highest mean to the party with the k-th lowest `λ`), not its values. C.6's
    /// `Σ_i w_i φ_λ(μ)` is ambiguous in its order; this reading is the one under which "a
    /// smaller ρ makes BO-IFU select X_t with more similar/fair μ values", as C.6 reports
    /// (the k-th highest, used before, makes a smaller ρ spread the means instead; test).
    /// Needs `permute`.
    pub rank_only: bool,
}

impl FairBatchUcb<'_> {
    /// Check sizes and values.
    pub fn validate(&self) -> Result<()> {
        if self.lambda.is_empty() {
            return Err(Error::invalid(
                "parties",
                "needs at least one party (n >= 1)",
            ));
        }
        agora_core::check_finite_slice("lambda", &self.lambda)?;
        check_alpha_noise(self.alpha, self.noise_var)
    }

    fn batch(&self, x: &[f64]) -> Mat<f64> {
        let d = self.gp.dim();
        Mat::from_fn(self.lambda.len(), d, |i, j| x[i * d + j])
    }

    /// The welfare term and its gradient in `μ`.
    fn welfare_term(&self, mu: &[f64]) -> (f64, Vec<f64>) {
        let n = mu.len();
        if !self.permute {
            let u: Vec<f64> = self.lambda.iter().zip(mu).map(|(l, m)| l + m).collect();
            return self.welfare.value_grad(&u);
        }
        if self.rank_only {
            // Σ_k w_k μ_(k-th lowest): the welfare of the means alone.
            return self.welfare.value_grad(mu);
        }
        // k-th lowest λ + k-th highest μ, then the welfare of those sums.
        let lam_order = ascending_order(&self.lambda);
        let mut mu_order = ascending_order(mu);
        mu_order.reverse();
        let u: Vec<f64> = (0..n)
            .map(|k| self.lambda[lam_order[k]] + mu[mu_order[k]])
            .collect();
        let (v, gu) = self.welfare.value_grad(&u);
        let mut g = vec![0.0; n];
        for k in 0..n {
            g[mu_order[k]] = gu[k];
        }
        (v, g)
    }

    /// Which batch input each party gets: `perm[party] = input index` (the identity
    /// without `permute`).
    pub fn assign(&self, x: &[f64]) -> Result<Vec<usize>> {
        let n = self.lambda.len();
        if !self.permute {
            return Ok((0..n).collect());
        }
        let (mu, _) = self.gp.predict(self.batch(x).as_ref())?;
        fairest_assignment(&self.lambda, &mu)
    }
}

impl Acquisition for FairBatchUcb<'_> {
    fn dim(&self) -> usize {
        self.lambda.len() * self.gp.dim()
    }

    fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
        let xs = self.batch(x);
        let (mu, cov) = self.gp.predict_cov(xs.as_ref())?;
        let (w, gw) = self.welfare_term(&mu);
        let (info, g_info) = batch_information(&cov, self.noise_var)?;
        let explore = (self.alpha * info).max(0.0).sqrt();
        if let Some(g) = grad {
            // d sqrt(α I) = α / (2 sqrt(α I)) dI; zero where the information vanishes.
            let scale = if explore > 1e-12 {
                self.alpha / (2.0 * explore)
            } else {
                0.0
            };
            let gc = Mat::from_fn(cov.nrows(), cov.nrows(), |i, j| scale * g_info[(i, j)]);
            let vjp = self.gp.joint_vjp(xs.as_ref(), &gw, gc.as_ref())?;
            let d = self.gp.dim();
            for i in 0..self.lambda.len() {
                for j in 0..d {
                    g[i * d + j] = vjp[(i, j)];
                }
            }
        }
        Ok(w + explore)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_gp::{Scale, Stationary, StationaryKind};
    use agora_math::fd::{Tol, check_gradient};

    fn gp() -> ExactGp {
        let x = Mat::from_fn(10, 2, |i, j| ((i * 5 + j * 3) % 9) as f64 / 9.0);
        let y: Vec<f64> = (0..10).map(|i| (i as f64 * 0.9).cos()).collect();
        let k = Box::new(Scale::new(
            Box::new(Stationary::ard(StationaryKind::Rbf, 2, 0.3)),
            0.6,
        ));
        ExactGp::new(x, &y, k, 0.01, 0.2).unwrap()
    }

    #[test]
    fn information_closed_forms() {
        // One point: ½ log(1 + v/σ²); two copies of one point: ½ log(1 + 2v/σ²).
        let one = Mat::from_fn(1, 1, |_, _| 0.3);
        assert!(
            (batch_information(&one, 0.01).unwrap().0 - 0.5 * (1.0f64 + 30.0).ln()).abs() < 1e-12
        );
        let two = Mat::from_fn(2, 2, |_, _| 0.3);
        assert!(
            (batch_information(&two, 0.01).unwrap().0 - 0.5 * (1.0f64 + 60.0).ln()).abs() < 1e-10
        );
        assert_eq!(vary_c1_factor(&[1.0, 1.0, 1.0]), 1.0);
        let f = vary_c1_factor(&[1.0, 0.8, 0.64]);
        assert!((f - 0.968_254).abs() < 1e-6, "{f}");
        assert!(
            (alpha_t(0.08, 5.0, &[1.0; 3], 6, 11) - 0.08 * 3.0 * 6.0 * 55f64.ln()).abs() < 1e-12
        );
    }

    #[test]
    fn gradients_match_finite_differences_and_assignment_is_fair() {
        let gp = gp();
        for (permute, rank_only) in [(false, false), (true, false), (true, true)] {
            let acq = FairBatchUcb {
                rank_only,
                gp: &gp,
                welfare: Welfare::gini(0.4).unwrap(),
                lambda: vec![3.0, 1.0, 2.2],
                alpha: 0.7,
                noise_var: 0.01,
                permute,
            };
            acq.validate().unwrap();
            let x = [0.15, 0.8, 0.5, 0.35, 0.77, 0.6];
            let mut g = [0.0; 6];
            acq.value_grad(&x, Some(&mut g)).unwrap();
            let value = |z: &[f64]| acq.value_grad(z, None).unwrap();
            let what = format!("permute={permute}");
            check_gradient(value, &x, 1e-6, &g, Tol::Abs(1e-5), &what);
            let perm = acq.assign(&x).unwrap();
            if permute {
                // Party 1 (lowest λ) gets the input with the highest mean.
                let (mu, _) = gp.predict(acq.batch(&x).as_ref()).unwrap();
                let top = (0..3).max_by(|a, b| mu[*a].total_cmp(&mu[*b])).unwrap();
                assert_eq!(perm[1], top);
            } else {
                assert_eq!(perm, vec![0, 1, 2]);
            }
        }
        // At ρ = 1 the argmax does not depend on λ: values differ by the constant Σλ.
        let mk = |lambda: Vec<f64>| FairBatchUcb {
            gp: &gp,
            welfare: Welfare::gini(1.0).unwrap(),
            lambda,
            alpha: 0.5,
            noise_var: 0.01,
            permute: false,
            rank_only: false,
        };
        let (a, b) = (mk(vec![0.0; 3]), mk(vec![1.0, 5.0, 2.0]));
        for x in [
            [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
            [0.9, 0.1, 0.4, 0.4, 0.2, 0.8],
        ] {
            let d = b.value_grad(&x, None).unwrap() - a.value_grad(&x, None).unwrap();
            assert!((d - 8.0).abs() < 1e-12);
        }
        // BO-IFU's welfare term is Σ_k w_k μ_(k-th lowest) (brute force over the sorted
        // means), so at ρ < 1 of two batches with the same mean sum the one with closer means
        // scores higher (C.6: a smaller ρ selects more similar μ values).
        let ifu = |rho: f64| FairBatchUcb {
            gp: &gp,
            welfare: Welfare::gini(rho).unwrap(),
            lambda: vec![3.0, 1.0, 2.2],
            alpha: 0.0,
            noise_var: 0.01,
            permute: true,
            rank_only: true,
        };
        let mu = [0.9, -0.2, 0.4];
        let (v, g) = ifu(0.4).welfare_term(&mu);
        let w = Welfare::gini(0.4).unwrap().weights(3);
        let mut sorted = mu;
        sorted.sort_by(f64::total_cmp);
        let brute: f64 = (0..3).map(|k| w[k] * sorted[k]).sum();
        assert!((v - brute).abs() < 1e-12, "{v} vs {brute}");
        assert!((g[1] - w[0]).abs() < 1e-12 && (g[0] - w[2]).abs() < 1e-12);
        let (close, spread) = ([0.3, 0.35, 0.35], [1.0, -0.3, 0.3]);
        assert!(ifu(0.4).welfare_term(&close).0 > ifu(0.4).welfare_term(&spread).0);
        let at_one = (
            ifu(1.0).welfare_term(&close).0,
            ifu(1.0).welfare_term(&spread).0,
        );
        assert!((at_one.0 - at_one.1).abs() < 1e-12, "ρ = 1: the sum only");
        let bad = FairBatchUcb {
            gp: &gp,
            welfare: Welfare::Utilitarian,
            lambda: vec![],
            alpha: 1.0,
            noise_var: 0.01,
            permute: false,
            rank_only: false,
        };
        assert!(bad.validate().unwrap_err().to_string().contains("n >= 1"));
    }
}
