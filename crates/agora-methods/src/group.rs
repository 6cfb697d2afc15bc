//! A group decides by show of hands: preferential BO where every member votes publicly on
//! each pair and the majority's choice is the comparison the preference model learns from.
//!
//! This is the plain baseline a facilitator reaches for before Social BO: it ignores social
//! influence (a public majority is taken at face value) and asks nothing privately. It is
//! cheap at any group size, so it is also what agora's load tests run with 50 voters.
//!
//! A strict majority of the votes cast (abstentions excluded) picks the winner; an even
//! split, or no votes at all, is a tie ("can't tell"), which the inner [`Pbo`] counts
//! without learning from it. With [`PboConfig::learn_rater_noise`] (`raters=learned`)
//! every decisive vote is instead a comparison of its own, and the model learns each
//! member's noise scale, so that a member who votes at random gets little weight.

use crate::open::{self, AskTell, OpenQuery};
use crate::{Pbo, PboConfig, Strategy};
use agora_core::{
    Answer, AnswerKind, Channel, Error, Observation, Point, Query, QueryKind, Result, Space,
};

/// Majority-vote preferential BO over a named group.
#[derive(Debug, Clone)]
pub struct GroupPbo {
    inner: Pbo,
    agents: Vec<String>,
    open: OpenQuery<()>,
}

impl GroupPbo {
    /// A group of `agents` (at least one, distinct names) choosing pairs by `cfg`'s rule.
    pub fn new(space: Space, cfg: PboConfig, agents: Vec<String>, seed: u64) -> Result<Self> {
        if agents.is_empty() {
            return Err(Error::invalid(
                "agents",
                "a group vote needs at least one agent",
            ));
        }
        for (i, a) in agents.iter().enumerate() {
            if agents[..i].contains(a) {
                return Err(Error::invalid(
                    "agents",
                    format!("agent names must be distinct; {a:?} appears twice"),
                ));
            }
        }
        Ok(GroupPbo {
            inner: Pbo::new(space, cfg, seed)?,
            agents,
            open: OpenQuery::default(),
        })
    }

    /// The inner preference learner.
    pub fn inner(&self) -> &Pbo {
        &self.inner
    }

    /// The majority's choice among `n_options` from `votes` (None: a tie or no votes).
    pub fn majority(votes: &[Option<usize>], n_options: usize) -> Option<usize> {
        let mut counts = vec![0usize; n_options];
        for w in votes.iter().flatten() {
            if let Some(c) = counts.get_mut(*w) {
                *c += 1;
            }
        }
        let top = *counts.iter().max()?;
        let mut leaders = counts.iter().enumerate().filter(|(_, c)| **c == top);
        let first = leaders.next()?;
        if top == 0 || leaders.next().is_some() {
            None
        } else {
            Some(first.0)
        }
    }
}

/// The group's vote wraps the inner learner's open comparison: asking opens it, the
/// majority's choice (or a tie) answers it.
impl AskTell for GroupPbo {
    type Pending = ();

    fn open_query(&mut self) -> &mut OpenQuery<()> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, ())> {
        let q = self.inner.ask()?;
        let QueryKind::Compare { points, .. } = q.kind else {
            return Err(Error::State(
                "the inner preference learner asked something other than a comparison".into(),
            ));
        };
        let q = Query {
            id: q.id,
            kind: QueryKind::GroupVote {
                points,
                channel: Channel::Public,
                agents: self.agents.clone(),
            },
        };
        Ok((q, ()))
    }

    fn record(&mut self, q: &Query, _: &(), answer: &Answer) -> Result<()> {
        let (AnswerKind::Votes { votes }, QueryKind::GroupVote { points, .. }) =
            (&answer.kind, &q.kind)
        else {
            return Err(Error::invalid(
                "answer",
                "a group vote needs `votes` (one winner index or null per agent)",
            ));
        };
        if self.inner.learns_rater_noise() {
            let named: Vec<(String, usize)> = self
                .agents
                .iter()
                .zip(votes)
                .filter_map(|(a, v)| v.map(|w| (a.clone(), w)))
                .collect();
            return self
                .inner
                .record_votes(q.id, &named, Self::majority(votes, points.len()));
        }
        let kind = match Self::majority(votes, points.len()) {
            Some(winner) => AnswerKind::Choice {
                winner,
                rater: Some("majority".into()),
            },
            None => AnswerKind::Tie {
                rater: Some("majority".into()),
            },
        };
        self.inner.tell(&Answer {
            query_id: q.id,
            kind,
        })
    }
}

