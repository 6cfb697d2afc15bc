//! `agora tell`: answers, ballots and closing a round, from flags that name the option
//! the way people see it (A, B, tie).

use super::show::{letter, participant_actor, print_pending};
use super::{TellArgs, open_study};
use agora_core::{Answer, AnswerKind, Error, Query, QueryKind};
use agora_study::live::{Actor, Ballot, EventKind, LiveStudy, OptionView, Outcome};
use anyhow::{Result, bail};
use std::io::Write;

/// An option picked by letter, index, label or `tie` (`None`).
fn parse_choice(
    field: &str,
    s: &str,
    options: &[OptionView],
    n: usize,
) -> Result<Option<usize>, Error> {
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
        .or_else(|| options.iter().position(|o| o.label == t && !t.is_empty()));
    match found {
        Some(i) => Ok(Some(i)),
        None => {
            let mut allowed: Vec<String> = (0..n).map(letter).collect();
            allowed.push("tie".into());
            Err(Error::invalid(
                field,
                format!(
                    "`{s}` is not one of the {n} options shown; allowed: {} (or an index 0..{})",
                    allowed.join(", "),
                    n.saturating_sub(1)
                ),
            ))
        }
    }
}

fn parse_number(field: &str, s: &str) -> Result<f64, Error> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(x) => Err(Error::invalid(
            field,
            format!("must be a finite number, got {x}"),
        )),
        Err(_) => Err(Error::invalid(field, format!("`{s}` is not a number"))),
    }
}

fn parse_values(field: &str, s: &str, want: usize, what: &str) -> Result<Vec<f64>, Error> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() != want {
        return Err(Error::invalid(
            field,
            format!(
                "{what}: give {want} comma-separated value(s), got {}",
                parts.len()
            ),
        ));
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| parse_number(&format!("{field}[{i}]"), p))
        .collect()
}

/// Which of tell's answer flags were given, for messages.
fn given(a: &TellArgs) -> Vec<&'static str> {
    let mut g = Vec::new();
    if a.winner.is_some() {
        g.push("--winner");
    }
    if a.tie {
        g.push("--tie");
    }
    if a.vote.is_some() {
        g.push("--vote");
    }
    if a.votes.is_some() {
        g.push("--votes");
    }
    if a.rating.is_some() {
        g.push("--rating");
    }
    if a.values.is_some() {
        g.push("--values");
    }
    g
}

/// What `tell` submits.
enum Submission {
    Answer(Answer),
    Ballot(String, Ballot),
}

