//! The MPE `simple_tag` environment against the mpe2 1.1.1 episodes in `conformance/mpe`
//! (format and provenance in its README.md, dynamics in DYNAMICS.md): each episode starts from
//! its recorded initial state and replays its recorded actions from agora's own state (no
//! re-syncing), comparing positions, velocities, rewards, observations and truncation after
//! every step with the README's suggested tolerance of 1e-9.

use std::path::{Path, PathBuf};

use agora_problems::mpe::{
    ACTION_DIM, CONTACT_FORCE, CONTACT_MARGIN, DAMPING, DT, SimpleTag, SimpleTagConfig, Vec2,
};
use serde_json::Value;

/// Largest absolute difference allowed for every recorded number (README "Notes on precision").
const TOLERANCE: f64 = 1e-9;

/// The conformance folder: `AGORA_CONFORMANCE_DIR` if set, else the repo's `conformance/`.
fn conformance_dir() -> PathBuf {
    std::env::var_os("AGORA_CONFORMANCE_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance"),
        PathBuf::from,
    )
}

/// The episode files `mpe/episode_*.json`, sorted by name.
fn episode_files() -> Vec<PathBuf> {
    let dir = conformance_dir().join("mpe");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| {
            e.unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .path()
        })
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("episode_") && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no episode_*.json in {}", dir.display());
    files
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn num(v: &Value, what: &str) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("{what}: expected a number, got {v}"))
}

fn usize_of(v: &Value, what: &str) -> usize {
    v.as_u64()
        .unwrap_or_else(|| panic!("{what}: expected an integer, got {v}")) as usize
}

fn array<'a>(v: &'a Value, what: &str) -> &'a [Value] {
    v.as_array()
        .unwrap_or_else(|| panic!("{what}: expected an array, got {v}"))
}

fn vector(v: &Value, what: &str) -> Vec<f64> {
    array(v, what)
        .iter()
        .enumerate()
        .map(|(i, x)| num(x, &format!("{what}[{i}]")))
        .collect()
}

fn matrix(v: &Value, what: &str) -> Vec<Vec<f64>> {
    array(v, what)
        .iter()
        .enumerate()
        .map(|(i, r)| vector(r, &format!("{what}[{i}]")))
        .collect()
}

fn points(v: &Value, what: &str) -> Vec<Vec2> {
    matrix(v, what)
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            assert_eq!(p.len(), 2, "{what}[{i}]");
            [p[0], p[1]]
        })
        .collect()
}

/// Largest absolute differences over one kind of recorded number.
#[derive(Default, Debug, Clone, Copy)]
struct MaxErrors {
    pos: f64,
    vel: f64,
    reward: f64,
    obs: f64,
}

impl MaxErrors {
    fn merge(&mut self, o: MaxErrors) {
        self.pos = self.pos.max(o.pos);
        self.vel = self.vel.max(o.vel);
        self.reward = self.reward.max(o.reward);
        self.obs = self.obs.max(o.obs);
    }
}

/// Max |a − b| over two equally shaped lists of vectors, asserting the tolerance.
fn compare(got: &[Vec<f64>], want: &[Vec<f64>], what: &str) -> f64 {
    assert_eq!(got.len(), want.len(), "{what}: count");
    let mut worst = 0.0_f64;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), w.len(), "{what}[{i}]: length");
        for (k, (a, b)) in g.iter().zip(w).enumerate() {
            let e = (a - b).abs();
            assert!(e <= TOLERANCE, "{what}[{i}][{k}]: agora {a} vs mpe2 {b}");
            worst = worst.max(e);
        }
    }
    worst
}

fn as_rows(p: &[Vec2]) -> Vec<Vec<f64>> {
    p.iter().map(|v| v.to_vec()).collect()
}

