//! The benchmarks of BOAP (Kumar A V et al. 2024, "Enhanced Bayesian Optimization via
//! Preferential Modeling of Abstract Properties", arXiv:2402.17343; Tables 1–2, §5, App. A.4)
//! and the simulated experts who answer "which of designs a, b has the larger abstract
//! property i", plus a synthetic electrode-manufacturing pool and a pool CSV loader.
//!
//! Every objective is **maximised** (the library's convention, see [`crate::functions`]):
//! Rosenbrock and Griewank are the negated minimisation forms. Decisions on the open points
//! of `docs/notes/boap.md` §8, made here once:
//!
//! - **A3, domains** (absent from the paper; the authors' code): Benchmark-1d on `[0, 10]`,
//!   Rosenbrock-3d on `[−2.048, 2.048]³`, Griewank-5d on `[−600, 600]⁵`.
//! - **Benchmark-1d** is `exp(−(x−2)²) + exp(−(x−6)²/10) + 1/(x²+1)` (the paper prints the
//!   exponents without their minus signs). Its maximum `1.401897181289867` at
//!   `x = 2.000874343188643` was found by Newton's method on `f′` at 30 digits (mpmath) and
//!   is checked here against a dense grid.
//! - **A4, accurate features (Table 1)**, in user coordinates, the paper's signs:
//!   - Benchmark-1d: `ω₁ = exp(−(x−2)²)`, `ω₂ = 1/(x²+1)`. The paper's `1/x²` is infinite at
//!     `x = 0`, inside the domain; `1/(x²+1)` (the code's) orders `[0, 10]` identically.
//!   - Rosenbrock-3d: `ω₁ = (x₃−x₂²)² + (x₂−x₁²)²`, `ω₂ = (x₂−1)² + (x₁−1)²` (the code
//!     negates both, which reverses every preference; a rank GP learns either ordering).
//!   - Griewank-5d: `ω₁ = Σ x_i²`, `ω₂ = Π cos x_i` (the code uses `Π cos(x_i/√i)`).
//! - **A9, inaccurate features (Table 2)** of a vector are sums over coordinates:
//!   Benchmark `Σ sin x_i, Σ cos x_i`; Rosenbrock `Σ sin x_i, Σ cos x_i`; Griewank
//!   `Σ sin x_i, Σ x_i³` (for `d = 1` these are the table's `sin x, cos x`).
//! - **A10, ties.** Equal property values are answered "can't tell" ([`AnswerKind::Tie`],
//!   `None` from [`SimulatedExpert::compare`]); a noisy expert never flips a tie.
//! - **BOAP-NP.** The noisy expert flips each answer independently with probability δ
//!   (default [`DEFAULT_FLIP`] `= 0.3`), from one seeded ChaCha stream: asking the same pair
//!   twice gives two independent draws.
//! - **A14, pools.** The electrode datasets of §5.2 are not distributed with the paper;
//!   [`synthetic_electrode_pool`] is a documented stand-in of the same shape (880 rows,
//!   8 process variables, an objective and two measurable properties), and
//!   [`Pool::load_csv`] reads a real one. The property columns are not inputs.

use crate::functions::{Griewank, Rosenbrock, TestFunction};
use crate::oracle::Problem;
use agora_core::{Answer, AnswerKind, Error, Point, Query, QueryKind, Result, Space};
use agora_math::rng::{Rng, stream};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use std::path::Path;

/// Number of abstract properties of every synthetic benchmark (paper §5.1: `m = 2`).
pub const N_PROPERTIES: usize = 2;
/// The paper's flip probability for noisy preferences (BOAP-NP, App. A.4.2).
pub const DEFAULT_FLIP: f64 = 0.3;
/// Maximum of Benchmark-1d over `[0, 10]` (module docs).
pub const BENCHMARK1D_MAX: f64 = 1.401_897_181_289_867;
/// Maximiser of Benchmark-1d (module docs).
pub const BENCHMARK1D_ARGMAX: f64 = 2.000_874_343_188_643;

/// The three synthetic benchmarks of the paper's Table 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoapBenchmark {
    /// `exp(−(x−2)²) + exp(−(x−6)²/10) + 1/(x²+1)` on `[0, 10]`.
    Benchmark1d,
    /// Negated Rosenbrock on `[−2.048, 2.048]³`.
    Rosenbrock3d,
    /// Negated Griewank on `[−600, 600]⁵`.
    Griewank5d,
}

/// Which abstract-property functions an expert consults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Features {
    /// The informative features of Table 1.
    Accurate,
    /// The deliberately uninformative features of Table 2 (BOAP-IA).
    Inaccurate,
}

impl BoapBenchmark {
    /// All three, in the paper's order.
    pub const ALL: [BoapBenchmark; 3] = [
        BoapBenchmark::Benchmark1d,
        BoapBenchmark::Rosenbrock3d,
        BoapBenchmark::Griewank5d,
    ];

