//! GP-UCB (Srinivas et al. 2010; DSBO paper Eq. 1 and Alg. 4 lines 7–9) as a strategy:
//! uniform initial evaluations, then the maximizer of `μ + √β_t σ` of a [`Surrogate`]
//! (DSBO's additive GP over cliques, or one ARD kernel over every dimension), one pick per
//! evaluation query.
//!
//! **Batches** (the DSBO paper uses q = 15 in its MARL comparisons and leaves the rule
//! open; `docs/notes/dsbo.md` §8.5): kriging believer with the posterior mean as the
//! fantasy, i.e. GP-BUCB (Desautels et al. 2014). Per model update, `q` picks, each after
//! conditioning a copy of the model on the previous pick at its own posterior mean (the
//! mean stays fixed within a batch and only the variance shrinks). A batch is `q`
//! consecutive one-point queries whose points do not depend on each other's answers, so a
//! runner whose budget ends mid-batch simply stops; `q = 1` is sequential GP-UCB.

use crate::Strategy;
use crate::evaluations::{Evaluations, continuous_box, design_then_picks, evaluations_strategy};
use crate::open::OpenQuery;
use agora_acq::{AcqOptimizer, Beta, BlockAscent, BoxMaximizer, maximize_ucb};
use agora_core::{Error, Result, Space};
use agora_gp::{AdditiveGrams, ExactGp, FittedSurrogate, Surrogate};
use agora_math::rng::{Rng, derive_seed, stream};
use faer::Mat;

/// Settings of a GP-UCB run.
#[derive(Debug, Clone, PartialEq)]
pub struct GpUcbConfig {
    /// Uniform random evaluations before the first GP-UCB pick (at least 1).
    pub n_init: usize,
    /// Exploration schedule.
    pub beta: Beta,
    /// `None`: sequential GP-UCB. `Some(q)`: batches of `q` picks per model update, by
    /// kriging believer / GP-BUCB (module documentation); `Some(1)` picks exactly what
    /// sequential GP-UCB picks.
    pub batch: Option<usize>,
    /// Refit hyperparameters when this many evaluations arrived since the last fit (at
    /// least 1); in between, the model is only conditioned on the new data.
    pub refit_every: usize,
    /// UCB maximizer.
    pub acq: AcqOptimizer,
    /// Seed of the `n_init` uniform initial points (`None`: the strategy's own seed). Two
    /// runs with the same `init_seed`, dimension and `n_init` start from the same design,
    /// so methods compared within a seed differ only after it (DSS-GP-UCB sets it to its
    /// run seed, which is what GP-UCB with that seed draws).
    pub init_seed: Option<u64>,
}

impl Default for GpUcbConfig {
    /// 10 initial points, constant `β = 2`, sequential, refit every 5 evaluations,
    /// [`BlockAscent`] with its defaults.
    fn default() -> Self {
        GpUcbConfig {
            n_init: 10,
            beta: Beta::Constant(2.0),
            batch: None,
            refit_every: 5,
            acq: AcqOptimizer::BlockCoordinate(BlockAscent::default()),
            init_seed: None,
        }
    }
}

impl GpUcbConfig {
    /// Check every field; errors name it.
    pub fn validate(&self) -> Result<()> {
        if self.n_init == 0 {
            return Err(Error::invalid("n_init", "must be at least 1"));
        }
        if self.batch == Some(0) {
            return Err(Error::invalid("batch", "a batch needs at least 1 point"));
        }
        if self.refit_every == 0 {
            return Err(Error::invalid("refit_every", "must be at least 1"));
        }
        self.beta.validate()
    }
}

/// The picks of one model update: the model conditioned on the data and on the fantasies
/// of the picks made so far.
#[derive(Debug, Clone)]
struct Batch {
    gp: ExactGp,
    incumbent: Option<Vec<f64>>,
    picks: usize,
    last: Option<Vec<f64>>,
}

/// One hyperparameter fit of [`GpUcb`]: the values selected (standardized outcomes).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FitRecord {
    /// Evaluations the fit saw.
    pub n: usize,
    /// The shared lengthscale of an additive surrogate (`None` for the full kernel, whose
    /// lengthscales are per coordinate).
    pub lengthscale: Option<f64>,
    /// The noise variance.
    pub noise: f64,
    /// An additive surrogate's output scale of each group of cliques, times the number of
    /// cliques `M` (1 for every group at the paper's `1/M`), when the scales are fitted by
    /// group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_scales: Option<Vec<f64>>,
    /// Whether the fit's optimizer stopped cleanly (always for grid fits; written only
    /// when it did not).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub converged: bool,
}

fn yes() -> bool {
    true
}

fn is_yes(v: &bool) -> bool {
    *v
}

