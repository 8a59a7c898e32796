//! Failures stated in words, and the runtime a text names.
//!
//! Many reports are a title and a few sentences ("vLLM OOM with Qwen2-72B on 2xA100",
//! "RAM usage keeps increasing until the process is killed"), or a log whose failing
//! runtime is named away from the line that failed. Two pieces, one vocabulary:
//!
//! - [`recognize`]: where no runtime message in the text yields a finding, a sentence that
//!   *states* that something ran out of memory, was OOM-killed or exceeded memory is a finding
//!   of the family-level entry of the runtime the text names, `confidence: likely`, with the
//!   reason [`REASON`]. Statements only: questions and hypotheticals about memory use ("how to
//!   reduce memory", "if you run out of memory, lower …", "to avoid OOM"), feature requests,
//!   changelog lines ("fix OOM in …"), warnings ("may run out of memory") and negations
//!   ("no longer OOMs") are not failures. Built from the vocabulary of memory failures and the
//!   shape of a sentence, never from particular lines.
//! - [`attribute`]: a generic finding (`generic.oom`, `generic.device-oom`, `generic.host-oom`)
//!   from a line that does not say whose it is, in a text that names one runtime or engine,
//!   becomes that runtime's entry for that memory, with the platform its device words give.
//!
//! The runtime names are the case's ([`crate::facts::case::frameworks`], built on
//! [`crate::facts::context::frameworks`]); the platform comes from device words (CUDA, NVIDIA
//! and its GPU names; ROCm, AMD, Radeon, ZLUDA; Apple silicon, MPS, Metal; TPU; NPU/Ascend; XPU/Arc;
//! RAM, swap and kills for host memory).

use super::Hit;
use crate::finding::{Confidence, SizeKey};
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

/// Literals that can start a block for a failure stated in words (the scanner's own list has
/// "out of memory", " OOM", "Killed" …): a lower-case kill, and memory said to be exceeded.
/// Each holds one of the scanner's 64 anchors (`kill`, `emory`); "out of VRAM", a lower-case
/// "oom" or "OOM" opening a line would need anchors of their own (scan.rs `ANCHOR_BUCKETS`).
// "OOM " and " oom": a line or title that opens with the word (" OOM" is the generic layer's).
pub const TRIGGERS: &[&str] = &["killed", "xceeded memory", "xceeds memory", "emory exceeded", "OOM ", " oom"];

/// `confidence_reason` of a finding stated in prose (README, JSON contract).
pub const REASON: &str = "stated in prose: the text says the job ran out of memory, but no runtime message is in it; the entry follows the runtime and device the text names";

