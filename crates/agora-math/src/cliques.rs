//! Maximal cliques of an undirected graph: Bron–Kerbosch with Tomita pivoting over bitsets,
//! and a brute-force enumeration over all vertex subsets as an independent reference.
//!
//! DSBO (Rajpal et al., §4.4 and Alg. 4) builds its additive kernel from the maximal cliques
//! of the dependency graph over parameter dimensions; an isolated dimension is its own
//! (singleton) clique. Every clique is returned sorted ascending and the list is sorted
//! lexicographically, so the output never depends on the search order.

use agora_core::{Error, Result};

const WORD: usize = 64;

/// An undirected simple graph on `0..n` stored as adjacency bitsets (one row of `⌈n/64⌉`
/// words per vertex). Self-loops are never stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BitGraph {
    n: usize,
    words: usize,
    adj: Vec<u64>,
}

/// Bitset helpers over `&[u64]` rows.
fn test(set: &[u64], v: usize) -> bool {
    set[v / WORD] >> (v % WORD) & 1 == 1
}

fn insert(set: &mut [u64], v: usize) {
    set[v / WORD] |= 1 << (v % WORD);
}

fn remove(set: &mut [u64], v: usize) {
    set[v / WORD] &= !(1 << (v % WORD));
}

fn is_empty(set: &[u64]) -> bool {
    set.iter().all(|&w| w == 0)
}

fn count_and(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x & y).count_ones()).sum()
}

fn and(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().zip(b).map(|(x, y)| x & y).collect()
}

/// Members of a bitset in ascending order.
fn members(set: &[u64]) -> impl Iterator<Item = usize> + '_ {
    set.iter().enumerate().flat_map(|(k, &w)| {
        let mut w = w;
        std::iter::from_fn(move || {
            (w != 0).then(|| {
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                k * WORD + b
            })
        })
    })
}

impl BitGraph {
    /// The graph on `n` vertices with no edges.
    pub fn empty(n: usize) -> BitGraph {
        let words = n.div_ceil(WORD);
        BitGraph {
            n,
            words,
            adj: vec![0; n * words],
        }
    }

    /// The graph of a square boolean adjacency matrix. The diagonal is ignored (a vertex is
    /// never its own neighbour).
    ///
    /// Errors: a row whose length is not `n` ([`Error::Dimension`] naming `adjacency[i]`), or
    /// an asymmetric pair (naming `adjacency[i][j]`).
    pub fn from_adjacency(adjacency: &[Vec<bool>]) -> Result<BitGraph> {
        let n = adjacency.len();
        for (i, row) in adjacency.iter().enumerate() {
            if row.len() != n {
                return Err(Error::dim(format!("adjacency[{i}]"), n, row.len()));
            }
        }
        let mut g = BitGraph::empty(n);
        for (i, row) in adjacency.iter().enumerate() {
            for (j, &edge) in row.iter().enumerate().skip(i + 1) {
                if edge != adjacency[j][i] {
                    return Err(Error::invalid(
                        format!("adjacency[{i}][{j}]"),
                        format!(
                            "the graph is undirected: must equal adjacency[{j}][{i}] = {}",
                            adjacency[j][i]
                        ),
                    ));
                }
                if edge {
                    g.link(i, j);
                }
            }
        }
        Ok(g)
    }

    /// The graph on `n` vertices with the given undirected edges (duplicates are harmless).
    ///
    /// Errors: an endpoint `≥ n` or a self-loop, naming `edges[k]`.
    pub fn from_edges(n: usize, edges: &[(usize, usize)]) -> Result<BitGraph> {
        let mut g = BitGraph::empty(n);
        for (k, &(a, b)) in edges.iter().enumerate() {
            if a >= n || b >= n {
                return Err(Error::invalid(
                    format!("edges[{k}]"),
                    format!("endpoints must lie in 0..{n}, got ({a}, {b})"),
                ));
            }
            if a == b {
                return Err(Error::invalid(
                    format!("edges[{k}]"),
                    format!("self-loop ({a}, {a}) is not allowed"),
                ));
            }
            g.link(a, b);
        }
        Ok(g)
    }

    fn link(&mut self, a: usize, b: usize) {
        let w = self.words;
        insert(&mut self.adj[a * w..(a + 1) * w], b);
        insert(&mut self.adj[b * w..(b + 1) * w], a);
    }

    fn row(&self, v: usize) -> &[u64] {
        &self.adj[v * self.words..(v + 1) * self.words]
    }

    /// Number of vertices.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the graph has no vertices.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Whether `a` and `b` are adjacent (false when either is out of range).
    pub fn has_edge(&self, a: usize, b: usize) -> bool {
        a < self.n && b < self.n && test(self.row(a), b)
    }

