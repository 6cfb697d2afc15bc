//! A small convolutional network tuned per party: the stand-in for collaborative BO's "CNN
//! on FEMNIST" tuning task (Sim et al. 2021, appendix C.1; the authors' `RealFuncCNN`),
//! whose data are not available (../shared/notes/collaborative-fair-bo.md §4, table row
//! "CNN tuning, FEMNIST").
//!
//! **Data.** The digits images (data/digits, 1,797 8×8 images, 10 classes) are dealt to
//! `n` shards as [`crate::tuning::DigitsTuning`] deals them (a fixed shuffle, then
//! round-robin), and each shard gets a *writer style* applied to all its images, standing
//! in for FEMNIST's per-writer splits: a one-pixel shift `(dx, dy)` (content moves right by
//! `dx` and down by `dy`, vacated pixels are 0) and a stroke-weight change
//! `v ↦ 16·(v/16)^γ`. Shard `s` uses shift `SHIFTS[s mod 9]` and
//! `γ = GAMMAS[(s + ⌊s/9⌋) mod 3]`, so the first 27 shards have 27 distinct styles (then
//! they repeat), with
//!
//! | index | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 |
//! |---|---|---|---|---|---|---|---|---|---|
//! | `(dx, dy)` | (0,0) | (1,0) | (0,1) | (−1,0) | (0,−1) | (1,1) | (−1,−1) | (1,−1) | (−1,1) |
//! | `γ` | 1 | ½ | 2 | | | | | | |
//!
//! so the default ten shards are: 0 unchanged; 1 right, bold (γ ½); 2 down, thin (γ 2);
//! 3 left; 4 up, bold; 5 right-down, thin; 6 left-up; 7 right-up, bold; 8 left-down, thin;
//! 9 unshifted, bold. Pixels are then scaled to `[0, 1]`, and each shard is split 75 / 25
//! into training and validation (the paper's party `s` uses split `s % 10`).
//!
//! **Inputs.** `u ∈ [0, 1]³` on the authors' log-box `[ln 1e-5, 0]³`: learning rate,
//! learning-rate decay and L2 weight are each `exp(ln(1e-5)·(1 − u_k))`, so 1e-5 at
//! `u_k = 0` and 1 at `u_k = 1` ([`CnnTuning::hyper`]; out-of-range `u` is clamped).
//!
//! **Model and training** (the authors' Keras model on 8×8 instead of 28×28 inputs):
//! Conv 16 filters 3×3 valid + bias → ReLU → MaxPool 3×3 stride 3 (6×6×16 → 2×2×16) →
//! Dense 64→8 + ReLU → Dense 8→10 softmax; loss = mean cross-entropy of the batch +
//! `l2·Σw²` over the weights (not the biases). Glorot-uniform initial weights, zero biases.
//! RMSprop as Keras defines it (ρ 0.9, ε 1e-7, `w ← w − lr_t·g/(√ms + ε)`), with Keras's
//! legacy decay `lr_t = lr/(1 + decay·t)` at the `t`-th update (from 0); batch 32, the
//! training rows reshuffled every epoch; [`EPOCHS`] epochs. The objective is the best
//! validation accuracy over the epochs. The caller's seed drives initialisation and
//! shuffling, so repeated evaluations differ as real training runs do.
//!
//! **Cost and scale.** The paper trains 20 epochs and so does this: one evaluation (10
//! shards, ~134 training and ~45 validation images per shard) measured about 10 ms in a
//! release build (11 ms on average over 100 evaluations on the busy 2-core development
//! machine), within the 30 ms budget. With so few images per shard the objective is
//! noisy. At lr 1e-2 (small decay and L2), mean accuracies over seeds are 0.5–0.7 per
//! shard (up to 0.93 with all the data in one shard), and a single run may fall to ~0.15 when
//! the 8 hidden units die. At lr 1e-5 the network stays near chance (~0.1).

use crate::tuning::{TuningTask, fixed_order, parse};
use agora_core::{Error, Result};
use agora_math::rng::stream;
use rand::RngExt;

