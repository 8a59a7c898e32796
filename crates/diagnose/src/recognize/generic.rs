//! Generic layer: any message with clear memory-failure semantics that no family grammar
//! claimed ("out of memory", "cannot allocate", "not enough memory", ENOMEM, …), with sizes
//! by general rules and platform/space from the words around it.
//!
//! It runs last, on text no family hit covers, and stays silent unless the wording is an
//! error report: the phrase must sit on a line that carries an error marker before it (an
//! exception class, `error`, `failed`, a glog `E`/`F` level, `what():`), or open the line
//! as a log message, and the line must not read as prose (first/second person, questions,
//! hints). Disk-full, quota and timeout errors never contain these phrases.

use super::{vocabulary, Hit};
use crate::finding::{Confidence, SizeKey};
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[
    "Out of Memory",
    "out-of-memory",
    "Out-of-memory",
    "out of GPU memory",
    "Out of GPU memory",
    "out of device memory",
    "Out of device memory",
    "OutOfDeviceMemory",
    "out of host memory",
    "Out of host memory",
    "OutOfHostMemory",
    "OUT_OF_DEVICE_MEMORY",
    "OUT_OF_HOST_MEMORY",
    // A bare "OOM" counts only as a word after an error marker ("RuntimeError: OOM",
    // "failed (OOM)"), so a space or a bracket stands before it. Spelled with that
    // character the literal is four bytes long: the scanner's vectorized prefilter
    // compares four-byte fingerprints only when every anchor is at least that long
    // (twice the speed of three; each extra spelling costs speed too). A quoted
    // "OOM" is a mention, not a failure.
    " OOM",
    "(OOM",
    "[OOM",
    ":OOM",
    "can't allocate",
    "Can't allocate",
    "cannot allocate",
    "Unable to allocate",
    "unable to allocate",
    "failed to allocate",
    "Failed to allocate",
    "FAILED_TO_ALLOCATE",
    "not enough memory",
    "Not enough memory",
    "NOT_ENOUGH_MEMORY",
    "insufficient memory",
    "Insufficient memory",
    "allocation failed",
    "Allocation failed",
    "alloc failed",
    "ENOMEM",
    "MemoryError",
    "OutOfMemory",
    "ALLOCATION_FAILURE",
    // Runtime status members (`vocabulary::MEMBERS`) not covered by a trigger above, and the
    // allocation calls beside which a status is read by value.
    "cudaErrorMemoryAllocation",
    "hipErrorMemoryAllocation",
    "rocblas_status_memory_error",
    "miopenStatusAllocFailed",
    "ALLOCATION_FAILED",
    "MEMORY_ALLOCATION",
    "_MEM_ALLOC",
    "OUTOFMEMORY",
    "NO_MEMORY",
    "out_of_memory",
    "Malloc",
    "malloc",
    "MemAlloc",
    "AllocateMemory",
    "CreateBuffer",
    "CreateCommittedResource",
    "MemoryAllocate",
    "Allocation Failure",
    "rror code: -",
    "OUT_OF_RESOURCES",
    "GPU resources",
    "memory allocation of",
    "Memory allocation of",
    "ArrowMemoryError",
    "OutOfMemoryException",
    "Allocation failed for size",
    // A CHECK_EQ of a status against success: `== CUFFT_SUCCESS (2 vs. 0)`.
    " vs. 0)",
    "not available to allocate",
    // "Failed to alloc DEVICE memory", "failed to malloc npu memory" (Neuron, RKNN), DeepSpeed's
    // "can't be allocated, no enough memory", TVM's "storage allocation failure", OpenVINO's
    // "Exceeded max size of memory object allocation", RKNN's `RKNN_ERR_MALLOC_FAIL`.
    "to alloc ",
    "o enough memory",
    "allocation failure",
    "max size of memory",
    "MALLOC_FAIL",
    // OpenCL's enqueue calls print their status right after the call: `clEnqueueNDRangeKernel (-4)`.
    "clEnqueue",
    // Sophgo's bmlib (`bm_alloc_gmem failed`), "Alloc Device Memory Failed", ExLlama's
    // "Insufficient VRAM for model and cache" (claimed by its own grammar in `misc.rs`).
    "alloc_gmem",
    "Memory Failed",
    "memory failed",
    "for model and cache",
    // TensorFlow's cuFFT plan failure ("failed to create cuFFT batched plan:2" just before it).
    "customized allocator",
    "insufficient system memory",
    // "insufficient GPU memory" (TensorRT-LLM's executor), "insufficient device memory", "not enough GPU memory".
    "nsufficient GPU memory",
    "nsufficient device memory",
    "enough GPU memory",
    // ggml-vulkan's "Device memory allocation of size N failed." without its prefix.
    "allocation of size",
    // Metal's "Insufficient Memory (IOAF code 8)", ManagedCuda's NPP "Device allocation error",
    // Blender Cycles' "out of GPU and shared host memory".
    "Insufficient Memory",
    // cuSOLVER's statuses by name (PyTorch's CUDASolver and TensorFlow's CHECKs on cusolverDnCreate).
    "CUSOLVER_STATUS_",
    "allocation error",
    "shared host memory",
    // PyTorch's and ONNX Runtime's "Unable to find a valid cuDNN algorithm to run convolution".
    "algorithm to run convolution",
    // Rust 1.20-1.27's heap OOM abort: "fatal runtime error: allocator memory exhausted" (`vocabulary::HOST_NAMES`).
    "allocator memory exhausted",
    // The JVM's OutOfMemoryError kind as Gradle and Maven print it without the class
    // ("> GC overhead limit exceeded"; `vocabulary::HOST_NAMES`).
    "GC overhead limit exceeded",
    // PyTorch's CUDASolver check with the status as a number ("cusolver error: 7").
    "cusolver error",
    // TensorFlow's copy into a device tensor whose buffer could not be allocated
    // (`errors::Internal("Dst tensor is not initialized.")`, common_runtime/gpu/gpu_util.cc).
    "Dst tensor is not initialized",
]; 

// The memory-failure phrases, any capitalisation, wrapped lines allowed (a space matches any whitespace run).
grammar!(
    strong,
    r"(?i)(?:\b|_)out[ _-]?of[ _-]?(?:(?:gpu|device|host|cpu|system|video|graphics|shared|dedicated)[ _-]?)?memory|\bout of gpu and shared host memory\b|(?:can(?:'|no)t|could ?not|unable to|failed to|fail to) (?:allocate|m?alloc)\b|no(?:t)?[ _]enough[ _](?:\w+[ _]){0,2}memory|insufficient[ _](?:\w+[ _])?(?:memory|vram)|(?:\b|_)(?:m|c)?alloc(?:ate)?[ _](?:(?:device|host|gpu|dev|mpp|dma)[ _])?(?:g?mem(?:ory)?|buffer)[ _]fail(?:ed|ure)?\b|memory[ _]allocation[ _](?:has[ _])?failed|memory[ _]allocation[ _]error\b|alloc(?:ation)?[ _](?:failed|failure)|exceed(?:s|ed)?[ _]max(?:imum)?[ _](?:\w+[ _]){0,4}(?:allocation|memory)\b|failed[ _]to[ _]allocate|MEM_OBJECT_ALLOCATION_FAILURE|\bENOMEM\b|\bMemoryError\b|\bOOM\b|out of (?:gpu|device) resources|(?:memory |host |device )?allocation of (?:size )?\d+(?: bytes)? failed|allocating \d+ bytes exceeds the memory limit of \d+|memory not available to allocate|\btorch\.(?:cuda\.|xpu\.)?OutOfMemoryError\b|\ballocator memory exhausted\b"
);
grammar!(dst_tensor, r"\bDst tensor is not initialized\.?");
// What makes the line an error report, before the phrase.
grammar!(
    error_marker,
    r"(?i)\b[\w.:]*(?:error|exception|fault)\b|\bfail(?:ed|ure|s)?\b|\bfatal\b|\babort(?:ed|ing)?\b|\bterminate called\b|what\(\)|\bpanic|\bcrash|\berrno\b|\bstatus\b|\bcheck failed\b|\.\w+:\d+\]|^\s*(?:\[?[EF]\d{4}|\[?(?:E|F|ERROR|FATAL|CRITICAL|ERR)\b)"
);
// Prose: people writing about a failure, hints, questions, docs. Read through [`prose`], which
// passes over words inside a path or a name.
grammar!(
    prose_words,
    r"(?i)\b(?:I|I'm|I've|I'd|me|my|we|we're|our|us|you|your|you're|please help|how (?:do|can|to)|why|seems?|maybe|probably|thanks|avoid|prevent|reduce|to fix|if (?:the|a|an|it|there|this)|when (?:the|a|an|it|using|running)|should|would|tips?|hint|e\.g\.|such as|example|could (?:give|be|happen|cause|lead)|possibly|strange|because|she|he|they|their|someone|anyone|catch|detect|monitor)\b|\?\s*$"
);
/// Prose words as words of a sentence: a pronoun inside a path or a hyphenated name is part of
/// that name (`C:\buildkite-agent\builds\...-autoscaling-group-i-0b37...\xgboost`, `/home/me/...`),
/// and `\b` alone takes `-`, `/` and `\` for word ends.
struct Prose;
fn prose() -> Prose {
    Prose
}
impl Prose {
    fn is_match(&self, s: &str) -> bool {
        let b = s.as_bytes();
        let joins = |c: u8| matches!(c, b'/' | b'\\' | b'-' | b'_' | b'@' | b'=');
        prose_words().find_iter(s).any(|m| {
            // `\?\s*$`: a question, not a word.
            if m.as_str().trim_start().starts_with('?') {
                return true;
            }
            let before = m.start().checked_sub(1).map(|i| b[i]);
            let after = b.get(m.end()).copied();
            // `my.cu`, `me.py`: a file name; `me.` ending a sentence is prose.
            let dotted = after == Some(b'.') && b.get(m.end() + 1).is_some_and(|c| c.is_ascii_alphanumeric());
            // `9616777840 us:` (ROCclr's log prefix): microseconds after a number, not the pronoun.
            let micros = m.as_str().eq_ignore_ascii_case("us") && s[..m.start()].trim_end_matches(' ').ends_with(|c: char| c.is_ascii_digit());
            !(before.is_some_and(joins) || after.is_some_and(joins) || dotted || micros)
        })
    }
}

