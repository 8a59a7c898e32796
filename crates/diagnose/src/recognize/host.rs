//! Host RAM: CPU allocators (PyTorch DefaultCPUAllocator, posix_memalign, XLA:CPU), std::bad_alloc, Python MemoryError, the Linux OOM killer, containers (OOMKilled), macOS jetsam.

use super::Hit;

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[];

pub fn recognize(_t: &str, _hits: &mut Vec<Hit>) {}
