//! Evaluation history of the one-point-at-a-time strategies; the open query itself is kept
//! by [`crate::open`].

use crate::open::{OpenQuery, checked_values};
use agora_core::{Answer, Error, Point, Query, QueryKind, Result, Space};

/// Points evaluated so far (model coordinates) and their values, plus the open query.
#[derive(Debug, Clone)]
pub struct History {
    /// The space searched.
    pub space: Space,
    /// Evaluated points (unit cube for boxes, feature rows for candidate sets).
    pub x: Vec<Vec<f64>>,
    /// Candidate indices evaluated (finite sets only).
    pub index: Vec<usize>,
    /// Values, larger is better.
    pub y: Vec<f64>,
    /// The open evaluation queries and their points.
    pub(crate) open: OpenQuery<Point>,
    /// How many of the first evaluations were imported ([`History::import`]), not answers.
    pub imported: usize,
}

/// A [`History`] as plain data, for snapshots (the space comes from the method's
/// definition).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct HistoryState {
    x: Vec<Vec<f64>>,
    index: Vec<usize>,
    y: Vec<f64>,
    open: Vec<(Query, Point)>,
    /// Absent in snapshots written before imports (and when nothing was imported).
    #[serde(default, skip_serializing_if = "is_zero")]
    imported: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl History {
    /// The history as plain data.
    pub(crate) fn state(&self) -> HistoryState {
        HistoryState {
            x: self.x.clone(),
            index: self.index.clone(),
            y: self.y.clone(),
            open: self.open.entries().to_vec(),
            imported: self.imported,
        }
    }

    /// Install a [`History::state`] on an empty history of the same space. Errors (rows of
    /// the wrong width, counts that disagree, a value that is not finite) leave it unchanged.
    pub(crate) fn restore_state(&mut self, st: HistoryState) -> Result<()> {
        if !self.y.is_empty() || !self.open.is_empty() {
            return Err(Error::State("restore a history onto an empty one".into()));
        }
        let d = self.space.dim();
        if let Some(r) = st.x.iter().find(|r| r.len() != d) {
            return Err(Error::dim("snapshot.x", d, r.len()));
        }
        if st.x.len() != st.y.len() {
            return Err(Error::dim("snapshot.y", st.x.len(), st.y.len()));
        }
        agora_core::check_finite_slice("snapshot.y", &st.y)?;
        if st.imported > st.y.len() {
            return Err(Error::invalid(
                "snapshot.imported",
                "more imported evaluations than evaluations",
            ));
        }
        self.x = st.x;
        self.index = st.index;
        self.y = st.y;
        self.open = OpenQuery::from_entries(st.open);
        self.imported = st.imported;
        Ok(())
    }

    /// An empty history over a validated space.
    pub fn new(space: Space) -> Result<History> {
        space.validate()?;
        Ok(History {
            space,
            x: Vec::new(),
            index: Vec::new(),
            y: Vec::new(),
            open: OpenQuery::default(),
            imported: 0,
        })
    }

    /// Take earlier evaluations (box spaces; unit-cube points checked and snapped) before
    /// the first answer, withdrawing the open queries. Errors name the row (`import[k]`)
    /// and change nothing.
    pub fn import(&mut self, data: &[agora_core::Observation]) -> Result<()> {
        if self.answered() > 0 {
            return Err(Error::invalid(
                "import",
                "data can only be imported before the first answer",
            ));
        }
        let mut rows = Vec::with_capacity(data.len());
        for (k, o) in data.iter().enumerate() {
            let agora_core::Observation::Evaluation { point, value } = o else {
                return Err(Error::invalid(
                    format!("import[{k}]"),
                    "this method learns from evaluations (point, value), not comparisons",
                ));
            };
            let x = crate::unit_point(&self.space, &format!("import[{k}].point"), point)?;
            agora_core::check_finite(&format!("import[{k}].value"), *value)?;
            rows.push((x, *value));
        }
        for (x, v) in rows {
            self.x.push(x);
            self.y.push(v);
        }
        self.imported = self.y.len();
        self.open = OpenQuery::default();
        Ok(())
    }

    /// Number of answers (evaluations not imported).
    pub fn answered(&self) -> usize {
        self.y.len() - self.imported
    }

    /// The open query (the oldest, when several are open), if any.
    pub fn open(&self) -> Option<&Query> {
        self.open.query()
    }

    /// Queries issued so far, answered or open: the id of the next one, and the index of
    /// its place in a space-filling design.
    pub fn issued(&self) -> usize {
        self.y.len() + self.open.len()
    }

    /// The points of the open queries in model coordinates (unit cube, or feature rows),
    /// oldest first: the pending evaluations.
    pub fn pending_x(&self) -> Result<Vec<Vec<f64>>> {
        self.open
            .queries()
            .map(|(_, p)| match p {
                Point::Unit(u) => Ok(u.clone()),
                Point::Index(i) => self.space.candidate(*i).map(<[f64]>::to_vec),
            })
            .collect()
    }

    /// Whether candidate `i` was evaluated or is pending.
    pub fn candidate_taken(&self, i: usize) -> bool {
        self.index.contains(&i)
            || self
                .open
                .queries()
                .any(|(_, p)| matches!(p, Point::Index(j) if *j == i))
    }

    /// The evaluation query for one point (snapped to a representable point), and the point.
    /// Its id is the number of queries issued before it.
    pub fn query_point(&self, p: Point) -> Result<(Query, Point)> {
        let p = match p {
            Point::Unit(u) => Point::Unit(self.space.canonicalize(&u)?),
            Point::Index(i) => {
                self.space.candidate(i)?;
                Point::Index(i)
            }
        };
        let q = Query {
            id: self.issued() as u64,
            kind: QueryKind::Evaluate {
                points: vec![p.clone()],
            },
        };
        Ok((q, p))
    }

    /// Record the value of `p` from an answer already checked against its query.
    pub fn record(&mut self, p: &Point, answer: &Answer) -> Result<()> {
        let values = checked_values(answer)?;
        let &[v] = values else {
            return Err(Error::dim("values", 1, values.len()));
        };
        let x = match p {
            Point::Unit(u) => u.clone(),
            Point::Index(i) => self.space.candidate(*i)?.to_vec(),
        };
        if let Point::Index(i) = p {
            self.index.push(*i);
        }
        self.x.push(x);
        self.y.push(v);
        Ok(())
    }

    /// Number of evaluations.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// True when nothing was evaluated.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// The best evaluation as `(point, value)`.
    pub fn best(&self) -> Option<(Point, f64)> {
        let (i, v) = self.y.iter().enumerate().fold(
            None,
            |acc: Option<(usize, f64)>, (i, &v)| match acc {
                Some((_, bv)) if bv >= v => acc,
                _ => Some((i, v)),
            },
        )?;
        let p = match self.space {
            Space::Candidates { .. } => Point::Index(self.index[i]),
            Space::Box { .. } => Point::Unit(self.x[i].clone()),
        };
        Some((p, v))
    }
}
