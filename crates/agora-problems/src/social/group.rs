//! The simulated group of a [`SocialTask`] as a [`Respondent`]: seeded Bradley–Terry votes
//! and noisy ratings (the GP variant, Social BO paper App. F.1) on the public channel
//! (`v = A u`) and the private one (`u`); docs/notes/social-bo.md §4.

use super::SocialTask;
use agora_core::{Answer, AnswerKind, Channel, Error, Point, Query, QueryKind, Respondent, Result};
use agora_math::rng::stream;
use rand::RngExt;

/// A simulated group answering [`QueryKind::GroupVote`] and [`QueryKind::GroupRate`] queries.
#[derive(Debug)]
pub struct SocialGroup<'a> {
    task: &'a SocialTask,
    seed: u64,
    /// Private and public votes answered so far.
    pub counts: [usize; 2],
    /// Cost of one private and one public group vote (`λ_u ≫ λ_v`; the paper gives no
    /// numbers, agora's default is 10 and 1).
    pub costs: [f64; 2],
    /// Standard deviation of the Gaussian noise on a rating ([`QueryKind::GroupRate`], the
    /// GP variant's direct utility values, Assumption F.1). The paper gives none; agora's
    /// default is 0.1.
    pub rating_noise: f64,
}

impl<'a> SocialGroup<'a> {
    /// A group for `task`; votes are seeded by `seed`, the query id and the channel.
    pub fn new(task: &'a SocialTask, seed: u64) -> SocialGroup<'a> {
        SocialGroup {
            task,
            seed,
            counts: [0, 0],
            costs: [10.0, 1.0],
            rating_noise: 0.1,
        }
    }

    /// Total cost of the votes answered so far, `λ_u |Q^u| + λ_v |Q^v|`.
    pub fn cost(&self) -> f64 {
        self.costs[0] * self.counts[0] as f64 + self.costs[1] * self.counts[1] as f64
    }

    fn at(&self, p: &Point) -> Result<Vec<f64>> {
        match p {
            Point::Unit(u) => Ok(u.clone()),
            Point::Index(i) => self
                .task
                .options
                .as_ref()
                .and_then(|o| o.get(*i))
                .cloned()
                .ok_or_else(|| Error::invalid("point", format!("unknown option {i}"))),
        }
    }

    fn utilities(&self, x: &[f64], channel: Channel) -> Result<Vec<f64>> {
        match channel {
            Channel::Private => self.task.utilities_at(x),
            Channel::Public => self.task.public_utilities(x),
        }
    }

    /// Every agent's rating of the query's option: `f_i(x) + ε`, `ε ~ N(0, rating_noise²)`
    /// seeded by the query id and the channel, `f = u` (private) or `A u` (public).
    fn rate(
        &mut self,
        q: &Query,
        point: &Point,
        channel: Channel,
        agents: usize,
    ) -> Result<Answer> {
        if agents != self.task.agents {
            return Err(Error::dim("agents", self.task.agents, agents));
        }
        let f = self.utilities(&self.at(point)?, channel)?;
        let ch = usize::from(channel == Channel::Public);
        self.counts[ch] += 1;
        let mut rng = stream(self.seed, &[q.id, ch as u64, 0x6A7]);
        let values = f
            .iter()
            .map(|v| {
                let e: f64 =
                    rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut rng);
                v + self.rating_noise * e
            })
            .collect();
        Ok(Answer {
            query_id: q.id,
            kind: AnswerKind::Values { values },
        })
    }

