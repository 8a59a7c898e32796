//! Everything else: vLLM's KV-cache budget, host-side OOMs (Linux OOM killer, LLVM,
//! exit status 137), and Tenstorrent's L1 allocator.

use super::{has, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

grammar!(vllm_blocks, r"No available memory for the cache blocks");
grammar!(vllm_v1, r"(?P<a>{SZ}) KV cache is needed, which is larger than the available KV cache memory \((?P<b>{SZ})\)");
grammar!(oom_killer, r"Out of memory: Killed process (?P<pid>\d+) \((?P<name>[^)]+)\)(?:\s+total-vm:(?P<vm>\d+)kB,\s*anon-rss:(?P<rss>\d+)kB)?");
grammar!(oom_kill_event, r"oom-kill:constraint=|\bOOMKilled\b|invoked oom-killer");
grammar!(exit137, r"(?:exit (?:status|code)|exited with (?:exit )?code|returned non-zero exit status|Exit code:?)\s*137\b|signal 9 \(SIGKILL\)|died with <Signals\.SIGKILL: 9>");
grammar!(llvm_oom, r"LLVM ERROR: (?:out of memory|Allocation failed|Cannot allocate memory)");
grammar!(tt_l1, r"Not enough space to allocate (?P<req>\d+) B (?P<kind>\w+) buffer across (?P<banks>\d+) banks?, where each bank needs to store (?P<per>\d+) B(?:, but bank size is (?P<size>\d+) B \(allocated: (?P<alloc>\d+) B, free: (?P<free>\d+) B, largest free block: (?P<lfb>\d+) B\))?");

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "cache blocks") {
        for m in vllm_blocks().find_iter(t) {
            let mut h = Hit::new("vllm.no-cache-blocks", m.start(), m.end());
            h.platform = Some(Platform::Cuda);
            h.phase = Some(Phase::Load);
            h.space("device");
            h.flag("framework_vllm");
            if let Some(e) = t[m.end()..].find("initializing the engine.") {
                if e < 200 {
                    h.end = m.end() + e + "initializing the engine.".len();
                }
            }
            h.priority = 10;
            hits.push(h);
        }
    }
    if has(t, "KV cache") {
        for c in vllm_v1().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("vllm.no-cache-blocks", m.start(), m.end());
            h.cap_size(SizeKey::Requested, &c, "a").cap_size(SizeKey::Limit, &c, "b");
            h.platform = Some(Platform::Cuda);
            h.phase = Some(Phase::Load);
            h.space("device");
            h.flag("framework_vllm");
            h.priority = 10;
            hits.push(h);
        }
    }
    if has(t, "Killed process") {
        for c in oom_killer().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.culprit.op = Some(format!("{} (pid {})", &c["name"], &c["pid"]));
            if let Some(rss) = c.name("rss").and_then(|v| v.as_str().parse::<u64>().ok()) {
                if let Some(b) = rss.checked_mul(1024) {
                    h.bytes(SizeKey::Used, b, format!("anon-rss:{rss}kB"));
                }
            }
            if let Some(vm) = c.name("vm").and_then(|v| v.as_str().parse::<u64>().ok()) {
                h.detail("total_vm_bytes", vm.saturating_mul(1024));
            }
            hits.push(h);
        }
    }
    for m in oom_kill_event().find_iter(t) {
        let mut h = host_hit("host.oom-killer", m.start(), m.end());
        h.priority = 30;
        hits.push(h);
    }
    if t.contains("137") || t.contains("SIGKILL") {
        for m in exit137().find_iter(t) {
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.confidence = crate::finding::Confidence::Likely;
            h.detail("exit_status", 137);
            h.priority = 40;
            hits.push(h);
        }
    }
    if has(t, "LLVM ERROR") {
        for m in llvm_oom().find_iter(t) {
            let mut h = host_hit("host.compiler-oom", m.start(), m.end());
            h.phase = Some(Phase::Compile);
            hits.push(h);
        }
    }
    if has(t, "Not enough space to allocate") {
        for c in tt_l1().captures_iter(t) {
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
            h.space(&c["kind"].to_ascii_lowercase());
            if h.memory_space.as_deref() != Some("l1") {
                h.space("device");
            }
            h.platform = Some(Platform::Other);
            h.phase = Some(Phase::Runtime);
            h.priority = 10;
            hits.push(h);
        }
    }
}

fn host_hit(id: &'static str, start: usize, end: usize) -> Hit {
    let mut h = Hit::new(id, start, end);
    h.platform = Some(Platform::Cpu);
    h.phase = Some(Phase::Runtime);
    h.space("host");
    h.priority = 20;
    h
}
