//! The one protocol between strategies and whoever answers them.
//!
//! A strategy emits a [`Query`]; an oracle, the CLI or a web page returns an [`Answer`]
//! carrying the same query id. Later methods add kinds (pairwise comparisons, votes on
//! public and private channels, expert judgements) to these enums; matching code must
//! therefore handle unknown kinds with an error.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// A point a strategy proposes: unit-cube coordinates for a box space, or a candidate index
/// for a finite set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Point {
    /// Coordinates in `[0, 1]^dim` (the space maps them to user units).
    Unit(Vec<f64>),
    /// Row of a candidate set.
    Index(usize),
}

/// What must be asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// Sequence number within a study, echoed in the answer.
    pub id: u64,
    /// What is asked.
    pub kind: QueryKind,
}

/// The kinds of question a strategy can ask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum QueryKind {
    /// Evaluate the objective at each point (one point, or one per party), returning one
    /// value per point in the same order.
    Evaluate {
        /// The points to evaluate.
        points: Vec<Point>,
    },
    /// Ask which of the points is best: a pairwise comparison for two points, a best-of-k
    /// choice for more.
    Compare {
        /// The options shown (at least two).
        points: Vec<Point>,
        /// Who should answer (None: whoever the study's rater is).
        rater: Option<String>,
    },
    /// Every agent of a group votes on the pair, on one channel.
    GroupVote {
        /// The two options.
        points: Vec<Point>,
        /// Public or private ballot.
        channel: Channel,
        /// The agents asked, in the order their votes come back.
        agents: Vec<String>,
    },
    /// Every agent of a group rates one option on one channel (Social BO's GP variant,
    /// App. F.1: direct noisy utility values). Answered by [`AnswerKind::Values`], one value
    /// per agent in the query's agent order (larger is better).
    GroupRate {
        /// The option rated.
        point: Point,
        /// Public or private ballot.
        channel: Channel,
        /// The agents asked, in the order their ratings come back.
        agents: Vec<String>,
    },
    /// A noisy estimate of the objective's Hessian at one point (DSBO's structure phase,
    /// Alg. 4 lines 2–6 of the DSBO paper), answered by [`AnswerKind::Matrix`]: a `d × d`
    /// matrix in user units, `d` the number of parameters.
    Hessian {
        /// Where the Hessian is taken.
        point: Point,
    },
}

/// Who can see a vote: a show of hands (public, socially influenced) or a secret ballot
/// (private, truthful but costly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// Everyone sees everyone's vote.
    Public,
    /// Only the facilitator sees the vote.
    Private,
}

/// What came back for a query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Answer {
    /// The id of the query answered.
    pub query_id: u64,
    /// The content.
    pub kind: AnswerKind,
}

/// Feedback gathered outside a strategy's own questions (earlier measurements or
/// comparisons, e.g. from before a study began), given to it with
/// `Strategy::import`. Points are unit-cube coordinates of a box space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Observation {
    /// The objective's value at a point (larger is better).
    Evaluation {
        /// Where it was measured.
        point: Vec<f64>,
        /// The value.
        value: f64,
    },
    /// A person preferred `winner` to `loser`.
    Comparison {
        /// The preferred option.
        winner: Vec<f64>,
        /// The other one.
        loser: Vec<f64>,
    },
}

/// The kinds of answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AnswerKind {
    /// One objective value per evaluated point (larger is better).
    Values {
        /// The values, in query order.
        values: Vec<f64>,
    },
    /// The option preferred among those shown.
    Choice {
        /// Index of the preferred option within the query's points.
        winner: usize,
        /// Who answered.
        rater: Option<String>,
    },
    /// "Can't tell": no option preferred.
    Tie {
        /// Who answered.
        rater: Option<String>,
    },
    /// A square matrix, row by row (the answer to a Hessian query).
    Matrix {
        /// The rows; each as long as there are rows.
        rows: Vec<Vec<f64>>,
    },
    /// One vote per agent of a group vote, in the query's agent order: the index of the
    /// option preferred, or `None` for "can't tell" / abstained.
    Votes {
        /// The votes.
        votes: Vec<Option<usize>>,
    },
}

