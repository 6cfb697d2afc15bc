//! Reading what a facilitator brings to a study: earlier evaluations or comparisons
//! (`agora study import NAME FILE`) and options of their own (`agora study enqueue`), in the
//! study's own units, checked row by row with the line named.
//!
//! Two formats, told apart by the file's first non-blank character (`{` is JSON lines):
//!
//! - **CSV** with a header. Evaluations: one column per parameter (by name) and `value`,
//!   e.g. `temperature,air,value`. Comparisons: `winner.NAME` and `loser.NAME` for each
//!   parameter, e.g. `winner.temperature,winner.air,loser.temperature,loser.air`.
//! - **JSON lines**, one object per line. Evaluations: `{"temperature": 22, "air": 0.1,
//!   "value": 3.5}`; comparisons: `{"winner": {...}, "loser": {...}}` with the parameters
//!   by name inside each.
//!
//! A categorical parameter takes its choice's name, an integer an integer; every value must
//! lie within its parameter's range. Nothing is imported unless every row is valid: the
//! first bad row is reported as `line N: ...` with the parameter and its allowed values.

use agora_core::{Error, Observation, Param, ParamValue, Result, Space};
use serde_json::{Map, Value};

/// The observations in `text` for a study over `space` (a box of named parameters).
pub fn read_observations(space: &Space, text: &str) -> Result<Vec<Observation>> {
    let params = box_params(space)?;
    let first = text.trim_start().chars().next();
    let rows = if first == Some('{') {
        read_json_lines(params, text)?
    } else {
        read_csv(params, text)?
    };
    if rows.is_empty() {
        return Err(Error::invalid(
            "file",
            "no rows: a header and at least one row (CSV), or one JSON object per line",
        ));
    }
    Ok(rows)
}

/// One option from a JSON object of the parameters by name (what `agora study enqueue
/// --option` takes), as unit-cube coordinates.
pub fn read_option(space: &Space, json: &str) -> Result<Vec<f64>> {
    let params = box_params(space)?;
    let v: Value = serde_json::from_str(json)
        .map_err(|e| Error::invalid("option", format!("not a JSON object: {e}")))?;
    let Value::Object(obj) = v else {
        return Err(Error::invalid(
            "option",
            format!("must be a JSON object of {}", names(params)),
        ));
    };
    point_from_object(space, params, &obj, "option")
}

fn box_params(space: &Space) -> Result<&[Param]> {
    match space {
        Space::Box { params } => Ok(params),
        _ => Err(Error::invalid(
            "space",
            "importing and enqueueing need a box of named parameters; this study has a candidate set",
        )),
    }
}

