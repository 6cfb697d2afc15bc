//! agora-acq: acquisition functions and their maximizers.
//!
//! An acquisition takes any [`Model`] with Gaussian marginals; a maximizer takes any
//! [`Acquisition`] (STYLE.md: small pieces that compose). All acquisitions are maximized.

pub mod analytic;
pub mod block;
pub mod fair;
pub mod graph;
pub mod maximize;
pub mod preference;
pub mod risk;
pub mod screened;
pub mod social;
pub mod thompson;
pub mod ucb_beta;

use agora_core::Result;
use faer::MatRef;

pub use analytic::{Analytic, AnalyticKind};
pub use block::{AcqOptimizer, BlockAscent, argmax_finite, maximize_ucb, ucb_values};
pub use maximize::{BoxMaximizer, maximize_box, maximize_finite};
pub use risk::{RiskAverse, RiskKind};
pub use screened::{LocalSearch, maximize_screened};
pub use social::{OptimisticImprovement, WelfareUcb};
pub use thompson::RffSample;
pub use ucb_beta::Beta;

/// A model with Gaussian posterior marginals over a continuous input.
pub trait Model: Sync {
    /// Input dimension.
    fn dim(&self) -> usize;
    /// Mean and latent variance at each row of `xs`.
    fn predict(&self, xs: MatRef<'_, f64>) -> Result<(Vec<f64>, Vec<f64>)>;
    /// `(μ, σ², ∇μ, ∇σ²)` at one point.
    fn predict_with_grad(&self, x: &[f64]) -> Result<(f64, f64, Vec<f64>, Vec<f64>)>;
}

impl Model for agora_gp::PreferenceGp {
    fn dim(&self) -> usize {
        agora_gp::PreferenceGp::dim(self)
    }
    fn predict(&self, xs: MatRef<'_, f64>) -> Result<(Vec<f64>, Vec<f64>)> {
        agora_gp::PreferenceGp::predict(self, xs)
    }
    fn predict_with_grad(&self, x: &[f64]) -> Result<(f64, f64, Vec<f64>, Vec<f64>)> {
        agora_gp::PreferenceGp::predict_with_grad(self, x)
    }
}

impl Model for agora_gp::DuelGp {
    fn dim(&self) -> usize {
        agora_gp::DuelGp::dim(self)
    }
    fn predict(&self, xs: MatRef<'_, f64>) -> Result<(Vec<f64>, Vec<f64>)> {
        agora_gp::DuelGp::predict(self, xs)
    }
    fn predict_with_grad(&self, x: &[f64]) -> Result<(f64, f64, Vec<f64>, Vec<f64>)> {
        agora_gp::DuelGp::predict_with_grad(self, x)
    }
}

impl Model for agora_gp::ExactGp {
    fn dim(&self) -> usize {
        agora_gp::ExactGp::dim(self)
    }
    fn predict(&self, xs: MatRef<'_, f64>) -> Result<(Vec<f64>, Vec<f64>)> {
        agora_gp::ExactGp::predict(self, xs)
    }
    fn predict_with_grad(&self, x: &[f64]) -> Result<(f64, f64, Vec<f64>, Vec<f64>)> {
        agora_gp::ExactGp::predict_with_grad(self, x)
    }
}

/// A function to maximize over inputs.
pub trait Acquisition: Sync {
    /// Input dimension.
    fn dim(&self) -> usize;
    /// Value at `x`; writes the gradient into `grad` when given.
    fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> Result<f64>;
    /// Values at every row of `xs` (batched where the model allows).
    fn values(&self, xs: MatRef<'_, f64>) -> Result<Vec<f64>> {
        (0..xs.nrows())
            .map(|i| {
                let x: Vec<f64> = (0..xs.ncols()).map(|j| xs[(i, j)]).collect();
                self.value_grad(&x, None)
            })
            .collect()
    }
}