/// Whatever answers queries: a simulated oracle, group, person, expert or environment in
/// agora-problems, or a real person through the CLI or the web page. A strategy cannot tell
/// them apart.
///
/// # Example
///
/// ```
/// use agora_core::{Answer, Point, Query, QueryKind, Respondent, Result};
///
/// /// Answers evaluations of `f(x) = -(x - 0.3)²` on the unit interval.
/// struct Parabola;
///
/// impl Respondent for Parabola {
///     fn answer(&mut self, query: &Query) -> Result<Answer> {
///         match &query.kind {
///             QueryKind::Evaluate { points } => {
///                 let values = points
///                     .iter()
///                     .map(|p| match p {
///                         Point::Unit(x) => -(x[0] - 0.3).powi(2),
///                         Point::Index(_) => f64::NAN, // rejected by Answer::values
///                     })
///                     .collect();
///                 Answer::values(query, values)
///             }
///             _ => Err(agora_core::Error::unsupported_query("parabola", query)),
///         }
///     }
/// }
///
/// let q = Query { id: 0, kind: QueryKind::Evaluate { points: vec![Point::Unit(vec![0.5])] } };
/// let a = Parabola.answer(&q).unwrap();
/// assert_eq!(a, Answer::values(&q, vec![-0.04000000000000001]).unwrap());
/// ```
pub trait Respondent {
    /// The answer to `query`. Errors: a kind of query this respondent cannot answer
    /// ([`Error::unsupported_query`]), or a query that does not fit it (wrong dimension,
    /// unknown candidate, unknown rater).
    fn answer(&mut self, query: &Query) -> Result<Answer>;
}

impl<R: Respondent + ?Sized> Respondent for Box<R> {
    fn answer(&mut self, query: &Query) -> Result<Answer> {
        (**self).answer(query)
    }
}

impl<R: Respondent + ?Sized> Respondent for &mut R {
    fn answer(&mut self, query: &Query) -> Result<Answer> {
        (**self).answer(query)
    }
}

impl QueryKind {
    /// The kind's name as it appears in JSON (`evaluate`, `compare`, `group_vote`,
    /// `group_rate`, `hessian`).
    pub fn name(&self) -> &'static str {
        match self {
            QueryKind::Evaluate { .. } => "evaluate",
            QueryKind::Compare { .. } => "compare",
            QueryKind::GroupVote { .. } => "group_vote",
            QueryKind::GroupRate { .. } => "group_rate",
            QueryKind::Hessian { .. } => "hessian",
        }
    }

    /// The options the query shows, in order (one for a rating or a Hessian).
    pub fn points(&self) -> Vec<Point> {
        match self {
            QueryKind::Compare { points, .. }
            | QueryKind::Evaluate { points }
            | QueryKind::GroupVote { points, .. } => points.clone(),
            QueryKind::GroupRate { point, .. } | QueryKind::Hessian { point } => {
                vec![point.clone()]
            }
        }
    }
}

impl Answer {
    /// Values answering `query`, checked for count and finiteness.
    pub fn values(query: &Query, values: Vec<f64>) -> Result<Answer> {
        let a = Answer {
            query_id: query.id,
            kind: AnswerKind::Values { values },
        };
        a.check_against(query)?;
        Ok(a)
    }

