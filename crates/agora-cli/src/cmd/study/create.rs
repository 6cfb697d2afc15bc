//! `agora study create | list | tokens`: a study's spec from flags or files, and its
//! credentials.

use super::CreateArgs;
use super::show::print_pending;
use agora_core::{Error, Param, Space};
use agora_study::live::{Actor, LiveStudy, MethodSpec, StorageUrl, StoreError, StudySpec, iso_utc};
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::Path;

pub(super) fn create(a: CreateArgs, out: &mut impl Write) -> Result<()> {
    let mut spec = match &a.spec {
        Some(path) => spec_from_file(path, &a.name)?,
        None => {
            let (space, media) = match &a.space {
                Some(path) if is_csv(path) => candidates_csv(path, a.media_column.as_deref())?,
                Some(_) if a.media_column.is_some() => bail!(Error::invalid(
                    "media_column",
                    "only with a CSV `--space` (a column of the candidates' media)"
                )),
                Some(path) => (space_from_value(read_doc(path, "space")?)?, Vec::new()),
                None => (space_from_flags(&a.params)?, Vec::new()),
            };
            let knobs = a
                .knobs
                .iter()
                .map(|kv| parse_knob(kv))
                .collect::<Result<Vec<_>, _>>()?;
            let method = MethodSpec::from_knobs(a.method.as_deref().unwrap_or("pairs"), &knobs)?;
            StudySpec {
                name: a.name.clone(),
                description: a.description.clone().unwrap_or_default(),
                space,
                method,
                seed: a.seed.unwrap_or(0),
                participants: a.participants.clone(),
                round_seconds: None,
                media,
            }
        }
    };
    if a.round_seconds.is_some() {
        spec.round_seconds = a.round_seconds;
    }
    // Check everything before the store is touched: a bad spec leaves no trace.
    spec.validate()?;
    let url = a.db.url()?;
    if let Some(dir) = url
        .sqlite_path()
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        bail!(
            "invalid `storage`: the folder `{}` does not exist",
            dir.display()
        );
    }
    let store = url
        .open(true)
        .with_context(|| format!("opening the study store `{url}`"))?;
    let study = LiveStudy::create(store, spec)?;
    let spec = study.spec();
    writeln!(
        out,
        "created study `{}` in {}: method {} ({}), seed {}",
        spec.name,
        url,
        spec.method.name(),
        study.strategy().name(),
        spec.seed
    )?;
    if !spec.description.is_empty() {
        writeln!(out, "  {}", spec.description)?;
    }
    writeln!(out, "  space: {}", describe_space(&spec.space))?;
    if !spec.participants.is_empty() {
        writeln!(out, "  participants: {}", spec.participants.join(", "))?;
    }
    writeln!(out)?;
    let stored = study.stored();
    print_tokens(out, stored, &a.url)?;
    writeln!(out)?;
    match study.pending_view(&Actor::Owner) {
        Some(v) => print_pending(out, &spec.name, &v),
        None => Ok(writeln!(out, "no query is open")?),
    }
}

pub(super) fn list(url: &StorageUrl, out: &mut impl Write) -> Result<()> {
    let store = match url.open(false) {
        Err(StoreError::NotFound { .. }) => {
            match url.sqlite_path() {
                Some(path) => writeln!(out, "no studies yet: `{}` does not exist", path.display())?,
                None => writeln!(out, "no studies yet in {url}")?,
            }
            return Ok(());
        }
        r => r.with_context(|| format!("opening the study store `{url}`"))?,
    };
    let studies = agora_study::live::summarize_all(store.as_ref())?;
    if studies.is_empty() {
        writeln!(out, "no studies yet in `{url}`")?;
    }
    for s in studies {
        writeln!(
            out,
            "{}  {}  created {}  {} answered  {}  last activity {}  participants: {}",
            s.name,
            s.method,
            iso_utc(s.created_ms),
            s.answered,
            s.state(),
            iso_utc(s.last_activity_ms),
            if s.participants.is_empty() {
                "-".to_string()
            } else {
                s.participants.join(", ")
            }
        )?;
    }
    Ok(())
}

