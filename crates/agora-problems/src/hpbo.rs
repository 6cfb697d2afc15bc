//! The heteroscedastic-PBO benchmarks (Sinaga et al. 2024, §6) and their simulated person.
//!
//! A person judges duels with input-dependent noise `σ²(x) = a·exp(−p(x))`, `p` an "oracle"
//! density of where they are reliable; they give anchors drawn from `p`. Decisions the
//! paper leaves open (`docs/notes/heteroscedastic-pbo.md` §9), made here once:
//!
//! - **Coordinates.** The oracle density, the anchors and the model's KDE all live in the
//!   unit cube of the problem's box, so `σ²` does not depend on the units of the inputs.
//! - **Sign.** Every objective is maximized (§9.1): `sin 2πx` as is, Branin and Hartmann4
//!   negated. Branin is also standardized, `(−branin − μ)/s` with its mean `μ = −54.3072`
//!   and standard deviation `s = 51.2512` over the box, so its values sit on the unit scale
//!   of the GP prior (fixed variance 1) and `f(x_max) = 1.0520 > 0`, which keeps
//!   `ρ = 3 f(x_max)` a penalty (§9.1, §9.8).
//! - **Oracles** (isotropic, unit-cube standard deviation `sd`):
//!   - Sine1D: `N(0.25, 0.125²)` in the paper's units (the standard-deviation reading,
//!     §9.4), which is centre 0.125 and sd 0.0625 on the unit interval; `a = 0.1`,
//!     30 anchors; `x_max = 0.25` (§9.17). Because the density is taken per unit-cube
//!     length (twice its value per paper unit on `[0, 2]`), the noise at `x_max` is
//!     `0.1·e^{−6.383} = 1.69e-4` and `MV(0.25) = 0.9995`, not the note's §6.3 values
//!     (0.0041, 0.9877) computed per paper unit; far from the anchors it is `a` either way.
//!   - Branin2D: centre `(0.5, 0.2)` near the maximizer `(π, 2.275)` (unit
//!     `(0.543, 0.152)`), sd 0.1, `a = 1.0`, 30 anchors; `x_max = (π, 2.275)`, the
//!     maximizer nearest the centre (§9.17).
//!   - Hartmann4D: centre `(0.6, 0.6, 0.6, 0.6)`, far from the maximizer (distance 0.67),
//!     sd 0.2, `a = 2.0`, 30 anchors; `x_max` the unique maximizer.
//!   - Student-t ablation: the same centre and scale with `ν = 5`.
//! - Anchors that fall outside the box are redrawn (§9.4).

use crate::functions::{Branin, Hartmann4, Sine1D, TestFunction};
use agora_core::{Answer, AnswerKind, Error, Point, Query, QueryKind, Respondent, Result, Space};
use agora_math::rng::stream;
use rand::Rng;
use rand_distr::{ChiSquared, Distribution, StandardNormal};

/// Branin's mean and standard deviation over its box (maximized form), for standardization;
/// checked by a midpoint rule in the tests.
pub const BRANIN_MEAN: f64 = -54.307_19;
/// See [`BRANIN_MEAN`].
pub const BRANIN_SD: f64 = 51.251_21;

/// A person's reliability density over the unit cube.
#[derive(Debug, Clone, PartialEq)]
pub enum OracleDensity {
    /// Isotropic Gaussian.
    Gaussian {
        /// Centre (unit cube).
        center: Vec<f64>,
        /// Standard deviation per coordinate.
        sd: f64,
    },
    /// Isotropic multivariate Student-t.
    StudentT {
        /// Centre (unit cube).
        center: Vec<f64>,
        /// Scale per coordinate.
        scale: f64,
        /// Degrees of freedom.
        nu: f64,
    },
}

