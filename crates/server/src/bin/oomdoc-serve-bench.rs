//! Load benchmark for `oomdoc serve` (loopback only; bounded in requests and time).
//!
//! ```text
//! cargo run --release -p oomdoc-server --bin oomdoc-serve-bench            # starts its own server
//! cargo run --release -p oomdoc-server --bin oomdoc-serve-bench -- --addr 127.0.0.1:8080
//! ```
//! Scenarios: `POST /api/v1/diagnose` with a 10 KB log holding one real failure, and
//! `GET /kb/{id}`. Prints requests per second and latency percentiles per scenario.

mod common;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use oomdoc_kb::KnowledgeBase;
use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

struct Options {
    addr: Option<SocketAddr>,
    connections: usize,
    requests: usize,
    max_seconds: u64,
    client_threads: usize,
    server_workers: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options { addr: None, connections: 32, requests: 20_000, max_seconds: 20, client_threads: 1, server_workers: 2 };
    let mut args = common::Args::new(
        "oomdoc-serve-bench [--addr 127.0.0.1:PORT] [--connections 32] [--requests 20000] [--max-seconds 20] \
         [--client-threads 1] [--server-workers 2]",
    );
    while let Some(a) = args.next_flag() {
        match a.as_str() {
            "--addr" => {
                let addr: SocketAddr = args.value(&a)?;
                if !addr.ip().is_loopback() {
                    return Err("--addr must be a loopback address".into());
                }
                o.addr = Some(addr);
            }
            "--connections" => o.connections = args.value(&a)?,
            "--requests" => o.requests = args.value(&a)?,
            "--max-seconds" => o.max_seconds = args.value(&a)?,
            "--client-threads" => o.client_threads = args.value(&a)?,
            "--server-workers" => o.server_workers = args.value(&a)?,
            other => return Err(args.unknown(other)),
        }
    }
    Ok(o)
}

/// About 10 KB of ordinary training log with one real failure (a knowledge-base example) in it.
fn ten_kb_log() -> String {
    let example = KnowledgeBase::get()
        .entries()
        .iter()
        .find_map(|e| e.examples.first())
        .map(|x| x.text.clone())
        .unwrap_or_else(|| "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.00GiB.".into());
    let mut log = String::new();
    let mut step = 0;
    while log.len() + example.len() < 10 * 1024 {
        step += 1;
        log.push_str(&format!(
            "2025-06-03 07:{:02}:{:02} INFO step {step} | loss {:.4} | lr 3.0e-04 | tokens/s 41234 | grad_norm 0.83\n",
            step / 60 % 60,
            step % 60,
            2.5 - step as f64 * 0.001
        ));
    }
    log.push_str(&example);
    log.push('\n');
    log
}

struct Scenario {
    name: String,
    method: hyper::Method,
    path: String,
    content_type: Option<&'static str>,
    body: Bytes,
}

struct Outcome {
    latencies_us: Vec<u32>,
    errors: usize,
    elapsed: Duration,
}

async fn run_scenario(addr: SocketAddr, s: Arc<Scenario>, o: &Options, total: usize) -> Outcome {
    let issued = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(o.max_seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..o.connections {
        let (s, issued) = (s.clone(), issued.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0;
            let stream = match tokio::net::TcpStream::connect(addr).await {
                Ok(st) => st,
                Err(_) => return (lat, 1),
            };
            let _ = stream.set_nodelay(true);
            let Ok((mut send, conn)) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await
            else {
                return (lat, 1);
            };
            tokio::spawn(conn);
            while issued.fetch_add(1, Ordering::Relaxed) < total && Instant::now() < deadline {
                let mut req = hyper::Request::builder().method(s.method.clone()).uri(&s.path).header("host", "bench");
                if let Some(ct) = s.content_type {
                    req = req.header("content-type", ct);
                }
                let req = req.body(Full::new(s.body.clone())).expect("request builds");
                let t0 = Instant::now();
                let ok = match send.send_request(req).await {
                    Ok(resp) => {
                        let status = resp.status();
                        resp.into_body().collect().await.is_ok() && status.is_success()
                    }
                    Err(_) => false,
                };
                if ok {
                    lat.push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
                } else {
                    errors += 1;
                    if send.ready().await.is_err() {
                        break;
                    }
                }
            }
            (lat, errors)
        }));
    }
    let mut latencies_us = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.unwrap_or_default();
        latencies_us.extend(l);
        errors += e;
    }
    Outcome { latencies_us, errors, elapsed: started.elapsed() }
}

