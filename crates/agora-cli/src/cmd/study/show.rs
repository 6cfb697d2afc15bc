//! `agora ask`, `status`, `best`, `export` and `plot`: the study as people and programs
//! read it.

use super::create::describe_space;
use super::{AskArgs, ExportArgs, Format, PlotArgs, ShowArgs, open_study};
use agora_core::{Channel, Error, ParamValue};
use agora_study::live::{
    Actor, Ballot, LiveStudy, MethodSpec, OptionView, PendingView, iso_utc, letter, plot,
};
use anyhow::{Result, bail};
use std::io::Write;
use std::path::Path;

fn participant_actor(study: &LiveStudy, who: &str) -> Result<Actor, Error> {
    let ps = &study.spec().participants;
    if ps.iter().any(|p| p == who) {
        Ok(Actor::Participant(who.to_string()))
    } else if ps.is_empty() {
        Err(Error::invalid(
            "as",
            format!(
                "study `{}` has no named participants; leave out --as",
                study.spec().name
            ),
        ))
    } else {
        Err(Error::unknown("participant", who, ps))
    }
}

pub(super) fn ask(a: AskArgs, out: &mut impl Write) -> Result<()> {
    let mut study = open_study(&a.db, &a.name)?;
    if let Some(w) = &a.worker {
        study.ask_worker(w)?;
        let view = study.worker_view(w);
        if a.json {
            writeln!(out, "{}", serde_json::to_string_pretty(&view)?)?;
            return Ok(());
        }
        return match view {
            Some(v) => print_pending(out, &a.name, &v),
            None => bail!("worker {w:?} holds no query after asking"),
        };
    }
    let actor = match &a.as_ {
        Some(who) => participant_actor(&study, who)?,
        None => Actor::Owner,
    };
    let view = study.pending_view(&actor);
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&view)?)?;
        return Ok(());
    }
    match view {
        Some(v) => print_pending(out, &a.name, &v),
        None if study.held().next().is_some() => Ok(writeln!(
            out,
            "study `{}`: no query is open for nobody; held by workers: {} \
             (`agora ask {} --worker ID` shows one)",
            a.name,
            held_text(&study),
            a.name
        )?),
        None => Ok(writeln!(out, "study `{}`: no query is open", a.name)?),
    }
}

/// The queries workers hold: `query 3 (w1), query 5 (w2)`.
fn held_text(study: &LiveStudy) -> String {
    study
        .held()
        .map(|h| format!("query {} ({})", h.query_id, h.worker))
        .collect::<Vec<_>>()
        .join(", ")
}

fn value_text(v: &ParamValue) -> String {
    match v {
        ParamValue::Float(x) => format!("{x}"),
        ParamValue::Int(i) => format!("{i}"),
        ParamValue::Choice(s) => s.clone(),
    }
}

fn ballot_text(b: &Ballot) -> String {
    match b {
        Ballot::Vote { choice: Some(c) } => letter(*c),
        Ballot::Vote { choice: None } => "can't tell".into(),
        Ballot::Rating { value } => format!("{value}"),
    }
}

/// The options side by side: one column per option, one row per parameter.
fn print_options(out: &mut impl Write, options: &[OptionView]) -> Result<()> {
    let mut header = vec![String::new()];
    header.extend(options.iter().enumerate().map(|(i, o)| {
        if o.label == letter(i) {
            o.label.clone()
        } else {
            format!("{}: {}", letter(i), o.label)
        }
    }));
    let mut rows = vec![header];
    let n_params = options.iter().map(|o| o.params.len()).max().unwrap_or(0);
    for j in 0..n_params {
        let mut row = vec![
            options
                .iter()
                .find_map(|o| o.params.get(j).map(|(n, _)| n.clone()))
                .unwrap_or_default(),
        ];
        row.extend(options.iter().map(|o| {
            o.params
                .get(j)
                .map(|(_, v)| value_text(v))
                .unwrap_or_default()
        }));
        rows.push(row);
    }
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, s)| format!("{s:<w$}", w = width[c]))
            .collect();
        writeln!(out, "  {}", line.join("   ").trim_end())?;
    }
    Ok(())
}

