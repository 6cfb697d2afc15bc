//! Test helpers: a small ask → answer → tell loop, and respondents for closures and
//! additive functions.

use crate::Strategy;
use agora_core::{Answer, Error, Point, Query, QueryKind, Respondent, Result, Space};
use agora_problems::AdditiveRespondent;
use agora_problems::additive::{AdditiveConfig, AdditiveFunction, FeatureKernel};

/// Ask, answer and tell `queries` times.
pub fn drive(s: &mut dyn Strategy, r: &mut dyn Respondent, queries: usize) -> Result<()> {
    for _ in 0..queries {
        let q = s.ask()?;
        let a = r.answer(&q)?;
        s.tell(&a)?;
    }
    Ok(())
}

/// The evaluations of a run, in user units.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    pub xs: Vec<Vec<f64>>,
    pub ys: Vec<f64>,
}

impl Run {
    /// `max(ys[..=i])` for every `i`.
    pub fn best_so_far(&self) -> Vec<f64> {
        self.ys
            .iter()
            .scan(f64::NEG_INFINITY, |b, &y| {
                *b = b.max(y);
                Some(*b)
            })
            .collect()
    }

    /// The best value.
    pub fn best(&self) -> f64 {
        self.best_point().1
    }

    /// The best evaluation (the first on ties).
    pub fn best_point(&self) -> (&[f64], f64) {
        let mut b = 0;
        for (i, y) in self.ys.iter().enumerate() {
            if *y > self.ys[b] {
                b = i;
            }
        }
        (&self.xs[b], self.ys[b])
    }
}

/// Drive `s` against `r` until `evaluations` evaluation queries are answered (other
/// queries, e.g. Hessians, do not count), recording them.
pub fn run_on<R: Respondent + HasSpace>(
    s: &mut dyn Strategy,
    r: &mut R,
    evaluations: usize,
) -> Run {
    let mut run = Run::default();
    while run.ys.len() < evaluations {
        let q = s.ask().unwrap();
        let a = r.answer(&q).unwrap();
        if let (QueryKind::Evaluate { points }, agora_core::AnswerKind::Values { values }) =
            (&q.kind, &a.kind)
        {
            for (p, v) in points.iter().zip(values) {
                let Point::Unit(u) = p else { panic!("{p:?}") };
                run.xs.push(r.space().to_user_reals(u).unwrap());
                run.ys.push(*v);
            }
        }
        s.tell(&a).unwrap();
    }
    run
}

/// `evaluations` noiseless evaluations of `f`.
pub fn run(s: &mut dyn Strategy, f: &AdditiveFunction, evaluations: usize) -> Run {
    run_on(
        s,
        &mut AdditiveRespondent::new(f.clone(), 0.0, 0).unwrap(),
        evaluations,
    )
}

/// A random additive function (RBF cliques, ℓ = 0.3).
pub fn additive_problem(d: usize, p: f64, seed: u64) -> AdditiveFunction {
    let cfg = AdditiveConfig {
        kernel: FeatureKernel::Rbf,
        lengthscale: 0.3,
        ..AdditiveConfig::new(d, p)
    };
    AdditiveFunction::sample(&cfg, seed).unwrap()
}

/// A respondent's box.
pub trait HasSpace {
    fn space(&self) -> &Space;
}

impl HasSpace for AdditiveRespondent {
    fn space(&self) -> &Space {
        AdditiveRespondent::space(self)
    }
}

/// Evaluations of a closure on a box (user units).
pub struct FnRespondent<F> {
    space: Space,
    f: F,
}

impl<F: FnMut(&[f64]) -> f64> FnRespondent<F> {
    pub fn new(space: Space, f: F) -> Self {
        FnRespondent { space, f }
    }
}

impl<F> HasSpace for FnRespondent<F> {
    fn space(&self) -> &Space {
        &self.space
    }
}

impl<F: FnMut(&[f64]) -> f64> Respondent for FnRespondent<F> {
    fn answer(&mut self, q: &Query) -> Result<Answer> {
        let QueryKind::Evaluate { points } = &q.kind else {
            return Err(Error::unsupported_query("closure", q));
        };
        let mut values = Vec::new();
        for p in points {
            let Point::Unit(u) = p else {
                return Err(Error::invalid("points", "unit-cube points only"));
            };
            values.push((self.f)(&self.space.to_user_reals(u)?));
        }
        Answer::values(q, values)
    }
}

/// A deterministic group's votes on a [`QueryKind::GroupVote`] pair: agent `i` votes for the
/// option nearer its ideal point `ideals[i % ideals.len()]` (1-D boxes) on the private
/// channel; on the public one every agent votes as agent 0 does.
pub fn nearest_ideal_votes(q: &Query, ideals: &[f64]) -> Answer {
    let QueryKind::GroupVote {
        points,
        channel,
        agents,
    } = &q.kind
    else {
        panic!("group votes")
    };
    let x: Vec<f64> = points
        .iter()
        .map(|p| match p {
            Point::Unit(u) => u[0],
            Point::Index(_) => panic!("box"),
        })
        .collect();
    let votes = (0..agents.len())
        .map(|i| {
            let j = if *channel == agora_core::Channel::Public {
                0
            } else {
                i
            };
            let c = ideals[j % ideals.len()];
            Some(usize::from((x[0] - c).abs() >= (x[1] - c).abs()))
        })
        .collect();
    Answer {
        query_id: q.id,
        kind: agora_core::AnswerKind::Votes { votes },
    }
}

