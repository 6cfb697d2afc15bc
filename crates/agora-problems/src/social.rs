//! Simulated groups for Social BO (../shared/notes/social-bo.md §4): agents with known
//! utilities over the unit cube, a social graph `A`, and seeded Bradley–Terry votes on a
//! public channel (`v = A u`) and a private one (`u`).
//!
//! Tasks:
//! - `toy` (n = 2, d = 1, Eqs. 156–157, utilitarian): the influencer–follower graph
//!   `[[0.9, 0.1], [0.6, 0.4]]`; x* ≈ 0.823, the corrupted optimum ≈ 0.354;
//! - robustness variants of the toy (the paper names them but omits the matrices; agora's
//!   choices): `toy-wishy-washy` `[[0.7, 0.3], [0.7, 0.3]]` (singular: both agents vote
//!   publicly with the same weights, so A cannot be inverted), `toy-altruist`
//!   `[[0.2, 0.8], [0.1, 0.9]]` (agent 0 votes publicly mostly for agent 1's interest), and
//!   ρ ∈ {0.5, 1e−10} (`toy-rho0.5`, `toy-egalitarian`) with the influencer–follower graph.
//!   The graphs' column sums differ from 1, so the public vote's utilitarian optimum is not
//!   the true one (the first versions, `[[0.5, 0.5], [0.5, 0.5]]` and `[[0.1, 0.9],
//!   [0.9, 0.1]]`, had column sums of 1 and are kept as the ablations `-colsum1`);
//! - every task with ρ < 1 anchors each agent's zero at a status quo
//!   ([`SocialTask::status_quo`]): votes fix utilities only up to constants, which such a
//!   welfare depends on. The `-unanchored` ablations drop it;
//! - `thermal` (n = 3, H.2.1): temperature 15–35 °C and air speed 0.3–1.5 m/s; agent `i`'s
//!   utility is `−|PMV_i|` (ISO 7730, [`crate::pmv`]) with `tr = tdb`, RH 50 %, the agents'
//!   met/clo of [`crate::pmv::THERMAL_AGENTS`]; graph `[[0.8, 0.1, 0.1], [0.6, 0.1, 0.3],
//!   [0.4, 0.3, 0.3]]`, ρ = 0.1;
//! - `hotel` (n = 3, H.2.3): the paper's TripAdvisor data are not available, so agora builds
//!   a synthetic set of 300 hotels ([`hotel_options`]): price log-normal (median 150),
//!   review count log-normal (median 90), and a review rank driven by a latent quality that
//!   correlates with both (corr ≈ 0.4 with log price, ≈ 0.5 with log reviews). Features are
//!   scaled to [0, 1] (price and reviews on log scale; rank reversed so 1 is the best hotel).
//!   Utilities as printed, times 3 so that votes carry information: luxury `0.5 p + 0.5 R`,
//!   budget `−0.5 p + r + 0.5 r` (the paper's formula, sic: `−0.5 p + 1.5 r`), review `R`;
//!   graph `[[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.1, 0.7]]`, ρ = 0.5;
//! - `energy` (n = 3, H.2.4): the METER data are not available, so agora builds a synthetic
//!   2-D embedding of smart meters in which each firm holds its own data: the large
//!   corporation 40 meters spread over the square, the niche start-up 6 meters clustered in
//!   one corner, the joint venture 14 meters in two other clusters. Firm `i`'s utility at `x`
//!   is 3 × the predictive variance of its own GP (RBF, lengthscale 0.15, noise 1e−4) at `x`
//!   (information gain); graph as thermal comfort, ρ = 0.5;
//! - `team` (n = 4, H.2.2): teams of 8 out of 11 candidates (165 options). Each candidate has
//!   a skill mix over 4 skills (Dirichlet(0.5)), and pairs have compatibilities from
//!   row-wise Dirichlet(1) draws, symmetrized. The four utilities (the paper's, with signs
//!   chosen so larger is better): skill diversity (entropy of the team's mean skill mix),
//!   mean compatibility, minimum compatibility, and flatness (minus the variance of the
//!   compatibilities), each standardized over the 165 teams. Teams are nodes of a supergraph
//!   with Jaccard-index edge weights; the kernel is the graph diffusion kernel
//!   `exp(−τ L)` of its normalized Laplacian (τ = 2), scaled to unit diagonal
//!   ([`SocialTask::gram`]). Graph `[[0.7, 0.1, 0.1, 0.1], [0.4, 0.4, 0.1, 0.1],
//!   [0.3, 0.2, 0.3, 0.2], [0.3, 0.2, 0.2, 0.3]]`, ρ = 0.1. Options are candidate indices.

use agora_core::{Error, Result};
use agora_math::rng::stream;
use agora_math::welfare::Welfare;
use rand::RngExt;

mod group;
pub use group::SocialGroup;

/// Per-agent utilities at a unit-cube point (an error when the simulator fails there).
pub type UtilityFn = dyn Fn(&[f64]) -> Result<Vec<f64>> + Send + Sync;

