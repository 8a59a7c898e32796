//! The server's findings of the 2026-11-26 reliability round, at small scale: compressed
//! uploads and bodies within the memory budget and the log limit (S15–S21), the Host
//! check against DNS rebinding (S9), and 422 messages without the server's paths (S18).

mod common;

use common::{multipart, TestServer};
use oomdoc_server::Engines;
use std::io::Write;

/// A request whose `Host` header is the one in `headers` (the common helper sends the
/// server's address).
fn request_with_host(addr: std::net::SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> common::Resp {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    common::read_response(&mut s)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// S18–S21: a `.hlo.pb.gz` that expands ~1000× is decompressed only as far as the
/// request's reservation (its bytes × the memory factor), not 200× its size.
#[test]
fn a_gzip_dump_expands_only_within_its_reservation() {
    let temp = tempfile::tempdir().unwrap();
    let s = TestServer::start_with(Engines::default(), |c| c.resources.temp_dir = temp.path().to_path_buf());
    let bomb = gzip(&vec![0u8; 64 << 20]);
    assert!(bomb.len() < 128 << 10, "{}", bomb.len());
    let (ct, body) = multipart(&[("dump", Some("m.hlo.pb.gz"), &bomb)]);
    let r = s.post("/api/v1/memory", &ct, &body);
    let msg = r.json()["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(r.status == 413 || r.status == 422, "{} {}", r.status, r.text());
    // The refusal names a limit within the reservation (64 KiB × 8 + the decoder's 16 MiB
    // slack), not the 200× ratio (12.8 MiB + 64 MiB).
    let limit: u64 = msg.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).max().unwrap_or(0);
    assert!(limit <= 32 << 20, "{msg}");
    // Never the server's own paths.
    assert!(!msg.contains(temp.path().to_str().unwrap()) && !msg.contains("oomdoc-dump-"), "{msg}");
}

/// S15–S17: a compressed log body is held to `--max-log-mib` once decompressed, not only
/// as sent (a 337 KB zstd body was scanned as 10 GiB).
#[test]
fn a_compressed_log_body_is_held_to_the_log_limit_once_decompressed() {
    let s = TestServer::start_with(Engines::default(), |c| c.limits.log_bytes = 1 << 20);
    let line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB.\n";
    let big = gzip(line.repeat((8 << 20) / line.len()).as_bytes());
    assert!(big.len() < 1 << 20);
    let r = s.post("/api/v1/diagnose", "text/plain", &big);
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.text().contains("decompresses to more than 1048576 bytes"), "{}", r.text());
    // Within the limit once decompressed: diagnosed as before.
    let small = gzip(line.as_bytes());
    let r = s.post("/api/v1/diagnose", "text/plain", &small);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["findings"][0]["id"], "pytorch.cuda-oom");
}

/// S9: DNS rebinding. A page whose name was re-pointed at 127.0.0.1 sends same-origin
/// requests with its own name in `Host`: refused, on a default server and with
/// `--public-origin`; loopback names and the configured names still work.
#[test]
fn requests_for_another_host_name_are_refused() {
    for public in [false, true] {
        let s = TestServer::start_with(Engines::default(), |c| {
            if public {
                c.origin_policy.public_origins = vec!["https://oomdoc.example.internal".into()];
            }
        });
        let port = s.addr().port();
        let evil = format!("attacker.example:{port}");
        let headers = [("Host", evil.as_str()), ("Origin", "http://attacker.example"), ("Sec-Fetch-Site", "same-origin"), ("Content-Type", "application/json")];
        let body = br#"{"entry":"pytorch.cuda-oom","fix":"expandable-segments","outcome":"worked"}"#;
        let r = request_with_host(s.addr(), "POST", "/api/v1/feedback", &headers, body);
        assert_eq!(r.status, 403, "{}", r.text());
        assert!(r.text().contains("--allowed-host attacker.example"), "{}", r.text());
        let r = request_with_host(s.addr(), "GET", "/healthz", &[("Host", evil.as_str())], b"");
        assert_eq!(r.status, 403);
        for ok in [format!("localhost:{port}"), format!("127.0.0.1:{port}"), format!("[::1]:{port}")] {
            let r = request_with_host(s.addr(), "GET", "/healthz", &[("Host", ok.as_str())], b"");
            assert_eq!(r.status, 200, "{ok}: {}", r.text());
        }
        if public {
            let r = request_with_host(s.addr(), "GET", "/healthz", &[("Host", "oomdoc.example.internal")], b"");
            assert_eq!(r.status, 200);
        }
    }
    let s = TestServer::start_with(Engines::default(), |c| c.origin_policy.allowed_hosts = vec!["devbox".into()]);
    assert_eq!(request_with_host(s.addr(), "GET", "/healthz", &[("Host", "devbox:1")], b"").status, 200);
}

fn urlencode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

/// C5: the /plan page renders the plan as the CLI does (verdict, table, fix) and its form
/// starts with an example spec.
#[test]
fn the_plan_page_renders_like_the_cli() {
    let s = TestServer::start(Engines::default());
    let form = s.get("/plan").text();
    assert!(form.contains("chip = &quot;v5e&quot;") || form.contains("chip = \"v5e\""), "an example spec in the form: {form}");
    assert!(form.contains("[[inputs]]"), "{form}");
    // The example itself: does not fit v5e, with the fix.
    let spec = "chip = \"v5e\"\ngrid = [64, 64]\n[[inputs]]\nname = \"a\"\nshape = [8192, 8192]\ndtype = \"float32\"\nblock = [128, 8192]\n[[inputs]]\nname = \"b\"\nshape = [8192, 8192]\ndtype = \"float32\"\nblock = [8192, 128]\n[[outputs]]\nname = \"c\"\nshape = [8192, 8192]\ndtype = \"float32\"\nblock = [128, 128]\n";
    let r = s.post_form("/plan", "application/x-www-form-urlencoded", format!("kind=pallas&chip=&spec={}", urlencode(spec)).as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let page = r.text();
    assert!(page.contains("Does not fit"), "{page}");
    assert!(page.contains("<table class=\"plan\""), "{page}");
    assert!(page.contains("vmem_limit_bytes=18874368"), "{page}");
    // Triton configs: how many fit, and a row per config.
    let configs = r#"[{"BLOCK_M":128,"BLOCK_N":128,"BLOCK_K":64,"num_stages":5,"num_warps":8},{"BLOCK_M":64,"BLOCK_N":64,"BLOCK_K":32,"num_stages":2,"num_warps":4}]"#;
    let r = s.post_form("/plan", "application/x-www-form-urlencoded", format!("kind=triton&chip=sm_86&spec={}", urlencode(configs)).as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    let page = r.text();
    assert!(page.contains("1 of 2 configs fit"), "{page}");
}

/// P5: the diagnosis page lists sizes in reading order (requested first), with words.
#[test]
fn the_sizes_table_reads_in_order() {
    let s = TestServer::start(Engines::default());
    let log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 1.66 GiB is free. Of the allocated memory 70.09 GiB is allocated by PyTorch, and 6.84 GiB is reserved by PyTorch but unallocated.";
    let (ct, body) = multipart(&[("log", None, log.as_bytes())]);
    let r = s.post_form("/", &ct, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let page = r.text();
    let at = |label: &str| page.find(&format!(">{label}</th>")).unwrap_or_else(|| panic!("{label} in {page}"));
    assert!(at("requested") < at("free") && at("free") < at("total") && at("total") < at("reserved but unallocated"), "{page}");
}
