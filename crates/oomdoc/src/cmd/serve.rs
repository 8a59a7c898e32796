//! `oomdoc serve`: the web UI and JSON API (`oomdoc-server`); this file maps flags onto it.

use crate::cli_error::CliError;
use clap::{Args, Subcommand};
use oomdoc_server::{
    store::{FeedbackPolicy, Location},
    Config, Limits,
};
use std::{net::SocketAddr, path::PathBuf, time::Duration};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ServeArgs {
    #[command(subcommand)]
    pub action: Option<ServeAction>,

    /// Address to listen on. Keep the default loopback address and put a reverse
    /// proxy in front to serve a team (docs/serve.md).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// Where feedback, shared logs and the team's job reports are kept: a SQLite file
    /// (the default, no other service needed) or a PostgreSQL URL
    /// (postgres://USER:PASSWORD@HOST/DB) that several replicas can share. Created and
    /// migrated on start.
    #[arg(long, value_name = "PATH|URL", default_value = "oomdoc.sqlite3", value_parser = Location::parse)]
    pub db: Location,

    /// Largest log accepted, in MiB (larger requests get 413).
    #[arg(long, value_name = "MIB", default_value_t = 16)]
    pub max_log_mib: usize,

    /// Largest memory dump accepted (upload and unpacked archive), in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    pub max_dump_mib: usize,

    /// Time limit for a request, in seconds (dump uploads: --upload-timeout).
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub timeout: u64,

    /// Time limit for a dump upload and its analysis, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub upload_timeout: u64,

    /// Memory all dump analyses running at once may use, in MiB. A dump is weighed as its
    /// unpacked bytes times --analysis-memory-factor: one that can never fit gets 413, one
    /// that does not fit now gets 503 with Retry-After.
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    pub analysis_memory_mib: u64,

    /// Analysis memory assumed per byte of dump.
    #[arg(long, value_name = "N", default_value_t = oomdoc_server::limits::DEFAULT_MEMORY_FACTOR)]
    pub analysis_memory_factor: u64,

    /// Most entries (files, directories, links) an uploaded archive may hold, and files per upload.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_archive_entries: usize,

    /// Most directories an uploaded archive may create.
    #[arg(long, value_name = "N", default_value_t = 1_000)]
    pub max_archive_dirs: usize,

    /// Most open connections; more are answered 503 and closed (keep it below `ulimit -n`).
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub max_connections: usize,

    /// Time a client has to send its request headers (and to start its next request on a
    /// kept-alive connection), in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub header_timeout: u64,

    /// Minimum average upload rate in KiB/s, enforced after the first 10 seconds of a body (408 below it).
    #[arg(long, value_name = "KIB", default_value_t = 8)]
    pub min_upload_kib_per_sec: u64,

    /// Directory for unpacked uploads (default: the system temp dir); stale
    /// `oomdoc-dump-*` directories of dead servers are removed there at start.
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,

    /// Worker threads answering requests (analysis runs on a separate pool).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub workers: usize,

    /// Print one line per request to standard error.
    #[arg(long)]
    pub access_log: bool,

    /// The origin users' browsers see, e.g. https://oomdoc.example.internal (repeatable).
    /// Browser posts whose Origin is not one of these are refused (403) when the browser
    /// sends no Sec-Fetch-Site. Default: the request's own Host.
    #[arg(long, value_name = "URL", value_parser = oomdoc_server::csrf::parse_origin)]
    pub public_origin: Vec<String>,

    /// Believe X-Forwarded-Host / X-Forwarded-Proto from the reverse proxy when checking
    /// a browser's Origin. Only behind a proxy that sets these headers itself.
    #[arg(long)]
    pub trust_forwarded_host: bool,

    /// A host name this server answers to (repeatable), besides localhost and the loopback
    /// addresses (when bound to loopback) and the hosts of --public-origin. Requests whose
    /// Host header names another host are refused (403): a web page cannot reach the server
    /// by re-pointing its own name at this address (DNS rebinding). Bound to a non-loopback
    /// address with neither this nor --public-origin, any host name is answered.
    #[arg(long, value_name = "NAME")]
    pub allowed_host: Vec<String>,

    /// Total size of the logs users chose to keep (store_log), in MiB, each counted with 64
    /// bytes for its row. When a new log does not fit, the oldest stored logs are deleted to make room; a single log larger than
    /// this is refused (413). 0 keeps no logs.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub max_stored_log_mib: u64,

    /// Delete stored logs older than this many days, at start and every hour. 0 keeps them
    /// (until the quota evicts them).
    #[arg(long, value_name = "DAYS", default_value_t = 30)]
    pub log_retention_days: u64,

    /// Feedback reports one client address may have counted per hour (more get 429);
    /// 0: no limit. The same report again within a day is counted once.
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub feedback_per_hour: u32,

    /// The team's job reports (/team, GET /api/v1/reports, /api/v1/fleet) need an API
    /// token too, not only posting them.
    #[arg(long)]
    pub require_token_for_reads: bool,
}