    /// Every agent's vote on the query's pair: agent `i` prefers option 0 with probability
    /// `σ(f_i(x₀) − f_i(x₁))` (Bradley–Terry), `f = u` (private) or `A u` (public), one
    /// uniform draw per agent from the stream of the query id and the channel.
    fn vote(
        &mut self,
        q: &Query,
        points: &[Point],
        channel: Channel,
        agents: usize,
    ) -> Result<Answer> {
        if points.len() != 2 {
            return Err(Error::dim("points", 2, points.len()));
        }
        if agents != self.task.agents {
            return Err(Error::dim("agents", self.task.agents, agents));
        }
        let f0 = self.utilities(&self.at(&points[0])?, channel)?;
        let f1 = self.utilities(&self.at(&points[1])?, channel)?;
        let ch = usize::from(channel == Channel::Public);
        self.counts[ch] += 1;
        let mut rng = stream(self.seed, &[q.id, ch as u64, 0x5B0]);
        let votes = (0..agents)
            .map(|i| {
                let p = 1.0 / (1.0 + (-(f0[i] - f1[i])).exp());
                Some(if rng.random::<f64>() < p { 0 } else { 1 })
            })
            .collect();
        Ok(Answer {
            query_id: q.id,
            kind: AnswerKind::Votes { votes },
        })
    }
}

