//! Test helpers: start the real server on a loopback port, and a minimal
//! HTTP/1.1 client on a raw socket (so tests control every byte they send).
#![allow(dead_code)]

use oomdoc_server::{BackgroundServer, Config, Engines, Limits};
use serde_json::Value;
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

pub struct TestServer {
    pub server: BackgroundServer,
    pub dir: tempfile::TempDir,
}

impl TestServer {
    pub fn start(engines: Engines) -> TestServer {
        Self::start_with(engines, |_| {})
    }

    pub fn start_with(engines: Engines, tweak: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config {
            addr: "127.0.0.1:0".parse().unwrap(),
            db: oomdoc_server::store::Location::Sqlite(dir.path().join("oomdoc.sqlite3")),
            // Tests post many reports from 127.0.0.1; `feedback_rules` turns the rules on.
            feedback: oomdoc_server::store::FeedbackPolicy::unlimited(),
            ..Config::default()
        };
        tweak(&mut config);
        let server = BackgroundServer::start(config, engines).expect("server starts");
        TestServer { server, dir }
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    pub fn get(&self, path: &str) -> Resp {
        request(self.addr(), "GET", path, &[], b"")
    }

    pub fn post(&self, path: &str, content_type: &str, body: &[u8]) -> Resp {
        request(self.addr(), "POST", path, &[("Content-Type", content_type)], body)
    }

    /// The anti-forgery token a browser gets with a page (the `oomdoc_csrf` cookie).
    pub fn form_token(&self) -> String {
        let r = self.get("/");
        let cookie = r.header("set-cookie").expect("the form page sets the oomdoc_csrf cookie");
        let token = cookie.strip_prefix("oomdoc_csrf=").unwrap().split(';').next().unwrap().to_string();
        assert!(r.text().contains(&format!("name=\"csrf\" value=\"{token}\"")), "the form carries the token");
        token
    }

    /// Post an HTML form as a browser would: with the cookie and the hidden `csrf` field.
    pub fn post_form(&self, path: &str, content_type: &str, body: &[u8]) -> Resp {
        let token = self.form_token();
        let body = with_form_field(content_type, body, "csrf", &token);
        let cookie = format!("oomdoc_csrf={token}");
        request(self.addr(), "POST", path, &[("Content-Type", content_type), ("Cookie", &cookie)], &body)
    }

    pub fn post_json(&self, path: &str, body: &Value) -> Resp {
        self.post(path, "application/json", body.to_string().as_bytes())
    }
}

/// `body` with one more text field, for a urlencoded or a multipart body.
pub fn with_form_field(content_type: &str, body: &[u8], name: &str, value: &str) -> Vec<u8> {
    if let Some(boundary) = content_type.split("boundary=").nth(1) {
        let mut out = format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").into_bytes();
        out.extend_from_slice(body);
        out
    } else {
        let mut out = body.to_vec();
        if !out.is_empty() {
            out.push(b'&');
        }
        out.extend_from_slice(format!("{name}={value}").as_bytes());
        out
    }
}

pub fn small_limits() -> Limits {
    Limits { log_bytes: 64 * 1024, dump_bytes: 256 * 1024, form_bytes: 4 * 1024 }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    // The server may answer (413) and close before reading it all.
    let _ = s.write_all(body);
    read_response(&mut s)
}

/// Reads one response: up to Content-Length, the last chunk, or EOF (some servers,
/// chromedriver among them, keep the connection open despite `Connection: close`).
pub fn read_response(s: &mut TcpStream) -> Resp {
    let mut raw = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        if response_complete(&raw) {
            break;
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    parse_response(&raw)
}

fn response_complete(raw: &[u8]) -> bool {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let body = &raw[end + 4..];
    if let Some(len) = head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse::<usize>().ok()) {
        return body.len() >= len;
    }
    if head.contains("transfer-encoding: chunked") {
        return body.ends_with(b"0\r\n\r\n");
    }
    false
}

pub fn parse_response(raw: &[u8]) -> Resp {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete response head");
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Resp { status, headers, body }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else { break };
        let size_text = String::from_utf8_lossy(&b[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap_or(0);
        if size == 0 || b.len() < eol + 2 + size {
            break;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + size]);
        b = &b[eol + 2 + size + 2..];
    }
    out
}

/// A multipart/form-data body: (field name, optional file name, content).
pub fn multipart(parts: &[(&str, Option<&str>, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "----oomdoc-test-boundary-7d1f";
    let mut body = Vec::new();
    for (name, file, content) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match file {
            Some(f) => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\nContent-Type: application/octet-stream\r\n\r\n")
                    .as_bytes(),
            ),
            None => body.extend_from_slice(format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes()),
        }
        body.extend_from_slice(content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// An entry with at least one fix, for feedback tests.
pub fn entry_with_fix() -> &'static oomdoc_kb::Entry {
    oomdoc_kb::KnowledgeBase::get()
        .entries()
        .iter()
        .find(|e| !e.fixes.is_empty())
        .expect("the knowledge base has an entry with a fix")
}

/// A throwaway PostgreSQL cluster for `test`, or `None` after a visible skip; in CI
/// (`CI=true`) a cluster that cannot start fails the test.
pub fn postgres_for(test: &str) -> Option<oomdoc_server::store::postgres::cluster::TempCluster> {
    match oomdoc_server::store::postgres::cluster::TempCluster::start() {
        Ok(c) => Some(c),
        Err(e) => {
            oomdoc_testkit::require_in_ci(test, &format!("PostgreSQL could not start ({e}); run crates/server/ci-postgres.sh"));
            None
        }
    }
}
