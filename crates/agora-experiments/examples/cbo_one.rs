fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let rho: f64 = a[0].parse().unwrap();
    let seed: u64 = a[1].parse().unwrap();
    let v = agora_experiments::cbo::CboVariant::new(rho, false, false);
    let t0 = std::time::Instant::now();
    let r = agora_experiments::cbo::run_one(&v, seed).unwrap();
    let m = agora_experiments::cbo::metrics(&r.f, 3.32237);
    let secs: f64 = r.round_seconds.iter().sum::<f64>() / r.round_seconds.len() as f64;
    println!(
        "rho {rho} seed {seed}: R/n {:.2} unfair_avg {:.3} worst {:.4} s/round {:.4} total {:.1}s",
        m.r_over_n.last().unwrap(),
        m.unfairness.iter().sum::<f64>() / 70.0,
        m.worst_sr.last().unwrap(),
        secs,
        t0.elapsed().as_secs_f64()
    );
}