const SIDE: usize = 8;
const PIXELS: usize = SIDE * SIDE;
const CLASSES: usize = 10;
const FILTERS: usize = 16;
const K: usize = 3;
/// Convolution output side (valid padding).
const CONV: usize = SIDE - K + 1;
/// Max-pool output side (pool 3, stride 3).
const POOL: usize = CONV / K;
/// Flattened max-pool output.
const FLAT: usize = POOL * POOL * FILTERS;
const HIDDEN: usize = 8;
const BATCH: usize = 32;
const RHO: f64 = 0.9;
const EPSILON: f64 = 1e-7;
/// Epochs of RMSprop per evaluation (the paper's 20).
pub const EPOCHS: usize = 20;

/// The writer-style shifts `(dx, dy)`, indexed by `shard mod 9`.
pub const SHIFTS: [(i32, i32); 9] = [
    (0, 0),
    (1, 0),
    (0, 1),
    (-1, 0),
    (0, -1),
    (1, 1),
    (-1, -1),
    (1, -1),
    (-1, 1),
];
/// The writer-style stroke exponents `γ`, indexed by `(shard + ⌊shard/9⌋) mod 3`.
pub const GAMMAS: [f64; 3] = [1.0, 0.5, 2.0];

// The parameters as one flat vector: conv weights `[f][ky·3 + kx]`, conv biases, dense 1
// weights `[i][j]` (input `i = (py·2 + px)·16 + f`), dense 1 biases, dense 2 weights
// `[j][c]`, dense 2 biases.
const W1: usize = 0;
const B1: usize = W1 + FILTERS * K * K;
const W2: usize = B1 + FILTERS;
const B2: usize = W2 + FLAT * HIDDEN;
const W3: usize = B2 + HIDDEN;
const B3: usize = W3 + HIDDEN * CLASSES;
const PARAMS: usize = B3 + CLASSES;
/// The weight ranges the L2 penalty covers.
const WEIGHTS: [std::ops::Range<usize>; 3] = [W1..B1, W2..B2, W3..B3];

type Image = [f64; PIXELS];

/// One shard's styled images in `[0, 1]`.
#[derive(Debug, Clone)]
struct Shard {
    train_x: Vec<Image>,
    train_y: Vec<usize>,
    val_x: Vec<Image>,
    val_y: Vec<usize>,
}

/// The digits data split into `n` writer-styled shards, each tuned with the small CNN.
#[derive(Debug, Clone)]
pub struct CnnTuning {
    shards: Vec<Shard>,
}

/// The style `((dx, dy), γ)` of shard `s` (see the module table).
pub fn style(s: usize) -> ((i32, i32), f64) {
    (SHIFTS[s % 9], GAMMAS[(s + s / 9) % 3])
}

/// `x` (pixel values 0..16) in the style `((dx, dy), γ)`, scaled to `[0, 1]`:
/// `out[y][x] = (v/16)^γ` with `v = in[y − dy][x − dx]`, 0 outside the image.
fn apply_style(x: &[f64; PIXELS], (dx, dy): (i32, i32), gamma: f64) -> Image {
    let mut o = [0.0; PIXELS];
    for y in 0..SIDE as i32 {
        for c in 0..SIDE as i32 {
            let (sy, sc) = (y - dy, c - dx);
            if (0..SIDE as i32).contains(&sy) && (0..SIDE as i32).contains(&sc) {
                let v = (x[sy as usize * SIDE + sc as usize] / 16.0).clamp(0.0, 1.0);
                o[y as usize * SIDE + c as usize] = v.powf(gamma);
            }
        }
    }
    o
}

