//! TPU messages from libtpu and XLA:TPU (formats: `xla/error/error_codes.h` wrapping,
//! `docs/errors/error_1000.md`, `error_1001.md`, `error_0100.md`, `error_0101.md`,
//! `error_3000.md`, `error_3001.md`, and public user logs).

use super::{alloc_shape, has, shape_bytes, window, window_before, Hit};
use crate::finding::{Allocation, SizeKey};
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

grammar!(ran_out, r"Ran out of memory in memory space (?P<space>[A-Za-z_]+)");
grammar!(used_of, r"\A[.\s]*Used\s+(?P<used>{SZ})\s+of\s+(?P<limit>{SZ})\s+\w+\.?(?:\s+Exceeded\s+\w+\s+capacity\s+by\s+(?P<excess>{SZ}))?");
// The same report worded as an estimate against the capacity (the Pallas/Mosaic path):
// "Estimated 268.96MB exceeds 67.11MB vmem capacity."
grammar!(estimated_of, r"\A[.\s]*Estimated\s+(?P<used>{SZ})\s+exceeds\s+(?P<limit>{SZ})\s+\w+\s+capacity");
grammar!(on_stack, r"\A\s*while allocating on stack for\s+%?(?P<op>[^\s=]+)(?:\s*=\s*(?P<shape>\(?[a-z0-9]+\[[^\]]*\](?:\{[^}\s]*\})?)?)?");
grammar!(scoped_alloc, r"Scoped allocation with size\s+(?P<used>{SZ})\s+and\s+limit\s+(?P<limit>{SZ})\s+exceeded scoped vmem limit by\s+(?P<excess>{SZ})");
grammar!(scoped_alloc_partial, r"Scoped allocation with size\s+(?P<used>{SZ})(?:\s+and\s+limit\s+(?P<limit>{SZ}))?");
grammar!(should_not, r"It should not be possible to run out of (?P<space>scoped vmem|[a-z]+)");
grammar!(custom_call_target, r#"custom_call_target="(?P<t>[^"]+)""#);
grammar!(metadata_op, r#"op_name="(?P<op>[^"]+)"(?:\s+(?:op_type="[^"]*"\s+)?source_file="(?P<file>[^"]+)"\s+source_line=(?P<line>\d+))?"#);
grammar!(early_abort, r"Aborting compilation early because it's unlikely to have enough (?:device )?memory\.?\s+Requires\s+(?P<used>{SZ}),\s+has\s+(?P<limit>{SZ})\s+available");
grammar!(tc_sc, r"TPU TensorCore Hbm usage:?\s*(?P<tc>{SZ}),\s*SparseCore Hbm usage:?\s*(?P<sc>{SZ}),\s*exceeding available bytes:?\s*(?P<limit>{SZ})");
grammar!(alloc_exceeds, r"Allocation \(size=(?P<req>\d+)\) would exceed memory \(size=(?P<cap>\d+)\)(?:\s*::\s*#(?P<alloc>allocation\d+)\s*\[shape\s*=\s*'(?P<shape>[^']*)',\s*space=(?P<space>\w+)(?:,\s*\w+)*,\s*size\s*=\s*(?P<hex>0x[0-9a-fA-F]+),\s*tag\s*=\s*'(?P<tag>[^']*)'\s*\](?:\s*::\s*(?P<instr><[^>]*>|\S+))?)?");
grammar!(device_buffer, r"(?:Error allocating device buffer:\s*)?Attempting to allocate\s+(?P<req>{SZ})\.\s+That was not possible\.\s+There (?:are|is)\s+(?P<free>{SZ})\s+free\.?(?:;?\s*\((?P<dev>[0-9x]+_HBM\d+)\))?");
// (A report may end the message at "That was not possible.": the free figures are then unknown.)
grammar!(program_load, r"Error loading program(?:\s+'(?P<prog>[^']+)')?:\s*Attempting to (?P<verb>reserve|allocate)\s+(?P<req>{SZ})(?:\s+at the bottom of memory)?\.\s+That was not possible\.(?:\s+There (?:are|is)\s+(?P<free>{SZ})\s+free(?:,\s+(?P<res>{SZ})\s+reserved,\s+and\s+(?P<resv>{SZ})\s+reservable)?)?");
grammar!(reserve_bottom, r"Attempting to reserve\s+(?P<req>{SZ})\s+at the bottom of memory\.\s+That was not possible\.(?:\s+There (?:are|is)\s+(?P<free>{SZ})\s+free(?:,\s+(?P<res>{SZ})\s+reserved,\s+and\s+(?P<resv>{SZ})\s+reservable)?)?");
grammar!(could_not_alloc, r"Could not allocate\s+(?P<req>\d+)\s+bytes\s+in memory\s+(?P<dev>\S+?);\s*(?P<allocatable>\d+)\s+bytes allocatable,\s*(?P<avail>\d+)\s+bytes available");
grammar!(hbm_capacity, r"HBM capacity\s+(?P<total>{SZ}):");
grammar!(xrt_line, r"(?m)^\s*(?P<k>Top-of-Memory reserved|Currently allocated|Program requirement|Available after request):\s+(?P<v>-?{SZ})");
grammar!(sc_alloca, r"'memref\.alloca' op\s+(?:(?P<code>E3000):\s*\w+:\s*)?current allocation offset upper bound\s+\((?P<ub>\d+) words\)\s+exceeds the legitimate user allocatable offset upper bound\s+\((?P<lim>\d+) words\)\s+in memory space\s+(?P<space>\d+)\s+when allocating\s+(?P<w>\d+) words");
grammar!(sc_replica, r"No viable logical replica count for the embedding table");
grammar!(sc_field, r"(?P<k>fixed_size_allocation_bytes|row_dependent_size_allocation_bytes|total_spmem_size_bytes|max_nz_per_row|max_unique_nz_per_row|feature_width|sample_count)\s*=\s*(?P<v>\d+)");
grammar!(total_usage, r"Total (?P<space>hbm|vmem|smem) usage\s*>=\s*(?P<v>{SZ}):");
grammar!(program_req, r"Program (?P<space>hbm|vmem|smem) requirement\s+(?P<v>{SZ}):");
grammar!(usage_line, r"(?m)^\s*(?P<k>reserved(?:\([^)]*\))?|program|arguments|global|scoped|overlays|HLO temp)\s+(?P<v>{SZ}|unknown size)(?P<rest>[^\n]*)");
grammar!(hlo_temp_util, r"\((?P<util>[\d.]+)% utilization:\s*Unpadded \((?P<unp>{SZ})\)\s*Padded \((?P<pad>{SZ})\),\s*(?P<frag>[\d.]+)% fragmentation \((?P<fragb>{SZ})\)");
grammar!(output_size, r"Output size\s+(?P<out>{SZ});\s*shares\s+(?P<sh>{SZ})\s+with arguments");
grammar!(largest, r"Largest program allocations in (?P<space>\w+):");
grammar!(alloc_entry, r"(?m)^\s*(?P<rank>\d+)\.\s+Size:\s+(?P<size>{SZ})");
grammar!(replica_suffix, r"while running replica (?P<r>\d+) and partition (?P<p>\d+)");
grammar!(xla_tpu, r"XLA:TPU|TPU|tpu_|libtpu|_HBM\d");

/// Map a `memory space <name>` token to the contract's memory-space name.
fn space_name(s: &str) -> String {
    match s {
        "hbm" => "hbm".into(),
        "vmem" => "vmem".into(),
        "smem" => "smem".into(),
        "cmem" => "cmem".into(),
        "sflag" | "sflags" => "sflag".into(),
        other => other.to_ascii_lowercase(),
    }
}

fn id_for_space(space: &str) -> &'static str {
    match space {
        "hbm" => "tpu.hbm-compile",
        "vmem" => "tpu.vmem-program",
        "smem" => "tpu.smem",
        _ => "tpu.other-space",
    }
}

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    compile_time(t, hits);
    if has(t, "Aborting compilation early") {
        for c in early_abort().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = tpu_hit("tpu.hbm-compile", m.start(), m.end(), Phase::Compile);
            h.cap_size(SizeKey::Used, &c, "used").cap_size(SizeKey::Limit, &c, "limit").space("hbm").flag("early_abort");
            h.priority = 10;
            hits.push(h);
        }
    }
    if has(t, "Hbm usage") {
        for c in tc_sc().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = tpu_hit("tpu.hbm-compile", m.start(), m.end(), Phase::Compile);
            h.cap_size(SizeKey::Limit, &c, "limit").space("hbm");
            let tc = oomdoc_units::parse_size(&c["tc"]).map(|p| p.bytes);
            let sc = oomdoc_units::parse_size(&c["sc"]).map(|p| p.bytes);
            h.detail("tensorcore_hbm", tc).detail("sparsecore_hbm", sc);
            if let (Some(tc), Some(sc)) = (tc, sc) {
                if let Some(sum) = tc.checked_add(sc) {
                    h.derive("used", sum, format!("TensorCore {} + SparseCore {}", &c["tc"], &c["sc"]));
                }
                h.flag(if sc > tc { "sparsecore_dominant" } else { "tensorcore_dominant" });
            }
            h.priority = 10;
            hits.push(h);
        }
    }
    if has(t, "would exceed memory") {
        for c in alloc_exceeds().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = tpu_hit("tpu.allocation-exceeds-memory", m.start(), m.end(), Phase::Compile);
            let req: u64 = c["req"].parse().unwrap_or(0);
            let cap: u64 = c["cap"].parse().unwrap_or(0);
            h.bytes(SizeKey::Requested, req, c["req"].to_string()).bytes(SizeKey::Limit, cap, c["cap"].to_string());
            if let Some(s) = c.name("space") {
                h.space(&space_name(s.as_str()));
            }
            if let Some(s) = c.name("shape") {
                set_culprit_shape(&mut h, s.as_str());
            }
            if let Some(tag) = c.name("tag") {
                h.culprit.op_name = Some(tag.as_str().to_string());
                if let Some(k) = tag.as_str().strip_prefix("scoped memory for ") {
                    h.culprit.kernel = Some(k.to_string());
                }
            }
            if let Some(i) = c.name("instr") {
                if !i.as_str().starts_with('<') {
                    h.culprit.op = Some(i.as_str().to_string());
                }
            }
            h.flag("request_exceeds_capacity");
            h.priority = 10;
            hits.push(h);
        }
    }
    runtime(t, hits);
    sparsecore(t, hits);
}

