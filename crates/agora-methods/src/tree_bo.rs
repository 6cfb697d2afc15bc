//! A TreeBO-style baseline of DSBO's high-dimensional comparison (DSBO paper, Fig. 9):
//! additive GP-UCB whose decomposition is sampled by Gibbs sampling on the GP's marginal
//! likelihood, after Han, Arora & Scarlett 2021 ("High-dimensional Bayesian optimization
//! via tree-structured additive models", AAAI) and Wang, Li, Jegelka & Kohli 2017 ("Batched
//! high-dimensional Bayesian optimization via structural kernel learning", ICML).
//!
//! **Model.** `f(x) = Σ_g f_g(x_g)` over a *partition* of the `D` coordinates into disjoint
//! groups of at most `max_group_size` coordinates: DSBO's additive GP
//! ([`agora_gp::AdditiveFit`]), `k = Σ_g (1/M) κ(‖x_g − x'_g‖²/ℓ²)` for `M` groups, one
//! lengthscale `ℓ` and noise variance shared by every group, chosen by marginal likelihood
//! over [`AdditiveHyper`]'s grid, on standardized outcomes. This is Wang et al.'s
//! decomposition. Han et al.'s trees (cliques that are edges sharing coordinates, learned
//! by Gibbs sampling plus mutation) are left out: with overlapping cliques the UCB no
//! longer splits into independent per-group problems (Han et al. use the tree to maximize
//! it by message passing, on zoomed discretizations of the box), whereas with disjoint
//! groups the split below is exact.
//!
//! **Sampler.** Every `resample_every` evaluations, warm-started from the last partition
//! (the first from a seeded random partition into groups of `max_group_size`): the grid
//! hyperparameters are fitted on the current partition, then `sweeps` Gibbs sweeps each
//! resample every coordinate's group in a seeded random order, given the others' partition
//! `P₋d`, with weight `p(y | partition)` (the marginal likelihood; a uniform prior over
//! partitions with bounded groups) normalized in log space. The alternatives for `d` are:
//! join any group of `P₋d` with room, or be alone; they depend only on `P₋d`. When there
//! are more than `max_alternatives`, the step samples among the current alternative and a
//! uniformly random subset of the others: a Metropolised (restricted) Gibbs step, which
//! leaves the same posterior invariant because the subset is drawn symmetrically from a set
//! both endpoints share. The likelihood uses at most `gibbs_points` evaluations (a seeded
//! random subset), so a sweep costs `O(D · max_alternatives · gibbs_points³)`, not `O(n³)`
//! per alternative.
//!
//! **Acquisition.** GP-UCB split over the groups (Kandasamy et al. 2015, Add-GP-UCB; as
//! both papers use it): `Σ_g μ_g(x_g) + √β σ_g(x_g)`, where `μ_g`, `σ_g²` are the posterior
//! moments of the component `f_g` given every observation. Each group's term is maximized
//! on its own over `[0, 1]^{|g|}`: `candidates` scrambled Sobol points and the incumbent's
//! coordinates, then `refine_rounds` rounds of Gaussian steps around the best.
//!
//! Departures from the papers: one shared lengthscale (ML-II over a grid) held fixed during
//! the sweeps (Wang et al. also sample it; Han et al. fit it); a uniform prior instead of
//! Wang et al.'s Dirichlet-multinomial one over a fixed number of groups; constant `β`;
//! one query at a time (Wang et al.'s batches from determinantal point processes are not
//! built).

use crate::Strategy;
use crate::evaluations::{Evaluations, continuous_box, design_then_picks, evaluations_strategy};
use crate::open::OpenQuery;
use agora_core::{Error, Result, Space};
use agora_gp::{AdditiveFit, AdditiveGrams, AdditiveHyper, Kernel, Stationary, StationaryKind};
use agora_math::design::{SOBOL_MAX_DIM, SOBOL_MAX_POINTS, sobol};
use agora_math::linalg::Cholesky;
use agora_math::rng::{Rng, derive_seed, stream};
use faer::{Mat, MatRef};
use rand::RngExt;
use rand::seq::SliceRandom;
use rand_distr::StandardNormal;
use rayon::prelude::*;

/// `ln 2π`.
const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// Settings of [`TreeBo`].
#[derive(Debug, Clone, PartialEq)]
pub struct TreeBoConfig {
    /// Uniform points before the first pick.
    pub n_init: usize,
    /// Largest number of coordinates in one group.
    pub max_group_size: usize,
    /// Resample the decomposition every this many evaluations.
    pub resample_every: usize,
    /// Gibbs sweeps (every coordinate resampled once) per resample.
    pub sweeps: usize,
    /// Alternatives weighed per coordinate update (at least 2); with more, a random subset
    /// that always holds the current one.
    pub max_alternatives: usize,
    /// The marginal likelihood of the sampler uses at most this many evaluations.
    pub gibbs_points: usize,
    /// Base kernel of every group.
    pub kernel: StationaryKind,
    /// Candidate shared lengthscales and noise variances (ML-II).
    pub hyper: AdditiveHyper,
    /// UCB exploration weight: each group maximizes `μ_g + √β σ_g`.
    pub beta: f64,
    /// Sobol candidates per group.
    pub candidates: usize,
    /// Rounds of Gaussian steps (scales 0.1, 0.03, 0.01, …) around each group's best.
    pub refine_rounds: usize,
}

impl Default for TreeBoConfig {
    /// 10 initial points, groups of at most 3 coordinates resampled every 10 evaluations
    /// by 2 sweeps of at most 16 alternatives each on at most 64 evaluations, Matérn-5/2
    /// with the default grid, β = 2, 128 candidates and 3 refinement rounds per group.
    fn default() -> Self {
        TreeBoConfig {
            n_init: 10,
            max_group_size: 3,
            resample_every: 10,
            sweeps: 2,
            max_alternatives: 16,
            gibbs_points: 64,
            kernel: StationaryKind::Matern52,
            hyper: AdditiveHyper::default(),
            beta: 2.0,
            candidates: 128,
            refine_rounds: 3,
        }
    }
}

