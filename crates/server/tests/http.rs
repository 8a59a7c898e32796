//! Integration tests: the real server on a loopback port, spoken to over HTTP.

mod common;

use common::*;
use oomdoc_kb::{KnowledgeBase, Lang};
use oomdoc_server::{
    engines::{EngineError, MemoryReport, PlanInput},
    Engines,
};
use serde_json::{json, Value};
use std::path::Path;

/// Stands in for the diagnose engine: one finding on the first entry with a fix,
/// whose culprit and cause echo the log's first line (so hostile logs reach the page).
fn fake_diagnose(log: &[u8], lang: Lang) -> Result<Value, EngineError> {
    let text = String::from_utf8_lossy(log);
    if text.contains("PANIC-NOW") {
        panic!("the fake engine panics on purpose");
    }
    if text.contains("SLEEP-NOW") {
        std::thread::sleep(std::time::Duration::from_secs(3));
    }
    if text.contains("NOTHING-HERE") {
        return Ok(json!({ "findings": [] }));
    }
    let e = entry_with_fix();
    if text.contains("MANY-FINDINGS") {
        // As a log of distinct failures gives: the engine's 5,000, each with its excerpt.
        let findings: Vec<Value> = (0..5000)
            .map(|i| json!({ "id": e.id, "kind": "oom", "title": e.title.get(lang), "line": i + 1,
                             "excerpt": format!("failure {i}: {}", "x".repeat(8000)),
                             "fixes": [{ "id": e.fixes[0].id, "title": e.fixes[0].title.get(lang) }] }))
            .collect();
        return Ok(json!({ "findings": findings }));
    }
    let first_line: String = text.lines().next().unwrap_or("").chars().take(200_000).collect();
    Ok(json!({ "findings": [{
        "id": e.id, "code": e.code, "kind": "oom", "title": e.title.get(lang),
        "platform": "tpu", "phase": "compile", "memory_space": "vmem",
        "sizes": { "used": 39027261u64, "limit": 33554432u64 },
        "line": 1, "end_line": 2,
        "culprit": { "op": first_line },
        "cause": format!("cause: {first_line}"),
        "fixes": [{ "id": e.fixes[0].id, "category": e.fixes[0].category, "title": e.fixes[0].title.get(lang), "detail": null,
                    "code": "compiler_params=pltpu.CompilerParams(vmem_limit_bytes=40894464)", "code_lang": "python",
                    "versions": "jax >= 0.4.36", "references": [{ "title": "docs", "url": "https://example.com/docs" }] }],
        "dead_ends": [{ "id": "d", "category": "release-other-memory", "action": "Empty the cache", "why": "it is a compile-time failure" }],
        "references": [{ "title": "evil", "url": "javascript:alert(1)" }],
    }]}))
}

fn fake_engines() -> Engines {
    Engines { diagnose: fake_diagnose, ..Engines::default() }
}

#[test]
fn healthz_and_database_created_and_migrated() {
    let s = TestServer::start(Engines::default());
    let r = s.get("/healthz");
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j["status"], "ok");
    assert_eq!(j["kb_entries"].as_u64().unwrap() as usize, KnowledgeBase::get().entries().len());
    assert!(r.header("x-request-id").is_some());
    let db = rusqlite::Connection::open(s.dir.path().join("oomdoc.sqlite3")).unwrap();
    let version: i64 = db.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert!(version >= 1);
    let mode: String = db.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn kb_list_filters_and_searches() {
    let s = TestServer::start(Engines::default());
    let kb = KnowledgeBase::get();
    let all = s.get("/api/v1/kb").json();
    assert_eq!(all.as_array().unwrap().len(), kb.entries().len());

    let page = s.get("/kb");
    assert_eq!(page.status, 200);
    for e in kb.entries() {
        assert!(page.text().contains(&format!("href=\"/kb/{}\"", e.id)), "{} missing from /kb", e.id);
    }
    let e = entry_with_fix();
    let platform = serde_json::to_value(e.platform).unwrap();
    let platform = platform.as_str().unwrap();
    let on_platform = s.get(&format!("/api/v1/kb?platform={platform}")).json();
    let ids: Vec<&str> = on_platform.as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&e.id.as_str()));
    for row in on_platform.as_array().unwrap() {
        let entry = KnowledgeBase::get().by_id(row["id"].as_str().unwrap()).unwrap();
        let on = std::iter::once(&entry.platform).chain(&entry.also_platforms).any(|p| serde_json::to_value(p).unwrap() == platform);
        assert!(on, "{} is not on {platform}", entry.id);
    }
    // Rows are `oomdoc explain --list --format json` rows, the title in the language asked for.
    let row = all.as_array().unwrap().iter().find(|x| x["id"] == e.id.as_str()).unwrap();
    assert_eq!(row["title"], e.title.en.as_str());
    let zh = s.get("/api/v1/kb?lang=zh").json();
    assert!(zh.as_array().unwrap().iter().any(|x| x["title"] == e.title.zh.as_str()));

    let phase = serde_json::to_value(e.phase).unwrap();
    let by_phase = s.get(&format!("/api/v1/kb?phase={}", phase.as_str().unwrap())).json();
    assert!(by_phase.as_array().unwrap().iter().all(|x| x["phase"] == phase));

    if let Some(ms) = &e.memory_space {
        let by_space = s.get(&format!("/kb?memory_space={ms}")).text();
        assert!(by_space.contains(&format!("href=\"/kb/{}\"", e.id)));
    }
    // Text search over id and title, case-insensitive.
    let word = e.id.split('.').nth(1).unwrap().to_uppercase();
    let found = s.get(&format!("/api/v1/kb?q={word}")).json();
    assert!(found.as_array().unwrap().iter().any(|x| x["id"] == e.id.as_str()));
    let none = s.get("/api/v1/kb?q=zzzz-no-such-words-zzzz").json();
    assert_eq!(none.as_array().unwrap().len(), 0);
    assert!(s.get("/kb?q=zzzz-no-such-words-zzzz").text().contains("No entry matches"));
}

