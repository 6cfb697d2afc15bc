//! The registered methods and how each is built from its knobs.

use super::{
    Alias, Feedback, Knob, KnobDefault, KnobKind, Knobs, Method, Participants, Setup, Spaces,
};
use crate::dsbo::{EdgeRule, StructureConfig};
use crate::{
    Boap, BoapConfig, BoapVariant, Cbo, CboConfig, CmaEs, CmaEsConfig, Dsbo, DsboConfig, Gibo,
    GiboConfig, GpBo, GpBoConfig, GpUcb, GpUcbConfig, GroupPbo, Hpbo, HpboConfig, LineBo,
    LineBoConfig, LineDirection, PairRule, Pbo, PboConfig, RandomSearch, Sbo, SboConfig, SboGp,
    SboGpConfig, SboGpVariant, SboVariant, SobolSearch, StandardAcq, Strategy, Turbo, TurboConfig,
    UniformSearch,
};
use agora_acq::risk::RiskKind;
use agora_acq::{AcqOptimizer, Beta, BlockAscent};
use agora_core::{Error, Result};
use agora_gp::GpConfig;

type Built = Result<Box<dyn Strategy>>;

/// A number in `(0, 1]`.
const UNIT_LEFT_OPEN: KnobKind = KnobKind::Real {
    min: 0.0,
    min_open: true,
    max: 1.0,
    max_open: false,
};

/// A number in `(0, 1)`.
const UNIT_OPEN: KnobKind = KnobKind::Real {
    min: 0.0,
    min_open: true,
    max: 1.0,
    max_open: true,
};

const N_INIT: Knob = Knob {
    name: "n_init",
    kind: KnobKind::count(1),
    default: KnobDefault::Value("10"),
    doc: "scrambled-Sobol evaluations before the GP is used",
};

const RULE: Knob = Knob {
    name: "rule",
    kind: KnobKind::Choice(&["eubo", "bald", "winner"]),
    default: KnobDefault::Value("eubo"),
    doc: "pair rule: EUBO, pairwise BALD, or the previous winner against the EUBO challenger",
};

const RATERS: Knob = Knob {
    name: "raters",
    kind: KnobKind::Choice(&["equal", "learned"]),
    default: KnobDefault::Value("equal"),
    doc: "equal: every rater has the model's noise (a group's majority is one comparison); learned: a noise scale per rater (each group vote a comparison of its own), so a rater who answers at random gets little weight",
};

const PREF_MODEL: Knob = Knob {
    name: "model",
    kind: KnobKind::Choice(&["botorch", "capped", "people"]),
    default: KnobDefault::Value("botorch"),
    doc: "preference GP: BoTorch's PairwiseGP preset; capped, the same with the output scale bounded to [0.5, 8] and half the lengthscale prior's mean (lower regret on Branin and Hartmann6, see the README); or the people preset (Matérn-3/2, output scale bounded to [0.5, 8]) of the Optuna sampler",
};

const TRUST_REGION: Knob = Knob {
    name: "trust_region",
    kind: KnobKind::Real {
        min: 0.0,
        min_open: false,
        max: f64::INFINITY,
        max_open: true,
    },
    default: KnobDefault::Value("0"),
    doc: "with rule = winner: search the challenger within this many lengthscales of the previous winner (0: the whole box)",
};

const GROUP_RHO: Knob = Knob {
    name: "rho",
    kind: UNIT_LEFT_OPEN,
    default: KnobDefault::Value("1.0"),
    doc: "Gini weight of the group's welfare (1: utilitarian; small: egalitarian)",
};

const Q: Knob = Knob {
    name: "q",
    kind: UNIT_OPEN,
    default: KnobDefault::Value("0.5"),
    doc: "decay of the private-question threshold t^-q",
};

const RATINGS_INIT: Knob = Knob {
    name: "init",
    kind: KnobKind::count(1),
    default: KnobDefault::Value("5"),
    doc: "random initial options rated on every channel the method uses",
};

const BOAP_INIT: Knob = Knob {
    name: "init",
    kind: KnobKind::count(2),
    default: KnobDefault::Value("5"),
    doc: "initial designs t' (all their pairs are compared per property)",
};

const PROPERTIES: Knob = Knob {
    name: "properties",
    kind: KnobKind::Names,
    default: KnobDefault::Required {
        example: r#"["stiffness", "cost"]"#,
    },
    doc: "the abstract properties the expert compares designs on",
};

