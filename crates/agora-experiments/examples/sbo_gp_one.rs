//! One GP-variant run per method on a task: `cargo run --release -p agora-study --example
//! sbo_gp_one -- toy 25 3`.
use agora_methods::SboGpVariant;
use agora_problems::social::SocialTask;

fn main() -> agora_core::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let task = SocialTask::by_name(args.get(1).map_or("toy", |s| s.as_str()))?;
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(25);
    let seeds: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    if let Ok(dir) = std::env::var("SUITE") {
        let md = agora_experiments::sbo::reproduce_gp(false, std::path::Path::new(&dir), false)?;
        println!("{md}");
        return Ok(());
    }
    if std::env::var("TRACE").is_ok() {
        use agora_methods::{SboGp, Strategy};
        let space = agora_core::Space::reals(&vec![(0.0, 1.0); task.dim])?;
        let mut s = SboGp::new(
            space,
            agora_experiments::sbo::gp_config(&task, SboGpVariant::SboGp),
            0,
        )?;
        let mut g = agora_problems::social::SocialGroup::new(&task, 1);
        while s.rounds().len() < rounds || s.round_open() {
            let q = s.ask()?;
            let a = g.answer(&q)?;
            s.tell(&a)?;
        }
        let (_, st) = task.optimum();
        for (t, r) in s.rounds().iter().enumerate() {
            println!(
                "{t:3} x {:?} wb {:.3} wv {:.3} thr {:.3} private {} regret {:.3} graph {:?}",
                r.x.iter()
                    .map(|v| (v * 1000.0).round() / 1000.0)
                    .collect::<Vec<_>>(),
                r.widths.0,
                r.widths.1,
                ((t + 1) as f64).powf(-0.5),
                r.private,
                st - task.welfare_at(&r.x),
                r.graph
                    .iter()
                    .map(|v| (v * 100.0).round() / 100.0)
                    .collect::<Vec<_>>()
            );
        }
        return Ok(());
    }
    for v in SboGpVariant::all() {
        let runs: Vec<_> = (0..seeds)
            .map(|s| agora_experiments::sbo::run_gp_one(&task, v, s, rounds))
            .collect::<agora_core::Result<_>>()?;
        let refs: Vec<_> = runs.iter().collect();
        let (cum, simple, private) = agora_experiments::sbo::summary(&refs);
        let secs: f64 = runs.iter().flat_map(|r| r.seconds.iter()).sum::<f64>()
            / runs.iter().map(|r| r.seconds.len()).sum::<usize>().max(1) as f64;
        let ge: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.graph_error.last().copied())
            .collect();
        println!(
            "{:14} cum {:7.3} ± {:.3}  simple {:.4} ± {:.4}  private {:5.1} ± {:.1}  graph err {:?}  {:.4} s/round",
            v.name(),
            cum.0,
            cum.1,
            simple.0,
            simple.1,
            private.0,
            private.1,
            ge.iter()
                .map(|g| (g * 100.0).round() / 100.0)
                .collect::<Vec<_>>(),
            secs
        );
    }
    Ok(())
}
