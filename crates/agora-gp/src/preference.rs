//! Gaussian-process preference learning from pairwise comparisons (Chu & Ghahramani 2005,
//! "Preference learning with Gaussian processes", ICML), with the Laplace approximation.
//!
//! A latent utility `f ~ GP(m0, k)` lives at the unique compared points. Comparison `k`
//! says item `w_k` beat item `l_k`; with `Δ_k = f_{w_k} − f_{l_k}` and a per-comparison
//! noise scale `σ_k` (1 unless a heteroscedastic noise model sets it):
//!
//! - probit: `P = Φ(Δ / (√2 σ))` (independent N(0, σ²) noise on each utility);
//! - Bradley–Terry: `P = sigmoid(Δ / σ)`.
//!
//! The MAP `f̂` minimizes the convex `S(f) = ½ (f − m0)ᵀ K⁻¹ (f − m0) − Σ log P_k` and is
//! found by Newton's method with an Armijo backtracking line search (globally convergent;
//! contradictory and repeated comparisons only change the curvature). With
//! `W = Dᵀ diag(λ) D` the likelihood's curvature and `A = K⁻¹ + W`:
//!
//! - mean `m0 + k*ᵀ K⁻¹ (f̂ − m0)`, covariance `k(x*, x*') − k*ᵀ (K + W⁻¹)⁻¹ k*'`
//!   with `(K + W⁻¹)⁻¹ = K⁻¹ − K⁻¹ A⁻¹ K⁻¹` (valid for singular W);
//! - Laplace evidence `Σ log P_k(f̂) − ½ (f̂ − m0)ᵀ K⁻¹ (f̂ − m0) − ½ log det(I + K W)`
//!   (Chu & Ghahramani Eq. 12; R&W Eq. 3.32), with its exact gradient in the kernel
//!   hyperparameters including the implicit dependence of `f̂` (R&W Eq. 5.22–5.24, with a
//!   non-diagonal W).
//!
//! BoTorch's `PairwiseGP` evaluates the probit at `z` clamped to `[−3, 3]`
//! (../shared/fixtures/preference-gp/CONVENTIONS.md §3); agora's default is the pure probit
//! and [`PrefLikelihood::ProbitClamped`] reproduces BoTorch exactly.

use crate::kernel::{Kernel, ParamKind, Scale, Stationary, StationaryKind};
use crate::prior::Prior;
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use agora_math::optim::{self, LbfgsbOptions};
use agora_math::special::{log_ndtr, log_norm_pdf};
use faer::{Mat, MatRef};

/// The comparison likelihood.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefLikelihood {
    /// `Φ(Δ / (√2 σ))`.
    Probit,
    /// BoTorch's probit: value, slope and curvature taken at `z` clamped to `[−c, c]`
    /// (the negative log-likelihood continued linearly beyond).
    ProbitClamped(f64),
    /// `sigmoid(Δ / σ)`.
    BradleyTerry,
}

/// One comparison between two rows of the point set.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Comparison {
    /// Row of the preferred point.
    pub winner: usize,
    /// Row of the other point.
    pub loser: usize,
    /// Noise scale σ of this comparison (1 = the model's default reliability).
    pub scale: f64,
}

impl Comparison {
    /// `winner ≻ loser` with unit noise scale.
    pub fn new(winner: usize, loser: usize) -> Comparison {
        Comparison {
            winner,
            loser,
            scale: 1.0,
        }
    }
}

/// Per-comparison likelihood terms as functions of `Δ = f_w − f_l`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Terms {
    /// `log P` as the MAP objective sees it (continued linearly beyond a clamp).
    pub(crate) lp: f64,
    /// `log P` as the evidence uses it (at the clamped z).
    pub(crate) lp_evidence: f64,
    /// `d log P / dΔ`.
    pub(crate) r: f64,
    /// `λ = −d² log P / dΔ²` (at the clamped z).
    pub(crate) lam: f64,
    /// `dλ/dΔ` (0 beyond a clamp, where λ is constant).
    pub(crate) dlam: f64,
}

