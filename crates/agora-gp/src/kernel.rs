//! Covariance functions with gradients in their log-hyperparameters and in their inputs.
//!
//! Gradients in hyperparameters are returned *contracted*: for a weight matrix `W`,
//! [`Kernel::grad_contract`] gives `Σ_ij W_ij ∂K_ij/∂θ_k` for every `θ_k`. That is all a
//! marginal likelihood (`W = ½(ααᵀ − A⁻¹)`) or a Laplace evidence needs, and it costs
//! `O(n² d)` without materializing one `n × n` matrix per hyperparameter. Products and sums
//! compose by the product rule on `W`.

use agora_core::{Error, Result};
use faer::{Mat, MatRef};
use std::fmt::Debug;

/// What a hyperparameter is, so priors and bounds can be assigned by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A lengthscale `l` (parameter `log l`).
    Lengthscale,
    /// An output scale (signal variance) `s` (parameter `log s`).
    Outputscale,
}

/// A positive-semidefinite covariance function on rows of an `n × d` matrix.
pub trait Kernel: Send + Sync + Debug {
    /// A boxed copy.
    fn box_clone(&self) -> Box<dyn Kernel>;
    /// Number of hyperparameters.
    fn n_params(&self) -> usize;
    /// Hyperparameters in log space.
    fn params(&self) -> Vec<f64>;
    /// Set hyperparameters (log space); errors on a wrong length or non-finite value.
    fn set_params(&mut self, p: &[f64]) -> Result<()>;
    /// The role of each hyperparameter.
    fn param_kinds(&self) -> Vec<ParamKind>;
    /// Readable names, e.g. `lengthscale[2]`.
    fn param_names(&self) -> Vec<String>;
    /// Cross-covariance `K(a, b)`, `na × nb`.
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64>;
    /// Gram matrix `K(x, x)`.
    fn gram(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        self.cross(x, x)
    }
    /// `k(x_i, x_i)` for each row.
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64>;
    /// `Σ_ij W_ij ∂K(x,x)_ij / ∂θ_k` for each hyperparameter `θ_k` (log space).
    fn grad_contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>) -> Vec<f64>;
    /// [`Kernel::grad_contract`] when the caller already holds `gram = K(x, x)`; kernels
    /// that can derive their derivatives from it skip recomputing exponentials.
    fn grad_contract_with_gram(
        &self,
        x: MatRef<'_, f64>,
        w: MatRef<'_, f64>,
        gram: MatRef<'_, f64>,
    ) -> Vec<f64> {
        let _ = gram;
        self.grad_contract(x, w)
    }
    /// `∂k(x, b_i)/∂x_j` as an `nb × d` matrix (zeros where the kernel has no input
    /// gradient, e.g. a precomputed Gram over candidate indices).
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64>;
    /// `∂k(x, x)/∂x_j`: zero for stationary kernels, which all of agora's are.
    fn diag_grad_x(&self, x: &[f64]) -> Vec<f64> {
        vec![0.0; x.len()]
    }
    /// For a (scaled) stationary kernel on `d` inputs: its profile, per-input lengthscales
    /// (infinite for inputs it ignores) and output scale, which define its spectral density
    /// (used by random Fourier features). `None` for other kernels.
    fn spectral(&self, _d: usize) -> Option<Spectral> {
        None
    }
}

/// The spectral description of a scaled stationary kernel (see [`Kernel::spectral`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Spectral {
    /// Radial profile.
    pub kind: StationaryKind,
    /// One lengthscale per input (infinite where the kernel ignores the input).
    pub lengthscales: Vec<f64>,
    /// Output scale.
    pub scale: f64,
}

impl Clone for Box<dyn Kernel> {
    fn clone(&self) -> Self {
        self.box_clone()
    }
}

fn check_params(field: &str, p: &[f64], n: usize) -> Result<()> {
    if p.len() != n {
        return Err(Error::dim(field, n, p.len()));
    }
    agora_core::check_finite_slice(field, p)
}

