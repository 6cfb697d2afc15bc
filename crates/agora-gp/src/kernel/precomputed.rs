//! A fixed Gram matrix over a finite set, indexed by candidate.

use super::{Kernel, ParamKind, check_params};
use agora_core::{Error, Result};
use faer::{Mat, MatRef};

/// A fixed Gram matrix over a finite set (graph kernels, team kernels): inputs are `n × 1`
/// matrices of candidate indices. No hyperparameters (wrap in [`Scale`](super::Scale) to learn a
/// variance), no input gradient (finite sets are searched exhaustively).
#[derive(Debug, Clone)]
pub struct Precomputed {
    gram: Mat<f64>,
}

impl Precomputed {
    /// Wrap a symmetric Gram matrix; errors on a non-square or non-finite matrix.
    pub fn new(gram: Mat<f64>) -> Result<Precomputed> {
        if gram.nrows() != gram.ncols() {
            return Err(Error::dim("gram columns", gram.nrows(), gram.ncols()));
        }
        for j in 0..gram.ncols() {
            for i in 0..gram.nrows() {
                if !gram[(i, j)].is_finite() {
                    return Err(Error::invalid(format!("gram[{i}][{j}]"), "must be finite"));
                }
            }
        }
        Ok(Precomputed { gram })
    }

    fn idx(&self, v: f64) -> usize {
        // Indices are stored as floats; out-of-range rows clamp (callers validate indices).
        (v.max(0.0).round() as usize).min(self.gram.nrows().saturating_sub(1))
    }
}

impl Kernel for Precomputed {
    fn box_clone(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
    fn n_params(&self) -> usize {
        0
    }
    fn params(&self) -> Vec<f64> {
        Vec::new()
    }
    fn set_params(&mut self, p: &[f64]) -> Result<()> {
        check_params("precomputed params", p, 0)
    }
    fn param_kinds(&self) -> Vec<ParamKind> {
        Vec::new()
    }
    fn param_names(&self) -> Vec<String> {
        Vec::new()
    }
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        Mat::from_fn(a.nrows(), b.nrows(), |i, j| {
            self.gram[(self.idx(a[(i, 0)]), self.idx(b[(j, 0)]))]
        })
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        (0..x.nrows())
            .map(|i| {
                let k = self.idx(x[(i, 0)]);
                self.gram[(k, k)]
            })
            .collect()
    }
    fn grad_contract(&self, _x: MatRef<'_, f64>, _w: MatRef<'_, f64>) -> Vec<f64> {
        Vec::new()
    }
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        Mat::zeros(b.nrows(), x.len())
    }
}
