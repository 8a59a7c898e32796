//! Just enough of one HLO instruction line to label a buffer:
//! `%dot.1 = f32[1024,1024]{1,0} dot(%a, %b), ..., metadata={op_name="jit(f)/dot" stack_frame_id=7}`.

/// Labels of the instruction that defines a buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstructionMeta {
    pub opcode: String,
    pub op_name: String,
    pub source_file: Option<String>,
    pub source_line: Option<u32>,
    /// Index into the module's stack-frame table (newer JAX writes this instead of
    /// `source_file`/`source_line`).
    pub stack_frame_id: Option<u64>,
}

pub fn parse_instruction(text: &str) -> InstructionMeta {
    let mut meta = InstructionMeta::default();
    if let Some((_, rhs)) = text.split_once(" = ") {
        meta.opcode = opcode_after_shape(rhs).to_string();
    }
    if let Some(start) = text.find("metadata={") {
        parse_metadata(&text[start + "metadata={".len()..], &mut meta);
    }
    meta
}

/// `f32[2]{0} add(...)` or `(f32[2], s32[]) tuple(...)` → the opcode.
fn opcode_after_shape(rhs: &str) -> &str {
    let b = rhs.as_bytes();
    let mut i = 0;
    if b.first() == Some(&b'(') {
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                b'(' => depth += 1,
                b')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    } else {
        while i < b.len() && b[i] != b' ' {
            i += 1;
        }
    }
    let rest = rhs.get(i..).unwrap_or("").trim_start();
    let end = rest.find(|c: char| c == '(' || c == ' ' || c == ',').unwrap_or(rest.len());
    &rest[..end]
}

/// Reads `key=value` pairs up to the closing `}` of `metadata={...}`; values are quoted
/// strings with backslash escapes, or bare tokens.
fn parse_metadata(s: &str, meta: &mut InstructionMeta) {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        if i >= b.len() || b[i] == b'}' {
            return;
        }
        let key_start = i;
        while i < b.len() && b[i] != b'=' && b[i] != b' ' && b[i] != b'}' {
            i += 1;
        }
        let key = &s[key_start..i];
        if i >= b.len() || b[i] != b'=' {
            continue;
        }
        i += 1;
        let value: String;
        if b.get(i) == Some(&b'"') {
            i += 1;
            let mut v = Vec::new();
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                v.push(b[i]);
                i += 1;
            }
            i += 1;
            value = String::from_utf8_lossy(&v).into_owned();
        } else {
            let start = i;
            while i < b.len() && b[i] != b' ' && b[i] != b'}' {
                i += 1;
            }
            value = s[start..i].to_string();
        }
        match key {
            "op_name" => meta.op_name = value,
            "source_file" => meta.source_file = Some(value),
            "source_line" => meta.source_line = value.parse().ok(),
            "stack_frame_id" => meta.stack_frame_id = value.parse().ok(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_metadata() {
        let m = parse_instruction(r#"%multiply_subtract_fusion.1 = f32[1024,10]{1,0} fusion(%a, %b), kind=kLoop, calls=%fused_computation.10, metadata={op_name="jit(train_step)/sub" stack_frame_id=13}"#);
        assert_eq!(m.opcode, "fusion");
        assert_eq!(m.op_name, "jit(train_step)/sub");
        assert_eq!(m.stack_frame_id, Some(13));
        let m = parse_instruction(r#"%t = (f32[2]{0}, s32[]) tuple(%a, %b), metadata={op_name="a \"q\" b" source_file="/x/y.py" source_line=689}"#);
        assert_eq!((m.opcode.as_str(), m.op_name.as_str()), ("tuple", "a \"q\" b"));
        assert_eq!((m.source_file.as_deref(), m.source_line), (Some("/x/y.py"), Some(689)));
        assert_eq!(parse_instruction("garbage"), InstructionMeta::default());
        let _ = parse_instruction("%a = (((( metadata={op_name=\"");
    }
}
