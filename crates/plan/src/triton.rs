//! Shared memory (`metadata.shared`) of the Triton tutorial matmul, by Triton version and
//! target, compared with the GPU's per-block opt-in limit.
//!
//! Kernel: A (M×K, row-major) · B (K×N, row-major), fp32 accumulate, C stored in the input
//! type (fp16 for fp8 inputs), as in `shared/fixtures/triton-oracle/tri_oracle.py`.
//!
//! ```text
//! A = BM·BK·s, B = BK·BN·s
//! pipeline = nbuf·(A+B)
//!   Triton 2.1:                       nbuf = num_stages on every target
//!   ≥ 2.2, mma-v2 (sm_80/86/87/89/120, and sm_90 with BM < 64): nbuf = max(1, ns−1)
//!          (fp8 with ns = 1: only the larger of A and B is in shared memory at once)
//!   ≥ 2.2, sm_90 wgmma (BM ≥ 64):    nbuf = ns; fp8 B is N-major → ns·A + B
//!   ≥ 2.2, sm_100 tcgen05:            ns·(A+B) + 8·min(ns, 2) bytes of mbarriers
//! shared = max(pipeline, epilogue)    (the epilogue's layout-conversion scratch reuses the
//!                                      pipeline's bytes: the allocator packs by liveness)
//! ```
//! The epilogue scratch (accumulator → store layout) comes from Triton's swizzling search;
//! oomdoc takes it from a table measured with the real Triton 3.9.0 compiler
//! (`data/triton3.9_epilogue.csv`, made by `oracle/epilogue_grid.py`) and otherwise bounds it
//! by the full C tile BM·BN·sizeof(C). A result is `exact` only when no bound was used.

use crate::error::PlanError;
use oomdoc_hw::{GpuArch, Vendor};
use oomdoc_units::{format_bytes, DType};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::OnceLock;

/// Element types the model covers (what `tl.dot` takes in the tutorial kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TritonDType {
    Fp16,
    Bf16,
    /// fp32 inputs with `input_precision="tf32"`.
    Fp32,
    /// `float8_e4m3fn` (Triton `fp8e4nv`): sm_89 and later.
    Fp8e4nv,
    /// `float8_e5m2` (Triton `fp8e5`).
    Fp8e5,
}

impl TritonDType {
    pub fn parse(s: &str) -> Option<TritonDType> {
        Some(match DType::from_name(s)? {
            DType::F16 => TritonDType::Fp16,
            DType::BF16 => TritonDType::Bf16,
            DType::F32 => TritonDType::Fp32,
            DType::F8E4M3FN => TritonDType::Fp8e4nv,
            DType::F8E5M2 => TritonDType::Fp8e5,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            TritonDType::Fp16 => "fp16",
            TritonDType::Bf16 => "bf16",
            TritonDType::Fp32 => "fp32",
            TritonDType::Fp8e4nv => "fp8e4nv",
            TritonDType::Fp8e5 => "fp8e5",
        }
    }
    pub fn bytes(self) -> u64 {
        match self {
            TritonDType::Fp32 => 4,
            TritonDType::Fp16 | TritonDType::Bf16 => 2,
            TritonDType::Fp8e4nv | TritonDType::Fp8e5 => 1,
        }
    }
    /// Bytes of one C element (the tutorial stores fp8 results as fp16).
    pub fn out_bytes(self) -> u64 {
        match self {
            TritonDType::Fp32 => 4,
            _ => 2,
        }
    }
    fn is_fp8(self) -> bool {
        matches!(self, TritonDType::Fp8e4nv | TritonDType::Fp8e5)
    }
}

/// Triton releases with different pipelining rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum TritonVersion {
    /// 2.1: `num_stages` copies of A and B on every target.
    V2_1,
    /// 2.2 up to 3.x: `num_stages − 1` copies on mma-v2 targets, `num_stages` on wgmma.
    V2_2Plus,
}