impl OracleDensity {
    /// Density at `x`.
    pub fn density(&self, x: &[f64]) -> f64 {
        match self {
            OracleDensity::Gaussian { center, sd } => {
                let d = center.len() as f64;
                let r2: f64 = x.iter().zip(center).map(|(a, b)| (a - b).powi(2)).sum();
                (-0.5 * r2 / (sd * sd)).exp() / (2.0 * std::f64::consts::PI * sd * sd).powf(0.5 * d)
            }
            OracleDensity::StudentT { center, scale, nu } => {
                let d = center.len() as f64;
                let r2: f64 = x.iter().zip(center).map(|(a, b)| (a - b).powi(2)).sum();
                let ln_c = agora_math::special::ln_gamma(0.5 * (nu + d))
                    - agora_math::special::ln_gamma(0.5 * nu)
                    - 0.5 * d * (nu * std::f64::consts::PI).ln()
                    - d * scale.ln();
                (ln_c - 0.5 * (nu + d) * (r2 / (nu * scale * scale)).ln_1p()).exp()
            }
        }
    }

    /// One draw (possibly outside the unit cube).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<f64> {
        match self {
            OracleDensity::Gaussian { center, sd } => center
                .iter()
                .map(|c| {
                    let z: f64 = StandardNormal.sample(rng);
                    c + sd * z
                })
                .collect(),
            OracleDensity::StudentT { center, scale, nu } => {
                let w: f64 = ChiSquared::new(*nu).expect("nu > 0").sample(rng);
                let k = (nu / w).sqrt();
                center
                    .iter()
                    .map(|c| {
                        let z: f64 = StandardNormal.sample(rng);
                        c + scale * k * z
                    })
                    .collect()
            }
        }
    }
}

/// One heteroscedastic-PBO benchmark.
#[derive(Debug)]
pub struct HpboProblem {
    /// Name (`sine1d`, `branin2d`, `hartmann4d`, with `-t` for the Student-t person).
    pub name: String,
    function: Box<dyn TestFunction>,
    /// The box the person sees (user units).
    pub space: Space,
    shift: f64,
    scale: f64,
    /// Noise scale `a`.
    pub a: f64,
    /// Number of anchors the person gives.
    pub n_anchors: usize,
    /// The person's reliability density.
    pub oracle: OracleDensity,
    /// The reference maximizer `x_max` (unit cube).
    pub x_max: Vec<f64>,
}

/// Names accepted by [`HpboProblem::by_name`].
pub const HPBO_PROBLEMS: [&str; 4] = ["sine1d", "branin2d", "hartmann4d", "hartmann4d-t"];

impl HpboProblem {
    /// A benchmark by name (see [`HPBO_PROBLEMS`]).
    pub fn by_name(name: &str) -> Result<HpboProblem> {
        let (function, shift, scale, a, oracle, x_max_user): (
            Box<dyn TestFunction>,
            _,
            _,
            _,
            _,
            _,
        ) = match name {
            "sine1d" => (
                Box::new(Sine1D),
                0.0,
                1.0,
                0.1,
                OracleDensity::Gaussian {
                    center: vec![0.125],
                    sd: 0.0625,
                },
                vec![0.25],
            ),
            "branin2d" => (
                Box::new(Branin),
                BRANIN_MEAN,
                BRANIN_SD,
                1.0,
                OracleDensity::Gaussian {
                    center: vec![0.5, 0.2],
                    sd: 0.1,
                },
                vec![std::f64::consts::PI, 2.275],
            ),
            "hartmann4d" | "hartmann4d-t" => {
                let oracle = if name == "hartmann4d" {
                    OracleDensity::Gaussian {
                        center: vec![0.6; 4],
                        sd: 0.2,
                    }
                } else {
                    OracleDensity::StudentT {
                        center: vec![0.6; 4],
                        scale: 0.2,
                        nu: 5.0,
                    }
                };
                (
                    Box::new(Hartmann4),
                    0.0,
                    1.0,
                    2.0,
                    oracle,
                    Hartmann4.optimizers()[0].clone(),
                )
            }
            _ => {
                return Err(Error::invalid(
                    "problem",
                    format!(
                        "unknown heteroscedastic-PBO problem `{name}`; allowed: {}",
                        HPBO_PROBLEMS.join(", ")
                    ),
                ));
            }
        };
        let space = Space::reals(&function.bounds())?;
        let x_max = space.from_user(
            &x_max_user
                .iter()
                .map(|v| agora_core::ParamValue::Float(*v))
                .collect::<Vec<_>>(),
        )?;
        Ok(HpboProblem {
            name: name.to_string(),
            function,
            space,
            shift,
            scale,
            a,
            n_anchors: 30,
            oracle,
            x_max,
        })
    }

