//! DSBO's episodic objectives: seeded determinism, the Sparse-S / Delay-D episodic sums, the
//! scripted prey, the Drone Delivery mechanics against hand computations, the objective
//! builder, and REINFORCE on a tiny dense task.

use agora_math::rng::stream;
use agora_problems::dsbo_env::{
    COLLISION_PENALTY, DELIVERY_SCALE, DroneDelivery, DroneState, DsboEnvKind, DsboTask, FUEL_BASE,
    FUEL_OUT_PENALTY, FUEL_SPEED, PredPreyEnv, TeamEnv, run_episode,
};
use agora_problems::hom::{Ablation, HessianOptions};
use agora_problems::mpe::{RewardSchedule, SimpleTagConfig};
use agora_problems::reinforce::{ReinforceConfig, reinforce};
use rand::RngExt;

fn theta(task: &DsboTask, seed: u64, scale: f64) -> Vec<f64> {
    let mut r = stream(seed, &[]);
    (0..task.dim().unwrap())
        .map(|_| r.random_range(-scale..scale))
        .collect()
}

fn tasks() -> Vec<DsboTask> {
    vec![
        DsboTask::new(DsboEnvKind::PredPrey, 3)
            .unwrap()
            .with_distance_shaping(true),
        DsboTask::new(DsboEnvKind::HetPredPrey, 6).unwrap(),
        DsboTask::new(DsboEnvKind::DroneDelivery, 3).unwrap(),
    ]
}

#[test]
fn episodes_are_deterministic_by_seed() {
    for task in tasks() {
        let th = theta(&task, 1, 1.0);
        let p = task.policy().unwrap();
        let a = task.run(&p, &th, 0).unwrap();
        assert_eq!(a, task.run(&p, &th, 0).unwrap());
        assert_eq!(a.true_rewards.len(), task.horizon());
        // Another evaluation episode, or another task seed, starts elsewhere.
        assert_ne!(a.states[0], task.run(&p, &th, 1).unwrap().states[0]);
        let other = task.clone().with_seed(9);
        assert_ne!(a.states[0], other.run(&p, &th, 0).unwrap().states[0]);
        let v = task.evaluate(&th).unwrap();
        assert_eq!(v, task.evaluate(&th).unwrap());
        assert_eq!(v, a.delivered_return());
    }
    assert_eq!(tasks()[0].horizon(), 25);
    assert_eq!(tasks()[2].horizon(), 150);
}

#[test]
fn sparse_and_delay_sums_follow_their_definitions() {
    for base in [tasks()[0].clone(), tasks()[2].clone()] {
        let th = theta(&base, 2, 1.0);
        let p = base.policy().unwrap();
        let dense = base.run(&p, &th, 0).unwrap();
        let r = &dense.true_rewards;
        let len = r.len();
        assert!(r.iter().filter(|&&x| x != 0.0).count() > len / 2);
        assert_eq!(dense.delivered, *r);
        for period in [1, 5, 7, 25, 40] {
            let task = base
                .clone()
                .with_schedule(RewardSchedule::Sparse { period })
                .unwrap();
            let rec = task.run(&p, &th, 0).unwrap();
            assert_eq!(rec.true_rewards, *r);
            for t in 1..=len {
                // r̃_Γ = Σ of the last S rewards at Γ ≡ 0 (mod S), else 0; the pending window
                // arrives with the last step.
                let mut want = if t % period == 0 {
                    r[t - period..t].iter().sum()
                } else {
                    0.0
                };
                if t == len {
                    want += r[len - len % period..].iter().sum::<f64>();
                }
                assert!(
                    (rec.delivered[t - 1] - want).abs() < 1e-9,
                    "S={period} t={t}"
                );
            }
            let v = task.evaluate(&th).unwrap();
            assert!((v - r.iter().sum::<f64>()).abs() < 1e-9);
        }
        for lag in [0, 1, 5, 24, 25, 200] {
            let task = base
                .clone()
                .with_schedule(RewardSchedule::Delay { lag })
                .unwrap();
            let rec = task.run(&p, &th, 0).unwrap();
            for t in 1..=len {
                let want = if t > lag { r[t - lag - 1] } else { 0.0 };
                assert_eq!(rec.delivered[t - 1], want, "D={lag} t={t}");
            }
            // v = Σ_{Γ ≤ Γ̂ − D} r_Γ: the last D rewards are lost.
            let kept: f64 = r[..len.saturating_sub(lag)].iter().sum();
            assert!((task.evaluate(&th).unwrap() - kept).abs() < 1e-9);
        }
    }
}

