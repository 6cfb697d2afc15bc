//! `agora bench pbo-paired`: agora's preferential BO against BoTorch's `PairwiseGP` + EUBO
//! on the same seeds, fed the same initial pairs and the same simulated person's coin flips.
//!
//! The protocol is RESULTS.md §2 (`../shared/anchors/pbo_loop.py`): Branin and Hartmann6 in
//! the unit cube, `2d + 2` random initial pairs, 40 asked pairs, a probit person who prefers
//! the first option with probability `Φ((f₀ − f₁)/(√2 σ))`, σ = 0.1 × the objective's range,
//! and regret `f* − f(the compared point with the highest posterior mean)`. For every seed,
//! `tools/pbo_paired/make.py` records what BoTorch's run drew before fitting anything: its
//! initial points (`torch.rand`) and the person's uniform draws (`default_rng(10000 + seed)`,
//! one per duel, initial pairs first), with BoTorch's final regret on that seed
//! (`data/anchor-results/pbo_paired.json`). agora's run asks the same initial pairs
//! ([`PboConfig::initial_pairs`]) and its person answers with the same draws, so the two
//! runs differ only by what the two libraries ask after the initial pairs, and the
//! per-seed differences are judged by [`crate::stats::RULE`].

use crate::stats::{Better, Judged, mean_se, pm, verdict};
use crate::table::Table;
use agora_core::{Answer, AnswerKind, Error, Point, Query, QueryKind, Respondent, Result};
use agora_math::special::norm_cdf;
use agora_methods::{PairRule, Pbo, PboConfig, PreferenceSuggesterConfig, Strategy};
use agora_problems::Problem;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

const INPUTS: &str = include_str!("../../../data/anchor-results/pbo_paired.json");

/// What BoTorch drew on each seed, and its final regret there.
#[derive(Debug, Clone, Deserialize)]
pub struct PairedInputs {
    /// Asked pairs after the initial ones.
    pub n_iters: usize,
    /// Per problem (`branin`, `hartmann6`).
    pub problems: BTreeMap<String, PairedProblem>,
}

/// One problem of [`PairedInputs`].
#[derive(Debug, Clone, Deserialize)]
pub struct PairedProblem {
    /// Dimension.
    pub d: usize,
    /// The protocol's optimum value (maximized).
    pub f_max: f64,
    /// The person's probit noise σ.
    pub sigma: f64,
    /// Per seed.
    pub seeds: Vec<PairedSeed>,
}

/// One seed of a [`PairedProblem`].
#[derive(Debug, Clone, Deserialize)]
pub struct PairedSeed {
    /// The seed.
    pub seed: u64,
    /// Initial points in the unit cube; pairs are rows `(2k, 2k + 1)`.
    pub x0: Vec<Vec<f64>>,
    /// The objective at `x0` as BoTorch computed it (a check of agora's test functions).
    pub f_x0: Vec<f64>,
    /// The person's uniform draws, one per duel in order.
    pub flips: Vec<f64>,
    /// BoTorch's final regret on this seed (`None`: not run).
    pub botorch_final_regret: Option<f64>,
}

/// The recorded inputs (`data/anchor-results/pbo_paired.json`).
pub fn inputs() -> Result<PairedInputs> {
    serde_json::from_str(INPUTS)
        .map_err(|e| Error::invalid("data/anchor-results/pbo_paired.json", e.to_string()))
}

/// An agora PBO configuration compared with BoTorch: `pbo-eubo`'s defaults changed by
/// `apply`.
#[derive(Debug, Clone, Copy)]
pub struct Variant {
    /// Its name in the table.
    pub name: &'static str,
    /// The changes to [`PboConfig::new`]`(PairRule::Eubo)`.
    pub apply: fn(&mut PboConfig),
}

impl Variant {
    /// The `PboConfig` of this variant (before the initial pairs are set).
    pub fn config(&self) -> PboConfig {
        let mut cfg = PboConfig::new(PairRule::Eubo);
        (self.apply)(&mut cfg);
        cfg
    }
}

