//! Sweeps with real `agora` processes on PostgreSQL: a grid split over three workers, one
//! of them killed (SIGKILL) while it computes, gives files identical to a single process's
//! (timings aside); the killed worker's runs are finished by others, once; a worker that
//! comes after the end computes nothing; `agora report --sweep` assembles the same files;
//! bad input is refused with a clear error.
//!
//! Each test works in a fresh schema of the server `AGORA_TEST_POSTGRES` names; without one
//! the tests say they were skipped and pass, except under CI (`CI` set), where they fail.

use agora_experiments::RunSpec;
use agora_experiments::sweep::SweepCommand;
use agora_study::live::StorageUrl;
use agora_study::sweep::{CellState, SweepStore};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn postgres_url() -> Option<String> {
    agora_study::live::test_postgres_url()
}

/// A fresh schema on the test server, dropped at the end.
struct Schema {
    admin: ::postgres::Client,
    name: String,
    url: String,
}

impl Schema {
    fn new(test: &str) -> Option<Schema> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let base = postgres_url()?;
        let mut admin = ::postgres::Client::connect(&base, ::postgres::NoTls).unwrap();
        let name = format!(
            "cli_sweep_{}_{}_{test}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
            ))
            .unwrap();
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options=-c%20search_path%3D{name}");
        Some(Schema { admin, name, url })
    }

    /// The server's connections named `application_name`.
    fn connections(&mut self, application_name: &str) -> i64 {
        self.admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&application_name],
            )
            .unwrap()
            .get(0)
    }

    fn store(&self) -> SweepStore {
        SweepStore::open(&StorageUrl::parse(&self.url).unwrap()).unwrap()
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name);
        let _ = self.admin.batch_execute(&sql);
    }
}

/// `agora ARGS` (AGORA_STORAGE and AGORA_DB cleared), waited for.
fn agora(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agora"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .env_remove("AGORA_DB")
        .env_remove("AGORA_STORAGE")
        .output()
        .expect("run agora");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `agora ARGS` in the background, its output to files in `log`.
fn spawn(args: &[String], log: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_agora"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .env_remove("AGORA_DB")
        .env_remove("AGORA_STORAGE")
        .stdout(std::fs::File::create(log.with_extension("out")).unwrap())
        .stderr(std::fs::File::create(log.with_extension("err")).unwrap())
        .spawn()
        .expect("start agora")
}

/// The grid: 2 methods × 2 problems × 4 seeds, GP runs long enough that a worker is caught
/// in the middle of one.
const GRID: [&str; 8] = [
    "--methods",
    "gp-logei,gp-ei",
    "--problems",
    "branin,hartmann6",
    "--seeds",
    "4",
    "--budget",
    "160",
];

fn run_args(out: &Path, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["run"].iter().chain(&GRID).map(|s| s.to_string()).collect();
    v.push("--out".into());
    v.push(out.display().to_string());
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// Every file under `dir` with its contents, timings blanked: the `*seconds` fields of
/// JSON and JSON-lines files, the `*_seconds` columns of CSV files and the `ms / query`
/// column of markdown tables. Everything else is compared byte for byte.
fn files_without_timings(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            for (n, t) in files_without_timings(&p) {
                out.insert(format!("{name}/{n}"), t);
            }
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            // Binary files (PNG figures) byte for byte.
            out.insert(name, format!("{:?}", std::fs::read(&p).unwrap()));
            continue;
        };
        let text = match p.extension().and_then(|x| x.to_str()) {
            Some("jsonl") => text
                .lines()
                .map(json_without_timings)
                .collect::<Vec<_>>()
                .join("\n"),
            Some("json") => json_without_timings(&text),
            Some("csv") => csv_without_timings(&text),
            Some("md") => md_without_timings(&text),
            _ => text,
        };
        out.insert(name, text);
    }
    out
}

fn json_without_timings(text: &str) -> String {
    fn blank(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if k.ends_with("seconds") {
                        *x = Value::Null;
                    } else {
                        blank(x);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(blank),
            _ => {}
        }
    }
    let mut v: Value = serde_json::from_str(text).unwrap();
    blank(&mut v);
    serde_json::to_string(&v).unwrap()
}

