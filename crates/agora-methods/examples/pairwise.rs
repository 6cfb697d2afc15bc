//! Preferential BO: nobody can score the options, but a person can say which of two they
//! prefer. The strategy asks for a comparison, a simulated rater answers (a probit rater
//! whose sense of the Branin function is blurred by noise), and a preference GP learns the
//! utility behind the choices.
//!
//! Run with `cargo run --release -p agora-methods --example pairwise`.

use agora_core::{AnswerKind, Point, QueryKind};
use agora_methods::registry::{self, Setup, parse_text};
use agora_problems::{Oracle, Problem, RaterModel};

fn main() -> agora_core::Result<()> {
    let problem = Problem::by_name("branin")?;
    let space = problem.space.clone();
    let scorer = Problem::by_name("branin")?;

    // `pbo` with the EUBO pair rule (`pbo-bald` and `pbo-winner` choose pairs differently).
    let knobs = [("rule".to_string(), parse_text("eubo"))];
    let mut strategy = registry::build("pbo", &knobs, Setup::new(space.clone(), 1))?;
    let rater = RaterModel::Probit { sigma: 2.0 };
    let mut person = Oracle::with_rater(problem, rater, 1)?;

    for round in 0..25 {
        let query = strategy.ask()?;
        let answer = person.answer(&query)?;
        if let (QueryKind::Compare { points, .. }, AnswerKind::Choice { winner, .. }) =
            (&query.kind, &answer.kind)
            && round % 5 == 4
        {
            let Point::Unit(u) = &points[*winner] else {
                continue;
            };
            let x = space.to_user_reals(u)?;
            println!("round {round}: preferred ({:.2}, {:.2})", x[0], x[1]);
        }
        strategy.tell(&answer)?;
    }

    if let Some((Point::Unit(u), utility)) = strategy.recommend() {
        let x = space.to_user_reals(&u)?;
        println!(
            "recommended ({:.2}, {:.2}): latent utility {utility:.3}, true value {:.3} (optimum {:.3})",
            x[0],
            x[1],
            scorer.value_at_unit(&u)?,
            scorer.function.optimum_value()
        );
    }
    Ok(())
}
