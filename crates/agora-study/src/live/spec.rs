//! What a study is, fixed when it is created: its space, its method with every knob, its
//! seed and its participants. The strategy is a function of this and the answers, so the
//! spec is stored once and every later process rebuilds the same strategy from it.

use agora_core::{Error, Result, Space};
use agora_methods::{
    ArmRule, Boap, BoapConfig, BoapVariant, GroupPbo, Hpbo, HpboConfig, PairRule, Pbo, PboConfig,
    Sbo, SboConfig, SboVariant, Strategy,
};
use serde::{Deserialize, Serialize};

/// A study's fixed definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudySpec {
    /// The study's id: 1–64 characters of `a-z`, `0-9`, `-`, `_`.
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
}

/// The methods a study can run, each with the knobs a facilitator may set (the rest keep
/// the paper's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum MethodSpec {
    /// Standard BO on measured values: `random`, `sobol`, `gp-logei`, `gp-ei`, `gp-pi`,
    /// `gp-ucb`, `gp-ts`.
    Bo {
        /// Strategy name.
        #[serde(default = "default_bo")]
        strategy: String,
    },
    /// One rater compares pairs (preferential BO).
    Pairs {
        /// Pair rule: `eubo`, `bald` or `winner` (incumbent against the EUBO pick).
        #[serde(default = "default_rule")]
        rule: String,
    },
    /// The group votes publicly on each pair; the majority's choice is learned from.
    GroupPairs {
        /// Pair rule: `eubo`, `bald` or `winner`.
        #[serde(default = "default_rule")]
        rule: String,
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

/// Method names accepted in [`MethodSpec`].
pub const METHOD_NAMES: &[&str] = &[
    "bo",
    "pairs",
    "group-pairs",
    "social",
    "social-ratings",
    "hpbo",
    "boap",
];

fn pair_rule(rule: &str) -> Result<PairRule> {
    match rule {
        "eubo" => Ok(PairRule::Eubo),
        "bald" => Ok(PairRule::Bald),
        "winner" => Ok(PairRule::WinnerVsEubo),
        _ => Err(Error::unknown(
            "method.rule",
            rule,
            &["eubo", "bald", "winner"],
        )),
    }
}

/// Social BO's welfare weight ρ ∈ (0, 1] and private-vote decay q ∈ (0, 1).
fn check_rho_q(rho: f64, q: f64) -> Result<()> {
    if !(rho > 0.0 && rho <= 1.0) {
        return Err(Error::invalid(
            "method.rho",
            format!("must lie in (0, 1]; got {rho}"),
        ));
    }
    if !(q > 0.0 && q < 1.0) {
        return Err(Error::invalid(
            "method.q",
            format!("must lie in (0, 1); got {q}"),
        ));
    }
    Ok(())
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
        let need = |lo: usize, what: &str| -> Result<()> {
            if self.participants.len() < lo {
                return Err(Error::invalid(
                    "participants",
                    format!(
                        "method {} needs {what}; got {}",
                        self.method.name(),
                        self.participants.len()
                    ),
                ));
            }
            Ok(())
        };
        match &self.method {
            MethodSpec::GroupPairs { .. } => need(1, "at least one participant")?,
            MethodSpec::Social { .. } | MethodSpec::SocialRatings { .. } => {
                need(2, "at least two participants (the group)")?
            }
            _ => {}
        }
        if matches!(self.method, MethodSpec::Social { .. }) && self.participants.len() > 6 {
            return Err(Error::invalid(
                "participants",
                format!(
                    "Social BO's welfare bound grows with n! (n = {}); it supports 2 to 6 \
                     participants. Use method group-pairs for larger groups",
                    self.participants.len()
                ),
            ));
        }
        // Building the strategy checks the knobs.
        self.build().map(|_| ())
    }

    /// The strategy this spec defines, in its initial state.
    pub fn build(&self) -> Result<Box<dyn Strategy>> {
        let space = self.space.clone();
        let seed = self.seed;
        Ok(match &self.method {
            MethodSpec::Bo { strategy } => {
                if strategy.starts_with("pbo-") {
                    return Err(Error::unknown(
                        "method.strategy",
                        strategy,
                        agora_methods::method_names(),
                    ));
                }
                agora_methods::by_name(strategy, space, seed).map_err(|e| match e {
                    Error::UnknownId { id, hint, .. } => Error::UnknownId {
                        kind: "method.strategy".into(),
                        id,
                        hint,
                    },
                    e => e,
                })?
            }
            MethodSpec::Pairs { rule } => {
                Box::new(Pbo::new(space, PboConfig::new(pair_rule(rule)?), seed)?)
            }
            MethodSpec::GroupPairs { rule } => Box::new(GroupPbo::new(
                space,
                PboConfig::new(pair_rule(rule)?),
                self.participants.clone(),
                seed,
            )?),
            MethodSpec::Social {
                variant,
                rho,
                q,
                init_pairs,
                lengthscale,
                candidates,
            } => {
                let v = match variant.as_str() {
                    "sbo" => SboVariant::Sbo,
                    "private-only" => SboVariant::PrivateOnly,
                    "single-agent" => SboVariant::SingleAgent,
                    "independent" => SboVariant::Independent,
                    _ => {
                        return Err(Error::unknown(
                            "method.variant",
                            variant,
                            &["sbo", "private-only", "single-agent", "independent"],
                        ));
                    }
                };
                check_rho_q(*rho, *q)?;
                if !(*lengthscale > 0.0 && lengthscale.is_finite()) {
                    return Err(Error::invalid(
                        "method.lengthscale",
                        format!("must be a positive number; got {lengthscale}"),
                    ));
                }
                if *candidates == 0 || *init_pairs == 0 {
                    return Err(Error::invalid(
                        "method",
                        "candidates and init_pairs must be at least 1",
                    ));
                }
                let n = self.participants.len();
                let mut cfg = SboConfig::paper(n, *rho, v);
                cfg.q = *q;
                cfg.init_pairs = *init_pairs;
                cfg.lengthscale = *lengthscale;
                cfg.candidates = *candidates;
                Box::new(Sbo::new(space, cfg, seed)?)
            }
            MethodSpec::SocialRatings { rho, q, init } => {
                check_rho_q(*rho, *q)?;
                if *init == 0 {
                    return Err(Error::invalid("method.init", "must be at least 1"));
                }
                let mut cfg = agora_methods::SboGpConfig::new(
                    self.participants.len(),
                    *rho,
                    agora_methods::SboGpVariant::SboGp,
                );
                cfg.q = *q;
                cfg.init = *init;
                Box::new(agora_methods::SboGp::new(space, cfg, seed)?)
            }
            MethodSpec::Hpbo {
                acquisition,
                anchors,
                a,
            } => {
                let acq = match acquisition.as_str() {
                    "ei" => agora_acq::risk::RiskKind::Ei,
                    "ucb" => agora_acq::risk::RiskKind::Ucb { eta: 2.0 },
                    "anpei" => agora_acq::risk::RiskKind::Anpei { gamma: 1.0 },
                    _ => {
                        return Err(Error::unknown(
                            "method.acquisition",
                            acquisition,
                            &["ei", "ucb", "anpei"],
                        ));
                    }
                };
                Box::new(Hpbo::new(
                    space,
                    HpboConfig::new(acq, anchors.clone(), *a),
                    seed,
                )?)
            }
            MethodSpec::Boap { properties, init } => {
                if properties.is_empty() {
                    return Err(Error::invalid(
                        "method.properties",
                        "BOAP needs at least one abstract property for the expert to compare",
                    ));
                }
                let mut cfg = BoapConfig::paper(properties.len(), *init, BoapVariant::Boap);
                cfg.properties = properties.clone();
                cfg.arm_rule = ArmRule::HeldOut { fraction: 0.2 };
                Box::new(Boap::new(space, cfg, seed)?)
            }
        })
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

    /// A method from its name and `key=value` knobs (values parsed as JSON where they parse,
    /// strings otherwise). Unknown names and knobs are errors listing the allowed ones.
    pub fn from_knobs(name: &str, knobs: &[(String, String)]) -> Result<MethodSpec> {
        if !METHOD_NAMES.contains(&name) {
            return Err(Error::unknown("method", name, METHOD_NAMES));
        }
        let mut obj = serde_json::Map::new();
        obj.insert("name".into(), name.into());
        for (k, v) in knobs {
            let value = serde_json::from_str(v).unwrap_or_else(|_| v.clone().into());
            obj.insert(k.clone(), value);
        }
        serde_json::from_value(obj.into()).map_err(|e| {
            Error::invalid(
                "method",
                format!("{e} (method {name}; see `agora study create --help` for its knobs)"),
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
