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

/// Largest operand (A, B or C) a matmul may have, in bytes: 2^40 = 1 TiB.
///
/// The kernels planned here run on one device and read their operands from that device's
/// memory. The largest memory of any single accelerator in the hardware table is 288 GB
/// (NVIDIA B300, AMD MI355X; TPU v7x has 192 GB), so an operand of more than 1 TiB (3.8×
/// that) cannot be a real array: its dims are a typo or a unit mistake. Under this bound
/// every product the search forms (M·K·N·bits, traffic with re-reads, grid steps) stays
/// below 2^64 (M·K·N·s ≤ √(A·B·C / s) ≤ 2^60), so no candidate is lost to overflow; the
/// arithmetic below is still done in u128 and saturates rather than dropping anything.
pub const MAX_OPERAND_BYTES: u128 = 1 << 40;

/// Default budget of candidates one search may evaluate (`--max-candidates`): 20 million,
/// about 2–3 s of a release build at the measured 8–10 M candidates/s (docs/plan.md).
pub const DEFAULT_MAX_CANDIDATES: u64 = 20_000_000;

/// Refuse a matmul whose dims are zero or whose operands exceed [`MAX_OPERAND_BYTES`].
pub fn check_matmul(p: Matmul, in_bits: u32, out_bits: u32) -> Result<(), crate::PlanError> {
    for (name, v) in [("--m", p.m), ("--n", p.n), ("--k", p.k)] {
        if v == 0 {
            return Err(crate::PlanError::field(name, "must be positive"));
        }
    }
    let bytes = |a: u64, b: u64, bits: u32| (a as u128 * b as u128).saturating_mul(bits as u128).div_ceil(8);
    for (name, a, b, bits) in [("A (M×K)", p.m, p.k, in_bits), ("B (K×N)", p.k, p.n, in_bits), ("C (M×N)", p.m, p.n, out_bits)] {
        let n = bytes(a, b, bits);
        if n > MAX_OPERAND_BYTES {
            return Err(crate::PlanError::field(
                "--m/--n/--k",
                format!(
                    "operand {name} = {a}×{b} would take {n} bytes, more than 1 TiB (2^40 bytes); no accelerator holds an array that large (the largest has 288 GB), so these dims cannot be real"
                ),
            ));
        }
    }
    Ok(())
}

fn sat_u64(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// VMEM and HBM traffic of one TPU tile, or `None` when a block's own byte count does not
/// fit in 64 bits (such a tile cannot fit in VMEM). HBM traffic saturates instead of failing.
pub fn tpu_tile(chip: &TpuChip, p: Matmul, in_bits: u32, out_bits: u32, bm: u64, bn: u64, bk: u64) -> Option<TpuCandidate> {
    let gen = chip.generation;
    let (gm, gn, gk) = (p.m.div_ceil(bm), p.n.div_ceil(bn), p.k.div_ceil(bk));
    // A window whose index never changes (one block along both of its grid axes) is
    // single-buffered by Mosaic.
    let bufs = |constant: bool| if constant { 1 } else { 2 };
    let a = padded_bytes(&[bm, bk], in_bits, gen, true)?.checked_mul(bufs(gm == 1 && gk == 1))?;
    let b = padded_bytes(&[bk, bn], in_bits, gen, true)?.checked_mul(bufs(gk == 1 && gn == 1))?;
    let o = padded_bytes(&[bm, bn], out_bits, gen, true)?.checked_mul(bufs(gm == 1 && gn == 1))?;
    let acc = if gk > 1 { padded_bytes(&[bm, bn], 32, gen, false)? } else { 0 };
    let vmem = a.checked_add(b)?.checked_add(o)?.checked_add(acc)?;
    let (mp, np, kp) = (gm as u128 * bm as u128, gn as u128 * bn as u128, gk as u128 * bk as u128);
    let ib = in_bits as u128;
    // A's index (i, k): with K tiled it changes every step, so A is re-read for every j;
    // untiled, it only changes with i. B's index (k, j) changes every step unless gk = gn = 1.
    let a_reads = if gk > 1 { gn as u128 } else { 1 };
    let b_reads = if gk == 1 && gn == 1 { 1 } else { gm as u128 };
    let hbm_bits = mp
        .saturating_mul(kp)
        .saturating_mul(ib.saturating_mul(a_reads))
        .saturating_add(kp.saturating_mul(np).saturating_mul(ib.saturating_mul(b_reads)))
        .saturating_add(mp.saturating_mul(np).saturating_mul(out_bits as u128));
    let hbm = sat_u64(hbm_bits / 8);
    let flops = 2.0 * mp as f64 * np as f64 * kp as f64;
    let mxu = chip.mxu_size.value.max(1);
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
        fits: true, // set by the caller against its limit
    })
}

