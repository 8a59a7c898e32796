//! `oomdoc plan`: on-chip memory of a Pallas TPU `pallas_call` or a Triton matmul,
//! predicted before compiling, against the chip's limit.

use crate::cli_error::CliError;
use clap::{Args, Subcommand, ValueEnum};
use oomdoc_plan::pallas::{self, ItemKind, Operand, PallasSpec, Space};
use oomdoc_plan::search::{self, Matmul};
use oomdoc_plan::triton::{self, TritonConfig, TritonDType, TritonVersion};
use oomdoc_plan::{render, PlanError};
use oomdoc_units::{format_bytes, DType};
use serde::Serialize;
use std::io::{IsTerminal, Write};
use std::time::Instant;

#[derive(Args)]
pub struct PlanArgs {
    #[command(subcommand)]
    kind: PlanKind,
    /// Output format: text for people, json for tools (documented in docs/plan.md).
    #[arg(long, value_enum, default_value_t = Format::Text, global = true)]
    format: Format,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Subcommand)]
enum PlanKind {
    /// VMEM/SMEM of one pallas_call described by a TOML or JSON spec file.
    Pallas(PallasArgs),
    /// Tiles for C[M,N] = A[M,K]·B[K,N] on a TPU (Pallas) or GPU (Triton): cost of one tile, or --search.
    Matmul(MatmulArgs),
    /// Shared memory of the Triton tutorial matmul for one config or an autotune list (--configs).
    Triton(TritonArgs),
}

#[derive(Args)]
struct PallasArgs {
    /// Spec file (TOML, or JSON when it starts with `{`); `-` reads stdin.
    spec: String,
    /// Override the spec's chip.
    #[arg(long)]
    chip: Option<String>,
    /// Override the spec's vmem_limit_bytes.
    #[arg(long)]
    vmem_limit_bytes: Option<u64>,
}

#[derive(Args)]
struct MatmulArgs {
    /// TPU (v5e, trillium, …) or GPU arch (sm_86, sm_90, …).
    #[arg(long)]
    target: String,
    #[arg(long)]
    m: u64,
    #[arg(long)]
    n: u64,
    #[arg(long)]
    k: u64,
    /// Input element type (float32, bfloat16, float16, float8_e5m2, …).
    #[arg(long, default_value = "bfloat16")]
    dtype: String,
    /// Output element type (TPU; default: the input type).
    #[arg(long)]
    out_dtype: Option<String>,
    /// Tile to cost; without tiles (or with --search) the best tiles are searched.
    #[arg(long)]
    block_m: Option<u64>,
    #[arg(long)]
    block_n: Option<u64>,
    #[arg(long)]
    block_k: Option<u64>,
    /// GPU only: pipeline stages and warps of the costed tile.
    #[arg(long, default_value_t = 3)]
    num_stages: u64,
    #[arg(long, default_value_t = 4)]
    num_warps: u64,
    /// TPU: scoped-VMEM limit to plan against (default: the chip's default scoped limit).
    #[arg(long)]
    vmem_limit_bytes: Option<u64>,
    /// Enumerate tiles that fit and rank them.
    #[arg(long)]
    search: bool,
    /// TPU search: every multiple of (8, 128, 128), not only divisors of M, N, K.
    #[arg(long)]
    exhaustive: bool,
    /// How many ranked tiles to print (1 to 10000).
    #[arg(long, default_value_t = 8)]
    top: usize,
    /// Most candidates a search may evaluate; a search with more is refused before it starts
    /// (default 20,000,000: about 2–3 s of a release build).
    #[arg(long, default_value_t = search::DEFAULT_MAX_CANDIDATES)]
    max_candidates: u64,
    /// Triton release whose pipelining rules apply (2.1 keeps num_stages copies everywhere).
    #[arg(long, default_value = "3.9")]
    triton_version: String,
}

#[derive(Args)]
struct TritonArgs {
    /// GPU arch: sm_70 … sm_120 (8.6 and 86 work too), or a GPU name (rtx4090, H100, A100).
    #[arg(long)]
    arch: String,
    #[arg(long, required_unless_present = "configs")]
    block_m: Option<u64>,
    #[arg(long, required_unless_present = "configs")]
    block_n: Option<u64>,
    #[arg(long, required_unless_present = "configs")]
    block_k: Option<u64>,
    #[arg(long, default_value_t = 3)]
    num_stages: u64,
    #[arg(long, default_value_t = 4)]
    num_warps: u64,
    /// A/B element type: fp16, bf16, fp32 (tf32 dot), fp8e4nv, fp8e5.
    #[arg(long, default_value = "fp16")]
    dtype: String,
    /// JSON list of autotune configs ([{"BLOCK_M":..,"BLOCK_N":..,"BLOCK_K":..,"num_stages":..,"num_warps":..}]);
    /// prints the ones that fit with their predicted bytes.
    #[arg(long)]
    configs: Option<String>,
    /// Triton release whose pipelining rules apply.
    #[arg(long, default_value = "3.9")]
    triton_version: String,
}