    /// Number of undirected edges.
    pub fn edge_count(&self) -> usize {
        self.adj
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum::<usize>()
            / 2
    }

    /// Every maximal clique (isolated vertices as singletons), each sorted ascending, the
    /// list sorted lexicographically. The count can grow as `3^(n/3)` (Moon–Moser); see
    /// [`BitGraph::maximal_cliques_at_most`] for a bounded call.
    pub fn maximal_cliques(&self) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        // No limit: the search never stops early.
        let _ = self.bron_kerbosch(usize::MAX, &mut out);
        out.sort();
        out
    }

    /// As [`BitGraph::maximal_cliques`], but stops with an error naming `limit` once more
    /// than `limit` maximal cliques exist.
    pub fn maximal_cliques_at_most(&self, limit: usize) -> Result<Vec<Vec<usize>>> {
        let mut out = Vec::new();
        if !self.bron_kerbosch(limit, &mut out) {
            return Err(Error::invalid(
                "limit",
                format!("the graph has more than {limit} maximal cliques"),
            ));
        }
        out.sort();
        Ok(out)
    }

    /// Bron–Kerbosch with Tomita et al. (2006)'s pivot: from `P ∪ X` pick the vertex `u` with
    /// the most neighbours in `P` and branch only on `P \ N(u)`. Returns false if stopped at
    /// `limit` cliques.
    fn bron_kerbosch(&self, limit: usize, out: &mut Vec<Vec<usize>>) -> bool {
        if self.n == 0 {
            return true;
        }
        let w = self.words;
        let mut p = vec![0u64; w];
        for v in 0..self.n {
            insert(&mut p, v);
        }
        let x = vec![0u64; w];
        let mut r = Vec::new();
        self.expand(&mut r, p, x, limit, out)
    }

    fn expand(
        &self,
        r: &mut Vec<usize>,
        mut p: Vec<u64>,
        mut x: Vec<u64>,
        limit: usize,
        out: &mut Vec<Vec<usize>>,
    ) -> bool {
        if is_empty(&p) {
            if is_empty(&x) {
                if out.len() >= limit {
                    return false;
                }
                let mut c = r.clone();
                c.sort_unstable();
                out.push(c);
            }
            return true;
        }
        // Pivot: the u ∈ P ∪ X maximising |P ∩ N(u)| (first such u in index order).
        let pivot = members(&p)
            .chain(members(&x))
            .max_by_key(|&u| (count_and(&p, self.row(u)), std::cmp::Reverse(u)))
            .unwrap_or(0);
        let candidates: Vec<usize> = members(&p).filter(|&v| !test(self.row(pivot), v)).collect();
        for v in candidates {
            let nv = self.row(v);
            r.push(v);
            let ok = self.expand(r, and(&p, nv), and(&x, nv), limit, out);
            r.pop();
            if !ok {
                return false;
            }
            remove(&mut p, v);
            insert(&mut x, v);
        }
        true
    }
}

/// The maximal cliques of a square boolean adjacency matrix (see
/// [`BitGraph::from_adjacency`] for validation and [`BitGraph::maximal_cliques`] for the
/// output order).
pub fn maximal_cliques(adjacency: &[Vec<bool>]) -> Result<Vec<Vec<usize>>> {
    Ok(BitGraph::from_adjacency(adjacency)?.maximal_cliques())
}

/// Merge overlapping cliques while the union stays within `cap` vertices: repeatedly the
/// pair of cliques that share a vertex and whose union is smallest (first pair in index order
/// on ties) becomes their union, and a clique inside another is dropped. The result covers
/// every vertex the input covers, each clique sorted, in the order of first appearance.
///
/// This is DSBO's optional clique merging: a dependency graph whose Phase 1 missed an edge
/// splits a true clique `{a, b, c}` into `{a, b}` and `{b, c}`; merging them restores it, and
/// it also lowers the number of kernel terms. With `cap` at most the largest input clique,
/// only nested cliques are removed.
pub fn merge_overlapping(cliques: &[Vec<usize>], cap: usize) -> Vec<Vec<usize>> {
    let mut cs: Vec<Vec<usize>> = cliques
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.sort_unstable();
            c.dedup();
            c
        })
        .collect();
    let union = |a: &[usize], b: &[usize]| -> Vec<usize> {
        let mut u: Vec<usize> = a.iter().chain(b).copied().collect();
        u.sort_unstable();
        u.dedup();
        u
    };
    loop {
        // Drop cliques contained in another (the first copy of equal ones stays).
        let mut keep = vec![true; cs.len()];
        for i in 0..cs.len() {
            for j in 0..cs.len() {
                let inside = cs[i].iter().all(|v| cs[j].binary_search(v).is_ok());
                if i != j && keep[j] && inside && (cs[i].len() < cs[j].len() || j < i) {
                    keep[i] = false;
                    break;
                }
            }
        }
        let mut it = keep.iter();
        cs.retain(|_| *it.next().unwrap_or(&true));
        let mut best: Option<(usize, usize, usize)> = None;
        for i in 0..cs.len() {
            for j in i + 1..cs.len() {
                if !cs[i].iter().any(|v| cs[j].binary_search(v).is_ok()) {
                    continue;
                }
                let size = union(&cs[i], &cs[j]).len();
                if size <= cap && best.is_none_or(|(s, _, _)| size < s) {
                    best = Some((size, i, j));
                }
            }
        }
        let Some((_, i, j)) = best else {
            return cs;
        };
        cs[i] = union(&cs[i], &cs[j]);
        cs.remove(j);
    }
}

