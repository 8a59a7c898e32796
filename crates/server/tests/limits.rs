//! Resource limits over real HTTP (issue 12): the analysis memory budget (413 / 503 with
//! Retry-After), archive caps, temp directories removed on every path (success, error,
//! panic, timeout, client gone) and swept at start, cancellation of engine work, the
//! connection cap, slow headers and slow uploads.

mod common;

use common::{multipart, read_response, TestServer};
use oomdoc_server::{
    engines::{EngineError, MemoryReport},
    tempdir::count_dump_dirs,
    Config, Engines,
};
use serde_json::json;
use std::{
    io::{Read, Write},
    net::TcpStream,
    path::Path,
    sync::atomic::{AtomicBool, AtomicUsize, Ordering},
    time::{Duration, Instant},
};

fn report() -> MemoryReport {
    MemoryReport {
        json: json!({"modules": []}),
        html: "<html></html>".into(),
    }
}

/// Wait up to `secs` for `f`.
/// Waits are hang guards, never performance bounds: minutes, for a loaded 2-core machine.
const HANG_GUARD_SECS: u64 = 120;

fn eventually(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

fn private_temp(c: &mut Config, temp: &Path) {
    c.resources.temp_dir = temp.to_path_buf();
}

fn dump_body(name: &str, bytes: usize) -> (String, Vec<u8>) {
    multipart(&[("dump", Some(name), &vec![b'x'; bytes])])
}

// ------------------------------------------------------------------ memory budget

static BUDGET_RUNNING: AtomicUsize = AtomicUsize::new(0);
static BUDGET_RELEASE: AtomicBool = AtomicBool::new(false);

fn held_memory(_: &Path) -> Result<MemoryReport, EngineError> {
    BUDGET_RUNNING.fetch_add(1, Ordering::SeqCst);
    while !BUDGET_RELEASE.load(Ordering::SeqCst) && !oomdoc_server::limits::cancelled() {
        std::thread::sleep(Duration::from_millis(10));
    }
    BUDGET_RUNNING.fetch_sub(1, Ordering::SeqCst);
    Ok(report())
}

#[test]
fn the_memory_budget_answers_413_when_a_dump_can_never_fit_and_503_when_busy() {
    let temp = tempfile::tempdir().unwrap();
    let s = TestServer::start_with(
        Engines {
            memory: held_memory,
            ..Engines::default()
        },
        |c| {
            private_temp(c, temp.path());
            c.resources.analysis_memory_bytes = 10_000;
            c.resources.analysis_memory_factor = 8;
        },
    );
    // 1 300 bytes × 8 > 10 000: never fits.
    let (ct, body) = dump_body("m.hlo.pb", 1_300);
    let r = s.post("/api/v1/memory", &ct, &body);
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--analysis-memory-mib"),
        "{}",
        r.text()
    );

    // 1 000 bytes × 8 fits alone; a second one while it runs does not.
    let (ct, body) = dump_body("m.hlo.pb", 1_000);
    let addr = s.addr();
    let (ct1, body1) = (ct.clone(), body.clone());
    let first = std::thread::spawn(move || {
        common::request(
            addr,
            "POST",
            "/api/v1/memory",
            &[("Content-Type", &ct1)],
            &body1,
        )
    });
    assert!(eventually(HANG_GUARD_SECS, || BUDGET_RUNNING.load(Ordering::SeqCst) == 1));
    let busy = s.post("/api/v1/memory", &ct, &body);
    assert_eq!(busy.status, 503, "{}", busy.text());
    assert!(
        busy.header("retry-after")
            .is_some_and(|v| v.parse::<u64>().is_ok()),
        "{:?}",
        busy.headers
    );
    assert!(
        busy.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("retry"),
        "{}",
        busy.text()
    );
    // The page gets the same refusal.
    assert_eq!(s.post_form("/memory", &ct, &body).status, 503);

    BUDGET_RELEASE.store(true, Ordering::SeqCst);
    assert_eq!(first.join().unwrap().status, 200);
    // Released: the next one runs.
    let again = s.post("/api/v1/memory", &ct, &body);
    assert_eq!(again.status, 200, "{}", again.text());
    assert!(eventually(HANG_GUARD_SECS, || count_dump_dirs(temp.path()) == 0));
}

// ------------------------------------------------------------------ temp dirs and cancellation

static SLOW_STARTED: AtomicBool = AtomicBool::new(false);
static SLOW_SAW_CANCEL: AtomicBool = AtomicBool::new(false);