/// Legal block sizes along one dim: multiples of `align` that divide `dim`, plus `dim`
/// itself; with `exhaustive`, every multiple of `align` up to `dim` (edge blocks padded).
/// A dim above `cap` with no such divisor (a large prime, an odd 2^64−1) gets the
/// power-of-two multiples of `align` up to `cap`, edge blocks padded, rather than no block.
fn block_sizes(dim: u64, align: u64, exhaustive: bool, cap: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (1..=dim.min(cap) / align).map(|i| i * align).filter(|b| exhaustive || dim % b == 0).collect();
    if dim <= cap && !v.contains(&dim) {
        v.push(dim);
    }
    if v.is_empty() {
        v = std::iter::successors(Some(align), |b| b.checked_mul(2)).take_while(|&b| b <= cap.min(dim)).collect();
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
    /// The limit asked for (`--vmem-limit-bytes` or the chip's default scoped limit).
    pub limit_bytes: u64,
    pub evaluated: u64,
    pub fitting: u64,
    pub top: Vec<TpuCandidate>,
    pub model: &'static str,
    /// The limit tiles were checked against: `limit_bytes`, or the chip's physical VMEM per
    /// core when the limit asked for is above it.
    pub effective_limit_bytes: u64,
    /// The candidate budget this search ran under (`--max-candidates`).
    pub max_candidates: u64,
    /// Warnings and errors about the search (e.g. a limit above physical VMEM).
    pub notes: Vec<String>,
}

pub const TPU_MODEL: &str = "fits (blocks + 1 MiB internal-scratch slack ≤ limit), then fewest HBM bytes, then MXU-aligned, then fewest grid steps, then least VMEM";

/// How a search runs: how many ranked tiles to keep, whether to take every multiple, and the
/// most candidates it may evaluate.
#[derive(Debug, Clone, Copy)]
pub struct SearchOptions {
    pub top: usize,
    pub exhaustive: bool,
    pub max_candidates: u64,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions { top: 8, exhaustive: false, max_candidates: DEFAULT_MAX_CANDIDATES }
    }
}

fn over_budget(count: u128, max: u64, exhaustive: bool) -> crate::PlanError {
    crate::PlanError::field(
        "--max-candidates",
        format!(
            "this search has {count} candidates, more than the budget of {max}; raise --max-candidates (a release build evaluates about 8–10 M candidates/s){}",
            if exhaustive { " or drop --exhaustive" } else { "" }
        ),
    )
}

