//! LineBO (Kirschner, Mutný, Hiller, Ischebeck & Krause 2019, "Adaptive and Safe Bayesian
//! Optimization in High Dimensions via One-Dimensional Subspaces") as a strategy: one of
//! DSBO's high-dimensional baselines (DSBO paper, Fig. 9).
//!
//! Each line is the one-dimensional subspace through the best point evaluated so far along a
//! direction drawn at random (RandomLineBO: uniform on the sphere) or a random coordinate
//! axis (CoordinateLineBO), clipped to the unit cube. The sub-problem on the line is solved
//! by GP-UCB with one GP over the whole space and all evaluations (the paper's global model),
//! maximized over an even grid of the segment; a line serves `evals_per_line` evaluations
//! before the next is drawn. (The paper's sub-problem solver may also run SafeOpt; the
//! unconstrained UCB one is the one its high-dimensional benchmarks use.)

use crate::Strategy;
use crate::evaluations::{
    Evaluations, Refits, continuous_box, design_then_picks, evaluations_strategy,
};
use crate::open::OpenQuery;
use agora_acq::ucb_values;
use agora_core::{Error, Result, Space};
use agora_gp::{GpConfig, StationaryKind, Surrogate};
use agora_math::rng::{Rng, derive_seed, stream};
use faer::Mat;
use rand::RngExt;
use rand_distr::StandardNormal;

/// How [`LineBo`] draws the direction of each line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineDirection {
    /// Uniform on the unit sphere (RandomLineBO).
    Random,
    /// A coordinate axis drawn uniformly (CoordinateLineBO).
    Coordinate,
}

/// Settings of [`LineBo`].
#[derive(Debug, Clone, PartialEq)]
pub struct LineBoConfig {
    /// Uniform points before the first line.
    pub n_init: usize,
    /// GP model (`None`: Matérn-5/2 ARD with BoTorch's priors).
    pub gp: Option<GpConfig>,
    /// Refit hyperparameters every this many evaluations.
    pub refit_every: usize,
    /// How lines are drawn.
    pub direction: LineDirection,
    /// Evaluations on each line before the next one.
    pub evals_per_line: usize,
    /// Grid points on each segment.
    pub n_grid: usize,
    /// UCB exploration weight: the pick maximizes `μ + √β σ`.
    pub beta: f64,
}

impl Default for LineBoConfig {
    /// 10 initial points, refit every 5, random directions, one evaluation per line, 256
    /// grid points, β = 4.
    fn default() -> Self {
        LineBoConfig {
            n_init: 10,
            gp: None,
            refit_every: 5,
            direction: LineDirection::Random,
            evals_per_line: 1,
            n_grid: 256,
            beta: 4.0,
        }
    }
}

/// A line: the segment `origin + t·direction`, `t ∈ [lo, hi]`, inside the unit cube.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    origin: Vec<f64>,
    direction: Vec<f64>,
    lo: f64,
    hi: f64,
    /// Evaluations left on it.
    left: usize,
}

impl Line {
    /// The segment of the line through `origin` (in the cube) along `direction` that lies
    /// in the unit cube.
    fn through(origin: Vec<f64>, direction: Vec<f64>, left: usize) -> Line {
        let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
        for (x, d) in origin.iter().zip(&direction) {
            if d.abs() > 1e-12 {
                let (a, b) = ((0.0 - x) / d, (1.0 - x) / d);
                lo = lo.max(a.min(b));
                hi = hi.min(a.max(b));
            }
        }
        // The origin is in the cube, so 0 ∈ [lo, hi]; a zero direction leaves the point.
        if !lo.is_finite() || !hi.is_finite() {
            (lo, hi) = (0.0, 0.0);
        }
        Line {
            origin,
            direction,
            lo: lo.min(0.0),
            hi: hi.max(0.0),
            left,
        }
    }

