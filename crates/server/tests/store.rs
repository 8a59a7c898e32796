//! The store conformance suite: one story every [`Store`] must tell the same way, run
//! against SQLite and against a real PostgreSQL (a throwaway cluster; in CI a cluster
//! that cannot start fails the test, elsewhere the skip is printed and counted by
//! `scripts/test.sh`, see `oomdoc_testkit`).

mod common;

use common::postgres_for;
use oomdoc_server::{
    retention::{LogStorePolicy, ROW_OVERHEAD},
    store::{
        self, Feedback, FeedbackMeta, FeedbackPolicy, Labels, Location, NewReport, Outcome, ReportQuery,
        Store, StoreError,
    },
};
use serde_json::json;
use std::{sync::Arc, time::Duration};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn report(fix: &str, outcome: Outcome, hw: Option<&str>, note: Option<&str>) -> Feedback {
    Feedback {
        entry: "tpu.scoped-vmem".into(),
        fix: fix.into(),
        outcome,
        platform: Some("tpu".into()),
        hardware: hw.map(Into::into),
        version: None,
        note: note.map(Into::into),
    }
}

fn open_meta() -> FeedbackMeta {
    FeedbackMeta { policy: FeedbackPolicy::unlimited(), ..Default::default() }
}

async fn feedback_story(s: &dyn Store) {
    s.check().await.unwrap();
    for _ in 0..4 {
        s.record_feedback(&report("raise", Outcome::Worked, Some("v5e"), None), &open_meta()).await.unwrap();
    }
    s.record_feedback(&report("raise", Outcome::DidNotWork, Some("v4"), None), &open_meta()).await.unwrap();
    s.record_feedback(&report("shrink", Outcome::Worked, None, None), &open_meta()).await.unwrap();
    let o = s.outcomes("tpu.scoped-vmem").await.unwrap();
    assert_eq!((o["raise"].total.reports, o["raise"].total.worked, o["raise"].total.did_not_work), (5, 4, 1));
    assert!(o["raise"].total.rate.is_some());
    let hw: Vec<_> = o["raise"].by_hardware.iter().map(|h| (h.hardware.clone().unwrap(), h.tally.reports)).collect();
    assert_eq!(hw, [("v4".to_string(), 1), ("v5e".to_string(), 4)], "groups in byte order on both stores");
    assert_eq!(o["shrink"].total.rate, None);
    assert_eq!(o["shrink"].by_hardware[0].hardware, None);
    assert!(s.outcomes("no.such").await.unwrap().is_empty());

    // Hostile text is stored verbatim, and bound, never spliced into SQL.
    let mut hostile = report("x'); DROP TABLE feedback; --", Outcome::Worked, Some("\"; DELETE FROM feedback"), None);
    hostile.note = Some("<script>alert(1)</script> \u{1F600}".into());
    let id = s.record_feedback(&hostile, &open_meta()).await.unwrap().id;
    assert_eq!(s.feedback_by_id(id).await.unwrap().unwrap(), hostile);
    assert_eq!(s.feedback_by_id(id + 1000).await.unwrap(), None);

    // A report_id makes a post idempotent: the retry gets the first id and counts nothing.
    let meta = FeedbackMeta { report_id: Some("r-1".into()), ..open_meta() };
    let first = s.record_feedback(&report("raise", Outcome::Worked, Some("v5e"), None), &meta).await.unwrap();
    let again = s.record_feedback(&report("raise", Outcome::DidNotWork, Some("v4"), None), &meta).await.unwrap();
    assert!(first.counted && !again.counted && first.id == again.id);
    assert_eq!(s.outcomes("tpu.scoped-vmem").await.unwrap()["raise"].total.reports, 6);

    // Per-client rules: the same report twice counts once; over the hourly limit, 429.
    let client = |c: &str| FeedbackMeta {
        client: Some(store::client_key(c)),
        policy: FeedbackPolicy { duplicate_window: Duration::from_secs(3600), max_per_client_per_hour: 3 },
        ..Default::default()
    };
    let a = s.record_feedback(&report("shrink", Outcome::Worked, None, None), &client("10.0.0.1")).await.unwrap();
    let b = s.record_feedback(&report("shrink", Outcome::Worked, None, None), &client("10.0.0.1")).await.unwrap();
    assert!(a.counted && !b.counted && a.id == b.id);
    for note in ["2", "3"] {
        assert!(s.record_feedback(&report("shrink", Outcome::Worked, None, Some(note)), &client("10.0.0.1")).await.unwrap().counted);
    }
    let over = s.record_feedback(&report("shrink", Outcome::Worked, None, Some("4")), &client("10.0.0.1")).await;
    assert!(matches!(over, Err(StoreError::RateLimited { retry_after_secs, .. }) if retry_after_secs > 0), "{over:?}");
    assert!(s.record_feedback(&report("shrink", Outcome::Worked, None, Some("4")), &client("10.0.0.2")).await.unwrap().counted);
    assert_eq!(s.outcomes("tpu.scoped-vmem").await.unwrap()["shrink"].total.reports, 5);
}

