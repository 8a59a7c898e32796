//! What one Pallas TPU `pallas_call` needs in VMEM and SMEM, before any compile.
//!
//! Model (`shared/reference/kernel-memory.md` §2.1–2.3):
//! ```text
//! VMEM = Σ_{VMEM operands} buffers · padded(block) + Σ_{VMEM scratch} padded(shape)
//! buffers = 2 by default; 1 for a trivial window (block == array with a constant index,
//!           or no grid) or `buffers = 1`; 0 for `space = "any"` (the kernel copies by hand)
//! SMEM = Σ scalar-prefetch arrays + Σ SMEM operands (same buffer rule) + SMEM scratch
//! ```
//! Mosaic's internal scratch and register spills come on top and are unknown before compile.

use crate::error::PlanError;
use crate::tpu_layout::padded_bytes;
use oomdoc_hw::TpuChip;
use oomdoc_units::{format_bytes, DType};
use serde::{Deserialize, Serialize};

const MIB: u64 = 1 << 20;
/// Slack suggested on top of the computed bytes for Mosaic's internal scratch, which libtpu
/// does not publish (kernel-memory.md §2.1: budget 1–2 MiB until measured).
pub const INTERNAL_SCRATCH_SLACK: u64 = MIB;

// ----------------------------------------------------------------------------- spec ---

/// One block dimension as written: a size, or `"squeezed"` (Pallas `None` / `pl.Squeezed()`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum RawDim {
    Size(i64),
    Word(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOperand {
    name: Option<String>,
    shape: Vec<i64>,
    dtype: String,
    block: Option<Vec<RawDim>>,
    index: Option<String>,
    buffers: Option<i64>,
    space: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScratch {
    name: Option<String>,
    shape: Vec<i64>,
    dtype: Option<String>,
    space: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    chip: String,
    vmem_limit_bytes: Option<i64>,
    grid: Option<Vec<i64>>,
    #[serde(default)]
    inputs: Vec<RawOperand>,
    #[serde(default)]
    outputs: Vec<RawOperand>,
    #[serde(default)]
    scratch: Vec<RawScratch>,
    #[serde(default)]
    scalar_prefetch: Vec<RawScratch>,
}

/// Where an operand's block lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Space {
    Vmem,
    Smem,
    /// `pl.ANY` / HBM: no VMEM window, the kernel copies by hand.
    Any,
    /// DMA / regular semaphores (scratch only): no VMEM bytes.
    Semaphore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Input,
    Output,
    Scratch,
    ScalarPrefetch,
}

/// A validated operand, scratch buffer or scalar-prefetch array.
#[derive(Debug, Clone)]
pub struct Operand {
    pub name: String,
    pub kind: ItemKind,
    pub shape: Vec<u64>,
    pub dtype: DType,
    /// Block dims; `None` entries are squeezed (not seen by the kernel).
    pub block: Vec<Option<u64>>,
    pub constant_index: bool,
    pub buffers: Option<u64>,
    pub space: Space,
}

/// A validated `pallas_call` description.
#[derive(Debug, Clone)]
pub struct PallasSpec {
    pub chip: &'static TpuChip,
    pub vmem_limit_bytes: Option<u64>,
    pub grid: Option<Vec<u64>>,
    pub operands: Vec<Operand>,
}

/// Parse a spec: JSON if the text starts with `{`, TOML otherwise.
pub fn parse_spec(text: &str) -> Result<PallasSpec, PlanError> {
    let raw: RawSpec = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| PlanError::Syntax(e.to_string()))?
    } else {
        toml::from_str(text).map_err(|e| PlanError::Syntax(e.to_string().trim().replace('\n', " ")))?
    };
    validate(raw)
}

fn positive(field: &str, v: i64) -> Result<u64, PlanError> {
    if v <= 0 {
        return Err(PlanError::field(field, format!("must be a positive integer, got {v}")));
    }
    Ok(v as u64)
}

fn dims(field: &str, v: &[i64]) -> Result<Vec<u64>, PlanError> {
    if v.len() > 16 {
        return Err(PlanError::field(field, format!("has {} dimensions; at most 16 are supported", v.len())));
    }
    v.iter().enumerate().map(|(i, &d)| positive(&format!("{field}[{i}]"), d)).collect()
}

