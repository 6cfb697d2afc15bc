//! Studies on a store from Python: `agora.create_study`, `agora.load_study`,
//! `agora.study_names`. The store is the one the `agora` CLI and `agora serve` use, so a
//! study made here opens there and the other way round; every answer is committed before
//! `tell` returns.

use crate::convert::from_json;
use crate::errors::{invalid, store_err, study_err};
use crate::query::Query;
use crate::reply::{labels_of, reply_of};
use crate::space::Space;
use agora_study::live::{
    Actor, EventKind, LiveStudy, MethodSpec, Names, Outcome, ReplyContext, StorageUrl, Store,
    StudySpec, Submission, iso_utc, submission,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Arc, Mutex};

/// The store a storage string names (as `--storage` does in the CLI): a file path or
/// `sqlite:///path` (SQLite), or `postgresql://user:pass@host:port/db` (PostgreSQL).
/// `create`: make a missing store (SQLite: the file; its folder must exist).
fn open_store(storage: &str, create: bool) -> PyResult<Arc<dyn Store>> {
    let url = StorageUrl::parse(storage).map_err(store_err)?;
    if create
        && let Some(dir) = url
            .sqlite_path()
            .and_then(|p| p.parent())
            .filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        return Err(invalid(
            "storage",
            format!("the folder `{}` does not exist", dir.display()),
        ));
    }
    url.open(create).map_err(store_err)
}

/// A study with people (or programs answering for them) on a store.
#[pyclass(module = "agora", name = "Study")]
pub struct Study {
    inner: Mutex<LiveStudy>,
    space: Arc<agora_core::Space>,
}

impl Study {
    fn lock(&self) -> std::sync::MutexGuard<'_, LiveStudy> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The study, caught up with what other processes stored (without the GIL).
    fn synced(&self, py: Python<'_>) -> PyResult<std::sync::MutexGuard<'_, LiveStudy>> {
        let mut g = self.lock();
        let st: &mut LiveStudy = &mut g;
        py.detach(|| st.sync()).map_err(study_err)?;
        Ok(g)
    }

    fn wrap(study: LiveStudy) -> Study {
        let space = Arc::new(study.spec().space.clone());
        Study {
            inner: Mutex::new(study),
            space,
        }
    }
}

/// Create a study on `storage` (a file path, `sqlite:///path` or
/// `postgresql://user:pass@host:port/db`; created if missing) and compute its first query. `method` is a study method (`bo`, `pairs`, `group-pairs`,
/// `social`, `social-ratings`, `hpbo`, `boap`) or a registry name with one (`gp-ei`,
/// `pbo-bald`, ...); `knobs` are its settings. Nothing is stored if any check fails.
#[pyfunction]
#[pyo3(signature = (name, *, method = "pairs", space, participants = None, seed = 0, description = "", storage = "agora.db", **knobs))]
#[allow(clippy::too_many_arguments)]
pub fn create_study(
    py: Python<'_>,
    name: String,
    method: &str,
    space: &Space,
    participants: Option<Vec<String>>,
    seed: u64,
    description: &str,
    storage: &str,
    knobs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Study> {
    let knobs: Vec<(String, String)> = crate::strategy::knobs_of(knobs)?
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect();
    let method = MethodSpec::from_knobs(method, &knobs).map_err(crate::errors::py_err)?;
    let spec = StudySpec {
        name,
        description: description.to_string(),
        space: space.inner.clone(),
        method,
        seed,
        participants: participants.unwrap_or_default(),
        round_seconds: None,
        media: Vec::new(),
    };
    // Check everything before the store is touched: a bad spec leaves no trace.
    py.detach(|| spec.validate())
        .map_err(crate::errors::py_err)?;
    let store = py.detach(|| open_store(storage, true))?;
    let study = py
        .detach(|| LiveStudy::create(store, spec))
        .map_err(study_err)?;
    Ok(Study::wrap(study))
}

/// Open the study `name` on `storage`, replaying its log (exact resume).
#[pyfunction]
#[pyo3(signature = (name, *, storage = "agora.db"))]
pub fn load_study(py: Python<'_>, name: &str, storage: &str) -> PyResult<Study> {
    let store = py.detach(|| open_store(storage, false))?;
    let study = py
        .detach(|| LiveStudy::open(store, name))
        .map_err(study_err)?;
    Ok(Study::wrap(study))
}

/// The names of the studies on `storage`.
#[pyfunction]
#[pyo3(signature = (*, storage = "agora.db"))]
pub fn study_names(py: Python<'_>, storage: &str) -> PyResult<Vec<String>> {
    let store = py.detach(|| open_store(storage, false))?;
    store.list().map_err(store_err)
}

fn outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Recorded => "recorded",
        Outcome::Duplicate => "duplicate",
        Outcome::Answered => "answered",
    }
}

