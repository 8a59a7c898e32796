//! Durability benchmark for `oomdoc serve`: parallel feedback writers, `kill -9` of the
//! server in the middle, then count acknowledged reports missing from the database.
//!
//! ```text
//! cargo run --release -p oomdoc-server --bin oomdoc-feedback-crash -- [--writers 50] [--rounds 5] [--kill-after-ms 2000]
//! ```
//! Each round starts the server as a child process (this binary with `--serve DB`, which
//! calls `oomdoc_server::serve`, the function behind `oomdoc serve`) on one SQLite file,
//! runs N writer threads that POST `/api/v1/feedback` as fast as they can (one connection
//! per request, each report with a unique note), sends SIGKILL after the given time, and
//! then reads the file: it must pass `PRAGMA integrity_check` and hold every report
//! answered 201. Rounds share the file, so each round also restarts on the previous round's
//! crashed WAL. Exit status 1 if any acknowledged report is lost or the file is damaged.

mod common;

use oomdoc_kb::KnowledgeBase;
use std::{
    collections::HashSet,
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

struct Options {
    writers: usize,
    rounds: usize,
    kill_after: Duration,
    db: Option<PathBuf>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        writers: 50,
        rounds: 5,
        kill_after: Duration::from_millis(2000),
        db: None,
    };
    let mut args = common::Args::new("oomdoc-feedback-crash [--writers 50] [--rounds 5] [--kill-after-ms 2000] [--db FILE]");
    while let Some(a) = args.next_flag() {
        match a.as_str() {
            // Child mode: be the server; thousands of reports from one address are the point here.
            "--serve" => common::serve(
                oomdoc_server::store::Location::Sqlite(args.text(&a)?.into()),
                oomdoc_server::store::FeedbackPolicy::unlimited(),
            ),
            "--writers" => o.writers = args.value(&a)?,
            "--rounds" => o.rounds = args.value(&a)?,
            "--kill-after-ms" => o.kill_after = Duration::from_millis(args.value(&a)?),
            "--db" => o.db = Some(args.text(&a)?.into()),
            other => return Err(args.unknown(other)),
        }
    }
    if o.writers == 0 || o.rounds == 0 {
        return Err("--writers and --rounds must be at least 1".into());
    }
    Ok(o)
}

/// Start the server child; returns it with its address and the time it took to listen.
fn spawn_server(db: &Path) -> Result<(Child, SocketAddr, Duration), String> {
    let started = Instant::now();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .arg("--serve")
        .arg(db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        if stderr.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("the server exited before listening".into());
        }
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest
                .split_whitespace()
                .next()
                .unwrap_or("")
                .parse::<SocketAddr>()
                .map_err(|e| e.to_string())?;
        }
    };
    std::thread::spawn(move || for _ in stderr.lines() {});
    Ok((child, addr, started.elapsed()))
}

fn get_status(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    String::from_utf8_lossy(&buf)
        .strip_prefix("HTTP/1.1 ")?
        .get(..3)?
        .parse()
        .ok()
}