impl TreeBoConfig {
    /// Check every field; errors name it (`tree_bo.<field>`).
    pub fn validate(&self) -> Result<()> {
        for (name, v, min) in [
            ("tree_bo.n_init", self.n_init, 1),
            ("tree_bo.max_group_size", self.max_group_size, 1),
            ("tree_bo.resample_every", self.resample_every, 1),
            ("tree_bo.max_alternatives", self.max_alternatives, 2),
            ("tree_bo.gibbs_points", self.gibbs_points, 1),
            ("tree_bo.candidates", self.candidates, 1),
        ] {
            if v < min {
                return Err(Error::invalid(name, format!("must be at least {min}")));
            }
        }
        if self.candidates > SOBOL_MAX_POINTS {
            return Err(Error::invalid(
                "tree_bo.candidates",
                format!("must be at most {SOBOL_MAX_POINTS}"),
            ));
        }
        if self.max_group_size > SOBOL_MAX_DIM {
            return Err(Error::invalid(
                "tree_bo.max_group_size",
                format!("must be at most {SOBOL_MAX_DIM}"),
            ));
        }
        if !(self.beta.is_finite() && self.beta >= 0.0) {
            return Err(Error::invalid(
                "tree_bo.beta",
                format!("must be a finite number >= 0, got {}", self.beta),
            ));
        }
        self.hyper
            .validate()
            .map_err(|e| Error::invalid("tree_bo.hyper", e.to_string()))
    }
}

/// Groups sorted inside, ordered by their first coordinate, none empty.
fn canonical(mut groups: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    groups.retain(|g| !g.is_empty());
    groups.iter_mut().for_each(|g| g.sort_unstable());
    groups.sort();
    groups
}

/// A uniformly random partition of `0..dim` into groups of `size` (the last smaller).
fn random_partition(dim: usize, size: usize, rng: &mut Rng) -> Vec<Vec<usize>> {
    let mut coords: Vec<usize> = (0..dim).collect();
    coords.shuffle(rng);
    canonical(coords.chunks(size).map(<[usize]>::to_vec).collect())
}

/// `log N(ys | 0, sum/m + noise·I)` and the jitter its Cholesky needed, or `None` when the
/// factorization fails.
fn log_evidence(sum: &Mat<f64>, m: usize, noise: f64, ys: &[f64]) -> Option<(f64, f64)> {
    let n = ys.len();
    let s = 1.0 / m as f64;
    let a = Mat::from_fn(n, n, |i, j| {
        s * sum[(i, j)] + if i == j { noise } else { 0.0 }
    });
    let chol = Cholesky::new(a.as_ref()).ok()?;
    let alpha = chol.solve_vec(ys);
    let quad: f64 = ys.iter().zip(&alpha).map(|(y, a)| y * a).sum();
    let lml = -0.5 * quad - 0.5 * chol.log_det() - 0.5 * n as f64 * LN_2PI;
    Some((lml, chol.jitter()))
}

/// Where a coordinate goes in one Gibbs update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    /// Join group `b` (as indexed before the update; `b` = its own group means it stays
    /// with the rest of that group).
    Join(usize),
    /// A group of its own.
    Alone,
}

/// The conditional of one coordinate: the alternatives weighed, their log weights and
/// the unscaled kernel of the group each would create.
struct Conditional {
    d: usize,
    /// The coordinate's group.
    from: usize,
    /// That group without `d`, and its unscaled kernel (`None`: empty).
    rest: Vec<usize>,
    rest_kappa: Option<Mat<f64>>,
    /// `Σ_g κ_g` with `d` removed from its group.
    base: Mat<f64>,
    targets: Vec<Target>,
    /// Log marginal likelihoods (−∞ where the factorization failed).
    log_weights: Vec<f64>,
    /// The jitter each factorization needed (`None`: it failed).
    jitters: Vec<Option<f64>>,
    /// The kernel of the group `d` joins (or forms), per target (`None`: staying).
    kappas: Vec<Option<Mat<f64>>>,
}

impl Conditional {
    /// The normalized probabilities (log-sum-exp); all zero when no weight is finite.
    fn probabilities(&self) -> Vec<f64> {
        let top = self
            .log_weights
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        if !top.is_finite() {
            return vec![0.0; self.log_weights.len()];
        }
        let w: Vec<f64> = self.log_weights.iter().map(|l| (l - top).exp()).collect();
        let z: f64 = w.iter().sum();
        w.into_iter().map(|v| v / z).collect()
    }
}

/// Gibbs sampling over partitions of the coordinates with bounded groups, weighted by the
/// additive GP's marginal likelihood with fixed `(ℓ, σ²)`; keeps every group's unscaled
/// kernel matrix and their sum, so an alternative costs one group kernel and one Cholesky.
#[derive(Debug, Clone)]
struct PartitionGibbs {
    x: Mat<f64>,
    ys: Vec<f64>,
    kind: StationaryKind,
    lengthscale: f64,
    noise: f64,
    max_size: usize,
    groups: Vec<Vec<usize>>,
    kappas: Vec<Mat<f64>>,
    total: Mat<f64>,
    /// Updates that changed the partition, factorizations that failed, and the largest
    /// jitter any needed.
    moves: usize,
    failures: usize,
    max_jitter: f64,
}