pub(super) fn print_tokens(
    out: &mut impl Write,
    stored: &agora_study::live::StoredStudy,
    url: &str,
) -> Result<()> {
    let base = url.trim_end_matches('/');
    let (study, facilitator) = (&stored.spec.name, &stored.facilitator_token);
    writeln!(out, "facilitator token: {facilitator}")?;
    writeln!(out, "  {base}/?study={study}&token={facilitator}")?;
    for (p, t) in stored
        .spec
        .participants
        .iter()
        .zip(&stored.participant_tokens)
    {
        writeln!(out, "participant {p}: {t}")?;
        writeln!(out, "  {base}/?study={study}&token={t}")?;
    }
    if matches!(stored.spec.space, Space::Box { .. }) {
        writeln!(
            out,
            "renderer token (shows media with the open query's options, nothing else): {}",
            stored.renderer_token()
        )?;
    }
    writeln!(
        out,
        "(keep tokens private: a token lets its holder vote as its owner; \
         `agora study tokens {study}` shows them again)"
    )?;
    Ok(())
}

pub(super) fn describe_space(space: &Space) -> String {
    match space {
        Space::Box { params } => params
            .iter()
            .map(|p| match p {
                Param::Real { name, lo, hi } => format!("{name} in [{lo}, {hi}]"),
                Param::LogReal { name, lo, hi } => format!("{name} in [{lo}, {hi}] (log)"),
                Param::Integer { name, lo, hi } => format!("{name} in {lo}..={hi}"),
                Param::Categorical { name, choices } => {
                    format!("{name} in {{{}}}", choices.join(", "))
                }
            })
            .collect::<Vec<_>>()
            .join("; "),
        Space::Candidates { names, .. } => format!("{} candidates", names.len()),
    }
}

const PARAM_FORMS: &str = "NAME:real:LO:HI, NAME:log:LO:HI, NAME:int:LO:HI or NAME:cat:A,B,C";

/// A box space from `--param` flags.
fn space_from_flags(specs: &[String]) -> Result<Space, Error> {
    if specs.is_empty() {
        return Err(Error::invalid(
            "param",
            format!(
                "give the space: --param {PARAM_FORMS} (repeat), or --space FILE, or --spec FILE"
            ),
        ));
    }
    let mut params: Vec<Param> = Vec::with_capacity(specs.len());
    for s in specs {
        let p = parse_param(s)?;
        if params.iter().any(|q| q.name() == p.name()) {
            return Err(Error::invalid(
                "param",
                format!(
                    "parameter names must be distinct; `{}` appears twice",
                    p.name()
                ),
            ));
        }
        params.push(p);
    }
    Space::boxed(params)
}

/// One `--param NAME:TYPE:SPEC`.
fn parse_param(s: &str) -> Result<Param, Error> {
    let bad = |why: String| {
        Error::invalid(
            "param",
            format!("`{s}`: {why}; allowed forms: {PARAM_FORMS}"),
        )
    };
    let mut parts = s.splitn(3, ':');
    let (name, kind, rest) = match (parts.next(), parts.next(), parts.next()) {
        (Some(n), Some(k), Some(r)) => (n.trim(), k.trim(), r),
        _ => return Err(bad("expected NAME:TYPE:SPEC".into())),
    };
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err(bad("the name must be non-empty printable text".into()));
    }
    let bounds = || -> Result<(&str, &str), Error> {
        match rest.split(':').collect::<Vec<_>>().as_slice() {
            [lo, hi] => Ok((lo.trim(), hi.trim())),
            _ => Err(bad(format!("a {kind} parameter needs LO:HI"))),
        }
    };
    let real = |v: &str, which: &str| -> Result<f64, Error> {
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(bad(format!("{which} `{v}` must be a finite number"))),
        }
    };
    let int = |v: &str, which: &str| -> Result<i64, Error> {
        v.parse::<i64>()
            .map_err(|_| bad(format!("{which} `{v}` must be an integer")))
    };
    let name = name.to_string();
    Ok(match kind {
        "real" => {
            let (lo, hi) = bounds()?;
            Param::Real {
                name,
                lo: real(lo, "LO")?,
                hi: real(hi, "HI")?,
            }
        }
        "log" | "log_real" | "logreal" => {
            let (lo, hi) = bounds()?;
            Param::LogReal {
                name,
                lo: real(lo, "LO")?,
                hi: real(hi, "HI")?,
            }
        }
        "int" | "integer" => {
            let (lo, hi) = bounds()?;
            Param::Integer {
                name,
                lo: int(lo, "LO")?,
                hi: int(hi, "HI")?,
            }
        }
        "cat" | "categorical" => {
            let choices: Vec<String> = rest.split(',').map(|c| c.trim().to_string()).collect();
            if choices.iter().any(String::is_empty) {
                return Err(bad("choices must be non-empty, comma-separated".into()));
            }
            Param::Categorical { name, choices }
        }
        other => {
            return Err(bad(format!(
                "unknown type `{other}` (allowed: real, log, int, cat)"
            )));
        }
    })
}

