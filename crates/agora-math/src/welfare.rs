//! Social welfare of a vector of utilities: the generalized Gini social-evaluation function
//! (Weymark 1981; Sim et al. 2021, Appendix B.1) and its two limits.
//!
//! `W(u) = Σ_k w_k φ_k(u)` with `φ_k(u)` the `k`-th **smallest** entry and weights
//! `w_k = ρ^{k−1}`: the largest weight on the worst-off. `ρ = 1` is utilitarian (the sum),
//! `ρ → 0` egalitarian (the minimum).

use agora_core::{Error, Result};

/// A welfare rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Welfare {
    /// Generalized Gini with weights `ρ^{k−1}`, `ρ ∈ (0, 1]`.
    Gini {
        /// Inequality aversion: 1 is utilitarian, small is nearly max-min.
        rho: f64,
    },
    /// The sum of utilities.
    Utilitarian,
    /// The smallest utility.
    Egalitarian,
}

impl Welfare {
    /// The Gini rule; errors unless `0 < ρ ≤ 1`.
    pub fn gini(rho: f64) -> Result<Welfare> {
        if !(rho > 0.0 && rho <= 1.0) {
            return Err(Error::invalid(
                "rho",
                format!("the Gini parameter must lie in (0, 1], got {rho}"),
            ));
        }
        Ok(Welfare::Gini { rho })
    }

    /// Weights `w_1 ≥ … ≥ w_n` applied to the ascending-sorted utilities (unnormalized).
    pub fn weights(&self, n: usize) -> Vec<f64> {
        match self {
            Welfare::Gini { rho } => (0..n).map(|k| rho.powi(k as i32)).collect(),
            Welfare::Utilitarian => vec![1.0; n],
            Welfare::Egalitarian => (0..n).map(|k| if k == 0 { 1.0 } else { 0.0 }).collect(),
        }
    }

    /// Weights normalized to sum to 1 (so `W(c·1) = c`).
    pub fn normalized_weights(&self, n: usize) -> Vec<f64> {
        let w = self.weights(n);
        let s: f64 = w.iter().sum();
        w.into_iter().map(|v| v / s).collect()
    }

    /// `W(u)` with the unnormalized weights.
    pub fn value(&self, u: &[f64]) -> f64 {
        weighted_sorted(u, &self.weights(u.len())).0
    }

    /// `W(u)` with normalized weights.
    pub fn normalized_value(&self, u: &[f64]) -> f64 {
        weighted_sorted(u, &self.normalized_weights(u.len())).0
    }

    /// `W(u)` and a (sub)gradient: `∂W/∂u_i = w_{rank(i)}` (ties broken by index).
    pub fn value_grad(&self, u: &[f64]) -> (f64, Vec<f64>) {
        weighted_sorted(u, &self.weights(u.len()))
    }
}

/// Indices of `u` in ascending order of value (ties by index; NaN last).
pub fn ascending_order(u: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..u.len()).collect();
    idx.sort_by(|&a, &b| u[a].total_cmp(&u[b]).then(a.cmp(&b)));
    idx
}

fn weighted_sorted(u: &[f64], w: &[f64]) -> (f64, Vec<f64>) {
    let order = ascending_order(u);
    let mut g = vec![0.0; u.len()];
    let mut v = 0.0;
    for (k, &i) in order.iter().enumerate() {
        v += w[k] * u[i];
        g[i] = w[k];
    }
    (v, g)
}