impl TritonVersion {
    /// `2.1`, `2.1.0`, `3.9.0`, `3`, … (anything ≥ 2.2 behaves like 3.9 for buffer counts).
    pub fn parse(s: &str) -> Option<TritonVersion> {
        let mut parts = s.trim().trim_start_matches('v').split('.');
        let major: u32 = parts.next()?.parse().ok()?;
        let minor: u32 = parts.next().map(|m| m.parse().ok()).unwrap_or(Some(0))?;
        match (major, minor) {
            (0 | 1, _) => None,
            (2, 0 | 1) => Some(TritonVersion::V2_1),
            _ => Some(TritonVersion::V2_2Plus),
        }
    }
}

/// MMA lowering of the dot (decides the buffer count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MmaKind {
    MmaV2,
    Wgmma,
    Tcgen05,
    /// Before Ampere: no cp.async, so loads are not pipelined through shared memory.
    PreAmpere,
}

/// One kernel configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub struct TritonConfig {
    #[serde(rename = "BLOCK_M", alias = "block_m", alias = "BLOCK_SIZE_M")]
    pub block_m: u64,
    #[serde(rename = "BLOCK_N", alias = "block_n", alias = "BLOCK_SIZE_N")]
    pub block_n: u64,
    #[serde(rename = "BLOCK_K", alias = "block_k", alias = "BLOCK_SIZE_K")]
    pub block_k: u64,
    #[serde(default = "default_stages")]
    pub num_stages: u64,
    #[serde(default = "default_warps")]
    pub num_warps: u64,
}
fn default_stages() -> u64 {
    3 // triton.Config default
}
fn default_warps() -> u64 {
    4 // triton.Config default
}

/// Where each byte goes (JSON `breakdown`).
#[derive(Debug, Clone, Serialize)]
pub struct Breakdown {
    pub mma: MmaKind,
    pub a_tile_bytes: u64,
    pub b_tile_bytes: u64,
    pub a_buffers: u64,
    pub b_buffers: u64,
    pub pipeline_bytes: u64,
    pub barrier_bytes: u64,
    /// Epilogue conversion scratch when known exactly (measured table).
    pub epilogue_bytes: Option<u64>,
    /// Upper bound used when the exact epilogue is not known.
    pub epilogue_bound_bytes: u64,
    /// The rule applied, in words.
    pub rule: String,
}

/// Result of `oomdoc plan triton` (JSON contract in docs/plan.md).
#[derive(Debug, Clone, Serialize)]
pub struct TritonPlan {
    pub arch: String,
    /// Exact `metadata.shared` when `exact`, else the upper bound.
    pub shared_bytes: u64,
    /// Lower bound (equal to `shared_bytes` when exact).
    pub shared_bytes_min: u64,
    pub exact: bool,
    pub limit_bytes: u64,
    pub fits: bool,
    pub config: TritonConfig,
    pub dtype: TritonDType,
    pub breakdown: Breakdown,
    pub notes: Vec<String>,
}

// ------------------------------------------------------------------- epilogue table ---

const EPILOGUE_CSV: &str = include_str!("../data/triton3.9_epilogue.csv");

#[derive(Debug, Clone, Copy)]
enum Epilogue {
    Exact(u64),
    /// Hidden under the probe's operand tiles: at most this many bytes.
    AtMost(u64),
}

type EpilogueKey = (u32, TritonDType, u64, u64, u64);

fn epilogue_table() -> &'static HashMap<EpilogueKey, Epilogue> {
    static T: OnceLock<HashMap<EpilogueKey, Epilogue>> = OnceLock::new();
    T.get_or_init(|| {
        let mut m = HashMap::new();
        for line in EPILOGUE_CSV.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() < 7 {
                continue;
            }
            let (Some(cap), Some(dt)) = (f[0].trim_start_matches("sm_").parse::<u32>().ok(), TritonDType::parse(f[1])) else {
                continue;
            };
            let nums: Vec<Option<u64>> = f[2..7].iter().map(|x| x.parse().ok()).collect();
            let (Some(bm), Some(bn), Some(nw), Some(shared), Some(operands)) = (nums[0], nums[1], nums[2], nums[3], nums[4]) else {
                continue;
            };
            let e = if shared > operands { Epilogue::Exact(shared) } else { Epilogue::AtMost(shared) };
            m.insert((cap, dt, bm, bn, nw), e);
        }
        m
    })
}

