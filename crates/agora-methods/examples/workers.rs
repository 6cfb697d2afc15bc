//! Four workers on one GP-BO run: what evaluating in parallel costs per evaluation. Each
//! run spends the same budget of evaluations; "4 pending" keeps four queries open at all
//! times (`Strategy::ask_parallel`, the kriging believer) and answers the oldest first, as
//! four workers with equally long evaluations would; "sequential" asks one at a time;
//! random search is the floor. Paired over seeds (the same seed gives the same initial
//! design): the mean paired difference of the final simple regret is judged against two
//! standard errors.
//!
//! Run with `cargo run --release -p agora-methods --example workers [SEEDS] [BUDGET]`.

use agora_core::{Point, Query, QueryKind};
use agora_methods::Strategy;
use agora_methods::registry::{self, Setup};
use agora_problems::{Oracle, Problem};
use std::collections::VecDeque;

/// The simple regret after each of `budget` evaluations of `method` on `problem`, with
/// `workers` queries open at once (1: sequential).
fn regret_curve(problem: &str, method: &str, seed: u64, workers: usize, budget: usize) -> Vec<f64> {
    let p = Problem::by_name(problem).expect("a known problem");
    let mut s: Box<dyn Strategy> =
        registry::build(method, &[], Setup::new(p.space.clone(), seed)).expect("a method");
    let mut oracle =
        Oracle::new(Problem::by_name(problem).expect("known"), 0.0, 0).expect("oracle");
    let mut open: VecDeque<Query> = VecDeque::new();
    let mut best = f64::INFINITY;
    let mut curve = Vec::with_capacity(budget);
    for t in 0..budget {
        // Keep `workers` queries out while the budget lasts.
        while open.len() < workers.min(budget - t) {
            let q = if workers == 1 {
                s.ask()
            } else {
                s.ask_parallel()
            };
            open.push_back(q.expect("ask"));
        }
        let q = open.pop_front().expect("an open query");
        let a = oracle.answer(&q).expect("an answer");
        s.tell(&a).expect("tell");
        if let QueryKind::Evaluate { points } = &q.kind
            && let Some(Point::Unit(u)) = points.first()
        {
            best = best.min(p.regret_at_unit(u).expect("regret"));
        }
        curve.push(best);
    }
    curve
}

/// Mean and standard error.
fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

/// Three significant digits.
fn sig(x: f64) -> String {
    if x == 0.0 || (1e-3..1e4).contains(&x.abs()) {
        format!("{x:.3}")
    } else {
        format!("{x:.2e}")
    }
}

fn mean_text(v: &[f64]) -> String {
    let (m, se) = mean_se(v);
    format!("{} ± {}", sig(m), sig(se))
}

/// The mean paired difference ± its standard error, and whether it exceeds 2 SE.
fn verdict(diff: &[f64]) -> String {
    let (m, se) = mean_se(diff);
    let judged = if m.abs() > 2.0 * se {
        "beyond 2 SE"
    } else {
        "within 2 SE"
    };
    format!(
        "{}{} ± {} ({judged})",
        if m > 0.0 { "+" } else { "" },
        sig(m),
        sig(se)
    )
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let seeds = args.first().copied().unwrap_or(20) as u64;
    let budget = args.get(1).copied().unwrap_or(50);
    let checkpoints: Vec<usize> = [20, 30, budget]
        .into_iter()
        .filter(|n| *n <= budget)
        .collect();
    println!("{seeds} paired seeds; simple regret after N evaluations (mean ± SE)\n");
    println!(
        "| problem | method | N | sequential | 4 pending | random | 4 pending − sequential | random − 4 pending |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for problem in ["branin", "hartmann6"] {
        let curves = |workers: usize, m: &str| -> Vec<Vec<f64>> {
            (0..seeds)
                .map(|seed| regret_curve(problem, m, seed, workers, budget))
                .collect()
        };
        let rnd = curves(1, "random");
        for method in ["gp-logei", "gp-ts"] {
            let seq = curves(1, method);
            let par = curves(4, method);
            for &n in &checkpoints {
                let at = |c: &[Vec<f64>]| -> Vec<f64> { c.iter().map(|r| r[n - 1]).collect() };
                let (s, p, r) = (at(&seq), at(&par), at(&rnd));
                let d_par: Vec<f64> = p.iter().zip(&s).map(|(a, b)| a - b).collect();
                let d_rnd: Vec<f64> = r.iter().zip(&p).map(|(a, b)| a - b).collect();
                println!(
                    "| {problem} | {method} | {n} | {} | {} | {} | {} | {} |",
                    mean_text(&s),
                    mean_text(&p),
                    mean_text(&r),
                    verdict(&d_par),
                    verdict(&d_rnd)
                );
            }
        }
    }
}
