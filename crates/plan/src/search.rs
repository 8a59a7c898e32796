//! Ranked tile search for a matmul C[M,N] = A[M,K]·B[K,N].
//!
//! TPU (Pallas): the JAX-docs blocked matmul, grid (M/bm, N/bn, K/bk) with K innermost,
//! blocks x (bm,bk), y (bk,bn), out (bm,bn), plus an f32 (bm,bn) accumulator scratch when K
//! is tiled. Triton: the tutorial matmul over BLOCK_M/N/K × num_stages × num_warps.
//!
//! Ranking model, stated so it can be argued with:
//! 1. it must fit: TPU blocks + 1 MiB for Mosaic's internal scratch ≤ the limit; Triton
//!    shared memory (upper bound when not exact) ≤ the opt-in limit;
//! 2. fewer HBM bytes moved (each operand block is re-read whenever its block index
//!    changes between consecutive grid steps — Pallas skips the copy when it does not);
//! 3. MXU / tensor-core alignment (TPU: bm, bn, bk multiples of the MXU edge, 128 before
//!    v6e, 256 from v6e; Triton: BM, BN multiples of 64 on sm_90 wgmma, else 16);
//! 4. fewer grid steps (each costs ~0.35 µs of pipeline overhead on TPU), then less memory.

use crate::pallas::INTERNAL_SCRATCH_SLACK;
use crate::tpu_layout::padded_bytes;
use crate::triton::{predict, TritonConfig, TritonDType, TritonVersion};
use oomdoc_hw::{GpuArch, TpuChip};
use oomdoc_units::DType;
use serde::Serialize;
use std::cmp::Ordering;

/// A matmul problem.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Matmul {
    pub m: u64,
    pub n: u64,
    pub k: u64,
}

/// One TPU tile and what it costs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TpuCandidate {
    pub block_m: u64,
    pub block_n: u64,
    pub block_k: u64,
    pub vmem_bytes: u64,
    pub hbm_bytes: u64,
    /// FLOPs per HBM byte over the whole matmul.
    pub arithmetic_intensity: f64,
    pub grid_steps: u64,
    pub mxu_aligned: bool,
    pub fits: bool,
}

/// VMEM and HBM traffic of one TPU tile, or `None` on overflow.
pub fn tpu_tile(chip: &TpuChip, p: Matmul, in_bits: u32, out_bits: u32, bm: u64, bn: u64, bk: u64) -> Option<TpuCandidate> {
    let gen = chip.generation;
    let (gm, gn, gk) = (p.m.div_ceil(bm), p.n.div_ceil(bn), p.k.div_ceil(bk));
    // A window whose index never changes (one block along both of its grid axes) is
    // single-buffered by Mosaic.
    let bufs = |constant: bool| if constant { 1 } else { 2 };
    let a = padded_bytes(&[bm, bk], in_bits, gen, true)? * bufs(gm == 1 && gk == 1);
    let b = padded_bytes(&[bk, bn], in_bits, gen, true)? * bufs(gk == 1 && gn == 1);
    let o = padded_bytes(&[bm, bn], out_bits, gen, true)? * bufs(gm == 1 && gn == 1);
    let acc = if gk > 1 { padded_bytes(&[bm, bn], 32, gen, false)? } else { 0 };
    let vmem = a.checked_add(b)?.checked_add(o)?.checked_add(acc)?;
    let (mp, np, kp) = (gm as u128 * bm as u128, gn as u128 * bn as u128, gk as u128 * bk as u128);
    let ib = in_bits as u128;
    // A's index (i, k): with K tiled it changes every step, so A is re-read for every j;
    // untiled, it only changes with i. B's index (k, j) changes every step unless gk = gn = 1.
    let a_reads = if gk > 1 { gn as u128 } else { 1 };
    let b_reads = if gk == 1 && gn == 1 { 1 } else { gm as u128 };
    let hbm = mp.checked_mul(kp)?.checked_mul(ib * a_reads)?.checked_add(kp.checked_mul(np)?.checked_mul(ib * b_reads)?)?.checked_add(mp.checked_mul(np)?.checked_mul(out_bits as u128)?)? / 8;
    let hbm = u64::try_from(hbm).ok()?;
    let flops = 2.0 * mp as f64 * np as f64 * kp as f64;
    let mxu = chip.mxu_size.value;
    let aligned = |b: u64, full: u64| b % mxu == 0 || b == full;
    Some(TpuCandidate {
        block_m: bm,
        block_n: bn,
        block_k: bk,
        vmem_bytes: vmem,
        hbm_bytes: hbm,
        arithmetic_intensity: if hbm == 0 { 0.0 } else { flops / hbm as f64 },
        grid_steps: gm.saturating_mul(gn).saturating_mul(gk),
        mxu_aligned: aligned(bm, p.m) && aligned(bn, p.n) && aligned(bk, p.k),
        fits: vmem.saturating_add(INTERNAL_SCRATCH_SLACK) <= u64::MAX, // set by the caller
    })
}