fn usage(e: PlanError) -> CliError {
    CliError::usage(e.to_string())
}

/// Read a spec or configs file (`-`: stdin). Past 16 MiB it is refused rather than cut: a
/// real spec is a few KiB, and a truncated one would parse as something else or fail
/// with a misleading syntax error.
fn read_input(path: &str) -> Result<String, CliError> {
    const MAX: u64 = 16 << 20;
    let mut bytes = Vec::new();
    let read = if path == "-" {
        std::io::Read::read_to_end(&mut std::io::Read::take(std::io::stdin(), MAX + 1), &mut bytes)
    } else {
        let f = std::fs::File::open(path).map_err(|e| CliError::usage(format!("cannot read {path}: {e}")))?;
        std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX + 1), &mut bytes)
    };
    read.map_err(|e| CliError::usage(format!("cannot read {path}: {e}")))?;
    if bytes.len() as u64 > MAX {
        return Err(CliError::usage(format!("{path}: larger than 16 MiB; a spec or configs file is a few KiB")));
    }
    String::from_utf8(bytes).map_err(|e| CliError::usage(format!("cannot read {path}: not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to())))
}

fn emit<T: Serialize>(format: Format, value: &T, text: impl FnOnce() -> String) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => {
            let s = serde_json::to_string_pretty(value).map_err(|e| CliError::usage(e.to_string()))?;
            writeln!(out, "{s}")?;
        }
        Format::Text => write!(out, "{}", text())?,
    }
    Ok(())
}

pub fn run(args: PlanArgs) -> Result<(), CliError> {
    match args.kind {
        PlanKind::Pallas(a) => run_pallas(a, args.format),
        PlanKind::Matmul(a) => run_matmul(a, args.format),
        PlanKind::Triton(a) => run_triton(a, args.format),
    }
}

fn run_pallas(a: PallasArgs, format: Format) -> Result<(), CliError> {
    let text = read_input(&a.spec)?;
    let mut spec = pallas::parse_spec(&text).map_err(usage)?;
    if let Some(c) = &a.chip {
        spec.chip = oomdoc_hw::tpu_chip(c).ok_or_else(|| CliError::usage(format!("`--chip`: unknown TPU `{c}`")))?;
    }
    if let Some(v) = a.vmem_limit_bytes {
        if v == 0 {
            return Err(CliError::usage("`--vmem-limit-bytes`: must be positive"));
        }
        spec.vmem_limit_bytes = Some(v);
    }
    let plan = pallas::plan(&spec).map_err(usage)?;
    emit(format, &plan, || render::pallas(&plan))
}

fn dtype_arg(field: &str, s: &str) -> Result<DType, CliError> {
    pallas::dtype(field, s).map_err(usage)
}

fn version_arg(s: &str) -> Result<TritonVersion, CliError> {
    TritonVersion::parse(s).ok_or_else(|| CliError::usage(format!("`--triton-version`: `{s}` is not a Triton release ≥ 2.1 (e.g. 2.1, 3.9)")))
}

fn positive(field: &str, v: u64) -> Result<u64, CliError> {
    if v == 0 {
        return Err(CliError::usage(format!("`{field}`: must be positive")));
    }
    Ok(v)
}

/// A Pallas spec for the blocked matmul of the JAX docs with one tile.
fn matmul_spec(chip: &'static oomdoc_hw::TpuChip, p: Matmul, din: DType, dout: DType, (bm, bn, bk): (u64, u64, u64), limit: Option<u64>) -> PallasSpec {
    let op = |name: &str, kind, shape: [u64; 2], block: [u64; 2], dtype| Operand {
        name: name.into(),
        kind,
        shape: shape.to_vec(),
        dtype,
        block: block.iter().map(|&b| Some(b)).collect(),
        constant_index: false,
        buffers: None,
        space: Space::Vmem,
    };
    let mut operands = vec![
        op("x", ItemKind::Input, [p.m, p.k], [bm, bk], din),
        op("y", ItemKind::Input, [p.k, p.n], [bk, bn], din),
        op("out", ItemKind::Output, [p.m, p.n], [bm, bn], dout),
    ];
    let grid = vec![p.m.div_ceil(bm), p.n.div_ceil(bn), p.k.div_ceil(bk)];
    if bk < p.k {
        let mut acc = op("acc", ItemKind::Scratch, [bm, bn], [bm, bn], DType::F32);
        acc.buffers = Some(1);
        operands.push(acc);
    }
    // Windows whose index never changes are single-buffered (see search::tpu_tile).
    operands[0].constant_index = grid[0] == 1 && grid[2] == 1;
    operands[1].constant_index = grid[2] == 1 && grid[1] == 1;
    operands[2].constant_index = grid[0] == 1 && grid[1] == 1;
    PallasSpec { chip, vmem_limit_bytes: limit, grid: Some(grid), operands }
}

