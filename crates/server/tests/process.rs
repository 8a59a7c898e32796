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

/// The tests here kill servers whose writers keep dialling their port; run one at a time, so
/// a port freed by one test and reused by another's new server never receives stray posts.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs only as the child process (the environment variable is set by `spawn_server`).
#[test]
fn child_server() {
    let Ok(db) = std::env::var(CHILD_DB) else { return };
    let quota = std::env::var("OOMDOC_TEST_CHILD_QUOTA").ok().and_then(|q| q.parse().ok());
    let config = oomdoc_server::Config {
        log_store: oomdoc_server::retention::LogStorePolicy { max_bytes: quota, ..Default::default() },
        addr: "127.0.0.1:0".parse().unwrap(),
        db: oomdoc_server::store::Location::parse(&db).unwrap(),
        feedback: oomdoc_server::store::FeedbackPolicy::unlimited(),
        ..Default::default()
    };
    if let Err(e) = oomdoc_server::serve(config) {
        eprintln!("child: {e}");
        std::process::exit(1);
    }
}

fn spawn_server(db: &Path) -> (Child, SocketAddr) {
    spawn_server_at(db.to_str().unwrap(), None)
}

/// A server on `db` (a path or a postgres:// URL), with an optional stored-log quota.
fn spawn_server_at(db: &str, quota: Option<u64>) -> (Child, SocketAddr) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child_server", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DB, db)
        .env("OOMDOC_TEST_CHILD_QUOTA", quota.map(|q| q.to_string()).unwrap_or_default())
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
    let _serial = one_at_a_time();
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
    let _serial = one_at_a_time();
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
    let _serial = one_at_a_time();
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

/// One POST that never panics: `Some((status, body))` when an answer came back.
fn try_post(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let mut req = format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()?;
    Some((status, text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()))
}

/// Issue 24: two replicas on one PostgreSQL, one killed with SIGKILL while 12 writers post
/// job reports, feedback and stored logs to both. Writers whose replica died retry the
/// same record (same `report_id`) through the other. Every acknowledged record is stored
/// exactly once, the fix tally equals the feedback rows, and the stored-log running total
/// equals the rows, within the quota.
#[test]
fn replicas_on_postgres_lose_no_acknowledged_write_to_kill_9() {
    let _serial = one_at_a_time();
    use oomdoc_server::store;
    use std::sync::{atomic::{AtomicBool, Ordering}, Arc};
    let Some(pg) = postgres_for("replicas_on_postgres_lose_no_acknowledged_write_to_kill_9") else { return };
    let url = pg.create_database("replicas").unwrap();
    let token = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let s = store::open(&store::Location::Postgres(url.clone())).await.unwrap();
        let secret = store::new_token_secret().unwrap();
        s.create_token("replicas", &store::token_hash(&secret)).await.unwrap();
        secret
    });
    let quota: u64 = 64 * 1024;
    let (mut a, addr_a) = spawn_server_at(&url, Some(quota));
    let (mut b, addr_b) = spawn_server_at(&url, Some(quota));
    let e = entry_with_fix();
    let report = serde_json::to_string(&json!({"findings": [{"id": e.id, "kind": "oom", "first_fatal": true}], "exit_status": 1})).unwrap();
    let a_dead = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..12)
        .map(|w| {
            let (a_dead, stop, token, report, entry, fix) =
                (a_dead.clone(), stop.clone(), token.clone(), report.clone(), e.id.clone(), e.fixes[0].id.clone());
            std::thread::spawn(move || {
                let auth = format!("Bearer {token}");
                let mut acked = (Vec::new(), Vec::new(), 0u32);
                for n in 0..400 {
                    let id = format!("w{w}-n{n}");
                    let (path, body, headers): (&str, String, Vec<(&str, &str)>) = match n % 3 {
                        0 => ("/api/v1/reports", format!(r#"{{"report_id": "{id}", "labels": {{"job_id": "{id}"}}, "report": {report}}}"#),
                              vec![("Authorization", auth.as_str()), ("Content-Type", "application/json")]),
                        1 => ("/api/v1/feedback", json!({"entry": entry, "fix": fix, "outcome": "worked", "report_id": id}).to_string(),
                              vec![("Content-Type", "application/json")]),
                        _ => ("/api/v1/diagnose?store_log=1", format!("{id} {}", "x".repeat(1000 + 97 * (n % 11))),
                              vec![("Content-Type", "text/plain")]),
                    };
                    // Odd writers start on A; once A is gone everyone uses B, retrying the
                    // record that got no answer.
                    let answer = loop {
                        let addr = if w % 2 == 1 && !a_dead.load(Ordering::Relaxed) { addr_a } else { addr_b };
                        match try_post(addr, path, &headers, &body) {
                            Some(answer) => break answer,
                            None if addr == addr_a => std::thread::sleep(Duration::from_millis(5)),
                            None => panic!("replica B stopped answering"),
                        }
                    };
                    match (n % 3, answer.0) {
                        (0, 201 | 200) => acked.0.push(id),
                        (1, 201 | 200) => acked.1.push(id),
                        (2, 200) => acked.2 += 1,
                        (_, status) => panic!("{path}: {status} {}", answer.1),
                    }
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
                acked
            })
        })
        .collect();
    // Kill A once the writers are well under way.
    let deadline = Instant::now() + Duration::from_secs(60);
    while pg.psql("replicas", "SELECT COUNT(*) FROM reports").unwrap().parse::<u64>().unwrap() < 60 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Writers stop dialling A first (its port may be reused once it is gone); the requests
    // in flight on A are cut by the kill.
    a_dead.store(true, Ordering::Relaxed);
    a.kill().unwrap();
    a.wait().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let (mut reports, mut feedback, mut logs) = (Vec::new(), Vec::new(), 0);
    for h in writers {
        let (r, f, l) = h.join().unwrap();
        reports.extend(r);
        feedback.extend(f);
        logs += l;
    }
    assert!(reports.len() >= 60 && feedback.len() >= 60 && logs > 0, "{} {} {logs}", reports.len(), feedback.len());
    let ids = |table: &str| -> std::collections::HashMap<String, u32> {
        let mut m = std::collections::HashMap::new();
        for id in pg.psql("replicas", &format!("SELECT report_id FROM {table} WHERE report_id IS NOT NULL")).unwrap().lines() {
            *m.entry(id.to_string()).or_default() += 1;
        }
        m
    };
    let (stored_reports, stored_feedback) = (ids("reports"), ids("feedback"));
    for (acked, stored, what) in [(&reports, &stored_reports, "report"), (&feedback, &stored_feedback, "feedback")] {
        let lost: Vec<_> = acked.iter().filter(|id| stored.get(*id) != Some(&1)).collect();
        assert!(lost.is_empty(), "{} of {} acknowledged {what}s not stored exactly once: {lost:?}", lost.len(), acked.len());
    }
    // Counts agree across replicas: B's tally is the rows, the log total is the rows.
    let o = request(addr_b, "GET", &format!("/api/v1/kb/{}/outcomes", e.id), &[], b"").json();
    assert_eq!(o["fixes"][0]["reports"].as_u64().unwrap() as usize, stored_feedback.len());
    let totals = pg.psql("replicas", "SELECT logs || ' ' || bytes FROM submitted_logs_total").unwrap();
    let rows = pg.psql("replicas", "SELECT COUNT(*) || ' ' || COALESCE(SUM(bytes), 0) FROM submitted_logs").unwrap();
    assert_eq!(totals, rows);
    let (n, bytes): (u64, u64) = { let mut it = rows.split(' ').map(|x| x.parse().unwrap()); (it.next().unwrap(), it.next().unwrap()) };
    assert!(bytes + n * oomdoc_server::retention::ROW_OVERHEAD <= quota, "{n} logs, {bytes} bytes over {quota}");
    b.kill().unwrap();
    b.wait().unwrap();
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field).and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok()))
        .unwrap_or(0)
}