pub(crate) fn terms(lik: PrefLikelihood, delta: f64, scale: f64) -> Terms {
    match lik {
        PrefLikelihood::Probit | PrefLikelihood::ProbitClamped(_) => {
            let c = std::f64::consts::SQRT_2 * scale;
            let z = delta / c;
            let (zc, clamped) = match lik {
                PrefLikelihood::ProbitClamped(b) if z.abs() > b => (z.clamp(-b, b), true),
                _ => (z, false),
            };
            // h = φ/Φ (inverse Mills ratio), in log space for the far tail.
            let lpc = log_ndtr(zc);
            let h = (log_norm_pdf(zc) - lpc).exp();
            let d2 = -h * (h + zc); // d² log Φ / dz² (= h')
            let d3 = -(d2 * (h + zc) + h * (d2 + 1.0)); // d³ log Φ / dz³
            Terms {
                lp: lpc + h * (z - zc),
                lp_evidence: lpc,
                r: h / c,
                lam: -d2 / (c * c),
                dlam: if clamped { 0.0 } else { -d3 / (c * c * c) },
            }
        }
        PrefLikelihood::BradleyTerry => {
            let u = delta / scale;
            // log sigmoid(u) = −softplus(−u), computed stably.
            let lp = if u > 0.0 {
                -(-u).exp().ln_1p()
            } else {
                u - u.exp().ln_1p()
            };
            let s = 1.0 / (1.0 + (-u).exp()); // sigmoid(u)
            let sm = 1.0 - s; // sigmoid(−u)
            Terms {
                lp,
                lp_evidence: lp,
                r: sm / scale,
                lam: s * sm / (scale * scale),
                dlam: s * sm * (1.0 - 2.0 * s) / (scale * scale * scale),
            }
        }
    }
}

/// A fitted (or fixed-hyperparameter) Laplace preference GP.
#[derive(Debug, Clone)]
pub struct PreferenceGp {
    kernel: Box<dyn Kernel>,
    lik: PrefLikelihood,
    mean0: f64,
    x: Mat<f64>,
    comps: Vec<Comparison>,
    f: Vec<f64>,
    chol_k: Cholesky,
    kinv: Mat<f64>,
    alpha: Vec<f64>,
    lambda: Vec<f64>,
    dlambda: Vec<f64>,
    chol_a: Cholesky,
    log_evidence: f64,
    newton_iters: usize,
}

/// Check points and comparisons; errors name the field.
pub fn check_comparisons(n: usize, comps: &[Comparison]) -> Result<()> {
    if comps.is_empty() {
        return Err(Error::invalid(
            "comparisons",
            "needs at least one comparison",
        ));
    }
    for (k, c) in comps.iter().enumerate() {
        for (name, i) in [("winner", c.winner), ("loser", c.loser)] {
            if i >= n {
                return Err(Error::invalid(
                    format!("comparisons[{k}].{name}"),
                    format!("unknown point {i}; points are 0..{n}"),
                ));
            }
        }
        if c.winner == c.loser {
            return Err(Error::invalid(
                format!("comparisons[{k}]"),
                format!("compares point {} with itself", c.winner),
            ));
        }
        if !(c.scale.is_finite() && c.scale > 0.0) {
            return Err(Error::invalid(
                format!("comparisons[{k}].scale"),
                format!("must be a positive finite number, got {}", c.scale),
            ));
        }
    }
    Ok(())
}

/// Merge rows that coincide within `tol` in every coordinate (BoTorch uses 1e-4) and
/// re-index the comparisons. Returns the unique rows, the new comparisons and, for each
/// input row, its unique row.
pub fn merge_duplicates(
    points: &[Vec<f64>],
    comps: &[Comparison],
    tol: f64,
) -> (Vec<Vec<f64>>, Vec<Comparison>, Vec<usize>) {
    let mut unique: Vec<Vec<f64>> = Vec::new();
    let mut map = Vec::with_capacity(points.len());
    for p in points {
        let found = unique
            .iter()
            .position(|u| u.iter().zip(p).all(|(a, b)| (a - b).abs() <= tol));
        match found {
            Some(i) => map.push(i),
            None => {
                map.push(unique.len());
                unique.push(p.clone());
            }
        }
    }
    let comps = comps
        .iter()
        .map(|c| Comparison {
            winner: map.get(c.winner).copied().unwrap_or(usize::MAX),
            loser: map.get(c.loser).copied().unwrap_or(usize::MAX),
            scale: c.scale,
        })
        .collect();
    (unique, comps, map)
}