/// Legal block sizes along one dim: multiples of `align` that divide `dim`, plus `dim`
/// itself; with `exhaustive`, every multiple of `align` up to `dim` (edge blocks padded).
fn block_sizes(dim: u64, align: u64, exhaustive: bool, cap: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (1..=dim.min(cap) / align).map(|i| i * align).filter(|b| exhaustive || dim % b == 0).collect();
    if dim <= cap && !v.contains(&dim) {
        v.push(dim);
    }
    v
}

fn rank_tpu(a: &TpuCandidate, b: &TpuCandidate) -> Ordering {
    b.fits
        .cmp(&a.fits)
        .then(a.hbm_bytes.cmp(&b.hbm_bytes))
        .then(b.mxu_aligned.cmp(&a.mxu_aligned))
        .then(a.grid_steps.cmp(&b.grid_steps))
        .then(a.vmem_bytes.cmp(&b.vmem_bytes))
}

#[derive(Debug, Clone, Serialize)]
pub struct TpuSearch {
    pub target: String,
    pub limit_bytes: u64,
    pub evaluated: u64,
    pub fitting: u64,
    pub top: Vec<TpuCandidate>,
    pub model: &'static str,
}

pub const TPU_MODEL: &str = "fits (blocks + 1 MiB internal-scratch slack ≤ limit), then fewest HBM bytes, then MXU-aligned, then fewest grid steps, then least VMEM";

/// Enumerate TPU tiles and keep the best `top`. Dims up to 2^20 per axis are searched
/// (blocks beyond 64 Ki elements per dim are never useful in VMEM).
pub fn search_tpu(chip: &TpuChip, p: Matmul, in_dtype: DType, out_dtype: DType, limit: u64, top: usize, exhaustive: bool) -> TpuSearch {
    let (ib, ob) = (in_dtype.bits(), out_dtype.bits());
    let cap = 1 << 16;
    let ms = block_sizes(p.m, 8, exhaustive, cap);
    let ns = block_sizes(p.n, 128, exhaustive, cap);
    let ks = block_sizes(p.k, 128, exhaustive, cap);
    let budget = limit.saturating_sub(INTERNAL_SCRATCH_SLACK);
    let mut best: Vec<TpuCandidate> = Vec::with_capacity(top + 1);
    let (mut evaluated, mut fitting) = (0u64, 0u64);
    for &bm in &ms {
        for &bn in &ns {
            for &bk in &ks {
                evaluated += 1;
                let Some(mut c) = tpu_tile(chip, p, ib, ob, bm, bn, bk) else { continue };
                c.fits = c.vmem_bytes <= budget;
                if !c.fits {
                    continue;
                }
                fitting += 1;
                // Keep a small sorted top list: cheaper than sorting millions.
                if best.len() < top || best.last().is_some_and(|w| rank_tpu(&c, w) == Ordering::Less) {
                    let pos = best.partition_point(|x| rank_tpu(x, &c) != Ordering::Greater);
                    best.insert(pos, c);
                    best.truncate(top);
                }
            }
        }
    }
    TpuSearch { target: chip.name.clone(), limit_bytes: limit, evaluated, fitting, top: best, model: TPU_MODEL }
}

/// One Triton config and its cost.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TritonCandidate {
    pub config: TritonConfig,
    pub shared_bytes: u64,
    pub exact: bool,
    pub hbm_bytes: u64,
    pub arithmetic_intensity: f64,
    pub aligned: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct TritonSearch {
    pub arch: String,
    pub limit_bytes: u64,
    pub evaluated: u64,
    pub fitting: u64,
    pub top: Vec<TritonCandidate>,
    pub model: &'static str,
}

pub const TRITON_MODEL: &str = "fits (shared memory, upper bound when not exact, ≤ opt-in limit), then fewest HBM bytes (A re-read N/BLOCK_N times, B M/BLOCK_M times), then tensor-core aligned (64 on sm_90, 16 otherwise), then num_stages closest to 3–4, then BLOCK_K ≥ 64 (fewer loop iterations), then least shared memory";

fn stage_penalty(ns: u64) -> u64 {
    match ns {
        3 | 4 => 0,
        2 | 5 => 1,
        _ => 2,
    }
}

