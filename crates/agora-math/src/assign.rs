//! Square assignment: the Hungarian algorithm (exact, `O(n³)`), a brute-force reference over
//! all `n!` permutations, and Sinkhorn normalisation (its entropic relaxation).
//!
//! DSBO's role assignment (Rajpal et al., Alg. 1) solves `α = argmax_α Σ_i A[i][α(i)]` with
//! the Hungarian algorithm on the affinity matrix `A[role][agent]`; for the Hessian phase it
//! relaxes that permutation to the soft permutation `P ∝ exp(A / τ)` made doubly stochastic
//! by Sinkhorn–Knopp (App. A). As `τ → 0`, `P` tends to the permutation matrix of the
//! max-weight assignment when that assignment is unique.
//!
//! Matrices are row-major `&[Vec<f64>]`; `perm[i]` is the column assigned to row `i`.

use agora_core::{Error, Result};

/// An optimal assignment: row `i` goes to column `perm[i]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    /// `perm[i]` is the column given to row `i`; a permutation of `0..n`.
    pub perm: Vec<usize>,
    /// `Σ_i m[i][perm[i]]` of the input matrix `m` (the minimum cost or the maximum weight).
    pub cost: f64,
}

/// Check that `m` is square with finite entries; returns `n`. Errors name `field[i]` or
/// `field[i][j]`.
fn check_square(field: &str, m: &[Vec<f64>]) -> Result<usize> {
    let n = m.len();
    for (i, row) in m.iter().enumerate() {
        if row.len() != n {
            return Err(Error::dim(format!("{field}[{i}]"), n, row.len()));
        }
        if let Some(j) = row.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(
                format!("{field}[{i}][{j}]"),
                format!("must be a finite number, got {}", row[j]),
            ));
        }
    }
    Ok(n)
}

/// `Σ_i m[i][perm[i]]`.
fn assignment_cost(m: &[Vec<f64>], perm: &[usize]) -> f64 {
    perm.iter().enumerate().map(|(i, &j)| m[i][j]).sum()
}

/// Minimum-cost assignment of the square matrix `cost` by the Hungarian algorithm (Kuhn–Munkres
/// with row/column potentials and shortest augmenting paths), `O(n³)`.
///
/// An empty matrix gives the empty assignment with cost 0. Errors: a row whose length is not
/// `n` ([`Error::Dimension`] naming `cost[i]`), a non-finite entry (naming `cost[i][j]`), or
/// entries whose spread times `n` overflows `f64`.
pub fn hungarian_min(cost: &[Vec<f64>]) -> Result<Assignment> {
    check_square("cost", cost)?;
    let perm = hungarian_core("cost", cost, 1.0)?;
    let total = assignment_cost(cost, &perm);
    Ok(Assignment { perm, cost: total })
}

/// Maximum-weight assignment of the square matrix `weight` (the Hungarian algorithm on
/// `−weight`); `cost` of the result is the maximal `Σ_i weight[i][perm[i]]`.
///
/// Errors as [`hungarian_min`], naming `weight[i]` / `weight[i][j]`.
pub fn hungarian_max(weight: &[Vec<f64>]) -> Result<Assignment> {
    check_square("weight", weight)?;
    let perm = hungarian_core("weight", weight, -1.0)?;
    let total = assignment_cost(weight, &perm);
    Ok(Assignment { perm, cost: total })
}

