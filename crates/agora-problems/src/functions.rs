//! Deterministic benchmark test functions, all oriented for **maximization**.
//!
//! The classical forms of most of these functions are minimized; here they are negated so that
//! every function is maximized, which is the convention of the whole library (a larger objective
//! is better, and a simulated rater prefers the point with the larger value). Each function
//! knows its box bounds, its dimension, its known global maximizer(s) and its global maximum,
//! all in its own (user) coordinates.
//!
//! | name | d | bounds | max | maximizer(s) |
//! |---|---|---|---|---|
//! | `branin` | 2 | `[-5,10]×[0,15]` | `-5/(4π) ≈ -0.397887` | `(-π,12.275)`, `(π,2.275)`, `(3π,2.475)` |
//! | `hartmann3` | 3 | `[0,1]^3` | `≈ 3.862780` | `≈ (0.114589, 0.555649, 0.852547)` |
//! | `hartmann4` | 4 | `[0,1]^4` | `≈ 3.134494` | `≈ (0.187395, 0.194152, 0.557918, 0.264780)` |
//! | `hartmann6` | 6 | `[0,1]^6` | `≈ 3.322368` | `≈ (0.201690, 0.150011, 0.476874, 0.275332, 0.311652, 0.657301)` |
//! | `ackley<d>` | d (default 5) | `[-32.768,32.768]^d` | 0 | origin |
//! | `levy<d>` | d (default 5) | `[-10,10]^d` | 0 | `(1,…,1)` |
//! | `rosenbrock<d>` | d ≥ 2 (default 4) | `[-5,10]^d` | 0 | `(1,…,1)` |
//! | `griewank<d>` | d (default 5) | `[-600,600]^d` | 0 | origin |
//! | `sine1d` | 1 | `[0,2]` | 1 | `0.25`, `1.25` |
//! | `forrester` | 1 | `[0,1]` | `≈ 6.020740` | `≈ 0.757249` |
//!
//! Sources: the Sine1D, Branin2D and Hartmann4D sections of
//! docs/notes/heteroscedastic-pbo.md (§6.1, including the erratum that restores the
//! square in Hartmann4), and the Hartmann6 constants in docs/anchors/RESULTS.md
//! (§1 protocol). Hartmann3, Ackley, Levy, Rosenbrock, Griewank and Forrester follow the
//! standard definitions (Surjanovic & Bingham, *Virtual Library of Simulation Experiments*).
//!
//! Parametric functions take their dimension as a name suffix: `by_name("ackley7")` is the 7-D
//! Ackley function, and the bare `"ackley"` is the default dimension. See [`by_name`].

use agora_core::{Error, Result};
use std::f64::consts::{E, PI};

/// Largest dimension accepted for the dimension-parametric functions.
pub const MAX_DIM: usize = 100;

/// A benchmark objective to be maximized, in its own (user) coordinates.
pub trait TestFunction: Send + Sync + std::fmt::Debug {
    /// Canonical name; [`by_name`] of this name rebuilds the same function (e.g. `"hartmann6"`,
    /// `"ackley5"`).
    fn name(&self) -> &str;
    /// Number of input dimensions.
    fn dim(&self) -> usize;
    /// Box bounds `(lo, hi)` per dimension, in user units.
    fn bounds(&self) -> Vec<(f64, f64)>;
    /// Objective value at `x` (user units). The caller guarantees `x.len() == dim()`.
    fn eval(&self, x: &[f64]) -> f64;
    /// Global maximum over the bounds.
    fn optimum_value(&self) -> f64;
    /// Known global maximizer(s), in user units.
    fn optimizers(&self) -> Vec<Vec<f64>>;
}

/// Canonical names of the built-in functions, each accepted by [`by_name`] and equal to the
/// [`TestFunction::name`] of the function it builds.
///
/// Parametric functions appear at their default dimension (`ackley5`, `levy5`, `rosenbrock4`,
/// `griewank5`); [`by_name`] also accepts other dimensions and the bare names.
pub fn names() -> &'static [&'static str] {
    &[
        "branin",
        "hartmann3",
        "hartmann4",
        "hartmann6",
        "ackley5",
        "levy5",
        "rosenbrock4",
        "griewank5",
        "sine1d",
        "forrester",
    ]
}

