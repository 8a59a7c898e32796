//! The `oomdoc diagnose` / `oomdoc explain` command lines and the JSON contract
//! documented in the README.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

fn oomdoc(args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(s) = stdin {
        // The command may exit before reading (bad flags): a closed pipe is fine here.
        let _ = child.stdin.take().unwrap().write_all(s.as_bytes());
    } else {
        drop(child.stdin.take());
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn example_log() -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/train.log").display().to_string()
}

#[test]
fn json_contract_on_the_bundled_example() {
    let (code, out, err) = oomdoc(&["diagnose", &example_log(), "--format", "json"], None);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let findings = v["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 3, "{out}");
    for f in findings {
        for key in ["id", "code", "kind", "title", "platform", "phase", "memory_space", "sizes", "line", "end_line", "culprit", "cause", "fixes", "dead_ends", "references"] {
            assert!(f.get(key).is_some(), "finding lacks `{key}`: {f}");
        }
        assert!(["oom", "other"].contains(&f["kind"].as_str().unwrap()));
        assert!(["tpu", "cuda", "rocm", "mps", "cpu", "other"].contains(&f["platform"].as_str().unwrap()));
        assert!(["compile", "load", "runtime"].contains(&f["phase"].as_str().unwrap()));
        for (k, val) in f["sizes"].as_object().unwrap() {
            assert!(["requested", "used", "limit", "excess", "free", "total", "reserved", "allocated", "reserved_unallocated"].contains(&k.as_str()));
            assert!(val.is_u64(), "sizes are integers in bytes");
        }
        // Every fix and dead end names its category, one of the contract's ids.
        for item in f["fixes"].as_array().unwrap().iter().chain(f["dead_ends"].as_array().unwrap()) {
            let category = item["category"].as_str().unwrap_or_else(|| panic!("no `category`: {item}"));
            assert!(oomdoc_kb::FixCategory::parse(category).is_some(), "unknown category `{category}`");
        }
    }
    // PyTorch: repeated by two ranks, reported once, first fatal, fragmentation fix first.
    let pt = &findings[0];
    assert_eq!(pt["id"], "pytorch.cuda-oom");
    assert_eq!(pt["line"], 10);
    assert_eq!(pt["occurrences"], 2);
    assert_eq!(pt["first_fatal"], true);
    assert_eq!(pt["sizes"]["requested"], 3u64 << 30);
    assert_eq!(pt["sizes"]["reserved_unallocated"], 7344394076u64);
    assert!(pt["fixes"][0]["code"].as_str().unwrap().contains("expandable_segments:True"));
    assert_eq!(pt["fixes"][0]["category"], "allocator-setting");
    // Triton: GPU family from the limit.
    let tr = &findings[1];
    assert_eq!(tr["id"], "triton.shared-memory");
    assert_eq!(tr["memory_space"], "shared");
    assert_eq!(tr["sizes"]["requested"], 133136);
    assert_eq!(tr["sizes"]["limit"], 101376);
    assert!(tr["headline"].as_str().unwrap().contains("sm_86"));
    // E1001: code from the log, vmem_limit_bytes computed from the numbers.
    let tpu = &findings[2];
    assert_eq!(tpu["id"], "tpu.scoped-vmem");
    assert_eq!(tpu["code"], "E1001");
    assert_eq!(tpu["memory_space"], "vmem");
    assert_eq!(tpu["sizes"]["used"], 18u64 << 20);
    assert_eq!(tpu["sizes"]["limit"], 16u64 << 20);
    assert_eq!(tpu["sizes"]["excess"], 2u64 << 20);
    assert_eq!(tpu["culprit"]["custom_call_target"], "tpu_custom_call");
    assert_eq!(tpu["culprit"]["padded_bytes"], 16384u64 * 512 * 4);
    // 18 MiB need + a quarter of headroom = 22.5 MiB, rounded up to 23 MiB (never the need itself).
    assert!(tpu["fixes"][0]["code"].as_str().unwrap().contains("vmem_limit_bytes=24117248"));
    assert_eq!(tpu["fixes"][0]["category"], "raise-limit");
}

#[test]
fn expandable_segments_not_suggested_when_already_set() {
    let log = "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 1.66 GiB is free. Of the allocated memory 70.09 GiB is allocated by PyTorch, and 6.84 GiB is reserved by PyTorch but unallocated.\n";
    let (_, out, _) = oomdoc(&["diagnose", "-", "--format", "json"], Some(log));
    let v: Value = serde_json::from_str(&out).unwrap();
    let fixes = v["findings"][0]["fixes"].as_array().unwrap();
    assert!(!fixes.iter().any(|f| f["code"].as_str().unwrap_or("").contains("expandable_segments:True")), "{out}");
}

#[test]
fn text_markdown_and_chinese() {
    let (code, out, _) = oomdoc(&["diagnose", &example_log()], None);
    assert_eq!(code, 0);
    assert!(out.contains("error[E1001] tpu.scoped-vmem"), "{out}");
    assert!(out.contains("over by 2.00 MiB (+12.5%)"));
    assert!(!out.contains('\x1b'), "NO_COLOR respected");
    assert!(out.contains("[raise-limit]"), "fix categories in text: {out}");
    let (_, md, _) = oomdoc(&["diagnose", &example_log(), "--format", "markdown"], None);
    assert!(md.contains("### "));
    // Pasted into an issue, every link resolves: no `owner/repo:path@commit` link targets.
    for target in md.split("](").skip(1) {
        assert!(target.starts_with("https://"), "relative link in Markdown output: {target}\n{md}");
    }
    let (_, zh, _) = oomdoc(&["diagnose", &example_log(), "--lang", "zh"], None);
    assert!(zh.contains("需要 18.00 MiB"), "{zh}");
    assert!(zh.contains("错误[E1001] tpu.scoped-vmem"), "{zh}");
    assert!(!zh.lines().any(|l| l.starts_with("error") || l.starts_with("warning")), "English labels in Chinese output: {zh}");
    let (_, zh_explain, _) = oomdoc(&["explain", "tpu.scoped-vmem", "--lang", "zh"], None);
    assert!(zh_explain.contains("阶段: 编译"), "{zh_explain}");
}

#[test]
fn no_findings_and_bad_input() {
    let (code, out, _) = oomdoc(&["diagnose", "-"], Some("epoch 1 loss 0.3\nmemory usage 10 GB\n"));
    assert_eq!(code, 0);
    assert!(out.contains("no accelerator memory failure found"));
    let (code, _, err) = oomdoc(&["diagnose", "/nonexistent/log.txt"], None);
    assert_eq!(code, 2);
    assert!(err.starts_with("oomdoc: cannot read /nonexistent/log.txt"), "{err}");
    assert_eq!(err.lines().count(), 1);
    let (code, _, _) = oomdoc(&["diagnose", "--format", "yaml"], Some(""));
    assert_eq!(code, 2);
}

/// A paste of only the allocator's first sentence still gives a finding, without sizes.
#[test]
fn first_line_only_paste_from_stdin() {
    let (code, out, _) = oomdoc(&["diagnose", "-", "--format", "json"], Some("RuntimeError: CUDA out of memory.\n"));
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["id"], "pytorch.cuda-oom");
    assert_eq!(f["kind"], "oom");
    assert!(f["sizes"].as_object().unwrap().values().all(|x| x.is_null()), "{}", f["sizes"]);
}

#[test]
fn explain_by_code_id_and_list() {
    let (code, out, _) = oomdoc(&["explain", "E1001"], None);
    assert_eq!(code, 0);
    assert!(out.contains("tpu.scoped-vmem") && out.contains("vmem_limit_bytes"));
    let (_, out, _) = oomdoc(&["explain", "triton.shared-memory", "--lang", "zh"], None);
    assert!(out.contains("共享内存"));
    let (_, out, _) = oomdoc(&["explain", "--list"], None);
    assert!(out.lines().count() >= 40, "{out}");
    let (code, _, err) = oomdoc(&["explain", "E9999"], None);
    assert_eq!(code, 2);
    assert!(err.contains("no knowledge-base entry"));
}

#[test]
fn dump_attaches_the_failing_modules_memory() {
    let dump = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../crates/memory/tests/fixtures/transformer_train_step");
    let log = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 80781468 bytes. [executable_name='jit_transformer_train_step']\n";
    let (code, out, err) = oomdoc(&["diagnose", "-", "--format", "json", "--dump", dump.to_str().unwrap()], Some(log));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let f = &v["findings"][0];
    assert_eq!(f["id"], "xla-gpu.out-of-memory");
    assert_eq!(f["memory"]["peak_bytes"], 80781468u64, "{out}");
    assert!(!f["culprit"]["allocations"].as_array().unwrap().is_empty());
    // A jax.profiler log directory instead of a dump (the HloProto from its XSpace).
    let logdir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../crates/memory/tests/fixtures/profile_multi_module");
    let plog = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 918016 bytes. [executable_name='jit_multi_decode']\n";
    let (code, out, err) = oomdoc(&["diagnose", "-", "--format", "json", "--dump", logdir.to_str().unwrap()], Some(plog));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["findings"][0]["memory"]["peak_bytes"], 918016u64, "{out}");
    let (code, _, err) = oomdoc(&["diagnose", "-", "--dump", "/nonexistent"], Some(log));
    assert_eq!(code, 2);
    assert!(err.contains("--dump /nonexistent"));
}