    /// `benchmark1d`, `rosenbrock3d` or `griewank5d`.
    pub fn name(self) -> &'static str {
        match self {
            BoapBenchmark::Benchmark1d => "benchmark1d",
            BoapBenchmark::Rosenbrock3d => "rosenbrock3d",
            BoapBenchmark::Griewank5d => "griewank5d",
        }
    }

    /// The benchmark named by [`BoapBenchmark::name`] (ASCII case-insensitive); errors list
    /// the names.
    pub fn by_name(name: &str) -> Result<BoapBenchmark> {
        let key = name.trim().to_ascii_lowercase();
        BoapBenchmark::ALL
            .into_iter()
            .find(|b| b.name() == key)
            .ok_or_else(|| {
                Error::unknown(
                    "BOAP benchmark",
                    name,
                    &BoapBenchmark::ALL.map(|b| b.name()),
                )
            })
    }

    /// Number of design dimensions `d`.
    pub fn dim(self) -> usize {
        match self {
            BoapBenchmark::Benchmark1d => 1,
            BoapBenchmark::Rosenbrock3d => 3,
            BoapBenchmark::Griewank5d => 5,
        }
    }

    /// Box bounds in user units (module docs, A3).
    pub fn bounds(self) -> Vec<(f64, f64)> {
        match self {
            BoapBenchmark::Benchmark1d => vec![(0.0, 10.0)],
            BoapBenchmark::Rosenbrock3d => vec![(-2.048, 2.048); 3],
            BoapBenchmark::Griewank5d => vec![(-600.0, 600.0); 5],
        }
    }

    /// Initial designs `t′ = d + 3` (paper §5.1).
    pub fn initial_designs(self) -> usize {
        self.dim() + 3
    }

    /// Budget `T = 10d + 5` (paper §5.1; whether it includes `t′` is the note's A2).
    pub fn budget(self) -> usize {
        10 * self.dim() + 5
    }

    /// The objective as a [`TestFunction`] (maximised, with its known optimum).
    pub fn function(self) -> Box<dyn TestFunction> {
        Box::new(BoapFunction { bench: self })
    }

    /// The objective on its box, seen by strategies as the unit cube.
    pub fn problem(self) -> Result<Problem> {
        Problem::new(self.function())
    }

    /// Abstract property `property` (0-based, `< N_PROPERTIES`) of `features` at `x` (user
    /// units). Errors name `property` or `x`.
    pub fn property(self, features: Features, property: usize, x: &[f64]) -> Result<f64> {
        if x.len() != self.dim() {
            return Err(Error::dim("x", self.dim(), x.len()));
        }
        agora_core::check_finite_slice("x", x)?;
        if property >= N_PROPERTIES {
            return Err(Error::invalid(
                "property",
                format!("must be in 0..{N_PROPERTIES}, got {property}"),
            ));
        }
        let sum = |g: fn(f64) -> f64| x.iter().map(|&v| g(v)).sum::<f64>();
        Ok(match (features, self, property) {
            (Features::Accurate, BoapBenchmark::Benchmark1d, 0) => (-(x[0] - 2.0).powi(2)).exp(),
            (Features::Accurate, BoapBenchmark::Benchmark1d, _) => 1.0 / (x[0] * x[0] + 1.0),
            (Features::Accurate, BoapBenchmark::Rosenbrock3d, 0) => {
                (x[2] - x[1] * x[1]).powi(2) + (x[1] - x[0] * x[0]).powi(2)
            }
            (Features::Accurate, BoapBenchmark::Rosenbrock3d, _) => {
                (x[1] - 1.0).powi(2) + (x[0] - 1.0).powi(2)
            }
            (Features::Accurate, BoapBenchmark::Griewank5d, 0) => sum(|v| v * v),
            (Features::Accurate, BoapBenchmark::Griewank5d, _) => {
                x.iter().map(|v| v.cos()).product()
            }
            (Features::Inaccurate, _, 0) => sum(f64::sin),
            (Features::Inaccurate, BoapBenchmark::Griewank5d, _) => sum(|v| v * v * v),
            (Features::Inaccurate, _, _) => sum(f64::cos),
        })
    }
}

/// A BOAP benchmark objective as a [`TestFunction`]. Its [`TestFunction::name`] is rebuilt by
/// [`BoapBenchmark::by_name`] (not by [`crate::functions::by_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoapFunction {
    /// Which benchmark.
    pub bench: BoapBenchmark,
}

impl TestFunction for BoapFunction {
    fn name(&self) -> &str {
        self.bench.name()
    }
    fn dim(&self) -> usize {
        self.bench.dim()
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        self.bench.bounds()
    }
    fn eval(&self, x: &[f64]) -> f64 {
        match self.bench {
            BoapBenchmark::Benchmark1d => {
                let x = x[0];
                (-(x - 2.0).powi(2)).exp() + (-(x - 6.0).powi(2) / 10.0).exp() + 1.0 / (x * x + 1.0)
            }
            // The standard negated forms; their constructors cannot fail at d = 3 and 5.
            BoapBenchmark::Rosenbrock3d => Rosenbrock::new(3).map_or(f64::NAN, |f| f.eval(x)),
            BoapBenchmark::Griewank5d => Griewank::new(5).map_or(f64::NAN, |f| f.eval(x)),
        }
    }
    fn optimum_value(&self) -> f64 {
        match self.bench {
            BoapBenchmark::Benchmark1d => BENCHMARK1D_MAX,
            _ => 0.0,
        }
    }
    fn optimizers(&self) -> Vec<Vec<f64>> {
        match self.bench {
            BoapBenchmark::Benchmark1d => vec![vec![BENCHMARK1D_ARGMAX]],
            BoapBenchmark::Rosenbrock3d => vec![vec![1.0; 3]],
            BoapBenchmark::Griewank5d => vec![vec![0.0; 5]],
        }
    }
}

/// Where a simulated expert looks up the true value of an abstract property.
pub trait PropertyTruth: Send + Sync + std::fmt::Debug {
    /// Names of the properties, in order; a [`QueryKind::Compare`] names one as its `rater`.
    fn property_names(&self) -> Vec<String>;
    /// The value of property `property` at `design`; errors name the property or the point.
    fn property_value(&self, property: usize, design: &Point) -> Result<f64>;
}

/// The properties of a [`BoapBenchmark`] at unit-cube points (coordinates are clamped to
/// `[0, 1]`, as [`Problem::value_at_unit`] does).
#[derive(Debug, Clone)]
pub struct BenchmarkTruth {
    /// The benchmark.
    pub bench: BoapBenchmark,
    /// Accurate (Table 1) or inaccurate (Table 2) features.
    pub features: Features,
    space: Space,
}

impl BenchmarkTruth {
    /// The `features` of `bench`.
    pub fn new(bench: BoapBenchmark, features: Features) -> Result<BenchmarkTruth> {
        Ok(BenchmarkTruth {
            bench,
            features,
            space: Space::reals(&bench.bounds())?,
        })
    }

    /// The benchmark's box (user units); designs are unit-cube points of it.
    pub fn space(&self) -> &Space {
        &self.space
    }
}

impl PropertyTruth for BenchmarkTruth {
    /// `omega1`, `omega2`.
    fn property_names(&self) -> Vec<String> {
        (1..=N_PROPERTIES).map(|i| format!("omega{i}")).collect()
    }
    fn property_value(&self, property: usize, design: &Point) -> Result<f64> {
        let Point::Unit(u) = design else {
            return Err(Error::invalid(
                "point",
                "a benchmark expert judges unit-cube points, not candidate indices",
            ));
        };
        let x = self.space.to_user_reals(u)?;
        self.bench.property(self.features, property, &x)
    }
}

/// A simulated expert comparing two designs on one abstract property: exactly (paper §5.1),
/// or flipping each answer with probability δ (BOAP-NP). Seeded: the same seed and the same
/// questions give the same answers.
#[derive(Debug, Clone)]
pub struct SimulatedExpert<T: PropertyTruth> {
    truth: T,
    delta: f64,
    rng: Rng,
}