/// Human-readable list of every accepted name form, for error messages.
const ALLOWED: &[&str] = &[
    "branin",
    "hartmann3",
    "hartmann4",
    "hartmann6",
    "sine1d",
    "forrester",
    "ackley[<d>] (d in 1..=100, default 5)",
    "levy[<d>] (d in 1..=100, default 5)",
    "rosenbrock[<d>] (d in 2..=100, default 4)",
    "griewank[<d>] (d in 1..=100, default 5)",
];

/// Builds a test function by name (ASCII case-insensitive, surrounding whitespace ignored).
///
/// Fixed-dimension names: `branin`, `hartmann3`, `hartmann4`, `hartmann6`, `sine1d`,
/// `forrester`. Dimension-parametric names take an optional decimal suffix: `ackley<d>`,
/// `levy<d>`, `griewank<d>` with `1 <= d <= 100` and `rosenbrock<d>` with `2 <= d <= 100`;
/// without a suffix they use the defaults Ackley 5-D, Levy 5-D, Rosenbrock 4-D, Griewank 5-D.
///
/// # Errors
/// [`Error::UnknownId`] listing the allowed names if the name is not recognised, and
/// [`Error::InvalidInput`] if a parametric name carries a malformed or out-of-range dimension.
pub fn by_name(name: &str) -> Result<Box<dyn TestFunction>> {
    let key = name.trim().to_ascii_lowercase();
    match key.as_str() {
        "branin" => return Ok(Box::new(Branin)),
        "hartmann3" => return Ok(Box::new(Hartmann3)),
        "hartmann4" => return Ok(Box::new(Hartmann4)),
        "hartmann6" => return Ok(Box::new(Hartmann6)),
        "sine1d" => return Ok(Box::new(Sine1D)),
        "forrester" => return Ok(Box::new(Forrester)),
        _ => {}
    }
    type Ctor = fn(usize) -> Result<Box<dyn TestFunction>>;
    // (prefix, default dimension, smallest dimension, constructor)
    let families: [(&str, usize, usize, Ctor); 4] = [
        ("ackley", Ackley::DEFAULT_DIM, 1, |d| {
            Ok(Box::new(Ackley::new(d)?))
        }),
        ("levy", Levy::DEFAULT_DIM, 1, |d| {
            Ok(Box::new(Levy::new(d)?))
        }),
        ("rosenbrock", Rosenbrock::DEFAULT_DIM, 2, |d| {
            Ok(Box::new(Rosenbrock::new(d)?))
        }),
        ("griewank", Griewank::DEFAULT_DIM, 1, |d| {
            Ok(Box::new(Griewank::new(d)?))
        }),
    ];
    for (prefix, default_dim, min_dim, ctor) in families {
        let Some(suffix) = key.strip_prefix(prefix) else {
            continue;
        };
        if suffix.is_empty() {
            return ctor(default_dim);
        }
        if !suffix.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let bad_dim = || {
            Error::invalid(
                "name",
                format!(
                    "`{name}`: the dimension suffix of `{prefix}<d>` must be a decimal \
                     integer in {min_dim}..={MAX_DIM} without leading zeros \
                     (e.g. `{prefix}{default_dim}`)"
                ),
            )
        };
        if suffix.starts_with('0') {
            return Err(bad_dim());
        }
        let d: usize = suffix.parse().map_err(|_| bad_dim())?;
        if !(min_dim..=MAX_DIM).contains(&d) {
            return Err(bad_dim());
        }
        return ctor(d);
    }
    Err(Error::unknown("test function", name, ALLOWED))
}

