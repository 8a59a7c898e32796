//! Embeds every `kb/**/*.toml` file into the library (rustc's `--explain` registry
//! does the same with its error-code files), so the binary needs no data directory.
use std::{env, fs, path::{Path, PathBuf}};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let kb_dir = manifest.join("../../kb").canonicalize().expect("kb/ directory next to crates/");
    println!("cargo:rerun-if-changed={}", kb_dir.display());
    let mut files = Vec::new();
    collect(&kb_dir, &mut files);
    // Entries live in platform folders; files at the top (`projects.toml`) are not entries.
    files.retain(|f| f.parent() != Some(kb_dir.as_path()));
    files.sort();
    // kb/regressions/ holds regression records, not entries.
    let regressions_dir = kb_dir.join("regressions");
    let (regressions, files): (Vec<PathBuf>, Vec<PathBuf>) = files.into_iter().partition(|f| f.starts_with(&regressions_dir));
    let mut reg_src = String::from("pub(crate) static REGRESSION_FILES: &[(&str, &str)] = &[\n");
    for f in &regressions {
        println!("cargo:rerun-if-changed={}", f.display());
        let rel = f.strip_prefix(&kb_dir).unwrap().to_string_lossy().replace('\\', "/");
        reg_src.push_str(&format!("    ({rel:?}, include_str!({:?})),\n", f.display().to_string()));
    }
    reg_src.push_str("];\n");
    fs::write(PathBuf::from(env::var("OUT_DIR").unwrap()).join("regressions.rs"), reg_src).unwrap();
    // Measured outcomes per entry (kb/outcomes.json, written by the outcome test).
    let outcomes = kb_dir.join("outcomes.json");
    println!("cargo:rerun-if-changed={}", outcomes.display());
    let outcomes_src = if outcomes.exists() {
        format!("pub(crate) static OUTCOMES_JSON: &str = include_str!({:?});\n", outcomes.display().to_string())
    } else {
        "pub(crate) static OUTCOMES_JSON: &str = \"{}\";\n".to_string()
    };
    fs::write(PathBuf::from(env::var("OUT_DIR").unwrap()).join("outcomes.rs"), outcomes_src).unwrap();
    let mut src = String::from("pub(crate) static ENTRY_FILES: &[(&str, &str)] = &[\n");
    let mut ids = String::from("pub(crate) static ENTRY_IDS: &[&str] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let rel = f.strip_prefix(&kb_dir).unwrap().to_string_lossy().replace('\\', "/");
        src.push_str(&format!("    ({rel:?}, include_str!({:?})),\n", f.display().to_string()));
        ids.push_str(&format!("    {:?},\n", top_level_id(&fs::read_to_string(f).unwrap())));
    }
    src.push_str("];\n");
    ids.push_str("];\n");
    src.push_str(&ids);
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("entries.rs");
    fs::write(out, src).unwrap();
}

/// The entry's own `id = "..."`: the first one before any table header (the loader parses
/// the whole file; this only indexes it, and a test compares the two). "" where there is
/// none, which no lookup matches.
fn top_level_id(toml: &str) -> String {
    for line in toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            break;
        }
        if let Some(v) = line.strip_prefix("id").map(str::trim_start).and_then(|r| r.strip_prefix('=')) {
            if let Some(id) = v.trim().strip_prefix('"').and_then(|r| r.split('"').next()) {
                return id.to_string();
            }
        }
    }
    String::new()
}
