//! The study commands under 10,000 generated argument vectors: valid commands and flags
//! mixed with garbage values (NaN, huge numbers, unicode, control characters, empty strings,
//! wrong ids, foreign flags). Each runs in process through [`run`] against a fresh copy of
//! a small study file. No case may panic; every error must say something; an error must
//! leave every stored log as it was.

use super::run;
use agora_study::live::{SqliteStore, Store};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// The studies in the template file: a pairs study, a Social BO meeting, a BO study and a
/// BOAP study, each still in its initial random phase so that one more answer is cheap.
const STUDIES: [&str; 4] = ["p", "g", "b", "x"];

/// What a flag's value is drawn from.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A switch: no value.
    Switch,
    Choice,
    Choices,
    Number,
    Numbers,
    Participant,
    Participants,
    OutFile,
    InFile,
    Param,
    Method,
    Knob,
    Format,
    Text,
}

type Flags = Vec<(&'static str, Kind)>;

#[derive(Debug, Clone)]
struct Command {
    words: &'static [&'static str],
    /// Whether it takes a study name, and whether that name should usually be a new one.
    named: bool,
    creates: bool,
    /// Flag sets that make a well-formed command (one is drawn, all its flags given).
    scenarios: Vec<Flags>,
    /// Flags that may be added (0 to 2 of them).
    optional: Flags,
}

fn commands() -> Vec<Command> {
    use Kind::*;
    let c = |words, named, scenarios, optional| Command {
        words,
        named,
        creates: false,
        scenarios,
        optional,
    };
    let tell = c(
        &["tell"],
        true,
        vec![
            vec![("--winner", Choice)],
            vec![("--tie", Switch)],
            vec![("--as", Participant), ("--vote", Choice)],
            vec![("--votes", Choices)],
            vec![("--values", Numbers)],
            vec![("--as", Participant), ("--rating", Number)],
            vec![("--close", Switch)],
        ],
        vec![
            ("--query", Number),
            ("--as", Participant),
            ("--tie", Switch),
        ],
    );
    let create = Command {
        words: &["study", "create"],
        named: true,
        creates: true,
        scenarios: vec![
            vec![("--param", Param)],
            vec![("--param", Param), ("--param", Param)],
            vec![("--param", Param), ("--method", Method), ("--set", Knob)],
            vec![
                ("--param", Param),
                ("--method", Method),
                ("--participants", Participants),
            ],
            vec![("--space", InFile)],
            vec![("--spec", InFile)],
        ],
        optional: vec![
            ("--param", Param),
            ("--set", Knob),
            ("--participants", Participants),
            ("--seed", Number),
            ("--description", Text),
            ("--url", Text),
        ],
    };
    let ask = c(
        &["ask"],
        true,
        vec![
            vec![],
            vec![("--json", Switch)],
            vec![("--as", Participant)],
        ],
        vec![("--json", Switch), ("--as", Participant)],
    );
    // Repeated entries weight the commands people use most.
    vec![
        tell.clone(),
        tell.clone(),
        tell,
        ask.clone(),
        ask,
        create.clone(),
        create,
        c(
            &["status"],
            true,
            vec![vec![], vec![("--json", Switch)]],
            vec![],
        ),
        c(
            &["best"],
            true,
            vec![vec![], vec![("--json", Switch)]],
            vec![],
        ),
        c(
            &["export"],
            true,
            vec![
                vec![("--format", Format)],
                vec![("--format", Format), ("--out", OutFile)],
            ],
            vec![],
        ),
        c(&["plot"], true, vec![vec![("--out", OutFile)]], vec![]),
        c(&["study", "list"], false, vec![vec![]], vec![]),
        c(
            &["study", "tokens"],
            true,
            vec![vec![], vec![("--url", Text)]],
            vec![],
        ),
        c(
            &["study"],
            false,
            vec![vec![], vec![("--help", Switch)]],
            vec![],
        ),
        c(
            &["frobnicate"],
            true,
            vec![vec![]],
            vec![("--json", Switch)],
        ),
    ]
}

/// Flags of other commands, given where they do not belong.
fn foreign() -> Flags {
    use Kind::*;
    vec![
        ("--json", Switch),
        ("--winner", Choice),
        ("--close", Switch),
        ("--format", Format),
        ("--out", OutFile),
        ("--method", Method),
        ("--bogus", Text),
        ("--db", Text),
        ("-x", Switch),
    ]
}

