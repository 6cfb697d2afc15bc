//! A TuRBO-1-style trust-region BO (Eriksson et al. 2019, "Scalable Global Optimization via
//! Local Bayesian Optimization") as a strategy: one of DSBO's high-dimensional baselines.

use crate::Strategy;
use crate::evaluations::{
    Evaluations, Refits, continuous_box, evaluate_query, evaluated, evaluations_strategy,
    uniform_point,
};
use crate::open::{AskTell, OpenQuery};
use agora_acq::{Acquisition, RffSample, argmax_finite, ucb_values};
use agora_core::{Answer, Error, Query, Result, Space};
use agora_gp::{GpConfig, StationaryKind, Surrogate};
use agora_math::rng::{Rng, derive_seed, stream};
use faer::Mat;
use rand::RngExt;

/// How [`Turbo`] picks inside its trust region.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TrustRegionAcq {
    /// Thompson sampling: one random-Fourier-feature posterior draw
    /// ([`agora_acq::RffSample`]) maximized over the candidates (TuRBO's choice).
    Thompson {
        /// Random features of the draw.
        features: usize,
    },
    /// The UCB `μ + √β σ` maximized over the candidates.
    Ucb {
        /// Exploration weight.
        beta: f64,
    },
}

/// Settings of [`Turbo`] (defaults from Eriksson et al. 2019, TuRBO-1).
#[derive(Debug, Clone, PartialEq)]
pub struct TurboConfig {
    /// Uniform points at each (re)start.
    pub n_init: usize,
    /// GP model (`None`: Matérn-5/2 ARD with BoTorch's priors).
    pub gp: Option<GpConfig>,
    /// Refit hyperparameters every this many evaluations.
    pub refit_every: usize,
    /// Candidates per pick.
    pub n_candidates: usize,
    /// Initial side length (unit cube).
    pub length_init: f64,
    /// Below this side length the region restarts.
    pub length_min: f64,
    /// Largest side length.
    pub length_max: f64,
    /// Consecutive improvements that double the side.
    pub success_tol: usize,
    /// Consecutive failures that halve it (`None`: `max(4, D)`).
    pub failure_tol: Option<usize>,
    /// Pick rule inside the region.
    pub acq: TrustRegionAcq,
}

impl Default for TurboConfig {
    /// 10 initial points, refit every 5, 1000 candidates, side 0.8 in `[2⁻⁷, 1.6]`,
    /// tolerances 3 and `max(4, D)`, Thompson sampling with 1024 features.
    fn default() -> Self {
        TurboConfig {
            n_init: 10,
            gp: None,
            refit_every: 5,
            n_candidates: 1000,
            length_init: 0.8,
            length_min: 0.5f64.powi(7),
            length_max: 1.6,
            success_tol: 3,
            failure_tol: None,
            acq: TrustRegionAcq::Thompson { features: 1024 },
        }
    }
}

/// TuRBO's side-length rule: `success_tol` consecutive improvements double the side (up
/// to `length_max`), `failure_tol` consecutive failures halve it; below `length_min` the
/// region has expired.
#[derive(Debug, Clone, Copy, PartialEq)]
struct TrustRegion {
    length: f64,
    length_min: f64,
    length_max: f64,
    success_tol: usize,
    failure_tol: usize,
    successes: usize,
    failures: usize,
}

impl TrustRegion {
    fn new(
        length: f64,
        length_min: f64,
        length_max: f64,
        success_tol: usize,
        failure_tol: usize,
    ) -> Self {
        TrustRegion {
            length,
            length_min,
            length_max,
            success_tol,
            failure_tol,
            successes: 0,
            failures: 0,
        }
    }

    /// Record whether the last pick improved on the region's best.
    fn update(&mut self, improved: bool) {
        if improved {
            self.successes += 1;
            self.failures = 0;
        } else {
            self.successes = 0;
            self.failures += 1;
        }
        if self.successes >= self.success_tol {
            self.length = (2.0 * self.length).min(self.length_max);
            self.successes = 0;
        } else if self.failures >= self.failure_tol {
            self.length /= 2.0;
            self.failures = 0;
        }
    }

    fn expired(&self) -> bool {
        self.length < self.length_min
    }
}

