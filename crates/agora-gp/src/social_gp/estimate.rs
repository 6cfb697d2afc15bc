//! Eq. 151 of the Social BO paper (App. F.1): the MAP estimate of `B = (A + λI)⁻¹` from the
//! private ratings under the public posterior, with its Laplace covariance, on the affine
//! subspace every row of `B` lies on.
//!
//! **Row sums.** The graph `A` is row-stochastic (`A·1 = 1`; [`super::graph_of`] returns one),
//! so `(A + λI)·1 = (1 + λ)·1` and `B·1 = s·1` with `s = 1/(1 + λ)`: every row of `B` sums to
//! exactly `s`. Each row is parametrised on that subspace, `b_i = s·e_i + N z` with `N`
//! (`n × (n−1)`) an orthonormal basis of the tangent space `1^⊥` ([`tangent_basis`]), and
//! Newton runs in `z`. Without the constraint the sum of a row is fitted freely and the part
//! of `u = B v` along `1` (the public mean level) carries `B`'s uncertainty, so the `B` part
//! of the UCB width grows with `|m^v|`.
//!
//! **Likelihood.** Row `i` maps the public posterior at the `t` private options to agent
//! `i`'s private ratings: `U_i ~ N(M b_i, S(b_i))`, `S(b) = Σ_jk b_j b_k C_jk + σ_i² I`,
//! with `M` (`t × n`) the public posterior means and `C_jk` (`t × t`) the public posterior
//! cross-covariance of agents `j` and `k` there (the ICM's joint posterior, cross-agent terms
//! kept: this is the predictive law of `u_i = b_iᵀ v` at those options, the paper's
//! `m^{u(i)}`, `C^{u(i)}`). A Gaussian prior `b_i ~ N(s·e_i, τ² I)` restricted to the subspace
//! (agora's choice: the paper gives none; its centre is `B` for `A = I`) keeps `B` defined
//! while the private ratings are fewer than the agents. The rows separate, so each is a
//! small Newton problem.
//!
//! **Laplace.** With `H_z = Nᵀ H N` the Hessian of the negative log posterior in `z`
//! (central differences of the analytic gradient along `N`'s columns), the row's covariance
//! is `Σ_i = N H_z⁻¹ Nᵀ`, formed by a Cholesky solve of `H_z` against `Nᵀ`. It is the
//! Gaussian `N(b̂_i, H⁻¹)` conditioned on `1ᵀ b_i = s` (`H⁻¹ − H⁻¹1 (1ᵀH⁻¹1)⁻¹ 1ᵀH⁻¹`), it
//! is singular along `1` (`Σ_i 1 = 0`), and rows are independent (the Hessian is block
//! diagonal over rows).

// Dense index loops read as the algebra does.
#![allow(clippy::needless_range_loop)]

use super::SocialGpConfig;
use agora_core::{Error, Result};
use agora_math::linalg::{Cholesky, JitterPolicy};
use faer::{Mat, MatRef};

/// The Laplace posterior of `B` (Eq. 151 under the row-sum constraint).
#[derive(Debug, Clone, PartialEq)]
pub struct BFit {
    /// `B̂` (`n × n`); every row sums to [`BFit::row_sum`].
    pub b: Mat<f64>,
    /// The row sum `s = 1/(1 + λ)` every row of `B` is held to.
    pub row_sum: f64,
    /// Marginal posterior variances `σ²_bij` (the diagonal of each row's `Σ_i`).
    pub var: Mat<f64>,
    /// Each row's Laplace covariance `Σ_i = N H_z⁻¹ Nᵀ` (`n × n`, singular along `1`).
    pub row_cov: Vec<Mat<f64>>,
    /// Eq. 151 at `B̂`: the mean over agents of the private ratings' log-likelihood.
    pub log_lik: f64,
    /// Largest entry of the negative log posterior's gradient along the subspace at `B̂`
    /// (`Nᵀ ∇`, the constrained problem's KKT residual).
    pub grad_norm: f64,
    /// Newton iterations, summed over rows and starts.
    pub iters: usize,
    /// Largest jitter added to any `H_z` that was not positive definite.
    pub jitter: f64,
}