struct Mode {
    f: Vec<f64>,
    lambda: Vec<f64>,
    dlambda: Vec<f64>,
    loglik: f64,
    chol_a: Cholesky,
    iters: usize,
}

/// `K⁻¹` as a dense symmetric matrix, and `W = Dᵀ diag(λ) D` added into a matrix.
fn add_w(a: &mut Mat<f64>, comps: &[Comparison], lambda: &[f64]) {
    for (c, l) in comps.iter().zip(lambda) {
        let (w, s) = (c.winner, c.loser);
        a[(w, w)] += l;
        a[(s, s)] += l;
        a[(w, s)] -= l;
        a[(s, w)] -= l;
    }
}

/// Newton with Armijo backtracking on `S(f)`.
fn find_mode(
    lik: PrefLikelihood,
    mean0: f64,
    comps: &[Comparison],
    chol_k: &Cholesky,
    kinv: &Mat<f64>,
    start: Option<&[f64]>,
) -> Result<Mode> {
    let n = chol_k.dim();
    let eval = |f: &[f64]| -> (f64, f64, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        // (S, loglik, grad loglik wrt f, λ, λ', K⁻¹(f − m0))
        let mut ll = 0.0;
        let mut g = vec![0.0; n];
        let mut lam = Vec::with_capacity(comps.len());
        let mut dlam = Vec::with_capacity(comps.len());
        for c in comps {
            let t = terms(lik, f[c.winner] - f[c.loser], c.scale);
            ll += t.lp;
            g[c.winner] += t.r;
            g[c.loser] -= t.r;
            lam.push(t.lam);
            dlam.push(t.dlam);
        }
        let centred: Vec<f64> = f.iter().map(|v| v - mean0).collect();
        // K⁻¹(f − m0) by two triangular solves: more accurate than a product with K⁻¹.
        let kf = chol_k.solve_vec(&centred);
        let quad: f64 = centred.iter().zip(&kf).map(|(a, b)| a * b).sum();
        (0.5 * quad - ll, ll, g, lam, dlam, kf)
    };
    // A warm start (the mode for other hyperparameters or data) can carry components along
    // K's near-null directions that K⁻¹ magnifies enormously; start from the prior mean
    // whenever that is better.
    let prior_start = vec![mean0; n];
    let at_prior = eval(&prior_start);
    let (mut f, first) = match start {
        Some(s) if s.len() == n && s.iter().all(|v| v.is_finite()) => {
            let at_start = eval(s);
            if at_start.0 < at_prior.0 {
                (s.to_vec(), at_start)
            } else {
                (prior_start, at_prior)
            }
        }
        _ => (prior_start, at_prior),
    };
    let (mut s_val, mut ll, mut g, mut lam, mut dlam, mut kf) = first;
    let mut iters = 0;
    for it in 0..200 {
        iters = it + 1;
        // ∇S = K⁻¹(f − m0) − ∇ log P.
        let grad: Vec<f64> = (0..n).map(|i| kf[i] - g[i]).collect();
        let gmax = grad.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if gmax < 1e-10 * (1.0 + s_val.abs()) {
            break;
        }
        let mut a = kinv.clone();
        add_w(&mut a, comps, &lam);
        let chol_a = Cholesky::new(a.as_ref())?;
        let step: Vec<f64> = chol_a.solve_vec(&grad).into_iter().map(|v| -v).collect();
        let slope: f64 = grad.iter().zip(&step).map(|(a, b)| a * b).sum();
        if slope >= 0.0 {
            break;
        }
        let mut t = 1.0;
        let mut accepted = false;
        for _ in 0..60 {
            let trial: Vec<f64> = f.iter().zip(&step).map(|(a, b)| a + t * b).collect();
            let out = eval(&trial);
            if out.0.is_finite() && out.0 <= s_val + 1e-4 * t * slope {
                f = trial;
                let decrease = s_val - out.0;
                (s_val, ll, g, lam, dlam, kf) = out;
                accepted = true;
                // At round-off level nothing more can be gained.
                if decrease <= 1e-14 * (1.0 + s_val.abs()) {
                    t = 0.0;
                }
                break;
            }
            t *= 0.5;
        }
        if !accepted || t == 0.0 {
            break;
        }
    }
    let _ = ll;
    let mut a = kinv.clone();
    add_w(&mut a, comps, &lam);
    let chol_a = Cholesky::new(a.as_ref())?;
    // The evidence uses log P at the clamped z (CONVENTIONS.md §6).
    let ll: f64 = comps
        .iter()
        .map(|c| terms(lik, f[c.winner] - f[c.loser], c.scale).lp_evidence)
        .sum();
    if f.iter().any(|v| !v.is_finite()) || !ll.is_finite() {
        return Err(Error::Numerical("preference GP mode is not finite".into()));
    }
    Ok(Mode {
        f,
        lambda: lam,
        dlambda: dlam,
        loglik: ll,
        chol_a,
        iters,
    })
}

