//! The case around a failure, read from the whole block of log text and not only the
//! message: which framework or engine ran the job, whether it trained or served, the
//! library versions the log prints or the message's wording dates, the OS, the
//! settings the log states (told apart from the runtime's own hints), and which
//! limit a host-memory failure hit. Advice that does not fit the case is not shown.

use super::version::VersionFact;
use crate::finding::Finding;
use crate::grammar;
use oomdoc_kb::Platform;
use serde::Serialize;
use std::collections::BTreeMap;

/// What the log says about the job (JSON: `findings[].case`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Case {
    /// Frameworks and engines seen in the traceback, imports and log lines, most specific
    /// first (`vllm` before `pytorch`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub frameworks: Vec<String>,
    /// `training` | `inference` | `serving` | `data`, when the log shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// Library versions by package name (`torch`, `jax`, `vllm`, `cuda`, `python`, …).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub versions: BTreeMap<String, VersionFact>,
    /// `linux` | `windows` | `macos`, from paths and kill wording.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// Settings the log states as set (allocator configuration, engine arguments), by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    /// Settings the log names only in the runtime's own hint (`try setting
    /// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`): suggested, not set.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hinted: Vec<String>,
    /// Host-memory failures: the limit that was hit, `cgroup` | `rlimit` | `physical`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<String>,
}

impl Case {
    pub fn is_empty(&self) -> bool {
        self == &Case::default()
    }
    pub fn has(&self, framework: &str) -> bool {
        self.frameworks.iter().any(|f| f == framework)
    }
    pub fn inference(&self) -> bool {
        matches!(self.workload.as_deref(), Some("inference" | "serving"))
    }
    /// Whether an API of `api` (a framework name) can apply to this job. Unknown
    /// frameworks rule nothing out.
    pub fn allows_api(&self, api: &str) -> bool {
        if self.frameworks.is_empty() {
            return true;
        }
        let any = |names: &[&str]| names.iter().any(|n| self.has(n));
        match api {
            // JAX's own APIs need a JAX program; Pallas kernels also run under PyTorch/XLA.
            "jax" => self.has("jax") || !any(&["torch_xla", "tensorflow", "mesh_tf", "pytorch", "directml", "paddle", "onnxruntime"]),
            "pallas" => any(&["jax", "torch_xla"]) || !any(&["tensorflow", "mesh_tf", "pytorch", "directml"]),
            "pytorch" => any(&["pytorch", "torch_xla", "vllm", "sglang", "tgi", "lmdeploy", "koboldai", "text-generation-webui", "diffusers", "comfyui", "deepspeed"])
                || !any(&["jax", "tensorflow", "mesh_tf", "paddle"]),
            "tensorflow" => any(&["tensorflow", "mesh_tf"]) || !any(&["jax", "pytorch", "torch_xla", "onnxruntime", "paddle"]),
            // TF's GPU allocator settings do nothing under DirectML.
            "tensorflow_gpu" => self.allows_api("tensorflow") && !self.has("directml"),
            // An Ollama log also shows the llama.cpp it runs (ggml lines): Ollama is what the
            // user drives, so llama.cpp's command line is not theirs to change.
            "llama.cpp" => !self.has("ollama"),
            "ollama" => self.has("ollama") || !any(&["llama.cpp", "koboldai", "text-generation-webui", "vllm", "sglang", "tgi", "lmdeploy"]),
            _ => true,
        }
    }
}

