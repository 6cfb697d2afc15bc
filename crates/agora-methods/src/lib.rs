//! agora-methods: strategies.
//!
//! A [`Strategy`] is a deterministic state machine: `ask` returns the next [`Query`],
//! `tell` takes its [`Answer`]. Its whole state is a function of (space, configuration,
//! seed, answers so far), so replaying the answers rebuilds it exactly. A strategy composes
//! a model (agora-gp), an acquisition and a maximizer (agora-acq); it never re-implements
//! them. The [`registry`] builds any of them by name. The [`suggest`]ers run a strategy's
//! model step on a history supplied from outside (samplers inside other frameworks).

pub mod alebo;
pub mod boap;
pub mod cbo;
pub mod cbo_graph;
pub mod cma_es;
pub mod discrete;
pub mod dsbo;
mod evaluations;
pub mod gibo;
mod gp_step;
pub mod gp_ucb;
pub mod group;
mod history;
pub mod hpbo;
pub mod line_bo;
pub mod open;
pub mod pbo;
pub mod registry;
pub mod sbo;
pub mod sbo_gp;
mod snapshot;
pub mod standard;
pub mod suggest;
#[cfg(test)]
mod testing;
pub mod tree_bo;
pub mod turbo;
pub mod uniform_search;

pub use alebo::{Alebo, AleboAcquisition, AleboConfig, AleboMetric};
pub use boap::{Arm, ArmRule, Boap, BoapConfig, BoapExtension, BoapRecord, BoapVariant};
pub use cbo::{Cbo, CboConfig, CboScoring, FixedGp};
pub use cbo_graph::{Graph, GraphCbo, GraphCboConfig, GraphScoring, GraphSearch};
pub use cma_es::{CmaEs, CmaEsConfig};
pub use dsbo::{Dsbo, DsboConfig, StructureSearch};
pub use gibo::{Gibo, GiboConfig};
pub use gp_ucb::{FitRecord, GpUcb, GpUcbConfig};
pub use group::GroupPbo;
pub use history::History;
pub use hpbo::{Bandwidth, Hpbo, HpboConfig};
pub use line_bo::{LineBo, LineBoConfig, LineDirection};
pub use open::{AskTell, OpenQuery};
pub use pbo::{PairRule, Pbo, PboConfig};
pub use sbo::{PrivateRule, RoundWidths, Sbo, SboConfig, SboRound, SboVariant};
pub use sbo_gp::{SboGp, SboGpConfig, SboGpRound, SboGpVariant};
pub use standard::{GpBo, GpBoConfig, RandomSearch, SobolSearch, StandardAcq};
pub use suggest::{GpSuggester, PreferenceSuggester, PreferenceSuggesterConfig};
pub use tree_bo::{TreeBo, TreeBoConfig, TreeBoRecord, TreeBoResample};
pub use turbo::{TrustRegionAcq, Turbo, TurboConfig};
pub use uniform_search::UniformSearch;

use agora_core::{Answer, Error, Observation, Point, Query, QueryKind, Result, Space};

/// The registry methods whose strategies take several open queries at once
/// ([`Strategy::ask_parallel`]).
pub const PARALLEL_METHODS: &[&str] = &[
    "random",
    "sobol",
    "gp-logei",
    "gp-ei",
    "gp-pi",
    "gp-ucb",
    "gp-ts",
    "gp-logei-botorch",
];

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

/// The methods that implement [`Strategy::import`] and [`Strategy::enqueue`].
pub const IMPORT_METHODS: [&str; 6] = [
    "gp-logei",
    "gp-ei",
    "gp-pi",
    "gp-ucb",
    "gp-ts",
    "pbo (pairs, group-pairs)",
];

/// The error of a method without [`Strategy::import`] or [`Strategy::enqueue`]: it names
/// the method and the methods that take `what`.
fn not_importing(field: &str, method: &str, what: &str) -> Error {
    Error::invalid(
        field,
        format!(
            "method `{method}` takes no {what}; methods that do: {}",
            IMPORT_METHODS.join(", ")
        ),
    )
}

