//! `--post URL` of `oomdoc run` and `oomdoc diagnose`: send the report to a team server
//! (`oomdoc serve`, `POST /api/v1/reports`), labelled with what the scheduler says about
//! the job.
//!
//! - The token comes from `OOMDOC_TOKEN` or `--token-file`.
//! - Labels: `--label NAME=VALUE` first, then the environment Slurm (`SLURM_JOB_ID`,
//!   `SLURM_PROCID`, `SLURMD_NODENAME`, `SLURM_CLUSTER_NAME`, `SLURM_JOB_USER`), Kubernetes'
//!   downward API as usually named (`POD_NAME`, `POD_NAMESPACE`, `NODE_NAME`), Ray
//!   (`RAY_JOB_ID`) and torchrun (`RANK`) set, then the host name.
//! - Retries with exponential backoff (0.5 s, 1 s, 2 s, …) on connection failures, 429
//!   and 5xx, within `--post-timeout` seconds in all; one `report_id` for every attempt,
//!   so a retry that reaches the server twice is stored once.
//! - Never changes the job's exit status: a failure to post is one line on stderr.
//! - Plain `http://` only (no TLS in this client): reach the server on the cluster
//!   network or through a local proxy.

use clap::Args;
use serde_json::{json, Map, Value};
use std::{
    io::{Read, Write},
    net::{TcpStream, ToSocketAddrs},
    path::PathBuf,
    time::{Duration, Instant},
};

#[derive(Args, Clone, Default)]
pub struct PostArgs {
    /// Send the report to an oomdoc team server, e.g. http://oomdoc.internal:8080 (its
    /// POST /api/v1/reports); the token is read from OOMDOC_TOKEN or --token-file. A server
    /// that cannot be reached never changes the exit status.
    #[arg(long, value_name = "URL")]
    pub post: Option<String>,
    /// File holding the API token for --post (instead of OOMDOC_TOKEN).
    #[arg(long, value_name = "FILE", requires = "post")]
    pub token_file: Option<PathBuf>,
    /// A label for --post: job_id, cluster, host, rank, user, image, exit_status,
    /// version.FRAMEWORK (e.g. version.torch=2.5.1) or any other name (repeatable).
    /// Scheduler variables (SLURM_JOB_ID, POD_NAME, RAY_JOB_ID…) fill what is not given.
    #[arg(long = "label", value_name = "NAME=VALUE", requires = "post")]
    pub labels: Vec<String>,
    /// The report's id on the server (default: random per run). Posts with the same id are
    /// stored once: the Slurm epilog passes slurm-JOBID so every node of a job counts one.
    #[arg(long, value_name = "ID", requires = "post")]
    pub report_id: Option<String>,
    /// Most seconds spent posting, retries included.
    #[arg(long, value_name = "SECONDS", default_value_t = 20, requires = "post")]
    pub post_timeout: u64,
}

