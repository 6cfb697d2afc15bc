//! Studies with real people: a durable event log per study ([`store`]), the study's fixed
//! definition ([`spec`]), and the operations the CLI and the server share ([`study`]).

pub mod spec;
pub mod store;
pub mod study;

pub use spec::{METHOD_NAMES, MethodSpec, StudySpec};
pub use store::{
    Ballot, Event, EventKind, SCHEMA_VERSION, SqliteStore, Store, StoreError, StoredStudy,
};
pub use study::{
    Actor, LiveStudy, OptionView, Outcome, PendingView, Recommendation, Status, StudyError,
    StudyResult, iso_utc,
};