grammar!(fw_tgi, r"text_generation_server|text[-_]generation[-_]launcher|ShardCannotStart|text_generation_router|text-generation-inference|max_batch_prefill_tokens");
// Engines and applications are also named in prose by their names in any case ("LMDeploy", "SGLang", "Comfy UI").
grammar!(fw_sglang, r"(?i:\bsglang\b)|mem[_-]fraction[_-]static");
grammar!(fw_llama_cpp, r"(?i:\bllama\.cpp\b|\bllama-cpp\b|\bkoboldcpp\b)|llama_model_load|llama_new_context|llama_init_from|ggml_backend|ggml_cuda|ggml-cuda|llama\.cpp|llama-server|\bllama_cpp\b|\bkoboldcpp\b");
// vLLM's own environment variables (`VLLM_*`) and its sleep-mode allocator source also name it.
grammar!(fw_vllm, r"(?i)\bvllm\b|\bVLLM_[A-Z0-9_]+|cumem_allocator");
// Ollama's runner logs name its own Go sources: `llama.go:292:` (ollama/llm/llama.go, 0.1.x),
// `source=server.go:…` / `source=sched.go:…` (its slog lines).
// Its server reports a runner that died as `llama runner process has terminated: …`
// (llm/server.go, v0.1.32 to v0.12.0) or, since it starts llama-server itself,
// `llama-server process has terminated: …` (llm/llama_server.go:1306-1325 @v0.32.15).
grammar!(fw_ollama, r"(?i)\bollama\b|(?:llama runner|llama-server) process has terminated|\bllama\.go:\d+|\bsource=(?:server|sched|gpu|routes|llama|memory|amd_linux|amd_windows)\.go:\d+");
// LMDeploy names itself in its module paths and its logger (`get_logger('lmdeploy')`,
// lmdeploy/utils.py@v0.16.0), and TurboMind is its CUDA engine (lmdeploy/turbomind/).
grammar!(fw_lmdeploy, r"(?i)\blmdeploy\b|\bturbomind\b");
// KoboldAI (the PyTorch client, not koboldcpp, whose web UI is also "KoboldAI Lite") re-raises an
// OOM as "KoboldAI ran out of memory: …" (KoboldOutOfMemoryError) and a load failure as "… when
// KoboldAI tried to load your model." (aiserver.py:522, 560, 2498 @1.19.2); its server script is
// aiserver.py and its layer split --breakmodel_gpulayers (aiserver.py:1356).
grammar!(fw_koboldai, r"KoboldAI ran out of memory|KoboldOutOfMemoryError|when KoboldAI tried to load|\baiserver\.py\b|--breakmodel_gpulayers");
// text-generation-webui: its install folder, and modules of its own that other programs' `modules/`
// folders (Stable Diffusion web UI's) do not have: modules/text_generation.py and models_settings.py
// (v1.0 and v4.7.3), ui_model_menu.py (v4.7.3), llamacpp_model.py and exllama_hf.py (v1.0),
// llamacpp_hf.py (v1.16, v2.0), exllamav2_hf.py (v1.16 to v3.23).
grammar!(fw_textgen_webui, r"(?i)text-generation-webui|\boobabooga\b|\bmodules[/\\](?:text_generation|ui_model_menu|models_settings|llamacpp_model|llamacpp_hf|exllama_hf|exllamav2_hf)\.py");
// ComfyUI's executor (`execution.py`) logs "Got an OOM, unloading all loaded models." when a node raised
// `model_management.OOM_EXCEPTION` (read through the code index).
grammar!(fw_comfyui, r"(?i:\bcomfy\s?ui\b)|ComfyUI|comfy[/\\.]|comfy_extras|KSampler|Got an OOM, unloading all loaded models");
grammar!(fw_diffusers, r"(?i:\bdiffusers\b)|StableDiffusion\w*Pipeline|UNet2DConditionModel");
grammar!(fw_mesh_tf, r"mesh_tensorflow|\bmtf\.");
grammar!(fw_directml, r"(?i)torch_directml|directml|\bdml\b");
grammar!(fw_deepspeed, r"\bdeepspeed\b|DeepSpeed");
// ONNX Runtime names itself in its errors' source paths (`onnxruntime/core/...`), its Python
// package and its execution providers.
grammar!(fw_onnxruntime, r"(?i)\bonnxruntime\b|onnxruntime/|\bCUDAExecutionProvider\b|\bTensorrtExecutionProvider\b|\bInferenceSession\b");
// Paddle's allocator wording (paddle/fluid/memory/allocation: "Out of memory error on GPU %d.
// Cannot allocate %s memory on GPU %d, ...") names it where no path does.
grammar!(fw_paddle, r"\bpaddle\b|paddlepaddle|Paddle(?:Tensor|Error)|Out of memory error on (?:GPU|NPU|XPU|MLU) \d+\. Cannot allocate");
// PyTorch's own check macros word a cuDNN or cuBLAS status as no other runtime does
// (aten/src/ATen/cuda/Exceptions.h at 0220ea5a: AT_CUDNN_CHECK "cuDNN error: " +
// cudnnGetErrorString, TORCH_CUDABLAS_CHECK "CUDA error: " + status + " when calling `EXPR`";
// TensorFlow's StreamExecutor says "failed to create cublas handle: ", ggml's CUDA check has no
// "when calling", Transformer Engine writes "cuDNN Error: "). So does the convolution that
// ran out of cuDNN algorithms, each failing for memory (aten/src/ATen/native/cudnn/Conv_v7.cpp
// at 01b468ad, AlgoIterator::try_all: TORCH_CHECK, a RuntimeError; ONNX Runtime's
// ORT_ENFORCE of the same words is no RuntimeError). Case-sensitive on purpose.
grammar!(fw_pytorch_checks, r"cuDNN error: CUDNN_STATUS_[A-Z_]+|CUDA error: CUBLAS_STATUS_[A-Z_]+ when calling `|RuntimeError: Unable to find a valid cuDNN algorithm to run convolution");
// TensorFlow named by itself (paths, imports, Keras), not by the exception class name
// `ResourceExhaustedError`, which Paddle raises too.
grammar!(tf_strong, r"tensorflow|\bkeras|\btf\.");
grammar!(fw_data, r"/pandas/|\bpandas\.|\bpd\.read_|\bpolars\b|/dask/|\bdask\.|\bpyarrow\b|/datasets/arrow|\bsklearn\b|/scikit-learn/");
// Strong JAX evidence: its traceback frames and exceptions, not op names like `jit(`.
grammar!(jax_strong, r"jax/_src|jaxlib|jax\.errors|JaxRuntimeError|\bimport jax\b|\bjax\.(?:jit|numpy|random|lax|device_put|sharding)");

