//! Sums and products of kernels (the product rule on the contraction weights).

use super::{Kernel, ParamKind, Scale, Stationary, StationaryKind, check_params};
use agora_core::Result;
use faer::{Mat, MatRef};

/// `k₁ + k₂ + …` (an additive kernel when the parts read disjoint columns).
#[derive(Debug, Clone)]
pub struct Sum {
    /// The summands.
    pub parts: Vec<Box<dyn Kernel>>,
}

/// `k₁ · k₂ · …` (elementwise).
#[derive(Debug, Clone)]
pub struct Product {
    /// The factors.
    pub parts: Vec<Box<dyn Kernel>>,
}

impl Sum {
    /// An additive kernel over index groups: `Σ_g s_g κ(x_g, x'_g)`, one scaled ARD
    /// stationary kernel per group of columns.
    pub fn additive(kind: StationaryKind, groups: &[Vec<usize>], l0: f64, s0: f64) -> Sum {
        Sum::additive_scaled(kind, groups, l0, &vec![s0; groups.len()])
    }

    /// [`Sum::additive`] with output scale `scales[g]` for group `g` (one per group).
    ///
    /// Panics if `scales` and `groups` differ in length (a programming error).
    pub fn additive_scaled(
        kind: StationaryKind,
        groups: &[Vec<usize>],
        l0: f64,
        scales: &[f64],
    ) -> Sum {
        assert_eq!(groups.len(), scales.len(), "one output scale per group");
        Sum {
            parts: groups
                .iter()
                .zip(scales)
                .map(|(g, &s)| {
                    Box::new(Scale::new(Box::new(Stationary::on(kind, g.clone(), l0)), s))
                        as Box<dyn Kernel>
                })
                .collect(),
        }
    }
}

fn split_set(parts: &mut [Box<dyn Kernel>], p: &[f64]) -> Result<()> {
    let total: usize = parts.iter().map(|k| k.n_params()).sum();
    check_params("kernel params", p, total)?;
    let mut o = 0;
    for k in parts.iter_mut() {
        let m = k.n_params();
        k.set_params(&p[o..o + m])?;
        o += m;
    }
    Ok(())
}

macro_rules! composite_common {
    () => {
        fn box_clone(&self) -> Box<dyn Kernel> {
            Box::new(self.clone())
        }
        fn n_params(&self) -> usize {
            self.parts.iter().map(|k| k.n_params()).sum()
        }
        fn params(&self) -> Vec<f64> {
            self.parts.iter().flat_map(|k| k.params()).collect()
        }
        fn set_params(&mut self, p: &[f64]) -> Result<()> {
            split_set(&mut self.parts, p)
        }
        fn param_kinds(&self) -> Vec<ParamKind> {
            self.parts.iter().flat_map(|k| k.param_kinds()).collect()
        }
        fn param_names(&self) -> Vec<String> {
            self.parts
                .iter()
                .enumerate()
                .flat_map(|(i, k)| k.param_names().into_iter().map(move |n| format!("{i}.{n}")))
                .collect()
        }
    };
}

impl Kernel for Sum {
    composite_common!();
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        let mut k = Mat::zeros(a.nrows(), b.nrows());
        for p in &self.parts {
            k += p.cross(a, b);
        }
        k
    }
    fn gram(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        let mut k = Mat::zeros(x.nrows(), x.nrows());
        for p in &self.parts {
            k += p.gram(x);
        }
        k
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        let mut d = vec![0.0; x.nrows()];
        for p in &self.parts {
            for (a, b) in d.iter_mut().zip(p.diag(x)) {
                *a += b;
            }
        }
        d
    }
    fn grad_contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>) -> Vec<f64> {
        self.parts
            .iter()
            .flat_map(|p| p.grad_contract(x, w))
            .collect()
    }
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        let mut g = Mat::zeros(b.nrows(), x.len());
        for p in &self.parts {
            g += p.grad_x(x, b);
        }
        g
    }
}

impl Kernel for Product {
    composite_common!();
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        let mut k = Mat::from_fn(a.nrows(), b.nrows(), |_, _| 1.0);
        for p in &self.parts {
            k = hadamard(k.as_ref(), p.cross(a, b).as_ref());
        }
        k
    }
    fn gram(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        let mut k = Mat::from_fn(x.nrows(), x.nrows(), |_, _| 1.0);
        for p in &self.parts {
            k = hadamard(k.as_ref(), p.gram(x).as_ref());
        }
        k
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        let mut d = vec![1.0; x.nrows()];
        for p in &self.parts {
            for (a, b) in d.iter_mut().zip(p.diag(x)) {
                *a *= b;
            }
        }
        d
    }
    fn grad_contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>) -> Vec<f64> {
        // ∂(K₁∘K₂)/∂θ₁ = ∂K₁ ∘ K₂: contract part i with W ∘ (∏_{j≠i} K_j).
        let grams: Vec<Mat<f64>> = self.parts.iter().map(|p| p.gram(x)).collect();
        let mut out = Vec::new();
        for (i, p) in self.parts.iter().enumerate() {
            let mut wi = w.to_owned();
            for (j, g) in grams.iter().enumerate() {
                if j != i {
                    wi = hadamard(wi.as_ref(), g.as_ref());
                }
            }
            out.extend(p.grad_contract(x, wi.as_ref()));
        }
        out
    }
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        let xa = Mat::from_fn(1, x.len(), |_, j| x[j]);
        let ks: Vec<Mat<f64>> = self.parts.iter().map(|p| p.cross(xa.as_ref(), b)).collect();
        let mut g = Mat::zeros(b.nrows(), x.len());
        for (i, p) in self.parts.iter().enumerate() {
            let gi = p.grad_x(x, b);
            for r in 0..b.nrows() {
                let others: f64 = ks
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, k)| k[(0, r)])
                    .product();
                for c in 0..x.len() {
                    g[(r, c)] += gi[(r, c)] * others;
                }
            }
        }
        g
    }
}

fn hadamard(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)] * b[(i, j)])
}
