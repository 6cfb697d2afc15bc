//! A load of many voters on loopback, for `agora bench serve` and the crash tests: each
//! voter is a thread that follows the study's live stream and casts a ballot, with a
//! connection of its own per request (a tiny HTTP/1.1 client over `std::net`), on every
//! query it has not voted on yet. Every acknowledged ballot is recorded with its latency,
//! so a test can check that each one is in the log exactly once.

mod events;

pub use events::EventStream;

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A ballot the server acknowledged (HTTP 200).
#[derive(Debug, Clone, PartialEq)]
pub struct Ack {
    /// The voter.
    pub participant: String,
    /// The query voted on.
    pub query_id: u64,
    /// The choice sent.
    pub choice: Option<usize>,
    /// `recorded`, `answered` or `duplicate`.
    pub outcome: String,
    /// Request latency.
    pub latency: Duration,
}

/// What a load run saw.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Acknowledged ballots.
    pub acks: Vec<Ack>,
    /// Requests that failed (connection refused or reset, an unexpected status), and
    /// live streams that broke.
    pub failures: usize,
    /// Ballots refused with 503 (the database unreachable, or the study busy): retried.
    pub unavailable: usize,
    /// Ballots refused because the round had closed (409): not errors under load.
    pub stale: usize,
    /// Wall time.
    pub elapsed: Duration,
}

impl LoadReport {
    /// The `q`-quantile (0..1) of the acknowledged ballots' latency.
    pub fn latency_quantile(&self, q: f64) -> Option<Duration> {
        let mut l: Vec<Duration> = self.acks.iter().map(|a| a.latency).collect();
        if l.is_empty() {
            return None;
        }
        l.sort();
        let i = ((q * l.len() as f64).ceil() as usize).clamp(1, l.len()) - 1;
        Some(l[i])
    }
}

/// A response: status, header block and body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The status line and headers, as received.
    pub head: String,
    /// The body (de-chunked).
    pub body: String,
}

impl Reply {
    /// The value of header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// One HTTP/1.1 request with `Connection: close`; returns the status and the body.
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
    request(addr, method, path, token, body).map(|r| (r.status, r.body))
}

/// One HTTP/1.1 request with `Connection: close`.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> std::io::Result<Reply> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let body = body.unwrap_or("");
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    let text = String::from_utf8_lossy(&buf);
    let (head, rest) = text.split_once("\r\n\r\n").ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "no HTTP header end")
    })?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "no status"))?;
    // The server answers small bodies with Content-Length or chunked encoding; de-chunk.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    Ok(Reply {
        status,
        head: head.to_string(),
        body,
    })
}

fn dechunk(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    out
}

/// The choice voter `k` makes on query `q` (a fixed, varied pattern).
pub fn choice_of(k: usize, q: u64) -> Option<usize> {
    match (k as u64 * 7 + q * 3) % 5 {
        0 => None,
        1 | 2 => Some(0),
        _ => Some(1),
    }
}

