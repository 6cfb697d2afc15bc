//! agora-math: the numerical layer every agora model stands on.
//!
//! Nothing here knows about Gaussian processes or acquisitions (see STYLE.md): robust
//! Cholesky with escalating jitter ([`linalg`]), normal-distribution special functions in
//! log space ([`special`]), truncated-normal samplers ([`truncnorm`]), seeded space-filling designs ([`design`]), box-bounded
//! L-BFGS-B with multistart ([`optim`]), an augmented-Lagrangian solver for smooth
//! constrained problems ([`constrained`]), square assignment (Hungarian, Sinkhorn;
//! [`assign`]), maximal cliques ([`cliques`]), the CMA-ES sampler and update ([`cma_es`]),
//! rank statistics ([`rank`]), seeded ChaCha streams ([`rng`]) and the central finite differences that check analytic
//! gradients in tests ([`fd`]).

pub mod assign;
pub mod cliques;
pub mod cma_es;
pub mod constrained;
pub mod design;
pub mod fd;
pub mod linalg;
pub mod optim;
pub mod rank;
pub mod rng;
pub mod special;
pub mod truncnorm;
pub mod welfare;

pub use agora_core::{Error, Result, check_finite_slice};
