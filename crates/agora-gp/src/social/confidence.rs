//! The likelihood-ratio confidence set of the social model (Social BO paper, Lemma D.2,
//! Remarks D.3–D.5) and the problems solved over it: bounds on a utility at a new point
//! (docs/notes/social-bo.md (70)/(71)) and, through [`SocialModel::minimize_over_set`], an
//! acquisition's own problem.

use super::map::{SET_FEASIBILITY, unusable, usable};
use super::{Coupling, SetConstraint, SetLayout, SocialModel, constraints};
use agora_core::{Error, Result};
use agora_math::constrained::AlResult;
use agora_math::optim::Objective;
use faer::Mat;
use rayon::prelude::*;

impl SocialModel {
    /// The lower Cholesky factor `C` of `K + jitter·I` over the points: the utilities at
    /// the points are `U_i = C α_i` (row `r` of `C` gives agent `i`'s utility at point `r`).
    pub fn gram_factor(&self) -> &Mat<f64> {
        &self.c
    }

    /// Likelihood-ratio constraints of the confidence set (`≤ 0` form).
    pub(super) fn lr_fns(&self, lay: &SetLayout) -> Result<Vec<SetConstraint<'_>>> {
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let lay = *lay;
        let mut out: Vec<SetConstraint<'_>> = Vec::new();
        let j_min = fit.objective - self.cfg.beta;
        out.push(Box::new(move |x: &[f64], g: &mut [f64]| {
            g.iter_mut().for_each(|e| *e = 0.0);
            let p = self.parts(x, &lay, [-1.0, -1.0, -1.0], Some(g));
            Ok(j_min - (p[0] + p[1] + p[2]))
        }));
        if !self.cfg.separate_lr {
            return Ok(out);
        }
        if !self.private.is_empty() {
            let lu_min = fit.mle_u - self.cfg.beta_u;
            out.push(Box::new(move |x: &[f64], g: &mut [f64]| {
                g.iter_mut().for_each(|e| *e = 0.0);
                let p = self.parts(x, &lay, [-1.0, 0.0, 0.0], Some(g));
                Ok(lu_min - p[0])
            }));
        }
        if !self.public.is_empty() && !matches!(self.cfg.coupling, Coupling::Independent) {
            let lv_min = fit.mle_v - self.cfg.beta_v;
            out.push(Box::new(move |x: &[f64], g: &mut [f64]| {
                g.iter_mut().for_each(|e| *e = 0.0);
                let p = self.parts(x, &lay, [0.0, -1.0, 0.0], Some(g));
                Ok(lv_min - p[1])
            }));
        }
        Ok(out)
    }

    /// Minimize `obj` over the confidence set (Social BO paper, Lemma D.2: the ball, the
    /// stochastic rows of `A` and `J ≥ Ĵ − β`; also the separate likelihood ratios with
    /// [`SocialConfig::separate_lr`](super::SocialConfig::separate_lr)) plus `extra`
    /// constraints, in `lay`'s variables, from `x0` and from every other mode of the fit.
    /// Returns the best feasible solution. Errors before a fit.
    pub fn minimize_over_set(
        &self,
        lay: &SetLayout,
        obj: &Objective<'_>,
        extra: &[SetConstraint<'_>],
        x0: Vec<f64>,
    ) -> Result<AlResult> {
        self.minimize_over_set_from(lay, obj, extra, x0, None)
    }

    /// [`SocialModel::minimize_over_set`] with the solver's multipliers warm-started:
    /// `multipliers` holds one per constraint in the solver's order (the ball of each agent,
    /// the likelihood ratios, `extra`, then the rows of `A`), as in the
    /// [`AlResult::multipliers`] of an earlier solve over the same set and `extra`, or
    /// [`SocialModel::set_multipliers`]. Only the path to the solution depends on them.
    pub fn minimize_over_set_from(
        &self,
        lay: &SetLayout,
        obj: &Objective<'_>,
        extra: &[SetConstraint<'_>],
        x0: Vec<f64>,
        multipliers: Option<&[f64]>,
    ) -> Result<AlResult> {
        let balls = self.ball_fns(lay);
        let lr = self.lr_fns(lay)?;
        let cons = constraints(&[&balls, &lr, extra]);
        let tol = self.cfg.bound_solver.feas_tol;
        let accept = |r: &AlResult| r.kkt.feasibility <= SET_FEASIBILITY;
        // The start and the other modes of the set (with the same extra coordinates as
        // `x0`), solved in parallel and kept in that order.
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let nm = self.n * self.m();
        let mut starts = vec![x0.clone()];
        for mode in &fit.modes {
            let mut x = x0.clone();
            x[..nm].copy_from_slice(&mode[..nm]);
            if lay.a {
                x[lay.a_off()..lay.a_off() + self.n * self.n].copy_from_slice(&mode[nm..]);
            }
            starts.push(x);
        }
        let pre = self.precond();
        let pre = pre.as_deref();
        let mut results: Vec<AlResult> = starts
            .par_iter()
            .map(|x| {
                self.solve_al(
                    lay,
                    obj,
                    &cons,
                    (x, multipliers),
                    self.cfg.bound_solver,
                    pre,
                )
            })
            .collect::<Result<_>>()?;
        // A start that stopped short is retried once from where it stopped, with its
        // multipliers and a larger first penalty; if no start ends feasible, the first start
        // is solved again with a much larger first penalty and twice the outer iterations
        // (an augmented Lagrangian that leaves the feasible start at a small penalty can
        // stall outside the set).
        for r in results.iter_mut() {
            if !usable(r, tol) && accept(r) {
                let mut opts = self.cfg.bound_solver;
                opts.penalty *= 100.0;
                let again =
                    self.solve_al(lay, obj, &cons, (&r.x, Some(&r.multipliers)), opts, pre)?;
                if usable(&again, tol) {
                    *r = again;
                }
            }
        }
        if !results.iter().any(&accept) {
            let mut opts = self.cfg.bound_solver;
            opts.penalty *= 1e3;
            opts.max_outer *= 2;
            results.push(self.solve_al(lay, obj, &cons, (&x0, None), opts, pre)?);
        }
        // Feasible points only (to [`SET_FEASIBILITY`]): an infeasible one lies outside the
        // set, and its value is no bound at all. A feasible point that stopped short of the
        // solver's tolerances gives an inner (conservative) value; it is used, and counted
        // ([`SocialModel::short_solves`]).
        match results
            .iter()
            .filter(|r| accept(r))
            .min_by(|a, b| a.f.total_cmp(&b.f))
        {
            Some(best) => {
                if !usable(best, tol) {
                    self.short
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(best.clone())
            }
            None => Err(unusable(
                &format!(
                    "problem over the confidence set ({} variables, {} extra constraints{})",
                    lay.len(),
                    extra.len(),
                    if lay.ext { ", at a new option" } else { "" }
                ),
                &results,
            )),
        }
    }

    /// Problems over the confidence set solved so far (by this model and its clones) whose
    /// best feasible point stopped short of stationarity and was used as an inner value.
    pub fn short_solves(&self) -> usize {
        self.short.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The preconditioner of the utilities for problems over the set at the current fit
    /// ([`super::map::Precond`]), computed once per fit (keyed by the fit, the votes' counts,
    /// `L` and the ridge, as clones share the cache); `None` before a fit or when the `α`
    /// block of the negative Hessian does not factor.
    pub(super) fn precond(&self) -> Option<std::sync::Arc<super::map::Precond>> {
        let fit = self.fit.as_ref()?;
        let key: Vec<f64> = fit
            .alpha
            .iter()
            .chain(&fit.a)
            .copied()
            .chain([
                self.private.len() as f64,
                self.public.len() as f64,
                self.cfg.bound,
                self.cfg.ridge,
            ])
            .collect();
        let mut slot = self.precond.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((k, p)) = slot.as_ref()
            && *k == key
        {
            return p.clone();
        }
        let base = self.layout(false, false);
        let h = self.neg_hessian(&self.map_point(&base).ok()?, &base);
        let p = super::map::Precond::new(
            fit.alpha.clone(),
            h.as_ref(),
            self.n,
            self.cfg.ridge,
            self.cfg.bound,
        )
        .map(std::sync::Arc::new);
        *slot = Some((key, p.clone()));
        p
    }

    /// Multipliers for [`SocialModel::minimize_over_set_from`]: zero for the set's own
    /// constraints, `extra` for the caller's extra constraints (in their order).
    pub fn set_multipliers(&self, lay: &SetLayout, extra: &[f64]) -> Result<Vec<f64>> {
        let own = self.n + self.lr_fns(lay)?.len();
        let rows = if lay.a { self.n } else { 0 };
        let mut out = vec![0.0; own];
        out.extend_from_slice(extra);
        out.extend(std::iter::repeat_n(0.0, rows));
        Ok(out)
    }

    /// The MAP `(α̂, Â)` as a point of `lay`'s variables (`β` and `τ` at 0). Errors before a
    /// fit.
    pub fn map_point(&self, lay: &SetLayout) -> Result<Vec<f64>> {
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let mut x = vec![0.0; lay.len()];
        x[..self.n * self.m()].copy_from_slice(&fit.alpha);
        if lay.a {
            x[lay.a_off()..lay.a_off() + self.n * self.n].copy_from_slice(&fit.a);
        }
        Ok(x)
    }

    /// Whitened extension of the Gram by `x`: `(c, s)` with `u(x, i) = c·α_i + s β_i`
    /// (`c = C⁻¹ k_x`, `s² = k(x, x) + jitter − ‖c‖²`). Errors name `x` (length, finiteness).
    pub fn extension(&self, x: &[f64]) -> Result<(Vec<f64>, f64)> {
        if x.len() != self.points.ncols() {
            return Err(Error::dim("x", self.points.ncols(), x.len()));
        }
        agora_core::check_finite_slice("x", x)?;
        let xm = Mat::from_fn(1, x.len(), |_, j| x[j]);
        let kx = self.kernel.cross(self.points.as_ref(), xm.as_ref());
        let m = self.m();
        // c = C⁻¹ k_x (forward substitution).
        let mut c = vec![0.0; m];
        for r in 0..m {
            let mut s = kx[(r, 0)];
            for k in 0..r {
                s -= self.c[(r, k)] * c[k];
            }
            c[r] = s / self.c[(r, r)];
        }
        let kxx = self.kernel.diag(xm.as_ref())[0] + self.cfg.jitter;
        let s2 = kxx - c.iter().map(|v| v * v).sum::<f64>();
        Ok((c, s2.max(0.0).sqrt()))
    }

    /// MAP utilities at `x`: `Û(x, i) = c·α̂_i` (the minimum-norm interpolant).
    pub fn map_at(&self, x: &[f64]) -> Result<Vec<f64>> {
        let fit = self
            .fit
            .as_ref()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let (c, _) = self.extension(x)?;
        let m = self.m();
        Ok((0..self.n)
            .map(|i| {
                c.iter()
                    .zip(&fit.alpha[i * m..(i + 1) * m])
                    .map(|(a, b)| a * b)
                    .sum()
            })
            .collect())
    }

    /// `(LCB, UCB)` of agent `i`'s utility at `x` over the confidence set (note (70)/(71)).
    pub fn bounds_at(&self, x: &[f64], agent: usize) -> Result<(f64, f64)> {
        if agent >= self.n {
            return Err(Error::invalid(
                "agent",
                format!("{agent} is not an agent (0..{})", self.n),
            ));
        }
        let (c, s) = self.extension(x)?;
        let lay = self.layout(true, false);
        let m = self.m();
        let mut out = [0.0; 2];
        for (k, sign) in [1.0, -1.0].into_iter().enumerate() {
            let obj = |v: &[f64], g: &mut [f64]| -> Result<f64> {
                g.iter_mut().for_each(|e| *e = 0.0);
                let mut z = s * v[lay.beta() + agent];
                g[lay.beta() + agent] = -sign * s;
                for r in 0..m {
                    z += c[r] * v[agent * m + r];
                    g[agent * m + r] = -sign * c[r];
                }
                Ok(-sign * z)
            };
            let r = self.minimize_over_set(&lay, &obj, &[], self.map_point(&lay)?)?;
            out[k] = -sign * r.f;
        }
        // out[0] = max z (UCB), out[1] = min z (LCB).
        Ok((out[1], out[0]))
    }
}