impl PartitionGibbs {
    /// The sampler on standardized data `(x, ys)`, from the partition `groups`.
    fn new(
        x: Mat<f64>,
        ys: Vec<f64>,
        (kind, lengthscale, noise): (StationaryKind, f64, f64),
        max_size: usize,
        groups: Vec<Vec<usize>>,
    ) -> PartitionGibbs {
        let n = x.nrows();
        let mut g = PartitionGibbs {
            x,
            ys,
            kind,
            lengthscale,
            noise,
            max_size,
            groups: canonical(groups),
            kappas: Vec::new(),
            total: Mat::zeros(n, n),
            moves: 0,
            failures: 0,
            max_jitter: 0.0,
        };
        g.kappas = g.groups.iter().map(|c| g.kappa(c)).collect();
        for k in &g.kappas {
            g.total += k;
        }
        g
    }

    /// `κ(‖x_c − x'_c‖²/ℓ²)` over the data (unit output scale).
    fn kappa(&self, coords: &[usize]) -> Mat<f64> {
        Stationary::on(self.kind, coords.to_vec(), self.lengthscale).gram(self.x.as_ref())
    }

    /// The conditional of coordinate `d` given the others' partition, over every
    /// alternative, or over the current one and `limit − 1` others drawn from `rng`.
    fn conditional(&self, d: usize, limit: usize, rng: &mut Rng) -> Result<Conditional> {
        let from = self
            .groups
            .iter()
            .position(|g| g.contains(&d))
            .ok_or_else(|| Error::State(format!("coordinate {d} is in no group")))?;
        let rest: Vec<usize> = self.groups[from]
            .iter()
            .copied()
            .filter(|&j| j != d)
            .collect();
        let rest_kappa = (!rest.is_empty()).then(|| self.kappa(&rest));
        let mut base = &self.total - &self.kappas[from];
        if let Some(k) = &rest_kappa {
            base += k;
        }
        let current = if rest.is_empty() {
            Target::Alone
        } else {
            Target::Join(from)
        };
        let mut others: Vec<Target> = (0..self.groups.len())
            .filter(|&b| b != from && self.groups[b].len() < self.max_size)
            .map(Target::Join)
            .chain(std::iter::once(Target::Alone))
            .filter(|t| *t != current)
            .collect();
        if others.len() + 1 > limit {
            others.shuffle(rng);
            others.truncate(limit - 1);
        }
        let mut targets = others;
        targets.push(current);
        targets.sort_unstable();
        // Groups other than d's, plus d's rest if it is not empty.
        let m_minus = self.groups.len() - usize::from(rest.is_empty());
        let scored: Vec<_> = targets
            .par_iter()
            .map(|&t| {
                if t == current {
                    let m = self.groups.len();
                    return (log_evidence(&self.total, m, self.noise, &self.ys), None);
                }
                let (coords, m, old) = match t {
                    Target::Join(b) => {
                        let mut c = self.groups[b].clone();
                        c.push(d);
                        (c, m_minus, Some(&self.kappas[b]))
                    }
                    Target::Alone => (vec![d], m_minus + 1, None),
                };
                let k = self.kappa(&coords);
                let mut sum = &base + &k;
                if let Some(old) = old {
                    sum -= old;
                }
                (log_evidence(&sum, m, self.noise, &self.ys), Some(k))
            })
            .collect();
        let (evidence, kappas): (Vec<_>, _) = scored.into_iter().unzip();
        let log_weights = evidence
            .iter()
            .map(|e| e.map_or(f64::NEG_INFINITY, |(l, _)| l))
            .collect();
        let jitters = evidence.iter().map(|e| e.map(|(_, j)| j)).collect();
        Ok(Conditional {
            d,
            from,
            rest,
            rest_kappa,
            base,
            targets,
            log_weights,
            jitters,
            kappas,
        })
    }

    /// The partition after moving `c.d` to target `i` of `c` (canonical), without
    /// changing the sampler.
    #[cfg(test)]
    fn partition_after(&self, c: &Conditional, i: usize) -> Vec<Vec<usize>> {
        let mut groups = self.groups.clone();
        match c.targets[i] {
            Target::Join(b) if b == c.from => return groups,
            Target::Join(b) => groups[b].push(c.d),
            Target::Alone => {
                if c.rest.is_empty() {
                    return groups;
                }
                groups.push(vec![c.d]);
            }
        }
        groups[c.from] = c.rest.clone();
        canonical(groups)
    }

    /// Move `c.d` to target `i` of `c`.
    fn apply(&mut self, mut c: Conditional, i: usize) {
        let (t, kappa) = (c.targets[i], c.kappas[i].take());
        let Some(kappa) = kappa else {
            return; // staying
        };
        self.moves += 1;
        let mut total = c.base;
        let mut groups = std::mem::take(&mut self.groups);
        let mut kappas = std::mem::take(&mut self.kappas);
        match t {
            Target::Join(b) => {
                total -= &kappas[b];
                total += &kappa;
                groups[b].push(c.d);
                kappas[b] = kappa;
            }
            Target::Alone => {
                total += &kappa;
                groups.push(vec![c.d]);
                kappas.push(kappa);
            }
        }
        groups[c.from] = c.rest;
        kappas[c.from] = c.rest_kappa.unwrap_or_else(|| Mat::zeros(0, 0));
        // Drop an emptied group and restore the canonical order, kernels alongside.
        let mut pairs: Vec<(Vec<usize>, Mat<f64>)> = groups
            .into_iter()
            .zip(kappas)
            .filter(|(g, _)| !g.is_empty())
            .map(|(mut g, k)| {
                g.sort_unstable();
                (g, k)
            })
            .collect();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        (self.groups, self.kappas) = pairs.into_iter().unzip();
        self.total = total;
    }