/// The submission `a` describes for query `q`; errors say which flags fit the query.
fn submission(study: &LiveStudy, q: &Query, a: &TellArgs) -> Result<Submission, Error> {
    let flags = given(a);
    let only = |allowed: &[&str], hint: &str| -> Result<(), Error> {
        if flags.is_empty() {
            return Err(Error::invalid("answer", format!("nothing to tell: {hint}")));
        }
        if let Some(f) = flags.iter().find(|f| !allowed.contains(f)) {
            return Err(Error::invalid(
                "answer",
                format!("{f} does not fit query {}: {hint}", q.id),
            ));
        }
        Ok(())
    };
    let options = study.options(&points_of(q));
    let n = options.len();
    match &q.kind {
        QueryKind::Compare { rater, .. } => {
            let hint = format!(
                "query {} compares {n} options; answer with --winner {} or --tie",
                q.id,
                (0..n).map(letter).collect::<Vec<_>>().join("|")
            );
            only(&["--winner", "--tie"], &hint)?;
            if flags.len() > 1 {
                return Err(Error::invalid(
                    "answer",
                    format!("give --winner or --tie, not both; {hint}"),
                ));
            }
            let winner = match &a.winner {
                Some(w) => parse_choice("winner", w, &options, n)?,
                None => None,
            };
            let rater = match (rater, &a.as_) {
                (Some(r), _) => Some(r.clone()),
                (None, Some(who)) => {
                    participant_actor(study, who)?;
                    Some(who.clone())
                }
                (None, None) => study.spec().participants.first().cloned(),
            };
            let kind = match winner {
                Some(winner) => AnswerKind::Choice { winner, rater },
                None => AnswerKind::Tie { rater },
            };
            Ok(Submission::Answer(Answer {
                query_id: q.id,
                kind,
            }))
        }
        QueryKind::Evaluate { points } => {
            let hint = format!(
                "query {} asks for the measured value of {} option(s); answer with --values {}",
                q.id,
                points.len(),
                (1..=points.len())
                    .map(|i| format!("V{i}"))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            only(&["--values"], &hint)?;
            let values = parse_values(
                "values",
                a.values.as_deref().unwrap_or(""),
                points.len(),
                &hint,
            )?;
            Ok(Submission::Answer(Answer {
                query_id: q.id,
                kind: AnswerKind::Values { values },
            }))
        }
        QueryKind::GroupVote { agents, .. } => {
            let hint = format!(
                "query {} is a group vote; answer with --as NAME --vote {}|tie, or everyone's \
                 votes at once with --votes (one of {} per participant, in the order {})",
                q.id,
                (0..n).map(letter).collect::<Vec<_>>().join("|"),
                (0..n)
                    .map(letter)
                    .chain(["tie".to_string()])
                    .collect::<Vec<_>>()
                    .join(", "),
                names(study, agents.len())
            );
            only(&["--vote", "--votes"], &hint)?;
            if flags.len() > 1 {
                return Err(Error::invalid(
                    "answer",
                    format!("give --vote or --votes, not both; {hint}"),
                ));
            }
            if let Some(v) = &a.vote {
                let who = a.as_.clone().ok_or_else(|| {
                    Error::invalid(
                        "as",
                        format!(
                            "--vote needs --as NAME (one of {})",
                            names(study, agents.len())
                        ),
                    )
                })?;
                let choice = parse_choice("vote", v, &options, n)?;
                return Ok(Submission::Ballot(who, Ballot::Vote { choice }));
            }
            let all = a.votes.as_deref().unwrap_or("");
            let parts: Vec<&str> = all.split(',').collect();
            if parts.len() != agents.len() {
                return Err(Error::invalid(
                    "votes",
                    format!(
                        "give one vote per participant ({}, in order {}), got {}",
                        agents.len(),
                        names(study, agents.len()),
                        parts.len()
                    ),
                ));
            }
            let votes = parts
                .iter()
                .enumerate()
                .map(|(k, p)| parse_choice(&format!("votes[{k}]"), p, &options, n))
                .collect::<Result<Vec<_>, _>>()?;
            if a.as_.is_some() {
                return Err(Error::invalid(
                    "as",
                    "--votes gives everyone's votes; leave out --as",
                ));
            }
            Ok(Submission::Answer(Answer {
                query_id: q.id,
                kind: AnswerKind::Votes { votes },
            }))
        }
        QueryKind::GroupRate { agents, .. } => {
            let hint = format!(
                "query {} asks each participant to rate one option; answer with --as NAME \
                 --rating VALUE, or everyone's ratings at once with --values (in the order {})",
                q.id,
                names(study, agents.len())
            );
            only(&["--rating", "--values"], &hint)?;
            if flags.len() > 1 {
                return Err(Error::invalid(
                    "answer",
                    format!("give --rating or --values, not both; {hint}"),
                ));
            }
            if let Some(r) = &a.rating {
                let who = a.as_.clone().ok_or_else(|| {
                    Error::invalid(
                        "as",
                        format!(
                            "--rating needs --as NAME (one of {})",
                            names(study, agents.len())
                        ),
                    )
                })?;
                let value = parse_number("rating", r)?;
                return Ok(Submission::Ballot(who, Ballot::Rating { value }));
            }
            let values = parse_values(
                "values",
                a.values.as_deref().unwrap_or(""),
                agents.len(),
                &hint,
            )?;
            Ok(Submission::Answer(Answer {
                query_id: q.id,
                kind: AnswerKind::Values { values },
            }))
        }
        _ => Err(Error::invalid(
            "query",
            format!(
                "query {} is of a kind this agora cannot answer from the command line",
                q.id
            ),
        )),
    }
}

fn names(study: &LiveStudy, n: usize) -> String {
    let ps = &study.spec().participants;
    (0..n)
        .map(|k| ps.get(k).cloned().unwrap_or_else(|| format!("#{k}")))
        .collect::<Vec<_>>()
        .join(", ")
}

fn points_of(q: &Query) -> Vec<agora_core::Point> {
    match &q.kind {
        QueryKind::Compare { points, .. }
        | QueryKind::Evaluate { points }
        | QueryKind::GroupVote { points, .. } => points.clone(),
        QueryKind::GroupRate { point, .. } => vec![point.clone()],
        _ => Vec::new(),
    }
}

/// The query `id` as it was asked: the open one, or one from the log.
fn find_query(study: &LiveStudy, id: u64) -> Result<Option<Query>> {
    if let Some(q) = study.pending().filter(|q| q.id == id) {
        return Ok(Some(q.clone()));
    }
    Ok(study
        .events(&Actor::Owner)?
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::Asked { query } if query.id == id => Some(query),
            _ => None,
        }))
}

