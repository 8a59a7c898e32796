//! Which settings a fix names, so that every one of them has an `[[identifiers]]` record.
//!
//! The rules are deliberately narrow: they pick out what a reader would copy into a shell,
//! a config or a program, not every word. They are applied to a fix's `code` and
//! `code_fallback` (after `{placeholders}` are replaced by `0` and `{{`/`}}` by braces), and,
//! for prose (fix titles, dead-end actions), only rules 1b, 2 and 4.
//!
//! 1. Environment variables, `[A-Z][A-Z0-9_]{3,}`:
//!    a. in shell and text code: an assignment `NAME=` at the start of a word (also after
//!       `export`), or `export NAME`;
//!    b. in prose: an upper-case word with an underscore (`PYTORCH_CUDA_ALLOC_CONF`);
//!    c. in Python code: `os.environ["NAME"]`, `os.environ.get("NAME")`, `setdefault("NAME")`.
//! 2. Command-line flags: `--name` (letters, digits, `_`, `-`, `.`), anywhere, in any
//!    language (they also occur inside `LIBTPU_INIT_ARGS="..."` and `XLA_FLAGS="..."`).
//! 3. CMake cache variables: `-DNAME=` at the start of a word, recorded as `-DNAME`.
//! 4. Python APIs: a dotted name `a.b.c` whose root `a` is a module, that is a name the
//!    snippet imports (`import a`, `import a.b as c`, `from a import b`) or one of the
//!    conventional aliases in [`MODULE_ROOTS`]. Names brought in by `from m import a, b as c`
//!    count as `m.a` and `m.b`. Attributes of the user's own variables (`model.fit`,
//!    `loss.item`) are not modules and are not picked out.
//! 5. Keyword parameters in Python code: `name=` inside parentheses (not `==`, not inside a
//!    string), e.g. `num_workers=2`, `vmem_limit_bytes=0`.
//!
//! Tokens in [`NOT_SETTINGS`] are never reported.

use regex::Regex;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Roots that are modules by convention even when the snippet does not import them.
pub const MODULE_ROOTS: &[&str] = &[
    "torch", "tf", "keras", "jax", "jnp", "lax", "pl", "pltpu", "plgpu", "triton", "tl", "ttnn", "vllm", "np", "mx",
    "torch_xla", "xm", "torch_npu", "ipex", "cupy", "deepspeed", "transformers", "accelerate", "gc", "os", "onnxruntime",
    "ort", "trt", "tensorrt", "numba", "paddle",
];

/// Tokens the rules would pick out that are not settings: Python built-ins, plain language
/// constructs, and the conventional names of a Triton kernel's own meta-parameters
/// (`BLOCK_M`, ...), which the user's kernel defines.
pub const NOT_SETTINGS: &[&str] =
    &["print", "import", "os.environ", "os.environ.get", "os.environ.setdefault", "self", "BLOCK_M", "BLOCK_N", "BLOCK_K", "BLOCK_SIZE"];

/// What kind of token a rule found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TokenKind {
    Env,
    Flag,
    Cmake,
    Python,
    Param,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Token {
    pub name: String,
    pub kind: TokenKind,
}

fn re(cell: &'static OnceLock<Regex>, pat: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pat).expect("valid regex"))
}

/// Replace `{placeholder}` by `0` and `{{`/`}}` by literal braces.
pub fn fill_dummy(code: &str) -> String {
    crate::render(code, |_| Some("0".to_string())).unwrap_or_else(|_| code.to_string())
}

fn is_python(lang: Option<&str>) -> bool {
    lang.is_some_and(|l| l == "python")
}

