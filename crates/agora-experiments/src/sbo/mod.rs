//! `agora reproduce sbo`: Social BO and its baselines on simulated groups
//! (docs/notes/social-bo.md §4).
//!
//! Metrics per round `t` (note §4.3): the welfare regret `S* − S(x_t)` of the option
//! proposed (true utilities, the facilitator's ρ), cumulative and simple regret, the
//! cumulative private votes `|Q^u_t|` (initial design included), the graph error
//! `‖Â − A‖_F` (SBO), and the wall time of the round's model work.
//!
//! [`run`] drives one strategy against the task's simulated group; [`report`] runs the
//! vote-based grid and writes its report, [`gp`] the GP variant's (App. F.1, H.3);
//! [`bench`](mod@bench) times SBO's iterations; [`ideal`] is the reference for how well
//! the graph `A` can be identified from `k` private votes when `v` is known exactly.

pub mod bench;
pub mod gp;
pub mod ideal;
pub mod report;
pub mod run;

pub use bench::{PAPER_SECONDS_T50, SboBenchRow, bench, bench_table};
pub use gp::{gp_markdown, gp_report, run_gp};
pub use report::{rebuild, report_markdown, reproduce, summary};
pub use run::{
    Method, RuleLog, SboRun, config, gp_config, gp_rounds, gp_tasks, methods, rounds, run_gp_one,
    run_one, seeds, tasks,
};