impl BFit {
    /// The prior restricted to the subspace, for no private ratings: `B̂ = s I`,
    /// `Σ_i = τ² N Nᵀ` (the projection of `τ² I` onto `1^⊥`).
    pub fn prior(n: usize, cfg: &SocialGpConfig) -> BFit {
        let s = 1.0 / (1.0 + cfg.lambda);
        let tau2 = cfg.b_prior_sd * cfg.b_prior_sd;
        let basis = tangent_basis(n);
        let cov = Mat::from_fn(n, n, |a, c| {
            tau2 * (0..n.saturating_sub(1))
                .map(|k| basis[(a, k)] * basis[(c, k)])
                .sum::<f64>()
        });
        BFit {
            b: Mat::from_fn(n, n, |i, j| if i == j { s } else { 0.0 }),
            row_sum: s,
            var: Mat::from_fn(n, n, |_, j| cov[(j, j)]),
            row_cov: vec![cov; n],
            log_lik: 0.0,
            grad_norm: 0.0,
            iters: 0,
            jitter: 0.0,
        }
    }
}

/// An orthonormal basis of `1^⊥` in `R^n` (`n × (n−1)`, Helmert's contrasts): column `k`
/// is `(1, …, 1, −(k+1), 0, …) / √((k+1)(k+2))` with `k + 1` ones.
pub fn tangent_basis(n: usize) -> Mat<f64> {
    Mat::from_fn(n, n.saturating_sub(1), |a, k| {
        let norm = (((k + 1) * (k + 2)) as f64).sqrt();
        match a.cmp(&(k + 1)) {
            std::cmp::Ordering::Less => 1.0 / norm,
            std::cmp::Ordering::Equal => -((k + 1) as f64) / norm,
            std::cmp::Ordering::Greater => 0.0,
        }
    })
}

/// `b` moved along `1` onto `1ᵀ b = s` (the nearest point of the subspace).
fn project(b: &[f64], s: f64) -> Vec<f64> {
    let shift = (b.iter().sum::<f64>() - s) / b.len() as f64;
    b.iter().map(|v| v - shift).collect()
}

/// A row's Newton result: `(b, objective, gradient in b, log-likelihood, iterations)`.
type RowMin = (Vec<f64>, f64, Vec<f64>, f64, usize);

/// Row `i` of Eq. 151.
pub(super) struct Row<'a> {
    /// Public posterior means at the private options (`t × n`).
    pub m: MatRef<'a, f64>,
    /// Public posterior joint covariance there, task-major (`nt × nt`).
    pub c: MatRef<'a, f64>,
    /// Agent `i`'s private ratings (`t`).
    pub u: Vec<f64>,
    /// Agent `i`'s rating noise variance.
    pub noise: f64,
    /// The prior mean `s·e_i`.
    pub prior: Vec<f64>,
    /// `τ²`.
    pub tau2: f64,
}

