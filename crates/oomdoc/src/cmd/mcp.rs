//! `oomdoc mcp`: a Model Context Protocol server over stdio, so a coding agent that hits
//! an out-of-memory error can ask oomdoc instead of guessing.
//!
//! Transport: newline-delimited JSON-RPC 2.0 on stdin/stdout (the MCP stdio transport);
//! nothing but protocol messages is written to stdout, notes go to stderr. Methods:
//! `initialize`, `notifications/initialized`, `ping`, `tools/list`, `tools/call`.
//! Tools (arguments mirror the CLI flags; results are the CLI's JSON contracts as
//! `structuredContent`, with the text rendering as `content`):
//! `diagnose`, `explain`, `plan_pallas`, `plan_triton`, `memory`.
//!
//! Written by hand on the spec's messages rather than with the `rmcp` SDK: the server
//! needs five request types, and the SDK would add an async runtime, macros and a
//! JSON-schema generator to every build of the CLI (and to a lock file other branches
//! also change) for what is one loop over stdin.

use crate::cli_error::CliError;
use clap::Args;
use oomdoc_diagnose::{diagnose_text, render, Lang, Options};
use oomdoc_kb::KnowledgeBase;
use serde_json::{json, Map, Value};
use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Args)]
pub struct McpArgs {
    /// Confine the files the tools read (`paths`, `dump`) to this directory: a path
    /// outside it, or a link that leads outside it, is refused. Without it the tools
    /// read any file the user running `oomdoc mcp` can read.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Protocol revisions this server speaks (tools, as used here, are the same in all).
const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// Largest message accepted (a pasted log can be large; a dump path is better).
const MAX_MESSAGE: u64 = 64 << 20;
/// Tool calls running at once; more are answered with an error the agent can retry.
const MAX_CALLS: usize = 8;

/// What every tool call may read.
#[derive(Clone, Default)]
struct Ctx {
    /// `--root`, canonical.
    root: Option<PathBuf>,
}

/// Requests in flight by id, and those the client cancelled (`notifications/cancelled`):
/// a cancelled call's result is not sent.
#[derive(Default)]
struct Calls {
    running: std::collections::HashSet<String>,
    cancelled: std::collections::HashSet<String>,
}

/// The stdout side, shared by the reader loop and the call threads.
type Out = Arc<Mutex<io::Stdout>>;

pub fn run(args: McpArgs) -> Result<(), CliError> {
    let root = match &args.root {
        Some(r) => Some(std::fs::canonicalize(r).map_err(|e| CliError::usage(format!("--root {}: {e}", r.display())))?),
        None => None,
    };
    let ctx = Ctx { root };
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let out: Out = Arc::new(Mutex::new(io::stdout()));
    let calls: Arc<Mutex<Calls>> = Arc::default();
    let mut workers: Vec<std::thread::JoinHandle<()>> = Vec::new();
    let mut buf = Vec::new();
    loop {
        workers.retain(|w| !w.is_finished());
        buf.clear();
        let n = (&mut input).take(MAX_MESSAGE + 1).read_until(b'\n', &mut buf)?;
        if n == 0 {
            // The client closed stdin: finish the calls in flight, then shut down.
            for w in workers {
                let _ = w.join();
            }
            return Ok(());
        }
        if buf.len() as u64 > MAX_MESSAGE && buf.last() != Some(&b'\n') {
            // Skip the rest of the oversized line without keeping it.
            skip_line(&mut input)?;
            write_msg(&out, &error(Value::Null, -32700, &format!("message larger than {MAX_MESSAGE} bytes")))?;
            continue;
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Value>(line) {
            Err(e) => Some(error(Value::Null, -32700, &format!("parse error: {e}"))),
            Ok(Value::Array(batch)) if batch.is_empty() => Some(error(Value::Null, -32600, "invalid request: empty batch")),
            // A batch is answered as one array, so its calls run here, one after another.
            Ok(Value::Array(batch)) => {
                let replies: Vec<Value> = batch.into_iter().filter_map(|m| handle(m, &ctx, &calls)).collect();
                (!replies.is_empty()).then_some(Value::Array(replies))
            }
            Ok(msg) => {
                if let Some(call) = as_tool_call(&msg) {
                    // Each tool call on its own thread: `ping`, other calls and
                    // `notifications/cancelled` are read and answered meanwhile.
                    let busy = calls.lock().map(|c| c.running.len()).unwrap_or(0) >= MAX_CALLS;
                    if busy {
                        Some(error(call, -32000, &format!("{MAX_CALLS} tool calls are already running; retry when one has answered")))
                    } else {
                        let key = call.to_string();
                        if let Ok(mut c) = calls.lock() {
                            c.running.insert(key.clone());
                        }
                        let (ctx, calls, out) = (ctx.clone(), calls.clone(), out.clone());
                        workers.push(std::thread::spawn(move || {
                            let reply = handle(msg, &ctx, &calls);
                            let cancelled = calls.lock().map(|mut c| {
                                c.running.remove(&key);
                                c.cancelled.remove(&key)
                            });
                            if let (Some(r), Ok(false)) = (reply, cancelled) {
                                let _ = write_msg(&out, &r);
                            }
                        }));
                        None
                    }
                } else {
                    handle(msg, &ctx, &calls)
                }
            }
        };
        if let Some(r) = reply {
            write_msg(&out, &r)?;
        }
    }
}

/// The id of a `tools/call` request (the one kind of message that can take long).
fn as_tool_call(msg: &Value) -> Option<Value> {
    if invalid_request(msg).is_some() {
        return None;
    }
    let obj = msg.as_object()?;
    (obj.get("method").and_then(Value::as_str) == Some("tools/call")).then(|| obj.get("id").cloned()).flatten()
}

/// Read and drop the rest of a line, a buffer at a time (never the whole line at once).
fn skip_line(input: &mut impl BufRead) -> io::Result<()> {
    loop {
        let (found, n) = {
            let chunk = input.fill_buf()?;
            if chunk.is_empty() {
                return Ok(());
            }
            match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (true, i + 1),
                None => (false, chunk.len()),
            }
        };
        input.consume(n);
        if found {
            return Ok(());
        }
    }
}

fn write_msg(out: &Out, v: &Value) -> io::Result<()> {
    let mut s = serde_json::to_string(v).expect("serializes");
    s.push('\n');
    // One whole message at a time, whichever thread answers.
    let mut out = out.lock().unwrap_or_else(|p| p.into_inner());
    out.write_all(s.as_bytes())?;
    out.flush()
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

fn result(id: Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// The -32600 answer to a message that is not a JSON-RPC 2.0 request, notification or
/// response (JSON-RPC 2.0 §4, §5.1; MCP: an id is a string or an integer, never null).
/// The answer carries the message's id when that id is itself valid, else null.
fn invalid_request(msg: &Value) -> Option<Value> {
    let Some(obj) = msg.as_object() else {
        return Some(error(Value::Null, -32600, "invalid request: not an object"));
    };
    let id = obj.get("id");
    let id_ok = match id {
        None => true,
        Some(Value::String(_)) => true,
        Some(Value::Number(n)) => n.is_i64() || n.is_u64(),
        Some(_) => false,
    };
    if !id_ok {
        let shown = id.map(Value::to_string).unwrap_or_default();
        let shown: String = shown.chars().take(40).collect();
        return Some(error(Value::Null, -32600, &format!("invalid request: `id` must be a string or an integer, not {shown}")));
    }
    let reply_id = id.cloned().unwrap_or(Value::Null);
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => None,
        None => Some(error(reply_id, -32600, "invalid request: no `jsonrpc` member (it must be \"2.0\")")),
        Some(other) => {
            let shown: String = other.to_string().chars().take(40).collect();
            Some(error(reply_id, -32600, &format!("invalid request: `jsonrpc` must be \"2.0\", not {shown}")))
        }
    }
}

/// Answer one message; notifications (no `id`) get no answer.
fn handle(msg: Value, ctx: &Ctx, calls: &Mutex<Calls>) -> Option<Value> {
    if let Some(e) = invalid_request(&msg) {
        return Some(e);
    }
    let Some(obj) = msg.as_object() else { unreachable!("invalid_request answers non-objects") };
    let id = obj.get("id").cloned();
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        // A response from the client (we send no requests) or garbage.
        return id.map(|id| error(id, -32600, "invalid request: no method"));
    };
    if method == "notifications/cancelled" {
        // The client no longer wants the answer of a call still running.
        if let Some(rid) = obj.get("params").and_then(|p| p.get("requestId")) {
            if let Ok(mut c) = calls.lock() {
                let key = rid.to_string();
                if c.running.contains(&key) {
                    c.cancelled.insert(key);
                }
            }
        }
        return None;
    }
    let id = id?; // notifications: initialized, … need no answer
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    Some(match method {
        "initialize" => {
            let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
            let version = PROTOCOL_VERSIONS.iter().find(|v| **v == asked).copied().unwrap_or(PROTOCOL_VERSIONS[1]);
            result(
                id,
                json!({
                    "protocolVersion": version,
                    "capabilities": { "tools": { "listChanged": false } },
                    "serverInfo": { "name": "oomdoc", "title": "oomdoc", "version": env!("CARGO_PKG_VERSION") },
                    "instructions": "oomdoc explains accelerator out-of-memory failures (TPU/XLA, PyTorch CUDA/ROCm/MPS, JAX, Triton, TensorFlow, vLLM, host OOM killer) from the log's own numbers. Call `diagnose` with the error text or the log file path(s) when a run fails with an out-of-memory error; it returns the failure, the cause and ranked fixes with exact values. `explain` prints a knowledge-base entry; `plan_pallas`/`plan_triton` predict on-chip memory of a kernel before compiling; `memory` reads an XLA dump."
                }),
            )
        }
        "ping" => result(id, json!({})),
        "tools/list" => result(id, json!({ "tools": tools() })),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            let args = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
            if !tools().iter().any(|t| t["name"] == name) {
                return Some(error(id, -32602, &format!("unknown tool `{name}`")));
            }
            let Some(args) = args.as_object() else {
                return Some(error(id, -32602, "`arguments` must be an object"));
            };
            match call(name, args, ctx) {
                Ok((text, structured)) => result(id, json!({ "content": [ { "type": "text", "text": text } ], "structuredContent": structured, "isError": false })),
                Err(msg) => result(id, json!({ "content": [ { "type": "text", "text": msg } ], "isError": true })),
            }
        }
        other => error(id, -32601, &format!("method not found: {other}")),
    })
}

