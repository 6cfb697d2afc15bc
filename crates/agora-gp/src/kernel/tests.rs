use super::*;
use agora_math::fd::{Tol, assert_gradient, check_gradient, fd_jacobian};
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
        let f = |p: &[f64]| {
            let mut kk = k.box_clone();
            kk.set_params(p).unwrap();
            hadamard_sum(w.as_ref(), kk.gram(x.as_ref()).as_ref())
        };
        check_gradient(f, &p0, 1e-6, &g, Tol::ScaledByFd(1e-6), &format!("{k:?}"));
    }
}

#[test]
fn input_gradients_match_finite_differences() {
    let b = pts(5, 3, 3);
    let x = [0.41, 0.27, 0.66];
    for k in kernels() {
        let g = k.grad_x(&x, b.as_ref());
        let row = |z: &[f64]| {
            let kz = k.cross(Mat::from_fn(1, 3, |_, c| z[c]).as_ref(), b.as_ref());
            (0..5).map(|i| kz[(0, i)]).collect::<Vec<f64>>()
        };
        for (j, fd) in fd_jacobian(row, &x, 1e-6).iter().enumerate() {
            let analytic: Vec<f64> = (0..5).map(|i| g[(i, j)]).collect();
            assert_gradient(&analytic, fd, Tol::Abs(1e-6), &format!("{k:?} input {j}"));
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

#[test]
fn scratch_and_fused_paths_equal_the_plain_ones_bit_for_bit() {
    // The shared-work paths must change no number: compare them with the plain methods.
    let bits = |m: &Mat<f64>| -> Vec<u64> {
        (0..m.ncols())
            .flat_map(|c| (0..m.nrows()).map(move |r| m[(r, c)].to_bits()))
            .collect()
    };
    let x = pts(9, 3, 5);
    let w = {
        let a = pts(9, 9, 6);
        Mat::from_fn(9, 9, |i, j| a[(i, j)] + a[(j, i)] - 1.0)
    };
    let xq = [0.2, 0.7, 0.4];
    for k in kernels() {
        let mut scratch = GramScratch::default();
        let g = k.gram_scratch(x.as_ref(), &mut scratch);
        assert_eq!(bits(&g), bits(&k.gram(x.as_ref())), "{k:?}");
        let want = k.grad_contract_with_gram(x.as_ref(), w.as_ref(), g.as_ref());
        let got = k.grad_contract_scratch(x.as_ref(), w.as_ref(), g.as_ref(), 1.0, &scratch);
        assert_eq!(want, got, "{k:?}");
        // An outer scale of 2.5 on the Gram, divided out on the fly.
        let g2 = Mat::from_fn(9, 9, |i, j| 2.5 * g[(i, j)]);
        let inner = Mat::from_fn(9, 9, |i, j| g2[(i, j)] / 2.5);
        let want = k.grad_contract_with_gram(x.as_ref(), w.as_ref(), inner.as_ref());
        let got = k.grad_contract_scratch(x.as_ref(), w.as_ref(), g2.as_ref(), 2.5, &scratch);
        assert_eq!(want, got, "{k:?}");
        let (kv, dk) = k.cross_grad_x(&xq, x.as_ref());
        let xm = Mat::from_fn(1, 3, |_, j| xq[j]);
        let kc = k.cross(x.as_ref(), xm.as_ref());
        let kc: Vec<f64> = (0..9).map(|i| kc[(i, 0)]).collect();
        assert_eq!(kv, kc, "{k:?}");
        assert_eq!(bits(&dk), bits(&k.grad_x(&xq, x.as_ref())), "{k:?}");
    }
}