/// A group decision task with known ground truth.
pub struct SocialTask {
    /// Name.
    pub name: String,
    /// Agents `n`.
    pub agents: usize,
    /// Input dimension.
    pub dim: usize,
    /// The social graph (rows).
    pub graph: Vec<Vec<f64>>,
    /// Gini `ρ` of the facilitator's welfare.
    pub rho: f64,
    /// True utilities (read them with [`SocialTask::utilities_at`]).
    pub utilities: Box<UtilityFn>,
    /// A finite option set (unit-cube features), or `None` for the whole cube.
    pub options: Option<Vec<Vec<f64>>>,
    /// Names of the inputs in user units, with their ranges (for reports).
    pub inputs: Vec<(String, f64, f64)>,
    /// A precomputed kernel over the options (then each option's feature is its index).
    pub gram: Option<Vec<Vec<f64>>>,
    /// The status-quo option (unit cube, or a candidate's index as its one feature when the
    /// task has a Gram) at which every agent's utility is 0, known to the methods too:
    /// votes fix a utility only up to a constant, so a welfare with `ρ < 1` is identifiable
    /// only with a shared zero. `None` for the utilitarian tasks (ρ = 1) and the
    /// unanchored ablations.
    pub status_quo: Option<Vec<f64>>,
    /// What the status quo is, in the task's words (for reports).
    pub status_quo_label: String,
}

impl std::fmt::Debug for SocialTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocialTask")
            .field("name", &self.name)
            .field("agents", &self.agents)
            .field("graph", &self.graph)
            .field("rho", &self.rho)
            .field("status_quo", &self.status_quo)
            .finish()
    }
}

fn gauss(x: f64, mu: f64, s: f64) -> f64 {
    (-(x - mu) * (x - mu) / (2.0 * s * s)).exp() / (s * (2.0 * std::f64::consts::PI).sqrt())
}

/// The toy utilities (Eqs. 156–157; the third argument of N is a standard deviation).
pub fn toy_utilities(x: f64) -> [f64; 2] {
    [
        0.3 * gauss(x, 0.35, 0.05) + 1.2 * gauss(x, 0.45, 0.18) + 0.8 * gauss(x, 0.75, 0.10),
        0.5 * gauss(x, 0.25, 0.10) + 0.8 * gauss(x, 0.65, 0.15) + 0.4 * gauss(x, 0.85, 0.05),
    ]
}

/// Influencer–follower graph of the toy.
pub const TOY_GRAPH: [[f64; 2]; 2] = [[0.9, 0.1], [0.6, 0.4]];

/// The toy's status quo for `ρ < 1`: the option the group holds now, `x = 0.1`.
pub const TOY_STATUS_QUO: f64 = 0.1;

/// Thermal comfort's status quo: a hot room, 30 °C with still air (0.3 m/s), which every
/// agent would change. (At a comfortable 22 °C the agents disagree on the direction, and
/// the egalitarian optimum of the utilities relative to it is the status quo itself.)
pub const THERMAL_STATUS_QUO: [f64; 2] = [0.75, 0.0];

/// A task before its utilities are anchored.
struct Raw {
    agents: usize,
    dim: usize,
    graph: Vec<Vec<f64>>,
    rho: f64,
    utilities: Box<UtilityFn>,
    options: Option<Vec<Vec<f64>>>,
    inputs: Vec<(String, f64, f64)>,
    gram: Option<Vec<Vec<f64>>>,
    /// The status quo this task is anchored at (unless an `-unanchored` ablation), and its
    /// description.
    status_quo: Option<(Vec<f64>, String)>,
}

fn rows<const N: usize>(g: [[f64; N]; N]) -> Vec<Vec<f64>> {
    g.iter().map(|r| r.to_vec()).collect()
}

