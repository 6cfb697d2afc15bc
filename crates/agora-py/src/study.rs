//! Studies on a store from Python: `agora.create_study`, `agora.load_study`,
//! `agora.study_names`. The store is the one the `agora` CLI and `agora serve` use, so a
//! study made here opens there and the other way round; every answer is committed before
//! `tell` returns.

use crate::convert::from_json;
use crate::errors::{invalid, store_err, study_err};
use crate::query::Query;
use crate::reply::{labels_of, reply_of};
use crate::space::Space;
use agora_study::live::media::{Media, content_type_of};
use agora_study::live::{
    Actor, EventKind, LiveStudy, MethodSpec, Names, Outcome, ReplyContext, StorageUrl, Store,
    StudySpec, Submission, iso_utc, submission,
};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyBytes, PyDict, PyList};
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
    /// The study, locked without holding the GIL while waiting: another thread may hold
    /// the lock with the GIL released (a fit, a sync) and need the GIL back to let go.
    fn lock(&self, py: Python<'_>) -> std::sync::MutexGuard<'_, LiveStudy> {
        self.inner
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The study, caught up with what other processes stored (without the GIL).
    fn synced(&self, py: Python<'_>) -> PyResult<std::sync::MutexGuard<'_, LiveStudy>> {
        let mut g = self.lock(py);
        let st: &mut LiveStudy = &mut g;
        py.detach(|| st.sync()).map_err(study_err)?;
        Ok(g)
    }

    /// `f` of the study's strategy, caught up, without the GIL.
    fn model<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&dyn agora_methods::Strategy) -> R + Send,
    ) -> PyResult<R> {
        let mut s = self.synced(py)?;
        let st: &mut LiveStudy = &mut s; // `&mut`: Send without the strategy being Sync
        Ok(py.detach(move || f(st.strategy())))
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
/// `pbo-bald`, ...); `knobs` are its settings. `round_seconds`: a time limit for each group
/// vote (1 s to a week), after which it closes itself (`Study.close_expired`; `agora serve`
/// does it every second). `media`: for a candidate set, one entry (or `None`) per
/// candidate, shown beside the options: `{"type": "text", "text": ...}`, `{"type": "url",
/// "url": ...}`, `{"type": "file", "content_type": ..., "data": bytes}` or `{"type":
/// "file", "path": ...}` (an image or sound, at most 1 MiB). Nothing is stored if any check
/// fails.
#[pyfunction]
#[pyo3(signature = (name, *, method = "pairs", space, participants = None, seed = 0, description = "", storage = "agora.db", round_seconds = None, media = None, **knobs))]
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
    round_seconds: Option<u64>,
    media: Option<&Bound<'_, PyAny>>,
    knobs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Study> {
    let media = match media {
        None => Vec::new(),
        Some(m) => m
            .try_iter()
            .map_err(|_| {
                crate::errors::wrong_type("media", "a list with one entry (or None) per candidate")
            })?
            .enumerate()
            .map(|(i, e)| media_of(&format!("media[{i}]"), &e?))
            .collect::<PyResult<Vec<_>>>()?,
    };
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
        round_seconds,
        media,
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

/// The media one Python value names: `None`; `{"type": "text", "text": ...}`;
/// `{"type": "url", "url": ...}`; `{"type": "file", "content_type": ..., "data": ...}` with
/// `data` as bytes (or base64 text); or `{"type": "file", "path": ...}`, read now, its type
/// from the extension unless `content_type` is given. Checked as the server checks it.
fn media_of(field: &str, obj: &Bound<'_, PyAny>) -> PyResult<Option<Media>> {
    if obj.is_none() {
        return Ok(None);
    }
    let shapes = "None or a dict: {\"type\": \"text\", \"text\": ...}, {\"type\": \"url\", \"url\": \
                  ...}, {\"type\": \"file\", \"content_type\": ..., \"data\": bytes} or \
                  {\"type\": \"file\", \"path\": ...}";
    let d = obj
        .cast::<PyDict>()
        .map_err(|_| crate::errors::wrong_type(field, shapes))?;
    let text = |key: &str| -> PyResult<Option<String>> {
        match d.get_item(key)? {
            None => Ok(None),
            Some(v) => v
                .extract::<String>()
                .map(Some)
                .map_err(|_| crate::errors::wrong_type(&format!("{field}.{key}"), "a string")),
        }
    };
    let is_file = text("type")?.as_deref() == Some("file");
    let media = if is_file && let Some(p) = d.get_item("path")? {
        let path_field = format!("{field}.path");
        let path: std::path::PathBuf = p
            .extract()
            .map_err(|_| crate::errors::wrong_type(&path_field, "a path (str or os.PathLike)"))?;
        for k in d.keys() {
            let k: String = k.extract()?;
            if !["type", "path", "content_type"].contains(&k.as_str()) {
                return Err(invalid(
                    field,
                    format!("unknown key `{k}` beside `path`; allowed: type, path, content_type"),
                ));
            }
        }
        let ct = match text("content_type")? {
            Some(ct) => ct,
            None => content_type_of(&path)
                .ok_or_else(|| {
                    invalid(
                        &path_field,
                        format!(
                            "`{}`: allowed extensions png, jpg, jpeg, gif, webp, svg, mp3, wav, \
                             ogg (or give `content_type`)",
                            path.display()
                        ),
                    )
                })?
                .to_string(),
        };
        let read_error =
            |e: std::io::Error| invalid(&path_field, format!("reading `{}`: {e}", path.display()));
        let size = std::fs::metadata(&path).map_err(read_error)?.len();
        if size > agora_study::live::media::MAX_FILE_BYTES as u64 {
            return Err(invalid(
                &path_field,
                format!(
                    "`{}` has {size} bytes; a media file is at most {} bytes",
                    path.display(),
                    agora_study::live::media::MAX_FILE_BYTES
                ),
            ));
        }
        let bytes = std::fs::read(&path).map_err(read_error)?;
        Media::file(&ct, &bytes, &path_field).map_err(crate::errors::py_err)?
    } else if is_file && let Some(data) = d.get_item("data")? {
        if let Ok(b) = data.cast::<PyBytes>() {
            let ct = text("content_type")?.ok_or_else(|| {
                invalid(
                    &format!("{field}.content_type"),
                    "missing: the file's media type, e.g. image/png",
                )
            })?;
            for k in d.keys() {
                let k: String = k.extract()?;
                if !["type", "data", "content_type"].contains(&k.as_str()) {
                    return Err(invalid(
                        field,
                        format!("unknown key `{k}`; allowed: type, content_type, data"),
                    ));
                }
            }
            Media::file(&ct, b.as_bytes(), field).map_err(crate::errors::py_err)?
        } else {
            from_dict(field, obj, shapes)?
        }
    } else {
        from_dict(field, obj, shapes)?
    };
    media.validate(field).map_err(crate::errors::py_err)?;
    Ok(Some(media))
}

/// Media in its JSON shape (as the HTTP API takes it).
fn from_dict(field: &str, obj: &Bound<'_, PyAny>, shapes: &str) -> PyResult<Media> {
    let v = crate::convert::to_json(field, obj)?;
    serde_json::from_value(v).map_err(|e| invalid(field, format!("{e}; allowed: {shapes}")))
}

/// Media as Python sees it: the JSON shape, a file's `data` as bytes.
fn media_to_py<'py>(py: Python<'py>, m: &Media) -> PyResult<Bound<'py, PyAny>> {
    let d = PyDict::new(py);
    match m {
        Media::Text { text } => {
            d.set_item("type", "text")?;
            d.set_item("text", text)?;
        }
        Media::Url { url } => {
            d.set_item("type", "url")?;
            d.set_item("url", url)?;
        }
        Media::File { content_type, .. } => {
            d.set_item("type", "file")?;
            d.set_item("content_type", content_type)?;
            d.set_item("data", PyBytes::new(py, &m.bytes().unwrap_or_default()))?;
        }
    }
    Ok(d.into_any())
}

#[pymethods]
impl Study {
    /// The study's name.
    #[getter]
    fn name(&self, py: Python<'_>) -> String {
        self.lock(py).spec().name.clone()
    }

    /// The participants, in ballot order.
    #[getter]
    fn participants(&self, py: Python<'_>) -> Vec<String> {
        self.lock(py).spec().participants.clone()
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
        let v = serde_json::to_value(self.lock(py).spec())
            .map_err(|e| invalid("spec", e.to_string()))?;
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

    /// Give the study earlier data before its first answer (as `agora study import`):
    /// evaluations (`bo` studies with GP-BO) or comparisons (`pairs`, `group-pairs`) in the
    /// study's units, either a list of dicts (`{"temperature": 22, "value": 3.5}`, or
    /// `{"winner": {...}, "loser": {...}}`) or the text of a CSV or JSON-lines file. Every
    /// row is checked first; a bad one raises `ValueError` naming its line (the n-th dict
    /// is line n) and parameter, and nothing is stored. The data stand in for the random
    /// start, do not count as answers, and the open question is asked again in their light.
    /// Returns the number of rows imported.
    fn import_data(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        use agora_study::live::import::{read_objects, read_observations};
        let empty = || {
            invalid(
                "data",
                "no rows: give at least one (a dict per row, or a CSV header and rows)",
            )
        };
        // The text of a file, or rows as a JSON-lines file holds them.
        let (text, rows) = match data.extract::<String>() {
            Ok(t) if t.trim().is_empty() => return Err(empty()),
            Ok(t) => (Some(t), Vec::new()),
            Err(_) => {
                let it = data.try_iter().map_err(|_| {
                    crate::errors::wrong_type(
                        "data",
                        "a list of dicts, or the text of a CSV or JSON-lines file",
                    )
                })?;
                let mut rows = Vec::new();
                for (i, row) in it.enumerate() {
                    let field = format!("data[{i}]");
                    match crate::convert::to_json(&field, &row?)? {
                        serde_json::Value::Object(o) => rows.push(o),
                        _ => {
                            return Err(crate::errors::wrong_type(
                                &field,
                                "a dict of the parameters by name with `value`, or with \
                                 `winner` and `loser`",
                            ));
                        }
                    }
                }
                if rows.is_empty() {
                    return Err(empty());
                }
                (None, rows)
            }
        };
        let mut s = self.synced(py)?;
        let st: &mut LiveStudy = &mut s;
        py.detach(|| {
            let space = &st.spec().space;
            let rows = match &text {
                Some(t) => read_observations(space, t),
                None => read_objects(space, rows),
            }
            .map_err(agora_study::live::StudyError::from)?;
            let n = rows.len();
            st.import(&Actor::Owner, rows).map(|()| n)
        })
        .map_err(study_err)
    }

    /// Put an option of your own (a dict of the parameters by name, in the study's units)
    /// into the next question after the open one (as `agora study enqueue`): GP-BO
    /// evaluates it; PBO compares it with its EUBO challenger.
    fn enqueue(&self, py: Python<'_>, option: &Bound<'_, PyAny>) -> PyResult<()> {
        let json = crate::convert::to_json("option", option)?.to_string();
        let mut s = self.synced(py)?;
        let st: &mut LiveStudy = &mut s;
        py.detach(|| {
            let x = agora_study::live::import::read_option(&st.spec().space, &json)
                .map_err(agora_study::live::StudyError::from)?;
            st.enqueue(&Actor::Owner, x)
        })
        .map_err(study_err)
    }

    /// Show media with option `option` of the open query (or of `query=`, an open query's
    /// id), as `agora study media` and `POST .../media` do: a box study's renderings. `media`
    /// takes the shapes `create_study(media=...)` takes. Returns `"recorded"`, or
    /// `"duplicate"` when the same media was shown before.
    #[pyo3(signature = (option, media, *, query = None))]
    fn post_media(
        &self,
        py: Python<'_>,
        option: usize,
        media: &Bound<'_, PyAny>,
        query: Option<u64>,
    ) -> PyResult<&'static str> {
        let m = media_of("media", media)?
            .ok_or_else(|| invalid("media", "None shows nothing; give the media to show"))?;
        let mut s = self.synced(py)?;
        let id = match query.or_else(|| s.pending().map(|q| q.id)) {
            Some(id) => id,
            None => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "no query is open",
                ));
            }
        };
        let st: &mut LiveStudy = &mut s;
        let o = py
            .detach(|| st.post_media(&Actor::Owner, id, option, m))
            .map_err(study_err)?;
        Ok(outcome(o))
    }

    /// The media shown with option `option` of the open query (or of `query=`): a dict in
    /// the shapes `post_media` takes (a file's `data` as bytes), or `None`.
    #[pyo3(signature = (option, *, query = None))]
    fn media<'py>(
        &self,
        py: Python<'py>,
        option: usize,
        query: Option<u64>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let s = self.synced(py)?;
        let Some(id) = query.or_else(|| s.pending().map(|q| q.id)) else {
            return Ok(None);
        };
        s.option_media(id, option)
            .map(|m| media_to_py(py, m))
            .transpose()
    }

    /// Close the open group vote if its time limit (`round_seconds`) has passed, as `agora
    /// serve` does every second: missing votes count as can't tell. Returns `"answered"`,
    /// or `None` when nothing was due.
    fn close_expired(&self, py: Python<'_>) -> PyResult<Option<&'static str>> {
        let mut s = self.synced(py)?;
        let st: &mut LiveStudy = &mut s;
        let now = agora_study::live::store::now_ms();
        let o = py.detach(|| st.close_expired(now)).map_err(study_err)?;
        Ok(o.map(outcome))
    }

    /// The study's model at `points` (user units, as `Strategy.belief` takes them): a list
    /// of `(mean, sd)`, or `None` when the method has no model that predicts at arbitrary
    /// points (yet). What the facilitator's belief panel shows.
    fn belief<'py>(
        &self,
        py: Python<'py>,
        points: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let units = crate::space::units_of(&self.space, points)?;
        self.model(py, move |m| m.belief(&units))?
            .map(|ms| PyList::new(py, ms))
            .transpose()
    }

    /// For group studies: each participant's estimated utility at `points`, a list per
    /// point of `(mean, sd)` per participant (in the study's order), or `None`.
    fn agent_beliefs<'py>(
        &self,
        py: Python<'py>,
        points: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let units = crate::space::units_of(&self.space, points)?;
        self.model(py, move |m| m.agent_beliefs(&units))?
            .map(|per_point| PyList::new(py, per_point))
            .transpose()
    }

    /// The facilitator's figure (as `agora plot`): the progress and, where the method has
    /// a model, its belief over the space. `format="svg"` returns SVG text, `"png"` PNG
    /// bytes; in a notebook, `IPython.display.SVG(study.plot())`.
    #[pyo3(signature = (format = "svg"))]
    fn plot<'py>(&self, py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyAny>> {
        let mut s = self.synced(py)?;
        let st: &mut LiveStudy = &mut s;
        match format {
            "svg" => {
                let svg = py
                    .detach(move || agora_study::live::plot::plot_svg(st))
                    .map_err(study_err)?;
                Ok(svg.into_pyobject(py)?.into_any())
            }
            "png" => {
                let png = py
                    .detach(move || agora_study::live::plot::plot_png(st))
                    .map_err(study_err)?;
                Ok(PyBytes::new(py, &png).into_any())
            }
            other => Err(invalid(
                "format",
                format!("`{other}` is not a format; allowed: svg, png"),
            )),
        }
    }

    /// The facilitator's token, the renderer's (it may only post media, e.g. from a
    /// rendering job through `agora.client.post_media`) and each participant's, for the
    /// web page (`agora serve`).
    fn tokens<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.lock(py);
        let st = s.stored();
        let d = PyDict::new(py);
        d.set_item("facilitator", &st.facilitator_token)?;
        d.set_item("renderer", st.renderer_token())?;
        let p = PyDict::new(py);
        for (n, t) in st.spec.participants.iter().zip(&st.participant_tokens) {
            p.set_item(n, t)?;
        }
        d.set_item("participants", p)?;
        Ok(d)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let s = self.lock(py);
        format!(
            "<agora.Study {:?} method={} events={}>",
            s.spec().name,
            s.spec().method.name(),
            s.seq()
        )
    }
}
