//! Checks of what a caller hands a suggester: a box space, and unit-cube points.

use crate::discrete::snap_discrete;
use agora_core::{Error, Result, Space};

/// Error unless `space` is a valid box (suggesters propose unit-cube points).
pub(crate) fn require_box(space: &Space) -> Result<()> {
    space.validate()?;
    match space {
        Space::Box { .. } => Ok(()),
        Space::Candidates { .. } => Err(Error::invalid(
            "space",
            "a suggester proposes points of a box; use a box space",
        )),
    }
}

/// `x` checked as a unit-cube point of `space` (length `space.dim()`, every coordinate a
/// finite number in `[0, 1]`; errors name `field` or `field[j]`), with its integer and
/// categorical coordinates snapped and its continuous ones kept as given.
pub(crate) fn unit_point(space: &Space, field: &str, x: &[f64]) -> Result<Vec<f64>> {
    let d = space.dim();
    if x.len() != d {
        return Err(Error::dim(field, d, x.len()));
    }
    if let Some(j) = x
        .iter()
        .position(|v| !(v.is_finite() && (0.0..=1.0).contains(v)))
    {
        return Err(Error::invalid(
            format!("{field}[{j}]"),
            format!(
                "must be a unit-cube coordinate, a finite number in [0, 1], got {}",
                x[j]
            ),
        ));
    }
    snap_discrete(space, x)
}