    /// The point at `t`, clamped into the cube (round-off at the ends).
    fn at(&self, t: f64) -> Vec<f64> {
        self.origin
            .iter()
            .zip(&self.direction)
            .map(|(x, d)| (x + t * d).clamp(0.0, 1.0))
            .collect()
    }
}

/// LineBO (Kirschner et al. 2019): GP-UCB restricted to one line at a time through the
/// incumbent. Deterministic in its seed: the design draws from ChaCha stream `[0]`, line `l`
/// its direction from stream `[1, l]`, and pick `p` fits with seed `derive_seed(seed, [2, p])`.
#[derive(Debug, Clone)]
pub struct LineBo {
    config: LineBoConfig,
    dim: usize,
    seed: u64,
    surrogate: Surrogate,
    evals: Evaluations,
    init_rng: Rng,
    lines: u64,
    pick: u64,
    line: Option<Line>,
    fits: Refits,
    open: OpenQuery<()>,
}

impl LineBo {
    /// LineBO on `space` (a box of real parameters).
    ///
    /// Errors: a bad space or configuration (naming the field).
    pub fn new(space: &Space, config: LineBoConfig, seed: u64) -> Result<LineBo> {
        let c = &config;
        for (name, v) in [
            ("line_bo.n_init", c.n_init),
            ("line_bo.refit_every", c.refit_every),
            ("line_bo.evals_per_line", c.evals_per_line),
            ("line_bo.n_grid", c.n_grid),
        ] {
            if v == 0 {
                return Err(Error::invalid(name, "must be at least 1"));
            }
        }
        if !(c.beta.is_finite() && c.beta >= 0.0) {
            return Err(Error::invalid(
                "line_bo.beta",
                format!("must be a finite number >= 0, got {}", c.beta),
            ));
        }
        let dim = continuous_box(space)?;
        let surrogate = Surrogate::FullArd(c.gp.clone().unwrap_or_else(|| GpConfig {
            kernel: StationaryKind::Matern52,
            ..GpConfig::botorch(dim)
        }));
        surrogate.validate(dim)?;
        Ok(LineBo {
            dim,
            seed,
            surrogate,
            evals: Evaluations::default(),
            init_rng: stream(seed, &[0]),
            lines: 0,
            pick: 0,
            line: None,
            fits: Refits::default(),
            open: OpenQuery::default(),
            config,
        })
    }

    /// The settings.
    pub fn config(&self) -> &LineBoConfig {
        &self.config
    }

    /// A fresh line through the best evaluation so far.
    fn draw_line(&mut self) -> Result<Line> {
        let origin = self
            .evals
            .best_unit()
            .ok_or_else(|| Error::State("a line needs an evaluation".into()))?;
        self.lines += 1;
        let mut rng = stream(self.seed, &[1, self.lines]);
        let dim = self.dim;
        let direction = match self.config.direction {
            LineDirection::Coordinate => {
                let k = rng.random_range(0..dim);
                (0..dim).map(|j| if j == k { 1.0 } else { 0.0 }).collect()
            }
            LineDirection::Random => {
                let v: Vec<f64> = (0..dim).map(|_| rng.sample(StandardNormal)).collect();
                let norm = v.iter().map(|e| e * e).sum::<f64>().sqrt().max(1e-300);
                v.into_iter().map(|e| e / norm).collect()
            }
        };
        Ok(Line::through(origin, direction, self.config.evals_per_line))
    }

