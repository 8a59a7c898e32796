//! `oomdoc run -- CMD` with real child processes.
#![cfg(unix)]

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn oomdoc() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_oomdoc"));
    c.env("NO_COLOR", "1").stdin(Stdio::null());
    c
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-run-cli-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A real message from the dev corpus (easydiffusion/easydiffusion#104).
fn real_cuda_message() -> String {
    common::dev_message("easydiff-104-max-split-hint")
}

fn script(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("job.sh");
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    p
}

/// Runs `cmd` to its end, or panics once `HANG_GUARD` has passed: a guard against a hang on a
/// loaded machine, never a performance bound.
fn output_within_guard(mut cmd: Command) -> Output {
    const HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(120);
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(HANG_GUARD) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: plain kill(2) of the child we started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("still running after {HANG_GUARD:?}")
        }
    }
}

/// The drain grace stretched past the hang guard: a run that ends within the guard ended when
/// its command did, without waiting out the grace.
const GRACE_PAST_THE_GUARD_MS: &str = "600000";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn report(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn failing_script_passes_output_through_then_diagnoses() {
    let dir = temp_dir("fail");
    let msg = real_cuda_message();
    std::fs::write(dir.join("msg.txt"), format!("{msg}\n")).unwrap();
    let job = script(&dir, &format!("echo 'epoch 1 step 10 loss 0.53'\ncat '{}' >&2\nexit 3", dir.join("msg.txt").display()));
    let rep = dir.join("report.json");
    let out = oomdoc().args(["run", "--report"]).arg(&rep).arg("--").arg("sh").arg(&job).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "the command's own status");
    assert_eq!(text(&out.stdout), "epoch 1 step 10 loss 0.53\n", "stdout untouched");
    let err = text(&out.stderr);
    // The command's stderr first, byte for byte, then the diagnosis.
    assert!(err.starts_with(&format!("{msg}\n")), "{err}");
    let diag = &err[msg.len()..];
    assert!(diag.contains("exited with status 3"), "{diag}");
    assert!(diag.contains("pytorch.cuda-oom"), "{diag}");
    assert!(diag.contains("tried to allocate 64.00 MiB"), "{diag}");
    let v = report(&rep);
    assert_eq!(v["exit_status"], 3);
    assert_eq!(v["signal"], Value::Null);
    assert_eq!(v["findings"][0]["id"], "pytorch.cuda-oom");
    assert_eq!(v["findings"][0]["sizes"]["requested"], 64u64 << 20);
}

