//! Preferential Bayesian optimization: learn a latent utility from a person's pairwise
//! comparisons (Laplace preference GP, [`agora_gp::PreferenceGp`]) and choose the next
//! pair by EUBO (Astudillo et al. 2023), pairwise BALD (Houlsby et al. 2011), or "previous
//! winner vs the EUBO-best challenger" (González et al. 2017's duel structure).
//!
//! Answers people actually give:
//! - a choice among the options shown; a best-of-k choice counts as `k − 1` comparisons,
//!   winner over each other option (the Plackett–Luce first-choice likelihood is not the
//!   product of those, but it shares their mode ordering; documented approximation);
//! - a tie ("can't tell") is stored as a no-information event: it is counted and kept in
//!   the history but adds no likelihood term (a tie likelihood would need a threshold
//!   parameter the person never states);
//! - options that coincide within `merge_tol` are one point; a choice between a point and
//!   itself carries no information and is counted like a tie.

use crate::Strategy;
use crate::open::{self, AskTell, OpenQuery};
use crate::suggest::trust_region::TrustRegion;
use agora_acq::preference::{Bald, Eubo};
use agora_acq::{Acquisition, BoxMaximizer, maximize_box};
use agora_core::{Answer, AnswerKind, Error, Observation, Point, Query, Result, Space};
use agora_gp::{Comparison, PrefConfig, PreferenceGp};
use agora_math::optim::LbfgsbOptions;
use agora_math::rng::{derive_seed, stream};
use faer::Mat;
use rand::RngExt;

/// How the next pair is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairRule {
    /// Both points maximize EUBO jointly.
    Eubo,
    /// Both points maximize pairwise BALD (pure information gain).
    Bald,
    /// The previous winner against the challenger that maximizes EUBO with it.
    WinnerVsEubo,
}

/// Settings of [`Pbo`].
#[derive(Debug, Clone, PartialEq)]
pub struct PboConfig {
    /// The pair rule.
    pub rule: PairRule,
    /// Random initial pairs (`None`: 2d + 2, as in BoTorch's tutorial).
    pub n_init_pairs: Option<usize>,
    /// The preference model and its fitting.
    pub model: PrefConfig,
    /// Maximizer (BoTorch's preference tutorial: 256 raw samples, 8 restarts).
    pub maximizer: BoxMaximizer,
    /// Options closer than this in every unit-cube coordinate are one point (BoTorch 1e-4).
    pub merge_tol: f64,
    /// The first pairs asked, in unit-cube coordinates, before the random ones (e.g. a
    /// design shared with another library so that two runs see the same start); the
    /// random initial pairs fill up to [`PboConfig::n_init_pairs`] after them.
    pub initial_pairs: Vec<[Vec<f64>; 2]>,
    /// With [`PairRule::WinnerVsEubo`]: search the challenger only within this many
    /// lengthscales of the previous winner in each coordinate (a trust region, as
    /// [`crate::PreferenceSuggester`] does); `None` searches the whole box.
    pub trust_region: Option<f64>,
    /// Start each hyperparameter fit from the previous fit's values (`false`: from the
    /// model's configured starting values every time, as BoTorch re-creates its model).
    pub warm_start: bool,
    /// Learn a noise scale per rater (the `rater` each answer names; every vote of a
    /// group, see [`crate::GroupPbo`]), so that a rater who answers at random gets little
    /// weight ([`Pbo::rater_scales`]). `false`: every comparison has the model's noise.
    pub learn_rater_noise: bool,
}

/// Bounds of a rater's learned noise scale, in multiples of the model's unit probit noise
/// (a comparison's weight goes as 1/scale²): 0.2 (25 times the weight) to 20 (1/400: a
/// coin over any utility gap the model spans). A log-normal prior centred on 1 (sd 1 in
/// log scale) keeps a rater with few votes near the model's noise.
pub const RATER_SCALE_BOUNDS: (f64, f64) = (0.2, 20.0);

