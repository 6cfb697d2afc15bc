//! Simulated respondents and benchmarks: test functions answered by an oracle (values with
//! optional noise, comparisons by a simulated rater, Hessians), and Social BO's simulated
//! groups (public and private votes, ratings). Each answers `agora.Query` objects exactly as
//! a person would through the CLI, so a strategy cannot tell them apart.

use crate::errors::{invalid, py_err};
use crate::query::{Answer, Query};
use crate::space::{Space, unit_of};
use agora_core::{Query as CoreQuery, Respondent, Space as CoreSpace};
use agora_problems::social::{SocialGroup, SocialTask};
use agora_problems::{Oracle, Problem as CoreProblem, RaterModel};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyDict, PyList};
use std::sync::{Arc, Mutex};

enum Kind {
    Oracle(Box<Oracle>),
    Group {
        task: Box<SocialTask>,
        seed: u64,
        counts: [usize; 2],
    },
}

impl Kind {
    fn answer(&mut self, q: &CoreQuery) -> agora_core::Result<agora_core::Answer> {
        match self {
            Kind::Oracle(o) => Respondent::answer(o.as_mut(), q),
            Kind::Group { task, seed, counts } => {
                // The group's state is its seed and its counts: rebuilt around the owned task.
                let mut g = SocialGroup::new(task, *seed);
                g.counts = *counts;
                let a = g.answer(q)?;
                *counts = g.counts;
                Ok(a)
            }
        }
    }
}

/// A simulated respondent: `answer(query)` gives what a person or a measurement would.
/// Make one with `agora.problems.make(name, ...)` (see `agora.problems()`).
#[pyclass(module = "agora", name = "Problem")]
pub struct Problem {
    kind: Mutex<Kind>,
    space: Arc<CoreSpace>,
    name: String,
    optimum: Option<f64>,
    agents: usize,
}

#[pymethods]
impl Problem {
    /// The problem's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The space its queries' options live in.
    #[getter]
    fn space(&self) -> Space {
        Space {
            inner: (*self.space).clone(),
        }
    }

    /// The objective's global maximum (test functions; `None` for groups).
    #[getter]
    fn optimum(&self) -> Option<f64> {
        self.optimum
    }

    /// The number of agents of a group (0 for a test function): name them as the
    /// strategy's `participants`.
    #[getter]
    fn agents(&self) -> usize {
        self.agents
    }

    /// The answer to `query` (seeded: the same queries give the same answers). Raises
    /// `ValueError` for a kind of query this respondent cannot answer.
    fn answer(&self, py: Python<'_>, query: PyRef<'_, Query>) -> PyResult<Answer> {
        let q = query.inner.clone();
        let mut k = self
            .kind
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner());
        let k: &mut Kind = &mut k;
        let a = py.detach(|| k.answer(&q)).map_err(py_err)?;
        Ok(Answer { inner: a })
    }

    /// The noiseless objective at `point` (user units: a dict by name or a sequence),
    /// test functions only.
    fn __call__(&self, py: Python<'_>, point: &Bound<'_, PyAny>) -> PyResult<f64> {
        let u = unit_of(&self.space, "point", point)?;
        match &*self
            .kind
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
        {
            Kind::Oracle(o) => o.problem().value_at_unit(&u).map_err(py_err),
            Kind::Group { .. } => Err(invalid(
                "point",
                "a group has no single objective; its welfare depends on the facilitator's rule",
            )),
        }
    }

    /// Simple regret at `point`: the optimum minus the true value (test functions only).
    fn regret(&self, py: Python<'_>, point: &Bound<'_, PyAny>) -> PyResult<f64> {
        let u = unit_of(&self.space, "point", point)?;
        match &*self
            .kind
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
        {
            Kind::Oracle(o) => o.problem().regret_at_unit(&u).map_err(py_err),
            Kind::Group { task, .. } => {
                Ok(task.optimum().map_err(py_err)?.1 - task.welfare_at(&u).map_err(py_err)?)
            }
        }
    }

    fn __repr__(&self) -> String {
        format!("<agora.Problem {}>", self.name)
    }
}

