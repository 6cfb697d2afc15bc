//! Random additive functions ([`AdditiveFunction`]) as a [`Respondent`]: the synthetic
//! benchmarks of DSBO's structure-recovery experiment (DSBO paper, Assumption 1 and
//! Theorem 1). Evaluation queries get `v(θ)`; Hessian queries get the exact Hessian plus
//! symmetric `N(0, σ_n²)` noise ([`AdditiveFunction::noisy_hessian`]).

use crate::additive::AdditiveFunction;
use crate::dsbo_respondent::user_point;
use agora_core::{Answer, AnswerKind, Error, Query, QueryKind, Respondent, Result, Space};
use agora_math::rng::{Rng, stream};

/// An additive function answering queries in its box, with seeded Hessian noise.
#[derive(Debug, Clone)]
pub struct AdditiveRespondent {
    f: AdditiveFunction,
    space: Space,
    sigma_n: f64,
    rng: Rng,
}

impl AdditiveRespondent {
    /// Answers for `f` with Hessian noise `sigma_n`, the noise drawn from ChaCha stream
    /// `[2]` of `seed`.
    ///
    /// Errors: a negative or non-finite `sigma_n`.
    pub fn new(f: AdditiveFunction, sigma_n: f64, seed: u64) -> Result<AdditiveRespondent> {
        if !(sigma_n.is_finite() && sigma_n >= 0.0) {
            return Err(Error::invalid(
                "sigma_n",
                format!("must be a finite number >= 0, got {sigma_n}"),
            ));
        }
        Ok(AdditiveRespondent {
            space: Space::reals(&f.bounds())?,
            f,
            sigma_n,
            rng: stream(seed, &[2]),
        })
    }

    /// The box queries are asked in.
    pub fn space(&self) -> &Space {
        &self.space
    }

    /// The function.
    pub fn function(&self) -> &AdditiveFunction {
        &self.f
    }
}

impl Respondent for AdditiveRespondent {
    fn answer(&mut self, query: &Query) -> Result<Answer> {
        match &query.kind {
            QueryKind::Evaluate { points } => {
                let values = points
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        self.f
                            .value(&user_point(&self.space, p, &format!("points[{i}]"))?)
                    })
                    .collect::<Result<Vec<f64>>>()?;
                Answer::values(query, values)
            }
            QueryKind::Hessian { point } => {
                let x = user_point(&self.space, point, "point")?;
                let rows = self.f.noisy_hessian(&x, self.sigma_n, &mut self.rng)?;
                Ok(Answer {
                    query_id: query.id,
                    kind: AnswerKind::Matrix { rows },
                })
            }
            _ => Err(Error::unsupported_query("additive function", query)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::additive::AdditiveConfig;
    use agora_core::Point;

    fn hessian(r: &mut AdditiveRespondent, x: &[f64]) -> Result<Vec<Vec<f64>>> {
        let q = Query {
            id: 0,
            kind: QueryKind::Hessian {
                point: Point::Unit(x.to_vec()),
            },
        };
        let a = r.answer(&q)?;
        a.check_against(&q)?;
        match a.kind {
            AnswerKind::Matrix { rows } => Ok(rows),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn noisy_hessians_are_symmetric_seeded_and_have_the_right_noise() {
        let cfg = AdditiveConfig::new(6, 0.3);
        let f = AdditiveFunction::sample(&cfg, 1).unwrap();
        // The box is the unit cube, so unit-cube points are the function's coordinates.
        assert_eq!(f.bounds(), vec![(0.0, 1.0); 6]);
        let x = vec![0.4; 6];
        let h = f.hessian(&x).unwrap();
        let mut o1 = AdditiveRespondent::new(f.clone(), 0.5, 7).unwrap();
        let mut o2 = AdditiveRespondent::new(f.clone(), 0.5, 7).unwrap();
        let mut sq = 0.0;
        let mut count = 0.0;
        for _ in 0..400 {
            let a = hessian(&mut o1, &x).unwrap();
            assert_eq!(a, hessian(&mut o2, &x).unwrap());
            for i in 0..6 {
                for j in 0..6 {
                    assert_eq!(a[i][j], a[j][i]);
                    if j >= i {
                        sq += (a[i][j] - h[i][j]).powi(2);
                        count += 1.0;
                    }
                }
            }
        }
        let sd = (sq / count).sqrt();
        assert!((sd - 0.5).abs() < 0.02, "{sd}");
        assert!(hessian(&mut o1, &[0.1]).is_err());
        assert!(f.noisy_hessian(&x, -1.0, &mut stream(0, &[])).is_err());
        assert!(AdditiveRespondent::new(f.clone(), -1.0, 0).is_err());
        // Evaluations are the function's values.
        let q = Query {
            id: 1,
            kind: QueryKind::Evaluate {
                points: vec![Point::Unit(x.clone())],
            },
        };
        assert_eq!(
            o1.answer(&q).unwrap(),
            Answer::values(&q, vec![f.value(&x).unwrap()]).unwrap()
        );
    }
}
