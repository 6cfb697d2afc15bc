fn main() {
    let exps = agora_experiments::hpbo::experiments(false);
    let which: Vec<String> = std::env::args().skip(1).collect();
    for e in &exps {
        if !which.is_empty() && !which.contains(&e.name) {
            continue;
        }
        for p in &e.problems {
            for m in &e.methods {
                for &s in &e.seeds {
                    let t0 = std::time::Instant::now();
                    match agora_experiments::hpbo::run_one(&e.name, m, p, s, e.iters) {
                        Ok(_) => eprintln!(
                            "ok {} {} {} {} {:.2}s",
                            e.name,
                            m.label,
                            p,
                            s,
                            t0.elapsed().as_secs_f64()
                        ),
                        Err(err) => println!("FAIL {} {} {} {}: {err}", e.name, m.label, p, s),
                    }
                }
            }
        }
    }
}