// Words that make a sentence advice or a question about a failure, not a report of one.
grammar!(hint, r"(?i)\b(?:avoid|prevent|to fix|if (?:you|the|a|an|it|there|this)|should|would|tips?|hint|e\.g\.|such as|example|catch|detect|monitor|try|how (?:do|can|to)|why)\b|\?\s*$");
// Source code quoted in a traceback or a diff, not a message.
// (A Markdown list item of a bold key, `- **Exception Type:** ...`, is not a diff line.)
grammar!(code, r#"\braise \w|\bdef \w|\breturn \w|^\s*(?:if|elif|while|assert) .*:\s*$|\bif .*: (?:raise|return)\b|\bf["']|^\s*[+-]\s+(?:[^*\s]|\*[^*]|\*\*[^*:]*\*\*)"#);
// Operators: code, unless the line is already an error report (RET_CHECK / CHECK expressions).
grammar!(operators, r"==|!=|&&|\|\||;\s*$");
// A message at the start of a line (after a log prefix) needs no marker: "Failed to allocate 14495514624 bytes of memory".
grammar!(line_start_phrase, r#"(?i)^(?:[\s>*`"'\[\]\w:./-]|\p{So}){0,40}?(?:out of (?:\w+ )?memory|(?:failed|unable) to (?:allocate|m?alloc\b)|(?:cannot|can't|could not) (?:allocate|malloc\b)|not enough (?:\w+ )?memory|insufficient (?:\w+ )?memory|memory allocation failed|allocation failed|out of (?:gpu|device) resources|out of gpu and shared host memory|memory allocation of (?:size )?\d+(?: bytes)? failed|exceed(?:s|ed)? max(?:imum)? (?:\w+ ){0,4}(?:allocation|memory))"#);

// Sizes by general rules, next to the word that names them. Only sizes with a unit (or
// `bytes`) are read here: a bare number next to "allocate" may count elements or blocks.
const SZU: &str = r"[0-9][0-9,]*(?:\.[0-9]+)?\s?(?:[KMGTPE]i?B|[KMGTPE]|B|bytes?)\b";
grammar!(requested, &r"(?i)(?:allocat(?:e|ing|ion)|\bmalloc|\bmap|request(?:ed|ing)?|need(?:s|ed)?|require[sd]?)(?: (?:a|an|the|additional))?(?: (?:buffer|tensor|memory|block|chunk|array|region|data))?(?: (?:of|for|with))?(?: size)?(?:\s*[=:(]\s*|\s*)(?P<v>0x[0-9a-fA-F]+|{SZU})".replace("{SZU}", SZU));
// `size = 0x639c00` (hex, exact), `size=16777216`, and `size  419795968` (a bare count of five
// digits or more after the word: a batch "size 32" is not bytes).
grammar!(size_eq, r"(?i)\bsize(?:[ ]?[=:]{1,2}[ ]?(?P<v>0x[0-9a-fA-F]+\b|\d[\d,]*\b)|[ ]+(?P<w>\d{5,})\b)");
// "Failed to alloc DEVICE memory: 10485760": the count after "alloc … memory:" is the bytes asked for
// (not "Free memory: 24564", which may count MiB).
grammar!(memory_eq, r"(?i)\balloc\w*\s+(?:\w+\s+){0,2}memory\s?[=:]\s?(?P<v>\d{4,})(?P<u>\s?(?:[KMGTPE]i?B|bytes?|B)\b)?");
// "(260.3 MiB/476.8 MiB used)": what is in use of a budget, both with units.
grammar!(used_of, &r"\((?P<u>{SZU})\s*/\s*(?P<l>{SZU}) used\)".replace("{SZU}", SZU));
grammar!(free_sz, &r"(?i)(?P<a>{SZU}) (?:is |are )?(?:free|available)\b|(?:free|available)(?: memory)?(?: is| was)?(?: only)?(?:\s*[=:]\s*|\s*)(?P<b>{SZU})".replace("{SZU}", SZU));
grammar!(total_sz, &r"(?i)(?P<a>{SZU}) total\b|\btotal(?: memory| capacity)?(?: of| is)?(?:\s*[=:]\s*|\s*)(?P<b>{SZU})".replace("{SZU}", SZU));
grammar!(limit_sz, &r"(?i)\b(?:limit|max(?:imum)?(?: allowed)?|capacity)(?: of| is| size)?(?:\s*[=:]\s*|\s*)(?P<b>{SZU})|\bmax(?:imum)? alloc(?:ation)? size(?: [a-z]+){0,3} is (?P<c>{SZU})".replace("{SZU}", SZU));
grammar!(alloc_sz, &r"(?i)(?P<a>{SZU})(?: memory)? (?:has been|have been|already) allocated|\ballocated(?: so far)?\s*[=:]\s*(?P<b>{SZU})".replace("{SZU}", SZU));

// Words that name the platform and the memory space.
// Users retype the name in any casing ("Cuda out of memory", "Cuda Runtime Error").
grammar!(w_cuda, r"(?i:\bcuda\w*)|\bTRT(?:-LLM)?\b|\bTensorRT\w*|\bcu(?:Mem|da)[A-Z]\w*|NVIDIA|\bnvidia\b|\bcublas|\bcudnn|CUDAPlace|\w\.cu\b|\bbitsandbytes\b");
grammar!(w_rocm, r"\bHIP\b|\bhip[A-Z]\w*|\bROCm\b|\brocm\b|\bAMDGPU\b|\bMIOpen\b|\bmiopen\w*|\brocBLAS\b|\brocblas\w*");
// (ggml's Metal backend logs from `ggml_metal_*` functions.)
grammar!(w_metal, r"\bMetal\b|\bMETAL\b|\bMTL\w+|MTLBuffer|kIOGPU\w+|\bggml_metal\w*");
grammar!(w_mps, r"\bMPS\b|\bmps\b");
grammar!(w_xpu, r"\bXPU\b|\bxpu\b|Level[ _]Zero|\bUR_RESULT\w*|\bSYCL\b|\bsycl\b|\bZE_RESULT\w*");
// (Blender Cycles' "out of GPU and shared host memory": device memory and the host memory it maps in.)
grammar!(w_device_memory, r"(?i)\b(?:gpu|device|video|graphics|dedicated)[ _]memory\b|\bVRAM\b|\bgpu and shared host memory\b");
grammar!(w_npu, r"\bNPU\b|\bnpu\b|\bAscend\b|\bCANN\b|\bACL_ERROR\w*");
grammar!(w_tpu, r"\bTPU\b");
grammar!(
    w_host,
    r"\bCPU\b|\bcpu\b(?:[^.]|$)|intel_cpu|\bhost\b|\bHost\b|DefaultCPUAllocator|posix_memalign|\bmalloc\b|\bmmap\b|\bRAM\b|\bswap\b|CPUPlace|virtual memory|(?i:\bsystem memory\b)|\bpinned\b|page-locked|\b(?:cudaHostAlloc|cudaMallocHost|cudaHostRegister|cuMemHostAlloc|cuMemAllocHost|cuMemHostRegister|hipHostMalloc|hipMallocHost|hipHostAlloc|hipHostRegister)\b"
);
// Host by default: Python's MemoryError, C++ bad_alloc, errno ENOMEM, unless a device is named.
// Rust's std::alloc::handle_alloc_error prints "memory allocation of N bytes failed" for the heap.
// Host runtimes' own names for their memory (V8's heap, the JVM's heap kinds, a Python host
// library's exception module): [`vocabulary::HOST_NAMES`].
fn w_host_weak() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        super::re(&format!(
            r"\bMemoryError\b|bad_alloc|\bENOMEM\b|(?i:cannot allocate memory)|\(errno=12\)|Errno 12\b|(?i:memory allocation of \d+ bytes failed)|Out of Memory Error:|\bOutOfMemoryException\b|\bArrowMemoryError\b|{}",
            vocabulary::host_names_pattern()
        ))
    })
}
grammar!(w_device, r"(?i:\bgpus?\b)|\bVRAM\b|\bvram\b|(?i:\bdevice memory\b)|\bon device\b|\bdevice \d|\bdevice:\s*\d|DEVICE_MEMORY|\bHBM\b|\bGPU_\d|\bCL_MEM_\w+|\bOpenCL\b|\bcl[A-Z][a-z]\w+|DeviceMemory|\bRMM_\w+|\bDirectML\b|\bDML\b|\bDml[A-Z]\w*|\bVulkan\b|\bPT_DEVMEM\b|\bHPU\b|\bhpu\b|\bGaudi\b|\bhabana\w*|(?i:\b(?:npu|video|graphics|dedicated)[ _]memory\b)|\bpoplar\w*|\bpopart\b|\bIPU\b|\bdev_id\b|(?:\b|_)gmem\b|\bbmlib\w*|\bXRT\w*|\bxrt\w*");