/// Run `voters` (participant name, token) against `study` until `rounds` queries have been
/// voted on by everyone, `stop` is raised, or the servers go away. Voter `k` starts on
/// server `addrs[k % addrs.len()]` (replicas of one study) and moves to the next when its
/// server cannot be reached, as behind a load balancer. A voter waits for each new query
/// on the study's live stream (`/stream`'s `query` events), not by polling; a ballot
/// refused with 503 is sent again after the server's `Retry-After` (at most 1 s).
pub fn run_voters(
    addrs: &[SocketAddr],
    study: &str,
    voters: &[(String, String)],
    rounds: u64,
    stop: Arc<AtomicBool>,
) -> LoadReport {
    let t0 = Instant::now();
    let results: Vec<Tally> = std::thread::scope(|sc| {
        let handles: Vec<_> = voters
            .iter()
            .enumerate()
            .map(|(k, (name, token))| {
                let voter = Voter {
                    k,
                    name,
                    token,
                    study,
                    addrs,
                    at: k % addrs.len().max(1),
                    stop: stop.clone(),
                    tally: Tally::default(),
                };
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn_scoped(sc, move || voter.run(rounds))
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.ok())
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut report = LoadReport {
        elapsed: t0.elapsed(),
        ..LoadReport::default()
    };
    for t in results {
        report.acks.extend(t.acks);
        report.failures += t.failures;
        report.unavailable += t.unavailable;
        report.stale += t.stale;
    }
    report
}

/// What one voter saw.
#[derive(Debug, Default)]
struct Tally {
    acks: Vec<Ack>,
    failures: usize,
    unavailable: usize,
    stale: usize,
}

/// One simulated participant.
struct Voter<'a> {
    k: usize,
    name: &'a str,
    token: &'a str,
    study: &'a str,
    addrs: &'a [SocketAddr],
    /// The server it talks to now.
    at: usize,
    stop: Arc<AtomicBool>,
    tally: Tally,
}

/// Failures in a row after which a voter gives up (every server gone).
const GIVE_UP_AFTER: usize = 40;
/// How long a voter waits for a new question before it gives up (a round that can never
/// complete must not hang a benchmark).
const IDLE_LIMIT: Duration = Duration::from_secs(60);

impl Voter<'_> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn addr(&self) -> SocketAddr {
        self.addrs[self.at]
    }

    /// The server could not be reached: count it, move to the next one, pause a little.
    fn failed(&mut self, in_a_row: &mut usize) {
        self.tally.failures += 1;
        *in_a_row += 1;
        self.at = (self.at + 1) % self.addrs.len();
        std::thread::sleep(Duration::from_millis(20 * (*in_a_row as u64).min(10)));
    }

    fn run(mut self, rounds: u64) -> Tally {
        let path = format!("/api/studies/{}/stream", self.study);
        let mut voted: Option<u64> = None;
        let mut in_a_row = 0;
        let mut progress = Instant::now();
        'connect: while !self.stopped() && in_a_row < GIVE_UP_AFTER && !self.addrs.is_empty() {
            let Ok(mut events) = EventStream::open(self.addr(), &path, self.token) else {
                self.failed(&mut in_a_row);
                continue;
            };
            while !self.stopped() {
                if progress.elapsed() > IDLE_LIMIT {
                    self.tally.failures += 1;
                    return self.tally;
                }
                let (kind, data) = match events.next(Duration::from_millis(250)) {
                    Ok(Some(e)) => e,
                    Ok(None) => continue,
                    Err(_) => {
                        self.failed(&mut in_a_row);
                        continue 'connect;
                    }
                };
                in_a_row = 0;
                let Some(q) = (kind == "query")
                    .then(|| data.parse::<u64>().ok())
                    .flatten()
                else {
                    continue;
                };
                if q >= rounds {
                    return self.tally;
                }
                if voted.is_some_and(|v| v >= q) {
                    continue;
                }
                progress = Instant::now();
                match self.vote(q) {
                    Some(true) => voted = Some(q),
                    Some(false) => {}
                    None => {
                        // The server went away mid-request: try the next one.
                        self.failed(&mut in_a_row);
                        continue 'connect;
                    }
                }
            }
        }
        self.tally
    }

    /// Cast this voter's ballot on query `q`, again while the server answers 503: whether
    /// the round is done for this voter (acknowledged, or closed meanwhile), or `None`
    /// when the server cannot be reached.
    fn vote(&mut self, q: u64) -> Option<bool> {
        let choice = choice_of(self.k, q);
        let body = json!({"query_id": q, "ballot": {"type": "vote", "choice": choice}});
        let body = body.to_string();
        let path = format!("/api/studies/{}/ballot", self.study);
        let mut errors = 0;
        while !self.stopped() {
            let t = Instant::now();
            let r = request(self.addr(), "POST", &path, Some(self.token), Some(&body)).ok()?;
            match r.status {
                200 => {
                    let v: Value = serde_json::from_str(&r.body).unwrap_or(Value::Null);
                    self.tally.acks.push(Ack {
                        participant: self.name.to_string(),
                        query_id: q,
                        choice,
                        outcome: v["outcome"].as_str().unwrap_or("").to_string(),
                        latency: t.elapsed(),
                    });
                    return Some(true);
                }
                409 => {
                    self.tally.stale += 1;
                    return Some(true);
                }
                503 => {
                    self.tally.unavailable += 1;
                    let wait = r
                        .header("retry-after")
                        .and_then(|s| s.parse::<u64>().ok())
                        .map_or(Duration::from_millis(250), Duration::from_secs);
                    std::thread::sleep(wait.min(Duration::from_secs(1)));
                }
                _ => {
                    self.tally.failures += 1;
                    errors += 1;
                    if errors >= 5 {
                        return Some(false);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        Some(false)
    }
}
