//! `agora bench serve`: many voters on loopback against a real server and SQLite file.

use crate::load::{LoadReport, run_voters};
use crate::{AppState, router};
use agora_core::Space;
use agora_study::live::{EventKind, MethodSpec, StudySpec};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// What `agora bench serve` measured.
#[derive(Debug, Clone, Serialize)]
pub struct ServeBench {
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

/// Run `voters` concurrent voters for `rounds` rounds of a majority-vote study on a fresh
/// SQLite file, then check the log against every acknowledgement.
pub fn serve(voters: usize, rounds: u64) -> Result<ServeBench, String> {
    let dir = std::env::temp_dir().join(format!("agora-bench-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let db = dir.join("bench.db");
    let _ = std::fs::remove_file(&db);
    let state = AppState::open(&db, None).map_err(|e| e.to_string())?;
    let names: Vec<String> = (0..voters).map(|i| format!("voter{i:02}")).collect();
    let stored = state
        .create_study(StudySpec {
            name: "load".into(),
            description: "bench serve".into(),
            space: Space::reals(&[(0.0, 1.0), (0.0, 1.0)]).map_err(|e| e.to_string())?,
            method: MethodSpec::GroupPairs {
                rule: "eubo".into(),
            },
            seed: 0,
            participants: names.clone(),
        })
        .map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let app = router(state.clone());
    let server = rt.spawn(async move { axum::serve(listener, app).await });
    let tokens: Vec<(String, String)> = names
        .iter()
        .cloned()
        .zip(stored.participant_tokens.iter().cloned())
        .collect();
    let report: LoadReport = run_voters(
        addr,
        "load",
        &tokens,
        rounds,
        Arc::new(AtomicBool::new(false)),
    );
    server.abort();
    drop(rt);
    let events = state.store().events("load", 0).map_err(|e| e.to_string())?;
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
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ServeBench {
        voters,
        rounds,
        acked: report.acks.len(),
        stored: count.values().map(|c| c.0).sum(),
        missing,
        duplicated: count.values().filter(|c| c.0 > 1).count(),
        failures: report.failures,
        p50_ms: ms(0.5),
        p95_ms: ms(0.95),
        p99_ms: ms(0.99),
        ballots_per_s: report.acks.len() as f64 / report.elapsed.as_secs_f64(),
        seconds: report.elapsed.as_secs_f64(),
    })
}

/// The markdown table of a [`ServeBench`].
pub fn table(b: &ServeBench) -> String {
    format!(
        "| voters | rounds | acknowledged | stored | missing | stored twice | failed requests | p50 ms | p95 ms | p99 ms | ballots/s | s |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n\
         | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.0} | {:.1} |\n\n\
         Loopback, one SQLite file (WAL, synchronous=FULL: every ballot is fsynced before its \
         200), majority-vote preferential BO between rounds. There is no Python anchor for \
         this benchmark (Optuna has no voting server).",
        b.voters,
        b.rounds,
        b.acked,
        b.stored,
        b.missing,
        b.duplicated,
        b.failures,
        b.p50_ms,
        b.p95_ms,
        b.p99_ms,
        b.ballots_per_s,
        b.seconds
    )
}