// What ran out, in words: "out of (GPU) memory", "OOM", "OOMs", "OOM-killed", "ran out of VRAM",
// "not enough memory", "insufficient VRAM", "exceeded the memory limit", "memory limit exceeded",
// "CUDA malloc fails". Shared memory is left out: a kernel's (Triton, CUDA), /dev/shm or Windows'
// shared GPU memory, which prose does not tell apart. (A runtime's own "failed to allocate …" lines are the generic layer's:
// where it leaves one, for a reason it states, prose does not take it.)
grammar!(
    oom_phrase,
    r"(?i)\bout[ -]of[ -](?:(?:gpu|device|host|cpu|system|video|graphics|cuda|gpu's)[ -])?(?:memory|mem|v?ram)\b|\bOOM(?:s|ed|ing|'d|[- ]?kill(?:ed|s)?)?\b|\bnot enough (?:\w+ )?(?:memory|v?ram)\b|\binsufficient (?:\w+ )?(?:memory|v?ram)\b|\bexceed(?:s|ed|ing)? (?:the |its |available |allowed )?(?:\w+ )?(?:memory|v?ram)(?: limit)?\b|\b(?:memory|v?ram) (?:limit )?(?:was |is |gets? )?(?:exceeded|exhausted)\b|\b(?:cuda ?)?(?:c?malloc|alloc(?:ation)?) (?:fails|failed|failure)\b"
);
// A kill stated in words; it counts only in a sentence that names memory.
grammar!(kill_word, r"(?i)\b(?:killed|kills)\b");
// Kills for other reasons than memory (issue 21 §4): time limits, cancels, preemption, probes, signals sent.
grammar!(other_kill, r"(?i)\btime\s?limit|\btime-?out|\btimed out|\bpreempt\w*|\bsigterm\b|\bscancel\b|\bcancel\w*|\bliveness\b|\bwall\s?time\b|\bctrl\+c\b");
grammar!(concession, r"(?i)\beven (?:if|when|though|with)\b");
grammar!(memory_word, r"(?i)\b(?:memory|v?ram|oom|swap)\b");
// Sentence shapes that are not a report of a failure: hypotheticals, advice and how-to,
// warnings (modal verbs), feature requests and docs. "could not" is a failure's own words.
grammar!(
    not_a_report,
    r"(?i)\b(?:if|unless|in case|whether|can\s|seems?|looks? like|appears? to|probably|maybe|perhaps|suspect|guess|due to|because|caused by|related to|expected|explain\w*|means?|typically|usually|often|sometimes|generally|lead(?:s|ing)? to|to (?:avoid|prevent|reduce|handle|save|lower|minimi[sz]e|debug|detect|catch)|avoid(?:s|ed|ing)?|prevent(?:s|ed|ing)?|how (?:to|can|do|does|much|many|would)|is it possible|possible to|would|might|may|could (?:be|have|give|cause|lead|happen|use|run|go|get|try|you|i|we|it|this|someone|anyone)|can (?:cause|lead|result|trigger|happen)|should|will|won't|(?:risk|chance) of|prone to|likely to|tips?|guide|docs?|documentation|feature request|support(?:s|ed)? for|option to|ability to|allow(?:s|ing)? (?:to|users)|e\.g\.|for example|such as|catch(?:es|ing)?|detect(?:s|ed|ing)?|monitor(?:s|ing)?|handl(?:e|es|ing)|graceful(?:ly)?)\b"
);
// A changelog or commit line: a fix or a feature named, not a failure ("fix OOM in …",
// "- Added support for …", "resolved the out-of-memory issue").
grammar!(
    changelog,
    r"(?i)^\s*(?:[-*•]\s*|\d+\.\s+)?\[?(?:fix(?:e[sd])?|feat(?:ure)?|add(?:s|ed)?|support|improve[sd]?|chore|docs?|refactor|bump|reduce[sd]?|lower(?:s|ed)?|optimi[sz](?:e[sd]?|ation)|enable[sd]?|implement(?:s|ed)?|introduce[sd]?|release|changelog|what's new|debug|investigate)\b|\b(?:fix(?:e[sd]|ing)?|resolve[sd]?|solve[sd]?|address(?:es|ed)?|mitigate[sd]?|workaround for)\b[^.\n]{0,40}\b(?:oom|out[ -]of[ -]memory|memory (?:leak|issue|error))"
);
// A negation just before the phrase ("no OOM", "doesn't run out of memory", "no longer OOMs").
grammar!(negated, r"(?i)\b(?:no|not|never|without|don't|doesn't|didn't|isn't|wasn't|aren't|no longer|instead of|rather than|nor)\W+(?:\w+\W+){0,2}$");
// Addressing the reader ("when your computer runs out of memory", "you will hit OOM"): an
// explanation or advice, not a report. The first person ("I encountered OOM with 50GB GPUs",
// "we notice an OOM in the nightly image") narrates what happened: a report.
grammar!(second_person, r"(?i)\b(?:you|your|you're|you've|you'll|yours)\b");
// A log line (a program's lower-case name as prefix, `slurmstepd: …`; timestamp, glog level, `name: error:`, an exception class, `file.cc:123`): a
// runtime's message, which the family grammars and the generic layer read or leave.
grammar!(
    log_line,
    r"^\s*[a-z][a-z0-9_.-]*:\s|(?i)^\s*(?:\[?\d{4}-\d\d-\d\d|\[?\d\d:\d\d:\d\d|[IWEF]\d{4}\s)|\b[\w./-]+:\s*(?:error|warning|warn|fatal|info|debug|critical|hint|note)\s*:|^\s*\[?(?:error|warning|warn|fatal|info|debug|critical|hint|note)\b\s*[:\]|]|\b[A-Z]\w*(?:Error|Exception)\s*:|\b\S+\.(?:cc|cpp|cu|py|go|rs|c|h):\d+"
);
grammar!(field, r"^\s*[:=]");
grammar!(mechanism, r"(?i)^\s*(?:\([^)\n]{0,12}\)\s*)?[- ]?(?:killers?|killing|handl\w+|protection|prevention|detection|score|policy|daemon|monitor\w*|guard|avoid\w*|settings?|tests?|testing|recovery|retry|fallback)\b");
grammar!(on_oom, r"(?i)\b(?:on|upon|in case of|in the event of)\s+(?:an?\s+|the\s+)?$");
grammar!(url, r"(?i)\bhttps?://\S+|\bwww\.\S+");
// Code or a config line, not a sentence.
grammar!(code_line, r#"^\s*(?:#|//|import |from \S+ import|def |class |return |[\w.]+\s*=\s*[\w"'(\[])|[{};]\s*$"#);

// Device words, by platform.
// "AMD" alone also names CPUs ("AMD EPYC 7742" in an environment report): see [`rocm_named`].
grammar!(w_rocm, r"(?i)\brocm\b|\bradeon\b|\bzluda\b|\bgfx\d{3,4}\w*|\bhip\b|\binstinct\b|\bmi(?:50|60|100|210|250x?|300[ax]?|325x|355x)\b|\brx\s?\d{4}(?:\s?xt)?\b");
grammar!(w_amd, r"(?i)\bamd\b(?P<next>\s+\w+)?");
grammar!(amd_cpu, r"(?i)^\s+(?:epyc|ryzen|threadripper|opteron|athlon|phenom|fx|cpu|processor|64|x86|sempron|turion)");

/// Whether the text names an AMD GPU stack: ROCm, HIP, Radeon, Instinct, ZLUDA, a gfx target, or
/// "AMD" not followed by one of its CPU lines' names.
fn rocm_named(t: &str) -> bool {
    w_rocm().is_match(t) || w_amd().captures_iter(t).any(|c| c.name("next").is_none_or(|n| !amd_cpu().is_match(n.as_str())))
}

grammar!(w_npu, r"(?i)\bnpu\b|\bascend\b|\bcann\b|\b910[bc]?\b");
grammar!(w_xpu, r"(?i)\bxpu\b|\bintel arc\b|\barc a\d{3}m?\b|\bipex\b|\blevel zero\b");
grammar!(w_tpu, r"(?i)\btpu(?:s|v\d\w*)?\b|\bv[2-6]e?-\d+\b");
grammar!(w_mps, r"(?i)\bmps\b");
grammar!(w_apple, r"(?i)\bmetal\b|\bapple silicon\b|\bm[1-5](?: (?:pro|max|ultra))?\b|\bmacbook\w*|\bmac\s?(?:studio|mini|os)?\b|\bmacos\b");
grammar!(
    w_cuda,
    r"(?i)\bcuda\b|\bnvidia\b|\bgeforce\b|\b(?:rtx|gtx|quadro|tesla)\b|(?:\b|\dx)(?:[abhv]100|[ah]800|h200|[bg]200|a[1-4]0g?|l4|l40s?|t4|p100|p40|k80|a[456]000|jetson)\b|\b(?:rtx|gtx)?\s?(?:10[5-8]0|16[56]0|20[6-8]0|30[5-9]0|40[6-9]0|50[6-9]0)(?:\s?ti|\s?super)?\b"
);
grammar!(w_vram, r"(?i)\bvram\b|\bgpus?\b|\bgraphics card|\bvideo (?:card|memory)|\bdevice memory|\bgpu memory|\bcard\b");
grammar!(w_host, r"(?i)\b(?:system|host|cpu|main|physical) (?:memory|ram)\b|(?:^|[^v\w])ram\b|\bswap\b|\bpage\s?file\b|\bkilled\b|\boom[- ]?kill(?:ed|er)?\b|\bmemory limit\b|\bcgroup\b|\bcontainer\b");
// A device's stated capacity: "RTX 4090 24GB", "24 GB VRAM", "a 16GB card", "(24GB)" after a GPU
// name. Never a model's or a request's size: the number must sit against the device words.
grammar!(
    device_capacity,
    r"(?i)(?P<a>\d{1,3}(?:\.\d+)?)\s?(?:gb|gib|g)\b(?: of)? (?:v?ram\b|gpu\b|gpu memory|vram|video memory|card\b|graphics card)|(?:\bvram|\bgpu memory)(?: of| is|:)? (?P<b>\d{1,3}(?:\.\d+)?)\s?(?:gb|gib)\b|(?:\b(?:rtx|gtx|geforce|quadro)?\s?\d{4}(?:\s?ti|\s?super)?|(?:\b|\dx)[abhl]\d{2,3}s?|\bt4|\bmi\d{2,3}x?)\b(?: with)?[ (]{1,2}(?P<c>\d{1,3})\s?(?:gb|gib|g)\b"
);
grammar!(
    host_capacity,
    r"(?i)(?P<a>\d{1,4}(?:\.\d+)?)\s?(?:gb|gib|g)\b(?: of)? (?:(?:system |host |cpu )?ram\b|system memory|host memory)|\b(?:system |host )?ram(?: of| is|:)? (?P<b>\d{1,4}(?:\.\d+)?)\s?(?:gb|gib)\b"
);

grammar!(load_words, r"(?i)\b(?:load(?:s|ed|ing)?|startup|start-up|initiali[sz]\w*|warm-?up)\b");
grammar!(compile_words, r"(?i)\bcompil(?:e|es|ed|ing|ation)\b");
grammar!(run_words, r"(?i)\b(?:train\w*|fine-?tun\w*|infer\w*|generat\w*|decod\w*|sampl\w*|serv(?:e|es|ed|ing)|epoch|step|batch)\b");
grammar!(several_devices, r"(?i)\b\d+\s?x\s?(?:[a-z]+\s?)?\d|\b(?:dual|multi|multiple|two|four|eight)[- ]?gpus?\b|\bgpus\b");

/// A statement of a memory failure in one sentence: (sentence start, sentence end, phrase).
fn statement(t: &str) -> Option<(usize, usize, String)> {
    let mut at = 0;
    for line in t.split_inclusive('\n') {
        let start = at;
        at += line.len();
        // Code, log lines and table rows (`| Number of OOMs | 0 |`) are not sentences.
        if code_line().is_match(line) || log_line().is_match(line) || line.matches('|').count() >= 2 {
            continue;
        }
        for (ss, se) in sentences(line) {
            let s = &line[ss..se];
            if let Some(p) = stated(s) {
                return Some((start + ss, start + se, p));
            }
        }
    }
    None
}

/// Sentences of a line: split after `.`, `!`, `?`, `;` followed by a space, and at ` - ` or
/// ` | ` (a title's parts). A dot inside a name (`llama.cpp`, `0.1.32`) does not split.
fn sentences(line: &str) -> Vec<(usize, usize)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut s = 0;
    let mut i = 0;
    while i < b.len() {
        let end_mark = matches!(b[i], b'.' | b'!' | b'?' | b';') && b.get(i + 1).is_none_or(|c| c.is_ascii_whitespace());
        let dash = (b[i] == b'-' || b[i] == b'|') && i > 0 && b[i - 1] == b' ' && b.get(i + 1) == Some(&b' ');
        if end_mark || dash {
            out.push((s, i + 1));
            s = i + 1;
        }
        i += 1;
    }
    if s < b.len() {
        out.push((s, b.len()));
    }
    out
}