#[pymethods]
impl Study {
    /// The study's name.
    #[getter]
    fn name(&self) -> String {
        self.lock().spec().name.clone()
    }

    /// The participants, in ballot order.
    #[getter]
    fn participants(&self) -> Vec<String> {
        self.lock().spec().participants.clone()
    }

    /// The space.
    #[getter]
    fn space(&self) -> Space {
        Space {
            inner: (*self.space).clone(),
        }
    }

    /// The study's spec (space, method with every knob, seed, participants) as a dict.
    fn spec<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v =
            serde_json::to_value(self.lock().spec()).map_err(|e| invalid("spec", e.to_string()))?;
        from_json(py, &v)
    }

    /// The open query (after catching up with answers other processes stored), or `None`
    /// when the method could not propose one (`status()["stalled"]` says why).
    /// `worker=` (several workers on one `bo` study, as `agora ask --worker`): the query
    /// this worker holds, else one handed to it now (the open query nobody holds, else a
    /// new one the method proposes with the others' points pending); answer it with
    /// `tell(query=q.id, ...)`.
    #[pyo3(signature = (*, worker = None))]
    fn ask(&self, py: Python<'_>, worker: Option<String>) -> PyResult<Option<Query>> {
        let mut s = self.synced(py)?;
        let roster = Arc::new(s.spec().participants.clone());
        let q = match worker {
            Some(w) => {
                let st: &mut LiveStudy = &mut s;
                Some(py.detach(|| st.ask_worker(&w)).map_err(study_err)?)
            }
            None => s.pending().cloned(),
        };
        Ok(q.map(|q| Query {
            inner: q,
            space: self.space.clone(),
            roster,
        }))
    }

    /// Answer the open query (or `query=` id: any open query, e.g. a worker's) with
    /// keywords in the shapes `agora tell` takes: `winner=` ("A", "B", an index, a name, or
    /// "tie"), `tie=True`, `values=[...]`, `who=` with `vote=` or `rating=` (one
    /// participant's ballot), `votes=[...]`, `ratings=[...]`. Returns `"answered"` (the
    /// strategy moved on), `"recorded"` (a ballot; others still to come) or `"duplicate"`
    /// (the same answer was stored before).
    #[pyo3(signature = (*, query = None, **kwargs))]
    fn tell(
        &self,
        py: Python<'_>,
        query: Option<u64>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<&'static str> {
        let (reply, matrix) = reply_of(kwargs)?;
        if matrix.is_some() {
            return Err(invalid(
                "matrix",
                "studies with people do not ask for Hessians",
            ));
        }
        let mut s = self.synced(py)?;
        let open = match query {
            Some(id) => s.open_query(id).cloned(),
            None => s.pending().cloned(),
        };
        let id = match (query, &open) {
            (Some(id), _) => id,
            (None, Some(q)) => q.id,
            (None, None) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    match s.stalled() {
                        Some(why) => format!(
                            "study `{}` has no open query: the method could not propose one ({why})",
                            s.spec().name
                        ),
                        None => format!("study `{}` has no open query", s.spec().name),
                    },
                ));
            }
        };
        let q = match open.filter(|q| q.id == id) {
            Some(q) => q,
            None => s
                .events(&Actor::Owner)
                .map_err(study_err)?
                .into_iter()
                .find_map(|e| match e.kind {
                    EventKind::Asked { query, .. } if query.id == id => Some(query),
                    _ => None,
                })
                .ok_or_else(|| {
                    invalid(
                        "query",
                        format!("query {id} was never asked in study `{}`", s.spec().name),
                    )
                })?,
        };
        let labels = labels_of(&q, &self.space);
        let participants = s.spec().participants.clone();
        let name = s.spec().name.clone();
        let ctx = ReplyContext {
            labels: &labels,
            participants: &participants,
            study: Some(&name),
            names: Names::KEYWORDS,
        };
        let sub = submission(&q, &reply, &ctx).map_err(crate::errors::py_err)?;
        let st: &mut LiveStudy = &mut s;
        let o = py
            .detach(|| match sub {
                Submission::Answer(a) => st.tell(&Actor::Owner, a),
                Submission::Ballot(who, b) => st.ballot(&Actor::Owner, id, &who, b),
            })
            .map_err(study_err)?;
        Ok(outcome(o))
    }

    /// Close the open group vote now: missing votes count as can't tell.
    fn close(&self, py: Python<'_>) -> PyResult<&'static str> {
        let mut s = self.synced(py)?;
        let id = s
            .pending()
            .map(|q| q.id)
            .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("no query is open"))?;
        let st: &mut LiveStudy = &mut s;
        let o = py
            .detach(|| st.close(&Actor::Owner, id))
            .map_err(study_err)?;
        Ok(outcome(o))
    }

    /// The study at a glance (as `agora status --json`): answers, rounds per channel, the
    /// open query, the recommendation.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = self.synced(py)?;
        let v = serde_json::to_value(s.status(&Actor::Owner))
            .map_err(|e| invalid("status", e.to_string()))?;
        from_json(py, &v)
    }

    /// The recommendation so far (as `agora best --json`), or `None`.
    fn best<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = self.synced(py)?;
        let v =
            serde_json::to_value(s.recommendation()).map_err(|e| invalid("best", e.to_string()))?;
        from_json(py, &v)
    }

    /// The log: `format="csv"` (one row per event, options in user units, as `agora
    /// export --format csv`) returns text; `format="json"` returns the spec and every event
    /// as a dict.
    #[pyo3(signature = (format = "csv"))]
    fn export<'py>(&self, py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyAny>> {
        let s = self.synced(py)?;
        match format {
            "csv" => Ok(s
                .export_csv(&Actor::Owner)
                .map_err(study_err)?
                .into_pyobject(py)?
                .into_any()),
            "json" => {
                let doc = serde_json::json!({
                    "study": s.spec(),
                    "created_utc": iso_utc(s.stored().created_ms),
                    "events": s.events(&Actor::Owner).map_err(study_err)?,
                });
                from_json(py, &doc)
            }
            other => Err(invalid(
                "format",
                format!("`{other}` is not a format; allowed: csv, json"),
            )),
        }
    }

    /// The facilitator's token and each participant's, for the web page (`agora serve`).
    fn tokens<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.lock();
        let st = s.stored();
        let d = PyDict::new(py);
        d.set_item("facilitator", &st.facilitator_token)?;
        let p = PyDict::new(py);
        for (n, t) in st.spec.participants.iter().zip(&st.participant_tokens) {
            p.set_item(n, t)?;
        }
        d.set_item("participants", p)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let s = self.lock();
        format!(
            "<agora.Study {:?} method={} events={}>",
            s.spec().name,
            s.spec().method.name(),
            s.seq()
        )
    }
}
