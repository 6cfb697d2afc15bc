//! Search spaces and their mapping to the unit cube that models work on.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// One parameter of a box space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Param {
    /// A real number in `[lo, hi]`, mapped linearly to one unit coordinate.
    Real {
        /// Name shown to users.
        name: String,
        /// Lower bound.
        lo: f64,
        /// Upper bound (> lo).
        hi: f64,
    },
    /// A positive real in `[lo, hi]`, mapped linearly in `ln x` (for rates, scales).
    LogReal {
        /// Name shown to users.
        name: String,
        /// Lower bound (> 0).
        lo: f64,
        /// Upper bound (> lo).
        hi: f64,
    },
    /// An integer in `[lo, hi]`; each integer owns an equal slice of the unit coordinate.
    Integer {
        /// Name shown to users.
        name: String,
        /// Lower bound.
        lo: i64,
        /// Upper bound (>= lo).
        hi: i64,
    },
    /// One of several named choices, one-hot encoded (one unit coordinate per choice; the
    /// largest coordinate wins when decoding).
    Categorical {
        /// Name shown to users.
        name: String,
        /// The choices (at least one, all distinct).
        choices: Vec<String>,
    },
}

impl Param {
    /// The parameter's name.
    pub fn name(&self) -> &str {
        match self {
            Param::Real { name, .. }
            | Param::LogReal { name, .. }
            | Param::Integer { name, .. }
            | Param::Categorical { name, .. } => name,
        }
    }

    /// Number of unit-cube coordinates this parameter occupies.
    pub fn width(&self) -> usize {
        match self {
            Param::Categorical { choices, .. } => choices.len(),
            _ => 1,
        }
    }

