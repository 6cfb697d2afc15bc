//! ALEBO (Letham, Calandra, Rai & Bakshy 2020, "Re-examining linear embeddings for
//! high-dimensional Bayesian optimization", NeurIPS) as a strategy: one of DSBO's
//! high-dimensional baselines (DSBO paper, Fig. 9).
//!
//! **Embedding.** `B ∈ R^{d×D}` has i.i.d. `N(0, 1)` entries and each of its `D` columns
//! scaled to unit length, so that the column of every ambient coordinate is uniform on the
//! sphere `S^{d−1}` (ALEBO's choice: the authors' implementation in Ax normalizes the
//! columns, not the rows). A point `y ∈ R^d` is evaluated at its up-projection
//! `x = B†y ∈ [−1, 1]^D`, i.e. at `u = (x + 1)/2` in the unit cube of the protocol.
//! `B† = Bᵀ(BBᵀ)⁻¹` is formed from the thin QR factorization `Bᵀ = QR` as `B† = QR⁻ᵀ`, one
//! triangular solve per row (no inverse, and the conditioning of `B`, not of `BBᵀ`), so
//! `BB† = I_d`.
//!
//! **Polytope.** The search space is `P = {y : −1 ≤ B†y ≤ 1}` (Sec. 5, the linear
//! constraints of the acquisition problem): every point of `P` maps into the box without
//! clipping, and nothing outside `P` is ever proposed. `P` is centrally symmetric; the ball
//! of radius `r = 1 / max_j ‖(B†)_j‖` about the origin is the largest inside it.
//!
//! **Model.** ALEBO's kernel is `k(y, y') = σ² exp(−(y − y')ᵀ Γ (y − y'))` (Sec. 5). If the
//! objective has an ARD RBF kernel with inverse squared lengthscales `Λ` in the ambient
//! coordinates, then on the embedding `Γ = B†ᵀ Λ B† / 2`; ALEBO learns a general PSD `Γ`
//! (its upper Cholesky factor, `d(d+1)/2` numbers) and averages over a Laplace
//! approximation of its posterior. agora offers two reductions, both fitted by ML-II (MAP
//! with BoTorch's priors, [`agora_gp::FittedSurrogate`]) and both exactly this kernel:
//! - [`AleboMetric::Ambient`] (the default): `Γ = B†ᵀ Λ B† / 2` with `Λ` diagonal, i.e. an RBF
//!   ARD GP on the up-projected points `u(y)` with `D` lengthscales and BoTorch's
//!   dimension-scaled lengthscale prior. This is the paper's derivation of `Γ` with the
//!   unknown true embedding taken to be the ambient coordinates themselves: exact when the
//!   objective depends on a few of them (the benchmarks of the paper and of the tests
//!   here), and `Γ` is full, not diagonal, in `y`.
//! - [`AleboMetric::Embedded`]: `Γ` diagonal in `y` (an ARD kernel on `y / 2r`, `d`
//!   lengthscales). Cheaper, but a function of a few ambient coordinates varies along
//!   directions of `y` that are not axes, which the paper (Sec. 4) shows an ARD kernel on
//!   the embedding models poorly.
//!
//! Measured once (10 seeds × 40 evaluations in `[0, 1]^100`, `d = 10`): mean best 2.97
//! (ambient) vs 2.71 (embedded) on Hartmann6 (maximum 3.32), −0.55 vs −1.07 on Branin
//! (maximum −0.398).
//!
//! A general `Γ` by ML-II was not chosen: it is a new kernel (a model belongs in agora-gp,
//! not here), and `d(d+1)/2 = 55` free parameters at `d = 10` from a few dozen points is
//! what ALEBO needs its posterior averaging for.
//!
//! **Design.** `n_init` points uniform in `P` by hit-and-run (Smith 1984): from the centre,
//! each step draws a direction uniform on the sphere, finds the chord of `P` along it by a
//! ratio test on the `2D` constraints and moves to a uniform point of the chord; points are
//! taken after a burn-in of `10 d` steps and every `d` steps after that.
//!
//! **Acquisition.** EI (ALEBO's, for noiseless evaluations), maximized as log EI (the same
//! maximizer without EI's flat regions; Ament et al. 2023), or UCB. It is maximized over
//! `P` only: `raw_samples` hit-and-run points of `P` are scored, the best `restarts` and the
//! incumbent are refined by an augmented Lagrangian ([`agora_math::constrained`]) with the
//! `2D` linear constraints `±(B†y)_j ≤ 1`, and each result is pulled back along the segment
//! from its start (a point of `P`) to the last point of `P` (a ratio test), then checked
//! exactly ([`Embedding::contains`]): an infeasible candidate is never proposed. (ALEBO:
//! 1000 raw samples, 10 restarts, SLSQP.)
//!
//! **Embedding dimension.** `d` must be at least the objective's effective dimension, and a
//! larger `d` makes it likelier that `P` holds an optimum (Sec. 5) at the price of a harder
//! model; the default 10 leaves room for effective dimensions up to about 5 with a margin
//! `d ≈ 2 d_e`, and keeps the acquisition problem (10 variables) small.
//!
//! **Differences from ALEBO as published**, besides the metric above: no Laplace
//! averaging over `Γ` (one MAP fit); the noise variance is learned (ALEBO fixes it for
//! noiseless evaluations); hyperparameters are warm-started from the previous fit (ALEBO:
//! 10 cold random restarts every iteration); the design is hit-and-run in `P` (Ax's
//! initializer projects uniform points of a large box and rejects those that leave `P`);
//! the local search is an augmented Lagrangian with the pull-back (ALEBO: SLSQP).

