//! Maximizing GP-UCB (`μ + √β σ`, Srinivas et al. 2010; DSBO paper Eq. 1) over the unit
//! cube in high dimension: random candidates, then block-coordinate ascent over the
//! kernel's coordinate blocks ([`BlockAscent`]), with clique-wise incremental scoring for
//! additive GPs ([`agora_gp::AdditivePosterior`]). The DSBO paper leaves the acquisition
//! maximizer open (§2.6 and §8.4 of `docs/notes/dsbo.md`); for disjoint cliques the UCB
//! mean decomposes (`μ = Σ_c μ_c(θ_c)`) but the variance term does not, so each block move
//! is scored on the full UCB, and overlapping cliques are simply optimized in turn.
//! Multistart L-BFGS-B ([`crate::maximize_box`], Trieste's likely default) is the
//! alternative ([`AcqOptimizer::Lbfgsb`]).

use crate::analytic::{Analytic, AnalyticKind};
use crate::{BoxMaximizer, maximize_box};
use agora_core::{Error, Result};
use agora_gp::{AdditivePosterior, AdditiveSpec, CliqueColumns, ExactGp};
use agora_math::design::SOBOL_MAX_DIM;
use agora_math::optim::{LbfgsbOptions, minimize};
use agora_math::rng::stream;
use faer::Mat;
use rand::RngExt;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

/// Random candidates plus block-coordinate ascent on the UCB, for additive models in high
/// dimension.
///
/// 1. Score `raw_samples` uniform points, the incumbent, and `raw_samples/4` copies of the
///    incumbent with one random block redrawn; keep the best `starts`.
/// 2. From each start, `sweeps` passes over the blocks in a seeded random order (more if
///    needed to make `min_moves` moves). A block move scores `block_samples` copies of the
///    current point whose block coordinates are redrawn, half uniformly and half by
///    Gaussian steps of scale 0.1, 0.03, 0.01, 0.003 around the current values, and
///    accepts the best if it raises the UCB.
///
/// Cost per move: one batched posterior prediction of `block_samples` points, i.e.
/// `O(block_samples · (M n + n²))` for `M` cliques and `n` observations; no input
/// gradients, which for a sum of `M` kernels cost `O(M n D)` each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockAscent {
    /// Uniform candidates scored first.
    pub raw_samples: usize,
    /// Best candidates refined.
    pub starts: usize,
    /// Passes over the blocks.
    pub sweeps: usize,
    /// Candidates per block move.
    pub block_samples: usize,
    /// At least this many block moves per start: with few blocks (low dimension) the
    /// sweeps repeat until the count is reached.
    pub min_moves: usize,
    /// At most this many block moves per start (`None`: the sweeps, however many blocks).
    /// When the sweeps would make more, the moves go in rounds of 32 blocks not tried since
    /// the last accepted move: with [`BlockAscent::guided`], half are the blocks along which
    /// the UCB rises fastest (the largest norm of its gradient projected on the box,
    /// recomputed every round) and half are drawn at random; so the cost no longer grows
    /// with the number of cliques. Scorers without a gradient choose at random.
    pub max_moves: Option<usize>,
    /// Under a move budget, take half of each round's blocks by the steepest projected
    /// gradient and half at random (`true`), or all at random (`false`).
    pub guided: bool,
    /// Before the block moves, climb from each start by L-BFGS-B on the UCB over the unit
    /// cube with its exact gradient, for at most this many iterations (0: no climb). Only
    /// scorers with a gradient climb (additive models: one gradient costs about one
    /// prediction, `O(Σ_c |c| n + n²)`, against `O(|touching| · n)` per candidate of a block
    /// move). The climbed point is kept only if its UCB is higher.
    pub climb_iters: u64,
}

impl Default for BlockAscent {
    /// 512 raw samples, 2 starts, 2 sweeps (at least 32 moves, no budget), 16 candidates
    /// per move.
    fn default() -> Self {
        BlockAscent {
            raw_samples: 512,
            starts: 2,
            sweeps: 2,
            block_samples: 16,
            min_moves: 32,
            max_moves: None,
            guided: true,
            climb_iters: 0,
        }
    }
}

