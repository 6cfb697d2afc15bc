//! agora-experiments: simulated runs of strategies against respondents, and what they show.
//!
//! [`runner`] executes method × problem × seed grids in parallel (rayon) with a progress
//! bar; every run is seeded from its own (seed, method, problem) so results do not depend
//! on the thread count. [`report`] turns records into summaries (mean ± SE), markdown and
//! SVG regret plots. [`suites`] holds the `agora reproduce` suites; [`bench`](mod@bench) the
//! benchmarks run side by side with the Python anchors.

pub mod bench;
pub mod boap;
pub mod cbo;
pub mod dsbo;
pub mod hpbo;
pub mod report;
pub mod runner;
pub mod sbo;
pub mod suites;

pub use runner::{Record, RunSpec, run_grid};