/// The `capped` preference model (`model=capped`): BoTorch's `PairwiseGP` preset
/// ([`PrefConfig::botorch`]) with the output scale bounded to `[0.5, 8]` (BoTorch's box
/// reaches 200) and the lengthscale prior Gamma(2.4, 5.4), half BoTorch's mean (0.44
/// instead of 0.89 in the unit cube), started at its mode.
///
/// Why: the Laplace evidence drives BoTorch's output scale up to its prior's edge (about
/// 100 on most Hartmann6 runs of the paired protocol) and its lengthscales stay long: the
/// model then believes the utility varies by many times the rater's noise away from the
/// data, and EUBO spends pairs on the box's faces (10–50 % of the asked coordinates sit on
/// a bound, against 0–10 % under this preset; a test counts them), where Hartmann6 is
/// flat and answers are coin flips. Measured by `agora bench pbo-paired` (README):
/// on 40 fresh seeds it lowers the final regret against BoTorch's preset beyond 2 SE on
/// Branin and Hartmann6; against BoTorch itself on its 40 recorded seeds, beyond 2 SE on
/// Branin and in the mean only on Hartmann6.
pub fn capped_model() -> PrefConfig {
    PrefConfig {
        outputscale_bounds: (0.5, 8.0),
        lengthscale_prior: agora_gp::Prior::Gamma {
            alpha: 2.4,
            beta: 5.4,
        },
        init_lengthscale: 1.4 / 5.4,
        ..PrefConfig::botorch()
    }
}

impl PboConfig {
    /// Defaults: BoTorch `PairwiseGP` model, 256 raw samples, 8 restarts.
    pub fn new(rule: PairRule) -> PboConfig {
        PboConfig {
            rule,
            n_init_pairs: None,
            model: PrefConfig::botorch(),
            maximizer: BoxMaximizer {
                raw_samples: 256,
                restarts: 8,
                lbfgs: LbfgsbOptions {
                    max_iter: 200,
                    ..LbfgsbOptions::default()
                },
                boltzmann_eta: Some(2.0),
                adam: None,
            },
            merge_tol: 1e-4,
            initial_pairs: Vec::new(),
            trust_region: None,
            warm_start: true,
            learn_rater_noise: false,
        }
    }
}

/// Preferential BO over a box.
#[derive(Debug, Clone)]
pub struct Pbo {
    space: Space,
    cfg: PboConfig,
    seed: u64,
    points: Vec<Vec<f64>>,
    comps: Vec<Comparison>,
    raters: Vec<Option<String>>,
    ties: usize,
    answered: usize,
    open: OpenQuery<Vec<Vec<f64>>>,
    gp: Option<PreferenceGp>,
    hyper: Option<Vec<f64>>,
    /// The warm start the current model was fitted from (what a snapshot refits with).
    fit_warm: Option<Vec<f64>>,
    last_winner: Option<usize>,
    /// Each rater's learned noise scale, with [`PboConfig::learn_rater_noise`].
    rater_scales: std::collections::BTreeMap<String, f64>,
    /// Options of the user's own, each to be compared in a coming pair
    /// ([`Strategy::enqueue`]), oldest first.
    queued: std::collections::VecDeque<Vec<f64>>,
}

/// The rater an imported comparison names ([`Strategy::import`]).
pub const IMPORTED_RATER: &str = "imported";

/// The format of [`Pbo`]'s snapshots; raised whenever [`PboState`] changes meaning.
const PBO_STATE_FORMAT: u32 = 1;

/// [`Pbo`]'s state as plain data. The model is not stored: restoring refits it from the
/// same comparisons and the same warm start, which gives it bit for bit (the fit is
/// deterministic), at the cost of one fit instead of one per answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PboState {
    points: Vec<Vec<f64>>,
    comps: Vec<Comparison>,
    raters: Vec<Option<String>>,
    ties: usize,
    answered: usize,
    open: Vec<(Query, Vec<Vec<f64>>)>,
    fit_warm: Option<Vec<f64>>,
    last_winner: Option<usize>,
    /// Enqueued options not asked yet (absent in snapshots written before enqueueing).
    #[serde(default)]
    queued: Vec<Vec<f64>>,
}

