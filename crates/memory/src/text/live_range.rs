//! `-live-range.txt` = `HloLiveRange::ToString()`: the flattened schedule and each
//! value's `[start, end]` (end inclusive) in schedule positions.
//!
//! ```text
//! HloLiveRange (max 40):
//!   InstructionSequence:
//!     0:params_0__0_.1
//!   BufferLiveRange:
//!     params_0__0_.1{}:0-40
//!   Live ranges at 33 (peak):
//! ```
//! The file's own "peak" section is a logical estimate that ignores buffer sharing and
//! padding; it is not read.

use super::{clip, parse_u64, Lines};
use crate::error::MemoryError;
use std::path::Path;

#[derive(Debug, Default)]
pub struct LiveRangeText {
    /// `max`: the schedule end time; ranges lie in `0..=max`.
    pub max: u64,
    pub sequence: Vec<String>,
    /// `name{index}` → (start, end, line).
    pub ranges: crate::model::FastMap<String, (u64, u64, usize)>,
}

/// `Ok(None)` when XLA wrote `HloLiveRange not available` (finalized assignment).
pub fn parse_file(path: &Path) -> Result<Option<LiveRangeText>, MemoryError> {
    let mut lines = Lines::open(path)?;
    let mut first = String::new();
    if !lines.next_into(&mut first)? {
        return Err(lines.error("empty file; expected `HloLiveRange (max N):`"));
    }
    if first.starts_with("HloLiveRange not available") {
        return Ok(None);
    }
    let max = first
        .strip_prefix("HloLiveRange (max ")
        .and_then(|r| r.strip_suffix("):"))
        .ok_or_else(|| lines.error(format!("expected `HloLiveRange (max N):`, found `{}`", clip(&first))))?;
    let mut out = LiveRangeText { max: parse_u64(max, "schedule length").map_err(|m| lines.error(m))?, ..Default::default() };
    #[derive(PartialEq)]
    enum Section {
        Start,
        Sequence,
        Ranges,
        Done,
    }
    let mut section = Section::Start;
    let mut buf = String::new();
    while lines.next_into(&mut buf)? {
        let line = buf.as_str();
        match line {
            "  InstructionSequence:" => {
                section = Section::Sequence;
                continue;
            }
            "  BufferLiveRange:" => {
                section = Section::Ranges;
                continue;
            }
            _ => {}
        }
        if line.starts_with("  Live ranges at") || line.starts_with("  Peak memory") || line.starts_with("  Stack trace") {
            section = Section::Done;
            break;
        }
        if line.is_empty() {
            continue;
        }
        let item = line.strip_prefix("    ").ok_or_else(|| lines.error(format!("unexpected line: `{}`", clip(line))))?;
        match section {
            Section::Sequence => {
                let (pos, name) = item.split_once(':').ok_or_else(|| lines.error("expected `N:instruction`"))?;
                let pos = parse_u64(pos, "schedule position").map_err(|m| lines.error(m))?;
                if pos != out.sequence.len() as u64 {
                    return Err(lines.error(format!("schedule position {pos} out of order (expected {})", out.sequence.len())));
                }
                out.sequence.push(name.to_string());
            }
            Section::Ranges => {
                let (key, span) = item.rsplit_once(':').ok_or_else(|| lines.error("expected `name{index}:start-end`"))?;
                let (s, e) = span.split_once('-').ok_or_else(|| lines.error("expected `start-end` (truncated line?)"))?;
                let s = parse_u64(s, "range start").map_err(|m| lines.error(m))?;
                let e = parse_u64(e, "range end").map_err(|m| lines.error(m))?;
                if s > e || e > out.max {
                    return Err(lines.error(format!("range {s}-{e} is outside the schedule 0-{}", out.max)));
                }
                let line_no = lines.line_no();
                out.ranges.insert(key.to_string(), (s, e, line_no));
            }
            Section::Start | Section::Done => return Err(lines.error(format!("unexpected line before `InstructionSequence:`: `{}`", clip(line)))),
        }
    }
    if section != Section::Done {
        // A range `7-12` cut to `7-1` still parses: only the missing newline tells.
        lines.check_complete()?;
    }
    if section == Section::Start || section == Section::Sequence {
        return Err(lines.error("no `BufferLiveRange:` section (truncated file?)"));
    }
    if out.max > out.sequence.len() as u64 + 1 {
        return Err(lines.error(format!("schedule has {} instructions but `max {}` (truncated file?)", out.sequence.len(), out.max)));
    }
    // Ending inside `BufferLiveRange:` is accepted (older XLA printed no peak section);
    // a truncated range list is caught later, as a value without a live range.
    Ok(Some(out))
}
