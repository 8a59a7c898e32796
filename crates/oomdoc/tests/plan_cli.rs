//! `oomdoc plan` and `oomdoc chips` end to end.

use std::io::Write;
use std::process::{Command, Output};

fn oomdoc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oomdoc")).args(args).output().expect("run oomdoc")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn write_temp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oomdoc-plan-cli");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::File::create(&p).unwrap().write_all(text.as_bytes()).unwrap();
    p
}

const KERAS: &str = oomdoc_plan::pallas::EXAMPLE_SPEC;

#[test]
fn keras_example_json_contract() {
    let spec = write_temp("keras.toml", KERAS);
    let o = oomdoc(&["plan", "pallas", spec.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["target"], "v5e");
    assert_eq!(v["total_bytes"], 16_908_288u64);
    assert_eq!(v["limit_bytes"], 16_777_216u64);
    assert_eq!(v["fits"], false);
    let item = &v["items"][0];
    for key in ["name", "kind", "block", "dtype", "bytes_per_buffer", "buffers", "bytes"] {
        assert!(!item[key].is_null(), "items[0].{key} missing");
    }
    assert!(v["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("internal scratch")));
    let o = oomdoc(&["plan", "pallas", spec.to_str().unwrap(), "--chip", "trillium", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["fits"], true);
    assert_eq!(v["limit_bytes"], 33_554_432u64);
}

#[test]
fn keras_example_text() {
    let spec = write_temp("keras2.toml", KERAS);
    let o = oomdoc(&["plan", "pallas", spec.to_str().unwrap()]);
    let s = stdout(&o);
    assert!(s.contains("16908288 > 16777216"), "{s}");
    assert!(s.contains("vmem_limit_bytes=18874368"), "{s}");
    assert!(s.contains("8.062 MiB"), "{s}");
}

#[test]
fn bad_specs_exit_2_naming_the_field() {
    let cases = [
        (KERAS.replace("v5e", "v42"), "`chip`"),
        (KERAS.replacen("float32", "float33", 1), "inputs[0].dtype"),
        (KERAS.replace("block = [128, 128]", "block = [128, 100]"), "outputs[0].block[1]"),
        (KERAS.replace("block = [128, 8192]", "block = [-128, 8192]"), "inputs[0].block[0]"),
        ("chip = ".to_string(), "cannot read the spec"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = write_temp(&format!("bad{i}.toml"), text);
        let o = oomdoc(&["plan", "pallas", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{want}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{want}: {err}");
        assert!(!err.contains("panicked"));
    }
    let o = oomdoc(&["plan", "pallas", "/nonexistent/spec.toml"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn triton_single_config_and_json() {
    let o = oomdoc(&["plan", "triton", "--arch", "sm_86", "--block-m", "128", "--block-n", "128", "--block-k", "64", "--num-stages", "3", "--num-warps", "4", "--dtype", "fp16", "--format", "json"]);
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["arch"], "sm_86");
    assert_eq!(v["shared_bytes"], 65536);
    assert_eq!(v["limit_bytes"], 101376);
    assert_eq!(v["fits"], true);
    assert!(v["breakdown"].is_object());
    let o = oomdoc(&["plan", "triton", "--arch", "sm_42", "--block-m", "128", "--block-n", "128", "--block-k", "64"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--arch"));
    let o = oomdoc(&["plan", "triton", "--arch", "sm_80", "--block-m", "96", "--block-n", "128", "--block-k", "64"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("BLOCK_M"));
}

#[test]
fn triton_configs_keep_only_fitting() {
    let p = write_temp(
        "autotune.json",
        r#"[{"BLOCK_M":128,"BLOCK_N":256,"BLOCK_K":64,"num_stages":4,"num_warps":8},
            {"BLOCK_M":64,"BLOCK_N":64,"BLOCK_K":32,"num_stages":2,"num_warps":4}]"#,
    );
    let o = oomdoc(&["plan", "triton", "--arch", "sm_86", "--configs", p.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["fitting"].as_array().unwrap().len(), 1);
    assert_eq!(v["fitting"][0]["shared_bytes"], 8192);
    assert_eq!(v["dropped"][0]["config"]["BLOCK_N"], 256);
}

#[test]
fn matmul_search_tpu_and_gpu() {
    let o = oomdoc(&["plan", "matmul", "--target", "v5e", "--m", "8192", "--n", "8192", "--k", "8192", "--dtype", "float32", "--search", "--format", "json"]);
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let top = v["top"].as_array().unwrap();
    assert!(!top.is_empty());
    assert!(top.iter().all(|c| c["vmem_bytes"].as_u64().unwrap() + (1 << 20) <= 16 << 20));
    let o = oomdoc(&["plan", "matmul", "--target", "sm_90", "--m", "4096", "--n", "4096", "--k", "4096", "--dtype", "fp16", "--search"]);
    assert!(o.status.success(), "{o:?}");
    let o = oomdoc(&["plan", "matmul", "--target", "v5e", "--m", "0", "--n", "8", "--k", "8"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--m"));
}

#[test]
fn chips_prints_sources() {
    let o = oomdoc(&["chips"]);
    assert!(o.status.success());
    let s = stdout(&o);
    for want in ["v5e", "v7x", "sm_86", "sm_120", "101376", "Sources:", "UNCONFIRMED"] {
        assert!(s.contains(want), "{want}");
    }
    let o = oomdoc(&["chips", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["tpu"].as_array().unwrap().len() >= 7);
}

/// An AMD target is not "0 fit": the model does not cover it, and the command says so.
#[test]
fn matmul_search_on_amd_says_not_modelled() {
    let o = oomdoc(&["plan", "matmul", "--target", "gfx942", "--m", "4096", "--n", "4096", "--k", "4096", "--search"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("gfx942") && err.contains("not modelled"), "{err}");
    assert!(stdout(&o).is_empty());
}
