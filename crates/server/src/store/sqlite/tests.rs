//! The SQLite store's own cases: its migrations from older files and its triggers.
//! What every store must do is in `tests/store.rs`.

use super::*;
use crate::store::FeedbackPolicy;

fn insert(db: &SqliteStore, f: &Feedback) -> i64 {
    db.record_feedback_now(f, &FeedbackMeta { policy: FeedbackPolicy::unlimited(), ..Default::default() }).unwrap().id
}

fn report(fix: &str, outcome: Outcome, hw: Option<&str>) -> Feedback {
    Feedback {
        entry: "tpu.scoped-vmem".into(),
        fix: fix.into(),
        outcome,
        platform: Some("tpu".into()),
        hardware: hw.map(Into::into),
        version: None,
        note: None,
    }
}

#[test]
fn migrates_once_and_tallies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/oomdoc.sqlite3");
    {
        let db = SqliteStore::open(&path).unwrap();
        for _ in 0..4 {
            insert(&db, &report("raise", Outcome::Worked, Some("v5e")));
        }
        insert(&db, &report("raise", Outcome::DidNotWork, Some("v4")));
        insert(&db, &report("shrink", Outcome::Worked, None));
    }
    // Reopening must not re-run migrations (they would fail on existing tables).
    let db = SqliteStore::open(&path).unwrap();
    let o = db.outcomes_now("tpu.scoped-vmem").unwrap();
    assert_eq!(o["raise"].total.reports, 5);
    assert_eq!(o["raise"].total.worked, 4);
    assert!(o["raise"].total.rate.is_some());
    assert_eq!(o["raise"].by_hardware.len(), 2);
    assert_eq!(o["shrink"].total.rate, None);
    assert!(db.outcomes_now("no.such").unwrap().is_empty());
}

/// Migration 2 counts the reports already stored, and the counts follow every later
/// change, hand edits with `sqlite3` included.
#[test]
fn tallies_follow_inserts_deletes_updates_and_migrate_old_reports() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.db");
    {
        // A database at schema 1 with reports in it.
        let c = Connection::open(&path).unwrap();
        c.execute_batch(MIGRATIONS[0]).unwrap();
        c.execute_batch("PRAGMA user_version = 1").unwrap();
        for (outcome, hw) in [("worked", Some("v5e")), ("worked", Some("v5e")), ("did-not-work", None)] {
            c.execute("INSERT INTO feedback (entry, fix, outcome, hardware) VALUES ('tpu.scoped-vmem', 'raise', ?1, ?2)", params![outcome, hw]).unwrap();
        }
        c.execute("INSERT INTO submitted_logs (bytes, body) VALUES (3, 'log')", []).unwrap();
    }
    let db = SqliteStore::open(&path).unwrap();
    assert_eq!(db.stored_logs_now().unwrap(), (1, 3), "migration 3 counts the kept logs");
    let o = db.outcomes_now("tpu.scoped-vmem").unwrap();
    assert_eq!((o["raise"].total.worked, o["raise"].total.did_not_work), (2, 1));
    assert_eq!(o["raise"].by_hardware.len(), 2);
    assert_eq!(o["raise"].by_hardware[0].hardware, None, "'' reads back as no hardware");
    insert(&db, &report("raise", Outcome::DidNotWork, Some("v5e")));
    let c = Connection::open(&path).unwrap();
    c.execute("DELETE FROM feedback WHERE hardware IS NULL", []).unwrap();
    c.execute("UPDATE feedback SET outcome = 'did-not-work' WHERE id = 1", []).unwrap();
    let o = db.outcomes_now("tpu.scoped-vmem").unwrap();
    assert_eq!((o["raise"].total.worked, o["raise"].total.did_not_work), (1, 2));
    // Left: (no platform, v5e) from the old rows and (tpu, v5e); the emptied (none, none) group is gone.
    assert_eq!(o["raise"].by_hardware.len(), 2);
    assert!(o["raise"].by_hardware.iter().all(|h| h.hardware.as_deref() == Some("v5e")));
    c.execute("DELETE FROM feedback", []).unwrap();
    assert!(db.outcomes_now("tpu.scoped-vmem").unwrap().is_empty());
}

#[test]
fn hostile_text_is_stored_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let db = SqliteStore::open(&dir.path().join("x.db")).unwrap();
    let mut f = report("x'); DROP TABLE feedback; --", Outcome::Worked, Some("\"; DELETE FROM feedback"));
    f.note = Some("<script>alert(1)</script>".into());
    let id = insert(&db, &f);
    let back = db.feedback_by_id_now(id).unwrap().unwrap();
    assert_eq!(back.fix, f.fix);
    assert_eq!(back.note, f.note);
    assert_eq!(db.outcomes_now("tpu.scoped-vmem").unwrap().len(), 1);
}

/// Reliability report S12: a full disk answered a generic 500 while `/healthz` said ok.
/// `max_page_count` makes SQLite report SQLITE_FULL as a full disk would.
#[test]
fn a_full_disk_is_reported_as_such_until_a_write_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let db = SqliteStore::open(&dir.path().join("x.db")).unwrap();
    let pages: i64 = db.inner.writer.lock().unwrap().query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
    db.inner.writer.lock().unwrap().query_row(&format!("PRAGMA max_page_count = {}", pages + 2), [], |_| Ok(())).unwrap();
    let policy = crate::retention::LogStorePolicy { max_bytes: None, ..Default::default() };
    let mut full = None;
    for _ in 0..100 {
        if let Err(e) = db.store_log_now(&[b'x'; 4000], &policy) {
            full = Some(e);
            break;
        }
    }
    let full = full.expect("the page limit is reached");
    assert!(matches!(&full, StoreError::Full(m) if m.contains("full")), "{full:?}");
    assert!(matches!(db.check_now(), Err(StoreError::Full(_))), "/healthz reports it");
    let status = crate::error::AppError::from(full).status();
    assert_eq!(status.as_u16(), 507);
    // Space again: the next write succeeds and the store is healthy.
    db.inner.writer.lock().unwrap().query_row("PRAGMA max_page_count = 1000000", [], |_| Ok(())).unwrap();
    insert(&db, &report("raise", Outcome::Worked, None));
    db.check_now().unwrap();
}
