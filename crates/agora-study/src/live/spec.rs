//! What a study is, fixed when it is created: its space, its method with every knob, its
//! seed and its participants. The strategy is a function of this and the answers, so the
//! spec is stored once and every later process rebuilds the same strategy from it.
//!
//! A [`MethodSpec`] is the stored form of a method from agora's registry
//! ([`agora_methods::registry`]): its `name` is a registry alias (`pairs` is `pbo`,
//! `social` is `sbo`, ...) or `bo` with a registry method that asks only for evaluations,
//! and its other fields are the method's knobs, checked and built by the registry.

use agora_core::{Error, Result, Space};
use agora_methods::Strategy;
use agora_methods::registry::{self, Feedback, KnobDefault, Method, Setup};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A study's fixed definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StudySpec {
    /// The study's id: 1–64 characters of `a-z`, `0-9`, `-`, `_`.
    #[cfg_attr(feature = "openapi", schema(pattern = "^[a-z0-9_-]{1,64}$"))]
    pub name: String,
    /// What is being optimized, for people reading the page (optional).
    #[serde(default)]
    pub description: String,
    /// The options: a box of named parameters or a finite candidate set.
    pub space: Space,
    /// The method and its knobs.
    pub method: MethodSpec,
    /// Seed of every random choice the method makes.
    #[serde(default)]
    pub seed: u64,
    /// Who answers: the group's members (group votes, in this order), the single rater
    /// (pairs), the expert, or the parties. Names are 1–40 printable characters.
    #[serde(default)]
    pub participants: Vec<String>,
    /// A time limit for each group vote, 1 s to one week (`ROUND_SECONDS`): when it passes,
    /// the round closes itself as the facilitator's **Close round** would (missing votes
    /// count as "can't tell"). Rating rounds need every rating and have no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 604_800))]
    pub round_seconds: Option<u64>,
    /// For a candidate set: each candidate's media (a text description, a link, or an
    /// image or sound file), in the candidates' order, null for none; people see them beside
    /// the options. Empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<Option<super::media::Media>>,
}

/// The allowed round time limits, in seconds: one second to one week.
pub const ROUND_SECONDS: std::ops::RangeInclusive<u64> = 1..=604_800;

/// The methods a study can run, each with the knobs a facilitator may set (the rest keep
/// the paper's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum MethodSpec {
    /// BO on measured values with any registry method that asks only for evaluations
    /// (`random`, `sobol`, `gp-logei`, `gp-ei`, `gp-pi`, `gp-ucb`, `gp-ts`, ...).
    Bo {
        /// The registry method's name.
        #[serde(default = "default_bo")]
        strategy: String,
    },
    /// One rater compares pairs (preferential BO).
    Pairs {
        /// Pair rule: `eubo`, `bald` or `winner` (incumbent against the EUBO pick).
        #[serde(default = "default_rule")]
        rule: String,
        /// `equal` (every rater has the model's noise) or `learned` (a noise scale per
        /// rater the answers name).
        #[serde(default = "default_raters")]
        raters: String,
    },
    /// The group votes publicly on each pair; the majority's choice is learned from
    /// (`raters = "learned"`: every vote, with a noise scale learned per member).
    GroupPairs {
        /// Pair rule: `eubo`, `bald` or `winner`.
        #[serde(default = "default_rule")]
        rule: String,
        /// `equal` (the majority is one comparison) or `learned` (each vote a comparison,
        /// a noise scale learned per member, so a random voter gets little weight).
        #[serde(default = "default_raters")]
        raters: String,
    },
    /// Social BO: public votes every round, private votes when the graph is uncertain.
    Social {
        /// Variant: `sbo`, `private-only`, `single-agent`, `independent`.
        #[serde(default = "default_social")]
        variant: String,
        /// Gini weight ρ of the welfare in (0, 1] (1: utilitarian; small: egalitarian).
        #[serde(default = "default_rho")]
        rho: f64,
        /// Private-vote decay q in (0, 1).
        #[serde(default = "default_q")]
        q: f64,
        /// Random initial pairs.
        #[serde(default = "default_init_pairs")]
        init_pairs: usize,
        /// RBF lengthscale on the unit cube.
        #[serde(default = "default_lengthscale")]
        lengthscale: f64,
        /// Candidates screened per round.
        #[serde(default = "default_candidates")]
        candidates: usize,
    },
    /// Social BO's GP variant (App. F.1): everyone rates one option per round on a number
    /// scale, publicly every round and privately when the influence is uncertain.
    SocialRatings {
        /// Gini weight ρ of the welfare in (0, 1].
        #[serde(default = "default_rho")]
        rho: f64,
        /// Private-rating decay q in (0, 1).
        #[serde(default = "default_q")]
        q: f64,
        /// Random initial options rated on both channels.
        #[serde(default = "default_init_pairs")]
        init: usize,
    },
    /// Heteroscedastic preferential BO: duels whose noise is known to be low near anchors.
    Hpbo {
        /// Acquisition: `ei`, `ucb`, `anpei`.
        #[serde(default = "default_hpbo_acq")]
        acquisition: String,
        /// Anchors in user units (rows of the space's real parameters).
        #[serde(default)]
        anchors: Vec<Vec<f64>>,
        /// Noise variance far from every anchor.
        #[serde(default = "default_hpbo_a")]
        a: f64,
    },
    /// BOAP: measured values plus an expert's comparisons on abstract properties.
    Boap {
        /// The properties the expert compares (e.g. `stiffness`).
        properties: Vec<String>,
        /// Initial designs.
        #[serde(default = "default_boap_init")]
        init: usize,
    },
}