/// The Hungarian algorithm minimising `Σ_i sign·m[i][perm[i]]` (input already validated).
///
/// Potentials `u` (rows) and `v` (columns) keep `sign·m[i][j] − u[i] − v[j] ≥ 0`; each row is
/// added by a Dijkstra-like search for the cheapest augmenting path. Index 0 is a sentinel
/// (1-based rows and columns inside).
fn hungarian_core(field: &str, m: &[Vec<f64>], sign: f64) -> Result<Vec<usize>> {
    let n = m.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    // Potentials grow up to about n·(max − min); refuse inputs where that overflows.
    let (lo, hi) = m
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    if !((hi - lo) * n as f64).is_finite() {
        return Err(Error::invalid(
            field,
            format!("entries span [{lo}, {hi}]; n times that span must be finite"),
        ));
    }
    let a = |i: usize, j: usize| sign * m[i - 1][j - 1];
    let mut u = vec![0.0; n + 1];
    let mut v = vec![0.0; n + 1];
    // p[j]: row matched to column j (0 = none); way[j]: previous column on the path.
    let mut p = vec![0usize; n + 1];
    let mut way = vec![0usize; n + 1];
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0;
        let mut minv = vec![f64::INFINITY; n + 1];
        let mut used = vec![false; n + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let mut delta = f64::INFINITY;
            let mut j1 = 0;
            for j in 1..=n {
                if !used[j] {
                    let cur = a(i0, j) - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            if j1 == 0 {
                return Err(Error::Numerical(format!(
                    "Hungarian algorithm on `{field}` found no augmenting column"
                )));
            }
            for j in 0..=n {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        // Flip the augmenting path back to the sentinel.
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut perm = vec![0; n];
    for j in 1..=n {
        perm[p[j] - 1] = j - 1;
    }
    Ok(perm)
}

/// Largest `n` accepted by [`assignment_brute_force`] (`10! ≈ 3.6·10⁶` permutations).
pub const BRUTE_FORCE_MAX_N: usize = 10;

/// The optimal assignment by enumerating all `n!` permutations, as an independent reference
/// for tests; `maximize` selects max-weight instead of min-cost. Ties keep the
/// lexicographically first permutation.
///
/// Errors as [`hungarian_min`] (naming `matrix[i]` / `matrix[i][j]`), and for
/// `n > BRUTE_FORCE_MAX_N`.
pub fn assignment_brute_force(matrix: &[Vec<f64>], maximize: bool) -> Result<Assignment> {
    let n = check_square("matrix", matrix)?;
    if n > BRUTE_FORCE_MAX_N {
        return Err(Error::invalid(
            "matrix",
            format!("brute force allows at most {BRUTE_FORCE_MAX_N} rows, got {n}"),
        ));
    }
    let sign = if maximize { -1.0 } else { 1.0 };
    let mut best = (f64::INFINITY, Vec::new());
    let mut perm = Vec::with_capacity(n);
    let mut used = vec![false; n];
    search(matrix, sign, &mut perm, &mut used, &mut best);
    let cost = assignment_cost(matrix, &best.1);
    Ok(Assignment { perm: best.1, cost })
}

/// Depth-first enumeration of permutations in lexicographic order, keeping the first best.
fn search(
    m: &[Vec<f64>],
    sign: f64,
    perm: &mut Vec<usize>,
    used: &mut [bool],
    best: &mut (f64, Vec<usize>),
) {
    let n = m.len();
    if perm.len() == n {
        let c = sign * assignment_cost(m, perm);
        if c < best.0 || best.1.is_empty() {
            *best = (c, perm.clone());
        }
        return;
    }
    for j in 0..n {
        if !used[j] {
            used[j] = true;
            perm.push(j);
            search(m, sign, perm, used, best);
            perm.pop();
            used[j] = false;
        }
    }
}

/// Settings of [`sinkhorn`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SinkhornOptions {
    /// Temperature `τ > 0`: the kernel is `exp(scores / τ)`; small `τ` is close to the hard
    /// max-weight permutation, large `τ` close to uniform.
    pub temperature: f64,
    /// Most row-then-column normalisation sweeps in total (≥ 1).
    pub max_iterations: usize,
    /// Stop once every row sum is within this of 1 after a sweep (columns then sum to 1 up to
    /// rounding); must be `> 0`.
    pub tolerance: f64,
    /// Anneal the temperature (ε-scaling): sweep first at `2^k·τ ≥ spread of the scores`, then
    /// halve it stage by stage down to `τ`, each stage warm-started from the previous
    /// potentials and sweeping to `tolerance` within its share of half the budget. The fixed
    /// point is the same; at small `τ` it is reached in far fewer sweeps (plain Sinkhorn can
    /// need `exp(O(1/τ))` sweeps when rows compete for a column). Turn off for the textbook
    /// iteration, e.g. a fixed small number of sweeps.
    pub epsilon_scaling: bool,
}

impl Default for SinkhornOptions {
    /// `τ = 1`, at most 10,000 sweeps, tolerance `1e-10`, ε-scaling on.
    fn default() -> Self {
        SinkhornOptions {
            temperature: 1.0,
            max_iterations: 10_000,
            tolerance: 1e-10,
            epsilon_scaling: true,
        }
    }
}

/// A doubly stochastic matrix from [`sinkhorn`] with its convergence record.
#[derive(Debug, Clone, PartialEq)]
pub struct SinkhornResult {
    /// The soft permutation `P` (row-major, `n × n`, non-negative, columns sum to 1 and rows
    /// to 1 within `residual`), at the requested temperature.
    pub matrix: Vec<Vec<f64>>,
    /// Sweeps performed in total (each one row and one column normalisation), over all
    /// ε-scaling stages.
    pub iterations: usize,
    /// `max_i |Σ_j P[i][j] − 1|` after the last sweep.
    pub residual: f64,
    /// Whether `residual ≤ tolerance` was reached within `max_iterations`.
    pub converged: bool,
}

/// `ln Σ exp(x)` without overflow.
fn log_sum_exp(x: impl Iterator<Item = f64> + Clone) -> f64 {
    let m = x.clone().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + x.map(|v| (v - m).exp()).sum::<f64>().ln()
}

/// Dual potentials of the scaling `P[i][j] = exp((s[i][j] − f[i] − g[j]) / τ)`.
struct Potentials<'a> {
    s: &'a [Vec<f64>],
    f: Vec<f64>,
    g: Vec<f64>,
}

impl Potentials<'_> {
    /// One row-then-column normalisation at temperature `tau`; returns the row residual.
    fn sweep(&mut self, tau: f64) -> f64 {
        let (s, n) = (self.s, self.s.len());
        for (fi, si) in self.f.iter_mut().zip(s) {
            let g = &self.g;
            *fi = tau * log_sum_exp(si.iter().zip(g).map(|(sij, gj)| (sij - gj) / tau));
        }
        for (j, gj) in self.g.iter_mut().enumerate() {
            let f = &self.f;
            *gj = tau * log_sum_exp(s.iter().zip(f).map(|(si, fi)| (si[j] - fi) / tau));
        }
        (0..n)
            .map(|i| (self.row(i, tau).sum::<f64>() - 1.0).abs())
            .fold(0.0, f64::max)
    }

    fn row(&self, i: usize, tau: f64) -> impl Iterator<Item = f64> + '_ {
        let fi = self.f[i];
        self.s[i]
            .iter()
            .zip(&self.g)
            .map(move |(sij, gj)| ((sij - fi - gj) / tau).exp())
    }
}

