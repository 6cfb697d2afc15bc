//! The hyper-parameter tuning experiment of collaborative BO: each party tunes a softmax
//! regression on its own shard of the digits data (docs/notes/collaborative-fair-bo.md §4;
//! the authors' tuning scripts, note §2), with n = 5 parties and, for scaling, n = 50.

use super::metrics::{CboRun, drive_parties};
use super::solo::{SideBySide, SoloUcb};
use agora_core::{Result, Space};
use agora_math::rng::derive_seed;
use agora_methods::{Cbo, CboConfig, Strategy};
use agora_problems::tuning::{DigitsTuning, TuningParties};

/// Parties of the tuning experiment (one digits shard each).
pub const TUNING_PARTIES: usize = 5;
/// Rounds per tuning run (random rounds included), as in the authors' scripts.
pub const TUNING_T: usize = 50;
/// Rounds of the n = 50 tuning case (random rounds included): the paper's T = 50.
pub const TUNING_50_T: usize = 50;

/// One tuning run of the proposed method (`Some(ρ)`, the authors' settings
/// [`CboConfig::tuning`]) or of solo GP-UCB per party
/// (`None`: each party alone, its own GP with the same settings, UCB `μ + √β_t σ` with
/// `β_t = c1 · d · log(c2 t)`). Values are validation accuracies; `f` holds them (the
/// authors regret against f* = 1 with U built from y).
pub fn run_tuning(rho: Option<f64>, seed: u64, rounds: usize) -> Result<CboRun> {
    run_tuning_n(TUNING_PARTIES, rho, false, seed, rounds)
}

/// [`run_tuning`] with `parties` parties; party `p` uses shard `p mod 5`, as the authors'
/// party `s` uses split `s % 5` ([`TuningParties`]). Labels carry `n=…` when `parties ≠ 5`.
/// With `vary` (and `Some(ρ)`), c1 is scaled once by the weights' factor
/// ([`CboConfig::vary_c1`]) and the label ends in ` vary`.
pub fn run_tuning_n(
    parties: usize,
    rho: Option<f64>,
    vary: bool,
    seed: u64,
    rounds: usize,
) -> Result<CboRun> {
    let task = DigitsTuning::new(TUNING_PARTIES)?;
    let mut respondent = TuningParties::new(task, parties, seed)?;
    let space = Space::reals(&[(0.0, 1.0); 3])?;
    let prefix = if parties == TUNING_PARTIES {
        String::new()
    } else {
        format!("n={parties} ")
    };
    let (label, cfg) = match rho {
        Some(r) => (
            format!("{prefix}rho={r}{}", if vary { " vary" } else { "" }),
            CboConfig {
                vary_c1: vary,
                ..CboConfig::tuning(r, parties, 3)
            },
        ),
        None => (
            format!("{prefix}solo gp-ucb"),
            CboConfig::tuning(1.0, parties, 3),
        ),
    };
    let n_init = cfg.n_init;
    let mut s: Box<dyn Strategy> = match rho {
        Some(_) => Box::new(Cbo::new(space, cfg, seed)?),
        None => {
            let solo = (0..parties)
                .map(|p| {
                    let c = CboConfig {
                        parties: 1,
                        ..cfg.clone()
                    };
                    let party = Cbo::new(space.clone(), c, derive_seed(seed, &[p as u64, 0x50]))?;
                    Ok(SoloUcb::new(party))
                })
                .collect::<Result<Vec<_>>>()?;
            Box::new(SideBySide::new(solo)?)
        }
    };
    let run = CboRun::new(label, seed);
    drive_parties(
        &mut *s,
        &mut respondent,
        rounds,
        n_init,
        None,
        run,
        |_, _| {},
    )
}
