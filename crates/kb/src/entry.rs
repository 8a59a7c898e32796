//! Schema of one knowledge-base entry (`kb/<platform>/<name>.toml`).
//! The prose version of this schema, with the vocabulary of conditions and
//! placeholders, is `kb/README.md`; keep the two in step.

use serde::{Deserialize, Serialize};

/// Text in every language oomdoc ships.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Text {
    pub en: String,
    pub zh: String,
}

/// Output language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    #[default]
    En,
    Zh,
}

impl Lang {
    pub fn parse(s: &str) -> Option<Lang> {
        match s.to_ascii_lowercase().as_str() {
            "en" | "english" => Some(Lang::En),
            "zh" | "zh-cn" | "zh_cn" | "cn" | "chinese" => Some(Lang::Zh),
            _ => None,
        }
    }
}

impl Text {
    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.en,
            Lang::Zh if self.zh.is_empty() => &self.en,
            Lang::Zh => &self.zh,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Oom,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    Tpu,
    Cuda,
    Rocm,
    Mps,
    /// Apple Metal outside PyTorch's MPS backend (llama.cpp/ggml Metal, MLX).
    Metal,
    /// Intel GPUs (PyTorch XPU, oneAPI Level Zero, IPEX).
    Xpu,
    /// NPUs: Huawei Ascend (torch_npu, CANN), other NPU runtimes.
    Npu,
    Cpu,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Compile,
    Load,
    Runtime,
}

impl Phase {
    /// The phase as a reader's word.
    pub fn name(self, lang: Lang) -> &'static str {
        match (self, lang) {
            (Phase::Compile, Lang::En) => "compile",
            (Phase::Load, Lang::En) => "load",
            (Phase::Runtime, Lang::En) => "runtime",
            (Phase::Compile, Lang::Zh) => "编译",
            (Phase::Load, Lang::Zh) => "加载",
            (Phase::Runtime, Lang::Zh) => "运行",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The failure stops the job (or the step).
    #[default]
    Error,
    /// Logged, but the job may go on (BFC "not a failure", cuDNN autotuner scratch, remat warning).
    Warning,
}

/// Memory spaces of the JSON contract.
pub const MEMORY_SPACES: &[&str] = &[
    "hbm", "vmem", "smem", "cmem", "sflag", "sc-tilespmem", "sc-spmem", "sc-smem", "sc-hbm", "sc-sync-flags", "device",
    "shared", "registers", "tensor-memory", "host", "l1",
];

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// Short key used by `refs = [...]` elsewhere in the entry.
    pub key: String,
    pub title: String,
    /// A URL (doc page, public issue) or a source path `owner/repo:path` (at a commit if known).
    pub url: String,
    /// `unverified` when nobody has opened the source to check that it supports the claim
    /// (shown as such); omitted when it was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// A cause, fix or dead end applies when every condition in `when` holds
/// (`"!name"` negates). An empty `when` always applies.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Cause {
    pub id: String,
    #[serde(default)]
    pub when: Vec<String>,
    pub text: Text,
    #[serde(default)]
    pub refs: Vec<String>,
}

/// What kind of change a fix makes (or a dead end rejects): the JSON contract's `category`.
/// Ids may be added, never renamed. The resolution corpus records which category fixed each
/// real failure, so advice and outcomes are compared by these ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FixCategory {
    /// Make the job need less: batch, sequence, resolution, precision, checkpointing,
    /// accumulation, a smaller model, fewer models resident.
    SmallerWorkingSet,
    /// Free memory held by something else: other processes, another library or framework
    /// preallocating in the process, leaks, notebook state.
    ReleaseOtherMemory,
    /// Change how the allocator hands out memory: expandable segments, split size, GC threshold,
    /// XLA preallocation/fraction, TF allow_growth, arena settings, another allocator backend.
    AllocatorSetting,
    /// Raise a configured cap that is below what the hardware has: VMEM limit, memory fraction,
    /// gpu_memory_utilization, container/cgroup/job memory, JVM heap, swap or page file, ulimit, shm size.
    RaiseLimit,
    /// A serving or runtime engine's budget: max model length, sequences, KV cache, total tokens,
    /// context size, GPU layers, workspace, workers.
    EngineSetting,
    /// Spread the job over more devices or memories: more devices, tensor/pipeline/sequence
    /// parallel, FSDP/ZeRO, sharding, CPU/NVMe/host offload.
    DistributeOrOffload,
    /// A kernel's configuration: block sizes, stages, warps, autotune configs, tiling, layout padding.
    KernelConfig,
    /// Another release: one with the bug fixed, or one from before the regression.
    UpgradeOrDowngrade,
    /// A device (or machine) with more memory.
    BiggerDevice,
    /// A bug in the program or its data.
    FixCodeOrData,
    /// The failure is not a lack of memory (or nothing needs fixing).
    NotAMemoryProblem,
    /// Find out more first: profile, dump, snapshot.
    Investigate,
}

