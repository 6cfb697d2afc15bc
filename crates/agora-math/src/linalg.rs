//! Robust Cholesky factorization over faer, with escalating diagonal jitter that is
//! reported, never hidden; triangular solves; log-determinants.
//!
//! Never invert when a solve will do: [`Cholesky::inverse`] exists only for the
//! marginal-likelihood gradient, which needs the whole of `A⁻¹` (trace terms).

use crate::{Error, Result};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{LltParams, LltRegularization, cholesky_in_place};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::{Accum, Mat, MatMut, MatRef, Par, Spec};

/// Parallelism for an `n × n` dense operation: two threads only for large matrices and
/// only when not already inside a rayon worker (an outer parallel loop owns the cores).
pub fn par_for(n: usize) -> Par {
    if n >= 1000 && rayon::current_thread_index().is_none() && rayon::current_num_threads() > 1 {
        Par::rayon(0)
    } else {
        Par::Seq
    }
}

/// The eigendecomposition of a symmetric matrix from its lower triangle: eigenvectors as
/// the columns of `U` and eigenvalues in nondecreasing order.
///
/// Always sequential: faer's own `self_adjoint_eigen` follows the global parallelism, and
/// its blocked reduction then rounds differently with the number of rayon threads, which
/// made CMA-ES runs depend on `--threads`. Errors are [`Error::Numerical`] naming `field`.
pub fn sym_eigen(a: MatRef<'_, f64>, field: &str) -> Result<(Mat<f64>, Vec<f64>)> {
    use faer::linalg::evd::{ComputeEigenvectors, self_adjoint_evd, self_adjoint_evd_scratch};
    let n = a.nrows();
    if a.ncols() != n {
        return Err(Error::dim(field, n, a.ncols()));
    }
    let mut u = Mat::zeros(n, n);
    let mut s = faer::diag::Diag::zeros(n);
    let mut buf = MemBuffer::new(self_adjoint_evd_scratch::<f64>(
        n,
        ComputeEigenvectors::Yes,
        Par::Seq,
        Spec::default(),
    ));
    self_adjoint_evd(
        a,
        s.as_mut(),
        Some(u.as_mut()),
        Par::Seq,
        MemStack::new(&mut buf),
        Spec::default(),
    )
    .map_err(|_| Error::Numerical(format!("{field}: eigendecomposition did not converge")))?;
    let s = s.column_vector();
    Ok((u, (0..n).map(|i| s[i]).collect()))
}

/// How diagonal jitter escalates when a factorization fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitterPolicy {
    /// First jitter, relative to the mean diagonal (default 1e-9).
    pub initial: f64,
    /// Multiplier per retry (default 10).
    pub factor: f64,
    /// Largest jitter tried, relative to the mean diagonal (default 1e-2); beyond it the
    /// factorization fails with an error.
    pub max: f64,
}

impl Default for JitterPolicy {
    fn default() -> Self {
        JitterPolicy {
            initial: 1e-9,
            factor: 10.0,
            max: 1e-2,
        }
    }
}

/// Lower Cholesky factor `L` of `A + jitter·I`, remembering the jitter it needed.
#[derive(Debug, Clone)]
pub struct Cholesky {
    l: Mat<f64>,
    jitter: f64,
}

fn try_factor(a: MatRef<'_, f64>, jitter: f64, par: Par) -> Option<Mat<f64>> {
    let n = a.nrows();
    let mut l = a.to_owned();
    if jitter > 0.0 {
        for i in 0..n {
            l[(i, i)] += jitter;
        }
    }
    let params: Spec<LltParams, f64> = Default::default();
    let mut mem = MemBuffer::new(
        faer::linalg::cholesky::llt::factor::cholesky_in_place_scratch::<f64>(n, par, params),
    );
    let stack = MemStack::new(&mut mem);
    match cholesky_in_place(l.as_mut(), LltRegularization::default(), par, stack, params) {
        Ok(_) => {
            // faer leaves the strict upper triangle untouched: zero it so `L` is exact.
            for j in 0..n {
                for i in 0..j {
                    l[(i, j)] = 0.0;
                }
            }
            if (0..n).all(|i| l[(i, i)].is_finite() && l[(i, i)] > 0.0) {
                Some(l)
            } else {
                None
            }
        }
        Err(_) => None,
    }
}