    /// One Gibbs update of coordinate `d`: draw its group from the conditional.
    fn update(&mut self, d: usize, limit: usize, rng: &mut Rng) -> Result<()> {
        let c = self.conditional(d, limit, rng)?;
        for j in &c.jitters {
            match j {
                Some(j) => self.max_jitter = self.max_jitter.max(*j),
                None => self.failures += 1,
            }
        }
        let p = c.probabilities();
        let u: f64 = rng.random();
        // No finite weight (every factorization failed): stay.
        let Some(mut i) = p.iter().rposition(|v| *v > 0.0) else {
            return Ok(());
        };
        let mut acc = 0.0;
        for (k, pk) in p.iter().enumerate() {
            acc += pk;
            if *pk > 0.0 && u < acc {
                i = k;
                break;
            }
        }
        self.apply(c, i);
        Ok(())
    }

    /// One sweep: every coordinate updated once, in a random order.
    fn sweep(&mut self, limit: usize, rng: &mut Rng) -> Result<()> {
        let mut order: Vec<usize> = self.groups.iter().flatten().copied().collect();
        order.sort_unstable();
        order.shuffle(rng);
        for d in order {
            self.update(d, limit, rng)?;
        }
        Ok(())
    }
}

/// The posterior of each component `f_g` of an additive GP with disjoint groups, given all
/// the data: with `k_g = s κ(x_g, X_g)` and `K + σ²I = L Lᵀ`, `μ_g = k_gᵀ (K + σ²I)⁻¹ y`
/// and `σ_g² = s κ(0) − ‖L⁻¹ k_g‖²` (Kandasamy et al. 2015, Add-GP-UCB), so that
/// `Σ_g μ_g` is the posterior mean of `f`.
struct Components {
    x: Mat<f64>,
    chol: Cholesky,
    alpha: Vec<f64>,
    kind: StationaryKind,
    lengthscale: f64,
    scale: f64,
}

impl Components {
    /// From the fit and its noiseless Gram on `x`, and the raw outcomes `y`.
    fn new(x: Mat<f64>, gram: &Mat<f64>, fit: &AdditiveFit, y: &[f64]) -> Result<Components> {
        let n = x.nrows();
        let a = Mat::from_fn(n, n, |i, j| {
            gram[(i, j)] + if i == j { fit.noise } else { 0.0 }
        });
        let chol = Cholesky::new(a.as_ref())?;
        let ys: Vec<f64> = y.iter().map(|v| (v - fit.shift) / fit.scale).collect();
        let alpha = chol.solve_vec(&ys);
        Ok(Components {
            x,
            chol,
            alpha,
            kind: fit.spec.kind,
            lengthscale: fit.spec.lengthscale,
            // TreeBO fits every group at the shared scale `1/M`.
            scale: fit.spec.scales.first().copied().unwrap_or(0.0),
        })
    }

    /// The training inputs on `group`'s coordinates.
    fn columns(&self, group: &[usize]) -> Mat<f64> {
        Mat::from_fn(self.x.nrows(), group.len(), |i, j| self.x[(i, group[j])])
    }

    /// `(μ_g, σ_g²)` at each row of `z` (points on the group's coordinates), given the
    /// training inputs `xg` on them.
    fn moments(&self, xg: MatRef<'_, f64>, z: MatRef<'_, f64>) -> (Vec<f64>, Vec<f64>) {
        let kernel = Stationary::on(self.kind, (0..z.ncols()).collect(), self.lengthscale);
        let mut k = kernel.cross(xg, z);
        k *= faer::Scale(self.scale);
        let mu = (0..k.ncols())
            .map(|c| (0..k.nrows()).map(|i| k[(i, c)] * self.alpha[i]).sum())
            .collect();
        self.chol.solve_lower_in_place(k.as_mut());
        let prior = self.scale * self.kind.value(0.0);
        let var = (0..k.ncols())
            .map(|c| (prior - (0..k.nrows()).map(|i| k[(i, c)].powi(2)).sum::<f64>()).max(0.0))
            .collect();
        (mu, var)
    }

    /// The maximizer of `μ_g + w σ_g` over `[0, 1]^{|g|}`: `candidates` Sobol points (seed
    /// `seed`) and `start`, then `rounds` rounds of `candidates/4` Gaussian steps around
    /// the best (scales 0.1 · 0.3^r) drawn from `rng`.
    fn maximize(
        &self,
        group: &[usize],
        w: f64,
        start: Option<Vec<f64>>,
        (candidates, rounds): (usize, usize),
        seed: u64,
        rng: &mut Rng,
    ) -> Result<Vec<f64>> {
        let xg = self.columns(group);
        let ucb = |pts: &[Vec<f64>]| {
            let z = Mat::from_fn(pts.len(), group.len(), |i, j| pts[i][j]);
            let (mu, var) = self.moments(xg.as_ref(), z.as_ref());
            mu.iter()
                .zip(&var)
                .map(|(m, v)| m + w * v.sqrt())
                .collect::<Vec<f64>>()
        };
        let mut pts = sobol(candidates, group.len(), seed)?;
        pts.extend(start);
        let vals = ucb(&pts);
        let i = agora_acq::argmax_finite(&vals)
            .ok_or_else(|| Error::Numerical("no finite UCB on a group".into()))?;
        let (mut best, mut fbest) = (pts.swap_remove(i), vals[i]);
        let mut step = 0.1;
        for _ in 0..rounds {
            let moves: Vec<Vec<f64>> = (0..(candidates / 4).max(1))
                .map(|_| {
                    best.iter()
                        .map(|v| (v + step * rng.sample::<f64, _>(StandardNormal)).clamp(0.0, 1.0))
                        .collect()
                })
                .collect();
            let vals = ucb(&moves);
            if let Some(i) = agora_acq::argmax_finite(&vals)
                && vals[i] > fbest
            {
                (best, fbest) = (moves[i].clone(), vals[i]);
            }
            step *= 0.3;
        }
        Ok(best)
    }
}