/// Error unless `min_dim <= d <= MAX_DIM`.
fn check_dim(family: &str, d: usize, min_dim: usize) -> Result<()> {
    if (min_dim..=MAX_DIM).contains(&d) {
        Ok(())
    } else {
        Err(Error::invalid(
            "dim",
            format!("{family} needs a dimension in {min_dim}..={MAX_DIM}, got {d}"),
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Branin
// ---------------------------------------------------------------------------------------------

/// Negated Branin (Branin–Hoo) function on `[-5,10]×[0,15]`:
/// `f(x) = −[(x2 − 5.1/(4π²)·x1² + (5/π)·x1 − 6)² + 10(1 − 1/(8π))·cos x1 + 10]`.
///
/// Maximum `−5/(4π) ≈ −0.397887357729738` at `(−π, 12.275)`, `(π, 2.275)` and
/// `(3π, 2.475) ≈ (9.42478, 2.475)`: at each of them the square term vanishes and
/// `cos x1 = −1`, leaving `10/(8π)`. Source: heteroscedastic-pbo note §6.1 "Branin2D"
/// (the paper prints the minimization form; negation as recommended in its §9), and the
/// Branin problem of docs/anchors/RESULTS.md §2.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Branin;

impl TestFunction for Branin {
    fn name(&self) -> &str {
        "branin"
    }
    fn dim(&self) -> usize {
        2
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(-5.0, 10.0), (0.0, 15.0)]
    }
    fn eval(&self, x: &[f64]) -> f64 {
        debug_assert_eq!(x.len(), 2);
        let (x1, x2) = (x[0], x[1]);
        let b = 5.1 / (4.0 * PI * PI);
        let c = 5.0 / PI;
        let t = 1.0 / (8.0 * PI);
        let q = x2 - b * x1 * x1 + c * x1 - 6.0;
        -(q * q + 10.0 * (1.0 - t) * x1.cos() + 10.0)
    }
    fn optimum_value(&self) -> f64 {
        -5.0 / (4.0 * PI)
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        vec![vec![-PI, 12.275], vec![PI, 2.275], vec![3.0 * PI, 2.475]]
    }
}

// ---------------------------------------------------------------------------------------------
// Hartmann family
// ---------------------------------------------------------------------------------------------

/// Weights `α` shared by the Hartmann 3-, 4- and 6-D functions.
const HARTMANN_ALPHA: [f64; 4] = [1.0, 1.2, 3.0, 3.2];

/// Hartmann-6 `A` matrix (also the source of Hartmann-4's first four columns).
const HARTMANN6_A: [[f64; 6]; 4] = [
    [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
    [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
    [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
    [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
];

/// Hartmann-6 `P` matrix in units of `1e-4`.
const HARTMANN6_P: [[f64; 6]; 4] = [
    [1312.0, 1696.0, 5569.0, 124.0, 8283.0, 5886.0],
    [2329.0, 4135.0, 8307.0, 3736.0, 1004.0, 9991.0],
    [2348.0, 1451.0, 3522.0, 2883.0, 3047.0, 6650.0],
    [4047.0, 8828.0, 8732.0, 5743.0, 1091.0, 381.0],
];

/// Hartmann-3 `A` matrix.
const HARTMANN3_A: [[f64; 3]; 4] = [
    [3.0, 10.0, 30.0],
    [0.1, 10.0, 35.0],
    [3.0, 10.0, 30.0],
    [0.1, 10.0, 35.0],
];

/// Hartmann-3 `P` matrix in units of `1e-4`.
const HARTMANN3_P: [[f64; 3]; 4] = [
    [3689.0, 1170.0, 2673.0],
    [4699.0, 4387.0, 7470.0],
    [1091.0, 8732.0, 5547.0],
    [381.0, 5743.0, 8828.0],
];

/// `Σ_i α_i exp(−Σ_{j<x.len()} A_ij (x_j − 1e-4·P_ij)²)`, using the first `x.len()` columns.
fn hartmann_sum<const N: usize>(a: &[[f64; N]; 4], p: &[[f64; N]; 4], x: &[f64]) -> f64 {
    debug_assert!(x.len() <= N);
    HARTMANN_ALPHA
        .iter()
        .zip(a.iter().zip(p.iter()))
        .map(|(alpha, (a_i, p_i))| {
            let inner: f64 = x
                .iter()
                .zip(a_i.iter().zip(p_i.iter()))
                .map(|(xj, (aij, pij))| {
                    let d = xj - 1e-4 * pij;
                    aij * d * d
                })
                .sum();
            alpha * (-inner).exp()
        })
        .sum()
}

/// Hartmann 3-D function on `[0,1]^3`, maximized form
/// `f(x) = Σ_i α_i exp(−Σ_j A_ij (x_j − P_ij)²)` (the standard constants: `α = (1, 1.2, 3, 3.2)`,
/// `A = [[3,10,30],[0.1,10,35],[3,10,30],[0.1,10,35]]`,
/// `P = 1e-4·[[3689,1170,2673],[4699,4387,7470],[1091,8732,5547],[381,5743,8828]]`).
///
/// Maximum `≈ 3.86278` (literature: at `(0.114614, 0.555649, 0.852547)`). The hard-coded
/// maximizer and value were refined by a 40-start Nelder–Mead search followed by Newton
/// iterations on the analytic gradient/Hessian (throwaway pure-Python script, double
/// precision; final gradient max-norm `≈ 3e-15`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hartmann3;

impl TestFunction for Hartmann3 {
    fn name(&self) -> &str {
        "hartmann3"
    }
    fn dim(&self) -> usize {
        3
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(0.0, 1.0); 3]
    }
    fn eval(&self, x: &[f64]) -> f64 {
        debug_assert_eq!(x.len(), 3);
        hartmann_sum(&HARTMANN3_A, &HARTMANN3_P, x)
    }
    fn optimum_value(&self) -> f64 {
        3.862779787332663
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        vec![vec![
            0.11458887665506896,
            0.5556488946169301,
            0.8525469846866774,
        ]]
    }
}

/// Hartmann 4-D function (Picheny et al. 2013) on `[0,1]^4`, maximized by negation:
/// `f(x) = −(1/0.839)·(1.1 − Σ_i α_i exp(−Σ_{j=1..4} A_ij (x_j − P_ij)²))`, with `A` and `P`
/// the first four columns of the Hartmann-6 constants.
///
/// Source: heteroscedastic-pbo note §6.1 "Hartmann4D", with its erratum applied (the paper
/// omits the square) and the negation it recommends (§9): the minimization form has its
/// minimum `≈ −3.13449` at `≈ (0.1874, 0.1942, 0.5579, 0.2648)`, so this maximum is
/// `≈ +3.13449`. The hard-coded maximizer and value were obtained by a 40-start Nelder–Mead
/// search followed by Newton iterations on the analytic gradient/Hessian (throwaway pure-Python
/// script, double precision; final gradient max-norm `≈ 6e-16`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hartmann4;

impl TestFunction for Hartmann4 {
    fn name(&self) -> &str {
        "hartmann4"
    }
    fn dim(&self) -> usize {
        4
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(0.0, 1.0); 4]
    }
    fn eval(&self, x: &[f64]) -> f64 {
        debug_assert_eq!(x.len(), 4);
        let s = hartmann_sum(&HARTMANN6_A, &HARTMANN6_P, &x[..4]);
        -(1.1 - s) / 0.839
    }
    fn optimum_value(&self) -> f64 {
        3.134494141222399
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        vec![vec![
            0.1873952729734667,
            0.19415152930244076,
            0.5579177800625691,
            0.26477962417039713,
        ]]
    }
}

/// Hartmann 6-D function on `[0,1]^6`, maximized form
/// `f(x) = Σ_i α_i exp(−Σ_j A_ij (x_j − P_ij)²)` with the constants of
/// docs/anchors/RESULTS.md §1 ("negated Hartmann6").
///
/// Maximum `≈ 3.32237` (literature: at `(0.20169, 0.150011, 0.476874, 0.275332, 0.311652,
/// 0.6573)`). The hard-coded maximizer and value were refined by a 40-start Nelder–Mead search
/// followed by Newton iterations on the analytic gradient/Hessian (throwaway pure-Python
/// script, double precision; final gradient max-norm `≈ 3e-15`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hartmann6;

impl TestFunction for Hartmann6 {
    fn name(&self) -> &str {
        "hartmann6"
    }
    fn dim(&self) -> usize {
        6
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(0.0, 1.0); 6]
    }
    fn eval(&self, x: &[f64]) -> f64 {
        debug_assert_eq!(x.len(), 6);
        hartmann_sum(&HARTMANN6_A, &HARTMANN6_P, x)
    }
    fn optimum_value(&self) -> f64 {
        3.322368011415515
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        vec![vec![
            0.20168951100670543,
            0.15001069182345797,
            0.47687397422189703,
            0.2753324304940561,
            0.31165161660011326,
            0.6573005340656204,
        ]]
    }
}

// ---------------------------------------------------------------------------------------------
// Dimension-parametric functions
// ---------------------------------------------------------------------------------------------

/// Negated Ackley function on `[−32.768, 32.768]^d` with `a = 20`, `b = 0.2`, `c = 2π`:
/// `f(x) = −[−a·exp(−b·sqrt(mean x_i²)) − exp(mean cos(c·x_i)) + a + e]`.
///
/// Maximum 0 at the origin. Evaluated as `−[a(1 − e^{−b r}) + e(1 − e^{m−1})]` (with
/// `expm1`), which is algebraically identical and exactly 0 at the origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ackley {
    d: usize,
    name: String,
}

impl Ackley {
    /// Default dimension used by the bare name `"ackley"`.
    pub const DEFAULT_DIM: usize = 5;

    /// The `d`-dimensional Ackley function, `1 <= d <= MAX_DIM`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if `d` is out of range.
    pub fn new(d: usize) -> Result<Self> {
        check_dim("ackley", d, 1)?;
        Ok(Self {
            d,
            name: format!("ackley{d}"),
        })
    }
}

impl TestFunction for Ackley {
    fn name(&self) -> &str {
        &self.name
    }
    fn dim(&self) -> usize {
        self.d
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(-32.768, 32.768); self.d]
    }
    fn eval(&self, x: &[f64]) -> f64 {
        debug_assert_eq!(x.len(), self.d);
        let (a, b, c) = (20.0, 0.2, 2.0 * PI);
        let n = x.len() as f64;
        let r = (x.iter().map(|v| v * v).sum::<f64>() / n).sqrt();
        let m = x.iter().map(|v| (c * v).cos()).sum::<f64>() / n;
        // a(1 − e^{−br}) + (e − e^m), both terms written with expm1.
        let ackley = -a * (-b * r).exp_m1() - E * (m - 1.0).exp_m1();
        -ackley
    }
    fn optimum_value(&self) -> f64 {
        0.0
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        vec![vec![0.0; self.d]]
    }
}

/// Negated Levy function on `[−10, 10]^d`, with `w_i = 1 + (x_i − 1)/4`:
/// `f(x) = −[sin²(πw_1) + Σ_{i<d} (w_i − 1)²(1 + 10 sin²(πw_i + 1)) + (w_d − 1)²(1 + sin²(2πw_d))]`.
///
/// Maximum 0 at `(1, …, 1)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Levy {
    d: usize,
    name: String,
}

impl Levy {
    /// Default dimension used by the bare name `"levy"`.
    pub const DEFAULT_DIM: usize = 5;

    /// The `d`-dimensional Levy function, `1 <= d <= MAX_DIM`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if `d` is out of range.
    pub fn new(d: usize) -> Result<Self> {
        check_dim("levy", d, 1)?;
        Ok(Self {
            d,
            name: format!("levy{d}"),
        })
    }
}

impl TestFunction for Levy {
    fn name(&self) -> &str {
        &self.name
    }
    fn dim(&self) -> usize {
        self.d
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(-10.0, 10.0); self.d]
    }
    fn eval(&self, x: &[f64]) -> f64 {
        debug_assert_eq!(x.len(), self.d);
        let w = |v: f64| 1.0 + (v - 1.0) / 4.0;
        let d = x.len();
        let w1 = w(x[0]);
        let wd = w(x[d - 1]);
        let mut s = (PI * w1).sin().powi(2);
        for &xi in &x[..d - 1] {
            let wi = w(xi);
            s += (wi - 1.0).powi(2) * (1.0 + 10.0 * (PI * wi + 1.0).sin().powi(2));
        }
        s += (wd - 1.0).powi(2) * (1.0 + (2.0 * PI * wd).sin().powi(2));
        -s
    }
    fn optimum_value(&self) -> f64 {
        0.0
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        vec![vec![1.0; self.d]]
    }
}