impl BlockAscent {
    /// DSS-GP-UCB's search, whose cost does not grow with the number of cliques: 128 raw
    /// samples, 2 starts, an L-BFGS-B climb of at most 30 iterations on the UCB's exact
    /// clique-wise gradient from each start, then at most 16 guided block moves of 8
    /// candidates. On a 60-D toy it ties with the two sweeps of the default, paired over 10
    /// seeds (+0.025 ± 0.049 in UCB at the proposal; 32 moves of 16 candidates beat them,
    /// test `the_climb_beats_two_sweeps_of_block_moves`, at twice the CPU time at 1,500
    /// edges: 2.0 against 1.2 CPU-seconds per iteration). At the paper's 1,500 edges it
    /// keeps an iteration under a second where the sweeps take about 20 CPU-seconds
    /// (`agora bench dsbo`).
    pub fn climbing() -> BlockAscent {
        BlockAscent {
            raw_samples: 128,
            block_samples: 8,
            max_moves: Some(16),
            climb_iters: 30,
            ..BlockAscent::default()
        }
    }
}

/// How the UCB is maximized over the unit cube.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AcqOptimizer {
    /// [`BlockAscent`] over the surrogate's blocks (cliques; single coordinates for a full
    /// kernel).
    BlockCoordinate(BlockAscent),
    /// Sobol raw samples and multistart L-BFGS-B ([`crate::maximize_box`]). Its Sobol
    /// design allows at most 256 dimensions; above that the default [`BlockAscent`] is used.
    Lbfgsb(BoxMaximizer),
}

/// The UCB `μ + √β σ` of `gp` at every row of `xs`, in batches of 256 rows.
///
/// Errors: `xs` has the wrong width or a non-finite entry.
pub fn ucb_values(gp: &ExactGp, beta: f64, xs: &Mat<f64>) -> Result<Vec<f64>> {
    let kind = AnalyticKind::Ucb { beta };
    let mut out = Vec::with_capacity(xs.nrows());
    // Chunks bound the n × m cross-covariance buffers.
    let chunk = 256;
    let mut start = 0;
    while start < xs.nrows() {
        let m = chunk.min(xs.nrows() - start);
        let (mu, var) = gp.predict(xs.as_ref().subrows(start, m))?;
        out.extend(mu.iter().zip(&var).map(|(m, v)| kind.on_moments(*m, *v).0));
        start += m;
    }
    Ok(out)
}

/// The index of the largest finite value (the first on ties), if any.
pub fn argmax_finite(v: &[f64]) -> Option<usize> {
    (0..v.len())
        .filter(|&i| v[i].is_finite())
        .reduce(|b, i| if v[i] > v[b] { i } else { b })
}

/// What [`block_ascent`] needs: UCB values at arbitrary points, and at copies of a current
/// point that differ from it only on one block (which a scorer may evaluate
/// incrementally, carrying a per-point `State`).
trait BlockScorer: Sync {
    type State: Send;
    /// The coordinate blocks.
    fn blocks(&self) -> &[Vec<usize>];
    /// UCB at every row of `xs`.
    fn values(&self, xs: &Mat<f64>) -> Result<Vec<f64>>;
    /// The cached state of point `x`.
    fn state(&self, x: &[f64]) -> Self::State;
    /// UCB at every row of `cand`, each equal to the state's point outside block `b`.
    fn moves(&self, st: &Self::State, b: usize, cand: &Mat<f64>) -> Result<Vec<f64>>;
    /// Update the state after the point moved to `x` on block `b`.
    fn commit(&self, st: &mut Self::State, x: &[f64], b: usize);
    /// The UCB's gradient at the state's point `x`, if the scorer has one.
    fn gradient(&self, _st: &Self::State, _x: &[f64]) -> Option<Vec<f64>> {
        None
    }
    /// The UCB and its gradient at any point, if the scorer has them.
    fn value_and_gradient(&self, _x: &[f64]) -> Option<(f64, Vec<f64>)> {
        None
    }
    /// Whether [`BlockScorer::value_and_gradient`] gives values.
    fn has_value_gradient(&self) -> bool {
        false
    }
}

