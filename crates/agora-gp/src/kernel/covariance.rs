//! The [`Kernel`] trait: a covariance function with contracted gradients in its
//! log-hyperparameters and gradients in its inputs.

use super::StationaryKind;
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
    /// [`Kernel::gram`] that also leaves in `scratch` what
    /// [`Kernel::grad_contract_scratch`] can reuse at the same hyperparameters (for a
    /// stationary kernel, the per-pair factors of its profile's derivative). A marginal
    /// likelihood evaluation needs both, so it forms the shared per-pair values once. The
    /// default leaves `scratch` untouched.
    fn gram_scratch(&self, x: MatRef<'_, f64>, scratch: &mut GramScratch) -> Mat<f64> {
        let _ = scratch;
        self.gram(x)
    }
    /// [`Kernel::grad_contract_with_gram`] given `gram = scale · K(x, x)` (an enclosing
    /// output scale need not be divided out into a new matrix) and the `scratch` that
    /// [`Kernel::gram_scratch`] filled at the same hyperparameters. Same values as dividing
    /// `gram` by `scale` and calling [`Kernel::grad_contract_with_gram`].
    fn grad_contract_scratch(
        &self,
        x: MatRef<'_, f64>,
        w: MatRef<'_, f64>,
        gram: MatRef<'_, f64>,
        scale: f64,
        scratch: &GramScratch,
    ) -> Vec<f64> {
        let _ = scratch;
        if scale == 1.0 {
            return self.grad_contract_with_gram(x, w, gram);
        }
        let inner = Mat::from_fn(gram.nrows(), gram.ncols(), |i, j| gram[(i, j)] / scale);
        self.grad_contract_with_gram(x, w, inner.as_ref())
    }
    /// `∂k(x, b_i)/∂x_j` as an `nb × d` matrix (zeros where the kernel has no input
    /// gradient, e.g. a precomputed Gram over candidate indices).
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64>;
    /// `k(b_i, x)` for every row of `b` together with [`Kernel::grad_x`]: the same values
    /// as [`Kernel::cross`]`(b, x)` and `grad_x(x, b)`, in one pass where a kernel can
    /// share work between them (a stationary kernel forms each distance and exponential
    /// once).
    fn cross_grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> (Vec<f64>, Mat<f64>) {
        let xm = MatRef::from_row_major_slice(x, 1, x.len());
        let k = self.cross(b, xm);
        (
            (0..b.nrows()).map(|i| k[(i, 0)]).collect(),
            self.grad_x(x, b),
        )
    }
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

/// Per-pair values a kernel's Gram computation leaves for its hyperparameter-gradient
/// contraction at the same hyperparameters ([`Kernel::gram_scratch`]). Empty unless a
/// kernel fills it; only the kernel that filled it reads it.
#[derive(Debug, Clone, Default)]
pub struct GramScratch {
    /// For a stationary kernel on `n` points: `dκ/d(r²) = num · κ / den` per pair,
    /// `n × n` column-major (see [`StationaryKind::deriv_parts`]).
    pub(super) num: Vec<f64>,
    pub(super) den: Vec<f64>,
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

pub(super) fn check_params(field: &str, p: &[f64], n: usize) -> Result<()> {
    if p.len() != n {
        return Err(Error::dim(field, n, p.len()));
    }
    agora_core::check_finite_slice(field, p)
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