use crate::Strategy;
use crate::evaluations::{
    Evaluations, Refits, continuous_box, evaluate_query, evaluated, evaluations_strategy,
};
use crate::open::{AskTell, OpenQuery};
use agora_acq::{Acquisition, Analytic, AnalyticKind};
use agora_core::{Answer, Error, Query, Result, Space};
use agora_gp::{ExactGp, GpConfig, StationaryKind, Surrogate};
use agora_math::constrained::{self, AlOptions, Constraint, ConstraintFn, Kind, Reparam};
use agora_math::optim::LbfgsbOptions;
use agora_math::rng::{Rng, derive_seed, stream};
use faer::{Mat, MatRef};
use rand::RngExt;
use rand_distr::StandardNormal;
use rayon::prelude::*;

/// The metric `Γ` of ALEBO's kernel (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AleboMetric {
    /// `Γ = B†ᵀ Λ B† / 2`: an ARD GP on the up-projected points, `D` lengthscales.
    Ambient,
    /// `Γ` diagonal in the embedding: an ARD GP on `y`, `d` lengthscales.
    Embedded,
}

/// The acquisition [`Alebo`] maximizes over the polytope.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AleboAcquisition {
    /// Expected improvement (maximized as log EI).
    Ei,
    /// Upper confidence bound `μ + √β σ` (standardized outcomes).
    Ucb {
        /// Exploration weight β.
        beta: f64,
    },
}

/// Settings of [`Alebo`].
#[derive(Debug, Clone, PartialEq)]
pub struct AleboConfig {
    /// Embedding dimension `d`, from 1 to the space's dimension `D`.
    pub embedding_dim: usize,
    /// Initial points, uniform in the polytope.
    pub n_init: usize,
    /// The kernel's metric `Γ`.
    pub metric: AleboMetric,
    /// The acquisition.
    pub acquisition: AleboAcquisition,
    /// GP model (`None`: RBF ARD with an output scale and BoTorch's priors for the GP's
    /// input dimension, `D` or `d` by [`AleboConfig::metric`]).
    pub gp: Option<GpConfig>,
    /// Refit the hyperparameters every this many evaluations (ALEBO refits every one).
    pub refit_every: usize,
    /// Hit-and-run points of the polytope the acquisition is first scored on.
    pub raw_samples: usize,
    /// Best raw points refined by the constrained local search.
    pub restarts: usize,
}

impl Default for AleboConfig {
    /// `d = 10`, 10 initial points, the ambient metric, EI, a refit every evaluation, 512
    /// raw samples and 10 restarts.
    fn default() -> Self {
        AleboConfig {
            embedding_dim: 10,
            n_init: 10,
            metric: AleboMetric::Ambient,
            acquisition: AleboAcquisition::Ei,
            gp: None,
            refit_every: 1,
            raw_samples: 512,
            restarts: 10,
        }
    }
}

/// A linear embedding of the box `[−1, 1]^D`: the matrix `B` (`d × D`), its pseudo-inverse
/// `B†` and the polytope `P = {y : −1 ≤ B†y ≤ 1}` of the points that map into the box.
#[derive(Debug, Clone)]
pub struct Embedding {
    b: Mat<f64>,
    pinv: Mat<f64>,
    /// `1 / max_j ‖(B†)_j‖`: the radius of the largest ball about 0 inside `P`.
    inradius: f64,
    /// `Σ_j |B_ij|`: on `P`, `|y_i|` is at most this (`y = Bx` with `x` in the box).
    outer: Vec<f64>,
}

impl Embedding {
    /// ALEBO's random embedding of `[−1, 1]^big_d` of dimension `d`: i.i.d. `N(0, 1)`
    /// entries drawn row by row from `rng`, each column scaled to unit length.
    ///
    /// Errors: as [`Embedding::new`].
    pub fn random(d: usize, big_d: usize, rng: &mut Rng) -> Result<Embedding> {
        let mut b = Mat::from_fn(d, big_d, |_, _| rng.sample::<f64, _>(StandardNormal));
        for j in 0..big_d {
            let norm = (0..d).map(|i| b[(i, j)] * b[(i, j)]).sum::<f64>().sqrt();
            if norm > 0.0 {
                for i in 0..d {
                    b[(i, j)] /= norm;
                }
            }
        }
        Embedding::new(b)
    }

