//! `agora.Space` and its parameters: a box of real, log-real, integer and categorical
//! parameters, or a finite table of candidates; points in user units to and from the unit
//! cube that models work on.

use crate::convert::{rows, value_from_py, value_to_py};
use crate::errors::{invalid, py_err, wrong_type};
use agora_core::{Param as CoreParam, ParamValue, Point, Space as CoreSpace};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyString};

/// One parameter of a box space. Make one with `agora.real`, `agora.log_real`,
/// `agora.integer` or `agora.categorical`.
#[pyclass(module = "agora", name = "Param", frozen, eq, from_py_object)]
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub(crate) inner: CoreParam,
}

#[pymethods]
impl Param {
    /// The parameter's name.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// `"real"`, `"log_real"`, `"integer"` or `"categorical"`.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.inner {
            CoreParam::Real { .. } => "real",
            CoreParam::LogReal { .. } => "log_real",
            CoreParam::Integer { .. } => "integer",
            CoreParam::Categorical { .. } => "categorical",
        }
    }

    /// The bounds `(lo, hi)` of a real, log-real or integer parameter (`None` for a
    /// categorical one).
    #[getter]
    fn bounds<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(match &self.inner {
            CoreParam::Real { lo, hi, .. } | CoreParam::LogReal { lo, hi, .. } => {
                Some((*lo, *hi).into_pyobject(py)?.into_any())
            }
            CoreParam::Integer { lo, hi, .. } => Some((*lo, *hi).into_pyobject(py)?.into_any()),
            CoreParam::Categorical { .. } => None,
        })
    }

    /// The choices of a categorical parameter (`None` otherwise).
    #[getter]
    fn choices(&self) -> Option<Vec<String>> {
        match &self.inner {
            CoreParam::Categorical { choices, .. } => Some(choices.clone()),
            _ => None,
        }
    }

    fn __repr__(&self) -> String {
        match &self.inner {
            CoreParam::Real { name, lo, hi } => format!("agora.real({name:?}, {lo:?}, {hi:?})"),
            CoreParam::LogReal { name, lo, hi } => {
                format!("agora.log_real({name:?}, {lo:?}, {hi:?})")
            }
            CoreParam::Integer { name, lo, hi } => format!("agora.integer({name:?}, {lo}, {hi})"),
            CoreParam::Categorical { name, choices } => {
                format!("agora.categorical({name:?}, {choices:?})")
            }
        }
    }
}

fn param(inner: CoreParam) -> PyResult<Param> {
    // Validated as a one-parameter box, so errors name the parameter's own fields.
    CoreSpace::boxed(vec![inner.clone()]).map_err(py_err)?;
    Ok(Param { inner })
}

/// A real parameter in `[lo, hi]`.
#[pyfunction]
pub fn real(name: String, lo: f64, hi: f64) -> PyResult<Param> {
    param(CoreParam::Real { name, lo, hi })
}

/// A positive real parameter in `[lo, hi]`, searched on a log scale (rates, scales).
#[pyfunction]
pub fn log_real(name: String, lo: f64, hi: f64) -> PyResult<Param> {
    param(CoreParam::LogReal { name, lo, hi })
}

/// An integer parameter in `[lo, hi]` (both included).
#[pyfunction]
pub fn integer(name: String, lo: i64, hi: i64) -> PyResult<Param> {
    param(CoreParam::Integer { name, lo, hi })
}

/// A categorical parameter: one of `choices` (distinct strings).
#[pyfunction]
pub fn categorical(name: String, choices: Vec<String>) -> PyResult<Param> {
    param(CoreParam::Categorical { name, choices })
}

/// What a strategy searches: a box of parameters, or a finite table of candidates.
///
/// `Space([agora.real("x", -5, 10), agora.categorical("c", ["a", "b"])])` is a box;
/// `Space.candidates(names, features)` a table whose rows are the only options.
#[pyclass(module = "agora", name = "Space", frozen, eq)]
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    pub(crate) inner: CoreSpace,
}

#[pymethods]
impl Space {
    /// A box of `params` (a list of `agora.Param`), in order.
    #[new]
    fn new(params: Vec<Param>) -> PyResult<Space> {
        let params = params.into_iter().map(|p| p.inner).collect();
        let inner = CoreSpace::boxed(params).map_err(py_err)?;
        distinct_names(&inner)?;
        Ok(Space { inner })
    }

