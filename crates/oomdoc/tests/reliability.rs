//! Hostile input of the 2026-11-26 reliability round (`shared/reference/reliability-2026-11-26.md`),
//! each at small scale: terminal injection (D41–D43, R13), a symlink to a FIFO in a
//! directory (D3), `--follow` and rotation (D50), long lines (D52) and FIFOs (D54), zip
//! archives (D44), `input.encoding` (problem 20).
#![cfg(unix)]

mod common;

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn oomdoc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oomdoc")).args(args).env("NO_COLOR", "1").stdin(Stdio::null()).output().unwrap()
}

/// `oomdoc args`, killed after `limit` (a hang guard, not a speed limit): None when it
/// had to be killed.
fn oomdoc_within(args: &[&str], limit: Duration) -> Option<Output> {
    let child = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => Some(out.unwrap()),
        Err(_) => {
            unsafe { libc_kill(pid as i32, 9) };
            None
        }
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", p.display());
}

fn temp_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-reliability-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The code points a terminal acts on (C0 but `\n` `\t`, DEL, C1, bidi controls), as
/// the reliability round's `term_inject.py` counts them.
fn unsafe_chars(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s
        .chars()
        .filter(|&c| {
            let o = c as u32;
            (o < 0x20 && c != '\n' && c != '\t') || (0x7f..=0x9f).contains(&o) || (0x202a..=0x202e).contains(&o) || (0x2066..=0x2069).contains(&o)
        })
        .map(|c| format!("U+{:04X}", c as u32))
        .collect();
    v.sort();
    v.dedup();
    v
}

const PAYLOADS: [&str; 7] = ["\u{9b}2J\u{9b}H", "\u{9d}0;pwned\u{9c}", "\x07", "AAAA\x08\x08\x08\x08", "\u{202e}gnp.exe", "\x7f\x0b\x0c", "\x1b]52;c;ZWNobw==\x07\x1b[2J"];

/// A TPU VMEM message whose op, custom-call target and source carry `p`, and a PyTorch one.
fn hostile_log(p: &str) -> String {
    format!(
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom:\n\
         Ran out of memory in memory space vmem while allocating on stack for %gmm{p}.1 = f32[16384,512]{{1,0:T(8,128)}} custom-call(%p0, %p1), custom_call_target=\"tpu{p}_custom_call\", metadata={{op_name=\"jit(train_step)/{p}/pallas_call\" source_file=\"/workspace/{p}kernels/gmm.py\" source_line=88}}\n\
         Scoped allocation with size 18.00M and limit 16.00M exceeded scoped vmem limit by 2.00M.\n\
         torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 1.66 GiB is free. Process {p} has 77.65 GiB memory in use.\n"
    )
}

#[test]
fn no_control_character_from_a_log_reaches_the_output() {
    let d = temp_dir("inject-text");
    for (i, p) in PAYLOADS.iter().enumerate() {
        let log = d.join(format!("{i}.log"));
        std::fs::write(&log, hostile_log(p)).unwrap();
        for fmt in ["text", "markdown", "json"] {
            let out = oomdoc(&["diagnose", log.to_str().unwrap(), "--format", fmt, "--color", "never"]);
            assert_eq!(out.status.code(), Some(0));
            let s = String::from_utf8_lossy(&out.stdout);
            assert!(s.contains("gmm"), "{fmt}: the finding is still there: {s}");
            assert_eq!(unsafe_chars(&s), Vec::<String>::new(), "payload {p:?}, --format {fmt}: {s}");
        }
        // With colour on, only our own SGR sequences remain.
        let out = oomdoc(&["diagnose", log.to_str().unwrap(), "--color", "always"]);
        let s = String::from_utf8_lossy(&out.stdout).replace("\x1b[0m", "").replace("\x1b[1m", "").replace("\x1b[1;31m", "").replace("\x1b[1;33m", "").replace("\x1b[32m", "").replace("\x1b[2m", "");
        assert_eq!(unsafe_chars(&s), Vec::<String>::new(), "payload {p:?} with colour: {s:?}");
    }
}

#[test]
fn file_names_are_escaped_on_stdout_and_stderr() {
    let d = temp_dir("inject-names");
    let msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 1.66 GiB is free.\n";
    for name in ["host1\x1b]0;PWNED\x07\x1b[2J.log", "host2\u{9b}2J.log", "host3\u{202e}eg.log"] {
        std::fs::write(d.join(name), msg).unwrap();
    }
    std::os::unix::fs::symlink("/nonexistent\x1b[31m", d.join("zz\x1b]0;PWNED\x07.log")).unwrap();
    for fmt in ["text", "markdown"] {
        let out = oomdoc(&["diagnose", d.to_str().unwrap(), "--format", fmt, "--color", "never"]);
        assert_eq!(out.status.code(), Some(0));
        let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(o.contains("on 3 of 3 logs"), "{o}");
        // Escaped, not dropped: names that differ only in a control stay apart.
        assert!(o.contains("host1\\u{1b}]0;PWNED\\u{7}"), "{o}");
        assert_eq!(unsafe_chars(&o), Vec::<String>::new(), "stdout, {fmt}: {o}");
        assert!(e.contains("could not be read"), "{e}");
        assert_eq!(unsafe_chars(&e), Vec::<String>::new(), "stderr, {fmt}: {e}");
    }
    let missing = d.join("no\x1b]0;PWNED\x07such.log");
    let out = oomdoc(&["diagnose", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("cannot read"), "{e}");
    assert_eq!(unsafe_chars(&e), Vec::<String>::new(), "{e}");
}

/// D3: opening a FIFO with no writer blocks; a directory scan stats link targets instead.
#[test]
fn a_symlink_to_a_fifo_in_a_directory_does_not_block() {
    let d = temp_dir("fifo-link");
    let logs = d.join("logs");
    std::fs::create_dir(&logs).unwrap();
    mkfifo(&d.join("pipe"));
    std::os::unix::fs::symlink("../pipe", logs.join("z.log")).unwrap();
    std::fs::write(logs.join("a.log"), "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB.\n").unwrap();
    let out = oomdoc_within(&["diagnose", logs.to_str().unwrap(), "--format", "json"], Duration::from_secs(120)).expect("diagnose DIR returned");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["findings"][0]["id"], "pytorch.cuda-oom");
    assert_eq!(v["files_scanned"], 1);
}

