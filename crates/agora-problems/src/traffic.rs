//! The mobility-demand grid of the traffic hotspot experiment of Sim et al. (2021), from
//! data/traffic-grid (a plain-data export of the authors' `tlog44.pkl`; provenance and
//! semantics in data/traffic-grid/README.md).
//!
//! Only the 2,506 valid cells are kept, re-indexed `0..2506` in id order. The objective of a
//! cell is `log(1 + demand)` as in the experiment: `log1p(exp(log_demand))` for a positive
//! demand and 0 for a zero-demand cell (code −1); its maximum is `ln 96 ≈ 4.5643` at cell id
//! 1639 (row 16, col 38). The authors' regret uses `log1p(96)` instead (note §7.10); agora
//! uses the data's true maximum. GP inputs are the raw `(row, col)`, as in the authors' code.
//!
//! The neighbour table is kept as given (directed, a subset of the 3×3 block), except that
//! self-entries are dropped: a party's own cell is always visited, so they never matter.

use agora_core::{Answer, Error, Point, Query, QueryKind, Respondent, Result};

const CELLS: &str = include_str!("../../../data/traffic-grid/cells.csv");
const NEIGHBORS: &str = include_str!("../../../data/traffic-grid/neighbors.csv");

/// The valid cells of the grid with their demand and neighbours.
#[derive(Debug, Clone)]
pub struct TrafficGrid {
    /// Original 1-based cell id of each valid cell.
    pub ids: Vec<usize>,
    /// `(row, col)` of each valid cell.
    pub coords: Vec<[f64; 2]>,
    /// `log(1 + demand)` of each valid cell.
    pub values: Vec<f64>,
    /// Out-neighbours of each valid cell (valid-cell indices, no self-entries).
    pub neighbors: Vec<Vec<usize>>,
}

fn field<'a>(file: &str, line: usize, v: &[&'a str], k: usize) -> Result<&'a str> {
    v.get(k)
        .map(|s| s.trim())
        .ok_or_else(|| Error::invalid(format!("{file} line {line}"), "too few columns"))
}

impl TrafficGrid {
    /// Parse the carried data.
    pub fn load() -> Result<TrafficGrid> {
        Self::parse(CELLS, NEIGHBORS)
    }

    /// Parse `cells.csv` and `neighbors.csv` text (errors name the file and line).
    pub fn parse(cells: &str, neighbors: &str) -> Result<TrafficGrid> {
        let num = |file: &str, line: usize, s: &str| -> Result<f64> {
            s.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    Error::invalid(
                        format!("{file} line {line}"),
                        format!("not a number: {s:?}"),
                    )
                })
        };
        let mut g = TrafficGrid {
            ids: Vec::new(),
            coords: Vec::new(),
            values: Vec::new(),
            neighbors: Vec::new(),
        };
        let mut index_of = std::collections::HashMap::new();
        for (i, line) in cells.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let v: Vec<&str> = line.split(',').collect();
            let id = num("cells.csv", i + 1, field("cells.csv", i + 1, &v, 0)?)? as usize;
            let row = num("cells.csv", i + 1, field("cells.csv", i + 1, &v, 1)?)?;
            let col = num("cells.csv", i + 1, field("cells.csv", i + 1, &v, 2)?)?;
            let ld = num("cells.csv", i + 1, field("cells.csv", i + 1, &v, 3)?)?;
            let value = if ld == -2.0 {
                continue;
            } else if ld == -1.0 {
                0.0
            } else if ld >= 0.0 {
                ld.exp().ln_1p()
            } else {
                return Err(Error::invalid(
                    format!("cells.csv line {}", i + 1),
                    format!("log_demand must be -2, -1 or >= 0, got {ld}"),
                ));
            };
            index_of.insert(id, g.ids.len());
            g.ids.push(id);
            g.coords.push([row, col]);
            g.values.push(value);
        }
        g.neighbors = vec![Vec::new(); g.ids.len()];
        for (i, line) in neighbors.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let v: Vec<&str> = line.split(',').collect();
            let a = num(
                "neighbors.csv",
                i + 1,
                field("neighbors.csv", i + 1, &v, 0)?,
            )? as usize;
            let b = num(
                "neighbors.csv",
                i + 1,
                field("neighbors.csv", i + 1, &v, 1)?,
            )? as usize;
            let (Some(&ia), Some(&ib)) = (index_of.get(&a), index_of.get(&b)) else {
                return Err(Error::invalid(
                    format!("neighbors.csv line {}", i + 1),
                    format!("cell ids {a} and {b} must both be valid cells"),
                ));
            };
            if ia != ib {
                g.neighbors[ia].push(ib);
            }
        }
        if g.ids.is_empty() {
            return Err(Error::invalid("cells.csv", "no valid cells"));
        }
        Ok(g)
    }

    /// Number of valid cells.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no cells (never, after [`TrafficGrid::load`]).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The largest objective value.
    pub fn optimum_value(&self) -> f64 {
        self.values
            .iter()
            .cloned()
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// Objective of valid cell `i`; errors name `cell` and the allowed range.
    pub fn value(&self, i: usize) -> Result<f64> {
        self.values.get(i).copied().ok_or_else(|| {
            Error::invalid(
                "cell",
                format!("{i} is not a valid cell index (0..{})", self.len()),
            )
        })
    }
}

