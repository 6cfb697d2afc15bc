//! Box-bounded L-BFGS-B (basin's port of Nocedal–Zhu v3.0) behind agora's own small API,
//! and a deterministic parallel multistart.
//!
//! basin moves fast, so nothing outside this module names it. The defaults are scipy's
//! `fmin_l_bfgs_b` defaults (m = 10, ftol = 2.2e-9 relative reduction, pgtol = 1e-5,
//! maxiter 15000), which is what BoTorch's model fitting uses.

use crate::{Error, Result};
use basin::{
    BoxBounds, ConstraintSet, Constraints, CostFunction, Executor, FirstOrderState, Gradient,
    Lbfgsb,
};
use rayon::prelude::*;
use std::cell::RefCell;

/// An objective with gradient: returns `f(x)` and writes `∇f(x)` into the slice.
pub type Objective<'a> = dyn Fn(&[f64], &mut [f64]) -> Result<f64> + Sync + 'a;

/// L-BFGS-B settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LbfgsbOptions {
    /// Limited-memory history size.
    pub m: usize,
    /// Stop when `(f_k − f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) ≤ ftol`.
    pub ftol: f64,
    /// Stop when the projected gradient's infinity norm is `≤ pgtol`.
    pub pgtol: f64,
    /// Iteration limit.
    pub max_iter: u64,
}

impl Default for LbfgsbOptions {
    fn default() -> Self {
        LbfgsbOptions {
            m: 10,
            ftol: 2.220446049250313e-9,
            pgtol: 1e-5,
            max_iter: 15000,
        }
    }
}

/// What a minimization found.
#[derive(Debug, Clone, PartialEq)]
pub struct Minimum {
    /// The best point seen.
    pub x: Vec<f64>,
    /// Objective at `x`.
    pub f: f64,
    /// Objective (+ gradient) evaluations.
    pub evals: usize,
    /// L-BFGS-B iterations.
    pub iters: u64,
    /// False when the solver stopped on an error (the best point seen is still returned).
    pub clean_exit: bool,
    /// Objective at the (box-projected) start, NaN if the solver did not evaluate it first.
    pub f_start: f64,
}

/// One evaluation: `(x, f(x), ∇f(x))`.
type Evaluation = (Vec<f64>, f64, Vec<f64>);

struct Tracker {
    // Last evaluation: basin may ask for cost and gradient separately.
    cache: RefCell<Option<Evaluation>>,
    best: RefCell<Option<(Vec<f64>, f64)>>,
    evals: RefCell<usize>,
    // The first finite evaluation.
    first: RefCell<Option<(Vec<f64>, f64)>>,
}

struct Problem<'a> {
    f: &'a Objective<'a>,
    lo: Vec<f64>,
    hi: Vec<f64>,
    t: &'a Tracker,
}

#[derive(Debug)]
struct EvalError(Error);

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
impl std::error::Error for EvalError {}

impl Problem<'_> {
    fn eval(&self, x: &[f64]) -> std::result::Result<(f64, Vec<f64>), EvalError> {
        if let Some((cx, cf, cg)) = self.t.cache.borrow().as_ref()
            && cx.as_slice() == x
        {
            return Ok((*cf, cg.clone()));
        }
        // Clamp: the solver only proposes feasible points, but round-off can leave a bound by an ulp.
        let xc: Vec<f64> = x
            .iter()
            .zip(self.lo.iter().zip(&self.hi))
            .map(|(v, (l, h))| v.clamp(*l, *h))
            .collect();
        let mut g = vec![0.0; x.len()];
        let f = (self.f)(&xc, &mut g).map_err(EvalError)?;
        *self.t.evals.borrow_mut() += 1;
        if !f.is_finite() || g.iter().any(|v| !v.is_finite()) {
            return Err(EvalError(Error::Numerical(format!(
                "objective or gradient not finite at x = {xc:?} (f = {f})"
            ))));
        }
        if self.t.first.borrow().is_none() {
            *self.t.first.borrow_mut() = Some((x.to_vec(), f));
        }
        {
            let mut best = self.t.best.borrow_mut();
            if best.as_ref().is_none_or(|(_, bf)| f < *bf) {
                *best = Some((xc, f));
            }
        }
        *self.t.cache.borrow_mut() = Some((x.to_vec(), f, g.clone()));
        Ok((f, g))
    }
}

impl Constraints for Problem<'_> {
    type Set = ConstraintSet<BoxBounds<Vec<f64>>>;
    fn constraints(&self) -> <Self::Set as basin::ConstraintDescription>::Borrowed<'_> {
        ConstraintSet::new().with_bounds(BoxBounds::new(Some(&self.lo), Some(&self.hi)))
    }
}