/// The tools with their input schemas (the CLI's flags) and output schemas (the contracts' top level).
fn tools() -> Vec<Value> {
    let lang = json!({ "type": "string", "enum": ["en", "zh"], "default": "en", "description": "Language of titles, causes and fixes." });
    vec![
        json!({
            "name": "diagnose",
            "title": "Diagnose an out-of-memory failure",
            "description": "Find every accelerator or host memory failure in a log and explain it: the failing allocation and limit in bytes, the culprit op/kernel, the cause, ranked fixes with exact values computed from the log (flags, env vars, code), and what will not help. Give the error text (`text`), or log files/directories (`paths`: several logs of one job are merged, the same failure on many hosts reported once). Same result as `oomdoc diagnose --format json` (README: the JSON contract).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "text": { "type": "string", "description": "The log or traceback text." },
                    "paths": { "type": "array", "items": { "type": "string" }, "description": "Log files or directories on this machine (compressed logs too)." },
                    "dump": { "type": "string", "description": "XLA dump directory (--xla_dump_to): attach the failing module's memory at its peak." },
                    "lang": lang
                },
                "additionalProperties": false
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "findings": { "type": "array", "items": { "type": "object" } },
                    "lines_scanned": { "type": "integer" },
                    "bytes_scanned": { "type": "integer" }
                },
                "required": ["findings", "lines_scanned", "bytes_scanned"]
            }
        }),
        json!({
            "name": "explain",
            "title": "Explain a failure family",
            "description": "A knowledge-base entry by id (`tpu.scoped-vmem`), vendor code (`E1001`) or code name: what the failure means, causes, fixes with the versions they need, dead ends, references. With `list: true`, every entry (id, code, kind, platform, title). Same as `oomdoc explain`.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "id": { "type": "string", "description": "Entry id, vendor code or code name." },
                    "list": { "type": "boolean", "default": false, "description": "List every entry instead." },
                    "lang": lang
                },
                "additionalProperties": false
            }
        }),
        json!({
            "name": "plan_pallas",
            "title": "Predict VMEM/SMEM of a Pallas TPU kernel",
            "description": "VMEM and SMEM of one pallas_call (blocks, buffering, scratch) against the chip's scoped-VMEM limit, before compiling. The spec format is documented in docs/plan.md (TOML, or JSON starting with `{`). Same as `oomdoc plan pallas SPEC --format json`.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "spec": { "type": "string", "description": "The spec text (TOML or JSON): chip, grid, inputs/outputs/scratch with shape, dtype, block." },
                    "chip": { "type": "string", "description": "Override the spec's chip (v4, v5e, v5p, v6e, v7x, …)." },
                    "vmem_limit_bytes": { "type": "integer", "minimum": 1, "description": "Override the spec's vmem_limit_bytes." }
                },
                "required": ["spec"],
                "additionalProperties": false
            },
            "outputSchema": { "type": "object" }
        }),
        json!({
            "name": "plan_triton",
            "title": "Predict shared memory of a Triton matmul",
            "description": "Shared memory per block of the Triton tutorial matmul for one config (block_m/block_n/block_k/num_stages/num_warps) or for an autotune list (`configs`), against the GPU's limit; says which configs fit. Same as `oomdoc plan triton --format json`.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "arch": { "type": "string", "description": "GPU arch: sm_70 … sm_120 (8.6 and 86 work too), or a GPU name (rtx4090, H100, A100)." },
                    "block_m": { "type": "integer", "minimum": 1 },
                    "block_n": { "type": "integer", "minimum": 1 },
                    "block_k": { "type": "integer", "minimum": 1 },
                    "num_stages": { "type": "integer", "minimum": 1, "default": 3 },
                    "num_warps": { "type": "integer", "minimum": 1, "default": 4 },
                    "dtype": { "type": "string", "enum": ["fp16", "bf16", "fp32", "fp8e4nv", "fp8e5"], "default": "fp16", "description": "A/B element type." },
                    "configs": { "description": "Autotune configs: a JSON list ([{\"BLOCK_M\":..,\"BLOCK_N\":..,\"BLOCK_K\":..,\"num_stages\":..,\"num_warps\":..}]) or its text.", "type": ["array", "string"] },
                    "triton_version": { "type": "string", "default": "3.9", "description": "Triton release whose pipelining rules apply." }
                },
                "required": ["arch"],
                "additionalProperties": false
            },
            "outputSchema": { "type": "object" }
        }),
        json!({
            "name": "memory",
            "title": "What filled memory in an XLA program",
            "description": "From an XLA dump directory (XLA_FLAGS=--xla_dump_to=DIR): a module's peak memory, the buffers live at the peak (shapes, padding, op names, source lines) and the timeline. Without `module`, the module with the largest peak. Same as `oomdoc memory DIR [--module NAME] --format json` (docs/memory.md); `top` limits the buffers in the text rendering.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "dump": { "type": "string", "description": "XLA dump directory on this machine." },
                    "module": { "type": "string", "description": "Module name or part of it (jit_train_step)." },
                    "top": { "type": "integer", "minimum": 1, "default": 10, "description": "Buffers listed in the text rendering." }
                },
                "required": ["dump"],
                "additionalProperties": false
            },
            "outputSchema": { "type": "object", "properties": { "modules": { "type": "array", "items": { "type": "object" } } }, "required": ["modules"] }
        }),
        json!({
            "name": "memory_snapshot",
            "title": "What held GPU memory in a PyTorch job",
            "description": "From a PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot()): per device, reserved/allocated bytes, the peak over the trace, the OOM entry (requested and free bytes) and what was live at the OOM (or peak) grouped by the user's call site, with stacks; fragmentation. Same as `oomdoc memory SNAPSHOT.pickle --format json` (docs/memory.md). The pickle is read by oomdoc's own reader, which runs nothing.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "snapshot": { "type": "string", "description": "Snapshot pickle on this machine." },
                    "top": { "type": "integer", "minimum": 1, "default": 10, "description": "Call sites and allocations listed per device." }
                },
                "required": ["snapshot"],
                "additionalProperties": false
            },
            "outputSchema": { "type": "object", "properties": { "devices": { "type": "array", "items": { "type": "object" } } }, "required": ["devices"] }
        }),
    ]
}

