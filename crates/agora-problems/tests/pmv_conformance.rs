//! PMV / PPD and the thermal-agent utilities against the pythermalcomfort 4.8.1 fixtures in
//! `conformance/pmv` (provenance and equations in its README.md).

use std::collections::HashMap;
use std::path::PathBuf;

use agora_problems::pmv::{PmvInput, THERMAL_AGENTS, pmv_ppd, thermal_utility};

/// The conformance folder: `AGORA_CONFORMANCE_DIR` if set, else the repo's `conformance/`.
fn conformance_dir() -> PathBuf {
    std::env::var_os("AGORA_CONFORMANCE_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance"),
        PathBuf::from,
    )
}

/// Rows of a headed CSV file of numbers, each as column name → value.
fn read_csv(name: &str) -> Vec<HashMap<String, f64>> {
    let path = conformance_dir().join("pmv").join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<String> = lines
        .next()
        .unwrap_or_else(|| panic!("{} is empty", path.display()))
        .split(',')
        .map(|h| h.trim().to_string())
        .collect();
    let rows: Vec<_> = lines
        .enumerate()
        .map(|(i, line)| {
            let cells: Vec<&str> = line.split(',').collect();
            assert_eq!(cells.len(), header.len(), "{name} row {}", i + 1);
            header
                .iter()
                .zip(cells)
                .map(|(h, c)| {
                    let v = c
                        .trim()
                        .parse::<f64>()
                        .unwrap_or_else(|e| panic!("{name} row {}, column {h}: {c:?}: {e}", i + 1));
                    (h.clone(), v)
                })
                .collect()
        })
        .collect();
    assert!(!rows.is_empty(), "no rows in {}", path.display());
    rows
}

#[test]
fn pmv_and_ppd_match_iso_7730_fixture() {
    let rows = read_csv("pmv.csv");
    let (mut max_pmv, mut max_ppd) = (0.0_f64, 0.0_f64);
    for (i, r) in rows.iter().enumerate() {
        let input = PmvInput {
            tdb: r["tdb"],
            tr: r["tr"],
            vr: r["vr"],
            rh: r["rh"],
            met: r["met"],
            clo: r["clo"],
            wme: r["wme"],
        };
        let (pmv, ppd) = pmv_ppd(&input).unwrap_or_else(|e| panic!("row {}: {e}", i + 1));
        let (e_pmv, e_ppd) = ((pmv - r["pmv"]).abs(), (ppd - r["ppd"]).abs());
        assert!(e_pmv <= 1e-3, "row {}: pmv {pmv} vs {}", i + 1, r["pmv"]);
        assert!(e_ppd <= 1e-2, "row {}: ppd {ppd} vs {}", i + 1, r["ppd"]);
        max_pmv = max_pmv.max(e_pmv);
        max_ppd = max_ppd.max(e_ppd);
    }
    println!(
        "pmv.csv: {} rows, max |pmv - ref| = {max_pmv:e}, max |ppd - ref| = {max_ppd:e}",
        rows.len()
    );
}

#[test]
fn pmv_thermal_agent_utilities_match_fixture() {
    let rows = read_csv("thermal_agents.csv");
    let mut max_err = 0.0_f64;
    for (i, r) in rows.iter().enumerate() {
        let k = r["agent"];
        assert!(
            k.fract() == 0.0 && (1.0..=3.0).contains(&k),
            "row {}: agent {k}",
            i + 1
        );
        let agent = &THERMAL_AGENTS[k as usize - 1];
        assert_eq!(
            (agent.met, agent.clo),
            (r["met"], r["clo"]),
            "row {}",
            i + 1
        );
        let u = thermal_utility(agent, r["temperature"], r["air_speed"])
            .unwrap_or_else(|e| panic!("row {}: {e}", i + 1));
        let err = (u - r["utility"]).abs();
        assert!(
            err <= 1e-3,
            "row {}: utility {u} vs {}",
            i + 1,
            r["utility"]
        );
        max_err = max_err.max(err);
    }
    println!(
        "thermal_agents.csv: {} rows, max |utility - ref| = {max_err:e}",
        rows.len()
    );
}
