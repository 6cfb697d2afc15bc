//! The rules every strategy shares about its open queries, kept in one place:
//!
//! - asking again before telling returns the open query, unchanged, without new work;
//! - `tell` without an open query is [`Error::NoOpenQuery`];
//! - an answer is checked against the open query ([`Answer::check_against`]: id, kind,
//!   count, finiteness) and then by the strategy's own [`AskTell::check`], which sees the
//!   state read-only; only an answer that passes both is recorded, and only then is the
//!   query closed. A bad answer therefore leaves the strategy exactly as it was.
//!
//! A strategy implements [`AskTell`] (propose, check, record) and forwards its
//! [`crate::Strategy::ask`] / [`crate::Strategy::tell`] to [`ask`] and [`tell`].
//!
//! **Several open queries.** A strategy that can propose while earlier queries are still
//! being answered (several workers evaluating at once) also forwards
//! [`crate::Strategy::ask_parallel`] to [`ask_parallel`]: it always proposes a new query,
//! and [`AskTell::propose`] then sees the queries still open ([`OpenQuery::queries`]) as
//! pending. `tell` answers whichever open query the answer's id names; [`ask`] returns the
//! oldest open query. With one query open (every strategy that does not opt in) the rules
//! above hold word for word.

use agora_core::{Answer, AnswerKind, Error, Query, Result};

/// The open queries of a strategy, oldest first, and what it needs to remember about each
/// until answered. Strategies without [`ask_parallel`] hold at most one.
#[derive(Debug, Clone)]
pub struct OpenQuery<P> {
    open: Vec<(Query, P)>,
}

impl<P> Default for OpenQuery<P> {
    fn default() -> Self {
        OpenQuery { open: Vec::new() }
    }
}

impl<P> OpenQuery<P> {
    /// The open query (the oldest, when several are open), if any.
    pub fn query(&self) -> Option<&Query> {
        self.open.first().map(|(q, _)| q)
    }

    /// What was remembered with the open query (the oldest), if any.
    pub fn pending(&self) -> Option<&P> {
        self.open.first().map(|(_, p)| p)
    }

    /// Whether a query is open.
    pub fn is_open(&self) -> bool {
        !self.open.is_empty()
    }

    /// Every open query with what was remembered about it, oldest first.
    pub fn queries(&self) -> impl Iterator<Item = (&Query, &P)> {
        self.open.iter().map(|(q, p)| (q, p))
    }

    /// Number of open queries.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether no query is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// The open queries with what was remembered about each, oldest first, for a snapshot.
    pub fn entries(&self) -> &[(Query, P)] {
        &self.open
    }

    /// Close the open query `id` without an answer through [`tell`] (a wrapper that
    /// records the answer its own way), returning it with what was remembered.
    pub(crate) fn take(&mut self, id: u64) -> Option<(Query, P)> {
        let i = self.open.iter().position(|(q, _)| q.id == id)?;
        Some(self.open.remove(i))
    }

    /// Open queries restored from [`OpenQuery::entries`].
    pub fn from_entries(open: Vec<(Query, P)>) -> OpenQuery<P> {
        OpenQuery { open }
    }
}

/// The part of a strategy that differs from one method to the next; [`ask`] and [`tell`]
/// add the shared rules.
pub trait AskTell {
    /// What the strategy remembers about an open query (its options in model coordinates,
    /// the round's channel, ...).
    type Pending;

    /// The open-query slot.
    fn open_query(&mut self) -> &mut OpenQuery<Self::Pending>;

    /// A new query (only called when none is open, except through [`ask_parallel`]: then
    /// the queries still open are pending and the new one must differ from them).
    fn propose(&mut self) -> Result<(Query, Self::Pending)>;

    /// Strategy-specific checks of an answer that already fits `query`
    /// ([`Answer::check_against`] passed). Must not change anything.
    fn check(&self, query: &Query, pending: &Self::Pending, answer: &Answer) -> Result<()> {
        let _ = (query, pending, answer);
        Ok(())
    }

    /// Record a checked answer (the query is closed, and no longer among the open ones,
    /// when this is called).
    fn record(&mut self, query: &Query, pending: &Self::Pending, answer: &Answer) -> Result<()>;
}

/// The open query (the oldest, when several are open), or a new one from
/// [`AskTell::propose`].
pub fn ask<S: AskTell + ?Sized>(s: &mut S) -> Result<Query> {
    if let Some(q) = s.open_query().query() {
        return Ok(q.clone());
    }
    let (q, p) = s.propose()?;
    s.open_query().open.push((q.clone(), p));
    Ok(q)
}