/// Negated Rosenbrock function on `[−5, 10]^d`, `d >= 2`:
/// `f(x) = −Σ_{i<d} [100(x_{i+1} − x_i²)² + (x_i − 1)²]`.
///
/// Maximum 0 at `(1, …, 1)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rosenbrock {
    d: usize,
    name: String,
}

impl Rosenbrock {
    /// Default dimension used by the bare name `"rosenbrock"`.
    pub const DEFAULT_DIM: usize = 4;

    /// The `d`-dimensional Rosenbrock function, `2 <= d <= MAX_DIM`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if `d` is out of range.
    pub fn new(d: usize) -> Result<Self> {
        check_dim("rosenbrock", d, 2)?;
        Ok(Self {
            d,
            name: format!("rosenbrock{d}"),
        })
    }
}

impl TestFunction for Rosenbrock {
    fn name(&self) -> &str {
        &self.name
    }
    fn dim(&self) -> usize {
        self.d
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(-5.0, 10.0); self.d]
    }
    fn eval(&self, x: &[f64]) -> f64 {
        debug_assert_eq!(x.len(), self.d);
        let s: f64 = x
            .windows(2)
            .map(|p| 100.0 * (p[1] - p[0] * p[0]).powi(2) + (p[0] - 1.0).powi(2))
            .sum();
        -s
    }
    fn optimum_value(&self) -> f64 {
        0.0
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        vec![vec![1.0; self.d]]
    }
}

