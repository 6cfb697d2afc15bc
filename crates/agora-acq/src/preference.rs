//! Acquisitions for choosing the next pair (or set) to show a person.
//!
//! - EUBO (Lin et al. 2022, "Preference exploration for efficient Bayesian optimization
//!   with multiple outcomes", Eq. 4; Astudillo et al. 2023): `E[max(f(x₀), f(x₁))]`,
//!   analytic for a pair: `s h((m₀ − m₁)/s) + m₁` with `s² = Var(f₀ − f₁)`;
//!   with a fixed previous winner the same formula over the challenger only.
//! - qEUBO for `q > 2`: `E[max_i f(x_i)]` by Monte Carlo with fixed base samples.
//! - Pairwise BALD (Houlsby et al. 2011, "Bayesian active learning for classification and
//!   preference learning", Eq. 3–4 with the probit approximation): the mutual information
//!   between the answer and the utility,
//!   `h(Φ(μ/√(1+σ²))) − C/√(σ²+C²) exp(−μ²/(2(σ²+C²)))`, `C = √(π ln 2 / 2)`, in bits,
//!   where `z = (f₀ − f₁)/(√2 σ_noise) ~ N(μ, σ²)`.
//!
//! Inputs of the pair acquisitions are the two points concatenated, `[x₀, x₁]` (2d
//! coordinates), or the challenger alone when the other point is fixed.

use crate::Acquisition;
use crate::analytic::EUBO_VAR_FLOOR;
use agora_core::{Error, Result};
use agora_gp::PreferenceGp;
use agora_gp::preference::PairMoments;
use agora_math::special::{h, norm_cdf, norm_pdf};

/// Batched moments for the rows of `xs` (each `[x₀, x₁]`, or `x₁` with `x₀` fixed).
#[allow(clippy::type_complexity)]
fn batch(
    gp: &PreferenceGp,
    fixed: &Option<Vec<f64>>,
    xs: faer::MatRef<'_, f64>,
) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>)> {
    let d = gp.dim();
    let m = xs.nrows();
    let (x0, x1) = match fixed {
        Some(f) => {
            if xs.ncols() != d || f.len() != d {
                return Err(Error::dim("xs columns", d, xs.ncols()));
            }
            (faer::Mat::from_fn(m, d, |_, j| f[j]), xs.to_owned())
        }
        None => {
            if xs.ncols() != 2 * d {
                return Err(Error::dim("xs columns (two points)", 2 * d, xs.ncols()));
            }
            (
                faer::Mat::from_fn(m, d, |i, j| xs[(i, j)]),
                faer::Mat::from_fn(m, d, |i, j| xs[(i, d + j)]),
            )
        }
    };
    gp.pair_moments_batch(x0.as_ref(), x1.as_ref())
}

fn split<'a>(
    fixed: &'a Option<Vec<f64>>,
    x: &'a [f64],
    d: usize,
) -> Result<(&'a [f64], &'a [f64])> {
    match fixed {
        Some(f) => {
            if x.len() != d {
                return Err(Error::dim("x", d, x.len()));
            }
            Ok((f.as_slice(), x))
        }
        None => {
            if x.len() != 2 * d {
                return Err(Error::dim("x (two points)", 2 * d, x.len()));
            }
            Ok((&x[..d], &x[d..]))
        }
    }
}

/// Write `∂a/∂(x₀, x₁)` from partials in the pair moments, keeping only the free point when
/// `x₀` is fixed.
fn chain(pm: &PairMoments, da_dm: [f64; 2], da_dc: [f64; 3], fixed: bool, d: usize, g: &mut [f64]) {
    // da_dc: partials in (c00, c11, c01).
    let g0: Vec<f64> = (0..d)
        .map(|j| da_dm[0] * pm.dmean[0][j] + da_dc[0] * pm.dvar[0][j] + da_dc[2] * pm.dcov[0][j])
        .collect();
    let g1: Vec<f64> = (0..d)
        .map(|j| da_dm[1] * pm.dmean[1][j] + da_dc[1] * pm.dvar[1][j] + da_dc[2] * pm.dcov[1][j])
        .collect();
    if fixed {
        g[..d].copy_from_slice(&g1);
    } else {
        g[..d].copy_from_slice(&g0);
        g[d..2 * d].copy_from_slice(&g1);
    }
}

/// Analytic EUBO of a pair on a preference GP.
pub struct Eubo<'m> {
    /// The model.
    pub gp: &'m PreferenceGp,
    /// A fixed first point (e.g. the previous winner); `None` searches both.
    pub fixed: Option<Vec<f64>>,
}

/// Input dimension of a pair acquisition: the challenger alone, or both points.
fn pair_dim(gp: &PreferenceGp, fixed: &Option<Vec<f64>>) -> usize {
    if fixed.is_some() {
        gp.dim()
    } else {
        2 * gp.dim()
    }
}

impl Acquisition for Eubo<'_> {
    fn dim(&self) -> usize {
        pair_dim(self.gp, &self.fixed)
    }
    fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
        let d = self.gp.dim();
        let (x0, x1) = split(&self.fixed, x, d)?;
        let pm = self.gp.pair_moments(x0, x1)?;
        let [m0, m1] = pm.mean;
        let s2 = pm.cov[0][0] + pm.cov[1][1] - 2.0 * pm.cov[0][1];
        let floored = s2 < EUBO_VAR_FLOOR;
        let s = s2.max(EUBO_VAR_FLOOR).sqrt();
        let u = (m0 - m1) / s;
        let value = s * h(u) + m1;
        if let Some(g) = grad {
            // ∂/∂m₀ = Φ(u), ∂/∂m₁ = 1 − Φ(u), ∂/∂s = φ(u); ∂s/∂(s²) = 1/(2s).
            let ds = if floored {
                0.0
            } else {
                norm_pdf(u) / (2.0 * s)
            };
            let p = norm_cdf(u);
            chain(
                &pm,
                [p, 1.0 - p],
                [ds, ds, -2.0 * ds],
                self.fixed.is_some(),
                d,
                g,
            );
        }
        Ok(value)
    }
    fn values(&self, xs: faer::MatRef<'_, f64>) -> Result<Vec<f64>> {
        let (m0, m1, v0, v1, c01) = batch(self.gp, &self.fixed, xs)?;
        Ok((0..m0.len())
            .map(|i| {
                let s = (v0[i] + v1[i] - 2.0 * c01[i]).max(EUBO_VAR_FLOOR).sqrt();
                s * h((m0[i] - m1[i]) / s) + m1[i]
            })
            .collect())
    }
}