    /// Input dimension.
    pub fn dim(&self) -> usize {
        self.x_max.len()
    }

    /// The latent utility at a unit-cube point.
    pub fn f(&self, u: &[f64]) -> f64 {
        let x = self
            .space
            .to_user_reals(u)
            .expect("unit point of the right dimension");
        (self.function.eval(&x) - self.shift) / self.scale
    }

    /// `f(x_max)`.
    pub fn f_max(&self) -> f64 {
        self.f(&self.x_max)
    }

    /// The person's true noise variance `a·exp(−p(x))`.
    pub fn noise_var(&self, u: &[f64]) -> f64 {
        self.a * (-self.oracle.density(u)).exp()
    }

    /// Mean-variance objective `f(x) − ρ σ²(x)` with the true noise.
    pub fn mv(&self, u: &[f64], rho: f64) -> f64 {
        self.f(u) - rho * self.noise_var(u)
    }

    /// The paper's default `ρ = 3 f(x_max)`.
    pub fn default_rho(&self) -> f64 {
        3.0 * self.f_max()
    }

    /// Anchors drawn from the oracle (redrawn until inside the unit cube).
    pub fn anchors<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<Vec<f64>> {
        (0..self.n_anchors)
            .map(|_| {
                loop {
                    let x = self.oracle.sample(rng);
                    if x.iter().all(|v| (0.0..=1.0).contains(v)) {
                        break x;
                    }
                }
            })
            .collect()
    }

    /// The person's answer to the duel `(x0, x1)`: the index of the option whose utility
    /// plus fresh noise `N(0, σ²(x))` is larger (Eq. 1).
    pub fn duel<R: Rng + ?Sized>(&self, x0: &[f64], x1: &[f64], rng: &mut R) -> usize {
        let e0: f64 = StandardNormal.sample(rng);
        let e1: f64 = StandardNormal.sample(rng);
        let y0 = self.f(x0) + self.noise_var(x0).sqrt() * e0;
        let y1 = self.f(x1) + self.noise_var(x1).sqrt() * e1;
        usize::from(y1 > y0)
    }
}

/// The simulated person of an [`HpboProblem`] answering duels as a [`Respondent`]: a
/// [`QueryKind::Compare`] of two unit-cube points gets [`HpboProblem::duel`]'s winner (Eq. 1).
/// The `k`-th duel answered (0-based) draws its noise from ChaCha stream `[0xD0E1, k]` of
/// the seed, so an answer depends only on the seed, the duel's index and its two options.
#[derive(Debug)]
pub struct HpboRespondent {
    problem: HpboProblem,
    seed: u64,
    answered: u64,
}

impl HpboRespondent {
    /// The person of `problem`, their answers seeded by `seed`.
    pub fn new(problem: HpboProblem, seed: u64) -> HpboRespondent {
        HpboRespondent {
            problem,
            seed,
            answered: 0,
        }
    }

    /// The benchmark answered.
    pub fn problem(&self) -> &HpboProblem {
        &self.problem
    }

    /// Duels answered so far.
    pub fn answered(&self) -> u64 {
        self.answered
    }

