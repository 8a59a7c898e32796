//! What the server keeps, behind one trait with one implementation per database.
//!
//! - [`Store`] is everything the server stores and reads back: feedback and its tallies,
//!   opted-in logs under a quota, ingested job-failure reports, API tokens.
//! - [`sqlite`] (the embedded default, one file, no other service) and [`postgres`]
//!   (`--db postgres://…`, for several replicas) implement it; each has its own
//!   migrations. `tests/store.rs` runs one conformance suite against both.
//! - Aggregations across reports ([`crate::fleet`]) are computed from [`Store::reports`]
//!   in Rust, so both databases give the same answers by construction.

pub mod postgres;
pub mod sqlite;

use crate::stats::Tally;
use serde::{Deserialize, Serialize};
use std::{collections::BTreeMap, path::PathBuf, sync::Arc, time::Duration};

pub use crate::retention::{LogStorePolicy, Stored};

/// Where the data lives, from `--db`: a file path (SQLite) or a `postgres://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Location {
    /// `postgres://` and `postgresql://` URLs go to PostgreSQL, `sqlite:PATH` and plain paths
    /// to SQLite; any other `scheme://` is refused rather than taken for a file name.
    pub fn parse(s: &str) -> Result<Location, String> {
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            return Ok(Location::Postgres(s.to_string()));
        }
        if let Some(path) = s.strip_prefix("sqlite://").or_else(|| s.strip_prefix("sqlite:")) {
            if path.is_empty() {
                return Err("`sqlite:` needs a file path, e.g. sqlite:/var/lib/oomdoc/oomdoc.sqlite3".into());
            }
            return Ok(Location::Sqlite(PathBuf::from(path)));
        }
        // `scheme:` of two or more letters (one letter is a Windows drive): a URL, not a
        // file name, even when mistyped (`postgres:/db` once created a folder `postgres:`).
        if let Some((scheme, _)) = s.split_once(':') {
            let url_like = scheme.len() >= 2
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
            if url_like {
                let hint = if scheme.to_ascii_lowercase().starts_with("postgres") { " (postgres://USER@HOST/DB)" } else { "" };
                return Err(format!(
                    "this oomdoc cannot store data in `{scheme}:` databases: use a SQLite file path or a postgres:// URL{hint}; a file name with a colon: ./{s}"
                ));
            }
        }
        if s.is_empty() {
            return Err("--db is empty: give a SQLite file path or a postgres:// URL".into());
        }
        Ok(Location::Sqlite(PathBuf::from(s)))
    }

    /// For logs and the start-up line: a URL's password is replaced by `***`.
    pub fn redacted(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(url) => redact_url(url),
        }
    }
}

fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Open (creating and migrating) the store at `location`.
pub async fn open(location: &Location) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match location {
        Location::Sqlite(path) => {
            let path = path.clone();
            Arc::new(tokio::task::spawn_blocking(move || sqlite::SqliteStore::open(&path)).await.map_err(|e| StoreError::Internal(e.to_string()))??)
        }
        Location::Postgres(url) => Arc::new(postgres::PgStore::open(url).await?),
    })
}

/// [`open`] for a task that owns its location (`tokio::spawn`).
pub async fn open_owned(location: Location) -> Result<Arc<dyn Store>, StoreError> {
    open(&location).await
}

