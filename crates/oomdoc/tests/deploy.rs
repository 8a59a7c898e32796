//! The adapters in deploy/ against a real team server: the Slurm epilog (with a stand-in
//! `scontrol` printing a job record), the Kubernetes Job's command and environment, and
//! the Vector configurations (parsed, and their records sent as Vector sends them).

mod team_server;

use serde_json::{json, Value};
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::Command,
};
use team_server::{create_token, get_json, spawn_serve};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

const TRAIN_LOG: &str = include_str!("../../../examples/train.log");

/// A stand-in for `scontrol show job -o JOBID`: one line in the format scontrol prints.
fn fake_scontrol(dir: &Path, exit_code: &str, stdout: &Path, stderr: &Path) -> PathBuf {
    let path = dir.join(format!("scontrol-{}", exit_code.replace(':', "-")));
    let record = format!(
        "JobId=4242 JobName=train UserId=ana(1001) GroupId=ml(1001) JobState=FAILED Reason=NonZeroExitCode \
         ExitCode={exit_code} RunTime=00:10:00 NodeList=gpu-node-[7-8] WorkDir=/home/ana StdErr={} StdIn=/dev/null StdOut={}",
        stderr.display(),
        stdout.display()
    );
    std::fs::write(&path, format!("#!/bin/sh\n[ \"$1 $2 $3 $4\" = \"show job -o 4242\" ] || exit 1\necho '{record}'\n")).unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    path
}

fn as_refs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

fn epilog(env: &[(&str, &str)]) -> std::process::Output {
    let mut c = Command::new("sh");
    c.arg(repo("deploy/slurm/epilog.sh")).env_clear().env("PATH", std::env::var("PATH").unwrap());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn slurm_epilog_posts_a_failed_job_once_and_never_fails_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("team.sqlite3");
    let token = create_token(&db, "slurm-epilog");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, &token).unwrap();
    let (out, err) = (dir.path().join("slurm-4242.out"), dir.path().join("slurm-4242.err"));
    std::fs::write(&out, "epoch 1\n").unwrap();
    std::fs::write(&err, TRAIN_LOG).unwrap();
    let (mut server, addr) = spawn_serve(&db, &[]);
    let url = format!("http://{addr}");
    let bin = env!("CARGO_BIN_EXE_oomdoc");
    let failed = fake_scontrol(dir.path(), "1:0", &out, &err);
    let log = dir.path().join("epilog.log");
    let base = |scontrol: &Path, node: &'static str| {
        vec![
            ("SLURM_JOB_ID", "4242".to_string()),
            ("SLURMD_NODENAME", node.to_string()),
            ("SLURM_CLUSTER_NAME", "a100-east".to_string()),
            ("OOMDOC_URL", url.clone()),
            ("OOMDOC_TOKEN_FILE", token_file.display().to_string()),
            ("OOMDOC_BIN", bin.to_string()),
            ("OOMDOC_EPILOG_LOG", log.display().to_string()),
            ("SCONTROL", scontrol.display().to_string()),
        ]
    };
    // Both nodes of the job run the epilog: one report.
    for node in ["gpu-node-7", "gpu-node-8"] {
        let o = epilog(&as_refs(&base(&failed, node)));
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert!(std::fs::read_to_string(&log).unwrap().contains("report posted"), "{}", std::fs::read_to_string(&log).unwrap());
    // A job that succeeded posts nothing.
    let ok = fake_scontrol(dir.path(), "0:0", &out, &err);
    assert_eq!(epilog(&as_refs(&base(&ok, "gpu-node-7"))).status.code(), Some(0));

    let fleet = get_json(addr, "/api/v1/fleet");
    assert_eq!(fleet["reports"], 1, "{fleet}");
    let rows = get_json(addr, "/api/v1/reports?job=4242");
    let r = &rows["reports"][0];
    assert_eq!(r["report_id"], "slurm-4242");
    assert_eq!(r["entry"], "pytorch.cuda-oom");
    let l = &r["labels"];
    assert_eq!((l["user"].as_str(), l["exit_status"].as_i64(), l["cluster"].as_str()), (Some("ana"), Some(1), Some("a100-east")));
    let _ = server.kill();
    let _ = server.wait();

    // The server is down: the epilog still exits 0, within its posting time.
    let mut env = base(&failed, "gpu-node-7");
    env.push(("OOMDOC_POST_TIMEOUT", "2".into()));
    assert_eq!(epilog(&as_refs(&env)).status.code(), Some(0));
    // Without settings it does nothing, successfully.
    assert_eq!(epilog(&[("SLURM_JOB_ID", "4242")]).status.code(), Some(0));
}

/// The `command:` list of the Job's container, as written in job.yaml.
fn job_command(yaml: &str) -> Vec<String> {
    let start = yaml.find("command: [").unwrap() + "command: [".len();
    let end = start + yaml[start..].find(']').unwrap();
    let mut out = Vec::new();
    let mut rest = &yaml[start..end];
    while let Some(open) = rest.find('"') {
        let close = open + 1 + rest[open + 1..].find('"').unwrap();
        out.push(rest[open + 1..close].to_string());
        rest = &rest[close + 1..];
    }
    out
}

