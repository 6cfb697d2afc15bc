//! The Multi Particle Environments predator–prey task (`simple_tag`, mpe2 1.1.1, continuous
//! actions), the "PredPrey N" benchmark of DSBO (Rajpal et al., §5; Lowe et al. 2017), with a
//! heterogeneous-predator variant and the malformed-reward schedules Sparse-S and Delay-D
//! (DSBO App. B.3).
//!
//! Implemented from `conformance/mpe/DYNAMICS.md` (a description of the mpe2 source); no code
//! was copied. The recorded mpe2 episodes in `conformance/mpe` are replayed by
//! `tests/mpe_conformance.rs`. In brief, per step:
//!
//! - control `u = accel · (a₂ − a₁, a₄ − a₃)` from the action `(no-op, left, right, down, up)`;
//! - soft contact `f = C (d / r) · k·softplus(−(r − r_min)/k)` between every pair of entities
//!   (agents and landmarks), at the positions at the start of the step;
//! - `p ← p + dt·v` with the **old** velocity, then `v ← cap(0.75 v + dt·F / m)`;
//! - rewards from the new positions: every adversary gets `+10` per (good, adversary) pair in
//!   contact (`|Δp| < size sum`, strictly), a good agent `−10` per adversary touching it minus
//!   the out-of-arena penalty `bound(|x|) + bound(|y|)`; no shaping;
//! - observations from the new state (own velocity and position, relative landmark and agent
//!   positions, velocities of the other good agents).
//!
//! There are no walls, no noise and no scripted agents: every agent, prey included, acts
//! through the action passed to [`SimpleTag::step`]. A step is a deterministic function of
//! (state, actions); [`SimpleTag::reset`] draws the initial state from a seeded ChaCha stream
//! (the distribution of mpe2's reset, not its numpy stream).
//!
//! The heterogeneous variant ("Het. PredPrey": predators that differ in speed and
//! acceleration) is not specified numerically by the paper; [`SimpleTagConfig::heterogeneous`]
//! is agora's documented choice and [`SimpleTagConfig::with_predator_capabilities`] sets any
//! per-predator values.

use std::collections::VecDeque;

use agora_core::{Error, Result};
use agora_math::rng;
use rand::RngExt;

/// Integration time step `dt`.
pub const DT: f64 = 0.1;
/// Velocity damping per step (velocity is multiplied by `1 − DAMPING`).
pub const DAMPING: f64 = 0.25;
/// Contact force constant `C`.
pub const CONTACT_FORCE: f64 = 100.0;
/// Contact margin `k` of the softplus penetration.
pub const CONTACT_MARGIN: f64 = 0.001;
/// Radius of an adversary (predator).
pub const ADVERSARY_SIZE: f64 = 0.075;
/// Action gain of an adversary.
pub const ADVERSARY_ACCEL: f64 = 3.0;
/// Speed cap of an adversary.
pub const ADVERSARY_MAX_SPEED: f64 = 1.0;
/// Radius of a good agent (prey).
pub const GOOD_SIZE: f64 = 0.05;
/// Action gain of a good agent.
pub const GOOD_ACCEL: f64 = 4.0;
/// Speed cap of a good agent.
pub const GOOD_MAX_SPEED: f64 = 1.3;
/// Radius of a landmark (obstacle).
pub const LANDMARK_SIZE: f64 = 0.2;
/// Reward per (good, adversary) contact.
pub const CAPTURE_REWARD: f64 = 10.0;
/// Episode length of `simple_tag` (and of DSBO's PredPrey epoch).
pub const MAX_CYCLES: usize = 25;
/// Length of one action: (no-op, left, right, down, up).
pub const ACTION_DIM: usize = 5;

/// A 2-D vector.
pub type Vec2 = [f64; 2];

/// The physical description of one agent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgentBody {
    /// Adversary (predator) or good agent (prey).
    pub adversary: bool,
    /// Radius.
    pub size: f64,
    /// Action gain: the control is `accel` times the action differences.
    pub accel: f64,
    /// Speed cap.
    pub max_speed: f64,
    /// Mass (1 for every `simple_tag` agent).
    pub mass: f64,
}

impl AgentBody {
    /// An mpe2 `simple_tag` adversary.
    pub const ADVERSARY: AgentBody = AgentBody {
        adversary: true,
        size: ADVERSARY_SIZE,
        accel: ADVERSARY_ACCEL,
        max_speed: ADVERSARY_MAX_SPEED,
        mass: 1.0,
    };

    /// An mpe2 `simple_tag` good agent.
    pub const GOOD: AgentBody = AgentBody {
        adversary: false,
        size: GOOD_SIZE,
        accel: GOOD_ACCEL,
        max_speed: GOOD_MAX_SPEED,
        mass: 1.0,
    };
}

