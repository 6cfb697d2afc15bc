//! DSBO's episodic black-box objectives (Rajpal et al., §5, App. A, B.3, I): the return
//! `v(θ)` of the HOM policy ([`crate::hom`]) over seeded episodes of a cooperative task, as BO
//! sees it through a reward schedule.
//!
//! **Tasks** ([`DsboEnvKind`]):
//!
//! - *PredPrey N* (epoch Γ̂ = 25): mpe2 `simple_tag` ([`crate::mpe`]) with N HOM-controlled
//!   predators and scripted prey ([`PredPreyEnv`]). The paper gives no prey or landmark counts
//!   (§8.11); agora follows FACMAC's 3a/6a files: `max(1, N/3)` prey (integer division) and
//!   twice as many landmarks. The team reward is one copy of the shared predator reward,
//!   `10 × (predator, prey) contacts` (§8.10), optionally with mpe2's `shape` term
//!   `−0.1 Σ_predators min_prey distance` ([`DsboTask::with_distance_shaping`]).
//! - *Het. PredPrey N*: the same with [`SimpleTagConfig::heterogeneous`] predators (speed and
//!   acceleration factors spread `1 ± 0.5` by index).
//! - *Drone Delivery N* (Γ̂ = 150): [`DroneDelivery`], a documented re-design of App. I.
//!
//! **Observations** (the HOM's local states, fixed length whatever N, so the HOM's size barely
//! grows with N as in Table 3): see [`PredPreyEnv::predator_state`] (14 numbers) and
//! [`DroneDelivery::drone_state`] (13 numbers). Actions are 2-D thrusts in `[−1, 1]²`
//! (clipped), the HOM's `tanh` outputs.
//!
//! **Objective.** `v(θ)` is the mean over `episodes` seeded episodes (episode `e` starts from
//! seed `derive_seed(seed, [e])`; deterministic) of the episodic sum of the rewards the
//! [`RewardSchedule`] delivers. The Sparse-S window still pending at the end is delivered with
//! the last step ([`ScheduledRewards::finish`]), so Sparse-S leaves `v` equal to the dense
//! return; Delay-D drops the last D rewards: `v = Σ_{Γ ≤ Γ̂ − D} r_Γ` (§1.3, reviewed). Both
//! episodes have fixed length, so no early-termination question arises.
//!
//! **θ box** (§8.2 gap): `[−1, 1]^D`, weights used as they are. Inputs are O(1) (positions in
//! about `[−1, 1]`, fuel in `[0, 1]`) and nets are 4 units wide, so this box spans linear,
//! saturated and sign-flipped units.

use agora_core::{Error, Result};
use agora_math::rng::{self, Rng};
use rand::RngExt;

use crate::hom::{Ablation, HessianOptions, HomConfig, HomPolicy, HomSize, PolicyHessian};
use crate::mpe::{
    ACTION_DIM, ADVERSARY_ACCEL, ADVERSARY_MAX_SPEED, MAX_CYCLES, RewardSchedule, ScheduledRewards,
    SimpleTag, SimpleTagConfig, Vec2, bound_penalty,
};

/// A cooperative episodic task controlled through per-agent local states and 2-D actions.
pub trait TeamEnv {
    /// Number of controlled agents.
    fn num_agents(&self) -> usize;
    /// Length of one agent's local state.
    fn state_dim(&self) -> usize;
    /// Length of one agent's action.
    fn action_dim(&self) -> usize;
    /// Steps per episode (the epoch length Γ̂).
    fn horizon(&self) -> usize;
    /// Start a new episode from `seed` (same seed, same episode).
    fn reset(&mut self, seed: u64);
    /// Every controlled agent's local state, in agent order.
    fn agent_states(&self) -> Vec<Vec<f64>>;
    /// Apply one action per controlled agent (components clipped to `[−1, 1]`) and return the
    /// team reward of the step.
    ///
    /// Errors: the wrong number or length of actions, a non-finite component, a step after
    /// the episode ended.
    fn step(&mut self, actions: &[Vec<f64>]) -> Result<f64>;
}

fn dist(a: Vec2, b: Vec2) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
}

fn rel(a: Vec2, from: Vec2) -> [f64; 2] {
    [a[0] - from[0], a[1] - from[1]]
}

/// Index of the point nearest `p` among `candidates` (lowest index on ties).
fn nearest(p: Vec2, candidates: impl Iterator<Item = (usize, Vec2)>) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, q) in candidates {
        let d = (q[0] - p[0]).powi(2) + (q[1] - p[1]).powi(2);
        if best.is_none_or(|(_, b)| d < b) {
            best = Some((i, d));
        }
    }
    best.map(|(i, _)| i)
}

fn check_actions(actions: &[Vec<f64>], n: usize, da: usize) -> Result<()> {
    if actions.len() != n {
        return Err(Error::dim("actions", n, actions.len()));
    }
    for (i, a) in actions.iter().enumerate() {
        if a.len() != da {
            return Err(Error::dim(format!("actions[{i}]"), da, a.len()));
        }
        agora_core::check_finite_slice(&format!("actions[{i}]"), a)?;
    }
    Ok(())
}

