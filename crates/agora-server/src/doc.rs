//! The API document (`GET /api/openapi.json`), generated with utoipa from the types the
//! handlers read and write: the request bodies, the replies below (which the handlers
//! serialize) and the study types of agora-study and agora-core (feature `openapi`). So the
//! document cannot drift from the server: a field added to a reply appears in it, and so do
//! its numeric bounds and its enums.

use agora_study::live::plot::{BeliefView, GridBelief, OptionBelief};
use agora_study::live::{
    Ballot, OpenQuerySummary, OptionView, Outcome, PendingView, Recommendation, Status, StudySpec,
    StudySummary,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi, ToSchema};

/// An error: `code` for programs, `message` for people (naming the field and the allowed
/// values for bad input).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    pub error: ErrorDetail,
}

/// The error's parts.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorDetail {
    pub code: ErrorCode,
    pub message: String,
    /// The request field at fault, for `invalid_input`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// The machine-readable error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorCode {
    /// 400: a field is wrong; `field` names it.
    InvalidInput,
    /// 400: the body could not be read.
    BadBody,
    /// 401: no token, or not one this study (or server) knows.
    Unauthorized,
    /// 403: the token may not do this.
    Forbidden,
    /// 404: no study of that name.
    UnknownStudy,
    /// 404: no such endpoint.
    NotFound,
    /// 404: the option has no media file.
    NoMedia,
    /// 409: the query is no longer open.
    NotPending,
    /// 409: the log changed underneath.
    Conflict,
    /// 409: a study of that name exists.
    Exists,
    /// 409: the study is not in a state that allows this.
    InvalidState,
    /// 413: the body is over the limit.
    PayloadTooLarge,
    /// 415: a media type the server does not take.
    UnsupportedMediaType,
    /// 500: the store failed.
    Internal,
    /// 503: the database cannot be reached; retry.
    Unavailable,
    /// 503: other servers kept writing to the study; retry.
    Busy,
}

impl std::fmt::Display for ErrorCode {
    /// The code as the JSON carries it (`invalid_input`, ...).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(s)) => f.write_str(&s),
            _ => write!(f, "{self:?}"),
        }
    }
}

/// Who the token belongs to.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Me {
    pub role: Role,
    /// The participant's name, for a participant's token.
    pub participant: Option<String>,
}

/// A token's role in a study.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Role {
    Facilitator,
    Participant,
}

/// `GET /api/studies/{name}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StatusReply {
    pub you: Me,
    /// Events in the log.
    pub seq: u64,
    pub status: Status,
    /// The server's clock (ms since the epoch), for countdowns to `deadline_ms`.
    pub now_ms: i64,
}

/// `GET /api/studies/{name}/query`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PendingReply {
    /// The open query as the caller may see it; null when none is open.
    pub pending: Option<PendingView>,
}

/// `GET /api/studies/{name}/best`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BestReply {
    /// Null before the strategy has anything to recommend.
    pub recommendation: Option<Recommendation>,
}

/// The reply to a change.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Changed {
    pub outcome: Outcome,
    /// Events in the log after the change.
    pub seq: u64,
    /// The query open now, if any.
    pub open_query: Option<u64>,
}

/// `GET /api/studies/{name}/events` (JSON).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EventsReply {
    /// The events, oldest first: each with its `seq`, its time and a `kind` object whose
    /// `type` says what happened (`asked`, `ballot`, `answered`, `closed`, `imported`, ...).
    pub events: Vec<serde_json::Value>,
}

/// `POST /api/studies` (201).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Created {
    pub study: String,
    /// The facilitator's token.
    pub facilitator_token: String,
    /// Each participant's token.
    pub participant_tokens: BTreeMap<String, String>,
    /// The renderer's token: it may only show media with the open query's options
    /// (`POST .../media`).
    pub renderer_token: String,
}

/// A study's page links, relative to the server (they carry the study's tokens).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Links {
    pub facilitator: String,
    pub participants: BTreeMap<String, String>,
}

/// One study in the index.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct IndexRow {
    #[serde(flatten)]
    pub summary: StudySummary,
    /// The state in a few words, e.g. `question 3 open: 2 of 3 voted`.
    pub state: String,
    pub links: Links,
    /// The renderer's token (`POST .../media` only).
    pub renderer_token: String,
}

/// `GET /api/studies`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StudiesReply {
    /// In name order.
    pub studies: Vec<IndexRow>,
}

/// `POST /api/studies/{name}/ballot`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BallotBody {
    /// The open query's id.
    pub query_id: u64,
    /// Whose ballot; defaults to the token's participant (the facilitator must name one).
    pub participant: Option<String>,
    pub ballot: Ballot,
}

/// `POST /api/studies/{name}/close`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CloseBody {
    /// The open group vote's id.
    pub query_id: u64,
}

