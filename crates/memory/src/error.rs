//! Typed errors. Every error that comes from input data names the file and, for
//! text dumps, the 1-based line, so a user can open the file at the problem.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },

    /// A line that does not follow the grammar of its file.
    #[error("{}:{line}: {message}", path.display())]
    Parse { path: PathBuf, line: usize, message: String },

    /// A binary file that is not a readable `xla.HloProto`.
    #[error("{}: {message}", path.display())]
    Proto { path: PathBuf, message: String },

    /// Files that parse but disagree with each other (mixed dumps, truncation at a line boundary).
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Inconsistent { path: PathBuf, line: Option<usize>, message: String },

    #[error("{}: no XLA memory dumps found (expected *-buffer-assignment.txt with *-live-range.txt, or *.hlo.pb from XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_proto, or a jax.profiler log dir with plugins/profile/<run>/<host>.xplane.pb)", path.display())]
    NoDumps { path: PathBuf },

    /// A module's dump lacks what the analysis needs.
    #[error("module {module}: {message}")]
    Incomplete { module: String, message: String },

    /// Decoding would take more memory (or more records) than allowed: at most
    /// [`crate::MAX_BYTES_PER_INPUT_BYTE`] × the input's size, or the caller's
    /// [`crate::Limits`]. The server answers 413.
    #[error("{}: too large to analyse: {what} would need {needed} {}, over the limit of {limit} (at most {} bytes of memory per input byte, or the configured limit)", path.display(), if *records { "records" } else { "bytes of memory" }, crate::MAX_BYTES_PER_INPUT_BYTE)]
    TooLarge { path: PathBuf, what: String, limit: u64, needed: u64, records: bool },

    /// A PyTorch memory snapshot that cannot be read (refused opcode, truncation, wrong shape).
    #[error("{}: {message}", path.display())]
    Snapshot { path: PathBuf, message: String },

    #[error("{}: no profile run `{run}`; runs there: {}", path.display(), available.join(", "))]
    NoRun { path: PathBuf, run: String, available: Vec<String> },

    #[error("no module matches `{hint}`; modules in the dump: {}", first_few(available))]
    ModuleNotFound { hint: String, available: Vec<String> },

    #[error("`{hint}` matches several modules: {}; pass the program id, the full name, or one of the module's files", first_few(candidates))]
    AmbiguousModule { hint: String, candidates: Vec<String> },
}

/// A list for one line of error: the first ten, then how many more (a dump of 10,000
/// modules made a 909 KB line).
fn first_few(names: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut s = names.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(", … and {} more (oomdoc memory DIR --list)", names.len() - SHOWN));
    }
    s
}

impl MemoryError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> MemoryError {
        MemoryError::Io { path: path.to_path_buf(), source }
    }
    pub(crate) fn parse(path: &Path, line: usize, message: impl Into<String>) -> MemoryError {
        MemoryError::Parse { path: path.to_path_buf(), line, message: message.into() }
    }
    pub(crate) fn proto(path: &Path, message: impl Into<String>) -> MemoryError {
        MemoryError::Proto { path: path.to_path_buf(), message: message.into() }
    }
    pub(crate) fn inconsistent(path: &Path, line: Option<usize>, message: impl Into<String>) -> MemoryError {
        MemoryError::Inconsistent { path: path.to_path_buf(), line, message: message.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_module_list_is_cut_in_messages() {
        let names: Vec<String> = (0..10_000).map(|i| format!("jit_f_{i}")).collect();
        let e = MemoryError::AmbiguousModule { hint: "jit_f".into(), candidates: names };
        let m = e.to_string();
        assert!(m.len() < 400, "{}", m.len());
        assert!(m.contains("and 9990 more"), "{m}");
    }
}