fn tpu_hit(id: &'static str, start: usize, end: usize, phase: Phase) -> Hit {
    Hit::new(id, start, end).on(Platform::Tpu).during(phase)
}

fn set_culprit_shape(h: &mut Hit, shape: &str) {
    let shape = shape.trim_start_matches('(');
    let (p, u) = shape_bytes(shape);
    h.culprit.shape = Some(shape.to_string());
    h.culprit.padded_bytes = p;
    h.culprit.unpadded_bytes = u;
    if let Ok(s) = oomdoc_units::Shape::parse(shape) {
        h.culprit.dtype = Some(s.dtype.to_string());
    }
}

/// "Ran out of memory in memory space X" in all its forms, with the report that follows.
fn compile_time(t: &str, hits: &mut Vec<Hit>) {
    if !has(t, "Ran out of memory in memory space") && !ran_out().is_match(t) {
        // The legacy sentence quoted alone (issue titles).
        if let Some(c) = should_not().captures(t) {
            let m = c.get(0).unwrap();
            let space = if c["space"].starts_with("scoped") { "vmem".to_string() } else { space_name(&c["space"]) };
            let mut h = tpu_hit(if c["space"].starts_with("scoped") { "tpu.scoped-vmem" } else { id_for_space(&space) }, m.start(), m.end(), Phase::Compile);
            h.space(&space).flag("legacy_message");
            h.priority = 30;
            hits.push(h);
            return;
        }
        // A report pasted without its headline (truncated pastes) still names the space.
        report_only(t, hits);
        return;
    }
    let starts: Vec<(usize, usize, String)> =
        ran_out().captures_iter(t).map(|c| (c.get(0).unwrap().start(), c.get(0).unwrap().end(), c["space"].to_string())).collect();
    for (i, (start, head_end, space)) in starts.iter().enumerate() {
        let next = starts.get(i + 1).map_or(t.len(), |s| s.0);
        let seg = &t[*head_end..next];
        let space = space_name(space);
        let mut h = tpu_hit(id_for_space(&space), *start, *head_end, Phase::Compile);
        h.space(&space);
        h.priority = 5;
        let mut end = *head_end;
        if let Some(c) = used_of().captures(seg) {
            h.cap_size(SizeKey::Used, &c, "used").cap_size(SizeKey::Limit, &c, "limit").cap_size(SizeKey::Excess, &c, "excess");
            end = head_end + c.get(0).unwrap().end();
        } else if let Some(c) = estimated_of().captures(seg) {
            // Decimal units here: the 64 MiB of a TPU7x core prints as "67.11MB".
            h.size_in(SizeKey::Used, &c["used"], oomdoc_units::UnitStyle::Decimal).size_in(SizeKey::Limit, &c["limit"], oomdoc_units::UnitStyle::Decimal);
            end = head_end + c.get(0).unwrap().end();
        } else if let Some(c) = on_stack().captures(seg) {
            // Instruction-scoped (E1001): the op and its output shape, then the scoped sizes.
            h.id = "tpu.scoped-vmem";
            h.culprit.op = Some(c["op"].trim_start_matches('%').to_string());
            if let Some(s) = c.name("shape") {
                set_culprit_shape(&mut h, s.as_str());
            }
            end = head_end + c.get(0).unwrap().end();
            let tail = window(seg, 0, 64 * 1024);
            if let Some(sc) = scoped_alloc().captures(tail) {
                h.cap_size(SizeKey::Used, &sc, "used").cap_size(SizeKey::Limit, &sc, "limit").cap_size(SizeKey::Excess, &sc, "excess");
                end = head_end + sc.get(0).unwrap().end();
            } else if let Some(sc) = scoped_alloc_partial().captures(tail) {
                h.cap_size(SizeKey::Used, &sc, "used").cap_size(SizeKey::Limit, &sc, "limit");
                end = head_end + sc.get(0).unwrap().end();
            }
            let instr = &tail[..(end - head_end).min(tail.len())];
            if let Some(ct) = custom_call_target().captures(instr) {
                h.culprit.custom_call_target = Some(ct["t"].to_string());
            }
            if let Some(md) = metadata_op().captures(instr) {
                h.culprit.op_name = Some(md["op"].to_string());
                if let (Some(f), Some(l)) = (md.name("file"), md.name("line")) {
                    h.culprit.source = Some(format!("{}:{}", f.as_str(), l.as_str()));
                }
            }
        } else if let Some(c) = should_not().captures(window(seg, 0, 400)) {
            // Legacy wording with no numbers.
            if c["space"].starts_with("scoped") {
                h.id = "tpu.scoped-vmem";
            }
            h.flag("legacy_message");
            end = head_end + c.get(0).unwrap().end();
        } else if let Some(sc) = scoped_alloc().captures(window(seg, 0, 8192)) {
            // "Ran out of memory in memory space vmem ... Scoped allocation with size" (elided instruction).
            h.id = "tpu.scoped-vmem";
            h.cap_size(SizeKey::Used, &sc, "used").cap_size(SizeKey::Limit, &sc, "limit").cap_size(SizeKey::Excess, &sc, "excess");
            end = head_end + sc.get(0).unwrap().end();
            let pre = &seg[..sc.get(0).unwrap().start()];
            if let Some(p) = pre.find('%') {
                let op: String = pre[p + 1..].chars().take_while(|c| !c.is_whitespace() && *c != '=').collect();
                if !op.is_empty() {
                    h.culprit.op = Some(op);
                }
                let after = &pre[p..];
                if let Some(eq) = after.find("= ") {
                    let shape: String = after[eq + 2..].chars().take_while(|c| !c.is_whitespace()).collect();
                    if shape.contains('[') {
                        set_culprit_shape(&mut h, &shape);
                    }
                }
            }
        }
        // The report (Total usage, Program requirement, Largest program allocations) follows.
        end = end.max(attach_report(seg, *head_end, &mut h));
        h.end = end.max(h.end);
        // The bare phrase with nothing after it is usually prose quoting the message
        // ("raises RuntimeError(\"Ran out of memory in memory space vmem...\")").
        let bare = h.sizes.is_empty() && h.culprit.allocations.is_empty() && h.culprit.op.is_none() && !h.flags.contains("legacy_message");
        if bare {
            let before = window_before(t, *start, 200);
            let stated = ["RESOURCE_EXHAUSTED", "Resource exhausted", "compile permanent error", "Compilation failure", "E1000", "E1001", "CompileTime"].iter().any(|w| before.contains(w));
            if !stated {
                continue;
            }
        }
        hits.push(h);
    }
}