impl Strategy for GroupPbo {
    fn name(&self) -> String {
        format!("group-{}", self.inner.name())
    }

    fn ask(&mut self) -> Result<Query> {
        open::ask(self)
    }

    fn tell(&mut self, answer: &Answer) -> Result<()> {
        open::tell(self, answer)
    }

    fn recommend(&self) -> Option<(Point, f64)> {
        self.inner.recommend()
    }

    fn n_answered(&self) -> usize {
        self.inner.n_answered()
    }

    fn belief(&self, points: &[Vec<f64>]) -> Option<Vec<(f64, f64)>> {
        self.inner.belief(points)
    }

    fn rater_noise(&self) -> Option<Vec<(String, f64)>> {
        self.inner.rater_noise()
    }

    /// The group's earlier comparisons (as the inner learner's); the open vote is withdrawn.
    fn import(&mut self, data: &[Observation]) -> Result<()> {
        self.inner.import(data)?;
        self.open = OpenQuery::default();
        Ok(())
    }

    fn enqueue(&mut self, option: &[f64]) -> Result<()> {
        self.inner.enqueue(option)
    }

    fn enqueues(&self) -> bool {
        self.inner.enqueues()
    }

    fn snapshot(&self) -> Result<Option<serde_json::Value>> {
        let Some(inner) = self.inner.snapshot()? else {
            return Ok(None);
        };
        let st = GroupState {
            inner,
            open: self.open.entries().iter().map(|(q, _)| q.clone()).collect(),
        };
        serde_json::to_value(st)
            .map(Some)
            .map_err(|e| Error::State(format!("cannot write the snapshot: {e}")))
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        let st = <GroupState as serde::Deserialize>::deserialize(state)
            .map_err(|e| Error::invalid("snapshot", e.to_string()))?;
        let mut inner = self.inner.clone();
        inner.restore(&st.inner)?;
        self.inner = inner;
        self.open = OpenQuery::from_entries(st.open.into_iter().map(|q| (q, ())).collect());
        Ok(())
    }
}

/// [`GroupPbo`]'s snapshot: the inner learner's and the group's open votes.
#[derive(serde::Serialize, serde::Deserialize)]
struct GroupState {
    inner: serde_json::Value,
    open: Vec<Query>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PairRule;

