//! Cleaning the lines of a block before recognition: invalid UTF-8, CR, ANSI
//! colours, logger prefixes repeated on every line (`(EngineCore pid=1) ERROR 06-03
//! 07:41:11 [core.py:1184] `, glog, absl, docker compose, torchrun ranks), and lines a
//! terminal or a paste wrapped in the middle of a word.
//!
//! The result is a [`Flat`] text: cleaned lines joined by `\n` (wrapped pieces joined
//! with nothing), with a map from text offsets back to 1-based log line numbers.

use regex::Regex;
use std::sync::OnceLock;

/// One cleaned line.
#[derive(Debug, Clone)]
pub struct CleanLine {
    pub line_no: u64,
    pub text: String,
    /// Length of the line before its logger prefix was removed (terminal wraps count those columns).
    pub raw_len: usize,
    pub had_prefix: bool,
    /// The logger prefixes removed from the line (glog's `E tensorflow/core/...cc:123]`, a
    /// timestamp): they name the source file that logged it, which the case reads.
    pub prefix: String,
}

/// A block as one searchable text.
#[derive(Debug, Clone, Default)]
pub struct Flat {
    pub text: String,
    /// (offset in `text`, log line number) for the start of every original line.
    starts: Vec<(usize, u64)>,
}

impl Flat {
    /// The log line that holds byte `offset` of the flat text.
    pub fn line_at(&self, offset: usize) -> u64 {
        match self.starts.binary_search_by(|&(o, _)| o.cmp(&offset)) {
            Ok(i) => self.starts[i].1,
            Err(0) => self.starts.first().map_or(1, |s| s.1),
            Err(i) => self.starts[i - 1].1,
        }
    }

    pub fn first_line(&self) -> u64 {
        self.starts.first().map_or(1, |s| s.1)
    }
}

fn prefix_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"^(?:",
            // Ray / vLLM actors: "(EngineCore pid=106339) ", "(RayWorkerWrapper pid=1, ip=10.0.0.1) "
            r"\([\w\-]+ pid=\d+(?:, ip=[\d.]+)?\)\s*",
            // torchrun: "[rank0]: ", "[0]<stderr>: "
            r"|\[rank\d+\]:\s?",
            r"|\[\d+(?:,\d+)*\]<std(?:out|err)>:\s?",
            // vLLM logger: "ERROR 06-03 07:41:11 [core.py:1184] " / "ERROR 11-18 18:07:28 engine.py:366] "
            r"|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\s+\d\d-\d\d\s+\d\d:\d\d:\d\d(?:\.\d+)?\s+(?:\[[^\]\s]*\]|[\w.\-]+:\d+\])\s?",
            // absl/TF: "2019-06-08 03:44:36.084180: E external/.../cuda_driver.cc:828] "
            r"|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?:?\s+(?:[IWEF]\s+(?:\d+\s+)?[\w./\\:\-]+:\d+\]\s?)?",
            // glog: "E0528 07:02:44.350251   27487 file.cc:123] "
            r"|[IWEF]\d{4}\s+\d\d:\d\d:\d+\.\d+\s+\d+\s+[\w./\-]+:\d+\]\s?",
            // kernel ring buffer: "[2059991.491542] ", dmesg -T: "[Sun Mar 30 08:24:00 2025] "
            r"|\[\s*\d+\.\d+\]\s",
            r"|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]\s",
            // syslog: "Aug 18 03:19:11 host kernel: "
            r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.\-]+ kernel:\s",
            // "[16:10:33] stdout/INFO  "
            r"|\[\d\d:\d\d:\d\d(?:\.\d+)?\]\s+[\w/]+\s+",
            // "[2024-05-01 10:00:00,123] [ERROR] " / "[2024-05-01T10:00:00Z] "
            r"|\[\d{4}-\d\d-\d\d[ T][\d:.,]+Z?\]\s*(?:\[[A-Z]+\]\s*)?",
            // llama.cpp common/log.cpp with timestamps: "1.06.520.077 E " (h.mm.ss.ms, level letter)
            r"|\d+\.\d\d\.\d\d\d\.\d\d\d [IWEDN] ",
            // docker compose: "vllm-1  | "
            r"|[\w.\-]+\s+\|\s",
            // mpirun/pdsh rank tags: "[1] ", "[1,0]<stderr>:" handled above
            r"|\[\d+\]\s",
            // Markdown quotes of a pasted log: "> "
            r"|>\s?",
            // pytest's failure lines: "E                       ray.exceptions.OutOfMemoryError: ..."
            r"|E {3,}",
            // A unified diff's added lines (a log quoted in a pull request): "+    Traceback ..."
            r"|\+ {2,}",
            r")",
        ))
        .expect("prefix regex")
    })
}