impl Pbo {
    /// PBO over a box space.
    pub fn new(space: Space, cfg: PboConfig, seed: u64) -> Result<Pbo> {
        space.validate()?;
        if !matches!(space, Space::Box { .. }) {
            return Err(Error::invalid(
                "space",
                "preferential BO searches a box; use a box space",
            ));
        }
        if !(cfg.merge_tol.is_finite() && cfg.merge_tol >= 0.0) {
            return Err(Error::invalid("merge_tol", "must be a finite number >= 0"));
        }
        let d = space.dim();
        for (k, pair) in cfg.initial_pairs.iter().enumerate() {
            for x in pair {
                if x.len() != d {
                    return Err(Error::dim(format!("initial_pairs[{k}]"), d, x.len()));
                }
                if !x.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)) {
                    return Err(Error::invalid(
                        format!("initial_pairs[{k}]"),
                        "unit-cube coordinates must be finite numbers in [0, 1]",
                    ));
                }
            }
        }
        if let Some(t) = cfg.trust_region {
            if !(t.is_finite() && t > 0.0) {
                return Err(Error::invalid(
                    "trust_region",
                    format!("must be a positive number of lengthscales, got {t}"),
                ));
            }
            if cfg.rule != PairRule::WinnerVsEubo {
                return Err(Error::invalid(
                    "trust_region",
                    "needs rule = winner (the region is centred on the previous winner)",
                ));
            }
        }
        Ok(Pbo {
            space,
            cfg,
            seed,
            points: Vec::new(),
            comps: Vec::new(),
            raters: Vec::new(),
            ties: 0,
            answered: 0,
            open: OpenQuery::default(),
            gp: None,
            hyper: None,
            fit_warm: None,
            last_winner: None,
            rater_scales: std::collections::BTreeMap::new(),
            queued: Default::default(),
        })
    }

    /// The current model (after at least one informative answer).
    pub fn model(&self) -> Option<&PreferenceGp> {
        self.gp.as_ref()
    }

    /// Comparisons recorded so far (ties excluded).
    pub fn comparisons(&self) -> &[Comparison] {
        &self.comps
    }

    /// Who gave each comparison (aligned with [`Pbo::comparisons`]; `None` when the answer
    /// named no rater).
    pub fn raters(&self) -> &[Option<String>] {
        &self.raters
    }

    /// Ties ("can't tell") recorded so far.
    pub fn ties(&self) -> usize {
        self.ties
    }

    fn point_index(&mut self, x: &[f64]) -> usize {
        let tol = self.cfg.merge_tol;
        if let Some(i) = self
            .points
            .iter()
            .position(|p| p.iter().zip(x).all(|(a, b)| (a - b).abs() <= tol))
        {
            return i;
        }
        self.points.push(x.to_vec());
        self.points.len() - 1
    }

    fn n_init(&self) -> usize {
        self.cfg.n_init_pairs.unwrap_or(2 * self.space.dim() + 2)
    }

    /// Whether it learns a noise scale per rater ([`PboConfig::learn_rater_noise`]).
    pub fn learns_rater_noise(&self) -> bool {
        self.cfg.learn_rater_noise
    }

    /// Each rater's learned noise scale (multiples of the model's noise; weight ∝
    /// 1/scale²), by name (`""` for answers that named none); empty unless
    /// [`PboConfig::learn_rater_noise`] is set and at least two raters answered.
    pub fn rater_scales(&self) -> &std::collections::BTreeMap<String, f64> {
        &self.rater_scales
    }

    fn refit(&mut self) -> Result<()> {
        if self.comps.is_empty() {
            return Ok(());
        }
        let d = self.space.dim();
        let x = Mat::from_fn(self.points.len(), d, |i, j| self.points[i][j]);
        let warm = self.hyper.clone().filter(|_| self.cfg.warm_start);
        let several = self.cfg.learn_rater_noise && {
            let first = self.raters.first();
            self.raters.iter().any(|r| Some(r) != first)
        };
        // With learned rater noise: from unit scales, fit, estimate every rater's scale
        // on that fit, and refit, twice (a function of the comparisons and the warm start
        // alone, so a snapshot's refit gives the same model).
        if several {
            for c in &mut self.comps {
                c.scale = 1.0;
            }
        }
        let (mut gp, _) = PreferenceGp::fit(
            x.clone(),
            self.comps.clone(),
            &self.cfg.model,
            warm.as_deref(),
        )?;
        if several {
            for _ in 0..2 {
                let scales = self.estimate_rater_scales(&gp, x.as_ref())?;
                for (c, r) in self.comps.iter_mut().zip(&self.raters) {
                    c.scale = scales[r.as_deref().unwrap_or("")];
                }
                let params = gp.kernel().params();
                gp = PreferenceGp::fit(
                    x.clone(),
                    self.comps.clone(),
                    &self.cfg.model,
                    Some(&params),
                )?
                .0;
                self.rater_scales = scales;
            }
        }
        self.hyper = Some(gp.kernel().params());
        self.fit_warm = warm;
        self.gp = Some(gp);
        Ok(())
    }

    /// Each rater's noise scale that best explains their comparisons under `gp` (the
    /// probit of the utility gap, the posterior's uncertainty about the gap added:
    /// `Φ(Δμ / √(2s² + Var Δf))`), with a log-normal prior on `s` centred on 1, maximized
    /// over a grid of 81 values across [`RATER_SCALE_BOUNDS`] in log scale.
    fn estimate_rater_scales(
        &self,
        gp: &PreferenceGp,
        x: faer::MatRef<'_, f64>,
    ) -> Result<std::collections::BTreeMap<String, f64>> {
        let (mu, cov) = gp.predict_cov(x)?;
        let mut by: std::collections::BTreeMap<String, Vec<(f64, f64)>> = Default::default();
        for (c, r) in self.comps.iter().zip(&self.raters) {
            let gap = mu[c.winner] - mu[c.loser];
            let var = (cov[(c.winner, c.winner)] + cov[(c.loser, c.loser)]
                - 2.0 * cov[(c.winner, c.loser)])
                .max(0.0);
            by.entry(r.clone().unwrap_or_default())
                .or_default()
                .push((gap, var));
        }
        let (lo, hi) = (RATER_SCALE_BOUNDS.0.ln(), RATER_SCALE_BOUNDS.1.ln());
        Ok(by
            .into_iter()
            .map(|(r, obs)| {
                let score = |ls: f64| {
                    let s2 = (2.0 * ls).exp();
                    let ll: f64 = obs
                        .iter()
                        .map(|(g, v)| agora_math::special::log_ndtr(g / (2.0 * s2 + v).sqrt()))
                        .sum();
                    ll - 0.5 * ls * ls
                };
                let best = (0..=80)
                    .map(|k| lo + (hi - lo) * k as f64 / 80.0)
                    .map(|ls| (ls, score(ls)))
                    .fold(
                        (0.0, f64::NEG_INFINITY),
                        |a, b| if b.1 > a.1 { b } else { a },
                    );
                (r, best.0.exp())
            })
            .collect())
    }

    /// Record every member's vote on the open pair `query_id` as a comparison of its own,
    /// named by the member (a group's round with [`PboConfig::learn_rater_noise`]):
    /// `votes` holds `(member, option)` for the decisive votes, `leader` the majority's
    /// option if there is one (the next round's previous winner). No decisive vote is a
    /// tie. Errors: no open query of that id (nothing changes).
    pub(crate) fn record_votes(
        &mut self,
        query_id: u64,
        votes: &[(String, usize)],
        leader: Option<usize>,
    ) -> Result<()> {
        let (_, options) = self.open.take(query_id).ok_or(Error::NoOpenQuery)?;
        if let Some((who, w)) = votes.iter().find(|(_, w)| *w >= options.len()) {
            return Err(Error::invalid(
                "votes",
                format!(
                    "{who}'s vote names option {w}; the pair has {}",
                    options.len()
                ),
            ));
        }
        let idx: Vec<usize> = options.iter().map(|x| self.point_index(x)).collect();
        let mut informative = false;
        for (who, w) in votes {
            let wi = idx[*w];
            for (k, &l) in idx.iter().enumerate() {
                if k != *w && l != wi {
                    self.comps.push(Comparison::new(wi, l));
                    self.raters.push(Some(who.clone()));
                    informative = true;
                }
            }
        }
        if !informative {
            self.ties += 1;
        }
        if let Some(m) = leader {
            self.last_winner = Some(idx[m]);
        }
        self.answered += 1;
        self.refit()
    }

    /// The state as plain data ([`PboState`]).
    pub(crate) fn state(&self) -> PboState {
        PboState {
            points: self.points.clone(),
            comps: self.comps.clone(),
            raters: self.raters.clone(),
            ties: self.ties,
            answered: self.answered,
            open: self.open.entries().to_vec(),
            fit_warm: self.fit_warm.clone(),
            last_winner: self.last_winner,
            queued: self.queued.iter().cloned().collect(),
        }
    }

    /// Install a [`Pbo::state`] on a freshly built `Pbo` (same method, settings, seed),
    /// refitting the model from the stored warm start. Errors leave `self` unchanged.
    pub(crate) fn restore_state(&mut self, st: PboState) -> Result<()> {
        if self.answered != 0 || !self.points.is_empty() {
            return Err(crate::snapshot::not_fresh());
        }
        let d = self.space.dim();
        let m = st.points.len();
        if let Some(p) = st.points.iter().find(|p| p.len() != d) {
            return Err(Error::dim("snapshot.points", d, p.len()));
        }
        if let Some(q) = st.queued.iter().find(|q| q.len() != d) {
            return Err(Error::dim("snapshot.queued", d, q.len()));
        }
        if st.comps.iter().any(|c| c.winner >= m || c.loser >= m)
            || st.raters.len() != st.comps.len()
            || st.last_winner.is_some_and(|w| w >= m)
        {
            return Err(Error::invalid(
                "snapshot",
                "its comparisons, raters or winner do not fit its points",
            ));
        }
        let mut next = self.clone();
        next.points = st.points;
        next.comps = st.comps;
        next.raters = st.raters;
        next.ties = st.ties;
        next.answered = st.answered;
        next.open = OpenQuery::from_entries(st.open);
        next.last_winner = st.last_winner;
        next.queued = st.queued.into();
        next.hyper = st.fit_warm;
        next.refit()?;
        *self = next;
        Ok(())
    }

    /// The next pair; an enqueued option, if any, is one of the two (and leaves the queue).
    fn next_pair(&mut self) -> Result<Vec<Vec<f64>>> {
        let pair = self.propose_pair()?;
        if self.queued.front().is_some_and(|q| pair.contains(q)) {
            self.queued.pop_front();
        }
        Ok(pair)
    }

    fn propose_pair(&self) -> Result<Vec<Vec<f64>>> {
        let d = self.space.dim();
        let it = self.answered as u64;
        if let Some(pair) = self.cfg.initial_pairs.get(self.answered) {
            return Ok(pair.to_vec());
        }
        let gp = match &self.gp {
            Some(gp) if self.comps.len() >= self.n_init() => gp,
            _ => {
                let mut rng = stream(self.seed, &[it, 0]);
                let mut pair: Vec<Vec<f64>> = (0..2)
                    .map(|_| (0..d).map(|_| rng.random::<f64>()).collect())
                    .collect();
                if let Some(q) = self.queued.front() {
                    pair[0] = q.clone();
                }
                return Ok(pair);
            }
        };
        let seed = derive_seed(self.seed, &[it, 1]);
        // An enqueued option of the user's is compared with the EUBO challenger against it.
        let fixed = match (self.queued.front(), self.cfg.rule) {
            (Some(q), _) => Some(q.clone()),
            (None, PairRule::WinnerVsEubo) => self.last_winner.map(|i| self.points[i].clone()),
            (None, _) => None,
        };
        let queued = self.queued.front().is_some();
        let acq: Box<dyn Acquisition + '_> = match self.cfg.rule {
            PairRule::Bald if !queued => Box::new(Bald {
                gp,
                fixed: fixed.clone(),
                noise: 1.0,
            }),
            _ => Box::new(Eubo {
                gp,
                fixed: fixed.clone(),
            }),
        };
        let spectral = gp.kernel().spectral(d);
        let x = match (&fixed, self.cfg.trust_region, spectral) {
            (Some(center), Some(t), Some(spec)) if !queued => {
                let half: Vec<f64> = spec.lengthscales.iter().map(|l| t * l).collect();
                let region = TrustRegion::around(acq.as_ref(), center, &half, &vec![true; d])?;
                let (z, _) = maximize_box(&region, &self.cfg.maximizer, &[], None, seed)?;
                region.to_region(&z)
            }
            _ => maximize_box(acq.as_ref(), &self.cfg.maximizer, &[], None, seed)?.0,
        };
        Ok(match fixed {
            Some(f) => vec![f, x],
            None => vec![x[..d].to_vec(), x[d..].to_vec()],
        })
    }
}