/// Per-predator capabilities of the heterogeneous variant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PredatorCapabilities {
    /// Action gain (homogeneous value [`ADVERSARY_ACCEL`]).
    pub accel: f64,
    /// Speed cap (homogeneous value [`ADVERSARY_MAX_SPEED`]).
    pub max_speed: f64,
}

/// Which agents and how many landmarks an episode has, and its length.
#[derive(Debug, Clone, PartialEq)]
pub struct SimpleTagConfig {
    agents: Vec<AgentBody>,
    num_adversaries: usize,
    num_obstacles: usize,
    max_cycles: usize,
}

impl Default for SimpleTagConfig {
    /// mpe2's defaults: 3 adversaries, 1 good agent, 2 obstacles, 25 steps.
    fn default() -> Self {
        SimpleTagConfig {
            agents: [[AgentBody::ADVERSARY; 3].as_slice(), &[AgentBody::GOOD]].concat(),
            num_adversaries: 3,
            num_obstacles: 2,
            max_cycles: MAX_CYCLES,
        }
    }
}

impl SimpleTagConfig {
    /// The homogeneous task with `num_adversaries` predators, `num_good` prey and
    /// `num_obstacles` landmarks, 25 steps. DSBO's PredPrey N has N predators (3, 6, 9, 15);
    /// the paper gives no prey or landmark counts (mpe2's default is 1 prey and 2 landmarks,
    /// FACMAC's 6-predator file uses 2 and 4).
    ///
    /// Errors: no adversary or no good agent.
    pub fn new(num_adversaries: usize, num_good: usize, num_obstacles: usize) -> Result<Self> {
        if num_adversaries == 0 {
            return Err(Error::invalid("num_adversaries", "must be at least 1"));
        }
        if num_good == 0 {
            return Err(Error::invalid("num_good", "must be at least 1"));
        }
        let mut agents = vec![AgentBody::ADVERSARY; num_adversaries];
        agents.extend(std::iter::repeat_n(AgentBody::GOOD, num_good));
        Ok(SimpleTagConfig {
            agents,
            num_adversaries,
            num_obstacles,
            max_cycles: MAX_CYCLES,
        })
    }

    /// The heterogeneous variant, agora's choice for the paper's unspecified "predators with
    /// different capabilities of speed and acceleration": predator `i` of `n` gets the factor
    /// `f_i = 1 − spread + 2·spread·i/(n − 1)` (1 when `n = 1`) on both its acceleration and its
    /// speed cap, so predators range from slow and sluggish (`1 − spread`) to fast and agile
    /// (`1 + spread`), the mean staying at the homogeneous values.
    ///
    /// Errors as [`SimpleTagConfig::new`], and `spread` outside `[0, 1)`.
    pub fn heterogeneous(
        num_adversaries: usize,
        num_good: usize,
        num_obstacles: usize,
        spread: f64,
    ) -> Result<Self> {
        if !(0.0..1.0).contains(&spread) {
            return Err(Error::invalid(
                "spread",
                format!("must lie in [0, 1), got {spread}"),
            ));
        }
        let n = num_adversaries;
        let caps: Vec<PredatorCapabilities> = (0..n)
            .map(|i| {
                let f = if n > 1 {
                    1.0 - spread + 2.0 * spread * i as f64 / (n - 1) as f64
                } else {
                    1.0
                };
                PredatorCapabilities {
                    accel: ADVERSARY_ACCEL * f,
                    max_speed: ADVERSARY_MAX_SPEED * f,
                }
            })
            .collect();
        Self::new(num_adversaries, num_good, num_obstacles)?.with_predator_capabilities(&caps)
    }

    /// Set each predator's acceleration and speed cap (in adversary order).
    ///
    /// Errors: `caps.len()` differs from the number of adversaries, or a value that is not
    /// finite and positive (naming `caps[i].accel` / `caps[i].max_speed`).
    pub fn with_predator_capabilities(mut self, caps: &[PredatorCapabilities]) -> Result<Self> {
        if caps.len() != self.num_adversaries {
            return Err(Error::dim("caps", self.num_adversaries, caps.len()));
        }
        for (i, c) in caps.iter().enumerate() {
            for (name, v) in [("accel", c.accel), ("max_speed", c.max_speed)] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(Error::invalid(
                        format!("caps[{i}].{name}"),
                        format!("must be finite and > 0, got {v}"),
                    ));
                }
            }
            self.agents[i].accel = c.accel;
            self.agents[i].max_speed = c.max_speed;
        }
        Ok(self)
    }

    /// Episode length in steps (default 25).
    ///
    /// Errors: `max_cycles = 0`.
    pub fn with_max_cycles(mut self, max_cycles: usize) -> Result<Self> {
        if max_cycles == 0 {
            return Err(Error::invalid("max_cycles", "must be at least 1"));
        }
        self.max_cycles = max_cycles;
        Ok(self)
    }

    /// Every agent in agent order: adversaries first, then good agents.
    pub fn agents(&self) -> &[AgentBody] {
        &self.agents
    }

    /// Number of adversaries (predators).
    pub fn num_adversaries(&self) -> usize {
        self.num_adversaries
    }

    /// Number of good agents (prey).
    pub fn num_good(&self) -> usize {
        self.agents.len() - self.num_adversaries
    }

    /// Number of landmarks (obstacles).
    pub fn num_obstacles(&self) -> usize {
        self.num_obstacles
    }

    /// Episode length in steps.
    pub fn max_cycles(&self) -> usize {
        self.max_cycles
    }

    /// Observation length of agent `i`: `4 + 2L + 2(N − 1) + 2G'`, with `G'` the good agents
    /// other than `i` (0 for `i` out of range).
    pub fn obs_dim(&self, i: usize) -> usize {
        let Some(a) = self.agents.get(i) else {
            return 0;
        };
        let others_good = self.num_good() - usize::from(!a.adversary);
        4 + 2 * self.num_obstacles + 2 * (self.agents.len() - 1) + 2 * others_good
    }
}