/// `POST /api/studies/{name}/import`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ImportBody {
    /// Earlier evaluations, `{"temperature": 22, "fans": 1, "value": 3.5}` (the parameters
    /// by name, in the study's units, and the value), or comparisons, `{"winner": {...},
    /// "loser": {...}}`. An error names the row as `line N` (the first is line 1).
    #[schema(min_items = 1, value_type = Vec<Object>)]
    pub rows: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// `POST /api/studies/{name}/enqueue`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnqueueBody {
    /// The option: the parameters by name, in the study's units.
    #[schema(value_type = Object)]
    pub option: serde_json::Map<String, serde_json::Value>,
}

/// A file's bytes (an image or a sound): the body as it is, not JSON.
pub(crate) struct Binary;

impl utoipa::PartialSchema for Binary {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .into()
    }
}

impl ToSchema for Binary {}

/// The study named in the path.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(crate) struct StudyPath {
    /// The study's name.
    #[param(pattern = "^[a-z0-9_-]{1,64}$")]
    name: String,
}

/// Formats of the event log.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub(crate) enum Format {
    Json,
    Csv,
}

/// `GET .../events` options.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub(crate) struct EventsQuery {
    /// `json` (the default) or `csv`.
    #[param(inline)]
    format: Option<Format>,
}

/// The responses every study operation may give besides its own.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub(crate) enum StudyErrors {
    /// Bad input: `error.field` names the field and the message the allowed values.
    #[response(status = 400)]
    Bad(ErrorBody),
    /// No token, or a token unknown for this study.
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// The token may not do this (e.g. another person's private vote).
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// Unknown study.
    #[response(status = 404)]
    Unknown(ErrorBody),
    /// The database cannot be reached (`unavailable`), or other servers kept changing the
    /// study at the same moment (`busy`); nothing was stored: retry after `Retry-After`
    /// seconds.
    #[response(status = 503, headers(("Retry-After" = u32, description = "Seconds to wait before retrying")))]
    Unavailable(ErrorBody),
}

/// The responses a change may give besides [`StudyErrors`].
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub(crate) enum ChangeErrors {
    /// The query is no longer open (`not_pending`), or the study is not in a state that
    /// allows this.
    #[response(status = 409)]
    NotPending(ErrorBody),
    /// Body over 64 KiB.
    #[response(status = 413)]
    TooLarge(ErrorBody),
}

struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let c = doc.components.get_or_insert_with(Default::default);
        let mut bearer = Http::new(HttpAuthScheme::Bearer);
        bearer.description = Some(
            "The facilitator's token (full access except casting another person's private \
             vote) or a participant's token (their own ballots, public information); for \
             the studies index and creating studies, the server's admin token."
                .into(),
        );
        c.add_security_scheme("bearer", SecurityScheme::Http(bearer));
        c.add_security_scheme(
            "query_token",
            SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::with_description(
                "token",
                "The same token as a query parameter (for links and EventSource).",
            ))),
        );
    }
}

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "agora studies API",
        description = "Run a Bayesian-optimization study with people: read the open query, \
            cast ballots (public or private), answer comparisons and evaluations, follow live \
            updates, read the recommendation and export the log. Every acknowledged ballot is \
            committed to the study's store (a SQLite file or a PostgreSQL database) before the \
            response. On PostgreSQL several servers (replicas) may serve the same studies: a \
            client may send any request to any of them, and each one's live updates include \
            what the others stored. A 503 response (`unavailable`: the database cannot be \
            reached; `busy`: other servers kept writing to the study at the same moment) \
            stored nothing and carries `Retry-After`: send the same request again. Generated \
            from the server's request and response types.",
        license(name = "MIT OR Apache-2.0"),
    ),
    components(schemas(
        ErrorBody, ErrorCode, StudySpec, Ballot, Outcome, OptionView, PendingView,
        Recommendation, Status, StudySummary, OpenQuerySummary, BeliefView, OptionBelief,
        GridBelief, agora_core::Answer, agora_core::AnswerKind, Binary
    )),
    modifiers(&Security)
)]
pub(crate) struct ApiDoc;

/// The document as JSON (its paths those of [`crate::api`]'s router), with `servers`
/// naming `host` (the address the client reached) when given.
pub(crate) fn document(host: Option<&str>) -> serde_json::Value {
    static DOC: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    let mut doc = DOC
        .get_or_init(|| serde_json::to_value(crate::api().1).unwrap_or_default())
        .clone();
    if let (Some(h), Some(obj)) = (host, doc.as_object_mut()) {
        obj.insert(
            "servers".into(),
            serde_json::json!([{ "url": format!("http://{h}") }]),
        );
    }
    doc
}
