//! `agora.Query` and `agora.Answer`: the one protocol, seen from Python. A query says what
//! must be asked of whom (kind, options in user units, who is asked, channel); an answer
//! carries what came back.

use crate::errors::invalid;
use crate::space::point_to_py;
use agora_core::{
    Answer as CoreAnswer, AnswerKind, Channel, Point, Query as CoreQuery, QueryKind,
    Space as CoreSpace,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::Arc;

/// What a strategy asks: evaluate options, compare them, a group vote or rating, or a
/// Hessian. Options are in user units (`points`); `asked` says who answers.
#[pyclass(module = "agora", name = "Query", frozen)]
#[derive(Debug, Clone)]
pub struct Query {
    pub(crate) inner: CoreQuery,
    pub(crate) space: Arc<CoreSpace>,
    /// The participants who answer (the strategy's or the study's), in ballot order: a
    /// group query's `asked` names them by position, as `agora ask` does (some methods
    /// number their agents `agent0`, `agent1`, ... internally).
    pub(crate) roster: Arc<Vec<String>>,
}

#[pymethods]
impl Query {
    /// The query's id (echoed by its answer).
    #[getter]
    fn id(&self) -> u64 {
        self.inner.id
    }

    /// `"evaluate"`, `"compare"`, `"group_vote"`, `"group_rate"` or `"hessian"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind.name()
    }

    /// The options, in user units: a dict from parameter name to value for a box, or
    /// `{"index": i, "name": ...}` for a row of a candidate table.
    #[getter]
    fn points<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let ps = self
            .inner
            .kind
            .points()
            .iter()
            .map(|p| point_to_py(py, &self.space, p))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, ps)
    }

    /// The options as unit-cube coordinates (candidate rows: their features).
    #[getter]
    fn unit_points(&self) -> PyResult<Vec<Vec<f64>>> {
        self.inner
            .kind
            .points()
            .iter()
            .map(|p| match p {
                Point::Unit(u) => Ok(u.clone()),
                Point::Index(i) => self
                    .space
                    .candidate(*i)
                    .map(<[f64]>::to_vec)
                    .map_err(crate::errors::py_err),
            })
            .collect()
    }

    /// Who is asked: the participants of a group query in ballot order, `[rater]` for a
    /// comparison that names its rater (BOAP: the property compared), else `[]`.
    #[getter]
    fn asked(&self) -> Vec<String> {
        match &self.inner.kind {
            QueryKind::GroupVote { agents, .. } | QueryKind::GroupRate { agents, .. } => (0
                ..agents.len())
                .map(|k| self.roster.get(k).unwrap_or(&agents[k]).clone())
                .collect(),
            QueryKind::Compare { rater: Some(r), .. } => vec![r.clone()],
            _ => Vec::new(),
        }
    }

    /// The rater a comparison names (BOAP: the abstract property compared), else `None`.
    #[getter]
    fn rater(&self) -> Option<String> {
        match &self.inner.kind {
            QueryKind::Compare { rater, .. } => rater.clone(),
            _ => None,
        }
    }

    /// `"public"` or `"private"` for a group query, else `None`.
    #[getter]
    fn channel(&self) -> Option<&'static str> {
        match &self.inner.kind {
            QueryKind::GroupVote { channel, .. } | QueryKind::GroupRate { channel, .. } => {
                Some(match channel {
                    Channel::Public => "public",
                    Channel::Private => "private",
                })
            }
            _ => None,
        }
    }

    /// The query as a dict (the JSON form `agora ask --json` and the HTTP API use).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = serde_json::to_value(&self.inner).map_err(|e| invalid("query", e.to_string()))?;
        crate::convert::from_json(py, &v)
    }

    fn __repr__(&self) -> String {
        let n = self.inner.kind.points().len();
        let who = self.asked();
        let who = if who.is_empty() {
            String::new()
        } else {
            format!(", asked={who:?}")
        };
        let ch = self
            .channel()
            .map(|c| format!(", channel={c:?}"))
            .unwrap_or_default();
        format!(
            "<agora.Query id={} kind={:?} points={n}{who}{ch}>",
            self.inner.id,
            self.inner.kind.name()
        )
    }
}

/// What came back for a query: values, a choice, a tie, votes or a matrix.
#[pyclass(module = "agora", name = "Answer", frozen)]
#[derive(Debug, Clone)]
pub struct Answer {
    pub(crate) inner: CoreAnswer,
}

#[pymethods]
impl Answer {
    /// The id of the query answered.
    #[getter]
    fn query_id(&self) -> u64 {
        self.inner.query_id
    }

    /// `"values"`, `"choice"`, `"tie"`, `"votes"` or `"matrix"`.
    #[getter]
    fn kind(&self) -> &'static str {
        match &self.inner.kind {
            AnswerKind::Values { .. } => "values",
            AnswerKind::Choice { .. } => "choice",
            AnswerKind::Tie { .. } => "tie",
            AnswerKind::Matrix { .. } => "matrix",
            AnswerKind::Votes { .. } => "votes",
            _ => "other",
        }
    }

    /// The values (evaluations, or a group's ratings), else `None`.
    #[getter]
    fn values(&self) -> Option<Vec<f64>> {
        match &self.inner.kind {
            AnswerKind::Values { values } => Some(values.clone()),
            _ => None,
        }
    }

    /// The index of the option chosen, else `None`.
    #[getter]
    fn winner(&self) -> Option<usize> {
        match &self.inner.kind {
            AnswerKind::Choice { winner, .. } => Some(*winner),
            _ => None,
        }
    }

    /// Each agent's vote (an option index, or `None` for can't tell), else `None`.
    #[getter]
    fn votes(&self) -> Option<Vec<Option<usize>>> {
        match &self.inner.kind {
            AnswerKind::Votes { votes } => Some(votes.clone()),
            _ => None,
        }
    }

    /// The matrix's rows (a Hessian), else `None`.
    #[getter]
    fn matrix(&self) -> Option<Vec<Vec<f64>>> {
        match &self.inner.kind {
            AnswerKind::Matrix { rows } => Some(rows.clone()),
            _ => None,
        }
    }

    /// The answer as a dict (its JSON form).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = serde_json::to_value(&self.inner).map_err(|e| invalid("answer", e.to_string()))?;
        crate::convert::from_json(py, &v)
    }

    fn __repr__(&self) -> String {
        let body = serde_json::to_string(&self.inner.kind).unwrap_or_default();
        format!("<agora.Answer query_id={} {body}>", self.inner.query_id)
    }
}

/// `{"point": ..., "value": ...}` for a recommendation.
pub fn best_dict<'py>(
    py: Python<'py>,
    space: &CoreSpace,
    best: Option<(Point, f64)>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some((p, v)) = best else {
        return Ok(None);
    };
    let d = PyDict::new(py);
    d.set_item("point", point_to_py(py, space, &p)?)?;
    d.set_item("value", v)?;
    Ok(Some(d))
}