    /// The embedding of a given `d × D` matrix `B` of full row rank, `1 ≤ d ≤ D`.
    ///
    /// Errors: a bad shape or a non-finite entry (naming `embedding`); a rank-deficient
    /// `B` ([`Error::Numerical`]).
    pub fn new(b: Mat<f64>) -> Result<Embedding> {
        let (d, big_d) = (b.nrows(), b.ncols());
        if d == 0 || d > big_d {
            return Err(Error::invalid(
                "embedding",
                format!("needs 1 <= d <= D rows and columns, got {d} x {big_d}"),
            ));
        }
        agora_gp::check_mat("embedding", b.as_ref(), big_d)?;
        // Bᵀ = QR (Q: D × d, R: d × d upper triangular), so B† = Q R⁻ᵀ.
        let qr = b.transpose().qr();
        let q = qr.compute_thin_Q();
        let r = qr.thin_R();
        let rmax = (0..d).map(|k| r[(k, k)].abs()).fold(0.0, f64::max);
        if (0..d).any(|k| r[(k, k)].abs() <= 1e-12 * rmax) {
            return Err(Error::Numerical(
                "the embedding matrix B is rank-deficient".into(),
            ));
        }
        // Row j of B† is (R⁻¹ q_j)ᵀ, q_j row j of Q: back substitution.
        let mut pinv = Mat::zeros(big_d, d);
        for j in 0..big_d {
            for k in (0..d).rev() {
                let s: f64 = (k + 1..d).map(|l| r[(k, l)] * pinv[(j, l)]).sum();
                pinv[(j, k)] = (q[(j, k)] - s) / r[(k, k)];
            }
        }
        let row_norm = |j: usize| (0..d).map(|k| pinv[(j, k)].powi(2)).sum::<f64>().sqrt();
        let inradius = 1.0 / (0..big_d).map(row_norm).fold(0.0, f64::max);
        let outer = (0..d)
            .map(|i| (0..big_d).map(|j| b[(i, j)].abs()).sum())
            .collect();
        Ok(Embedding {
            b,
            pinv,
            inradius,
            outer,
        })
    }

    /// The embedding dimension `d`.
    pub fn dim(&self) -> usize {
        self.b.nrows()
    }

    /// The box dimension `D`.
    pub fn ambient_dim(&self) -> usize {
        self.b.ncols()
    }

    /// `B` (`d × D`).
    pub fn matrix(&self) -> MatRef<'_, f64> {
        self.b.as_ref()
    }

    /// `B†` (`D × d`).
    pub fn pinv(&self) -> MatRef<'_, f64> {
        self.pinv.as_ref()
    }

    /// The radius of the largest ball about the origin inside the polytope.
    pub fn inradius(&self) -> f64 {
        self.inradius
    }

    /// The up-projection `x = B†y` (`y` of length `d`).
    fn up(&self, y: &[f64]) -> Vec<f64> {
        let p = &self.pinv;
        (0..p.nrows())
            .map(|j| (0..p.ncols()).map(|k| p[(j, k)] * y[k]).sum())
            .collect()
    }

    /// The projection `y = Bx` (`x` of length `D`).
    #[cfg(test)]
    fn down(&self, x: &[f64]) -> Vec<f64> {
        let b = &self.b;
        (0..b.nrows())
            .map(|i| (0..b.ncols()).map(|j| b[(i, j)] * x[j]).sum())
            .collect()
    }

    /// Whether `y` (of length `d`) lies in the polytope: every entry of the computed `B†y`
    /// is finite and in `[−1, 1]`.
    pub fn contains(&self, y: &[f64]) -> bool {
        y.len() == self.dim() && in_box(&self.up(y))
    }

    /// The unit-cube point `(B†y + 1)/2` of a point `y` of the polytope (`None` outside it).
    pub fn unit(&self, y: &[f64]) -> Option<Vec<f64>> {
        if y.len() != self.dim() {
            return None;
        }
        let x = self.up(y);
        in_box(&x).then(|| x.iter().map(|v| (v + 1.0) / 2.0).collect())
    }

    /// `n` points of the polytope by hit-and-run from `start` (a point of it): `burn`
    /// steps, then a point every `thin` steps.
    fn hit_and_run(
        &self,
        rng: &mut Rng,
        start: &[f64],
        burn: usize,
        thin: usize,
        n: usize,
    ) -> Vec<Vec<f64>> {
        let d = self.dim();
        let mut y = start.to_vec();
        let mut out = Vec::with_capacity(n);
        for s in 0..burn + n * thin.max(1) {
            let v: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
            let (lo, hi) = self.chord(&y, &v);
            let mut t = lo + (hi - lo) * rng.random::<f64>();
            // Round-off at the ends of the chord: move back towards y until inside.
            for _ in 0..64 {
                let next: Vec<f64> = y.iter().zip(&v).map(|(a, b)| a + t * b).collect();
                if self.contains(&next) {
                    y = next;
                    break;
                }
                t *= 0.5;
            }
            if s + 1 > burn && (s + 1 - burn).is_multiple_of(thin.max(1)) {
                out.push(y.clone());
            }
        }
        out
    }

    /// `[lo, hi]`, the `t` with `B†(y + t v)` in the box (`y` in the polytope; `[0, 0]` for
    /// a zero direction).
    fn chord(&self, y: &[f64], v: &[f64]) -> (f64, f64) {
        let (x, a) = (self.up(y), self.up(v));
        let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
        for (xj, aj) in x.iter().zip(&a) {
            if *aj != 0.0 {
                let (p, q) = ((-1.0 - xj) / aj, (1.0 - xj) / aj);
                lo = lo.max(p.min(q));
                hi = hi.min(p.max(q));
            }
        }
        if lo.is_finite() && hi.is_finite() && lo <= hi {
            (lo.min(0.0), hi.max(0.0))
        } else {
            (0.0, 0.0)
        }
    }

    /// The point of the polytope on the segment from `from` (in it) to `to` that is
    /// nearest `to`: `to` itself when it lies in the polytope.
    fn toward(&self, from: &[f64], to: &[f64]) -> Vec<f64> {
        if self.contains(to) {
            return to.to_vec();
        }
        let v: Vec<f64> = to.iter().zip(from).map(|(a, b)| a - b).collect();
        let mut t = self.chord(from, &v).1.min(1.0);
        for k in 0..64 {
            let y: Vec<f64> = from.iter().zip(&v).map(|(a, b)| a + t * b).collect();
            if self.contains(&y) {
                return y;
            }
            // Round-off at the face first, then halve.
            t *= if k < 4 {
                1.0 - 1e-9 * 10f64.powi(k)
            } else {
                0.5
            };
        }
        from.to_vec()
    }
}

