//! Oracles: simulated answerers for benchmark problems.

use crate::functions::TestFunction;
use agora_core::{Answer, AnswerKind, Error, Point, Query, QueryKind, Respondent, Result, Space};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// A benchmark problem: a test function on its box, seen by strategies as the unit cube.
#[derive(Debug)]
pub struct Problem {
    /// The objective (maximized).
    pub function: Box<dyn TestFunction>,
    /// The box space built from the function's bounds.
    pub space: Space,
}

impl Problem {
    /// The problem for a named test function (see [`crate::functions::names`]).
    pub fn by_name(name: &str) -> Result<Problem> {
        Problem::new(crate::functions::by_name(name)?)
    }

    /// Wrap a test function.
    pub fn new(function: Box<dyn TestFunction>) -> Result<Problem> {
        let space = Space::reals(&function.bounds())?;
        Ok(Problem { function, space })
    }

    /// Noiseless objective at a unit-cube point.
    pub fn value_at_unit(&self, u: &[f64]) -> Result<f64> {
        let x = self.space.to_user_reals(u)?;
        Ok(self.function.eval(&x))
    }

    /// The Hessian of the objective at a unit-cube point, in user units, by central finite
    /// differences (rows of a symmetric `d × d` matrix).
    ///
    /// Step along parameter `i`: `h_i = ε^{1/4} · max(1, |x_i|)` in user units (`ε` the
    /// machine epsilon, so `h_i ≈ 1.2e-4 · max(1, |x_i|)`), which balances the `O(h²)`
    /// truncation error of the central differences against their `O(ε f / h²)` rounding
    /// error. Diagonal: `(f(x + h_i e_i) − 2 f(x) + f(x − h_i e_i)) / h_i²`; off-diagonal:
    /// the four-point stencil `(f(+,+) − f(+,−) − f(−,+) + f(−,−)) / (4 h_i h_j)`. Points a
    /// step outside the box are evaluated as they are (the test functions are defined
    /// everywhere). Errors: a point that does not fit the space (of the wrong length).
    pub fn hessian_at_unit(&self, u: &[f64]) -> Result<Vec<Vec<f64>>> {
        let x = self.space.to_user_reals(u)?;
        let d = x.len();
        let f = |dx: &[(usize, f64)]| {
            let mut y = x.clone();
            for &(i, h) in dx {
                y[i] += h;
            }
            self.function.eval(&y)
        };
        let h: Vec<f64> = x
            .iter()
            .map(|v| f64::EPSILON.powf(0.25) * v.abs().max(1.0))
            .collect();
        let f0 = f(&[]);
        let mut rows = vec![vec![0.0; d]; d];
        for i in 0..d {
            rows[i][i] = (f(&[(i, h[i])]) - 2.0 * f0 + f(&[(i, -h[i])])) / (h[i] * h[i]);
            for j in (i + 1)..d {
                let v = (f(&[(i, h[i]), (j, h[j])])
                    - f(&[(i, h[i]), (j, -h[j])])
                    - f(&[(i, -h[i]), (j, h[j])])
                    + f(&[(i, -h[i]), (j, -h[j])]))
                    / (4.0 * h[i] * h[j]);
                rows[i][j] = v;
                rows[j][i] = v;
            }
        }
        Ok(rows)
    }

    /// Simple regret of a unit-cube point: optimum minus its true value (≥ 0).
    pub fn regret_at_unit(&self, u: &[f64]) -> Result<f64> {
        Ok((self.function.optimum_value() - self.value_at_unit(u)?).max(0.0))
    }
}

/// How a simulated person compares options with true utilities `f`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RaterModel {
    /// Thurstone / probit: each utility is seen with independent `N(0, sigma²)` noise, the
    /// best seen wins; for a pair, `P(0 wins) = Φ((f₀ − f₁)/(√2 sigma))`.
    Probit {
        /// Noise standard deviation.
        sigma: f64,
    },
    /// Bradley–Terry / Plackett–Luce: `P(i wins) ∝ exp(f_i / sigma)`; for a pair,
    /// `sigmoid((f₀ − f₁)/sigma)`.
    BradleyTerry {
        /// Temperature.
        sigma: f64,
    },
}

impl RaterModel {
    fn sigma(&self) -> f64 {
        match *self {
            RaterModel::Probit { sigma } | RaterModel::BradleyTerry { sigma } => sigma,
        }
    }
}

/// Answers queries on a [`Problem`] as a simulated person would: evaluations (optionally
/// with Gaussian observation noise), comparisons (with a [`RaterModel`], by the objective
/// whatever rater the query names) and Hessians (noise-free central finite differences,
/// [`Problem::hessian_at_unit`]). Group votes and ratings are not its to answer
/// ([`Error::UnsupportedQuery`]). Seeded: the same seed and queries give the same answers.
///
/// # Example
///
/// ```
/// use agora_core::{Point, Query, QueryKind, Respondent};
/// use agora_problems::{Oracle, Problem};
///
/// let mut oracle = Oracle::new(Problem::by_name("branin").unwrap(), 0.0, 0).unwrap();
/// let q = Query {
///     id: 0,
///     kind: QueryKind::Hessian { point: Point::Unit(vec![0.5, 0.5]) },
/// };
/// let a = Respondent::answer(&mut oracle, &q).unwrap();
/// a.check_against(&q).unwrap(); // a symmetric 2 × 2 matrix
/// ```
#[derive(Debug)]
pub struct Oracle {
    problem: Problem,
    noise_std: f64,
    rater: RaterModel,
    rng: ChaCha8Rng,
}