/// Enumerate BLOCK_M/N/K ∈ {16..256}, num_stages 1–6, num_warps 4/8 for the tutorial matmul.
pub fn search_triton(arch: &GpuArch, version: TritonVersion, dtype: TritonDType, p: Matmul, top: usize) -> Result<TritonSearch, crate::PlanError> {
    // Every candidate would be "does not fit" for want of a model: say so instead.
    if arch.sm_number().is_none() {
        return Err(crate::triton::amd_not_modelled(arch));
    }
    let blocks = [16u64, 32, 64, 128, 256];
    let s = dtype.bytes() as u128;
    let wgmma = arch.sm_number() == Some(90);
    let mut all = Vec::new();
    let mut evaluated = 0;
    for &bm in &blocks {
        for &bn in &blocks {
            for &bk in &blocks {
                for ns in 1..=6 {
                    for nw in [4u64, 8] {
                        evaluated += 1;
                        let c = TritonConfig { block_m: bm, block_n: bn, block_k: bk, num_stages: ns, num_warps: nw };
                        let Ok(plan) = predict(arch, version, dtype, c) else { continue };
                        if !plan.fits {
                            continue;
                        }
                        let (m, n, k) = (p.m.div_ceil(bm) as u128 * bm as u128, p.n.div_ceil(bn) as u128 * bn as u128, p.k as u128);
                        // Saturate: a matmul this large ranks last rather than panicking.
                        let hbm = m
                            .saturating_mul(k)
                            .saturating_mul(s * (n / bn as u128))
                            .saturating_add(k.saturating_mul(n).saturating_mul(s * (m / bm as u128)))
                            .saturating_add(m.saturating_mul(n).saturating_mul(dtype.out_bytes() as u128));
                        let hbm = u64::try_from(hbm).unwrap_or(u64::MAX);
                        let align = if wgmma { 64 } else { 16 };
                        all.push(TritonCandidate {
                            config: c,
                            shared_bytes: plan.shared_bytes,
                            exact: plan.exact,
                            hbm_bytes: hbm,
                            arithmetic_intensity: 2.0 * m as f64 * n as f64 * k as f64 / hbm.max(1) as f64,
                            aligned: bm % align == 0 && bn % align == 0,
                        });
                    }
                }
            }
        }
    }
    let fitting = all.len() as u64;
    all.sort_by(|a, b| {
        a.hbm_bytes
            .cmp(&b.hbm_bytes)
            .then(b.aligned.cmp(&a.aligned))
            .then(stage_penalty(a.config.num_stages).cmp(&stage_penalty(b.config.num_stages)))
            .then(b.config.block_k.min(64).cmp(&a.config.block_k.min(64)))
            .then(a.shared_bytes.cmp(&b.shared_bytes))
    });
    all.truncate(top);
    Ok(TritonSearch { arch: arch.arch.clone(), limit_bytes: arch.shared_optin_per_block.value, evaluated, fitting, top: all, model: TRITON_MODEL })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keras_tile_costs() {
        let v5e = oomdoc_hw::tpu_chip("v5e").unwrap();
        let p = Matmul { m: 8192, n: 8192, k: 8192 };
        let keras = tpu_tile(v5e, p, 32, 32, 128, 128, 8192).unwrap();
        assert_eq!(keras.vmem_bytes, 16_908_288);
        let tiled = tpu_tile(v5e, p, 32, 32, 512, 512, 512).unwrap();
        // 2·(1+1+1) MiB of blocks + 1 MiB f32 accumulator.
        assert_eq!(tiled.vmem_bytes, 7 << 20);
        assert!(tiled.hbm_bytes < keras.hbm_bytes);
    }

    #[test]
    fn search_finds_fitting_aligned_tiles() {
        let v5e = oomdoc_hw::tpu_chip("v5e").unwrap();
        let p = Matmul { m: 8192, n: 8192, k: 8192 };
        let r = search_tpu(v5e, p, DType::F32, DType::F32, 16 << 20, 5, false);
        assert!(r.evaluated > 100 && !r.top.is_empty());
        for c in &r.top {
            assert!(c.vmem_bytes + INTERNAL_SCRATCH_SLACK <= 16 << 20 && c.fits);
        }
        assert!(r.top[0].mxu_aligned);
        let arch = oomdoc_hw::gpu_arch("sm_86").unwrap();
        let t = search_triton(arch, TritonVersion::V2_2Plus, TritonDType::Fp16, p, 5).unwrap();
        assert!(t.top.iter().all(|c| c.shared_bytes <= 101376));
        let amd = oomdoc_hw::gpu_arch("gfx942").unwrap();
        assert!(search_triton(amd, TritonVersion::V2_2Plus, TritonDType::Fp16, p, 5).unwrap_err().to_string().contains("not modelled"));
    }

    #[test]
    fn odd_and_huge_dims_do_not_panic() {
        let v6e = oomdoc_hw::tpu_chip("v6e").unwrap();
        let r = search_tpu(v6e, Matmul { m: 7, n: 100, k: 3 }, DType::BF16, DType::BF16, 32 << 20, 3, true);
        assert_eq!(r.top[0].block_m, 7);
        let _ = search_tpu(v6e, Matmul { m: u64::MAX, n: u64::MAX, k: u64::MAX }, DType::F32, DType::F32, 32 << 20, 3, false);
    }
}
