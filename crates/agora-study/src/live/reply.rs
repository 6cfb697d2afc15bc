//! Answers in the shapes people give them: "A wins", "tie", "ann votes B", "everyone's
//! votes: A,B,tie", "bob rates 3.5", "the values 1.2, 0.7". A front end (the CLI's
//! `agora tell`, the Python package) gathers these into a [`Reply`] and [`submission`]
//! turns it into the [`Answer`] or participant [`Ballot`] the query needs, with errors
//! that name the input at fault and say what fits the query.
//!
//! The same rules serve a stored study and an in-memory strategy; a [`ReplyContext`] says
//! which (the study's name and participants, or none), what the options are called, and how
//! the front end spells each input in its messages ([`Names`]).

use super::store::Ballot;
use agora_core::{Answer, AnswerKind, Error, Query, QueryKind};

/// One option picked by its index, or by the text a person types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// The option's index in the query (0, 1, ...).
    Index(usize),
    /// A letter (`A`, `B`, ..., any case), a decimal index, an option's label, or `tie`
    /// (any case) for "can't tell". Surrounding whitespace is ignored.
    Text(String),
}

impl From<usize> for Pick {
    fn from(i: usize) -> Self {
        Pick::Index(i)
    }
}

impl From<&str> for Pick {
    fn from(s: &str) -> Self {
        Pick::Text(s.to_string())
    }
}

impl From<String> for Pick {
    fn from(s: String) -> Self {
        Pick::Text(s)
    }
}

/// What a person says in answer to a query, before it is checked against the query. Give
/// the inputs that fit the query:
///
/// | query | inputs |
/// |---|---|
/// | compare (pair or best-of-k) | `winner`, or `tie` (`who` names the rater if the query names none) |
/// | evaluate | `values`, one per option |
/// | group vote | `who` and `vote` (one ballot), or `votes` (everyone's, in order) |
/// | group rate | `who` and `rating` (one ballot), or `values` (everyone's, in order) |
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// The option preferred (comparisons and best-of-k).
    pub winner: Option<Pick>,
    /// Can't tell: no option preferred (comparisons).
    pub tie: bool,
    /// Whose ballot this is (with `vote` or `rating`), or the rater of a comparison that
    /// names none.
    pub who: Option<String>,
    /// One participant's vote on a group's options.
    pub vote: Option<Pick>,
    /// Every participant's vote, in the participants' order.
    pub votes: Option<Vec<Pick>>,
    /// One participant's rating of a group's option (finite, larger is better).
    pub rating: Option<f64>,
    /// The measured value of each option evaluated, or every participant's rating of a
    /// group's option, in order (finite).
    pub values: Option<Vec<f64>>,
}

/// The inputs of a [`Reply`], for naming them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Input {
    /// [`Reply::winner`].
    Winner,
    /// [`Reply::tie`].
    Tie,
    /// [`Reply::who`].
    Who,
    /// [`Reply::vote`].
    Vote,
    /// [`Reply::votes`].
    Votes,
    /// [`Reply::rating`].
    Rating,
    /// [`Reply::values`].
    Values,
}

impl Reply {
    /// The answer inputs given (all but [`Input::Who`]), in the order winner, tie, vote,
    /// votes, rating, values.
    pub fn given(&self) -> Vec<Input> {
        [
            (self.winner.is_some(), Input::Winner),
            (self.tie, Input::Tie),
            (self.vote.is_some(), Input::Vote),
            (self.votes.is_some(), Input::Votes),
            (self.rating.is_some(), Input::Rating),
            (self.values.is_some(), Input::Values),
        ]
        .into_iter()
        .filter_map(|(on, input)| on.then_some(input))
        .collect()
    }
}

