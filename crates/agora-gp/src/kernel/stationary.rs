//! Stationary ARD kernels: RBF and the Matérn family as radial profiles of the scaled
//! squared distance.

use super::{GramScratch, Kernel, ParamKind, Spectral, check_params};
use agora_core::{Error, Result};
use faer::{Mat, MatRef};

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

    /// `(κ(r²), dκ/d(r²))` with one exponential: the same values as [`StationaryKind::value`]
    /// and [`StationaryKind::deriv`].
    #[inline]
    pub fn value_and_deriv(self, r2: f64) -> (f64, f64) {
        match self {
            StationaryKind::Rbf => {
                let e = (-0.5 * r2).exp();
                (e, -0.5 * e)
            }
            StationaryKind::Matern12 => {
                let r = r2.sqrt();
                let e = (-r).exp();
                (e, if r > 0.0 { -e / (2.0 * r) } else { 0.0 })
            }
            StationaryKind::Matern32 => {
                let s = (3.0 * r2).sqrt();
                let e = (-s).exp();
                ((1.0 + s) * e, -1.5 * e)
            }
            StationaryKind::Matern52 => {
                let s = (5.0 * r2).sqrt();
                let e = (-s).exp();
                ((1.0 + s + 5.0 * r2 / 3.0) * e, -(5.0 / 6.0) * (1.0 + s) * e)
            }
        }
    }

    /// `(κ(r²), num, den)` with `num · κ / den` equal, bit for bit, to
    /// [`StationaryKind::deriv_from_value`]`(r², κ)` for any `κ`: the parts of the
    /// derivative that depend on `r²` alone, formed once beside the value.
    #[inline]
    fn value_and_deriv_parts(self, r2: f64) -> (f64, f64, f64) {
        match self {
            StationaryKind::Rbf => ((-0.5 * r2).exp(), -0.5, 1.0),
            StationaryKind::Matern12 => {
                let r = r2.sqrt();
                let (num, den) = if r > 0.0 { (-1.0, 2.0 * r) } else { (0.0, 1.0) };
                ((-r).exp(), num, den)
            }
            StationaryKind::Matern32 => {
                let s = (3.0 * r2).sqrt();
                ((1.0 + s) * (-s).exp(), -1.5, 1.0 + s)
            }
            StationaryKind::Matern52 => {
                let s = (5.0 * r2).sqrt();
                let t = 1.0 + s + 5.0 * r2 / 3.0;
                (t * (-s).exp(), -(5.0 / 6.0) * (1.0 + s), t)
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
/// `k(x, x') = κ(Σ_{j ∈ active} (x_j − x'_j)² / l_j²)`. Wrap it in [`Scale`](super::Scale) for a signal
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

    /// The active input columns of `x`, each as one contiguous vector.
    fn active_columns(&self, x: MatRef<'_, f64>) -> Vec<Vec<f64>> {
        let n = x.nrows();
        self.active
            .iter()
            .map(|&j| (0..n).map(|i| x[(i, j)]).collect())
            .collect()
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
        let cols = self.active_columns(x);
        let mut acc = vec![0.0; cols.len()];
        let mut g = vec![0.0; n];
        let mut r2 = vec![0.0; n];
        let mut wcol = vec![0.0; n];
        let mut kcol = vec![0.0; n];
        let need_r2 = !(gram.is_some() && self.kind == StationaryKind::Rbf);
        for c in 0..n {
            // Contiguous columns when the matrices are column-major (they always are here).
            let wc = contiguous_col(w, c, &mut wcol);
            let kc: Option<&[f64]> = gram.map(|k| contiguous_col(k, c, &mut kcol));
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

    /// [`Stationary::contract`] from the derivative parts [`Kernel::gram_scratch`] left
    /// (no distances or square roots), with the inner Gram `gram / scale` read on the fly.
    /// Every `g_r` is formed by the same operations as there, so the sums are the same.
    fn contract_cached(
        &self,
        x: MatRef<'_, f64>,
        w: MatRef<'_, f64>,
        gram: MatRef<'_, f64>,
        scale: f64,
        scratch: &GramScratch,
    ) -> Vec<f64> {
        let n = x.nrows();
        let il2 = self.inv_l2();
        let cols = self.active_columns(x);
        let mut acc = vec![0.0; cols.len()];
        let mut g = vec![0.0; n];
        let mut wcol = vec![0.0; n];
        let mut kcol = vec![0.0; n];
        for c in 0..n {
            let wc = contiguous_col(w, c, &mut wcol);
            let kc = contiguous_col(gram, c, &mut kcol);
            let num = &scratch.num[c * n..(c + 1) * n];
            let den = &scratch.den[c * n..(c + 1) * n];
            if self.kind == StationaryKind::Rbf {
                for ((gr, wr), kr) in g.iter_mut().zip(wc).zip(kc) {
                    *gr = -0.5 * wr * (kr / scale);
                }
            } else {
                for ((((gr, wr), kr), a), b) in g.iter_mut().zip(wc).zip(kc).zip(num).zip(den) {
                    *gr = wr * (a * (kr / scale) / b);
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
    fn gram_scratch(&self, x: MatRef<'_, f64>, scratch: &mut GramScratch) -> Mat<f64> {
        let n = x.nrows();
        let mut k = self.r2(x, x, true);
        scratch.num.resize(n * n, 0.0);
        scratch.den.resize(n * n, 0.0);
        for c in 0..n {
            for r in c..n {
                let (v, a, b) = self.kind.value_and_deriv_parts(k[(r, c)]);
                k[(r, c)] = v;
                k[(c, r)] = v;
                for at in [c * n + r, r * n + c] {
                    scratch.num[at] = a;
                    scratch.den[at] = b;
                }
            }
        }
        k
    }
    fn grad_contract_scratch(
        &self,
        x: MatRef<'_, f64>,
        w: MatRef<'_, f64>,
        gram: MatRef<'_, f64>,
        scale: f64,
        scratch: &GramScratch,
    ) -> Vec<f64> {
        let n = x.nrows();
        if scratch.num.len() == n * n && scratch.den.len() == n * n {
            return self.contract_cached(x, w, gram, scale, scratch);
        }
        if scale == 1.0 {
            return self.contract(x, w, Some(gram));
        }
        let inner = Mat::from_fn(n, n, |i, j| gram[(i, j)] / scale);
        self.contract(x, w, Some(inner.as_ref()))
    }
    fn cross_grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> (Vec<f64>, Mat<f64>) {
        // As `cross(b, x)` and `grad_x(x, b)`: the same r² (squares of opposite
        // differences), one exponential for both.
        let nb = b.nrows();
        let il2 = self.inv_l2();
        let mut r2 = vec![0.0; nb];
        for (&j, l) in self.active.iter().zip(&il2) {
            for (i, v) in r2.iter_mut().enumerate() {
                let d = b[(i, j)] - x[j];
                *v += d * d * l;
            }
        }
        let mut k = vec![0.0; nb];
        let mut out = Mat::zeros(nb, x.len());
        for (i, (ki, r2i)) in k.iter_mut().zip(&r2).enumerate() {
            let (v, dk) = self.kind.value_and_deriv(*r2i);
            *ki = v;
            for (t, &j) in self.active.iter().enumerate() {
                out[(i, j)] = dk * 2.0 * (x[j] - b[(i, j)]) * il2[t];
            }
        }
        (k, out)
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

/// Column `c` of `m` as a contiguous slice (copied into `buf` unless column-major).
fn contiguous_col<'a>(m: MatRef<'a, f64>, c: usize, buf: &'a mut [f64]) -> &'a [f64] {
    match m.col(c).try_as_col_major() {
        Some(col) => col.as_slice(),
        None => {
            for (r, v) in buf.iter_mut().enumerate() {
                *v = m[(r, c)];
            }
            buf
        }
    }
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