impl SocialTask {
    /// A named task ([`SocialTask::names`]) or ablation ([`SocialTask::ablation_names`]).
    pub fn by_name(name: &str) -> Result<SocialTask> {
        let (base, anchored) = match name.strip_suffix("-unanchored") {
            Some(b) => (b, false),
            None => (name, true),
        };
        let toy = |graph: [[f64; 2]; 2], rho: f64| Raw {
            agents: 2,
            dim: 1,
            graph: rows(graph),
            rho,
            utilities: Box::new(|x: &[f64]| Ok(toy_utilities(x[0]).to_vec())),
            options: None,
            inputs: vec![("x".into(), 0.0, 1.0)],
            gram: None,
            status_quo: (rho < 1.0).then(|| {
                (
                    vec![TOY_STATUS_QUO],
                    format!("x = {TOY_STATUS_QUO}, the option the group holds now"),
                )
            }),
        };
        let raw = match base {
            "toy" => toy(TOY_GRAPH, 1.0),
            // Both agents vote publicly with the same weights (a singular A) whose columns
            // do not sum to 1, so the public vote's utilitarian optimum is not the true one.
            "toy-wishy-washy" => toy([[0.7, 0.3], [0.7, 0.3]], 1.0),
            // Agent 0, the altruist, votes publicly mostly for agent 1's interest.
            "toy-altruist" => toy([[0.2, 0.8], [0.1, 0.9]], 1.0),
            // The first versions of the two variants: their column sums of 1 make the public
            // utilitarian welfare equal the true one, so groupthink costs nothing there.
            "toy-wishy-washy-colsum1" => toy([[0.5, 0.5], [0.5, 0.5]], 1.0),
            "toy-altruist-colsum1" => toy([[0.1, 0.9], [0.9, 0.1]], 1.0),
            "toy-rho0.5" => toy(TOY_GRAPH, 0.5),
            "toy-egalitarian" => toy(TOY_GRAPH, 1e-10),
            "hotel" => hotel_task(),
            "energy" => energy_task()?,
            "team" => team_task()?,
            "thermal" => thermal_task(),
            _ => {
                return Err(Error::invalid(
                    "task",
                    format!(
                        "unknown social task {name:?}; known: {}; ablations: {}",
                        Self::names().join(", "),
                        Self::ablation_names().join(", ")
                    ),
                ));
            }
        };
        if !anchored && raw.status_quo.is_none() {
            return Err(Error::invalid(
                "task",
                format!(
                    "{name:?}: {base:?} has no status quo to drop (ρ = 1); ablations: {}",
                    Self::ablation_names().join(", ")
                ),
            ));
        }
        let (status_quo, status_quo_label, utilities) = match raw.status_quo {
            Some((x0, label)) if anchored => {
                let at0 = (raw.utilities)(&x0)?;
                let raw_u = raw.utilities;
                let u: Box<UtilityFn> = Box::new(move |x: &[f64]| {
                    Ok(raw_u(x)?.iter().zip(&at0).map(|(a, b)| a - b).collect())
                });
                (Some(x0), label, u)
            }
            _ => (None, String::new(), raw.utilities),
        };
        Ok(SocialTask {
            name: name.to_string(),
            agents: raw.agents,
            dim: raw.dim,
            graph: raw.graph,
            rho: raw.rho,
            utilities,
            options: raw.options,
            inputs: raw.inputs,
            gram: raw.gram,
            status_quo,
            status_quo_label,
        })
    }
}

/// Hotel choice (H.2.3; synthetic options, see the module docs). Status quo: the hotel with
/// the fewest reviews, booked provisionally.
fn hotel_task() -> Raw {
    let opts = hotel_options();
    let sq = opts
        .iter()
        .min_by(|a, b| a[1].total_cmp(&b[1]))
        .cloned()
        .unwrap_or_else(|| vec![0.5; 3]);
    Raw {
        agents: 3,
        dim: 3,
        graph: rows([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.1, 0.7]]),
        rho: 0.5,
        utilities: Box::new(|x: &[f64]| {
            let (p, r, rank) = (x[0], x[1], x[2]);
            Ok(vec![
                3.0 * (0.5 * p + 0.5 * rank),
                3.0 * (-0.5 * p + r + 0.5 * r),
                3.0 * rank,
            ])
        }),
        options: Some(opts),
        inputs: vec![
            ("log price (scaled)".into(), 0.0, 1.0),
            ("log review count (scaled)".into(), 0.0, 1.0),
            ("review rank (scaled, 1 = best)".into(), 0.0, 1.0),
        ],
        gram: None,
        status_quo: Some((
            sq,
            "the hotel with the fewest reviews, booked provisionally".into(),
        )),
    }
}

/// Energy trading (H.2.4; synthetic firms, see the module docs). Status quo: the centre of
/// the meter embedding, (0.5, 0.5).
fn energy_task() -> Result<Raw> {
    let firms = energy_firms()?;
    Ok(Raw {
        agents: 3,
        dim: 2,
        graph: rows([[0.8, 0.1, 0.1], [0.6, 0.1, 0.3], [0.4, 0.3, 0.3]]),
        rho: 0.5,
        utilities: Box::new(move |x: &[f64]| {
            Ok(firms.iter().map(|f| 3.0 * f.variance(x)).collect())
        }),
        options: None,
        inputs: vec![
            ("embedding 1".into(), 0.0, 1.0),
            ("embedding 2".into(), 0.0, 1.0),
        ],
        gram: None,
        status_quo: Some((
            vec![0.5, 0.5],
            "the meters at the centre of the embedding, (0.5, 0.5), traded now".into(),
        )),
    })
}

/// Team formation (H.2.2; see the module docs). Status quo: team 50, the current team.
fn team_task() -> Result<Raw> {
    let (utilities, gram) = team_formation()?;
    let options: Vec<Vec<f64>> = (0..utilities.len()).map(|i| vec![i as f64]).collect();
    Ok(Raw {
        agents: 4,
        dim: 1,
        graph: rows([
            [0.7, 0.1, 0.1, 0.1],
            [0.4, 0.4, 0.1, 0.1],
            [0.3, 0.2, 0.3, 0.2],
            [0.3, 0.2, 0.2, 0.3],
        ]),
        rho: 0.1,
        utilities: Box::new(move |x: &[f64]| {
            let i = (x[0].max(0.0).round() as usize).min(utilities.len() - 1);
            Ok(utilities[i].clone())
        }),
        options: Some(options),
        inputs: vec![("team index".into(), 0.0, 164.0)],
        gram: Some(gram),
        status_quo: Some((vec![50.0], "team 50, the team as it is now".into())),
    })
}