/// A TPU memory report pasted without the "Ran out of memory" headline.
fn report_only(t: &str, hits: &mut Vec<Hit>) {
    let Some(c) = total_usage().captures(t).or_else(|| program_req().captures(t)) else {
        fragment_only(t, hits);
        return;
    };
    let space = space_name(&c["space"]);
    let m = c.get(0).unwrap();
    let mut h = tpu_hit(id_for_space(&space), m.start(), m.end(), Phase::Compile);
    h.space(&space);
    h.priority = 20;
    let seg = &t[m.start()..];
    let end = attach_report(seg, m.start(), &mut h);
    h.end = h.end.max(end);
    // With no headline, the program requirement is the stated need.
    if h.get(SizeKey::Used).is_none() {
        if let Some(p) = program_req().captures(seg) {
            h.cap_size(SizeKey::Used, &p, "v");
        }
    }
    hits.push(h);
}

/// One or more entries of a "Largest program allocations" list pasted alone.
fn fragment_only(t: &str, hits: &mut Vec<Hit>) {
    let (Some(at), true) = (t.find("Allocation type:"), has(t, "Shape:") || has(t, "Unpadded size:") || has(t, "XLA label:")) else { return };
    let start = alloc_entry().find(t).map_or_else(|| t[..at].rfind("Shape:").unwrap_or(at), |m| m.start());
    // Without its heading the list does not name its memory. The report's own vocabulary
    // does: "scoped" allocations make up a VMEM requirement ("Program vmem requirement:
    // scoped ..."), an HBM requirement is reserved, global, program and "HLO temp"
    // allocations. A list whose every entry is scoped is VMEM's.
    let scoped_only = t.match_indices("Allocation type:").all(|(i, m)| t[i + m.len()..].trim_start().starts_with("scoped"));
    let space = largest().captures(t).map_or_else(|| if scoped_only { "vmem".to_string() } else { "hbm".to_string() }, |c| space_name(&c["space"]));
    let mut h = tpu_hit(id_for_space(&space), start, at + "Allocation type:".len(), Phase::Compile);
    h.space(&space);
    h.priority = 35;
    // Parse as a list (with a synthetic heading when the entry numbers are missing).
    let text = if alloc_entry().is_match(t) { format!("Largest program allocations in {space}:\n{}", &t[start..]) } else { format!("Largest program allocations in {space}:\n  0. Size: 0B\n{}", &t[start..]) };
    attach_report(&text, 0, &mut h);
    h.culprit.allocations.retain(|a| a.size != Some(0) || a.shape.is_some());
    for a in &mut h.culprit.allocations {
        if a.size == Some(0) {
            a.size = None;
        }
    }
    let last = t.rfind("Allocation type:").unwrap_or(at);
    h.end = t[last..].find('\n').map_or(t.len(), |i| last + i);
    hits.push(h);
}

