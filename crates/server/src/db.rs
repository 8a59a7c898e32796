//! The server's one SQLite file: feedback reports and (only when a user opts in) logs.
//!
//! Durability: WAL with `synchronous=FULL`, so a feedback write is on disk when
//! its transaction commits, before the client sees the acknowledgement.
//! All SQL uses bound parameters.

use crate::stats::Tally;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde::{Deserialize, Serialize};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Mutex, MutexGuard,
    },
    time::Duration,
};

/// Schema versions, applied in order; `PRAGMA user_version` records how many ran.
/// Never edit a released migration: append a new one.
const MIGRATIONS: &[&str] = &[
    // 1: feedback reports and opted-in logs.
    "CREATE TABLE feedback (
        id          INTEGER PRIMARY KEY,
        created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        entry       TEXT NOT NULL,
        fix         TEXT NOT NULL,
        outcome     TEXT NOT NULL CHECK (outcome IN ('worked', 'did-not-work')),
        platform    TEXT,
        hardware    TEXT,
        version     TEXT,
        note        TEXT
    );
    CREATE INDEX feedback_by_fix ON feedback (entry, fix);
    CREATE TABLE submitted_logs (
        id          INTEGER PRIMARY KEY,
        created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        bytes       INTEGER NOT NULL,
        body        BLOB NOT NULL
    );",
    // 2: per-fix counts kept by triggers, so reading a fix's outcomes costs the number of
    // (platform, hardware) groups, not the number of reports (20 000 reports on one fix
    // made every feedback answer and entry page scan them all). Triggers keep the counts
    // right whichever way rows change, `sqlite3` edits by hand included.
    // NULL platform / hardware are stored as '' (NULLs would never conflict in the key).
    "CREATE TABLE feedback_tally (
        entry        TEXT NOT NULL,
        fix          TEXT NOT NULL,
        platform     TEXT NOT NULL,
        hardware     TEXT NOT NULL,
        worked       INTEGER NOT NULL DEFAULT 0,
        did_not_work INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (entry, fix, platform, hardware)
    ) WITHOUT ROWID;
    INSERT INTO feedback_tally (entry, fix, platform, hardware, worked, did_not_work)
        SELECT entry, fix, COALESCE(platform, ''), COALESCE(hardware, ''),
               SUM(outcome = 'worked'), SUM(outcome = 'did-not-work')
        FROM feedback GROUP BY 1, 2, 3, 4;
    CREATE TRIGGER feedback_tally_insert AFTER INSERT ON feedback BEGIN
        INSERT INTO feedback_tally (entry, fix, platform, hardware, worked, did_not_work)
        VALUES (NEW.entry, NEW.fix, COALESCE(NEW.platform, ''), COALESCE(NEW.hardware, ''),
                NEW.outcome = 'worked', NEW.outcome = 'did-not-work')
        ON CONFLICT (entry, fix, platform, hardware) DO UPDATE SET
            worked = worked + excluded.worked, did_not_work = did_not_work + excluded.did_not_work;
    END;
    CREATE TRIGGER feedback_tally_delete AFTER DELETE ON feedback BEGIN
        UPDATE feedback_tally SET worked = worked - (OLD.outcome = 'worked'),
                                  did_not_work = did_not_work - (OLD.outcome = 'did-not-work')
        WHERE entry = OLD.entry AND fix = OLD.fix
          AND platform = COALESCE(OLD.platform, '') AND hardware = COALESCE(OLD.hardware, '');
        DELETE FROM feedback_tally WHERE worked <= 0 AND did_not_work <= 0;
    END;
    CREATE TRIGGER feedback_tally_update AFTER UPDATE OF entry, fix, outcome, platform, hardware ON feedback BEGIN
        UPDATE feedback_tally SET worked = worked - (OLD.outcome = 'worked'),
                                  did_not_work = did_not_work - (OLD.outcome = 'did-not-work')
        WHERE entry = OLD.entry AND fix = OLD.fix
          AND platform = COALESCE(OLD.platform, '') AND hardware = COALESCE(OLD.hardware, '');
        DELETE FROM feedback_tally WHERE worked <= 0 AND did_not_work <= 0;
        INSERT INTO feedback_tally (entry, fix, platform, hardware, worked, did_not_work)
        VALUES (NEW.entry, NEW.fix, COALESCE(NEW.platform, ''), COALESCE(NEW.hardware, ''),
                NEW.outcome = 'worked', NEW.outcome = 'did-not-work')
        ON CONFLICT (entry, fix, platform, hardware) DO UPDATE SET
            worked = worked + excluded.worked, did_not_work = did_not_work + excluded.did_not_work;
    END;",
    // 3: running count and size of the kept logs, so the --max-stored-log-mib check costs
    // the same with a million kept logs as with one (crate::retention).
    "CREATE TABLE submitted_logs_total (
        id     INTEGER PRIMARY KEY CHECK (id = 1),
        logs   INTEGER NOT NULL,
        bytes  INTEGER NOT NULL
    );
    INSERT INTO submitted_logs_total (id, logs, bytes)
        SELECT 1, COUNT(*), COALESCE(SUM(bytes), 0) FROM submitted_logs;
    CREATE TRIGGER submitted_logs_total_insert AFTER INSERT ON submitted_logs BEGIN
        UPDATE submitted_logs_total SET logs = logs + 1, bytes = bytes + NEW.bytes WHERE id = 1;
    END;
    CREATE TRIGGER submitted_logs_total_delete AFTER DELETE ON submitted_logs BEGIN
        UPDATE submitted_logs_total SET logs = logs - 1, bytes = bytes - OLD.bytes WHERE id = 1;
    END;
    CREATE TRIGGER submitted_logs_total_update AFTER UPDATE OF bytes ON submitted_logs BEGIN
        UPDATE submitted_logs_total SET bytes = bytes - OLD.bytes + NEW.bytes WHERE id = 1;
    END;",
];

