//! Seeded space-filling designs in the unit cube `[0, 1)^d`.
//!
//! * [`sobol`]: Owen-scrambled Sobol points (I. M. Sobol', "On the distribution of points in
//!   a cube and the approximate evaluation of integrals", USSR Comput. Math. Math. Phys. 7
//!   (1967) 86–112; A. B. Owen, "Randomly permuted (t,m,s)-nets and (t,s)-sequences",
//!   1995), via the hash-based scrambling of B. Burley, "Practical hash-based Owen
//!   scrambling", JCGT 9(4) 2020, as implemented by the `sobol_burley` crate.
//! * [`latin_hypercube`]: Latin hypercube sampling (M. D. McKay, R. J. Beckman,
//!   W. J. Conover, "A comparison of three methods for selecting values of input variables
//!   in the analysis of output from a computer code", Technometrics 21 (1979) 239–245).
//! * [`uniform`]: independent uniform points.
//!
//! All return `n` points as `Vec<Vec<f64>>` (row `i` is point `i`, of length `d`), reject
//! `d == 0` with an error naming `d`, and return an empty design for `n == 0`.

use rand::seq::SliceRandom;
use rand::{Rng, RngExt};

use crate::{Error, Result};

/// Largest number of dimensions [`sobol`] supports (`sobol_burley::NUM_DIMENSIONS`).
pub const SOBOL_MAX_DIM: usize = 256;
/// Largest number of points [`sobol`] supports (`2^16`, the `sobol_burley` limit).
pub const SOBOL_MAX_POINTS: usize = 1 << 16;

/// The largest `f64` below 1, used to keep points inside `[0, 1)` after rounding.
const BELOW_ONE: f64 = 1.0 - f64::EPSILON / 2.0;

/// Reject `d == 0`, then allocate an `n × d` design of zeros without panicking: an `n`
/// (or `n · d`) too large for memory is reported as an error naming `n`.
fn zeros(n: usize, d: usize) -> Result<Vec<Vec<f64>>> {
    if d == 0 {
        return Err(Error::invalid(
            "d",
            "the number of dimensions must be at least 1",
        ));
    }
    let too_large = || {
        Error::invalid(
            "n",
            format!("a design of {n} points in {d} dimensions does not fit in memory"),
        )
    };
    if n.checked_mul(d).is_none() {
        return Err(too_large());
    }
    let mut points: Vec<Vec<f64>> = Vec::new();
    points.try_reserve_exact(n).map_err(|_| too_large())?;
    for _ in 0..n {
        let mut row = Vec::new();
        row.try_reserve_exact(d).map_err(|_| too_large())?;
        row.resize(d, 0.0);
        points.push(row);
    }
    Ok(points)
}

/// SplitMix64 finaliser (G. L. Steele, D. Lea, C. H. Flood, "Fast splittable pseudorandom
/// number generators", OOPSLA 2014): a bijective 64-bit mix.
fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The 32-bit `sobol_burley` seed for a 64-bit design seed: SplitMix64 of `seed`, folded
/// (`hi ^ lo`) to 32 bits, so that every bit of `seed` influences the scramble.
fn sobol_scramble_seed(seed: u64) -> u32 {
    let z = splitmix64(seed);
    ((z >> 32) ^ (z & 0xffff_ffff)) as u32
}

/// `n` Owen-scrambled Sobol points in `[0, 1)^d`, deterministic in `seed`.
///
/// Point `i`, coordinate `j` is `sobol_burley::sample(i, j, s)` (an `f32` with 23 random
/// bits, converted exactly to `f64`), where the scramble seed `s` is the SplitMix64 hash
/// of `seed` folded to 32 bits. Different seeds give independent randomisations
/// (Burley 2020: Owen scrambling of the digits plus a scrambled shuffle of the index).
/// For `n = 2^m` the points form a `(0, m, 1)`-net in every coordinate (exactly one point
/// in each interval `[k/2^m, (k+1)/2^m)`), which [`latin_hypercube`] only matches in 1-D.
///
/// # Errors
///
/// [`Error::InvalidInput`] naming `d` if `d == 0` or `d > 256` ([`SOBOL_MAX_DIM`]), and
/// naming `n` if `n > 65536` ([`SOBOL_MAX_POINTS`]).
pub fn sobol(n: usize, d: usize, seed: u64) -> Result<Vec<Vec<f64>>> {
    if d == 0 {
        return Err(Error::invalid(
            "d",
            "the number of dimensions must be at least 1",
        ));
    }
    if d > SOBOL_MAX_DIM {
        return Err(Error::invalid(
            "d",
            format!("Sobol designs support at most {SOBOL_MAX_DIM} dimensions, got {d}"),
        ));
    }
    if n > SOBOL_MAX_POINTS {
        return Err(Error::invalid(
            "n",
            format!("Sobol designs support at most {SOBOL_MAX_POINTS} points, got {n}"),
        ));
    }
    let s = sobol_scramble_seed(seed);
    let mut points = zeros(n, d)?;
    // n <= 2^16 and d <= 256 were checked above, so the u32 indices are exact and within
    // sobol_burley's limits (its `sample` panics for a dimension >= 256).
    // Four dimensions per call (sobol_burley's `sample_4d`, documented identical to `sample`).
    for (i, point) in (0u32..).zip(points.iter_mut()) {
        for (set, chunk) in (0u32..).zip(point.chunks_mut(4)) {
            let v = sobol_burley::sample_4d(i, set, s);
            for (x, vi) in chunk.iter_mut().zip(v) {
                *x = f64::from(vi);
            }
        }
    }
    Ok(points)
}

