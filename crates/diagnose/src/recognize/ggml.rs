//! llama.cpp / ggml and the tools built on it (Ollama, koboldcpp): backend buffer allocation on CUDA, ROCm, Metal, Vulkan, SYCL.

use super::Hit;

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[];

pub fn recognize(_t: &str, _hits: &mut Vec<Hit>) {}
