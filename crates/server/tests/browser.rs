//! Browser tests: headless Chromium, driven over WebDriver (chromedriver), against
//! the real server. When Chromium or chromedriver is missing they fail in CI (which installs
//! both with `crates/server/ci-install.sh`) and are reported as skipped elsewhere.

mod common;

use common::*;
use oomdoc_kb::{KnowledgeBase, Lang};
use oomdoc_server::{engines::EngineError, Engines};
use serde_json::{json, Value};
use std::{
    net::{SocketAddr, TcpListener},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

/// A chromedriver process and one browser session; both end on drop.
struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
    _profile: tempfile::TempDir,
}

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    fn start() -> Option<Browser> {
        let chromium = ["chromium", "chromium-browser"].into_iter().find(|c| on_path(c));
        if chromium.is_none() || !on_path("chromedriver") {
            oomdoc_testkit::require_in_ci("browser tests", "chromium or chromedriver is not installed (run crates/server/ci-install.sh)");
            return None;
        }
        let binary = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join(chromium.unwrap()))
            .find(|p| p.is_file())
            .unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let mut browser = Browser { driver, addr, session: String::new(), _profile: profile };
        let caps = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": binary,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                    format!("--user-data-dir={}", browser._profile.path().display()),
                ],
            },
        } } });
        let r = browser.call("POST", "/session", Some(caps));
        browser.session = r["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {r}")).to_string();
        browser.call_session("POST", "/timeouts", Some(json!({ "implicit": 10_000, "pageLoad": 30_000 })));
        Some(browser)
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let r = request(self.addr, method, path, &[("Content-Type", "application/json")], body.as_bytes());
        let v = r.json()["value"].clone();
        assert!(r.status == 200, "WebDriver {method} {path}: {} {v}", r.status);
        v
    }

    fn call_session(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    fn goto(&self, url: &str) {
        self.call_session("POST", "/url", Some(json!({ "url": url })));
    }

    /// Waits (implicit wait) for the element.
    fn find(&self, css: &str) -> String {
        let v = self.call_session("POST", "/element", Some(json!({ "using": "css selector", "value": css })));
        v[ELEMENT_KEY].as_str().unwrap().to_string()
    }

    fn text(&self, css: &str) -> String {
        let e = self.find(css);
        self.call_session("GET", &format!("/element/{e}/text"), None).as_str().unwrap_or("").to_string()
    }

    fn click(&self, css: &str) {
        let e = self.find(css);
        self.call_session("POST", &format!("/element/{e}/click"), Some(json!({})));
    }

    fn script(&self, js: &str) -> Value {
        self.script_with(js, json!([]))
    }

    fn script_with(&self, js: &str, args: Value) -> Value {
        self.call_session("POST", "/execute/sync", Some(json!({ "script": js, "args": args })))
    }

    /// The page's address once it holds every one of `parts`: a click that submits a form or
    /// follows a link returns before the new page is there, and the old page's elements are
    /// still found meanwhile. The bound is a hang guard, not a time limit on the page.
    fn url_with(&self, parts: &[&str]) -> String {
        let guard = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let url = self.script("return location.href").as_str().unwrap_or("").to_string();
            if parts.iter().all(|p| url.contains(p)) || std::time::Instant::now() > guard {
                return url;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Put text into a field as a paste does (typing a long log key by key is slow and
    /// turns some characters into key presses).
    fn paste_into(&self, css: &str, text: &str) {
        self.find(css);
        self.script_with("document.querySelector(arguments[0]).value = arguments[1];", json!([css, text]));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = request(self.addr, "DELETE", &format!("/session/{}", self.session), &[], b"");
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Used when this build has no diagnose engine yet: one finding on the entry under test.
fn stand_in_diagnose(_log: &[u8], lang: Lang) -> Result<Value, EngineError> {
    let e = entry_with_fix();
    Ok(json!({ "findings": [{
        "id": e.id, "code": e.code, "kind": "oom", "title": e.title.get(lang), "platform": "tpu", "phase": "compile",
        "sizes": { "used": 39027261u64, "limit": 33554432u64 }, "line": 1, "end_line": 1, "culprit": {}, "cause": "stand-in",
        "fixes": [{ "id": e.fixes[0].id, "title": e.fixes[0].title.get(lang) }], "dead_ends": [], "references": [],
    }]}))
}

/// A real message from the knowledge base and the entry it must be diagnosed as, with
/// the engines to use: the real diagnose engine when this build has it.
fn log_and_engines() -> (String, String, Engines) {
    let real = Engines::default();
    if !matches!((real.diagnose)(b"", Lang::En), Err(EngineError::Unavailable(_))) {
        let (entry, example) = KnowledgeBase::get()
            .entries()
            .iter()
            .find_map(|e| e.examples.first().map(|x| (e, x)))
            .expect("a knowledge-base example");
        let id = example.expect.id.clone().unwrap_or_else(|| entry.id.clone());
        return (example.text.clone(), id, real);
    }
    println!("note: no diagnose engine in this build; the page is tested with a stand-in finding");
    let log = "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem.\n<script>alert(1)</script>";
    (log.to_string(), entry_with_fix().id.clone(), Engines { diagnose: stand_in_diagnose, ..Engines::default() })
}

#[test]
fn paste_a_log_open_an_entry_in_both_languages_and_submit_feedback() {
    let Some(browser) = Browser::start() else { return };
    let (log, expected_id, engines) = log_and_engines();
    let server = TestServer::start(engines);
    let base = format!("http://{}", server.addr());

    // 1. Paste a log, see the finding.
    browser.goto(&format!("{base}/"));
    browser.paste_into("#log", &log);
    browser.click("#diagnose-submit");
    let finding = browser.find(&format!("section.finding[data-finding='{expected_id}']"));
    assert!(!finding.is_empty());
    let e = KnowledgeBase::get().by_id(&expected_id).unwrap();
    assert!(browser.text("section.finding h2").contains(e.title.en.as_str()));
    assert_eq!(browser.script("return window.__xss === undefined && document.querySelectorAll('main script').length"), json!(0));

    // 2. Open the entry from the finding, then in Chinese.
    browser.click(&format!("section.finding a[href='/kb/{expected_id}']"));
    assert_eq!(browser.text("h1"), e.title.en);
    browser.click("p.alt-formats a[hreflang='zh']");
    assert_eq!(browser.text("h1"), e.title.zh);
    assert_eq!(browser.script("return document.documentElement.lang"), json!("zh-CN"));
    browser.click("p.alt-formats a[hreflang='en']");
    assert_eq!(browser.text("h1"), e.title.en);

    // 3. Submit feedback on the first fix: the script posts JSON and thanks in place.
    let fix = &e.fixes[0].id;
    browser.click(&format!("div.fix[data-fix='{fix}'] button.worked"));
    assert!(browser.text(&format!("div.fix[data-fix='{fix}'] .thanks")).contains("Thanks"));
    let o = server.get(&format!("/api/v1/kb/{expected_id}/outcomes")).json();
    let reported = o["fixes"].as_array().unwrap().iter().find(|f| f["fix"] == fix.as_str()).unwrap().clone();
    assert_eq!((reported["reports"].as_u64(), reported["worked"].as_u64()), (Some(1), Some(1)));
    // After a reload the count is on the page.
    browser.goto(&format!("{base}/kb/{expected_id}"));
    assert!(browser.text(&format!("div.fix[data-fix='{fix}'] .outcome")).starts_with("1 report:"));

    // 4. The same form without the script: a plain form post (cookie + hidden token).
    browser.script(&format!(
        "const f = document.querySelector(\"div.fix[data-fix='{fix}'] form.feedback\");
         const i = document.createElement('input'); i.type = 'hidden'; i.name = 'outcome'; i.value = 'did-not-work';
         f.appendChild(i); f.submit(); return 0;"
    ));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let o = server.get(&format!("/api/v1/kb/{expected_id}/outcomes")).json();
        let r = o["fixes"].as_array().unwrap().iter().find(|f| f["fix"] == fix.as_str()).unwrap()["reports"].as_u64();
        if r == Some(2) {
            break;
        }
        assert!(Instant::now() < deadline, "the plain form post was not recorded");
        std::thread::sleep(Duration::from_millis(50));
    }

    // 5. A page on another site (http://localhost:PORT is not http://127.0.0.1:PORT) posting
    // the same form, token and all, is refused: Chromium says Sec-Fetch-Site: cross-site.
    let other = format!("http://localhost:{}/api/v1/openapi.json", server.addr().port());
    browser.goto(&other);
    browser.script_with(
        "const f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];
         for (const [k, v] of [['entry', arguments[1]], ['fix', arguments[2]], ['outcome', 'worked'], ['csrf', 'x']]) {
           const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i);
         }
         document.body.appendChild(f); f.submit();",
        json!([format!("{base}/feedback"), expected_id, fix]),
    );
    let refused = browser.text("p.error-message");
    assert!(refused.contains("cross-site request refused"), "{refused}");
    let o = server.get(&format!("/api/v1/kb/{expected_id}/outcomes")).json();
    let r = o["fixes"].as_array().unwrap().iter().find(|f| f["fix"] == fix.as_str()).unwrap()["reports"].as_u64();
    assert_eq!(r, Some(2), "the cross-site post stored nothing");
}

/// Newcomer report P8: a diagnosis the user chose to keep has its own address, which the
/// browser lands on after the post, and which shows the same diagnosis when reloaded or
/// opened afresh (a link sent to a colleague).
#[test]
fn a_kept_diagnosis_can_be_reloaded_and_linked() {
    let Some(browser) = Browser::start() else { return };
    let (log, expected_id, engines) = log_and_engines();
    let server = TestServer::start(engines);
    let base = format!("http://{}", server.addr());
    browser.goto(&format!("{base}/"));
    browser.paste_into("#log", &log);
    browser.click("input[name='store_log']");
    browser.click("#diagnose-submit");
    browser.find(&format!("section.finding[data-finding='{expected_id}']"));
    let url = browser.script("return location.href").as_str().unwrap().to_string();
    let key = url.strip_prefix(&format!("{base}/diagnoses/")).unwrap_or_else(|| panic!("the page has its own address: {url}"));
    assert_eq!(key.len(), 32, "{url}");
    assert!(browser.text("p.kept-link").contains(&format!("/diagnoses/{key}")));
    // Reloaded, and opened afresh: the same diagnosis.
    browser.script("location.reload(); return 0;");
    browser.find(&format!("section.finding[data-finding='{expected_id}']"));
    browser.goto(&url);
    let e = KnowledgeBase::get().by_id(&expected_id).unwrap();
    assert!(browser.text("section.finding h2").contains(e.title.en.as_str()));
}

/// Issue 24: the team page in a browser: totals, a filter typed into the form (the URL
/// carries it, so the view can be shared), a drill-down link, and the CSV export of the
/// same selection.
#[test]
fn team_page_filters_in_the_url_and_exports_the_selection() {
    let Some(browser) = Browser::start() else { return };
    let mut token = String::new();
    let server = TestServer::start_with(Engines::default(), |c| {
        token = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
            let s = oomdoc_server::store::open(&c.db).await.unwrap();
            let secret = oomdoc_server::store::new_token_secret().unwrap();
            s.create_token("browser", &oomdoc_server::store::token_hash(&secret)).await.unwrap();
            secret
        });
    });
    let log = include_str!("../../../examples/train.log");
    let auth = format!("Bearer {token}");
    for (job, cluster, host) in [("101", "a100-east", "n1"), ("102", "a100-east", "n2"), ("201", "h100-west", "n9")] {
        let path = format!("/api/v1/reports?job_id={job}&cluster={cluster}&host={host}&version.torch=2.5.1");
        let r = request(server.addr(), "POST", &path, &[("Authorization", &auth), ("Content-Type", "text/plain")], log.as_bytes());
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let base = format!("http://{}", server.addr());
    browser.goto(&format!("{base}/team"));
    assert!(browser.text("#fleet-total").starts_with("3 failed jobs reported; 3 were memory failures"), "{}", browser.text("#fleet-total"));
    assert!(browser.text("#by-entry").contains("pytorch.cuda-oom"));

    // Filter by cluster through the form: the URL holds the filter.
    browser.paste_into("#team-filter input[name='cluster']", "a100-east");
    browser.click("#team-filter button[type='submit']");
    let url = browser.url_with(&["cluster=a100-east"]);
    assert!(url.contains("cluster=a100-east"), "{url}");
    assert!(browser.text("#fleet-total").starts_with("2 failed jobs"), "{}", browser.text("#fleet-total"));
    // Drill down to one host from the table; both filters stay in the URL.
    browser.click("#by-host a[href*='host=n2']");
    let url = browser.url_with(&["cluster=a100-east", "host=n2"]);
    assert!(url.contains("cluster=a100-east") && url.contains("host=n2"), "{url}");
    assert!(browser.text("#fleet-total").starts_with("1 failed jobs"), "{}", browser.text("#fleet-total"));
    // The same view opened afresh from its URL (shared with a colleague).
    browser.goto(&url);
    assert!(browser.text("#fleet-total").starts_with("1 failed jobs"));
    // The CSV export of this selection.
    let href = browser.script("return document.querySelector('#export-csv').href").as_str().unwrap().to_string();
    assert!(href.contains("format=csv") && href.contains("host=n2"), "{href}");
    let csv = browser.script(
        "return fetch(document.querySelector('#export-csv').href).then(r => r.text());",
    );
    let csv = csv.as_str().unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(csv.contains(",102,a100-east,n2,"), "{csv}");
}
