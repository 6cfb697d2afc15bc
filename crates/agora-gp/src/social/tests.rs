//! Unit tests of the social model (they reach its private state: votes, layouts, parts).
//! The optimistic improvement's test sits with it, in agora-acq.

use super::*;
use crate::{Stationary, StationaryKind};
use agora_core::Channel;
use agora_math::fd::{Tol, check_gradient};

#[test]
fn graphs_are_validated() {
    let g = SocialGraph::new(&[vec![0.9, 0.1], vec![0.6, 0.4]], 0.01).unwrap();
    assert_eq!(g.apply(&[1.0, 2.0]), vec![1.1, 1.4]);
    let e = SocialGraph::new(&[vec![0.9, 0.2], vec![0.6, 0.4]], 0.01).unwrap_err();
    assert!(
        e.to_string().contains("graph[0]") && e.to_string().contains("sum to 1"),
        "{e}"
    );
    let e = SocialGraph::new(&[vec![0.995, 0.005], vec![0.6, 0.4]], 0.01).unwrap_err();
    assert!(e.to_string().contains("graph[0][0]"), "{e}");
    let e = SocialGraph::new(&[vec![0.5, f64::NAN], vec![0.6, 0.4]], 0.01).unwrap_err();
    assert!(e.to_string().contains("graph[0][1]"), "{e}");
    let p = SocialPrior::paper_table5(2);
    assert!((p.xi - 1250.0).abs() < 1e-9 && (p.kappa - 0.75).abs() < 1e-4);
}

fn toy_model(coupling: Coupling) -> SocialModel {
    let k = Box::new(Stationary::ard(StationaryKind::Rbf, 1, 0.2));
    let mut cfg = SocialConfig::paper(2);
    cfg.bound = 3.0;
    cfg.coupling = coupling;
    let mut s = SocialModel::new(2, k, cfg).unwrap();
    let xs = [0.1, 0.5, 0.9, 0.3, 0.7];
    for x in xs {
        s.add_point(&[x]).unwrap();
    }
    // Agent 0 likes large x, agent 1 small x, privately; publicly both follow agent 0.
    for (a, b) in [(0, 1), (1, 2), (3, 4), (0, 2), (2, 3), (1, 4)] {
        let big = xs[a] > xs[b];
        for rep in 0..3 {
            s.add_vote(Vote {
                channel: Channel::Private,
                agent: 0,
                a,
                b,
                a_wins: big ^ (rep == 2),
            })
            .unwrap();
            s.add_vote(Vote {
                channel: Channel::Private,
                agent: 1,
                a,
                b,
                a_wins: !big ^ (rep == 2),
            })
            .unwrap();
            s.add_vote(Vote {
                channel: Channel::Public,
                agent: 0,
                a,
                b,
                a_wins: big,
            })
            .unwrap();
            s.add_vote(Vote {
                channel: Channel::Public,
                agent: 1,
                a,
                b,
                a_wins: big ^ (rep == 0),
            })
            .unwrap();
        }
    }
    s
}

#[test]
fn map_gradients_and_kkt() {
    let mut s = toy_model(Coupling::Learned);
    let fit = s.refit(1).unwrap().clone();
    assert!(fit.converged, "{fit:?}");
    assert!(fit.kkt[1] < 1e-8);
    // Rows of Â are stochastic and floored.
    for i in 0..2 {
        let r: f64 = fit.a[i * 2..i * 2 + 2].iter().sum();
        assert!((r - 1.0).abs() < 1e-8);
    }
    // The objective's gradient matches finite differences at a random point.
    let lay = s.layout(false, false);
    let mut x: Vec<f64> = (0..lay.len())
        .map(|k| ((k * 7 % 11) as f64 / 11.0) - 0.4)
        .collect();
    x[lay.a_off()..].copy_from_slice(&[0.7, 0.3, 0.45, 0.55]);
    let mut g = vec![0.0; lay.len()];
    let f0 = s.parts(&x, &lay, [1.0, 1.0, 1.0], Some(&mut g));
    let _ = f0;
    let f = |v: &[f64]| s.parts(v, &lay, [1.0; 3], None).iter().sum::<f64>();
    check_gradient(f, &x, 1e-6, &g, Tol::Abs(1e-5), "MAP objective");
    // MLEs bound their parts of the MAP.
    let u = s.utilities_of(&fit.alpha);
    let mut gg = vec![0.0; 10];
    let lu = bt_loglik(&s.private, &u, s.m(), Some(&mut gg));
    assert!(lu <= s.mle(Channel::Private).unwrap() + 1e-6);
}

