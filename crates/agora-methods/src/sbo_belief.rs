//! What [`Sbo`] believes, for the facilitator: each agent's utility and the group's welfare
//! at any point, as a mean and a standard deviation.
//!
//! Both come from the social model's Laplace approximation of the posterior at the MAP
//! ([`SocialModel::belief_at`](agora_gp::social::SocialModel::belief_at): a Gaussian at the
//! mode, active constraints as equalities, a new point's coordinate from the ridge prior; an
//! approximation, not the paper's confidence set, which steers the search). The paper's vote
//! model gives confidence intervals, not a predictive distribution (Social BO paper, Sec. 3.2,
//! App. D); the device is its GP variant's (App. F.1.1).
//!
//! The welfare is the facilitator's Gini welfare with normalized weights (Sim et al. 2021,
//! App. B.1; the value [`Sbo::recommendation`] reports), `W(u) = Σ_k w_k u_(k)` over the
//! utilities sorted ascending. Its belief is the delta method: with the ranks fixed at the
//! mean utilities `μ`, `W` is linear, `W(u) = gᵀu` with `g_i` the weight of agent `i`'s rank,
//! so `W ≈ N(W(μ), gᵀ Σ g)`. Exact when the agents' means are several sd apart (the ranks
//! never change); where means are close, `W` (a minimum of linear maps for decreasing
//! weights) is concave, so its true mean lies below `W(μ)` and its spread differs.
//!
//! Points are in the model's coordinates: the unit cube for a box, the options' features for
//! a finite candidate set.

use super::Sbo;
use agora_core::Result;
use agora_gp::social::UtilityBelief;
use agora_math::welfare::{Welfare, ascending_order};

impl Sbo {
    /// Each agent's utility at `points` as `[point][agent] = (mean, sd)`; `Ok(None)` before the
    /// first fit. The `SingleAgent` baseline models one utility for everyone: each agent gets
    /// that utility (the baseline's assumption; the agents are then perfectly correlated).
    /// Errors as [`SocialModel::belief_at`](agora_gp::social::SocialModel::belief_at): with
    /// `ridge = 0`, a point of the wrong length or not finite, an indefinite precision.
    #[allow(clippy::type_complexity)] // [point][agent] = (mean, sd), as the trait's
    pub fn agent_utility_beliefs(
        &self,
        points: &[Vec<f64>],
    ) -> Result<Option<Vec<Vec<(f64, f64)>>>> {
        if self.model.fit().is_none() {
            return Ok(None);
        }
        let b = self.model.belief_at(points)?;
        let shared = self.model.n() == 1;
        Ok(Some(
            b.points
                .iter()
                .map(|p| {
                    let each: Vec<(f64, f64)> = p.mean.iter().copied().zip(p.sd()).collect();
                    if shared {
                        vec![each[0]; self.cfg.agents]
                    } else {
                        each
                    }
                })
                .collect(),
        ))
    }

    /// The welfare at `points` as `(mean, sd)` by the delta method (module docs); `Ok(None)`
    /// before the first fit. Errors as [`Sbo::agent_utility_beliefs`].
    pub fn welfare_belief(&self, points: &[Vec<f64>]) -> Result<Option<Vec<(f64, f64)>>> {
        if self.model.fit().is_none() {
            return Ok(None);
        }
        let b = self.model.belief_at(points)?;
        Ok(Some(
            b.points
                .iter()
                .map(|p| welfare_delta(&self.welfare, p))
                .collect(),
        ))
    }
}