/// The radial profile of a stationary kernel, as a function of the scaled squared
/// distance `r² = Σ_j (x_j − x'_j)² / l_j²`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StationaryKind {
    /// Squared exponential: `exp(−r²/2)`.
    Rbf,
    /// Matérn ν = 1/2: `exp(−r)`.
    Matern12,
    /// Matérn ν = 3/2: `(1 + √3 r) exp(−√3 r)`.
    Matern32,
    /// Matérn ν = 5/2: `(1 + √5 r + 5r²/3) exp(−√5 r)`.
    Matern52,
}

impl StationaryKind {
    /// `κ(r²)`.
    #[inline]
    pub fn value(self, r2: f64) -> f64 {
        match self {
            StationaryKind::Rbf => (-0.5 * r2).exp(),
            StationaryKind::Matern12 => (-r2.sqrt()).exp(),
            StationaryKind::Matern32 => {
                let s = (3.0 * r2).sqrt();
                (1.0 + s) * (-s).exp()
            }
            StationaryKind::Matern52 => {
                let s = (5.0 * r2).sqrt();
                (1.0 + s + 5.0 * r2 / 3.0) * (-s).exp()
            }
        }
    }

    /// `dκ/d(r²)`. For Matérn 1/2 it is unbounded at `r = 0`; there it returns 0, which is
    /// exact for every quantity agora forms from it (each is multiplied by a squared or
    /// plain coordinate difference that vanishes faster).
    #[inline]
    pub fn deriv(self, r2: f64) -> f64 {
        match self {
            StationaryKind::Rbf => -0.5 * (-0.5 * r2).exp(),
            StationaryKind::Matern12 => {
                let r = r2.sqrt();
                if r > 0.0 {
                    -(-r).exp() / (2.0 * r)
                } else {
                    0.0
                }
            }
            StationaryKind::Matern32 => -1.5 * (-(3.0 * r2).sqrt()).exp(),
            StationaryKind::Matern52 => {
                let s = (5.0 * r2).sqrt();
                -(5.0 / 6.0) * (1.0 + s) * (-s).exp()
            }
        }
    }

    /// `dκ/d(r²)` from `r²` and the value `κ(r²)` already at hand (no exponential).
    #[inline]
    pub fn deriv_from_value(self, r2: f64, k: f64) -> f64 {
        match self {
            StationaryKind::Rbf => -0.5 * k,
            StationaryKind::Matern12 => {
                let r = r2.sqrt();
                if r > 0.0 { -k / (2.0 * r) } else { 0.0 }
            }
            StationaryKind::Matern32 => -1.5 * k / (1.0 + (3.0 * r2).sqrt()),
            StationaryKind::Matern52 => {
                let s = (5.0 * r2).sqrt();
                -(5.0 / 6.0) * (1.0 + s) * k / (1.0 + s + 5.0 * r2 / 3.0)
            }
        }
    }

    /// Parse `rbf`, `matern12`, `matern32`, `matern52`.
    pub fn parse(s: &str) -> Result<StationaryKind> {
        match s {
            "rbf" | "se" => Ok(StationaryKind::Rbf),
            "matern12" => Ok(StationaryKind::Matern12),
            "matern32" => Ok(StationaryKind::Matern32),
            "matern52" => Ok(StationaryKind::Matern52),
            _ => Err(Error::unknown(
                "kernel",
                s,
                &["rbf", "matern12", "matern32", "matern52"],
            )),
        }
    }
}

/// A stationary ARD kernel with unit variance on a subset of input columns (`active`):
/// `k(x, x') = κ(Σ_{j ∈ active} (x_j − x'_j)² / l_j²)`. Wrap it in [`Scale`] for a signal
/// variance; sum several with disjoint `active` sets for an additive kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Stationary {
    /// The radial profile.
    pub kind: StationaryKind,
    /// Input columns the kernel reads.
    pub active: Vec<usize>,
    log_ls: Vec<f64>,
}

impl Stationary {
    /// An ARD kernel on all `d` columns with every lengthscale `l0`.
    pub fn ard(kind: StationaryKind, d: usize, l0: f64) -> Stationary {
        Stationary::on(kind, (0..d).collect(), l0)
    }