type ToolResult = Result<(String, Value), String>;

fn str_arg<'a>(args: &'a Map<String, Value>, k: &str) -> Result<Option<&'a str>, String> {
    match args.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("`{k}` must be a string")),
    }
}

fn u64_arg(args: &Map<String, Value>, k: &str) -> Result<Option<u64>, String> {
    match args.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().filter(|&n| n > 0).map(Some).ok_or_else(|| format!("`{k}` must be a positive integer")),
    }
}

fn lang_arg(args: &Map<String, Value>) -> Result<Lang, String> {
    match str_arg(args, "lang")? {
        None => Ok(Lang::En),
        Some(s) => Lang::parse(s).ok_or_else(|| format!("`lang`: unknown language `{s}` (use en or zh)")),
    }
}

fn check_keys(args: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    match args.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!("unknown argument `{k}` (allowed: {})", allowed.join(", "))),
        None => Ok(()),
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, String> {
    serde_json::to_value(v).map_err(|e| e.to_string())
}

fn call(name: &str, args: &Map<String, Value>, ctx: &Ctx) -> ToolResult {
    match name {
        "diagnose" => tool_diagnose(args, ctx),
        "explain" => tool_explain(args),
        "plan_pallas" => tool_plan_pallas(args),
        "plan_triton" => tool_plan_triton(args),
        "memory" => tool_memory(args, ctx),
        "memory_snapshot" => tool_memory_snapshot(args, ctx),
        other => Err(format!("unknown tool `{other}`")),
    }
}