/// Thermal comfort (H.2.1). Status quo: a hot room ([`THERMAL_STATUS_QUO`]).
fn thermal_task() -> Raw {
    Raw {
        agents: 3,
        dim: 2,
        graph: rows([[0.8, 0.1, 0.1], [0.6, 0.1, 0.3], [0.4, 0.3, 0.3]]),
        rho: 0.1,
        utilities: Box::new(|x: &[f64]| {
            let (t, v) = (15.0 + 20.0 * x[0], 0.3 + 1.2 * x[1]);
            crate::pmv::THERMAL_AGENTS
                .iter()
                .map(|a| crate::pmv::thermal_utility(a, t, v))
                .collect()
        }),
        options: None,
        inputs: vec![
            ("temperature (°C)".into(), 15.0, 35.0),
            ("air speed (m/s)".into(), 0.3, 1.5),
        ],
        gram: None,
        status_quo: Some((
            THERMAL_STATUS_QUO.to_vec(),
            "a hot room, 30 °C with still air (0.3 m/s)".into(),
        )),
    }
}

impl SocialTask {
    /// The task's options as a space: its finite option set (candidates named by their
    /// index), or the unit cube.
    pub fn space(&self) -> Result<agora_core::Space> {
        match &self.options {
            Some(opts) => Ok(agora_core::Space::Candidates {
                names: (0..opts.len()).map(|i| i.to_string()).collect(),
                features: opts.clone(),
            }),
            None => agora_core::Space::reals(&vec![(0.0, 1.0); self.dim]),
        }
    }

