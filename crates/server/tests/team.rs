//! The team server over HTTP: job-failure ingestion with tokens (issue 24), the fleet
//! summary and its exports, the feedback rules, and storage failures the operator must
//! see (reliability report 2026-11-26: S8, S11).

mod common;

use common::*;
use oomdoc_server::{
    store::{self, FeedbackPolicy, Location},
    Config, Engines,
};
use serde_json::{json, Value};

const TRAIN_LOG: &str = include_str!("../../../examples/train.log");

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

/// Create a token named `name` in the config's database (before the server starts).
fn create_token(config: &Config, name: &str) -> String {
    block_on(async {
        let s = store::open(&config.db).await.unwrap();
        let secret = store::new_token_secret().unwrap();
        s.create_token(name, &store::token_hash(&secret)).await.unwrap();
        secret
    })
}

fn start(tweak: impl FnOnce(&mut Config)) -> (TestServer, String) {
    let mut token = String::new();
    let s = TestServer::start_with(Engines::default(), |c| {
        tweak(c);
        token = create_token(c, "test");
    });
    (s, token)
}

fn post(s: &TestServer, token: &str, path: &str, ctype: &str, body: &[u8]) -> Resp {
    let auth = format!("Bearer {token}");
    request(s.addr(), "POST", path, &[("Authorization", &auth), ("Content-Type", ctype)], body)
}

fn get(s: &TestServer, token: Option<&str>, path: &str) -> Resp {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth.as_deref().map(|a| ("Authorization", a)).into_iter().collect();
    request(s.addr(), "GET", path, &headers, b"")
}

fn diagnosis_of(log: &str) -> Value {
    (Engines::default().diagnose)(log.as_bytes(), oomdoc_kb::Lang::En).unwrap()
}

#[test]
fn reports_need_a_live_token() {
    let (s, token) = start(|_| {});
    let body = json!({"report": diagnosis_of(TRAIN_LOG), "labels": {}}).to_string();
    let r = s.post("/api/v1/reports", "application/json", body.as_bytes());
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("oomdoc serve token create"));
    assert_eq!(post(&s, "oomdoc_wrong", "/api/v1/reports", "application/json", body.as_bytes()).status, 401);
    assert_eq!(post(&s, &token, "/api/v1/reports", "application/json", body.as_bytes()).status, 201);
    // Revoked (by the CLI's store call, against the running server's database): refused at once.
    block_on(async {
        let db = store::open(&Location::Sqlite(s.dir.path().join("oomdoc.sqlite3"))).await.unwrap();
        assert!(db.revoke_token("test").await.unwrap());
    });
    assert_eq!(post(&s, &token, "/api/v1/reports", "application/json", body.as_bytes()).status, 401);
}

