//! Two `agora serve` replicas on one PostgreSQL database, under a load of voters spread
//! over both (a voter whose replica cannot be reached moves to the other, as behind a load
//! balancer), and two faults:
//!
//! - one replica killed with SIGKILL: the other's clients carry on (rounds keep
//!   completing), no acknowledged ballot is lost or stored twice, and the next question
//!   is the one an uninterrupted process given the same ballots asks;
//! - the PostgreSQL server restarted (an immediate stop, as in a crash, then a start):
//!   during the outage requests fail with 503, `Retry-After` and a message saying they
//!   can be retried; afterwards rounds complete again on both replicas (their change
//!   feeds reconnect and resync), nothing acknowledged is lost, and the next question is
//!   the uninterrupted run's.
//!
//! The first runs in a schema of its own on the server `AGORA_TEST_POSTGRES` names. The
//! second must not restart a server others use: it makes a throwaway cluster of its own
//! (`initdb`, `pg_ctl`; Debian's binaries under /usr/lib/postgresql/VERSION/bin, or the
//! folder `AGORA_PG_BIN` names) in a temporary folder on a free port, run as the
//! `postgres` user when the test runs as root. Without a server (first test) or the
//! binaries (second), a test says it was skipped and passes, except under CI (`CI` set),
//! where it fails.

use agora_server::load::{Ack, LoadReport, http, request, run_voters};
use agora_study::live::{
    Actor, Ballot, EventKind, LiveStudy, Outcome, ScratchSchema, SqliteStore, StorageUrl,
    StudySpec, open_store,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const VOTERS: usize = 40;
const STUDY: &str = "load";

/// The longest a test waits for progress before it fails (a liveness bound, not a
/// measurement: rounds normally complete in well under a second).
const PATIENCE: Duration = Duration::from_secs(90);

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

fn skip(why: &str) {
    assert!(
        !ci(),
        "CI is set but {why}: PostgreSQL tests must run in CI"
    );
    println!("skipped: {why}");
}

fn free_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// `url` with agora's tables in `schema`.
fn in_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20search_path%3D{schema}")
}

/// A running `agora serve`, killed (SIGKILL) when dropped.
struct Replica {
    child: Child,
    addr: SocketAddr,
}