/// The failure phrase when the sentence states a memory failure.
fn stated(sentence: &str) -> Option<String> {
    // A concession is not a condition: "OOM even if I set batch size 1" reports the failure.
    let clean = url().replace_all(sentence, " ");
    let clean = concession().replace_all(&clean, " ");
    let s = clean.as_ref();
    if s.trim_end().ends_with('?') || not_a_report().is_match(s) || changelog().is_match(s) || second_person().is_match(s) {
        return None;
    }
    // A quoted phrase inside a sentence is a mention ("errors like 'out of memory'").
    for m in oom_phrase().find_iter(s) {
        let before = &s[..m.start()];
        // A field (`OOMKilled:false`, `OOM killer: require …`), a name (`--oom-avoid`,
        // `oom_score_adj`) or a mechanism named ("the OOM killer", "Out-Of-Memory (OOM) killer",
        // "OOM handling") is not a failure; nor is a condition ("back off on OOM").
        let after = &s[m.end()..];
        // An abbreviation glossed in parentheses ("Out-Of-Memory (OOM) killer") belongs to the
        // phrase before it, which was read already.
        let glossed = before.trim_end().ends_with('(') && after.trim_start().starts_with(')');
        let glued_before = before.ends_with(['-', '_', '/', '.']) || glossed;
        let glued_after = after.starts_with('_') || (after.starts_with('-') && after[1..].starts_with(|c: char| c.is_ascii_alphabetic()) && !m.as_str().contains('-'));
        if negated().is_match(before) || field().is_match(after) || mechanism().is_match(after) || on_oom().is_match(before) || glued_before || glued_after {
            continue;
        }
        let quotes = before.matches(['"', '\'', '`', '“', '‘']).count();
        if quotes % 2 == 1 && s[m.end()..].contains(['"', '\'', '`', '”', '’']) && before.trim_end().len() > 0 && !before.trim_end().ends_with(':') {
            continue;
        }
        return Some(m.as_str().to_string());
    }
    if let Some(k) = kill_word().find(s) {
        if memory_word().is_match(s) && !other_kill().is_match(s) && !negated().is_match(&s[..k.start()]) {
            return Some(k.as_str().to_string());
        }
    }
    None
}