grammar!(serving_words, r"(?i)api_server|\bserve\b|\bserving\b|uvicorn|EngineCore|AsyncLLMEngine|openai\.api|text-generation-launcher|llama-server|sglang\.launch_server|--port\b");
grammar!(inference_words, r"(?i)\.generate\(|\bgenerate\b|\binference\b|inference_mode|no_grad|\bpipeline\(|txt2img|img2img|\bsampler\b|KSampler|\bpredict\(|LLM\(model|\bllm\.generate|\beval\(\)");
grammar!(training_words, r"(?i)backward|autograd|value_and_grad|optimizer\.step|\btrain_step\b|\btraining\b|\btrainer\b|\btrain\.py\b|\bepoch\b|\bfit\(|jvp\(|transpose\(jvp|/grad\b|\bfine-?tun|\bsft\b|\blora\b");

// PyTorch's CPU allocator says "not enough memory" only in its Windows branch (alloc_cpu.cpp).
grammar!(os_windows, r"(?i)DefaultCPUAllocator: not enough memory|\b[A-Z]:\\|\\site-packages\\|\bWinError\b|\bwin32\b|\bwin_amd64\b|\bWindows\b|\.exe\b|\.dll\b");
grammar!(os_macos, r"(?i)Killed: 9|\bdarwin\b|\bmacOS\b|\bmacosx\b|/opt/homebrew|\.dylib\b|/Library/Frameworks|(?:^|[\s\x22'(])/Users/|\bApple M\d|\bMetal\b");
grammar!(os_linux, r"(?i)\blinux\b|(?:^|[\s\x22'(])/home/|(?:^|[\s\x22'(])/root/|/usr/lib/python|/usr/local/lib/python|/opt/conda|\bdmesg\b|oom-kill|Killed process|\bmanylinux|\bWSL\b");

