//! The interned source-location tables XLA prints at the top of an HLO module
//! (`FileNames`, `FunctionNames`, `FileLocations`, `StackFrames`) and carries in
//! `HloModuleProto.stack_frame_index`. Instructions refer to them by `stack_frame_id`.

use super::Lines;
use crate::error::MemoryError;
use std::path::Path;

#[derive(Debug, Clone, Default)]
pub struct StackFrameIndex {
    pub file_names: Vec<String>,
    /// (file_name_id, line), 1-based ids as in the dump.
    pub file_locations: Vec<(u64, u32)>,
    /// (file_location_id, parent_frame_id).
    pub frames: Vec<(u64, u64)>,
}

impl StackFrameIndex {
    /// The innermost frame of `frame_id`: the user's line that created the op.
    pub fn source(&self, frame_id: u64) -> Option<(String, u32)> {
        let &(loc_id, _) = self.frames.get(usize::try_from(frame_id).ok()?.checked_sub(1)?)?;
        let &(file_id, line) = self.file_locations.get(usize::try_from(loc_id).ok()?.checked_sub(1)?)?;
        let file = self.file_names.get(usize::try_from(file_id).ok()?.checked_sub(1)?)?;
        Some((file.clone(), line))
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

/// Reads the tables from the head of an HLO text file and stops at the first
/// computation, so a 20 MB module costs only its first few KB.
pub fn parse_hlo_text_head(path: &Path) -> Result<StackFrameIndex, MemoryError> {
    let mut lines = Lines::open(path)?;
    let mut index = StackFrameIndex::default();
    let mut section = "";
    let mut buf = String::new();
    while lines.next_into(&mut buf)? {
        let line = buf.as_str();
        match line {
            "FileNames" | "FunctionNames" | "FileLocations" | "StackFrames" => {
                section = match line {
                    "FileNames" => "files",
                    "FunctionNames" => "functions",
                    "FileLocations" => "locations",
                    _ => "frames",
                };
                continue;
            }
            "" => continue,
            _ => {}
        }
        if line.starts_with('%') || line.starts_with("ENTRY") {
            break;
        }
        if line.starts_with("HloModule") {
            continue;
        }
        let Some((_id, body)) = line.split_once(' ') else { continue };
        match section {
            "files" => index.file_names.push(body.trim_matches('"').to_string()),
            "locations" => {
                let file = field(body, "file_name_id=").unwrap_or(0);
                let ln = field(body, "line=").unwrap_or(0) as u32;
                index.file_locations.push((file, ln));
            }
            "frames" => {
                let loc = field(body, "file_location_id=").unwrap_or(0);
                let parent = field(body, "parent_frame_id=").unwrap_or(0);
                index.frames.push((loc, parent));
            }
            _ => {}
        }
    }
    Ok(index)
}

/// `key=123` inside `{a=1 key=123 b=2}`; `key` must start a token.
fn field(body: &str, key: &str) -> Option<u64> {
    let mut from = 0;
    while let Some(pos) = body[from..].find(key) {
        let at = from + pos;
        let starts_token = at == 0 || matches!(body.as_bytes()[at - 1], b'{' | b' ');
        if starts_token {
            let rest = &body[at + key.len()..];
            let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
            return rest[..end].parse().ok();
        }
        from = at + key.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_respects_token_start() {
        let b = "{file_name_id=1 function_name_id=2 line=23 end_line=25 column=11}";
        assert_eq!(field(b, "line="), Some(23));
        assert_eq!(field(b, "file_name_id="), Some(1));
    }
}
