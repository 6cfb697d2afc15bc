//! Social BO's GP variant (App. F.1; docs/notes/social-bo.md §2.7): agents rate options
//! directly (`u^{(i)}_t = u^{(i)}(x_t) + ξ_t`, Assumption F.1), publicly (`v = A u`) or
//! privately (`u`).
//!
//! - The public utilities get the multi-task prior induced by the graph,
//!   `v(x, :) ~ N(0, k_X(x, x) A K_E Aᵀ)` (Eqs. 149–150), with `K_E = I` and per-agent output
//!   scales: the task covariance is `diag(s) corr(Â Âᵀ) diag(s)` from the previous estimate
//!   `Â` (the identity before one exists), and the data are isotopic (every agent rates every
//!   public option), so [`crate::Icm`] conditions on them exactly.
//! - `B = (A + λI)⁻¹` (`u(x, :) ≈ B v(x, :)`, λ = 1e−4) is estimated by maximizing the
//!   predictive log-likelihood of the private ratings under the public posterior (Eq. 151),
//!   with every row of `B` held to its exact sum `1/(1 + λ)` (`A` is row-stochastic) and the
//!   public posterior's cross-agent covariance kept; Laplace: `P(B | D) ≈ N(B̂, Λ⁻¹)` on that
//!   subspace ([`estimate`]).
//! - Corollary F.2: `μ^{u(i)}(x) = B̂(i, :) m^v(x)` and the variance of `b_iᵀ v(x, :)` with
//!   `v(x, :)`'s full posterior covariance across agents and each row's full Laplace
//!   covariance ([`propagate`](mod@propagate)); [`UPrediction`] splits it into the part due to `B` and the
//!   part due to `v`, which drive the private-rating rule, and keeps the covariance across
//!   agents for the welfare.

pub mod estimate;
pub mod propagate;

pub use estimate::{BFit, estimate_b, tangent_basis};
pub use propagate::{UMoments, propagate};

use crate::icm::{Icm, profile_fit};
use crate::kernel::Kernel;
use agora_core::{Error, Result};
use faer::linalg::solvers::Solve;
use faer::{Mat, MatRef};

/// Settings of [`SocialGp`].
#[derive(Debug, Clone, PartialEq)]
pub struct SocialGpConfig {
    /// `λ` of `B = (A + λI)⁻¹` (finite, `≥ 0`).
    pub lambda: f64,
    /// Prior standard deviation `τ` of each `b_ij` around `B` for `A = I` (finite, `> 0`).
    pub b_prior_sd: f64,
    /// Smallest output scale and noise floor of the hyperparameter fit.
    pub floor: f64,
    /// Floor `δ_A` of the entries of the reported graph `Â` (`0 ≤ δ_A < 1/n`).
    pub delta: f64,
}

impl Default for SocialGpConfig {
    fn default() -> Self {
        SocialGpConfig {
            lambda: 1e-4,
            b_prior_sd: 1.0,
            floor: 1e-8,
            delta: 0.01,
        }
    }
}

impl SocialGpConfig {
    /// Errors name `lambda`, `b_prior_sd`, `delta` or `agents` (for `n` agents) and their
    /// allowed values.
    pub fn validate(&self, n: usize) -> Result<()> {
        if n == 0 {
            return Err(Error::invalid(
                "agents",
                "needs at least one agent (n >= 1)",
            ));
        }
        if !(self.lambda.is_finite() && self.lambda >= 0.0) {
            return Err(Error::invalid(
                "lambda",
                format!("must be finite and >= 0, got {}", self.lambda),
            ));
        }
        if !(self.b_prior_sd.is_finite() && self.b_prior_sd > 0.0) {
            return Err(Error::invalid(
                "b_prior_sd",
                format!("must be finite and > 0, got {}", self.b_prior_sd),
            ));
        }
        if !(self.delta >= 0.0 && self.delta * (n as f64) < 1.0) {
            return Err(Error::invalid(
                "delta",
                format!(
                    "the graph's entry floor must lie in [0, 1/n) = [0, {}), got {}",
                    1.0 / n as f64,
                    self.delta
                ),
            ));
        }
        Ok(())
    }
}

