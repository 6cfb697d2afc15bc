//! Smooth constrained minimization by an augmented Lagrangian (Powell–Hestenes–Rockafellar,
//! as in Nocedal & Wright 2006, §17.4, and LANCELOT/ALGENCAN): box bounds are kept by the
//! inner L-BFGS-B ([`crate::optim`]), inequality `c(x) ≤ 0` and equality `h(x) = 0`
//! constraints go into
//!
//! `L(x; λ, ν, r) = f(x) + Σ_j [ν_j h_j + r/2 h_j²] + 1/(2r) Σ_k [max(0, λ_k + r c_k)² − λ_k²]`,
//!
//! minimized over the box; then `ν ← ν + r h`, `λ ← max(0, λ + r c)`, and `r ← 10 r` when
//! the violation did not fall to a quarter. It stops when the KKT conditions hold to
//! tolerance, and always reports the residuals it reached ([`Kkt`]): stationarity of the
//! Lagrangian projected on the box, primal feasibility, and complementarity `max |λ_k c_k|`.
//!
//! The subproblems are solved inexactly while the multipliers are still far off (as
//! LANCELOT does): the first to [`AlOptions::inner_pgtol_start`] and
//! [`AlOptions::inner_ftol_start`], each next one ten times tighter, down to the inner
//! solver's own tolerances. The KKT test is the same whatever the inner tolerance; the
//! stall test (`f_tol`) is trusted only once the subproblems are solved to full tolerance.
//!
//! Problems here are small and dense (Social BO's MAP and its confidence bounds: a few hundred
//! variables, a handful of constraints), so every constraint is a closure with its gradient.
//! [`minimize_al_in`] solves in the variables of an affine change of variables ([`Reparam`]:
//! an elimination, a preconditioner), evaluating the functions at the mapped point and pulling
//! the Lagrangian's gradient back once per evaluation.

use crate::optim::{LbfgsbOptions, minimize};
use crate::{Error, Result};

/// A constraint value with its gradient written into the slice.
pub type ConstraintFn<'a> = dyn Fn(&[f64], &mut [f64]) -> Result<f64> + Sync + 'a;

/// Whether a constraint is `c(x) ≤ 0` or `h(x) = 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `c(x) ≤ 0`.
    Inequality,
    /// `h(x) = 0`.
    Equality,
}

/// One constraint.
pub struct Constraint<'a> {
    /// Its kind.
    pub kind: Kind,
    /// Its value and gradient.
    pub f: &'a ConstraintFn<'a>,
}

/// A change of variables `x = φ(y)` for [`minimize_al_in`]: the solver works in `y` (its box
/// bounds are on `y`), the objective and constraints are evaluated at `x`. `φ` is affine, so
/// its Jacobian `M` is constant and the gradient in `y` is `Mᵀ ∇_x`, formed once per
/// evaluation of the Lagrangian (not once per constraint).
pub trait Reparam: Sync {
    /// The number of `x` variables.
    fn dim_x(&self) -> usize;
    /// `x = φ(y)`, written into `x`.
    fn forward(&self, y: &[f64], x: &mut [f64]);
    /// `gy = Mᵀ gx`.
    fn pullback(&self, gx: &[f64], gy: &mut [f64]);
}

/// The identity `x = y` (what [`minimize_al`] uses).
struct Identity(usize);

impl Reparam for Identity {
    fn dim_x(&self) -> usize {
        self.0
    }
    fn forward(&self, y: &[f64], x: &mut [f64]) {
        x.copy_from_slice(y);
    }
    fn pullback(&self, gx: &[f64], gy: &mut [f64]) {
        gy.copy_from_slice(gx);
    }
}

/// Solver settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlOptions {
    /// Initial penalty `r`.
    pub penalty: f64,
    /// Largest penalty.
    pub max_penalty: f64,
    /// Outer iterations.
    pub max_outer: usize,
    /// Feasibility tolerance (max violation).
    pub feas_tol: f64,
    /// Stationarity tolerance (infinity norm of the projected Lagrangian gradient, relative
    /// to `1 + |f|`).
    pub opt_tol: f64,
    /// Also stop, at a feasible point, when an outer iteration changes `f` by at most this
    /// relative amount: problems with a flat direction (Bradley–Terry likelihoods do not see
    /// a common shift of utilities) converge in `f` long before the stationarity residual
    /// falls.
    pub f_tol: f64,
    /// Inner L-BFGS-B settings (the tolerances of the last subproblems).
    pub inner: LbfgsbOptions,
    /// Projected-gradient tolerance of the first subproblem (never below `inner.pgtol`);
    /// ten times tighter each outer iteration. `0` solves every subproblem to `inner.pgtol`.
    pub inner_pgtol_start: f64,
    /// Relative-reduction tolerance of the first subproblem (never below `inner.ftol`);
    /// ten times tighter each outer iteration. `0` solves every subproblem to `inner.ftol`.
    pub inner_ftol_start: f64,
}

