//! A preference GP over duels with input-dependent noise, with three inference methods
//! behind one posterior (heteroscedastic PBO, Sinaga et al. 2024, §3.3 and App. A–B).
//!
//! Duel `k` says `w_k ≻ l_k`: `f(w_k) + ε(w_k) > f(l_k) + ε(l_k)` with
//! `ε(x) ~ N(0, σ²(x))`, so with `Δ_k = f(w_k) − f(l_k)` and `s²_k = σ²(w_k) + σ²(l_k)`
//! the likelihood is `Φ(Δ_k / s_k)` (Eq. S1). The prior of the differences is
//! `Δ ~ N(0, C)`, `C = D K Dᵀ` (`C_kj = k(w_k,w_j) − k(w_k,l_j) − k(l_k,w_j) + k(l_k,l_j)`),
//! and `Cov(f(x), Δ_k) = c(x)_k = k(x, w_k) − k(x, l_k)`.
//!
//! Every method below ends in the same Gaussian form: site precisions `τ` and a vector `α`
//! with
//!
//! - mean `μ(x) = c(x)ᵀ α`,
//! - latent variance `σ²(x) = k(x, x) − ‖L⁻¹ (√τ ∘ c(x))‖²`, `L Lᵀ = B = I + √τ C √τ`,
//!
//! so `C` is never inverted (it is singular whenever duels repeat or chain through the
//! previous winner) and the predictive variance is the latent, noise-free one (note §9.11).
//!
//! - **Hallucination believer** (Takeno et al. 2023; the paper's default): one Gibbs draw `ṽ`
//!   of `v = −Δ + ε_l − ε_w ~ N(0, C + diag(s²))` truncated to `v < 0`, then exact GP
//!   regression of `Δ` on `−ṽ` with noise `s²` (Eqs. S11–S15): `τ = 1/s²`,
//!   `α = √τ B⁻¹ √τ (−ṽ)`.
//! - **Laplace**: Newton's method on `Δ` (Rasmussen & Williams Alg. 3.1 with `K → C`) with a
//!   backtracking line search; `τ = λ(Δ̂)`, `α = ∇ log p(Δ̂)`. Its log evidence
//!   `−½ aᵀΔ̂ + Σ log Φ(Δ̂_k/s_k) − Σ log L_ii` is the Chu–Ghahramani
//!   `S(f̂) + ½ log|I + LΛ|` of the note's corrected Eq. S7 (\[ERRATUM\] §2.6), with its exact
//!   gradient in the kernel hyperparameters (R&W Alg. 5.1 with `K → C`).
//! - **Expectation propagation** (Minka 2001; R&W §3.6 with `K → C`): Gaussian sites on each
//!   `Δ_k`, parallel updates with damping, until the site parameters change by less than a
//!   tolerance.
//!
//! Files: `duels` (the data), `posterior` ([`DuelGp`] and its inference settings),
//! `laplace` (Laplace mode and evidence), `ep` (expectation propagation), `fit` (the
//! evidence fit of the hyperparameters).

mod duels;
mod ep;
mod fit;
mod laplace;
mod posterior;

#[cfg(test)]
mod tests;

pub use duels::Duels;
pub use fit::{DuelFit, fit_duel_hypers};
pub use laplace::laplace_evidence;
pub use posterior::{DuelGp, DuelInference, DuelInfo, EpOptions};

use ep::ep;
use laplace::{factor_b, laplace_mode, matvec, r_apply};
