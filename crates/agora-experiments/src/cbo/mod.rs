//! `agora reproduce cbo`: collaborative BO with fair regret (Sim et al. 2021) on
//! Hartmann-6d with n = 3 parties, against the authors' code re-run on this machine; the
//! hyper-parameter tuning (softmax regression with n = 5 and 50, a small CNN with n = 10)
//! and traffic-hotspot experiments with solo GP-UCB baselines (docs/notes/collaborative-fair-bo.md).
//!
//! Metrics (note §1 and §4; the authors' notebook formulas) are in [`metrics`](mod@metrics); every run
//! drives a per-party strategy against its parties' respondent ([`hartmann`], [`tuning`],
//! [`traffic`]); the solo baselines run one-party strategies side by side ([`solo`]).
//! [`report`] and [`task_report`] write the report, [`reproduce`](mod@reproduce) runs it
//! all, [`bench`](mod@bench) times it.

pub mod bench;
pub mod hartmann;
pub mod metrics;
pub mod rationality;
pub mod report;
pub mod reproduce;
pub mod solo;
pub mod task_report;
pub mod traces;
pub mod traffic;
pub mod tuning;

pub use bench::{
    AUTHORS_ROUND_SECONDS, CboBenchRow, TrafficBenchRow, bench, bench_table, bench_traffic,
    bench_traffic_table,
};
pub use hartmann::{CboVariant, REFERENCE, SEEDS, T, parties, run_one, run_rounds, variants};
pub use metrics::{
    CboMetrics, CboRun, CboSummary, RHO_EVAL, fair_regret_by_rounds, final_party_sr, metrics,
    summarize, summarize_with,
};
pub use report::report_markdown;
pub use reproduce::{rebuild, reproduce};
pub use solo::{SideBySide, SoloUcb};
pub use task_report::{
    cnn_markdown, task_markdown, traffic_markdown, tuning_markdown, tuning50_markdown,
};
pub use traffic::{
    TRAFFIC_SEEDS, TRAFFIC_T, WorstCase, run_traffic, run_traffic_with, traffic_graph,
    traffic_worst_case,
};
pub use tuning::{
    CNN_C1, CNN_PARTIES, CNN_T, TUNING_50_T, TUNING_PARTIES, TUNING_T, run_cnn, run_tuning,
    run_tuning_n,
};