grammar!(
    stated_setting,
    r"(?i)(PYTORCH_(?:CUDA_|HIP_|NPU_|XPU_)?ALLOC_CONF|XLA_PYTHON_CLIENT_(?:MEM_FRACTION|PREALLOCATE|ALLOCATOR)|XLA_CLIENT_MEM_FRACTION|TF_FORCE_GPU_ALLOW_GROWTH|TF_GPU_ALLOCATOR|LIBTPU_INIT_ARGS|PYTORCH_MPS_(?:HIGH|LOW)_WATERMARK_RATIO|OLLAMA_NUM_PARALLEL|OLLAMA_NUM_CTX)\s*[=:]\s*['\x22]?([^\s'\x22,;)]+)"
);
grammar!(
    engine_arg,
    r"(?i)\b-{0,2}(gpu[_-]memory[_-]utilization|max[_-]model[_-]len|max[_-]num[_-]seqs|max[_-]num[_-]batched[_-]tokens|tensor[_-]parallel[_-]size|pipeline[_-]parallel[_-]size|enforce[_-]eager|kv[_-]cache[_-]dtype|max[_-]batch[_-]prefill[_-]tokens|max[_-]batch[_-]total[_-]tokens|max[_-]total[_-]tokens|max[_-]input[_-](?:tokens|length)|mem[_-]fraction[_-]static|cuda[_-]memory[_-]fraction|max[_-]running[_-]requests|chunked[_-]prefill[_-]size|n[_-]gpu[_-]layers|ctx[_-]size|n[_-]ctx|num[_-]ctx|xla_tpu_scoped_vmem_limit_kib|per[_-]device[_-]train[_-]batch[_-]size|gradient[_-]accumulation[_-]steps|micro[_-]batch[_-]size|batch[_-]size)['\x22]?(?:\s*[:=]\s*|\s+)['\x22]?(Some\(\d+\)|\d+(?:\.\d+)?|True|False|true|false|auto|fp8\w*|None)"
);
// Containers and batch schedulers run jobs in a memory cgroup (Docker, Kubernetes, Slurm's
// task/cgroup plugin); Docker Desktop's VM has a fixed memory size.
grammar!(host_cgroup, r"(?i)memcg|Memory cgroup out of memory|CONSTRAINT_MEMCG|OOMKilled|cgroup|memory\.max|container memory limit|slurmstepd|oom[-_]kill event|\bdocker\b|docker-compose|Service '[^']+' failed to build|exited with code 137|\bkubectl\b|\bpod\b");
grammar!(host_rlimit, r"(?i)\bulimit\b|RLIMIT_|setrlimit|virtual memory exhausted");
grammar!(host_physical, r"CONSTRAINT_NONE|Out of memory: Kill(?:ed)? process|global_oom");

/// Frameworks and engines whose traces appear in a text, most specific first: serving
/// engines and applications, then the frameworks under them, then data libraries.
pub fn frameworks(t: &str) -> Vec<&'static str> {
    let base = super::context::frameworks(t);
    let has = |n: &str| base.contains(&n);
    // A PyTorch/XLA or Mesh-TF trace names JAX-like op paths (`jit(`): there only a JAX
    // traceback or import counts as JAX.
    let jax = has("jax") && (jax_strong().is_match(t) || !(has("torch_xla") || fw_mesh_tf().is_match(t)));
    let checks: [(&'static str, bool); 20] = [
        ("tgi", fw_tgi().is_match(t)),
        ("sglang", fw_sglang().is_match(t)),
        ("lmdeploy", fw_lmdeploy().is_match(t)),
        ("koboldai", fw_koboldai().is_match(t)),
        ("text-generation-webui", fw_textgen_webui().is_match(t)),
        ("vllm", has("vllm") || fw_vllm().is_match(t)),
        ("ollama", fw_ollama().is_match(t)),
        ("llama.cpp", fw_llama_cpp().is_match(t)),
        ("comfyui", fw_comfyui().is_match(t)),
        ("diffusers", fw_diffusers().is_match(t)),
        ("deepspeed", fw_deepspeed().is_match(t)),
        ("mesh_tf", fw_mesh_tf().is_match(t)),
        ("torch_xla", has("torch_xla")),
        ("jax", jax),
        ("tensorflow", has("tensorflow") && (tf_strong().is_match(t) || !fw_paddle().is_match(t))),
        ("directml", fw_directml().is_match(t)),
        ("paddle", fw_paddle().is_match(t)),
        ("onnxruntime", fw_onnxruntime().is_match(t)),
        ("pytorch", has("pytorch") || fw_pytorch_checks().is_match(t)),
        ("data", fw_data().is_match(t)),
    ];
    checks.into_iter().filter(|c| c.1).map(|c| c.0).collect()
}