fn names(params: &[Param]) -> String {
    params
        .iter()
        .map(|p| format!("`{}`", p.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A parameter's value from its text (CSV cell), by the parameter's type.
fn value_from_text(p: &Param, s: &str, field: &str) -> Result<ParamValue> {
    let s = s.trim();
    let number = || {
        s.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| Error::invalid(field, format!("`{s}` is not a finite number")))
    };
    Ok(match p {
        Param::Real { .. } | Param::LogReal { .. } => ParamValue::Float(number()?),
        Param::Integer { .. } => ParamValue::Int(
            s.parse::<i64>()
                .map_err(|_| Error::invalid(field, format!("`{s}` is not an integer")))?,
        ),
        Param::Categorical { .. } => ParamValue::Choice(s.to_string()),
    })
}

/// A parameter's value from JSON.
fn value_from_json(p: &Param, v: &Value, field: &str) -> Result<ParamValue> {
    match (p, v) {
        (Param::Real { .. } | Param::LogReal { .. }, Value::Number(n)) => n
            .as_f64()
            .map(ParamValue::Float)
            .ok_or_else(|| Error::invalid(field, "not a number")),
        (Param::Integer { .. }, Value::Number(n)) => n
            .as_i64()
            .map(ParamValue::Int)
            .ok_or_else(|| Error::invalid(field, format!("`{n}` is not an integer"))),
        (Param::Categorical { .. }, Value::String(s)) => Ok(ParamValue::Choice(s.clone())),
        (Param::Categorical { choices, .. }, _) => Err(Error::invalid(
            field,
            format!(
                "must be one of the choices as a string: {}",
                choices.join(", ")
            ),
        )),
        _ => Err(Error::invalid(field, format!("`{v}` is not a number"))),
    }
}

/// Unit-cube coordinates of user values (errors name `field.parameter`).
fn to_unit(
    space: &Space,
    params: &[Param],
    values: Vec<ParamValue>,
    field: &str,
) -> Result<Vec<f64>> {
    space.from_user(&values).map_err(|e| match e {
        Error::InvalidInput { field: f, reason } if params.iter().any(|p| p.name() == f) => {
            Error::invalid(format!("{field}{f}"), reason)
        }
        other => other,
    })
}

fn point_from_object(
    space: &Space,
    params: &[Param],
    obj: &Map<String, Value>,
    field: &str,
) -> Result<Vec<f64>> {
    let prefix = if field.is_empty() {
        String::new()
    } else {
        format!("{field}.")
    };
    if let Some(k) = obj.keys().find(|k| !params.iter().any(|p| p.name() == *k)) {
        return Err(Error::invalid(
            format!("{prefix}{k}"),
            format!(
                "not a parameter of this study; its parameters: {}",
                names(params)
            ),
        ));
    }
    let values = params
        .iter()
        .map(|p| {
            let f = format!("{prefix}{}", p.name());
            let v = obj
                .get(p.name())
                .ok_or_else(|| Error::invalid(&f, "missing"))?;
            value_from_json(p, v, &f)
        })
        .collect::<Result<Vec<_>>>()?;
    to_unit(space, params, values, &prefix)
}

fn at_line(n: usize, e: Error) -> Error {
    match e {
        Error::InvalidInput { field, reason } => {
            Error::invalid(format!("line {n}: {field}"), reason)
        }
        other => Error::invalid(format!("line {n}"), other.to_string()),
    }
}

fn read_json_lines(params: &[Param], text: &str) -> Result<Vec<Observation>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row = (|| -> Result<Observation> {
            let v: Value = serde_json::from_str(line)
                .map_err(|e| Error::invalid("row", format!("not a JSON object: {e}")))?;
            let Value::Object(obj) = v else {
                return Err(Error::invalid("row", "must be a JSON object"));
            };
            observation(params, obj)
        })()
        .map_err(|e| at_line(i + 1, e))?;
        out.push(row);
    }
    Ok(out)
}

/// The observations in `rows`, objects as a JSON-lines file holds them (what the HTTP
/// API's import and Python's `import_data` take): the first bad row is reported as
/// `line N` (the first row is line 1). An empty list gives none.
pub fn read_objects(space: &Space, rows: Vec<Map<String, Value>>) -> Result<Vec<Observation>> {
    let params = box_params(space)?;
    rows.into_iter()
        .enumerate()
        .map(|(i, obj)| observation(params, obj).map_err(|e| at_line(i + 1, e)))
        .collect()
}

/// One row: an evaluation (the parameters by name and `value`) or a comparison (`winner`
/// and `loser`, each the parameters by name).
fn observation(params: &[Param], mut obj: Map<String, Value>) -> Result<Observation> {
    let space = Space::Box {
        params: params.to_vec(),
    };
    if obj.contains_key("winner") || obj.contains_key("loser") {
        let mut side = |k: &str| -> Result<Vec<f64>> {
            match obj.remove(k) {
                Some(Value::Object(o)) => point_from_object(&space, params, &o, k),
                Some(_) => Err(Error::invalid(k, "must be an object of the parameters")),
                None => Err(Error::invalid(
                    k,
                    "missing (a comparison names winner and loser)",
                )),
            }
        };
        let winner = side("winner")?;
        let loser = side("loser")?;
        if let Some(k) = obj.keys().next() {
            return Err(Error::invalid(
                k.as_str(),
                "a comparison has only winner and loser",
            ));
        }
        return Ok(Observation::Comparison { winner, loser });
    }
    let value = match obj.remove("value") {
        Some(Value::Number(x)) => x
            .as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| Error::invalid("value", "must be a finite number"))?,
        Some(v) => return Err(Error::invalid("value", format!("`{v}` is not a number"))),
        None => {
            return Err(Error::invalid(
                "value",
                "missing: a row is an evaluation (the parameters and `value`) or a comparison (`winner`, `loser`)",
            ));
        }
    };
    let point = point_from_object(&space, params, &obj, "")?;
    Ok(Observation::Evaluation { point, value })
}