/// The grid answers evaluation queries over its cells: each point is a valid-cell index
/// ([`Point::Index`]) and its answer the cell's objective, exactly (the experiment observes
/// the data without noise). Errors name `points[i]` (a unit-cube point) or `cell`.
impl Respondent for TrafficGrid {
    fn answer(&mut self, query: &Query) -> Result<Answer> {
        let QueryKind::Evaluate { points } = &query.kind else {
            return Err(Error::unsupported_query("traffic grid", query));
        };
        let values = points
            .iter()
            .enumerate()
            .map(|(i, p)| match p {
                Point::Index(c) => self.value(*c),
                Point::Unit(_) => Err(Error::invalid(
                    format!("points[{i}]"),
                    "the traffic grid evaluates cell indices, not unit-cube points",
                )),
            })
            .collect::<Result<Vec<f64>>>()?;
        Answer::values(query, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_the_data_readme() {
        let g = TrafficGrid::load().unwrap();
        assert_eq!(g.len(), 2506);
        assert_eq!(g.values.iter().filter(|v| **v == 0.0).count(), 1130);
        let best = (0..g.len())
            .max_by(|a, b| g.values[*a].total_cmp(&g.values[*b]))
            .unwrap();
        assert_eq!(g.ids[best], 1639);
        assert_eq!(g.coords[best], [16.0, 38.0]);
        assert!((g.optimum_value() - 96f64.ln()).abs() < 1e-5);
        // 8,188 non-self entries; every neighbour within the 3×3 block.
        assert_eq!(g.neighbors.iter().map(|n| n.len()).sum::<usize>(), 8188);
        for (i, ns) in g.neighbors.iter().enumerate() {
            for &j in ns {
                assert!((g.coords[i][0] - g.coords[j][0]).abs() <= 1.0);
                assert!((g.coords[i][1] - g.coords[j][1]).abs() <= 1.0);
            }
        }
        assert!(g.value(5000).unwrap_err().to_string().contains("cell"));
    }

    #[test]
    fn malformed_files_are_named() {
        let e = TrafficGrid::parse("id,row,col,log_demand\n1,0,0,x\n", "id,n\n").unwrap_err();
        assert!(e.to_string().contains("cells.csv line 2"), "{e}");
        let e =
            TrafficGrid::parse("id,row,col,log_demand\n1,0,0,1.0\n", "id,n\n1,9\n").unwrap_err();
        assert!(e.to_string().contains("neighbors.csv line 2"), "{e}");
    }

    #[test]
    fn answers_cell_values_and_refuses_the_rest() {
        let mut g = TrafficGrid::load().unwrap();
        let cells = [1639usize, 0, 2505, 17];
        let q = Query {
            id: 3,
            kind: QueryKind::Evaluate {
                points: cells.iter().map(|&c| Point::Index(c)).collect(),
            },
        };
        let want: Vec<f64> = cells.iter().map(|&c| g.values[c]).collect();
        assert_eq!(g.answer(&q).unwrap(), Answer::values(&q, want).unwrap());
        let bad = Query {
            id: 0,
            kind: QueryKind::Evaluate {
                points: vec![Point::Index(9999)],
            },
        };
        assert!(g.answer(&bad).unwrap_err().to_string().contains("cell"));
        let unit = Query {
            id: 0,
            kind: QueryKind::Evaluate {
                points: vec![Point::Unit(vec![0.5, 0.5])],
            },
        };
        assert!(
            g.answer(&unit)
                .unwrap_err()
                .to_string()
                .contains("points[0]")
        );
        let compare = Query {
            id: 0,
            kind: QueryKind::Compare {
                points: vec![Point::Index(0), Point::Index(1)],
                rater: None,
            },
        };
        assert!(matches!(
            g.answer(&compare),
            Err(Error::UnsupportedQuery { .. })
        ));
    }
}
