//! GP-BO on evaluations supplied from outside.

use super::unit_point::{require_box, unit_point};
use crate::gp_step::GpStep;
use crate::{GpBoConfig, History, StandardAcq};
use agora_core::{Error, Point, Result, Space, check_finite};
use agora_math::rng::stream;

/// GP-based Bayesian optimization on externally supplied evaluations: what an Optuna
/// sampler backed by agora calls with the study's completed trials.
///
/// The model step is [`crate::GpBo`]'s, shared code and not a copy: an Optuna-style
/// Matérn-5/2 GP ([`agora_gp::GpConfig::optuna`], as [`GpBoConfig::new`] sets it) fitted
/// by MAP, warm-started from the previous suggestion's fit, and the acquisition maximized
/// from Sobol raw samples plus the best observed point, with integer and categorical
/// parameters scored at snapped points and searched exhaustively
/// ([`crate::discrete::maximize_on_box`]). Driven in step with a `GpBo` (told what it
/// evaluated, asked when it asks a model point), it suggests exactly `GpBo`'s points.
///
/// Values follow agora's convention: **larger is better** (negate to minimize). Points are
/// unit-cube coordinates of the space ([`Space::from_user`] maps user values there).
///
/// Determinism: every random stream is derived from the seed and the number of
/// observations, as in `GpBo`; the previous suggestion's hyperparameters are one more start
/// of the next fit. The same seed and the same calls in the same order give the same
/// suggestions; after [`GpSuggester::reset`] the suggester is as new.
///
/// Before any observation, [`GpSuggester::suggest`] returns a uniformly random canonical
/// point (a sampler normally runs its own start-up trials, Optuna's `n_startup_trials`).
///
/// # Example
///
/// ```
/// use agora_core::Space;
/// use agora_methods::{GpSuggester, StandardAcq};
///
/// let space = Space::reals(&[(-1.0, 1.0), (-1.0, 1.0)])?;
/// let mut s = GpSuggester::new(space.clone(), StandardAcq::LogEi, 7)?;
/// // Trials evaluated elsewhere (any points, any order): maximize -(x² + y²).
/// for u in [[0.1, 0.9], [0.8, 0.3], [0.45, 0.6], [0.7, 0.7], [0.3, 0.2]] {
///     let x = space.to_user_reals(&u)?;
///     s.observe(&u, -(x[0] * x[0] + x[1] * x[1]))?;
/// }
/// let next = s.suggest()?;
/// assert!(next.iter().all(|v| (0.0..=1.0).contains(v)));
/// // The same seed and the same observations give the same suggestion.
/// let mut again = GpSuggester::new(space, StandardAcq::LogEi, 7)?;
/// for u in [[0.1, 0.9], [0.8, 0.3], [0.45, 0.6], [0.7, 0.7], [0.3, 0.2]] {
///     let x = again.space().to_user_reals(&u)?;
///     again.observe(&u, -(x[0] * x[0] + x[1] * x[1]))?;
/// }
/// assert_eq!(again.suggest()?, next);
/// # Ok::<(), agora_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct GpSuggester {
    h: History,
    step: GpStep,
}

impl GpSuggester {
    /// A suggester over the box `space` with acquisition `acq` (LogEI is the usual
    /// choice) and the settings of [`GpBoConfig::new`].
    ///
    /// Errors: an invalid or non-box space (`space`, `params[i]...`); UCB with a β that is
    /// not finite and >= 0 (`beta`).
    pub fn new(space: Space, acq: StandardAcq, seed: u64) -> Result<GpSuggester> {
        let cfg = GpBoConfig::new(acq, space.dim());
        GpSuggester::with_config(space, cfg, seed)
    }

    /// The same with every setting given (`cfg.n_init` is not used: the caller decides
    /// when to start asking).
    pub fn with_config(space: Space, cfg: GpBoConfig, seed: u64) -> Result<GpSuggester> {
        require_box(&space)?;
        Ok(GpSuggester {
            step: GpStep::new(cfg, seed)?,
            h: History::new(space)?,
        })
    }

    /// The space searched.
    pub fn space(&self) -> &Space {
        &self.h.space
    }

    /// Record an evaluation: `unit_x`, a unit-cube point of the space, had value `y`
    /// (larger is better). Integer and categorical coordinates are snapped to the value
    /// they decode to; continuous ones are kept as given.
    ///
    /// Errors (nothing is recorded): `x` of the wrong length, `x[j]` not a finite number in
    /// `[0, 1]`, `y` not finite.
    pub fn observe(&mut self, unit_x: &[f64], y: f64) -> Result<()> {
        let x = unit_point(&self.h.space, "x", unit_x)?;
        check_finite("y", y)?;
        self.h.x.push(x);
        self.h.y.push(y);
        Ok(())
    }

    /// Record several evaluations in order, all or none.
    ///
    /// Errors (nothing is recorded): `ys` not as long as `xs`; `xs[i]`, `xs[i][j]` or `ys[i]`
    /// as in [`GpSuggester::observe`].
    pub fn observe_many(&mut self, xs: &[Vec<f64>], ys: &[f64]) -> Result<()> {
        if ys.len() != xs.len() {
            return Err(Error::dim("ys", xs.len(), ys.len()));
        }
        let mut points = Vec::with_capacity(xs.len());
        for (i, (x, y)) in xs.iter().zip(ys).enumerate() {
            points.push(unit_point(&self.h.space, &format!("xs[{i}]"), x)?);
            check_finite(&format!("ys[{i}]"), *y)?;
        }
        self.h.x.extend(points);
        self.h.y.extend_from_slice(ys);
        Ok(())
    }

    /// Forget every observation and the last fit: the suggester is as new.
    pub fn reset(&mut self) {
        self.h.x.clear();
        self.h.y.clear();
        self.step.forget_fit();
    }

    /// Number of evaluations recorded.
    pub fn n_observed(&self) -> usize {
        self.h.len()
    }

    /// The next point to evaluate: a canonical unit-cube point (integers at their slice
    /// centre, categoricals one-hot) maximizing the acquisition of the GP fitted to the
    /// observations; a uniformly random canonical point before any observation.
    ///
    /// Errors: a numerical failure of the fit or the maximizer that survived every
    /// safeguard.
    pub fn suggest(&mut self) -> Result<Vec<f64>> {
        let p = if self.h.is_empty() {
            let mut rng = stream(self.step.seed, &[0, 0]);
            Point::Unit(crate::random_option(&self.h.space, &mut rng))
        } else {
            self.step.next_point(&self.h)?
        };
        match p {
            Point::Unit(u) => self.h.space.canonicalize(&u),
            Point::Index(_) => Err(Error::State(
                "a box space proposed a candidate index".into(),
            )),
        }
    }

    /// Posterior mean and standard deviation of the objective at unit-cube points, from a
    /// GP fitted afresh to the observations (warm-started like the next suggestion's fit, on
    /// a stream of its own: reading the belief never changes a suggestion).
    ///
    /// Errors: no observation yet; `points[i]` of the wrong length or not finite.
    pub fn belief(&self, unit_points: &[Vec<f64>]) -> Result<Vec<(f64, f64)>> {
        self.step
            .belief(&self.h, unit_points)?
            .ok_or_else(|| Error::State("no observation yet: call observe first".into()))
    }
}
