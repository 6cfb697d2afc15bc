//! Social BO's acquisitions (Adachi et al., "Bayesian Optimization for Building
//! Social-Influence-Free Consensus"; docs/notes/social-bo.md §3).
//!
//! - [`OptimisticImprovement`]: the optimistic improvement of the facilitator's welfare over
//!   the previous option, maximized over the social model's likelihood-ratio confidence set
//!   (Eq. 4 / problem (52b)), with a cheap screening score ([`OptimisticImprovement::screen`]).
//! - [`WelfareUcb`]: the GP variant's welfare of the agents' upper confidence bounds
//!   (App. F.1, Prob. 4), for any model of every agent's utility ([`AgentUtilities`]).
//! - [`welfare_belief`]: the welfare's mean and standard deviation under such a model (the
//!   delta method with the covariance across agents).

// Dense triangular and row loops read as the algebra does.
#![allow(clippy::needless_range_loop)]

use agora_core::{Error, Result};
use agora_gp::Icm;
use agora_gp::social::{SetConstraint, SocialFit, SocialModel};
use agora_gp::social_gp::SocialGp;
use agora_math::welfare::{Welfare, ascending_order, permutations};
use faer::{Mat, MatRef};

/// The screening scores of one option ([`OptimisticImprovement::screen`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Screen {
    /// Optimistic improvement over the previous option with the MAP fixed.
    pub optimism: f64,
    /// Welfare of the MAP utilities at the option.
    pub map_welfare: f64,
}

/// The optimistic improvement `α(x, x_prev) = max over the confidence set of
/// W(ũ(x, :)) − W(ũ(x_prev, :))` (Social BO paper, Eq. 4 / (52b)), `W` the normalized
/// welfare (Gini with parameter `ρ`), `x_prev` the previous option (a point of `model`).
#[derive(Debug, Clone, Copy)]
pub struct OptimisticImprovement<'a> {
    model: &'a SocialModel,
    fit: &'a SocialFit,
    prev: usize,
    welfare: &'a Welfare,
}