impl CostFunction for Problem<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    type Error = EvalError;
    fn cost(&self, x: &Vec<f64>) -> std::result::Result<f64, EvalError> {
        Ok(self.eval(x)?.0)
    }
}

impl Gradient for Problem<'_> {
    type Gradient = Vec<f64>;
    fn gradient(&self, x: &Vec<f64>) -> std::result::Result<Vec<f64>, EvalError> {
        Ok(self.eval(x)?.1)
    }
    fn cost_and_gradient(&self, x: &Vec<f64>) -> std::result::Result<(f64, Vec<f64>), EvalError> {
        self.eval(x)
    }
}

/// Check a box: finite, `lo < hi` (or `lo == hi` for a fixed coordinate), and `x0` inside
/// (projected onto the box if not). Errors name `bounds[i]`.
fn check_box(x0: &[f64], bounds: &[(f64, f64)]) -> Result<Vec<f64>> {
    if x0.len() != bounds.len() {
        return Err(Error::dim("x0", bounds.len(), x0.len()));
    }
    for (i, &(lo, hi)) in bounds.iter().enumerate() {
        if lo.is_nan() || hi.is_nan() || lo > hi {
            return Err(Error::invalid(
                format!("bounds[{i}]"),
                format!("needs lo <= hi (not NaN), got [{lo}, {hi}]"),
            ));
        }
    }
    agora_core::check_finite_slice("x0", x0)?;
    Ok(x0
        .iter()
        .zip(bounds)
        .map(|(v, (l, h))| v.clamp(*l, *h))
        .collect())
}

/// Minimize `f` over the box from `x0` with L-BFGS-B.
pub fn minimize(
    f: &Objective<'_>,
    x0: &[f64],
    bounds: &[(f64, f64)],
    opts: LbfgsbOptions,
) -> Result<Minimum> {
    let x0 = check_box(x0, bounds)?;
    let tracker = Tracker {
        cache: RefCell::new(None),
        best: RefCell::new(None),
        evals: RefCell::new(0),
        first: RefCell::new(None),
    };
    let problem = Problem {
        f,
        lo: bounds.iter().map(|b| b.0).collect(),
        hi: bounds.iter().map(|b| b.1).collect(),
        t: &tracker,
    };
    let solver = Lbfgsb::new()
        .with_m_capacity(opts.m.max(1))
        .with_absolute_projected_gradient_tolerance(opts.pgtol)
        .with_relative_cost_reduction_tolerance(opts.ftol);
    let run = Executor::new(problem, solver, FirstOrderState::new(x0.clone()))
        .max_iter(opts.max_iter)
        .run();
    let (iters, clean_exit, err) = match run {
        Ok(r) => (r.iter(), true, None),
        Err(e) => (0, false, Some(e.to_string())),
    };
    let evals = *tracker.evals.borrow();
    let f_start = match tracker.first.into_inner() {
        Some((x, f)) if x == x0 => f,
        _ => f64::NAN,
    };
    match tracker.best.into_inner() {
        Some((x, fx)) => Ok(Minimum {
            x,
            f: fx,
            evals,
            iters,
            clean_exit,
            f_start,
        }),
        None => Err(Error::Numerical(format!(
            "L-BFGS-B could not evaluate the objective at its start: {}",
            err.unwrap_or_default()
        ))),
    }
}

/// Run [`minimize`] from every start in parallel and return all results in start order
/// (deterministic whatever the thread count). Starts whose first evaluation fails are
/// dropped; it is an error only if all fail.
pub fn multistart(
    f: &Objective<'_>,
    starts: &[Vec<f64>],
    bounds: &[(f64, f64)],
    opts: LbfgsbOptions,
) -> Result<Vec<Minimum>> {
    if starts.is_empty() {
        return Err(Error::invalid("starts", "needs at least one start"));
    }
    // One start runs on the calling thread, so its dense algebra may use the cores itself.
    let results: Vec<Result<Minimum>> = if starts.len() == 1 {
        vec![minimize(f, &starts[0], bounds, opts)]
    } else {
        starts
            .par_iter()
            .map(|s| minimize(f, s, bounds, opts))
            .collect()
    };
    let mut ok = Vec::with_capacity(results.len());
    let mut last_err = None;
    for r in results {
        match r {
            Ok(m) => ok.push(m),
            Err(e) => last_err = Some(e),
        }
    }
    match (ok.is_empty(), last_err) {
        (true, Some(e)) => Err(e),
        _ => Ok(ok),
    }
}

