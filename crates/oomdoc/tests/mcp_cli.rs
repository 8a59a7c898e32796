//! `oomdoc mcp`: a Model Context Protocol client session over stdio (newline-delimited
//! JSON-RPC 2.0): initialize, initialized, tools/list, tools/call for every tool, errors.

mod common;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start() -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Session { child, stdin, stdout, next_id: 1 }
    }

    fn send_raw(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn recv(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.stdout.read_line(&mut line).unwrap() > 0, "server closed stdout");
        assert!(line.ends_with('\n'));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send_raw(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string());
        let r = self.recv();
        assert_eq!(r["jsonrpc"], "2.0");
        assert_eq!(r["id"], id);
        r
    }

    fn notify(&mut self, method: &str) {
        self.send_raw(&json!({ "jsonrpc": "2.0", "method": method }).to_string());
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({ "name": tool, "arguments": args }));
        assert!(r.get("error").is_none(), "{r}");
        r["result"].clone()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialized() -> Session {
    let mut s = Session::start();
    let r = s.request(
        "initialize",
        json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "oomdoc-test", "version": "0" } }),
    );
    let res = &r["result"];
    assert_eq!(res["protocolVersion"], "2025-06-18");
    assert_eq!(res["serverInfo"]["name"], "oomdoc");
    assert!(res["capabilities"]["tools"].is_object());
    s.notify("notifications/initialized");
    s
}

/// A real message from the dev corpus (easydiffusion/easydiffusion#104).
fn cuda_message() -> String {
    common::dev_message("easydiff-104-max-split-hint")
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap().to_string()
}

#[test]
fn session_lists_and_calls_every_tool() {
    let mut s = initialized();
    assert_eq!(s.request("ping", json!({}))["result"], json!({}));

    let tools = s.request("tools/list", json!({}))["result"]["tools"].clone();
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["diagnose", "explain", "plan_pallas", "plan_triton", "memory", "memory_snapshot"]);
    for t in tools.as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert!(!t["description"].as_str().unwrap().is_empty());
    }

    // diagnose: text
    let r = s.call("diagnose", json!({ "text": cuda_message() }));
    assert_eq!(r["isError"], false);
    let f = &r["structuredContent"]["findings"][0];
    assert_eq!(f["id"], "pytorch.cuda-oom");
    assert_eq!(f["sizes"]["requested"], 64u64 << 20);
    assert!(text_of(&r).contains("tried to allocate 64.00 MiB"), "{}", text_of(&r));

    // diagnose: paths (a directory of two logs, merged)
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oomdoc-mcp");
    std::fs::create_dir_all(&dir).unwrap();
    for h in ["host0.log", "host1.log"] {
        std::fs::write(dir.join(h), format!("step 1\n{}\n", cuda_message())).unwrap();
    }
    let r = s.call("diagnose", json!({ "paths": [dir.to_str().unwrap()], "lang": "zh" }));
    let f = &r["structuredContent"]["findings"][0];
    assert_eq!(f["occurrences"], 2);
    assert_eq!(f["files"].as_array().unwrap().len(), 2);

    // explain
    let r = s.call("explain", json!({ "id": "E1001" }));
    assert_eq!(r["structuredContent"]["id"], "tpu.scoped-vmem");
    let r = s.call("explain", json!({ "list": true }));
    assert!(r["structuredContent"]["entries"].as_array().unwrap().len() > 20);

    // plan_triton: one config, as `oomdoc plan triton --arch sm_86 --block-m 128 ...`
    let r = s.call("plan_triton", json!({ "arch": "sm_86", "block_m": 128, "block_n": 128, "block_k": 64, "num_stages": 3, "num_warps": 4 }));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"]["arch"], "sm_86");
    let cli = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
        .args(["plan", "triton", "--arch", "sm_86", "--block-m", "128", "--block-n", "128", "--block-k", "64", "--format", "json"])
        .output()
        .unwrap();
    let cli: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(r["structuredContent"], cli, "the MCP result is the CLI's JSON contract");

    // plan_pallas
    let spec = "chip = \"v5e\"\ngrid = [64, 64]\n[[inputs]]\nname = \"a\"\nshape = [8192, 8192]\ndtype = \"float32\"\nblock = [128, 8192]\n[[inputs]]\nname = \"b\"\nshape = [8192, 8192]\ndtype = \"float32\"\nblock = [8192, 128]\n[[outputs]]\nname = \"c\"\nshape = [8192, 8192]\ndtype = \"float32\"\nblock = [128, 128]\n";
    let r = s.call("plan_pallas", json!({ "spec": spec }));
    assert_eq!(r["structuredContent"]["total_bytes"], 16_908_288u64, "{r}");
    assert_eq!(r["structuredContent"]["fits"], false);
    let r = s.call("plan_pallas", json!({ "spec": spec, "chip": "trillium" }));
    assert_eq!(r["structuredContent"]["fits"], true);

    // memory, on the committed dump fixture
    let dump: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../memory/tests/fixtures/mlp_train_step");
    let r = s.call("memory", json!({ "dump": dump.to_str().unwrap() }));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structuredContent"]["modules"][0]["name"], "jit_mlp_train_step");
    assert!(text_of(&r).contains("jit_mlp_train_step"));

    // memory_snapshot, on the real OOM snapshot in the workspace's shared fixtures
    let snap: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/pytorch-snapshots/g4-compile-context-expandable-3gpu-OOM.pickle");
    let r = s.call("memory_snapshot", json!({ "snapshot": snap.to_str().unwrap(), "top": 3 }));
    assert_eq!(r["isError"], false, "{r}");
    let d1 = &r["structuredContent"]["devices"][1];
    assert_eq!(d1["oom"]["requested_bytes"], 5_308_694_528u64);
    assert_eq!(d1["top_call_sites"].as_array().unwrap().len(), 3);
    assert!(text_of(&r).contains("OUT OF MEMORY at trace entry 421"));
}

