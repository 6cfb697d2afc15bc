//! `agora reproduce boap`: BOAP and its baselines on the paper's synthetic functions, the
//! IA / NP ablations, and pool-based tasks (`docs/notes/boap.md` §4).
//!
//! Budget (note A2): `T = 10d + 5` evaluations in all, the `t′ = d + 3` initial designs
//! included (the paper's loop `t = t′+1..T`). Evaluations are noise-free (A15). Simple
//! regret after evaluation `t` is `f* − max_{j≤t} f(x_j)`. Every method of a seed shares
//! its initial designs (the same seed draws them).
//!
//! [`runs`](mod@runs) holds the tasks, settings and runs; [`report`](mod@report) the files,
//! figures and the claims.

pub mod report;
pub mod runs;

pub use report::{rebuild, report_markdown, reproduce};
pub use runs::{BoapRun, Ext, GATE, Method, Setting, Task, electrode_task, jobs, run_one, tasks};
