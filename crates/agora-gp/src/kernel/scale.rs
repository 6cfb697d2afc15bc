//! A learned output scale around any kernel.

use super::{GramScratch, Kernel, ParamKind, Spectral, check_params, hadamard_sum};
use agora_core::Result;
use faer::{Mat, MatRef};

/// `s · k(x, x')` with a learned output scale `s` (parameter `log s`, listed first).
#[derive(Debug, Clone)]
pub struct Scale {
    log_s: f64,
    /// The scaled kernel.
    pub inner: Box<dyn Kernel>,
}

impl Scale {
    /// Wrap `inner` with output scale `s`.
    pub fn new(inner: Box<dyn Kernel>, s: f64) -> Scale {
        Scale {
            log_s: s.ln(),
            inner,
        }
    }
    /// Current output scale.
    pub fn outputscale(&self) -> f64 {
        self.log_s.exp()
    }
}

impl Kernel for Scale {
    fn box_clone(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
    fn n_params(&self) -> usize {
        1 + self.inner.n_params()
    }
    fn params(&self) -> Vec<f64> {
        let mut p = vec![self.log_s];
        p.extend(self.inner.params());
        p
    }
    fn set_params(&mut self, p: &[f64]) -> Result<()> {
        check_params("scale params", p, self.n_params())?;
        self.log_s = p[0];
        self.inner.set_params(&p[1..])
    }
    fn param_kinds(&self) -> Vec<ParamKind> {
        let mut k = vec![ParamKind::Outputscale];
        k.extend(self.inner.param_kinds());
        k
    }
    fn param_names(&self) -> Vec<String> {
        let mut k = vec!["outputscale".to_string()];
        k.extend(self.inner.param_names());
        k
    }
    fn cross(&self, a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
        let s = self.outputscale();
        let mut k = self.inner.cross(a, b);
        scale_in_place(&mut k, s);
        k
    }
    fn gram(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        let s = self.outputscale();
        let mut k = self.inner.gram(x);
        scale_in_place(&mut k, s);
        k
    }
    fn diag(&self, x: MatRef<'_, f64>) -> Vec<f64> {
        let s = self.outputscale();
        self.inner.diag(x).into_iter().map(|v| s * v).collect()
    }
    fn grad_contract(&self, x: MatRef<'_, f64>, w: MatRef<'_, f64>) -> Vec<f64> {
        let s = self.outputscale();
        let k = self.inner.gram(x);
        let ds = s * hadamard_sum(w, k.as_ref());
        let mut g = vec![ds];
        g.extend(
            self.inner
                .grad_contract_with_gram(x, w, k.as_ref())
                .into_iter()
                .map(|v| s * v),
        );
        g
    }
    fn grad_contract_with_gram(
        &self,
        x: MatRef<'_, f64>,
        w: MatRef<'_, f64>,
        gram: MatRef<'_, f64>,
    ) -> Vec<f64> {
        // gram = s · K_inner.
        let s = self.outputscale();
        let mut g = vec![hadamard_sum(w, gram)];
        let inner = Mat::from_fn(gram.nrows(), gram.ncols(), |i, j| gram[(i, j)] / s);
        g.extend(
            self.inner
                .grad_contract_with_gram(x, w, inner.as_ref())
                .into_iter()
                .map(|v| s * v),
        );
        g
    }
    fn gram_scratch(&self, x: MatRef<'_, f64>, scratch: &mut GramScratch) -> Mat<f64> {
        let s = self.outputscale();
        let mut k = self.inner.gram_scratch(x, scratch);
        scale_in_place(&mut k, s);
        k
    }
    fn grad_contract_scratch(
        &self,
        x: MatRef<'_, f64>,
        w: MatRef<'_, f64>,
        gram: MatRef<'_, f64>,
        scale: f64,
        scratch: &GramScratch,
    ) -> Vec<f64> {
        if scale != 1.0 {
            let outer = Mat::from_fn(gram.nrows(), gram.ncols(), |i, j| gram[(i, j)] / scale);
            return self.grad_contract_with_gram(x, w, outer.as_ref());
        }
        // As `grad_contract_with_gram`, with the inner Gram `gram / s` left to the inner kernel.
        let s = self.outputscale();
        let mut g = vec![hadamard_sum(w, gram)];
        g.extend(
            self.inner
                .grad_contract_scratch(x, w, gram, s, scratch)
                .into_iter()
                .map(|v| s * v),
        );
        g
    }
    fn cross_grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> (Vec<f64>, Mat<f64>) {
        let s = self.outputscale();
        let (mut k, mut g) = self.inner.cross_grad_x(x, b);
        k.iter_mut().for_each(|v| *v *= s);
        scale_in_place(&mut g, s);
        (k, g)
    }
    fn spectral(&self, d: usize) -> Option<Spectral> {
        self.inner.spectral(d).map(|s| Spectral {
            scale: s.scale * self.outputscale(),
            ..s
        })
    }
    fn grad_x(&self, x: &[f64], b: MatRef<'_, f64>) -> Mat<f64> {
        let mut g = self.inner.grad_x(x, b);
        scale_in_place(&mut g, self.outputscale());
        g
    }
}

fn scale_in_place(k: &mut Mat<f64>, s: f64) {
    for c in 0..k.ncols() {
        for r in 0..k.nrows() {
            k[(r, c)] *= s;
        }
    }
}
