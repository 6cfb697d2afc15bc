//! The data of a duel model: winners and losers, and their noise sums.

use crate::anchor::NoiseModel;
use crate::kernel::Kernel;
use agora_core::{Error, Result};
use faer::{Mat, MatRef};

/// Duels `winners[k] ≻ losers[k]` (rows in the unit cube).
#[derive(Debug, Clone)]
pub struct Duels {
    winners: Mat<f64>,
    losers: Mat<f64>,
    stacked: Mat<f64>,
}

impl Duels {
    /// Check shapes and values (errors name `winners[i][j]` / `losers[i][j]`).
    pub fn new(winners: Mat<f64>, losers: Mat<f64>) -> Result<Duels> {
        let d = winners.ncols();
        crate::check_mat("winners", winners.as_ref(), d)?;
        crate::check_mat("losers", losers.as_ref(), d)?;
        if winners.nrows() != losers.nrows() {
            return Err(Error::dim("losers", winners.nrows(), losers.nrows()));
        }
        if winners.nrows() == 0 {
            return Err(Error::invalid("duels", "needs at least one duel"));
        }
        let m = winners.nrows();
        let stacked = Mat::from_fn(2 * m, d, |i, j| {
            if i < m {
                winners[(i, j)]
            } else {
                losers[(i - m, j)]
            }
        });
        Ok(Duels {
            winners,
            losers,
            stacked,
        })
    }

    /// Number of duels.
    pub fn len(&self) -> usize {
        self.winners.nrows()
    }

    /// Always false (a duel set is never empty).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Input dimension.
    pub fn dim(&self) -> usize {
        self.winners.ncols()
    }

    /// Winners.
    pub fn winners(&self) -> MatRef<'_, f64> {
        self.winners.as_ref()
    }

    /// Losers.
    pub fn losers(&self) -> MatRef<'_, f64> {
        self.losers.as_ref()
    }

    /// `s²_k = σ²(w_k) + σ²(l_k)` under `noise`.
    pub fn noise_sums(&self, noise: &NoiseModel) -> Vec<f64> {
        (0..self.len())
            .map(|k| {
                noise.variance(&row(self.winners.as_ref(), k))
                    + noise.variance(&row(self.losers.as_ref(), k))
            })
            .collect()
    }

    /// `C = D K Dᵀ` from the Gram matrix over the stacked points.
    pub(super) fn diff_cov(&self, kernel: &dyn Kernel) -> Mat<f64> {
        let m = self.len();
        let g = kernel.gram(self.stacked.as_ref());
        Mat::from_fn(m, m, |k, j| {
            g[(k, j)] - g[(k, m + j)] - g[(m + k, j)] + g[(m + k, m + j)]
        })
    }

    /// `Σ_kj W_kj ∂C_kj/∂θ` for every kernel hyperparameter (`W` symmetric `m × m`).
    pub(super) fn diff_grad_contract(&self, kernel: &dyn Kernel, w: &Mat<f64>) -> Vec<f64> {
        let m = self.len();
        // Σ W ∘ ∂(D K Dᵀ) = Σ (Dᵀ W D) ∘ ∂K with D = [I, −I].
        let g = Mat::from_fn(2 * m, 2 * m, |i, j| {
            let s = if (i < m) == (j < m) { 1.0 } else { -1.0 };
            s * w[(i % m, j % m)]
        });
        kernel.grad_contract(self.stacked.as_ref(), g.as_ref())
    }

    /// `c(x)_k = k(x, w_k) − k(x, l_k)` for every row of `xs` (`nx × m`).
    pub(super) fn cross(&self, kernel: &dyn Kernel, xs: MatRef<'_, f64>) -> Mat<f64> {
        let kw = kernel.cross(xs, self.winners.as_ref());
        let kl = kernel.cross(xs, self.losers.as_ref());
        kw - kl
    }
}

fn row(x: MatRef<'_, f64>, i: usize) -> Vec<f64> {
    (0..x.ncols()).map(|j| x[(i, j)]).collect()
}
