//! Social BO's GP variant (App. F.1, experiments of App. H.3) and its baselines, as one
//! ask/tell strategy over group ratings ([`QueryKind::GroupRate`]: every agent rates one
//! option, publicly or privately, with a noisy utility value).
//!
//! Each round the facilitator proposes `x_t = argmax_x A_ρ(u_hi(x, :))`, the welfare of the
//! agents' upper confidence bounds `u_hi(x, i) = μ(x, i) + β^{1/2} σ(x, i)` (Prob. 4's
//! acquisition, shared by every method here), and asks for the ratings each method uses:
//!
//! - `sbo-gp`: public ratings every round; `u = B̂ v` with the Laplace posterior of `B`,
//!   every row of `B` held to its exact sum `1/(1 + λ)`, and the public posterior's
//!   covariance across agents ([`agora_gp::social_gp`]). After refitting, a private rating
//!   of the same option is asked when `w_B ≥ max(t^{−q}, w_v)`, where
//!   `w_B² = Σ_i var_b(x_t, i)` is the part of `u`'s variance due to `B` and
//!   `w_v² = Σ_i var_v(x_t, i)` the part due to the public GP, both divided by the mean
//!   prior variance so the threshold is unit-free. The
//!   paper's rule `Ψ(B) = A′[diag(Λ⁻¹)]` leaves `A′` and the threshold undefined (note §8.14);
//!   this is agora's reading, parallel to Algorithm 1's `w^u ≥ max(t^{−q}, w^v)`.
//! - `gp-ucb-u` / `gp-ucb-v` (Srinivas et al.): one GP on the aggregated value
//!   `y_t = A_ρ(u(x_t, :))` from private ratings, or `A_ρ(v(x_t, :))` from public ones (the
//!   latter optimizes the socially influenced welfare: misspecified).
//! - `mt-gp-ucb-u` / `mt-gp-ucb-uv`: a multi-task GP with no graph structure over the
//!   agents' private ratings, or over private and public ratings (2n tasks), both asked
//!   every round; the task correlation is the sample correlation of the tasks' ratings,
//!   shrunk halfway to the identity (agora's choice; the paper does not say how the
//!   baseline's task covariance is set).
//!
//! Shared decisions: 5 random initial options rated on every channel the method uses (SBO-GP:
//! both); hyperparameters (one RBF lengthscale from a grid, per-task output scale and noise)
//! by the profile marginal likelihood every round; `β^{1/2} = 2`; the acquisition
//! ([`agora_acq::WelfareUcb`]) is maximized ([`agora_acq::maximize_screened`]) over a fresh
//! scrambled Sobol set plus Gaussian perturbations of the best candidate (boxes) or over
//! every option (finite sets).
//!
//! Beliefs ([`Strategy::belief`], [`Strategy::agent_beliefs`]): each agent's utility is the
//! model's `u` (SBO-GP: `B̂ v`; MT-GP: the first `n` tasks), the welfare's mean and sd the
//! delta method with the covariance across agents ([`welfare_belief`]). GP-UCB models the
//! welfare alone, so it has a welfare belief and no agents' (for `gp-ucb-v`, of the public
//! ratings' welfare, the objective it optimizes).

use crate::Strategy;
use crate::open::{self, AskTell, OpenQuery};
use agora_acq::social::AgentUtilities;
use agora_acq::social::{WelfareUcb, ucb, welfare_belief};
use agora_acq::{LocalSearch, maximize_screened};
use agora_core::{Answer, AnswerKind, Channel, Error, Point, Query, QueryKind, Result, Space};
use agora_gp::social_gp::{SocialGp, SocialGpConfig};
use agora_gp::{Icm, Kernel, Stationary, StationaryKind, profile_fit, sample_correlation};
use agora_math::rng::derive_seed;
use agora_math::welfare::Welfare;
use faer::Mat;
use std::collections::VecDeque;
use std::time::Instant;

/// Which method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SboGpVariant {
    /// Social BO's GP variant (public ratings, `B` learned, private ratings on demand).
    SboGp,
    /// GP-UCB on the welfare of private ratings.
    GpUcbU,
    /// GP-UCB on the welfare of public ratings.
    GpUcbV,
    /// Multi-task GP-UCB on private ratings.
    MtGpUcbU,
    /// Multi-task GP-UCB on private and public ratings.
    MtGpUcbUv,
}