impl AskTell for Pbo {
    type Pending = Vec<Vec<f64>>;

    fn open_query(&mut self) -> &mut OpenQuery<Vec<Vec<f64>>> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, Vec<Vec<f64>>)> {
        let proposals = self.next_pair()?;
        crate::compare_query(&self.space, self.answered as u64, proposals)
    }

    fn record(&mut self, _: &Query, options: &Vec<Vec<f64>>, answer: &Answer) -> Result<()> {
        match &answer.kind {
            AnswerKind::Choice { winner, rater } => {
                let idx: Vec<usize> = options.iter().map(|x| self.point_index(x)).collect();
                let w = idx[*winner];
                let mut informative = false;
                for (k, &l) in idx.iter().enumerate() {
                    if k != *winner && l != w {
                        self.comps.push(Comparison::new(w, l));
                        self.raters.push(rater.clone());
                        informative = true;
                    }
                }
                if !informative {
                    self.ties += 1;
                }
                self.last_winner = Some(w);
            }
            AnswerKind::Tie { .. } => self.ties += 1,
            _ => {
                return Err(Error::invalid(
                    "answer",
                    "a comparison needs a choice or a tie",
                ));
            }
        }
        self.answered += 1;
        self.refit()
    }
}

impl Strategy for Pbo {
    fn name(&self) -> String {
        match self.cfg.rule {
            PairRule::Eubo => "pbo-eubo",
            PairRule::Bald => "pbo-bald",
            PairRule::WinnerVsEubo => "pbo-winner",
        }
        .into()
    }

