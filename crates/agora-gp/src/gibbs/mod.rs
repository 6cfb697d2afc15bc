//! The kernel of BOAP's human arm (Arm-𝔥): an ARD squared exponential on the design `x`
//! times, for each abstract property `i`, a Gibbs (spatially varying lengthscale) kernel on
//! the normalised rank-GP mean `μ̄_i`, whose lengthscale grows with the rank GP's
//! uncertainty `σ̄_i` (Kumar A V et al. 2024, "Enhanced Bayesian Optimization via
//! Preferential Modeling of Abstract Properties", arXiv:2402.17343, Eq. 6 and App. A.4.1;
//! docs/notes/boap.md §2.4). With `l_j` the design lengthscales and
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
//! [`GpConfig`](crate::GpConfig) and bounds parameters by [`ParamKind`](crate::ParamKind), which cannot express
//! α's own box, so [`fit_augmented`] maximises the log marginal likelihood (Eq. 20) within
//! [`AugmentedGibbs::log_bounds`] and conditions an [`ExactGp`](crate::ExactGp) on the result.
//!
//! Files: `augmented` (the kernel), `fit` (augmented inputs and the fit).

mod augmented;
mod fit;

#[cfg(test)]
mod tests;

pub use augmented::{ALPHA_BOUNDS, AlphaMode, AugmentedGibbs, DEFAULT_FLOOR, LENGTHSCALE_BOUNDS};
pub use fit::{AugmentedFit, AugmentedFitResult, augment, fit_augmented, log_marginal_likelihood};

use augmented::positive;
