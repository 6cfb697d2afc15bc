//! One traffic run: `cargo run --release -p agora-study --example cbo_traffic -- <rho|solo> <seed> [rounds]`.
fn main() -> agora_core::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let rho = if a[1] == "solo" {
        None
    } else {
        Some(a[1].parse().unwrap())
    };
    let seed: u64 = a[2].parse().unwrap();
    let rounds: usize = a.get(3).map_or(60, |s| s.parse().unwrap());
    let t = std::time::Instant::now();
    let r = agora_experiments::cbo::run_traffic(rho, seed, rounds)?;
    let (_, _, f_star) = agora_experiments::cbo::traffic_graph()?;
    let m = agora_experiments::cbo::metrics(&r.f, f_star);
    println!(
        "{} seed {seed}: R/n {:.2} unfair {:.3} worst SR {:.3} avg SR {:.3} wall {:.2}s",
        r.variant,
        m.r_over_n.last().unwrap(),
        m.unfairness.last().unwrap(),
        m.worst_sr.last().unwrap(),
        m.avg_sr.last().unwrap(),
        t.elapsed().as_secs_f64()
    );
    let maxs = r.round_seconds.iter().cloned().fold(0.0, f64::max);
    let mean = r.round_seconds.iter().sum::<f64>() / r.round_seconds.len().max(1) as f64;
    let bmax = r.search_batches.iter().cloned().fold(0.0, f64::max);
    let leaves: u64 = r.search_leaves.iter().sum();
    let batches: f64 = r.search_batches.iter().sum();
    println!(
        "round s mean {mean:.4} max {maxs:.4}; product max {bmax}; leaves/batches {:.4}",
        leaves as f64 / batches.max(1.0)
    );
    Ok(())
}