impl Cholesky {
    /// Factor a symmetric matrix (lower triangle read) with the default [`JitterPolicy`].
    pub fn new(a: MatRef<'_, f64>) -> Result<Cholesky> {
        Cholesky::with_policy(a, JitterPolicy::default())
    }

    /// Factor `a`; if it is not numerically positive definite, add jitter
    /// `initial·mean(diag)`, multiplied by `factor` per retry up to `max·mean(diag)`.
    pub fn with_policy(a: MatRef<'_, f64>, policy: JitterPolicy) -> Result<Cholesky> {
        let n = a.nrows();
        if a.ncols() != n {
            return Err(Error::dim("matrix columns", n, a.ncols()));
        }
        if n == 0 {
            return Ok(Cholesky {
                l: Mat::zeros(0, 0),
                jitter: 0.0,
            });
        }
        for j in 0..n {
            for i in j..n {
                if !a[(i, j)].is_finite() {
                    return Err(Error::invalid(
                        format!("matrix[{i}][{j}]"),
                        format!("must be finite, got {}", a[(i, j)]),
                    ));
                }
            }
        }
        let par = par_for(n);
        if let Some(l) = try_factor(a, 0.0, par) {
            return Ok(Cholesky { l, jitter: 0.0 });
        }
        let mean_diag = (0..n).map(|i| a[(i, i)].abs()).sum::<f64>() / n as f64;
        let scale = if mean_diag > 0.0 { mean_diag } else { 1.0 };
        let mut rel = policy.initial;
        while rel <= policy.max * (1.0 + 1e-12) {
            let jitter = rel * scale;
            if let Some(l) = try_factor(a, jitter, par) {
                return Ok(Cholesky { l, jitter });
            }
            rel *= policy.factor;
        }
        Err(Error::NotPositiveDefinite {
            size: n,
            jitter: policy.max * scale,
            max_relative: policy.max,
            mean_diagonal: scale,
        })
    }

    /// Jitter added to the diagonal (0 when the matrix factored as given).
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// Size of the factored matrix.
    pub fn dim(&self) -> usize {
        self.l.nrows()
    }