/// Reliability report S3: after 200 uploads of 15.9 MiB the server kept 1.05–1.15 GB
/// resident while idle, 20 minutes later. Here, at small scale: rounds of parallel 15 MiB
/// logs, then idle; what stays resident is counted from /proc, not timed. (The poll is a
/// hang guard: the memory is returned when the last request ends.)
#[cfg(target_os = "linux")]
#[test]
fn the_server_returns_upload_memory_when_idle() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = spawn_server(&dir.path().join("oomdoc.sqlite3"));
    let pid = child.id();
    assert_eq!(request(addr, "GET", "/healthz", &[], b"").status, 200);
    let before = rss_kib(pid, "VmRSS:");
    // Lines with no memory words: the bodies, not the diagnosis, are what the server holds.
    let line = "step 100 | loss 2.3141 | lr 3.0e-04 | tokens/s 51234 | grad-norm 0.91\n";
    let log: std::sync::Arc<String> = std::sync::Arc::new(line.repeat((15 << 20) / line.len()));
    for _round in 0..3 {
        let clients: Vec<_> = (0..12)
            .map(|_| {
                let log = log.clone();
                std::thread::spawn(move || try_post(addr, "/api/v1/diagnose", &[("Content-Type", "text/plain")], &log))
            })
            .collect();
        let answered = clients.into_iter().filter_map(|c| c.join().unwrap()).filter(|(s, _)| *s == 200).count();
        assert!(answered > 0, "no upload was diagnosed");
    }
    let peak = rss_kib(pid, "VmHWM:");
    let mut idle = rss_kib(pid, "VmRSS:");
    for _ in 0..600 {
        if idle < before + 64 * 1024 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        idle = rss_kib(pid, "VmRSS:");
    }
    let _ = child.kill();
    let _ = child.wait();
    eprintln!("server RSS: {before} KiB before, peak {peak} KiB, {idle} KiB idle after the uploads");
    assert!(peak > before + 128 * 1024, "the uploads were held in memory: peak {peak} KiB");
    assert!(idle < before + 64 * 1024, "idle server keeps {idle} KiB resident ({before} KiB before, peak {peak} KiB)");
}
