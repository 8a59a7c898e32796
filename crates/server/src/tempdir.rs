//! Upload directories: `oomdoc-dump-<pid>-<random>` under the configured temp dir,
//! removed when the last holder lets go (request done, failed, panicked or timed out,
//! and the unpack or analysis working on it finished), and swept at start when a
//! previous server crashed and left some behind.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, SystemTime},
};

pub const PREFIX: &str = "oomdoc-dump-";

/// Directories without a live owner older than this are removed at start even when
/// their owner cannot be checked (no `/proc`, or names from older versions).
const STALE_AGE: Duration = Duration::from_secs(24 * 3600);

/// A shared handle to one upload's directory: clone it into every task that writes or
/// reads inside; the directory is removed when the last clone drops (also on panic).
#[derive(Clone, Debug)]
pub struct DumpDir(Arc<tempfile::TempDir>);

impl DumpDir {
    pub fn create(parent: &Path) -> std::io::Result<DumpDir> {
        std::fs::create_dir_all(parent)?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-", std::process::id()))
            .tempdir_in(parent)?;
        Ok(DumpDir(Arc::new(dir)))
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

/// The owner's pid in a directory name, `oomdoc-dump-<pid>-<random>`.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, random) = rest.split_once('-')?;
    (!random.is_empty()).then(|| pid.parse().ok()).flatten()
}

/// `Some(alive)` where the system can tell.
fn process_alive(pid: u32) -> Option<bool> {
    let proc_root = Path::new("/proc/self");
    if !proc_root.exists() {
        return None;
    }
    Some(Path::new("/proc").join(pid.to_string()).exists())
}

/// Remove upload directories left under `parent` by servers that are gone (crashed or
/// killed): those whose owner pid is not running, and any older than a day whose owner
/// cannot be checked. Directories of this process and of live servers are kept.
/// Returns the paths removed.
pub fn remove_stale(parent: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(parent) else {
        return removed;
    };
    let me = std::process::id();
    for entry in rd.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(PREFIX) {
            continue;
        }
        // Never follow a link someone planted under a shared /tmp.
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        let old = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age > STALE_AGE);
        let stale = match owner_pid(name) {
            Some(pid) if pid == me => false,
            Some(pid) => match process_alive(pid) {
                Some(alive) => !alive,
                None => old,
            },
            None => old,
        };
        if stale && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

/// Upload directories (ours or anyone's) under `parent`: what a test or the stress
/// benchmark counts to prove none is left behind.
pub fn count_dump_dirs(parent: &Path) -> usize {
    std::fs::read_dir(parent)
        .map(|rd| {
            rd.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.starts_with(PREFIX))
                })
                .count()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_holder_removes_the_directory_even_on_panic() {
        let parent = tempfile::tempdir().unwrap();
        let d = DumpDir::create(parent.path()).unwrap();
        let worker = d.clone();
        std::fs::write(d.path().join("x"), b"x").unwrap();
        drop(d);
        assert_eq!(count_dump_dirs(parent.path()), 1, "a worker still holds it");
        let r = std::thread::spawn(move || {
            let _held = worker;
            panic!("engine panicked");
        })
        .join();
        assert!(r.is_err());
        assert_eq!(count_dump_dirs(parent.path()), 0);
    }

    #[test]
    fn stale_directories_of_dead_servers_are_swept_live_ones_kept() {
        let parent = tempfile::tempdir().unwrap();
        let mine = DumpDir::create(parent.path()).unwrap();
        // A pid that cannot be running (above Linux's pid_max limit of 2^22).
        let dead = parent.path().join(format!("{PREFIX}4999999-abc123"));
        std::fs::create_dir_all(dead.join("dump/sub")).unwrap();
        std::fs::write(dead.join("dump/sub/f.pb"), b"x").unwrap();
        let unrelated = parent.path().join("other-dir");
        std::fs::create_dir(&unrelated).unwrap();
        let removed = remove_stale(parent.path());
        if Path::new("/proc/self").exists() {
            assert_eq!(removed, vec![dead.clone()]);
            assert!(!dead.exists());
        }
        assert!(mine.path().exists() && unrelated.exists());
        assert_eq!(owner_pid("oomdoc-dump-123-xY"), Some(123));
        assert_eq!(owner_pid("oomdoc-dump-xY"), None);
    }
}