#[test]
fn confidence_bounds_contain_the_map_and_shrink_with_data() {
    let mut s = toy_model(Coupling::Learned);
    s.refit(1).unwrap();
    for x in [0.2, 0.6] {
        let (lo, hi) = s.bounds_at(&[x], 0).unwrap();
        let mid = s.map_at(&[x]).unwrap()[0];
        assert!(lo <= mid + 1e-6 && mid <= hi + 1e-6, "{lo} {mid} {hi}");
        assert!(hi - lo > 1e-3);
    }
    // Votes identify differences, not levels (the ball bounds those): more votes on the
    // same pairs narrow the interval of a difference.
    let w1 = s.difference_widths(0, 2).unwrap();
    let mut more = toy_model(Coupling::Learned);
    for _ in 0..4 {
        let (pr, pu) = (more.private.clone(), more.public.clone());
        more.private.extend(pr);
        more.public.extend(pu);
    }
    more.refit(1).unwrap();
    let w2 = more.difference_widths(0, 2).unwrap();
    for i in 0..2 {
        assert!(w2[i] < 0.8 * w1[i], "agent {i}: {} vs {}", w2[i], w1[i]);
    }
    let w = s.difference_widths(0, 1).unwrap();
    assert!(w.iter().all(|v| *v > 0.0));
    let wv = s.public_difference_widths(0, 1).unwrap();
    assert_eq!(wv.len(), 2);
    assert!(
        s.bounds_at(&[0.5], 5)
            .unwrap_err()
            .to_string()
            .contains("agent")
    );
}

#[test]
fn bad_votes_are_named() {
    let mut s = toy_model(Coupling::Learned);
    let e = s
        .add_vote(Vote {
            channel: Channel::Public,
            agent: 7,
            a: 0,
            b: 1,
            a_wins: true,
        })
        .unwrap_err();
    assert!(e.to_string().contains("agent"), "{e}");
    let e = s
        .add_vote(Vote {
            channel: Channel::Public,
            agent: 0,
            a: 0,
            b: 99,
            a_wins: true,
        })
        .unwrap_err();
    assert!(e.to_string().contains("`b`"), "{e}");
    assert!(s.add_point(&[0.1, 0.2]).is_err());
}

mod lengthscale_cv {
    use super::*;
    use crate::{Stationary, StationaryKind};
    use rand::RngExt;

    /// Votes from a smooth utility pick a longer lengthscale than votes from a wiggly one.
    #[test]
    fn cross_validation_follows_the_data_scale() {
        let grid = [0.03, 0.1, 0.3, 1.0];
        let mut chosen = Vec::new();
        for f in [(|x: f64| 3.0 * (x - 0.5)) as fn(f64) -> f64, |x: f64| {
            3.0 * (25.0 * x).sin()
        }] {
            let mut cfg = SocialConfig::paper(1);
            cfg.coupling = Coupling::Independent;
            cfg.bound = 12.0;
            let k = Box::new(Stationary::ard(StationaryKind::Rbf, 1, 0.3));
            let mut s = SocialModel::new(1, k, cfg).unwrap();
            let m = 30;
            for i in 0..m {
                s.add_point(&[i as f64 / (m - 1) as f64]).unwrap();
            }
            let mut rng = agora_math::rng::stream(9, &[2]);
            for _ in 0..240 {
                let (a, b) = (rng.random_range(0..m), rng.random_range(0..m));
                if a == b {
                    continue;
                }
                let d = f(a as f64 / (m - 1) as f64) - f(b as f64 / (m - 1) as f64);
                let p = 1.0 / (1.0 + (-d).exp());
                s.add_vote(Vote {
                    channel: Channel::Private,
                    agent: 0,
                    a,
                    b,
                    a_wins: rng.random::<f64>() < p,
                })
                .unwrap();
            }
            chosen.push(s.choose_lengthscale(&grid, 5, 1).unwrap().unwrap());
        }
        println!("chosen lengthscales (smooth, wiggly): {chosen:?}");
        assert!(chosen[0] > chosen[1], "{chosen:?}");
        assert!(chosen[1] <= 0.1, "{chosen:?}");
    }
}