/// What one step returns.
#[derive(Debug, Clone, PartialEq)]
pub struct StepResult {
    /// Reward of each agent for this step, in agent order.
    pub rewards: Vec<f64>,
    /// True after the last step of the episode (no episode terminates early).
    pub truncated: bool,
}

/// `ln(1 + e^z)` without overflow (numpy's `logaddexp(0, z)`).
fn softplus(z: f64) -> f64 {
    if z == 0.0 {
        std::f64::consts::LN_2
    } else if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    }
}

/// The good agent's out-of-arena penalty for one coordinate magnitude `x ≥ 0`.
pub fn bound_penalty(x: f64) -> f64 {
    if x < 0.9 {
        0.0
    } else if x < 1.0 {
        (x - 0.9) * 10.0
    } else {
        (2.0 * x - 2.0).exp().min(10.0)
    }
}

fn norm(d: Vec2) -> f64 {
    (d[0] * d[0] + d[1] * d[1]).sqrt()
}

fn sub(a: Vec2, b: Vec2) -> Vec2 {
    [a[0] - b[0], a[1] - b[1]]
}

/// The `simple_tag` world: agents and landmarks with their state and the step counter.
#[derive(Debug, Clone, PartialEq)]
pub struct SimpleTag {
    config: SimpleTagConfig,
    agent_pos: Vec<Vec2>,
    agent_vel: Vec<Vec2>,
    landmark_pos: Vec<Vec2>,
    steps: usize,
}

impl SimpleTag {
    /// A world for `config`, reset with `seed` (see [`SimpleTag::reset`]).
    pub fn new(config: SimpleTagConfig, seed: u64) -> SimpleTag {
        let n = config.agents.len();
        let l = config.num_obstacles;
        let mut env = SimpleTag {
            config,
            agent_pos: vec![[0.0; 2]; n],
            agent_vel: vec![[0.0; 2]; n],
            landmark_pos: vec![[0.0; 2]; l],
            steps: 0,
        };
        env.reset(seed);
        env
    }

    /// Start a new episode: each agent in agent order at a uniform position in `[−1, 1)²`,
    /// then each landmark in `[−0.9, 0.9)²`, velocities 0, step counter 0. Draws come from
    /// the ChaCha stream `agora_math::rng::stream(seed, &[])`; the same seed gives the same
    /// episode.
    pub fn reset(&mut self, seed: u64) {
        let mut r = rng::stream(seed, &[]);
        for p in self.agent_pos.iter_mut() {
            *p = [r.random_range(-1.0..1.0), r.random_range(-1.0..1.0)];
        }
        for p in self.landmark_pos.iter_mut() {
            *p = [r.random_range(-0.9..0.9), r.random_range(-0.9..0.9)];
        }
        self.agent_vel.iter_mut().for_each(|v| *v = [0.0; 2]);
        self.steps = 0;
    }