#[test]
fn success_adds_nothing_but_the_report_is_written() {
    let dir = temp_dir("ok");
    let rep = dir.join("report.json");
    let out = oomdoc().args(["run", "--report"]).arg(&rep).args(["--", "sh", "-c", "echo fine; echo progress >&2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "fine\n");
    assert_eq!(text(&out.stderr), "progress\n");
    let v = report(&rep);
    assert_eq!(v["findings"].as_array().unwrap().len(), 0);
    assert_eq!(v["exit_status"], 0);
}

#[test]
fn sigkill_gives_137_and_a_host_oom_finding() {
    let dir = temp_dir("kill");
    let rep = dir.join("report.json");
    let out = oomdoc().args(["run", "--report"]).arg(&rep).args(["--", "sh", "-c", "echo before; kill -9 $$"]).output().unwrap();
    assert_eq!(out.status.code(), Some(137));
    assert_eq!(text(&out.stdout), "before\n");
    let err = text(&out.stderr);
    assert!(err.contains("was killed by SIGKILL"), "{err}");
    assert!(err.contains("host.oom-killer"), "{err}");
    let v = report(&rep);
    assert_eq!(v["signal"], 9);
    assert_eq!(v["exit_status"], 137);
    let f = &v["findings"][0];
    assert_eq!(f["id"], "host.oom-killer");
    // kill -9 by hand is no OOM kill: never `certain` unless the kernel proves it.
    assert_eq!(f["confidence"], "likely", "{f}");
}

#[test]
fn cannot_start_is_127_with_one_line() {
    let out = oomdoc().args(["run", "--", "/nonexistent/oomdoc-no-such-command"]).output().unwrap();
    assert_eq!(out.status.code(), Some(127));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("oomdoc: cannot run"), "{err}");
    // The report is written in every case.
    let rep = temp_dir("nostart").join("report.json");
    let out = oomdoc().args(["run", "--report"]).arg(&rep).args(["--", "/nonexistent/oomdoc-no-such-command"]).output().unwrap();
    assert_eq!(out.status.code(), Some(127));
    let v = report(&rep);
    assert_eq!(v["exit_status"], 127);
    assert_eq!(v["findings"].as_array().unwrap().len(), 0);
}

#[test]
fn binary_output_passes_byte_for_byte() {
    let out = oomdoc().args(["run", "--", "sh", "-c", r"printf '\000\377\376 not utf-8 \200\r\n\033[31mred\033[0m\rbar'"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"\x00\xff\xfe not utf-8 \x80\r\n\x1b[31mred\x1b[0m\rbar".to_vec());
}

#[test]
fn child_closing_stdout_early() {
    let out = oomdoc().args(["run", "--", "sh", "-c", "echo first; exec 1>&-; sleep 0.2; echo still here >&2; exit 1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "first\n");
    let err = text(&out.stderr);
    assert!(err.starts_with("still here\n"), "{err}");
    assert!(err.contains("no accelerator memory failure found"), "{err}");
}

#[test]
fn sigterm_is_forwarded_to_the_process_group() {
    let child = oomdoc()
        .args(["run", "--", "sh", "-c", "trap 'echo got TERM; exit 7' TERM; echo ready; while true; do sleep 0.05; done"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let pid = child.id();
    assert!(Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
    let out: Output = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "ready\ngot TERM\n");
}

#[test]
fn xla_dump_flags_are_appended_and_the_dump_removed_or_kept() {
    let out = oomdoc().env("XLA_FLAGS", "--xla_force_host_platform_device_count=2").args(["run", "--xla-dump", "--", "sh", "-c", "echo \"$XLA_FLAGS\""]).output().unwrap();
    let flags = text(&out.stdout);
    assert!(flags.starts_with("--xla_force_host_platform_device_count=2 --xla_dump_to="), "{flags}");
    assert!(flags.trim_end().ends_with(" --xla_dump_hlo_as_proto"), "{flags}");
    let dump = flags.split("--xla_dump_to=").nth(1).unwrap().split(' ').next().unwrap().to_string();
    assert!(!Path::new(&dump).exists(), "temporary dump {dump} removed");
    let keep = temp_dir("keep").join("dump");
    let out = oomdoc().arg("run").arg("--keep-dump").arg(&keep).args(["--", "sh", "-c", "echo \"$XLA_FLAGS\"; touch \"${XLA_FLAGS#*--xla_dump_to=}\" 2>/dev/null; exit 0"]).output().unwrap();
    assert_eq!(text(&out.stdout), format!("--xla_dump_to={} --xla_dump_hlo_as_proto\n", keep.display()));
    assert!(keep.is_dir());
}

/// A real out-of-memory kill in a small memory cgroup, where the test runner may make one
/// (root with a writable cgroup v1 memory controller or cgroup v2); skipped otherwise.
#[test]
fn oom_kill_in_a_small_cgroup_is_certain() {
    let Some(cg) = common::python_memory_cgroup("oom_kill_in_a_small_cgroup_is_certain", "run-cli", 64 << 20) else { return };
    let dir = temp_dir("cgroup");
    let rep = dir.join("report.json");
    let cmd = format!(
        "echo $$ > '{}/cgroup.procs' && exec '{}' run --report '{}' -- python3 -c 'b = b\"x\" * (512 << 20); print(len(b))'",
        cg.display(),
        env!("CARGO_BIN_EXE_oomdoc"),
        rep.display()
    );
    let out = Command::new("sh").arg("-c").arg(&cmd).env("NO_COLOR", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(137), "{}", text(&out.stderr));
    let v = report(&rep);
    let f = &v["findings"][0];
    assert_eq!(f["id"], "host.oom-killer");
    assert_eq!(f["confidence"], "certain", "{f}");
    assert_eq!(f["sizes"]["limit"], 64u64 << 20, "{f}");

    // A launcher whose worker is OOM-killed and which then exits 1 (as torchrun does); the
    // worker grows in steps, as training does. (One killed within milliseconds of starting:
    // `reliability.rs`, run_attributes_a_worker_killed_within_milliseconds.)
    let cmd = format!(
        "echo $$ > '{}/cgroup.procs' && exec '{}' run --report '{}' -- sh -c \"python3 -c 'import time\nb = []\nwhile True: b.append(bytearray(8 << 20)); time.sleep(0.1)'; echo worker died >&2; exit 1\"",
        cg.display(),
        env!("CARGO_BIN_EXE_oomdoc"),
        rep.display()
    );
    let out = Command::new("sh").arg("-c").arg(&cmd).env("NO_COLOR", "1").output().unwrap();
    let _ = std::fs::remove_dir(&cg);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("a process of the job was killed by the OOM killer"), "{err}");
    let v = report(&rep);
    let f = v["findings"].as_array().unwrap().iter().find(|f| f["id"] == "host.oom-killer").expect("host finding").clone();
    assert_eq!(f["confidence"], "certain", "{f}");
}

/// `ulimit -v`: the allocation fails inside the child (no kill); the output still passes
/// through and the status is the child's.
#[test]
fn ulimit_v_failure_keeps_the_status() {
    if Command::new("python3").arg("-c").arg("pass").status().map(|s| !s.success()).unwrap_or(true) {
        oomdoc_testkit::require_in_ci("run python test", "python3 is not installed");
        return;
    }
    let out = oomdoc()
        .args(["run", "--", "sh", "-c", "ulimit -v 400000 || exit 99; exec python3 -c 'b = bytearray(2 << 30)'"])
        .output()
        .unwrap();
    if out.status.code() == Some(99) {
        oomdoc_testkit::skip("run ulimit test", "ulimit -v is not permitted here");
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("MemoryError"), "{err}");
    assert!(err.contains("── oomdoc: "), "{err}");
}

/// On a terminal the command gets a pseudo-terminal: it sees a TTY and keeps its colours.
#[test]
fn terminal_gets_a_pty() {
    if Command::new("script").args(["-qc", "true", "/dev/null"]).output().map(|o| !o.status.success()).unwrap_or(true) {
        oomdoc_testkit::require_in_ci("terminal_gets_a_pty", "util-linux `script` is not installed");
        return;
    }
    let inner = format!("'{}' run -- sh -c 'test -t 1 && echo out-tty; test -t 2 && echo err-tty >&2; printf \"\\033[31mred\\033[0m\\n\"'", env!("CARGO_BIN_EXE_oomdoc"));
    // The pty's end of file comes when the command exits, not after the drain grace.
    let mut cmd = Command::new("script");
    cmd.args(["-qc", &inner, "/dev/null"]).stdin(Stdio::null()).env("OOMDOC_RUN_DRAIN_GRACE_MS", GRACE_PAST_THE_GUARD_MS);
    let out = output_within_guard(cmd);
    let s = text(&out.stdout);
    assert!(s.contains("out-tty"), "{s:?}");
    assert!(s.contains("err-tty"), "{s:?}");
    assert!(s.contains("\x1b[31mred\x1b[0m\r\n"), "{s:?}");
    assert!(!s.contains("\r\r\n"), "newlines translated once: {s:?}");
}

/// `oomdoc run -- yes | head -1`: the reader leaves, the command gets SIGPIPE as without
/// oomdoc, and nothing is added.
#[test]
fn reader_leaving_early_ends_the_command_quietly() {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("'{}' run -- yes | head -n 2; echo \"status ${{PIPESTATUS:-}}\" >/dev/null", env!("CARGO_BIN_EXE_oomdoc")))
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "y\ny\n");
    assert_eq!(text(&out.stderr), "", "no diagnosis for a SIGPIPE");
}

/// `--xla-dump`: the failing module's memory from the dump the command wrote is attached.
#[test]
fn xla_dump_is_attached_to_the_failure() {
    let dir = temp_dir("xla");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../memory/tests/fixtures/mlp_train_step");
    // A real XLA message (jax-ml/jax#788, tests/corpus/dev.jsonl) that names no module: the
    // dump's only module is the one attached.
    let msg = common::dev_message("jax-788-replica-failed-legacy");
    std::fs::write(dir.join("msg.txt"), format!("{msg}\n")).unwrap();
    let job = script(
        &dir,
        &format!("d=\"${{XLA_FLAGS#*--xla_dump_to=}}\"; d=\"${{d%% *}}\"\ncp '{}'/* \"$d\"/\ncat '{}' >&2\nexit 1", fixture.display(), dir.join("msg.txt").display()),
    );
    let rep = dir.join("report.json");
    let out = oomdoc().args(["run", "--xla-dump", "--report"]).arg(&rep).arg("--").arg("sh").arg(&job).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v = report(&rep);
    let f = &v["findings"][0];
    assert_eq!(f["memory"]["module"], "jit_mlp_train_step", "{f}");
}

/// A background process that keeps the output open after the command exits does not hold
/// oomdoc: it waits a short grace, then diagnoses and exits with the command's status.
#[test]
fn background_child_holding_the_output_does_not_hang() {
    // The background process outlives the hang guard (120 s); the grace (1 s here) lets oomdoc go on.
    let mut cmd = oomdoc();
    cmd.args(["run", "--", "sh", "-c", "sleep 130 & echo hi; exit 2"]).env("OOMDOC_RUN_DRAIN_GRACE_MS", "1000");
    let out = output_within_guard(cmd);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "hi\n");
}

/// The real 3-GPU snapshot whose device 1 ran out of memory (its author published the
/// snapshot, not the log), and PyTorch's OOM message written from its own `oom` entry, as
/// in diagnose_cli's snapshot test.
fn oom_snapshot() -> (PathBuf, &'static str) {
    let snap = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/pytorch-snapshots/g4-compile-context-expandable-3gpu-OOM.pickle");
    assert!(snap.is_file(), "{} is missing (shared/ fixtures)", snap.display());
    (snap, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.94 GiB. GPU 1 has a total capacity of 79.25 GiB of which 91.25 MiB is free.")
}

/// `--record-snapshot`: the job finds the directory and the bound in its environment, the
/// snapshot it leaves there is attached to the failure and kept next to the report, and
/// the temp directory goes.
#[test]
fn recorded_snapshot_is_attached_to_the_failure() {
    let dir = temp_dir("record");
    let (snap, msg) = oom_snapshot();
    let seen = dir.join("seen.txt");
    let job = script(
        &dir,
        &format!(
            "[ -d \"$OOMDOC_RECORD_SNAPSHOT_DIR\" ] && [ \"$OOMDOC_RECORD_MAX_ENTRIES\" = 100000 ] || exit 3\n\
             [ -f \"${{PYTHONPATH%%:*}}/sitecustomize.py\" ] || exit 4\n\
             echo \"$OOMDOC_RECORD_SNAPSHOT_DIR\" > '{}'\n\
             cp '{}' \"$OOMDOC_RECORD_SNAPSHOT_DIR/oomdoc-snapshot-4242-gpu1.pickle\"\n\
             echo '{msg}' >&2\nexit 1",
            seen.display(),
            snap.display()
        ),
    );
    let rep = dir.join("report.json");
    let out = oomdoc().args(["run", "--record-snapshot", "--report"]).arg(&rep).arg("--").arg("sh").arg(&job).env_remove("OOMDOC_RECORD_MAX_ENTRIES").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v = report(&rep);
    let m = &v["findings"][0]["memory"];
    assert_eq!(m["device"], 1, "{v}");
    assert_eq!(m["live_at"], "oom");
    assert!(m["top_call_sites"][0]["call_site"].as_str().unwrap().ends_with("models.py:174:update_nodes"), "{m}");
    let kept = dir.join("oomdoc-snapshot-4242-gpu1.pickle");
    assert_eq!(m["snapshot"], kept.display().to_string());
    assert!(kept.is_file());
    assert!(text(&out.stderr).contains(&format!("snapshot recorded at the failure: {}", kept.display())), "{}", text(&out.stderr));
    let tmp = std::fs::read_to_string(&seen).unwrap();
    assert!(!Path::new(tmp.trim()).parent().unwrap().exists(), "the temp directory {tmp} is left");
}

/// The sitecustomize oomdoc writes, with a stand-in `torch` that logs what is called: it
/// arms nothing until torch is imported, then bounded history and the OOM observer, whose
/// dump is attached; the user's own sitecustomize still runs.
#[test]
fn record_snapshot_arms_python_when_torch_is_imported() {
    if Command::new("python3").arg("-c").arg("pass").output().map_or(true, |o| !o.status.success()) {
        eprintln!("python3 is not here: skipped");
        return;
    }
    let dir = temp_dir("record-py");
    let (snap, msg) = oom_snapshot();
    let write = |rel: &str, body: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    };
    let log = "import os\ndef log(s):\n    open(os.environ['FAKE_TORCH_LOG'], 'a').write(s + '\\n')\n";
    write("user/sitecustomize.py", &format!("{log}log('user sitecustomize')\n"));
    write("fake/torch/__init__.py", "from . import _C, cuda\n");
    write("fake/torch/_C.py", &format!("{log}observers = []\ndef _cuda_attach_out_of_memory_observer(fn):\n    observers.append(fn)\n    log('observer ' + fn.__name__)\n"));
    write("fake/torch/cuda/__init__.py", "from . import memory\ndef is_available():\n    return True\n");
    write(
        "fake/torch/cuda/memory.py",
        &format!("{log}import shutil\ndef _record_memory_history(**kw):\n    log('record ' + repr(kw))\ndef _dump_snapshot(path):\n    shutil.copy(os.environ['FAKE_SNAPSHOT'], path)\n"),
    );
    let calls = dir.join("calls.txt");
    let pythonpath = format!("{}:{}", dir.join("fake").display(), dir.join("user").display());
    let run = |code: &str| {
        let _ = std::fs::remove_file(&calls);
        let rep = dir.join("report.json");
        let out = oomdoc()
            .args(["run", "--record-snapshot", "--report"])
            .arg(&rep)
            .args(["--", "python3", "-c", code])
            .env("PYTHONPATH", &pythonpath)
            .env("FAKE_TORCH_LOG", &calls)
            .env("FAKE_SNAPSHOT", &snap)
            .env("OOMDOC_RECORD_MAX_ENTRIES", "5000")
            .output()
            .unwrap();
        (out, std::fs::read_to_string(&calls).unwrap_or_default(), report(&rep))
    };
    // No torch imported: only the user's sitecustomize ran.
    let (out, called, _) = run("import sys; print('ok')");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "ok\n");
    assert_eq!(called, "user sitecustomize\n");
    // torch imported: armed once, with the bound; the observer's dump is attached.
    let code = format!("import sys, torch\ntorch._C.observers[0](1, 5308694528, 0, 95682560)\nsys.stderr.write({msg:?} + '\\n')\nsys.exit(1)");
    let (out, called, v) = run(&code);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(called, "user sitecustomize\nrecord {'max_entries': 5000}\nobserver _on_oom\n");
    let m = &v["findings"][0]["memory"];
    assert!(m["top_call_sites"][0]["call_site"].as_str().unwrap().ends_with("models.py:174:update_nodes"), "{v}");
    assert!(m["snapshot"].as_str().unwrap().ends_with("-gpu1.pickle"), "{m}");
}
