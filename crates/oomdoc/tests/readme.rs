//! The README's headline example is the real output of `oomdoc diagnose examples/train.log`,
//! abridged: a line `…` skips output lines, a line ending in ` …` is cut there. Everything
//! else must appear as it is, in order, so the example cannot drift from what users see.

use std::path::Path;
use std::process::Command;

/// The example block: the lines after `$ oomdoc diagnose examples/train.log` up to the fence.
fn readme_example() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let start = readme.find("$ oomdoc diagnose examples/train.log\n").expect("the headline example is in README.md");
    let body = &readme[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let end = body.find("```").expect("the example block ends");
    body[..end].lines().map(str::to_string).collect()
}

#[test]
fn readme_headline_example_is_the_real_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO_BIN_EXE_oomdoc")).current_dir(&root).args(["diagnose", "examples/train.log", "--color", "never"]).output().unwrap();
    assert!(out.status.success());
    let real: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect();
    let mut at = 0usize; // next output line that may match
    let mut gap = false; // a `…` line came before: any number of lines may be skipped
    for want in readme_example() {
        if want.trim() == "…" {
            gap = true;
            continue;
        }
        let matches = |got: &str| match want.strip_suffix(" …") {
            Some(prefix) => got.starts_with(prefix),
            None => got == want,
        };
        let found = if gap { real[at..].iter().position(|l| matches(l)).map(|i| at + i) } else { real.get(at).filter(|l| matches(l)).map(|_| at) };
        let Some(i) = found else {
            panic!(
                "README.md's example line is not the output's {}:\n  README: {want}\n  output: {}\nRegenerate it: python3 scripts/readme_example.py",
                if gap { "(anywhere later)" } else { "next line" },
                real.get(at).map_or("(end of output)", |s| s.as_str())
            );
        };
        at = i + 1;
        gap = false;
    }
}
