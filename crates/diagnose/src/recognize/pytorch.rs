//! PyTorch allocator and CUDA/HIP/MPS runtime messages, every generation:
//! `c10/cuda/CUDACachingAllocator.cpp` (THC 0.x, "cached" ~1.0–1.3, "reserved in
//! total by PyTorch" 1.4–2.0, the sentence form since 2.1 with per-process lines,
//! "allowed" caps and private pools), `aten/src/ATen/mps/MPSAllocator.mm`,
//! `c10/cuda/CUDAException.h` (`CUDA error: out of memory`), cuBLAS handle creation.

use super::{has, window, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

grammar!(anchor, r"(?:(?P<dev>CUDA|HIP|XPU|MTIA|NPU) out of memory\.\s*|out of memory\.\s*)?Tried to allocate\s+(?P<req>{SZ})");
grammar!(paren_fragment, r"\(GPU (?P<i>\d+); (?P<total>{SZ}) total capacity; (?P<alloc>{SZ}) already allocated; (?P<free>{SZ}) free;(?: (?P<allowed>{SZ}) allowed;)? (?:(?P<res>{SZ}) reserved in total by PyTorch|(?P<cached>{SZ}) cached)\)");
grammar!(exceed_allowed, r"Allocation on device (?P<i>\d+) would exceed allowed memory");
// The cudaMallocAsync backend's table (c10/cuda/CUDAMallocAsyncAllocator.cpp): one field per line.
grammar!(async_allocated, r"Currently allocated\s*:\s*(?P<v>{SZ})");
grammar!(async_requested, r"Requested\s*:\s*(?P<v>{SZ})");
grammar!(async_device, r"Device limit\s*:\s*(?P<v>{SZ})");
grammar!(async_free, r"Free \(according to CUDA\)\s*:\s*(?P<v>{SZ})");
grammar!(async_cap, r"PyTorch limit \(set by user-supplied memory fraction\)\s*:\s*(?P<v>{SZ})");
grammar!(cuda_error2, r"(?i)cuda\w*(?: \w+){0,3} (?:failed )?with error 2 out of memory");
grammar!(gpu_index, r"\((?P<w>GPU|NPU) (?P<i>\d+);|GPU (?P<j>\d+) has a total capac");
// A console that wraps at word ends (rich, textwrap) drops the space it breaks at, and the
// wrapped pieces are glued back without one: "5.24 GiB already" + "allocated;" reads
// "alreadyallocated". Between the words of these phrases a space may be missing.
grammar!(total, r"(?P<v>{SZ})\s*total\s*capacity|total\s*capac(?:i)?ty\s*of\s*(?P<w>{SZ})");
// (A paste cut at the text's end may stop inside the word: "20.68 GiB already allocate".)
grammar!(allocated, r"(?P<v>{SZ})\s*already\s*allocat(?:ed|e?\s*$)|Of\s*the\s*allocated\s*memory\s*(?P<w>{SZ})\s*is\s*allocated\s*by\s*PyTorch");
grammar!(free, r"(?P<v>{SZ})\s*free[;)]|of\s*which\s*(?P<w>{SZ})\s*is\s*free");
grammar!(reserved, r"(?P<v>{SZ})\s*reserved\s*in\s*total\s*by\s*PyTorch");
grammar!(cached, r"(?P<v>{SZ}) cached\)");
// "and Y is reserved by PyTorch but unallocated" (a paste may cut the last words: the sentence
// form has no other "is reserved by PyTorch").
grammar!(reserved_unalloc, r"(?P<v>{SZ})\s*is\s*reserved\s*by\s*PyTorch(?:\s*but\s*unallocated|\s+b\w*\s*$|\s*$)");
grammar!(process_total, r"this\s*process\s*has\s*(?P<v>{SZ})\s*memory\s*in\s*use");
grammar!(process_line, r"Process\s+(?P<pid>\d+)\s+has\s+(?P<v>{SZ})\s+memory in use");
grammar!(allowed, r"(?P<v>{SZ})\s+allowed;");
grammar!(private_pools, r"with\s+(?P<v>{SZ})\s+allocated in private pools");
// `aten/src/ATen/mps/MPSAllocator.mm` alloc_buffer_block: one buffer larger than the device's
// maximum buffer length (`TORCH_CHECK(size < m_max_buffer_size, "Invalid buffer size: ", format_size(size))`).
// A title may cut or mask the size ("Invalid buffer size: ### GiB"): the message's own words still say it.
// Metal Performance Shaders asserts the same per-object limit for an NDArray: "[MPSNDArray
// initWithDevice:descriptor:] Error: total bytes of NDArray > 2**32" (closed source; wording as pasted in
// pytorch/pytorch#143859 and xinntao/ESRGAN#134). Its "product of dimension sizes > 2**31" counts elements,
// not bytes, and stays out.
grammar!(mps_buffer_size, r"Invalid buffer size:\s*(?P<req>{SZ})?|\[MPS(?:Temporary)?NDArray initWithDevice:descriptor:(?:isTextureBacked:)?\] Error: total bytes of NDArray > 2\*\*32");
grammar!(mps, r"MPS backend out of memory \(MPS allocated:\s*(?P<a>{SZ}),\s*other allocations:\s*(?P<o>{SZ}),\s*max allowed:\s*(?P<m>{SZ})\)\.?(?:\s*Tried to allocate\s+(?P<req>{SZ})(?:\s+on\s+(?P<pool>\w+)\s+pool)?)?");
// A project's own CUDA check may put the failing call's place between "CUDA error:" and the
// runtime's words (XGBoost 0.6x plugin/updater_gpu `device_helpers.cuh` safe_cuda: "CUDA error: " <<
// file << "(" << line << "): " << cudaGetErrorString(code)).
grammar!(cuda_error, r"(?P<dev>CUDA|HIP) error:\s*(?:[^\s()]{1,300}\(\d+\):\s*)?out of memory|(?P<dev2>cudaMalloc|hipMalloc)(?:Async|Managed)? failed:? out of memory|(?P<dev3>CUDA|HIP): out of memory");
grammar!(thc, r"THCudaCheck FAIL file=(?P<file>\S+) line=(?P<line>\d+) error=2 : out of memory");
grammar!(cuda_runtime_error, r"cuda runtime error \(2\) : out of memory(?: at (?P<loc>\S+))?");
grammar!(headline, r"(?P<dev>CUDA|HIP|XPU|NPU|MTIA) out of memory\.");
// PyTorch's own out-of-memory exception classes: `torch.cuda.OutOfMemoryError` (from 1.13) and
// `torch.OutOfMemoryError` (from 2.5; the same class, raised by the CUDA/HIP, XPU and MPS allocators). A
// traceback line that names one is an allocator OOM however much of its message survives (a title or a
// sentence may cut it: "torch.OutOfMemoryError: Allocation on device"). Word ends are ASCII: in a Chinese
// sentence the class name follows a CJK character with no space.
// The classes are `vocabulary::OOM_CLASSES`' PyTorch rows.
grammar!(oom_class, &format!(r"(?P<class>{})(?::[ \t]*(?P<msg>[^\n]{{0,300}}))?", super::vocabulary::oom_class_pattern("pytorch")));
grammar!(rocm_words, r"\bROCm\b|\brocm\b|\bHIP\b|PYTORCH_HIP_ALLOC_CONF|\bamdgpu\b|\bhipMalloc\w*");
grammar!(alloc_failed, r"(?P<lib>CUBLAS|HIPBLAS|CUBLASLT|ROCBLAS|CUSOLVER|CUSPARSE|CUFFT)_STATUS_(?P<st>ALLOC_FAILED|NOT_INITIALIZED)(?: when calling `?(?P<call>[\w:]+\([^)]*\))`?)?");

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "Tried to allocate") {
        allocator(t, hits);
    }
    // The whole message lower-cased (a title, a retyped paste): read with the allocator's own
    // capitals restored, letter for letter, so every offset stays the same.
    if has(t, "tried to allocate") {
        if let Some(restored) = lowercase_restored(t) {
            allocator(&restored, hits);
        }
    }
    if has(t, "total capacity;") {
        for c in paren_fragment().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("pytorch.cuda-oom", m.start(), m.end());
            h.cap_size(SizeKey::Total, &c, "total").cap_size(SizeKey::Allocated, &c, "alloc").cap_size(SizeKey::Free, &c, "free");
            h.cap_size(SizeKey::Reserved, &c, "res").cap_size(SizeKey::ReservedUnallocated, &c, "cached").cap_size(SizeKey::Limit, &c, "allowed");
            h.culprit.device = Some(format!("GPU {}", &c["i"]));
            h.platform = Some(Platform::Cuda);
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.flag("legacy_message").flag("framework_pytorch");
            h.priority = 25;
            hits.push(h);
        }
    }
    if has(t, "would exceed allowed memory") {
        for c in exceed_allowed().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("pytorch.cuda-oom", m.start(), m.end());
            h.culprit.device = Some(format!("GPU {}", &c["i"]));
            h.platform = Some(Platform::Cuda);
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.flag("framework_pytorch");
            h.priority = 10;
            // The table that follows: without a fraction set, the "PyTorch limit" is the
            // backend's UINT64_MAX default, printed as 17179869184.00 GiB (2^34 GiB): no cap.
            let body = window(t, m.end(), 600);
            let field = |re: &regex::Regex| re.captures(body).map(|c| c["v"].to_string());
            let mut end = m.end();
            for (re, key) in [(async_allocated(), SizeKey::Allocated), (async_requested(), SizeKey::Requested), (async_device(), SizeKey::Total), (async_free(), SizeKey::Free)] {
                if let Some(v) = field(re) {
                    h.size(key, &v);
                    end = end.max(m.end() + re.find(body).map_or(0, |x| x.end()));
                }
            }
            match (field(async_cap()).and_then(|v| oomdoc_units::parse_size(&v)), h.get(SizeKey::Total)) {
                (Some(cap), Some(total)) if cap.bytes >= total => {
                    end = end.max(m.end() + async_cap().find(body).map_or(0, |x| x.end()));
                }
                (Some(cap), _) if cap.bytes < 1 << 50 => {
                    h.bytes(SizeKey::Limit, cap.bytes, cap.text.clone());
                    h.flag("memory_fraction_cap");
                    end = end.max(m.end() + async_cap().find(body).map_or(0, |x| x.end()));
                }
                // No table pasted: the message alone does not say whether a fraction was set.
                _ => {}
            }
            // The same table in other paste forms (Markdown bold, quotes, HTML cells): what the
            // fields above did not read, except the cap, which is decided above.
            let after = window(t, m.end(), 900);
            let table_end = after.find("\n\n").unwrap_or(after.len());
            let found = crate::sizes::labeled(&after[..table_end], oomdoc_units::UnitStyle::Binary);
            for l in found.sizes {
                if let Some(k) = l.key.filter(|k| *k != SizeKey::Limit) {
                    if h.get(k).is_none() {
                        h.put(k, l.size);
                        end = end.max(m.end() + l.end);
                    }
                }
            }
            for n in found.notes {
                if !h.size_notes.contains(&n) {
                    h.size_notes.push(n);
                }
            }
            h.end = end;
            hits.push(h);
        }
    }
    if has(t, "OutOfMemoryError") {
        for c in oom_class().captures_iter(t) {
            let m = c.get(0).unwrap();
            let msg = c.name("msg").map_or("", |x| x.as_str().trim());
            // The device the message names. A message cut before its allocator's words ("Allocation on device",
            // or nothing) names neither the device for sure nor the allocator: the generic device entry, on CUDA
            // (PyTorch's usual device, the only one `torch.cuda.OutOfMemoryError` is raised for) unless the log
            // names ROCm, whose builds raise the same class with the same words (the hipified cudaMallocAsync
            // backend prints "Allocation on device" too).
            let rocm = rocm_words().is_match(super::window_before(t, m.start(), 3000)) || rocm_words().is_match(window(t, m.start(), 3000));
            let class = super::vocabulary::oom_class(&c["class"]).expect("a PyTorch row");
            let cuda_only = c["class"].starts_with("torch.cuda.");
            let (id, platform) = if msg.starts_with("CUDA out of memory") {
                ("pytorch.cuda-oom", Platform::Cuda)
            } else if msg.starts_with("HIP out of memory") {
                ("pytorch.hip-oom", Platform::Rocm)
            } else if msg.starts_with("MPS backend out of memory") {
                ("pytorch.mps-oom", Platform::Mps)
            } else if msg.starts_with("XPU") && !cuda_only {
                (class.entry, Platform::Xpu)
            } else if rocm && !cuda_only {
                (class.entry, Platform::Rocm)
            } else {
                (class.entry, class.platform)
            };
            // Sizeless and after every family grammar (the headline alone is 60): the fallback where no other reads the line.
            let mut h = Hit::new(id, m.start(), m.end()).on(platform).during(Phase::Runtime).in_space("device").ranked(65);
            h.flag("framework_pytorch");
            h.detail("exception", m.as_str()[..m.as_str().find(':').unwrap_or(m.as_str().len())].to_string());
            if msg.is_empty() {
                h.likely("only PyTorch's out-of-memory exception class is in the text, not its message: the device is taken to be CUDA's");
            }
            hits.push(h);
        }
    }
    if has(t, "error 2 out of memory") {
        for m in cuda_error2().find_iter(t) {
            let mut h = Hit::new("cuda.error-out-of-memory", m.start(), m.end());
            h.detail("cuda_error_code", 2);
            h.platform = Some(Platform::Cuda);
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.priority = 22;
            hits.push(h);
        }
    }
    if has(t, "Invalid buffer size") || has(t, "total bytes of NDArray") {
        for c in mps_buffer_size().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("pytorch.mps-buffer-size", m.start(), m.end());
            h.platform = Some(Platform::Mps);
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.cap_size(SizeKey::Requested, &c, "req");
            h.flag("framework_pytorch").flag("block_size_limit");
            h.priority = 10;
            hits.push(h);
        }
    }
    if has(t, "MPS backend out of memory") {
        for c in mps().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("pytorch.mps-oom", m.start(), m.end());
            h.cap_size(SizeKey::Allocated, &c, "a").cap_size(SizeKey::Limit, &c, "m").cap_size(SizeKey::Requested, &c, "req");
            if let Some(o) = oomdoc_units::parse_size(&c["o"]) {
                h.detail("other_allocations", o.bytes);
                let a = oomdoc_units::parse_size(&c["a"]).map_or(0, |p| p.bytes);
                if o.bytes > a {
                    h.flag("mps_other_dominant");
                }
            }
            if let Some(p) = c.name("pool") {
                h.detail("pool", p.as_str());
            }
            h.platform = Some(Platform::Mps);
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.flag("framework_pytorch");
            h.priority = 10;
            hits.push(h);
        }
    }
    if has(t, "out of memory") {
        for c in cuda_error().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("cuda.error-out-of-memory", m.start(), m.end());
            let dev = c.name("dev").or(c.name("dev2")).or(c.name("dev3")).map_or("CUDA", |d| d.as_str());
            h.platform = Some(if dev.starts_with("HIP") || dev.starts_with("hip") { Platform::Rocm } else { Platform::Cuda });
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.priority = 20;
            hits.push(h);
        }
        for c in thc().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("cuda.error-out-of-memory", m.start(), m.end());
            let file = c["file"].rsplit('/').next().unwrap_or("").to_string();
            h.detail("location", format!("{}:{}", file, &c["line"]));
            h.detail("cuda_error_code", 2);
            legacy_runtime(&mut h);
            hits.push(h);
        }
        for c in cuda_runtime_error().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("cuda.error-out-of-memory", m.start(), m.end());
            if let Some(l) = c.name("loc") {
                h.detail("location", l.as_str().rsplit('/').next().unwrap_or("").to_string());
            }
            h.detail("cuda_error_code", 2);
            legacy_runtime(&mut h);
            hits.push(h);
        }
    }
    if has(t, "_ALLOC_FAILED") || has(t, "_NOT_INITIALIZED") {
        for c in alloc_failed().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("cuda.cublas-alloc-failed", m.start(), m.end());
            let lib = &c["lib"];
            h.platform = Some(if lib.starts_with("HIP") || lib.starts_with("ROC") { Platform::Rocm } else { Platform::Cuda });
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.detail("library_status", format!("{lib}_STATUS_{}", &c["st"]));
            if &c["st"] == "NOT_INITIALIZED" {
                // cuBLAS reports a failed workspace allocation at handle creation this way.
                h.confidence = crate::finding::Confidence::Likely;
            }
            if let Some(call) = c.name("call") {
                h.culprit.op = Some(call.as_str().to_string());
            }
            h.priority = 15;
            hits.push(h);
        }
    }
    // Only the allocator's first sentence was pasted ("RuntimeError: CUDA out of memory."):
    // the same failure, without numbers. Weakest, so the full message wins where present.
    if has(t, " out of memory.") {
        for c in headline().captures_iter(t) {
            let m = c.get(0).unwrap();
            let (id, platform) = device_entry(&c["dev"]);
            let mut h = Hit::new(id, m.start(), m.end());
            h.platform = Some(platform);
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.flag("framework_pytorch");
            h.priority = 60;
            hits.push(h);
        }
    }
}

