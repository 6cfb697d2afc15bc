//! The one registry of agora's methods: what `agora list`, `agora run`, live studies and
//! the Python package all build strategies from.
//!
//! Each [`Method`] has a unique canonical name (named after its algorithm, as Optuna names
//! its samplers), aliases (older names, study names such as `social`, and names that fix a
//! knob such as `pbo-bald`), a one-line description, the feedback it asks for, the spaces it
//! searches, the participants it needs, and its knobs with defaults and allowed values.
//! Unknown names and knobs are [`agora_core::Error::UnknownId`] listing what is allowed.
//!
//! # Example
//!
//! ```
//! use agora_core::Space;
//! use agora_methods::registry::{self, Setup};
//!
//! let space = Space::reals(&[(-5.0, 10.0), (0.0, 15.0)]).unwrap();
//! let knobs = [("beta".to_string(), registry::parse_text("3"))];
//! let mut s = registry::build("gp-ucb", &knobs, Setup::new(space, 7)).unwrap();
//! let q = s.ask().unwrap();
//! assert_eq!(q.id, 0);
//! let e = registry::build("gp-magic", &[], Setup::new(Space::reals(&[(0.0, 1.0)]).unwrap(), 0));
//! assert!(e.unwrap_err().to_string().contains("gp-logei"));
//! ```

mod entries;
mod knob;

pub use entries::dsbo_config;
pub use knob::{Knob, KnobDefault, KnobKind, KnobValue, Knobs, parse_text};

use crate::Strategy;
use agora_core::{Error, Result, Space};
use serde_json::Value;

/// The kinds of feedback a method asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feedback {
    /// Objective values at points (one point, or one per party).
    Evaluations,
    /// One person's choice between two (or more) options.
    Pairs,
    /// Every member of a group votes on a pair, publicly or privately.
    GroupVotes,
    /// Every member of a group rates one option on a number scale.
    GroupRatings,
    /// An expert compares two designs on a named abstract property.
    PropertyComparisons,
    /// Noisy Hessians of the objective at points.
    Hessians,
}

impl Feedback {
    /// In words, as `agora list` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Feedback::Evaluations => "evaluations",
            Feedback::Pairs => "pairs",
            Feedback::GroupVotes => "group votes",
            Feedback::GroupRatings => "group ratings",
            Feedback::PropertyComparisons => "property comparisons",
            Feedback::Hessians => "Hessians",
        }
    }
}

/// The spaces a method searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spaces {
    /// Boxes of any parameters and finite candidate sets.
    Any,
    /// Boxes of any parameters.
    Boxes,
    /// Boxes of real (and log-real) parameters.
    RealBoxes,
}

impl Spaces {
    /// Whether `space` is one of these.
    pub fn admits(self, space: &Space) -> bool {
        match (self, space) {
            (Spaces::Any, _) => true,
            (_, Space::Candidates { .. }) => false,
            (Spaces::Boxes, Space::Box { .. }) => true,
            (Spaces::RealBoxes, Space::Box { .. }) => space.continuous_mask().iter().all(|c| *c),
        }
    }

    /// In words, as an error refusing a space shows it.
    pub fn name(self) -> &'static str {
        match self {
            Spaces::Any => "any space",
            Spaces::Boxes => "boxes of parameters, not finite candidate sets",
            Spaces::RealBoxes => {
                "boxes of real or log-real parameters only (no integer or categorical \
                 parameters, no finite candidate sets)"
            }
        }
    }
}

/// The participants a method needs (agents of a group, parties sharing a black box).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Participants {
    /// Who they are, e.g. `the group`.
    pub role: &'static str,
    /// Fewest allowed.
    pub min: usize,
    /// Most allowed (`usize::MAX`: no limit).
    pub max: usize,
    /// Why there is a maximum, and what to use instead (empty without a maximum).
    pub why_max: &'static str,
}

/// Another name of a method, possibly fixing some of its knobs (`pbo-bald` is `pbo` with
/// `rule = bald`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alias {
    /// The name.
    pub name: &'static str,
    /// Knobs the name fixes, as `key=value` text.
    pub fixed: &'static [(&'static str, &'static str)],
}

impl Alias {
    /// A plain other name.
    pub const fn plain(name: &'static str) -> Alias {
        Alias { name, fixed: &[] }
    }
}

/// What a method is built on besides its knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// The space searched.
    pub space: Space,
    /// The seed of every random choice the strategy makes.
    pub seed: u64,
    /// The participants, in the order their answers come back (group members, parties).
    pub participants: Vec<String>,
}

impl Setup {
    /// A space and a seed, without participants.
    pub fn new(space: Space, seed: u64) -> Setup {
        Setup {
            space,
            seed,
            participants: Vec::new(),
        }
    }

