//! One Social BO run of the suite: `... --example sbo_one -- <task> <seed> <rounds>` (as
//! `agora reproduce sbo` runs SBO on that task and seed); prints each round's regret and
//! seconds, or the error.
use agora_experiments::sbo::run::{Method, run_one};
use agora_methods::SboVariant;
use agora_problems::social::SocialTask;
fn main() -> agora_core::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let task = SocialTask::by_name(&a[1])?;
    let seed: u64 = a[2].parse().expect("seed");
    let rounds: usize = a[3].parse().expect("rounds");
    let m = Method {
        variant: SboVariant::Sbo,
        table5: false,
    };
    let r = run_one(&task, &m, seed, rounds)?;
    let total: f64 = r.regret.iter().sum();
    println!(
        "{} seed {seed}: {} rounds, regret sum {total:.4}, private {:?}, graph error {:?}, seconds {:.0}",
        task.name,
        r.regret.len(),
        r.private.last(),
        r.graph_error.last(),
        r.seconds.iter().sum::<f64>()
    );
    Ok(())
}