impl SboGpVariant {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            SboGpVariant::SboGp => "sbo-gp",
            SboGpVariant::GpUcbU => "gp-ucb-u",
            SboGpVariant::GpUcbV => "gp-ucb-v",
            SboGpVariant::MtGpUcbU => "mt-gp-ucb-u",
            SboGpVariant::MtGpUcbUv => "mt-gp-ucb-uv",
        }
    }

    /// Every variant.
    pub fn all() -> [SboGpVariant; 5] {
        [
            SboGpVariant::SboGp,
            SboGpVariant::GpUcbU,
            SboGpVariant::GpUcbV,
            SboGpVariant::MtGpUcbU,
            SboGpVariant::MtGpUcbUv,
        ]
    }

    /// The channels rated every round (SBO-GP adds private ratings on demand).
    fn channels(self) -> Vec<Channel> {
        match self {
            SboGpVariant::SboGp | SboGpVariant::GpUcbV => vec![Channel::Public],
            SboGpVariant::GpUcbU | SboGpVariant::MtGpUcbU => vec![Channel::Private],
            SboGpVariant::MtGpUcbUv => vec![Channel::Public, Channel::Private],
        }
    }
}

/// Settings of [`SboGp`].
#[derive(Debug, Clone, PartialEq)]
pub struct SboGpConfig {
    /// Agents `n`.
    pub agents: usize,
    /// Gini `ρ` of the facilitator's welfare.
    pub rho: f64,
    /// Private-rating decay `q ∈ (0, 1)`.
    pub q: f64,
    /// Random initial options.
    pub init: usize,
    /// `β^{1/2}` of the upper confidence bounds.
    pub beta_sqrt: f64,
    /// RBF lengthscales tried by the hyperparameter fit.
    pub lengthscales: Vec<f64>,
    /// A precomputed kernel over a finite option set (features = indices).
    pub gram: Option<Vec<Vec<f64>>>,
    /// Sobol candidates per round (boxes).
    pub candidates: usize,
    /// Gaussian perturbations of the best candidate (boxes).
    pub local: usize,
    /// The model of `B`.
    pub model: SocialGpConfig,
    /// Method.
    pub variant: SboGpVariant,
}

impl SboGpConfig {
    /// Defaults (q = 0.5, 5 initial options, β^{1/2} = 2).
    pub fn new(agents: usize, rho: f64, variant: SboGpVariant) -> SboGpConfig {
        SboGpConfig {
            agents,
            rho,
            q: 0.5,
            init: 5,
            beta_sqrt: 2.0,
            lengthscales: vec![0.05, 0.1, 0.2, 0.4, 0.8],
            gram: None,
            candidates: 256,
            local: 64,
            model: SocialGpConfig::default(),
            variant,
        }
    }
}

/// What one round did.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SboGpRound {
    /// The option proposed (unit cube).
    pub x: Vec<f64>,
    /// Whether a private rating was asked at it.
    pub private: bool,
    /// `(w_B, w_v)` of the private-rating rule (SBO-GP; zeros otherwise).
    #[serde(with = "widths_serde")]
    pub widths: (f64, f64),
    /// `Â` row-major after the round (SBO-GP).
    pub graph: Vec<f64>,
    /// Wall seconds of the round's model work.
    #[serde(with = "agora_core::snapshot::nonfinite")]
    pub seconds: f64,
}

/// [`SboGpRound::widths`] with NaN and infinities kept.
mod widths_serde {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(w: &(f64, f64), s: S) -> Result<S::Ok, S::Error> {
        agora_core::snapshot::nonfinite_vec::serialize(&[w.0, w.1], s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<(f64, f64), D::Error> {
        let v = agora_core::snapshot::nonfinite_vec::deserialize(d)?;
        match v.as_slice() {
            [a, b] => Ok((*a, *b)),
            _ => Err(serde::de::Error::invalid_length(v.len(), &"two widths")),
        }
    }
}

/// Ratings on one channel: options (unit cube) and one value per agent.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Ratings {
    x: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
}

/// The fitted surrogate of a round.
#[derive(Debug, Clone)]
enum Surrogate {
    Social(Box<SocialGp>),
    /// One GP on the welfare (T = 1) or a multi-task GP whose first `n` tasks are `u`.
    Icm(Box<Icm>),
}

/// Social BO's GP variant and its baselines.
#[derive(Debug, Clone)]
pub struct SboGp {
    space: Space,
    cfg: SboGpConfig,
    seed: u64,
    welfare: Welfare,
    kernels: Vec<Box<dyn Kernel>>,
    public: Ratings,
    private: Ratings,
    init: VecDeque<(Vec<f64>, Channel)>,
    /// Channels still to ask at the current proposal.
    todo: VecDeque<Channel>,
    current: Option<Vec<f64>>,
    surrogate: Option<Surrogate>,
    rounds: Vec<SboGpRound>,
    counts: [usize; 2],
    queries: u64,
    /// The open query's option and channel.
    open: OpenQuery<(Vec<f64>, Channel)>,
    work: f64,
    /// The warm start the current surrogate was fitted from (SBO-GP's `B̂`, rows).
    fit_warm: Option<Vec<Vec<f64>>>,
}

/// The format of [`SboGp`]'s snapshots.
const SBO_GP_STATE_FORMAT: u32 = 1;

/// [`SboGp`]'s state as plain data; the surrogate is refitted from the ratings and its
/// stored warm start (deterministic).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct SboGpState {
    public: Ratings,
    private: Ratings,
    init_left: usize,
    todo: Vec<Channel>,
    current: Option<Vec<f64>>,
    fitted: bool,
    fit_warm: Option<Vec<Vec<f64>>>,
    rounds: Vec<SboGpRound>,
    counts: [usize; 2],
    queries: u64,
    open: Vec<(Query, (Vec<f64>, Channel))>,
    work: f64,
}