/// Local state length of a predator ([`PredPreyEnv::predator_state`]).
pub const PREDPREY_STATE_DIM: usize = 14;
/// Look-ahead distance of the scripted prey.
pub const PREY_LOOKAHEAD: f64 = 0.4;
/// Candidate flight directions of the scripted prey (plus standing still).
pub const PREY_DIRECTIONS: usize = 16;
/// mpe2's `shape` coefficient: `−0.1 × distance` per predator.
pub const SHAPING_COEFFICIENT: f64 = 0.1;

/// PredPrey: `simple_tag` with HOM-controlled predators and scripted prey.
///
/// **Prey script** (deterministic; FACMAC's prey samples random targets and maximises the
/// distance to the nearest predator, with `score_function: "min"`): each prey looks at the 16
/// points `p + 0.4·(cos 2πk/16, sin 2πk/16)` and its own position, scores each by the distance
/// to the nearest predator minus its own out-of-arena penalty `bound(|x|) + bound(|y|)`
/// ([`bound_penalty`], so it stays near `[−1, 1]²`), and accelerates at full power toward the
/// best (first on ties; standing still means no action).
#[derive(Debug, Clone, PartialEq)]
pub struct PredPreyEnv {
    world: SimpleTag,
    distance_shaping: bool,
}

impl PredPreyEnv {
    /// The task on `config` (adversaries are the controlled predators), reset with `seed`.
    pub fn new(config: SimpleTagConfig, distance_shaping: bool, seed: u64) -> PredPreyEnv {
        PredPreyEnv {
            world: SimpleTag::new(config, seed),
            distance_shaping,
        }
    }

    /// The underlying `simple_tag` world.
    pub fn world(&self) -> &SimpleTag {
        &self.world
    }

    /// Mutable access to the world (e.g. to set a state in tests).
    pub fn world_mut(&mut self) -> &mut SimpleTag {
        &mut self.world
    }

    /// The scripted action (mpe2 layout `(no-op, left, right, down, up)`) of agent `g`, a prey.
    /// Returns zeros for an index that is not a prey.
    pub fn prey_action(&self, g: usize) -> [f64; ACTION_DIM] {
        let cfg = self.world.config();
        let na = cfg.num_adversaries();
        let pos = self.world.agent_positions();
        if g < na || g >= pos.len() {
            return [0.0; ACTION_DIM];
        }
        let p = pos[g];
        let score = |q: Vec2| {
            let d = (0..na)
                .map(|a| dist(q, pos[a]))
                .fold(f64::INFINITY, f64::min);
            d - bound_penalty(q[0].abs()) - bound_penalty(q[1].abs())
        };
        let mut best = ([0.0, 0.0], score(p));
        for k in 0..PREY_DIRECTIONS {
            let ang = 2.0 * std::f64::consts::PI * k as f64 / PREY_DIRECTIONS as f64;
            let dir = [ang.cos(), ang.sin()];
            let s = score([
                p[0] + PREY_LOOKAHEAD * dir[0],
                p[1] + PREY_LOOKAHEAD * dir[1],
            ]);
            if s > best.1 {
                best = (dir, s);
            }
        }
        let [dx, dy] = best.0;
        [
            0.0,
            (-dx).max(0.0),
            dx.max(0.0),
            (-dy).max(0.0),
            dy.max(0.0),
        ]
    }

    /// Predator `i`'s local state: own velocity (2), own position (2), relative position (2)
    /// and velocity (2) of the nearest prey, relative position of the nearest landmark (2) and
    /// of the nearest other predator (2; zeros when there is none), and its capabilities
    /// `(accel / 3 − 1, max_speed / 1 − 1)` (2; zeros for a homogeneous predator).
    pub fn predator_state(&self, i: usize) -> Vec<f64> {
        let cfg = self.world.config();
        let na = cfg.num_adversaries();
        let pos = self.world.agent_positions();
        let vel = self.world.agent_velocities();
        let p = pos[i];
        let mut s = Vec::with_capacity(PREDPREY_STATE_DIM);
        s.extend(vel[i]);
        s.extend(p);
        let prey = nearest(p, (na..pos.len()).map(|g| (g, pos[g]))).unwrap_or(i);
        s.extend(rel(pos[prey], p));
        s.extend(vel[prey]);
        let lm = self.world.landmark_positions();
        match nearest(p, lm.iter().copied().enumerate()) {
            Some(k) => s.extend(rel(lm[k], p)),
            None => s.extend([0.0, 0.0]),
        }
        match nearest(p, (0..na).filter(|&j| j != i).map(|j| (j, pos[j]))) {
            Some(j) => s.extend(rel(pos[j], p)),
            None => s.extend([0.0, 0.0]),
        }
        let body = cfg.agents()[i];
        s.extend([
            body.accel / ADVERSARY_ACCEL - 1.0,
            body.max_speed / ADVERSARY_MAX_SPEED - 1.0,
        ]);
        s
    }