/// The problems `make` knows, as dicts: `name`, `kind` (`function` or `group`), `dim`, and
/// `optimum` (functions) or `agents` (groups).
#[pyfunction]
pub fn problem_list(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for name in agora_problems::functions::names() {
        let f = agora_problems::functions::by_name(name).map_err(py_err)?;
        let d = PyDict::new(py);
        d.set_item("name", *name)?;
        d.set_item("kind", "function")?;
        d.set_item("dim", f.dim())?;
        d.set_item("optimum", f.optimum_value())?;
        out.append(d)?;
    }
    for name in SocialTask::names() {
        let t = SocialTask::by_name(name).map_err(py_err)?;
        let d = PyDict::new(py);
        d.set_item("name", format!("group:{name}"))?;
        d.set_item("kind", "group")?;
        d.set_item("dim", t.dim)?;
        d.set_item("agents", t.agents)?;
        out.append(d)?;
    }
    Ok(out)
}

/// A simulated respondent by name: a test function (`hartmann6`, `branin`, `ackley7`, ...;
/// values with Gaussian `noise` sd, comparisons by a `rater` — `"probit"` or
/// `"bradley_terry"` with noise `sigma` — and Hessians), or `group:<task>` for a Social BO
/// group (`group:toy`, `group:thermal`, ...). Seeded by `seed`.
#[pyfunction]
#[pyo3(signature = (name, *, noise = 0.0, rater = "probit", sigma = None, seed = 0))]
pub fn make_problem(
    name: &str,
    noise: f64,
    rater: &str,
    sigma: Option<f64>,
    seed: u64,
) -> PyResult<Problem> {
    let groups: Vec<String> = SocialTask::names()
        .iter()
        .map(|t| format!("group:{t}"))
        .collect();
    if let Some(task) = name.strip_prefix("group:") {
        if !SocialTask::names().contains(&task) {
            return Err(py_err(agora_core::Error::unknown("group", name, &groups)));
        }
        let task = SocialTask::by_name(task).map_err(py_err)?;
        let space = task.space().map_err(py_err)?;
        return Ok(Problem {
            name: name.to_string(),
            space: Arc::new(space),
            optimum: None,
            agents: task.agents,
            kind: Mutex::new(Kind::Group {
                task: Box::new(task),
                seed,
                counts: [0, 0],
            }),
        });
    }
    let problem = CoreProblem::by_name(name).map_err(|e| match e {
        // Name the groups too: `make` knows both kinds.
        agora_core::Error::UnknownId { .. } => {
            pyo3::exceptions::PyKeyError::new_err(format!("{e}; or a group: {}", groups.join(", ")))
        }
        e => py_err(e),
    })?;
    let space = problem.space.clone();
    let optimum = problem.function.optimum_value();
    let mut oracle = Oracle::new(problem, noise, seed).map_err(|e| match e {
        agora_core::Error::InvalidInput { reason, .. } => invalid("noise", reason),
        e => py_err(e),
    })?;
    let sigma = sigma.unwrap_or(1e-12);
    let model = match rater {
        "probit" => RaterModel::Probit { sigma },
        "bradley_terry" => RaterModel::BradleyTerry { sigma },
        other => {
            return Err(py_err(agora_core::Error::unknown(
                "rater",
                other,
                &["probit", "bradley_terry"],
            )));
        }
    };
    oracle.set_rater(model).map_err(|e| match e {
        agora_core::Error::InvalidInput { reason, .. } => invalid("sigma", reason),
        e => py_err(e),
    })?;
    Ok(Problem {
        name: name.to_string(),
        space: Arc::new(space),
        optimum: Some(optimum),
        agents: 0,
        kind: Mutex::new(Kind::Oracle(Box::new(oracle))),
    })
}

/// Run a paper's suite (or all of them with `suite=None`) as `agora reproduce` does,
/// writing records, figures and `report.md` under `out`; returns the report's path.
#[pyfunction]
#[pyo3(signature = (suite = None, *, quick = true, out = "out/reproduce"))]
pub fn reproduce(py: Python<'_>, suite: Option<&str>, quick: bool, out: &str) -> PyResult<String> {
    let dir = std::path::PathBuf::from(out);
    let suite_owned = suite.map(str::to_string);
    py.detach(|| {
        let runner = agora_experiments::Runner::local(false);
        agora_experiments::suites::reproduce(suite_owned.as_deref(), quick, &dir, &runner)
    })
    .map_err(py_err)?;
    let report = match suite {
        Some(s) => dir.join(s).join("report.md"),
        None => dir.join("report.md"),
    };
    Ok(report.display().to_string())
}

/// The suites `reproduce` runs.
#[pyfunction]
pub fn suites() -> Vec<&'static str> {
    agora_experiments::suites::suite_names()
}
