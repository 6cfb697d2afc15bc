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
//! (conformance/preference-gp/CONVENTIONS.md §3); agora's default is the pure probit
//! and [`PrefLikelihood::ProbitClamped`] reproduces BoTorch exactly.
//!
//! Files: `likelihood`, `comparisons`, `mode` (the Laplace mode), `model` ([`PreferenceGp`]),
//! `predict`, `fit` (hyperparameters).

mod comparisons;
mod fit;
mod likelihood;
mod mode;
mod model;
mod predict;

#[cfg(test)]
mod tests;

pub use comparisons::{Comparison, check_comparisons, merge_duplicates};
pub use fit::{PrefConfig, PrefFitReport};
pub use likelihood::PrefLikelihood;
pub use model::PreferenceGp;
pub use predict::PairMoments;

pub(crate) use likelihood::{Terms, terms};
use mode::find_mode;