    /// Set the state directly (e.g. a recorded initial state) and the step counter to 0.
    ///
    /// Errors: a length that does not match the configuration (naming `agent_pos`,
    /// `agent_vel` or `landmark_pos`) or a non-finite coordinate (naming `agent_pos[i][k]`
    /// etc.). Nothing is changed on error.
    pub fn set_state(
        &mut self,
        agent_pos: &[Vec2],
        agent_vel: &[Vec2],
        landmark_pos: &[Vec2],
    ) -> Result<()> {
        let n = self.config.agents.len();
        let l = self.config.num_obstacles;
        for (name, v, len) in [
            ("agent_pos", agent_pos, n),
            ("agent_vel", agent_vel, n),
            ("landmark_pos", landmark_pos, l),
        ] {
            if v.len() != len {
                return Err(Error::dim(name, len, v.len()));
            }
            for (i, p) in v.iter().enumerate() {
                for (k, x) in p.iter().enumerate() {
                    if !x.is_finite() {
                        return Err(Error::invalid(
                            format!("{name}[{i}][{k}]"),
                            format!("must be a finite number, got {x}"),
                        ));
                    }
                }
            }
        }
        self.agent_pos = agent_pos.to_vec();
        self.agent_vel = agent_vel.to_vec();
        self.landmark_pos = landmark_pos.to_vec();
        self.steps = 0;
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &SimpleTagConfig {
        &self.config
    }

    /// Number of agents.
    pub fn num_agents(&self) -> usize {
        self.config.agents.len()
    }

    /// Agent positions, in agent order.
    pub fn agent_positions(&self) -> &[Vec2] {
        &self.agent_pos
    }

    /// Agent velocities, in agent order.
    pub fn agent_velocities(&self) -> &[Vec2] {
        &self.agent_vel
    }

    /// Landmark positions (they never move; landmark velocities are always 0).
    pub fn landmark_positions(&self) -> &[Vec2] {
        &self.landmark_pos
    }

    /// Steps taken in this episode.
    pub fn steps_taken(&self) -> usize {
        self.steps
    }

    /// Whether the episode has reached its last step.
    pub fn is_done(&self) -> bool {
        self.steps >= self.config.max_cycles
    }

    /// Advance the world by one step with one action per agent (agent order), each
    /// `(no-op, left, right, down, up)`. Components are clipped to `[0, 1]` as PettingZoo's
    /// `ClipOutOfBoundsWrapper` does; the no-op component has no effect.
    ///
    /// Errors: the wrong number of actions, a non-finite component (naming `actions[i][k]`),
    /// or a step after the episode ended ([`Error::State`]; call [`SimpleTag::reset`]).
    /// Nothing is changed on error.
    pub fn step(&mut self, actions: &[[f64; ACTION_DIM]]) -> Result<StepResult> {
        let n = self.num_agents();
        if self.is_done() {
            return Err(Error::State(format!(
                "the episode ended after {} steps; reset before stepping again",
                self.config.max_cycles
            )));
        }
        if actions.len() != n {
            return Err(Error::dim("actions", n, actions.len()));
        }
        for (i, a) in actions.iter().enumerate() {
            if let Some(k) = a.iter().position(|x| !x.is_finite()) {
                return Err(Error::invalid(
                    format!("actions[{i}][{k}]"),
                    format!("must be a finite number in [0, 1], got {}", a[k]),
                ));
            }
        }
        // 1–2. Controls are the action forces.
        let mut force: Vec<Vec2> = actions
            .iter()
            .zip(&self.config.agents)
            .map(|(a, body)| {
                let c = |k: usize| a[k].clamp(0.0, 1.0);
                [(c(2) - c(1)) * body.accel, (c(4) - c(3)) * body.accel]
            })
            .collect();
        // 3. Soft contact forces between every pair of entities (agents, then landmarks), at
        //    the start-of-step positions; landmark–landmark pairs move nothing.
        for a in 0..n {
            for b in (a + 1)..n {
                let f = self.contact(
                    self.agent_pos[a],
                    self.agent_pos[b],
                    self.config.agents[a].size + self.config.agents[b].size,
                );
                force[a] = [f[0] + force[a][0], f[1] + force[a][1]];
                force[b] = [-f[0] + force[b][0], -f[1] + force[b][1]];
            }
            for lp in &self.landmark_pos {
                let f = self.contact(
                    self.agent_pos[a],
                    *lp,
                    self.config.agents[a].size + LANDMARK_SIZE,
                );
                force[a] = [f[0] + force[a][0], f[1] + force[a][1]];
            }
        }
        // 4. Semi-implicit integration: position with the old velocity, then damped velocity
        //    plus impulse, then the speed cap.
        for (i, body) in self.config.agents.iter().enumerate() {
            let (p, v) = (&mut self.agent_pos[i], &mut self.agent_vel[i]);
            *p = [p[0] + v[0] * DT, p[1] + v[1] * DT];
            *v = [v[0] * (1.0 - DAMPING), v[1] * (1.0 - DAMPING)];
            *v = [
                v[0] + (force[i][0] / body.mass) * DT,
                v[1] + (force[i][1] / body.mass) * DT,
            ];
            let speed = norm(*v);
            if speed > body.max_speed {
                *v = [v[0] / speed * body.max_speed, v[1] / speed * body.max_speed];
            }
        }
        self.steps += 1;
        Ok(StepResult {
            rewards: self.rewards(),
            truncated: self.is_done(),
        })
    }

    /// The contact force on an entity at `pa` from one at `pb` (the other gets its negative).
    fn contact(&self, pa: Vec2, pb: Vec2, r_min: f64) -> Vec2 {
        let d = sub(pa, pb);
        let r = norm(d);
        let pen = softplus(-(r - r_min) / CONTACT_MARGIN) * CONTACT_MARGIN;
        [
            CONTACT_FORCE * d[0] / r * pen,
            CONTACT_FORCE * d[1] / r * pen,
        ]
    }

    /// Whether agents `g` and `a` are in contact: `|p_g − p_a| < size_g + size_a`.
    fn touching(&self, g: usize, a: usize) -> bool {
        let r_min = self.config.agents[g].size + self.config.agents[a].size;
        norm(sub(self.agent_pos[g], self.agent_pos[a])) < r_min
    }

    /// Number of (good agent, adversary) pairs in contact in the current state.
    pub fn captures(&self) -> usize {
        let na = self.config.num_adversaries;
        (na..self.num_agents())
            .map(|g| (0..na).filter(|&a| self.touching(g, a)).count())
            .sum()
    }

    /// The rewards of the current state, in agent order: `10 × captures` for every adversary;
    /// for a good agent `−10` per adversary touching it minus `bound(|x|) + bound(|y|)`
    /// ([`bound_penalty`]).
    pub fn rewards(&self) -> Vec<f64> {
        let na = self.config.num_adversaries;
        let adversary_reward = CAPTURE_REWARD * self.captures() as f64;
        (0..self.num_agents())
            .map(|i| {
                if i < na {
                    return adversary_reward;
                }
                let mut r = 0.0;
                for a in 0..na {
                    if self.touching(i, a) {
                        r -= CAPTURE_REWARD;
                    }
                }
                for x in self.agent_pos[i] {
                    r -= bound_penalty(x.abs());
                }
                r
            })
            .collect()
    }

    /// Observation of agent `i`: own velocity, own position, `p_landmark − p_i` for each
    /// landmark, `p_j − p_i` for each other agent (agent order), then `v_j` for each other
    /// good agent; length [`SimpleTagConfig::obs_dim`].
    ///
    /// Errors: `i` is not an agent index.
    pub fn observation(&self, i: usize) -> Result<Vec<f64>> {
        let n = self.num_agents();
        if i >= n {
            return Err(Error::invalid(
                "agent",
                format!("{i} is not an agent index (0..{n})"),
            ));
        }
        let p = self.agent_pos[i];
        let mut obs = Vec::with_capacity(self.config.obs_dim(i));
        obs.extend(self.agent_vel[i]);
        obs.extend(p);
        for lp in &self.landmark_pos {
            obs.extend(sub(*lp, p));
        }
        for j in (0..n).filter(|&j| j != i) {
            obs.extend(sub(self.agent_pos[j], p));
        }
        for j in (self.config.num_adversaries..n).filter(|&j| j != i) {
            obs.extend(self.agent_vel[j]);
        }
        Ok(obs)
    }

    /// Every agent's observation, in agent order.
    pub fn observations(&self) -> Vec<Vec<f64>> {
        (0..self.num_agents())
            .filter_map(|i| self.observation(i).ok())
            .collect()
    }
}

/// How rewards reach the learner (DSBO App. B.3's malformed rewards).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewardSchedule {
    /// Every step's reward as it happens.
    Dense,
    /// Sparse-S: at steps `Γ ≡ 0 (mod S)` the sum of the last `S` rewards, 0 otherwise. (The
    /// paper prints `Σ_{Γ−S}^{Γ}`, `S + 1` terms; the last `S` is the reading that neither
    /// drops nor double-counts a reward.)
    Sparse {
        /// The period `S ≥ 1`.
        period: usize,
    },
    /// Delay-D: at step `Γ` the reward of step `Γ − D` if `Γ > D`, else 0; the last `D`
    /// rewards of an episode are never delivered.
    Delay {
        /// The lag `D` (0 is dense).
        lag: usize,
    },
}

