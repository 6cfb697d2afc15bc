//! Covariance functions with gradients in their log-hyperparameters and in their inputs.
//!
//! Gradients in hyperparameters are returned *contracted*: for a weight matrix `W`,
//! [`Kernel::grad_contract`] gives `Σ_ij W_ij ∂K_ij/∂θ_k` for every `θ_k`. That is all a
//! marginal likelihood (`W = ½(ααᵀ − A⁻¹)`) or a Laplace evidence needs, and it costs
//! `O(n² d)` without materializing one `n × n` matrix per hyperparameter. Products and sums
//! compose by the product rule on `W`.
//!
//! Files: `covariance` (the [`Kernel`] trait), `stationary` (RBF, Matérn), `scale` (output
//! scale), `combine` (sums and products), `precomputed` (a fixed Gram over a finite set), `anchored` (a kernel conditioned
//! to vanish at a point).

mod anchored;
mod combine;
mod covariance;
mod precomputed;
mod scale;
mod stationary;

#[cfg(test)]
mod tests;

pub use anchored::Anchored;
pub use combine::{Product, Sum};
pub use covariance::{GramScratch, Kernel, ParamKind, Spectral, hadamard_sum};
pub use precomputed::Precomputed;
pub use scale::Scale;
pub use stationary::{Stationary, StationaryKind};

use covariance::check_params;