    /// An ARD kernel on the given columns.
    pub fn on(kind: StationaryKind, active: Vec<usize>, l0: f64) -> Stationary {
        let n = active.len();
        Stationary {
            kind,
            active,
            log_ls: vec![l0.ln(); n],
        }
    }

    /// Current lengthscales.
    pub fn lengthscales(&self) -> Vec<f64> {
        self.log_ls.iter().map(|p| p.exp()).collect()
    }

    fn inv_l2(&self) -> Vec<f64> {
        self.log_ls.iter().map(|p| (-2.0 * p).exp()).collect()
    }

    /// `Σ_rc W_rc ∂K_rc/∂log l_j` with `∂K_rc/∂log l_j = κ'(r²_rc) · (−2)(x_rj − x_cj)²/l_j²`,
    /// column by column over contiguous memory; `κ'` comes from the Gram values when given
    /// (no exponentials), and distances are formed on the fly (no `n × n` temporary).
    fn contract(
        &self,
        x: MatRef<'_, f64>,
        w: MatRef<'_, f64>,
        gram: Option<MatRef<'_, f64>>,
    ) -> Vec<f64> {
        let n = x.nrows();
        let il2 = self.inv_l2();
        let cols: Vec<Vec<f64>> = self
            .active
            .iter()
            .map(|&j| (0..n).map(|i| x[(i, j)]).collect())
            .collect();
        let mut acc = vec![0.0; cols.len()];
        let mut g = vec![0.0; n];
        let mut r2 = vec![0.0; n];
        let mut wcol = vec![0.0; n];
        let mut kcol = vec![0.0; n];
        let need_r2 = !(gram.is_some() && self.kind == StationaryKind::Rbf);
        for c in 0..n {
            // Contiguous columns when the matrices are column-major (they always are here).
            let wc: &[f64] = match w.col(c).try_as_col_major() {
                Some(col) => col.as_slice(),
                None => {
                    for (r, v) in wcol.iter_mut().enumerate() {
                        *v = w[(r, c)];
                    }
                    &wcol
                }
            };
            let kc: Option<&[f64]> = gram.map(|k| match k.col(c).try_as_col_major() {
                Some(col) => col.as_slice(),
                None => {
                    for (r, v) in kcol.iter_mut().enumerate() {
                        *v = k[(r, c)];
                    }
                    &kcol[..]
                }
            });
            if need_r2 {
                r2.iter_mut().for_each(|v| *v = 0.0);
                for (col, l) in cols.iter().zip(&il2) {
                    let xc = col[c];
                    for (v, xr) in r2.iter_mut().zip(col) {
                        let d = xr - xc;
                        *v += d * d * l;
                    }
                }
            }
            match (kc, self.kind) {
                (Some(k), StationaryKind::Rbf) => {
                    for ((gr, wr), kr) in g.iter_mut().zip(wc).zip(k) {
                        *gr = -0.5 * wr * kr;
                    }
                }
                (Some(k), kind) => {
                    for (((gr, wr), kr), r2r) in g.iter_mut().zip(wc).zip(k).zip(&r2) {
                        *gr = wr * kind.deriv_from_value(*r2r, *kr);
                    }
                }
                (None, kind) => {
                    for ((gr, wr), r2r) in g.iter_mut().zip(wc).zip(&r2) {
                        *gr = wr * kind.deriv(*r2r);
                    }
                }
            }
            g[c] = 0.0;
            for (t, col) in cols.iter().enumerate() {
                acc[t] += weighted_sq_dist_sum(&g, col, col[c]);
            }
        }
        acc.iter().zip(il2).map(|(sum, l)| -2.0 * l * sum).collect()
    }

    /// Scaled squared distances between rows of `a` and `b`.
    fn r2(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>, symmetric: bool) -> Mat<f64> {
        let (na, nb) = (a.nrows(), b.nrows());
        let mut r2 = Mat::<f64>::zeros(na, nb);
        for (&j, il2) in self.active.iter().zip(self.inv_l2()) {
            let ca: Vec<f64> = (0..na).map(|i| a[(i, j)]).collect();
            for c in 0..nb {
                let xb = b[(c, j)];
                let start = if symmetric { c } else { 0 };
                let col = r2.col_mut(c);
                let col = col.try_as_col_major_mut();
                if let Some(col) = col {
                    let s = col.as_slice_mut();
                    for r in start..na {
                        let d = ca[r] - xb;
                        s[r] += d * d * il2;
                    }
                }
            }
        }
        r2
    }
}