grammar!(
    other_cause,
    r"(?i):\s*(?:invalid argument|invalid value|permission denied|operation not (?:permitted|supported)|not supported|no such file|device (?:is )?lost|bad address|device or resource busy)\b"
);

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    let existing: Vec<(usize, usize)> = hits.iter().map(|h| (h.start, h.end)).collect();
    let mut named = statuses(t, &existing);
    let mut found: Vec<Hit> = Vec::new();
    // The end of the lines that follow a failed request of zero bytes (see below).
    let mut zero_until = 0;
    for m in strong().find_iter(t) {
        if m.start() < zero_until {
            continue;
        }
        let (ls, le) = line_bounds(t, m.start(), m.end());
        // Anything a family grammar already claimed nearby is that family's message.
        let (ns, ne) = near(t, ls, le, 2);
        if claimed(&existing, &[], ns, ne) {
            continue;
        }
        // A runtime status named nearby is the same failure: its words only add sizes.
        if let Some(n) = named.iter_mut().find(|h| h.start < ne && ns < h.end) {
            if !prose().is_match(&t[ls..le]) {
                let end = message_end(t, le);
                let mut more = Hit::new(n.id, ls, end);
                sizes(&t[ls..end], &mut more);
                n.end = n.end.max(end);
                for (k, p) in more.sizes {
                    if n.get(k).is_none() {
                        n.sizes.push((k, p));
                    }
                }
                // The words say memory: no longer a disguise.
                n.confidence = Confidence::Certain;
                n.confidence_reason = None;
            }
            continue;
        }
        if found.iter().any(|h| h.start <= m.start() && m.end() <= h.end) {
            continue;
        }
        let line = &t[ls..le];
        // The phrase inside an identifier (`pagefault_out_of_memory`): what stands before it
        // in that identifier is part of the name, never an error marker.
        let before = identifier_head_removed(&t[ls..m.start()], m.as_str());
        let phrase = m.as_str();
        // A runtime's message pasted in backticks inside a sentence that reports it ("I am getting
        // `cuda failed with error out of memory` after a while") is the failure, not a mention.
        let pasted = backticked_report(line, m.start() - ls, m.end() - ls) && error_marker().is_match(m.as_str()) | error_marker().is_match(backtick_content(line, m.start() - ls));
        if (!pasted && prose().is_match(sentence_of(line, m.start() - ls, m.end() - ls))) || code().is_match(message_part(line, m.start() - ls)) || symbol_table_line().is_match(line) {
            continue;
        }
        // Code operators count in the phrase's own sentence: "Expected ret == 0 to be true, but got
        // false. Alloc Device Memory Failed!" is a check's report, then the failure.
        let sentence = sentence_of(line, m.start() - ls, m.end() - ls);
        if operators().is_match(sentence) && !error_marker().is_match(before) {
            continue;
        }
        // "failed to allocate …: invalid argument": the call failed, and it says why, for
        // a reason that is not a lack of memory (errno strings, driver error names).
        if other_cause().is_match(&t[m.end()..le]) {
            continue;
        }
        // ggml's scheduler notes a first try that did not fit the reserved buffers and reserves
        // again ("%s: failed to allocate graph, reserving", ggml-backend.cpp
        // ggml_backend_sched_alloc_splits, llama.cpp b4747; its failure is "failed to allocate graph").
        if t[m.end()..le].starts_with(" graph, reserving") {
            continue;
        }
        // Locking pages in RAM (mlock, VirtualLock) fails with ENOMEM at RLIMIT_MEMLOCK: the
        // pages exist, they just stay swappable (llama.cpp's "failed to mlock" warning).
        if page_lock().is_match(line) {
            continue;
        }
        // A phrase quoted inside a sentence is a mention ("catch exceptions with 'CUDA out of memory'").
        if !pasted && quoted(t, ls, m.start(), le) {
            continue;
        }
        let weak = phrase.eq_ignore_ascii_case("oom") || phrase == "MemoryError";
        let marked = error_marker().is_match(before) || error_marker().is_match(phrase);
        let leads = line_start_phrase().is_match(line) && m.start() - ls <= 48;
        if weak {
            // "OOM" / "MemoryError" on their own say little: only as an error's subject.
            if phrase.eq_ignore_ascii_case("oom") && !(marked && error_marker().find(before).is_some()) {
                continue;
            }
            if phrase == "MemoryError" && !after_is_message(t, m.end(), le) {
                continue;
            }
        } else if !(marked || leads || killed_for().is_match(before) || reported_quote(before)) {
            continue;
        }
        let end = message_end(t, le);
        let start = ls + (line.len() - line.trim_start().len());
        let mut h = Hit::new("generic.oom", start, end.max(start));
        h.priority = 90;
        h.phase = Some(Phase::Runtime);
        let says_memory = t[start..end].to_ascii_lowercase().contains("memory") || t[start..end].contains("ENOMEM") || t[start..end].contains("MEM_OBJECT");
        if !says_memory && (weak || !has_size_word(&t[start..end])) {
            h.confidence = Confidence::Likely;
        }
        sizes(&t[start..end], &mut h);
        // A request of zero bytes that "failed" lacked no memory: an allocator's warning printed
        // before a fallback (ggml-vulkan's "WARNING: failed to allocate 0.00 MB of pinned memory",
        // then its "Failed to allocate pinned memory." and a plain host buffer). The next two
        // lines, which restate it, go with it.
        if h.get(SizeKey::Requested) == Some(0) {
            zero_until = (0..2).fold(end, |at, _| next_line(t, at).map_or(at, |(_, ne)| ne));
            continue;
        }
        // The phrase's own line first: the size lines after it may be another report's (a host
        // memory summary under bitsandbytes' CUDA "Error out of memory at line N in file ...").
        let (platform, space) = match place_in(line) {
            Some(found) if found.0 != Platform::Other => found,
            _ => place(t, start, end),
        };
        h.platform = Some(platform);
        match space {
            Some("host") => {
                h.id = "generic.host-oom";
                h.space("host");
            }
            Some(_) => {
                h.id = "generic.device-oom";
                h.space("device");
            }
            None => {}
        }
        h.detail("wording", phrase);
        // Merge with a generic hit of the lines just before (one failure, several lines).
        if let Some(prev) = found.last_mut() {
            if prev.end + 1 >= start || t[prev.end..start].matches('\n').count() <= 4 {
                prev.end = prev.end.max(end);
                for (k, p) in h.sizes {
                    if prev.get(k).is_none() {
                        prev.sizes.push((k, p));
                    }
                }
                // One line of the failure that says memory for certain makes it certain
                // (V8's "allocation failure" GC line, then "JavaScript heap out of memory").
                if h.confidence == Confidence::Certain {
                    prev.confidence = Confidence::Certain;
                    prev.confidence_reason = None;
                }
                if prev.memory_space.is_none() && h.memory_space.is_some() {
                    prev.id = h.id;
                    prev.memory_space = h.memory_space;
                    prev.platform = h.platform;
                }
                continue;
            }
        }
        found.push(h);
    }
    hits.extend(named);
    hits.extend(found);
}

/// `before` without the start of the identifier the phrase continues (`pagefault` of
/// `pagefault_out_of_memory`), unless a part of that identifier is itself an error word: a
/// status name (`VPI_ERROR_OUT_OF_MEMORY`) marks its own failure.
fn identifier_head_removed<'a>(before: &'a str, phrase: &str) -> &'a str {
    let glued = phrase.starts_with('_') || before.ends_with(|c: char| c.is_alphanumeric() || c == '_');
    if !glued {
        return before;
    }
    let rest = before.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_');
    let head = &before[rest.len()..];
    let marks = head.split('_').any(|w| ["error", "err", "fail", "failed", "failure", "fatal", "exception", "status"].iter().any(|e| w.eq_ignore_ascii_case(e)));
    if marks {
        before
    } else {
        rest
    }
}

// Every member name of the runtimes' status enums, as a whole word.
fn member_names() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        let alt: Vec<String> = vocabulary::MEMBERS.iter().map(|m| regex::escape(m.name)).collect();
        regex::Regex::new(&format!(r"(?:\b|_)(?:{})\b", alt.join("|"))).expect("member names")
    })
}

// The members' printed descriptions (`vocabulary::DESCRIPTIONS`), any capitalisation, wrapped lines allowed.
fn member_descriptions() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        let alt: Vec<String> = vocabulary::DESCRIPTIONS.iter().map(|d| regex::escape(d.1).replace(' ', r"\s+")).collect();
        regex::Regex::new(&format!(r"(?i)\b(?:{})\b", alt.join("|"))).expect("member descriptions")
    })
}

// Each runtime's API calls and names, in `vocabulary::RUNTIMES` order.
fn runtime_calls() -> &'static [regex::Regex] {
    static RE: std::sync::OnceLock<Vec<regex::Regex>> = std::sync::OnceLock::new();
    RE.get_or_init(|| vocabulary::RUNTIMES.iter().map(|r| regex::Regex::new(r.calls).expect("runtime calls")).collect())
}