/// An element type a TPU kernel can hold. 64-bit (and wider) elements are refused: TPUs have
/// no 64-bit vector types and Pallas TPU rejects them (jax-ml/jax#23988: "int64 is not
/// supported on Pallas TPU"), so sizing such a buffer would be a plan for a kernel that
/// cannot compile.
pub fn dtype(field: &str, s: &str) -> Result<DType, PlanError> {
    match DType::from_name(s) {
        Some(DType::Token) | None => Err(PlanError::field(
            field,
            format!("unknown dtype `{}` (try float32, bfloat16, float16, int8, int32, float8_e4m3fn)", s.chars().take(40).collect::<String>()),
        )),
        Some(d) if d.bits() > 32 => Err(PlanError::field(
            field,
            format!("{}: TPU kernels have no 64-bit element types (Pallas TPU rejects them); use a 32-bit or narrower type", d.xla_name()),
        )),
        Some(d) => Ok(d),
    }
}

fn space(field: &str, s: Option<&str>, allow_semaphore: bool) -> Result<Space, PlanError> {
    Ok(match s.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        None | Some("vmem") => Space::Vmem,
        Some("smem") => Space::Smem,
        Some("any") | Some("hbm") => Space::Any,
        Some("semaphore") | Some("dma_semaphore") if allow_semaphore => Space::Semaphore,
        Some(other) => {
            let allowed = if allow_semaphore { "vmem, smem, semaphore" } else { "vmem, smem, any" };
            return Err(PlanError::field(field, format!("unknown space `{other}` (one of {allowed})")));
        }
    })
}

fn validate(raw: RawSpec) -> Result<PallasSpec, PlanError> {
    let chip = oomdoc_hw::tpu_chip(&raw.chip).ok_or_else(|| {
        let known: Vec<&str> = oomdoc_hw::table().tpu.iter().map(|c| c.name.as_str()).collect();
        PlanError::field("chip", format!("unknown TPU `{}` (known: {})", raw.chip.chars().take(40).collect::<String>(), known.join(", ")))
    })?;
    let vmem_limit_bytes = raw.vmem_limit_bytes.map(|v| positive("vmem_limit_bytes", v)).transpose()?;
    let grid = raw.grid.as_deref().map(|g| dims("grid", g)).transpose()?;
    if let Some(g) = &grid {
        if g.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).is_none() {
            return Err(PlanError::field("grid", "has more iterations than fit in 64 bits"));
        }
    }
    let mut operands = Vec::new();
    for (list, kind, raws) in [("inputs", ItemKind::Input, &raw.inputs), ("outputs", ItemKind::Output, &raw.outputs)] {
        for (i, r) in raws.iter().enumerate() {
            let at = format!("{list}[{i}]");
            let shape = dims(&format!("{at}.shape"), &r.shape)?;
            let dt = dtype(&format!("{at}.dtype"), &r.dtype)?;
            let block = match &r.block {
                None => shape.iter().map(|&d| Some(d)).collect(),
                Some(b) => {
                    if b.len() != shape.len() {
                        return Err(PlanError::field(
                            format!("{at}.block"),
                            format!("has {} dims but the shape has {}", b.len(), shape.len()),
                        ));
                    }
                    let mut out = Vec::with_capacity(b.len());
                    for (j, d) in b.iter().enumerate() {
                        let f = format!("{at}.block[{j}]");
                        out.push(match d {
                            RawDim::Size(v) => Some(positive(&f, *v)?),
                            RawDim::Word(w) if matches!(w.to_ascii_lowercase().as_str(), "squeezed" | "none") => None,
                            RawDim::Word(w) => {
                                return Err(PlanError::field(f, format!("`{w}` is neither a size nor \"squeezed\"")))
                            }
                        });
                    }
                    out
                }
            };
            let constant_index = match r.index.as_deref().map(str::to_ascii_lowercase).as_deref() {
                None | Some("varying") => false,
                Some("constant") => true,
                Some(other) => {
                    return Err(PlanError::field(format!("{at}.index"), format!("`{other}` is neither \"varying\" nor \"constant\"")))
                }
            };
            let buffers = match r.buffers {
                None => None,
                Some(n @ (1 | 2)) => Some(n as u64),
                Some(n) => {
                    return Err(PlanError::field(
                        format!("{at}.buffers"),
                        format!("{n}: a pallas_call accepts only pl.Buffered(1) or pl.Buffered(2) on TPU (deeper buffering needs emit_pipeline)"),
                    ))
                }
            };
            let sp = space(&format!("{at}.space"), r.space.as_deref(), false)?;
            let name = r.name.clone().unwrap_or_else(|| at.clone());
            operands.push(Operand { name, kind, shape, dtype: dt, block, constant_index, buffers, space: sp });
        }
    }
    for (list, kind, raws) in [("scratch", ItemKind::Scratch, &raw.scratch), ("scalar_prefetch", ItemKind::ScalarPrefetch, &raw.scalar_prefetch)] {
        for (i, r) in raws.iter().enumerate() {
            let at = format!("{list}[{i}]");
            let shape = dims(&format!("{at}.shape"), &r.shape)?;
            let sp = if kind == ItemKind::ScalarPrefetch {
                Space::Smem
            } else {
                space(&format!("{at}.space"), r.space.as_deref(), true)?
            };
            let dt = match (&r.dtype, sp) {
                (Some(d), _) => dtype(&format!("{at}.dtype"), d)?,
                (None, Space::Semaphore) => DType::S32,
                (None, _) if kind == ItemKind::ScalarPrefetch => DType::S32,
                (None, _) => return Err(PlanError::field(format!("{at}.dtype"), "is required")),
            };
            let name = r.name.clone().unwrap_or_else(|| at.clone());
            operands.push(Operand {
                name,
                kind,
                block: shape.iter().map(|&d| Some(d)).collect(),
                shape,
                dtype: dt,
                constant_index: true,
                buffers: Some(1),
                space: sp,
            });
        }
    }
    if operands.is_empty() {
        // "0 bytes, fits" would be a silent non-answer: every pallas_call has an output.
        return Err(PlanError::field("outputs", "the spec lists no operands; give at least the [[outputs]] of the pallas_call"));
    }
    Ok(PallasSpec { chip, vmem_limit_bytes, grid, operands })
}

