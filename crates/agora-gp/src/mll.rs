//! The Gaussian log marginal likelihood every exact-GP fit maximizes (Rasmussen & Williams
//! 2006, Eq. 5.8) and the weight matrix of its gradient (Eq. 5.9), shared by [`ExactGp`]'s
//! MAP fit and the augmented Gibbs kernel's fit.
//!
//! [`ExactGp`]: crate::ExactGp

use agora_core::Result;
use agora_math::linalg::Cholesky;
use faer::{Mat, MatRef};

/// `ln 2π`.
pub(crate) const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// `log N(r | 0, K + noise·I)` of the residuals `r` under the Gram `k`, with `α = A⁻¹ r`
/// and `W = ½(ααᵀ − A⁻¹)`, `A = K + noise·I`. The gradient in a kernel parameter `θ` is
/// `Σ_ij W_ij ∂K_ij/∂θ` ([`Kernel::grad_contract`](crate::Kernel::grad_contract)), in the
/// noise variance `tr W`, in a constant mean `Σ_i α_i`.
pub(crate) fn log_marginal_likelihood_parts(
    k: MatRef<'_, f64>,
    noise: f64,
    r: &[f64],
) -> Result<(f64, Vec<f64>, Mat<f64>)> {
    let n = r.len();
    let mut a = k.to_owned();
    for i in 0..n {
        a[(i, i)] += noise;
    }
    let chol = Cholesky::new(a.as_ref())?;
    drop(a);
    let alpha = chol.solve_vec(r);
    let quad: f64 = r.iter().zip(&alpha).map(|(a, b)| a * b).sum();
    let mll = -0.5 * quad - 0.5 * chol.log_det() - 0.5 * n as f64 * LN_2PI;
    // W = ½(ααᵀ − A⁻¹), built in place over A⁻¹.
    let mut w = chol.inverse();
    for c in 0..n {
        for rr in 0..n {
            w[(rr, c)] = 0.5 * (alpha[rr] * alpha[c] - w[(rr, c)]);
        }
    }
    Ok((mll, alpha, w))
}