/// Colour codes whose ESC byte was lost in a paste (`[2m[36m(Worker pid=1)[0m`).
fn strip_orphan_sgr(s: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    if !s.contains('[') || !s.contains('m') {
        return s.to_string();
    }
    let re = RE.get_or_init(|| Regex::new(r"\[(?:\d{1,3};)*\d{1,3}m").expect("sgr regex"));
    re.replace_all(s, "").into_owned()
}

/// UTF-8 with invalid bytes replaced, except a lone 0xA0: that is Windows-1252's no-break
/// space (a console or editor in that code page put it between a number and its unit), kept
/// as U+00A0 so that `3.00\xA0GiB` still reads as 3 GiB.
fn decode_lossy(raw: &[u8]) -> std::borrow::Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(raw) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(raw.len() + 8);
    for chunk in raw.utf8_chunks() {
        out.push_str(chunk.valid());
        match chunk.invalid() {
            [] => {}
            [0xA0] => out.push('\u{a0}'),
            _ => out.push('\u{fffd}'),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Clean one raw line.
pub fn clean_line(line_no: u64, raw: &[u8]) -> CleanLine {
    let s = decode_lossy(raw);
    let s = s.trim_end_matches(['\r', '\n']);
    // Escape sequences and every other control a terminal acts on (C1, BEL, BS,
    // bidi overrides) go here, so no renderer ever sees them.
    // A carriage return inside a line is a progress bar's redraw: dropped, as ever.
    let s = s.replace('\r', "");
    let s = oomdoc_units::terminal::clean(&s);
    let s = strip_orphan_sgr(&s);
    let raw_len = s.chars().count();
    let mut text: &str = &s;
    let mut had_prefix = false;
    for _ in 0..4 {
        match prefix_re().find(text) {
            Some(m) if m.end() > 0 => {
                text = &text[m.end()..];
                had_prefix = true;
            }
            _ => break,
        }
    }
    let prefix = s[..s.len() - text.len()].trim().to_string();
    let text = strip_markdown_emphasis(text);
    CleanLine { line_no, text: text.to_string(), raw_len, had_prefix, prefix }
}

/// Markdown around a pasted message: `**Killed**`, `` `zsh: killed  python3 x.py` ``, a bold
/// block's first or last line (`**OSError: ...`, `... of 0.**`). A run of one to three `*` or
/// `` ` `` glued to the text is emphasis or code when it pairs with the same run at the other
/// end, or stands alone (its character occurs nowhere else on the line): `` label = `Buffer` ``
/// keeps its closing quote, and `*** Error in ...` (spaced) stays.
fn strip_markdown_emphasis(text: &str) -> &str {
    fn is_marker(b: u8) -> bool {
        b == b'*' || b == b'`'
    }
    let lead = text.bytes().take_while(|&b| is_marker(b)).count();
    let trail = text.bytes().rev().take_while(|&b| is_marker(b)).count();
    if lead == text.len() {
        return text;
    }
    let lead_ok = (1..=3).contains(&lead) && text[lead..].starts_with(|c: char| !c.is_whitespace());
    let trail_ok = (1..=3).contains(&trail) && text[..text.len() - trail].ends_with(|c: char| !c.is_whitespace());
    let inner = |from: usize, to: usize| &text[from..to];
    if lead_ok && trail_ok && text[..lead] == text[text.len() - trail..] {
        return inner(lead, text.len() - trail);
    }
    if lead_ok && !text[lead..].contains(text.as_bytes()[0] as char) {
        return inner(lead, text.len());
    }
    if trail_ok && !text[..text.len() - trail].contains(text.as_bytes()[text.len() - 1] as char) {
        return inner(0, text.len() - trail);
    }
    text
}

/// A log line that carries a whole multi-line message in one escaped string: a
/// JSON-lines record (`{"msg": "Traceback ...\n  File ...\nRuntimeError: ..."}`), or
/// a Python repr of a traceback. Such a line is unescaped (`\n`, `\t`, `\"`, `\\`,
/// `\/`, `\uXXXX`) and split into its pieces, each keeping the log line's number.
/// Twice-escaped text (JSON inside a JSON string) is unescaped twice. Other lines: `None`.
pub fn expand_escaped(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    fn escaped_newlines(l: &[u8]) -> usize {
        memchr::memmem::find_iter(l, b"\\n").count()
    }
    let n = escaped_newlines(line);
    if n == 0 {
        return None;
    }
    let trimmed = line.trim_ascii_start();
    let jsonish = trimmed.starts_with(b"{") || trimmed.starts_with(b"[") || memchr::memmem::find(line, b"\":").is_some();
    if !jsonish && n < 2 {
        return None;
    }
    let mut pieces = unescape_split(line);
    for _ in 0..1 {
        if pieces.iter().map(|p| escaped_newlines(p)).sum::<usize>() < 2 {
            break;
        }
        pieces = pieces.iter().flat_map(|p| unescape_split(p)).collect();
    }
    Some(pieces)
}

/// One pass of JSON string unescaping, splitting at escaped newlines.
fn unescape_split(line: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new()];
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if b != b'\\' || i + 1 >= line.len() {
            out.last_mut().unwrap().push(b);
            i += 1;
            continue;
        }
        let cur = out.last_mut().unwrap();
        match line[i + 1] {
            b'n' => out.push(Vec::new()),
            b'r' => {}
            b't' => cur.push(b'\t'),
            b'"' | b'\\' | b'/' | b'\'' => cur.push(line[i + 1]),
            b'u' if i + 6 <= line.len() => {
                let hex = std::str::from_utf8(&line[i + 2..i + 6]).ok().and_then(|h| u16::from_str_radix(h, 16).ok());
                match hex {
                    Some(u) => {
                        // A surrogate pair is two escapes in a row.
                        let mut units = vec![u];
                        if (0xd800..0xdc00).contains(&u) && line.get(i + 6..i + 8) == Some(b"\\u") {
                            if let Some(lo) = std::str::from_utf8(line.get(i + 8..i + 12).unwrap_or(b"")).ok().and_then(|h| u16::from_str_radix(h, 16).ok()) {
                                units.push(lo);
                            }
                        }
                        let mut tmp = [0u8; 4];
                        for c in char::decode_utf16(units.iter().copied()) {
                            cur.extend_from_slice(c.unwrap_or(char::REPLACEMENT_CHARACTER).encode_utf8(&mut tmp).as_bytes());
                        }
                        i += 6 * units.len();
                        continue;
                    }
                    None => cur.extend_from_slice(&line[i..i + 2]),
                }
            }
            other => {
                cur.push(b'\\');
                cur.push(other);
            }
        }
        i += 2;
    }
    out
}

