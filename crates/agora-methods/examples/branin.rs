//! GP-BO by ask/tell on the Branin function: the strategy asks where to evaluate, an oracle
//! answers with the function's value (as a lab or a simulator would), and the best point
//! found is printed in the problem's own units.
//!
//! Run with `cargo run --release -p agora-methods --example branin`.

use agora_core::Point;
use agora_methods::registry::{self, Setup};
use agora_problems::{Oracle, Problem};

fn main() -> agora_core::Result<()> {
    let problem = Problem::by_name("branin")?;
    let space = problem.space.clone();
    let optimum = problem.function.optimum_value();

    // Any registered method builds the same way; `agora list` shows them all.
    let mut strategy = registry::build("gp-logei", &[], Setup::new(space.clone(), 0))?;
    // Exact values; give a noise standard deviation instead of 0.0 to simulate a noisy lab.
    let mut oracle = Oracle::new(problem, 0.0, 0)?;

    for _ in 0..30 {
        let query = strategy.ask()?;
        let answer = oracle.answer(&query)?;
        strategy.tell(&answer)?;
    }

    if let Some((Point::Unit(u), value)) = strategy.recommend() {
        let x = space.to_user_reals(&u)?;
        println!(
            "{}: best of {} evaluations at x = ({:.4}, {:.4}): {value:.5} (optimum {optimum:.5})",
            strategy.name(),
            strategy.n_answered(),
            x[0],
            x[1]
        );
    }
    Ok(())
}