impl FixCategory {
    /// Every category, in the contract's order.
    pub const ALL: &'static [FixCategory] = &[
        FixCategory::SmallerWorkingSet,
        FixCategory::ReleaseOtherMemory,
        FixCategory::AllocatorSetting,
        FixCategory::RaiseLimit,
        FixCategory::EngineSetting,
        FixCategory::DistributeOrOffload,
        FixCategory::KernelConfig,
        FixCategory::UpgradeOrDowngrade,
        FixCategory::BiggerDevice,
        FixCategory::FixCodeOrData,
        FixCategory::NotAMemoryProblem,
        FixCategory::Investigate,
    ];

    /// The contract id, e.g. `allocator-setting`.
    pub fn as_str(self) -> &'static str {
        match self {
            FixCategory::SmallerWorkingSet => "smaller-working-set",
            FixCategory::ReleaseOtherMemory => "release-other-memory",
            FixCategory::AllocatorSetting => "allocator-setting",
            FixCategory::RaiseLimit => "raise-limit",
            FixCategory::EngineSetting => "engine-setting",
            FixCategory::DistributeOrOffload => "distribute-or-offload",
            FixCategory::KernelConfig => "kernel-config",
            FixCategory::UpgradeOrDowngrade => "upgrade-or-downgrade",
            FixCategory::BiggerDevice => "bigger-device",
            FixCategory::FixCodeOrData => "fix-code-or-data",
            FixCategory::NotAMemoryProblem => "not-a-memory-problem",
            FixCategory::Investigate => "investigate",
        }
    }

    /// The contract id read back; `None` for an unknown id.
    pub fn parse(id: &str) -> Option<FixCategory> {
        FixCategory::ALL.iter().copied().find(|c| c.as_str() == id)
    }

    /// What the category means, in one line.
    pub fn description(self) -> &'static str {
        match self {
            FixCategory::SmallerWorkingSet => {
                "make the job need less: batch, sequence, resolution, precision, checkpointing, accumulation, smaller model, fewer models resident"
            }
            FixCategory::ReleaseOtherMemory => {
                "free memory held elsewhere: other processes, another library or framework preallocating in the process, leaks, notebook state"
            }
            FixCategory::AllocatorSetting => {
                "change the allocator: expandable segments, split size, GC threshold, XLA preallocation/fraction, TF allow_growth, arena settings, another allocator backend"
            }
            FixCategory::RaiseLimit => {
                "raise a configured cap below what the hardware has: VMEM limit, memory fraction, gpu_memory_utilization, container/cgroup/job memory, JVM heap, swap or page file, ulimit, shm size"
            }
            FixCategory::EngineSetting => {
                "a serving or runtime engine's budget: max model length, sequences, KV cache, total tokens, context size, GPU layers, workspace, workers"
            }
            FixCategory::DistributeOrOffload => {
                "more devices, tensor/pipeline/sequence parallel, FSDP/ZeRO, sharding, CPU/NVMe/host offload"
            }
            FixCategory::KernelConfig => "block sizes, stages, warps, autotune configs, tiling, layout padding",
            FixCategory::UpgradeOrDowngrade => "a release with the bug fixed, or one from before the regression",
            FixCategory::BiggerDevice => "a device or machine with more memory",
            FixCategory::FixCodeOrData => "a bug in the program or its data",
            FixCategory::NotAMemoryProblem => "the failure is not a lack of memory, or nothing needs fixing",
            FixCategory::Investigate => "find out more first: profile, dump, snapshot",
        }
    }
}

impl std::fmt::Display for FixCategory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Fix {
    pub id: String,
    /// What kind of change the fix makes (required).
    pub category: FixCategory,
    #[serde(default)]
    pub when: Vec<String>,
    /// One line: what to do. May contain `{placeholders}`.
    pub title: Text,
    /// Why and how, a few sentences. May contain `{placeholders}`.
    #[serde(default)]
    pub detail: Option<Text>,
    /// Exact code, flag or command to use. May contain `{placeholders}`; when one of
    /// them has no value for a finding, `code_fallback` is shown instead (or no code).
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub code_fallback: Option<String>,
    /// `python`, `shell`, `toml`, `text`.
    #[serde(default)]
    pub code_lang: Option<String>,
    /// The code is a fragment to paste into the user's own program (an argument, a call on
    /// the user's objects), not a snippet that runs as written. Python code that is not a
    /// fragment must import every module it uses; all Python code must compile
    /// (`cargo test -p oomdoc-kb --test code_blocks`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub code_fragment: bool,
    /// Versions the code applies to, e.g. `PyTorch >= 2.1`.
    #[serde(default)]
    pub versions: Option<String>,
    /// Machine-readable version requirements (`torch>=2.1`, `jax>=0.4.31,<0.7.2`): the fix
    /// is not shown when the log's printed or message-dated version rules one out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// `versions` in Chinese; without it Chinese output shows only the version constraints
    /// found in `versions` ([`crate::versions::constraints`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions_zh: Option<String>,
    #[serde(default)]
    pub refs: Vec<String>,
    /// Keys of the entry's `[[behaviours]]` this fix relies on (a default, what the library
    /// already does before it raises, what a setting changes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relies_on: Vec<String>,
    /// `unverified` when nobody has checked in source the behaviour this fix relies on
    /// (shown as such); omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeadEnd {
    pub id: String,
    /// The category of the action the dead end rejects (required): `torch.cuda.empty_cache()`
    /// as a dead end is `release-other-memory`.
    pub category: FixCategory,
    #[serde(default)]
    pub when: Vec<String>,
    pub action: Text,
    pub why: Text,
    /// As for fixes: not shown when the log's version rules one out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    #[serde(default)]
    pub refs: Vec<String>,
    /// Keys of the entry's `[[behaviours]]` that show why this does not help.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relies_on: Vec<String>,
    /// `unverified` when the reason has not been checked in source; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// A behaviour a fix or dead end relies on, as read in the project's source: "the allocator
/// releases its cached blocks and retries once before it raises", "the default is 1 since
/// v0.10.0". Maintainers' record: the claim is English and is not shown as advice; renderers
/// show its source, and mark fixes that rely on an unverified one.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Behaviour {
    /// Short key used by `relies_on = [...]` in fixes and dead ends.
    pub key: String,
    /// The project whose source says so; one of `kb/projects.toml` (`vllm`, `pytorch`, ...).
    pub project: String,
    /// What the code does, in one sentence, with the versions in which it holds.
    pub claim: String,
    /// Where: `owner/repo:path@<tag or commit>` (or a vendor's page for closed source).
    pub source: String,
    /// Line(s) of `source` that show it, e.g. `2219-2221`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<String>,
    /// `verified` (read in source at that tag/commit) or `unverified` (shown as such).
    #[serde(default = "default_status")]
    pub status: String,
}