/// Applies a [`RewardSchedule`] to a stream of per-agent reward vectors, one episode at a
/// time.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduledRewards {
    schedule: RewardSchedule,
    num_agents: usize,
    steps: usize,
    pending: Vec<f64>,
    queue: VecDeque<Vec<f64>>,
}

impl ScheduledRewards {
    /// A fresh episode for `num_agents` reward streams.
    ///
    /// Errors: `Sparse { period: 0 }` (naming `period`).
    pub fn new(schedule: RewardSchedule, num_agents: usize) -> Result<Self> {
        if let RewardSchedule::Sparse { period: 0 } = schedule {
            return Err(Error::invalid(
                "period",
                "the sparsity S must be at least 1",
            ));
        }
        Ok(ScheduledRewards {
            schedule,
            num_agents,
            steps: 0,
            pending: vec![0.0; num_agents],
            queue: VecDeque::new(),
        })
    }

    /// The schedule.
    pub fn schedule(&self) -> RewardSchedule {
        self.schedule
    }

    /// Take one step's true rewards and return the rewards delivered at this step.
    ///
    /// Errors: `rewards.len()` differs from `num_agents`.
    pub fn push(&mut self, rewards: &[f64]) -> Result<Vec<f64>> {
        if rewards.len() != self.num_agents {
            return Err(Error::dim("rewards", self.num_agents, rewards.len()));
        }
        self.steps += 1;
        Ok(match self.schedule {
            RewardSchedule::Dense => rewards.to_vec(),
            RewardSchedule::Sparse { period } => {
                self.pending
                    .iter_mut()
                    .zip(rewards)
                    .for_each(|(p, r)| *p += r);
                if self.steps.is_multiple_of(period) {
                    std::mem::replace(&mut self.pending, vec![0.0; self.num_agents])
                } else {
                    vec![0.0; self.num_agents]
                }
            }
            RewardSchedule::Delay { lag } => {
                self.queue.push_back(rewards.to_vec());
                if self.queue.len() > lag {
                    self.queue.pop_front().unwrap_or_default()
                } else {
                    vec![0.0; self.num_agents]
                }
            }
        })
    }