/// Split one CSV line into fields (quoted fields with `""` escapes; no newlines inside).
pub(crate) fn csv_fields(line: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', false) if cur.is_empty() => quoted = true,
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            ('"', true) => quoted = false,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    if quoted {
        return Err(Error::invalid("row", "a quoted field is not closed"));
    }
    out.push(cur);
    Ok(out)
}

fn read_csv(params: &[Param], text: &str) -> Result<Vec<Observation>> {
    let space = Space::Box {
        params: params.to_vec(),
    };
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((h, header)) = lines.next() else {
        return Ok(Vec::new());
    };
    let header: Vec<String> = csv_fields(header)
        .map_err(|e| at_line(h + 1, e))?
        .into_iter()
        .map(|s| s.trim().to_string())
        .collect();
    let col = |name: &str| header.iter().position(|c| c == name);
    let comparison = header.iter().any(|c| c.starts_with("winner."));
    // The columns each parameter is read from (per side for comparisons), and `value`.
    let sides: Vec<&str> = if comparison {
        vec!["winner.", "loser."]
    } else {
        vec![""]
    };
    let mut cols: Vec<Vec<usize>> = Vec::new();
    for side in &sides {
        let mut c = Vec::new();
        for p in params {
            let name = format!("{side}{}", p.name());
            c.push(col(&name).ok_or_else(|| {
                at_line(
                    h + 1,
                    Error::invalid(
                        "header",
                        format!(
                            "no column `{name}`; {} needs {}",
                            if comparison {
                                "a comparison"
                            } else {
                                "an evaluation"
                            },
                            if comparison {
                                "winner.NAME and loser.NAME for each parameter".to_string()
                            } else {
                                format!("{} and `value`", names(params))
                            }
                        ),
                    ),
                )
            })?);
        }
        cols.push(c);
    }
    let value_col = if comparison {
        None
    } else {
        Some(col("value").ok_or_else(|| {
            at_line(
                h + 1,
                Error::invalid(
                    "header",
                    format!(
                        "no column `value`: an evaluation needs {} and `value` (a comparison: winner.NAME and loser.NAME)",
                        names(params)
                    ),
                ),
            )
        })?)
    };
    let known: usize = cols.iter().map(Vec::len).sum::<usize>() + usize::from(value_col.is_some());
    if header.len() != known {
        let extra = header
            .iter()
            .enumerate()
            .find(|(i, _)| !cols.iter().flatten().any(|c| c == i) && Some(*i) != value_col)
            .map(|(_, c)| c.clone())
            .unwrap_or_default();
        return Err(at_line(
            h + 1,
            Error::invalid(
                "header",
                format!(
                    "unknown column `{extra}`; this study's parameters: {}",
                    names(params)
                ),
            ),
        ));
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        let row = (|| -> Result<Observation> {
            let f = csv_fields(line)?;
            if f.len() != header.len() {
                return Err(Error::invalid(
                    "row",
                    format!("has {} fields, the header {}", f.len(), header.len()),
                ));
            }
            let mut points = Vec::new();
            for (side, c) in sides.iter().zip(&cols) {
                let values = params
                    .iter()
                    .zip(c)
                    .map(|(p, &j)| value_from_text(p, &f[j], &format!("{side}{}", p.name())))
                    .collect::<Result<Vec<_>>>()?;
                points.push(to_unit(&space, params, values, side)?);
            }
            Ok(match value_col {
                Some(j) => {
                    let s = f[j].trim();
                    let value =
                        s.parse::<f64>()
                            .ok()
                            .filter(|v| v.is_finite())
                            .ok_or_else(|| {
                                Error::invalid("value", format!("`{s}` is not a finite number"))
                            })?;
                    Observation::Evaluation {
                        point: points.remove(0),
                        value,
                    }
                }
                None => {
                    let loser = points.pop().unwrap_or_default();
                    let winner = points.pop().unwrap_or_default();
                    Observation::Comparison { winner, loser }
                }
            })
        })()
        .map_err(|e| at_line(n, e))?;
        out.push(row);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> Space {
        Space::boxed(vec![
            Param::Real {
                name: "temp".into(),
                lo: 18.0,
                hi: 28.0,
            },
            Param::Integer {
                name: "fans".into(),
                lo: 0,
                hi: 3,
            },
            Param::Categorical {
                name: "light".into(),
                choices: vec!["warm".into(), "cold".into()],
            },
        ])
        .unwrap()
    }

    #[test]
    fn csv_and_json_lines_read_the_same_rows() {
        let s = space();
        let csv = "temp,fans,light,value\n20,1,warm,3.5\n\n27.5,3,\"cold\",-1\n";
        let json = "{\"temp\": 20, \"fans\": 1, \"light\": \"warm\", \"value\": 3.5}\n\
                    {\"temp\": 27.5, \"fans\": 3, \"light\": \"cold\", \"value\": -1}\n";
        let a = read_observations(&s, csv).unwrap();
        let b = read_observations(&s, json).unwrap();
        assert_eq!(a, b);
        let Observation::Evaluation { point, value } = &a[0] else {
            panic!()
        };
        // temp 20 of [18, 28] is 0.2; fans 1 of 0..=3 is the centre of its slice (1.5/4).
        assert_eq!(*value, 3.5);
        assert!((point[0] - 0.2).abs() < 1e-12);
        assert!((point[1] - 0.375).abs() < 1e-12);
        assert_eq!(&point[2..], &[1.0, 0.0]);
        let cmp = "winner.temp,winner.fans,winner.light,loser.temp,loser.fans,loser.light\n\
                   22,0,cold,19,2,warm\n";
        let c = read_observations(&s, cmp).unwrap();
        let cj = "{\"winner\": {\"temp\": 22, \"fans\": 0, \"light\": \"cold\"}, \
                  \"loser\": {\"temp\": 19, \"fans\": 2, \"light\": \"warm\"}}";
        assert_eq!(c, read_observations(&s, cj).unwrap());
        let Observation::Comparison { winner, loser } = &c[0] else {
            panic!()
        };
        assert!((winner[0] - 0.4).abs() < 1e-12 && (loser[0] - 0.1).abs() < 1e-12);
    }

    /// Every bad row is refused with its line and the field named.
    #[test]
    fn bad_rows_name_the_line_and_the_field() {
        let s = space();
        for (text, want) in [
            (
                "temp,fans,light,value\n20,1,warm,3\n35,1,warm,2\n",
                "line 3: temp",
            ),
            ("temp,fans,light,value\n20,1.5,warm,3\n", "line 2: fans"),
            ("temp,fans,light,value\n20,1,blue,3\n", "line 2: light"),
            ("temp,fans,light,value\n20,1,warm,NaN\n", "line 2: value"),
            ("temp,fans,light,value\n20,1,warm\n", "line 2: row"),
            ("temp,fans,value\n20,1,3\n", "line 1: header"),
            (
                "temp,fans,light,value,colour\n20,1,warm,3,red\n",
                "line 1: header",
            ),
            (
                "{\"temp\": 20, \"fans\": 1, \"light\": \"warm\"}\n",
                "line 1: value",
            ),
            (
                "{\"temp\": 20, \"fans\": 1, \"light\": \"warm\", \"value\": 1}\n{\"temp\": 20}\n",
                "line 2",
            ),
            (
                "{\"winner\": {\"temp\": 20, \"fans\": 1, \"light\": \"warm\"}}\n",
                "line 1: loser",
            ),
            (
                "{\"temp\": 20, \"fans\": 1, \"light\": \"warm\", \"value\": 1, \"hue\": 2}\n",
                "line 1: hue",
            ),
            ("temp,fans,light,value\n", "file"),
        ] {
            let e = read_observations(&s, text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let cands = Space::Candidates {
            features: vec![vec![0.0], vec![1.0]],
            names: vec![],
        };
        assert!(read_observations(&cands, "x,value\n0,1\n").is_err());
    }

    #[test]
    fn an_option_is_read_from_a_json_object() {
        let s = space();
        let u = read_option(&s, "{\"temp\": 28, \"fans\": 0, \"light\": \"cold\"}").unwrap();
        assert_eq!(u, vec![1.0, 0.125, 0.0, 1.0]);
        for (bad, want) in [
            ("[1, 2]", "option"),
            ("{\"temp\": 28, \"fans\": 0}", "light"),
            ("{\"temp\": 30, \"fans\": 0, \"light\": \"cold\"}", "temp"),
        ] {
            let e = read_option(&s, bad).unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }
}
