//! Answers from Python keywords, in the shapes `agora tell` takes.

use crate::strategy::answer_object;
use agora_core::{Answer, Query, Space};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The answer to `open` given as an `agora.Answer` object or keywords.
pub fn answer_for(
    open: &Query,
    _space: &Space,
    answer: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Answer> {
    let _ = kwargs;
    let _ = open;
    match answer {
        Some(a) => answer_object(a),
        None => Err(crate::errors::invalid("answer", "keywords: not yet")),
    }
}