/// Any GP: every score is a plain posterior prediction.
struct GpScorer<'g> {
    gp: &'g ExactGp,
    beta: f64,
    blocks: Vec<Vec<usize>>,
}

impl BlockScorer for GpScorer<'_> {
    type State = ();
    fn blocks(&self) -> &[Vec<usize>] {
        &self.blocks
    }
    fn values(&self, xs: &Mat<f64>) -> Result<Vec<f64>> {
        ucb_values(self.gp, self.beta, xs)
    }
    fn state(&self, _x: &[f64]) {}
    fn moves(&self, _st: &(), _b: usize, cand: &Mat<f64>) -> Result<Vec<f64>> {
        ucb_values(self.gp, self.beta, cand)
    }
    fn commit(&self, _st: &mut (), _x: &[f64], _b: usize) {}
    fn gradient(&self, _st: &(), x: &[f64]) -> Option<Vec<f64>> {
        self.value_and_gradient(x).map(|(_, g)| g)
    }
    fn has_value_gradient(&self) -> bool {
        true
    }
    fn value_and_gradient(&self, x: &[f64]) -> Option<(f64, Vec<f64>)> {
        let ucb = Analytic {
            model: self.gp,
            kind: AnalyticKind::Ucb { beta: self.beta },
        };
        let mut g = vec![0.0; x.len()];
        // A failed prediction reads as a non-finite value, which the climb rejects.
        let v = crate::Acquisition::value_grad(&ucb, x, Some(&mut g)).unwrap_or(f64::NAN);
        Some((v, g))
    }
}

/// An additive GP scored clique by clique.
struct AdditiveUcb<'g> {
    post: AdditivePosterior<'g>,
    beta: f64,
}

impl AdditiveUcb<'_> {
    fn ucb(&self, (mu, var): (Vec<f64>, Vec<f64>)) -> Vec<f64> {
        let kind = AnalyticKind::Ucb { beta: self.beta };
        mu.iter()
            .zip(&var)
            .map(|(m, v)| kind.on_moments(*m, *v).0)
            .collect()
    }
}

impl BlockScorer for AdditiveUcb<'_> {
    type State = CliqueColumns;
    fn blocks(&self) -> &[Vec<usize>] {
        self.post.cliques()
    }
    fn values(&self, xs: &Mat<f64>) -> Result<Vec<f64>> {
        Ok(self.ucb(self.post.predict(xs)))
    }
    fn state(&self, x: &[f64]) -> CliqueColumns {
        self.post.columns(x)
    }
    fn moves(&self, st: &CliqueColumns, b: usize, cand: &Mat<f64>) -> Result<Vec<f64>> {
        Ok(self.ucb(self.post.predict_moves(st, b, cand)))
    }
    fn commit(&self, st: &mut CliqueColumns, x: &[f64], b: usize) {
        self.post.commit(st, x, b)
    }
    fn gradient(&self, _st: &CliqueColumns, x: &[f64]) -> Option<Vec<f64>> {
        Some(self.post.ucb_gradient(x, self.beta.max(0.0).sqrt()))
    }
    fn has_value_gradient(&self) -> bool {
        true
    }
    fn value_and_gradient(&self, x: &[f64]) -> Option<(f64, Vec<f64>)> {
        let kind = AnalyticKind::Ucb { beta: self.beta };
        Some(
            self.post
                .value_and_gradient(x, |m, v| kind.on_moments(m, v)),
        )
    }
}

/// Moves per round (one gradient evaluation) of a budgeted [`BlockAscent`].
const GUIDED_ROUND: usize = 32;

/// The relative rise of the UCB a block move must make to be accepted.
const RISE_TOL: f64 = 1e-12;