/// `KEY=VALUE` of `--set`.
fn parse_knob(kv: &str) -> Result<(String, String), Error> {
    match kv.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(Error::invalid(
            "set",
            format!("`{kv}` must be KEY=VALUE, e.g. --set rho=0.5"),
        )),
    }
}

fn is_csv(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// A candidate set (and its media) from a CSV file.
fn candidates_csv(
    path: &Path,
    media_column: Option<&str>,
) -> Result<(Space, Vec<Option<agora_study::live::media::Media>>)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::invalid("space", format!("cannot read `{}`: {e}", path.display())))?;
    let base = path.parent().unwrap_or(Path::new("."));
    agora_study::live::media::candidates_from_csv(&text, base, media_column)
        .with_context(|| format!("`{}`", path.display()))
}

/// A TOML or JSON document (by extension; otherwise whichever parses) as JSON.
fn read_doc(path: &Path, field: &str) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::invalid(field, format!("cannot read `{}`: {e}", path.display())))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let toml = |t: &str| -> Result<serde_json::Value, String> {
        let v: toml::Value = toml::from_str(t).map_err(|e| e.to_string())?;
        serde_json::to_value(v).map_err(|e| e.to_string())
    };
    let json = |t: &str| serde_json::from_str::<serde_json::Value>(t).map_err(|e| e.to_string());
    let parsed = match ext.as_deref() {
        Some("toml") => toml(&text),
        Some("json") => json(&text),
        _ => json(&text)
            .or_else(|je| toml(&text).map_err(|te| format!("not JSON ({je}) nor TOML ({te})"))),
    };
    parsed.map_err(|e| {
        Error::invalid(field, format!("`{}` does not parse: {e}", path.display())).into()
    })
}

/// A space from a document; `kind` may be left out (`params` means a box, `features` a
/// candidate set).
fn space_from_value(mut v: serde_json::Value) -> Result<Space, Error> {
    if let Some(obj) = v.as_object_mut()
        && !obj.contains_key("kind")
    {
        if obj.contains_key("params") {
            obj.insert("kind".into(), "box".into());
        } else if obj.contains_key("features") {
            obj.insert("kind".into(), "candidates".into());
        }
    }
    let space: Space = serde_json::from_value(v).map_err(|e| {
        Error::invalid(
            "space",
            format!(
                "{e}; expected kind = \"box\" with params (type real, log_real, integer or \
                 categorical) or kind = \"candidates\" with names and features"
            ),
        )
    })?;
    space.validate()?;
    Ok(space)
}

/// A whole spec from a file; its name defaults to (and must equal) `name`.
fn spec_from_file(path: &Path, name: &str) -> Result<StudySpec> {
    let mut v = read_doc(path, "spec")?;
    let Some(obj) = v.as_object_mut() else {
        bail!(Error::invalid(
            "spec",
            format!(
                "`{}` must hold a table/object with space and method",
                path.display()
            )
        ));
    };
    match obj.get("name").and_then(|n| n.as_str()) {
        Some(n) if n != name => bail!(Error::invalid(
            "name",
            format!("the spec file names the study `{n}` but the command line says `{name}`")
        )),
        _ => {
            obj.insert("name".into(), name.into());
        }
    }
    if let Some(space) = obj.get_mut("space") {
        let s = space_from_value(space.take())?;
        *space = serde_json::to_value(s)?;
    }
    let spec: StudySpec = serde_json::from_value(v).map_err(|e| {
        Error::invalid(
            "spec",
            format!(
                "{e} (fields: name, description, space, method (with `name` one of {}), seed, \
                 participants)",
                agora_study::live::METHOD_NAMES.join(", ")
            ),
        )
    })?;
    Ok(spec)
}
