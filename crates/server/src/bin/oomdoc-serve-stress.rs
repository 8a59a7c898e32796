//! Stress benchmark for `oomdoc serve`'s resource limits (issue 12), loopback only.
//!
//! ```text
//! ulimit -n 20000   # the clients hold one descriptor each
//! cargo run --release -p oomdoc-server --bin oomdoc-serve-stress -- [--dump-mib 32] [--parallel-dumps 3]
//!     [--slow-clients 10000] [--slow-seconds 14] [--analysis-memory-mib 4096] [--max-connections 512]
//! ```
//! Runs the real server (real engines) as a child process with a private temp dir, and:
//! 1. uploads `--parallel-dumps` crafted `.hlo.pb` dumps at once (a buffer assignment of
//!    millions of empty heap-simulator events, 2 bytes each on disk);
//! 2. uploads a `.tar.gz` of a million empty files;
//! 3. kills the server with SIGKILL during an analysis and starts it again (the upload
//!    directory left behind must be swept at start);
//! 4. opens `--slow-clients` connections that trickle their headers or their body, while a
//!    probe sends a normal request every 250 ms.
//!
//! Prints the server's peak RSS (VmHWM), peak open descriptors, the statuses seen, and the
//! upload directories left in the temp dir at the end (must be zero).

mod common;

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

struct Options {
    dump_mib: usize,
    parallel_dumps: usize,
    million: usize,
    slow_clients: usize,
    slow_seconds: u64,
    analysis_memory_mib: u64,
    max_connections: usize,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        dump_mib: 32,
        parallel_dumps: 3,
        million: 1_000_000,
        slow_clients: 10_000,
        slow_seconds: 14,
        analysis_memory_mib: 4096,
        max_connections: 512,
    };
    let mut args = common::Args::new(
        "oomdoc-serve-stress [--dump-mib 32] [--parallel-dumps 3] [--empty-files 1000000] [--slow-clients 10000] \
         [--slow-seconds 14] [--analysis-memory-mib 4096] [--max-connections 512]",
    );
    while let Some(a) = args.next_flag() {
        match a.as_str() {
            "--dump-mib" => o.dump_mib = args.value(&a)?,
            "--parallel-dumps" => o.parallel_dumps = args.value(&a)?,
            "--empty-files" => o.million = args.value(&a)?,
            "--slow-clients" => o.slow_clients = args.value(&a)?,
            "--slow-seconds" => o.slow_seconds = args.value(&a)?,
            "--analysis-memory-mib" => o.analysis_memory_mib = args.value(&a)?,
            "--max-connections" => o.max_connections = args.value(&a)?,
            other => return Err(args.unknown(other)),
        }
    }
    Ok(o)
}

// ------------------------------------------------------------------ the server child

/// `oomdoc-serve-stress --serve ADDR DB TEMP MEMORY_MIB MAX_CONNECTIONS`: the real server.
fn serve_child(args: &[String]) -> ! {
    let mut config = oomdoc_server::Config {
        addr: args[0].parse().expect("addr"),
        db: oomdoc_server::store::Location::Sqlite(PathBuf::from(&args[1])),
        ..Default::default()
    };
    config.resources.temp_dir = PathBuf::from(&args[2]);
    config.resources.analysis_memory_bytes = args[3].parse::<u64>().expect("mib") * 1024 * 1024;
    config.resources.max_connections = args[4].parse().expect("connections");
    config.workers = 2;
    match oomdoc_server::serve(config) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}

struct Server {
    child: Child,
    addr: SocketAddr,
}

fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

fn start_server(dir: &Path, temp: &Path, o: &Options) -> Server {
    let addr = free_port();
    let child = Command::new(std::env::current_exe().expect("exe"))
        .arg("--serve")
        .arg(addr.to_string())
        .arg(dir.join("oomdoc.sqlite3"))
        .arg(temp)
        .arg(o.analysis_memory_mib.to_string())
        .arg(o.max_connections.to_string())
        .spawn()
        .expect("server starts");
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        if TcpStream::connect(addr).is_ok() {
            return Server { child, addr };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the server did not start");
}

fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill").arg(sig).arg(pid.to_string()).status();
}