/// Every entry finite and in `[−1, 1]`.
fn in_box(x: &[f64]) -> bool {
    x.iter().all(|v| v.abs() <= 1.0)
}

/// Hit-and-run burn-in steps per embedding dimension.
const BURN_PER_DIM: usize = 10;

/// The GP's inputs `φ(y)`, an affine map of the embedding: `(B†y + 1)/2` for
/// [`AleboMetric::Ambient`], `y / 2r` for [`AleboMetric::Embedded`].
#[derive(Debug, Clone, Copy)]
struct Features<'a> {
    embedding: &'a Embedding,
    metric: AleboMetric,
}

impl Features<'_> {
    /// The GP's input dimension.
    fn dim(&self) -> usize {
        match self.metric {
            AleboMetric::Ambient => self.embedding.ambient_dim(),
            AleboMetric::Embedded => self.embedding.dim(),
        }
    }

    fn scale(&self) -> f64 {
        0.5 / self.embedding.inradius
    }

    fn of(&self, y: &[f64]) -> Vec<f64> {
        match self.metric {
            AleboMetric::Ambient => self
                .embedding
                .up(y)
                .iter()
                .map(|x| (x + 1.0) / 2.0)
                .collect(),
            AleboMetric::Embedded => y.iter().map(|v| v * self.scale()).collect(),
        }
    }

    /// `φ` of every row.
    fn rows(&self, ys: &[Vec<f64>]) -> Mat<f64> {
        let f: Vec<Vec<f64>> = ys.iter().map(|y| self.of(y)).collect();
        Mat::from_fn(f.len(), self.dim(), |i, j| f[i][j])
    }

    /// `Mᵀ g`, the gradient in `y` of a function of `φ(y)` with gradient `g`.
    fn pull_back(&self, g: &[f64], gy: &mut [f64]) {
        match self.metric {
            AleboMetric::Ambient => {
                let p = self.embedding.pinv();
                for (k, gk) in gy.iter_mut().enumerate() {
                    *gk = 0.5 * (0..p.nrows()).map(|j| p[(j, k)] * g[j]).sum::<f64>();
                }
            }
            AleboMetric::Embedded => {
                for (gk, v) in gy.iter_mut().zip(g) {
                    *gk = v * self.scale();
                }
            }
        }
    }
}

/// An acquisition on the GP's inputs, read as a function of the embedding `y`.
struct OnEmbedding<'a> {
    acq: Analytic<'a, ExactGp>,
    features: Features<'a>,
}

impl Acquisition for OnEmbedding<'_> {
    fn dim(&self) -> usize {
        self.features.embedding.dim()
    }

    fn value_grad(&self, y: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
        let x = self.features.of(y);
        match grad {
            None => self.acq.value_grad(&x, None),
            Some(gy) => {
                let mut g = vec![0.0; x.len()];
                let v = self.acq.value_grad(&x, Some(&mut g))?;
                self.features.pull_back(&g, gy);
                Ok(v)
            }
        }
    }

    fn values(&self, ys: MatRef<'_, f64>) -> Result<Vec<f64>> {
        let rows: Vec<Vec<f64>> = (0..ys.nrows())
            .map(|i| (0..ys.ncols()).map(|j| ys[(i, j)]).collect())
            .collect();
        self.acq.values(self.features.rows(&rows).as_ref())
    }
}

/// The local search's variables `z = y / r` (`r` the inradius), so that the polytope
/// has a unit scale in every direction whatever the scale of `B`.
struct Scaled(f64, usize);