impl<'a> OptimisticImprovement<'a> {
    /// The acquisition of a fitted `model` against its point `prev`. Errors before a fit or
    /// when `prev` is not a point.
    pub fn new(
        model: &'a SocialModel,
        prev: usize,
        welfare: &'a Welfare,
    ) -> Result<OptimisticImprovement<'a>> {
        let fit = model
            .fit()
            .ok_or_else(|| Error::State("fit the social model first".into()))?;
        let m = model.m();
        if prev >= m {
            return Err(Error::invalid(
                "prev",
                format!("{prev} is not a point (0..{m})"),
            ));
        }
        Ok(OptimisticImprovement {
            model,
            fit,
            prev,
            welfare,
        })
    }

    /// Cheap scores of an option for screening, from one Gram extension: the optimistic
    /// score (with `(α̂, Â)` fixed, every agent's utility at `x` at its largest value in
    /// the ball, `Û(x, i) + s_x min(sqrt(L² − ‖α̂_i‖²), sqrt(2β / ridge))`, aggregated, minus
    /// the aggregate at point `prev`) and the MAP welfare `W(Û(x, :))`.
    pub fn screen(&self, x: &[f64]) -> Result<Screen> {
        let (model, fit, prev, welfare) = (self.model, self.fit, self.prev, self.welfare);
        let m = model.m();
        let (c, s) = model.extension(x)?;
        let cfg = model.config();
        let chol = model.gram_factor();
        let l2 = cfg.bound * cfg.bound;
        let (mut z, mut mu, mut zp) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..model.n() {
            let a = &fit.alpha[i * m..(i + 1) * m];
            let mu_i: f64 = c.iter().zip(a).map(|(p, q)| p * q).sum();
            let mut r = (l2 - a.iter().map(|v| v * v).sum::<f64>()).max(0.0).sqrt();
            if cfg.ridge > 0.0 {
                // The prior caps the new coordinate at sqrt(2β / ridge) within the set.
                r = r.min((2.0 * cfg.beta / cfg.ridge).sqrt());
            }
            z.push(mu_i + s * r);
            mu.push(mu_i);
            // Û at `prev`: row `prev` of C times α_i (no full U needed).
            zp.push((0..=prev).map(|k| chol[(prev, k)] * a[k]).sum::<f64>());
        }
        Ok(Screen {
            optimism: welfare.normalized_value(&z) - welfare.normalized_value(&zp),
            map_welfare: welfare.normalized_value(&mu),
        })
    }

    /// The exact `α(x, x_prev)`.
    ///
    /// `W` is concave and piecewise linear (`W(z) = min_π Σ_k w_k z_π(k)` for ascending
    /// weights' rearrangement), so `W(z)` enters through an epigraph variable `τ` with one
    /// linear constraint per permutation (n! ≤ 24 for n ≤ 4). `−W(z_prev)` is convex; it is
    /// handled by fixing the permutation that sorts `z_prev` and re-solving once with the sort
    /// of the solution (a difference-of-convex step; the second pass can only raise the value).
    pub fn value(&self, x: &[f64]) -> Result<f64> {
        let (model, prev, welfare) = (self.model, self.prev, self.welfare);
        let n = model.n();
        let m = model.m();
        let chol = model.gram_factor();
        let (c, s) = model.extension(x)?;
        let lay = model.layout(true, true);
        let w = welfare.normalized_weights(n);
        let perms = permutations(n);
        // ũ(x, i) = c·α_i + s β_i, and ũ(x_prev, i) = C[prev, :]·α_i.
        let z_of = |v: &[f64], i: usize| -> f64 {
            s * v[lay.beta() + i]
                + c.iter()
                    .zip(&v[i * m..(i + 1) * m])
                    .map(|(p, q)| p * q)
                    .sum::<f64>()
        };
        let prev_of = |v: &[f64], i: usize| -> f64 {
            let mut t = 0.0;
            for k in 0..=prev {
                t += chol[(prev, k)] * v[i * m + k];
            }
            t
        };
        // Epigraph constraints: τ − Σ_k w_k z_π(k) ≤ 0.
        let epi: Vec<SetConstraint<'_>> = perms
            .iter()
            .map(|p| {
                let p = p.clone();
                let w = w.clone();
                let c = c.clone();
                Box::new(move |v: &[f64], g: &mut [f64]| -> Result<f64> {
                    g.iter_mut().for_each(|e| *e = 0.0);
                    let mut val = v[lay.tau()];
                    g[lay.tau()] = 1.0;
                    for (k, &i) in p.iter().enumerate() {
                        val -= w[k] * z_of(v, i);
                        g[lay.beta() + i] -= w[k] * s;
                        for r in 0..m {
                            g[i * m + r] -= w[k] * c[r];
                        }
                    }
                    Ok(val)
                }) as SetConstraint<'_>
            })
            .collect();
        let mut x0 = model.map_point(&lay)?;
        let zs: Vec<f64> = (0..n).map(|i| z_of(&x0, i)).collect();
        x0[lay.tau()] = welfare.normalized_value(&zs);
        // The solver's multipliers start at a KKT guess: stationarity in τ makes the epigraph
        // multipliers sum to 1, all of it on the permutation that sorts z at the start (the
        // active one there). The second pass starts from the first one's.
        let active = ascending_order(&zs);
        let epi_mult: Vec<f64> = perms
            .iter()
            .map(|p| if *p == active { 1.0 } else { 0.0 })
            .collect();
        let mut mult = model.set_multipliers(&lay, &epi_mult)?;
        let mut best = f64::NEG_INFINITY;
        let mut last_perm: Option<Vec<usize>> = None;
        for _pass in 0..2 {
            let zp: Vec<f64> = (0..n).map(|i| prev_of(&x0, i)).collect();
            let perm = ascending_order(&zp);
            if last_perm.as_ref() == Some(&perm) {
                break;
            }
            let obj = |v: &[f64], g: &mut [f64]| -> Result<f64> {
                g.iter_mut().for_each(|e| *e = 0.0);
                // minimize −(τ − Σ_k w_k U[perm_k, prev]).
                let mut val = -v[lay.tau()];
                g[lay.tau()] = -1.0;
                for (k, &i) in perm.iter().enumerate() {
                    val += w[k] * prev_of(v, i);
                    for r in 0..=prev {
                        g[i * m + r] += w[k] * chol[(prev, r)];
                    }
                }
                Ok(val)
            };
            let r = model.minimize_over_set_from(&lay, &obj, &epi, x0.clone(), Some(&mult))?;
            let z: Vec<f64> = (0..n).map(|i| z_of(&r.x, i)).collect();
            let zp: Vec<f64> = (0..n).map(|i| prev_of(&r.x, i)).collect();
            let val = welfare.normalized_value(&z) - welfare.normalized_value(&zp);
            if val > best {
                best = val;
            }
            x0 = r.x;
            mult = r.multipliers;
            last_perm = Some(perm);
        }
        Ok(best)
    }
}