/// An imported or enqueued point: `d` finite unit-cube coordinates in [0, 1], canonical in
/// `space` (snapped to a representable point); errors name `field`.
pub(crate) fn unit_point(space: &Space, field: &str, x: &[f64]) -> Result<Vec<f64>> {
    if !matches!(space, Space::Box { .. }) {
        return Err(Error::invalid(
            field,
            "imported and enqueued options need a box space",
        ));
    }
    let d = space.dim();
    if x.len() != d {
        return Err(Error::dim(field, d, x.len()));
    }
    if !x.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)) {
        return Err(Error::invalid(
            field,
            "unit-cube coordinates must be finite numbers in [0, 1]",
        ));
    }
    space.canonicalize(x)
}

/// An ask/tell optimizer.
pub trait Strategy: Send + std::fmt::Debug {
    /// Short name, e.g. `gp-logei`.
    fn name(&self) -> String;
    /// The next query. Asking again before telling returns the same open query.
    fn ask(&mut self) -> Result<Query>;
    /// The answer to the open query (to any open query, by its id, when several are open:
    /// see [`Strategy::ask_parallel`]). Errors (wrong id, wrong count, NaN) leave the state
    /// unchanged.
    fn tell(&mut self, answer: &Answer) -> Result<()>;
    /// A new query while earlier ones are still open (several workers evaluating at once):
    /// the strategy treats the open queries as pending and proposes something else. With
    /// nothing open it is the query [`Strategy::ask`] would return. [`Strategy::ask`]
    /// still returns the oldest open query, and [`Strategy::tell`] takes the answer of any
    /// open one by id. The state stays a deterministic function of (seed, the ordered
    /// sequence of asks, parallel asks and answers).
    ///
    /// The default is an error naming the method: most methods keep one open query.
    fn ask_parallel(&mut self) -> Result<Query> {
        Err(Error::invalid(
            "worker",
            format!(
                "method `{}` keeps one open query at a time; several open queries (workers) \
                 need one of: {}",
                self.name(),
                PARALLEL_METHODS.join(", ")
            ),
        ))
    }
    /// The recommended point and its value so far (the best observed, for noiseless
    /// evaluation strategies), if any.
    fn recommend(&self) -> Option<(Point, f64)>;
    /// Number of answered queries.
    fn n_answered(&self) -> usize;
    /// The model's current belief about the objective (the latent utility for preference
    /// learners) at unit-cube points: posterior mean and standard deviation at each. `None`
    /// when the strategy has no model yet, or none that predicts at arbitrary points.
    fn belief(&self, points: &[Vec<f64>]) -> Option<Vec<(f64, f64)>> {
        let _ = points;
        None
    }
    /// For strategies that learn how reliable each rater is: every rater's noise scale,
    /// in multiples of the model's noise (a rater's weight goes as 1/scale²). `None` when
    /// the strategy treats every rater alike.
    fn rater_noise(&self) -> Option<Vec<(String, f64)>> {
        None
    }
    /// For group strategies: each agent's estimated (true, influence-free) utility at
    /// unit-cube points, as `[point][agent] = (mean, sd)`, beside [`Strategy::belief`]'s
    /// welfare. `None` when the strategy models no agents, or has no model yet.
    fn agent_beliefs(&self, points: &[Vec<f64>]) -> Option<Vec<Vec<(f64, f64)>>> {
        let _ = points;
        None
    }
    /// Take feedback gathered before this strategy asked anything (earlier evaluations or
    /// comparisons, [`Observation`]): the model learns from it as from its own answers,
    /// and a query already open is withdrawn (the next [`Strategy::ask`] asks afresh, in
    /// the light of the imported data). Only before the first answer; imported data do
    /// not count in [`Strategy::n_answered`]. Errors (a kind of feedback the method does
    /// not learn from, a point of the wrong dimension or outside the unit cube, a value
    /// that is not finite, an answer already told) leave the strategy unchanged.
    ///
    /// The default is an error naming the methods that import.
    fn import(&mut self, data: &[Observation]) -> Result<()> {
        let _ = data;
        Err(not_importing("import", &self.name(), "imported data"))
    }
    /// Put an option of the user's own (unit-cube coordinates of a box space) into the
    /// next query the strategy asks (after the one open now, if any): an evaluation
    /// strategy evaluates it, a preference strategy compares it with its own best
    /// challenger. Several enqueued options are asked in order. Errors leave the strategy
    /// unchanged; the default is an error naming the methods that take options.
    fn enqueue(&mut self, option: &[f64]) -> Result<()> {
        let _ = option;
        Err(not_importing(
            "enqueue",
            &self.name(),
            "options of the user's own",
        ))
    }
    /// Whether [`Strategy::enqueue`] takes options (so a facilitator's page can offer it).
    fn enqueues(&self) -> bool {
        false
    }
    /// The strategy's state as plain data, for resuming without replaying its history
    /// (a live study keeps one beside its log; see [`Strategy::restore`]). `Ok(None)`: this
    /// method keeps no snapshots, and a study of it is opened by replaying its log.
    fn snapshot(&self) -> Result<Option<serde_json::Value>> {
        Ok(None)
    }
    /// Install a [`Strategy::snapshot`] on a strategy freshly built with the same method,
    /// settings, space and seed: afterwards it asks, answers and reports bit for bit as the
    /// strategy that took the snapshot. Errors (a snapshot of another method or format, or
    /// one that does not fit) leave the strategy unchanged.
    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        let _ = state;
        Err(Error::invalid(
            "snapshot",
            format!("method `{}` keeps no snapshots", self.name()),
        ))
    }
}