/// A setting or API named by a fix or dead end, and the proof that it exists.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Identifier {
    /// Exactly as written in the fix (`PYTORCH_CUDA_ALLOC_CONF`, `--gpu-memory-utilization`,
    /// `torch.cuda.set_per_process_memory_fraction`, `vmem_limit_bytes`).
    pub name: String,
    /// `env` | `flag` | `python` | `cli` | `config` | `param`.
    pub kind: String,
    /// Where it is defined: `owner/repo:path@<tag or commit>` (or a doc URL for closed source).
    pub defined_in: String,
    /// Versions in which it exists, e.g. `PyTorch >= 1.10`.
    pub versions: String,
    /// `verified` (read in source at that tag/commit) or `unverified` (shown as such).
    #[serde(default = "default_status")]
    pub status: String,
}

fn default_status() -> String {
    "verified".to_string()
}

/// A real message this entry must match; the test suite runs every example through
/// the diagnose engine and checks `expect`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// Where the text comes from (public issue, doc page).
    pub source: String,
    pub text: String,
    #[serde(default)]
    pub expect: ExampleExpect,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExampleExpect {
    /// Defaults to the entry's own id.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub memory_space: Option<String>,
    /// Sizes in bytes, keys as in the JSON contract (`requested`, `used`, `limit`, …).
    #[serde(default)]
    pub sizes: std::collections::BTreeMap<String, u64>,
    /// Free-form culprit fields to check (`op`, `shape`, `kernel`, …) as substrings.
    #[serde(default)]
    pub culprit: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Stable id, `<family>.<name>`, e.g. `tpu.scoped-vmem`.
    pub id: String,
    /// Vendor code (`E1001`) when the failure family has one.
    #[serde(default)]
    pub code: Option<String>,
    /// Vendor code name (`CompileTimeScopedVmemOom`).
    #[serde(default)]
    pub code_name: Option<String>,
    pub kind: Kind,
    pub platform: Platform,
    /// Other platforms the same message appears on (e.g. ROCm for a CUDA allocator message).
    #[serde(default)]
    pub also_platforms: Vec<Platform>,
    pub phase: Phase,
    #[serde(default)]
    pub memory_space: Option<String>,
    #[serde(default)]
    pub severity: Severity,
    /// Which software versions print this message, as text.
    #[serde(default)]
    pub versions: Option<String>,
    /// `versions` in Chinese (see [`Fix::versions_zh`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions_zh: Option<String>,
    /// The newest release of each project that this entry's behaviour records were checked
    /// against (`vllm = "0.33.0"`); `scripts/kb_stale.py` lists entries behind the registries.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub checked_against: std::collections::BTreeMap<String, String>,
    pub title: Text,
    /// What the message means, in a few sentences.
    pub summary: Text,
    #[serde(default)]
    pub causes: Vec<Cause>,
    #[serde(default)]
    pub fixes: Vec<Fix>,
    #[serde(default)]
    pub dead_ends: Vec<DeadEnd>,
    pub references: Vec<Reference>,
    #[serde(default)]
    pub examples: Vec<Example>,
    /// Every flag, environment variable, API or parameter a fix or dead end names,
    /// with where it is defined and the versions in which it exists.
    #[serde(default)]
    pub identifiers: Vec<Identifier>,
    /// The behaviours the fixes and dead ends rely on, each with its source.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub behaviours: Vec<Behaviour>,
    /// Set by the loader: the file it came from, relative to `kb/`.
    #[serde(skip_deserializing, default)]
    pub file: String,
}

