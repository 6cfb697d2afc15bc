//! The Hartmann-6d experiment of collaborative BO with fair regret (Sim et al. 2021):
//! n = 3 parties, the proposed method at several ρ with fixed and varying c1, and BO-IFU
//! (docs/notes/collaborative-fair-bo.md §2).

use super::metrics::{CboRun, drive_parties};
use super::solo::{SideBySide, SoloUcb};
use agora_core::{Error, Point, Query, QueryKind, Result};
use agora_math::rng::derive_seed;
use agora_methods::{Cbo, CboConfig, CboScoring, Strategy};
use agora_problems::{Oracle, Problem};
use serde::{Deserialize, Serialize};

/// The authors' ten seeds (note §2).
pub const SEEDS: [u64; 10] = [8911, 7, 444, 3525, 5023, 1556, 5399, 7863, 4269, 2973];
/// Rounds per run, random rounds included (`T`).
pub const T: usize = 70;
/// Random rounds at the start of a run (the authors' `T0`).
pub const T0: usize = 10;
/// Standard deviation of the parties' observation noise.
pub const NOISE_STD: f64 = 0.1;

/// The authors' numbers re-run on this machine (docs/anchors/RESULTS-collaborative-bo.md): `(R_T/n,
/// time-averaged unfairness, worst SR at T)` as (mean, SE) at ρ = 1 and ρ = 0.2.
pub const REFERENCE: [(f64, [(f64, f64); 3]); 2] = [
    (1.0, [(74.24, 1.15), (2.287, 0.221), (0.0357, 0.0132)]),
    (0.2, [(110.38, 1.69), (0.446, 0.046), (0.2482, 0.0318)]),
];

/// One configured variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CboVariant {
    /// Label, e.g. `rho=0.6` or `rho=0.6 vary` or `ifu rho=0.6`.
    pub label: String,
    /// ρ.
    pub rho: f64,
    /// Vary c1 once.
    pub vary: bool,
    /// BO-IFU instead of the proposed method.
    pub ifu: bool,
    /// Solo GP-UCB per party instead (ρ, `vary` and `ifu` unused): each party alone with
    /// the same GP, c1 and c2 (the appendix's C.5 baseline).
    #[serde(default)]
    pub solo: bool,
}

impl CboVariant {
    /// The proposed method at `rho`.
    pub fn new(rho: f64, vary: bool, ifu: bool) -> CboVariant {
        let label = format!(
            "{}rho={rho}{}",
            if ifu { "ifu " } else { "" },
            if vary { " vary" } else { "" }
        );
        CboVariant {
            label,
            rho,
            vary,
            ifu,
            solo: false,
        }
    }

    /// Solo GP-UCB: each of the three parties optimizes alone (label `solo gp-ucb`).
    pub fn solo() -> CboVariant {
        CboVariant {
            label: "solo gp-ucb".into(),
            rho: 1.0,
            vary: false,
            ifu: false,
            solo: true,
        }
    }

    fn config(&self) -> CboConfig {
        let mut c = CboConfig::hartmann6(self.rho);
        c.vary_c1 = self.vary;
        if self.ifu {
            c.scoring = CboScoring::RankOnly;
        }
        c
    }
}

/// The Hartmann-6d parties of run `seed`: each evaluates its point with `N(0, 0.1²)` noise,
/// drawn in party order from the stream `derive_seed(seed, [0xB0])`.
pub fn parties(seed: u64) -> Result<Oracle> {
    Oracle::new(
        Problem::by_name("hartmann6")?,
        NOISE_STD,
        derive_seed(seed, &[0xB0]),
    )
}

/// The noiseless Hartmann-6d values of an evaluation query's points.
fn noiseless(problem: &Problem, q: &Query) -> Result<Vec<f64>> {
    let QueryKind::Evaluate { points } = &q.kind else {
        return Err(Error::unsupported_query("hartmann6 parties", q));
    };
    points
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            Point::Unit(u) => problem.value_at_unit(u),
            Point::Index(_) => Err(Error::invalid(
                format!("points[{i}]"),
                "Hartmann-6d parties evaluate unit-cube points",
            )),
        })
        .collect()
}

/// Run one variant on one seed for the protocol's `T` rounds.
pub fn run_one(v: &CboVariant, seed: u64) -> Result<CboRun> {
    run_rounds(v, seed, T)
}

