//! Central finite differences: the one way agora's tests check an analytic gradient.
//!
//! `∂f/∂x_j ≈ (f(x + h e_j) − f(x − h e_j)) / (2h)`, with error `O(h²)` plus the rounding
//! error of `f` divided by `h` (so `h ≈ 1e-6` for smooth `f` of order one). A check
//! compares each coordinate with its analytic value under a [`Tol`] and, on failure, names
//! the coordinate.
//!
//! ```
//! use agora_math::fd::{Tol, assert_gradient, fd_gradient};
//! let f = |x: &[f64]| x[0] * x[0] + 3.0 * x[1];
//! let g = fd_gradient(f, &[1.0, 2.0], 1e-6);
//! assert_gradient(&[2.0, 3.0], &g, Tol::Abs(1e-8), "x² + 3y");
//! ```

/// Central difference of a function of one variable at `x`: `(f(x + h) − f(x − h)) / (2h)`.
pub fn fd_derivative(mut f: impl FnMut(f64) -> f64, x: f64, h: f64) -> f64 {
    (f(x + h) - f(x - h)) / (2.0 * h)
}

/// Central-difference gradient of `f` at `x` with step `h` (one pair of evaluations per
/// coordinate, in coordinate order).
pub fn fd_gradient(mut f: impl FnMut(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
    fd_jacobian(|z| vec![f(z)], x, h)
        .into_iter()
        .map(|row| row[0])
        .collect()
}

/// Central-difference Jacobian of a vector function: `out[j][i] = ∂f_i/∂x_j` (one row per
/// input coordinate, as many columns as `f` has outputs).
pub fn fd_jacobian(mut f: impl FnMut(&[f64]) -> Vec<f64>, x: &[f64], h: f64) -> Vec<Vec<f64>> {
    let mut xp = x.to_vec();
    (0..x.len())
        .map(|j| {
            xp[j] = x[j] + h;
            let up = f(&xp);
            xp[j] = x[j] - h;
            let dn = f(&xp);
            xp[j] = x[j];
            up.iter()
                .zip(&dn)
                .map(|(u, d)| (u - d) / (2.0 * h))
                .collect()
        })
        .collect()
}

/// How close an analytic derivative `g` must be to its finite difference `fd`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tol {
    /// `|g − fd| < t`.
    Abs(f64),
    /// `|g − fd| < t · (1 + |fd|)`.
    ScaledByFd(f64),
    /// `|g − fd| < t · (1 + |g|)`.
    ScaledByAnalytic(f64),
}

impl Tol {
    /// The bound `|g − fd|` must stay below.
    pub fn bound(self, analytic: f64, fd: f64) -> f64 {
        match self {
            Tol::Abs(t) => t,
            Tol::ScaledByFd(t) => t * (1.0 + fd.abs()),
            Tol::ScaledByAnalytic(t) => t * (1.0 + analytic.abs()),
        }
    }

    /// Whether `analytic` passes against `fd` (false for a NaN on either side).
    pub fn accepts(self, analytic: f64, fd: f64) -> bool {
        (analytic - fd).abs() < self.bound(analytic, fd)
    }
}

/// Assert that `analytic` matches the finite differences `fd` coordinate by coordinate.
///
/// # Panics
///
/// When the lengths differ or a coordinate fails `tol`; the message names `what`, the
/// coordinate and both values.
pub fn assert_gradient(analytic: &[f64], fd: &[f64], tol: Tol, what: &str) {
    assert_eq!(
        analytic.len(),
        fd.len(),
        "{what}: {} analytic derivatives vs {} finite differences",
        analytic.len(),
        fd.len()
    );
    for (j, (&g, &d)) in analytic.iter().zip(fd).enumerate() {
        assert!(
            tol.accepts(g, d),
            "{what}: coordinate {j}: analytic {g} vs finite difference {d} (|diff| {:e}, bound {:e})",
            (g - d).abs(),
            tol.bound(g, d)
        );
    }
}

/// [`fd_gradient`] of `f` at `x`, then [`assert_gradient`] against `analytic`.
///
/// # Panics
///
/// As [`assert_gradient`].
pub fn check_gradient(
    f: impl FnMut(&[f64]) -> f64,
    x: &[f64],
    h: f64,
    analytic: &[f64],
    tol: Tol,
    what: &str,
) {
    assert_gradient(analytic, &fd_gradient(f, x, h), tol, what);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn central_differences_are_exact_on_quadratics() {
        // Central differences cancel the even terms: exact (up to rounding) for a quadratic.
        let f = |x: &[f64]| 2.0 * x[0] * x[0] - x[0] * x[1] + 0.5 * x[1];
        let g = fd_gradient(f, &[0.3, -1.2], 1e-3);
        assert!((g[0] - (4.0 * 0.3 + 1.2)).abs() < 1e-10);
        assert!((g[1] - (-0.3 + 0.5)).abs() < 1e-10);
        assert!((fd_derivative(|t| t * t, 2.0, 1e-3) - 4.0).abs() < 1e-10);
        let j = fd_jacobian(|x| vec![x[0] * x[1], x[1]], &[2.0, 3.0], 1e-4);
        assert!((j[0][0] - 3.0).abs() < 1e-9 && j[0][1].abs() < 1e-12);
        assert!((j[1][0] - 2.0).abs() < 1e-9 && (j[1][1] - 1.0).abs() < 1e-9);
    }

    #[test]
    fn tolerances_scale_as_documented() {
        assert!(Tol::Abs(1e-6).accepts(1.0, 1.0 + 5e-7));
        assert!(!Tol::Abs(1e-6).accepts(100.0, 100.0 + 5e-6));
        assert!(Tol::ScaledByFd(1e-6).accepts(100.0, 100.0 + 5e-6));
        assert!(Tol::ScaledByAnalytic(1e-6).accepts(100.0 + 5e-6, 100.0));
        assert!(!Tol::Abs(1.0).accepts(f64::NAN, 0.0));
    }

    #[test]
    #[should_panic(expected = "coordinate 1")]
    fn a_wrong_gradient_names_its_coordinate() {
        check_gradient(
            |x| x[0] + 2.0 * x[1],
            &[0.0, 0.0],
            1e-6,
            &[1.0, 3.0],
            Tol::Abs(1e-6),
            "linear",
        );
    }
}
