//! A small reverse-mode tape (Wengert list) for the HOM policy's derivatives with respect to θ.
//!
//! The policy is written once against [`Ops`]; [`Plain`] runs it on `f64` (acting, the BO
//! objective), [`Tape`] records it. From a recording:
//!
//! - [`Tape::adjoint`] gives `∂(Σ_k w_k y_k)/∂(every node)` in one reverse sweep (the gradient
//!   of a weighted sum of outputs, i.e. a vector–Jacobian product);
//! - [`Tape::hvp_block`] gives exact Hessian–vector products `∇²_θ(Σ_k w_k y_k)·v` for up to
//!   [`LANES`] directions at once, by forward-over-reverse: a tangent sweep along `v`, then the
//!   reverse sweep of the adjoints' tangents (`ȧ_p += f'·ȧ_i + f''·ṫ·ā_i`). Basis directions
//!   `e_b` give Hessian columns, so a dense `D × D` Hessian costs `D / LANES` block sweeps.
//!
//! Discrete decisions (the Hungarian assignment, `Λ > 0` edges) read node values and branch;
//! the tape records only the branch taken, so its derivatives are those of the smooth piece
//! the current θ lies in (zero through the decision itself).

/// How many directions [`Tape::hvp_block`] carries per sweep.
pub(crate) const LANES: usize = 8;

/// Elementary operations the policy is written against.
pub(crate) trait Ops {
    /// A value: `f64` itself, or a handle to a tape node.
    type V: Copy;
    /// A constant (no dependence on θ).
    fn cst(&mut self, x: f64) -> Self::V;
    /// The numerical value of `v`.
    fn val(&self, v: Self::V) -> f64;
    /// `a + b`.
    fn add(&mut self, a: Self::V, b: Self::V) -> Self::V;
    /// `a − b`.
    fn sub(&mut self, a: Self::V, b: Self::V) -> Self::V;
    /// `a · b`.
    fn mul(&mut self, a: Self::V, b: Self::V) -> Self::V;
    /// `c · a` for a constant `c`.
    fn scale(&mut self, a: Self::V, c: f64) -> Self::V;
    /// `a + c` for a constant `c`.
    fn add_const(&mut self, a: Self::V, c: f64) -> Self::V;
    /// `tanh a`.
    fn tanh(&mut self, a: Self::V) -> Self::V;
    /// `exp a`.
    fn exp(&mut self, a: Self::V) -> Self::V;
    /// `ln a`.
    fn ln(&mut self, a: Self::V) -> Self::V;
    /// `1 / (1 + e^{−a})`.
    fn sigmoid(&mut self, a: Self::V) -> Self::V;

    /// `Σ_k w_k x_k`, summed left to right (`None` for empty input).
    fn dot(&mut self, w: &[Self::V], x: &[Self::V]) -> Option<Self::V> {
        let mut acc: Option<Self::V> = None;
        for (&wk, &xk) in w.iter().zip(x) {
            let p = self.mul(wk, xk);
            acc = Some(match acc {
                None => p,
                Some(s) => self.add(s, p),
            });
        }
        acc
    }

    /// `ln Σ_k e^{x_k}`, stabilised by the largest value (held constant: the shift cancels, so
    /// value and derivatives are exact).
    fn log_sum_exp(&mut self, x: &[Self::V]) -> Self::V {
        let m = x
            .iter()
            .map(|&v| self.val(v))
            .fold(f64::NEG_INFINITY, f64::max);
        let m = if m.is_finite() { m } else { 0.0 };
        let mut acc: Option<Self::V> = None;
        for &xk in x {
            let shifted = self.add_const(xk, -m);
            let e = self.exp(shifted);
            acc = Some(match acc {
                None => e,
                Some(s) => self.add(s, e),
            });
        }
        let total = acc.unwrap_or_else(|| self.cst(0.0));
        let l = self.ln(total);
        self.add_const(l, m)
    }
}

/// Plain `f64` evaluation.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Plain;