impl Default for AlOptions {
    fn default() -> Self {
        AlOptions {
            penalty: 10.0,
            max_penalty: 1e8,
            max_outer: 40,
            feas_tol: 1e-8,
            opt_tol: 1e-6,
            f_tol: 1e-12,
            inner: LbfgsbOptions {
                m: 12,
                ftol: 1e-13,
                pgtol: 1e-9,
                max_iter: 3000,
            },
            inner_pgtol_start: 1e-2,
            inner_ftol_start: 1e-6,
        }
    }
}

/// KKT residuals at a point with multipliers.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Kkt {
    /// `‖P(x − ∇L) − x‖_∞`, the projected gradient of the Lagrangian.
    pub stationarity: f64,
    /// Largest constraint violation.
    pub feasibility: f64,
    /// `max_k |λ_k c_k(x)|`.
    pub complementarity: f64,
}

/// What the solver returns.
#[derive(Debug, Clone, PartialEq)]
pub struct AlResult {
    /// The solution.
    pub x: Vec<f64>,
    /// `f(x)`.
    pub f: f64,
    /// Multipliers, one per constraint in order (`≥ 0` for inequalities).
    pub multipliers: Vec<f64>,
    /// Residuals at `x`.
    pub kkt: Kkt,
    /// Outer iterations used.
    pub outer: usize,
    /// Objective evaluations (inner).
    pub evals: usize,
    /// Whether the tolerances were met.
    pub converged: bool,
}