    /// The shaping term `−0.1 Σ_predators min_prey distance` of the current state.
    pub fn shaping(&self) -> f64 {
        let na = self.world.config().num_adversaries();
        let pos = self.world.agent_positions();
        -SHAPING_COEFFICIENT
            * (0..na)
                .map(|a| {
                    (na..pos.len())
                        .map(|g| dist(pos[a], pos[g]))
                        .fold(f64::INFINITY, f64::min)
                })
                .sum::<f64>()
    }
}

impl TeamEnv for PredPreyEnv {
    fn num_agents(&self) -> usize {
        self.world.config().num_adversaries()
    }
    fn state_dim(&self) -> usize {
        PREDPREY_STATE_DIM
    }
    fn action_dim(&self) -> usize {
        2
    }
    fn horizon(&self) -> usize {
        self.world.config().max_cycles()
    }
    fn reset(&mut self, seed: u64) {
        self.world.reset(seed);
    }
    fn agent_states(&self) -> Vec<Vec<f64>> {
        (0..self.num_agents())
            .map(|i| self.predator_state(i))
            .collect()
    }
    fn step(&mut self, actions: &[Vec<f64>]) -> Result<f64> {
        let na = self.num_agents();
        check_actions(actions, na, 2)?;
        let total = self.world.num_agents();
        let mut mpe = Vec::with_capacity(total);
        for a in actions {
            let (x, y) = (a[0].clamp(-1.0, 1.0), a[1].clamp(-1.0, 1.0));
            mpe.push([0.0, (-x).max(0.0), x.max(0.0), (-y).max(0.0), y.max(0.0)]);
        }
        for g in na..total {
            mpe.push(self.prey_action(g));
        }
        let r = self.world.step(&mpe)?;
        let shaping = if self.distance_shaping {
            self.shaping()
        } else {
            0.0
        };
        Ok(r.rewards[0] + shaping)
    }
}

/// Epoch length of Drone Delivery (App. A.2).
pub const DRONE_HORIZON: usize = 150;
/// Local state length of a drone ([`DroneDelivery::drone_state`]).
pub const DRONE_STATE_DIM: usize = 13;
/// Drone radius: two drones collide when their centres are closer than twice this.
pub const DRONE_RADIUS: f64 = 0.05;
/// A drone delivers at a point when its centre is closer than this.
pub const DELIVERY_RADIUS: f64 = 0.1;
/// Thrust gain (as an mpe predator).
pub const DRONE_ACCEL: f64 = 3.0;
/// Speed cap.
pub const DRONE_MAX_SPEED: f64 = 1.0;
/// Fuel burnt per step at any speed (hovering).
pub const FUEL_BASE: f64 = 0.002;
/// Speed-dependent fuel per step at full speed: the burn is
/// `FUEL_BASE + FUEL_SPEED·(|v| / v_max)³`.
pub const FUEL_SPEED: f64 = 0.03;
/// A delivery over distance `d` pays `DELIVERY_SCALE · d²`.
pub const DELIVERY_SCALE: f64 = 10.0;
/// Penalty to each drone of a colliding pair.
pub const COLLISION_PENALTY: f64 = 1.0;
/// Penalty when a drone runs out of fuel.
pub const FUEL_OUT_PENALTY: f64 = 2.0;
/// Steps a drone stays stopped after a collision.
pub const STUN_STEPS: usize = 3;

/// The mutable state of a [`DroneDelivery`] episode.
#[derive(Debug, Clone, PartialEq)]
pub struct DroneState {
    /// Drone positions.
    pub pos: Vec<Vec2>,
    /// Drone velocities.
    pub vel: Vec<Vec2>,
    /// Fuel in `[0, 1]`.
    pub fuel: Vec<f64>,
    /// Where each drone's current delivery started (its last delivery point, or its start).
    pub origin: Vec<Vec2>,
    /// Steps each drone stays stopped after a collision.
    pub stunned: Vec<usize>,
    /// Drones that ran out of fuel (stopped for the rest of the episode).
    pub grounded: Vec<bool>,
    /// Delivery point positions.
    pub points: Vec<Vec2>,
}