/// `n` Latin-hypercube points in `[0, 1)^d` (McKay, Beckman & Conover 1979).
///
/// Each coordinate axis is cut into `n` equal strata `[k/n, (k+1)/n)`; in every
/// dimension an independent uniformly random permutation assigns one stratum to each
/// point, and the point is placed uniformly at random inside its stratum:
/// `x[i][j] = (π_j(i) + U_ij) / n`. Hence every stratum of every dimension holds exactly
/// one point.
///
/// # Errors
///
/// [`Error::InvalidInput`] naming `d` if `d == 0`, or `n` if the design does not fit in
/// memory.
pub fn latin_hypercube<R: Rng + ?Sized>(n: usize, d: usize, rng: &mut R) -> Result<Vec<Vec<f64>>> {
    let mut points = zeros(n, d)?;
    let scale = 1.0 / n as f64;
    let mut strata: Vec<usize> = (0..n).collect();
    for j in 0..d {
        strata.shuffle(rng);
        for (point, &k) in points.iter_mut().zip(&strata) {
            let u: f64 = rng.random();
            // (k + u)/n can round up to (k+1)/n only in the last ulp; keep it below 1.
            point[j] = ((k as f64 + u) * scale).min(BELOW_ONE);
        }
    }
    Ok(points)
}

