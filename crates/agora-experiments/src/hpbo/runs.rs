//! The runs of the HPBO suite: its methods, experiments, and one run through the runner.

use agora_acq::RiskKind;
use agora_core::{Error, Point, QueryKind, Result};
use agora_gp::DuelInference;
use agora_math::rng::stream;
use agora_methods::{Bandwidth, Hpbo, HpboConfig};
use agora_problems::{HpboProblem, HpboRespondent};
use serde::{Deserialize, Serialize};
use std::ops::ControlFlow;

/// ANPEI's noise penalty γ and the exploration weight η of UCB and RAHBO (note §9.13);
/// RAHBO's γ is the problem's `ρ = 3 f(x_max)`.
pub const GAMMA: f64 = 1.0;
/// See [`GAMMA`].
pub const ETA: f64 = 2.0;

/// One configured method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HpboMethod {
    /// Label, e.g. `rahbo` or `ei/laplace`.
    pub label: String,
    /// `anpei`, `rahbo`, `ei` or `ucb`.
    pub acq: String,
    /// `hb`, `laplace` or `ep`.
    pub inference: String,
    /// `loo`, `evidence` or a number.
    pub bandwidth: String,
    /// A constant noise variance `a` instead of the anchor model: homoscedastic PBO, the
    /// baseline of the paper's abstract (label suffix `/homo`).
    #[serde(default)]
    pub homoscedastic: bool,
    /// RAHBO's γ as a multiple of the problem's ρ (`None`: 1, γ = ρ). The γ sweep
    /// (label `rahbo/g={scale}rho`).
    #[serde(default)]
    pub gamma_scale: Option<f64>,
}

impl HpboMethod {
    /// The method `acq` with `inference` and `bandwidth`; the label names what differs from
    /// the defaults (`hb`, `loo`).
    pub fn new(acq: &str, inference: &str, bandwidth: &str) -> HpboMethod {
        let mut label = acq.to_string();
        if inference != "hb" {
            label.push('/');
            label.push_str(inference);
        }
        if bandwidth != "loo" {
            label.push('/');
            label.push_str(bandwidth);
        }
        HpboMethod {
            label,
            acq: acq.into(),
            inference: inference.into(),
            bandwidth: bandwidth.into(),
            homoscedastic: false,
            gamma_scale: None,
        }
    }

    /// RAHBO with `γ = scale · ρ`, labelled `rahbo/g={scale}rho`. At scale 0 it is UCB with
    /// the same η (the acquisition `μ + η σ − γ σ²_noise` loses its noise term).
    pub fn rahbo_gamma(scale: f64) -> HpboMethod {
        HpboMethod {
            label: format!("rahbo/g={scale}rho"),
            gamma_scale: Some(scale),
            ..HpboMethod::new("rahbo", "hb", "loo")
        }
    }

    /// `acq` on a homoscedastic surrogate (constant noise variance `a`), labelled
    /// `{acq}/homo`.
    pub fn homoscedastic(acq: &str) -> HpboMethod {
        HpboMethod {
            label: format!("{acq}/homo"),
            homoscedastic: true,
            ..HpboMethod::new(acq, "hb", "loo")
        }
    }

    fn config(&self, problem: &HpboProblem, anchors: Vec<Vec<f64>>) -> Result<HpboConfig> {
        // RAHBO's penalty weight is the mean-variance trade-off it optimizes (Makarova et al.
        // 2021): the metric's ρ. ANPEI penalizes the noise standard deviation with γ = 1.
        let gamma = if self.acq == "rahbo" {
            problem.default_rho() * self.gamma_scale.unwrap_or(1.0)
        } else {
            GAMMA
        };
        let mut cfg = HpboConfig::new(RiskKind::parse(&self.acq, ETA, gamma)?, anchors, problem.a);
        cfg.inference = DuelInference::parse(&self.inference)?;
        cfg.bandwidth = Bandwidth::parse(&self.bandwidth)?;
        cfg.homoscedastic = self.homoscedastic;
        Ok(cfg)
    }
}

/// One experiment: methods × problems × seeds, `iters` acquisition rounds per run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HpboExperiment {
    /// Name (`main`, `homoscedastic`, `inference`, `bandwidth`, `rahbo-gamma`, `student-t`).
    pub name: String,
    /// Methods.
    pub methods: Vec<HpboMethod>,
    /// Problems.
    pub problems: Vec<String>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Acquisition rounds after the initial duels.
    pub iters: usize,
}

/// RAHBO's γ / ρ in the γ sweep (γ = ρ is the main runs' RAHBO, γ = 0 is UCB).
pub const GAMMA_SCALES: [f64; 3] = [0.1, 0.3, 3.0];

