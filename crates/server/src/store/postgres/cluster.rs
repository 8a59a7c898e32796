//! A throwaway PostgreSQL cluster for tests and benchmarks: `initdb` in a temp dir,
//! `pg_ctl start` on a free loopback port, `pg_ctl stop` and the dir removed on drop.
//!
//! The binaries are found in `$OOMDOC_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`
//! (Debian's `postgresql` package; `crates/server/ci-postgres.sh` installs it), else
//! `PATH`. PostgreSQL refuses to run as root; as root the cluster runs as the `postgres`
//! user (which Debian's package creates) through `setpriv`. Tests call it through
//! `tests/common::postgres_for`, which fails in CI and skips visibly elsewhere.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Command, Output},
    time::Duration,
};

pub struct TempCluster {
    dir: Option<tempfile::TempDir>,
    bin: PathBuf,
    /// `(uid, gid)` the server runs as when we are root.
    run_as: Option<(u32, u32)>,
    pub port: u16,
}

fn find_bin() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("OOMDOC_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .find(|d| d.join("initdb").exists() && d.join("pg_ctl").exists())
        .ok_or_else(|| "initdb not found (no /usr/lib/postgresql/*/bin, none on PATH, OOMDOC_PG_BIN unset)".to_string())
}

fn ids_of(user: &str) -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, user]).output().ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

impl TempCluster {
    pub fn start() -> Result<TempCluster, String> {
        let bin = find_bin()?;
        let dir = tempfile::Builder::new().prefix("oomdoc-pg-").tempdir().map_err(|e| format!("temp dir: {e}"))?;
        let root = Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0\n")).unwrap_or(false);
        let run_as = if root {
            let ids = ids_of("postgres").ok_or("running as root and there is no `postgres` user to run PostgreSQL as")?;
            std::os::unix::fs::chown(dir.path(), Some(ids.0), Some(ids.1)).map_err(|e| format!("chown temp dir: {e}"))?;
            Some(ids)
        } else {
            None
        };
        let mut cluster = TempCluster { dir: Some(dir), bin, run_as, port: 0 };
        let data = cluster.dir().join("data");
        cluster.run(
            "initdb",
            &["-D", data.to_str().unwrap(), "-U", "oomdoc", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"],
        )?;
        // A port taken between our probe and PostgreSQL's bind: try a few.
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port()?;
            let opts = format!(
                "-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={} -c max_connections=200 -c fsync=on",
                cluster.dir().display()
            );
            let log = cluster.dir().join("postgres.log");
            match cluster.run(
                "pg_ctl",
                &["-D", data.to_str().unwrap(), "-o", &opts, "-l", log.to_str().unwrap(), "-w", "-t", "60", "start"],
            ) {
                Ok(_) => {
                    cluster.port = port;
                    return Ok(cluster);
                }
                Err(e) => last = format!("{e}; {}", std::fs::read_to_string(&log).unwrap_or_default().lines().last().unwrap_or("")),
            }
        }
        Err(last)
    }

    fn dir(&self) -> &Path {
        self.dir.as_ref().unwrap().path()
    }

    fn run(&self, tool: &str, args: &[&str]) -> Result<Output, String> {
        let exe = self.bin.join(tool);
        let mut cmd = match self.run_as {
            Some((uid, gid)) => {
                let mut c = Command::new("setpriv");
                c.args([format!("--reuid={uid}"), format!("--regid={gid}"), "--clear-groups".into()]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        // initdb and pg_ctl read the locale and look for their files relative to the cwd.
        cmd.args(args).current_dir(self.dir()).env("LC_ALL", "C").env_remove("PGDATA");
        let out = cmd.output().map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{tool} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim().lines().last().unwrap_or("")
            ));
        }
        Ok(out)
    }

    /// A URL for database `db` (see [`TempCluster::create_database`]).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://oomdoc@127.0.0.1:{}/{db}", self.port)
    }

    /// A fresh empty database; returns its URL.
    pub fn create_database(&self, name: &str) -> Result<String, String> {
        self.run("createdb", &["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "oomdoc", name])?;
        Ok(self.url(name))
    }

    /// Run SQL with `psql` (tests reach under the store with it).
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = self.run("psql", &["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "oomdoc", "-d", db, "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql])?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn stop(&mut self) {
        if self.dir.is_some() {
            let data = self.dir().join("data");
            let _ = self.run("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "immediate", "-w", "-t", "30", "stop"]);
            std::thread::sleep(Duration::from_millis(10));
            self.dir.take();
        }
    }
}

impl Drop for TempCluster {
    fn drop(&mut self) {
        self.stop();
    }
}