/// Readers in the pool; SQLite in WAL mode lets them run beside the writer.
const READERS: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Worked,
    DidNotWork,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Worked => "worked",
            Outcome::DidNotWork => "did-not-work",
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        match s {
            "worked" => Some(Outcome::Worked),
            "did-not-work" => Some(Outcome::DidNotWork),
            _ => None,
        }
    }
}

/// One validated feedback report, as stored.
#[derive(Debug, Clone, Serialize)]
pub struct Feedback {
    pub entry: String,
    pub fix: String,
    pub outcome: Outcome,
    pub platform: Option<String>,
    pub hardware: Option<String>,
    pub version: Option<String>,
    pub note: Option<String>,
}

/// Measured outcomes of one fix: overall and per platform + hardware.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FixOutcomes {
    pub fix: String,
    #[serde(flatten)]
    pub total: Tally,
    pub by_hardware: Vec<HardwareTally>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HardwareTally {
    pub platform: Option<String>,
    pub hardware: Option<String>,
    #[serde(flatten)]
    pub tally: Tally,
}

pub struct Db {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
}

#[derive(Debug)]
pub struct DbError(pub String);

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DbError {}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        DbError(format!("database: {e}"))
    }
}

impl Db {
    /// Open (creating if needed) and migrate the database file.
    pub fn open(path: &Path) -> Result<Db, DbError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| DbError(format!("cannot create {}: {e}", dir.display())))?;
        }
        let mut writer = Connection::open(path).map_err(|e| DbError(format!("cannot open {}: {e}", path.display())))?;
        configure(&writer)?;
        let mode: String = writer.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(DbError(format!("{}: SQLite refused WAL mode (got {mode})", path.display())));
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
            .collect::<Result<Vec<_>, DbError>>()?;
        Ok(Db { path: path.to_owned(), writer: Mutex::new(writer), readers, next_reader: AtomicUsize::new(0) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn writer(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a half-done transaction
        // behind (rusqlite rolls back on drop), so a poisoned lock is still usable.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn reader(&self) -> MutexGuard<'_, Connection> {
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        for i in 0..self.readers.len() {
            if let Ok(c) = self.readers[(start + i) % self.readers.len()].try_lock() {
                return c;
            }
        }
        self.readers[start % self.readers.len()].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Store one report; returns its row id once committed to disk.
    pub fn insert_feedback(&self, f: &Feedback) -> Result<i64, DbError> {
        let conn = self.writer();
        let mut stmt = conn.prepare_cached(
            "INSERT INTO feedback (entry, fix, outcome, platform, hardware, version, note)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        stmt.execute(params![f.entry, f.fix, f.outcome.as_str(), f.platform, f.hardware, f.version, f.note])?;
        Ok(conn.last_insert_rowid())
    }

    /// Keep a log the user explicitly chose to share.
    pub fn insert_log(&self, body: &[u8]) -> Result<i64, DbError> {
        let conn = self.writer();
        conn.prepare_cached("INSERT INTO submitted_logs (bytes, body) VALUES (?1, ?2)")?
            .execute(params![body.len() as i64, body])?;
        Ok(conn.last_insert_rowid())
    }

    /// A read and the schema version, for `/healthz`.
    pub fn check(&self) -> Result<(), DbError> {
        let v: i64 = self.reader().query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if v as usize != MIGRATIONS.len() {
            return Err(DbError(format!("schema version {v}, expected {}", MIGRATIONS.len())));
        }
        Ok(())
    }

    pub fn count_logs(&self) -> Result<u64, DbError> {
        let conn = self.reader();
        Ok(conn.query_row("SELECT COUNT(*) FROM submitted_logs", [], |r| r.get::<_, i64>(0))? as u64)
    }

    pub fn feedback_by_id(&self, id: i64) -> Result<Option<Feedback>, DbError> {
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

    /// Measured outcomes of every fix of `entry` that has at least one report.
    pub fn outcomes(&self, entry: &str) -> Result<BTreeMap<String, FixOutcomes>, DbError> {
        let conn = self.reader();
        let mut stmt = conn.prepare_cached(
            "SELECT fix, NULLIF(platform, ''), NULLIF(hardware, ''), worked, did_not_work
             FROM feedback_tally WHERE entry = ?1
             ORDER BY fix, platform, hardware",
        )?;
        let rows = stmt.query_map(params![entry], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, i64>(3)? as u64,
                r.get::<_, i64>(4)? as u64,
            ))
        })?;
        let mut out: BTreeMap<String, (u64, u64, Vec<HardwareTally>)> = BTreeMap::new();
        for row in rows {
            let (fix, platform, hardware, worked, failed) = row?;
            let acc = out.entry(fix).or_default();
            acc.0 += worked;
            acc.1 += failed;
            acc.2.push(HardwareTally { platform, hardware, tally: Tally::new(worked, failed) });
        }
        Ok(out
            .into_iter()
            .map(|(fix, (worked, failed, by_hardware))| {
                let total = Tally::new(worked, failed);
                (fix.clone(), FixOutcomes { fix, total, by_hardware })
            })
            .collect())
    }
}

fn configure(c: &Connection) -> Result<(), DbError> {
    c.busy_timeout(Duration::from_secs(5))?;
    // FULL: the WAL is fsynced at every commit, so an acknowledged write survives
    // a crash of the process and of the machine.
    c.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
    Ok(())
}

fn migrate(c: &mut Connection) -> Result<(), DbError> {
    let tx = c.transaction()?;
    let done: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if done as usize > MIGRATIONS.len() {
        return Err(DbError(format!(
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
mod tests {
    use super::*;

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
            let db = Db::open(&path).unwrap();
            for _ in 0..4 {
                db.insert_feedback(&report("raise", Outcome::Worked, Some("v5e"))).unwrap();
            }
            db.insert_feedback(&report("raise", Outcome::DidNotWork, Some("v4"))).unwrap();
            db.insert_feedback(&report("shrink", Outcome::Worked, None)).unwrap();
        }
        // Reopening must not re-run migrations (they would fail on existing tables).
        let db = Db::open(&path).unwrap();
        let o = db.outcomes("tpu.scoped-vmem").unwrap();
        assert_eq!(o["raise"].total.reports, 5);
        assert_eq!(o["raise"].total.worked, 4);
        assert!(o["raise"].total.rate.is_some());
        assert_eq!(o["raise"].by_hardware.len(), 2);
        assert_eq!(o["shrink"].total.rate, None);
        assert!(db.outcomes("no.such").unwrap().is_empty());
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
        let db = Db::open(&path).unwrap();
        assert_eq!(db.stored_logs().unwrap(), (1, 3), "migration 3 counts the kept logs");
        let o = db.outcomes("tpu.scoped-vmem").unwrap();
        assert_eq!((o["raise"].total.worked, o["raise"].total.did_not_work), (2, 1));
        assert_eq!(o["raise"].by_hardware.len(), 2);
        assert_eq!(o["raise"].by_hardware[0].hardware, None, "'' reads back as no hardware");
        db.insert_feedback(&report("raise", Outcome::DidNotWork, Some("v5e"))).unwrap();
        let c = Connection::open(&path).unwrap();
        c.execute("DELETE FROM feedback WHERE hardware IS NULL", []).unwrap();
        c.execute("UPDATE feedback SET outcome = 'did-not-work' WHERE id = 1", []).unwrap();
        let o = db.outcomes("tpu.scoped-vmem").unwrap();
        assert_eq!((o["raise"].total.worked, o["raise"].total.did_not_work), (1, 2));
        // Left: (no platform, v5e) from the old rows and (tpu, v5e); the emptied (none, none) group is gone.
        assert_eq!(o["raise"].by_hardware.len(), 2);
        assert!(o["raise"].by_hardware.iter().all(|h| h.hardware.as_deref() == Some("v5e")));
        c.execute("DELETE FROM feedback", []).unwrap();
        assert!(db.outcomes("tpu.scoped-vmem").unwrap().is_empty());
    }

    #[test]
    fn hostile_text_is_stored_verbatim() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("x.db")).unwrap();
        let mut f = report("x'); DROP TABLE feedback; --", Outcome::Worked, Some("\"; DELETE FROM feedback"));
        f.note = Some("<script>alert(1)</script>".into());
        let id = db.insert_feedback(&f).unwrap();
        let back = db.feedback_by_id(id).unwrap().unwrap();
        assert_eq!(back.fix, f.fix);
        assert_eq!(back.note, f.note);
        assert_eq!(db.outcomes("tpu.scoped-vmem").unwrap().len(), 1);
    }
}