fn people(cfg: &mut PboConfig) {
    cfg.model = PreferenceSuggesterConfig::people_model();
}

fn winner(cfg: &mut PboConfig) {
    cfg.rule = PairRule::WinnerVsEubo;
}

/// The variants measured (the first is `pbo-eubo` as it was: BoTorch's model and rule).
pub const VARIANTS: [Variant; 35] = [
    Variant {
        name: "pbo-eubo (BoTorch's model and rule)",
        apply: |_| {},
    },
    Variant {
        name: "pbo-winner",
        apply: winner,
    },
    Variant {
        name: "pbo-eubo model=people",
        apply: people,
    },
    Variant {
        name: "pbo-winner model=people",
        apply: |c| {
            winner(c);
            people(c);
        },
    },
    Variant {
        name: "pbo-winner trust_region=0.5",
        apply: |c| {
            winner(c);
            c.trust_region = Some(0.5);
        },
    },
    Variant {
        name: "pbo-winner model=people trust_region=0.5",
        apply: |c| {
            winner(c);
            people(c);
            c.trust_region = Some(0.5);
        },
    },
    Variant {
        name: "pbo-eubo, each fit from the prior's start (as BoTorch)",
        apply: |c| c.warm_start = false,
    },
    Variant {
        name: "pbo-eubo, each fit from the warm and the prior's start",
        apply: |c| c.model.restart_from_init = true,
    },
    Variant {
        name: "pbo-eubo model=people, warm and prior's start",
        apply: |c| {
            people(c);
            c.model.restart_from_init = true;
        },
    },
    Variant {
        name: "pbo-bald",
        apply: |c| c.rule = PairRule::Bald,
    },
    Variant {
        name: "pbo-eubo, EUBO maximized with 1,024 raw samples and 32 restarts",
        apply: |c| {
            c.maximizer.raw_samples = 1024;
            c.maximizer.restarts = 32;
        },
    },
    Variant {
        name: "pbo-eubo model=people, 1,024 raw samples and 32 restarts",
        apply: |c| {
            people(c);
            c.maximizer.raw_samples = 1024;
            c.maximizer.restarts = 32;
        },
    },
    Variant {
        name: "pbo-eubo, lengthscale prior Gamma(2.4, 5.4) (half the mean)",
        apply: |c| ls_prior(c, 5.4),
    },
    Variant {
        name: "pbo-eubo, lengthscale prior Gamma(2.4, 1.35) (twice the mean)",
        apply: |c| ls_prior(c, 1.35),
    },
    Variant {
        name: "pbo-eubo, Matérn-5/2",
        apply: |c| c.model.kernel = agora_gp::StationaryKind::Matern52,
    },
    Variant {
        name: "pbo-eubo, Bradley-Terry likelihood",
        apply: |c| c.model.likelihood = agora_gp::PrefLikelihood::BradleyTerry,
    },
    Variant {
        name: "pbo-eubo, lengthscale prior Gamma(2.4, 8.1) (a third of the mean)",
        apply: |c| ls_prior(c, 8.1),
    },
    Variant {
        name: "pbo-eubo, lengthscale prior Gamma(2.4, 10.8) (a quarter of the mean)",
        apply: |c| ls_prior(c, 10.8),
    },
    Variant {
        name: "pbo-eubo, lengthscale prior Gamma(2.4, 16.2) (a sixth of the mean)",
        apply: |c| ls_prior(c, 16.2),
    },
    Variant {
        name: "pbo-eubo, output scale prior on [1, 4], bounds [0.5, 8]",
        apply: |c| scale_box(c, 1.0, 4.0),
    },
    Variant {
        name: "pbo-eubo, output scale prior on [1, 4], bounds [0.5, 8], half lengthscale prior",
        apply: |c| {
            scale_box(c, 1.0, 4.0);
            ls_prior(c, 5.4);
        },
    },
    Variant {
        name: "pbo-eubo, output scale on [0.005, 20]",
        apply: |c| c.model.outputscale_bounds = (0.005, 20.0),
    },
    Variant {
        name: "pbo-eubo, output scale on [0.5, 20], half lengthscale prior",
        apply: |c| capped(c, 20.0, 5.4),
    },
    Variant {
        name: "pbo-eubo, output scale prior on [1, 2], bounds [0.5, 4], half lengthscale prior",
        apply: |c| {
            scale_box(c, 1.0, 2.0);
            ls_prior(c, 5.4);
        },
    },
    Variant {
        name: "pbo-eubo, output scale prior on [2, 8], bounds [1, 16], half lengthscale prior",
        apply: |c| {
            scale_box(c, 2.0, 8.0);
            ls_prior(c, 5.4);
        },
    },
    Variant {
        name: "pbo-eubo, output scale prior on [1, 4], bounds [0.5, 8], half lengthscale prior, 1,024 raw samples and 32 restarts",
        apply: |c| {
            scale_box(c, 1.0, 4.0);
            ls_prior(c, 5.4);
            c.maximizer.raw_samples = 1024;
            c.maximizer.restarts = 32;
        },
    },
    Variant {
        name: "pbo-winner, output scale prior on [1, 4], bounds [0.5, 8], half lengthscale prior",
        apply: |c| {
            scale_box(c, 1.0, 4.0);
            ls_prior(c, 5.4);
            winner(c);
        },
    },
    Variant {
        name: "pbo-eubo, output scale on [0.5, 8], lengthscale prior Gamma(2.4, 4)",
        apply: |c| capped(c, 8.0, 4.0),
    },
    Variant {
        name: "pbo-eubo, output scale on [0.5, 20], lengthscale prior Gamma(2.4, 4)",
        apply: |c| capped(c, 20.0, 4.0),
    },
    Variant {
        name: "pbo-eubo, output scale on [0.5, 50], lengthscale prior Gamma(2.4, 4)",
        apply: |c| capped(c, 50.0, 4.0),
    },
    Variant {
        name: "pbo-eubo model=capped (output scale on [0.5, 8], lengthscale prior Gamma(2.4, 5.4))",
        apply: |c| c.model = agora_methods::pbo::capped_model(),
    },
    Variant {
        name: "pbo-eubo, output scale on [0.5, 50], lengthscale prior Gamma(2.4, 5.4)",
        apply: |c| capped(c, 50.0, 5.4),
    },
    Variant {
        name: "pbo-eubo, output scale on [0.5, 8], lengthscale prior Gamma(2.4, 6.5)",
        apply: |c| capped(c, 8.0, 6.5),
    },
    Variant {
        name: "pbo-eubo, output scale on [0.5, 20], lengthscale prior Gamma(2.4, 6.5)",
        apply: |c| capped(c, 20.0, 6.5),
    },
    Variant {
        name: "pbo-eubo, output scale on [0.5, 50], lengthscale prior Gamma(2.4, 6.5)",
        apply: |c| capped(c, 50.0, 6.5),
    },
];