// A status value printed after a call: `failed with error 2`, `returned -2`, `res=2`,
// `status = 4`, `error code 1455`, `(2 vs. 0)` (a CHECK_EQ against success), `[WinError 8]`.
grammar!(
    status_value,
    &r"(?i:\b(?:win)?error|\berr|\berrno|\bstatus|\bres|\bresult|\bcode|\breturned|\brc|\bret|\bfailed|\bfailure)(?: code| number| value)?\s*(?:[:=(]\s*)?(?P<v>-?0[xX][0-9A-Fa-f]{1,8}\b|-?\d{1,10}\b)|\((?P<c>-?\d{1,10}) vs\. 0\)|{ADJ}|\bfail(?:ed|ure)?\b[^\n:]{1,60}:(?P<f>-?\d{1,10})\b"
        .replace("{ADJ}", CALL_ADJACENT)
);
// A negative status right after a runtime's own call, with at most one word between:
// `clEnqueueNDRangeKernel (-4) error`, `vkAllocateMemory failed -2` (typed by hand: `Faied -2`).
// Only Vulkan, OpenCL and RKNN print their failures as negative values, and their calls are camelCase
// or `rknn_` names.
const CALL_ADJACENT: &str = r"\b(?:vk|cl|rknn_)[A-Za-z]\w*\)?[ \t]+(?:[A-Za-z]+[ \t]+)?\(?(?P<n>-\d{1,10})\)?(?:[^\w.]|$)";
// Words that say a memory failure was near: a Likely member that needs context is read only beside one.
grammar!(memory_near, r"(?i)out[ _-]?of[ _-]?(?:\w+[ _-])?memory|(?:failed|unable|cannot|can't|could not) (?:to )?allocate|alloc(?:ation)?[ _]failed|\bOOM\b");
grammar!(exception_start, r"\b[A-Z]\w*(?:Error|Exception)\b:|\bFATAL ERROR\b");
// A kill that says why: "neuronx-cc was forcibly killed - This most commonly occurs due to insufficient
// system memory" (not for a bare "OOM", which a kill line only guesses at).
grammar!(killed_for, r"(?i)\bkilled\b");
// Also in words: "Unable to lock JVM Memory: error=12" (Elasticsearch's mlockall warning),
// "Error locking page at 0x…: Cannot allocate memory" (Monero's mlocker). "page-locked" (CUDA's
// pinned host memory, a real allocation) is not locking pages that exist.
grammar!(page_lock, r"\b(?:mlock|munlock|mlockall|mlocker|VirtualLock)\b|RLIMIT_MEMLOCK|RLIMIT_MLOCK|(?i:\block(?:ing)? (?:\w+ ){0,2}(?:memory|pages?)\b)");
// A CUDA library creating its handle (`cusolverDnCreate(handle)`, `cublasCreate_v2`): the handle's
// device memory is allocated there, so an internal error at that call is the masked kind.
grammar!(handle_create, r"\bcu(?:solver|blas|sparse)\w*Create(?:_v2)?\b");
grammar!(handle_create_failed, r"\b[Cc]heck failed:\s*\(?\s*(?P<call>cu(?:solver|blas|sparse)\w*Create\w*)\([^)\n]*\)\s*==\s*CU(?:SOLVER|BLAS|SPARSE)_STATUS_SUCCESS\b");
const NOT_INIT_HANDLE: &str = "the library could not create its handle; with no other error, that is the GPU out of memory when the library initialises (a CUDA/library version mismatch reads the same)";
grammar!(error_label_before, r"(?i)\b\w*(?:error|exception)\s*:\s*$");
// What shows a JVM ran: its packages and stack frames (`at java.util.…(Arrays.java:3664)`), its
// thread header, its launcher and build tools, and the detail messages of its OutOfMemoryError
// kinds ([`vocabulary::HOST_NAMES`], JVM_KINDS).
grammar!(jvm_context, r#"\bjava\.\w|\bjavax?\.\w|\.java:\d|\.scala:\d|\bat (?:java|javax|jdk|sun|scala|org|com|io|net)\.[\w.$]+\(|Exception in thread "|\bJVM\b|\bjvm\b|\bJava\b|\bHotSpot\b|\bhs_err_pid|-Xmx\d|\bGradle\b|\bgradle\w*|\bSpark\b|\bspark\.|\bKotlin\b|\bElasticsearch\b|\bjava heap space\b|(?i:java heap space)|\bGC overhead limit exceeded\b|\bMetaspace\b|\bRequested array size exceeds VM limit\b"#);
grammar!(alloc_words, r"(?i)\balloc\w*[ _](?:fail|error)|\bfailed to alloc|\bunable to alloc|\bout of (?:\w+ )?memory");
// A runtime's device allocation call that failed. Without a status that says why, lack of
// memory is the usual reason (DirectML's `CHECK failed: ... CreateCommittedResource ... >= 0`).
grammar!(
    alloc_call_failed,
    r"\b(?P<call>cudaMalloc\w*|cuMemAlloc\w*|cuMemCreate|hipMalloc\w*|hipExtMalloc\w*|clCreateBuffer|vkAllocateMemory|zeMemAlloc\w*|CreateCommittedResource|CreatePlacedResource|aclrtMalloc\w*|nrt_tensor_allocate|synDeviceMalloc)\b(?:\([^\n]{0,300}?\))?[^\n]{0,40}?(?:\bfail(?:ed|ure)\b|\) >= 0\)\) == \(true\))|\bCHECK failed:[^\n]{0,60}?\b(?P<call2>CreateCommittedResource|CreatePlacedResource)\b"
);
// PyTorch (aten/src/ATen/native/cudnn/Conv_v7.cpp, `AlgoIterator::try_all`) and ONNX Runtime
// (onnxruntime/core/providers/cuda/nn/conv_grad.cc, `AlgoIterator::TryAll`, read through the code
// index) try the cuDNN algorithms in turn, passing over each whose workspace could not be allocated
// (PyTorch catches `c10::OutOfMemoryError` per algorithm); this is thrown when none is left.
grammar!(no_cudnn_algo, r"Unable to find a valid cuDNN algorithm to run convolution");
// A symbol table (`/proc/kallsyms`, `nm`, `System.map`): an address, a type letter and a
// symbol per line. Kernel functions are named after what they handle
// (`pagefault_out_of_memory`, `mem_cgroup_out_of_memory`); a list of names is no failure.
grammar!(symbol_table_line, r"^\s*(?:0x)?[0-9a-fA-F]{8,16}\s+[A-Za-z?]\s+[\w.$@]+(?:\s+\[[\w.\-]+\])?\s*$");
// Enum listings, switch statements and headers quoting the names are code, not failures.
grammar!(listing, r"^\s*(?:case\s|#define\s|[A-Za-z_]\w*\s*=\s*-?(?:0x)?[0-9A-Fa-f]+\s*,?\s*(?://.*)?$|[|-]\s*[A-Za-z_]\w*\s*\|)");

/// Failures named by a runtime's own status: a member of its enum, by name or beside one of
/// its calls by value (see [`vocabulary`]).
fn statuses(t: &str, existing: &[(usize, usize)]) -> Vec<Hit> {
    let mut out: Vec<Hit> = Vec::new();
    // (start, end, member, value start, value end, read right after the runtime's own call)
    let mut seen: Vec<(usize, usize, &'static vocabulary::Member, usize, usize, bool)> = Vec::new();
    for m in member_names().find_iter(t) {
        let s = m.start() + usize::from(t[m.start()..].starts_with('_'));
        if let Some(member) = vocabulary::member(&t[s..m.end()]) {
            // Java's `OutOfMemoryError` is `java.lang.`'s; another package's class of that name
            // (`torch.OutOfMemoryError`, `cupy.cuda.memory.OutOfMemoryError`) is not the JVM's heap.
            if member.runtime == "java" && t[..s].ends_with('.') && !t[..s].ends_with("java.lang.") {
                continue;
            }
            // A bare `OutOfMemoryError` is the JVM's only where the log shows a JVM: Python prints a
            // class without its module (IPython's `OutOfMemoryError  Traceback (most recent call
            // last)`, transformers' `OutOfMemoryError: CUDA out of memory.`), and prose names one
            // ("a CUDA OutOfMemoryError").
            if member.runtime == "java" && !t[..s].ends_with("java.lang.") && !jvm_context().is_match(t) {
                continue;
            }
            seen.push((s, m.end(), member, s, m.end(), false));
        }
    }
    // The text a runtime or its binding prints for a member (`Memory Object Allocation Failure`).
    for m in member_descriptions().find_iter(t) {
        let said = m.as_str().split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase();
        if let Some(member) = vocabulary::DESCRIPTIONS.iter().find(|d| d.1 == said).and_then(|d| vocabulary::member(d.0)) {
            seen.push((m.start(), m.end(), member, m.start(), m.end(), false));
        }
    }
    // By value, beside the runtime's own calls on an error line.
    if t.bytes().any(|b| b.is_ascii_digit()) {
        for c in status_value().captures_iter(t) {
            let adjacent = c.name("n").is_some();
            // `failed to create cuFFT batched plan:2` (TensorFlow's cuda_fft.cc prints the status glued after a colon).
            let Some(v) = c.name("v").or(c.name("c")).or(c.name("n")).or(c.name("f")) else { continue };
            let Some(value) = vocabulary::parse_value(v.as_str()) else { continue };
            // `error 2.5 s` is a number, not a status.
            if t[v.end()..].starts_with('.') && t[v.end() + 1..].starts_with(|ch: char| ch.is_ascii_digit()) {
                continue;
            }
            let (ls, _) = line_bounds(t, v.start(), v.end());
            let before = &t[ls..v.start()];
            // The nearest call before the value names the runtime.
            let mut best: Option<(usize, &'static vocabulary::Runtime)> = None;
            for (rt, re) in vocabulary::RUNTIMES.iter().zip(runtime_calls()) {
                if let Some(last) = re.find_iter(before).last() {
                    if best.map_or(true, |(at, _)| last.start() > at) {
                        best = Some((last.start(), rt));
                    }
                }
            }
            // A value no other status has (an HRESULT, a Level Zero or ACL code) names its
            // runtime by itself: "RuntimeError: Unknown error -2147024882".
            let best = best.or_else(|| {
                (value.unsigned_abs() >= 0x1_0000).then(|| vocabulary::MEMBERS.iter().find(|m| vocabulary::by_value(m.runtime, value).next().is_some())).flatten().and_then(|m| vocabulary::runtime(m.runtime)).map(|rt| (v.start() - ls, rt))
            });
            let Some((at, rt)) = best else { continue };
            if let Some(member) = vocabulary::by_value(rt.id, value).next() {
                if !seen.iter().any(|x| x.0 <= v.start() && v.start() < x.1 + 200 && x.2.runtime == member.runtime) {
                    seen.push((ls + at, v.end(), member, v.start(), v.end(), adjacent));
                }
            }
        }
    }
    seen.sort_by_key(|x| x.0);
    for (start, end, member, vs, ve, adjacent) in seen {
        let Some((ls, le)) = free_line(t, &existing, &[], start, end) else { continue };
        let line = &t[ls..le];
        // The status right after an error or exception label (`Vulkan Error : VK_ERROR_OUT_OF_DEVICE_MEMORY`,
        // `CudaException: ErrorOutOfMemory: The API call failed because ...`) is the printed message, even
        // inside a sentence that reports it; a hint or a question about it is not.
        let labeled = error_label_before().is_match(&t[ls..start]) && {
            let sentence = sentence_of(line, start - ls, end - ls);
            // The clause that holds it: "when I try to load it, I get ...: Error : X" reports X.
            let off = sentence.as_ptr() as usize - line.as_ptr() as usize;
            let clause = sentence[..(start - ls).saturating_sub(off).min(sentence.len())].rfind(", ").map_or(sentence, |i| &sentence[i + 2..]);
            !hint().is_match(clause)
        };
        let pasted = backticked_report(line, start - ls, end - ls) || labeled;
        if (!pasted && (prose().is_match(line) || quoted(t, ls, start, le))) || code().is_match(line) || listing().is_match(line) {
            continue;
        }
        let named_here = &t[vs..ve] == member.name;
        // A name that is not itself an error name (`E_OUTOFMEMORY`, `ENOMEM`) needs an error marker.
        // An `OUT_OF_*` member (`CL_OUT_OF_RESOURCES`) is an error name by itself too.
        // The JVM prints an OutOfMemoryError kind's detail message for nothing else: an error by itself.
        let self_marked = (!named_here && member.runtime == "java") || named_here && (member.name.contains("ERROR") || member.name.contains("Error") || member.name.contains("FAIL") || member.name.contains("Fail") || member.name.contains("OUT_OF"));
        // A failure status returned by the call itself needs no other marker.
        if !self_marked && !adjacent && !error_marker().is_match(line) {
            continue;
        }
        let reason = match member.meaning {
            vocabulary::Meaning::NotMemory => continue,
            vocabulary::Meaning::Oom => None,
            vocabulary::Meaning::Likely { reason, needs_memory_context } => {
                let (ws, we) = near(t, ls, le, 8);
                if needs_memory_context && !memory_near().is_match(&t[ws..we]) && !handle_create().is_match(line) {
                    continue;
                }
                // The line itself says an allocation failed ("status=4 message=\"Allocation Failure\""): certain.
                if alloc_words().is_match(line) {
                    None
                } else {
                    Some(reason)
                }
            }
        };
        // One failure per status per few lines (the same status repeated by a traceback).
        if let Some(prev) = out.iter_mut().find(|h| h.details.get("status").and_then(|v| v.as_str()) == Some(member.name) && t[h.end.min(ls)..ls].matches('\n').count() <= 6) {
            prev.end = prev.end.max(le);
            continue;
        }
        // .NET's System.OutOfMemoryException has DuckDB's Python class name: DuckDB's only where it is named.
        let dotnet = member.name == "OutOfMemoryException" && {
            let (ws, we) = near(t, ls, le, 4);
            !t[ws..we].to_ascii_lowercase().contains("duckdb")
        };
        let rt = vocabulary::runtime(if dotnet { "dotnet" } else { member.runtime }).expect("member's runtime");
        let start = ls + (line.len() - line.trim_start().len());
        let end = message_end(t, le);
        let mut h = Hit::new("generic.device-oom", start, end);
        h.priority = 85;
        h.phase = Some(Phase::Runtime);
        // errno's ENOMEM returned through a device runtime's call on the same line (RKNN's
        // "failed to allocate handle, ret: -1, errno: 12") is that device's allocation: the
        // words around it decide, as for a member that does not say.
        let through_device = member.runtime == "posix" && device_runtime(line).is_some();
        let space = match member.space {
            vocabulary::Space::Device => "device",
            vocabulary::Space::Host if !through_device => "host",
            vocabulary::Space::Host | vocabulary::Space::Either => match place(t, start, end) {
                (_, Some("device")) => "device",
                // Nothing beside it says: the paragraph around it may (a title's E_OUTOFMEMORY text, "DirectML" below).
                (_, None) if matches!(member.space, vocabulary::Space::Either) => {
                    let (ws, we) = near(t, start, end, 4);
                    match place(t, ws, we) {
                        (_, Some("device")) => "device",
                        _ => "host",
                    }
                }
                _ => "host",
            },
        };
        if space == "host" {
            h.id = "generic.host-oom";
            h.platform = Some(Platform::Cpu);
        } else if through_device {
            h.platform = device_runtime(line);
        } else {
            h.platform = Some(match rt.platform {
                // Vulkan and OpenCL are the platform themselves whatever GPU runs them (`nvidia-smi` beside
                // `vkAllocateMemory failed -2` is still Vulkan's allocation).
                Platform::Other if matches!(rt.id, "vulkan" | "opencl") => Platform::Other,
                // Another runtime of any vendor (DirectML, Neuron): the words around it may name one.
                Platform::Other => match place(t, start, end) {
                    (p, Some("device")) if p != Platform::Cpu => p,
                    _ => Platform::Other,
                },
                p => p,
            });
        }
        h.space(space);
        if let Some(r) = reason {
            h.likely(r);
        }
        h.detail("runtime", rt.id);
        h.detail("status", member.name);
        if let Some(v) = member.value {
            h.detail("status_value", v);
        }
        h.detail("status_source", if dotnet { vocabulary::DOTNET_OOM } else { member.source });
        h.code_in_log = None;
        sizes(&t[start..end], &mut h);
        out.push(h);
    }
    if t.contains("algorithm to run convolution") {
        for m in no_cudnn_algo().find_iter(t) {
            let Some((ls, le)) = free_line(t, &existing, &out, m.start(), m.end()) else { continue };
            if mentioned(t, ls, m.start(), le) {
                continue;
            }
            // The convolution autotuner found no algorithm that fits: cuDNN's own memory, as for
            // the masked cuDNN statuses.
            let mut h = disguised("xla-gpu.masked-cudnn", t, ls, le);
            h.platform = Some(Platform::Cuda);
            h.likely("every cuDNN algorithm was passed over; the framework skips an algorithm whose workspace it cannot allocate, so with no other error the GPU was out of memory (an unsupported input or a cuDNN/CUDA mismatch reads the same)");
            h.detail("library", "cudnn");
            out.push(h);
        }
    }
    // TensorFlow's copy between host and device checks its tensors first (common_runtime/gpu/gpu_util.cc,
    // `PrepareCopy`: `if ((dst->TotalBytes() > 0) && !dst->IsInitialized()) return
    // errors::Internal("Dst tensor is not initialized.");`, the same in pluggable_device_util.cc): the
    // destination has bytes but no buffer, its allocation failed, which on a device is memory.
    if t.contains("Dst tensor is not initialized") {
        for m in dst_tensor().find_iter(t) {
            let Some((ls, le)) = free_line(t, &existing, &out, m.start(), m.end()) else { continue };
            if mentioned(t, ls, m.start(), le) {
                continue;
            }
            let mut h = disguised("generic.device-oom", t, ls, le);
            h.likely("TensorFlow copies host data into a device tensor whose buffer was never allocated (tensorflow/core/common_runtime/gpu/gpu_util.cc: `Dst tensor is not initialized.`); the device allocation failing for lack of memory is the usual reason");
            h.detail("framework", "tensorflow");
            out.push(h);
        }
    }
    // A CUDA library's handle creation checked against success (TensorFlow's `CHECK(cusolverDnCreate(&h) ==
    // CUSOLVER_STATUS_SUCCESS) << "Failed to create cuSolverDN instance."`): the handle's memory could not be had.
    if t.contains("_STATUS_SUCCESS") {
        for c in handle_create_failed().captures_iter(t) {
            let m = c.get(0).unwrap();
            let Some((ls, le)) = free_line(t, &existing, &out, m.start(), m.end()) else { continue };
            let line = &t[ls..le];
            if prose().is_match(line) || listing().is_match(line) {
                continue;
            }
            let mut h = disguised("generic.device-oom", t, ls, le);
            h.platform = Some(Platform::Cuda);
            h.likely(NOT_INIT_HANDLE);
            h.detail("handle_call", &c["call"]);
            out.push(h);
        }
    }
    // Allocation calls that failed without a status (a status that is not memory rules them out).
    for c in alloc_call_failed().captures_iter(t) {
        let m = c.get(0).unwrap();
        let Some((ls, le)) = free_line(t, &existing, &out, m.start(), m.end()) else { continue };
        let line = &t[ls..le];
        if prose().is_match(line) || listing().is_match(line) || other_cause().is_match(line) {
            continue;
        }
        if status_value().captures_iter(line).any(|v| v.name("v").or(v.name("c")).or(v.name("n")).or(v.name("f")).and_then(|v| vocabulary::parse_value(v.as_str())).is_some_and(|v| v != 0)) {
            continue; // a stated status decides (read above when it is a memory one)
        }
        let call = c.name("call").or(c.name("call2")).map_or("", |m| m.as_str());
        let mut h = disguised("generic.device-oom", t, ls, le);
        let (start, end) = (h.start, h.end);
        h.platform = Some(match place(t, start, end) {
            (p, _) if p != Platform::Cpu => p,
            _ => Platform::Other,
        });
        h.likely("the runtime's device allocation call failed without saying why; lack of device memory is the usual reason");
        h.detail("allocation_call", call);
        sizes(&t[start..end], &mut h);
        out.push(h);
    }
    out
}

/// The sentence of a line that holds the phrase at `s..e`: a hint the runtime appends after its
/// message ("... 4294959104 bytes.Please try to reduce batch size") is not the message itself.
fn sentence_of(line: &str, s: usize, e: usize) -> &str {
    // A code span that opens the line holds what was printed, pasted verbatim before the
    // writer's own words ("`memory allocation of N bytes failed` when running ..."): the
    // span is the sentence.
    let lead = line.len() - line.trim_start().len();
    if line[lead..].starts_with('`') && lead < s {
        if let Some(close) = line[e..].find('`') {
            if !line[lead + 1..s].contains('`') {
                return &line[lead + 1..e + close];
            }
        }
    }
    let b = line.as_bytes();
    let ends_sentence = |i: usize| matches!(b[i], b'.' | b'!' | b'?') && b.get(i + 1).is_some_and(|&n| n == b' ' || n.is_ascii_uppercase());
    let start = (0..s).rev().find(|&i| ends_sentence(i)).map_or(0, |i| i + 1);
    let end = (e..b.len()).find(|&i| ends_sentence(i)).map_or(b.len(), |i| i + 1);
    &line[start..end]
}

/// The part of a line from the exception that raised the phrase at `at` (a traceback's last
/// source line glued before "RuntimeError: ..." in an issue title is code; the error is not).
fn message_part(line: &str, at: usize) -> &str {
    let before = &line[..at.min(line.len())];
    match exception_start().find_iter(before).last() {
        Some(m) => &line[m.start()..],
        None => line,
    }
}

/// The message: the line ending at `le`, and the next one when it continues the sentence
/// (a wrapped size, or the sizes on a line of their own).
fn message_end(t: &str, le: usize) -> usize {
    if let Some((ns, ne)) = next_line(t, le) {
        let next = &t[ns..ne];
        let continues = next.trim_start().starts_with(|c: char| c.is_ascii_digit());
        if !next.trim().is_empty() && next.len() < 400 && (continues || requested().is_match(next) || free_sz().is_match(next)) && !prose().is_match(next) {
            return size_lines_end(t, ne);
        }
    }
    size_lines_end(t, le)
}

/// The end of the labeled size lines that follow a message (one blank line may stand between):
/// "Total GPU memory (GiB): 140.06" under TensorRT-LLM's "insufficient GPU memory", a runtime's
/// `Requested: … / Free: …` table. At most eight lines.
fn size_lines_end(t: &str, le: usize) -> usize {
    let mut end = le;
    let mut at = le;
    let (mut blank, mut other) = (false, 0);
    for _ in 0..9 {
        let Some((ns, ne)) = next_line(t, at) else { break };
        let line = &t[ns..ne];
        at = ne;
        if line.trim().is_empty() {
            if blank {
                break;
            }
            blank = true;
            continue;
        }
        if line.len() > 200 || prose().is_match(line) {
            break;
        }
        // Read with the lines above it: a list states its unit once, or in its largest figure only
        // (XGBoost's "- Free memory: 11310923776" over "- Requested memory: 47996").
        let keyed = |s: &str| crate::sizes::labeled(s, oomdoc_units::UnitStyle::Binary).sizes.iter().filter(|l| l.key.is_some()).count();
        let ms = t[..le].rfind('\n').map_or(0, |i| i + 1);
        if keyed(line) > 0 || keyed(&t[ms..ne]) > keyed(&t[ms..ns]) {
            end = ne;
        } else {
            // A heading between the message and its figures ("The following component could not be created: KV cache").
            other += 1;
            if other > 2 {
                break;
            }
        }
    }
    end
}

/// The line reads as people writing about a failure (questions, first person, hints).
pub(crate) fn is_prose(line: &str) -> bool {
    prose().is_match(line)
}

/// The phrase sits inside quotes that open after a space (not `error='...'`, a value).
fn quoted(t: &str, ls: usize, at: usize, le: usize) -> bool {
    let before = &t[ls..at];
    let Some(q) = before.rfind(|c| c == '\'' || c == '"' || c == '`') else { return false };
    let qc = before[q..].chars().next().unwrap_or('"');
    let opener_ok = !before[..q].trim().is_empty() && before[..q].chars().last().map_or(false, |c| c.is_whitespace() || c == '(');
    let word_before = before[q + 1..].split_whitespace().count() <= 3;
    // `return error "…"`, `message: '…'`: the quotes hold the error that was printed.
    let lead = before[..q].trim_end().trim_end_matches(':').to_ascii_lowercase();
    let names_an_error = ["error", "message", "exception", "errors"].iter().any(|w| lead.ends_with(w));
    let reported = reported_quote(before);
    // The quote opens with the exception class that raised it: a pasted error, not a mention.
    let pasted_exception = exception_start().find(&before[q + 1..]).is_some_and(|m| m.start() == 0);
    opener_ok && word_before && !names_an_error && !reported && !pasted_exception && t[at..le].contains(qc)
}

/// The last quote before the phrase opens right after a verb that reports what was printed:
/// `got 'Insufficient VRAM'`, `throws "RuntimeError: ..."`.
fn reported_quote(before: &str) -> bool {
    let Some(q) = before.rfind(|c| c == '\'' || c == '"' || c == '`') else { return false };
    // Still open: the phrase is inside it.
    let qc = before[q..].chars().next().unwrap_or('"');
    if before.matches(qc).count() % 2 == 0 {
        return false;
    }
    let lead = before[..q].trim_end().to_ascii_lowercase();
    lead.rsplit(|c: char| !c.is_ascii_alphanumeric()).next().is_some_and(|w| ["got", "get", "gets", "getting", "throws", "throw", "throwing", "raised", "raises", "hit", "hitting", "encountered", "shows", "showing", "returned", "returns"].contains(&w))
}

/// `MemoryError` is a memory failure when it is raised with a message (`MemoryError: ...`);
/// bare `MemoryError` lines are the host family's.
fn after_is_message(t: &str, at: usize, le: usize) -> bool {
    let rest = t[at..le].trim_start();
    rest.starts_with(':') && rest[1..].trim().len() > 3
}

fn has_size_word(s: &str) -> bool {
    requested().is_match(s) || size_eq().is_match(s)
}

fn sizes(msg: &str, h: &mut Hit) {
    let req = requested().captures_iter(msg).map(|c| c.name("v").map_or("", |m| m.as_str())).find(|v| v.starts_with("0x") || v.starts_with("0X") || has_unit(v));
    if let Some(v) = req {
        h.size(SizeKey::Requested, v);
        if h.get(SizeKey::Requested).is_none() && oomdoc_units::parse_size(v).is_none() {
            // Printed, but past any byte count (digits run together, a wrapped-around length).
            h.size_notes.push(format!("dropped \"{v}\" (requested): more bytes than any memory has, or not a byte count"));
        }
    }
    if h.get(SizeKey::Requested).is_none() {
        if let Some(c) = memory_eq().captures(msg).filter(|c| c.name("u").is_none()) {
            if let Ok(b) = c["v"].parse::<u64>() {
                h.bytes(SizeKey::Requested, b, c["v"].to_string());
            }
        }
    }
    if h.get(SizeKey::Requested).is_none() {
        // Not a property of a style sheet or a kebab-case name (`font-size: 15.04px`): a size word
        // after '-' or a figure that runs on into a fraction or a unit is not a byte count.
        let bytes_like = |c: &regex::Captures| {
            let m = c.get(0).unwrap();
            let v = c.name("v").or(c.name("w")).unwrap();
            let glued_before = msg[..m.start()].ends_with(['-', '_']);
            let rest = &msg[v.end()..];
            let runs_on = rest.starts_with('.') && rest[1..].starts_with(|ch: char| ch.is_ascii_digit()) || rest.starts_with(|ch: char| ch.is_ascii_alphabetic());
            !glued_before && !runs_on
        };
        if let Some(v) = size_eq().captures_iter(msg).find(|c| bytes_like(c)).and_then(|c| c.name("v").or(c.name("w"))) {
            let v = v.as_str();
            let bytes = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => v.chars().filter(|ch| ch.is_ascii_digit()).collect::<String>().parse::<u64>().ok(),
            };
            if let Some(b) = bytes {
                h.bytes(SizeKey::Requested, b, v.to_string());
            }
        }
    }
    for (re, key) in [(free_sz(), SizeKey::Free), (total_sz(), SizeKey::Total), (limit_sz(), SizeKey::Limit), (alloc_sz(), SizeKey::Allocated)] {
        // The first occurrence that carries a unit ("GPU 0, available" is not a size).
        let v = re.captures_iter(msg).filter_map(|c| c.name("a").or(c.name("b")).or(c.name("c"))).find(|v| has_unit(v.as_str()));
        if let Some(v) = v {
            if h.get(key).is_none() {
                h.size(key, v.as_str());
            }
        }
    }
    if let Some(c) = used_of().captures(msg) {
        if h.get(SizeKey::Used).is_none() {
            h.size(SizeKey::Used, &c["u"]);
        }
        if h.get(SizeKey::Limit).is_none() {
            h.size(SizeKey::Limit, &c["l"]);
        }
    }
    // Anything else the message labels, in any layout (tables, `Label : value`).
    h.labeled_sizes(msg, oomdoc_units::UnitStyle::Binary);
    // No grammar vouches for these numbers: one no memory has is dropped with a note.
    let mut notes = Vec::new();
    h.sizes.retain(|(k, p)| match crate::sizes::plausible(p) {
        Some(n) => {
            notes.push(format!("{n} ({})", k.name()));
            false
        }
        None => true,
    });
    h.size_notes.extend(notes);
}

/// A size with a unit (or `bytes`): a bare number is never read as bytes here.
fn has_unit(v: &str) -> bool {
    v.trim_end().ends_with(|c: char| c.is_ascii_alphabetic())
}

/// Platform and memory space from the words of the message's line, then of the lines around it.
fn place(t: &str, start: usize, end: usize) -> (Platform, Option<&'static str>) {
    let (ws, we) = near(t, start, end, 2);
    for scope in [&t[start..end], &t[ws..we]] {
        if let Some(found) = place_in(scope) {
            // Device memory named beside host memory, no vendor: the lines around may name it (Cycles'
            // "out of GPU and shared host memory" under its `cuCtxPushCurrent` errors).
            if found == (Platform::Other, Some("device")) && w_host().is_match(scope) {
                if let Some((p, Some("device"))) = place_in(&t[ws..we]) {
                    return (p, Some("device"));
                }
            }
            return found;
        }
    }
    if w_host_weak().is_match(&t[start..end]) {
        return (Platform::Cpu, Some("host"));
    }
    (Platform::Other, None)
}

/// Platform and memory space from the words of one scope, when they say.
fn place_in(scope: &str) -> Option<(Platform, Option<&'static str>)> {
    let vendor = if w_cuda().is_match(scope) {
        Some(Platform::Cuda)
    } else if w_rocm().is_match(scope) {
        Some(Platform::Rocm)
    } else if w_xpu().is_match(scope) {
        Some(Platform::Xpu)
    } else if w_npu().is_match(scope) {
        Some(Platform::Npu)
    } else if w_metal().is_match(scope) {
        Some(Platform::Metal)
    } else if w_mps().is_match(scope) {
        Some(Platform::Mps)
    } else if w_tpu().is_match(scope) {
        Some(Platform::Tpu)
    } else {
        // A device runtime's own calls or names (`RKNN`, `rknn_init`) name its platform.
        device_runtime(scope)
    };
    let host = w_host().is_match(scope);
    let device = w_device().is_match(scope);
    match (vendor, host, device) {
        (Some(p), false, _) | (Some(p), true, true) => Some((p, Some("device"))),
        (None, true, false) => Some((Platform::Cpu, Some("host"))),
        (None, false, true) => Some((Platform::Other, Some("device"))),
        // A vendor word and a host word without a device word: the host side of that stack
        // (pinned host memory, the CPU allocator of a GPU build) — say host.
        (Some(_), true, false) => Some((Platform::Cpu, Some("host"))),
        // Memory named as the device's ("Cannot malloc 49.0002 MB GPU memory", Paddle's
        // allocator) is the device's, whatever verb allocates it.
        (None, true, true) if w_device_memory().is_match(scope) => Some((Platform::Other, Some("device"))),
        (None, true, true) => None,
        (None, false, false) => None,
    }
}

/// The platform of a device runtime (one whose platform is a vendor's, not `Other` or the
/// host's) whose calls or names occur in `s`.
fn device_runtime(s: &str) -> Option<Platform> {
    vocabulary::RUNTIMES
        .iter()
        .zip(runtime_calls())
        .find(|(rt, re)| !matches!(rt.platform, Platform::Other | Platform::Cpu) && re.is_match(s))
        .map(|(rt, _)| rt.platform)
}

/// The text between the backticks around `s..e` of a line (empty when not inside a pair).
fn backtick_content(line: &str, s: usize) -> &str {
    let open = line[..s].rfind('`');
    let close = line[s..].find('`').map(|i| s + i);
    match (open, close) {
        (Some(o), Some(c)) if line[..o].matches('`').count() % 2 == 0 => &line[o + 1..c],
        _ => "",
    }
}

/// A phrase inside backticks in a sentence that reports it, not one that advises or asks.
fn backticked_report(line: &str, s: usize, e: usize) -> bool {
    !backtick_content(line, s).is_empty() && !hint().is_match(sentence_of(line, s, e.min(line.len())))
}

fn line_bounds(t: &str, s: usize, e: usize) -> (usize, usize) {
    let ls = t[..s].rfind('\n').map_or(0, |i| i + 1);
    let le = t[e..].find('\n').map_or(t.len(), |i| e + i);
    (ls, le)
}

fn next_line(t: &str, le: usize) -> Option<(usize, usize)> {
    if le >= t.len() {
        return None;
    }
    let s = le + 1;
    let e = t[s..].find('\n').map_or(t.len(), |i| s + i);
    Some((s, e))
}

/// A device failure this layer reads in disguise on the line `ls..le` (a library status, a
/// handle check or an allocation call that says no more): from the line's first word to the
/// message's end, ranked after the named statuses (85).
fn disguised(id: &'static str, t: &str, ls: usize, le: usize) -> Hit {
    let line = &t[ls..le];
    let mut h = Hit::new(id, ls + (line.len() - line.trim_start().len()), message_end(t, le));
    h.priority = 86;
    h.phase = Some(Phase::Runtime);
    h.space("device");
    h
}

/// The bounds of the line holding `s..e`, unless the text within two lines of it is
/// [`claimed`]: a message near a family's or this layer's hit is theirs.
fn free_line(t: &str, existing: &[(usize, usize)], read: &[Hit], s: usize, e: usize) -> Option<(usize, usize)> {
    let (ls, le) = line_bounds(t, s, e);
    let (ns, ne) = near(t, ls, le, 2);
    (!claimed(existing, read, ns, ne)).then_some((ls, le))
}

/// Whether the line `ls..le` only mentions the message at `at`: prose about it, code that
/// prints it, or the words in quotes.
fn mentioned(t: &str, ls: usize, at: usize, le: usize) -> bool {
    let line = &t[ls..le];
    prose().is_match(line) || code().is_match(line) || quoted(t, ls, at, le)
}

/// Whether `s..e` overlaps a span a family grammar claimed (`existing`) or a hit this layer
/// read already (`read`): a message near either is theirs.
fn claimed(existing: &[(usize, usize)], read: &[Hit], s: usize, e: usize) -> bool {
    existing.iter().any(|&(hs, he)| hs < e && s < he) || read.iter().any(|h| h.start < e && s < h.end)
}

/// The span of `n` lines before and after a line span.
fn near(t: &str, ls: usize, le: usize, n: usize) -> (usize, usize) {
    let mut s = ls;
    for _ in 0..n {
        if s == 0 {
            break;
        }
        s = t[..s - 1].rfind('\n').map_or(0, |i| i + 1);
    }
    let mut e = le;
    for _ in 0..n {
        if e >= t.len() {
            break;
        }
        e = t[e + 1..].find('\n').map_or(t.len(), |i| e + 1 + i);
    }
    (s, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(t: &str) -> Option<Hit> {
        let mut hits = Vec::new();
        recognize(t, &mut hits);
        assert!(hits.len() <= 1, "{hits:?}");
        hits.pop()
    }

    #[test]
    fn frameworks_without_a_grammar() {
        // apache/mxnet#16803 (title)
        let h = one("src/storage/./pooled_storage_manager.h:157: cudaMalloc failed: out of memory").unwrap();
        assert_eq!((h.id, h.platform), ("generic.device-oom", Some(Platform::Cuda)));
        // PaddlePaddle/Paddle#42228
        let h = one("RuntimeError: ResourceExhaustedError:\n\nOut of memory error on GPU 0. Cannot allocate 98.000244MB memory on GPU 0, 6.000000GB memory has been allocated and available memory is only 0.000000B.\n\nPlease check whether there is any other process using GPU 0.").unwrap();
        assert_eq!(h.id, "generic.device-oom");
        assert_eq!(h.get(SizeKey::Requested), oomdoc_units::parse_size("98.000244MB").map(|p| p.bytes));
        assert_eq!(h.get(SizeKey::Allocated), Some(6 << 30));
        assert_eq!(h.get(SizeKey::Free), Some(0));
    }

    #[test]
    fn a_size_wrapped_onto_the_next_line() {
        // PaddlePaddle/Paddle#26892 (the free size wrapped by the reporter's terminal)
        let h = one("报错信息：Out of memory error on GPU 0. Cannot allocate 1.531250GB memory on GPU 0, available memory is only \n                   416.625000MB.\n\n                   Please check whether there is any other process using GPU 0.").unwrap();
        assert_eq!(h.get(SizeKey::Requested), oomdoc_units::parse_size("1.531250GB").map(|p| p.bytes));
        assert_eq!(h.get(SizeKey::Free), oomdoc_units::parse_size("416.625000MB").map(|p| p.bytes));
        // "GPU 0, available" is not a size.
        assert_eq!(h.get(SizeKey::Allocated), None);
    }

    #[test]
    fn host_runtimes_name_their_memory() {
        // Each names host memory by the runtime's own vocabulary (vocabulary::HOST_NAMES), not by a device or host word.
        for (t, why) in [
            // nsg-ethz/synet#1: a Python host library's exception module.
            ("  File \"/home/lucky/anaconda3/envs/cs-synet/lib/python2.7/site-packages/z3/z3core.py\", line 1372, in Check\n    raise self.Exception(self.get_error_message(ctx, err))\nz3.z3types.Z3Exception: out of memory\n", "z3"),
            // dask/dask#6685 (title): pandas' C parser.
            ("Reading multiple CSV files of 200 MB results in 'pandas.errors.ParserError: Error tokenizing data. C error: out of memory'\n", "pandas"),
            // Hexeption/MCP-Reborn#391: Gradle relays the JVM's heap kind.
            ("* What went wrong:\nOut of memory. Java heap space\n", "jvm"),
            // community-scripts/ProxmoxVE#6328: V8's GC trace, then its fatal heap OOM.
            ("... allocation failure; GC in old space requested\n... JavaScript heap out of memory\n... FatalProcessOutOfMemory\n", "v8"),
            // rust-lang/rust#46865: Rust 1.2x's heap OOM abort.
            ("running 1 test\nfatal runtime error: allocator memory exhausted\n", "rust"),
        ] {
            let h = one(t).unwrap_or_else(|| panic!("{why}: silent"));
            assert_eq!((h.id, h.platform, h.memory_space.as_deref(), h.confidence), ("generic.host-oom", Some(Platform::Cpu), Some("host"), Confidence::Certain), "{why}");
        }
        // A device word still wins over a host library's module: CuPy is not in the list, and a GPU named is a GPU.
        let h = one("pandas.errors.ParserError: CUDA out of memory on GPU 0").unwrap();
        assert_eq!(h.memory_space.as_deref(), Some("device"));
    }

    #[test]
    fn symbol_tables_are_names_not_failures() {
        // /proc/kallsyms (issue 25, D7): the kernel's OOM handlers by name.
        let kallsyms = "ffffffffa1e2c3d0 T __pfx_pagefault_out_of_memory\nffffffffa1e2c3e0 T pagefault_out_of_memory\nffffffffa1e2c500 T out_of_memory\nffffffffa1e2c700 t mem_cgroup_out_of_memory\t[kernel]";
        assert!(one(kallsyms).is_none());
        // `nm` output of a library.
        assert!(one("0000000000a1b2c0 T _ZN3c1018OutOfMemoryErrorD0Ev\n0000000000a1b2f0 t handle_out_of_memory").is_none());
        // A name glued to the phrase is no error marker: `pagefault` of `pagefault_out_of_memory`.
        assert!(one("called pagefault_out_of_memory from the fault path").is_none());
        // A status name carries its own error word: `VPI_ERROR_OUT_OF_MEMORY`.
        assert!(one("VPI_ERROR_OUT_OF_MEMORY").is_some());
        // A message that names such a function still counts.
        assert!(one("ERROR: out of memory in pagefault_out_of_memory").is_some());
    }

    #[test]
    fn prose_and_hints_stay_silent() {
        assert!(one("If you encounter CUDA out of memory, try to set --tile with a smaller number.").is_none());
        assert!(one("I encountered OOM with 50GB GPUs.").is_none());
        assert!(one("OSError: [Errno 28] No space left on device").is_none());
        assert!(one("Add total GPU memory capacity to the inference performance table").is_none());
    }

    #[test]
    fn a_pronoun_inside_a_path_is_no_prose() {
        // dmlc/xgboost#10301: a Windows CI path holds `-group-i-0b37…`; `\bI\b` took it for "I".
        let t = "XGBoostError: [16:43:48] C:\\buildkite-agent\\builds\\buildkite-windows-cpu-autoscaling-group-i-0b3782d1791676daf-1\\xgboost\\xgboost-ci-windows\\src\\data\\../common/device_helpers.cuh:431: Memory allocation error on worker 0: bad allocation: cudaErrorMemoryAllocation: out of memory";
        let h = one(t).expect("a path is no sentence");
        assert_eq!((h.id, h.platform), ("generic.device-oom", Some(Platform::Cuda)));
        assert!(one("Error: /home/me/src/my-app/alloc.cc:12: out of memory on the GPU").is_some());
        // ROCm/legacy-rocm-build#2480: ROCclr's log prefix counts microseconds, `9616777840 us:`.
        assert!(one(":1:memory.cpp               :347 : 9616777840 us: 4277 : [tid:0x7f2accbfe6c0] Video memory allocation failed!").is_some());
        // The words themselves still make prose.
        assert!(one("Error: I get out of memory on the GPU").is_none());
        assert!(one("Error: out of memory, it gave us nothing on the GPU").is_none());
        assert!(one("Error: out of memory on the GPU, help me.").is_none());
    }

    #[test]
    fn any_capitalisation_and_wrapped_lines() {
        for t in [
            "ERROR: OUT OF MEMORY while allocating 512 MiB on the GPU",
            "Error: out-of-memory while allocating 512 MiB on the GPU",
            "Error: OutOfMemory: allocating 512 MiB on the GPU",
            "Error: failed to\nallocate 512 MiB on the GPU",
        ] {
            let h = one(t).unwrap_or_else(|| panic!("{t}"));
            assert_eq!((h.id, h.get(SizeKey::Requested)), ("generic.device-oom", Some(512 << 20)), "{t}");
        }
        // Hex sizes are read exactly; a bare number is never taken as bytes.
        let h = one("fatal: could not allocate 0x40000000 of host memory").unwrap();
        assert_eq!((h.id, h.get(SizeKey::Requested)), ("generic.host-oom", Some(1 << 30)));
        let h = one("error: cannot allocate 3 blocks of memory on the CPU").unwrap();
        assert_eq!(h.get(SizeKey::Requested), None);
    }

    #[test]
    fn a_named_device_wins_over_python_memoryerror() {
        // tinygrad/tinygrad#7902
        let h = one("MemoryError: Metal OOM while allocating size=4000000000").unwrap();
        assert_eq!((h.id, h.platform, h.get(SizeKey::Requested)), ("generic.device-oom", Some(Platform::Metal), Some(4_000_000_000)));
    }

    /// Every hit, for texts that hold one failure per runtime status.
    fn all(t: &str) -> Vec<Hit> {
        let mut hits = Vec::new();
        recognize(t, &mut hits);
        hits
    }

    #[test]
    fn a_status_by_value_beside_the_runtimes_call() {
        // Project-HAMi/HAMi#585: the CUDA driver's CUDA_ERROR_OUT_OF_MEMORY is 2.
        let h = one("[HAMI-core ERROR (pid:7 thread=140360328144640 allocator.c:115)]: cuMemoryAllocate failed res=2").unwrap();
        assert_eq!((h.id, h.platform, h.details["status"].as_str()), ("generic.device-oom", Some(Platform::Cuda), Some("CUDA_ERROR_OUT_OF_MEMORY")));
        // openvinotoolkit/openvino_notebooks#2740: OpenCL's -5 is CL_OUT_OF_RESOURCES, a likely OOM with its reason.
        let h = one("Caught exception: Exception from src/plugins/intel_gpu/src/runtime/ocl/ocl_stream.cpp:365:\n[GPU] clFlush, error code: -5").unwrap();
        assert_eq!((h.id, h.details["status"].as_str(), h.confidence), ("generic.device-oom", Some("CL_OUT_OF_RESOURCES"), Confidence::Likely));
        assert!(h.confidence_reason.as_deref().is_some_and(|r| r.contains("CL_OUT_OF_RESOURCES")));
        // The same call with a status that is not memory (CL_INVALID_WORK_GROUP_SIZE, openvino#23449).
        assert!(all("[GPU] clEnqueueNDRangeKernel, error code: -54").is_empty());
    }

    #[test]
    fn a_value_no_other_runtime_has_is_read_alone() {
        // microsoft/DirectML#361: -2147024882 is E_OUTOFMEMORY (0x8007000E); the DML allocator line says device.
        let hits = all("[W dml_heap_allocator.cc:97] DML allocator out of memory!\nTraceback (most recent call last):\n  File \"main.py\", line 9, in <module>\n    tensor1=tensor1.to(dml)\nRuntimeError: Unknown error -2147024882");
        assert!(hits.iter().any(|h| h.id == "generic.device-oom"), "{hits:?}");
        // microsoft/DirectML#672: -2005270521 is DXGI_ERROR_DEVICE_RESET, not memory.
        assert!(all("Unknown error -2005270521 was caught when testing torch-directml resnet50 demo").is_empty());
    }

    #[test]
    fn a_status_that_says_allocation_failed_is_certain() {
        // aws-neuron/aws-neuron-samples#96: NRT_RESOURCE (4) alone would be likely; the message says allocation.
        let h = one("RuntimeError: nrt_load_collectives status=4 message=\"Allocation Failure\"").unwrap();
        assert_eq!((h.details["status"].as_str(), h.confidence), (Some("NRT_RESOURCE"), Confidence::Certain));
    }

    #[test]
    fn a_negative_status_right_after_the_call() {
        // mbevand/silentarmy#59 (title): OpenCL's -4 is CL_MEM_OBJECT_ALLOCATION_FAILURE.
        let h = one("sa-solver clEnqueueNDRangeKernel (-4) error").unwrap();
        assert_eq!((h.id, h.details["status"].as_str()), ("generic.device-oom", Some("CL_MEM_OBJECT_ALLOCATION_FAILURE")));
        // n00mkrad/flowframes#12 (title, the reporter's typo): Vulkan's -2, no other error word needed.
        let h = one("vkAllocateMemory Faied -2").unwrap();
        assert_eq!(h.details["status"].as_str(), Some("VK_ERROR_OUT_OF_DEVICE_MEMORY"));
        // A value that is no member of the runtime's enum says nothing.
        assert!(all("vkAllocateMemory failed -1000072003").is_empty());
    }

    #[test]
    fn a_status_glued_after_a_colon() {
        // tensorflow/tensorflow#8710 (the wording a maintainer quotes): 2 is CUFFT_ALLOC_FAILED.
        let h = one("failed to create cuFFT batched plan:2").unwrap();
        assert_eq!((h.details["status"].as_str(), h.platform), (Some("CUFFT_ALLOC_FAILED"), Some(Platform::Cuda)));
        // jax-ml/jax#5147: 11 is CUFFT_INVALID_DEVICE, not memory.
        assert!(all("E external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_fft.cc:207] failed to create cuFFT batched plan:11").is_empty());
    }

    #[test]
    fn members_printed_by_description_label_or_wrapper() {
        // boostorg/compute#679 (Boost.Compute's opencl_error text for CL_MEM_OBJECT_ALLOCATION_FAILURE).
        let h = one("  what():  Memory Object Allocation Failure").unwrap();
        assert_eq!((h.id, h.memory_space.as_deref()), ("generic.device-oom", Some("device")));
        // nihui/realcugan-ncnn-vulkan#19: VkResult -10 is VK_ERROR_TOO_MANY_OBJECTS, the allocation count.
        let h = one("vkAllocateMemory failed -10").unwrap();
        assert_eq!(h.confidence, Confidence::Likely);
        // nvpro-samples/vk_gltf_renderer#4: the status after an error label, inside the reporter's sentence.
        assert!(one(r"when I try to load big scene and if data not fit to memory, I have red message nvpro_core\nvvk\memallocator_vma_vk.inl(142): Vulkan Error : VK_ERROR_OUT_OF_DEVICE_MEMORY and program exit.").is_some());
        // jzhangbs/Vis-MVSNet#38: cuSOLVER's INTERNAL_ERROR (7) where it creates its handle: likely.
        let h = one("RuntimeError: cusolver error: 7, when calling `cusolverDnCreate(handle)`").unwrap();
        assert_eq!((h.platform, h.confidence), (Some(Platform::Cuda), Confidence::Likely));
        // agis85/multimodal_segmentation#14: TensorFlow's CHECK on the handle's creation.
        let h = one("Check failed: cusolverDnCreate(&cusolver_dn_handle) == CUSOLVER_STATUS_SUCCESS Failed to create cuSolverDN instance.").unwrap();
        assert_eq!(h.confidence, Confidence::Likely);
        // ROCm/legacy-rocm-build#1483 and mindspore-ai/mindspore#172: page-locked host allocations are host memory.
        let h = one("[ERROR] MD(14433,7fea2effd700,python):2021-12-12-14:13:43.932.181 [mindspore/ccsrc/minddata/dataset/util/arena.cc:250] Init] cudaHostAlloc failed, ret[2], out of memory").unwrap();
        assert_eq!(h.memory_space.as_deref(), Some("host"));
    }

    #[test]
    fn sycl_unified_runtime_and_rknn_members() {
        // ggml-org/llama.cpp#25286 and ggml-org/ggml#1072.
        let h = one("level_zero backend failed with error: 39 [UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY]").unwrap();
        assert_eq!((h.id, h.platform), ("generic.device-oom", Some(Platform::Xpu)));
        assert!(all("level_zero backend failed with error: 20 [UR_RESULT_ERROR_DEVICE_LOST]").is_empty());
        let h = one("Native API failed. Native API returns: 40 (UR_RESULT_ERROR_OUT_OF_RESOURCES)").unwrap();
        assert_eq!(h.confidence, Confidence::Likely);
        // rockchip-linux/rknn-toolkit#400 (title).
        let h = one("Exception: RKNN init failed. error code: RKNN_ERR_MALLOC_FAIL").unwrap();
        assert_eq!((h.id, h.platform, h.memory_space.as_deref()), ("generic.device-oom", Some(Platform::Npu), Some("device")));
    }

    #[test]
    fn bare_byte_counts_and_npu_memory() {
        // rockchip-linux/rknn-toolkit2#44: the size beside the flags, never the flags; npu memory is the device's.
        let h = one("E/RKNN: failed to malloc npu memory!, size: 59187712, flags: 0x2").unwrap();
        assert_eq!((h.id, h.platform, h.get(SizeKey::Requested)), ("generic.device-oom", Some(Platform::Npu), Some(59187712)));
        // huggingface/optimum-neuron#668: the count after "memory:" is bytes.
        let h = one("ERROR  TDRV:dmem_alloc_internal                     Failed to alloc DEVICE memory: 10485760").unwrap();
        assert_eq!((h.id, h.get(SizeKey::Requested)), ("generic.device-oom", Some(10485760)));
    }

    #[test]
    fn a_hint_glued_after_the_message_is_not_prose() {
        // openvinotoolkit/openvino.genai#2406: an overflowed request is dropped with a note, the limit kept.
        let h = one("[GPU] Exceeded max size of memory object allocation: requested 2305843008391495680 bytes, but max alloc size supported by device is 4294959104 bytes.Please try to reduce batch size or use lower precision.").unwrap();
        assert_eq!((h.id, h.get(SizeKey::Requested), h.get(SizeKey::Limit)), ("generic.device-oom", None, Some(4294959104)));
        assert!(!h.size_notes.is_empty());
        // The hint alone is still prose.
        assert!(one("Please try to reduce batch size to avoid out of memory errors.").is_none());
    }

    #[test]
    fn page_locking_is_not_allocation() {
        // abetlen/llama-cpp-python#708: mlock refused at RLIMIT_MEMLOCK, the model still loads.
        // elastic/elasticsearch#11433 and monero-project/monero#4766: the same refusal in words.
        assert!(all("[2015-05-30 11:23:53,596][WARN ][bootstrap                ] Unable to lock JVM Memory: error=12,reason=Cannot allocate memory. This can result in part of the JVM being swapped out").is_empty());
        assert!(all("ERROR\tdefault\tcontrib/epee/src/mlocker.cpp:63\tError locking page at 0x5595b3078000: Cannot allocate memory").is_empty());
        assert!(all("warning: failed to mlock 39813120-byte buffer (after previously locking 4106670080 bytes): Cannot allocate memory\nTry increasing RLIMIT_MLOCK ('ulimit -l' as root).").is_empty());
    }

    #[test]
    fn a_runtime_message_pasted_in_backticks_in_a_report() {
        // m-bain/whisperX#315 and nihui/zimage-ncnn-vulkan#39: the message in backticks inside a sentence that reports it.
        let h = one("I just updated my whisperx version and I am unexpectedly getting `cuda failed with error out of memory` after sometime of running").unwrap();
        assert_eq!((h.id, h.platform), ("generic.device-oom", Some(Platform::Cuda)));
        let h = one("When running with an RTX 3090 with 24gb VRAM and 64gb system RAM, I am getting lots of `vkAllocateMemory failed -2` errors.").unwrap();
        assert_eq!((h.id, h.platform), ("generic.device-oom", Some(Platform::Other)));
        // Advice with the same words stays silent.
        assert!(all("If you see `vkAllocateMemory failed -2`, try a smaller tile size.").is_empty());
        assert!(all("To fix `CUDA out of memory` errors, reduce the batch size.").is_empty());
    }

    #[test]
    fn a_quote_after_a_reporting_verb_or_opening_with_its_exception() {
        // vladmandic/sdnext#2916 (a title) and turboderp-org/exllamav3#61.
        assert!(one("[Issue]: \"RuntimeError: Could not allocate tensor with XXXXXXXX bytes\"").is_some());
        assert!(one("Run ERNIE-4.5-300B with 5x20G 3080 got 'Insufficient VRAM for model'").is_some());
        // A mention in a sentence about catching it is still one.
        assert!(all("catch exceptions with 'CUDA out of memory' and retry").is_empty());
    }

    #[test]
    fn figures_listed_under_the_message() {
        // NVIDIA/TensorRT-LLM#5872: the unit is stated once in each label, a heading stands between.
        let t = "[TRT-LLM] [RANK 1] [E] Failed to initialize executor on rank 1: Executor creation failed due to insufficient GPU memory.\n\nThe following component could not be created: KV cache\nTotal GPU memory (GiB): 140.06\nFree GPU memory before component creation attempt (GiB): 108.86\n";
        let h = one(t).unwrap();
        assert_eq!((h.platform, h.get(SizeKey::Total), h.get(SizeKey::Free)), (Some(Platform::Cuda), Some(150388279869), Some(116887534961)));
    }

    #[test]
    fn errno_through_a_device_runtime_and_the_runtime_names_its_platform() {
        // airockchip/rknn-llm#62: RKNN's handle allocation fails with ENOMEM: the NPU's memory, not the heap.
        let h = all("E RKNN: [10:48:59.683] failed to allocate handle, ret: -1, errno: 12, errstr: Cannot allocate memory").into_iter().next().unwrap();
        assert_eq!((h.id, h.platform, h.memory_space.as_deref()), ("generic.device-oom", Some(Platform::Npu), Some("device")));
    }

    #[test]
    fn two_numbers_run_together_are_dropped() {
        // deepspeedai/DeepSpeedExamples#321: two ranks' Rust abort lines written into each other.
        let t = "memory allocation of memory allocation of 20971522097152 bytes failed\n bytes failed\nmemory allocation of 2097152 bytes failed";
        let h = all(t).into_iter().next().unwrap();
        assert_eq!(h.get(SizeKey::Requested), Some(2097152));
        assert!(h.size_notes.iter().any(|n| n.contains("20971522097152")), "{:?}", h.size_notes);
    }
}