impl SboGp {
    /// Errors name `agents`, `rho`, `q`, `beta_sqrt`, `lengthscales`, `gram` or the space.
    pub fn new(space: Space, cfg: SboGpConfig, seed: u64) -> Result<SboGp> {
        space.validate()?;
        if cfg.agents == 0 {
            return Err(Error::invalid(
                "agents",
                "needs at least one agent (n >= 1)",
            ));
        }
        let welfare = Welfare::gini(cfg.rho)?;
        if !(cfg.q > 0.0 && cfg.q < 1.0) {
            return Err(Error::invalid(
                "q",
                format!("the private-rating decay must lie in (0, 1), got {}", cfg.q),
            ));
        }
        if !(cfg.beta_sqrt.is_finite() && cfg.beta_sqrt >= 0.0) {
            return Err(Error::invalid(
                "beta_sqrt",
                format!("must be finite and >= 0, got {}", cfg.beta_sqrt),
            ));
        }
        let d = space.dim();
        let kernels: Vec<Box<dyn Kernel>> = match &cfg.gram {
            Some(rows) => vec![Box::new(crate::gram_kernel(&space, rows)?)],
            None => {
                if cfg.lengthscales.is_empty()
                    || cfg
                        .lengthscales
                        .iter()
                        .any(|l| !(l.is_finite() && *l > 0.0))
                {
                    return Err(Error::invalid(
                        "lengthscales",
                        format!(
                            "needs at least one finite lengthscale > 0, got {:?}",
                            cfg.lengthscales
                        ),
                    ));
                }
                cfg.lengthscales
                    .iter()
                    .map(|&l| -> Result<Box<dyn Kernel>> {
                        let mut k = Stationary::ard(StationaryKind::Rbf, d, l);
                        k.set_params(&vec![l.ln(); d])?;
                        Ok(Box::new(k))
                    })
                    .collect::<Result<_>>()?
            }
        };
        let mut rng = agora_math::rng::stream(seed, &[0x5B61]);
        let mut init = VecDeque::new();
        let init_channels = match cfg.variant {
            SboGpVariant::SboGp => vec![Channel::Public, Channel::Private],
            v => v.channels(),
        };
        for _ in 0..cfg.init.max(2) {
            let x = crate::random_option(&space, &mut rng);
            for ch in &init_channels {
                init.push_back((x.clone(), *ch));
            }
        }
        Ok(SboGp {
            space,
            cfg,
            seed,
            welfare,
            kernels,
            public: Ratings::default(),
            private: Ratings::default(),
            init,
            todo: VecDeque::new(),
            current: None,
            surrogate: None,
            rounds: Vec::new(),
            counts: [0, 0],
            queries: 0,
            open: OpenQuery::default(),
            work: 0.0,
            fit_warm: None,
        })
    }

    /// SBO-GP's fitted model (`None` for the baselines and before the initial ratings).
    pub fn social_gp(&self) -> Option<&SocialGp> {
        match &self.surrogate {
            Some(Surrogate::Social(s)) => Some(s),
            _ => None,
        }
    }

    /// Rounds so far.
    pub fn rounds(&self) -> &[SboGpRound] {
        &self.rounds
    }

    /// Private and public group ratings answered.
    pub fn counts(&self) -> [usize; 2] {
        self.counts
    }

    /// Whether a query at the current proposal is still to come (a private follow-up or
    /// a second channel).
    pub fn round_open(&self) -> bool {
        !self.todo.is_empty()
    }

    fn agents(&self) -> Vec<String> {
        (0..self.cfg.agents).map(|i| format!("agent{i}")).collect()
    }

    fn point_of(&self, x: &[f64]) -> Point {
        crate::point_of(&self.space, x)
    }

    fn mat(rows: &[Vec<f64>]) -> Mat<f64> {
        let d = rows.first().map_or(0, |r| r.len());
        Mat::from_fn(rows.len(), d, |i, j| rows[i][j])
    }

    /// Refit the method's surrogate on all ratings so far (SBO-GP warm-started from the
    /// current fit).
    fn refit(&mut self) -> Result<()> {
        let warm = match &self.surrogate {
            Some(Surrogate::Social(s)) => Some(s.b().b.clone()),
            _ => None,
        };
        self.refit_from(warm)
    }

