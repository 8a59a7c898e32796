//! Everything `oomdoc serve` can be told on its command line.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

pub const MIB: usize = 1024 * 1024;

/// Request body limits, per kind of upload.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Logs sent to the diagnose page and API.
    pub log_bytes: usize,
    /// Memory dumps (several files or one archive), also the unpacked total of an archive.
    pub dump_bytes: usize,
    /// Feedback and plan forms: small JSON or form bodies.
    pub form_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { log_bytes: 16 * MIB, dump_bytes: 256 * MIB, form_bytes: 64 * 1024 }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub addr: SocketAddr,
    /// Where the data lives (`--db`): a SQLite file or a PostgreSQL URL; created and migrated on start.
    pub db: crate::store::Location,
    pub limits: Limits,
    /// Analysis memory budget, archive caps, connections, upload rate, temp dir.
    pub resources: crate::limits::ResourceLimits,
    /// Whole-request deadline for ordinary requests (reading the body included).
    pub request_timeout: Duration,
    /// Deadline for dump uploads, which may be hundreds of MiB.
    pub upload_timeout: Duration,
    /// Worker threads of the async runtime (blocking work runs on a separate pool).
    pub workers: usize,
    /// Log one line per request to stderr.
    pub access_log: bool,
    /// Who may post: `--public-origin`, `--trust-forwarded-host` ([`crate::csrf`]).
    pub origin_policy: crate::csrf::OriginPolicy,
    /// Quota and retention of opted-in logs ([`crate::retention`]).
    pub log_store: crate::retention::LogStorePolicy,
    /// Per-client rules for feedback (duplicates, reports per hour).
    pub feedback: crate::store::FeedbackPolicy,
    /// The team's reports (`/team`, `/api/v1/fleet`, `GET /api/v1/reports`) need a token too.
    pub require_token_for_reads: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            db: crate::store::Location::Sqlite(PathBuf::from("oomdoc.sqlite3")),
            limits: Limits::default(),
            resources: crate::limits::ResourceLimits::default(),
            request_timeout: Duration::from_secs(30),
            upload_timeout: Duration::from_secs(300),
            workers: 2,
            access_log: false,
            origin_policy: Default::default(),
            log_store: Default::default(),
            feedback: Default::default(),
            require_token_for_reads: false,
        }
    }
}
