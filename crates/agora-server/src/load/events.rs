//! A tiny client of a server-sent event stream over `std::net` (HTTP/1.1, plain or chunked
//! body), for the load's voters: it hands out events as `(event, data)` pairs and never
//! loses its place when a read times out, so a voter can check between reads whether it
//! should stop.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// How long one read waits before the caller gets control back.
const READ_SLICE: Duration = Duration::from_millis(100);

/// An open event stream.
#[derive(Debug)]
pub struct EventStream {
    sock: TcpStream,
    /// Bytes received and not yet decoded (chunk framing included).
    raw: Vec<u8>,
    /// The decoded body not yet split into lines.
    body: Vec<u8>,
    chunked: bool,
    event: String,
    data: String,
}

fn eof() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the event stream ended")
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

impl EventStream {
    /// `GET path` with `token` on `addr`; an error unless the server answers 200 within
    /// 10 s.
    pub fn open(addr: SocketAddr, path: &str, token: &str) -> std::io::Result<EventStream> {
        let mut sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        sock.set_read_timeout(Some(READ_SLICE))?;
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
             Accept: text/event-stream\r\n\r\n"
        );
        sock.write_all(req.as_bytes())?;
        let mut raw = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        let end = loop {
            if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            if Instant::now() > deadline {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no response header",
                ));
            }
            let mut buf = [0u8; 4096];
            match sock.read(&mut buf) {
                Ok(0) => return Err(eof()),
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                Err(e) if timed_out(&e) => {}
                Err(e) => return Err(e),
            }
        };
        let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
        let status = head.split_whitespace().nth(1).unwrap_or("");
        if status != "200" {
            return Err(std::io::Error::other(format!(
                "the event stream answered {status}"
            )));
        }
        let chunked = head.contains("transfer-encoding: chunked");
        raw.drain(..end + 4);
        Ok(EventStream {
            sock,
            raw,
            body: Vec::new(),
            chunked,
            event: String::new(),
            data: String::new(),
        })
    }

    /// The next event as `(event, data)`; `Ok(None)` when none came within `wait`; an
    /// error when the stream ended or broke.
    pub fn next(&mut self, wait: Duration) -> std::io::Result<Option<(String, String)>> {
        let deadline = Instant::now() + wait;
        loop {
            self.decode()?;
            while let Some(i) = self.body.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.body.drain(..=i).collect();
                let line = String::from_utf8_lossy(&line);
                let line = line.trim_end_matches(['\r', '\n']);
                if line.is_empty() {
                    if !self.event.is_empty() || !self.data.is_empty() {
                        let e = std::mem::take(&mut self.event);
                        return Ok(Some((e, std::mem::take(&mut self.data))));
                    }
                } else if let Some(v) = line.strip_prefix("event:") {
                    self.event = v.trim_start().to_string();
                } else if let Some(v) = line.strip_prefix("data:") {
                    if !self.data.is_empty() {
                        self.data.push('\n');
                    }
                    self.data.push_str(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            let mut buf = [0u8; 4096];
            match self.sock.read(&mut buf) {
                Ok(0) => return Err(eof()),
                Ok(n) => self.raw.extend_from_slice(&buf[..n]),
                Err(e) if timed_out(&e) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Move the complete chunks (or everything, for a plain body) from `raw` to `body`.
    fn decode(&mut self) -> std::io::Result<()> {
        if !self.chunked {
            self.body.append(&mut self.raw);
            return Ok(());
        }
        while let Some(i) = self.raw.windows(2).position(|w| w == b"\r\n") {
            let size = String::from_utf8_lossy(&self.raw[..i]);
            let size = size.split(';').next().unwrap_or("").trim();
            let n = usize::from_str_radix(size, 16).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "bad chunk size")
            })?;
            if n == 0 {
                return Err(eof());
            }
            if self.raw.len() < i + 2 + n + 2 {
                break;
            }
            self.body.extend_from_slice(&self.raw[i + 2..i + 2 + n]);
            self.raw.drain(..i + 2 + n + 2);
        }
        Ok(())
    }
}