pub(super) fn print_pending(out: &mut impl Write, study: &str, v: &PendingView) -> Result<()> {
    let kind = match (v.kind, v.channel) {
        ("compare", _) if v.options.len() > 2 => format!("best of {}", v.options.len()),
        ("compare", _) => "comparison".to_string(),
        ("evaluate", _) => "evaluation".to_string(),
        ("group_vote", Some(Channel::Private)) => "group vote, private (secret ballot)".into(),
        ("group_vote", _) => "group vote, public (show of hands)".into(),
        ("group_rate", Some(Channel::Private)) => "group rating, private".into(),
        ("group_rate", _) => "group rating, public".into(),
        (k, _) => k.to_string(),
    };
    writeln!(out, "study `{study}`, query {}: {kind}", v.query_id)?;
    if let Some(w) = &v.worker {
        writeln!(out, "held by worker: {w}")?;
    }
    if let Some(r) = &v.rater {
        writeln!(out, "asked of: {r}")?;
    }
    if let Some(d) = v.deadline_ms {
        let left = (d - agora_study::live::store::now_ms()) / 1000;
        if left > 0 {
            writeln!(
                out,
                "closes by itself at {} ({left} s from now)",
                iso_utc(d)
            )?;
        } else {
            writeln!(
                out,
                "its time ran out at {}: the next vote (or `agora serve`) closes it",
                iso_utc(d)
            )?;
        }
    }
    writeln!(out, "{}", v.prompt)?;
    writeln!(out)?;
    print_options(out, &v.options)?;
    writeln!(out)?;
    let letters: Vec<String> = (0..v.options.len()).map(letter).collect();
    let q = v.query_id;
    match v.kind {
        "compare" => writeln!(
            out,
            "answer: agora tell {study} --query {q} --winner {}   (or --tie)",
            letters.join("|")
        )?,
        "evaluate" => writeln!(
            out,
            "answer: agora tell {study} --query {q} --values {}",
            (1..=v.options.len())
                .map(|i| format!("V{i}"))
                .collect::<Vec<_>>()
                .join(",")
        )?,
        "group_vote" | "group_rate" => {
            writeln!(out, "asked: {}", v.asked.join(", "))?;
            let voted: Vec<String> = v
                .voted
                .iter()
                .map(|p| match v.ballots.get(p) {
                    Some(b) => format!("{p} ({})", ballot_text(b)),
                    None => p.clone(),
                })
                .collect();
            let waiting: Vec<&str> = v
                .asked
                .iter()
                .filter(|p| !v.voted.contains(p))
                .map(String::as_str)
                .collect();
            writeln!(
                out,
                "voted: {}",
                if voted.is_empty() {
                    "nobody yet".to_string()
                } else {
                    voted.join(", ")
                }
            )?;
            writeln!(
                out,
                "waiting for: {}",
                if waiting.is_empty() {
                    "-".into()
                } else {
                    waiting.join(", ")
                }
            )?;
            if v.kind == "group_vote" {
                writeln!(
                    out,
                    "answer: agora tell {study} --query {q} --as NAME --vote {}|tie   \
                     (or everyone at once: --votes V1,V2,... in the order above; \
                     close early: --close)",
                    letters.join("|")
                )?;
            } else {
                writeln!(
                    out,
                    "answer: agora tell {study} --query {q} --as NAME --rating VALUE   \
                     (or everyone at once: --values V1,V2,... in the order above)"
                )?;
            }
        }
        _ => {}
    }
    Ok(())
}