impl Ops for Plain {
    type V = f64;
    fn cst(&mut self, x: f64) -> f64 {
        x
    }
    fn val(&self, v: f64) -> f64 {
        v
    }
    fn add(&mut self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn sub(&mut self, a: f64, b: f64) -> f64 {
        a - b
    }
    fn mul(&mut self, a: f64, b: f64) -> f64 {
        a * b
    }
    fn scale(&mut self, a: f64, c: f64) -> f64 {
        a * c
    }
    fn add_const(&mut self, a: f64, c: f64) -> f64 {
        a + c
    }
    fn tanh(&mut self, a: f64) -> f64 {
        a.tanh()
    }
    fn exp(&mut self, a: f64) -> f64 {
        a.exp()
    }
    fn ln(&mut self, a: f64) -> f64 {
        a.ln()
    }
    fn sigmoid(&mut self, a: f64) -> f64 {
        sigmoid(a)
    }
}

/// `1 / (1 + e^{−a})` without overflow.
fn sigmoid(a: f64) -> f64 {
    if a >= 0.0 {
        1.0 / (1.0 + (-a).exp())
    } else {
        let e = a.exp();
        e / (1.0 + e)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Const,
    Param,
    Add,
    Sub,
    Mul,
    Scale,
    AddConst,
    Tanh,
    Exp,
    Ln,
    Sigmoid,
}

#[derive(Debug, Clone, Copy)]
struct Node {
    op: Op,
    a: u32,
    b: u32,
    val: f64,
    /// `∂node/∂a` and `∂node/∂b` at the recorded values (`db = 0` for unary nodes, whose `b`
    /// repeats `a`), so sweeps never revisit parents' values.
    da: f64,
    db: f64,
    /// `f''` of a unary node; the parameter index of `Param`.
    aux: f64,
}

/// A handle to a tape node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Var(u32);

/// A recording of one evaluation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tape {
    nodes: Vec<Node>,
    params: Vec<u32>,
}

impl Tape {
    /// An empty tape.
    pub(crate) fn new() -> Self {
        Tape::default()
    }