/// Identifier-like tokens of one code block (`lang` is the fix's `code_lang`).
pub fn in_code(code: &str, lang: Option<&str>) -> BTreeSet<Token> {
    let code = fill_dummy(code);
    let mut out = BTreeSet::new();
    flags(&code, &mut out);
    static CMAKE: OnceLock<Regex> = OnceLock::new();
    for c in re(&CMAKE, r"(?:^|\s)(-D[A-Z][A-Z0-9_]*)=").captures_iter(&code) {
        out.insert(Token { name: c[1].to_string(), kind: TokenKind::Cmake });
    }
    if is_python(lang) {
        static PYENV: OnceLock<Regex> = OnceLock::new();
        for c in re(&PYENV, r#"(?:environ\s*\[|environ\.get\(|setdefault\()\s*["']([A-Z][A-Z0-9_]{3,})["']"#).captures_iter(&code) {
            out.insert(Token { name: c[1].to_string(), kind: TokenKind::Env });
        }
        python_names(&code, &mut out);
        keyword_params(&code, &mut out);
    } else {
        static ENV: OnceLock<Regex> = OnceLock::new();
        for c in re(&ENV, r#"(?:^|[\s;(`'"])(?:export\s+)?([A-Z][A-Z0-9_]{3,})="#).captures_iter(&code) {
            out.insert(Token { name: c[1].to_string(), kind: TokenKind::Env });
        }
        static EXPORT: OnceLock<Regex> = OnceLock::new();
        for c in re(&EXPORT, r"(?m)\bexport\s+([A-Z][A-Z0-9_]{3,})\b").captures_iter(&code) {
            out.insert(Token { name: c[1].to_string(), kind: TokenKind::Env });
        }
    }
    out.retain(|t| !NOT_SETTINGS.contains(&t.name.as_str()));
    out
}

/// Identifier-like tokens of prose (a fix title, a dead end's action).
pub fn in_prose(text: &str) -> BTreeSet<Token> {
    let text = fill_dummy(text);
    let mut out = BTreeSet::new();
    flags(&text, &mut out);
    static UPPER: OnceLock<Regex> = OnceLock::new();
    for c in re(&UPPER, r"(?:^|[^A-Za-z0-9_])([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])(?:$|[^A-Za-z0-9_])").captures_iter(&text) {
        if c[1].len() >= 4 {
            out.insert(Token { name: c[1].to_string(), kind: TokenKind::Env });
        }
    }
    static DOTTED: OnceLock<Regex> = OnceLock::new();
    for c in re(&DOTTED, r"(?:^|[^A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)").captures_iter(&text) {
        let name = &c[1];
        let root = name.split('.').next().unwrap_or("");
        if MODULE_ROOTS.contains(&root) {
            out.insert(Token { name: name.to_string(), kind: TokenKind::Python });
        }
    }
    out.retain(|t| !NOT_SETTINGS.contains(&t.name.as_str()));
    out
}

/// What a piece of prose names that a release's source or a tool's manual could confirm or
/// refute: every code span (`` `...` ``), the tokens of [`in_prose`] (`--flags`, upper-case
/// names with an underscore, dotted module names), snake_case options (`batch_size`,
/// `max_model_len`), calls (`model.half()`, `empty_cache(`), C++ qualified names
/// (`std::bad_alloc`), short options after a space (`-ngl`) and absolute paths
/// (`/sys/fs/cgroup/memory.max`). A fix or dead end marked `status = "general"` must name none.
pub fn named_in_text(text: &str) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = in_prose(text).into_iter().map(|t| t.name).collect();
    let text = fill_dummy(text);
    static SPAN: OnceLock<Regex> = OnceLock::new();
    static SNAKE: OnceLock<Regex> = OnceLock::new();
    static CALL: OnceLock<Regex> = OnceLock::new();
    static QUALIFIED: OnceLock<Regex> = OnceLock::new();
    static SHORT: OnceLock<Regex> = OnceLock::new();
    static PATH: OnceLock<Regex> = OnceLock::new();
    let rules = [
        re(&SPAN, r"`([^`]+)`"),
        re(&SNAKE, r"(?:^|[^A-Za-z0-9_./-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?:$|[^A-Za-z0-9_])"),
        re(&CALL, r"([A-Za-z_][A-Za-z0-9_.]*)\("),
        re(&QUALIFIED, r"([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+)"),
        re(&SHORT, r"(?:^|[\s(])(-[A-Za-z][A-Za-z0-9]*)(?:$|[\s,;).=])"),
        re(&PATH, r"(?:^|[\s(])(/[a-z][A-Za-z0-9_.-]*/[A-Za-z0-9_./-]*[A-Za-z0-9_])"),
    ];
    for r in rules {
        for c in r.captures_iter(&text) {
            out.insert(c[1].to_string());
        }
    }
    out
}

