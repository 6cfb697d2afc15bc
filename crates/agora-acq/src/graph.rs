//! Exact maximization of the fair batch UCB ([`crate::fair`]) when each party must pick
//! from its own finite candidate set (graphs: the traffic experiment of Sim et al. 2021,
//! where a party can only move to cells connected to its current one).
//!
//! The batch is `X = (c_1, …, c_n)` with `c_i ∈ C_i` and input `i` fixed to party `i` (per-
//! party sets cannot be permuted), scored
//!
//! `a(X) = W(λ + μ(X)) + sqrt(α · ½ log det(I + σ⁻² Σ_X))`
//!
//! from the posterior mean `μ` and joint covariance `Σ` over the pool of all candidates.
//! The product has up to `8^8 ≈ 1.7·10⁷` batches at `n = 8`. Two searches return the same
//! batch:
//! - [`GraphBatch::exhaustive`]: every batch, depth-first (memory `O(n²)`, no chunk
//!   materialization), split over the first party's candidates with rayon;
//! - [`GraphBatch::branch_and_bound`]: the same depth-first order, pruning a partial batch
//!   when an upper bound on every completion falls below the best batch found. The bound
//!   uses that `W` is non-decreasing in each utility (weights ≥ 0), so unassigned parties
//!   get their largest candidate mean, and the chain rule
//!   `½ log det(I + σ⁻²Σ_X) = Σ_k ½ log(1 + σ⁻² Var[c_k | c_1..c_{k−1}])` with conditional
//!   variances at most the unconditional ones (Hadamard's inequality), so an unassigned party
//!   adds at most `½ log(1 + σ⁻² max_{c∈C_i} Σ_cc)`.
//!
//! Both walk each party's candidates in the order of decreasing `μ_c + sqrt(Σ_cc)` (ties by
//! position) and keep the first strictly larger value, so both return the first maximizer
//! in that order; the log-determinant is built by the same row-by-row Cholesky in both, so
//! the value of a batch is bit-identical whichever search scores it. Pruning leaves a slack
//! of `1e-9·(1 + |best|)` so rounding cannot prune a tie.

use agora_core::{Error, Result};
use agora_math::welfare::Welfare;
use faer::MatRef;
use rayon::prelude::*;

/// One search problem: the pool's posterior and the parties' candidate sets.
pub struct GraphBatch<'a> {
    /// Posterior mean over the pool.
    pub mu: &'a [f64],
    /// Joint posterior covariance over the pool.
    pub cov: MatRef<'a, f64>,
    /// Candidate pool indices for each party (non-empty).
    pub candidates: &'a [Vec<usize>],
    /// Cumulative utilities `λ` (one per party).
    pub lambda: &'a [f64],
    /// Welfare rule (weights must be ≥ 0).
    pub welfare: Welfare,
    /// `α_t ≥ 0`.
    pub alpha: f64,
    /// Noise variance `σ² > 0`.
    pub noise_var: f64,
}

/// The maximizer and what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphBatchResult {
    /// Pool index chosen for each party.
    pub choice: Vec<usize>,
    /// Acquisition value of the batch.
    pub value: f64,
    /// Complete batches scored.
    pub leaves: u64,
    /// Partial and complete batches visited.
    pub nodes: u64,
    /// Size of the product of the candidate sets.
    pub batches: f64,
}

/// One parallel branch's best batch, leaves and nodes.
type Part = (Option<(f64, Vec<usize>)>, u64, u64);

/// Depth-first state: Cholesky rows of `I + σ⁻²Σ` for the chosen prefix.
struct Walk<'p, 'a> {
    p: &'p GraphBatch<'a>,
    order: &'p [Vec<usize>],
    /// `l[k*n + j]`.
    l: Vec<f64>,
    /// `Σ_{j<k} ln l_jj` after `k` choices, `half_logdet[k]`.
    half_logdet: Vec<f64>,
    chosen: Vec<usize>,
    mu_bound: Vec<f64>,
    /// `cap_suffix[k] = Σ_{j≥k} ½ ln(1 + σ⁻² max var_j)`.
    cap_suffix: Vec<f64>,
    u: Vec<f64>,
    best: Option<(f64, Vec<usize>)>,
    leaves: u64,
    nodes: u64,
    prune: bool,
}

impl Walk<'_, '_> {
    fn n(&self) -> usize {
        self.p.lambda.len()
    }