#[test]
fn entry_page_json_markdown_and_chinese() {
    let s = TestServer::start(Engines::default());
    let e = entry_with_fix();
    let page = s.get(&format!("/kb/{}", e.id));
    assert_eq!(page.status, 200);
    let html = page.text();
    assert!(html.contains(&escape(&e.title.en)), "English title");
    assert!(html.contains(&format!("href=\"/kb/{}.json\"", e.id)));
    assert!(html.contains(&format!("href=\"/kb/{}.md\"", e.id)));
    assert!(html.contains(&format!("href=\"/kb/{}?lang=zh\"", e.id)) && html.contains("中文"));
    for f in &e.fixes {
        assert!(html.contains(&format!("id=\"fix-{}\"", f.id)));
    }
    if let Some(code) = &e.code {
        assert!(html.contains(code.as_str()));
    }
    assert!(page.header("content-security-policy").unwrap().contains("script-src 'self'"));

    let zh = s.get(&format!("/kb/{}?lang=zh", e.id)).text();
    assert!(zh.contains(&escape(&e.title.zh)), "Chinese title");
    assert!(zh.contains("修复方法"));

    // The JSON is the entry exactly as the knowledge base serializes it, on both URLs.
    let expected = serde_json::to_value(e).unwrap();
    assert_eq!(s.get(&format!("/kb/{}.json", e.id)).json(), expected);
    assert_eq!(s.get(&format!("/api/v1/kb/{}", e.id)).json(), expected);

    // The Markdown is `oomdoc explain` text.
    let md = s.get(&format!("/kb/{}.md", e.id));
    assert!(md.header("content-type").unwrap().starts_with("text/markdown"));
    assert_eq!(md.text(), oomdoc_kb::to_markdown(e, Lang::En));
    assert_eq!(s.get(&format!("/kb/{}.md?lang=zh", e.id)).text(), oomdoc_kb::to_markdown(e, Lang::Zh));

    // Vendor codes redirect to the entry's id.
    if let Some(code) = KnowledgeBase::get().entries().iter().find_map(|e| e.code.clone().map(|c| (c, e.id.clone()))) {
        let r = s.get(&format!("/kb/{}.json", code.0));
        assert_eq!(r.status, 308);
        assert_eq!(r.header("location").unwrap(), format!("/kb/{}.json", code.1));
    }
    let missing = s.get("/kb/no.such-entry");
    assert_eq!(missing.status, 404);
    assert!(missing.text().contains("no knowledge-base entry"));
    assert!(missing.text().contains(missing.header("x-request-id").unwrap()));
    let missing = s.get("/api/v1/kb/no.such-entry");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"]["request_id"], missing.header("x-request-id").unwrap());
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn feedback(s: &TestServer, fix: &str, outcome: &str, hardware: Option<&str>) -> Resp {
    let e = entry_with_fix();
    let mut body = json!({ "entry": e.id, "fix": fix, "outcome": outcome, "platform": "tpu" });
    if let Some(h) = hardware {
        body["hardware"] = json!(h);
    }
    s.post_json("/api/v1/feedback", &body)
}

#[test]
fn feedback_counts_and_wilson_rate_from_five_reports() {
    let s = TestServer::start(Engines::default());
    let e = entry_with_fix();
    let fix = e.fixes[0].id.as_str();

    for (i, outcome) in ["worked", "worked", "did-not-work", "worked"].iter().enumerate() {
        let r = feedback(&s, fix, outcome, Some(if i % 2 == 0 { "TPU v5e" } else { "TPU v4" }));
        assert_eq!(r.status, 201, "{}", r.text());
        assert_eq!(r.json()["report"]["outcome"], *outcome);
    }
    let o = s.get(&format!("/api/v1/kb/{}/outcomes", e.id)).json();
    assert_eq!(o["fixes"].as_array().unwrap().len(), e.fixes.len());
    let f = &o["fixes"][0];
    assert_eq!((f["reports"].as_u64(), f["worked"].as_u64()), (Some(4), Some(3)));
    assert!(f["rate"].is_null(), "no rate below 5 reports");
    let page = s.get(&format!("/kb/{}", e.id)).text();
    assert!(page.contains("4 reports") && !page.contains("95% CI"));

    let r = feedback(&s, fix, "worked", None);
    assert_eq!(r.status, 201);
    assert_eq!(r.json()["measured"]["reports"], 5);
    let o = s.get(&format!("/api/v1/kb/{}/outcomes", e.id)).json();
    let rate = &o["fixes"][0]["rate"];
    // 4 of 5: Wilson 95% interval 0.3755 .. 0.9638.
    assert!((rate["estimate"].as_f64().unwrap() - 0.8).abs() < 1e-9);
    assert!((rate["low"].as_f64().unwrap() - 0.3755).abs() < 5e-4, "{rate}");
    assert!((rate["high"].as_f64().unwrap() - 0.9638).abs() < 5e-4, "{rate}");
    assert_eq!(o["fixes"][0]["by_hardware"].as_array().unwrap().len(), 3);
    let page = s.get(&format!("/kb/{}", e.id)).text();
    assert!(page.contains("5 reports") && page.contains("80%") && page.contains("95% CI 38%–96%"), "{page}");
}

#[test]
fn feedback_is_validated_and_takes_no_log() {
    let s = TestServer::start(Engines::default());
    let e = entry_with_fix();
    let fix = e.fixes[0].id.as_str();
    let cases = [
        (json!({ "entry": e.id, "fix": fix, "outcome": "maybe" }), 422, "outcome"),
        (json!({ "entry": "no.such", "fix": fix, "outcome": "worked" }), 422, "no knowledge-base entry"),
        (json!({ "entry": e.id, "fix": "no-such-fix", "outcome": "worked" }), 422, "has no fix"),
        (json!({ "entry": e.id, "fix": fix, "outcome": "worked", "log": "RESOURCE_EXHAUSTED" }), 422, "unknown field"),
        (json!({ "entry": e.id, "fix": fix, "outcome": "worked", "note": "x".repeat(501) }), 422, "longer than"),
        (json!({ "entry": e.id }), 422, "missing field"),
    ];
    for (body, status, says) in cases {
        let r = s.post_json("/api/v1/feedback", &body);
        assert_eq!(r.status, status, "{body}: {}", r.text());
        let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains(says), "{body}: {msg}");
    }
    let r = s.post("/api/v1/feedback", "application/json", b"{not json");
    assert_eq!(r.status, 400, "{}", r.text());
    let r = s.post("/api/v1/feedback", "text/plain", br#"{"entry":"x"}"#);
    assert_eq!(r.status, 415);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("application/json"));
    // Nothing above was stored.
    let o = s.get(&format!("/api/v1/kb/{}/outcomes", e.id)).json();
    assert_eq!(o["fixes"][0]["reports"], 0);
}

