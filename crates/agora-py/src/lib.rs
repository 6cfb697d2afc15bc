//! agora's Python package, `import agora`: the method registry, every method as an
//! in-memory ask/tell strategy, studies on a store (the same files the `agora` CLI and
//! server use), simulated respondents and benchmarks, `reproduce`, and the engines behind
//! the `agora.optuna` samplers. This crate is the extension module `agora._agora`; the
//! Python-side package (`python/agora`) wraps it and adds the Optuna samplers.
//!
//! Errors: bad input raises `ValueError` (an unknown name `KeyError`, a wrong type
//! `TypeError`) naming the field and the allowed values; nothing panics across the
//! boundary. Model fits and acquisition searches release the GIL.

mod convert;
mod errors;
mod hom;
mod problems;
mod query;
mod registry;
mod reply;
mod samplers;
mod space;
mod strategy;
mod study;
mod timing;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _agora(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<space::Param>()?;
    m.add_class::<space::Space>()?;
    m.add_class::<query::Query>()?;
    m.add_class::<query::Answer>()?;
    m.add_class::<strategy::Strategy>()?;
    m.add_function(wrap_pyfunction!(space::real, m)?)?;
    m.add_function(wrap_pyfunction!(space::log_real, m)?)?;
    m.add_function(wrap_pyfunction!(space::integer, m)?)?;
    m.add_function(wrap_pyfunction!(space::categorical, m)?)?;
    m.add_function(wrap_pyfunction!(registry::methods, m)?)?;
    m.add_class::<study::Study>()?;
    m.add_class::<problems::Problem>()?;
    m.add_class::<hom::HomPolicy>()?;
    m.add_class::<samplers::GpSuggester>()?;
    m.add_class::<samplers::PreferenceSuggester>()?;
    m.add_function(wrap_pyfunction!(timing::time_loop, m)?)?;
    m.add_function(wrap_pyfunction!(problems::problem_list, m)?)?;
    m.add_function(wrap_pyfunction!(problems::make_problem, m)?)?;
    m.add_function(wrap_pyfunction!(problems::reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(problems::suites, m)?)?;
    m.add_function(wrap_pyfunction!(study::create_study, m)?)?;
    m.add_function(wrap_pyfunction!(study::load_study, m)?)?;
    m.add_function(wrap_pyfunction!(study::study_names, m)?)?;
    Ok(())
}