/// A model of every agent's utility with Gaussian marginals.
pub trait AgentUtilities {
    /// Posterior means and variances of the agents' utilities at each row of `xs`
    /// (`options × agents`; a model may return more columns, e.g. public utilities after
    /// the private ones, which the welfare ignores).
    fn utility_moments(&self, xs: MatRef<'_, f64>) -> Result<(Mat<f64>, Mat<f64>)>;

    /// Posterior means (`options × agents`, as [`AgentUtilities::utility_moments`]) and the
    /// covariance of the first `agents` utilities across agents at each row of `xs`
    /// (`agents × agents` each). The default has no cross-agent terms (the variances on the
    /// diagonal), for models that give none.
    fn utility_covariances(
        &self,
        xs: MatRef<'_, f64>,
        agents: usize,
    ) -> Result<(Mat<f64>, Vec<Mat<f64>>)> {
        let (mean, var) = self.utility_moments(xs)?;
        if var.ncols() < agents {
            return Err(Error::dim("agents", agents, var.ncols()));
        }
        let cov = (0..xs.nrows())
            .map(|k| {
                Mat::from_fn(
                    agents,
                    agents,
                    |i, j| if i == j { var[(k, i)] } else { 0.0 },
                )
            })
            .collect();
        Ok((mean, cov))
    }
}

impl AgentUtilities for SocialGp {
    /// `u = B̂ v` with the variance of Corollary F.2 under the public posterior's full
    /// covariance across agents ([`agora_gp::social_gp::propagate()`]).
    fn utility_moments(&self, xs: MatRef<'_, f64>) -> Result<(Mat<f64>, Mat<f64>)> {
        let p = self.predict(xs)?;
        let var = Mat::from_fn(p.mean.nrows(), p.mean.ncols(), |k, i| p.var(k, i));
        Ok((p.mean, var))
    }

    /// `Cov(u_i, u_k) = b̂_iᵀ Σ_v b̂_k + δ_ik var_b` ([`agora_gp::social_gp::propagate()`]).
    fn utility_covariances(
        &self,
        xs: MatRef<'_, f64>,
        agents: usize,
    ) -> Result<(Mat<f64>, Vec<Mat<f64>>)> {
        let p = self.predict(xs)?;
        if p.mean.ncols() != agents {
            return Err(Error::dim("agents", p.mean.ncols(), agents));
        }
        Ok((p.mean, p.cov))
    }
}

impl AgentUtilities for Icm {
    /// The tasks' marginals (the agents' utilities are the first tasks).
    fn utility_moments(&self, xs: MatRef<'_, f64>) -> Result<(Mat<f64>, Mat<f64>)> {
        self.predict(xs)
    }

