//! The embedded store: one SQLite file (SQLite is compiled in), the default.
//!
//! Durability: WAL with `synchronous=FULL`, so a write is on disk when its transaction
//! commits, before the client sees the acknowledgement. One writer connection and a few
//! readers; every call runs on the blocking pool. All SQL uses bound parameters.
//!
//! Two failures the file system hides from SQLite are checked here: the file deleted or
//! replaced under a running server (SQLite would go on writing to the unlinked inode and
//! lose everything at restart), and a full disk (reported as 507, and by `/healthz` until
//! a write succeeds again).

use super::{
    outcomes_from_rows, Feedback, FeedbackMeta, FeedbackSaved, FixOutcomes, Labels, LogStorePolicy, NewReport, Outcome,
    ReportQuery, ReportRow, ReportSaved, Store, StoreError, Stored, TokenInfo,
};
use crate::retention::ROW_OVERHEAD;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex, MutexGuard,
    },
    time::Duration,
};

/// Schema versions, applied in order; `PRAGMA user_version` records how many ran.
/// Never edit a released migration: append a new one.
pub const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001-feedback-and-logs.sql"),
    include_str!("migrations/0002-feedback-tally.sql"),
    include_str!("migrations/0003-stored-log-totals.sql"),
    include_str!("migrations/0004-reports-tokens-feedback-ids.sql"),
    include_str!("migrations/0005-stored-log-links.sql"),
];

/// Readers in the pool; SQLite in WAL mode lets them run beside the writer.
const READERS: usize = 4;

/// The SQLite store; cheap to clone (the connections are shared).
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// The file the server opened: `(device, inode)`, to notice it being deleted or replaced.
    identity: Option<(u64, u64)>,
    writer: Mutex<Connection>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    /// Set when a write failed for lack of space, cleared by the next write that succeeds.
    disk_full: AtomicBool,
}

fn sql_error(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => StoreError::Full(format!(
            "the database's disk is full ({e}); nothing was stored: free space on the server, then retry"
        )),
        Some(ErrorCode::ReadOnly) | Some(ErrorCode::CannotOpen) | Some(ErrorCode::SystemIoFailure) => {
            StoreError::Unavailable(format!("the database cannot be written ({e}); nothing was stored"))
        }
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => {
            StoreError::Unavailable(format!("the database is busy ({e}); retry"))
        }
        _ => StoreError::Internal(format!("database: {e}")),
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        sql_error(e)
    }
}

#[cfg(unix)]
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_identity(_path: &Path) -> Option<(u64, u64)> {
    None
}