const GP_UCB_N_INIT: Knob = Knob {
    name: "n_init",
    kind: KnobKind::count(1),
    default: KnobDefault::Value("5"),
    doc: "uniform evaluations before the first GP-UCB pick",
};

const GP_UCB_BETA: Knob = Knob {
    name: "beta",
    kind: KnobKind::at_least(0.0, false),
    default: KnobDefault::Value("2"),
    doc: "constant exploration weight beta of mu + sqrt(beta) sigma (DSBO paper, Eq. 1)",
};

const GROUP: Participants = Participants {
    role: "the group",
    min: 2,
    max: usize::MAX,
    why_max: "",
};

/// Every registered method.
pub(super) const METHODS: &[Method] = &[
    Method {
        name: "random",
        aliases: &[],
        description: "uniform random search (unevaluated candidates, for finite sets)",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[],
        build: |_, s| Ok(Box::new(RandomSearch::new(s.space, s.seed)?)),
    },
    Method {
        name: "sobol",
        aliases: &[],
        description: "scrambled Sobol points in order (random unevaluated candidates, for finite sets)",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[],
        build: |_, s| Ok(Box::new(SobolSearch::new(s.space, s.seed)?)),
    },
    Method {
        name: "gp-logei",
        aliases: &[],
        description: "GP-BO with log expected improvement (Ament et al. 2023), Optuna-style Matérn-5/2 GP",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[N_INIT],
        build: |k, s| gp_bo(k, s, StandardAcq::LogEi),
    },
    Method {
        name: "gp-ei",
        aliases: &[],
        description: "GP-BO with expected improvement (Jones et al. 1998)",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[N_INIT],
        build: |k, s| gp_bo(k, s, StandardAcq::Ei),
    },
    Method {
        name: "gp-pi",
        aliases: &[],
        description: "GP-BO with probability of improvement (Kushner 1964)",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[N_INIT],
        build: |k, s| gp_bo(k, s, StandardAcq::Pi),
    },
    Method {
        name: "gp-ucb",
        aliases: &[],
        description: "GP-BO with the upper confidence bound mu + sqrt(beta) sigma, beta = 2 (Srinivas et al. 2010)",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[
            N_INIT,
            Knob {
                name: "beta",
                kind: KnobKind::at_least(0.0, false),
                default: KnobDefault::Value("2"),
                doc: "exploration weight beta of mu + sqrt(beta) sigma",
            },
        ],
        build: |k, s| {
            let beta = k.real("beta")?;
            gp_bo(k, s, StandardAcq::Ucb { beta })
        },
    },
    Method {
        name: "gp-ts",
        aliases: &[],
        description: "GP-BO with Thompson sampling (random Fourier features on boxes, exact draws on finite sets)",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[N_INIT],
        build: |k, s| gp_bo(k, s, StandardAcq::Thompson),
    },
    Method {
        name: "gp-logei-botorch",
        aliases: &[],
        description: "GP-BO with log expected improvement on BoTorch's SingleTaskGP defaults, cold-started fits",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[N_INIT],
        build: |k, s| {
            let d = s.space.dim();
            let mut cfg = GpBoConfig::new(StandardAcq::LogEi, d);
            cfg.n_init = k.integer("n_init")?;
            cfg.gp = GpConfig::botorch(d);
            cfg.warm_start = false;
            Ok(Box::new(GpBo::new(s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "cbo",
        aliases: &[],
        description: "collaborative fair BO (Sim et al. 2021): every party gets one query a round, chosen by the fair batch UCB",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::Boxes,
        participants: Some(Participants {
            role: "the parties",
            min: 1,
            max: usize::MAX,
            why_max: "",
        }),
        knobs: &[
            Knob {
                name: "rho",
                kind: UNIT_LEFT_OPEN,
                default: KnobDefault::Value("0.8"),
                doc: "Gini weight of the parties' welfare (1: utilitarian; the paper runs 1 to 0.2)",
            },
            Knob {
                name: "c1",
                kind: KnobKind::at_least(0.0, false),
                default: KnobDefault::Value("0.01"),
                doc: "c1 of the exploration weight alpha_t (the authors' tuning protocol)",
            },
            Knob {
                name: "c2",
                kind: KnobKind::at_least(0.0, true),
                default: KnobDefault::Value("1"),
                doc: "c2 of the exploration weight alpha_t",
            },
            Knob {
                name: "n_init",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("2"),
                doc: "random rounds T0 (a scrambled Sobol sequence per party)",
            },
        ],
        build: |k, s| {
            let mut cfg = CboConfig::tuning(k.real("rho")?, s.participants.len(), s.space.dim());
            cfg.c1 = k.real("c1")?;
            cfg.c2 = k.real("c2")?;
            cfg.n_init = k.integer("n_init")?;
            Ok(Box::new(Cbo::new(s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "boap-ts",
        aliases: &[Alias::plain("bo-ts")],
        description: "BOAP's baseline (Kumar A V et al. 2024): GP-BO with Thompson sampling over BOAP's candidates, no expert",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[BOAP_INIT],
        build: |k, s| boap(k, s, BoapVariant::BoTs),
    },
    Method {
        name: "boap-ei",
        aliases: &[Alias::plain("bo-ei")],
        description: "BOAP's baseline (Kumar A V et al. 2024): GP-BO with expected improvement over BOAP's candidates, no expert",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[BOAP_INIT],
        build: |k, s| boap(k, s, BoapVariant::BoEi),
    },
    Method {
        name: "boap",
        aliases: &[],
        description: "BOAP (Kumar A V et al. 2024): values plus an expert's comparisons on abstract properties; two arms chosen by held-out likelihood",
        feedback: &[Feedback::Evaluations, Feedback::PropertyComparisons],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[PROPERTIES, BOAP_INIT],
        build: |k, s| boap(k, s, BoapVariant::Boap),
    },
    Method {
        name: "boap-fd",
        aliases: &[],
        description: "BOAP with its arms chosen by the marginal likelihood on all data (the authors' code)",
        feedback: &[Feedback::Evaluations, Feedback::PropertyComparisons],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[PROPERTIES, BOAP_INIT],
        build: |k, s| boap(k, s, BoapVariant::BoapFullData),
    },
    Method {
        name: "boap-oa",
        aliases: &[],
        description: "BOAP with only its augmented (expert-informed) arm",
        feedback: &[Feedback::Evaluations, Feedback::PropertyComparisons],
        spaces: Spaces::Any,
        participants: None,
        knobs: &[PROPERTIES, BOAP_INIT],
        build: |k, s| boap(k, s, BoapVariant::BoapOa),
    },
    Method {
        name: "pbo",
        aliases: &[
            Alias::plain("pairs"),
            Alias {
                name: "pbo-eubo",
                fixed: &[("rule", "eubo")],
            },
            Alias {
                name: "pbo-bald",
                fixed: &[("rule", "bald")],
            },
            Alias {
                name: "pbo-winner",
                fixed: &[("rule", "winner")],
            },
        ],
        description: "preferential BO: one rater compares pairs; Laplace preference GP, EUBO (Astudillo et al. 2023) or BALD pairs",
        feedback: &[Feedback::Pairs],
        spaces: Spaces::Boxes,
        participants: None,
        knobs: &[RULE, PREF_MODEL, TRUST_REGION, RATERS],
        build: |k, s| {
            let mut cfg = PboConfig::new(pair_rule(k)?);
            cfg.learn_rater_noise = k.choice("raters")? == "learned";
            match k.choice("model")? {
                "people" => cfg.model = crate::PreferenceSuggesterConfig::people_model(),
                "capped" => cfg.model = crate::pbo::capped_model(),
                _ => {}
            }
            let t = k.real("trust_region")?;
            cfg.trust_region = (t > 0.0).then_some(t);
            Ok(Box::new(Pbo::new(s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "hpbo",
        aliases: &[],
        description: "heteroscedastic preferential BO (Sinaga et al. 2024): duels whose noise is low near known anchors",
        feedback: &[Feedback::Pairs],
        spaces: Spaces::RealBoxes,
        participants: None,
        knobs: &[
            Knob {
                name: "acquisition",
                kind: KnobKind::Choice(&["ei", "ucb", "anpei"]),
                default: KnobDefault::Value("ei"),
                doc: "EI, UCB (eta = 2) or the noise-penalized ANPEI (gamma = 1)",
            },
            Knob {
                name: "anchors",
                kind: KnobKind::Rows,
                default: KnobDefault::Required {
                    example: "[[0.25, 0.25], [0.75, 0.5]]",
                },
                doc: "inputs the person judges reliably, in user units (rows of the parameters)",
            },
            Knob {
                name: "a",
                kind: KnobKind::at_least(0.0, true),
                default: KnobDefault::Value("1.0"),
                doc: "noise variance far from every anchor",
            },
        ],
        build: |k, s| {
            let acq = match k.choice("acquisition")? {
                "ucb" => RiskKind::Ucb { eta: 2.0 },
                "anpei" => RiskKind::Anpei { gamma: 1.0 },
                _ => RiskKind::Ei,
            };
            let cfg = HpboConfig::new(acq, k.rows("anchors")?.to_vec(), k.real("a")?);
            Ok(Box::new(Hpbo::new(s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "group-pbo",
        aliases: &[Alias::plain("group-pairs")],
        description: "the group votes publicly on each pair and preferential BO learns from the majority (no social model)",
        feedback: &[Feedback::GroupVotes],
        spaces: Spaces::Boxes,
        participants: Some(Participants {
            role: "the group",
            min: 1,
            max: usize::MAX,
            why_max: "",
        }),
        knobs: &[RULE, RATERS],
        build: |k, s| {
            let mut cfg = PboConfig::new(pair_rule(k)?);
            cfg.learn_rater_noise = k.choice("raters")? == "learned";
            Ok(Box::new(GroupPbo::new(
                s.space,
                cfg,
                s.participants,
                s.seed,
            )?))
        },
    },
    Method {
        name: "sbo",
        aliases: &[Alias::plain("social")],
        description: "Social BO (Adachi et al.): public votes every round, private votes while the social graph is uncertain",
        feedback: &[Feedback::GroupVotes],
        spaces: Spaces::Any,
        participants: Some(Participants {
            role: "the group",
            min: 2,
            max: 6,
            why_max: "Social BO's welfare bound grows with n!; use group-pbo (study method group-pairs) for larger groups",
        }),
        knobs: &[
            Knob {
                name: "variant",
                kind: KnobKind::Choice(&["sbo", "private-only", "single-agent", "independent"]),
                default: KnobDefault::Value("sbo"),
                doc: "Social BO or a baseline: private votes only, one utility for all, or u and v unlinked",
            },
            GROUP_RHO,
            Q,
            Knob {
                name: "init_pairs",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("5"),
                doc: "random initial pairs, voted on publicly and privately",
            },
            Knob {
                name: "lengthscale",
                kind: KnobKind::at_least(0.0, true),
                default: KnobDefault::Value("0.2"),
                doc: "RBF lengthscale on the unit cube",
            },
            Knob {
                name: "candidates",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("128"),
                doc: "candidates screened per round",
            },
        ],
        build: |k, s| {
            let variant = match k.choice("variant")? {
                "private-only" => SboVariant::PrivateOnly,
                "single-agent" => SboVariant::SingleAgent,
                "independent" => SboVariant::Independent,
                _ => SboVariant::Sbo,
            };
            let mut cfg = SboConfig::paper(s.participants.len(), k.real("rho")?, variant);
            cfg.q = k.real("q")?;
            cfg.init_pairs = k.integer("init_pairs")?;
            cfg.lengthscale = k.real("lengthscale")?;
            cfg.candidates = k.integer("candidates")?;
            Ok(Box::new(Sbo::new(s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "sbo-gp",
        aliases: &[Alias::plain("social-ratings")],
        description: "Social BO's GP variant (App. F.1): everyone rates one option publicly, privately while the influence is uncertain",
        feedback: &[Feedback::GroupRatings],
        spaces: Spaces::Any,
        participants: Some(GROUP),
        knobs: &[GROUP_RHO, Q, RATINGS_INIT],
        build: |k, s| {
            let mut cfg =
                SboGpConfig::new(s.participants.len(), k.real("rho")?, SboGpVariant::SboGp);
            cfg.q = k.real("q")?;
            cfg.init = k.integer("init")?;
            Ok(Box::new(SboGp::new(s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "sbo-gp-ucb-u",
        aliases: &[],
        description: "Social BO's GP baseline: GP-UCB on the welfare of private ratings",
        feedback: &[Feedback::GroupRatings],
        spaces: Spaces::Any,
        participants: Some(GROUP),
        knobs: &[GROUP_RHO, RATINGS_INIT],
        build: |k, s| sbo_gp_baseline(k, s, SboGpVariant::GpUcbU),
    },
    Method {
        name: "sbo-gp-ucb-v",
        aliases: &[],
        description: "Social BO's GP baseline: GP-UCB on the welfare of public (socially influenced) ratings",
        feedback: &[Feedback::GroupRatings],
        spaces: Spaces::Any,
        participants: Some(GROUP),
        knobs: &[GROUP_RHO, RATINGS_INIT],
        build: |k, s| sbo_gp_baseline(k, s, SboGpVariant::GpUcbV),
    },
    Method {
        name: "sbo-mt-gp-ucb-u",
        aliases: &[],
        description: "Social BO's GP baseline: multi-task GP-UCB on the agents' private ratings",
        feedback: &[Feedback::GroupRatings],
        spaces: Spaces::Any,
        participants: Some(GROUP),
        knobs: &[GROUP_RHO, RATINGS_INIT],
        build: |k, s| sbo_gp_baseline(k, s, SboGpVariant::MtGpUcbU),
    },
    Method {
        name: "sbo-mt-gp-ucb-uv",
        aliases: &[],
        description: "Social BO's GP baseline: multi-task GP-UCB on private and public ratings",
        feedback: &[Feedback::GroupRatings],
        spaces: Spaces::Any,
        participants: Some(GROUP),
        knobs: &[GROUP_RHO, RATINGS_INIT],
        build: |k, s| sbo_gp_baseline(k, s, SboGpVariant::MtGpUcbUv),
    },
    Method {
        name: "dsbo",
        aliases: &[
            Alias::plain("dss-gp-ucb"),
            Alias {
                name: "dsbo-batch",
                fixed: &[("q", "15")],
            },
        ],
        description: "DSS-GP-UCB (Rajpal et al., DSBO paper Alg. 4): Hessian queries find the dependency structure, then additive GP-UCB over its cliques",
        feedback: &[Feedback::Hessians, Feedback::Evaluations],
        spaces: Spaces::RealBoxes,
        participants: None,
        knobs: &[
            Knob {
                name: "t0",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("5"),
                doc: "Phase-1 points T0, drawn uniformly (Alg. 4 line 2)",
            },
            Knob {
                name: "c1",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("1"),
                doc: "Hessian queries C1 at each Phase-1 point (T0 x C1 queries in all)",
            },
            Knob {
                name: "edge_budget",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("100"),
                doc: "edges kept: the pairs with the largest summed |Hessian| (App. A keeps up to 1500)",
            },
            GP_UCB_N_INIT,
            GP_UCB_BETA,
            Knob {
                name: "q",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("1"),
                doc: "GP-UCB picks per model update (1: sequential; the paper's batches are 15, GP-BUCB)",
            },
            Knob {
                name: "merge_cliques",
                kind: KnobKind::count(0),
                default: KnobDefault::Value("0"),
                doc: "merge overlapping cliques while a union has at most this many coordinates (0: the maximal cliques as found, as the paper)",
            },
        ],
        build: |k, s| Ok(Box::new(Dsbo::new(&s.space, dsbo_config(k)?, s.seed)?)),
    },
    Method {
        name: "gp-ucb-full",
        aliases: &[],
        description: "DSBO's baseline: GP-UCB with one Matérn-5/2 ARD kernel over every dimension (Srinivas et al. 2010), L-BFGS-B UCB maximizer",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::RealBoxes,
        participants: None,
        knobs: &[GP_UCB_N_INIT, GP_UCB_BETA],
        build: |k, s| {
            let cfg = gp_ucb_config(k, None)?;
            Ok(Box::new(GpUcb::full_kernel(&s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "uniform",
        aliases: &[],
        description: "DSBO's baseline: uniform random points of a box, one random stream for the run (`random` draws per query)",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::RealBoxes,
        participants: None,
        knobs: &[],
        build: |_, s| Ok(Box::new(UniformSearch::new(&s.space, s.seed)?)),
    },
    Method {
        name: "turbo",
        aliases: &[],
        description: "TuRBO-1-style trust-region BO (Eriksson et al. 2019): Thompson sampling in a box around the incumbent that grows and shrinks",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::RealBoxes,
        participants: None,
        knobs: &[Knob {
            name: "n_init",
            kind: KnobKind::count(1),
            default: KnobDefault::Value("10"),
            doc: "uniform evaluations at each (re)start of the trust region",
        }],
        build: |k, s| {
            let cfg = TurboConfig {
                n_init: k.integer("n_init")?,
                ..TurboConfig::default()
            };
            Ok(Box::new(Turbo::new(&s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "line-bo",
        aliases: &[],
        description: "LineBO (Kirschner et al. 2019): GP-UCB on one line at a time through the incumbent, along a random direction or coordinate axis",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::RealBoxes,
        participants: None,
        knobs: &[
            Knob {
                name: "n_init",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("10"),
                doc: "uniform evaluations before the first line",
            },
            Knob {
                name: "direction",
                kind: KnobKind::Choice(&["random", "coordinate"]),
                default: KnobDefault::Value("random"),
                doc: "how lines are drawn: uniform on the sphere (RandomLineBO) or a coordinate axis (CoordinateLineBO)",
            },
            Knob {
                name: "evals_per_line",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("1"),
                doc: "evaluations on each line before the next one is drawn",
            },
        ],
        build: |k, s| {
            let cfg = LineBoConfig {
                n_init: k.integer("n_init")?,
                direction: match k.choice("direction")? {
                    "coordinate" => LineDirection::Coordinate,
                    _ => LineDirection::Random,
                },
                evals_per_line: k.integer("evals_per_line")?,
                ..LineBoConfig::default()
            };
            Ok(Box::new(LineBo::new(&s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "gibo",
        aliases: &[],
        description: "GIBO (Müller et al. 2021): local search by normalized steps along the GP's mean gradient, asking the points that most shrink the gradient's uncertainty",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::RealBoxes,
        participants: None,
        knobs: &[
            Knob {
                name: "samples_per_step",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("8"),
                doc: "gradient-information points asked before each step",
            },
            Knob {
                name: "step",
                kind: KnobKind::Real {
                    min: 0.0,
                    min_open: true,
                    max: 1.0,
                    max_open: false,
                },
                default: KnobDefault::Value("0.1"),
                doc: "length of each normalized-gradient step in unit-cube coordinates",
            },
        ],
        build: |k, s| {
            let cfg = GiboConfig {
                samples_per_step: k.integer("samples_per_step")?,
                step: k.real("step")?,
                ..GiboConfig::default()
            };
            Ok(Box::new(Gibo::new(&s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "alebo",
        aliases: &[],
        description: "ALEBO (Letham et al. 2020): EI in a random linear embedding, over the polytope of points whose up-projection lies in the box, with a Mahalanobis-kernel GP",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::RealBoxes,
        participants: None,
        knobs: &[
            Knob {
                name: "embedding_dim",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("10"),
                doc: "embedding dimension d (at least the effective dimension; capped at the space's dimension)",
            },
            Knob {
                name: "n_init",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("10"),
                doc: "initial points, uniform in the polytope",
            },
            Knob {
                name: "metric",
                kind: KnobKind::Choice(&["ambient", "embedded"]),
                default: KnobDefault::Value("ambient"),
                doc: "the kernel's metric: ARD on the up-projected points (D lengthscales) or on the embedding (d)",
            },
            Knob {
                name: "refit_every",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("1"),
                doc: "refit the GP's hyperparameters every this many evaluations (ALEBO refits every one)",
            },
        ],
        build: |k, s| {
            let cfg = crate::AleboConfig {
                embedding_dim: k.integer("embedding_dim")?.min(s.space.dim()),
                n_init: k.integer("n_init")?,
                refit_every: k.integer("refit_every")?,
                metric: match k.choice("metric")? {
                    "embedded" => crate::AleboMetric::Embedded,
                    _ => crate::AleboMetric::Ambient,
                },
                ..crate::AleboConfig::default()
            };
            Ok(Box::new(crate::Alebo::new(&s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "tree-bo",
        aliases: &[],
        description: "TreeBO-style additive GP-UCB (Han et al. 2021; Wang et al. 2017): disjoint groups of coordinates Gibbs-sampled on the marginal likelihood, the UCB maximized group by group",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::RealBoxes,
        participants: None,
        knobs: &[
            Knob {
                name: "n_init",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("10"),
                doc: "uniform evaluations before the first pick",
            },
            Knob {
                name: "max_group_size",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("3"),
                doc: "largest number of coordinates in one group of the decomposition",
            },
            Knob {
                name: "resample_every",
                kind: KnobKind::count(1),
                default: KnobDefault::Value("10"),
                doc: "evaluations between Gibbs resamplings of the decomposition",
            },
            Knob {
                name: "beta",
                kind: KnobKind::at_least(0.0, false),
                default: KnobDefault::Value("2"),
                doc: "exploration weight beta of each group's mu_g + sqrt(beta) sigma_g",
            },
        ],
        build: |k, s| {
            let cfg = crate::TreeBoConfig {
                n_init: k.integer("n_init")?,
                max_group_size: k.integer("max_group_size")?,
                resample_every: k.integer("resample_every")?,
                beta: k.real("beta")?,
                ..crate::TreeBoConfig::default()
            };
            Ok(Box::new(crate::TreeBo::new(&s.space, cfg, s.seed)?))
        },
    },
    Method {
        name: "cma-es",
        aliases: &[],
        description: "CMA-ES (Hansen 2016) in the unit cube, one sample per query, restarts when the step size collapses",
        feedback: &[Feedback::Evaluations],
        spaces: Spaces::RealBoxes,
        participants: None,
        knobs: &[Knob {
            name: "sigma0",
            kind: KnobKind::Real {
                min: 0.0,
                min_open: true,
                max: 1.0,
                max_open: false,
            },
            default: KnobDefault::Value("0.3"),
            doc: "initial step size in unit-cube coordinates",
        }],
        build: |k, s| {
            let cfg = CmaEsConfig {
                sigma0: k.real("sigma0")?,
                ..CmaEsConfig::default()
            };
            Ok(Box::new(CmaEs::new(&s.space, cfg, s.seed)?))
        },
    },
];

/// DSS-GP-UCB's settings from the knobs of `dsbo`: `t0` points × `c1` Hessian queries, the
/// `edge_budget` largest summed |Hessian| entries kept (DSBO paper, Alg. 4 lines 2–6), then
/// GP-UCB with `n_init`, constant `beta` and batches of `q` (`q = 1`: sequential), and
/// overlapping cliques merged up to `merge_cliques` coordinates (0: not merged).
///
/// Errors: knobs that are not `dsbo`'s.
pub fn dsbo_config(k: &Knobs) -> Result<DsboConfig> {
    let q = k.integer("q")?;
    let structure = StructureConfig::new(
        k.integer("t0")?,
        k.integer("c1")?,
        EdgeRule::Budget(k.integer("edge_budget")?),
    );
    let merge = k.integer("merge_cliques")?;
    Ok(DsboConfig {
        merge_cliques: (merge > 0).then_some(merge),
        gp_ucb: GpUcbConfig {
            acq: AcqOptimizer::BlockCoordinate(BlockAscent::climbing()),
            ..gp_ucb_config(k, (q > 1).then_some(q))?
        },
        ..DsboConfig::new(structure)
    })
}

/// The GP-UCB loop of `dsbo` and `gp-ucb-full`: `n_init`, constant `beta`, `batch`, the
/// rest [`GpUcbConfig::default`].
fn gp_ucb_config(k: &Knobs, batch: Option<usize>) -> Result<GpUcbConfig> {
    Ok(GpUcbConfig {
        n_init: k.integer("n_init")?,
        beta: Beta::Constant(k.real("beta")?),
        batch,
        ..GpUcbConfig::default()
    })
}

fn gp_bo(k: &Knobs, s: Setup, acq: StandardAcq) -> Built {
    let mut cfg = GpBoConfig::new(acq, s.space.dim());
    cfg.n_init = k.integer("n_init")?;
    Ok(Box::new(GpBo::new(s.space, cfg, s.seed)?))
}

fn pair_rule(k: &Knobs) -> Result<PairRule> {
    Ok(match k.choice("rule")? {
        "bald" => PairRule::Bald,
        "winner" => PairRule::WinnerVsEubo,
        _ => PairRule::Eubo,
    })
}

fn boap(k: &Knobs, s: Setup, variant: BoapVariant) -> Built {
    let properties = if variant.uses_expert() {
        let p = k.names("properties")?;
        if p.is_empty() {
            return Err(Error::invalid(
                "method.properties",
                "BOAP needs at least one abstract property for the expert to compare",
            ));
        }
        p.to_vec()
    } else {
        Vec::new()
    };
    let mut cfg = BoapConfig::paper(properties.len(), k.integer("init")?, variant);
    cfg.properties = properties;
    Ok(Box::new(Boap::new(s.space, cfg, s.seed)?))
}

fn sbo_gp_baseline(k: &Knobs, s: Setup, variant: SboGpVariant) -> Built {
    let mut cfg = SboGpConfig::new(s.participants.len(), k.real("rho")?, variant);
    cfg.init = k.integer("init")?;
    Ok(Box::new(SboGp::new(s.space, cfg, s.seed)?))
}