impl<T: PropertyTruth> SimulatedExpert<T> {
    /// An expert who always answers by the true property values.
    pub fn exact(truth: T) -> SimulatedExpert<T> {
        SimulatedExpert {
            truth,
            delta: 0.0,
            rng: stream(0, &[]),
        }
    }

    /// An expert who flips each answer with probability `delta ∈ [0, 1)`, drawn from a
    /// ChaCha stream seeded by `seed`. Errors name `delta` and the allowed range.
    pub fn noisy(truth: T, delta: f64, seed: u64) -> Result<SimulatedExpert<T>> {
        if !(delta.is_finite() && (0.0..1.0).contains(&delta)) {
            return Err(Error::invalid(
                "delta",
                format!("the flip probability must be in [0, 1), got {delta}"),
            ));
        }
        Ok(SimulatedExpert {
            truth,
            delta,
            rng: stream(seed, &[0xB0A9]),
        })
    }

    /// The flip probability (0 for an exact expert).
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// What the expert consults.
    pub fn truth(&self) -> &T {
        &self.truth
    }

    /// Which of `a` (0) and `b` (1) has the larger property `property`; `None` when the true
    /// values are equal. Errors name the property or point.
    pub fn compare(&mut self, property: usize, a: &Point, b: &Point) -> Result<Option<usize>> {
        let wa = self.truth.property_value(property, a)?;
        let wb = self.truth.property_value(property, b)?;
        if wa == wb {
            return Ok(None);
        }
        let truthful = if wa > wb { 0 } else { 1 };
        let flip = self.delta > 0.0 && self.rng.random::<f64>() < self.delta;
        Ok(Some(if flip { 1 - truthful } else { truthful }))
    }

    /// Answer a pairwise [`QueryKind::Compare`] whose `rater` names the property (one of
    /// [`PropertyTruth::property_names`]).
    pub fn answer(&mut self, query: &Query) -> Result<Answer> {
        let QueryKind::Compare { points, rater } = &query.kind else {
            return Err(Error::invalid(
                "query",
                "a BOAP expert answers pairwise comparisons only",
            ));
        };
        if points.len() != 2 {
            return Err(Error::dim("points", 2, points.len()));
        }
        let names = self.truth.property_names();
        let Some(name) = rater else {
            return Err(Error::invalid(
                "rater",
                format!(
                    "must name the property compared, one of {}",
                    names.join(", ")
                ),
            ));
        };
        let property = names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| Error::unknown("property", name, &names))?;
        let kind = match self.compare(property, &points[0], &points[1])? {
            Some(winner) => AnswerKind::Choice {
                winner,
                rater: rater.clone(),
            },
            None => AnswerKind::Tie {
                rater: rater.clone(),
            },
        };
        Ok(Answer {
            query_id: query.id,
            kind,
        })
    }
}

impl SimulatedExpert<BenchmarkTruth> {
    /// The exact expert of the paper's main experiments (Table 1 features).
    pub fn accurate(bench: BoapBenchmark) -> Result<Self> {
        Ok(SimulatedExpert::exact(BenchmarkTruth::new(
            bench,
            Features::Accurate,
        )?))
    }

    /// The BOAP-IA expert: exact answers about the uninformative Table 2 features.
    pub fn inaccurate(bench: BoapBenchmark) -> Result<Self> {
        Ok(SimulatedExpert::exact(BenchmarkTruth::new(
            bench,
            Features::Inaccurate,
        )?))
    }
}

// ---------------------------------------------------------------------------------------------
// Pools
// ---------------------------------------------------------------------------------------------

/// A finite pool of designs with a measured objective (maximised) and measured abstract
/// properties, as in the paper's battery experiments (§5.2): BO picks rows, the expert
/// compares property columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    /// Where it came from (a file path or a generator description), for messages.
    pub source: String,
    /// Names of the input columns.
    pub input_names: Vec<String>,
    /// Input rows in their own units (`len × dim`).
    pub inputs: Vec<Vec<f64>>,
    /// Name of the objective column.
    pub objective_name: String,
    /// Objective of each row.
    pub objective: Vec<f64>,
    /// Names of the property columns.
    pub property_names: Vec<String>,
    /// Property values, one vector (of length `len`) per property.
    pub properties: Vec<Vec<f64>>,
}

/// Which CSV columns a [`Pool`] uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolColumns {
    /// The objective column (maximised).
    pub objective: String,
    /// The abstract-property columns the expert compares.
    pub properties: Vec<String>,
    /// Input columns; `None` means every other column.
    pub inputs: Option<Vec<String>>,
}