#[derive(Serialize)]
struct TpuMatmulReport<'a> {
    plan: &'a pallas::PallasPlan,
    hbm_bytes: Option<u64>,
    better_tile: Option<search::TpuCandidate>,
}

/// A `\r` progress line on stderr for searches of a million candidates or more, only when
/// stderr is a terminal (never in pipes, logs or tests); cleared when the search ends.
fn progress_line() -> impl FnMut(u64, u64) {
    let tty = std::io::stderr().is_terminal();
    move |done: u64, total: u64| {
        if !tty || total < 1_000_000 {
            return;
        }
        let mut err = std::io::stderr().lock();
        if done >= total {
            let _ = write!(err, "\r{:60}\r", "");
        } else {
            let _ = write!(err, "\rsearching: {done}/{total} candidates ({:.0}%)", done as f64 * 100.0 / total as f64);
        }
        let _ = err.flush();
    }
}

fn run_matmul(a: MatmulArgs, format: Format) -> Result<(), CliError> {
    let p = Matmul { m: positive("--m", a.m)?, n: positive("--n", a.n)?, k: positive("--k", a.k)? };
    if a.top == 0 || a.top > 10_000 {
        return Err(CliError::usage(format!("`--top`: {}: must be between 1 and 10000", a.top)));
    }
    let opts = search::SearchOptions { top: a.top, exhaustive: a.exhaustive, max_candidates: positive("--max-candidates", a.max_candidates)? };
    let tile = match (a.block_m, a.block_n, a.block_k) {
        (Some(m), Some(n), Some(k)) => Some((positive("--block-m", m)?, positive("--block-n", n)?, positive("--block-k", k)?)),
        (None, None, None) => None,
        _ => return Err(CliError::usage("`--block-m/--block-n/--block-k`: give all three, or none to search")),
    };
    if let Some(chip) = oomdoc_hw::tpu_chip(&a.target) {
        let din = dtype_arg("--dtype", &a.dtype)?;
        let dout = match &a.out_dtype {
            Some(d) => dtype_arg("--out-dtype", d)?,
            None => din,
        };
        let limit = match (a.vmem_limit_bytes, chip.default_scoped_vmem_bytes()) {
            (Some(v), _) => positive("--vmem-limit-bytes", v)?,
            (None, Some(d)) => d,
            (None, None) => return Err(CliError::usage(format!("`--target`: {} has no Pallas scoped-VMEM default; pass --vmem-limit-bytes", chip.name))),
        };
        search::check_matmul(p, din.bits(), dout.bits()).map_err(usage)?;
        let t0 = Instant::now();
        let searched = search::search_tpu(chip, p, din, dout, limit, opts, &mut progress_line()).map_err(usage);
        let secs = t0.elapsed().as_secs_f64();
        if a.search || tile.is_none() {
            let found = searched?;
            return emit(format, &found, || {
                let mut s = render::tpu_search(&found, din.xla_name());
                for n in &found.notes {
                    s.push_str(&format!("  {n}\n"));
                }
                s.push_str(&format!("searched {} candidates in {:.1} ms ({:.1} M candidates/s)\n", found.evaluated, secs * 1e3, found.evaluated as f64 / secs.max(1e-9) / 1e6));
                s
            });
        }
        let t = tile.unwrap_or((8, 128, 128));
        let spec = matmul_spec(chip, p, din, dout, t, a.vmem_limit_bytes);
        let plan = pallas::plan(&spec).map_err(usage)?;
        let this = search::tpu_tile(chip, p, din.bits(), dout.bits(), t.0, t.1, t.2);
        // Costing one tile does not need the search: past the budget there is just no
        // `better_tile` suggestion.
        let better = searched.ok().and_then(|f| f.top.first().copied()).filter(|b| this.is_none_or(|x| b.hbm_bytes < x.hbm_bytes || !plan.fits));
        let report = TpuMatmulReport { plan: &plan, hbm_bytes: this.map(|x| x.hbm_bytes), better_tile: better };
        return emit(format, &report, || {
            let mut s = render::pallas(&plan);
            if let Some(x) = this {
                s.push_str(&format!("  HBM traffic of this tile: {}\n", format_bytes(x.hbm_bytes)));
            }
            if let (Some(b), Some(x)) = (better, this) {
                s.push_str(&format!(
                    "  better tile: ({},{},{}) needs {:.3} MiB of VMEM and moves {} of HBM ({:.1}× less){}\n",
                    b.block_m,
                    b.block_n,
                    b.block_k,
                    b.vmem_bytes as f64 / (1u64 << 20) as f64,
                    format_bytes(b.hbm_bytes),
                    x.hbm_bytes as f64 / b.hbm_bytes.max(1) as f64,
                    if b.block_k < p.k { " with an f32 accumulator over K" } else { "" }
                ));
            }
            s
        });
    }
    let Some(arch) = oomdoc_hw::gpu_arch(&a.target) else {
        return Err(CliError::usage(format!("`--target`: `{}` is neither a TPU (v4, v5e, v5p, v6e, v7x) nor a GPU arch (sm_80, sm_90, …)", a.target)));
    };
    let dtype = TritonDType::parse(&a.dtype).ok_or_else(|| CliError::usage(format!("`--dtype`: `{}` is not a Triton dot type (fp16, bf16, fp32, fp8e4nv, fp8e5)", a.dtype)))?;
    let version = version_arg(&a.triton_version)?;
    search::check_matmul(p, dtype.bytes() as u32 * 8, dtype.out_bytes() as u32 * 8).map_err(usage)?;
    match tile {
        Some((bm, bn, bk)) if !a.search => {
            let c = TritonConfig { block_m: bm, block_n: bn, block_k: bk, num_stages: a.num_stages, num_warps: a.num_warps };
            let plan = triton::predict(arch, version, dtype, c).map_err(usage)?;
            emit(format, &plan, || render::triton(&plan))
        }
        _ => {
            let t0 = Instant::now();
            let r = search::search_triton(arch, version, dtype, p, opts).map_err(usage)?;
            let secs = t0.elapsed().as_secs_f64();
            emit(format, &r, || {
                let mut s = render::triton_search(&r);
                s.push_str(&format!("searched {} candidates in {:.1} ms\n", r.evaluated, secs * 1e3));
                s
            })
        }
    }
}