fn flags(text: &str, out: &mut BTreeSet<Token>) {
    static FLAG: OnceLock<Regex> = OnceLock::new();
    for c in re(&FLAG, r"(?:^|[^A-Za-z0-9_-])(--[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9])").captures_iter(text) {
        out.insert(Token { name: c[1].to_string(), kind: TokenKind::Flag });
    }
}

/// Text with string literals and comments blanked out (same length), so that rules on
/// code do not fire inside `"oom_snapshot.pickle"` or `# run until the OOM`.
fn code_only(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    let mut quote: Option<char> = None;
    let mut comment = false;
    while let Some(ch) = chars.next() {
        if comment {
            if ch == '\n' {
                comment = false;
                out.push('\n');
            } else {
                out.push(' ');
            }
            continue;
        }
        match quote {
            Some(q) => {
                if ch == '\\' {
                    out.push(' ');
                    if chars.next().is_some() {
                        out.push(' ');
                    }
                } else if ch == q {
                    quote = None;
                    out.push(ch);
                } else {
                    out.push(if ch == '\n' { '\n' } else { ' ' });
                }
            }
            None => match ch {
                '"' | '\'' => {
                    quote = Some(ch);
                    out.push(ch);
                }
                '#' => {
                    comment = true;
                    out.push(' ');
                }
                _ => out.push(ch),
            },
        }
    }
    out
}

/// Module roots a Python snippet binds by importing.
pub fn imported_roots(code: &str) -> BTreeSet<String> {
    let code = code_only(&fill_dummy(code));
    let mut roots = BTreeSet::new();
    static IMPORT: OnceLock<Regex> = OnceLock::new();
    static FROM: OnceLock<Regex> = OnceLock::new();
    for line in code.lines() {
        if let Some(c) = re(&IMPORT, r"^\s*import\s+(.+)$").captures(line) {
            for part in c[1].split(',') {
                let part = part.trim();
                let bound = match part.split_once(" as ") {
                    Some((_, alias)) => alias.trim().to_string(),
                    None => part.split('.').next().unwrap_or("").to_string(),
                };
                roots.insert(bound);
            }
        } else if let Some(c) = re(&FROM, r"^\s*from\s+([A-Za-z_][A-Za-z0-9_.]*)\s+import\s+(.+)$").captures(line) {
            for part in c[2].trim_matches(|ch| ch == '(' || ch == ')').split(',') {
                let part = part.trim();
                let bound = part.split_once(" as ").map_or(part, |(_, a)| a.trim());
                if !bound.is_empty() {
                    roots.insert(bound.to_string());
                }
            }
        }
    }
    roots
}

fn python_names(code: &str, out: &mut BTreeSet<Token>) {
    let plain = code_only(code);
    let imported = imported_roots(code);
    static FROM: OnceLock<Regex> = OnceLock::new();
    for line in plain.lines() {
        if let Some(c) = re(&FROM, r"^\s*from\s+([A-Za-z_][A-Za-z0-9_.]*)\s+import\s+(.+)$").captures(line) {
            let module = &c[1];
            out.insert(Token { name: module.to_string(), kind: TokenKind::Python });
            for part in c[2].trim_matches(|ch| ch == '(' || ch == ')').split(',') {
                let name = part.trim().split(" as ").next().unwrap_or("").trim();
                if !name.is_empty() {
                    out.insert(Token { name: format!("{module}.{name}"), kind: TokenKind::Python });
                }
            }
        }
    }
    static DOTTED: OnceLock<Regex> = OnceLock::new();
    for c in re(&DOTTED, r"(?:^|[^A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)").captures_iter(&plain) {
        let name = &c[1];
        let root = name.split('.').next().unwrap_or("");
        let in_from_line = plain.lines().any(|l| l.trim_start().starts_with("from ") && l.contains(&format!(" {name} ")));
        if in_from_line {
            continue;
        }
        if MODULE_ROOTS.contains(&root) || imported.contains(root) {
            out.insert(Token { name: name.to_string(), kind: TokenKind::Python });
        }
    }
}

