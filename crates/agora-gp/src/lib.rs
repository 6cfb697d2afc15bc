//! agora-gp: kernels and Gaussian-process models.
//!
//! Inputs are `n × d` faer matrices (one row per point, unit-cube coordinates or candidate
//! indices). Kernel hyperparameters live in log space; priors are densities over the
//! positive value itself (as in GPyTorch), so MAP estimates match BoTorch's.

pub mod additive;
pub mod anchor;
pub mod duel;
pub mod exact;
pub mod gibbs;
pub mod icm;
pub mod kernel;
mod mll;
pub mod multitask;
pub mod preference;
pub mod prior;
pub mod social;
pub mod social_gp;
pub mod surrogate;

pub use additive::{
    AdditiveFit, AdditiveGrams, AdditiveHyper, AdditivePosterior, AdditiveSpec, CliqueColumns,
    ScaleGroups,
};
pub use anchor::{AnchorKde, NoiseModel, NoiseState};
pub use duel::{DuelFit, DuelGp, DuelInference, Duels, EpOptions};
pub use exact::{ExactGp, FitReport, GpConfig, Hyper};
pub use gibbs::{AlphaMode, AugmentedGibbs};
pub use icm::{Icm, IcmHyper, profile_fit, sample_correlation};
pub use kernel::{
    Anchored, Kernel, ParamKind, Precomputed, Product, Scale, Spectral, Stationary, StationaryKind,
    Sum,
};
pub use multitask::MultiTask;
pub use preference::{Comparison, PrefConfig, PrefLikelihood, PreferenceGp};
pub use prior::Prior;
pub use surrogate::{FittedSurrogate, Surrogate};

use faer::Mat;

/// Build an `n × d` input matrix from rows, checking shape and finiteness (errors name
/// `field[i][j]`).
pub fn rows_to_mat(field: &str, rows: &[Vec<f64>], d: usize) -> agora_core::Result<Mat<f64>> {
    for (i, r) in rows.iter().enumerate() {
        if r.len() != d {
            return Err(agora_core::Error::dim(format!("{field}[{i}]"), d, r.len()));
        }
        for (j, v) in r.iter().enumerate() {
            if !v.is_finite() {
                return Err(agora_core::Error::invalid(
                    format!("{field}[{i}][{j}]"),
                    format!("must be a finite number, got {v}"),
                ));
            }
        }
    }
    Ok(Mat::from_fn(rows.len(), d, |i, j| rows[i][j]))
}

/// Check that `xs` has `d` columns and only finite entries; errors name `field[i][j]`.
pub fn check_mat(field: &str, xs: faer::MatRef<'_, f64>, d: usize) -> agora_core::Result<()> {
    if xs.ncols() != d {
        return Err(agora_core::Error::dim(
            format!("{field} columns"),
            d,
            xs.ncols(),
        ));
    }
    for i in 0..xs.nrows() {
        for j in 0..xs.ncols() {
            if !xs[(i, j)].is_finite() {
                return Err(agora_core::Error::invalid(
                    format!("{field}[{i}][{j}]"),
                    "must be a finite number",
                ));
            }
        }
    }
    Ok(())
}