/// glog's line header: a level letter, `MMDD hh:mm:ss` (`F0925 19:48:41.571030 ...`).
fn glog_header(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() > 14 && matches!(b[0], b'I' | b'W' | b'E' | b'F') && b[1..5].iter().all(u8::is_ascii_digit) && b[5] == b' ' && b[6..8].iter().all(u8::is_ascii_digit) && b[8] == b':'
}

/// A line that starts a new record, never the tail of a wrapped one.
fn starts_record(t: &str) -> bool {
    // A record pasted inside quotes (`"F0925 19:48:41.571030  1010 file.cpp:78] Check failed: ...`).
    let t = match t.strip_prefix(['"', '\'', '`']) {
        Some(rest) if glog_header(rest) => return true,
        _ => t,
    };
    const STARTS: [&str; 8] = ["Traceback", "File \"", "During handling", "The above exception", "Hint:", "Original error", "Exception", "WARNING"];
    if STARTS.iter().any(|s| t.starts_with(s)) {
        return true;
    }
    // A line that opens with a date is a log record of its own (`2024-Jul-30 14:22:30.24 ...` of the
    // Neuron runtime, `2023-12-26T08:37:54Z ...`), even when no prefix rule strips it.
    let b = t.as_bytes();
    if b.len() > 5 && b[..4].iter().all(u8::is_ascii_digit) && matches!(b[4], b'-' | b'/') {
        return true;
    }
    // A bracketed time stamp (`[11/10/2023-06:30:40] [TRT] ...`), or a one-letter level and a
    // tag (`E RKNN: ...`, `I rkllm: ...`, Android's `E/RKNN: ...`).
    if b.len() > 2 && b[0] == b'[' && b[1].is_ascii_digit() {
        return true;
    }
    // A bracketed tag opening the line (`[BMRT][load_bmodel:1573] ...`, `[bmlib_memory][error] ...`).
    if b.len() > 3 && b[0] == b'[' {
        if let Some(close) = t[1..].find(']') {
            let tag = &t[1..1 + close];
            if (2..=40).contains(&tag.len()) && tag.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':' | b' ')) {
                return true;
            }
        }
    }
    if b.len() > 3 && matches!(b[0], b'V' | b'D' | b'I' | b'W' | b'E' | b'F') && matches!(b[1], b' ' | b'/') {
        let tag = &t[2..];
        let end = tag.find(':').unwrap_or(0);
        if end > 0 && tag[..end].bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-') {
            return true;
        }
    }
    // A shell's report of a job it lost to a signal stands on a line of its own: bash prints the
    // signal's description (`Killed`, SIGKILL's `strsignal`), macOS's shells `Killed: 9`; a terminal
    // wrap never leaves exactly that word on the next line.
    if t == "Killed" || t == "Killed: 9" {
        return true;
    }
    // A Markdown code fence stands on a line of its own.
    if t.starts_with("```") || t.starts_with("~~~") {
        return true;
    }
    // A program's own diagnostic, as the GNU Coding Standards have tools print them
    // (`program: message`): `make: *** [build] Error 17`, `gcc: fatal error: ...`.
    if let Some((prog, rest)) = t.split_once(": ") {
        let tool = (1..=30).contains(&prog.len()) && prog.as_bytes()[0].is_ascii_lowercase() && prog.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'-' | b'.' | b'+'));
        if tool && ["*** ", "error", "fatal", "warning"].iter().any(|w| rest.starts_with(w)) {
            return true;
        }
    }
    // A C function's own report, `__func__` first as C libraries print them (`"%s: failed to
    // allocate %s buffer of size %zu", __func__` in ggml, llama.cpp, many drivers):
    // `ggml_gallocr_reserve_n: failed ...`. A snake_case name with an underscore, then ": ".
    if let Some((func, _)) = t.split_once(": ") {
        let b = func.as_bytes();
        if (6..=60).contains(&b.len()) && b[0].is_ascii_lowercase() && func.contains('_') && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_') {
            return true;
        }
    }
    // `RuntimeError: ...`, `jaxlib.xla_extension.XlaRuntimeError: ...`
    let head: &str = t.split([':', ' ']).next().unwrap_or("");
    head.len() > 3 && (head.ends_with("Error") || head.ends_with("Exception") || head.ends_with("OutOfResources"))
}