pub(super) fn status(a: ShowArgs, out: &mut impl Write) -> Result<()> {
    let study = open_study(&a.db, &a.name)?;
    let st = study.status(&Actor::Owner);
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&st)?)?;
        return Ok(());
    }
    writeln!(out, "study `{}`", st.study)?;
    if !st.description.is_empty() {
        writeln!(out, "  {}", st.description)?;
    }
    writeln!(out, "method: {}; seed {}", st.method, study.spec().seed)?;
    writeln!(out, "space: {}", describe_space(&study.spec().space))?;
    if !st.participants.is_empty() {
        writeln!(out, "participants: {}", st.participants.join(", "))?;
    }
    write!(out, "answered: {} queries", st.answered)?;
    if st.public_rounds + st.private_rounds > 0 {
        write!(
            out,
            " ({} public rounds, {} private)",
            st.public_rounds, st.private_rounds
        )?;
    }
    writeln!(out, "; {} events in the log", st.events)?;
    if !st.raters.is_empty() {
        let w: Vec<String> = st
            .raters
            .iter()
            .map(|r| format!("{} {:.0}%", r.rater, 100.0 * r.weight))
            .collect();
        writeln!(out, "raters' weight in the model: {}", w.join(", "))?;
    }
    match &st.pending {
        Some(v) => {
            write!(out, "open: query {} ({})", v.query_id, v.kind)?;
            if !v.asked.is_empty() {
                write!(out, "; voted {} of {}", v.voted.len(), v.asked.len())?;
            }
            writeln!(out)?;
        }
        None => match &st.stalled {
            Some(why) => writeln!(
                out,
                "open: none; the method could not propose its next query: {why}"
            )?,
            None => writeln!(out, "open: none")?,
        },
    }
    if !st.workers.is_empty() {
        writeln!(out, "held by workers: {}", held_text(&study))?;
    }
    match &st.recommendation {
        Some(r) => writeln!(out, "recommended: {}", one_line(&r.option))?,
        None => writeln!(out, "recommended: none yet")?,
    }
    Ok(())
}

fn one_line(o: &OptionView) -> String {
    o.params
        .iter()
        .map(|(n, v)| format!("{n} = {}", value_text(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn best(a: ShowArgs, out: &mut impl Write) -> Result<()> {
    let study = open_study(&a.db, &a.name)?;
    let rec = study.recommendation();
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rec)?)?;
        return Ok(());
    }
    let Some(r) = rec else {
        writeln!(
            out,
            "study `{}`: no recommendation yet (answer a query first)",
            a.name
        )?;
        return Ok(());
    };
    writeln!(
        out,
        "recommended for `{}` after {} answers:",
        a.name,
        study.strategy().n_answered()
    )?;
    if let agora_core::Point::Index(i) = &r.option.point {
        writeln!(out, "  candidate {i}: {}", r.option.label)?;
    }
    for (n, v) in &r.option.params {
        writeln!(out, "  {n} = {}", value_text(v))?;
    }
    writeln!(out, "value: {} ({})", r.value, value_meaning(&study))?;
    match r.belief {
        Some((m, s)) => writeln!(out, "model: mean {m:.4} ± {s:.4} (1 sd)")?,
        None => writeln!(
            out,
            "model: no predictive model for {} (no uncertainty to report)",
            study.strategy().name()
        )?,
    }
    Ok(())
}

fn value_meaning(study: &LiveStudy) -> &'static str {
    match study.spec().method {
        MethodSpec::Bo { .. } | MethodSpec::Boap { .. } => "the best value measured",
        MethodSpec::Social { .. } => "the group's estimated welfare",
        _ => "the model's utility, on the scale of its preference model",
    }
}

fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes)
        .map_err(|e| Error::invalid("out", format!("cannot write `{}`: {e}", path.display())))?;
    Ok(())
}

pub(super) fn export(a: ExportArgs, out: &mut impl Write) -> Result<()> {
    let study = open_study(&a.db, &a.name)?;
    let text = match a.format {
        Format::Csv => study.export_csv(&Actor::Owner)?,
        Format::Json => {
            let doc = serde_json::json!({
                "study": study.spec(),
                "created_utc": iso_utc(study.stored().created_ms),
                "events": study.events(&Actor::Owner)?,
            });
            serde_json::to_string_pretty(&doc)? + "\n"
        }
    };
    match &a.out {
        Some(path) => {
            write_output(path, text.as_bytes())?;
            writeln!(
                out,
                "wrote {} events of `{}` to {}",
                study.seq(),
                a.name,
                path.display()
            )?;
        }
        None => write!(out, "{text}")?,
    }
    Ok(())
}

pub(super) fn plot_cmd(a: PlotArgs, out: &mut impl Write) -> Result<()> {
    let ext = a
        .out
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if !matches!(ext.as_deref(), Some("svg") | Some("png")) {
        bail!(Error::invalid(
            "out",
            format!("`{}` must end in .svg or .png", a.out.display())
        ));
    }
    let study = open_study(&a.db, &a.name)?;
    let bytes = if ext.as_deref() == Some("svg") {
        plot::plot_svg(&study)?.into_bytes()
    } else {
        plot::plot_png(&study)?
    };
    write_output(&a.out, &bytes)?;
    writeln!(out, "wrote {}", a.out.display())?;
    Ok(())
}