    /// The tasks of the report: each identifiable (utilitarian, or anchored at a status
    /// quo) and with a public-vote optimum that is not the true one.
    pub fn names() -> Vec<&'static str> {
        vec![
            "toy",
            "toy-wishy-washy",
            "toy-altruist",
            "toy-rho0.5",
            "toy-egalitarian",
            "thermal",
            "hotel",
            "energy",
            "team",
        ]
    }

    /// Ablations, kept to show what the report's tasks fix: the first wishy-washy and
    /// altruist graphs (column sums of 1: the public vote's utilitarian optimum is the true
    /// one) and the `ρ < 1` tasks without a status quo (each utility identified only up to a
    /// constant).
    pub fn ablation_names() -> Vec<&'static str> {
        vec![
            "toy-wishy-washy-colsum1",
            "toy-altruist-colsum1",
            "toy-rho0.5-unanchored",
            "toy-egalitarian-unanchored",
            "thermal-unanchored",
            "hotel-unanchored",
            "energy-unanchored",
            "team-unanchored",
        ]
    }

    /// The facilitator's welfare rule.
    pub fn welfare(&self) -> Welfare {
        Welfare::Gini { rho: self.rho }
    }

    /// The true utilities at `x`; an error names the point where the simulator fails.
    pub fn utilities_at(&self, x: &[f64]) -> Result<Vec<f64>> {
        if x.len() != self.dim {
            return Err(Error::dim("x", self.dim, x.len()));
        }
        agora_core::check_finite_slice("x", x)?;
        (self.utilities)(x).map_err(|e| {
            Error::invalid(
                "x",
                format!("task {:?}: no utilities at {x:?}: {e}", self.name),
            )
        })
    }

    /// Welfare of the true utilities at `x` (normalized weights).
    pub fn welfare_at(&self, x: &[f64]) -> Result<f64> {
        Ok(self.welfare().normalized_value(&self.utilities_at(x)?))
    }

    /// Public utilities `A u(x)`.
    pub fn public_utilities(&self, x: &[f64]) -> Result<Vec<f64>> {
        let u = self.utilities_at(x)?;
        Ok(self
            .graph
            .iter()
            .map(|r| r.iter().zip(&u).map(|(a, b)| a * b).sum())
            .collect())
    }

    /// The optimum `(x*, S*)`: over the option set, or a dense grid (2001 points in 1-D,
    /// 201² in 2-D) refined by golden-section steps per coordinate.
    pub fn optimum(&self) -> Result<(Vec<f64>, f64)> {
        self.argmax(&|x| self.welfare_at(x))
    }

    /// The optimum of the welfare of the *public* utilities (what a show of hands finds).
    pub fn corrupted_optimum(&self) -> Result<(Vec<f64>, f64)> {
        self.argmax(&|x| Ok(self.welfare().normalized_value(&self.public_utilities(x)?)))
    }

    /// Regret `S* − S(x̃*)` of the public-vote optimum: what groupthink costs on this task
    /// (0 when the public welfare has the true optimum).
    pub fn public_optimum_regret(&self) -> Result<f64> {
        let s_star = self.optimum()?.1;
        let (xc, _) = self.corrupted_optimum()?;
        Ok((s_star - self.welfare_at(&xc)?).max(0.0))
    }

    /// Regret of an oracle that knows every agent's exact utility differences
    /// `u(x, i) − u(x′, i)` and fixes each utility's constant as a model must: at the status
    /// quo (`u(x₀, i) = 0`) when the task has one, otherwise by the zero-mean convention
    /// (each utility's mean over the options, or the grid, is 0). Near 0 when the task is
    /// identifiable from votes; on an unanchored task with `ρ < 1` it is the floor every
    /// vote-based method pays whatever it learns.
    pub fn difference_oracle_regret(&self) -> Result<f64> {
        let s_star = self.optimum()?.1;
        let shift = match &self.status_quo {
            Some(x0) => self.utilities_at(x0)?,
            None => {
                let pts = self.grid_points(101);
                let mut mean = vec![0.0; self.agents];
                for x in &pts {
                    for (m, u) in mean.iter_mut().zip(self.utilities_at(x)?) {
                        *m += u / pts.len() as f64;
                    }
                }
                mean
            }
        };
        let (x, _) = self.argmax(&|x| {
            let u: Vec<f64> = self
                .utilities_at(x)?
                .iter()
                .zip(&shift)
                .map(|(a, b)| a - b)
                .collect();
            Ok(self.welfare().normalized_value(&u))
        })?;
        Ok((s_star - self.welfare_at(&x)?).max(0.0))
    }

    /// The options, or a grid of `per` points per axis over the cube (at most 101² points).
    fn grid_points(&self, per: usize) -> Vec<Vec<f64>> {
        if let Some(opts) = &self.options {
            return opts.clone();
        }
        let per = if self.dim > 2 { 11 } else { per };
        let total = per.pow(self.dim as u32);
        (0..total)
            .map(|k| {
                let mut r = k;
                (0..self.dim)
                    .map(|_| {
                        let v = (r % per) as f64 / (per - 1) as f64;
                        r /= per;
                        v
                    })
                    .collect()
            })
            .collect()
    }

    fn argmax(&self, f: &dyn Fn(&[f64]) -> Result<f64>) -> Result<(Vec<f64>, f64)> {
        if let Some(opts) = &self.options {
            let mut best = (opts[0].clone(), f(&opts[0])?);
            for o in opts {
                let v = f(o)?;
                if v > best.1 {
                    best = (o.clone(), v);
                }
            }
            return Ok(best);
        }
        let per: usize = if self.dim == 1 { 2001 } else { 201 };
        let mut best = (vec![0.0; self.dim], f64::NEG_INFINITY);
        for x in self.grid_points(per) {
            let v = f(&x)?;
            if v > best.1 {
                best = (x, v);
            }
        }
        // Refine within one grid step, coordinate by coordinate.
        let h = 1.0 / (per - 1) as f64;
        for _ in 0..3 {
            for j in 0..self.dim {
                let (mut a, mut b) = ((best.0[j] - h).max(0.0), (best.0[j] + h).min(1.0));
                for _ in 0..60 {
                    let g = 0.618_033_988_749_895;
                    let (c, d) = (b - g * (b - a), a + g * (b - a));
                    let mut xc = best.0.clone();
                    xc[j] = c;
                    let mut xd = best.0.clone();
                    xd[j] = d;
                    if f(&xc)? > f(&xd)? {
                        b = d;
                    } else {
                        a = c;
                    }
                }
                let mut x = best.0.clone();
                x[j] = 0.5 * (a + b);
                let v = f(&x)?;
                if v > best.1 {
                    best = (x, v);
                }
            }
        }
        Ok(best)
    }
}

/// The synthetic hotel set: 300 rows of `(log price, log reviews, reversed rank)` scaled to
/// `[0, 1]` (see the module docs), from a fixed seed.
pub fn hotel_options() -> Vec<Vec<f64>> {
    use rand_distr::{Distribution, StandardNormal};
    let n = 300;
    let mut rng = stream(2023, &[0x407E1]);
    let mut rows = Vec::with_capacity(n);
    for _ in 0..n {
        let z: [f64; 3] = [
            StandardNormal.sample(&mut rng),
            StandardNormal.sample(&mut rng),
            StandardNormal.sample(&mut rng),
        ];
        let log_price = 150f64.ln() + 0.5 * z[0];
        let log_reviews = 90f64.ln() + 1.0 * z[1];
        let quality = 0.4 * z[0] + 0.5 * z[1] + 0.77 * z[2];
        rows.push([log_price, log_reviews, quality]);
    }
    // Rank 1 = highest quality; reversed and scaled so the best hotel has 1.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| rows[b][2].total_cmp(&rows[a][2]));
    let mut rank = vec![0usize; n];
    for (k, &i) in order.iter().enumerate() {
        rank[i] = k;
    }
    let scale = |j: usize| {
        let lo = rows.iter().map(|r| r[j]).fold(f64::INFINITY, f64::min);
        let hi = rows.iter().map(|r| r[j]).fold(f64::NEG_INFINITY, f64::max);
        (lo, hi - lo)
    };
    let (pl, pw) = scale(0);
    let (rl, rw) = scale(1);
    (0..n)
        .map(|i| {
            vec![
                (rows[i][0] - pl) / pw,
                (rows[i][1] - rl) / rw,
                1.0 - rank[i] as f64 / (n - 1) as f64,
            ]
        })
        .collect()
}