fn default_bo() -> String {
    "gp-logei".into()
}
fn default_raters() -> String {
    "equal".into()
}

fn default_rule() -> String {
    "eubo".into()
}
fn default_social() -> String {
    "sbo".into()
}
fn default_rho() -> f64 {
    1.0
}
fn default_q() -> f64 {
    0.5
}
fn default_init_pairs() -> usize {
    5
}
fn default_lengthscale() -> f64 {
    0.2
}
fn default_candidates() -> usize {
    128
}
fn default_hpbo_acq() -> String {
    "ei".into()
}
fn default_hpbo_a() -> f64 {
    1.0
}
fn default_boap_init() -> usize {
    5
}

/// The study forms of [`MethodSpec`] (the `name` of a stored method). Every name except
/// `bo` is an alias in the method registry; `from_knobs` also accepts any registry name
/// that has a study form.
pub const METHOD_NAMES: &[&str] = &[
    "bo",
    "pairs",
    "group-pairs",
    "social",
    "social-ratings",
    "hpbo",
    "boap",
];

/// Whether a registry method runs as a `bo` study: it asks only for evaluations, needs no
/// participants and has a default for every knob.
fn is_bo(m: &Method) -> bool {
    m.feedback == [Feedback::Evaluations]
        && m.participants.is_none()
        && m.knobs
            .iter()
            .all(|k| matches!(k.default, KnobDefault::Value(_)))
}

/// The registry methods a `bo` study can run.
fn bo_names() -> Vec<&'static str> {
    registry::methods()
        .iter()
        .filter(|m| is_bo(m))
        .map(|m| m.name)
        .collect()
}

/// Whether `s` is a valid study or participant name.
fn check_name(field: &str, s: &str, max: usize, strict: bool) -> Result<()> {
    let ok_char = |c: char| {
        if strict {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'
        } else {
            !c.is_control()
        }
    };
    if s.is_empty() || s.chars().count() > max || !s.chars().all(ok_char) || s.trim() != s {
        let allowed = if strict {
            "a-z, 0-9, '-' and '_'"
        } else {
            "printable characters, no leading or trailing spaces"
        };
        return Err(Error::invalid(
            field,
            format!("must be 1 to {max} characters of {allowed}; got {s:?}"),
        ));
    }
    Ok(())
}

impl StudySpec {
    /// Check every field; errors name the field and the allowed values.
    pub fn validate(&self) -> Result<()> {
        check_name("name", &self.name, 64, true)?;
        self.space.validate()?;
        for (i, p) in self.participants.iter().enumerate() {
            check_name(&format!("participants[{i}]"), p, 40, false)?;
            if self.participants[..i].contains(p) {
                return Err(Error::invalid(
                    format!("participants[{i}]"),
                    format!("names must be distinct; {p:?} appears twice"),
                ));
            }
        }
        if let Some(t) = self.round_seconds
            && !ROUND_SECONDS.contains(&t)
        {
            return Err(Error::invalid(
                "round_seconds",
                format!(
                    "{t} is out of range: a round's time limit is {} to {} seconds",
                    ROUND_SECONDS.start(),
                    ROUND_SECONDS.end()
                ),
            ));
        }
        super::media::check_spec_media(&self.space, &self.media)?;
        // Building the strategy checks the participants and the knobs.
        self.build().map(|_| ())
    }

    /// The strategy this spec defines, in its initial state (built by the registry).
    pub fn build(&self) -> Result<Box<dyn Strategy>> {
        let (name, knobs) = self.method.registry_call()?;
        let setup =
            Setup::new(self.space.clone(), self.seed).with_participants(self.participants.clone());
        registry::build(name, &knobs, setup)
    }
}

