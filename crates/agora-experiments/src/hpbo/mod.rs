//! `agora reproduce hpbo`: the heteroscedastic-PBO experiments (Sinaga et al. 2024, Fig. 2
//! and the ablations of Fig. 3, S3–S5), their metrics (note §6.3), summaries, plots and a
//! report that checks each headline claim (note §6.6) against the run.
//!
//! Every run goes through [`crate::runner::drive`]: the strategy asks a duel, the simulated
//! person ([`agora_problems::HpboRespondent`]) answers it. Per seed, every method sees the
//! same anchors, the same initial duels and the same answer stream. Metrics are taken at
//! the input the acquisition chose in each round (`x̂_t`, the duel's second option; note
//! §9.17):
//!
//! - `MV(x) = f(x) − ρ σ²(x)` with the person's true noise and `ρ = 3 f(x_max)`;
//! - risk-averse regret `MV(x_max) − MV(x̂_t)` (may be negative: `x_max` maximizes `f`, not
//!   MV) and its cumulative sum; plain regret `f(x_max) − f(x̂_t)` (ρ = 0) and its sum;
//! - best value found `max_{s≤t} f(x̂_s)`, risk-averse best value `max_{s≤t} MV(x̂_s)`;
//! - the true and the inferred noise variance at `x̂_t`.
//!
//! [`runs`](mod@runs) holds the methods, experiments and runs; [`metrics`] the metrics and
//! their summaries; [`plots`] the figures; [`report`](mod@report) the files and the claims;
//! `bench` the timing of `agora bench hpbo`.

mod bench;
pub mod metrics;
pub mod plots;
pub mod report;
pub mod runs;

pub use bench::{HpboBenchRow, bench, bench_table};
pub use metrics::{HpboSummary, METRICS, final_per_seed, mean_noise_per_seed, metric, summarize};
pub use report::{rebuild, report_markdown, reproduce, write_report};
pub use runs::{
    ETA, GAMMA, GAMMA_SCALES, HpboExperiment, HpboMethod, HpboRecord, experiments, run_experiments,
    run_one,
};