/// A new query from [`AskTell::propose`] while the open ones stay open (for strategies
/// that account for pending queries; see the module docs). A failed proposal leaves the
/// open queries as they were.
pub fn ask_parallel<S: AskTell + ?Sized>(s: &mut S) -> Result<Query> {
    let (q, p) = s.propose()?;
    if s.open_query().queries().any(|(o, _)| o.id == q.id) {
        return Err(Error::State(format!(
            "the strategy proposed query id {} while a query with that id is open",
            q.id
        )));
    }
    s.open_query().open.push((q.clone(), p));
    Ok(q)
}

/// Check `answer` against the open query its id names and record it; on any error the
/// strategy and its open queries are left as they were (except when [`AskTell::record`]
/// itself fails after recording, e.g. a model refit: then the answer stays recorded and
/// the query closed).
pub fn tell<S: AskTell + ?Sized>(s: &mut S, answer: &Answer) -> Result<()> {
    let open = &mut s.open_query().open;
    let i = match open.iter().position(|(q, _)| q.id == answer.query_id) {
        Some(i) => i,
        None if open.is_empty() => return Err(Error::NoOpenQuery),
        // One query open: `check_against` reports the id mismatch, as it always has.
        None if open.len() == 1 => 0,
        None => {
            let ids: Vec<String> = open.iter().map(|(q, _)| q.id.to_string()).collect();
            return Err(Error::invalid(
                "query_id",
                format!(
                    "answer is for query {} but the open queries are {}",
                    answer.query_id,
                    ids.join(", ")
                ),
            ));
        }
    };
    let (q, p) = open.remove(i);
    let checked = answer
        .check_against(&q)
        .and_then(|()| s.check(&q, &p, answer));
    if let Err(e) = checked {
        s.open_query().open.insert(i, (q, p));
        return Err(e);
    }
    s.record(&q, &p, answer)
}
/// The values of an answer that passed [`Answer::check_against`] for an evaluation or a
/// rating query (so it holds values; anything else is reported, never a panic).
pub fn checked_values(answer: &Answer) -> Result<&[f64]> {
    match &answer.kind {
        AnswerKind::Values { values } => Ok(values),
        _ => Err(Error::invalid(
            "answer",
            "an evaluation or rating needs `values`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::{Point, QueryKind};

    /// Counts proposals; refuses negative values in `check`.
    #[derive(Default)]
    struct Counter {
        open: OpenQuery<f64>,
        proposed: u64,
        told: Vec<f64>,
    }

    impl AskTell for Counter {
        type Pending = f64;
        fn open_query(&mut self) -> &mut OpenQuery<f64> {
            &mut self.open
        }
        fn propose(&mut self) -> Result<(Query, f64)> {
            self.proposed += 1;
            let x = 0.1 * self.proposed as f64;
            let q = Query {
                id: self.told.len() as u64,
                kind: QueryKind::Evaluate {
                    points: vec![Point::Unit(vec![x])],
                },
            };
            Ok((q, x))
        }
        fn check(&self, _: &Query, _: &f64, answer: &Answer) -> Result<()> {
            match &answer.kind {
                AnswerKind::Values { values } if values[0] < 0.0 => {
                    Err(Error::invalid("values[0]", "must be non-negative"))
                }
                _ => Ok(()),
            }
        }
        fn record(&mut self, _: &Query, x: &f64, answer: &Answer) -> Result<()> {
            let AnswerKind::Values { values } = &answer.kind else {
                unreachable!("checked against the query")
            };
            self.told.push(values[0] + x);
            Ok(())
        }
    }

    #[test]
    fn ask_twice_tell_bad_then_good() {
        let mut c = Counter::default();
        assert_eq!(
            tell(
                &mut c,
                &Answer {
                    query_id: 0,
                    kind: AnswerKind::Values { values: vec![1.0] }
                }
            ),
            Err(Error::NoOpenQuery)
        );
        let q = ask(&mut c).unwrap();
        assert_eq!(
            ask(&mut c).unwrap(),
            q,
            "asking again returns the open query"
        );
        assert_eq!(c.proposed, 1, "without proposing again");
        // Wrong count (caught by the protocol), then a value the strategy refuses.
        let e = tell(
            &mut c,
            &Answer {
                query_id: 0,
                kind: AnswerKind::Values {
                    values: vec![1.0, 2.0],
                },
            },
        );
        assert!(matches!(e, Err(Error::Dimension { .. })), "{e:?}");
        let e = tell(&mut c, &Answer::values(&q, vec![-1.0]).unwrap()).unwrap_err();
        assert!(e.to_string().contains("values[0]"), "{e}");
        assert!(
            c.told.is_empty() && c.open.is_open(),
            "bad answers leave the state"
        );
        assert_eq!(ask(&mut c).unwrap(), q);
        tell(&mut c, &Answer::values(&q, vec![2.0]).unwrap()).unwrap();
        assert_eq!(c.told, vec![2.1]);
        assert!(!c.open.is_open());
        assert_eq!(ask(&mut c).unwrap().id, 1);
        assert_eq!(c.proposed, 2);
    }
}
