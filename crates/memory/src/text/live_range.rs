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

use super::{clip, parse_u64, printed_index, Lines};
use crate::error::MemoryError;
use crate::model::Names;
use std::path::Path;

#[derive(Debug, Default)]
pub struct LiveRangeText {
    /// `max`: the schedule end time; ranges lie in `0..=max`.
    pub max: u64,
    pub sequence: Names,
    /// `name{index}` → (start, end, line).
    pub ranges: RangeIndex,
}

/// Live ranges by key (`name{index}`), kept in one buffer (no allocation per key: a
/// million-value dump has a million keys). XLA prints them in value-id order, so they
/// are joined to the buffers in one pass ([`RangeIndex::join_in_id_order`]); only when
/// that fails is an open-addressing table built over the buffer. A key listed twice
/// keeps its last range, as a map insert would.
#[derive(Debug, Default)]
pub struct RangeIndex {
    keys: Names,
    ranges: Vec<(u64, u64, usize)>,
    /// 1 + a position in `keys`, or 0 for an empty slot (the length is a power of two),
    /// and the number of distinct keys; built on first lookup.
    table: std::cell::OnceCell<(Vec<usize>, usize)>,
}

/// FNV-1a over the key's parts (so `name` + `{}` hashes as `name{}`), then a final mix
/// so that the low bits, which pick the slot, depend on every byte.
fn key_hash(parts: [&[u8]; 2]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for part in parts {
        for &b in part {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// `key == instruction + index`, where a top-level value's index `""` reads `{}`.
fn key_is(key: &str, instruction: &str, index: &str) -> bool {
    let index = printed_index(index);
    key.len() == instruction.len() + index.len() && key.starts_with(instruction) && &key[instruction.len()..] == index
}

impl RangeIndex {
    fn push(&mut self, key: &str, range: (u64, u64, usize)) {
        self.keys.push(key);
        self.ranges.push(range);
    }

    fn table(&self) -> &(Vec<usize>, usize) {
        self.table.get_or_init(|| {
            let n = self.ranges.len();
            let mask = (n * 2).next_power_of_two().max(16) - 1;
            let mut slots = vec![0usize; mask + 1];
            let mut distinct = 0;
            for (i, key) in self.keys.iter().enumerate() {
                let mut slot = key_hash([key.as_bytes(), b""]) as usize & mask;
                loop {
                    match slots[slot] {
                        0 => {
                            slots[slot] = i + 1;
                            distinct += 1;
                            break;
                        }
                        j if self.keys.get(j - 1) == Some(key) => {
                            slots[slot] = i + 1;
                            break;
                        }
                        _ => slot = (slot + 1) & mask,
                    }
                }
            }
            (slots, distinct)
        })
    }

    /// The range of value `instruction` at shape index `index` (`""` for the top level).
    pub fn get(&self, instruction: &str, index: &str) -> Option<(u64, u64, usize)> {
        let (slots, _) = self.table();
        let mask = slots.len() - 1;
        let mut slot = key_hash([instruction.as_bytes(), printed_index(index).as_bytes()]) as usize & mask;
        loop {
            match slots[slot] {
                0 => return None,
                j if key_is(self.keys.get(j - 1).unwrap_or(""), instruction, index) => return Some(self.ranges[j - 1]),
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    /// Each `(instruction, index)`'s range (start, end), when the file lists its ranges
    /// in the order of the values' ids, as `HloLiveRange::ToString` does: one pass over
    /// the values sorted by id. `None` when some listed range is met by no value in that
    /// order (another order, a key listed twice, a value the assignment lacks): then
    /// look each up with [`RangeIndex::get`].
    pub fn join_in_id_order<'a>(&self, values: impl ExactSizeIterator<Item = (u64, &'a str, &'a str)>) -> Option<Vec<Option<(u64, u64)>>> {
        let mut by_id: Vec<(u64, &str, &str, usize)> = values.enumerate().map(|(pos, (id, instruction, index))| (id, instruction, index, pos)).collect();
        by_id.sort_unstable_by_key(|v| v.0);
        let mut out = vec![None; by_id.len()];
        let mut next = 0;
        for (seen, (_, instruction, index, pos)) in by_id.into_iter().enumerate() {
            if next < self.ranges.len() && key_is(self.keys.get(next).unwrap_or(""), instruction, index) {
                let (s, e, _) = self.ranges[next];
                out[pos] = Some((s, e));
                next += 1;
            } else if out.len() - seen - 1 < self.ranges.len() - next {
                // Fewer values left than ranges: some range will be met by none.
                return None;
            }
        }
        (next == self.ranges.len()).then_some(out)
    }

    /// Distinct keys.
    pub fn len(&self) -> usize {
        self.table().1
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Each distinct key with its (last) range.
    pub fn iter(&self) -> impl Iterator<Item = (&str, (u64, u64, usize))> + '_ {
        self.table().0.iter().filter(|&&j| j != 0).map(|&j| (self.keys.get(j - 1).unwrap_or(""), self.ranges[j - 1]))
    }
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
    while let Some((line, here)) = lines.next_line()? {
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
        let item = line.strip_prefix("    ").ok_or_else(|| here.error(format!("unexpected line: `{}`", clip(line))))?;
        match section {
            Section::Sequence => {
                let (pos, name) = item.split_once(':').ok_or_else(|| here.error("expected `N:instruction`"))?;
                let pos = parse_u64(pos, "schedule position").map_err(|m| here.error(m))?;
                if pos != out.sequence.len() as u64 {
                    return Err(here.error(format!("schedule position {pos} out of order (expected {})", out.sequence.len())));
                }
                out.sequence.push(name);
            }
            Section::Ranges => {
                let (key, span) = item.rsplit_once(':').ok_or_else(|| here.error("expected `name{index}:start-end`"))?;
                let (s, e) = span.split_once('-').ok_or_else(|| here.error("expected `start-end` (truncated line?)"))?;
                let s = parse_u64(s, "range start").map_err(|m| here.error(m))?;
                let e = parse_u64(e, "range end").map_err(|m| here.error(m))?;
                if s > e || e > out.max {
                    return Err(here.error(format!("range {s}-{e} is outside the schedule 0-{}", out.max)));
                }
                let line_no = here.line_no();
                out.ranges.push(key, (s, e, line_no));
            }
            Section::Start | Section::Done => return Err(here.error(format!("unexpected line before `InstructionSequence:`: `{}`", clip(line)))),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_index_finds_every_key_and_keeps_the_last_duplicate() {
        let mut index = RangeIndex::default();
        for i in 0..10_000u64 {
            index.push(&format!("fusion.{i}{{}}"), (i, i + 1, i as usize));
            index.push(&format!("tuple.{i}{{1,0}}"), (i, i + 2, 0));
        }
        index.push("fusion.7{}", (1, 2, 99));
        assert_eq!(index.len(), 20_000);
        assert_eq!(index.get("fusion.7", ""), Some((1, 2, 99)));
        assert_eq!(index.get("fusion.9999", ""), Some((9999, 10000, 9999)));
        assert_eq!(index.get("tuple.5", "{1,0}"), Some((5, 7, 0)));
        assert_eq!(index.get("tuple.5", ""), None);
        assert_eq!(index.iter().count(), 20_000);
        assert_eq!(RangeIndex::default().get("x", ""), None);
    }

    #[test]
    fn join_in_id_order_matches_lookup_or_declines() {
        let mut index = RangeIndex::default();
        index.push("a{}", (0, 1, 1));
        index.push("t{1}", (1, 2, 2));
        index.push("c{}", (2, 3, 3));
        // Values in allocation order, ids out of order; `b` has no range.
        let values = [(7, "c", ""), (1, "a", ""), (3, "b", ""), (5, "t", "{1}")];
        let joined = index.join_in_id_order(values.iter().copied()).unwrap();
        assert_eq!(joined, vec![Some((2, 3)), Some((0, 1)), None, Some((1, 2))]);
        let looked_up: Vec<_> = values.iter().map(|&(_, i, x)| index.get(i, x).map(|(s, e, _)| (s, e))).collect();
        assert_eq!(joined, looked_up);
        // Ranges in another order than the ids: the join declines.
        let swapped = [(1, "c", ""), (2, "a", ""), (3, "t", "{1}")];
        assert_eq!(index.join_in_id_order(swapped.iter().copied()), None);
        // A listed range with no value: declines too.
        assert_eq!(index.join_in_id_order([(1, "a", ""), (2, "c", "")].into_iter()), None);
    }
}