/// The real 3-GPU snapshot whose device 1 ran out of memory, with the first line of
/// PyTorch's OOM message written from the snapshot's own `oom` entry (its author
/// published the snapshot, not the log): 4.94 GiB requested on GPU 1, 91.25 MiB free.
#[test]
fn snapshot_attaches_the_call_sites_live_at_the_oom() {
    let snap = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/pytorch-snapshots/g4-compile-context-expandable-3gpu-OOM.pickle");
    assert!(snap.is_file(), "{} is missing (shared/ fixtures)", snap.display());
    let log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.94 GiB. GPU 1 has a total capacity of 79.25 GiB of which 91.25 MiB is free.\n";
    let (code, out, err) = oomdoc(&["diagnose", "-", "--snapshot", snap.to_str().unwrap(), "--format", "json"], Some(log));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let f = &v["findings"][0];
    let m = &f["memory"];
    assert_eq!(m["device"], 1);
    assert_eq!(m["live_at"], "oom");
    assert_eq!(m["oom"]["requested_bytes"], 5_308_694_528u64);
    assert_eq!(m["request_matches_log"], true);
    assert!(m["top_call_sites"][0]["call_site"].as_str().unwrap().ends_with("models.py:174:update_nodes"));
    assert!(f["culprit"]["allocations"][0]["source"].as_str().unwrap().ends_with("models.py:174:update_nodes"));
    // Text: the first three call sites under the finding.
    let (_, text, _) = oomdoc(&["diagnose", "-", "--snapshot", snap.to_str().unwrap()], Some(log));
    assert!(text.contains("x12 live at the OOM: train/models.py:174:update_nodes"), "{text}");
    // GPU 0 named: that device's peak, and the request is not this snapshot's.
    let log0 = log.replace("GPU 1", "GPU 0");
    let (_, out, _) = oomdoc(&["diagnose", "-", "--snapshot", snap.to_str().unwrap(), "--format", "json"], Some(&log0));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["findings"][0]["memory"]["device"], 0);
    assert_eq!(v["findings"][0]["memory"]["live_at"], "peak");
    // Not a snapshot: a usage error naming the file.
    let (code, _, err) = oomdoc(&["diagnose", "-", "--snapshot", "Cargo.toml"], Some(log));
    assert_eq!(code, 2);
    assert!(err.contains("not a PyTorch memory snapshot"), "{err}");
}
