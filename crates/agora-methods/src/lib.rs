//! agora-methods: strategies.
//!
//! A [`Strategy`] is a deterministic state machine: `ask` returns the next [`Query`],
//! `tell` takes its [`Answer`]. Its whole state is a function of (space, configuration,
//! seed, answers so far), so replaying the answers rebuilds it exactly. A strategy composes
//! a model (agora-gp), an acquisition and a maximizer (agora-acq); it never re-implements
//! them.

pub mod boap;
pub mod cbo;
pub mod cbo_graph;
pub mod discrete;
pub mod dsbo;
mod history;
pub mod hpbo;
pub mod pbo;
pub mod sbo;
pub mod sbo_gp;
pub mod standard;

pub use boap::{Arm, ArmRule, Boap, BoapConfig, BoapRecord, BoapVariant};
pub use cbo::{Cbo, CboConfig, CboScoring, FixedGp};
pub use cbo_graph::{Graph, GraphCbo, GraphCboConfig, GraphScoring, GraphSearch};
pub use dsbo::{BlackBoxOptimizer, Dsbo, DsboConfig, Trace};
pub use history::History;
pub use hpbo::{Bandwidth, Hpbo, HpboConfig};
pub use pbo::{PairRule, Pbo, PboConfig};
pub use sbo::{Sbo, SboConfig, SboRound, SboVariant};
pub use sbo_gp::{SboGp, SboGpConfig, SboGpRound, SboGpVariant};
pub use standard::{
    GpBo, GpBoConfig, RandomSearch, SobolSearch, StandardAcq, by_name, method_names,
};

use agora_core::{Answer, Point, Query, QueryKind, Result, Space};

/// A comparison query `id` over proposals in the unit cube (snapped to representable
/// points), and the snapped options the answer will index.
pub(crate) fn compare_query(
    space: &Space,
    id: u64,
    proposals: Vec<Vec<f64>>,
) -> Result<(Query, Vec<Vec<f64>>)> {
    let options = proposals
        .into_iter()
        .map(|x| space.canonicalize(&x))
        .collect::<Result<Vec<_>>>()?;
    let q = Query {
        id,
        kind: QueryKind::Compare {
            points: options.iter().map(|x| Point::Unit(x.clone())).collect(),
            rater: None,
        },
    };
    Ok((q, options))
}

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
