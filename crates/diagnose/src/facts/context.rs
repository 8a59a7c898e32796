//! Facts about the log around a failure: framework, exception class, status code,
//! and settings printed elsewhere in the log (allocator configuration).

use crate::grammar;

grammar!(fw_vllm, r"\bvllm\b|EngineCore|tpu_inference|vllm/");
grammar!(fw_torch_xla, r"torch_xla|Bad StatusOr access|pytorch/xla|xla_util\.cc|XRTExecute|XLA_USE_BF16");
// `Execution of replica N failed` is XLA's PjRt stream-executor client
// (`pjrt_stream_executor_client.cc`): JAX's runtime, or torch_xla's, which wins where it shows;
// TensorFlow's own executor never prints it.
// Each framework's name as people write it in prose (a title, a report's sentences) counts too:
// "PyTorch", "TensorFlow", "Keras", "JAX".
grammar!(fw_jax, r"\bJAX\b|jaxlib|jax\.errors|jax\._src|XlaRuntimeError|JaxRuntimeError|/jax/|jax\.|pjit\(|jit\(|pjrt_stream_executor_client|Execution of replica \d+ failed");
// `Failed to get convolution algorithm. This is probably because cuDNN failed to initialize`
// is TensorFlow's conv kernel's own error (`conv_ops_gpu.cc`), whatever else the paste shows.
grammar!(fw_tf, r"(?i:\btensorflow\b|\bkeras\b)|tensorflow|ResourceExhaustedError|\bkeras|tf\.|report_tensor_allocations_upon_oom|Failed to get convolution (?:algorithm|plans)\. This is probably");
grammar!(fw_torch, r"(?i:\bpytorch\b)|\btorch\.|/torch/|torch\._|OutOfMemoryError: CUDA|Tried to allocate|THCudaCheck|PYTORCH_");
grammar!(exception, r"(?P<e>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|OutOfResources|UnfilteredStackTrace))\s*:");
grammar!(status, r"\b(?P<s>RESOURCE_EXHAUSTED|INTERNAL|UNKNOWN|INVALID_ARGUMENT|UNIMPLEMENTED|FAILED_PRECONDITION|Resource exhausted)\b");
grammar!(training, r"jvp\(|transpose\(jvp|backward|/grad|autograd|\.grad\b|value_and_grad");

/// Frameworks whose traces appear in a text, most specific first.
pub fn frameworks(t: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if fw_vllm().is_match(t) {
        out.push("vllm");
    }
    if fw_torch_xla().is_match(t) {
        out.push("torch_xla");
    }
    if fw_jax().is_match(t) {
        out.push("jax");
    }
    if fw_tf().is_match(t) {
        out.push("tensorflow");
    }
    if fw_torch().is_match(t) {
        out.push("pytorch");
    }
    out
}

/// How far around a message these look (bytes): a line longer than this (a paste joined
/// into one line) is read only this far, so each finding costs the same whatever the block.
const NEAR: usize = 2000;

/// Start of the line holding `at`, or `NEAR` bytes back when the line is longer.
fn line_start_near(t: &str, at: usize) -> usize {
    let before = crate::recognize::window_before(t, at, NEAR);
    at - before.len() + before.rfind('\n').map_or(0, |i| i + 1)
}

/// The exception class that carries the message: the first one on the message's line,
/// else on the line before it.
pub fn exception_near(t: &str, at: usize) -> Option<String> {
    let line_start = line_start_near(t, at);
    let line_end = at + crate::recognize::window(t, at, NEAR).find('\n').unwrap_or(crate::recognize::window(t, at, NEAR).len());
    let line = &t[line_start..line_end];
    if let Some(c) = exception().captures(line) {
        if c.get(0).unwrap().start() <= at - line_start + 1 {
            return Some(c["e"].to_string());
        }
    }
    // The line before (only when the line really starts there, not at the NEAR cut).
    if line_start > 0 && t.as_bytes()[line_start - 1] == b'\n' {
        let prev_start = line_start_near(t, line_start - 1);
        let prev = &t[prev_start..line_start - 1];
        if let Some(c) = exception().captures_iter(prev).last() {
            return Some(c["e"].to_string());
        }
    }
    None
}