    /// Record the parameters θ as input nodes, in order.
    pub(crate) fn params(&mut self, theta: &[f64]) -> Vec<Var> {
        theta
            .iter()
            .enumerate()
            .map(|(k, &x)| {
                let v = self.push(Op::Param, 0, 0, x, 0.0, 0.0, k as f64);
                self.params.push(v.0);
                v
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn push(&mut self, op: Op, a: u32, b: u32, val: f64, da: f64, db: f64, aux: f64) -> Var {
        let i = self.nodes.len() as u32;
        self.nodes.push(Node {
            op,
            a,
            b,
            val,
            da,
            db,
            aux,
        });
        Var(i)
    }

    fn is_const(&self, v: Var) -> bool {
        self.nodes[v.0 as usize].op == Op::Const
    }

    /// Adjoints `ā_i = ∂(Σ_k w_k y_k)/∂node_i` for the seeds `(y_k, w_k)`.
    pub(crate) fn adjoint(&self, seeds: &[(Var, f64)]) -> Vec<f64> {
        let mut adj = vec![0.0; self.nodes.len()];
        for &(v, w) in seeds {
            adj[v.0 as usize] += w;
        }
        for i in (0..self.nodes.len()).rev() {
            let g = adj[i];
            if g == 0.0 {
                continue;
            }
            let n = self.nodes[i];
            if matches!(n.op, Op::Const | Op::Param) {
                continue;
            }
            adj[n.a as usize] += g * n.da;
            adj[n.b as usize] += g * n.db;
        }
        adj
    }

    /// The gradient with respect to θ from node adjoints.
    pub(crate) fn param_gradient(&self, adj: &[f64]) -> Vec<f64> {
        self.params.iter().map(|&p| adj[p as usize]).collect()
    }

    /// Hessian–vector products `∇²_θ(Σ_k w_k y_k)·v_l` for the directions `dirs[l]` (each of
    /// length `D`, at most [`LANES`] of them), given `adj` from [`Tape::adjoint`] with the same
    /// seeds. Returns one `D`-vector per direction.
    pub(crate) fn hvp_block(&self, adj: &[f64], dirs: &[&[f64]]) -> Vec<Vec<f64>> {
        let lanes = dirs.len().min(LANES);
        let len = self.nodes.len();
        let mut tan = vec![[0.0f64; LANES]; len];
        // Forward sweep: tangents ṫ = Σ_p ∂node/∂p · ṫ_p.
        for i in 0..len {
            let n = self.nodes[i];
            let t = match n.op {
                Op::Const => [0.0; LANES],
                Op::Param => {
                    let k = n.aux as usize;
                    let mut t = [0.0; LANES];
                    for (tl, d) in t.iter_mut().zip(&dirs[..lanes]) {
                        *tl = d[k];
                    }
                    t
                }
                _ => {
                    let (ta, tb) = (&tan[n.a as usize], &tan[n.b as usize]);
                    let mut t = [0.0; LANES];
                    for l in 0..LANES {
                        t[l] = n.da * ta[l] + n.db * tb[l];
                    }
                    t
                }
            };
            tan[i] = t;
        }
        // Reverse sweep of the adjoints' tangents.
        let mut dadj = vec![[0.0f64; LANES]; len];
        for i in (0..len).rev() {
            let n = self.nodes[i];
            let g = adj[i];
            let dg = dadj[i];
            if g == 0.0 && dg.iter().all(|&x| x == 0.0) {
                continue;
            }
            let (a, b) = (n.a as usize, n.b as usize);
            match n.op {
                Op::Const | Op::Param => {}
                Op::Mul => {
                    let (ta, tb) = (tan[a], tan[b]);
                    for l in 0..LANES {
                        dadj[a][l] += tb[l] * g + n.da * dg[l];
                        dadj[b][l] += ta[l] * g + n.db * dg[l];
                    }
                }
                Op::Add | Op::Sub => {
                    for l in 0..LANES {
                        dadj[a][l] += n.da * dg[l];
                        dadj[b][l] += n.db * dg[l];
                    }
                }
                Op::Scale | Op::AddConst => {
                    for l in 0..LANES {
                        dadj[a][l] += n.da * dg[l];
                    }
                }
                Op::Tanh | Op::Exp | Op::Ln | Op::Sigmoid => {
                    let ta = tan[a];
                    let g2 = n.aux * g;
                    for l in 0..LANES {
                        dadj[a][l] += g2 * ta[l] + n.da * dg[l];
                    }
                }
            }
        }
        (0..lanes)
            .map(|l| self.params.iter().map(|&p| dadj[p as usize][l]).collect())
            .collect()
    }
}

impl Ops for Tape {
    type V = Var;
    fn cst(&mut self, x: f64) -> Var {
        self.push(Op::Const, 0, 0, x, 0.0, 0.0, 0.0)
    }
    fn val(&self, v: Var) -> f64 {
        self.nodes[v.0 as usize].val
    }
    fn add(&mut self, a: Var, b: Var) -> Var {
        let x = self.val(a) + self.val(b);
        if self.is_const(a) && self.is_const(b) {
            return self.cst(x);
        }
        self.push(Op::Add, a.0, b.0, x, 1.0, 1.0, 0.0)
    }
    fn sub(&mut self, a: Var, b: Var) -> Var {
        let x = self.val(a) - self.val(b);
        if self.is_const(a) && self.is_const(b) {
            return self.cst(x);
        }
        self.push(Op::Sub, a.0, b.0, x, 1.0, -1.0, 0.0)
    }
    fn mul(&mut self, a: Var, b: Var) -> Var {
        let (va, vb) = (self.val(a), self.val(b));
        // Same product as `Plain` (va · vb), recorded as the cheaper `Scale` when one side
        // is a constant.
        match (self.is_const(a), self.is_const(b)) {
            (true, true) => self.cst(va * vb),
            (false, true) => self.push(Op::Scale, a.0, a.0, va * vb, vb, 0.0, 0.0),
            (true, false) => self.push(Op::Scale, b.0, b.0, va * vb, va, 0.0, 0.0),
            (false, false) => self.push(Op::Mul, a.0, b.0, va * vb, vb, va, 0.0),
        }
    }
    fn scale(&mut self, a: Var, c: f64) -> Var {
        let x = self.val(a) * c;
        if self.is_const(a) {
            return self.cst(x);
        }
        self.push(Op::Scale, a.0, a.0, x, c, 0.0, 0.0)
    }
    fn add_const(&mut self, a: Var, c: f64) -> Var {
        let x = self.val(a) + c;
        if self.is_const(a) {
            return self.cst(x);
        }
        self.push(Op::AddConst, a.0, a.0, x, 1.0, 0.0, 0.0)
    }
    fn tanh(&mut self, a: Var) -> Var {
        self.unary(Op::Tanh, a, f64::tanh)
    }
    fn exp(&mut self, a: Var) -> Var {
        self.unary(Op::Exp, a, f64::exp)
    }
    fn ln(&mut self, a: Var) -> Var {
        self.unary(Op::Ln, a, f64::ln)
    }
    fn sigmoid(&mut self, a: Var) -> Var {
        self.unary(Op::Sigmoid, a, sigmoid)
    }
}

impl Tape {
    fn unary(&mut self, op: Op, a: Var, f: fn(f64) -> f64) -> Var {
        let x = self.val(a);
        let y = f(x);
        if self.is_const(a) {
            return self.cst(y);
        }
        let (d1, d2) = match op {
            Op::Tanh => {
                let d = 1.0 - y * y;
                (d, -2.0 * y * d)
            }
            Op::Exp => (y, y),
            Op::Ln => (1.0 / x, -1.0 / (x * x)),
            _ => {
                let d = y * (1.0 - y);
                (d, d * (1.0 - 2.0 * y))
            }
        };
        self.push(op, a.0, a.0, y, d1, 0.0, d2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f(x, y, z) = tanh(x·y) + exp(z)·sigmoid(x) − ln(1 + y²) + 3x: gradient and Hessian by
    /// hand.
    fn f<O: Ops>(o: &mut O, v: &[O::V]) -> O::V {
        let xy = o.mul(v[0], v[1]);
        let t = o.tanh(xy);
        let ez = o.exp(v[2]);
        let sx = o.sigmoid(v[0]);
        let p = o.mul(ez, sx);
        let y2 = o.mul(v[1], v[1]);
        let y2p1 = o.add_const(y2, 1.0);
        let l = o.ln(y2p1);
        let s = o.add(t, p);
        let s = o.sub(s, l);
        let x3 = o.scale(v[0], 3.0);
        o.add(s, x3)
    }

    #[test]
    fn gradient_and_hessian_match_the_closed_form() {
        let (x, y, z) = (0.3, -0.7, 0.2);
        let mut tape = Tape::new();
        let v = tape.params(&[x, y, z]);
        let out = f(&mut tape, &v);
        let plain = f(&mut Plain, &[x, y, z]);
        assert_eq!(tape.val(out), plain);
        let adj = tape.adjoint(&[(out, 1.0)]);
        let g = tape.param_gradient(&adj);
        let t = (x * y).tanh();
        let d1 = 1.0 - t * t;
        let d2 = -2.0 * t * d1;
        let s = 1.0 / (1.0 + (-x).exp());
        let s1 = s * (1.0 - s);
        let s2 = s1 * (1.0 - 2.0 * s);
        let ez = z.exp();
        let q = 1.0 + y * y;
        let grad = [d1 * y + ez * s1 + 3.0, d1 * x - 2.0 * y / q, ez * s];
        let hess = [
            [d2 * y * y + ez * s2, d2 * x * y + d1, ez * s1],
            [
                d2 * x * y + d1,
                d2 * x * x - (2.0 * q - 4.0 * y * y) / (q * q),
                0.0,
            ],
            [ez * s1, 0.0, ez * s],
        ];
        for k in 0..3 {
            assert!((g[k] - grad[k]).abs() < 1e-14, "{k}");
        }
        let e: Vec<Vec<f64>> = (0..3)
            .map(|k| (0..3).map(|j| f64::from(u8::from(j == k))).collect())
            .collect();
        let dirs: Vec<&[f64]> = e.iter().map(|v| v.as_slice()).collect();
        let cols = tape.hvp_block(&adj, &dirs);
        for (b, col) in cols.iter().enumerate() {
            for a in 0..3 {
                assert!((col[a] - hess[a][b]).abs() < 1e-14, "H[{a}][{b}]");
            }
        }
    }

    #[test]
    fn log_sum_exp_is_stable_and_exact() {
        let mut tape = Tape::new();
        let v = tape.params(&[1000.0, 1001.0]);
        let l = tape.log_sum_exp(&v);
        let want = 1001.0 + (1.0 + (-1.0f64).exp()).ln();
        assert!((tape.val(l) - want).abs() < 1e-12);
        let g = tape.param_gradient(&tape.adjoint(&[(l, 1.0)]));
        let p0 = 1.0 / (1.0 + 1f64.exp());
        assert!((g[0] - p0).abs() < 1e-14 && (g[1] - (1.0 - p0)).abs() < 1e-14);
    }
}