/// Conditions the diagnose engine evaluates for a finding. An entry may use only these.
pub const CONDITIONS: &[(&str, &str)] = &[
    ("has_sizes", "the message states at least one size"),
    ("no_sizes", "the message states no size at all"),
    ("pallas_kernel", "the culprit is a Pallas/Mosaic kernel (tpu_custom_call, pallas_call) or a Triton kernel launched by XLA"),
    ("custom_call", "the culprit is any custom-call"),
    ("padding_heavy", "a listed allocation expands >= 2x through tile padding, or HLO temp utilization is below 50%"),
    ("dominant_allocation", "one listed allocation is >= 50% of the limit"),
    ("many_allocations", "allocations are listed and none is >= 50% of the limit"),
    ("training", "op names or the traceback show a backward pass (jvp, transpose, backward, grad)"),
    ("f32_allocations", "a listed large allocation is f32"),
    ("early_abort", "the compiler aborted early without a per-buffer report"),
    ("sparsecore_dominant", "SparseCore HBM usage exceeds TensorCore HBM usage"),
    ("tensorcore_dominant", "TensorCore HBM usage exceeds SparseCore HBM usage"),
    ("fragmentation", "enough memory is free or cached in total, but not in one piece (per-family test)"),
    ("free_plus_cached_covers", "PyTorch: driver-free memory plus reserved-but-unallocated memory is >= the request (expandable segments can combine them)"),
    ("expandable_segments_set", "the log shows PYTORCH_*_ALLOC_CONF with expandable_segments:True already set"),
    ("request_exceeds_capacity", "one request is larger than the device's total capacity / the memory space"),
    ("other_processes", "memory held by other processes or outside this allocator is >= the request (or >= 10% of capacity)"),
    ("xla_platform_allocator", "the log shows XLA_PYTHON_CLIENT_ALLOCATOR=platform (JAX without a preallocated pool)"),
    ("memory_fraction_cap", "a per-process memory fraction cap ('allowed') limited the allocator"),
    ("private_pools", "memory is held in private pools (CUDA/HIP graphs)"),
    ("legacy_message", "message format of an old release (PyTorch <= 2.0, THC, TF1, XRT)"),
    ("mps_other_dominant", "MPS 'other allocations' exceed 'MPS allocated'"),
    ("framework_unknown", "the log names no framework or engine (no traceback, import, path or logger prefix of one)"),
    ("framework_jax", "the log comes from JAX"),
    ("framework_pytorch", "the log comes from PyTorch"),
    ("framework_tensorflow", "the log comes from TensorFlow/Keras"),
    ("framework_torch_xla", "the log comes from PyTorch/XLA"),
    ("framework_vllm", "the log comes from vLLM"),
    ("inductor", "the kernel was generated by TorchInductor"),
    ("static_shared_limit", "ptxas reports the 48 KiB (0xc000) static shared-memory limit"),
    ("warning_only", "the message is a non-fatal warning"),
    ("shm_reason_unknown", "PyTorch could not open a shared-memory object and printed no reason (a full /dev/shm or the open-file limit)"),
    ("nccl_segment", "NCCL could not create or attach to its shared-memory segment in /dev/shm"),
    ("sc_space_hbm", "SparseCore allocation in memory space 203 (HBM)"),
    ("sc_space_onchip", "SparseCore allocation in an on-chip space (0, 201, 202, 204)"),
    ("space_hbm", "the failing memory space is HBM / device memory"),
    ("space_vmem", "the failing memory space is VMEM"),
    ("program_load", "the failure happened loading a program (E0101)"),
    ("rocm", "the device is AMD (HIP/ROCm)"),
    ("tpu", "the device is a TPU (the message or the log around it names one)"),
    ("limit_is_default", "the reported limit equals a known default (16 MiB / 32 MiB scoped VMEM)"),
    ("block_size_limit", "one allocation exceeds a per-allocation maximum of the platform (Metal maxBufferLength, IPEX's 4 GB block), however much memory is free"),
    ("request_fits_after_fix", "the computed fix (e.g. vmem_limit_bytes) stays within the chip's physical capacity"),
    ("arena_limit", "ONNX Runtime's arena reported the memory left under its own limit (\"Available memory of X\")"),
    ("device_buffer_limit", "ggml's Vulkan backend refused one buffer larger than the device's largest single allocation"),
    ("host_arena", "the failing ONNX Runtime arena is the CPU (host) arena"),
    ("graph_allocator", "ggml's allocator over a buffer the program sized (ggml-alloc.c: a measured compute buffer), not a ggml_init context"),
    ("tactic_skipped", "TensorRT skipped a tactic for lack of memory and went on building (not fatal by itself)"),
    // The case around the failure (crates/diagnose/src/facts/case.rs), read from the whole block of log text.
    ("windows_commit_limit", "host memory on Windows: allocations fail at the commit limit (RAM plus page file), which the page file's size sets"),
    ("total_tokens_failed", "TGI: the router's check names max_total_tokens alone (the total-token budget, not the prefill batch, is too large)"),
    ("exceeds_every_gpu", "GPU shared memory: the kernel needs more per block than any GPU in the hardware table offers (no GPU swap helps)"),
    ("xla_generated_op", "TPU: the culprit is an op XLA generated itself (its name is an HLO opcode: fusion, convolution, dot, ...), not a custom call"),
    ("fragmentation_possible", "PyTorch: reserved-but-unallocated memory covers the request but is not material (under a tenth of the device, and not both twice the request and a twentieth of the device) after the allocator's own free-and-retry: a shortage first, fragmentation second"),
    ("held_outside_allocator", "PyTorch: device memory in use beyond what PyTorch's allocator holds is >= the request and >= a fifth of the device, and the message has no per-process lines to say whose it is"),
    ("implausible_free", "the message reports more free memory than the device's total capacity: the driver's memory query is wrong (a runtime and kernel driver that do not match), so its figures say nothing about a shortage"),
    ("implausible_request", "one request is 1 PiB or more (or the message says more than 1 EB): larger than any device or host, so the size itself is wrong (corrupt data, an overflowed or uninitialised shape)"),
    ("worker_processes", "the log shows data-loading worker processes (a DataLoader worker killed or exited, num_workers): fewer workers is a change this job can make"),
    ("evaluation_phase", "the log shows the failure in an evaluation or validation step (evaluate, validation, model.eval()), where autograd graphs kept by a loop without no_grad are a program bug"),
    ("checkpoint_load", "PyTorch: the traceback runs through torch/serialization.py: the failure happens while torch.load restores a checkpoint's tensors onto the device they were saved from"),
    ("variable_initialization", "TensorFlow graph mode: the failing node is under a variable's Initializer name scope (<variable>/Initializer/...): variables are being initialized and no input batch is on the device yet"),
    ("free_covers_request", "PyTorch: the driver's free memory in the message (read after the allocator's own free-and-retry) is at least twice the request and a twentieth of the device (and no more than the device): the device was not full when the message was written, so the numbers cannot say which limit refused the allocation"),
    ("dataloader_worker_killed", "PyTorch: the log says a DataLoader worker process was killed or exited unexpectedly (torch.utils.data's 'DataLoader worker (pid N) is killed by signal' / 'exited unexpectedly'): the process that died is a worker"),
    ("cublas_cuda_check_wording", "cuBLAS: the status is worded `CUDA error: CUBLAS_STATUS_…` (PyTorch's and ggml's CUDA checks), not TensorFlow's `failed to create cublas handle`"),
    ("stream_executor_cublas_init", "cuBLAS: StreamExecutor's `failed to create cublas handle: …` (TensorFlow, XLA), logged when its own framework had already taken the GPU"),
    ("engine_budgets", "the log shows a serving engine that sizes its memory by its own budgets (vLLM, SGLang): max model length, concurrent sequences, memory fraction"),
    ("elsewhere_beyond_context", "PyTorch on CUDA: with held_outside_allocator, what is held outside the allocator minus a CUDA-context-and-display allowance (1.5 GiB when the log allows eager module loading, PyTorch < 1.13 or CUDA < 11.7; 1 GiB otherwise) is still >= the request and >= a tenth of the device: more than this process's context and a desktop explain"),
    ("need_exceeds_physical_vmem", "TPU VMEM: the stated need is above physical VMEM minus 1 MiB (the most the scoped-limit flag allows) on every chip consistent with the log's limit, so no limit setting can fit it"),
    ("pool_full", "TF/XLA BFC: the allocator statistics show Limit minus InUse below the request: the pool is full, not fragmented"),
    ("small_device", "PyTorch: the device's total capacity is 4 GiB or less (the CUDA context and a display take a large share)"),
    ("inference", "the job serves or runs inference (serving engine, generate(), a diffusion UI), not training"),
    ("serving", "the job is a serving engine (vLLM server, TGI, SGLang, llama.cpp server, Ollama)"),
    ("data_job", "a host-memory failure in a data library (pandas, polars, dask, pyarrow, datasets) with no accelerator framework in the log"),
    ("os_linux", "the log shows Linux (paths, kernel OOM-killer lines, dmesg)"),
    ("os_macos", "the log shows macOS (/Users/ paths, `Killed: 9`, MPS/Metal)"),
    ("os_windows", "the log shows Windows (drive-letter paths, WinError, .exe/.dll)"),
    ("memory_limit_cgroup", "host memory: the limit hit is a cgroup/container limit (memcg, OOMKilled)"),
    ("memory_limit_rlimit", "host memory: the limit hit is a process rlimit (ulimit)"),
    ("memory_limit_physical", "host memory: the kernel ran out of physical memory for the whole machine (CONSTRAINT_NONE)"),
    ("jax_api_ok", "JAX APIs fit the job: the log shows JAX, or no other framework"),
    ("pytorch_api_ok", "PyTorch APIs fit the job: the log shows PyTorch (or an engine on it), or no other framework"),
    ("tensorflow_api_ok", "TensorFlow APIs fit the job: the log shows TensorFlow, or no other framework"),
    ("directml", "the job runs on DirectML (torch-directml, tensorflow-directml)"),
    ("alloc_conf_set", "the log shows PYTORCH_*_ALLOC_CONF set by the user (not PyTorch's own hint)"),
    ("framework_unknown", "the log shows no framework or engine (no traceback path, import, printed version or engine line names one)"),
    ("framework_onnxruntime", "the log comes from ONNX Runtime"),
    ("framework_tgi", "the log comes from Text Generation Inference"),
    ("framework_sglang", "the log comes from SGLang"),
    ("framework_ollama", "the log comes from Ollama"),
    ("framework_llama_cpp", "the log comes from llama.cpp (or a program built on it)"),
    ("framework_comfyui", "the log comes from ComfyUI"),
    ("framework_lmdeploy", "the log comes from LMDeploy (its module paths, logger or TurboMind engine)"),
    ("framework_koboldai", "the log comes from KoboldAI (the PyTorch client: aiserver.py, 'KoboldAI ran out of memory')"),
    ("framework_text_generation_webui", "the log comes from text-generation-webui (its install folder or its modules/*.py)"),
    ("model_loading", "the failure happens while the model's weights load: a traceback through load_model / from_pretrained / load_state_dict / load_weights, TGI's 'Shard N failed to start' (before the shard reports ready, so before warmup), KoboldAI's 'tried to load your model'"),
    ("framework_diffusers", "the log comes from diffusers"),
    ("framework_deepspeed", "the log comes from DeepSpeed"),
    ("framework_mesh_tf", "the log comes from Mesh TensorFlow"),
    ("framework_paddle", "the log comes from PaddlePaddle"),
    ("framework_data", "the log shows a data library (pandas, polars, dask, pyarrow, datasets, scikit-learn)"),
    ("in_memory_database", "DuckDB: the database runs in memory with no temp_directory, so unused blocks cannot be spilled to disk (the error says so)"),
    ("duckdb_system_allocator", "DuckDB: its allocator got no memory from the system ('Failed to allocate block of N bytes'), below its own memory_limit"),
];