mod recovery {
    use super::*;
    use crate::{Stationary, StationaryKind};
    use rand::RngExt;

    /// Synthetic dual votes on random pairs of fixed points with known utilities: `Â → A`,
    /// the Frobenius error falling roughly like `|Q^u|^{−1/2}` (Thm 3.6).
    #[test]
    fn graph_error_falls_like_inverse_sqrt_of_private_votes() {
        let a_true = [[0.7, 0.3], [0.4, 0.6]];
        let m = 12;
        let mut rng = agora_math::rng::stream(5, &[1]);
        let xs: Vec<f64> = (0..m).map(|k| k as f64 / (m - 1) as f64).collect();
        // Smooth utilities within the ball, with distinct shapes (identifiable A).
        let u = |x: f64| [2.0 * (3.0 * x).sin(), 2.0 * (2.0 * x - 1.0)];
        let mut errors = Vec::new();
        let sizes = [40usize, 160, 640];
        for &q in &sizes {
            let mut cfg = SocialConfig::paper(2);
            cfg.bound = 20.0;
            cfg.ridge = 0.0;
            cfg.starts = 3;
            let k = Box::new(Stationary::ard(StationaryKind::Rbf, 1, 0.3));
            let mut s = SocialModel::new(2, k, cfg).unwrap();
            for x in &xs {
                s.add_point(&[*x]).unwrap();
            }
            let mut err = 0.0;
            let reps = 3;
            for _ in 0..reps {
                s.clear_votes();
                for _ in 0..q {
                    let (a, b) = (rng.random_range(0..m), rng.random_range(0..m));
                    if a == b {
                        continue;
                    }
                    let (ua, ub) = (u(xs[a]), u(xs[b]));
                    for i in 0..2 {
                        let dv = (0..2).map(|j| a_true[i][j] * (ua[j] - ub[j])).sum::<f64>();
                        for (ch, d) in [(Channel::Private, ua[i] - ub[i]), (Channel::Public, dv)] {
                            let p = 1.0 / (1.0 + (-d).exp());
                            s.add_vote(Vote {
                                channel: ch,
                                agent: i,
                                a,
                                b,
                                a_wins: rng.random::<f64>() < p,
                            })
                            .unwrap();
                        }
                    }
                }
                let fit = s.refit(3).unwrap();
                let flat: Vec<f64> = a_true.iter().flatten().copied().collect();
                err += fit
                    .a
                    .iter()
                    .zip(&flat)
                    .map(|(x, y)| (x - y).powi(2))
                    .sum::<f64>()
                    .sqrt();
            }
            errors.push(err / reps as f64);
        }
        // Decreasing, with a log-log slope near −1/2 over a 16-fold range of |Q^u|.
        assert!(errors[0] > errors[1] && errors[1] > errors[2], "{errors:?}");
        let slope = (errors[2] / errors[0]).ln() / (sizes[2] as f64 / sizes[0] as f64).ln();
        println!("graph errors {errors:?} at |Q^u| = {sizes:?}: log-log slope {slope:.2}");
        assert!(
            (-0.9..=-0.25).contains(&slope),
            "slope {slope}, errors {errors:?}"
        );
    }
}