// Vendor-neutral GPU APIs: a job on DirectML, Vulkan or OpenCL runs on whichever GPU the text
// names without being that vendor's stack (torch-directml on a Radeon is not ROCm). PyTorch names
// an out-of-tree backend's device `privateuseone` (torch-directml's tensors print it).
grammar!(neutral_api, r"(?i)\bdirectml\b|torch[_-]directml|\bvulkan\b|\bopencl\b|\bprivateuseone\b");

/// The platform the text's device words name, most telling first (a ROCm build prints
/// "CUDA error" too; ZLUDA runs CUDA programs on AMD GPUs). A vendor-neutral API names none.
pub fn platform_named(t: &str, apple_is_mps: bool) -> Option<Platform> {
    if neutral_api().is_match(t) {
        return Some(Platform::Other);
    }
    if rocm_named(t) {
        return Some(Platform::Rocm);
    }
    if w_npu().is_match(t) {
        return Some(Platform::Npu);
    }
    if w_xpu().is_match(t) {
        return Some(Platform::Xpu);
    }
    if w_tpu().is_match(t) {
        return Some(Platform::Tpu);
    }
    if w_mps().is_match(t) {
        return Some(Platform::Mps);
    }
    if w_apple().is_match(t) {
        return Some(if apple_is_mps { Platform::Mps } else { Platform::Metal });
    }
    if w_cuda().is_match(t) {
        return Some(Platform::Cuda);
    }
    None
}

