//! Code blocks as people copy them: Python snippets compile (`compile()` with placeholders
//! filled by dummy values), and a Python snippet that is not marked `code_fragment = true`
//! imports every module it uses.
use oomdoc_kb::identifiers::{fill_dummy, imported_roots, in_code, MODULE_ROOTS, TokenKind};
use oomdoc_kb::KnowledgeBase;
use std::io::Write;
use std::process::{Command, Stdio};

fn python_snippets() -> Vec<(String, bool, String)> {
    let (kb, _) = KnowledgeBase::load_embedded();
    let mut out = Vec::new();
    for e in kb.entries() {
        for f in &e.fixes {
            if f.code_lang.as_deref() != Some("python") {
                continue;
            }
            for (which, code) in [("code", &f.code), ("code_fallback", &f.code_fallback)] {
                if let Some(code) = code {
                    out.push((format!("kb/{} fix `{}` {which}", e.file, f.id), f.code_fragment, code.clone()));
                }
            }
        }
    }
    out
}

#[test]
fn python_snippets_compile() {
    let probe = Command::new("python3").arg("-c").arg("pass").status();
    if !probe.is_ok_and(|s| s.success()) {
        oomdoc_testkit::require_in_ci("python_snippets_compile", "python3 is not on PATH");
        return;
    }
    let snippets = python_snippets();
    let mut failures = Vec::new();
    for (ctx, _, code) in &snippets {
        let src = fill_dummy(code);
        let mut child = Command::new("python3")
            .arg("-c")
            .arg("import sys; compile(sys.stdin.read(), 'fix', 'exec')")
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 starts");
        child.stdin.take().expect("stdin").write_all(src.as_bytes()).expect("write snippet");
        let out = child.wait_with_output().expect("python3 finishes");
        if !out.status.success() {
            failures.push(format!("{ctx}:\n{src}\n{}", String::from_utf8_lossy(&out.stderr)));
        }
    }
    println!("{} Python snippets compiled", snippets.len());
    assert!(failures.is_empty(), "Python snippets that do not compile:\n{}", failures.join("\n"));
}

#[test]
fn complete_python_snippets_import_what_they_use() {
    let mut bad = Vec::new();
    for (ctx, fragment, code) in python_snippets() {
        if fragment {
            continue;
        }
        let bound = imported_roots(&code);
        for t in in_code(&code, Some("python")) {
            if t.kind != TokenKind::Python {
                continue;
            }
            let root = t.name.split('.').next().unwrap_or("");
            if MODULE_ROOTS.contains(&root) && !bound.contains(root) {
                bad.push(format!("{ctx}: uses `{}` without importing `{root}` (import it, or mark the fix code_fragment = true)", t.name));
            }
        }
    }
    bad.dedup();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