#[test]
fn errors_follow_the_protocol() {
    let mut s = initialized();
    // A tool that does not exist: a protocol error.
    let r = s.request("tools/call", json!({ "name": "format_disk", "arguments": {} }));
    assert_eq!(r["error"]["code"], -32602);
    // Bad arguments: a tool error the model can read and correct.
    let r = s.call("explain", json!({ "id": "no.such.entry" }));
    assert_eq!(r["isError"], true);
    assert!(text_of(&r).contains("no knowledge-base entry"));
    let r = s.call("diagnose", json!({}));
    assert_eq!(r["isError"], true);
    let r = s.call("diagnose", json!({ "paths": ["/nonexistent/oomdoc.log"] }));
    assert_eq!(r["isError"], true);
    let r = s.call("plan_triton", json!({ "arch": "sm_86", "block_m": -1 }));
    assert_eq!(r["isError"], true);
    let r = s.call("memory", json!({ "dump": "/nonexistent/dump", "extra": 1 }));
    assert_eq!(r["isError"], true);
    let r = s.call("memory_snapshot", json!({ "snapshot": "Cargo.toml" }));
    assert_eq!(r["isError"], true);
    assert!(text_of(&r).contains("not a PyTorch memory snapshot"));
    // Unknown method, then a parse error: the session goes on.
    assert_eq!(s.request("resources/list", json!({}))["error"]["code"], -32601);
    s.send_raw("{not json");
    assert_eq!(s.recv()["error"]["code"], -32700);
    assert_eq!(s.request("ping", json!({}))["result"], json!({}));
}

