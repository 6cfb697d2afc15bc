//! The GP model of a GP-UCB run (DSBO paper, Eq. 1): DSBO's additive kernel over cliques
//! ([`crate::additive`]) or one ARD kernel over every dimension, fitted and then
//! conditioned on the data.

use crate::additive::{AdditiveFit, AdditiveGrams, AdditiveHyper, AdditiveSpec, ScaleGroups};
use crate::{ExactGp, GpConfig, Hyper, Kernel, StationaryKind};
use agora_core::{Error, Result};
use agora_math::rng::stream;
use faer::Mat;

/// Which GP a GP-UCB run uses.
#[derive(Debug, Clone, PartialEq)]
pub enum Surrogate {
    /// `k = Σ_c (1/M) κ(θ_c)` over the given cliques (DSBO's Phase-2 kernel).
    Additive {
        /// The cliques (indices into the dimensions; every dimension should be in one).
        cliques: Vec<Vec<usize>>,
        /// Radial profile (Matérn-5/2 in the paper).
        kind: StationaryKind,
        /// How hyperparameters are set.
        hyper: AdditiveHyper,
        /// Output scales fitted by these groups of cliques; `None`: every clique at `1/M`
        /// (the paper).
        groups: Option<ScaleGroups>,
    },
    /// One ARD kernel over all dimensions, fitted by MAP with [`ExactGp::fit`].
    FullArd(GpConfig),
}

impl Surrogate {
    /// DSBO's additive Matérn-5/2 model over `cliques` with the default grid.
    pub fn additive(cliques: Vec<Vec<usize>>) -> Surrogate {
        Surrogate::Additive {
            cliques,
            kind: StationaryKind::Matern52,
            hyper: AdditiveHyper::default(),
            groups: None,
        }
    }

    /// One Matérn-5/2 ARD kernel over `dim` inputs, with BoTorch's dimension-scaled
    /// lengthscale prior ([`GpConfig::botorch`]).
    pub fn full_ard(dim: usize) -> Surrogate {
        Surrogate::FullArd(GpConfig {
            kernel: StationaryKind::Matern52,
            ..GpConfig::botorch(dim)
        })
    }

    /// Check the model for `dim` inputs; errors name `cliques[i]`, `hyper.*` or the GP
    /// configuration's field.
    pub fn validate(&self, dim: usize) -> Result<()> {
        match self {
            Surrogate::Additive {
                cliques,
                hyper,
                groups,
                ..
            } => {
                if cliques.is_empty() {
                    return Err(Error::invalid("cliques", "needs at least one clique"));
                }
                for (i, c) in cliques.iter().enumerate() {
                    if c.is_empty() || c.iter().any(|&j| j >= dim) {
                        return Err(Error::invalid(
                            format!("cliques[{i}]"),
                            format!("must be a non-empty set of indices in 0..{dim}"),
                        ));
                    }
                }
                if let Some(g) = groups {
                    g.validate(cliques.len())?;
                }
                hyper.validate()
            }
            Surrogate::FullArd(cfg) => cfg.validate(),
        }
    }

    /// The coordinate blocks the kernel decomposes into: the cliques, or single
    /// coordinates for a full kernel.
    pub fn blocks(&self, dim: usize) -> Vec<Vec<usize>> {
        match self {
            Surrogate::Additive { cliques, .. } => cliques.clone(),
            Surrogate::FullArd(_) => (0..dim).map(|j| vec![j]).collect(),
        }
    }
}

/// Fitted hyperparameters of a [`Surrogate`] and the outcome standardization they refer to.
#[derive(Debug, Clone)]
pub struct FittedSurrogate {
    kernel: Box<dyn Kernel>,
    noise: f64,
    mean: f64,
    shift: f64,
    scale: f64,
    additive: Option<AdditiveSpec>,
    converged: bool,
}

impl FittedSurrogate {
    /// Fit `surrogate` to `(x, y)` (the additive grid by marginal likelihood, the full
    /// kernel by MAP warm-started from `warm`, seeded by `seed`); when the fit fails, keep
    /// `warm` if there is one.
    ///
    /// Errors: the fit fails and there is no `warm`.
    pub fn fit(
        surrogate: &Surrogate,
        x: &Mat<f64>,
        y: &[f64],
        warm: Option<&FittedSurrogate>,
        seed: u64,
    ) -> Result<FittedSurrogate> {
        FittedSurrogate::fit_kept(surrogate, x, y, warm, seed, None)
    }

