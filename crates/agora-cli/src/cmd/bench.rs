//! `agora bench ...`: benchmarks printed beside the Python anchors' numbers.

use super::{emit, write_json};
use agora_study::live::StorageUrl;
use anyhow::Result;
use clap::Subcommand;
use std::path::PathBuf;

/// Which benchmark.
#[derive(Subcommand)]
pub enum Bench {
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
    /// Preferential BO against BoTorch seed by seed: the same initial pairs and the same
    /// simulated person's draws as BoTorch's recorded runs, regret differences judged paired.
    PboPaired {
        /// Problems (branin, hartmann6).
        #[arg(long, value_delimiter = ',', default_value = "branin,hartmann6")]
        problems: Vec<String>,
        /// Variants by number in the table of `agora_experiments::pbo_paired::VARIANTS`
        /// (0: pbo-eubo as BoTorch; default: all).
        #[arg(long, value_delimiter = ',')]
        variants: Vec<usize>,
        /// At most this many seeds (those BoTorch ran, in order).
        #[arg(long, default_value_t = 40)]
        seeds: usize,
        /// Judge the variants against variant 0 on 40 fresh seeds (new initial pairs and
        /// draws, seeds 1000-1039) instead of against BoTorch's recorded runs.
        #[arg(long)]
        fresh: bool,
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
    /// observations, beside full-kernel GP-UCB, against the 1 s target.
    Dsbo {
        /// Observations before the timed iterations.
        #[arg(long, default_value_t = 200)]
        t: usize,
        /// Repeats (seeds 0..N, median reported).
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// DSBO edge budgets (one row each; the paper keeps up to 1500, which here gives up to
        /// ~1250 overlapping cliques: about 20 s per iteration with two sweeps of block moves,
        /// under 1 s with the climbing search DSBO runs by default).
        #[arg(long, value_delimiter = ',', default_value = "100,400,1500")]
        edges: Vec<usize>,
        /// DSBO's UCB search: at most this many block moves per start, half of each round
        /// along the steepest UCB gradient, half at random (default: 16, DSBO's climbing
        /// search).
        #[arg(long)]
        moves: Option<usize>,
        /// DSBO's UCB search: L-BFGS-B iterations on the UCB (exact gradient) from each
        /// start before the block moves (default: 30; 0 for none).
        #[arg(long)]
        climb: Option<u64>,
        /// DSBO's UCB search: uniform raw candidates scored first (default: 128).
        #[arg(long)]
        raw: Option<usize>,
        /// DSBO's UCB search: candidates per block move (default: 8).
        #[arg(long)]
        block_samples: Option<usize>,
        /// Leave out the full-kernel GP-UCB row.
        #[arg(long)]
        no_full_kernel: bool,
        /// Also write the rows as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Concurrent voters on loopback against `agora serve`'s API: one server on a SQLite
    /// file and, with --storage, several replicas on one PostgreSQL database; ballot
    /// latency (p50/p95/p99) and a check that every acknowledged vote is stored once.
    Serve {
        /// Concurrent voters.
        #[arg(long, default_value_t = 50)]
        voters: usize,
        /// Rounds (every voter votes once per round).
        #[arg(long, default_value_t = 20)]
        rounds: u64,
        /// Servers sharing the PostgreSQL database given with --storage.
        #[arg(long, default_value_t = 1)]
        replicas: usize,
        /// A PostgreSQL database (postgresql://user:password@host:port/database) for a
        /// second run beside the SQLite one; the bench works in a schema of its own there
        /// and drops it afterwards.
        #[arg(long, value_name = "URL")]
        storage: Option<String>,
        /// The most ballots stored in one transaction: 0 for all that are waiting (group
        /// commit), 1 for one each (as without group commit).
        #[arg(long, default_value_t = 0)]
        batch_limit: usize,
        /// Also write the rows as JSON here.
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

/// Run one benchmark.
pub fn run(which: Bench, progress: bool) -> Result<()> {
    match which {
        Bench::ExactGp {
            ns,
            repeats,
            anchors,
            json,
        } => {
            let rows = agora_experiments::bench::exact_gp(&ns, repeats, anchors.as_deref())?;
            emit(
                &agora_experiments::bench::exact_gp_table(&rows),
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
            let rows = agora_experiments::bench::pbo(&method, seeds, anchors.as_deref())?;
            emit(
                &agora_experiments::bench::pbo_table(&rows),
                &rows,
                json.as_deref(),
            )?;
        }
        Bench::PboPaired {
            problems,
            variants,
            seeds,
            fresh,
            json,
        } => {
            use agora_experiments::pbo_paired::{FRESH_SEEDS, VARIANTS, run, run_fresh, table};
            let chosen = if variants.is_empty() {
                VARIANTS.to_vec()
            } else {
                variants
                    .iter()
                    .map(|&i| {
                        VARIANTS.get(i).copied().ok_or_else(|| {
                            anyhow::anyhow!(
                                "--variants: {i} is not a variant; choose 0..{}",
                                VARIANTS.len() - 1
                            )
                        })
                    })
                    .collect::<Result<Vec<_>>>()?
            };
            let rows = if fresh {
                run_fresh(&problems, &chosen, FRESH_SEEDS)?
            } else {
                run(&problems, &chosen, seeds)?
            };
            emit(&table(&rows), &rows, json.as_deref())?;
        }
        Bench::PrefGp {
            points,
            comparisons,
            json,
        } => {
            let row = agora_experiments::bench::pref_scale(points, comparisons, 0)?;
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
            let rows = agora_experiments::hpbo::bench(seeds)?;
            println!("{}", agora_experiments::hpbo::bench_table(&rows));
            if suite {
                let dir =
                    std::env::temp_dir().join(format!("agora-bench-hpbo-{}", std::process::id()));
                let t0 = std::time::Instant::now();
                agora_experiments::hpbo::reproduce(
                    false,
                    &dir,
                    &agora_experiments::Runner::local(progress),
                )?;
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
            let rows = agora_experiments::cbo::bench(runs)?;
            emit(
                &agora_experiments::cbo::bench_table(&rows),
                &rows,
                json.as_deref(),
            )?;
        }
        Bench::CboTraffic { runs, json } => {
            let (rows, worst) = agora_experiments::cbo::bench_traffic(runs)?;
            emit(
                &agora_experiments::cbo::bench_traffic_table(&rows, worst),
                &rows,
                json.as_deref(),
            )?;
        }
        Bench::Sbo { runs, json } => {
            let rows = agora_experiments::sbo::bench(runs)?;
            emit(
                &agora_experiments::sbo::bench_table(&rows),
                &rows,
                json.as_deref(),
            )?;
        }
        Bench::Dsbo {
            t,
            repeats,
            edges,
            moves,
            climb,
            raw,
            block_samples,
            no_full_kernel,
            json,
        } => {
            let search = agora_experiments::bench::DsboSearch {
                moves,
                climb,
                raw,
                block_samples,
            };
            let rows =
                agora_experiments::bench::dsbo(t, repeats, &edges, &search, !no_full_kernel)?;
            emit(
                &agora_experiments::bench::dsbo_table(&rows),
                &rows,
                json.as_deref(),
            )?;
        }
        Bench::Serve {
            voters,
            rounds,
            replicas,
            storage,
            batch_limit,
            json,
        } => {
            let postgres = match storage.as_deref().map(StorageUrl::parse).transpose()? {
                None => None,
                Some(StorageUrl::Postgres(url)) => Some(url),
                Some(StorageUrl::Sqlite(_)) => anyhow::bail!(
                    "invalid `storage`: bench serve runs SQLite on a fresh temporary file by \
                     itself; --storage takes a PostgreSQL database (postgresql://...)"
                ),
            };
            let opts = agora_server::bench::ServeOptions {
                voters,
                rounds,
                replicas,
                postgres,
                batch_limit,
            };
            let rows = agora_server::bench::serve(&opts).map_err(anyhow::Error::msg)?;
            emit(
                &agora_server::bench::table(&rows, batch_limit),
                &rows,
                json.as_deref(),
            )?;
        }
        Bench::Bo {
            methods,
            seeds,
            anchors,
            json,
        } => {
            let rows = agora_experiments::bench::bo(&methods, seeds, anchors.as_deref())?;
            emit(
                &agora_experiments::bench::bo_table(&rows),
                &rows,
                json.as_deref(),
            )?;
        }
    }
    Ok(())
}
