//! agora's errors as Python exceptions: bad input is `ValueError` (an unknown name is
//! `KeyError`, a value of the wrong type `TypeError`), a state the call does not fit is
//! `RuntimeError`; every message names the field and the allowed values, as agora's own
//! messages do.

use agora_core::Error;
use agora_study::live::{StoreError, StudyError};
use pyo3::PyErr;
use pyo3::exceptions::{
    PyConnectionError, PyFileNotFoundError, PyKeyError, PyRuntimeError, PyValueError,
};

/// The Python exception for an agora error.
pub fn py_err(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::UnknownId { .. } => PyKeyError::new_err(msg),
        // A query given to a respondent that cannot answer its kind is bad input too.
        Error::InvalidInput { .. } | Error::Dimension { .. } | Error::UnsupportedQuery { .. } => {
            PyValueError::new_err(msg)
        }
        _ => PyRuntimeError::new_err(msg),
    }
}

/// The Python exception for a study error.
pub fn study_err(e: StudyError) -> PyErr {
    match e {
        StudyError::Input(e) => py_err(e),
        StudyError::Store(StoreError::UnknownStudy(..)) => PyKeyError::new_err(e.to_string()),
        StudyError::Store(StoreError::Exists(..)) | StudyError::NotPending(..) => {
            PyValueError::new_err(e.to_string())
        }
        StudyError::Store(StoreError::InvalidStorage { .. }) => {
            PyValueError::new_err(e.to_string())
        }
        StudyError::Store(StoreError::NotFound { .. }) => PyFileNotFoundError::new_err(format!(
            "{e}: create a study first (agora.create_study or `agora study create`), or point \
             `storage` at an existing store"
        )),
        // Retryable: the database is out of reach for now.
        StudyError::Store(ref s) if s.is_retryable() => PyConnectionError::new_err(e.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// The Python exception for a store error.
pub fn store_err(e: StoreError) -> PyErr {
    study_err(StudyError::Store(e))
}

/// Shorthand: a `TypeError` naming `field` (a value of the wrong type), worded as
/// [`invalid`]'s message.
pub fn wrong_type(field: &str, reason: impl Into<String>) -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(Error::invalid(field, reason).to_string())
}

/// Shorthand: a `ValueError` naming `field`.
pub fn invalid(field: &str, reason: impl Into<String>) -> PyErr {
    py_err(Error::invalid(field, reason))
}