/// The labels of this job: flags first, then the scheduler's environment.
pub fn labels(flags: &[String], env: &dyn Fn(&str) -> Option<String>, exit_status: Option<i64>) -> Result<Value, String> {
    let mut top = Map::new();
    let mut versions = Map::new();
    let mut extra = Map::new();
    for l in flags {
        let (k, v) = l.split_once('=').ok_or_else(|| format!("--label {l}: expected NAME=VALUE"))?;
        let (k, v) = (k.trim(), v.trim());
        match k {
            "job_id" | "cluster" | "host" | "rank" | "user" | "image" => {
                top.insert(k.into(), v.into());
            }
            "exit_status" => {
                top.insert(k.into(), v.parse::<i64>().map_err(|_| format!("--label exit_status={v}: not an integer"))?.into());
            }
            _ => match k.strip_prefix("version.") {
                Some(fw) => {
                    versions.insert(fw.into(), v.into());
                }
                None => {
                    extra.insert(k.into(), v.into());
                }
            },
        }
    }
    let first = |names: &[&str]| names.iter().find_map(|n| env(n).filter(|v| !v.trim().is_empty()));
    let mut fill = |key: &str, value: Option<String>| {
        if let Some(v) = value {
            top.entry(key.to_string()).or_insert_with(|| v.into());
        }
    };
    fill("job_id", first(&["OOMDOC_JOB_ID", "SLURM_JOB_ID", "RAY_JOB_ID", "JOB_NAME"]));
    fill("rank", first(&["SLURM_PROCID", "RANK"]));
    fill("host", first(&["SLURMD_NODENAME", "NODE_NAME"]).or_else(hostname));
    fill("cluster", first(&["OOMDOC_CLUSTER", "SLURM_CLUSTER_NAME"]));
    fill("user", first(&["SLURM_JOB_USER", "USER"]));
    fill("image", first(&["OOMDOC_IMAGE"]));
    if let Some(s) = exit_status {
        top.entry("exit_status").or_insert(s.into());
    }
    for (name, var) in [("pod", "POD_NAME"), ("namespace", "POD_NAMESPACE")] {
        if let Some(v) = first(&[var]) {
            extra.entry(name).or_insert(v.into());
        }
    }
    if !versions.is_empty() {
        top.insert("versions".into(), Value::Object(versions));
    }
    if !extra.is_empty() {
        top.insert("extra".into(), Value::Object(extra));
    }
    Ok(Value::Object(top))
}

fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn token(args: &PostArgs) -> Result<String, String> {
    let t = match &args.token_file {
        Some(f) => std::fs::read_to_string(f).map_err(|e| format!("--token-file {}: {e}", f.display()))?,
        None => std::env::var("OOMDOC_TOKEN").map_err(|_| "--post needs a token: set OOMDOC_TOKEN or give --token-file".to_string())?,
    };
    let t = t.trim().to_string();
    if t.is_empty() || t.chars().any(|c| c.is_control() || c == ' ') {
        return Err("the API token is empty or not one word".into());
    }
    Ok(t)
}

/// `http://host[:port][/prefix]` -> (host:port, path of the reports API).
fn endpoint(url: &str) -> Result<(String, String, String), String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        if url.starts_with("https://") {
            format!("--post {url}: this client speaks plain http:// only; reach the server on the cluster network or through a local proxy")
        } else {
            format!("--post {url}: expected http://HOST[:PORT]")
        }
    })?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.is_empty() {
        return Err(format!("--post {url}: no host"));
    }
    let addr = if authority.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) && !authority.ends_with(']') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let base = path.trim_end_matches('/');
    let path = if base.ends_with("/api/v1/reports") { base.to_string() } else { format!("{base}/api/v1/reports") };
    Ok((addr, authority.to_string(), path))
}

/// A random id for this report, kept across retries.
fn report_id(labels: &Value) -> String {
    let mut raw = [0u8; 12];
    let _ = getrandom::fill(&mut raw);
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let job = labels.get("job_id").and_then(Value::as_str).unwrap_or("job");
    let job: String = job.chars().filter(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c)).take(60).collect();
    format!("{job}-{hex}")
}

/// One attempt: `Ok(status, body)` when the server answered.
fn attempt(addr: &str, host: &str, path: &str, token: &str, body: &[u8], timeout: Duration) -> std::io::Result<(u16, String)> {
    let target = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address"))?;
    let mut s = TcpStream::connect_timeout(&target, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\nUser-Agent: oomdoc/{}\r\n\r\n",
        body.len(),
        env!("CARGO_PKG_VERSION")
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut out = Vec::new();
    // An answer is small; read at most 1 MiB of it.
    s.take(1 << 20).read_to_end(&mut out)?;
    let text = String::from_utf8_lossy(&out);
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| text.strip_prefix("HTTP/1.0 "))
        .and_then(|t| t.get(..3))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP answer"))?;
    Ok((status, text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()))
}

/// Post `report`; returns the line to print on stderr (success or why not).
pub fn post_report(args: &PostArgs, report: &Value, exit_status: Option<i64>) -> String {
    let Some(url) = &args.post else { return String::new() };
    match post_inner(args, url, report, exit_status) {
        Ok(msg) => format!("oomdoc: {msg}"),
        Err(msg) => format!("oomdoc: report not posted: {msg}"),
    }
}