/// How a front end spells each input in messages: `--winner` on the command line,
/// `winner` as a keyword argument. An error's field is the spelling without its
/// punctuation (`--as` gives the field `as`, `winner=` the field `winner`); list elements
/// add their index (`values[1]`, `votes[0]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names {
    /// [`Reply::winner`].
    pub winner: &'static str,
    /// [`Reply::tie`].
    pub tie: &'static str,
    /// [`Reply::who`].
    pub who: &'static str,
    /// [`Reply::vote`].
    pub vote: &'static str,
    /// [`Reply::votes`].
    pub votes: &'static str,
    /// [`Reply::rating`].
    pub rating: &'static str,
    /// [`Reply::values`].
    pub values: &'static str,
    /// What joins an input to an example value: `" "` for flags (`--winner A`), `"="` for
    /// keywords (`winner=A`).
    pub sep: &'static str,
    /// What describes a list in "give 2 ...value(s)": e.g. `"comma-separated "`, or `""`.
    pub list: &'static str,
}

impl Names {
    /// Keyword spelling: `winner`, `tie`, `who`, `vote`, `votes`, `rating`, `values`, with
    /// examples as `winner=A`.
    pub const KEYWORDS: Names = Names {
        winner: "winner",
        tie: "tie",
        who: "who",
        vote: "vote",
        votes: "votes",
        rating: "rating",
        values: "values",
        sep: "=",
        list: "",
    };

    /// How `input` is spelled.
    pub fn of(&self, input: Input) -> &'static str {
        match input {
            Input::Winner => self.winner,
            Input::Tie => self.tie,
            Input::Who => self.who,
            Input::Vote => self.vote,
            Input::Votes => self.votes,
            Input::Rating => self.rating,
            Input::Values => self.values,
        }
    }

    /// The field an error about `input` names: its spelling without punctuation.
    pub fn field(&self, input: Input) -> &'static str {
        self.of(input)
            .trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
    }

    /// `input` with an example value, e.g. `--winner A|B` or `winner=A|B`.
    fn with(&self, input: Input, example: &str) -> String {
        format!("{}{}{example}", self.of(input), self.sep)
    }
}

impl Default for Names {
    fn default() -> Self {
        Names::KEYWORDS
    }
}

/// What [`submission`] needs besides the query and the reply. The default suits an
/// in-memory strategy: no study, no participants, options known by letter, keyword names.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplyContext<'a> {
    /// The labels of the options shown, in the query's order (a candidate's name, or `A`,
    /// `B`, ...); an option may then be picked by its label too. May be empty.
    pub labels: &'a [String],
    /// The people of the study, in ballot order: the names a group query's agents go by,
    /// the names `who` may take, and the default rater of a comparison (the first). Empty
    /// for an in-memory strategy: then a ballot's `who` is one of the query's agents and a
    /// comparison's rater is whoever `who` names, or no one.
    pub participants: &'a [String],
    /// The stored study's name, or `None` for an in-memory strategy. A study without named
    /// participants refuses `who` on a comparison.
    pub study: Option<&'a str>,
    /// How the front end spells the inputs in messages.
    pub names: Names,
}

impl ReplyContext<'_> {
    /// The names `who` may take on a group query with `agents`.
    fn roster<'b>(&'b self, agents: &'b [String]) -> &'b [String] {
        if self.participants.is_empty() && self.study.is_none() {
            agents
        } else {
            self.participants
        }
    }

    /// The people asked by a group query with `agents`, in ballot order, for messages.
    fn people(&self, agents: &[String]) -> String {
        let roster = self.roster(agents);
        (0..agents.len())
            .map(|k| roster.get(k).cloned().unwrap_or_else(|| format!("#{k}")))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `who` as a voter on a group query with `agents`.
    fn voter(&self, who: &str, agents: &[String]) -> Result<(), Error> {
        let roster = self.roster(agents);
        if roster.iter().any(|p| p == who) {
            Ok(())
        } else {
            Err(Error::unknown("participant", who, roster))
        }
    }

    /// `who` as the rater of a comparison that names none.
    fn rater(&self, who: &str) -> Result<(), Error> {
        let ps = self.participants;
        if ps.iter().any(|p| p == who) {
            return Ok(());
        }
        match self.study {
            _ if !ps.is_empty() => Err(Error::unknown("participant", who, ps)),
            Some(study) => Err(Error::invalid(
                self.names.field(Input::Who),
                format!(
                    "study `{study}` has no named participants; leave out {}",
                    self.names.who
                ),
            )),
            None => Ok(()),
        }
    }
}