/// The runtime or engine the text names, when it names one clearly: the case's frameworks,
/// most specific first; two engines that do not run one on the other make it unclear.
pub fn runtime_named(t: &str) -> Option<&'static str> {
    let found = crate::facts::case::frameworks(t);
    // Engines and applications that run on another named here (Ollama on llama.cpp, ComfyUI on
    // diffusers' models, text-generation-webui on llama.cpp or PyTorch).
    const ON: &[(&str, &str)] = &[("ollama", "llama.cpp"), ("comfyui", "diffusers"), ("text-generation-webui", "llama.cpp"), ("koboldai", "llama.cpp"), ("vllm", "deepspeed")];
    const BASE: &[&str] = &["pytorch", "jax", "tensorflow", "torch_xla", "mesh_tf", "paddle", "onnxruntime", "directml", "data"];
    let first = *found.first()?;
    if first == "data" {
        return None;
    }
    let engines: Vec<&str> = found.iter().copied().filter(|f| !BASE.contains(f)).collect();
    for e in &engines {
        if *e != first && !ON.contains(&(first, *e)) {
            return None;
        }
    }
    if engines.is_empty() {
        // Frameworks only: one framework (PyTorch/XLA names PyTorch too).
        let fws: Vec<&str> = found.iter().copied().filter(|f| *f != "data" && !(first == "torch_xla" && *f == "pytorch")).collect();
        if fws.len() != 1 {
            return None;
        }
    }
    Some(first)
}

/// Whether Apple's GPU is PyTorch's MPS backend for this runtime (else Metal: ggml, MLX).
fn apple_is_mps(runtime: Option<&str>) -> bool {
    !matches!(runtime, Some("ollama" | "llama.cpp"))
}