/// The entry and platform of an allocator message by its device word. Intel GPUs
/// (PyTorch XPU, IPEX) and Ascend NPUs (torch_npu) have their own fixes.
fn device_entry(dev: &str) -> (&'static str, Platform) {
    match dev {
        "HIP" => ("pytorch.hip-oom", Platform::Rocm),
        "CUDA" => ("pytorch.cuda-oom", Platform::Cuda),
        "XPU" => ("xpu.out-of-memory", Platform::Xpu),
        "NPU" => ("npu.out-of-memory", Platform::Npu),
        _ => ("pytorch.cuda-oom", Platform::Other),
    }
}

fn legacy_runtime(h: &mut Hit) {
    h.platform = Some(Platform::Cuda);
    h.phase = Some(Phase::Runtime);
    h.space("device");
    h.flag("legacy_message");
    h.flag("framework_pytorch");
    h.priority = 18;
}

/// `t` with each all-lowercase line that holds "tried to allocate" given the allocator's capitals
/// back (device names, "Tried", size units, "PyTorch"); None when there is no such line.
fn lowercase_restored(t: &str) -> Option<String> {
    static UNIT: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let unit = UNIT.get_or_init(|| regex::Regex::new(r"(?P<n>\d) ?(?P<u>[kmgtpe]i?b)\b").expect("unit"));
    let mut out = String::with_capacity(t.len());
    let mut changed = false;
    for line in t.split_inclusive('\n') {
        if !line.contains("tried to allocate") || line.chars().any(|ch| ch.is_ascii_uppercase()) {
            out.push_str(line);
            continue;
        }
        changed = true;
        let mut l = line.to_string();
        for (from, to) in [("cuda out of memory", "CUDA out of memory"), ("hip out of memory", "HIP out of memory"), ("xpu out of memory", "XPU out of memory"), ("tried to allocate", "Tried to allocate"), ("(gpu ", "(GPU "), ("pytorch", "PyTorch")] {
            l = l.replace(from, to);
        }
        let l = unit.replace_all(&l, |c: &regex::Captures| {
            let u = &c["u"];
            let mut fixed = u[..1].to_ascii_uppercase();
            fixed.push_str(&u[1..u.len() - 1]);
            fixed.push('B');
            format!("{}{}", &c[0][..c[0].len() - u.len()], fixed)
        });
        out.push_str(&l);
    }
    changed.then_some(out)
}