/// A TuRBO-1-style trust-region BO (Eriksson et al. 2019): one hyperrectangle centred at
/// the incumbent, side lengths scaled by the GP's ARD lengthscales, candidates that perturb
/// a random subset of coordinates (probability `min(1, 20/D)`), success/failure counters
/// that double/halve the side, and a fresh start (new design, data discarded) when the
/// side falls below `length_min`. Deterministic in its seed: restart `r` draws its design
/// from ChaCha stream `[0, r]`, pick `p` (counted over the whole run) fits with seed
/// `derive_seed(seed, [1, p])` and draws its candidates from stream `[2, p]`.
#[derive(Debug, Clone)]
pub struct Turbo {
    config: TurboConfig,
    dim: usize,
    seed: u64,
    surrogate: Surrogate,
    fail_tol: usize,
    p_perturb: f64,
    evals: Evaluations,
    restart: u64,
    pick: u64,
    init_rng: Rng,
    init_done: usize,
    /// The evaluations of the current restart (indices into `evals`).
    local: Vec<usize>,
    region: TrustRegion,
    fits: Refits,
    open: OpenQuery<Option<f64>>,
}

impl Turbo {
    /// TuRBO on `space` (a box of real parameters).
    ///
    /// Errors: a bad space or configuration (naming the field).
    pub fn new(space: &Space, config: TurboConfig, seed: u64) -> Result<Turbo> {
        let c = &config;
        if c.n_init == 0 || c.n_candidates == 0 || c.refit_every == 0 || c.success_tol == 0 {
            return Err(Error::invalid(
                "turbo",
                "n_init, n_candidates, refit_every and success_tol must be at least 1",
            ));
        }
        if !(c.length_min > 0.0 && c.length_min <= c.length_init && c.length_init <= c.length_max) {
            return Err(Error::invalid(
                "turbo.length_*",
                "needs 0 < length_min <= length_init <= length_max",
            ));
        }
        let dim = continuous_box(space)?;
        let surrogate = Surrogate::FullArd(c.gp.clone().unwrap_or_else(|| GpConfig {
            kernel: StationaryKind::Matern52,
            ..GpConfig::botorch(dim)
        }));
        surrogate.validate(dim)?;
        let fail_tol = c.failure_tol.unwrap_or(dim.max(4)).max(1);
        Ok(Turbo {
            region: Turbo::fresh_region(c, fail_tol),
            fail_tol,
            p_perturb: (20.0 / dim as f64).min(1.0),
            dim,
            seed,
            surrogate,
            evals: Evaluations::default(),
            restart: 0,
            pick: 0,
            init_rng: stream(seed, &[0, 0]),
            init_done: 0,
            local: Vec::new(),
            fits: Refits::default(),
            open: OpenQuery::default(),
            config,
        })
    }

    fn fresh_region(c: &TurboConfig, fail_tol: usize) -> TrustRegion {
        TrustRegion::new(
            c.length_init,
            c.length_min,
            c.length_max,
            c.success_tol,
            fail_tol,
        )
    }

    /// The settings.
    pub fn config(&self) -> &TurboConfig {
        &self.config
    }

    /// A fresh start: new design, local data discarded.
    fn restart(&mut self) {
        self.restart += 1;
        self.init_rng = stream(self.seed, &[0, self.restart]);
        self.init_done = 0;
        self.local.clear();
        self.region = Turbo::fresh_region(&self.config, self.fail_tol);
        self.fits.clear();
    }

    /// The best candidate in the trust region around the local incumbent, and the
    /// incumbent's value.
    fn pick(&mut self) -> Result<(Vec<f64>, f64)> {
        let (c, dim) = (&self.config, self.dim);
        self.pick += 1;
        let x = Mat::from_fn(self.local.len(), dim, |i, j| {
            self.evals.unit[self.local[i]][j]
        });
        let y: Vec<f64> = self.local.iter().map(|&i| self.evals.ys[i]).collect();
        let (seed, pick) = (self.seed, self.pick);
        let gp = self
            .fits
            .condition(&self.surrogate, x, &y, c.refit_every, || {
                derive_seed(seed, &[1, pick])
            })?;
        let Some(best_local) = argmax_finite(&y) else {
            return Err(Error::State("trust region without data".into()));
        };
        let center = &self.evals.unit[self.local[best_local]];
        // Side lengths ∝ lengthscales, geometric mean 1.
        let ls = gp
            .kernel()
            .spectral(dim)
            .map(|s| s.lengthscales)
            .filter(|l| l.iter().all(|v| v.is_finite() && *v > 0.0))
            .unwrap_or_else(|| vec![1.0; dim]);
        let gm = (ls.iter().map(|l| l.ln()).sum::<f64>() / dim as f64).exp();
        let mut rng = stream(self.seed, &[2, self.pick]);
        let mut cand = Mat::<f64>::zeros(c.n_candidates, dim);
        for r in 0..c.n_candidates {
            let forced = rng.random_range(0..dim);
            for j in 0..dim {
                let half = 0.5 * self.region.length * ls[j] / gm;
                let lo = (center[j] - half).max(0.0);
                let hi = (center[j] + half).min(1.0);
                let perturb = j == forced || rng.random::<f64>() < self.p_perturb;
                cand[(r, j)] = if perturb {
                    lo + rng.random::<f64>() * (hi - lo)
                } else {
                    center[j]
                };
            }
        }
        let scores = match c.acq {
            TrustRegionAcq::Thompson { features } => {
                RffSample::draw(&gp, features.max(1), &mut rng)?.values(cand.as_ref())?
            }
            TrustRegionAcq::Ucb { beta } => ucb_values(&gp, beta, &cand)?,
        };
        let Some(r) = argmax_finite(&scores) else {
            return Err(Error::Numerical("no finite trust-region score".into()));
        };
        Ok(((0..dim).map(|j| cand[(r, j)]).collect(), y[best_local]))
    }
}

