//! REINFORCE with a baseline (Williams 1992) on the HOM policy of a [`DsboTask`]: the RL
//! reference that DSBO's malformed-reward study contrasts with BO (App. B.3).
//!
//! - **Policy.** The deterministic HOM mean `μ_θ(s)` plus Gaussian exploration noise,
//!   `a = μ_θ(s) + σ ε` with `ε ~ N(0, I)` per agent and action component (the environment
//!   clips to `[−1, 1]`).
//! - **Score function.** `∇_θ log π(a | s) = J_μ(s)ᵀ (a − μ) / σ²`, with `J_μ` the exact
//!   Jacobian of the hard HOM mean (reverse mode, [`HomPolicy::action_gradient`]). The role
//!   assignment and the `Λ > 0` edges are piecewise constant in θ, so the role-affinity and
//!   edge parameters get zero gradient almost everywhere: REINFORCE on the HOM adapts only the
//!   message and update networks (and all of the CTDE MLP), one reason black-box search suits
//!   the HOM.
//! - **Returns and baseline.** Trained on the per-step rewards the task's schedule delivers
//!   (the Sparse-S flush arrives with the last step), so sparse and delayed rewards blur or
//!   shift the credit: `G_t = Σ_{t' ≥ t} γ^{t'−t} r̃_{t'}`, advantage `G_t − b_t` with a
//!   per-step running-mean baseline `b_t ← b_t + β (G_t − b_t)` (the first episode only
//!   initialises it).
//! - **Update.** Adam ascent on `Σ_t (G_t − b_t) ∇ log π(a_t | s_t)` averaged over a batch of
//!   episodes (θ is fixed within a batch), projected onto the task's box `[−1, 1]^D`.
//! - **Episodes** start from the task's evaluation seeds in turn (the same initial states its
//!   `v(θ)` uses), with exploration noise from `stream(seed, [episode])`.

use agora_core::{Error, Result};
use agora_math::rng;
use rand_distr::{Distribution, StandardNormal};

use crate::dsbo_env::{DsboTask, run_episode};
use crate::hom::HomPolicy;

/// Settings of [`reinforce`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReinforceConfig {
    /// Training episodes (≥ 1).
    pub episodes: usize,
    /// Episodes per update (≥ 1): their score-function gradients are averaged.
    pub batch: usize,
    /// Adam step size (> 0).
    pub learning_rate: f64,
    /// Exploration noise σ (> 0).
    pub noise_std: f64,
    /// Discount γ in `[0, 1]`.
    pub discount: f64,
    /// Baseline rate β in `(0, 1]`.
    pub baseline_rate: f64,
    /// Seed of the exploration noise.
    pub seed: u64,
}

impl Default for ReinforceConfig {
    /// 300 episodes in batches of 10, step 0.02, σ = 0.3, γ = 0.9, β = 0.1, seed 0 (tuned on
    /// PredPrey 3 with distance shaping: single-episode updates and γ = 0.99 were too noisy).
    fn default() -> Self {
        ReinforceConfig {
            episodes: 300,
            batch: 10,
            learning_rate: 0.02,
            noise_std: 0.3,
            discount: 0.9,
            baseline_rate: 0.1,
            seed: 0,
        }
    }
}

impl ReinforceConfig {
    fn check(&self) -> Result<()> {
        if self.episodes == 0 {
            return Err(Error::invalid("episodes", "must be at least 1"));
        }
        if self.batch == 0 {
            return Err(Error::invalid("batch", "must be at least 1"));
        }
        for (name, v, ok) in [
            (
                "learning_rate",
                self.learning_rate,
                self.learning_rate > 0.0,
            ),
            ("noise_std", self.noise_std, self.noise_std > 0.0),
            (
                "discount",
                self.discount,
                (0.0..=1.0).contains(&self.discount),
            ),
            (
                "baseline_rate",
                self.baseline_rate,
                self.baseline_rate > 0.0 && self.baseline_rate <= 1.0,
            ),
        ] {
            if !(v.is_finite() && ok) {
                return Err(Error::invalid(name, format!("out of range: {v}")));
            }
        }
        Ok(())
    }
}

/// What [`reinforce`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ReinforceTrace {
    /// Per training episode: the episodic sum of delivered rewards (what BO's `v` measures for
    /// that rollout, exploration noise included).
    pub delivered_returns: Vec<f64>,
    /// Per training episode: the true (unscheduled) return.
    pub true_returns: Vec<f64>,
    /// Running maximum of `delivered_returns` (the "best policy found so far" view, App. K).
    pub best_so_far: Vec<f64>,
    /// θ after the last update.
    pub theta: Vec<f64>,
}

/// Adam (Kingma & Ba 2015) moving parameters *up* its gradient argument (β₁ = 0.9,
/// β₂ = 0.999, ε = 1e-8); the learners of this crate share it.
pub(crate) struct Adam {
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
}