#[test]
fn feedback_form_without_javascript_redirects_to_the_entry() {
    let s = TestServer::start(Engines::default());
    let e = entry_with_fix();
    let fix = &e.fixes[0].id;
    let body = format!("entry={}&fix={}&outcome=worked&platform=tpu&hardware=TPU+v5e&version=&note=&lang=zh", e.id, fix);
    let r = s.post_form("/feedback", "application/x-www-form-urlencoded", body.as_bytes());
    assert_eq!(r.status, 303, "{}", r.text());
    let to = r.header("location").unwrap().to_string();
    assert_eq!(to, format!("/kb/{}?thanks={fix}&lang=zh#fix-{fix}", e.id));
    let page = s.get(to.split('#').next().unwrap()).text();
    assert!(page.contains("谢谢"), "thanks shown");
    assert!(page.contains("1 条反馈"));
}

#[test]
fn diagnose_api_and_page_with_an_engine() {
    let s = TestServer::start(fake_engines());
    let e = entry_with_fix();
    let log = b"RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem\nmore";
    let r = s.post("/api/v1/diagnose", "text/plain", log);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json(), fake_diagnose(log, Lang::En).unwrap(), "the API returns the engine's JSON unchanged");

    let (ctype, body) = multipart(&[("log", None, log)]);
    let page = s.post_form("/", &ctype, &body);
    assert_eq!(page.status, 200, "{}", page.text());
    let html = page.text();
    assert!(html.contains(&format!("href=\"/kb/{}\"", e.id)), "finding links to its entry");
    assert!(html.contains("37.22 MiB") || html.contains("39027261"), "sizes shown");
    assert!(html.contains("vmem_limit_bytes=40894464"), "fix code shown");
    assert!(html.contains("Empty the cache"), "dead end shown");
    assert!(html.contains(&format!("name=\"fix\" value=\"{}\"", e.fixes[0].id)), "feedback buttons on the fix");
    assert!(!html.contains("href=\"javascript:"), "only web URLs become links");

    // An uploaded file wins over the text box; `lang` reaches the engine.
    let (ctype, body) = multipart(&[("log", None, b""), ("file", Some("job.log"), log), ("lang", None, b"zh")]);
    let html = s.post_form("/", &ctype, &body).text();
    assert!(html.contains(&escape(&e.title.zh)));
    let r = s.post("/api/v1/diagnose?lang=zh", "text/plain", log);
    assert_eq!(r.json()["findings"][0]["title"], e.title.zh.as_str());

    let (ctype, body) = multipart(&[("log", None, b"NOTHING-HERE")]);
    assert!(s.post_form("/", &ctype, &body).text().contains("No memory failure found"));
    let (ctype, body) = multipart(&[("log", None, b"  \n")]);
    assert_eq!(s.post_form("/", &ctype, &body).status, 400);
}

#[test]
fn hostile_logs_are_escaped() {
    let s = TestServer::start(fake_engines());
    let mut log = b"<script>alert('x')</script><img src=x onerror=alert(1)> \"quoted\" & ".to_vec();
    log.extend_from_slice(&[0xff, 0xfe, 0x80, b'\n']); // invalid UTF-8
    let (ctype, body) = multipart(&[("log", None, &log)]);
    let r = s.post_form("/", &ctype, &body);
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(!html.contains("<script>alert"), "raw script tag in the page");
    assert!(!html.contains("<img src=x"), "raw img tag in the page");
    assert!(html.contains("&lt;script&gt;alert('x')&lt;/script&gt;"));
    assert!(html.contains('\u{FFFD}'), "invalid UTF-8 shown as replacement characters");

    // One 60 KiB line: accepted and escaped as well.
    let long = format!("<b>{}</b>", "A".repeat(60 * 1024));
    let r = s.post_form("/", "application/x-www-form-urlencoded", format!("log={}", long.replace('<', "%3C").replace('>', "%3E")).as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("&lt;b&gt;AAAA") && !r.text().contains("<b>AAAA"));

    // Hostile text in error pages too.
    let r = s.get("/kb/%3Cscript%3Ealert(1)%3C%2Fscript%3E");
    assert_eq!(r.status, 404);
    assert!(!r.text().contains("<script>alert") && r.text().contains("&lt;script&gt;"));
}

#[test]
fn logs_are_stored_only_when_the_box_is_ticked() {
    let s = TestServer::start(fake_engines());
    let count = || -> i64 {
        let db = rusqlite::Connection::open(s.dir.path().join("oomdoc.sqlite3")).unwrap();
        db.query_row("SELECT COUNT(*) FROM submitted_logs", [], |r| r.get(0)).unwrap()
    };
    let (ctype, body) = multipart(&[("log", None, b"secret log")]);
    assert_eq!(s.post_form("/", &ctype, &body).status, 200);
    assert_eq!(s.post("/api/v1/diagnose", "text/plain", b"secret log").status, 200);
    assert_eq!(count(), 0);
    let (ctype, body) = multipart(&[("log", None, b"shared log"), ("store_log", None, b"1")]);
    let r = s.post_form("/", &ctype, &body);
    assert_eq!(r.status, 303, "a kept log's diagnosis is at its own address");
    let page = s.get(r.header("location").unwrap()).text();
    assert!(page.contains("You chose to keep this log"));
    assert_eq!(s.post("/api/v1/diagnose?store_log=1", "text/plain", b"shared log 2").status, 200);
    assert_eq!(count(), 2);
    // Feedback never carries log text: the table has no column for it.
    let db = rusqlite::Connection::open(s.dir.path().join("oomdoc.sqlite3")).unwrap();
    let columns: Vec<String> = db
        .prepare("SELECT name FROM pragma_table_info('feedback')").unwrap()
        .query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    assert_eq!(columns, ["id", "created_at", "entry", "fix", "outcome", "platform", "hardware", "version", "note", "report_id", "client"]);
}

