//! Replica benchmark for the team server (issue 24): several `oomdoc serve` replicas on
//! one PostgreSQL, writers posting job reports, one replica killed with SIGKILL midway.
//!
//! ```text
//! cargo run --release -p oomdoc-server --bin oomdoc-replicas-bench -- \
//!     [--replicas 2] [--writers 32] [--seconds 10] [--kill-after-secs 5] [--db postgres://…]
//! ```
//! Without `--db` it starts a throwaway PostgreSQL cluster (`store::postgres::cluster`).
//! Each replica is this binary with `--serve URL` (it calls `oomdoc_server::serve`, the
//! function behind `oomdoc serve`). Each writer keeps one connection to a replica (writer
//! i to replica i mod N) and posts the report `oomdoc run --post` would send for
//! examples/train.log (the full diagnosis, about 9 KB, with a unique `report_id`). When
//! its replica is gone, a writer moves to the next and re-sends the report that got no
//! answer (same `report_id`). At the end it checks that every acknowledged report is in
//! the database exactly once, and prints throughput and latency. Exit status 1 if an
//! acknowledged report is missing.

mod common;

use oomdoc_server::store::{self, postgres::cluster::TempCluster, Location};
use std::{
    collections::HashMap,
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

struct Options {
    replicas: usize,
    writers: usize,
    seconds: u64,
    kill_after: Option<u64>,
    db: Option<String>,
    /// Post the first finding's identity only (id, kind, sizes), not the whole diagnosis.
    small: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options { replicas: 2, writers: 32, seconds: 10, kill_after: Some(5), db: None, small: false };
    let mut args = common::Args::new(
        "oomdoc-replicas-bench [--replicas 2] [--writers 32] [--seconds 10] [--kill-after-secs 5 (0: none)] [--small] [--db postgres://…]",
    );
    while let Some(a) = args.next_flag() {
        match a.as_str() {
            "--serve" => common::serve(Location::parse(&args.text(&a)?)?, store::FeedbackPolicy::default()),
            "--replicas" => o.replicas = args.value(&a)?,
            "--writers" => o.writers = args.value(&a)?,
            "--seconds" => o.seconds = args.value(&a)?,
            "--kill-after-secs" => o.kill_after = Some(args.value::<u64>(&a)?).filter(|&s| s > 0),
            "--db" => o.db = Some(args.text(&a)?),
            "--small" => o.small = true,
            other => return Err(args.unknown(other)),
        }
    }
    if o.replicas == 0 || o.writers == 0 {
        return Err("--replicas and --writers must be at least 1".into());
    }
    Ok(o)
}

fn spawn_replica(url: &str) -> Result<(Child, SocketAddr), String> {
    let mut child = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
        .args(["--serve", url])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        if stderr.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("replica exited before listening".into());
        }
        if let Some(rest) = line.split("listening on http://").nth(1) {
            let addr = rest.split_whitespace().next().unwrap().parse().map_err(|e| format!("{e}"))?;
            std::thread::spawn(move || for _ in stderr.lines() {});
            return Ok((child, addr));
        }
    }
}

/// One keep-alive HTTP/1.1 connection; `None` when the server is gone.
struct Conn {
    addr: SocketAddr,
    stream: Option<BufReader<TcpStream>>,
}

