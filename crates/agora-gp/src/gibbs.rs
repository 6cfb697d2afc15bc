//! The kernel of BOAP's human arm (Arm-𝔥): an ARD squared exponential on the design `x`
//! times, for each abstract property `i`, a Gibbs (spatially varying lengthscale) kernel on
//! the normalised rank-GP mean `μ̄_i`, whose lengthscale grows with the rank GP's
//! uncertainty `σ̄_i` (Kumar A V et al. 2024, "Enhanced Bayesian Optimization via
//! Preferential Modeling of Abstract Properties", arXiv:2402.17343, Eq. 6 and App. A.4.1;
//! ../shared/notes/boap.md §2.4). With `l_j` the design lengthscales and
//! `ℓ_i = ℓ_i(x)`, `ℓ′_i = ℓ_i(x′)`:
//!
//! `k(x̃, x̃′) = exp(−½ Σ_j (x_j − x′_j)²/l_j²) · Π_i sqrt(2 ℓ_i ℓ′_i/(ℓ_i² + ℓ′_i²)) ·
//! exp(−(μ̄_i − μ̄′_i)²/(ℓ_i² + ℓ′_i²))`, with `ℓ_i(x) = max(α_i σ̄_i(x), floor)`.
//!
//! Each input row is `[x_1..x_d, μ̄_1..μ̄_m, σ̄_1..σ̄_m]` (see [`augment`]). The `σ̄` columns
//! only set lengthscales: they never enter a distance. `σ_f² = 1` (outputs standardised),
//! so `k(x̃, x̃) = 1`. Each Gibbs factor is positive semidefinite for any assignment of
//! lengthscales to points (Gibbs 1997; Paciorek & Schervish 2004), so the product is too.
//!
//! Decisions on the note's open points (§8):
//! - **A8, α.** One α shared by all properties by default ([`AlphaMode::Shared`], the main
//!   text's scalar α); [`AlphaMode::PerProperty`] gives the bold-**α** reading of A.4.1.
//!   The open interval `(0, 2]` becomes `[ALPHA_BOUNDS.0, 2] = [0.01, 2]`: below `0.01` every
//!   augmented lengthscale sits on the floor anyway (σ̄ rarely exceeds 1).
//! - **A7, floor.** The floor is on the lengthscale, `ℓ = max(α σ̄, floor)`, default
//!   [`DEFAULT_FLOOR`] `= 0.01` (1% of the `[0, 1]` range of `μ̄`). A floor on `σ̄` alone would
//!   not bound `ℓ` away from 0 as α shrinks. Where the floor is active, `ℓ` does not depend
//!   on α or σ̄ and its derivatives are 0 (at the kink the floored side is taken).
//! - **A11, bounds.** `l_j ∈ [0.1, 1]` (§5 main text), [`LENGTHSCALE_BOUNDS`].
//!
//! Fitting: [`ExactGp::fit`](crate::ExactGp::fit) builds its kernel from a
//! [`GpConfig`](crate::GpConfig) and bounds parameters by [`ParamKind`], which cannot express
//! α's own box, so [`fit_augmented`] maximises the log marginal likelihood (Eq. 20) within
//! [`AugmentedGibbs::log_bounds`] and conditions an [`ExactGp`] on the result.

use crate::exact::ExactGp;
use crate::kernel::{Kernel, ParamKind};
use agora_core::{Error, Result};
use agora_math::linalg::Cholesky;
use agora_math::optim::{self, LbfgsbOptions};
use faer::{Mat, MatRef};

/// Box of each design lengthscale `l_j` (paper §5).
pub const LENGTHSCALE_BOUNDS: (f64, f64) = (0.1, 1.0);
/// Box of α: the paper's `(0, 2]` closed at 0.01 (module docs, A8).
pub const ALPHA_BOUNDS: (f64, f64) = (0.01, 2.0);
/// Default floor of the augmented lengthscales, in units of `μ̄` (module docs, A7).
pub const DEFAULT_FLOOR: f64 = 0.01;

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// Whether the properties share one α or each has its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlphaMode {
    /// One α for every property (the paper's main text).
    Shared,
    /// `α_i` per property (the bold **α** of App. A.4.1).
    PerProperty,
}

/// Input rows with each row's `(ℓ_i, above the floor)` per property.
struct Rows<'a> {
    x: MatRef<'a, f64>,
    ells: Vec<Vec<(f64, bool)>>,
}

/// The augmented-input kernel of Arm-𝔥 (module docs). Parameters, in log space:
/// `[log l_1..log l_d, log α]` or `[log l_1..log l_d, log α_1..log α_m]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AugmentedGibbs {
    d: usize,
    m: usize,
    mode: AlphaMode,
    log_ls: Vec<f64>,
    log_alpha: Vec<f64>,
    floor: f64,
}

fn positive(field: &str, v: f64) -> Result<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(
            field,
            format!("must be a positive finite number, got {v}"),
        ))
    }
}

fn check_box(field: &str, (lo, hi): (f64, f64)) -> Result<()> {
    if lo.is_finite() && hi.is_finite() && lo > 0.0 && lo <= hi {
        Ok(())
    } else {
        Err(Error::invalid(
            field,
            format!("needs 0 < lo <= hi, finite; got ({lo}, {hi})"),
        ))
    }
}

