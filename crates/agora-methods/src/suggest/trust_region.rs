//! An acquisition restricted to a box inside the unit cube (a trust region, as in TuRBO:
//! Eriksson et al. 2019, "Scalable global optimization via local Bayesian optimization",
//! NeurIPS), seen by a maximizer of the whole unit cube.

use agora_acq::Acquisition;
use agora_core::{Error, Result};
use faer::{Mat, MatRef};

/// `inner` at `x = lo + z ∘ (hi − lo)` for `z` in the unit cube: maximizing this over the
/// cube maximizes `inner` over `[lo, hi]`. Coordinates with `lo = 0`, `hi = 1` (discrete
/// ones, in particular) pass through unchanged, so snapping to a space's grid still works.
pub(crate) struct TrustRegion<'a> {
    inner: &'a dyn Acquisition,
    lo: Vec<f64>,
    hi: Vec<f64>,
}

impl<'a> TrustRegion<'a> {
    /// The box `[center − half_width, center + half_width] ∩ [0, 1]` in the coordinates
    /// where `restrict[j]`, the whole `[0, 1]` elsewhere.
    pub(crate) fn around(
        inner: &'a dyn Acquisition,
        center: &[f64],
        half_width: &[f64],
        restrict: &[bool],
    ) -> Result<TrustRegion<'a>> {
        let d = inner.dim();
        for (name, len) in [
            ("center", center.len()),
            ("half_width", half_width.len()),
            ("restrict", restrict.len()),
        ] {
            if len != d {
                return Err(Error::dim(name, d, len));
            }
        }
        let (mut lo, mut hi) = (vec![0.0; d], vec![1.0; d]);
        for j in (0..d).filter(|&j| restrict[j]) {
            lo[j] = (center[j] - half_width[j]).clamp(0.0, 1.0);
            hi[j] = (center[j] + half_width[j]).clamp(0.0, 1.0);
        }
        Ok(TrustRegion { inner, lo, hi })
    }

    /// The point of the region at `z` in the unit cube.
    pub(crate) fn to_region(&self, z: &[f64]) -> Vec<f64> {
        z.iter()
            .zip(self.lo.iter().zip(&self.hi))
            .map(|(z, (l, h))| l + z.clamp(0.0, 1.0) * (h - l))
            .collect()
    }
}

impl Acquisition for TrustRegion<'_> {
    fn dim(&self) -> usize {
        self.lo.len()
    }
    fn value_grad(&self, z: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
        if z.len() != self.dim() {
            return Err(Error::dim("z", self.dim(), z.len()));
        }
        let x = self.to_region(z);
        match grad {
            None => self.inner.value_grad(&x, None),
            Some(g) => {
                let v = self.inner.value_grad(&x, Some(g))?;
                for (gj, (l, h)) in g.iter_mut().zip(self.lo.iter().zip(&self.hi)) {
                    *gj *= h - l;
                }
                Ok(v)
            }
        }
    }
    fn values(&self, zs: MatRef<'_, f64>) -> Result<Vec<f64>> {
        if zs.ncols() != self.dim() {
            return Err(Error::dim("zs columns", self.dim(), zs.ncols()));
        }
        let xs = Mat::from_fn(zs.nrows(), zs.ncols(), |i, j| {
            self.lo[j] + zs[(i, j)].clamp(0.0, 1.0) * (self.hi[j] - self.lo[j])
        });
        self.inner.values(xs.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `−|x − (0.9, 0.1)|²`: its maximum over a box is the box's point nearest (0.9, 0.1).
    struct Bowl;
    impl Acquisition for Bowl {
        fn dim(&self) -> usize {
            2
        }
        fn value_grad(&self, x: &[f64], grad: Option<&mut [f64]>) -> Result<f64> {
            let c = [0.9, 0.1];
            if let Some(g) = grad {
                for j in 0..2 {
                    g[j] = -2.0 * (x[j] - c[j]);
                }
            }
            Ok(-(0..2).map(|j| (x[j] - c[j]).powi(2)).sum::<f64>())
        }
    }

    #[test]
    fn maximizing_over_the_cube_maximizes_over_the_region() {
        // Region [0.3, 0.7] × [0, 1] (the second coordinate unrestricted): the maximum is
        // at (0.7, 0.1), found through the unit-cube maximizer.
        let tr = TrustRegion::around(&Bowl, &[0.5, 0.5], &[0.2, 0.2], &[true, false]).unwrap();
        let (z, v) =
            agora_acq::maximize_box(&tr, &agora_acq::BoxMaximizer::default(), &[], None, 1)
                .unwrap();
        let x = tr.to_region(&z);
        assert!(
            (x[0] - 0.7).abs() < 1e-6 && (x[1] - 0.1).abs() < 1e-6,
            "{x:?}"
        );
        assert!((v + 0.04).abs() < 1e-9, "{v}");
        // Clipped to the cube, and the chain rule in the gradient.
        let tr = TrustRegion::around(&Bowl, &[0.95, 0.5], &[0.2, 0.2], &[true, true]).unwrap();
        assert_eq!(tr.to_region(&[1.0, 0.0]), vec![1.0, 0.3]);
        let z = [0.3, 0.6];
        let mut g = [0.0; 2];
        tr.value_grad(&z, Some(&mut g)).unwrap();
        for j in 0..2 {
            let h = 1e-6;
            let (mut a, mut b) = (z, z);
            a[j] += h;
            b[j] -= h;
            let fd =
                (tr.value_grad(&a, None).unwrap() - tr.value_grad(&b, None).unwrap()) / (2.0 * h);
            assert!((fd - g[j]).abs() < 1e-8, "{j}: {} vs {fd}", g[j]);
        }
        let batch = tr.values(Mat::from_fn(1, 2, |_, j| z[j]).as_ref()).unwrap()[0];
        assert_eq!(batch, tr.value_grad(&z, None).unwrap());
    }
}
