//! Helpers shared by the CLI integration tests.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The `error_text` of a record of the dev corpus (tests/corpus/dev.jsonl): real messages users pasted.
#[allow(dead_code)] // not every test binary that shares this module reads the corpus
pub fn dev_message(id: &str) -> String {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/dev.jsonl");
    for line in std::fs::read_to_string(corpus).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["id"] == id {
            return v["error_text"].as_str().unwrap().to_string();
        }
    }
    panic!("corpus record {id} is missing");
}

/// A memory cgroup of `limit` bytes, named for the test binary (`tag`) and process, where the
/// test may make one (root, a writable cgroup v1 memory controller or v2); None otherwise.
#[allow(dead_code)] // not every test binary that shares this module makes a cgroup
pub fn small_memory_cgroup(tag: &str, limit: u64) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let name = format!("oomdoc-{tag}-{}", std::process::id());
    for l in text.lines() {
        let mut parts = l.splitn(3, ':');
        let (_, ctrl, rel) = (parts.next()?, parts.next()?, parts.next()?);
        let rel = rel.trim_start_matches('/');
        let (dir, file) = if ctrl.split(',').any(|c| c == "memory") {
            (Path::new("/sys/fs/cgroup/memory").join(rel).join(&name), "memory.limit_in_bytes")
        } else if ctrl.is_empty() && Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            (Path::new("/sys/fs/cgroup").join(rel).join(&name), "memory.max")
        } else {
            continue;
        };
        if std::fs::create_dir(&dir).is_err() {
            continue;
        }
        if std::fs::write(dir.join(file), limit.to_string()).is_err() {
            let _ = std::fs::remove_dir(&dir);
            continue;
        }
        let _ = std::fs::write(dir.join("memory.swappiness"), "0");
        return Some(dir);
    }
    None
}

/// A small memory cgroup for a test whose job runs python3: `None` (the test is skipped,
/// or fails under CI when python3 is missing) where either cannot be had here.
#[allow(dead_code)]
pub fn python_memory_cgroup(test: &str, tag: &str, limit: u64) -> Option<PathBuf> {
    let Some(cg) = small_memory_cgroup(tag, limit) else {
        oomdoc_testkit::skip(test, "cannot create a memory cgroup here (needs root and a writable cgroup filesystem)");
        return None;
    };
    if std::process::Command::new("python3").arg("-c").arg("pass").status().map(|s| !s.success()).unwrap_or(true) {
        oomdoc_testkit::require_in_ci(test, "python3 is not installed");
        let _ = std::fs::remove_dir(&cg);
        return None;
    }
    Some(cg)
}

/// `oomdoc diagnose --follow` on `log`, its stdout lines sent to the channel.
#[allow(dead_code)]
pub fn follow(log: &Path) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_oomdoc"))
        .args(["diagnose", "--follow", log.to_str().unwrap(), "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    (child, rx)
}
