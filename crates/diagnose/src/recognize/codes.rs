//! XLA error codes (`xla/error/error_codes.h`): `E1001: CompileTimeScopedVmemOom:`
//! on the same line or followed by a newline, and the documentation URL in its
//! three historical forms. A code names the family even when the text after it
//! is cut off; it is attached to the message it introduces.

use super::{window, Hit};
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

grammar!(code_name, r"\b(?P<code>E\d{4}):\s*(?P<name>[A-Z][A-Za-z0-9]+):");
grammar!(code_url, r"openxla\.org/xla/errors(?:/error_|#[eE]|/[eE])(?P<num>\d{4})");
grammar!(bare_name, r"\b(?P<name>CompileTimeHbmOom|CompileTimeScopedVmemOom|RuntimeBufferAllocationFailure|RuntimeProgramAllocationFailure|RuntimeProgramInputMismatch|RuntimeUnexpectedCoreHalt|CompileTimeHostOffloadOutputLocationMismatch|CompileTimeMosaicUnsupportedRhsType|CompileTimeMosaicMisalignedBlockAndTiling|CompileTimeMosaicUnprovenMemoryAccessAlignment|CompileTimeSparseCoreAllocationFailure|CompileTimeSparseCoreInvalidReplicaCount)\b");

/// (code, code name, entry id, phase, memory space) for the codes with documentation pages.
pub const XLA_CODES: &[(&str, &str, &str, Phase, Option<&str>)] = &[
    ("E0100", "RuntimeBufferAllocationFailure", "tpu.runtime-buffer", Phase::Runtime, Some("hbm")),
    ("E0101", "RuntimeProgramAllocationFailure", "tpu.program-load", Phase::Load, Some("hbm")),
    ("E0102", "RuntimeProgramInputMismatch", "tpu.program-input-mismatch", Phase::Runtime, None),
    ("E0200", "RuntimeUnexpectedCoreHalt", "tpu.core-halted", Phase::Runtime, None),
    ("E1000", "CompileTimeHbmOom", "tpu.hbm-compile", Phase::Compile, Some("hbm")),
    ("E1001", "CompileTimeScopedVmemOom", "tpu.scoped-vmem", Phase::Compile, Some("vmem")),
    ("E1200", "CompileTimeHostOffloadOutputLocationMismatch", "xla.host-offload-mismatch", Phase::Compile, None),
    ("E2001", "CompileTimeMosaicUnsupportedRhsType", "mosaic.unsupported-rhs-type", Phase::Compile, None),
    ("E2002", "CompileTimeMosaicMisalignedBlockAndTiling", "mosaic.misaligned-block", Phase::Compile, None),
    ("E2003", "CompileTimeMosaicUnprovenMemoryAccessAlignment", "mosaic.unproven-alignment", Phase::Compile, None),
    ("E3000", "CompileTimeSparseCoreAllocationFailure", "sparsecore.allocation", Phase::Compile, None),
    ("E3001", "CompileTimeSparseCoreInvalidReplicaCount", "sparsecore.replica-count", Phase::Compile, Some("sc-spmem")),
];

fn by_code(code: &str) -> Option<&'static (&'static str, &'static str, &'static str, Phase, Option<&'static str>)> {
    XLA_CODES.iter().find(|c| c.0 == code)
}

grammar!(e0102, r"expected parameter (?P<p>\d+) of size (?P<want>\d+) \((?P<ws>[^\n]+?)\) but got buffer with incompatible size (?P<got>\d+)");
grammar!(e0200, r"(?:Core|Node \d+|device) halted (?:unexpectedly|prematurely)");
grammar!(e1200, r"Tensor which is moved to host \(starting from [^)]*\) is returned from the entry computation");
grammar!(e2001, r"Unsupported matmul RHS type");
grammar!(e2002, r"Failed to set window params|is not divisible by tiling evenly nor matches the full shape");
grammar!(e2003, r"cannot statically prove that index in dimension \d+ is a multiple of");