/// One GP-UCB pick of [`TreeBo`]: the model it used.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeBoRecord {
    /// Evaluations the model saw.
    pub n: usize,
    /// Groups of the decomposition.
    pub groups: usize,
    /// The shared lengthscale selected.
    pub lengthscale: f64,
    /// The noise variance selected (standardized outcomes).
    pub noise: f64,
    /// Diagonal jitter the Cholesky of `K + σ²I` needed.
    pub jitter: f64,
}

/// One resampling of [`TreeBo`]'s decomposition.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeBoResample {
    /// Evaluations seen.
    pub n: usize,
    /// Evaluations the sampler's likelihood used (a random subset of at most
    /// `gibbs_points`).
    pub points: usize,
    /// The shared lengthscale the sweeps held fixed.
    pub lengthscale: f64,
    /// The noise variance the sweeps held fixed (standardized outcomes).
    pub noise: f64,
    /// Coordinate updates made (`sweeps · D`).
    pub updates: usize,
    /// Updates that moved their coordinate to another group.
    pub moves: usize,
    /// Factorizations that failed (their alternatives weighed zero).
    pub failures: usize,
    /// The largest diagonal jitter any of the sampler's factorizations needed.
    pub max_jitter: f64,
    /// The decomposition after the sweeps.
    pub groups: Vec<Vec<usize>>,
}

/// TreeBO-style additive GP-UCB over a Gibbs-sampled decomposition (module docs).
/// Deterministic in its seed: the design draws from ChaCha stream `[0]`, the first
/// partition from `[1]`, resample `r` from `[2, r]`, and pick `p`'s group `g` its Sobol
/// points from seed `derive_seed(seed, [3, p, g])` and its steps from stream `[4, p, g]`.
#[derive(Debug, Clone)]
pub struct TreeBo {
    config: TreeBoConfig,
    dim: usize,
    seed: u64,
    evals: Evaluations,
    init_rng: Rng,
    /// The current decomposition (empty before the first pick).
    groups: Vec<Vec<usize>>,
    resamples: u64,
    n_at_resample: usize,
    /// The decomposition's Grams on the data, grown by a row per evaluation.
    grams: Option<AdditiveGrams>,
    pick: u64,
    records: Vec<TreeBoRecord>,
    resampled: Vec<TreeBoResample>,
    open: OpenQuery<()>,
}

impl TreeBo {
    /// TreeBO-style search on `space` (a box of real parameters).
    ///
    /// Errors: a bad space or configuration (naming the field).
    pub fn new(space: &Space, config: TreeBoConfig, seed: u64) -> Result<TreeBo> {
        config.validate()?;
        let dim = continuous_box(space)?;
        Ok(TreeBo {
            dim,
            seed,
            evals: Evaluations::default(),
            init_rng: stream(seed, &[0]),
            groups: Vec::new(),
            resamples: 0,
            n_at_resample: 0,
            grams: None,
            pick: 0,
            records: Vec::new(),
            resampled: Vec::new(),
            open: OpenQuery::default(),
            config,
        })
    }

    /// The settings.
    pub fn config(&self) -> &TreeBoConfig {
        &self.config
    }

    /// The current decomposition: disjoint groups of coordinates, each sorted, ordered by
    /// their first coordinate (empty before the first pick).
    pub fn decomposition(&self) -> &[Vec<usize>] {
        &self.groups
    }

    /// Every pick's model.
    pub fn records(&self) -> &[TreeBoRecord] {
        &self.records
    }

    /// Every resampling of the decomposition.
    pub fn resamples(&self) -> &[TreeBoResample] {
        &self.resampled
    }

    /// Gibbs sweeps from the current decomposition (or a random one) on at most
    /// `gibbs_points` evaluations, with the grid hyperparameters of the current one.
    fn resample(&mut self) -> Result<()> {
        let c = &self.config;
        self.resamples += 1;
        let mut rng = stream(self.seed, &[2, self.resamples]);
        let start = if self.groups.is_empty() {
            random_partition(self.dim, c.max_group_size, &mut stream(self.seed, &[1]))
        } else {
            self.groups.clone()
        };
        let n = self.evals.len();
        let mut idx: Vec<usize> = (0..n).collect();
        if n > c.gibbs_points {
            idx.shuffle(&mut rng);
            idx.truncate(c.gibbs_points);
            idx.sort_unstable();
        }
        let x = Mat::from_fn(idx.len(), self.dim, |i, j| self.evals.unit[idx[i]][j]);
        let y: Vec<f64> = idx.iter().map(|&i| self.evals.ys[i]).collect();
        let fit = AdditiveFit::fit(&start, c.kernel, &c.hyper, &x, &y)?;
        let ys = y.iter().map(|v| (v - fit.shift) / fit.scale).collect();
        let hyper = (c.kernel, fit.spec.lengthscale, fit.noise);
        let mut gibbs = PartitionGibbs::new(x, ys, hyper, c.max_group_size, start);
        for _ in 0..c.sweeps {
            gibbs.sweep(c.max_alternatives, &mut rng)?;
        }
        if gibbs.groups != self.groups {
            self.grams = None;
        }
        self.resampled.push(TreeBoResample {
            n,
            points: idx.len(),
            lengthscale: fit.spec.lengthscale,
            noise: fit.noise,
            updates: c.sweeps * self.dim,
            moves: gibbs.moves,
            failures: gibbs.failures,
            max_jitter: gibbs.max_jitter,
            groups: gibbs.groups.clone(),
        });
        self.groups = gibbs.groups;
        self.n_at_resample = n;
        Ok(())
    }

