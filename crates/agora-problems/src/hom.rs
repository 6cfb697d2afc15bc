//! The role-based higher-order policy ("HOM") of DSBO (Rajpal et al., §4.1–4.3, Alg. 1–3,
//! Eq. 2–3): fixed algorithms (Hungarian role assignment, edge generation, τ rounds of message
//! passing, un-permutation) interpreting a flat parameter vector θ at every step.
//!
//! For `n` agents with local states `s^ℓ ∈ ℝ^{d_s}` and actions `a^ℓ ∈ ℝ^{d_a}`:
//!
//! 1. **Role assignment (Alg. 1).** A shared trunk `f = trunk(s^ℓ) ∈ (−1, 1)^w` and per-role
//!    linear heads give `A[i][ℓ] = head_i · f(s^ℓ)`; `α = argmax_α Σ_i A[i][α(i)]` by
//!    [`agora_math::assign::hungarian_max`] (`α(i)` = the agent filling role `i`). Table 3
//!    shows the HOM barely grows with `n`, so the per-role parameters θ_{r,i} are *capped*: there
//!    are `R = min(n, max_role_heads)` learned heads (`theta_r[0..R]`); for `n > R` role `i`
//!    uses the linear interpolation of the two heads around position `i·(R−1)/(n−1)` (for
//!    `n ≤ R` role `i` has head `i` exactly). Heads have no bias: a per-role constant never
//!    changes the assignment.
//! 2. **Role interaction (Alg. 2).** One shared pairwise net `Λ_gv(s^{α(i)}, s^{α(ℓ)})`; role `i`
//!    receives from role `ℓ ≠ i` iff `Λ > 0` (directed as printed; no self-edges, since `U`
//!    already sees the role's own state and hidden state; §8.8).
//! 3. **MPNN (Eq. 3).** `h_0 = 0 ∈ ℝ^{d_a}`; for `τ` rounds
//!    `m_i = Σ_{ℓ ∈ N(i)} M(h_i, t_i, h_ℓ, t_ℓ)` and `h_i ← U(s^{α(i)}, h_i, m_i, t_i)`, where
//!    `t_i = i/(n−1)` encodes the role index (the paper passes `i, ℓ` to `M`; agora also passes
//!    `t_i` to `U`, so roles shape actions even with RI ablated, as Fig. 6's per-role action
//!    distributions need). `M` and `U` end in `tanh`, so messages and actions lie in
//!    `(−1, 1)`; the final hidden state is the action.
//! 4. **Un-permutation (Alg. 3).** `a^{α(i)} = h_i`.
//!
//! Networks are tanh MLPs (§8.8 leaves activations open; a smooth activation keeps the policy
//! Hessian informative — with ReLU most second derivatives vanish). Sizes: "L layers × W
//! neurons" follows the paper's Table 2 convention (`3 × 10` = `obs → 10 → 10 → act`, i.e.
//! L weight layers): **Med** (3 × 4) has hidden layers `[4, 4]`; **Sm** (1 × 2) is read as one
//! hidden layer of 2 (a single weight layer has no neurons to count). Ablations:
//! RA off ([`Ablation::NoRoleAssignment`]: α = identity, no role nets), RI off
//! ([`Ablation::NoRoleInteraction`]: no edge net, no `M`, no messages), and
//! [`Ablation::Ctde`] (one MLP shared by all agents on the local state).
//!
//! **Relaxed policy (App. A).** For the Hessian phase the discrete parts are relaxed
//! ([`Relaxation`]): the permutation becomes the soft permutation `P` from log-domain
//! Sinkhorn–Knopp on `A / T`, with `T` annealed `1, 1/2, 1/4, … → τ_s` and a fixed number of
//! sweeps per stage from zero potentials. The relaxed policy is that unrolled map (not the
//! exact Sinkhorn fixed point, which at small `τ_s` can need `exp(O(1/τ_s))` sweeps), so it is
//! one smooth function of θ whose derivatives are exact; with enough sweeps it matches
//! [`agora_math::assign::sinkhorn`], and as `τ_s → 0` it tends to the Hungarian permutation
//! when that is unique (off-permutation mass ≈ `exp(−gap / (k τ_s))` for a `k`-cycle). Role
//! states are `Σ_ℓ P[i][ℓ] s^ℓ`, actions `a^ℓ = Σ_i P[i][ℓ] h_i`; edges become weights
//! `σ(Λ / τ_e)`. As both temperatures go to 0 the relaxed policy tends to the hard one.
//!
//! **Policy Hessian (§4.5, App. A/H).** Second derivatives of the outputs with respect to θ are
//! exact: the policy is recorded on a reverse-mode tape and Hessian columns are Hessian–vector
//! products along basis vectors (forward-over-reverse), eight at a time, so the dense `D × D`
//! matrix (D ≈ 400) costs `⌈D/8⌉` tape sweeps per state; arbitrary directions are available
//! through [`HomPolicy::action_hvp`]. The surrogate [`HomPolicy::surrogate_hessian`] averages
//! over visited states; how the `n·d_a` outputs are combined is a gap (§8.6) decided in
//! [`HessianReduction`]. Measured on a shared, loaded 2-core machine (release, Med, PredPrey,
//! default relaxation): about 20 ms per state for N = 3, 50 ms for N = 6 and 0.9 s for N = 15
//! (the tape grows as N²: ≈ 21k nodes at N = 6, ≈ 111k at N = 15).

mod tape;

use std::ops::Range;