/// The suite: the paper's Figure 2 set, its ablations and RAHBO's γ sweep.
pub fn experiments(quick: bool) -> Vec<HpboExperiment> {
    let (seeds, iters, ab_seeds): (u64, usize, u64) = if quick { (3, 15, 2) } else { (30, 50, 30) };
    let four = |inf: &str, bw: &str| -> Vec<HpboMethod> {
        ["rahbo", "anpei", "ei", "ucb"]
            .iter()
            .map(|a| HpboMethod::new(a, inf, bw))
            .collect()
    };
    let mut inference = four("laplace", "loo");
    inference.extend(four("ep", "loo"));
    vec![
        HpboExperiment {
            name: "main".into(),
            methods: four("hb", "loo"),
            problems: vec!["sine1d".into(), "branin2d".into(), "hartmann4d".into()],
            seeds: (0..seeds).collect(),
            iters,
        },
        // Homoscedastic PBO (the abstract's baseline): EI and UCB on a surrogate whose
        // noise is the constant `a`, on the main runs' problems and seeds.
        HpboExperiment {
            name: "homoscedastic".into(),
            methods: vec![
                HpboMethod::homoscedastic("ei"),
                HpboMethod::homoscedastic("ucb"),
            ],
            problems: vec!["sine1d".into(), "branin2d".into(), "hartmann4d".into()],
            seeds: (0..seeds).collect(),
            iters,
        },
        HpboExperiment {
            name: "inference".into(),
            methods: inference,
            problems: vec!["hartmann4d".into()],
            seeds: (0..ab_seeds).collect(),
            iters,
        },
        HpboExperiment {
            name: "bandwidth".into(),
            methods: vec![
                HpboMethod::new("rahbo", "hb", "evidence"),
                HpboMethod::new("anpei", "hb", "evidence"),
            ],
            problems: vec!["sine1d".into(), "hartmann4d".into()],
            seeds: (0..ab_seeds).collect(),
            iters,
        },
        // RAHBO's γ: with γ = ρ the acquisition's noise penalty is the metric's own; the
        // sweep shows how much of the risk-averse claim that builds in.
        HpboExperiment {
            name: "rahbo-gamma".into(),
            methods: GAMMA_SCALES
                .iter()
                .map(|g| HpboMethod::rahbo_gamma(*g))
                .collect(),
            problems: vec!["sine1d".into(), "branin2d".into(), "hartmann4d".into()],
            seeds: (0..seeds).collect(),
            iters,
        },
        HpboExperiment {
            name: "student-t".into(),
            methods: four("hb", "loo"),
            problems: vec!["hartmann4d-t".into()],
            seeds: (0..ab_seeds).collect(),
            iters,
        },
    ]
}

/// One acquisition round of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HpboRecord {
    /// Experiment.
    pub experiment: String,
    /// Method label.
    pub method: String,
    /// Problem.
    pub problem: String,
    /// Seed.
    pub seed: u64,
    /// Round (1-based, after the initial duels).
    pub iter: usize,
    /// The acquired input `x̂_t` (user units).
    pub x: Vec<f64>,
    /// `f(x̂_t)`.
    pub f: f64,
    /// True noise variance at `x̂_t`.
    pub noise_var: f64,
    /// The model's noise variance at `x̂_t`.
    pub noise_var_est: f64,
    /// `MV(x̂_t)` with `ρ = 3 f(x_max)`.
    pub mv: f64,
    /// Risk-averse simple regret `MV(x_max) − MV(x̂_t)`.
    pub ra_regret: f64,
    /// Simple regret `f(x_max) − f(x̂_t)`.
    pub regret: f64,
    /// Cumulative risk-averse regret.
    pub ra_cum_regret: f64,
    /// Cumulative regret.
    pub cum_regret: f64,
    /// Best value found so far.
    pub best_f: f64,
    /// Risk-averse best value found so far.
    pub best_mv: f64,
    /// Wall seconds of `ask` + `tell` this round (not deterministic).
    pub seconds: f64,
}

