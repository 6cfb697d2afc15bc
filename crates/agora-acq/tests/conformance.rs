//! Every case of `conformance/acquisition/cases.json` (mpmath references, BoTorch
//! cross-checks; format in its README) against agora's analytic acquisitions, at each case's
//! own tolerance. `AGORA_CONFORMANCE_DIR` points at another folder with the same layout.

use agora_acq::analytic::{AnalyticKind, eubo_on_moments};
use std::path::PathBuf;

fn cases_file() -> PathBuf {
    let dir = std::env::var_os("AGORA_CONFORMANCE_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance"),
        PathBuf::from,
    );
    dir.join("acquisition/cases.json")
}

fn f(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("field {k} missing in {v}"))
}

#[test]
fn conformance_acquisition_cases() {
    let path = cases_file();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = doc["cases"].as_array().expect("cases array");
    let mut checked = 0;
    let mut failures = Vec::new();
    for c in cases {
        let inp = &c["inputs"];
        let kind = c["kind"].as_str().unwrap();
        let sign_best = |maximize: bool, mean: f64, best: f64| {
            if maximize {
                (mean, best)
            } else {
                (-mean, -best)
            }
        };
        let actual = match kind {
            "ei" | "log_ei" | "pi" => {
                let (m, b) = sign_best(
                    inp["maximize"].as_bool().unwrap(),
                    f(inp, "mean"),
                    f(inp, "best_f"),
                );
                let k = match kind {
                    "ei" => AnalyticKind::Ei { best_f: b },
                    "log_ei" => AnalyticKind::LogEi { best_f: b },
                    _ => AnalyticKind::Pi { best_f: b },
                };
                k.on_moments(m, f(inp, "variance")).0
            }
            "ucb" => {
                let m = if inp["maximize"].as_bool().unwrap() {
                    f(inp, "mean")
                } else {
                    -f(inp, "mean")
                };
                AnalyticKind::Ucb {
                    beta: f(inp, "beta"),
                }
                .on_moments(m, f(inp, "variance"))
                .0
            }
            "eubo" => {
                let m: Vec<f64> = inp["mean"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .collect();
                let cov: Vec<Vec<f64>> = inp["cov"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| {
                        r.as_array()
                            .unwrap()
                            .iter()
                            .map(|v| v.as_f64().unwrap())
                            .collect()
                    })
                    .collect();
                eubo_on_moments(m[0], m[1], [[cov[0][0], cov[0][1]], [cov[1][0], cov[1][1]]])
            }
            other => panic!("unknown kind {other} in {}", c["id"]),
        };
        let expected = f(c, "expected");
        let tol = &c["tolerance"];
        let ok = (actual - expected).abs() <= f(tol, "abs") + f(tol, "rel") * expected.abs();
        if !ok {
            failures.push(format!(
                "{} ({kind}, {}): expected {expected:e}, got {actual:e}",
                c["id"], c["note"]
            ));
        }
        checked += 1;
    }
    assert!(checked > 0, "no cases in {}", path.display());
    assert!(
        failures.is_empty(),
        "{} of {checked} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