fn post_inner(args: &PostArgs, url: &str, report: &Value, exit_status: Option<i64>) -> Result<String, String> {
    let (addr, host, path) = endpoint(url)?;
    let token = token(args)?;
    let env = |n: &str| std::env::var(n).ok();
    let labels = labels(&args.labels, &env, exit_status)?;
    let id = args.report_id.clone().unwrap_or_else(|| report_id(&labels));
    let body = json!({ "report_id": id, "labels": labels, "report": report }).to_string();
    let budget = Duration::from_secs(args.post_timeout.max(1));
    let started = Instant::now();
    let mut wait = Duration::from_millis(500);
    let mut last;
    loop {
        let left = budget.saturating_sub(started.elapsed());
        match attempt(&addr, &host, &path, &token, body.as_bytes(), left.min(Duration::from_secs(10)).max(Duration::from_millis(100))) {
            Ok((status, answer)) if status == 200 || status == 201 => {
                let stored = serde_json::from_str::<Value>(&answer).ok();
                let rid = stored.as_ref().and_then(|v| v["reports"][0]["id"].as_i64());
                return Ok(format!("report posted to {url} (id {}, report_id {id})", rid.map_or("?".into(), |i| i.to_string())));
            }
            Ok((status, answer)) if status == 429 || status >= 500 => last = format!("{status} {}", error_message(&answer)),
            Ok((status, answer)) => return Err(format!("{url} answered {status}: {}", error_message(&answer))),
            Err(e) => last = format!("{url}: {e}"),
        }
        let left = budget.saturating_sub(started.elapsed());
        if left <= wait {
            return Err(format!("gave up after {:.1} s: {last}", started.elapsed().as_secs_f64()));
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_secs(8));
    }
}

fn error_message(answer: &str) -> String {
    let m = serde_json::from_str::<Value>(answer)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| answer.chars().take(200).collect());
    m.chars().filter(|c| !c.is_control()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_from_flags_then_the_scheduler() {
        let env = |n: &str| match n {
            "SLURM_JOB_ID" => Some("4242".to_string()),
            "SLURM_PROCID" => Some("3".to_string()),
            "SLURMD_NODENAME" => Some("gpu-node-7".to_string()),
            "POD_NAME" => Some("train-0".to_string()),
            _ => None,
        };
        let l = labels(&["cluster=a100".into(), "version.torch=2.5.1".into(), "team=vision".into(), "rank=0".into()], &env, Some(1)).unwrap();
        assert_eq!(l["job_id"], "4242");
        assert_eq!(l["rank"], "0", "a flag wins over the environment");
        assert_eq!((l["host"].as_str(), l["cluster"].as_str(), l["exit_status"].as_i64()), (Some("gpu-node-7"), Some("a100"), Some(1)));
        assert_eq!(l["versions"]["torch"], "2.5.1");
        assert_eq!((l["extra"]["team"].as_str(), l["extra"]["pod"].as_str()), (Some("vision"), Some("train-0")));
        let ray = |n: &str| (n == "RAY_JOB_ID").then(|| "raysubmit_1".to_string());
        assert_eq!(labels(&[], &ray, None).unwrap()["job_id"], "raysubmit_1");
        assert!(labels(&["novalue".into()], &ray, None).is_err());
    }

    #[test]
    fn endpoints() {
        assert_eq!(endpoint("http://oomdoc:8080").unwrap(), ("oomdoc:8080".into(), "oomdoc:8080".into(), "/api/v1/reports".into()));
        assert_eq!(endpoint("http://h/prefix/").unwrap().2, "/prefix/api/v1/reports");
        assert_eq!(endpoint("http://h:1/api/v1/reports").unwrap().0, "h:1");
        assert_eq!(endpoint("http://h").unwrap().0, "h:80");
        assert!(endpoint("https://h").unwrap_err().contains("plain http"));
    }
}