/// A path a tool may read: it exists, is a regular file or a directory (a FIFO would
/// block the call, a device never ends), and lies under `--root` when one is set (links
/// resolved first).
fn readable_path(arg: &str, p: &Path, ctx: &Ctx) -> Result<(), String> {
    let meta = std::fs::metadata(p).map_err(|e| format!("`{arg}`: {}: {e}", p.display()))?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(format!("`{arg}`: {} is not a regular file or a directory (a pipe, socket or device); oomdoc reads log files and folders", p.display()));
    }
    if let Some(root) = &ctx.root {
        let real = std::fs::canonicalize(p).map_err(|e| format!("`{arg}`: {}: {e}", p.display()))?;
        if !real.starts_with(root) {
            return Err(format!("`{arg}`: {} is outside the directory this server may read ({}; oomdoc mcp --root)", p.display(), root.display()));
        }
    }
    Ok(())
}

fn tool_diagnose(args: &Map<String, Value>, ctx: &Ctx) -> ToolResult {
    check_keys(args, &["text", "paths", "dump", "lang"])?;
    let lang = lang_arg(args)?;
    let dump = str_arg(args, "dump")?.map(PathBuf::from);
    if let Some(d) = &dump {
        readable_path("dump", d, ctx)?;
    }
    let opts = Options { lang, dump, ..Options::default() };
    let paths: Vec<PathBuf> = match args.get("paths") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![PathBuf::from(s)],
        Some(Value::Array(a)) => a.iter().map(|v| v.as_str().map(PathBuf::from).ok_or("`paths` must be a list of strings".to_string())).collect::<Result<_, _>>()?,
        Some(_) => return Err("`paths` must be a list of strings".into()),
    };
    let text = str_arg(args, "text")?;
    let report = match (text, paths.is_empty()) {
        (Some(_), false) => return Err("give `text` or `paths`, not both".into()),
        (None, true) => return Err("give the log as `text`, or log files/directories as `paths`".into()),
        (Some(t), true) => diagnose_text(t, &opts),
        (None, false) => {
            if paths.iter().any(|p| p.as_os_str() == "-") {
                return Err("`paths`: `-` (standard input) is the protocol's channel here; pass the text as `text`".into());
            }
            for p in &paths {
                readable_path("paths", p, ctx)?;
            }
            super::diagnose::diagnose_paths_within(&paths, &opts, None, ctx.root.as_deref()).map_err(|e| e.to_string())?
        }
    };
    Ok((render::text(&report, lang, false), to_value(&report)?))
}