/// GP-UCB with a pluggable [`Surrogate`], deterministic in its seed.
#[derive(Debug, Clone)]
pub struct GpUcb {
    surrogate: Surrogate,
    config: GpUcbConfig,
    dim: usize,
    seed: u64,
    blocks: Vec<Vec<usize>>,
    evals: Evaluations,
    init_rng: Rng,
    fitted: Option<FittedSurrogate>,
    /// An additive surrogate's Grams (every grid lengthscale), grown by one row per
    /// evaluation instead of rebuilt at every fit and conditioning.
    grams: Option<AdditiveGrams>,
    n_at_fit: usize,
    /// Every hyperparameter fit: what was selected, on how many evaluations.
    fits: Vec<FitRecord>,
    /// GP-UCB picks so far (`t̃` of `β_t`).
    t: usize,
    batch: Option<Batch>,
    open: OpenQuery<()>,
}

impl GpUcb {
    /// GP-UCB with `surrogate` on `space` (a box of real parameters).
    ///
    /// Errors: a bad space, configuration or surrogate (naming the field).
    pub fn new(
        space: &Space,
        surrogate: Surrogate,
        config: GpUcbConfig,
        seed: u64,
    ) -> Result<GpUcb> {
        config.validate()?;
        let dim = continuous_box(space)?;
        surrogate.validate(dim)?;
        let grams = match &surrogate {
            Surrogate::Additive {
                cliques,
                kind,
                hyper,
                groups,
            } => Some(AdditiveGrams::with_groups(
                cliques,
                *kind,
                hyper,
                groups.as_ref(),
            )),
            Surrogate::FullArd(_) => None,
        };
        let init_rng = stream(config.init_seed.unwrap_or(seed), &[0]);
        Ok(GpUcb {
            grams,
            blocks: surrogate.blocks(dim),
            surrogate,
            config,
            dim,
            seed,
            evals: Evaluations::default(),
            init_rng,
            fitted: None,
            n_at_fit: 0,
            fits: Vec::new(),
            t: 0,
            batch: None,
            open: OpenQuery::default(),
        })
    }

    /// Additive GP-UCB over the given cliques (DSBO's Phase 2 with a known structure).
    ///
    /// Errors: as [`GpUcb::new`].
    pub fn additive(
        space: &Space,
        cliques: Vec<Vec<usize>>,
        config: GpUcbConfig,
        seed: u64,
    ) -> Result<GpUcb> {
        GpUcb::new(space, Surrogate::additive(cliques), config, seed)
    }

    /// The full-kernel baseline: one Matérn-5/2 ARD kernel fitted by MAP, UCB maximized by
    /// multistart L-BFGS-B (`agora_acq` defaults).
    ///
    /// Errors: as [`GpUcb::new`].
    pub fn full_kernel(space: &Space, config: GpUcbConfig, seed: u64) -> Result<GpUcb> {
        let dim = continuous_box(space)?;
        let config = GpUcbConfig {
            acq: AcqOptimizer::Lbfgsb(BoxMaximizer::default()),
            ..config
        };
        GpUcb::new(space, Surrogate::full_ard(dim), config, seed)
    }

    /// The model.
    pub fn surrogate(&self) -> &Surrogate {
        &self.surrogate
    }

    /// The settings.
    pub fn config(&self) -> &GpUcbConfig {
        &self.config
    }

    /// Every hyperparameter fit so far, in order.
    pub fn fits(&self) -> &[FitRecord] {
        &self.fits
    }

    /// The next pick of the current batch, starting a new batch (refit when due,
    /// condition on every evaluation) when the last one is complete.
    fn pick(&mut self) -> Result<Vec<f64>> {
        let q = self.config.batch.unwrap_or(1);
        let mut batch = match self.batch.take() {
            Some(mut b) if b.picks < q => {
                if let Some(last) = b.last.take() {
                    let um = Mat::from_fn(1, last.len(), |_, j| last[j]);
                    let (mu, _) = b.gp.predict(um.as_ref())?;
                    // `predict` is in the units of the standardized data the GP holds.
                    b.gp = b.gp.condition(um.as_ref(), &mu)?;
                }
                b
            }
            _ => self.start_batch()?,
        };
        let Some(model) = self.fitted.as_ref() else {
            return Err(Error::State("no fitted model".into()));
        };
        self.t += 1;
        let beta = self.config.beta.at(self.t, self.dim);
        let u = maximize_ucb(
            &batch.gp,
            model.additive(),
            beta,
            &self.blocks,
            batch.incumbent.as_deref(),
            &self.config.acq,
            derive_seed(self.seed, &[2, self.t as u64]),
        )?;
        batch.picks += 1;
        batch.last = Some(u.clone());
        self.batch = Some(batch);
        Ok(u)
    }