impl CnnTuning {
    /// `n ≥ 1` writer-styled shards, each with at least 30 images (so `n ≤ 59`); the
    /// paper's setting is 10. Errors name `shards`.
    pub fn new(n: usize) -> Result<CnnTuning> {
        let rows = parse()?;
        if n == 0 || rows.len() / n < 30 {
            return Err(Error::invalid(
                "shards",
                format!("needs 1 <= n <= {}, got {n}", rows.len() / 30),
            ));
        }
        let order = fixed_order(rows.len());
        let shards = (0..n)
            .map(|s| {
                let (shift, gamma) = style(s);
                let mine: Vec<usize> = order.iter().copied().skip(s).step_by(n).collect();
                let (tr, va) = mine.split_at(mine.len() * 3 / 4);
                let img = |i: &usize| apply_style(&rows[*i].0, shift, gamma);
                Shard {
                    train_x: tr.iter().map(img).collect(),
                    train_y: tr.iter().map(|&i| rows[i].1).collect(),
                    val_x: va.iter().map(img).collect(),
                    val_y: va.iter().map(|&i| rows[i].1).collect(),
                }
            })
            .collect();
        Ok(CnnTuning { shards })
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// Map `u ∈ [0, 1]³` (clamped) to (learning rate, decay, L2), each
    /// `exp(ln(1e-5)·(1 − u_k))`: 1e-5 at 0, 1 at 1.
    pub fn hyper(u: &[f64; 3]) -> (f64, f64, f64) {
        let h = |v: f64| (1e-5f64.ln() * (1.0 - v.clamp(0.0, 1.0))).exp();
        (h(u[0]), h(u[1]), h(u[2]))
    }

    /// Train the CNN on `shard` with hyper-parameters `u` and the training seed; the best
    /// validation accuracy over the [`EPOCHS`] epochs. Errors name `shard` (unknown) or `u`
    /// (not 3 finite numbers).
    pub fn evaluate(&self, shard: usize, u: &[f64], seed: u64) -> Result<f64> {
        let s = self.shards.get(shard).ok_or_else(|| {
            Error::invalid(
                "shard",
                format!("must be < {}, got {shard}", self.shards.len()),
            )
        })?;
        let u: &[f64; 3] = u.try_into().map_err(|_| Error::dim("u", 3, u.len()))?;
        agora_core::check_finite_slice("u", u)?;
        let (lr, decay, l2) = CnnTuning::hyper(u);
        let mut rng = stream(seed, &[shard as u64, 0xC11]);
        let mut params = glorot(&mut rng);
        let mut opt = RmsProp::new(lr, decay);
        let n = s.train_x.len();
        let mut order: Vec<usize> = (0..n).collect();
        let mut xs: Vec<&Image> = Vec::with_capacity(BATCH);
        let mut ys: Vec<usize> = Vec::with_capacity(BATCH);
        let mut best: f64 = 0.0;
        for _ in 0..EPOCHS {
            for i in (1..n).rev() {
                let j = ((rng.random::<f64>() * (i + 1) as f64) as usize).min(i);
                order.swap(i, j);
            }
            for chunk in order.chunks(BATCH) {
                xs.clear();
                ys.clear();
                xs.extend(chunk.iter().map(|&i| &s.train_x[i]));
                ys.extend(chunk.iter().map(|&i| s.train_y[i]));
                let (_, grad) = loss_grad(&params, &xs, &ys, l2);
                opt.step(&mut params, &grad);
            }
            let correct = s
                .val_x
                .iter()
                .zip(&s.val_y)
                .filter(|(x, y)| predict(&params, x) == **y)
                .count();
            best = best.max(correct as f64 / s.val_x.len() as f64);
        }
        Ok(best)
    }
}

impl TuningTask for CnnTuning {
    fn shards(&self) -> usize {
        CnnTuning::shards(self)
    }
    fn evaluate(&self, shard: usize, u: &[f64], seed: u64) -> Result<f64> {
        CnnTuning::evaluate(self, shard, u, seed)
    }
}

/// Glorot-uniform weights (Keras's fans: a conv kernel's are `3·3·1` in and `3·3·16` out),
/// zero biases.
fn glorot(rng: &mut agora_math::rng::Rng) -> Vec<f64> {
    let mut p = vec![0.0; PARAMS];
    let layers = [
        (W1..B1, K * K, K * K * FILTERS),
        (W2..B2, FLAT, HIDDEN),
        (W3..B3, HIDDEN, CLASSES),
    ];
    for (range, fan_in, fan_out) in layers {
        let lim = (6.0 / (fan_in + fan_out) as f64).sqrt();
        for w in &mut p[range] {
            *w = lim * (2.0 * rng.random::<f64>() - 1.0);
        }
    }
    p
}

/// The forward pass of one image, with what the backward pass needs.
struct Forward {
    /// Flattened max-pool output after ReLU.
    h1: [f64; FLAT],
    /// Input pixel offset (top-left of the 3×3 patch) of each pooled unit's maximum.
    arg: [usize; FLAT],
    /// Hidden layer after ReLU.
    h2: [f64; HIDDEN],
    /// Logits.
    z3: [f64; CLASSES],
}

fn forward(p: &[f64], x: &Image) -> Forward {
    let mut h1 = [0.0; FLAT];
    let mut arg = [0; FLAT];
    for f in 0..FILTERS {
        let w = &p[W1 + f * K * K..W1 + (f + 1) * K * K];
        let b = p[B1 + f];
        for py in 0..POOL {
            for px in 0..POOL {
                // max(ReLU(z)) = ReLU(max z) over the pool window.
                let mut best = f64::NEG_INFINITY;
                let mut at = 0;
                for oy in py * K..(py + 1) * K {
                    for ox in px * K..(px + 1) * K {
                        let o = oy * SIDE + ox;
                        let mut z = b;
                        for ky in 0..K {
                            let row = &x[o + ky * SIDE..o + ky * SIDE + K];
                            let wr = &w[ky * K..(ky + 1) * K];
                            z += row[0] * wr[0] + row[1] * wr[1] + row[2] * wr[2];
                        }
                        if z > best {
                            best = z;
                            at = o;
                        }
                    }
                }
                let i = (py * POOL + px) * FILTERS + f;
                h1[i] = best.max(0.0);
                arg[i] = at;
            }
        }
    }
    let mut h2: [f64; HIDDEN] = std::array::from_fn(|j| p[B2 + j]);
    for (i, &h) in h1.iter().enumerate() {
        if h != 0.0 {
            let w = &p[W2 + i * HIDDEN..W2 + (i + 1) * HIDDEN];
            for (z, &wij) in h2.iter_mut().zip(w) {
                *z += h * wij;
            }
        }
    }
    for z in &mut h2 {
        *z = z.max(0.0);
    }
    let mut z3: [f64; CLASSES] = std::array::from_fn(|c| p[B3 + c]);
    for (j, &h) in h2.iter().enumerate() {
        let w = &p[W3 + j * CLASSES..W3 + (j + 1) * CLASSES];
        for (z, &wjc) in z3.iter_mut().zip(w) {
            *z += h * wjc;
        }
    }
    Forward { h1, arg, h2, z3 }
}

/// The predicted class (the first largest logit, as Keras's argmax).
fn predict(p: &[f64], x: &Image) -> usize {
    let z = forward(p, x).z3;
    (1..CLASSES).fold(0, |best, c| if z[c] > z[best] { c } else { best })
}

/// The batch loss (mean cross-entropy + `l2·Σw²`) and its gradient w.r.t. every parameter.
fn loss_grad(p: &[f64], xs: &[&Image], ys: &[usize], l2: f64) -> (f64, Vec<f64>) {
    let mut g = vec![0.0; PARAMS];
    let mut loss = 0.0;
    let m = xs.len().max(1) as f64;
    for (x, &y) in xs.iter().zip(ys) {
        let fw = forward(p, x);
        // Softmax cross-entropy; d3 = (p − onehot) / m.
        let mx = fw.z3.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut e = fw.z3.map(|z| (z - mx).exp());
        let sum: f64 = e.iter().sum();
        loss += (sum.ln() - (fw.z3[y] - mx)) / m;
        for (c, v) in e.iter_mut().enumerate() {
            *v = (*v / sum - if c == y { 1.0 } else { 0.0 }) / m;
        }
        let d3 = e;
        let mut dz2 = [0.0; HIDDEN];
        for j in 0..HIDDEN {
            let w = &p[W3 + j * CLASSES..W3 + (j + 1) * CLASSES];
            let gw = &mut g[W3 + j * CLASSES..W3 + (j + 1) * CLASSES];
            let mut dh = 0.0;
            for c in 0..CLASSES {
                gw[c] += fw.h2[j] * d3[c];
                dh += w[c] * d3[c];
            }
            dz2[j] = if fw.h2[j] > 0.0 { dh } else { 0.0 };
        }
        for c in 0..CLASSES {
            g[B3 + c] += d3[c];
        }
        for j in 0..HIDDEN {
            g[B2 + j] += dz2[j];
        }
        for i in 0..FLAT {
            let w = &p[W2 + i * HIDDEN..W2 + (i + 1) * HIDDEN];
            let gw = &mut g[W2 + i * HIDDEN..W2 + (i + 1) * HIDDEN];
            let mut dh = 0.0;
            for j in 0..HIDDEN {
                gw[j] += fw.h1[i] * dz2[j];
                dh += w[j] * dz2[j];
            }
            // The pooled unit passes its gradient to its window's maximum, if positive.
            if fw.h1[i] > 0.0 {
                let f = i % FILTERS;
                g[B1 + f] += dh;
                let o = fw.arg[i];
                for ky in 0..K {
                    for kx in 0..K {
                        g[W1 + f * K * K + ky * K + kx] += dh * x[o + ky * SIDE + kx];
                    }
                }
            }
        }
    }
    for r in WEIGHTS {
        for k in r {
            loss += l2 * p[k] * p[k];
            g[k] += 2.0 * l2 * p[k];
        }
    }
    (loss, g)
}

/// Keras's RMSprop without momentum, with the legacy per-update learning-rate decay.
#[derive(Debug, Clone)]
struct RmsProp {
    lr: f64,
    decay: f64,
    /// Updates made so far.
    iterations: u64,
    /// Running mean of squared gradients, per parameter (starts at 0).
    ms: Vec<f64>,
}

impl RmsProp {
    fn new(lr: f64, decay: f64) -> RmsProp {
        RmsProp {
            lr,
            decay,
            iterations: 0,
            ms: Vec::new(),
        }
    }

