//! Tests of the Laplace belief against references that do not go through it: the Laplace
//! predictive variance of a GP classifier written in the utilities (Rasmussen & Williams,
//! GPML Eq. 3.24), finite differences of the exact gradient (`parts`), and the KKT form of
//! a constrained Gaussian's covariance.

use super::super::*;
use crate::{Kernel, Stationary, StationaryKind};
use agora_core::Channel;
use agora_math::fd::{Tol, fd_jacobian};
use faer::Mat;
use faer::linalg::solvers::Solve;

const XS: [f64; 6] = [0.1, 0.5, 0.9, 0.3, 0.7, 0.2];

fn kernel() -> Box<Stationary> {
    Box::new(Stationary::ard(StationaryKind::Rbf, 1, 0.2))
}

/// `n` agents, agent `i` liking points near `ideals[i]`; every pair of `PAIRS` voted on by
/// every agent three times, once against its taste (so no vote set is separable and the MAP
/// is interior). Public votes follow agent 0's taste, one in three flipped.
fn model(ideals: &[f64], coupling: Coupling, ridge: f64, bound: f64, public: bool) -> SocialModel {
    let n = ideals.len();
    let mut cfg = SocialConfig::paper(n);
    cfg.coupling = coupling;
    cfg.ridge = ridge;
    cfg.bound = bound;
    let mut s = SocialModel::new(n, kernel(), cfg).unwrap();
    for x in XS {
        s.add_point(&[x]).unwrap();
    }
    let taste =
        |i: usize, a: usize, b: usize| (XS[a] - ideals[i]).abs() < (XS[b] - ideals[i]).abs();
    let pairs = [
        (0, 1),
        (1, 2),
        (3, 4),
        (0, 2),
        (2, 3),
        (1, 4),
        (5, 0),
        (5, 4),
    ];
    for (a, b) in pairs {
        for rep in 0..3 {
            for i in 0..n {
                s.add_vote(Vote {
                    channel: Channel::Private,
                    agent: i,
                    a,
                    b,
                    a_wins: taste(i, a, b) ^ (rep == 2),
                })
                .unwrap();
                if public {
                    s.add_vote(Vote {
                        channel: Channel::Public,
                        agent: i,
                        a,
                        b,
                        a_wins: taste(0, a, b) ^ (rep == i % 3),
                    })
                    .unwrap();
                }
            }
        }
    }
    s.refit(1).unwrap();
    s
}

