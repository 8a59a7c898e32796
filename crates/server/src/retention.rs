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
//! SQLite reuses the pages of deleted rows, so the file stops growing at about the
//! quota (plus feedback and page overhead); it does not shrink by itself
//! (`sqlite3 FILE VACUUM` does that, offline).

use crate::{
    db::{Db, DbError},
    AppState,
};
use rusqlite::params;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    pub id: i64,
    /// Older logs deleted to make room.
    pub evicted: u64,
}

impl Db {
    /// Store a log within the quota, evicting the oldest logs if needed; one transaction,
    /// committed (and fsynced) before returning. `None` when the log alone exceeds the quota.
    pub fn store_log(&self, body: &[u8], policy: &LogStorePolicy) -> Result<Option<Stored>, DbError> {
        let len = body.len() as u64;
        let cost = len + ROW_OVERHEAD;
        if policy.max_bytes.is_some_and(|max| cost > max) {
            return Ok(None);
        }
        let mut conn = self.writer();
        let tx = conn.transaction()?;
        let mut evicted = 0u64;
        if let Some(max) = policy.max_bytes {
            // Maintained by triggers (migration 3): no scan of the table.
            let (logs, bytes): (i64, i64) =
                tx.query_row("SELECT logs, bytes FROM submitted_logs_total WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?)))?;
            let used = bytes.max(0) as u64 + logs.max(0) as u64 * ROW_OVERHEAD;
            let mut excess = (used + cost).saturating_sub(max);
            if excess > 0 {
                let mut victims = Vec::new();
                {
                    let mut stmt = tx.prepare_cached("SELECT id, bytes FROM submitted_logs ORDER BY id")?;
                    let mut rows = stmt.query([])?;
                    while excess > 0 {
                        let Some(row) = rows.next()? else { break };
                        let (id, bytes): (i64, i64) = (row.get(0)?, row.get(1)?);
                        victims.push(id);
                        excess = excess.saturating_sub(bytes.max(0) as u64 + ROW_OVERHEAD);
                    }
                }
                let mut del = tx.prepare_cached("DELETE FROM submitted_logs WHERE id = ?1")?;
                for id in &victims {
                    evicted += del.execute(params![id])? as u64;
                }
            }
        }
        tx.prepare_cached("INSERT INTO submitted_logs (bytes, body) VALUES (?1, ?2)")?
            .execute(params![len as i64, body])?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(Some(Stored { id, evicted }))
    }

    /// Delete stored logs older than `age`; returns how many.
    pub fn purge_logs_older_than(&self, age: Duration) -> Result<u64, DbError> {
        let conn = self.writer();
        let n = conn
            .prepare_cached("DELETE FROM submitted_logs WHERE created_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1)")?
            .execute(params![format!("-{} seconds", age.as_secs())])?;
        Ok(n as u64)
    }

    /// Count and total bytes of the stored logs.
    pub fn stored_logs(&self) -> Result<(u64, u64), DbError> {
        let conn = self.writer();
        let (n, bytes): (i64, i64) = conn.query_row(
            "SELECT logs, bytes FROM submitted_logs_total WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok((n as u64, bytes as u64))
    }
}

/// Apply the retention once (at start, and from [`spawn`]).
pub fn sweep(db: &Db, policy: &LogStorePolicy) -> Result<u64, DbError> {
    let Some(age) = policy.retention else { return Ok(0) };
    let n = db.purge_logs_older_than(age)?;
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
            let s = state.clone();
            let done = tokio::task::spawn_blocking(move || sweep(&s.db, &s.config.log_store)).await;
            if let Ok(Err(e)) = done {
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
        let db = Db::open(&dir.path().join("x.db")).unwrap();
        // Each 300-byte log costs 300 + ROW_OVERHEAD; the quota holds three.
        let unit = 300 + ROW_OVERHEAD;
        let quota = 3 * unit;
        let p = policy(Some(quota));
        for i in 0..4 {
            let s = db.store_log(&[b'a' + i as u8; 300], &p).unwrap().unwrap();
            assert_eq!(s.evicted, if i < 3 { 0 } else { 1 }, "log {i}");
        }
        assert_eq!(db.stored_logs().unwrap(), (3, 900));
        // A log costing two units: two more of the oldest go.
        let two = vec![b'z'; (2 * unit - ROW_OVERHEAD) as usize];
        assert_eq!(db.store_log(&two, &p).unwrap().unwrap().evicted, 2);
        assert_eq!(db.stored_logs().unwrap(), (2, 300 + two.len() as u64));
        // Larger than the whole quota: refused, nothing evicted; exactly the quota: fits alone.
        let whole = vec![b'!'; (quota - ROW_OVERHEAD) as usize];
        assert_eq!(db.store_log(&[whole.as_slice(), b"!"].concat(), &p).unwrap(), None);
        assert_eq!(db.stored_logs().unwrap().0, 2);
        assert_eq!(db.store_log(&whole, &p).unwrap().unwrap().evicted, 2);
        assert_eq!(db.stored_logs().unwrap(), (1, whole.len() as u64));
        // A flood of one-byte logs is held to the quota by the per-log overhead.
        for _ in 0..100 {
            db.store_log(b"x", &p).unwrap().unwrap();
        }
        let (n, bytes) = db.stored_logs().unwrap();
        assert!(bytes + n * ROW_OVERHEAD <= quota && n == quota / (1 + ROW_OVERHEAD), "{n} logs, {bytes} bytes");
        // No quota: everything is kept.
        db.store_log(&[0; 5000], &policy(None)).unwrap().unwrap();
        assert_eq!(db.stored_logs().unwrap(), (n + 1, bytes + 5000));
    }

    #[test]
    fn retention_deletes_only_old_logs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        let db = Db::open(&path).unwrap();
        db.store_log(b"new", &policy(None)).unwrap();
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute(
            "INSERT INTO submitted_logs (created_at, bytes, body) VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-40 days'), 3, 'old')",
            [],
        )
        .unwrap();
        assert_eq!(db.stored_logs().unwrap().0, 2);
        let p = LogStorePolicy {
            retention: Some(30 * DAY),
            ..policy(None)
        };
        assert_eq!(sweep(&db, &p).unwrap(), 1);
        assert_eq!(db.stored_logs().unwrap(), (1, 3));
        assert_eq!(sweep(&db, &p).unwrap(), 0);
    }
}