/// The group answers [`QueryKind::GroupVote`] (every agent's vote on a pair) and
/// [`QueryKind::GroupRate`] (every agent's noisy rating of one option), on either channel;
/// any other kind is [`Error::UnsupportedQuery`].
impl Respondent for SocialGroup<'_> {
    fn answer(&mut self, q: &Query) -> Result<Answer> {
        match &q.kind {
            QueryKind::GroupVote {
                points,
                channel,
                agents,
            } => self.vote(q, points, *channel, agents.len()),
            QueryKind::GroupRate {
                point,
                channel,
                agents,
            } => self.rate(q, point, *channel, agents.len()),
            _ => Err(Error::unsupported_query("social group", q)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vote_frequencies_follow_bradley_terry() {
        let t = SocialTask::by_name("toy").unwrap();
        let mut g = SocialGroup::new(&t, 3);
        let (a, b) = (vec![0.40], vec![0.55]);
        for channel in [Channel::Private, Channel::Public] {
            let (fa, fb) = match channel {
                Channel::Private => (t.utilities_at(&a).unwrap(), t.utilities_at(&b).unwrap()),
                Channel::Public => (
                    t.public_utilities(&a).unwrap(),
                    t.public_utilities(&b).unwrap(),
                ),
            };
            let mut wins = [0usize; 2];
            let trials = 20000;
            for id in 0..trials {
                let q = Query {
                    id,
                    kind: QueryKind::GroupVote {
                        points: vec![Point::Unit(a.clone()), Point::Unit(b.clone())],
                        channel,
                        agents: vec!["0".into(), "1".into()],
                    },
                };
                let AnswerKind::Votes { votes } = g.answer(&q).unwrap().kind else {
                    panic!()
                };
                for i in 0..2 {
                    wins[i] += usize::from(votes[i] == Some(0));
                }
            }
            for i in 0..2 {
                let p = 1.0 / (1.0 + (-(fa[i] - fb[i])).exp());
                let freq = wins[i] as f64 / trials as f64;
                // 4.5 binomial standard errors.
                let se = (p * (1.0 - p) / trials as f64).sqrt();
                assert!(
                    (freq - p).abs() < 4.5 * se,
                    "{channel:?} agent {i}: {freq} vs {p}"
                );
            }
        }
        assert_eq!(g.counts, [20000, 20000]);
        assert_eq!(g.cost(), 10.0 * 20000.0 + 20000.0);
    }

    /// The answers are the simulator's own formulas on the same streams: a vote draws one
    /// uniform per agent from `stream(seed, [id, channel, 0x5B0])`, a rating one normal per
    /// agent from `stream(seed, [id, channel, 0x6A7])`; option indices read the task's
    /// option set.
    #[test]
    fn answers_are_the_simulator_on_its_streams() {
        use rand_distr::{Distribution, StandardNormal};
        let t = SocialTask::by_name("thermal").unwrap();
        let agents: Vec<String> = (0..3).map(|i| i.to_string()).collect();
        let (x0, x1) = (vec![0.2, 0.7], vec![0.6, 0.1]);
        let mut g = SocialGroup::new(&t, 11);
        for (id, channel) in [(4u64, Channel::Public), (9, Channel::Private)] {
            let q = Query {
                id,
                kind: QueryKind::GroupVote {
                    points: vec![Point::Unit(x0.clone()), Point::Unit(x1.clone())],
                    channel,
                    agents: agents.clone(),
                },
            };
            let (f0, f1) = match channel {
                Channel::Private => (t.utilities_at(&x0).unwrap(), t.utilities_at(&x1).unwrap()),
                Channel::Public => (
                    t.public_utilities(&x0).unwrap(),
                    t.public_utilities(&x1).unwrap(),
                ),
            };
            let ch = u64::from(channel == Channel::Public);
            let mut rng = stream(11, &[id, ch, 0x5B0]);
            let want: Vec<Option<usize>> = (0..3)
                .map(|i| {
                    let p = 1.0 / (1.0 + (f1[i] - f0[i]).exp());
                    Some(usize::from(rng.random::<f64>() >= p))
                })
                .collect();
            assert_eq!(
                g.answer(&q).unwrap(),
                Answer {
                    query_id: id,
                    kind: AnswerKind::Votes { votes: want }
                }
            );
            let r = Query {
                id,
                kind: QueryKind::GroupRate {
                    point: Point::Unit(x0.clone()),
                    channel,
                    agents: agents.clone(),
                },
            };
            let mut rng = stream(11, &[id, ch, 0x6A7]);
            let want: Vec<f64> = f0
                .iter()
                .map(|v| {
                    let e: f64 = StandardNormal.sample(&mut rng);
                    v + 0.1 * e
                })
                .collect();
            assert_eq!(g.answer(&r).unwrap(), Answer::values(&r, want).unwrap());
        }
        assert_eq!(g.counts, [2, 2]);
        // Options of a finite set are read by index.
        let h = SocialTask::by_name("hotel").unwrap();
        let opts = h.options.clone().unwrap();
        let by_index = Query {
            id: 0,
            kind: QueryKind::GroupRate {
                point: Point::Index(7),
                channel: Channel::Private,
                agents: agents.clone(),
            },
        };
        let by_unit = Query {
            id: 0,
            kind: QueryKind::GroupRate {
                point: Point::Unit(opts[7].clone()),
                channel: Channel::Private,
                agents: agents.clone(),
            },
        };
        let a = SocialGroup::new(&h, 5).answer(&by_index).unwrap();
        assert_eq!(a, SocialGroup::new(&h, 5).answer(&by_unit).unwrap());
    }

    #[test]
    fn other_kinds_and_misfits_are_refused() {
        let t = SocialTask::by_name("toy").unwrap();
        let mut g = SocialGroup::new(&t, 1);
        let q = Query {
            id: 0,
            kind: QueryKind::Evaluate {
                points: vec![Point::Unit(vec![0.5])],
            },
        };
        assert!(matches!(g.answer(&q), Err(Error::UnsupportedQuery { .. })));
        let three = Query {
            id: 1,
            kind: QueryKind::GroupVote {
                points: vec![Point::Unit(vec![0.1]), Point::Unit(vec![0.2])],
                channel: Channel::Public,
                agents: vec!["a".into(), "b".into(), "c".into()],
            },
        };
        let e = g.answer(&three).unwrap_err();
        assert!(e.to_string().contains("agents"), "{e}");
        let unknown = Query {
            id: 2,
            kind: QueryKind::GroupRate {
                point: Point::Index(3),
                channel: Channel::Public,
                agents: vec!["a".into(), "b".into()],
            },
        };
        let e = g.answer(&unknown).unwrap_err();
        assert!(e.to_string().contains("option 3"), "{e}");
        assert_eq!(g.counts, [0, 0], "refused queries are not counted");
    }
}