use agora_core::{Error, Result};
use agora_math::assign::hungarian_max;
use agora_math::rng;
use rand::RngExt;
use tape::{LANES, Ops, Plain, Tape};

/// Network size preset (App. A.8, Table 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HomSize {
    /// "1 layer × 2 neurons": one hidden layer of 2.
    Sm,
    /// "3 layers × 4 neurons" (the paper's default): hidden layers `[4, 4]`.
    Med,
    /// `hidden_layers` hidden layers of `width` tanh units (the paper's "3 × 15" CTDE policy
    /// is `{ hidden_layers: 2, width: 15 }`).
    Custom {
        /// Number of hidden layers (≥ 1).
        hidden_layers: usize,
        /// Units per hidden layer (≥ 1).
        width: usize,
    },
}

impl HomSize {
    /// The hidden-layer widths.
    pub fn hidden(&self) -> Vec<usize> {
        match *self {
            HomSize::Sm => vec![2],
            HomSize::Med => vec![4, 4],
            HomSize::Custom {
                hidden_layers,
                width,
            } => vec![width; hidden_layers],
        }
    }
}

/// Which parts of the HOM are active (§5 ablation, Fig. 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ablation {
    /// Role assignment, role interaction and message passing.
    Full,
    /// RA off: α is the identity (role `i` is agent `i`); no role-affinity parameters.
    NoRoleAssignment,
    /// RI off: no edges and no messages; no edge or message parameters.
    NoRoleInteraction,
    /// CTDE: one MLP shared by all agents, `a^ℓ = MLP(s^ℓ)`.
    Ctde,
}

/// The shape of a HOM.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HomConfig {
    /// Number of agents `n` (= number of roles).
    pub num_agents: usize,
    /// Local state length `d_s`.
    pub state_dim: usize,
    /// Action length `d_a` (also the hidden-state and message length).
    pub action_dim: usize,
    /// Network size.
    pub size: HomSize,
    /// Ablation.
    pub ablation: Ablation,
    /// Message-passing rounds τ (≥ 1; default 2, a §8.8 gap).
    pub rounds: usize,
    /// Cap `R` on learned role heads (≥ 1; default 4).
    pub max_role_heads: usize,
}

impl HomConfig {
    /// Med, full HOM, τ = 2, at most 4 role heads.
    pub fn new(num_agents: usize, state_dim: usize, action_dim: usize) -> Self {
        HomConfig {
            num_agents,
            state_dim,
            action_dim,
            size: HomSize::Med,
            ablation: Ablation::Full,
            rounds: 2,
            max_role_heads: 4,
        }
    }
}

/// A named slice of θ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSlice {
    /// `theta_r.trunk`, `theta_r[i]` (role head `i`), `theta_g_v` (edge affinity),
    /// `theta_g_eta` (message function M), `theta_g_e` (update function U) or `theta_ctde`.
    pub name: String,
    /// Indices into θ.
    pub range: Range<usize>,
}

/// A tanh MLP stored in θ: per layer the weights (`out × in`, row-major), then the biases.
#[derive(Debug, Clone, PartialEq)]
struct Mlp {
    dims: Vec<usize>,
    offsets: Vec<usize>,
    end: usize,
    tanh_out: bool,
}

impl Mlp {
    fn new(offset: usize, input: usize, hidden: &[usize], output: usize, tanh_out: bool) -> Mlp {
        let mut dims = vec![input];
        dims.extend_from_slice(hidden);
        dims.push(output);
        let mut offsets = Vec::with_capacity(dims.len() - 1);
        let mut at = offset;
        for w in dims.windows(2) {
            offsets.push(at);
            at += (w[0] + 1) * w[1];
        }
        Mlp {
            dims,
            offsets,
            end: at,
            tanh_out,
        }
    }

    fn range(&self) -> Range<usize> {
        self.offsets[0]..self.end
    }

    /// First-layer pre-activation restricted to input columns `start..start + x.len()`
    /// (no bias).
    fn partial<O: Ops>(&self, o: &mut O, th: &[O::V], start: usize, x: &[O::V]) -> Vec<O::V> {
        let (inp, out, off) = (self.dims[0], self.dims[1], self.offsets[0]);
        (0..out)
            .map(|j| {
                let w = &th[off + j * inp + start..off + j * inp + start + x.len()];
                o.dot(w, x).unwrap_or_else(|| o.cst(0.0))
            })
            .collect()
    }

    /// Continue from the first layer's pre-activation without bias.
    fn finish<O: Ops>(&self, o: &mut O, th: &[O::V], pre: Vec<O::V>) -> Vec<O::V> {
        let layers = self.dims.len() - 1;
        let mut x = pre;
        for l in 0..layers {
            let (inp, out, off) = (self.dims[l], self.dims[l + 1], self.offsets[l]);
            let bias = off + inp * out;
            if l > 0 {
                x = (0..out)
                    .map(|j| {
                        let w = &th[off + j * inp..off + (j + 1) * inp];
                        o.dot(w, &x).unwrap_or_else(|| o.cst(0.0))
                    })
                    .collect();
            }
            let last = l + 1 == layers;
            x = x
                .into_iter()
                .enumerate()
                .map(|(j, z)| {
                    let z = o.add(z, th[bias + j]);
                    if !last || self.tanh_out { o.tanh(z) } else { z }
                })
                .collect();
        }
        x
    }

