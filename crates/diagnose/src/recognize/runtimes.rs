//! Inference runtimes and communication libraries: ONNX Runtime (BFCArena, CUDA/TensorRT EPs), TensorRT, NCCL, the CUDA stream-ordered allocator, Rust ML (candle, burn, wgpu, cudarc).

use super::Hit;

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[];

pub fn recognize(_t: &str, _hits: &mut Vec<Hit>) {}
