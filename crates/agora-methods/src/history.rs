//! Evaluation history with one open query at a time.

use agora_core::{Answer, AnswerKind, Error, Point, Query, QueryKind, Result, Space};

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
    open: Option<(Query, Vec<Point>)>,
    next_id: u64,
}

impl History {
    /// An empty history over a validated space.
    pub fn new(space: Space) -> Result<History> {
        space.validate()?;
        Ok(History {
            space,
            x: Vec::new(),
            index: Vec::new(),
            y: Vec::new(),
            open: None,
            next_id: 0,
        })
    }

    /// The open query, if any.
    pub fn open(&self) -> Option<&Query> {
        self.open.as_ref().map(|(q, _)| q)
    }

    /// Open an evaluation query for one point (snapped to a representable point).
    pub fn open_point(&mut self, p: Point) -> Result<Query> {
        let p = match p {
            Point::Unit(u) => Point::Unit(self.space.canonicalize(&u)?),
            Point::Index(i) => {
                self.space.candidate(i)?;
                Point::Index(i)
            }
        };
        let q = Query {
            id: self.next_id,
            kind: QueryKind::Evaluate {
                points: vec![p.clone()],
            },
        };
        self.open = Some((q.clone(), vec![p]));
        Ok(q)
    }

    /// Record the answer to the open query.
    pub fn record(&mut self, answer: &Answer) -> Result<()> {
        let Some((q, points)) = &self.open else {
            return Err(Error::NoOpenQuery);
        };
        answer.check_against(q)?;
        let AnswerKind::Values { values } = &answer.kind else {
            return Err(Error::invalid("answer", "an evaluation query needs values"));
        };
        for (p, v) in points.iter().zip(values) {
            match p {
                Point::Unit(u) => self.x.push(u.clone()),
                Point::Index(i) => {
                    self.x.push(self.space.candidate(*i)?.to_vec());
                    self.index.push(*i);
                }
            }
            self.y.push(*v);
        }
        self.open = None;
        self.next_id += 1;
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