    /// Append pool index `c` as party `k`'s choice: fills row `k` of `L`.
    fn push(&mut self, k: usize, c: usize) {
        let n = self.n();
        let s2 = self.p.noise_var;
        let mut sq = 0.0;
        for j in 0..k {
            let a = self.p.cov[(c, self.chosen[j])] / s2;
            let mut v = a;
            for m in 0..j {
                v -= self.l[k * n + m] * self.l[j * n + m];
            }
            let lkj = v / self.l[j * n + j];
            self.l[k * n + j] = lkj;
            sq += lkj * lkj;
        }
        // ≥ 1 in exact arithmetic (I + PSD); guard rounding.
        let d = (1.0 + self.p.cov[(c, c)] / s2 - sq).max(1e-300);
        let lkk = d.sqrt();
        self.l[k * n + k] = lkk;
        self.half_logdet[k + 1] = self.half_logdet[k] + lkk.ln();
        self.chosen[k] = c;
    }

    fn welfare_of(&mut self, k: usize) -> f64 {
        // Parties < k: chosen means; parties ≥ k: their largest candidate mean.
        for i in 0..self.n() {
            let m = if i < k {
                self.p.mu[self.chosen[i]]
            } else {
                self.mu_bound[i]
            };
            self.u[i] = self.p.lambda[i] + m;
        }
        self.p.welfare.value(&self.u)
    }

    fn score(&mut self, k: usize) -> f64 {
        let info = self.half_logdet[k] + self.cap_suffix[k];
        self.welfare_of(k) + (self.p.alpha * info).max(0.0).sqrt()
    }

    fn descend(&mut self, k: usize) {
        self.nodes += 1;
        let n = self.n();
        if k == n {
            self.leaves += 1;
            let v = self.score(n);
            if self.best.as_ref().is_none_or(|(b, _)| v > *b) {
                self.best = Some((v, self.chosen.clone()));
            }
            return;
        }
        if self.prune
            && k > 0
            && let Some((b, _)) = &self.best
        {
            let b = *b;
            if self.score(k) < b - 1e-9 * (1.0 + b.abs()) {
                return;
            }
        }
        for idx in 0..self.order[k].len() {
            let c = self.order[k][idx];
            self.push(k, c);
            self.descend(k + 1);
        }
    }
}

impl<'a> GraphBatch<'a> {
    /// Check sizes, indices and values; an empty candidate set is named.
    pub fn validate(&self) -> Result<()> {
        let n = self.lambda.len();
        let pool = self.mu.len();
        if n == 0 {
            return Err(Error::invalid(
                "parties",
                "needs at least one party (n >= 1)",
            ));
        }
        if self.candidates.len() != n {
            return Err(Error::dim("candidates", n, self.candidates.len()));
        }
        if self.cov.nrows() != pool || self.cov.ncols() != pool {
            return Err(Error::dim("cov", pool, self.cov.nrows()));
        }
        for (i, c) in self.candidates.iter().enumerate() {
            if c.is_empty() {
                return Err(Error::invalid(
                    format!("candidates[{i}]"),
                    format!(
                        "party {i}'s candidate set is empty; every party needs at least one candidate"
                    ),
                ));
            }
            if let Some(bad) = c.iter().find(|&&j| j >= pool) {
                return Err(Error::invalid(
                    format!("candidates[{i}]"),
                    format!("pool index {bad} is out of range (pool has {pool} points)"),
                ));
            }
        }
        agora_core::check_finite_slice("lambda", self.lambda)?;
        agora_core::check_finite_slice("mu", self.mu)?;
        if self.welfare.weights(n).iter().any(|w| *w < 0.0) {
            return Err(Error::invalid("welfare", "weights must be >= 0"));
        }
        crate::fair::check_alpha_noise(self.alpha, self.noise_var)
    }

    /// Each party's candidates in search order: decreasing `μ + sqrt(Σ_cc)`, ties by position.
    fn order(&self) -> Vec<Vec<usize>> {
        self.candidates
            .iter()
            .map(|c| {
                let key = |j: usize| self.mu[j] + self.cov[(j, j)].max(0.0).sqrt();
                let mut pos: Vec<usize> = (0..c.len()).collect();
                pos.sort_by(|&a, &b| key(c[b]).total_cmp(&key(c[a])).then(a.cmp(&b)));
                pos.into_iter().map(|p| c[p]).collect()
            })
            .collect()
    }