/// Negated Griewank function on `[−600, 600]^d`:
/// `f(x) = −[Σ x_i²/4000 − Π cos(x_i/√i) + 1]` (with `i` counted from 1).
///
/// Maximum 0 at the origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Griewank {
    d: usize,
    name: String,
}

impl Griewank {
    /// Default dimension used by the bare name `"griewank"`.
    pub const DEFAULT_DIM: usize = 5;

    /// The `d`-dimensional Griewank function, `1 <= d <= MAX_DIM`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if `d` is out of range.
    pub fn new(d: usize) -> Result<Self> {
        check_dim("griewank", d, 1)?;
        Ok(Self {
            d,
            name: format!("griewank{d}"),
        })
    }
}

impl TestFunction for Griewank {
    fn name(&self) -> &str {
        &self.name
    }
    fn dim(&self) -> usize {
        self.d
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(-600.0, 600.0); self.d]
    }
    fn eval(&self, x: &[f64]) -> f64 {
        debug_assert_eq!(x.len(), self.d);
        let sum: f64 = x.iter().map(|v| v * v).sum::<f64>() / 4000.0;
        let prod: f64 = x
            .iter()
            .enumerate()
            .map(|(i, v)| (v / ((i + 1) as f64).sqrt()).cos())
            .product();
        -(sum - prod + 1.0)
    }
    fn optimum_value(&self) -> f64 {
        0.0
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        vec![vec![0.0; self.d]]
    }
}