/// Recognized XLA errors that are not memory failures (reported as kind `other`).
pub fn non_memory(t: &str, hits: &mut Vec<Hit>) {
    let table: [(&dyn Fn() -> &'static regex::Regex, &'static str); 6] = [
        (&e0102, "E0102"),
        (&e0200, "E0200"),
        (&e1200, "E1200"),
        (&e2001, "E2001"),
        (&e2002, "E2002"),
        (&e2003, "E2003"),
    ];
    for (re, code) in table {
        if let Some(m) = re().find(t) {
            let entry = by_code(code).unwrap();
            let mut h = Hit::new(entry.2, m.start(), m.end());
            h.platform = if code == "E1200" { None } else { Some(Platform::Tpu) };
            h.phase = Some(entry.3);
            if code == "E0102" {
                if let Some(c) = e0102().captures(t) {
                    h.detail("expected_bytes", c["want"].parse::<u64>().ok()).detail("got_bytes", c["got"].parse::<u64>().ok());
                    h.culprit.shape = Some(c["ws"].to_string());
                    h.culprit.padded_bytes = c["want"].parse().ok();
                }
            }
            h.priority = 55;
            hits.push(h);
        }
    }
}

/// Find printed codes; attach each to the hit it introduces, or make a hit of its own.
pub fn attach_codes(t: &str, hits: &mut Vec<Hit>) {
    let mut found: Vec<(usize, usize, &'static str)> = Vec::new();
    for c in code_name().captures_iter(t) {
        if let Some(entry) = by_code(&c["code"]) {
            let m = c.get(0).unwrap();
            found.push((m.start(), m.end(), entry.0));
        }
    }
    for c in code_url().captures_iter(t) {
        let code = format!("E{}", &c["num"]);
        if let Some(entry) = by_code(&code) {
            let m = c.get(0).unwrap();
            found.push((m.start(), m.end(), entry.0));
        }
    }
    for c in bare_name().captures_iter(t) {
        if let Some(entry) = XLA_CODES.iter().find(|e| e.1 == &c["name"]) {
            let m = c.get(0).unwrap();
            found.push((m.start(), m.end(), entry.0));
        }
    }
    found.sort();
    for (start, end, code) in found {
        let entry = by_code(code).unwrap();
        // The hit this code belongs to: one that starts within 600 bytes after the code
        // (code prefix), or one that ends within 600 bytes before it (URL after the text).
        let target = hits.iter_mut().filter(|h| h.code_in_log.is_none() || h.code_in_log.as_deref() == Some(code)).min_by_key(|h| {
            if h.start >= start {
                h.start - start
            } else if h.end <= end {
                start.saturating_sub(h.end)
            } else {
                0
            }
        });
        if let Some(h) = target {
            let near = (h.start >= start && h.start - start <= 600) || (h.end <= start && start - h.end <= 600) || (h.start <= start && start <= h.end);
            if near {
                // A printed code is authoritative for the family.
                if h.id != entry.2 && same_family(h.id, entry.2) {
                    h.id = entry.2;
                }
                h.code_in_log = Some(code.to_string());
                h.start = h.start.min(start);
                h.end = h.end.max(end);
                continue;
            }
        }
        // A code with no recognized message (cut-off paste, or a non-memory code).
        let mut h = Hit::new(entry.2, start, end);
        h.code_in_log = Some(code.to_string());
        h.platform = Some(Platform::Tpu);
        if code == "E1200" {
            h.platform = None;
        }
        h.phase = Some(entry.3);
        if let Some(s) = entry.4 {
            h.space(s);
        }
        // Take the message text after the code as the hit's extent.
        let w = window(t, end, 600);
        let line_end = w.find("\nSee ").or_else(|| w.find("\n\n")).unwrap_or(w.len());
        h.end = end + line_end;
        h.priority = 60;
        hits.push(h);
    }
}

/// Two ids of the same memory family (a printed code may refine a text match).
fn same_family(a: &str, b: &str) -> bool {
    let fam = |x: &str| x.split('.').next().unwrap_or("").to_string();
    fam(a) == fam(b) || (a.starts_with("tpu.") && b.starts_with("sparsecore."))
}

/// The code name and default entry for a code, for callers outside the recognizers.
pub fn code_info(code: &str) -> Option<(&'static str, &'static str)> {
    by_code(code).map(|e| (e.1, e.2))
}