/// Read the case from the text around a finding; `elsewhere` holds the versions the log
/// prints far from it (its head: startup banners, environment reports).
pub fn read(f: &Finding, block: &str, elsewhere: &BTreeMap<String, VersionFact>) -> Case {
    let mut case = Case { frameworks: frameworks(block).into_iter().map(str::to_string).collect(), ..Case::default() };
    if let Some(fw) = f.framework.as_deref() {
        if !case.has(fw) {
            case.frameworks.insert(0, fw.to_string());
        }
    }
    settings(block, &mut case);
    // vLLM's own engine arguments stated in the log (its command line, its config dump) say
    // the job runs vLLM even where no traceback line names it: vllm-ascend on NPUs, or a
    // failure paragraph apart from the command. No other engine has these names.
    let engines = SERVING_ENGINES;
    if !engines.iter().any(|e| case.has(e)) && ["gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens"].iter().any(|k| case.settings.contains_key(*k)) {
        case.frameworks.insert(0, "vllm".to_string());
    }
    case.workload = workload(f, &case, block);
    case.os = os(f, block);
    versions(f, block, elsewhere, &mut case.versions);
    if f.memory_space.as_deref() == Some("host") || f.id.starts_with("host.") {
        case.memory_limit = if host_cgroup().is_match(block) {
            Some("cgroup".into())
        } else if host_rlimit().is_match(block) {
            Some("rlimit".into())
        } else if host_physical().is_match(block) {
            Some("physical".into())
        } else {
            None
        };
    }
    case
}

/// Engines and applications that serve a model (their own budgets size its memory): a job
/// that runs one serves or runs inference unless the log shows training.
pub const SERVING_ENGINES: [&str; 8] = ["vllm", "sglang", "tgi", "lmdeploy", "ollama", "llama.cpp", "koboldai", "text-generation-webui"];

fn workload(f: &Finding, case: &Case, block: &str) -> Option<String> {
    let engine = SERVING_ENGINES.iter().any(|e| case.has(e))
        || f.id.starts_with("vllm.")
        || f.id.starts_with("sglang.")
        || f.id.starts_with("tgi.")
        || f.id.starts_with("ggml.")
        || f.id.starts_with("ollama.");
    let training = training_words().is_match(block);
    if engine && !training {
        return Some(if serving_words().is_match(block) || !case.has("vllm") { "serving" } else { "inference" }.into());
    }
    if training {
        return Some("training".into());
    }
    if engine || case.has("comfyui") || case.has("diffusers") || inference_words().is_match(block) {
        return Some("inference".into());
    }
    let accelerator = ["pytorch", "jax", "tensorflow", "torch_xla", "mesh_tf"].iter().any(|e| case.has(e));
    if case.has("data") && !accelerator && (f.memory_space.as_deref() == Some("host") || f.platform == Platform::Cpu) {
        return Some("data".into());
    }
    None
}

fn os(f: &Finding, block: &str) -> Option<String> {
    if matches!(f.platform, Platform::Mps | Platform::Metal) {
        return Some("macos".into());
    }
    // Windows paths first: a `C:/Users/` path is not a Mac home directory.
    if os_windows().is_match(block) {
        return Some("windows".into());
    }
    if os_macos().is_match(block) {
        return Some("macos".into());
    }
    if os_linux().is_match(block) {
        return Some("linux".into());
    }
    None
}

/// Versions printed in the block around the failure first (nearest), then those the log
/// prints elsewhere (`elsewhere`: its head, read once), then the range the message's
/// wording dates.
fn versions(f: &Finding, block: &str, elsewhere: &BTreeMap<String, VersionFact>, out: &mut BTreeMap<String, VersionFact>) {
    for (name, fact) in super::version::printed_versions(block) {
        out.entry(name).or_insert(fact);
    }
    for (name, fact) in elsewhere {
        out.entry(name.clone()).or_insert_with(|| fact.clone());
    }
    if !out.contains_key("torch") {
        if let Some(range) = torch_message_format(f) {
            out.insert("torch".into(), range);
        }
    }
}

