//! The solo GP-UCB baselines of the collaborative suite as strategies: each party optimizes
//! alone with its own GP, and [`SideBySide`] runs the `n` one-party strategies as one
//! per-party strategy, so a solo run is driven against the same respondent as a
//! collaborative one (one point per party each round).
//!
//! These adapters live here because `agora-methods` is being reshaped; they belong next to
//! [`Cbo`] once a solo scoring mode (as [`agora_methods::GraphScoring::SoloUcb`] for the
//! graph variant) replaces [`Cbo::solo_ucb_point`].

use agora_core::{Answer, AnswerKind, Error, Point, Query, QueryKind, Result};
use agora_methods::open::{self, AskTell, OpenQuery};
use agora_methods::{Cbo, Strategy};

/// A one-party [`Cbo`] as solo GP-UCB: each query asks [`Cbo::solo_ucb_point`] (the
/// party's own Sobol point during the random rounds, then the maximizer of
/// `μ + √β_t σ`, `β_t = c1 · d · log(c2 t)`); the answer is told by [`Cbo::tell_point`].
#[derive(Debug)]
pub struct SoloUcb {
    party: Cbo,
    open: OpenQuery<Vec<f64>>,
}

impl SoloUcb {
    /// Wrap a one-party instance.
    pub fn new(party: Cbo) -> SoloUcb {
        SoloUcb {
            party,
            open: OpenQuery::default(),
        }
    }
}

impl AskTell for SoloUcb {
    type Pending = Vec<f64>;

    fn open_query(&mut self) -> &mut OpenQuery<Vec<f64>> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, Vec<f64>)> {
        let x = self.party.solo_ucb_point()?;
        let q = Query {
            id: self.party.rounds() as u64,
            kind: QueryKind::Evaluate {
                points: vec![Point::Unit(x.clone())],
            },
        };
        Ok((q, x))
    }

    fn record(&mut self, _: &Query, x: &Vec<f64>, answer: &Answer) -> Result<()> {
        let AnswerKind::Values { values } = &answer.kind else {
            return Err(Error::invalid("answer", "solo GP-UCB needs a value"));
        };
        self.party.tell_point(x, values[0])
    }
}

impl Strategy for SoloUcb {
    fn name(&self) -> String {
        "solo-gp-ucb".into()
    }

    fn ask(&mut self) -> Result<Query> {
        open::ask(self)
    }

    fn tell(&mut self, answer: &Answer) -> Result<()> {
        open::tell(self, answer)
    }

    fn recommend(&self) -> Option<(Point, f64)> {
        self.party.recommend()
    }

    fn n_answered(&self) -> usize {
        self.party.rounds()
    }
}

/// `n` independent strategies asked side by side: each round's query holds every member's
/// points in member order, and the answer's values go back to the members they belong to.
/// Members share nothing, so asking them all before telling any gives each the same
/// queries as driving it alone.
#[derive(Debug)]
pub struct SideBySide<S> {
    members: Vec<S>,
    open: OpenQuery<Vec<Query>>,
    rounds: usize,
}

impl<S: Strategy> SideBySide<S> {
    /// The members, at least one. Errors name `members`.
    pub fn new(members: Vec<S>) -> Result<SideBySide<S>> {
        if members.is_empty() {
            return Err(Error::invalid("members", "needs at least one strategy"));
        }
        Ok(SideBySide {
            members,
            open: OpenQuery::default(),
            rounds: 0,
        })
    }

    /// The members.
    pub fn members(&self) -> &[S] {
        &self.members
    }
}

/// The points of a member's evaluation query.
fn points_of(q: &Query) -> Result<&[Point]> {
    match &q.kind {
        QueryKind::Evaluate { points } => Ok(points),
        _ => Err(Error::invalid(
            "members",
            "strategies side by side must ask evaluations",
        )),
    }
}

impl<S: Strategy> AskTell for SideBySide<S> {
    type Pending = Vec<Query>;

    fn open_query(&mut self) -> &mut OpenQuery<Vec<Query>> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, Vec<Query>)> {
        let asked = self
            .members
            .iter_mut()
            .map(|m| m.ask())
            .collect::<Result<Vec<Query>>>()?;
        let mut points = Vec::new();
        for q in &asked {
            points.extend(points_of(q)?.iter().cloned());
        }
        let q = Query {
            id: self.rounds as u64,
            kind: QueryKind::Evaluate { points },
        };
        Ok((q, asked))
    }

    fn record(&mut self, _: &Query, asked: &Vec<Query>, answer: &Answer) -> Result<()> {
        let AnswerKind::Values { values } = &answer.kind else {
            return Err(Error::invalid(
                "answer",
                "strategies side by side need values",
            ));
        };
        let mut rest = values.as_slice();
        for (m, q) in self.members.iter_mut().zip(asked) {
            let (mine, tail) = rest.split_at(points_of(q)?.len());
            m.tell(&Answer::values(q, mine.to_vec())?)?;
            rest = tail;
        }
        self.rounds += 1;
        Ok(())
    }
}