/// Newcomer report P8: the diagnosis page was only the answer to a POST, so it could not be
/// linked or reloaded. A kept log's diagnosis has its own address; an unkept one has none.
#[test]
fn a_kept_diagnosis_has_its_own_address() {
    let s = TestServer::start(fake_engines());
    let e = entry_with_fix();
    let log = b"RESOURCE_EXHAUSTED: KEPT-LOG-MARKER in memory space vmem";
    let (ctype, body) = multipart(&[("log", None, log), ("store_log", None, b"1"), ("lang", None, b"zh")]);
    let r = s.post_form("/", &ctype, &body);
    assert_eq!(r.status, 303, "{}", r.text());
    let location = r.header("location").unwrap().to_string();
    let link = location.strip_prefix("/diagnoses/").and_then(|l| l.strip_suffix("?lang=zh")).expect(&location);
    assert!(link.len() == 32 && link.bytes().all(|b| b.is_ascii_hexdigit()), "an unguessable key: {link}");

    // Read twice (a reload, a colleague following the link), by anyone, in either language.
    for _ in 0..2 {
        let page = s.get(&location);
        assert_eq!(page.status, 200, "{}", page.text());
        assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
        let html = page.text();
        assert!(html.contains(&escape(&e.title.zh)), "the language of the link");
        assert!(html.contains("KEPT-LOG-MARKER"), "the kept log's own diagnosis");
        assert!(html.contains(&format!("href=\"{}\"", escape(&location))), "the page names its address");
        assert!(html.contains(&format!("name=\"fix\" value=\"{}\"", e.fixes[0].id)), "feedback buttons as on the posted page");
    }
    assert!(s.get(&format!("/diagnoses/{link}")).text().contains(&escape(&e.title.en)));

    // The API names the same kind of page; the body is the contract, unchanged.
    let r = s.post("/api/v1/diagnose?store_log=1", "text/plain", b"API-KEPT");
    assert_eq!(r.json(), fake_diagnose(b"API-KEPT", Lang::En).unwrap());
    let api_link = r.header("link").expect("Link header").to_string();
    let path = api_link.strip_prefix('<').and_then(|l| l.split_once('>')).unwrap().0;
    assert!(s.get(path).text().contains("API-KEPT"));

    // Without the box ticked: the page itself, no address, nothing kept.
    let (ctype, body) = multipart(&[("log", None, log)]);
    let r = s.post_form("/", &ctype, &body);
    assert_eq!(r.status, 200);
    assert!(!r.text().contains("/diagnoses/"));
    assert!(s.post("/api/v1/diagnose", "text/plain", log).header("link").is_none());

    // Unknown, malformed and hostile keys are 404, and echo nothing raw.
    assert_eq!(s.get(&format!("/diagnoses/{}", "0".repeat(32))).status, 404);
    assert_eq!(s.get("/diagnoses/1").status, 404);
    let r = s.get("/diagnoses/%3Cscript%3E");
    assert_eq!(r.status, 404);
    assert!(!r.text().contains("<script>"));

    // Once the log is deleted (retention, quota), its page is gone too.
    let db = rusqlite::Connection::open(s.dir.path().join("oomdoc.sqlite3")).unwrap();
    db.execute("DELETE FROM submitted_logs WHERE link = ?1", [link]).unwrap();
    let r = s.get(&location);
    assert_eq!(r.status, 404);
    assert!(r.text().contains("deleted"), "{}", r.text());
}

/// Reliability report S23: a log of thousands of distinct failures made a 67 MB page.
/// The page shows a summary and the first findings, and says how many it left out and
/// where all of them are.
#[test]
fn a_page_of_thousands_of_findings_is_bounded() {
    let s = TestServer::start(fake_engines());
    let (ctype, body) = multipart(&[("log", None, b"MANY-FINDINGS")]);
    let r = s.post_form("/", &ctype, &body);
    assert_eq!(r.status, 200);
    let html = r.text();
    let shown = html.matches("<section class=\"finding\"").count();
    assert_eq!(shown, 50, "the first 50 findings in full");
    assert!(html.len() < 1_000_000, "{} bytes for 5,000 findings", html.len());
    assert!(html.contains("5000 findings"), "the summary counts them all");
    assert!(html.contains("×5000"), "per entry");
    assert!(html.contains("The other 4950 findings are counted above but not shown"), "says how many were left out");
    assert!(html.contains("/api/v1/diagnose"), "and where to get them all");
    assert!(html.contains("failure 49:") && !html.contains("failure 50:"));

    // Kept: the page links to the whole diagnosis as JSON.
    let (ctype, body) = multipart(&[("log", None, b"MANY-FINDINGS"), ("store_log", None, b"1")]);
    let location = s.post_form("/", &ctype, &body).header("location").unwrap().to_string();
    let html = s.get(&location).text();
    let json_href = format!("{location}.json");
    assert!(html.contains(&format!("href=\"{json_href}\"")), "links the JSON");
    assert_eq!(s.get(&json_href).json()["findings"].as_array().unwrap().len(), 5000);

    // A few findings: no summary table, no note.
    let (ctype, body) = multipart(&[("log", None, b"one failure")]);
    let html = s.post_form("/", &ctype, &body).text();
    assert!(!html.contains("class=\"summary\"") && !html.contains("counted above"));
}

#[test]
fn body_limits_answer_413_with_the_limit() {
    let s = TestServer::start_with(fake_engines(), |c| c.limits = small_limits());
    let big = vec![b'x'; 64 * 1024 + 1];
    let r = s.post("/api/v1/diagnose", "text/plain", &big);
    assert_eq!(r.status, 413);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("the log") && msg.contains("64.00 KiB"), "{msg}");

    // The page answers in HTML.
    let (ctype, body) = multipart(&[("log", None, &big)]);
    let r = s.post_form("/", &ctype, &body);
    assert_eq!(r.status, 413);
    assert!(r.text().contains("64.00 KiB") && r.header("content-type").unwrap().starts_with("text/html"));

    // A chunked body (no Content-Length) is cut off at the limit as well.
    let mut sock = std::net::TcpStream::connect(s.addr()).unwrap();
    use std::io::Write;
    let head = "POST /api/v1/diagnose HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n";
    sock.write_all(head.as_bytes()).unwrap();
    for _ in 0..80 {
        let _ = sock.write_all(format!("{:x}\r\n{}\r\n", 1024, "y".repeat(1024)).as_bytes());
    }
    let _ = sock.write_all(b"0\r\n\r\n");
    let r = read_response(&mut sock);
    assert_eq!(r.status, 413, "{}", r.text());

    // Just under the limit is fine; feedback has its own small limit.
    assert_eq!(s.post("/api/v1/diagnose", "text/plain", &big[..64 * 1024]).status, 200);
    let r = s.post("/api/v1/feedback", "application/json", &vec![b' '; 5000]);
    assert_eq!(r.status, 413);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("4.00 KiB"));
}

#[test]
fn a_panic_is_a_500_with_a_request_id_and_the_server_lives_on() {
    let s = TestServer::start(fake_engines());
    let r = s.post("/api/v1/diagnose", "text/plain", b"PANIC-NOW");
    assert_eq!(r.status, 500);
    let j = r.json();
    assert_eq!(j["error"]["request_id"], r.header("x-request-id").unwrap());
    assert!(!r.text().contains("on purpose"), "panic text stays in the server log");
    let (ctype, body) = multipart(&[("log", None, b"PANIC-NOW")]);
    let page = s.post_form("/", &ctype, &body);
    assert_eq!(page.status, 500);
    assert!(page.text().contains(page.header("x-request-id").unwrap()));
    assert_eq!(s.get("/healthz").status, 200);
}