// ----------------------------------------------------------------------------- legality ---

/// Pallas TPU block rules (`lowering.py::_check_block_mappings`, `details.rst`): rank ≥ 2:
/// the last two block dims divisible by 8 and 128, or equal to the array's; rank 1: equal to
/// the array, a multiple of 1024, or a power of two ≥ 128·(32/bits).
pub fn block_problems(op: &Operand, index: usize) -> Vec<String> {
    let list = match op.kind {
        ItemKind::Input => "inputs",
        ItemKind::Output => "outputs",
        _ => return Vec::new(),
    };
    if op.space == Space::Any {
        return Vec::new();
    }
    let mut problems = Vec::new();
    let at = |j: usize| format!("`{list}[{index}].block[{j}]` ({})", op.name);
    for (j, (b, s)) in op.block.iter().zip(&op.shape).enumerate() {
        if let Some(b) = b {
            if b > s {
                problems.push(format!("{} = {b} is larger than the array dim {s}", at(j)));
            }
        }
    }
    let kept: Vec<(usize, u64)> = op.block.iter().enumerate().filter_map(|(j, b)| b.map(|b| (j, b))).collect();
    match kept.as_slice() {
        [] => {}
        [(j, b)] => {
            let full = *b == op.shape[*j];
            let min_pow2 = 128 * (32 / op.dtype.bits().clamp(1, 32)) as u64;
            if !(full || b % 1024 == 0 || (b.is_power_of_two() && *b >= min_pow2)) {
                problems.push(format!(
                    "{} = {b}: a rank-1 block must equal the array dim {}, be a multiple of 1024, or a power of two ≥ {min_pow2}",
                    at(*j),
                    op.shape[*j]
                ));
            }
        }
        [.., (jr, r), (jc, c)] => {
            if r % 8 != 0 && *r != op.shape[*jr] {
                problems.push(format!(
                    "{} = {r} must be divisible by 8 or equal the array dim {} (second-minor dim)",
                    at(*jr),
                    op.shape[*jr]
                ));
            }
            if c % 128 != 0 && *c != op.shape[*jc] {
                problems.push(format!(
                    "{} = {c} must be divisible by 128 or equal the array dim {} (minor dim)",
                    at(*jc),
                    op.shape[*jc]
                ));
            }
        }
    }
    problems
}

