//! `agora serve` killed with SIGKILL in the middle of a 50-voter load: no acknowledged
//! vote is lost or stored twice, and the restarted server proposes exactly what an
//! uninterrupted process given the same answers proposes.

use agora_server::load::{http, run_voters};
use agora_study::live::{Actor, Ballot, EventKind, LiveStudy, SqliteStore, Store, StudySpec};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn free_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

fn start(db: &std::path::Path, addr: SocketAddr) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agora"))
        .args(["serve", "--db"])
        .arg(db)
        .args(["--addr", &addr.to_string(), "--admin-token", "admin"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        if let Ok((200, _)) = http(addr, "GET", "/healthz", None, None) {
            return child;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("agora serve did not come up on {addr}");
}

#[test]
fn kill_9_under_load_loses_no_acknowledged_vote_and_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("meeting.db");
    let addr = free_addr();
    let mut server = start(&db, addr);
    let names: Vec<String> = (0..50).map(|i| format!("voter{i:02}")).collect();
    let spec = json!({
        "name": "load",
        "space": {"kind": "box", "params": [
            {"type": "real", "name": "x", "lo": 0.0, "hi": 1.0},
            {"type": "real", "name": "y", "lo": -1.0, "hi": 1.0}
        ]},
        "method": {"name": "group-pairs"},
        "seed": 5,
        "participants": names,
    });
    let (code, body) = http(
        addr,
        "POST",
        "/api/studies",
        Some("admin"),
        Some(&spec.to_string()),
    )
    .unwrap();
    assert_eq!(code, 201, "{body}");
    let created: Value = serde_json::from_str(&body).unwrap();
    let facilitator = created["facilitator_token"].as_str().unwrap().to_string();
    let voters: Vec<(String, String)> = names
        .iter()
        .map(|n| {
            (
                n.clone(),
                created["participant_tokens"][n]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();

    let mut all_acks = Vec::new();
    // Two crashes at different moments of the load.
    // The open question as the facilitator sees it.
    let query = || -> Value {
        let (code, body) = http(
            addr,
            "GET",
            "/api/studies/load/query",
            Some(&facilitator),
            None,
        )
        .unwrap();
        assert_eq!(code, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    };
    let open_round = || query()["pending"]["query_id"].as_u64().unwrap();
    for (crash, wait_ms) in [(0, 100u64), (1, 400)] {
        let first = open_round();
        let stop = Arc::new(AtomicBool::new(false));
        let load = {
            let (voters, stop) = (voters.clone(), stop.clone());
            std::thread::spawn(move || run_voters(&[addr], "load", &voters, u64::MAX, stop))
        };
        // Once two rounds have completed under the load (however slow the machine; the
        // first may hold ballots from before the last crash, the second has all 50 new),
        // kill it at a different moment of the next one.
        let deadline = Instant::now() + Duration::from_secs(120);
        while open_round() < first + 2 {
            assert!(
                Instant::now() < deadline,
                "crash {crash}: no round completed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(wait_ms));
        server.kill().unwrap(); // SIGKILL
        server.wait().unwrap();
        stop.store(true, Ordering::Relaxed);
        let report = load.join().unwrap();
        assert!(
            report.acks.len() >= 50,
            "crash {crash}: only {} acks before the kill",
            report.acks.len()
        );
        all_acks.extend(report.acks);

        // Every acknowledged ballot is in the file, once, as sent.
        let store = SqliteStore::open(&db).unwrap();
        let events = store.events("load", 0).unwrap();
        let mut stored: BTreeMap<(u64, String), Vec<Option<usize>>> = BTreeMap::new();
        for e in &events {
            if let EventKind::Ballot {
                query_id,
                participant,
                ballot: Ballot::Vote { choice },
            } = &e.kind
            {
                stored
                    .entry((*query_id, participant.clone()))
                    .or_default()
                    .push(*choice);
            }
        }
        for a in &all_acks {
            assert_eq!(
                stored.get(&(a.query_id, a.participant.clone())),
                Some(&vec![a.choice]),
                "crash {crash}: acknowledged ballot {a:?} not stored exactly once"
            );
        }
        assert!(stored.values().all(|v| v.len() == 1));

        // The uninterrupted run: a process that never crashed, told the same answers.
        let spec: StudySpec = store.study("load").unwrap().spec;
        let mut straight =
            LiveStudy::create(Arc::new(SqliteStore::in_memory().unwrap()), spec).unwrap();
        // Cast the same ballots in the same order; the rounds they complete must be the
        // ones the log records as answered.
        let mut answered = 0;
        for e in &events {
            match &e.kind {
                EventKind::Ballot {
                    query_id,
                    participant,
                    ballot,
                } => {
                    straight
                        .ballot(&Actor::Owner, *query_id, participant, ballot.clone())
                        .unwrap();
                }
                EventKind::Answered { answer, .. } => {
                    answered += 1;
                    assert_eq!(
                        straight.tell(&Actor::Owner, answer.clone()).unwrap(),
                        agora_study::live::Outcome::Duplicate,
                        "the uninterrupted run assembled a different answer"
                    );
                }
                EventKind::Asked { .. }
                | EventKind::Imported { .. }
                | EventKind::Enqueued { .. }
                | EventKind::Media { .. } => {}
            }
        }
        assert!(
            answered >= 1,
            "crash {crash}: no round completed before the kill"
        );
        drop(store);
        server = start(&db, addr);
        let restarted = query();
        let expected = serde_json::to_value(straight.pending_view(&Actor::Facilitator)).unwrap();
        assert_eq!(
            restarted["pending"]["query_id"], expected["query_id"],
            "crash {crash}"
        );
        assert_eq!(
            restarted["pending"]["options"], expected["options"],
            "crash {crash}: the restarted server proposes something else"
        );
        // The ballots cast on the open round before the crash are still counted.
        assert_eq!(restarted["pending"]["voted"], expected["voted"]);
    }
    server.kill().unwrap();
    server.wait().unwrap();
}