impl Pool {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.objective.len()
    }

    /// Whether the pool has no rows (never for a loaded or generated pool).
    pub fn is_empty(&self) -> bool {
        self.objective.is_empty()
    }

    /// Number of input columns.
    pub fn dim(&self) -> usize {
        self.input_names.len()
    }

    /// Row with the largest objective (the first on ties), the regret reference of A14.
    pub fn best_row(&self) -> usize {
        self.objective
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &v)| {
                if v > bv { (i, v) } else { (bi, bv) }
            })
            .0
    }

    /// The largest objective value.
    pub fn optimum_value(&self) -> f64 {
        self.objective
            .get(self.best_row())
            .copied()
            .unwrap_or(f64::NAN)
    }

    /// Objective of row `row` (0-based); errors name `row` and the allowed range.
    pub fn objective_at(&self, row: usize) -> Result<f64> {
        self.objective.get(row).copied().ok_or_else(|| {
            Error::invalid("row", format!("must be in 0..{}, got {row}", self.len()))
        })
    }

    /// Inputs min–max scaled per column to `[0, 1]` (a constant column maps to 0.5).
    pub fn unit_inputs(&self) -> Vec<Vec<f64>> {
        let d = self.dim();
        let (mut lo, mut hi) = (vec![f64::INFINITY; d], vec![f64::NEG_INFINITY; d]);
        for r in &self.inputs {
            for j in 0..d {
                lo[j] = lo[j].min(r[j]);
                hi[j] = hi[j].max(r[j]);
            }
        }
        self.inputs
            .iter()
            .map(|r| {
                (0..d)
                    .map(|j| {
                        if hi[j] > lo[j] {
                            (r[j] - lo[j]) / (hi[j] - lo[j])
                        } else {
                            0.5
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// The pool as a candidate space (names `row 1`, `row 2`, … in data-row order; features
    /// from [`Pool::unit_inputs`]).
    pub fn space(&self) -> Result<Space> {
        let s = Space::Candidates {
            names: (1..=self.len()).map(|i| format!("row {i}")).collect(),
            features: self.unit_inputs(),
        };
        s.validate()?;
        Ok(s)
    }

    /// The pool as CSV: header `inputs…, objective, properties…`, then one line per row
    /// (shortest round-trip decimal form, so [`Pool::parse_csv`] reads it back exactly).
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let mut header: Vec<&str> = self.input_names.iter().map(String::as_str).collect();
        header.push(&self.objective_name);
        header.extend(self.property_names.iter().map(String::as_str));
        out.push_str(&header.join(","));
        out.push('\n');
        for r in 0..self.len() {
            let mut f: Vec<String> = self.inputs[r].iter().map(|v| v.to_string()).collect();
            f.push(self.objective[r].to_string());
            f.extend(self.properties.iter().map(|p| p[r].to_string()));
            out.push_str(&f.join(","));
            out.push('\n');
        }
        out
    }

    /// The columns to pass to [`Pool::parse_csv`] to read [`Pool::to_csv`] back.
    pub fn columns(&self) -> PoolColumns {
        PoolColumns {
            objective: self.objective_name.clone(),
            properties: self.property_names.clone(),
            inputs: Some(self.input_names.clone()),
        }
    }

    /// Read a pool CSV file (see [`Pool::parse_csv`]); errors name the path when it cannot
    /// be read.
    pub fn load_csv(path: &Path, columns: &PoolColumns) -> Result<Pool> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::invalid("pool", format!("cannot read {}: {e}", path.display())))?;
        Pool::parse_csv(&text, &path.display().to_string(), columns)
    }

    /// Parse a comma-separated pool: a header row of column names, then one data row per
    /// design. Blank lines are skipped; fields are trimmed and may be wrapped in double
    /// quotes (no embedded commas). Only the columns used must be numeric; every used value
    /// must be a finite number. Errors name `source`, the **file line** (1-based, header =
    /// line 1) and the **data row** (1-based, blank lines not counted), and the column.
    pub fn parse_csv(text: &str, source: &str, columns: &PoolColumns) -> Result<Pool> {
        let clean = |s: &str| -> String {
            let s = s.trim();
            s.strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .unwrap_or(s)
                .trim()
                .to_string()
        };
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((h_idx, h_line)) = lines.next() else {
            return Err(Error::invalid(source, "is empty: a header row is needed"));
        };
        let header: Vec<String> = h_line.split(',').map(clean).collect();
        for (k, name) in header.iter().enumerate() {
            let at = format!("{source} line {}, column {}", h_idx + 1, k + 1);
            if name.is_empty() {
                return Err(Error::invalid(at, "empty column name"));
            }
            if header[..k].contains(name) {
                return Err(Error::invalid(
                    at,
                    format!("duplicate column name `{name}`"),
                ));
            }
        }
        let find = |name: &str| -> Result<usize> {
            header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| Error::unknown(&format!("column of {source}"), name, &header))
        };
        let obj = find(&columns.objective)?;
        let props: Vec<usize> = columns
            .properties
            .iter()
            .map(|p| find(p))
            .collect::<Result<_>>()?;
        let used: Vec<usize> = std::iter::once(obj).chain(props.iter().copied()).collect();
        for (k, &c) in used.iter().enumerate() {
            if used[..k].contains(&c) {
                return Err(Error::invalid(
                    "properties",
                    format!("column `{}` is used twice", header[c]),
                ));
            }
        }
        let ins: Vec<usize> = match &columns.inputs {
            Some(names) => {
                let ins: Vec<usize> = names.iter().map(|n| find(n)).collect::<Result<_>>()?;
                for (k, &c) in ins.iter().enumerate() {
                    if used.contains(&c) || ins[..k].contains(&c) {
                        return Err(Error::invalid(
                            "inputs",
                            format!(
                                "column `{}` is listed twice or is the objective or a property",
                                header[c]
                            ),
                        ));
                    }
                }
                ins
            }
            None => (0..header.len()).filter(|c| !used.contains(c)).collect(),
        };
        if ins.is_empty() {
            return Err(Error::invalid(
                "inputs",
                format!("{source} has no input column besides the objective and properties"),
            ));
        }
        let mut pool = Pool {
            source: source.to_string(),
            input_names: ins.iter().map(|&c| header[c].clone()).collect(),
            inputs: Vec::new(),
            objective_name: header[obj].clone(),
            objective: Vec::new(),
            property_names: props.iter().map(|&c| header[c].clone()).collect(),
            properties: vec![Vec::new(); props.len()],
        };
        for (row0, (idx, line)) in lines.enumerate() {
            let (line_no, row) = (idx + 1, row0 + 1);
            let at = format!("{source} line {line_no} (data row {row})");
            let fields: Vec<String> = line.split(',').map(clean).collect();
            if fields.len() != header.len() {
                return Err(Error::invalid(
                    at,
                    format!(
                        "has {} fields but the header has {}",
                        fields.len(),
                        header.len()
                    ),
                ));
            }
            let num = |c: usize| -> Result<f64> {
                let s = &fields[c];
                let field = format!("{at}, column `{}`", header[c]);
                if s.is_empty() {
                    return Err(Error::invalid(field, "missing value"));
                }
                s.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| Error::invalid(field, format!("not a finite number: {s:?}")))
            };
            pool.inputs
                .push(ins.iter().map(|&c| num(c)).collect::<Result<_>>()?);
            pool.objective.push(num(obj)?);
            for (p, &c) in pool.properties.iter_mut().zip(&props) {
                p.push(num(c)?);
            }
        }
        if pool.is_empty() {
            return Err(Error::invalid(source, "has a header but no data rows"));
        }
        Ok(pool)
    }
}

impl PropertyTruth for Pool {
    /// The property column names.
    fn property_names(&self) -> Vec<String> {
        self.property_names.clone()
    }
    fn property_value(&self, property: usize, design: &Point) -> Result<f64> {
        let Point::Index(row) = design else {
            return Err(Error::invalid(
                "point",
                "a pool expert judges rows (candidate indices), not unit-cube points",
            ));
        };
        let col = self.properties.get(property).ok_or_else(|| {
            Error::invalid(
                "property",
                format!("must be in 0..{}, got {property}", self.properties.len()),
            )
        })?;
        col.get(*row).copied().ok_or_else(|| {
            Error::invalid("row", format!("must be in 0..{}, got {row}", self.len()))
        })
    }
}

