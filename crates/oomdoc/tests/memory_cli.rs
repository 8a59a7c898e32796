//! `oomdoc memory` end to end, on the committed fixtures of `oomdoc-memory`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../memory/tests/fixtures")
}

fn oomdoc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oomdoc")).args(args).output().expect("run oomdoc")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn text_report_for_a_dump_directory() {
    let dir = fixtures().join("mlp_train_step");
    let o = oomdoc(&["memory", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Module jit_mlp_train_step (program 34)"), "{out}");
    assert!(out.contains("16,382,096 B"), "{out}");
    assert!(out.contains("dot.1") && out.contains("^ peak"), "{out}");
}

#[test]
fn json_follows_the_contract() {
    let dir = fixtures().join("transformer_train_step");
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &v["modules"][0];
    let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec![
        "name", "peak_bytes", "peak_unpadded_bytes", "peak_position", "peak_instruction", "arguments_bytes", "outputs_bytes", "alias_bytes", "temp_bytes",
        "constants_bytes", "total_allocation_bytes", "fragmentation_bytes", "buffers_at_peak", "timeline",
        // Added with memory spaces (issue 13).
        "memory_space", "host_arguments_bytes", "host_outputs_bytes", "host_alias_bytes", "host_temp_bytes", "memory_spaces",
        // Added with the truncation checks (issue 12).
        "warnings",
    ];
    let mut got = keys.clone();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(m["peak_bytes"], 80_781_468);
    assert_eq!(m["temp_bytes"], 67_141_632);
    let b = &m["buffers_at_peak"][0];
    let mut bkeys: Vec<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
    bkeys.sort();
    assert_eq!(bkeys, ["group", "name", "op_name", "shape", "size_bytes", "source", "unpadded_bytes"]);
    let t = &m["timeline"][0];
    let mut tkeys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
    tkeys.sort();
    assert_eq!(tkeys, ["bytes", "instruction", "position", "unpadded_bytes"]);
    let peak = m["peak_position"].as_u64().unwrap() as usize;
    assert_eq!(m["timeline"][peak]["bytes"], m["peak_bytes"]);
}

#[test]
fn several_modules_listed_and_the_largest_analysed() {
    let dir = fixtures().join("gen/multi_module");
    let o = oomdoc(&["memory", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("3 modules in the dump"), "{out}");
    assert!(out.contains("→"), "{out}");
    // By program id, by unique name; an ambiguous name is refused, never guessed.
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--module", "24", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["modules"][0]["name"], "jit_multi_decode");
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--module", "decode", "--format", "json"]);
    assert!(o.status.success());
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--module", "jit_multi_encode"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("matches several modules"), "{}", stderr(&o));
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--module", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no module matches `nope`"), "{}", stderr(&o));
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--all", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["modules"].as_array().unwrap().len(), 3);
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--list", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["modules"].as_array().unwrap().len(), 3);
}

#[test]
fn html_is_one_self_contained_file() {
    let dir = fixtures().join("mlp_train_step");
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oomdoc-memory-cli.html");
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--format", "html", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg") && html.contains("<title>"));
    assert!(html.contains("dot.1") && html.contains("Padding"));
    for forbidden in ["http://", "https://", "<script src", "<link "] {
        assert!(!html.contains(forbidden), "{forbidden}");
    }
}