    /// A box of real parameters `x0, x1, ...` with the given `(lo, hi)` bounds.
    #[staticmethod]
    fn reals(bounds: Vec<(f64, f64)>) -> PyResult<Space> {
        Ok(Space {
            inner: CoreSpace::reals(&bounds).map_err(py_err)?,
        })
    }

    /// A finite table of candidates: one name per row and feature rows (all the same
    /// length, in `[0, 1]`; scale them first) that the models compare options by.
    #[staticmethod]
    fn candidates(names: Vec<String>, features: &Bound<'_, PyAny>) -> PyResult<Space> {
        let features = rows("features", features)?;
        let inner = CoreSpace::Candidates { names, features };
        inner.validate().map_err(py_err)?;
        Ok(Space { inner })
    }

    /// The space from its JSON form (as `to_json` writes it and study files store it).
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Space> {
        let inner: CoreSpace = serde_json::from_str(text)
            .map_err(|e| invalid("space", format!("does not parse as a space: {e}")))?;
        inner.validate().map_err(py_err)?;
        distinct_names(&inner)?;
        Ok(Space { inner })
    }

    /// The JSON form.
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.inner).map_err(|e| invalid("space", e.to_string()))
    }

    /// `"box"` or `"candidates"`.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.inner {
            CoreSpace::Box { .. } => "box",
            CoreSpace::Candidates { .. } => "candidates",
        }
    }

    /// The parameters of a box (empty for a candidate table).
    #[getter]
    fn params(&self) -> Vec<Param> {
        match &self.inner {
            CoreSpace::Box { params } => {
                params.iter().map(|p| Param { inner: p.clone() }).collect()
            }
            CoreSpace::Candidates { .. } => Vec::new(),
        }
    }

    /// The parameter names of a box, or the candidate names of a table.
    #[getter]
    fn names(&self) -> Vec<String> {
        match &self.inner {
            CoreSpace::Box { params } => params.iter().map(|p| p.name().to_string()).collect(),
            CoreSpace::Candidates { names, .. } => names.clone(),
        }
    }

    /// Unit-cube coordinates the models see (a categorical parameter takes one per choice).
    #[getter]
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    /// A unit-cube point in user units: a dict from parameter name to value (a candidate
    /// table has no unit points; its options are rows).
    fn to_user<'py>(&self, py: Python<'py>, u: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        let u = crate::convert::floats("u", u)?;
        let values = self.inner.to_user(&u).map_err(py_err)?;
        user_dict(py, &self.inner, &values)
    }

    /// A point in user units (a dict by name, or values in parameter order; for a table, a
    /// candidate's name or row index) as unit-cube coordinates.
    fn to_unit(&self, point: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
        unit_of(&self.inner, "point", point)
    }

    fn __len__(&self) -> usize {
        match &self.inner {
            CoreSpace::Box { params } => params.len(),
            CoreSpace::Candidates { names, .. } => names.len(),
        }
    }

    fn __repr__(&self) -> String {
        match &self.inner {
            CoreSpace::Box { params } => {
                let ps: Vec<String> = params
                    .iter()
                    .map(|p| Param { inner: p.clone() }.__repr__())
                    .collect();
                format!("agora.Space([{}])", ps.join(", "))
            }
            CoreSpace::Candidates { names, .. } => {
                format!("agora.Space.candidates(<{} rows>)", names.len())
            }
        }
    }
}