/// D44: a zip of logs, the usual issue attachment, says to unzip it instead of "nothing found".
#[test]
fn a_zip_archive_gets_a_hint() {
    let d = temp_dir("zip");
    // A stored (uncompressed) zip member holding a log: the text is even visible inside.
    let mut zip = b"PK\x03\x04\x0a\x00\x00\x00\x00\x00".to_vec();
    zip.extend_from_slice(&[0u8; 20]);
    zip.extend_from_slice(b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB.\n");
    std::fs::write(d.join("logs.zip"), &zip).unwrap();
    let out = oomdoc(&["diagnose", d.join("logs.zip").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unzip it"), "{}", String::from_utf8_lossy(&out.stderr));
    // In a directory: listed as unreadable with the same reason.
    std::fs::write(d.join("ok.log"), "step 1\n").unwrap();
    let out = oomdoc(&["diagnose", d.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["unreadable"].to_string().contains("unzip it"), "{v}");
}

#[test]
fn encoding_names_match_the_readme() {
    let d = temp_dir("encoding");
    let mut b = vec![0xff, 0xfe];
    for u in "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB.\n".encode_utf16() {
        b.extend_from_slice(&u.to_le_bytes());
    }
    std::fs::write(d.join("w.log"), b).unwrap();
    let v: Value = serde_json::from_slice(&oomdoc(&["diagnose", d.join("w.log").to_str().unwrap(), "--format", "json"]).stdout).unwrap();
    assert_eq!(v["input"]["encoding"], "utf-16le", "{v}");
}

fn vm_hwm_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok()).unwrap_or(0)
}

const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 1.66 GiB is free.";

/// D50: a failure appended just before a rename rotation is printed, then the new file's.
#[test]
fn follow_reads_the_old_file_to_its_end_on_rotation() {
    let d = temp_dir("follow-rotate");
    let log = d.join("f.log");
    std::fs::write(&log, "step 0\n").unwrap();
    let (mut child, rx) = common::follow(&log);
    std::thread::sleep(Duration::from_millis(500));
    {
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        writeln!(f, "step 1\n{}", OOM.replace("3.00 GiB", "1.00 GiB")).unwrap();
    }
    // At once, before the next poll: rotate and start a new log with another failure.
    std::fs::rename(&log, d.join("f.log.1")).unwrap();
    std::fs::write(&log, format!("step 2\n{}\n", OOM.replace("3.00 GiB", "2.00 GiB"))).unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let Ok(l) = rx.recv_timeout(Duration::from_secs(60)) else { break };
        let v: Value = serde_json::from_str(&l).unwrap();
        seen.push(v["headline"].as_str().unwrap_or_default().to_string());
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[0].contains("1.00 GiB") && seen[1].contains("2.00 GiB"), "{seen:?}");
}

/// D51: copytruncate, and the job writes more than the old size before the next poll: the
/// file never looks shorter, but it holds new content from its first byte. Both failures
/// are printed. (Written in place here, so no poll can see the empty file in between.)
#[test]
fn follow_notices_a_file_truncated_and_rewritten_past_its_old_size() {
    let d = temp_dir("follow-copytruncate");
    let log = d.join("c.log");
    let steps: String = (1..=100).map(|i| format!("step {i}\n")).collect();
    std::fs::write(&log, format!("{steps}{}\nafter\n", OOM.replace("3.00 GiB", "1.00 GiB"))).unwrap();
    let old_len = std::fs::metadata(&log).unwrap().len();
    let (mut child, rx) = common::follow(&log);
    let headline = |l: String| -> String { serde_json::from_str::<Value>(&l).unwrap()["headline"].as_str().unwrap_or_default().to_string() };
    let first = rx.recv_timeout(Duration::from_secs(120)).map(headline);
    let new_steps: String = (1..=400).map(|i| format!("new step {i}\n")).collect();
    let new = format!("{}\n{new_steps}", OOM.replace("3.00 GiB", "2.00 GiB"));
    assert!(new.len() as u64 > old_len);
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
        f.write_all_at(new.as_bytes(), 0).unwrap();
    }
    let second = rx.recv_timeout(Duration::from_secs(60)).map(headline);
    let _ = child.kill();
    let _ = child.wait();
    assert!(first.as_ref().is_ok_and(|h| h.contains("1.00 GiB")), "{first:?}");
    assert!(second.as_ref().is_ok_and(|h| h.contains("2.00 GiB")), "the rewritten file's failure: {second:?}");
}