    fn ask(&mut self) -> Result<Query> {
        open::ask(self)
    }

    fn tell(&mut self, answer: &Answer) -> Result<()> {
        open::tell(self, answer)
    }

    fn rater_noise(&self) -> Option<Vec<(String, f64)>> {
        (!self.rater_scales.is_empty()).then(|| {
            self.rater_scales
                .iter()
                .map(|(r, s)| (r.clone(), *s))
                .collect()
        })
    }

    fn belief(&self, points: &[Vec<f64>]) -> Option<Vec<(f64, f64)>> {
        let gp = self.gp.as_ref()?;
        let d = self.space.dim();
        let xs = agora_gp::rows_to_mat("points", points, d).ok()?;
        gp.predict(xs.as_ref()).ok().map(crate::with_sd)
    }

    fn recommend(&self) -> Option<(Point, f64)> {
        let gp = self.gp.as_ref()?;
        // The compared point with the largest posterior mean (= MAP utility at the data).
        let referenced: Vec<usize> = (0..self.points.len())
            .filter(|i| self.comps.iter().any(|c| c.winner == *i || c.loser == *i))
            .collect();
        let u = gp.utility();
        let best = referenced
            .into_iter()
            .max_by(|a, b| u[*a].total_cmp(&u[*b]))?;
        Some((Point::Unit(self.points[best].clone()), u[best]))
    }