impl Oracle {
    /// An oracle adding `N(0, noise_std²)` noise to each value (`noise_std = 0`: exact).
    pub fn new(problem: Problem, noise_std: f64, seed: u64) -> Result<Oracle> {
        if !(noise_std.is_finite() && noise_std >= 0.0) {
            return Err(Error::invalid(
                "noise_std",
                format!("must be a finite number >= 0, got {noise_std}"),
            ));
        }
        Ok(Oracle {
            problem,
            noise_std,
            rater: RaterModel::Probit { sigma: 1e-12 },
            rng: ChaCha8Rng::seed_from_u64(seed),
        })
    }

    /// An oracle that answers comparisons with `rater` (evaluations stay exact).
    pub fn with_rater(problem: Problem, rater: RaterModel, seed: u64) -> Result<Oracle> {
        let mut o = Oracle::new(problem, 0.0, seed)?;
        o.set_rater(rater)?;
        Ok(o)
    }

    /// Answer comparisons with `rater` from now on.
    pub fn set_rater(&mut self, rater: RaterModel) -> Result<()> {
        let s = rater.sigma();
        if !(s.is_finite() && s > 0.0) {
            return Err(Error::invalid(
                "rater.sigma",
                format!("must be a positive finite number, got {s}"),
            ));
        }
        self.rater = rater;
        Ok(())
    }

    /// The true utilities of query points.
    fn values(&self, points: &[Point]) -> Result<Vec<f64>> {
        points
            .iter()
            .enumerate()
            .map(|(i, p)| match p {
                Point::Unit(u) => self.problem.value_at_unit(u),
                Point::Index(_) => Err(Error::invalid(
                    format!("points[{i}]"),
                    "a test-function oracle evaluates unit-cube points, not candidate indices",
                )),
            })
            .collect()
    }

    /// The winner among options with utilities `f`: for a pair one uniform draw `u` and
    /// option 0 wins iff `u < P(0 wins)` (the rule of docs/anchors/RESULTS.md §2).
    fn choose(&mut self, f: &[f64]) -> Result<usize> {
        use rand::RngExt;
        if f.len() < 2 {
            return Err(Error::invalid(
                "points",
                "a comparison needs at least two options",
            ));
        }
        let sigma = self.rater.sigma();
        if f.len() == 2 {
            let d = f[0] - f[1];
            let p0 = match self.rater {
                RaterModel::Probit { .. } => {
                    agora_math::special::norm_cdf(d / (std::f64::consts::SQRT_2 * sigma))
                }
                RaterModel::BradleyTerry { .. } => 1.0 / (1.0 + (-d / sigma).exp()),
            };
            let u: f64 = self.rng.random();
            return Ok(if u < p0 { 0 } else { 1 });
        }
        let noisy: Vec<f64> = match self.rater {
            RaterModel::Probit { .. } => {
                let n = Normal::new(0.0, sigma)
                    .map_err(|e| Error::invalid("rater.sigma", e.to_string()))?;
                f.iter().map(|v| v + n.sample(&mut self.rng)).collect()
            }
            // Gumbel-max: argmax of f/σ + Gumbel noise samples softmax(f/σ).
            RaterModel::BradleyTerry { .. } => f
                .iter()
                .map(|v| {
                    let u: f64 = self.rng.random::<f64>().max(1e-300);
                    v / sigma - (-u.ln()).ln()
                })
                .collect(),
        };
        Ok(noisy
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &v)| {
                if v > bv { (i, v) } else { (bi, bv) }
            })
            .0)
    }

    /// The problem answered.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// Answer one query (the same as [`Respondent::answer`]).
    pub fn answer(&mut self, query: &Query) -> Result<Answer> {
        match &query.kind {
            QueryKind::Evaluate { points } => {
                let mut values = Vec::with_capacity(points.len());
                for (i, p) in points.iter().enumerate() {
                    let Point::Unit(u) = p else {
                        return Err(Error::invalid(
                            format!("points[{i}]"),
                            "a test-function oracle evaluates unit-cube points, not candidate indices",
                        ));
                    };
                    let mut v = self.problem.value_at_unit(u)?;
                    if self.noise_std > 0.0 {
                        let n = Normal::new(0.0, self.noise_std)
                            .map_err(|e| Error::invalid("noise_std", e.to_string()))?;
                        v += n.sample(&mut self.rng);
                    }
                    values.push(v);
                }
                Ok(Answer {
                    query_id: query.id,
                    kind: AnswerKind::Values { values },
                })
            }
            QueryKind::Compare { points, rater } => {
                let f = self.values(points)?;
                let winner = self.choose(&f)?;
                Ok(Answer {
                    query_id: query.id,
                    kind: AnswerKind::Choice {
                        winner,
                        rater: rater.clone(),
                    },
                })
            }
            QueryKind::Hessian { point } => {
                let Point::Unit(u) = point else {
                    return Err(Error::invalid(
                        "point",
                        "a test-function oracle takes Hessians at unit-cube points, not candidate indices",
                    ));
                };
                Ok(Answer {
                    query_id: query.id,
                    kind: AnswerKind::Matrix {
                        rows: self.problem.hessian_at_unit(u)?,
                    },
                })
            }
            _ => Err(Error::unsupported_query("oracle", query)),
        }
    }
}

impl Respondent for Oracle {
    fn answer(&mut self, query: &Query) -> Result<Answer> {
        Oracle::answer(self, query)
    }
}
