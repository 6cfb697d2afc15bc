//! The `agora` binary end to end: a small run, and bad input that must fail with a named
//! field, not a panic.

use std::process::Command;

fn agora(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agora"))
        .args(args)
        .output()
        .expect("run agora");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn run_writes_records_summary_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let (ok, stdout, stderr) = agora(&[
        "run",
        "--methods",
        "random,gp-ei",
        "--problems",
        "forrester",
        "--seeds",
        "2",
        "--budget",
        "8",
        "--out",
        out,
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("| forrester | gp-ei | 2 | 8 |"), "{stdout}");
    for f in [
        "records.jsonl",
        "records.csv",
        "summary.json",
        "summary.md",
        "regret_forrester.svg",
    ] {
        assert!(dir.path().join(f).exists(), "{f} missing");
    }
}

#[test]
fn bad_input_fails_cleanly_naming_the_field() {
    for (args, needle) in [
        (vec!["run", "--methods", "gp-magic"], "gp-magic"),
        (vec!["run", "--problems", "moon"], "moon"),
        (vec!["run", "--budget", "0"], "budget"),
        (vec!["run", "--seeds", "0"], "seeds"),
        (vec!["run", "--noise", "NaN"], "noise"),
        (vec!["reproduce", "no-such-paper"], "standard"),
        (vec!["bench", "exact-gp", "--ns", "5000"], "ns"),
        (vec!["--threads", "0", "list"], "threads"),
    ] {
        let (ok, _, stderr) = agora(&args);
        assert!(!ok, "{args:?} should fail");
        assert!(
            stderr.contains(needle),
            "{args:?}: stderr lacks `{needle}`: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    }
}