/// Rows of [`synthetic_electrode_pool`] (the paper's 880 averaged settings, §5.2).
pub const ELECTRODE_ROWS: usize = 880;
/// Replicates averaged per row (the paper averages 10 stochastic structures per setting).
pub const ELECTRODE_REPLICATES: usize = 10;

/// A synthetic stand-in for the electrode-calendering pool of the paper's §5.2 (Duquesnoy
/// et al. 2020): 880 rows, 8 process variables, objective `active_surface` (%, maximised),
/// properties `tau_liq` (liquid-phase tortuosity) and `output_porosity`. The formulas are
/// agora's own, chosen to be physically plausible, not fitted to the real data.
///
/// Per row, `u ~ U[0, 1]⁸` (ChaCha stream of `seed`) sets the process variables
/// - `am_fraction = 0.90 + 0.08u₁` (active-material mass fraction),
/// - `cbd_porosity = 0.35 + 0.30u₂` (nanoporosity of the carbon–binder domain, CBD),
/// - `initial_porosity ε₀ = 0.40 + 0.15u₃`,
/// - `calendering_degree ε_cal = 0.30u₄` (fractional thickness reduction),
/// - `roll_temperature T = 25 + 65u₅` (°C),
/// - `particle_radius r = 2 + 8u₆` (µm),
/// - `cbd_adhesion h = u₇`,
/// - `initial_thickness t₀ = 60 + 60u₈` (µm).
///
/// With compressibility `κ = 0.45 + 0.25(T−25)/65 − 0.10h`, CBD share `w = (1 − am)/0.10`,
/// Bruggeman exponent `β = 0.35 + 0.35w(1 − cbd_porosity)/0.65 + 0.30/r + 0.05(t₀−60)/60` and
/// CBD coverage `c = 0.30w(0.6 + 0.4h)`, each of 10 replicates draws `z ~ N(0, I₃)` and gives
/// - `OP = max(1 − (1 − ε₀)/(1 − κε_cal) + 0.01z₁, 0.05)` (solid volume is conserved),
/// - `τ = OP^(−β) · exp(0.03z₂)`,
/// - `AS = 100(1 − c) · OP/(OP + 0.25) · exp(−0.04(τ − 1)) · (1 − 0.4κε_cal·sqrt(2/r)) + 0.5z₃`;
///
/// the row holds the replicate means. Over seeds 0–4 the Pearson correlation of AS with OP
/// is about 0.6 and with τ about −0.85 (checked in the tests: within `[0.45, 0.80]` and
/// `[−0.95, −0.70]`), so both properties inform the objective without determining it.
pub fn synthetic_electrode_pool(seed: u64) -> Pool {
    let mut rng = stream(seed, &[0xE1EC]);
    let mut pool = Pool {
        source: format!("synthetic electrode pool (seed {seed})"),
        input_names: [
            "am_fraction",
            "cbd_porosity",
            "initial_porosity",
            "calendering_degree",
            "roll_temperature",
            "particle_radius",
            "cbd_adhesion",
            "initial_thickness",
        ]
        .map(String::from)
        .to_vec(),
        inputs: Vec::with_capacity(ELECTRODE_ROWS),
        objective_name: "active_surface".into(),
        objective: Vec::with_capacity(ELECTRODE_ROWS),
        property_names: vec!["tau_liq".into(), "output_porosity".into()],
        properties: (0..2).map(|_| Vec::with_capacity(ELECTRODE_ROWS)).collect(),
    };
    for _ in 0..ELECTRODE_ROWS {
        let u: [f64; 8] = std::array::from_fn(|_| rng.random::<f64>());
        let am = 0.90 + 0.08 * u[0];
        let cbd_por = 0.35 + 0.30 * u[1];
        let e0 = 0.40 + 0.15 * u[2];
        let ecal = 0.30 * u[3];
        let temp = 25.0 + 65.0 * u[4];
        let radius = 2.0 + 8.0 * u[5];
        let adh = u[6];
        let t0 = 60.0 + 60.0 * u[7];
        let kappa = 0.45 + 0.25 * (temp - 25.0) / 65.0 - 0.10 * adh;
        let w = (1.0 - am) / 0.10;
        let beta =
            0.35 + 0.35 * w * (1.0 - cbd_por) / 0.65 + 0.30 / radius + 0.05 * (t0 - 60.0) / 60.0;
        let cover = 0.30 * w * (0.6 + 0.4 * adh);
        let (mut s_as, mut s_op, mut s_tau) = (0.0, 0.0, 0.0);
        for _ in 0..ELECTRODE_REPLICATES {
            let z: [f64; 3] = std::array::from_fn(|_| StandardNormal.sample(&mut rng));
            let op = (1.0 - (1.0 - e0) / (1.0 - kappa * ecal) + 0.01 * z[0]).max(0.05);
            let tau = op.powf(-beta) * (0.03 * z[1]).exp();
            let access = op / (op + 0.25) * (-0.04 * (tau - 1.0)).exp();
            let contact = 1.0 - 0.4 * kappa * ecal * (2.0 / radius).sqrt();
            s_as += 100.0 * (1.0 - cover) * access * contact + 0.5 * z[2];
            s_op += op;
            s_tau += tau;
        }
        let n = ELECTRODE_REPLICATES as f64;
        pool.inputs
            .push(vec![am, cbd_por, e0, ecal, temp, radius, adh, t0]);
        pool.objective.push(s_as / n);
        pool.properties[0].push(s_tau / n);
        pool.properties[1].push(s_op / n);
    }
    pool
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(e: Error) -> String {
        match e {
            Error::InvalidInput { field, .. } | Error::Dimension { field, .. } => field,
            Error::UnknownId { id, .. } => id,
            other => format!("{other:?}"),
        }
    }

    fn pearson(a: &[f64], b: &[f64]) -> f64 {
        let n = a.len() as f64;
        let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
        let mut sab = 0.0;
        let (mut saa, mut sbb) = (0.0, 0.0);
        for (x, y) in a.iter().zip(b) {
            sab += (x - ma) * (y - mb);
            saa += (x - ma) * (x - ma);
            sbb += (y - mb) * (y - mb);
        }
        sab / (saa * sbb).sqrt()
    }

    /// Every point of the grid with `k` points per axis over `bounds`, with its value.
    fn grid_max(f: &dyn TestFunction, bounds: &[(f64, f64)], k: usize) -> (f64, Vec<f64>) {
        let d = bounds.len();
        let mut idx = vec![0usize; d];
        let mut best = (f64::NEG_INFINITY, Vec::new());
        loop {
            let x: Vec<f64> = idx
                .iter()
                .zip(bounds)
                .map(|(&i, (lo, hi))| lo + (hi - lo) * i as f64 / (k - 1) as f64)
                .collect();
            let v = f.eval(&x);
            if v > best.0 {
                best = (v, x);
            }
            let mut j = 0;
            while j < d {
                idx[j] += 1;
                if idx[j] < k {
                    break;
                }
                idx[j] = 0;
                j += 1;
            }
            if j == d {
                return best;
            }
        }
    }

    #[test]
    fn benchmark1d_optimum_matches_a_dense_grid() {
        let f = BoapBenchmark::Benchmark1d.function();
        // Spacing 1e-5 on [0, 10]: the grid maximum is within ½|f″|h² ≈ 1e-10 of the true one.
        let (v, x) = grid_max(f.as_ref(), &f.bounds(), 1_000_001);
        assert!(
            v <= f.optimum_value() + 1e-12,
            "grid {v} above the stated maximum"
        );
        assert!(
            f.optimum_value() - v < 1e-9,
            "grid {v} vs {}",
            f.optimum_value()
        );
        assert!((x[0] - BENCHMARK1D_ARGMAX).abs() < 1e-5);
        assert!((f.eval(&[BENCHMARK1D_ARGMAX]) - BENCHMARK1D_MAX).abs() < 1e-15);
        // The note's rounded check value.
        assert!((f.optimum_value() - 1.40190).abs() < 1e-5);
    }

    #[test]
    fn rosenbrock_and_griewank_optima_hold_on_grids() {
        for (bench, boxes) in [
            (
                BoapBenchmark::Rosenbrock3d,
                vec![(BoapBenchmark::Rosenbrock3d.bounds(), 65)],
            ),
            (
                BoapBenchmark::Griewank5d,
                vec![
                    (BoapBenchmark::Griewank5d.bounds(), 13),
                    (vec![(-6.0, 6.0); 5], 13),
                ],
            ),
        ] {
            let f = bench.function();
            for opt in f.optimizers() {
                assert_eq!(f.eval(&opt), f.optimum_value());
                assert!(
                    opt.iter()
                        .zip(f.bounds())
                        .all(|(v, (lo, hi))| lo <= *v && *v <= hi)
                );
            }
            for (b, k) in boxes {
                let (v, _) = grid_max(f.as_ref(), &b, k);
                assert!(v <= f.optimum_value(), "{bench:?}: grid {v}");
            }
        }
        // Rosenbrock: a grid through (1, 1, 1) (step 1/16 from −2) finds it exactly.
        let f = BoapBenchmark::Rosenbrock3d.function();
        let (v, x) = grid_max(f.as_ref(), &[(-2.0, 2.0); 3], 65);
        assert_eq!((v, x), (0.0, vec![1.0; 3]));
        // Griewank: the grid on [−6, 6]⁵ (step 1) includes the origin and nothing beats it.
        let g = BoapBenchmark::Griewank5d.function();
        let (v, x) = grid_max(g.as_ref(), &[(-6.0, 6.0); 5], 13);
        assert_eq!((v, x), (0.0, vec![0.0; 5]));
    }

    #[test]
    fn settings_follow_the_paper() {
        let b = BoapBenchmark::Griewank5d;
        assert_eq!((b.dim(), b.initial_designs(), b.budget()), (5, 8, 55));
        let b = BoapBenchmark::Rosenbrock3d;
        assert_eq!((b.initial_designs(), b.budget()), (6, 35));
        assert_eq!(BoapBenchmark::Benchmark1d.budget(), 15);
        for b in BoapBenchmark::ALL {
            assert_eq!(BoapBenchmark::by_name(b.name()).unwrap(), b);
            let p = b.problem().unwrap();
            assert_eq!(p.function.dim(), b.dim());
            let centre = vec![0.5; b.dim()];
            assert!(p.regret_at_unit(&centre).unwrap() >= 0.0);
        }
        assert!(BoapBenchmark::by_name("ackley").is_err());
        // Signs: Rosenbrock and Griewank are the negated standard forms.
        let r = BoapBenchmark::Rosenbrock3d.function();
        assert_eq!(r.eval(&[0.0, 0.0, 0.0]), -2.0);
        let g = BoapBenchmark::Griewank5d.function();
        let x = [100.0, 0.0, 0.0, 0.0, 0.0];
        assert!((g.eval(&x) + (2.5 - 100f64.cos() + 1.0)).abs() < 1e-12);
    }

    #[test]
    fn features_follow_tables_1_and_2() {
        use BoapBenchmark::*;
        use Features::*;
        let p = |b: BoapBenchmark, f, i, x: &[f64]| b.property(f, i, x).unwrap();
        assert_eq!(p(Benchmark1d, Accurate, 0, &[2.0]), 1.0);
        assert!((p(Benchmark1d, Accurate, 0, &[3.0]) - (-1f64).exp()).abs() < 1e-15);
        assert_eq!(p(Benchmark1d, Accurate, 1, &[0.0]), 1.0);
        // ω₂ = 1/(x²+1) orders (0, 10] as the paper's 1/x² does.
        for (a, b) in [(0.5, 3.0), (1.0, 1.5), (7.0, 9.9)] {
            assert!(p(Benchmark1d, Accurate, 1, &[a]) > p(Benchmark1d, Accurate, 1, &[b]));
            assert!(1.0 / (a * a) > 1.0 / (b * b));
        }
        let x = [0.5, -1.0, 2.0];
        assert_eq!(
            p(Rosenbrock3d, Accurate, 0, &x),
            (2.0f64 - 1.0).powi(2) + (-1.25f64).powi(2)
        );
        assert_eq!(p(Rosenbrock3d, Accurate, 1, &x), 4.0 + 0.25);
        let y = [1.0, -2.0, 0.5, 0.0, 3.0];
        assert_eq!(p(Griewank5d, Accurate, 0, &y), 1.0 + 4.0 + 0.25 + 9.0);
        let prod = 1f64.cos() * (-2f64).cos() * 0.5f64.cos() * 3f64.cos();
        assert!((p(Griewank5d, Accurate, 1, &y) - prod).abs() < 1e-15);
        // Table 2, summed over coordinates.
        assert_eq!(p(Benchmark1d, Inaccurate, 0, &[1.3]), 1.3f64.sin());
        assert_eq!(p(Benchmark1d, Inaccurate, 1, &[1.3]), 1.3f64.cos());
        let sin_sum: f64 = x.iter().map(|v| v.sin()).sum();
        let cos_sum: f64 = x.iter().map(|v| v.cos()).sum();
        assert!((p(Rosenbrock3d, Inaccurate, 0, &x) - sin_sum).abs() < 1e-15);
        assert!((p(Rosenbrock3d, Inaccurate, 1, &x) - cos_sum).abs() < 1e-15);
        assert_eq!(p(Griewank5d, Inaccurate, 1, &y), 1.0 - 8.0 + 0.125 + 27.0);
        // Bad input names the field.
        assert_eq!(
            field(Griewank5d.property(Accurate, 2, &y).unwrap_err()),
            "property"
        );
        assert_eq!(
            field(Griewank5d.property(Accurate, 0, &x).unwrap_err()),
            "x"
        );
        assert_eq!(
            field(Benchmark1d.property(Accurate, 0, &[f64::NAN]).unwrap_err()),
            "x[0]"
        );
    }

    #[test]
    fn exact_expert_answers_by_the_true_property() {
        let mut e = SimulatedExpert::accurate(BoapBenchmark::Benchmark1d).unwrap();
        // Unit 0.2 ↔ x = 2 (ω₁ = 1), unit 0.5 ↔ x = 5.
        let (a, b) = (Point::Unit(vec![0.2]), Point::Unit(vec![0.5]));
        assert_eq!(e.compare(0, &a, &b).unwrap(), Some(0));
        assert_eq!(e.compare(0, &b, &a).unwrap(), Some(1));
        assert_eq!(e.compare(1, &a, &b).unwrap(), Some(0)); // 1/(x²+1) falls with x
        assert_eq!(e.compare(0, &a, &a).unwrap(), None);
        let q = Query {
            id: 7,
            kind: QueryKind::Compare {
                points: vec![b.clone(), a.clone()],
                rater: Some("omega1".into()),
            },
        };
        let ans = e.answer(&q).unwrap();
        assert_eq!(ans.query_id, 7);
        assert_eq!(
            ans.kind,
            AnswerKind::Choice {
                winner: 1,
                rater: Some("omega1".into())
            }
        );
        let tie = Query {
            id: 8,
            kind: QueryKind::Compare {
                points: vec![a.clone(), a.clone()],
                rater: Some("omega2".into()),
            },
        };
        assert!(matches!(
            e.answer(&tie).unwrap().kind,
            AnswerKind::Tie { .. }
        ));
        let bad = Query {
            id: 9,
            kind: QueryKind::Compare {
                points: vec![a.clone(), b.clone()],
                rater: Some("omega3".into()),
            },
        };
        assert_eq!(field(e.answer(&bad).unwrap_err()), "omega3");
        assert_eq!(
            field(e.compare(0, &Point::Index(0), &a).unwrap_err()),
            "point"
        );
        // The IA expert follows sin x instead: sin 2 > sin 5.
        let mut ia = SimulatedExpert::inaccurate(BoapBenchmark::Benchmark1d).unwrap();
        assert_eq!(ia.compare(0, &a, &b).unwrap(), Some(0));
        let (c, d) = (Point::Unit(vec![0.3]), Point::Unit(vec![0.2])); // x = 3 vs 2
        assert_eq!(ia.compare(1, &c, &d).unwrap(), Some(1)); // cos 3 < cos 2
    }

    #[test]
    fn noisy_expert_flips_at_rate_delta() {
        let n = 20_000;
        for delta in [0.3, 0.05, 0.9] {
            let truth = BenchmarkTruth::new(BoapBenchmark::Rosenbrock3d, Features::Accurate);
            let mut noisy = SimulatedExpert::noisy(truth.unwrap(), delta, 42).unwrap();
            let mut exact = SimulatedExpert::accurate(BoapBenchmark::Rosenbrock3d).unwrap();
            let mut rng = stream(5, &[]);
            let mut flips = 0usize;
            for t in 0..n {
                let a = Point::Unit((0..3).map(|_| rng.random()).collect());
                let b = Point::Unit((0..3).map(|_| rng.random()).collect());
                let i = t % 2;
                let (x, y) = (
                    noisy.compare(i, &a, &b).unwrap(),
                    exact.compare(i, &a, &b).unwrap(),
                );
                flips += usize::from(x != y);
            }
            // Binomial(n, δ): within 5 standard deviations.
            let sd = (n as f64 * delta * (1.0 - delta)).sqrt();
            let dev = (flips as f64 - n as f64 * delta).abs();
            assert!(dev < 5.0 * sd, "δ = {delta}: {flips} flips of {n}");
        }
        // Same seed, same answers.
        let answers = |seed| {
            let t = BenchmarkTruth::new(BoapBenchmark::Benchmark1d, Features::Accurate).unwrap();
            let mut e = SimulatedExpert::noisy(t, 0.3, seed).unwrap();
            (0..50)
                .map(|k| {
                    let a = Point::Unit(vec![k as f64 / 50.0]);
                    e.compare(0, &a, &Point::Unit(vec![0.9])).unwrap()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(answers(1), answers(1));
        assert_ne!(answers(1), answers(2));
        // δ outside [0, 1) is an error naming `delta` and the range.
        for bad in [1.0, -0.1, f64::NAN, 1.5] {
            let t = BenchmarkTruth::new(BoapBenchmark::Benchmark1d, Features::Accurate).unwrap();
            match SimulatedExpert::noisy(t, bad, 0).unwrap_err() {
                Error::InvalidInput { field, reason } => {
                    assert_eq!(field, "delta");
                    assert!(reason.contains("[0, 1)"), "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn electrode_pool_has_the_documented_shape_and_correlations() {
        for seed in 0..5 {
            let p = synthetic_electrode_pool(seed);
            assert_eq!((p.len(), p.dim(), p.properties.len()), (880, 8, 2));
            assert!(p.inputs.iter().flatten().all(|v| v.is_finite()));
            let ranges = [
                (0.90, 0.98),
                (0.35, 0.65),
                (0.40, 0.55),
                (0.0, 0.30),
                (25.0, 90.0),
                (2.0, 10.0),
                (0.0, 1.0),
                (60.0, 120.0),
            ];
            for r in &p.inputs {
                for (v, (lo, hi)) in r.iter().zip(ranges) {
                    assert!(lo <= *v && *v <= hi);
                }
            }
            let r_tau = pearson(&p.objective, &p.properties[0]);
            let r_op = pearson(&p.objective, &p.properties[1]);
            println!("seed {seed}: corr(AS, tau_liq) = {r_tau:.3}, corr(AS, OP) = {r_op:.3}");
            assert!((-0.95..=-0.70).contains(&r_tau), "seed {seed}: {r_tau}");
            assert!((0.45..=0.80).contains(&r_op), "seed {seed}: {r_op}");
            assert!(p.objective.iter().all(|v| (0.0..=100.0).contains(v)));
            assert!(p.properties[1].iter().all(|v| (0.05..1.0).contains(v)));
            assert!(p.properties[0].iter().all(|v| *v >= 1.0));
            let best = p.best_row();
            assert!(p.objective.iter().all(|v| *v <= p.objective[best]));
            assert_eq!(p.optimum_value(), p.objective[best]);
        }
        assert_eq!(synthetic_electrode_pool(3), synthetic_electrode_pool(3));
        assert_ne!(
            synthetic_electrode_pool(3).objective,
            synthetic_electrode_pool(4).objective
        );
        // A pool expert compares property columns by row.
        let p = synthetic_electrode_pool(0);
        let (t0, t1) = (p.properties[0][0], p.properties[0][1]);
        let mut e = SimulatedExpert::exact(p);
        let want = if t0 > t1 { 0 } else { 1 };
        assert_eq!(
            e.compare(0, &Point::Index(0), &Point::Index(1)).unwrap(),
            Some(want)
        );
        assert_eq!(
            field(
                e.compare(0, &Point::Index(0), &Point::Index(880))
                    .unwrap_err()
            ),
            "row"
        );
        assert_eq!(
            field(
                e.compare(2, &Point::Index(0), &Point::Index(1))
                    .unwrap_err()
            ),
            "property"
        );
        let space = e.truth().space().unwrap();
        assert_eq!(space.n_candidates(), Some(880));
        assert_eq!(space.dim(), 8);
    }

    /// A fresh file in the system temp directory (no `tempfile` in the workspace).
    fn temp_file(tag: &str, text: &str) -> std::path::PathBuf {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!(
            "agora-boap-{}-{tag}-{nanos}.csv",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        path
    }

    fn cols(objective: &str, properties: &[&str]) -> PoolColumns {
        PoolColumns {
            objective: objective.into(),
            properties: properties.iter().map(|s| s.to_string()).collect(),
            inputs: None,
        }
    }

    #[test]
    fn pool_csv_round_trips_and_reads_a_simple_file() {
        let p = synthetic_electrode_pool(11);
        let path = temp_file("roundtrip", &p.to_csv());
        let q = Pool::load_csv(&path, &p.columns()).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(
            (q.inputs, q.objective, q.properties),
            (p.inputs, p.objective, p.properties)
        );
        // Quotes, blank lines, CRLF and an unused text column.
        let text = "\"id\",x1, x2 ,y,w\r\n\r\nA,1,2,3,4\r\nB,5,6,7,8\r\n";
        let c = PoolColumns {
            objective: "y".into(),
            properties: vec!["w".into()],
            inputs: Some(vec!["x1".into(), "x2".into()]),
        };
        let q = Pool::parse_csv(text, "t.csv", &c).unwrap();
        assert_eq!(q.inputs, vec![vec![1.0, 2.0], vec![5.0, 6.0]]);
        assert_eq!(
            (q.objective, q.properties),
            (vec![3.0, 7.0], vec![vec![4.0, 8.0]])
        );
        // Default inputs: every column but the objective and properties.
        let q = Pool::parse_csv("a,y,b\n1,2,3\n", "t.csv", &cols("y", &[])).unwrap();
        assert_eq!(
            (q.input_names, q.inputs),
            (vec!["a".into(), "b".into()], vec![vec![1.0, 3.0]])
        );
    }

    #[test]
    fn pool_csv_errors_name_the_line_row_and_column() {
        let c = cols("y", &["w"]);
        let err = |tag: &str, text: &str, c: &PoolColumns| {
            let path = temp_file(tag, text);
            let e = Pool::load_csv(&path, c).unwrap_err();
            std::fs::remove_file(&path).ok();
            (path.display().to_string(), e)
        };
        // Missing value: line 4 is data row 2 (line 3 is blank).
        let (src, e) = err("missing", "x,y,w\n1,2,3\n\n4,,6\n", &c);
        assert_eq!(field(e), format!("{src} line 4 (data row 2), column `y`"));
        let (src, e) = err("text", "x,y,w\n1,2,3\n4,5,abc\n", &c);
        match e {
            Error::InvalidInput { field, reason } => {
                assert_eq!(field, format!("{src} line 3 (data row 2), column `w`"));
                assert!(reason.contains("abc"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        let (src, e) = err("nan", "x,y,w\nNaN,2,3\n", &c);
        assert_eq!(field(e), format!("{src} line 2 (data row 1), column `x`"));
        let (src, e) = err("short", "x,y,w\n1,2,3\n4,5\n", &c);
        assert_eq!(field(e), format!("{src} line 3 (data row 2)"));
        // Unknown columns are named, with the header listed.
        let (_, e) = err("unknown", "x,y,w\n1,2,3\n", &cols("yield", &["w"]));
        match e {
            Error::UnknownId { id, hint, .. } => {
                assert_eq!(id, "yield");
                assert!(hint.contains("x, y, w"), "{hint}");
            }
            other => panic!("{other:?}"),
        }
        let (_, e) = err("unknown-prop", "x,y,w\n1,2,3\n", &cols("y", &["tau"]));
        assert_eq!(field(e), "tau");
        let (src, e) = err("dup", "x,y,x\n1,2,3\n", &c);
        assert_eq!(field(e), format!("{src} line 1, column 3"));
        let (src, e) = err("empty", "\n\n", &c);
        assert_eq!(field(e), src);
        let (src, e) = err("header-only", "x,y,w\n", &c);
        assert_eq!(field(e), src);
        let (_, e) = err("no-inputs", "y,w\n1,2\n", &c);
        assert_eq!(field(e), "inputs");
        let (_, e) = err("twice", "x,y,w\n1,2,3\n", &cols("y", &["y"]));
        assert_eq!(field(e), "properties");
        let missing = std::env::temp_dir().join("agora-boap-no-such-file.csv");
        assert_eq!(field(Pool::load_csv(&missing, &c).unwrap_err()), "pool");
    }
}
