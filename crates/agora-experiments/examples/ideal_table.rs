//! The ideal graph estimator's table (`agora_experiments::sbo::ideal`): median ‖Â − A‖_F
//! of every social task at k = 5, 10, 20, 40, 80 private votes, then the toy at k = 10, 40
//! with more replicates. `cargo run --release -p agora-experiments --example ideal_table --
//! [replicates = 100] [toy replicates = 200]`.
use agora_experiments::sbo::ideal::{
    IDEAL_KS, IDEAL_SEED, ideal_graph_error, ideal_markdown, ideal_singular_markdown, ideal_table,
};
use agora_problems::social::SocialTask;
use std::time::Instant;

fn main() -> agora_core::Result<()> {
    let arg = |i: usize, default: usize| -> agora_core::Result<usize> {
        std::env::args().nth(i).map_or(Ok(default), |s| {
            s.parse().map_err(|_| {
                agora_core::Error::invalid("replicates", format!("not a count: {s:?}"))
            })
        })
    };
    let (replicates, toy_replicates) = (arg(1, 100)?, arg(2, 200)?);
    let tasks: Vec<SocialTask> = SocialTask::names()
        .into_iter()
        .map(SocialTask::by_name)
        .collect::<agora_core::Result<_>>()?;
    let t0 = Instant::now();
    let rows = ideal_table(&tasks, &IDEAL_KS, replicates)?;
    println!(
        "median ‖Â − A‖_F [quartiles], {replicates} replicates, {:.1} s\n",
        t0.elapsed().as_secs_f64()
    );
    println!("{}", ideal_markdown(&rows));
    println!(
        "replicates whose estimate ended against a singular Â (separable votes, no MAP); \
         L-BFGS trial points at a singular Â: {}\n",
        rows.iter().map(|r| r.singular_trials).sum::<usize>()
    );
    println!("{}", ideal_singular_markdown(&rows));
    let toy = SocialTask::by_name("toy")?;
    let t0 = Instant::now();
    let toy_rows = [10, 40]
        .iter()
        .map(|&k| ideal_graph_error(&toy, k, toy_replicates, IDEAL_SEED))
        .collect::<agora_core::Result<Vec<_>>>()?;
    println!(
        "toy, {toy_replicates} replicates, {:.1} s\n",
        t0.elapsed().as_secs_f64()
    );
    println!("{}", ideal_markdown(&toy_rows));
    println!("{}", ideal_singular_markdown(&toy_rows));
    Ok(())
}