/// One request on a fresh connection: status and body.
async fn one_request(addr: SocketAddr, method: hyper::Method, path: &str, ctype: Option<&str>, body: impl Into<Bytes>) -> (u16, Bytes) {
    let Ok(stream) = tokio::net::TcpStream::connect(addr).await else { return (0, Bytes::new()) };
    let Ok((mut send, conn)) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await else {
        return (0, Bytes::new());
    };
    tokio::spawn(conn);
    let mut req = hyper::Request::builder().method(method).uri(path).header("host", "bench");
    if let Some(ct) = ctype {
        req = req.header("content-type", ct);
    }
    let Ok(resp) = send.send_request(req.body(Full::new(body.into())).expect("request builds")).await else {
        return (0, Bytes::new());
    };
    let status = resp.status().as_u16();
    (status, resp.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default())
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn main() {
    let o = common::or_exit("oomdoc-serve-bench", parse_args());
    let _dir;
    let mut _server = None;
    let addr = match o.addr {
        Some(a) => a,
        None => {
            _dir = tempfile::tempdir().expect("temp dir");
            let config = oomdoc_server::Config {
                addr: "127.0.0.1:0".parse().unwrap(),
                db: oomdoc_server::store::Location::Sqlite(_dir.path().join("bench.sqlite3")),
                feedback: oomdoc_server::store::FeedbackPolicy::unlimited(),
                workers: o.server_workers,
                ..Default::default()
            };
            let s = oomdoc_server::BackgroundServer::start(config, oomdoc_server::Engines::default()).expect("server starts");
            let a = s.addr;
            _server = Some(s);
            a
        }
    };
    let entry = KnowledgeBase::get().entries().iter().find(|e| !e.fixes.is_empty()).map(|e| e.id.clone()).unwrap_or_default();
    let log = ten_kb_log();
    let scenarios = [
        Scenario {
            name: format!("POST /api/v1/diagnose ({} B log)", log.len()),
            method: hyper::Method::POST,
            path: "/api/v1/diagnose".into(),
            content_type: Some("text/plain"),
            body: Bytes::from(log),
        },
        Scenario {
            name: format!("GET /kb/{entry}"),
            method: hyper::Method::GET,
            path: format!("/kb/{entry}"),
            content_type: None,
            body: Bytes::new(),
        },
    ];
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(o.client_threads.max(1)).enable_all().build().unwrap();
    // The entry page reads measured outcomes from SQLite: give it some to read.
    let fixes: Vec<String> =
        KnowledgeBase::get().by_id(&entry).map(|e| e.fixes.iter().map(|f| f.id.clone()).collect()).unwrap_or_default();
    let seeded = rt.block_on(async {
        let mut stored = 0;
        for i in 0..40 {
            let Some(fix) = fixes.get(i % fixes.len().max(1)) else { break };
            let hardware = ["H100 80GB", "A100 40GB", "TPU v5e"][i % 3];
            let body = serde_json::json!({
                "entry": entry, "fix": fix, "outcome": if i % 3 == 0 { "did-not-work" } else { "worked" },
                "hardware": hardware,
            });
            let (status, _) = one_request(addr, hyper::Method::POST, "/api/v1/feedback", Some("application/json"), body.to_string()).await;
            stored += usize::from(status == 201);
        }
        stored
    });
    let (status, body) = rt.block_on(one_request(addr, hyper::Method::POST, "/api/v1/diagnose", Some("text/plain"), scenarios[0].body.clone()));
    let findings = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["findings"].as_array().map(|f| f.iter().map(|x| x["id"].to_string()).collect::<Vec<_>>().join(", ")));
    println!("diagnose answers {status} with findings [{}]; {seeded} feedback reports stored for {entry}", findings.unwrap_or_default());
    println!(
        "oomdoc-serve-bench: {} ({}), {} connections, up to {} requests or {} s per scenario, {} CPUs",
        addr,
        if o.addr.is_some() { "external server".to_string() } else { format!("in-process server, {} workers", o.server_workers) },
        o.connections,
        o.requests,
        o.max_seconds,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
    );
    println!("{:<44} {:>9} {:>8} {:>8} {:>8} {:>8} {:>7}", "scenario", "req/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "errors");
    for s in scenarios {
        let s = Arc::new(s);
        // Warm up connections, caches and the SQLite page cache.
        rt.block_on(run_scenario(addr, s.clone(), &o, (o.requests / 20).max(100)));
        let mut out = rt.block_on(run_scenario(addr, s.clone(), &o, o.requests));
        out.latencies_us.sort_unstable();
        let n = out.latencies_us.len();
        println!(
            "{:<44} {:>9.0} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>7}",
            s.name,
            n as f64 / out.elapsed.as_secs_f64(),
            percentile(&out.latencies_us, 0.50),
            percentile(&out.latencies_us, 0.90),
            percentile(&out.latencies_us, 0.99),
            percentile(&out.latencies_us, 1.0),
            out.errors
        );
    }
}