/// Run one variant on one seed for `rounds` rounds (random rounds included).
///
/// Solo GP-UCB ([`CboVariant::solo`]) runs the parties' one-party strategies side by side
/// against the same parties, party `p` seeded `derive_seed(seed, [p, 0x50])`, as the
/// tuning suite's solo baseline.
pub fn run_rounds(v: &CboVariant, seed: u64, rounds: usize) -> Result<CboRun> {
    let problem = Problem::by_name("hartmann6")?;
    let cfg = v.config();
    let n_init = cfg.n_init;
    let mut s: Box<dyn Strategy> = if v.solo {
        let members = (0..cfg.parties)
            .map(|p| {
                let c = CboConfig {
                    parties: 1,
                    ..cfg.clone()
                };
                let party = Cbo::new(
                    problem.space.clone(),
                    c,
                    derive_seed(seed, &[p as u64, 0x50]),
                )?;
                Ok(SoloUcb::new(party))
            })
            .collect::<Result<Vec<_>>>()?;
        Box::new(SideBySide::new(members)?)
    } else {
        Box::new(Cbo::new(problem.space.clone(), cfg, seed)?)
    };
    let f = |q: &Query| noiseless(&problem, q);
    drive_parties(
        &mut *s,
        &mut parties(seed)?,
        rounds,
        n_init,
        Some(&f),
        CboRun::new(&v.label, seed),
        |_, _| {},
    )
}

/// The Hartmann-6d grid: the proposed method at five ρ with fixed and varying c1, BO-IFU
/// with fixed c1, and solo GP-UCB.
pub fn variants(quick: bool) -> Vec<CboVariant> {
    let rhos: &[f64] = if quick {
        &[1.0, 0.2]
    } else {
        &[1.0, 0.8, 0.6, 0.4, 0.2]
    };
    let mut v: Vec<CboVariant> = rhos
        .iter()
        .map(|r| CboVariant::new(*r, false, false))
        .collect();
    if !quick {
        v.extend(
            rhos.iter()
                .filter(|r| **r < 1.0)
                .map(|r| CboVariant::new(*r, true, false)),
        );
        v.extend(rhos.iter().map(|r| CboVariant::new(*r, false, true)));
    }
    v.push(CboVariant::solo());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cbo::metrics::{fair_regret_by_rounds, metrics};
    use agora_core::Answer;
    use agora_problems::TestFunction;
    use agora_problems::functions::Hartmann6;
    use rand_distr::{Distribution, StandardNormal};

    /// The parties answer as the suite's own loop did: Hartmann-6d at the user point plus
    /// 0.1 × a standard normal from `stream(seed, [0xB0])`, one per party in order.
    #[test]
    fn parties_add_the_suites_noise_stream() {
        let h = Hartmann6;
        let space = agora_core::Space::reals(&h.bounds()).unwrap();
        let mut noise = agora_math::rng::stream(8911, &[0xB0]);
        let mut p = parties(8911).unwrap();
        for id in 0..3 {
            let xs: Vec<Vec<f64>> = (0..3)
                .map(|i| {
                    (0..6)
                        .map(|j| ((i * 6 + j + id) % 7) as f64 / 7.0)
                        .collect()
                })
                .collect();
            let q = Query {
                id: id as u64,
                kind: QueryKind::Evaluate {
                    points: xs.iter().map(|x| Point::Unit(x.clone())).collect(),
                },
            };
            let want: Vec<f64> = xs
                .iter()
                .map(|u| {
                    let z: f64 = StandardNormal.sample(&mut noise);
                    h.eval(&space.to_user_reals(u).unwrap()) + 0.1 * z
                })
                .collect();
            assert_eq!(p.answer(&q).unwrap(), Answer::values(&q, want).unwrap());
            let problem = Problem::by_name("hartmann6").unwrap();
            let f = noiseless(&problem, &q).unwrap();
            assert_eq!(
                f,
                xs.iter()
                    .map(|u| h.eval(&space.to_user_reals(u).unwrap()))
                    .collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn identity_holds_on_a_real_run() {
        let v = CboVariant::new(0.4, false, false);
        let r = run_rounds(&v, 3, 14).unwrap();
        assert_eq!(r.f.len(), 14);
        assert_eq!(r.round_seconds.len(), 4);
        let m = metrics(&r.f, Hartmann6.optimum_value());
        let direct = fair_regret_by_rounds(&r.f, Hartmann6.optimum_value());
        let last = 13;
        assert!((m.fair_regret[last] - direct[last]).abs() < 1e-9);
        assert!((m.fair_regret[last] - m.r_over_n[last] - m.unfairness[last]).abs() < 1e-9);
        assert!(m.unfairness.iter().all(|u| *u >= -1e-12));
        // Observations are the noiseless values plus the parties' noise.
        assert!(
            r.f.iter()
                .flatten()
                .zip(r.y.iter().flatten())
                .all(|(f, y)| f != y)
        );
    }
}