/// Predicted private utilities at some options.
#[derive(Debug, Clone, PartialEq)]
pub struct UPrediction {
    /// `μ^{u(i)}(x) = B̂(i, :) m^v(x)` (`m × n`).
    pub mean: Mat<f64>,
    /// The variance due to `B`'s uncertainty, `m^vᵀ Σ_i m^v + tr(Σ_i Σ_v)` (`m × n`).
    pub var_b: Mat<f64>,
    /// The variance due to `v`'s uncertainty, `b̂_iᵀ Σ_v b̂_i` (`m × n`).
    pub var_v: Mat<f64>,
    /// The covariance of `u(x, :)` across agents at each option (`n × n` each).
    pub cov: Vec<Mat<f64>>,
}

impl UPrediction {
    /// The total variance of agent `i`'s utility at option `k` (`var_b + var_v`).
    pub fn var(&self, k: usize, i: usize) -> f64 {
        self.var_b[(k, i)] + self.var_v[(k, i)]
    }
}

/// The GP variant's model: the public multi-task GP and the Laplace posterior of `B`.
#[derive(Debug, Clone)]
pub struct SocialGp {
    public: Icm,
    b: BFit,
    graph: Mat<f64>,
}

/// The graph `Â = B⁻¹ − λI` implied by `b`, with rows clipped at `δ` and renormalized
/// (row-stochastic, entries ≥ δ up to the renormalization). Errors, naming `B̂`, when `b` has
/// a non-finite entry, is singular to working precision (1-norm condition number above
/// 1e12), or implies a row with no entry above the floor (possible only for `δ = 0`).
pub fn graph_of(b: MatRef<'_, f64>, lambda: f64, delta: f64) -> Result<Mat<f64>> {
    let n = b.nrows();
    if b.ncols() != n {
        return Err(Error::dim("B̂ columns", n, b.ncols()));
    }
    for i in 0..n {
        for j in 0..n {
            if !b[(i, j)].is_finite() {
                return Err(Error::invalid(
                    "B̂",
                    format!(
                        "entry [{i}][{j}] is {}: no graph A = B̂⁻¹ − λI can be formed",
                        b[(i, j)]
                    ),
                ));
            }
        }
    }
    let inv = b.partial_piv_lu().solve(Mat::<f64>::identity(n, n));
    let norm1 = |m: MatRef<'_, f64>| -> f64 {
        (0..n)
            .map(|j| (0..n).map(|i| m[(i, j)].abs()).sum::<f64>())
            .fold(0.0, f64::max)
    };
    let cond = norm1(b) * norm1(inv.as_ref());
    if !(cond.is_finite() && cond <= 1e12) {
        return Err(Error::invalid(
            "B̂",
            format!(
                "is singular (1-norm condition number {cond:.3e}, allowed up to 1e12): the graph                  A = B̂⁻¹ − λI cannot be formed"
            ),
        ));
    }
    let mut a = Mat::from_fn(n, n, |i, j| inv[(i, j)] - if i == j { lambda } else { 0.0 });
    for i in 0..n {
        let mut s = 0.0;
        for j in 0..n {
            a[(i, j)] = a[(i, j)].max(delta);
            s += a[(i, j)];
        }
        if s <= 0.0 {
            return Err(Error::invalid(
                "B̂",
                format!(
                    "row {i} of B̂⁻¹ − λI has no entry above the floor δ = {delta}: no \
                     row-stochastic graph A can be formed"
                ),
            ));
        }
        for j in 0..n {
            a[(i, j)] /= s;
        }
    }
    Ok(a)
}