impl<S: Strategy> Strategy for SideBySide<S> {
    fn name(&self) -> String {
        format!("{} x{}", self.members[0].name(), self.members.len())
    }

    fn ask(&mut self) -> Result<Query> {
        open::ask(self)
    }

    fn tell(&mut self, answer: &Answer) -> Result<()> {
        open::tell(self, answer)
    }

    /// The members have no common objective to recommend for.
    fn recommend(&self) -> Option<(Point, f64)> {
        None
    }

    fn n_answered(&self) -> usize {
        self.rounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_methods::RandomSearch;

    /// Side by side, each member gets exactly the queries and answers it gets alone.
    #[test]
    fn members_see_what_they_see_alone() {
        let space = agora_core::Space::reals(&[(0.0, 1.0), (0.0, 1.0)]).unwrap();
        let value = |p: &Point| match p {
            Point::Unit(u) => u[0] - u[1],
            Point::Index(_) => unreachable!(),
        };
        let mut both = SideBySide::new(vec![
            RandomSearch::new(space.clone(), 1).unwrap(),
            RandomSearch::new(space.clone(), 2).unwrap(),
        ])
        .unwrap();
        for _ in 0..4 {
            let q = both.ask().unwrap();
            assert_eq!(
                both.ask().unwrap(),
                q,
                "asking again returns the open query"
            );
            let QueryKind::Evaluate { points } = &q.kind else {
                unreachable!()
            };
            assert_eq!(points.len(), 2);
            both.tell(&Answer::values(&q, points.iter().map(value).collect()).unwrap())
                .unwrap();
        }
        for (k, seed) in [1u64, 2].into_iter().enumerate() {
            let mut alone = RandomSearch::new(space.clone(), seed).unwrap();
            for _ in 0..4 {
                let q = alone.ask().unwrap();
                let QueryKind::Evaluate { points } = &q.kind else {
                    unreachable!()
                };
                alone
                    .tell(&Answer::values(&q, points.iter().map(value).collect()).unwrap())
                    .unwrap();
            }
            assert_eq!(both.members()[k].recommend(), alone.recommend());
            assert_eq!(both.members()[k].n_answered(), 4);
        }
        assert_eq!(both.n_answered(), 4);
        // A wrong answer leaves every member as it was.
        let q = both.ask().unwrap();
        let short = Answer {
            query_id: q.id,
            kind: AnswerKind::Values { values: vec![1.0] },
        };
        assert!(both.tell(&short).is_err());
        assert!(both.members().iter().all(|m| m.n_answered() == 4));
        assert!(SideBySide::<RandomSearch>::new(Vec::new()).is_err());
    }

    /// Solo GP-UCB through ask/tell is the one-party instance's own solo point and record.
    #[test]
    fn solo_ucb_asks_the_solo_point() {
        let space = agora_core::Space::reals(&[(0.0, 1.0); 3]).unwrap();
        let mut cfg = agora_methods::CboConfig::hartmann6(1.0);
        cfg.parties = 1;
        cfg.n_init = 2;
        cfg.gp = agora_methods::FixedGp::tuning(3);
        cfg.maximizer.raw_samples = 64;
        cfg.maximizer.restarts = 2;
        let mut solo = SoloUcb::new(Cbo::new(space.clone(), cfg.clone(), 5).unwrap());
        let mut by_hand = Cbo::new(space, cfg, 5).unwrap();
        for t in 0..4 {
            let q = solo.ask().unwrap();
            let x = by_hand.solo_ucb_point().unwrap();
            assert_eq!(
                q.kind,
                QueryKind::Evaluate {
                    points: vec![Point::Unit(x.clone())]
                }
            );
            let y = 0.1 * t as f64;
            solo.tell(&Answer::values(&q, vec![y]).unwrap()).unwrap();
            by_hand.tell_point(&x, y).unwrap();
        }
        assert_eq!(solo.n_answered(), 4);
        assert!(matches!(
            solo.tell(&Answer {
                query_id: 4,
                kind: AnswerKind::Values { values: vec![0.0] }
            }),
            Err(Error::NoOpenQuery)
        ));
    }
}