    /// Check that this answer fits `query` (same id, right kind and count, finite values).
    pub fn check_against(&self, query: &Query) -> Result<()> {
        if self.query_id != query.id {
            return Err(Error::invalid(
                "query_id",
                format!(
                    "answer is for query {} but the open query is {}",
                    self.query_id, query.id
                ),
            ));
        }
        match (&query.kind, &self.kind) {
            (QueryKind::Evaluate { points }, AnswerKind::Values { values }) => {
                if values.len() != points.len() {
                    return Err(Error::dim("values", points.len(), values.len()));
                }
                crate::check_finite_slice("values", values)
            }
            (QueryKind::Compare { points, .. }, AnswerKind::Choice { winner, .. }) => {
                if *winner >= points.len() {
                    return Err(Error::invalid(
                        "winner",
                        format!(
                            "must index one of the {} options shown (0..{}), got {winner}",
                            points.len(),
                            points.len()
                        ),
                    ));
                }
                Ok(())
            }
            (QueryKind::Compare { .. }, AnswerKind::Tie { .. }) => Ok(()),
            (QueryKind::GroupVote { points, agents, .. }, AnswerKind::Votes { votes }) => {
                if votes.len() != agents.len() {
                    return Err(Error::dim("votes", agents.len(), votes.len()));
                }
                for (k, v) in votes.iter().enumerate() {
                    if let Some(w) = v.filter(|w| *w >= points.len()) {
                        return Err(Error::invalid(
                            format!("votes[{k}]"),
                            format!(
                                "agent {} must pick one of the {} options (0..{}) or abstain (null), got {w}",
                                agents[k],
                                points.len(),
                                points.len()
                            ),
                        ));
                    }
                }
                Ok(())
            }
            (QueryKind::GroupRate { agents, .. }, AnswerKind::Values { values }) => {
                if values.len() != agents.len() {
                    return Err(Error::dim("values", agents.len(), values.len()));
                }
                crate::check_finite_slice("values", values)
            }
            (QueryKind::Hessian { point }, AnswerKind::Matrix { rows }) => {
                let d = match point {
                    Point::Unit(u) => u.len(),
                    Point::Index(_) => rows.len(),
                };
                if rows.len() != d {
                    return Err(Error::dim("rows", d, rows.len()));
                }
                for (i, row) in rows.iter().enumerate() {
                    if row.len() != d {
                        return Err(Error::dim(format!("rows[{i}]"), d, row.len()));
                    }
                    crate::check_finite_slice(&format!("rows[{i}]"), row)?;
                }
                Ok(())
            }
            (QueryKind::Hessian { .. }, _) => Err(Error::invalid(
                "answer",
                "a Hessian query needs a `matrix` (d rows of d finite numbers)",
            )),
            (QueryKind::GroupRate { .. }, _) => Err(Error::invalid(
                "answer",
                "a group rating needs `values` (one finite number per agent)",
            )),
            (QueryKind::GroupVote { .. }, _) => Err(Error::invalid(
                "answer",
                "a group vote needs `votes` (one winner index or null per agent)",
            )),
            (QueryKind::Evaluate { .. }, _) => Err(Error::invalid(
                "answer",
                "an evaluation query needs `values`",
            )),
            (QueryKind::Compare { .. }, _) => Err(Error::invalid(
                "answer",
                "a comparison query needs a `choice` (winner index) or a `tie`",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_against_their_query() {
        let q = Query {
            id: 3,
            kind: QueryKind::Evaluate {
                points: vec![Point::Unit(vec![0.1])],
            },
        };
        assert!(Answer::values(&q, vec![1.0]).is_ok());
        let e = Answer::values(&q, vec![f64::NAN]).unwrap_err();
        assert!(e.to_string().contains("values[0]"), "{e}");
        assert!(matches!(
            Answer::values(&q, vec![1.0, 2.0]),
            Err(Error::Dimension { .. })
        ));
        let wrong = Answer {
            query_id: 4,
            kind: AnswerKind::Values { values: vec![1.0] },
        };
        assert!(
            wrong
                .check_against(&q)
                .unwrap_err()
                .to_string()
                .contains("query_id")
        );
        let json = serde_json::to_string(&q).unwrap();
        assert_eq!(serde_json::from_str::<Query>(&json).unwrap(), q);
    }

    #[test]
    fn group_ratings_need_one_finite_value_per_agent() {
        let q = Query {
            id: 1,
            kind: QueryKind::GroupRate {
                point: Point::Unit(vec![0.5]),
                channel: Channel::Private,
                agents: vec!["a".into(), "b".into()],
            },
        };
        assert!(Answer::values(&q, vec![1.0, -2.0]).is_ok());
        assert!(matches!(
            Answer::values(&q, vec![1.0]),
            Err(Error::Dimension { .. })
        ));
        let e = Answer::values(&q, vec![1.0, f64::INFINITY]).unwrap_err();
        assert!(e.to_string().contains("values[1]"), "{e}");
        let votes = Answer {
            query_id: 1,
            kind: AnswerKind::Votes {
                votes: vec![Some(0), None],
            },
        };
        assert!(
            votes
                .check_against(&q)
                .unwrap_err()
                .to_string()
                .contains("values")
        );
        let json = serde_json::to_string(&q).unwrap();
        assert!(json.contains("group_rate"), "{json}");
        assert_eq!(serde_json::from_str::<Query>(&json).unwrap(), q);
    }
}