/// The PyTorch release range the allocator message's wording dates (kb/pytorch/cuda-oom.toml
/// `versions`): `cached)` up to 1.3, `reserved in total by PyTorch` 1.4–2.0, the sentence
/// form from 2.1 (with the `capacty` typo in 2.1), `torch.cuda.OutOfMemoryError` from 1.13.
fn torch_message_format(f: &Finding) -> Option<VersionFact> {
    if !(f.id.starts_with("pytorch.") || f.id == "xpu.out-of-memory" || f.id == "npu.out-of-memory") {
        return None;
    }
    let m = &f.excerpt;
    let src = "message format";
    if m.contains("total capacty of") {
        return Some(VersionFact::range(Some("2.1"), Some("2.2"), src));
    }
    if m.contains("has a total capacity of") {
        return Some(VersionFact::range(Some("2.1"), None, src));
    }
    let legacy = m.contains("total capacity;");
    if legacy && m.contains("reserved in total by PyTorch") {
        let lo = if m.contains("torch.cuda.OutOfMemoryError") { "1.13" } else { "1.4" };
        return Some(VersionFact::range(Some(lo), Some("2.1"), src));
    }
    if legacy && m.contains(" cached)") {
        return Some(VersionFact::range(None, Some("1.4"), src));
    }
    None
}

/// Whether the setting at `start..end` is the runtime's own suggestion: PyTorch's hint
/// "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation",
/// also when a terminal wrapped the variable onto a line of its own.
fn is_hint(t: &str, start: usize, end: usize) -> bool {
    let before = crate::recognize::window_before(t, start, 48);
    let before = before.trim_end();
    let after = crate::recognize::window(t, end, 40).trim_start();
    // The MPS allocator's: "Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit".
    let use_hint = before.to_ascii_lowercase().ends_with("use") || after.starts_with("to disable");
    // The BFC allocator's: "maybe the environment variable 'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation".
    let quoted_after = after.trim_start_matches(['\'', '"', '`']).trim_start();
    let bfc_hint = before.trim_end_matches(['\'', '"', '`']).trim_end().ends_with("environment variable") || quoted_after.starts_with("will improve");
    before.ends_with("setting") || before.ends_with("set") || before.ends_with("try") || after.starts_with("to avoid") || use_hint || bfc_hint
}

