//! The build id of a study's strategy snapshots (`AGORA_BUILD_ID`): a hash of the sources
//! that decide what a strategy does (every crate's `src`, the manifests, `Cargo.lock`) and
//! of the compiler's version. A snapshot is used only by a build with the same id, so an
//! uncommitted change, another version or another compiler replays the log instead.

use std::path::{Path, PathBuf};

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") || p.ends_with("Cargo.toml") {
            out.push(p);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let crates = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
    let root = crates.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut all = Vec::new();
    for c in std::fs::read_dir(&crates).into_iter().flatten().flatten() {
        files(&c.path().join("src"), &mut all);
        all.push(c.path().join("Cargo.toml"));
        println!("cargo:rerun-if-changed={}", c.path().join("src").display());
        println!(
            "cargo:rerun-if-changed={}",
            c.path().join("Cargo.toml").display()
        );
    }
    all.push(root.join("Cargo.lock"));
    all.push(root.join("Cargo.toml"));
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.lock").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.toml").display()
    );
    all.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in &all {
        if let Ok(bytes) = std::fs::read(p) {
            let rel = p.strip_prefix(&root).unwrap_or(p);
            h = fnv(h, rel.to_string_lossy().as_bytes());
            h = fnv(h, &bytes);
        }
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    if let Ok(out) = std::process::Command::new(rustc).arg("--version").output() {
        h = fnv(h, &out.stdout);
    }
    println!("cargo:rustc-env=AGORA_BUILD_ID={h:016x}");
}