/// The measured target whose epilogue an arch shares: sm_90 for Hopper, sm_80 for the
/// Ampere/Ada mma-v2 targets (checked on sm_86 and sm_89 in
/// tests/data/cross_arch_triton3.9.0.csv). sm_120 lowers the same kernel with less epilogue
/// scratch than sm_80 (same file), so it gets the bound, not the sm_80 table.
fn measured_cap(sm: u32) -> Option<u32> {
    match sm {
        90 => Some(90),
        80 | 86 | 87 | 89 => Some(80),
        _ => None,
    }
}

// ------------------------------------------------------------------------- model ---

fn check_config(c: &TritonConfig) -> Result<(), PlanError> {
    for (name, v) in [("BLOCK_M", c.block_m), ("BLOCK_N", c.block_n), ("BLOCK_K", c.block_k)] {
        if v == 0 || v > 4096 {
            return Err(PlanError::field(name, format!("{v}: must be between 1 and 4096")));
        }
        if !v.is_power_of_two() {
            return Err(PlanError::field(name, format!("{v}: Triton block sizes must be powers of two (tl.arange)")));
        }
    }
    if c.block_m < 16 || c.block_n < 16 || c.block_k < 16 {
        // tl.dot needs M, N ≥ 16 and K ≥ 16 (K ≥ 32 for fp8; checked below).
        let (n, v) = [("BLOCK_M", c.block_m), ("BLOCK_N", c.block_n), ("BLOCK_K", c.block_k)]
            .into_iter()
            .find(|(_, v)| *v < 16)
            .unwrap_or(("BLOCK_K", c.block_k));
        return Err(PlanError::field(n, format!("{v}: tl.dot needs M, N and K of at least 16")));
    }
    if c.num_stages == 0 || c.num_stages > 16 {
        return Err(PlanError::field("num_stages", format!("{}: must be between 1 and 16", c.num_stages)));
    }
    if !c.num_warps.is_power_of_two() || c.num_warps > 32 {
        return Err(PlanError::field("num_warps", format!("{}: must be a power of two from 1 to 32", c.num_warps)));
    }
    Ok(())
}

