//! The server as a separate process: an acknowledged feedback write survives
//! `kill -9`, and SIGTERM shuts down gracefully.
//!
//! The child is this test binary re-run on `child_server`, which calls
//! `oomdoc_server::serve`, the function behind `oomdoc serve`.

mod common;

use common::*;
use serde_json::json;
use std::{
    io::{BufRead, BufReader},
    net::SocketAddr,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

const CHILD_DB: &str = "OOMDOC_TEST_CHILD_DB";

/// Runs only as the child process (the environment variable is set by `spawn_server`).
#[test]
fn child_server() {
    let Ok(db) = std::env::var(CHILD_DB) else { return };
    let config = oomdoc_server::Config {
        addr: "127.0.0.1:0".parse().unwrap(),
        db_path: db.into(),
        ..Default::default()
    };
    if let Err(e) = oomdoc_server::serve(config) {
        eprintln!("child: {e}");
        std::process::exit(1);
    }
}

fn spawn_server(db: &Path) -> (Child, SocketAddr) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child_server", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DB, db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `serve` prints "listening on http://ADDR" once it accepts connections.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("child exited before listening");
        }
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.split_whitespace().next().unwrap().parse().unwrap();
        }
    };
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    (child, addr)
}

#[test]
fn acknowledged_feedback_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("oomdoc.sqlite3");
    let e = entry_with_fix();
    for round in 0..3 {
        let (mut child, addr) = spawn_server(&db);
        let mut acknowledged = Vec::new();
        for i in 0..10 {
            let body = json!({ "entry": e.id, "fix": e.fixes[0].id, "outcome": "worked", "note": format!("round {round} report {i}") });
            let r = request(addr, "POST", "/api/v1/feedback", &[("Content-Type", "application/json")], body.to_string().as_bytes());
            assert_eq!(r.status, 201, "{}", r.text());
            acknowledged.push(r.json()["id"].as_i64().unwrap());
        }
        // SIGKILL right after the last acknowledgement: no chance to flush or checkpoint.
        child.kill().unwrap();
        child.wait().unwrap();

        let conn = rusqlite::Connection::open(&db).unwrap();
        for id in &acknowledged {
            let note: String = conn.query_row("SELECT note FROM feedback WHERE id = ?1", [id], |r| r.get(0)).unwrap();
            assert!(note.starts_with(&format!("round {round}")), "{note}");
        }
    }
    // And the restarted server counts all of them.
    let (mut child, addr) = spawn_server(&db);
    let o = request(addr, "GET", &format!("/api/v1/kb/{}/outcomes", e.id), &[], b"").json();
    assert_eq!(o["fixes"][0]["reports"], 30);
    child.kill().unwrap();
    child.wait().unwrap();
}

/// One feedback POST that never panics: `Some(status)` when an answer came back.
fn try_post_feedback(addr: SocketAddr, body: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let req = format!(
        "POST /api/v1/feedback HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    String::from_utf8_lossy(&buf).strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// Issue 12 (small scale of `oomdoc-feedback-crash`): 50 writers in parallel, SIGKILL while
/// they write; every report answered 201 is in the file.
#[test]
fn fifty_parallel_writers_lose_no_acknowledged_report_to_kill_9() {
    use std::sync::{atomic::{AtomicBool, Ordering}, Arc};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("oomdoc.sqlite3");
    let e = entry_with_fix();
    let (mut child, addr) = spawn_server(&db);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..50)
        .map(|w| {
            let (stop, entry, fix) = (stop.clone(), e.id.clone(), e.fixes[0].id.clone());
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                for n in 0.. {
                    let note = format!("w{w} n{n}");
                    let body = json!({ "entry": entry, "fix": fix, "outcome": "worked", "note": note }).to_string();
                    match try_post_feedback(addr, &body) {
                        Some(201) => acked.push(note),
                        Some(other) => panic!("status {other}"),
                        None => break, // the server is gone
                    }
                    if stop.load(Ordering::Relaxed) && n > 1000 {
                        break;
                    }
                }
                acked
            })
        })
        .collect();
    // Kill once the writers are well under way.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM feedback", [], |r| r.get(0)).unwrap_or(0);
        if n >= 100 || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<String> = writers.into_iter().flat_map(|h| h.join().unwrap()).collect();
    assert!(acked.len() >= 50, "only {} reports acknowledged", acked.len());
    let conn = rusqlite::Connection::open(&db).unwrap();
    let integrity: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
    let stored: std::collections::HashSet<String> = conn
        .prepare("SELECT note FROM feedback")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let lost: Vec<&String> = acked.iter().filter(|n| !stored.contains(*n)).collect();
    assert!(lost.is_empty(), "{} of {} acknowledged reports lost: {lost:?}", lost.len(), acked.len());
}

#[test]
fn sigterm_stops_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = spawn_server(&dir.path().join("oomdoc.sqlite3"));
    assert_eq!(request(addr, "GET", "/healthz", &[], b"").status, 200);
    // SAFETY: kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "server still running 10 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    // The listener is gone.
    assert!(std::net::TcpStream::connect(addr).is_err());
}