/// Sinkhorn–Knopp normalisation of `exp(scores / τ)` in log space: alternately normalise rows
/// and columns (through dual potentials, never forming `exp(scores / τ)`) until rows and
/// columns sum to 1 (Sinkhorn 1964; the soft permutation of DSBO App. A, as in Mena et al.
/// 2018's Gumbel–Sinkhorn without the noise).
///
/// Higher scores get more mass (the max-weight convention of [`hungarian_max`]). Near a
/// permutation (small `τ`) Sinkhorn converges slowly, at a rate set by the small
/// off-permutation mass; not converging within `max_iterations` is reported through
/// `converged` and `residual`, not as an error.
///
/// Errors: a non-square or non-finite `scores` (naming `scores[i]` / `scores[i][j]`), a
/// `temperature` that is not finite and positive or under which the score spread overflows,
/// `max_iterations = 0`, or a `tolerance` that is not finite and positive.
pub fn sinkhorn(scores: &[Vec<f64>], opts: &SinkhornOptions) -> Result<SinkhornResult> {
    let n = check_square("scores", scores)?;
    let tau = opts.temperature;
    if !(tau.is_finite() && tau > 0.0) {
        return Err(Error::invalid(
            "temperature",
            format!("must be finite and > 0, got {tau}"),
        ));
    }
    if opts.max_iterations == 0 {
        return Err(Error::invalid("max_iterations", "must be at least 1"));
    }
    if !(opts.tolerance.is_finite() && opts.tolerance > 0.0) {
        return Err(Error::invalid(
            "tolerance",
            format!("must be finite and > 0, got {}", opts.tolerance),
        ));
    }
    let (lo, hi) = scores
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    let spread = if n == 0 { 0.0 } else { hi - lo };
    if !(spread / tau).is_finite() {
        return Err(Error::invalid(
            "temperature",
            format!("the score spread {spread} / {tau} overflows; use a larger temperature"),
        ));
    }
    // Stage temperatures 2^k·τ > … > 2τ > τ with 2^k·τ ≥ the score spread (k ≤ 63); the
    // intermediate stages share half of the sweep budget.
    let k = if opts.epsilon_scaling && spread > tau {
        (spread / tau).log2().ceil().min(63.0) as i32
    } else {
        0
    };
    let stages: Vec<f64> = (0..=k).rev().map(|e| tau * 2f64.powi(e)).collect();
    let stage_budget = if stages.len() > 1 {
        (opts.max_iterations / 2 / (stages.len() - 1)).max(1)
    } else {
        0
    };
    let mut pot = Potentials {
        s: scores,
        f: vec![0.0; n],
        g: vec![0.0; n],
    };
    let mut iterations = 0;
    for &t in &stages[..stages.len() - 1] {
        for _ in 0..stage_budget {
            if iterations + 1 >= opts.max_iterations {
                break;
            }
            iterations += 1;
            if pot.sweep(t) <= opts.tolerance {
                break;
            }
        }
    }
    let mut residual = if n == 0 { 0.0 } else { f64::INFINITY };
    while iterations < opts.max_iterations && residual > opts.tolerance {
        iterations += 1;
        residual = pot.sweep(tau);
    }
    let matrix = (0..n).map(|i| pot.row(i, tau).collect()).collect();
    Ok(SinkhornResult {
        matrix,
        iterations,
        residual,
        converged: residual <= opts.tolerance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Rng, stream};
    use rand::RngExt;

    fn random_matrix(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<Vec<f64>> {
        (0..n)
            .map(|_| (0..n).map(|_| rng.random_range(lo..hi)).collect())
            .collect()
    }

    fn is_permutation(p: &[usize]) -> bool {
        let mut seen = vec![false; p.len()];
        p.iter()
            .all(|&j| j < p.len() && !std::mem::replace(&mut seen[j], true))
    }

    /// Best and second-best assignment values (for the given sense) over all permutations,
    /// by an enumeration independent of `assignment_brute_force`'s search.
    fn best_two(m: &[Vec<f64>], maximize: bool) -> (f64, f64) {
        let sign = if maximize { -1.0 } else { 1.0 };
        let mut vals: Vec<f64> = crate::welfare::permutations(m.len())
            .iter()
            .map(|p| sign * assignment_cost(m, p))
            .collect();
        vals.sort_by(f64::total_cmp);
        (
            sign * vals[0],
            sign * vals.get(1).copied().unwrap_or(f64::INFINITY),
        )
    }

    #[test]
    fn hungarian_matches_brute_force_on_random_matrices() {
        let mut rng = stream(11, &[0]);
        for n in 1..=7 {
            for trial in 0..40 {
                // Continuous costs (unique optimum almost surely), then small integers (ties).
                let m = if trial % 2 == 0 {
                    random_matrix(&mut rng, n, -5.0, 5.0)
                } else {
                    (0..n)
                        .map(|_| (0..n).map(|_| rng.random_range(0..4) as f64).collect())
                        .collect()
                };
                for maximize in [false, true] {
                    let h = if maximize {
                        hungarian_max(&m).unwrap()
                    } else {
                        hungarian_min(&m).unwrap()
                    };
                    let b = assignment_brute_force(&m, maximize).unwrap();
                    let (best, second) = best_two(&m, maximize);
                    assert!(is_permutation(&h.perm), "n={n} {:?}", h.perm);
                    assert_eq!(h.cost, assignment_cost(&m, &h.perm));
                    assert!((h.cost - b.cost).abs() <= 1e-12, "n={n} trial={trial}");
                    assert!((b.cost - best).abs() <= 1e-12);
                    if (second - best).abs() > 1e-9 {
                        assert_eq!(h.perm, b.perm, "n={n} trial={trial} unique optimum");
                    }
                }
            }
        }
    }

    #[test]
    fn hungarian_known_case_and_errors() {
        // By hand over the 6 permutations: min cost 1 + 2 + 2 = 5 (0→1, 1→0, 2→2), max weight
        // 4 + 5 + 2 = 11 (0→0, 1→2, 2→1).
        let m = vec![
            vec![4.0, 1.0, 3.0],
            vec![2.0, 0.0, 5.0],
            vec![3.0, 2.0, 2.0],
        ];
        let lo = hungarian_min(&m).unwrap();
        assert_eq!((lo.perm.clone(), lo.cost), (vec![1, 0, 2], 5.0));
        let hi = hungarian_max(&m).unwrap();
        assert_eq!((hi.perm.clone(), hi.cost), (vec![0, 2, 1], 11.0));
        assert_eq!(hungarian_min(&[]).unwrap().perm, Vec::<usize>::new());

        let ragged = vec![vec![1.0, 2.0], vec![3.0]];
        let e = hungarian_min(&ragged).unwrap_err();
        assert_eq!(e, Error::dim("cost[1]", 2, 1));
        let e = hungarian_max(&[vec![1.0, f64::NAN], vec![0.0, 0.0]]).unwrap_err();
        assert!(e.to_string().contains("weight[0][1]"), "{e}");
        let e = hungarian_min(&[vec![f64::MAX, -f64::MAX], vec![0.0, 0.0]]).unwrap_err();
        assert!(e.to_string().contains("cost"), "{e}");
        let big = vec![vec![0.0; 11]; 11];
        assert!(assignment_brute_force(&big, true).is_err());
    }

    #[test]
    fn sinkhorn_is_doubly_stochastic() {
        let mut rng = stream(12, &[0]);
        for n in 1..=8 {
            for &tau in &[10.0, 1.0, 0.3, 0.1] {
                let m = random_matrix(&mut rng, n, -2.0, 2.0);
                let opts = SinkhornOptions {
                    temperature: tau,
                    max_iterations: 100_000,
                    tolerance: 1e-9,
                    ..Default::default()
                };
                let s = sinkhorn(&m, &opts).unwrap();
                // Spread/τ = 40 nats is the slow regime of Sinkhorn: there only the brief's 1e-6.
                if tau >= 0.3 {
                    assert!(s.converged, "n={n} τ={tau}: residual {:e}", s.residual);
                }
                assert!(s.iterations >= 1 && s.iterations <= opts.max_iterations);
                assert_eq!(s.converged, s.residual <= opts.tolerance);
                for i in 0..n {
                    let row: f64 = s.matrix[i].iter().sum();
                    let col: f64 = s.matrix.iter().map(|r| r[i]).sum();
                    assert!((row - 1.0).abs() <= 1e-6, "n={n} τ={tau} row {i}: {row}");
                    assert!((col - 1.0).abs() <= 1e-6, "n={n} τ={tau} col {i}: {col}");
                    assert!((row - 1.0).abs() <= s.residual + 1e-15);
                    assert!(s.matrix[i].iter().all(|&p| p >= 0.0));
                }
            }
        }
        // The rank-one kernel exp(r_i + c_j) is already a scaled uniform matrix: P = 1/n.
        let m: Vec<Vec<f64>> = (0..4)
            .map(|i| (0..4).map(|j| i as f64 * 0.7 - j as f64 * 1.3).collect())
            .collect();
        let s = sinkhorn(&m, &SinkhornOptions::default()).unwrap();
        assert!(s.matrix.iter().flatten().all(|p| (p - 0.25).abs() < 1e-12));
    }

    #[test]
    fn sinkhorn_tends_to_the_hungarian_permutation_as_temperature_falls() {
        let mut rng = stream(13, &[0]);
        let (mut tested, mut worst) = (0, 0.0_f64);
        while tested < 30 {
            let n = 2 + tested % 5;
            let m = random_matrix(&mut rng, n, 0.0, 1.0);
            let (best, second) = best_two(&m, true);
            // A unique optimum with a visible margin, so the limit is a permutation matrix.
            if best - second < 0.05 {
                continue;
            }
            tested += 1;
            let h = hungarian_max(&m).unwrap();
            let mut prev = f64::INFINITY;
            for &tau in &[1.0, 0.1, 0.01, 0.002] {
                let opts = SinkhornOptions {
                    temperature: tau,
                    max_iterations: 100_000,
                    tolerance: 1e-12,
                    epsilon_scaling: true,
                };
                let s = sinkhorn(&m, &opts).unwrap();
                let dist = (0..n)
                    .flat_map(|i| (0..n).map(move |j| (i, j)))
                    .map(|(i, j)| {
                        let target = if h.perm[i] == j { 1.0 } else { 0.0 };
                        (s.matrix[i][j] - target).abs()
                    })
                    .fold(0.0, f64::max);
                assert!(dist <= prev + 1e-12, "τ={tau}: {dist} > {prev}");
                prev = dist;
                if tau <= 0.01 {
                    // Rounding the soft permutation recovers the Hungarian one.
                    for (i, row) in s.matrix.iter().enumerate() {
                        assert!(row[h.perm[i]] > 0.5, "n={n} τ={tau} row {i}: {row:?}");
                    }
                }
            }
            worst = worst.max(prev);
            assert!(prev < 1e-4, "n={n}: distance {prev} at τ = 0.002");
        }
        eprintln!("largest distance to the Hungarian permutation at τ = 0.002: {worst:e}");
    }

    #[test]
    fn sinkhorn_rejects_bad_options() {
        let m = vec![vec![0.0, 1.0], vec![1.0, 0.0]];
        let bad = |o: SinkhornOptions| sinkhorn(&m, &o).unwrap_err().to_string();
        let d = SinkhornOptions::default();
        assert!(
            bad(SinkhornOptions {
                temperature: 0.0,
                ..d
            })
            .contains("temperature")
        );
        assert!(
            bad(SinkhornOptions {
                max_iterations: 0,
                ..d
            })
            .contains("max_iterations")
        );
        assert!(
            bad(SinkhornOptions {
                tolerance: f64::NAN,
                ..d
            })
            .contains("tolerance")
        );
        let e = sinkhorn(&[vec![1.0], vec![2.0]], &d).unwrap_err();
        assert_eq!(e, Error::dim("scores[0]", 2, 1));
        let e = sinkhorn(
            &[vec![1e300, 0.0], vec![0.0, 0.0]],
            &SinkhornOptions {
                temperature: 1e-10,
                ..d
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("temperature"), "{e}");
    }
}