pub(super) fn tell(a: TellArgs, out: &mut impl Write) -> Result<()> {
    let mut study = open_study(&a.db, &a.name)?;
    let open = study.pending().map(|q| q.id);
    let id = match (a.query, open) {
        (Some(id), _) | (None, Some(id)) => id,
        (None, None) => match study.stalled() {
            Some(why) => bail!(
                "study `{}` has no open query: the method could not propose one ({why}); \
                 the answers so far are stored and `status`, `export` and `plot` still work",
                a.name
            ),
            None => bail!("study `{}` has no open query", a.name),
        },
    };
    if a.close {
        if let Some(f) = given(&a)
            .first()
            .copied()
            .or(a.as_.as_ref().map(|_| "--as"))
        {
            bail!(Error::invalid(
                "close",
                format!(
                    "--close takes no answer ({f} given): it ends the round with the ballots cast"
                )
            ));
        }
        let outcome = study.close(&Actor::Owner, id)?;
        return report(out, &study, id, outcome, "round closed", None);
    }
    let Some(q) = find_query(&study, id)? else {
        let now = match open {
            Some(o) => format!("the open query is {o}"),
            None => "no query is open".into(),
        };
        bail!("query {id} is not open; {now}");
    };
    let (outcome, who) = match submission(&study, &q, &a)? {
        Submission::Answer(answer) => (study.tell(&Actor::Owner, answer)?, None),
        Submission::Ballot(who, ballot) => {
            (study.ballot(&Actor::Owner, id, &who, ballot)?, Some(who))
        }
    };
    report(out, &study, id, outcome, "answered", who.as_deref())
}

fn report(
    out: &mut impl Write,
    study: &LiveStudy,
    id: u64,
    outcome: Outcome,
    done: &str,
    who: Option<&str>,
) -> Result<()> {
    let name = &study.spec().name;
    match outcome {
        Outcome::Duplicate => {
            writeln!(
                out,
                "already recorded: query {id} of `{name}` has this answer; nothing changed"
            )?;
        }
        Outcome::Recorded => {
            let waiting = study
                .pending_view(&Actor::Owner)
                .map(|v| {
                    v.asked
                        .iter()
                        .filter(|p| !v.voted.contains(p))
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            writeln!(
                out,
                "recorded {}'s ballot on query {id}; waiting for: {waiting}",
                who.unwrap_or("the")
            )?;
        }
        Outcome::Answered => {
            writeln!(out, "query {id} {done}; the model has learned from it")?;
            writeln!(out)?;
            match study.pending_view(&Actor::Owner) {
                Some(v) => print_pending(out, name, &v)?,
                None => writeln!(out, "no query is open")?,
            }
        }
    }
    Ok(())
}