    fn start_batch(&mut self) -> Result<Batch> {
        let n = self.evals.len();
        let x = self.evals.x_mat(self.dim);
        let stale = self.fitted.is_none() || n - self.n_at_fit >= self.config.refit_every;
        if let Some(g) = self.grams.as_mut() {
            g.update(&x)?;
        }
        if stale {
            let fs = derive_seed(self.seed, &[1, n as u64]);
            let fitted = FittedSurrogate::fit_kept(
                &self.surrogate,
                &x,
                &self.evals.ys,
                self.fitted.as_ref(),
                fs,
                self.grams.as_ref(),
            )?;
            let group_scales = match &self.surrogate {
                Surrogate::Additive {
                    groups: Some(g), ..
                } => fitted.additive().map(|a| {
                    let mut out = vec![0.0; g.len()];
                    for (&c, s) in g.of_clique().iter().zip(&a.scales) {
                        out[c] = s * a.scales.len() as f64;
                    }
                    out
                }),
                _ => None,
            };
            self.fits.push(FitRecord {
                n,
                lengthscale: fitted.additive().map(|a| a.lengthscale),
                noise: fitted.noise(),
                group_scales,
                converged: fitted.converged(),
            });
            self.fitted = Some(fitted);
            self.n_at_fit = n;
        }
        let Some(model) = self.fitted.as_ref() else {
            return Err(Error::State("no fitted model".into()));
        };
        Ok(Batch {
            gp: model.condition_kept(x, &self.evals.ys, self.grams.as_ref())?,
            incumbent: self.evals.best_unit(),
            picks: 0,
            last: None,
        })
    }
}

design_then_picks!(GpUcb);

impl Strategy for GpUcb {
    fn name(&self) -> String {
        match self.surrogate {
            Surrogate::Additive { .. } => "gp-ucb-additive".into(),
            Surrogate::FullArd(_) => "gp-ucb-full".into(),
        }
    }
    evaluations_strategy!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{additive_problem, run};

    #[test]
    fn a_batch_of_one_equals_sequential_gp_ucb() {
        let f = additive_problem(6, 0.3, 1);
        let space = Space::reals(&f.bounds()).unwrap();
        let small = GpUcbConfig {
            n_init: 5,
            refit_every: 3,
            acq: AcqOptimizer::BlockCoordinate(BlockAscent {
                raw_samples: 128,
                ..BlockAscent::default()
            }),
            ..GpUcbConfig::default()
        };
        let one = GpUcbConfig {
            batch: Some(1),
            ..small.clone()
        };
        type Make = fn(&Space, Vec<Vec<usize>>, GpUcbConfig) -> GpUcb;
        let makers: [Make; 2] = [
            |s, c, cfg| GpUcb::additive(s, c, cfg, 7).unwrap(),
            |s, _, cfg| GpUcb::full_kernel(s, cfg, 7).unwrap(),
        ];
        for make in makers {
            let mut seq = make(&space, f.cliques().to_vec(), small.clone());
            let mut batch = make(&space, f.cliques().to_vec(), one.clone());
            let a = run(&mut seq, &f, 14);
            let b = run(&mut batch, &f, 14);
            assert_eq!(a.ys.len(), 14);
            assert_eq!(a, b, "{}", seq.name());
        }
    }

    #[test]
    fn batches_are_distinct_points_and_respect_the_budget() {
        let f = additive_problem(6, 0.3, 2);
        let space = Space::reals(&f.bounds()).unwrap();
        let mut m = GpUcb::additive(
            &space,
            f.cliques().to_vec(),
            GpUcbConfig {
                n_init: 5,
                batch: Some(4),
                ..GpUcbConfig::default()
            },
            3,
        )
        .unwrap();
        // 5 initial points, then batches of 4, 4 and a last one cut to 2.
        let tr = run(&mut m, &f, 15);
        assert_eq!(tr.ys.len(), 15);
        for batch in [5..9, 9..13, 13..15] {
            let pts = &tr.xs[batch];
            for i in 0..pts.len() {
                for j in 0..i {
                    let dist: f64 = pts[i].iter().zip(&pts[j]).map(|(a, b)| (a - b).abs()).sum();
                    assert!(dist > 1e-3, "repeated point in a batch");
                }
            }
        }
        for w in tr.best_so_far().windows(2) {
            assert!(w[1] >= w[0]);
        }
    }

    #[test]
    fn kept_grams_give_the_same_proposals_as_fresh_ones() {
        // The slow path builds every Gram afresh at each fit and conditioning; the kept
        // Grams must change nothing, sequentially and in batches (refits every 3 and 5).
        let f = additive_problem(6, 0.3, 4);
        let space = Space::reals(&f.bounds()).unwrap();
        for (batch, refit_every) in [(None, 3), (Some(3), 5)] {
            let cfg = GpUcbConfig {
                n_init: 5,
                batch,
                refit_every,
                acq: AcqOptimizer::BlockCoordinate(BlockAscent {
                    raw_samples: 128,
                    ..BlockAscent::default()
                }),
                ..GpUcbConfig::default()
            };
            let mut kept = GpUcb::additive(&space, f.cliques().to_vec(), cfg.clone(), 11).unwrap();
            let mut fresh = GpUcb::additive(&space, f.cliques().to_vec(), cfg, 11).unwrap();
            fresh.grams = None;
            let a = run(&mut kept, &f, 24);
            let b = run(&mut fresh, &f, 24);
            assert_eq!(a.ys.len(), 24);
            assert_eq!(a, b, "batch {batch:?}");
            assert_eq!(kept.grams.as_ref().map(AdditiveGrams::len), Some(24 - 1));
        }
    }
}