/// Predict the shared memory of the tutorial matmul for one config on one GPU.
pub fn predict(arch: &GpuArch, version: TritonVersion, dtype: TritonDType, c: TritonConfig) -> Result<TritonPlan, PlanError> {
    check_config(&c)?;
    if dtype.is_fp8() && c.block_k < 32 {
        return Err(PlanError::field("BLOCK_K", format!("{}: tl.dot on fp8 needs K ≥ 32", c.block_k)));
    }
    let Some(sm) = arch.sm_number() else {
        return Err(amd_not_modelled(arch));
    };
    if dtype == TritonDType::Fp8e4nv && sm < 89 {
        return Err(PlanError::field(
            "dtype",
            format!("Triton rejects fp8e4nv on {} (\"type fp8e4nv not supported in this architecture\"); use fp8e5", arch.arch),
        ));
    }
    let s = dtype.bytes();
    let a = c.block_m * c.block_k * s;
    let b = c.block_k * c.block_n * s;
    let ns = c.num_stages;
    let mma = match sm {
        0..=79 => MmaKind::PreAmpere,
        90 if c.block_m >= 64 && c.num_warps % 4 == 0 => MmaKind::Wgmma,
        100 | 103 => MmaKind::Tcgen05,
        _ => MmaKind::MmaV2,
    };
    let mut notes = Vec::new();
    let mut exact = true;
    let (a_buf, b_buf, barrier, rule) = match (version, mma) {
        (TritonVersion::V2_1, _) => (ns, ns, 0, "Triton 2.1: num_stages copies of A and B".to_string()),
        (_, MmaKind::PreAmpere) => {
            exact = false;
            notes.push(format!("{}: no cp.async before sm_80, so the loads are not pipelined; estimate from one copy of A and B (not measured)", arch.arch));
            (1, 1, 0, "pre-Ampere: one copy of A and B (estimate)".to_string())
        }
        (_, MmaKind::MmaV2) if ns <= 1 && dtype.is_fp8() => {
            // Measured: fp8 operands are upcast in registers; A and B are never live together.
            let (ab, bb) = if a >= b { (1, 0) } else { (0, 1) };
            (ab, bb, 0, "mma-v2, fp8, num_stages = 1: only the larger operand tile is in shared memory at a time".to_string())
        }
        (_, MmaKind::MmaV2) => {
            let n = ns.saturating_sub(1).max(1);
            (n, n, 0, "mma-v2: max(1, num_stages − 1) copies of A and B".to_string())
        }
        (_, MmaKind::Wgmma) if dtype.is_fp8() => {
            (ns, 1, 0, "sm_90 wgmma, fp8: num_stages copies of A; B is N-major so it is transposed through registers (1 copy)".to_string())
        }
        (_, MmaKind::Wgmma) => (ns, ns, 0, "sm_90 wgmma: num_stages copies of A and B".to_string()),
        (_, MmaKind::Tcgen05) => {
            notes.push("sm_100 rule measured on fp16 128×128×64 only (kernel-memory.md §3.2)".to_string());
            exact = false;
            (ns, ns, 8 * ns.min(2), "sm_100 tcgen05: num_stages copies of A and B + 8 bytes of mbarrier per stage (at most 2)".to_string())
        }
    };
    let overflow = || PlanError::field("config", "byte counts overflow 64 bits");
    let pipeline = a
        .checked_mul(a_buf)
        .and_then(|x| b.checked_mul(b_buf).and_then(|y| x.checked_add(y)))
        .and_then(|x| x.checked_add(barrier))
        .ok_or_else(overflow)?;
    let full_tile = c.block_m * c.block_n * dtype.out_bytes();
    let measured = if version == TritonVersion::V2_2Plus { measured_cap(sm) } else { None };
    let epi = measured.and_then(|cap| epilogue_table().get(&(cap, dtype, c.block_m, c.block_n, c.num_warps)).copied());
    let (epilogue_bytes, bound) = match epi {
        Some(Epilogue::Exact(v)) => (Some(v), v),
        Some(Epilogue::AtMost(x)) if x <= pipeline => (None, x.min(full_tile)),
        Some(Epilogue::AtMost(x)) => (None, x.min(full_tile)),
        None => (None, full_tile),
    };
    let shared_max = pipeline.max(bound);
    let shared_min = match epilogue_bytes {
        Some(v) => pipeline.max(v),
        None => pipeline,
    };
    if shared_min != shared_max {
        exact = false;
        notes.push(format!(
            "the epilogue layout-conversion scratch is not in the measured table for this config; it is at most {} (full C tile), so shared memory is between {} and {}",
            format_bytes(bound),
            shared_min,
            shared_max
        ));
    }
    if version == TritonVersion::V2_1 {
        notes.push("Triton 2.1 buffer count measured on fp16 128×128×64 (buffers_by_triton_version.csv); epilogue from 3.9 measurements".to_string());
    }
    if measured.is_some() && sm != 80 && sm != 90 {
        notes.push(format!("{} uses the same mma-v2 lowering as sm_80; the epilogue term is taken from sm_80 measurements", arch.arch));
    }
    let limit = arch.shared_optin_per_block.value;
    let fits = shared_max <= limit;
    if !fits && shared_min <= limit {
        notes.push(format!("may or may not fit: the lower bound {shared_min} is within the limit {limit}"));
    }
    if arch.shared_optin_per_block.unconfirmed {
        notes.push(format!("the {} limit {} is UNCONFIRMED ({})", arch.arch, limit, arch.shared_optin_per_block.source));
    }
    Ok(TritonPlan {
        arch: arch.arch.clone(),
        shared_bytes: shared_max,
        shared_bytes_min: shared_min,
        exact,
        limit_bytes: limit,
        fits,
        config: c,
        dtype,
        breakdown: Breakdown {
            mma,
            a_tile_bytes: a,
            b_tile_bytes: b,
            a_buffers: a_buf,
            b_buffers: b_buf,
            pipeline_bytes: pipeline,
            barrier_bytes: barrier,
            epilogue_bytes,
            epilogue_bound_bytes: bound,
            rule,
        },
        notes,
    })
}

