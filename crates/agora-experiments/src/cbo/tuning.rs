//! The hyper-parameter tuning experiments of collaborative BO: each party tunes a softmax
//! regression on its own shard of the digits data (docs/notes/collaborative-fair-bo.md §4;
//! the authors' tuning scripts, note §2), with n = 5 parties and, for scaling, n = 50; and
//! each of 10 parties tunes a small CNN on its own writer-style shard
//! ([`agora_problems::cnn_tuning`], the stand-in for the paper's CNN on FEMNIST).

use super::metrics::{CboRun, drive_parties};
use super::solo::{SideBySide, SoloUcb};
use agora_core::{Result, Space};
use agora_math::rng::derive_seed;
use agora_methods::{Cbo, CboConfig, Strategy};
use agora_problems::cnn_tuning::CnnTuning;
use agora_problems::tuning::{DigitsTuning, TuningParties, TuningTask};

/// Parties of the tuning experiment (one digits shard each).
pub const TUNING_PARTIES: usize = 5;
/// Rounds per tuning run (random rounds included), as in the authors' scripts.
pub const TUNING_T: usize = 50;
/// Rounds of the n = 50 tuning case (random rounds included): the paper's T = 50.
pub const TUNING_50_T: usize = 50;
/// Parties of the CNN tuning experiment (the authors' party `s` uses split `s % 10`).
pub const CNN_PARTIES: usize = 10;
/// Rounds per CNN tuning run (random rounds included), as in the authors' scripts.
pub const CNN_T: usize = 50;
/// c1 of the CNN tuning experiment (appendix C.1; c2 = 1).
pub const CNN_C1: f64 = 0.001;

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
    let prefix = if parties == TUNING_PARTIES {
        String::new()
    } else {
        format!("n={parties} ")
    };
    let task = DigitsTuning::new(TUNING_PARTIES)?;
    run_task(task, &prefix, parties, rho, vary, None, seed, rounds)
}

/// One CNN tuning run with [`CNN_PARTIES`] parties, party `p` on writer-style shard `p`
/// ([`CnnTuning`]), the tuning GP and c1 = [`CNN_C1`], c2 = 1; labels as the softmax task's.
pub fn run_cnn(rho: Option<f64>, seed: u64, rounds: usize) -> Result<CboRun> {
    let task = CnnTuning::new(CNN_PARTIES)?;
    run_task(
        task,
        "",
        CNN_PARTIES,
        rho,
        false,
        Some(CNN_C1),
        seed,
        rounds,
    )
}

/// A tuning run on `task` (labels start with `prefix`; `c1` overrides the tuning default).
#[allow(clippy::too_many_arguments)]
fn run_task<T: TuningTask>(
    task: T,
    prefix: &str,
    parties: usize,
    rho: Option<f64>,
    vary: bool,
    c1: Option<f64>,
    seed: u64,
    rounds: usize,
) -> Result<CboRun> {
    let mut respondent = TuningParties::new(task, parties, seed)?;
    let space = Space::reals(&[(0.0, 1.0); 3])?;
    let base = |r: f64| {
        let mut c = CboConfig::tuning(r, parties, 3);
        if let Some(c1) = c1 {
            c.c1 = c1;
        }
        c
    };
    let (label, cfg) = match rho {
        Some(r) => (
            format!("{prefix}rho={r}{}", if vary { " vary" } else { "" }),
            CboConfig {
                vary_c1: vary,
                ..base(r)
            },
        ),
        None => (format!("{prefix}solo gp-ucb"), base(1.0)),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A CNN run: ten parties answer every round with accuracies in [0, 1], the first two
    /// rounds random; the same seed gives the same run, and solo GP-UCB runs beside it.
    #[test]
    fn cnn_runs_answer_for_ten_parties_and_follow_their_seed() {
        let a = run_cnn(Some(0.6), 3, 3).unwrap();
        assert_eq!(a.variant, "rho=0.6");
        assert_eq!(a.f.len(), 3);
        assert!(a.f.iter().all(|r| r.len() == CNN_PARTIES));
        assert!(a.f.iter().flatten().all(|v| (0.0..=1.0).contains(v)));
        assert_eq!(a.round_seconds.len(), 1);
        assert_eq!(run_cnn(Some(0.6), 3, 3).unwrap().f, a.f);
        let solo = run_cnn(None, 3, 3).unwrap();
        assert_eq!(solo.variant, "solo gp-ucb");
        assert_eq!(solo.f.len(), 3);
        assert_ne!(solo.f[2], a.f[2]);
    }
}