/// Never finishes by itself: works until the request is cancelled (at most 60 s).
fn endless_memory(dir: &Path) -> Result<MemoryReport, EngineError> {
    assert!(dir.exists());
    SLOW_STARTED.store(true, Ordering::SeqCst);
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        if oomdoc_server::limits::cancelled() {
            SLOW_SAW_CANCEL.store(true, Ordering::SeqCst);
            return Err(EngineError::BadInput("cancelled".into()));
        }
        std::hint::spin_loop();
    }
    Ok(report())
}

#[test]
fn a_timed_out_analysis_stops_and_its_temp_dir_is_removed() {
    let temp = tempfile::tempdir().unwrap();
    let s = TestServer::start_with(
        Engines {
            memory: endless_memory,
            ..Engines::default()
        },
        |c| {
            private_temp(c, temp.path());
            c.upload_timeout = Duration::from_secs(1);
        },
    );
    let (ct, body) = dump_body("m.hlo.pb", 100);
    let r = s.post("/api/v1/memory", &ct, &body);
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(
        eventually(HANG_GUARD_SECS, || SLOW_SAW_CANCEL.load(Ordering::SeqCst)),
        "the engine's work was not cancelled"
    );
    assert!(
        eventually(HANG_GUARD_SECS, || count_dump_dirs(temp.path()) == 0),
        "temp dir left behind"
    );
}

static GONE_STARTED: AtomicBool = AtomicBool::new(false);
static GONE_SAW_CANCEL: AtomicBool = AtomicBool::new(false);