/// Largest `num_stages` (≥ 1) with which a config fits, if any, and its bytes.
pub fn max_fitting_stages(arch: &GpuArch, version: TritonVersion, dtype: TritonDType, c: TritonConfig) -> Option<(u64, u64)> {
    (1..=8u64)
        .rev()
        .filter_map(|ns| predict(arch, version, dtype, TritonConfig { num_stages: ns, ..c }).ok())
        .find(|p| p.fits)
        .map(|p| (p.config.num_stages, p.shared_bytes))
}

// ------------------------------------------------------------------------ --configs ---

/// The `--configs` report (JSON contract of `oomdoc plan triton --configs` and
/// `POST /api/v1/plan`): the configs that fit and those dropped, in input order.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigsReport {
    pub arch: String,
    pub limit_bytes: u64,
    pub fitting: Vec<ConfigVerdict>,
    pub dropped: Vec<ConfigVerdict>,
}

impl ConfigsReport {
    pub fn new(arch: &oomdoc_hw::GpuArch, verdicts: &[ConfigVerdict]) -> ConfigsReport {
        let (fitting, dropped) = verdicts.iter().cloned().partition(|v| v.fits);
        ConfigsReport { arch: arch.arch.clone(), limit_bytes: arch.shared_optin_per_block.value, fitting, dropped }
    }
}

/// One entry of `--configs`: the config and its verdict.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigVerdict {
    pub config: TritonConfig,
    pub shared_bytes: Option<u64>,
    pub exact: bool,
    pub fits: bool,
    /// Why it cannot run (compile error or over the limit).
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawConfig {
    /// `{"kwargs": {"BLOCK_M": ..}, "num_stages": .., "num_warps": ..}` (triton.Config shape).
    Nested { kwargs: serde_json::Map<String, serde_json::Value>, num_stages: Option<u64>, num_warps: Option<u64> },
    Flat(serde_json::Map<String, serde_json::Value>),
}

/// Parse a JSON list of autotune configs.
pub fn parse_configs(text: &str) -> Result<Vec<TritonConfig>, PlanError> {
    let raws: Vec<RawConfig> = serde_json::from_str(text).map_err(|e| PlanError::Syntax(format!("--configs: {e}")))?;
    if raws.is_empty() {
        return Err(PlanError::field("--configs", "the list is empty; give at least one config"));
    }
    raws.into_iter()
        .enumerate()
        .map(|(i, r)| {
            let mut map = match r {
                RawConfig::Nested { mut kwargs, num_stages, num_warps } => {
                    if let Some(s) = num_stages {
                        kwargs.insert("num_stages".into(), s.into());
                    }
                    if let Some(w) = num_warps {
                        kwargs.insert("num_warps".into(), w.into());
                    }
                    kwargs
                }
                RawConfig::Flat(m) => m,
            };
            // Keep only the keys the model reads: other kwargs (GROUP_M, SPLIT_K, …) are fine.
            let known = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "block_m", "block_n", "block_k", "BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "num_stages", "num_warps"];
            map.retain(|k, _| known.contains(&k.as_str()));
            serde_json::from_value::<TritonConfig>(serde_json::Value::Object(map))
                .map_err(|e| PlanError::field(format!("configs[{i}]"), e.to_string()))
        })
        .collect()
}

/// Judge every config; the fitting ones keep their input order.
pub fn judge_configs(arch: &GpuArch, version: TritonVersion, dtype: TritonDType, configs: &[TritonConfig]) -> Vec<ConfigVerdict> {
    configs
        .iter()
        .map(|&c| match predict(arch, version, dtype, c) {
            Ok(p) => ConfigVerdict {
                config: c,
                shared_bytes: Some(p.shared_bytes),
                exact: p.exact,
                fits: p.fits,
                reason: (!p.fits).then(|| format!("needs {} bytes of shared memory > {} on {}", p.shared_bytes, p.limit_bytes, arch.arch)),
            },
            Err(e) => ConfigVerdict { config: c, shared_bytes: None, exact: false, fits: false, reason: Some(e.to_string()) },
        })
        .collect()
}