/// Placeholders the diagnose engine can fill. `_h` variants are human-readable (`18.00 MiB`).
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("requested", "bytes of the one allocation or kernel need that failed"),
    ("used", "bytes of the program's / space's total need"),
    ("limit", "bytes it was checked against"),
    ("excess", "stated or derived overshoot in bytes"),
    ("free", "free bytes stated"),
    ("total", "total capacity stated"),
    ("reserved", "reserved bytes stated"),
    ("allocated", "allocated bytes stated"),
    ("reserved_unallocated", "PyTorch reserved-but-unallocated bytes"),
    ("over_pct", "overshoot as a percentage of the limit, one decimal"),
    ("ratio", "need / limit, two decimals"),
    ("shrink_pct", "how much the need must shrink to fit, percent, one decimal"),
    ("vmem_limit_bytes", "a per-kernel VMEM limit that covers the reported need with a quarter of headroom (need x 1.25, rounded up to 1 MiB)"),
    ("vmem_limit_mib", "the same in MiB"),
    ("scoped_vmem_limit_kib", "a value for --xla_tpu_scoped_vmem_limit_kib strictly above vmem_limit_bytes (one MiB more)"),
    ("chip_vmem_h", "physical VMEM per core of the chip(s) consistent with the log"),
    ("op", "the culprit HLO instruction / op"),
    ("kernel", "the culprit kernel name"),
    ("shape", "the culprit shape as printed"),
    ("padded_h", "padded size of the culprit shape"),
    ("unpadded_h", "unpadded size of the culprit shape"),
    ("largest_alloc_h", "size of the largest listed allocation"),
    ("largest_alloc_shape", "shape of the largest listed allocation"),
    ("largest_alloc_op", "op name / label of the largest listed allocation"),
    ("largest_alloc_pct", "largest allocation as a percentage of the limit"),
    ("padding_waste_h", "total padding waste over the listed allocations"),
    ("max_expansion", "largest padding expansion factor among listed allocations"),
    ("outside_h", "memory this process holds outside the framework allocator"),
    ("others_h", "memory held by other processes"),
    ("gpu_family", "GPU generation(s) whose per-block shared-memory limit equals the reported limit"),
    ("smem_over", "shared-memory bytes over the limit"),
    ("stages_hint", "num_stages arithmetic: the largest reduction of pipeline stages that fits"),
    ("tensor_shape", "TensorFlow tensor shape"),
    ("tensor_bytes_h", "bytes of that tensor computed from shape and dtype"),
    ("dtype", "element type of the culprit"),
    ("space_name", "SparseCore / TPU memory space name"),
    ("requested_words", "SparseCore words requested"),
    ("limit_words", "SparseCore words allocatable"),
    ("device", "device named in the message"),
    ("alloc_conf_var", "PYTORCH_CUDA_ALLOC_CONF or PYTORCH_HIP_ALLOC_CONF, whichever this platform reads"),
    ("executable", "the XLA program / executable name"),
    ("gpu_memory_utilization_set", "vLLM: the gpu_memory_utilization value the log shows in use"),
    ("gpu_memory_utilization_raise", "vLLM: a gpu_memory_utilization above the value in use (or above both defaults, 0.9 and 0.92, when the log does not show it)"),
    ("gpu_memory_utilization_fit", "vLLM: the largest gpu_memory_utilization that free memory allows (free / total, rounded down to 0.01)"),
    ("max_model_len", "vLLM: the max_model_len the message states"),
    ("max_model_len_fit", "vLLM: a max_model_len the KV cache can hold, as the message states it (V1 estimate, V0 cache tokens)"),
    ("dummy_requests", "vLLM: how many dummy requests the sampler/pooler warmup used when it ran out of memory"),
    ("max_num_seqs_fit", "vLLM: half of dummy_requests, a first max_num_seqs to try (the warmup runs max_num_seqs requests)"),
    ("mem_fraction_static_now", "SGLang: the mem_fraction_static the message states"),
    ("mem_fraction_static_fit", "SGLang: the minimum mem_fraction_static the message states, rounded up to 0.01"),
    ("prefill_tokens", "TGI: the prefill tokens the warmup could not handle"),
    ("prefill_tokens_fit", "TGI: half of prefill_tokens, a first --max-batch-prefill-tokens to try"),
    ("total_tokens", "TGI: the total tokens the message states"),
    ("req_slots_free", "SGLang: free request slots the message states (req_to_token_pool.available_size())"),
    ("req_slots_needed", "SGLang: request slots the batch needed (num_reqs)"),
    ("cached_free", "PyTorch: reserved-but-unallocated bytes, stated or reserved minus allocated (1.4-2.0 messages)"),
    ("context_allowance", "PyTorch on CUDA: the CUDA-context-and-display allowance held outside the allocator before other processes are named (see elsewhere_beyond_context)"),
    ("elsewhere", "PyTorch: device memory in use that PyTorch's allocator does not hold (total - free - PyTorch's reserved)"),
    ("device_total", "PyTorch: the device's total capacity"),
];

