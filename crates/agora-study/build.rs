//! Records the git commit this crate is built from (`AGORA_BUILD_COMMIT`, empty outside a
//! git checkout): a study's strategy snapshots are used only by the build that wrote them.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    println!("cargo:rustc-env=AGORA_BUILD_COMMIT={commit}");
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        // A new commit moves HEAD or the branch it names.
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/refs/heads");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
