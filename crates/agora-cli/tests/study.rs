//! Studies with people through the `agora` binary: a simulated rater drives a pairs study
//! with `ask --json` / `tell`; a three-person Social BO meeting votes by name; an expert
//! answers BOAP's property comparisons; bad input fails with a clear message and leaves the
//! stored log as it was.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn agora(db: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_agora"))
        .args(args)
        .arg("--db")
        .arg(db)
        .env("RUST_BACKTRACE", "0")
        .env_remove("AGORA_DB")
        .output()
        .expect("run agora");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Run and require success; returns stdout.
fn ok(db: &Path, args: &[&str]) -> String {
    let r = agora(db, args);
    assert!(r.ok, "agora {args:?} failed:\n{}\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    r.stdout
}

fn json(db: &Path, args: &[&str]) -> Value {
    let s = ok(db, args);
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}):\n{s}"))
}

/// Unit coordinates of each option of an `ask --json` view.
fn units(view: &Value) -> Vec<Vec<f64>> {
    view["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|o| {
            o["point"]["unit"]
                .as_array()
                .expect("a box point")
                .iter()
                .map(|x| x.as_f64().expect("a number"))
                .collect()
        })
        .collect()
}

/// A simulated person: prefers the option nearest `ideal` (A or B).
fn prefers(ideal: &[f64], options: &[Vec<f64>]) -> &'static str {
    let d = |x: &[f64]| -> f64 { x.iter().zip(ideal).map(|(a, b)| (a - b).powi(2)).sum() };
    if d(&options[1]) < d(&options[0]) {
        "B"
    } else {
        "A"
    }
}

fn events(db: &Path, study: &str) -> u64 {
    json(db, &["status", study, "--json"])["events"]
        .as_u64()
        .expect("events")
}

