//! Everything else: host-side OOMs (Linux OOM killer, LLVM,
//! exit status 137), and Tenstorrent's L1 allocator.

use super::{has, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

grammar!(killed_process, r"Killed process (?P<pid>\d+) \((?P<name>[^)]+)\)");
grammar!(kb_field, r"(?P<k>total-vm|anon-rss|file-rss|shmem-rss):\s*(?P<v>[\d,]+)\s*kB");
grammar!(oom_kill_event, r"oom-kill:constraint=|\bOOMKilled\b|invoked oom-killer|oom[-_]kill events?|srun: error: [^\n]*: Out Of Memory|Memory cgroup out of memory");
grammar!(exit137, r"\b(?:exit(?:ed)?(?: with)?(?: exit)?|returned non-zero exit|status)(?: status)?(?: code)?:? 137\b|signal 9 \(SIGKILL\)|died with <Signals\.SIGKILL: 9>|killed by signal: Killed");
grammar!(shell_killed, r"(?m)^[ \t]*(?:[\w/.\-]+: (?:line \d+: )?)?(?:\d+[ \t]+)?(?:Killed|killed)(?:[ \t]+[^\n]{1,200})?[ \t]*$");
grammar!(dev_shm, r"killed by signal: Bus error\.?[^\n]{0,120}?out of shared memory|No space left on device[^\n]{0,80}/dev/shm|unable to (?:open|write to) shared memory object");
grammar!(llvm_oom, r"LLVM ERROR: (?:out of memory|Allocation failed|Cannot allocate memory)|'cicc' died due to signal 9|Killed signal terminated program (?:cc1plus|cc1|cicc)|virtual memory exhausted: Cannot allocate memory|cc1plus: out of memory|error: [^\n]{0,300}: Cannot allocate memory");
grammar!(tt_l1, r"Not enough space to allocate (?P<req>\d+) B (?P<kind>\w+) buffer across (?P<banks>\d+) banks?, where each bank needs to store (?P<per>\d+) B(?:, but bank size is (?P<size>\d+) B \(allocated: (?P<alloc>\d+) B, free: (?P<free>\d+) B, largest free block: (?P<lfb>\d+) B\))?");

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
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

fn host_hit(id: &'static str, start: usize, end: usize) -> Hit {
    let mut h = Hit::new(id, start, end);
    h.platform = Some(Platform::Cpu);
    h.phase = Some(Phase::Runtime);
    h.space("host");
    h.priority = 20;
    h
}
