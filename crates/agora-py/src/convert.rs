//! Python values to and from agora's: JSON-like values (knobs, specs), user-unit parameter
//! values, and numeric sequences (lists, tuples, numpy arrays).

use crate::errors::{invalid, wrong_type};
use agora_core::ParamValue;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;

/// A Python value (None, bool, int, float, str, list/tuple, dict with str keys, or anything
/// with `tolist()` such as a numpy array or scalar) as JSON; `field` names it in errors.
pub fn to_json(field: &str, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        return Err(invalid(field, "an integer outside the 64-bit range"));
    }
    if obj.is_instance_of::<PyFloat>() {
        let x: f64 = obj.extract()?;
        return serde_json::Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| invalid(field, format!("must be a finite number, got {x}")));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(Value::String(obj.extract()?));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = serde_json::Map::new();
        for (k, v) in d.iter() {
            let k: String = k
                .extract()
                .map_err(|_| invalid(field, "dictionary keys must be strings"))?;
            let f = format!("{field}.{k}");
            m.insert(k, to_json(&f, &v)?);
        }
        return Ok(Value::Object(m));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut v = Vec::new();
        for (i, x) in obj.try_iter()?.enumerate() {
            v.push(to_json(&format!("{field}[{i}]"), &x?)?);
        }
        return Ok(Value::Array(v));
    }
    if obj.hasattr("tolist")? {
        return to_json(field, &obj.call_method0("tolist")?);
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "`{field}`: a {} cannot be used here; give a number, a string, a bool, a list or a dict",
        obj.get_type().name()?
    )))
}

/// JSON as a Python value.
pub fn from_json<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into_pyobject(py)?.into_any(),
            None => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| from_json(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, from_json(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// A sequence of finite floats (list, tuple, numpy array); errors name `field[i]`.
pub fn floats(field: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    let obj = if obj.hasattr("tolist")? && !obj.is_instance_of::<PyList>() {
        obj.call_method0("tolist")?
    } else {
        obj.clone()
    };
    if obj.is_instance_of::<PyString>() {
        return Err(wrong_type(
            field,
            "give a sequence of numbers, not a string",
        ));
    }
    let Ok(iter) = obj.try_iter() else {
        return Err(wrong_type(
            field,
            "give a sequence of numbers (a list or an array)",
        ));
    };
    let mut out = Vec::new();
    for (i, x) in iter.enumerate() {
        let x = x?;
        let f = format!("{field}[{i}]");
        let v: f64 = x
            .extract()
            .map_err(|_| wrong_type(&f, "must be a number"))?;
        if !v.is_finite() {
            return Err(invalid(&f, format!("must be a finite number, got {v}")));
        }
        out.push(v);
    }
    Ok(out)
}

/// Rows of finite floats (a list of sequences or a 2-D array).
pub fn rows(field: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<f64>>> {
    let obj = if obj.hasattr("tolist")? && !obj.is_instance_of::<PyList>() {
        obj.call_method0("tolist")?
    } else {
        obj.clone()
    };
    let Ok(iter) = obj.try_iter() else {
        return Err(wrong_type(
            field,
            "give rows of numbers (a list of lists or a 2-D array)",
        ));
    };
    iter.enumerate()
        .map(|(i, r)| floats(&format!("{field}[{i}]"), &r?))
        .collect()
}

/// A user-unit parameter value as Python (float, int or str).
pub fn value_to_py<'py>(py: Python<'py>, v: &ParamValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        ParamValue::Float(x) => x.into_pyobject(py)?.into_any(),
        ParamValue::Int(i) => i.into_pyobject(py)?.into_any(),
        ParamValue::Choice(c) => PyString::new(py, c).into_any(),
    })
}

/// A Python value (float, int, str, numpy scalar) as a user-unit parameter value.
pub fn value_from_py(field: &str, obj: &Bound<'_, PyAny>) -> PyResult<ParamValue> {
    if obj.is_instance_of::<PyString>() {
        return Ok(ParamValue::Choice(obj.extract()?));
    }
    if obj.is_instance_of::<PyBool>() {
        return Err(wrong_type(
            field,
            "a bool is not a parameter value; give a number or a choice",
        ));
    }
    if obj.is_instance_of::<PyInt>() {
        return obj
            .extract::<i64>()
            .map(ParamValue::Int)
            .map_err(|_| invalid(field, "an integer outside the 64-bit range"));
    }
    if !obj.is_instance_of::<PyFloat>() && obj.hasattr("item")? {
        // A numpy scalar: its Python value.
        return value_from_py(field, &obj.call_method0("item")?);
    }
    if let Ok(x) = obj.extract::<f64>() {
        if !x.is_finite() {
            return Err(invalid(field, format!("must be a finite number, got {x}")));
        }
        return Ok(ParamValue::Float(x));
    }
    Err(wrong_type(
        field,
        format!(
            "a {} is not a parameter value; give a number or a choice",
            obj.get_type().name()?
        ),
    ))
}