/// Parse the report lines of a compile-time OOM into details and allocations.
/// Returns the end offset (in `t` coordinates, via `base`) of what was consumed.
fn attach_report(seg: &str, base: usize, h: &mut Hit) -> usize {
    let mut end = base;
    let seg = window(seg, 0, 256 * 1024);
    if let Some(c) = total_usage().captures(seg) {
        if let Some(p) = oomdoc_units::parse_size(&c["v"]) {
            h.detail("total_usage_at_least", p.bytes);
        }
        end = end.max(base + c.get(0).unwrap().end());
    }
    if let Some(c) = program_req().captures(seg) {
        if let Some(p) = oomdoc_units::parse_size(&c["v"]) {
            h.detail("program_requirement", p.bytes);
        }
        end = end.max(base + c.get(0).unwrap().end());
    }
    let report_end = largest().find(seg).map_or(seg.len().min(4096), |m| m.start());
    for c in usage_line().captures_iter(&seg[..report_end]) {
        let key = c["k"].to_string();
        let key = if key.starts_with("reserved") { "reserved".to_string() } else { key.replace(' ', "_").to_ascii_lowercase() };
        if let Some(p) = oomdoc_units::parse_size(&c["v"]) {
            // The first block lists reserved/program/arguments, the second global/scoped/HLO temp.
            if !h.details.contains_key(&key) {
                h.detail(&key, p.bytes);
            }
            if key == "reserved" && h.get(SizeKey::Reserved).is_none() {
                h.size(SizeKey::Reserved, &c["v"]);
            }
        }
        if key == "hlo_temp" {
            if let Some(u) = hlo_temp_util().captures(&c["rest"]) {
                let util: f64 = u["util"].parse().unwrap_or(100.0);
                h.detail("hlo_temp_utilization_pct", util);
                if let Some(p) = oomdoc_units::parse_size(&u["unp"]) {
                    h.detail("hlo_temp_unpadded", p.bytes);
                }
                if let Some(p) = oomdoc_units::parse_size(&u["pad"]) {
                    h.detail("hlo_temp_padded", p.bytes);
                }
                if let Some(p) = oomdoc_units::parse_size(&u["fragb"]) {
                    h.detail("hlo_temp_fragmentation", p.bytes);
                }
                if util < 50.0 {
                    h.flag("padding_heavy");
                }
            }
        }
        end = end.max(base + c.get(0).unwrap().end());
    }
    if let Some(c) = output_size().captures(&seg[..report_end]) {
        if let Some(p) = oomdoc_units::parse_size(&c["out"]) {
            h.detail("output_size", p.bytes);
        }
        if let Some(p) = oomdoc_units::parse_size(&c["sh"]) {
            h.detail("output_shared_with_arguments", p.bytes);
        }
    }
    if let Some(l) = largest().find(seg) {
        let list = &seg[l.end()..];
        let entries: Vec<_> = alloc_entry().captures_iter(list).collect();
        for (i, c) in entries.iter().enumerate() {
            let s = c.get(0).unwrap().end();
            let e = entries.get(i + 1).map_or(list.len().min(s + 16 * 1024), |n| n.get(0).unwrap().start());
            let body = &list[s..e];
            let mut a = Allocation { rank: c["rank"].parse().unwrap_or(0), ..Default::default() };
            a.size = oomdoc_units::parse_size(&c["size"]).map(|p| p.bytes);
            let mut body_end = 0;
            for line in body.lines() {
                let l = line.trim();
                body_end += line.len() + 1;
                if let Some(v) = l.strip_prefix("Operator:") {
                    if let Some(md) = metadata_op().captures(v) {
                        a.op_name = Some(md["op"].to_string());
                        if let (Some(f), Some(ln)) = (md.name("file"), md.name("line")) {
                            a.source = Some(format!("{}:{}", f.as_str(), ln.as_str()));
                        }
                    } else {
                        a.op_name = Some(v.trim().to_string());
                    }
                } else if let Some(v) = l.strip_prefix("Shape:") {
                    a.shape = Some(v.trim().to_string());
                } else if let Some(v) = l.strip_prefix("Unpadded size:") {
                    a.unpadded_size = oomdoc_units::parse_size(v.trim()).map(|p| p.bytes);
                } else if let Some(v) = l.strip_prefix("Extra memory due to padding:") {
                    let v = v.trim();
                    let (pad, exp) = v.split_once('(').unwrap_or((v, ""));
                    a.padding = oomdoc_units::parse_size(pad.trim()).map(|p| p.bytes);
                    a.expansion = exp.split('x').next().and_then(|x| x.trim().parse().ok());
                } else if let Some(v) = l.strip_prefix("XLA label:") {
                    a.label = Some(v.trim().to_string());
                } else if let Some(v) = l.strip_prefix("Allocation type:") {
                    a.allocation_type = Some(v.trim().to_string());
                } else if l.starts_with("=====") {
                    break;
                }
            }
            alloc_shape(&mut a);
            if a.expansion.is_some_and(|x| x >= 2.0) {
                h.flag("padding_heavy");
            }
            end = end.max(base + l.end() + s + body_end.min(body.len()));
            h.culprit.allocations.push(a);
        }
        if h.culprit.allocations.is_empty() {
            end = end.max(base + l.end());
        }
        // A kernel named in an allocation label (custom-call) is the culprit for scoped VMEM.
        if h.culprit.custom_call_target.is_none() {
            if let Some(a) = h.culprit.allocations.first() {
                if let Some(label) = &a.label {
                    if let Some(ct) = custom_call_target().captures(label) {
                        h.culprit.custom_call_target = Some(ct["t"].to_string());
                        h.culprit.kernel = label.split([' ', '=']).next().map(str::to_string);
                    }
                }
            }
        }
    }
    end
}