fn tool_explain(args: &Map<String, Value>) -> ToolResult {
    check_keys(args, &["id", "list", "lang"])?;
    let lang = lang_arg(args)?;
    let kb = KnowledgeBase::get();
    if args.get("list").and_then(Value::as_bool).unwrap_or(false) {
        let rows: Vec<Value> = kb.entries().iter().map(|e| e.list_row(lang)).collect();
        let text = kb.entries().iter().map(|e| format!("{}  {}  {}", e.id, e.code.as_deref().unwrap_or("-"), e.title.get(lang))).collect::<Vec<_>>().join("\n");
        return Ok((text, json!({ "entries": rows })));
    }
    let key = str_arg(args, "id")?.ok_or("give `id` (entry id, vendor code or code name), or `list: true`")?;
    let entry = kb.lookup(key).ok_or_else(|| format!("no knowledge-base entry for `{key}` (call explain with list: true)"))?;
    Ok((oomdoc_kb::to_markdown(entry, lang), to_value(entry)?))
}

fn tool_plan_pallas(args: &Map<String, Value>) -> ToolResult {
    use oomdoc_plan::pallas;
    check_keys(args, &["spec", "chip", "vmem_limit_bytes"])?;
    let text = str_arg(args, "spec")?.ok_or("`spec` is required (TOML or JSON text)")?;
    let mut spec = pallas::parse_spec(text).map_err(|e| e.to_string())?;
    if let Some(c) = str_arg(args, "chip")? {
        spec.chip = oomdoc_hw::tpu_chip(c).ok_or_else(|| format!("`chip`: unknown TPU `{c}`"))?;
    }
    if let Some(v) = u64_arg(args, "vmem_limit_bytes")? {
        spec.vmem_limit_bytes = Some(v);
    }
    let plan = pallas::plan(&spec).map_err(|e| e.to_string())?;
    Ok((oomdoc_plan::render::pallas(&plan), to_value(&plan)?))
}

