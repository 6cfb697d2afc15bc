//! Storage URLs: one string names where studies live, for the CLI (`--storage`,
//! `AGORA_STORAGE`), the server and the Python package alike.
//!
//! | form | store |
//! |---|---|
//! | `agora.db`, `dir/studies.db` (a plain path) | SQLite file |
//! | `sqlite:///relative/path.db`, `sqlite:////absolute/path.db` | SQLite file (SQLAlchemy's spelling, as Optuna's storages use) |
//! | `postgresql://user:password@host:port/database` (also `postgres://`) | PostgreSQL |
//!
//! In a PostgreSQL URL the user, password and database may be percent-encoded (`%40` for
//! `@`); the port defaults to 5432 and the host to `localhost`. These query parameters are
//! accepted: `host` (a Unix-socket folder such as `/var/run/postgresql`, in place of the
//! host in the URL), `options` (server settings, e.g. `-c search_path=agora`),
//! `application_name`, `connect_timeout` (seconds, default 10) and `sslmode` (`disable` or
//! `prefer`: agora talks to PostgreSQL without TLS, so use loopback, a Unix socket or a
//! trusted network).
//!
//! A [`StorageUrl`] displays (and debug-prints) with the password and the host hidden:
//! `postgresql://ann:***@***/agora`; errors about a URL never repeat any part of it but its
//! scheme.

use super::{PostgresStore, SqliteStore, Store, StoreError, StoreResult};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// Where studies live, parsed from a storage URL (see the module docs for the forms).
#[derive(Clone, PartialEq, Eq)]
pub enum StorageUrl {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database.
    Postgres(PostgresUrl),
}

/// A PostgreSQL database's address and credentials. It never displays its password or
/// host.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresUrl {
    pub(super) user: String,
    pub(super) password: Option<String>,
    pub(super) host: PgHost,
    pub(super) port: u16,
    pub(super) dbname: String,
    pub(super) options: Option<String>,
    pub(super) application_name: Option<String>,
    pub(super) connect_timeout: Duration,
}

/// How to reach the server.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum PgHost {
    /// A host name or IP address.
    Tcp(String),
    /// The folder of the server's Unix socket.
    Socket(PathBuf),
}

/// Open the store a storage URL names. With `create`, a missing store is made (a new
/// SQLite file, or agora's tables in an empty PostgreSQL database); without it, a missing
/// store is [`StoreError::NotFound`] and nothing is created. An older schema is migrated
/// either way; a newer one is refused.
///
/// ```no_run
/// let store = agora_study::live::open_store("postgresql://agora:secret@127.0.0.1:5432/agora", true)?;
/// println!("{} studies", store.list()?.len());
/// # Ok::<(), agora_study::live::StoreError>(())
/// ```
pub fn open_store(url: &str, create: bool) -> StoreResult<Arc<dyn Store>> {
    StorageUrl::parse(url)?.open(create)
}

impl StorageUrl {
    /// Parse a storage URL: a plain path, `sqlite:///path` or `postgresql://...`.
    pub fn parse(s: &str) -> StoreResult<StorageUrl> {
        let Some((scheme, rest)) = s.split_once("://") else {
            if s.trim().is_empty() {
                return Err(invalid("it is empty"));
            }
            return Ok(StorageUrl::Sqlite(PathBuf::from(s)));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "sqlite" => {
                let Some(path) = rest.strip_prefix('/') else {
                    return Err(invalid(
                        "a sqlite URL has three slashes before a relative path \
                         (sqlite:///studies.db) and four before an absolute one",
                    ));
                };
                if path.is_empty() {
                    return Err(invalid("sqlite:/// needs a file path after it"));
                }
                Ok(StorageUrl::Sqlite(PathBuf::from(path)))
            }
            "postgresql" | "postgres" => Ok(StorageUrl::Postgres(PostgresUrl::parse(rest)?)),
            other => {
                let shown: String = other.chars().take(20).collect();
                Err(invalid(format!("unknown scheme `{shown}://`")))
            }
        }
    }

    /// Open the store (see [`open_store`]).
    pub fn open(&self, create: bool) -> StoreResult<Arc<dyn Store>> {
        Ok(match self {
            StorageUrl::Sqlite(path) => Arc::new(SqliteStore::open_with(path, create)?),
            StorageUrl::Postgres(url) => Arc::new(PostgresStore::open(url, create)?),
        })
    }

