//! Suggesters: the model step of a strategy run on a history supplied from outside.
//!
//! A [`crate::Strategy`] owns its history and accepts only answers to its own queries. A
//! sampler inside another framework (an Optuna sampler, optuna-dashboard's preferential
//! mode) does not: each time it is asked, it is handed the study's completed trials, which
//! it may or may not have proposed, and must propose the next point. A suggester takes
//! those observations as they come (unit-cube points, checked and snapped onto the space)
//! and proposes the next point:
//!
//! - [`GpSuggester`]: evaluations, GP-BO's model step ([`crate::GpBo`]: the same model,
//!   acquisition and maximizer);
//! - [`PreferenceSuggester`]: pairwise comparisons, a preference GP and EUBO against the
//!   option the person will compare with, in a trust region around it ([`crate::Pbo`]'s
//!   winner-vs-challenger rule with settings for a person's answers, measured in its docs).

mod gp_suggester;
mod preference_suggester;
pub(crate) mod trust_region;
mod unit_point;

pub use gp_suggester::GpSuggester;
pub use preference_suggester::{PreferenceSuggester, PreferenceSuggesterConfig};
