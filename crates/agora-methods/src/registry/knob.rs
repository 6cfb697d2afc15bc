//! A method's knobs: what each accepts, and a set of given values checked against them.
//!
//! Knob values arrive as JSON (a study spec, the HTTP API) or as `key=value` text (the CLI,
//! read as JSON where it parses and as a string otherwise, [`parse_text`]). Every error
//! names the knob as `method.<knob>` (the field of a study spec) and says what is allowed.

use agora_core::{Error, Result};
use serde_json::Value;

/// What values a knob accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KnobKind {
    /// A finite number in a range; an infinite bound means no bound on that side.
    Real {
        /// Lower bound.
        min: f64,
        /// Whether the lower bound itself is excluded.
        min_open: bool,
        /// Upper bound (`f64::INFINITY`: none).
        max: f64,
        /// Whether the upper bound itself is excluded.
        max_open: bool,
    },
    /// A whole number in `min..=max`.
    Integer {
        /// Smallest allowed.
        min: usize,
        /// Largest allowed (`usize::MAX`: none).
        max: usize,
    },
    /// One of a fixed list of words.
    Choice(&'static [&'static str]),
    /// A list of names.
    Names,
    /// Rows of finite numbers (e.g. points in the space's user units).
    Rows,
}

impl KnobKind {
    /// A finite number `> min` (`min_open`) or `>= min`, without upper bound.
    pub const fn at_least(min: f64, min_open: bool) -> KnobKind {
        KnobKind::Real {
            min,
            min_open,
            max: f64::INFINITY,
            max_open: true,
        }
    }

    /// A whole number `>= min`.
    pub const fn count(min: usize) -> KnobKind {
        KnobKind::Integer {
            min,
            max: usize::MAX,
        }
    }

    /// What is allowed, in words (`a number in (0, 1]`, `one of eubo, bald, winner`).
    pub fn allowed(&self) -> String {
        match *self {
            KnobKind::Real {
                min,
                min_open,
                max,
                max_open,
            } => match (min.is_finite(), max.is_finite()) {
                (true, true) => format!(
                    "a number in {}{min}, {max}{}",
                    if min_open { "(" } else { "[" },
                    if max_open { ")" } else { "]" }
                ),
                (true, false) => {
                    format!("a number {} {min}", if min_open { ">" } else { ">=" })
                }
                (false, true) => {
                    format!("a number {} {max}", if max_open { "<" } else { "<=" })
                }
                (false, false) => "a finite number".into(),
            },
            KnobKind::Integer { min, max } if max == usize::MAX => {
                format!("an integer >= {min}")
            }
            KnobKind::Integer { min, max } => format!("an integer from {min} to {max}"),
            KnobKind::Choice(words) => format!("one of {}", words.join(", ")),
            KnobKind::Names => "a list of names".into(),
            KnobKind::Rows => "a list of rows of numbers".into(),
        }
    }

    /// `value` as this kind, or an error naming `method.<knob>` and what is allowed.
    fn parse(&self, knob: &str, value: &Value) -> Result<KnobValue> {
        let field = format!("method.{knob}");
        let bad = || Error::invalid(&field, format!("must be {}; got {value}", self.allowed()));
        match *self {
            KnobKind::Real {
                min,
                min_open,
                max,
                max_open,
            } => {
                let v = value.as_f64().filter(|v| v.is_finite()).ok_or_else(bad)?;
                let above = if min_open { v > min } else { v >= min };
                let below = if max_open { v < max } else { v <= max };
                if above && below {
                    Ok(KnobValue::Real(v))
                } else {
                    Err(bad())
                }
            }
            KnobKind::Integer { min, max } => {
                let v = value
                    .as_u64()
                    .and_then(|v| usize::try_from(v).ok())
                    .filter(|v| (min..=max).contains(v))
                    .ok_or_else(bad)?;
                Ok(KnobValue::Integer(v))
            }
            KnobKind::Choice(words) => {
                let Some(s) = value.as_str() else {
                    return Err(bad());
                };
                if words.contains(&s) {
                    Ok(KnobValue::Choice(s.to_string()))
                } else {
                    Err(Error::unknown(&field, s, words))
                }
            }
            KnobKind::Names => {
                let names = value
                    .as_array()
                    .ok_or_else(bad)?
                    .iter()
                    .map(|n| n.as_str().map(str::to_string).ok_or_else(bad))
                    .collect::<Result<Vec<_>>>()?;
                Ok(KnobValue::Names(names))
            }
            KnobKind::Rows => {
                let rows = value
                    .as_array()
                    .ok_or_else(bad)?
                    .iter()
                    .map(|row| {
                        row.as_array()
                            .ok_or_else(bad)?
                            .iter()
                            .map(|v| v.as_f64().filter(|v| v.is_finite()).ok_or_else(bad))
                            .collect::<Result<Vec<_>>>()
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(KnobValue::Rows(rows))
            }
        }
    }
}

/// A knob's default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KnobDefault {
    /// This value (as `key=value` text, see [`parse_text`]).
    Value(&'static str),
    /// No default: the knob must be given. The example is a valid value on the unit square
    /// `[0, 1]²` with two participants (what `agora list` shows and the contract test uses).
    Required {
        /// An example value.
        example: &'static str,
    },
}

/// One setting of a method.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Knob {
    /// Its name (the key in a study spec's `method` object).
    pub name: &'static str,
    /// The values it accepts.
    pub kind: KnobKind,
    /// Its default.
    pub default: KnobDefault,
    /// What it does, in one line.
    pub doc: &'static str,
}

impl Knob {
    /// The default as text (`None` for a required knob).
    pub fn default_text(&self) -> Option<&'static str> {
        match self.default {
            KnobDefault::Value(v) => Some(v),
            KnobDefault::Required { .. } => None,
        }
    }

