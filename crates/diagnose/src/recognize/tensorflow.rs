//! TensorFlow's allocator failure (`tensorflow/core/framework/op_kernel.cc` /
//! `bfc_allocator.cc`): "OOM when allocating tensor with shape[…] and type T on
//! DEVICE by allocator NAME", with the graph node on the next line; and TensorFlow's own status
//! class (`vocabulary::OOM_CLASSES`: `ResourceExhaustedError`) where its message says memory in
//! other words, as eager ops raise it ("ResourceExhaustedError: failed to allocate memory
//! [Op:AddV2]", the op after the message as `tensorflow/python/eager` appends it).

use super::{has, vocabulary, window, window_before, Hit};
use crate::grammar;
use oomdoc_kb::{Phase, Platform};
use oomdoc_units::DType;

// The shape may be cut off ("with shape...") or retyped in parentheses ("with shape (1024, 100, 160)"):
// the message is TensorFlow's OOM either way (`tensorflow/core/framework/op_kernel.cc`).
grammar!(oom_tensor, r"OOM when allocating tensor(?: (?:with|of) shape\s*(?:[\[(](?P<dims>[0-9,\s]*)[\])])?)?(?:\s+and type\s+(?P<ty>\w+))?(?:\s+on\s+(?P<dev>[^\s\]]+?))?(?:\s+by allocator\s+(?P<alloc>\w+))?(?:[\s.,\[]|$)");
// The class with its message on the same line; the message must say memory (the class is also raised for quotas,
// full disks, gRPC message limits).
grammar!(tf_class, &format!(r"(?P<class>{}):[ \t]*(?P<msg>[^\n]{{1,300}})", vocabulary::oom_class_pattern("tensorflow")));
grammar!(memory_words, r"(?i)\bfailed to allocate\b|\bout of memory\b|^OOM\b|\b(?:cannot|unable to|could not) allocate\b|\bmemory allocation failed\b");
grammar!(eager_op, r"\[Op:(?P<op>\w+)\]");
// Which memory the log names around the class: TensorFlow's GPU BFC allocator and devices, or its CPU device.
grammar!(tf_gpu, r"\bGPU_\d+_bfc\b|\bbfc_allocator\b|/device:GPU:\d|\bgpu_device\b|\bGPU\b");
grammar!(tf_cpu, r"/device:CPU:\d|\bcpu_bfc\b|\bcpu_allocator\b");
grammar!(node, r"\[\[\{\{node (?P<n>[^}]+)\}\}\]\]|\[\[Node: (?P<m>[^\s=]+)");

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    oom_tensor_hits(t, hits);
    if has(t, "ResourceExhaustedError") && !hits.iter().any(|h| h.id == "tensorflow.oom-tensor" || h.id == "bfc.allocator-oom") {
        status_class(t, hits);
    }
}

/// TensorFlow's status class with a memory message that no grammar reads: its device OOM entry, on the memory
/// the log names (the GPU's BFC allocator, whose dump gives the pool's sizes, or the CPU device).
fn status_class(t: &str, hits: &mut Vec<Hit>) {
    for c in tf_class().captures_iter(t) {
        let msg = c.name("msg").unwrap();
        if !memory_words().is_match(msg.as_str().trim_start()) || msg.as_str().trim_start().starts_with("OOM when allocating") {
            continue;
        }
        let m = c.get(0).unwrap();
        let Some(class) = vocabulary::oom_class(&c["class"]) else { continue };
        let around = format!("{}{}", window_before(t, m.start(), 3000), window(t, m.start(), 3000));
        let (platform, space) = if tf_cpu().is_match(&around) && !tf_gpu().is_match(&around) {
            (Platform::Cpu, "host")
        } else {
            (class.platform, "device")
        };
        let mut h = Hit::new(class.entry, m.start(), m.end()).on(platform).during(Phase::Runtime).in_space(space).ranked(64);
        h.flag("framework_tensorflow");
        h.detail("exception", c["class"].to_string());
        if let Some(op) = eager_op().captures(msg.as_str()) {
            h.culprit.op = Some(op["op"].to_string());
        }
        if space == "device" && !tf_gpu().is_match(&around) {
            h.likely("TensorFlow's status class says memory but the log names no device: its GPU device is taken");
        }
        // The BFC allocator's dump around the failure (TensorFlow logs it before the exception; a paste may put it after).
        let before = m.start().saturating_sub(1 << 20);
        let mut from = before;
        while !t.is_char_boundary(from) {
            from += 1;
        }
        super::gpu_xla::bfc_dump(t, from, &mut h);
        hits.push(h);
    }
}

fn oom_tensor_hits(t: &str, hits: &mut Vec<Hit>) {
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
