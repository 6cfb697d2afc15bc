//! `agora`: reproduce papers' experiments, run method × problem grids, benchmark.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

mod serve_cmd;
mod study_cmd;

#[derive(Parser)]
#[command(
    name = "agora",
    version,
    about = "Bayesian optimization with people and agents in the loop"
)]
struct Cli {
    /// Worker threads for grids (default: all cores). Results do not depend on it.
    #[arg(long, global = true)]
    threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Reproduce a paper's experiments (all suites when no name is given).
    Reproduce {
        /// Suite name (see `agora list`).
        suite: Option<String>,
        /// A small version of every grid, for a check in minutes.
        #[arg(long)]
        quick: bool,
        /// Output folder.
        #[arg(long, default_value = "out/reproduce")]
        out: PathBuf,
        /// `boap` only: also run the BOAP pipeline on a pool of designs from this CSV file
        /// (header row, numeric columns; BO picks rows, the expert compares property columns).
        #[arg(long)]
        pool: Option<PathBuf>,
        /// The pool's objective column (maximized).
        #[arg(long, requires = "pool")]
        objective: Option<String>,
        /// A pool column the simulated expert compares (repeat for several properties).
        #[arg(long = "property", requires = "pool")]
        properties: Vec<String>,
        /// Initial rows and total evaluations on the pool (the paper: 4 and 54).
        #[arg(long, requires = "pool", num_args = 2, value_names = ["INIT", "TOTAL"])]
        pool_budget: Option<Vec<usize>>,
    },
    /// Run a method × problem × seed grid.
    Run {
        /// Comma-separated methods (see `agora list`).
        #[arg(long, value_delimiter = ',', default_value = "random,gp-logei")]
        methods: Vec<String>,
        /// Comma-separated problems (see `agora list`).
        #[arg(long, value_delimiter = ',', default_value = "branin")]
        problems: Vec<String>,
        /// Number of seeds (0..N).
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        /// Evaluations per run.
        #[arg(long, default_value_t = 40)]
        budget: usize,
        /// Standard deviation of Gaussian observation noise.
        #[arg(long, default_value_t = 0.0)]
        noise: f64,
        /// Output folder (records, summary, plots).
        #[arg(long, default_value = "out/run")]
        out: PathBuf,
    },
    /// Benchmarks side by side with the Python anchors.
    Bench {
        #[command(subcommand)]
        which: Bench,
    },
    /// List methods, problems and reproduce suites.
    List,
    /// Studies with people: study create/list/tokens, ask, tell, status, best, export, plot.
    #[command(flatten)]
    Live(study_cmd::LiveCommand),
    /// Serve the HTTP API and the web page (loopback by default); `--demo` seeds a meeting.
    Serve(serve_cmd::ServeArgs),
}