/// Drone Delivery N, agora's re-design of DSBO App. I (the paper's code is unavailable and
/// every number is a §8.11 gap). What the paper states, and how it is realised:
///
/// - *Drones fly from delivery point to delivery point; a delivery gives a large reward
///   growing quadratically with its distance*: `N + 2` delivery points in `[−0.9, 0.9]²`; a
///   drone whose centre comes within [`DELIVERY_RADIUS`] of a point delivers there and earns
///   `10·d²`, `d` = distance from the drone's origin (its previous delivery point, or its start)
///   to the point (up to `10·8 = 80` across the arena).
/// - *the delivery point is then randomly re-placed*: it respawns uniformly in `[−0.9, 0.9]²`
///   (from the episode's seeded stream); the drone's origin becomes where it delivered.
/// - *completing a delivery refills the fuel*: fuel returns to 1.
/// - *fuel use increases dramatically at high velocity*: each step burns
///   `0.002 + 0.03·(|v| / v_max)³`; full speed empties a tank in ≈ 31 steps (3.1 units of
///   travel), half speed lasts ≈ 174 steps (8.7 units).
/// - *running out of fuel gives a small negative reward*: `−2` once; the drone is grounded
///   (stopped) for the rest of the episode.
/// - *a collision gives a small negative reward and momentarily stops the drone*: centres
///   closer than `2·0.05` cost each drone `−1`, stop both, separate them to contact distance
///   and disable their thrust for 3 steps.
///
/// Dynamics as mpe's (dt 0.1, velocity damping 0.25, thrust gain 3, speed cap 1), inside walls
/// at `±1` (a drone touching a wall loses that velocity component). The team reward of a step
/// is the sum over drones. One drone delivers at most once per step (lowest point index
/// first); drones are processed in index order.
#[derive(Debug, Clone)]
pub struct DroneDelivery {
    drones: usize,
    horizon: usize,
    state: DroneState,
    rng: Rng,
    steps: usize,
    deliveries: usize,
    collisions: usize,
}

impl DroneDelivery {
    /// `drones` drones and `drones + 2` delivery points, 150 steps, reset with `seed`.
    ///
    /// Errors: no drone.
    pub fn new(drones: usize, seed: u64) -> Result<DroneDelivery> {
        if drones == 0 {
            return Err(Error::invalid("drones", "must be at least 1"));
        }
        let mut env = DroneDelivery {
            drones,
            horizon: DRONE_HORIZON,
            state: DroneState {
                pos: vec![],
                vel: vec![],
                fuel: vec![],
                origin: vec![],
                stunned: vec![],
                grounded: vec![],
                points: vec![],
            },
            rng: rng::stream(seed, &[]),
            steps: 0,
            deliveries: 0,
            collisions: 0,
        };
        env.reset(seed);
        Ok(env)
    }

    /// The current state.
    pub fn state(&self) -> &DroneState {
        &self.state
    }

    /// Replace the state (counters and step count go to 0; the respawn stream is kept).
    ///
    /// Errors: lengths that do not match `drones` (or `drones + 2` points), a non-finite
    /// number, or fuel outside `[0, 1]` (each named).
    pub fn set_state(&mut self, state: DroneState) -> Result<()> {
        let n = self.drones;
        for (name, len, want) in [
            ("pos", state.pos.len(), n),
            ("vel", state.vel.len(), n),
            ("fuel", state.fuel.len(), n),
            ("origin", state.origin.len(), n),
            ("stunned", state.stunned.len(), n),
            ("grounded", state.grounded.len(), n),
            ("points", state.points.len(), n + 2),
        ] {
            if len != want {
                return Err(Error::dim(name, want, len));
            }
        }
        for (name, v) in [
            ("pos", &state.pos),
            ("vel", &state.vel),
            ("origin", &state.origin),
            ("points", &state.points),
        ] {
            for (i, p) in v.iter().enumerate() {
                agora_core::check_finite_slice(&format!("{name}[{i}]"), p)?;
            }
        }
        for (i, &f) in state.fuel.iter().enumerate() {
            if !(0.0..=1.0).contains(&f) {
                return Err(Error::invalid(
                    format!("fuel[{i}]"),
                    format!("must lie in [0, 1], got {f}"),
                ));
            }
        }
        self.state = state;
        self.steps = 0;
        self.deliveries = 0;
        self.collisions = 0;
        Ok(())
    }

    /// Deliveries completed in this episode.
    pub fn deliveries(&self) -> usize {
        self.deliveries
    }

    /// Collisions (pairs) in this episode.
    pub fn collisions(&self) -> usize {
        self.collisions
    }

    /// Drone `i`'s local state: velocity (2), position (2), fuel (1), position relative to
    /// its origin (2, so the delivery distance so far is visible), relative positions of the
    /// nearest and second-nearest delivery points (2 + 2) and of the nearest other drone (2;
    /// zeros when alone).
    pub fn drone_state(&self, i: usize) -> Vec<f64> {
        let st = &self.state;
        let p = st.pos[i];
        let mut s = Vec::with_capacity(DRONE_STATE_DIM);
        s.extend(st.vel[i]);
        s.extend(p);
        s.push(st.fuel[i]);
        s.extend(rel(p, st.origin[i]));
        let first = nearest(p, st.points.iter().copied().enumerate());
        let second = nearest(
            p,
            st.points
                .iter()
                .copied()
                .enumerate()
                .filter(|&(k, _)| Some(k) != first),
        );
        for k in [first, second] {
            match k {
                Some(k) => s.extend(rel(st.points[k], p)),
                None => s.extend([0.0, 0.0]),
            }
        }
        match nearest(
            p,
            (0..self.drones).filter(|&j| j != i).map(|j| (j, st.pos[j])),
        ) {
            Some(j) => s.extend(rel(st.pos[j], p)),
            None => s.extend([0.0, 0.0]),
        }
        s
    }

