//! `agora bench serve`: many voters on loopback against real servers: one server on a
//! fresh SQLite file, and, given a PostgreSQL database, several replicas on one schema of
//! their own in it, in the same run.

use crate::load::{LoadReport, run_voters};
use crate::{AppState, router};
use agora_core::Space;
use agora_study::live::{
    EventKind, MethodSpec, PostgresUrl, ScratchSchema, StorageUrl, StoredStudy, StudySpec,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// What to run.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Concurrent voters.
    pub voters: usize,
    /// Rounds (every voter votes once per round).
    pub rounds: u64,
    /// Servers sharing the PostgreSQL database (needs `postgres`).
    pub replicas: usize,
    /// A PostgreSQL database for the replicated run (a schema of its own is made in it,
    /// and dropped afterwards).
    pub postgres: Option<PostgresUrl>,
    /// The most ballots stored in one transaction (0: all that are waiting; 1: one each,
    /// as without group commit).
    pub batch_limit: usize,
}

/// What `agora bench serve` measured on one store.
#[derive(Debug, Clone, Serialize)]
pub struct ServeBench {
    /// `SQLite` or `PostgreSQL`.
    pub store: &'static str,
    /// Servers on the store.
    pub replicas: usize,
    /// Concurrent voters.
    pub voters: usize,
    /// Rounds voted (every voter votes once per round).
    pub rounds: u64,
    /// Ballots acknowledged.
    pub acked: usize,
    /// Ballot events in the log.
    pub stored: usize,
    /// Acknowledged ballots missing from the log (must be 0).
    pub missing: usize,
    /// Ballots stored more than once (must be 0).
    pub duplicated: usize,
    /// Failed requests.
    pub failures: usize,
    /// Ballots answered 503 (retried).
    pub unavailable: usize,
    /// Ballot latency quantiles, milliseconds.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Ballots per second over the run (including the strategy's time between rounds).
    pub ballots_per_s: f64,
    /// Wall time, seconds.
    pub seconds: f64,
}

/// Run the voters against one server on a fresh SQLite file, then, given a PostgreSQL
/// database, against `replicas` servers on it; each run's log is checked against every
/// acknowledgement.
pub fn serve(opts: &ServeOptions) -> Result<Vec<ServeBench>, String> {
    if opts.voters == 0 || opts.rounds == 0 {
        return Err("`voters` and `rounds` must be at least 1".into());
    }
    if opts.replicas == 0 || (opts.replicas > 1 && opts.postgres.is_none()) {
        return Err(format!(
            "`replicas` is {}: replicas share a PostgreSQL database, so give one with \
             --storage postgresql://... (the SQLite run always has one server)",
            opts.replicas
        ));
    }
    let mut rows = vec![serve_sqlite(opts)?];
    if let Some(url) = &opts.postgres {
        rows.push(serve_postgres(opts, url)?);
    }
    Ok(rows)
}