#[test]
fn the_scripted_prey_flees_and_stays_in_the_arena() {
    let cfg = SimpleTagConfig::new(1, 1, 0).unwrap();
    let mut env = PredPreyEnv::new(cfg, false, 0);
    // Predator left of the prey: run right (+x).
    env.world_mut()
        .set_state(&[[-0.3, 0.1], [0.0, 0.1]], &[[0.0; 2]; 2], &[])
        .unwrap();
    let a = env.prey_action(1);
    assert_eq!(a, [0.0, 0.0, 1.0, 0.0, 0.0]);
    // Predator right of a prey at the right edge: it does not leave the arena.
    env.world_mut()
        .set_state(&[[0.6, 0.0], [0.95, 0.0]], &[[0.0; 2]; 2], &[])
        .unwrap();
    let a = env.prey_action(1);
    assert_eq!(a[2], 0.0, "{a:?}");
    assert_eq!(env.prey_action(0), [0.0; 5]);
    // Over a whole episode against chasing predators the prey stays near [−1, 1]².
    let task = DsboTask::new(DsboEnvKind::PredPrey, 3).unwrap();
    let mut env = task.make_env().unwrap();
    let chase = |s: &[Vec<f64>]| -> agora_core::Result<Vec<Vec<f64>>> {
        Ok(s.iter()
            .map(|x| {
                let d = x[4].hypot(x[5]).max(1e-9);
                vec![x[4] / d, x[5] / d]
            })
            .collect())
    };
    for seed in 0..5 {
        let rec = run_episode(env.as_mut(), seed, RewardSchedule::Dense, chase).unwrap();
        for s in &rec.states {
            // Predator state: prey position = own position + relative position.
            let prey = [s[0][2] + s[0][4], s[0][3] + s[0][5]];
            assert!(prey[0].abs() < 1.2 && prey[1].abs() < 1.2, "{prey:?}");
        }
    }
}

fn drone_state(pos: Vec<[f64; 2]>, points: Vec<[f64; 2]>) -> DroneState {
    let n = pos.len();
    DroneState {
        vel: vec![[0.0; 2]; n],
        fuel: vec![1.0; n],
        origin: pos.clone(),
        pos,
        stunned: vec![0; n],
        grounded: vec![false; n],
        points,
    }
}

#[test]
fn drone_delivery_pays_quadratically_and_refuels() {
    let mut env = DroneDelivery::new(1, 0).unwrap();
    // Start at (0, 0), origin (−0.5, 0); the point at (0.13, 0) is reached after one full
    // thrust step: v = 0.3, x = 0.03 (> 0.13 − 0.1 is false), then v = 0.525, x = 0.0825.
    let mut st = drone_state(vec![[0.0, 0.0]], vec![[0.13, 0.0], [0.9, 0.9], [-0.9, 0.9]]);
    st.origin = vec![[-0.5, 0.0]];
    st.fuel = vec![0.5];
    env.set_state(st).unwrap();
    let r1 = env.step(&[vec![1.0, 0.0]]).unwrap();
    let burn = |v: f64| FUEL_BASE + FUEL_SPEED * v.powi(3);
    assert_eq!(r1, 0.0);
    assert!((env.state().fuel[0] - (0.5 - burn(0.3))).abs() < 1e-12);
    let r2 = env.step(&[vec![1.0, 0.0]]).unwrap();
    // Delivered over distance 0.63: reward 10 · 0.63².
    assert!((r2 - DELIVERY_SCALE * 0.63 * 0.63).abs() < 1e-12, "{r2}");
    assert_eq!(env.deliveries(), 1);
    assert_eq!(env.state().fuel[0], 1.0);
    assert_eq!(env.state().origin[0], [0.13, 0.0]);
    assert_ne!(env.state().points[0], [0.13, 0.0]);
    assert!(env.state().points[0].iter().all(|x| x.abs() <= 0.9));
}

