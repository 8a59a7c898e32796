//! `oomdoc serve`: the web UI and JSON API (`oomdoc-server`); this file maps flags onto it.

use crate::cli_error::CliError;
use clap::Args;
use oomdoc_server::{Config, Limits};
use std::{net::SocketAddr, path::PathBuf, time::Duration};

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on. Keep the default loopback address and put a reverse
    /// proxy in front to serve a team (docs/serve.md).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// SQLite database file for feedback reports (and logs users chose to share);
    /// created and migrated on start.
    #[arg(long, value_name = "PATH", default_value = "oomdoc.sqlite3")]
    pub db: PathBuf,

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

    /// Worker threads answering requests (analysis runs on a separate pool).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub workers: usize,

    /// Print one line per request to standard error.
    #[arg(long)]
    pub access_log: bool,
}

pub fn run(args: ServeArgs) -> Result<(), CliError> {
    const MIB: usize = oomdoc_server::config::MIB;
    let config = Config {
        addr: args.addr,
        db_path: args.db,
        limits: Limits {
            log_bytes: args.max_log_mib.saturating_mul(MIB),
            dump_bytes: args.max_dump_mib.saturating_mul(MIB),
            ..Limits::default()
        },
        request_timeout: Duration::from_secs(args.timeout),
        upload_timeout: Duration::from_secs(args.upload_timeout),
        workers: args.workers,
        access_log: args.access_log,
    };
    oomdoc_server::serve(config).map_err(CliError::usage)
}