fn keyword_params(code: &str, out: &mut BTreeSet<Token>) {
    let plain = code_only(code);
    let b = plain.as_bytes();
    let mut depth = 0i32;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b'=' if depth > 0 && b.get(i + 1) != Some(&b'=') && i > 0 && !b"=!<>+-*/%&|^".contains(&b[i - 1]) => {
                let mut j = i;
                while j > 0 && b[j - 1] == b' ' {
                    j -= 1;
                }
                let end = j;
                while j > 0 && (b[j - 1].is_ascii_alphanumeric() || b[j - 1] == b'_') {
                    j -= 1;
                }
                let name = &plain[j..end];
                let before = plain[..j].trim_end();
                let starts_ident = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
                if starts_ident && (before.ends_with('(') || before.ends_with(',')) {
                    out.insert(Token { name: name.to_string(), kind: TokenKind::Param });
                }
            }
            _ => {}
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn names(s: &BTreeSet<Token>) -> Vec<&str> {
        s.iter().map(|t| t.name.as_str()).collect()
    }
    #[test]
    fn shell_rules() {
        let t = in_code("export {alloc_conf_var}=expandable_segments:True\nLIBTPU_INIT_ARGS=\"--xla_tpu_scoped_vmem_limit_kib={scoped_vmem_limit_kib}\" python train.py", Some("shell"));
        assert_eq!(names(&t), vec!["--xla_tpu_scoped_vmem_limit_kib", "LIBTPU_INIT_ARGS"]);
        let t = in_code("cmake -B build -DGGML_CUDA=ON\nexport TF_GPU_ALLOCATOR=cuda_malloc_async", Some("shell"));
        assert_eq!(names(&t), vec!["-DGGML_CUDA", "TF_GPU_ALLOCATOR"]);
    }
    #[test]
    fn python_rules() {
        let t = in_code(
            "import torch\nfrom torch.utils.checkpoint import checkpoint\ny = checkpoint(block, x, use_reentrant=False)\nz = model.fit(x, batch_size=2)  # torch.not.this\ntorch.save(y, \"a.b\")\nif a == b: pass",
            Some("python"),
        );
        assert_eq!(
            names(&t),
            vec!["batch_size", "torch.save", "torch.utils.checkpoint", "torch.utils.checkpoint.checkpoint", "use_reentrant"]
        );
        let t = in_code("os.environ[\"PYTORCH_MPS_HIGH_WATERMARK_RATIO\"] = \"1.5\"\nprint(gc.collect())", Some("python"));
        assert_eq!(names(&t), vec!["PYTORCH_MPS_HIGH_WATERMARK_RATIO", "gc.collect"]);
    }
    #[test]
    fn general_advice_rules() {
        assert!(named_in_text("Lower the batch size or the sequence length, or use a GPU with more memory").is_empty());
        assert!(named_in_text("Hold less in RAM: smaller batch, fewer loader workers").is_empty());
        for (text, name) in [
            ("Set `num_workers` lower", "num_workers"),
            ("Lower max_model_len", "max_model_len"),
            ("Use PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"),
            ("Pass --gpu-memory-utilization", "--gpu-memory-utilization"),
            ("Call torch.cuda.empty_cache", "torch.cuda.empty_cache"),
            ("Call model.half() first", "model.half"),
            ("std::bad_alloc comes from the heap", "std::bad_alloc"),
            ("Offload layers with -ngl 20", "-ngl"),
            ("Read /sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.max"),
        ] {
            assert!(named_in_text(text).contains(name), "{text}: {:?}", named_in_text(text));
        }
    }

    #[test]
    fn prose_rules() {
        let t = in_prose("Setting PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 or torch.mps.empty_cache() (not E1001, not MiB.)");
        assert_eq!(names(&t), vec!["PYTORCH_MPS_HIGH_WATERMARK_RATIO", "torch.mps.empty_cache"]);
    }
}
