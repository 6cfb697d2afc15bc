//! Comparisons between rows of a point set: checks and duplicate merging.

use agora_core::{Error, Result};

/// One comparison between two rows of the point set.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Comparison {
    /// Row of the preferred point.
    pub winner: usize,
    /// Row of the other point.
    pub loser: usize,
    /// Noise scale σ of this comparison (1 = the model's default reliability).
    pub scale: f64,
}

impl Comparison {
    /// `winner ≻ loser` with unit noise scale.
    pub fn new(winner: usize, loser: usize) -> Comparison {
        Comparison {
            winner,
            loser,
            scale: 1.0,
        }
    }
}

/// Check points and comparisons; errors name the field.
pub fn check_comparisons(n: usize, comps: &[Comparison]) -> Result<()> {
    if comps.is_empty() {
        return Err(Error::invalid(
            "comparisons",
            "needs at least one comparison",
        ));
    }
    for (k, c) in comps.iter().enumerate() {
        for (name, i) in [("winner", c.winner), ("loser", c.loser)] {
            if i >= n {
                return Err(Error::invalid(
                    format!("comparisons[{k}].{name}"),
                    format!("unknown point {i}; points are 0..{n}"),
                ));
            }
        }
        if c.winner == c.loser {
            return Err(Error::invalid(
                format!("comparisons[{k}]"),
                format!("compares point {} with itself", c.winner),
            ));
        }
        if !(c.scale.is_finite() && c.scale > 0.0) {
            return Err(Error::invalid(
                format!("comparisons[{k}].scale"),
                format!("must be a positive finite number, got {}", c.scale),
            ));
        }
    }
    Ok(())
}

/// Merge rows that coincide within `tol` in every coordinate (BoTorch uses 1e-4) and
/// re-index the comparisons. Returns the unique rows, the new comparisons and, for each
/// input row, its unique row.
pub fn merge_duplicates(
    points: &[Vec<f64>],
    comps: &[Comparison],
    tol: f64,
) -> (Vec<Vec<f64>>, Vec<Comparison>, Vec<usize>) {
    let mut unique: Vec<Vec<f64>> = Vec::new();
    let mut map = Vec::with_capacity(points.len());
    for p in points {
        let found = unique
            .iter()
            .position(|u| u.iter().zip(p).all(|(a, b)| (a - b).abs() <= tol));
        match found {
            Some(i) => map.push(i),
            None => {
                map.push(unique.len());
                unique.push(p.clone());
            }
        }
    }
    let comps = comps
        .iter()
        .map(|c| Comparison {
            winner: map.get(c.winner).copied().unwrap_or(usize::MAX),
            loser: map.get(c.loser).copied().unwrap_or(usize::MAX),
            scale: c.scale,
        })
        .collect();
    (unique, comps, map)
}