/// A box's parameter names must be distinct (points are dicts by name), as `agora study
/// create --param` requires.
fn distinct_names(space: &CoreSpace) -> PyResult<()> {
    if let CoreSpace::Box { params } = space {
        for (i, p) in params.iter().enumerate() {
            if params[..i].iter().any(|q| q.name() == p.name()) {
                return Err(invalid(
                    &format!("params[{i}].name"),
                    format!(
                        "parameter names must be distinct; `{}` appears twice",
                        p.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A dict from parameter name to user value.
pub fn user_dict<'py>(
    py: Python<'py>,
    space: &CoreSpace,
    values: &[ParamValue],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    if let CoreSpace::Box { params } = space {
        for (p, v) in params.iter().zip(values) {
            d.set_item(p.name(), value_to_py(py, v)?)?;
        }
    }
    Ok(d)
}

/// A query point in user units: a dict from parameter name to value for a box, or
/// `{"index": i, "name": ...}` for a candidate row.
pub fn point_to_py<'py>(
    py: Python<'py>,
    space: &CoreSpace,
    p: &Point,
) -> PyResult<Bound<'py, PyDict>> {
    match (space, p) {
        (CoreSpace::Box { .. }, Point::Unit(u)) => {
            let values = space.to_user(u).map_err(py_err)?;
            user_dict(py, space, &values)
        }
        (CoreSpace::Candidates { names, .. }, Point::Index(i)) => {
            let d = PyDict::new(py);
            d.set_item("index", *i)?;
            d.set_item("name", names.get(*i).cloned().unwrap_or_default())?;
            Ok(d)
        }
        _ => Err(invalid("point", "does not fit the space")),
    }
}

/// Points in user units (an iterable of what [`unit_of`] takes), as unit-cube coordinates;
/// errors name `points[i]`.
pub fn units_of(space: &CoreSpace, points: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<f64>>> {
    let pts: Vec<Bound<'_, PyAny>> = points.try_iter()?.collect::<PyResult<_>>()?;
    pts.iter()
        .enumerate()
        .map(|(i, p)| unit_of(space, &format!("points[{i}]"), p))
        .collect()
}

/// A user-unit point (dict by name or sequence in parameter order; a candidate's name or
/// index) as unit-cube coordinates, or a candidate's features.
pub fn unit_of(space: &CoreSpace, field: &str, point: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    match space {
        CoreSpace::Box { params } => {
            let values = if let Ok(d) = point.cast::<PyDict>() {
                let mut vs = Vec::with_capacity(params.len());
                for p in params {
                    let v = d.get_item(p.name())?.ok_or_else(|| {
                        invalid(
                            field,
                            format!(
                                "has no value for parameter `{}`; the parameters are {}",
                                p.name(),
                                params
                                    .iter()
                                    .map(|p| p.name())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        )
                    })?;
                    vs.push(value_from_py(&format!("{field}.{}", p.name()), &v)?);
                }
                for k in d.keys() {
                    let k: String = k.extract()?;
                    if !params.iter().any(|p| p.name() == k) {
                        return Err(invalid(
                            field,
                            format!(
                                "unknown parameter `{k}`; the parameters are {}",
                                params
                                    .iter()
                                    .map(|p| p.name())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        ));
                    }
                }
                vs
            } else {
                let seq = if point.hasattr("tolist")? && !point.is_instance_of::<PyList>() {
                    point.call_method0("tolist")?
                } else {
                    point.clone()
                };
                if seq.is_instance_of::<PyString>() {
                    return Err(wrong_type(
                        field,
                        "give a dict by parameter name or a sequence of values",
                    ));
                }
                let items: Vec<Bound<'_, PyAny>> = seq
                    .try_iter()
                    .map_err(|_| {
                        wrong_type(
                            field,
                            "give a dict by parameter name or a sequence of values",
                        )
                    })?
                    .collect::<PyResult<_>>()?;
                if items.len() != params.len() {
                    return Err(py_err(agora_core::Error::dim(
                        field,
                        params.len(),
                        items.len(),
                    )));
                }
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| value_from_py(&format!("{field}[{i}]"), v))
                    .collect::<PyResult<Vec<_>>>()?
            };
            space.from_user(&values).map_err(py_err)
        }
        CoreSpace::Candidates { names, features } => {
            let i = if let Ok(s) = point.extract::<String>() {
                names.iter().position(|n| *n == s).ok_or_else(|| {
                    py_err(agora_core::Error::unknown(
                        "candidate",
                        &s,
                        &names.iter().map(String::as_str).collect::<Vec<_>>(),
                    ))
                })?
            } else if point.is_instance_of::<PyInt>() {
                point.extract::<usize>().map_err(|_| {
                    invalid(
                        field,
                        format!("row {point} is out of range 0..{}", features.len()),
                    )
                })?
            } else {
                return Err(wrong_type(
                    field,
                    "give a candidate's name or its row index",
                ));
            };
            features.get(i).cloned().ok_or_else(|| {
                invalid(
                    field,
                    format!("row {i} is out of range 0..{}", features.len()),
                )
            })
        }
    }
}