    /// The lower factor `L`.
    pub fn l(&self) -> MatRef<'_, f64> {
        self.l.as_ref()
    }

    /// `log det(A + jitter·I) = 2 Σ log L_ii`.
    pub fn log_det(&self) -> f64 {
        2.0 * (0..self.dim()).map(|i| self.l[(i, i)].ln()).sum::<f64>()
    }

    /// Solve `L X = B` in place.
    pub fn solve_lower_in_place(&self, b: MatMut<'_, f64>) {
        solve_lower_triangular_in_place(self.l.as_ref(), b, par_for(self.dim()));
    }

    /// Solve `Lᵀ X = B` in place.
    pub fn solve_upper_in_place(&self, b: MatMut<'_, f64>) {
        solve_upper_triangular_in_place(self.l.as_ref().transpose(), b, par_for(self.dim()));
    }

    /// Solve `A X = B` in place (two triangular solves).
    pub fn solve_in_place(&self, mut b: MatMut<'_, f64>) {
        self.solve_lower_in_place(b.as_mut());
        self.solve_upper_in_place(b);
    }

    /// `A⁻¹ b` for a vector.
    pub fn solve_vec(&self, b: &[f64]) -> Vec<f64> {
        let mut m = Mat::from_fn(b.len(), 1, |i, _| b[i]);
        self.solve_in_place(m.as_mut());
        (0..b.len()).map(|i| m[(i, 0)]).collect()
    }

    /// `L⁻¹ b` for a vector.
    pub fn solve_lower_vec(&self, b: &[f64]) -> Vec<f64> {
        let mut m = Mat::from_fn(b.len(), 1, |i, _| b[i]);
        self.solve_lower_in_place(m.as_mut());
        (0..b.len()).map(|i| m[(i, 0)]).collect()
    }

    /// The full symmetric `A⁻¹`, computed from `L⁻¹` (needed only for trace terms such as
    /// the marginal-likelihood gradient `tr(A⁻¹ ∂A)`).
    pub fn inverse(&self) -> Mat<f64> {
        let n = self.dim();
        let par = par_for(n);
        let mut out = Mat::zeros(n, n);
        let mut mem =
            MemBuffer::new(faer::linalg::cholesky::llt::inverse::inverse_scratch::<f64>(n, par));
        let stack = MemStack::new(&mut mem);
        faer::linalg::cholesky::llt::inverse::inverse(out.as_mut(), self.l.as_ref(), par, stack);
        for j in 0..n {
            for i in 0..j {
                out[(i, j)] = out[(j, i)];
            }
        }
        out
    }

    /// Factor of the bordered matrix `[[A, C], [Cᵀ, D]]` from this factor of `A`, in
    /// `O(n² m)`: the cheap way to condition a model on `m` new points. Jitter for the new
    /// block escalates as in [`Cholesky::new`]; the reported jitter is the larger of the two.
    pub fn extend(&self, cross: MatRef<'_, f64>, corner: MatRef<'_, f64>) -> Result<Cholesky> {
        let n = self.dim();
        let m = corner.nrows();
        if cross.nrows() != n {
            return Err(Error::dim("cross rows", n, cross.nrows()));
        }
        if cross.ncols() != m || corner.ncols() != m {
            return Err(Error::dim(
                "corner columns",
                m,
                corner.ncols().min(cross.ncols()),
            ));
        }
        let mut b = cross.to_owned();
        self.solve_lower_in_place(b.as_mut());
        let mut s = corner.to_owned();
        matmul(
            s.as_mut(),
            Accum::Add,
            b.transpose(),
            b.as_ref(),
            -1.0,
            Par::Seq,
        );
        if self.jitter > 0.0 {
            for i in 0..m {
                s[(i, i)] += self.jitter;
            }
        }
        let c22 = Cholesky::new(s.as_ref())?;
        let mut l = Mat::zeros(n + m, n + m);
        l.as_mut()
            .submatrix_mut(0, 0, n, n)
            .copy_from(self.l.as_ref());
        l.as_mut()
            .submatrix_mut(n, 0, m, n)
            .copy_from(b.transpose());
        l.as_mut()
            .submatrix_mut(n, n, m, m)
            .copy_from(c22.l.as_ref());
        Ok(Cholesky {
            l,
            jitter: self.jitter.max(c22.jitter),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spd(n: usize) -> Mat<f64> {
        // A = B Bᵀ + n I with a deterministic B.
        let b = Mat::from_fn(n, n, |i, j| ((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.4);
        let mut a = Mat::zeros(n, n);
        matmul(
            a.as_mut(),
            Accum::Replace,
            b.as_ref(),
            b.transpose(),
            1.0,
            Par::Seq,
        );
        for i in 0..n {
            a[(i, i)] += n as f64;
        }
        a
    }

    #[test]
    fn solve_and_log_det_match_a_hand_case() {
        // A = [[4, 2], [2, 3]]: det 8, A⁻¹ = [[3, -2], [-2, 4]] / 8.
        let a = faer::mat![[4.0, 2.0], [2.0, 3.0]];
        let c = Cholesky::new(a.as_ref()).unwrap();
        assert_eq!(c.jitter(), 0.0);
        assert!((c.log_det() - 8f64.ln()).abs() < 1e-14);
        let x = c.solve_vec(&[1.0, 1.0]);
        assert!((x[0] - 1.0 / 8.0).abs() < 1e-15 && (x[1] - 2.0 / 8.0).abs() < 1e-15);
        let inv = c.inverse();
        assert!((inv[(0, 1)] + 0.25).abs() < 1e-15 && (inv[(1, 0)] + 0.25).abs() < 1e-15);
    }

    #[test]
    fn singular_matrix_gets_reported_jitter() {
        // Rank one: 1·1ᵀ (duplicate points under a constant kernel).
        let a = Mat::from_fn(4, 4, |_, _| 1.0);
        let c = Cholesky::new(a.as_ref()).unwrap();
        assert!(
            c.jitter() >= 1e-9 && c.jitter() <= 1e-2,
            "jitter {}",
            c.jitter()
        );
        let neg = faer::mat![[1.0, 0.0], [0.0, -1.0]];
        let e = Cholesky::new(neg.as_ref()).unwrap_err();
        assert!(
            matches!(e, Error::NotPositiveDefinite { size: 2, .. }),
            "{e}"
        );
        let nan = faer::mat![[1.0, 0.0], [f64::NAN, 1.0]];
        assert!(
            Cholesky::new(nan.as_ref())
                .unwrap_err()
                .to_string()
                .contains("matrix[1][0]")
        );
    }

    #[test]
    fn extend_equals_factoring_the_whole() {
        let a = spd(9);
        let full = Cholesky::new(a.as_ref()).unwrap();
        let head = Cholesky::new(a.as_ref().submatrix(0, 0, 6, 6)).unwrap();
        let ext = head
            .extend(
                a.as_ref().submatrix(0, 6, 6, 3),
                a.as_ref().submatrix(6, 6, 3, 3),
            )
            .unwrap();
        for i in 0..9 {
            for j in 0..9 {
                assert!((full.l()[(i, j)] - ext.l()[(i, j)]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn inverse_times_a_is_identity() {
        let a = spd(40);
        let inv = Cholesky::new(a.as_ref()).unwrap().inverse();
        let mut p = Mat::zeros(40, 40);
        matmul(
            p.as_mut(),
            Accum::Replace,
            a.as_ref(),
            inv.as_ref(),
            1.0,
            Par::Seq,
        );
        for i in 0..40 {
            for j in 0..40 {
                let e = if i == j { 1.0 } else { 0.0 };
                assert!((p[(i, j)] - e).abs() < 1e-12);
            }
        }
    }
}

#[cfg(test)]
mod sym_eigen_tests {
    use super::*;

    fn symmetric(n: usize, seed: u64) -> Mat<f64> {
        use rand::RngExt;
        let mut rng = crate::rng::stream(seed, &[0]);
        let g = Mat::<f64>::from_fn(n, n, |_, _| rng.random::<f64>() - 0.5);
        Mat::from_fn(n, n, |i, j| g[(i, j)] + g[(j, i)])
    }

    /// Closed form: [[2, 1], [1, 2]] has eigenvalues 1 and 3 with eigenvectors (1, ∓1)/√2.
    #[test]
    fn two_by_two_closed_form() {
        let a = Mat::from_fn(2, 2, |i, j| if i == j { 2.0 } else { 1.0 });
        let (u, s) = sym_eigen(a.as_ref(), "a").unwrap();
        assert!(
            (s[0] - 1.0).abs() < 1e-14 && (s[1] - 3.0).abs() < 1e-14,
            "{s:?}"
        );
        let h = std::f64::consts::FRAC_1_SQRT_2;
        assert!((u[(0, 0)].abs() - h).abs() < 1e-14);
        assert!(
            (u[(0, 0)] + u[(1, 0)]).abs() < 1e-14,
            "eigenvector of 1 is (1, -1)/√2"
        );
        assert!(
            (u[(0, 1)] - u[(1, 1)]).abs() < 1e-14,
            "eigenvector of 3 is (1, 1)/√2"
        );
    }

    /// A = U diag(s) Uᵀ with orthonormal U, and the same bits whatever rayon pool runs it.
    #[test]
    fn reconstructs_and_ignores_the_thread_count() {
        for n in [5, 40, 120] {
            let a = symmetric(n, n as u64);
            let (u, s) = sym_eigen(a.as_ref(), "a").unwrap();
            for i in 0..n {
                for j in 0..n {
                    let r: f64 = (0..n).map(|k| u[(i, k)] * s[k] * u[(j, k)]).sum();
                    let o: f64 = (0..n).map(|k| u[(i, k)] * u[(j, k)]).sum();
                    assert!((r - a[(i, j)]).abs() < 1e-11, "n={n} A[{i},{j}]");
                    assert!((o - f64::from(u8::from(i == j))).abs() < 1e-12);
                }
            }
            assert!(s.windows(2).all(|w| w[0] <= w[1]));
            let on = |t: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .unwrap();
                pool.install(|| sym_eigen(a.as_ref(), "a").unwrap())
            };
            let (u1, s1) = on(1);
            let (u4, s4) = on(4);
            assert_eq!(s1, s4, "n={n}");
            assert!(u1 == u4, "n={n}");
            assert!(u1 == u && s1 == s, "n={n}");
        }
    }
}