    /// The default, or for a required knob its example.
    pub fn default_or_example(&self) -> &'static str {
        match self.default {
            KnobDefault::Value(v) | KnobDefault::Required { example: v } => v,
        }
    }
}

/// A checked knob value.
#[derive(Debug, Clone, PartialEq)]
pub enum KnobValue {
    /// A number.
    Real(f64),
    /// A whole number.
    Integer(usize),
    /// A word from the knob's list.
    Choice(String),
    /// Names.
    Names(Vec<String>),
    /// Rows of numbers.
    Rows(Vec<Vec<f64>>),
}

impl KnobValue {
    /// As JSON (what a study spec stores).
    pub fn to_json(&self) -> Value {
        match self {
            KnobValue::Real(v) => Value::from(*v),
            KnobValue::Integer(v) => Value::from(*v),
            KnobValue::Choice(s) => Value::from(s.as_str()),
            KnobValue::Names(n) => Value::from(n.clone()),
            KnobValue::Rows(r) => Value::from(r.clone()),
        }
    }
}

/// Read `key=value` text as a knob value: JSON where it parses (`0.3`, `[1, 2]`,
/// `["a"]`), a string otherwise (`eubo`).
pub fn parse_text(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::from(text))
}

/// Every knob of a method with its checked value (given, fixed by the alias used, or the
/// default), in the method's knob order.
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    values: Vec<(&'static str, KnobValue)>,
}

impl Knobs {
    /// Check `given` against `knobs`: unknown names are [`Error::UnknownId`] listing the
    /// knobs; `fixed` (set by an alias such as `pbo-bald`) may not be given a different
    /// value; missing knobs take their default, and a missing required knob is an error
    /// showing an example.
    pub fn check(
        knobs: &'static [Knob],
        fixed: &[(&'static str, &'static str)],
        given: &[(String, Value)],
    ) -> Result<Knobs> {
        let names: Vec<&str> = knobs.iter().map(|k| k.name).collect();
        for (i, (name, _)) in given.iter().enumerate() {
            if !names.contains(&name.as_str()) {
                return Err(Error::unknown("method knob", name, &names));
            }
            if given[..i].iter().any(|(n, _)| n == name) {
                return Err(Error::invalid(format!("method.{name}"), "is given twice"));
            }
        }
        let mut values = Vec::with_capacity(knobs.len());
        for k in knobs {
            let given = given.iter().find(|(n, _)| n == k.name).map(|(_, v)| v);
            let fixed = fixed.iter().find(|(n, _)| *n == k.name).map(|(_, v)| *v);
            let value = match (given, fixed, k.default) {
                (Some(g), Some(f), _) => {
                    let v = k.kind.parse(k.name, g)?;
                    if v != k.kind.parse(k.name, &parse_text(f))? {
                        return Err(Error::invalid(
                            format!("method.{}", k.name),
                            format!("is fixed to {f} by the method name; got {g}"),
                        ));
                    }
                    v
                }
                (Some(g), None, _) => k.kind.parse(k.name, g)?,
                (None, Some(text), _) | (None, None, KnobDefault::Value(text)) => {
                    k.kind.parse(k.name, &parse_text(text))?
                }
                (None, None, KnobDefault::Required { example }) => {
                    return Err(Error::invalid(
                        format!("method.{}", k.name),
                        format!(
                            "is required ({}: {}); e.g. {example}",
                            k.kind.allowed(),
                            k.doc
                        ),
                    ));
                }
            };
            values.push((k.name, value));
        }
        Ok(Knobs { values })
    }

