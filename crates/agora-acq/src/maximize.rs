//! Maximizers: over a box (quasi-random raw samples, the best as starts, L-BFGS-B from
//! each; BoTorch's `optimize_acqf` defaults of 512 raw samples and 10 restarts) and over a
//! finite candidate set (exhaustive, batched, parallel).

use crate::Acquisition;
use agora_core::{Error, Result};
use agora_math::optim::{self, LbfgsbOptions};
use faer::{Mat, MatRef};
use rayon::prelude::*;

/// Settings of [`maximize_box`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoxMaximizer {
    /// Scrambled-Sobol raw samples scored first.
    pub raw_samples: usize,
    /// Best raw samples used as L-BFGS-B starts.
    pub restarts: usize,
    /// L-BFGS-B settings (BoTorch uses maxiter 200 for acquisitions).
    pub lbfgs: LbfgsbOptions,
    /// Start selection: `None` takes the best raw samples; `Some(eta)` keeps the best one
    /// and draws the others without replacement with weights `exp(eta · z)`, `z` the
    /// standardized raw values (BoTorch's Boltzmann `initialize_q_batch`), which spreads
    /// starts over several modes.
    pub boltzmann_eta: Option<f64>,
    /// Local search by projected Adam instead of L-BFGS-B (`None`: L-BFGS-B). Adam keeps
    /// moving through kinks (sorted or permuted batch scores), where a quasi-Newton line
    /// search stalls.
    pub adam: Option<AdamOptions>,
}

/// Projected Adam ascent (Kingma & Ba 2015; β₁ = 0.9, β₂ = 0.999, ε = 1e-8): each step
/// moves `lr · m̂ / (√v̂ + ε)` and clamps to the box; the best point seen is kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamOptions {
    /// Steps per start.
    pub steps: usize,
    /// Step size.
    pub lr: f64,
}

impl Default for BoxMaximizer {
    fn default() -> Self {
        BoxMaximizer {
            raw_samples: 512,
            restarts: 10,
            lbfgs: LbfgsbOptions {
                max_iter: 200,
                ..LbfgsbOptions::default()
            },
            boltzmann_eta: Some(2.0),
            adam: None,
        }
    }
}

/// Maximize `acq` over `[0, 1]^d`; returns `(argmax, value)`. `extra_starts` (e.g. the
/// best point observed so far) are refined too; `scales` (e.g. the model's lengthscales)
/// precondition the local search. Deterministic in `seed`.
pub fn maximize_box(
    acq: &dyn Acquisition,
    opts: &BoxMaximizer,
    extra_starts: &[Vec<f64>],
    scales: Option<&[f64]>,
    seed: u64,
) -> Result<(Vec<f64>, f64)> {
    let d = acq.dim();
    if opts.raw_samples == 0 || opts.restarts == 0 {
        return Err(Error::invalid(
            "raw_samples/restarts",
            "both must be at least 1",
        ));
    }
    let raw = agora_math::design::sobol(opts.raw_samples, d, seed)?;
    let xs = Mat::from_fn(raw.len(), d, |i, j| raw[i][j]);
    let vals = score_raw(acq, xs.as_ref())?;
    let mut order: Vec<usize> = (0..raw.len()).filter(|&i| vals[i].is_finite()).collect();
    if order.is_empty() {
        return Err(Error::Numerical(
            "acquisition is not finite at any raw sample".into(),
        ));
    }
    order.sort_by(|&a, &b| vals[b].total_cmp(&vals[a]).then(a.cmp(&b)));
    let chosen = match opts.boltzmann_eta {
        None => order.iter().take(opts.restarts).copied().collect(),
        Some(eta) => boltzmann(&order, &vals, opts.restarts, eta, seed),
    };
    let mut starts: Vec<Vec<f64>> = chosen.iter().map(|&i| raw[i].clone()).collect();
    starts.extend(extra_starts.iter().filter(|s| s.len() == d).cloned());
    // Preconditioning (as in Optuna's GPSampler): search z = x / s on [0, 1/s], which
    // equalizes the curvature of a stationary kernel's acquisition across inputs.
    let s: Vec<f64> = match scales {
        Some(sc) if sc.len() == d && sc.iter().all(|v| v.is_finite() && *v > 0.0) => sc.to_vec(),
        _ => vec![1.0; d],
    };
    let bounds: Vec<(f64, f64)> = s.iter().map(|si| (0.0, 1.0 / si)).collect();
    let to_x = |z: &[f64]| -> Vec<f64> {
        z.iter()
            .zip(&s)
            .map(|(zi, si)| (zi * si).clamp(0.0, 1.0))
            .collect()
    };
    let neg = |z: &[f64], g: &mut [f64]| -> Result<f64> {
        let v = acq.value_grad(&to_x(z), Some(g))?;
        for (gi, si) in g.iter_mut().zip(&s) {
            *gi = -*gi * si;
        }
        Ok(-v)
    };
    let zstarts: Vec<Vec<f64>> = starts
        .iter()
        .map(|x| x.iter().zip(&s).map(|(xi, si)| xi / si).collect())
        .collect();
    let (mut best_x, mut best_v) = (raw[order[0]].clone(), vals[order[0]]);
    if let Some(adam) = opts.adam {
        use rayon::prelude::*;
        let runs: Vec<(Vec<f64>, f64)> = starts
            .par_iter()
            .map(|x0| adam_ascent(acq, x0, adam))
            .collect();
        for (x, v) in runs {
            if v > best_v {
                (best_x, best_v) = (x, v);
            }
        }
        return Ok((best_x, best_v));
    }
    // A failed local search leaves the best raw sample as the answer.
    let minima = optim::multistart(&neg, &zstarts, &bounds, opts.lbfgs).unwrap_or_default();
    if let Some(m) = optim::best(&minima)
        && -m.f > best_v
    {
        best_x = to_x(&m.x);
        best_v = -m.f;
    }
    Ok((best_x, best_v))
}

