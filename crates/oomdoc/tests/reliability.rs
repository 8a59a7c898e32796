//! Hostile input of the 2026-11-26 reliability round (`shared/reference/reliability-2026-11-26.md`),
//! each at small scale: terminal injection (D41–D43, R13), a symlink to a FIFO in a
//! directory (D3), `--follow` and rotation (D50), long lines (D52) and FIFOs (D54), zip
//! archives (D44), `input.encoding` (problem 20).
#![cfg(unix)]

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

/// `oomdoc diagnose --follow` on `log`, its stdout lines sent to the channel.
fn follow(log: &Path) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
        .args(["diagnose", "--follow", log.to_str().unwrap(), "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    (child, rx)
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
    let (mut child, rx) = follow(&log);
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
    let (mut child, rx) = follow(&log);
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
    // It held far less than the line: kept head and tail are 1 MiB, reads 1 MiB at a time.
    assert!(hwm < 48 * 1024, "peak RSS {hwm} KiB for a 64 MiB line");
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