/// The private-vote rule's split (item 2 of the Social BO issue): with `A` known the width
/// given the graph is the whole width (no part is due to `A`, so the rule never asks); with
/// `A` learned from the same votes, part of the width is due to `A`, and the
/// width given `Â` is the width of the same problem with `A` known at `Â`.
#[test]
fn the_graph_part_of_the_width_vanishes_when_the_graph_is_known() {
    let toy = vec![vec![0.9, 0.1], vec![0.6, 0.4]];
    let mut known = toy_model(Coupling::Known(SocialGraph::new(&toy, 0.0).unwrap()));
    known.refit(3).unwrap();
    let total = known.difference_widths(1, 4).unwrap();
    let given = known.difference_widths_given_graph(1, 4).unwrap();
    assert_eq!(total, given);
    let norm = |w: &[f64]| w.iter().map(|v| v * v).sum::<f64>().sqrt();
    assert!(norm(&total) > 0.1, "a width to split: {total:?}");

    let mut learned = toy_model(Coupling::Learned);
    let fit = learned.refit(3).unwrap().clone();
    let total = learned.difference_widths(1, 4).unwrap();
    let given = learned.difference_widths_given_graph(1, 4).unwrap();
    for (t, g) in total.iter().zip(&given) {
        // The slice A = Â lies inside the joint set (solver tolerance aside).
        assert!(*g <= t + 1e-4, "{given:?} vs {total:?}");
    }
    assert!(norm(&total) - norm(&given) > 1e-2, "{total:?} {given:?}");
    // Independently: the same problem with A known at Â, and Ĵ shifted by the prior there.
    let rows: Vec<Vec<f64>> = (0..2)
        .map(|i| {
            let r = &fit.a[2 * i..2 * i + 2];
            r.iter().map(|v| v / r.iter().sum::<f64>()).collect()
        })
        .collect();
    let mut at_hat = toy_model(Coupling::Known(SocialGraph::new(&rows, 0.0).unwrap()));
    at_hat.fit = Some(fit.clone());
    let p = learned.config().prior;
    let prior: f64 = fit
        .a
        .iter()
        .map(|v| (p.kappa - 1.0) * v.ln() - p.xi * v * v)
        .sum();
    if let Some(f) = at_hat.fit.as_mut() {
        f.objective -= prior;
        f.modes.clear();
    }
    let want = at_hat.difference_widths(1, 4).unwrap();
    for (g, w) in given.iter().zip(&want) {
        assert!((g - w).abs() < 1e-6, "{given:?} vs {want:?}");
    }
}

/// Sound solves (item 3): a MAP whose solver cannot converge is a clear error, never a
/// silent number; label permutations of a fit are exact symmetries of the public votes.
#[test]
fn an_unusable_map_is_an_error_and_permutations_keep_the_public_likelihood() {
    let mut s = toy_model(Coupling::Learned);
    let mut cfg = s.config().clone();
    cfg.solver.max_outer = 1;
    cfg.solver.inner.max_iter = 2;
    s.cfg = cfg;
    let e = s.refit(1).unwrap_err().to_string();
    assert!(e.contains("did not converge") && e.contains("MAP"), "{e}");
    assert!(
        s.fit().is_none(),
        "nothing is stored from an unusable solve"
    );

    let mut s = toy_model(Coupling::Learned);
    s.refit(1).unwrap();
    let lay = s.layout(false, false);
    let x = s.map_point(&lay).unwrap();
    let swapped = s.permuted(&x, &[1, 0], &lay);
    let (a, b) = (
        s.parts(&x, &lay, [1.0, 1.0, 1.0], None),
        s.parts(&swapped, &lay, [1.0, 1.0, 1.0], None),
    );
    assert!(
        (a[1] - b[1]).abs() < 1e-12,
        "public log-likelihood {a:?} vs {b:?}"
    );
    assert!((a[2] - b[2]).abs() < 1e-12, "prior {a:?} vs {b:?}");
    assert!(
        (a[0] - b[0]).abs() > 1e-3,
        "private votes break the symmetry"
    );
    assert_eq!(permutations(3).len(), 6);
    assert_eq!(permutations(3)[0], vec![0, 1, 2]);
}