    /// `ms ← ρ·ms + (1 − ρ)·g²`, `p ← p − lr_t·g/(√ms + ε)`, `lr_t = lr/(1 + decay·t)`.
    fn step(&mut self, p: &mut [f64], g: &[f64]) {
        if self.ms.len() != p.len() {
            self.ms = vec![0.0; p.len()];
        }
        let lr_t = self.lr / (1.0 + self.decay * self.iterations as f64);
        for ((w, &gk), ms) in p.iter_mut().zip(g).zip(&mut self.ms) {
            *ms = RHO * *ms + (1.0 - RHO) * gk * gk;
            *w -= lr_t * gk / (ms.sqrt() + EPSILON);
        }
        self.iterations += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::TuningParties;
    use agora_core::{Answer, Point, Query, QueryKind, Respondent};
    use agora_math::rng::derive_seed;

    /// Analytic gradients match central differences for every parameter group, with random
    /// parameters (nonzero biases) and random pixels so no max-pool window or ReLU sits on
    /// a tie or kink.
    #[test]
    fn backward_pass_matches_finite_differences() {
        let mut rng = stream(3, &[1]);
        let mut p = glorot(&mut rng);
        for b in (B1..W2).chain(B2..W3).chain(B3..PARAMS) {
            p[b] = 0.2 * (2.0 * rng.random::<f64>() - 1.0);
        }
        let imgs: Vec<Image> = (0..3)
            .map(|_| std::array::from_fn(|_| rng.random::<f64>()))
            .collect();
        let xs: Vec<&Image> = imgs.iter().collect();
        let ys = [2, 7, 7];
        let l2 = 0.03;
        let (_, g) = loss_grad(&p, &xs, &ys, l2);
        let h = 1e-5;
        for (name, r) in [
            ("conv weights", W1..B1),
            ("conv bias", B1..W2),
            ("dense 1 weights", W2..B2),
            ("dense 1 bias", B2..W3),
            ("dense 2 weights", W3..B3),
            ("dense 2 bias", B3..PARAMS),
        ] {
            let (mut diff, mut norm) = (0.0f64, 0.0f64);
            for k in r {
                let mut q = p.clone();
                q[k] = p[k] + h;
                let up = loss_grad(&q, &xs, &ys, l2).0;
                q[k] = p[k] - h;
                let down = loss_grad(&q, &xs, &ys, l2).0;
                let fd = (up - down) / (2.0 * h);
                let err = (fd - g[k]).abs();
                assert!(
                    err <= 1e-5 * g[k].abs().max(1e-3),
                    "{name} [{k}]: analytic {} vs numeric {fd}",
                    g[k]
                );
                diff += err * err;
                norm += g[k] * g[k];
            }
            assert!(norm > 0.0, "{name}: gradient is all zero");
            assert!(diff.sqrt() < 1e-5 * norm.sqrt(), "{name}");
        }
    }

    /// Two RMSprop updates of one parameter, worked by hand: lr 0.1, decay 0.5, w₀ = 1,
    /// g = 2 then −1. ms₁ = 0.1·4 = 0.4, w₁ = 1 − 0.1·2/(√0.4 + 1e-7);
    /// ms₂ = 0.9·0.4 + 0.1·1 = 0.46, lr₁ = 0.1/(1 + 0.5) = 1/15, w₂ = w₁ + (1/15)/(√0.46 + 1e-7).
    #[test]
    fn rmsprop_with_decay_matches_a_hand_computed_example() {
        let mut opt = RmsProp::new(0.1, 0.5);
        let mut w = [1.0];
        opt.step(&mut w, &[2.0]);
        assert!((w[0] - 0.683_772_283_983_154_1).abs() < 1e-12, "{}", w[0]);
        opt.step(&mut w, &[-1.0]);
        assert!((w[0] - 0.782_066_906_927_000_8).abs() < 1e-12, "{}", w[0]);
        assert_eq!(opt.iterations, 2);
    }

    #[test]
    fn hyper_maps_the_log_box() {
        assert_eq!(CnnTuning::hyper(&[1.0, 1.0, 1.0]), (1.0, 1.0, 1.0));
        let (lr, decay, l2) = CnnTuning::hyper(&[0.0, 0.5, -3.0]);
        assert!((lr - 1e-5).abs() < 1e-18, "{lr}");
        assert!((decay - 10f64.powf(-2.5)).abs() < 1e-15, "{decay}");
        assert!((l2 - 1e-5).abs() < 1e-18, "clamped: {l2}");
        let (lr, _, _) = CnnTuning::hyper(&[0.6, 0.0, 0.0]);
        assert!((lr - 1e-2).abs() < 1e-15, "{lr}");
    }

    /// Means over training seeds 0..5 (the objective is noisy: ~134 training images per
    /// shard). Seen: shard 0 good 0.74 (best 0.89), bad 0.12, L2 1 0.15; shard 1 good 0.65,
    /// bad 0.16.
    #[test]
    fn good_settings_learn_and_bad_ones_do_not() {
        let t = CnnTuning::new(10).unwrap();
        let runs = |shard: usize, u: [f64; 3]| -> Vec<f64> {
            (0..5)
                .map(|seed| t.evaluate(shard, &u, seed).unwrap())
                .collect()
        };
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        // lr 1e-2, decay 1e-5, L2 1e-5.
        let good = runs(0, [0.6, 0.0, 0.0]);
        assert!(mean(&good) > 0.65, "{good:?}");
        assert!(good.iter().any(|&v| v > 0.8), "{good:?}");
        // lr 1e-5: stays near its random start (chance is 0.1).
        let bad = runs(0, [0.0, 0.0, 0.0]);
        assert!(mean(&bad) < 0.25, "{bad:?}");
        assert!(mean(&bad) < mean(&good) - 0.3, "{bad:?} vs {good:?}");
        // L2 weight 1: the penalty flattens the network.
        let flat = runs(0, [0.6, 0.0, 1.0]);
        assert!(mean(&flat) < mean(&good) - 0.3, "{flat:?} vs {good:?}");
        // Another writer style learns too.
        let (good, bad) = (runs(1, [0.6, 0.0, 0.0]), runs(1, [0.0, 0.0, 0.0]));
        assert!(mean(&bad) < mean(&good) - 0.3, "{bad:?} vs {good:?}");
    }

    #[test]
    fn shards_differ_in_style_and_runs_follow_their_seed() {
        let t = CnnTuning::new(10).unwrap();
        let mean = |s: usize| {
            let sh = &t.shards[s];
            let mut m = [0.0; PIXELS];
            for x in sh.train_x.iter().chain(&sh.val_x) {
                for (a, v) in m.iter_mut().zip(x) {
                    *a += v / (sh.train_x.len() + sh.val_x.len()) as f64;
                }
            }
            m
        };
        let dist = |a: &Image, b: &Image| {
            a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>() / PIXELS as f64
        };
        let (m0, m1) = (mean(0), mean(1));
        // Unstyled shards of this size differ by ~0.02 per pixel; a shift and bolder strokes
        // by far more.
        let d01 = dist(&m0, &m1);
        assert!(d01 > 0.08, "{d01}");
        // Shard 1 is shifted right: its left column is empty, its bold strokes are heavier.
        assert!((0..SIDE).all(|y| m1[y * SIDE] == 0.0));
        assert!(m1.iter().sum::<f64>() > 1.2 * m0.iter().sum::<f64>());
        for s in 0..10 {
            let sh = &t.shards[s];
            assert!(sh.train_x.len() + sh.val_x.len() >= 30);
            assert!(sh.val_x.len() * 3 <= sh.train_x.len() + 1);
            assert!(sh.train_x.iter().flatten().all(|v| (0.0..=1.0).contains(v)));
            for r in s + 1..10 {
                assert!(dist(&mean(s), &mean(r)) > 0.03, "shards {s} and {r}");
            }
        }
        assert_eq!(style(0), ((0, 0), 1.0));
        assert_eq!(style(1), ((1, 0), 0.5));
        assert_eq!(style(9), ((0, 0), 0.5));
        assert_eq!(style(27), style(0));
        let mut seen: Vec<((i32, i32), u64)> = (0..27)
            .map(|s| (style(s).0, style(s).1.to_bits()))
            .collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 27, "the first 27 styles are distinct");
        // The style transform itself: shift right-down by one, thin strokes.
        let mut x = [0.0; PIXELS];
        x[0] = 8.0;
        x[PIXELS - 1] = 16.0;
        let y = apply_style(&x, (1, 1), 2.0);
        assert_eq!(y[SIDE + 1], 0.25);
        assert_eq!(y.iter().filter(|v| **v != 0.0).count(), 1);

        let u = [0.55, 0.3, 0.2];
        let a = t.evaluate(2, &u, 7).unwrap();
        assert_eq!(a, t.evaluate(2, &u, 7).unwrap());
        let others: Vec<f64> = (8..12).map(|s| t.evaluate(2, &u, s).unwrap()).collect();
        assert!(others.iter().any(|&b| b != a), "{a} {others:?}");
    }