#[derive(Subcommand)]
pub enum ServeAction {
    /// API tokens for POST /api/v1/reports (and reads with --require-token-for-reads).
    #[command(subcommand)]
    Token(TokenAction),
}

#[derive(Subcommand)]
pub enum TokenAction {
    /// Create a token and print it once (only its SHA-256 is stored).
    Create {
        /// A name to list and revoke it by, e.g. slurm-epilog or cluster-a.
        name: String,
        #[arg(long, value_name = "PATH|URL", default_value = "oomdoc.sqlite3", value_parser = Location::parse)]
        db: Location,
    },
    /// Revoke the live token with this name.
    Revoke {
        name: String,
        #[arg(long, value_name = "PATH|URL", default_value = "oomdoc.sqlite3", value_parser = Location::parse)]
        db: Location,
    },
    /// List tokens (names and dates; the secrets are not stored).
    List {
        #[arg(long, value_name = "PATH|URL", default_value = "oomdoc.sqlite3", value_parser = Location::parse)]
        db: Location,
    },
}

fn token(action: TokenAction) -> Result<(), CliError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| CliError::usage(e.to_string()))?;
    rt.block_on(async move {
        let open = |db: Location| async move {
            oomdoc_server::store::open(&db).await.map_err(|e| CliError::usage(format!("database {db}: {e}")))
        };
        match action {
            TokenAction::Create { name, db } => {
                let name = name.trim().to_string();
                if name.is_empty() || name.len() > 100 || name.chars().any(char::is_control) {
                    return Err(CliError::usage("a token name is one line of at most 100 characters".to_string()));
                }
                let store = open(db).await?;
                let secret = oomdoc_server::store::new_token_secret().map_err(|e| CliError::usage(e.to_string()))?;
                store
                    .create_token(&name, &oomdoc_server::store::token_hash(&secret))
                    .await
                    .map_err(|e| CliError::usage(e.to_string()))?;
                eprintln!("oomdoc: token `{name}` created; it is shown only now (send it as `Authorization: Bearer …`, or OOMDOC_TOKEN for --post)");
                println!("{secret}");
            }
            TokenAction::Revoke { name, db } => {
                let store = open(db).await?;
                if !store.revoke_token(&name).await.map_err(|e| CliError::usage(e.to_string()))? {
                    return Err(CliError::usage(format!("no live token named `{name}`")));
                }
                eprintln!("oomdoc: token `{name}` revoked");
            }
            TokenAction::List { db } => {
                let store = open(db).await?;
                for t in store.tokens().await.map_err(|e| CliError::usage(e.to_string()))? {
                    match t.revoked_at {
                        Some(r) => println!("{}\tcreated {}\trevoked {r}", t.name, t.created_at),
                        None => println!("{}\tcreated {}", t.name, t.created_at),
                    }
                }
            }
        }
        Ok(())
    })
}

pub fn run(args: ServeArgs) -> Result<(), CliError> {
    if let Some(ServeAction::Token(action)) = args.action {
        return token(action);
    }
    const MIB: usize = oomdoc_server::config::MIB;
    let config = Config {
        addr: args.addr,
        db: args.db,
        feedback: FeedbackPolicy { max_per_client_per_hour: args.feedback_per_hour, ..FeedbackPolicy::default() },
        require_token_for_reads: args.require_token_for_reads,
        limits: Limits {
            log_bytes: args.max_log_mib.saturating_mul(MIB),
            dump_bytes: args.max_dump_mib.saturating_mul(MIB),
            ..Limits::default()
        },
        resources: oomdoc_server::limits::ResourceLimits {
            analysis_memory_bytes: args.analysis_memory_mib.saturating_mul(MIB as u64),
            analysis_memory_factor: args.analysis_memory_factor,
            archive_entries: args.max_archive_entries,
            archive_dirs: args.max_archive_dirs,
            max_connections: args.max_connections,
            header_read_timeout: Duration::from_secs(args.header_timeout),
            min_upload_bytes_per_sec: args.min_upload_kib_per_sec.saturating_mul(1024),
            temp_dir: args.temp_dir.unwrap_or_else(std::env::temp_dir),
            ..Default::default()
        },
        request_timeout: Duration::from_secs(args.timeout),
        upload_timeout: Duration::from_secs(args.upload_timeout),
        workers: args.workers,
        access_log: args.access_log,
        origin_policy: oomdoc_server::csrf::OriginPolicy {
            public_origins: args.public_origin,
            trust_forwarded_host: args.trust_forwarded_host,
            allowed_hosts: args.allowed_host,
        },
        log_store: oomdoc_server::retention::LogStorePolicy {
            max_bytes: Some(args.max_stored_log_mib.saturating_mul(MIB as u64)),
            retention: (args.log_retention_days > 0)
                .then(|| oomdoc_server::retention::DAY.saturating_mul(args.log_retention_days.min(u32::MAX as u64) as u32)),
            ..Default::default()
        },
    };
    oomdoc_server::serve(config).map_err(CliError::usage)
}
