//! GIBO (Müller, von Rohr & Trimpe 2021, "Local policy search with Bayesian optimization")
//! as a strategy: one of DSBO's high-dimensional baselines (DSBO paper, Fig. 9).
//!
//! GIBO is a local, gradient-based search with a GP: at the current parameters `θ` it asks
//! `samples_per_step` points, each the maximizer of the gradient information
//! ([`agora_gp::ExactGp::gradient_information`]: how much observing `f(z)` shrinks the trace
//! of the posterior covariance of `∇f(θ)`), then moves `θ` by a fixed step along the
//! posterior mean gradient, normalized (the paper's normalized-gradient update). The GP sees
//! the most recent `window` evaluations. agora maximizes the gradient information over
//! `candidates` uniform points of the box of half-side `delta` around `θ` (the paper uses a
//! gradient-based maximizer in the same box), and evaluates each new `θ` itself.

use crate::Strategy;
use crate::evaluations::{
    Evaluations, continuous_box, evaluate_query, evaluated, evaluations_strategy, uniform_point,
};
use crate::open::{AskTell, OpenQuery};
use agora_core::{Answer, Error, Query, Result, Space};
use agora_gp::{FittedSurrogate, GpConfig, StationaryKind, Surrogate};
use agora_math::rng::{derive_seed, stream};
use faer::Mat;
use rand::RngExt;

/// Settings of [`Gibo`].
#[derive(Debug, Clone, PartialEq)]
pub struct GiboConfig {
    /// GP model (`None`: Matérn-5/2 ARD with BoTorch's priors; the kernel must be
    /// differentiable).
    pub gp: Option<GpConfig>,
    /// Gradient-information points asked at each `θ` (besides `θ` itself).
    pub samples_per_step: usize,
    /// Candidates the gradient information is maximized over.
    pub candidates: usize,
    /// Half-side of the candidate box around `θ` (unit cube).
    pub delta: f64,
    /// Length of each normalized-gradient step (unit cube).
    pub step: f64,
    /// The GP is fitted to this many most recent evaluations.
    pub window: usize,
}

impl Default for GiboConfig {
    /// 8 points per step, 256 candidates in a box of half-side 0.1, steps of 0.1, a window
    /// of 64 evaluations (steps of 0.05 climbed too slowly to beat random search in 60
    /// evaluations on the test's 6-D bump; 0.1–0.25 all did).
    fn default() -> Self {
        GiboConfig {
            gp: None,
            samples_per_step: 8,
            candidates: 256,
            delta: 0.1,
            step: 0.1,
            window: 64,
        }
    }
}

/// GIBO (Müller et al. 2021). Deterministic in its seed: the start draws from ChaCha stream
/// `[0]`, pick `p` its candidates from stream `[1, p]` and fits with seed
/// `derive_seed(seed, [2, p])`.
#[derive(Debug, Clone)]
pub struct Gibo {
    config: GiboConfig,
    dim: usize,
    seed: u64,
    surrogate: Surrogate,
    evals: Evaluations,
    /// The current parameters.
    theta: Vec<f64>,
    /// Evaluations asked at the current `θ` (`θ` itself first).
    asked: usize,
    pick: u64,
    fitted: Option<FittedSurrogate>,
    open: OpenQuery<()>,
}

impl Gibo {
    /// GIBO on `space` (a box of real parameters), starting at a uniform point.
    ///
    /// Errors: a bad space or configuration (naming the field).
    pub fn new(space: &Space, config: GiboConfig, seed: u64) -> Result<Gibo> {
        let c = &config;
        for (name, v) in [
            ("gibo.samples_per_step", c.samples_per_step),
            ("gibo.candidates", c.candidates),
            ("gibo.window", c.window),
        ] {
            if v == 0 {
                return Err(Error::invalid(name, "must be at least 1"));
            }
        }
        for (name, v) in [("gibo.delta", c.delta), ("gibo.step", c.step)] {
            if !(v.is_finite() && v > 0.0 && v <= 1.0) {
                return Err(Error::invalid(name, format!("must lie in (0, 1], got {v}")));
            }
        }
        let dim = continuous_box(space)?;
        let surrogate = Surrogate::FullArd(c.gp.clone().unwrap_or_else(|| GpConfig {
            kernel: StationaryKind::Matern52,
            ..GpConfig::botorch(dim)
        }));
        surrogate.validate(dim)?;
        let theta = uniform_point(&mut stream(seed, &[0]), dim);
        Ok(Gibo {
            dim,
            seed,
            surrogate,
            evals: Evaluations::default(),
            theta,
            asked: 0,
            pick: 0,
            fitted: None,
            open: OpenQuery::default(),
            config,
        })
    }

    /// The settings.
    pub fn config(&self) -> &GiboConfig {
        &self.config
    }

    /// The current parameters `θ` (unit cube).
    pub fn theta(&self) -> &[f64] {
        &self.theta
    }