#[test]
fn a_pairs_study_runs_to_ten_answers_and_reports_exports_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let out = ok(
        &db,
        &[
            "study",
            "create",
            "thermal",
            "--param",
            "temperature:real:15:35",
            "--param",
            "rate:log:1e-4:1e-1",
            "--participants",
            "ann",
            "--seed",
            "4",
            "--description",
            "office comfort",
        ],
    );
    for needle in [
        "created study `thermal`",
        "facilitator token: ",
        "participant ann: ",
        "http://127.0.0.1:8080/?study=thermal&token=",
        "query 0: comparison",
        "temperature",
        "rate",
        "--winner A|B",
    ] {
        assert!(out.contains(needle), "{needle} missing from:\n{out}");
    }
    let ideal = [0.3, 0.6];
    let mut last = (0, "");
    for round in 0..10 {
        let view = json(&db, &["ask", "thermal", "--json"]);
        assert_eq!(view["kind"], "compare");
        let id = view["query_id"].as_u64().unwrap();
        assert_eq!(id, round);
        let w = prefers(&ideal, &units(&view));
        let said = ok(
            &db,
            &["tell", "thermal", "--query", &id.to_string(), "--winner", w],
        );
        assert!(said.contains(&format!("query {id} answered")), "{said}");
        assert!(
            said.contains(&format!("query {}: comparison", id + 1)),
            "{said}"
        );
        last = (id, w);
    }
    let status = json(&db, &["status", "thermal", "--json"]);
    assert_eq!(status["answered"], 10);
    assert_eq!(status["pending"]["query_id"], 10);
    // 11 asks and 10 answers.
    let n_events = events(&db, "thermal");
    assert_eq!(n_events, 21);
    let human = ok(&db, &["status", "thermal"]);
    assert!(human.contains("answered: 10 queries") && human.contains("office comfort"));

    // Retrying the last answer is idempotent; a different answer to it is refused.
    let (id, w) = last;
    let again = ok(
        &db,
        &["tell", "thermal", "--query", &id.to_string(), "--winner", w],
    );
    assert!(again.contains("already recorded"), "{again}");
    let other = if w == "A" { "B" } else { "A" };
    let r = agora(
        &db,
        &[
            "tell",
            "thermal",
            "--query",
            &id.to_string(),
            "--winner",
            other,
        ],
    );
    assert!(!r.ok);
    assert!(
        r.stderr.contains("query 9 is closed") && r.stderr.contains("the open query is 10"),
        "{}",
        r.stderr
    );
    let r = agora(&db, &["tell", "thermal", "--query", "0", "--tie"]);
    assert!(
        !r.ok && r.stderr.contains("query 0 is closed"),
        "{}",
        r.stderr
    );
    assert_eq!(events(&db, "thermal"), n_events);

    // The recommendation comes with the preference model's mean ± sd.
    let best = json(&db, &["best", "thermal", "--json"]);
    let (m, sd) = (best["belief"][0].as_f64(), best["belief"][1].as_f64());
    assert!(m.is_some_and(f64::is_finite), "{best}");
    assert!(sd.is_some_and(|s| s > 0.0 && s.is_finite()), "{best}");
    let human = ok(&db, &["best", "thermal"]);
    assert!(
        human.contains("temperature = ") && human.contains(" ± "),
        "{human}"
    );

    // CSV: a header and one row per event.
    let csv = dir.path().join("log.csv");
    ok(
        &db,
        &[
            "export",
            "thermal",
            "--format",
            "csv",
            "--out",
            csv.to_str().unwrap(),
        ],
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("seq,time_utc,event,query_id"));
    assert_eq!(lines.len() as u64, n_events + 1);
    assert_eq!(
        lines.iter().filter(|l| l.contains(",answered,")).count(),
        10
    );
    for (i, l) in lines[1..].iter().enumerate() {
        assert!(l.starts_with(&format!("{i},")), "row {i}: {l}");
    }
    let doc: Value = serde_json::from_str(&ok(&db, &["export", "thermal", "--format", "json"]))
        .expect("JSON export");
    assert_eq!(doc["events"].as_array().unwrap().len() as u64, n_events);
    assert_eq!(doc["study"]["name"], "thermal");
    assert!(doc.get("facilitator_token").is_none() && !doc.to_string().contains("token"));

    // Plots: progress and the 2-D belief heatmap.
    let svg = dir.path().join("thermal.svg");
    ok(&db, &["plot", "thermal", "--out", svg.to_str().unwrap()]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg") && text.trim_end().ends_with("</svg>"));
    assert!(text.contains("answered rounds over time") && text.contains("model belief"));
    let png = dir.path().join("thermal.png");
    ok(&db, &["plot", "thermal", "--out", png.to_str().unwrap()]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    // Reading never writes.
    assert_eq!(events(&db, "thermal"), n_events);
}

#[test]
fn a_social_meeting_votes_by_name_publicly_and_privately() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let people = ["ann", "bob", "cy"];
    let ideals = [[0.3, 0.5], [0.5, 0.5], [0.7, 0.2]];
    ok(
        &db,
        &[
            "study",
            "create",
            "meeting",
            "--param",
            "temperature:real:15:35",
            "--param",
            "humidity:real:0.3:0.7",
            "--method",
            "social",
            "--participants",
            "ann,bob,cy",
            "--set",
            "rho=0.5",
            "--set",
            "candidates=24",
            "--set",
            "init_pairs=3",
        ],
    );
    let mut private_seen = false;
    for round in 0..5u64 {
        let view = json(&db, &["ask", "meeting", "--json"]);
        assert_eq!(view["kind"], "group_vote");
        assert_eq!(view["query_id"], round);
        assert_eq!(view["asked"], serde_json::json!(people));
        let private = view["channel"] == "private";
        let options = units(&view);
        let id = round.to_string();
        for (k, who) in people.iter().enumerate() {
            let vote = prefers(&ideals[k], &options);
            let said = ok(
                &db,
                &[
                    "tell", "meeting", "--query", &id, "--as", who, "--vote", vote,
                ],
            );
            if k < 2 {
                assert!(
                    said.contains(&format!("recorded {who}'s ballot on query {round}")),
                    "{said}"
                );
                let a = ok(&db, &["ask", "meeting", "--as", "cy"]);
                assert!(a.contains("voted: ann"), "{a}");
                if private {
                    // cy sees who voted but not how.
                    assert!(!a.contains("ann (A)") && !a.contains("ann (B)"), "{a}");
                    private_seen = true;
                }
            } else {
                assert!(said.contains(&format!("query {round} answered")), "{said}");
            }
        }
        // ann's ballot again: idempotent.
        let vote = prefers(&ideals[0], &options);
        let again = ok(
            &db,
            &[
                "tell", "meeting", "--query", &id, "--as", "ann", "--vote", vote,
            ],
        );
        assert!(again.contains("already recorded"), "{again}");
    }
    assert!(
        private_seen,
        "Social BO asks privately while the graph is unknown"
    );
    // Everyone at once, then a round closed early by the facilitator.
    let said = ok(&db, &["tell", "meeting", "--votes", "A,B,tie"]);
    assert!(said.contains("query 5 answered"), "{said}");
    ok(&db, &["tell", "meeting", "--as", "bob", "--vote", "B"]);
    let said = ok(&db, &["tell", "meeting", "--close"]);
    assert!(said.contains("query 6 round closed"), "{said}");
    let st = json(&db, &["status", "meeting", "--json"]);
    let rounds = st["public_rounds"].as_u64().unwrap() + st["private_rounds"].as_u64().unwrap();
    assert_eq!(rounds, 7);
    let csv = ok(&db, &["export", "meeting", "--format", "csv"]);
    assert!(
        csv.contains(",ballot,") && csv.contains(",private,"),
        "{csv}"
    );
    // The figure: rounds by channel, and Social BO's belief about the welfare (2-D heatmap).
    let svg = dir.path().join("m.svg");
    ok(&db, &["plot", "meeting", "--out", svg.to_str().unwrap()]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("public rounds") && text.contains("model belief: mean welfare"));
    assert!(!text.contains("No belief panel"));
}

