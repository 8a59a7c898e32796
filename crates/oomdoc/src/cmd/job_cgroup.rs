//! `oomdoc run`'s own memory cgroup for the job, when it may make one.
//!
//! Which processes are the job's is otherwise known by sampling /proc (every 200 ms): a
//! worker the OOM killer kills within milliseconds of starting is never seen, and its kill
//! cannot be told from that of another process sharing the cgroup. A child cgroup that the
//! command enters before it runs holds every process the job starts, at whatever speed:
//! its `oom_kill` counter counts exactly the job's kills, and the kernel's kill record names
//! it (`oom-kill:… task_memcg=/…/oomdoc-run-…,task=python3,pid=…`).
//!
//! Made only where it changes nothing else: cgroup v1 with `memory.use_hierarchy` 1 (the
//! parent's limit still holds for the child), or cgroup v2 where the memory controller
//! reaches the new child (its `memory.events` exists). The child gets the smallest limit of
//! its parents as its own, so a program that reads its limit from its own cgroup (a JVM,
//! a memory-aware data loader) sees the same number as before. Anywhere else (no permission, v1
//! without hierarchy, v2 with the controller not delegated) there is none, and `run`
//! attributes kills by the sampled process tree as before.

use std::fs::File;
use std::os::unix::io::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

pub struct JobCgroup {
    dir: PathBuf,
    /// The directory's name, unique to this run: how the kernel's kill record is matched.
    name: String,
    /// `cgroup.procs`, open for writing: the command writes `0` (itself) to it before exec.
    procs: File,
    /// The counter file and its key (`memory.events` / `memory.oom_control`, `oom_kill `).
    events: &'static str,
    key: &'static str,
}

impl JobCgroup {
    /// A new child of `parent` (our own memory cgroup), or None where that is not possible
    /// or would change the job's limits. `limit`: the smallest limit of `parent` and its
    /// parents, and the file it is read from (`memory.max`, `memory.limit_in_bytes`).
    pub fn create(parent: &Path, events: &'static str, key: &'static str, limit: Option<(u64, &Path)>) -> Option<JobCgroup> {
        let v1 = events == "memory.oom_control";
        if v1 && std::fs::read_to_string(parent.join("memory.use_hierarchy")).ok()?.trim() != "1" {
            return None;
        }
        remove_stale(parent);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let name = format!("oomdoc-run-{}-{nanos}", std::process::id());
        let dir = parent.join(&name);
        std::fs::create_dir(&dir).ok()?;
        let made = JobCgroupDir(dir.clone());
        if !dir.join(events).exists() {
            return None;
        }
        if let Some((bytes, file)) = limit {
            let name = file.file_name()?;
            std::fs::write(dir.join(name), bytes.to_string()).ok()?;
        }
        let procs = std::fs::OpenOptions::new().write(true).open(dir.join("cgroup.procs")).ok()?;
        std::mem::forget(made);
        Some(JobCgroup { dir, name, procs, events, key })
    }

    /// For the command's `pre_exec`: `write(fd, "0")` moves the writing process.
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// Whether `pid` is in it (the command moved itself before exec).
    pub fn holds(&self, pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|t| t.lines().any(|l| l.ends_with(&format!("/{}", self.name))))
    }

    /// OOM kills of the job's processes so far.
    pub fn oom_kills(&self) -> Option<u64> {
        let text = std::fs::read_to_string(self.dir.join(self.events)).ok()?;
        text.lines().find_map(|l| l.strip_prefix(self.key).and_then(|v| v.trim().parse().ok()))
    }

    /// Whether a kernel `oom-kill:` line names a task of this cgroup.
    pub fn named_in(&self, line: &str) -> bool {
        line.split("task_memcg=").nth(1).and_then(|r| r.split(',').next()).is_some_and(|m| m.ends_with(&format!("/{}", self.name)))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for JobCgroup {
    /// Removed once empty; a process of the job still running keeps it (and its limits),
    /// as the kernel requires.
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Removes the empty job cgroups of runs that are over: a run whose job left a process
/// behind (or that was killed itself) could not remove its own. Only a cgroup whose `oomdoc`
/// is gone is touched, and the kernel refuses to remove one that still holds a process.
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("oomdoc-run-")).and_then(|r| r.split('-').next()).and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: kill with signal 0 only asks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// Removes a directory made but not kept.
struct JobCgroupDir(PathBuf);

impl Drop for JobCgroupDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// The pre_exec step: move the calling process into the cgroup (async-signal-safe: one write).
///
/// # Safety
/// Call only between fork and exec, with `fd` from [`JobCgroup::procs_fd`].
pub unsafe fn enter(fd: RawFd) {
    let _ = libc::write(fd, b"0".as_ptr().cast(), 1);
}