// ------------------------------------------------------------------------ fit hint ---

/// What follows from only "Required: N, Hardware limit: M" (Triton's OutOfResources).
#[derive(Debug, Clone, Serialize)]
pub struct TritonFitHint {
    pub required_bytes: u64,
    pub limit_bytes: u64,
    pub over_by_bytes: u64,
    /// required / limit.
    pub ratio: f64,
    /// GPUs whose per-block limit is `limit_bytes` (`sm_86`, `gfx942`, …).
    pub archs: Vec<String>,
    /// `sm_86/sm_89/sm_120 (RTX 30xx/A10/A40, …)`; empty when no GPU in the table has it.
    pub family: String,
    /// Readings that hold *if* the kernel is a pipelined matmul whose shared memory is
    /// `copies` equal stages: how many copies fit. Conditional by construction.
    pub stage_readings: Vec<StageReading>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageReading {
    pub copies: u64,
    pub bytes_per_copy: u64,
    pub copies_that_fit: u64,
    /// num_stages to use for that many copies: copies on sm_90/sm_100 (wgmma/tcgen05),
    /// copies + 1 on mma-v2 targets (sm_80/86/89/120).
    pub sentence: String,
}

impl TritonFitHint {
    /// Stages to drop when one pipeline stage is known to cost `bytes_per_stage`.
    pub fn stages_to_drop(&self, bytes_per_stage: u64) -> Option<u64> {
        (bytes_per_stage > 0).then(|| self.over_by_bytes.div_ceil(bytes_per_stage))
    }
}

/// The arithmetic that follows from Triton's two numbers, and nothing more.
pub fn triton_fit_hint(required: u64, limit: u64) -> TritonFitHint {
    let archs = oomdoc_hw::gpu_archs_with_shared_limit(limit);
    let family = oomdoc_hw::family_label(&archs);
    let over = required.saturating_sub(limit);
    let mut stage_readings = Vec::new();
    // Pipelined tiles come in KiB multiples; a reading needs a whole number of KiB per copy
    // and at least one copy that still fits.
    for copies in 2..=8u64 {
        if over == 0 || required % copies != 0 {
            continue;
        }
        let per = required / copies;
        if per % 1024 != 0 {
            continue;
        }
        let fit = limit / per;
        if fit == 0 || fit >= copies {
            continue;
        }
        let nvidia = archs.iter().any(|a| a.vendor == Vendor::Nvidia);
        let sentence = format!(
            "if the {required} bytes are {copies} pipeline copies of {per} bytes, {fit} cop{} fit ({} bytes): num_stages={fit} on sm_90/sm_100{}",
            if fit == 1 { "y" } else { "ies" },
            fit * per,
            if nvidia || archs.is_empty() { format!(", num_stages={} on mma-v2 GPUs (sm_80/86/89/120)", fit + 1) } else { String::new() }
        );
        stage_readings.push(StageReading { copies, bytes_per_copy: per, copies_that_fit: fit, sentence });
        if stage_readings.len() == 2 {
            break;
        }
    }
    TritonFitHint {
        required_bytes: required,
        limit_bytes: limit,
        over_by_bytes: over,
        ratio: if limit == 0 { f64::INFINITY } else { required as f64 / limit as f64 },
        archs: archs.iter().map(|a| a.arch.clone()).collect(),
        family,
        stage_readings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arch(s: &str) -> &'static GpuArch {
        oomdoc_hw::gpu_arch(s).unwrap()
    }
    fn cfg(bm: u64, bn: u64, bk: u64, ns: u64, nw: u64) -> TritonConfig {
        TritonConfig { block_m: bm, block_n: bn, block_k: bk, num_stages: ns, num_warps: nw }
    }

    #[test]
    fn reference_table_configs() {
        let v = TritonVersion::V2_2Plus;
        let p = |a: &str, d, c| predict(arch(a), v, d, c).unwrap().shared_bytes;
        assert_eq!(p("sm_80", TritonDType::Fp16, cfg(128, 128, 64, 3, 4)), 65536);
        assert_eq!(p("sm_90", TritonDType::Fp16, cfg(128, 128, 64, 3, 4)), 98304);
        assert_eq!(p("sm_90", TritonDType::Fp8e5, cfg(128, 256, 128, 3, 8)), 81920);
        assert_eq!(p("sm_86", TritonDType::Fp16, cfg(128, 128, 64, 3, 4)), 65536);
        let old = predict(arch("sm_80"), TritonVersion::V2_1, TritonDType::Fp16, cfg(128, 128, 64, 3, 4)).unwrap();
        assert_eq!(old.shared_bytes, 98304);
        let b = predict(arch("sm_100"), v, TritonDType::Fp16, cfg(128, 128, 64, 3, 4)).unwrap();
        assert_eq!(b.shared_bytes, 98320);
    }

    #[test]
    fn bad_configs_are_errors() {
        let a = arch("sm_80");
        for c in [cfg(0, 128, 64, 3, 4), cfg(100, 128, 64, 3, 4), cfg(128, 128, 8, 3, 4), cfg(128, 128, 64, 0, 4), cfg(128, 128, 64, 3, 3), cfg(1 << 40, 128, 64, 3, 4)] {
            assert!(predict(a, TritonVersion::V2_2Plus, TritonDType::Fp16, c).is_err(), "{c:?}");
        }
        assert!(predict(a, TritonVersion::V2_2Plus, TritonDType::Fp8e4nv, cfg(128, 128, 64, 3, 4)).is_err());
        assert!(predict(arch("gfx942"), TritonVersion::V2_2Plus, TritonDType::Fp16, cfg(128, 128, 64, 3, 4)).is_err());
    }

    #[test]
    fn configs_file() {
        let text = r#"[{"BLOCK_M":128,"BLOCK_N":256,"BLOCK_K":64,"num_stages":4,"num_warps":8},
                       {"kwargs":{"BLOCK_M":64,"BLOCK_N":64,"BLOCK_K":32,"GROUP_M":8},"num_stages":2,"num_warps":4},
                       {"BLOCK_M":128,"BLOCK_N":128,"BLOCK_K":64}]"#;
        let cs = parse_configs(text).unwrap();
        assert_eq!(cs.len(), 3);
        assert_eq!(cs[2].num_stages, 3);
        let v = judge_configs(arch("sm_86"), TritonVersion::V2_2Plus, TritonDType::Fp16, &cs);
        assert!(!v[0].fits && v[1].fits && v[2].fits);
        assert!(parse_configs(r#"[{"BLOCK_M":-1}]"#).is_err());
        assert!(parse_configs("{").is_err());
        assert!(parse_configs("[]").unwrap_err().to_string().contains("empty"));
    }

    #[test]
    fn fit_hint_is_conditional_arithmetic() {
        let h = triton_fit_hint(98304, 65536);
        assert_eq!(h.over_by_bytes, 32768);
        assert!(h.archs.contains(&"sm_75".to_string()) && h.archs.contains(&"gfx942".to_string()));
        assert_eq!(h.stage_readings[0].copies, 2);
        assert_eq!(h.stage_readings[0].copies_that_fit, 1);
        assert_eq!(h.stages_to_drop(32768), Some(1));
        let h = triton_fit_hint(131072, 101376);
        assert!(h.family.starts_with("sm_86/sm_89/sm_120"));
        assert_eq!(h.stage_readings[0].copies, 2);
        let none = triton_fit_hint(65538, 65536);
        assert!(none.stage_readings.is_empty());
    }
}

/// AMD GPUs have an LDS limit in the table, but Triton's AMD pipelining rules (how many
/// buffers each stage keeps) are not modelled: no prediction and no search for them.
pub(crate) fn amd_not_modelled(arch: &GpuArch) -> PlanError {
    PlanError::field(
        "arch",
        format!("{} is an AMD GPU: its LDS limit is {} but the Triton AMD pipelining rules are not modelled", arch.arch, arch.shared_optin_per_block.value),
    )
}
