//! `oomdoc serve` flags reach the server: `--public-origin`, `--max-stored-log-mib`,
//! `--log-retention-days` (issue 12). The behaviour itself is tested in crates/server.

mod team_server;

use team_server::{get_json, spawn_serve};
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

/// Issue 24 end to end: a token from `oomdoc serve token`, a failing job under
/// `oomdoc run --post` with Slurm's variables, `oomdoc diagnose --post` with labels, both
/// on the team server's fleet view; a server that is down costs the job nothing.
#[test]
fn failing_jobs_post_their_reports_to_the_team_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("team.sqlite3");
    let oomdoc = env!("CARGO_BIN_EXE_oomdoc");
    let out = Command::new(oomdoc).args(["serve", "token", "create", "ci"]).arg("--db").arg(&db).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(token.starts_with("oomdoc_"), "{token}");
    let dup = Command::new(oomdoc).args(["serve", "token", "create", "ci"]).arg("--db").arg(&db).output().unwrap();
    assert_eq!(dup.status.code(), Some(2));
    let (mut server, addr) = spawn_serve(&db, &[]);
    let url = format!("http://{addr}");
    let log = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/train.log");

    let out = Command::new(oomdoc)
        .args(["run", "--no-pty", "--post", &url, "--label", "version.torch=2.5.1", "--", "sh", "-c"])
        .arg(format!("cat {log} >&2; exit 1"))
        .env("OOMDOC_TOKEN", &token)
        .env("SLURM_JOB_ID", "4242")
        .env("SLURM_PROCID", "3")
        .env("SLURMD_NODENAME", "gpu-node-7")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "the job's status: {stderr}");
    assert!(stderr.contains("report posted to"), "{stderr}");

    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let out = Command::new(oomdoc)
        .args(["diagnose", log, "--format", "json", "--post", &url, "--label", "job_id=epilog-7", "--label", "exit_status=1", "--token-file"])
        .arg(&token_file)
        .env_remove("SLURM_JOB_ID")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("report posted to"));

    let fleet = get_json(addr, "/api/v1/fleet");
    assert_eq!(fleet["reports"], 2, "{fleet}");
    assert_eq!(fleet["memory_failures"], 2);
    let jobs: Vec<&str> = fleet["by_job"].as_array().unwrap().iter().map(|g| g["key"].as_str().unwrap()).collect();
    assert!(jobs.contains(&"4242") && jobs.contains(&"epilog-7"), "{jobs:?}");
    let rows = get_json(addr, "/api/v1/reports?job=4242");
    let labels = &rows["reports"][0]["labels"];
    assert_eq!((labels["rank"].as_str(), labels["host"].as_str(), labels["exit_status"].as_i64()), (Some("3"), Some("gpu-node-7"), Some(1)));
    assert_eq!(labels["versions"]["torch"], "2.5.1");

    // A revoked token: the post is refused (one line), the job's status unchanged.
    let out = Command::new(oomdoc).args(["serve", "token", "revoke", "ci"]).arg("--db").arg(&db).output().unwrap();
    assert!(out.status.success());
    let out = Command::new(oomdoc)
        .args(["run", "--no-pty", "--post", &url, "--", "sh", "-c", "exit 4"])
        .env("OOMDOC_TOKEN", &token)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("answered 401"), "{}", String::from_utf8_lossy(&out.stderr));
    let list = Command::new(oomdoc).args(["serve", "token", "list"]).arg("--db").arg(&db).output().unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).contains("ci\tcreated") && String::from_utf8_lossy(&list.stdout).contains("revoked"));
    let _ = server.kill();
    let _ = server.wait();

    // The server is gone: retries within --post-timeout, then the job's own status (the message
    // says it gave up by itself).
    let out = Command::new(oomdoc)
        .args(["run", "--no-pty", "--post", &url, "--post-timeout", "3", "--", "sh", "-c", "exit 3"])
        .env("OOMDOC_TOKEN", &token)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("report not posted: gave up after"), "{stderr}");
}

#[test]
fn database_urls_this_build_cannot_serve_are_usage_errors() {
    for db in ["mysql://h/db", "postgres:/db"] {
        let out = Command::new(env!("CARGO_BIN_EXE_oomdoc")).args(["serve", "--db", db]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{db}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot store data in"), "{db}");
    }
    assert!(!std::path::Path::new("postgres:").exists(), "no folder named after the scheme");
}