    fn respawn(&mut self) -> Vec2 {
        [
            self.rng.random_range(-0.9..0.9),
            self.rng.random_range(-0.9..0.9),
        ]
    }
}

impl TeamEnv for DroneDelivery {
    fn num_agents(&self) -> usize {
        self.drones
    }
    fn state_dim(&self) -> usize {
        DRONE_STATE_DIM
    }
    fn action_dim(&self) -> usize {
        2
    }
    fn horizon(&self) -> usize {
        self.horizon
    }

    /// Drones and points uniform in `[−0.9, 0.9]²` (drones first), at rest with full tanks;
    /// later respawns continue the same stream `rng::stream(seed, &[])`.
    fn reset(&mut self, seed: u64) {
        self.rng = rng::stream(seed, &[]);
        let n = self.drones;
        let pos: Vec<Vec2> = (0..n).map(|_| self.respawn()).collect();
        let points = (0..n + 2).map(|_| self.respawn()).collect();
        self.state = DroneState {
            origin: pos.clone(),
            pos,
            vel: vec![[0.0; 2]; n],
            fuel: vec![1.0; n],
            stunned: vec![0; n],
            grounded: vec![false; n],
            points,
        };
        self.steps = 0;
        self.deliveries = 0;
        self.collisions = 0;
    }

    fn agent_states(&self) -> Vec<Vec<f64>> {
        (0..self.drones).map(|i| self.drone_state(i)).collect()
    }

    fn step(&mut self, actions: &[Vec<f64>]) -> Result<f64> {
        if self.steps >= self.horizon {
            return Err(Error::State(format!(
                "the episode ended after {} steps; reset before stepping again",
                self.horizon
            )));
        }
        let n = self.drones;
        check_actions(actions, n, 2)?;
        let mut reward = 0.0;
        let st = &mut self.state;
        // Thrust, damping, speed cap, motion inside the walls, fuel.
        for (i, act) in actions.iter().enumerate() {
            if st.grounded[i] {
                st.vel[i] = [0.0; 2];
                continue;
            }
            if st.stunned[i] > 0 {
                st.stunned[i] -= 1;
                st.vel[i] = [0.0; 2];
            } else {
                let a = [act[0].clamp(-1.0, 1.0), act[1].clamp(-1.0, 1.0)];
                let v = &mut st.vel[i];
                for k in 0..2 {
                    v[k] = v[k] * 0.75 + 0.1 * DRONE_ACCEL * a[k];
                }
                let speed = (v[0] * v[0] + v[1] * v[1]).sqrt();
                if speed > DRONE_MAX_SPEED {
                    v.iter_mut().for_each(|x| *x *= DRONE_MAX_SPEED / speed);
                }
            }
            for k in 0..2 {
                st.pos[i][k] += 0.1 * st.vel[i][k];
                if st.pos[i][k].abs() > 1.0 {
                    st.pos[i][k] = st.pos[i][k].clamp(-1.0, 1.0);
                    st.vel[i][k] = 0.0;
                }
            }
            let speed = (st.vel[i][0].powi(2) + st.vel[i][1].powi(2)).sqrt();
            st.fuel[i] -= FUEL_BASE + FUEL_SPEED * (speed / DRONE_MAX_SPEED).powi(3);
            if st.fuel[i] <= 0.0 {
                st.fuel[i] = 0.0;
                st.grounded[i] = true;
                st.vel[i] = [0.0; 2];
                reward -= FUEL_OUT_PENALTY;
            }
        }
        // Collisions: penalty, stop, separate to contact distance, stun.
        let contact = 2.0 * DRONE_RADIUS;
        for i in 0..n {
            for j in (i + 1)..n {
                let d = dist(st.pos[i], st.pos[j]);
                if d >= contact {
                    continue;
                }
                self.collisions += 1;
                reward -= 2.0 * COLLISION_PENALTY;
                let u = if d > 0.0 {
                    [
                        (st.pos[j][0] - st.pos[i][0]) / d,
                        (st.pos[j][1] - st.pos[i][1]) / d,
                    ]
                } else {
                    [1.0, 0.0]
                };
                let c = [
                    0.5 * (st.pos[i][0] + st.pos[j][0]),
                    0.5 * (st.pos[i][1] + st.pos[j][1]),
                ];
                let half = 0.5 * contact * (1.0 + 1e-9);
                for k in 0..2 {
                    st.pos[i][k] = c[k] - u[k] * half;
                    st.pos[j][k] = c[k] + u[k] * half;
                }
                for m in [i, j] {
                    st.vel[m] = [0.0; 2];
                    if !st.grounded[m] {
                        st.stunned[m] = STUN_STEPS;
                    }
                }
            }
        }
        // Deliveries.
        for i in 0..n {
            if st.grounded[i] {
                continue;
            }
            let p = st.pos[i];
            if let Some(k) = (0..st.points.len()).find(|&k| dist(p, st.points[k]) < DELIVERY_RADIUS)
            {
                let d = dist(st.points[k], st.origin[i]);
                reward += DELIVERY_SCALE * d * d;
                st.origin[i] = st.points[k];
                st.fuel[i] = 1.0;
                self.deliveries += 1;
                st.points[k] = [
                    self.rng.random_range(-0.9..0.9),
                    self.rng.random_range(-0.9..0.9),
                ];
            }
        }
        self.steps += 1;
        Ok(reward)
    }
}