/// Twenty posts of one report_id at once (a client retrying through several replicas):
/// one is counted.
async fn concurrent_retries(s: Arc<dyn Store>) {
    let before = s.outcomes("tpu.scoped-vmem").await.unwrap()["raise"].total.reports;
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move {
                let meta = FeedbackMeta { report_id: Some("same-retry".into()), ..open_meta() };
                s.record_feedback(&report("raise", Outcome::Worked, None, None), &meta).await.unwrap()
            })
        })
        .collect();
    let mut saved = Vec::new();
    for t in tasks {
        saved.push(t.await.unwrap());
    }
    assert_eq!(saved.iter().filter(|s| s.counted).count(), 1);
    assert!(saved.iter().all(|x| x.id == saved[0].id));
    assert_eq!(s.outcomes("tpu.scoped-vmem").await.unwrap()["raise"].total.reports, before + 1);
}

async fn log_story(s: Arc<dyn Store>) {
    let unit = 300 + ROW_OVERHEAD;
    let quota = 3 * unit;
    let p = LogStorePolicy { max_bytes: Some(quota), retention: None, purge_every: Duration::from_secs(3600) };
    let mut links = Vec::new();
    for i in 0..4u8 {
        let st = s.store_log(Arc::new(vec![b'a' + i; 300]), &p).await.unwrap().unwrap();
        assert_eq!(st.evicted, if i < 3 { 0 } else { 1 }, "log {i}");
        assert!(store::is_link(&st.link), "{}", st.link);
        links.push(st.link);
    }
    assert_eq!(s.stored_logs().await.unwrap(), (3, 900));
    // Each kept log is read back by its address key; the evicted one is gone.
    assert_eq!(s.stored_log(&links[0]).await.unwrap(), None);
    assert_eq!(s.stored_log(&links[3]).await.unwrap(), Some(vec![b'd'; 300]));
    assert_eq!(s.stored_log(&"0".repeat(32)).await.unwrap(), None);
    let two = vec![b'z'; (2 * unit - ROW_OVERHEAD) as usize];
    assert_eq!(s.store_log(Arc::new(two.clone()), &p).await.unwrap().unwrap().evicted, 2);
    assert_eq!(s.stored_logs().await.unwrap(), (2, 300 + two.len() as u64));
    let whole = vec![b'!'; (quota - ROW_OVERHEAD) as usize];
    assert_eq!(s.store_log(Arc::new([whole.as_slice(), b"!"].concat()), &p).await.unwrap(), None);
    assert_eq!(s.store_log(Arc::new(whole.clone()), &p).await.unwrap().unwrap().evicted, 2);
    assert_eq!(s.stored_logs().await.unwrap(), (1, whole.len() as u64));
    // Stores at once: the quota holds and the running total matches what is left.
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            let (s, p) = (s.clone(), p.clone());
            tokio::spawn(async move { s.store_log(Arc::new(vec![b'0' + (i % 10) as u8; 100 + i * 7]), &p).await.unwrap().unwrap() })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let (n, bytes) = s.stored_logs().await.unwrap();
    assert!(n > 0 && bytes + n * ROW_OVERHEAD <= quota, "{n} logs, {bytes} bytes over the quota {quota}");
    // Retention: everything older than now goes, and the total follows.
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(s.purge_logs_older_than(Duration::ZERO).await.unwrap(), n);
    assert_eq!(s.stored_logs().await.unwrap(), (0, 0));
    assert_eq!(s.purge_logs_older_than(Duration::ZERO).await.unwrap(), 0);
}

fn new_report(report_id: Option<&str>, host: &str) -> NewReport {
    NewReport {
        report_id: report_id.map(Into::into),
        token_id: None,
        source: "report".into(),
        labels: Labels {
            job_id: Some("4242".into()),
            host: Some(host.into()),
            rank: Some("0".into()),
            exit_status: Some(1),
            versions: [("torch".to_string(), "2.5.1".to_string())].into(),
            extra: [("team".to_string(), "ml".to_string())].into(),
            ..Default::default()
        },
        entry: Some("pytorch.cuda-oom".into()),
        category: Some("smaller-working-set".into()),
        memory_failure: true,
        findings: 1,
        report: json!({"findings": [{"id": "pytorch.cuda-oom", "kind": "oom", "sizes": {"requested": 3221225472u64}}], "exit_status": 1}),
    }
}

