//! GP-BO's model step, shared by [`crate::GpBo`] (on its own evaluations) and
//! [`crate::suggest::GpSuggester`] (on evaluations supplied from outside): fit an exact GP
//! to the history, warm-started from the previous fit, and maximize the configured
//! acquisition over the space (LogEI / EI / PI / UCB analytically, Thompson sampling by
//! random Fourier features on boxes and exact draws on finite sets).
//!
//! Every random stream is derived from the seed and the number of evaluations, so the same
//! history (and the same previous fit) gives the same point.

use crate::History;
use crate::discrete::maximize_on_box;
use crate::standard::{GpBoConfig, StandardAcq};
use agora_acq::analytic::{Analytic, AnalyticKind};
use agora_acq::thompson::{RffSample, sample_argmax_finite};
use agora_acq::{Acquisition, maximize_finite};
use agora_core::{Error, Point, Result, Space};
use agora_gp::{ExactGp, Hyper};
use agora_math::rng::{derive_seed, stream};
use faer::Mat;

/// Stream tags under the seed and the number of evaluations.
const TAG_MAXIMIZE: u64 = 1;
const TAG_FIT: u64 = 2;
const TAG_THOMPSON: u64 = 3;
const TAG_BELIEF: u64 = 4;

/// The model step's settings, seed and the hyperparameters of its last fit.
#[derive(Debug, Clone)]
pub(crate) struct GpStep {
    /// The settings (`n_init` is the caller's business).
    pub cfg: GpBoConfig,
    /// The seed every stream derives from.
    pub seed: u64,
    last_hyper: Option<Hyper>,
}

impl GpStep {
    /// A model step with validated settings (the GP config; UCB's β finite and >= 0).
    pub fn new(cfg: GpBoConfig, seed: u64) -> Result<GpStep> {
        cfg.gp.validate()?;
        if let StandardAcq::Ucb { beta } = cfg.acq
            && !(beta.is_finite() && beta >= 0.0)
        {
            return Err(Error::invalid(
                "beta",
                format!("must be a finite number >= 0, got {beta}"),
            ));
        }
        Ok(GpStep {
            cfg,
            seed,
            last_hyper: None,
        })
    }

    /// Forget the last fit (the next one starts cold).
    pub fn forget_fit(&mut self) {
        self.last_hyper = None;
    }

    /// A GP fitted to `h` on the stream `tag` (None before any data).
    fn fit_on(&self, h: &History, tag: u64) -> Result<Option<ExactGp>> {
        if h.is_empty() {
            return Ok(None);
        }
        let d = h.space.dim();
        let x = Mat::from_fn(h.len(), d, |i, j| h.x[i][j]);
        let mut rng = stream(self.seed, &[h.len() as u64, tag]);
        let warm = if self.cfg.warm_start {
            self.last_hyper.as_ref()
        } else {
            None
        };
        let (gp, _) = ExactGp::fit_from(x, &h.y, &self.cfg.gp, warm, &mut rng)?;
        Ok(Some(gp))
    }

    /// The GP fitted to `h` (None before any data); its hyperparameters warm-start the next
    /// fit.
    pub fn fit(&mut self, h: &History) -> Result<Option<ExactGp>> {
        let gp = self.fit_on(h, TAG_FIT)?;
        if let Some(gp) = &gp {
            self.last_hyper = Some(gp.hyper());
        }
        Ok(gp)
    }

    /// Posterior mean and standard deviation at unit-cube `points` of a GP fitted afresh to
    /// `h` (warm-started like the next fit, on a stream of its own: reading the belief
    /// never changes a proposal). None before any data.
    pub fn belief(&self, h: &History, points: &[Vec<f64>]) -> Result<Option<Vec<(f64, f64)>>> {
        let Some(gp) = self.fit_on(h, TAG_BELIEF)? else {
            return Ok(None);
        };
        let xs = agora_gp::rows_to_mat("points", points, h.space.dim())?;
        let (m, v) = gp.predict(xs.as_ref())?;
        Ok(Some(
            m.into_iter().zip(v).map(|(m, v)| (m, v.sqrt())).collect(),
        ))
    }

    /// The point maximizing the acquisition of a GP fitted to `h` (which must hold data):
    /// on a finite set the best unevaluated candidate (any, once all were evaluated); on a
    /// box the acquisition's maximizer from Sobol raw samples plus the best observed point
    /// as one more start (as in Optuna's `GPSampler`), preconditioned by the lengthscales,
    /// with integer and categorical parameters snapped ([`maximize_on_box`]).
    pub fn next_point(&mut self, h: &History) -> Result<Point> {
        let it = h.len() as u64;
        let Some(gp) = self.fit(h)? else {
            return Err(Error::State("no data to fit".into()));
        };
        let best_f = h.y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let kind = match self.cfg.acq {
            StandardAcq::LogEi => Some(AnalyticKind::LogEi { best_f }),
            StandardAcq::Ei => Some(AnalyticKind::Ei { best_f }),
            StandardAcq::Pi => Some(AnalyticKind::Pi { best_f }),
            StandardAcq::Ucb { beta } => Some(AnalyticKind::Ucb { beta }),
            StandardAcq::Thompson => None,
        };
        let max_seed = derive_seed(self.seed, &[it, TAG_MAXIMIZE]);
        let mut ts_rng = stream(self.seed, &[it, TAG_THOMPSON]);
        match &h.space {
            Space::Candidates { features, .. } => {
                let cands = Mat::from_fn(features.len(), h.space.dim(), |i, j| features[i][j]);
                let mut exclude = vec![false; features.len()];
                for &i in &h.index {
                    exclude[i] = true;
                }
                if exclude.iter().all(|e| *e) {
                    exclude.iter_mut().for_each(|e| *e = false);
                }
                let i = match kind {
                    Some(kind) => {
                        maximize_finite(&Analytic { model: &gp, kind }, cands.as_ref(), &exclude)?.0
                    }
                    None => sample_argmax_finite(&gp, cands.as_ref(), &exclude, &mut ts_rng)?,
                };
                Ok(Point::Index(i))
            }
            Space::Box { .. } => {
                let acq: Box<dyn Acquisition + '_> = match kind {
                    Some(kind) => Box::new(Analytic { model: &gp, kind }),
                    None => Box::new(RffSample::draw(&gp, self.cfg.rff_features, &mut ts_rng)?),
                };
                let extra: Vec<Vec<f64>> =
                    h.y.iter()
                        .enumerate()
                        .max_by(|a, b| a.1.total_cmp(b.1))
                        .map(|(i, _)| h.x[i].clone())
                        .into_iter()
                        .collect();
                let scales = gp.kernel().spectral(gp.dim()).map(|sp| sp.lengthscales);
                let x = maximize_on_box(
                    acq.as_ref(),
                    &h.space,
                    &self.cfg.maximizer,
                    &extra,
                    scales.as_deref(),
                    max_seed,
                )?;
                Ok(Point::Unit(x))
            }
        }
    }
}
