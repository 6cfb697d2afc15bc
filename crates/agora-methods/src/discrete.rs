//! Acquisition search on boxes with integer and categorical parameters.
//!
//! A continuous relaxation (one-hot blocks, integer slices) rounded after the search asks
//! for points the acquisition never scored, and the strategy can then repeat near-copies of
//! the same snapped point. Instead the acquisition is scored *at the snapped point*
//! ([`Snapped`]: piecewise constant in discrete coordinates, gradient only in continuous
//! ones), and after the continuous search each discrete parameter is tried at every value,
//! one parameter at a time, until nothing improves — the scheme of Optuna's mixed search.

use agora_acq::{Acquisition, BoxMaximizer, maximize_box};
use agora_core::{Result, Space};
use faer::{Mat, MatRef};

/// An acquisition scored at [`Space::canonicalize`]d points.
pub struct Snapped<'a> {
    /// The acquisition on the unit cube.
    pub inner: &'a dyn Acquisition,
    /// The space whose discrete parameters are snapped.
    pub space: &'a Space,
    /// [`Space::continuous_mask`].
    pub mask: Vec<bool>,
}

impl Acquisition for Snapped<'_> {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
        let c = self.space.canonicalize(x)?;
        match grad {
            None => self.inner.value_grad(&c, None),
            Some(g) => {
                let v = self.inner.value_grad(&c, Some(g))?;
                for (gi, cont) in g.iter_mut().zip(&self.mask) {
                    if !cont {
                        *gi = 0.0;
                    }
                }
                Ok(v)
            }
        }
    }
    fn values(&self, xs: MatRef<'_, f64>) -> Result<Vec<f64>> {
        let d = xs.ncols();
        let mut snapped = Mat::zeros(xs.nrows(), d);
        for i in 0..xs.nrows() {
            let row: Vec<f64> = (0..d).map(|j| xs[(i, j)]).collect();
            let c = self.space.canonicalize(&row)?;
            for j in 0..d {
                snapped[(i, j)] = c[j];
            }
        }
        self.inner.values(snapped.as_ref())
    }
}

/// Coordinate-wise exhaustive search over the discrete parameters from `x` (already
/// canonical): each parameter in turn takes the value that maximizes `acq` with the rest
/// held, until a full pass changes nothing (at most `max_passes`).
pub fn discrete_search(
    acq: &dyn Acquisition,
    space: &Space,
    x: Vec<f64>,
    max_passes: usize,
) -> Result<(Vec<f64>, f64)> {
    let blocks = space.discrete_blocks(256);
    let mut best = x;
    let mut best_v = acq.value_grad(&best, None)?;
    for _ in 0..max_passes {
        let mut changed = false;
        for (offset, encodings) in &blocks {
            let d = best.len();
            let cand = Mat::from_fn(encodings.len(), d, |r, j| {
                if j >= *offset && j < offset + encodings[r].len() {
                    encodings[r][j - offset]
                } else {
                    best[j]
                }
            });
            let vals = acq.values(cand.as_ref())?;
            if let Some((r, v)) = vals
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .max_by(|a, b| a.1.total_cmp(b.1))
                && *v > best_v
            {
                best = (0..d).map(|j| cand[(r, j)]).collect();
                best_v = *v;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Ok((best, best_v))
}

/// Maximize `acq` over the unit cube of the box `space`: [`maximize_box`] as is when every
/// parameter is continuous; otherwise the acquisition is scored at snapped points
/// ([`Snapped`]) and the continuous optimum, canonicalized, goes through
/// [`discrete_search`] (5 passes). `extra_starts`, `scales` and `seed` are
/// [`maximize_box`]'s. Returns the maximizer (canonical when the space has discrete
/// parameters; callers canonicalize what they propose anyway).
pub fn maximize_on_box(
    acq: &dyn Acquisition,
    space: &Space,
    opts: &BoxMaximizer,
    extra_starts: &[Vec<f64>],
    scales: Option<&[f64]>,
    seed: u64,
) -> Result<Vec<f64>> {
    let mask = space.continuous_mask();
    if mask.iter().all(|c| *c) {
        return Ok(maximize_box(acq, opts, extra_starts, scales, seed)?.0);
    }
    let snapped = Snapped {
        inner: acq,
        space,
        mask,
    };
    let (x, _) = maximize_box(&snapped, opts, extra_starts, scales, seed)?;
    let x = space.canonicalize(&x)?;
    Ok(discrete_search(&snapped, space, x, 5)?.0)
}

/// `u` with its integer and categorical coordinates snapped ([`Space::canonicalize`]) and
/// its continuous ones kept bit for bit (a round trip through user units may move them by
/// an ulp, and an observed point should stay the point observed).
pub fn snap_discrete(space: &Space, u: &[f64]) -> Result<Vec<f64>> {
    let mut c = space.canonicalize(u)?;
    for ((cj, uj), cont) in c.iter_mut().zip(u).zip(space.continuous_mask()) {
        if cont {
            *cj = *uj;
        }
    }
    Ok(c)
}
