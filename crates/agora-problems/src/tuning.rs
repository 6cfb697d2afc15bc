//! Hyper-parameter tuning objectives for collaborative BO: softmax regression trained by
//! minibatch SGD on the digits data (data/digits, 1,797 8×8 images, 10 classes), one shard
//! per party. It stands in for the paper's mobile-sensor (HAR) logistic-regression task,
//! whose data are not available (../shared/notes/collaborative-fair-bo.md §4).
//!
//! Inputs on `[0, 1]³` as in the authors' code: batch size `20 + 80u₀` (rounded), L2 weight
//! `10^{−5 + 5u₁}`, learning rate `10^{−5 + 5u₂}`. Each party's shard (rows `i` with
//! `i mod n = party` after a fixed shuffle) is split 75 / 25 into training and validation;
//! features are standardized with the training statistics; 5 epochs; the objective is the
//! best validation accuracy over the epochs (the authors' "max-epoch validation accuracy").
//! Weights start Glorot-uniform. Training is seeded by the caller, so repeated evaluations of one input differ as real
//! SGD runs do.

// Index loops over parallel fixed-size arrays (features × classes) read as the math does.
#![allow(clippy::needless_range_loop)]

use agora_core::{Answer, Error, Point, Query, QueryKind, Respondent, Result};
use agora_math::rng::{derive_seed, stream};
use rand::RngExt;

const DIGITS: &str = include_str!("../../../data/digits/digits.csv");
const FEATURES: usize = 64;
const CLASSES: usize = 10;
/// Epochs of SGD per evaluation.
pub const EPOCHS: usize = 5;

/// One party's data.
#[derive(Debug, Clone)]
pub struct Shard {
    train_x: Vec<[f64; FEATURES]>,
    train_y: Vec<usize>,
    val_x: Vec<[f64; FEATURES]>,
    val_y: Vec<usize>,
}

/// The digits data set split into `n` party shards.
#[derive(Debug, Clone)]
pub struct DigitsTuning {
    shards: Vec<Shard>,
}

/// The digits rows as (64 pixel values in 0..16, label).
pub(crate) fn parse() -> Result<Vec<([f64; FEATURES], usize)>> {
    let mut out = Vec::new();
    for (i, line) in DIGITS.lines().enumerate().skip(1) {
        let v: Vec<&str> = line.split(',').collect();
        if v.len() != FEATURES + 1 {
            return Err(Error::invalid(
                format!("digits.csv line {}", i + 1),
                "expected 65 columns",
            ));
        }
        let mut x = [0.0; FEATURES];
        for j in 0..FEATURES {
            x[j] = v[j].trim().parse().map_err(|_| {
                Error::invalid(format!("digits.csv line {}", i + 1), "not a number")
            })?;
        }
        let y: usize = v[FEATURES]
            .trim()
            .parse()
            .map_err(|_| Error::invalid(format!("digits.csv line {}", i + 1), "bad label"))?;
        out.push((x, y));
    }
    Ok(out)
}

/// The fixed shuffle (seed 0) of `len` row indices that shards are dealt from round-robin:
/// shard `s` of `n` holds `order[s], order[s + n], …`.
pub(crate) fn fixed_order(len: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    let mut rng = stream(0, &[0xD161]);
    for i in (1..order.len()).rev() {
        let j = (rng.random::<f64>() * (i + 1) as f64) as usize;
        order.swap(i, j.min(i));
    }
    order
}

/// A tuning objective split into shards, one per party: what [`TuningParties`] asks.
pub trait TuningTask {
    /// Number of shards.
    fn shards(&self) -> usize;
    /// Train on `shard` with hyper-parameters `u ∈ [0, 1]^d` and the training seed; the
    /// best validation accuracy over the epochs. Errors name `u` or the shard.
    fn evaluate(&self, shard: usize, u: &[f64], seed: u64) -> Result<f64>;
}