/// BoTorch's lengthscale prior Gamma(2.4, 2.7) with rate `beta` instead, started at its mode.
fn ls_prior(c: &mut PboConfig, beta: f64) {
    c.model.lengthscale_prior = agora_gp::Prior::Gamma { alpha: 2.4, beta };
    c.model.init_lengthscale = 1.4 / beta;
}

/// The output scale bounded to `[0.5, cap]` (BoTorch's prior kept) and [`ls_prior`].
fn capped(c: &mut PboConfig, cap: f64, beta: f64) {
    c.model.outputscale_bounds = (0.5, cap);
    ls_prior(c, beta);
}

/// The output scale's prior flat on `[a, b]`, bounded to `[a / 2, 2 b]`.
fn scale_box(c: &mut PboConfig, a: f64, b: f64) {
    c.model.outputscale_prior = agora_gp::Prior::SmoothedBox { a, b, sigma: 0.01 };
    c.model.outputscale_bounds = (a / 2.0, 2.0 * b);
}

/// The simulated person of the protocol, answering with recorded uniform draws: the first
/// option wins when the next draw is below `Φ((f₀ − f₁)/(√2 σ))`.
pub struct FlipRater<'a> {
    problem: &'a Problem,
    sigma: f64,
    flips: &'a [f64],
    used: usize,
}