impl PreferenceGp {
    /// A preference GP with fixed hyperparameters; solves for the MAP utility.
    /// `x` holds the unique points (merge duplicates first, see [`merge_duplicates`]).
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
        let k = kernel.gram(x.as_ref());
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

    fn check_inputs(&self, xs: MatRef<'_, f64>) -> Result<()> {
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

/// How a [`PreferenceGp`]'s hyperparameters are fitted: maximize log evidence plus log
/// hyperpriors with L-BFGS-B in log space.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefConfig {
    /// Radial profile of the ARD kernel (wrapped in an output scale).
    pub kernel: StationaryKind,
    /// The likelihood.
    pub likelihood: PrefLikelihood,
    /// Prior on each lengthscale.
    pub lengthscale_prior: Prior,
    /// Prior on the output scale.
    pub outputscale_prior: Prior,
    /// Lengthscale bounds.
    pub lengthscale_bounds: (f64, f64),
    /// Output-scale bounds.
    pub outputscale_bounds: (f64, f64),
    /// Starting lengthscale.
    pub init_lengthscale: f64,
    /// Starting output scale.
    pub init_outputscale: f64,
    /// L-BFGS-B settings.
    pub optimizer: LbfgsbOptions,
}

impl PrefConfig {
    /// BoTorch 0.18 `PairwiseGP` defaults (RESULTS.md §2): scaled RBF ARD, lengthscale
    /// prior Gamma(2.4, 2.7) with `l ≥ 1e-4` and start at its mode 0.5185, output scale
    /// SmoothedBoxPrior(0.01, 100, 0.01) on `[0.005, 200]` starting at 1, probit
    /// likelihood (unclamped: see the module docs), scipy's L-BFGS-B defaults.
    pub fn botorch() -> PrefConfig {
        PrefConfig {
            kernel: StationaryKind::Rbf,
            likelihood: PrefLikelihood::Probit,
            lengthscale_prior: Prior::Gamma {
                alpha: 2.4,
                beta: 2.7,
            },
            outputscale_prior: Prior::SmoothedBox {
                a: 0.01,
                b: 100.0,
                sigma: 0.01,
            },
            lengthscale_bounds: (1e-4, 1e3),
            outputscale_bounds: (0.005, 200.0),
            init_lengthscale: 1.4 / 2.7,
            init_outputscale: 1.0,
            optimizer: LbfgsbOptions::default(),
        }
    }

    /// The kernel at its starting values.
    pub fn build_kernel(&self, d: usize) -> Box<dyn Kernel> {
        Box::new(Scale::new(
            Box::new(Stationary::ard(self.kernel, d, self.init_lengthscale)),
            self.init_outputscale,
        ))
    }
}

/// What a preference-GP fit did.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefFitReport {
    /// Final `−(log evidence + log hyperpriors)`.
    pub loss: f64,
    /// Evidence evaluations.
    pub evals: usize,
}