/// D54: a FIFO is not followed; the error names it and says why.
#[test]
fn follow_refuses_a_fifo_by_name() {
    let d = temp_dir("follow-fifo");
    let p = d.join("pipe.log");
    mkfifo(&p);
    let out = oomdoc_within(&["diagnose", "--follow", p.to_str().unwrap()], Duration::from_secs(120)).expect("returned");
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("regular file") && e.contains("pipe.log"), "{e}");
}

/// D52: a 64 MiB line without a newline is kept as a bounded head and tail, and a failure
/// after it is still printed.
#[test]
fn follow_is_bounded_on_a_long_line() {
    let d = temp_dir("follow-long");
    let log = d.join("f.log");
    std::fs::write(&log, "").unwrap();
    let (mut child, rx) = common::follow(&log);
    {
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..64 {
            f.write_all(&chunk).unwrap();
        }
        writeln!(f, "\n{OOM}").unwrap();
    }
    let first = rx.recv_timeout(Duration::from_secs(120)).expect("the failure after the long line is printed");
    let hwm = vm_hwm_kib(child.id());
    let _ = child.kill();
    let _ = child.wait();
    let v: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(v["id"], "pytorch.cuda-oom");
    // The same process's peak on the failure line alone: the knowledge base, the grammars and
    // (in a debug build) their unoptimized tables, which grow with the vocabulary.
    let base_log = d.join("base.log");
    std::fs::write(&base_log, "").unwrap();
    let (mut base, base_rx) = common::follow(&base_log);
    {
        let mut f = std::fs::OpenOptions::new().append(true).open(&base_log).unwrap();
        writeln!(f, "{OOM}").unwrap();
    }
    base_rx.recv_timeout(Duration::from_secs(120)).expect("the failure alone is printed");
    let base_hwm = vm_hwm_kib(base.id());
    let _ = base.kill();
    let _ = base.wait();
    // It held far less than the line above that: kept head and tail are 1 MiB, reads 1 MiB at a time.
    assert!(hwm < base_hwm + 16 * 1024, "peak RSS {hwm} KiB for a 64 MiB line, {base_hwm} KiB for the failure alone");
}

/// Me10/Me11: op names holding escape sequences (a `jax.named_scope`, or a dump someone
/// sent) reach neither the text report nor the HTML file.
#[test]
fn memory_op_names_are_cleaned_in_text_and_html() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../memory/tests/fixtures/mlp_train_step/module_0034.jit_mlp_train_step.cpu_after_optimizations.hlo.pb");
    let b = std::fs::read(&src).unwrap();
    // Same length, so the proto stays valid.
    let (old, new) = (&b"transpose(jvp())"[..], &b"\x1b]0;PWNED\x07\x1b[2Jxx"[..]);
    assert_eq!(old.len(), new.len());
    let mut patched = b.clone();
    let mut at = 0;
    while let Some(i) = patched[at..].windows(old.len()).position(|w| w == old) {
        patched[at + i..at + i + old.len()].copy_from_slice(new);
        at += i + old.len();
    }
    assert!(at > 0, "op name in the fixture");
    let d = temp_dir("memory-inject");
    std::fs::write(d.join(src.file_name().unwrap()), &patched).unwrap();
    let out = oomdoc(&["memory", d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("jit(mlp_train_step)/xx/transpose"), "the op is still shown, cleaned: {s}");
    assert_eq!(unsafe_chars(&s), Vec::<String>::new(), "{s}");
    let html = d.join("report.html");
    let out = oomdoc(&["memory", d.join(src.file_name().unwrap()).to_str().unwrap(), "--format", "html", "-o", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.contains("<html"));
    assert_eq!(unsafe_chars(&h.replace('\r', "")), Vec::<String>::new());
}

// ------------------------------------------------------------------------------ run

fn run_oomdoc() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_oomdoc"));
    c.env("NO_COLOR", "1").stdin(Stdio::null());
    c
}

/// `child`'s output, or None when it had to be killed after `limit` (a hang guard).
fn wait_within(child: std::process::Child, limit: Duration) -> Option<Output> {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => Some(out.unwrap()),
        Err(_) => {
            unsafe { libc_kill(pid as i32, 9) };
            None
        }
    }
}

