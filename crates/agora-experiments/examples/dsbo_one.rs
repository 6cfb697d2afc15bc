//! Each DSBO method once on the first experiment of the quick suite, with timings, the
//! structure DSS-GP-UCB learned and the held-out model-fit diagnostic:
//! `cargo run --release -p agora-study --example dsbo_one -- [episodes] [seed] [quick|full]
//! [experiment index] [edge budget] [method]`.
fn main() -> agora_core::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "report") {
        // Rebuild the report of a finished full suite from its runs.json.
        let dir = args.get(2).map_or("out/reproduce/dsbo", |s| s.as_str());
        let text = std::fs::read_to_string(format!("{dir}/runs.json"))
            .map_err(|e| agora_core::Error::invalid("dir", e.to_string()))?;
        let (runs, rec): (
            Vec<agora_experiments::dsbo::DsboRun>,
            Vec<agora_experiments::dsbo::RecoveryRow>,
        ) = serde_json::from_str(&text)
            .map_err(|e| agora_core::Error::invalid("runs.json", e.to_string()))?;
        let exps = agora_experiments::dsbo::experiments(false)?;
        let b = agora_experiments::dsbo::budget(false);
        let md = agora_experiments::dsbo::report_markdown(
            &exps,
            &runs,
            &rec,
            8,
            &b,
            false,
            0.0,
            0.0,
            &[],
        );
        println!("{md}");
        return Ok(());
    }
    if args.get(1).is_some_and(|a| a == "recovery") {
        let sigma: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0.05);
        let rows =
            agora_experiments::dsbo::recovery(8, 0.25, sigma, &[1, 2, 4, 8, 16, 32, 64], 30)?;
        for r in rows {
            println!(
                "T0 {:3} exact {:2}/{} recall {:.3} precision {:.3}",
                r.t0, r.exact, r.total, r.recall, r.precision
            );
        }
        return Ok(());
    }
    let quick = args.get(3).is_none_or(|s| s != "full");
    let mut b = agora_experiments::dsbo::budget(quick);
    if let Some(e) = args.get(5).and_then(|s| s.parse().ok()) {
        b.edge_budget = e;
    }
    if let Some(e) = args.get(1).and_then(|s| s.parse().ok()) {
        b.episodes = e;
    }
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let exps = agora_experiments::dsbo::experiments(quick)?;
    let e = &exps[args
        .get(4)
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(0)];
    println!("{} D = {}", e.label, e.task.dim()?);
    let only = args.get(6);
    for m in e.methods.iter().filter(|m| only.is_none_or(|o| o == *m)) {
        let t = std::time::Instant::now();
        let r = agora_experiments::dsbo::run_one(e, m, seed, &b)?;
        println!(
            "{m:18} best {:8.3}  first {:8.3}  {:.1} s ({:.1} s with the diagnostic)",
            r.best_so_far.last().copied().unwrap_or(f64::NAN),
            r.best_so_far.first().copied().unwrap_or(f64::NAN),
            r.seconds,
            t.elapsed().as_secs_f64()
        );
        if let Some(s) = &r.structure {
            println!(
                "{:18} structure: {} edges, {} kernel terms ({} with >= 2 parameters, largest {}), {} coupled of {}, {} edges within one slice (chance {:.2})",
                "",
                s.edges,
                s.cliques,
                s.multi,
                s.largest,
                s.coupled,
                s.dim,
                s.within_group,
                s.chance_within
            );
        }
        if let Some(d) = &r.diag {
            println!(
                "{:18} held-out fit ({} -> {}): lpd additive {:.3}, full {:.3}, constant {:.3}; Spearman additive {:.2}, full {:.2}",
                "", d.train, d.test, d.lpd.0, d.lpd.1, d.lpd.2, d.spearman.0, d.spearman.1
            );
        }
    }
    Ok(())
}