    fn forward<O: Ops>(&self, o: &mut O, th: &[O::V], x: &[O::V]) -> Vec<O::V> {
        let pre = self.partial(o, th, 0, x);
        self.finish(o, th, pre)
    }
}

/// The role-affinity networks: a shared trunk and `R` linear heads.
#[derive(Debug, Clone, PartialEq)]
struct RoleNets {
    trunk: Mlp,
    heads: Vec<usize>,
    width: usize,
}

/// The discrete parts' relaxation for the Hessian phase (App. A; temperatures are a §8.6 gap).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Relaxation {
    /// Final Sinkhorn temperature `τ_s > 0` (the kernel is `exp(A / τ_s)`).
    pub sinkhorn_temperature: f64,
    /// Edge temperature `τ_e > 0`: edge weight `σ(Λ / τ_e)`.
    pub edge_temperature: f64,
    /// Sinkhorn sweeps (row then column normalisation) per annealing stage (≥ 1).
    pub sinkhorn_sweeps: usize,
}

impl Default for Relaxation {
    /// `τ_s = τ_e = 0.2`, 5 sweeps per stage: soft enough that role and edge parameters have
    /// visible curvature, close enough that the relaxed actions track the hard ones.
    fn default() -> Self {
        Relaxation {
            sinkhorn_temperature: 0.2,
            edge_temperature: 0.2,
            sinkhorn_sweeps: 5,
        }
    }
}

impl Relaxation {
    fn check(&self) -> Result<()> {
        for (name, t) in [
            ("sinkhorn_temperature", self.sinkhorn_temperature),
            ("edge_temperature", self.edge_temperature),
        ] {
            if !(t.is_finite() && t > 0.0) {
                return Err(Error::invalid(
                    name,
                    format!("must be finite and > 0, got {t}"),
                ));
            }
        }
        if self.sinkhorn_sweeps == 0 {
            return Err(Error::invalid("sinkhorn_sweeps", "must be at least 1"));
        }
        Ok(())
    }

    /// Stage temperatures `1, 1/2, …` (those above `τ_s`), then `τ_s`.
    fn schedule(&self) -> Vec<f64> {
        let tau = self.sinkhorn_temperature;
        let mut t = vec![];
        let mut s = 1.0;
        while s > tau && t.len() < 64 {
            t.push(s);
            s *= 0.5;
        }
        t.push(tau);
        t
    }
}

/// How the surrogate Hessian combines the `K = n·d_a` action outputs and the visited states
/// (§8.6 gap). In every case the per-state matrix is exact and symmetrised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HessianReduction {
    /// `mean_t |Σ_k c_{t,k} ∂²a_k/∂θ_a∂θ_b|` with Rademacher signs `c` drawn per state from the
    /// seed (the default). One scalar per state, so `D` HVPs per state whatever `n`; the
    /// absolute value per state stops cancellation across states; an entry is non-zero
    /// (almost surely over `c`) iff some output has that interaction at some visited state.
    AbsProjection,
    /// `mean_t Σ_k c_{t,k} ∂²a_k/∂θ_a∂θ_b`, signed: the chain-rule term `H_π ∘ g` of Eq. 6 with
    /// a random stand-in for the unknown `g = ∇v̂`. Entries can cancel across states.
    Projection,
    /// `mean_t Σ_k |∂²a_k/∂θ_a∂θ_b|`: exact per output, `K` times the cost.
    AbsSum,
}

/// Settings of [`HomPolicy::surrogate_hessian`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HessianOptions {
    /// The relaxation of the discrete parts.
    pub relaxation: Relaxation,
    /// How outputs and states are combined.
    pub reduction: HessianReduction,
    /// Seed of the projection signs.
    pub seed: u64,
}

impl Default for HessianOptions {
    /// Default relaxation, [`HessianReduction::AbsProjection`], seed 0.
    fn default() -> Self {
        HessianOptions {
            relaxation: Relaxation::default(),
            reduction: HessianReduction::AbsProjection,
            seed: 0,
        }
    }
}

/// A dense symmetric `D × D` matrix over θ (row-major).
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyHessian {
    /// `D`.
    pub dim: usize,
    /// Entries, `data[a·D + b]`.
    pub data: Vec<f64>,
}

impl PolicyHessian {
    /// Entry `(a, b)` (0 outside the matrix).
    pub fn get(&self, a: usize, b: usize) -> f64 {
        if a < self.dim && b < self.dim {
            self.data[a * self.dim + b]
        } else {
            0.0
        }
    }

    /// The rows as vectors.
    pub fn rows(&self) -> Vec<Vec<f64>> {
        self.data
            .chunks(self.dim.max(1))
            .map(<[f64]>::to_vec)
            .collect()
    }
}

/// The policy's actions with the discrete structure it generated.
#[derive(Debug, Clone, PartialEq)]
pub struct HomOutput {
    /// One action per agent, in agent order.
    pub actions: Vec<Vec<f64>>,
    /// `roles[i]` = the agent filling role `i` (α); the identity without role assignment.
    pub roles: Vec<usize>,
    /// Directed edges `(receiver, sender)` in agent indices: `receiver` sums a message from
    /// `sender`.
    pub edges: Vec<(usize, usize)>,
    /// Edge affinities `Λ(s^{receiver}, s^{sender})` as `[receiver][sender]` in agent indices
    /// (an edge exists iff `> 0`); 0 on the diagonal and when there is no role interaction.
    pub edge_affinity: Vec<Vec<f64>>,
}