fn endless_memory_2(_: &Path) -> Result<MemoryReport, EngineError> {
    GONE_STARTED.store(true, Ordering::SeqCst);
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        if oomdoc_server::limits::cancelled() {
            GONE_SAW_CANCEL.store(true, Ordering::SeqCst);
            return Err(EngineError::BadInput("cancelled".into()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(report())
}

#[test]
fn a_client_that_goes_away_cancels_the_analysis_and_frees_the_temp_dir() {
    let temp = tempfile::tempdir().unwrap();
    let s = TestServer::start_with(
        Engines {
            memory: endless_memory_2,
            ..Engines::default()
        },
        |c| {
            private_temp(c, temp.path());
        },
    );
    let (ct, body) = dump_body("m.hlo.pb", 100);
    let mut sock = TcpStream::connect(s.addr()).unwrap();
    let head = format!(
        "POST /api/v1/memory HTTP/1.1\r\nHost: localhost\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).unwrap();
    sock.write_all(&body).unwrap();
    assert!(eventually(HANG_GUARD_SECS, || GONE_STARTED.load(Ordering::SeqCst)));
    assert_eq!(count_dump_dirs(temp.path()), 1);
    drop(sock);
    assert!(
        eventually(HANG_GUARD_SECS, || GONE_SAW_CANCEL.load(Ordering::SeqCst)),
        "the engine kept working for a client that left"
    );
    assert!(
        eventually(HANG_GUARD_SECS, || count_dump_dirs(temp.path()) == 0),
        "temp dir left behind"
    );
}

fn panicking_memory(_: &Path) -> Result<MemoryReport, EngineError> {
    panic!("engine bug");
}

#[test]
fn temp_dirs_are_removed_after_success_errors_refusals_and_panics() {
    let temp = tempfile::tempdir().unwrap();
    let ok = TestServer::start_with(
        Engines {
            memory: |_| Ok(report()),
            ..Engines::default()
        },
        |c| private_temp(c, temp.path()),
    );
    let (ct, body) = dump_body("m.hlo.pb", 100);
    assert_eq!(ok.post("/api/v1/memory", &ct, &body).status, 200);
    // Not an archive after all.
    let (ct_bad, bad) = dump_body("dump.tar.gz", 100);
    assert_eq!(ok.post("/api/v1/memory", &ct_bad, &bad).status, 422);
    let panics = TestServer::start_with(
        Engines {
            memory: panicking_memory,
            ..Engines::default()
        },
        |c| private_temp(c, temp.path()),
    );
    assert_eq!(panics.post("/api/v1/memory", &ct, &body).status, 500);
    assert!(
        eventually(HANG_GUARD_SECS, || count_dump_dirs(temp.path()) == 0),
        "temp dir left behind"
    );
}

#[test]
fn many_files_or_archive_entries_are_refused_with_413() {
    let temp = tempfile::tempdir().unwrap();
    let s = TestServer::start_with(
        Engines {
            memory: |_| Ok(report()),
            ..Engines::default()
        },
        |c| {
            private_temp(c, temp.path());
            c.resources.archive_entries = 50;
        },
    );
    // An archive of 2 000 empty files (a million at scale).
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut t = tar::Builder::new(gz);
    for i in 0..2_000 {
        let mut h = tar::Header::new_gnu();
        h.set_size(0);
        h.set_mode(0o644);
        h.set_cksum();
        t.append_data(&mut h, format!("dump/f{i}"), &b""[..])
            .unwrap();
    }
    let tgz = t.into_inner().unwrap().finish().unwrap();
    let (ct, body) = multipart(&[("dump", Some("empty.tar.gz"), &tgz)]);
    let r = s.post("/api/v1/memory", &ct, &body);
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.text().contains("entries"), "{}", r.text());
    // Too many files in the multipart body itself.
    let files: Vec<(String, Vec<u8>)> = (0..51)
        .map(|i| (format!("f{i}.txt"), b"x".to_vec()))
        .collect();
    let parts: Vec<(&str, Option<&str>, &[u8])> = files
        .iter()
        .map(|(n, d)| ("dump", Some(n.as_str()), d.as_slice()))
        .collect();
    let (ct, body) = multipart(&parts);
    assert_eq!(s.post("/api/v1/memory", &ct, &body).status, 413);
    assert!(
        eventually(HANG_GUARD_SECS, || count_dump_dirs(temp.path()) == 0),
        "temp dir left behind"
    );
}

#[test]
fn stale_upload_dirs_of_a_crashed_server_are_removed_at_start() {
    let temp = tempfile::tempdir().unwrap();
    let stale = temp.path().join("oomdoc-dump-4999999-Ab12Cd");
    std::fs::create_dir_all(stale.join("dump/a")).unwrap();
    std::fs::write(stale.join("dump/a/m.hlo.pb"), b"x").unwrap();
    let live = temp
        .path()
        .join(format!("oomdoc-dump-{}-Zz99", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    let _s = TestServer::start_with(Engines::default(), |c| private_temp(c, temp.path()));
    if Path::new("/proc/self").exists() {
        assert!(!stale.exists(), "a dead server's upload dir is still there");
    }
    assert!(live.exists(), "a live server's upload dir was removed");
}

// ------------------------------------------------------------------ connections

fn open_slow(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    // Headers started and never finished.
    let _ = s.write_all(b"POST /api/v1/diagnose HTTP/1.1\r\nHost: localhost\r\n");
    s
}

/// Whether the server closed `s` (EOF or reset) within `secs`; a 503 answer counts too.
fn closed_within(s: &mut TcpStream, secs: u64) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(secs))).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn slow_clients_cannot_take_every_connection() {
    let s = TestServer::start_with(Engines::default(), |c| {
        c.resources.max_connections = 4;
        c.resources.header_read_timeout = Duration::from_secs(1);
    });
    let mut slow: Vec<TcpStream> = (0..10).map(|_| open_slow(s.addr())).collect();
    std::thread::sleep(Duration::from_millis(200));
    // A normal request meanwhile: served, or refused cleanly with 503 and Retry-After.
    let r = s.get("/healthz");
    match r.status {
        200 => {}
        503 => {
            assert!(r.header("retry-after").is_some(), "{:?}", r.headers);
            assert!(r.text().contains("too many connections"), "{}", r.text());
        }
        other => panic!("status {other}: {}", r.text()),
    }
    // The slow ones are all closed after the header deadline (or refused at once).
    for c in &mut slow {
        assert!(
            closed_within(c, HANG_GUARD_SECS),
            "a slow client still holds its connection"
        );
    }
    // And then normal service.
    assert_eq!(s.get("/healthz").status, 200);
}

#[test]
fn an_idle_kept_alive_connection_is_closed_after_the_header_deadline() {
    let s = TestServer::start_with(Engines::default(), |c| {
        c.resources.header_read_timeout = Duration::from_secs(1)
    });
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let r = read_response(&mut c);
    assert_eq!(r.status, 200);
    // Nothing more sent: the server lets go.
    assert!(closed_within(&mut c, HANG_GUARD_SECS));
    // A connection that never sends a byte, too.
    let mut silent = TcpStream::connect(s.addr()).unwrap();
    assert!(closed_within(&mut silent, HANG_GUARD_SECS));
}

#[test]
fn an_upload_slower_than_the_minimum_rate_gets_408() {
    let s = TestServer::start_with(Engines::default(), |c| {
        c.resources.min_upload_bytes_per_sec = 1_000;
        c.resources.min_upload_grace = Duration::from_millis(500);
    });
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.write_all(b"POST /api/v1/diagnose HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n")
        .unwrap();
    let writer = {
        let mut w = c.try_clone().unwrap();
        std::thread::spawn(move || {
            for _ in 0..100 {
                if w.write_all(b"0123456789").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    c.set_read_timeout(Some(Duration::from_secs(HANG_GUARD_SECS))).unwrap();
    let r = read_response(&mut c);
    assert_eq!(r.status, 408, "{}", r.text());
    assert!(r.text().contains("minimum upload rate"), "{}", r.text());
    drop(c);
    let _ = writer.join();
    // A body at full speed is not affected.
    let log = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.00GiB.\n".repeat(100);
    assert_eq!(
        s.post("/api/v1/diagnose", "text/plain", log.as_bytes())
            .status,
        200
    );
}

// ------------------------------------------------------------------ logs share the budget

static LOG_RUNNING: AtomicUsize = AtomicUsize::new(0);
static LOG_RELEASE: AtomicBool = AtomicBool::new(false);

fn held_diagnose(_: &[u8], _: oomdoc_kb::Lang) -> Result<serde_json::Value, EngineError> {
    LOG_RUNNING.fetch_add(1, Ordering::SeqCst);
    while !LOG_RELEASE.load(Ordering::SeqCst) && !oomdoc_server::limits::cancelled() {
        std::thread::sleep(Duration::from_millis(10));
    }
    LOG_RUNNING.fetch_sub(1, Ordering::SeqCst);
    Ok(json!({"findings": []}))
}

#[test]
fn buffered_logs_are_weighed_in_the_budget_before_they_are_read() {
    let s = TestServer::start_with(
        Engines {
            diagnose: held_diagnose,
            ..Engines::default()
        },
        |c| {
            c.resources.analysis_memory_bytes = 3_000;
        },
    );
    let log = vec![b'x'; 1_000];
    // 2 000 bytes × 2 > 3 000: never fits.
    let big = vec![b'x'; 2_000];
    let r = s.post("/api/v1/diagnose", "text/plain", &big);
    assert_eq!(r.status, 413, "{}", r.text());
    // One 1 000-byte log (weight 2 000) at a time.
    let addr = s.addr();
    let l1 = log.clone();
    let first = std::thread::spawn(move || {
        common::request(
            addr,
            "POST",
            "/api/v1/diagnose",
            &[("Content-Type", "text/plain")],
            &l1,
        )
    });
    assert!(eventually(HANG_GUARD_SECS, || LOG_RUNNING.load(Ordering::SeqCst) == 1));
    let busy = s.post("/api/v1/diagnose", "text/plain", &log);
    assert_eq!(busy.status, 503, "{}", busy.text());
    assert!(busy.header("retry-after").is_some());
    // Reading pages is not affected.
    assert_eq!(s.get("/").status, 200);
    LOG_RELEASE.store(true, Ordering::SeqCst);
    assert_eq!(first.join().unwrap().status, 200);
    assert_eq!(s.post("/api/v1/diagnose", "text/plain", &log).status, 200);
}

#[test]
fn a_slow_dump_upload_gets_408_and_leaves_no_temp_dir() {
    let temp = tempfile::tempdir().unwrap();
    let s = TestServer::start_with(
        Engines {
            memory: |_| Ok(report()),
            ..Engines::default()
        },
        |c| {
            private_temp(c, temp.path());
            c.resources.min_upload_bytes_per_sec = 1_000;
            c.resources.min_upload_grace = Duration::from_millis(500);
        },
    );
    let (ct, body) = dump_body("m.hlo.pb", 100_000);
    let mut c = TcpStream::connect(s.addr()).unwrap();
    let head = format!("POST /api/v1/memory HTTP/1.1\r\nHost: localhost\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n", body.len());
    c.write_all(head.as_bytes()).unwrap();
    // The multipart head and a little data at once, then a trickle.
    c.write_all(&body[..300]).unwrap();
    let writer = {
        let mut w = c.try_clone().unwrap();
        let rest = body[300..].to_vec();
        std::thread::spawn(move || {
            for chunk in rest.chunks(10).take(100) {
                if w.write_all(chunk).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    c.set_read_timeout(Some(Duration::from_secs(HANG_GUARD_SECS))).unwrap();
    let r = read_response(&mut c);
    assert_eq!(r.status, 408, "{}", r.text());
    drop(c);
    let _ = writer.join();
    assert!(
        eventually(HANG_GUARD_SECS, || count_dump_dirs(temp.path()) == 0),
        "temp dir left behind"
    );
}
