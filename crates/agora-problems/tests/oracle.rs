//! The oracle as a respondent: evaluations, comparisons and Hessians of test functions.

use agora_core::{Answer, AnswerKind, Channel, Error, Point, Query, QueryKind, Respondent};
use agora_problems::{Oracle, Problem};
use std::f64::consts::PI;

/// Branin's Hessian in closed form (the oracle maximizes `−branin`):
/// `f = −(q² + 10(1 − t) cos x1 + 10)`, `q = x2 − b x1² + c x1 − 6`.
fn branin_hessian(x1: f64, x2: f64) -> [[f64; 2]; 2] {
    let b = 5.1 / (4.0 * PI * PI);
    let c = 5.0 / PI;
    let t = 1.0 / (8.0 * PI);
    let q = x2 - b * x1 * x1 + c * x1 - 6.0;
    let q1 = c - 2.0 * b * x1;
    let h11 = -(2.0 * q1 * q1 - 4.0 * b * q - 10.0 * (1.0 - t) * x1.cos());
    let h12 = -2.0 * q1;
    [[h11, h12], [h12, -2.0]]
}

fn hessian_query(id: u64, point: Point) -> Query {
    Query {
        id,
        kind: QueryKind::Hessian { point },
    }
}

#[test]
fn hessians_match_the_closed_form_in_user_units() {
    let p = Problem::by_name("branin").unwrap();
    let space = p.space.clone();
    let mut oracle = Oracle::new(p, 0.0, 0).unwrap();
    for (k, u) in [[0.5, 0.5], [0.1, 0.9], [0.95, 0.05], [0.0, 1.0]]
        .iter()
        .enumerate()
    {
        let q = hessian_query(k as u64, Point::Unit(u.to_vec()));
        let a = Respondent::answer(&mut oracle, &q).unwrap();
        a.check_against(&q).unwrap();
        let AnswerKind::Matrix { rows } = &a.kind else {
            panic!("{a:?}")
        };
        let x = space.to_user_reals(u).unwrap();
        let want = branin_hessian(x[0], x[1]);
        for i in 0..2 {
            for j in 0..2 {
                let tol = 1e-5 * (1.0 + want[i][j].abs());
                assert!(
                    (rows[i][j] - want[i][j]).abs() < tol,
                    "at {x:?}: H[{i}][{j}] = {} vs {}",
                    rows[i][j],
                    want[i][j]
                );
            }
        }
        assert_eq!(rows[0][1], rows[1][0], "symmetric");
    }
}

#[test]
fn the_respondent_answers_like_the_oracle_and_refuses_what_it_cannot_answer() {
    let eval = Query {
        id: 3,
        kind: QueryKind::Evaluate {
            points: vec![Point::Unit(vec![0.2, 0.7]), Point::Unit(vec![0.9, 0.1])],
        },
    };
    let mut a = Oracle::new(Problem::by_name("branin").unwrap(), 0.5, 9).unwrap();
    let mut b = Oracle::new(Problem::by_name("branin").unwrap(), 0.5, 9).unwrap();
    for _ in 0..3 {
        let x: Answer = a.answer(&eval).unwrap();
        let y = Respondent::answer(&mut b, &eval).unwrap();
        assert_eq!(x, y, "same seed, same noisy values");
        x.check_against(&eval).unwrap();
    }
    let mut boxed: Box<dyn Respondent> = Box::new(a);
    let vote = Query {
        id: 4,
        kind: QueryKind::GroupVote {
            points: vec![Point::Unit(vec![0.2, 0.7]), Point::Unit(vec![0.9, 0.1])],
            channel: Channel::Public,
            agents: vec!["ann".into()],
        },
    };
    let e = boxed.answer(&vote).unwrap_err();
    assert!(
        matches!(&e, Error::UnsupportedQuery { kind, .. } if kind == "group_vote"),
        "{e}"
    );
    let e = boxed
        .answer(&hessian_query(5, Point::Index(2)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("point") && e.contains("unit-cube"), "{e}");
    let e = boxed
        .answer(&hessian_query(6, Point::Unit(vec![0.5])))
        .unwrap_err();
    assert!(matches!(e, Error::Dimension { .. }), "{e}");
}