    /// Refit the surrogate, SBO-GP's from `warm`.
    fn refit_from(&mut self, warm: Option<Mat<f64>>) -> Result<()> {
        self.fit_warm = warm.as_ref().map(|b| {
            (0..b.nrows())
                .map(|i| (0..b.ncols()).map(|j| b[(i, j)]).collect())
                .collect()
        });
        let n = self.cfg.agents;
        let w = &self.welfare;
        let agg = |r: &Ratings| -> Mat<f64> {
            Mat::from_fn(r.y.len(), 1, |p, _| w.normalized_value(&r.y[p]))
        };
        let icm_of = |x: &[Vec<f64>], y: Mat<f64>, shrink: bool| -> Result<Surrogate> {
            let xm = Self::mat(x);
            let h = profile_fit(xm.as_ref(), y.as_ref(), &self.kernels, self.cfg.model.floor)?;
            let t = y.ncols();
            let corr = if shrink && y.nrows() > 1 {
                sample_correlation(y.as_ref(), 0.5)
            } else {
                Mat::identity(t, t)
            };
            let s: Vec<f64> = h.outputscale.iter().map(|v| v.sqrt()).collect();
            let c = Mat::from_fn(t, t, |i, j| s[i] * s[j] * corr[(i, j)]);
            Ok(Surrogate::Icm(Box::new(Icm::new(
                xm,
                y.as_ref(),
                self.kernels[h.kernel].clone(),
                c,
                &h.noise,
                &h.mean,
            )?)))
        };
        self.surrogate = Some(match self.cfg.variant {
            SboGpVariant::SboGp => {
                let xu = Self::mat(&self.private.x);
                let xu = if self.private.x.is_empty() {
                    Mat::zeros(0, self.space.dim())
                } else {
                    xu
                };
                Surrogate::Social(Box::new(SocialGp::fit(
                    Self::mat(&self.public.x),
                    Self::mat(&self.public.y).as_ref(),
                    xu.as_ref(),
                    Mat::from_fn(self.private.y.len(), n, |p, i| self.private.y[p][i]).as_ref(),
                    &self.kernels,
                    &self.cfg.model,
                    warm.as_ref().map(|b| b.as_ref()),
                )?))
            }
            SboGpVariant::GpUcbU => icm_of(&self.private.x, agg(&self.private), false)?,
            SboGpVariant::GpUcbV => icm_of(&self.public.x, agg(&self.public), false)?,
            SboGpVariant::MtGpUcbU => icm_of(&self.private.x, Self::mat(&self.private.y), true)?,
            SboGpVariant::MtGpUcbUv => {
                // Both channels are rated at the same options (isotopic): tasks u then v.
                let y = Mat::from_fn(self.private.y.len(), 2 * n, |p, j| {
                    if j < n {
                        self.private.y[p][j]
                    } else {
                        self.public.y[p][j - n]
                    }
                });
                icm_of(&self.private.x, y, true)?
            }
        });
        Ok(())
    }

    /// The acquisition at `xs` (one per row): the welfare UCB of the agents' utilities, or
    /// for a GP of the welfare itself (one task) its plain UCB.
    fn scores(&self, xs: &[Vec<f64>]) -> Result<Vec<f64>> {
        let xm = Self::mat(xs);
        let acq = WelfareUcb {
            welfare: &self.welfare,
            beta_sqrt: self.cfg.beta_sqrt,
            agents: self.cfg.agents,
        };
        match self
            .surrogate
            .as_ref()
            .ok_or_else(|| Error::State("no surrogate before the initial ratings".into()))?
        {
            Surrogate::Social(s) => acq.values(s.as_ref(), xm.as_ref()),
            Surrogate::Icm(g) if g.tasks() == 1 => {
                let (m, v) = g.predict(xm.as_ref())?;
                Ok((0..xs.len())
                    .map(|k| ucb(m[(k, 0)], v[(k, 0)], acq.beta_sqrt))
                    .collect())
            }
            Surrogate::Icm(g) => acq.values(g.as_ref(), xm.as_ref()),
        }
    }

    /// The next option: the acquisition's best over the pool, then over Gaussian
    /// perturbations of it (boxes).
    fn next_option(&self) -> Result<Vec<f64>> {
        let seed = derive_seed(self.seed, &[self.queries, 0x5B62]);
        let pool = crate::option_pool(&self.space, self.cfg.candidates, seed)?;
        let screen = |xs: &[Vec<f64>]| -> Result<Vec<Vec<f64>>> { Ok(vec![self.scores(xs)?]) };
        let project = |x: &[f64]| self.space.canonicalize(x);
        let local = match &self.space {
            Space::Box { .. } if self.cfg.local > 0 => Some(LocalSearch {
                count: self.cfg.local,
                sd: 0.03,
                rng: agora_math::rng::stream(self.seed, &[self.queries, 0x5B63]),
                project: &project,
            }),
            _ => None,
        };
        let (x, _) = maximize_screened(&pool, &screen, 1, None, local)?;
        Ok(x)
    }

