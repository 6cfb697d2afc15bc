//! `agora.methods()`: the one method registry, as `agora list` shows it.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Every registered method as a dict: `name`, `aliases` (name → the knobs it fixes),
/// `description`, `feedback`, `spaces`, `participants` (`None`, or role / min / max) and
/// `knobs` (name → kind, allowed, default, doc; `default` is `None` for a required knob).
#[pyfunction]
pub fn methods(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for m in agora_methods::registry::methods() {
        let d = PyDict::new(py);
        d.set_item("name", m.name)?;
        let aliases = PyDict::new(py);
        for a in m.aliases {
            let fixed = PyDict::new(py);
            for (k, v) in a.fixed {
                fixed.set_item(*k, *v)?;
            }
            aliases.set_item(a.name, fixed)?;
        }
        d.set_item("aliases", aliases)?;
        d.set_item("description", m.description)?;
        let feedback: Vec<&str> = m.feedback.iter().map(|f| f.name()).collect();
        d.set_item("feedback", feedback)?;
        d.set_item("spaces", m.spaces.name())?;
        match m.participants {
            Some(p) => {
                let pd = PyDict::new(py);
                pd.set_item("role", p.role)?;
                pd.set_item("min", p.min)?;
                pd.set_item("max", (p.max != usize::MAX).then_some(p.max))?;
                d.set_item("participants", pd)?;
            }
            None => d.set_item("participants", py.None())?,
        }
        let knobs = PyDict::new(py);
        for k in m.knobs {
            let kd = PyDict::new(py);
            kd.set_item("allowed", k.kind.allowed())?;
            kd.set_item("default", k.default_text())?;
            kd.set_item("example", k.default_or_example())?;
            kd.set_item("doc", k.doc)?;
            knobs.set_item(k.name, kd)?;
        }
        d.set_item("knobs", knobs)?;
        out.append(d)?;
    }
    Ok(out)
}