/// Values nobody should send: NaN, infinities, huge and tiny numbers, unicode, controls.
fn garbage() -> BoxedStrategy<String> {
    prop_oneof![
        select(vec![
            "NaN",
            "nan",
            "-NaN",
            "inf",
            "-inf",
            "1e308",
            "-1e308",
            "1e309",
            "4.9e-324",
            "18446744073709551616",
            "-9223372036854775809",
            "99999999999999999999999",
            "-1",
            "0",
            "",
            " ",
            ",",
            ",,",
            "温度",
            "🙂",
            "tie,",
            "--",
            "-",
            "=",
            "a=b=c",
            "\u{0}",
            "\u{202e}",
        ])
        .prop_map(String::from),
        proptest::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter),
        any::<f64>().prop_map(|x| x.to_string()),
        any::<i64>().prop_map(|x| x.to_string()),
        any::<u64>().prop_map(|x| x.to_string()),
    ]
    .boxed()
}

/// Mostly plausible values of `kind`, sometimes garbage.
fn value(kind: Kind, dir: &Path) -> BoxedStrategy<String> {
    let plausible: BoxedStrategy<String> = match kind {
        Kind::Switch => return Just(String::new()).boxed(),
        Kind::Choice => select(vec![
            "A", "B", "a", "b", "0", "1", "2", "C", "tie", "TIE", "Z",
        ])
        .prop_map(String::from)
        .boxed(),
        Kind::Choices => {
            proptest::collection::vec(select(vec!["A", "B", "0", "1", "tie", "C", ""]), 0..5)
                .prop_map(|v| v.join(","))
                .boxed()
        }
        Kind::Number => prop_oneof![
            (0u64..12).prop_map(|x| x.to_string()),
            (-10.0..10.0f64).prop_map(|x| x.to_string()),
        ]
        .boxed(),
        Kind::Numbers => prop_oneof![
            2 => (-5.0..5.0f64).prop_map(|x| format!("{x:.3}")),
            1 => proptest::collection::vec((-5.0..5.0f64).prop_map(|x| format!("{x:.3}")), 0..5)
                .prop_map(|v| v.join(",")),
        ]
        .boxed(),
        Kind::Participant => select(vec!["ann", "bob", "cy", "zed", "Ann", ""])
            .prop_map(String::from)
            .boxed(),
        Kind::Participants => {
            proptest::collection::vec(select(vec!["ann", "bob", "cy", "dee", "ann", ""]), 0..8)
                .prop_map(|v| v.join(","))
                .boxed()
        }
        Kind::OutFile => {
            // Files are written only inside the temporary folder: garbage names lose their
            // separators and stay under `out/`.
            let dir = dir.join("out");
            return (
                prop_oneof![4 => "[a-zA-Z0-9_ é温-]{0,8}".boxed(), 1 => garbage()],
                select(vec![".svg", ".png", ".SVG", ".csv", ".json", ".txt", ""]),
            )
                .prop_map(move |(stem, ext)| {
                    let stem: String = stem
                        .chars()
                        .map(|c| {
                            if matches!(c, '/' | '\\' | '\0') {
                                '_'
                            } else {
                                c
                            }
                        })
                        .collect();
                    dir.join(format!("{stem}{ext}")).display().to_string()
                })
                .boxed();
        }
        Kind::InFile => {
            let files: Vec<String> = [
                "space.toml",
                "space.json",
                "space_bad.toml",
                "spec.toml",
                "spec.json",
                "spec_bad.json",
                "spec_nan.json",
                "missing.toml",
                "",
            ]
            .iter()
            .map(|f| dir.join(f).display().to_string())
            .collect();
            select(files).boxed()
        }
        Kind::Param => prop_oneof![
            2 => select(vec![
                "x:real:0:1",
                "temperature:real:15:35",
                "rate:log:1e-4:1e-1",
                "layers:int:1:8",
                "color:cat:red,green,blue",
                "温度:real:-5:5",
            ])
            .prop_map(String::from),
            1 => (
                select(vec!["x", "y", "温度", "", " x"]),
                select(vec!["real", "log", "int", "cat", "bogus", ""]),
                select(vec![
                    "0:1",
                    "1e-4:1e-1",
                    "red,green,blue",
                    "1:0",
                    "0:0",
                    "-1:1",
                    "NaN:1",
                    "0:inf",
                    "1:2:3",
                    "",
                    "a,a",
                    "-9223372036854775808:9223372036854775807",
                    "-1e308:1e308",
                ]),
            )
                .prop_map(|(n, t, s)| format!("{n}:{t}:{s}")),
        ]
        .boxed(),
        Kind::Method => select(vec![
            "bo",
            "pairs",
            "group-pairs",
            "social",
            "hpbo",
            "boap",
            "magic",
            "BO",
        ])
        .prop_map(String::from)
        .boxed(),
        Kind::Knob => (
            select(vec![
                "strategy",
                "rule",
                "variant",
                "rho",
                "q",
                "init_pairs",
                "lengthscale",
                "candidates",
                "acquisition",
                "anchors",
                "a",
                "properties",
                "init",
                "bogus",
                "",
            ]),
            select(vec![
                "0.5",
                "2",
                "0",
                "-1",
                "NaN",
                "1e400",
                "eubo",
                "sobol",
                "gp-ei",
                "sbo",
                "[\"stiffness\"]",
                "[[0.5, 0.5]]",
                "[]",
                "null",
                "{}",
                "",
            ]),
        )
            .prop_map(|(k, v)| format!("{k}={v}"))
            .boxed(),
        Kind::Format => select(vec!["csv", "json", "xml", "CSV"])
            .prop_map(String::from)
            .boxed(),
        Kind::Text => "\\PC{0,20}".boxed(),
    };
    prop_oneof![4 => plausible, 1 => garbage()].boxed()
}