/// The absl status code printed before the message on its line.
pub fn status_near(t: &str, at: usize) -> Option<String> {
    let line_start = line_start_near(t, at);
    let seg = crate::recognize::window(t, line_start, at - line_start + 40);
    status().captures_iter(seg).last().map(|c| {
        let s = &c["s"];
        if s == "Resource exhausted" {
            "RESOURCE_EXHAUSTED".to_string()
        } else {
            s.to_string()
        }
    })
}

grammar!(evaluation, r"(?i)\b(?:evaluat(?:e|ion|ing)|validat(?:e|ion|ing)|epochval|validation_step|evaluation_loop|eval_step|prediction_step)\b|\bdef (?:eval|test)\w*|model\.eval\(\)");

// A Python traceback through torch.load's module (either path separator).
grammar!(checkpoint_load, r"torch[/\\]serialization\.py");

// TensorFlow builds a graph-mode variable's initial value under the name scope
// `Initializer` (resource_variable_ops.py), so its ops are named `<variable>/Initializer/...`.
grammar!(variable_initializer, r"\w/Initializer/\w");

// torch.utils.data's own reports of a worker process that died: "DataLoader worker (pid 629) is
// killed by signal: Killed.", "DataLoader worker (pid(s) 2150614) exited unexpectedly", and the
// 0.4 wording without the pid, "DataLoader worker is killed by signal: Killed.".
grammar!(dataloader_worker_died, r"DataLoader worker (?:\(pid(?:\(s\))?[^)\n]*\) )?(?:is killed by signal|exited unexpectedly)");

// PyTorch's DataLoader names its workers when one dies (`DataLoader worker (pid N) is killed by
// signal`, `DataLoader worker (pid(s) N) exited unexpectedly`, torch/utils/data/_utils/signal_handling.py
// and dataloader.py); configs and commands name `num_workers`.
grammar!(worker_processes, r"(?i)DataLoader worker|_MultiProcessingDataLoaderIter|\bnum_workers\b|\bworkers?\b[^\n]{0,40}(?:killed|exited unexpectedly)");

// The model's weights loading: a Python traceback through a loader (vLLM's and text-generation-webui's
// `load_model`, transformers' `from_pretrained`, torch's `load_state_dict`, `load_weights`), TGI's
// launcher when a shard exits before it reports ready ("Shard {rank} failed to start", then
// ShardCannotStart: launcher/src/main.rs:1677-1679 @v3.3.7; warmup runs only after every shard is
// ready, backends/v3/src/lib.rs:125), and KoboldAI's "One of your GPUs ran out of memory when
// KoboldAI tried to load your model." (aiserver.py:2498 @1.19.2). An engine's runtime budgets (KV
// cache, context, batch tokens) do not size this phase.
grammar!(model_loading, r"Shard \d+ failed to start|ShardCannotStart|tried to load your model|, in (?:load_model|from_pretrained|load_state_dict|load_weights)\b");

/// What the block shows of the job, each cue with the knowledge-base condition it sets:
/// a backward pass, an evaluation step, `torch.load` restoring a checkpoint, a TensorFlow
/// variable's initializer (no batch on the device yet), a DataLoader worker that died, and
/// worker processes at all.
const CUES: &[(&str, fn() -> &'static regex::Regex)] = &[
    ("training", training),
    ("evaluation_phase", evaluation),
    ("checkpoint_load", checkpoint_load),
    ("variable_initialization", variable_initializer),
    ("dataloader_worker_killed", dataloader_worker_died),
    ("worker_processes", worker_processes),
    ("model_loading", model_loading),
];

/// The conditions of [`CUES`] that hold in `t`.
pub fn cue_conditions(t: &str) -> impl Iterator<Item = &'static str> + '_ {
    CUES.iter().filter(|(_, cue)| cue().is_match(t)).map(|(condition, _)| *condition)
}