impl<'a> FlipRater<'a> {
    /// A person on `problem` with noise `sigma` who draws `flips` in order.
    pub fn new(problem: &'a Problem, sigma: f64, flips: &'a [f64]) -> FlipRater<'a> {
        FlipRater {
            problem,
            sigma,
            flips,
            used: 0,
        }
    }
}

impl Respondent for FlipRater<'_> {
    fn answer(&mut self, query: &Query) -> Result<Answer> {
        let QueryKind::Compare { points, .. } = &query.kind else {
            return Err(Error::unsupported_query("FlipRater", query));
        };
        let [Point::Unit(a), Point::Unit(b)] = points.as_slice() else {
            return Err(Error::invalid(
                "points",
                "the recorded person compares two box points",
            ));
        };
        let u = *self.flips.get(self.used).ok_or_else(|| {
            Error::invalid(
                "flips",
                format!(
                    "only {} recorded draws; the run asked more",
                    self.flips.len()
                ),
            )
        })?;
        self.used += 1;
        let (fa, fb) = (
            self.problem.value_at_unit(a)?,
            self.problem.value_at_unit(b)?,
        );
        let p_first = norm_cdf((fa - fb) / (std::f64::consts::SQRT_2 * self.sigma));
        Ok(Answer {
            query_id: query.id,
            kind: AnswerKind::Choice {
                winner: usize::from(u >= p_first),
                rater: None,
            },
        })
    }
}

/// agora's final regret on one seed with one variant.
pub fn run_seed(
    problem: &str,
    input: &PairedProblem,
    seed: &PairedSeed,
    n_iters: usize,
    variant: &Variant,
) -> Result<f64> {
    Ok(run_seed_detail(problem, input, seed, n_iters, variant)?.0)
}

/// agora's final regret on one seed with one variant, and the regret of the best point it
/// compared (by the true objective): a run that compared a good point but recommends a
/// worse one failed to recognize it; a run whose best compared point is poor never found
/// the peak.
pub fn run_seed_detail(
    problem: &str,
    input: &PairedProblem,
    seed: &PairedSeed,
    n_iters: usize,
    variant: &Variant,
) -> Result<(f64, f64)> {
    let prob = Problem::by_name(problem)?;
    let mut cfg = variant.config();
    cfg.initial_pairs = seed
        .x0
        .chunks(2)
        .map(|p| [p[0].clone(), p[1].clone()])
        .collect();
    let n_init = cfg.initial_pairs.len();
    let mut pbo = Pbo::new(prob.space.clone(), cfg, seed.seed)?;
    let mut rater = FlipRater::new(&prob, input.sigma, &seed.flips);
    let mut best_seen = f64::NEG_INFINITY;
    crate::runner::drive(&mut pbo, &mut rater, n_init + n_iters, |step| {
        for p in step.query.kind.points() {
            if let Point::Unit(x) = p {
                best_seen = best_seen.max(prob.value_at_unit(&x)?);
            }
        }
        Ok(std::ops::ControlFlow::Continue(()))
    })?;
    let Some((Point::Unit(u), _)) = pbo.recommend() else {
        return Err(Error::State("PBO recommended nothing".into()));
    };
    Ok((
        input.f_max - prob.value_at_unit(&u)?,
        input.f_max - best_seen,
    ))
}