/// The caching allocator's message, parsed field by field so that every
/// generation's wording (and their mixtures in forks) is read the same way.
fn allocator(t: &str, hits: &mut Vec<Hit>) {
    let anchors: Vec<_> = anchor().captures_iter(t).collect();
    for (i, c) in anchors.iter().enumerate() {
        let m = c.get(0).unwrap();
        let next = anchors.get(i + 1).map_or(t.len(), |n| n.get(0).unwrap().start());
        let body = &t[m.end()..next];
        let body = window(body, 0, 3000);
        let dev = c.name("dev").map_or("CUDA", |d| d.as_str());
        // Without a device word it must at least look like the allocator (sizes in parentheses or sentences).
        if c.name("dev").is_none() && !(body.contains("total capac") || body.contains("already allocated") || body.contains("is free")) {
            continue;
        }
        let (id, platform) = device_entry(dev);
        // The message's start: include the exception class written before it.
        let mut h = Hit::new(id, m.start(), m.end());
        h.platform = Some(platform);
        h.phase = Some(Phase::Runtime);
        h.space("device");
        h.flag("framework_pytorch");
        h.priority = 5;
        h.size(SizeKey::Requested, c["req"].trim_end_matches('.'));
        let mut end = m.end();
        let mut take = |re: &regex::Regex, h: &mut Hit, key: Option<SizeKey>| -> Option<String> {
            let cap = re.captures(body)?;
            let g = cap.name("v").or_else(|| cap.name("w")).or_else(|| cap.name("c"))?;
            end = end.max(m.end() + cap.get(0).unwrap().end());
            if let Some(k) = key {
                h.size(k, g.as_str());
            }
            Some(g.as_str().to_string())
        };
        take(total(), &mut h, Some(SizeKey::Total));
        take(allocated(), &mut h, Some(SizeKey::Allocated));
        take(free(), &mut h, Some(SizeKey::Free));
        take(reserved(), &mut h, Some(SizeKey::Reserved));
        take(reserved_unalloc(), &mut h, Some(SizeKey::ReservedUnallocated));
        // PyTorch <= 1.3 printed `amount_cached - amount_allocated` as "cached".
        take(cached(), &mut h, Some(SizeKey::ReservedUnallocated));
        take(process_total(), &mut h, Some(SizeKey::Used));
        take(allowed(), &mut h, Some(SizeKey::Limit));
        if let Some(p) = take(private_pools(), &mut h, None) {
            if let Some(b) = oomdoc_units::parse_size(&p) {
                h.detail("private_pools", b.bytes);
                if b.bytes > 0 {
                    h.flag("private_pools");
                }
            }
        }
        if h.get(SizeKey::Limit).is_some() {
            h.flag("memory_fraction_cap");
        }
        let procs: Vec<serde_json::Value> = process_line()
            .captures_iter(body)
            .filter_map(|p| {
                end = end.max(m.end() + p.get(0).unwrap().end());
                Some(serde_json::json!({"pid": p["pid"].parse::<u64>().ok()?, "bytes": oomdoc_units::parse_size(&p["v"])?.bytes, "printed": p["v"].to_string()}))
            })
            .collect();
        if !procs.is_empty() {
            h.detail("processes", procs);
        }
        if let Some(g) = gpu_index().captures(body) {
            let idx = g.name("i").or(g.name("j")).map(|x| x.as_str()).unwrap_or("?");
            h.culprit.device = Some(format!("{} {idx}", g.name("w").map_or("GPU", |w| w.as_str())));
        }
        if body.contains("total capacity;") || body.contains(" cached)") {
            h.flag("legacy_message");
        }
        if body.contains("cached)") {
            h.detail("cached_label", true);
        }
        // The hint sentence names the allocator-config variable this build reads.
        for var in ["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_NPU_ALLOC_CONF", "PYTORCH_XPU_ALLOC_CONF", "PYTORCH_ALLOC_CONF"] {
            if body.contains(var) {
                h.detail("hint_env_var", var);
                break;
            }
        }
        // End of the message: the hint or documentation pointer if present.
        for tail in ["environment-variables)", "pytorch-cuda-alloc-conf)", "Memory Management", "PYTORCH_CUDA_ALLOC_CONF", "avoid fragmentation."] {
            if let Some(p) = body.find(tail) {
                end = end.max(m.end() + p + tail.len());
                break;
            }
        }
        h.end = end;
        hits.push(h);
    }
}