    /// End the episode (after its last step, early or not) and return what is delivered then:
    /// for Sparse-S the sum of the pending partial window (so the episodic sum is preserved
    /// whether or not `S` divides the length), for Dense and Delay-D zeros (Delay-D's last `D`
    /// rewards are lost; see [`ScheduledRewards::undelivered`]). Starts a fresh episode.
    pub fn finish(&mut self) -> Vec<f64> {
        let out = match self.schedule {
            RewardSchedule::Sparse { .. } => self.pending.clone(),
            _ => vec![0.0; self.num_agents],
        };
        self.steps = 0;
        self.pending = vec![0.0; self.num_agents];
        self.queue.clear();
        out
    }

    /// The per-agent sum of true rewards pushed but not (yet) delivered.
    pub fn undelivered(&self) -> Vec<f64> {
        let mut s = self.pending.clone();
        for r in &self.queue {
            s.iter_mut().zip(r).for_each(|(a, b)| *a += b);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn far_apart(n: usize) -> Vec<Vec2> {
        (0..n).map(|i| [10.0 * i as f64, -5.0]).collect()
    }

    #[test]
    fn observation_lengths_match_the_dynamics_table() {
        // DYNAMICS.md §6: (good, adversaries, obstacles) → (adversary, good) lengths.
        for ((g, a, l), (da, dg)) in [
            ((1, 3, 2), (16, 14)),
            ((1, 6, 2), (22, 20)),
            ((2, 4, 2), (22, 20)),
        ] {
            let env = SimpleTag::new(SimpleTagConfig::new(a, g, l).unwrap(), 1);
            let obs = env.observations();
            assert_eq!(obs.len(), a + g);
            for (i, o) in obs.iter().enumerate() {
                let want = if i < a { da } else { dg };
                assert_eq!((o.len(), env.config().obs_dim(i)), (want, want));
            }
        }
        assert_eq!(
            SimpleTagConfig::default(),
            SimpleTagConfig::new(3, 1, 2).unwrap()
        );
    }

    #[test]
    fn reset_is_seeded_and_within_the_spawn_boxes() {
        let cfg = SimpleTagConfig::new(15, 2, 4).unwrap();
        let a = SimpleTag::new(cfg.clone(), 42);
        let b = SimpleTag::new(cfg.clone(), 42);
        let c = SimpleTag::new(cfg, 43);
        assert_eq!(a, b);
        assert_ne!(a.agent_positions(), c.agent_positions());
        assert!(a.agent_positions().iter().flatten().all(|x| x.abs() <= 1.0));
        assert!(
            a.landmark_positions()
                .iter()
                .flatten()
                .all(|x| x.abs() <= 0.9)
        );
        assert!(a.agent_velocities().iter().flatten().all(|&v| v == 0.0));
        // Same seed and actions: identical trajectories.
        let (mut a, mut b) = (a, b);
        let act = vec![[0.1, 0.9, 0.2, 0.4, 0.7]; 17];
        for _ in 0..MAX_CYCLES {
            assert_eq!(a.step(&act).unwrap(), b.step(&act).unwrap());
        }
        assert_eq!(a, b);
    }

    #[test]
    fn free_flight_matches_the_closed_form() {
        // Far from everything the contact force underflows to 0, so with a full "right"
        // action v_{t+1} = 0.75 v_t + 0.1·accel, capped: v_t = 0.4·accel·(1 − 0.75^t) until it
        // exceeds max_speed; x moves by 0.1·v_{t−1}.
        let caps = [
            PredatorCapabilities {
                accel: 1.0,
                max_speed: 5.0,
            },
            PredatorCapabilities {
                accel: 3.0,
                max_speed: 1.0,
            },
        ];
        let cfg = SimpleTagConfig::new(2, 1, 0)
            .unwrap()
            .with_predator_capabilities(&caps)
            .unwrap()
            .with_max_cycles(40)
            .unwrap();
        let mut env = SimpleTag::new(cfg, 0);
        env.set_state(&far_apart(3), &[[0.0; 2]; 3], &[]).unwrap();
        let act = [[0.0, 0.0, 1.0, 0.0, 0.0]; 3];
        let mut expect_x = [0.0, 10.0, 20.0];
        let mut expect_v = [0.0; 3];
        let bodies = env.config().agents().to_vec();
        for _ in 0..40 {
            env.step(&act).unwrap();
            for (i, b) in bodies.iter().enumerate() {
                expect_x[i] += DT * expect_v[i];
                expect_v[i] = (0.75 * expect_v[i] + DT * b.accel).min(b.max_speed);
                assert!((env.agent_positions()[i][0] - expect_x[i]).abs() < 1e-12);
                assert!((env.agent_velocities()[i][0] - expect_v[i]).abs() < 1e-12);
                assert_eq!(env.agent_velocities()[i][1], 0.0);
            }
        }
        // Terminal speeds: 0.4·1 = 0.4 (below its cap 5), min(0.4·3, 1) = 1, min(0.4·4, 1.3).
        let v: Vec<f64> = env.agent_velocities().iter().map(|v| v[0]).collect();
        assert!((v[0] - 0.4).abs() < 1e-4 && v[1] == 1.0 && v[2] == GOOD_MAX_SPEED);
    }

    #[test]
    fn captures_and_bounds_give_the_documented_rewards() {
        let cfg = SimpleTagConfig::new(3, 2, 0).unwrap();
        let mut env = SimpleTag::new(cfg, 0);
        // Good agent 3 at the origin touched by adversaries 0 (0.1 away) and 1 (0.12 away),
        // not by 2 (0.13 away: 0.125 is the contact distance). Good agent 4 at (0.95, −1.5)
        // touches nobody and pays bound(0.95) + bound(1.5) = 0.5 + e.
        let pos = [
            [0.1, 0.0],
            [0.0, -0.12],
            [-0.13, 0.0],
            [0.0, 0.0],
            [0.95, -1.5],
        ];
        env.set_state(&pos, &[[0.0; 2]; 5], &[]).unwrap();
        assert_eq!(env.captures(), 2);
        let r = env.rewards();
        assert_eq!(&r[..3], &[20.0, 20.0, 20.0]);
        assert_eq!(r[3], -20.0);
        assert!((r[4] + 0.5 + 1f64.exp()).abs() < 1e-12, "{}", r[4]);
        assert_eq!(bound_penalty(0.5), 0.0);
        assert_eq!(bound_penalty(3.0), 10.0);
        assert!((bound_penalty(1.0) - 1.0).abs() < 1e-15);
    }

    #[test]
    fn overlapping_agents_are_pushed_apart() {
        let mut env = SimpleTag::new(SimpleTagConfig::new(1, 1, 0).unwrap(), 0);
        // Overlap 0.125 − 0.1 = 0.025: force ≈ C·0.025 = 2.5 along the line of centres.
        env.set_state(&[[0.0, 0.0], [0.1, 0.0]], &[[0.0; 2]; 2], &[])
            .unwrap();
        env.step(&[[0.0; 5]; 2]).unwrap();
        let v = env.agent_velocities();
        let expected = DT * CONTACT_FORCE * (0.025 + CONTACT_MARGIN * (-25.0f64).exp().ln_1p());
        assert!((v[0][0] + expected).abs() < 1e-12 && (v[1][0] - expected).abs() < 1e-12);
        assert!(v[0][1] == 0.0 && v[1][1] == 0.0);
    }

    #[test]
    fn heterogeneous_predators_span_the_spread() {
        let cfg = SimpleTagConfig::heterogeneous(3, 1, 2, 0.5).unwrap();
        let accel: Vec<f64> = cfg.agents().iter().map(|b| b.accel).collect();
        let speed: Vec<f64> = cfg.agents().iter().map(|b| b.max_speed).collect();
        assert_eq!(accel, [1.5, 3.0, 4.5, GOOD_ACCEL]);
        assert_eq!(speed, [0.5, 1.0, 1.5, GOOD_MAX_SPEED]);
        let one = SimpleTagConfig::heterogeneous(1, 1, 0, 0.5).unwrap();
        assert_eq!(one.agents()[0], AgentBody::ADVERSARY);
        assert!(SimpleTagConfig::heterogeneous(3, 1, 2, 1.0).is_err());
    }

    #[test]
    fn bad_input_is_named_and_changes_nothing() {
        assert!(
            SimpleTagConfig::new(0, 1, 2)
                .unwrap_err()
                .to_string()
                .contains("num_adversaries")
        );
        assert!(SimpleTagConfig::new(3, 0, 2).is_err());
        let bad = [PredatorCapabilities {
            accel: -1.0,
            max_speed: 1.0,
        }];
        let e = SimpleTagConfig::new(1, 1, 0)
            .unwrap()
            .with_predator_capabilities(&bad)
            .unwrap_err();
        assert!(e.to_string().contains("caps[0].accel"), "{e}");
        let mut env = SimpleTag::new(SimpleTagConfig::default(), 3);
        let before = env.clone();
        assert_eq!(
            env.step(&[[0.0; 5]; 3]).unwrap_err(),
            Error::dim("actions", 4, 3)
        );
        let mut act = [[0.0; 5]; 4];
        act[2][3] = f64::NAN;
        assert!(
            env.step(&act)
                .unwrap_err()
                .to_string()
                .contains("actions[2][3]")
        );
        let e = env
            .set_state(&[[0.0; 2]; 4], &[[0.0, f64::INFINITY]; 4], &[[0.0; 2]; 2])
            .unwrap_err();
        assert!(e.to_string().contains("agent_vel[0][1]"), "{e}");
        assert!(env.set_state(&[[0.0; 2]; 4], &[[0.0; 2]; 4], &[]).is_err());
        assert_eq!(env, before);
        assert!(env.observation(4).is_err());
        for t in 1..=MAX_CYCLES {
            let s = env.step(&[[0.0; 5]; 4]).unwrap();
            assert_eq!(s.truncated, t == MAX_CYCLES);
        }
        assert!(matches!(env.step(&[[0.0; 5]; 4]), Err(Error::State(_))));
    }

    /// A deterministic pseudo-random reward stream with integer and fractional parts.
    fn reward_stream(len: usize, agents: usize) -> Vec<Vec<f64>> {
        (0..len)
            .map(|t| {
                (0..agents)
                    .map(|a| ((t * 7 + a * 3) % 5) as f64 * 10.0 - 0.25 * a as f64)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn sparse_rewards_follow_the_definition_and_keep_the_sum() {
        for len in [25, 12, 7] {
            let r = reward_stream(len, 3);
            for period in [1, 2, 5, 7, 25, 100] {
                let mut s = ScheduledRewards::new(RewardSchedule::Sparse { period }, 3).unwrap();
                let mut delivered = [0.0; 3];
                for (t0, rt) in r.iter().enumerate() {
                    let got = s.push(rt).unwrap();
                    let t = t0 + 1;
                    for a in 0..3 {
                        // B.3: Σ of the last S true rewards at multiples of S, else 0.
                        let want: f64 = if t % period == 0 {
                            r[t - period..t].iter().map(|x| x[a]).sum()
                        } else {
                            0.0
                        };
                        assert_eq!(got[a], want, "len {len} S={period} t={t}");
                        delivered[a] += got[a];
                    }
                }
                let tail = s.finish();
                for a in 0..3 {
                    let total: f64 = r.iter().map(|x| x[a]).sum();
                    let full: f64 = r[..len - len % period].iter().map(|x| x[a]).sum();
                    // Without the flush only complete windows arrive; with it, everything.
                    assert!((delivered[a] - full).abs() < 1e-9);
                    assert!((delivered[a] + tail[a] - total).abs() < 1e-9);
                }
            }
        }
        assert!(ScheduledRewards::new(RewardSchedule::Sparse { period: 0 }, 1).is_err());
    }

    #[test]
    fn delayed_rewards_shift_and_drop_the_last_d() {
        let r = reward_stream(25, 2);
        for lag in [0, 1, 5, 24, 25, 200] {
            let mut s = ScheduledRewards::new(RewardSchedule::Delay { lag }, 2).unwrap();
            let mut delivered = [0.0; 2];
            for (t0, rt) in r.iter().enumerate() {
                let got = s.push(rt).unwrap();
                let t = t0 + 1;
                for a in 0..2 {
                    let want = if t > lag { r[t - lag - 1][a] } else { 0.0 };
                    assert_eq!(got[a], want, "D={lag} t={t}");
                    delivered[a] += got[a];
                }
            }
            let undelivered = s.undelivered();
            assert_eq!(s.finish(), vec![0.0; 2]);
            for a in 0..2 {
                // The episodic sum becomes Σ_{Γ ≤ 25 − D} r_Γ.
                let kept: f64 = r[..25usize.saturating_sub(lag)].iter().map(|x| x[a]).sum();
                let total: f64 = r.iter().map(|x| x[a]).sum();
                assert!((delivered[a] - kept).abs() < 1e-9);
                assert!((undelivered[a] - (total - kept)).abs() < 1e-9);
            }
        }
        let mut dense = ScheduledRewards::new(RewardSchedule::Dense, 2).unwrap();
        assert_eq!(dense.push(&[1.5, -2.0]).unwrap(), vec![1.5, -2.0]);
        assert_eq!(dense.push(&[1.0]).unwrap_err(), Error::dim("rewards", 2, 1));
    }
}