/// Reliability report M5: messages that are not JSON-RPC 2.0 requests were served as if
/// they were. Each gets -32600 (JSON-RPC 2.0 §5.1), with its id only when that id is valid;
/// a tool call among them runs nothing.
#[test]
fn requests_that_are_not_json_rpc_2_are_invalid() {
    let mut s = initialized();
    let cases = [
        (r#"{"id": 7, "method": "ping"}"#, json!(7)),
        (r#"{"jsonrpc": "1.0", "id": 8, "method": "ping"}"#, json!(8)),
        (r#"{"jsonrpc": 2.0, "id": "nine", "method": "ping"}"#, json!("nine")),
        (r#"{"jsonrpc": "2.0", "id": {}, "method": "ping"}"#, Value::Null),
        (r#"{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}"#, Value::Null),
        (r#"{"jsonrpc": "2.0", "id": true, "method": "ping"}"#, Value::Null),
        (r#"{"jsonrpc": "2.0", "id": [1], "method": "ping"}"#, Value::Null),
        (r#"{"jsonrpc": "2.0", "id": null, "method": "ping"}"#, Value::Null),
        // Notification-shaped, but not JSON-RPC 2.0: still answered (id null).
        (r#"{"method": "notifications/initialized"}"#, Value::Null),
        (r#"{"id": 10, "method": "tools/call", "params": {"name": "explain", "arguments": {"id": "E1001"}}}"#, json!(10)),
        (r#"{"jsonrpc": "2.0", "id": 1.5, "method": "tools/call", "params": {"name": "explain", "arguments": {"id": "E1001"}}}"#, Value::Null),
    ];
    for (line, id) in cases {
        s.send_raw(line);
        let r = s.recv();
        assert_eq!(r["error"]["code"], -32600, "{line} → {r}");
        assert_eq!(r["id"], id, "{line} → {r}");
        assert_eq!(r["jsonrpc"], "2.0");
        assert!(r.get("result").is_none(), "{line} → {r}");
    }
    // In a batch: one error each, the valid request answered beside them.
    s.send_raw(r#"[{"id": 20, "method": "ping"}, {"jsonrpc": "2.0", "id": 21, "method": "ping"}]"#);
    let r = s.recv();
    assert_eq!(r[0]["error"]["code"], -32600);
    assert_eq!(r[1]["result"], json!({}));
    // Valid ids of both kinds still work, and the session goes on.
    s.send_raw(r#"{"jsonrpc": "2.0", "id": "a-string", "method": "ping"}"#);
    assert_eq!(s.recv()["id"], "a-string");
    assert_eq!(s.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn closing_stdin_ends_the_server() {
    let mut s = initialized();
    let Session { child, stdin, .. } = &mut s;
    // Replace stdin with a closed pipe: the server sees end of file and exits 0.
    let _ = stdin.flush();
    let mut child_stdin = std::mem::replace(stdin, Command::new("true").stdin(Stdio::piped()).spawn().unwrap().stdin.take().unwrap());
    let _ = child_stdin.flush();
    drop(child_stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
}

/// The same session with the official MCP Python SDK's client, where it is installed
/// (`pip install mcp`; `OOMDOC_MCP_PYTHON` names the interpreter, default `python3`).
#[test]
fn official_python_sdk_client() {
    let python = std::env::var("OOMDOC_MCP_PYTHON").unwrap_or_else(|_| "python3".into());
    let has_sdk = Command::new(&python).args(["-c", "import mcp.client.stdio"]).stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false);
    if !has_sdk {
        oomdoc_testkit::require_in_ci("official_python_sdk_client", &format!("the MCP Python SDK is not installed for {python} (pip install mcp; scripts/test.sh sets OOMDOC_MCP_PYTHON)"));
        return;
    }
    let script = r#"
import asyncio, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["mcp"])
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            names = [t.name for t in (await s.list_tools()).tools]
            assert names == ["diagnose", "explain", "plan_pallas", "plan_triton", "memory", "memory_snapshot"], names
            res = await s.call_tool("diagnose", {"text": sys.argv[2]})
            assert not res.isError if hasattr(res, "isError") else not res.is_error
            sc = res.structuredContent if hasattr(res, "structuredContent") else res.structured_content
            print(sc["findings"][0]["id"])

asyncio.run(main())
"#;
    let out = Command::new(&python).arg("-c").arg(script).arg(env!("CARGO_BIN_EXE_oomdoc")).arg(cuda_message()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "pytorch.cuda-oom");
}