    /// The two options of a group vote over a 1-D box.
    fn pair_1d(q: &Query) -> Vec<f64> {
        let QueryKind::GroupVote { points, .. } = &q.kind else {
            panic!("not a group vote: {q:?}")
        };
        points
            .iter()
            .map(|p| match p {
                Point::Unit(u) => u[0],
                Point::Index(_) => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn majority_counts_votes_and_splits_are_ties() {
        assert_eq!(GroupPbo::majority(&[Some(0), Some(1), Some(0)], 2), Some(0));
        assert_eq!(GroupPbo::majority(&[Some(1), None, None], 2), Some(1));
        assert_eq!(GroupPbo::majority(&[Some(0), Some(1)], 2), None);
        assert_eq!(GroupPbo::majority(&[None, None], 2), None);
        assert_eq!(GroupPbo::majority(&[], 2), None);
    }

    /// A group of four: three who prefer the option nearer 0.7 and one who votes by a
    /// seeded coin. With learned rater noise, the coin voter's weight (1/scale², relative
    /// to the heaviest member's) falls as the rounds go on, the others' stays high, and
    /// the group's recommendation is the three's optimum; the run replays exactly (a
    /// snapshot restored mid-way gives the same scales and queries).
    #[test]
    fn a_random_voters_weight_falls_when_rater_noise_is_learned() {
        use rand::RngExt;
        let space = Space::reals(&[(0.0, 1.0)]).unwrap();
        let agents: Vec<String> = ["ann", "bob", "cy", "coin"].map(String::from).to_vec();
        let mut cfg = PboConfig::new(PairRule::Eubo);
        cfg.learn_rater_noise = true;
        let mut s = GroupPbo::new(space.clone(), cfg.clone(), agents.clone(), 5).unwrap();
        let mut coin = agora_math::rng::stream(77, &[1]);
        let weight = |s: &GroupPbo, who: &str| {
            let noise = s.rater_noise().unwrap();
            let w = |n: f64| 1.0 / (n * n);
            let top = noise.iter().map(|(_, n)| w(*n)).fold(0.0, f64::max);
            w(noise.iter().find(|(r, _)| r == who).unwrap().1) / top
        };
        let mut seen = Vec::new();
        for round in 1..=24 {
            let q = s.ask().unwrap();
            let x = pair_1d(&q);
            let honest = usize::from((x[1] - 0.7).abs() < (x[0] - 0.7).abs());
            let votes = vec![
                Some(honest),
                Some(honest),
                Some(honest),
                Some(usize::from(coin.random::<bool>())),
            ];
            s.tell(&Answer {
                query_id: q.id,
                kind: AnswerKind::Votes { votes },
            })
            .unwrap();
            if round == 12 {
                // Mid-way, a snapshot restored into a fresh build is the same learner.
                let snap = s.snapshot().unwrap().unwrap();
                let mut r = GroupPbo::new(space.clone(), cfg.clone(), agents.clone(), 5).unwrap();
                r.restore(&snap).unwrap();
                assert_eq!(r.rater_noise(), s.rater_noise());
                assert_eq!(r.clone().ask().unwrap(), s.clone().ask().unwrap());
            }
            if [6, 12, 24].contains(&round) {
                seen.push(weight(&s, "coin"));
            }
        }
        assert!(seen[2] < seen[0], "the coin's weight falls: {seen:?}");
        assert!(seen[2] < 0.1, "the coin ends with little weight: {seen:?}");
        for who in ["ann", "bob", "cy"] {
            assert!(weight(&s, who) > 0.5, "{who}: {:?}", s.rater_noise());
        }
        let Some((Point::Unit(x), _)) = s.recommend() else {
            panic!()
        };
        assert!((x[0] - 0.7).abs() < 0.1, "recommended {x:?}");
        // Without learning, the majority is what is learned and no scales are reported.
        let plain = GroupPbo::new(space, PboConfig::new(PairRule::Eubo), agents, 5).unwrap();
        assert!(plain.rater_noise().is_none());
    }

    #[test]
    fn a_group_finds_the_majoritys_optimum_and_replays_exactly() {
        let space = Space::reals(&[(0.0, 1.0)]).unwrap();
        let agents: Vec<String> = (0..5).map(|i| format!("p{i}")).collect();
        // Voter i prefers points near c_i; the median ideal is 0.5.
        let ideals = [0.2, 0.4, 0.5, 0.6, 0.9];
        let run = |n: usize| {
            let mut s = GroupPbo::new(
                space.clone(),
                PboConfig::new(PairRule::Eubo),
                agents.clone(),
                3,
            )
            .unwrap();
            let mut asked = Vec::new();
            for _ in 0..n {
                let q = s.ask().unwrap();
                let x = pair_1d(&q);
                let votes = ideals
                    .iter()
                    .map(|c| Some(usize::from((x[1] - c).abs() < (x[0] - c).abs())))
                    .collect();
                s.tell(&Answer {
                    query_id: q.id,
                    kind: AnswerKind::Votes { votes },
                })
                .unwrap();
                asked.push(q);
            }
            (s, asked)
        };
        let (s, a1) = run(20);
        let (_, a2) = run(20);
        assert_eq!(a1, a2, "same seed and votes, same queries");
        let Some((Point::Unit(x), _)) = s.recommend() else {
            panic!("no recommendation")
        };
        // Single-peaked voters: the majority winner of any pair is the median voter's
        // choice, so the group's optimum is the median ideal 0.5.
        assert!((x[0] - 0.5).abs() < 0.1, "recommended {x:?}");
    }

    #[test]
    fn bad_votes_are_named_and_change_nothing() {
        let space = Space::reals(&[(0.0, 1.0)]).unwrap();
        let mut s = GroupPbo::new(
            space,
            PboConfig::new(PairRule::Eubo),
            vec!["a".into(), "b".into()],
            0,
        )
        .unwrap();
        let q = s.ask().unwrap();
        let bad = Answer {
            query_id: q.id,
            kind: AnswerKind::Votes {
                votes: vec![Some(0), Some(2)],
            },
        };
        let e = s.tell(&bad).unwrap_err().to_string();
        assert!(e.contains("votes[1]"), "{e}");
        assert_eq!(s.ask().unwrap(), q);
        assert_eq!(s.n_answered(), 0);
        let e = GroupPbo::new(
            Space::reals(&[(0.0, 1.0)]).unwrap(),
            PboConfig::new(PairRule::Eubo),
            vec![],
            0,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("agents"), "{e}");
    }
}
