//! The plain strategies every user expects: random search, scrambled Sobol, and GP-based
//! BO with LogEI / EI / PI / UCB / Thompson sampling.

use crate::gp_step::GpStep;
use crate::open::{self, AskTell, OpenQuery};
use crate::{History, Strategy};
use agora_acq::BoxMaximizer;
use agora_core::{Answer, Error, Point, Query, Result, Space};
use agora_gp::{ExactGp, GpConfig, Hyper};
use agora_math::rng::stream;
use rand::RngExt;

/// The [`AskTell`] items shared by the strategies whose state is a [`History`] in field
/// `h`: the open query lives in the history and an answer is recorded there.
macro_rules! history_ask_tell {
    () => {
        type Pending = Point;
        fn open_query(&mut self) -> &mut OpenQuery<Point> {
            &mut self.h.open
        }
        fn record(&mut self, _: &Query, p: &Point, answer: &Answer) -> Result<()> {
            self.h.record(p, answer)
        }
    };
}

/// `ask`, `ask_parallel` and `tell` by the shared open-query rules, `recommend` (the best
/// evaluation) and `n_answered` of a strategy whose state is a [`History`] in field `h`
/// (its `propose` accounts for the open queries as pending points).
macro_rules! history_strategy {
    () => {
        fn ask(&mut self) -> Result<Query> {
            open::ask(self)
        }
        fn ask_parallel(&mut self) -> Result<Query> {
            open::ask_parallel(self)
        }
        fn tell(&mut self, answer: &Answer) -> Result<()> {
            open::tell(self, answer)
        }
        fn recommend(&self) -> Option<(Point, f64)> {
            self.h.best()
        }
        fn n_answered(&self) -> usize {
            self.h.answered()
        }
    };
}

/// Uniform random search (unevaluated candidates uniformly, for finite sets). Several
/// open queries draw from their own streams (and distinct candidates).
#[derive(Debug, Clone)]
pub struct RandomSearch {
    h: History,
    seed: u64,
}

impl RandomSearch {
    /// Random search over `space`.
    pub fn new(space: Space, seed: u64) -> Result<RandomSearch> {
        Ok(RandomSearch {
            h: History::new(space)?,
            seed,
        })
    }
}

/// A uniformly random candidate index neither evaluated nor pending (any, once all were).
fn random_candidate(h: &History, rng: &mut agora_math::rng::Rng) -> Option<usize> {
    let n = h.space.n_candidates()?;
    let fresh: Vec<usize> = (0..n).filter(|i| !h.candidate_taken(*i)).collect();
    if fresh.is_empty() {
        Some(rng.random_range(0..n))
    } else {
        Some(fresh[rng.random_range(0..fresh.len())])
    }
}

impl AskTell for RandomSearch {
    history_ask_tell!();
    fn propose(&mut self) -> Result<(Query, Point)> {
        let mut rng = stream(self.seed, &[self.h.issued() as u64, 0]);
        let p = match random_candidate(&self.h, &mut rng) {
            Some(i) => Point::Index(i),
            None => Point::Unit(
                (0..self.h.space.dim())
                    .map(|_| rng.random::<f64>())
                    .collect(),
            ),
        };
        self.h.query_point(p)
    }
}

impl Strategy for RandomSearch {
    fn name(&self) -> String {
        "random".into()
    }
    history_strategy!();

    fn snapshot(&self) -> Result<Option<serde_json::Value>> {
        crate::snapshot::write(&self.name(), 1, &self.h.state())
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        let st = crate::snapshot::read(&self.name(), 1, state)?;
        let mut h = self.h.clone();
        h.restore_state(st)?;
        self.h = h;
        Ok(())
    }
}

/// [`SobolSearch`]'s and [`GpBo`]'s snapshot: the history, how many Sobol points were
/// generated (regenerated on restoring), and for GP-BO the fit's warm starts.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct DesignState {
    h: crate::history::HistoryState,
    sobol: usize,
    last_hyper: Option<Hyper>,
    /// The GP cached for later asks at the same number of answers: that number and the
    /// warm start it was fitted from (refitted on restoring: the fit is deterministic).
    fitted: Option<(usize, Option<Hyper>)>,
    /// GP-BO's enqueued options (absent in snapshots written before enqueueing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    queued: Vec<Vec<f64>>,
}

/// Lazily extended scrambled-Sobol sequence.
#[derive(Debug, Clone)]
struct SobolStream {
    d: usize,
    seed: u64,
    points: Vec<Vec<f64>>,
}

impl SobolStream {
    /// The first `n` points again, as generated when `n` were (nothing for 0).
    fn regenerate(&mut self, n: usize) -> Result<()> {
        self.points = if n == 0 {
            Vec::new()
        } else {
            agora_math::design::sobol(n, self.d, self.seed)?
        };
        Ok(())
    }

    fn get(&mut self, i: usize) -> Result<Vec<f64>> {
        if i >= self.points.len() {
            let n = (i + 1).next_power_of_two().max(64);
            self.points = agora_math::design::sobol(n, self.d, self.seed)?;
        }
        self.points.get(i).cloned().ok_or_else(|| {
            Error::invalid(
                "budget",
                format!("Sobol designs hold at most 65536 points, asked for point {i}"),
            )
        })
    }
}