    /// The decomposed GP-UCB maximizer.
    fn pick(&mut self) -> Result<Vec<f64>> {
        let n = self.evals.len();
        if self.groups.is_empty() || n - self.n_at_resample >= self.config.resample_every {
            self.resample()?;
        }
        self.pick += 1;
        let (c, dim) = (&self.config, self.dim);
        let x = self.evals.x_mat(dim);
        let groups = &self.groups;
        let grams = self
            .grams
            .get_or_insert_with(|| AdditiveGrams::new(groups, c.kernel, &c.hyper));
        grams.update(&x)?;
        let fit = AdditiveFit::fit_grams(grams, &c.hyper, &self.evals.ys)?;
        let gram = grams
            .gram(fit.spec.lengthscale)
            .ok_or_else(|| Error::State("the fit's lengthscale has no Gram".into()))?;
        let model = Components::new(x, gram, &fit, &self.evals.ys)?;
        self.records.push(TreeBoRecord {
            n,
            groups: groups.len(),
            lengthscale: fit.spec.lengthscale,
            noise: fit.noise,
            jitter: model.chol.jitter(),
        });
        let incumbent = self.evals.best_unit();
        let (w, seed, pick) = (c.beta.sqrt(), self.seed, self.pick);
        let parts: Vec<Vec<f64>> = groups
            .par_iter()
            .enumerate()
            .map(|(g, group)| {
                let start = incumbent
                    .as_ref()
                    .map(|u| group.iter().map(|&j| u[j]).collect());
                let mut rng = stream(seed, &[4, pick, g as u64]);
                model.maximize(
                    group,
                    w,
                    start,
                    (c.candidates, c.refine_rounds),
                    derive_seed(seed, &[3, pick, g as u64]),
                    &mut rng,
                )
            })
            .collect::<Result<_>>()?;
        let mut u = vec![0.0; dim];
        for (group, part) in groups.iter().zip(parts) {
            for (&j, v) in group.iter().zip(part) {
                u[j] = v;
            }
        }
        Ok(u)
    }
}

design_then_picks!(TreeBo);

impl Strategy for TreeBo {
    fn name(&self) -> String {
        "tree-bo".into()
    }
    evaluations_strategy!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UniformSearch;
    use crate::testing::{FnRespondent, run_on};
    use agora_gp::{ExactGp, Sum};

    /// Every partition of `0..d` into groups of at most `max` (restricted growth strings).
    fn partitions(d: usize, max: usize) -> Vec<Vec<Vec<usize>>> {
        fn grow(
            j: usize,
            d: usize,
            max: usize,
            cur: &mut Vec<Vec<usize>>,
            out: &mut Vec<Vec<Vec<usize>>>,
        ) {
            if j == d {
                out.push(cur.clone());
                return;
            }
            for b in 0..cur.len() {
                if cur[b].len() < max {
                    cur[b].push(j);
                    grow(j + 1, d, max, cur, out);
                    cur[b].pop();
                }
            }
            cur.push(vec![j]);
            grow(j + 1, d, max, cur, out);
            cur.pop();
        }
        let mut out = Vec::new();
        grow(0, d, max, &mut Vec::new(), &mut out);
        out
    }

    /// The partition of the coordinates other than `d`.
    fn without(p: &[Vec<usize>], d: usize) -> Vec<Vec<usize>> {
        canonical(
            p.iter()
                .map(|g| g.iter().copied().filter(|&j| j != d).collect())
                .collect(),
        )
    }

    /// Standardized data of `sin(5 x₀ + 4 x₁) + cos(3 x₂) x₃` at `n` random points in 4-D.
    fn data(n: usize) -> (Mat<f64>, Vec<f64>) {
        let mut rng = stream(17, &[]);
        let x = Mat::from_fn(n, 4, |_, _| rng.random::<f64>());
        let y: Vec<f64> = (0..n)
            .map(|i| {
                (5.0 * x[(i, 0)] + 4.0 * x[(i, 1)]).sin() + (3.0 * x[(i, 2)]).cos() * x[(i, 3)]
            })
            .collect();
        let (m, s) = agora_gp::exact::standardization(&y);
        (x, y.iter().map(|v| (v - m) / s).collect())
    }

