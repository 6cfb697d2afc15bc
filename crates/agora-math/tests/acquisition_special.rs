//! Conformance: the analytic acquisition values in `conformance/acquisition/cases.json`
//! (format `acquisition/v1`, see the README next to it) recomputed from the special
//! functions of `agora_math::special`.
//!
//! The fixture folder is `$AGORA_CONFORMANCE_DIR/acquisition/` when that variable is set,
//! else `<workspace>/conformance/acquisition/`. Kinds `ei`, `log_ei`, `pi` and `ucb` are
//! checked here, each case at its own stored tolerance
//! (`|actual - expected| <= abs + rel * |expected|`); `eubo` is checked by the
//! acquisition crate.

use std::path::PathBuf;

use agora_math::special::{h, log_h, norm_cdf};
use serde_json::Value;

/// Variance floor for the single-point acquisitions (README: `std = sqrt(max(var, 1e-12))`).
const VARIANCE_FLOOR: f64 = 1e-12;

fn cases_path() -> PathBuf {
    match std::env::var_os("AGORA_CONFORMANCE_DIR") {
        Some(dir) => PathBuf::from(dir).join("acquisition").join("cases.json"),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../conformance/acquisition/cases.json"),
    }
}

fn num(v: &Value, key: &str, id: &str) -> f64 {
    v.get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("case {id}: missing or non-numeric `{key}`"))
}

fn flag(v: &Value, key: &str, id: &str) -> bool {
    v.get(key)
        .and_then(Value::as_bool)
        .unwrap_or_else(|| panic!("case {id}: missing or non-boolean `{key}`"))
}

/// `std` and the standardised improvement `u` of the README.
fn std_and_u(inputs: &Value, id: &str) -> (f64, f64) {
    let mean = num(inputs, "mean", id);
    let variance = num(inputs, "variance", id);
    let best_f = num(inputs, "best_f", id);
    let std = variance.max(VARIANCE_FLOOR).sqrt();
    let u = if flag(inputs, "maximize", id) {
        (mean - best_f) / std
    } else {
        (best_f - mean) / std
    };
    (std, u)
}

/// The README's value for one case, or `None` for kinds not checked here.
fn compute(kind: &str, inputs: &Value, id: &str) -> Option<f64> {
    match kind {
        "ei" => {
            let (std, u) = std_and_u(inputs, id);
            Some(std * h(u))
        }
        "log_ei" => {
            let (std, u) = std_and_u(inputs, id);
            Some(std.ln() + log_h(u))
        }
        "pi" => {
            let (_, u) = std_and_u(inputs, id);
            Some(norm_cdf(u))
        }
        "ucb" => {
            let mean = num(inputs, "mean", id);
            let std = num(inputs, "variance", id).max(VARIANCE_FLOOR).sqrt();
            let bonus = num(inputs, "beta", id).sqrt() * std;
            Some(if flag(inputs, "maximize", id) {
                mean + bonus
            } else {
                -mean + bonus
            })
        }
        _ => None,
    }
}

#[test]
fn acquisition_cases_match_special_functions() {
    let path = cases_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}", path.display()));
    assert_eq!(
        doc.get("format").and_then(Value::as_str),
        Some("acquisition/v1"),
        "unexpected fixture format in {}",
        path.display()
    );
    let cases = doc
        .get("cases")
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{} has no `cases` array", path.display()));

    let mut checked = 0usize;
    let mut worst_ratio = 0.0_f64; // largest |diff| / allowed over the checked cases
    let mut failures = Vec::new();
    for case in cases {
        let id = case.get("id").and_then(Value::as_str).unwrap_or("<no id>");
        let kind = case
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("case {id}: missing `kind`"));
        let inputs = case
            .get("inputs")
            .unwrap_or_else(|| panic!("case {id}: missing `inputs`"));
        let Some(actual) = compute(kind, inputs, id) else {
            continue; // `eubo` (and any future kind) is checked elsewhere
        };
        let expected = num(case, "expected", id);
        let tol = case
            .get("tolerance")
            .unwrap_or_else(|| panic!("case {id}: missing `tolerance`"));
        let (rel, abs) = (num(tol, "rel", id), num(tol, "abs", id));
        let err = (actual - expected).abs();
        worst_ratio = worst_ratio.max(err / (abs + rel * expected.abs()));
        // A NaN `actual` (or `expected`) must fail, so test "passes" positively.
        let passes = err <= abs + rel * expected.abs();
        if !passes {
            failures.push(format!(
                "{id} ({kind}): expected {expected:e}, actual {actual:e}, |diff| {err:e} > {abs:e} + {rel:e}*|expected|"
            ));
        }
        checked += 1;
    }

    assert!(
        checked > 0,
        "no ei/log_ei/pi/ucb cases were checked in {}",
        path.display()
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} acquisition cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "checked {checked} acquisition cases from {} (worst |diff| / allowed = {worst_ratio:.2e})",
        path.display()
    );
}
