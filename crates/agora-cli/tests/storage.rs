//! Naming the store: `--storage` (or `--db`), `AGORA_STORAGE` (or `AGORA_DB`), storage URLs
//! for SQLite and PostgreSQL; bad URLs are refused without showing secrets. The PostgreSQL
//! test runs when `AGORA_TEST_POSTGRES` names a server (`bash tools/postgres start`), says
//! it was skipped otherwise, and fails under CI without one.

use serde_json::Value;
use std::process::Command;

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// `agora ARGS` with the given environment (AGORA_STORAGE and AGORA_DB cleared first).
fn agora(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agora"));
    c.args(args)
        .env("RUST_BACKTRACE", "0")
        .env_remove("AGORA_DB")
        .env_remove("AGORA_STORAGE");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run agora");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn ok(args: &[&str], env: &[(&str, &str)]) -> String {
    let r = agora(args, env);
    assert!(r.ok, "agora {args:?} failed:\n{}\n{}", r.stdout, r.stderr);
    r.stdout
}

fn create(name: &str, storage: &str) -> String {
    ok(
        &[
            "study",
            "create",
            name,
            "--param",
            "x:real:0:1",
            "--param",
            "y:real:-1:1",
            "--storage",
            storage,
        ],
        &[],
    )
}

#[test]
fn every_way_of_naming_a_sqlite_file_reaches_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.db");
    let path = file.to_str().unwrap();
    let other = dir.path().join("other.db");
    let other = other.to_str().unwrap();
    // sqlite:////absolute/path (SQLAlchemy's four slashes) makes it.
    let out = create("mugs", &format!("sqlite:///{path}"));
    assert!(
        out.contains(&format!("created study `mugs` in {path}")),
        "{out}"
    );
    let listed = |args: &[&str], env: &[(&str, &str)]| ok(args, env).contains("mugs");
    assert!(listed(&["study", "list", "--storage", path], &[]));
    assert!(listed(&["study", "list", "--db", path], &[]));
    assert!(listed(&["study", "list"], &[("AGORA_STORAGE", path)]));
    assert!(listed(&["study", "list"], &[("AGORA_DB", path)]));
    // AGORA_STORAGE comes before AGORA_DB; a flag before both.
    assert!(listed(
        &["study", "list"],
        &[("AGORA_STORAGE", path), ("AGORA_DB", other)]
    ));
    assert!(listed(
        &["study", "list", "--storage", path],
        &[("AGORA_STORAGE", other)]
    ));
    assert!(!dir.path().join("other.db").exists());
    // A relative sqlite:/// URL is relative to the working folder.
    let r = Command::new(env!("CARGO_BIN_EXE_agora"))
        .args(["study", "list", "--storage", "sqlite:///s.db"])
        .current_dir(dir.path())
        .env_remove("AGORA_STORAGE")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&r.stdout).contains("mugs"));
    // `serve` takes the same option.
    let help = ok(&["serve", "--help"], &[]);
    assert!(
        help.contains("--storage") && help.contains("AGORA_STORAGE"),
        "{help}"
    );
}

#[test]
fn a_bad_storage_url_is_refused_naming_storage_and_showing_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    for (url, needle) in [
        (
            "mysql://ann:hunter2@db.internal/x",
            "unknown scheme `mysql://`",
        ),
        (
            "postgresql://ann:hunter2@db.internal/x?sslmode=require",
            "without TLS",
        ),
        ("postgresql://ann:hunter2@db.internal:http/x", "port"),
        ("sqlite://x.db", "three slashes"),
    ] {
        for args in [
            vec!["study", "list", "--storage", url],
            vec!["ask", "mugs", "--storage", url],
            vec!["serve", "--storage", url, "--addr", "127.0.0.1:1"],
        ] {
            let r = Command::new(env!("CARGO_BIN_EXE_agora"))
                .args(&args)
                .current_dir(dir.path())
                .env("RUST_BACKTRACE", "0")
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&r.stderr);
            assert!(!r.status.success(), "{args:?}");
            assert!(
                err.contains("invalid `storage`") && err.contains(needle),
                "{err}"
            );
            assert!(
                !err.contains("hunter2") && !err.contains("db.internal"),
                "{err}"
            );
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A fresh schema on the test server, as a storage URL, or `None` when there is no server.
fn postgres_schema(name: &str) -> Option<(postgres::Client, String, String)> {
    let base = agora_study::live::test_postgres_url()?;
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).unwrap();
    let schema = format!("cli_{name}_{}", std::process::id());
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .unwrap();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
    Some((admin, schema, url))
}

/// The same study driven through the CLI on PostgreSQL and on SQLite asks the same
/// queries: one protocol, whichever store.
#[test]
fn a_study_on_postgres_runs_from_the_cli_exactly_as_on_sqlite() {
    let Some((mut admin, schema, pg)) = postgres_schema("same") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = dir.path().join("s.db");
    let sqlite = sqlite.to_str().unwrap();
    let out = create("mugs", &pg);
    assert!(
        out.contains("created study `mugs` in postgresql://"),
        "{out}"
    );
    assert!(out.contains(":***@***/"), "{out}");
    if let Some(pw) = pg
        .split_once("://")
        .and_then(|(_, r)| r.rsplit_once('@'))
        .and_then(|(ui, _)| ui.split_once(':'))
        .map(|(_, pw)| pw)
    {
        assert!(!out.contains(&format!(":{pw}@")), "{out}");
    }
    create("mugs", sqlite);
    for k in 0..6 {
        let views: Vec<Value> = [&pg, sqlite]
            .iter()
            .map(|s| serde_json::from_str(&ok(&["ask", "mugs", "--json", "--storage", s], &[])))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(views[0]["options"], views[1]["options"], "query {k}");
        let winner = if k % 3 == 0 { "A" } else { "B" };
        for s in [&pg, sqlite] {
            ok(&["tell", "mugs", "--winner", winner, "--storage", s], &[]);
        }
    }
    let status = ok(&["status", "mugs", "--json", "--storage", &pg], &[]);
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["answered"], 6);
    assert!(ok(&["study", "list", "--storage", &pg], &[]).contains("6 answered"));
    // A database without agora's tables is "no studies", and a command on it fails clearly.
    let empty = pg.replace(&schema, &format!("{schema}_none"));
    assert!(ok(&["study", "list", "--storage", &empty], &[]).contains("no studies yet"));
    let r = agora(&["ask", "mugs", "--storage", &empty], &[]);
    assert!(
        !r.ok && r.stderr.contains("no studies in postgresql://"),
        "{}",
        r.stderr
    );
    let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
}