/// The rows of `A` held to sum 1 by eliminating the diagonal (`SocialModel::solve_al`) give
/// the same MAP as the rows as equality constraints of the augmented Lagrangian (the
/// formulation agora used before, and IPOPT's in conformance/sbo-map): the chain rule of the
/// elimination matches finite differences, the continued log prior is C² at its knot, and
/// the two MAPs agree.
#[test]
fn eliminating_the_rows_of_the_graph_keeps_the_map() {
    use agora_core::Result;
    use agora_math::constrained::{AlOptions, Constraint, Kind, minimize_al};
    // The continued log: value, slope and curvature continuous at the knot.
    let eps = 0.005;
    let (l0, d0) = map::log_extended(eps * (1.0 + 1e-12), eps);
    let (l1, d1) = map::log_extended(eps * (1.0 - 1e-12), eps);
    assert!(
        (l0 - l1).abs() < 1e-10 && (d0 - d1).abs() < 1e-6,
        "{l0} {l1} {d0} {d1}"
    );
    let curv = |a: f64| {
        let h = 1e-7;
        (map::log_extended(a + h, eps).1 - map::log_extended(a - h, eps).1) / (2.0 * h)
    };
    assert!((curv(eps * 1.01) - curv(eps * 0.99)).abs() < 0.03 / (eps * eps));
    assert!(map::log_extended(-1.0, eps).0.is_finite());

    let mut s = toy_model(Coupling::Learned);
    s.refit(1).unwrap();
    let lay = s.layout(false, false);
    let (n, off) = (s.n(), lay.a_off());
    let full = |x: &[f64], g: &mut [f64]| -> Result<f64> {
        g.iter_mut().for_each(|v| *v = 0.0);
        Ok(s.parts(x, &lay, [1.0; 3], Some(g)).iter().sum())
    };
    // The solver's variables drop A_00 and A_11, and with the preconditioner they are
    // `L^T (α − α̂)` and scaled entries of A.
    let pre = s.precond().expect("the toy's curvature factors");
    for pre in [None, Some(&*pre)] {
        let vars = map::SetVars::new(&lay, pre);
        let reduced = |y: &[f64], gy: &mut [f64]| -> Result<f64> {
            let x = vars.expand(y);
            let mut gx = vec![0.0; x.len()];
            let v = full(&x, &mut gx)?;
            agora_math::constrained::Reparam::pullback(&vars, &gx, gy);
            Ok(v)
        };
        let x: Vec<f64> = (0..lay.len())
            .map(|k| {
                if k >= off {
                    if (k - off) / n == (k - off) % n {
                        0.7
                    } else {
                        0.3
                    }
                } else {
                    ((k * 7 % 11) as f64 / 11.0) - 0.4
                }
            })
            .collect();
        let y = vars.reduce(&x);
        assert_eq!(y.len(), lay.len() - n);
        let back = vars.expand(&y);
        for (a, b) in x.iter().zip(&back) {
            assert!((a - b).abs() < 1e-12, "expand(reduce(x)) = x: {a} vs {b}");
        }
        let mut g = vec![0.0; y.len()];
        reduced(&y, &mut g).unwrap();
        let f = |v: &[f64]| reduced(v, &mut vec![0.0; v.len()]).unwrap();
        check_gradient(
            f,
            &y,
            1e-6,
            &g,
            Tol::Abs(1e-5),
            "MAP objective in the solver's variables",
        );
    }

    // The same MAP as the equality-constrained problem, solved tightly from the uniform A.
    let fit = s.fit().unwrap().clone();
    let obj = |x: &[f64], g: &mut [f64]| -> Result<f64> {
        g.iter_mut().for_each(|v| *v = 0.0);
        let p = s.parts(x, &lay, [-1.0; 3], Some(g));
        Ok(-(p[0] + p[1] + p[2]))
    };
    let balls = s.ball_fns(&lay);
    let rows: Vec<SetConstraint<'_>> = (0..n)
        .map(|i| {
            Box::new(move |x: &[f64], g: &mut [f64]| -> Result<f64> {
                g.iter_mut().for_each(|v| *v = 0.0);
                let mut t = -1.0;
                for j in 0..n {
                    t += x[off + i * n + j];
                    g[off + i * n + j] = 1.0;
                }
                Ok(t)
            }) as SetConstraint<'_>
        })
        .collect();
    let mut cons = constraints(&[&balls]);
    cons.extend(rows.iter().map(|f| Constraint {
        kind: Kind::Equality,
        f: f.as_ref(),
    }));
    let mut x0 = vec![0.0; lay.len()];
    x0[off..].iter_mut().for_each(|v| *v = 0.5);
    let opts = AlOptions {
        opt_tol: 1e-9,
        feas_tol: 1e-11,
        ..AlOptions::default()
    };
    let eq = minimize_al(&obj, &cons, &s.bounds_for(&lay), &x0, None, opts).unwrap();
    assert!(eq.kkt.feasibility < 1e-9, "{:?}", eq.kkt);
    assert!(
        (fit.objective + eq.f).abs() < 1e-6 * (1.0 + eq.f.abs()),
        "eliminated {} vs equality-constrained {}",
        fit.objective,
        -eq.f
    );
    for i in 0..n {
        let r: f64 = fit.a[i * n..(i + 1) * n].iter().sum();
        assert!((r - 1.0).abs() < 1e-12, "row {i} sums to {r}");
        assert!(fit.a[i * n..(i + 1) * n].iter().all(|v| *v >= 0.01 - 1e-9));
    }
}