impl SocialGp {
    /// Fit to public ratings `v` at `x_pub` (`N × n`) and private ratings `u` at `x_priv`
    /// (`M × n`, possibly `M = 0`). `kernels` are the candidate input kernels of the
    /// hyperparameter fit ([`profile_fit`]); `warm` a previous `B̂` (`n × n`). The private
    /// ratings' noise is taken to be each agent's fitted public noise. Errors name the
    /// settings ([`SocialGpConfig::validate`]), `u`, `warm` (wrong size or singular) and
    /// `B̂` when the fitted `B̂` implies no graph ([`graph_of`]).
    pub fn fit(
        x_pub: Mat<f64>,
        v: MatRef<'_, f64>,
        x_priv: MatRef<'_, f64>,
        u: MatRef<'_, f64>,
        kernels: &[Box<dyn Kernel>],
        cfg: &SocialGpConfig,
        warm: Option<MatRef<'_, f64>>,
    ) -> Result<SocialGp> {
        let n = v.ncols();
        cfg.validate(n)?;
        if u.ncols() != n {
            return Err(Error::dim("u columns", n, u.ncols()));
        }
        if u.nrows() != x_priv.nrows() {
            return Err(Error::dim("u rows", x_priv.nrows(), u.nrows()));
        }
        let mut b = match warm {
            Some(w) if w.nrows() != n || w.ncols() != n => {
                return Err(Error::dim("warm", n, w.nrows()));
            }
            Some(w) => w.to_owned(),
            None => Mat::identity(n, n),
        };
        // The warm start's graph, checked before any work.
        let mut graph = graph_of(b.as_ref(), cfg.lambda, cfg.delta).map_err(|e| match e {
            Error::InvalidInput { reason, .. } => Error::invalid("warm", reason),
            e => e,
        })?;
        let hyper = profile_fit(x_pub.as_ref(), v, kernels, cfg.floor)?;
        let kernel = kernels[hyper.kernel].clone();
        let s: Vec<f64> = hyper.outputscale.iter().map(|v| v.sqrt()).collect();
        let mut fit = None;
        // Two passes: the task covariance uses the current B̂, which the private ratings then
        // re-estimate.
        for _ in 0..2 {
            let aat = &graph * graph.transpose();
            let task = Mat::from_fn(n, n, |i, j| {
                s[i] * s[j] * aat[(i, j)] / (aat[(i, i)] * aat[(j, j)]).sqrt()
            });
            let public = Icm::new(
                x_pub.clone(),
                v,
                kernel.clone(),
                task,
                &hyper.noise,
                &hyper.mean,
            )?;
            let bf = if x_priv.nrows() == 0 {
                BFit::prior(n, cfg)
            } else {
                let (m, _) = public.predict(x_priv)?;
                let joint = public.joint_cov(x_priv)?;
                estimate_b(
                    m.as_ref(),
                    joint.as_ref(),
                    u,
                    &hyper.noise,
                    cfg,
                    Some(b.as_ref()),
                )?
            };
            b = bf.b.clone();
            graph = graph_of(b.as_ref(), cfg.lambda, cfg.delta)?;
            fit = Some(SocialGp {
                public,
                b: bf,
                graph: graph.clone(),
            });
            if x_priv.nrows() == 0 {
                break;
            }
        }
        fit.ok_or_else(|| Error::State("the GP variant's fit ran no pass".into()))
    }

    /// The Laplace posterior of `B`.
    pub fn b(&self) -> &BFit {
        &self.b
    }

    /// The public multi-task GP.
    pub fn public(&self) -> &Icm {
        &self.public
    }

