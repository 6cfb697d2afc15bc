//! What the black-box strategies of DSBO's comparison ([`crate::GpUcb`], [`crate::Dsbo`],
//! [`crate::UniformSearch`], [`crate::Turbo`], [`crate::CmaEs`]) share: a continuous box
//! searched in the unit cube, one-point evaluation queries, and the evaluations so far.

use agora_core::{Answer, AnswerKind, Error, Param, Point, Query, QueryKind, Result, Space};
use faer::Mat;
use rand::RngExt;

/// The dimension of `space`, which must be a box of real or log-real parameters (the
/// strategies propose continuous unit-cube points and never snap them).
///
/// Errors: a candidate set, an invalid box, or an integer or categorical parameter
/// (naming `params[i]`).
pub(crate) fn continuous_box(space: &Space) -> Result<usize> {
    let Space::Box { params } = space else {
        return Err(Error::invalid(
            "space",
            "this strategy searches a box of real parameters, not a candidate set",
        ));
    };
    space.validate()?;
    if let Some(i) = params
        .iter()
        .position(|p| !matches!(p, Param::Real { .. } | Param::LogReal { .. }))
    {
        return Err(Error::invalid(
            format!("params[{i}]"),
            "this strategy searches continuous parameters only (real or log-real)",
        ));
    }
    Ok(space.dim())
}

/// A uniform point of the unit cube (one draw per coordinate, in order).
pub(crate) fn uniform_point(rng: &mut agora_math::rng::Rng, d: usize) -> Vec<f64> {
    (0..d).map(|_| rng.random::<f64>()).collect()
}

/// The query evaluating one unit-cube point (clamped to the cube).
pub(crate) fn evaluate_query(id: u64, u: &[f64]) -> Query {
    Query {
        id,
        kind: QueryKind::Evaluate {
            points: vec![Point::Unit(u.iter().map(|v| v.clamp(0.0, 1.0)).collect())],
        },
    }
}

/// The evaluated point and value of an answer already checked against a one-point
/// evaluation query.
pub(crate) fn evaluated(query: &Query, answer: &Answer) -> Result<(Vec<f64>, f64)> {
    match (&query.kind, &answer.kind) {
        (QueryKind::Evaluate { points }, AnswerKind::Values { values }) => {
            match (points.first(), values.first()) {
                (Some(Point::Unit(u)), Some(y)) => Ok((u.clone(), *y)),
                _ => Err(Error::invalid(
                    "values",
                    "needs one value for the one point",
                )),
            }
        }
        _ => Err(Error::invalid(
            "answer",
            "an evaluation query needs `values`",
        )),
    }
}

/// Evaluated unit-cube points and their values, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Evaluations {
    /// The points (unit cube).
    pub unit: Vec<Vec<f64>>,
    /// Their values (larger is better).
    pub ys: Vec<f64>,
}

impl Evaluations {
    /// Record one evaluation.
    pub fn push(&mut self, u: Vec<f64>, y: f64) {
        self.unit.push(u);
        self.ys.push(y);
    }

    /// Number of evaluations.
    pub fn len(&self) -> usize {
        self.ys.len()
    }

    /// The points as an `n × d` matrix.
    pub fn x_mat(&self, d: usize) -> Mat<f64> {
        Mat::from_fn(self.unit.len(), d, |i, j| self.unit[i][j])
    }

    /// The index of the best evaluation (the first on ties).
    fn best_index(&self) -> Option<usize> {
        let ys = &self.ys;
        (0..ys.len()).reduce(|b, i| if ys[i] > ys[b] { i } else { b })
    }

    /// The best point so far.
    pub fn best_unit(&self) -> Option<Vec<f64>> {
        self.best_index().map(|i| self.unit[i].clone())
    }

    /// The best point and its value, as [`crate::Strategy::recommend`] reports it.
    pub fn recommend(&self) -> Option<(Point, f64)> {
        self.best_index()
            .map(|i| (Point::Unit(self.unit[i].clone()), self.ys[i]))
    }
}

/// The [`crate::Strategy`] methods of a strategy that implements [`crate::AskTell`] and
/// keeps its [`Evaluations`] in field `evals`: `ask`/`tell` through [`crate::open`],
/// `recommend`/`n_answered` from the evaluations.
macro_rules! evaluations_strategy {
    () => {
        fn ask(&mut self) -> agora_core::Result<agora_core::Query> {
            crate::open::ask(self)
        }
        fn tell(&mut self, answer: &agora_core::Answer) -> agora_core::Result<()> {
            crate::open::tell(self, answer)
        }
        fn recommend(&self) -> Option<(agora_core::Point, f64)> {
            self.evals.recommend()
        }
        fn n_answered(&self) -> usize {
            self.evals.len()
        }
    };
}
pub(crate) use evaluations_strategy;

/// The [`crate::AskTell`] of a strategy that evaluates `config.n_init` uniform points (from
/// its field `init_rng`) and then its own picks (`fn pick(&mut self) -> Result<Vec<f64>>`),
/// one unit-cube point per query, recording each answer in its [`Evaluations`] `evals`
/// (fields `dim` and `open` as well).
macro_rules! design_then_picks {
    ($t:ty) => {
        impl crate::open::AskTell for $t {
            type Pending = ();

            fn open_query(&mut self) -> &mut crate::open::OpenQuery<()> {
                &mut self.open
            }

            fn propose(&mut self) -> agora_core::Result<(agora_core::Query, ())> {
                let u = if self.evals.len() < self.config.n_init {
                    crate::evaluations::uniform_point(&mut self.init_rng, self.dim)
                } else {
                    self.pick()?
                };
                Ok((
                    crate::evaluations::evaluate_query(self.evals.len() as u64, &u),
                    (),
                ))
            }

            fn record(
                &mut self,
                query: &agora_core::Query,
                _: &(),
                answer: &agora_core::Answer,
            ) -> agora_core::Result<()> {
                let (u, y) = crate::evaluations::evaluated(query, answer)?;
                self.evals.push(u, y);
                Ok(())
            }
        }
    };
}
pub(crate) use design_then_picks;

/// A surrogate's fitted hyperparameters, refitted every `every` new points and reused in
/// between (TuRBO, LineBO).
#[derive(Debug, Clone, Default)]
pub(crate) struct Refits {
    fitted: Option<agora_gp::FittedSurrogate>,
    /// Points the last fit saw.
    n_at_fit: usize,
}

impl Refits {
    /// The GP conditioned on `(x, y)`, its hyperparameters refitted (warm-started from the
    /// last fit, seeded by `seed()`) when none is held or `every` points arrived since the
    /// last fit, else the last fit's. A failed conditioning drops the held fit.
    pub(crate) fn condition(
        &mut self,
        surrogate: &agora_gp::Surrogate,
        x: Mat<f64>,
        y: &[f64],
        every: usize,
        seed: impl FnOnce() -> u64,
    ) -> Result<agora_gp::ExactGp> {
        let n = x.nrows();
        let model = match self.fitted.take() {
            Some(f) if n - self.n_at_fit < every => f,
            prev => {
                let f = agora_gp::FittedSurrogate::fit(surrogate, &x, y, prev.as_ref(), seed())?;
                self.n_at_fit = n;
                f
            }
        };
        let gp = model.condition(x, y)?;
        self.fitted = Some(model);
        Ok(gp)
    }

    /// Forget the fit (a restart).
    pub(crate) fn clear(&mut self) {
        *self = Refits::default();
    }
}
