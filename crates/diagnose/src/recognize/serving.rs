//! Serving engines: vLLM (V0 and V1), SGLang, TGI: KV-cache budgets, warmup and profiling OOMs.

use super::Hit;

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[];

pub fn recognize(_t: &str, _hits: &mut Vec<Hit>) {}