impl Kernel for Stationary {
    fn box_clone(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
    fn n_params(&self) -> usize {
        self.log_ls.len()
    }
    fn params(&self) -> Vec<f64> {
        self.log_ls.clone()
    }
    fn set_params(&mut self, p: &[f64]) -> Result<()> {
        check_params("lengthscale params", p, self.log_ls.len())?;
        self.log_ls.copy_from_slice(p);
        Ok(())
    }
    fn param_kinds(&self) -> Vec<ParamKind> {
        vec![ParamKind::Lengthscale; self.log_ls.len()]
    }
    fn param_names(&self) -> Vec<String> {
        self.active
            .iter()
            .map(|j| format!("lengthscale[{j}]"))
            .collect()
    }
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        let mut k = self.r2(a, b, false);
        for c in 0..k.ncols() {
            for r in 0..k.nrows() {
                k[(r, c)] = self.kind.value(k[(r, c)]);
            }
        }
        k
    }
    fn gram(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        let n = x.nrows();
        let mut k = self.r2(x, x, true);
        for c in 0..n {
            k[(c, c)] = self.kind.value(k[(c, c)]);
            for r in c + 1..n {
                let v = self.kind.value(k[(r, c)]);
                k[(r, c)] = v;
                k[(c, r)] = v;
            }
        }
        k
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        vec![self.kind.value(0.0); x.nrows()]
    }
    fn grad_contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>) -> Vec<f64> {
        self.contract(x, w, None)
    }
    fn grad_contract_with_gram(
        &self,
        x: MatRef<'_, f64>,
        w: MatRef<'_, f64>,
        gram: MatRef<'_, f64>,
    ) -> Vec<f64> {
        self.contract(x, w, Some(gram))
    }
    fn spectral(&self, d: usize) -> Option<Spectral> {
        let mut ls = vec![f64::INFINITY; d];
        for (&j, l) in self.active.iter().zip(self.lengthscales()) {
            *ls.get_mut(j)? = l;
        }
        Some(Spectral {
            kind: self.kind,
            lengthscales: ls,
            scale: 1.0,
        })
    }
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        // ∂k(x, b_i)/∂x_j = κ'(r²) · 2 (x_j − b_ij) / l_j².
        let nb = b.nrows();
        let il2 = self.inv_l2();
        let xa = Mat::from_fn(1, x.len(), |_, j| x[j]);
        let r2 = self.r2(xa.as_ref(), b, false);
        let mut out = Mat::zeros(nb, x.len());
        for i in 0..nb {
            let dk = self.kind.deriv(r2[(0, i)]);
            for (t, &j) in self.active.iter().enumerate() {
                out[(i, j)] = dk * 2.0 * (x[j] - b[(i, j)]) * il2[t];
            }
        }
        out
    }
}

/// `s · k(x, x')` with a learned output scale `s` (parameter `log s`, listed first).
#[derive(Debug, Clone)]
pub struct Scale {
    log_s: f64,
    /// The scaled kernel.
    pub inner: Box<dyn Kernel>,
}

impl Scale {
    /// Wrap `inner` with output scale `s`.
    pub fn new(inner: Box<dyn Kernel>, s: f64) -> Scale {
        Scale {
            log_s: s.ln(),
            inner,
        }
    }
    /// Current output scale.
    pub fn outputscale(&self) -> f64 {
        self.log_s.exp()
    }
}