#[cfg(test)]
mod contract {
    use super::*;
    use crate::dsbo::{EdgeRule, StructureConfig};
    use crate::{
        CmaEs, CmaEsConfig, Dsbo, DsboConfig, GpUcb, GpUcbConfig, Turbo, TurboConfig, UniformSearch,
    };
    use agora_core::{AnswerKind, Param};

    /// Every black-box strategy of DSBO's comparison on a small problem.
    fn make(
        k: usize,
        space: &Space,
        cliques: &[Vec<usize>],
        seed: u64,
    ) -> Result<Box<dyn Strategy>> {
        let cfg = GpUcbConfig {
            n_init: 4,
            ..GpUcbConfig::default()
        };
        let dcfg = DsboConfig {
            gp_ucb: cfg.clone(),
            ..DsboConfig::new(StructureConfig::new(4, 4, EdgeRule::Budget(3)))
        };
        Ok(match k {
            0 => Box::new(UniformSearch::new(space, seed)?),
            1 => Box::new(GpUcb::full_kernel(space, cfg, seed)?),
            2 => Box::new(Dsbo::with_cliques(space, dcfg, cliques, seed)?),
            3 => Box::new(Dsbo::with_random_structure(space, dcfg, 2, seed)?),
            4 => Box::new(Dsbo::new(space, dcfg, seed)?),
            5 => Box::new(Turbo::new(space, TurboConfig::default(), seed)?),
            _ => Box::new(CmaEs::new(space, CmaEsConfig::default(), seed)?),
        })
    }

    #[test]
    fn every_black_box_strategy_is_deterministic_in_its_seed_and_refuses_bad_input() {
        let f = additive_problem(5, 0.3, 0);
        let space = Space::reals(&f.bounds()).unwrap();
        // A fresh respondent per run: the Hessian noise stream is part of its state.
        let go = |k: usize, seed: u64| {
            let mut s = make(k, &space, f.cliques(), seed).unwrap();
            let mut r = AdditiveRespondent::new(f.clone(), 0.01, 3).unwrap();
            (run_on(s.as_mut(), &mut r, 12), s.name())
        };
        for k in 0..7 {
            let (a, name) = go(k, 5);
            assert_eq!(a.ys.len(), 12, "{name}");
            assert_eq!(a, go(k, 5).0, "{name}: same seed, same run");
            assert_ne!(a.xs, go(k, 6).0.xs, "{name}: another seed, another run");
            // A wrong count or a NaN value is refused by name and leaves the open query.
            let mut s = make(k, &space, f.cliques(), 5).unwrap();
            let mut r = AdditiveRespondent::new(f.clone(), 0.01, 3).unwrap();
            let q = s.ask().unwrap();
            let good = r.answer(&q).unwrap();
            let mut bad = good.clone();
            match &mut bad.kind {
                AnswerKind::Values { values } => values.push(1.0),
                AnswerKind::Matrix { rows } => rows.push(vec![0.0; 5]),
                other => panic!("{other:?}"),
            }
            let e = s.tell(&bad).unwrap_err();
            assert!(matches!(e, Error::Dimension { .. }), "{name}: {e}");
            if let AnswerKind::Values { values } = &mut bad.kind {
                *values = vec![f64::NAN];
                let e = s.tell(&bad).unwrap_err();
                assert!(e.to_string().contains("values[0]"), "{name}: {e}");
            }
            assert_eq!(s.ask().unwrap(), q, "{name}");
            assert_eq!(s.n_answered(), 0, "{name}");
            assert!(s.recommend().is_none(), "{name}");
            s.tell(&good).unwrap();
            assert_eq!(s.n_answered(), 1, "{name}");
            assert_eq!(s.tell(&good), Err(Error::NoOpenQuery), "{name}");
            // Boxes of real parameters only.
            let ints = Space::boxed(vec![
                Param::Real {
                    name: "a".into(),
                    lo: 0.0,
                    hi: 1.0,
                },
                Param::Integer {
                    name: "n".into(),
                    lo: 0,
                    hi: 3,
                },
            ])
            .unwrap();
            let e = make(k, &ints, &[vec![0]], 0).unwrap_err();
            assert!(e.to_string().contains("params[1]"), "{name}: {e}");
            let cands = Space::Candidates {
                names: vec!["a".into()],
                features: vec![vec![0.5]],
            };
            let e = make(k, &cands, &[vec![0]], 0).unwrap_err();
            assert!(e.to_string().contains("space"), "{name}: {e}");
        }
    }
}
