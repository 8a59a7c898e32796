//! The team store: PostgreSQL (`--db postgres://user:password@host/db`), which several
//! `oomdoc serve` replicas can share.
//!
//! tokio-postgres over a deadpool pool, without TLS (reach the database on a private
//! network, a unix socket or a tunnel; `sslmode=require` is refused with that reason).
//! Every write is one transaction, acknowledged after PostgreSQL's commit (with its
//! default `synchronous_commit = on`, durable). Rules that span rows take locks so that
//! replicas agree: the stored-log quota locks its running total's row, the feedback
//! rules lock the client's key (`pg_advisory_xact_lock`), migrations a fixed key.

pub mod cluster;

use super::{
    outcomes_from_rows, Feedback, FeedbackMeta, FeedbackSaved, FixOutcomes, Labels, LogStorePolicy, NewReport, Outcome,
    ReportQuery, ReportRow, ReportSaved, Store, StoreError, Stored, TokenInfo,
};
use crate::retention::ROW_OVERHEAD;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::{collections::BTreeMap, sync::Arc, time::Duration};
use tokio_postgres::{config::SslMode, error::SqlState, NoTls, Row};

/// Schema versions, applied in order; `oomdoc_schema.version` records how many ran.
/// Never edit a released migration: append a new one.
pub const MIGRATIONS: &[&str] =
    &[include_str!("migrations/0001-initial.sql"), include_str!("migrations/0002-stored-log-links.sql")];

/// Connections per replica: writes wait on commits, not CPU, so more than the cores.
const POOL_SIZE: usize = 16;

/// The advisory-lock key migrations hold, so replicas starting at once migrate in turn.
const MIGRATION_LOCK: i64 = 0x6f6f_6d64_6f63; // "oomdoc"

/// `created_at` as the SQLite store writes it: UTC, milliseconds, `Z`.
const CREATED_AT: &str = r#"to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"#;

pub struct PgStore {
    pool: Pool,
}

fn pg_error(e: tokio_postgres::Error) -> StoreError {
    match e.code() {
        Some(c) if *c == SqlState::DISK_FULL || *c == SqlState::OUT_OF_MEMORY || *c == SqlState::INSUFFICIENT_RESOURCES => {
            StoreError::Full(format!("PostgreSQL is out of space ({e}); nothing was stored: free space on the database server, then retry"))
        }
        Some(c)
            if *c == SqlState::ADMIN_SHUTDOWN
                || *c == SqlState::CRASH_SHUTDOWN
                || *c == SqlState::CANNOT_CONNECT_NOW
                || *c == SqlState::READ_ONLY_SQL_TRANSACTION
                || *c == SqlState::T_R_SERIALIZATION_FAILURE
                || *c == SqlState::T_R_DEADLOCK_DETECTED
                || *c == SqlState::TOO_MANY_CONNECTIONS =>
        {
            StoreError::Unavailable(format!("PostgreSQL cannot take this write now ({e}); retry"))
        }
        Some(_) => StoreError::Internal(format!("database: {e}")),
        // No SQLSTATE: the connection itself failed.
        None => StoreError::Unavailable(format!("cannot reach PostgreSQL: {e}")),
    }
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        pg_error(e)
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Backend(e) => pg_error(e),
            e => StoreError::Unavailable(format!("cannot reach PostgreSQL: {e}")),
        }
    }
}

impl PgStore {
    /// Connect, check the URL, and migrate (once, whichever replica comes first).
    pub async fn open(url: &str) -> Result<PgStore, StoreError> {
        let redacted = super::Location::Postgres(url.to_string()).redacted();
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e| StoreError::Unavailable(format!("{redacted}: not a PostgreSQL URL this oomdoc can read: {e}")))?;
        if config.get_ssl_mode() == SslMode::Require {
            return Err(StoreError::Unavailable(format!(
                "{redacted}: sslmode=require, but this oomdoc connects to PostgreSQL without TLS; reach it over a private network, a unix socket or a tunnel"
            )));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("oomdoc serve");
        }
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(30)))
            .create_timeout(Some(Duration::from_secs(10)))
            .build()
            .map_err(|e| StoreError::Internal(format!("PostgreSQL pool: {e}")))?;
        let mut client = pool.get().await.map_err(|e| StoreError::Unavailable(format!("{redacted}: {}", StoreError::from(e))))?;
        migrate(&mut client).await?;
        drop(client);
        Ok(PgStore { pool })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        Ok(self.pool.get().await?)
    }
}

