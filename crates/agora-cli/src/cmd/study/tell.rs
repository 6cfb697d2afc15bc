//! `agora tell`: answers, ballots and closing a round, from flags that name the option
//! the way people see it (A, B, tie).

use super::show::print_pending;
use super::{TellArgs, open_study};
use agora_core::{Error, Query};
use agora_study::live::{
    Actor, EventKind, LiveStudy, Names, Outcome, Pick, Reply, ReplyContext, Submission, submission,
};
use anyhow::{Result, bail};
use std::collections::BTreeMap;
use std::io::Write;

/// How `tell` spells the inputs of a [`Reply`] in messages.
const FLAGS: Names = Names {
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

/// The reply tell's flags describe. A number that does not parse stands as NaN in the
/// reply and its error waits under its field (`rating`, `values[i]`) in `unparsed`: the
/// library's checks run in their order (fit, count, then each number in turn), and when
/// one stops at a placeholder the parse error is the one reported.
struct Parsed {
    reply: Reply,
    unparsed: BTreeMap<String, Error>,
}

fn parse_reply(a: &TellArgs) -> Parsed {
    let mut unparsed = BTreeMap::new();
    let mut number = |field: String, s: &str| {
        s.trim().parse::<f64>().unwrap_or_else(|_| {
            let e = Error::invalid(&field, format!("`{s}` is not a number"));
            unparsed.entry(field).or_insert(e);
            f64::NAN
        })
    };
    let reply = Reply {
        winner: a.winner.clone().map(Pick::Text),
        tie: a.tie,
        who: a.as_.clone(),
        vote: a.vote.clone().map(Pick::Text),
        votes: a
            .votes
            .as_deref()
            .map(|s| s.split(',').map(Pick::from).collect()),
        rating: a.rating.as_deref().map(|s| number("rating".into(), s)),
        values: a.values.as_deref().map(|s| {
            s.split(',')
                .enumerate()
                .map(|(i, p)| number(format!("values[{i}]"), p))
                .collect()
        }),
    };
    Parsed { reply, unparsed }
}

/// The submission `p` describes for query `q` of `study`; errors say which flags fit.
fn study_submission(study: &LiveStudy, q: &Query, p: Parsed) -> Result<Submission, Error> {
    let labels: Vec<String> = study
        .options(&q.kind.points())
        .into_iter()
        .map(|o| o.label)
        .collect();
    let spec = study.spec();
    let ctx = ReplyContext {
        labels: &labels,
        participants: &spec.participants,
        study: Some(&spec.name),
        names: FLAGS,
    };
    let Parsed {
        reply,
        mut unparsed,
    } = p;
    submission(q, &reply, &ctx).map_err(|e| match &e {
        Error::InvalidInput { field, .. } => unparsed.remove(field).unwrap_or(e),
        _ => e,
    })
}

/// The query `id` as it was asked: an open one, or one from the log.
fn find_query(study: &LiveStudy, id: u64) -> Result<Option<Query>> {
    if let Some(q) = study.open_query(id) {
        return Ok(Some(q.clone()));
    }
    Ok(study
        .events(&Actor::Owner)?
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::Asked { query, .. } if query.id == id => Some(query),
            _ => None,
        }))
}

pub(super) fn tell(a: TellArgs, out: &mut impl Write) -> Result<()> {
    let mut study = open_study(&a.db, &a.name)?;
    let open = study.pending().map(|q| q.id);
    if let Some(w) = &a.worker {
        let held = study.worker_query(w).map(|q| q.id);
        match (held, a.query) {
            (Some(h), Some(id)) if h != id => bail!(Error::invalid(
                "query",
                format!("query {id} is not the one worker {w:?} holds (query {h})")
            )),
            (Some(_), _) => {}
            (None, _) => {
                let holders: Vec<String> = study.held().map(|h| h.worker).collect();
                bail!(Error::invalid(
                    "worker",
                    format!(
                        "worker {w:?} holds no open query (ask for one with `agora ask {} \
                         --worker {w}`); workers holding queries: {}",
                        a.name,
                        if holders.is_empty() {
                            "none".to_string()
                        } else {
                            holders.join(", ")
                        }
                    )
                ));
            }
        }
    }
    let worker_held = a
        .worker
        .as_deref()
        .and_then(|w| study.worker_query(w))
        .map(|q| q.id);
    let id = match (a.query.or(worker_held), open) {
        (Some(id), _) | (None, Some(id)) => id,
        (None, None) if study.held().next().is_some() => {
            let held: Vec<String> = study
                .held()
                .map(|h| format!("{} ({})", h.query_id, h.worker))
                .collect();
            bail!(
                "study `{}` has no open query for nobody; queries held by workers: {}: answer \
                 one with --query ID or --worker ID",
                a.name,
                held.join(", ")
            )
        }
        (None, None) => match study.stalled() {
            Some(why) => bail!(
                "study `{}` has no open query: the method could not propose one ({why}); \
                 the answers so far are stored and `status`, `export` and `plot` still work",
                a.name
            ),
            None => bail!("study `{}` has no open query", a.name),
        },
    };
    let parsed = parse_reply(&a);
    if a.close {
        if let Some(f) = parsed
            .reply
            .given()
            .first()
            .map(|i| FLAGS.of(*i))
            .or(a.as_.as_ref().map(|_| FLAGS.who))
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
    let (outcome, who) = match study_submission(&study, &q, parsed)? {
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