    #[test]
    fn errors_name_the_field() {
        let t = CnnTuning::new(3).unwrap();
        let e = |r: Result<f64>| r.unwrap_err().to_string();
        assert!(e(t.evaluate(3, &[0.5; 3], 0)).contains("shard"));
        assert!(e(t.evaluate(0, &[0.5; 2], 0)).contains('u'));
        assert!(matches!(
            t.evaluate(0, &[0.5; 4], 0),
            Err(Error::Dimension { .. })
        ));
        assert!(e(t.evaluate(0, &[0.5, f64::NAN, 0.5], 0)).contains("u[1]"));
        assert!(e(t.evaluate(0, &[f64::INFINITY, 0.5, 0.5], 0)).contains("u[0]"));
        assert!(
            CnnTuning::new(0)
                .unwrap_err()
                .to_string()
                .contains("shards")
        );
        assert!(CnnTuning::new(59).is_ok());
        assert!(
            CnnTuning::new(60)
                .unwrap_err()
                .to_string()
                .contains("shards")
        );
        // Divergent training (lr 1) gives a low accuracy, not a panic.
        let v = t.evaluate(0, &[1.0, 0.0, 0.0], 0).unwrap();
        assert!((0.0..=1.0).contains(&v), "{v}");
    }

    /// Party `p` trains on shard `p mod shards` with the documented streams.
    #[test]
    fn parties_answer_with_their_shards() {
        let task = CnnTuning::new(3).unwrap();
        let mut r = TuningParties::new(task.clone(), 5, 11).unwrap();
        let xs: Vec<Vec<f64>> = (0..5)
            .map(|p| vec![0.5 + 0.02 * p as f64, 0.2, 0.1])
            .collect();
        let q = Query {
            id: 1,
            kind: QueryKind::Evaluate {
                points: xs.iter().map(|x| Point::Unit(x.clone())).collect(),
            },
        };
        let a = r.answer(&q).unwrap();
        let want: Vec<f64> = (0..5)
            .map(|p| {
                let seed = if p < 3 {
                    derive_seed(11, &[0])
                } else {
                    derive_seed(11, &[0, 1])
                };
                task.evaluate(p % 3, &xs[p], seed).unwrap()
            })
            .collect();
        assert_eq!(a, Answer::values(&q, want).unwrap());
        assert_eq!(r.answered(), 1);
        let short = Query {
            id: 2,
            kind: QueryKind::Evaluate {
                points: vec![Point::Unit(vec![0.5; 3]); 4],
            },
        };
        assert!(r.answer(&short).unwrap_err().to_string().contains("points"));
    }
}