#[test]
fn single_files_and_sources() {
    let dir = fixtures().join("donated_adam_update");
    let pb = dir.join("module_0014.jit_donated_adam_update.cpu_after_optimizations.hlo.pb");
    let o = oomdoc(&["memory", pb.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["modules"][0]["peak_bytes"], 41_959_532);
    assert_eq!(v["modules"][0]["alias_bytes"], 31_469_568);
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--source", "text", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["modules"][0]["peak_bytes"], 41_959_532);
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let empty = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oomdoc-memory-cli-empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = oomdoc(&["memory", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no XLA memory dumps found"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1);
}

/// A jax.profiler log directory and its .xplane.pb: modules listed with their hosts,
/// the largest analysed, --module and --run.
#[test]
fn profile_log_dir_and_xplane_file() {
    let logdir = fixtures().join("profile_multi_module");
    let o = oomdoc(&["memory", logdir.to_str().unwrap(), "--list", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let list = v["modules"].as_array().unwrap();
    assert_eq!(list.len(), 13);
    assert!(list.iter().all(|m| m["hosts"] == serde_json::json!(["vm"])), "{v}");
    let xplane = logdir.join("plugins/profile/2026_11_24_04_12_04/vm.xplane.pb");
    let o = oomdoc(&["memory", xplane.to_str().unwrap(), "--module", "24", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["modules"][0]["name"], "jit_multi_decode");
    assert_eq!(v["modules"][0]["peak_bytes"], 918016u64);
    let o = oomdoc(&["memory", logdir.to_str().unwrap(), "--run", "2026_11_24_04_12_04"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = oomdoc(&["memory", logdir.to_str().unwrap(), "--run", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no profile run `nope`"), "{}", stderr(&o));
}

/// --memory-space: hbm is the default; host on a CPU dump (everything in space 0) has
/// an empty peak; an unknown space is a usage error.
#[test]
fn memory_space_selector() {
    let dir = fixtures().join("mlp_train_step");
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--memory-space", "hbm", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["modules"][0]["peak_bytes"], 16_382_096u64);
    assert_eq!(v["modules"][0]["memory_space"], 0);
    assert_eq!(v["modules"][0]["memory_spaces"].as_array().unwrap().len(), 1);
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--memory-space", "host", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["modules"][0]["peak_bytes"], 0);
    assert_eq!(v["modules"][0]["memory_space"], 5);
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--memory-space", "vmem?"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown memory space"), "{}", stderr(&o));
}

/// `-o` never overwrites an input: the dump file itself, a file of an input directory,
/// or the same file through a symlink. A new file, also inside the dump directory, is fine.
#[test]
fn output_never_overwrites_an_input() {
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oomdoc-memory-o");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    for entry in std::fs::read_dir(fixtures().join("mlp_train_step")).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, tmp.join(p.file_name().unwrap())).unwrap();
        }
    }
    let dir = tmp.to_str().unwrap();
    let proto = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().path()).find(|p| p.to_string_lossy().ends_with(".hlo.pb")).unwrap();
    let before = std::fs::read(&proto).unwrap();
    let link = tmp.with_extension("link.pb");
    let _ = std::fs::remove_file(&link);
    #[cfg(unix)]
    std::os::unix::fs::symlink(&proto, &link).unwrap();
    let mut cases = vec![(proto.to_str().unwrap().to_string(), proto.to_str().unwrap().to_string()), (dir.to_string(), proto.to_str().unwrap().to_string())];
    #[cfg(unix)]
    cases.push((proto.to_str().unwrap().to_string(), link.to_str().unwrap().to_string()));
    for (input, out) in cases {
        let o = oomdoc(&["memory", &input, "-o", &out]);
        assert_eq!(o.status.code(), Some(2), "{input} -o {out}: {}", stderr(&o));
        assert!(stderr(&o).contains("refusing to write"), "{}", stderr(&o));
        assert_eq!(std::fs::read(&proto).unwrap(), before, "the input was changed");
    }
    let new = tmp.join("report.txt");
    let o = oomdoc(&["memory", dir, "-o", new.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&new).unwrap().contains("peak"));
    let _ = std::fs::remove_file(&link);
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// A buffer assignment that lost its last lines, with no values file to check it: the
/// answer carries a loud warning in text and a `warnings` entry in JSON (issue 12); a
/// cut mid-line is exit 2; a `.hlo.pb.gz` dump is read.
#[test]
fn truncated_text_dump_warns_and_compressed_proto_is_read() {
    let src = fixtures().join("compressed_dump");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oomdoc-cli-trunc");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut ba = PathBuf::new();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        let name = e.file_name().into_string().unwrap();
        if name.ends_with("-buffer-assignment-values.txt") || !e.file_type().unwrap().is_file() {
            continue;
        }
        std::fs::copy(e.path(), dir.join(&name)).unwrap();
        if name.ends_with("-buffer-assignment.txt") {
            ba = dir.join(&name);
        }
    }
    // The .hlo.pb.gz is the default source: same peak as the text files.
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let peak = v["modules"][0]["peak_bytes"].as_u64().unwrap();
    assert_eq!(v["modules"][0]["warnings"], serde_json::json!([]));
    std::fs::remove_file(dir.join("module_0012.jit_mlp_block.cpu_after_optimizations.hlo.pb.gz")).unwrap();
    std::fs::remove_file(dir.join("module_0012.jit_mlp_block.cpu_after_optimizations-memory-usage-report.txt")).unwrap();
    let text = std::fs::read_to_string(&ba).unwrap();
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["modules"][0]["peak_bytes"].as_u64().unwrap(), peak);
    // Lose the last two value lines.
    let cut: usize = text.trim_end().rmatch_indices('\n').nth(1).unwrap().0 + 1;
    std::fs::write(&ba, &text[..cut]).unwrap();
    let o = oomdoc(&["memory", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("WARNING: ") && stdout(&o).contains("truncated"), "{}", stdout(&o));
    let o = oomdoc(&["memory", dir.to_str().unwrap(), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["modules"][0]["warnings"][0].as_str().unwrap().contains("truncated"), "{v}");
    // Cut mid-line: exit 2, one line naming the file and line.
    std::fs::write(&ba, &text[..text.len() - 3]).unwrap();
    let o = oomdoc(&["memory", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("-buffer-assignment.txt:") && stderr(&o).contains("middle of this line"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

fn snapshot_fixture(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/pytorch-snapshots");
    assert!(dir.is_dir(), "{} is missing: the PyTorch snapshot fixtures live in the workspace's shared/ directory", dir.display());
    dir.join(name)
}

#[test]
fn pytorch_snapshot_text_names_the_oom_and_the_lines_that_held_the_memory() {
    let path = snapshot_fixture("g4-compile-context-expandable-3gpu-OOM.pickle");
    let o = oomdoc(&["memory", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("OUT OF MEMORY at trace entry 421: requested 4.94 GiB (5,308,694,528 B), 91.25 MiB free on the device"), "{out}");
    assert!(out.contains("live just before the OOM (trace entry 421): 78.29 GiB in 111 allocations"), "{out}");
    assert!(out.contains("x12    train/models.py:174:update_nodes"), "{out}");
    assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "control characters in the report");
    // --stacks prints each site's full stack.
    let o = oomdoc(&["memory", path.to_str().unwrap(), "--stacks", "--top", "1"]);
    let out = stdout(&o);
    assert!(out.lines().filter(|l| l.starts_with("        ")).count() > 10, "{out}");
}

#[test]
fn pytorch_snapshot_json_follows_the_contract() {
    let path = snapshot_fixture("g4-compile-context-expandable-3gpu-OOM.pickle");
    let o = oomdoc(&["memory", path.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kind"], "pytorch-snapshot");
    assert_eq!(v["generation"], "G4 (2.8-2.9)");
    assert_eq!(v["allocator_settings"]["expandable_segments"], "True");
    let devices = v["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 3);
    for d in devices {
        for key in [
            "device", "segments", "blocks", "reserved_bytes", "allocated_bytes", "active_bytes", "requested_bytes", "trace_entries", "peak_bytes", "peak_event", "peak_time_us", "oom", "live_at", "live_bytes",
            "live_count", "top_call_sites", "largest_allocations", "fragmentation", "timeline",
        ] {
            assert!(d.get(key).is_some(), "device key {key} missing");
        }
    }
    assert!(devices[0]["oom"].is_null());
    let d1 = &devices[1];
    assert_eq!(d1["peak_bytes"], 84_063_351_764u64);
    assert_eq!(d1["live_at"], "oom");
    let oom = &d1["oom"];
    assert_eq!(oom["requested_bytes"], 5_308_694_528u64);
    assert_eq!(oom["device_free_bytes"], 95_682_560u64);
    assert!(oom["call_site"].as_str().unwrap().ends_with("models.py:181:update_nodes"));
    let top = &d1["top_call_sites"][0];
    assert!(top["call_site"].as_str().unwrap().ends_with("models.py:174:update_nodes"));
    assert_eq!(top["count"], 12);
    assert!(top["stack"].as_array().unwrap().len() > 5);
    for key in ["reserved_free_bytes", "internal_bytes", "largest_free_block_bytes", "expandable_segments", "pools", "segments_most_free"] {
        assert!(d1["fragmentation"].get(key).is_some(), "fragmentation key {key} missing");
    }
    // A snapshot without an oom entry: `oom` is null and the live set is the peak's.
    let o = oomdoc(&["memory", snapshot_fixture("g5-user-metadata-windows.pickle").to_str().unwrap(), "-f", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["devices"][0]["oom"].is_null());
    assert_eq!(v["devices"][0]["live_at"], "peak");
}

#[test]
fn pytorch_snapshot_html_and_detection_by_content() {
    let dir = std::env::temp_dir().join(format!("oomdoc-snap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Named like nothing in particular: recognised by its content.
    let renamed = dir.join("memory-dump.bin");
    std::fs::copy(snapshot_fixture("g2-time_us.pickle"), &renamed).unwrap();
    let html = dir.join("report.html");
    let o = oomdoc(&["memory", renamed.to_str().unwrap(), "--format", "html", "-o", html.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg") && page.contains("Live memory over the trace"), "{}", &page[..200.min(page.len())]);
    assert!(!page.contains("<script") && !page.contains("http://") && !page.contains("https://"));
    // A truncated snapshot: one line, exit 2.
    let cut = dir.join("cut.pickle");
    std::fs::write(&cut, &std::fs::read(&renamed).unwrap()[..5000]).unwrap();
    let o = oomdoc(&["memory", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("the pickle ends early"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}