impl Reparam for Scaled {
    fn dim_x(&self) -> usize {
        self.1
    }
    fn forward(&self, z: &[f64], y: &mut [f64]) {
        for (yi, zi) in y.iter_mut().zip(z) {
            *yi = self.0 * zi;
        }
    }
    fn pullback(&self, gy: &[f64], gz: &mut [f64]) {
        for (gz, gy) in gz.iter_mut().zip(gy) {
            *gz = self.0 * gy;
        }
    }
}

/// Augmented-Lagrangian settings of the local search: a few outer iterations of loosely
/// solved subproblems (the pull-back restores exact feasibility).
const LOCAL: AlOptions = AlOptions {
    penalty: 10.0,
    max_penalty: 1e8,
    max_outer: 8,
    feas_tol: 1e-9,
    opt_tol: 1e-6,
    f_tol: 1e-10,
    inner: LbfgsbOptions {
        m: 10,
        ftol: 1e-12,
        pgtol: 1e-7,
        max_iter: 200,
    },
    inner_pgtol_start: 1e-3,
    inner_ftol_start: 1e-8,
};

/// Maximize `acq` over the polytope from `y0` (a point of it): an augmented Lagrangian on
/// the constraints `±(B†y)_j − 1 ≤ 0`, then the pull-back to the polytope along the
/// segment from `y0`. Returns the point and its value.
fn refine(acq: &OnEmbedding<'_>, y0: &[f64]) -> Result<(Vec<f64>, f64)> {
    let emb = acq.features.embedding;
    let (d, r) = (emb.dim(), emb.inradius());
    let neg = |y: &[f64], g: &mut [f64]| -> Result<f64> {
        let v = acq.value_grad(y, Some(g))?;
        g.iter_mut().for_each(|e| *e = -*e);
        Ok(-v)
    };
    let p = emb.pinv();
    let fns: Vec<Box<ConstraintFn<'_>>> = (0..p.nrows())
        .flat_map(|j| {
            [1.0, -1.0].map(|sign| -> Box<ConstraintFn<'_>> {
                Box::new(move |y: &[f64], g: &mut [f64]| {
                    let mut s = 0.0;
                    for k in 0..y.len() {
                        s += p[(j, k)] * y[k];
                        g[k] = sign * p[(j, k)];
                    }
                    Ok(sign * s - 1.0)
                })
            })
        })
        .collect();
    let cons: Vec<Constraint<'_>> = fns
        .iter()
        .map(|f| Constraint {
            kind: Kind::Inequality,
            f: f.as_ref(),
        })
        .collect();
    let bounds: Vec<(f64, f64)> = emb.outer.iter().map(|o| (-o / r, o / r)).collect();
    let z0: Vec<f64> = y0.iter().map(|v| v / r).collect();
    let res = constrained::minimize_al_in(&neg, &cons, &Scaled(r, d), &bounds, &z0, None, LOCAL)?;
    let to: Vec<f64> = res.x.iter().map(|z| z * r).collect();
    let y = emb.toward(y0, &to);
    let v = acq.value_grad(&y, None)?;
    Ok((y, v))
}

/// ALEBO (Letham et al. 2020): BO in a random linear embedding, on the polytope of points
/// that map into the box. Deterministic in its seed: `B` draws from ChaCha stream `[3]`, the
/// design from stream `[0]`, pick `p` its raw samples from stream `[1, p]` and fits with
/// seed `derive_seed(seed, [2, p])`.
#[derive(Debug, Clone)]
pub struct Alebo {
    config: AleboConfig,
    seed: u64,
    embedding: Embedding,
    surrogate: Surrogate,
    /// The initial design (embedding coordinates).
    design: Vec<Vec<f64>>,
    evals: Evaluations,
    /// The embedding coordinates of each evaluation.
    points: Vec<Vec<f64>>,
    pick: u64,
    fits: Refits,
    open: OpenQuery<Vec<f64>>,
}

impl Alebo {
    /// ALEBO on `space` (a box of real parameters).
    ///
    /// Errors: a bad space or configuration (naming the field).
    pub fn new(space: &Space, config: AleboConfig, seed: u64) -> Result<Alebo> {
        let c = &config;
        let big_d = continuous_box(space)?;
        if c.embedding_dim == 0 || c.embedding_dim > big_d {
            return Err(Error::invalid(
                "alebo.embedding_dim",
                format!(
                    "must be an integer from 1 to {big_d} (the space's dimension), got {}",
                    c.embedding_dim
                ),
            ));
        }
        for (name, v) in [
            ("alebo.n_init", c.n_init),
            ("alebo.refit_every", c.refit_every),
            ("alebo.raw_samples", c.raw_samples),
            ("alebo.restarts", c.restarts),
        ] {
            if v == 0 {
                return Err(Error::invalid(name, "must be at least 1"));
            }
        }
        if let AleboAcquisition::Ucb { beta } = c.acquisition
            && !(beta.is_finite() && beta >= 0.0)
        {
            return Err(Error::invalid(
                "alebo.acquisition.beta",
                format!("must be a finite number >= 0, got {beta}"),
            ));
        }
        let d = c.embedding_dim;
        let embedding = Embedding::random(d, big_d, &mut stream(seed, &[3]))?;
        let p = Features {
            embedding: &embedding,
            metric: c.metric,
        }
        .dim();
        let surrogate = Surrogate::FullArd(c.gp.clone().unwrap_or_else(|| GpConfig {
            kernel: StationaryKind::Rbf,
            outputscale: true,
            ..GpConfig::botorch(p)
        }));
        surrogate.validate(p)?;
        let design = embedding.hit_and_run(
            &mut stream(seed, &[0]),
            &vec![0.0; d],
            BURN_PER_DIM * d,
            d,
            c.n_init,
        );
        Ok(Alebo {
            seed,
            embedding,
            surrogate,
            design,
            evals: Evaluations::default(),
            points: Vec::new(),
            pick: 0,
            fits: Refits::default(),
            open: OpenQuery::default(),
            config,
        })
    }