impl Kernel for Scale {
    fn box_clone(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
    fn n_params(&self) -> usize {
        1 + self.inner.n_params()
    }
    fn params(&self) -> Vec<f64> {
        let mut p = vec![self.log_s];
        p.extend(self.inner.params());
        p
    }
    fn set_params(&mut self, p: &[f64]) -> Result<()> {
        check_params("scale params", p, self.n_params())?;
        self.log_s = p[0];
        self.inner.set_params(&p[1..])
    }
    fn param_kinds(&self) -> Vec<ParamKind> {
        let mut k = vec![ParamKind::Outputscale];
        k.extend(self.inner.param_kinds());
        k
    }
    fn param_names(&self) -> Vec<String> {
        let mut k = vec!["outputscale".to_string()];
        k.extend(self.inner.param_names());
        k
    }
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        let s = self.outputscale();
        let mut k = self.inner.cross(a, b);
        scale_in_place(&mut k, s);
        k
    }
    fn gram(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        let s = self.outputscale();
        let mut k = self.inner.gram(x);
        scale_in_place(&mut k, s);
        k
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        let s = self.outputscale();
        self.inner.diag(x).into_iter().map(|v| s * v).collect()
    }
    fn grad_contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>) -> Vec<f64> {
        let s = self.outputscale();
        let k = self.inner.gram(x);
        let ds = s * hadamard_sum(w, k.as_ref());
        let mut g = vec![ds];
        g.extend(
            self.inner
                .grad_contract_with_gram(x, w, k.as_ref())
                .into_iter()
                .map(|v| s * v),
        );
        g
    }
    fn grad_contract_with_gram(
        &self,
        x: MatRef<'_, f64>,
        w: MatRef<'_, f64>,
        gram: MatRef<'_, f64>,
    ) -> Vec<f64> {
        // gram = s · K_inner.
        let s = self.outputscale();
        let mut g = vec![hadamard_sum(w, gram)];
        let inner = Mat::from_fn(gram.nrows(), gram.ncols(), |i, j| gram[(i, j)] / s);
        g.extend(
            self.inner
                .grad_contract_with_gram(x, w, inner.as_ref())
                .into_iter()
                .map(|v| s * v),
        );
        g
    }
    fn spectral(&self, d: usize) -> Option<Spectral> {
        self.inner.spectral(d).map(|s| Spectral {
            scale: s.scale * self.outputscale(),
            ..s
        })
    }
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        let mut g = self.inner.grad_x(x, b);
        scale_in_place(&mut g, self.outputscale());
        g
    }
}

/// `k₁ + k₂ + …` (an additive kernel when the parts read disjoint columns).
#[derive(Debug, Clone)]
pub struct Sum {
    /// The summands.
    pub parts: Vec<Box<dyn Kernel>>,
}

/// `k₁ · k₂ · …` (elementwise).
#[derive(Debug, Clone)]
pub struct Product {
    /// The factors.
    pub parts: Vec<Box<dyn Kernel>>,
}

impl Sum {
    /// An additive kernel over index groups: `Σ_g s_g κ(x_g, x'_g)`, one scaled ARD
    /// stationary kernel per group of columns.
    pub fn additive(kind: StationaryKind, groups: &[Vec<usize>], l0: f64, s0: f64) -> Sum {
        Sum {
            parts: groups
                .iter()
                .map(|g| {
                    Box::new(Scale::new(
                        Box::new(Stationary::on(kind, g.clone(), l0)),
                        s0,
                    )) as Box<dyn Kernel>
                })
                .collect(),
        }
    }
}

fn split_set(parts: &mut [Box<dyn Kernel>], p: &[f64]) -> Result<()> {
    let total: usize = parts.iter().map(|k| k.n_params()).sum();
    check_params("kernel params", p, total)?;
    let mut o = 0;
    for k in parts.iter_mut() {
        let m = k.n_params();
        k.set_params(&p[o..o + m])?;
        o += m;
    }
    Ok(())
}

macro_rules! composite_common {
    () => {
        fn box_clone(&self) -> Box<dyn Kernel> {
            Box::new(self.clone())
        }
        fn n_params(&self) -> usize {
            self.parts.iter().map(|k| k.n_params()).sum()
        }
        fn params(&self) -> Vec<f64> {
            self.parts.iter().flat_map(|k| k.params()).collect()
        }
        fn set_params(&mut self, p: &[f64]) -> Result<()> {
            split_set(&mut self.parts, p)
        }
        fn param_kinds(&self) -> Vec<ParamKind> {
            self.parts.iter().flat_map(|k| k.param_kinds()).collect()
        }
        fn param_names(&self) -> Vec<String> {
            self.parts
                .iter()
                .enumerate()
                .flat_map(|(i, k)| k.param_names().into_iter().map(move |n| format!("{i}.{n}")))
                .collect()
        }
    };
}