/// Run one (experiment, method, problem, seed): the strategy asks, the simulated person
/// ([`HpboRespondent`]) answers, through [`crate::runner::drive`]; one record per
/// acquisition round after the `2d + 2` initial duels.
pub fn run_one(
    exp: &str,
    method: &HpboMethod,
    problem: &str,
    seed: u64,
    iters: usize,
) -> Result<Vec<HpboRecord>> {
    let p = HpboProblem::by_name(problem)?;
    let mut arng = stream(seed, &[0xA2C4, p.dim() as u64]);
    let anchors: Vec<Vec<f64>> = p
        .anchors(&mut arng)
        .iter()
        .map(|u| p.space.to_user_reals(u))
        .collect::<Result<_>>()?;
    let mut s = Hpbo::new(p.space.clone(), method.config(&p, anchors)?, seed)?;
    let mut person = HpboRespondent::new(HpboProblem::by_name(problem)?, seed);
    let n_init = s.n_init();
    let rho = p.default_rho();
    let mv_max = p.mv(&p.x_max, rho);
    let f_max = p.f_max();
    let mut out = Vec::with_capacity(iters);
    let (mut ra_cum, mut cum, mut best_f, mut best_mv) =
        (0.0, 0.0, f64::NEG_INFINITY, f64::NEG_INFINITY);
    // The model's noise as it was when the strategy chose the duel: the answer's refit
    // (in `tell`, before the observer runs) may move it, and `ask` does not.
    let mut noise_at_ask = s.noise().clone();
    crate::runner::drive(&mut s, &mut person, n_init + iters, |step| {
        let noise = std::mem::replace(&mut noise_at_ask, step.strategy.noise().clone());
        if step.iter < n_init {
            return Ok(ControlFlow::Continue(()));
        }
        let x = match &step.query.kind {
            QueryKind::Compare { points, .. } => match points.get(1) {
                Some(Point::Unit(u)) => u,
                _ => return Err(Error::State("HPBO duels two points of a box".into())),
            },
            _ => return Err(Error::State("HPBO asks duels".into())),
        };
        let f = p.f(x);
        let mv = p.mv(x, rho);
        ra_cum += mv_max - mv;
        cum += f_max - f;
        best_f = best_f.max(f);
        best_mv = best_mv.max(mv);
        out.push(HpboRecord {
            experiment: exp.into(),
            method: method.label.clone(),
            problem: problem.into(),
            seed,
            iter: step.iter + 1 - n_init,
            x: p.space.to_user_reals(x)?,
            f,
            noise_var: p.noise_var(x),
            noise_var_est: noise.variance(x),
            mv,
            ra_regret: mv_max - mv,
            regret: f_max - f,
            ra_cum_regret: ra_cum,
            cum_regret: cum,
            best_f,
            best_mv,
            seconds: step.ask_seconds + step.tell_seconds,
        });
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(out)
}

/// Run every experiment's grid in parallel (one job per run, results in grid order).
pub fn run_experiments(
    exps: &[HpboExperiment],
    runner: &crate::runner::Runner,
) -> Result<Vec<HpboRecord>> {
    let mut jobs = Vec::new();
    for e in exps {
        for p in &e.problems {
            for m in &e.methods {
                for &s in &e.seeds {
                    jobs.push((e, m, p, s));
                }
            }
        }
    }
    let runs = runner.run_parallel("hpbo", &jobs, |(e, m, p, s)| {
        run_one(&e.name, m, p, *s, e.iters).map_err(|err| {
            Error::Numerical(format!(
                "experiment {}, method {}, problem {p}, seed {s}: {err}",
                e.name, m.label
            ))
        })
    })?;
    Ok(runs.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpbo::summarize;

    /// RAHBO at γ = 0 asks exactly UCB's duels (same η), and γ changes the queries.
    #[test]
    fn rahbo_at_gamma_zero_is_ucb() {
        let strip = |v: &[HpboRecord]| v.iter().map(|r| r.x.clone()).collect::<Vec<_>>();
        let ucb = run_one("t", &HpboMethod::new("ucb", "hb", "loo"), "branin2d", 3, 5).unwrap();
        let g0 = run_one("t", &HpboMethod::rahbo_gamma(0.0), "branin2d", 3, 5).unwrap();
        assert_eq!(strip(&ucb), strip(&g0));
        let g1 = run_one("t", &HpboMethod::rahbo_gamma(1.0), "branin2d", 3, 5).unwrap();
        let main = run_one(
            "t",
            &HpboMethod::new("rahbo", "hb", "loo"),
            "branin2d",
            3,
            5,
        )
        .unwrap();
        assert_eq!(strip(&g1), strip(&main));
        assert_ne!(strip(&g1), strip(&g0));
        assert_eq!(HpboMethod::rahbo_gamma(0.3).label, "rahbo/g=0.3rho");
    }

    #[test]
    fn metrics_follow_their_definitions_and_runs_are_reproducible() {
        let m = HpboMethod::new("anpei", "hb", "loo");
        let a = run_one("t", &m, "sine1d", 4, 6).unwrap();
        let b = run_one("t", &m, "sine1d", 4, 6).unwrap();
        let strip = |v: &[HpboRecord]| {
            v.iter()
                .map(|r| (r.x.clone(), r.f, r.mv))
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&a), strip(&b));
        let p = HpboProblem::by_name("sine1d").unwrap();
        let rho = p.default_rho();
        let mut cum = 0.0;
        for r in &a {
            let u = [r.x[0] / 2.0];
            assert!((r.f - (2.0 * std::f64::consts::PI * r.x[0]).sin()).abs() < 1e-12);
            assert!((r.mv - (r.f - rho * p.noise_var(&u))).abs() < 1e-12);
            cum += p.mv(&p.x_max, rho) - r.mv;
            assert!((r.ra_cum_regret - cum).abs() < 1e-9);
        }
        let sums = summarize(&a);
        assert_eq!(sums.len(), 1);
        assert_eq!(
            sums[0].last("ra_cum_regret").0,
            a.last().unwrap().ra_cum_regret
        );
    }
}
