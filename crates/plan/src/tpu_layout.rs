//! Bytes one VMEM buffer really occupies under the TPU tiled layout.
//!
//! Port of Mosaic's `getTilingFactor` / `inferMemref` rule (jax-ml/jax
//! `infer_memref_layout.cc`, last in-repo version 2025-11-19, mirrored by
//! `jax/_src/tpu_info.py`), as summarised in `shared/reference/kernel-memory.md` §2.2:
//! the lane (minor) dim pads to 128; the sublane (second-minor) dim pads to the tiling
//! factor, which depends on the element width (packing 32/bits) and the generation.
//! The "large" tiles are only chosen when they divide the rows, so they never add bytes.

/// Lanes of a vreg: the minor dim of every VMEM buffer pads to this.
pub const LANES: u64 = 128;
/// Sublanes of a vreg (8 on every generation up to v7x).
pub const SUBLANES: u64 = 8;

/// The sublane tiling factor for a buffer whose second-minor dim is `rows`.
pub fn tiling_factor(rows: u64, generation: u32, bits: u32, is_kernel_argument: bool, is_1d: bool) -> u64 {
    let bits = bits.clamp(1, 32);
    let packing = (32 / bits) as u64;
    let min_tiling = if generation < 4 { 2 * packing } else { packing };
    let tiling_sublane = SUBLANES.max(packing);
    // x8/x4 large modes are on by default; x16 large only on gen ≥ 7 for arguments,
    // and on gen ≥ 6 for in-kernel allocations (scratch).
    let mut large = if is_1d {
        tiling_sublane
    } else {
        match bits {
            2 => SUBLANES * 16,
            4 => SUBLANES * 8,
            8 => SUBLANES * 4,
            16 if generation >= 7 || (!is_kernel_argument && generation >= 6) => SUBLANES * 2,
            _ => tiling_sublane,
        }
    };
    if rows % large != 0 {
        large = tiling_sublane;
    }
    if large <= rows {
        return large;
    }
    let mut t = min_tiling;
    while t < rows.min(tiling_sublane) {
        t *= 2;
    }
    t
}

/// Padded bytes of one buffer of `dims` (major to minor) with `bits`-wide elements, or
/// `None` if the count does not fit in 64 bits.
pub fn padded_bytes(dims: &[u64], bits: u32, generation: u32, is_kernel_argument: bool) -> Option<u64> {
    let bits_u = bits as u128;
    match dims {
        [] => padded_bytes(&[1], bits, generation, is_kernel_argument),
        [n] => {
            let rows = n.div_ceil(LANES);
            let tile = tiling_factor(rows, generation, bits, is_kernel_argument, true) as u128 * LANES as u128;
            let elems = (*n as u128).div_ceil(tile) * tile;
            u64::try_from((elems * bits_u).div_ceil(8)).ok()
        }
        [lead @ .., rows, cols] => {
            let t = tiling_factor(*rows, generation, bits, is_kernel_argument, false) as u128;
            let lead: u128 = lead.iter().try_fold(1u128, |acc, &d| acc.checked_mul(d as u128))?;
            let r = (*rows as u128).div_ceil(t) * t;
            let c = (*cols as u128).div_ceil(LANES as u128) * LANES as u128;
            let elems = lead.checked_mul(r)?.checked_mul(c)?;
            u64::try_from(elems.checked_mul(bits_u)?.div_ceil(8)).ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The worked examples of shared/fixtures/triton-oracle/tpu_vmem_estimate.py.
    #[test]
    fn reference_examples() {
        assert_eq!(padded_bytes(&[1, 100], 32, 5, true), Some(512));
        assert_eq!(padded_bytes(&[8, 1], 32, 5, true), Some(4096));
        assert_eq!(padded_bytes(&[12, 200], 32, 5, true), Some(16 * 256 * 4));
        assert_eq!(padded_bytes(&[8, 512], 16, 6, true), Some(8 * 512 * 2));
        assert_eq!(padded_bytes(&[8, 512], 16, 7, true), Some(8 * 512 * 2));
        assert_eq!(padded_bytes(&[24, 512], 16, 7, true), Some(24 * 512 * 2));
        assert_eq!(padded_bytes(&[8, 512], 8, 6, true), Some(8 * 512));
        assert_eq!(padded_bytes(&[12, 512], 8, 6, true), Some(16 * 512));
        assert_eq!(padded_bytes(&[1, 128], 8, 6, true), Some(4 * 128));
        assert_eq!(padded_bytes(&[5, 128], 32, 5, true), Some(8 * 128 * 4));
        assert_eq!(padded_bytes(&[12, 128], 32, 5, true), Some(16 * 128 * 4));
        assert_eq!(padded_bytes(&[1, 128], 16, 5, true), Some(2 * 128 * 2));
        assert_eq!(tiling_factor(32, 6, 8, true, false), 32);
        assert_eq!(tiling_factor(16, 7, 16, true, false), 16);
        assert_eq!(padded_bytes(&[128, 8192], 32, 5, true), Some(4 << 20));
    }

    #[test]
    fn rank1_and_overflow() {
        assert_eq!(padded_bytes(&[1024], 32, 5, true), Some(4096));
        assert_eq!(padded_bytes(&[100], 32, 5, true), Some(512));
        assert_eq!(padded_bytes(&[], 32, 5, true), Some(512));
        assert_eq!(padded_bytes(&[u64::MAX, u64::MAX, 128], 32, 5, true), None);
    }
}