async fn migrate(client: &mut deadpool_postgres::Object) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS oomdoc_schema (version INTEGER NOT NULL)").await?;
    let done: i32 = match tx.query_opt("SELECT version FROM oomdoc_schema", &[]).await? {
        Some(row) => row.get(0),
        None => {
            tx.execute("INSERT INTO oomdoc_schema (version) VALUES (0)", &[]).await?;
            0
        }
    };
    if done as usize > MIGRATIONS.len() {
        return Err(StoreError::Unavailable(format!(
            "database schema version {done} is newer than this oomdoc ({}); use a newer oomdoc",
            MIGRATIONS.len()
        )));
    }
    for sql in &MIGRATIONS[done as usize..] {
        tx.batch_execute(sql).await?;
    }
    tx.execute("UPDATE oomdoc_schema SET version = $1", &[&(MIGRATIONS.len() as i32)]).await?;
    tx.commit().await?;
    Ok(())
}

fn seconds(d: Duration) -> String {
    format!("{} seconds", d.as_secs())
}

fn report_row(r: &Row) -> ReportRow {
    let map = |v: serde_json::Value| serde_json::from_value(v).unwrap_or_default();
    ReportRow {
        id: r.get(0),
        created_at: r.get(1),
        report_id: r.get(2),
        source: r.get(3),
        labels: Labels {
            job_id: r.get(4),
            cluster: r.get(5),
            host: r.get(6),
            rank: r.get(7),
            user: r.get(8),
            image: r.get(9),
            exit_status: r.get(10),
            versions: map(r.get(11)),
            extra: map(r.get(12)),
        },
        entry: r.get(13),
        category: r.get(14),
        memory_failure: r.get(15),
        findings: r.get::<_, i32>(16).max(0) as u32,
        report: r.get(17),
    }
}

fn token_row(r: &Row) -> TokenInfo {
    TokenInfo { id: r.get(0), name: r.get(1), created_at: r.get(2), revoked_at: r.get(3) }
}