/// The preconditioner (`map::Precond`: `α = α̂ + L⁻ᵀ y` with `L Lᵀ` each agent's block of
/// the MAP's curvature, scaled entries of `A` and `β`) changes the solver's path, not the
/// problem: the widths and the optimistic-improvement-like bound over an extended layout
/// agree with the unpreconditioned solves to the solver's tolerance.
#[test]
fn the_preconditioner_keeps_the_set_problems() {
    let mut s = toy_model(Coupling::Learned);
    s.refit(3).unwrap();
    assert!(s.precond().is_some());
    // A bound at a new point: the largest u_0 at point 0 plus agent 1's new coordinate.
    let upper = |s: &SocialModel| {
        let lay = s.layout(true, false);
        let obj = |v: &[f64], g: &mut [f64]| -> agora_core::Result<f64> {
            g.iter_mut().for_each(|e| *e = 0.0);
            g[0] = -1.0;
            g[lay.beta() + 1] = -1.0;
            Ok(-(v[0] + v[lay.beta() + 1]))
        };
        s.minimize_over_set(&lay, &obj, &[], s.map_point(&lay).unwrap())
            .unwrap()
            .f
    };
    let with = [
        s.difference_widths(0, 2).unwrap(),
        s.difference_widths(1, 4).unwrap(),
    ];
    let upper_with = upper(&s);
    // The same fit with the preconditioner switched off (its slot holds "none" for it).
    let mut off = s.clone();
    off.precond = Default::default();
    off.precond();
    let key = off.precond.lock().unwrap().take().unwrap().0;
    *off.precond.lock().unwrap() = Some((key, None));
    assert!(off.precond().is_none());
    let without = [
        off.difference_widths(0, 2).unwrap(),
        off.difference_widths(1, 4).unwrap(),
    ];
    for (a, b) in with.iter().flatten().zip(without.iter().flatten()) {
        assert!((a - b).abs() < 1e-4 * (1.0 + b.abs()), "width {a} vs {b}");
    }
    let upper_without = upper(&off);
    assert!(
        (upper_with - upper_without).abs() < 1e-4 * (1.0 + upper_without.abs()),
        "{upper_with} vs {upper_without}"
    );
}
