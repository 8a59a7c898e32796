//! `oomdoc run --record-snapshot`: arm PyTorch's CUDA allocation recording in a Python
//! child, and keep the snapshot it dumps at the OOM.
//!
//! The child gets `OOMDOC_RECORD_SNAPSHOT_DIR` (a private temp directory),
//! `OOMDOC_RECORD_MAX_ENTRIES` (100000 unless set) and `PYTHONPATH` led by a directory
//! holding `sitecustomize.py`: the Python package's own `oomdoc/_arm.py`, embedded here, so
//! `oomdoc.install(record=True)` and this flag share one implementation. It arms recording
//! when the program imports torch and runs the user's own sitecustomize too.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The arming code, written as the child's `sitecustomize.py`.
const SITECUSTOMIZE: &str = include_str!("../../../../python/oomdoc/_arm.py");
/// History entries kept when the user's environment does not say.
const DEFAULT_MAX_ENTRIES: &str = "100000";

pub struct Recording {
    root: PathBuf,
    site: PathBuf,
    /// Where the child dumps its snapshots.
    pub snapshots: PathBuf,
}

impl Recording {
    /// A private (0700) temp directory with `site/sitecustomize.py` and an empty `snapshots/`.
    pub fn prepare() -> Result<Recording, String> {
        use std::os::unix::fs::DirBuilderExt;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let root = std::env::temp_dir().join(format!("oomdoc-record-{}-{nanos}", std::process::id()));
        let (site, snapshots) = (root.join("site"), root.join("snapshots"));
        let cannot = |e: std::io::Error| format!("cannot prepare the recording directory {}: {e}", root.display());
        std::fs::DirBuilder::new().mode(0o700).create(&root).map_err(cannot)?;
        for d in [&site, &snapshots] {
            std::fs::DirBuilder::new().mode(0o700).create(d).map_err(cannot)?;
        }
        std::fs::write(site.join("sitecustomize.py"), SITECUSTOMIZE).map_err(cannot)?;
        Ok(Recording { root, site, snapshots })
    }

    /// The child's environment: the directory, the bound, and our sitecustomize first on PYTHONPATH.
    pub fn arm(&self, cmd: &mut Command) {
        cmd.env("OOMDOC_RECORD_SNAPSHOT_DIR", &self.snapshots);
        if std::env::var_os("OOMDOC_RECORD_MAX_ENTRIES").is_none_or(|v| v.is_empty()) {
            cmd.env("OOMDOC_RECORD_MAX_ENTRIES", DEFAULT_MAX_ENTRIES);
        }
        let mut path = OsString::from(self.site.as_os_str());
        if let Some(old) = std::env::var_os("PYTHONPATH").filter(|v| !v.is_empty()) {
            path.push(":");
            path.push(old);
        }
        cmd.env("PYTHONPATH", path);
    }

    /// After the job: the newest snapshot, moved into `keep_in` when given (next to the
    /// report), else left where it is; the rest of the temp directory goes when it is empty.
    pub fn finish(&self, keep_in: Option<&Path>) -> Option<PathBuf> {
        let _ = std::fs::remove_dir_all(&self.site);
        let newest = oomdoc_diagnose::snapshot::newest_in(&self.snapshots);
        let kept = match (newest, keep_in) {
            (None, _) => None,
            (Some(p), None) => Some(p),
            (Some(p), Some(dir)) => {
                let dest = dir.join(p.file_name().unwrap_or_default());
                let moved = std::fs::rename(&p, &dest).is_ok() || (std::fs::copy(&p, &dest).is_ok() && std::fs::remove_file(&p).is_ok());
                Some(if moved { dest } else { p })
            }
        };
        // Only empty directories go: other snapshots (other devices, processes) stay.
        let _ = std::fs::remove_dir(&self.snapshots);
        let _ = std::fs::remove_dir(&self.root);
        kept
    }

    /// The command never started: nothing to keep.
    pub fn discard(&self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