/// How the discrete parts are evaluated.
#[derive(Clone, Copy)]
enum Mode<'a> {
    Hard { roles: Option<&'a [usize]> },
    Relaxed(&'a Relaxation),
}

/// Edge weight in the message sum.
#[derive(Clone, Copy)]
enum EdgeW<V> {
    Off,
    On,
    Soft(V),
}

struct Forward<V> {
    actions: Vec<Vec<V>>,
    roles: Vec<usize>,
    edges: Vec<(usize, usize)>,
    /// `Λ` values in agent indices `[receiver][sender]` (0 on the diagonal and without RI).
    lambda: Vec<Vec<f64>>,
}

/// The HOM: a fixed architecture over a flat θ ([`HomPolicy::num_params`] long).
#[derive(Debug, Clone, PartialEq)]
pub struct HomPolicy {
    config: HomConfig,
    roles: Option<RoleNets>,
    edge: Option<Mlp>,
    message: Option<Mlp>,
    update: Option<Mlp>,
    ctde: Option<Mlp>,
    slices: Vec<ParamSlice>,
    dim: usize,
}

impl HomPolicy {
    /// Lay out θ for `config`.
    ///
    /// Errors: `num_agents`, `state_dim`, `action_dim`, `rounds` or `max_role_heads` of 0, or a
    /// `Custom` size with 0 layers or width (each named).
    pub fn new(config: HomConfig) -> Result<HomPolicy> {
        for (name, v) in [
            ("num_agents", config.num_agents),
            ("state_dim", config.state_dim),
            ("action_dim", config.action_dim),
            ("rounds", config.rounds),
            ("max_role_heads", config.max_role_heads),
        ] {
            if v == 0 {
                return Err(Error::invalid(name, "must be at least 1"));
            }
        }
        if let HomSize::Custom {
            hidden_layers,
            width,
        } = config.size
            && (hidden_layers == 0 || width == 0)
        {
            return Err(Error::invalid(
                "size",
                format!("Custom needs ≥ 1 hidden layer of ≥ 1 unit, got {hidden_layers} × {width}"),
            ));
        }
        let hidden = config.size.hidden();
        let (ds, da) = (config.state_dim, config.action_dim);
        let mut slices = Vec::new();
        let mut at = 0;
        let mut add = |name: String, len: usize, at: &mut usize| {
            slices.push(ParamSlice {
                name,
                range: *at..*at + len,
            });
            *at += len;
        };
        let mut policy = HomPolicy {
            config,
            roles: None,
            edge: None,
            message: None,
            update: None,
            ctde: None,
            slices: Vec::new(),
            dim: 0,
        };
        if config.ablation == Ablation::Ctde {
            let m = Mlp::new(at, ds, &hidden, da, true);
            add("theta_ctde".into(), m.range().len(), &mut at);
            policy.ctde = Some(m);
        } else {
            if config.ablation != Ablation::NoRoleAssignment {
                let width = hidden[hidden.len() - 1];
                let trunk = Mlp::new(at, ds, &hidden[..hidden.len() - 1], width, true);
                add("theta_r.trunk".into(), trunk.range().len(), &mut at);
                let r = config.num_agents.min(config.max_role_heads);
                let heads = (0..r)
                    .map(|i| {
                        let o = at;
                        add(format!("theta_r[{i}]"), width, &mut at);
                        o
                    })
                    .collect();
                policy.roles = Some(RoleNets {
                    trunk,
                    heads,
                    width,
                });
            }
            let interact = config.ablation != Ablation::NoRoleInteraction;
            if interact {
                let e = Mlp::new(at, 2 * ds, &hidden, 1, false);
                add("theta_g_v".into(), e.range().len(), &mut at);
                let m = Mlp::new(at, 2 * (da + 1), &hidden, da, true);
                add("theta_g_eta".into(), m.range().len(), &mut at);
                policy.edge = Some(e);
                policy.message = Some(m);
            }
            let u_in = ds + da + if interact { da } else { 0 } + 1;
            let u = Mlp::new(at, u_in, &hidden, da, true);
            add("theta_g_e".into(), u.range().len(), &mut at);
            policy.update = Some(u);
        }
        policy.slices = slices;
        policy.dim = at;
        Ok(policy)
    }

    /// The configuration.
    pub fn config(&self) -> &HomConfig {
        &self.config
    }

    /// `D = |θ|`.
    pub fn num_params(&self) -> usize {
        self.dim
    }

    /// The named slices of θ, in order; they tile `0..D`.
    pub fn slices(&self) -> &[ParamSlice] {
        &self.slices
    }

    /// The slice called `name`, if any.
    pub fn slice(&self, name: &str) -> Option<Range<usize>> {
        self.slices
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.range.clone())
    }

    fn check(&self, theta: &[f64], states: &[Vec<f64>]) -> Result<()> {
        if theta.len() != self.dim {
            return Err(Error::dim("theta", self.dim, theta.len()));
        }
        agora_core::check_finite_slice("theta", theta)?;
        let n = self.config.num_agents;
        if states.len() != n {
            return Err(Error::dim("states", n, states.len()));
        }
        for (i, s) in states.iter().enumerate() {
            if s.len() != self.config.state_dim {
                return Err(Error::dim(
                    format!("states[{i}]"),
                    self.config.state_dim,
                    s.len(),
                ));
            }
            agora_core::check_finite_slice(&format!("states[{i}]"), s)?;
        }
        Ok(())
    }

    /// Role code `t_i = i / (n − 1)` (0 for one agent).
    fn role_code(&self, i: usize) -> f64 {
        let n = self.config.num_agents;
        if n > 1 {
            i as f64 / (n - 1) as f64
        } else {
            0.0
        }
    }

    /// `A[i][ℓ] = head_i · trunk(s^ℓ)`.
    fn affinity<O: Ops>(
        &self,
        o: &mut O,
        th: &[O::V],
        rn: &RoleNets,
        s: &[Vec<O::V>],
    ) -> Vec<Vec<O::V>> {
        let n = self.config.num_agents;
        let feats: Vec<Vec<O::V>> = s.iter().map(|x| rn.trunk.forward(o, th, x)).collect();
        let r = rn.heads.len();
        (0..n)
            .map(|i| {
                let head = |k: usize| &th[rn.heads[k]..rn.heads[k] + rn.width];
                let pos = if n > 1 {
                    i as f64 * (r - 1) as f64 / (n - 1) as f64
                } else {
                    0.0
                };
                let lo = (pos.floor() as usize).min(r - 1);
                let frac = pos - lo as f64;
                let h: Vec<O::V> = if frac == 0.0 || lo + 1 >= r {
                    head(lo).to_vec()
                } else {
                    let (a, b) = (head(lo).to_vec(), head(lo + 1).to_vec());
                    a.iter()
                        .zip(&b)
                        .map(|(&x, &y)| {
                            let x = o.scale(x, 1.0 - frac);
                            let y = o.scale(y, frac);
                            o.add(x, y)
                        })
                        .collect()
                };
                feats
                    .iter()
                    .map(|f| o.dot(&h, f).unwrap_or_else(|| o.cst(0.0)))
                    .collect()
            })
            .collect()
    }

    fn forward<O: Ops>(
        &self,
        o: &mut O,
        th: &[O::V],
        states: &[Vec<f64>],
        mode: Mode<'_>,
    ) -> Result<Forward<O::V>> {
        let n = self.config.num_agents;
        let s: Vec<Vec<O::V>> = states
            .iter()
            .map(|x| x.iter().map(|&v| o.cst(v)).collect())
            .collect();
        let identity: Vec<usize> = (0..n).collect();
        if let Some(ctde) = &self.ctde {
            let actions = s.iter().map(|x| ctde.forward(o, th, x)).collect();
            return Ok(Forward {
                actions,
                roles: identity,
                edges: vec![],
                lambda: vec![vec![0.0; n]; n],
            });
        }
        // 1. Role assignment (Alg. 1), hard or Sinkhorn-relaxed.
        let mut soft: Option<Vec<Vec<O::V>>> = None;
        let (roles, role_states) = match &self.roles {
            None => (identity, s.clone()),
            Some(rn) => {
                let a = self.affinity(o, th, rn, &s);
                let values: Vec<Vec<f64>> = a
                    .iter()
                    .map(|r| r.iter().map(|&v| o.val(v)).collect())
                    .collect();
                let roles = match mode {
                    Mode::Hard { roles: Some(r) } => r.to_vec(),
                    _ => hungarian_max(&values)?.perm,
                };
                match mode {
                    Mode::Hard { .. } => {
                        let rs = roles.iter().map(|&l| s[l].clone()).collect();
                        (roles, rs)
                    }
                    Mode::Relaxed(rx) => {
                        let p = soft_permutation(o, &a, rx);
                        let rs = p
                            .iter()
                            .map(|pi| {
                                (0..self.config.state_dim)
                                    .map(|k| {
                                        let col: Vec<O::V> = s.iter().map(|x| x[k]).collect();
                                        o.dot(pi, &col).unwrap_or_else(|| o.cst(0.0))
                                    })
                                    .collect()
                            })
                            .collect();
                        soft = Some(p);
                        (roles, rs)
                    }
                }
            }
        };
        // 2. Role interaction (Alg. 2): w[i][ℓ] for "role i receives from role ℓ".
        let ds = self.config.state_dim;
        let mut w = vec![vec![EdgeW::Off; n]; n];
        let mut edges = vec![];
        let mut lambda = vec![vec![0.0; n]; n];
        if let Some(e) = &self.edge {
            let recv: Vec<Vec<O::V>> = role_states.iter().map(|x| e.partial(o, th, 0, x)).collect();
            let send: Vec<Vec<O::V>> = role_states
                .iter()
                .map(|x| e.partial(o, th, ds, x))
                .collect();
            for i in 0..n {
                for l in (0..n).filter(|&l| l != i) {
                    let pre = recv[i]
                        .iter()
                        .zip(&send[l])
                        .map(|(&x, &y)| o.add(x, y))
                        .collect();
                    let lam = e.finish(o, th, pre)[0];
                    lambda[roles[i]][roles[l]] = o.val(lam);
                    if o.val(lam) > 0.0 {
                        edges.push((roles[i], roles[l]));
                    }
                    w[i][l] = match mode {
                        Mode::Hard { .. } if o.val(lam) > 0.0 => EdgeW::On,
                        Mode::Hard { .. } => EdgeW::Off,
                        Mode::Relaxed(rx) => {
                            let z = o.scale(lam, 1.0 / rx.edge_temperature);
                            EdgeW::Soft(o.sigmoid(z))
                        }
                    };
                }
            }
        }
        // 3. τ rounds of message passing (Eq. 3), h_0 = 0.
        let da = self.config.action_dim;
        let Some(u) = &self.update else {
            return Err(Error::State("HOM without an update network".into()));
        };
        let codes: Vec<O::V> = (0..n).map(|i| o.cst(self.role_code(i))).collect();
        let mut h: Vec<Vec<O::V>> = (0..n)
            .map(|_| (0..da).map(|_| o.cst(0.0)).collect())
            .collect();
        for _ in 0..self.config.rounds {
            let msgs: Vec<Option<Vec<O::V>>> = match &self.message {
                None => vec![None; n],
                Some(m) => {
                    let with_code = |i: usize, h: &[O::V]| {
                        let mut x = h.to_vec();
                        x.push(codes[i]);
                        x
                    };
                    let recv: Vec<Vec<O::V>> = (0..n)
                        .map(|i| m.partial(o, th, 0, &with_code(i, &h[i])))
                        .collect();
                    let send: Vec<Vec<O::V>> = (0..n)
                        .map(|l| m.partial(o, th, da + 1, &with_code(l, &h[l])))
                        .collect();
                    (0..n)
                        .map(|i| {
                            let mut acc: Option<Vec<O::V>> = None;
                            for l in 0..n {
                                let weight = match w[i][l] {
                                    EdgeW::Off => continue,
                                    EdgeW::On => None,
                                    EdgeW::Soft(v) => Some(v),
                                };
                                let pre = recv[i]
                                    .iter()
                                    .zip(&send[l])
                                    .map(|(&x, &y)| o.add(x, y))
                                    .collect();
                                let mut msg = m.finish(o, th, pre);
                                if let Some(wv) = weight {
                                    msg = msg.into_iter().map(|x| o.mul(wv, x)).collect();
                                }
                                acc = Some(match acc {
                                    None => msg,
                                    Some(a) => {
                                        a.iter().zip(&msg).map(|(&x, &y)| o.add(x, y)).collect()
                                    }
                                });
                            }
                            Some(acc.unwrap_or_else(|| (0..da).map(|_| o.cst(0.0)).collect()))
                        })
                        .collect()
                }
            };
            h = (0..n)
                .map(|i| {
                    let mut x = role_states[i].clone();
                    x.extend_from_slice(&h[i]);
                    if let Some(m) = &msgs[i] {
                        x.extend_from_slice(m);
                    }
                    x.push(codes[i]);
                    u.forward(o, th, &x)
                })
                .collect();
        }
        // 4. Un-permute (Alg. 3): hard a^{α(i)} = h_i, relaxed a^ℓ = Σ_i P[i][ℓ] h_i.
        let actions = match soft {
            None => {
                let mut a = vec![vec![]; n];
                for (i, hi) in h.into_iter().enumerate() {
                    a[roles[i]] = hi;
                }
                a
            }
            Some(p) => (0..n)
                .map(|l| {
                    (0..da)
                        .map(|k| {
                            let pl: Vec<O::V> = p.iter().map(|row| row[l]).collect();
                            let hk: Vec<O::V> = h.iter().map(|hi| hi[k]).collect();
                            o.dot(&pl, &hk).unwrap_or_else(|| o.cst(0.0))
                        })
                        .collect()
                })
                .collect(),
        };
        Ok(Forward {
            actions,
            roles,
            edges,
            lambda,
        })
    }

    /// The actions for `states` (one local state per agent, agent order).
    ///
    /// Errors: θ of the wrong length or non-finite, the wrong number of states or a state of
    /// the wrong length or non-finite (each named).
    pub fn act(&self, theta: &[f64], states: &[Vec<f64>]) -> Result<Vec<Vec<f64>>> {
        Ok(self.act_detailed(theta, states)?.actions)
    }

    /// The actions with the role assignment and edges that produced them.
    ///
    /// Errors as [`HomPolicy::act`].
    pub fn act_detailed(&self, theta: &[f64], states: &[Vec<f64>]) -> Result<HomOutput> {
        self.check(theta, states)?;
        let f = self.forward(&mut Plain, theta, states, Mode::Hard { roles: None })?;
        Ok(HomOutput {
            actions: f.actions,
            roles: f.roles,
            edges: f.edges,
            edge_affinity: f.lambda,
        })
    }

    /// The actions with the role assignment forced to `roles` (`roles[i]` = agent in role `i`)
    /// instead of the Hungarian one; a reference for tests and for inspecting roles.
    ///
    /// Errors as [`HomPolicy::act`], and `roles` that is not a permutation of `0..n`. Ignored
    /// (identity) without role assignment.
    pub fn act_with_roles(
        &self,
        theta: &[f64],
        states: &[Vec<f64>],
        roles: &[usize],
    ) -> Result<Vec<Vec<f64>>> {
        self.check(theta, states)?;
        let n = self.config.num_agents;
        if roles.len() != n {
            return Err(Error::dim("roles", n, roles.len()));
        }
        let mut seen = vec![false; n];
        for (i, &r) in roles.iter().enumerate() {
            if r >= n || std::mem::replace(&mut seen[r], true) {
                return Err(Error::invalid(
                    format!("roles[{i}]"),
                    format!("must form a permutation of 0..{n}, got {roles:?}"),
                ));
            }
        }
        let f = self.forward(&mut Plain, theta, states, Mode::Hard { roles: Some(roles) })?;
        Ok(f.actions)
    }

    /// The role-affinity matrix `A[role][agent]` that Alg. 1 maximises.
    ///
    /// Errors as [`HomPolicy::act`], and [`Error::State`] for an ablation without role
    /// assignment.
    pub fn affinity_matrix(&self, theta: &[f64], states: &[Vec<f64>]) -> Result<Vec<Vec<f64>>> {
        self.check(theta, states)?;
        let Some(rn) = &self.roles else {
            return Err(Error::State(format!(
                "the {:?} policy has no role assignment",
                self.config.ablation
            )));
        };
        let s: Vec<Vec<f64>> = states.to_vec();
        Ok(self.affinity(&mut Plain, theta, rn, &s))
    }

    /// The relaxed policy's actions (Sinkhorn soft permutation, sigmoid edges).
    ///
    /// Errors as [`HomPolicy::act`], and an invalid [`Relaxation`] (named field).
    pub fn act_relaxed(
        &self,
        theta: &[f64],
        states: &[Vec<f64>],
        relaxation: &Relaxation,
    ) -> Result<Vec<Vec<f64>>> {
        self.check(theta, states)?;
        relaxation.check()?;
        Ok(self
            .forward(&mut Plain, theta, states, Mode::Relaxed(relaxation))?
            .actions)
    }

    /// Record the policy at (θ, states) and seed the flattened outputs (`k = agent·d_a + j`)
    /// with `weights`.
    fn record(
        &self,
        theta: &[f64],
        states: &[Vec<f64>],
        weights: &[f64],
        relaxation: Option<&Relaxation>,
    ) -> Result<(Tape, Vec<f64>)> {
        self.check(theta, states)?;
        let k = self.config.num_agents * self.config.action_dim;
        if weights.len() != k {
            return Err(Error::dim("weights", k, weights.len()));
        }
        agora_core::check_finite_slice("weights", weights)?;
        let mode = match relaxation {
            Some(r) => {
                r.check()?;
                Mode::Relaxed(r)
            }
            None => Mode::Hard { roles: None },
        };
        let mut tape = Tape::new();
        let th = tape.params(theta);
        let f = self.forward(&mut tape, &th, states, mode)?;
        let seeds: Vec<_> = f
            .actions
            .iter()
            .flatten()
            .copied()
            .zip(weights.iter().copied())
            .collect();
        let adj = tape.adjoint(&seeds);
        Ok((tape, adj))
    }

    /// `∇_θ Σ_k w_k a_k(θ; states)`: the hard policy (`relaxation = None`; the assignment and
    /// edges are piecewise constant in θ, so role and edge parameters get 0) or the relaxed
    /// one. Exact (reverse mode).
    ///
    /// Errors as [`HomPolicy::act`], `weights` not of length `n·d_a` or non-finite, an invalid
    /// relaxation.
    pub fn action_gradient(
        &self,
        theta: &[f64],
        states: &[Vec<f64>],
        weights: &[f64],
        relaxation: Option<&Relaxation>,
    ) -> Result<Vec<f64>> {
        let (tape, adj) = self.record(theta, states, weights, relaxation)?;
        Ok(tape.param_gradient(&adj))
    }

    /// `∇²_θ(Σ_k w_k a_k)·v`, exact (forward-over-reverse).
    ///
    /// Errors as [`HomPolicy::action_gradient`], and `direction` not of length `D`.
    pub fn action_hvp(
        &self,
        theta: &[f64],
        states: &[Vec<f64>],
        weights: &[f64],
        relaxation: Option<&Relaxation>,
        direction: &[f64],
    ) -> Result<Vec<f64>> {
        if direction.len() != self.dim {
            return Err(Error::dim("direction", self.dim, direction.len()));
        }
        agora_core::check_finite_slice("direction", direction)?;
        let (tape, adj) = self.record(theta, states, weights, relaxation)?;
        Ok(tape.hvp_block(&adj, &[direction]).remove(0))
    }

    /// The dense Hessian `∇²_θ(Σ_k w_k a_k)` at one joint state, from `D` exact HVPs along the
    /// basis vectors (`⌈D/8⌉` sweeps), symmetrised.
    ///
    /// Errors as [`HomPolicy::action_gradient`].
    pub fn action_hessian(
        &self,
        theta: &[f64],
        states: &[Vec<f64>],
        weights: &[f64],
        relaxation: Option<&Relaxation>,
    ) -> Result<PolicyHessian> {
        let (tape, adj) = self.record(theta, states, weights, relaxation)?;
        Ok(dense_hessian(&tape, &adj, self.dim))
    }

    /// The surrogate policy Hessian `H_π` (§4.5, App. H): the relaxed policy's Hessian at every
    /// visited joint state (`visited[t][agent]` = local state), combined over outputs and
    /// averaged over states as [`HessianReduction`] says.
    ///
    /// Errors: no visited state, a malformed state (naming `visited[t]…`), θ as in
    /// [`HomPolicy::act`], an invalid relaxation.
    pub fn surrogate_hessian(
        &self,
        theta: &[f64],
        visited: &[Vec<Vec<f64>>],
        options: &HessianOptions,
    ) -> Result<PolicyHessian> {
        if visited.is_empty() {
            return Err(Error::invalid("visited", "needs at least one state"));
        }
        options.relaxation.check()?;
        let d = self.dim;
        let k = self.config.num_agents * self.config.action_dim;
        let mut total = vec![0.0; d * d];
        for (t, states) in visited.iter().enumerate() {
            self.check(theta, states)
                .map_err(|e| Error::invalid(format!("visited[{t}]"), e.to_string()))?;
            match options.reduction {
                HessianReduction::AbsSum => {
                    for out in 0..k {
                        let mut w = vec![0.0; k];
                        w[out] = 1.0;
                        let (tape, adj) =
                            self.record(theta, states, &w, Some(&options.relaxation))?;
                        let h = dense_hessian(&tape, &adj, d);
                        total
                            .iter_mut()
                            .zip(&h.data)
                            .for_each(|(a, b)| *a += b.abs());
                    }
                }
                HessianReduction::AbsProjection | HessianReduction::Projection => {
                    let mut r = rng::stream(options.seed, &[t as u64]);
                    let w: Vec<f64> = (0..k)
                        .map(|_| if r.random::<bool>() { 1.0 } else { -1.0 })
                        .collect();
                    let (tape, adj) = self.record(theta, states, &w, Some(&options.relaxation))?;
                    let h = dense_hessian(&tape, &adj, d);
                    let abs = options.reduction == HessianReduction::AbsProjection;
                    total.iter_mut().zip(&h.data).for_each(|(a, b)| {
                        *a += if abs { b.abs() } else { *b };
                    });
                }
            }
        }
        let scale = 1.0 / visited.len() as f64;
        total.iter_mut().for_each(|x| *x *= scale);
        Ok(PolicyHessian {
            dim: d,
            data: total,
        })
    }
}

