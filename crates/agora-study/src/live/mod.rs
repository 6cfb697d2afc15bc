//! Studies with real people: a durable event log per study ([`store`]: SQLite or
//! PostgreSQL, named by a storage URL), the study's fixed definition ([`spec`]), the
//! operations the CLI and the server share ([`study`]), answers in the shapes people give
//! them ([`reply`]), the facilitator's figure ([`plot`]) and the studies index ([`index`]).

pub mod import;
pub mod index;
pub mod media;
pub mod plot;
pub mod reply;
#[cfg(feature = "openapi")]
mod schema;
pub mod spec;
pub mod store;
pub mod study;

pub use index::{OpenQuerySummary, StudySummary, summarize, summarize_all, summarize_stored};
pub use reply::{Input, Names, Pick, Reply, ReplyContext, Submission, letter, submission};
pub use spec::{METHOD_NAMES, MethodSpec, ROUND_SECONDS, StudySpec};
pub use store::{
    Ballot, Change, ChangeHandler, Event, EventKind, PostgresStore, PostgresUrl, SCHEMA_VERSION,
    SNAPSHOTS_KEPT, ScratchSchema, SqliteStore, StorageUrl, Store, StoreError, StoreResult,
    StoredSnapshot, StoredStudy, Subscription, new_token, open_store, test_postgres_url,
};
pub use study::{
    Actor, BallotRequest, HeldQuery, LiveStudy, OptionView, Outcome, PendingView, RaterWeight,
    Recommendation, Status, StudyError, StudyResult, iso_utc,
};
