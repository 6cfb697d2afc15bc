//! GP-BO's model step, shared by [`crate::GpBo`] (on its own evaluations) and
//! [`crate::suggest::GpSuggester`] (on evaluations supplied from outside): fit an exact GP
//! to the history, warm-started from the previous fit, and maximize the configured
//! acquisition over the space (LogEI / EI / PI / UCB analytically, Thompson sampling by
//! random Fourier features on boxes and exact draws on finite sets).
//!
//! Every random stream is derived from the seed and the number of evaluations (and, for a
//! proposal with pending points, their number), so the same history (and the same previous
//! fit) gives the same point.

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

    /// The hyperparameters the next fit starts from (the last fit's).
    pub fn last_hyper(&self) -> Option<&Hyper> {
        self.last_hyper.as_ref()
    }

    /// Set the hyperparameters the next fit starts from (restoring a snapshot).
    pub fn set_last_hyper(&mut self, h: Option<Hyper>) {
        self.last_hyper = h;
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
        Ok(Some(crate::with_sd(gp.predict(xs.as_ref())?)))
    }

    /// The point maximizing the acquisition of a GP fitted to `h` (which must hold data):
    /// on a finite set the best unevaluated candidate (any, once all were evaluated); on a
    /// box the acquisition's maximizer from Sobol raw samples plus the best observed point
    /// as one more start (as in Optuna's `GPSampler`), preconditioned by the lengthscales,
    /// with integer and categorical parameters snapped ([`maximize_on_box`]).
    pub fn next_point(&mut self, h: &History) -> Result<Point> {
        let Some(gp) = self.fit(h)? else {
            return Err(Error::State("no data to fit".into()));
        };
        self.propose(&gp, h, &[])
    }

    /// The kriging believer (Ginsbourger, Le Riche & Carraro 2010, "Kriging is well-suited
    /// to parallelize optimization"): `gp` conditioned on its own posterior mean at the
    /// `pending` points (model coordinates), with its hyperparameters and standardization
    /// kept, and those believed values. The posterior mean is unchanged everywhere (an
    /// observation equal to its prediction moves nothing) while the variance shrinks below
    /// the noise variance at the pending points and less around them.
    pub fn believer(gp: &ExactGp, pending: &[Vec<f64>]) -> Result<(ExactGp, Vec<f64>)> {
        let xp = agora_gp::rows_to_mat("pending", pending, gp.dim())?;
        let (mean, _) = gp.predict(xp.as_ref())?;
        Ok((gp.condition(xp.as_ref(), &mean)?, mean))
    }

    /// The point maximizing the acquisition of `gp` (fitted to `h`, which holds data) with
    /// `pending` points (asked, not yet answered; model coordinates) taken into account
    /// by the kriging believer ([`GpStep::believer`]); as [`GpStep::next_point`] otherwise.
    /// The incumbent of EI / LogEI / PI is the best value, answered or believed (as when
    /// the believed values were data). With pending points
    /// the random streams also carry their number (each ask at one number of answers has
    /// its own), and a finite set excludes the pending candidates.
    pub fn propose(&self, gp: &ExactGp, h: &History, pending: &[Vec<f64>]) -> Result<Point> {
        let it = h.len() as u64;
        let best_f = h.y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if pending.is_empty() {
            return self.maximize(gp, h, &[], best_f, it, None);
        }
        let (believer, believed) = GpStep::believer(gp, pending)?;
        let best_f = believed.into_iter().fold(best_f, f64::max);
        let n = Some(pending.len() as u64);
        self.maximize(&believer, h, pending, best_f, it, n)
    }

    /// The acquisition's maximizer for `gp` with incumbent `best_f`, its random streams
    /// keyed by `it` (the number of answers), the stream's tag and `pending` (the number of
    /// pending points, if any), the `taken` points excluded from a finite set besides the
    /// evaluated ones.
    fn maximize(
        &self,
        gp: &ExactGp,
        h: &History,
        taken: &[Vec<f64>],
        best_f: f64,
        it: u64,
        pending: Option<u64>,
    ) -> Result<Point> {
        let tags = |tag: u64| -> Vec<u64> { [it, tag].into_iter().chain(pending).collect() };
        let kind = match self.cfg.acq {
            StandardAcq::LogEi => Some(AnalyticKind::LogEi { best_f }),
            StandardAcq::Ei => Some(AnalyticKind::Ei { best_f }),
            StandardAcq::Pi => Some(AnalyticKind::Pi { best_f }),
            StandardAcq::Ucb { beta } => Some(AnalyticKind::Ucb { beta }),
            StandardAcq::Thompson => None,
        };
        let max_seed = derive_seed(self.seed, &tags(TAG_MAXIMIZE));
        let mut ts_rng = stream(self.seed, &tags(TAG_THOMPSON));
        match &h.space {
            Space::Candidates { features, .. } => {
                let cands = Mat::from_fn(features.len(), h.space.dim(), |i, j| features[i][j]);
                let mut exclude = vec![false; features.len()];
                for &i in &h.index {
                    exclude[i] = true;
                }
                for x in taken {
                    if let Some(i) = features.iter().position(|f| f == x) {
                        exclude[i] = true;
                    }
                }
                if exclude.iter().all(|e| *e) {
                    exclude.iter_mut().for_each(|e| *e = false);
                }
                let i = match kind {
                    Some(kind) => {
                        maximize_finite(&Analytic { model: gp, kind }, cands.as_ref(), &exclude)?.0
                    }
                    None => sample_argmax_finite(gp, cands.as_ref(), &exclude, &mut ts_rng)?,
                };
                Ok(Point::Index(i))
            }
            Space::Box { .. } => {
                let acq: Box<dyn Acquisition + '_> = match kind {
                    Some(kind) => Box::new(Analytic { model: gp, kind }),
                    None => Box::new(RffSample::draw(gp, self.cfg.rff_features, &mut ts_rng)?),
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

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::{Answer, AnswerKind};
    use agora_problems::Problem;

    /// Branin's first `n` scrambled-Sobol evaluations (maximized: the problem's value).
    fn history(n: usize, seed: u64) -> History {
        let problem = Problem::by_name("branin").unwrap();
        let mut h = History::new(problem.space.clone()).unwrap();
        for (id, u) in agora_math::design::sobol(n, 2, seed)
            .unwrap()
            .into_iter()
            .enumerate()
        {
            let y = problem.value_at_unit(&u).unwrap();
            let answer = Answer {
                query_id: id as u64,
                kind: AnswerKind::Values { values: vec![y] },
            };
            h.record(&Point::Unit(u), &answer).unwrap();
        }
        h
    }

    fn unit(p: Point) -> Vec<f64> {
        match p {
            Point::Unit(u) => u,
            Point::Index(i) => panic!("a box gives unit points, got index {i}"),
        }
    }

    fn distance(a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    /// The smallest distance between two of `xs`.
    fn closest_pair(xs: &[Vec<f64>]) -> f64 {
        let mut d = f64::INFINITY;
        for i in 0..xs.len() {
            for j in 0..i {
                d = d.min(distance(&xs[i], &xs[j]));
            }
        }
        d
    }

    /// Four asks on the same 12 evaluations, each with the earlier ones pending, give four
    /// clearly separated points; the same LogEI maximized on the same four random streams
    /// without the believer repeats a point (so the separation is the believer's doing).
    #[test]
    fn the_believer_separates_four_pending_points_where_the_plain_acquisition_repeats() {
        for seed in 0..3 {
            let h = history(12, 100 + seed);
            let mut step = GpStep::new(GpBoConfig::new(StandardAcq::LogEi, 2), seed).unwrap();
            let gp = step.fit(&h).unwrap().unwrap();
            let mut pending: Vec<Vec<f64>> = Vec::new();
            for _ in 0..4 {
                let p = unit(step.propose(&gp, &h, &pending).unwrap());
                pending.push(p);
            }
            let it = h.len() as u64;
            let best_f = h.y.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let plain: Vec<Vec<f64>> = (0..4)
                .map(|k| {
                    let key = (k > 0).then_some(k);
                    unit(step.maximize(&gp, &h, &[], best_f, it, key).unwrap())
                })
                .collect();
            assert_eq!(
                plain[0], pending[0],
                "seed {seed}: the first ask has nothing pending"
            );
            let aware = closest_pair(&pending);
            let unaware = closest_pair(&plain);
            println!("seed {seed}: closest pending-aware pair {aware:.3}, plain {unaware:.2e}");
            assert!(
                aware > 0.05,
                "seed {seed}: pending-aware points too close ({aware}): {pending:?}"
            );
            assert!(
                unaware < 1e-3,
                "seed {seed}: without the believer no point repeats ({unaware}): {plain:?}"
            );
        }
    }

    /// The believer keeps the posterior mean and shrinks the variance at the pending point
    /// to about the noise.
    #[test]
    fn the_believer_keeps_the_mean_and_collapses_the_variance_at_pending_points() {
        let h = history(10, 7);
        let mut step = GpStep::new(GpBoConfig::new(StandardAcq::LogEi, 2), 0).unwrap();
        let gp = step.fit(&h).unwrap().unwrap();
        let x = vec![vec![0.37, 0.81], vec![0.9, 0.1]];
        let (b, believed) = GpStep::believer(&gp, &x[..1]).unwrap();
        let xs = agora_gp::rows_to_mat("x", &x, 2).unwrap();
        let (m0, v0) = gp.predict(xs.as_ref()).unwrap();
        let (m1, v1) = b.predict(xs.as_ref()).unwrap();
        for i in 0..2 {
            assert!(
                (m0[i] - m1[i]).abs() <= 1e-8 * (1.0 + m0[i].abs()),
                "{m0:?} {m1:?}"
            );
        }
        assert_eq!(believed.len(), 1);
        assert!((believed[0] - m0[0]).abs() <= 1e-12 * (1.0 + m0[0].abs()));
        // v0·σ²/(v0 + σ²) < σ² for an observation with noise variance σ².
        let noise = gp.noise_variance();
        assert!(
            v1[0] < noise && v1[0] < v0[0] / 2.0,
            "{v0:?} -> {v1:?}, noise {noise}"
        );
        assert!(
            v1[1] <= v0[1],
            "conditioning never adds variance: {v0:?} {v1:?}"
        );
    }
}