#[test]
fn an_expert_answers_boap_property_comparisons_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("b.db");
    ok(
        &db,
        &[
            "study",
            "create",
            "alloy",
            "--param",
            "w:real:0:1",
            "--method",
            "boap",
            "--set",
            r#"properties=["stiffness"]"#,
            "--set",
            "init=3",
            "--participants",
            "eve",
        ],
    );
    let (mut values, mut comparisons) = (0, 0);
    for _ in 0..8 {
        let view = json(&db, &["ask", "alloy", "--json"]);
        let u = units(&view);
        match view["kind"].as_str() {
            Some("evaluate") => {
                let v: Vec<String> = u
                    .iter()
                    .map(|x| format!("{}", -(x[0] - 0.4).powi(2)))
                    .collect();
                ok(&db, &["tell", "alloy", "--values", &v.join(",")]);
                values += 1;
            }
            Some("compare") => {
                assert_eq!(view["rater"], "stiffness");
                let human = ok(&db, &["ask", "alloy"]);
                assert!(human.contains("more stiffness"), "{human}");
                // Stiffer = larger w.
                let w = if u[0][0] >= u[1][0] { "A" } else { "B" };
                ok(&db, &["tell", "alloy", "--winner", w]);
                comparisons += 1;
            }
            k => panic!("unexpected query kind {k:?}"),
        }
    }
    assert!(
        values >= 3 && comparisons >= 1,
        "{values} values, {comparisons} comparisons"
    );
    let best = ok(&db, &["best", "alloy"]);
    assert!(
        best.contains("w = ") && best.contains("the best value measured"),
        "{best}"
    );
    // An evaluation study's figure: best so far.
    let svg = dir.path().join("a.svg");
    ok(&db, &["plot", "alloy", "--out", svg.to_str().unwrap()]);
    assert!(
        std::fs::read_to_string(&svg)
            .unwrap()
            .contains("best value so far")
    );
}

