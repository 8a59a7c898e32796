//! Hostile inputs for the CLI (issue 12), each generated at small scale: every command must
//! end within a time bound, never panic (exit 101), and give a clear message or a correct
//! answer. Cases whose fix belongs to another crate's owner are `#[ignore]`d with the reason.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Generous for a debug build on a shared machine; a hang is what it catches.
/// A hang guard, never a performance bound: on a loaded 2-core machine a debug build can be
/// many times slower than on an idle one.
const BOUND: Duration = Duration::from_secs(300);

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Run oomdoc with `stdin` (None: /dev/null), killing it past `BOUND`.
fn run_with(args: &[&str], stdin: Option<Vec<u8>>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oomdoc"));
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().expect("run oomdoc");
    let feeder = stdin.map(|data| {
        let mut w = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = w.write_all(&data);
        })
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("oomdoc {args:?} ran past {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let r = Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&o.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&e.join().unwrap()).into_owned(),
    };
    assert_ne!(r.code, Some(101), "oomdoc {args:?} panicked: {}", r.stderr);
    assert!(!r.stderr.contains("panicked at"), "oomdoc {args:?} panicked: {}", r.stderr);
    r
}

fn run(args: &[&str]) -> Run {
    run_with(args, None)
}

/// Exit 2 with a message on stderr that contains `want`, and nothing on stdout.
fn usage_error(args: &[&str], want: &str) -> Run {
    let r = run(args);
    assert_eq!(r.code, Some(2), "oomdoc {args:?}: {} {}", r.stdout, r.stderr);
    assert!(r.stderr.contains(want), "oomdoc {args:?}: expected `{want}` in: {}", r.stderr);
    assert!(r.stdout.is_empty(), "oomdoc {args:?} printed: {}", r.stdout);
    r
}

