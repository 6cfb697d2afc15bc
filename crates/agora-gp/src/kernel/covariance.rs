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