impl TuningTask for DigitsTuning {
    fn shards(&self) -> usize {
        self.parties()
    }
    fn evaluate(&self, shard: usize, u: &[f64], seed: u64) -> Result<f64> {
        DigitsTuning::evaluate(self, shard, u, seed)
    }
}

impl DigitsTuning {
    /// Shards for `n ≥ 1` parties (each gets at least 30 images; n ≤ 59).
    pub fn new(n: usize) -> Result<DigitsTuning> {
        let rows = parse()?;
        if n == 0 || rows.len() / n < 30 {
            return Err(Error::invalid(
                "parties",
                format!("needs 1 <= n <= {}, got {n}", rows.len() / 30),
            ));
        }
        let order = fixed_order(rows.len());
        let shards = (0..n)
            .map(|p| {
                let mine: Vec<usize> = order.iter().copied().skip(p).step_by(n).collect();
                let cut = mine.len() * 3 / 4;
                let (tr, va) = mine.split_at(cut);
                let mut mean = [0.0; FEATURES];
                let mut sd = [0.0; FEATURES];
                for &i in tr {
                    for j in 0..FEATURES {
                        mean[j] += rows[i].0[j] / tr.len() as f64;
                    }
                }
                for &i in tr {
                    for j in 0..FEATURES {
                        sd[j] += (rows[i].0[j] - mean[j]).powi(2) / tr.len() as f64;
                    }
                }
                let z = |x: &[f64; FEATURES]| {
                    let mut o = [0.0; FEATURES];
                    for j in 0..FEATURES {
                        let s = sd[j].sqrt();
                        o[j] = if s > 0.0 { (x[j] - mean[j]) / s } else { 0.0 };
                    }
                    o
                };
                Shard {
                    train_x: tr.iter().map(|&i| z(&rows[i].0)).collect(),
                    train_y: tr.iter().map(|&i| rows[i].1).collect(),
                    val_x: va.iter().map(|&i| z(&rows[i].0)).collect(),
                    val_y: va.iter().map(|&i| rows[i].1).collect(),
                }
            })
            .collect();
        Ok(DigitsTuning { shards })
    }

    /// Parties.
    pub fn parties(&self) -> usize {
        self.shards.len()
    }

    /// Map `u ∈ [0, 1]³` to (batch size, L2, learning rate).
    pub fn hyper(u: &[f64]) -> (usize, f64, f64) {
        let c = |v: f64| v.clamp(0.0, 1.0);
        (
            (20.0 + 80.0 * c(u[0])).round() as usize,
            10f64.powf(-5.0 + 5.0 * c(u[1])),
            10f64.powf(-5.0 + 5.0 * c(u[2])),
        )
    }

