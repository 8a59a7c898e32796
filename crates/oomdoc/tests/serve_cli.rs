//! `oomdoc serve` flags reach the server: `--public-origin`, `--max-stored-log-mib`,
//! `--log-retention-days` (issue 12). The behaviour itself is tested in crates/server.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    process::{Command, Stdio},
};

fn post(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, text)
}

#[test]
fn serve_flags_for_origins_and_the_log_store() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oomdoc-serve-cli");
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
        .args(["serve", "--addr", "127.0.0.1:0", "--db"])
        .arg(dir.join("oomdoc.sqlite3"))
        .args([
            "--public-origin",
            "https://oomdoc.example.internal/",
            "--max-stored-log-mib",
            "0",
            "--log-retention-days",
            "7",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr: SocketAddr = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "oomdoc serve exited before listening"
        );
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.split_whitespace().next().unwrap().parse().unwrap();
        }
    };
    std::thread::spawn(move || for _ in stderr.lines() {});

    let text = [("Content-Type", "text/plain")];
    // The public origin (given with a trailing slash) is accepted, the server's own address is not.
    let ok = [text[0], ("Origin", "https://oomdoc.example.internal")];
    assert_eq!(post(addr, "/api/v1/diagnose", &ok, b"a log").0, 200);
    let (status, body) = post(
        addr,
        "/api/v1/diagnose",
        &[text[0], ("Origin", &format!("http://{addr}"))],
        b"a log",
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("cross-site request refused"), "{body}");
    // --max-stored-log-mib 0 keeps no log.
    let (status, body) = post(addr, "/api/v1/diagnose?store_log=1", &text, b"a log");
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("store_log"), "{body}");

    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);

    // A malformed origin is a usage error (exit 2), before anything starts.
    let out = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
        .args(["serve", "--public-origin", "oomdoc.example.internal"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not an origin"));
}
