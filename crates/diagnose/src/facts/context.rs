//! Facts about the log around a failure: framework, exception class, status code,
//! and settings printed elsewhere in the log (allocator configuration).

use crate::grammar;

grammar!(fw_vllm, r"\bvllm\b|EngineCore|tpu_inference|vllm/");
grammar!(fw_torch_xla, r"torch_xla|Bad StatusOr access|pytorch/xla|xla_util\.cc|XRTExecute|XLA_USE_BF16");
// `Execution of replica N failed` is XLA's PjRt stream-executor client
// (`pjrt_stream_executor_client.cc`): JAX's runtime, or torch_xla's, which wins where it shows;
// TensorFlow's own executor never prints it.
grammar!(fw_jax, r"jaxlib|jax\.errors|jax\._src|XlaRuntimeError|JaxRuntimeError|/jax/|jax\.|pjit\(|jit\(|pjrt_stream_executor_client|Execution of replica \d+ failed");
grammar!(fw_tf, r"tensorflow|ResourceExhaustedError|\bkeras|tf\.|report_tensor_allocations_upon_oom");
grammar!(fw_torch, r"\btorch\.|/torch/|torch\._|OutOfMemoryError: CUDA|Tried to allocate|THCudaCheck|PYTORCH_");
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

pub fn shows_training(t: &str) -> bool {
    training().is_match(t)
}

grammar!(evaluation, r"(?i)\b(?:evaluat(?:e|ion|ing)|validat(?:e|ion|ing)|epochval|validation_step|evaluation_loop|eval_step|prediction_step)\b|\bdef (?:eval|test)\w*|model\.eval\(\)");

/// The failure sits in an evaluation or validation step of the program.
pub fn shows_evaluation(t: &str) -> bool {
    evaluation().is_match(t)
}

// A Python traceback through torch.load's module (either path separator).
grammar!(checkpoint_load, r"torch[/\\]serialization\.py");

/// The failure happens while `torch.load` restores a checkpoint's tensors.
pub fn shows_checkpoint_load(t: &str) -> bool {
    checkpoint_load().is_match(t)
}

// TensorFlow builds a graph-mode variable's initial value under the name scope
// `Initializer` (resource_variable_ops.py), so its ops are named `<variable>/Initializer/...`.
grammar!(variable_initializer, r"\w/Initializer/\w");

/// The failing node initializes a TensorFlow variable: no input batch is on the device yet.
pub fn shows_variable_initialization(t: &str) -> bool {
    variable_initializer().is_match(t)
}

// torch.utils.data's own reports of a worker process that died: "DataLoader worker (pid 629) is
// killed by signal: Killed.", "DataLoader worker (pid(s) 2150614) exited unexpectedly", and the
// 0.4 wording without the pid, "DataLoader worker is killed by signal: Killed.".
grammar!(dataloader_worker_died, r"DataLoader worker (?:\(pid(?:\(s\))?[^)\n]*\) )?(?:is killed by signal|exited unexpectedly)");

/// The log reports a PyTorch DataLoader worker that was killed or exited unexpectedly.
pub fn shows_dataloader_worker_died(t: &str) -> bool {
    dataloader_worker_died().is_match(t)
}