    /// The settings.
    pub fn config(&self) -> &AleboConfig {
        &self.config
    }

    /// The embedding.
    pub fn embedding(&self) -> &Embedding {
        &self.embedding
    }

    /// The acquisition's maximizer over the polytope (embedding coordinates).
    fn pick(&mut self) -> Result<Vec<f64>> {
        self.pick += 1;
        let (c, d) = (&self.config, self.embedding.dim());
        let features = Features {
            embedding: &self.embedding,
            metric: c.metric,
        };
        let (seed, pick) = (self.seed, self.pick);
        let gp = self.fits.condition(
            &self.surrogate,
            features.rows(&self.points),
            &self.evals.ys,
            c.refit_every,
            || derive_seed(seed, &[2, pick]),
        )?;
        let kind = match c.acquisition {
            AleboAcquisition::Ei => AnalyticKind::LogEi {
                best_f: gp.y().into_iter().fold(f64::NEG_INFINITY, f64::max),
            },
            AleboAcquisition::Ucb { beta } => AnalyticKind::Ucb { beta },
        };
        let acq = OnEmbedding {
            acq: Analytic { model: &gp, kind },
            features,
        };
        let raw = self.embedding.hit_and_run(
            &mut stream(seed, &[1, pick]),
            &vec![0.0; d],
            BURN_PER_DIM * d,
            d,
            c.raw_samples,
        );
        let vals = acq.values(Mat::from_fn(raw.len(), d, |i, j| raw[i][j]).as_ref())?;
        let mut order: Vec<usize> = (0..raw.len()).filter(|&i| vals[i].is_finite()).collect();
        order.sort_by(|&a, &b| vals[b].total_cmp(&vals[a]).then(a.cmp(&b)));
        let Some(&first) = order.first() else {
            return Err(Error::Numerical(
                "the acquisition is not finite at any raw sample".into(),
            ));
        };
        let mut starts: Vec<&[f64]> = order
            .iter()
            .take(c.restarts)
            .map(|&i| raw[i].as_slice())
            .collect();
        if let Some(i) = (0..self.evals.len()).reduce(|b, i| {
            if self.evals.ys[i] > self.evals.ys[b] {
                i
            } else {
                b
            }
        }) {
            starts.push(&self.points[i]);
        }
        // A failed local search leaves its start's competitors.
        let refined: Vec<Result<(Vec<f64>, f64)>> =
            starts.par_iter().map(|y0| refine(&acq, y0)).collect();
        let (mut best, mut best_v) = (raw[first].clone(), vals[first]);
        for (y, v) in refined.into_iter().flatten() {
            if v > best_v {
                (best, best_v) = (y, v);
            }
        }
        Ok(best)
    }
}

impl AskTell for Alebo {
    type Pending = Vec<f64>;

    fn open_query(&mut self) -> &mut OpenQuery<Vec<f64>> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, Vec<f64>)> {
        let n = self.evals.len();
        let y = match self.design.get(n) {
            Some(y) => y.clone(),
            None => self.pick()?,
        };
        let u = self.embedding.unit(&y).ok_or_else(|| {
            Error::Numerical("a proposal left the polytope of the embedding".into())
        })?;
        Ok((evaluate_query(n as u64, &u), y))
    }

    fn record(&mut self, query: &Query, y: &Vec<f64>, answer: &Answer) -> Result<()> {
        let (u, v) = evaluated(query, answer)?;
        self.evals.push(u, v);
        self.points.push(y.clone());
        Ok(())
    }
}

impl Strategy for Alebo {
    fn name(&self) -> String {
        "alebo".into()
    }
    evaluations_strategy!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UniformSearch;
    use crate::testing::{FnRespondent, Run, run_on};
    use agora_math::fd::{Tol, check_gradient};
    use agora_problems::functions::{Hartmann6, TestFunction};

    /// The coordinates of `[0, 1]^100` the Hartmann6 test function reads; the other 94 are
    /// ignored.
    const ACTIVE: [usize; 6] = [3, 17, 29, 46, 58, 81];

