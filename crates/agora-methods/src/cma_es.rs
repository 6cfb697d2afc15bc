//! CMA-ES (Hansen 2016, "The CMA Evolution Strategy: A Tutorial") as a strategy: one of
//! DSBO's black-box baselines. The sampler and the update are
//! [`agora_math::cma_es`]'s; this file evaluates one sample per query and restarts.

use crate::Strategy;
use crate::evaluations::{
    Evaluations, continuous_box, evaluate_query, evaluated, evaluations_strategy, uniform_point,
};
use crate::open::{AskTell, OpenQuery};
use agora_core::{Answer, Error, Query, Result, Space};
use agora_math::cma_es::{CmaParams, CmaState, CmaStep};
use agora_math::rng::{Rng, stream};

/// Settings of [`CmaEs`].
#[derive(Debug, Clone, PartialEq)]
pub struct CmaEsConfig {
    /// Initial step size in unit-cube coordinates.
    pub sigma0: f64,
    /// Population size `λ` (`None`: `4 + ⌊3 ln D⌋`).
    pub popsize: Option<usize>,
    /// Initial mean in unit-cube coordinates (`None`: uniform random).
    pub x0: Option<Vec<f64>>,
    /// Redraws of a sample outside the box before it is clamped.
    pub max_resamples: usize,
}

impl Default for CmaEsConfig {
    /// `σ0 = 0.3`, default `λ`, random start, 10 redraws.
    fn default() -> Self {
        CmaEsConfig {
            sigma0: 0.3,
            popsize: None,
            x0: None,
            max_resamples: 10,
        }
    }
}

/// CMA-ES, the standard `(μ/μ_w, λ)` form with cumulative step-size adaptation and
/// rank-one plus rank-μ covariance updates (Hansen 2016, Table 1 defaults). It runs in the
/// unit cube: a sample outside is redrawn up to `max_resamples` times, then clamped, and
/// the clamped point enters the update. It restarts from a random mean when the step size
/// collapses or the covariance becomes ill-conditioned. Deterministic in its seed: run `r`
/// (from 0) draws its mean and samples from ChaCha stream `[r]`.
#[derive(Debug, Clone)]
pub struct CmaEs {
    config: CmaEsConfig,
    dim: usize,
    seed: u64,
    params: CmaParams,
    restart: u64,
    rng: Rng,
    state: CmaState,
    /// The generation so far: `(value, point)`.
    pop: Vec<(f64, Vec<f64>)>,
    evals: Evaluations,
    open: OpenQuery<()>,
}

impl CmaEs {
    /// CMA-ES on `space` (a box of real parameters).
    ///
    /// Errors: a bad space, `sigma0` or `x0` (naming the field).
    pub fn new(space: &Space, config: CmaEsConfig, seed: u64) -> Result<CmaEs> {
        let dim = continuous_box(space)?;
        if !(config.sigma0.is_finite() && config.sigma0 > 0.0) {
            return Err(Error::invalid(
                "sigma0",
                format!("must be a positive finite number, got {}", config.sigma0),
            ));
        }
        if let Some(x0) = &config.x0 {
            if x0.len() != dim {
                return Err(Error::dim("x0", dim, x0.len()));
            }
            if x0.iter().any(|v| !(0.0..=1.0).contains(v)) {
                return Err(Error::invalid("x0", "must lie in the unit cube [0, 1]^D"));
            }
        }
        let (rng, state) = CmaEs::start(&config, dim, seed, 0);
        Ok(CmaEs {
            params: CmaParams::new(dim, config.popsize),
            config,
            dim,
            seed,
            restart: 0,
            rng,
            state,
            pop: Vec::new(),
            evals: Evaluations::default(),
            open: OpenQuery::default(),
        })
    }

    /// Run `restart`'s stream and initial state (the given `x0` on the first run only).
    fn start(config: &CmaEsConfig, dim: usize, seed: u64, restart: u64) -> (Rng, CmaState) {
        let mut rng = stream(seed, &[restart]);
        let mean = match (&config.x0, restart) {
            (Some(x0), 0) => x0.clone(),
            _ => uniform_point(&mut rng, dim),
        };
        (rng, CmaState::new(mean, config.sigma0))
    }

    /// The settings.
    pub fn config(&self) -> &CmaEsConfig {
        &self.config
    }
}

impl AskTell for CmaEs {
    type Pending = ();

    fn open_query(&mut self) -> &mut OpenQuery<()> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, ())> {
        let x = self
            .state
            .sample_in_unit_cube(&mut self.rng, self.config.max_resamples);
        Ok((evaluate_query(self.evals.len() as u64, &x), ()))
    }

    fn record(&mut self, query: &Query, _: &(), answer: &Answer) -> Result<()> {
        let (x, y) = evaluated(query, answer)?;
        self.evals.push(x.clone(), y);
        self.pop.push((y, x));
        if self.pop.len() == self.params.lambda {
            let step = self.state.update(&self.params, &mut self.pop);
            self.pop.clear();
            if step == CmaStep::Restart {
                self.restart += 1;
                (self.rng, self.state) =
                    CmaEs::start(&self.config, self.dim, self.seed, self.restart);
            }
        }
        Ok(())
    }
}

impl Strategy for CmaEs {
    fn name(&self) -> String {
        "cma-es".into()
    }
    evaluations_strategy!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FnRespondent, run_on};

    #[test]
    fn cma_es_solves_a_convex_quadratic_in_10d() {
        // f(x) = −Σ a_i (x_i − c_i)², a_i = 10^{2i/9} (condition number 100), on a box that
        // is not centred on the optimum; the maximum 0 at x = c is the closed-form reference.
        let d = 10;
        let c: Vec<f64> = (0..d).map(|i| -1.0 + 0.35 * i as f64).collect();
        let a: Vec<f64> = (0..d).map(|i| 10f64.powf(2.0 * i as f64 / 9.0)).collect();
        let (c2, a2) = (c.clone(), a.clone());
        let f = move |x: &[f64]| -> f64 {
            -x.iter()
                .zip(&c2)
                .zip(&a2)
                .map(|((xi, ci), ai)| ai * (xi - ci).powi(2))
                .sum::<f64>()
        };
        let space = Space::reals(&vec![(-3.0, 5.0); d]).unwrap();
        let mut cma = CmaEs::new(&space, CmaEsConfig::default(), 1).unwrap();
        let tr = run_on(&mut cma, &mut FnRespondent::new(space, f), 6000);
        let (x, v) = tr.best_point();
        assert!(v > -1e-6, "best {v}");
        for (xi, ci) in x.iter().zip(&c) {
            assert!((xi - ci).abs() < 1e-3);
        }
    }

    #[test]
    fn bad_settings_name_the_field() {
        let space = Space::reals(&[(0.0, 1.0); 3]).unwrap();
        let bad = |config: CmaEsConfig| CmaEs::new(&space, config, 0).unwrap_err().to_string();
        let e = bad(CmaEsConfig {
            sigma0: 0.0,
            ..CmaEsConfig::default()
        });
        assert!(e.contains("sigma0"), "{e}");
        let e = bad(CmaEsConfig {
            x0: Some(vec![0.5; 2]),
            ..CmaEsConfig::default()
        });
        assert!(e.contains("x0"), "{e}");
        let e = bad(CmaEsConfig {
            x0: Some(vec![0.5, 2.0, 0.5]),
            ..CmaEsConfig::default()
        });
        assert!(e.contains("x0"), "{e}");
    }
}