/// The family-level entry of `runtime` for a failure on `platform` in `host` or device memory,
/// and whether that entry is the runtime's own. A framework's allocator entry
/// (`pytorch.cuda-oom`, `tensorflow.oom-tensor`) is not its own for a generic line: a CUDA
/// library or another allocator in the same process prints those, so only an engine's own
/// entries take a generic finding ([`attribute`]); a statement in prose takes either.
pub fn entry_for(runtime: Option<&str>, platform: Option<Platform>, host: bool) -> (&'static str, bool) {
    if host {
        return match runtime {
            Some("ollama") => ("ollama.system-memory", true),
            _ => ("generic.host-oom", false),
        };
    }
    match platform {
        Some(Platform::Npu) => return ("npu.out-of-memory", false),
        Some(Platform::Xpu) => return ("xpu.out-of-memory", false),
        Some(Platform::Tpu) => return ("generic.device-oom", false),
        _ => {}
    }
    let torch = |p: Option<Platform>| match p {
        Some(Platform::Rocm) => "pytorch.hip-oom",
        Some(Platform::Mps | Platform::Metal) => "pytorch.mps-oom",
        _ => "pytorch.cuda-oom",
    };
    match runtime {
        Some("ollama" | "llama.cpp") => ("ggml.buffer-alloc", true),
        Some("lmdeploy") => ("lmdeploy.turbomind-oom", true),
        Some("tensorflow") => ("tensorflow.oom-tensor", false),
        Some("jax") if !matches!(platform, Some(Platform::Mps | Platform::Metal)) => ("xla-gpu.out-of-memory", false),
        Some("paddle") => ("paddle.out-of-memory", false),
        Some("onnxruntime") => ("onnxruntime.arena-alloc", false),
        Some("pytorch" | "vllm" | "sglang" | "tgi" | "koboldai" | "text-generation-webui" | "comfyui" | "diffusers" | "deepspeed") => (torch(platform), false),
        _ => ("generic.device-oom", false),
    }
}

/// A failure stated in words, where the text holds no runtime message (`hits` is empty).
pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if !hits.is_empty() || t.len() > 64 << 10 {
        return;
    }
    let Some((start, end, phrase)) = statement(t) else { return };
    let sentence = &t[start..end];
    let runtime = runtime_named(t);
    let kill = kill_word().is_match(sentence) || phrase.to_ascii_lowercase().contains("kill");
    // The memory: the sentence's own words first, then the text's.
    let host_words = |s: &str| w_host().is_match(s) || kill;
    let device_words = |s: &str| w_vram().is_match(s) || platform_named(s, true).is_some();
    let host = if host_words(sentence) && !w_vram().is_match(sentence) {
        true
    } else if device_words(sentence) {
        false
    } else {
        host_words(t) && !device_words(t)
    };
    let platform = if host { Some(Platform::Cpu) } else { platform_named(t, apple_is_mps(runtime)) };
    let (id, _) = entry_for(runtime, platform, host);
    let said_device = host || device_words(t) || runtime.is_some();
    let id = if !said_device { "generic.oom" } else { id };
    let mut h = Hit::new(id, start, end);
    h.priority = 95;
    // The phase where the sentence says it ("during model loading", "at startup", "while
    // compiling"); otherwise the entry's.
    h.phase = if load_words().is_match(sentence) {
        Some(Phase::Load)
    } else if compile_words().is_match(sentence) {
        Some(Phase::Compile)
    } else if run_words().is_match(sentence) {
        Some(Phase::Runtime)
    } else {
        None
    };
    // No device words: the platform is not stated (never the entry's default guessed).
    h.platform = Some(platform.unwrap_or(Platform::Other));
    if id != "generic.oom" {
        h.space(if host { "host" } else { "device" });
    }
    h.confidence = Confidence::Likely;
    h.confidence_reason = Some(REASON.to_string());
    h.flag("stated_in_prose");
    h.detail("wording", phrase);
    if let Some(r) = runtime {
        h.detail("named_runtime", r);
    }
    capacity(t, host, &mut h);
    hits.push(h);
}