/// The DSBO tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DsboEnvKind {
    /// PredPrey N (mpe `simple_tag`, scripted prey), Γ̂ = 25.
    PredPrey,
    /// Het. PredPrey N: predators of different speed and acceleration, Γ̂ = 25.
    HetPredPrey,
    /// Drone Delivery N, Γ̂ = 150.
    DroneDelivery,
}

/// A black-box objective `θ ↦ v(θ)`.
pub type Objective = Box<dyn FnMut(&[f64]) -> f64 + Send>;

/// One recorded episode.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeRecord {
    /// The true team reward of each step.
    pub true_rewards: Vec<f64>,
    /// What the schedule delivered at each step (the last step includes the Sparse-S flush).
    pub delivered: Vec<f64>,
    /// The joint local state before each step (`states[t][agent]`).
    pub states: Vec<Vec<Vec<f64>>>,
}

impl EpisodeRecord {
    /// `Σ_t r_t`.
    pub fn true_return(&self) -> f64 {
        self.true_rewards.iter().sum()
    }

    /// `Σ_t r̃_t`, the episodic sum BO sees.
    pub fn delivered_return(&self) -> f64 {
        self.delivered.iter().sum()
    }
}

/// Run one episode of `env` from `seed` under `schedule`, choosing actions with `act` (given
/// the joint local state).
///
/// Errors: an invalid schedule, or whatever `act` or the environment returns.
pub fn run_episode(
    env: &mut dyn TeamEnv,
    seed: u64,
    schedule: RewardSchedule,
    mut act: impl FnMut(&[Vec<f64>]) -> Result<Vec<Vec<f64>>>,
) -> Result<EpisodeRecord> {
    let mut sched = ScheduledRewards::new(schedule, 1)?;
    env.reset(seed);
    let horizon = env.horizon();
    let mut rec = EpisodeRecord {
        true_rewards: Vec::with_capacity(horizon),
        delivered: Vec::with_capacity(horizon),
        states: Vec::with_capacity(horizon),
    };
    for _ in 0..horizon {
        let s = env.agent_states();
        let a = act(&s)?;
        let r = env.step(&a)?;
        rec.states.push(s);
        rec.true_rewards.push(r);
        rec.delivered.push(sched.push(&[r])?[0]);
    }
    if let Some(last) = rec.delivered.last_mut() {
        *last += sched.finish()[0];
    }
    Ok(rec)
}

/// A DSBO objective: task, agent count, HOM size and ablation, reward schedule, episodes.
#[derive(Debug, Clone, PartialEq)]
pub struct DsboTask {
    kind: DsboEnvKind,
    agents: usize,
    size: HomSize,
    ablation: Ablation,
    schedule: RewardSchedule,
    episodes: usize,
    seed: u64,
    rounds: usize,
    distance_shaping: bool,
    het_spread: f64,
}

impl DsboTask {
    /// `kind` with `agents` predators or drones; defaults: Med, full HOM, dense rewards, one
    /// episode per evaluation, seed 0, τ = 2 rounds, no distance shaping, heterogeneity
    /// spread 0.5.
    ///
    /// Errors: `agents < 2` (the tasks are multi-agent: roles, role interaction and message
    /// passing need at least two agents).
    pub fn new(kind: DsboEnvKind, agents: usize) -> Result<DsboTask> {
        if agents < 2 {
            return Err(Error::invalid(
                "agents",
                format!(
                    "a multi-agent task needs at least 2 agents (the paper runs 3 to 15), got {agents}"
                ),
            ));
        }
        Ok(DsboTask {
            kind,
            agents,
            size: HomSize::Med,
            ablation: Ablation::Full,
            schedule: RewardSchedule::Dense,
            episodes: 1,
            seed: 0,
            rounds: 2,
            distance_shaping: false,
            het_spread: 0.5,
        })
    }

    /// Set the HOM size.
    pub fn with_size(mut self, size: HomSize) -> DsboTask {
        self.size = size;
        self
    }

    /// Set the ablation.
    pub fn with_ablation(mut self, ablation: Ablation) -> DsboTask {
        self.ablation = ablation;
        self
    }