/// What a [`Reply`] submits.
#[derive(Debug, Clone, PartialEq)]
pub enum Submission {
    /// The query's whole answer.
    Answer(Answer),
    /// One participant's ballot on a group query: the participant's name and the ballot.
    Ballot(String, Ballot),
}

/// The letter people use for option `i`: `A`, `B`, ... for the first 26, the index after.
pub fn letter(i: usize) -> String {
    if i < 26 {
        ((b'A' + i as u8) as char).to_string()
    } else {
        i.to_string()
    }
}

/// The option `pick` names among `n` (`None`: tie).
fn choice(field: &str, pick: &Pick, labels: &[String], n: usize) -> Result<Option<usize>, Error> {
    let (shown, found) = match pick {
        Pick::Index(i) => (i.to_string(), Some(*i).filter(|i| *i < n)),
        Pick::Text(s) => {
            let t = s.trim();
            if t.eq_ignore_ascii_case("tie") {
                return Ok(None);
            }
            let by_letter = (t.len() == 1)
                .then(|| t.chars().next())
                .flatten()
                .filter(char::is_ascii_alphabetic)
                .map(|c| (c.to_ascii_uppercase() as u8 - b'A') as usize);
            let found = by_letter
                .or_else(|| t.parse::<usize>().ok())
                .filter(|i| *i < n)
                .or_else(|| {
                    labels
                        .iter()
                        .position(|l| l == t && !t.is_empty())
                        .filter(|i| *i < n)
                });
            (s.clone(), found)
        }
    };
    match found {
        Some(i) => Ok(Some(i)),
        None => {
            let mut allowed: Vec<String> = (0..n).map(letter).collect();
            allowed.push("tie".into());
            Err(Error::invalid(
                field,
                format!(
                    "`{shown}` is not one of the {n} options shown; allowed: {} (or an index 0..{})",
                    allowed.join(", "),
                    n.saturating_sub(1)
                ),
            ))
        }
    }
}

/// `x`, if finite.
fn finite(field: &str, x: f64) -> Result<f64, Error> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(Error::invalid(
            field,
            format!("must be a finite number, got {x}"),
        ))
    }
}

/// `want` finite values; `what` says what they are for when the count is wrong.
fn values(names: &Names, given: &[f64], want: usize, what: &str) -> Result<Vec<f64>, Error> {
    let field = names.field(Input::Values);
    if given.len() != want {
        return Err(Error::invalid(
            field,
            format!(
                "{what}: give {want} {}value(s), got {}",
                names.list,
                given.len()
            ),
        ));
    }
    given
        .iter()
        .enumerate()
        .map(|(i, x)| finite(&format!("{field}[{i}]"), *x))
        .collect()
}