/// The team-formation task: per-team utilities (165 × 4, standardized) and the diffusion
/// kernel over the team supergraph (see the module docs), from a fixed seed.
#[allow(clippy::type_complexity)]
pub fn team_formation() -> Result<(Vec<Vec<f64>>, Vec<Vec<f64>>)> {
    use rand_distr::{Distribution, Gamma};
    let (people, size, skills) = (11usize, 8usize, 4usize);
    let mut rng = stream(2024, &[0x7EA]);
    let mut dirichlet = |alpha: f64, k: usize| -> Vec<f64> {
        let g = Gamma::new(alpha, 1.0).expect("alpha > 0");
        let v: Vec<f64> = (0..k).map(|_| g.sample(&mut rng).max(1e-12)).collect();
        let t: f64 = v.iter().sum();
        v.into_iter().map(|e| e / t).collect()
    };
    let skill: Vec<Vec<f64>> = (0..people).map(|_| dirichlet(0.5, skills)).collect();
    let raw: Vec<Vec<f64>> = (0..people).map(|_| dirichlet(1.0, people)).collect();
    let compat = |a: usize, b: usize| 0.5 * (raw[a][b] + raw[b][a]) * people as f64;
    // Teams: every 8-subset of 11, in lexicographic order of the left-out triple.
    let mut teams: Vec<Vec<usize>> = Vec::new();
    for a in 0..people {
        for b in a + 1..people {
            for c in b + 1..people {
                teams.push((0..people).filter(|p| ![a, b, c].contains(p)).collect());
            }
        }
    }
    debug_assert!(teams.iter().all(|t| t.len() == size));
    let raw_u: Vec<[f64; 4]> = teams
        .iter()
        .map(|t| {
            let mix: Vec<f64> = (0..skills)
                .map(|s| t.iter().map(|&p| skill[p][s]).sum::<f64>() / t.len() as f64)
                .collect();
            let entropy = -mix
                .iter()
                .filter(|p| **p > 0.0)
                .map(|p| p * p.ln())
                .sum::<f64>();
            let pairs: Vec<f64> = t
                .iter()
                .enumerate()
                .flat_map(|(i, &a)| t[i + 1..].iter().map(move |&b| (a, b)))
                .map(|(a, b)| compat(a, b))
                .collect();
            let mean = pairs.iter().sum::<f64>() / pairs.len() as f64;
            let min = pairs.iter().cloned().fold(f64::INFINITY, f64::min);
            let var = pairs.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / pairs.len() as f64;
            [entropy, mean, min, -var]
        })
        .collect();
    let mut utilities = vec![vec![0.0; 4]; teams.len()];
    for j in 0..4 {
        let col: Vec<f64> = raw_u.iter().map(|r| r[j]).collect();
        let m = col.iter().sum::<f64>() / col.len() as f64;
        let sd = (col.iter().map(|v| (v - m).powi(2)).sum::<f64>() / col.len() as f64).sqrt();
        for (k, v) in col.iter().enumerate() {
            utilities[k][j] = (v - m) / sd.max(1e-12);
        }
    }
    // Supergraph: Jaccard weights; normalized Laplacian; diffusion kernel by scaling and
    // squaring with a Taylor series.
    let n = teams.len();
    let w = faer::Mat::from_fn(n, n, |i, j| {
        if i == j {
            return 0.0;
        }
        let inter = teams[i].iter().filter(|p| teams[j].contains(p)).count() as f64;
        // Jaccard index |A ∩ B| / |A ∪ B|.
        inter / ((2 * size) as f64 - inter)
    });
    let deg: Vec<f64> = (0..n).map(|i| (0..n).map(|j| w[(i, j)]).sum()).collect();
    let tau = 2.0;
    let lap = faer::Mat::from_fn(n, n, |i, j| {
        let l = if i == j { 1.0 } else { 0.0 } - w[(i, j)] / (deg[i] * deg[j]).sqrt();
        -tau * l
    });
    let squarings = 6;
    let scaled = &lap * faer::Scale(1.0 / f64::from(1u32 << squarings));
    let mut term = faer::Mat::<f64>::identity(n, n);
    let mut exp = faer::Mat::<f64>::identity(n, n);
    for k in 1..=14 {
        term = &term * &scaled * faer::Scale(1.0 / k as f64);
        exp += &term;
    }
    for _ in 0..squarings {
        exp = &exp * &exp;
    }
    let d: Vec<f64> = (0..n).map(|i| exp[(i, i)]).collect();
    let gram = (0..n)
        .map(|i| (0..n).map(|j| exp[(i, j)] / (d[i] * d[j]).sqrt()).collect())
        .collect();
    Ok((utilities, gram))
}