#[test]
fn studies_come_from_spec_and_space_files_and_list_with_their_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    let spec = dir.path().join("study.toml");
    std::fs::write(
        &spec,
        "description = \"oven\"\nseed = 2\nparticipants = [\"ann\"]\n\
         method = { name = \"bo\", strategy = \"gp-ei\" }\n\
         [space]\n[[space.params]]\ntype = \"real\"\nname = \"heat\"\nlo = 100\nhi = 250\n",
    )
    .unwrap();
    let out = ok(
        &db,
        &["study", "create", "oven", "--spec", spec.to_str().unwrap()],
    );
    assert!(out.contains("method bo (gp-ei), seed 2") && out.contains("heat in [100, 250]"));
    let space = dir.path().join("space.json");
    std::fs::write(
        &space,
        r#"{"params": [{"type": "integer", "name": "layers", "lo": 1, "hi": 8},
                       {"type": "categorical", "name": "color", "choices": ["red", "blue"]}]}"#,
    )
    .unwrap();
    let out = ok(
        &db,
        &[
            "study",
            "create",
            "net",
            "--space",
            space.to_str().unwrap(),
            "--method",
            "bo",
        ],
    );
    assert!(
        out.contains("layers in 1..=8; color in {red, blue}"),
        "{out}"
    );
    // The bo study's first value, then the GP's belief (Sobol still proposes).
    ok(&db, &["tell", "oven", "--values", "2.5"]);
    ok(&db, &["tell", "oven", "--values", "-1"]);
    let best = json(&db, &["best", "oven", "--json"]);
    assert!(
        best["belief"][1].as_f64().is_some_and(|s| s >= 0.0),
        "{best}"
    );
    let svg = dir.path().join("oven.svg");
    ok(&db, &["plot", "oven", "--out", svg.to_str().unwrap()]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("objective mean ± 2 sd") && text.contains("best value so far"));

    let list = ok(&db, &["study", "list"]);
    assert!(
        list.contains("oven  bo") && list.contains("net  bo"),
        "{list}"
    );
    let tokens = ok(
        &db,
        &["study", "tokens", "oven", "--url", "http://10.0.0.2:9000/"],
    );
    assert!(
        tokens.contains("http://10.0.0.2:9000/?study=oven&token="),
        "{tokens}"
    );
    assert!(tokens.contains("participant ann: "), "{tokens}");
    // AGORA_DB names the file when --db is left out.
    let out = Command::new(env!("CARGO_BIN_EXE_agora"))
        .args(["study", "list"])
        .env("AGORA_DB", &db)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("oven"));
}

