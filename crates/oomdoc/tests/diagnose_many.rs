//! `oomdoc diagnose PATH…`: directories, many logs merged, unreadable files, `--follow`.
#![cfg(unix)]

mod common;

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// How long a follower may take to print a failure: a hang guard for a loaded machine, not a
/// performance bound.
const HANG_GUARD: Duration = Duration::from_secs(120);

/// Real kernel line, from https://github.com/ShengcaiLiao/QAConv/issues/19 (kb/host/oom-killer.toml).
const KERNEL_KILL: &str = "[441280.839852] Out of memory: Killed process 698405 (python) total-vm:49978204kB, anon-rss:12918388kB, file-rss:68668kB, shmem-rss:53352kB, UID:1000 pgtables:49772kB oom_score_adj:0";

fn oomdoc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oomdoc")).args(args).env("NO_COLOR", "1").stdin(Stdio::null()).output().unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-many-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A real message from the dev corpus (easydiffusion/easydiffusion#104).
fn cuda_message() -> String {
    common::dev_message("easydiff-104-max-split-hint")
}

/// host1..host8: the CUDA message on hosts 1, 3, 4 and 7; the kernel kill on host 6;
/// a binary file in a subdirectory (skipped).
fn cluster(name: &str) -> PathBuf {
    let d = temp_dir(name);
    let msg = cuda_message();
    for i in 1..=8 {
        let mut text = format!("rank {i} step 1 loss 0.9\nrank {i} step 2 loss 0.8\n");
        if [1, 3, 4, 7].contains(&i) {
            text += &format!("{msg}\n");
        }
        if i == 6 {
            text += &format!("{KERNEL_KILL}\n");
        }
        std::fs::write(d.join(format!("host{i}.log")), text).unwrap();
    }
    std::fs::create_dir_all(d.join("bin")).unwrap();
    std::fs::write(d.join("bin/core.dump"), b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00 binary").unwrap();
    d
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn same_failure_on_many_hosts_is_one_finding() {
    let d = cluster("merge");
    let out = oomdoc(&["diagnose", d.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files_scanned"], 8, "the binary file is skipped");
    let f = v["findings"].as_array().unwrap();
    assert_eq!(f.len(), 2, "{v}");
    let cuda = &f[0];
    assert_eq!(cuda["id"], "pytorch.cuda-oom");
    assert_eq!(cuda["file"], d.join("host1.log").display().to_string());
    assert_eq!(cuda["line"], 3);
    assert_eq!(cuda["occurrences"], 4);
    let files: Vec<String> = [1, 3, 4, 7].iter().map(|i| d.join(format!("host{i}.log")).display().to_string()).collect();
    assert_eq!(cuda["files"], serde_json::json!(files));
    assert_eq!(cuda["first_fatal"], true);
    let host = &f[1];
    assert_eq!(host["id"], "host.oom-killer");
    assert_eq!(host["file"], d.join("host6.log").display().to_string());
    assert_eq!(host["first_fatal"], false);

    let text = s(&oomdoc(&["diagnose", d.to_str().unwrap()]).stdout);
    assert!(text.contains("on 4 of 8 logs ("), "{text}");
    assert!(text.contains("host1.log, "), "{text}");
    assert!(text.contains(", …)"), "{text}");
}

/// A log over 32 MiB among small ones is searched on every core by itself, the others
/// in parallel: the same merged report as reading the logs one at a time.
#[test]
fn a_large_log_among_small_ones_gives_the_same_report() {
    let d = cluster("large");
    let line = "{\"step\": 1, \"loss\": 0.9, \"lr\": 3.0e-4, \"grad_norm\": 1.0, \"throughput\": 412.7}\n";
    let filler = line.repeat((33 << 20) / line.len());
    let lines = filler.lines().count();
    std::fs::write(d.join("host2.log"), format!("{filler}{KERNEL_KILL}\n{filler}")).unwrap();
    let args = ["diagnose", d.to_str().unwrap(), "--format", "json"];
    let parallel = oomdoc(&args);
    assert_eq!(parallel.status.code(), Some(0), "{}", s(&parallel.stderr));
    let one_at_a_time = oomdoc(&[&args[..], &["--jobs", "1"]].concat());
    assert_eq!(s(&parallel.stdout), s(&one_at_a_time.stdout));
    let v: Value = serde_json::from_slice(&parallel.stdout).unwrap();
    let host = v["findings"].as_array().unwrap().iter().find(|f| f["id"] == "host.oom-killer").unwrap().clone();
    assert_eq!(host["file"], d.join("host2.log").display().to_string(), "the first log in order with the kill");
    assert_eq!(host["line"], lines + 1);
    assert_eq!(host["occurrences"], 2);
}

#[test]
fn first_fatal_follows_the_order_of_the_files_given() {
    let d = cluster("order");
    let h6 = d.join("host6.log");
    let h3 = d.join("host3.log");
    let out = oomdoc(&["diagnose", h6.to_str().unwrap(), h3.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = v["findings"].as_array().unwrap();
    assert_eq!(f[0]["id"], "host.oom-killer");
    assert_eq!(f[0]["first_fatal"], true);
    assert_eq!(f[1]["first_fatal"], false);
}

#[test]
fn missing_path_is_exit_2_with_one_line() {
    let d = cluster("missing");
    let out = oomdoc(&["diagnose", d.to_str().unwrap(), "/nonexistent/oomdoc/logs"]);
    assert_eq!(out.status.code(), Some(2));
    let err = s(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("oomdoc: cannot read /nonexistent/oomdoc/logs: no such file or directory"), "{err}");
}

#[test]
fn unreadable_files_are_noted_and_skipped() {
    let d = cluster("unreadable");
    std::os::unix::fs::symlink("/nonexistent/oomdoc/rotated.log", d.join("dangling.log")).unwrap();
    let out = oomdoc(&["diagnose", d.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let err = s(&out.stderr);
    assert!(err.starts_with("oomdoc: note: 1 of 9 logs could not be read"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["unreadable"][0]["file"], d.join("dangling.log").display().to_string());
    assert_eq!(v["findings"][0]["occurrences"], 4);

    // Nothing readable at all: exit 2.
    let only = temp_dir("none-readable");
    std::os::unix::fs::symlink("/nonexistent/a.log", only.join("a.log")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/b.log", only.join("b.log")).unwrap();
    let out = oomdoc(&["diagnose", only.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(s(&out.stderr).starts_with("oomdoc: none of the 2 logs could be read"), "{}", s(&out.stderr));
}

#[test]
fn permission_denied_is_noted() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc_geteuid() } == 0 {
        oomdoc_testkit::skip("unreadable_files_are_noted_and_skipped", "running as root, file permissions do not stop reads");
        return;
    }
    let d = cluster("perm");
    let p = d.join("host2.log");
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let out = oomdoc(&["diagnose", d.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(s(&out.stderr).contains("could not be read"), "{}", s(&out.stderr));
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

#[test]
fn standard_input_among_files() {
    let d = cluster("stdin");
    let mut child = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
        .args(["diagnose", "-", d.join("host1.log").to_str().unwrap(), "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{}\n", cuda_message()).as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["file"], "-");
    assert_eq!(f["line"], 1);
    assert_eq!(f["occurrences"], 2);
}

#[test]
fn follow_prints_each_failure_as_it_completes() {
    let d = temp_dir("follow");
    let log = d.join("train.log");
    std::fs::write(&log, "step 1\n").unwrap();
    let (mut child, rx) = common::follow(&log);
    std::thread::sleep(Duration::from_millis(400));
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    writeln!(f, "step 2\n{}", cuda_message()).unwrap();
    let first = rx.recv_timeout(HANG_GUARD).expect("first failure printed while the log is still open");
    let v: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(v["id"], "pytorch.cuda-oom");
    assert_eq!(v["line"], 3);
    for i in 3..20 {
        writeln!(f, "step {i}").unwrap();
    }
    writeln!(f, "{KERNEL_KILL}").unwrap();
    let second = rx.recv_timeout(HANG_GUARD).expect("second failure printed");
    let v: Value = serde_json::from_str(&second).unwrap();
    assert_eq!(v["id"], "host.oom-killer");
    assert_eq!(v["line"], 21);
    let _ = child.kill();
    let _ = child.wait();
}

/// Rotated, compressed logs in the directory are decoded and merged with the others.
#[test]
fn compressed_logs_in_a_directory() {
    let d = cluster("gzip");
    let src = d.join("host3.log");
    let gz = std::fs::File::create(d.join("host3.log.1.gz")).unwrap();
    let ok = Command::new("gzip").arg("-c").arg(&src).stdout(gz).status().map(|s| s.success()).unwrap_or(false);
    if !ok {
        oomdoc_testkit::require_in_ci("gzip test", "gzip is not installed");
        return;
    }
    let out = oomdoc(&["diagnose", d.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files_scanned"], 9);
    let f = &v["findings"][0];
    assert_eq!(f["occurrences"], 5);
    assert!(f["files"].as_array().unwrap().iter().any(|x| x.as_str().unwrap().ends_with("host3.log.1.gz")), "{f}");
}