fn dir(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oomdoc-hostile").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(path: &Path, bytes: &[u8]) -> String {
    std::fs::write(path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().map(|s| s.success()).unwrap_or(false);
    assert!(ok, "mkfifo {path:?}");
}

/// A real out-of-memory message users pasted (dev corpus).
fn oom_message() -> String {
    common::dev_message("easydiff-104-max-split-hint")
}

// ------------------------------------------------------------------------------ plan ---

const U64_MAX: &str = "18446744073709551615";
const U64_OVER: &str = "18446744073709551616";

/// Zero, negative, NaN, huge and empty values for every numeric and named argument of the
/// `plan` subcommands: exit 2 with a message that names the argument or the value.
#[test]
fn plan_arguments_zero_negative_nan_huge_empty() {
    let mm = |extra: &[&str]| {
        let mut v = vec!["plan", "matmul", "--target", "v5e", "--m", "1024", "--n", "1024", "--k", "1024"];
        v.extend_from_slice(extra);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let gm = |extra: &[&str]| {
        let mut v = vec!["plan", "matmul", "--target", "sm_90", "--m", "1024", "--n", "1024", "--k", "1024"];
        v.extend_from_slice(extra);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let tr = |extra: &[&str]| {
        let mut v = vec!["plan", "triton", "--arch", "sm_90", "--block-m", "64", "--block-n", "64", "--block-k", "64"];
        v.extend_from_slice(extra);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (s(&["plan", "matmul", "--target", "v5e", "--m", "0", "--n", "1", "--k", "1"]), "--m"),
        (s(&["plan", "matmul", "--target", "v5e", "--m", "1", "--n", "0", "--k", "1"]), "--n"),
        (s(&["plan", "matmul", "--target", "v5e", "--m", "1", "--n", "1", "--k", "0"]), "--k"),
        (s(&["plan", "matmul", "--target", "v5e", "--m=-1", "--n", "1", "--k", "1"]), "-1"),
        (s(&["plan", "matmul", "--target", "v5e", "--m", "nan", "--n", "1", "--k", "1"]), "nan"),
        (s(&["plan", "matmul", "--target", "v5e", "--m", U64_OVER, "--n", "1", "--k", "1"]), U64_OVER),
        (s(&["plan", "matmul", "--target", "v5e", "--m", "1.5", "--n", "1", "--k", "1"]), "1.5"),
        (s(&["plan", "matmul", "--target", "", "--m", "1", "--n", "1", "--k", "1"]), "--target"),
        (s(&["plan", "matmul", "--target", "tpu-v99", "--m", "1", "--n", "1", "--k", "1"]), "tpu-v99"),
        (mm(&["--dtype", ""]), "--dtype"),
        (mm(&["--dtype", "float128"]), "float128"),
        (mm(&["--out-dtype", "token"]), "--out-dtype"),
        (mm(&["--dtype", "float64"]), "64-bit"),
        (mm(&["--out-dtype", "complex128"]), "64-bit"),
        (mm(&["--top", "0"]), "--top"),
        (mm(&["--top", U64_MAX]), "--top"),
        (mm(&["--max-candidates", "0"]), "--max-candidates"),
        (mm(&["--max-candidates=-5"]), "-5"),
        (mm(&["--vmem-limit-bytes", "0"]), "--vmem-limit-bytes"),
        (mm(&["--vmem-limit-bytes", "NaN"]), "NaN"),
        (mm(&["--block-m", "0", "--block-n", "128", "--block-k", "128"]), "--block-m"),
        (mm(&["--block-m", "128"]), "--block-m"),
        (mm(&["--block-m", U64_MAX, "--block-n", U64_MAX, "--block-k", U64_MAX]), "E2002"),
        (gm(&["--dtype", "int8"]), "int8"),
        (gm(&["--triton-version", ""]), "--triton-version"),
        (gm(&["--triton-version", "1.0"]), "1.0"),
        (gm(&["--triton-version", "nan"]), "nan"),
        (gm(&["--block-m", "64", "--block-n", "64", "--block-k", "64", "--num-stages", "0"]), "num_stages"),
        (gm(&["--block-m", "64", "--block-n", "64", "--block-k", "64", "--num-stages", U64_MAX]), "num_stages"),
        (gm(&["--block-m", "64", "--block-n", "64", "--block-k", "64", "--num-warps", "0"]), "num_warps"),
        (gm(&["--block-m", "48", "--block-n", "64", "--block-k", "64"]), "powers of two"),
        (gm(&["--block-m", U64_MAX, "--block-n", "64", "--block-k", "64"]), "BLOCK_M"),
        (s(&["plan", "matmul", "--target", "gfx942", "--m", "1", "--n", "1", "--k", "1"]), "not modelled"),
        (tr(&["--num-stages", "0"]), "num_stages"),
        (tr(&["--num-warps", "3"]), "num_warps"),
        (tr(&["--dtype", ""]), "--dtype"),
        (s(&["plan", "triton", "--arch", "sm_80", "--block-m", "64", "--block-n", "64", "--block-k", "64", "--dtype", "fp8e4nv"]), "fp8e4nv"),
        (s(&["plan", "triton", "--arch", "", "--block-m", "64", "--block-n", "64", "--block-k", "64"]), "--arch"),
        (s(&["plan", "triton", "--arch", "nan", "--block-m", "64", "--block-n", "64", "--block-k", "64"]), "nan"),
        (s(&["plan", "triton", "--arch", "sm_90", "--block-m", "0", "--block-n", "64", "--block-k", "64"]), "BLOCK_M"),
        (s(&["plan", "triton", "--arch", "sm_90", "--block-m", "64", "--block-n", "64", "--block-k", "8192"]), "BLOCK_K"),
        (s(&["plan", "triton", "--arch", "sm_90"]), "--block-m"),
        (s(&["plan", "pallas", ""]), "cannot read"),
        (s(&["plan", "pallas", "/nonexistent/spec.toml"]), "cannot read"),
        (s(&["plan", "pallas", "/dev/null"]), "chip"),
        (s(&["chips", "--only", ""]), "--only"),
        (s(&["chips", "--only", "npu"]), "npu"),
        (s(&["chips", "--format", "yaml"]), "yaml"),
        (s(&["explain", ""]), "no knowledge-base entry"),
        (s(&["explain", "../../etc/passwd"]), "no knowledge-base entry"),
    ];
    for (args, want) in &cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run(&a);
        assert_eq!(r.code, Some(2), "oomdoc {a:?}: {} {}", r.stdout, r.stderr);
        assert!(r.stderr.contains(want), "oomdoc {a:?}: expected `{want}` in: {}", r.stderr);
    }
    // A 100 KB id is refused like any unknown id (and quickly).
    let long = "x".repeat(100_000);
    usage_error(&["explain", &long], "no knowledge-base entry");
}

/// Dims whose products overflow u64 were "1400 candidates, 0 fit" (every tile dropped to an
/// overflow) on TPU and ranked on GPU: now a clear error, on every path.
#[test]
fn matmul_dims_past_any_real_array_are_an_error() {
    let big = (1u64 << 32).to_string();
    for target in ["v5e", "v7x", "sm_80", "sm_90"] {
        usage_error(&["plan", "matmul", "--target", target, "--m", &big, "--n", &big, "--k", &big, "--search"], "1 TiB");
        usage_error(&["plan", "matmul", "--target", target, "--m", U64_MAX, "--n", U64_MAX, "--k", U64_MAX], "cannot be real");
    }
    // The single-tile path too.
    usage_error(&["plan", "matmul", "--target", "v5e", "--m", &big, "--n", &big, "--k", &big, "--block-m", "512", "--block-n", "512", "--block-k", "512"], "1 TiB");
    // A skinny matmul with one dim of 2^30 has operands under 1 TiB: answered, with candidates.
    let r = run(&["plan", "matmul", "--target", "v5e", "--m", "1073741824", "--n", "128", "--k", "128", "--format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(v["fitting"].as_u64().unwrap() > 0);
}

/// The largest allowed dims (bf16 operands of 2^39 bytes): no candidate lost, exact traffic.
#[test]
fn matmul_largest_dims_keep_every_candidate() {
    let d = (1u64 << 19).to_string();
    let r = run(&["plan", "matmul", "--target", "v5e", "--m", &d, "--n", &d, "--k", &d, "--top", "1", "--format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    // Divisors of 2^19 up to 2^16: 14 multiples of 8, 10 multiples of 128 (each dim).
    assert_eq!(v["evaluated"], 14 * 10 * 10);
    assert!(v["fitting"].as_u64().unwrap() > 0);
    let top = &v["top"][0];
    let (bm, bn, bk) = (top["block_m"].as_u64().unwrap() as u128, top["block_n"].as_u64().unwrap() as u128, top["block_k"].as_u64().unwrap() as u128);
    let d = 1u128 << 19;
    let (gm, gn) = (d / bm, d / bn);
    let want = if bk < d { d * d * 2 * gn + d * d * 2 * gm + d * d * 2 } else { d * d * 2 + d * d * 2 * gm + d * d * 2 };
    assert_eq!(top["hbm_bytes"].as_u64().unwrap() as u128, want, "{top}");
    assert_eq!(v["max_candidates"], 20_000_000);
}

/// `--exhaustive` is bounded: past `--max-candidates` the search is refused before it starts.
#[test]
fn exhaustive_search_is_bounded_by_the_candidate_budget() {
    let d = (1u64 << 19).to_string();
    // Refused before the search starts: the message counts the candidates it would have costed.
    let r = usage_error(&["plan", "matmul", "--target", "v5e", "--m", &d, "--n", &d, "--k", &d, "--search", "--exhaustive"], "--max-candidates");
    assert!(r.stderr.contains("2147483648") && r.stderr.contains("20000000"), "{}", r.stderr);
    usage_error(&["plan", "matmul", "--target", "v5e", "--m", "1024", "--n", "1024", "--k", "1024", "--exhaustive", "--max-candidates", "8191"], "8192 candidates");
    usage_error(&["plan", "matmul", "--target", "sm_90", "--m", "1024", "--n", "1024", "--k", "1024", "--max-candidates", "100"], "1500 candidates");
    // Costing one tile still works past the budget (the better-tile suggestion is left out).
    let r = run(&["plan", "matmul", "--target", "v5e", "--m", &d, "--n", &d, "--k", &d, "--exhaustive", "--block-m", "512", "--block-n", "512", "--block-k", "512", "--format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(v["better_tile"].is_null() && v["hbm_bytes"].as_u64().unwrap() > 0, "{v}");
    let r = run(&["plan", "matmul", "--target", "v5e", "--m", "1024", "--n", "1024", "--k", "1024", "--exhaustive", "--max-candidates", "8192", "--format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!((v["evaluated"].as_u64(), v["max_candidates"].as_u64()), (Some(8192), Some(8192)));
}

/// The progress line is drawn only on a terminal: with stderr a pipe, a search of a million
/// candidates (above the progress threshold) writes nothing to stderr.
#[test]
fn no_progress_output_when_stderr_is_not_a_tty() {
    // 512 × 32 × 64 = 1,048,576 candidates.
    let r = run(&["plan", "matmul", "--target", "v5e", "--m", "4096", "--n", "4096", "--k", "8192", "--search", "--exhaustive", "--top", "2"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("1048576 candidates"), "{}", r.stdout);
    assert!(r.stderr.is_empty(), "stderr: {:?}", r.stderr);
}

/// On a terminal (a pty from util-linux `script`, when present) the progress line is drawn on
/// stderr and cleared at the end.
#[cfg(target_os = "linux")]
#[test]
fn progress_is_drawn_on_a_tty_and_cleared() {
    if Command::new("script").arg("--version").output().is_err() {
        return oomdoc_testkit::require_in_ci("hostile pty test", "util-linux `script` is not installed");
    }
    let cmd = format!(
        "{} plan matmul --target v5e --m 4096 --n 4096 --k 8192 --search --exhaustive --top 1 >/dev/null",
        env!("CARGO_BIN_EXE_oomdoc")
    );
    let o = Command::new("script").args(["-qec", &cmd, "/dev/null"]).stdin(Stdio::null()).output().unwrap();
    let tty = String::from_utf8_lossy(&o.stdout);
    assert!(tty.contains("\rsearching: 65536/1048576 candidates (6%)"), "{tty:?}");
    assert!(tty.contains(&format!("\r{}\r", " ".repeat(60))), "the line is cleared: {tty:?}");
}

/// A limit above physical VMEM does not let tiles "fit" that cannot.
#[test]
fn matmul_search_limit_above_physical_vmem_is_capped() {
    let r = run(&["plan", "matmul", "--target", "v5e", "--m", "8192", "--n", "8192", "--k", "8192", "--vmem-limit-bytes", U64_MAX, "--format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let eff = v["effective_limit_bytes"].as_u64().unwrap();
    assert!(eff < u64::MAX && v["notes"][0].as_str().unwrap().starts_with("error:"));
    assert!(v["top"].as_array().unwrap().iter().all(|c| c["vmem_bytes"].as_u64().unwrap() + (1 << 20) <= eff));
}

/// Spec and configs files: empty, a directory, random bytes, invalid UTF-8, no operands, an
/// absurd grid, deep nesting, numbers out of range, an oversize file.
#[test]
fn plan_spec_and_configs_files() {
    let d = dir("plan-files");
    let p = |name: &str, bytes: &[u8]| write(&d.join(name), bytes);
    let random: Vec<u8> = (0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    usage_error(&["plan", "pallas", d.to_str().unwrap()], "cannot read");
    usage_error(&["plan", "pallas", &p("empty.toml", b"")], "chip");
    usage_error(&["plan", "pallas", &p("random.toml", &random)], "");
    usage_error(&["plan", "pallas", &p("latin1.toml", b"chip = 'v5e\xff'\n")], "UTF-8");
    usage_error(&["plan", "pallas", &p("none.toml", b"chip = 'v5e'\ngrid = [2]\n")], "no operands");
    usage_error(&["plan", "pallas", &p("typo.toml", b"chip = 'v5e'\n[[input]]\nshape = [8, 128]\ndtype = 'bf16'\n")], "input");
    let grid = format!("chip = 'v5e'\ngrid = [{U64_MAX}, 2]\n[[inputs]]\nshape = [1024, 1024]\ndtype = 'bf16'\nblock = [128, 128]\n");
    usage_error(&["plan", "pallas", &p("grid.toml", grid.as_bytes())], "grid");
    let nan = "chip = 'v5e'\n[[inputs]]\nshape = [1024, nan]\ndtype = 'bf16'\n";
    usage_error(&["plan", "pallas", &p("nan.toml", nan.as_bytes())], "cannot read the spec");
    let deep = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
    usage_error(&["plan", "pallas", &p("deep.json", format!("{{\"chip\": {deep}}}").as_bytes())], "cannot read the spec");
    usage_error(&["plan", "triton", "--arch", "sm_90", "--configs", &p("deep-configs.json", deep.as_bytes())], "--configs");
    usage_error(&["plan", "triton", "--arch", "sm_90", "--configs", &p("empty-list.json", b"[]")], "empty");
    usage_error(&["plan", "triton", "--arch", "sm_90", "--configs", &p("nan.json", br#"[{"BLOCK_M": NaN, "BLOCK_N": 64, "BLOCK_K": 64}]"#)], "--configs");
    usage_error(&["plan", "triton", "--arch", "sm_90", "--configs", &p("huge.json", br#"[{"BLOCK_M": 1e400, "BLOCK_N": 64, "BLOCK_K": 64}]"#)], "--configs");
    usage_error(&["plan", "triton", "--arch", "sm_90", "--configs", &p("neg.json", br#"[{"BLOCK_M": -64, "BLOCK_N": 64, "BLOCK_K": 64}]"#)], "configs[0]");
    usage_error(&["plan", "triton", "--arch", "sm_90", "--configs", "/dev/null"], "--configs");
    // Oversize: refused by size, not cut into a misleading parse error.
    let mut big = b"chip = 'v5e'\n".to_vec();
    big.resize((16 << 20) + 2, b'\n');
    usage_error(&["plan", "pallas", &p("big.toml", &big)], "16 MiB");
    // From stdin too.
    let r = run_with(&["plan", "pallas", "-"], Some(b"\xff\xfe\x00garbage".to_vec()));
    assert_eq!(r.code, Some(2), "{}", r.stderr);
}

// -------------------------------------------------------------------------- diagnose ---

#[test]
fn diagnose_dev_null_is_an_empty_log() {
    let r = run(&["diagnose", "/dev/null"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("no accelerator memory failure found (0 lines)"), "{}", r.stdout);
}

#[test]
fn diagnose_directories_empty_and_with_a_fifo() {
    let empty = dir("diag-empty");
    usage_error(&["diagnose", empty.to_str().unwrap()], "no log files");
    #[cfg(unix)]
    {
        // A FIFO nobody writes to would block an open() forever: the walk must skip it.
        let d = dir("diag-fifo");
        mkfifo(&d.join("stuck.log"));
        write(&d.join("train.log"), oom_message().as_bytes());
        let r = run(&["diagnose", d.to_str().unwrap(), "--format", "json"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert!(r.stdout.contains("pytorch.cuda-oom"), "{}", r.stdout);
    }
}

/// A pipe: stdin (`-`) and a named FIFO with a writer are read to the end and diagnosed.
#[test]
fn diagnose_reads_pipes() {
    let msg = oom_message();
    let r = run_with(&["diagnose", "-", "--format", "json"], Some(msg.clone().into_bytes()));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("pytorch.cuda-oom"), "{}", r.stdout);
    #[cfg(unix)]
    {
        let d = dir("diag-pipe");
        let fifo = d.join("live.log");
        mkfifo(&fifo);
        let f2 = fifo.clone();
        let writer = std::thread::spawn(move || {
            let mut w = std::fs::OpenOptions::new().write(true).open(f2).unwrap();
            w.write_all(msg.as_bytes()).unwrap();
        });
        let r = run(&["diagnose", fifo.to_str().unwrap(), "--format", "json"]);
        writer.join().unwrap();
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert!(r.stdout.contains("pytorch.cuda-oom"), "{}", r.stdout);
    }
}

/// A log truncated while `oomdoc diagnose` reads it (logrotate's `copytruncate`, a job that
/// rewrites its log): a plain file is searched through mapped windows, and touching a page
/// past the new end raises SIGBUS. Repeated at different moments and to different sizes,
/// the process must exit normally every time, with a report; when it noticed, a note says
/// where it stopped, and it never claims more than the file held.
#[cfg(target_os = "linux")]
#[test]
fn diagnose_a_log_truncated_while_it_is_read() {
    let d = dir("truncated-while-read");
    let path = d.join("train.log");
    let msg = oom_message();
    let mut log = Vec::with_capacity(64 << 20);
    let mut i = 0u64;
    while log.len() < 64 << 20 {
        i += 1;
        if i.is_multiple_of(50_000) {
            log.extend_from_slice(msg.as_bytes());
            log.push(b'\n');
        }
        log.extend_from_slice(format!("{{\"step\": {i}, \"loss\": 0.51, \"lr\": 3.0e-4, \"grad_norm\": 1.2}}\n").as_bytes());
    }
    let mut noticed = 0;
    for round in 0..12u64 {
        std::fs::write(&path, &log).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
            .args(["diagnose", path.to_str().unwrap(), "--format", "json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run oomdoc");
        let mut out = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut v = String::new();
            let _ = out.read_to_string(&mut v);
            v
        });
        std::thread::sleep(Duration::from_millis(5 + round * 13 % 70));
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        match round % 3 {
            0 => f.set_len(0).unwrap(),
            1 => f.set_len(log.len() as u64 / (2 + round % 5)).unwrap(),
            // copytruncate: emptied, then the writer goes on at the start.
            _ => {
                f.set_len(0).unwrap();
                (&f).write_all(&log[..1 << 20]).unwrap();
            }
        }
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > BOUND {
                let _ = child.kill();
                panic!("oomdoc ran past the hang guard ({BOUND:?}) on a truncated log");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let stdout = reader.join().unwrap();
        assert_eq!(status.code(), Some(0), "round {round}: {status:?} {err}");
        let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("round {round}: {e}: {stdout}"));
        let bytes = report["bytes_scanned"].as_u64().unwrap();
        assert!(bytes <= log.len() as u64, "round {round}: {bytes} bytes");
        let notes = report["notes"].as_array().cloned().unwrap_or_default();
        if let Some(n) = notes.iter().filter_map(|n| n.as_str()).find(|n| n.contains("shrank")) {
            noticed += 1;
            assert!(n.ends_with(&format!("scanned up to byte {bytes}")), "round {round}: {n} ({bytes} bytes)");
            assert!(bytes == 0 || log[bytes as usize - 1] == b'\n', "round {round}: stops after a line");
            // Every finding lies in the part that was scanned, at its exact line.
            let lines = log[..bytes as usize].iter().filter(|&&b| b == b'\n').count() as u64;
            assert_eq!(report["lines_scanned"].as_u64(), Some(lines), "round {round}");
        }
    }
    eprintln!("{noticed} of 12 rounds noticed the truncation");
    assert!(noticed > 0, "no round truncated the log while it was read");
}

#[test]
fn diagnose_binary_garbage_long_lines_deep_json_and_bad_utf8() {
    let d = dir("diag-files");
    // Binary garbage (no NUL-free text, no message): an answer, not a crash.
    let garbage: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    let r = run(&["diagnose", &write(&d.join("garbage.bin"), &garbage)]);
    assert!(matches!(r.code, Some(0) | Some(2)), "{:?} {}", r.code, r.stderr);
    // A 10 MB line without a newline is one line.
    let r = run(&["diagnose", &write(&d.join("long.log"), &vec![b'x'; 10_000_000])]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("(1 line)"), "{}", r.stdout);
    // The message after a 10 MB line is still found.
    let mut long = vec![b'y'; 10_000_000];
    long.push(b'\n');
    long.extend_from_slice(oom_message().as_bytes());
    let r = run(&["diagnose", &write(&d.join("long-then-oom.log"), &long), "--format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("pytorch.cuda-oom"), "{}", r.stdout);
    // A deeply nested JSON line.
    let deep = format!("{}1{}\n", "{\"a\":".repeat(100_000), "}".repeat(100_000));
    let r = run(&["diagnose", &write(&d.join("deep.log"), deep.as_bytes())]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // Invalid UTF-8 bytes inside a real message: still diagnosed.
    let msg = oom_message();
    let cut = msg.find("(GPU").unwrap();
    let mut bad = msg.as_bytes()[..cut].to_vec();
    bad.extend_from_slice(b"\xff\xfe\xc3");
    bad.extend_from_slice(&msg.as_bytes()[cut..]);
    let r = run(&["diagnose", &write(&d.join("bad-utf8.log"), &bad), "--format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("pytorch.cuda-oom"), "{}", r.stdout);
}

/// The first 20 KB of a gzip of 50 MB of zeros (ratio ~1000:1): bounded, and the break is
/// said, not hidden.
#[test]
fn diagnose_gzip_bomb_prefix() {
    let d = dir("diag-gzip");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..50 {
        gz.write_all(&zeros).unwrap();
    }
    let bomb = gz.finish().unwrap();
    let prefix = &bomb[..bomb.len().min(20_000)];
    let r = run(&["diagnose", &write(&d.join("bomb.log.gz"), prefix)]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("breaks off") || r.stdout.contains("breaks off"), "{} {}", r.stdout, r.stderr);
}

/// A zstd frame (RFC 8878) written by hand: magic, header (no content size, 1 MiB window),
/// one raw block holding `text`, not marked last; `cut` bytes are then removed from the end.
fn zstd_frame_without_its_last_block(text: &[u8], cut: usize) -> Vec<u8> {
    let mut zst = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x50];
    let header = (text.len() as u32) << 3; // raw block, Last_Block = 0
    zst.extend_from_slice(&header.to_le_bytes()[..3]);
    zst.extend_from_slice(text);
    zst.truncate(zst.len() - cut);
    zst
}

/// A zstd stream cut inside a block: bounded, and the break is said.
#[test]
fn diagnose_truncated_zstd_says_it_breaks_off() {
    let d = dir("diag-zstd");
    let zst = zstd_frame_without_its_last_block(oom_message().as_bytes(), 40);
    let r = run(&["diagnose", &write(&d.join("cut.log.zst"), &zst)]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("breaks off") || r.stderr.contains("breaks off"), "{} {}", r.stdout, r.stderr);
}

/// A zstd log cut after a complete block (a log still being written, a partial copy): the
/// text of the complete blocks is readable (`zstd -dc` prints it) and holds the failure.
#[test]
fn diagnose_truncated_zstd_keeps_the_text_before_the_cut() {
    let d = dir("diag-zstd-block");
    let zst = zstd_frame_without_its_last_block(oom_message().as_bytes(), 0);
    let r = run(&["diagnose", &write(&d.join("cut.log.zst"), &zst), "--format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("pytorch.cuda-oom"), "{}", r.stdout);
}

/// Many copies of one failure in one block: one finding whose count is every copy, at 2,000
/// and at 20,000 copies (the work is counted, not timed; `BOUND` guards against a hang).
#[test]
fn diagnose_many_repeated_failures_in_one_block_fold_into_one_finding() {
    let d = dir("diag-repeat");
    let one = oom_message();
    let lines_per_copy = one.lines().count() as u64;
    for copies in [2_000u64, 20_000] {
        let text = format!("{one}\n").repeat(copies as usize);
        let r = run(&["diagnose", &write(&d.join(format!("repeat-{copies}.log")), text.as_bytes()), "--format", "json"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let findings = v["findings"].as_array().unwrap();
        assert_eq!(findings.len(), 1, "{}", r.stdout);
        assert_eq!(findings[0]["occurrences"], copies, "{}", findings[0]);
        assert_eq!(v["lines_scanned"], copies * lines_per_copy);
        assert_eq!(v["bytes_scanned"], text.len() as u64);
    }
}

// ---------------------------------------------------------------------------- memory ---

#[test]
fn memory_empty_file_random_proto_and_empty_dump_dir() {
    let d = dir("memory");
    usage_error(&["memory", &write(&d.join("empty.txt"), b"")], "empty.txt");
    usage_error(&["memory", &write(&d.join("module_0001.jit_f-buffer-assignment.txt"), b"")], "empty");
    let random: Vec<u8> = (0..50_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8).collect();
    usage_error(&["memory", &write(&d.join("module_0002.jit_g.hlo.pb"), &random)], "hlo.pb");
    // A length prefix that claims 4 GiB.
    usage_error(&["memory", &write(&d.join("module_0003.jit_h.hlo.pb"), b"\x0a\xff\xff\xff\xff\x0f")], "hlo.pb");
    let empty = dir("memory-empty-dump");
    usage_error(&["memory", empty.to_str().unwrap()], "no XLA memory dumps found");
    usage_error(&["memory", "/dev/null"], "not a recognised XLA dump file");
}

/// A FIFO named like a proto inside a dump directory must be skipped, not opened.
#[cfg(unix)]
#[test]
fn memory_dump_dir_with_a_fifo_does_not_hang() {
    let d = dir("memory-fifo");
    mkfifo(&d.join("module_0001.jit_f.hlo.pb"));
    let r = run(&["memory", d.to_str().unwrap()]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
}
