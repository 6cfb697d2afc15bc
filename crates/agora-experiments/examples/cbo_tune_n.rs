//! One tuning run with n parties: `cargo run --release -p agora-study --example cbo_tune_n -- <n> <rho|solo> <seed> <rounds>`.
fn main() -> agora_core::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a[1].parse().unwrap();
    let rho = if a[2] == "solo" {
        None
    } else {
        Some(a[2].parse().unwrap())
    };
    let seed: u64 = a[3].parse().unwrap();
    let rounds: usize = a[4].parse().unwrap();
    let t = std::time::Instant::now();
    let r = agora_experiments::cbo::run_tuning_n(n, rho, seed, rounds)?;
    let m = agora_experiments::cbo::metrics(&r.f, 1.0);
    println!(
        "{} seed {seed}: R/n {:.3} unfair {:.4} worst SR {:.3} wall {:.1}s, s/round {:?}",
        r.variant,
        m.r_over_n.last().unwrap(),
        m.unfairness.last().unwrap(),
        m.worst_sr.last().unwrap(),
        t.elapsed().as_secs_f64(),
        r.round_seconds
            .iter()
            .map(|s| (s * 100.0).round() / 100.0)
            .collect::<Vec<_>>()
    );
    Ok(())
}