/// Pairwise BALD on a probit preference GP with noise scale `noise` (1 = the model's).
pub struct Bald<'m> {
    /// The model.
    pub gp: &'m PreferenceGp,
    /// A fixed first point; `None` searches both.
    pub fixed: Option<Vec<f64>>,
    /// Comparison noise scale σ.
    pub noise: f64,
}

const LN2: f64 = std::f64::consts::LN_2;

impl Acquisition for Bald<'_> {
    fn dim(&self) -> usize {
        pair_dim(self.gp, &self.fixed)
    }
    fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
        let d = self.gp.dim();
        let (x0, x1) = split(&self.fixed, x, d)?;
        let pm = self.gp.pair_moments(x0, x1)?;
        let c = std::f64::consts::SQRT_2 * self.noise;
        let mu = (pm.mean[0] - pm.mean[1]) / c;
        let v = ((pm.cov[0][0] + pm.cov[1][1] - 2.0 * pm.cov[0][1]) / (c * c)).max(0.0);
        let cc = (std::f64::consts::PI * LN2 / 2.0).sqrt();
        let t = mu / (1.0 + v).sqrt();
        let p = norm_cdf(t).clamp(1e-300, 1.0 - 1e-16);
        let q = 1.0 - p;
        let ent = -(p * p.log2() + q * q.log2());
        let den = v + cc * cc;
        let e = cc / den.sqrt() * (-mu * mu / (2.0 * den)).exp();
        let value = ent - e;
        if let Some(g) = grad {
            let dent_dp = (q / p).log2();
            let dp_dt = norm_pdf(t);
            let dt_dmu = 1.0 / (1.0 + v).sqrt();
            let dt_dv = -0.5 * mu * (1.0 + v).powf(-1.5);
            let de_dmu = -e * mu / den;
            let de_dv = e * (-0.5 / den + mu * mu / (2.0 * den * den));
            let da_dmu = dent_dp * dp_dt * dt_dmu - de_dmu;
            let da_dv = dent_dp * dp_dt * dt_dv - de_dv;
            // μ = (m₀ − m₁)/c, v = (c00 + c11 − 2c01)/c².
            let dm = [da_dmu / c, -da_dmu / c];
            let dv = da_dv / (c * c);
            chain(&pm, dm, [dv, dv, -2.0 * dv], self.fixed.is_some(), d, g);
        }
        Ok(value)
    }
}

/// qEUBO by Monte Carlo: `E[max_i f(x_i)]` over `q` points, with base samples fixed at
/// construction (so the estimate is a deterministic, smooth function of the points). The
/// gradient is by central differences of that function.
pub struct QEubo<'m> {
    /// The model.
    pub gp: &'m PreferenceGp,
    /// Number of points.
    pub q: usize,
    base: Vec<Vec<f64>>,
}

impl<'m> QEubo<'m> {
    /// qEUBO over `q` points with `n_samples` fixed standard-normal base samples.
    pub fn new<R: rand::Rng + ?Sized>(
        gp: &'m PreferenceGp,
        q: usize,
        n_samples: usize,
        rng: &mut R,
    ) -> Result<QEubo<'m>> {
        use rand_distr::{Distribution, StandardNormal};
        if q < 2 {
            return Err(Error::invalid("q", format!("must be at least 2, got {q}")));
        }
        if n_samples == 0 {
            return Err(Error::invalid("n_samples", "must be at least 1"));
        }
        let base = (0..n_samples)
            .map(|_| (0..q).map(|_| StandardNormal.sample(rng)).collect())
            .collect();
        Ok(QEubo { gp, q, base })
    }

    fn value(&self, x: &[f64]) -> Result<f64> {
        let d = self.gp.dim();
        if x.len() != self.q * d {
            return Err(Error::dim("x (q points)", self.q * d, x.len()));
        }
        let xs = faer::Mat::from_fn(self.q, d, |i, j| x[i * d + j]);
        let (mean, cov) = self.gp.predict_cov(xs.as_ref())?;
        let l = agora_math::linalg::Cholesky::new(cov.as_ref())?;
        let lm = l.l();
        let mut acc = 0.0;
        for z in &self.base {
            let mut best = f64::NEG_INFINITY;
            for i in 0..self.q {
                let f = mean[i] + (0..=i).map(|j| lm[(i, j)] * z[j]).sum::<f64>();
                best = best.max(f);
            }
            acc += best;
        }
        Ok(acc / self.base.len() as f64)
    }
}

impl Acquisition for QEubo<'_> {
    fn dim(&self) -> usize {
        self.q * self.gp.dim()
    }
    fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
        let v = self.value(x)?;
        if let Some(g) = grad {
            let h = 1e-6;
            for j in 0..x.len() {
                let mut a = x.to_vec();
                a[j] += h;
                let mut b = x.to_vec();
                b[j] -= h;
                g[j] = (self.value(&a)? - self.value(&b)?) / (2.0 * h);
            }
        }
        Ok(v)
    }
}