#[test]
fn slow_requests_time_out() {
    let s = TestServer::start_with(fake_engines(), |c| c.request_timeout = std::time::Duration::from_secs(1));
    // The engine sleeps past the limit: the 503 with its message is the server's deadline.
    let r = s.post("/api/v1/diagnose", "text/plain", b"SLEEP-NOW");
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("time limit"));
}

#[test]
fn unknown_routes_and_methods() {
    let s = TestServer::start(Engines::default());
    let r = s.get("/api/v1/nope");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["status"], 404);
    let r = s.get("/nope");
    assert_eq!(r.status, 404);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let r = s.get("/api/v1/feedback");
    assert_eq!(r.status, 405);
    assert!(r.header("allow").unwrap().contains("POST"));
}

#[test]
fn engines_not_in_this_build_answer_501() {
    let s = TestServer::start(Engines::default());
    let probe = Engines::default();
    if let Err(EngineError::Unavailable(_)) = (probe.diagnose)(b"", Lang::En) {
        let r = s.post("/api/v1/diagnose", "text/plain", b"RESOURCE_EXHAUSTED");
        assert_eq!(r.status, 501);
        assert!(r.json()["error"]["message"].as_str().unwrap().contains("not in this build"));
    }
    let plan = PlanInput { kind: "pallas".into(), spec: String::new(), chip: None, dtype: None, triton_version: None };
    if let Err(EngineError::Unavailable(_)) = (probe.plan)(&plan) {
        let r = s.post_json("/api/v1/plan", &json!({ "kind": "pallas", "spec": "x" }));
        assert_eq!(r.status, 501);
        let r = s.post_form("/plan", "application/x-www-form-urlencoded", b"kind=pallas&spec=x&chip=");
        assert_eq!(r.status, 501);
    }
    if let Err(EngineError::Unavailable(_)) = (probe.memory)(Path::new("/nonexistent")) {
        let (ctype, body) = multipart(&[("dump", Some("module.txt"), b"HloModule m")]);
        let r = s.post("/api/v1/memory", &ctype, &body);
        assert_eq!(r.status, 501);
    }
}

/// Stands in for the memory viewer: lists the files it was given.
fn fake_memory(dir: &Path) -> Result<MemoryReport, EngineError> {
    let mut files = Vec::new();
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.path().is_dir() {
                walk(base, &e.path(), out);
            } else {
                out.push(e.path().strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    walk(dir, dir, &mut files);
    files.sort();
    Ok(MemoryReport { json: json!({ "files": files }), html: "<!doctype html><title>memory</title>".into() })
}

#[test]
fn dumps_upload_as_files_zip_or_tar_gz() {
    let s = TestServer::start_with(Engines { memory: fake_memory, ..Engines::default() }, |c| c.limits = small_limits());
    let (ctype, body) = multipart(&[("dump", Some("a.txt"), b"A"), ("dump", Some("../../b.txt"), b"B")]);
    let r = s.post("/api/v1/memory", &ctype, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["files"], json!(["a.txt", "b.txt"]));

    // A zip of a dump directory, with an entry trying to escape it.
    let mut zip_bytes = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut zip_bytes);
        let opts = zip::write::SimpleFileOptions::default();
        z.start_file("dump/module_0001.txt", opts).unwrap();
        std::io::Write::write_all(&mut z, b"HloModule m").unwrap();
        z.start_file("dump/sub/buffer-assignment.txt", opts).unwrap();
        std::io::Write::write_all(&mut z, b"allocation").unwrap();
        z.start_file("../escape.txt", opts).unwrap();
        z.finish().unwrap();
    }
    let (ctype, body) = multipart(&[("dump", Some("dump.zip"), zip_bytes.get_ref())]);
    let r = s.post("/api/v1/memory", &ctype, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["files"], json!(["module_0001.txt", "sub/buffer-assignment.txt"]));

    let mut tar_gz = Vec::new();
    {
        let gz = flate2::write::GzEncoder::new(&mut tar_gz, flate2::Compression::fast());
        let mut t = tar::Builder::new(gz);
        let mut h = tar::Header::new_gnu();
        h.set_size(3);
        h.set_mode(0o644);
        t.append_data(&mut h, "d/x.pb", &b"abc"[..]).unwrap();
        t.into_inner().unwrap().finish().unwrap();
    }
    let (ctype, body) = multipart(&[("dump", Some("dump.tar.gz"), &tar_gz)]);
    let r = s.post_form("/memory", &ctype, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("<title>memory</title>"), "the memory viewer's own HTML");

    // A zip bomb is stopped at the dump limit.
    let mut bomb = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut bomb);
        z.start_file("big.bin", zip::write::SimpleFileOptions::default()).unwrap();
        std::io::Write::write_all(&mut z, &vec![0u8; 1024 * 1024]).unwrap();
        z.finish().unwrap();
    }
    let (ctype, body) = multipart(&[("dump", Some("bomb.zip"), bomb.get_ref())]);
    let r = s.post("/api/v1/memory", &ctype, &body);
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("unpacked dump"));
}

#[test]
fn openapi_documents_every_api_route() {
    let s = TestServer::start(Engines::default());
    let doc = s.get("/api/v1/openapi.json").json();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    for p in [
        "/api/v1/diagnose",
        "/api/v1/kb",
        "/api/v1/kb/{id}",
        "/api/v1/kb/{id}/outcomes",
        "/api/v1/memory",
        "/api/v1/plan",
        "/api/v1/feedback",
        "/api/v1/openapi.json",
        "/api/v1/reports",
        "/api/v1/reports/{id}",
        "/api/v1/fleet",
        "/healthz",
    ] {
        assert!(paths.contains_key(p), "{p} is not documented");
    }
    // Every $ref resolves.
    let text = doc.to_string();
    for r in text.split("\"$ref\":\"").skip(1) {
        let target = r.split('"').next().unwrap();
        let pointer = target.trim_start_matches('#');
        assert!(doc.pointer(pointer).is_some(), "dangling $ref {target}");
    }
}