#[derive(Subcommand)]
enum Bench {
    /// Exact GP fit/predict scaling (RESULTS.md §1).
    ExactGp {
        /// Training sizes.
        #[arg(long, value_delimiter = ',', default_value = "100,250,500,1000,2000")]
        ns: Vec<usize>,
        /// Repeats per size (median reported).
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// Folder with fresh anchor results (exact_gp_scaling.json) from run_all.sh; default: the recorded copy.
        #[arg(long)]
        anchors: Option<PathBuf>,
        /// Also write the rows as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Preferential BO loop on Branin and Hartmann6 (RESULTS.md §2).
    Pbo {
        /// agora method to run.
        #[arg(long, default_value = "pbo-eubo")]
        method: String,
        /// Seeds (0..N).
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        /// Folder with fresh anchor results (pbo_loop.json); default: the recorded copy.
        #[arg(long)]
        anchors: Option<PathBuf>,
        /// Also write the rows as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Preference-GP fit at scale (1,000 points, 2,000 comparisons by default).
    PrefGp {
        /// Points.
        #[arg(long, default_value_t = 1000)]
        points: usize,
        /// Comparisons.
        #[arg(long, default_value_t = 2000)]
        comparisons: usize,
        /// Also write the row as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Heteroscedastic PBO: wall time per acquisition round at rounds 10, 50, 100, and
    /// optionally of the whole `reproduce hpbo` suite.
    Hpbo {
        /// Seeds per (problem, method) (0..N).
        #[arg(long, default_value_t = 3)]
        seeds: u64,
        /// Also run the full `reproduce hpbo` suite (into a temporary folder) and time it.
        #[arg(long)]
        suite: bool,
        /// Also write the rows as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Collaborative fair BO on Hartmann-6d: time per joint 18-D round and R_T/n at ρ = 1
    /// and 0.2, beside the authors' code (RESULTS-collaborative-bo.md).
    Cbo {
        /// Runs per ρ (the authors' seeds, in order).
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// Also write the rows as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Collaborative fair BO on the traffic grid: ms per round of the exact joint search,
    /// branch-and-bound beside exhaustive (the same batches), and the 8^8 worst case.
    CboTraffic {
        /// Runs per ρ (the authors' traffic seeds, in order).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Also write the rows as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Social BO on thermal comfort (n = 3): seconds per iteration at t = 10, 25, 50,
    /// against the paper's "< 30 s at t = 50".
    Sbo {
        /// Runs (seeds 0..runs, one at a time).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Also write the rows as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// DSBO: seconds per iteration at D = 401 (HOM on predator-prey N = 3) after t
    /// observations, beside full-kernel GP-UCB, against the 2 s target.
    Dsbo {
        /// Observations before the timed iterations.
        #[arg(long, default_value_t = 200)]
        t: usize,
        /// Repeats (seeds 0..N, median reported).
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// DSBO edge budgets (one row each; the suite uses 100; the paper keeps up to 1500,
        /// which here gives ~1250 overlapping cliques and ~30 s per iteration even at t = 20).
        #[arg(long, value_delimiter = ',', default_value = "100,400")]
        edges: Vec<usize>,
        /// Also write the rows as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// 50 concurrent voters on loopback against `agora serve`'s API and a SQLite file:
    /// ballot latency (p50/p95/p99) and a check that every acknowledged vote is stored once.
    Serve {
        /// Concurrent voters.
        #[arg(long, default_value_t = 50)]
        voters: usize,
        /// Rounds (every voter votes once per round).
        #[arg(long, default_value_t = 20)]
        rounds: u64,
        /// Also write the row as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Standard BO loop on Hartmann6 (RESULTS.md §3).
    Bo {
        /// agora methods to run.
        #[arg(long, value_delimiter = ',', default_value = "gp-logei")]
        methods: Vec<String>,
        /// Seeds (0..N).
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        /// Folder with fresh anchor results (ei_loop.json); default: the recorded copy.
        #[arg(long)]
        anchors: Option<PathBuf>,
        /// Also write the rows as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> Result<()> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(path, serde_json::to_string_pretty(v)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Print a benchmark table and, when asked, write its rows as JSON.
fn emit<T: serde::Serialize>(table: &str, rows: &T, json: Option<&Path>) -> Result<()> {
    println!("{table}");
    match json {
        Some(p) => write_json(p, rows),
        None => Ok(()),
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    if let Some(t) = cli.threads {
        if t == 0 {
            bail!("--threads must be at least 1");
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build_global()
            .context("configuring threads")?;
    }
    let progress = std::io::stderr().is_terminal();
    match cli.command {
        Command::Live(cmd) => study_cmd::execute(cmd, &mut std::io::stdout().lock())?,
        Command::Serve(args) => serve_cmd::run(args)?,
        Command::List => {
            println!("methods (name [aliases]: feedback; description):");
            for m in agora_methods::registry::methods() {
                let aliases: Vec<&str> = m.aliases.iter().map(|a| a.name).collect();
                let feedback: Vec<&str> = m.feedback.iter().map(|f| f.name()).collect();
                let aliases = if aliases.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", aliases.join(", "))
                };
                println!(
                    "  {}{aliases}: {}; {}",
                    m.name,
                    feedback.join(" + "),
                    m.description
                );
                for k in m.knobs {
                    let default = match k.default_text() {
                        Some(d) => format!("= {d}"),
                        None => format!("(required, e.g. {})", k.default_or_example()),
                    };
                    println!(
                        "      {} {default}: {}; {}",
                        k.name,
                        k.kind.allowed(),
                        k.doc
                    );
                }
            }
            println!(
                "problems: {}",
                agora_problems::functions::names().join(", ")
            );
            println!("          (also ackley<d>, levy<d>, griewank<d>, rosenbrock<d>)");
            println!(
                "hpbo:     acquisitions anpei, rahbo, ei, ucb; inference hb, laplace, ep; problems {}",
                agora_problems::hpbo::HPBO_PROBLEMS.join(", ")
            );
            println!(
                "suites:   {}",
                agora_study::suites::suite_names().join(", ")
            );
        }
        Command::Reproduce {
            suite,
            quick,
            out,
            pool: Some(path),
            objective,
            properties,
            pool_budget,
        } => {
            if suite.as_deref() != Some("boap") {
                return Err(agora_core::Error::invalid(
                    "pool",
                    "a pool file goes with the boap suite: agora reproduce boap --pool FILE ...",
                )
                .into());
            }
            let objective = objective.ok_or_else(|| {
                agora_core::Error::invalid("objective", "name the pool's objective column")
            })?;
            if properties.is_empty() {
                return Err(agora_core::Error::invalid(
                    "property",
                    "name at least one property column (--property COLUMN)",
                )
                .into());
            }
            let cols = agora_problems::boap::PoolColumns {
                objective,
                properties,
                inputs: None,
            };
            let pool = agora_problems::boap::Pool::load_csv(&path, &cols)?;
            let (init, total) = match pool_budget.as_deref() {
                Some([i, t]) => (*i, *t),
                _ => (4, 54),
            };
            if init < 2 || total <= init || total > pool.len() {
                return Err(agora_core::Error::invalid(
                    "pool_budget",
                    format!(
                        "needs 2 <= INIT < TOTAL <= rows ({}), got {init} {total}",
                        pool.len()
                    ),
                )
                .into());
            }
            let name = path
                .file_stem()
                .map_or("pool".into(), |s| s.to_string_lossy().to_string());
            let task = agora_study::boap::Task::Pool(name, Box::new(pool), init, total);
            agora_study::boap::reproduce(quick, &out.join("boap"), progress, vec![task])?;
            println!("report in {}/boap/report.md", out.display());
        }
        Command::Reproduce {
            suite, quick, out, ..
        } => {
            let results = agora_study::suites::reproduce(suite.as_deref(), quick, &out, progress)?;
            for (name, sums) in &results {
                if sums.is_empty() {
                    println!("## {name}: see {}/{name}/report.md", out.display());
                } else {
                    println!("## {name}\n\n{}", agora_study::report::markdown_table(sums));
                }
            }
            println!("reports in {}/report.md", out.display());
        }
        Command::Run {
            methods,
            problems,
            seeds,
            budget,
            noise,
            out,
        } => {
            let spec = agora_study::RunSpec {
                methods,
                problems,
                seeds: (0..seeds).collect(),
                budget,
                noise_std: noise,
            };
            let records = agora_study::run_grid(&spec, progress)?;
            let sums = agora_study::report::summarize(&records);
            let files = agora_study::report::write_outputs(&out, &records, &sums)?;
            println!("{}", agora_study::report::markdown_table(&sums));
            println!("wrote {} in {}", files.join(", "), out.display());
        }
        Command::Bench { which } => match which {
            Bench::ExactGp {
                ns,
                repeats,
                anchors,
                json,
            } => {
                let rows = agora_study::bench::exact_gp(&ns, repeats, anchors.as_deref())?;
                emit(
                    &agora_study::bench::exact_gp_table(&rows),
                    &rows,
                    json.as_deref(),
                )?;
            }
            Bench::Pbo {
                method,
                seeds,
                anchors,
                json,
            } => {
                let rows = agora_study::bench::pbo(&method, seeds, anchors.as_deref())?;
                emit(
                    &agora_study::bench::pbo_table(&rows),
                    &rows,
                    json.as_deref(),
                )?;
            }
            Bench::PrefGp {
                points,
                comparisons,
                json,
            } => {
                let row = agora_study::bench::pref_scale(points, comparisons, 0)?;
                println!(
                    "preference GP, {} points, {} comparisons: fit {:.2} s ({} evidence evaluations, {:.3} s each), held-out pair accuracy {:.3}, peak memory {:.0} MB",
                    row.n_points,
                    row.n_comparisons,
                    row.fit_s,
                    row.evals,
                    row.eval_s,
                    row.pair_accuracy,
                    row.peak_mb.unwrap_or(f64::NAN)
                );
                if let Some(p) = json {
                    write_json(&p, &row)?;
                }
            }
            Bench::Hpbo { seeds, suite, json } => {
                let rows = agora_study::hpbo::bench(seeds)?;
                println!("{}", agora_study::hpbo::bench_table(&rows));
                if suite {
                    let dir = std::env::temp_dir()
                        .join(format!("agora-bench-hpbo-{}", std::process::id()));
                    let t0 = std::time::Instant::now();
                    agora_study::hpbo::reproduce(false, &dir, progress)?;
                    println!(
                        "full `reproduce hpbo` suite: {:.1} s wall (records in {})",
                        t0.elapsed().as_secs_f64(),
                        dir.display()
                    );
                }
                if let Some(p) = json {
                    write_json(&p, &rows)?;
                }
            }
            Bench::Cbo { runs, json } => {
                let rows = agora_study::cbo::bench(runs)?;
                emit(
                    &agora_study::cbo::bench_table(&rows),
                    &rows,
                    json.as_deref(),
                )?;
            }
            Bench::CboTraffic { runs, json } => {
                let (rows, worst) = agora_study::cbo::bench_traffic(runs)?;
                emit(
                    &agora_study::cbo::bench_traffic_table(&rows, worst),
                    &rows,
                    json.as_deref(),
                )?;
            }
            Bench::Sbo { runs, json } => {
                let rows = agora_study::sbo::bench(runs)?;
                emit(
                    &agora_study::sbo::bench_table(&rows),
                    &rows,
                    json.as_deref(),
                )?;
            }
            Bench::Dsbo {
                t,
                repeats,
                edges,
                json,
            } => {
                let rows = agora_study::bench::dsbo(t, repeats, &edges)?;
                emit(
                    &agora_study::bench::dsbo_table(&rows),
                    &rows,
                    json.as_deref(),
                )?;
            }
            Bench::Serve {
                voters,
                rounds,
                json,
            } => {
                let b = agora_server::bench::serve(voters, rounds).map_err(anyhow::Error::msg)?;
                emit(&agora_server::bench::table(&b), &b, json.as_deref())?;
            }
            Bench::Bo {
                methods,
                seeds,
                anchors,
                json,
            } => {
                let rows = agora_study::bench::bo(&methods, seeds, anchors.as_deref())?;
                emit(&agora_study::bench::bo_table(&rows), &rows, json.as_deref())?;
            }
        },
    }
    Ok(())
}