impl Entry {
    /// One row of the entry list (`oomdoc explain --list --format json`, `GET /api/v1/kb`).
    pub fn list_row(&self, lang: Lang) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "code": self.code,
            "kind": self.kind,
            "platform": self.platform,
            "phase": self.phase,
            "memory_space": self.memory_space,
            "title": self.title.get(lang),
        })
    }

    /// Check the entry against the schema rules that TOML typing cannot express.
    pub fn validate(&self) -> Result<(), String> {
        let id_ok = self.id.contains('.')
            && self.id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-' || c == '_');
        if !id_ok {
            return Err(format!("id `{}` must be `family.name` in lowercase", self.id));
        }
        if let Some(ms) = &self.memory_space {
            if !MEMORY_SPACES.contains(&ms.as_str()) {
                return Err(format!("memory_space `{ms}` is not one of {MEMORY_SPACES:?}"));
            }
        }
        if let Some(c) = &self.code {
            let ok = c.len() == 5 && c.starts_with('E') && c[1..].chars().all(|d| d.is_ascii_digit());
            if !ok {
                return Err(format!("code `{c}` must look like E1001"));
            }
        }
        for (what, t) in [("title", &self.title), ("summary", &self.summary)] {
            if t.en.trim().is_empty() || t.zh.trim().is_empty() {
                return Err(format!("{what} needs both en and zh text"));
            }
        }
        if self.references.is_empty() {
            return Err("an entry needs at least one reference".into());
        }
        let keys: Vec<&str> = self.references.iter().map(|r| r.key.as_str()).collect();
        let check_refs = |refs: &[String], ctx: &str| -> Result<(), String> {
            for r in refs {
                if !keys.contains(&r.as_str()) {
                    return Err(format!("{ctx}: reference `{r}` is not a key in [[references]]"));
                }
            }
            Ok(())
        };
        let check_when = |when: &[String], ctx: &str| -> Result<(), String> {
            for w in when {
                let name = w.strip_prefix('!').unwrap_or(w);
                if !CONDITIONS.iter().any(|(c, _)| *c == name) {
                    return Err(format!("{ctx}: unknown condition `{name}` (see kb/README.md)"));
                }
            }
            Ok(())
        };
        let check_requires = |requires: &[String], ctx: &str| -> Result<(), String> {
            for r in requires {
                if crate::version::Requirement::parse(r).is_none() {
                    return Err(format!("{ctx}: requirement `{r}` is not `package>=X`, `package<Y` or `package>=X,<Y`"));
                }
            }
            Ok(())
        };
        let check_text = |t: &Text, ctx: &str| -> Result<(), String> {
            if t.en.trim().is_empty() || t.zh.trim().is_empty() {
                return Err(format!("{ctx}: needs both en and zh text"));
            }
            for s in [&t.en, &t.zh] {
                crate::template::placeholders(s).map_err(|e| format!("{ctx}: {e}"))?;
            }
            Ok(())
        };
        for c in &self.causes {
            let ctx = format!("cause `{}`", c.id);
            check_when(&c.when, &ctx)?;
            check_text(&c.text, &ctx)?;
            check_refs(&c.refs, &ctx)?;
        }
        if self.kind == Kind::Oom && self.fixes.is_empty() {
            return Err("an oom entry needs at least one fix".into());
        }
        for f in &self.fixes {
            let ctx = format!("fix `{}`", f.id);
            check_when(&f.when, &ctx)?;
            check_requires(&f.requires, &ctx)?;
            check_text(&f.title, &ctx)?;
            if let Some(d) = &f.detail {
                check_text(d, &ctx)?;
            }
            for c in [&f.code, &f.code_fallback].into_iter().flatten() {
                crate::template::placeholders(c).map_err(|e| format!("{ctx}: {e}"))?;
            }
            check_refs(&f.refs, &ctx)?;
            if f.refs.is_empty() {
                return Err(format!("{ctx}: every fix needs a reference"));
            }
        }
        for d in &self.dead_ends {
            let ctx = format!("dead end `{}`", d.id);
            check_when(&d.when, &ctx)?;
            check_requires(&d.requires, &ctx)?;
            check_text(&d.action, &ctx)?;
            check_text(&d.why, &ctx)?;
            check_refs(&d.refs, &ctx)?;
        }
        self.validate_behaviours()?;
        for ex in &self.examples {
            for k in ex.expect.sizes.keys() {
                if !crate::SIZE_KEYS.contains(&k.as_str()) {
                    return Err(format!("example size key `{k}` is not one of {:?}", crate::SIZE_KEYS));
                }
            }
        }
        Ok(())
    }
}