/// One POST; `Some(status)` when a full status line came back.
fn post(addr: SocketAddr, body: &str) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let req = format!(
        "POST /api/v1/feedback HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let head = String::from_utf8_lossy(&buf);
    head.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

struct WriterResult {
    /// Notes of reports answered 201, with the request's latency.
    acked: Vec<(String, Duration)>,
    /// Requests with no answer (in flight at the kill, or refused after it).
    unanswered: usize,
    other_status: usize,
}

fn writer(
    addr: SocketAddr,
    run: &str,
    round: usize,
    w: usize,
    entry: &str,
    fix: &str,
    stop: &AtomicBool,
) -> WriterResult {
    let mut r = WriterResult {
        acked: Vec::new(),
        unanswered: 0,
        other_status: 0,
    };
    let mut failures = 0;
    for n in 0.. {
        if stop.load(Ordering::Relaxed) && failures > 0 {
            break;
        }
        let note = format!("crash {run} r{round} w{w} n{n}");
        let body = serde_json::json!({ "entry": entry, "fix": fix, "outcome": "worked", "note": note }).to_string();
        let t = Instant::now();
        match post(addr, &body) {
            Some(201) => r.acked.push((note, t.elapsed())),
            Some(_) => r.other_status += 1,
            None => {
                r.unanswered += 1;
                failures += 1;
                if failures > 3 {
                    break;
                }
            }
        }
        if stop.load(Ordering::Relaxed) && r.unanswered > 0 {
            break;
        }
    }
    r
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let o = common::or_exit("oomdoc-feedback-crash", parse_args());
    let dir = tempfile::tempdir().expect("temp dir");
    let db = o.db.clone().unwrap_or_else(|| dir.path().join("oomdoc.sqlite3"));
    let e = KnowledgeBase::get()
        .entries()
        .iter()
        .find(|e| !e.fixes.is_empty())
        .expect("an entry with a fix");
    let (entry, fix) = (e.id.clone(), e.fixes[0].id.clone());
    // Notes are unique across runs on the same --db file.
    let run = format!(
        "p{}t{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs()
    );
    println!(
        "{} writers, {} rounds, SIGKILL {} after the writers start; database {}",
        o.writers,
        o.rounds,
        ms(o.kill_after),
        db.display()
    );
    println!("| round | acknowledged (201) | lost | committed, not acknowledged | unanswered | acks/s | p50 | p99 | max | listening | ready |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let (mut total_acked, mut total_lost) = (0usize, 0usize);
    let mut all_lat = Vec::new();
    for round in 0..o.rounds {
        let (mut child, addr, restart) = match spawn_server(&db) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("oomdoc-feedback-crash: round {round}: {e}");
                std::process::exit(2);
            }
        };
        // Warm-up: the first request loads the knowledge base; time it apart from the writers.
        let t = Instant::now();
        let healthy = get_status(addr, "/healthz");
        let ready = restart + t.elapsed();
        if healthy != Some(200) {
            eprintln!("oomdoc-feedback-crash: round {round}: /healthz answered {healthy:?}");
            std::process::exit(2);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let handles: Vec<_> = (0..o.writers)
            .map(|w| {
                let (stop, entry, fix, run) = (stop.clone(), entry.clone(), fix.clone(), run.clone());
                std::thread::spawn(move || writer(addr, &run, round, w, &entry, &fix, &stop))
            })
            .collect();
        std::thread::sleep(o.kill_after);
        stop.store(true, Ordering::Relaxed);
        // SIGKILL: no flush, no checkpoint, no graceful shutdown.
        child.kill().expect("kill -9 the server");
        child.wait().expect("reap the server");
        let elapsed = started.elapsed();
        let results: Vec<WriterResult> = handles.into_iter().map(|h| h.join().expect("writer thread")).collect();

        let conn = rusqlite::Connection::open(&db).expect("open the database after the crash");
        let integrity: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        if integrity != "ok" {
            eprintln!("oomdoc-feedback-crash: round {round}: integrity_check: {integrity}");
            std::process::exit(1);
        }
        let prefix = format!("crash {run} r{round} ");
        let stored: HashSet<String> = conn
            .prepare("SELECT note FROM feedback WHERE note LIKE ?1")
            .unwrap()
            .query_map([format!("{prefix}%")], |r| r.get::<_, String>(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let acked: Vec<&(String, Duration)> = results.iter().flat_map(|r| &r.acked).collect();
        let lost = acked.iter().filter(|(note, _)| !stored.contains(note)).count();
        let acked_set: HashSet<&str> = acked.iter().map(|(n, _)| n.as_str()).collect();
        let extra = stored.iter().filter(|n| !acked_set.contains(n.as_str())).count();
        let unanswered: usize = results.iter().map(|r| r.unanswered).sum();
        let other: usize = results.iter().map(|r| r.other_status).sum();
        let mut lat: Vec<Duration> = acked.iter().map(|(_, d)| *d).collect();
        lat.sort();
        println!(
            "| {round} | {} | {lost} | {extra} | {unanswered}{} | {:.0} | {} | {} | {} | {} | {} |",
            acked.len(),
            if other > 0 {
                format!(" (+{other} non-201)")
            } else {
                String::new()
            },
            acked.len() as f64 / elapsed.as_secs_f64(),
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99)),
            ms(lat.last().copied().unwrap_or_default()),
            ms(restart),
            ms(ready),
        );
        total_acked += acked.len();
        total_lost += lost;
        all_lat.extend(lat);
    }
    // A final start: the server recovers the crashed WAL and counts every stored report.
    let (mut child, addr, restart) = spawn_server(&db).expect("final restart");
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /api/v1/kb/{entry}/outcomes HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let body = buf.split("\r\n\r\n").nth(1).unwrap_or("");
    let reports = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["fixes"].as_array()?.iter().find(|f| f["fix"] == fix.as_str())?["reports"].as_u64());
    let rows: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM feedback", [], |r| r.get(0))
        .unwrap();
    all_lat.sort();
    println!(
        "total: {total_acked} acknowledged, {total_lost} lost; ack latency p50 {} p99 {} max {}; \
         after the last crash the server restarted in {} and counts {} reports ({rows} rows)",
        ms(percentile(&all_lat, 0.5)),
        ms(percentile(&all_lat, 0.99)),
        ms(all_lat.last().copied().unwrap_or_default()),
        ms(restart),
        reports.map_or("?".to_string(), |r| r.to_string()),
    );
    if total_lost > 0 {
        std::process::exit(1);
    }
}
