//! agora-experiments: simulated runs of strategies against respondents, and what they show.
//!
//! [`runner`] holds the one ask → answer → tell loop ([`drive`]) and the parallel runner
//! over grids of runs with a progress bar ([`Runner::run_parallel`]), here or as a sweep
//! whose runs workers on many machines share ([`sweep`]); [`grid`] runs method × problem
//! × seed grids on test functions, every run seeded from its own (seed, method, problem) so
//! results do not depend on the thread count. [`stats`] has the statistics and the one
//! verdict rule of every report, [`table`] the one table writer; [`report`] turns records
//! into summaries, files and SVG regret plots, [`curves`] draws the suites' mean ± SE curves. [`suites`] holds the `agora reproduce` suites; [`bench`](mod@bench) the
//! benchmarks run side by side with the Python anchors.

pub mod bench;
pub mod boap;
pub mod cbo;
pub mod curves;
pub mod dsbo;
pub mod dsbo_mujoco;
pub mod grid;
pub mod hpbo;
pub mod pbo_paired;
pub mod report;
pub mod runner;
pub mod sbo;
pub mod stats;
pub mod suites;
pub mod sweep;
pub mod table;

pub use grid::{Record, RunSpec, run_grid};
pub use runner::{Runner, Step, drive};