    /// The same with `participants`.
    pub fn with_participants(mut self, participants: Vec<String>) -> Setup {
        self.participants = participants;
        self
    }
}

/// Builds a method's strategy from its checked knobs.
pub type Builder = fn(&Knobs, Setup) -> Result<Box<dyn Strategy>>;

/// One method.
#[derive(Debug, Clone, Copy)]
pub struct Method {
    /// The canonical name (unique among names and aliases).
    pub name: &'static str,
    /// Other names.
    pub aliases: &'static [Alias],
    /// What it is, in one line (with the paper it comes from).
    pub description: &'static str,
    /// The feedback it asks for.
    pub feedback: &'static [Feedback],
    /// The spaces it searches.
    pub spaces: Spaces,
    /// The participants it needs, if any.
    pub participants: Option<Participants>,
    /// Its settings.
    pub knobs: &'static [Knob],
    build: Builder,
}

/// Every registered method.
pub fn methods() -> &'static [Method] {
    entries::METHODS
}

/// The canonical names, in registry order.
pub fn names() -> Vec<&'static str> {
    methods().iter().map(|m| m.name).collect()
}

/// The method called `name` (canonical or alias) and the knobs the name fixes; an unknown
/// name is [`Error::UnknownId`] listing the canonical names.
pub fn find(name: &str) -> Result<(&'static Method, &'static [(&'static str, &'static str)])> {
    for m in methods() {
        if m.name == name {
            return Ok((m, &[]));
        }
        if let Some(a) = m.aliases.iter().find(|a| a.name == name) {
            return Ok((m, a.fixed));
        }
    }
    Err(Error::unknown("method", name, &names()))
}

/// The strategy `name` with `knobs` (others take their defaults) on `setup`. Errors: an
/// unknown method or knob (listing the allowed ones), a knob value outside its range
/// (naming `method.<knob>`), participants the method cannot work with, or the strategy's
/// own checks of the space and settings.
pub fn build(name: &str, knobs: &[(String, Value)], setup: Setup) -> Result<Box<dyn Strategy>> {
    let (method, fixed) = find(name)?;
    let knobs = Knobs::check(method.knobs, fixed, knobs)?;
    method.build(&knobs, setup)
}

impl Method {
    /// Check the number of participants against [`Method::participants`].
    pub fn check_participants(&self, n: usize) -> Result<()> {
        let Some(p) = self.participants else {
            return Ok(());
        };
        if n < p.min {
            let words = ["zero", "one", "two", "three", "four", "five", "six"];
            let min = words
                .get(p.min)
                .map_or_else(|| p.min.to_string(), |w| w.to_string());
            return Err(Error::invalid(
                "participants",
                format!(
                    "method {} needs at least {min} participant{} ({}); got {n}",
                    self.name,
                    if p.min == 1 { "" } else { "s" },
                    p.role
                ),
            ));
        }
        if n > p.max {
            return Err(Error::invalid(
                "participants",
                format!(
                    "method {} supports {} to {} participants (n = {n}): {}",
                    self.name, p.min, p.max, p.why_max
                ),
            ));
        }
        Ok(())
    }

    /// Check the space against [`Method::spaces`]: a space the method does not search is
    /// an error naming `space`, the method and what it searches.
    pub fn check_space(&self, space: &Space) -> Result<()> {
        if self.spaces.admits(space) {
            return Ok(());
        }
        Err(Error::invalid(
            "space",
            format!("method {} searches {}", self.name, self.spaces.name()),
        ))
    }

    /// The strategy with checked `knobs` (from [`Knobs::check`] with this method's knobs)
    /// on `setup`, after checking the space and the participants.
    pub fn build(&self, knobs: &Knobs, setup: Setup) -> Result<Box<dyn Strategy>> {
        self.check_space(&setup.space)?;
        self.check_participants(setup.participants.len())?;
        (self.build)(knobs, setup)
    }