    /// Set the reward schedule.
    ///
    /// Errors: `Sparse { period: 0 }`.
    pub fn with_schedule(mut self, schedule: RewardSchedule) -> Result<DsboTask> {
        ScheduledRewards::new(schedule, 1)?;
        self.schedule = schedule;
        Ok(self)
    }

    /// Set the number of seeded episodes averaged per evaluation (§8.14 gap).
    ///
    /// Errors: 0.
    pub fn with_episodes(mut self, episodes: usize) -> Result<DsboTask> {
        if episodes == 0 {
            return Err(Error::invalid("episodes", "must be at least 1"));
        }
        self.episodes = episodes;
        Ok(self)
    }

    /// Set the seed of the evaluation episodes.
    pub fn with_seed(mut self, seed: u64) -> DsboTask {
        self.seed = seed;
        self
    }

    /// Set the message-passing rounds τ.
    ///
    /// Errors: 0.
    pub fn with_rounds(mut self, rounds: usize) -> Result<DsboTask> {
        if rounds == 0 {
            return Err(Error::invalid("rounds", "must be at least 1"));
        }
        self.rounds = rounds;
        Ok(self)
    }

    /// Add mpe2's `shape` term to the PredPrey team reward (no effect on Drone Delivery).
    pub fn with_distance_shaping(mut self, on: bool) -> DsboTask {
        self.distance_shaping = on;
        self
    }

    /// Set the Het. PredPrey spread (see [`SimpleTagConfig::heterogeneous`]).
    ///
    /// Errors: outside `[0, 1)`.
    pub fn with_het_spread(mut self, spread: f64) -> Result<DsboTask> {
        if !(0.0..1.0).contains(&spread) {
            return Err(Error::invalid(
                "het_spread",
                format!("must lie in [0, 1), got {spread}"),
            ));
        }
        self.het_spread = spread;
        Ok(self)
    }

    /// The task kind.
    pub fn kind(&self) -> DsboEnvKind {
        self.kind
    }

    /// Number of controlled agents.
    pub fn agents(&self) -> usize {
        self.agents
    }

    /// The reward schedule.
    pub fn schedule(&self) -> RewardSchedule {
        self.schedule
    }

    /// Episodes per evaluation.
    pub fn episodes(&self) -> usize {
        self.episodes
    }

    /// Epoch length Γ̂: 25 for PredPrey, 150 for Drone Delivery.
    pub fn horizon(&self) -> usize {
        match self.kind {
            DsboEnvKind::DroneDelivery => DRONE_HORIZON,
            _ => MAX_CYCLES,
        }
    }

    /// Local state length of the task's agents.
    pub fn state_dim(&self) -> usize {
        match self.kind {
            DsboEnvKind::DroneDelivery => DRONE_STATE_DIM,
            _ => PREDPREY_STATE_DIM,
        }
    }

    /// The HOM configuration for this task.
    pub fn hom_config(&self) -> HomConfig {
        HomConfig {
            size: self.size,
            ablation: self.ablation,
            rounds: self.rounds,
            ..HomConfig::new(self.agents, self.state_dim(), 2)
        }
    }

    /// The HOM policy for this task.
    ///
    /// Errors: see [`HomPolicy::new`].
    pub fn policy(&self) -> Result<HomPolicy> {
        HomPolicy::new(self.hom_config())
    }

    /// `D = |θ|`.
    ///
    /// Errors: see [`HomPolicy::new`].
    pub fn dim(&self) -> Result<usize> {
        Ok(self.policy()?.num_params())
    }

    /// The search box `[−1, 1]^D` as `(lower, upper)`.
    ///
    /// Errors: see [`HomPolicy::new`].
    pub fn bounds(&self) -> Result<(Vec<f64>, Vec<f64>)> {
        let d = self.dim()?;
        Ok((vec![-1.0; d], vec![1.0; d]))
    }

    /// A fresh environment for this task (reset with the first episode's seed).
    ///
    /// Errors: an invalid configuration.
    pub fn make_env(&self) -> Result<Box<dyn TeamEnv + Send>> {
        let seed = self.episode_seed(0);
        let prey = (self.agents / 3).max(1);
        Ok(match self.kind {
            DsboEnvKind::PredPrey => Box::new(PredPreyEnv::new(
                SimpleTagConfig::new(self.agents, prey, 2 * prey)?,
                self.distance_shaping,
                seed,
            )),
            DsboEnvKind::HetPredPrey => Box::new(PredPreyEnv::new(
                SimpleTagConfig::heterogeneous(self.agents, prey, 2 * prey, self.het_spread)?,
                self.distance_shaping,
                seed,
            )),
            DsboEnvKind::DroneDelivery => Box::new(DroneDelivery::new(self.agents, seed)?),
        })
    }

    /// The seed of evaluation episode `e`: `derive_seed(seed, [e])`.
    pub fn episode_seed(&self, e: usize) -> u64 {
        rng::derive_seed(self.seed, &[e as u64])
    }

