//! TensorFlow's allocator failure (`tensorflow/core/framework/op_kernel.cc` /
//! `bfc_allocator.cc`): "OOM when allocating tensor with shape[…] and type T on
//! DEVICE by allocator NAME", with the graph node on the next line.

use super::{has, window, Hit};
use crate::grammar;
use oomdoc_kb::{Phase, Platform};
use oomdoc_units::DType;

// The shape may be cut off ("with shape...") or retyped in parentheses ("with shape (1024, 100, 160)"):
// the message is TensorFlow's OOM either way (`tensorflow/core/framework/op_kernel.cc`).
grammar!(oom_tensor, r"OOM when allocating tensor(?: (?:with|of) shape\s*(?:[\[(](?P<dims>[0-9,\s]*)[\])])?)?(?:\s+and type\s+(?P<ty>\w+))?(?:\s+on\s+(?P<dev>[^\s\]]+?))?(?:\s+by allocator\s+(?P<alloc>\w+))?(?:[\s.,\[]|$)");
grammar!(node, r"\[\[\{\{node (?P<n>[^}]+)\}\}\]\]|\[\[Node: (?P<m>[^\s=]+)");

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if !has(t, "OOM when allocating") {
        return;
    }
    let all: Vec<_> = oom_tensor().captures_iter(t).collect();
    for (i, c) in all.iter().enumerate() {
        let m = c.get(0).unwrap();
        // The node named after this message, not after the next one (a title that repeats the
        // headline above a log would take the log's node and cover its message).
        let next = all.get(i + 1).map_or(t.len(), |n| n.get(0).unwrap().start());
        let mut h = Hit::new("tensorflow.oom-tensor", m.start(), m.end());
        let dims: Vec<u64> = c.name("dims").map_or("", |d| d.as_str()).split(',').filter_map(|d| d.trim().parse().ok()).collect();
        if !dims.is_empty() {
            h.culprit.shape = Some(format!("[{}]", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")));
            h.detail("tensor_shape", dims.clone());
        }
        h.culprit.dtype = c.name("ty").map(|t| t.as_str().to_string());
        if let Some(dt) = c.name("ty").and_then(|t| DType::from_name(t.as_str())) {
            let elems = if dims.is_empty() { None } else { dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)) };
            if let Some(bytes) = elems.and_then(|e| e.checked_mul(dt.bits() as u64)).map(|b| b.div_ceil(8)) {
                h.culprit.unpadded_bytes = Some(bytes);
                h.derive(
                    "tensor_bytes",
                    bytes,
                    format!("{} × {} B ({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("×"), dt.bits() / 8, dt),
                );
            }
        }
        let dev = c.name("dev").map(|d| d.as_str().trim_end_matches(['.', ',']).to_string());
        // Host memory only on a CPU device; GPU, TPU and plug-in devices (`device:DML:0` of
        // tensorflow-directml, `XPU`) allocate their own memory.
        let on_cpu = dev.as_deref().is_some_and(|d| d.contains("CPU") || d.contains("cpu"));
        if let Some(d) = &dev {
            h.culprit.device = Some(d.clone());
        }
        if let Some(a) = c.name("alloc") {
            h.detail("allocator", a.as_str());
        }
        if let Some(n) = node().captures(window(&t[..next], m.end(), 1500)) {
            h.culprit.node = n.name("n").or(n.name("m")).map(|x| x.as_str().to_string());
            h.culprit.op = h.culprit.node.clone();
            h.end = m.end() + n.get(0).unwrap().end();
        }
        // The BFC allocator dumps its Stats (Limit, InUse) before the op's "OOM when allocating"
        // line (tensorflow/core/common_runtime/bfc_allocator.cc DumpMemoryLog, then op_kernel.cc's
        // OP_REQUIRES): a paste that starts inside the dump has lost the "ran out of memory trying to
        // allocate" line that would own them. The nearest Stats since the previous message.
        let prev_end = if i == 0 { 0 } else { all[i - 1].get(0).unwrap().end() };
        if let Some(s) = t[prev_end..m.start()].rfind("Stats:") {
            let at = prev_end + s;
            if m.start() - at <= 20_000 && t[at..m.start()].matches('\n').count() <= 40 {
                super::gpu_xla::bfc_dump(t, at, &mut h);
            }
        }
        let on = |kind: &str| dev.as_deref().is_some_and(|d| d.contains(&format!("device:{kind}")) || d.contains(&format!("/{kind}:")));
        h.platform = Some(if dev.as_deref().is_some_and(|d| d.contains("TPU")) {
            Platform::Tpu
        } else if on_cpu {
            Platform::Cpu
        } else if on("DML") {
            Platform::Other
        } else if on("XPU") {
            Platform::Xpu
        } else {
            Platform::Cuda
        });
        h.space(if on_cpu { "host" } else if h.platform == Some(Platform::Tpu) { "hbm" } else { "device" });
        h.phase = Some(Phase::Runtime);
        h.flag("framework_tensorflow");
        h.priority = 8;
        hits.push(h);
    }
}