/// Peak RSS (VmHWM) and open descriptors of a process, sampled every 20 ms.
struct Sampler {
    stop: Arc<AtomicBool>,
    peak_fds: Arc<AtomicUsize>,
    hwm_kib: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn status_kib(pid: u32, key: &str) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix(key)
                    .map(|v| v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0))
            })
        })
        .unwrap_or(0)
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let peak_fds = Arc::new(AtomicUsize::new(0));
        let hwm_kib = Arc::new(AtomicUsize::new(0));
        let (s, p, h) = (stop.clone(), peak_fds.clone(), hwm_kib.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(fd_count(pid), Ordering::Relaxed);
                h.fetch_max(status_kib(pid, "VmHWM:"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Sampler {
            stop,
            peak_fds,
            hwm_kib,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> (usize, usize) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        (
            self.peak_fds.load(Ordering::Relaxed),
            self.hwm_kib.load(Ordering::Relaxed),
        )
    }
}

// ------------------------------------------------------------------ inputs

/// An `xla.HloProto` whose buffer assignment holds one heap-simulator trace of `events`
/// empty events (each `0a 00` on the wire).
fn crafted_hlo_pb(events: usize) -> Vec<u8> {
    let mut proto = oomdoc_memory::proto::wire::Writer::default();
    proto.msg(1, |module| module.bytes(1, b"crafted"));
    proto.msg(3, |assignment| assignment.bytes(4, &[0x0a, 0x00].repeat(events)));
    proto.0
}

/// A `.tar.gz` of `n` empty files.
fn empty_files_tgz(n: usize) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut t = tar::Builder::new(gz);
    for i in 0..n {
        let mut h = tar::Header::new_ustar();
        h.set_size(0);
        h.set_mode(0o644);
        h.set_cksum();
        t.append_data(&mut h, format!("dump/{i:07}"), &b""[..])
            .expect("tar");
    }
    t.into_inner().expect("tar").finish().expect("gzip")
}

fn multipart(file_name: &str, content: &[u8]) -> (String, Vec<u8>) {
    let boundary = "----oomdoc-stress-4b1c";
    let mut body = Vec::with_capacity(content.len() + 256);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"dump\"; filename=\"{file_name}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// POST and return (status, first 300 bytes of the body, seconds).
fn post(addr: SocketAddr, path: &str, ctype: &str, body: &[u8]) -> (u16, String, f64) {
    let started = Instant::now();
    let Ok(mut s) = TcpStream::connect(addr) else {
        return (0, "connect failed".into(), 0.0);
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(600)));
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let _ = s.write_all(head.as_bytes());
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.chars().take(300).collect())
        .unwrap_or_default();
    (status, body, started.elapsed().as_secs_f64())
}

/// Upload directories in `temp`; counted as a failure when any is left (call it only
/// when none should be there).
fn dump_dirs(temp: &Path) -> usize {
    let n = oomdoc_server::tempdir::count_dump_dirs(temp);
    if n > 0 {
        FAILURES.fetch_add(1, Ordering::Relaxed);
    }
    n
}

fn mib(kib: usize) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

// ------------------------------------------------------------------ scenarios

fn crafted_dumps(server: &Server, temp: &Path, o: &Options) {
    let events = o.dump_mib * 1024 * 1024 / 2;
    let proto = crafted_hlo_pb(events);
    let (ctype, body) = multipart("module_0001.crafted.cpu_after_optimizations.hlo.pb", &proto);
    drop(proto);
    println!(
        "## crafted dump: {} events, {:.1} MiB upload, {} at once, budget {} MiB x factor {}",
        events,
        body.len() as f64 / 1048576.0,
        o.parallel_dumps,
        o.analysis_memory_mib,
        oomdoc_server::limits::DEFAULT_MEMORY_FACTOR
    );
    let body = Arc::new(body);
    let rss_before = status_kib(server.child.id(), "VmRSS:");
    let sampler = Sampler::start(server.child.id());
    let handles: Vec<_> = (0..o.parallel_dumps)
        .map(|_| {
            let (addr, ctype, body) = (server.addr, ctype.clone(), body.clone());
            std::thread::spawn(move || post(addr, "/api/v1/memory", &ctype, &body))
        })
        .collect();
    for h in handles {
        let (status, text, secs) = h.join().expect("client");
        println!(
            "  status {status} in {secs:.2} s: {}",
            text.replace('\n', " ")
        );
    }
    let (fds, hwm) = sampler.finish();
    let alive = server_alive(server);
    println!(
        "  server RSS before {}, peak (VmHWM) {}, peak fds {fds}, server alive: {alive}, upload dirs left: {}",
        mib(rss_before),
        mib(hwm),
        dump_dirs(temp)
    );
}