#[test]
fn a_job_report_a_raw_log_and_shipped_lines_are_stored_once_each() {
    let (s, token) = start(|_| {});
    // 1. A diagnosis made by the job (oomdoc run --post), with labels and a report_id.
    let mut report = diagnosis_of(TRAIN_LOG);
    report["exit_status"] = json!(1);
    let body = json!({
        "report_id": "slurm-4242-0",
        "labels": {"job_id": "4242", "cluster": "a100-east", "host": "gpu-node-7", "rank": "0", "user": "ana",
                   "image": "nvcr.io/nvidia/pytorch:24.10", "versions": {"torch": "2.5.1"}, "extra": {"team": "vision"}},
        "report": report,
    });
    let r = post(&s, &token, "/api/v1/reports", "application/json", body.to_string().as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!((r.json()["stored"].as_u64(), r.json()["reports"][0]["entry"].as_str()), (Some(1), Some("pytorch.cuda-oom")));
    let r = post(&s, &token, "/api/v1/reports", "application/json", body.to_string().as_bytes());
    assert_eq!((r.status, r.json()["duplicates"].as_u64()), (200, Some(1)), "a retry is stored once");

    // 2. A raw log, diagnosed by the server, labels in the query string.
    let r = post(&s, &token, "/api/v1/reports?job_id=4243&host=gpu-node-8&version.torch=2.6.0&exit_status=1", "text/plain", TRAIN_LOG.as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());

    // 3. Vector-style NDJSON lines from two pods: the failing one becomes a report, the
    //    healthy one is counted as without findings; a retried batch is stored once.
    let mut ndjson = String::new();
    for line in TRAIN_LOG.lines() {
        ndjson.push_str(&json!({"message": line, "host": "gpu-node-9", "kubernetes": {"pod_name": "train-abc", "namespace_name": "ml"}}).to_string());
        ndjson.push('\n');
    }
    ndjson.push_str(&json!({"message": "epoch 3 loss 0.12", "kubernetes": {"pod_name": "healthy-1"}}).to_string());
    ndjson.push('\n');
    let r = post(&s, &token, "/api/v1/reports", "application/x-ndjson", ndjson.as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!((r.json()["stored"].as_u64(), r.json()["without_findings"].as_u64()), (Some(1), Some(1)));
    let r = post(&s, &token, "/api/v1/reports", "application/x-ndjson", ndjson.as_bytes());
    assert_eq!((r.status, r.json()["duplicates"].as_u64()), (200, Some(1)));

    // 4. Fluent Bit's json_lines (`log` key), as a JSON array this time.
    let lines: Vec<Value> = TRAIN_LOG.lines().map(|l| json!({"date": 1.0, "log": l, "hostname": "gpu-node-10"})).collect();
    let r = post(&s, &token, "/api/v1/reports", "application/json", Value::Array(lines).to_string().as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());

    // Bad records are clear 4xx, never stored.
    for bad in [r#"{"report": {"no": "findings"}}"#, r#"{"labels": {"host": "a\u001b[2J"}, "log": "x"}"#, "[1, 2]", r#"{"nothing": 1}"#] {
        let r = post(&s, &token, "/api/v1/reports", "application/json", bad.as_bytes());
        assert!(r.status == 422 || r.status == 400, "{bad}: {} {}", r.status, r.text());
    }

    // The fleet adds it up: 4 failures, all memory failures, by host, by version.
    let f = get(&s, None, "/api/v1/fleet").json();
    assert_eq!((f["reports"].as_u64(), f["memory_failures"].as_u64()), (Some(4), Some(4)), "{f}");
    assert_eq!(f["by_entry"][0]["entry"], "pytorch.cuda-oom");
    assert_eq!(f["by_entry"][0]["reports"], 4);
    // The fix category comes from the report's first fix (the contract's `category`).
    assert!(f["by_entry"][0]["category"].is_string(), "{}", f["by_entry"][0]);
    assert_eq!(f["by_category"][0]["key"], f["by_entry"][0]["category"]);
    assert!(f["fixes"]["pytorch.cuda-oom"].is_array());
    let versions: Vec<_> = f["by_version"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap().to_string()).collect();
    assert_eq!(versions, ["2.5.1", "2.6.0"]);
    let f = get(&s, None, "/api/v1/fleet?host=gpu-node-7&version=torch%3D2.5.1").json();
    assert_eq!(f["reports"], 1);
    assert_eq!(f["by_job"][0]["key"], "4242");
    let pods = get(&s, None, "/api/v1/reports?label=pod%3Dtrain-abc").json();
    assert_eq!(pods["reports"].as_array().unwrap().len(), 1);
    assert_eq!(pods["reports"][0]["labels"]["extra"]["namespace"], "ml");
    // One report with its diagnosis.
    let id = pods["reports"][0]["id"].as_i64().unwrap();
    let one = get(&s, None, &format!("/api/v1/reports/{id}")).json();
    assert_eq!(one["report"]["findings"][0]["id"], "pytorch.cuda-oom");
    // CSV export of the same selection.
    let csv = get(&s, None, "/api/v1/reports?cluster=a100-east&format=csv");
    assert!(csv.header("content-type").unwrap().starts_with("text/csv"));
    let text = csv.text();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.lines().nth(1).unwrap().contains("4242,a100-east,gpu-node-7,0,ana"), "{text}");
    assert_eq!(get(&s, None, "/api/v1/fleet?since=yesterday").status, 422);
    assert_eq!(get(&s, None, "/api/v1/fleet?bogus=1").status, 400);
    // The team page shows it, with the filters in its links.
    let page = get(&s, None, "/team?cluster=a100-east").text();
    assert!(page.contains("pytorch.cuda-oom") && page.contains("value=\"a100-east\""), "{page}");
}

#[test]
fn reads_can_require_a_token() {
    let (s, token) = start(|c| c.require_token_for_reads = true);
    for path in ["/team", "/api/v1/fleet", "/api/v1/reports", "/api/v1/reports/1"] {
        assert_eq!(get(&s, None, path).status, 401, "{path}");
    }
    assert_eq!(get(&s, Some(&token), "/team").status, 200);
    assert_eq!(get(&s, Some(&token), "/api/v1/fleet").status, 200);
    // The knowledge base and its measured fixes stay public.
    assert_eq!(get(&s, None, "/kb").status, 200);
}

/// Reliability report S8: 2,000 identical reports from one client made a fix "100%".
#[test]
fn feedback_from_one_client_is_deduplicated_and_rate_limited() {
    let s = TestServer::start_with(Engines::default(), |c| {
        c.feedback = FeedbackPolicy { max_per_client_per_hour: 5, ..FeedbackPolicy::default() };
    });
    let e = oomdoc_kb::KnowledgeBase::get().by_id("pytorch.cuda-oom").unwrap();
    let fix = e.fixes[0].id.clone();
    let body = |note: &str, rid: Option<&str>| json!({"entry": e.id, "fix": fix, "outcome": "worked", "note": note, "report_id": rid});
    let first = s.post_json("/api/v1/feedback", &body("same", None));
    assert_eq!(first.status, 201);
    for _ in 0..50 {
        let r = s.post_json("/api/v1/feedback", &body("same", None));
        assert_eq!((r.status, r.json()["duplicate"].as_bool()), (200, Some(true)));
        assert_eq!(r.json()["id"], first.json()["id"]);
    }
    // A client-chosen report_id: the retry answers the first report.
    let a = s.post_json("/api/v1/feedback", &body("retry", Some("9b2f0c4e-uuid")));
    let b = s.post_json("/api/v1/feedback", &body("retry, changed", Some("9b2f0c4e-uuid")));
    assert_eq!((a.status, b.status), (201, 200));
    assert_eq!(a.json()["id"], b.json()["id"]);
    for i in 0..3 {
        assert_eq!(s.post_json("/api/v1/feedback", &body(&format!("n{i}"), None)).status, 201);
    }
    let r = s.post_json("/api/v1/feedback", &body("one too many", None));
    assert_eq!(r.status, 429, "{}", r.text());
    assert!(r.header("retry-after").is_some());
    let measured = s.get(&format!("/api/v1/kb/{}/outcomes", e.id)).json();
    assert_eq!(measured["fixes"][0]["reports"], 5, "{measured}");
}

/// Reliability report S11: the database deleted under a running server acknowledged
/// writes that were gone at restart, and `/healthz` said ok.
#[test]
fn a_deleted_database_refuses_writes_and_fails_healthz() {
    let s = TestServer::start(Engines::default());
    let e = oomdoc_kb::KnowledgeBase::get().by_id("pytorch.cuda-oom").unwrap();
    let body = json!({"entry": e.id, "fix": e.fixes[0].id, "outcome": "worked"});
    assert_eq!(s.post_json("/api/v1/feedback", &body).status, 201);
    assert_eq!(s.get("/healthz").status, 200);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(s.dir.path().join(format!("oomdoc.sqlite3{suffix}")));
    }
    let r = s.post_json("/api/v1/feedback", &json!({"entry": e.id, "fix": e.fixes[0].id, "outcome": "did-not-work"}));
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("deleted or replaced"), "{}", r.text());
    let r = s.post("/api/v1/diagnose?store_log=1", "text/plain", TRAIN_LOG.as_bytes());
    assert_eq!(r.status, 503);
    let h = s.get("/healthz");
    assert_eq!(h.status, 503, "{}", h.text());
}

#[test]
fn database_urls_this_build_cannot_serve_are_refused_at_start() {
    let config = Config { addr: "127.0.0.1:0".parse().unwrap(), db: Location::Postgres("postgres://nobody@127.0.0.1:1/x".into()), ..Default::default() };
    let e = oomdoc_server::BackgroundServer::start(config, Engines::default()).err().unwrap();
    assert!(e.contains("127.0.0.1:1"), "{e}");
    assert!(Location::parse("mysql://h/db").unwrap_err().contains("mysql:"));
}
