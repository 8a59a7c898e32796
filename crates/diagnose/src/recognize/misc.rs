//! Everything else: Tenstorrent's L1 allocator, Hugging Face accelerate's batch-size finder,
//! FlashInfer's workspace allocator (host-side OOMs live in `host.rs`, serving engines in
//! `serving.rs`).

use super::{has, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

grammar!(tt_l1, r"Not enough space to allocate (?P<req>\d+) B (?P<kind>\w+) buffer across (?P<banks>\d+) banks?, where each bank needs to store (?P<per>\d+) B(?:, but bank size is (?P<size>\d+) B \(allocated: (?P<alloc>\d+) B, free: (?P<free>\d+) B, largest free block: (?P<lfb>\d+) B\))?");

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
    r"(?:Buffer overflow when allocating|Failed to allocate) memory for (?P<name>\w+)\s+with size (?P<req>\d+) and alignment \d+(?:,\s+but only (?P<free>\d+) bytes available)?\s+in AlignedAllocator\.?(?:\s+(?:Please i|I)ncrease the workspace buffer size\.)?|Out of workspace memory in AlignedAllo(?:ca|ac)tor"
);

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "AlignedAllo") {
        for c in flashinfer_ws().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("flashinfer.workspace-overflow", m.start(), m.end());
            let num = |g: &str| c.name(g).and_then(|v| v.as_str().parse::<u64>().ok());
            if let Some(v) = num("req") {
                h.bytes(SizeKey::Requested, v, format!("{v} bytes"));
            }
            if let Some(v) = num("free") {
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
