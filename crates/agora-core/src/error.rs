//! The common error type of the agora libraries.

/// Result with agora's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in an agora library call.
///
/// Input errors always name the offending field and say what is allowed, so a person at the
/// CLI or a web page can fix the input without reading code.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A value is outside its allowed set (NaN, infinite, out of range, empty, unknown name).
    #[error("invalid `{field}`: {reason}")]
    InvalidInput {
        /// The field or argument, e.g. `x_train[3][1]` or `bounds.lo`.
        field: String,
        /// What was wrong and what is allowed.
        reason: String,
    },
    /// Two things that must agree in size do not.
    #[error("dimension mismatch in `{field}`: expected {expected}, got {got}")]
    Dimension {
        /// The field whose size is wrong.
        field: String,
        /// The size required.
        expected: usize,
        /// The size given.
        got: usize,
    },
    /// An unknown id (study, rater, query, problem, method...).
    #[error("unknown {kind} `{id}`{hint}")]
    UnknownId {
        /// What kind of id, e.g. `problem`.
        kind: String,
        /// The id given.
        id: String,
        /// Allowed values, pre-formatted (may be empty).
        hint: String,
    },
    /// A numerical failure that survived every safeguard (e.g. a matrix that stays
    /// indefinite at the largest allowed jitter).
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// A symmetric matrix that stays indefinite at the largest jitter allowed (Cholesky with
    /// escalating jitter gave up).
    #[error(
        "numerical failure: matrix of size {size} is not positive definite even with jitter {jitter:.3e} ({max_relative:.0e} x mean diagonal {mean_diagonal:.3e})"
    )]
    NotPositiveDefinite {
        /// The matrix's order.
        size: usize,
        /// The largest absolute jitter tried.
        jitter: f64,
        /// That jitter relative to the mean diagonal.
        max_relative: f64,
        /// The mean absolute diagonal the jitter scales with.
        mean_diagonal: f64,
    },
    /// An operation that is not valid in the current state.
    #[error("invalid state: {0}")]
    State(String),
    /// `tell` with no open query.
    #[error("invalid state: no open query: call ask before tell")]
    NoOpenQuery,
    /// A respondent was asked a kind of query it cannot answer.
    #[error("{respondent} cannot answer a `{kind}` query")]
    UnsupportedQuery {
        /// Who was asked, e.g. `oracle`.
        respondent: String,
        /// The query's kind, e.g. `group_vote`.
        kind: String,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::Dimension`].
    pub fn dim(field: impl Into<String>, expected: usize, got: usize) -> Self {
        Error::Dimension {
            field: field.into(),
            expected,
            got,
        }
    }

    /// Shorthand for [`Error::UnknownId`] listing the allowed ids.
    pub fn unknown<S: AsRef<str>>(kind: &str, id: &str, allowed: &[S]) -> Self {
        let hint = if allowed.is_empty() {
            String::new()
        } else {
            let list: Vec<&str> = allowed.iter().map(|s| s.as_ref()).collect();
            format!("; allowed: {}", list.join(", "))
        };
        Error::UnknownId {
            kind: kind.into(),
            id: id.into(),
            hint,
        }
    }
}

impl Error {
    /// Shorthand for [`Error::UnsupportedQuery`].
    pub fn unsupported_query(respondent: &str, query: &crate::Query) -> Self {
        Error::UnsupportedQuery {
            respondent: respondent.into(),
            kind: query.kind.name().into(),
        }
    }
}

/// Error unless `v` is finite, naming `field`.
pub fn check_finite(field: &str, v: f64) -> Result<()> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(Error::invalid(
            field,
            format!("must be a finite number, got {v}"),
        ))
    }
}

/// Error unless every value is finite, naming the first offending `field[i]`.
pub fn check_finite_slice(field: &str, v: &[f64]) -> Result<()> {
    match v.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(i) => Err(Error::invalid(
            format!("{field}[{i}]"),
            format!("must be a finite number, got {}", v[i]),
        )),
    }
}
