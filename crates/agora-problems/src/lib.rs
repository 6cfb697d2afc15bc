//! agora-problems: benchmarks with known optima and oracles that answer agora's queries.
//!
//! A problem knows nothing of the method solving it (STYLE.md): an [`Oracle`] receives a
//! [`agora_core::Query`] and returns an [`agora_core::Answer`] exactly as a person would
//! through the CLI.

pub mod additive;
pub mod additive_respondent;
pub mod boap;
pub mod boap_respondent;
pub mod cnn_tuning;
pub mod dsbo_env;
pub mod dsbo_respondent;
pub mod functions;
pub mod hom;
pub mod hpbo;
pub mod mpe;
mod oracle;
pub mod pmv;
pub mod ppo;
pub mod reinforce;
pub mod social;
pub mod traffic;
pub mod tuning;

pub use additive::{AdditiveConfig, AdditiveFunction, FeatureKernel, OptimumSearch};
pub use additive_respondent::AdditiveRespondent;
pub use boap::{BoapBenchmark, Pool, SimulatedExpert};
pub use boap_respondent::{BoapRespondent, ObjectiveTruth};
pub use dsbo_env::{DsboEnvKind, DsboTask};
pub use dsbo_respondent::DsboRespondent;
pub use functions::{TestFunction, by_name};
pub use hom::{Ablation, HomConfig, HomPolicy, HomSize};
pub use hpbo::{HpboProblem, HpboRespondent, OracleDensity};
pub use oracle::{Oracle, Problem, RaterModel};
pub use ppo::{PpoConfig, ppo};
pub use reinforce::{ReinforceConfig, reinforce};