/// Multistart starts in a box: `first` clamped into `bounds`, then `sobol` scrambled Sobol
/// points (seeded by `seed`) scaled into it, `lo + u (hi − lo)` per coordinate. The usual
/// starts of a hyperparameter fit: the current value plus a space-filling design.
///
/// # Errors
///
/// As [`crate::design::sobol`] (more than 256 dimensions or 65536 points).
pub fn box_starts(
    first: &[f64],
    bounds: &[(f64, f64)],
    sobol: usize,
    seed: u64,
) -> Result<Vec<Vec<f64>>> {
    let mut starts = vec![
        first
            .iter()
            .zip(bounds)
            .map(|(v, (lo, hi))| v.clamp(*lo, *hi))
            .collect::<Vec<f64>>(),
    ];
    if sobol > 0 {
        for s in crate::design::sobol(sobol, bounds.len(), seed)? {
            starts.push(
                s.iter()
                    .zip(bounds)
                    .map(|(u, (lo, hi))| lo + u * (hi - lo))
                    .collect(),
            );
        }
    }
    Ok(starts)
}

/// The best of several minima (lowest `f`, earliest on ties).
pub fn best(minima: &[Minimum]) -> Option<&Minimum> {
    minima
        .iter()
        .fold(None, |acc: Option<&Minimum>, m| match acc {
            Some(b) if b.f <= m.f => Some(b),
            _ => Some(m),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rosenbrock(x: &[f64], g: &mut [f64]) -> Result<f64> {
        let (a, b) = (x[0], x[1]);
        g[0] = -2.0 * (1.0 - a) - 400.0 * a * (b - a * a);
        g[1] = 200.0 * (b - a * a);
        Ok((1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2))
    }

    #[test]
    fn bounded_rosenbrock_hits_the_constrained_optimum() {
        // Unconstrained: min 0 at (1, 1).
        let m = minimize(
            &rosenbrock,
            &[-1.2, 1.0],
            &[(-2.0, 2.0), (-2.0, 2.0)],
            LbfgsbOptions {
                pgtol: 1e-10,
                ftol: 0.0,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(
            (m.x[0] - 1.0).abs() < 1e-5 && (m.x[1] - 1.0).abs() < 1e-5,
            "{m:?}"
        );
        // With x1 <= 0.5 the optimum lies on the bound x1 = 0.5: minimizing
        // (1-a)² + 100(0.5-a²)² over a gives 2(a-1) - 400a(0.5-a²) = 0, a = 0.7085...
        // (root found by bisection below, an independent computation).
        let m = minimize(
            &rosenbrock,
            &[-1.2, 0.0],
            &[(-2.0, 2.0), (-2.0, 0.5)],
            LbfgsbOptions {
                pgtol: 1e-10,
                ftol: 0.0,
                ..Default::default()
            },
        )
        .unwrap();
        let dphi = |a: f64| 2.0 * (a - 1.0) - 400.0 * a * (0.5 - a * a);
        let (mut lo, mut hi) = (0.5, 1.0);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if dphi(lo) * dphi(mid) <= 0.0 {
                hi = mid
            } else {
                lo = mid
            }
        }
        assert!((m.x[1] - 0.5).abs() < 1e-12, "{m:?}");
        assert!((m.x[0] - lo).abs() < 1e-5, "{m:?} vs {lo}");
    }

    #[test]
    fn bad_boxes_are_named() {
        let e = minimize(
            &rosenbrock,
            &[0.0, 0.0],
            &[(0.0, 1.0), (1.0, 0.0)],
            Default::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("bounds[1]"), "{e}");
        let e = minimize(
            &rosenbrock,
            &[0.0],
            &[(0.0, 1.0), (0.0, 1.0)],
            Default::default(),
        )
        .unwrap_err();
        assert!(matches!(e, Error::Dimension { .. }));
    }

    #[test]
    fn multistart_is_ordered_and_finds_the_best() {
        let quad = |x: &[f64], g: &mut [f64]| -> Result<f64> {
            g[0] = 2.0 * (x[0] - 0.3);
            Ok((x[0] - 0.3).powi(2))
        };
        let ms = multistart(
            &quad,
            &[vec![-1.0], vec![1.0], vec![0.9]],
            &[(-2.0, 2.0)],
            Default::default(),
        )
        .unwrap();
        assert_eq!(ms.len(), 3);
        for (m, x0) in ms.iter().zip([-1.0f64, 1.0, 0.9]) {
            assert_eq!(m.f_start, (x0 - 0.3).powi(2));
        }
        assert!((best(&ms).unwrap().x[0] - 0.3).abs() < 1e-6);
    }
}
