//! Widths of the confidence intervals of utility differences (Social BO paper, Algorithm 1's
//! private-vote rule `w^u ≥ max(t^{−q}, w^v)`; docs/notes/social-bo.md (72)–(74), §8.6).

use super::{Coupling, SetLayout, SocialGraph, SocialModel, bt_loglik, constraints, whiten};
use agora_core::{Channel, Error, Result};
use agora_math::constrained::{Constraint, Kind, minimize_al};
use agora_math::optim::Objective;
use rayon::prelude::*;

/// Minimizes a linear objective over some set and returns the minimum.
type WidthSolve<'a> = dyn Fn(&Objective<'_>) -> Result<f64> + Sync + 'a;

impl SocialModel {
    /// Per-agent width of the confidence interval of `u(a, i) − u(b, i)` (points `a`, `b`):
    /// `δ_hi − δ_lo` (note (72)–(74)); the projection weight `w^u` is its Euclidean norm.
    pub fn difference_widths(&self, a: usize, b: usize) -> Result<Vec<f64>> {
        let m = self.m();
        if a >= m || b >= m {
            return Err(Error::invalid("pair", format!("points must be in 0..{m}")));
        }
        let lay = self.layout(false, false);
        let x0 = self.map_point(&lay)?;
        self.widths_with(a, b, &|obj| {
            Ok(self.minimize_over_set(&lay, obj, &[], x0.clone())?.f)
        })
    }

    /// The same widths over the slice of the confidence set where `A = Â` (the graph fixed at
    /// the MAP's): `{U : J(U, Â) ≥ Ĵ − β}`. What remains is the uncertainty the public (and
    /// private) votes leave in `u` once the graph is known; the difference to
    /// [`SocialModel::difference_widths`] is the part due to not knowing `A`, which only
    /// private votes can remove. With `A` known (or not modelled), the two are equal.
    pub fn difference_widths_given_graph(&self, a: usize, b: usize) -> Result<Vec<f64>> {
        if !self.learned() {
            return self.difference_widths(a, b);
        }
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let n = self.n;
        let rows: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                let r = &fit.a[i * n..(i + 1) * n];
                let s: f64 = r.iter().sum();
                r.iter().map(|v| v / s).collect()
            })
            .collect();
        let mut fixed = self.clone();
        fixed.cfg.coupling = Coupling::Known(SocialGraph::new(&rows, 0.0)?);
        // The fixed problem carries no graph prior: Ĵ without its value at Â, so that
        // `J(U, Â) ≥ Ĵ − β` is the same inequality.
        let p = &self.cfg.prior;
        let prior: f64 = fit
            .a
            .iter()
            .map(|v| (p.kappa - 1.0) * v.ln() - p.xi * v * v)
            .sum();
        if let Some(f) = fixed.fit.as_mut() {
            f.objective -= prior;
            // Other modes pair their utilities with their own graph, not with Â.
            f.modes.clear();
            f.a = rows.into_iter().flatten().collect();
        }
        fixed.difference_widths(a, b)
    }

    /// Per-agent widths `max − min` of `u_i(a) − u_i(b)`, each end the minimum of a linear
    /// objective found by `solve` over the caller's set (the 2n problems run in parallel).
    fn widths_with(&self, a: usize, b: usize, solve: &WidthSolve<'_>) -> Result<Vec<f64>> {
        let m = self.m();
        // d = (C α_i)[a] − (C α_i)[b] = (C[a,:] − C[b,:]) · α_i.
        let row: Vec<f64> = (0..m).map(|k| self.c[(a, k)] - self.c[(b, k)]).collect();
        let jobs: Vec<(usize, f64)> = (0..self.n).flat_map(|i| [(i, 1.0), (i, -1.0)]).collect();
        let ends: Vec<f64> = jobs
            .par_iter()
            .map(|&(i, sign)| {
                let obj = |v: &[f64], g: &mut [f64]| -> Result<f64> {
                    g.iter_mut().for_each(|e| *e = 0.0);
                    let mut d = 0.0;
                    for r in 0..m {
                        d += row[r] * v[i * m + r];
                        g[i * m + r] = -sign * row[r];
                    }
                    Ok(-sign * d)
                };
                Ok(-sign * solve(&obj)?)
            })
            .collect::<Result<_>>()?;
        Ok((0..self.n)
            .map(|i| (ends[2 * i] - ends[2 * i + 1]).max(0.0))
            .collect())
    }

    /// The same widths for the public utilities over the v-only set
    /// `{V : ‖V_i‖ ≤ L, ℓ_v(V) ≥ ℓ̂_v − β_v}` (`w^v`, which the paper leaves implicit;
    /// note §8.6). Without public votes the set is the whole ball, and so are the widths.
    pub fn public_difference_widths(&self, a: usize, b: usize) -> Result<Vec<f64>> {
        let (n, m) = (self.n, self.m());
        if a >= m || b >= m {
            return Err(Error::invalid("pair", format!("points must be in 0..{m}")));
        }
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let lay = SetLayout {
            n,
            m,
            ext: false,
            a: false,
            tau: false,
        };
        let balls = self.ball_fns(&lay);
        let mle_v = if fit.mle_v.is_finite() {
            fit.mle_v
        } else {
            self.mle(Channel::Public)?
        };
        let lv_min = mle_v - self.cfg.beta_v;
        let public = &self.public;
        let lv = move |x: &[f64], g: &mut [f64]| -> Result<f64> {
            let f = self.utilities_of(x);
            let mut gf = vec![0.0; n * m];
            let v = bt_loglik(public, &f, m, Some(&mut gf));
            g.iter_mut().for_each(|e| *e = 0.0);
            self.backprop(&gf, g);
            g.iter_mut().for_each(|e| *e = -*e);
            Ok(lv_min - v)
        };
        let mut cons = constraints(&[&balls]);
        if !public.is_empty() {
            cons.push(Constraint {
                kind: Kind::Inequality,
                f: &lv,
            });
        }
        // Start from the MAP's public utilities V̂ = Â Û (whitened), scaled into the ball.
        let x0 = {
            let u = self.utilities_of(&fit.alpha);
            let a_hat: Vec<f64> = match (&self.cfg.coupling, fit.a.is_empty()) {
                (_, false) => fit.a.clone(),
                _ => (0..n * n)
                    .map(|k| if k / n == k % n { 1.0 } else { 0.0 })
                    .collect(),
            };
            let mut v = vec![0.0; n * m];
            for i in 0..n {
                for j in 0..n {
                    for k in 0..m {
                        v[i * m + k] += a_hat[i * n + j] * u[j * m + k];
                    }
                }
            }
            let mut x = whiten(&self.c, &v, n);
            for i in 0..n {
                let s = x[i * m..(i + 1) * m]
                    .iter()
                    .map(|e| e * e)
                    .sum::<f64>()
                    .sqrt();
                if s > self.cfg.bound {
                    x[i * m..(i + 1) * m]
                        .iter_mut()
                        .for_each(|e| *e *= self.cfg.bound / s);
                }
            }
            x
        };
        let bounds = self.bounds_for(&lay);
        self.widths_with(a, b, &|obj| {
            Ok(minimize_al(obj, &cons, &bounds, &x0, None, self.cfg.bound_solver)?.f)
        })
    }
}