    /// Train on `party`'s shard with hyper-parameters `u` and the SGD seed; returns the best
    /// validation accuracy over the epochs.
    pub fn evaluate(&self, party: usize, u: &[f64], seed: u64) -> Result<f64> {
        let s = self.shards.get(party).ok_or_else(|| {
            Error::invalid(
                "party",
                format!("must be < {}, got {party}", self.shards.len()),
            )
        })?;
        if u.len() != 3 {
            return Err(Error::dim("u", 3, u.len()));
        }
        agora_core::check_finite_slice("u", u)?;
        let (batch, l2, lr) = DigitsTuning::hyper(u);
        // Glorot-uniform initial weights (as Keras does), seeded: with tiny learning rates
        // the model stays near its random start instead of a lucky all-zero centroid rule.
        let mut rng = stream(seed, &[party as u64, 0x7E]);
        let lim = (6.0 / (FEATURES + CLASSES) as f64).sqrt();
        let mut w: Vec<[f64; CLASSES]> = (0..FEATURES)
            .map(|_| std::array::from_fn(|_| lim * (2.0 * rng.random::<f64>() - 1.0)))
            .collect();
        let mut b = [0.0f64; CLASSES];
        let n = s.train_x.len();
        let mut order: Vec<usize> = (0..n).collect();
        let mut best: f64 = 0.0;
        for _ in 0..EPOCHS {
            for i in (1..n).rev() {
                let j = ((rng.random::<f64>() * (i + 1) as f64) as usize).min(i);
                order.swap(i, j);
            }
            for chunk in order.chunks(batch) {
                let mut gw = vec![[0.0f64; CLASSES]; FEATURES];
                let mut gb = [0.0f64; CLASSES];
                for &i in chunk {
                    let p = softmax(&s.train_x[i], &w, &b);
                    for k in 0..CLASSES {
                        let d = p[k] - if s.train_y[i] == k { 1.0 } else { 0.0 };
                        gb[k] += d;
                        for j in 0..FEATURES {
                            gw[j][k] += d * s.train_x[i][j];
                        }
                    }
                }
                let m = chunk.len() as f64;
                for j in 0..FEATURES {
                    for k in 0..CLASSES {
                        w[j][k] -= lr * (gw[j][k] / m + 2.0 * l2 * w[j][k]);
                    }
                }
                for k in 0..CLASSES {
                    b[k] -= lr * gb[k] / m;
                }
            }
            let correct = s
                .val_x
                .iter()
                .zip(&s.val_y)
                .filter(|(x, y)| {
                    let p = softmax(x, &w, &b);
                    (0..CLASSES).max_by(|a, c| p[*a].total_cmp(&p[*c])) == Some(**y)
                })
                .count();
            best = best.max(correct as f64 / s.val_x.len() as f64);
        }
        Ok(best)
    }
}

/// The parties of a tuning task as one [`Respondent`]: the `t`-th evaluation query it
/// answers (counting from 0) holds one point per party, and party `p` trains on shard
/// `p mod shards` with SGD seed `derive_seed(seed, [t])` when `p < shards`, and
/// `derive_seed(seed, [t, p / shards])` beyond (its own stream, as the authors' party `s`
/// uses split `s % 5` with its own run); docs/notes/collaborative-fair-bo.md §4. Any
/// [`TuningTask`] serves: [`DigitsTuning`] (the default) or
/// [`crate::cnn_tuning::CnnTuning`].
#[derive(Debug, Clone)]
pub struct TuningParties<T: TuningTask = DigitsTuning> {
    task: T,
    parties: usize,
    seed: u64,
    answered: u64,
}

impl<T: TuningTask> TuningParties<T> {
    /// `parties ≥ 1` parties over `task`'s shards, SGD streams from `seed`. Errors name
    /// `parties`.
    pub fn new(task: T, parties: usize, seed: u64) -> Result<TuningParties<T>> {
        if parties == 0 {
            return Err(Error::invalid("parties", "needs at least one party"));
        }
        Ok(TuningParties {
            task,
            parties,
            seed,
            answered: 0,
        })
    }

    /// Evaluation queries answered so far.
    pub fn answered(&self) -> u64 {
        self.answered
    }

    /// The SGD seed of party `p` on the `t`-th query.
    fn sgd_seed(&self, t: u64, p: usize) -> u64 {
        match p / self.task.shards() {
            0 => derive_seed(self.seed, &[t]),
            k => derive_seed(self.seed, &[t, k as u64]),
        }
    }
}

impl<T: TuningTask> Respondent for TuningParties<T> {
    /// Best validation accuracy of each party's training run at its point; errors name
    /// `points` (not one per party) or `points[i]` (not a unit-cube point).
    fn answer(&mut self, query: &Query) -> Result<Answer> {
        let QueryKind::Evaluate { points } = &query.kind else {
            return Err(Error::unsupported_query("tuning parties", query));
        };
        if points.len() != self.parties {
            return Err(Error::dim("points", self.parties, points.len()));
        }
        let t = self.answered;
        let values = points
            .iter()
            .enumerate()
            .map(|(p, x)| match x {
                Point::Unit(u) => {
                    self.task
                        .evaluate(p % self.task.shards(), u, self.sgd_seed(t, p))
                }
                Point::Index(_) => Err(Error::invalid(
                    format!("points[{p}]"),
                    "tuning parties evaluate unit-cube points, not candidate indices",
                )),
            })
            .collect::<Result<Vec<f64>>>()?;
        self.answered += 1;
        Answer::values(query, values)
    }
}