/// The `k` blocks whose projected gradient is steepest (squared norm over the block's
/// coordinates; a coordinate at a bound counts only if the gradient points inside), best
/// first (the lower index on ties), among blocks not `tried` and with a rising direction.
fn steepest_blocks(
    blocks: &[Vec<usize>],
    g: &[f64],
    x: &[f64],
    tried: &[bool],
    k: usize,
) -> Vec<usize> {
    let norms: Vec<f64> = blocks
        .iter()
        .map(|block| {
            block
                .iter()
                .map(|&j| {
                    let inside = !((x[j] <= 0.0 && g[j] < 0.0) || (x[j] >= 1.0 && g[j] > 0.0));
                    if inside && g[j].is_finite() {
                        g[j] * g[j]
                    } else {
                        0.0
                    }
                })
                .sum()
        })
        .collect();
    let mut order: Vec<usize> = (0..blocks.len())
        .filter(|&b| !tried[b] && norms[b] > 0.0)
        .collect();
    order.sort_by(|&a, &b| norms[b].total_cmp(&norms[a]).then(a.cmp(&b)));
    order.truncate(k);
    order
}

fn uniform_point(rng: &mut agora_math::rng::Rng, d: usize) -> Vec<f64> {
    (0..d).map(|_| rng.random::<f64>()).collect()
}

/// L-BFGS-B on the UCB from `x0` over the unit cube, for at most `iters` iterations: the
/// best point seen and its UCB, or `None` if the scorer has no gradient. A climb that stops
/// on a solver error still returns the best point it saw; a non-finite UCB anywhere is an
/// error of the objective, which the solver treats as a failed step.
fn climb<S: BlockScorer>(scorer: &S, x0: &[f64], iters: u64) -> Result<Option<(Vec<f64>, f64)>> {
    if !scorer.has_value_gradient() {
        return Ok(None);
    }
    let f = |x: &[f64], g: &mut [f64]| -> Result<f64> {
        let (v, grad) = scorer
            .value_and_gradient(x)
            .ok_or_else(|| Error::State("the scorer lost its gradient".into()))?;
        if !v.is_finite() || grad.iter().any(|d| !d.is_finite()) {
            return Err(Error::Numerical("UCB or its gradient is not finite".into()));
        }
        for (gi, di) in g.iter_mut().zip(&grad) {
            *gi = -di;
        }
        Ok(-v)
    };
    let bounds = vec![(0.0, 1.0); x0.len()];
    let opts = LbfgsbOptions {
        max_iter: iters,
        ..LbfgsbOptions::default()
    };
    let m = minimize(&f, x0, &bounds, opts)?;
    Ok(Some((m.x, -m.f)))
}

