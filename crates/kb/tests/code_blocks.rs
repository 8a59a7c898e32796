//! Code blocks as people copy them. Python snippets are checked by Python itself
//! (`crates/kb/tools/check_snippets.py`, placeholders filled with dummy values): every one
//! compiles, and one that is not marked `code_fragment = true` defines or imports every name
//! it uses (`symtable`, not a list of module names). Shell snippets name only flags that the
//! tool they call defines (`tests/data/tool_flags.toml`, each tool with the source it was
//! read from).
use oomdoc_kb::identifiers::fill_dummy;
use oomdoc_kb::KnowledgeBase;
use serde::Deserialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn python_snippets() -> Vec<serde_json::Value> {
    let (kb, _) = KnowledgeBase::load_embedded();
    let mut out = Vec::new();
    for e in kb.entries() {
        for f in &e.fixes {
            if f.code_lang.as_deref() != Some("python") {
                continue;
            }
            for (which, code) in [("code", &f.code), ("code_fallback", &f.code_fallback)] {
                if let Some(code) = code {
                    out.push(serde_json::json!({
                        "where": format!("kb/{} fix `{}` {which}", e.file, f.id),
                        "code": fill_dummy(code),
                        "fragment": f.code_fragment,
                    }));
                }
            }
        }
    }
    out
}

/// Python is there, or the test says why it checked nothing; in CI a missing python3 fails.
fn python3_available(test: &str) -> bool {
    let ok = Command::new("python3").arg("-c").arg("pass").status().is_ok_and(|s| s.success());
    if !ok {
        oomdoc_testkit::require_in_ci(test, "python3 is not on PATH");
    }
    ok
}

/// Run the checker on `snippets`; returns its problem lines.
fn check(snippets: &[serde_json::Value]) -> Vec<String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tools/check_snippets.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    let input = serde_json::to_vec(snippets).expect("json");
    child.stdin.take().expect("stdin").write_all(&input).expect("write snippets");
    let out = child.wait_with_output().expect("python3 finishes");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let problems: Vec<String> = stdout.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect();
    assert!(
        out.status.success() || !problems.is_empty(),
        "the snippet checker failed without reporting a problem:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    problems
}

#[test]
fn python_snippets_compile_and_define_what_they_use() {
    if !python3_available("python_snippets_compile_and_define_what_they_use") {
        return;
    }
    let snippets = python_snippets();
    let problems = check(&snippets);
    println!("{} Python snippets checked", snippets.len());
    assert!(
        problems.is_empty(),
        "Python snippets that would not run as written (define or import the name, or mark the fix code_fragment = true):\n{}",
        problems.join("\n")
    );
}

/// The checker finds what would raise NameError: the snippets the 2026-11-26 audit found
/// (a module used without its import, a class and a variable never defined), and a name used
/// only inside a function; it accepts what is defined, imported or built in.
#[test]
fn the_checker_finds_names_never_defined() {
    if !python3_available("the_checker_finds_names_never_defined") {
        return;
    }
    let case = |code: &str, fragment: bool| serde_json::json!({ "where": code, "code": code, "fragment": fragment });
    let bad = [
        "so = onnxruntime.SessionOptions()\nso.enable_cpu_mem_arena = False",
        "config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 2 << 30)",
        "loader = DataLoader(dataset, num_workers=2)",
        "import torch\ndef f():\n    return undefined_thing + torch.ones(1)",
    ];
    for code in bad {
        assert!(!check(&[case(code, false)]).is_empty(), "not found: {code}");
    }
    let good = [
        "import onnxruntime\nso = onnxruntime.SessionOptions()",
        "import tensorrt as trt\nbuilder = trt.Builder(trt.Logger())\nconfig = builder.create_builder_config()",
        "from torch.utils.data import DataLoader\nimport torch\ndataset = torch.utils.data.TensorDataset(torch.ones(4))\nloader = DataLoader(dataset)",
        "import gc\nx = [i for i in range(3)]\nprint(len(x), gc.collect())",
    ];
    for code in good {
        assert_eq!(check(&[case(code, false)]), Vec::<String>::new(), "{code}");
    }
    // A fragment may use the user's names, but must still compile.
    assert!(check(&[case("loader = DataLoader(dataset)", true)]).is_empty());
    assert!(!check(&[case("def f(:\n", true)]).is_empty());
}

#[derive(Deserialize)]
struct ToolFlags {
    tools: Vec<Tool>,
}

#[derive(Deserialize)]
struct Tool {
    /// The command as typed: `vllm serve`, `llama-server`, `python -m sglang.launch_server`.
    command: String,
    /// Where the flags were read: `owner/repo:path@tag-or-commit` or a vendor's page.
    source: String,
    flags: Vec<String>,
}

fn tool_flags() -> Vec<Tool> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tool_flags.toml");
    let text = std::fs::read_to_string(&path).expect("tool_flags.toml");
    toml::from_str::<ToolFlags>(&text).expect("tool_flags.toml parses").tools
}

/// Words of one shell command, without leading `NAME=value` assignments and `export`;
/// quoted values (`LIBTPU_INIT_ARGS="--a --b"`) stay one word.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for ch in command.chars() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => cur.push(ch),
            None if ch == '"' || ch == '\'' => quote = Some(ch),
            None if ch.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            None => cur.push(ch),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    let is_assignment = |w: &String| w.split_once('=').is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'));
    out.into_iter().skip_while(|w| w == "export" || is_assignment(w)).collect()
}

#[test]
fn shell_snippets_name_real_flags() {
    let tools = tool_flags();
    for t in &tools {
        assert!(oomdoc_kb::is_pinned_source(&t.source), "tool_flags.toml `{}`: source `{}` is not pinned", t.command, t.source);
    }
    let (kb, _) = KnowledgeBase::load_embedded();
    let mut bad = Vec::new();
    let mut checked = 0;
    for e in kb.entries() {
        for f in e.fixes.iter().filter(|f| f.code_lang.as_deref() == Some("shell")) {
            for code in [&f.code, &f.code_fallback].into_iter().flatten() {
                let code = fill_dummy(code);
                for command in code.split(['\n', ';', '|']).flat_map(|c| c.split("&&")) {
                    let command = command.split(" #").next().unwrap_or("").trim();
                    let w = words(command);
                    let Some(tool) = tools.iter().find(|t| {
                        let tw: Vec<&str> = t.command.split_whitespace().collect();
                        w.len() >= tw.len() && w.iter().zip(&tw).all(|(a, b)| a == b)
                    }) else {
                        continue;
                    };
                    checked += 1;
                    for word in &w[tool.command.split_whitespace().count()..] {
                        if !word.starts_with('-') || word == "-" {
                            continue;
                        }
                        let flag = word.split('=').next().unwrap_or(word);
                        if !tool.flags.iter().any(|k| k == flag) {
                            bad.push(format!("kb/{} fix `{}`: `{}` has no flag `{flag}` (read in {})", e.file, f.id, tool.command, tool.source));
                        }
                    }
                }
            }
        }
    }
    println!("{checked} shell commands checked against the flags of the tool they call");
    assert!(checked > 0);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