/// Scrambled Sobol points in order, one per query issued (random unevaluated candidates
/// for finite sets).
#[derive(Debug, Clone)]
pub struct SobolSearch {
    h: History,
    sobol: SobolStream,
    seed: u64,
}

impl SobolSearch {
    /// Sobol search over `space`.
    pub fn new(space: Space, seed: u64) -> Result<SobolSearch> {
        let d = space.dim();
        Ok(SobolSearch {
            h: History::new(space)?,
            sobol: SobolStream {
                d,
                seed,
                points: Vec::new(),
            },
            seed,
        })
    }
}

impl AskTell for SobolSearch {
    history_ask_tell!();
    fn propose(&mut self) -> Result<(Query, Point)> {
        let issued = self.h.issued();
        let mut rng = stream(self.seed, &[issued as u64, 0]);
        let p = match random_candidate(&self.h, &mut rng) {
            Some(i) => Point::Index(i),
            None => Point::Unit(self.sobol.get(issued)?),
        };
        self.h.query_point(p)
    }
}

impl Strategy for SobolSearch {
    fn name(&self) -> String {
        "sobol".into()
    }
    history_strategy!();

    fn snapshot(&self) -> Result<Option<serde_json::Value>> {
        let st = DesignState {
            h: self.h.state(),
            sobol: self.sobol.points.len(),
            last_hyper: None,
            fitted: None,
            queued: Vec::new(),
        };
        crate::snapshot::write(&self.name(), 1, &st)
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        let st: DesignState = crate::snapshot::read(&self.name(), 1, state)?;
        let mut h = self.h.clone();
        h.restore_state(st.h)?;
        let mut sobol = self.sobol.clone();
        sobol.regenerate(st.sobol)?;
        self.h = h;
        self.sobol = sobol;
        Ok(())
    }
}

/// The acquisition of a [`GpBo`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StandardAcq {
    /// Log expected improvement over the best observed value (Ament et al. 2023).
    LogEi,
    /// Expected improvement.
    Ei,
    /// Probability of improvement.
    Pi,
    /// Upper confidence bound with weight β.
    Ucb {
        /// Exploration weight.
        beta: f64,
    },
    /// Thompson sampling (random Fourier features on boxes, exact draws on finite sets).
    Thompson,
}

/// Settings of [`GpBo`].
#[derive(Debug, Clone, PartialEq)]
pub struct GpBoConfig {
    /// The acquisition.
    pub acq: StandardAcq,
    /// Initial space-filling evaluations (Sobol) before the model is used.
    pub n_init: usize,
    /// The GP model and its fitting.
    pub gp: GpConfig,
    /// Box maximizer settings.
    pub maximizer: BoxMaximizer,
    /// Random Fourier features per Thompson draw.
    pub rff_features: usize,
    /// Also start each fit from the previous iteration's hyperparameters.
    pub warm_start: bool,
}

impl GpBoConfig {
    /// Defaults for a `d`-dimensional space: 10 Sobol points, then `acq` on an Optuna-style
    /// Matérn-5/2 GP (see [`GpConfig::optuna`]), warm-started fits, 512 raw samples and 10
    /// restarts.
    pub fn new(acq: StandardAcq, d: usize) -> GpBoConfig {
        GpBoConfig {
            acq,
            n_init: 10,
            gp: GpConfig::optuna(d),
            maximizer: BoxMaximizer::default(),
            rff_features: 1024,
            warm_start: true,
        }
    }
}

/// Bayesian optimization with an exact GP and a standard acquisition: `n_init` Sobol points
/// (random unevaluated candidates on finite sets), then the model step: a warm-started GP
/// fit and the acquisition's maximizer, the best observed point one more start, integer
/// and categorical parameters snapped ([`crate::discrete::maximize_on_box`]). The model
/// step is shared with [`crate::suggest::GpSuggester`], which runs it on outside data.
///
/// **Several open queries** ([`Strategy::ask_parallel`], for asynchronous workers): the
/// Sobol design hands each query its own point, and a model-based proposal treats the
/// open queries' points as pending by the kriging believer (Ginsbourger, Le Riche &
/// Carraro 2010, "Kriging is well-suited to parallelize optimization"): the GP fitted to
/// the answers is conditioned on its own posterior mean at the pending points, its
/// hyperparameters not refitted, so the mean stays and the variance collapses there and
/// the acquisition looks elsewhere. The hyperparameters are fitted once per number of
/// answers and reused by every ask until the next answer. With nothing open, every step is
/// what the sequential strategy does.
#[derive(Debug, Clone)]
pub struct GpBo {
    h: History,
    step: GpStep,
    sobol: SobolStream,
    /// The GP fitted to the first `.0` answers (reused by later asks at the same count),
    /// and the warm start it was fitted from.
    fitted: Option<(usize, ExactGp, Option<Hyper>)>,
    /// Options of the user's own to evaluate next ([`Strategy::enqueue`]), oldest first.
    queued: std::collections::VecDeque<Vec<f64>>,
}