/// One row of the paired comparison.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairedRow {
    /// Problem.
    pub problem: String,
    /// Variant.
    pub variant: String,
    /// Seeds paired (those with a BoTorch result).
    pub seeds: Vec<u64>,
    /// agora's final regret per seed.
    pub agora: Vec<f64>,
    /// The regret of the best point agora compared, per seed.
    #[serde(default)]
    pub agora_best_compared: Vec<f64>,
    /// The baseline's final regret per seed: BoTorch's, or with fresh seeds ([`run_fresh`])
    /// agora's `pbo-eubo` with BoTorch's model ([`VARIANTS`]`[0]`).
    pub botorch: Vec<f64>,
    /// What the `botorch` column holds (`BoTorch` unless fresh seeds were run).
    #[serde(default = "botorch_label")]
    pub baseline: String,
    /// "agora beats BoTorch" (lower regret) judged by the rule.
    pub judged: Judged,
}

/// Run `variants` on `problems` over the seeds that have a BoTorch result (at most
/// `max_seeds` of them, in seed order), in parallel over seeds.
pub fn run(problems: &[String], variants: &[Variant], max_seeds: usize) -> Result<Vec<PairedRow>> {
    let inputs = inputs()?;
    let mut rows = Vec::new();
    for p in problems {
        let input = inputs.problems.get(p.as_str()).ok_or_else(|| {
            Error::invalid(
                "problem",
                format!(
                    "`{p}` has no paired inputs; choose from {:?}",
                    inputs.problems.keys().collect::<Vec<_>>()
                ),
            )
        })?;
        let seeds: Vec<&PairedSeed> = input
            .seeds
            .iter()
            .filter(|s| s.botorch_final_regret.is_some())
            .take(max_seeds)
            .collect();
        for v in variants {
            let detail: Vec<(f64, f64)> = seeds
                .par_iter()
                .map(|s| run_seed_detail(p, input, s, inputs.n_iters, v))
                .collect::<Result<_>>()?;
            let agora: Vec<f64> = detail.iter().map(|d| d.0).collect();
            let agora_best_compared: Vec<f64> = detail.iter().map(|d| d.1).collect();
            let botorch: Vec<f64> = seeds
                .iter()
                .filter_map(|s| s.botorch_final_regret)
                .collect();
            let judged = verdict(&agora, &botorch, Better::Lower)?;
            rows.push(PairedRow {
                problem: p.clone(),
                variant: v.name.into(),
                seeds: seeds.iter().map(|s| s.seed).collect(),
                agora,
                agora_best_compared,
                botorch,
                baseline: botorch_label(),
                judged,
            });
        }
    }
    Ok(rows)
}

fn botorch_label() -> String {
    "BoTorch".into()
}

/// Seeds of [`fresh_problem`]: none of them is one of BoTorch's recorded seeds (0–39).
pub const FRESH_SEEDS: std::ops::Range<u64> = 1000..1040;

/// A validation on seeds BoTorch never ran: for each of `seeds`, new initial pairs
/// (uniform in the unit cube) and new person's draws from a ChaCha stream of the seed, the
/// protocol's σ and optimum otherwise. A variant chosen among many on BoTorch's 40 seeds
/// is judged again here against `pbo-eubo` as it was ([`VARIANTS`]`[0]`), so that its
/// gain is not an artefact of the search over those seeds.
pub fn fresh_problem(problem: &str, seeds: std::ops::Range<u64>) -> Result<PairedProblem> {
    let inputs = inputs()?;
    let base = inputs.problems.get(problem).ok_or_else(|| {
        Error::invalid(
            "problem",
            format!(
                "`{problem}` has no paired inputs; choose from {:?}",
                inputs.problems.keys().collect::<Vec<_>>()
            ),
        )
    })?;
    let prob = Problem::by_name(problem)?;
    let d = base.d;
    let n0 = 2 * d + 2;
    let seeds = seeds
        .map(|seed| {
            use rand::RngExt;
            let mut rng = agora_math::rng::stream(seed, &[0x9a1d]);
            let x0: Vec<Vec<f64>> = (0..2 * n0)
                .map(|_| (0..d).map(|_| rng.random::<f64>()).collect())
                .collect();
            let f_x0 = x0
                .iter()
                .map(|x| prob.value_at_unit(x))
                .collect::<Result<_>>()?;
            let flips = (0..n0 + inputs.n_iters)
                .map(|_| rng.random::<f64>())
                .collect();
            Ok(PairedSeed {
                seed,
                x0,
                f_x0,
                flips,
                botorch_final_regret: None,
            })
        })
        .collect::<Result<_>>()?;
    Ok(PairedProblem {
        d,
        f_max: base.f_max,
        sigma: base.sigma,
        seeds,
    })
}