    fn hartmann_in_100(x: &[f64]) -> f64 {
        let z: Vec<f64> = ACTIVE.iter().map(|&j| x[j]).collect();
        Hartmann6.eval(&z)
    }

    fn unit_box(d: usize) -> Space {
        Space::reals(&vec![(0.0, 1.0); d]).unwrap()
    }

    fn go(s: &mut dyn Strategy, f: fn(&[f64]) -> f64, d: usize, budget: usize) -> Run {
        run_on(s, &mut FnRespondent::new(unit_box(d), f), budget)
    }

    /// A small, quick configuration for the mechanics tests.
    fn quick(d: usize) -> AleboConfig {
        AleboConfig {
            embedding_dim: d,
            n_init: 4,
            raw_samples: 64,
            restarts: 2,
            ..AleboConfig::default()
        }
    }

    #[test]
    fn the_pseudo_inverse_is_a_right_inverse_and_the_polytope_check_is_exact() {
        for (d, big_d) in [(10, 100), (4, 4), (3, 401)] {
            let e = Embedding::random(d, big_d, &mut stream(1, &[d as u64])).unwrap();
            let (b, p) = (e.matrix(), e.pinv());
            for j in 0..big_d {
                let norm: f64 = (0..d).map(|k| b[(k, j)].powi(2)).sum();
                assert!((norm - 1.0).abs() < 1e-12, "column {j} has norm² {norm}");
            }
            for i in 0..d {
                for k in 0..d {
                    let bbp: f64 = (0..big_d).map(|j| b[(i, j)] * p[(j, k)]).sum();
                    let want = if i == k { 1.0 } else { 0.0 };
                    assert!((bbp - want).abs() < 1e-10, "(BB†)[{i}][{k}] = {bbp}");
                }
            }
            // A point on a face of the polytope: max_j |(B†y)_j| = 1 up to round-off.
            let y0: Vec<f64> = (0..d).map(|k| (k as f64 + 1.0).sin()).collect();
            let s = 1.0 / e.up(&y0).iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let face: Vec<f64> = y0.iter().map(|v| v * s).collect();
            let inside: Vec<f64> = face.iter().map(|v| v * (1.0 - 1e-12)).collect();
            let outside: Vec<f64> = face.iter().map(|v| v * (1.0 + 1e-12)).collect();
            assert!(e.contains(&inside) && e.unit(&inside).is_some());
            assert!(!e.contains(&outside) && e.unit(&outside).is_none());
            // The pull-back of a point far outside stops on the face, inside.
            let far: Vec<f64> = face.iter().map(|v| 3.0 * v).collect();
            let back = e.toward(&vec![0.0; d], &far);
            assert!(e.contains(&back));
            let reach = back[0] / face[0];
            assert!((reach - 1.0).abs() < 1e-8, "stopped at {reach} of the way");
        }
        // A rank-deficient B is refused.
        let flat = Mat::from_fn(2, 3, |_, j| j as f64 + 1.0);
        assert!(matches!(Embedding::new(flat), Err(Error::Numerical(_))));
    }

    #[test]
    fn every_proposal_is_the_unclipped_up_projection_of_a_point_of_the_polytope() {
        let big_d = 30;
        let f = |x: &[f64]| -(x[2] - 0.3).powi(2) - (x[11] - 0.6).powi(2);
        let mut s = Alebo::new(&unit_box(big_d), quick(5), 4).unwrap();
        let run = run_on(&mut s, &mut FnRespondent::new(unit_box(big_d), f), 12);
        let e = s.embedding();
        for (u, y) in run.xs.iter().zip(&s.points) {
            assert!(u.iter().all(|v| (0.0..=1.0).contains(v)), "{u:?}");
            // u is exactly (B†y + 1)/2: on the embedding's subspace, so not clipped.
            assert_eq!(Some(u.clone()), e.unit(y));
            let x: Vec<f64> = u.iter().map(|v| 2.0 * v - 1.0).collect();
            let again = e.up(&e.down(&x));
            let off = x
                .iter()
                .zip(&again)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(off < 1e-10, "a proposal is {off} off the subspace");
        }
    }

    #[test]
    fn hit_and_run_is_uniform_on_a_square_embedding() {
        // With d = D the polytope is B⁻¹[−1, 1]², and y uniform in it means x = B†y uniform
        // in the square: mean 0, variance 1/3, a quarter of the points in each quadrant.
        let b = Mat::from_fn(2, 2, |i, j| [[1.0, 0.5], [0.2, 1.0]][i][j]);
        let e = Embedding::new(b).unwrap();
        let ys = e.hit_and_run(&mut stream(2, &[]), &[0.0, 0.0], 20, 2, 20000);
        let xs: Vec<Vec<f64>> = ys.iter().map(|y| e.up(y)).collect();
        let n = xs.len() as f64;
        for j in 0..2 {
            let m = xs.iter().map(|x| x[j]).sum::<f64>() / n;
            let v = xs.iter().map(|x| (x[j] - m).powi(2)).sum::<f64>() / n;
            assert!(
                m.abs() < 0.03 && (v - 1.0 / 3.0).abs() < 0.02,
                "x{j}: {m} {v}"
            );
        }
        let q = xs.iter().filter(|x| x[0] > 0.0 && x[1] > 0.0).count() as f64 / n;
        assert!((q - 0.25).abs() < 0.02, "{q}");
    }

