//! Helpers shared by the conformance tests: where the fixtures are and how to read them.

use std::path::PathBuf;

/// The conformance folder: `AGORA_CONFORMANCE_DIR` if set, else the repo's `conformance/`.
pub fn conformance_dir() -> PathBuf {
    std::env::var_os("AGORA_CONFORMANCE_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance"),
        PathBuf::from,
    )
}

/// The JSON files of one fixture family, sorted; panics (failing the test) when there are none.
pub fn fixture_files(family: &str) -> Vec<PathBuf> {
    let dir = conformance_dir().join(family);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no {family} fixtures in {}",
        dir.display()
    );
    files
}

/// A JSON array of numbers.
pub fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// A JSON array of arrays of numbers.
pub fn rows(v: &serde_json::Value) -> Vec<Vec<f64>> {
    v.as_array().unwrap().iter().map(floats).collect()
}