#[test]
fn drone_collisions_and_empty_tanks_cost_and_stop() {
    let mut env = DroneDelivery::new(2, 0).unwrap();
    let far = vec![[0.9, -0.9], [0.9, 0.9], [-0.9, 0.9], [-0.9, -0.9]];
    env.set_state(drone_state(vec![[-0.06, 0.0], [0.06, 0.0]], far.clone()))
        .unwrap();
    // Head-on at full thrust: after one step they are 0.12 − 0.06 = 0.06 apart.
    let r = env.step(&[vec![1.0, 0.0], vec![-1.0, 0.0]]).unwrap();
    let burn = FUEL_BASE + FUEL_SPEED * 0.3f64.powi(3);
    assert!((r + 2.0 * COLLISION_PENALTY).abs() < 1e-12, "{r}");
    assert_eq!(env.collisions(), 1);
    let st = env.state().clone();
    assert_eq!(st.vel, vec![[0.0; 2]; 2]);
    assert_eq!(st.stunned, vec![3, 3]);
    assert!((st.pos[1][0] - st.pos[0][0] - 0.1).abs() < 1e-9);
    assert!((st.fuel[0] - (1.0 - burn)).abs() < 1e-12);
    // Stunned: thrust is ignored for 3 steps, then they can move apart.
    for _ in 0..3 {
        assert_eq!(env.step(&[vec![1.0, 0.0], vec![-1.0, 0.0]]).unwrap(), 0.0);
        assert_eq!(env.state().pos, st.pos);
    }
    env.step(&[vec![-1.0, 0.0], vec![1.0, 0.0]]).unwrap();
    assert!(env.state().pos[1][0] - env.state().pos[0][0] > 0.1);
    // An almost empty tank: one hovering step empties it, −2 and grounded for good.
    let mut st = drone_state(vec![[0.0, 0.0], [0.5, 0.5]], far);
    st.fuel = vec![0.001, 1.0];
    env.set_state(st).unwrap();
    let r = env.step(&[vec![0.0, 0.0], vec![0.0, 0.0]]).unwrap();
    assert!((r + FUEL_OUT_PENALTY).abs() < 1e-12);
    assert!(env.state().grounded[0] && !env.state().grounded[1]);
    env.step(&[vec![1.0, 1.0], vec![0.0, 0.0]]).unwrap();
    assert_eq!(env.state().pos[0], [0.0, 0.0]);
    // Walls stop a drone at ±1.
    let mut env = DroneDelivery::new(1, 0).unwrap();
    let mut st = drone_state(
        vec![[0.99, 0.0]],
        vec![[-0.9, -0.9], [0.0, 0.9], [-0.9, 0.9]],
    );
    st.vel = vec![[1.0, 0.0]];
    env.set_state(st).unwrap();
    env.step(&[vec![1.0, 0.0]]).unwrap();
    assert_eq!(env.state().pos[0][0], 1.0);
    assert_eq!(env.state().vel[0][0], 0.0);
    assert!(
        env.set_state(drone_state(vec![[0.0, 0.0]], vec![]))
            .is_err()
    );
}

