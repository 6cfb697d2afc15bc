//! Phase 1 of DSS-GP-UCB (DSBO paper, Alg. 4 lines 2–6) as a strategy: `T0` points drawn
//! uniformly in the box, `C1` Hessian queries at each ([`QueryKind::Hessian`], answered by a
//! `D × D` matrix in user units), `S = Σ h` entrywise, then the structure of `S`
//! ([`Structure::from_hessian_sum`]). After `T0 · C1` answers the search is finished and
//! [`StructureSearch::structure`] holds the result.

use super::structure::{Structure, StructureConfig};
use crate::Strategy;
use crate::evaluations::{continuous_box, uniform_point};
use crate::open::{self, AskTell, OpenQuery};
use agora_core::{Answer, AnswerKind, Error, Point, Query, QueryKind, Result, Space};
use agora_math::rng::{Rng, stream};

/// The structure phase of DSS-GP-UCB, deterministic in its seed (given deterministic
/// answers).
#[derive(Debug, Clone)]
pub struct StructureSearch {
    config: StructureConfig,
    dim: usize,
    rng: Rng,
    /// The point of the current group of `C1` queries (unit cube).
    point: Vec<f64>,
    sum: Vec<Vec<f64>>,
    answered: usize,
    structure: Option<Structure>,
    open: OpenQuery<()>,
}