impl Conn {
    fn post(&mut self, path: &str, auth: &str, body: &[u8]) -> Option<u16> {
        for _ in 0..2 {
            if self.stream.is_none() {
                let s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2)).ok()?;
                s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
                s.set_nodelay(true).ok()?;
                self.stream = Some(BufReader::new(s));
            }
            match self.exchange(path, auth, body) {
                Some(status) => return Some(status),
                // A kept-alive connection the server closed: reconnect once.
                None => self.stream = None,
            }
        }
        None
    }

    fn exchange(&mut self, path: &str, auth: &str, body: &[u8]) -> Option<u16> {
        let s = self.stream.as_mut()?;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        s.get_mut().write_all(head.as_bytes()).ok()?;
        s.get_mut().write_all(body).ok()?;
        let mut line = String::new();
        s.read_line(&mut line).ok()?;
        let status: u16 = line.get(9..12)?.parse().ok()?;
        let mut len = 0usize;
        loop {
            line.clear();
            s.read_line(&mut line).ok()?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().ok()?;
            }
        }
        let mut buf = vec![0; len];
        s.read_exact(&mut buf).ok()?;
        Some(status)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn main() {
    let o = common::or_exit("oomdoc-replicas-bench", parse_args());
    let _cluster;
    let url = match &o.db {
        Some(url) => url.clone(),
        None => {
            let c = TempCluster::start().unwrap_or_else(|e| {
                eprintln!("oomdoc-replicas-bench: cannot start PostgreSQL: {e}");
                std::process::exit(2)
            });
            let url = c.create_database("bench").unwrap();
            _cluster = c;
            url
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let store = rt.block_on(store::open(&Location::Postgres(url.clone()))).unwrap_or_else(|e| {
        eprintln!("oomdoc-replicas-bench: {e}");
        std::process::exit(2)
    });
    let secret = store::new_token_secret().unwrap();
    let name = format!("bench-{}", std::process::id());
    rt.block_on(store.create_token(&name, &store::token_hash(&secret))).unwrap();
    let auth = Arc::new(format!("Bearer {secret}"));
    let before = rt.block_on(store.count_reports()).unwrap();

    let mut replicas: Vec<(Child, SocketAddr)> = (0..o.replicas).map(|_| spawn_replica(&url).unwrap()).collect();
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.1).collect();
    let log = include_str!("../../../../examples/train.log");
    let report = (oomdoc_server::Engines::default().diagnose)(log.as_bytes(), oomdoc_kb::Lang::En).unwrap();
    let report = if o.small {
        // What a slim client would send: the first finding's id, kind, sizes and first fix.
        let f = &report["findings"][0];
        let fix = &f["fixes"][0];
        serde_json::json!({"findings": [{"id": f["id"], "kind": f["kind"], "first_fatal": true, "sizes": f["sizes"],
                                          "fixes": [{"id": fix["id"], "category": fix["category"]}]}]})
    } else {
        report
    };
    let report = serde_json::to_string(&report).unwrap();
    println!(
        "{} replicas, {} writers, {} s, report {} bytes, kill -9 of replica 0 after {}",
        o.replicas,
        o.writers,
        o.seconds,
        report.len(),
        o.kill_after.map_or("never".into(), |s| format!("{s} s"))
    );

    let dead: Arc<Vec<AtomicBool>> = Arc::new((0..o.replicas).map(|_| AtomicBool::new(false)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::<(String, Duration)>::new()));
    let moved = Arc::new(AtomicUsize::new(0));
    let run_id = std::process::id();
    let started = Instant::now();
    let writers: Vec<_> = (0..o.writers)
        .map(|w| {
            let (dead, stop, acked, moved, auth, report, addrs) =
                (dead.clone(), stop.clone(), acked.clone(), moved.clone(), auth.clone(), report.clone(), addrs.clone());
            std::thread::spawn(move || {
                let mut replica = w % addrs.len();
                let mut conn = Conn { addr: addrs[replica], stream: None };
                let mut mine = Vec::new();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let id = format!("bench-{run_id}-w{w}-n{n}");
                    let body = format!(
                        r#"{{"report_id": "{id}", "labels": {{"job_id": "{id}", "host": "node-{w}", "rank": "0", "versions": {{"torch": "2.5.1"}}}}, "report": {report}}}"#
                    );
                    let t = Instant::now();
                    loop {
                        match conn.post("/api/v1/reports", &auth, body.as_bytes()) {
                            Some(200 | 201) => {
                                mine.push((id, t.elapsed()));
                                break;
                            }
                            Some(status) => panic!("writer {w}: status {status}"),
                            None => {
                                // The replica is gone: the next live one, same report.
                                dead[replica].store(true, Ordering::Relaxed);
                                replica = (0..addrs.len()).map(|k| (replica + 1 + k) % addrs.len()).find(|r| !dead[*r].load(Ordering::Relaxed)).expect("a live replica");
                                conn = Conn { addr: addrs[replica], stream: None };
                                moved.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    n += 1;
                }
                acked.lock().unwrap().extend(mine);
            })
        })
        .collect();
    let mut killed_at = None;
    while started.elapsed() < Duration::from_secs(o.seconds) {
        std::thread::sleep(Duration::from_millis(50));
        if killed_at.is_none() && o.kill_after.is_some_and(|s| started.elapsed() >= Duration::from_secs(s)) && o.replicas > 1 {
            let _ = replicas[0].0.kill();
            let _ = replicas[0].0.wait();
            killed_at = Some(started.elapsed());
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let wall = started.elapsed();
    for (child, _) in replicas.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }

    let acked = acked.lock().unwrap();
    let mut latencies: Vec<Duration> = acked.iter().map(|a| a.1).collect();
    latencies.sort();
    // Every acknowledged report, exactly once.
    let stored: HashMap<String, u32> = rt.block_on(async {
        let q = store::ReportQuery { limit: u32::MAX, ..Default::default() };
        let mut m = HashMap::new();
        for r in store.reports(&q).await.unwrap() {
            if let Some(id) = r.report_id.filter(|id| id.starts_with(&format!("bench-{run_id}-"))) {
                *m.entry(id).or_default() += 1;
            }
        }
        m
    });
    let missing = acked.iter().filter(|(id, _)| !stored.contains_key(id)).count();
    let twice = stored.values().filter(|&&n| n > 1).count();
    let after = rt.block_on(store.count_reports()).unwrap();
    println!(
        "acknowledged {} reports in {:.1} s: {:.0} reports/s; latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        acked.len(),
        wall.as_secs_f64(),
        acked.len() as f64 / wall.as_secs_f64(),
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    );
    println!(
        "kill -9 at {}: {} writers moved to another replica; stored {} (new rows {}), missing {missing}, stored twice {twice}",
        killed_at.map_or("-".into(), |t| format!("{:.1} s", t.as_secs_f64())),
        moved.load(Ordering::Relaxed),
        stored.len(),
        after - before
    );
    rt.block_on(store.revoke_token(&name)).ok();
    if missing > 0 || twice > 0 {
        std::process::exit(1);
    }
}