    /// The SQLite file, if this names one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            StorageUrl::Sqlite(p) => Some(p),
            StorageUrl::Postgres(_) => None,
        }
    }

    /// The kind of store: `SQLite` or `PostgreSQL`.
    pub fn backend(&self) -> &'static str {
        match self {
            StorageUrl::Sqlite(_) => "SQLite",
            StorageUrl::Postgres(_) => "PostgreSQL",
        }
    }
}

impl FromStr for StorageUrl {
    type Err = StoreError;
    fn from_str(s: &str) -> StoreResult<StorageUrl> {
        StorageUrl::parse(s)
    }
}

impl fmt::Display for StorageUrl {
    /// The SQLite file's path, or the PostgreSQL URL with its password and host hidden.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageUrl::Sqlite(p) => write!(f, "{}", p.display()),
            StorageUrl::Postgres(u) => u.fmt(f),
        }
    }
}

impl fmt::Debug for StorageUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageUrl::Sqlite(p) => f.debug_tuple("Sqlite").field(p).finish(),
            StorageUrl::Postgres(u) => f.debug_tuple("Postgres").field(u).finish(),
        }
    }
}

impl fmt::Display for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secret = if self.password.is_some() { ":***" } else { "" };
        write!(
            f,
            "postgresql://{}{secret}@***/{}",
            encode(&self.user),
            encode(&self.dbname)
        )
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

fn invalid(reason: impl Into<String>) -> StoreError {
    StoreError::InvalidStorage {
        reason: reason.into(),
    }
}

/// The query parameters a PostgreSQL URL may carry.
const PARAMS: &str = "host, options, application_name, connect_timeout, sslmode";

impl PostgresUrl {
    /// Parse what follows `postgresql://`: `[user[:password]@][host][:port][/db][?k=v&...]`.
    fn parse(rest: &str) -> StoreResult<PostgresUrl> {
        // The credentials end at the last `@`, so a password with an unencoded `/`, `?` or
        // `@` still parses.
        let (userinfo, rest) = match rest.rfind('@') {
            Some(i) => (Some(&rest[..i]), &rest[i + 1..]),
            None => (None, rest),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((a, q)) => (a, Some(q)),
            None => (rest, None),
        };
        let (hostport, dbname) = match rest.split_once('/') {
            Some((h, d)) => (h, d),
            None => (rest, ""),
        };
        let (user, password) = match userinfo {
            Some(ui) => match ui.split_once(':') {
                Some((u, p)) => (decode(u, "user")?, Some(decode(p, "password")?)),
                None => (decode(ui, "user")?, None),
            },
            None => (String::new(), None),
        };
        if user.is_empty() {
            return Err(invalid(
                "the PostgreSQL URL needs a user (postgresql://user:password@host:port/database)",
            ));
        }
        let (host, port) = split_host_port(hostport)?;
        let dbname = decode(dbname.trim_end_matches('/'), "database")?;
        if dbname.contains('/') {
            return Err(invalid("the database name cannot contain `/`"));
        }
        let mut url = PostgresUrl {
            dbname: if dbname.is_empty() {
                user.clone()
            } else {
                dbname
            },
            user,
            password,
            host: PgHost::Tcp(if host.is_empty() {
                "localhost".into()
            } else {
                host
            }),
            port,
            options: None,
            application_name: None,
            connect_timeout: Duration::from_secs(10),
        };
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = decode(v, "query parameter")?;
            match k {
                "host" => {
                    if !v.starts_with('/') {
                        return Err(invalid(
                            "the `host` query parameter is a Unix-socket folder (an absolute \
                             path); give a network host before the `/database` instead",
                        ));
                    }
                    url.host = PgHost::Socket(PathBuf::from(v));
                }
                "options" => url.options = Some(v),
                "application_name" => url.application_name = Some(v),
                "connect_timeout" => {
                    let secs: u64 = v.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                        invalid("`connect_timeout` is a whole number of seconds, at least 1")
                    })?;
                    url.connect_timeout = Duration::from_secs(secs);
                }
                "sslmode" => match v.as_str() {
                    "disable" | "allow" | "prefer" => {}
                    _ => {
                        return Err(invalid(
                            "agora connects to PostgreSQL without TLS, so `sslmode` may only \
                             be disable, allow or prefer; use loopback, a Unix socket or a \
                             trusted network",
                        ));
                    }
                },
                _ => {
                    let shown: String = k.chars().take(30).collect();
                    return Err(invalid(format!(
                        "unknown query parameter `{shown}` in the PostgreSQL URL (allowed: \
                         {PARAMS})"
                    )));
                }
            }
        }
        Ok(url)
    }

    /// The same database with agora's tables in `schema` (a PostgreSQL schema, which must
    /// exist): `-c search_path=schema` added to the connection's options.
    pub fn in_schema(&self, schema: &str) -> PostgresUrl {
        let mut url = self.clone();
        let path = format!("-c search_path={schema}");
        url.options = Some(match &self.options {
            Some(o) if !o.trim().is_empty() => format!("{o} {path}"),
            _ => path,
        });
        url
    }

    /// The host (or socket folder) and the password: what logs and errors must not show.
    pub(super) fn secrets(&self) -> Vec<String> {
        let mut out = Vec::new();
        match &self.host {
            PgHost::Tcp(h) => out.push(h.clone()),
            PgHost::Socket(p) => out.push(p.display().to_string()),
        }
        out.extend(self.password.clone());
        out
    }
}