/// `n` independent uniform points in `[0, 1)^d` (each coordinate from
/// `rand`'s `StandardUniform` for `f64`, i.e. 53 random bits).
///
/// # Errors
///
/// [`Error::InvalidInput`] naming `d` if `d == 0`, or `n` if the design does not fit in
/// memory.
pub fn uniform<R: Rng + ?Sized>(n: usize, d: usize, rng: &mut R) -> Result<Vec<Vec<f64>>> {
    let mut points = zeros(n, d)?;
    for x in points.iter_mut().flatten() {
        *x = rng.random();
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sobol_is_sobol_burley_one_dimension_at_a_time() {
        for d in [1, 6, 9, 256] {
            let pts = sobol(33, d, 7).unwrap();
            let s = sobol_scramble_seed(7);
            for (i, p) in pts.iter().enumerate() {
                for (j, x) in p.iter().enumerate() {
                    let want = f64::from(sobol_burley::sample(i as u32, j as u32, s));
                    assert_eq!(x.to_bits(), want.to_bits(), "d {d}, point {i}, dim {j}");
                }
            }
        }
    }
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn assert_in_unit_cube(points: &[Vec<f64>], d: usize) {
        for p in points {
            assert_eq!(p.len(), d);
            for &x in p {
                assert!((0.0..1.0).contains(&x), "coordinate {x} outside [0, 1)");
            }
        }
    }

    /// `bins[k]` = number of points whose coordinate `j` falls in `[k/m, (k+1)/m)`.
    fn bin_counts(points: &[Vec<f64>], j: usize, m: usize) -> Vec<usize> {
        let mut bins = vec![0; m];
        for p in points {
            bins[((p[j] * m as f64) as usize).min(m - 1)] += 1;
        }
        bins
    }

    #[test]
    fn sobol_is_deterministic_per_seed_and_differs_across_seeds() {
        let a = sobol(64, 5, 7).unwrap();
        let b = sobol(64, 5, 7).unwrap();
        let c = sobol(64, 5, 8).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_in_unit_cube(&a, 5);
        assert_in_unit_cube(&c, 5);
        // Seeds differing only in the high bits still give different designs.
        assert_ne!(
            sobol(16, 2, 1).unwrap(),
            sobol(16, 2, 1 | (1 << 40)).unwrap()
        );
    }

    #[test]
    fn sobol_is_a_net_in_every_coordinate() {
        // Owen-scrambled Sobol with n = 2^10 points is a (0,10,1)-net in each coordinate:
        // exactly one point in each of the 1024 intervals [k/1024, (k+1)/1024). The f32
        // output keeps the top 23 bits, so the binning is exact.
        for seed in [0, 1, 12345, u64::MAX] {
            let pts = sobol(1024, 4, seed).unwrap();
            assert_in_unit_cube(&pts, 4);
            for j in 0..4 {
                assert!(
                    bin_counts(&pts, j, 1024).iter().all(|&c| c == 1),
                    "seed {seed}, dimension {j}: not one point per bin"
                );
                // One point per bin pins the mean to 0.5 within half a bin width.
                let mean = pts.iter().map(|p| p[j]).sum::<f64>() / 1024.0;
                assert!(
                    (mean - 0.5).abs() < 1e-3,
                    "seed {seed}, dim {j}: mean {mean}"
                );
            }
            // The first two dimensions form a (0,10,2)-net: a 32 x 32 grid holds one point
            // per cell, so a 16 x 16 grid holds exactly 4.
            let mut cells = [[0usize; 16]; 16];
            for p in &pts {
                cells[(p[0] * 16.0) as usize][(p[1] * 16.0) as usize] += 1;
            }
            assert!(
                cells.iter().flatten().all(|&c| c == 4),
                "seed {seed}: 2-D net broken"
            );
        }
    }

    #[test]
    fn sobol_rejects_bad_shapes() {
        let field = |r: Result<Vec<Vec<f64>>>| match r {
            Err(Error::InvalidInput { field, .. }) => field,
            other => panic!("expected an InvalidInput error, got {other:?}"),
        };
        assert_eq!(field(sobol(8, 0, 0)), "d");
        assert_eq!(field(sobol(8, 257, 0)), "d");
        assert_eq!(field(sobol(65537, 2, 0)), "n");
        assert_eq!(field(sobol(usize::MAX, 2, 0)), "n");
        assert!(sobol(0, 3, 0).unwrap().is_empty());
        assert_eq!(sobol(2, 256, 0).unwrap()[1].len(), 256);
    }

    #[test]
    fn latin_hypercube_hits_every_stratum_once() {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        for &(n, d) in &[(1, 1), (2, 3), (10, 4), (97, 6), (1000, 2)] {
            let pts = latin_hypercube(n, d, &mut rng).unwrap();
            assert_eq!(pts.len(), n);
            assert_in_unit_cube(&pts, d);
            for j in 0..d {
                assert!(
                    bin_counts(&pts, j, n).iter().all(|&c| c == 1),
                    "n = {n}, dimension {j}: a stratum is empty or doubly hit"
                );
            }
        }
    }

    #[test]
    fn latin_hypercube_is_seeded_and_random() {
        let a = latin_hypercube(20, 3, &mut ChaCha8Rng::seed_from_u64(1)).unwrap();
        let b = latin_hypercube(20, 3, &mut ChaCha8Rng::seed_from_u64(1)).unwrap();
        let c = latin_hypercube(20, 3, &mut ChaCha8Rng::seed_from_u64(2)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        // The permutations differ across dimensions (not the identity coupling).
        let strata =
            |j: usize| -> Vec<usize> { a.iter().map(|p| (p[j] * 20.0) as usize).collect() };
        assert_ne!(strata(0), strata(1));
    }

    #[test]
    fn uniform_is_seeded_and_in_range() {
        let a = uniform(500, 3, &mut ChaCha8Rng::seed_from_u64(3)).unwrap();
        let b = uniform(500, 3, &mut ChaCha8Rng::seed_from_u64(3)).unwrap();
        assert_eq!(a, b);
        assert_in_unit_cube(&a, 3);
        for j in 0..3 {
            let mean = a.iter().map(|p| p[j]).sum::<f64>() / 500.0;
            // sd of the mean = sqrt(1/12/500) ~ 0.013; 0.06 is > 4 sd.
            assert!((mean - 0.5).abs() < 0.06, "dimension {j}: mean {mean}");
        }
    }

    #[test]
    fn random_designs_reject_bad_shapes() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        assert!(latin_hypercube(5, 0, &mut rng).is_err());
        assert!(uniform(5, 0, &mut rng).is_err());
        assert!(latin_hypercube(usize::MAX, 2, &mut rng).is_err());
        assert!(uniform(usize::MAX, 2, &mut rng).is_err());
        assert!(latin_hypercube(0, 2, &mut rng).unwrap().is_empty());
        assert!(uniform(0, 2, &mut rng).unwrap().is_empty());
    }
}