/// [`BlockAscent`] on any scorer; returns the best point found (unit cube).
fn block_ascent<S: BlockScorer>(
    scorer: &S,
    incumbent: Option<&[f64]>,
    opts: &BlockAscent,
    d: usize,
    seed: u64,
) -> Result<Vec<f64>> {
    let blocks = scorer.blocks();
    let mut rng = stream(seed, &[0]);
    let mut raw: Vec<Vec<f64>> = (0..opts.raw_samples.max(1))
        .map(|_| uniform_point(&mut rng, d))
        .collect();
    if let Some(inc) = incumbent {
        raw.push(inc.to_vec());
        for _ in 0..opts.raw_samples / 4 {
            let mut x = inc.to_vec();
            if !blocks.is_empty() {
                for &j in &blocks[rng.random_range(0..blocks.len())] {
                    x[j] = rng.random::<f64>();
                }
            }
            raw.push(x);
        }
    }
    let xs = Mat::from_fn(raw.len(), d, |i, j| raw[i][j]);
    let vals = scorer.values(&xs)?;
    let mut order: Vec<usize> = (0..raw.len()).filter(|&i| vals[i].is_finite()).collect();
    if order.is_empty() {
        return Err(Error::Numerical(
            "UCB is not finite at any candidate".into(),
        ));
    }
    order.sort_by(|&a, &b| vals[b].total_cmp(&vals[a]).then(a.cmp(&b)));
    order.truncate(opts.starts.max(1));
    let runs: Vec<Result<(Vec<f64>, f64)>> = order
        .par_iter()
        .enumerate()
        .map(|(s, &i)| {
            let mut rng = stream(seed, &[1, s as u64]);
            let (mut x, mut fx) = (raw[i].clone(), vals[i]);
            if opts.climb_iters > 0
                && let Some((y, fy)) = climb(scorer, &x, opts.climb_iters)?
                && fy > fx
            {
                (x, fx) = (y, fy);
            }
            let mut st = scorer.state(&x);
            let mut idx: Vec<usize> = (0..blocks.len()).collect();
            let sweeps = opts
                .sweeps
                .max(opts.min_moves.div_ceil(blocks.len().max(1)));
            // One block move: candidates redrawn on the block, the best kept if it rises.
            let step = |bi: usize,
                        x: &mut Vec<f64>,
                        fx: &mut f64,
                        st: &mut S::State,
                        rng: &mut agora_math::rng::Rng|
             -> Result<bool> {
                let block = &blocks[bi];
                let m = opts.block_samples.max(1);
                let mut cand = Mat::from_fn(m, d, |_, j| x[j]);
                for r in 0..m {
                    for &j in block {
                        cand[(r, j)] = if r % 2 == 0 {
                            rng.random::<f64>()
                        } else {
                            let step = [0.1, 0.03, 0.01, 0.003][(r / 2) % 4];
                            let z: f64 = StandardNormal.sample(rng);
                            (x[j] + step * z).clamp(0.0, 1.0)
                        };
                    }
                }
                let v = scorer.moves(st, bi, &cand)?;
                // A rise must exceed rounding: near a maximum, moves by tiny steps score
                // within 1e-16 of the current value, and accepting on noise would make the
                // path depend on the last bits of the arithmetic.
                if let Some(r) = argmax_finite(&v)
                    && v[r] > *fx + RISE_TOL * fx.abs().max(1.0)
                {
                    *fx = v[r];
                    for &j in block {
                        x[j] = cand[(r, j)];
                    }
                    scorer.commit(st, x, bi);
                    return Ok(true);
                }
                Ok(false)
            };
            match opts.max_moves.filter(|&k| k < sweeps * blocks.len()) {
                Some(k) => {
                    // Rounds of GUIDED_ROUND moves; a block that did not rise is not retried
                    // until some move is accepted.
                    let mut tried = vec![false; blocks.len()];
                    let mut left = k;
                    while left > 0 {
                        let round = GUIDED_ROUND.min(left);
                        let g = if opts.guided {
                            scorer.gradient(&st, &x)
                        } else {
                            None
                        };
                        let mut order = match &g {
                            Some(g) => steepest_blocks(blocks, g, &x, &tried, round / 2),
                            None => Vec::new(),
                        };
                        let mut rest: Vec<usize> = (0..blocks.len())
                            .filter(|b| !tried[*b] && !order.contains(b))
                            .collect();
                        rest.shuffle(&mut rng);
                        order.extend(rest.into_iter().take(round - order.len()));
                        if order.is_empty() {
                            break;
                        }
                        let mut moved = false;
                        for bi in order {
                            left -= 1;
                            if step(bi, &mut x, &mut fx, &mut st, &mut rng)? {
                                moved = true;
                            } else {
                                tried[bi] = true;
                            }
                        }
                        if moved {
                            tried.iter_mut().for_each(|t| *t = false);
                        }
                    }
                }
                None => {
                    for _ in 0..sweeps {
                        idx.shuffle(&mut rng);
                        for &bi in &idx {
                            step(bi, &mut x, &mut fx, &mut st, &mut rng)?;
                        }
                    }
                }
            }
            Ok((x, fx))
        })
        .collect();
    let mut best: Option<(Vec<f64>, f64)> = None;
    for r in runs {
        let (x, fx) = r?;
        if best.as_ref().is_none_or(|b| fx > b.1) {
            best = Some((x, fx));
        }
    }
    best.map(|b| b.0)
        .ok_or_else(|| Error::Numerical("block ascent found no point".into()))
}

