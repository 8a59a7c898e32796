//! One module per subcommand: its flags (with their documentation) and its `run`.
pub mod chips;
pub mod diagnose;
pub mod explain;
pub mod mcp;
pub mod memory;
pub mod plan;
#[cfg(unix)]
pub mod run;
#[cfg(unix)]
pub mod job_cgroup;
pub mod post;
pub mod record;
pub mod serve;