    #[test]
    fn the_acquisition_gradient_in_the_embedding_matches_finite_differences() {
        let e = Embedding::random(3, 8, &mut stream(5, &[])).unwrap();
        let ys = e.hit_and_run(&mut stream(6, &[]), &[0.0; 3], 30, 3, 6);
        let vals: Vec<f64> = ys.iter().map(|y| y[0] - 0.5 * y[1] * y[2]).collect();
        for metric in [AleboMetric::Ambient, AleboMetric::Embedded] {
            let features = Features {
                embedding: &e,
                metric,
            };
            let x = features.rows(&ys);
            let kernel = GpConfig::botorch(features.dim()).build_kernel(features.dim());
            let gp = ExactGp::new(x, &vals, kernel, 1e-4, 0.0).unwrap();
            let acq = OnEmbedding {
                acq: Analytic {
                    model: &gp,
                    kind: AnalyticKind::LogEi { best_f: 0.2 },
                },
                features,
            };
            let y = e
                .hit_and_run(&mut stream(7, &[]), &[0.0; 3], 10, 1, 1)
                .remove(0);
            let mut g = vec![0.0; 3];
            acq.value_grad(&y, Some(&mut g)).unwrap();
            check_gradient(
                |z: &[f64]| acq.value_grad(z, None).unwrap(),
                &y,
                1e-6 * e.inradius(),
                &g,
                Tol::ScaledByAnalytic(1e-5),
                &format!("{metric:?}"),
            );
        }
    }

    #[test]
    fn alebo_beats_random_search_on_hartmann6_in_100_dimensions() {
        // Paired over 10 seeds, 40 evaluations each: the mean of alebo's best minus random
        // search's best must exceed two standard errors of the paired differences.
        let space = unit_box(100);
        let diffs: Vec<f64> = (0..10)
            .map(|seed| {
                let mut a = Alebo::new(&space, AleboConfig::default(), seed).unwrap();
                let mut r = UniformSearch::new(&space, seed).unwrap();
                go(&mut a, hartmann_in_100, 100, 40).best()
                    - go(&mut r, hartmann_in_100, 100, 40).best()
            })
            .collect();
        let n = diffs.len() as f64;
        let mean = diffs.iter().sum::<f64>() / n;
        let sd = (diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let se = sd / n.sqrt();
        println!("alebo − random on Hartmann6 in 100-D: {mean:.4} ± {se:.4} (SE)");
        assert!(mean > 2.0 * se, "{mean} ± {se}: {diffs:?}");
    }

    #[test]
    fn same_seed_same_proposals_other_seed_other_proposals() {
        let f = |x: &[f64]| -(x[0] - 0.7).powi(2) - (x[9] - 0.2).powi(2);
        let run = |seed| {
            go(
                &mut Alebo::new(&unit_box(20), quick(4), seed).unwrap(),
                f,
                20,
                8,
            )
        };
        let a = run(3);
        assert_eq!(a, run(3));
        assert_ne!(a.xs, run(4).xs);
    }

    #[test]
    fn bad_settings_name_the_field_and_the_allowed_values() {
        let space = unit_box(5);
        let with = |f: fn(&mut AleboConfig)| {
            let mut c = AleboConfig {
                embedding_dim: 3,
                ..AleboConfig::default()
            };
            f(&mut c);
            Alebo::new(&space, c, 0).unwrap_err().to_string()
        };
        for (e, field, allowed) in [
            (
                with(|c| c.embedding_dim = 0),
                "alebo.embedding_dim",
                "from 1 to 5",
            ),
            (
                with(|c| c.embedding_dim = 6),
                "alebo.embedding_dim",
                "from 1 to 5",
            ),
            (with(|c| c.n_init = 0), "alebo.n_init", "at least 1"),
            (
                with(|c| c.raw_samples = 0),
                "alebo.raw_samples",
                "at least 1",
            ),
            (with(|c| c.restarts = 0), "alebo.restarts", "at least 1"),
            (
                with(|c| c.acquisition = AleboAcquisition::Ucb { beta: f64::NAN }),
                "alebo.acquisition.beta",
                ">= 0",
            ),
        ] {
            assert!(e.contains(field) && e.contains(allowed), "{e}");
        }
        // Through the registry: a zero is refused by name; a `d` above D is capped at D.
        let build = |d: u64| {
            let knobs = [("embedding_dim".to_string(), serde_json::json!(d))];
            crate::registry::build(
                "alebo",
                &knobs,
                crate::registry::Setup::new(space.clone(), 0),
            )
        };
        let e = build(0).unwrap_err().to_string();
        assert!(
            e.contains("method.embedding_dim") && e.contains(">= 1"),
            "{e}"
        );
        assert!(build(50).is_ok());
    }
}