impl Kernel for Sum {
    composite_common!();
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        let mut k = Mat::zeros(a.nrows(), b.nrows());
        for p in &self.parts {
            k += p.cross(a, b);
        }
        k
    }
    fn gram(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        let mut k = Mat::zeros(x.nrows(), x.nrows());
        for p in &self.parts {
            k += p.gram(x);
        }
        k
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        let mut d = vec![0.0; x.nrows()];
        for p in &self.parts {
            for (a, b) in d.iter_mut().zip(p.diag(x)) {
                *a += b;
            }
        }
        d
    }
    fn grad_contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>) -> Vec<f64> {
        self.parts
            .iter()
            .flat_map(|p| p.grad_contract(x, w))
            .collect()
    }
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        let mut g = Mat::zeros(b.nrows(), x.len());
        for p in &self.parts {
            g += p.grad_x(x, b);
        }
        g
    }
}

impl Kernel for Product {
    composite_common!();
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        let mut k = Mat::from_fn(a.nrows(), b.nrows(), |_, _| 1.0);
        for p in &self.parts {
            k = hadamard(k.as_ref(), p.cross(a, b).as_ref());
        }
        k
    }
    fn gram(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        let mut k = Mat::from_fn(x.nrows(), x.nrows(), |_, _| 1.0);
        for p in &self.parts {
            k = hadamard(k.as_ref(), p.gram(x).as_ref());
        }
        k
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        let mut d = vec![1.0; x.nrows()];
        for p in &self.parts {
            for (a, b) in d.iter_mut().zip(p.diag(x)) {
                *a *= b;
            }
        }
        d
    }
    fn grad_contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>) -> Vec<f64> {
        // ∂(K₁∘K₂)/∂θ₁ = ∂K₁ ∘ K₂: contract part i with W ∘ (∏_{j≠i} K_j).
        let grams: Vec<Mat<f64>> = self.parts.iter().map(|p| p.gram(x)).collect();
        let mut out = Vec::new();
        for (i, p) in self.parts.iter().enumerate() {
            let mut wi = w.to_owned();
            for (j, g) in grams.iter().enumerate() {
                if j != i {
                    wi = hadamard(wi.as_ref(), g.as_ref());
                }
            }
            out.extend(p.grad_contract(x, wi.as_ref()));
        }
        out
    }
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        let xa = Mat::from_fn(1, x.len(), |_, j| x[j]);
        let ks: Vec<Mat<f64>> = self.parts.iter().map(|p| p.cross(xa.as_ref(), b)).collect();
        let mut g = Mat::zeros(b.nrows(), x.len());
        for (i, p) in self.parts.iter().enumerate() {
            let gi = p.grad_x(x, b);
            for r in 0..b.nrows() {
                let others: f64 = ks
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, k)| k[(0, r)])
                    .product();
                for c in 0..x.len() {
                    g[(r, c)] += gi[(r, c)] * others;
                }
            }
        }
        g
    }
}

/// A fixed Gram matrix over a finite set (graph kernels, team kernels): inputs are `n × 1`
/// matrices of candidate indices. No hyperparameters (wrap in [`Scale`] to learn a
/// variance), no input gradient (finite sets are searched exhaustively).
#[derive(Debug, Clone)]
pub struct Precomputed {
    gram: Mat<f64>,
}

impl Precomputed {
    /// Wrap a symmetric Gram matrix; errors on a non-square or non-finite matrix.
    pub fn new(gram: Mat<f64>) -> Result<Precomputed> {
        if gram.nrows() != gram.ncols() {
            return Err(Error::dim("gram columns", gram.nrows(), gram.ncols()));
        }
        for j in 0..gram.ncols() {
            for i in 0..gram.nrows() {
                if !gram[(i, j)].is_finite() {
                    return Err(Error::invalid(format!("gram[{i}][{j}]"), "must be finite"));
                }
            }
        }
        Ok(Precomputed { gram })
    }