/// `acq.values` over the raw samples, in blocks of 256 rows scored in parallel (each
/// value depends on its own row only).
fn score_raw(acq: &dyn Acquisition, xs: MatRef<'_, f64>) -> Result<Vec<f64>> {
    const BLOCK: usize = 256;
    let n = xs.nrows();
    if n <= BLOCK {
        return acq.values(xs);
    }
    let blocks: Vec<(usize, usize)> = (0..n)
        .step_by(BLOCK)
        .map(|s| (s, (s + BLOCK).min(n) - s))
        .collect();
    let scored: Vec<Result<Vec<f64>>> = blocks
        .par_iter()
        .map(|&(s, len)| acq.values(xs.subrows(s, len)))
        .collect();
    let mut out = Vec::with_capacity(n);
    for v in scored {
        out.extend(v?);
    }
    Ok(out)
}

/// Projected Adam from `x0` on `[0, 1]^d`; returns the best point seen and its value.
fn adam_ascent(acq: &dyn Acquisition, x0: &[f64], o: AdamOptions) -> (Vec<f64>, f64) {
    let d = x0.len();
    let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8);
    let mut x = x0.to_vec();
    let mut m = vec![0.0; d];
    let mut v = vec![0.0; d];
    let mut g = vec![0.0; d];
    let (mut best_x, mut best_v) = (x.clone(), f64::NEG_INFINITY);
    for step in 1..=o.steps.max(1) {
        let Ok(val) = acq.value_grad(&x, Some(&mut g)) else {
            break;
        };
        if !val.is_finite() || g.iter().any(|gi| !gi.is_finite()) {
            break;
        }
        if val > best_v {
            (best_x, best_v) = (x.clone(), val);
        }
        let (c1, c2) = (1.0 - b1.powi(step as i32), 1.0 - b2.powi(step as i32));
        for j in 0..d {
            m[j] = b1 * m[j] + (1.0 - b1) * g[j];
            v[j] = b2 * v[j] + (1.0 - b2) * g[j] * g[j];
            x[j] = (x[j] + o.lr * (m[j] / c1) / ((v[j] / c2).sqrt() + eps)).clamp(0.0, 1.0);
        }
    }
    if let Ok(val) = acq.value_grad(&x, None)
        && val > best_v
    {
        (best_x, best_v) = (x, val);
    }
    (best_x, best_v)
}

/// The best index, then `k − 1` more drawn without replacement with weights
/// `exp(eta · z)` (z-scores of the finite values). `order` lists finite indices, best first.
fn boltzmann(order: &[usize], vals: &[f64], k: usize, eta: f64, seed: u64) -> Vec<usize> {
    use rand::RngExt;
    let v: Vec<f64> = order.iter().map(|&i| vals[i]).collect();
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt();
    let z: Vec<f64> = v
        .iter()
        .map(|x| if sd > 0.0 { (x - m) / sd } else { 0.0 })
        .collect();
    let zmax = z.first().copied().unwrap_or(0.0);
    let mut w: Vec<f64> = z.iter().map(|zi| (eta * (zi - zmax)).exp()).collect();
    let mut rng = agora_math::rng::stream(seed, &[0xB017]);
    let mut out = vec![order[0]];
    w[0] = 0.0;
    while out.len() < k.min(order.len()) {
        let total: f64 = w.iter().sum();
        if total <= 0.0 {
            break;
        }
        let mut u = rng.random::<f64>() * total;
        let mut pick = w.len() - 1;
        for (j, wj) in w.iter().enumerate() {
            if u < *wj {
                pick = j;
                break;
            }
            u -= wj;
        }
        out.push(order[pick]);
        w[pick] = 0.0;
    }
    out
}

/// Maximize `acq` over the rows of `candidates` (skipping `exclude`d rows), scoring in
/// parallel batches; returns `(index, value)`, the first index on ties.
pub fn maximize_finite(
    acq: &dyn Acquisition,
    candidates: MatRef<'_, f64>,
    exclude: &[bool],
) -> Result<(usize, f64)> {
    const BATCH: usize = 1024;
    let n = candidates.nrows();
    if n == 0 {
        return Err(Error::invalid("candidates", "needs at least one candidate"));
    }
    let chunks: Vec<(usize, usize)> = (0..n)
        .step_by(BATCH)
        .map(|s| (s, (s + BATCH).min(n)))
        .collect();
    let scored: Vec<Result<Vec<f64>>> = chunks
        .par_iter()
        .map(|&(s, e)| acq.values(candidates.subrows(s, e - s)))
        .collect();
    let mut best: Option<(usize, f64)> = None;
    for (&(s, _), vals) in chunks.iter().zip(scored) {
        for (k, v) in vals?.into_iter().enumerate() {
            let i = s + k;
            if exclude.get(i).copied().unwrap_or(false) || !v.is_finite() {
                continue;
            }
            if best.is_none_or(|(_, bv)| v > bv) {
                best = Some((i, v));
            }
        }
    }
    best.ok_or_else(|| {
        Error::invalid(
            "candidates",
            "every candidate is excluded or scores non-finite",
        )
    })
}