impl Replica {
    fn start(storage: &str, addr: SocketAddr) -> Replica {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agora"))
            .args(["serve", "--storage", storage])
            .args(["--addr", &addr.to_string(), "--admin-token", "admin"])
            .env_remove("AGORA_STORAGE")
            .env_remove("AGORA_DB")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(30) {
            if let Ok((200, _)) = http(addr, "GET", "/healthz", None, None) {
                return Replica { child, addr };
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("agora serve on {addr} exited: {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("agora serve did not come up on {addr}");
    }

    fn kill(&mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The study: majority-vote preferential BO, one participant per voter.
fn create(addr: SocketAddr) -> (String, Vec<(String, String)>) {
    let names: Vec<String> = (0..VOTERS).map(|i| format!("voter{i:02}")).collect();
    let spec = json!({
        "name": STUDY,
        "space": {"kind": "box", "params": [
            {"type": "real", "name": "x", "lo": 0.0, "hi": 1.0},
            {"type": "real", "name": "y", "lo": -1.0, "hi": 1.0}
        ]},
        "method": {"name": "group-pairs"},
        "seed": 11,
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
    let voters = names
        .iter()
        .map(|n| {
            let t = created["participant_tokens"][n].as_str().unwrap();
            (n.clone(), t.to_string())
        })
        .collect();
    (
        created["facilitator_token"].as_str().unwrap().to_string(),
        voters,
    )
}

/// The voters, on both replicas, until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<LoadReport>,
}

impl Load {
    fn start(addrs: Vec<SocketAddr>, voters: Vec<(String, String)>) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || run_voters(&addrs, STUDY, &voters, u64::MAX, s));
        Load { stop, thread }
    }

    fn stop(self) -> LoadReport {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// The open question on `addr` as the facilitator sees it (`None` while unreachable or
/// failing).
fn pending(addr: SocketAddr, facilitator: &str) -> Option<Value> {
    let path = format!("/api/studies/{STUDY}/query");
    match http(addr, "GET", &path, Some(facilitator), None) {
        Ok((200, body)) => serde_json::from_str::<Value>(&body)
            .ok()
            .map(|v| v["pending"].clone()),
        _ => None,
    }
}

/// Wait until the open question on `addr` is at least `q`; its id.
fn until_question(addr: SocketAddr, facilitator: &str, q: u64, what: &str) -> u64 {
    let t0 = Instant::now();
    loop {
        if let Some(id) = pending(addr, facilitator).and_then(|p| p["query_id"].as_u64())
            && id >= q
        {
            return id;
        }
        assert!(
            t0.elapsed() < PATIENCE,
            "{what}: question {q} never opened on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every acknowledged ballot is in the log exactly once, as sent, and no ballot twice;
/// then the question an uninterrupted process asks after the same ballots, as the
/// facilitator sees it.
fn check_log(storage: &str, acks: &[Ack], what: &str) -> Value {
    let store = open_store(storage, false).unwrap();
    let events = store.events(STUDY, 0).unwrap();
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
    for a in acks {
        assert_eq!(
            stored.get(&(a.query_id, a.participant.clone())),
            Some(&vec![a.choice]),
            "{what}: acknowledged ballot {a:?} not stored exactly once"
        );
    }
    assert!(
        stored.values().all(|v| v.len() == 1),
        "{what}: a ballot stored twice"
    );

    // The uninterrupted run: one process, a fresh store, the same ballots in the same order.
    let spec: StudySpec = store.study(STUDY).unwrap().spec;
    let mut straight =
        LiveStudy::create(Arc::new(SqliteStore::in_memory().unwrap()), spec).unwrap();
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
            EventKind::Answered { answer, .. } => assert_eq!(
                straight.tell(&Actor::Owner, answer.clone()).unwrap(),
                Outcome::Duplicate,
                "{what}: the uninterrupted run assembled a different answer"
            ),
            EventKind::Asked { .. }
            | EventKind::Imported { .. }
            | EventKind::Enqueued { .. }
            | EventKind::Media { .. } => {}
        }
    }
    serde_json::to_value(straight.pending_view(&Actor::Facilitator)).unwrap()
}

/// The replicas serve the uninterrupted run's question, with the same ballots counted.
fn assert_serves(addrs: &[SocketAddr], facilitator: &str, expected: &Value, what: &str) {
    for addr in addrs {
        let t0 = Instant::now();
        // A replica may still be reading the last change; it must get there.
        let got = loop {
            let got = pending(*addr, facilitator).unwrap_or(Value::Null);
            if got == *expected || t0.elapsed() > PATIENCE {
                break got;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(got["query_id"], expected["query_id"], "{what} on {addr}");
        assert_eq!(
            got["options"], expected["options"],
            "{what}: {addr} proposes something else than the uninterrupted run"
        );
        assert_eq!(got["voted"], expected["voted"], "{what} on {addr}");
    }
}

#[test]
fn killing_one_replica_under_load_loses_nothing_and_the_other_carries_on() {
    let Some(base) = std::env::var("AGORA_TEST_POSTGRES")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        return skip("AGORA_TEST_POSTGRES is not set");
    };
    let StorageUrl::Postgres(parsed) = StorageUrl::parse(&base).unwrap() else {
        panic!("AGORA_TEST_POSTGRES is not a PostgreSQL URL");
    };
    let name = format!("cli_replicas_kill_{}", std::process::id());
    let _schema = ScratchSchema::create(&parsed, &name).unwrap();
    let storage = in_schema(&base, &name);
    let (a_addr, b_addr) = (free_addr(), free_addr());
    let mut a = Replica::start(&storage, a_addr);
    let b = Replica::start(&storage, b_addr);
    let (facilitator, voters) = create(a.addr);
    let load = Load::start(vec![a.addr, b.addr], voters);
    until_question(b.addr, &facilitator, 3, "before the kill");

    a.kill();
    let at_kill = until_question(b.addr, &facilitator, 0, "at the kill");
    // Rounds keep completing: every voter, A's too (moved to B), votes in each. B may show
    // a round less than A had asked when it died (it learns of A's rounds from the feed), so
    // the round checked is the one after that: asked after the kill, by B.
    let after = until_question(b.addr, &facilitator, at_kill + 4, "after the kill");
    let report = load.stop();
    assert!(after > at_kill + 3);
    for n in 0..VOTERS {
        let who = format!("voter{n:02}");
        assert!(
            report
                .acks
                .iter()
                .any(|x| x.participant == who && x.query_id == at_kill + 2),
            "{who} has no acknowledged ballot in round {} after the kill",
            at_kill + 2
        );
    }
    let expected = check_log(&storage, &report.acks, "after the kill");
    assert_serves(&[b.addr], &facilitator, &expected, "the surviving replica");

    // The killed replica comes back and serves the same question.
    let a = Replica::start(&storage, a_addr);
    assert_serves(
        &[a.addr, b.addr],
        &facilitator,
        &expected,
        "after the restart",
    );
}

/// A throwaway PostgreSQL cluster in a temporary folder, stopped and removed when dropped.
struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    as_postgres: bool,
}

impl Cluster {
    /// Debian's newest server binaries, or those in `AGORA_PG_BIN`.
    fn binaries() -> Option<PathBuf> {
        if let Some(d) = std::env::var_os("AGORA_PG_BIN") {
            return Some(PathBuf::from(d));
        }
        let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let v = e.file_name().to_str()?.parse().ok()?;
                let bin = e.path().join("bin");
                bin.join("pg_ctl").exists().then_some((v, bin))
            })
            .collect();
        versions.sort();
        versions.pop().map(|(_, b)| b)
    }

    fn start() -> Option<Cluster> {
        let bin = Cluster::binaries()?;
        // PostgreSQL refuses to run as root: then it runs as the `postgres` user.
        let as_postgres = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let dir = tempfile::tempdir().unwrap();
        if as_postgres {
            let uid = Command::new("id")
                .args(["-u", "postgres"])
                .output()
                .unwrap();
            let gid = Command::new("id")
                .args(["-g", "postgres"])
                .output()
                .unwrap();
            let num = |o: std::process::Output| {
                String::from_utf8_lossy(&o.stdout)
                    .trim()
                    .parse::<u32>()
                    .ok()
            };
            std::os::unix::fs::chown(dir.path(), num(uid), num(gid)).unwrap();
        }
        let port = free_addr().port();
        let c = Cluster {
            bin,
            dir,
            port,
            as_postgres,
        };
        let data = c.data();
        c.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "agora",
                "--auth=trust",
                "--no-sync",
            ],
        );
        c.pg_ctl("start");
        Some(c)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn url(&self) -> String {
        format!("postgresql://agora@127.0.0.1:{}/postgres", self.port)
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let out = cmd
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running {tool}: {e}"));
        assert!(
            out.status.success(),
            "{tool} {args:?} failed:\n{}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
        );
    }

    /// `pg_ctl start` (waiting until it accepts connections) or `stop` (immediate: the
    /// server goes down at once, as in a crash, and recovers from its log on start).
    fn pg_ctl(&self, what: &str) {
        let data = self.data();
        let log = self.dir.path().join("log");
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1",
            self.port,
            self.dir.path().display()
        );
        let mut args = vec!["-D", data.to_str().unwrap(), "-w"];
        match what {
            "start" => args.extend(["-l", log.to_str().unwrap(), "-o", &opts, "start"]),
            _ => args.extend(["-m", "immediate", "stop"]),
        }
        self.run("pg_ctl", &args);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.data();
        let exe = self.bin.join("pg_ctl");
        let args = ["-D", data.to_str().unwrap_or(""), "-m", "immediate", "stop"];
        let _ = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&exe)
                .args(args)
                .output()
        } else {
            Command::new(&exe).args(args).output()
        };
    }
}

fn wait_for_503(addr: SocketAddr, facilitator: &str) -> agora_server::load::Reply {
    let path = format!("/api/studies/{STUDY}/query");
    let t0 = Instant::now();
    loop {
        if let Ok(r) = request(addr, "GET", &path, Some(facilitator), None) {
            assert!(
                r.status == 200 || r.status == 503,
                "during the outage: {} {}",
                r.status,
                r.body
            );
            if r.status == 503 {
                return r;
            }
        }
        assert!(
            t0.elapsed() < PATIENCE,
            "{addr} never said the store is down"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_postgres_restart_under_load_is_retryable_and_loses_nothing() {
    let Some(cluster) = Cluster::start() else {
        return skip("no PostgreSQL server binaries (initdb, pg_ctl) were found");
    };
    let storage = cluster.url();
    let a = Replica::start(&storage, free_addr());
    let b = Replica::start(&storage, free_addr());
    let (facilitator, voters) = create(a.addr);
    let load = Load::start(vec![a.addr, b.addr], voters);
    until_question(b.addr, &facilitator, 3, "before the restart");

    cluster.pg_ctl("stop");
    // Requests fail with a clear, retryable error while the database is down.
    for addr in [a.addr, b.addr] {
        let r = wait_for_503(addr, &facilitator);
        assert_eq!(r.header("retry-after"), Some("1"), "{}", r.head);
        let v: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["error"]["code"], "unavailable", "{}", r.body);
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains("can be retried"), "{msg}");
        assert!(!msg.contains("127.0.0.1"), "{msg}");
    }
    std::thread::sleep(Duration::from_millis(500));
    cluster.pg_ctl("start");

    // Afterwards rounds complete again, and each replica follows the other's questions.
    let at = until_question(a.addr, &facilitator, 0, "after the restart");
    until_question(a.addr, &facilitator, at + 3, "after the restart");
    until_question(b.addr, &facilitator, at + 3, "after the restart");
    let report = load.stop();
    println!(
        "{} ballots acknowledged, {} answered 503 and retried",
        report.acks.len(),
        report.unavailable
    );
    let expected = check_log(&storage, &report.acks, "after the restart");
    assert_serves(
        &[a.addr, b.addr],
        &facilitator,
        &expected,
        "after the restart",
    );
}
