//! Studies with real people: a durable event log per study ([`store`]), the study's fixed
//! definition ([`spec`]), the operations the CLI and the server share ([`study`]), and the
//! facilitator's figure ([`plot`]).

pub mod plot;
pub mod spec;
pub mod store;
pub mod study;

pub use spec::{METHOD_NAMES, MethodSpec, StudySpec};
pub use store::{
    Ballot, Event, EventKind, SCHEMA_VERSION, SqliteStore, Store, StoreError, StoredStudy,
    new_token,
};
pub use study::{
    Actor, LiveStudy, OptionView, Outcome, PendingView, Recommendation, Status, StudyError,
    StudyResult, iso_utc,
};