/// Values of a fix's or dead end's `status`: `unverified` (what it relies on was not read in
/// source) or `general` (general advice: it names no setting, variable, option or API, so
/// there is no behaviour of a release to read; checked by [`Entry::general_advice_names`]).
pub const RELIANCE_STATUSES: &[&str] = &["unverified", "general"];

/// How a fix or dead end stands with its sources (JSON `verification`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reliance {
    /// Every behaviour it relies on was read in source at a tag or commit.
    Verified,
    /// General advice ("lower the batch size"): it names no setting or API, so there is
    /// nothing a release's source could confirm or refute.
    General,
    /// It names something whose behaviour nobody has read in source; shown as unverified.
    #[default]
    Unverified,
}

impl Reliance {
    pub fn as_str(self) -> &'static str {
        match self {
            Reliance::Verified => "verified",
            Reliance::General => "general",
            Reliance::Unverified => "unverified",
        }
    }
}
/// Values of a behaviour record's `status`.
pub const BEHAVIOUR_STATUSES: &[&str] = &["verified", "unverified"];

/// `owner/repo:path@ref` (a source file at a tag or commit) or an `https://` page.
pub fn is_pinned_source(s: &str) -> bool {
    let s = s.trim();
    s.starts_with("https://") || s.split_once(':').is_some_and(|(repo, rest)| repo.contains('/') && rest.contains('@'))
}

impl Entry {
    /// A behaviour record by key.
    pub fn behaviour(&self, key: &str) -> Option<&Behaviour> {
        self.behaviours.iter().find(|b| b.key == key)
    }

    /// Whether what a fix or dead end relies on was read in source: it names at least one
    /// behaviour record, every one of them is verified, and it is not marked unverified.
    pub fn reliance_verified(&self, relies_on: &[String], status: Option<&str>) -> bool {
        status.is_none()
            && !relies_on.is_empty()
            && relies_on.iter().all(|k| self.behaviour(k).is_some_and(|b| b.status == "verified"))
    }

