//! Each DSBO method once on the first experiment of the quick suite, with timings:
//! `cargo run --release -p agora-study --example dsbo_one -- [episodes] [seed]`.
fn main() -> agora_core::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let mut b = agora_study::dsbo::budget(true);
    if let Some(e) = args.get(1).and_then(|s| s.parse().ok()) {
        b.episodes = e;
    }
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let exps = agora_study::dsbo::experiments(true)?;
    let e = &exps[0];
    println!("{} D = {}", e.label, e.task.dim()?);
    for m in &e.methods {
        let r = agora_study::dsbo::run_one(e, m, seed, &b)?;
        println!(
            "{m:18} best {:8.3}  first {:8.3}  {:.1} s",
            r.best_so_far.last().copied().unwrap_or(f64::NAN),
            r.best_so_far.first().copied().unwrap_or(f64::NAN),
            r.seconds
        );
    }
    Ok(())
}
