//! The fitted preference GP: construction at the mode, accessors, and the evidence
//! gradient.

use super::{Comparison, PrefLikelihood, check_comparisons, find_mode};
use crate::kernel::Kernel;
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use faer::{Mat, MatRef};

/// A fitted (or fixed-hyperparameter) Laplace preference GP.
#[derive(Debug, Clone)]
pub struct PreferenceGp {
    pub(super) kernel: Box<dyn Kernel>,
    pub(super) lik: PrefLikelihood,
    pub(super) mean0: f64,
    pub(super) x: Mat<f64>,
    pub(super) comps: Vec<Comparison>,
    pub(super) f: Vec<f64>,
    pub(super) chol_k: Cholesky,
    pub(super) kinv: Mat<f64>,
    pub(super) alpha: Vec<f64>,
    pub(super) lambda: Vec<f64>,
    pub(super) dlambda: Vec<f64>,
    pub(super) chol_a: Cholesky,
    pub(super) log_evidence: f64,
    pub(super) newton_iters: usize,
    pub(super) nugget: f64,
}

impl PreferenceGp {
    /// A preference GP with fixed hyperparameters; solves for the MAP utility.
    /// `x` holds the unique points (merge duplicates first, see [`merge_duplicates`](super::merge_duplicates)).
    pub fn new(
        x: Mat<f64>,
        comps: Vec<Comparison>,
        kernel: Box<dyn Kernel>,
        lik: PrefLikelihood,
    ) -> Result<PreferenceGp> {
        PreferenceGp::with_start(x, comps, kernel, lik, 0.0, None)
    }

    /// As [`PreferenceGp::new`], with a prior mean and a starting utility for Newton.
    pub fn with_start(
        x: Mat<f64>,
        comps: Vec<Comparison>,
        kernel: Box<dyn Kernel>,
        lik: PrefLikelihood,
        mean0: f64,
        start: Option<&[f64]>,
    ) -> Result<PreferenceGp> {
        PreferenceGp::with_nugget(x, comps, kernel, lik, (mean0, start), 0.0)
    }

    /// As [`PreferenceGp::with_start`] (`(mean0, start)`), with prior covariance
    /// `K + nugget·I` of the utilities at the points (BOAP's `K_σ`, Eq. 4–5); covariances
    /// with new points are the kernel's alone.
    ///
    /// Errors: as [`PreferenceGp::with_start`]; a negative or non-finite `nugget`.
    pub fn with_nugget(
        x: Mat<f64>,
        comps: Vec<Comparison>,
        kernel: Box<dyn Kernel>,
        lik: PrefLikelihood,
        (mean0, start): (f64, Option<&[f64]>),
        nugget: f64,
    ) -> Result<PreferenceGp> {
        if !(nugget.is_finite() && nugget >= 0.0) {
            return Err(Error::invalid(
                "nugget",
                format!("must be a non-negative finite variance, got {nugget}"),
            ));
        }
        let n = x.nrows();
        if n == 0 || x.ncols() == 0 {
            return Err(Error::invalid(
                "points",
                "needs at least one point with at least one coordinate",
            ));
        }
        for i in 0..n {
            for j in 0..x.ncols() {
                if !x[(i, j)].is_finite() {
                    return Err(Error::invalid(
                        format!("points[{i}][{j}]"),
                        "must be a finite number",
                    ));
                }
            }
        }
        check_comparisons(n, &comps)?;
        agora_core::check_finite("mean0", mean0)?;
        if let PrefLikelihood::ProbitClamped(c) = lik
            && !(c.is_finite() && c > 0.0)
        {
            return Err(Error::invalid(
                "likelihood.clamp",
                format!("must be a positive number, got {c}"),
            ));
        }
        let mut k = kernel.gram(x.as_ref());
        if nugget > 0.0 {
            for i in 0..n {
                k[(i, i)] += nugget;
            }
        }
        let chol_k = Cholesky::new(k.as_ref())?;
        let kinv = chol_k.inverse();
        let mode = find_mode(lik, mean0, &comps, &chol_k, &kinv, start)?;
        let centred: Vec<f64> = mode.f.iter().map(|v| v - mean0).collect();
        let alpha = chol_k.solve_vec(&centred);
        let quad: f64 = centred.iter().zip(&alpha).map(|(a, b)| a * b).sum();
        // log det(I + K W) = log det K + log det A.
        let log_evidence =
            mode.loglik - 0.5 * quad - 0.5 * (chol_k.log_det() + mode.chol_a.log_det());
        Ok(PreferenceGp {
            kernel,
            lik,
            mean0,
            x,
            comps,
            f: mode.f,
            chol_k,
            kinv,
            alpha,
            lambda: mode.lambda,
            dlambda: mode.dlambda,
            chol_a: mode.chol_a,
            log_evidence,
            newton_iters: mode.iters,
            nugget,
        })
    }