impl MethodSpec {
    /// What a recommendation's value means for this method.
    pub fn value_meaning(&self) -> &'static str {
        match self {
            MethodSpec::Bo { .. } | MethodSpec::Boap { .. } => {
                "the best value measured so far (larger is better)"
            }
            MethodSpec::Pairs { .. } | MethodSpec::GroupPairs { .. } | MethodSpec::Hpbo { .. } => {
                "the model's utility, on the latent scale of the comparisons (only differences \
                 between options mean something)"
            }
            MethodSpec::Social { .. } | MethodSpec::SocialRatings { .. } => {
                "the group's welfare (Gini-weighted utilities) estimated from the votes; only \
                 differences between options mean something"
            }
        }
    }

    /// The method's name as written in a spec.
    pub fn name(&self) -> &'static str {
        match self {
            MethodSpec::Bo { .. } => "bo",
            MethodSpec::Pairs { .. } => "pairs",
            MethodSpec::GroupPairs { .. } => "group-pairs",
            MethodSpec::Social { .. } => "social",
            MethodSpec::SocialRatings { .. } => "social-ratings",
            MethodSpec::Hpbo { .. } => "hpbo",
            MethodSpec::Boap { .. } => "boap",
        }
    }

    /// The registry method this spec runs and its knobs: the spec's fields (for `bo`, the
    /// method named by `strategy`, which must ask only for evaluations).
    fn registry_call(&self) -> Result<(&str, Vec<(String, Value)>)> {
        if let MethodSpec::Bo { strategy } = self {
            let not_bo = || Error::unknown("method.strategy", strategy, &bo_names());
            let (m, _) = registry::find(strategy).map_err(|_| not_bo())?;
            return if is_bo(m) {
                Ok((strategy, Vec::new()))
            } else {
                Err(not_bo())
            };
        }
        let Ok(Value::Object(fields)) = serde_json::to_value(self) else {
            return Err(Error::State("a method spec serializes to an object".into()));
        };
        let knobs = fields.into_iter().filter(|(k, _)| k != "name").collect();
        Ok((self.name(), knobs))
    }

    /// A method from its name and `key=value` knobs (values parsed as JSON where they parse,
    /// strings otherwise). The name is a study form ([`METHOD_NAMES`]) or any registry name
    /// with one (`pbo-bald` is `pairs` with `rule=bald`, `gp-ei` is `bo` with
    /// `strategy=gp-ei`). Unknown names and knobs are errors listing the allowed ones;
    /// values are checked when the spec is validated.
    pub fn from_knobs(name: &str, knobs: &[(String, String)]) -> Result<MethodSpec> {
        let (form, fixed, allowed): (&str, Vec<(&str, Value)>, Vec<&str>) = if name == "bo" {
            ("bo", Vec::new(), vec!["strategy"])
        } else {
            let (m, fixed) = registry::find(name).map_err(|_| {
                let mut known = METHOD_NAMES.to_vec();
                known.extend(registry::names());
                Error::unknown("method", name, &known)
            })?;
            let fixed: Vec<(&str, Value)> = fixed
                .iter()
                .map(|(k, v)| (*k, registry::parse_text(v)))
                .collect();
            let form = METHOD_NAMES
                .iter()
                .find(|f| registry::find(f).is_ok_and(|(s, _)| s.name == m.name));
            match form {
                Some(form) => (form, fixed, m.knobs.iter().map(|k| k.name).collect()),
                None if is_bo(m) => ("bo", vec![("strategy", m.name.into())], vec![]),
                None => {
                    return Err(Error::invalid(
                        "method",
                        format!(
                            "{} cannot run as a study yet; studies run {} and the bo \
                             strategies {}",
                            m.name,
                            METHOD_NAMES[1..].join(", "),
                            bo_names().join(", ")
                        ),
                    ));
                }
            }
        };
        let mut obj = serde_json::Map::new();
        obj.insert("name".into(), form.into());
        for (k, v) in &fixed {
            obj.insert(k.to_string(), v.clone());
        }
        for (k, v) in knobs {
            if !allowed.contains(&k.as_str()) {
                return Err(Error::unknown("method knob", k, &allowed));
            }
            let value = registry::parse_text(v);
            if let Some((_, f)) = fixed.iter().find(|(n, _)| n == k)
                && *f != value
            {
                return Err(Error::invalid(
                    format!("method.{k}"),
                    format!("is fixed to {f} by the method name {name}; got {v}"),
                ));
            }
            obj.insert(k.clone(), value);
        }
        serde_json::from_value(obj.into()).map_err(|e| {
            Error::invalid(
                "method",
                format!("{e} (method {name}; see `agora list` for its knobs)"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(method: MethodSpec, participants: &[&str]) -> StudySpec {
        StudySpec {
            name: "s1".into(),
            description: String::new(),
            space: Space::reals(&[(0.0, 1.0), (10.0, 20.0)]).unwrap(),
            method,
            seed: 1,
            participants: participants.iter().map(|s| s.to_string()).collect(),
            round_seconds: None,
            media: Vec::new(),
        }
    }

    #[test]
    fn specs_round_trip_and_build() {
        let m = MethodSpec::from_knobs("social", &[("rho".into(), "0.3".into())]).unwrap();
        let s = spec(m, &["ann", "bo", "cy"]);
        s.validate().unwrap();
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<StudySpec>(&json).unwrap(), s);
        for name in METHOD_NAMES {
            let knobs: Vec<(String, String)> = match *name {
                "boap" => vec![("properties".into(), r#"["stiffness"]"#.into())],
                "hpbo" => vec![("anchors".into(), "[[0.5, 15.0], [0.2, 12.0]]".into())],
                _ => vec![],
            };
            let m = MethodSpec::from_knobs(name, &knobs).unwrap();
            spec(m, &["ann", "bo", "cy"]).validate().unwrap();
        }
    }

    #[test]
    fn stored_defaults_are_the_registry_defaults_and_registry_names_have_study_forms() {
        for form in &METHOD_NAMES[1..] {
            let required: Vec<(String, String)> = registry::find(form)
                .unwrap()
                .0
                .knobs
                .iter()
                .filter(|k| k.default_text().is_none())
                .map(|k| (k.name.to_string(), k.default_or_example().to_string()))
                .collect();
            let m = MethodSpec::from_knobs(form, &required).unwrap();
            let (name, knobs) = m.registry_call().unwrap();
            let (method, _) = registry::find(name).unwrap();
            for (k, v) in knobs {
                let knob = method.knobs.iter().find(|x| x.name == k).unwrap();
                if let Some(d) = knob.default_text() {
                    assert_eq!(registry::parse_text(d), v, "{form}.{k}");
                }
            }
        }
        assert_eq!(
            MethodSpec::from_knobs("bo", &[]).unwrap(),
            MethodSpec::Bo {
                strategy: "gp-logei".into()
            }
        );
        let m = MethodSpec::from_knobs("pbo-bald", &[]).unwrap();
        assert_eq!(
            m,
            MethodSpec::Pairs {
                rule: "bald".into(),
                raters: "equal".into()
            }
        );
        let m = MethodSpec::from_knobs("sbo", &[("rho".into(), "0.5".into())]).unwrap();
        assert!(matches!(m, MethodSpec::Social { rho: 0.5, .. }), "{m:?}");
        let m = MethodSpec::from_knobs("gp-ucb", &[]).unwrap();
        assert_eq!(
            m,
            MethodSpec::Bo {
                strategy: "gp-ucb".into()
            }
        );
        let e = MethodSpec::from_knobs("pbo-bald", &[("rule".into(), "eubo".into())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("method.rule") && e.contains("fixed"), "{e}");
        let e = MethodSpec::from_knobs("cbo", &[]).unwrap_err().to_string();
        assert!(e.contains("cannot run as a study"), "{e}");
        let m = MethodSpec::Bo {
            strategy: "pbo-eubo".into(),
        };
        let e = spec(m, &[]).validate().unwrap_err().to_string();
        assert!(e.contains("method.strategy") && e.contains("gp-ts"), "{e}");
    }

    #[test]
    fn bad_specs_name_the_field_and_the_allowed_values() {
        let e = MethodSpec::from_knobs("magic", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("method") && e.contains("social"), "{e}");
        let e = MethodSpec::from_knobs("social", &[("rhoo".into(), "0.3".into())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("rhoo") && e.contains("rho"), "{e}");
        let m = MethodSpec::from_knobs("social", &[("rho".into(), "2".into())]).unwrap();
        let e = spec(m, &["a", "b"]).validate().unwrap_err().to_string();
        assert!(e.contains("method.rho") && e.contains("(0, 1]"), "{e}");
        let m = MethodSpec::from_knobs("social", &[]).unwrap();
        let e = spec(m, &["a"]).validate().unwrap_err().to_string();
        assert!(e.contains("participants"), "{e}");
        let m = MethodSpec::from_knobs("bo", &[("strategy".into(), "gp-zz".into())]).unwrap();
        let e = spec(m, &[]).validate().unwrap_err().to_string();
        assert!(
            e.contains("method.strategy") && e.contains("gp-logei"),
            "{e}"
        );
        let mut s = spec(MethodSpec::from_knobs("pairs", &[]).unwrap(), &["a", "a"]);
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("participants[1]"), "{e}");
        s.participants.clear();
        s.name = "Bad Name".into();
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("`name`") && e.contains("a-z"), "{e}");
    }
}