fn children_of(pid: u32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default().split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

/// R5: the job is stopped and resumed from outside (a scheduler's suspend/resume); oomdoc
/// neither stops itself nor loses the output after the stop.
#[test]
fn run_survives_the_job_being_stopped_and_resumed() {
    let child = run_oomdoc()
        .args(["run", "--no-pty", "--", "sh", "-c", "i=0; while [ $i -lt 6 ]; do echo tick $i; sleep 0.3; i=$((i+1)); done; exit 0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let oomdoc_pid = child.id();
    let mut job = Vec::new();
    for _ in 0..100 {
        job = children_of(oomdoc_pid);
        if !job.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let job = *job.first().expect("the job started");
    std::thread::sleep(Duration::from_millis(400));
    unsafe { libc_kill(job, 19) }; // SIGSTOP
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc_kill(job, 18) }; // SIGCONT
    let out = wait_within(child, Duration::from_secs(120)).expect("oomdoc ended (it used to stop itself for good)");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let o = String::from_utf8_lossy(&out.stdout);
    assert_eq!(o.lines().count(), 6, "{o}");
}

/// R1: a process the job started outlives it and keeps writing: its lines pass through and
/// its failure is diagnosed; oomdoc ends when it closes the output.
#[test]
fn run_passes_through_output_of_processes_that_outlive_the_job() {
    let cmd = format!("(for i in 1 2 3; do echo \"late line $i\"; sleep 1; done; echo '{OOM}' >&2) & echo started; exit 1");
    let out = run_oomdoc().env("OOMDOC_RUN_DRAIN_GRACE_MS", "60000").args(["run", "--no-pty", "--", "sh", "-c", &cmd]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let o = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<&str> = o.lines().collect();
    lines.sort();
    assert_eq!(lines, ["late line 1", "late line 2", "late line 3", "started"], "{o}");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("pytorch.cuda-oom"), "the late failure is diagnosed: {e}");
    assert!(!e.contains("still holds its output open"), "{e}");
}

/// The drain is bounded: a silent process holding the output open gets the grace, then a
/// note says its later output is not shown.
#[test]
fn run_stops_draining_a_silent_process_with_a_note() {
    let out = run_oomdoc()
        .env("OOMDOC_RUN_DRAIN_GRACE_MS", "300")
        .args(["run", "--no-pty", "--", "sh", "-c", "(sleep 30; echo never) & echo started; exit 1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "started\n");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("still holds its output open"), "{e}");
}

/// R8, R9, R10: the report path is checked before the job runs, and the job's own log is
/// never replaced by the report.
#[test]
fn run_report_never_replaces_the_jobs_log() {
    let d = temp_dir("run-report");
    let marker = d.join("ran");
    let touch = format!("touch '{}'; exit 1", marker.display());
    // A directory that does not exist: refused before the job.
    let bad = d.join("no/such/dir/r.json");
    let out = run_oomdoc().arg("run").arg("--report").arg(&bad).args(["--", "sh", "-c", &touch]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write the report"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!marker.exists(), "the job did not run");
    // The job's stdout goes to the report path: refused before the job.
    let log = d.join("out.log");
    std::fs::write(&log, "").unwrap();
    let out = run_oomdoc()
        .arg("run")
        .arg("--report")
        .arg(&log)
        .args(["--", "sh", "-c", &touch])
        .stdout(std::fs::File::create(&log).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard output goes to this file"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!marker.exists());
    // Through a hard link too.
    let link = d.join("hard.json");
    std::fs::hard_link(&log, &link).unwrap();
    let out = run_oomdoc().arg("run").arg("--report").arg(&link).args(["--", "true"]).stdout(std::fs::OpenOptions::new().append(true).open(&log).unwrap()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // The job writes its log to the report path: the log is kept, the report not written.
    let job_log = d.join("job.log");
    let cmd = format!("echo step 1 >> '{0}'; echo '{OOM}' >> '{0}'; exit 1", job_log.display());
    let out = run_oomdoc().arg("run").arg("--report").arg(&job_log).args(["--", "sh", "-c", &cmd]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let kept = std::fs::read_to_string(&job_log).unwrap();
    assert!(kept.contains("OutOfMemoryError"), "the job's log is intact: {kept}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("the report was not written"), "{}", String::from_utf8_lossy(&out.stderr));
    // An ordinary report path still gets the report.
    let rep = d.join("r.json");
    let out = run_oomdoc().arg("run").arg("--report").arg(&rep).args(["--", "sh", "-c", "exit 3"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&rep).unwrap()).unwrap();
    assert_eq!(v["exit_status"], 3);
}

/// W7: a SIGKILL with no kernel evidence of an OOM kill says so, and what to check.
#[test]
fn run_sigkill_without_memory_evidence_says_so() {
    let d = temp_dir("run-kill");
    let rep = d.join("r.json");
    let out = run_oomdoc().arg("run").arg("--report").arg(&rep).args(["--", "sh", "-c", "echo working; kill -9 $$"]).output().unwrap();
    assert_eq!(out.status.code(), Some(137));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&rep).unwrap()).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["confidence"], "likely", "{f}");
    let h = f["headline"].as_str().unwrap();
    assert!(h.starts_with("killed by SIGKILL; no memory evidence"), "{h}");
    assert!(h.contains("dmesg") && h.contains("memory.events"), "{h}");
}

/// R12: another process in the job's cgroup is OOM-killed while the job fails for its own
/// reason: the job is not blamed (no host.oom-killer finding), and a note says what happened.
#[test]
fn run_does_not_blame_the_job_for_another_process_oom_kill() {
    let Some(cg) = common::python_memory_cgroup("run_does_not_blame_the_job_for_another_process_oom_kill", "rel", 64 << 20) else { return };
    let d = temp_dir("run-shared-cgroup");
    let rep = d.join("r.json");
    let procs = cg.join("cgroup.procs");
    // The unrelated hog joins the cgroup and is killed half a second into the job's run.
    let hog = format!("echo $$ > '{}'; exec python3 -c 'import time; time.sleep(0.5); x = bytearray(400 << 20)'", procs.display());
    let mut hog = Command::new("sh").arg("-c").arg(&hog).stderr(Stdio::null()).spawn().unwrap();
    let job = format!(
        "echo $$ > '{}' && exec '{}' run --no-pty --report '{}' -- sh -c 'echo \"ValueError: bad config key lr\" >&2; sleep 2; exit 1'",
        procs.display(),
        env!("CARGO_BIN_EXE_oomdoc"),
        rep.display()
    );
    let out = Command::new("sh").arg("-c").arg(&job).env("NO_COLOR", "1").output().unwrap();
    let hog_status = hog.wait().unwrap();
    let _ = std::fs::remove_dir(&cg);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    if hog_status.code().is_some() {
        oomdoc_testkit::skip("run_does_not_blame_the_job_for_another_process_oom_kill", &format!("the other process was not OOM-killed here ({hog_status})"));
        return;
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&rep).unwrap()).unwrap();
    let ids: Vec<&str> = v["findings"].as_array().unwrap().iter().filter_map(|f| f["id"].as_str()).collect();
    assert!(!ids.contains(&"host.oom-killer"), "the job is not blamed: {v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("not part of"), "{notes}");
}

/// R12's limit: `run` learned the job's processes by sampling /proc every 200 ms, so a
/// worker OOM-killed within milliseconds of starting was never seen and its kill was taken
/// for another process's. In its own cgroup (made where the runner may), every process of
/// the job is counted at kill time: the launcher's quick worker is the job's, certain.
#[test]
fn run_attributes_a_worker_killed_within_milliseconds() {
    let Some(cg) = common::python_memory_cgroup("run_attributes_a_worker_killed_within_milliseconds", "quick", 64 << 20) else { return };
    let d = temp_dir("run-quick-worker");
    let rep = d.join("r.json");
    // The launcher says which limit its own cgroup states (a program that sizes itself
    // from it must see the same one); its worker asks for 512 MiB at once: killed within
    // milliseconds of starting.
    let launcher = d.join("launch.sh");
    std::fs::write(
        &launcher,
        "for f in $(awk -F: '$2 == \"memory\" { print \"/sys/fs/cgroup/memory\" $3 \"/memory.limit_in_bytes\" } $1 == \"0\" { print \"/sys/fs/cgroup\" $3 \"/memory.max\" }' /proc/self/cgroup); do\n\
         [ -f \"$f\" ] && echo \"own limit $(cat \"$f\")\" && break\n\
         done\n\
         python3 -c 'b = bytearray(512 << 20)'\n\
         echo worker died >&2\n\
         exit 1\n",
    )
    .unwrap();
    let job = format!(
        "echo $$ > '{}' && exec '{}' run --no-pty --report '{}' -- sh '{}'",
        cg.join("cgroup.procs").display(),
        env!("CARGO_BIN_EXE_oomdoc"),
        rep.display(),
        launcher.display()
    );
    let out = Command::new("sh").arg("-c").arg(&job).env("NO_COLOR", "1").output().unwrap();
    let leftover: Vec<_> = std::fs::read_dir(&cg).map(|r| r.flatten().filter(|e| e.path().is_dir()).map(|e| e.path()).collect()).unwrap_or_default();
    let _ = std::fs::remove_dir(&cg);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(leftover.is_empty(), "the job's cgroup is removed after the run: {leftover:?}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&rep).unwrap()).unwrap();
    let f = v["findings"].as_array().unwrap().iter().find(|f| f["id"] == "host.oom-killer").unwrap_or_else(|| panic!("the worker's kill is the job's: {v}")).clone();
    assert_eq!(f["confidence"], "certain", "{f}");
    assert!(f["headline"].as_str().unwrap().contains("a process of the job was killed by the OOM killer"), "{f}");
    assert_eq!(f["details"]["job_cgroup_oom_kill"], 1, "{f}");

    // A job cgroup left behind by a run that is over (its job outlived it, or it was
    // killed) is removed by the next run; one whose oomdoc still runs is not.
    let cg = common::small_memory_cgroup("stale", 64 << 20).unwrap();
    let stale = cg.join(format!("oomdoc-run-{}-1", i32::MAX - 1));
    let live = cg.join(format!("oomdoc-run-{}-1", std::process::id()));
    std::fs::create_dir(&stale).unwrap();
    std::fs::create_dir(&live).unwrap();
    let job = format!("echo $$ > '{}' && exec '{}' run --no-pty -- true", cg.join("cgroup.procs").display(), env!("CARGO_BIN_EXE_oomdoc"));
    assert!(Command::new("sh").arg("-c").arg(&job).status().unwrap().success());
    let (stale_left, live_left) = (stale.exists(), live.exists());
    let _ = std::fs::remove_dir(&live);
    let _ = std::fs::remove_dir(&stale);
    let _ = std::fs::remove_dir(&cg);
    assert!(!stale_left && live_left, "stale removed: {}, live kept: {live_left}", !stale_left);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("own limit {}", 64u64 << 20)), "the job's own cgroup states the limit: {stdout}");
}

// ------------------------------------------------------------------------------ mcp

/// `oomdoc mcp ARGS` with its replies read on a thread (so a blocked server cannot block the test).
struct Mcp {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    replies: std::sync::mpsc::Receiver<Value>,
}

impl Mcp {
    fn start(args: &[&str]) -> Mcp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(serde_json::from_str(&line).unwrap_or(Value::Null));
            }
        });
        Mcp { child, stdin, replies: rx }
    }

    fn send(&mut self, v: Value) {
        let s = self.stdin.as_mut().unwrap();
        s.write_all(format!("{v}\n").as_bytes()).unwrap();
        s.flush().unwrap();
    }

    /// The next reply, within a hang guard.
    fn recv(&self) -> Value {
        self.replies.recv_timeout(Duration::from_secs(120)).expect("a reply (the server is not blocked)")
    }

    fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        self.send(serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}));
        let r = self.recv();
        assert_eq!(r["id"], id, "{r}");
        r["result"].clone()
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// M16, M17: a device or FIFO path is refused at once instead of blocking the server.
#[test]
fn mcp_refuses_devices_and_fifos() {
    let d = temp_dir("mcp-fifo");
    let fifo = d.join("pipe.log");
    mkfifo(&fifo);
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.log")).unwrap();
    let mut m = Mcp::start(&[]);
    for (i, p) in [fifo.clone(), PathBuf::from("/dev/zero"), d.join("zero.log")].iter().enumerate() {
        let r = m.call(i as u64 + 1, "diagnose", serde_json::json!({"paths": [p]}));
        assert_eq!(r["isError"], true, "{r}");
        assert!(r.to_string().contains("not a regular file"), "{r}");
    }
    let r = m.call(9, "memory", serde_json::json!({"dump": "/dev/zero"}));
    assert_eq!(r["isError"], true, "{r}");
    // The directory holding them is read, skipping both.
    std::fs::write(d.join("a.log"), format!("{OOM}\n")).unwrap();
    let r = m.call(10, "diagnose", serde_json::json!({"paths": [d]}));
    assert_eq!(r["structuredContent"]["findings"][0]["id"], "pytorch.cuda-oom", "{r}");
}

/// M16, M18: calls run beside the reader: `ping` is answered while a call runs, and a
/// cancelled call's result is never sent.
#[test]
fn mcp_answers_while_a_call_runs_and_drops_a_cancelled_result() {
    let d = temp_dir("mcp-cancel");
    // A log that takes a while to scan in a debug build: many distinct failures.
    let mut log = String::new();
    for i in 0..1_000 {
        log.push_str(&format!("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {}.00 MiB.\n", i + 1));
    }
    std::fs::write(d.join("big.log"), &log).unwrap();
    let mut m = Mcp::start(&[]);
    m.send(serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "diagnose", "arguments": {"paths": [d.join("big.log")]}}}));
    m.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "timeout"}}));
    m.send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    assert_eq!(m.recv()["id"], 2, "ping answered first");
    // A second call runs and answers while the first is still going or done.
    let r = m.call(3, "explain", serde_json::json!({"id": "E1001"}));
    assert_eq!(r["isError"], false);
    // Closing stdin lets the running call finish; its result is not sent.
    drop(m.stdin.take());
    let rest: Vec<Value> = m.replies.iter().collect();
    assert!(rest.iter().all(|r| r["id"] != 1), "{rest:?}");
}

