//! Which instructions update an operand in place (from the optimized HLO text), for
//! naming the buffer XProf shows at an offset that two values share.
//!
//! When a value reuses the buffer of an operand that dies at its defining instruction,
//! XLA's heap simulator frees the operand and then shares (revives) the memory, and XProf
//! shows the new value's name from then on. An in-place update (`scatter`,
//! `dynamic-update-slice`, or a fusion whose root is one) shares while the operand is
//! still live, and XProf keeps showing the operand's name. Observed on every shared
//! buffer of the real fixtures (jax 0.10.2 CPU, xprof 2.24.2).

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;

const IN_PLACE_OPCODES: [&str; 2] = ["scatter", "dynamic-update-slice"];

/// Names (without `%`) of the instructions in `hlo_text` that update an operand in place.
/// An unreadable file gives an empty set (names are then the operand's, as before).
pub fn in_place_instructions(hlo_text: &Path) -> HashSet<String> {
    let Ok(f) = std::fs::File::open(hlo_text) else { return HashSet::new() };
    let mut in_place_computations: HashSet<String> = HashSet::new();
    // (instruction, called computation) of fusions, resolved at the end.
    let mut fusions: Vec<(String, String)> = Vec::new();
    let mut direct: HashSet<String> = HashSet::new();
    let mut computation = String::new();
    let mut roots: HashMap<String, String> = HashMap::new();
    for line in BufReader::new(f).lines() {
        let Ok(line) = line else { break };
        let l = line.trim();
        if l.ends_with('{') && !l.contains(" = ") {
            computation = l.split([' ', '(']).next().unwrap_or("").trim_start_matches('%').to_string();
            continue;
        }
        let (is_root, l) = match l.strip_prefix("ROOT ") {
            Some(rest) => (true, rest),
            None => (false, l),
        };
        let Some((name, rhs)) = l.split_once(" = ") else { continue };
        let name = name.trim().trim_start_matches('%');
        let Some(opcode) = opcode(rhs) else { continue };
        if is_root {
            roots.insert(computation.clone(), opcode.to_string());
        }
        if IN_PLACE_OPCODES.contains(&opcode) {
            direct.insert(name.to_string());
        } else if opcode == "fusion" {
            if let Some(callee) = rhs.split("calls=").nth(1) {
                let callee = callee.split([',', ' ', '}']).next().unwrap_or("").trim_start_matches('%');
                fusions.push((name.to_string(), callee.to_string()));
            }
        }
    }
    for (c, op) in &roots {
        if IN_PLACE_OPCODES.contains(&op.as_str()) {
            in_place_computations.insert(c.clone());
        }
    }
    for (name, callee) in fusions {
        if in_place_computations.contains(&callee) {
            direct.insert(name);
        }
    }
    direct
}

/// The opcode after the result shape: `f32[2]{0} add(...)`, `(f32[], s32[]) fusion(...)`.
fn opcode(rhs: &str) -> Option<&str> {
    let rest = if rhs.starts_with('(') {
        let mut depth = 0usize;
        let mut end = None;
        for (i, c) in rhs.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        end = Some(i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        &rhs[end?..]
    } else {
        rhs.split_once(' ')?.1
    };
    let op = rest.trim_start().split('(').next()?.trim();
    (!op.is_empty() && !op.contains(' ')).then_some(op)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_scatter_and_dus_fusions() {
        let text = "HloModule m\n\n%sc_comp (p0: f32[4], p1: s32[1], p2: f32[1]) -> f32[4] {\n  %p0 = f32[4]{0} parameter(0)\n  ROOT %scatter.1 = f32[4]{0} scatter(%p0, %p1, %p2), to_apply=%add\n}\n\n%mul_comp (p0: f32[4]) -> f32[4] {\n  ROOT %m = f32[4]{0} multiply(%p0, %p0)\n}\n\nENTRY %main (a: f32[4]) -> (f32[4], f32[4]) {\n  %w = f32[4]{0} fusion(%a, %i, %u), kind=kLoop, calls=%sc_comp, metadata={op_name=\"x\"}\n  %f = f32[4]{0} fusion(%w), kind=kLoop, calls=%mul_comp\n  %d = f32[8]{0} dynamic-update-slice(%b, %c, %i)\n  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%w, %f)\n}\n";
        let p = std::env::temp_dir().join(format!("oomdoc-inplace-{}.txt", std::process::id()));
        std::fs::write(&p, text).unwrap();
        let set = in_place_instructions(&p);
        std::fs::remove_file(&p).ok();
        let mut got: Vec<&str> = set.iter().map(String::as_str).collect();
        got.sort();
        assert_eq!(got, ["d", "scatter.1", "w"]);
        assert_eq!(opcode("(f32[], s32[2]{0}) fusion(%a)"), Some("fusion"));
        assert_eq!(opcode("f32[2]{0} add(%a, %b)"), Some("add"));
    }
}