fn tool_plan_triton(args: &Map<String, Value>) -> ToolResult {
    use oomdoc_plan::triton::{self, TritonConfig, TritonDType, TritonVersion};
    check_keys(args, &["arch", "block_m", "block_n", "block_k", "num_stages", "num_warps", "dtype", "configs", "triton_version"])?;
    let arch_name = str_arg(args, "arch")?.ok_or("`arch` is required (sm_80, sm_90, …)")?;
    let arch = oomdoc_hw::gpu_arch(arch_name).ok_or_else(|| format!("`arch`: unknown GPU arch `{arch_name}`"))?;
    let dtype_name = str_arg(args, "dtype")?.unwrap_or("fp16");
    let dtype = TritonDType::parse(dtype_name).ok_or_else(|| format!("`dtype`: `{dtype_name}` is not a Triton dot type (fp16, bf16, fp32, fp8e4nv, fp8e5)"))?;
    let version_name = str_arg(args, "triton_version")?.unwrap_or("3.9");
    let version = TritonVersion::parse(version_name).ok_or_else(|| format!("`triton_version`: `{version_name}` is not a Triton release ≥ 2.1"))?;
    if let Some(c) = args.get("configs").filter(|v| !v.is_null()) {
        let text = match c {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let configs = triton::parse_configs(&text).map_err(|e| e.to_string())?;
        let verdicts = triton::judge_configs(arch, version, dtype, &configs);
        let report = triton::ConfigsReport::new(arch, &verdicts);
        return Ok((oomdoc_plan::render::verdicts(&arch.arch, arch.shared_optin_per_block.value, &verdicts), to_value(&report)?));
    }
    let (Some(bm), Some(bn), Some(bk)) = (u64_arg(args, "block_m")?, u64_arg(args, "block_n")?, u64_arg(args, "block_k")?) else {
        return Err("give block_m, block_n and block_k, or `configs`".into());
    };
    let c = TritonConfig { block_m: bm, block_n: bn, block_k: bk, num_stages: u64_arg(args, "num_stages")?.unwrap_or(3), num_warps: u64_arg(args, "num_warps")?.unwrap_or(4) };
    let plan = triton::predict(arch, version, dtype, c).map_err(|e| e.to_string())?;
    let mut text = oomdoc_plan::render::triton(&plan);
    if !plan.fits {
        match triton::max_fitting_stages(arch, version, dtype, c) {
            Some((ns, bytes)) => text.push_str(&format!("  fits with num_stages={ns} ({bytes} bytes)\n")),
            None => text.push_str("  no num_stages fits: reduce BLOCK_M/BLOCK_N/BLOCK_K\n"),
        }
    }
    Ok((text, to_value(&plan)?))
}

fn tool_memory_snapshot(args: &Map<String, Value>, ctx: &Ctx) -> ToolResult {
    use oomdoc_memory::pytorch::{self, analysis::AnalysisOptions, render};
    check_keys(args, &["snapshot", "top"])?;
    let path = PathBuf::from(str_arg(args, "snapshot")?.ok_or("`snapshot` is required (a PyTorch memory snapshot pickle)")?);
    readable_path("snapshot", &path, ctx)?;
    if !pytorch::is_snapshot_file(&path) {
        return Err(format!("`snapshot`: {}: not a PyTorch memory snapshot (a pickle from torch.cuda.memory._dump_snapshot())", path.display()));
    }
    let top = u64_arg(args, "top")?.unwrap_or(10).clamp(1, 1000) as usize;
    let snap = pytorch::load_snapshot(&path, &Default::default()).map_err(|e| e.to_string())?;
    let report = pytorch::analyze(&path, &snap, &AnalysisOptions { top, ..Default::default() });
    let text = render::render_text(&report, &snap, &Default::default());
    Ok((text, render::to_json(&report, &snap)))
}

fn tool_memory(args: &Map<String, Value>, ctx: &Ctx) -> ToolResult {
    use oomdoc_memory::render::{json as mjson, text as mtext};
    use oomdoc_memory::{load_dump_paths, MemoryReport, SourcePreference};
    check_keys(args, &["dump", "module", "top"])?;
    let dump = PathBuf::from(str_arg(args, "dump")?.ok_or("`dump` is required (an XLA dump directory)")?);
    readable_path("dump", &dump, ctx)?;
    let top = u64_arg(args, "top")?.unwrap_or(10).min(1000) as usize;
    let d = load_dump_paths(std::slice::from_ref(&dump)).map_err(|e| e.to_string())?;
    // As `oomdoc memory DIR [--module NAME] --format json`.
    let report = match str_arg(args, "module")? {
        Some(hint) => d.select(hint).map_err(|e| e.to_string())?.analyze(SourcePreference::Auto).map_err(|e| e.to_string())?,
        None => d
            .analyze_all(SourcePreference::Auto)
            .into_largest()
            .map_err(|e| e.map(|e| e.to_string()).unwrap_or_else(|| "no module could be analysed".into()))?,
    };
    let text = mtext::render_module(&report, &mtext::TextOptions { top, ..Default::default() });
    let full = MemoryReport { modules: vec![report] };
    let v: Value = serde_json::from_str(&mjson::render(&full)).map_err(|e| e.to_string())?;
    Ok((text, v))
}