impl GpBo {
    /// GP-BO over `space`.
    pub fn new(space: Space, cfg: GpBoConfig, seed: u64) -> Result<GpBo> {
        let step = GpStep::new(cfg, seed)?;
        let d = space.dim();
        Ok(GpBo {
            h: History::new(space)?,
            step,
            sobol: SobolStream {
                d,
                seed,
                points: Vec::new(),
            },
            fitted: None,
            queued: Default::default(),
        })
    }

    /// The model fitted to the current history (None before any data).
    pub fn fit(&mut self) -> Result<Option<ExactGp>> {
        self.step.fit(&self.h)
    }

    /// The next point: the initial design's next point while fewer than `n_init` queries
    /// were issued (or nothing is answered yet), else the model step with the open
    /// queries' points pending. Without open queries, `issued` is the number of answers
    /// and this is the sequential strategy exactly.
    fn next_point(&mut self) -> Result<Point> {
        if let Some(q) = self.queued.pop_front() {
            return Ok(Point::Unit(q));
        }
        let issued = self.h.issued();
        let mut rng = stream(self.step.seed, &[issued as u64, 0]);
        if issued < self.step.cfg.n_init.max(1) || self.h.is_empty() {
            return Ok(match random_candidate(&self.h, &mut rng) {
                Some(i) => Point::Index(i),
                None => Point::Unit(self.sobol.get(issued)?),
            });
        }
        let n = self.h.len();
        let (gp, warm) = match self.fitted.take() {
            Some((m, gp, warm)) if m == n => (gp, warm),
            _ => {
                let warm = self.step.last_hyper().cloned();
                let gp = self
                    .step
                    .fit(&self.h)?
                    .ok_or_else(|| Error::State("no data to fit".into()))?;
                (gp, warm)
            }
        };
        let pending = self.h.pending_x()?;
        let p = self.step.propose(&gp, &self.h, &pending);
        self.fitted = Some((n, gp, warm));
        p
    }
}

impl AskTell for GpBo {
    history_ask_tell!();
    fn propose(&mut self) -> Result<(Query, Point)> {
        let p = self.next_point()?;
        self.h.query_point(p)
    }
}

impl Strategy for GpBo {
    fn name(&self) -> String {
        match self.step.cfg.acq {
            StandardAcq::LogEi => "gp-logei",
            StandardAcq::Ei => "gp-ei",
            StandardAcq::Pi => "gp-pi",
            StandardAcq::Ucb { .. } => "gp-ucb",
            StandardAcq::Thompson => "gp-ts",
        }
        .into()
    }
    history_strategy!();

    /// Earlier evaluations (box spaces); they stand in for the random initial design.
    fn import(&mut self, data: &[agora_core::Observation]) -> Result<()> {
        self.h.import(data)?;
        self.fitted = None;
        Ok(())
    }

    fn enqueue(&mut self, option: &[f64]) -> Result<()> {
        let x = crate::unit_point(&self.h.space, "option", option)?;
        self.queued.push_back(x);
        Ok(())
    }

    fn enqueues(&self) -> bool {
        true
    }

    /// The GP fitted afresh to the evaluations so far (warm-started like the next proposal's
    /// fit, on its own random stream): reading the belief never changes what is proposed.
    fn belief(&self, points: &[Vec<f64>]) -> Option<Vec<(f64, f64)>> {
        self.step.belief(&self.h, points).ok().flatten()
    }

    fn snapshot(&self) -> Result<Option<serde_json::Value>> {
        let st = DesignState {
            h: self.h.state(),
            sobol: self.sobol.points.len(),
            last_hyper: self.step.last_hyper().cloned(),
            // A cache for an earlier number of answers is never used again: not kept.
            fitted: self
                .fitted
                .as_ref()
                .filter(|(n, _, _)| *n == self.h.len())
                .map(|(n, _, w)| (*n, w.clone())),
            queued: self.queued.iter().cloned().collect(),
        };
        crate::snapshot::write(&self.name(), 1, &st)
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        let st: DesignState = crate::snapshot::read(&self.name(), 1, state)?;
        let mut next = self.clone();
        next.h.restore_state(st.h)?;
        next.sobol.regenerate(st.sobol)?;
        next.fitted = None;
        if let Some(q) = st.queued.iter().find(|q| q.len() != next.h.space.dim()) {
            return Err(Error::dim("snapshot.queued", next.h.space.dim(), q.len()));
        }
        next.queued = st.queued.into();
        // The cached GP is only ever used at its own number of answers: refit it there
        // from its warm start (then the step's warm start is that fit's, as it was).
        if let Some((n, warm)) = st.fitted.filter(|(n, _)| *n == next.h.len()) {
            next.step.set_last_hyper(warm.clone());
            let gp = next
                .step
                .fit(&next.h)?
                .ok_or_else(|| Error::invalid("snapshot", "a fitted model without data"))?;
            next.fitted = Some((n, gp, warm));
        }
        next.step.set_last_hyper(st.last_hyper);
        *self = next;
        Ok(())
    }
}
