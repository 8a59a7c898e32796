//! Other array frameworks and vendors: CuPy/Chainer/Numba, MLX, PaddlePaddle, MXNet, Intel XPU, Ascend NPU.

use super::Hit;

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[];

pub fn recognize(_t: &str, _hits: &mut Vec<Hit>) {}
