//! The grid runner: reproducibility across thread counts, outputs, input errors.

use agora_experiments::report::{summarize, write_outputs};
use agora_experiments::{RunSpec, Runner, run_grid};

fn spec() -> RunSpec {
    RunSpec {
        methods: vec!["random".into(), "gp-ei".into()],
        problems: vec!["forrester".into(), "branin".into()],
        seeds: vec![0, 1, 2],
        budget: 12,
        noise_std: 0.0,
    }
}

fn strip_time(mut r: Vec<agora_experiments::Record>) -> Vec<agora_experiments::Record> {
    for x in &mut r {
        x.ask_seconds = 0.0;
        x.tell_seconds = 0.0;
    }
    r
}

#[test]
fn same_results_whatever_the_thread_count() {
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let three = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let a = strip_time(
        one.install(|| run_grid(&spec(), &Runner::local(false)))
            .unwrap(),
    );
    let b = strip_time(
        three
            .install(|| run_grid(&spec(), &Runner::local(false)))
            .unwrap(),
    );
    assert_eq!(a.len(), 2 * 2 * 3 * 12);
    assert_eq!(a, b);
    // Regret is monotone non-increasing within a run and matches optimum − best f.
    for w in a.windows(2) {
        if w[0].seed == w[1].seed && w[0].method == w[1].method && w[0].problem == w[1].problem {
            assert!(w[1].regret <= w[0].regret + 1e-15);
        }
    }
}

#[test]
fn outputs_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let recs = run_grid(&spec(), &Runner::local(false)).unwrap();
    let sums = summarize(&recs);
    assert_eq!(sums.len(), 4);
    let files = write_outputs(dir.path(), &recs, &sums).unwrap();
    for f in [
        "records.jsonl",
        "records.csv",
        "summary.json",
        "summary.md",
        "regret_branin.svg",
        "regret_forrester.svg",
    ] {
        assert!(files.contains(&f.to_string()), "{f} missing from {files:?}");
        let text = std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert!(!text.is_empty(), "{f} empty");
    }
    let lines = std::fs::read_to_string(dir.path().join("records.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), recs.len());
    let svg = std::fs::read_to_string(dir.path().join("regret_branin.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("gp-ei"));
}

#[test]
fn bad_specs_name_the_field() {
    let mut s = spec();
    s.methods = vec!["gp-magic".into()];
    let e = run_grid(&s, &Runner::local(false)).unwrap_err().to_string();
    assert!(e.contains("gp-magic") && e.contains("gp-logei"), "{e}");
    let mut s = spec();
    s.problems = vec!["moon".into()];
    let e = run_grid(&s, &Runner::local(false)).unwrap_err().to_string();
    assert!(e.contains("moon") && e.contains("branin"), "{e}");
    let mut s = spec();
    s.budget = 0;
    assert!(
        run_grid(&s, &Runner::local(false))
            .unwrap_err()
            .to_string()
            .contains("budget")
    );
    let mut s = spec();
    s.noise_std = f64::NAN;
    assert!(
        run_grid(&s, &Runner::local(false))
            .unwrap_err()
            .to_string()
            .contains("noise")
    );
}

#[test]
fn report_rebuilds_a_saved_suite_without_running_it() {
    use agora_experiments::suites::{Suite, rebuild, run_suite};
    let spec = RunSpec {
        methods: vec!["random".into(), "sobol".into()],
        problems: vec!["branin".into()],
        seeds: vec![0, 1],
        budget: 4,
        noise_std: 0.0,
    };
    let suite = Suite {
        name: "standard",
        title: "tiny",
        about: "a tiny grid",
        full: spec.clone(),
        quick: spec,
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("standard");
    run_suite(&suite, true, &out, &Runner::local(false)).unwrap();
    let first = std::fs::read_to_string(out.join("report.md")).unwrap();
    std::fs::remove_file(out.join("report.md")).unwrap();
    // The manifest names the registered `standard` suite, whose title differs from the tiny
    // grid's; the table of the records is what must come back.
    let written = rebuild(dir.path()).unwrap();
    assert_eq!(written, vec![out.join("report.md")]);
    let again = std::fs::read_to_string(out.join("report.md")).unwrap();
    let table = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with("| branin"))
            .map(|l| l.rsplitn(3, '|').nth(2).unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(table(&first).len(), 2);
    assert_eq!(table(&first), table(&again));
    // A folder with nothing saved is an error naming the folder.
    let empty = tempfile::tempdir().unwrap();
    let e = rebuild(empty.path()).unwrap_err();
    assert!(e.to_string().contains("no saved suite"), "{e}");
}

#[test]
fn hessian_queries_are_recorded_with_their_point_and_count_against_the_budget() {
    let r = agora_experiments::grid::run_one("dsbo", "branin", 0, 7, 0.0).unwrap();
    assert_eq!(r.len(), 7);
    // `dsbo`'s default T0 = 5 points, one Hessian each, then evaluations.
    for x in &r[..5] {
        assert!(x.answer.is_empty() && x.recommended.is_empty(), "{x:?}");
        assert_eq!(x.points.len(), 1);
        let p = &x.points[0];
        assert!(
            (-5.0..=10.0).contains(&p[0]) && (0.0..=15.0).contains(&p[1]),
            "{p:?}"
        );
        assert_eq!(x.regret, f64::INFINITY, "no recommendation yet");
    }
    for x in &r[5..] {
        assert_eq!(x.answer.len(), 1);
        assert!(x.regret.is_finite() && x.regret >= 0.0, "{x:?}");
    }
}