/// Largest `n` accepted by [`maximal_cliques_brute_force`].
pub const BRUTE_FORCE_MAX_VERTICES: usize = 20;

/// The maximal cliques by checking all `2^n` vertex subsets: a subset is kept when it is a
/// clique and no outside vertex is adjacent to all of it. An independent reference for tests;
/// same output order as [`maximal_cliques`].
///
/// Errors as [`BitGraph::from_adjacency`], and for `n > BRUTE_FORCE_MAX_VERTICES`.
pub fn maximal_cliques_brute_force(adjacency: &[Vec<bool>]) -> Result<Vec<Vec<usize>>> {
    let n = adjacency.len();
    if n > BRUTE_FORCE_MAX_VERTICES {
        return Err(Error::invalid(
            "adjacency",
            format!("brute force allows at most {BRUTE_FORCE_MAX_VERTICES} vertices, got {n}"),
        ));
    }
    // Validate shape and symmetry the same way as the fast path.
    BitGraph::from_adjacency(adjacency)?;
    let adj = |a: usize, b: usize| a != b && adjacency[a][b];
    let mut out = Vec::new();
    for mask in 1u32..(1u32 << n) {
        let set: Vec<usize> = (0..n).filter(|&v| mask >> v & 1 == 1).collect();
        let clique = set
            .iter()
            .enumerate()
            .all(|(k, &a)| set[k + 1..].iter().all(|&b| adj(a, b)));
        let extendable = (0..n)
            .filter(|&v| mask >> v & 1 == 0)
            .any(|v| set.iter().all(|&a| adj(a, v)));
        if clique && !extendable {
            out.push(set);
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use rand::RngExt;

    fn erdos_renyi(rng: &mut crate::rng::Rng, n: usize, p: f64) -> Vec<Vec<bool>> {
        let mut edges = Vec::new();
        for i in 0..n {
            for j in (i + 1)..n {
                if rng.random::<f64>() < p {
                    edges.push((i, j));
                }
            }
        }
        let mut a = vec![vec![false; n]; n];
        for (i, j) in edges {
            (a[i][j], a[j][i]) = (true, true);
        }
        a
    }

    #[test]
    fn bron_kerbosch_matches_brute_force_on_erdos_renyi_graphs() {
        let mut rng = stream(21, &[0]);
        let mut total = 0;
        for n in 0..=12 {
            for &p in &[0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0] {
                for _ in 0..6 {
                    let a = erdos_renyi(&mut rng, n, p);
                    let fast = maximal_cliques(&a).unwrap();
                    let slow = maximal_cliques_brute_force(&a).unwrap();
                    assert_eq!(fast, slow, "n={n} p={p}");
                    // Every vertex is covered (singletons for isolated vertices).
                    let mut covered = vec![false; n];
                    fast.iter().flatten().for_each(|&v| covered[v] = true);
                    assert!(covered.iter().all(|&c| c));
                    total += fast.len();
                }
            }
        }
        assert!(total > 1000, "too few cliques exercised: {total}");
    }

    #[test]
    fn known_graphs() {
        // Empty graph: singletons. Complete graph: one clique.
        let g = BitGraph::empty(3);
        assert_eq!(g.maximal_cliques(), vec![vec![0], vec![1], vec![2]]);
        let k4 = vec![vec![true; 4]; 4];
        assert_eq!(maximal_cliques(&k4).unwrap(), vec![vec![0, 1, 2, 3]]);
        assert_eq!(maximal_cliques(&[]).unwrap(), Vec::<Vec<usize>>::new());
        // Two triangles sharing edge 1–2, a pendant 4–5 and isolated 6.
        let g = BitGraph::from_edges(7, &[(0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (4, 5)]).unwrap();
        assert_eq!(
            g.maximal_cliques(),
            vec![vec![0, 1, 2], vec![1, 2, 3], vec![4, 5], vec![6]]
        );
        assert_eq!(g.edge_count(), 6);
        assert!(g.has_edge(3, 1) && !g.has_edge(0, 3) && !g.has_edge(0, 99));
        // The Moon–Moser graph K(3,3,3) (complete tripartite): 3³ = 27 maximal cliques.
        let edges: Vec<(usize, usize)> = (0..9)
            .flat_map(|a| ((a + 1)..9).map(move |b| (a, b)))
            .filter(|(a, b)| a / 3 != b / 3)
            .collect();
        let g = BitGraph::from_edges(9, &edges).unwrap();
        assert_eq!(g.maximal_cliques().len(), 27);
        assert_eq!(g.maximal_cliques_at_most(27).unwrap().len(), 27);
        let e = g.maximal_cliques_at_most(26).unwrap_err();
        assert!(e.to_string().contains("limit"), "{e}");
    }

    #[test]
    fn wide_graphs_cross_word_boundaries() {
        // A path over 130 vertices: its maximal cliques are exactly its 129 edges.
        let edges: Vec<(usize, usize)> = (0..129).map(|i| (i, i + 1)).collect();
        let g = BitGraph::from_edges(130, &edges).unwrap();
        let expect: Vec<Vec<usize>> = edges.iter().map(|&(a, b)| vec![a, b]).collect();
        assert_eq!(g.maximal_cliques(), expect);
    }

    #[test]
    fn bad_input_is_named() {
        let e = maximal_cliques(&[vec![false, true], vec![false]]).unwrap_err();
        assert_eq!(e, Error::dim("adjacency[1]", 2, 1));
        let e = maximal_cliques(&[vec![false, true], vec![false, false]]).unwrap_err();
        assert!(e.to_string().contains("adjacency[0][1]"), "{e}");
        let e = BitGraph::from_edges(3, &[(0, 1), (1, 3)]).unwrap_err();
        assert!(e.to_string().contains("edges[1]"), "{e}");
        let e = BitGraph::from_edges(3, &[(2, 2)]).unwrap_err();
        assert!(e.to_string().contains("edges[0]"), "{e}");
        assert!(maximal_cliques_brute_force(&vec![vec![false; 21]; 21]).is_err());
        // A true diagonal (self-loops) is ignored.
        let a = vec![vec![true, false], vec![false, true]];
        assert_eq!(maximal_cliques(&a).unwrap(), vec![vec![0], vec![1]]);
    }

    #[test]
    fn merging_overlapping_cliques_respects_the_cap_and_covers_every_vertex() {
        // A chain of pairs 0-1-2-3-4 and a separate pair 5-6.
        let chain = vec![vec![0, 1], vec![1, 2], vec![2, 3], vec![3, 4], vec![5, 6]];
        assert_eq!(
            merge_overlapping(&chain, 3),
            vec![vec![0, 1, 2], vec![2, 3, 4], vec![5, 6]]
        );
        assert_eq!(
            merge_overlapping(&chain, 5),
            vec![vec![0, 1, 2, 3, 4], vec![5, 6]]
        );
        // A cap at the largest clique only drops nested and repeated cliques.
        let nested = vec![vec![2, 0], vec![0, 2, 1], vec![3], vec![1, 0, 2]];
        assert_eq!(merge_overlapping(&nested, 3), vec![vec![0, 1, 2], vec![3]]);
        // Brute-force properties on random clique sets: every vertex covered, no clique
        // above the cap unless given so, none nested in another, no two that could merge.
        let mut rng = crate::rng::stream(9, &[]);
        for _ in 0..200 {
            let n = rand::RngExt::random_range(&mut rng, 1..8);
            let cs: Vec<Vec<usize>> = (0..n)
                .map(|_| {
                    let k = rand::RngExt::random_range(&mut rng, 1..4);
                    (0..k)
                        .map(|_| rand::RngExt::random_range(&mut rng, 0..10))
                        .collect()
                })
                .collect();
            let cap = rand::RngExt::random_range(&mut rng, 1..6);
            let m = merge_overlapping(&cs, cap);
            let covered = |x: &[Vec<usize>]| {
                let mut v: Vec<usize> = x.iter().flatten().copied().collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            assert_eq!(covered(&m), covered(&cs), "{cs:?} cap {cap}");
            let largest_in = cs
                .iter()
                .map(|c| covered(std::slice::from_ref(c)).len())
                .max();
            for (i, a) in m.iter().enumerate() {
                assert!(a.len() <= cap.max(largest_in.unwrap_or(0)), "{m:?}");
                for (j, b) in m.iter().enumerate() {
                    if i == j {
                        continue;
                    }
                    assert!(!a.iter().all(|v| b.contains(v)), "nested {a:?} in {b:?}");
                    let shares = a.iter().any(|v| b.contains(v));
                    assert!(
                        !shares || covered(&[a.clone(), b.clone()]).len() > cap,
                        "{a:?} and {b:?} could merge under cap {cap}"
                    );
                }
            }
        }
    }
}