    fn idx(&self, v: f64) -> usize {
        // Indices are stored as floats; out-of-range rows clamp (callers validate indices).
        (v.max(0.0).round() as usize).min(self.gram.nrows().saturating_sub(1))
    }
}

impl Kernel for Precomputed {
    fn box_clone(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
    fn n_params(&self) -> usize {
        0
    }
    fn params(&self) -> Vec<f64> {
        Vec::new()
    }
    fn set_params(&mut self, p: &[f64]) -> Result<()> {
        check_params("precomputed params", p, 0)
    }
    fn param_kinds(&self) -> Vec<ParamKind> {
        Vec::new()
    }
    fn param_names(&self) -> Vec<String> {
        Vec::new()
    }
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        Mat::from_fn(a.nrows(), b.nrows(), |i, j| {
            self.gram[(self.idx(a[(i, 0)]), self.idx(b[(j, 0)]))]
        })
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        (0..x.nrows())
            .map(|i| {
                let k = self.idx(x[(i, 0)]);
                self.gram[(k, k)]
            })
            .collect()
    }
    fn grad_contract(&self, _x: MatRef<'_, f64>, _w: MatRef<'_, f64>) -> Vec<f64> {
        Vec::new()
    }
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        Mat::zeros(b.nrows(), x.len())
    }
}

fn scale_in_place(k: &mut Mat<f64>, s: f64) {
    for c in 0..k.ncols() {
        for r in 0..k.nrows() {
            k[(r, c)] *= s;
        }
    }
}

fn hadamard(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)] * b[(i, j)])
}

/// `Σ_r g_r (x_r − x_c)²` with eight independent partial sums, so the reduction
/// vectorizes (a single running sum forces strict sequential order).
#[inline]
fn weighted_sq_dist_sum(g: &[f64], x: &[f64], xc: f64) -> f64 {
    let mut part = [0.0f64; 8];
    let gc = g.chunks_exact(8);
    let xcs = x.chunks_exact(8);
    let (gr, xr) = (gc.remainder(), xcs.remainder());
    for (ga, xa) in gc.zip(xcs) {
        for k in 0..8 {
            let d = xa[k] - xc;
            part[k] += ga[k] * d * d;
        }
    }
    let mut sum: f64 = part.iter().sum();
    for (gv, xv) in gr.iter().zip(xr) {
        let d = xv - xc;
        sum += gv * d * d;
    }
    sum
}