    /// The graph estimate `Â` ([`graph_of`] `B̂`).
    pub fn graph(&self) -> MatRef<'_, f64> {
        self.graph.as_ref()
    }

    /// Private utilities at `xs` (Corollary F.2 with the public posterior's covariance
    /// across agents at each option, [`Icm::cross_task_cov`], and each row's Laplace
    /// covariance: [`propagate()`]).
    pub fn predict(&self, xs: MatRef<'_, f64>) -> Result<UPrediction> {
        let (mv, _) = self.public.predict(xs)?;
        let sv = self.public.cross_task_cov(xs)?;
        let (m, n) = (xs.nrows(), self.b.b.nrows());
        let mut out = UPrediction {
            mean: Mat::zeros(m, n),
            var_b: Mat::zeros(m, n),
            var_v: Mat::zeros(m, n),
            cov: Vec::with_capacity(m),
        };
        for k in 0..m {
            let mk: Vec<f64> = (0..n).map(|j| mv[(k, j)]).collect();
            let p = propagate(&self.b, &mk, sv[k].as_ref())?;
            for i in 0..n {
                out.mean[(k, i)] = p.mean[i];
                out.var_b[(k, i)] = p.var_b[i];
                out.var_v[(k, i)] = p.var_v[i];
            }
            out.cov.push(p.cov);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Stationary, StationaryKind};

    pub(crate) fn rbf(l: f64) -> Box<dyn Kernel> {
        let mut k = Stationary::ard(StationaryKind::Rbf, 1, l);
        k.set_params(&[l.ln()]).unwrap();
        Box::new(k)
    }

    /// Three agents' utilities on `[0, 1]`.
    pub(crate) fn utilities(x: f64) -> [f64; 3] {
        [
            (6.0 * x).sin() + 0.5,
            (-(x - 0.3) * (x - 0.3) / 0.05).exp() * 2.0 - 0.5,
            (4.0 * x).cos(),
        ]
    }

    /// Thermal comfort's graph (rows alike: public utilities strongly correlated).
    pub(crate) const THERMAL: [[f64; 3]; 3] = [[0.8, 0.1, 0.1], [0.6, 0.1, 0.3], [0.4, 0.3, 0.3]];

    /// Ratings of the first `n` agents with graph `a` (public) and without (private), noise
    /// sd `sd`: `[x_pub, v, x_priv, u]`.
    pub(crate) fn data(
        a: &[[f64; 3]],
        n_pub: usize,
        n_priv: usize,
        sd: f64,
        seed: u64,
    ) -> [Mat<f64>; 4] {
        let n = a.len();
        let mut rng = agora_math::rng::stream(seed, &[9]);
        let mut noise =
            || sd * rand_distr::Distribution::<f64>::sample(&rand_distr::StandardNormal, &mut rng);
        let xp = Mat::from_fn(n_pub, 1, |i, _| (i as f64 + 0.5) / n_pub as f64);
        let v = Mat::from_fn(n_pub, n, |p, i| {
            let u = utilities(xp[(p, 0)]);
            (0..n).map(|j| a[i][j] * u[j]).sum::<f64>()
        });
        let v = Mat::from_fn(n_pub, n, |p, i| v[(p, i)] + noise());
        let xu = Mat::from_fn(n_priv, 1, |i, _| (i as f64 + 0.25) / n_priv as f64);
        let u = Mat::from_fn(n_priv, n, |p, i| utilities(xu[(p, 0)])[i] + noise());
        [xp, v, xu, u]
    }

    fn kernels() -> Vec<Box<dyn Kernel>> {
        vec![rbf(0.1), rbf(0.2), rbf(0.4)]
    }

    #[test]
    fn b_recovers_the_inverse_graph_and_shrinks_with_data() {
        let a = [[0.8, 0.2, 0.0], [0.4, 0.6, 0.0]];
        let cfg = SocialGpConfig::default();
        let mut errs = Vec::new();
        let mut spread = Vec::new();
        for n_priv in [4, 24] {
            let [xp, v, xu, u] = data(&a, 30, n_priv, 0.05, 2);
            let m = SocialGp::fit(
                xp,
                v.as_ref(),
                xu.as_ref(),
                u.as_ref(),
                &kernels(),
                &cfg,
                None,
            )
            .unwrap();
            assert!(m.b().grad_norm < 1e-6, "{:?}", m.b());
            let g = m.graph();
            let e: f64 = (0..2)
                .flat_map(|i| (0..2).map(move |j| (i, j)))
                .map(|(i, j)| (g[(i, j)] - a[i][j]).powi(2))
                .sum::<f64>()
                .sqrt();
            errs.push(e);
            spread.push((0..2).map(|i| m.b().var[(i, i)]).sum::<f64>());
            // u = B v: the mean at fresh points tracks the true utilities.
            let xs = Mat::from_fn(7, 1, |i, _| 0.1 + 0.13 * i as f64);
            let p = m.predict(xs.as_ref()).unwrap();
            for k in 0..7 {
                let tru = utilities(xs[(k, 0)]);
                for (i, tru_i) in tru.iter().take(2).enumerate() {
                    let sd = p.var(k, i).sqrt();
                    assert!(p.var_b[(k, i)] >= 0.0 && p.var_v[(k, i)] >= 0.0);
                    assert!((p.cov[k][(i, i)] - p.var(k, i)).abs() < 1e-12);
                    if n_priv == 24 {
                        assert!((p.mean[(k, i)] - tru_i).abs() < 0.15 + 3.0 * sd, "{k} {i}");
                    }
                }
            }
        }
        assert!(errs[1] < 0.1, "{errs:?}");
        assert!(spread[1] < spread[0], "{spread:?}");
    }

    /// Every row of `B̂` sums to `1/(1 + λ)`; adding `c` to every agent's public ratings and
    /// `c/(1 + λ)` to every private rating leaves Eq. 151 unchanged on that subspace, so `B̂`
    /// and every variance stay and every predicted utility moves by `c/(1 + λ)`. Without
    /// the constraint the rows' sums are fitted (here they are not `1/(1 + λ)`), and the
    /// shifted data give another `B̂`.
    #[test]
    fn rows_of_b_sum_to_their_exact_value_and_a_common_shift_moves_u_by_c_over_one_plus_lambda() {
        let cfg = SocialGpConfig::default();
        let s = 1.0 / (1.0 + cfg.lambda);
        let [xp, v, xu, u] = data(&THERMAL, 25, 8, 0.1, 4);
        let xs = Mat::from_fn(9, 1, |i, _| i as f64 / 8.0);
        let fit = |dv: f64, du: f64| {
            let v = Mat::from_fn(v.nrows(), 3, |p, i| v[(p, i)] + dv);
            let u = Mat::from_fn(u.nrows(), 3, |p, i| u[(p, i)] + du);
            let m = SocialGp::fit(
                xp.clone(),
                v.as_ref(),
                xu.as_ref(),
                u.as_ref(),
                &kernels(),
                &cfg,
                None,
            )
            .unwrap();
            let p = m.predict(xs.as_ref()).unwrap();
            (m, p)
        };
        let (m0, p0) = fit(0.0, 0.0);
        for i in 0..3 {
            let sum: f64 = (0..3).map(|j| m0.b().b[(i, j)]).sum();
            assert!((sum - s).abs() < 1e-9, "row {i} sums to {sum}");
            // The row's covariance is flat along 1.
            for a in 0..3 {
                let r: f64 = (0..3).map(|c| m0.b().row_cov[i][(a, c)]).sum();
                assert!(r.abs() < 1e-12, "Σ_{i} 1 = {r}");
            }
        }
        let c = 3.0;
        let (m1, p1) = fit(c, c * s);
        for i in 0..3 {
            for j in 0..3 {
                assert!(
                    (m1.b().b[(i, j)] - m0.b().b[(i, j)]).abs() < 1e-7,
                    "B̂[{i}][{j}]"
                );
            }
        }
        for k in 0..9 {
            for i in 0..3 {
                assert!((p1.mean[(k, i)] - p0.mean[(k, i)] - c * s).abs() < 1e-7);
                for (a, b) in [(&p1.var_b, &p0.var_b), (&p1.var_v, &p0.var_v)] {
                    assert!((a[(k, i)] - b[(k, i)]).abs() < 1e-7 * (1.0 + b[(k, i)]));
                }
            }
        }
    }

    #[test]
    fn a_singular_b_is_an_error_naming_what_happened() {
        let lambda = 1e-4;
        // Closed form: for a row-stochastic A with entries above δ, the graph of
        // (A + λI)⁻¹ is A.
        let a = Mat::from_fn(3, 3, |i, j| THERMAL[i][j]);
        let apl = Mat::from_fn(3, 3, |i, j| a[(i, j)] + if i == j { lambda } else { 0.0 });
        let ch = apl.partial_piv_lu();
        let b = ch.solve(Mat::<f64>::identity(3, 3));
        let g = graph_of(b.as_ref(), lambda, 0.01).unwrap();
        for i in 0..3 {
            for j in 0..3 {
                assert!((g[(i, j)] - a[(i, j)]).abs() < 1e-9);
            }
        }
        // Two equal rows: singular.
        let sing = Mat::from_fn(2, 2, |_, j| [0.7, 0.3][j]);
        let e = graph_of(sing.as_ref(), lambda, 0.01)
            .unwrap_err()
            .to_string();
        assert!(e.contains("B̂") && e.contains("singular"), "{e}");
        // Nearly singular beyond working precision.
        let near = Mat::from_fn(2, 2, |i, j| [[1.0, 1.0], [1.0, 1.0 + 1e-14]][i][j]);
        let e = graph_of(near.as_ref(), lambda, 0.01)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("singular") && e.contains("condition number"),
            "{e}"
        );
        let nan = Mat::from_fn(2, 2, |i, j| if (i, j) == (0, 1) { f64::NAN } else { 1.0 });
        let e = graph_of(nan.as_ref(), lambda, 0.01)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("B̂") && e.contains("[0][1]") && e.contains("NaN"),
            "{e}"
        );
        // B̂ = −I: every entry of B̂⁻¹ − λI is negative, so without a floor no graph.
        let neg = Mat::from_fn(2, 2, |i, j| if i == j { -1.0 } else { 0.0 });
        let e = graph_of(neg.as_ref(), lambda, 0.0).unwrap_err().to_string();
        assert!(e.contains("row 0") && e.contains("row-stochastic"), "{e}");
        // A singular warm start is named as such before any fitting.
        let [xp, v, xu, u] = data(&[[0.9, 0.1, 0.0], [0.6, 0.4, 0.0]], 10, 3, 0.1, 1);
        let e = SocialGp::fit(
            xp,
            v.as_ref(),
            xu.as_ref(),
            u.as_ref(),
            &kernels(),
            &SocialGpConfig::default(),
            Some(sing.as_ref()),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`warm`") && e.contains("singular"), "{e}");
    }

    #[test]
    fn bad_settings_are_named() {
        let m = Mat::<f64>::zeros(3, 2);
        let c = Mat::<f64>::identity(6, 6);
        let u = Mat::<f64>::zeros(3, 2);
        for (cfg, field) in [
            (
                SocialGpConfig {
                    b_prior_sd: 0.0,
                    ..Default::default()
                },
                "b_prior_sd",
            ),
            (
                SocialGpConfig {
                    lambda: f64::NAN,
                    ..Default::default()
                },
                "lambda",
            ),
            (
                SocialGpConfig {
                    delta: 0.5,
                    ..Default::default()
                },
                "delta",
            ),
        ] {
            let e = estimate_b(m.as_ref(), c.as_ref(), u.as_ref(), &[0.1, 0.1], &cfg, None)
                .unwrap_err();
            assert!(e.to_string().contains(field), "{e}");
        }
        let e = estimate_b(
            m.as_ref(),
            c.subrows(0, 3),
            u.as_ref(),
            &[0.1, 0.1],
            &SocialGpConfig::default(),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("cov"), "{e}");
    }
}