fn server_alive(server: &Server) -> bool {
    let alive = TcpStream::connect(server.addr).is_ok()
        && Path::new(&format!("/proc/{}", server.child.id())).exists();
    if !alive {
        FAILURES.fetch_add(1, Ordering::Relaxed);
    }
    alive
}

/// Server deaths and directories left behind: the benchmark exits 1 when there are any.
static FAILURES: AtomicUsize = AtomicUsize::new(0);

fn million_empty_files(server: &Server, temp: &Path, o: &Options) {
    let t = Instant::now();
    let tgz = empty_files_tgz(o.million);
    println!(
        "## .tar.gz of {} empty files: {:.1} MiB (built in {:.1} s)",
        o.million,
        tgz.len() as f64 / 1048576.0,
        t.elapsed().as_secs_f64()
    );
    let (ctype, body) = multipart("empty.tar.gz", &tgz);
    let (status, text, secs) = post(server.addr, "/api/v1/memory", &ctype, &body);
    println!(
        "  status {status} in {secs:.2} s: {}",
        text.replace('\n', " ")
    );
    println!("  upload dirs left: {}", dump_dirs(temp));
}

fn kill_during_analysis(dir: &Path, temp: &Path, o: &Options) {
    println!("## SIGKILL during an analysis, then restart");
    let server = start_server(dir, temp, o);
    let proto = crafted_hlo_pb(o.dump_mib * 1024 * 1024 / 2);
    let (ctype, body) = multipart("module_0001.crafted.cpu_after_optimizations.hlo.pb", &proto);
    let addr = server.addr;
    let client = std::thread::spawn(move || post(addr, "/api/v1/memory", &ctype, &body));
    let end = Instant::now() + Duration::from_secs(30);
    // Wait until the upload is on disk, then kill.
    while Instant::now() < end && !upload_complete(temp, proto.len()) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut server = server;
    signal(server.child.id(), "-KILL");
    let _ = server.child.wait();
    let _ = client.join();
    let left = oomdoc_server::tempdir::count_dump_dirs(temp);
    let restarted = start_server(dir, temp, o);
    println!(
        "  upload dirs after kill -9: {left}; after restart: {}",
        dump_dirs(temp)
    );
    stop(restarted);
}

/// Whether some upload directory holds a file of `len` bytes.
fn upload_complete(temp: &Path, len: usize) -> bool {
    let Ok(rd) = std::fs::read_dir(temp) else {
        return false;
    };
    rd.flatten().any(|d| {
        std::fs::read_dir(d.path().join("upload"))
            .map(|f| {
                f.flatten().any(|f| {
                    f.metadata()
                        .map(|m| m.len() as usize >= len)
                        .unwrap_or(false)
                })
            })
            .unwrap_or(false)
    })
}

fn stop(mut server: Server) {
    signal(server.child.id(), "-TERM");
    let _ = server.child.wait();
}