impl Adam {
    /// Fresh moments for `len` parameters.
    pub(crate) fn new(len: usize) -> Adam {
        Adam {
            m: vec![0.0; len],
            v: vec![0.0; len],
            t: 0,
        }
    }

    /// One ascent step of `x` along `grad` with step size `lr`.
    pub(crate) fn ascend(&mut self, x: &mut [f64], grad: &[f64], lr: f64) {
        const B1: f64 = 0.9;
        const B2: f64 = 0.999;
        self.t += 1;
        let (c1, c2) = (1.0 - B1.powi(self.t), 1.0 - B2.powi(self.t));
        for k in 0..x.len() {
            self.m[k] = B1 * self.m[k] + (1.0 - B1) * grad[k];
            self.v[k] = B2 * self.v[k] + (1.0 - B2) * grad[k] * grad[k];
            x[k] += lr * (self.m[k] / c1) / ((self.v[k] / c2).sqrt() + 1e-8);
        }
    }
}

/// Train the task's HOM from `theta0` by REINFORCE with a baseline.
///
/// Errors: `theta0` of the wrong length or non-finite, an invalid [`ReinforceConfig`] (named
/// field), or an invalid task.
pub fn reinforce(
    task: &DsboTask,
    theta0: &[f64],
    config: &ReinforceConfig,
) -> Result<ReinforceTrace> {
    config.check()?;
    let policy: HomPolicy = task.policy()?;
    let d = policy.num_params();
    if theta0.len() != d {
        return Err(Error::dim("theta0", d, theta0.len()));
    }
    agora_core::check_finite_slice("theta0", theta0)?;
    let mut theta = theta0.to_vec();
    let mut env = task.make_env()?;
    let sigma = config.noise_std;
    let mut adam = Adam::new(d);
    let mut baseline: Option<Vec<f64>> = None;
    let mut grad = vec![0.0; d];
    let mut in_batch = 0;
    let mut trace = ReinforceTrace {
        delivered_returns: Vec::with_capacity(config.episodes),
        true_returns: Vec::with_capacity(config.episodes),
        best_so_far: Vec::with_capacity(config.episodes),
        theta: vec![],
    };
    for k in 0..config.episodes {
        let mut noise = rng::stream(config.seed, &[k as u64]);
        let mut means: Vec<Vec<Vec<f64>>> = Vec::new();
        let mut taken: Vec<Vec<Vec<f64>>> = Vec::new();
        let seed = task.episode_seed(k % task.episodes());
        let rec = run_episode(env.as_mut(), seed, task.schedule(), |s| {
            let mu = policy.act(&theta, s)?;
            let a: Vec<Vec<f64>> = mu
                .iter()
                .map(|m| {
                    m.iter()
                        .map(|&x| {
                            let z: f64 = StandardNormal.sample(&mut noise);
                            x + sigma * z
                        })
                        .collect()
                })
                .collect();
            means.push(mu);
            taken.push(a.clone());
            Ok(a)
        })?;
        let horizon = rec.delivered.len();
        let mut g = vec![0.0; horizon];
        let mut acc = 0.0;
        for t in (0..horizon).rev() {
            acc = rec.delivered[t] + config.discount * acc;
            g[t] = acc;
        }
        let delivered = rec.delivered_return();
        trace.delivered_returns.push(delivered);
        trace.true_returns.push(rec.true_return());
        let best = trace
            .best_so_far
            .last()
            .map_or(delivered, |&b: &f64| b.max(delivered));
        trace.best_so_far.push(best);
        let Some(b) = baseline.as_mut() else {
            baseline = Some(g);
            continue;
        };
        for t in 0..horizon {
            let adv = g[t] - b[t];
            b[t] += config.baseline_rate * (g[t] - b[t]);
            if adv == 0.0 {
                continue;
            }
            let w: Vec<f64> = taken[t]
                .iter()
                .flatten()
                .zip(means[t].iter().flatten())
                .map(|(a, m)| adv * (a - m) / (sigma * sigma))
                .collect();
            let gt = policy.action_gradient(&theta, &rec.states[t], &w, None)?;
            grad.iter_mut().zip(&gt).for_each(|(x, y)| *x += y);
        }
        in_batch += 1;
        if in_batch == config.batch || k + 1 == config.episodes {
            grad.iter_mut().for_each(|x| *x /= in_batch as f64);
            adam.ascend(&mut theta, &grad, config.learning_rate);
            for x in &mut theta {
                *x = x.clamp(-1.0, 1.0);
            }
            grad.iter_mut().for_each(|x| *x = 0.0);
            in_batch = 0;
        }
    }
    trace.theta = theta;
    Ok(trace)
}