/// A store failure, by what the client and operator should do about it.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreError {
    /// The database cannot take writes now (gone, deleted, unreachable): 503.
    Unavailable(String),
    /// The disk (or the database's quota) is full: 507.
    Full(String),
    /// Too many writes from one client: 429 with `Retry-After`.
    RateLimited { message: String, retry_after_secs: u64 },
    /// A request the store refuses as such (e.g. a token name already taken): 422.
    Invalid(String),
    /// Anything else: logged, 500.
    Internal(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Unavailable(m) | StoreError::Full(m) | StoreError::Invalid(m) | StoreError::Internal(m) => f.write_str(m),
            StoreError::RateLimited { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for StoreError {}

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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Feedback {
    pub entry: String,
    pub fix: String,
    pub outcome: Outcome,
    pub platform: Option<String>,
    pub hardware: Option<String>,
    pub version: Option<String>,
    pub note: Option<String>,
}

/// Who sent a feedback report and how it may be counted.
#[derive(Debug, Clone, Default)]
pub struct FeedbackMeta {
    /// Client-chosen id: the same id again (a retry, through any replica) is not counted twice.
    pub report_id: Option<String>,
    /// A pseudonymous key of the sender ([`client_key`]); `None` turns the client rules off.
    pub client: Option<String>,
    pub policy: FeedbackPolicy,
}

/// Rules against one client stuffing the tallies (reliability report, S8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedbackPolicy {
    /// The same report (same fix, outcome and fields) from the same client within this
    /// time counts once; a repeat answers with the first report's id.
    pub duplicate_window: Duration,
    /// Reports one client may have counted per hour; more get 429. 0: no limit.
    pub max_per_client_per_hour: u32,
}

impl Default for FeedbackPolicy {
    /// As `oomdoc serve` without flags: repeats within a day count once, 30 reports an hour.
    fn default() -> Self {
        FeedbackPolicy { duplicate_window: Duration::from_secs(24 * 3600), max_per_client_per_hour: 30 }
    }
}

impl FeedbackPolicy {
    /// No client rules (tests and benchmarks that post thousands of reports from one address).
    pub fn unlimited() -> Self {
        FeedbackPolicy { duplicate_window: Duration::ZERO, max_per_client_per_hour: 0 }
    }
}

pub(crate) fn rate_limited(max: u32) -> StoreError {
    StoreError::RateLimited {
        message: format!("more than {max} feedback reports from this address in the last hour; try again later"),
        retry_after_secs: 600,
    }
}

/// A client address as stored for the feedback rules: a SHA-256 prefix, not the address.
pub fn client_key(addr: &str) -> String {
    hex_prefix(&sha256(format!("oomdoc-feedback-client\0{addr}").as_bytes()), 16)
}

pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

pub fn hex_prefix(bytes: &[u8], n: usize) -> String {
    bytes.iter().take(n).map(|b| format!("{b:02x}")).collect()
}

/// What recording a feedback report did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FeedbackSaved {
    pub id: i64,
    /// `false` when the report repeats one already counted (same `report_id`, or the same
    /// report from the same client within the duplicate window): nothing was added.
    pub counted: bool,
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

/// Rows of (fix, platform, hardware, worked, did_not_work), sorted, into per-fix outcomes.
pub(crate) fn outcomes_from_rows(
    rows: impl IntoIterator<Item = (String, Option<String>, Option<String>, u64, u64)>,
) -> BTreeMap<String, FixOutcomes> {
    let mut out: BTreeMap<String, (u64, u64, Vec<HardwareTally>)> = BTreeMap::new();
    for (fix, platform, hardware, worked, failed) in rows {
        if worked + failed == 0 {
            continue;
        }
        let acc = out.entry(fix).or_default();
        acc.0 += worked;
        acc.1 += failed;
        acc.2.push(HardwareTally { platform, hardware, tally: Tally::new(worked, failed) });
    }
    out.into_iter()
        .map(|(fix, (worked, failed, by_hardware))| {
            let total = Tally::new(worked, failed);
            (fix.clone(), FixOutcomes { fix, total, by_hardware })
        })
        .collect()
}

/// Labels of an ingested report: where and what the job was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Labels {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i64>,
    /// Framework versions, e.g. {"torch": "2.5.1", "jax": "0.4.35"}.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub versions: BTreeMap<String, String>,
    /// Anything else worth filtering on (team, queue, experiment…).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, String>,
}

/// A job-failure report to store (`POST /api/v1/reports`).
#[derive(Debug, Clone, PartialEq)]
pub struct NewReport {
    /// Client-chosen id: the same id again is stored once.
    pub report_id: Option<String>,
    /// The token that sent it.
    pub token_id: Option<i64>,
    /// `report` (a diagnosis the job made), `log` (diagnosed by the server) or `lines`
    /// (log-shipper lines grouped by job).
    pub source: String,
    pub labels: Labels,
    /// The knowledge-base entry of the first fatal finding; `None`: no known failure found.
    pub entry: Option<String>,
    /// The fix category of that entry's first fix, when the report carries it.
    pub category: Option<String>,
    /// Whether any finding is a memory failure (kind `oom`).
    pub memory_failure: bool,
    pub findings: u32,
    /// The diagnosis, as the `diagnose --format json` contract.
    pub report: serde_json::Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReportSaved {
    pub id: i64,
    /// `false` when a report with the same `report_id` was already stored.
    pub created: bool,
}

/// A stored report, as the fleet view reads it (the diagnosis itself only on request).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportRow {
    pub id: i64,
    /// UTC, `YYYY-MM-DDTHH:MM:SS.sssZ`.
    pub created_at: String,
    pub report_id: Option<String>,
    pub source: String,
    pub labels: Labels,
    pub entry: Option<String>,
    pub category: Option<String>,
    pub memory_failure: bool,
    pub findings: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<serde_json::Value>,
}

/// Which reports to read: a time window (UTC ISO strings, compared as such), newest first.
#[derive(Debug, Clone, Default)]
pub struct ReportQuery {
    pub since: Option<String>,
    pub until: Option<String>,
    pub limit: u32,
    pub with_report: bool,
    pub id: Option<i64>,
}

/// An API token as listed (the secret is never stored, only its SHA-256).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenInfo {
    pub id: i64,
    pub name: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// A new token's secret: `oomdoc_` and 64 hex digits from the OS's random source.
pub fn new_token_secret() -> Result<String, StoreError> {
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(|e| StoreError::Internal(format!("no random source: {e}")))?;
    Ok(format!("oomdoc_{}", hex_prefix(&raw, 32)))
}