    fn n_answered(&self) -> usize {
        self.answered
    }

    /// Comparisons only (each becomes a comparison of the model's, its rater
    /// [`IMPORTED_RATER`]); they count towards the random initial pairs.
    fn import(&mut self, data: &[Observation]) -> Result<()> {
        if self.answered > 0 {
            return Err(Error::invalid(
                "import",
                "data can only be imported before the first answer",
            ));
        }
        let mut next = self.clone();
        for (k, o) in data.iter().enumerate() {
            let Observation::Comparison { winner, loser } = o else {
                return Err(Error::invalid(
                    format!("import[{k}]"),
                    "preferential BO learns from comparisons (winner, loser), not evaluations",
                ));
            };
            let w = crate::unit_point(&self.space, &format!("import[{k}].winner"), winner)?;
            let l = crate::unit_point(&self.space, &format!("import[{k}].loser"), loser)?;
            let (wi, li) = (next.point_index(&w), next.point_index(&l));
            if wi == li {
                return Err(Error::invalid(
                    format!("import[{k}]"),
                    "the winner and the loser are the same option",
                ));
            }
            next.comps.push(Comparison::new(wi, li));
            // Named, so that with learned rater noise the imported data get a noise scale
            // of their own (shown as `imported`), not the unnamed rater's.
            next.raters.push(Some(IMPORTED_RATER.into()));
        }
        next.open = OpenQuery::default();
        next.refit()?;
        *self = next;
        Ok(())
    }

    fn enqueue(&mut self, option: &[f64]) -> Result<()> {
        let x = crate::unit_point(&self.space, "option", option)?;
        self.queued.push_back(x);
        Ok(())
    }

    fn enqueues(&self) -> bool {
        true
    }

    fn snapshot(&self) -> Result<Option<serde_json::Value>> {
        crate::snapshot::write(&self.name(), PBO_STATE_FORMAT, &self.state())
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        let st = crate::snapshot::read(&self.name(), PBO_STATE_FORMAT, state)?;
        self.restore_state(st)
    }
}