fn runtime(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "Error loading program") {
        for c in program_load().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = tpu_hit("tpu.program-load", m.start(), m.end(), Phase::Load);
            h.cap_size(SizeKey::Requested, &c, "req").cap_size(SizeKey::Free, &c, "free").cap_size(SizeKey::Reserved, &c, "res").space("hbm");
            if let Some(v) = c.name("resv").and_then(|v| oomdoc_units::parse_size(v.as_str())) {
                h.detail("reservable", v.bytes);
            }
            if let Some(p) = c.name("prog") {
                h.culprit.executable = Some(p.as_str().to_string());
            }
            h.flag("program_load");
            h.priority = 8;
            xrt_breakdown(t, m.end(), &mut h);
            hits.push(h);
        }
    }
    if has(t, "at the bottom of memory") {
        for c in reserve_bottom().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = tpu_hit("tpu.program-load", m.start(), m.end(), Phase::Load);
            h.cap_size(SizeKey::Requested, &c, "req").cap_size(SizeKey::Free, &c, "free").cap_size(SizeKey::Reserved, &c, "res").space("hbm");
            if let Some(v) = c.name("resv").and_then(|v| oomdoc_units::parse_size(v.as_str())) {
                h.detail("reservable", v.bytes);
            }
            h.flag("program_load");
            h.priority = 9;
            xrt_breakdown(t, m.end(), &mut h);
            hits.push(h);
        }
    }
    if has(t, "Attempting to allocate") {
        for c in device_buffer().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = tpu_hit("tpu.runtime-buffer", m.start(), m.end(), Phase::Runtime);
            h.cap_size(SizeKey::Requested, &c, "req").cap_size(SizeKey::Free, &c, "free").space("hbm");
            if let Some(d) = c.name("dev") {
                h.culprit.device = Some(d.as_str().to_string());
            }
            h.priority = 12;
            hits.push(h);
        }
    }
    if has(t, "Could not allocate") {
        for c in could_not_alloc().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = tpu_hit("tpu.runtime-buffer", m.start(), m.end(), Phase::Runtime);
            let req: u64 = c["req"].parse().unwrap_or(0);
            let avail: u64 = c["avail"].parse().unwrap_or(0);
            let allocatable: u64 = c["allocatable"].parse().unwrap_or(0);
            h.bytes(SizeKey::Requested, req, format!("{req} bytes")).bytes(SizeKey::Free, avail, format!("{avail} bytes"));
            h.detail("allocatable", allocatable).detail("available", avail);
            h.culprit.device = Some(c["dev"].to_string());
            if c["dev"].contains("HBM") {
                h.space("hbm");
            } else {
                h.platform = None;
            }
            h.priority = 12;
            hits.push(h);
        }
    }
}