/// The device's (or the host's) capacity where the text states it plainly, as `total`.
fn capacity(t: &str, host: bool, h: &mut Hit) {
    let re = if host { host_capacity() } else { device_capacity() };
    let several = !host && several_devices().is_match(t);
    let mut found: Option<String> = None;
    for c in re.captures_iter(t) {
        // A size beside a GPU's name is that card's ("8xA100 80GB"); a VRAM total beside
        // several devices ("dual-GPU setup with 72GB VRAM") may be their sum: not one device's.
        let v = match (c.name("a").or(c.name("b")), c.name("c")) {
            (Some(_), _) if several => continue,
            (Some(v), _) | (None, Some(v)) => v,
            (None, None) => continue,
        };
        // Device makers' and OS's "GB" on a memory size is GiB (a "24GB" card has 24 GiB).
        let text = format!("{} GiB", v.as_str());
        match &found {
            None => found = Some(text),
            // Two different capacities (two cards, a laptop and a server): none is the device's.
            Some(f) if *f != text => return,
            _ => {}
        }
    }
    if let Some(text) = found {
        h.size(SizeKey::Total, &text);
    }
}

/// Attribute generic findings to the runtime the text names: its entry for that memory where
/// the knowledge base has one, with the platform the text's device words give.
pub fn attribute(t: &str, hits: &mut [Hit]) {
    let generic = |h: &Hit| h.id.starts_with("generic.") && !h.flags.contains("stated_in_prose");
    if !hits.iter().any(generic) {
        return;
    }
    let runtime = runtime_named(t);
    let rocm = rocm_named(t);
    for h in hits.iter_mut().filter(|h| generic(h)) {
        let host = h.id == "generic.host-oom" || h.memory_space.as_deref() == Some("host");
        // A ROCm build prints "CUDA error" (PyTorch's HIP build, Ollama's and llama.cpp's HIP
        // backends, ZLUDA running CUDA programs on AMD GPUs), whatever runtime the text names.
        if h.platform == Some(Platform::Cuda) && rocm && !neutral_api().is_match(t) {
            h.platform = Some(Platform::Rocm);
        }
        let Some(runtime) = runtime else { continue };
        let said = h.platform.filter(|p| *p != Platform::Other);
        let platform = match said {
            Some(p) => Some(p),
            None if host => Some(Platform::Cpu),
            None => platform_named(t, apple_is_mps(Some(runtime))),
        };
        let (id, own) = entry_for(Some(runtime), platform, host);
        if own {
            h.id = id;
            h.space(if host { "host" } else { "device" });
            if let Some(p) = platform {
                h.platform = Some(p);
            }
        } else if said.is_none() {
            // No entry of the runtime's own: the generic entry, with the platform and memory
            // the text's device words give where the line said none.
            if let Some(p) = platform {
                h.platform = Some(p);
                if h.id == "generic.oom" {
                    h.id = if p == Platform::Cpu { "generic.host-oom" } else { "generic.device-oom" };
                    h.space(if p == Platform::Cpu { "host" } else { "device" });
                }
            }
        }
        h.detail("named_runtime", runtime);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(t: &str) -> Option<Hit> {
        let mut hits = Vec::new();
        recognize(t, &mut hits);
        hits.pop()
    }

    #[test]
    fn statements_are_findings() {
        let h = one("vLLM OOM with Qwen2-72B on 2xA100").unwrap();
        assert_eq!((h.id, h.platform, h.memory_space.as_deref()), ("pytorch.cuda-oom", Some(Platform::Cuda), Some("device")));
        assert_eq!(h.confidence, Confidence::Likely);
        let h = one("Ollama crashes with out of memory on large context").unwrap();
        assert_eq!(h.id, "ggml.buffer-alloc");
        let h = one("RAM usage keeps increasing until the process is killed").unwrap();
        assert_eq!((h.id, h.platform), ("generic.host-oom", Some(Platform::Cpu)));
        let h = one("CUDA out of memory when fine-tuning llama 13b on RTX 4090 24GB").unwrap();
        assert_eq!(h.platform, Some(Platform::Cuda));
        assert_eq!(h.get(SizeKey::Total), Some(24 << 30));
        let h = one("ComfyUI runs out of VRAM on AMD Radeon RX 7900 XTX").unwrap();
        assert_eq!((h.id, h.platform), ("pytorch.hip-oom", Some(Platform::Rocm)));
    }

    #[test]
    fn questions_hypotheticals_and_changelogs_are_not() {
        for t in [
            "How to reduce memory usage when training with vLLM?",
            "If you run out of memory, lower --max-model-len.",
            "Use gradient checkpointing to avoid OOM.",
            "Fix OOM in the sampler when batch size is large",
            "- Fixed an out-of-memory error in the scheduler",
            "This may run out of memory on small GPUs.",
            "Feature request: option to offload the KV cache when out of memory",
            "It no longer OOMs with the new release.",
            "The process was killed by the scheduler after the time limit.",
        ] {
            assert!(one(t).is_none(), "{t}");
        }
    }

    #[test]
    fn names_mechanisms_and_conditions_are_not() {
        for t in [
            "OOM killer: require sustained memory pressure before killing tasks",
            "Memory management: OOM Killer",
            "oomd is userspace Out-Of-Memory (OOM) killer for linux systems.",
            "stress-ng prints a hint for --oom-avoid on low-memory runs.",
            "Back off to 50% on OOM",
            "OOMKilled:false,",
            "It was caused by ran-out-of-memory.",
        ] {
            assert!(one(t).is_none(), "{t}");
        }
    }

    #[test]
    fn capacity_against_the_device_only() {
        // Each card's size beside its name, also for several cards.
        assert_eq!(one("InternVL3-78B OOM on 4 A100 40G in 0.8.4").unwrap().get(SizeKey::Total), Some(40 << 30));
        assert_eq!(one("OOM when finetuning Llama3.2-90B on 8xA100 80GB").unwrap().get(SizeKey::Total), Some(80 << 30));
        // A VRAM figure beside several devices may be their sum; a model's size is never the device's.
        assert_eq!(one("CUDA malloc fails (dual-GPU setup with 72GB VRAM and 128GB RAM)").unwrap().get(SizeKey::Total), None);
        assert_eq!(one("Llama 70B OOM on A100, the 40GB checkpoint does not fit").unwrap().get(SizeKey::Total), None);
        let h = one("OOM during model loading for GPT-OSS-120B on single H100 80G").unwrap();
        assert_eq!((h.get(SizeKey::Total), h.phase), (Some(80 << 30), Some(Phase::Load)));
    }

    #[test]
    fn only_where_no_runtime_message_yields_a_finding() {
        let opts = crate::Options::default();
        // Alone, the title is the finding.
        let r = crate::diagnose_text("vLLM OOM with Qwen2-72B on 2xA100", &opts);
        assert_eq!(r.findings.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(), ["pytorch.cuda-oom"]);
        assert_eq!(r.findings[0].confidence_reason.as_deref(), Some(REASON));
        // With the runtime's own message far below it (another block), only that message counts.
        let mut t = String::from("vLLM OOM with Qwen2-72B on 2xA100\n");
        t.push_str(&"INFO 05-28 07:00:00 [engine.py:310] Added request.\n".repeat(40));
        t.push_str("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 1.50 GiB is free.\n");
        let r = crate::diagnose_text(&t, &opts);
        assert!(r.findings.iter().all(|f| f.confidence_reason.as_deref() != Some(REASON)), "{:?}", r.findings.iter().map(|f| &f.id).collect::<Vec<_>>());
        assert!(r.findings.iter().any(|f| f.id == "pytorch.cuda-oom"));
    }

    #[test]
    fn a_named_runtime_takes_a_generic_finding() {
        let mut h = Hit::new("generic.device-oom", 0, 10);
        h.platform = Some(Platform::Cuda);
        let mut hits = vec![h];
        attribute("time=... level=INFO source=server.go:100 msg=ollama\nCUDA error: out of memory", &mut hits);
        assert_eq!(hits[0].id, "ggml.buffer-alloc");
        let mut hits = vec![Hit::new("generic.device-oom", 0, 10)];
        attribute("ZLUDA with llama.cpp: out of memory", &mut hits);
        assert_eq!((hits[0].id, hits[0].platform), ("ggml.buffer-alloc", Some(Platform::Rocm)));
        // ZLUDA alone (no runtime named) still says the GPU is AMD's; an AMD CPU does not.
        let mut h = Hit::new("generic.device-oom", 0, 10);
        h.platform = Some(Platform::Cuda);
        let mut hits = vec![h.clone()];
        attribute("Device: cuda:0 AMD Radeon RX 6600 [ZLUDA] : native\nCUDA error: out of memory", &mut hits);
        assert_eq!(hits[0].platform, Some(Platform::Rocm));
        let mut hits = vec![h];
        attribute("CPU: AMD EPYC 7742 64-Core Processor\nCUDA error: out of memory", &mut hits);
        assert_eq!(hits[0].platform, Some(Platform::Cuda));
    }
}
