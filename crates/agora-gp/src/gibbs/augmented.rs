//! The augmented Gibbs kernel itself: design ARD times one Gibbs factor per property.

use crate::kernel::{Kernel, ParamKind};
use agora_core::{Error, Result};
use faer::{Mat, MatRef};

/// Box of each design lengthscale `l_j` (paper §5).
pub const LENGTHSCALE_BOUNDS: (f64, f64) = (0.1, 1.0);
/// Box of α: the paper's `(0, 2]` closed at 0.01 (module docs, A8).
pub const ALPHA_BOUNDS: (f64, f64) = (0.01, 2.0);
/// Default floor of the augmented lengthscales, in units of `μ̄` (module docs, A7).
pub const DEFAULT_FLOOR: f64 = 0.01;

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

pub(super) fn positive(field: &str, v: f64) -> Result<()> {
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

    pub(super) fn contract(
        &self,
        x: MatRef<'_, f64>,
        w: MatRef<'_, f64>,
        k: MatRef<'_, f64>,
    ) -> Vec<f64> {
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
