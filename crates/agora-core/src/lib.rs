//! agora-core: the vocabulary shared by every agora crate.
//!
//! A [`Space`] says what can be proposed (a box of real / log-real / integer / categorical
//! parameters, or a finite candidate set) and maps between user units and the unit cube or
//! candidate indices that models work on. A [`Query`] says what must be asked of whom; an
//! [`Answer`] carries what came back. Benchmarks answer queries with an oracle, people answer
//! them through the CLI; a strategy cannot tell the difference.

mod error;
mod protocol;
pub mod snapshot;
mod space;

pub use error::{Error, Result, check_finite, check_finite_slice};
pub use protocol::{Answer, AnswerKind, Channel, Observation, Point, Query, QueryKind, Respondent};
pub use space::{Param, ParamValue, Space};