/// `host`, `host:port`, `[ipv6]` or `[ipv6]:port`.
fn split_host_port(s: &str) -> StoreResult<(String, u16)> {
    let port_of = |p: &str| -> StoreResult<u16> {
        p.parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| invalid("the port is not a number from 1 to 65535"))
    };
    if let Some(v6) = s.strip_prefix('[') {
        let Some((host, after)) = v6.split_once(']') else {
            return Err(invalid("an IPv6 host needs its closing `]`"));
        };
        let port = match after.strip_prefix(':') {
            Some(p) => port_of(p)?,
            None if after.is_empty() => 5432,
            None => return Err(invalid("unexpected text after the IPv6 host")),
        };
        return Ok((host.to_string(), port));
    }
    match s.rsplit_once(':') {
        Some((h, p)) => Ok((decode(h, "host")?, port_of(p)?)),
        None => Ok((decode(s, "host")?, 5432)),
    }
}

/// Percent-decode one part of a URL (`what` names it in errors; the value is never shown).
fn decode(s: &str, what: &str) -> StoreResult<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(b) = hex else {
                return Err(invalid(format!(
                    "the {what} has a `%` not followed by two hex digits (write `%25` for `%`)"
                )));
            };
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| invalid(format!("the {what} is not UTF-8 once percent-decoded")))
}