fn slow_clients(server: &Server, temp: &Path, o: &Options) {
    println!(
        "## {} slow clients for {} s (half trickle headers, half a body at 1 byte/s), max connections {}",
        o.slow_clients, o.slow_seconds, o.max_connections
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let sampler = Sampler::start(server.child.id());
    let addr = server.addr;
    let counts: Arc<Mutex<std::collections::BTreeMap<String, usize>>> = Arc::default();
    let probes: Arc<Mutex<Vec<(u16, f64)>>> = Arc::default();
    let duration = Duration::from_secs(o.slow_seconds);
    rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut tasks = Vec::new();
        for i in 0..o.slow_clients {
            let counts = counts.clone();
            tasks.push(tokio::spawn(async move {
                let outcome = async {
                    let mut s = match tokio::net::TcpStream::connect(addr).await {
                        Ok(s) => s,
                        Err(e) => return format!("connect error: {}", e.kind()),
                    };
                    let head: &[u8] = if i % 2 == 0 {
                        b"POST /api/v1/diagnose HTTP/1.1\r\nHost: localhost\r\n"
                    } else {
                        b"POST /api/v1/diagnose HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: 1000000\r\n\r\n"
                    };
                    if s.write_all(head).await.is_err() {
                        return "closed by server".into();
                    }
                    let started = Instant::now();
                    let mut buf = [0u8; 1024];
                    loop {
                        if started.elapsed() > duration {
                            return "still open at the end".into();
                        }
                        match tokio::time::timeout(Duration::from_secs(1), s.read(&mut buf)).await {
                            Ok(Ok(0)) | Ok(Err(_)) => return "closed by server".into(),
                            Ok(Ok(n)) => {
                                let text = String::from_utf8_lossy(&buf[..n]).to_string();
                                let status = text.split(' ').nth(1).unwrap_or("?").to_string();
                                return format!("answered {status}, closed");
                            }
                            Err(_) => {
                                // Trickle one byte per second.
                                if s.write_all(if i % 2 == 0 { b"X" } else { b"a" }).await.is_err() {
                                    return "closed by server".into();
                                }
                            }
                        }
                    }
                }
                .await;
                *counts.lock().unwrap().entry(outcome).or_default() += 1;
            }));
        }
        // The probe: a normal request every 250 ms.
        let probes2 = probes.clone();
        let probe = tokio::task::spawn_blocking(move || {
            let end = Instant::now() + duration;
            while Instant::now() < end {
                let t = Instant::now();
                let (status, _, _) = get(addr, "/healthz");
                probes2.lock().unwrap().push((status, t.elapsed().as_secs_f64()));
                std::thread::sleep(Duration::from_millis(250));
            }
        });
        for t in tasks {
            let _ = t.await;
        }
        let _ = probe.await;
    });
    let (fds, hwm) = sampler.finish();
    for (outcome, n) in counts.lock().unwrap().iter() {
        println!("  {n:>6}  {outcome}");
    }
    let probes = probes.lock().unwrap();
    let mut by_status: std::collections::BTreeMap<u16, usize> = Default::default();
    for (s, _) in probes.iter() {
        *by_status.entry(*s).or_default() += 1;
    }
    let worst = probes.iter().map(|p| p.1).fold(0.0, f64::max);
    println!(
        "  probe GET /healthz every 250 ms: {by_status:?} (status: count), slowest {:.0} ms",
        worst * 1e3
    );
    println!(
        "  server peak fds {fds}, peak RSS (VmHWM) {}, alive: {}, upload dirs left: {}",
        mib(hwm),
        server_alive(server),
        dump_dirs(temp)
    );
    println!(
        "  fds now (after the clients left): {}",
        fd_count(server.child.id())
    );
}

fn get(addr: SocketAddr, path: &str) -> (u16, String, f64) {
    let started = Instant::now();
    let Ok(mut s) = TcpStream::connect(addr) else {
        return (0, String::new(), 0.0);
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let _ = s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    (
        text.split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0),
        String::new(),
        started.elapsed().as_secs_f64(),
    )
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--serve") {
        serve_child(&argv[2..]);
    }
    let o = common::or_exit("oomdoc-serve-stress", parse_args());
    let nofile = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|l| l.starts_with("Max open files"))
                .map(|l| l.split_whitespace().nth(3).unwrap_or("?").to_string())
        })
        .unwrap_or_default();
    println!(
        "open-file limit of this process: {nofile} (the clients need one per slow connection)"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let temp = dir.path().join("tmp");
    std::fs::create_dir(&temp).expect("tmp");
    let server = start_server(dir.path(), &temp, &o);
    println!(
        "server pid {}, {} open fds, RSS {}",
        server.child.id(),
        fd_count(server.child.id()),
        mib(status_kib(server.child.id(), "VmRSS:"))
    );
    if o.parallel_dumps > 0 {
        crafted_dumps(&server, &temp, &o);
    }
    if o.million > 0 {
        million_empty_files(&server, &temp, &o);
    }
    if o.slow_clients > 0 {
        slow_clients(&server, &temp, &o);
    }
    let hwm = status_kib(server.child.id(), "VmHWM:");
    stop(server);
    println!(
        "server stopped; peak RSS over the whole run {}; upload dirs left: {}",
        mib(hwm),
        dump_dirs(&temp)
    );
    if o.parallel_dumps > 0 {
        kill_during_analysis(dir.path(), &temp, &o);
    }
    let files_left = count_files(&temp);
    println!("files left in the temp dir at the end: {files_left}");
    let failures = FAILURES.load(Ordering::Relaxed) + usize::from(files_left > 0);
    if failures > 0 {
        println!("FAIL: {failures} check(s) failed (a server died or files were left)");
        std::process::exit(1);
    }
    println!("OK: the server stayed up and left no upload directory behind");
}

fn count_files(p: &Path) -> usize {
    std::fs::read_dir(p)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    if e.path().is_dir() {
                        1 + count_files(&e.path())
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}