impl AugmentedGibbs {
    /// A kernel on `d ≥ 1` design dimensions and `m ≥ 1` properties, starting at
    /// lengthscale `l0` and α `alpha0`, with lengthscale floor `floor`. Errors name `d`, `m`,
    /// `l0`, `alpha0` or `floor`.
    pub fn new(
        d: usize,
        m: usize,
        mode: AlphaMode,
        l0: f64,
        alpha0: f64,
        floor: f64,
    ) -> Result<AugmentedGibbs> {
        if d == 0 {
            return Err(Error::invalid("d", "needs at least one design dimension"));
        }
        if m == 0 {
            return Err(Error::invalid(
                "m",
                "needs at least one abstract property (with none, use an ARD SE kernel)",
            ));
        }
        positive("l0", l0)?;
        positive("alpha0", alpha0)?;
        positive("floor", floor)?;
        let na = match mode {
            AlphaMode::Shared => 1,
            AlphaMode::PerProperty => m,
        };
        Ok(AugmentedGibbs {
            d,
            m,
            mode,
            log_ls: vec![l0.ln(); d],
            log_alpha: vec![alpha0.ln(); na],
            floor,
        })
    }

    /// The paper's set-up: shared α, start `l = 0.5`, `α = 1`, floor [`DEFAULT_FLOOR`].
    pub fn paper(d: usize, m: usize) -> Result<AugmentedGibbs> {
        AugmentedGibbs::new(d, m, AlphaMode::Shared, 0.5, 1.0, DEFAULT_FLOOR)
    }

    /// Number of design dimensions `d`.
    pub fn design_dim(&self) -> usize {
        self.d
    }

    /// Number of abstract properties `m`.
    pub fn properties(&self) -> usize {
        self.m
    }

    /// Width of an input row, `d + 2m`.
    pub fn input_dim(&self) -> usize {
        self.d + 2 * self.m
    }

    /// Shared or per-property α.
    pub fn alpha_mode(&self) -> AlphaMode {
        self.mode
    }

    /// Current design lengthscales `l_1..l_d`.
    pub fn lengthscales(&self) -> Vec<f64> {
        self.log_ls.iter().map(|p| p.exp()).collect()
    }

    /// Current α of each property (`m` values; equal when shared).
    pub fn alphas(&self) -> Vec<f64> {
        (0..self.m).map(|i| self.alpha(i)).collect()
    }

    /// The lengthscale floor.
    pub fn floor(&self) -> f64 {
        self.floor
    }

    fn alpha_index(&self, i: usize) -> usize {
        match self.mode {
            AlphaMode::Shared => 0,
            AlphaMode::PerProperty => i,
        }
    }

    fn alpha(&self, i: usize) -> f64 {
        self.log_alpha[self.alpha_index(i)].exp()
    }

    /// `(ℓ, free)` for property `i` at std `sigma_bar`: `ℓ = max(α_i σ̄, floor)` and whether
    /// it is above the floor (and so moves with α and σ̄). A NaN or negative σ̄ floors.
    fn ell(&self, i: usize, sigma_bar: f64) -> (f64, bool) {
        let l = self.alpha(i) * sigma_bar;
        if l > self.floor {
            (l, true)
        } else {
            (self.floor, false)
        }
    }

    /// The augmented lengthscale `ℓ_i = max(α_i σ̄, floor)` of property `i` at std `sigma_bar`.
    pub fn augmented_lengthscale(&self, i: usize, sigma_bar: f64) -> Result<f64> {
        if i >= self.m {
            return Err(Error::invalid(
                "property",
                format!("must be in 0..{}, got {i}", self.m),
            ));
        }
        agora_core::check_finite("sigma_bar", sigma_bar)?;
        Ok(self.ell(i, sigma_bar).0)
    }

    /// The log-space box of the parameters at the paper's bounds: `l_j ∈ [0.1, 1]`,
    /// `α ∈ [0.01, 2]` ([`LENGTHSCALE_BOUNDS`], [`ALPHA_BOUNDS`]).
    pub fn log_bounds(&self) -> Vec<(f64, f64)> {
        self.box_for(LENGTHSCALE_BOUNDS, ALPHA_BOUNDS)
    }

    /// The log-space box for other bounds on `l_j` and α; errors name `lengthscale_bounds`
    /// or `alpha_bounds` unless `0 < lo <= hi` finite.
    pub fn log_bounds_with(
        &self,
        lengthscale: (f64, f64),
        alpha: (f64, f64),
    ) -> Result<Vec<(f64, f64)>> {
        check_box("lengthscale_bounds", lengthscale)?;
        check_box("alpha_bounds", alpha)?;
        Ok(self.box_for(lengthscale, alpha))
    }

    fn box_for(&self, l: (f64, f64), a: (f64, f64)) -> Vec<(f64, f64)> {
        let mut b = vec![(l.0.ln(), l.1.ln()); self.d];
        b.extend(std::iter::repeat_n(
            (a.0.ln(), a.1.ln()),
            self.log_alpha.len(),
        ));
        b
    }