    /// Whether it asks for `feedback`.
    pub fn asks(&self, feedback: Feedback) -> bool {
        self.feedback.contains(&feedback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_are_unique() {
        let mut all: Vec<&str> = Vec::new();
        for m in methods() {
            all.push(m.name);
            all.extend(m.aliases.iter().map(|a| a.name));
            assert!(
                !m.description.is_empty() && !m.feedback.is_empty(),
                "{}",
                m.name
            );
            for (k, v) in m.aliases.iter().flat_map(|a| a.fixed) {
                assert!(m.knobs.iter().any(|x| x.name == *k), "{}: {k}={v}", m.name);
            }
        }
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a name is used twice");
    }

    #[test]
    fn every_default_is_allowed() {
        for m in methods() {
            Knobs::check(
                m.knobs,
                &[],
                &m.knobs
                    .iter()
                    .map(|k| (k.name.to_string(), parse_text(k.default_or_example())))
                    .collect::<Vec<_>>(),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", m.name));
        }
    }

    #[test]
    fn unknown_names_list_the_methods_and_gp_ucb_is_beta_two() {
        let e = find("gp-zz").unwrap_err();
        assert!(
            matches!(&e, Error::UnknownId { hint, .. } if hint.contains("gp-logei") && hint.contains("sbo")),
            "{e}"
        );
        let (m, fixed) = find("pbo-bald").unwrap();
        assert_eq!((m.name, fixed), ("pbo", &[("rule", "bald")][..]));
        assert_eq!(find("social").unwrap().0.name, "sbo");
        assert_eq!(find("social-ratings").unwrap().0.name, "sbo-gp");
        let (ucb, _) = find("gp-ucb").unwrap();
        let beta = ucb.knobs.iter().find(|k| k.name == "beta").unwrap();
        assert_eq!(beta.default, KnobDefault::Value("2"));
    }

    #[test]
    fn real_box_methods_refuse_integer_categorical_and_candidate_spaces() {
        use agora_core::Param;
        let int = Space::boxed(vec![
            Param::Real {
                name: "x".into(),
                lo: 0.0,
                hi: 1.0,
            },
            Param::Integer {
                name: "n".into(),
                lo: 1,
                hi: 4,
            },
        ])
        .unwrap();
        let cat = Space::boxed(vec![Param::Categorical {
            name: "c".into(),
            choices: vec!["a".into(), "b".into()],
        }])
        .unwrap();
        let cand = Space::Candidates {
            names: vec!["a".into(), "b".into()],
            features: vec![vec![0.0, 1.0], vec![1.0, 0.0]],
        };
        for name in [
            "dsbo",
            "dsbo-batch",
            "gp-ucb-full",
            "uniform",
            "turbo",
            "line-bo",
            "gibo",
            "tree-bo",
            "alebo",
            "cma-es",
        ] {
            for space in [&int, &cat, &cand] {
                let e = build(name, &[], Setup::new(space.clone(), 0))
                    .unwrap_err()
                    .to_string();
                let canonical = find(name).unwrap().0.name;
                assert!(
                    e.contains("`space`")
                        && e.contains("real or log-real")
                        && e.contains(canonical),
                    "{name}: {e}"
                );
            }
            let reals = Space::reals(&[(0.0, 1.0), (-2.0, 2.0)]).unwrap();
            assert!(build(name, &[], Setup::new(reals, 0)).is_ok(), "{name}");
        }
        // `dsbo-batch` is `dsbo` with q = 15.
        let (m, fixed) = find("dsbo-batch").unwrap();
        let knobs = Knobs::check(m.knobs, fixed, &[]).unwrap();
        assert_eq!(dsbo_config(&knobs).unwrap().gp_ucb.batch, Some(15));
        let knobs = Knobs::check(m.knobs, &[], &[]).unwrap();
        assert_eq!(dsbo_config(&knobs).unwrap().gp_ucb.batch, None);
        // The baselines' defaults are their strategies' defaults.
        let default = |method: &str, knob: &str| {
            let (m, _) = find(method).unwrap();
            Knobs::check(m.knobs, &[], &[]).unwrap().real(knob).unwrap()
        };
        let turbo = crate::TurboConfig::default().n_init as f64;
        assert_eq!(default("turbo", "n_init"), turbo);
        let line = crate::LineBoConfig::default();
        assert_eq!(default("line-bo", "n_init"), line.n_init as f64);
        assert_eq!(
            default("line-bo", "evals_per_line"),
            line.evals_per_line as f64
        );
        assert_eq!(
            default("cma-es", "sigma0"),
            crate::CmaEsConfig::default().sigma0
        );
        let tree = crate::TreeBoConfig::default();
        assert_eq!(default("tree-bo", "n_init"), tree.n_init as f64);
        assert_eq!(
            default("tree-bo", "resample_every"),
            tree.resample_every as f64
        );
        let alebo = crate::AleboConfig::default();
        assert_eq!(default("alebo", "n_init"), alebo.n_init as f64);
        assert_eq!(
            default("alebo", "embedding_dim"),
            alebo.embedding_dim as f64
        );
        assert_eq!(default("alebo", "refit_every"), alebo.refit_every as f64);
    }

    #[test]
    fn participants_are_counted() {
        let (sbo, _) = find("sbo").unwrap();
        let e = sbo.check_participants(1).unwrap_err().to_string();
        assert!(
            e.contains("participants") && e.contains("at least two"),
            "{e}"
        );
        let e = sbo.check_participants(7).unwrap_err().to_string();
        assert!(e.contains("2 to 6") && e.contains("n!"), "{e}");
        assert!(sbo.check_participants(3).is_ok());
        assert!(find("gp-ei").unwrap().0.check_participants(0).is_ok());
    }
}