    fn validate(&self, i: usize) -> Result<()> {
        let field = |f: &str| format!("params[{i}].{f}");
        match self {
            Param::Real { lo, hi, .. } => {
                crate::check_finite(&field("lo"), *lo)?;
                crate::check_finite(&field("hi"), *hi)?;
                if lo >= hi {
                    return Err(Error::invalid(
                        field("hi"),
                        format!("must be greater than lo = {lo}, got {hi}"),
                    ));
                }
            }
            Param::LogReal { lo, hi, .. } => {
                crate::check_finite(&field("lo"), *lo)?;
                crate::check_finite(&field("hi"), *hi)?;
                if *lo <= 0.0 {
                    return Err(Error::invalid(
                        field("lo"),
                        format!("a log-real parameter needs lo > 0, got {lo}"),
                    ));
                }
                if lo >= hi {
                    return Err(Error::invalid(
                        field("hi"),
                        format!("must be greater than lo = {lo}, got {hi}"),
                    ));
                }
            }
            Param::Integer { lo, hi, .. } => {
                if lo > hi {
                    return Err(Error::invalid(
                        field("hi"),
                        format!("must be at least lo = {lo}, got {hi}"),
                    ));
                }
                if (*hi as i128 - *lo as i128) >= (1i128 << 52) {
                    return Err(Error::invalid(
                        field("hi"),
                        format!(
                            "integer ranges must span fewer than 2^52 values, got [{lo}, {hi}]"
                        ),
                    ));
                }
            }
            Param::Categorical { choices, .. } => {
                if choices.is_empty() {
                    return Err(Error::invalid(
                        field("choices"),
                        "needs at least one choice",
                    ));
                }
                for (a, c) in choices.iter().enumerate() {
                    if choices[..a].contains(c) {
                        return Err(Error::invalid(
                            field("choices"),
                            format!("choice `{c}` appears twice"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A value in user units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum ParamValue {
    /// Real or log-real value.
    Float(f64),
    /// Integer value.
    Int(i64),
    /// Categorical choice.
    Choice(String),
}

/// What a strategy may propose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Space {
    /// A product of parameters; models see the unit cube `[0, 1]^dim`.
    Box {
        /// The parameters, in order.
        params: Vec<Param>,
    },
    /// A finite set of candidates (rows of a CSV, teams, grid cells), each with a feature
    /// vector in `[0, 1]^dim` that models use; proposals are candidate indices.
    Candidates {
        /// Candidate names (one per row).
        names: Vec<String>,
        /// Feature rows, all the same length, already scaled to the unit cube.
        features: Vec<Vec<f64>>,
    },
}

impl Space {
    /// A box of real parameters `x0, x1, ...` with the given bounds, validated.
    pub fn reals(bounds: &[(f64, f64)]) -> Result<Space> {
        let params = bounds
            .iter()
            .enumerate()
            .map(|(i, &(lo, hi))| Param::Real {
                name: format!("x{i}"),
                lo,
                hi,
            })
            .collect();
        Space::boxed(params)
    }

    /// A validated box space.
    pub fn boxed(params: Vec<Param>) -> Result<Space> {
        let s = Space::Box { params };
        s.validate()?;
        Ok(s)
    }

    /// Check every bound, choice and feature row; errors name the field.
    pub fn validate(&self) -> Result<()> {
        match self {
            Space::Box { params } => {
                if params.is_empty() {
                    return Err(Error::invalid(
                        "params",
                        "a box space needs at least one parameter",
                    ));
                }
                for (i, p) in params.iter().enumerate() {
                    if p.name().trim().is_empty() {
                        return Err(Error::invalid(
                            format!("params[{i}].name"),
                            "a parameter needs a name (people see it beside its value)",
                        ));
                    }
                    if params[..i].iter().any(|q| q.name() == p.name()) {
                        return Err(Error::invalid(
                            format!("params[{i}].name"),
                            format!(
                                "parameter names must be distinct; `{}` appears twice",
                                p.name()
                            ),
                        ));
                    }
                    p.validate(i)?;
                }
            }
            Space::Candidates { names, features } => {
                if features.is_empty() {
                    return Err(Error::invalid(
                        "features",
                        "a candidate set needs at least one row",
                    ));
                }
                if names.len() != features.len() {
                    return Err(Error::dim("names", features.len(), names.len()));
                }
                let d = features[0].len();
                if d == 0 {
                    return Err(Error::invalid("features[0]", "needs at least one feature"));
                }
                for (i, row) in features.iter().enumerate() {
                    if row.len() != d {
                        return Err(Error::dim(format!("features[{i}]"), d, row.len()));
                    }
                    crate::check_finite_slice(&format!("features[{i}]"), row)?;
                }
            }
        }
        Ok(())
    }

    /// Dimension of the model space (unit-cube coordinates or feature length).
    pub fn dim(&self) -> usize {
        match self {
            Space::Box { params } => params.iter().map(Param::width).sum(),
            Space::Candidates { features, .. } => features.first().map_or(0, Vec::len),
        }
    }

    /// Number of candidates for a finite set, `None` for a box.
    pub fn n_candidates(&self) -> Option<usize> {
        match self {
            Space::Box { .. } => None,
            Space::Candidates { features, .. } => Some(features.len()),
        }
    }

    /// Map a unit-cube point to user units. Coordinates are clamped to `[0, 1]`.
    pub fn to_user(&self, u: &[f64]) -> Result<Vec<ParamValue>> {
        let Space::Box { params } = self else {
            return Err(Error::invalid(
                "space",
                "to_user needs a box space; candidate sets use indices",
            ));
        };
        if u.len() != self.dim() {
            return Err(Error::dim("point", self.dim(), u.len()));
        }
        crate::check_finite_slice("point", u)?;
        let mut out = Vec::with_capacity(params.len());
        let mut k = 0;
        for p in params {
            let c = |j: usize| u[j].clamp(0.0, 1.0);
            let v = match p {
                Param::Real { lo, hi, .. } => ParamValue::Float(lo + c(k) * (hi - lo)),
                Param::LogReal { lo, hi, .. } => {
                    ParamValue::Float((lo.ln() + c(k) * (hi.ln() - lo.ln())).exp().clamp(*lo, *hi))
                }
                Param::Integer { lo, hi, .. } => {
                    let span = (hi - lo + 1) as f64;
                    let i = (c(k) * span).floor().min(span - 1.0) as i64;
                    ParamValue::Int(lo + i)
                }
                Param::Categorical { choices, .. } => {
                    let mut best = 0;
                    for j in 1..choices.len() {
                        if u[k + j] > u[k + best] {
                            best = j;
                        }
                    }
                    ParamValue::Choice(choices[best].clone())
                }
            };
            k += p.width();
            out.push(v);
        }
        Ok(out)
    }

    /// Map a unit-cube point to real user-unit coordinates (box spaces of real, log-real
    /// and integer parameters only): what test functions take.
    pub fn to_user_reals(&self, u: &[f64]) -> Result<Vec<f64>> {
        self.to_user(u)?
            .into_iter()
            .enumerate()
            .map(|(i, v)| match v {
                ParamValue::Float(x) => Ok(x),
                ParamValue::Int(x) => Ok(x as f64),
                ParamValue::Choice(_) => Err(Error::invalid(
                    format!("params[{i}]"),
                    "categorical parameter has no real value",
                )),
            })
            .collect()
    }

    /// Map user-unit values back to the unit cube (the centre of an integer's slice; a
    /// one-hot block for a choice). Errors name the parameter and its allowed values.
    pub fn from_user(&self, values: &[ParamValue]) -> Result<Vec<f64>> {
        let Space::Box { params } = self else {
            return Err(Error::invalid("space", "from_user needs a box space"));
        };
        if values.len() != params.len() {
            return Err(Error::dim("values", params.len(), values.len()));
        }
        let mut u = Vec::with_capacity(self.dim());
        for (p, v) in params.iter().zip(values) {
            let name = p.name();
            let range = |x: f64, lo: f64, hi: f64| -> Result<f64> {
                if !x.is_finite() || x < lo || x > hi {
                    return Err(Error::invalid(
                        name,
                        format!("must lie in [{lo}, {hi}], got {x}"),
                    ));
                }
                Ok(x)
            };
            match (p, v) {
                (Param::Real { lo, hi, .. }, ParamValue::Float(x)) => {
                    u.push((range(*x, *lo, *hi)? - lo) / (hi - lo))
                }
                (Param::Real { lo, hi, .. }, ParamValue::Int(x)) => {
                    u.push((range(*x as f64, *lo, *hi)? - lo) / (hi - lo))
                }
                (Param::LogReal { lo, hi, .. }, ParamValue::Float(x)) => {
                    let x = range(*x, *lo, *hi)?;
                    u.push((x.ln() - lo.ln()) / (hi.ln() - lo.ln()))
                }
                (Param::Integer { lo, hi, .. }, ParamValue::Int(x)) => {
                    range(*x as f64, *lo as f64, *hi as f64)?;
                    u.push(((x - lo) as f64 + 0.5) / ((hi - lo + 1) as f64))
                }
                (Param::Categorical { choices, .. }, ParamValue::Choice(c)) => {
                    let Some(j) = choices.iter().position(|x| x == c) else {
                        return Err(Error::invalid(
                            name,
                            format!("unknown choice `{c}`; allowed: {}", choices.join(", ")),
                        ));
                    };
                    u.extend((0..choices.len()).map(|i| if i == j { 1.0 } else { 0.0 }));
                }
                _ => {
                    return Err(Error::invalid(
                        name,
                        format!("value {v:?} has the wrong type for this parameter"),
                    ));
                }
            }
        }
        Ok(u)
    }

    /// Snap a unit-cube point to a representable one: integers to their slice centre,
    /// categoricals to an exact one-hot. Models then see exactly what was evaluated.
    pub fn canonicalize(&self, u: &[f64]) -> Result<Vec<f64>> {
        let values = self.to_user(u)?;
        self.from_user(&values)
    }

    /// For each unit-cube coordinate of a box, whether it is continuous (real or log-real).
    /// Integer and categorical coordinates are piecewise constant after [`Space::canonicalize`].
    pub fn continuous_mask(&self) -> Vec<bool> {
        match self {
            Space::Box { params } => params
                .iter()
                .flat_map(|p| {
                    let c = matches!(p, Param::Real { .. } | Param::LogReal { .. });
                    std::iter::repeat_n(c, p.width())
                })
                .collect(),
            Space::Candidates { features, .. } => vec![false; features.first().map_or(0, Vec::len)],
        }
    }

    /// The discrete parameters of a box as `(first coordinate, encodings)`: every value an
    /// integer (at most `max_values` of them; wider ranges are left out) or categorical
    /// parameter can take, encoded as its block of unit-cube coordinates.
    pub fn discrete_blocks(&self, max_values: usize) -> Vec<(usize, Vec<Vec<f64>>)> {
        let Space::Box { params } = self else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut k = 0;
        for p in params {
            match p {
                Param::Integer { lo, hi, .. } if ((hi - lo) as u64) < max_values as u64 => {
                    let span = (hi - lo + 1) as f64;
                    let enc = (0..=(hi - lo))
                        .map(|i| vec![(i as f64 + 0.5) / span])
                        .collect();
                    out.push((k, enc));
                }
                Param::Categorical { choices, .. } => {
                    let n = choices.len();
                    let enc = (0..n)
                        .map(|j| (0..n).map(|i| if i == j { 1.0 } else { 0.0 }).collect())
                        .collect();
                    out.push((k, enc));
                }
                _ => {}
            }
            k += p.width();
        }
        out
    }

    /// Feature vector of candidate `index` (finite sets only).
    pub fn candidate(&self, index: usize) -> Result<&[f64]> {
        match self {
            Space::Candidates { features, .. } => {
                features.get(index).map(Vec::as_slice).ok_or_else(|| {
                    Error::invalid(
                        "candidate",
                        format!("index {index} out of range 0..{}", features.len()),
                    )
                })
            }
            Space::Box { .. } => Err(Error::invalid("space", "a box space has no candidates")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mixed() -> Space {
        Space::boxed(vec![
            Param::Real {
                name: "a".into(),
                lo: -5.0,
                hi: 10.0,
            },
            Param::LogReal {
                name: "lr".into(),
                lo: 1e-4,
                hi: 1e-1,
            },
            Param::Integer {
                name: "n".into(),
                lo: 1,
                hi: 4,
            },
            Param::Categorical {
                name: "c".into(),
                choices: vec!["x".into(), "y".into(), "z".into()],
            },
        ])
        .unwrap()
    }

    #[test]
    fn round_trip_through_user_units() {
        let s = mixed();
        assert_eq!(s.dim(), 6);
        let u = [0.5, 0.5, 0.9, 0.1, 0.7, 0.2];
        let v = s.to_user(&u).unwrap();
        assert_eq!(v[0], ParamValue::Float(2.5));
        match v[1] {
            ParamValue::Float(x) => assert!((x - 10f64.powf(-2.5)).abs() < 1e-12),
            _ => panic!("log-real decodes to a float"),
        }
        assert_eq!(v[2], ParamValue::Int(4));
        assert_eq!(v[3], ParamValue::Choice("y".into()));
        let back = s.from_user(&v).unwrap();
        assert!((back[0] - 0.5).abs() < 1e-12 && (back[1] - 0.5).abs() < 1e-12);
        assert_eq!(&back[2..], &[0.875, 0.0, 1.0, 0.0]);
    }

    /// A parameter without a name, or two with one name, is refused (the API fuzzer found
    /// a box with an empty name accepted).
    #[test]
    fn parameters_need_distinct_names() {
        let real = |name: &str| Param::Real {
            name: name.into(),
            lo: 0.0,
            hi: 1.0,
        };
        let e = Space::boxed(vec![real("a"), real(" ")]).unwrap_err();
        assert!(e.to_string().contains("params[1].name"), "{e}");
        let e = Space::boxed(vec![real("a"), real("b"), real("a")]).unwrap_err();
        assert!(e.to_string().contains("params[2].name") && e.to_string().contains("`a`"));
        assert!(Space::boxed(vec![real("a"), real("b")]).is_ok());
    }

    #[test]
    fn bad_bounds_name_the_field() {
        let e = Space::reals(&[(0.0, 1.0), (2.0, 2.0)]).unwrap_err();
        assert!(e.to_string().contains("params[1].hi"), "{e}");
        let e = Space::reals(&[(f64::NAN, 1.0)]).unwrap_err();
        assert!(e.to_string().contains("params[0].lo"), "{e}");
        let e = mixed().from_user(&[
            ParamValue::Float(0.0),
            ParamValue::Float(0.01),
            ParamValue::Int(2),
            ParamValue::Choice("w".into()),
        ]);
        assert!(e.unwrap_err().to_string().contains("allowed: x, y, z"));
        assert!(matches!(
            mixed().to_user(&[0.5]),
            Err(Error::Dimension { .. })
        ));
    }
}