fn serve_sqlite(opts: &ServeOptions) -> Result<ServeBench, String> {
    let dir = std::env::temp_dir().join(format!("agora-bench-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let db = dir.join("bench.db");
    let _ = std::fs::remove_file(&db);
    let out = AppState::open_storage(&StorageUrl::Sqlite(db), None)
        .map_err(|e| e.to_string())
        .and_then(|state| run("SQLite", opts, &[state]));
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn serve_postgres(opts: &ServeOptions, base: &PostgresUrl) -> Result<ServeBench, String> {
    let schema = ScratchSchema::create(base, &format!("agora_bench_{}", std::process::id()))
        .map_err(|e| e.to_string())?;
    let url = StorageUrl::Postgres(schema.url().clone());
    let states = (0..opts.replicas)
        .map(|_| AppState::open_storage(&url, None).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    run("PostgreSQL", opts, &states)
}

/// The study every voter votes on: majority-vote preferential BO on a 2-D box.
fn create(state: &AppState, voters: usize) -> Result<StoredStudy, String> {
    let names: Vec<String> = (0..voters).map(|i| format!("voter{i:03}")).collect();
    state
        .create_study(StudySpec {
            name: "load".into(),
            description: "bench serve".into(),
            space: Space::reals(&[(0.0, 1.0), (0.0, 1.0)]).map_err(|e| e.to_string())?,
            method: MethodSpec::GroupPairs {
                rule: "eubo".into(),
                raters: "equal".into(),
            },
            seed: 0,
            participants: names,
            round_seconds: None,
            media: Vec::new(),
        })
        .map_err(|e| e.to_string())
}

/// Serve each state on loopback (each with a runtime of its own, as separate processes
/// would be), run the voters across them, and check the log.
fn run(
    store: &'static str,
    opts: &ServeOptions,
    states: &[AppState],
) -> Result<ServeBench, String> {
    let stored = create(&states[0], opts.voters)?;
    let mut servers = Vec::new();
    let mut addrs = Vec::new();
    for state in states {
        state.set_batch_limit(opts.batch_limit);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let listener = rt
            .block_on(async { crate::listen(([127, 0, 0, 1], 0).into()) })
            .map_err(|e| e.to_string())?;
        addrs.push(listener.local_addr().map_err(|e| e.to_string())?);
        let app = router(state.clone());
        let task = rt.spawn(async move { axum::serve(listener, app).await });
        servers.push((rt, task));
    }
    let tokens: Vec<(String, String)> = stored
        .spec
        .participants
        .iter()
        .cloned()
        .zip(stored.participant_tokens.iter().cloned())
        .collect();
    let report: LoadReport = run_voters(
        &addrs,
        "load",
        &tokens,
        opts.rounds,
        Arc::new(AtomicBool::new(false)),
    );
    for (rt, task) in servers {
        task.abort();
        drop(rt);
    }
    let events = states[0]
        .store()
        .events("load", 0)
        .map_err(|e| e.to_string())?;
    let mut count: BTreeMap<(u64, String), (usize, Option<usize>)> = BTreeMap::new();
    for e in &events {
        if let EventKind::Ballot {
            query_id,
            participant,
            ballot: agora_study::live::Ballot::Vote { choice },
        } = &e.kind
        {
            let c = count
                .entry((*query_id, participant.clone()))
                .or_insert((0, None));
            c.0 += 1;
            c.1 = *choice;
        }
    }
    let missing = report
        .acks
        .iter()
        .filter(|a| count.get(&(a.query_id, a.participant.clone())).map(|c| c.1) != Some(a.choice))
        .count();
    let ms = |q| {
        report
            .latency_quantile(q)
            .map(|d| d.as_secs_f64() * 1e3)
            .unwrap_or(f64::NAN)
    };
    Ok(ServeBench {
        store,
        replicas: states.len(),
        voters: opts.voters,
        rounds: opts.rounds,
        acked: report.acks.len(),
        stored: count.values().map(|c| c.0).sum(),
        missing,
        duplicated: count.values().filter(|c| c.0 > 1).count(),
        failures: report.failures,
        unavailable: report.unavailable,
        p50_ms: ms(0.5),
        p95_ms: ms(0.95),
        p99_ms: ms(0.99),
        ballots_per_s: report.acks.len() as f64 / report.elapsed.as_secs_f64(),
        seconds: report.elapsed.as_secs_f64(),
    })
}

/// The markdown table of [`serve`]'s rows.
pub fn table(rows: &[ServeBench], batch_limit: usize) -> String {
    let mut out = String::from(
        "| store | servers | voters | rounds | acknowledged | stored | missing | stored twice | \
         failed requests | 503 (retried) | p50 ms | p95 ms | p99 ms | ballots/s | s |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for b in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.0} | {:.1} |\n",
            b.store,
            b.replicas,
            b.voters,
            b.rounds,
            b.acked,
            b.stored,
            b.missing,
            b.duplicated,
            b.failures,
            b.unavailable,
            b.p50_ms,
            b.p95_ms,
            b.p99_ms,
            b.ballots_per_s,
            b.seconds
        ));
    }
    let batches = match batch_limit {
        0 => "the ballots waiting for a study are stored together in one transaction (group \
              commit)"
            .to_string(),
        1 => "each ballot is stored in a transaction of its own (no group commit)".to_string(),
        n => format!("up to {n} waiting ballots are stored in one transaction"),
    };
    out.push_str(&format!(
        "\nLoopback; each ballot is committed (SQLite: WAL, synchronous=FULL; PostgreSQL: \
         synchronous_commit=on) before its 200, and {batches}. Voters wait for each new \
         question on the live stream; replicas are separate servers (own runtime, own \
         connections) on one database, voter k on replica k mod n. Majority-vote \
         preferential BO between rounds. There is no Python anchor for this benchmark \
         (Optuna has no voting server)."
    ));
    out
}