#[test]
fn static_assets_and_security_headers() {
    let s = TestServer::start(Engines::default());
    let css = s.get("/static/oomdoc.css");
    assert_eq!(css.status, 200);
    assert!(css.header("content-type").unwrap().starts_with("text/css"));
    let js = s.get("/static/oomdoc.js");
    assert!(js.header("content-type").unwrap().starts_with("text/javascript"));
    let home = s.get("/");
    assert_eq!(home.status, 200);
    assert!(home.text().contains("name=\"store_log\""));
    assert_eq!(home.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(home.header("x-frame-options"), Some("DENY"));
    // A proxy's request id is kept.
    let r = request(s.addr(), "GET", "/healthz", &[("X-Request-Id", "proxy-123")], b"");
    assert_eq!(r.header("x-request-id"), Some("proxy-123"));
    let r = request(s.addr(), "GET", "/healthz", &[("X-Request-Id", "<bad id>")], b"");
    assert_ne!(r.header("x-request-id"), Some("<bad id>"));
}

/// The real engine, on every knowledge-base example: the API answers exactly what the
/// library (and so `oomdoc diagnose --format json`) answers, and the page shows each finding.
#[test]
fn diagnose_real_logs_matches_the_cli_contract() {
    let engines = Engines::default();
    if let Err(EngineError::Unavailable(_)) = (engines.diagnose)(b"", Lang::En) {
        oomdoc_testkit::skip("http engine test", "no diagnose engine in this build");
        return;
    }
    let s = TestServer::start(engines);
    let mut checked = 0;
    for e in KnowledgeBase::get().entries() {
        let Some(example) = e.examples.first() else { continue };
        let expected_id = example.expect.id.clone().unwrap_or_else(|| e.id.clone());
        let r = s.post("/api/v1/diagnose", "text/plain", example.text.as_bytes());
        assert_eq!(r.status, 200, "{}: {}", e.id, r.text());
        let opts = oomdoc_diagnose::Options { lang: Lang::En, ..Default::default() };
        let library = serde_json::to_value(oomdoc_diagnose::diagnose_text(&example.text, &opts)).unwrap();
        assert_eq!(r.json(), library, "{}: API differs from the library", e.id);
        let (ctype, body) = multipart(&[("log", None, example.text.as_bytes())]);
        let page = s.post_form("/", &ctype, &body).text();
        assert!(page.contains(&format!("data-finding=\"{expected_id}\"")), "{}: finding not on the page", e.id);

        // The same message with hostile text inside it, a very long line and invalid UTF-8.
        let mut hostile = example.text.replacen('\n', "\n<script>alert(1)</script><img src=x onerror=alert(2)>\n", 1).into_bytes();
        hostile.extend_from_slice(b"\n");
        hostile.extend(std::iter::repeat(b'<').take(200_000));
        hostile.extend_from_slice(b"\n\xff\xfe<script>alert(3)</script>\n");
        let (ctype, body) = multipart(&[("file", Some("job.log"), &hostile)]);
        let r = s.post_form("/", &ctype, &body);
        assert_eq!(r.status, 200, "{}", e.id);
        let page = r.text();
        assert!(!page.contains("<script>alert") && !page.contains("<img src=x"), "{}: unescaped log text", e.id);
        assert!(!page.contains("<<"), "{}: raw angle brackets from the log", e.id);
        checked += 1;
    }
    assert!(checked > 0);
    // The bundled example log, in Chinese.
    let log = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/train.log")).unwrap();
    let r = s.post("/api/v1/diagnose?lang=zh", "text/plain", &log);
    let library = oomdoc_diagnose::diagnose_reader(&log[..], &oomdoc_diagnose::Options { lang: Lang::Zh, ..Default::default() }).unwrap();
    assert_eq!(r.json(), serde_json::to_value(library).unwrap());
}

/// The README's call, `curl --data-binary @train.log URL/api/v1/diagnose`, sends the raw log
/// as application/x-www-form-urlencoded: it must be read as the log, not as an empty form.
#[test]
fn curl_data_binary_is_the_log_and_an_empty_log_is_400() {
    let engines = Engines::default();
    if let Err(EngineError::Unavailable(_)) = (engines.diagnose)(b"", Lang::En) {
        oomdoc_testkit::skip("http engine test", "no diagnose engine in this build");
        return;
    }
    let s = TestServer::start(engines);
    let log = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/train.log")).unwrap();
    let r = s.post("/api/v1/diagnose", "application/x-www-form-urlencoded", &log);
    assert_eq!(r.status, 200, "{}", r.text());
    let library = oomdoc_diagnose::diagnose_reader(&log[..], &oomdoc_diagnose::Options::default()).unwrap();
    assert_eq!(r.json(), serde_json::to_value(library).unwrap());
    assert!(!r.json()["findings"].as_array().unwrap().is_empty());
    // A real form with a `log` field is still a form.
    let form = format!("log={}", urlencode(std::str::from_utf8(&log).unwrap()));
    assert_eq!(s.post("/api/v1/diagnose", "application/x-www-form-urlencoded", form.as_bytes()).json(), r.json());
    // Empty or missing: 400 with a message, on the API as on the page.
    for (path, ctype, body) in [
        ("/api/v1/diagnose", "application/x-www-form-urlencoded", &b""[..]),
        ("/api/v1/diagnose", "text/plain", &b"  \n"[..]),
        ("/api/v1/diagnose", "application/x-www-form-urlencoded", &b"log=&store_log=1"[..]),
        ("/", "application/x-www-form-urlencoded", &b"log="[..]),
    ] {
        let r = s.post(path, ctype, body);
        assert_eq!(r.status, 400, "{path} {ctype} {body:?}");
        assert!(r.text().contains("empty"), "{}", r.text());
    }
}

const PALLAS_SPEC: &str = oomdoc_plan::pallas::EXAMPLE_SPEC;

#[test]
fn plan_pallas_and_triton_match_the_library() {
    let s = TestServer::start(Engines::default());
    let probe = PlanInput { kind: "pallas".into(), spec: PALLAS_SPEC.into(), chip: None, dtype: None, triton_version: None };
    let expected = match (Engines::default().plan)(&probe) {
        Err(EngineError::Unavailable(_)) => return oomdoc_testkit::skip("http planner test", "no planner in this build"),
        other => other.unwrap(),
    };
    let spec = oomdoc_plan::pallas::parse_spec(PALLAS_SPEC).unwrap();
    assert_eq!(expected, serde_json::to_value(oomdoc_plan::pallas::plan(&spec).unwrap()).unwrap());
    let r = s.post_json("/api/v1/plan", &json!({ "kind": "pallas", "spec": PALLAS_SPEC }));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json(), expected);
    let r = s.post_json("/api/v1/plan", &json!({ "kind": "pallas", "spec": PALLAS_SPEC, "chip": "v6e" }));
    assert_eq!(r.status, 200);
    assert_ne!(r.json(), expected, "--chip overrides the spec's chip");

    let configs = r#"[{"BLOCK_M":128,"BLOCK_N":128,"BLOCK_K":64,"num_stages":3,"num_warps":4},
                      {"BLOCK_M":256,"BLOCK_N":256,"BLOCK_K":128,"num_stages":8,"num_warps":8}]"#;
    let r = s.post_json("/api/v1/plan", &json!({ "kind": "triton", "chip": "sm_86", "spec": configs }));
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j["arch"], "sm_86");
    assert_eq!(j["fitting"].as_array().unwrap().len() + j["dropped"].as_array().unwrap().len(), 2);
    assert_eq!(j["dropped"].as_array().unwrap().len(), 1, "{j}");

    // Bad input: 422 naming the field; the page keeps what was typed.
    let r = s.post_json("/api/v1/plan", &json!({ "kind": "pallas", "spec": "chip = \"v99\"" }));
    assert_eq!(r.status, 422, "{}", r.text());
    let r = s.post_json("/api/v1/plan", &json!({ "kind": "triton", "spec": configs }));
    assert_eq!(r.status, 422);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("arch"));
    let form = "kind=pallas&chip=v99x&spec=%3Cscript%3E";
    let r = s.post_form("/plan", "application/x-www-form-urlencoded", form.as_bytes());
    assert_eq!(r.status, 422);
    assert!(r.text().contains("&lt;script&gt;") && r.text().contains("v99x"));
    let r = s.post_form("/plan", "application/x-www-form-urlencoded", format!("kind=pallas&chip=&spec={}", urlencode(PALLAS_SPEC)).as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("vmem"));
}