fn sigma(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// (a) Independent utilities with only private votes and a ridge `r`: the Laplace posterior
/// of agent `i`'s utilities is a GP classifier's with prior kernel `(k + jitter·δ)/r` and
/// likelihood curvature `W = Σ p(1−p)(e_a − e_b)(e_a − e_b)ᵀ` at the MAP, whose predictive
/// variance is `k̃(x,x) − k̃_xᵀ (I + W K̃)⁻¹ W k̃_x` (GPML Eq. 3.24 with a non-diagonal `W`).
/// Built here in the utilities, from the kernel, without whitening or tangent spaces.
#[test]
fn independent_variance_matches_the_gp_laplace_closed_form() {
    let r = 0.5;
    let s = model(&[0.2, 0.8], Coupling::Independent, r, 10.0, false);
    let test_x = [0.0, 0.4, 0.65, 1.0, 0.5];
    let xs: Vec<Vec<f64>> = test_x.iter().map(|x| vec![*x]).collect();
    let b = s.belief_at(&xs).unwrap();
    assert!(b.active.balls.is_empty() && b.active.graph_bounds.is_empty());
    assert_eq!(b.jitter, 0.0);
    let (n, m) = (2, XS.len());
    let jit = s.config().jitter;
    let u = s.map_utilities().unwrap();
    let pts = s.points().clone();
    let k = kernel();
    let gram = k.gram(pts.as_ref());
    let kt = Mat::from_fn(m, m, |a, c| {
        (gram[(a, c)] + if a == c { jit } else { 0.0 }) / r
    });
    for i in 0..n {
        let mut w = Mat::<f64>::zeros(m, m);
        for v in s.votes().0.iter().filter(|v| v.agent == i) {
            let d = u[i * m + v.a] - u[i * m + v.b];
            let pq = sigma(d) * (1.0 - sigma(d));
            w[(v.a, v.a)] += pq;
            w[(v.b, v.b)] += pq;
            w[(v.a, v.b)] -= pq;
            w[(v.b, v.a)] -= pq;
        }
        let lhs = Mat::<f64>::identity(m, m) + &w * &kt;
        for (p, x) in test_x.iter().enumerate() {
            let xm = Mat::from_fn(1, 1, |_, _| *x);
            let kx = k.cross(pts.as_ref(), xm.as_ref()) * faer::Scale(1.0 / r);
            let kxx = (k.diag(xm.as_ref())[0] + jit) / r;
            let y = lhs.partial_piv_lu().solve(&w * &kx);
            let reference = kxx - (kx.transpose() * &y)[(0, 0)];
            let got = b.points[p].cov[(i, i)];
            println!("agent {i} x {x}: Laplace var {got:.10} vs closed form {reference:.10}");
            assert!(
                (got - reference).abs() < 1e-8 * (1.0 + reference.abs()),
                "agent {i} at {x}: {got} vs {reference}"
            );
            // (b) the mean is the MAP's.
            assert!((b.points[p].mean[i] - s.map_at(&[*x]).unwrap()[i]).abs() < 1e-12);
        }
    }
    // Independent agents: no cross-covariance.
    for pb in &b.points {
        assert!(pb.cov[(0, 1)].abs() < 1e-12 && pb.cov[(1, 0)].abs() < 1e-12);
    }
}

/// The analytic negative Hessian of the coupled (learned-graph) objective against central
/// differences of its exact gradient (`parts`), at a generic point and at the MAP.
#[test]
fn coupled_hessian_matches_finite_differences_of_the_gradient() {
    let s = model(&[0.2, 0.5, 0.8], Coupling::Learned, 0.1, 5.0, true);
    let lay = s.layout(false, false);
    let p = lay.len();
    let mut generic: Vec<f64> = (0..p).map(|k| ((k * 7 % 11) as f64 / 11.0) - 0.4).collect();
    generic[lay.a_off()..].copy_from_slice(&[0.6, 0.3, 0.1, 0.2, 0.5, 0.3, 0.25, 0.25, 0.5]);
    for (what, x) in [("generic", generic), ("MAP", s.map_point(&lay).unwrap())] {
        let h = s.neg_hessian(&x, &lay);
        let grad = |v: &[f64]| {
            let mut g = vec![0.0; p];
            s.parts(v, &lay, [1.0; 3], Some(&mut g));
            g
        };
        let jac = fd_jacobian(grad, &x, 1e-5);
        let mut worst = 0.0f64;
        for i in 0..p {
            for j in 0..p {
                let fd = -jac[j][i];
                worst = worst.max((h[(i, j)] - fd).abs());
                assert!(
                    Tol::ScaledByFd(1e-5).accepts(h[(i, j)], fd),
                    "{what}: H[{i}][{j}] = {} vs finite difference {fd}",
                    h[(i, j)]
                );
            }
        }
        println!("{what}: worst |H − H_fd| = {worst:.2e} over {p}×{p}");
    }
}

/// Per point `x`, the covariance of `u(x, :)` from the KKT system `[[H, Eᵀ], [E, 0]]`
/// (`E`: the row sums of `A`, the graph bounds reported active, the active balls' normals
/// `α_i`; `H` with the balls' curvature `2μ_i`), solved by LU: an independent route to
/// `Z (Zᵀ H Z)⁻¹ Zᵀ`.
fn kkt_covariances(s: &SocialModel, b: &SocialBelief, xs: &[Vec<f64>]) -> Vec<Mat<f64>> {
    let lay = s.layout(false, false);
    let (n, m, p) = (s.n(), s.m(), lay.len());
    let x = s.map_point(&lay).unwrap();
    let mut h = s.neg_hessian(&x, &lay);
    let mut e: Vec<Vec<f64>> = Vec::new();
    for &(i, mu) in &b.active.balls {
        let mut row = vec![0.0; p];
        for k in 0..m {
            h[(i * m + k, i * m + k)] += 2.0 * mu;
            row[i * m + k] = x[i * m + k];
        }
        e.push(row);
    }
    if lay.a {
        for i in 0..n {
            let mut row = vec![0.0; p];
            for j in 0..n {
                row[lay.a_off() + i * n + j] = 1.0;
            }
            e.push(row);
        }
        for &(i, j) in &b.active.graph_bounds {
            let mut row = vec![0.0; p];
            row[lay.a_off() + i * n + j] = 1.0;
            e.push(row);
        }
    }
    let ne = e.len();
    let kkt = Mat::from_fn(p + ne, p + ne, |a, c| match (a < p, c < p) {
        (true, true) => h[(a, c)],
        (true, false) => e[c - p][a],
        (false, true) => e[a - p][c],
        (false, false) => 0.0,
    });
    let lu = kkt.partial_piv_lu();
    let r = s.config().ridge;
    xs.iter()
        .map(|x| {
            let (c, sx) = s.extension(x).unwrap();
            let g = Mat::from_fn(p + ne, n, |a, i| {
                if a >= i * m && a < (i + 1) * m {
                    c[a - i * m]
                } else {
                    0.0
                }
            });
            let y = lu.solve(&g);
            let cov = g.transpose() * &y;
            Mat::from_fn(n, n, |i, j| {
                cov[(i, j)] + if i == j { sx * sx / r } else { 0.0 }
            })
        })
        .collect()
}

fn assert_cov_close(b: &SocialBelief, refs: &[Mat<f64>], what: &str) {
    for (k, (pb, rc)) in b.points.iter().zip(refs).enumerate() {
        let n = rc.nrows();
        for i in 0..n {
            for j in 0..n {
                let (got, want) = (pb.cov[(i, j)], rc[(i, j)]);
                assert!(
                    (got - want).abs() < 1e-8 * (1.0 + want.abs()),
                    "{what}: point {k} cov[{i}][{j}] = {got} vs KKT {want}"
                );
            }
        }
    }
}

/// (a) The coupled model's covariance against the KKT form; the tangent basis is
/// orthonormal and keeps every row sum of `A`; agents are correlated through `A`.
#[test]
fn coupled_covariance_matches_the_kkt_form() {
    let s = model(&[0.2, 0.5, 0.8], Coupling::Learned, 0.1, 5.0, true);
    let xs: Vec<Vec<f64>> = [0.0, 0.35, 0.5, 0.95].iter().map(|x| vec![*x]).collect();
    let b = s.belief_at(&xs).unwrap();
    println!(
        "coupled: jitter {}, active {:?}, Â {:?}",
        b.jitter,
        b.active,
        s.fit().unwrap().a
    );
    assert!(b.active.balls.is_empty(), "{:?}", b.active);
    assert_eq!(b.jitter, 0.0);
    assert_cov_close(&b, &kkt_covariances(&s, &b, &xs), "coupled");
    let lap = s.laplace().unwrap();
    let lay = s.layout(false, false);
    let ztz = lap.z.transpose() * &lap.z;
    let n = s.n();
    for a in 0..lap.z.ncols() {
        for c in 0..lap.z.ncols() {
            let want = if a == c { 1.0 } else { 0.0 };
            assert!((ztz[(a, c)] - want).abs() < 1e-12);
        }
        for i in 0..n {
            let row: f64 = (0..n).map(|j| lap.z[(lay.a_off() + i * n + j, a)]).sum();
            assert!(
                row.abs() < 1e-12,
                "direction {a} moves row {i}'s sum by {row}"
            );
        }
    }
    let corr = b
        .points
        .iter()
        .map(|p| p.cov[(0, 1)].abs() / (p.cov[(0, 0)] * p.cov[(1, 1)]).sqrt())
        .fold(0.0, f64::max);
    println!("coupled: largest |corr(u_0, u_1)| {corr:.3}");
    assert!(corr > 1e-3);
}

/// An active ball: the belief is on the sphere's tangent space with the Lagrangian's
/// curvature, against the KKT form with the ball's normal; the multiplier reported meets
/// stationarity `∇_i J = 2 μ_i α_i`.
#[test]
fn an_active_ball_is_an_equality_with_its_curvature() {
    let s = model(&[0.2, 0.8], Coupling::Learned, 0.01, 0.6, true);
    let xs: Vec<Vec<f64>> = [0.05, 0.5, 0.9].iter().map(|x| vec![*x]).collect();
    let b = s.belief_at(&xs).unwrap();
    println!("small ball: active {:?}, jitter {}", b.active, b.jitter);
    assert!(!b.active.balls.is_empty(), "{:?}", b.active);
    let lay = s.layout(false, false);
    let x = s.map_point(&lay).unwrap();
    let mut g = vec![0.0; lay.len()];
    s.parts(&x, &lay, [1.0; 3], Some(&mut g));
    let m = s.m();
    for &(i, mu) in &b.active.balls {
        for k in 0..m {
            let (gk, want) = (g[i * m + k], 2.0 * mu * x[i * m + k]);
            assert!(
                (gk - want).abs() < 1e-4 * (1.0 + gk.abs()),
                "agent {i}: {gk} vs {want}"
            );
        }
    }
    assert_eq!(b.jitter, 0.0);
    assert_cov_close(&b, &kkt_covariances(&s, &b, &xs), "active ball");
}

/// (c) Voted points are known better than a point far from all of them, where the belief
/// is the prior of the new coordinate, `sd = √((k(x,x) + jitter)/r)`.
#[test]
fn voted_points_are_surer_than_far_ones() {
    let s = model(&[0.2, 0.5, 0.8], Coupling::Learned, 0.1, 5.0, true);
    let mut xs: Vec<Vec<f64>> = XS.iter().map(|x| vec![*x]).collect();
    xs.push(vec![4.0]);
    let b = s.belief_at(&xs).unwrap();
    let far = b.points.last().unwrap().sd();
    let prior = ((1.0 + s.config().jitter) / s.config().ridge).sqrt();
    for (i, sd) in far.iter().enumerate() {
        assert!(
            (sd - prior).abs() < 1e-9,
            "agent {i}: far sd {sd} vs prior {prior}"
        );
    }
    for (k, pb) in b.points[..XS.len()].iter().enumerate() {
        let sd = pb.sd();
        println!("x = {}: sd {sd:?} (far {prior:.3})", XS[k]);
        for i in 0..s.n() {
            assert!(
                sd[i] < 0.9 * far[i],
                "agent {i} at x = {}: {} vs {}",
                XS[k],
                sd[i],
                far[i]
            );
        }
        for (i, mean) in pb.mean.iter().enumerate() {
            assert!((mean - s.map_at(&xs[k]).unwrap()[i]).abs() < 1e-12);
        }
    }
}

#[test]
fn bad_requests_are_named() {
    let mut s = model(&[0.2, 0.8], Coupling::Learned, 0.0, 5.0, true);
    let e = s.belief_at(&[vec![0.5]]).unwrap_err();
    assert!(e.to_string().contains("ridge"), "{e}");
    s.cfg.ridge = 0.1;
    s.refit(1).unwrap();
    let e = s.belief_at(&[vec![0.5], vec![0.5, 0.1]]).unwrap_err();
    assert!(e.to_string().contains("xs[1]"), "{e}");
    let e = s.belief_at(&[vec![f64::NAN]]).unwrap_err();
    assert!(e.to_string().contains("xs[0]"), "{e}");
    s.clear_votes();
    let e = s.belief_at(&[vec![0.5]]).unwrap_err();
    assert!(e.to_string().contains("fit"), "{e}");
}

/// Entries of `A` at their floor (a flat prior, `κ = 1`, `ξ = 0`, lets the votes push them
/// there) are fixed: against the KKT form with those bounds as equalities.
#[test]
fn graph_entries_at_a_bound_are_fixed() {
    let mut s = model(&[0.0, 1.0, 0.5], Coupling::Learned, 0.05, 8.0, true);
    s.cfg.prior = SocialPrior {
        delta_a: 0.01,
        kappa: 1.0,
        xi: 0.0,
    };
    s.refit(1).unwrap();
    let xs: Vec<Vec<f64>> = [0.05, 0.5, 0.9].iter().map(|x| vec![*x]).collect();
    let b = s.belief_at(&xs).unwrap();
    println!(
        "flat prior: active {:?}, Â {:?}",
        b.active,
        s.fit().unwrap().a
    );
    assert!(!b.active.graph_bounds.is_empty(), "{:?}", b.active);
    assert_eq!(b.jitter, 0.0);
    assert_cov_close(&b, &kkt_covariances(&s, &b, &xs), "graph at its floor");
}