    /// The first `agents` tasks' posterior covariance ([`Icm::cross_task_cov`]).
    fn utility_covariances(
        &self,
        xs: MatRef<'_, f64>,
        agents: usize,
    ) -> Result<(Mat<f64>, Vec<Mat<f64>>)> {
        if self.tasks() < agents {
            return Err(Error::dim("agents", self.tasks(), agents));
        }
        let (mean, _) = self.predict(xs)?;
        let cov = self
            .cross_task_cov(xs)?
            .into_iter()
            .map(|c| c.submatrix(0, 0, agents, agents).to_owned())
            .collect();
        Ok((mean, cov))
    }
}

/// The welfare's mean and standard deviation at each row of `xs` by the delta method:
/// `W(u) = Σ_k w_k u_(k)` (the normalized Gini welfare, ascending order) is linear with
/// gradient `g_i = w_rank(i)` wherever the agents' order is that of the means, so
/// `E W ≈ W(μ)` and `Var W ≈ gᵀ Σ g` with `Σ` the covariance of the agents' utilities
/// across agents ([`AgentUtilities::utility_covariances`]); exact while the order of `u`
/// is the means' order. Returns `(mean, sd)` per row.
pub fn welfare_belief(
    model: &dyn AgentUtilities,
    welfare: &Welfare,
    agents: usize,
    xs: MatRef<'_, f64>,
) -> Result<Vec<(f64, f64)>> {
    let (mean, cov) = model.utility_covariances(xs, agents)?;
    if mean.ncols() < agents {
        return Err(Error::dim("agents", agents, mean.ncols()));
    }
    let w = welfare.normalized_weights(agents);
    Ok((0..xs.nrows())
        .map(|k| {
            let mu: Vec<f64> = (0..agents).map(|i| mean[(k, i)]).collect();
            let mut g = vec![0.0; agents];
            for (rank, &i) in ascending_order(&mu).iter().enumerate() {
                g[i] = w[rank];
            }
            let c = &cov[k];
            let var: f64 = (0..agents)
                .map(|i| (0..agents).map(|j| g[i] * c[(i, j)] * g[j]).sum::<f64>())
                .sum();
            (welfare.normalized_value(&mu), var.max(0.0).sqrt())
        })
        .collect())
}

/// The upper confidence bound `μ + β^{1/2} σ` of GP-UCB (Srinivas et al. 2010).
pub fn ucb(mean: f64, var: f64, beta_sqrt: f64) -> f64 {
    mean + beta_sqrt * var.sqrt()
}

/// The welfare of the agents' upper confidence bounds, `A_ρ(u_hi(x, :))` with
/// `u_hi(x, i) = μ(x, i) + β^{1/2} σ(x, i)` (Social BO paper, App. F.1, Prob. 4's
/// acquisition), `A_ρ` the normalized Gini welfare.
#[derive(Debug, Clone, Copy)]
pub struct WelfareUcb<'a> {
    /// The facilitator's welfare.
    pub welfare: &'a Welfare,
    /// `β^{1/2}`.
    pub beta_sqrt: f64,
    /// Agents `n` (the first `n` columns of the model's moments).
    pub agents: usize,
}

