//! The social model of Social BO (Adachi et al., "Bayesian Optimization for Building
//! Social-Influence-Free Consensus"; docs/notes/social-bo.md §1–2).
//!
//! `n` agents have true utilities `u(·, i)` in an RKHS ball `‖u(·, i)‖_k ≤ L`; a
//! row-stochastic social graph `A` (entries ≥ δ_A) bends them into the public utilities
//! `v = A u`. Every vote is Bradley–Terry: agent `i` prefers `a` to `b` with probability
//! `σ(f_i(a) − f_i(b))`, `f = u` on the private channel and `f = v` on the public one.
//!
//! By the representer theorem everything lives on the utilities at the `m` points voted on.
//! agora works in whitened coordinates: `U_i = C α_i` with `K + jitter·I = C Cᵀ`, so the
//! RKHS ball is `‖α_i‖ ≤ L` and well conditioned even when points crowd. The variables of
//! the MAP (note (52a)) are `(α, A)`; `V = A U` is eliminated (its ball is implied: rows
//! of `A` are convex weights). The objective
//!
//! `J(U, A) = ℓ_u(U) + ℓ_v(A U) + Σ_ij (κ − 1) log A_ij − ξ Σ_ij A_ij²`
//!
//! is concave in `U` for fixed `A` and in `A` for fixed `U`, but bilinear jointly
//! (biconvex; the paper calls it convex). It is solved with agora's augmented-Lagrangian
//! solver ([`agora_math::constrained`]) from several starts, warm-started from the last
//! fit, with KKT residuals reported, and checked against IPOPT on recorded cases
//! (conformance/sbo-map).
//!
//! Prior **\[PAPER-BUG\]**: the paper's Table 5 values (`ξ = 1/(2δ_A²n²)`, `κ < 1`) contradict
//! its own requirements (`κ > 1`, `ξ < 1/(2n²)`) and pin `Â` to the uniform, rank-one matrix
//! whatever the data (note §2.2). agora's default is the coherent flat prior
//! [`SocialPrior::coherent`] (`κ = 1.05`, `ξ = 1/(4n²)`); the literal values stay available
//! as [`SocialPrior::paper_table5`].
//!
//! Confidence sets (Lemma D.2, Remarks D.3–D.5): `(U, A)` with `J ≥ Ĵ − β`; optionally
//! ([`SocialConfig::separate_lr`]) also `ℓ_u(U) ≥ ℓ̂_u − β_u` and `ℓ_v(AU) ≥ ℓ̂_v − β_v`,
//! where `ℓ̂_u`, `ℓ̂_v` are the separate MLEs (u from private votes; a free `V` from public
//! votes). A bound at a new point `x` extends the Gram by `x` (one more whitened coordinate
//! per agent). Acquisitions over the set (Social BO's optimistic improvement, in agora-acq)
//! build their problem in a [`SetLayout`] and solve it with
//! [`SocialModel::minimize_over_set`].
//!
//! Files: `graph` (A), `votes` (the likelihood), `config`, `model` (data and the whitened
//! Gram), `map` (the MAP and the MLEs), `confidence` (the set and bounds over it), `widths`
//! (the difference widths of the private-vote rule).

// Dense triangular and row loops read as the algebra does.
#![allow(clippy::needless_range_loop)]

mod belief;
mod confidence;
mod config;
mod graph;
mod map;
mod model;
mod votes;
mod widths;

#[cfg(test)]
mod tests;

pub use belief::{ActiveConstraints, SocialBelief, UtilityBelief};
pub use config::{Coupling, SocialConfig, SocialPrior};
pub use graph::SocialGraph;
pub use map::{SetConstraint, SetLayout, SocialFit};
pub use model::{SocialFitState, SocialModel, SocialModelState};
pub use votes::Vote;

use map::constraints;
#[cfg(test)]
use map::permutations;
use model::whiten;
use votes::bt_loglik;