    /// The UCB maximizer on the current line's grid.
    fn pick(&mut self) -> Result<Vec<f64>> {
        let needs_line = self.line.as_ref().is_none_or(|l| l.left == 0);
        if needs_line {
            self.line = Some(self.draw_line()?);
        }
        let (c, dim) = (&self.config, self.dim);
        self.pick += 1;
        let x = self.evals.x_mat(dim);
        let y = self.evals.ys.clone();
        let (seed, pick) = (self.seed, self.pick);
        let gp = self
            .fits
            .condition(&self.surrogate, x, &y, c.refit_every, || {
                derive_seed(seed, &[2, pick])
            })?;
        let line = self.line.as_mut().expect("drawn above");
        let n = c.n_grid;
        let ts: Vec<f64> = (0..n)
            .map(|i| {
                if n == 1 {
                    0.0
                } else {
                    line.lo + (line.hi - line.lo) * i as f64 / (n - 1) as f64
                }
            })
            .collect();
        let points: Vec<Vec<f64>> = ts.iter().map(|&t| line.at(t)).collect();
        let cand = Mat::from_fn(n, dim, |r, j| points[r][j]);
        let scores = ucb_values(&gp, c.beta, &cand)?;
        let r = agora_acq::argmax_finite(&scores)
            .ok_or_else(|| Error::Numerical("no finite UCB on the line".into()))?;
        line.left -= 1;
        Ok(points[r].clone())
    }
}

design_then_picks!(LineBo);

impl Strategy for LineBo {
    fn name(&self) -> String {
        "line-bo".into()
    }
    evaluations_strategy!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UniformSearch;
    use crate::testing::{additive_problem, run};

    #[test]
    fn line_bo_beats_random_search_and_repeats_itself() {
        let f = additive_problem(8, 0.2, 4);
        let space = Space::reals(&f.bounds()).unwrap();
        let budget = 40;
        for direction in [LineDirection::Random, LineDirection::Coordinate] {
            let cfg = LineBoConfig {
                direction,
                ..LineBoConfig::default()
            };
            let (mut line, mut rand) = (0.0, 0.0);
            for seed in 0..3 {
                line += run(
                    &mut LineBo::new(&space, cfg.clone(), seed).unwrap(),
                    &f,
                    budget,
                )
                .best();
                rand += run(&mut UniformSearch::new(&space, seed).unwrap(), &f, budget).best();
            }
            assert!(line > rand, "{direction:?}: {line} vs {rand}");
            // Same seed and answers, same proposals.
            let a = run(&mut LineBo::new(&space, cfg.clone(), 7).unwrap(), &f, 15);
            let b = run(&mut LineBo::new(&space, cfg.clone(), 7).unwrap(), &f, 15);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn a_line_stays_in_the_cube_and_passes_through_its_origin() {
        let l = Line::through(vec![0.2, 0.9], vec![0.6, 0.8], 1);
        // x = 0.2 + 0.6 t ∈ [0, 1] → t ∈ [−1/3, 4/3]; y = 0.9 + 0.8 t → t ∈ [−9/8, 1/8].
        assert!((l.lo + 1.0 / 3.0).abs() < 1e-12 && (l.hi - 0.125).abs() < 1e-12);
        assert_eq!(l.at(0.0), vec![0.2, 0.9]);
        let end = l.at(l.hi);
        assert!((end[1] - 1.0).abs() < 1e-12);
        let start = l.at(l.lo);
        assert!(start[0].abs() < 1e-12);
        // A coordinate line spans the whole axis.
        let c = Line::through(vec![0.3, 0.5], vec![0.0, 1.0], 2);
        assert!((c.lo + 0.5).abs() < 1e-12 && (c.hi - 0.5).abs() < 1e-12);
    }

    #[test]
    fn bad_settings_name_the_field() {
        let space = Space::reals(&[(0.0, 1.0); 2]).unwrap();
        for (cfg, field) in [
            (
                LineBoConfig {
                    evals_per_line: 0,
                    ..LineBoConfig::default()
                },
                "line_bo.evals_per_line",
            ),
            (
                LineBoConfig {
                    beta: f64::NAN,
                    ..LineBoConfig::default()
                },
                "line_bo.beta",
            ),
        ] {
            let e = LineBo::new(&space, cfg, 0).unwrap_err().to_string();
            assert!(e.contains(field), "{e}");
        }
    }
}