#[test]
fn kubernetes_job_command_posts_with_the_downward_api_labels() {
    let yaml = std::fs::read_to_string(repo("deploy/kubernetes/job.yaml")).unwrap();
    for var in ["OOMDOC_TOKEN", "POD_NAME", "POD_NAMESPACE", "NODE_NAME", "JOB_NAME"] {
        assert!(yaml.contains(&format!("name: {var}")), "{var}");
    }
    let cmd = job_command(&yaml);
    assert_eq!(&cmd[..4], ["oomdoc", "run", "--no-pty", "--post"]);
    let dashdash = cmd.iter().position(|a| a == "--").unwrap();
    // The container's command as written, against a local server, with a failing trainer.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("team.sqlite3");
    let token = create_token(&db, "k8s");
    let (mut server, addr) = spawn_serve(&db, &[]);
    let mut args: Vec<String> = cmd[1..dashdash].to_vec();
    assert_eq!(args[2], "--post");
    args[3] = format!("http://{addr}");
    let log = repo("examples/train.log");
    let o = Command::new(env!("CARGO_BIN_EXE_oomdoc"))
        .args(&args)
        .args(["--", "sh", "-c", &format!("cat {} >&2; exit 1", log.display())])
        .env("OOMDOC_TOKEN", &token)
        .env("POD_NAME", "train-x7k2p")
        .env("POD_NAMESPACE", "ml")
        .env("NODE_NAME", "gke-a100-pool-3")
        .env("JOB_NAME", "train")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = get_json(addr, "/api/v1/reports");
    let l = &rows["reports"][0]["labels"];
    assert_eq!((l["job_id"].as_str(), l["host"].as_str(), l["cluster"].as_str()), (Some("train"), Some("gke-a100-pool-3"), Some("prod-a100")));
    assert_eq!((l["extra"]["pod"].as_str(), l["extra"]["namespace"].as_str()), (Some("train-x7k2p"), Some("ml")));
    let _ = server.kill();
    let _ = server.wait();
}

fn post(addr: SocketAddr, token: &str, body: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /api/v1/reports HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head[9..12].parse().unwrap(), serde_json::from_str(body).unwrap())
}

/// The http sink of a Vector config: what it sends and where.
fn check_sink(config: &toml::Value) {
    let sink = &config["sinks"]["oomdoc"];
    assert_eq!(sink["type"].as_str(), Some("http"));
    assert!(sink["uri"].as_str().unwrap().ends_with("/api/v1/reports"));
    assert_eq!(sink["encoding"]["codec"].as_str(), Some("json"));
    assert_eq!(sink["framing"]["method"].as_str(), Some("newline_delimited"));
    assert_eq!(sink["auth"]["strategy"].as_str(), Some("bearer"));
    assert!(sink["batch"]["max_bytes"].as_integer().unwrap() < 16 * 1024 * 1024, "under the server's --max-log-mib");
}

#[test]
fn vector_configs_parse_and_their_records_are_ingested() {
    let plain: toml::Value = toml::from_str(&std::fs::read_to_string(repo("deploy/vector/vector.toml")).unwrap()).unwrap();
    check_sink(&plain);
    // The DaemonSet's config is the ConfigMap's `vector.toml: |` block.
    let yaml = std::fs::read_to_string(repo("deploy/kubernetes/log-shipping.yaml")).unwrap();
    let block: String = yaml
        .split("vector.toml: |\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with("    "))
        .map(|l| format!("{}\n", l.get(4..).unwrap_or("")))
        .collect();
    let shipped: toml::Value = toml::from_str(&block).unwrap();
    check_sink(&shipped);
    assert!(yaml.contains("automountServiceAccountToken: false"), "no API access");

    // What the sinks send after their remaps: one JSON object per line.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("team.sqlite3");
    let token = create_token(&db, "vector");
    let (mut server, addr) = spawn_serve(&db, &[]);
    let mut batch = String::new();
    for line in TRAIN_LOG.lines() {
        let rec = json!({"message": line, "file": "/var/log/jobs/slurm-4242.out", "host": "gpu-node-7", "job_id": "4242",
                         "source_type": "file", "timestamp": "2026-11-26T10:00:00Z"});
        batch.push_str(&format!("{rec}\n"));
    }
    for line in TRAIN_LOG.lines() {
        let rec = json!({"message": line, "file": "/var/log/pods/ml_train-0_uid/train/0.log", "host": "node-3",
                         "kubernetes": {"namespace_name": "ml", "pod_name": "train-0", "container_name": "train"}});
        batch.push_str(&format!("{rec}\n"));
    }
    let (status, answer) = post(addr, &token, &batch);
    assert_eq!((status, answer["stored"].as_u64()), (201, Some(2)), "{answer}");
    let (status, answer) = post(addr, &token, &batch);
    assert_eq!((status, answer["duplicates"].as_u64()), (200, Some(2)), "a retried batch: {answer}");
    let fleet = get_json(addr, "/api/v1/fleet");
    assert_eq!(fleet["reports"], 2);
    let _ = server.kill();
    let _ = server.wait();
}