fn urlencode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

#[test]
fn memory_of_a_real_dump_matches_the_library() {
    let fixture = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../memory/tests/fixtures/mlp_train_step"));
    let expected = match (Engines::default().memory)(fixture) {
        Err(EngineError::Unavailable(_)) => return oomdoc_testkit::skip("http memory test", "no memory viewer in this build"),
        other => other.unwrap(),
    };
    let s = TestServer::start(Engines::default());
    let files: Vec<(String, Vec<u8>)> = std::fs::read_dir(fixture)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    let parts: Vec<(&str, Option<&str>, &[u8])> = files.iter().map(|(n, b)| ("dump", Some(n.as_str()), b.as_slice())).collect();
    let (ctype, body) = multipart(&parts);
    let r = s.post("/api/v1/memory", &ctype, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json(), expected.json);
    let page = s.post_form("/memory", &ctype, &body);
    assert_eq!(page.status, 200);
    assert!(page.text().contains("<svg") && page.text().contains("jit_mlp_train_step"));
    assert!(!page.header("content-security-policy").unwrap().contains("script-src"), "the report runs no script");

    // Not a dump: 422 with the library's message.
    let (ctype, body) = multipart(&[("dump", Some("notes.txt"), b"hello")]);
    let r = s.post("/api/v1/memory", &ctype, &body);
    assert_eq!(r.status, 422, "{}", r.text());
}