    /// Check that `x` has `d + 2m` columns, finite entries and `σ̄ ≥ 0`; errors name
    /// `field[i][j]`. The kernel itself never panics on bad rows (NaN results instead).
    pub fn check_inputs(&self, field: &str, x: MatRef<'_, f64>) -> Result<()> {
        crate::check_mat(field, x, self.input_dim())?;
        for r in 0..x.nrows() {
            for j in self.d + self.m..self.input_dim() {
                if x[(r, j)] < 0.0 {
                    return Err(Error::invalid(
                        format!("{field}[{r}][{j}]"),
                        format!("a rank-GP std σ̄ must be >= 0, got {}", x[(r, j)]),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Rows with their augmented lengthscales `ℓ_i` and whether each is above the floor.
    fn rows<'a>(&self, x: MatRef<'a, f64>) -> Rows<'a> {
        let ells = (0..x.nrows())
            .map(|r| {
                (0..self.m)
                    .map(|i| self.ell(i, x[(r, self.d + self.m + i)]))
                    .collect()
            })
            .collect();
        Rows { x, ells }
    }

    /// `log k` between row `r` of `a` and row `c` of `b`, given `1/l_j²`.
    fn log_k(&self, il2: &[f64], a: &Rows<'_>, r: usize, b: &Rows<'_>, c: usize) -> f64 {
        let (a, la, b, lb) = (a.x, &a.ells[r], b.x, &b.ells[c]);
        let mut s = 0.0;
        for (j, il) in il2.iter().enumerate() {
            let dx = a[(r, j)] - b[(c, j)];
            s -= 0.5 * dx * dx * il;
        }
        for i in 0..self.m {
            let (p, q) = (la[i].0, lb[i].0);
            let sum = p * p + q * q;
            let dm = a[(r, self.d + i)] - b[(c, self.d + i)];
            s += 0.5 * (2.0 * p * q / sum).ln() - dm * dm / sum;
        }
        s
    }

    fn inv_l2(&self) -> Vec<f64> {
        self.log_ls.iter().map(|p| (-2.0 * p).exp()).collect()
    }

    fn contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>, k: MatRef<'_, f64>) -> Vec<f64> {
        let n = x.nrows();
        let il2 = self.inv_l2();
        let ells = self.rows(x).ells;
        let mut g = vec![0.0; self.n_params()];
        for c in 0..n {
            for r in 0..n {
                if r == c {
                    continue; // every derivative of k(x, x) = 1 vanishes
                }
                let wk = w[(r, c)] * k[(r, c)];
                if wk == 0.0 {
                    continue;
                }
                // ∂k/∂log l_j = k Δx_j²/l_j².
                for (j, il) in il2.iter().enumerate() {
                    let dx = x[(r, j)] - x[(c, j)];
                    g[j] += wk * dx * dx * il;
                }
                // ∂ log k_i/∂ log ℓ = ½ − ℓ²/S + 2ℓ²Δ²/S², for each end that is free.
                for i in 0..self.m {
                    let ((p, pf), (q, qf)) = (ells[r][i], ells[c][i]);
                    let s = p * p + q * q;
                    let dm = x[(r, self.d + i)] - x[(c, self.d + i)];
                    let t = 2.0 * dm * dm / (s * s);
                    let mut v = 0.0;
                    if pf {
                        v += 0.5 - p * p / s + p * p * t;
                    }
                    if qf {
                        v += 0.5 - q * q / s + q * q * t;
                    }
                    g[self.d + self.alpha_index(i)] += wk * v;
                }
            }
        }
        g
    }
}

impl Kernel for AugmentedGibbs {
    fn box_clone(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
    fn n_params(&self) -> usize {
        self.d + self.log_alpha.len()
    }
    fn params(&self) -> Vec<f64> {
        let mut p = self.log_ls.clone();
        p.extend(&self.log_alpha);
        p
    }
    fn set_params(&mut self, p: &[f64]) -> Result<()> {
        if p.len() != self.n_params() {
            return Err(Error::dim(
                "augmented gibbs params",
                self.n_params(),
                p.len(),
            ));
        }
        agora_core::check_finite_slice("augmented gibbs params", p)?;
        self.log_ls.copy_from_slice(&p[..self.d]);
        self.log_alpha.copy_from_slice(&p[self.d..]);
        Ok(())
    }
    /// All `Lengthscale`: α scales the augmented lengthscales. Its box differs from the
    /// design lengthscales' box; use [`AugmentedGibbs::log_bounds`].
    fn param_kinds(&self) -> Vec<ParamKind> {
        vec![ParamKind::Lengthscale; self.n_params()]
    }
    fn param_names(&self) -> Vec<String> {
        let mut names: Vec<String> = (0..self.d).map(|j| format!("lengthscale[{j}]")).collect();
        if self.mode == AlphaMode::Shared {
            names.push("alpha".into());
        } else {
            names.extend((0..self.log_alpha.len()).map(|i| format!("alpha[{i}]")));
        }
        names
    }
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        let w = self.input_dim();
        if a.ncols() != w || b.ncols() != w {
            return Mat::from_fn(a.nrows(), b.nrows(), |_, _| f64::NAN);
        }
        let il2 = self.inv_l2();
        let (ra, rb) = (self.rows(a), self.rows(b));
        Mat::from_fn(a.nrows(), b.nrows(), |r, c| {
            self.log_k(&il2, &ra, r, &rb, c).exp()
        })
    }
    fn gram(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        let n = x.nrows();
        if x.ncols() != self.input_dim() {
            return Mat::from_fn(n, n, |_, _| f64::NAN);
        }
        let il2 = self.inv_l2();
        let rx = self.rows(x);
        let mut k = Mat::zeros(n, n);
        for c in 0..n {
            k[(c, c)] = self.log_k(&il2, &rx, c, &rx, c).exp();
            for r in c + 1..n {
                let v = self.log_k(&il2, &rx, r, &rx, c).exp();
                k[(r, c)] = v;
                k[(c, r)] = v;
            }
        }
        k
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        // The prefactor is 1 and every distance 0 at coincident points.
        vec![1.0; x.nrows()]
    }
    fn grad_contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>) -> Vec<f64> {
        let k = self.gram(x);
        self.contract(x, w, k.as_ref())
    }
    fn grad_contract_with_gram(
        &self,
        x: MatRef<'_, f64>,
        w: MatRef<'_, f64>,
        gram: MatRef<'_, f64>,
    ) -> Vec<f64> {
        self.contract(x, w, gram)
    }
    /// Gradient in every column of the row `x`: design coordinates, `μ̄` (through the
    /// distance) and `σ̄` (through the lengthscale; 0 where it is floored).
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        let w = self.input_dim();
        if x.len() != w || b.ncols() != w {
            return Mat::from_fn(b.nrows(), x.len(), |_, _| f64::NAN);
        }
        let xa = Mat::from_fn(1, w, |_, j| x[j]);
        let k = self.cross(xa.as_ref(), b);
        let il2 = self.inv_l2();
        let ea = self.rows(xa.as_ref()).ells;
        let eb = self.rows(b).ells;
        let mut g = Mat::zeros(b.nrows(), w);
        for r in 0..b.nrows() {
            let kr = k[(0, r)];
            for (j, il) in il2.iter().enumerate() {
                g[(r, j)] = -kr * (x[j] - b[(r, j)]) * il;
            }
            for i in 0..self.m {
                let ((p, pf), (q, _)) = (ea[0][i], eb[r][i]);
                let s = p * p + q * q;
                let dm = x[self.d + i] - b[(r, self.d + i)];
                g[(r, self.d + i)] = -kr * 2.0 * dm / s;
                if pf {
                    // ∂ log k_i/∂ℓ = 1/(2ℓ) − ℓ/S + 2ℓΔ²/S², and ∂ℓ/∂σ̄ = α_i.
                    let dl = 0.5 / p - p / s + 2.0 * p * dm * dm / (s * s);
                    g[(r, self.d + self.m + i)] = kr * dl * self.alpha(i);
                }
            }
        }
        g
    }
}

/// Augmented rows `[x, μ̄, σ̄]` from `x` (`n × d`), the normalised rank-GP means `mu_bar`
/// (`n × m`) and their rescaled stds `sigma_bar` (`n × m`, each `≥ 0`). Errors name the
/// argument and entry.
pub fn augment(
    x: MatRef<'_, f64>,
    mu_bar: MatRef<'_, f64>,
    sigma_bar: MatRef<'_, f64>,
) -> Result<Mat<f64>> {
    let (n, d, m) = (x.nrows(), x.ncols(), mu_bar.ncols());
    for (name, a) in [("mu_bar", mu_bar), ("sigma_bar", sigma_bar)] {
        if a.nrows() != n {
            return Err(Error::dim(format!("{name} rows"), n, a.nrows()));
        }
    }
    crate::check_mat("x", x, d)?;
    crate::check_mat("mu_bar", mu_bar, m)?;
    crate::check_mat("sigma_bar", sigma_bar, m)?;
    for r in 0..n {
        for i in 0..m {
            if sigma_bar[(r, i)] < 0.0 {
                return Err(Error::invalid(
                    format!("sigma_bar[{r}][{i}]"),
                    format!("must be >= 0, got {}", sigma_bar[(r, i)]),
                ));
            }
        }
    }
    Ok(Mat::from_fn(n, d + 2 * m, |r, j| {
        if j < d {
            x[(r, j)]
        } else if j < d + m {
            mu_bar[(r, j - d)]
        } else {
            sigma_bar[(r, j - d - m)]
        }
    }))
}

/// How [`fit_augmented`] fits Arm-𝔥.
#[derive(Debug, Clone, PartialEq)]
pub struct AugmentedFit {
    /// Noise variance `σ_η²` in the units of the `y` given (paper: 0.1 on standardised y).
    pub noise: f64,
    /// Box of the design lengthscales.
    pub lengthscale_bounds: (f64, f64),
    /// Box of α.
    pub alpha_bounds: (f64, f64),
    /// Scrambled-Sobol starts in the log box, besides the kernel's current parameters.
    pub starts: usize,
    /// L-BFGS-B settings.
    pub lbfgs: LbfgsbOptions,
}

impl Default for AugmentedFit {
    /// The paper's settings (σ_η² = 0.1, `l ∈ [0.1, 1]`, `α ∈ [0.01, 2]`) with 10 starts.
    fn default() -> Self {
        AugmentedFit {
            noise: 0.1,
            lengthscale_bounds: LENGTHSCALE_BOUNDS,
            alpha_bounds: ALPHA_BOUNDS,
            starts: 10,
            lbfgs: LbfgsbOptions::default(),
        }
    }
}

/// The result of [`fit_augmented`].
#[derive(Debug, Clone)]
pub struct AugmentedFitResult {
    /// The fitted kernel.
    pub kernel: AugmentedGibbs,
    /// A zero-mean GP with the fitted kernel and the configured noise, conditioned on the
    /// data as given (so in the units of `y`).
    pub gp: ExactGp,
    /// Maximised log marginal likelihood (Eq. 20).
    pub log_marginal_likelihood: f64,
    /// Objective evaluations over all starts.
    pub evals: usize,
}

/// Log marginal likelihood `log N(y | 0, K + noise·I)` (Eq. 20) and its gradient in the
/// kernel's log parameters (Rasmussen & Williams Eq. 5.9).
pub fn log_marginal_likelihood(
    kernel: &AugmentedGibbs,
    x: MatRef<'_, f64>,
    y: &[f64],
    noise: f64,
) -> Result<(f64, Vec<f64>)> {
    let n = y.len();
    let k = kernel.gram(x);
    let mut a = k.clone();
    for i in 0..n {
        a[(i, i)] += noise;
    }
    let chol = Cholesky::new(a.as_ref())?;
    let alpha = chol.solve_vec(y);
    let quad: f64 = y.iter().zip(&alpha).map(|(a, b)| a * b).sum();
    let mll = -0.5 * quad - 0.5 * chol.log_det() - 0.5 * n as f64 * LN_2PI;
    // W = ½(ααᵀ − A⁻¹).
    let mut w = chol.inverse();
    for c in 0..n {
        for r in 0..n {
            w[(r, c)] = 0.5 * (alpha[r] * alpha[c] - w[(r, c)]);
        }
    }
    Ok((mll, kernel.contract(x, w.as_ref(), k.as_ref())))
}

/// Fit Arm-𝔥's `θ_h = {l_1..l_d, α}` by maximising the log marginal likelihood (Eq. 20)
/// with multistart L-BFGS-B in the log box of `cfg`, from `kernel`'s current parameters
/// plus `cfg.starts` Sobol points (scrambled by `seed`). `x` holds augmented rows
/// ([`augment`]); pass standardised `y` to follow the paper (App. A.4.1). Errors name the
/// offending input.
pub fn fit_augmented(
    kernel: &AugmentedGibbs,
    x: MatRef<'_, f64>,
    y: &[f64],
    cfg: &AugmentedFit,
    seed: u64,
) -> Result<AugmentedFitResult> {
    if x.nrows() == 0 {
        return Err(Error::invalid("x", "needs at least one training point"));
    }
    if y.len() != x.nrows() {
        return Err(Error::dim("y", x.nrows(), y.len()));
    }
    agora_core::check_finite_slice("y", y)?;
    kernel.check_inputs("x", x)?;
    positive("noise", cfg.noise)?;
    let bounds = kernel.log_bounds_with(cfg.lengthscale_bounds, cfg.alpha_bounds)?;
    let obj = |p: &[f64], g: &mut [f64]| -> Result<f64> {
        let mut k = kernel.clone();
        k.set_params(p)?;
        let (mll, grad) = log_marginal_likelihood(&k, x, y, cfg.noise)?;
        for (gi, v) in g.iter_mut().zip(grad) {
            *gi = -v;
        }
        Ok(-mll)
    };
    let mut starts = vec![
        kernel
            .params()
            .iter()
            .zip(&bounds)
            .map(|(v, (lo, hi))| v.clamp(*lo, *hi))
            .collect::<Vec<f64>>(),
    ];
    if cfg.starts > 0 {
        for s in agora_math::design::sobol(cfg.starts, bounds.len(), seed)? {
            starts.push(
                s.iter()
                    .zip(&bounds)
                    .map(|(u, (lo, hi))| lo + u * (hi - lo))
                    .collect(),
            );
        }
    }
    let minima = optim::multistart(&obj, &starts, &bounds, cfg.lbfgs)?;
    let evals = minima.iter().map(|m| m.evals).sum();
    let best =
        optim::best(&minima).ok_or_else(|| Error::Numerical("no Arm-h fit succeeded".into()))?;
    let mut fitted = kernel.clone();
    fitted.set_params(&best.x)?;
    let gp = ExactGp::new(x.to_owned(), y, Box::new(fitted.clone()), cfg.noise, 0.0)?;
    Ok(AugmentedFitResult {
        kernel: fitted,
        gp,
        log_marginal_likelihood: -best.f,
        evals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Stationary, StationaryKind, hadamard_sum};
    use agora_math::rng::stream;
    use faer::Side;
    use rand::RngExt;

    /// `n` augmented rows (d, m) with x, μ̄ uniform in [0, 1] and σ̄ uniform in [lo, hi].
    fn rows(n: usize, d: usize, m: usize, (lo, hi): (f64, f64), seed: u64) -> Mat<f64> {
        let mut rng = stream(seed, &[n as u64, d as u64, m as u64]);
        Mat::from_fn(n, d + 2 * m, |_, j| {
            let u: f64 = rng.random();
            if j < d + m { u } else { lo + u * (hi - lo) }
        })
    }

    fn kernel(d: usize, m: usize, mode: AlphaMode) -> AugmentedGibbs {
        let mut k = AugmentedGibbs::new(d, m, mode, 0.5, 1.0, DEFAULT_FLOOR).unwrap();
        let mut p: Vec<f64> = (0..d).map(|j| (0.2 + 0.15 * j as f64).ln()).collect();
        p.extend((0..k.n_params() - d).map(|i| (0.7 + 0.4 * i as f64).ln()));
        k.set_params(&p).unwrap();
        k
    }

    /// Eq. 6 of the paper, one pair at a time, written out independently of the kernel.
    fn eq6(x: &[f64], y: &[f64], ls: &[f64], alphas: &[f64], floor: f64) -> f64 {
        let (d, m) = (ls.len(), alphas.len());
        let mut k = 1.0;
        for j in 0..d {
            k *= (-(x[j] - y[j]).powi(2) / (2.0 * ls[j] * ls[j])).exp();
        }
        for i in 0..m {
            let a = (alphas[i] * x[d + m + i]).max(floor);
            let b = (alphas[i] * y[d + m + i]).max(floor);
            let s = a * a + b * b;
            k *= (2.0 * a * b / s).sqrt() * (-(x[d + i] - y[d + i]).powi(2) / s).exp();
        }
        k
    }

    fn row(x: &Mat<f64>, r: usize) -> Vec<f64> {
        (0..x.ncols()).map(|j| x[(r, j)]).collect()
    }

    #[test]
    fn values_match_eq6_and_sigma_columns_are_not_distances() {
        let k = kernel(2, 2, AlphaMode::PerProperty);
        let x = rows(6, 2, 2, (0.0, 0.5), 1);
        let g = k.gram(x.as_ref());
        for r in 0..6 {
            for c in 0..6 {
                let want = eq6(
                    &row(&x, r),
                    &row(&x, c),
                    &k.lengthscales(),
                    &k.alphas(),
                    0.01,
                );
                assert!(
                    (g[(r, c)] - want).abs() < 1e-14,
                    "({r},{c}) {} vs {want}",
                    g[(r, c)]
                );
            }
        }
        // Same x and μ̄, different σ̄: only the Gibbs prefactor remains,
        // Π_i sqrt(2ab/(a² + b²)) with a = α_i σ̄_i, b = α_i σ̄′_i.
        let a = faer::mat![[0.3, 0.4, 0.6, 0.2]];
        let b = faer::mat![[0.3, 0.4, 0.6, 0.5]];
        let k1 = AugmentedGibbs::new(2, 1, AlphaMode::Shared, 0.5, 1.5, 0.01).unwrap();
        let (p, q): (f64, f64) = (1.5 * 0.2, 1.5 * 0.5);
        let want = (2.0 * p * q / (p * p + q * q)).sqrt();
        assert!((k1.cross(a.as_ref(), b.as_ref())[(0, 0)] - want).abs() < 1e-15);
    }

    #[test]
    fn gram_is_symmetric_with_unit_diagonal_and_equals_cross() {
        for mode in [AlphaMode::Shared, AlphaMode::PerProperty] {
            let k = kernel(3, 2, mode);
            let x = rows(20, 3, 2, (0.0, 0.8), 2);
            let g = k.gram(x.as_ref());
            let c = k.cross(x.as_ref(), x.as_ref());
            let d = k.diag(x.as_ref());
            for r in 0..20 {
                assert_eq!(g[(r, r)], 1.0);
                assert_eq!(d[r], 1.0);
                for s in 0..20 {
                    assert_eq!(g[(r, s)], g[(s, r)]);
                    assert!((g[(r, s)] - c[(r, s)]).abs() < 1e-15);
                }
            }
            // cross(a, b) = cross(b, a)ᵀ.
            let y = rows(7, 3, 2, (0.0, 0.8), 3);
            let ab = k.cross(x.as_ref(), y.as_ref());
            let ba = k.cross(y.as_ref(), x.as_ref());
            for r in 0..20 {
                for s in 0..7 {
                    assert!((ab[(r, s)] - ba[(s, r)]).abs() < 1e-15);
                }
            }
        }
    }

    #[test]
    fn gram_is_positive_semidefinite_on_random_inputs() {
        for (seed, mode, sig) in [
            (4, AlphaMode::Shared, (0.0, 1.0)),
            (5, AlphaMode::PerProperty, (0.0, 0.3)),
            (6, AlphaMode::Shared, (0.001, 0.02)), // mostly on the floor
            (7, AlphaMode::PerProperty, (0.5, 3.0)),
        ] {
            let k = kernel(3, 2, mode);
            let x = rows(80, 3, 2, sig, seed);
            let ev = k
                .gram(x.as_ref())
                .self_adjoint_eigenvalues(Side::Lower)
                .unwrap();
            let min = ev.iter().cloned().fold(f64::INFINITY, f64::min);
            assert!(min >= -1e-10, "seed {seed}: smallest eigenvalue {min}");
        }
    }

    #[test]
    fn constant_sigma_reduces_to_ard_se_on_x_and_mu() {
        let (d, m) = (3, 2);
        // Per property: constant σ̄ = (0.3, 0.12) → ℓ = (α₁·0.3, α₂·0.12).
        for mode in [AlphaMode::Shared, AlphaMode::PerProperty] {
            let k = kernel(d, m, mode);
            let mut x = rows(15, d, m, (0.0, 1.0), 8);
            let mut y = rows(9, d, m, (0.0, 1.0), 9);
            for mat in [&mut x, &mut y] {
                for r in 0..mat.nrows() {
                    mat[(r, d + m)] = 0.3;
                    mat[(r, d + m + 1)] = 0.12;
                }
            }
            let al = k.alphas();
            let mut se = Stationary::on(StationaryKind::Rbf, (0..d + m).collect(), 1.0);
            let mut p: Vec<f64> = k.lengthscales().iter().map(|l| l.ln()).collect();
            p.push((al[0] * 0.3).ln());
            p.push((al[1] * 0.12).ln());
            se.set_params(&p).unwrap();
            let (kg, sg) = (
                k.cross(x.as_ref(), y.as_ref()),
                se.cross(x.as_ref(), y.as_ref()),
            );
            for r in 0..15 {
                for c in 0..9 {
                    assert!((kg[(r, c)] - sg[(r, c)]).abs() < 1e-14);
                }
            }
        }
        // On the floor (σ̄ = 0): the augmented lengthscale is the floor itself.
        let k = AugmentedGibbs::new(1, 1, AlphaMode::Shared, 0.4, 1.0, 0.05).unwrap();
        let a = faer::mat![[0.1, 0.50, 0.0]];
        let b = faer::mat![[0.3, 0.52, 0.0]];
        let want = (-0.5 * (0.2f64 / 0.4).powi(2) - 0.5 * (0.02f64 / 0.05).powi(2)).exp();
        assert!((k.cross(a.as_ref(), b.as_ref())[(0, 0)] - want).abs() < 1e-15);
    }

    #[test]
    fn parameter_gradients_match_central_differences() {
        for (mode, seed) in [(AlphaMode::Shared, 10), (AlphaMode::PerProperty, 11)] {
            let k = kernel(2, 2, mode);
            // σ̄ ∈ [0, 0.3]: a few rows fall on the floor (α σ̄ < 0.01), none near the kink.
            let mut x = rows(12, 2, 2, (0.0, 0.3), seed);
            for r in 0..12 {
                for i in 0..2 {
                    let v = x[(r, 4 + i)];
                    let l = k.alphas()[i] * v;
                    if (l - 0.01).abs() < 2e-3 {
                        x[(r, 4 + i)] = v + 0.01;
                    }
                }
            }
            let mut rng = stream(seed, &[99]);
            let w = Mat::from_fn(12, 12, |_, _| rng.random::<f64>() - 0.5);
            let g = k.grad_contract(x.as_ref(), w.as_ref());
            let gg = k.grad_contract_with_gram(x.as_ref(), w.as_ref(), k.gram(x.as_ref()).as_ref());
            let p0 = k.params();
            assert_eq!(g.len(), p0.len());
            for i in 0..p0.len() {
                assert!((g[i] - gg[i]).abs() < 1e-14);
                let h = 1e-6;
                let f = |delta: f64| {
                    let mut kk = k.clone();
                    let mut p = p0.clone();
                    p[i] += delta;
                    kk.set_params(&p).unwrap();
                    hadamard_sum(w.as_ref(), kk.gram(x.as_ref()).as_ref())
                };
                let fd = (f(h) - f(-h)) / (2.0 * h);
                assert!(
                    (fd - g[i]).abs() < 1e-7 * (1.0 + fd.abs()),
                    "{mode:?} param {i}: fd {fd} vs {}",
                    g[i]
                );
            }
        }
    }

    #[test]
    fn input_gradients_match_central_differences() {
        let k = kernel(2, 2, AlphaMode::PerProperty);
        let b = rows(6, 2, 2, (0.05, 0.5), 12);
        // Second property's σ̄ puts ℓ on the floor: its σ̄ gradient is exactly 0.
        let x = [0.4, 0.7, 0.35, 0.6, 0.2, 0.001];
        let g = k.grad_x(&x, b.as_ref());
        for j in 0..6 {
            let h = 1e-6;
            let (mut xp, mut xm) = (x, x);
            xp[j] += h;
            xm[j] -= h;
            let kp = k.cross(Mat::from_fn(1, 6, |_, c| xp[c]).as_ref(), b.as_ref());
            let km = k.cross(Mat::from_fn(1, 6, |_, c| xm[c]).as_ref(), b.as_ref());
            for r in 0..6 {
                let fd = (kp[(0, r)] - km[(0, r)]) / (2.0 * h);
                assert!(
                    (fd - g[(r, j)]).abs() < 1e-7,
                    "({r},{j}): {fd} vs {}",
                    g[(r, j)]
                );
            }
        }
        assert!((0..6).all(|r| g[(r, 5)] == 0.0));
    }

    #[test]
    fn marginal_likelihood_agrees_with_exact_gp_and_its_gradient_with_differences() {
        let k = kernel(2, 1, AlphaMode::Shared);
        let x = rows(15, 2, 1, (0.05, 0.6), 13);
        let y: Vec<f64> = (0..15)
            .map(|r| (3.0 * x[(r, 0)]).sin() + 2.0 * x[(r, 2)] - 1.0)
            .collect();
        let (mll, g) = log_marginal_likelihood(&k, x.as_ref(), &y, 0.1).unwrap();
        let gp = ExactGp::new(x.clone(), &y, Box::new(k.clone()), 0.1, 0.0).unwrap();
        assert!((mll - gp.log_marginal_likelihood()).abs() < 1e-10);
        let p0 = k.params();
        for i in 0..p0.len() {
            let h = 1e-5;
            let f = |delta: f64| {
                let mut kk = k.clone();
                let mut p = p0.clone();
                p[i] += delta;
                kk.set_params(&p).unwrap();
                ExactGp::new(x.clone(), &y, Box::new(kk), 0.1, 0.0)
                    .unwrap()
                    .log_marginal_likelihood()
            };
            let fd = (f(h) - f(-h)) / (2.0 * h);
            assert!(
                (fd - g[i]).abs() < 1e-6 * (1.0 + fd.abs()),
                "param {i}: {fd} vs {}",
                g[i]
            );
        }
    }

    #[test]
    fn fit_beats_a_brute_force_grid_over_the_paper_box() {
        // y depends on x and strongly on the property mean: the fit must find an
        // optimum at least as good as the best of a 25 × 25 grid over (log l, log α).
        let k = AugmentedGibbs::paper(1, 1).unwrap();
        let x = rows(25, 1, 1, (0.05, 0.4), 14);
        let y: Vec<f64> = (0..25)
            .map(|r| (2.0 * x[(r, 0)]).cos() + (6.0 * x[(r, 1)]).sin())
            .collect();
        let (sh, sc) = crate::exact::standardization(&y);
        let ys: Vec<f64> = y.iter().map(|v| (v - sh) / sc).collect();
        let fit = fit_augmented(&k, x.as_ref(), &ys, &AugmentedFit::default(), 3).unwrap();
        let b = k.log_bounds();
        let mut best = f64::NEG_INFINITY;
        for i in 0..25 {
            for j in 0..25 {
                let p = [
                    b[0].0 + (b[0].1 - b[0].0) * i as f64 / 24.0,
                    b[1].0 + (b[1].1 - b[1].0) * j as f64 / 24.0,
                ];
                let mut kk = k.clone();
                kk.set_params(&p).unwrap();
                let gp = ExactGp::new(x.clone(), &ys, Box::new(kk), 0.1, 0.0).unwrap();
                best = best.max(gp.log_marginal_likelihood());
            }
        }
        assert!(
            fit.log_marginal_likelihood >= best - 1e-6,
            "{} < {best}",
            fit.log_marginal_likelihood
        );
        assert!((fit.gp.log_marginal_likelihood() - fit.log_marginal_likelihood).abs() < 1e-9);
        for (v, (lo, hi)) in fit.kernel.params().iter().zip(&b) {
            assert!(*v >= lo - 1e-12 && *v <= hi + 1e-12);
        }
        // The fitted GP predicts through ExactGp at augmented rows.
        let (mu, var) = fit.gp.predict(x.as_ref()).unwrap();
        assert_eq!(mu.len(), 25);
        assert!(var.iter().all(|v| *v >= 0.0 && *v <= 1.0));
    }

    #[test]
    fn bounds_follow_the_paper_and_bad_input_is_rejected() {
        let k = AugmentedGibbs::new(3, 2, AlphaMode::PerProperty, 0.5, 1.0, 0.01).unwrap();
        let b = k.log_bounds();
        assert_eq!(b.len(), 5);
        assert!((b[0].0 - 0.1f64.ln()).abs() < 1e-15 && b[0].1 == 0.0);
        assert!((b[4].0 - 0.01f64.ln()).abs() < 1e-15 && (b[4].1 - 2f64.ln()).abs() < 1e-15);
        assert_eq!(AugmentedGibbs::paper(3, 2).unwrap().log_bounds().len(), 4);
        assert_eq!(
            k.param_names(),
            [
                "lengthscale[0]",
                "lengthscale[1]",
                "lengthscale[2]",
                "alpha[0]",
                "alpha[1]"
            ]
        );
        let field = |e: Error| match e {
            Error::InvalidInput { field, .. } | Error::Dimension { field, .. } => field,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(
            field(k.log_bounds_with((0.0, 1.0), (0.1, 2.0)).unwrap_err()),
            "lengthscale_bounds"
        );
        assert_eq!(
            field(k.log_bounds_with((0.1, 1.0), (2.0, 1.0)).unwrap_err()),
            "alpha_bounds"
        );
        assert_eq!(
            field(AugmentedGibbs::new(0, 2, AlphaMode::Shared, 0.5, 1.0, 0.01).unwrap_err()),
            "d"
        );
        assert_eq!(
            field(AugmentedGibbs::new(2, 2, AlphaMode::Shared, 0.5, -1.0, 0.01).unwrap_err()),
            "alpha0"
        );
        assert_eq!(
            field(AugmentedGibbs::new(2, 2, AlphaMode::Shared, 0.5, 1.0, 0.0).unwrap_err()),
            "floor"
        );
        let mut x = rows(4, 3, 2, (0.0, 1.0), 15);
        assert!(k.check_inputs("x", x.as_ref()).is_ok());
        x[(2, 6)] = -0.1;
        assert_eq!(
            field(k.check_inputs("x", x.as_ref()).unwrap_err()),
            "x[2][6]"
        );
        x[(2, 6)] = f64::NAN;
        assert_eq!(
            field(k.check_inputs("x", x.as_ref()).unwrap_err()),
            "x[2][6]"
        );
        let narrow = rows(4, 3, 1, (0.0, 1.0), 16);
        assert_eq!(
            field(k.check_inputs("x", narrow.as_ref()).unwrap_err()),
            "x columns"
        );
        // A wrong width gives NaN rather than a panic.
        assert!(k.gram(narrow.as_ref())[(0, 1)].is_nan());
        let mut kk = k.clone();
        assert!(kk.set_params(&[0.0; 4]).is_err());
        assert!(kk.set_params(&[0.0, 0.0, f64::INFINITY, 0.0, 0.0]).is_err());
        // augment: shapes and a negative std are named.
        let xs = Mat::<f64>::zeros(3, 2);
        let mu = Mat::<f64>::zeros(3, 2);
        let mut sd = Mat::<f64>::zeros(3, 2);
        assert_eq!(
            augment(xs.as_ref(), mu.as_ref(), sd.as_ref())
                .unwrap()
                .ncols(),
            6
        );
        sd[(1, 0)] = -1.0;
        assert_eq!(
            field(augment(xs.as_ref(), mu.as_ref(), sd.as_ref()).unwrap_err()),
            "sigma_bar[1][0]"
        );
        let short = Mat::<f64>::zeros(2, 2);
        assert_eq!(
            field(augment(xs.as_ref(), short.as_ref(), sd.as_ref()).unwrap_err()),
            "mu_bar rows"
        );
    }
}
