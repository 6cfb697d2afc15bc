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
        }
    }
}

/// Maximize `acq` over `[0, 1]^d`; returns `(argmax, value)`. Deterministic in `seed`.
pub fn maximize_box(
    acq: &dyn Acquisition,
    opts: &BoxMaximizer,
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
    let vals = acq.values(xs.as_ref())?;
    let mut order: Vec<usize> = (0..raw.len()).filter(|&i| vals[i].is_finite()).collect();
    if order.is_empty() {
        return Err(Error::Numerical(
            "acquisition is not finite at any raw sample".into(),
        ));
    }
    order.sort_by(|&a, &b| vals[b].total_cmp(&vals[a]).then(a.cmp(&b)));
    let starts: Vec<Vec<f64>> = order
        .iter()
        .take(opts.restarts)
        .map(|&i| raw[i].clone())
        .collect();
    let bounds = vec![(0.0, 1.0); d];
    let neg = |x: &[f64], g: &mut [f64]| -> Result<f64> {
        let v = acq.value_grad(x, Some(g))?;
        for gi in g.iter_mut() {
            *gi = -*gi;
        }
        Ok(-v)
    };
    let (mut best_x, mut best_v) = (raw[order[0]].clone(), vals[order[0]]);
    // A failed local search leaves the best raw sample as the answer.
    let minima = optim::multistart(&neg, &starts, &bounds, opts.lbfgs).unwrap_or_default();
    if let Some(m) = optim::best(&minima)
        && -m.f > best_v
    {
        best_x = m.x.clone();
        best_v = -m.f;
    }
    Ok((best_x, best_v))
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