/// [`fresh_problem`] run: each of `variants` against [`VARIANTS`]`[0]` on the same fresh
/// seeds (the rows' `botorch` column holds variant 0's regrets).
pub fn run_fresh(
    problems: &[String],
    variants: &[Variant],
    seeds: std::ops::Range<u64>,
) -> Result<Vec<PairedRow>> {
    let n_iters = inputs()?.n_iters;
    let mut rows = Vec::new();
    for p in problems {
        let input = fresh_problem(p, seeds.clone())?;
        let detail = |v: &Variant| -> Result<Vec<(f64, f64)>> {
            input
                .seeds
                .par_iter()
                .map(|s| run_seed_detail(p, &input, s, n_iters, v))
                .collect()
        };
        let base: Vec<f64> = detail(&VARIANTS[0])?.iter().map(|d| d.0).collect();
        for v in variants {
            let got = detail(v)?;
            let agora: Vec<f64> = got.iter().map(|d| d.0).collect();
            let judged = verdict(&agora, &base, Better::Lower)?;
            rows.push(PairedRow {
                problem: p.clone(),
                variant: v.name.into(),
                seeds: input.seeds.iter().map(|s| s.seed).collect(),
                agora,
                agora_best_compared: got.iter().map(|d| d.1).collect(),
                botorch: base.clone(),
                baseline: "pbo-eubo with BoTorch's model".into(),
                judged,
            });
        }
    }
    Ok(rows)
}