/// One argument vector (without `--db`).
fn argv(dir: PathBuf) -> BoxedStrategy<Vec<String>> {
    let existing = select(STUDIES.to_vec()).prop_map(String::from);
    let fresh = select(vec!["new", "p2", "q-1", "x_9"]).prop_map(String::from);
    let odd = select(vec!["nosuch", "Bad Name", "P", ""]).prop_map(String::from);
    select(commands())
        .prop_flat_map(move |c| {
            let flag = |d: PathBuf| {
                move |(f, k): (&'static str, Kind)| (Just(f), Just(k), value(k, &d))
            };
            let scenario = select(c.scenarios.clone()).prop_flat_map({
                let d = dir.clone();
                move |flags| flags.into_iter().map(flag(d.clone())).collect::<Vec<_>>()
            });
            // `select` needs a choice; a command without optional flags draws none.
            let (pool, n) = if c.optional.is_empty() {
                (foreign(), 0..1)
            } else {
                (c.optional.clone(), 0..3)
            };
            // Most commands come without extra flags, so that many of them do their work.
            let optional = prop_oneof![
                2 => Just(Vec::new()),
                1 => proptest::collection::vec(select(pool).prop_flat_map(flag(dir.clone())), n),
            ];
            let foreign = proptest::option::weighted(
                0.1,
                select(foreign()).prop_flat_map(flag(dir.clone())),
            );
            let name = if c.creates {
                prop_oneof![6 => fresh.clone(), 1 => existing.clone(), 1 => odd.clone(), 1 => garbage()]
                    .boxed()
            } else {
                prop_oneof![12 => existing.clone(), 1 => odd.clone(), 1 => garbage()].boxed()
            };
            (
                Just(c),
                proptest::option::weighted(0.97, name),
                scenario,
                optional,
                foreign,
                proptest::option::weighted(0.05, garbage()),
            )
        })
        .prop_map(|(c, name, scenario, optional, foreign, extra)| {
            let mut args: Vec<String> = c.words.iter().map(|w| w.to_string()).collect();
            if c.named
                && let Some(n) = name
            {
                args.push(n);
            }
            for (f, k, v) in scenario.into_iter().chain(optional).chain(foreign) {
                args.push(f.to_string());
                if !matches!(k, Kind::Switch) {
                    args.push(v);
                }
            }
            args.extend(extra);
            args
        })
        .boxed()
}

fn ok(args: &[&str], db: &Path) -> String {
    let mut out = Vec::new();
    let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    v.extend(["--db".to_string(), db.display().to_string()]);
    if let Err(e) = run(v.clone(), &mut out) {
        panic!("fixture command {v:?} failed: {e:#}");
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The template study file and the input files the generated commands point at.
fn fixture(dir: &Path) -> PathBuf {
    let db = dir.join("template.db");
    ok(
        &[
            "study",
            "create",
            "p",
            "--param",
            "x:real:0:1",
            "--param",
            "y:log:1e-3:1",
            "--participants",
            "ann",
        ],
        &db,
    );
    ok(&["tell", "p", "--winner", "A"], &db);
    ok(&["tell", "p", "--tie"], &db);
    ok(
        &[
            "study",
            "create",
            "g",
            "--param",
            "t:real:15:35",
            "--param",
            "h:int:0:100",
            "--method",
            "social",
            "--participants",
            "ann,bob,cy",
            "--set",
            "candidates=16",
        ],
        &db,
    );
    ok(&["tell", "g", "--as", "ann", "--vote", "A"], &db);
    ok(
        &[
            "study",
            "create",
            "b",
            "--param",
            "t:real:15:35",
            "--method",
            "bo",
            "--set",
            "strategy=gp-ei",
        ],
        &db,
    );
    ok(&["tell", "b", "--values", "1.5"], &db);
    ok(
        &[
            "study",
            "create",
            "x",
            "--param",
            "w:real:0:1",
            "--param",
            "c:cat:red,blue",
            "--method",
            "boap",
            "--set",
            "properties=[\"stiffness\"]",
            "--set",
            "init=3",
            "--participants",
            "eve",
        ],
        &db,
    );
    let space_toml = "kind = \"box\"\n[[params]]\ntype = \"real\"\nname = \"x\"\nlo = 0\nhi = 1\n";
    let files = [
        ("space.toml", space_toml.to_string()),
        (
            "space.json",
            r#"{"params": [{"type": "integer", "name": "n", "lo": 1, "hi": 5}]}"#.into(),
        ),
        ("space_bad.toml", "kind = \"box\"\nparams = 3\n[[".into()),
        (
            "spec.toml",
            format!("method = {{ name = \"bo\", strategy = \"sobol\" }}\nseed = 3\n[space]\n{space_toml}"),
        ),
        (
            "spec.json",
            r#"{"name": "p", "space": {"params": [{"type": "real", "name": "x", "lo": 0, "hi": 1}]}, "method": {"name": "pairs"}}"#.into(),
        ),
        ("spec_bad.json", r#"{"space": 1, "method": {"name": "nope"}}"#.into()),
        (
            "spec_nan.json",
            r#"{"space": {"params": [{"type": "real", "name": "x", "lo": 1e999, "hi": 1}]}, "method": {"name": "pairs"}}"#.into(),
        ),
    ];
    for (f, text) in files {
        std::fs::write(dir.join(f), text).expect("write a fixture file");
    }
    std::fs::create_dir_all(dir.join("out")).expect("create the output folder");
    db
}

fn event_counts(db: &Path) -> Vec<usize> {
    let store = SqliteStore::open(db).expect("open the case file");
    STUDIES
        .iter()
        .map(|s| store.events(s, 0).map(|e| e.len()).unwrap_or(usize::MAX))
        .collect()
}

fn restore(template: &Path, db: &Path) {
    for ext in ["-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(ext);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
    std::fs::copy(template, db).expect("copy the template study file");
}

#[test]
fn ten_thousand_generated_command_lines_never_panic_and_errors_say_something() {
    // On tmpfs when there is one: every case copies the file and commits with fsync.
    let shm = Path::new("/dev/shm");
    let tmp = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .expect("a temporary folder");
    let listing = || -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(".")
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    let cwd_before = listing();
    let template = fixture(tmp.path());
    let db = tmp.path().join("case.db");
    restore(&template, &db);
    let before = event_counts(&db);
    assert!(
        before.iter().all(|n| *n > 0 && *n != usize::MAX),
        "{before:?}"
    );
    // A fixed seed: the same 10,000 command lines on every run.
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 10_000,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let (errors, successes) = (Cell::new(0usize), Cell::new(0usize));
    // Successes per command, to see that the generator reaches every command's work.
    let reached: RefCell<BTreeMap<String, usize>> = RefCell::new(BTreeMap::new());
    runner
        .run(&argv(tmp.path().to_path_buf()), |mut args| {
            restore(&template, &db);
            args.extend(["--db".to_string(), db.display().to_string()]);
            let mut out = Vec::new();
            let result = catch_unwind(AssertUnwindSafe(|| run(args.clone(), &mut out)));
            match result {
                Err(_) => Err(TestCaseError::fail(format!("panic on {args:?}"))),
                Ok(Ok(())) => {
                    successes.set(successes.get() + 1);
                    let cmd = args.iter().take(2).cloned().collect::<Vec<_>>().join(" ");
                    *reached.borrow_mut().entry(cmd).or_default() += 1;
                    Ok(())
                }
                Ok(Err(e)) => {
                    errors.set(errors.get() + 1);
                    let msg = format!("{e:#}");
                    prop_assert!(!msg.trim().is_empty(), "empty error for {:?}", args);
                    prop_assert_eq!(
                        event_counts(&db),
                        before.clone(),
                        "an error changed a stored log: {:?} -> {}",
                        args,
                        msg
                    );
                    Ok(())
                }
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // Both paths were exercised.
    assert_eq!(
        listing(),
        cwd_before,
        "a command wrote outside the temporary folder"
    );
    let (ok, bad) = (successes.get(), errors.get());
    println!(
        "{ok} succeeded, {bad} refused; successes by command: {:?}",
        reached.borrow()
    );
    assert!(ok > 500 && bad > 500, "{ok} ok, {bad} errors");
}
