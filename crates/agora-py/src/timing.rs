//! The Rust side of `python -m agora.bench overhead`: the same ask → answer → tell loop that
//! `agora.Strategy` runs from Python, timed in Rust, so the two differ only by the calls
//! through Python.

use crate::errors::py_err;
use agora_methods::registry::{self, Setup};
use agora_problems::{Oracle, Problem};
use pyo3::prelude::*;
use std::time::Instant;

/// Seconds per step (ask, answer by a noiseless oracle, tell) of `method` on `problem` for
/// `n` steps from `seed`, timed in Rust without the GIL.
#[pyfunction]
#[pyo3(name = "_time_loop")]
pub fn time_loop(
    py: Python<'_>,
    method: &str,
    problem: &str,
    seed: u64,
    n: usize,
) -> PyResult<Vec<f64>> {
    let p = Problem::by_name(problem).map_err(py_err)?;
    let space = p.space.clone();
    let mut oracle = Oracle::new(p, 0.0, 0).map_err(py_err)?;
    let mut s = registry::build(method, &[], Setup::new(space, seed)).map_err(py_err)?;
    py.detach(|| {
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let q = s.ask()?;
            let a = oracle.answer(&q)?;
            s.tell(&a)?;
            times.push(t.elapsed().as_secs_f64());
        }
        Ok(times)
    })
    .map_err(py_err)
}