impl StructureSearch {
    /// Phase 1 on `space` (a box of real parameters) with `config`; the points are drawn
    /// from ChaCha stream `[]` of `seed`.
    ///
    /// Errors: a bad space or configuration (naming the field).
    pub fn new(space: &Space, config: StructureConfig, seed: u64) -> Result<StructureSearch> {
        config.validate()?;
        let dim = continuous_box(space)?;
        Ok(StructureSearch {
            config,
            dim,
            rng: stream(seed, &[]),
            point: Vec::new(),
            sum: vec![vec![0.0; dim]; dim],
            answered: 0,
            structure: None,
            open: OpenQuery::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &StructureConfig {
        &self.config
    }

    /// The Hessian queries Phase 1 asks in all, `T0 · C1`.
    pub fn queries(&self) -> usize {
        self.config.t0 * self.config.c1
    }

    /// The learned structure, once every query is answered.
    pub fn structure(&self) -> Option<&Structure> {
        self.structure.as_ref()
    }

    /// The structure, once learned (consumes the search).
    pub fn into_structure(self) -> Option<Structure> {
        self.structure
    }
}

impl AskTell for StructureSearch {
    type Pending = ();

    fn open_query(&mut self) -> &mut OpenQuery<()> {
        &mut self.open
    }

    fn propose(&mut self) -> Result<(Query, ())> {
        if self.answered >= self.queries() {
            return Err(Error::State(format!(
                "the structure search is finished: all {} Hessian queries were answered",
                self.queries()
            )));
        }
        if self.answered.is_multiple_of(self.config.c1) {
            self.point = uniform_point(&mut self.rng, self.dim);
        }
        let q = Query {
            id: self.answered as u64,
            kind: QueryKind::Hessian {
                point: Point::Unit(self.point.clone()),
            },
        };
        Ok((q, ()))
    }

    fn record(&mut self, _: &Query, _: &(), answer: &Answer) -> Result<()> {
        // The protocol has checked the shape (`rows[i]`) and finiteness.
        let AnswerKind::Matrix { rows } = &answer.kind else {
            return Err(Error::invalid("answer", "a Hessian query needs a `matrix`"));
        };
        for (row, acc) in rows.iter().zip(self.sum.iter_mut()) {
            for (v, a) in row.iter().zip(acc.iter_mut()) {
                *a += v;
            }
        }
        self.answered += 1;
        if self.answered == self.queries() {
            self.structure = Some(Structure::from_hessian_sum(&self.sum, &self.config)?);
        }
        Ok(())
    }
}

impl Strategy for StructureSearch {
    fn name(&self) -> String {
        "dsbo-structure".into()
    }
    fn ask(&mut self) -> Result<Query> {
        open::ask(self)
    }
    fn tell(&mut self, answer: &Answer) -> Result<()> {
        open::tell(self, answer)
    }
    fn recommend(&self) -> Option<(Point, f64)> {
        None
    }
    fn n_answered(&self) -> usize {
        self.answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsbo::EdgeRule;
    use crate::dsbo::theorem1::hessian_signal_variance;
    use crate::testing::drive;
    use agora_core::Respondent;
    use agora_gp::StationaryKind;
    use agora_math::cliques::maximal_cliques_brute_force;
    use agora_problems::AdditiveRespondent;
    use agora_problems::additive::{AdditiveConfig, AdditiveFunction, FeatureKernel};

    /// Answers every Hessian query with the same matrix.
    struct ConstantHessian(Vec<Vec<f64>>);

    impl Respondent for ConstantHessian {
        fn answer(&mut self, q: &Query) -> Result<Answer> {
            Ok(Answer {
                query_id: q.id,
                kind: AnswerKind::Matrix {
                    rows: self.0.clone(),
                },
            })
        }
    }

    fn learn(h: &[Vec<f64>], d: usize, cfg: &StructureConfig) -> Result<Structure> {
        let space = Space::reals(&vec![(-1.0, 1.0); d])?;
        let mut s = StructureSearch::new(&space, cfg.clone(), 0)?;
        drive(&mut s, &mut ConstantHessian(h.to_vec()), cfg.t0 * cfg.c1)?;
        s.into_structure()
            .ok_or_else(|| Error::State("not finished".into()))
    }

    /// Share of `seeds` random additive functions whose edge set Phase 1 recovers exactly.
    fn recovery_rate(t0: usize, seeds: u64, rel_noise: f64) -> f64 {
        // RBF with ℓ = 1 on [0, 1]^D meets Theorem 1's sign condition k^{∂i∂j} ≥ 0
        // (docs/notes/dsbo.md §2.5); σ_h = 1 for s = 1, ℓ = 1.
        let cfg = AdditiveConfig {
            kernel: FeatureKernel::Rbf,
            lengthscale: 1.0,
            n_features: 64,
            ..AdditiveConfig::new(8, 0.25)
        };
        let sigma_h = hessian_signal_variance(StationaryKind::Rbf, 1.0, 1.0, 1.0)
            .unwrap()
            .sqrt();
        let sigma_n = rel_noise * sigma_h;
        let mut exact = 0;
        for seed in 0..seeds {
            let f = AdditiveFunction::sample(&cfg, seed).unwrap();
            let mut oracle = AdditiveRespondent::new(f.clone(), sigma_n, 1000 + seed).unwrap();
            let sc = StructureConfig::new(
                t0,
                t0,
                EdgeRule::Theorem1 {
                    delta1: 0.1,
                    sigma_n,
                },
            );
            let mut search = StructureSearch::new(oracle.space(), sc, seed).unwrap();
            drive(&mut search, &mut oracle, t0 * t0).unwrap();
            let s = search.structure().unwrap();
            assert_eq!(s.hessian_queries, t0 * t0);
            if s.edges == f.edges() {
                assert_eq!(s.cliques, f.maximal_cliques().unwrap());
                exact += 1;
            }
        }
        exact as f64 / seeds as f64
    }

    #[test]
    fn exact_structure_recovery_rises_with_t0() {
        // Measured (30 functions, D = 8, p_g = 0.25, σ_n = 0.05 σ_h, C1 = T0):
        // T0 = 1, 4, 16, 64 → 0.37, 0.77, 0.93, 1.00.
        let rates: Vec<f64> = [1, 4, 16, 64]
            .iter()
            .map(|&t0| recovery_rate(t0, 30, 0.05))
            .collect();
        assert!(rates[0] <= 0.6, "{rates:?}");
        for w in rates.windows(2) {
            assert!(w[1] >= w[0] - 0.05, "{rates:?}");
        }
        assert!(rates[3] >= 0.95, "{rates:?}");
        assert!(rates[3] - rates[0] >= 0.4, "{rates:?}");
    }

    #[test]
    fn edge_rules_on_a_known_summed_hessian() {
        let d = 6;
        // An asymmetric matrix: the learner scores |(S_ab + S_ba)/2|.
        let mut h = vec![vec![0.0; d]; d];
        let entries = [
            ((0, 1), 5.0),
            ((1, 2), -4.0),
            ((0, 2), 3.0),
            ((3, 4), 2.0),
            ((4, 5), -1.0),
            ((2, 5), 0.5),
        ];
        for &((a, b), v) in &entries {
            h[a][b] = v + 0.25;
            h[b][a] = v - 0.25;
        }
        // S = T0·C1·H = 6 H. Cutoff 10: |6v| > 10 keeps |v| > 5/3.
        let cfg = StructureConfig::new(3, 2, EdgeRule::Cutoff(10.0));
        let s = learn(&h, d, &cfg).unwrap();
        assert_eq!(s.edges, vec![(0, 1), (0, 2), (1, 2), (3, 4)]);
        assert!((s.scores[1][2] - 24.0).abs() < 1e-12 && s.scores[2][1] == s.scores[1][2]);
        // Brute-force reference for the cliques: every subset of the 6 vertices.
        let brute = maximal_cliques_brute_force(&s.adjacency()).unwrap();
        assert_eq!(s.cliques, brute);
        assert_eq!(s.cliques, vec![vec![0, 1, 2], vec![3, 4], vec![5]]);
        // Budget 2: the two largest |v| (5 and 4).
        let cfg = StructureConfig::new(3, 2, EdgeRule::Budget(2));
        let s = learn(&h, d, &cfg).unwrap();
        assert_eq!(s.edges, vec![(0, 1), (1, 2)]);
        assert_eq!(s.cutoff, Some(24.0));
        // The edge cap applies to the cutoff rules too (largest scores first).
        let mut cfg = StructureConfig::new(1, 1, EdgeRule::Cutoff(0.0));
        cfg.max_edges = 3;
        let s = learn(&h, d, &cfg).unwrap();
        assert_eq!(s.edges, vec![(0, 1), (0, 2), (1, 2)]);
        // Theorem 1's cutoff with σ_n = 1, T0·C1 = 6: √6 · √(2 log(72/0.1)) ≈ 8.89.
        let cfg = StructureConfig::new(
            3,
            2,
            EdgeRule::Theorem1 {
                delta1: 0.1,
                sigma_n: 1.0,
            },
        );
        let s = learn(&h, d, &cfg).unwrap();
        let expect = 6f64.sqrt() * (2.0 * (72.0f64 / 0.1).ln()).sqrt();
        assert!((s.cutoff.unwrap() - expect).abs() < 1e-12);
        assert_eq!(s.edges, vec![(0, 1), (0, 2), (1, 2), (3, 4)]);
    }

    #[test]
    fn bad_answers_and_configurations_are_named_errors() {
        let cfg = StructureConfig::new(1, 1, EdgeRule::Budget(1));
        let e = learn(&vec![vec![0.0; 3]; 2], 3, &cfg).unwrap_err();
        assert!(
            matches!(e, Error::Dimension { ref field, .. } if field == "rows"),
            "{e}"
        );
        let mut h = vec![vec![0.0; 3]; 3];
        h[2][1] = f64::NAN;
        let e = learn(&h, 3, &cfg).unwrap_err();
        assert!(e.to_string().contains("rows[2][1]"), "{e}");
        let e = Space::reals(&[(0.0, 1.0), (1.0, 1.0), (0.0, 1.0)]).unwrap_err();
        assert!(e.to_string().contains("params[1]"), "{e}");
        let zero = StructureConfig::new(0, 1, EdgeRule::Budget(1));
        let e = learn(&[], 3, &zero).unwrap_err();
        assert!(e.to_string().contains("t0"), "{e}");
        assert!(Structure::random(4, 7, 0, 10).is_err());
        assert!(Structure::from_cliques(4, &[vec![0, 4]]).is_err());
        let e = Structure::from_hessian_sum(&[vec![0.0; 2], vec![0.0]], &cfg).unwrap_err();
        assert!(e.to_string().contains("sum[1]"), "{e}");
        // A finished search asks no more.
        let space = Space::reals(&[(0.0, 1.0); 3]).unwrap();
        let mut s = StructureSearch::new(&space, cfg, 0).unwrap();
        drive(&mut s, &mut ConstantHessian(vec![vec![1.0; 3]; 3]), 1).unwrap();
        assert_eq!(s.structure().unwrap().edges.len(), 1);
        assert!(matches!(s.ask(), Err(Error::State(_))));
    }

    #[test]
    fn bad_cutoffs_and_edge_budgets_name_the_field_and_the_allowed_values() {
        let h = vec![vec![1.0; 3]; 3];
        let msg = |rule: EdgeRule| {
            let cfg = StructureConfig::new(1, 1, rule);
            let direct = cfg.validate().unwrap_err().to_string();
            let via = learn(&h, 3, &cfg).unwrap_err().to_string();
            assert_eq!(direct, via);
            direct
        };
        // c_h < 0 (a given cutoff, or Theorem 1's from a negative σ_n).
        let e = msg(EdgeRule::Cutoff(-0.5));
        assert!(
            e.contains("`rule.cutoff`") && e.contains(">= 0") && e.contains("-0.5"),
            "{e}"
        );
        let e = msg(EdgeRule::Cutoff(f64::NAN));
        assert!(e.contains("`rule.cutoff`"), "{e}");
        let e = msg(EdgeRule::Theorem1 {
            delta1: 0.1,
            sigma_n: -1.0,
        });
        assert!(e.contains("`rule.sigma_n`") && e.contains(">= 0"), "{e}");
        let e = msg(EdgeRule::Theorem1 {
            delta1: 1.5,
            sigma_n: 1.0,
        });
        assert!(e.contains("`rule.delta1`") && e.contains("(0, 1)"), "{e}");
        // An edge budget of 0, and an edge cap of 0.
        let e = msg(EdgeRule::Budget(0));
        assert!(
            e.contains("`rule.budget`") && e.contains("at least 1"),
            "{e}"
        );
        let mut cfg = StructureConfig::new(1, 1, EdgeRule::Budget(5));
        cfg.max_edges = 0;
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.contains("`max_edges`") && e.contains("at least 1"), "{e}");
        // A zero cutoff and a budget of one are fine.
        assert!(
            StructureConfig::new(1, 1, EdgeRule::Cutoff(0.0))
                .validate()
                .is_ok()
        );
        assert!(
            StructureConfig::new(1, 1, EdgeRule::Budget(1))
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn random_structures_have_the_requested_edges() {
        for (d, k) in [(10, 7), (6, 14), (6, 15), (20, 0)] {
            let s = Structure::random(d, k, 3, 1000).unwrap();
            assert_eq!(s.edges.len(), k);
            assert!(s.edges.iter().all(|&(a, b)| a < b && b < d));
            assert_eq!(
                s.cliques,
                maximal_cliques_brute_force(&s.adjacency()).unwrap()
            );
            assert_eq!(s, Structure::random(d, k, 3, 1000).unwrap());
        }
        assert_ne!(
            Structure::random(10, 7, 3, 1000).unwrap().edges,
            Structure::random(10, 7, 4, 1000).unwrap().edges
        );
        // Given cliques gain singletons for uncovered dimensions.
        let s = Structure::from_cliques(5, &[vec![3, 1]]).unwrap();
        assert_eq!(s.cliques, vec![vec![0], vec![1, 3], vec![2], vec![4]]);
        assert_eq!(s.edges, vec![(1, 3)]);
    }
}