    pub fn fix_verified(&self, f: &Fix) -> bool {
        self.reliance_verified(&f.relies_on, f.status.as_deref())
    }

    pub fn dead_end_verified(&self, d: &DeadEnd) -> bool {
        self.reliance_verified(&d.relies_on, d.status.as_deref())
    }

    /// Verified, general advice, or unverified (see [`Reliance`]).
    pub fn reliance(&self, relies_on: &[String], status: Option<&str>) -> Reliance {
        if status == Some("general") {
            Reliance::General
        } else if self.reliance_verified(relies_on, status) {
            Reliance::Verified
        } else {
            Reliance::Unverified
        }
    }

    pub fn fix_reliance(&self, f: &Fix) -> Reliance {
        self.reliance(&f.relies_on, f.status.as_deref())
    }

    pub fn dead_end_reliance(&self, d: &DeadEnd) -> Reliance {
        self.reliance(&d.relies_on, d.status.as_deref())
    }

    /// Why a fix or dead end marked `status = "general"` is not general advice: the settings,
    /// variables, options and APIs its English text names (code spans, `--flags`, upper-case
    /// names with an underscore, dotted module names, snake_case options, calls; rules in
    /// [`crate::identifiers::named_in_text`]), and any `code`, `relies_on` or `requires` it
    /// carries. Empty for a fix or dead end that is not marked general, or that is general.
    pub fn general_advice_names(&self, kind: &str, id: &str) -> Vec<String> {
        let mut out = Vec::new();
        let (status, relies_on, requires, texts, code): (_, _, _, Vec<&str>, Vec<&str>) = match kind {
            "fix" => match self.fixes.iter().find(|f| f.id == id) {
                Some(f) => (
                    f.status.as_deref(),
                    &f.relies_on,
                    &f.requires,
                    [Some(f.title.en.as_str()), f.detail.as_ref().map(|d| d.en.as_str())].into_iter().flatten().collect(),
                    [f.code.as_deref(), f.code_fallback.as_deref()].into_iter().flatten().collect(),
                ),
                None => return out,
            },
            _ => match self.dead_ends.iter().find(|d| d.id == id) {
                Some(d) => (d.status.as_deref(), &d.relies_on, &d.requires, vec![d.action.en.as_str(), d.why.en.as_str()], Vec::new()),
                None => return out,
            },
        };
        if status != Some("general") {
            return out;
        }
        for c in code {
            out.push(format!("code `{c}`"));
        }
        for k in relies_on {
            out.push(format!("relies_on `{k}`"));
        }
        for r in requires {
            out.push(format!("requires `{r}`"));
        }
        for t in texts {
            out.extend(crate::identifiers::named_in_text(t).into_iter().map(|n| format!("`{n}`")));
        }
        out
    }

    /// Behaviour records are well formed and every `relies_on` names one. (Whether every
    /// fix and dead end has a record or an `unverified` marker is checked by
    /// `tests/behaviours.rs`, so that an entry missing one still loads.)
    fn validate_behaviours(&self) -> Result<(), String> {
        let mut keys = std::collections::BTreeSet::new();
        for b in &self.behaviours {
            let ctx = format!("behaviour `{}`", b.key);
            if !keys.insert(b.key.as_str()) {
                return Err(format!("{ctx}: recorded twice"));
            }
            if !BEHAVIOUR_STATUSES.contains(&b.status.as_str()) {
                return Err(format!("{ctx}: status `{}` is not one of {BEHAVIOUR_STATUSES:?}", b.status));
            }
            if b.claim.trim().is_empty() || b.project.trim().is_empty() {
                return Err(format!("{ctx}: needs a project and a claim"));
            }
            if b.status == "verified" && !is_pinned_source(&b.source) {
                return Err(format!("{ctx}: source `{}` must be `owner/repo:path@tag-or-commit` or an https:// URL", b.source));
            }
            if b.status == "verified" && !self.checked_against.contains_key(&b.project) {
                return Err(format!("{ctx}: project `{}` has no `checked_against` release in this entry", b.project));
            }
        }
        let items = self
            .fixes
            .iter()
            .map(|f| (format!("fix `{}`", f.id), &f.relies_on, &f.status))
            .chain(self.dead_ends.iter().map(|d| (format!("dead end `{}`", d.id), &d.relies_on, &d.status)));
        for (ctx, relies_on, status) in items {
            for k in relies_on {
                if !keys.contains(k.as_str()) {
                    return Err(format!("{ctx}: relies on `{k}`, which is not a key in [[behaviours]]"));
                }
            }
            if let Some(s) = status {
                if !RELIANCE_STATUSES.contains(&s.as_str()) {
                    return Err(format!("{ctx}: status `{s}` is not one of {RELIANCE_STATUSES:?}"));
                }
            }
        }
        let items = self.fixes.iter().map(|f| ("fix", f.id.as_str())).chain(self.dead_ends.iter().map(|d| ("dead end", d.id.as_str())));
        for (kind, id) in items {
            let names = self.general_advice_names(if kind == "fix" { "fix" } else { "dead_end" }, id);
            if !names.is_empty() {
                return Err(format!(
                    "{kind} `{id}`: status = \"general\" is for advice that names no setting or API, but it names {}; \
                     read them in source (relies_on) or mark it status = \"unverified\"",
                    names.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// Size keys of the JSON contract.
pub const SIZE_KEYS: &[&str] =
    &["requested", "used", "limit", "excess", "free", "total", "reserved", "allocated", "reserved_unallocated"];