/// One firm's GP over the meter embedding: its predictive variance is its utility.
pub struct FirmGp {
    points: Vec<[f64; 2]>,
    chol: agora_math::linalg::Cholesky,
    lengthscale: f64,
}

impl FirmGp {
    fn k(&self, a: &[f64], b: &[f64; 2]) -> f64 {
        let d2 = (a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2);
        (-0.5 * d2 / (self.lengthscale * self.lengthscale)).exp()
    }

    /// Posterior variance at `x` (prior variance 1).
    pub fn variance(&self, x: &[f64]) -> f64 {
        let kx: Vec<f64> = self.points.iter().map(|p| self.k(x, p)).collect();
        let v = self.chol.solve_lower_vec(&kx);
        (1.0 - v.iter().map(|e| e * e).sum::<f64>()).max(0.0)
    }
}

/// The three firms of the energy task (see the module docs), from a fixed seed.
pub fn energy_firms() -> Result<Vec<FirmGp>> {
    let mut rng = stream(2016, &[0xE4E]);
    // The corporation's meters cover the square except around (0.8, 0.2), where the joint
    // venture has its data: the corporation's favourite option is the joint venture's
    // least useful, so the corporation-led public vote does not find the group's optimum.
    let mut corp = Vec::with_capacity(40);
    while corp.len() < 40 {
        let p = [rng.random::<f64>(), rng.random::<f64>()];
        if (p[0] - 0.8).powi(2) + (p[1] - 0.2).powi(2) > 0.25 * 0.25 {
            corp.push(p);
        }
    }
    let mut cluster = |c: [f64; 2], s: f64, k: usize| -> Vec<[f64; 2]> {
        (0..k)
            .map(|_| {
                [
                    (c[0] + s * (rng.random::<f64>() - 0.5)).clamp(0.0, 1.0),
                    (c[1] + s * (rng.random::<f64>() - 0.5)).clamp(0.0, 1.0),
                ]
            })
            .collect()
    };
    let startup = cluster([0.85, 0.85], 0.2, 6);
    let mut jv = cluster([0.15, 0.8], 0.25, 7);
    jv.extend(cluster([0.8, 0.2], 0.25, 7));
    [corp, startup, jv]
        .into_iter()
        .map(|points| {
            let l = 0.15;
            let m = points.len();
            let g = faer::Mat::from_fn(m, m, |i, j| {
                let d2 =
                    (points[i][0] - points[j][0]).powi(2) + (points[i][1] - points[j][1]).powi(2);
                (-0.5 * d2 / (l * l)).exp() + if i == j { 1e-4 } else { 0.0 }
            });
            Ok(FirmGp {
                chol: agora_math::linalg::Cholesky::new(g.as_ref())?,
                points,
                lengthscale: l,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toy_optima_match_the_note() {
        let t = SocialTask::by_name("toy").unwrap();
        let (x, s) = t.optimum().unwrap();
        assert!((x[0] - 0.8229).abs() < 2e-3, "{x:?}");
        assert!((s - 3.304).abs() < 5e-3, "{s}");
        let (xc, _) = t.corrupted_optimum().unwrap();
        assert!((xc[0] - 0.354).abs() < 3e-3, "{xc:?}");
        assert!(
            SocialTask::by_name("nope")
                .unwrap_err()
                .to_string()
                .contains("toy")
        );
        let th = SocialTask::by_name("thermal-unanchored").unwrap();
        let (x, s) = th.optimum().unwrap();
        // Egalitarian-ish comfort: the worst-off agent is within ~1 PMV unit of neutral.
        assert!(s < 0.0 && s > -1.5, "{x:?} {s}");
        assert!(th.utilities_at(&x).unwrap().iter().all(|u| u.is_finite()));
        // Anchored at the hot room, every agent gains at the optimum.
        let th = SocialTask::by_name("thermal").unwrap();
        let (x, s) = th.optimum().unwrap();
        assert!(s > 0.5, "{x:?} {s}");
        let sq = th.utilities_at(&THERMAL_STATUS_QUO).unwrap();
        assert!(sq.iter().all(|u| u.abs() < 1e-12), "{sq:?}");
        assert!(th.utilities_at(&x).unwrap().iter().all(|u| *u > 0.5));
    }

    /// Every task of the report is identifiable from votes (an oracle knowing the exact
    /// utility differences, with the model's convention for the constants, finds the
    /// optimum) and groupthink costs something on it (the public vote's optimum has positive
    /// regret); each ablation breaks one of the two.
    #[test]
    fn report_tasks_are_identifiable_and_groupthink_costs_something() {
        for name in SocialTask::names() {
            let t = SocialTask::by_name(name).unwrap();
            let oracle = t.difference_oracle_regret().unwrap();
            let public = t.public_optimum_regret().unwrap();
            assert!(oracle < 1e-9, "{name}: oracle regret {oracle}");
            assert!(public > 0.02, "{name}: public-vote optimum regret {public}");
            assert_eq!(t.status_quo.is_some(), t.rho < 1.0, "{name}");
        }
        // The column-sum-1 graphs: the public utilitarian optimum is the true one.
        for name in ["toy-wishy-washy-colsum1", "toy-altruist-colsum1"] {
            let t = SocialTask::by_name(name).unwrap();
            assert!(t.public_optimum_regret().unwrap() < 1e-9, "{name}");
        }
        // Without a status quo the zero-mean convention misplaces the optimum (hotel's and
        // team's utilities happen to make it harmless: their oracle regret is 0).
        for name in [
            "toy-rho0.5-unanchored",
            "toy-egalitarian-unanchored",
            "thermal-unanchored",
            "energy-unanchored",
        ] {
            let t = SocialTask::by_name(name).unwrap();
            let oracle = t.difference_oracle_regret().unwrap();
            assert!(oracle > 0.1, "{name}: {oracle}");
        }
        let e = SocialTask::by_name("toy-unanchored")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no status quo") && e.contains("thermal-unanchored"),
            "{e}"
        );
    }

    /// A point where the PMV model cannot be evaluated (a negative air speed) is an error
    /// naming it, never a silent value.
    #[test]
    fn a_pmv_failure_is_an_error() {
        let t = SocialTask::by_name("thermal").unwrap();
        let e = t.utilities_at(&[0.5, -1.0]).unwrap_err().to_string();
        assert!(e.contains("air_speed") && e.contains("[0.5, -1.0]"), "{e}");
        assert!(t.welfare_at(&[0.5, -1.0]).is_err());
        assert!(t.utilities_at(&[0.5]).is_err());
        assert!(t.utilities_at(&[f64::NAN, 0.5]).is_err());
    }

    #[test]
    fn synthetic_hotel_and_energy_tasks() {
        let h = SocialTask::by_name("hotel").unwrap();
        let opts = h.options.as_ref().unwrap();
        assert_eq!(opts.len(), 300);
        assert!(opts.iter().flatten().all(|v| (0.0..=1.0).contains(v)));
        // Rank is reversed and spread over [0, 1]; price and reviews correlate with it.
        let corr = |j: usize| {
            let (mx, my) = (
                opts.iter().map(|o| o[j]).sum::<f64>() / 300.0,
                opts.iter().map(|o| o[2]).sum::<f64>() / 300.0,
            );
            let cov: f64 = opts.iter().map(|o| (o[j] - mx) * (o[2] - my)).sum();
            let vx: f64 = opts.iter().map(|o| (o[j] - mx).powi(2)).sum();
            let vy: f64 = opts.iter().map(|o| (o[2] - my).powi(2)).sum();
            cov / (vx * vy).sqrt()
        };
        assert!(corr(0) > 0.2 && corr(1) > 0.3, "{} {}", corr(0), corr(1));
        let (x, _) = h.optimum().unwrap();
        assert!(opts.contains(&x));
        let e = SocialTask::by_name("energy").unwrap();
        // Each firm is certain at its own data and uncertain far from it.
        let u_corner = e.utilities_at(&[0.85, 0.85]).unwrap();
        assert!(u_corner[1] < 0.1, "start-up knows its corner: {u_corner:?}");
        let (xe, se) = e.optimum().unwrap();
        assert!(se > 0.0 && xe.iter().all(|v| (0.0..=1.0).contains(v)));
    }

    #[test]
    fn team_task_has_165_teams_and_a_valid_diffusion_kernel() {
        let t = SocialTask::by_name("team-unanchored").unwrap();
        assert_eq!(t.options.as_ref().unwrap().len(), 165);
        let g = t.gram.as_ref().unwrap();
        for (i, row) in g.iter().enumerate() {
            assert!((row[i] - 1.0).abs() < 1e-12);
            for (j, v) in row.iter().enumerate() {
                assert!((v - g[j][i]).abs() < 1e-10);
                assert!(*v > 0.0 && *v <= 1.0 + 1e-12);
            }
        }
        // Positive definite (a matrix exponential of a symmetric matrix).
        let m = faer::Mat::from_fn(165, 165, |i, j| g[i][j]);
        let ch = agora_math::linalg::Cholesky::new(m.as_ref()).unwrap();
        assert_eq!(ch.jitter(), 0.0);
        // Utilities are standardized per agent.
        for j in 0..4 {
            let col: Vec<f64> = (0..165)
                .map(|k| t.utilities_at(&[k as f64]).unwrap()[j])
                .collect();
            let mean = col.iter().sum::<f64>() / 165.0;
            assert!(mean.abs() < 1e-9);
        }
    }
}