/// The [`Answer`] or [`Ballot`] that `reply` gives `query`.
///
/// Errors ([`Error::InvalidInput`] or [`Error::UnknownId`]) name the input at fault: no
/// input, an input that does not fit the query (the message says which do), two inputs
/// where one is wanted, an option that is not among those shown (the message lists them),
/// a count that is not the query's (the message says how many), a number that is not
/// finite (`values[1]`, `rating`), a ballot without `who` or with a `who` not asked. The
/// checks come in that order.
///
/// # Example
///
/// ```
/// use agora_core::{AnswerKind, Point, Query, QueryKind};
/// use agora_study::live::{Pick, Reply, ReplyContext, Submission, submission};
///
/// let q = Query {
///     id: 3,
///     kind: QueryKind::Compare {
///         points: vec![Point::Index(0), Point::Index(1)],
///         rater: None,
///     },
/// };
/// let reply = Reply { winner: Some(Pick::from("b")), ..Reply::default() };
/// let Submission::Answer(a) = submission(&q, &reply, &ReplyContext::default()).unwrap() else {
///     panic!("a comparison is answered whole");
/// };
/// assert_eq!(a.kind, AnswerKind::Choice { winner: 1, rater: None });
/// ```
pub fn submission(
    query: &Query,
    reply: &Reply,
    ctx: &ReplyContext,
) -> Result<Submission, agora_core::Error> {
    let nm = &ctx.names;
    let id = query.id;
    let given = reply.given();
    let only = |allowed: &[Input], hint: &str| -> Result<(), Error> {
        if given.is_empty() {
            return Err(Error::invalid("answer", format!("nothing to tell: {hint}")));
        }
        if let Some(f) = given.iter().find(|f| !allowed.contains(f)) {
            return Err(Error::invalid(
                "answer",
                format!("{} does not fit query {id}: {hint}", nm.of(*f)),
            ));
        }
        Ok(())
    };
    let one_of = |a: Input, b: Input, hint: &str| -> Result<(), Error> {
        if given.len() > 1 {
            return Err(Error::invalid(
                "answer",
                format!("give {} or {}, not both; {hint}", nm.of(a), nm.of(b)),
            ));
        }
        Ok(())
    };
    let n = query.kind.points().len();
    let letters = (0..n).map(letter).collect::<Vec<_>>();
    let answer = |kind| -> Result<Submission, Error> {
        Ok(Submission::Answer(Answer { query_id: id, kind }))
    };
    match &query.kind {
        QueryKind::Compare { rater, .. } => {
            let hint = format!(
                "query {id} compares {n} options; answer with {} or {}",
                nm.with(Input::Winner, &letters.join("|")),
                nm.tie
            );
            only(&[Input::Winner, Input::Tie], &hint)?;
            one_of(Input::Winner, Input::Tie, &hint)?;
            let winner = match &reply.winner {
                Some(w) => choice(nm.field(Input::Winner), w, ctx.labels, n)?,
                None => None,
            };
            let rater = match (rater, &reply.who) {
                (Some(r), _) => Some(r.clone()),
                (None, Some(who)) => {
                    ctx.rater(who)?;
                    Some(who.clone())
                }
                (None, None) => ctx.participants.first().cloned(),
            };
            answer(match winner {
                Some(winner) => AnswerKind::Choice { winner, rater },
                None => AnswerKind::Tie { rater },
            })
        }
        QueryKind::Evaluate { points } => {
            let hint = format!(
                "query {id} asks for the measured value of {} option(s); answer with {}",
                points.len(),
                nm.with(
                    Input::Values,
                    &(1..=points.len())
                        .map(|i| format!("V{i}"))
                        .collect::<Vec<_>>()
                        .join(",")
                )
            );
            only(&[Input::Values], &hint)?;
            let values = values(
                nm,
                reply.values.as_deref().unwrap_or_default(),
                points.len(),
                &hint,
            )?;
            answer(AnswerKind::Values { values })
        }
        QueryKind::GroupVote { agents, .. } => {
            let people = ctx.people(agents);
            let hint = format!(
                "query {id} is a group vote; answer with {} {}, or everyone's votes at once \
                 with {} (one of {} per participant, in the order {people})",
                nm.with(Input::Who, "NAME"),
                nm.with(Input::Vote, &format!("{}|tie", letters.join("|"))),
                nm.votes,
                letters
                    .iter()
                    .cloned()
                    .chain(["tie".to_string()])
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            only(&[Input::Vote, Input::Votes], &hint)?;
            one_of(Input::Vote, Input::Votes, &hint)?;
            if let Some(v) = &reply.vote {
                let who = reply.who.clone().ok_or_else(|| {
                    Error::invalid(
                        nm.field(Input::Who),
                        format!(
                            "{} needs {} (one of {people})",
                            nm.vote,
                            nm.with(Input::Who, "NAME")
                        ),
                    )
                })?;
                let choice = choice(nm.field(Input::Vote), v, ctx.labels, n)?;
                ctx.voter(&who, agents)?;
                return Ok(Submission::Ballot(who, Ballot::Vote { choice }));
            }
            let all = reply.votes.as_deref().unwrap_or_default();
            let field = nm.field(Input::Votes);
            if all.len() != agents.len() {
                return Err(Error::invalid(
                    field,
                    format!(
                        "give one vote per participant ({}, in order {people}), got {}",
                        agents.len(),
                        all.len()
                    ),
                ));
            }
            let votes = all
                .iter()
                .enumerate()
                .map(|(k, p)| choice(&format!("{field}[{k}]"), p, ctx.labels, n))
                .collect::<Result<Vec<_>, _>>()?;
            if reply.who.is_some() {
                return Err(Error::invalid(
                    nm.field(Input::Who),
                    format!("{} gives everyone's votes; leave out {}", nm.votes, nm.who),
                ));
            }
            answer(AnswerKind::Votes { votes })
        }
        QueryKind::GroupRate { agents, .. } => {
            let people = ctx.people(agents);
            let hint = format!(
                "query {id} asks each participant to rate one option; answer with {} {}, \
                 or everyone's ratings at once with {} (in the order {people})",
                nm.with(Input::Who, "NAME"),
                nm.with(Input::Rating, "VALUE"),
                nm.values,
            );
            only(&[Input::Rating, Input::Values], &hint)?;
            one_of(Input::Rating, Input::Values, &hint)?;
            if let Some(r) = reply.rating {
                let who = reply.who.clone().ok_or_else(|| {
                    Error::invalid(
                        nm.field(Input::Who),
                        format!(
                            "{} needs {} (one of {people})",
                            nm.rating,
                            nm.with(Input::Who, "NAME")
                        ),
                    )
                })?;
                let value = finite(nm.field(Input::Rating), r)?;
                ctx.voter(&who, agents)?;
                return Ok(Submission::Ballot(who, Ballot::Rating { value }));
            }
            let values = values(
                nm,
                reply.values.as_deref().unwrap_or_default(),
                agents.len(),
                &hint,
            )?;
            answer(AnswerKind::Values { values })
        }
        other => Err(Error::invalid(
            "query",
            format!(
                "query {id} asks for a `{}` answer, which cannot be given as a reply",
                other.name()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::{Channel, Point};

    fn query(kind: QueryKind) -> Query {
        Query { id: 7, kind }
    }

    fn pts(n: usize) -> Vec<Point> {
        (0..n).map(Point::Index).collect()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn compare(n: usize) -> Query {
        query(QueryKind::Compare {
            points: pts(n),
            rater: None,
        })
    }

    fn evaluate(n: usize) -> Query {
        query(QueryKind::Evaluate { points: pts(n) })
    }

    fn vote(agents: &[&str]) -> Query {
        query(QueryKind::GroupVote {
            points: pts(2),
            channel: Channel::Private,
            agents: names(agents),
        })
    }

    fn rate(agents: &[&str]) -> Query {
        query(QueryKind::GroupRate {
            point: Point::Index(0),
            channel: Channel::Public,
            agents: names(agents),
        })
    }

    fn memory() -> ReplyContext<'static> {
        ReplyContext::default()
    }

    fn answer(s: Submission) -> AnswerKind {
        match s {
            Submission::Answer(a) => {
                assert_eq!(a.query_id, 7);
                a.kind
            }
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    /// The field and reason of an invalid-input error.
    fn invalid(r: Result<Submission, Error>) -> (String, String) {
        match r {
            Err(Error::InvalidInput { field, reason }) => (field, reason),
            other => panic!("expected invalid input, got {other:?}"),
        }
    }

    #[test]
    fn evaluate_takes_one_finite_value_per_option() {
        let r = Reply {
            values: Some(vec![1.5, -2.0]),
            ..Reply::default()
        };
        assert_eq!(
            answer(submission(&evaluate(2), &r, &memory()).unwrap()),
            AnswerKind::Values {
                values: vec![1.5, -2.0]
            }
        );
        let r = Reply {
            values: Some(vec![1.5]),
            ..Reply::default()
        };
        let (field, reason) = invalid(submission(&evaluate(2), &r, &memory()));
        assert_eq!(field, "values");
        assert!(
            reason.contains("give 2 value(s), got 1") && reason.contains("values=V1,V2"),
            "{reason}"
        );
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let r = Reply {
                values: Some(vec![1.0, bad]),
                ..Reply::default()
            };
            let (field, reason) = invalid(submission(&evaluate(2), &r, &memory()));
            assert_eq!(field, "values[1]");
            assert!(reason.contains("finite"), "{reason}");
        }
    }

    #[test]
    fn compare_takes_a_winner_by_letter_index_or_tie() {
        let q = compare(2);
        let ctx = memory();
        for (pick, want) in [
            (Pick::from("a"), 0),
            (Pick::from(" B "), 1),
            (Pick::from("1"), 1),
            (Pick::Index(0), 0),
        ] {
            let r = Reply {
                winner: Some(pick),
                ..Reply::default()
            };
            assert_eq!(
                answer(submission(&q, &r, &ctx).unwrap()),
                AnswerKind::Choice {
                    winner: want,
                    rater: None
                }
            );
        }
        let tie = AnswerKind::Tie { rater: None };
        let r = Reply {
            tie: true,
            ..Reply::default()
        };
        assert_eq!(answer(submission(&q, &r, &ctx).unwrap()), tie);
        let r = Reply {
            winner: Some("TIE".into()),
            ..Reply::default()
        };
        assert_eq!(answer(submission(&q, &r, &ctx).unwrap()), tie);
        let r = Reply {
            winner: Some(Pick::Index(2)),
            ..Reply::default()
        };
        let (field, reason) = invalid(submission(&q, &r, &ctx));
        assert_eq!(field, "winner");
        assert!(
            reason.contains("`2` is not one of the 2 options") && reason.contains("A, B, tie"),
            "{reason}"
        );
        let r = Reply {
            winner: Some("A".into()),
            tie: true,
            ..Reply::default()
        };
        let (_, reason) = invalid(submission(&q, &r, &ctx));
        assert!(reason.contains("give winner or tie, not both"), "{reason}");
    }

    #[test]
    fn best_of_k_picks_by_label() {
        let labels = names(&["red", "green", "blue"]);
        let ctx = ReplyContext {
            labels: &labels,
            ..memory()
        };
        let q = compare(3);
        let r = Reply {
            winner: Some("blue".into()),
            ..Reply::default()
        };
        assert_eq!(
            answer(submission(&q, &r, &ctx).unwrap()),
            AnswerKind::Choice {
                winner: 2,
                rater: None
            }
        );
        let r = Reply {
            winner: Some("purple".into()),
            ..Reply::default()
        };
        let (field, reason) = invalid(submission(&q, &r, &ctx));
        assert_eq!(field, "winner");
        assert!(
            reason.contains("A, B, C, tie") && reason.contains("0..2"),
            "{reason}"
        );
    }

    #[test]
    fn compare_rater_comes_from_who_or_the_first_participant() {
        let q = compare(2);
        let r = Reply {
            winner: Some("A".into()),
            who: Some("eve".into()),
            ..Reply::default()
        };
        // In memory: any rater may be named; none is assumed.
        assert_eq!(
            answer(submission(&q, &r, &memory()).unwrap()),
            AnswerKind::Choice {
                winner: 0,
                rater: Some("eve".into())
            }
        );
        let plain = Reply {
            who: None,
            ..r.clone()
        };
        let ps = names(&["ann", "bob"]);
        let study = ReplyContext {
            participants: &ps,
            study: Some("s"),
            ..memory()
        };
        assert_eq!(
            answer(submission(&q, &plain, &study).unwrap()),
            AnswerKind::Choice {
                winner: 0,
                rater: Some("ann".into())
            }
        );
        let err = submission(&q, &r, &study).unwrap_err().to_string();
        assert!(
            err.contains("unknown participant `eve`") && err.contains("ann, bob"),
            "{err}"
        );
        let nobody = ReplyContext {
            study: Some("s"),
            ..memory()
        };
        let (field, reason) = invalid(submission(&q, &r, &nobody));
        assert_eq!(field, "who");
        assert!(reason.contains("no named participants"), "{reason}");
    }

    #[test]
    fn group_vote_takes_one_ballot_or_all_votes() {
        let q = vote(&["a0", "a1", "a2"]);
        let ctx = memory();
        let one = Reply {
            who: Some("a1".into()),
            vote: Some("b".into()),
            ..Reply::default()
        };
        assert_eq!(
            submission(&q, &one, &ctx).unwrap(),
            Submission::Ballot("a1".into(), Ballot::Vote { choice: Some(1) })
        );
        // In memory the voters are the query's agents.
        let stranger = Reply {
            who: Some("zed".into()),
            ..one.clone()
        };
        let err = submission(&q, &stranger, &ctx).unwrap_err().to_string();
        assert!(
            err.contains("unknown participant `zed`") && err.contains("a0, a1, a2"),
            "{err}"
        );
        // In a study they are its participants.
        let ps = names(&["ann", "bob", "cy"]);
        let study = ReplyContext {
            participants: &ps,
            study: Some("m"),
            ..memory()
        };
        assert!(submission(&q, &one, &study).is_err());
        let ann = Reply {
            who: Some("ann".into()),
            vote: Some("tie".into()),
            ..Reply::default()
        };
        assert_eq!(
            submission(&q, &ann, &study).unwrap(),
            Submission::Ballot("ann".into(), Ballot::Vote { choice: None })
        );
        let anon = Reply {
            who: None,
            ..one.clone()
        };
        let (field, reason) = invalid(submission(&q, &anon, &study));
        assert_eq!(field, "who");
        assert!(
            reason.contains("vote needs who=NAME (one of ann, bob, cy)"),
            "{reason}"
        );

        let all = Reply {
            votes: Some(vec!["A".into(), "tie".into(), Pick::Index(1)]),
            ..Reply::default()
        };
        assert_eq!(
            answer(submission(&q, &all, &ctx).unwrap()),
            AnswerKind::Votes {
                votes: vec![Some(0), None, Some(1)]
            }
        );
        let short = Reply {
            votes: Some(vec!["A".into(), "B".into()]),
            ..Reply::default()
        };
        let (field, reason) = invalid(submission(&q, &short, &study));
        assert_eq!(field, "votes");
        assert!(
            reason.contains("one vote per participant (3, in order ann, bob, cy), got 2"),
            "{reason}"
        );
        let bad = Reply {
            votes: Some(vec!["A".into(), "Q".into(), "B".into()]),
            ..Reply::default()
        };
        let (field, reason) = invalid(submission(&q, &bad, &ctx));
        assert_eq!(field, "votes[1]");
        assert!(reason.contains("allowed: A, B, tie"), "{reason}");
        let named = Reply {
            who: Some("ann".into()),
            ..all.clone()
        };
        let (field, _) = invalid(submission(&q, &named, &study));
        assert_eq!(field, "who");
        let both = Reply {
            vote: Some("A".into()),
            ..named
        };
        let (_, reason) = invalid(submission(&q, &both, &study));
        assert!(reason.contains("give vote or votes, not both"), "{reason}");
    }

    #[test]
    fn group_rate_takes_one_rating_or_all_values() {
        let q = rate(&["a0", "a1"]);
        let ctx = memory();
        let one = Reply {
            who: Some("a0".into()),
            rating: Some(3.5),
            ..Reply::default()
        };
        assert_eq!(
            submission(&q, &one, &ctx).unwrap(),
            Submission::Ballot("a0".into(), Ballot::Rating { value: 3.5 })
        );
        let nan = Reply {
            rating: Some(f64::NAN),
            ..one.clone()
        };
        let (field, reason) = invalid(submission(&q, &nan, &ctx));
        assert_eq!(field, "rating");
        assert!(reason.contains("finite"), "{reason}");
        let all = Reply {
            values: Some(vec![1.0, -1.0]),
            ..Reply::default()
        };
        assert_eq!(
            answer(submission(&q, &all, &ctx).unwrap()),
            AnswerKind::Values {
                values: vec![1.0, -1.0]
            }
        );
        let long = Reply {
            values: Some(vec![1.0, 2.0, 3.0]),
            ..Reply::default()
        };
        let (field, reason) = invalid(submission(&q, &long, &ctx));
        assert_eq!(field, "values");
        assert!(
            reason.contains("give 2 value(s), got 3") && reason.contains("in the order a0, a1"),
            "{reason}"
        );
    }

    #[test]
    fn inputs_that_do_not_fit_are_refused_naming_what_fits() {
        let cases = [
            (
                compare(2),
                Reply {
                    values: Some(vec![1.0]),
                    ..Reply::default()
                },
                ["values does not fit query 7", "winner=A|B or tie"],
            ),
            (
                evaluate(1),
                Reply {
                    winner: Some("A".into()),
                    ..Reply::default()
                },
                ["winner does not fit query 7", "values=V1"],
            ),
            (
                vote(&["a0", "a1"]),
                Reply {
                    rating: Some(1.0),
                    ..Reply::default()
                },
                ["rating does not fit query 7", "who=NAME vote=A|B|tie"],
            ),
            (
                rate(&["a0", "a1"]),
                Reply {
                    tie: true,
                    ..Reply::default()
                },
                ["tie does not fit query 7", "who=NAME rating=VALUE"],
            ),
            (
                compare(3),
                Reply::default(),
                ["nothing to tell", "winner=A|B|C or tie"],
            ),
        ];
        for (q, r, needles) in cases {
            let (field, reason) = invalid(submission(&q, &r, &memory()));
            assert_eq!(field, "answer");
            for n in needles {
                assert!(reason.contains(n), "{n} missing from {reason}");
            }
        }
        let hessian = query(QueryKind::Hessian {
            point: Point::Unit(vec![0.5]),
        });
        let (field, reason) = invalid(submission(&hessian, &Reply::default(), &memory()));
        assert_eq!(field, "query");
        assert!(reason.contains("hessian"), "{reason}");
    }

    #[test]
    fn flag_names_spell_messages_and_fields() {
        let flags = Names {
            winner: "--winner",
            tie: "--tie",
            who: "--as",
            vote: "--vote",
            votes: "--votes",
            rating: "--rating",
            values: "--values",
            sep: " ",
            list: "comma-separated ",
        };
        let ctx = ReplyContext {
            names: flags,
            ..memory()
        };
        let r = Reply {
            values: Some(vec![1.0]),
            ..Reply::default()
        };
        let (_, reason) = invalid(submission(&compare(2), &r, &ctx));
        assert!(
            reason.contains("--values does not fit") && reason.contains("--winner A|B or --tie"),
            "{reason}"
        );
        let (field, reason) = invalid(submission(&evaluate(2), &r, &ctx));
        assert_eq!(field, "values");
        assert!(
            reason.contains("give 2 comma-separated value(s)"),
            "{reason}"
        );
        let r = Reply {
            vote: Some("A".into()),
            ..Reply::default()
        };
        let (field, reason) = invalid(submission(&vote(&["a0", "a1"]), &r, &ctx));
        assert_eq!(field, "as");
        assert!(reason.contains("--vote needs --as NAME"), "{reason}");
        assert_eq!(
            Reply {
                tie: true,
                values: Some(vec![]),
                ..Reply::default()
            }
            .given(),
            vec![Input::Tie, Input::Values]
        );
    }
}
