//! DSBO's dependency structure (DSBO paper, §4.4 and Alg. 4 lines 5–6): edges where the
//! summed Hessian `|S_ab|` passes a cutoff (Theorem 1's, a given one, or an edge budget), and
//! the maximal cliques of that graph (Bron–Kerbosch, singletons included), whose sum of
//! kernels is the Phase-2 model. Also given structures (the true cliques) and uniformly
//! random ones (the random-structure ablation).

use agora_core::{Error, Result};
use agora_math::cliques::BitGraph;
use agora_math::rng::stream;
use rand::RngExt;
use rand::seq::SliceRandom;
use std::collections::BTreeSet;

/// How the summed Hessian `S` becomes edges.
#[derive(Debug, Clone, PartialEq)]
pub enum EdgeRule {
    /// Theorem 1: `|S_ab| > c_h` with `c_h = σ_n √(T0·C1) · √(2 log(2D²/δ1))`, the standard
    /// deviation of a noise-only sum times Lemma 3's quantile; equal to the paper's
    /// `T0 σ_n √(2 log(2D²/δ1))` when `C1 = T0` (the generalization is \[inferred\]).
    Theorem1 {
        /// Per-pair failure probability budget `δ1 ∈ (0, 1)`.
        delta1: f64,
        /// Hessian noise standard deviation `σ_n`.
        sigma_n: f64,
    },
    /// `|S_ab| > c_h` for a given cutoff.
    Cutoff(f64),
    /// The given number (at least 1) of pairs with the largest `|S_ab|` (App. A's practice:
    /// keep what the model can afford).
    Budget(usize),
}

/// Phase-1 settings.
#[derive(Debug, Clone, PartialEq)]
pub struct StructureConfig {
    /// Random points `T0` (at least 1).
    pub t0: usize,
    /// Hessian queries per point `C1` (at least 1).
    pub c1: usize,
    /// Thresholding rule.
    pub rule: EdgeRule,
    /// Keep at most this many edges (the largest scores; at least 1); App. A supports about
    /// 1500.
    pub max_edges: usize,
    /// Refuse graphs with more maximal cliques than this.
    pub max_cliques: usize,
}

impl StructureConfig {
    /// `T0` points × `C1` queries with the given rule, at most 1500 edges and 100 000
    /// cliques.
    pub fn new(t0: usize, c1: usize, rule: EdgeRule) -> StructureConfig {
        StructureConfig {
            t0,
            c1,
            rule,
            max_edges: 1500,
            max_cliques: 100_000,
        }
    }