#[async_trait::async_trait]
impl Store for PgStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn check(&self) -> Result<(), StoreError> {
        let client = self.client().await?;
        let v: i32 = client.query_one("SELECT version FROM oomdoc_schema", &[]).await?.get(0);
        if v as usize != MIGRATIONS.len() {
            return Err(StoreError::Unavailable(format!("schema version {v}, expected {}", MIGRATIONS.len())));
        }
        Ok(())
    }

    async fn record_feedback(&self, f: &Feedback, meta: &FeedbackMeta) -> Result<FeedbackSaved, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        if let Some(rid) = &meta.report_id {
            if let Some(row) = tx.query_opt("SELECT id FROM feedback WHERE report_id = $1", &[rid]).await? {
                return Ok(FeedbackSaved { id: row.get(0), counted: false });
            }
        }
        if let Some(client_key) = &meta.client {
            // Replicas checking the same client take turns, so the rules hold across them.
            tx.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", &[client_key]).await?;
            if !meta.policy.duplicate_window.is_zero() {
                let window = seconds(meta.policy.duplicate_window);
                let found = tx
                    .query_opt(
                        "SELECT id FROM feedback WHERE client = $1 AND created_at > now() - ($2::text)::interval
                           AND entry = $3 AND fix = $4 AND outcome = $5 AND platform IS NOT DISTINCT FROM $6
                           AND hardware IS NOT DISTINCT FROM $7 AND version IS NOT DISTINCT FROM $8
                           AND note IS NOT DISTINCT FROM $9
                         ORDER BY id LIMIT 1",
                        &[client_key, &window, &f.entry, &f.fix, &f.outcome.as_str(), &f.platform, &f.hardware, &f.version, &f.note],
                    )
                    .await?;
                if let Some(row) = found {
                    return Ok(FeedbackSaved { id: row.get(0), counted: false });
                }
            }
            let max = meta.policy.max_per_client_per_hour;
            if max > 0 {
                let recent: i64 = tx
                    .query_one(
                        "SELECT COUNT(*) FROM feedback WHERE client = $1 AND created_at > now() - interval '1 hour'",
                        &[client_key],
                    )
                    .await?
                    .get(0);
                if recent >= max as i64 {
                    return Err(super::rate_limited(max));
                }
            }
        }
        let inserted = tx
            .query_opt(
                "INSERT INTO feedback (entry, fix, outcome, platform, hardware, version, note, report_id, client)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (report_id) DO NOTHING RETURNING id",
                &[&f.entry, &f.fix, &f.outcome.as_str(), &f.platform, &f.hardware, &f.version, &f.note, &meta.report_id, &meta.client],
            )
            .await?;
        let saved = match inserted {
            Some(row) => FeedbackSaved { id: row.get(0), counted: true },
            // Another replica stored the same report_id after our first look.
            None => FeedbackSaved {
                id: tx.query_one("SELECT id FROM feedback WHERE report_id = $1", &[&meta.report_id]).await?.get(0),
                counted: false,
            },
        };
        tx.commit().await?;
        Ok(saved)
    }

    async fn feedback_by_id(&self, id: i64) -> Result<Option<Feedback>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT entry, fix, outcome, platform, hardware, version, note FROM feedback WHERE id = $1", &[&id])
            .await?;
        Ok(row.map(|r| Feedback {
            entry: r.get(0),
            fix: r.get(1),
            outcome: Outcome::parse(r.get(2)).unwrap_or(Outcome::DidNotWork),
            platform: r.get(3),
            hardware: r.get(4),
            version: r.get(5),
            note: r.get(6),
        }))
    }

    async fn outcomes(&self, entry: &str) -> Result<BTreeMap<String, FixOutcomes>, StoreError> {
        let client = self.client().await?;
        // Byte order (COLLATE "C"), as SQLite sorts, whatever the database's locale.
        let rows = client
            .query(
                r#"SELECT fix, platform, hardware,
                          COUNT(*) FILTER (WHERE outcome = 'worked'), COUNT(*) FILTER (WHERE outcome = 'did-not-work')
                   FROM feedback WHERE entry = $1
                   GROUP BY fix, platform, hardware
                   ORDER BY fix COLLATE "C", COALESCE(platform, '') COLLATE "C", COALESCE(hardware, '') COLLATE "C""#,
                &[&entry],
            )
            .await?;
        Ok(outcomes_from_rows(rows.iter().map(|r| {
            (r.get(0), r.get(1), r.get(2), r.get::<_, i64>(3).max(0) as u64, r.get::<_, i64>(4).max(0) as u64)
        })))
    }

    async fn store_log(&self, body: Arc<Vec<u8>>, policy: &LogStorePolicy) -> Result<Option<Stored>, StoreError> {
        let len = body.len() as u64;
        if policy.max_bytes.is_some_and(|max| len + ROW_OVERHEAD > max) {
            return Ok(None);
        }
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        // The running total's row is the quota's lock: replicas storing at once take turns.
        let total = tx.query_one("SELECT logs, bytes FROM submitted_logs_total WHERE id = 1 FOR UPDATE", &[]).await?;
        let (mut evicted, mut evicted_bytes) = (0i64, 0i64);
        if let Some(max) = policy.max_bytes {
            let mut excess = crate::retention::excess(total.get(0), total.get(1), len, max);
            let mut after = 0i64;
            while excess > 0 {
                let rows = tx
                    .query("SELECT id, bytes FROM submitted_logs WHERE id > $1 ORDER BY id LIMIT 256", &[&after])
                    .await?;
                if rows.is_empty() {
                    break;
                }
                let mut victims = Vec::new();
                for r in &rows {
                    if excess == 0 {
                        break;
                    }
                    let (id, bytes): (i64, i64) = (r.get(0), r.get(1));
                    victims.push(id);
                    after = id;
                    evicted_bytes += bytes;
                    excess = excess.saturating_sub(bytes.max(0) as u64 + ROW_OVERHEAD);
                }
                evicted += tx.execute("DELETE FROM submitted_logs WHERE id = ANY($1)", &[&victims]).await? as i64;
            }
        }
        let link = super::new_link()?;
        let id: i64 = tx
            .query_one(
                "INSERT INTO submitted_logs (bytes, body, link) VALUES ($1, $2, $3) RETURNING id",
                &[&(len as i64), &body.as_slice(), &link],
            )
            .await?
            .get(0);
        tx.execute(
            "UPDATE submitted_logs_total SET logs = logs + 1 - $1, bytes = bytes + $2 - $3 WHERE id = 1",
            &[&evicted, &(len as i64), &evicted_bytes],
        )
        .await?;
        tx.commit().await?;
        Ok(Some(Stored { id, evicted: evicted as u64, link }))
    }

    async fn stored_log(&self, link: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let client = self.client().await?;
        let row = client.query_opt("SELECT body FROM submitted_logs WHERE link = $1", &[&link]).await?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn purge_logs_older_than(&self, age: Duration) -> Result<u64, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        // The total's row first, in the same order as store_log, so the two never deadlock.
        tx.execute("SELECT 1 FROM submitted_logs_total WHERE id = 1 FOR UPDATE", &[]).await?;
        let row = tx
            .query_one(
                "WITH gone AS (DELETE FROM submitted_logs WHERE created_at < now() - ($1::text)::interval RETURNING bytes)
                 SELECT COUNT(*), COALESCE(SUM(bytes), 0)::BIGINT FROM gone",
                &[&seconds(age)],
            )
            .await?;
        let (n, bytes): (i64, i64) = (row.get(0), row.get(1));
        if n > 0 {
            tx.execute("UPDATE submitted_logs_total SET logs = logs - $1, bytes = bytes - $2 WHERE id = 1", &[&n, &bytes])
                .await?;
        }
        tx.commit().await?;
        Ok(n as u64)
    }

    async fn stored_logs(&self) -> Result<(u64, u64), StoreError> {
        let client = self.client().await?;
        let r = client.query_one("SELECT logs, bytes FROM submitted_logs_total WHERE id = 1", &[]).await?;
        Ok((r.get::<_, i64>(0).max(0) as u64, r.get::<_, i64>(1).max(0) as u64))
    }

    async fn add_report(&self, r: &NewReport) -> Result<ReportSaved, StoreError> {
        let client = self.client().await?;
        let l = &r.labels;
        let versions = serde_json::to_value(&l.versions).unwrap_or_default();
        let extra = serde_json::to_value(&l.extra).unwrap_or_default();
        let findings = r.findings.min(i32::MAX as u32) as i32;
        let inserted = client
            .query_opt(
                "INSERT INTO reports (report_id, token_id, source, job_id, cluster, host, rank, user_name, image,
                                      exit_status, versions, extra, entry, category, memory_failure, findings, report)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
                 ON CONFLICT (report_id) DO NOTHING RETURNING id",
                &[
                    &r.report_id, &r.token_id, &r.source, &l.job_id, &l.cluster, &l.host, &l.rank, &l.user, &l.image,
                    &l.exit_status, &versions, &extra, &r.entry, &r.category, &r.memory_failure, &findings, &r.report,
                ],
            )
            .await?;
        Ok(match inserted {
            Some(row) => ReportSaved { id: row.get(0), created: true },
            None => ReportSaved {
                id: client.query_one("SELECT id FROM reports WHERE report_id = $1", &[&r.report_id]).await?.get(0),
                created: false,
            },
        })
    }

    async fn reports(&self, q: &ReportQuery) -> Result<Vec<ReportRow>, StoreError> {
        let client = self.client().await?;
        let sql = format!(
            "SELECT id, {CREATED_AT}, report_id, source, job_id, cluster, host, rank, user_name, image, exit_status,
                    versions, extra, entry, category, memory_failure, findings,
                    CASE WHEN $4 THEN report END
             FROM reports
             WHERE ($1::text IS NULL OR created_at >= (($1::text)::timestamp AT TIME ZONE 'UTC'))
               AND ($2::text IS NULL OR created_at < (($2::text)::timestamp AT TIME ZONE 'UTC'))
               AND ($5::bigint IS NULL OR id = $5)
             ORDER BY created_at DESC, id DESC LIMIT $3"
        );
        let rows = client.query(&sql, &[&q.since, &q.until, &(q.limit as i64), &q.with_report, &q.id]).await.map_err(|e| {
            if e.code() == Some(&SqlState::INVALID_DATETIME_FORMAT) || e.code() == Some(&SqlState::DATETIME_FIELD_OVERFLOW) {
                StoreError::Invalid(format!("not a time: {e}"))
            } else {
                pg_error(e)
            }
        })?;
        Ok(rows.iter().map(report_row).collect())
    }

    async fn count_reports(&self) -> Result<u64, StoreError> {
        let client = self.client().await?;
        Ok(client.query_one("SELECT COUNT(*) FROM reports", &[]).await?.get::<_, i64>(0) as u64)
    }

    async fn create_token(&self, name: &str, hash: &str) -> Result<TokenInfo, StoreError> {
        let client = self.client().await?;
        let sql = format!("INSERT INTO api_tokens (name, hash) VALUES ($1, $2) RETURNING id, name, {CREATED_AT}, NULL::text");
        match client.query_one(&sql, &[&name, &hash]).await {
            Ok(row) => Ok(token_row(&row)),
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                Err(StoreError::Invalid(format!("a token named `{name}` exists already; revoke it first or pick another name")))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn revoke_token(&self, name: &str) -> Result<bool, StoreError> {
        let client = self.client().await?;
        Ok(client.execute("UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL", &[&name]).await? > 0)
    }

    async fn tokens(&self) -> Result<Vec<TokenInfo>, StoreError> {
        let client = self.client().await?;
        let sql = format!(
            r#"SELECT id, name, {CREATED_AT}, to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
               FROM api_tokens ORDER BY id"#
        );
        Ok(client.query(&sql, &[]).await?.iter().map(token_row).collect())
    }

    async fn token_by_hash(&self, hash: &str) -> Result<Option<TokenInfo>, StoreError> {
        let client = self.client().await?;
        let sql = format!("SELECT id, name, {CREATED_AT}, NULL::text FROM api_tokens WHERE hash = $1 AND revoked_at IS NULL");
        Ok(client.query_opt(&sql, &[&hash]).await?.map(|r| token_row(&r)))
    }
}