impl PreferenceGp {
    /// Fit kernel hyperparameters by maximizing the Laplace evidence plus hyperpriors, from
    /// `warm` (kernel log-parameters) when given, else from the configured start; every
    /// evaluation warm-starts Newton from the last mode.
    pub fn fit(
        x: Mat<f64>,
        comps: Vec<Comparison>,
        cfg: &PrefConfig,
        warm: Option<&[f64]>,
    ) -> Result<(PreferenceGp, PrefFitReport)> {
        let d = x.ncols();
        let kernel = cfg.build_kernel(d);
        let kinds = kernel.param_kinds();
        let bounds: Vec<(f64, f64)> = kinds
            .iter()
            .map(|k| {
                let (lo, hi) = match k {
                    ParamKind::Lengthscale => cfg.lengthscale_bounds,
                    ParamKind::Outputscale => cfg.outputscale_bounds,
                };
                (lo.ln(), hi.ln())
            })
            .collect();
        // Validate once with the starting kernel (clear errors before optimizing).
        let first = PreferenceGp::new(x.clone(), comps.clone(), kernel.clone(), cfg.likelihood)?;
        let last_f = std::sync::Mutex::new(first.f.clone());
        let objective = |p: &[f64], grad: &mut [f64]| -> Result<f64> {
            let mut k = kernel.clone();
            k.set_params(p)?;
            let start = last_f.lock().map(|f| f.clone()).ok();
            let gp = PreferenceGp::with_start(
                x.clone(),
                comps.clone(),
                k,
                cfg.likelihood,
                0.0,
                start.as_deref(),
            )?;
            if let Ok(mut f) = last_f.lock() {
                f.clone_from(&gp.f);
            }
            let ge = gp.log_evidence_grad();
            let mut lp = 0.0;
            for (i, kind) in kinds.iter().enumerate() {
                let prior = match kind {
                    ParamKind::Lengthscale => cfg.lengthscale_prior,
                    ParamKind::Outputscale => cfg.outputscale_prior,
                };
                let (l, dl) = prior.log_density_grad(p[i]);
                lp += l;
                grad[i] = -(ge[i] + dl);
            }
            Ok(-(gp.log_evidence + lp))
        };
        let clamp = |v: Vec<f64>| -> Vec<f64> {
            v.iter()
                .zip(&bounds)
                .map(|(x, (l, h))| x.clamp(*l, *h))
                .collect()
        };
        // One start: the warm start when given (consecutive fits in a study change little),
        // the configured initial values otherwise.
        let starts = match warm {
            Some(w) if w.len() == kinds.len() && w.iter().all(|v| v.is_finite()) => {
                vec![clamp(w.to_vec())]
            }
            _ => vec![clamp(kernel.params())],
        };
        let mut best: Option<optim::Minimum> = None;
        let mut evals = 0;
        for s in &starts {
            // Sequential: each evaluation warm-starts the mode from the previous one.
            let m = optim::minimize(&objective, s, &bounds, cfg.optimizer)?;
            evals += m.evals;
            if best.as_ref().is_none_or(|b| m.f < b.f) {
                best = Some(m);
            }
        }
        let best = best.ok_or_else(|| Error::Numerical("preference GP fit failed".into()))?;
        let mut k = kernel;
        k.set_params(&best.x)?;
        let start = last_f.lock().map(|f| f.clone()).ok();
        let gp = PreferenceGp::with_start(x, comps, k, cfg.likelihood, 0.0, start.as_deref())?;
        Ok((
            gp,
            PrefFitReport {
                loss: best.f,
                evals,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn likelihood_terms_match_finite_differences() {
        for lik in [PrefLikelihood::Probit, PrefLikelihood::BradleyTerry] {
            for (delta, scale) in [(0.3, 1.0), (-2.0, 0.7), (5.0, 1.3), (-9.0, 1.0)] {
                let Terms { r, lam, dlam, .. } = terms(lik, delta, scale);
                let h = 1e-5;
                let lp = |d: f64| terms(lik, d, scale).lp;
                let r_fd = (lp(delta + h) - lp(delta - h)) / (2.0 * h);
                let lam_fd = -(lp(delta + h) - 2.0 * lp(delta) + lp(delta - h)) / (h * h);
                let dlam_fd = (terms(lik, delta + h, scale).lam - terms(lik, delta - h, scale).lam)
                    / (2.0 * h);
                assert!(
                    (r - r_fd).abs() < 1e-7 * (1.0 + r.abs()),
                    "{lik:?} {delta}: r {r} vs {r_fd}"
                );
                assert!(
                    (lam - lam_fd).abs() < 1e-4 * (1.0 + lam.abs()),
                    "{lik:?} {delta}: λ {lam} vs {lam_fd}"
                );
                assert!(
                    (dlam - dlam_fd).abs() < 1e-6 * (1.0 + dlam.abs()),
                    "{lik:?} {delta}: λ' {dlam} vs {dlam_fd}"
                );
            }
        }
    }
}