#[test]
fn bad_input_fails_clearly_and_changes_no_stored_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    ok(
        &db,
        &[
            "study",
            "create",
            "p",
            "--param",
            "x:real:0:1",
            "--participants",
            "ann",
        ],
    );
    ok(
        &db,
        &[
            "study",
            "create",
            "b",
            "--param",
            "t:real:15:35",
            "--method",
            "bo",
        ],
    );
    ok(
        &db,
        &[
            "study",
            "create",
            "g",
            "--param",
            "t:real:15:35",
            "--method",
            "group-pairs",
            "--participants",
            "ann,bob",
        ],
    );
    ok(&db, &["tell", "p", "--winner", "A"]);
    let before: Vec<String> = ["p", "b", "g"]
        .iter()
        .map(|s| ok(&db, &["export", s, "--format", "csv"]))
        .collect();
    let missing = dir.path().join("nothing-here.db");
    let cases: Vec<(Vec<&str>, &[&str])> = vec![
        (
            vec!["ask", "nosuch"],
            &["unknown study `nosuch`", "known: p, b, g"],
        ),
        (
            vec!["tell", "nosuch", "--winner", "A"],
            &["unknown study `nosuch`"],
        ),
        (
            vec!["ask", "p", "--as", "zed"],
            &["unknown participant `zed`", "allowed: ann"],
        ),
        (
            vec!["tell", "p", "--winner", "A", "--as", "zed"],
            &["unknown participant `zed`"],
        ),
        (
            vec!["tell", "g", "--as", "zed", "--vote", "A"],
            &["unknown participant `zed`", "ann, bob"],
        ),
        (
            vec!["tell", "g", "--vote", "A"],
            &["--vote needs --as NAME"],
        ),
        (
            vec!["tell", "g", "--as", "ann", "--vote", "C"],
            &["invalid `vote`", "allowed: A, B, tie"],
        ),
        (
            vec!["tell", "g", "--votes", "A"],
            &["invalid `votes`", "one vote per participant"],
        ),
        (
            vec!["tell", "p", "--winner", "C"],
            &["invalid `winner`", "allowed: A, B, tie"],
        ),
        (vec!["tell", "p", "--winner", "A", "--tie"], &["not both"]),
        (
            vec!["tell", "p", "--values", "1"],
            &["--values does not fit", "--winner A|B"],
        ),
        (
            vec!["tell", "p"],
            &["nothing to tell", "--winner A|B or --tie"],
        ),
        (
            vec!["tell", "b", "--values", "NaN"],
            &["invalid `values[0]`", "finite"],
        ),
        (
            vec!["tell", "b", "--values", "inf"],
            &["invalid `values[0]`", "finite"],
        ),
        (
            vec!["tell", "b", "--values", "1,2"],
            &["invalid `values`", "give 1"],
        ),
        (
            vec!["tell", "b", "--values", "abc"],
            &["`abc` is not a number"],
        ),
        (vec!["tell", "b", "--winner", "A"], &["--values V1"]),
        (
            vec!["tell", "b", "--query", "7", "--values", "1"],
            &["query 7 is not open", "the open query is 0"],
        ),
        (
            vec!["tell", "b", "--query", "x", "--values", "1"],
            &["--query"],
        ),
        (
            vec!["tell", "p", "--close"],
            &["only a group vote can be closed"],
        ),
        (
            vec!["tell", "g", "--close", "--vote", "A"],
            &["--close takes no answer"],
        ),
        (
            vec!["study", "create", "q", "--param", "x:real:1"],
            &["invalid `param`", "NAME:real:LO:HI"],
        ),
        (
            vec!["study", "create", "q", "--param", "x:real:NaN:1"],
            &["invalid `param`", "finite"],
        ),
        (
            vec!["study", "create", "q", "--param", "x:real:2:1"],
            &["params[0].hi", "greater than"],
        ),
        (
            vec!["study", "create", "q", "--param", "x:cube:0:1"],
            &["unknown type `cube`", "real, log, int, cat"],
        ),
        (
            vec!["study", "create", "q", "--param", "x:log:0:1"],
            &["lo > 0"],
        ),
        (
            vec![
                "study",
                "create",
                "q",
                "--param",
                "x:real:0:1",
                "--param",
                "x:int:0:3",
            ],
            &["appears twice"],
        ),
        (
            vec!["study", "create", "q"],
            &["invalid `param`", "--space FILE"],
        ),
        (
            vec![
                "study",
                "create",
                "q",
                "--param",
                "x:real:0:1",
                "--method",
                "social",
                "--set",
                "rhoo=0.3",
                "--participants",
                "a,b",
            ],
            &["rhoo", "rho"],
        ),
        (
            vec![
                "study",
                "create",
                "q",
                "--param",
                "x:real:0:1",
                "--method",
                "magic",
            ],
            &["unknown method `magic`", "social"],
        ),
        (
            vec![
                "study",
                "create",
                "q",
                "--param",
                "x:real:0:1",
                "--set",
                "novalue",
            ],
            &["invalid `set`", "KEY=VALUE"],
        ),
        (
            vec![
                "study",
                "create",
                "q",
                "--param",
                "x:real:0:1",
                "--method",
                "social",
                "--participants",
                "a",
            ],
            &["participants", "at least two"],
        ),
        (
            vec!["study", "create", "Q Q", "--param", "x:real:0:1"],
            &["invalid `name`", "a-z"],
        ),
        (
            vec!["study", "create", "p", "--param", "x:real:0:1"],
            &["exists already"],
        ),
        (
            vec!["study", "create", "q", "--space", "/no/such/space.toml"],
            &["invalid `space`", "cannot read"],
        ),
        (
            vec!["plot", "p", "--out", "p.txt"],
            &["invalid `out`", ".svg or .png"],
        ),
        (
            vec!["export", "p", "--format", "xml"],
            &["xml", "csv, json"],
        ),
        (
            vec![
                "export",
                "p",
                "--format",
                "csv",
                "--out",
                "/no/such/dir/x.csv",
            ],
            &["invalid `out`", "cannot write"],
        ),
    ];
    for (args, needles) in &cases {
        let r = agora(&db, args);
        assert!(!r.ok, "{args:?} succeeded:\n{}", r.stdout);
        assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
        for n in *needles {
            assert!(
                r.stderr.contains(n),
                "{args:?}: `{n}` missing from:\n{}",
                r.stderr
            );
        }
    }
    // A command on a file that does not exist fails without creating it.
    let r = Command::new(env!("CARGO_BIN_EXE_agora"))
        .args(["ask", "p", "--db", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("no study file"));
    assert!(!missing.exists());
    // Nothing stored changed, and the refused study was not created.
    let after: Vec<String> = ["p", "b", "g"]
        .iter()
        .map(|s| ok(&db, &["export", s, "--format", "csv"]))
        .collect();
    assert_eq!(before, after);
    let list = ok(&db, &["study", "list"]);
    assert_eq!(list.lines().count(), 3, "{list}");
}