impl SqliteStore {
    /// Open (creating if needed) and migrate the database file.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::Unavailable(format!("cannot create {}: {e}", dir.display())))?;
        }
        let open_err = |e: rusqlite::Error| StoreError::Unavailable(format!("cannot open {}: {e}", path.display()));
        let mut writer = Connection::open(path).map_err(open_err)?;
        configure(&writer)?;
        let mode: String = writer.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(open_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Unavailable(format!("{}: SQLite refused WAL mode (got {mode})", path.display())));
        }
        migrate(&mut writer)?;
        let readers = (0..READERS)
            .map(|_| {
                let c = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
                )?;
                configure(&c)?;
                Ok(Mutex::new(c))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                identity: file_identity(path),
                writer: Mutex::new(writer),
                readers,
                next_reader: AtomicUsize::new(0),
                disk_full: AtomicBool::new(false),
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The writer, once the file is known to still be the one opened.
    fn writer(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.file_still_there()?;
        // A panic while holding the lock cannot leave a half-done transaction
        // behind (rusqlite rolls back on drop), so a poisoned lock is still usable.
        Ok(self.inner.writer.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn file_still_there(&self) -> Result<(), StoreError> {
        let Some(opened) = self.inner.identity else { return Ok(()) };
        if file_identity(&self.inner.path) != Some(opened) {
            return Err(StoreError::Unavailable(format!(
                "the database file {} was deleted or replaced while the server ran; writes are refused so that none is lost: restart the server",
                self.inner.path.display()
            )));
        }
        Ok(())
    }

    /// Note whether a write ran out of space (for `/healthz`).
    fn written<T>(&self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        match &r {
            Ok(_) => self.inner.disk_full.store(false, Ordering::Relaxed),
            Err(StoreError::Full(_)) => self.inner.disk_full.store(true, Ordering::Relaxed),
            Err(_) => {}
        }
        r
    }

    fn reader(&self) -> MutexGuard<'_, Connection> {
        let readers = &self.inner.readers;
        let start = self.inner.next_reader.fetch_add(1, Ordering::Relaxed);
        for i in 0..readers.len() {
            if let Ok(c) = readers[(start + i) % readers.len()].try_lock() {
                return c;
            }
        }
        readers[start % readers.len()].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run blocking SQLite work off the async workers (a commit waits for fsync).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&SqliteStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || f(&this))
            .await
            .map_err(|e| StoreError::Internal(format!("database task failed: {e}")))?
    }

    pub fn check_now(&self) -> Result<(), StoreError> {
        self.file_still_there()?;
        if self.inner.disk_full.load(Ordering::Relaxed) {
            return Err(StoreError::Full(format!(
                "the last write to {} failed because the disk is full",
                self.inner.path.display()
            )));
        }
        let v: i64 = self.reader().query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if v as usize != MIGRATIONS.len() {
            return Err(StoreError::Unavailable(format!("schema version {v}, expected {}", MIGRATIONS.len())));
        }
        Ok(())
    }

    pub fn record_feedback_now(&self, f: &Feedback, meta: &FeedbackMeta) -> Result<FeedbackSaved, StoreError> {
        let r = (|| {
            let mut conn = self.writer()?;
            // IMMEDIATE: the checks and the insert see one state of the table.
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            if let Some(rid) = &meta.report_id {
                let found: Option<i64> =
                    tx.query_row("SELECT id FROM feedback WHERE report_id = ?1", params![rid], |r| r.get(0)).optional()?;
                if let Some(id) = found {
                    return Ok(FeedbackSaved { id, counted: false });
                }
            }
            if let Some(client) = &meta.client {
                let window = meta.policy.duplicate_window.as_secs();
                if window > 0 {
                    let found: Option<i64> = tx
                        .prepare_cached(
                            "SELECT id FROM feedback WHERE client = ?1
                               AND created_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?2)
                               AND entry = ?3 AND fix = ?4 AND outcome = ?5 AND platform IS ?6
                               AND hardware IS ?7 AND version IS ?8 AND note IS ?9
                             ORDER BY id LIMIT 1",
                        )?
                        .query_row(
                            params![client, format!("-{window} seconds"), f.entry, f.fix, f.outcome.as_str(), f.platform, f.hardware, f.version, f.note],
                            |r| r.get(0),
                        )
                        .optional()?;
                    if let Some(id) = found {
                        return Ok(FeedbackSaved { id, counted: false });
                    }
                }
                let max = meta.policy.max_per_client_per_hour;
                if max > 0 {
                    let recent: i64 = tx.prepare_cached(
                        "SELECT COUNT(*) FROM feedback WHERE client = ?1 AND created_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-3600 seconds')",
                    )?
                    .query_row(params![client], |r| r.get(0))?;
                    if recent >= max as i64 {
                        return Err(super::rate_limited(max));
                    }
                }
            }
            tx.prepare_cached(
                "INSERT INTO feedback (entry, fix, outcome, platform, hardware, version, note, report_id, client)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![f.entry, f.fix, f.outcome.as_str(), f.platform, f.hardware, f.version, f.note, meta.report_id, meta.client])?;
            let id = tx.last_insert_rowid();
            tx.commit()?;
            Ok(FeedbackSaved { id, counted: true })
        })();
        self.written(r)
    }

    pub fn feedback_by_id_now(&self, id: i64) -> Result<Option<Feedback>, StoreError> {
        let conn = self.reader();
        let mut stmt = conn.prepare_cached(
            "SELECT entry, fix, outcome, platform, hardware, version, note FROM feedback WHERE id = ?1",
        )?;
        Ok(stmt
            .query_row(params![id], |r| {
                Ok(Feedback {
                    entry: r.get(0)?,
                    fix: r.get(1)?,
                    outcome: Outcome::parse(&r.get::<_, String>(2)?).unwrap_or(Outcome::DidNotWork),
                    platform: r.get(3)?,
                    hardware: r.get(4)?,
                    version: r.get(5)?,
                    note: r.get(6)?,
                })
            })
            .optional()?)
    }

    pub fn outcomes_now(&self, entry: &str) -> Result<BTreeMap<String, FixOutcomes>, StoreError> {
        let conn = self.reader();
        // Kept by triggers (migration 2): reading costs the (platform, hardware) groups.
        let mut stmt = conn.prepare_cached(
            "SELECT fix, NULLIF(platform, ''), NULLIF(hardware, ''), worked, did_not_work
             FROM feedback_tally WHERE entry = ?1
             ORDER BY fix, platform, hardware",
        )?;
        let rows = stmt
            .query_map(params![entry], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, i64>(3)?.max(0) as u64, r.get::<_, i64>(4)?.max(0) as u64))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(outcomes_from_rows(rows))
    }

    /// Store a log within the quota, evicting the oldest logs if needed; one transaction,
    /// committed (and fsynced) before returning. `None` when the log alone exceeds the quota.
    pub fn store_log_now(&self, body: &[u8], policy: &LogStorePolicy) -> Result<Option<Stored>, StoreError> {
        let len = body.len() as u64;
        if policy.max_bytes.is_some_and(|max| len + ROW_OVERHEAD > max) {
            return Ok(None);
        }
        let r = (|| {
            let mut conn = self.writer()?;
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut evicted = 0u64;
            if let Some(max) = policy.max_bytes {
                // Maintained by triggers (migration 3): no scan of the table.
                let (logs, bytes): (i64, i64) = tx.query_row(
                    "SELECT logs, bytes FROM submitted_logs_total WHERE id = 1",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?;
                let mut excess = crate::retention::excess(logs, bytes, len, max);
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
            let link = super::new_link()?;
            tx.prepare_cached("INSERT INTO submitted_logs (bytes, body, link) VALUES (?1, ?2, ?3)")?
                .execute(params![len as i64, body, link])?;
            let id = tx.last_insert_rowid();
            tx.commit()?;
            Ok(Some(Stored { id, evicted, link }))
        })();
        self.written(r)
    }

    pub fn stored_log_now(&self, link: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let conn = self.reader();
        let body = conn
            .prepare_cached("SELECT body FROM submitted_logs WHERE link = ?1")?
            .query_row(params![link], |r| r.get(0))
            .optional()?;
        Ok(body)
    }

    pub fn purge_logs_older_than_now(&self, age: Duration) -> Result<u64, StoreError> {
        let r = (|| {
            let conn = self.writer()?;
            let n = conn
                .prepare_cached("DELETE FROM submitted_logs WHERE created_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1)")?
                .execute(params![format!("-{} seconds", age.as_secs())])?;
            Ok(n as u64)
        })();
        self.written(r)
    }

    pub fn stored_logs_now(&self) -> Result<(u64, u64), StoreError> {
        let conn = self.reader();
        let (n, bytes): (i64, i64) =
            conn.query_row("SELECT logs, bytes FROM submitted_logs_total WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok((n.max(0) as u64, bytes.max(0) as u64))
    }

    pub fn add_report_now(&self, r: &NewReport) -> Result<ReportSaved, StoreError> {
        let versions = serde_json::to_string(&r.labels.versions).unwrap_or_else(|_| "{}".into());
        let extra = serde_json::to_string(&r.labels.extra).unwrap_or_else(|_| "{}".into());
        let report = r.report.to_string();
        let res = (|| {
            let conn = self.writer()?;
            let l = &r.labels;
            let id: Option<i64> = conn
                .prepare_cached(
                    "INSERT INTO reports (report_id, token_id, source, job_id, cluster, host, rank, user_name, image,
                                          exit_status, versions, extra, entry, category, memory_failure, findings, report)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
                     ON CONFLICT (report_id) DO NOTHING RETURNING id",
                )?
                .query_row(
                    params![
                        r.report_id, r.token_id, r.source, l.job_id, l.cluster, l.host, l.rank, l.user, l.image,
                        l.exit_status, versions, extra, r.entry, r.category, r.memory_failure, r.findings, report
                    ],
                    |row| row.get(0),
                )
                .optional()?;
            match id {
                Some(id) => Ok(ReportSaved { id, created: true }),
                None => {
                    let id = conn.query_row("SELECT id FROM reports WHERE report_id = ?1", params![r.report_id], |row| row.get(0))?;
                    Ok(ReportSaved { id, created: false })
                }
            }
        })();
        self.written(res)
    }

    pub fn reports_now(&self, q: &ReportQuery) -> Result<Vec<ReportRow>, StoreError> {
        let conn = self.reader();
        let mut stmt = conn.prepare_cached(
            "SELECT id, created_at, report_id, source, job_id, cluster, host, rank, user_name, image, exit_status,
                    versions, extra, entry, category, memory_failure, findings,
                    CASE WHEN ?4 THEN report END
             FROM reports
             WHERE (?1 IS NULL OR created_at >= ?1) AND (?2 IS NULL OR created_at < ?2) AND (?5 IS NULL OR id = ?5)
             ORDER BY created_at DESC, id DESC LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![q.since, q.until, q.limit as i64, q.with_report, q.id], |r| {
            let versions: String = r.get(11)?;
            let extra: String = r.get(12)?;
            let report: Option<String> = r.get(17)?;
            Ok(ReportRow {
                id: r.get(0)?,
                created_at: r.get(1)?,
                report_id: r.get(2)?,
                source: r.get(3)?,
                labels: Labels {
                    job_id: r.get(4)?,
                    cluster: r.get(5)?,
                    host: r.get(6)?,
                    rank: r.get(7)?,
                    user: r.get(8)?,
                    image: r.get(9)?,
                    exit_status: r.get(10)?,
                    versions: serde_json::from_str(&versions).unwrap_or_default(),
                    extra: serde_json::from_str(&extra).unwrap_or_default(),
                },
                entry: r.get(13)?,
                category: r.get(14)?,
                memory_failure: r.get(15)?,
                findings: r.get::<_, i64>(16)?.max(0) as u32,
                report: report.and_then(|s| serde_json::from_str(&s).ok()),
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    pub fn count_reports_now(&self) -> Result<u64, StoreError> {
        Ok(self.reader().query_row("SELECT COUNT(*) FROM reports", [], |r| r.get::<_, i64>(0))? as u64)
    }

    pub fn create_token_now(&self, name: &str, hash: &str) -> Result<TokenInfo, StoreError> {
        let r = (|| {
            let conn = self.writer()?;
            let inserted = conn
                .prepare_cached("INSERT INTO api_tokens (name, hash) VALUES (?1, ?2) RETURNING id, created_at")?
                .query_row(params![name, hash], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)));
            match inserted {
                Ok((id, created_at)) => Ok(TokenInfo { id, name: name.to_string(), created_at, revoked_at: None }),
                Err(e) if e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                    Err(StoreError::Invalid(format!("a token named `{name}` exists already; revoke it first or pick another name")))
                }
                Err(e) => Err(e.into()),
            }
        })();
        self.written(r)
    }

    pub fn revoke_token_now(&self, name: &str) -> Result<bool, StoreError> {
        let r = (|| {
            let conn = self.writer()?;
            let n = conn.execute(
                "UPDATE api_tokens SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE name = ?1 AND revoked_at IS NULL",
                params![name],
            )?;
            Ok(n > 0)
        })();
        self.written(r)
    }

    pub fn tokens_now(&self, hash: Option<&str>) -> Result<Vec<TokenInfo>, StoreError> {
        let conn = self.reader();
        let mut stmt = conn.prepare_cached(
            "SELECT id, name, created_at, revoked_at FROM api_tokens
             WHERE ?1 IS NULL OR (hash = ?1 AND revoked_at IS NULL) ORDER BY id",
        )?;
        let rows = stmt.query_map(params![hash], |r| {
            Ok(TokenInfo { id: r.get(0)?, name: r.get(1)?, created_at: r.get(2)?, revoked_at: r.get(3)? })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}

#[async_trait::async_trait]
impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn check(&self) -> Result<(), StoreError> {
        self.blocking(|s| s.check_now()).await
    }

    async fn record_feedback(&self, feedback: &Feedback, meta: &FeedbackMeta) -> Result<FeedbackSaved, StoreError> {
        let (f, m) = (feedback.clone(), meta.clone());
        self.blocking(move |s| s.record_feedback_now(&f, &m)).await
    }

    async fn feedback_by_id(&self, id: i64) -> Result<Option<Feedback>, StoreError> {
        self.blocking(move |s| s.feedback_by_id_now(id)).await
    }

    async fn outcomes(&self, entry: &str) -> Result<BTreeMap<String, FixOutcomes>, StoreError> {
        let entry = entry.to_string();
        self.blocking(move |s| s.outcomes_now(&entry)).await
    }

    async fn store_log(&self, body: Arc<Vec<u8>>, policy: &LogStorePolicy) -> Result<Option<Stored>, StoreError> {
        let policy = policy.clone();
        self.blocking(move |s| s.store_log_now(&body, &policy)).await
    }

    async fn stored_log(&self, link: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let link = link.to_string();
        self.blocking(move |s| s.stored_log_now(&link)).await
    }

    async fn purge_logs_older_than(&self, age: Duration) -> Result<u64, StoreError> {
        self.blocking(move |s| s.purge_logs_older_than_now(age)).await
    }

    async fn stored_logs(&self) -> Result<(u64, u64), StoreError> {
        self.blocking(|s| s.stored_logs_now()).await
    }

    async fn add_report(&self, report: &NewReport) -> Result<ReportSaved, StoreError> {
        let r = report.clone();
        self.blocking(move |s| s.add_report_now(&r)).await
    }

    async fn reports(&self, query: &ReportQuery) -> Result<Vec<ReportRow>, StoreError> {
        let q = query.clone();
        self.blocking(move |s| s.reports_now(&q)).await
    }

    async fn count_reports(&self) -> Result<u64, StoreError> {
        self.blocking(|s| s.count_reports_now()).await
    }

    async fn create_token(&self, name: &str, hash: &str) -> Result<TokenInfo, StoreError> {
        let (n, h) = (name.to_string(), hash.to_string());
        self.blocking(move |s| s.create_token_now(&n, &h)).await
    }

    async fn revoke_token(&self, name: &str) -> Result<bool, StoreError> {
        let n = name.to_string();
        self.blocking(move |s| s.revoke_token_now(&n)).await
    }

    async fn tokens(&self) -> Result<Vec<TokenInfo>, StoreError> {
        self.blocking(|s| s.tokens_now(None)).await
    }

    async fn token_by_hash(&self, hash: &str) -> Result<Option<TokenInfo>, StoreError> {
        let h = hash.to_string();
        self.blocking(move |s| Ok(s.tokens_now(Some(&h))?.pop())).await
    }
}

fn configure(c: &Connection) -> Result<(), StoreError> {
    c.busy_timeout(Duration::from_secs(5))?;
    // FULL: the WAL is fsynced at every commit, so an acknowledged write survives
    // a crash of the process and of the machine.
    c.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
    Ok(())
}

fn migrate(c: &mut Connection) -> Result<(), StoreError> {
    let tx = c.transaction()?;
    let done: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if done as usize > MIGRATIONS.len() {
        return Err(StoreError::Unavailable(format!(
            "database schema version {done} is newer than this oomdoc ({}); use a newer oomdoc",
            MIGRATIONS.len()
        )));
    }
    for sql in &MIGRATIONS[done as usize..] {
        tx.execute_batch(sql)?;
    }
    // PRAGMA takes no bound parameters; the value is a constant from this file.
    tx.execute_batch(&format!("PRAGMA user_version = {}", MIGRATIONS.len()))?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests;