/// M10: the rest of an oversized line is skipped a buffer at a time, not buffered.
#[test]
fn mcp_skips_an_oversized_line_without_keeping_it() {
    let mut m = Mcp::start(&[]);
    let pid = m.child.id();
    {
        let s = m.stdin.as_mut().unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..192 {
            s.write_all(&chunk).unwrap();
        }
        s.write_all(b"\n").unwrap();
    }
    assert_eq!(m.recv()["error"]["code"], -32700);
    m.send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    assert_eq!(m.recv()["id"], 2);
    let hwm = vm_hwm_kib(pid);
    // The first 64 MiB are read to tell the line is too long; the other 128 MiB are not kept.
    assert!(hwm < 128 * 1024, "peak RSS {hwm} KiB for a 192 MiB line");
}

/// M12, M13, problem 21: `--root` confines what the tools read, links included.
#[test]
fn mcp_root_confines_paths() {
    let d = temp_dir("mcp-root");
    let root = d.join("logs");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("a.log"), format!("{OOM}\n")).unwrap();
    std::fs::write(d.join("secret.log"), format!("{OOM}\n")).unwrap();
    std::os::unix::fs::symlink("../secret.log", root.join("b.log")).unwrap();
    let mut m = Mcp::start(&["--root", root.to_str().unwrap()]);
    let r = m.call(1, "diagnose", serde_json::json!({"paths": [d.join("secret.log")]}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(r.to_string().contains("outside the directory"), "{r}");
    let r = m.call(2, "diagnose", serde_json::json!({"paths": [root.join("b.log")]}));
    assert_eq!(r["isError"], true, "a link out of the root: {r}");
    let r = m.call(3, "diagnose", serde_json::json!({"paths": [root]}));
    let v = &r["structuredContent"];
    assert_eq!(v["files_scanned"], 1, "only a.log; the link out is not followed: {v}");
    assert!(v["unreadable"].to_string().contains("b.log"), "{v}");
    let r = m.call(4, "memory", serde_json::json!({"dump": d}));
    assert_eq!(r["isError"], true, "{r}");
}

/// Me7, problem 18: `oomdoc memory X.hlo.pb` where X is a link to /dev/zero is refused,
/// not read without end.
#[test]
fn memory_refuses_a_device_named_like_a_dump() {
    let d = temp_dir("memory-devzero");
    let p = d.join("module_0001.jit_f.cpu_after_optimizations.hlo.pb");
    std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
    let out = oomdoc_within(&["memory", p.to_str().unwrap()], Duration::from_secs(120)).expect("returned");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"), "{}", String::from_utf8_lossy(&out.stderr));
}

// ------------------------------------------------------------------------------ small miscounts

/// P1: "1 line", not "1 lines".
#[test]
fn one_line_is_singular() {
    let d = temp_dir("plural");
    std::fs::write(d.join("one.log"), "step 1\n").unwrap();
    let out = oomdoc(&["diagnose", d.join("one.log").to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no accelerator memory failure found (1 line)");
}

/// D49: a closed standard input is an error, not an empty log.
#[test]
fn closed_stdin_is_an_error() {
    let out = std::process::Command::new("sh").arg("-c").arg(format!("exec '{}' diagnose <&-", env!("CARGO_BIN_EXE_oomdoc"))).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard input is closed"), "{}", String::from_utf8_lossy(&out.stderr));
    // /dev/null likewise (Rust opens a closed descriptor 0 on it at start).
    let out = Command::new(env!("CARGO_BIN_EXE_oomdoc")).arg("diagnose").stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// D46: the same log given twice, or reached through a link too, is read once.
#[test]
fn the_same_file_twice_is_read_once() {
    let d = temp_dir("dup");
    std::fs::write(d.join("one.log"), format!("{OOM}\n")).unwrap();
    std::os::unix::fs::symlink("one.log", d.join("link.log")).unwrap();
    let one = d.join("one.log");
    for args in [vec![one.to_str().unwrap(), one.to_str().unwrap()], vec![d.to_str().unwrap()]] {
        let mut a = vec!["diagnose", "--format", "json"];
        a.extend(args);
        let v: Value = serde_json::from_slice(&oomdoc(&a).stdout).unwrap();
        assert_eq!(v["findings"][0]["occurrences"], 1, "{v}");
        assert_eq!(v["files_scanned"], 1, "{v}");
    }
}

/// D47: two file names that differ only in a byte that is not UTF-8 stay two names in
/// `files` (a lossy decoding made both `host\u{fffd}.log`), and print safely.
#[test]
fn names_that_differ_in_an_invalid_byte_stay_apart() {
    use std::os::unix::ffi::OsStrExt;
    let d = temp_dir("invalid-names");
    for b in [0xfe_u8, 0xff] {
        let name = std::ffi::OsStr::from_bytes(&[b"host".as_slice(), &[b], b".log"].concat()).to_owned();
        std::fs::write(d.join(name), format!("{OOM}\n")).unwrap();
    }
    let v: Value = serde_json::from_slice(&oomdoc(&["diagnose", "--format", "json", d.to_str().unwrap()]).stdout).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["occurrences"], 2, "{v}");
    let files: Vec<String> = f["files"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().rsplit('/').next().unwrap().to_string()).collect();
    assert_eq!(files, ["host\\xfe.log", "host\\xff.log"], "{v}");
    let text = String::from_utf8(oomdoc(&["diagnose", d.to_str().unwrap()]).stdout).unwrap();
    assert!(text.contains("host\\xfe.log") && text.contains("host\\xff.log"), "{text}");
}

/// D17: a log whose path is too long to open is listed as unreadable, not skipped silently.
#[test]
fn too_long_paths_are_listed() {
    let d = temp_dir("deep");
    // Past PATH_MAX (4096), made one relative step at a time by a shell.
    let name = "d".repeat(200);
    // (A relative chdir per level: shells keep the whole path and refuse past PATH_MAX.)
    let script = format!("import os\nos.chdir({:?})\nfor _ in range(25):\n    os.mkdir({name:?}); os.chdir({name:?})\nopen('x.log', 'w').write({OOM:?} + '\\n')\n", d.display().to_string());
    match Command::new("python3").arg("-c").arg(&script).status() {
        Ok(s) if s.success() => {}
        _ => {
            oomdoc_testkit::require_in_ci("too_long_paths_are_listed", "python3 is needed to make a path longer than PATH_MAX");
            return;
        }
    }
    std::fs::write(d.join("ok.log"), "step\n").unwrap();
    let out = oomdoc(&["diagnose", d.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(v["unreadable"].as_array().is_some_and(|u| !u.is_empty()) || !v["findings"].as_array().unwrap().is_empty(), "the deep log is read or listed: {v}");
    // Alone, it is named in the error, not "no log files found".
    std::fs::remove_file(d.join("ok.log")).unwrap();
    let out = oomdoc(&["diagnose", d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("none of the logs could be read") && e.contains("too long"), "{e}");
    // Gone afterwards: a path past PATH_MAX left in target/ trips tools that walk it
    // (`git worktree remove` fails on it). std's remove_dir_all walks by descriptor.
    std::fs::remove_dir_all(&d).unwrap();
}

/// Me13: `memory -o` through a hard link to a file inside the input directory is refused.
#[test]
fn memory_output_through_a_hard_link_is_refused() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../memory/tests/fixtures/mlp_train_step/module_0034.jit_mlp_train_step.cpu_after_optimizations.hlo.pb");
    let d = temp_dir("memory-hardlink");
    let dump = d.join("dump");
    std::fs::create_dir(&dump).unwrap();
    std::fs::copy(&src, dump.join(src.file_name().unwrap())).unwrap();
    let out_path = d.join("hard.html");
    std::fs::hard_link(dump.join(src.file_name().unwrap()), &out_path).unwrap();
    let before = std::fs::read(&out_path).unwrap();
    let out = oomdoc(&["memory", dump.to_str().unwrap(), "--format", "html", "-o", out_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&out_path).unwrap(), before, "the input is intact");
}

// ------------------------------------------------------------------------------ dumps

/// A dump directory with the three fixture modules (mlp, transformer, adam).
fn three_module_dump(name: &str) -> PathBuf {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("../memory/tests/fixtures");
    let d = temp_dir(name);
    for m in [
        "mlp_train_step/module_0034.jit_mlp_train_step.cpu_after_optimizations.hlo.pb",
        "transformer_train_step/module_0028.jit_transformer_train_step.cpu_after_optimizations.hlo.pb",
        "donated_adam_update/module_0014.jit_donated_adam_update.cpu_after_optimizations.hlo.pb",
    ] {
        std::fs::copy(f.join(m), d.join(Path::new(m).file_name().unwrap())).unwrap();
    }
    d
}

/// C1: a dump holding several modules, and a message that names none: the module whose
/// temp allocation is the size that failed is attached, and a note says why; with no
/// match, nothing is attached and the note says that too.
#[test]
fn dump_module_chosen_by_the_failed_size_with_a_note() {
    let dump = three_module_dump("dump-choose");
    let run = |bytes: u64| -> Value {
        let mut child = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
            .args(["diagnose", "-", "--format", "json", "--dump", dump.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        writeln!(child.stdin.take().unwrap(), "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate {bytes} bytes.").unwrap();
        serde_json::from_slice(&child.wait_with_output().unwrap().stdout).unwrap()
    };
    // jit_mlp_train_step's temp allocation is 3,166,208 bytes.
    let v = run(3_166_208);
    assert_eq!(v["findings"][0]["memory"]["module"], "jit_mlp_train_step", "{v}");
    assert!(v["notes"].to_string().contains("because its temp allocation is the 3166208 bytes"), "{v}");
    let v = run(12_345);
    assert!(v["findings"][0]["memory"].is_null(), "{v}");
    assert!(v["notes"].to_string().contains("no module of the XLA dump was attached"), "{v}");
    assert!(v["notes"].to_string().contains("jit_transformer_train_step"), "{v}");
}

/// C4: `oomdoc memory DIR` says which rule chose the module it shows, and a profile is
/// called a profile.
#[test]
fn memory_says_why_this_module_and_profile_is_a_profile() {
    let dump = three_module_dump("memory-rule");
    let out = oomdoc(&["memory", dump.to_str().unwrap()]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("3 modules in the dump"), "{s}");
    assert!(s.contains("→ jit_transformer_train_step: the module with the largest peak"), "{s}");
    let profile = Path::new(env!("CARGO_MANIFEST_DIR")).join("../memory/tests/fixtures/profile_multi_module");
    let out = oomdoc(&["memory", profile.to_str().unwrap()]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("13 modules in the profile"), "{s}");
}

// ------------------------------------------------------------------------------ plan

/// P3: a GPU name is accepted where an sm_XX arch is.
#[test]
fn plan_triton_takes_gpu_names() {
    let by_arch = oomdoc(&["plan", "triton", "--arch", "sm_89", "--block-m", "128", "--block-n", "128", "--block-k", "64", "--format", "json"]);
    assert_eq!(by_arch.status.code(), Some(0), "{}", String::from_utf8_lossy(&by_arch.stderr));
    for name in ["rtx4090", "RTX 4090", "L40S"] {
        let out = oomdoc(&["plan", "triton", "--arch", name, "--block-m", "128", "--block-n", "128", "--block-k", "64", "--format", "json"]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.stdout, by_arch.stdout, "{name}");
    }
}

/// C6: a kernel that fits the default gets no lower vmem_limit_bytes suggestion.
#[test]
fn plan_pallas_never_suggests_a_lower_limit() {
    let d = temp_dir("plan-lower");
    let spec = d.join("k.toml");
    std::fs::write(&spec, "chip = \"v6e\"\ngrid = [64, 64]\n[[inputs]]\nname = \"a\"\nshape = [8192, 8192]\ndtype = \"float32\"\nblock = [128, 8192]\n[[inputs]]\nname = \"b\"\nshape = [8192, 8192]\ndtype = \"float32\"\nblock = [8192, 128]\n[[outputs]]\nname = \"c\"\nshape = [8192, 8192]\ndtype = \"float32\"\nblock = [128, 128]\n").unwrap();
    let out = oomdoc(&["plan", "pallas", spec.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["fits"], true, "{v}");
    assert!(v["suggested_vmem_limit_bytes"].is_null(), "{v}");
    let text = String::from_utf8_lossy(&oomdoc(&["plan", "pallas", spec.to_str().unwrap()]).stdout).to_string();
    assert!(!text.contains("covers it"), "{text}");
}

/// D35–D37: `examples/train.log` with two spaces (or a CP1252 no-break space) before each
/// unit gives the same sizes and cause as the original.
#[test]
fn sizes_survive_odd_spaces_before_the_unit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let original = std::fs::read(root.join("examples/train.log")).unwrap();
    let d = temp_dir("odd-spaces");
    let sizes = |p: &Path| -> Value {
        let v: Value = serde_json::from_slice(&oomdoc(&["diagnose", p.to_str().unwrap(), "--format", "json"]).stdout).unwrap();
        let f = v["findings"].as_array().unwrap().iter().find(|f| f["id"] == "pytorch.cuda-oom").unwrap().clone();
        serde_json::json!({"sizes": f["sizes"], "cause": f["cause"]})
    };
    std::fs::write(d.join("orig.log"), &original).unwrap();
    let want = sizes(&d.join("orig.log"));
    let text = String::from_utf8(original).unwrap();
    for (name, space) in [("two.log", &b"  "[..]), ("cp1252.log", &b"\xa0"[..])] {
        let mut out = Vec::new();
        let mut rest = text.as_str();
        // " GiB" / " MiB" → the odd space before the unit, every one in order (the sizes
        // of the TPU lines, "18.00M", have no space to replace).
        let next_unit = |r: &str| [" GiB", " MiB"].iter().filter_map(|u| r.find(u)).min();
        let mut replaced = 0;
        while let Some(i) = next_unit(rest) {
            replaced += 1;
            out.extend_from_slice(rest[..i].as_bytes());
            out.extend_from_slice(space);
            out.extend_from_slice(rest[i + 1..i + 4].as_bytes());
            rest = &rest[i + 4..];
        }
        out.extend_from_slice(rest.as_bytes());
        assert!(replaced >= 10, "{replaced} units re-spaced");
        std::fs::write(d.join(name), &out).unwrap();
        assert_eq!(sizes(&d.join(name)), want, "{name}");
    }
}
