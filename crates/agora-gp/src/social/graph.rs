//! The social graph `A` of Social BO: row-stochastic, every entry at least `δ_A`; the
//! public utilities are `v = A u` (Social BO paper, Eq. 1).

use agora_core::{Error, Result};

/// A validated row-stochastic social graph.
#[derive(Debug, Clone, PartialEq)]
pub struct SocialGraph {
    n: usize,
    a: Vec<f64>,
}

impl SocialGraph {
    /// Rows of `A`: each sums to 1 (within 1e-9) with every entry in `[δ_A, 1 − δ_A]`
    /// (`δ_A ≥ 0`; use 0 for a graph that need not be strictly positive, e.g. a dictator).
    /// Errors name the entry or row.
    pub fn new(rows: &[Vec<f64>], delta_a: f64) -> Result<SocialGraph> {
        let n = rows.len();
        if n == 0 {
            return Err(Error::invalid("graph", "needs at least one agent"));
        }
        if !(0.0..0.5).contains(&delta_a) && n > 1 {
            return Err(Error::invalid(
                "delta_a",
                format!("must lie in [0, 0.5), got {delta_a}"),
            ));
        }
        let mut a = Vec::with_capacity(n * n);
        for (i, r) in rows.iter().enumerate() {
            if r.len() != n {
                return Err(Error::dim(format!("graph[{i}]"), n, r.len()));
            }
            for (j, v) in r.iter().enumerate() {
                let hi = if n == 1 { 1.0 } else { 1.0 - delta_a };
                if !v.is_finite() || *v < delta_a - 1e-12 || *v > hi + 1e-12 {
                    return Err(Error::invalid(
                        format!("graph[{i}][{j}]"),
                        format!("must lie in [δ_A, 1 − δ_A] = [{delta_a}, {hi}], got {v}"),
                    ));
                }
            }
            let s: f64 = r.iter().sum();
            if (s - 1.0).abs() > 1e-9 {
                return Err(Error::invalid(
                    format!("graph[{i}]"),
                    format!("each row must sum to 1 (row-stochastic), got {s}"),
                ));
            }
            a.extend(r);
        }
        Ok(SocialGraph { n, a })
    }

    /// Number of agents.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Entry `A_ij`.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.a[i * self.n + j]
    }

    /// Row-major entries.
    pub fn entries(&self) -> &[f64] {
        &self.a
    }

    /// Rows.
    pub fn rows(&self) -> Vec<Vec<f64>> {
        self.a.chunks(self.n).map(|r| r.to_vec()).collect()
    }

    /// `v = A u`.
    pub fn apply(&self, u: &[f64]) -> Vec<f64> {
        self.a
            .chunks(self.n)
            .map(|r| r.iter().zip(u).map(|(a, b)| a * b).sum())
            .collect()
    }

    /// `‖A − B‖_F`.
    pub fn frobenius_distance(&self, other: &[f64]) -> f64 {
        self.a
            .iter()
            .zip(other)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt()
    }
}
