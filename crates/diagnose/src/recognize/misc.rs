//! Everything else: Tenstorrent's L1 allocator, Hugging Face accelerate's batch-size finder,
//! DeepSpeed-Inference's workspace, TVM's planned storage regions (MLC-LLM), ExLlama's auto-split,
//! FlashInfer's workspace allocator, MindSpore's device memory pool, Habana Synapse's recipe size
//! check, Xilinx XRT's buffer-object allocation (host-side OOMs live in `host.rs`, serving engines in
//! `serving.rs`).

use super::{has, window_before, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

/// Literals that can start a block for this module's messages that no other list holds (each holds a scan anchor).
pub const TRIGGERS: &[&str] = &[
    // FlashInfer's allocator message as users quote it ("Buffer overflow: needed N bytes, had M bytes").
    "Buffer overflow",
    "is more than total mem size",
    "hbm memory size",
    "ERROR: std::bad_alloc",
];

// tt-metal `BankManager::allocate_buffer`: "Out of Memory: Not enough space to allocate {} B {} buffer across {} banks, ..."
// with the buffer type of `BufferType` (`DRAM`, `L1`, `L1_SMALL`, `TRACE`); a title may drop the size and the banks.
grammar!(tt_l1, r"Not enough space to allocate (?:(?P<req>\d+) B )?(?P<kind>DRAM|L1(?:_SMALL)?|TRACE|SYSTEM_MEMORY|\w+) buffer(?: across (?P<banks>\d+) banks?, where each bank needs to store (?P<per>\d+) B(?:, but bank size is (?:only )?(?P<size>\d+) B(?: \(allocated: (?P<alloc>\d+) B, free: (?P<free>\d+) B, largest free block: (?P<lfb>\d+) B\))?)?)?");
// Older tt-metal builds printed TT_THROW's format string unformatted, with each argument on a line of its own
// after it (tenstorrent/tt-metal#7933: `... {} B {} buffer across {} banks, where each bank needs to store {} B`,
// then `148897792`, `DRAM`, `8`, `18612224`; a paste may join the first to the message's line).
grammar!(tt_l1_unformatted, r"Not enough space to allocate \{\} B \{\} buffer across \{\} banks, where each bank needs to store \{\} B\s*(?P<req>\d+)[ \t]*\r?\n\s*(?P<kind>DRAM|L1(?:_SMALL)?|TRACE|SYSTEM_MEMORY|\w+)[ \t]*\r?\n\s*(?P<banks>\d+)[ \t]*\r?\n\s*(?P<per>\d+)\b");
// tt-metal `Program::validate_circular_buffer_region`: the program's statically allocated circular buffers
// (growing down from the top of L1) reach the L1 buffers (growing up). Wording as the maintainers quote it
// in tenstorrent/tt-metal#28835; not re-read at a tag (the repository is too large to fetch here).
grammar!(tt_cb_clash, r"Statically allocated circular buffers (?:in program \d+ )?clash with L1 buffers on core range [^\n.]*\.(?: L1 buffer allocated at (?P<l1>\d+) and static circular buffer region ends at (?P<cb>\d+))?");

// OpenVINO's GPU plugin (`src/plugins/intel_gpu/src/runtime/ocl/ocl_common.hpp`, as merged in
// openvinotoolkit/openvino#29062 and its earlier force-exit form in #16724) turns CL_OUT_OF_RESOURCES into this
// message: "... Please try to update the driver or reduce memory consumption (use smaller batch size, less
// streams, lower precision, etc)to avoid CL_OUT_OF_RESOURCES exception". The plugin itself says the status is a
// real out-of-resources or a lost device: likely, not certain.
grammar!(ov_cl_resources, r"(?:GPU plugin can't finish correctly\.?\s+)?Please try to update the driver or reduce memory consumption \(use smaller batch size, less streams, lower precision, etc\)\s?to avoid CL_OUT_OF_RESOURCES exception");

// CTranslate2 `src/cuda/utils.h` CUDA_CHECK (v4.8.1): "CUDA failed with error " + cudaGetErrorString(code), so a
// failed allocation reads "CUDA failed with error out of memory" (faster-whisper, whisperX, Buzz, Tabby, ...).
grammar!(ct2_cuda_oom, r"(?i:CUDA failed with error out of memory)");

// LMDeploy TurboMind `src/turbomind/utils/cuda_utils.h`: "[TM][ERROR] CUDA runtime error: " + the CUDA error + " file:line"
// (thrown up to v0.7, logged without the prefix from v0.9); the file is TurboMind's (allocator.h, memory_utils.cu).
grammar!(turbomind_oom, r"\[TM\]\[ERROR\] CUDA runtime error: out of memory|CUDA runtime error: out of memory \S*turbomind\S*");

// Thrust's exceptions (NVIDIA/thrust, read at 1.9.3, 1.9.4 and 2.1.0): `thrust::system::detail::bad_alloc`
// (`thrust/system/detail/bad_alloc.h`) has what() = std::bad_alloc's own what() + ": " + its argument, and the
// CUDA backend throws it when its device allocation fails (`system/cuda/detail/malloc_and_free.h`,
// `system/cuda/memory_resource.h`) with `cuda_category().message(status)`: cudaGetErrorString's "out of memory",
// from 1.9.4 (commit 0938485d) prefixed with the enumerator, "cudaErrorMemoryAllocation: out of memory".
// `thrust::system::system_error` (`system/detail/system_error.inl`) has what() = its argument + ": " + the same
// category message; projects throw it for a failed CUDA call (XGBoost's `dh::safe_cuda`: the argument is
// `file(line)`). Thrust's other bad_alloc throws (`malloc_allocator`, `temporary_allocator`) say "malloc failed" /
// "get_temporary_buffer failed", never "out of memory", and the system category's ENOMEM reads "Cannot allocate
// memory": "out of memory" in their what() is the CUDA runtime's (thrust 2.x adds an ABI namespace after `thrust::`).
// MSVC's std::bad_alloc::what() is "bad allocation" instead of "std::bad_alloc".
grammar!(
    thrust_oom,
    r"thrust::(?:\w+::)?system::(?P<class>detail::bad_alloc|system_error)'?(?:\s+what\(\):)?[ \t]+(?:std::bad_alloc: |bad allocation: )?(?P<what>[^\n]{0,400}?)\b(?:cudaErrorMemoryAllocation: out of memory|out of memory)\b"
);

// accelerate `utils/memory.py` find_executable_batch_size: lowers the batch size (x 0.9 from 1.9.0,
// halved before) after every exception its should_reduce_batch_size takes for an OOM, and raises
// this at zero.
grammar!(no_batch_size, r"No executable batch size found, reached zero\.?");

// FlashInfer `include/flashinfer/allocator.h` AlignedAllocator: a bump allocator over the
// workspace buffer its caller (vLLM, SGLang) passed in. Since PR 1357: "Buffer overflow when
// allocating memory for NAME with size N and alignment A, but only M bytes available in
// AlignedAllocator. Increase the workspace buffer size."; before: "Failed to allocate memory
// for NAME with size N and alignment A in AlignedAllocator"; older still: "Out of workspace
// memory in AlignedAlloactor" (sic). The lines may be wrapped.
grammar!(
    flashinfer_ws,
    r"(?:Buffer overflow when allocating|Failed to allocate) memory for (?P<name>\w+)\s+with size (?P<req>\d+) and alignment \d+(?:,\s+but only (?P<free>\d+) bytes available)?\s+in AlignedAllocator\.?(?:\s+(?:Please i|I)ncrease the workspace buffer size\.)?|Out of workspace memory in AlignedAllo(?:ca|ac)tor|\bonly (?P<free2>\d+) bytes available in AlignedAllocator\.?(?:\s+Increase the workspace\s+buffer size\.)?"
);

// The same failure as users quote it from a crash log, the numbers kept and the words shortened (vllm-project/vllm#40383:
// "Buffer overflow: needed 536,346,624 bytes(511MiB), had 413,138,944 bytes"): "needed" is the size asked, "had" the
// bytes left in the workspace. Read only where FlashInfer or its allocator is named nearby.
grammar!(flashinfer_quoted, r"Buffer overflow(?::| when allocating[^\n,]{0,80})[ \t]*needed (?P<req>\d[\d,]*) bytes[^\n,]{0,20},[ \t]*had (?P<free>\d[\d,]*) bytes");
grammar!(flashinfer_named, r"(?i)\bflashinfer\b|AlignedAllocator|allocator\.h");

// MindSpore's device memory pool (`mindspore/ccsrc/backend/common/mem_reuse/mem_dynamic_allocator.cc`,
// DynamicMemPoolBestFit::AddMemBlockAndMemBufByEagerFree, read at mindspore-ai/mindspore@01ee00b57d0ba3d540d4b0e53d24f087626a4887):
// when what the pool holds in use, plus what events hold, plus the request exceed the pool's total it logs this at
// ERROR and returns no memory. (Its "Memory not enough: ... is smaller than required size" lines are WARNINGs after
// which the pool still tries to free and reuse memory: not failures by themselves.)
grammar!(mindspore_pool, r"TotalUsedMemStatistics : (?P<used>\d+) plus TotalUsedByEventMemStatistics : (?P<event>\d+) and plus alloc size : (?P<req>\d+) is more than total mem size : (?P<total>\d+)\.?");
// (ASCII word ends: a Chinese sentence names the device with no space around it, "在npu上".)
grammar!(mindspore_npu, r"(?-u:\b)(?:Ascend|npu|NPU|CANN|ascend\w*)(?-u:\b)");
grammar!(mindspore_gpu, r"(?-u:\b)(?:GPU|CUDA|cuda\w*)(?-u:\b)|mindspore-gpu");

// Habana Synapse (closed source; the wording as its runtime log prints it, huggingface/optimum-habana#1722): a
// compiled graph (recipe) whose global HBM memory exceeds what the queue it is to run on may address fails the
// graph compile ("Graph compile failed. synStatus=synStatus 26 [Generic failure]" in PyTorch); the limit follows
// where the line is whole.
grammar!(synapse_recipe, r"recipe global hbm memory size (?P<req>\d+) exceeds (?P<queue>\w+) hbm(?: global memory size limit (?P<lim>\d+))?");

// Xilinx XRT (read at Xilinx/XRT@2.25.0): the embedded shim's xclAllocBO throws std::bad_alloc when the kernel
// driver cannot create the buffer object (`src/runtime_src/core/edge/user/shim.cpp`, DRM_IOCTL_ZOCL_CREATE_BO), and
// the OpenCL layer's clCreateBuffer catches a std::bad_alloc, prints its what() as an XRT error message and returns
// CL_OUT_OF_RESOURCES (`src/runtime_src/xocl/api/clCreateBuffer.cpp`): "[XRT] ERROR: std::bad_alloc" is a device
// buffer that could not be allocated.
grammar!(xrt_bad_alloc, r"\[XRT\] ERROR: std::bad_alloc");

// DeepSpeed `csrc/transformer/inference/includes/inference_context.h` GenWorkSpace: with less free
// device memory than the workspace's minimum it prints "Requested:\t%lu\nFree:\t%lu\nTotal:\t%lu\n"
// (bytes; free and total from cudaMemGetInfo) and throws "Workspace can't be allocated, no enough
// memory."; when the room left holds fewer tokens than `min_out_tokens` it prints "Allocatable workspace
// available (%ld tokens) is less than minimum requested workspace (%d tokens)" and throws "..., not
// enough memory".
// When the free memory passed those checks but `cudaMalloc` of the workspace still failed, it prints the same
// table and throws "Workspace is null." (`inference_context.h` GenWorkSpace, v0.19.5).
grammar!(ds_workspace, r"Workspace can't be allocated, no(?:t)? enough memory\.?|Workspace is null\.?");
grammar!(ds_table, r"Requested:\s*(?P<req>\d+)\s+Free:\s*(?P<free>\d+)\s+Total:\s*(?P<total>\d+)");
grammar!(ds_tokens, r"Allocatable workspace available \((?P<avail>-?\d+) tokens\) is less than minimum requested workspace \((?P<min>\d+) tokens\)");

// Apache TVM (MLC-LLM): `src/runtime/memory/memory_manager.cc` StorageObj::AllocTensor checks a tensor
// against the region memory planning gave it ("storage allocation failure, attempted to allocate %zu at
// offset %lld in region that is %zu" "bytes", no space between); the thrust contrib's workspace
// allocator: "Failed to allocate %zu bytes with alignment %zu bytes." (thrust is CUDA/ROCm only).
grammar!(tvm_region, r"storage allocation failure, attempted to allocate (?P<req>\d+) at offset (?P<off>\d+) in region that is (?P<size>\d+)\s*bytes");
grammar!(tvm_thrust, r"Check failed: \(result\) is false: Failed to allocate (?P<req>\d+) bytes with alignment (?P<align>\d+) bytes");

// ExLlamaV2 `model.py` load_autosplit / ExLlamaV3 `model/model_ls.py`: each module that hits a CUDA or
// HIP out-of-memory error moves to the next GPU; past the last one they raise this.
grammar!(exllama_split, r"Insufficient VRAM (?:in split )?for model and cache");

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "for model and cache") {
        for m in exllama_split().find_iter(t) {
            let mut h = Hit::new("exllama.insufficient-vram", m.start(), m.end());
            h.platform = Some(if window_before(t, m.start(), 4000).contains("HIP") { Platform::Rocm } else { Platform::Cuda });
            h.phase = Some(Phase::Load);
            h.space("device");
            h.priority = 10;
            hits.push(h);
        }
    }
    if has(t, "storage allocation failure") || has(t, "bytes with alignment") {
        for (c, thrust) in tvm_region().captures_iter(t).map(|c| (c, false)).chain(tvm_thrust().captures_iter(t).map(|c| (c, true))) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("tvm.planned-region", m.start(), m.end());
            let num = |g: &str| c.name(g).and_then(|v| v.as_str().parse::<u64>().ok());
            if let Some(v) = num("req") {
                h.bytes(SizeKey::Requested, v, format!("{v} bytes"));
            }
            if let Some(v) = num("size") {
                h.bytes(SizeKey::Limit, v, format!("{v} bytes"));
            }
            // The model library's name (`…-cuda.so`, `…-metal.so`) or the runtime's words say the device.
            let before = window_before(t, m.start(), 4000);
            let lower = before.to_ascii_lowercase();
            h.platform = Some(if thrust || lower.contains("cuda") {
                Platform::Cuda
            } else if lower.contains("rocm") {
                Platform::Rocm
            } else if lower.contains("metal") {
                Platform::Metal
            } else {
                Platform::Other
            });
            h.detail("allocator", if thrust { "thrust workspace" } else { "storage region" });
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.priority = 10;
            hits.push(h);
        }
    }
    if has(t, "Workspace can't be allocated") || has(t, "Workspace is null") {
        for m in ds_workspace().find_iter(t) {
            let mut h = Hit::new("deepspeed.inference-workspace", m.start(), m.end());
            // The table DeepSpeed printed just before raising (a traceback may stand between).
            let before = window_before(t, m.start(), 20_000);
            if let Some(c) = ds_table().captures_iter(before).last() {
                for (key, group) in [(SizeKey::Requested, "req"), (SizeKey::Free, "free"), (SizeKey::Total, "total")] {
                    if let Ok(v) = c[group].parse::<u64>() {
                        h.bytes(key, v, c[group].to_string());
                    }
                }
                h.start = m.start() - before.len() + c.get(0).unwrap().start();
            }
            if let Some(c) = ds_tokens().captures_iter(before).last() {
                h.detail("workspace_tokens", c["avail"].parse::<i64>().ok()).detail("min_out_tokens", c["min"].parse::<u64>().ok());
                h.flag("min_out_tokens");
            }
            h.platform = Some(Platform::Cuda);
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.priority = 10;
            hits.push(h);
        }
    }
    if has(t, "AlignedAllo") {
        for c in flashinfer_ws().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("flashinfer.workspace-overflow", m.start(), m.end());
            let num = |g: &str| c.name(g).and_then(|v| v.as_str().parse::<u64>().ok());
            if let Some(v) = num("req") {
                h.bytes(SizeKey::Requested, v, format!("{v} bytes"));
            }
            if let Some(v) = num("free").or(num("free2")) {
                h.bytes(SizeKey::Free, v, format!("{v} bytes"));
            }
            if let Some(n) = c.name("name") {
                h.detail("buffer", n.as_str());
            }
            h.platform = Some(Platform::Cuda);
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.priority = 10;
            hits.push(h);
        }
    }
    if has(t, "Buffer overflow") && flashinfer_named().is_match(t) {
        for c in flashinfer_quoted().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("flashinfer.workspace-overflow", m.start(), m.end()).on(Platform::Cuda).during(Phase::Runtime).in_space("device").ranked(10);
            let num = |g: &str| c[g].replace(',', "").parse::<u64>().ok();
            if let Some(v) = num("req") {
                h.bytes(SizeKey::Requested, v, format!("{} bytes", &c["req"]));
            }
            if let Some(v) = num("free") {
                h.bytes(SizeKey::Free, v, format!("{} bytes", &c["free"]));
            }
            hits.push(h);
        }
    }
    if has(t, "is more than total mem size") {
        for c in mindspore_pool().captures_iter(t) {
            let m = c.get(0).unwrap();
            let around = format!("{}{}", window_before(t, m.start(), 3000), super::window(t, m.end(), 3000));
            let platform = if mindspore_npu().is_match(&around) {
                Platform::Npu
            } else if mindspore_gpu().is_match(&around) {
                Platform::Cuda
            } else {
                Platform::Other
            };
            let mut h = Hit::new("generic.device-oom", m.start(), m.end()).on(platform).during(Phase::Runtime).in_space("device").ranked(10);
            let num = |g: &str| c[g].parse::<u64>().ok();
            if let (Some(u), Some(e)) = (num("used"), num("event")) {
                h.bytes(SizeKey::Used, u + e, if e == 0 { c["used"].to_string() } else { format!("{} + {}", &c["used"], &c["event"]) });
            }
            if let Some(v) = num("req") {
                h.bytes(SizeKey::Requested, v, c["req"].to_string());
            }
            if let Some(v) = num("total") {
                h.bytes(SizeKey::Total, v, c["total"].to_string());
            }
            h.detail("allocator", "MindSpore DynamicMemPoolBestFit");
            hits.push(h);
        }
    }
    if has(t, "hbm memory size") {
        for c in synapse_recipe().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("generic.device-oom", m.start(), m.end()).on(Platform::Other).during(Phase::Compile).in_space("device").ranked(10);
            if let Ok(v) = c["req"].parse::<u64>() {
                h.bytes(SizeKey::Requested, v, c["req"].to_string());
            }
            if let Some(v) = c.name("lim").and_then(|v| v.as_str().parse::<u64>().ok()) {
                h.bytes(SizeKey::Limit, v, v.to_string());
            }
            h.detail("runtime", "habana-synapse").detail("queue", c["queue"].to_string()).detail("memory", "recipe global HBM");
            hits.push(h);
        }
    }
    if has(t, "ERROR: std::bad_alloc") {
        for m in xrt_bad_alloc().find_iter(t) {
            let mut h = Hit::new("generic.device-oom", m.start(), m.end()).on(Platform::Other).during(Phase::Runtime).in_space("device").ranked(10);
            h.detail("runtime", "xrt").detail("wording", "std::bad_alloc");
            hits.push(h);
        }
    }
    if has(t, "No executable batch size") {
        for m in no_batch_size().find_iter(t) {
            let mut h = Hit::new("accelerate.no-batch-size", m.start(), m.end());
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.likely("accelerate's batch-size finder lowers the batch after each out-of-memory error (and the few cuDNN errors it treats alike) and stops at zero: even one sample did not fit");
            h.priority = 12;
            hits.push(h);
        }
    }
    if has(t, "Not enough space to allocate") {
        for c in tt_l1().captures_iter(t).chain(tt_l1_unformatted().captures_iter(t)) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("tenstorrent.l1", m.start(), m.end());
            let num = |g: &str| c.name(g).and_then(|v| v.as_str().parse::<u64>().ok());
            if let Some(v) = num("req") {
                h.bytes(SizeKey::Requested, v, format!("{v} B"));
            }
            if let Some(v) = num("size") {
                h.bytes(SizeKey::Limit, v, format!("{v} B"));
            }
            if let Some(v) = num("alloc") {
                h.bytes(SizeKey::Allocated, v, format!("{v} B"));
            }
            if let Some(v) = num("free") {
                h.bytes(SizeKey::Free, v, format!("{v} B"));
            }
            h.detail("banks", num("banks")).detail("per_bank_bytes", num("per"));
            if let Some(v) = num("lfb") {
                h.detail("largest_free_block", v);
            }
            // `L1` and `L1_SMALL` are the cores' SRAM; the other buffer types live in device DRAM.
            h.space(if c["kind"].starts_with("L1") { "l1" } else { "device" });
            h.platform = Some(Platform::Other);
            h.phase = Some(Phase::Runtime);
            h.priority = 10;
            hits.push(h);
        }
    }
    // Engines that print the CUDA runtime's cudaErrorMemoryAllocation in words of their own.
    let engines: [(&str, &regex::Regex, &str); 2] = [
        ("CUDA runtime error: out of memory", turbomind_oom(), "lmdeploy.turbomind-oom"),
        ("failed with error out of memory", ct2_cuda_oom(), "ctranslate2.cuda-oom"),
    ];
    for (needle, grammar, id) in engines {
        if !has(t, needle) {
            continue;
        }
        for m in grammar.find_iter(t) {
            let mut h = Hit::new(id, m.start(), m.end()).on(Platform::Cuda).during(Phase::Runtime).in_space("device").ranked(12);
            h.detail("cuda_error", "cudaErrorMemoryAllocation");
            hits.push(h);
        }
    }
    if has(t, "thrust::") && has(t, "out of memory") {
        for c in thrust_oom().captures_iter(t) {
            let m = c.get(0).unwrap();
            // An exception of thrust's HIP backend (rocThrust) names HIP in its message.
            let hip = c["what"].contains("hip");
            let mut h = Hit::new("generic.device-oom", m.start(), m.end()).on(if hip { Platform::Rocm } else { Platform::Cuda }).during(Phase::Runtime).in_space("device").ranked(12);
            h.detail("exception", format!("thrust::system::{}", &c["class"]));
            if !hip {
                h.detail("cuda_error", "cudaErrorMemoryAllocation");
            }
            hits.push(h);
        }
    }
    if has(t, "to avoid CL_OUT_OF_RESOURCES exception") {
        for m in ov_cl_resources().find_iter(t) {
            let mut h = Hit::new("generic.device-oom", m.start(), m.end()).on(Platform::Other).during(Phase::Runtime).in_space("device").ranked(12);
            h.likely("OpenVINO's GPU plugin reports CL_OUT_OF_RESOURCES this way; the plugin itself says it is either device memory exhausted or a lost device");
            h.detail("runtime", "opencl").detail("status", "CL_OUT_OF_RESOURCES").detail("status_value", -5);
            hits.push(h);
        }
    }
    if has(t, "clash with L1 buffers") {
        for c in tt_cb_clash().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("tenstorrent.l1", m.start(), m.end());
            // Addresses, not sizes: the overlap is their difference.
            if let (Some(l1), Some(cb)) = (c.name("l1").and_then(|v| v.as_str().parse::<u64>().ok()), c.name("cb").and_then(|v| v.as_str().parse::<u64>().ok())) {
                h.detail("l1_buffer_address", l1).detail("circular_buffer_end", cb);
            }
            h.detail("clash", "circular buffers and L1 buffers");
            h.space("l1");
            h.platform = Some(Platform::Other);
            h.phase = Some(Phase::Runtime);
            h.priority = 10;
            hits.push(h);
        }
    }
}
