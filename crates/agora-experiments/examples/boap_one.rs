//! BOAP and its baselines on one task: `cargo run --release -p agora-study --example
//! boap_one -- benchmark1d accurate 3`.
use agora_experiments::boap::{Setting, Task, electrode_task, run_one};
use agora_methods::BoapVariant;
use agora_problems::boap::BoapBenchmark;

fn main() -> agora_core::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("benchmark1d", |s| s.as_str());
    if name == "report" {
        // Rebuild a report from a finished suite's runs.json.
        let dir = args.get(2).map_or("out/reproduce/boap", |s| s.as_str());
        let text = std::fs::read_to_string(format!("{dir}/runs.json"))
            .map_err(|e| agora_core::Error::invalid("dir", e.to_string()))?;
        let runs: Vec<agora_experiments::boap::BoapRun> = serde_json::from_str(&text)
            .map_err(|e| agora_core::Error::invalid("runs.json", e.to_string()))?;
        let md = agora_experiments::boap::report_markdown(
            &agora_experiments::boap::tasks(false),
            &runs,
            false,
            0.0,
            &[],
        );
        println!("{md}");
        return Ok(());
    }
    if name == "dump" {
        // Write the synthetic electrode pool as CSV (for `agora reproduce boap --pool`).
        let path = args.get(2).map_or("electrode.csv", |s| s.as_str());
        let pool = agora_problems::boap::synthetic_electrode_pool(0);
        std::fs::write(path, pool.to_csv())
            .map_err(|e| agora_core::Error::invalid("path", e.to_string()))?;
        return Ok(());
    }
    let task = if name == "electrode" {
        electrode_task(0)
    } else {
        Task::Bench(BoapBenchmark::by_name(name)?)
    };
    let setting = match args.get(2).map_or("accurate", |s| s.as_str()) {
        "ia" => Setting::Inaccurate,
        "np" => Setting::Noisy(0.3),
        _ => Setting::Accurate,
    };
    let seeds: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    for v in [
        BoapVariant::Boap,
        BoapVariant::BoapOa,
        BoapVariant::BoTs,
        BoapVariant::BoEi,
    ] {
        let t0 = std::time::Instant::now();
        let runs: Vec<_> = (0..seeds)
            .map(|s| run_one(&task, setting, v, s))
            .collect::<agora_core::Result<_>>()?;
        let fin: Vec<f64> = runs.iter().map(|r| *r.regret.last().unwrap()).collect();
        let mean = fin.iter().sum::<f64>() / fin.len() as f64;
        let ctrl: usize = runs
            .iter()
            .map(|r| {
                r.arms
                    .iter()
                    .filter(|a| **a == agora_methods::Arm::Control)
                    .count()
            })
            .sum();
        let total: usize = runs.iter().map(|r| r.arms.len()).sum();
        println!(
            "{:8} final regret {mean:.4} {:?}  control {ctrl}/{total}  {:.1} s",
            v.name(),
            fin.iter()
                .map(|v| (v * 1e4).round() / 1e4)
                .collect::<Vec<_>>(),
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