/// `(W(μ), √(gᵀ Σ g))`: the normalized welfare of the mean utilities and the delta-method
/// sd, `g_i` the normalized weight of agent `i`'s rank at the mean (ties by index).
pub(crate) fn welfare_delta(welfare: &Welfare, b: &UtilityBelief) -> (f64, f64) {
    let n = b.mean.len();
    let w = welfare.normalized_weights(n);
    let mut g = vec![0.0; n];
    for (k, &i) in ascending_order(&b.mean).iter().enumerate() {
        g[i] = w[k];
    }
    let mean = welfare.normalized_value(&b.mean);
    let mut var = 0.0;
    for i in 0..n {
        for j in 0..n {
            var += g[i] * b.cov[(i, j)] * g[j];
        }
    }
    (mean, var.max(0.0).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SboConfig, SboVariant, Strategy};
    use agora_core::{Answer, Point, Space};
    use agora_math::linalg::Cholesky;
    use rand_distr::{Distribution, StandardNormal};

    const IDEALS: [f64; 3] = [0.15, 0.5, 0.85];

    /// Agent `i` prefers options near `IDEALS[i]` privately; publicly everyone follows agent 0.
    fn answer(q: &agora_core::Query) -> Answer {
        crate::testing::nearest_ideal_votes(q, &IDEALS)
    }

    /// A strategy after its initial design (`init_pairs` pairs, each voted on over every
    /// channel), i.e. after its first fit.
    fn fitted(variant: SboVariant, init_pairs: usize) -> Sbo {
        let space = Space::reals(&[(0.0, 1.0)]).unwrap();
        let mut cfg = SboConfig::paper(3, 0.5, variant);
        cfg.init_pairs = init_pairs;
        cfg.double_bound = false;
        let mut s = Sbo::new(space, cfg, 7).unwrap();
        assert_eq!(
            s.belief(&[vec![0.5]]),
            None,
            "no belief before the first fit"
        );
        assert_eq!(s.agent_beliefs(&[vec![0.5]]), None);
        while s.model().fit().is_none() {
            let q = s.ask().unwrap();
            s.tell(&answer(&q)).unwrap();
        }
        s
    }

    fn grid() -> Vec<Vec<f64>> {
        (0..11).map(|k| vec![k as f64 / 10.0]).collect()
    }

    #[test]
    fn beliefs_are_the_models_and_meet_the_recommendation() {
        let s = fitted(SboVariant::Sbo, 4);
        let xs = grid();
        let agents = s.agent_beliefs(&xs).unwrap();
        let welfare = s.belief(&xs).unwrap();
        assert_eq!(agents.len(), xs.len());
        assert_eq!(welfare.len(), xs.len());
        for (k, x) in xs.iter().enumerate() {
            let map = s.model().map_at(x).unwrap();
            assert_eq!(agents[k].len(), 3);
            for (i, (mean, sd)) in agents[k].iter().enumerate() {
                assert!((mean - map[i]).abs() < 1e-12);
                assert!(sd.is_finite() && *sd > 0.0);
            }
            let (w, sd) = welfare[k];
            assert!((w - s.welfare.normalized_value(&map)).abs() < 1e-12);
            // The welfare is a convex combination of the agents: its sd is at most theirs.
            let worst = agents[k].iter().map(|a| a.1).fold(0.0, f64::max);
            assert!(sd > 0.0 && sd <= worst + 1e-12, "{sd} vs {worst}");
        }
        // The belief's mean at the recommendation is the value recommend reports, up to the
        // Gram's jitter: recommend reads `U = C α` at the voted point, the belief the
        // interpolant `c·α` with `c = C⁻¹ k_x = Cᵀ e_k − jitter · C⁻¹ e_k`.
        let (p, v) = s.recommend().unwrap();
        let Point::Unit(x) = p else { panic!("box") };
        let at = s.belief(&[x]).unwrap()[0].0;
        println!("recommended: value {v}, belief mean {at}");
        assert!((at - v).abs() < 1e-5);
        // A point of the wrong length is no belief, and an error naming it.
        assert_eq!(s.belief(&[vec![0.1, 0.2]]), None);
        let e = s.welfare_belief(&[vec![0.1, 0.2]]).unwrap_err();
        assert!(e.to_string().contains("xs[0]"), "{e}");
    }

    #[test]
    fn single_agent_gives_everyone_the_shared_utility() {
        let s = fitted(SboVariant::SingleAgent, 3);
        let xs = grid();
        let agents = s.agent_beliefs(&xs).unwrap();
        let welfare = s.belief(&xs).unwrap();
        for (a, w) in agents.iter().zip(&welfare) {
            assert_eq!(a.len(), 3);
            assert!(a.iter().all(|b| b == &a[0]));
            // One utility for everyone: the welfare is that utility.
            assert!((a[0].0 - w.0).abs() < 1e-12 && (a[0].1 - w.1).abs() < 1e-12);
        }
    }

    /// Monte Carlo of `W(u)`, `u ~ N(μ, Σ)`, sorting every sample: mean, sd and their
    /// standard errors.
    fn monte_carlo(welfare: &Welfare, mean: &[f64], b: &UtilityBelief, seed: u64) -> [f64; 4] {
        let n = mean.len();
        let l = Cholesky::new(b.cov.as_ref()).unwrap();
        let mut rng = agora_math::rng::stream(seed, &[1]);
        let draws = 40_000;
        let (mut s1, mut s2) = (0.0, 0.0);
        for _ in 0..draws {
            let z: Vec<f64> = (0..n).map(|_| StandardNormal.sample(&mut rng)).collect();
            let u: Vec<f64> = (0..n)
                .map(|i| mean[i] + (0..=i).map(|k| l.l()[(i, k)] * z[k]).sum::<f64>())
                .collect();
            let w = welfare.normalized_value(&u);
            s1 += w;
            s2 += w * w;
        }
        let m = s1 / draws as f64;
        let var = s2 / draws as f64 - m * m;
        let se_mean = (var / draws as f64).sqrt();
        let se_var = var * (2.0 / draws as f64).sqrt();
        [m, var.sqrt(), se_mean, se_var]
    }

    /// (d) The delta method against a Monte Carlo of the model's Gaussian (sorted weights):
    /// equal when the agents' means are well separated, and never above the Monte Carlo
    /// mean by more than its error where they are close (the welfare is concave).
    #[test]
    fn welfare_delta_method_matches_monte_carlo_when_means_are_separated() {
        let s = fitted(SboVariant::Sbo, 4);
        let xs = grid();
        let belief = s.model().belief_at(&xs).unwrap();
        let welfare = s.belief(&xs).unwrap();
        for (k, b) in belief.points.iter().enumerate() {
            assert_eq!(welfare_delta(&s.welfare, b), welfare[k]);
            // The model's covariance with the means moved 12 sd apart, ranked 2 < 0 < 1 (not
            // the agents' order, so the weights must be sorted), so no draw changes the ranks.
            let spread = 12.0 * b.sd().iter().fold(0.0f64, |a, v| a.max(*v));
            let apart: Vec<f64> = (0..3)
                .map(|i| b.mean[0] + spread * ((i + 1) % 3) as f64)
                .collect();
            let moved = UtilityBelief {
                mean: apart.clone(),
                cov: b.cov.clone(),
            };
            let (dm, dsd) = welfare_delta(&s.welfare, &moved);
            let [mm, msd, se_mean, se_var] = monte_carlo(&s.welfare, &apart, b, k as u64);
            println!(
                "x = {:.1}, separated: delta ({dm:.4}, {dsd:.4}) vs MC ({mm:.4} ± {se_mean:.4}, {msd:.4})",
                xs[k][0]
            );
            assert!((dm - mm).abs() < 4.0 * se_mean, "{dm} vs {mm} ± {se_mean}");
            assert!(
                (dsd * dsd - msd * msd).abs() < 4.0 * se_var,
                "{} vs {} ± {se_var}",
                dsd * dsd,
                msd * msd
            );
            // At the model's own (close) means: Jensen, E W(u) ≤ W(μ).
            let [mm, msd, se_mean, _] = monte_carlo(&s.welfare, &b.mean, b, 100 + k as u64);
            let (dm, dsd) = welfare[k];
            println!(
                "x = {:.1}, model means {:?}: delta ({dm:.4}, {dsd:.4}) vs MC ({mm:.4}, {msd:.4})",
                xs[k][0],
                b.mean
                    .iter()
                    .map(|v| (v * 1e3).round() / 1e3)
                    .collect::<Vec<_>>()
            );
            assert!(mm <= dm + 4.0 * se_mean, "{mm} vs {dm}");
        }
    }
}