    fn walk<'p>(&'p self, order: &'p [Vec<usize>], prune: bool) -> Walk<'p, 'a> {
        let n = self.lambda.len();
        let s2 = self.noise_var;
        let mu_bound: Vec<f64> = order
            .iter()
            .map(|c| {
                c.iter()
                    .map(|&j| self.mu[j])
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect();
        let caps: Vec<f64> = order
            .iter()
            .map(|c| {
                let v = c
                    .iter()
                    .map(|&j| self.cov[(j, j)].max(0.0))
                    .fold(0.0, f64::max);
                0.5 * (1.0 + v / s2).ln()
            })
            .collect();
        let mut cap_suffix = vec![0.0; n + 1];
        for k in (0..n).rev() {
            cap_suffix[k] = cap_suffix[k + 1] + caps[k];
        }
        // At a leaf the bound is the value itself: no caps left.
        Walk {
            p: self,
            order,
            l: vec![0.0; n * n],
            half_logdet: vec![0.0; n + 1],
            chosen: vec![0; n],
            mu_bound,
            cap_suffix,
            u: vec![0.0; n],
            best: None,
            leaves: 0,
            nodes: 0,
            prune,
        }
    }

    fn product(&self) -> f64 {
        self.candidates.iter().map(|c| c.len() as f64).product()
    }

    /// The acquisition value of one batch (pool index per party), by the arithmetic both
    /// searches use.
    pub fn value(&self, choice: &[usize]) -> Result<f64> {
        self.validate()?;
        if choice.len() != self.lambda.len() {
            return Err(Error::dim("choice", self.lambda.len(), choice.len()));
        }
        let order = self.order();
        let mut w = self.walk(&order, false);
        for (k, &c) in choice.iter().enumerate() {
            if c >= self.mu.len() {
                return Err(Error::invalid(
                    format!("choice[{k}]"),
                    format!("pool index {c} is out of range"),
                ));
            }
            w.push(k, c);
        }
        Ok(w.score(choice.len()))
    }

    /// Score every batch (parallel over the first party's candidates).
    pub fn exhaustive(&self) -> Result<GraphBatchResult> {
        self.validate()?;
        let order = self.order();
        let parts: Vec<Part> = (0..order[0].len())
            .into_par_iter()
            .map(|first| {
                let mut w = self.walk(&order, false);
                w.push(0, order[0][first]);
                w.descend(1);
                (w.best, w.leaves, w.nodes + 1)
            })
            .collect();
        // In order of the first party's candidates, keep the first strictly larger value:
        // the same tie rule as one sequential walk.
        let mut best: Option<(f64, Vec<usize>)> = None;
        let (mut leaves, mut nodes) = (0, 1);
        for (b, l, nd) in parts {
            leaves += l;
            nodes += nd;
            if let Some((v, c)) = b
                && best.as_ref().is_none_or(|(bv, _)| v > *bv)
            {
                best = Some((v, c));
            }
        }
        let (value, choice) = best.expect("non-empty candidate sets");
        Ok(GraphBatchResult {
            choice,
            value,
            leaves,
            nodes,
            batches: self.product(),
        })
    }

    /// Branch-and-bound: the same batch as [`GraphBatch::exhaustive`], usually after
    /// scoring a small fraction of the product.
    pub fn branch_and_bound(&self) -> Result<GraphBatchResult> {
        self.validate()?;
        let order = self.order();
        let mut w = self.walk(&order, true);
        w.descend(0);
        let (value, choice) = w.best.clone().expect("non-empty candidate sets");
        Ok(GraphBatchResult {
            choice,
            value,
            leaves: w.leaves,
            nodes: w.nodes,
            batches: self.product(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Acquisition;
    use crate::fair::{FairBatchUcb, batch_information};
    use agora_gp::{ExactGp, Scale, Stationary, StationaryKind};
    use agora_math::rng::stream;
    use faer::Mat;
    use rand::RngExt;

    fn gp(seed: u64) -> ExactGp {
        let mut r = stream(seed, &[1]);
        let x = Mat::from_fn(12, 2, |_, _| r.random::<f64>());
        let y: Vec<f64> = (0..12).map(|i| (i as f64 * 0.7).sin() + 1.0).collect();
        let k = Box::new(Scale::new(
            Box::new(Stationary::ard(StationaryKind::Rbf, 2, 0.25)),
            0.8,
        ));
        ExactGp::new(x, &y, k, 0.0117, 1.0).unwrap()
    }

    /// Random instances: pool from a GP posterior, candidate sets of 1..=5 per party
    /// (overlapping, sometimes sharing a cell), n = 1..=5.
    #[test]
    fn branch_and_bound_returns_the_exhaustive_batch() {
        let mut total_leaves = (0u64, 0u64);
        for seed in 0..60u64 {
            let g = gp(seed);
            let mut r = stream(seed, &[2]);
            let pool = 14;
            let xs = Mat::from_fn(pool, 2, |_, _| r.random::<f64>());
            let (mu, cov) = g.predict_cov(xs.as_ref()).unwrap();
            let n = 1 + (seed as usize % 5);
            let cands: Vec<Vec<usize>> = (0..n)
                .map(|_| {
                    let k = 1 + r.random_range(0..5usize);
                    (0..k).map(|_| r.random_range(0..pool)).collect()
                })
                .collect();
            let lambda: Vec<f64> = (0..n).map(|_| 3.0 * r.random::<f64>()).collect();
            let rho = [1.0, 0.8, 0.5, 0.2, 0.05][seed as usize % 5];
            let p = GraphBatch {
                mu: &mu,
                cov: cov.as_ref(),
                candidates: &cands,
                lambda: &lambda,
                welfare: Welfare::gini(rho).unwrap(),
                alpha: [0.0, 0.3, 3.0, 30.0][seed as usize % 4],
                noise_var: 0.0117,
            };
            let ex = p.exhaustive().unwrap();
            let bb = p.branch_and_bound().unwrap();
            assert_eq!(ex.choice, bb.choice, "seed {seed}");
            assert_eq!(ex.value, bb.value, "seed {seed}");
            assert_eq!(ex.leaves as f64, ex.batches);
            assert!(bb.leaves <= ex.leaves);
            total_leaves.0 += ex.leaves;
            total_leaves.1 += bb.leaves;
            // Brute force with an independent formula: every batch's value is below the
            // maximum, which the winner attains.
            let mut idx = vec![0usize; n];
            let mut brute = f64::NEG_INFINITY;
            loop {
                let choice: Vec<usize> = (0..n).map(|i| cands[i][idx[i]]).collect();
                let sub = Mat::from_fn(n, n, |a, b| cov[(choice[a], choice[b])]);
                let (info, _) = batch_information(&sub, 0.0117).unwrap();
                let u: Vec<f64> = (0..n).map(|i| lambda[i] + mu[choice[i]]).collect();
                let v = p.welfare.value(&u) + (p.alpha * info).sqrt();
                assert!((v - p.value(&choice).unwrap()).abs() < 1e-9);
                brute = brute.max(v);
                let mut k = 0;
                while k < n {
                    idx[k] += 1;
                    if idx[k] < cands[k].len() {
                        break;
                    }
                    idx[k] = 0;
                    k += 1;
                }
                if k == n {
                    break;
                }
            }
            assert!((brute - ex.value).abs() < 1e-9, "seed {seed}");
        }
        assert!(total_leaves.1 < total_leaves.0);
    }

    #[test]
    fn value_matches_the_box_acquisition() {
        // The pool form equals FairBatchUcb (fixed assignment) at the same inputs.
        let g = gp(5);
        let xs = Mat::from_fn(3, 2, |i, j| [[0.1, 0.9], [0.5, 0.4], [0.8, 0.2]][i][j]);
        let (mu, cov) = g.predict_cov(xs.as_ref()).unwrap();
        let cands = vec![vec![0], vec![1], vec![2]];
        let lambda = vec![1.0, 0.3, 2.0];
        let p = GraphBatch {
            mu: &mu,
            cov: cov.as_ref(),
            candidates: &cands,
            lambda: &lambda,
            welfare: Welfare::gini(0.4).unwrap(),
            alpha: 2.0,
            noise_var: 0.0117,
        };
        let acq = FairBatchUcb {
            gp: &g,
            welfare: Welfare::gini(0.4).unwrap(),
            lambda: lambda.clone(),
            alpha: 2.0,
            noise_var: 0.0117,
            permute: false,
            rank_only: false,
        };
        let x = [0.1, 0.9, 0.5, 0.4, 0.8, 0.2];
        let a = acq.value_grad(&x, None).unwrap();
        assert!((a - p.value(&[0, 1, 2]).unwrap()).abs() < 1e-10);
    }

    #[test]
    fn bad_input_is_named() {
        let mu = vec![0.0, 1.0];
        let cov = Mat::<f64>::identity(2, 2);
        let mk = |cands: Vec<Vec<usize>>, lambda: Vec<f64>| {
            let p = GraphBatch {
                mu: &mu,
                cov: cov.as_ref(),
                candidates: &cands,
                lambda: &lambda,
                welfare: Welfare::Utilitarian,
                alpha: 1.0,
                noise_var: 0.01,
            };
            p.branch_and_bound().unwrap_err().to_string()
        };
        let e = mk(vec![vec![0], vec![]], vec![0.0, 0.0]);
        assert!(e.contains("candidates[1]") && e.contains("empty"), "{e}");
        let e = mk(vec![vec![0], vec![5]], vec![0.0, 0.0]);
        assert!(e.contains("out of range"), "{e}");
        let e = mk(vec![], vec![]);
        assert!(e.contains("n >= 1"), "{e}");
        let e = mk(vec![vec![0], vec![1]], vec![0.0, f64::NAN]);
        assert!(e.contains("lambda[1]"), "{e}");
    }
}
