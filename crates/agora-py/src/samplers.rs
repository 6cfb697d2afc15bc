//! The engines behind `agora.optuna`: GP-BO and preferential BO on observations the caller
//! owns (an Optuna study's trials), in unit-cube coordinates of an `agora.Space`. Fits and
//! acquisition searches run without the GIL.

use crate::convert::floats;
use crate::errors::{invalid, py_err};
use crate::space::Space;
use agora_methods::suggest::{GpSuggester as CoreGp, PreferenceSuggester as CorePref};
use agora_methods::{GpBoConfig, StandardAcq};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use std::sync::Mutex;

/// GP-BO on observations told to it one by one: `observe(unit_x, y)` (larger `y` is
/// better), then `suggest()` the unit-cube point maximizing the acquisition. Same seed and
/// same observations in the same order: same suggestion.
#[pyclass(module = "agora", name = "GpSuggester")]
pub struct GpSuggester {
    inner: Mutex<CoreGp>,
}

#[pymethods]
impl GpSuggester {
    /// An engine over `space` with `acquisition` (`logei`, `ei`, `pi`, `ucb` with `beta`),
    /// scoring `raw_samples` Sobol points before refining the best `restarts` of them.
    #[new]
    #[pyo3(signature = (space, *, acquisition = "logei", beta = 2.0, seed = 0, raw_samples = 512, restarts = 10))]
    fn new(
        space: &Space,
        acquisition: &str,
        beta: f64,
        seed: u64,
        raw_samples: usize,
        restarts: usize,
    ) -> PyResult<GpSuggester> {
        if raw_samples == 0 || restarts == 0 {
            return Err(invalid(
                "raw_samples",
                "raw_samples and restarts must be at least 1",
            ));
        }
        let acq = match acquisition {
            "logei" => StandardAcq::LogEi,
            "ei" => StandardAcq::Ei,
            "pi" => StandardAcq::Pi,
            "ucb" => StandardAcq::Ucb { beta },
            other => {
                return Err(invalid(
                    "acquisition",
                    format!("`{other}` is not one; allowed: logei, ei, pi, ucb"),
                ));
            }
        };
        let mut cfg = GpBoConfig::new(acq, space.inner.dim());
        cfg.maximizer.raw_samples = raw_samples;
        cfg.maximizer.restarts = restarts;
        let inner = CoreGp::with_config(space.inner.clone(), cfg, seed).map_err(py_err)?;
        Ok(GpSuggester {
            inner: Mutex::new(inner),
        })
    }

    /// Add an observation: a unit-cube point of the space and its value (finite; larger is
    /// better).
    fn observe(&self, py: Python<'_>, unit_x: &Bound<'_, PyAny>, y: f64) -> PyResult<()> {
        let x = floats("unit_x", unit_x)?;
        self.lock(py).observe(&x, y).map_err(py_err)
    }

    /// Observations so far.
    #[getter]
    fn n_observed(&self, py: Python<'_>) -> usize {
        self.lock(py).n_observed()
    }

    /// The unit-cube point (snapped to the space's integer and categorical values) that
    /// maximizes the acquisition of the GP fitted to the observations.
    fn suggest(&self, py: Python<'_>) -> PyResult<Vec<f64>> {
        let mut g = self.lock(py);
        let s: &mut CoreGp = &mut g;
        py.detach(|| s.suggest()).map_err(py_err)
    }

    /// The GP's posterior `(mean, sd)` at unit-cube points.
    fn belief(&self, py: Python<'_>, unit_points: &Bound<'_, PyAny>) -> PyResult<Vec<(f64, f64)>> {
        let pts = crate::convert::rows("unit_points", unit_points)?;
        let g = self.lock(py);
        let s: &CoreGp = &g;
        py.detach(|| s.belief(&pts)).map_err(py_err)
    }
}