/// Percent-encode what would not read back (for display).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || "-._~".contains(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(s: &str) -> PostgresUrl {
        match StorageUrl::parse(s).unwrap() {
            StorageUrl::Postgres(u) => u,
            other => panic!("{other:?}"),
        }
    }

    fn err(s: &str) -> String {
        StorageUrl::parse(s).unwrap_err().to_string()
    }

    #[test]
    fn paths_and_sqlite_urls_name_sqlite_files() {
        let p = |s: &str| {
            StorageUrl::parse(s)
                .unwrap()
                .sqlite_path()
                .unwrap()
                .to_owned()
        };
        assert_eq!(p("agora.db"), PathBuf::from("agora.db"));
        assert_eq!(p("dir/x.db"), PathBuf::from("dir/x.db"));
        assert_eq!(p("/abs/x.db"), PathBuf::from("/abs/x.db"));
        assert_eq!(p("sqlite:///x.db"), PathBuf::from("x.db"));
        assert_eq!(p("sqlite:////tmp/x.db"), PathBuf::from("/tmp/x.db"));
        assert_eq!(p("SQLite:///x.db"), PathBuf::from("x.db"));
        assert_eq!(
            StorageUrl::parse("sqlite:///x.db").unwrap().to_string(),
            "x.db"
        );
        for bad in ["", "  ", "sqlite:///", "sqlite://x.db", "sqlite://"] {
            let e = err(bad);
            assert!(e.starts_with("invalid `storage`"), "{bad}: {e}");
        }
    }

    #[test]
    fn postgres_urls_parse_with_defaults_and_percent_encoding() {
        let u = pg("postgresql://ann:s%40cret@db.example:6543/studies");
        assert_eq!(u.user, "ann");
        assert_eq!(u.password.as_deref(), Some("s@cret"));
        assert!(u.host == PgHost::Tcp("db.example".into()));
        assert_eq!((u.port, u.dbname.as_str()), (6543, "studies"));
        let u = pg("postgres://ann@/");
        assert!(u.host == PgHost::Tcp("localhost".into()));
        assert_eq!(
            (u.port, u.dbname.as_str(), u.password.clone()),
            (5432, "ann", None)
        );
        // An unencoded `/`, `?` or `@` in the password still parses (the last `@` ends it).
        let u = pg("postgresql://ann:a/b?c@d@127.0.0.1/x?connect_timeout=3");
        assert_eq!(u.password.as_deref(), Some("a/b?c@d"));
        assert!(u.host == PgHost::Tcp("127.0.0.1".into()));
        assert_eq!(u.connect_timeout, Duration::from_secs(3));
        let u = pg("postgresql://ann:pw@[::1]:5433/x");
        assert!(u.host == PgHost::Tcp("::1".into()));
        assert_eq!(u.port, 5433);
        let u = pg(
            "postgresql://ann@/x?host=/var/run/postgresql&options=-c%20search_path%3Dt1\
             &application_name=w1&sslmode=disable",
        );
        assert!(u.host == PgHost::Socket("/var/run/postgresql".into()));
        assert_eq!(u.options.as_deref(), Some("-c search_path=t1"));
        assert_eq!(u.application_name.as_deref(), Some("w1"));
    }

    #[test]
    fn display_and_debug_hide_the_password_and_the_host() {
        for s in [
            "postgresql://ann:hunter2@secret-host.internal:5433/studies",
            "postgres://ann:hunter2@10.1.2.3/studies?options=-c%20x%3D1",
        ] {
            let u = StorageUrl::parse(s).unwrap();
            for shown in [u.to_string(), format!("{u:?}"), format!("{u:#?}")] {
                assert!(!shown.contains("hunter2"), "{shown}");
                assert!(!shown.contains("secret-host") && !shown.contains("10.1.2.3"));
                assert!(!shown.contains("5433"), "{shown}");
            }
            assert_eq!(u.to_string(), "postgresql://ann:***@***/studies");
        }
        let u = StorageUrl::parse("postgresql://a%20b@h/d%2Fx").unwrap_err();
        assert!(u.to_string().contains("database"), "{u}");
        let u = StorageUrl::parse("postgresql://a%20b@h/d").unwrap();
        assert_eq!(u.to_string(), "postgresql://a%20b@***/d");
    }

    #[test]
    fn bad_urls_name_storage_and_never_repeat_secrets() {
        let cases = [
            (
                "mysql://u:hunter2@secret-host/db",
                "unknown scheme `mysql://`",
            ),
            ("postgresql://:hunter2@secret-host/db", "needs a user"),
            ("postgresql://secret-host/db", "needs a user"),
            ("postgresql://u:hunter2@secret-host:99999/db", "port"),
            ("postgresql://u:hunter2@secret-host:hunter2/db", "port"),
            (
                "postgresql://u:hun%zzter2@secret-host/db",
                "password has a `%`",
            ),
            (
                "postgresql://u:hunter2@secret-host/db?sslmode=require",
                "without TLS",
            ),
            (
                "postgresql://u:hunter2@secret-host/db?password=x",
                "unknown query parameter",
            ),
            (
                "postgresql://u:hunter2@secret-host/db?connect_timeout=0",
                "connect_timeout",
            ),
            ("postgresql://u:hunter2@[::1/db", "IPv6"),
            (
                "postgresql://u:hunter2@x/db?host=secret-host",
                "Unix-socket",
            ),
        ];
        for (s, needle) in cases {
            let e = err(s);
            assert!(e.starts_with("invalid `storage`: "), "{s}: {e}");
            assert!(e.contains(needle), "{s}: `{needle}` not in {e}");
            assert!(
                e.contains("postgresql://user:password@host:port/database"),
                "{e}"
            );
            assert!(!e.contains("hunter2") && !e.contains("secret-host"), "{e}");
        }
    }
}