    /// A duel option as a unit-cube point of the problem's dimension; errors name `field`.
    fn option<'a>(&self, p: &'a Point, field: &str) -> Result<&'a [f64]> {
        let Point::Unit(u) = p else {
            return Err(Error::invalid(
                field,
                "a heteroscedastic-PBO person compares unit-cube points, not candidate indices",
            ));
        };
        if u.len() != self.problem.dim() {
            return Err(Error::dim(field, self.problem.dim(), u.len()));
        }
        agora_core::check_finite_slice(field, u)?;
        Ok(u)
    }
}

impl Respondent for HpboRespondent {
    fn answer(&mut self, query: &Query) -> Result<Answer> {
        let QueryKind::Compare { points, rater } = &query.kind else {
            return Err(Error::unsupported_query(
                "heteroscedastic-PBO person",
                query,
            ));
        };
        if points.len() != 2 {
            return Err(Error::dim("points", 2, points.len()));
        }
        let x0 = self.option(&points[0], "points[0]")?;
        let x1 = self.option(&points[1], "points[1]")?;
        let mut rng = stream(self.seed, &[0xD0E1, self.answered]);
        let winner = self.problem.duel(x0, x1, &mut rng);
        self.answered += 1;
        Ok(Answer {
            query_id: query.id,
            kind: AnswerKind::Choice {
                winner,
                rater: rater.clone(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_math::special::norm_cdf;

    #[test]
    fn branin_standardization_constants_match_a_midpoint_rule() {
        let p = HpboProblem::by_name("branin2d").unwrap();
        let n = 1500;
        let (mut s, mut s2) = (0.0, 0.0);
        for i in 0..n {
            for j in 0..n {
                let u = [(i as f64 + 0.5) / n as f64, (j as f64 + 0.5) / n as f64];
                let v = Branin.eval(&p.space.to_user_reals(&u).unwrap());
                s += v;
                s2 += v * v;
            }
        }
        let m = s / (n * n) as f64;
        let sd = (s2 / (n * n) as f64 - m * m).sqrt();
        assert!(
            (m - BRANIN_MEAN).abs() < 2e-3 && (sd - BRANIN_SD).abs() < 2e-3,
            "{m} {sd}"
        );
        assert!((p.f_max() - (-0.397_887_357_729_738 - BRANIN_MEAN) / BRANIN_SD).abs() < 1e-9);
        assert!(p.default_rho() > 0.0);
    }

    #[test]
    fn sine_reference_values_and_noise_placement() {
        let p = HpboProblem::by_name("sine1d").unwrap();
        assert!((p.f(&p.x_max) - 1.0).abs() < 1e-12);
        // Unit-cube density at the centre: 1/(0.0625·√(2π)) = 6.383; far optimum ≈ a.
        let near = p.noise_var(&[0.125]);
        let peak = 1.0 / (0.0625 * (2.0 * std::f64::consts::PI).sqrt());
        assert!((near - 0.1 * (-peak).exp()).abs() < 1e-12, "{near}");
        assert!((p.noise_var(&[0.625]) - 0.1).abs() < 1e-9);
        assert!((p.mv(&[0.125], p.default_rho()) - (1.0 - 3.0 * near)).abs() < 1e-12);
    }

    #[test]
    fn student_t_density_integrates_to_one_in_1d_and_samples_match_its_spread() {
        let t = OracleDensity::StudentT {
            center: vec![0.0],
            scale: 0.5,
            nu: 5.0,
        };
        let (lo, hi, n) = (-200.0, 200.0, 400_000);
        let step = (hi - lo) / n as f64;
        let s: f64 = (0..n)
            .map(|i| t.density(&[lo + (i as f64 + 0.5) * step]) * step)
            .sum();
        assert!((s - 1.0).abs() < 1e-4, "{s}");
        // Var of t_ν scaled by s: s² ν/(ν−2) = 0.25·5/3.
        let mut rng = agora_math::rng::stream(1, &[0]);
        let k = 200_000;
        let v: f64 = (0..k).map(|_| t.sample(&mut rng)[0].powi(2)).sum::<f64>() / k as f64;
        assert!((v - 0.25 * 5.0 / 3.0).abs() < 0.03, "{v}");
    }

    #[test]
    fn the_simulated_person_wins_at_the_probit_rate() {
        let p = HpboProblem::by_name("hartmann4d").unwrap();
        let x0 = vec![0.5, 0.55, 0.6, 0.6];
        let x1 = vec![0.2, 0.3, 0.5, 0.3];
        let z = (p.f(&x1) - p.f(&x0)) / (p.noise_var(&x0) + p.noise_var(&x1)).sqrt();
        let want = norm_cdf(z);
        let mut rng = agora_math::rng::stream(2, &[0]);
        let n = 100_000;
        let wins = (0..n).filter(|_| p.duel(&x0, &x1, &mut rng) == 1).count();
        let rate = wins as f64 / n as f64;
        let se = (want * (1.0 - want) / n as f64).sqrt();
        assert!((rate - want).abs() < 4.0 * se, "{rate} vs {want}");
        let anchors = p.anchors(&mut rng);
        assert_eq!(anchors.len(), 30);
        assert!(anchors.iter().flatten().all(|v| (0.0..=1.0).contains(v)));
        assert!(
            HpboProblem::by_name("moon")
                .unwrap_err()
                .to_string()
                .contains("sine1d")
        );
    }

    #[test]
    fn the_respondent_answers_the_kth_duel_from_its_own_stream_and_refuses_other_kinds() {
        let p = HpboProblem::by_name("branin2d").unwrap();
        let mut person = HpboRespondent::new(HpboProblem::by_name("branin2d").unwrap(), 11);
        let duel = |id: u64, a: &[f64], b: &[f64]| Query {
            id,
            kind: QueryKind::Compare {
                points: vec![Point::Unit(a.to_vec()), Point::Unit(b.to_vec())],
                rater: None,
            },
        };
        // Options near each other, so both answers occur: each must be the problem's own
        // duel drawn from stream [0xD0E1, k] of the seed.
        let mut winners = Vec::new();
        for k in 0..40u64 {
            let a = [0.5 + 0.001 * k as f64, 0.2];
            let b = [0.52, 0.21];
            let got = person.answer(&duel(k, &a, &b)).unwrap();
            let want = p.duel(&a, &b, &mut stream(11, &[0xD0E1, k]));
            assert_eq!(
                got.kind,
                AnswerKind::Choice {
                    winner: want,
                    rater: None
                }
            );
            assert_eq!(got.query_id, k);
            winners.push(want);
        }
        assert!(winners.contains(&0) && winners.contains(&1));
        assert_eq!(person.answered(), 40);
        let eval = Query {
            id: 40,
            kind: QueryKind::Evaluate {
                points: vec![Point::Unit(vec![0.5, 0.5])],
            },
        };
        assert!(matches!(
            person.answer(&eval),
            Err(Error::UnsupportedQuery { .. })
        ));
        let e = person.answer(&duel(41, &[0.5], &[0.5, 0.5])).unwrap_err();
        assert!(e.to_string().contains("points[0]"), "{e}");
        let three = Query {
            id: 42,
            kind: QueryKind::Compare {
                points: vec![Point::Index(0), Point::Index(1), Point::Index(2)],
                rater: None,
            },
        };
        assert!(person.answer(&three).is_err());
        // Refused queries use no draws: the next duel is still the 41st.
        let got = person.answer(&duel(43, &[0.1, 0.1], &[0.9, 0.9])).unwrap();
        let want = p.duel(&[0.1, 0.1], &[0.9, 0.9], &mut stream(11, &[0xD0E1, 40]));
        assert_eq!(
            got.kind,
            AnswerKind::Choice {
                winner: want,
                rater: None
            }
        );
    }
}