    /// Every knob and its value.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &KnobValue)> {
        self.values.iter().map(|(n, v)| (*n, v))
    }

    fn get(&self, name: &str) -> Result<&KnobValue> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| Error::State(format!("the method has no knob `{name}`")))
    }

    fn mismatch(name: &str, want: &str) -> Error {
        Error::State(format!("knob `{name}` is not {want}"))
    }

    /// A number knob.
    pub fn real(&self, name: &str) -> Result<f64> {
        match self.get(name)? {
            KnobValue::Real(v) => Ok(*v),
            KnobValue::Integer(v) => Ok(*v as f64),
            _ => Err(Self::mismatch(name, "a number")),
        }
    }

    /// A whole-number knob.
    pub fn integer(&self, name: &str) -> Result<usize> {
        match self.get(name)? {
            KnobValue::Integer(v) => Ok(*v),
            _ => Err(Self::mismatch(name, "an integer")),
        }
    }

    /// A choice knob.
    pub fn choice(&self, name: &str) -> Result<&str> {
        match self.get(name)? {
            KnobValue::Choice(v) => Ok(v),
            _ => Err(Self::mismatch(name, "a choice")),
        }
    }

    /// A list-of-names knob.
    pub fn names(&self, name: &str) -> Result<&[String]> {
        match self.get(name)? {
            KnobValue::Names(v) => Ok(v),
            _ => Err(Self::mismatch(name, "a list of names")),
        }
    }

    /// A rows-of-numbers knob.
    pub fn rows(&self, name: &str) -> Result<&[Vec<f64>]> {
        match self.get(name)? {
            KnobValue::Rows(v) => Ok(v),
            _ => Err(Self::mismatch(name, "rows of numbers")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOBS: &[Knob] = &[
        Knob {
            name: "rho",
            kind: KnobKind::Real {
                min: 0.0,
                min_open: true,
                max: 1.0,
                max_open: false,
            },
            default: KnobDefault::Value("1"),
            doc: "welfare weight",
        },
        Knob {
            name: "rule",
            kind: KnobKind::Choice(&["eubo", "bald"]),
            default: KnobDefault::Value("eubo"),
            doc: "pair rule",
        },
        Knob {
            name: "init",
            kind: KnobKind::count(2),
            default: KnobDefault::Value("5"),
            doc: "initial designs",
        },
        Knob {
            name: "properties",
            kind: KnobKind::Names,
            default: KnobDefault::Required {
                example: r#"["taste"]"#,
            },
            doc: "what the expert compares",
        },
    ];

    fn given(kv: &[(&str, &str)]) -> Vec<(String, Value)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), parse_text(v)))
            .collect()
    }

    #[test]
    fn defaults_fixed_values_and_given_values() {
        let k = Knobs::check(
            KNOBS,
            &[("rule", "bald")],
            &given(&[("properties", "[\"a\"]")]),
        )
        .unwrap();
        assert_eq!(k.real("rho").unwrap(), 1.0);
        assert_eq!(k.choice("rule").unwrap(), "bald");
        assert_eq!(k.integer("init").unwrap(), 5);
        assert_eq!(k.names("properties").unwrap(), ["a".to_string()]);
        assert!(k.rows("rho").is_err() && k.real("nope").is_err());
        let k = Knobs::check(KNOBS, &[], &given(&[("properties", "[]"), ("rho", "0.25")])).unwrap();
        assert_eq!(k.real("rho").unwrap(), 0.25);
        assert_eq!(k.iter().count(), 4);
    }

    #[test]
    fn bad_knobs_name_the_field_and_the_allowed_values() {
        let props = ("properties", "[\"a\"]");
        let msg = |kv: &[(&str, &str)], fixed: &[(&'static str, &'static str)]| {
            Knobs::check(KNOBS, fixed, &given(kv))
                .unwrap_err()
                .to_string()
        };
        let e = msg(&[("rhoo", "0.3"), props], &[]);
        assert!(e.contains("`rhoo`") && e.contains("rho, rule, init"), "{e}");
        let e = msg(&[("rho", "2"), props], &[]);
        assert!(e.contains("method.rho") && e.contains("(0, 1]"), "{e}");
        let e = msg(&[("rho", "0"), props], &[]);
        assert!(e.contains("(0, 1]"), "{e}");
        let e = msg(&[("rho", "x"), props], &[]);
        assert!(e.contains("method.rho"), "{e}");
        let e = msg(&[("rule", "magic"), props], &[]);
        assert!(e.contains("method.rule") && e.contains("eubo, bald"), "{e}");
        let e = msg(&[("init", "1"), props], &[]);
        assert!(e.contains("method.init") && e.contains(">= 2"), "{e}");
        let e = msg(&[("init", "2.5"), props], &[]);
        assert!(e.contains("method.init"), "{e}");
        let e = msg(&[], &[]);
        assert!(
            e.contains("method.properties") && e.contains("required") && e.contains("taste"),
            "{e}"
        );
        let e = msg(&[("rule", "eubo"), props], &[("rule", "bald")]);
        assert!(e.contains("fixed to bald"), "{e}");
        assert!(msg(&[("rho", "1"), ("rho", "1"), props], &[]).contains("twice"));
        let e = msg(&[("properties", "[1]")], &[]);
        assert!(e.contains("list of names"), "{e}");
    }

    #[test]
    fn allowed_values_read_as_words() {
        assert_eq!(KnobKind::at_least(0.0, true).allowed(), "a number > 0");
        assert_eq!(KnobKind::at_least(0.0, false).allowed(), "a number >= 0");
        assert_eq!(
            KnobKind::Integer { min: 2, max: 6 }.allowed(),
            "an integer from 2 to 6"
        );
        assert_eq!(parse_text("eubo"), Value::from("eubo"));
        assert_eq!(parse_text("[[1, 2]]"), serde_json::json!([[1, 2]]));
    }
}
