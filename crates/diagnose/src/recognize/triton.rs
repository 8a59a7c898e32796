//! Shared memory and other on-chip resources of GPU kernels: Triton's
//! `OutOfResources` (`triton/runtime/errors.py`: "out of resource: {name}, Required:
//! {required}, Hardware limit: {limit}"), TorchInductor's "No valid triton configs"
//! wrapper, and ptxas' static shared-memory check.

use super::{has, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

grammar!(oor, r"(?:out of resource:|OutOfResources:)\s*(?P<what>shared memory|tensor memory|threads|registers|[A-Za-z_][\w]*)[\s,>]*Required:\s*(?P<req>\d+)[\s,>]*Hardware limit(?:ation)?:\s*(?P<lim>\d+)");
grammar!(oor_bare, r"out of resource:\s*(?P<what>shared memory|tensor memory|threads|registers)");
grammar!(ptxas, r"ptxas\s+error\s*:\s*Entry function '(?P<fn>[^']+)' uses too much shared data(?: \((?P<req>0x[0-9a-fA-F]+) bytes(?:\s*\+\s*(?P<sys>0x[0-9a-fA-F]+) bytes system)?,\s*(?P<lim>0x[0-9a-fA-F]+) max\))?");
grammar!(no_valid, r"No valid triton configs");
grammar!(inductor, r"torch\._inductor|InductorError|triton_(?:per|red|poi|tem|mm)_");

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "out of resource") || has(t, "OutOfResources") {
        for c in oor().captures_iter(t) {
            let m = c.get(0).unwrap();
            let what = &c["what"];
            let (id, space, kernel) = match what {
                "shared memory" => ("triton.shared-memory", "shared", None),
                "tensor memory" => ("triton.other-resource", "tensor-memory", None),
                "threads" | "registers" => ("triton.other-resource", "registers", None),
                // Inductor names the kernel instead of the resource.
                k => ("triton.shared-memory", "shared", Some(k.to_string())),
            };
            let mut h = Hit::new(id, m.start(), m.end());
            let req: u64 = c["req"].parse().unwrap_or(0);
            let lim: u64 = c["lim"].parse().unwrap_or(0);
            if what == "shared memory" || kernel.is_some() {
                h.bytes(SizeKey::Requested, req, c["req"].to_string()).bytes(SizeKey::Limit, lim, c["lim"].to_string());
            } else {
                // Tensor memory is counted in columns, threads in threads: not bytes.
                h.detail("required", req).detail("hardware_limit", lim);
                h.detail("unit", if what == "tensor memory" { "TMEM columns" } else { what });
            }
            h.culprit.kernel = kernel;
            h.detail("resource", if what == "threads" || what == "registers" || what == "tensor memory" { what } else { "shared memory" });
            if what == "threads" {
                h.memory_space = None;
            } else {
                h.space(space);
            }
            h.platform = Some(if lim == 65536 && has(t, "HIP") { Platform::Rocm } else { Platform::Cuda });
            h.phase = Some(Phase::Compile);
            if inductor().is_match(t) {
                h.flag("inductor");
            }
            if no_valid().is_match(t) {
                h.detail("no_valid_configs", true);
            }
            // Extend to the standard advice sentence.
            if let Some(p) = t[m.end()..].find("may help.") {
                if p < 200 {
                    h.end = m.end() + p + "may help.".len();
                }
            }
            h.priority = 5;
            hits.push(h);
        }
        for c in oor_bare().captures_iter(t) {
            let m = c.get(0).unwrap();
            let id = if &c["what"] == "shared memory" { "triton.shared-memory" } else { "triton.other-resource" };
            let mut h = Hit::new(id, m.start(), m.end());
            h.platform = Some(Platform::Cuda);
            h.phase = Some(Phase::Compile);
            if &c["what"] == "shared memory" {
                h.space("shared");
            }
            h.priority = 30;
            hits.push(h);
        }
    }
    if has(t, "too much shared data") {
        for c in ptxas().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("ptxas.shared-data", m.start(), m.end());
            // The sizes may be cut off (a paste that ends at "uses too much shared data").
            if let (Some(req), Some(lim)) = (c.name("req"), c.name("lim")) {
                h.size(SizeKey::Requested, req.as_str()).size(SizeKey::Limit, lim.as_str());
            }
            if let Some(sys) = c.name("sys").and_then(|s| oomdoc_units::parse_size(s.as_str())) {
                h.detail("system_bytes", sys.bytes);
            }
            h.culprit.kernel = Some(demangle_hint(&c["fn"]));
            h.detail("entry_function", c["fn"].to_string());
            h.platform = Some(Platform::Cuda);
            h.phase = Some(Phase::Compile);
            h.space("shared");
            if c.name("lim").is_some_and(|l| l.as_str() == "0xc000") {
                h.flag("static_shared_limit");
            }
            h.priority = 5;
            hits.push(h);
        }
    }
}

/// A readable name for an Itanium-mangled CUDA entry: `_Z15flash_attn_tileILi128ELi32ELb1EEv…`
/// → `flash_attn_tile<128,32,1>`. Anything else is returned as is.
pub fn demangle_hint(name: &str) -> String {
    let Some(rest) = name.strip_prefix("_Z") else { return name.to_string() };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let Ok(len) = digits.parse::<usize>() else { return name.to_string() };
    let after = &rest[digits.len()..];
    if after.len() < len || !after.is_char_boundary(len) {
        return name.to_string();
    }
    let base = &after[..len];
    let tail = &after[len..];
    // Template arguments: I ... E with L<type><value>E literals.
    if let Some(args) = tail.strip_prefix('I') {
        let mut vals = Vec::new();
        let mut s = args;
        while let Some(r) = s.strip_prefix('L') {
            let ty_len = r.chars().take_while(|c| c.is_ascii_alphabetic()).count();
            let v: String = r[ty_len..].chars().take_while(|c| c.is_ascii_digit() || *c == 'n').collect();
            vals.push(v.replace('n', "-"));
            let consumed = ty_len + vals.last().map_or(0, |x| x.len());
            s = r[consumed..].strip_prefix('E').unwrap_or("");
        }
        if !vals.is_empty() {
            return format!("{base}<{}>", vals.join(","));
        }
    }
    base.to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn demangles_template_literals() {
        assert_eq!(super::demangle_hint("_Z15flash_attn_tileILi128ELi32ELb1EEvPKcS1_"), "flash_attn_tile<128,32,1>");
        assert_eq!(super::demangle_hint("tvmgen_default_fused_nn_conv2d_add_kernel"), "tvmgen_default_fused_nn_conv2d_add_kernel");
        assert_eq!(super::demangle_hint("_Z3"), "_Z3");
    }
}
