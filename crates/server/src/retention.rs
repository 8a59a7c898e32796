//! Quota and retention of the logs users chose to keep (`store_log=1`).
//!
//! - **Quota** (`--max-stored-log-mib`): the stored logs never total more than this, each
//!   counted as its size plus [`ROW_OVERHEAD`] bytes (so a flood of one-byte logs cannot
//!   grow the file past the quota either). When a new log does not fit, the **oldest logs are evicted** in the same
//!   transaction that stores it, so the store is a rolling window of the most recent
//!   logs and a store never fails because the quota is full. A single log larger than
//!   the whole quota is refused (413) and nothing is evicted for it.
//! - **Retention** (`--log-retention-days`): logs older than this are deleted at start
//!   and then every [`LogStorePolicy::purge_every`] (one hour by default).
//!
//! Both stores keep this in one transaction (`store::sqlite`, `store::postgres`); on
//! PostgreSQL the running total's row is locked first, so replicas storing at once
//! evict in turn and the quota holds across them.
//!
//! SQLite reuses the pages of deleted rows, so the file stops growing at about the
//! quota (plus feedback and page overhead); it does not shrink by itself
//! (`sqlite3 FILE VACUUM` does that, offline).

use crate::{
    store::{Store, StoreError},
    AppState,
};
use std::{sync::Arc, time::Duration};

pub const DAY: Duration = Duration::from_secs(24 * 3600);

/// What one kept log costs in the file beyond its body: measured 36 bytes for one-byte logs
/// (row header, rowid, timestamp, b-tree cell), doubled for page fragmentation after deletes.
pub const ROW_OVERHEAD: u64 = 64;

#[derive(Debug, Clone)]
pub struct LogStorePolicy {
    /// Total bytes of stored log bodies; `None`: no quota.
    pub max_bytes: Option<u64>,
    /// Age after which a stored log is deleted; `None`: kept until evicted by the quota.
    pub retention: Option<Duration>,
    /// How often the retention sweep runs while serving.
    pub purge_every: Duration,
}

impl Default for LogStorePolicy {
    /// As `oomdoc serve` without flags: 1024 MiB, 30 days, swept hourly.
    fn default() -> Self {
        LogStorePolicy {
            max_bytes: Some(1024 * crate::config::MIB as u64),
            retention: Some(30 * DAY),
            purge_every: Duration::from_secs(3600),
        }
    }
}

/// What storing one log did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub id: i64,
    /// Older logs deleted to make room.
    pub evicted: u64,
    /// The key of the diagnosis's own address, `/diagnoses/<link>` ([`crate::store::new_link`]).
    pub link: String,
}

/// Bytes over the quota if a log of `len` bytes joined `logs` logs totalling `bytes`.
pub fn excess(logs: i64, bytes: i64, len: u64, max: u64) -> u64 {
    let used = bytes.max(0) as u64 + logs.max(0) as u64 * ROW_OVERHEAD;
    (used + len + ROW_OVERHEAD).saturating_sub(max)
}

/// Apply the retention once (at start, and from [`spawn`]).
pub async fn sweep(db: &dyn Store, policy: &LogStorePolicy) -> Result<u64, StoreError> {
    let Some(age) = policy.retention else { return Ok(0) };
    let n = db.purge_logs_older_than(age).await?;
    if n > 0 {
        eprintln!(
            "oomdoc serve: deleted {n} stored log(s) older than {} day(s) (--log-retention-days)",
            age.as_secs_f64() / 86400.0
        );
    }
    Ok(n)
}

/// The periodic retention sweep, on the runtime; abort the handle to stop it.
pub fn spawn(state: &Arc<AppState>) -> tokio::task::JoinHandle<()> {
    let state = state.clone();
    tokio::spawn(async move {
        if state.config.log_store.retention.is_none() {
            return;
        }
        let every = state.config.log_store.purge_every.max(Duration::from_millis(10));
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await; // the first tick is immediate; the start already swept
        loop {
            tick.tick().await;
            if let Err(e) = sweep(&*state.db, &state.config.log_store).await {
                eprintln!("oomdoc serve: log retention sweep failed: {e}");
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(max: Option<u64>) -> LogStorePolicy {
        LogStorePolicy {
            max_bytes: max,
            retention: None,
            purge_every: Duration::from_secs(3600),
        }
    }

    #[test]
    fn quota_evicts_the_oldest_and_refuses_a_log_larger_than_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::store::sqlite::SqliteStore::open(&dir.path().join("x.db")).unwrap();
        // Each 300-byte log costs 300 + ROW_OVERHEAD; the quota holds three.
        let unit = 300 + ROW_OVERHEAD;
        let quota = 3 * unit;
        let p = policy(Some(quota));
        for i in 0..4 {
            let s = db.store_log_now(&[b'a' + i as u8; 300], &p).unwrap().unwrap();
            assert_eq!(s.evicted, if i < 3 { 0 } else { 1 }, "log {i}");
        }
        assert_eq!(db.stored_logs_now().unwrap(), (3, 900));
        // A log costing two units: two more of the oldest go.
        let two = vec![b'z'; (2 * unit - ROW_OVERHEAD) as usize];
        assert_eq!(db.store_log_now(&two, &p).unwrap().unwrap().evicted, 2);
        assert_eq!(db.stored_logs_now().unwrap(), (2, 300 + two.len() as u64));
        // Larger than the whole quota: refused, nothing evicted; exactly the quota: fits alone.
        let whole = vec![b'!'; (quota - ROW_OVERHEAD) as usize];
        assert_eq!(db.store_log_now(&[whole.as_slice(), b"!"].concat(), &p).unwrap(), None);
        assert_eq!(db.stored_logs_now().unwrap().0, 2);
        assert_eq!(db.store_log_now(&whole, &p).unwrap().unwrap().evicted, 2);
        assert_eq!(db.stored_logs_now().unwrap(), (1, whole.len() as u64));
        // A flood of one-byte logs is held to the quota by the per-log overhead.
        for _ in 0..100 {
            db.store_log_now(b"x", &p).unwrap().unwrap();
        }
        let (n, bytes) = db.stored_logs_now().unwrap();
        assert!(bytes + n * ROW_OVERHEAD <= quota && n == quota / (1 + ROW_OVERHEAD), "{n} logs, {bytes} bytes");
        // No quota: everything is kept.
        db.store_log_now(&[0; 5000], &policy(None)).unwrap().unwrap();
        assert_eq!(db.stored_logs_now().unwrap(), (n + 1, bytes + 5000));
    }

    #[test]
    fn retention_deletes_only_old_logs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        let db = crate::store::sqlite::SqliteStore::open(&path).unwrap();
        db.store_log_now(b"new", &policy(None)).unwrap();
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute(
            "INSERT INTO submitted_logs (created_at, bytes, body) VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-40 days'), 3, 'old')",
            [],
        )
        .unwrap();
        assert_eq!(db.stored_logs_now().unwrap().0, 2);
        let p = LogStorePolicy {
            retention: Some(30 * DAY),
            ..policy(None)
        };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        assert_eq!(rt.block_on(sweep(&db, &p)).unwrap(), 1);
        assert_eq!(db.stored_logs_now().unwrap(), (1, 3));
        assert_eq!(rt.block_on(sweep(&db, &p)).unwrap(), 0);
    }
}