/// All `n!` permutations of `0..n` (for brute-force checks and the epigraph form of the
/// welfare, `W(u) = min_π Σ_k w_k u_π(k)` for non-increasing weights).
pub fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..n {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

/// The fairest assignment of values `h` to parties with standing `lambda` (Sim et al.
/// 2021, B.2): the party with the `k`-th lowest `λ` gets the `k`-th highest `h`. Returns
/// `perm` with `perm[party] = index into h`. Ties break by index, deterministically.
pub fn fairest_assignment(lambda: &[f64], h: &[f64]) -> Result<Vec<usize>> {
    if h.len() != lambda.len() {
        return Err(Error::dim("values", lambda.len(), h.len()));
    }
    let by_lambda = ascending_order(lambda);
    let mut by_h = ascending_order(h);
    by_h.reverse();
    let mut perm = vec![0; lambda.len()];
    for (k, &party) in by_lambda.iter().enumerate() {
        perm[party] = by_h[k];
    }
    Ok(perm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use rand::RngExt;

    fn random_u(rng: &mut crate::rng::Rng, n: usize) -> Vec<f64> {
        (0..n).map(|_| rng.random::<f64>() * 10.0 - 3.0).collect()
    }

    #[test]
    fn limits_symmetry_and_translation() {
        let u = [3.0, -1.0, 2.5, 7.0];
        assert_eq!(Welfare::Utilitarian.value(&u), 11.5);
        assert_eq!(Welfare::gini(1.0).unwrap().value(&u), 11.5);
        assert_eq!(Welfare::Egalitarian.value(&u), -1.0);
        // ρ = 0.5: −1 + 0.5·2.5 + 0.25·3 + 0.125·7.
        let g = Welfare::gini(0.5).unwrap();
        assert!((g.value(&u) - (-1.0 + 1.25 + 0.75 + 0.875)).abs() < 1e-15);
        let mut rng = stream(1, &[0]);
        for n in 1..=6 {
            for _ in 0..50 {
                let u = random_u(&mut rng, n);
                let rho = 0.05 + 0.95 * rng.random::<f64>();
                let w = Welfare::gini(rho).unwrap();
                // Symmetry: any permutation of u has the same welfare.
                for p in permutations(n) {
                    let v: Vec<f64> = p.iter().map(|&i| u[i]).collect();
                    assert!((w.value(&v) - w.value(&u)).abs() < 1e-12);
                }
                // Translation: W(u + c·1) = W(u) + c Σw; normalized W ≤ mean(u).
                let c = 2.7;
                let shifted: Vec<f64> = u.iter().map(|x| x + c).collect();
                let sw: f64 = w.weights(n).iter().sum();
                assert!((w.value(&shifted) - w.value(&u) - c * sw).abs() < 1e-12);
                let mean = u.iter().sum::<f64>() / n as f64;
                assert!(w.normalized_value(&u) <= mean + 1e-12);
            }
        }
        // Social BO's normalized GSF weights (note §1.3): n = 3, ρ = 0.5 → (4/7, 2/7, 1/7);
        // ρ = 1 the mean; ρ = 1e−10 the minimum.
        let w = Welfare::gini(0.5).unwrap().normalized_weights(3);
        for (a, b) in w.iter().zip([4.0 / 7.0, 2.0 / 7.0, 1.0 / 7.0]) {
            assert!((a - b).abs() < 1e-15);
        }
        let z = [0.3, -1.2, 2.0];
        assert!((Welfare::gini(1.0).unwrap().normalized_value(&z) - 1.1 / 3.0).abs() < 1e-15);
        assert!((Welfare::gini(1e-10).unwrap().normalized_value(&z) + 1.2).abs() < 1e-9);
        assert!(Welfare::gini(0.0).unwrap_err().to_string().contains("rho"));
        assert!(Welfare::gini(1.5).is_err());
        assert!(Welfare::gini(f64::NAN).is_err());
    }

    #[test]
    fn monotonicity_and_pigou_dalton() {
        let mut rng = stream(2, &[0]);
        for _ in 0..500 {
            let n = 2 + (rng.random::<f64>() * 5.0) as usize;
            let rho = 0.05 + 0.9 * rng.random::<f64>();
            let w = Welfare::gini(rho).unwrap();
            let a = random_u(&mut rng, n);
            // P1: raising one entry raises welfare by at least w_n times the raise.
            let i = (rng.random::<f64>() * n as f64) as usize;
            let mut b = a.clone();
            let delta = 0.1 + rng.random::<f64>();
            b[i] += delta;
            assert!(w.value(&b) - w.value(&a) >= rho.powi(n as i32 - 1) * delta - 1e-12);
            // P2: a transfer from richer j to poorer i that keeps their order raises welfare.
            let (i, j) = (0, 1);
            let mut a2 = a.clone();
            if a2[i] > a2[j] {
                a2.swap(i, j);
            }
            if a2[j] - a2[i] < 1e-6 {
                continue;
            }
            let t = 0.3 * (a2[j] - a2[i]) * rng.random::<f64>() + 1e-9;
            let mut b2 = a2.clone();
            b2[i] += t;
            b2[j] -= t;
            // Lemma 2: the gain is at least (w_l − w_h)(max(a_i, a_j) − max(b_i, b_j)) > 0,
            // with w_l, w_h the weights of the poorer and richer of b_i, b_j in b's order.
            let (_, gb) = w.value_grad(&b2);
            let (wl, wh) = if b2[i] <= b2[j] {
                (gb[i], gb[j])
            } else {
                (gb[j], gb[i])
            };
            let bound = (wl - wh) * (a2[i].max(a2[j]) - b2[i].max(b2[j]));
            assert!(bound > 0.0);
            assert!(
                w.value(&b2) - w.value(&a2) >= bound - 1e-12,
                "{a2:?} {b2:?}"
            );
        }
    }

    #[test]
    fn fairest_assignment_beats_every_permutation_and_weymark_holds() {
        let mut rng = stream(3, &[0]);
        for n in 1..=6 {
            for _ in 0..30 {
                let w = Welfare::gini(0.1 + 0.8 * rng.random::<f64>()).unwrap();
                let lambda = random_u(&mut rng, n);
                let h = random_u(&mut rng, n);
                let perm = fairest_assignment(&lambda, &h).unwrap();
                let best: Vec<f64> = (0..n).map(|p| lambda[p] + h[perm[p]]).collect();
                let wb = w.value(&best);
                for p in permutations(n) {
                    let v: Vec<f64> = (0..n).map(|k| lambda[k] + h[p[k]]).collect();
                    assert!(wb >= w.value(&v) - 1e-12);
                    // Weymark: Σ w_k φ_k(a) ≤ Σ w_k a_{π(k)} for any order π.
                    let ws = w.weights(n);
                    let any: f64 = (0..n).map(|k| ws[k] * v[p[k]]).sum();
                    assert!(w.value(&v) <= any + 1e-12);
                }
            }
        }
    }

    #[test]
    fn gradient_is_the_weight_at_each_rank() {
        let w = Welfare::gini(0.5).unwrap();
        let (v, g) = w.value_grad(&[3.0, 1.0, 2.0]);
        assert_eq!(v, 1.0 + 0.5 * 2.0 + 0.25 * 3.0);
        assert_eq!(g, vec![0.25, 1.0, 0.5]);
    }
}
