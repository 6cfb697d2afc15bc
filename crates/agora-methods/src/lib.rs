//! agora-methods: strategies.
//!
//! A [`Strategy`] is a deterministic state machine: `ask` returns the next [`Query`],
//! `tell` takes its [`Answer`]. Its whole state is a function of (space, configuration,
//! seed, answers so far), so replaying the answers rebuilds it exactly. A strategy composes
//! a model (agora-gp), an acquisition and a maximizer (agora-acq); it never re-implements
//! them.

pub mod cbo;
pub mod discrete;
mod history;
pub mod hpbo;
pub mod pbo;
pub mod standard;

pub use cbo::{Cbo, CboConfig, CboScoring, FixedGp};
pub use history::History;
pub use hpbo::{Bandwidth, Hpbo, HpboConfig};
pub use pbo::{PairRule, Pbo, PboConfig};
pub use standard::{
    GpBo, GpBoConfig, RandomSearch, SobolSearch, StandardAcq, by_name, method_names,
};

use agora_core::{Answer, Point, Query, Result};

/// An ask/tell optimizer.
pub trait Strategy: Send + std::fmt::Debug {
    /// Short name, e.g. `gp-logei`.
    fn name(&self) -> String;
    /// The next query. Asking again before telling returns the same open query.
    fn ask(&mut self) -> Result<Query>;
    /// The answer to the open query. Errors (wrong id, wrong count, NaN) leave the state
    /// unchanged.
    fn tell(&mut self, answer: &Answer) -> Result<()>;
    /// The recommended point and its value so far (the best observed, for noiseless
    /// evaluation strategies), if any.
    fn recommend(&self) -> Option<(Point, f64)>;
    /// Number of answered queries.
    fn n_answered(&self) -> usize;
}