/// The query point of an option: its index in a finite candidate set (matched by features),
/// or its unit-cube coordinates in a box.
pub(crate) fn point_of(space: &Space, x: &[f64]) -> Point {
    match space {
        Space::Candidates { features, .. } => Point::Index(
            features
                .iter()
                .position(|f| f.as_slice() == x)
                .unwrap_or_default(),
        ),
        Space::Box { .. } => Point::Unit(x.to_vec()),
    }
}

/// A uniformly random option: a row of a candidate set, or a canonical point of a box.
pub(crate) fn random_option(space: &Space, rng: &mut agora_math::rng::Rng) -> Vec<f64> {
    use rand::RngExt;
    match space {
        Space::Candidates { features, .. } => features[rng.random_range(0..features.len())].clone(),
        Space::Box { .. } => {
            let x: Vec<f64> = (0..space.dim()).map(|_| rng.random::<f64>()).collect();
            space.canonicalize(&x).unwrap_or(x)
        }
    }
}

/// The options an acquisition is screened over: every option of a finite candidate set, or
/// `n` scrambled Sobol points of a box (seeded by `seed`), canonicalized.
pub(crate) fn option_pool(space: &Space, n: usize, seed: u64) -> Result<Vec<Vec<f64>>> {
    match space {
        Space::Candidates { features, .. } => Ok(features.clone()),
        Space::Box { .. } => agora_math::design::sobol(n.max(1), space.dim(), seed)?
            .into_iter()
            .map(|x| space.canonicalize(&x))
            .collect(),
    }
}

/// A precomputed kernel over a finite option set from its Gram rows; the options' features
/// must be their indices (one column). Errors name `gram` or `gram[i]`.
pub(crate) fn gram_kernel(space: &Space, rows: &[Vec<f64>]) -> Result<agora_gp::Precomputed> {
    let Space::Candidates { features, .. } = space else {
        return Err(agora_core::Error::invalid(
            "gram",
            "a precomputed kernel needs a finite option set",
        ));
    };
    let (n, d) = (features.len(), space.dim());
    if d != 1 || rows.len() != n {
        return Err(agora_core::Error::invalid(
            "gram",
            format!(
                "needs one row per option ({n}) and index features (one column), got {} rows and {d} columns",
                rows.len()
            ),
        ));
    }
    if let Some(i) = rows.iter().position(|r| r.len() != n) {
        return Err(agora_core::Error::dim(
            format!("gram[{i}]"),
            n,
            rows[i].len(),
        ));
    }
    agora_gp::Precomputed::new(faer::Mat::from_fn(n, n, |i, j| rows[i][j]))
}

/// A model's `(means, variances)` at some points as `(mean, sd)` pairs, what
/// [`Strategy::belief`] returns.
pub(crate) fn with_sd((mean, var): (Vec<f64>, Vec<f64>)) -> Vec<(f64, f64)> {
    mean.into_iter()
        .zip(var)
        .map(|(m, v)| (m, v.sqrt()))
        .collect()
}