fn csv_without_timings(text: &str) -> String {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let keep: Vec<bool> = header.iter().map(|h| !h.ends_with("_seconds")).collect();
    let mut out = vec![header.join(",")];
    for l in lines {
        // Timing columns come before the quoted points, so a plain split finds them.
        let cells: Vec<&str> = l.splitn(header.len(), ',').collect();
        out.push(
            cells
                .iter()
                .zip(keep.iter().chain(std::iter::repeat(&true)))
                .map(|(c, k)| if *k { *c } else { "_" })
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    out.join("\n")
}

fn md_without_timings(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with('|') {
                // The summary table's last column is the time per query.
                let cells: Vec<&str> = l.trim_end_matches('|').split('|').collect();
                cells[..cells.len() - 1].join("|")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_same_files(got: &Path, want: &BTreeMap<String, String>, who: &str) {
    let got = files_without_timings(got);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{who}: other files"
    );
    for (name, text) in want {
        assert!(
            got[name] == *text,
            "{who}: {name} differs from the single process's"
        );
    }
}

/// Child processes killed when dropped, so a failing test leaves no worker running (or
/// frozen, holding locks the schema's drop would wait for).
struct Kids(Vec<Child>);

impl Drop for Kids {
    fn drop(&mut self) {
        for k in &mut self.0 {
            let _ = k.kill();
            let _ = k.wait();
        }
    }
}

/// Sends `SIG` (a name such as `STOP`) to a process.
fn signal(sig: &str, pid: u32) {
    let st = Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill -{sig} {pid}");
}

/// The pid in a worker id `HOST-PID-RANDOM`.
fn pid_of(worker: &str) -> Option<u32> {
    let parts: Vec<&str> = worker.rsplitn(3, '-').collect();
    parts.get(1)?.parse().ok()
}

#[test]
fn a_sweep_split_over_three_workers_one_killed_reports_as_one_process() {
    let Some(mut db) = Schema::new("kill") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = |s: &str| -> PathBuf { tmp.path().join(s) };

    // The single process.
    let t0 = Instant::now();
    let (ok, so, se) = agora(
        &run_args(&dir("single"), &["--threads", "2"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(ok, "{so}\n{se}");
    let single = t0.elapsed();
    let want = files_without_timings(&dir("single"));
    assert!(want.contains_key("records.jsonl") && want.contains_key("regret_branin.svg"));

    // Three workers, one killed while it holds a run. Each names its connections, so the
    // test can tell when the killed one's are gone. The lease is long enough that a busy
    // machine does not let a healthy worker's lapse.
    let (schema, url) = (db.name.clone(), db.url.clone());
    let app = move |i: usize| format!("{schema}_w{i}");
    let worker = |i: usize| {
        run_args(
            &dir(&format!("w{i}")),
            &[
                "--worker",
                "--sweep",
                "grid",
                "--storage",
                &format!("{url}&application_name={}", app(i)),
                "--lease",
                "10s",
                "--threads",
                "1",
            ],
        )
    };
    let t0 = Instant::now();
    let mut kids = Kids(
        (0..3)
            .map(|i| spawn(&worker(i), &dir(&format!("w{i}"))))
            .collect(),
    );
    let kids = &mut kids.0;
    let store = db.store();
    let deadline = Instant::now() + Duration::from_secs(600);
    let (victim, held) = loop {
        assert!(
            Instant::now() < deadline,
            "no worker was ever caught holding a run"
        );
        let cells = store.cells("grid").unwrap_or_default();
        let done = cells.iter().filter(|c| c.state == CellState::Done).count();
        let running: Vec<_> = cells
            .iter()
            .filter(|c| c.state == CellState::Running)
            .collect();
        // Mid-way: some runs done, and a worker in the middle of another.
        if done >= 2
            && let Some(c) = running.first()
            && let Some(w) = c.worker.clone()
            && let Some(k) = kids.iter().position(|k| Some(k.id()) == pid_of(&w))
        {
            // Freeze it, then read again: it may have finished that run since the read above.
            // A frozen worker sends nothing; the pause lets a statement already sent commit.
            signal("STOP", kids[k].id());
            std::thread::sleep(Duration::from_millis(300));
            let holding = |store: &SweepStore| -> Vec<(u32, usize)> {
                store
                    .cells("grid")
                    .unwrap_or_default()
                    .iter()
                    .filter(|c| c.state == CellState::Running && c.worker.as_deref() == Some(&w))
                    .map(|c| (c.phase, c.cell))
                    .collect()
            };
            if holding(&store).is_empty() {
                signal("CONT", kids[k].id());
            } else {
                assert!(
                    db.connections(&app(k)) > 0,
                    "the workers name their connections"
                );
                kids[k].kill().unwrap(); // SIGKILL
                kids[k].wait().unwrap();
                // A statement it sent before it froze commits before its connection ends:
                // read what it holds once the server has dropped its connections.
                while db.connections(&app(k)) > 0 {
                    assert!(
                        Instant::now() < deadline,
                        "the killed worker's connections stay"
                    );
                    std::thread::sleep(Duration::from_millis(50));
                }
                let held = holding(&store);
                break (w, held);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    for (i, k) in kids.iter_mut().enumerate() {
        if Some(k.id()) == pid_of(&victim) {
            continue;
        }
        while k.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "worker {i} did not finish");
            std::thread::sleep(Duration::from_millis(100));
        }
        let st = k.wait().unwrap();
        let err = std::fs::read_to_string(dir(&format!("w{i}")).with_extension("err")).unwrap();
        assert!(st.success(), "worker {i} failed:\n{err}");
        assert_same_files(&dir(&format!("w{i}")), &want, &format!("worker {i}"));
    }
    let three = t0.elapsed();

    // The killed worker's runs were finished by others, each once; every run is done once.
    let cells = store.cells("grid").unwrap();
    assert_eq!(cells.len(), 16);
    assert!(cells.iter().all(|c| c.state == CellState::Done));
    assert!(!held.is_empty());
    for (phase, cell) in &held {
        let c = cells
            .iter()
            .find(|c| (c.phase, c.cell) == (*phase, *cell))
            .unwrap();
        assert_eq!(c.claims, 2, "{c:?}");
        assert!(c.done_by.as_deref().is_some_and(|w| w != victim), "{c:?}");
    }
    let others = cells.iter().filter(|c| !held.contains(&(c.phase, c.cell)));
    assert!(others.into_iter().all(|c| c.claims == 1), "{cells:?}");

    // A worker that comes after the end computes nothing and writes the same files.
    let late = worker(3);
    let (ok, so, se) = agora(&late.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "{so}\n{se}");
    assert!(se.contains("computed 0 runs of sweep `grid`"), "{se}");
    assert_same_files(&dir("w3"), &want, "the late worker");
    assert_eq!(store.cells("grid").unwrap(), cells);

    // The report from the store alone.
    let out = dir("report");
    let (ok, so, se) = agora(&[
        "report",
        "--sweep",
        "grid",
        "--storage",
        &db.url,
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{so}\n{se}");
    assert_same_files(&out, &want, "agora report --sweep");
    println!(
        "single process {:.1} s; three workers (one killed, lease 10 s) {:.1} s",
        single.as_secs_f64(),
        three.as_secs_f64()
    );
}

/// `agora reproduce` goes through the same runner: a suite split over two workers writes
/// the files one process writes.
#[test]
fn a_reproduce_suite_split_over_two_workers_writes_the_same_files() {
    let Some(db) = Schema::new("suite") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = |s: &str| tmp.path().join(s);
    let args = |out: &Path| -> Vec<String> {
        [
            "reproduce",
            "preference",
            "--quick",
            "--out",
            out.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let single = args(&dir("single"));
    let (ok, so, se) = agora(&single.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "{so}\n{se}");
    let want = files_without_timings(&dir("single"));
    assert!(
        want.contains_key("preference/records.jsonl"),
        "{:?}",
        want.keys()
    );
    let mut kids: Vec<Child> = (0..2)
        .map(|i| {
            let mut a = args(&dir(&format!("w{i}")));
            a.extend(
                [
                    "--worker",
                    "--sweep",
                    "pref",
                    "--storage",
                    &db.url,
                    "--threads",
                    "1",
                ]
                .map(String::from),
            );
            spawn(&a, &dir(&format!("w{i}")))
        })
        .collect();
    for (i, k) in kids.iter_mut().enumerate() {
        let st = k.wait().unwrap();
        let err = std::fs::read_to_string(dir(&format!("w{i}")).with_extension("err")).unwrap();
        assert!(st.success(), "worker {i} failed:\n{err}");
        assert_same_files(&dir(&format!("w{i}")), &want, &format!("worker {i}"));
    }
    let cells = db.store().cells("pref").unwrap();
    assert_eq!(cells.len(), 4);
    assert!(
        cells
            .iter()
            .all(|c| c.state == CellState::Done && c.claims == 1)
    );
}

#[test]
fn bad_sweeps_are_refused_with_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    let out = out.to_str().unwrap();
    let small = [
        "run",
        "--methods",
        "random",
        "--problems",
        "branin",
        "--seeds",
        "2",
        "--budget",
        "3",
        "--out",
        out,
    ];
    fn with<'a>(small: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        small.iter().chain(extra).copied().collect()
    }

    // No server needed for these.
    let db = tmp.path().join("s.db");
    let (ok, _, se) = agora(&with(
        &small,
        &[
            "--worker",
            "--sweep",
            "s",
            "--storage",
            db.to_str().unwrap(),
        ],
    ));
    assert!(!ok && se.contains("need a PostgreSQL storage"), "{se}");
    assert!(!db.exists(), "a SQLite file was made");
    let (ok, _, se) = agora(&with(&small, &["--lease", "5s"]));
    assert!(!ok && se.contains("--worker"), "{se}");
    let (ok, _, se) = agora(&with(&small, &["--worker"]));
    assert!(!ok && se.contains("--sweep"), "{se}");
    let (ok, _, se) = agora(&with(&small, &["--worker", "--sweep", "s"]));
    assert!(
        !ok && se.contains("invalid `storage`") && se.contains("PostgreSQL"),
        "{se}"
    );
    let (ok, _, se) = agora(&with(
        &small,
        &[
            "--worker",
            "--sweep",
            "s",
            "--storage",
            "postgresql://u:pw@h/db",
            "--lease",
            "3 weeks",
        ],
    ));
    assert!(!ok && se.contains("allowed: ms, s, m, h"), "{se}");
    assert!(!se.contains("panicked"), "{se}");

    let Some(db) = Schema::new("bad") else {
        return;
    };
    let url = db.url.as_str();
    let (ok, so, se) = agora(&with(
        &small,
        &["--worker", "--sweep", "s", "--storage", url],
    ));
    assert!(ok, "{so}\n{se}");
    // Another command on the same sweep.
    let mut other = with(&small, &["--worker", "--sweep", "s", "--storage", url]);
    other[8] = "4";
    let (ok, _, se) = agora(&other);
    assert!(!ok && se.contains("was started by another command"), "{se}");
    assert!(
        !se.contains("agora-test-pw") && !se.contains("panicked"),
        "{se}"
    );
    // Reports: an unknown sweep, an incomplete one.
    let (ok, _, se) = agora(&["report", "--sweep", "nope", "--storage", url, out]);
    assert!(!ok && se.contains("unknown sweep `nope`; known: s"), "{se}");
    let store = db.store();
    let spec = RunSpec {
        methods: vec!["random".into()],
        problems: vec!["branin".into()],
        seeds: vec![0, 1],
        budget: 3,
        noise_std: 0.0,
    };
    store
        .join("half", &SweepCommand::Run { spec }.text())
        .unwrap();
    let (ok, _, se) = agora(&["report", "--sweep", "half", "--storage", url, out]);
    assert!(!ok && se.contains("sweep `half` is not complete"), "{se}");
}
