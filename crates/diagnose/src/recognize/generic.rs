//! Generic layer: any message with clear memory-failure semantics that no family grammar claimed ("out of memory", "cannot allocate", ENOMEM, exit 137, …), with sizes by general rules and platform/space from the words around it.

use super::Hit;

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[];

pub fn recognize(_t: &str, _hits: &mut Vec<Hit>) {}
