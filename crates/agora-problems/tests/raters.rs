//! Simulated raters: empirical choice frequencies against their closed forms.

use agora_core::{AnswerKind, Point, Query, QueryKind};
use agora_problems::{Oracle, Problem, RaterModel};

fn freq(rater: RaterModel, a: f64, b: f64, n: usize) -> (f64, f64, f64) {
    // Forrester on [0,1]: pick points by value.
    let p = Problem::by_name("forrester").unwrap();
    let fa = p.value_at_unit(&[a]).unwrap();
    let fb = p.value_at_unit(&[b]).unwrap();
    let mut o = Oracle::with_rater(p, rater, 7).unwrap();
    let q = Query {
        id: 0,
        kind: QueryKind::Compare {
            points: vec![Point::Unit(vec![a]), Point::Unit(vec![b])],
            rater: None,
        },
    };
    let wins = (0..n)
        .filter(|_| {
            matches!(
                o.answer(&q).unwrap().kind,
                AnswerKind::Choice { winner: 0, .. }
            )
        })
        .count();
    (wins as f64 / n as f64, fa, fb)
}

#[test]
fn pair_choice_frequencies_match_probit_and_bradley_terry() {
    let n = 40_000;
    let se = (0.25 / n as f64).sqrt();
    let (p, fa, fb) = freq(RaterModel::Probit { sigma: 2.0 }, 0.75, 0.5, n);
    let expect = agora_math::special::norm_cdf((fa - fb) / (2f64.sqrt() * 2.0));
    assert!((p - expect).abs() < 4.0 * se, "probit {p} vs {expect}");
    let (p, fa, fb) = freq(RaterModel::BradleyTerry { sigma: 2.0 }, 0.75, 0.5, n);
    let expect = 1.0 / (1.0 + (-(fa - fb) / 2.0).exp());
    assert!(
        (p - expect).abs() < 4.0 * se,
        "bradley-terry {p} vs {expect}"
    );
}

#[test]
fn best_of_k_follows_plackett_luce_and_bad_raters_are_refused() {
    let p = Problem::by_name("forrester").unwrap();
    let xs = [0.75, 0.5, 0.2];
    let f: Vec<f64> = xs.iter().map(|x| p.value_at_unit(&[*x]).unwrap()).collect();
    let mut o = Oracle::with_rater(p, RaterModel::BradleyTerry { sigma: 3.0 }, 1).unwrap();
    let q = Query {
        id: 0,
        kind: QueryKind::Compare {
            points: xs.iter().map(|x| Point::Unit(vec![*x])).collect(),
            rater: Some("bob".into()),
        },
    };
    let n = 30_000;
    let mut counts = [0usize; 3];
    for _ in 0..n {
        match o.answer(&q).unwrap().kind {
            AnswerKind::Choice { winner, rater } => {
                assert_eq!(rater.as_deref(), Some("bob"));
                counts[winner] += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    let z: f64 = f.iter().map(|v| (v / 3.0).exp()).sum();
    for i in 0..3 {
        let expect = (f[i] / 3.0).exp() / z;
        let got = counts[i] as f64 / n as f64;
        assert!(
            (got - expect).abs() < 4.0 * (expect * (1.0 - expect) / n as f64).sqrt() + 1e-3,
            "option {i}: {got} vs {expect}"
        );
    }
    let p = Problem::by_name("forrester").unwrap();
    assert!(
        Oracle::with_rater(p, RaterModel::Probit { sigma: 0.0 }, 0)
            .unwrap_err()
            .to_string()
            .contains("sigma")
    );
}