/// `Σ_ij A_ij B_ij`.
pub fn hadamard_sum(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> f64 {
    let mut s = 0.0;
    for j in 0..a.ncols() {
        for i in 0..a.nrows() {
            s += a[(i, j)] * b[(i, j)];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(n: usize, d: usize, seed: u64) -> Mat<f64> {
        let mut s = seed;
        Mat::from_fn(n, d, |_, _| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        })
    }

    fn kernels() -> Vec<Box<dyn Kernel>> {
        let mut out: Vec<Box<dyn Kernel>> = Vec::new();
        for kind in [
            StationaryKind::Rbf,
            StationaryKind::Matern12,
            StationaryKind::Matern32,
            StationaryKind::Matern52,
        ] {
            let mut k = Stationary::ard(kind, 3, 0.4);
            k.set_params(&[0.3f64.ln(), 0.5f64.ln(), 0.8f64.ln()])
                .unwrap();
            out.push(Box::new(Scale::new(Box::new(k), 1.7)));
        }
        out.push(Box::new(Sum::additive(
            StationaryKind::Matern52,
            &[vec![0], vec![1, 2]],
            0.3,
            0.8,
        )));
        out.push(Box::new(Product {
            parts: vec![
                Box::new(Scale::new(
                    Box::new(Stationary::on(StationaryKind::Rbf, vec![0, 1], 0.5)),
                    1.3,
                )),
                Box::new(Stationary::on(StationaryKind::Matern32, vec![2], 0.7)),
            ],
        }));
        out
    }

    #[test]
    fn closed_form_values() {
        // RBF, l = 0.5, s = 2: k = 2 exp(-0.5 · (0.3² + 0.4²)/0.25) = 2 exp(-0.5).
        let k = Scale::new(Box::new(Stationary::ard(StationaryKind::Rbf, 2, 0.5)), 2.0);
        let a = faer::mat![[0.0, 0.0]];
        let b = faer::mat![[0.3, 0.4]];
        assert!((k.cross(a.as_ref(), b.as_ref())[(0, 0)] - 2.0 * (-0.5f64).exp()).abs() < 1e-15);
        // Matérn 5/2 at r = 1: (1 + √5 + 5/3) e^{-√5}.
        let m = Stationary::ard(StationaryKind::Matern52, 1, 1.0);
        let v = m.cross(faer::mat![[0.0]].as_ref(), faer::mat![[1.0]].as_ref())[(0, 0)];
        assert!((v - (1.0 + 5f64.sqrt() + 5.0 / 3.0) * (-(5f64.sqrt())).exp()).abs() < 1e-15);
    }

    #[test]
    fn hyperparameter_gradients_match_finite_differences() {
        let x = pts(7, 3, 1);
        let w = pts(7, 7, 2);
        for k in kernels() {
            let g = k.grad_contract(x.as_ref(), w.as_ref());
            let gg = k.grad_contract_with_gram(x.as_ref(), w.as_ref(), k.gram(x.as_ref()).as_ref());
            for (a, b) in g.iter().zip(&gg) {
                assert!(
                    (a - b).abs() < 1e-12 * (1.0 + a.abs()),
                    "{k:?}: with gram {b} vs {a}"
                );
            }
            let p0 = k.params();
            assert_eq!(g.len(), p0.len());
            for i in 0..p0.len() {
                let h = 1e-6;
                let f = |delta: f64| {
                    let mut kk = k.box_clone();
                    let mut p = p0.clone();
                    p[i] += delta;
                    kk.set_params(&p).unwrap();
                    hadamard_sum(w.as_ref(), kk.gram(x.as_ref()).as_ref())
                };
                let fd = (f(h) - f(-h)) / (2.0 * h);
                assert!(
                    (fd - g[i]).abs() < 1e-6 * (1.0 + fd.abs()),
                    "{k:?} param {i}: fd {fd} vs {}",
                    g[i]
                );
            }
        }
    }

    #[test]
    fn input_gradients_match_finite_differences() {
        let b = pts(5, 3, 3);
        let x = [0.41, 0.27, 0.66];
        for k in kernels() {
            let g = k.grad_x(&x, b.as_ref());
            for j in 0..3 {
                let h = 1e-6;
                let mut xp = x;
                let mut xm = x;
                xp[j] += h;
                xm[j] -= h;
                let kp = k.cross(Mat::from_fn(1, 3, |_, c| xp[c]).as_ref(), b.as_ref());
                let km = k.cross(Mat::from_fn(1, 3, |_, c| xm[c]).as_ref(), b.as_ref());
                for i in 0..5 {
                    let fd = (kp[(0, i)] - km[(0, i)]) / (2.0 * h);
                    assert!(
                        (fd - g[(i, j)]).abs() < 1e-6,
                        "{k:?} ({i},{j}): {fd} vs {}",
                        g[(i, j)]
                    );
                }
            }
        }
    }

    #[test]
    fn gram_equals_cross_and_diag() {
        let x = pts(6, 3, 4);
        for k in kernels() {
            let g = k.gram(x.as_ref());
            let c = k.cross(x.as_ref(), x.as_ref());
            let d = k.diag(x.as_ref());
            for i in 0..6 {
                assert!((g[(i, i)] - d[i]).abs() < 1e-14);
                for j in 0..6 {
                    assert!((g[(i, j)] - c[(i, j)]).abs() < 1e-14);
                }
            }
        }
        let p = Precomputed::new(faer::mat![[2.0, 0.5], [0.5, 1.0]]).unwrap();
        let idx = faer::mat![[1.0], [0.0]];
        assert_eq!(p.gram(idx.as_ref())[(0, 1)], 0.5);
        assert_eq!(p.diag(idx.as_ref()), vec![1.0, 2.0]);
    }
}