    /// Check every field; errors name it.
    pub fn validate(&self) -> Result<()> {
        if self.t0 == 0 {
            return Err(Error::invalid("t0", "must be at least 1"));
        }
        if self.c1 == 0 {
            return Err(Error::invalid("c1", "must be at least 1"));
        }
        if self.max_cliques == 0 {
            return Err(Error::invalid("max_cliques", "must be at least 1"));
        }
        if self.max_edges == 0 {
            return Err(Error::invalid(
                "max_edges",
                "must be at least 1 (0 would keep no edge: every dimension its own clique)",
            ));
        }
        match self.rule {
            EdgeRule::Theorem1 { delta1, sigma_n } => {
                if !(delta1 > 0.0 && delta1 < 1.0) {
                    return Err(Error::invalid(
                        "rule.delta1",
                        format!("must lie in (0, 1), got {delta1}"),
                    ));
                }
                if !(sigma_n.is_finite() && sigma_n >= 0.0) {
                    return Err(Error::invalid(
                        "rule.sigma_n",
                        format!("must be a finite number >= 0, got {sigma_n}"),
                    ));
                }
            }
            EdgeRule::Cutoff(c) => {
                if !(c.is_finite() && c >= 0.0) {
                    return Err(Error::invalid(
                        "rule.cutoff",
                        format!("must be a finite number >= 0, got {c}"),
                    ));
                }
            }
            EdgeRule::Budget(k) => {
                if k == 0 {
                    return Err(Error::invalid(
                        "rule.budget",
                        "must be at least 1 edge, got 0 (a fixed structure, e.g. all singletons, \
                         goes through Dsbo::with_cliques)",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A dependency structure over `D` dimensions and the additive decomposition it implies.
#[derive(Debug, Clone, PartialEq)]
pub struct Structure {
    /// Number of dimensions.
    pub dim: usize,
    /// `|S_ab|` for every pair (zero diagonal; a Fig. 3-style heatmap), or empty when the
    /// structure was given rather than learned.
    pub scores: Vec<Vec<f64>>,
    /// The cutoff applied: `c_h` for [`EdgeRule::Theorem1`] and [`EdgeRule::Cutoff`], the
    /// smallest kept score for [`EdgeRule::Budget`]; `None` when the structure was given or
    /// a budget kept nothing.
    pub cutoff: Option<f64>,
    /// Edges `(a, b)`, `a < b`, sorted.
    pub edges: Vec<(usize, usize)>,
    /// Maximal cliques of the edge graph, singletons included, each sorted, the list sorted.
    pub cliques: Vec<Vec<usize>>,
    /// Hessian queries made (`T0·C1`; 0 when not learned).
    pub hessian_queries: usize,
}

impl Structure {
    /// The structure of a given edge list (normalized to `a < b`, deduplicated). Errors:
    /// an endpoint `≥ dim` or a self-loop (naming `edges[k]`), or more than `max_cliques`
    /// maximal cliques.
    pub fn from_edges(dim: usize, edges: &[(usize, usize)], max_cliques: usize) -> Result<Self> {
        if dim == 0 {
            return Err(Error::invalid("dim", "must be at least 1"));
        }
        let graph = BitGraph::from_edges(dim, edges)?;
        let mut edges: Vec<(usize, usize)> =
            edges.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
        edges.sort_unstable();
        edges.dedup();
        let cliques = graph.maximal_cliques_at_most(max_cliques.max(1))?;
        Ok(Structure {
            dim,
            scores: Vec::new(),
            cutoff: None,
            edges,
            cliques,
            hessian_queries: 0,
        })
    }

    /// The structure whose groups are the given cliques (e.g. the true ones), plus a
    /// singleton for every dimension in none of them. Edges join every pair inside a
    /// group. Errors: an empty group or an index `≥ dim` (naming `cliques[i]`).
    pub fn from_cliques(dim: usize, cliques: &[Vec<usize>]) -> Result<Self> {
        if dim == 0 {
            return Err(Error::invalid("dim", "must be at least 1"));
        }
        let mut covered = vec![false; dim];
        let mut groups = Vec::with_capacity(cliques.len());
        let mut edges = Vec::new();
        for (i, c) in cliques.iter().enumerate() {
            let mut c = c.clone();
            c.sort_unstable();
            c.dedup();
            if c.is_empty() || c.iter().any(|&j| j >= dim) {
                return Err(Error::invalid(
                    format!("cliques[{i}]"),
                    format!("must be a non-empty set of indices in 0..{dim}"),
                ));
            }
            for (t, &a) in c.iter().enumerate() {
                covered[a] = true;
                edges.extend(c[t + 1..].iter().map(|&b| (a, b)));
            }
            groups.push(c);
        }
        groups.extend((0..dim).filter(|&j| !covered[j]).map(|j| vec![j]));
        groups.sort();
        groups.dedup();
        edges.sort_unstable();
        edges.dedup();
        Ok(Structure {
            dim,
            scores: Vec::new(),
            cutoff: None,
            edges,
            cliques: groups,
            hessian_queries: 0,
        })
    }

    /// A uniformly random structure with exactly `n_edges` edges (a TreeBO-like ablation),
    /// deterministic in `seed`. Errors: more edges than `D(D−1)/2` (naming `n_edges`).
    pub fn random(dim: usize, n_edges: usize, seed: u64, max_cliques: usize) -> Result<Self> {
        if dim == 0 {
            return Err(Error::invalid("dim", "must be at least 1"));
        }
        let pairs = dim * (dim - 1) / 2;
        if n_edges > pairs {
            return Err(Error::invalid(
                "n_edges",
                format!("{dim} dimensions have only {pairs} pairs, got {n_edges}"),
            ));
        }
        let mut rng = stream(seed, &[]);
        let edges: Vec<(usize, usize)> = if 2 * n_edges <= pairs {
            // Sparse: rejection sampling.
            let mut set = BTreeSet::new();
            while set.len() < n_edges {
                let a = rng.random_range(0..dim);
                let b = rng.random_range(0..dim);
                if a != b {
                    set.insert((a.min(b), a.max(b)));
                }
            }
            set.into_iter().collect()
        } else {
            let mut all: Vec<(usize, usize)> = (0..dim)
                .flat_map(|a| (a + 1..dim).map(move |b| (a, b)))
                .collect();
            all.shuffle(&mut rng);
            all.truncate(n_edges);
            all
        };
        Structure::from_edges(dim, &edges, max_cliques)
    }

    /// The edge graph as a symmetric boolean matrix.
    pub fn adjacency(&self) -> Vec<Vec<bool>> {
        let mut a = vec![vec![false; self.dim]; self.dim];
        for &(i, j) in &self.edges {
            a[i][j] = true;
            a[j][i] = true;
        }
        a
    }

    /// The structure of a summed Hessian `S = Σ_{t,ℓ} h_{t,ℓ}` (`D × D`, from `cfg.t0 ·
    /// cfg.c1` queries): scores `|(S_ab + S_ba)/2|` (an asymmetric oracle is symmetrized),
    /// edges by `cfg.rule` (at most `cfg.max_edges`, largest score first; ties by index),
    /// maximal cliques with singletons.
    ///
    /// Errors: a bad configuration, a matrix that is not `D × D` (naming `sum[i]`), or more
    /// than `cfg.max_cliques` maximal cliques.
    pub fn from_hessian_sum(sum: &[Vec<f64>], cfg: &StructureConfig) -> Result<Structure> {
        cfg.validate()?;
        let d = sum.len();
        if let Some(i) = sum.iter().position(|r| r.len() != d) {
            return Err(Error::dim(format!("sum[{i}]"), d, sum[i].len()));
        }
        let mut scores = vec![vec![0.0; d]; d];
        let mut ranked: Vec<(f64, usize, usize)> = Vec::new();
        for a in 0..d {
            for b in a + 1..d {
                let s = (0.5 * (sum[a][b] + sum[b][a])).abs();
                scores[a][b] = s;
                scores[b][a] = s;
                ranked.push((s, a, b));
            }
        }
        ranked.sort_by(|x, y| y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
        let queries = cfg.t0 * cfg.c1;
        let (threshold, keep) = match cfg.rule {
            EdgeRule::Theorem1 { delta1, sigma_n } => {
                let z = (2.0 * (2.0 * (d * d) as f64 / delta1).ln()).sqrt();
                (sigma_n * (queries as f64).sqrt() * z, cfg.max_edges)
            }
            EdgeRule::Cutoff(c) => (c, cfg.max_edges),
            EdgeRule::Budget(k) => (0.0, k.min(cfg.max_edges)),
        };
        let kept: Vec<(f64, usize, usize)> = ranked
            .into_iter()
            .filter(|r| r.0 > threshold)
            .take(keep)
            .collect();
        let cutoff = match cfg.rule {
            EdgeRule::Budget(_) => kept.last().map(|r| r.0),
            _ => Some(threshold),
        };
        let edges: Vec<(usize, usize)> = kept.iter().map(|r| (r.1, r.2)).collect();
        let mut structure = Structure::from_edges(d, &edges, cfg.max_cliques)?;
        structure.scores = scores;
        structure.cutoff = cutoff;
        structure.hessian_queries = queries;
        Ok(structure)
    }
}