/// The XRT-era breakdown after a reservation failure (pytorch/xla #1735 style).
fn xrt_breakdown(t: &str, from: usize, h: &mut Hit) {
    let w = window(t, from, 2048);
    if let Some(c) = hbm_capacity().captures(w) {
        h.cap_size(SizeKey::Total, &c, "total");
        for x in xrt_line().captures_iter(w) {
            let key = x["k"].to_ascii_lowercase().replace(['-', ' '], "_");
            let v = x["v"].trim_start_matches('-');
            if let Some(p) = oomdoc_units::parse_size(v) {
                let signed = if x["v"].starts_with('-') { -(p.bytes as i128) } else { p.bytes as i128 };
                h.detail(&key, serde_json::json!(signed as i64));
            }
            if x["k"].starts_with("Currently allocated") {
                h.size(SizeKey::Allocated, &x["v"]);
            }
        }
        h.end = h.end.max(from + w.len().min(1200));
    }
}

fn sparsecore(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "memref.alloca") {
        for c in sc_alloca().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = tpu_hit("sparsecore.allocation", m.start(), m.end(), Phase::Compile);
            let words = |g: &str| c[g].parse::<u64>().ok();
            let (ub, lim, w) = (words("ub"), words("lim"), words("w"));
            for (key, v, name) in [(SizeKey::Requested, w, "w"), (SizeKey::Used, ub, "ub"), (SizeKey::Limit, lim, "lim")] {
                if let Some(v) = v.and_then(|v| v.checked_mul(4)) {
                    h.bytes(key, v, format!("{} words", &c[name]));
                }
            }
            h.detail("requested_words", w).detail("offset_upper_bound_words", ub).detail("allocatable_words", lim);
            h.detail("word_bytes_assumed", 4);
            let space_id: u32 = c["space"].parse().unwrap_or(u32::MAX);
            h.detail("memory_space_id", space_id);
            let (space, flag) = match space_id {
                0 => ("sc-smem", "sc_space_onchip"),
                201 => ("sc-tilespmem", "sc_space_onchip"),
                202 => ("sc-spmem", "sc_space_onchip"),
                203 => ("sc-hbm", "sc_space_hbm"),
                204 => ("sc-sync-flags", "sc_space_onchip"),
                _ => ("sc-spmem", "sc_space_onchip"),
            };
            h.space(space).flag(flag);
            if let Some(code) = c.name("code") {
                h.code_in_log = Some(code.as_str().to_string());
            }
            h.priority = 5;
            hits.push(h);
        }
    }
    if let Some(m) = sc_replica().find(t) {
        let mut h = tpu_hit("sparsecore.replica-count", m.start(), m.end(), Phase::Compile);
        h.space("sc-spmem");
        let w = window(t, m.end(), 4096);
        let mut fixed = None;
        let mut row = None;
        for c in sc_field().captures_iter(w) {
            let v: u64 = c["v"].parse().unwrap_or(0);
            match &c["k"] {
                "total_spmem_size_bytes" => {
                    h.bytes(SizeKey::Limit, v, format!("{v}"));
                }
                "fixed_size_allocation_bytes" => fixed = Some(v),
                "row_dependent_size_allocation_bytes" => row = Some(v),
                _ => {}
            }
            h.detail(&c["k"], v);
            h.end = h.end.max(m.end() + c.get(0).unwrap().end());
        }
        if let (Some(f), Some(r)) = (fixed, row) {
            if let Some(sum) = f.checked_add(r) {
                h.derive("used", sum, format!("fixed_size_allocation_bytes {f} + row_dependent_size_allocation_bytes {r}"));
            }
        }
        h.priority = 5;
        hits.push(h);
    }
}

/// True when the text looks like it came from a TPU (for messages shared with GPUs).
pub fn mentions_tpu(t: &str) -> bool {
    xla_tpu().is_match(t)
}

/// `while running replica R and partition P` context.
pub fn replica_context(t: &str) -> Option<(u32, u32)> {
    replica_suffix().captures(t).and_then(|c| Some((c["r"].parse().ok()?, c["p"].parse().ok()?)))
}