    /// [`FittedSurrogate::fit`], with an additive surrogate's Grams taken from `grams` when
    /// it holds exactly `x` (kept up to date by the caller: [`AdditiveGrams::update`]); the
    /// same fit, without building a Gram.
    pub fn fit_kept(
        surrogate: &Surrogate,
        x: &Mat<f64>,
        y: &[f64],
        warm: Option<&FittedSurrogate>,
        seed: u64,
        grams: Option<&AdditiveGrams>,
    ) -> Result<FittedSurrogate> {
        let fitted = match surrogate {
            Surrogate::Additive {
                cliques,
                kind,
                hyper,
                groups,
            } => match grams.filter(|g| g.is_for(cliques, *kind, groups.as_ref()) && g.holds(x)) {
                Some(g) => AdditiveFit::fit_grams(g, hyper, y),
                None => AdditiveFit::fit_with(cliques, *kind, hyper, groups.as_ref(), x, y),
            }
            .map(|f| FittedSurrogate {
                kernel: Box::new(f.spec.kernel()),
                noise: f.noise,
                mean: 0.0,
                shift: f.shift,
                scale: f.scale,
                additive: Some(f.spec),
                converged: f.converged,
            }),
            Surrogate::FullArd(cfg) => {
                let warm_h = warm.map(|f| Hyper {
                    kernel: f.kernel.params(),
                    noise: f.noise,
                    mean: f.mean,
                });
                ExactGp::fit_from(x.clone(), y, cfg, warm_h.as_ref(), &mut stream(seed, &[])).map(
                    |(gp, _)| {
                        let (shift, scale) = gp.standardization();
                        let h = gp.hyper();
                        FittedSurrogate {
                            kernel: gp.kernel().box_clone(),
                            noise: h.noise,
                            mean: h.mean,
                            shift,
                            scale,
                            additive: None,
                            converged: true,
                        }
                    },
                )
            }
        };
        match (fitted, warm) {
            (Ok(f), _) => Ok(f),
            (Err(_), Some(w)) => Ok(w.clone()),
            (Err(e), None) => Err(e),
        }
    }

    /// The GP with these hyperparameters on `(x, y)`. It holds the standardized outcomes,
    /// so its predictions are in standardized units.
    pub fn condition(&self, x: Mat<f64>, y: &[f64]) -> Result<ExactGp> {
        let ys: Vec<f64> = y.iter().map(|v| (v - self.shift) / self.scale).collect();
        ExactGp::new(x, &ys, self.kernel.clone(), self.noise, self.mean)
    }

    /// [`FittedSurrogate::condition`], with the Gram taken from `grams` when it holds
    /// exactly `x` at this fit's lengthscale (an additive surrogate); the same GP, bit for
    /// bit, without building the Gram.
    pub fn condition_kept(
        &self,
        x: Mat<f64>,
        y: &[f64],
        grams: Option<&AdditiveGrams>,
    ) -> Result<ExactGp> {
        let gram = match (&self.additive, grams) {
            (Some(spec), Some(g)) if g.holds(&x) => g.gram_for(spec),
            _ => None,
        };
        match gram {
            Some(gram) => {
                let ys: Vec<f64> = y.iter().map(|v| (v - self.shift) / self.scale).collect();
                ExactGp::with_gram(x, &ys, self.kernel.clone(), self.noise, self.mean, gram)
            }
            None => self.condition(x, y),
        }
    }

    /// The additive kernel's parameters, for an additive surrogate.
    pub fn additive(&self) -> Option<&AdditiveSpec> {
        self.additive.as_ref()
    }

    /// The noise variance (standardized outcomes).
    pub fn noise(&self) -> f64 {
        self.noise
    }

    /// Whether the fit's optimizer stopped cleanly (an additive fit with output scales by
    /// group; grid fits always do). The full kernel's MAP fit reports through its own log.
    pub fn converged(&self) -> bool {
        self.converged
    }
}