    /// MAP utilities at the points.
    pub fn utility(&self) -> &[f64] {
        &self.f
    }

    /// The points (unique rows).
    pub fn x(&self) -> MatRef<'_, f64> {
        self.x.as_ref()
    }

    /// The comparisons.
    pub fn comparisons(&self) -> &[Comparison] {
        &self.comps
    }

    /// The kernel.
    pub fn kernel(&self) -> &dyn Kernel {
        self.kernel.as_ref()
    }

    /// The likelihood.
    pub fn likelihood(&self) -> PrefLikelihood {
        self.lik
    }

    /// Curvature `λ_k = −∂² log P_k / ∂Δ_k²` of each comparison at the mode.
    pub fn curvature(&self) -> &[f64] {
        &self.lambda
    }

    /// Newton iterations the mode took.
    pub fn newton_iters(&self) -> usize {
        self.newton_iters
    }

    /// The variance added to the prior covariance at the points (0 = none).
    pub fn nugget(&self) -> f64 {
        self.nugget
    }

    /// Diagonal jitter the prior covariance needed (0 = none).
    pub fn jitter(&self) -> f64 {
        self.chol_k.jitter()
    }

    /// Input dimension.
    pub fn dim(&self) -> usize {
        self.x.ncols()
    }

    /// Laplace approximation of `log p(comparisons | θ)`, without hyperprior terms.
    pub fn log_evidence(&self) -> f64 {
        self.log_evidence
    }

    /// Gradient of [`PreferenceGp::log_evidence`] in the kernel's log-hyperparameters,
    /// including the implicit dependence of the mode on them.
    pub fn log_evidence_grad(&self) -> Vec<f64> {
        let n = self.x.nrows();
        let kinv = &self.kinv;
        let ainv = self.chol_a.inverse();
        // (K + W⁻¹)⁻¹ = K⁻¹ − K⁻¹ A⁻¹ K⁻¹ = K⁻¹ − Gᵀ G with G = L_A⁻¹ K⁻¹.
        let mut g = kinv.clone();
        self.chol_a.solve_lower_in_place(g.as_mut());
        let mut m2 = kinv.clone();
        faer::linalg::matmul::matmul(
            m2.as_mut(),
            faer::Accum::Add,
            g.transpose(),
            g.as_ref(),
            -1.0,
            agora_math::linalg::par_for(n),
        );
        // Implicit term: s = ∂ log Z / ∂f̂ = −½ Dᵀ (λ' ∘ diag(D A⁻¹ Dᵀ)); u = K⁻¹ A⁻¹ s.
        let mut s = vec![0.0; n];
        for (c, dl) in self.comps.iter().zip(&self.dlambda) {
            let (w, l) = (c.winner, c.loser);
            let q = ainv[(w, w)] + ainv[(l, l)] - 2.0 * ainv[(w, l)];
            let v = -0.5 * dl * q;
            s[w] += v;
            s[l] -= v;
        }
        let u = self.chol_k.solve_vec(&self.chol_a.solve_vec(&s));
        // ∂ log Z/∂θ = Σ_ij M_ij ∂K_ij with M = ½ααᵀ − ½(K + W⁻¹)⁻¹ + sym(u αᵀ).
        let al = &self.alpha;
        let mmat = Mat::from_fn(n, n, |i, j| {
            0.5 * al[i] * al[j] - 0.5 * m2[(i, j)] + 0.5 * (u[i] * al[j] + u[j] * al[i])
        });
        self.kernel.grad_contract(self.x.as_ref(), mmat.as_ref())
    }
}
