//! A load of many voters on loopback, for `agora bench serve` and the crash tests: each
//! voter is a thread with its own connection per request (a tiny HTTP/1.1 client over
//! `std::net`), reading the open query and casting a ballot on every round it has not
//! voted in yet. Every acknowledged ballot is recorded with its latency, so a test can
//! check that each one is in the log exactly once.

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
    /// Requests that failed (connection refused or reset, non-200 other than 409).
    pub failures: usize,
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

/// One HTTP/1.1 request with `Connection: close`; returns the status and the body.
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
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
    Ok((status, body))
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
/// voted on by everyone, `stop` is raised, or the server goes away.
pub fn run_voters(
    addr: SocketAddr,
    study: &str,
    voters: &[(String, String)],
    rounds: u64,
    stop: Arc<AtomicBool>,
) -> LoadReport {
    let t0 = Instant::now();
    let results: Vec<(Vec<Ack>, usize, usize)> = std::thread::scope(|sc| {
        let handles: Vec<_> = voters
            .iter()
            .enumerate()
            .map(|(k, (name, token))| {
                let stop = stop.clone();
                sc.spawn(move || {
                    let (mut acks, mut failures, mut stale) = (Vec::new(), 0usize, 0usize);
                    let mut last_voted: Option<u64> = None;
                    let path_q = format!("/api/studies/{study}/query");
                    let path_b = format!("/api/studies/{study}/ballot");
                    let mut consecutive_failures = 0;
                    while !stop.load(Ordering::Relaxed) && consecutive_failures < 20 {
                        let Ok((200, body)) = http(addr, "GET", &path_q, Some(token), None) else {
                            failures += 1;
                            consecutive_failures += 1;
                            std::thread::sleep(Duration::from_millis(20));
                            continue;
                        };
                        consecutive_failures = 0;
                        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                        let Some(q) = v["pending"]["query_id"].as_u64() else {
                            std::thread::sleep(Duration::from_millis(10));
                            continue;
                        };
                        if q >= rounds {
                            break;
                        }
                        if last_voted.is_some_and(|l| l >= q) {
                            // Waiting for the others.
                            std::thread::sleep(Duration::from_millis(5));
                            continue;
                        }
                        let choice = choice_of(k, q);
                        let b =
                            json!({"query_id": q, "ballot": {"type": "vote", "choice": choice}})
                                .to_string();
                        let t = Instant::now();
                        match http(addr, "POST", &path_b, Some(token), Some(&b)) {
                            Ok((200, body)) => {
                                let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                                acks.push(Ack {
                                    participant: name.clone(),
                                    query_id: q,
                                    choice,
                                    outcome: v["outcome"].as_str().unwrap_or("").to_string(),
                                    latency: t.elapsed(),
                                });
                                last_voted = Some(q);
                            }
                            Ok((409, _)) => {
                                stale += 1;
                                last_voted = Some(q);
                            }
                            _ => {
                                failures += 1;
                                consecutive_failures += 1;
                            }
                        }
                    }
                    (acks, failures, stale)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut report = LoadReport {
        elapsed: t0.elapsed(),
        ..LoadReport::default()
    };
    for (a, f, s) in results {
        report.acks.extend(a);
        report.failures += f;
        report.stale += s;
    }
    report
}
