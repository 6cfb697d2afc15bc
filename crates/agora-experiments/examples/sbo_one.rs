//! One Social BO run: `cargo run --release -p agora-study --example sbo_one -- <task> <method> <seed> <rounds>`.
fn main() -> agora_core::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let task = agora_problems::social::SocialTask::by_name(&a[1])?;
    let variant = agora_experiments::sbo::methods(&task)
        .into_iter()
        .find(|v| v.name() == a[2])
        .expect("method: sbo, oracle, single-agent, independent, private-only");
    let seed: u64 = a[3].parse().unwrap();
    let rounds: usize = a[4].parse().unwrap();
    let t = std::time::Instant::now();
    let r = agora_experiments::sbo::run_one(&task, variant, seed, rounds)?;
    let cum: f64 = r.regret.iter().sum();
    let simple = r.regret.iter().cloned().fold(f64::INFINITY, f64::min);
    println!(
        "{} {} seed {seed}: cum regret {cum:.3}, simple {simple:.4}, private {:?}, graph err {:?}, L {}, wall {:.1}s",
        r.task,
        r.method,
        r.private.last(),
        r.graph_error.last(),
        r.bound,
        t.elapsed().as_secs_f64()
    );
    println!(
        "regret: {:?}",
        r.regret
            .iter()
            .map(|v| (v * 1000.0).round() / 1000.0)
            .collect::<Vec<_>>()
    );
    println!("private: {:?}", r.private);
    println!(
        "x: {:?}",
        r.x.iter()
            .map(|x| x
                .iter()
                .map(|v| (v * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
    println!(
        "s/round: {:?}",
        r.seconds
            .iter()
            .map(|v| (v * 1000.0).round() / 1000.0)
            .collect::<Vec<_>>()
    );
    Ok(())
}