async fn report_story(s: &dyn Store) {
    let a = s.add_report(&new_report(Some("job-4242-0"), "n1")).await.unwrap();
    let again = s.add_report(&new_report(Some("job-4242-0"), "n2")).await.unwrap();
    assert!(a.created && !again.created && a.id == again.id);
    let b = s.add_report(&new_report(None, "n2")).await.unwrap();
    let c = s.add_report(&new_report(None, "n3")).await.unwrap();
    assert!(b.created && c.created && b.id != c.id);
    assert_eq!(s.count_reports().await.unwrap(), 3);
    let rows = s.reports(&ReportQuery { limit: 10, ..Default::default() }).await.unwrap();
    assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), [c.id, b.id, a.id], "newest first");
    let first = rows.last().unwrap();
    assert_eq!(first.labels, new_report(None, "n1").labels);
    assert_eq!((first.report_id.as_deref(), first.entry.as_deref(), first.memory_failure, first.findings), (Some("job-4242-0"), Some("pytorch.cuda-oom"), true, 1));
    assert!(first.created_at.len() == 24 && first.created_at.ends_with('Z'), "{}", first.created_at);
    assert_eq!(first.report, None, "the diagnosis only when asked");
    let one = s.reports(&ReportQuery { id: Some(a.id), limit: 1, with_report: true, ..Default::default() }).await.unwrap();
    assert_eq!(one[0].report.as_ref().unwrap(), &new_report(None, "n1").report);
    let future = ReportQuery { since: Some("2999-01-01T00:00:00.000Z".into()), limit: 10, ..Default::default() };
    assert!(s.reports(&future).await.unwrap().is_empty());
    let past = ReportQuery { since: Some("2000-01-01T00:00:00.000Z".into()), until: Some("2999-01-01T00:00:00.000Z".into()), limit: 2, ..Default::default() };
    assert_eq!(s.reports(&past).await.unwrap().len(), 2);
}

async fn token_story(s: &dyn Store) {
    let secret = store::new_token_secret().unwrap();
    let t = s.create_token("epilog", &store::token_hash(&secret)).await.unwrap();
    assert_eq!((t.name.as_str(), t.revoked_at.as_deref()), ("epilog", None));
    let dup = s.create_token("epilog", &store::token_hash("other")).await;
    assert!(matches!(dup, Err(StoreError::Invalid(_))), "{dup:?}");
    assert_eq!(s.token_by_hash(&store::token_hash(&secret)).await.unwrap().unwrap().id, t.id);
    assert_eq!(s.token_by_hash(&store::token_hash("wrong")).await.unwrap(), None);
    assert!(s.revoke_token("epilog").await.unwrap());
    assert!(!s.revoke_token("epilog").await.unwrap());
    assert_eq!(s.token_by_hash(&store::token_hash(&secret)).await.unwrap(), None, "revoked");
    s.create_token("epilog", &store::token_hash("second")).await.unwrap();
    let list = s.tokens().await.unwrap();
    assert_eq!(list.len(), 2);
    assert!(list[0].revoked_at.is_some() && list[1].revoked_at.is_none());
}

async fn conformance(location: Location) {
    let s = store::open(&location).await.unwrap();
    feedback_story(&*s).await;
    concurrent_retries(s.clone()).await;
    log_story(s.clone()).await;
    report_story(&*s).await;
    token_story(&*s).await;
    // Reopening migrates nothing again and keeps everything.
    drop(s);
    let s = store::open(&location).await.unwrap();
    s.check().await.unwrap();
    assert_eq!(s.count_reports().await.unwrap(), 3);
}

#[test]
fn sqlite_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(conformance(Location::Sqlite(dir.path().join("x.sqlite3"))));
}

#[test]
fn postgres_store_conforms() {
    let Some(pg) = postgres_for("postgres_store_conforms") else { return };
    let url = pg.create_database("conformance").unwrap();
    runtime().block_on(conformance(Location::Postgres(url)));
}

/// Replicas start at once against an empty database: one migrates, the others wait for it.
#[test]
fn postgres_replicas_migrate_once() {
    let Some(pg) = postgres_for("postgres_replicas_migrate_once") else { return };
    let url = pg.create_database("migrate").unwrap();
    runtime().block_on(async {
        let opens: Vec<_> = (0..4).map(|_| tokio::spawn(store::open_owned(Location::Postgres(url.clone())))).collect();
        for o in opens {
            o.await.unwrap().unwrap().check().await.unwrap();
        }
    });
    assert_eq!(pg.psql("migrate", "SELECT version FROM oomdoc_schema").unwrap(), oomdoc_server::store::postgres::MIGRATIONS.len().to_string());
}

#[test]
fn unreachable_or_unservable_databases_are_clear_errors() {
    runtime().block_on(async {
        let e = store::open(&Location::Postgres("postgres://nobody@127.0.0.1:1/none".into())).await.err().unwrap();
        assert!(matches!(e, StoreError::Unavailable(_)) && e.to_string().contains("127.0.0.1:1"), "{e}");
        let e = store::open(&Location::Postgres("postgres://u:secret@127.0.0.1:1/x?sslmode=require".into())).await.err().unwrap();
        assert!(e.to_string().contains("without TLS") && !e.to_string().contains("secret"), "{e}");
    });
    assert!(Location::parse("mysql://h/db").is_err());
}
