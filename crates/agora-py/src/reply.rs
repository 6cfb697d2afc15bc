//! Answers from Python keywords, in the shapes `agora tell` takes, through the one
//! implementation the CLI uses ([`agora_study::live::reply`]).

use crate::convert::{floats, rows};
use crate::errors::{invalid, py_err, wrong_type};
use crate::strategy::answer_object;
use agora_core::{Answer, AnswerKind, Query, QueryKind, Space};
use agora_study::live::{Pick, Reply, ReplyContext, Submission, submission};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyString};

/// The keywords `tell` accepts.
const KEYWORDS: [&str; 9] = [
    "values", "winner", "tie", "who", "vote", "votes", "rating", "ratings", "matrix",
];

/// An option picked by index (int) or text (letter, label, "tie"); `None` is "tie".
fn pick(field: &str, obj: &Bound<'_, PyAny>) -> PyResult<Pick> {
    if obj.is_none() {
        return Ok(Pick::Text("tie".into()));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(Pick::Text(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() || obj.hasattr("__index__")? {
        return obj
            .extract::<usize>()
            .map(Pick::Index)
            .map_err(|_| invalid(field, "an option's index must be 0 or more"));
    }
    Err(wrong_type(
        field,
        "give an option's letter (\"A\", \"B\", ...), its index (0, 1, ...), its name, or \"tie\"",
    ))
}

/// The keywords of a `tell` call as a [`Reply`] (and a Hessian's matrix, which no person
/// gives and [`Reply`] does not carry).
pub fn reply_of(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<(Reply, Option<Vec<Vec<f64>>>)> {
    let mut r = Reply::default();
    let mut matrix = None;
    let Some(kw) = kwargs else {
        return Ok((r, matrix));
    };
    for (k, v) in kw.iter() {
        let k: String = k.extract()?;
        match k.as_str() {
            "values" | "ratings" => {
                if r.values.is_some() {
                    return Err(invalid(&k, "give values= or ratings=, not both"));
                }
                r.values = Some(floats(&k, &v)?)
            }
            "winner" => r.winner = Some(pick("winner", &v)?),
            "tie" => r.tie = v.is_truthy()?,
            "who" => {
                r.who = if v.is_none() {
                    None
                } else {
                    Some(
                        v.extract()
                            .map_err(|_| wrong_type("who", "give a participant's name"))?,
                    )
                }
            }
            "vote" => r.vote = Some(pick("vote", &v)?),
            "votes" => {
                let items: Vec<Bound<'_, PyAny>> = v
                    .try_iter()
                    .map_err(|_| wrong_type("votes", "give one vote per agent, in order"))?
                    .collect::<PyResult<_>>()?;
                r.votes = Some(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, x)| pick(&format!("votes[{i}]"), x))
                        .collect::<PyResult<_>>()?,
                );
            }
            "rating" => {
                let x: f64 = v
                    .extract()
                    .map_err(|_| wrong_type("rating", "must be a number"))?;
                r.rating = Some(x);
            }
            "matrix" => matrix = Some(rows("matrix", &v)?),
            other => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "tell() got an unexpected keyword `{other}`; allowed: answer, {}",
                    KEYWORDS.join(", ")
                )));
            }
        }
    }
    Ok((r, matrix))
}

/// The labels of a query's options as people see them: candidate names, else none (the
/// letters A, B, ... always work).
pub fn labels_of(q: &Query, space: &Space) -> Vec<String> {
    match space {
        Space::Candidates { names, .. } => q
            .kind
            .points()
            .iter()
            .map(|p| match p {
                agora_core::Point::Index(i) => names.get(*i).cloned().unwrap_or_default(),
                agora_core::Point::Unit(_) => String::new(),
            })
            .collect(),
        Space::Box { .. } => Vec::new(),
    }
}

/// The answer to `open`, in memory, given as an `agora.Answer` object or keywords.
pub fn answer_for(
    open: &Query,
    space: &Space,
    answer: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Answer> {
    let (reply, matrix) = reply_of(kwargs)?;
    if let Some(a) = answer {
        if reply != Reply::default() || matrix.is_some() {
            return Err(invalid(
                "answer",
                "give an agora.Answer or keywords (values=, winner=, ...), not both",
            ));
        }
        return answer_object(a);
    }
    if let QueryKind::Hessian { .. } = open.kind {
        let rows = matrix.ok_or_else(|| {
            invalid(
                "answer",
                format!(
                    "query {} asks for a Hessian; answer with matrix=[[...], ...]",
                    open.id
                ),
            )
        })?;
        if reply != Reply::default() {
            return Err(invalid(
                "answer",
                format!(
                    "query {} asks for a Hessian; answer with matrix= only",
                    open.id
                ),
            ));
        }
        let a = Answer {
            query_id: open.id,
            kind: AnswerKind::Matrix { rows },
        };
        a.check_against(open).map_err(py_err)?;
        return Ok(a);
    }
    if matrix.is_some() {
        return Err(invalid(
            "matrix",
            format!(
                "query {} is a `{}` query, not a Hessian",
                open.id,
                open.kind.name()
            ),
        ));
    }
    let labels = labels_of(open, space);
    let ctx = ReplyContext {
        labels: &labels,
        ..ReplyContext::default()
    };
    match submission(open, &reply, &ctx).map_err(py_err)? {
        Submission::Answer(a) => Ok(a),
        Submission::Ballot(..) => Err(invalid(
            "answer",
            format!(
                "an in-memory strategy takes the whole group's answer at once: votes=[...] or \
                 values=[...] in the order {:?}; single ballots (who=, vote=, rating=) go to \
                 a study (agora.create_study)",
                match &open.kind {
                    QueryKind::GroupVote { agents, .. } | QueryKind::GroupRate { agents, .. } =>
                        agents.clone(),
                    _ => Vec::new(),
                }
            ),
        )),
    }
}