/// Enumerate TPU tiles and keep the best `opts.top`. Blocks up to 64 Ki elements per dim
/// are searched (larger blocks are never useful in VMEM). The number of candidates is known
/// before the loop; past `opts.max_candidates` the search is refused, never cut short.
/// `progress(done, total)` is called every 65,536 candidates and once at the end.
pub fn search_tpu(chip: &TpuChip, p: Matmul, in_dtype: DType, out_dtype: DType, limit: u64, opts: SearchOptions, progress: &mut dyn FnMut(u64, u64)) -> Result<TpuSearch, crate::PlanError> {
    let (ib, ob) = (in_dtype.bits(), out_dtype.bits());
    check_matmul(p, ib, ob)?;
    let top = opts.top.max(1);
    let cap = 1 << 16;
    let ms = block_sizes(p.m, 8, opts.exhaustive, cap);
    let ns = block_sizes(p.n, 128, opts.exhaustive, cap);
    let ks = block_sizes(p.k, 128, opts.exhaustive, cap);
    let total = ms.len() as u128 * ns.len() as u128 * ks.len() as u128;
    if total > opts.max_candidates as u128 {
        return Err(over_budget(total, opts.max_candidates, opts.exhaustive));
    }
    let total = total as u64;
    let physical = chip.vmem_limit_ceiling();
    let mut notes = Vec::new();
    let effective = if physical > 0 && limit > physical {
        notes.push(format!(
            "error: the limit {limit} bytes is above the physical VMEM of {} ({physical} bytes per core); tiles are checked against the physical VMEM",
            chip.name
        ));
        physical
    } else {
        limit
    };
    let budget = effective.saturating_sub(INTERNAL_SCRATCH_SLACK);
    let mut best: Vec<TpuCandidate> = Vec::with_capacity(top.min(1024) + 1);
    let (mut evaluated, mut fitting) = (0u64, 0u64);
    for &bm in &ms {
        for &bn in &ns {
            for &bk in &ks {
                evaluated += 1;
                if evaluated % (1 << 16) == 0 {
                    progress(evaluated, total);
                }
                // None: a block's bytes overflow 64 bits, so it cannot fit in VMEM.
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
    progress(evaluated, total);
    Ok(TpuSearch {
        target: chip.name.clone(),
        limit_bytes: limit,
        evaluated,
        fitting,
        top: best,
        model: TPU_MODEL,
        effective_limit_bytes: effective,
        max_candidates: opts.max_candidates,
        notes,
    })
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
    /// The candidate budget this search ran under (`--max-candidates`).
    pub max_candidates: u64,
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
pub fn search_triton(arch: &GpuArch, version: TritonVersion, dtype: TritonDType, p: Matmul, opts: SearchOptions) -> Result<TritonSearch, crate::PlanError> {
    // Every candidate would be "does not fit" for want of a model: say so instead.
    if arch.sm_number().is_none() {
        return Err(crate::triton::amd_not_modelled(arch));
    }
    check_matmul(p, dtype.bytes() as u32 * 8, dtype.out_bytes() as u32 * 8)?;
    let top = opts.top.max(1);
    let blocks = [16u64, 32, 64, 128, 256];
    let total = (blocks.len() * blocks.len() * blocks.len() * 6 * 2) as u128;
    if total > opts.max_candidates as u128 {
        return Err(over_budget(total, opts.max_candidates, false));
    }
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
    Ok(TritonSearch {
        arch: arch.arch.clone(),
        limit_bytes: arch.shared_optin_per_block.value,
        evaluated,
        fitting,
        top: all,
        model: TRITON_MODEL,
        max_candidates: opts.max_candidates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(top: usize, exhaustive: bool) -> SearchOptions {
        SearchOptions { top, exhaustive, max_candidates: DEFAULT_MAX_CANDIDATES }
    }

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
        let r = search_tpu(v5e, p, DType::F32, DType::F32, 16 << 20, opts(5, false), &mut |_, _| {}).unwrap();
        assert!(r.evaluated > 100 && !r.top.is_empty());
        for c in &r.top {
            assert!(c.vmem_bytes + INTERNAL_SCRATCH_SLACK <= 16 << 20 && c.fits);
        }
        assert!(r.top[0].mxu_aligned);
        let arch = oomdoc_hw::gpu_arch("sm_86").unwrap();
        let t = search_triton(arch, TritonVersion::V2_2Plus, TritonDType::Fp16, p, opts(5, false)).unwrap();
        assert!(t.top.iter().all(|c| c.shared_bytes <= 101376));
        let amd = oomdoc_hw::gpu_arch("gfx942").unwrap();
        assert!(search_triton(amd, TritonVersion::V2_2Plus, TritonDType::Fp16, p, opts(5, false)).unwrap_err().to_string().contains("not modelled"));
    }

    #[test]
    fn odd_and_huge_dims_do_not_panic() {
        let v6e = oomdoc_hw::tpu_chip("v6e").unwrap();
        let r = search_tpu(v6e, Matmul { m: 7, n: 100, k: 3 }, DType::BF16, DType::BF16, 32 << 20, opts(3, true), &mut |_, _| {}).unwrap();
        assert_eq!(r.top[0].block_m, 7);
        let e = search_tpu(v6e, Matmul { m: u64::MAX, n: u64::MAX, k: u64::MAX }, DType::F32, DType::F32, 32 << 20, opts(3, false), &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("1 TiB"), "{e}");
    }

    /// Dims whose products overflow u64 (2^32 each: A alone is 2^65 bf16 bytes) were
    /// "1400 candidates, 0 fit": every tile dropped to an overflow. Now they are refused.
    #[test]
    fn u64_overflowing_dims_are_an_error_not_zero_fit() {
        let v5e = oomdoc_hw::tpu_chip("v5e").unwrap();
        let p = Matmul { m: 1 << 32, n: 1 << 32, k: 1 << 32 };
        let e = search_tpu(v5e, p, DType::BF16, DType::BF16, 16 << 20, opts(3, false), &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("cannot be real"), "{e}");
        let sm90 = oomdoc_hw::gpu_arch("sm_90").unwrap();
        assert!(search_triton(sm90, TritonVersion::V2_2Plus, TritonDType::Fp16, p, opts(3, false)).is_err());
        // A skinny matmul with one huge dim but small operands is fine.
        assert!(check_matmul(Matmul { m: 1 << 36, n: 8, k: 8 }, 16, 16).is_ok());
        assert!(check_matmul(Matmul { m: 1 << 40, n: 8, k: 8 }, 16, 16).is_err());
    }

    /// The largest allowed dims: no candidate is lost, and the traffic equals the u128 formula.
    #[test]
    fn largest_dims_keep_every_candidate_and_exact_traffic() {
        let v5e = oomdoc_hw::tpu_chip("v5e").unwrap();
        // bf16 operands of 2^19 × 2^19 = 2^39 bytes each, under the 1 TiB bound.
        let d = 1u64 << 19;
        let p = Matmul { m: d, n: d, k: d };
        let r = search_tpu(v5e, p, DType::BF16, DType::BF16, 16 << 20, opts(3, false), &mut |_, _| {}).unwrap();
        assert!(r.fitting > 0 && !r.top.is_empty());
        // Every candidate is either fitting or too big for VMEM: count them independently.
        let sizes = |a: u64| (1..=(1u64 << 16) / a).map(|i| i * a).filter(|b| d % b == 0).collect::<Vec<_>>();
        let (ms, ns, ks) = (sizes(8), sizes(128), sizes(128));
        assert_eq!(r.evaluated, (ms.len() * ns.len() * ks.len()) as u64);
        let mut fit = 0;
        for &bm in &ms {
            for &bn in &ns {
                for &bk in &ks {
                    let c = tpu_tile(v5e, p, 16, 16, bm, bn, bk).expect("no tile is lost to overflow");
                    fit += (c.vmem_bytes + INTERNAL_SCRATCH_SLACK <= 16 << 20) as u64;
                }
            }
        }
        assert_eq!(r.fitting, fit);
        let c = tpu_tile(v5e, p, 16, 16, 512, 512, 512).unwrap();
        let (d, g) = (d as u128, (d / 512) as u128);
        let want = (d * d * 2 * g) + (d * d * 2 * g) + d * d * 2;
        assert_eq!(c.hbm_bytes as u128, want);
    }

    /// A dim above 64 Ki with no aligned divisor (an odd number) still gets padded tiles.
    #[test]
    fn a_large_odd_dim_gets_padded_tiles_not_none() {
        let v5e = oomdoc_hw::tpu_chip("v5e").unwrap();
        let p = Matmul { m: (1 << 20) + 1, n: 4096, k: 4096 };
        let r = search_tpu(v5e, p, DType::BF16, DType::BF16, 16 << 20, opts(3, false), &mut |_, _| {}).unwrap();
        assert!(r.evaluated > 0 && r.fitting > 0, "{r:?}");
    }

    #[test]
    fn the_candidate_budget_is_enforced_before_the_loop() {
        let v5e = oomdoc_hw::tpu_chip("v5e").unwrap();
        let p = Matmul { m: 1 << 19, n: 1 << 19, k: 1 << 19 };
        let mut calls = 0;
        let o = SearchOptions { top: 3, exhaustive: true, max_candidates: 1000 };
        let e = search_tpu(v5e, p, DType::BF16, DType::BF16, 16 << 20, o, &mut |_, _| calls += 1).unwrap_err();
        assert!(e.to_string().contains("--max-candidates") && e.to_string().contains("2147483648"), "{e}");
        assert_eq!(calls, 0);
        let small = Matmul { m: 1024, n: 1024, k: 1024 };
        let o = SearchOptions { top: 3, exhaustive: true, max_candidates: 128 * 8 * 8 };
        let r = search_tpu(v5e, small, DType::BF16, DType::BF16, 16 << 20, o, &mut |_, _| calls += 1).unwrap();
        assert_eq!((r.evaluated, r.max_candidates), (8192, 8192));
        assert!(calls >= 1);
        let sm90 = oomdoc_hw::gpu_arch("sm_90").unwrap();
        let o = SearchOptions { top: 3, exhaustive: false, max_candidates: 10 };
        assert!(search_triton(sm90, TritonVersion::V2_2Plus, TritonDType::Fp16, small, o).is_err());
    }

    #[test]
    fn a_limit_above_physical_vmem_is_capped_with_an_error_note() {
        let v5e = oomdoc_hw::tpu_chip("v5e").unwrap();
        let p = Matmul { m: 8192, n: 8192, k: 8192 };
        let r = search_tpu(v5e, p, DType::F32, DType::F32, u64::MAX, opts(3, false), &mut |_, _| {}).unwrap();
        assert_eq!(r.effective_limit_bytes, v5e.vmem_limit_ceiling());
        assert!(r.notes[0].starts_with("error:"));
        assert!(r.top.iter().all(|c| c.vmem_bytes + INTERNAL_SCRATCH_SLACK <= v5e.vmem_limit_ceiling()));
    }
}