fn settings(block: &str, case: &mut Case) {
    for c in stated_setting().captures_iter(block) {
        let m = c.get(0).expect("whole match");
        let name = c[1].to_ascii_uppercase();
        let value = c[2].trim_end_matches(['.', '`']).to_string();
        if is_hint(block, m.start(), m.end()) {
            let hint = format!("{name}={value}");
            if !case.hinted.contains(&hint) {
                case.hinted.push(hint);
            }
        } else {
            case.settings.entry(name).or_insert(value);
        }
    }
    for c in engine_arg().captures_iter(block) {
        let name = c[1].to_ascii_lowercase().replace('-', "_");
        let raw = &c[2];
        let value = raw.strip_prefix("Some(").and_then(|r| r.strip_suffix(')')).unwrap_or(raw);
        // Error texts name settings in their advice ("decrease `max_model_len`"): those
        // carry no value and do not match; a value stated twice keeps the first.
        case.settings.entry(name).or_insert_with(|| value.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case_of(text: &str) -> Case {
        let r = crate::diagnose_text(text, &crate::Options::default());
        r.findings.into_iter().next().map(|f| f.case).unwrap_or_default()
    }

    #[test]
    fn hint_wrapped_onto_its_own_line_is_not_a_setting() {
        // https://github.com/pytorch/pytorch/issues/121580 shape: the hint wraps before the variable.
        let c = case_of("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 7.75 GiB of which 11.62 MiB is free. Of the allocated memory 7.31 GiB is allocated by PyTorch, and 36.19 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting\nPYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
        assert!(c.settings.is_empty(), "{c:?}");
        assert_eq!(c.hinted, vec!["PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"]);
        assert_eq!(c.versions["torch"].at_least.as_deref(), Some("2.1"));
        let set = case_of("$ export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 7.75 GiB of which 11.62 MiB is free.");
        assert_eq!(set.settings.get("PYTORCH_CUDA_ALLOC_CONF").map(String::as_str), Some("expandable_segments:True"));
    }

    /// A vLLM server log: the banner and arguments at the start, 40,000 request lines, then
    /// the failure. The version comes from the log's head, the block's nearest print wins.
    fn long_log(banner: &str) -> String {
        let mut log = format!("{banner}\n");
        for i in 0..40_000 {
            log += &format!("INFO 06-12 10:{:02}:{:02} metrics.py:341] Avg prompt throughput: 812.3 tokens/s, Running: 12 reqs, GPU KV cache usage: 41.{i}%\n", i % 60, i % 59);
        }
        log + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 11.62 MiB is free.\n"
    }

    #[test]
    fn versions_printed_far_from_the_failure() {
        let log = long_log("INFO 06-12 10:00:00 api_server.py:177] vLLM API server version 0.4.3\nPyTorch version: 2.3.0+cu121");
        assert!(log.len() > 1 << 20);
        let c = case_of(&log);
        assert_eq!(c.versions["vllm"].version.as_deref(), Some("0.4.3"));
        assert_eq!(c.versions["torch"].version.as_deref(), Some("2.3.0+cu121"), "a printed version beats the message format's range");
        // The same through a file (mapped windows on Linux): the head is read back.
        let path = std::env::temp_dir().join(format!("oomdoc-head-{}.log", std::process::id()));
        std::fs::write(&path, &log).unwrap();
        let r = crate::diagnose_file(std::fs::File::open(&path).unwrap(), &crate::Options::default()).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(r.findings[0].case.versions["vllm"].version.as_deref(), Some("0.4.3"));
        // Nearer wins: a version printed in the failure's block over the head's.
        let c = case_of(&(long_log("vLLM API server version 0.4.3") + "vLLM API server version 0.5.0\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 1.62 MiB is free.\n"));
        assert_eq!(c.versions["vllm"].version.as_deref(), Some("0.5.0"));
    }

    #[test]
    fn message_format_dates_pytorch() {
        let c = case_of("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.88 GiB already allocated; 12.06 MiB free; 7.06 GiB reserved in total by PyTorch)");
        assert_eq!((c.versions["torch"].at_least.as_deref(), c.versions["torch"].below.as_deref()), (Some("1.4"), Some("2.1")));
        let c = case_of("RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 8.57 MiB already allocated; 9.28 GiB free; 4.68 MiB cached)");
        assert_eq!(c.versions["torch"].below.as_deref(), Some("1.4"));
        let c = case_of("torch==2.0.1\nRuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.88 GiB already allocated; 12.06 MiB free; 7.06 GiB reserved in total by PyTorch)");
        assert_eq!(c.versions["torch"].version.as_deref(), Some("2.0.1"));
    }

    /// Serving engines read from their own wording (each from a public thread, verbatim).
    #[test]
    fn serving_engines_are_read_from_their_own_wording() {
        // https://github.com/InternLM/lmdeploy/issues/2236: TurboMind's source path names LMDeploy.
        let c = case_of("RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/memory_utils.cu:32");
        assert!(c.has("lmdeploy"), "{c:?}");
        assert_eq!(c.workload.as_deref(), Some("serving"));
        // https://github.com/TavernAI/TavernAI-v1/issues/15: KoboldAI's own re-raise.
        let c = case_of("    msg: 'KoboldAI ran out of memory: CUDA out of memory. Tried to allocate 26.00 MiB (GPU 0; 14.76 GiB total capacity; 13.65 GiB already allocated; 9.88 MiB free; 13.85 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF',\n    type: 'out_of_memory.gpu.cuda'");
        assert_eq!(c.frameworks.first().map(String::as_str), Some("koboldai"), "{c:?}");
        assert!(c.allows_api("pytorch"));
    }

    #[test]
    fn frameworks_workload_and_os() {
        let c = case_of("File \"C:\\Users\\me\\ComfyUI\\comfy\\model_management.py\", line 12\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 7.75 GiB of which 11.62 MiB is free.");
        assert_eq!(c.os.as_deref(), Some("windows"));
        assert!(c.has("comfyui") && c.has("pytorch"), "{c:?}");
        assert_eq!(c.workload.as_deref(), Some("inference"));
        let c = case_of("INFO api_server.py: vLLM API server version 0.6.3\nargs: Namespace(gpu_memory_utilization=0.9, max_model_len=32768)\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 11.62 MiB is free.");
        assert_eq!(c.frameworks.first().map(String::as_str), Some("vllm"));
        assert_eq!(c.workload.as_deref(), Some("serving"));
        assert_eq!(c.versions["vllm"].version.as_deref(), Some("0.6.3"));
        assert_eq!(c.settings.get("max_model_len").map(String::as_str), Some("32768"));
        assert_eq!(c.settings.get("gpu_memory_utilization").map(String::as_str), Some("0.9"));
        assert!(!c.allows_api("jax"));
    }
}