impl GpSuggester {
    /// Locked without holding the GIL while waiting (another thread may hold the lock with
    /// the GIL released, in a fit, and need the GIL back to let go).
    fn lock(&self, py: Python<'_>) -> std::sync::MutexGuard<'_, CoreGp> {
        self.inner
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// Preferential BO on comparisons told to it: `add_option(unit_x)` the options compared,
/// `prefer(winner, loser)` / `tie(a, b)` by option index, then `suggest()` a new option
/// (EUBO against the option it will be compared with, in a trust region around it).
#[pyclass(module = "agora", name = "PreferenceSuggester")]
pub struct PreferenceSuggester {
    inner: Mutex<CorePref>,
}

impl PreferenceSuggester {
    /// Locked without holding the GIL while waiting (another thread may hold the lock with
    /// the GIL released, in a fit, and need the GIL back to let go).
    fn lock(&self, py: Python<'_>) -> std::sync::MutexGuard<'_, CorePref> {
        self.inner
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PreferenceSuggester {
    /// An engine over `space`, seeded by `seed`.
    #[new]
    #[pyo3(signature = (space, *, seed = 0))]
    fn new(space: &Space, seed: u64) -> PyResult<PreferenceSuggester> {
        let inner = CorePref::new(space.inner.clone(), seed).map_err(py_err)?;
        Ok(PreferenceSuggester {
            inner: Mutex::new(inner),
        })
    }

    /// Add an option (a unit-cube point; one within 1e-4 of an earlier option is that
    /// option) and return its index.
    fn add_option(&self, py: Python<'_>, unit_x: &Bound<'_, PyAny>) -> PyResult<usize> {
        let x = floats("unit_x", unit_x)?;
        self.lock(py).add_option(&x).map_err(py_err)
    }

    /// Option `winner` was preferred to option `loser` (the model is refitted).
    fn prefer(&self, py: Python<'_>, winner: usize, loser: usize) -> PyResult<()> {
        let mut g = self.lock(py);
        let s: &mut CorePref = &mut g;
        py.detach(|| s.prefer(winner, loser)).map_err(py_err)
    }

    /// Options `a` and `b` could not be told apart (counted; no preference).
    fn tie(&self, py: Python<'_>, a: usize, b: usize) -> PyResult<()> {
        self.lock(py).tie(a, b).map_err(py_err)
    }

    /// Options so far.
    #[getter]
    fn n_options(&self, py: Python<'_>) -> usize {
        self.lock(py).n_options()
    }

    /// Ties so far.
    #[getter]
    fn ties(&self, py: Python<'_>) -> usize {
        self.lock(py).ties()
    }

    /// The index of the option with the highest posterior mean (`None` before any
    /// preference).
    fn best(&self, py: Python<'_>) -> Option<usize> {
        self.lock(py).best()
    }

    /// The option a new suggestion is compared with by default: the standing option (one
    /// that won its latest comparison) with the highest posterior mean, else `best()`
    /// (`None` before any preference).
    fn reference(&self, py: Python<'_>) -> Option<usize> {
        self.lock(py).reference()
    }

    /// A new option, as a unit-cube point snapped to the space's grid, to be compared with
    /// option `reference` (default: `reference()`).
    #[pyo3(signature = (reference = None))]
    fn suggest(&self, py: Python<'_>, reference: Option<usize>) -> PyResult<Vec<f64>> {
        let g = self.lock(py);
        let s: &CorePref = &g;
        py.detach(|| match reference {
            Some(r) => s.suggest_against(r),
            None => s.suggest(),
        })
        .map_err(py_err)
    }

    /// The latent utility's posterior `(mean, sd)` at unit-cube points.
    fn belief(&self, py: Python<'_>, unit_points: &Bound<'_, PyAny>) -> PyResult<Vec<(f64, f64)>> {
        let pts = crate::convert::rows("unit_points", unit_points)?;
        let g = self.lock(py);
        let s: &CorePref = &g;
        py.detach(|| s.belief(&pts)).map_err(py_err)
    }
}