    /// `(w_B, w_v)` at `x`: the parts of `u`'s variance due to `B` and to the public GP,
    /// summed over agents, square-rooted, relative to the mean prior standard deviation.
    fn widths(&self, x: &[f64]) -> Result<(f64, f64)> {
        let Some(Surrogate::Social(s)) = &self.surrogate else {
            return Ok((0.0, 0.0));
        };
        let p = s.predict(Self::mat(&[x.to_vec()]).as_ref())?;
        let n = self.cfg.agents;
        let c = s.public().task_cov();
        let prior = ((0..n).map(|i| c[(i, i)]).sum::<f64>() / n as f64)
            .sqrt()
            .max(1e-12);
        let wb = (0..n).map(|i| p.var_b[(0, i)]).sum::<f64>().sqrt() / prior;
        let wv = (0..n).map(|i| p.var_v[(0, i)]).sum::<f64>().sqrt() / prior;
        Ok((wb, wv))
    }

    fn graph(&self) -> Vec<f64> {
        match &self.surrogate {
            Some(Surrogate::Social(s)) => {
                let a = s.graph();
                (0..a.nrows())
                    .flat_map(|i| (0..a.ncols()).map(move |j| (i, j)))
                    .map(|(i, j)| a[(i, j)])
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// The rated option whose predicted welfare (posterior mean) is highest.
    pub fn recommendation(&self) -> Option<(Vec<f64>, f64)> {
        let xs: Vec<Vec<f64>> = self
            .public
            .x
            .iter()
            .chain(&self.private.x)
            .cloned()
            .collect();
        if xs.is_empty() || self.surrogate.is_none() {
            return None;
        }
        let xm = Self::mat(&xs);
        let n = self.cfg.agents;
        let vals: Vec<f64> = match self.surrogate.as_ref()? {
            Surrogate::Social(s) => {
                let p = s.predict(xm.as_ref()).ok()?;
                (0..xs.len())
                    .map(|k| {
                        let z: Vec<f64> = (0..n).map(|i| p.mean[(k, i)]).collect();
                        self.welfare.normalized_value(&z)
                    })
                    .collect()
            }
            Surrogate::Icm(g) => {
                let (m, _) = g.predict(xm.as_ref()).ok()?;
                (0..xs.len())
                    .map(|k| {
                        if g.tasks() == 1 {
                            m[(k, 0)]
                        } else {
                            let z: Vec<f64> = (0..n).map(|i| m[(k, i)]).collect();
                            self.welfare.normalized_value(&z)
                        }
                    })
                    .collect()
            }
        };
        vals.iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
            .map(|(k, v)| (xs[k].clone(), *v))
    }

    fn store(&mut self, x: Vec<f64>, ch: Channel, values: &[f64]) {
        let r = match ch {
            Channel::Public => {
                self.counts[1] += 1;
                &mut self.public
            }
            Channel::Private => {
                self.counts[0] += 1;
                &mut self.private
            }
        };
        r.x.push(x);
        r.y.push(values.to_vec());
    }
}

impl AskTell for SboGp {
    type Pending = (Vec<f64>, Channel);

    fn open_query(&mut self) -> &mut OpenQuery<(Vec<f64>, Channel)> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, (Vec<f64>, Channel))> {
        let (x, ch) = if let Some((x, ch)) = self.init.front().cloned() {
            (x, ch)
        } else if let (Some(ch), Some(x)) = (self.todo.front().copied(), self.current.clone()) {
            (x, ch)
        } else {
            let t0 = Instant::now();
            let x = self.next_option()?;
            self.work = t0.elapsed().as_secs_f64();
            self.todo = self.cfg.variant.channels().into();
            self.current = Some(x.clone());
            let ch = self.todo[0];
            (x, ch)
        };
        let q = Query {
            id: self.queries,
            kind: QueryKind::GroupRate {
                point: self.point_of(&x),
                channel: ch,
                agents: self.agents(),
            },
        };
        Ok((q, (x, ch)))
    }

    fn check(&self, _: &Query, _: &(Vec<f64>, Channel), answer: &Answer) -> Result<()> {
        match &answer.kind {
            AnswerKind::Values { .. } => Ok(()),
            _ => Err(Error::invalid(
                "answer",
                "a group rating needs `values` (one per agent)",
            )),
        }
    }

    fn record(&mut self, _: &Query, open: &(Vec<f64>, Channel), answer: &Answer) -> Result<()> {
        let AnswerKind::Values { values } = &answer.kind else {
            return Err(Error::invalid(
                "answer",
                "a group rating needs `values` (one per agent)",
            ));
        };
        let (x, ch) = open.clone();
        let t0 = Instant::now();
        self.store(x.clone(), ch, values);
        self.queries += 1;
        if !self.init.is_empty() {
            self.init.pop_front();
            if self.init.is_empty() {
                self.refit()?;
            }
            return Ok(());
        }
        self.todo.pop_front();
        if !self.todo.is_empty() {
            return Ok(());
        }
        self.refit()?;
        if self.cfg.variant == SboGpVariant::SboGp && ch == Channel::Public {
            let t = (self.rounds.len() + 1) as f64;
            let (wb, wv) = self.widths(&x)?;
            let private = wb >= t.powf(-self.cfg.q).max(wv);
            if private {
                self.todo.push_back(Channel::Private);
            }
            self.rounds.push(SboGpRound {
                x,
                private,
                widths: (wb, wv),
                graph: self.graph(),
                seconds: self.work + t0.elapsed().as_secs_f64(),
            });
        } else if self.cfg.variant == SboGpVariant::SboGp {
            // The private follow-up of the last round.
            let g = self.graph();
            if let Some(r) = self.rounds.last_mut() {
                r.seconds += t0.elapsed().as_secs_f64();
                r.graph = g;
            }
        } else {
            self.rounds.push(SboGpRound {
                x,
                private: self.cfg.variant.channels().contains(&Channel::Private),
                widths: (0.0, 0.0),
                graph: Vec::new(),
                seconds: self.work + t0.elapsed().as_secs_f64(),
            });
        }
        if self.todo.is_empty() {
            self.current = None;
        }
        Ok(())
    }
}

impl Strategy for SboGp {
    fn name(&self) -> String {
        self.cfg.variant.name().to_string()
    }

    fn ask(&mut self) -> Result<Query> {
        open::ask(self)
    }

    fn tell(&mut self, answer: &Answer) -> Result<()> {
        open::tell(self, answer)
    }

    fn recommend(&self) -> Option<(Point, f64)> {
        self.recommendation().map(|(x, v)| (self.point_of(&x), v))
    }

    fn n_answered(&self) -> usize {
        self.queries as usize
    }

    fn snapshot(&self) -> Result<Option<serde_json::Value>> {
        let st = SboGpState {
            public: self.public.clone(),
            private: self.private.clone(),
            init_left: self.init.len(),
            todo: self.todo.iter().copied().collect(),
            current: self.current.clone(),
            fitted: self.surrogate.is_some(),
            fit_warm: self.fit_warm.clone(),
            rounds: self.rounds.clone(),
            counts: self.counts,
            queries: self.queries,
            open: self.open.entries().to_vec(),
            work: self.work,
        };
        crate::snapshot::write(&self.name(), SBO_GP_STATE_FORMAT, &st)
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        let st: SboGpState = crate::snapshot::read(&self.name(), SBO_GP_STATE_FORMAT, state)?;
        if self.queries != 0 || st.init_left > self.init.len() {
            return Err(crate::snapshot::not_fresh());
        }
        let (d, n) = (self.space.dim(), self.cfg.agents);
        for r in [&st.public, &st.private] {
            if r.x.len() != r.y.len()
                || r.x.iter().any(|x| x.len() != d)
                || r.y.iter().any(|y| y.len() != n)
            {
                return Err(Error::invalid(
                    "snapshot",
                    "its ratings do not fit the space and the group",
                ));
            }
        }
        let mut next = self.clone();
        let used = next.init.len() - st.init_left;
        next.init.drain(..used);
        next.public = st.public;
        next.private = st.private;
        next.todo = st.todo.into_iter().collect();
        next.current = st.current;
        next.rounds = st.rounds;
        next.counts = st.counts;
        next.queries = st.queries;
        next.open = OpenQuery::from_entries(st.open);
        next.work = st.work;
        if st.fitted {
            let warm = match &st.fit_warm {
                Some(rows) => {
                    let c = rows.first().map_or(0, Vec::len);
                    if rows.iter().any(|r| r.len() != c) {
                        return Err(Error::invalid("snapshot.fit_warm", "ragged rows"));
                    }
                    Some(Mat::from_fn(rows.len(), c, |i, j| rows[i][j]))
                }
                None => None,
            };
            next.refit_from(warm)?;
        }
        *self = next;
        Ok(())
    }

    /// The welfare's mean and sd (module doc, Beliefs); `None` before the first fit.
    fn belief(&self, points: &[Vec<f64>]) -> Option<Vec<(f64, f64)>> {
        let xs = agora_gp::rows_to_mat("points", points, self.space.dim()).ok()?;
        let n = self.cfg.agents;
        match self.surrogate.as_ref()? {
            Surrogate::Social(s) => welfare_belief(s.as_ref(), &self.welfare, n, xs.as_ref()).ok(),
            Surrogate::Icm(g) if g.tasks() == 1 => {
                let (m, v) = g.predict(xs.as_ref()).ok()?;
                Some(
                    (0..points.len())
                        .map(|k| (m[(k, 0)], v[(k, 0)].sqrt()))
                        .collect(),
                )
            }
            Surrogate::Icm(g) => welfare_belief(g.as_ref(), &self.welfare, n, xs.as_ref()).ok(),
        }
    }

    /// Each agent's utility mean and sd (module doc, Beliefs); `None` before the first fit
    /// and for GP-UCB.
    fn agent_beliefs(&self, points: &[Vec<f64>]) -> Option<Vec<Vec<(f64, f64)>>> {
        let xs = agora_gp::rows_to_mat("points", points, self.space.dim()).ok()?;
        let n = self.cfg.agents;
        let (m, v) = match self.surrogate.as_ref()? {
            Surrogate::Social(s) => s.utility_moments(xs.as_ref()).ok()?,
            Surrogate::Icm(g) if g.tasks() == 1 => return None,
            Surrogate::Icm(g) => g.utility_moments(xs.as_ref()).ok()?,
        };
        Some(
            (0..points.len())
                .map(|k| (0..n).map(|i| (m[(k, i)], v[(k, i)].sqrt())).collect())
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The toy's utilities (Eqs. 156–157).
    fn toy_u(x: f64) -> [f64; 2] {
        let g = |x: f64, m: f64, s: f64| {
            (-(x - m) * (x - m) / (2.0 * s * s)).exp() / (s * (2.0 * std::f64::consts::PI).sqrt())
        };
        [
            0.3 * g(x, 0.35, 0.05) + 1.2 * g(x, 0.45, 0.18) + 0.8 * g(x, 0.75, 0.10),
            0.5 * g(x, 0.25, 0.10) + 0.8 * g(x, 0.65, 0.15) + 0.4 * g(x, 0.85, 0.05),
        ]
    }

    /// The toy's utilities and graph, rated with noise sd `sd`.
    fn toy_answer_sd(q: &Query, rng: &mut agora_math::rng::Rng, sd: f64) -> Answer {
        use rand_distr::Distribution;
        let QueryKind::GroupRate { point, channel, .. } = &q.kind else {
            panic!("group ratings only")
        };
        let Point::Unit(x) = point else { panic!("box") };
        let u = toy_u(x[0]);
        let f = match channel {
            Channel::Private => u.to_vec(),
            Channel::Public => vec![0.9 * u[0] + 0.1 * u[1], 0.6 * u[0] + 0.4 * u[1]],
        };
        let values = f
            .iter()
            .map(|v| {
                let e: f64 = rand_distr::StandardNormal.sample(rng);
                v + sd * e
            })
            .collect();
        Answer {
            query_id: q.id,
            kind: AnswerKind::Values { values },
        }
    }

    /// [`toy_answer_sd`] with noise 0.1.
    fn toy_answer(q: &Query, rng: &mut agora_math::rng::Rng) -> Answer {
        toy_answer_sd(q, rng, 0.1)
    }

    fn run(variant: SboGpVariant, seed: u64, rounds: usize) -> SboGp {
        let space = Space::reals(&[(0.0, 1.0)]).unwrap();
        let mut s = SboGp::new(space, SboGpConfig::new(2, 1.0, variant), seed).unwrap();
        let mut rng = agora_math::rng::stream(seed, &[77]);
        while s.rounds().len() < rounds || s.round_open() {
            let q = s.ask().unwrap();
            assert_eq!(s.ask().unwrap(), q, "asking twice returns the open query");
            s.tell(&toy_answer(&q, &mut rng)).unwrap();
        }
        s
    }

    #[test]
    fn same_seed_same_proposals_and_channels_per_method() {
        for v in SboGpVariant::all() {
            let (a, b) = (run(v, 3, 6), run(v, 3, 6));
            let xa: Vec<_> = a.rounds().iter().map(|r| r.x.clone()).collect();
            let xb: Vec<_> = b.rounds().iter().map(|r| r.x.clone()).collect();
            assert_eq!(xa, xb, "{}", v.name());
            let [private, public] = a.counts();
            match v {
                SboGpVariant::GpUcbU | SboGpVariant::MtGpUcbU => {
                    assert_eq!((private, public), (11, 0))
                }
                SboGpVariant::GpUcbV => assert_eq!((private, public), (0, 11)),
                SboGpVariant::MtGpUcbUv => assert_eq!((private, public), (11, 11)),
                SboGpVariant::SboGp => {
                    assert_eq!(public, 11);
                    assert!((5..=11).contains(&private), "{private}");
                }
            }
        }
    }

    #[test]
    fn sbo_gp_learns_the_graph_and_stops_asking_privately() {
        let s = run(SboGpVariant::SboGp, 1, 40);
        let [private, public] = s.counts();
        assert_eq!(public, 45);
        // Private ratings stop well before one per round.
        assert!(private <= 15, "{private}");
        let last = s.rounds().last().unwrap();
        let truth = [0.9, 0.1, 0.6, 0.4];
        let err: f64 = last
            .graph
            .iter()
            .zip(truth)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt();
        assert!(err < 0.25, "{:?}", last.graph);
        // The recommendation is near one of the toy's two welfare peaks, and the best
        // proposal reaches the global one (x* ≈ 0.823).
        let (x, _) = s.recommendation().unwrap();
        assert!(
            (x[0] - 0.823).abs() < 0.08 || (x[0] - 0.36).abs() < 0.05,
            "{x:?}"
        );
        assert!(
            s.rounds().iter().any(|r| (r.x[0] - 0.823).abs() < 0.05),
            "never near x*"
        );
    }

    /// On the toy with nearly noiseless ratings (sd 0.01): no belief before the first fit;
    /// then at the options rated in 20 rounds the welfare belief (and each agent's, where
    /// the model has agents) is within 3 sd + 0.05 of the truth, and the welfare's sd at
    /// each proposal falls once it is rated (on average to below 0.8 of its value before).
    #[test]
    fn beliefs_match_the_truth_at_rated_options_and_their_sd_shrinks_there() {
        let space = Space::reals(&[(0.0, 1.0)]).unwrap();
        for v in [
            SboGpVariant::SboGp,
            SboGpVariant::GpUcbU,
            SboGpVariant::MtGpUcbU,
            SboGpVariant::MtGpUcbUv,
        ] {
            let mut s = SboGp::new(space.clone(), SboGpConfig::new(2, 1.0, v), 4).unwrap();
            let probe = vec![vec![0.5]];
            assert!(s.belief(&probe).is_none() && s.agent_beliefs(&probe).is_none());
            let mut rng = agora_math::rng::stream(4, &[77]);
            let mut ratios = Vec::new();
            while s.rounds().len() < 20 || s.round_open() {
                let q = s.ask().unwrap();
                let QueryKind::GroupRate {
                    point: Point::Unit(x),
                    ..
                } = &q.kind
                else {
                    panic!("group ratings on a box")
                };
                let x = vec![x.clone()];
                let before = s.belief(&x);
                s.tell(&toy_answer_sd(&q, &mut rng, 0.01)).unwrap();
                if let (Some(b), false) = (before, s.round_open()) {
                    ratios.push(s.belief(&x).unwrap()[0].1 / b[0].1);
                }
            }
            let rated: Vec<Vec<f64>> = s.rounds().iter().map(|r| r.x.clone()).collect();
            let w = s.belief(&rated).unwrap();
            let agents = s.agent_beliefs(&rated);
            assert_eq!(agents.is_some(), v != SboGpVariant::GpUcbU, "{}", v.name());
            for (k, x) in rated.iter().enumerate() {
                let u = toy_u(x[0]);
                let truth = 0.5 * (u[0] + u[1]);
                let (m, sd) = w[k];
                assert!(
                    (m - truth).abs() < 0.05 + 3.0 * sd,
                    "{} {x:?}: {m} ± {sd} vs {truth}",
                    v.name()
                );
                if let Some(a) = &agents {
                    for i in 0..2 {
                        let (m, sd) = a[k][i];
                        assert!(
                            (m - u[i]).abs() < 0.05 + 3.0 * sd,
                            "{} agent {i} {x:?}",
                            v.name()
                        );
                    }
                }
            }
            let mean_ratio = ratios.iter().sum::<f64>() / ratios.len() as f64;
            assert!(
                ratios.len() >= 20 && mean_ratio < 0.8,
                "{} {ratios:?}",
                v.name()
            );
        }
    }

    #[test]
    fn bad_settings_and_answers_are_named() {
        let space = Space::reals(&[(0.0, 1.0)]).unwrap();
        let mut c = SboGpConfig::new(2, 1.0, SboGpVariant::SboGp);
        c.q = 1.0;
        let e = SboGp::new(space.clone(), c, 0).unwrap_err();
        assert!(e.to_string().contains("q"), "{e}");
        let mut c = SboGpConfig::new(2, 1.0, SboGpVariant::SboGp);
        c.lengthscales = vec![0.1, -1.0];
        let e = SboGp::new(space.clone(), c, 0).unwrap_err();
        assert!(e.to_string().contains("lengthscales"), "{e}");
        let mut s = SboGp::new(space, SboGpConfig::new(2, 1.0, SboGpVariant::SboGp), 0).unwrap();
        let q = s.ask().unwrap();
        let bad = Answer {
            query_id: q.id,
            kind: AnswerKind::Values {
                values: vec![1.0, f64::NAN],
            },
        };
        let e = s.tell(&bad).unwrap_err();
        assert!(e.to_string().contains("values[1]"), "{e}");
        let short = Answer {
            query_id: q.id,
            kind: AnswerKind::Values { values: vec![1.0] },
        };
        assert!(s.tell(&short).is_err());
        // Nothing was stored: the same query is still open.
        assert_eq!(s.ask().unwrap(), q);
        assert_eq!(s.counts(), [0, 0]);
    }
}