/// The key of a kept log's own address (`/diagnoses/<link>`): 128 random bits as 32 hex
/// digits, so an address cannot be guessed from another one.
pub fn new_link() -> Result<String, StoreError> {
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw).map_err(|e| StoreError::Internal(format!("no random source: {e}")))?;
    Ok(hex_prefix(&raw, 16))
}

/// Whether `s` has the shape of a [`new_link`] key (checked before any database read).
pub fn is_link(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// How a token is stored and looked up.
pub fn token_hash(secret: &str) -> String {
    hex_prefix(&sha256(secret.trim().as_bytes()), 32)
}

/// Everything the server stores. One implementation per database; both pass `tests/store.rs`.
#[async_trait::async_trait]
pub trait Store: Send + Sync {
    /// `sqlite` or `postgres`.
    fn backend(&self) -> &'static str;

    /// For `/healthz`: the schema is current and the database takes reads (and, where it
    /// can be known, writes: a deleted SQLite file or a full disk make this fail).
    async fn check(&self) -> Result<(), StoreError>;

    /// Store a feedback report; returns once it is durable.
    async fn record_feedback(&self, feedback: &Feedback, meta: &FeedbackMeta) -> Result<FeedbackSaved, StoreError>;

    async fn feedback_by_id(&self, id: i64) -> Result<Option<Feedback>, StoreError>;

    /// Measured outcomes of every fix of `entry` that has at least one report.
    async fn outcomes(&self, entry: &str) -> Result<BTreeMap<String, FixOutcomes>, StoreError>;

    /// Keep an opted-in log within the quota, evicting the oldest in the same transaction;
    /// `None` when the log alone is larger than the quota.
    async fn store_log(&self, body: Arc<Vec<u8>>, policy: &LogStorePolicy) -> Result<Option<Stored>, StoreError>;

    /// The kept log whose address key is `link` ([`Stored::link`]); `None` once it was
    /// evicted or purged.
    async fn stored_log(&self, link: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Delete stored logs older than `age`; returns how many.
    async fn purge_logs_older_than(&self, age: Duration) -> Result<u64, StoreError>;

    /// Count and total bytes of the stored logs.
    async fn stored_logs(&self) -> Result<(u64, u64), StoreError>;

    /// Store an ingested report (once per `report_id`).
    async fn add_report(&self, report: &NewReport) -> Result<ReportSaved, StoreError>;

    /// Reports in a window, newest first, at most `query.limit`.
    async fn reports(&self, query: &ReportQuery) -> Result<Vec<ReportRow>, StoreError>;

    /// Number of stored reports.
    async fn count_reports(&self) -> Result<u64, StoreError>;

    /// Store a token's hash under a unique name.
    async fn create_token(&self, name: &str, hash: &str) -> Result<TokenInfo, StoreError>;

    /// Revoke a token by name; `false` when no live token has that name.
    async fn revoke_token(&self, name: &str) -> Result<bool, StoreError>;

    async fn tokens(&self) -> Result<Vec<TokenInfo>, StoreError>;

    /// The live (not revoked) token with this hash.
    async fn token_by_hash(&self, hash: &str) -> Result<Option<TokenInfo>, StoreError>;
}

/// Longest `report_id`, label value or token name accepted.
pub const MAX_ID_CHARS: usize = 200;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        assert_eq!(Location::parse("oomdoc.sqlite3").unwrap(), Location::Sqlite("oomdoc.sqlite3".into()));
        assert_eq!(Location::parse("sqlite:/x/y.db").unwrap(), Location::Sqlite("/x/y.db".into()));
        assert!(matches!(Location::parse("postgres://u:p@h/db").unwrap(), Location::Postgres(_)));
        assert!(matches!(Location::parse("POSTGRESQL://h/db").unwrap(), Location::Postgres(_)));
        let e = Location::parse("mysql://h/db").unwrap_err();
        assert!(e.contains("`mysql:`"), "{e}");
        assert!(Location::parse("postgres:/db").unwrap_err().contains("postgres://USER@HOST/DB"));
        assert!(Location::parse("postgress://h/db").is_err());
        assert_eq!(Location::parse("./a:b.db").unwrap(), Location::Sqlite("./a:b.db".into()));
        assert_eq!(Location::parse("C:\\data\\oomdoc.db").unwrap(), Location::Sqlite("C:\\data\\oomdoc.db".into()));
        assert!(Location::parse("").is_err());
        assert_eq!(Location::parse("postgres://me:secret@db:5432/oomdoc").unwrap().redacted(), "postgres://me:***@db:5432/oomdoc");
        assert_eq!(Location::parse("postgres://db/oomdoc").unwrap().redacted(), "postgres://db/oomdoc");
    }

    #[test]
    fn tokens_hash_and_keys_are_stable() {
        let t = new_token_secret().unwrap();
        assert!(t.starts_with("oomdoc_") && t.len() == 7 + 64);
        assert_eq!(token_hash(&t), token_hash(&format!(" {t}\n")));
        assert_ne!(client_key("127.0.0.1"), client_key("127.0.0.2"));
        assert_eq!(client_key("127.0.0.1").len(), 32);
    }
}