/// Minimize `f` subject to `constraints` over the box `bounds` from `x0` (clamped into the
/// box), warm-started with `multipliers` if given.
pub fn minimize_al(
    f: &crate::optim::Objective<'_>,
    constraints: &[Constraint<'_>],
    bounds: &[(f64, f64)],
    x0: &[f64],
    multipliers: Option<&[f64]>,
    opts: AlOptions,
) -> Result<AlResult> {
    minimize_al_in(
        f,
        constraints,
        &Identity(x0.len()),
        bounds,
        x0,
        multipliers,
        opts,
    )
}

/// [`minimize_al`] in the variables `y` of a change of variables `x = φ(y)`: `f` and the
/// constraints take `x` (and write their gradients in `x`), `bounds` and `y0` are in `y`,
/// and so are the result's `x` and its stationarity residual (its `f`, feasibility and
/// multipliers are those of `φ(y)`). A linear preconditioner or an elimination of
/// variables goes here.
pub fn minimize_al_in(
    f: &crate::optim::Objective<'_>,
    constraints: &[Constraint<'_>],
    phi: &dyn Reparam,
    bounds: &[(f64, f64)],
    x0: &[f64],
    multipliers: Option<&[f64]>,
    opts: AlOptions,
) -> Result<AlResult> {
    let n = x0.len();
    if bounds.len() != n {
        return Err(Error::dim("bounds", n, bounds.len()));
    }
    crate::check_finite_slice("x0", x0)?;
    let nx = phi.dim_x();
    let m = constraints.len();
    let mut mult = match multipliers {
        Some(v) if v.len() == m => v.to_vec(),
        Some(v) => return Err(Error::dim("multipliers", m, v.len())),
        None => vec![0.0; m],
    };
    for (k, c) in constraints.iter().enumerate() {
        if c.kind == Kind::Inequality {
            mult[k] = mult[k].max(0.0);
        }
    }
    let mut x: Vec<f64> = x0
        .iter()
        .zip(bounds)
        .map(|(v, (l, h))| v.clamp(*l, *h))
        .collect();
    let mut r = opts.penalty;
    let mut evals = 0;
    let mut last_viol = f64::INFINITY;
    let mut outer = 0;
    let mut kkt = Kkt::default();
    let mut converged = false;
    let mut last_f = f64::INFINITY;
    // Inexact subproblems first: the tolerances shrink tenfold per outer iteration.
    let mut loosen = 1.0;
    while outer < opts.max_outer {
        outer += 1;
        let inner = LbfgsbOptions {
            pgtol: opts.inner.pgtol.max(opts.inner_pgtol_start * loosen),
            ftol: opts.inner.ftol.max(opts.inner_ftol_start * loosen),
            ..opts.inner
        };
        let exact_inner = inner.pgtol == opts.inner.pgtol && inner.ftol == opts.inner.ftol;
        loosen *= 0.1;
        // Scratch for x, its gradient and a constraint's (the inner solver calls `lag` from
        // one thread; the lock is never contended).
        let scratch = std::sync::Mutex::new((vec![0.0; nx], vec![0.0; nx], vec![0.0; nx]));
        let lag = |y: &[f64], gy: &mut [f64]| -> Result<f64> {
            let mut guard = scratch.lock().unwrap_or_else(|e| e.into_inner());
            let (z, g, gc) = &mut *guard;
            phi.forward(y, z);
            g.iter_mut().for_each(|e| *e = 0.0);
            let mut v = f(z, g)?;
            for (k, c) in constraints.iter().enumerate() {
                gc.iter_mut().for_each(|e| *e = 0.0);
                let cv = (c.f)(z, gc)?;
                let coef = match c.kind {
                    Kind::Equality => {
                        v += mult[k] * cv + 0.5 * r * cv * cv;
                        mult[k] + r * cv
                    }
                    Kind::Inequality => {
                        let s = (mult[k] + r * cv).max(0.0);
                        v += (s * s - mult[k] * mult[k]) / (2.0 * r);
                        s
                    }
                };
                if coef != 0.0 {
                    for (gi, ci) in g.iter_mut().zip(gc.iter()) {
                        *gi += coef * ci;
                    }
                }
            }
            phi.pullback(g, gy);
            Ok(v)
        };
        let res = minimize(&lag, &x, bounds, inner)?;
        evals += res.evals;
        x = res.x;
        let mut z = vec![0.0; nx];
        phi.forward(&x, &mut z);
        // Multiplier update and violation.
        let mut viol: f64 = 0.0;
        let mut g = vec![0.0; nx];
        for (k, c) in constraints.iter().enumerate() {
            let cv = (c.f)(&z, &mut g)?;
            match c.kind {
                Kind::Equality => {
                    mult[k] += r * cv;
                    viol = viol.max(cv.abs());
                }
                Kind::Inequality => {
                    mult[k] = (mult[k] + r * cv).max(0.0);
                    viol = viol.max(cv.max(0.0));
                }
            }
        }
        kkt = residuals_in(f, constraints, phi, bounds, &x, &mult)?;
        let fx = f(&z, &mut g)?;
        let kkt_ok = kkt.stationarity <= opts.opt_tol * (1.0 + fx.abs())
            && kkt.complementarity <= opts.opt_tol.max(opts.feas_tol) * (1.0 + fx.abs());
        let stalled = (fx - last_f).abs() <= opts.f_tol * (1.0 + fx.abs());
        if kkt.feasibility <= opts.feas_tol && (kkt_ok || (stalled && exact_inner)) {
            converged = true;
            break;
        }
        last_f = fx;
        if viol > opts.feas_tol && viol > 0.25 * last_viol {
            r = (10.0 * r).min(opts.max_penalty);
        }
        last_viol = viol;
    }
    let mut z = vec![0.0; nx];
    phi.forward(&x, &mut z);
    let mut g = vec![0.0; nx];
    let fx = f(&z, &mut g)?;
    Ok(AlResult {
        x,
        f: fx,
        multipliers: mult,
        kkt,
        outer,
        evals,
        converged,
    })
}

/// KKT residuals of `(x, multipliers)`.
pub fn residuals(
    f: &crate::optim::Objective<'_>,
    constraints: &[Constraint<'_>],
    bounds: &[(f64, f64)],
    x: &[f64],
    multipliers: &[f64],
) -> Result<Kkt> {
    residuals_in(f, constraints, &Identity(x.len()), bounds, x, multipliers)
}

/// [`residuals`] at `φ(y)`, stationarity projected on the box in `y`.
fn residuals_in(
    f: &crate::optim::Objective<'_>,
    constraints: &[Constraint<'_>],
    phi: &dyn Reparam,
    bounds: &[(f64, f64)],
    y: &[f64],
    multipliers: &[f64],
) -> Result<Kkt> {
    let nx = phi.dim_x();
    let mut z = vec![0.0; nx];
    phi.forward(y, &mut z);
    let mut g = vec![0.0; nx];
    f(&z, &mut g)?;
    let mut gc = vec![0.0; nx];
    let (mut feas, mut comp): (f64, f64) = (0.0, 0.0);
    for (k, c) in constraints.iter().enumerate() {
        gc.iter_mut().for_each(|e| *e = 0.0);
        let cv = (c.f)(&z, &mut gc)?;
        for (gi, ci) in g.iter_mut().zip(&gc) {
            *gi += multipliers[k] * ci;
        }
        match c.kind {
            Kind::Equality => feas = feas.max(cv.abs()),
            Kind::Inequality => {
                feas = feas.max(cv.max(0.0));
                comp = comp.max((multipliers[k] * cv).abs());
            }
        }
    }
    let mut gy = vec![0.0; y.len()];
    phi.pullback(&g, &mut gy);
    let stat = y
        .iter()
        .zip(&gy)
        .zip(bounds)
        .map(|((xi, gi), (l, h))| ((xi - gi).clamp(*l, *h) - xi).abs())
        .fold(0.0, f64::max);
    Ok(Kkt {
        stationarity: stat,
        feasibility: feas,
        complementarity: comp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_onto_a_disc_and_a_line() {
        // min (x-2)² + (y-1)²  s.t. x² + y² ≤ 1: the projection (2, 1)/√5, λ = √5 − 1.
        let f = |x: &[f64], g: &mut [f64]| -> Result<f64> {
            g[0] = 2.0 * (x[0] - 2.0);
            g[1] = 2.0 * (x[1] - 1.0);
            Ok((x[0] - 2.0).powi(2) + (x[1] - 1.0).powi(2))
        };
        let disc = |x: &[f64], g: &mut [f64]| -> Result<f64> {
            g[0] = 2.0 * x[0];
            g[1] = 2.0 * x[1];
            Ok(x[0] * x[0] + x[1] * x[1] - 1.0)
        };
        let cons = [Constraint {
            kind: Kind::Inequality,
            f: &disc,
        }];
        let b = [(-5.0, 5.0); 2];
        let r = minimize_al(&f, &cons, &b, &[0.0, 0.0], None, AlOptions::default()).unwrap();
        let s = 5f64.sqrt();
        assert!(r.converged, "{r:?}");
        assert!((r.x[0] - 2.0 / s).abs() < 1e-6 && (r.x[1] - 1.0 / s).abs() < 1e-6);
        assert!((r.multipliers[0] - (s - 1.0)).abs() < 1e-5);
        // Equality: min x² + 2y² s.t. x + y = 1 → (2/3, 1/3), ν = −4/3.
        let f2 = |x: &[f64], g: &mut [f64]| -> Result<f64> {
            g[0] = 2.0 * x[0];
            g[1] = 4.0 * x[1];
            Ok(x[0] * x[0] + 2.0 * x[1] * x[1])
        };
        let line = |x: &[f64], g: &mut [f64]| -> Result<f64> {
            g[0] = 1.0;
            g[1] = 1.0;
            Ok(x[0] + x[1] - 1.0)
        };
        let cons2 = [Constraint {
            kind: Kind::Equality,
            f: &line,
        }];
        let r2 = minimize_al(&f2, &cons2, &b, &[3.0, -2.0], None, AlOptions::default()).unwrap();
        assert!(r2.converged);
        assert!((r2.x[0] - 2.0 / 3.0).abs() < 1e-7 && (r2.x[1] - 1.0 / 3.0).abs() < 1e-7);
        assert!((r2.multipliers[0] + 4.0 / 3.0).abs() < 1e-5);
        assert!(r2.kkt.feasibility < 1e-8);
        // An inactive constraint keeps a zero multiplier; bounds are respected.
        let far = |x: &[f64], g: &mut [f64]| -> Result<f64> {
            g[0] = 1.0;
            g[1] = 0.0;
            Ok(x[0] - 10.0)
        };
        let cons3 = [Constraint {
            kind: Kind::Inequality,
            f: &far,
        }];
        let r3 = minimize_al(
            &f,
            &cons3,
            &[(-1.0, 1.5), (-1.0, 0.5)],
            &[0.0, 0.0],
            None,
            AlOptions::default(),
        )
        .unwrap();
        assert_eq!(r3.multipliers[0], 0.0);
        assert!((r3.x[0] - 1.5).abs() < 1e-9 && (r3.x[1] - 0.5).abs() < 1e-9);
    }
}