#[test]
fn the_objective_builder_matches_evaluate() {
    for task in tasks() {
        let mut f = task.objective().unwrap();
        let (lo, hi) = task.bounds().unwrap();
        assert_eq!(lo.len(), task.dim().unwrap());
        assert!(lo.iter().all(|&x| x == -1.0) && hi.iter().all(|&x| x == 1.0));
        let task2 = task.clone().with_episodes(3).unwrap();
        let mut f2 = task2.objective().unwrap();
        for s in 0..3 {
            let th = theta(&task, s, 1.0);
            assert_eq!(f(&th), task.evaluate(&th).unwrap());
            let mean: f64 = (0..3)
                .map(|e| {
                    task2
                        .run(&task2.policy().unwrap(), &th, e)
                        .unwrap()
                        .delivered_return()
                })
                .sum::<f64>()
                / 3.0;
            assert!((f2(&th) - mean).abs() < 1e-9);
        }
        assert!(f(&[0.0; 3]).is_nan());
        assert!(task.evaluate(&[0.0; 3]).is_err());
    }
    for kind in [
        DsboEnvKind::PredPrey,
        DsboEnvKind::HetPredPrey,
        DsboEnvKind::DroneDelivery,
    ] {
        for n in [0, 1] {
            let e = DsboTask::new(kind, n).unwrap_err().to_string();
            assert!(
                e.contains("`agents`")
                    && e.contains("at least 2")
                    && e.contains(&format!("got {n}")),
                "{e}"
            );
        }
        assert!(DsboTask::new(kind, 2).is_ok());
    }
    assert!(
        tasks()[0]
            .clone()
            .with_schedule(RewardSchedule::Sparse { period: 0 })
            .is_err()
    );
}

#[test]
fn the_task_surrogate_hessian_is_symmetric_and_non_negative() {
    let task = DsboTask::new(DsboEnvKind::PredPrey, 3)
        .unwrap()
        .with_ablation(Ablation::NoRoleInteraction);
    let th = theta(&task, 4, 1.0);
    let h = task
        .surrogate_hessian(&th, &HessianOptions::default(), 5)
        .unwrap();
    assert_eq!(h.dim, task.dim().unwrap());
    let d = h.dim;
    for a in 0..d {
        for b in 0..d {
            assert!(h.get(a, b) >= 0.0);
            assert_eq!(h.get(a, b), h.get(b, a));
        }
    }
    assert!(h.data.iter().any(|&x| x > 0.0));
    assert_eq!(task.visited_states(&th, 5).unwrap().len(), 5);
    assert_eq!(task.visited_states(&th, 100).unwrap().len(), 25);
}

#[test]
fn reinforce_improves_a_dense_return() {
    // PredPrey 3 with mpe2's distance shaping (a dense reward every step). Measured with these
    // seeds: the mean true return of the first 50 training episodes vs the last 50 rose by
    // 2.7, 6.7 and 2.0 (from about −7 to −4, −1 and −4).
    let task = DsboTask::new(DsboEnvKind::PredPrey, 3)
        .unwrap()
        .with_distance_shaping(true);
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let mut gains = vec![];
    for seed in 0..3 {
        let th0 = {
            let mut r = stream(seed, &[1]);
            (0..task.dim().unwrap())
                .map(|_| r.random_range(-0.5..0.5))
                .collect::<Vec<f64>>()
        };
        let cfg = ReinforceConfig {
            episodes: 600,
            seed,
            ..ReinforceConfig::default()
        };
        let tr = reinforce(&task, &th0, &cfg).unwrap();
        assert_eq!(tr.true_returns, tr.delivered_returns);
        assert!(tr.best_so_far.windows(2).all(|w| w[1] >= w[0]));
        gains.push(mean(&tr.true_returns[550..]) - mean(&tr.true_returns[..50]));
    }
    assert!(gains.iter().all(|&g| g > 1.0), "{gains:?}");
    assert!(mean(&gains) > 3.0, "{gains:?}");
    let bad = ReinforceConfig {
        noise_std: 0.0,
        ..ReinforceConfig::default()
    };
    assert!(reinforce(&task, &[0.0; 401], &bad).is_err());
    assert!(reinforce(&task, &[0.0; 3], &ReinforceConfig::default()).is_err());
}