fn run_triton(a: TritonArgs, format: Format) -> Result<(), CliError> {
    let arch = oomdoc_hw::gpu_arch(&a.arch).ok_or_else(|| {
        let known: Vec<&str> = oomdoc_hw::table().gpu.iter().map(|g| g.arch.as_str()).collect();
        CliError::usage(format!("`--arch`: unknown GPU arch `{}` (known: {})", a.arch, known.join(", ")))
    })?;
    let dtype = TritonDType::parse(&a.dtype).ok_or_else(|| CliError::usage(format!("`--dtype`: `{}` is not a Triton dot type (fp16, bf16, fp32, fp8e4nv, fp8e5)", a.dtype)))?;
    let version = version_arg(&a.triton_version)?;
    if let Some(path) = &a.configs {
        let configs = triton::parse_configs(&read_input(path)?).map_err(usage)?;
        let verdicts = triton::judge_configs(arch, version, dtype, &configs);
        let report = triton::ConfigsReport::new(arch, &verdicts);
        return emit(format, &report, || render::verdicts(&arch.arch, arch.shared_optin_per_block.value, &verdicts));
    }
    let (Some(bm), Some(bn), Some(bk)) = (a.block_m, a.block_n, a.block_k) else {
        return Err(CliError::usage("`--block-m/--block-n/--block-k` are required without --configs"));
    };
    let c = TritonConfig { block_m: bm, block_n: bn, block_k: bk, num_stages: a.num_stages, num_warps: a.num_warps };
    let plan = triton::predict(arch, version, dtype, c).map_err(usage)?;
    emit(format, &plan, || {
        let mut s = render::triton(&plan);
        if !plan.fits {
            if let Some((ns, bytes)) = triton::max_fitting_stages(arch, version, dtype, c) {
                s.push_str(&format!("  fits with num_stages={ns} ({bytes} bytes)\n"));
            } else {
                s.push_str("  no num_stages fits: reduce BLOCK_M/BLOCK_N/BLOCK_K\n");
            }
        }
        s
    })
}