impl Row<'_> {
    fn t(&self) -> usize {
        self.u.len()
    }

    /// Block `(j, k)` entry `(p, q)` of the joint covariance.
    fn cjk(&self, j: usize, k: usize, p: usize, q: usize) -> f64 {
        let t = self.t();
        self.c[(j * t + p, k * t + q)]
    }

    /// `S(b) = Σ_jk b_j b_k C_jk + σ² I`.
    fn s(&self, b: &[f64]) -> Mat<f64> {
        let (t, n) = (self.t(), b.len());
        Mat::from_fn(t, t, |p, q| {
            let mut v = if p == q { self.noise } else { 0.0 };
            for j in 0..n {
                for k in 0..n {
                    v += b[j] * b[k] * self.cjk(j, k, p, q);
                }
            }
            v
        })
    }

    /// Negative log posterior (up to a constant), its gradient in `b`, and the
    /// log-likelihood: with `α = S⁻¹ r`, `r = U_i − M b`,
    /// `∂/∂b_j = −(Mᵀα)_j − Σ_k b_k (αᵀ C_jk α − tr(S⁻¹ C_jk)) + (b_j − s δ_ij)/τ²`.
    pub(super) fn eval(&self, b: &[f64]) -> Result<(f64, Vec<f64>, f64)> {
        let (t, n) = (self.t(), b.len());
        let ch = Cholesky::new(self.s(b).as_ref())?;
        let r: Vec<f64> = (0..t)
            .map(|p| self.u[p] - (0..n).map(|j| self.m[(p, j)] * b[j]).sum::<f64>())
            .collect();
        let al = ch.solve_vec(&r);
        let quad: f64 = r.iter().zip(&al).map(|(a, b)| a * b).sum();
        let ll = -0.5 * (quad + ch.log_det() + t as f64 * crate::mll::LN_2PI);
        let prior: f64 =
            (0..n).map(|j| (b[j] - self.prior[j]).powi(2)).sum::<f64>() / (2.0 * self.tau2);
        // S⁻¹ only for the trace terms tr(S⁻¹ C_jk).
        let sinv = ch.inverse();
        let mut grad = vec![0.0; n];
        for j in 0..n {
            let mta: f64 = (0..t).map(|p| self.m[(p, j)] * al[p]).sum();
            let mut g = -mta + (b[j] - self.prior[j]) / self.tau2;
            for k in 0..n {
                let mut aca = 0.0;
                let mut tr = 0.0;
                for p in 0..t {
                    for q in 0..t {
                        let c = self.cjk(j, k, p, q);
                        aca += al[p] * c * al[q];
                        tr += sinv[(q, p)] * c;
                    }
                }
                g -= b[k] * (aca - tr);
            }
            grad[j] = g;
        }
        Ok((-ll + prior, grad, ll))
    }

    /// `H_z = Nᵀ H N` by central differences of the gradient along `N`'s columns.
    pub(super) fn hessian_z(&self, b: &[f64], basis: MatRef<'_, f64>) -> Result<Mat<f64>> {
        let (n, k) = (b.len(), basis.ncols());
        let scale = 1e-5 * (1.0 + b.iter().fold(0.0f64, |a, v| a.max(v.abs())));
        let mut h = Mat::zeros(k, k);
        for c in 0..k {
            let bp: Vec<f64> = (0..n).map(|a| b[a] + scale * basis[(a, c)]).collect();
            let bm: Vec<f64> = (0..n).map(|a| b[a] - scale * basis[(a, c)]).collect();
            let (gp, gm) = (self.eval(&bp)?.1, self.eval(&bm)?.1);
            for r in 0..k {
                h[(r, c)] =
                    (0..n).map(|a| basis[(a, r)] * (gp[a] - gm[a])).sum::<f64>() / (2.0 * scale);
            }
        }
        Ok(Mat::from_fn(k, k, |a, c| 0.5 * (h[(a, c)] + h[(c, a)])))
    }

    /// Damped Newton in `z` from `b0` (on the subspace).
    fn minimize(&self, b0: Vec<f64>, basis: MatRef<'_, f64>) -> Result<RowMin> {
        let (n, k) = (b0.len(), basis.ncols());
        let tangent = |g: &[f64]| -> Vec<f64> {
            (0..k)
                .map(|c| (0..n).map(|a| basis[(a, c)] * g[a]).sum())
                .collect()
        };
        let mut b = b0;
        let (mut f, mut g, mut ll) = self.eval(&b)?;
        let mut mu = 1e-6;
        let mut iters = 0;
        while iters < 100 {
            let gz = tangent(&g);
            let gmax = gz.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            if gmax < 1e-9 * (1.0 + f.abs()) {
                break;
            }
            iters += 1;
            let h = self.hessian_z(&b, basis)?;
            let mut improved = false;
            for _ in 0..40 {
                let mut hm = h.clone();
                for c in 0..k {
                    hm[(c, c)] += mu;
                }
                // No jitter: an indefinite damped Hessian raises the damping instead.
                let policy = JitterPolicy {
                    initial: 1.0,
                    factor: 10.0,
                    max: 0.0,
                };
                let Ok(ch) = Cholesky::with_policy(hm.as_ref(), policy) else {
                    mu *= 10.0;
                    continue;
                };
                let step = ch.solve_vec(&gz);
                let cand: Vec<f64> = (0..n)
                    .map(|a| b[a] - (0..k).map(|c| basis[(a, c)] * step[c]).sum::<f64>())
                    .collect();
                if let Ok((fc, gc, lc)) = self.eval(&cand)
                    && fc <= f
                {
                    let tiny = step.iter().fold(0.0f64, |a, v| a.max(v.abs())) < 1e-13;
                    (b, f, g, ll) = (cand, fc, gc, lc);
                    mu = (mu * 0.1).max(1e-12);
                    improved = !tiny;
                    break;
                }
                mu *= 10.0;
            }
            if !improved {
                break;
            }
        }
        Ok((b, f, g, ll, iters))
    }
}