/// All `D` Hessian columns by HVPs along basis vectors, [`LANES`] per sweep, symmetrised.
fn dense_hessian(tape: &Tape, adj: &[f64], d: usize) -> PolicyHessian {
    let mut data = vec![0.0; d * d];
    let mut basis = vec![vec![0.0; d]; LANES];
    for start in (0..d).step_by(LANES) {
        let cols: Vec<usize> = (start..(start + LANES).min(d)).collect();
        for (l, &c) in cols.iter().enumerate() {
            basis[l].iter_mut().for_each(|x| *x = 0.0);
            basis[l][c] = 1.0;
        }
        let dirs: Vec<&[f64]> = basis[..cols.len()].iter().map(|v| v.as_slice()).collect();
        let out = tape.hvp_block(adj, &dirs);
        for (l, &c) in cols.iter().enumerate() {
            for (a, &v) in out[l].iter().enumerate() {
                data[a * d + c] = v;
            }
        }
    }
    for a in 0..d {
        for b in (a + 1)..d {
            let m = 0.5 * (data[a * d + b] + data[b * d + a]);
            data[a * d + b] = m;
            data[b * d + a] = m;
        }
    }
    PolicyHessian { dim: d, data }
}

/// Log-domain Sinkhorn–Knopp on `A / T` with `T` annealed from 1 down to `τ_s`, a fixed number
/// of sweeps per stage, from zero potentials: `P[i][j] = exp((A_ij − f_i − g_j) / τ_s)`.
fn soft_permutation<O: Ops>(o: &mut O, a: &[Vec<O::V>], rx: &Relaxation) -> Vec<Vec<O::V>> {
    let n = a.len();
    let mut f: Vec<Option<O::V>> = vec![None; n];
    let mut g: Vec<Option<O::V>> = vec![None; n];
    let shifted = |o: &mut O, x: O::V, p: Option<O::V>, t: f64| {
        let d = match p {
            Some(p) => o.sub(x, p),
            None => x,
        };
        o.scale(d, 1.0 / t)
    };
    for &t in &rx.schedule() {
        for _ in 0..rx.sinkhorn_sweeps {
            for i in 0..n {
                let xs: Vec<O::V> = (0..n).map(|j| shifted(o, a[i][j], g[j], t)).collect();
                let l = o.log_sum_exp(&xs);
                f[i] = Some(o.scale(l, t));
            }
            for j in 0..n {
                let xs: Vec<O::V> = (0..n).map(|i| shifted(o, a[i][j], f[i], t)).collect();
                let l = o.log_sum_exp(&xs);
                g[j] = Some(o.scale(l, t));
            }
        }
    }
    let tau = rx.sinkhorn_temperature;
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    let x = shifted(o, a[i][j], f[i], 1.0);
                    let x = shifted(o, x, g[j], tau);
                    o.exp(x)
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_math::assign::{SinkhornOptions, sinkhorn};

    #[test]
    fn soft_permutation_matches_the_reference_sinkhorn() {
        let mut r = rng::stream(3, &[]);
        for n in [2, 4, 6] {
            let a: Vec<Vec<f64>> = (0..n)
                .map(|_| (0..n).map(|_| r.random_range(-2.0..2.0)).collect())
                .collect();
            // Unrolled Sinkhorn converges slowly at small τ when rows compete (exp(O(1/τ))
            // sweeps), hence the larger budget and looser bound at τ = 0.05.
            for (tau, sweeps, tol) in [(1.0, 50, 1e-9), (0.2, 30, 1e-5), (0.05, 400, 1e-4)] {
                let rx = Relaxation {
                    sinkhorn_temperature: tau,
                    edge_temperature: 1.0,
                    sinkhorn_sweeps: sweeps,
                };
                let p = soft_permutation(&mut Plain, &a, &rx);
                let want = sinkhorn(
                    &a,
                    &SinkhornOptions {
                        temperature: tau,
                        ..SinkhornOptions::default()
                    },
                )
                .unwrap();
                let err = p
                    .iter()
                    .flatten()
                    .zip(want.matrix.iter().flatten())
                    .map(|(x, y)| (x - y).abs())
                    .fold(0.0, f64::max);
                assert!(err < tol, "n={n} τ={tau}: {err}");
            }
        }
    }
}