    /// The GP on the window of recent evaluations (refitted, warm-started).
    fn model(&mut self) -> Result<agora_gp::ExactGp> {
        let n = self.evals.len();
        let from = n.saturating_sub(self.config.window);
        let x = Mat::from_fn(n - from, self.dim, |i, j| self.evals.unit[from + i][j]);
        let y = self.evals.ys[from..].to_vec();
        let seed = derive_seed(self.seed, &[2, self.pick]);
        let f = FittedSurrogate::fit(&self.surrogate, &x, &y, self.fitted.as_ref(), seed)?;
        let gp = f.condition(x, &y)?;
        self.fitted = Some(f);
        Ok(gp)
    }

    /// The candidate of largest gradient information around `θ`.
    /// (With fewer than two evaluations there is no GP yet: a uniform point of the box.)
    fn pick(&mut self) -> Result<Vec<f64>> {
        self.pick += 1;
        let (c, dim) = (&self.config, self.dim);
        let mut rng = stream(self.seed, &[1, self.pick]);
        let cand = Mat::from_fn(c.candidates, dim, |_, j| {
            let lo = (self.theta[j] - c.delta).max(0.0);
            let hi = (self.theta[j] + c.delta).min(1.0);
            lo + rng.random::<f64>() * (hi - lo)
        });
        if self.evals.len() < 2 {
            return Ok((0..dim).map(|j| cand[(0, j)]).collect());
        }
        let gp = self.model()?;
        let info = gp.gradient_information(&self.theta, cand.as_ref())?;
        let r = agora_acq::argmax_finite(&info)
            .ok_or_else(|| Error::Numerical("no finite gradient information".into()))?;
        Ok((0..dim).map(|j| cand[(r, j)]).collect())
    }

    /// `θ ← θ + step · ∇μ(θ) / ‖∇μ(θ)‖`, clamped to the cube (no move on a flat mean).
    fn step(&mut self) -> Result<()> {
        self.pick += 1;
        let gp = self.model()?;
        let (_, _, grad, _) = gp.predict_with_grad(&self.theta)?;
        let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
        if norm.is_finite() && norm > 0.0 {
            let s = self.config.step / norm;
            for (t, g) in self.theta.iter_mut().zip(&grad) {
                *t = (*t + s * g).clamp(0.0, 1.0);
            }
        }
        Ok(())
    }
}

impl AskTell for Gibo {
    type Pending = ();

    fn open_query(&mut self) -> &mut OpenQuery<()> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, ())> {
        if self.asked > self.config.samples_per_step {
            self.step()?;
            self.asked = 0;
        }
        let u = if self.asked == 0 {
            self.theta.clone()
        } else {
            self.pick()?
        };
        Ok((evaluate_query(self.evals.len() as u64, &u), ()))
    }

    fn record(&mut self, query: &Query, _: &(), answer: &Answer) -> Result<()> {
        let (u, y) = evaluated(query, answer)?;
        self.evals.push(u, y);
        self.asked += 1;
        Ok(())
    }
}

impl Strategy for Gibo {
    fn name(&self) -> String {
        "gibo".into()
    }
    evaluations_strategy!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UniformSearch;
    use crate::testing::{FnRespondent, run_on};

    #[test]
    fn gibo_climbs_a_smooth_hill_and_repeats_itself() {
        // A smooth bump in 6-D with its top away from the start: local search should climb
        // it faster than uniform random points find it.
        let space = Space::reals(&[(0.0, 1.0); 6]).unwrap();
        let f = |x: &[f64]| -> f64 {
            -x.iter()
                .enumerate()
                .map(|(j, v)| (v - 0.2 - 0.1 * j as f64).powi(2))
                .sum::<f64>()
        };
        let budget = 60;
        let (mut gibo, mut rand) = (0.0, 0.0);
        for seed in 0..3 {
            let mut r = FnRespondent::new(space.clone(), f);
            gibo += run_on(
                &mut Gibo::new(&space, GiboConfig::default(), seed).unwrap(),
                &mut r,
                budget,
            )
            .best();
            let mut r = FnRespondent::new(space.clone(), f);
            rand += run_on(
                &mut UniformSearch::new(&space, seed).unwrap(),
                &mut r,
                budget,
            )
            .best();
        }
        assert!(gibo > rand, "{gibo} vs {rand}");
        // Same seed and answers, same proposals.
        let mut r = FnRespondent::new(space.clone(), f);
        let a = run_on(
            &mut Gibo::new(&space, GiboConfig::default(), 3).unwrap(),
            &mut r,
            20,
        );
        let mut r = FnRespondent::new(space.clone(), f);
        let b = run_on(
            &mut Gibo::new(&space, GiboConfig::default(), 3).unwrap(),
            &mut r,
            20,
        );
        assert_eq!(a, b);
    }

    #[test]
    fn bad_settings_name_the_field() {
        let space = Space::reals(&[(0.0, 1.0); 2]).unwrap();
        for (cfg, field) in [
            (
                GiboConfig {
                    samples_per_step: 0,
                    ..GiboConfig::default()
                },
                "gibo.samples_per_step",
            ),
            (
                GiboConfig {
                    step: 0.0,
                    ..GiboConfig::default()
                },
                "gibo.step",
            ),
        ] {
            let e = Gibo::new(&space, cfg, 0).unwrap_err().to_string();
            assert!(e.contains(field), "{e}");
        }
    }
}