// ----------------------------------------------------------------------------- plan ---

/// One line of the plan (JSON contract: name, kind, block, dtype, bytes_per_buffer, buffers, bytes).
#[derive(Debug, Clone, Serialize)]
pub struct PlanItem {
    pub name: String,
    pub kind: ItemKind,
    /// Block dims the kernel sees (squeezed dims dropped).
    pub block: Vec<u64>,
    pub dtype: String,
    pub space: Space,
    pub bytes_per_buffer: u64,
    pub buffers: u64,
    pub bytes: u64,
    /// Bytes without tile padding (for the "padding costs" note).
    pub unpadded_bytes_per_buffer: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SmemPlan {
    pub total_bytes: u64,
    pub limit_bytes: u64,
    pub fits: bool,
}

/// A what-if the planner computed (e.g. bf16 operands).
#[derive(Debug, Clone, Serialize)]
pub struct Alternative {
    pub change: String,
    pub total_bytes: u64,
    pub fits: bool,
}

/// Result of `oomdoc plan pallas` (JSON contract in docs/plan.md).
#[derive(Debug, Clone, Serialize)]
pub struct PallasPlan {
    pub target: String,
    pub total_bytes: u64,
    pub limit_bytes: u64,
    pub fits: bool,
    pub items: Vec<PlanItem>,
    pub notes: Vec<String>,
    /// `limit_bytes − total_bytes` (negative when it does not fit).
    pub headroom_bytes: i64,
    /// Where the limit came from: `vmem_limit_bytes` or `default scoped limit of v5e`.
    pub limit_source: String,
    pub physical_vmem_bytes: u64,
    /// A `vmem_limit_bytes` that covers the blocks plus 1 MiB for internal scratch, rounded
    /// up to a MiB, when that is a raise of the limit in effect; `None` when the limit in
    /// effect already covers them with that slack (never a lower limit), or when even the
    /// physical VMEM is too small.
    pub suggested_vmem_limit_bytes: Option<u64>,
    pub smem: SmemPlan,
    pub alternatives: Vec<Alternative>,
}

fn item_bytes(op: &Operand, generation: u32, grid: Option<&[u64]>) -> Result<PlanItem, PlanError> {
    let block: Vec<u64> = op.block.iter().flatten().copied().collect();
    let bits = op.dtype.bits();
    let trivial_window = op.block.iter().zip(&op.shape).all(|(b, s)| *b == Some(*s))
        && (op.constant_index || grid.is_none_or(|g| g.iter().all(|&d| d == 1)));
    let buffers = match (op.space, op.kind) {
        (Space::Any | Space::Semaphore, _) => 0,
        (_, ItemKind::Scratch | ItemKind::ScalarPrefetch) => 1,
        // Mosaic forces single buffering for a trivial window whatever the user asked.
        _ if trivial_window => 1,
        _ => op.buffers.unwrap_or(2),
    };
    let is_kernel_argument = op.kind != ItemKind::Scratch;
    let overflow = || PlanError::field(op.name.clone(), "block bytes do not fit in 64 bits");
    let unpadded = block
        .iter()
        .try_fold(1u128, |a, &d| a.checked_mul(d as u128))
        .and_then(|e| e.checked_mul(bits as u128))
        .map(|b| b.div_ceil(8))
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(overflow)?;
    let per_buffer = match op.space {
        Space::Vmem => padded_bytes(&block, bits, generation, is_kernel_argument).ok_or_else(overflow)?,
        // 2-D SMEM padding is unconfirmed (kernel-memory.md §2.2); count the array bytes.
        Space::Smem => unpadded,
        Space::Any | Space::Semaphore => 0,
    };
    let bytes = per_buffer.checked_mul(buffers).ok_or_else(overflow)?;
    Ok(PlanItem {
        name: op.name.clone(),
        kind: op.kind,
        block,
        dtype: op.dtype.xla_name().to_string(),
        space: op.space,
        bytes_per_buffer: per_buffer,
        buffers,
        bytes,
        unpadded_bytes_per_buffer: unpadded,
    })
}

fn sum(items: &[PlanItem], space: Space) -> Result<u64, PlanError> {
    items
        .iter()
        .filter(|i| i.space == space)
        .try_fold(0u64, |a, i| a.checked_add(i.bytes))
        .ok_or_else(|| PlanError::field("total", "bytes do not fit in 64 bits"))
}

/// VMEM bytes of a spec, without notes (used for what-ifs and the search).
pub fn vmem_total(spec: &PallasSpec) -> Result<u64, PlanError> {
    let gen = spec.chip.generation;
    let items: Vec<PlanItem> = spec.operands.iter().map(|o| item_bytes(o, gen, spec.grid.as_deref())).collect::<Result<_, _>>()?;
    sum(&items, Space::Vmem)
}

/// Compute the plan; illegal blocks are an error listing every problem.
pub fn plan(spec: &PallasSpec) -> Result<PallasPlan, PlanError> {
    let chip = spec.chip;
    let problems: Vec<String> = {
        let (mut ni, mut no) = (0, 0);
        let mut all = Vec::new();
        for op in &spec.operands {
            let idx = match op.kind {
                ItemKind::Input => {
                    ni += 1;
                    ni - 1
                }
                ItemKind::Output => {
                    no += 1;
                    no - 1
                }
                _ => 0,
            };
            all.extend(block_problems(op, idx));
        }
        all
    };
    if !problems.is_empty() {
        return Err(PlanError::IllegalBlocks(problems));
    }
    let (limit_bytes, limit_source) = match (spec.vmem_limit_bytes, chip.default_scoped_vmem_bytes()) {
        (Some(v), _) => (v, "vmem_limit_bytes".to_string()),
        (None, Some(d)) => (d, format!("default scoped limit of {}", chip.name)),
        (None, None) => {
            return Err(PlanError::field(
                "chip",
                format!("{} has no Pallas scoped-VMEM default (Pallas TPU targets v4 and later); set vmem_limit_bytes", chip.name),
            ))
        }
    };
    let items: Vec<PlanItem> =
        spec.operands.iter().map(|o| item_bytes(o, chip.generation, spec.grid.as_deref())).collect::<Result<_, _>>()?;
    let total = sum(&items, Space::Vmem)?;
    let smem_total = sum(&items, Space::Smem)?;
    let physical = chip.vmem_limit_ceiling();
    // A vmem_limit_bytes above the chip's physical VMEM per core makes no room that is not
    // there: the need is checked against the smaller of the two.
    let (limit_bytes, limit_source) = if limit_bytes > physical {
        (physical, format!("physical VMEM per core of {}; vmem_limit_bytes is above it", chip.name))
    } else {
        (limit_bytes, limit_source)
    };
    let fits = total <= limit_bytes;
    let with_slack = total.saturating_add(INTERNAL_SCRATCH_SLACK).div_ceil(MIB).saturating_mul(MIB);
    // Only ever a raise: a kernel that fits the limit in effect with the slack to spare
    // keeps it (a lower limit gains nothing and risks Mosaic's scratch).
    let suggested = (with_slack <= physical && (!fits || with_slack > limit_bytes)).then_some(with_slack);
    let headroom = (limit_bytes as i128 - total as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64;

    let mut notes = Vec::new();
    if fits {
        notes.push(format!(
            "fits: {} of {} ({}), {} headroom",
            format_bytes(total),
            format_bytes(limit_bytes),
            limit_source,
            format_bytes(limit_bytes - total)
        ));
        if limit_bytes - total < INTERNAL_SCRATCH_SLACK {
            notes.push(format!(
                "less than {} headroom: Mosaic's internal scratch may still push it over",
                format_bytes(INTERNAL_SCRATCH_SLACK)
            ));
        }
    } else {
        notes.push(format!(
            "does not fit: {} > {} ({}), over by {}; expect E1001 CompileTimeScopedVmemOom",
            format_bytes(total),
            format_bytes(limit_bytes),
            limit_source,
            format_bytes(total - limit_bytes)
        ));
    }
    match suggested {
        Some(s) => notes.push(format!(
            "vmem_limit_bytes={s} ({}) covers it with {} for internal scratch: compiler_params=pltpu.CompilerParams(vmem_limit_bytes={s}); {} has {} of VMEM per core",
            format_bytes(s),
            format_bytes(INTERNAL_SCRATCH_SLACK),
            chip.name,
            format_bytes(physical)
        )),
        None if fits => {}
        None => notes.push(format!(
            "no vmem_limit_bytes can help: {} needs more than the {} of physical VMEM per core of {}; use smaller blocks",
            format_bytes(total),
            format_bytes(physical),
            chip.name
        )),
    }
    if let Some(v) = spec.vmem_limit_bytes {
        if v > physical {
            notes.push(format!(
                "error: vmem_limit_bytes {} is above the physical VMEM of {} ({}); Mosaic cannot give a kernel more than that",
                format_bytes(v),
                chip.name,
                format_bytes(physical)
            ));
        }
    }
    notes.push("Mosaic's internal scratch and register spills come on top of this and are unknown before compile".to_string());
    for it in &items {
        if it.space == Space::Vmem && it.bytes_per_buffer >= 2 * it.unpadded_bytes_per_buffer.max(1) && it.bytes_per_buffer >= 4096 {
            notes.push(format!(
                "{}: tile padding makes a {:?} {} block cost {} instead of {} (lanes pad to 128, rows to the sublane tile)",
                it.name,
                it.block,
                it.dtype,
                format_bytes(it.bytes_per_buffer),
                format_bytes(it.unpadded_bytes_per_buffer)
            ));
        }
    }
    if chip.megacore {
        notes.push(format!("{} is megacore: the limit applies to each TensorCore's VMEM separately", chip.name));
    }
    if chip.default_scoped_vmem.as_ref().is_some_and(|d| d.unconfirmed) && spec.vmem_limit_bytes.is_none() {
        notes.push(format!("the default scoped limit of {} is UNCONFIRMED; set vmem_limit_bytes to be sure", chip.name));
    }
    let smem_limit = chip.smem_per_core.value;
    let smem = SmemPlan { total_bytes: smem_total, limit_bytes: smem_limit, fits: smem_total <= smem_limit };
    if smem_total > 0 {
        notes.push(format!(
            "SMEM: {} of {}{}",
            format_bytes(smem_total),
            format_bytes(smem_limit),
            if smem.fits { "" } else { " — does not fit: keep scalar-prefetch arrays small or move them to VMEM" }
        ));
    }

    let mut alternatives = Vec::new();
    // What-if: every 32-bit float operand as bf16 (the accumulator scratch stays f32).
    if spec.operands.iter().any(|o| o.dtype == DType::F32 && o.kind != ItemKind::Scratch && o.space == Space::Vmem) {
        let mut s = spec.clone();
        for o in &mut s.operands {
            if o.dtype == DType::F32 && o.kind != ItemKind::Scratch {
                o.dtype = DType::BF16;
            }
        }
        let t = vmem_total(&s)?;
        alternatives.push(Alternative { change: "bf16 inputs/outputs instead of f32".into(), total_bytes: t, fits: t <= limit_bytes });
    }
    // What-if: single-buffer every double-buffered input whose index could be constant.
    if items.iter().any(|i| i.buffers == 2 && i.kind == ItemKind::Input) && !fits {
        let mut s = spec.clone();
        for o in &mut s.operands {
            if o.kind == ItemKind::Input {
                o.buffers = Some(1);
            }
        }
        let t = vmem_total(&s)?;
        alternatives.push(Alternative {
            change: "pipeline_mode=pl.Buffered(1) on every input (loses the DMA/compute overlap)".into(),
            total_bytes: t,
            fits: t <= limit_bytes,
        });
    }
    Ok(PallasPlan {
        target: chip.name.clone(),
        total_bytes: total,
        limit_bytes,
        fits,
        items,
        notes,
        headroom_bytes: headroom,
        limit_source,
        physical_vmem_bytes: physical,
        suggested_vmem_limit_bytes: suggested,
        smem,
        alternatives,
    })
}

/// A spec to start from: the Keras guide's fused matmul on a v5e (`docs/plan.md`). The web
/// form starts from it, and the tests of every front end check their figures on it.
pub const EXAMPLE_SPEC: &str = include_str!("../data/example_pallas_spec.toml");

#[cfg(test)]
mod tests {
    use super::*;
    const KERAS: &str = EXAMPLE_SPEC;

    #[test]
    fn keras_fused_matmul_v5e_and_v6e() {
        let p = plan(&parse_spec(KERAS).unwrap()).unwrap();
        assert_eq!(p.total_bytes, 16_908_288);
        assert_eq!(p.limit_bytes, 16_777_216);
        assert!(!p.fits);
        assert_eq!(p.headroom_bytes, -131_072);
        assert_eq!(p.suggested_vmem_limit_bytes, Some(18 * MIB));
        let bf16 = &p.alternatives[0];
        assert_eq!(bf16.total_bytes, 2 * (2 * MIB + 2 * MIB + 32 * 1024));
        let p6 = plan(&parse_spec(&KERAS.replace("v5e", "trillium")).unwrap()).unwrap();
        assert!(p6.fits);
        assert_eq!(p6.limit_bytes, 32 * MIB);
        // 16.12 MiB fits the 32 MiB default: no lower limit is suggested.
        assert_eq!(p6.suggested_vmem_limit_bytes, None);
        assert!(!p6.notes.iter().any(|n| n.contains("covers it")), "{:?}", p6.notes);
        // Fitting with less than the slack to spare: the raise is still suggested.
        let tight = plan(&parse_spec(&format!("vmem_limit_bytes = {}\n{KERAS}", 16_908_288 + 4096)).unwrap()).unwrap();
        assert!(tight.fits);
        assert_eq!(tight.suggested_vmem_limit_bytes, Some(18 * MIB));
    }

    #[test]
    fn sixty_four_bit_elements_are_refused() {
        for t in ["float64", "int64", "uint64", "complex128"] {
            let e = parse_spec(&format!("chip = 'v5e'\n[[outputs]]\nshape = [8, 128]\ndtype = '{t}'\n")).unwrap_err();
            assert!(e.to_string().contains("64-bit"), "{t}: {e}");
        }
        assert!(parse_spec("chip = 'v5e'\n[[outputs]]\nshape = [8, 128]\ndtype = 'int32'\n").is_ok());
    }

    #[test]
    fn a_spec_without_operands_is_an_error_not_zero_bytes() {
        let e = parse_spec("chip = 'v5e'\ngrid = [2]\n").unwrap_err();
        assert!(e.to_string().contains("no operands"), "{e}");
    }

    /// A vmem_limit_bytes above physical VMEM does not make a kernel fit that needs more
    /// than the chip has: fits is false, and the limit above physical is an error note.
    #[test]
    fn a_limit_above_physical_vmem_does_not_make_room() {
        let v5e = oomdoc_hw::tpu_chip("v5e").unwrap();
        let physical = v5e.vmem_limit_ceiling();
        // One f32 block of about twice the physical VMEM.
        let side = ((physical / 2) as f64).sqrt() as u64 / 128 * 128 + 128;
        let spec = format!(
            "chip = \"v5e\"\nvmem_limit_bytes = {}\ngrid = [1]\n[[inputs]]\nname = \"a\"\nshape = [{side}, {side}]\ndtype = \"f32\"\nblock = [{side}, {side}]\n",
            physical * 64
        );
        let p = plan(&parse_spec(&spec).unwrap()).unwrap();
        assert!(p.total_bytes > physical, "{} vs {}", p.total_bytes, physical);
        assert!(!p.fits);
        assert_eq!(p.limit_bytes, physical);
        assert!(p.notes.iter().any(|n| n.starts_with("error: vmem_limit_bytes")), "{:?}", p.notes);
        // Within physical VMEM a raised limit still counts.
        let small = spec.replace(&format!("vmem_limit_bytes = {}", physical * 64), &format!("vmem_limit_bytes = {physical}"));
        let small = small.replace(&format!("[{side}, {side}]"), "[512, 512]");
        assert!(plan(&parse_spec(&small).unwrap()).unwrap().fits);
    }

    #[test]
    fn pallas_doc_matmul_with_scratch() {
        let spec = r#"{"chip":"TPU v5 lite","grid":[16,8,4],
          "inputs":[{"name":"x","shape":[8192,4096],"dtype":"bfloat16","block":[512,1024]},
                    {"name":"y","shape":[4096,8192],"dtype":"bfloat16","block":[1024,1024]}],
          "outputs":[{"name":"z","shape":[8192,8192],"dtype":"bfloat16","block":[512,1024]}],
          "scratch":[{"name":"acc","shape":[512,1024],"dtype":"float32"}]}"#;
        let p = plan(&parse_spec(spec).unwrap()).unwrap();
        assert_eq!(p.total_bytes, 10 * MIB);
        assert!(p.fits);
    }

    #[test]
    fn trivial_window_any_and_smem() {
        let spec = r#"
chip = "v5e"
grid = [4]
[[scalar_prefetch]]
name = "ids"
shape = [1024]
[[inputs]]
name = "w"
shape = [256, 256]
dtype = "f32"
index = "constant"
[[inputs]]
name = "h"
shape = [4096, 4096]
dtype = "f32"
space = "any"
[[outputs]]
name = "o"
shape = [1024, 256]
dtype = "f32"
block = [256, 256]
[[scratch]]
name = "sem"
shape = [2]
space = "semaphore"
"#;
        let p = plan(&parse_spec(spec).unwrap()).unwrap();
        let w = &p.items[0];
        assert_eq!((w.buffers, w.bytes), (1, 256 * 256 * 4));
        assert_eq!(p.items[1].bytes, 0);
        assert_eq!(p.total_bytes, 256 * 256 * 4 * 3);
        assert_eq!(p.smem.total_bytes, 4096);
    }

    #[test]
    fn legality_and_bad_input() {
        let bad = KERAS.replace("block = [128, 128]", "block = [100, 100]");
        match plan(&parse_spec(&bad).unwrap()) {
            Err(PlanError::IllegalBlocks(p)) => {
                assert_eq!(p.len(), 2, "{p:?}");
                assert!(p[0].contains("outputs[0].block[0]") && p[0].contains("divisible by 8"));
                assert!(p[1].contains("divisible by 128"));
            }
            other => panic!("{other:?}"),
        }
        let e = parse_spec(&KERAS.replace("v5e", "v9")).unwrap_err();
        assert!(e.to_string().contains("`chip`"), "{e}");
        let e = parse_spec(&KERAS.replacen("float32", "float31", 1)).unwrap_err();
        assert!(e.to_string().contains("inputs[0].dtype"), "{e}");
        let e = parse_spec(&KERAS.replace("block = [128, 8192]", "block = [0, 8192]")).unwrap_err();
        assert!(e.to_string().contains("inputs[0].block[0]"), "{e}");
        let e = parse_spec(&KERAS.replace("shape = [8192, 8192]\ndtype = \"float32\"\nblock = [8192, 128]", "shape = [8192, -1]\ndtype = \"float32\"\nblock = [8192, 128]")).unwrap_err();
        assert!(e.to_string().contains("inputs[1].shape[1]"), "{e}");
        let huge = KERAS.replace("shape = [8192, 8192]\ndtype = \"float32\"\nblock = [128, 8192]", "shape = [9223372036854775807, 9223372036854775807, 8192]\ndtype = \"float32\"\nblock = [9223372036854775807, 9223372036854775807, 8192]");
        assert!(plan(&parse_spec(&huge).unwrap()).is_err());
        let e = parse_spec(&format!("{KERAS}\n[[inputs]]\nname='q'\nshape=[8]\ndtype='f32'\nbuffers=3\n")).unwrap_err();
        assert!(e.to_string().contains("buffers"), "{e}");
        assert!(matches!(parse_spec("chip = "), Err(PlanError::Syntax(_))));
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_toml(s in "[a-z_\\[\\]=\" 0-9,\\n.-]{0,200}") {
            if let Ok(spec) = parse_spec(&s) { let _ = plan(&spec); }
        }
        #[test]
        fn never_panics_on_numbers(m in -5i64..i64::MAX, n in -5i64..i64::MAX, bm in -5i64..i64::MAX, bn in -5i64..i64::MAX, chip in 0usize..8) {
            let chips = ["v2", "v3", "v4", "v5e", "v5p", "v6e", "v7x", "x"];
            let s = format!("chip='{}'\ngrid=[2]\n[[inputs]]\nshape=[{m},{n}]\ndtype='bf16'\nblock=[{bm},{bn}]\n", chips[chip]);
            if let Ok(spec) = parse_spec(&s) { let _ = plan(&spec); }
        }
    }
}