    /// Run evaluation episode `e` with the deterministic HOM at θ.
    ///
    /// Errors: θ of the wrong length or non-finite.
    pub fn run(&self, policy: &HomPolicy, theta: &[f64], e: usize) -> Result<EpisodeRecord> {
        let mut env = self.make_env()?;
        run_episode(env.as_mut(), self.episode_seed(e), self.schedule, |s| {
            policy.act(theta, s)
        })
    }

    /// `v(θ)`: the mean over the evaluation episodes of the delivered episodic sum.
    ///
    /// Errors: θ of the wrong length or non-finite (naming `theta`).
    pub fn evaluate(&self, theta: &[f64]) -> Result<f64> {
        let policy = self.policy()?;
        let mut total = 0.0;
        for e in 0..self.episodes {
            total += self.run(&policy, theta, e)?.delivered_return();
        }
        Ok(total / self.episodes as f64)
    }

    /// `v(θ)` as [`DsboTask::evaluate`] computes it, with the episodes run in `env` (reset
    /// from each episode's seed) by `policy` (this task's [`DsboTask::policy`]): what a
    /// caller evaluating many θ reuses.
    ///
    /// Errors: θ of the wrong length or non-finite.
    pub fn evaluate_in(
        &self,
        env: &mut dyn TeamEnv,
        policy: &HomPolicy,
        theta: &[f64],
    ) -> Result<f64> {
        let mut total = 0.0;
        for e in 0..self.episodes {
            let rec = run_episode(env, self.episode_seed(e), self.schedule, |s| {
                policy.act(theta, s)
            })?;
            total += rec.delivered_return();
        }
        Ok(total / self.episodes as f64)
    }

    /// `v` as a boxed closure for black-box optimisers. A θ that [`DsboTask::evaluate`] would
    /// reject (wrong length, non-finite) evaluates to NaN.
    ///
    /// Errors: an invalid configuration.
    pub fn objective(&self) -> Result<Objective> {
        let policy = self.policy()?;
        let task = self.clone();
        let mut env = self.make_env()?;
        Ok(Box::new(move |theta: &[f64]| {
            task.evaluate_in(env.as_mut(), &policy, theta)
                .unwrap_or(f64::NAN)
        }))
    }

    /// The joint states visited by the deterministic policy at θ over the evaluation
    /// episodes, at most `max_states` of them, evenly spaced over the concatenated
    /// trajectories (first state included).
    ///
    /// Errors: θ as in [`DsboTask::evaluate`], `max_states = 0`.
    pub fn visited_states(&self, theta: &[f64], max_states: usize) -> Result<Vec<Vec<Vec<f64>>>> {
        Ok(self.rollouts(&self.policy()?, theta, max_states)?.0)
    }

    /// The states of [`DsboTask::visited_states`] and `v(θ)` of the same episodes.
    fn rollouts(
        &self,
        policy: &HomPolicy,
        theta: &[f64],
        max_states: usize,
    ) -> Result<(Vec<Vec<Vec<f64>>>, f64)> {
        if max_states == 0 {
            return Err(Error::invalid("max_states", "must be at least 1"));
        }
        let mut all = Vec::new();
        let mut total = 0.0;
        for e in 0..self.episodes {
            let rec = self.run(policy, theta, e)?;
            total += rec.delivered_return();
            all.extend(rec.states);
        }
        let v = total / self.episodes as f64;
        if all.len() <= max_states {
            return Ok((all, v));
        }
        let stride = all.len() as f64 / max_states as f64;
        let states = (0..max_states)
            .map(|k| all[(k as f64 * stride) as usize].clone())
            .collect();
        Ok((states, v))
    }

    /// The surrogate policy Hessian at θ (§4.5): [`HomPolicy::surrogate_hessian`] over at most
    /// `max_states` states visited by the hard policy.
    ///
    /// Errors as [`DsboTask::visited_states`] and [`HomPolicy::surrogate_hessian`].
    pub fn surrogate_hessian(
        &self,
        theta: &[f64],
        options: &HessianOptions,
        max_states: usize,
    ) -> Result<PolicyHessian> {
        Ok(self
            .surrogate_hessian_and_return(theta, options, max_states)?
            .0)
    }

    /// [`DsboTask::surrogate_hessian`] and `v(θ)` of the episodes its states come from (the
    /// Hessian's rollouts are episodes whose return is observed too; DSBO's Phase 1 counts
    /// them).
    ///
    /// Errors as [`DsboTask::surrogate_hessian`].
    pub fn surrogate_hessian_and_return(
        &self,
        theta: &[f64],
        options: &HessianOptions,
        max_states: usize,
    ) -> Result<(PolicyHessian, f64)> {
        let policy = self.policy()?;
        let (visited, v) = self.rollouts(&policy, theta, max_states)?;
        Ok((policy.surrogate_hessian(theta, &visited, options)?, v))
    }
}