// ---------------------------------------------------------------------------------------------
// 1-D functions
// ---------------------------------------------------------------------------------------------

/// Sine benchmark `f(x) = sin(2πx)` on `[0, 2]`, maximum 1 at `x = 0.25` and `x = 1.25`.
///
/// Source: heteroscedastic-pbo note §6.1 "Sine1D" (the paper does not print the formula; the
/// note identifies it with the RAHBO `SineBenchmark` of Makarova et al. 2021).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sine1D;

impl TestFunction for Sine1D {
    fn name(&self) -> &str {
        "sine1d"
    }
    fn dim(&self) -> usize {
        1
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(0.0, 2.0)]
    }
    fn eval(&self, x: &[f64]) -> f64 {
        debug_assert_eq!(x.len(), 1);
        (2.0 * PI * x[0]).sin()
    }
    fn optimum_value(&self) -> f64 {
        1.0
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        vec![vec![0.25], vec![1.25]]
    }
}

/// Negated Forrester et al. (2008) function `f(x) = −(6x − 2)² sin(12x − 4)` on `[0, 1]`.
///
/// Maximum `≈ 6.020740055767` at `x ≈ 0.757248757841856`. With `u = 6x − 2` the stationarity
/// condition is `sin(2u) + u·cos(2u) = 0`; its root in `u ∈ [2.4, 2.7]` was found by 200
/// bisection steps in double precision (throwaway Python script) and cross-checked against a
/// grid of 10⁶ + 1 points on `[0, 1]` (grid max `6.0207400557`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Forrester;

impl TestFunction for Forrester {
    fn name(&self) -> &str {
        "forrester"
    }
    fn dim(&self) -> usize {
        1
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(0.0, 1.0)]
    }
    fn eval(&self, x: &[f64]) -> f64 {
        debug_assert_eq!(x.len(), 1);
        let u = 6.0 * x[0] - 2.0;
        -(u * u) * (12.0 * x[0] - 4.0).sin()
    }
    fn optimum_value(&self) -> f64 {
        6.0207400557670825
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        vec![vec![0.757248757841856]]
    }
}
