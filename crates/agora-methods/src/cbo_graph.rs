//! Collaborative fair BO on a graph (Sim et al. 2021, C.1, the traffic hotspot
//! experiment): each party stands on a node and may only be sent to a node connected to its
//! current one; the mediator picks one node per party by the fair batch UCB, maximized
//! exactly over the product of the parties' candidate sets
//! ([`agora_acq::graph::GraphBatch`], branch-and-bound by default).
//!
//! Protocol (the appendix, with the authors' code where the appendix is silent; note §2.3
//! and §7.10):
//! - `T0` random rounds: each party evaluates `T0` distinct nodes drawn uniformly, then
//!   starts from the best of them (the first, if all are zero);
//! - afterwards a party's candidates are its **unvisited** out-neighbours (at most
//!   `first_limit = 8`, a random subset if more); if none are left, the unvisited nodes two
//!   steps away (at most `later_limit = 4`), then three steps, "and so forth" (the appendix:
//!   breadth-first layers; the authors' code stops at three steps and then uses a backup
//!   list). The random subsets are seeded by the node and the layer, not the run, as the
//!   authors seed theirs by the cell id. If no unvisited node is reachable, the nearest
//!   unvisited nodes by coordinates; if every node is visited, the plain neighbours;
//! - "visited" is per party, plus (with `no_demand = Some(0)`, the traffic default) every
//!   node any party found to be zero: the appendix's "or have been evaluated to have 0
//!   demand by others". Other objectives set `no_demand = None`: a value ≤ 0 means nothing
//!   there.
//!   The authors' code shares only negative outputs, which never occur (note §7.10);
//! - the batch is scored with input `i` fixed to party `i` (per-party sets cannot be
//!   permuted; the authors use their NoPermute acquisition for every traffic run), after
//!   each round a party moves to the node it evaluated;
//! - [`GraphScoring::SoloUcb`] with one party is the solo GP-UCB baseline:
//!   `μ + sqrt(β_t) σ`, `β_t = c1 · d · log(c2 t)` over the same candidate rule.

use crate::Strategy;
use crate::cbo::FixedGp;
use crate::open::{self, AskTell, OpenQuery, checked_values};
use agora_acq::fair::{alpha_t, vary_c1_factor};
use agora_acq::graph::GraphBatch;
use agora_core::{Answer, Error, Point, Query, QueryKind, Result};
use agora_gp::ExactGp;
use agora_math::rng::{derive_seed, stream};
use agora_math::welfare::Welfare;
use faer::Mat;
use rand::RngExt;
use std::time::Instant;

/// Nodes with coordinates (the GP inputs) and directed out-neighbour lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    /// Coordinates of each node (all the same length).
    pub coords: Vec<Vec<f64>>,
    /// Out-neighbours of each node (node indices).
    pub neighbors: Vec<Vec<usize>>,
}

impl Graph {
    /// Check sizes and indices.
    pub fn validate(&self) -> Result<()> {
        let n = self.coords.len();
        if n == 0 {
            return Err(Error::invalid("graph", "has no nodes"));
        }
        if self.neighbors.len() != n {
            return Err(Error::dim("graph.neighbors", n, self.neighbors.len()));
        }
        let d = self.coords[0].len();
        for (i, c) in self.coords.iter().enumerate() {
            if c.len() != d {
                return Err(Error::dim(format!("graph.coords[{i}]"), d, c.len()));
            }
            agora_core::check_finite_slice(&format!("graph.coords[{i}]"), c)?;
        }
        for (i, ns) in self.neighbors.iter().enumerate() {
            if let Some(bad) = ns.iter().find(|&&j| j >= n) {
                return Err(Error::invalid(
                    format!("graph.neighbors[{i}]"),
                    format!("node {bad} is out of range (0..{n})"),
                ));
            }
        }
        Ok(())
    }
}

/// How a round's batch is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphScoring {
    /// The fair batch UCB with fixed assignment (the proposed method on graphs).
    FairBatch,
    /// Solo GP-UCB (one party).
    SoloUcb,
}

/// How the fair batch UCB is maximized (both are exact and return the same batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphSearch {
    /// Branch-and-bound.
    BranchAndBound,
    /// Every batch, in parallel.
    Exhaustive,
}