/// The rows as a markdown table.
pub fn table(rows: &[PairedRow]) -> String {
    let base = rows.first().map_or("BoTorch", |r| r.baseline.as_str());
    let mut t = Table::new(&[
        "problem",
        "agora variant",
        "seeds",
        "agora final regret",
        "agora: best compared point",
        &format!("{base}: final regret"),
        &format!("{base} − agora (paired)"),
        "agora lower?",
    ]);
    for r in rows {
        let (am, ase) = mean_se(&r.agora);
        let (bm, bse) = mean_se(&r.botorch);
        t.row([
            r.problem.clone(),
            r.variant.clone(),
            r.seeds.len().to_string(),
            pm(am, ase, 3),
            {
                let (m, se) = mean_se(&r.agora_best_compared);
                pm(m, se, 3)
            },
            pm(bm, bse, 3),
            pm(r.judged.difference, r.judged.se, 3),
            r.judged.verdict.label().to_string(),
        ]);
    }
    let mut s = t.markdown();
    let _ = writeln!(
        s,
        "\nSame initial pairs and the same person's draws on every seed ({}); {}",
        if base == "BoTorch" {
            "BoTorch 0.18.1, `data/anchor-results/pbo_paired.json`"
        } else {
            "fresh seeds 1000-1039: new initial pairs and draws"
        },
        crate::stats::RULE
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorded inputs are what the protocol says, and agora's test functions agree
    /// with BoTorch's at BoTorch's initial points (to 1e-7 relative: BoTorch's Hartmann
    /// constants are created in float32 and then cast to float64, which moves values by
    /// about 1e-8).
    #[test]
    fn inputs_match_botorch_functions() {
        let inputs = inputs().unwrap();
        for (name, p) in &inputs.problems {
            let prob = Problem::by_name(name).unwrap();
            assert_eq!(p.seeds.len(), 40);
            for s in &p.seeds {
                assert_eq!(s.x0.len(), 2 * (2 * p.d + 2));
                assert_eq!(s.flips.len(), 2 * p.d + 2 + inputs.n_iters);
                for (x, f) in s.x0.iter().zip(&s.f_x0) {
                    let ours = prob.value_at_unit(x).unwrap();
                    assert!(
                        (ours - f).abs() <= 1e-7 * (1.0 + f.abs()),
                        "{name} {x:?}: {ours} vs {f}"
                    );
                }
            }
            assert!((prob.function.optimum_value() - p.f_max).abs() < 1e-4);
        }
    }

    /// The recorded person prefers the first option exactly when the draw is below the
    /// probit probability (checked against hand-computed values).
    #[test]
    fn flip_rater_follows_the_draws() {
        let prob = Problem::by_name("hartmann6").unwrap();
        let a = vec![0.2, 0.15, 0.48, 0.28, 0.31, 0.66];
        let b = vec![0.9; 6];
        let (fa, fb) = (
            prob.value_at_unit(&a).unwrap(),
            prob.value_at_unit(&b).unwrap(),
        );
        let p = norm_cdf((fa - fb) / (2f64.sqrt() * 0.3));
        assert!(p > 0.5 && p < 1.0);
        let flips = [p - 1e-9, p + 1e-9];
        let mut r = FlipRater::new(&prob, 0.3, &flips);
        let q = Query {
            id: 0,
            kind: QueryKind::Compare {
                points: vec![Point::Unit(a), Point::Unit(b)],
                rater: None,
            },
        };
        let winner = |ans: Answer| match ans.kind {
            AnswerKind::Choice { winner, .. } => winner,
            _ => usize::MAX,
        };
        assert_eq!(winner(r.answer(&q).unwrap()), 0);
        assert_eq!(winner(r.answer(&q).unwrap()), 1);
        assert!(r.answer(&q).is_err(), "no third draw recorded");
    }

    /// Fresh seeds follow the protocol's shapes, repeat, and are not BoTorch's seeds; the
    /// `capped` variant is the registry's `model=capped`.
    #[test]
    fn fresh_seeds_follow_the_protocol() {
        let rec = inputs().unwrap();
        let a = fresh_problem("hartmann6", 1000..1003).unwrap();
        let b = fresh_problem("hartmann6", 1000..1003).unwrap();
        let h = &rec.problems["hartmann6"];
        assert_eq!((a.d, a.sigma, a.f_max), (h.d, h.sigma, h.f_max));
        for (s, t) in a.seeds.iter().zip(&b.seeds) {
            assert_eq!((&s.x0, &s.flips), (&t.x0, &t.flips));
            assert_eq!(s.x0.len(), 28);
            assert_eq!(s.flips.len(), 14 + rec.n_iters);
            assert!(s.x0.iter().flatten().all(|v| (0.0..1.0).contains(v)));
            assert!(h.seeds.iter().all(|r| r.x0 != s.x0));
        }
        assert!(fresh_problem("rosenbrock", 0..1).is_err());
        let capped = VARIANTS
            .iter()
            .find(|v| v.name.starts_with("pbo-eubo model=capped"))
            .unwrap();
        assert_eq!(capped.config().model, agora_methods::pbo::capped_model());
    }

    /// A run asks the recorded initial pairs first, and is deterministic.
    #[test]
    fn runs_ask_the_recorded_pairs_and_repeat() {
        let inputs = inputs().unwrap();
        let p = &inputs.problems["branin"];
        let v = VARIANTS[0];
        let a = run_seed("branin", p, &p.seeds[0], 3, &v).unwrap();
        let b = run_seed("branin", p, &p.seeds[0], 3, &v).unwrap();
        assert_eq!(a.to_bits(), b.to_bits());
        let prob = Problem::by_name("branin").unwrap();
        let mut cfg = v.config();
        cfg.initial_pairs = vec![[p.seeds[0].x0[0].clone(), p.seeds[0].x0[1].clone()]];
        let mut pbo = Pbo::new(prob.space.clone(), cfg, 0).unwrap();
        let q = pbo.ask().unwrap();
        assert_eq!(
            q.kind.points(),
            vec![
                Point::Unit(p.seeds[0].x0[0].clone()),
                Point::Unit(p.seeds[0].x0[1].clone())
            ]
        );
    }
}
