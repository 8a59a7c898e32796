//! Everything else: vLLM's KV-cache budget, host-side OOMs (Linux OOM killer, LLVM,
//! exit status 137), and Tenstorrent's L1 allocator.

use super::{has, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

grammar!(vllm_blocks, r"No available memory for the cache blocks");
grammar!(vllm_v1, r"(?P<a>{SZ}) KV cache is needed, which is larger than the available KV cache memory \((?P<b>{SZ})\)");
grammar!(vllm_tokens, r"max seq len \((?P<len>\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((?P<tok>\d+)\)");
grammar!(vllm_negative, r"Available KV cache memory:\s*-(?P<v>{SZ})");
grammar!(vllm_free, r"(?i:free memory) on device(?: (?P<dev>[\w:]+))? \((?P<free>[\d.]+)/(?P<total>[\d.]+) (?P<unit>[KMGT]i?B)\) on startup is less than desired GPU memory utilization \((?P<util>[\d.]+), (?P<req>{SZ})\)");
grammar!(vllm_total, r"total_gpu_memory=(?P<v>{SZ})");
grammar!(killed_process, r"Killed process (?P<pid>\d+) \((?P<name>[^)]+)\)");
grammar!(kb_field, r"(?P<k>total-vm|anon-rss|file-rss|shmem-rss):\s*(?P<v>[\d,]+)\s*kB");
grammar!(oom_kill_event, r"oom-kill:constraint=|\bOOMKilled\b|invoked oom-killer|oom[-_]kill events?|srun: error: [^\n]*: Out Of Memory|Memory cgroup out of memory");
grammar!(exit137, r"\b(?:exit(?:ed)?(?: with)?(?: exit)?|returned non-zero exit|status)(?: status)?(?: code)?:? 137\b|signal 9 \(SIGKILL\)|died with <Signals\.SIGKILL: 9>|killed by signal: Killed");
grammar!(shell_killed, r"(?m)^[ \t]*(?:[\w/.\-]+: (?:line \d+: )?)?(?:\d+[ \t]+)?(?:Killed|killed)(?:[ \t]+[^\n]{1,200})?[ \t]*$");
grammar!(dev_shm, r"killed by signal: Bus error\.?[^\n]{0,120}?out of shared memory|No space left on device[^\n]{0,80}/dev/shm|unable to (?:open|write to) shared memory object");
grammar!(llvm_oom, r"LLVM ERROR: (?:out of memory|Allocation failed|Cannot allocate memory)|'cicc' died due to signal 9|Killed signal terminated program (?:cc1plus|cc1|cicc)|virtual memory exhausted: Cannot allocate memory|cc1plus: out of memory|error: [^\n]{0,300}: Cannot allocate memory");
grammar!(tt_l1, r"Not enough space to allocate (?P<req>\d+) B (?P<kind>\w+) buffer across (?P<banks>\d+) banks?, where each bank needs to store (?P<per>\d+) B(?:, but bank size is (?P<size>\d+) B \(allocated: (?P<alloc>\d+) B, free: (?P<free>\d+) B, largest free block: (?P<lfb>\d+) B\))?");

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "cache blocks") {
        for m in vllm_blocks().find_iter(t) {
            let mut h = vllm_hit("vllm.no-cache-blocks", m.start(), m.end());
            if let Some(e) = t[m.end()..].find("initializing the engine.") {
                if e < 200 {
                    h.end = m.end() + e + "initializing the engine.".len();
                }
            }
            hits.push(h);
        }
    }
    if has(t, "stored in KV cache") {
        for c in vllm_tokens().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = vllm_hit("vllm.no-cache-blocks", m.start(), m.end());
            h.detail("max_model_len", c["len"].parse::<u64>().ok()).detail("kv_cache_tokens", c["tok"].parse::<u64>().ok());
            hits.push(h);
        }
    }
    if has(t, "Available KV cache memory: -") {
        for c in vllm_negative().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = vllm_hit("vllm.no-cache-blocks", m.start(), m.end());
            if let Some(p) = oomdoc_units::parse_size(&c["v"]) {
                h.detail("available_kv_cache_bytes", -(p.bytes as i128) as i64);
            }
            hits.push(h);
        }
    }
    if has(t, "on startup is less than desired") {
        for c in vllm_free().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = vllm_hit("vllm.insufficient-free-memory", m.start(), m.end());
            let unit = &c["unit"];
            h.size(SizeKey::Free, &format!("{} {unit}", &c["free"])).size(SizeKey::Total, &format!("{} {unit}", &c["total"]));
            h.cap_size(SizeKey::Requested, &c, "req");
            h.detail("gpu_memory_utilization", c["util"].parse::<f64>().ok());
            if let Some(d) = c.name("dev") {
                h.culprit.device = Some(d.as_str().to_string());
            }
            h.flag("other_processes");
            hits.push(h);
        }
    }
    if has(t, "KV cache") {
        for c in vllm_v1().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = vllm_hit("vllm.no-cache-blocks", m.start(), m.end());
            h.cap_size(SizeKey::Requested, &c, "a").cap_size(SizeKey::Limit, &c, "b");
            hits.push(h);
        }
    }
    if has(t, "Memory profiling results") || has(t, "total_gpu_memory=") {
        // vLLM's profiling summary states the device's total memory.
        if let Some(c) = vllm_total().captures(t) {
            for h in hits.iter_mut().filter(|h| h.id.starts_with("vllm.")) {
                h.cap_size(SizeKey::Total, &c, "v");
            }
        }
    }
    if has(t, "Killed process") {
        for c in killed_process().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.culprit.op = Some(format!("{} (pid {})", &c["name"], &c["pid"]));
            // The sizes follow on the same (possibly wrapped) line, in KiB ("kB"), sometimes comma-grouped.
            let tail = super::window(t, m.end(), 600);
            let tail = &tail[..tail.find("Killed process").unwrap_or(tail.len())];
            let mut seen = std::collections::BTreeSet::new();
            for f in kb_field().captures_iter(tail) {
                if !seen.insert(f["k"].to_string()) {
                    continue; // a later line (oom_reaper) repeats the fields with other values
                }
                let digits: String = f["v"].chars().filter(|ch| ch.is_ascii_digit()).collect();
                let Some(kib) = digits.parse::<u64>().ok() else { continue };
                let bytes = kib.saturating_mul(1024);
                match &f["k"] {
                    "anon-rss" => {
                        h.bytes(SizeKey::Used, bytes, format!("anon-rss:{}kB", &f["v"]));
                    }
                    k => {
                        h.detail(&format!("{}_bytes", k.replace('-', "_")), bytes);
                    }
                }
                h.end = h.end.max(m.end() + f.get(0).unwrap().end());
            }
            hits.push(h);
        }
    }
    if has(t, "illed") {
        for m in shell_killed().find_iter(t) {
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.confidence = crate::finding::Confidence::Likely;
            h.detail("signal", "SIGKILL (shell reported `Killed`)");
            h.priority = 45;
            hits.push(h);
        }
    }
    for m in dev_shm().find_iter(t) {
        let mut h = host_hit("host.dev-shm", m.start(), m.end());
        h.priority = 15;
        hits.push(h);
    }
    for m in oom_kill_event().find_iter(t) {
        let mut h = host_hit("host.oom-killer", m.start(), m.end());
        h.priority = 30;
        hits.push(h);
    }
    if t.contains("137") || t.contains("SIGKILL") || t.contains("signal: Killed") {
        for m in exit137().find_iter(t) {
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.confidence = crate::finding::Confidence::Likely;
            h.detail("exit_status", 137);
            h.priority = 40;
            hits.push(h);
        }
    }
    if has(t, "LLVM ERROR") || has(t, "signal 9") || has(t, "Cannot allocate memory") || has(t, "Killed signal") || has(t, "cc1plus") {
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

/// vLLM fails while loading, before serving, over device memory.
fn vllm_hit(id: &'static str, start: usize, end: usize) -> Hit {
    let mut h = Hit::new(id, start, end);
    h.platform = Some(Platform::Cuda);
    h.phase = Some(Phase::Load);
    h.space("device");
    h.flag("framework_vllm");
    h.priority = 10;
    h
}

fn host_hit(id: &'static str, start: usize, end: usize) -> Hit {
    let mut h = Hit::new(id, start, end);
    h.platform = Some(Platform::Cpu);
    h.phase = Some(Phase::Runtime);
    h.space("host");
    h.priority = 20;
    h
}
