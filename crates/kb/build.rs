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
    files.sort();
    let mut src = String::from("pub(crate) static ENTRY_FILES: &[(&str, &str)] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let rel = f.strip_prefix(&kb_dir).unwrap().to_string_lossy().replace('\\', "/");
        src.push_str(&format!("    ({rel:?}, include_str!({:?})),\n", f.display().to_string()));
    }
    src.push_str("];\n");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("entries.rs");
    fs::write(out, src).unwrap();
}