    /// The Gibbs conditional of every coordinate, from several partitions, equals the
    /// marginal likelihoods of every admissible partition (enumerated independently, each
    /// scored by an `ExactGp` of `Sum::additive`) normalized over those that agree with the
    /// others' partition; a restricted step renormalizes the same weights over its subset;
    /// and updates draw from the conditional.
    #[test]
    fn the_gibbs_conditional_is_the_normalized_marginal_likelihood() {
        let (x, ys) = data(9);
        let (kind, l, noise, max) = (StationaryKind::Matern52, 0.5, 0.01, 3);
        let lml = |p: &[Vec<usize>]| {
            let k = Sum::additive(kind, p, l, 1.0 / p.len() as f64);
            ExactGp::new(x.clone(), &ys, Box::new(k), noise, 0.0)
                .unwrap()
                .log_marginal_likelihood()
        };
        let all = partitions(4, max);
        assert_eq!(all.len(), 14, "Bell(4) less the one group of 4");
        let mut rng = stream(1, &[]);
        for start in [
            vec![vec![0, 1, 2], vec![3]],
            vec![vec![0, 3], vec![1], vec![2]],
            vec![vec![0], vec![1], vec![2], vec![3]],
            vec![vec![0, 2], vec![1, 3]],
        ] {
            let g =
                PartitionGibbs::new(x.clone(), ys.clone(), (kind, l, noise), max, start.clone());
            for d in 0..4 {
                let c = g.conditional(d, usize::MAX, &mut rng).unwrap();
                let p = c.probabilities();
                let got: Vec<(Vec<Vec<usize>>, f64)> = (0..p.len())
                    .map(|i| (g.partition_after(&c, i), p[i]))
                    .collect();
                // Brute force: the partitions that agree with the others' partition.
                let rest = without(&start, d);
                let agree: Vec<Vec<Vec<usize>>> = all
                    .iter()
                    .map(|q| canonical(q.clone()))
                    .filter(|q| without(q, d) == rest)
                    .collect();
                let w: Vec<f64> = agree.iter().map(|q| lml(q)).collect();
                let top = w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let z: f64 = w.iter().map(|v| (v - top).exp()).sum();
                assert_eq!(got.len(), agree.len(), "{start:?} d={d}: {got:?}");
                for (q, wq) in agree.iter().zip(&w) {
                    let want = (wq - top).exp() / z;
                    let (_, have) = got
                        .iter()
                        .find(|(r, _)| r == q)
                        .unwrap_or_else(|| panic!("{start:?} d={d}: {q:?} missing"));
                    assert!(
                        (have - want).abs() < 1e-9,
                        "{start:?} d={d} {q:?}: {have} vs {want}"
                    );
                }
                // The weights are not flat, so the check has teeth.
                assert!(p.iter().any(|v| (v - 1.0 / p.len() as f64).abs() > 1e-3) || p.len() == 1);
            }
        }
        // A restricted step: the current alternative and one other, renormalized.
        let start = vec![vec![0], vec![1], vec![2], vec![3]];
        let g = PartitionGibbs::new(x.clone(), ys.clone(), (kind, l, noise), max, start.clone());
        for _ in 0..5 {
            let c = g.conditional(1, 2, &mut rng).unwrap();
            assert_eq!(c.targets.len(), 2);
            assert!(c.targets.contains(&Target::Alone), "{:?}", c.targets);
            let qs: Vec<_> = (0..2).map(|i| g.partition_after(&c, i)).collect();
            let w: Vec<f64> = qs.iter().map(|q| lml(q)).collect();
            let want = 1.0 / (1.0 + (w[1] - w[0]).exp());
            assert!((c.probabilities()[0] - want).abs() < 1e-9);
        }
        // Updates draw from the conditional: frequencies within 4 standard errors.
        let start = vec![vec![0, 3], vec![1], vec![2]];
        let g = PartitionGibbs::new(x.clone(), ys.clone(), (kind, l, noise), max, start);
        let c = g.conditional(3, usize::MAX, &mut rng).unwrap();
        let p = c.probabilities();
        let qs: Vec<_> = (0..p.len()).map(|i| g.partition_after(&c, i)).collect();
        let draws = 2000;
        let mut count = vec![0usize; p.len()];
        for s in 0..draws {
            let mut h = g.clone();
            h.update(3, usize::MAX, &mut stream(5, &[s])).unwrap();
            let i = qs.iter().position(|q| *q == h.groups).unwrap();
            count[i] += 1;
            // The kept kernels are the fresh ones of the new partition.
            let fresh = PartitionGibbs::new(
                x.clone(),
                ys.clone(),
                (kind, l, noise),
                max,
                h.groups.clone(),
            );
            assert!((&fresh.total - &h.total).norm_max() < 1e-12);
        }
        for (pi, ci) in p.iter().zip(&count) {
            let f = *ci as f64 / draws as f64;
            let se = (pi * (1.0 - pi) / draws as f64).sqrt().max(1e-3);
            assert!((f - pi).abs() < 4.0 * se, "{f} vs {pi}");
        }
    }

    /// On 60 uniform points of a function additive over (0, 2, 4) and (1, 3, 5), sweeps
    /// from a random partition reach the true one and mostly stay: over 5 seeds and sweeps
    /// 2–6 it is the partition visited most, in more than half the sweeps (17 of 25 when
    /// written; no other partition more than twice).
    #[test]
    fn gibbs_sweeps_find_the_true_decomposition() {
        let truth = vec![vec![0, 2, 4], vec![1, 3, 5]];
        let mut seen: Vec<(Vec<Vec<usize>>, usize)> = Vec::new();
        for seed in 0..5 {
            let mut rng = stream(seed, &[9]);
            let n = 60;
            let x = Mat::from_fn(n, 6, |_, _| rng.random::<f64>());
            let y: Vec<f64> = (0..n)
                .map(|i| {
                    (3.0 * x[(i, 0)] + 2.0 * x[(i, 2)] * x[(i, 4)]).sin()
                        + (2.0 * x[(i, 1)] - 3.0 * x[(i, 3)] * x[(i, 5)]).cos()
                })
                .collect();
            let start = random_partition(6, 3, &mut stream(seed, &[1]));
            let kind = StationaryKind::Matern52;
            let fit = AdditiveFit::fit(&start, kind, &AdditiveHyper::default(), &x, &y).unwrap();
            let ys = y.iter().map(|v| (v - fit.shift) / fit.scale).collect();
            let hyper = (kind, fit.spec.lengthscale, fit.noise);
            let mut g = PartitionGibbs::new(x, ys, hyper, 3, start);
            let mut rng = stream(seed, &[2]);
            g.sweep(16, &mut rng).unwrap();
            for _ in 0..5 {
                g.sweep(16, &mut rng).unwrap();
                match seen.iter_mut().find(|(p, _)| *p == g.groups) {
                    Some((_, k)) => *k += 1,
                    None => seen.push((g.groups.clone(), 1)),
                }
            }
        }
        seen.sort_by_key(|a| std::cmp::Reverse(a.1));
        assert_eq!(seen[0].0, truth, "{seen:?}");
        assert!(seen[0].1 > 12, "{seen:?}");
    }