/// Settings of [`GraphCbo`].
#[derive(Debug, Clone, PartialEq)]
pub struct GraphCboConfig {
    /// Parties `n`.
    pub parties: usize,
    /// Gini `ρ ∈ (0, 1]`.
    pub rho: f64,
    /// `c1`.
    pub c1: f64,
    /// `c2`.
    pub c2: f64,
    /// Apply the "vary c1" factor once.
    pub vary_c1: bool,
    /// Random rounds `T0`.
    pub n_init: usize,
    /// The fixed GP (lengthscales in coordinate units).
    pub gp: FixedGp,
    /// Scoring.
    pub scoring: GraphScoring,
    /// Maximizer.
    pub search: GraphSearch,
    /// A node whose value is at most this has no demand and counts as visited by every
    /// party once any party found it so (the traffic task: `Some(0.0)`, a count of zero);
    /// `None` shares nothing, as any objective whose values carry no "no demand" meaning
    /// needs.
    pub no_demand: Option<f64>,
    /// Most one-step candidates.
    pub first_limit: usize,
    /// Most candidates from a farther layer.
    pub later_limit: usize,
}

impl GraphCboConfig {
    /// The traffic protocol (note §2.4): n = 8, T0 = 6, c1 = 0.1, c2 = 1, the authors'
    /// `tlog44.cfg` GP (ℓ = (0.6276, 0.6490) in cell units, output scale 0.7969, mean
    /// 1.4646, noise variance 0.0117).
    pub fn traffic(rho: f64) -> GraphCboConfig {
        GraphCboConfig {
            parties: 8,
            rho,
            c1: 0.1,
            c2: 1.0,
            vary_c1: false,
            n_init: 6,
            gp: FixedGp {
                lengthscales: vec![0.6276, 0.6490],
                outputscale: 0.7969,
                mean: 1.4646,
                noise_var: 0.0117,
                outputscale_from_init: false,
            },
            scoring: GraphScoring::FairBatch,
            search: GraphSearch::BranchAndBound,
            no_demand: Some(0.0),
            first_limit: 8,
            later_limit: 4,
        }
    }
}

/// What the last model-based round's search did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GraphSearchStats {
    /// Size of the candidate product.
    pub batches: f64,
    /// Complete batches scored.
    pub leaves: u64,
    /// Nodes of the search tree visited.
    pub nodes: u64,
    /// Wall seconds of the search (posterior over the pool included).
    pub seconds: f64,
}

/// Collaborative fair BO on a graph.
#[derive(Debug, Clone)]
pub struct GraphCbo {
    graph: Graph,
    cfg: GraphCboConfig,
    seed: u64,
    welfare: Welfare,
    c1: f64,
    nodes: Vec<usize>,
    y: Vec<f64>,
    lambda: Vec<f64>,
    rounds: usize,
    gp: Option<ExactGp>,
    visited: Vec<Vec<bool>>,
    zero: Vec<bool>,
    position: Vec<usize>,
    open: OpenQuery<Vec<usize>>,
    last: Option<GraphSearchStats>,
    stream_offset: usize,
}

impl GraphCbo {
    /// Errors name `parties`, `rho`, `n_init` (more than the nodes), the GP settings and
    /// the graph.
    pub fn new(graph: Graph, cfg: GraphCboConfig, seed: u64) -> Result<GraphCbo> {
        graph.validate()?;
        if cfg.parties == 0 {
            return Err(Error::invalid(
                "parties",
                "needs at least one party (n >= 1)",
            ));
        }
        if cfg.scoring == GraphScoring::SoloUcb && cfg.parties != 1 {
            return Err(Error::invalid(
                "parties",
                "solo GP-UCB is one party: run one instance per party",
            ));
        }
        let d = graph.coords[0].len();
        let welfare = crate::cbo::check_settings(cfg.rho, &cfg.gp, cfg.c1, cfg.c2, d)?;
        if cfg.n_init == 0 || cfg.n_init > graph.coords.len() {
            return Err(Error::invalid(
                "n_init",
                format!(
                    "needs 1 <= T0 <= {} (the number of nodes), got {}",
                    graph.coords.len(),
                    cfg.n_init
                ),
            ));
        }
        if cfg.first_limit == 0 || cfg.later_limit == 0 {
            return Err(Error::invalid(
                "first_limit",
                "candidate limits must be >= 1",
            ));
        }
        let c1 = if cfg.vary_c1 {
            cfg.c1 * vary_c1_factor(&welfare.weights(cfg.parties))
        } else {
            cfg.c1
        };
        let n_nodes = graph.coords.len();
        Ok(GraphCbo {
            visited: vec![vec![false; n_nodes]; cfg.parties],
            zero: vec![false; n_nodes],
            position: vec![0; cfg.parties],
            lambda: vec![0.0; cfg.parties],
            graph,
            welfare,
            c1,
            cfg,
            seed,
            nodes: Vec::new(),
            y: Vec::new(),
            rounds: 0,
            gp: None,
            open: OpenQuery::default(),
            last: None,
            stream_offset: 0,
        })
    }