/// The maximizer of GP-UCB with weight `beta` over the unit cube, by `acq`, deterministic in
/// `seed`. `spec` (the additive kernel behind `gp`, if any) enables clique-wise incremental
/// scoring in [`BlockAscent`]; otherwise the blocks are `blocks`. The `incumbent` (best
/// point so far) seeds the candidates.
///
/// Errors: the UCB is not finite at any candidate, or a posterior fails.
pub fn maximize_ucb(
    gp: &ExactGp,
    spec: Option<&AdditiveSpec>,
    beta: f64,
    blocks: &[Vec<usize>],
    incumbent: Option<&[f64]>,
    acq: &AcqOptimizer,
    seed: u64,
) -> Result<Vec<f64>> {
    let d = gp.dim();
    let opts = match acq {
        AcqOptimizer::Lbfgsb(opts) if d <= SOBOL_MAX_DIM => {
            let ucb = Analytic {
                model: gp,
                kind: AnalyticKind::Ucb { beta },
            };
            let extra: Vec<Vec<f64>> = incumbent.map(|x| vec![x.to_vec()]).unwrap_or_default();
            return Ok(maximize_box(&ucb, opts, &extra, None, seed)?.0);
        }
        AcqOptimizer::Lbfgsb(_) => BlockAscent::default(),
        AcqOptimizer::BlockCoordinate(opts) => *opts,
    };
    match spec {
        Some(spec) => {
            let scorer = AdditiveUcb {
                post: AdditivePosterior::new(gp, spec)?,
                beta,
            };
            block_ascent(&scorer, incumbent, &opts, d, seed)
        }
        None => {
            let scorer = GpScorer {
                gp,
                beta,
                blocks: blocks.to_vec(),
            };
            block_ascent(&scorer, incumbent, &opts, d, seed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_gp::{FittedSurrogate, Surrogate};
    use agora_problems::additive::{AdditiveConfig, AdditiveFunction};

    /// The UCB (weight `beta`) at the proposal of `acq` on an additive GP.
    fn ucb_at_proposal(
        gp: &ExactGp,
        fitted: &FittedSurrogate,
        beta: f64,
        cliques: &[Vec<usize>],
        acq: BlockAscent,
        seed: u64,
    ) -> f64 {
        let u = maximize_ucb(
            gp,
            fitted.additive(),
            beta,
            cliques,
            None,
            &AcqOptimizer::BlockCoordinate(acq),
            seed,
        )
        .unwrap();
        ucb_values(gp, beta, &Mat::from_fn(1, u.len(), |_, j| u[j])).unwrap()[0]
    }

    /// Mean and standard error of paired differences.
    fn mean_se(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let se = (v.iter().map(|a| (a - m).powi(2)).sum::<f64>() / (n * (n - 1.0))).sqrt();
        (m, se)
    }

    /// An additive GP on `n` points of a small additive function, in standardized units.
    fn small_gp(cliques: &[Vec<usize>], d: usize, n: usize) -> (ExactGp, FittedSurrogate) {
        let f = AdditiveFunction::with_groups(d, cliques, &AdditiveConfig::new(d, 0.0), 5).unwrap();
        let mut rng = stream(8, &[]);
        let x: Vec<Vec<f64>> = (0..n).map(|_| uniform_point(&mut rng, d)).collect();
        let y: Vec<f64> = x.iter().map(|p| f.eval(p)).collect();
        let xm = Mat::from_fn(n, d, |i, j| x[i][j]);
        let fitted =
            FittedSurrogate::fit(&Surrogate::additive(cliques.to_vec()), &xm, &y, None, 0).unwrap();
        (fitted.condition(xm, &y).unwrap(), fitted)
    }

    #[test]
    fn clique_wise_scores_equal_the_exact_gp_posterior() {
        let cliques = vec![vec![0, 1], vec![1, 2], vec![3], vec![4, 5, 6]];
        let (gp, fitted) = small_gp(&cliques, 7, 25);
        let spec = fitted.additive().unwrap();
        let post = AdditiveUcb {
            post: AdditivePosterior::new(&gp, spec).unwrap(),
            beta: 2.5,
        };
        let mut rng = stream(2, &[]);
        let xs = Mat::from_fn(9, 7, |_, _| rng.random::<f64>());
        let reference = ucb_values(&gp, 2.5, &xs).unwrap();
        let fast = post.values(&xs).unwrap();
        for (a, b) in fast.iter().zip(&reference) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
        // Block moves from a cached state agree with fresh predictions of the moved points.
        let mut x: Vec<f64> = (0..7).map(|j| xs[(0, j)]).collect();
        let mut st = post.state(&x);
        for (b, clique) in cliques.iter().enumerate() {
            let mut cand = Mat::from_fn(4, 7, |_, j| x[j]);
            for r in 0..4 {
                for &j in clique {
                    cand[(r, j)] = rng.random::<f64>();
                }
            }
            let moved = post.moves(&st, b, &cand).unwrap();
            let reference = ucb_values(&gp, 2.5, &cand).unwrap();
            for (a, r) in moved.iter().zip(&reference) {
                assert!((a - r).abs() < 1e-9, "block {b}: {a} vs {r}");
            }
            x = (0..7).map(|j| cand[(0, j)]).collect();
            post.commit(&mut st, &x, b);
            let fresh = post.state(&x);
            for (a, r) in st.total().iter().zip(fresh.total()) {
                assert!((a - r).abs() < 1e-12);
            }
        }
    }

    /// The climb (L-BFGS-B on the clique-wise UCB and its gradient) then budgeted block
    /// moves give the proposal of the slow path: every score a fresh posterior of the
    /// exact GP and its generic kernel gradient.
    #[test]
    fn the_climb_gives_the_slow_paths_proposal() {
        let cliques = vec![vec![0, 1], vec![1, 2], vec![3], vec![4, 5, 6]];
        let (gp, fitted) = small_gp(&cliques, 7, 25);
        let acq = AcqOptimizer::BlockCoordinate(BlockAscent {
            raw_samples: 64,
            climb_iters: 30,
            max_moves: Some(16),
            ..BlockAscent::default()
        });
        for seed in 0..3 {
            let fast =
                maximize_ucb(&gp, fitted.additive(), 2.0, &cliques, None, &acq, seed).unwrap();
            let slow = maximize_ucb(&gp, None, 2.0, &cliques, None, &acq, seed).unwrap();
            let gap = fast
                .iter()
                .zip(&slow)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(gap < 1e-6, "seed {seed}: {fast:?} vs {slow:?}");
        }
    }

    /// In 60 dimensions with 30 overlapping cliques, 30 L-BFGS-B iterations from each start
    /// then 32 guided block moves reach a higher UCB than the suite's two sweeps of block
    /// moves over every clique (60 moves), from a quarter of the raw candidates, paired over
    /// 10 seeds (the one verdict rule: mean difference above 2 standard errors). Measured
    /// when written: +0.164 ± 0.044; the climb alone ties (−0.000 ± 0.050), and 64 guided
    /// moves alone gain +0.046 ± 0.018.
    #[test]
    fn the_climb_beats_two_sweeps_of_block_moves() {
        let d = 60;
        let cliques: Vec<Vec<usize>> = (0..d / 2)
            .map(|c| vec![2 * c, 2 * c + 1, (2 * c + 2) % d])
            .collect();
        let (gp, fitted) = small_gp(&cliques, d, 40);
        let value = |acq, seed| ucb_at_proposal(&gp, &fitted, 2.0, &cliques, acq, seed);
        let climb = BlockAscent {
            raw_samples: 128,
            climb_iters: 30,
            max_moves: Some(32),
            ..BlockAscent::default()
        };
        let diff: Vec<f64> = (0..10)
            .map(|seed| {
                let (a, b) = (value(climb, seed), value(BlockAscent::default(), seed));
                eprintln!("seed {seed}: climb {a:.4} sweeps {b:.4}");
                a - b
            })
            .collect();
        let (mean, se) = mean_se(&diff);
        assert!(mean > 2.0 * se, "climb − sweeps {mean} ± {se}");
    }

    #[test]
    fn block_ascent_matches_a_brute_force_grid_in_2d() {
        for cliques in [vec![vec![0], vec![1]], vec![vec![0, 1]]] {
            let (gp, fitted) = small_gp(&cliques, 2, 8);
            let beta = 2.0;
            // Brute force: a 401 × 401 grid.
            let g = 401;
            let grid = Mat::from_fn(g * g, 2, |i, j| {
                let k = if j == 0 { i / g } else { i % g };
                k as f64 / (g - 1) as f64
            });
            let best_grid = ucb_values(&gp, beta, &grid)
                .unwrap()
                .into_iter()
                .fold(f64::NEG_INFINITY, f64::max);
            // 32 moves of 2 blocks sweep; a budget of 24 takes blocks by the gradient.
            let guided = BlockAscent {
                max_moves: Some(24),
                ..BlockAscent::default()
            };
            for acq in [
                AcqOptimizer::BlockCoordinate(BlockAscent::default()),
                AcqOptimizer::BlockCoordinate(guided),
                AcqOptimizer::Lbfgsb(BoxMaximizer::default()),
            ] {
                let blocks = cliques.clone();
                let u = maximize_ucb(&gp, fitted.additive(), beta, &blocks, None, &acq, 3).unwrap();
                let v = ucb_values(&gp, beta, &Mat::from_fn(1, 2, |_, j| u[j])).unwrap()[0];
                assert!(
                    v >= best_grid - 1e-3,
                    "{cliques:?} {acq:?}: {v} vs grid {best_grid}"
                );
            }
        }
        assert_eq!(argmax_finite(&[f64::NAN, 1.0, 3.0, 3.0]), Some(2));
        assert_eq!(argmax_finite(&[f64::NAN]), None);
    }

    #[test]
    fn steepest_blocks_rank_by_the_projected_gradient() {
        let blocks = vec![vec![0], vec![1, 2], vec![3], vec![4]];
        // Coordinate 0 sits at its upper bound with the gradient pointing out: no rise.
        let x = [1.0, 0.5, 0.5, 0.0, 0.3];
        let g = [9.0, 1.0, -1.0, 1.5, -0.5];
        let none = [false; 4];
        assert_eq!(steepest_blocks(&blocks, &g, &x, &none, 4), vec![2, 1, 3]);
        assert_eq!(steepest_blocks(&blocks, &g, &x, &none, 1), vec![2]);
        let tried = [false, false, true, false];
        assert_eq!(steepest_blocks(&blocks, &g, &x, &tried, 4), vec![1, 3]);
    }

    #[test]
    fn budgeted_moves_rise_and_the_gradient_helps() {
        // 60 singleton blocks of which the function reads 2, on the posterior mean (β = 0):
        // within 16 moves, half by the gradient beats all at random over seeds, and both
        // rise above the raw candidates.
        let d = 60;
        let cliques: Vec<Vec<usize>> = (0..d).map(|j| vec![j]).collect();
        let mut rng = stream(5, &[]);
        let n = 30;
        let x: Vec<Vec<f64>> = (0..n).map(|_| uniform_point(&mut rng, d)).collect();
        let y: Vec<f64> = x
            .iter()
            .map(|p| (6.0 * p[7]).sin() + (5.0 * p[41]).cos())
            .collect();
        let xm = Mat::from_fn(n, d, |i, j| x[i][j]);
        let fitted =
            FittedSurrogate::fit(&Surrogate::additive(cliques.clone()), &xm, &y, None, 0).unwrap();
        let gp = fitted.condition(xm, &y).unwrap();
        let value = |acq, seed| ucb_at_proposal(&gp, &fitted, 0.0, &cliques, acq, seed);
        let budget = |moves: usize, guided: bool| BlockAscent {
            max_moves: Some(moves),
            guided,
            ..BlockAscent::default()
        };
        let (mut diff, mut rise) = (Vec::new(), Vec::new());
        for seed in 0..10 {
            let raw = value(budget(0, true), seed);
            let guided = value(budget(16, true), seed);
            let random = value(budget(16, false), seed);
            eprintln!("seed {seed}: raw {raw:.3} random {random:.3} guided {guided:.3}");
            diff.push(guided - random);
            rise.push(random - raw);
        }
        let (mean, se) = mean_se(&diff);
        assert!(rise.iter().all(|r| *r >= 0.0), "{rise:?}");
        assert!(mean > 2.0 * se, "guided − random {mean} ± {se}");
    }
}