fn softmax(x: &[f64; FEATURES], w: &[[f64; CLASSES]], b: &[f64; CLASSES]) -> [f64; CLASSES] {
    let mut z = *b;
    for j in 0..FEATURES {
        for k in 0..CLASSES {
            z[k] += x[j] * w[j][k];
        }
    }
    let mx = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut s = 0.0;
    for v in z.iter_mut() {
        *v = (*v - mx).exp();
        s += *v;
    }
    for v in z.iter_mut() {
        *v /= s;
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_settings_learn_and_bad_ones_do_not() {
        let t = DigitsTuning::new(5).unwrap();
        // lr 10^-0.5, small L2, batch 36: a softmax regression reaches > 85 % on digits.
        let good = t.evaluate(0, &[0.2, 0.1, 0.9], 1).unwrap();
        assert!(good > 0.85, "{good}");
        // lr 1e-5: stays near its random start.
        let bad = t.evaluate(0, &[0.5, 0.5, 0.0], 1).unwrap();
        assert!(bad < good - 0.3, "{bad} vs {good}");
        assert_eq!(DigitsTuning::hyper(&[0.0, 0.0, 1.0]), (20, 1e-5, 1.0));
        assert!(
            t.evaluate(7, &[0.5; 3], 0)
                .unwrap_err()
                .to_string()
                .contains("party")
        );
        assert!(DigitsTuning::new(0).is_err());
        assert!(
            DigitsTuning::new(100)
                .unwrap_err()
                .to_string()
                .contains("parties")
        );
    }

    /// The respondent is the task's own `evaluate` on the documented seeds: query `t`,
    /// party `p` on shard `p mod 5`, the stream of `t` (and `p / 5` beyond the fifth).
    #[test]
    fn parties_answer_with_their_shards_and_streams() {
        let task = DigitsTuning::new(5).unwrap();
        let mut r = TuningParties::new(task.clone(), 7, 42).unwrap();
        let xs: Vec<Vec<f64>> = (0..7).map(|p| vec![0.1 * p as f64, 0.3, 0.8]).collect();
        let q = |id| Query {
            id,
            kind: QueryKind::Evaluate {
                points: xs.iter().map(|x| Point::Unit(x.clone())).collect(),
            },
        };
        for t in 0..2u64 {
            let a = r.answer(&q(100 + t)).unwrap();
            let want: Vec<f64> = (0..7)
                .map(|p| {
                    let seed = if p < 5 {
                        derive_seed(42, &[t])
                    } else {
                        derive_seed(42, &[t, 1])
                    };
                    task.evaluate(p % 5, &xs[p], seed).unwrap()
                })
                .collect();
            assert_eq!(a, Answer::values(&q(100 + t), want).unwrap());
        }
        assert_eq!(r.answered(), 2);
        // One point per party, unit-cube points, evaluation queries only.
        let short = Query {
            id: 0,
            kind: QueryKind::Evaluate {
                points: vec![Point::Unit(vec![0.5; 3])],
            },
        };
        assert!(r.answer(&short).unwrap_err().to_string().contains("points"));
        let index = Query {
            id: 0,
            kind: QueryKind::Evaluate {
                points: vec![Point::Index(0); 7],
            },
        };
        assert!(
            r.answer(&index)
                .unwrap_err()
                .to_string()
                .contains("points[0]")
        );
        let compare = Query {
            id: 0,
            kind: QueryKind::Compare {
                points: vec![Point::Unit(vec![0.5; 3]); 2],
                rater: None,
            },
        };
        assert!(matches!(
            r.answer(&compare),
            Err(Error::UnsupportedQuery { .. })
        ));
        assert_eq!(r.answered(), 2, "refused queries are not counted");
        assert!(TuningParties::new(task, 0, 0).is_err());
    }
}
