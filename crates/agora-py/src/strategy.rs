//! `agora.Strategy`: any registered method in memory, asked and told from Python.

use crate::convert::to_json;
use crate::errors::py_err;
use crate::query::{Answer, Query, best_dict};
use crate::space::Space;
use agora_core::{Answer as CoreAnswer, Space as CoreSpace};
use agora_methods::registry::{self, Setup};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// The `**knobs` of a call as the registry takes them.
pub fn knobs_of(knobs: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, Value)>> {
    let mut out = Vec::new();
    if let Some(k) = knobs {
        for (name, v) in k.iter() {
            let name: String = name.extract()?;
            let field = format!("method.{name}");
            out.push((name, to_json(&field, &v)?));
        }
    }
    Ok(out)
}

/// A registered method's strategy, in memory: `ask()` the next query, `tell(...)` its
/// answer. Same method, space, seed, participants, knobs and answers: same queries.
#[pyclass(module = "agora", name = "Strategy")]
pub struct Strategy {
    inner: Mutex<Box<dyn agora_methods::Strategy>>,
    space: Arc<CoreSpace>,
    participants: Arc<Vec<String>>,
    method: String,
}

impl Strategy {
    fn lock(&self) -> std::sync::MutexGuard<'_, Box<dyn agora_methods::Strategy>> {
        // A panic inside a strategy is a bug; the state it left is still the last good one
        // (strategies change nothing on a refused answer).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl Strategy {
    /// The strategy of `method` (a name or alias from `agora.methods()`) over `space`,
    /// seeded by `seed`, with `participants` (group members, parties) where the method
    /// needs them and any of its knobs as keywords.
    #[new]
    #[pyo3(signature = (method, space, *, seed = 0, participants = None, **knobs))]
    fn new(
        py: Python<'_>,
        method: &str,
        space: &Space,
        seed: u64,
        participants: Option<Vec<String>>,
        knobs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Strategy> {
        let knobs = knobs_of(knobs)?;
        let participants = participants.unwrap_or_default();
        let setup = Setup::new(space.inner.clone(), seed).with_participants(participants.clone());
        let s = py
            .detach(|| registry::build(method, &knobs, setup))
            .map_err(py_err)?;
        Ok(Strategy {
            inner: Mutex::new(s),
            space: Arc::new(space.inner.clone()),
            participants: Arc::new(participants),
            method: method.to_string(),
        })
    }

    /// The method's canonical short name (e.g. `gp-logei`).
    #[getter]
    fn name(&self) -> String {
        self.lock().name()
    }

    /// The space searched.
    #[getter]
    fn space(&self) -> Space {
        Space {
            inner: (*self.space).clone(),
        }
    }

    /// Number of queries answered so far.
    #[getter]
    fn n_answered(&self) -> usize {
        self.lock().n_answered()
    }

    /// The next query (asking again before telling returns the same open query). Model fits
    /// and acquisition searches run without the GIL.
    fn ask(&self, py: Python<'_>) -> PyResult<Query> {
        let q = py.detach(|| self.lock().ask()).map_err(py_err)?;
        Ok(Query {
            inner: q,
            space: self.space.clone(),
            roster: self.participants.clone(),
        })
    }

    /// Tell the answer to the open query: an `agora.Answer` (from a respondent), or keywords
    /// in the shapes `agora tell` takes: `values=[...]` (evaluations; a group's ratings),
    /// `winner=` (an option's letter "A"/"B", index, or name; or "tie"), `tie=True`,
    /// `votes=[...]` (one per agent: letter, index or "tie"/None), `ratings=[...]`,
    /// `matrix=[[...]]` (a Hessian), `who=` (who answered a comparison). A refused answer
    /// raises and leaves the strategy as it was.
    #[pyo3(signature = (answer = None, **kwargs))]
    fn tell(
        &self,
        py: Python<'_>,
        answer: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let open = py.detach(|| self.lock().ask()).map_err(py_err)?;
        let a = crate::reply::answer_for(&open, &self.space, answer, kwargs)?;
        py.detach(|| self.lock().tell(&a)).map_err(py_err)
    }

    /// The recommendation so far: `{"point": {...user units...}, "value": v}` (what the
    /// value means depends on the method: the best measured value, or the model's utility),
    /// or `None` before any answer.
    fn best<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let b = self.lock().recommend();
        best_dict(py, &self.space, b)
    }

    /// The model's belief at `points` (user units: dicts by name or sequences in parameter
    /// order; candidate names or rows): a list of `(mean, sd)`, or `None` when the method has
    /// no model that predicts at arbitrary points (yet).
    fn belief<'py>(
        &self,
        py: Python<'py>,
        points: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let units = crate::space::units_of(&self.space, points)?;
        let b = py.detach(|| self.lock().belief(&units));
        match b {
            None => Ok(None),
            Some(ms) => Ok(Some(PyList::new(py, ms)?)),
        }
    }

    /// For group methods: each agent's estimated utility at `points` (as `belief` takes them):
    /// a list per point of `(mean, sd)` per agent (`sbo`: its true, influence-free utility,
    /// beside `belief`'s welfare), or `None` when the method models no agents or has no model
    /// yet.
    fn agent_beliefs<'py>(
        &self,
        py: Python<'py>,
        points: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let units = crate::space::units_of(&self.space, points)?;
        let b = py.detach(|| self.lock().agent_beliefs(&units));
        match b {
            None => Ok(None),
            Some(per_point) => Ok(Some(PyList::new(py, per_point)?)),
        }
    }

    fn __repr__(&self) -> String {
        let s = self.lock();
        format!(
            "<agora.Strategy {} ({}) answered={}>",
            s.name(),
            self.method,
            s.n_answered()
        )
    }
}

/// The answer an `agora.Answer` object carries.
pub fn answer_object(obj: &Bound<'_, PyAny>) -> PyResult<CoreAnswer> {
    let a: PyRef<'_, Answer> = obj.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "`answer` must be an agora.Answer (from a respondent), not a {}; or answer with \
             keywords: values=, winner=, tie=, votes=, ratings=, matrix=",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    Ok(a.inner.clone())
}