/// Estimate `B` by Eq. 151 under `B·1 = s·1`, `s = 1/(1 + λ)`, with its Laplace covariance
/// on that subspace. `mean` (`t × n`): the public posterior means of `v_j` at the `t`
/// privately rated options; `cov` (`nt × nt`, task-major: block `(j, k)` is
/// `Cov(v_j(X_u), v_k(X_u))`, [`crate::Icm::joint_cov`]): their joint public posterior
/// covariance; `u` (`t × n`): the private ratings; `noise[i]`: agent `i`'s rating noise
/// variance; `warm`: a previous `B̂` to start from (projected onto the subspace; the prior
/// mean and the constrained least-squares fit are always tried too).
pub fn estimate_b(
    mean: MatRef<'_, f64>,
    cov: MatRef<'_, f64>,
    u: MatRef<'_, f64>,
    noise: &[f64],
    cfg: &SocialGpConfig,
    warm: Option<MatRef<'_, f64>>,
) -> Result<BFit> {
    let (t, n) = (u.nrows(), u.ncols());
    if t == 0 {
        return Err(Error::invalid("u", "needs at least one private rating"));
    }
    if mean.nrows() != t || mean.ncols() != n {
        return Err(Error::dim("mean", t, mean.nrows()));
    }
    if cov.nrows() != n * t || cov.ncols() != n * t {
        return Err(Error::dim("cov", n * t, cov.nrows()));
    }
    if noise.len() != n {
        return Err(Error::dim("noise", n, noise.len()));
    }
    cfg.validate(n)?;
    let s = 1.0 / (1.0 + cfg.lambda);
    let basis = tangent_basis(n);
    let k = n - 1;
    let mut fit = BFit {
        b: Mat::zeros(n, n),
        row_sum: s,
        var: Mat::zeros(n, n),
        row_cov: Vec::with_capacity(n),
        log_lik: 0.0,
        grad_norm: 0.0,
        iters: 0,
        jitter: 0.0,
    };
    // Constrained least squares, one more start: b = s e_i + N z with
    // (NᵀMᵀMN + 1e−6 I) z = NᵀMᵀ(U_i − M s e_i).
    let mn = mean * &basis;
    let gram = Mat::from_fn(k, k, |a, c| {
        (0..t).map(|p| mn[(p, a)] * mn[(p, c)]).sum::<f64>() + if a == c { 1e-6 } else { 0.0 }
    });
    let ls = Cholesky::new(gram.as_ref()).ok();
    for i in 0..n {
        let prior: Vec<f64> = (0..n).map(|j| if j == i { s } else { 0.0 }).collect();
        let row = Row {
            m: mean,
            c: cov,
            u: (0..t).map(|p| u[(p, i)]).collect(),
            noise: noise[i].max(cfg.floor),
            prior: prior.clone(),
            tau2: cfg.b_prior_sd * cfg.b_prior_sd,
        };
        let mut starts = vec![prior.clone()];
        if let Some(w) = warm
            && w.nrows() == n
            && w.ncols() == n
        {
            starts.push(project(&(0..n).map(|j| w[(i, j)]).collect::<Vec<_>>(), s));
        }
        if let Some(ls) = &ls {
            let rhs: Vec<f64> = (0..k)
                .map(|a| {
                    (0..t)
                        .map(|p| mn[(p, a)] * (row.u[p] - mean[(p, i)] * s))
                        .sum()
                })
                .collect();
            let z = ls.solve_vec(&rhs);
            starts.push(
                (0..n)
                    .map(|a| prior[a] + (0..k).map(|c| basis[(a, c)] * z[c]).sum::<f64>())
                    .collect(),
            );
        }
        let mut best: Option<RowMin> = None;
        for start in starts {
            if start.iter().any(|v| !v.is_finite()) {
                continue;
            }
            let r = row.minimize(start, basis.as_ref())?;
            fit.iters += r.4;
            if best.as_ref().is_none_or(|b| r.1 < b.1) {
                best = Some(r);
            }
        }
        let (b, _, g, ll, _) = best.ok_or_else(|| {
            Error::Numerical(format!("Eq. 151: no finite start for row {i} of B"))
        })?;
        // Σ_i = N H_z⁻¹ Nᵀ: solve H_z X = Nᵀ, then N X.
        let hz = row.hessian_z(&b, basis.as_ref())?;
        let ch = Cholesky::new(hz.as_ref())?;
        fit.jitter = fit.jitter.max(ch.jitter());
        let mut x = basis.transpose().to_owned();
        ch.solve_in_place(x.as_mut());
        let nx = &basis * &x;
        let cov_i = Mat::from_fn(n, n, |a, c| 0.5 * (nx[(a, c)] + nx[(c, a)]));
        for j in 0..n {
            fit.var[(i, j)] = cov_i[(j, j)].max(0.0);
            fit.b[(i, j)] = b[j];
        }
        fit.row_cov.push(cov_i);
        fit.log_lik += ll / n as f64;
        for c in 0..k {
            let gz: f64 = (0..n).map(|a| basis[(a, c)] * g[a]).sum();
            fit.grad_norm = fit.grad_norm.max(gz.abs());
        }
    }
    Ok(fit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Icm;
    use crate::social_gp::tests::{THERMAL, data, rbf};
    use agora_math::fd::{Tol, check_gradient};
    use rand::RngExt;

    /// Thermal-graph ratings and the public posterior at the private options, from an ICM
    /// whose task covariance is the graph's `A Aᵀ` (strong cross-agent correlation):
    /// `(means, joint covariance, private ratings)`.
    fn posterior(n_pub: usize, n_priv: usize) -> (Mat<f64>, Mat<f64>, Mat<f64>) {
        let [xp, v, xu, u] = data(&THERMAL, n_pub, n_priv, 0.05, 1);
        let a = Mat::from_fn(3, 3, |i, j| THERMAL[i][j]);
        let task = &a * a.transpose();
        let icm = Icm::new(xp, v.as_ref(), rbf(0.2), task, &[0.0025; 3], &[0.0; 3]).unwrap();
        let (m, _) = icm.predict(xu.as_ref()).unwrap();
        (m, icm.joint_cov(xu.as_ref()).unwrap(), u)
    }

    fn row<'a>(m: &'a Mat<f64>, c: &'a Mat<f64>, u: &Mat<f64>, i: usize) -> Row<'a> {
        let s = 1.0 / (1.0 + SocialGpConfig::default().lambda);
        Row {
            m: m.as_ref(),
            c: c.as_ref(),
            u: (0..u.nrows()).map(|p| u[(p, i)]).collect(),
            noise: 0.0025,
            prior: (0..3).map(|j| if j == i { s } else { 0.0 }).collect(),
            tau2: 1.0,
        }
    }

    #[test]
    fn tangent_basis_is_orthonormal_and_orthogonal_to_one() {
        for n in 1..6 {
            let nb = tangent_basis(n);
            assert_eq!((nb.nrows(), nb.ncols()), (n, n - 1));
            for a in 0..n - 1 {
                let sum: f64 = (0..n).map(|r| nb[(r, a)]).sum();
                assert!(sum.abs() < 1e-15);
                for c in 0..n - 1 {
                    let dot: f64 = (0..n).map(|r| nb[(r, a)] * nb[(r, c)]).sum();
                    assert!((dot - f64::from(u8::from(a == c))).abs() < 1e-15);
                }
            }
        }
    }

    #[test]
    fn gradient_of_eq151_with_cross_agent_covariance_matches_central_differences() {
        let (m, c, u) = posterior(3, 5);
        // The cross-agent blocks are far from zero: agents 0 and 1 at the first option.
        let corr = c[(0, 5)] / (c[(0, 0)] * c[(5, 5)]).sqrt();
        assert!(corr > 0.5, "{corr}");
        let r = row(&m, &c, &u, 1);
        let b = [0.7, -1.2, 1.9];
        let (_, g, _) = r.eval(&b).unwrap();
        check_gradient(
            |v| r.eval(v).unwrap().0,
            &b,
            1e-6,
            &g,
            Tol::ScaledByFd(1e-5),
            "row objective",
        );
    }

    /// The Laplace covariance on the subspace equals the unconstrained Gaussian
    /// `N(b̂, H⁻¹)` conditioned on `1ᵀ b = s`, `H⁻¹ − H⁻¹1 (1ᵀH⁻¹1)⁻¹ 1ᵀH⁻¹`, with `H` the
    /// full Hessian by central differences along the coordinates; and `b̂` minimizes the
    /// objective along the subspace (random tangent directions never go down).
    #[test]
    fn laplace_covariance_is_the_hessian_conditioned_on_the_row_sum() {
        let (m, c, u) = posterior(12, 6);
        let cfg = SocialGpConfig::default();
        let s = 1.0 / (1.0 + cfg.lambda);
        let fit = estimate_b(m.as_ref(), c.as_ref(), u.as_ref(), &[0.0025; 3], &cfg, None).unwrap();
        assert!(fit.grad_norm < 1e-6, "{}", fit.grad_norm);
        assert_eq!(fit.row_sum, s);
        let mut rng = agora_math::rng::stream(3, &[]);
        for i in 0..3 {
            let r = row(&m, &c, &u, i);
            let b: Vec<f64> = (0..3).map(|j| fit.b[(i, j)]).collect();
            assert!((b.iter().sum::<f64>() - s).abs() < 1e-12);
            let h = Mat::from_fn(3, 3, |a, k| {
                let step = 1e-5;
                let (mut bp, mut bm) = (b.clone(), b.clone());
                bp[k] += step;
                bm[k] -= step;
                (r.eval(&bp).unwrap().1[a] - r.eval(&bm).unwrap().1[a]) / (2.0 * step)
            });
            let h = Mat::from_fn(3, 3, |a, k| 0.5 * (h[(a, k)] + h[(k, a)]));
            let ch = Cholesky::new(h.as_ref()).unwrap();
            assert_eq!(ch.jitter(), 0.0);
            let mut hinv = Mat::<f64>::identity(3, 3);
            ch.solve_in_place(hinv.as_mut());
            let h1 = ch.solve_vec(&[1.0; 3]);
            let d: f64 = h1.iter().sum();
            let scale = (0..3).map(|a| hinv[(a, a)]).fold(0.0, f64::max);
            for a in 0..3 {
                for k in 0..3 {
                    let want = hinv[(a, k)] - h1[a] * h1[k] / d;
                    let got = fit.row_cov[i][(a, k)];
                    assert!(
                        (got - want).abs() < 1e-5 * scale,
                        "{i} {a} {k}: {got} vs {want}"
                    );
                }
            }
            let f0 = r.eval(&b).unwrap().0;
            let nb = tangent_basis(3);
            for _ in 0..20 {
                let z = [rng.random::<f64>() - 0.5, rng.random::<f64>() - 0.5];
                for sign in [-1e-3, 1e-3] {
                    let bz: Vec<f64> = (0..3)
                        .map(|a| b[a] + sign * (nb[(a, 0)] * z[0] + nb[(a, 1)] * z[1]))
                        .collect();
                    assert!(r.eval(&bz).unwrap().0 >= f0 - 1e-12);
                }
            }
        }
    }
}