/// Replay one episode file; returns its largest errors and its number of capture steps.
fn replay(path: &Path) -> (MaxErrors, usize) {
    let ep = load(path);
    let name = path.display().to_string();
    assert_eq!(ep["format"], "mpe-simple-tag-episode/1", "{name}");
    let cfg = &ep["config"];
    let num_good = usize_of(&cfg["num_good"], "num_good");
    let num_adv = usize_of(&cfg["num_adversaries"], "num_adversaries");
    let num_obs = usize_of(&cfg["num_obstacles"], "num_obstacles");
    let max_cycles = usize_of(&cfg["max_cycles"], "max_cycles");
    assert_eq!(cfg["continuous_actions"], true, "{name}");
    let config = SimpleTagConfig::new(num_adv, num_good, num_obs)
        .and_then(|c| c.with_max_cycles(max_cycles))
        .unwrap_or_else(|e| panic!("{name}: {e}"));

    // The recorded world constants and bodies are the ones agora uses.
    let world = &ep["world"];
    assert_eq!(num(&world["dt"], "dt"), DT, "{name}");
    assert_eq!(num(&world["damping"], "damping"), DAMPING, "{name}");
    assert_eq!(num(&world["contact_force"], "contact_force"), CONTACT_FORCE);
    assert_eq!(
        num(&world["contact_margin"], "contact_margin"),
        CONTACT_MARGIN
    );
    let agents = array(&ep["agents"], "agents");
    assert_eq!(agents.len(), config.agents().len(), "{name}");
    for (i, (a, body)) in agents.iter().zip(config.agents()).enumerate() {
        assert_eq!(
            a["adversary"].as_bool(),
            Some(body.adversary),
            "{name} agent {i}"
        );
        assert_eq!(num(&a["size"], "size"), body.size, "{name} agent {i}");
        assert_eq!(num(&a["accel"], "accel"), body.accel, "{name} agent {i}");
        assert_eq!(
            num(&a["max_speed"], "max_speed"),
            body.max_speed,
            "{name} agent {i}"
        );
        assert_eq!(num(&a["mass"], "mass"), body.mass, "{name} agent {i}");
        assert_eq!(
            usize_of(&a["obs_dim"], "obs_dim"),
            config.obs_dim(i),
            "{name} agent {i}"
        );
        assert_eq!(usize_of(&a["action_dim"], "action_dim"), ACTION_DIM);
    }

    let init = &ep["initial_state"];
    let landmarks = points(&init["landmark_pos"], "landmark_pos");
    let mut env = SimpleTag::new(config, 0);
    env.set_state(
        &points(&init["agent_pos"], "agent_pos"),
        &points(&init["agent_vel"], "agent_vel"),
        &landmarks,
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut errors = MaxErrors {
        obs: compare(
            &env.observations(),
            &matrix(&ep["initial_observations"], "initial_observations"),
            &format!("{name} initial observations"),
        ),
        ..Default::default()
    };

    let steps = array(&ep["steps"], "steps");
    assert_eq!(steps.len(), max_cycles, "{name}");
    let mut capture_steps = 0;
    for (k, s) in steps.iter().enumerate() {
        let t = usize_of(&s["t"], "t");
        assert_eq!(t, k + 1, "{name}");
        let at = |what: &str| format!("{name} t={t} {what}");
        let actions: Vec<[f64; ACTION_DIM]> = matrix(&s["actions"], "actions")
            .into_iter()
            .map(|a| {
                a.try_into()
                    .unwrap_or_else(|a: Vec<f64>| panic!("{}: length {}", at("actions"), a.len()))
            })
            .collect();
        let out = env
            .step(&actions)
            .unwrap_or_else(|e| panic!("{}: {e}", at("step")));
        let step_errors = MaxErrors {
            pos: compare(
                &as_rows(env.agent_positions()),
                &matrix(&s["agent_pos"], "agent_pos"),
                &at("agent_pos"),
            ),
            vel: compare(
                &as_rows(env.agent_velocities()),
                &matrix(&s["agent_vel"], "agent_vel"),
                &at("agent_vel"),
            ),
            reward: compare(
                std::slice::from_ref(&out.rewards),
                &[vector(&s["rewards"], "rewards")],
                &at("rewards"),
            ),
            obs: compare(
                &env.observations(),
                &matrix(&s["observations"], "observations"),
                &at("observations"),
            ),
        };
        errors.merge(step_errors);
        assert_eq!(
            Some(out.truncated),
            s["truncated"].as_bool(),
            "{}",
            at("truncated")
        );
        // Landmarks never move.
        assert_eq!(
            env.landmark_positions(),
            landmarks.as_slice(),
            "{}",
            at("landmarks")
        );
        capture_steps += usize::from(env.captures() > 0);
    }
    assert!(
        env.step(&vec![[0.0; ACTION_DIM]; env.num_agents()])
            .is_err()
    );
    // The file's own coverage count, recomputed from agora's trajectory.
    let recorded = usize_of(&ep["coverage"]["capture_steps"], "capture_steps");
    assert_eq!(capture_steps, recorded, "{name}: capture steps");
    (errors, capture_steps)
}

#[test]
fn mpe_simple_tag_replays_every_recorded_episode() {
    let mut all = MaxErrors::default();
    let mut total_captures = 0;
    let files = episode_files();
    for path in &files {
        let (e, captures) = replay(path);
        println!(
            "{}: max |Δ| pos {:e}, vel {:e}, reward {:e}, obs {:e}; capture steps {captures}",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
            e.pos,
            e.vel,
            e.reward,
            e.obs
        );
        all.merge(e);
        total_captures += captures;
    }
    println!(
        "{} episodes: max |Δ| pos {:e}, vel {:e}, reward {:e}, obs {:e}",
        files.len(),
        all.pos,
        all.vel,
        all.reward,
        all.obs
    );
    // The shipped set exercises captures (README: 15 capture steps over the six files).
    assert!(total_captures > 0, "no episode exercises a capture");
}