    /// The component moments sum to the additive GP's posterior mean (an `ExactGp`), and
    /// with one group they are its posterior.
    #[test]
    fn component_moments_add_up_to_the_exact_posterior() {
        let (x, y) = data(15);
        let hyper = AdditiveHyper::Fixed {
            lengthscale: 0.4,
            noise: 1e-3,
        };
        let mut rng = stream(2, &[]);
        let z = Mat::from_fn(6, 4, |_, _| rng.random::<f64>());
        for groups in [vec![vec![0, 1], vec![2], vec![3]], vec![vec![0, 1, 2, 3]]] {
            let kind = StationaryKind::Matern52;
            let fit = AdditiveFit::fit(&groups, kind, &hyper, &x, &y).unwrap();
            let gram = fit.spec.kernel().gram(x.as_ref());
            let model = Components::new(x.clone(), &gram, &fit, &y).unwrap();
            let gp = fit.condition(x.clone(), &y).unwrap();
            let (mu, var) = gp.predict(z.as_ref()).unwrap();
            let mut sum = [0.0; 6];
            for g in &groups {
                let zg = Mat::from_fn(6, g.len(), |i, j| z[(i, g[j])]);
                let (m, v) = model.moments(model.columns(g).as_ref(), zg.as_ref());
                for (s, mi) in sum.iter_mut().zip(&m) {
                    *s += mi;
                }
                if groups.len() == 1 {
                    for (a, b) in v.iter().zip(&var) {
                        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
                    }
                }
            }
            for (a, b) in sum.iter().zip(&mu) {
                assert!((a - b).abs() < 1e-9, "{groups:?}: {a} vs {b}");
            }
        }
    }

    /// Two 3-D bumps on interleaved coordinates (0, 2, 4) and (1, 3, 5) of `[0, 1]⁶`.
    fn bumps(x: &[f64]) -> f64 {
        let bump = |c: &[usize], at: [f64; 3]| {
            let r2: f64 = c.iter().zip(at).map(|(&j, a)| (x[j] - a).powi(2)).sum();
            (-r2 / (2.0 * 0.2f64.powi(2))).exp()
        };
        bump(&[0, 2, 4], [0.3, 0.7, 0.2]) + 2.0 * bump(&[1, 3, 5], [0.8, 0.25, 0.6])
    }

    /// 40 evaluations of the bumps, 12 seeds: TreeBO's best beats uniform random search's,
    /// paired by seed, by more than 2 standard errors of the mean difference.
    #[test]
    fn tree_bo_beats_random_search_on_an_additive_function() {
        let space = Space::reals(&[(0.0, 1.0); 6]).unwrap();
        let budget = 40;
        let diff: Vec<f64> = (0..12)
            .map(|seed| {
                let mut r = FnRespondent::new(space.clone(), bumps);
                let mut s = TreeBo::new(&space, TreeBoConfig::default(), seed).unwrap();
                let tree = run_on(&mut s, &mut r, budget).best();
                let mut r = FnRespondent::new(space.clone(), bumps);
                let mut u = UniformSearch::new(&space, seed).unwrap();
                let rand = run_on(&mut u, &mut r, budget).best();
                eprintln!(
                    "seed {seed}: tree-bo {tree:.3} random {rand:.3} groups {:?}",
                    s.decomposition()
                );
                tree - rand
            })
            .collect();
        let n = diff.len() as f64;
        let mean = diff.iter().sum::<f64>() / n;
        let se = (diff.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n * (n - 1.0))).sqrt();
        eprintln!("tree-bo − random: {mean:.3} ± {se:.3}");
        assert!(mean > 2.0 * se, "{mean} ± {se}");
    }

    #[test]
    fn the_same_seed_repeats_and_another_seed_differs() {
        let space = Space::reals(&[(0.0, 1.0); 6]).unwrap();
        let go = |seed| {
            let mut r = FnRespondent::new(space.clone(), bumps);
            let mut s = TreeBo::new(&space, TreeBoConfig::default(), seed).unwrap();
            let run = run_on(&mut s, &mut r, 25);
            (
                run,
                s.decomposition().to_vec(),
                s.records().to_vec(),
                s.resamples().to_vec(),
            )
        };
        let a = go(3);
        assert_eq!(a, go(3));
        let b = go(4);
        assert_ne!(a.0.xs[..10], b.0.xs[..10], "designs");
        assert_ne!(a.0.xs[10..], b.0.xs[10..], "picks");
        assert_eq!(a.2.len(), 15);
        assert!(a.2.iter().all(|r| r.jitter >= 0.0 && r.groups >= 2));
        // Resampled at the first pick (10 evaluations) and at 20.
        let ns: Vec<usize> = a.3.iter().map(|r| r.n).collect();
        assert_eq!(ns, [10, 20]);
        assert_eq!(a.3[1].groups, a.1);
        assert!(a.3.iter().all(|r| r.failures == 0));
    }

    #[test]
    fn bad_settings_name_the_field() {
        let space = Space::reals(&[(0.0, 1.0); 2]).unwrap();
        let d = TreeBoConfig::default;
        for (cfg, field) in [
            (
                TreeBoConfig {
                    max_group_size: 0,
                    ..d()
                },
                "tree_bo.max_group_size",
            ),
            (
                TreeBoConfig {
                    max_group_size: 300,
                    ..d()
                },
                "tree_bo.max_group_size",
            ),
            (
                TreeBoConfig {
                    resample_every: 0,
                    ..d()
                },
                "tree_bo.resample_every",
            ),
            (
                TreeBoConfig {
                    max_alternatives: 1,
                    ..d()
                },
                "tree_bo.max_alternatives",
            ),
            (
                TreeBoConfig {
                    gibbs_points: 0,
                    ..d()
                },
                "tree_bo.gibbs_points",
            ),
            (TreeBoConfig { n_init: 0, ..d() }, "tree_bo.n_init"),
            (
                TreeBoConfig {
                    beta: f64::NAN,
                    ..d()
                },
                "tree_bo.beta",
            ),
            (
                TreeBoConfig {
                    hyper: AdditiveHyper::Fixed {
                        lengthscale: -1.0,
                        noise: 0.1,
                    },
                    ..d()
                },
                "tree_bo.hyper",
            ),
        ] {
            let e = TreeBo::new(&space, cfg, 0).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidInput { field: f, .. } if f == field),
                "{field}: {e:?}"
            );
        }
    }
}