/// `agora study import` and `agora study enqueue` through the binary: a file with a bad row
/// fails naming the file, the line and the parameter and stores nothing; a good one is
/// imported and the next question printed; an enqueued option is the question after the
/// open one; a bad option names the parameter.
#[test]
fn import_and_enqueue_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    ok(
        &db,
        &[
            "study",
            "create",
            "tune",
            "--method",
            "bo",
            "--set",
            "strategy=gp-ei",
            "--param",
            "lr:log:0.001:1",
            "--param",
            "depth:int:1:8",
            "--seed",
            "3",
        ],
    );
    let events = |db: &Path| {
        json(db, &["export", "tune", "--format", "json"])["events"]
            .as_array()
            .unwrap()
            .len()
    };
    let before = events(&db);
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "lr,depth,value\n0.01,3,0.8\n0.1,9,0.7\n").unwrap();
    let r = agora(&db, &["study", "import", "tune", bad.to_str().unwrap()]);
    assert!(!r.ok);
    assert!(
        r.stderr.contains("bad.csv") && r.stderr.contains("line 3: depth"),
        "{}",
        r.stderr
    );
    assert_eq!(events(&db), before, "nothing stored");
    let good = dir.path().join("good.jsonl");
    std::fs::write(
        &good,
        "{\"lr\": 0.01, \"depth\": 3, \"value\": 0.8}\n{\"lr\": 0.1, \"depth\": 8, \"value\": 0.7}\n\
         {\"lr\": 0.003, \"depth\": 1, \"value\": 0.5}\n",
    )
    .unwrap();
    let out = ok(&db, &["study", "import", "tune", good.to_str().unwrap()]);
    assert!(out.contains("imported 3 rows"), "{out}");
    let r = agora(
        &db,
        &[
            "study",
            "enqueue",
            "tune",
            "--option",
            "{\"lr\": 2, \"depth\": 4}",
        ],
    );
    assert!(!r.ok && r.stderr.contains("lr"), "{}", r.stderr);
    let out = ok(
        &db,
        &[
            "study",
            "enqueue",
            "tune",
            "--option",
            "{\"lr\": 0.05, \"depth\": 4}",
        ],
    );
    assert!(out.contains("next question after the open one"), "{out}");
    let q = json(&db, &["ask", "tune", "--json"]);
    let id = q["query_id"].as_u64().unwrap().to_string();
    ok(&db, &["tell", "tune", "--query", &id, "--values", "0.6"]);
    let next = json(&db, &["ask", "tune", "--json"]);
    let params = &next["options"][0]["params"];
    assert_eq!(
        params.to_string(),
        "[[\"lr\",0.05],[\"depth\",4]]",
        "{next}"
    );
    let status = ok(&db, &["status", "tune"]);
    assert!(status.contains("answered: 1"), "{status}");
}

