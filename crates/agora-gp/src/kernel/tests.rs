use super::*;
use faer::Mat;

fn pts(n: usize, d: usize, seed: u64) -> Mat<f64> {
    let mut s = seed;
    Mat::from_fn(n, d, |_, _| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    })
}

fn kernels() -> Vec<Box<dyn Kernel>> {
    let mut out: Vec<Box<dyn Kernel>> = Vec::new();
    for kind in [
        StationaryKind::Rbf,
        StationaryKind::Matern12,
        StationaryKind::Matern32,
        StationaryKind::Matern52,
    ] {
        let mut k = Stationary::ard(kind, 3, 0.4);
        k.set_params(&[0.3f64.ln(), 0.5f64.ln(), 0.8f64.ln()])
            .unwrap();
        out.push(Box::new(Scale::new(Box::new(k), 1.7)));
    }
    out.push(Box::new(Sum::additive(
        StationaryKind::Matern52,
        &[vec![0], vec![1, 2]],
        0.3,
        0.8,
    )));
    out.push(Box::new(Product {
        parts: vec![
            Box::new(Scale::new(
                Box::new(Stationary::on(StationaryKind::Rbf, vec![0, 1], 0.5)),
                1.3,
            )),
            Box::new(Stationary::on(StationaryKind::Matern32, vec![2], 0.7)),
        ],
    }));
    out
}

#[test]
fn closed_form_values() {
    // RBF, l = 0.5, s = 2: k = 2 exp(-0.5 · (0.3² + 0.4²)/0.25) = 2 exp(-0.5).
    let k = Scale::new(Box::new(Stationary::ard(StationaryKind::Rbf, 2, 0.5)), 2.0);
    let a = faer::mat![[0.0, 0.0]];
    let b = faer::mat![[0.3, 0.4]];
    assert!((k.cross(a.as_ref(), b.as_ref())[(0, 0)] - 2.0 * (-0.5f64).exp()).abs() < 1e-15);
    // Matérn 5/2 at r = 1: (1 + √5 + 5/3) e^{-√5}.
    let m = Stationary::ard(StationaryKind::Matern52, 1, 1.0);
    let v = m.cross(faer::mat![[0.0]].as_ref(), faer::mat![[1.0]].as_ref())[(0, 0)];
    assert!((v - (1.0 + 5f64.sqrt() + 5.0 / 3.0) * (-(5f64.sqrt())).exp()).abs() < 1e-15);
}

#[test]
fn hyperparameter_gradients_match_finite_differences() {
    let x = pts(7, 3, 1);
    let w = pts(7, 7, 2);
    for k in kernels() {
        let g = k.grad_contract(x.as_ref(), w.as_ref());
        let gg = k.grad_contract_with_gram(x.as_ref(), w.as_ref(), k.gram(x.as_ref()).as_ref());
        for (a, b) in g.iter().zip(&gg) {
            assert!(
                (a - b).abs() < 1e-12 * (1.0 + a.abs()),
                "{k:?}: with gram {b} vs {a}"
            );
        }
        let p0 = k.params();
        assert_eq!(g.len(), p0.len());
        for i in 0..p0.len() {
            let h = 1e-6;
            let f = |delta: f64| {
                let mut kk = k.box_clone();
                let mut p = p0.clone();
                p[i] += delta;
                kk.set_params(&p).unwrap();
                hadamard_sum(w.as_ref(), kk.gram(x.as_ref()).as_ref())
            };
            let fd = (f(h) - f(-h)) / (2.0 * h);
            assert!(
                (fd - g[i]).abs() < 1e-6 * (1.0 + fd.abs()),
                "{k:?} param {i}: fd {fd} vs {}",
                g[i]
            );
        }
    }
}

#[test]
fn input_gradients_match_finite_differences() {
    let b = pts(5, 3, 3);
    let x = [0.41, 0.27, 0.66];
    for k in kernels() {
        let g = k.grad_x(&x, b.as_ref());
        for j in 0..3 {
            let h = 1e-6;
            let mut xp = x;
            let mut xm = x;
            xp[j] += h;
            xm[j] -= h;
            let kp = k.cross(Mat::from_fn(1, 3, |_, c| xp[c]).as_ref(), b.as_ref());
            let km = k.cross(Mat::from_fn(1, 3, |_, c| xm[c]).as_ref(), b.as_ref());
            for i in 0..5 {
                let fd = (kp[(0, i)] - km[(0, i)]) / (2.0 * h);
                assert!(
                    (fd - g[(i, j)]).abs() < 1e-6,
                    "{k:?} ({i},{j}): {fd} vs {}",
                    g[(i, j)]
                );
            }
        }
    }
}

#[test]
fn gram_equals_cross_and_diag() {
    let x = pts(6, 3, 4);
    for k in kernels() {
        let g = k.gram(x.as_ref());
        let c = k.cross(x.as_ref(), x.as_ref());
        let d = k.diag(x.as_ref());
        for i in 0..6 {
            assert!((g[(i, i)] - d[i]).abs() < 1e-14);
            for j in 0..6 {
                assert!((g[(i, j)] - c[(i, j)]).abs() < 1e-14);
            }
        }
    }
    let p = Precomputed::new(faer::mat![[2.0, 0.5], [0.5, 1.0]]).unwrap();
    let idx = faer::mat![[1.0], [0.0]];
    assert_eq!(p.gram(idx.as_ref())[(0, 1)], 0.5);
    assert_eq!(p.diag(idx.as_ref()), vec![1.0, 2.0]);
}