impl WelfareUcb<'_> {
    /// Values at every row of `xs`.
    pub fn values(&self, model: &dyn AgentUtilities, xs: MatRef<'_, f64>) -> Result<Vec<f64>> {
        let (mean, var) = model.utility_moments(xs)?;
        if mean.ncols() < self.agents || var.ncols() < self.agents {
            return Err(Error::dim("agents", self.agents, mean.ncols()));
        }
        Ok((0..xs.nrows())
            .map(|k| {
                let z: Vec<f64> = (0..self.agents)
                    .map(|i| ucb(mean[(k, i)], var[(k, i)], self.beta_sqrt))
                    .collect();
                self.welfare.normalized_value(&z)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::Channel;
    use agora_gp::social::{SocialConfig, Vote};
    use agora_gp::{Stationary, StationaryKind};

    /// Two agents voting once on every pair of five points: privately agent 0 prefers large
    /// x and agent 1 small x; publicly both vote as agent 0.
    fn toy_model() -> SocialModel {
        let k = Box::new(Stationary::ard(StationaryKind::Rbf, 1, 0.2));
        let mut cfg = SocialConfig::paper(2);
        cfg.bound = 3.0;
        let mut s = SocialModel::new(2, k, cfg).unwrap();
        let xs = [0.1, 0.5, 0.9, 0.3, 0.7];
        for x in xs {
            s.add_point(&[x]).unwrap();
        }
        let likes_a = |agent: usize, a: usize, b: usize| (xs[a] > xs[b]) == (agent == 0);
        for a in 0..xs.len() {
            for b in a + 1..xs.len() {
                for agent in 0..2 {
                    let private = (Channel::Private, likes_a(agent, a, b));
                    let public = (Channel::Public, likes_a(0, a, b));
                    for (channel, a_wins) in [private, public] {
                        let v = Vote {
                            channel,
                            agent,
                            a,
                            b,
                            a_wins,
                        };
                        s.add_vote(v).unwrap();
                    }
                }
            }
        }
        s.refit(1).unwrap();
        s
    }

    /// Fixed moments at every option: means `(2, 0, 1)` and a full covariance.
    struct Fixed;

    const COV: [[f64; 3]; 3] = [[0.04, 0.01, -0.02], [0.01, 0.09, 0.03], [-0.02, 0.03, 0.16]];

    impl AgentUtilities for Fixed {
        fn utility_moments(&self, xs: MatRef<'_, f64>) -> Result<(Mat<f64>, Mat<f64>)> {
            let m = Mat::from_fn(xs.nrows(), 3, |_, i| [2.0, 0.0, 1.0][i]);
            Ok((m, Mat::from_fn(xs.nrows(), 3, |_, i| COV[i][i])))
        }

        fn utility_covariances(
            &self,
            xs: MatRef<'_, f64>,
            _: usize,
        ) -> Result<(Mat<f64>, Vec<Mat<f64>>)> {
            let (m, _) = self.utility_moments(xs)?;
            Ok((m, vec![Mat::from_fn(3, 3, |i, j| COV[i][j]); xs.nrows()]))
        }
    }

    /// Same moments, no cross-agent terms (the trait's default).
    struct Marginals;

    impl AgentUtilities for Marginals {
        fn utility_moments(&self, xs: MatRef<'_, f64>) -> Result<(Mat<f64>, Mat<f64>)> {
            Fixed.utility_moments(xs)
        }
    }

    #[test]
    fn welfare_belief_is_the_delta_method_by_hand() {
        // ρ = 0.5, n = 3: weights (4/7, 2/7, 1/7) on the ascending utilities; the means
        // (2, 0, 1) rank agent 1 first, then 2, then 0: g = (1/7, 4/7, 2/7), W = 4/7.
        let w = Welfare::Gini { rho: 0.5 };
        let xs = Mat::zeros(2, 1);
        let g = [1.0 / 7.0, 4.0 / 7.0, 2.0 / 7.0];
        let var = |c: &dyn Fn(usize, usize) -> f64| -> f64 {
            (0..3)
                .flat_map(|i| (0..3).map(move |j| (i, j)))
                .map(|(i, j)| g[i] * c(i, j) * g[j])
                .sum()
        };
        let full = welfare_belief(&Fixed, &w, 3, xs.as_ref()).unwrap();
        assert_eq!(full.len(), 2);
        assert!((full[0].0 - 4.0 / 7.0).abs() < 1e-15);
        let want = var(&|i, j| COV[i][j]).sqrt();
        assert!((full[0].1 - want).abs() < 1e-15, "{} vs {want}", full[0].1);
        let diag = welfare_belief(&Marginals, &w, 3, xs.as_ref()).unwrap();
        let want = var(&|i, j| if i == j { COV[i][i] } else { 0.0 }).sqrt();
        assert!((diag[1].1 - want).abs() < 1e-15);
        assert!(welfare_belief(&Fixed, &w, 4, xs.as_ref()).is_err());
    }

    #[test]
    fn optimism_is_positive_far_from_the_data_and_the_screen_scores_the_map() {
        let s = toy_model();
        let w = Welfare::Gini { rho: 1.0 };
        let acq = OptimisticImprovement::new(&s, 4, &w).unwrap();
        let a = acq.value(&[0.95]).unwrap();
        assert!(a > 0.0);
        // The screen's MAP welfare is the welfare of the MAP utilities at the option.
        let sc = acq.screen(&[0.95]).unwrap();
        let u = s.map_at(&[0.95]).unwrap();
        assert!((sc.map_welfare - w.normalized_value(&u)).abs() < 1e-12);
        assert!(sc.optimism.is_finite());
        let e = OptimisticImprovement::new(&s, 5, &w).unwrap_err();
        assert!(e.to_string().contains("prev"), "{e}");
    }
}