/// Media from the command line: a candidate set from a CSV with a column of pictures,
/// links and descriptions (a bad cell named by its line, nothing stored); a box study's
/// open options shown with a rendering (`agora study media`), its kind checked; the
/// question as `ask --json` prints it carries each option's media.
#[test]
fn candidates_with_pictures_and_renderings_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    std::fs::write(dir.path().join("teal.png"), png).unwrap();
    let csv = dir.path().join("rooms.csv");
    std::fs::write(
        &csv,
        "name,warmth,light,look\nteal,1,3,teal.png\nsand,4,2,https://example.org/sand.jpg\n\
         plum,2,5,\"deep plum, matt\"\n",
    )
    .unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "name,warmth,look\nteal,1,teal.png\nsand,4,missing.png\n",
    )
    .unwrap();
    let args = |space: &Path| {
        vec![
            "study".to_string(),
            "create".into(),
            "rooms".into(),
            "--method".into(),
            "bo".into(),
            "--space".into(),
            space.to_str().unwrap().into(),
            "--media-column".into(),
            "look".into(),
        ]
    };
    let r = agora(
        &db,
        &args(&bad).iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(
        !r.ok && r.stderr.contains("line 3") && r.stderr.contains("missing.png"),
        "{}",
        r.stderr
    );
    assert!(!agora(&db, &["study", "list"]).stdout.contains("rooms"));
    ok(
        &db,
        &args(&csv).iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let view = json(&db, &["ask", "rooms", "--json"]);
    let k = view["options"][0]["point"]["index"].as_u64().unwrap();
    let expected = [
        serde_json::json!({"type": "file", "content_type": "image/png", "bytes": png.len()}),
        serde_json::json!({"type": "url", "url": "https://example.org/sand.jpg"}),
        serde_json::json!({"type": "text", "text": "deep plum, matt"}),
    ];
    assert_eq!(view["options"][0]["media"], expected[k as usize], "{view}");

    ok(
        &db,
        &[
            "study",
            "create",
            "chairs",
            "--method",
            "pairs",
            "--param",
            "height:real:40:60",
            "--param",
            "tilt:real:0:20",
        ],
    );
    let view = json(&db, &["ask", "chairs", "--json"]);
    let qid = view["query_id"].as_u64().unwrap().to_string();
    let pic = dir.path().join("a.png");
    std::fs::write(&pic, png).unwrap();
    let fake = dir.path().join("fake.png");
    std::fs::write(&fake, b"GIF89a").unwrap();
    let media = |option: &str, how: &str, what: &str| {
        let args = [
            "study", "media", "chairs", "--query", &qid, "--option", option, how, what,
        ];
        agora(&db, &args)
    };
    let shown = media("0", "--file", pic.to_str().unwrap());
    assert!(
        shown.ok && shown.stdout.starts_with("shown"),
        "{}",
        shown.stderr
    );
    assert!(media("1", "--text", "the tall one").ok);
    let r = media("1", "--file", fake.to_str().unwrap());
    assert!(
        !r.ok && r.stderr.contains("do not begin as a image/png"),
        "{}",
        r.stderr
    );
    let view = json(&db, &["ask", "chairs", "--json"]);
    assert_eq!(view["options"][0]["media"]["type"], "file");
    assert_eq!(
        view["options"][1]["media"],
        serde_json::json!({"type": "text", "text": "the tall one"})
    );
}