    /// Cumulative observed utility of each party.
    pub fn lambda(&self) -> &[f64] {
        &self.lambda
    }

    /// Random rounds `T0`.
    pub fn n_init(&self) -> usize {
        self.cfg.n_init
    }

    /// Each party's current node.
    pub fn positions(&self) -> &[usize] {
        &self.position
    }

    /// The last model-based round's search statistics.
    pub fn last_search(&self) -> Option<GraphSearchStats> {
        self.last
    }

    fn alpha(&self) -> f64 {
        alpha_t(
            self.c1,
            self.cfg.c2,
            &self.welfare.weights(self.cfg.parties),
            self.graph.coords[0].len(),
            self.rounds + 1,
        )
    }

    fn blocked(&self, party: usize, node: usize) -> bool {
        self.visited[party][node] || self.zero[node]
    }

    /// Party `party`'s candidate nodes this round (the rule of the module docs).
    pub fn candidates(&self, party: usize) -> Result<Vec<usize>> {
        if party >= self.cfg.parties {
            return Err(Error::invalid(
                "party",
                format!("{party} is not a party (0..{})", self.cfg.parties),
            ));
        }
        let n_nodes = self.graph.coords.len();
        let p = self.position[party];
        let mut seen = vec![false; n_nodes];
        seen[p] = true;
        let mut frontier = vec![p];
        let mut layer = 0u64;
        loop {
            layer += 1;
            let mut next = Vec::new();
            for &a in &frontier {
                for &b in &self.graph.neighbors[a] {
                    if !seen[b] {
                        seen[b] = true;
                        next.push(b);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            let open: Vec<usize> = next
                .iter()
                .copied()
                .filter(|&c| !self.blocked(party, c))
                .collect();
            if !open.is_empty() {
                let limit = if layer == 1 {
                    self.cfg.first_limit
                } else {
                    self.cfg.later_limit
                };
                return Ok(subset(open, limit, derive_seed(p as u64, &[layer])));
            }
            frontier = next;
        }
        // Nothing unvisited is reachable: the nearest unvisited nodes by coordinates.
        let here = &self.graph.coords[p];
        let mut far: Vec<(f64, usize)> = (0..n_nodes)
            .filter(|&c| !self.blocked(party, c))
            .map(|c| {
                let d2 = self.graph.coords[c]
                    .iter()
                    .zip(here)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f64>();
                (d2, c)
            })
            .collect();
        if !far.is_empty() {
            far.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            return Ok(far
                .into_iter()
                .take(self.cfg.later_limit)
                .map(|(_, c)| c)
                .collect());
        }
        // Everything visited: the plain neighbours (or stay).
        let ns = &self.graph.neighbors[p];
        Ok(if ns.is_empty() { vec![p] } else { ns.clone() })
    }

    /// Draw party 0's random nodes from party `i`'s stream (for a solo baseline that shares
    /// party `i`'s random start with a collaborative run of the same seed).
    pub fn set_stream_party(&mut self, i: usize) {
        self.stream_offset = i;
    }

    fn random_nodes(&self, party: usize) -> Vec<usize> {
        let n_nodes = self.graph.coords.len();
        let mut rng = stream(self.seed, &[(party + self.stream_offset) as u64, 0xC3]);
        let mut idx: Vec<usize> = (0..n_nodes).collect();
        for k in 0..self.cfg.n_init {
            let j = rng.random_range(k..n_nodes);
            idx.swap(k, j);
        }
        idx.truncate(self.cfg.n_init);
        idx
    }

    fn next_nodes(&mut self) -> Result<Vec<usize>> {
        let n = self.cfg.parties;
        if self.rounds < self.cfg.n_init {
            return Ok((0..n).map(|i| self.random_nodes(i)[self.rounds]).collect());
        }
        let gp = self
            .gp
            .as_ref()
            .ok_or_else(|| Error::State("no observations yet".into()))?;
        let t0 = Instant::now();
        let cands: Vec<Vec<usize>> = (0..n).map(|i| self.candidates(i)).collect::<Result<_>>()?;
        let mut pool: Vec<usize> = cands.iter().flatten().copied().collect();
        pool.sort_unstable();
        pool.dedup();
        let local: Vec<Vec<usize>> = cands
            .iter()
            .map(|c| {
                c.iter()
                    .map(|v| pool.binary_search(v).expect("in the pool"))
                    .collect()
            })
            .collect();
        let d = self.graph.coords[0].len();
        let xs = Mat::from_fn(pool.len(), d, |i, j| self.graph.coords[pool[i]][j]);
        let (mu, cov) = gp.predict_cov(xs.as_ref())?;
        let choice = match self.cfg.scoring {
            GraphScoring::SoloUcb => {
                let beta =
                    (self.c1 * d as f64 * (self.cfg.c2 * (self.rounds + 1) as f64).ln()).max(0.0);
                let score = |j: usize| mu[j] + (beta * cov[(j, j)].max(0.0)).sqrt();
                let mut best = local[0][0];
                for &j in &local[0] {
                    if score(j) > score(best) {
                        best = j;
                    }
                }
                self.last = Some(GraphSearchStats {
                    batches: local[0].len() as f64,
                    leaves: local[0].len() as u64,
                    nodes: local[0].len() as u64,
                    seconds: 0.0,
                });
                vec![best]
            }
            GraphScoring::FairBatch => {
                let problem = GraphBatch {
                    mu: &mu,
                    cov: cov.as_ref(),
                    candidates: &local,
                    lambda: &self.lambda,
                    welfare: self.welfare,
                    alpha: self.alpha(),
                    noise_var: self.cfg.gp.noise_var,
                };
                let r = match self.cfg.search {
                    GraphSearch::BranchAndBound => problem.branch_and_bound()?,
                    GraphSearch::Exhaustive => problem.exhaustive()?,
                };
                self.last = Some(GraphSearchStats {
                    batches: r.batches,
                    leaves: r.leaves,
                    nodes: r.nodes,
                    seconds: 0.0,
                });
                r.choice
            }
        };
        if let Some(s) = self.last.as_mut() {
            s.seconds = t0.elapsed().as_secs_f64();
        }
        Ok(choice.into_iter().map(|j| pool[j]).collect())
    }
}

/// At most `limit` of `v`: a seeded random subset (partial Fisher–Yates) when it is longer.
fn subset(mut v: Vec<usize>, limit: usize, seed: u64) -> Vec<usize> {
    if v.len() <= limit {
        return v;
    }
    let mut rng = stream(seed, &[]);
    for k in 0..limit {
        let j = rng.random_range(k..v.len());
        v.swap(k, j);
    }
    v.truncate(limit);
    v
}

impl AskTell for GraphCbo {
    type Pending = Vec<usize>;

    fn open_query(&mut self) -> &mut OpenQuery<Vec<usize>> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, Vec<usize>)> {
        let nodes = self.next_nodes()?;
        let q = Query {
            id: self.rounds as u64,
            kind: QueryKind::Evaluate {
                points: nodes.iter().map(|&c| Point::Index(c)).collect(),
            },
        };
        Ok((q, nodes))
    }

    fn record(&mut self, _: &Query, nodes: &Vec<usize>, answer: &Answer) -> Result<()> {
        let values = checked_values(answer)?;
        let d = self.graph.coords[0].len();
        let new_x = Mat::from_fn(nodes.len(), d, |i, j| self.graph.coords[nodes[i]][j]);
        let gp = match &self.gp {
            Some(gp) => gp.condition(new_x.as_ref(), values)?,
            None => ExactGp::new(
                new_x,
                values,
                self.cfg.gp.kernel(),
                self.cfg.gp.noise_var,
                self.cfg.gp.mean,
            )?,
        };
        self.gp = Some(gp);
        for (i, (&c, &v)) in nodes.iter().zip(values).enumerate() {
            self.lambda[i] += v;
            self.visited[i][c] = true;
            if self.cfg.no_demand.is_some_and(|t| v <= t) {
                self.zero[c] = true;
            }
        }
        self.nodes.extend(nodes.iter().copied());
        self.y.extend(values.iter().copied());
        self.rounds += 1;
        let n = self.cfg.parties;
        if self.rounds == self.cfg.n_init {
            // Start from each party's best random node (the first on ties or all zero).
            // The random rounds are the first `T0·n` observations, round-major.
            for i in 0..n {
                let mut best = i;
                for t in 0..self.cfg.n_init {
                    let k = t * n + i;
                    if self.y[k] > self.y[best] {
                        best = k;
                    }
                }
                self.position[i] = self.nodes[best];
            }
        } else if self.rounds > self.cfg.n_init {
            self.position.copy_from_slice(nodes);
        }
        Ok(())
    }
}

impl Strategy for GraphCbo {
    fn name(&self) -> String {
        match self.cfg.scoring {
            GraphScoring::FairBatch => format!("cbo-graph-rho{}", self.cfg.rho),
            GraphScoring::SoloUcb => "gp-ucb-graph".into(),
        }
    }

    fn ask(&mut self) -> Result<Query> {
        open::ask(self)
    }

    fn tell(&mut self, answer: &Answer) -> Result<()> {
        open::tell(self, answer)
    }

    fn recommend(&self) -> Option<(Point, f64)> {
        let i = (0..self.y.len()).max_by(|a, b| self.y[*a].total_cmp(&self.y[*b]))?;
        Some((Point::Index(self.nodes[i]), self.y[i]))
    }

    fn n_answered(&self) -> usize {
        self.rounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 6×6 king-move grid with a bump at (4, 4).
    fn grid() -> (Graph, Vec<f64>) {
        let m = 6;
        let mut coords = Vec::new();
        let mut values = Vec::new();
        for r in 0..m {
            for c in 0..m {
                coords.push(vec![r as f64, c as f64]);
                let d2 = ((r as f64 - 4.0).powi(2) + (c as f64 - 4.0).powi(2)) / 4.0;
                values.push(3.0 * (-d2).exp());
            }
        }
        let neighbors = (0..m * m)
            .map(|i| {
                let (r, c) = ((i / m) as i64, (i % m) as i64);
                let mut ns = Vec::new();
                for dr in -1..=1i64 {
                    for dc in -1..=1i64 {
                        let (a, b) = (r + dr, c + dc);
                        if (dr, dc) != (0, 0)
                            && (0..m as i64).contains(&a)
                            && (0..m as i64).contains(&b)
                        {
                            ns.push((a * m as i64 + b) as usize);
                        }
                    }
                }
                ns
            })
            .collect();
        (Graph { coords, neighbors }, values)
    }

    fn cfg(parties: usize, rho: f64) -> GraphCboConfig {
        let mut c = GraphCboConfig::traffic(rho);
        c.parties = parties;
        c.n_init = 2;
        c.gp.lengthscales = vec![1.5, 1.5];
        c
    }

    fn run(cfg: GraphCboConfig, seed: u64, rounds: usize) -> (Vec<Vec<usize>>, GraphCbo) {
        let (g, values) = grid();
        let mut s = GraphCbo::new(g, cfg, seed).unwrap();
        let mut out = Vec::new();
        for _ in 0..rounds {
            let q = s.ask().unwrap();
            let QueryKind::Evaluate { points } = &q.kind else {
                panic!("evaluations")
            };
            let nodes: Vec<usize> = points
                .iter()
                .map(|p| match p {
                    Point::Index(i) => *i,
                    Point::Unit(_) => panic!("nodes"),
                })
                .collect();
            let before: Vec<usize> = s.positions().to_vec();
            if s.n_answered() >= s.n_init() {
                // Every party moves along the graph (or to the nearest unvisited node).
                for (i, &c) in nodes.iter().enumerate() {
                    assert!(s.candidates(i).unwrap().contains(&c));
                    assert!(
                        !s.visited[i][c]
                            || s.candidates(i).unwrap().iter().all(|&x| s.visited[i][x])
                    );
                    assert_ne!(c, before[i]);
                }
            }
            let vals: Vec<f64> = nodes.iter().map(|&c| values[c]).collect();
            s.tell(&Answer::values(&q, vals).unwrap()).unwrap();
            out.push(nodes);
        }
        (out, s)
    }

    #[test]
    fn moves_along_the_graph_deterministically_and_searches_agree() {
        let (a, sa) = run(cfg(3, 0.5), 4, 10);
        let (b, _) = run(cfg(3, 0.5), 4, 10);
        assert_eq!(a, b);
        let mut ex = cfg(3, 0.5);
        ex.search = GraphSearch::Exhaustive;
        let (c, _) = run(ex, 4, 10);
        assert_eq!(
            a, c,
            "branch-and-bound and exhaustive pick the same batches"
        );
        let st = sa.last_search().unwrap();
        assert!(st.leaves as f64 <= st.batches);
        let (solo, _) = run(
            GraphCboConfig {
                scoring: GraphScoring::SoloUcb,
                ..cfg(1, 1.0)
            },
            2,
            12,
        );
        assert_eq!(solo.len(), 12);
    }

    /// A value at or below `no_demand` blocks its node for every party; with `None` (an
    /// objective where values ≤ 0 mean nothing special) a negative value blocks no one else.
    #[test]
    fn only_a_configured_no_demand_value_is_shared() {
        let (g, _) = grid();
        for (no_demand, shared) in [(Some(0.0), true), (None, false)] {
            let mut c = cfg(2, 1.0);
            c.no_demand = no_demand;
            let mut s = GraphCbo::new(g.clone(), c, 3).unwrap();
            let q = s.ask().unwrap();
            let QueryKind::Evaluate { points } = &q.kind else {
                panic!("evaluations")
            };
            let Point::Index(node) = points[0] else {
                panic!("nodes")
            };
            s.tell(&Answer::values(&q, vec![-2.0, 1.0]).unwrap())
                .unwrap();
            assert!(s.blocked(0, node) && !s.visited[1][node]);
            assert_eq!(s.blocked(1, node), shared, "{no_demand:?}");
        }
    }

    #[test]
    fn candidates_fall_back_to_farther_layers() {
        let (g, _) = grid();
        let mut s = GraphCbo::new(g, cfg(1, 1.0), 0).unwrap();
        // Stand at the corner (0, 0) with its three neighbours visited.
        s.position[0] = 0;
        for c in [1, 6, 7] {
            s.visited[0][c] = true;
        }
        let c = s.candidates(0).unwrap();
        assert_eq!(c.len(), 4, "two-step layer, at most 4: {c:?}");
        for &x in &c {
            let (r, col) = (x / 6, x % 6);
            assert_eq!(r.max(col), 2, "{x} is two steps from the corner");
        }
        // Shared zeros count as visited.
        let mut s2 = GraphCbo::new(grid().0, cfg(2, 1.0), 0).unwrap();
        s2.position[0] = 0;
        s2.zero[1] = true;
        assert!(!s2.candidates(0).unwrap().contains(&1));
        assert!(s2.candidates(5).unwrap_err().to_string().contains("party"));
    }

    #[test]
    fn bad_settings_are_named() {
        let (g, _) = grid();
        let e = GraphCbo::new(g.clone(), cfg(0, 1.0), 0).unwrap_err();
        assert!(e.to_string().contains("n >= 1"), "{e}");
        let e = GraphCbo::new(g.clone(), cfg(2, 1.5), 0).unwrap_err();
        assert!(e.to_string().contains("rho"), "{e}");
        let mut bad = g.clone();
        bad.neighbors[3].push(99);
        let e = GraphCbo::new(bad, cfg(2, 1.0), 0).unwrap_err();
        assert!(e.to_string().contains("graph.neighbors[3]"), "{e}");
        let e = GraphCbo::new(
            g,
            GraphCboConfig {
                scoring: GraphScoring::SoloUcb,
                ..cfg(2, 1.0)
            },
            0,
        )
        .unwrap_err();
        assert!(e.to_string().contains("solo"), "{e}");
    }
}
