//! Test support shared by the workspace's test suites.
//!
//! Rust's test harness has no "skipped" outcome, and it captures what a test prints, so a test
//! that returns early because a tool is missing shows as `ok`. These helpers make such a skip
//! visible: the line goes straight to the terminal (around the capture) and, where
//! `scripts/test.sh` sets `OOMDOC_TEST_SKIPS`, into a file its summary counts. In CI (`CI` set
//! to anything but `false`/`0`/empty) a missing dependency that CI installs is a failure instead:
//! a skip there would hide that the test never ran.

use std::io::Write;

/// Whether this run is CI (`CI=true`, as CI services and `.ci/run` set it).
pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| !matches!(v.trim(), "" | "0" | "false" | "False")).unwrap_or(false)
}

/// `test` cannot run because `missing` (something CI installs) is absent: a failure in CI, a
/// visible skip elsewhere. Returns so the caller can `return` after it.
#[track_caller]
pub fn require_in_ci(test: &str, missing: &str) {
    if in_ci() {
        panic!("{test}: {missing}; CI installs it, so its absence is a failure here");
    }
    skip(test, missing);
}

/// `test` does not apply on this machine (`why`): a visible skip, in CI too.
pub fn skip(test: &str, why: &str) {
    let line = format!("skipped: {test}: {why}\n");
    // Straight to the file descriptor: `eprintln!` would be captured by the harness.
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os("OOMDOC_TEST_SKIPS") {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            // One short write per line: appends of this size do not interleave.
            let _ = f.write_all(line.as_bytes());
        }
    }
}