/// Issue 12: browser posts need same-origin evidence; curl keeps working as documented.
#[test]
fn cross_site_posts_are_403_and_curl_and_same_origin_are_not() {
    let s = TestServer::start(fake_engines());
    let own = format!("http://{}", s.addr());
    let e = entry_with_fix();
    let feedback = json!({ "entry": e.id, "fix": e.fixes[0].id, "outcome": "worked" }).to_string();
    let api = |headers: &[(&str, &str)], path: &str, ctype: &str, body: &[u8]| {
        let mut h = vec![("Content-Type", ctype)];
        h.extend_from_slice(headers);
        request(s.addr(), "POST", path, &h, body)
    };

    // The documented curl calls: no Origin, no Sec-Fetch-*.
    let r = api(&[], "/api/v1/diagnose", "application/x-www-form-urlencoded", b"some log");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("set-cookie").is_none(), "no cookie for API clients");
    assert_eq!(api(&[], "/api/v1/feedback", "application/json", feedback.as_bytes()).status, 201);
    // A page's script on this origin (what oomdoc.js does), with either kind of evidence.
    assert_eq!(api(&[("Origin", &own), ("Sec-Fetch-Site", "same-origin")], "/api/v1/feedback", "application/json", feedback.as_bytes()).status, 201);
    assert_eq!(api(&[("Origin", &own)], "/api/v1/diagnose", "text/plain", b"log").status, 200);

    // Cross-site: refused before anything is read or stored, with a message saying why.
    let evil: &[&[(&str, &str)]] = &[
        &[("Sec-Fetch-Site", "cross-site"), ("Origin", "https://evil.example")],
        &[("Sec-Fetch-Site", "same-site")],
        &[("Origin", "https://evil.example")],
        &[("Origin", "null")],
        &[("Origin", &format!("http://127.0.0.1:{}", s.addr().port() + 1))],
    ];
    for headers in evil {
        for (path, ctype, body) in [
            ("/api/v1/diagnose?store_log=1", "text/plain", &b"log"[..]),
            ("/api/v1/feedback", "application/json", feedback.as_bytes()),
            ("/api/v1/plan", "application/json", br#"{"kind":"pallas","spec":""}"#),
            ("/memory", "multipart/form-data; boundary=x", b"--x--\r\n"),
        ] {
            let r = api(headers, path, ctype, body);
            assert_eq!(r.status, 403, "{path} {headers:?}: {}", r.text());
            assert!(r.text().contains("cross-site request refused"), "{}", r.text());
        }
    }
    let logs: i64 = rusqlite::Connection::open(s.dir.path().join("oomdoc.sqlite3"))
        .unwrap()
        .query_row("SELECT COUNT(*) FROM submitted_logs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(logs, 0);
    // Reading is not a state change: links from other sites still open pages.
    let r = request(s.addr(), "GET", &format!("/kb/{}", e.id), &[("Sec-Fetch-Site", "cross-site")], b"");
    assert_eq!(r.status, 200);
}

#[test]
fn html_forms_need_the_cookie_token() {
    let s = TestServer::start(fake_engines());
    let e = entry_with_fix();
    // The token comes as a cookie with every form page, and in each form.
    let r = s.get(&format!("/kb/{}", e.id));
    let cookie = r.header("set-cookie").unwrap().to_string();
    assert!(cookie.starts_with("oomdoc_csrf=") && cookie.contains("SameSite=Lax") && cookie.contains("HttpOnly"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain http on loopback: {cookie}");
    let token = cookie["oomdoc_csrf=".len()..].split(';').next().unwrap().to_string();
    assert!(r.text().contains(&format!("name=\"csrf\" value=\"{token}\"")));
    // A browser that already has the cookie keeps it.
    let again = request(s.addr(), "GET", "/plan", &[("Cookie", &format!("oomdoc_csrf={token}"))], b"");
    assert!(again.header("set-cookie").is_none());
    assert!(again.text().contains(&format!("value=\"{token}\"")));

    let form = format!("entry={}&fix={}&outcome=worked", e.id, e.fixes[0].id);
    let ctype = "application/x-www-form-urlencoded";
    let post = |headers: &[(&str, &str)], body: &str| {
        let mut h = vec![("Content-Type", ctype)];
        h.extend_from_slice(headers);
        request(s.addr(), "POST", "/feedback", &h, body.as_bytes())
    };
    let cookie = format!("oomdoc_csrf={token}");
    // No cookie, no field, a wrong field: 403 with what to do.
    let r = post(&[], &form);
    assert_eq!(r.status, 403);
    assert!(r.text().contains("reload the page"), "{}", r.text());
    assert_eq!(post(&[("Cookie", &cookie)], &form).status, 403);
    let r = post(&[("Cookie", &cookie)], &format!("{form}&csrf=0123456789abcdef0123456789abcdef"));
    assert_eq!(r.status, 403);
    assert!(r.text().contains("anti-forgery token"), "{}", r.text());
    // Cookie and field agree, posted from the page: stored, redirected to the entry.
    let own = format!("http://{}", s.addr());
    let r = post(&[("Cookie", &cookie), ("Origin", &own), ("Sec-Fetch-Site", "same-origin")], &format!("{form}&csrf={token}"));
    assert_eq!(r.status, 303, "{}", r.text());
    // The diagnose page's multipart form likewise.
    let (mctype, body) = multipart(&[("log", None, b"a log")]);
    assert_eq!(request(s.addr(), "POST", "/", &[("Content-Type", &mctype)], &body).status, 403);
    let body = with_form_field(&mctype, &body, "csrf", &token);
    assert_eq!(request(s.addr(), "POST", "/", &[("Content-Type", &mctype), ("Cookie", &cookie)], &body).status, 200);
    // And the memory page's upload form; the API takes the same upload without a token.
    let (mctype, body) = multipart(&[("dump", Some("x.hlo.pb"), b"not a proto")]);
    let r = request(s.addr(), "POST", "/memory", &[("Content-Type", &mctype), ("Cookie", &cookie)], &body);
    assert_eq!(r.status, 403, "{}", r.text());
    assert_ne!(request(s.addr(), "POST", "/api/v1/memory", &[("Content-Type", &mctype)], &body).status, 403);
    let body = with_form_field(&mctype, &body, "csrf", &token);
    let r = request(s.addr(), "POST", "/memory", &[("Content-Type", &mctype), ("Cookie", &cookie)], &body);
    assert_eq!(r.status, 422, "past the token, the upload is read as a dump: {}", r.text());
}

#[test]
fn public_origin_and_forwarded_host_behind_a_proxy() {
    let public = "https://oomdoc.example.internal";
    let s = TestServer::start_with(fake_engines(), |c| {
        c.origin_policy.public_origins = vec![oomdoc_server::csrf::parse_origin(public).unwrap()];
    });
    let post = |origin: &str| request(s.addr(), "POST", "/api/v1/diagnose", &[("Content-Type", "text/plain"), ("Origin", origin)], b"log");
    assert_eq!(post(public).status, 200);
    assert_eq!(post(&format!("http://{}", s.addr())).status, 403, "only the public origin");
    // Behind TLS the cookie is Secure.
    assert!(s.get("/").header("set-cookie").unwrap().contains("; Secure"));

    let s = TestServer::start_with(fake_engines(), |c| c.origin_policy.trust_forwarded_host = true);
    let r = request(
        s.addr(),
        "POST",
        "/api/v1/diagnose",
        &[("Content-Type", "text/plain"), ("Origin", public), ("X-Forwarded-Host", "oomdoc.example.internal")],
        b"log",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    // Without the setting, X-Forwarded-Host is ignored.
    let s = TestServer::start(fake_engines());
    let r = request(
        s.addr(),
        "POST",
        "/api/v1/diagnose",
        &[("Content-Type", "text/plain"), ("Origin", public), ("X-Forwarded-Host", "oomdoc.example.internal")],
        b"log",
    );
    assert_eq!(r.status, 403);
}

/// Issue 12: `--max-stored-log-mib` evicts the oldest kept logs; `--log-retention-days`
/// deletes old ones at start and periodically.
#[test]
fn stored_logs_have_a_quota_and_a_retention() {
    use oomdoc_server::retention::{LogStorePolicy, DAY};
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("oomdoc.sqlite3");
    let insert_old = |days: u32| {
        let c = rusqlite::Connection::open(&db_path).unwrap();
        c.execute(
            "INSERT INTO submitted_logs (created_at, bytes, body) VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1), 3, 'old')",
            [format!("-{days} days")],
        )
        .unwrap();
    };
    let logs = || -> (i64, i64) {
        let c = rusqlite::Connection::open(&db_path).unwrap();
        c.query_row("SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM submitted_logs", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap()
    };
    oomdoc_server::store::sqlite::SqliteStore::open(&db_path).unwrap();
    insert_old(10);
    insert_old(1);
    let policy = LogStorePolicy { max_bytes: Some(1000), retention: Some(5 * DAY), purge_every: std::time::Duration::from_millis(50) };
    let server = oomdoc_server::BackgroundServer::start(
        oomdoc_server::Config { addr: "127.0.0.1:0".parse().unwrap(), db: oomdoc_server::store::Location::Sqlite(db_path.clone()), log_store: policy, ..Default::default() },
        fake_engines(),
    )
    .unwrap();
    assert_eq!(logs(), (1, 3), "the 10-day-old log is deleted at start");
    let store = |n: usize| request(server.addr, "POST", "/api/v1/diagnose?store_log=1", &[("Content-Type", "text/plain")], &vec![b'x'; n]);
    for _ in 0..5 {
        assert_eq!(store(300).status, 200);
    }
    let (count, bytes) = logs();
    let overhead = oomdoc_server::retention::ROW_OVERHEAD as i64;
    assert!(bytes + count * overhead <= 1000, "{count} logs, {bytes} bytes");
    assert_eq!(count, 2, "the oldest were evicted");
    let r = store(1001);
    assert_eq!(r.status, 413);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("store_log"), "{}", r.text());
    assert_eq!(store(1001).status, 413);
    assert_eq!(request(server.addr, "POST", "/api/v1/diagnose", &[("Content-Type", "text/plain")], &vec![b'x'; 1001]).status, 200);
    // A log that ages past the retention while serving is swept.
    insert_old(6);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while logs().0 != 2 {
        assert!(std::time::Instant::now() < deadline, "periodic sweep did not run: {:?}", logs());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    server.stop();
}