impl AskTell for Turbo {
    /// The local incumbent's value, for a trust-region pick.
    type Pending = Option<f64>;

    fn open_query(&mut self) -> &mut OpenQuery<Option<f64>> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, Option<f64>)> {
        let (u, y_best) = if self.init_done < self.config.n_init {
            (uniform_point(&mut self.init_rng, self.dim), None)
        } else {
            let (u, y) = self.pick()?;
            (u, Some(y))
        };
        Ok((evaluate_query(self.evals.len() as u64, &u), y_best))
    }

    fn record(&mut self, query: &Query, y_best: &Option<f64>, answer: &Answer) -> Result<()> {
        let (u, y) = evaluated(query, answer)?;
        self.evals.push(u, y);
        self.local.push(self.evals.len() - 1);
        match *y_best {
            None => self.init_done += 1,
            Some(b) => {
                self.region.update(y > b + 1e-3 * b.abs());
                if self.region.expired() {
                    self.restart();
                }
            }
        }
        Ok(())
    }
}

impl Strategy for Turbo {
    fn name(&self) -> String {
        "turbo".into()
    }
    evaluations_strategy!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{additive_problem, run};
    use crate::{CmaEs, CmaEsConfig, UniformSearch};

    #[test]
    fn trust_region_turbo_and_cma_es_beat_random_search() {
        let f = additive_problem(8, 0.2, 4);
        let space = Space::reals(&f.bounds()).unwrap();
        let budget = 40;
        let mut rand_best = 0.0;
        let mut turbo_best = 0.0;
        let mut cma_best = 0.0;
        for seed in 0..2 {
            rand_best += run(&mut UniformSearch::new(&space, seed).unwrap(), &f, budget).best();
            turbo_best += run(
                &mut Turbo::new(&space, TurboConfig::default(), seed).unwrap(),
                &f,
                budget,
            )
            .best();
            cma_best += run(
                &mut CmaEs::new(&space, CmaEsConfig::default(), seed).unwrap(),
                &f,
                200,
            )
            .best();
        }
        let rand200: f64 = (0..2)
            .map(|s| run(&mut UniformSearch::new(&space, s).unwrap(), &f, 200).best())
            .sum();
        assert!(turbo_best > rand_best, "{turbo_best} vs {rand_best}");
        assert!(cma_best > rand200, "{cma_best} vs {rand200}");
    }

    #[test]
    fn turbo_side_length_follows_its_counters() {
        let mut tr = TrustRegion::new(0.8, 0.5f64.powi(7), 1.6, 3, 4);
        for _ in 0..3 {
            tr.update(true);
        }
        assert_eq!(tr.length, 1.6);
        for _ in 0..3 {
            tr.update(true);
        }
        assert_eq!(tr.length, 1.6, "capped at length_max");
        // A success resets the failure count.
        for _ in 0..3 {
            tr.update(false);
        }
        tr.update(true);
        for _ in 0..3 {
            tr.update(false);
        }
        assert_eq!(tr.length, 1.6);
        tr.update(false);
        assert_eq!(tr.length, 0.8);
        for _ in 0..4 * 6 {
            tr.update(false);
        }
        assert_eq!(tr.length, 0.8 / 64.0);
        assert!(!tr.expired());
        for _ in 0..4 {
            tr.update(false);
        }
        assert!(tr.expired());
    }

    #[test]
    fn bad_settings_name_the_field() {
        let space = Space::reals(&[(0.0, 1.0); 2]).unwrap();
        let bad = TurboConfig {
            length_min: 1.0,
            ..TurboConfig::default()
        };
        let e = Turbo::new(&space, bad, 0).unwrap_err();
        assert!(e.to_string().contains("turbo.length_*"), "{e}");
    }
}