/// Join cleaned lines into a [`Flat`] text. A line is glued to the previous one
/// (no separator) when the previous raw line was terminal-width long and this one
/// looks like its continuation: no logger prefix of its own, no indentation, not
/// the start of a new record. Everything else is separated by `\n`.
pub fn flatten(lines: &[CleanLine]) -> Flat {
    let mut flat = Flat { text: String::new(), starts: Vec::with_capacity(lines.len()) };
    let mut prev_raw_len = 0usize;
    for (i, l) in lines.iter().enumerate() {
        let glue = i > 0
            && prev_raw_len >= 100
            && !l.had_prefix
            && !l.text.is_empty()
            && !l.text.starts_with(char::is_whitespace)
            && !starts_record(&l.text)
            // Pieces of one log line split at its escaped newlines (`expand_escaped`) are lines of their own.
            && l.line_no != lines[i - 1].line_no
            // A finished sentence followed by a word is two lines of prose (a paragraph of an issue), not a wrap.
            && !(flat.text.ends_with(['.', '!', '?']) && l.text.split(' ').next().is_some_and(|w| w.len() > 1 && w.chars().all(char::is_alphabetic)))
            && !flat.text.ends_with('\n');
        if i > 0 && !glue {
            flat.text.push('\n');
        }
        flat.starts.push((flat.text.len(), l.line_no));
        flat.text.push_str(&l.text);
        // A terminal fills every piece of a wrapped line but the last: a short piece ends the wrap.
        prev_raw_len = l.raw_len;
        if l.text.is_empty() {
            prev_raw_len = 0;
        }
    }
    flat
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(s: &str) -> String {
        clean_line(1, s.as_bytes()).text
    }

    #[test]
    fn strips_prefixes() {
        assert_eq!(clean("(EngineCore pid=106339) ERROR 06-03 07:41:11 [core.py:1184] jax.errors.JaxRuntimeError: X"), "jax.errors.JaxRuntimeError: X");
        assert_eq!(clean("vllm-1  | ERROR 11-18 18:07:28 engine.py:366] ValueError: No"), "ValueError: No");
        assert_eq!(clean("2019-06-08 03:44:36.084180: E external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_driver.cc:828] failed"), "failed");
        assert_eq!(clean("E0528 07:02:44.350251   27487 file.cc:123] Out"), "Out");
        assert_eq!(clean("[rank3]: torch.OutOfMemoryError: CUDA"), "torch.OutOfMemoryError: CUDA");
        assert_eq!(clean("[16:10:33] stdout/INFO  triton.runtime"), "triton.runtime");
        assert_eq!(clean("\x1b[31mRuntimeError\x1b[0m: CUDA"), "RuntimeError: CUDA");
        assert_eq!(clean("plain\r"), "plain");
        assert_eq!(clean("  File \"x.py\""), "  File \"x.py\"");
        assert_eq!(clean("E                       ray.exceptions.OutOfMemoryError: Task"), "ray.exceptions.OutOfMemoryError: Task");
        assert_eq!(clean("+    ray.exceptions.OutOfMemoryError: Task"), "ray.exceptions.OutOfMemoryError: Task");
        assert_eq!(clean("+ python3 -u webui.py"), "+ python3 -u webui.py", "a shell trace line keeps its +");
    }

    #[test]
    fn strips_markdown_around_a_message() {
        assert_eq!(clean("**Killed**"), "Killed");
        assert_eq!(clean("`zsh: killed     python3 horo_chart_tabs.py`"), "zsh: killed     python3 horo_chart_tabs.py");
        assert_eq!(clean("**OSError: [WinError 1455] x**"), "OSError: [WinError 1455] x");
        assert_eq!(clean("*** Error in `python': double free or corruption (!prev) ***"), "*** Error in `python': double free or corruption (!prev) ***");
        assert_eq!(clean("Message:        The node was low on resource: memory. Container x was using 1Ki, which exceeds its request of 0.**"), "Message:        The node was low on resource: memory. Container x was using 1Ki, which exceeds its request of 0.");
        assert_eq!(clean("      note: label = `Buffer Src`"), "      note: label = `Buffer Src`");
    }

    #[test]
    fn joins_terminal_wraps() {
        let a = "2019-06-08 03:44:36.084180: E external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_driver.cc:828] failed to allocate 3.39G (3640655872 bytes) from devic";
        let lines = vec![clean_line(1, a.as_bytes()), clean_line(2, b"e: CUDA_ERROR_OUT_OF_MEMORY: out of memory"), clean_line(3, b"next")];
        let f = flatten(&lines);
        assert!(f.text.contains("from device: CUDA_ERROR_OUT_OF_MEMORY"), "{}", f.text);
        assert_eq!(f.line_at(f.text.find("CUDA_ERROR").unwrap()), 2);
        assert_eq!(f.line_at(f.text.find("next").unwrap()), 3);
    }

    #[test]
    fn records_that_open_a_line_are_never_wrap_tails() {
        // A long line is followed by log records with no prefix rule of their own (sophgo/LLM-TPU#8,
        // airockchip/rknn-llm#335, huggingface/optimum-neuron#668): each stays on its own line.
        let long = "[BMRT][load_bmodel:1573] INFO:Loading bmodel from [../../bmodels/rwkv6-1b5_bf16_1dev.bmodel]. Thanks for your patience...";
        for next in ["[bmlib_memory][error] bm_alloc_gmem failed, dev_id = 0", "E RKNN: [09:40:45.140] failed to malloc npu memory", "E/RKNN: failed to allocate handle", "2024-Jul-30 14:22:30.261865 65191:65191 ERROR  TDRV:dml_dump"] {
            let lines = vec![clean_line(1, long.as_bytes()), clean_line(2, next.as_bytes())];
            assert!(flatten(&lines).text.contains(&format!("\n{next}")), "{next}");
        }
    }

    #[test]
    fn a_c_functions_report_is_never_a_wrap_tail() {
        // Ollama's one-line report of its runner (100 columns), then ggml's own line.
        let first = "Error: 500 Internal Server Error: llama runner process has terminated: cudaMalloc failed: out of memory";
        let lines = [clean_line(1, first.as_bytes()), clean_line(2, b"ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 8891928576")];
        let f = flatten(&lines);
        assert_eq!(f.line_at(f.text.find("ggml_gallocr").unwrap()), 2);
    }

    #[test]
    fn a_shell_kill_report_is_never_a_wrap_tail() {
        // tensorflow/tensorflow#36429: TensorFlow's 134-byte warning, then bash's job report.
        let long = "2020-02-01 11:57:36.437688: W tensorflow/core/framework/cpu_allocator_impl.cc:81] Allocation of 10616832 exceeds 10% of system memory.";
        for next in ["Killed", "Killed: 9"] {
            let lines = vec![clean_line(1, long.as_bytes()), clean_line(2, next.as_bytes())];
            assert!(flatten(&lines).text.ends_with(&format!("\n{next}")), "{next}");
        }
    }

    #[test]
    fn json_lines_are_unescaped_and_split() {
        let line = br#"{"ts": 1, "msg": "Traceback (most recent call last):\n  File \"t.py\", line 3\nRuntimeError: CUDA out of memory. \u5185\u5b58 \ud83d\ude00 a\\nb"}"#;
        let p = expand_escaped(line).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[1], br#"  File "t.py", line 3"#.to_vec());
        assert_eq!(String::from_utf8(p[2].clone()).unwrap(), "RuntimeError: CUDA out of memory. 内存 😀 a\\nb\"}");
        assert!(expand_escaped(br"C:\new\dir").is_none(), "one stray \n outside JSON is left alone");
        // JSON inside a JSON string.
        let twice = br#"{"log": "{\"msg\": \"a\\nb\\nc\"}"}"#;
        assert_eq!(expand_escaped(twice).unwrap().len(), 3);
    }

    #[test]
    fn ansi_never_splits_utf8() {
        let s = "\x1b[1m内存\x1b[0m不足\x1b";
        assert_eq!(oomdoc_units::terminal::clean(s), "内存不足");
        let l = clean_line(1, "op gmm\u{9b}2J\u{9b}H.1\x07\x08 at a.py:1\u{202e}".as_bytes());
        assert_eq!(l.text, "op gmm.1␇␈ at a.py:1\u{fffd}");
    }
}
