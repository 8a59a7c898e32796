//! One size extractor for every family: sizes named by a label in whatever layout the
//! message or the paste gives them.
//!
//! - key–value lines: `Requested : 320.00 MiB`, `Free (according to CUDA): 19.69 MiB`, a
//!   label wrapped onto the line before its `: value`, several pairs flattened onto one line;
//! - Markdown bold or code and quotes around labels or values (`**Requested**: 320 MiB`,
//!   `"free": "1.2 GB"`), HTML table cells (`<td>Free</td><td>1.2 GB</td>`);
//! - units stated once: in a label (`Free memory (MB): 120`), in a table's header row
//!   (`| name | size (MiB) |`), or a title line (`Memory usage (GiB)`) above unit-less rows;
//! - hex sizes (`size: 0x4000000`), bare byte counts next to a size word (`size: 59187712,
//!   flags: 0x2` gives 59187712 and never the flags);
//! - any whitespace between number and unit: two spaces, a no-break space.
//!
//! A size no memory could hold (an unset limit printed as 2^64 bytes, an overflow, two
//! numbers run together) is dropped with a note ([`plausible`]), never reported.

use crate::finding::SizeKey;
use oomdoc_units::{parse_size_in, PrintedSize, UnitStyle};
use regex::Regex;
use std::sync::OnceLock;

/// A size read by label (any family, no grammar vouching for it) from 1 EiB up is no
/// memory's: an unset limit printed as `UINT64_MAX` bytes (17179869184.00 GiB), an
/// overflow, digits of two numbers run together.
pub const IMPLAUSIBLE_BYTES: u64 = 1 << 60;

/// From 2^63 bytes up a size is an overflow whoever printed it (a negative count read as
/// unsigned, `UINT64_MAX`); below that a family's grammar may state a real estimate (XLA's
/// early abort: "Requires 3.47E").
pub const OVERFLOW_BYTES: u64 = 1 << 63;

/// A size found beside a label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labeled {
    pub label: String,
    pub key: Option<SizeKey>,
    pub size: PrintedSize,
    /// Byte span of the value in the text.
    pub start: usize,
    pub end: usize,
}

/// What [`labeled`] read: the sizes, and notes on values dropped as implausible.
#[derive(Debug, Default, Clone)]
pub struct Extracted {
    pub sizes: Vec<Labeled>,
    pub notes: Vec<String>,
}

impl Extracted {
    /// The first size read for a contract key.
    pub fn get(&self, key: SizeKey) -> Option<&Labeled> {
        self.sizes.iter().find(|l| l.key == Some(key))
    }
}

/// `None` when the size is plausible, else why it is not (the note reported with the finding).
pub fn plausible(p: &PrintedSize) -> Option<String> {
    implausible_from(p, IMPLAUSIBLE_BYTES).or_else(|| repeated_digits(p))
}

/// A byte count whose digits are one number of four or more digits written twice or more
/// ("20971522097152": two ranks' "memory allocation of 2097152 bytes failed" lines written
/// into each other) is two numbers run together, not a size.
fn repeated_digits(p: &PrintedSize) -> Option<String> {
    let d: String = p.text.chars().take_while(|c| c.is_ascii_digit() || *c == ',').filter(|c| c.is_ascii_digit()).collect();
    let n = d.len();
    let unit = (4..=n / 2).find(|&k| n % k == 0 && d.as_bytes().chunks(k).all(|c| c == &d.as_bytes()[..k]))?;
    Some(format!("dropped \"{}\": the digits of {} written {} times, two numbers run together", p.text, &d[..unit], n / unit))
}

/// Like [`plausible`] with the bound for sizes a family grammar read ([`OVERFLOW_BYTES`]).
pub fn not_overflow(p: &PrintedSize) -> Option<String> {
    implausible_from(p, OVERFLOW_BYTES)
}

fn implausible_from(p: &PrintedSize, bound: u64) -> Option<String> {
    (p.bytes >= bound).then(|| {
        format!("dropped \"{}\": {} bytes is more than any memory (an unset limit printed as its maximum, an overflow, or two numbers run together)", p.text, p.bytes)
    })
}

/// The contract key a label names, by its words (any language the runtimes print in English).
pub fn key_for_label(label: &str) -> Option<SizeKey> {
    let l = label.to_ascii_lowercase();
    let has = |w: &str| l.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').any(|x| x == w);
    let key = if has("requested") || has("request") || has("requesting") || l.contains("tried to allocate") || l.contains("to allocate buffer") || has("needed") || has("required") || has("requires") || has("need") {
        SizeKey::Requested
    } else if has("free") || has("available") || has("avail") || has("remaining") {
        SizeKey::Free
    } else if has("limit") || has("max") || has("maximum") || has("allowed") || has("budget") || has("quota") {
        // "Device limit" (cudaMallocAsync) is the device's memory, not a configured cap.
        if has("device") && !has("fraction") {
            SizeKey::Total
        } else {
            SizeKey::Limit
        }
    } else if has("total") || has("capacity") {
        SizeKey::Total
    } else if has("reserved") || has("cached") {
        SizeKey::Reserved
    } else if has("allocated") || has("in_use") || (has("in") && has("use")) || has("inuse") {
        SizeKey::Allocated
    } else if has("used") || has("usage") || has("rss") {
        SizeKey::Used
    } else if has("size") || has("bytes") || has("alloc") || has("allocation") || has("len") {
        SizeKey::Requested
    } else {
        return None;
    };
    Some(key)
}

/// Words that make a bare integer next to them a byte count.
fn bytes_label(label: &str) -> bool {
    let l = label.to_ascii_lowercase();
    l.contains("size") || l.contains("bytes") || l.ends_with("(b)") || l.ends_with("[b]")
        // MIOpen: "Memory not available to allocate buffer: 655360000".
        || (l.contains("allocate") && l.ends_with("buffer"))
}

const NUM: &str = r"-?(?:0[xX][0-9A-Fa-f]+|[0-9][0-9,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)";
const UNIT: &str = r"(?:[KMGTPE]i?B|[kKmMgGtT]i?b|[KMGTPE]|B|bytes?|Bytes)";

fn pair_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // label, optional unit in the label, separator, optional quote/bold, number, optional unit.
        Regex::new(&format!(
            r#"(?P<label>[A-Za-z][A-Za-z0-9_ ()/.'-]{{0,60}}?)(?:\*\*|__|`|"|')?\s*(?:\((?P<lunit>{UNIT})\)|\[(?P<lunit2>{UNIT})\])?\s*(?:\n[ \t]*)?[:=]\s*(?:\*\*|__|`|"|')?(?P<num>{NUM})(?:[ \t\u{{a0}}]{{0,3}}(?P<unit>{UNIT})\b)?"#
        ))
        .expect("pair regex")
    })
}

fn unit_in_title() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(&format!(r"[(\[](?P<u>{UNIT})[)\]]|\bin (?P<w>[KMGT]i?B|bytes)\b")).expect("title unit"))
}

fn html_cells() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?i)</t[dh]>\s*<t[dh][^>]*>").expect("html cells"))
}

fn html_tags() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?i)</?(?:t[dhr]|table|tbody|thead|b|strong|code|em|span|p)\b[^>]*>").expect("html tags"))
}

/// Read every labeled size in `text`. Binary reading of `GB`-style units unless `style`
/// says otherwise. Values in the same order as the text.
pub fn labeled(text: &str, style: UnitStyle) -> Extracted {
    let mut out = Extracted::default();
    // HTML table cells become `label : value` pairs (spans are then of the rewritten text,
    // so they are only reported for plain text).
    let rewritten;
    let (t, spans_ok) = if text.contains("<t") || text.contains("<T") {
        let s = html_cells().replace_all(text, " : ");
        rewritten = html_tags().replace_all(&s, " ").into_owned();
        (rewritten.as_str(), false)
    } else {
        (text, true)
    };
    pairs(t, style, spans_ok, &mut out);
    tables(t, style, &mut out);
    out
}

/// A label that names memory ("Free memory", "Requested memory").
fn memory_label(label: &str) -> bool {
    label.to_ascii_lowercase().split(|c: char| !c.is_ascii_alphanumeric()).any(|w| w == "memory")
}

/// A plain integer of at least seven digits: as a count of KiB or MiB it would be gigabytes
/// to terabytes, so beside a memory label it is a byte count.
fn byte_count_digits(raw: &str) -> bool {
    raw.len() >= 7 && raw.bytes().all(|b| b.is_ascii_digit())
}

fn pairs(t: &str, style: UnitStyle, spans_ok: bool, out: &mut Extracted) {
    // A list of memory figures printed without units (XGBoost: "- Free memory: 11310923776",
    // "- Requested memory: 47996") is in bytes when one of its figures can only be bytes:
    // one unit for the whole list.
    let memory_list_in_bytes = pair_re().captures_iter(t).any(|c| c.name("unit").is_none() && memory_label(&c["label"]) && byte_count_digits(&c["num"]));
    for c in pair_re().captures_iter(t) {
        let label = c["label"].trim().trim_matches(|ch| ch == '*' || ch == '_' || ch == '`' || ch == '"' || ch == '\'').trim();
        // A wrapped label: `PyTorch limit (...)\n   : 17179869184.00 GiB` keeps the line above.
        let label = label.rsplit('\n').find(|l| !l.trim().is_empty()).unwrap_or(label).trim();
        if label.is_empty() {
            continue;
        }
        let num = c.name("num").unwrap();
        let unit = c.name("unit").or(c.name("lunit")).or(c.name("lunit2")).map(|m| m.as_str());
        let unit = unit.or_else(|| {
            // A unit stated once in the label: "Free memory (MB)", "size in GiB".
            unit_in_title().captures(label).and_then(|u| u.name("u").or(u.name("w"))).map(|m| m.as_str())
        });
        let raw = num.as_str();
        let is_hex = raw.starts_with("0x") || raw.starts_with("0X");
        let memory_bytes = memory_list_in_bytes && memory_label(label) && raw.bytes().all(|b| b.is_ascii_digit());
        if unit.is_none() && !is_hex && !bytes_label(label) && !memory_bytes {
            // A bare number is a size only where a size word says so ("size: 59187712").
            continue;
        }
        let Some(key) = key_for_label(label) else { continue };
        let text = match unit {
            Some(u) if !is_hex => format!("{raw} {u}"),
            _ => raw.to_string(),
        };
        push(out, label, Some(key), &text, style, if spans_ok { (num.start(), c.get(0).unwrap().end()) } else { (0, 0) });
    }
}

/// Markdown or plain tables: a header row that states a unit for a column, then rows
/// whose first cell is a label.
fn tables(t: &str, style: UnitStyle, out: &mut Extracted) {
    let mut column_units: Vec<Option<String>> = Vec::new();
    let mut title_unit: Option<String> = None;
    for line in t.lines() {
        let l = line.trim();
        if !l.contains('|') {
            // A title line stating a unit for the rows below ("Memory (MiB)").
            if !l.is_empty() && !l.contains(':') && !l.chars().any(|c| c.is_ascii_digit()) {
                title_unit = unit_in_title().captures(l).and_then(|u| u.name("u").or(u.name("w"))).map(|m| m.as_str().to_string());
            } else if l.is_empty() {
                title_unit = None;
            }
            column_units.clear();
            continue;
        }
        let cells: Vec<&str> = l.trim_matches('|').split('|').map(|c| c.trim().trim_matches('*').trim_matches('`').trim()).collect();
        if cells.iter().all(|c| c.chars().all(|ch| ch == '-' || ch == ':' || ch == ' ')) {
            continue; // the Markdown separator row
        }
        let numeric = cells.iter().skip(1).any(|c| starts_numeric(c));
        if !numeric {
            // A header row: units per column.
            column_units = cells.iter().map(|c| unit_in_title().captures(c).and_then(|u| u.name("u").or(u.name("w"))).map(|m| m.as_str().to_string())).collect();
            continue;
        }
        let Some(label) = cells.first().filter(|c| !starts_numeric(c)) else { continue };
        for (i, cell) in cells.iter().enumerate().skip(1) {
            if !starts_numeric(cell) {
                continue;
            }
            let has_unit = cell.trim_end().ends_with(|c: char| c.is_ascii_alphabetic());
            let unit = column_units.get(i).cloned().flatten().or_else(|| title_unit.clone());
            let text = match (has_unit, unit) {
                (true, _) => cell.to_string(),
                (false, Some(u)) => format!("{cell} {u}"),
                (false, None) => continue,
            };
            if let Some(key) = key_for_label(label) {
                if !out.sizes.iter().any(|s| s.label == *label && s.key == Some(key)) {
                    push(out, label, Some(key), &text, style, (0, 0));
                }
            }
            break;
        }
    }
}

fn starts_numeric(c: &str) -> bool {
    c.trim_start_matches('-').starts_with(|ch: char| ch.is_ascii_digit())
}

fn push(out: &mut Extracted, label: &str, key: Option<SizeKey>, text: &str, style: UnitStyle, span: (usize, usize)) {
    let text = text.replace('\u{a0}', " ");
    let Some(size) = parse_size_in(&text, style) else {
        // Exponent notation or a value past u64: printed, but not a size any memory has.
        // (The text is a number the pair grammar read, so it failed for its size.)
        if text.starts_with(|c: char| c.is_ascii_digit()) {
            out.notes.push(format!("dropped \"{text}\" ({label}): more bytes than any memory has, or not a byte count (an unset limit, an overflow)"));
        }
        return;
    };
    if let Some(note) = plausible(&size) {
        out.notes.push(format!("{note} ({label})"));
        return;
    }
    out.sizes.push(Labeled { label: label.to_string(), key, size, start: span.0, end: span.1 });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(t: &str) -> Extracted {
        labeled(t, UnitStyle::Binary)
    }

    fn bytes(e: &Extracted, k: SizeKey) -> Option<u64> {
        e.get(k).map(|l| l.size.bytes)
    }

    #[test]
    fn cuda_malloc_async_table_and_its_unset_limit() {
        // The layout of PyTorch's cudaMallocAsync backend (c10/cuda/CUDAMallocAsyncAllocator.cpp):
        // with no memory fraction set, the limit is UINT64_MAX bytes.
        let e = read("torch.cuda.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently allocated     : 7.62 GiB\nRequested               : 320.00 MiB\nDevice limit            : 7.75 GiB\nFree (according to CUDA): 19.69 MiB\nPyTorch limit (set by user-supplied memory fraction)\n                        : 17179869184.00 GiB");
        assert_eq!(bytes(&e, SizeKey::Requested), Some(320 << 20));
        assert_eq!(bytes(&e, SizeKey::Allocated), oomdoc_units::parse_size("7.62 GiB").map(|p| p.bytes));
        assert_eq!(bytes(&e, SizeKey::Total), oomdoc_units::parse_size("7.75 GiB").map(|p| p.bytes));
        assert_eq!(bytes(&e, SizeKey::Free), oomdoc_units::parse_size("19.69 MiB").map(|p| p.bytes));
        assert_eq!(bytes(&e, SizeKey::Limit), None);
        assert_eq!(e.notes.len(), 1, "{:?}", e.notes);
        assert!(e.notes[0].contains("17179869184.00 GiB") && e.notes[0].contains("PyTorch limit"), "{:?}", e.notes);
    }

    #[test]
    fn flattened_bold_quoted_and_html() {
        let e = read("Currently allocated : 7.62 GiB Requested : 320.00 MiB Free (according to CUDA): 19.69 MiB");
        assert_eq!(bytes(&e, SizeKey::Requested), Some(320 << 20));
        assert_eq!(bytes(&e, SizeKey::Free), oomdoc_units::parse_size("19.69 MiB").map(|p| p.bytes));
        let e = read("**Requested**: 320.00 MiB, **Free**: `1.50 GiB`");
        assert_eq!((bytes(&e, SizeKey::Requested), bytes(&e, SizeKey::Free)), (Some(320 << 20), Some(3 << 29)));
        let e = read(r#"{"requested": "2 GiB", "free": "512 MiB"}"#);
        assert_eq!((bytes(&e, SizeKey::Requested), bytes(&e, SizeKey::Free)), (Some(2 << 30), Some(512 << 20)));
        let e = read("<table><tr><td>Requested</td><td>320.00 MiB</td></tr><tr><td>Free</td><td><b>1 GiB</b></td></tr></table>");
        assert_eq!((bytes(&e, SizeKey::Requested), bytes(&e, SizeKey::Free)), (Some(320 << 20), Some(1 << 30)));
    }

    #[test]
    fn units_stated_once() {
        let e = read("Free memory (MB): 120\nTotal memory (MB): 16000");
        assert_eq!((bytes(&e, SizeKey::Free), bytes(&e, SizeKey::Total)), (Some(120 << 20), Some(16000 << 20)));
        let e = read("| pool | size (MiB) |\n|---|---|\n| requested | 512 |\n| free | 64 |");
        assert_eq!((bytes(&e, SizeKey::Requested), bytes(&e, SizeKey::Free)), (Some(512 << 20), Some(64 << 20)));
        let e = read("Memory usage (GiB)\ntotal | 80\nused | 79.5");
        assert_eq!(bytes(&e, SizeKey::Total), Some(80 << 30));
    }

    #[test]
    fn a_memory_list_without_units_is_in_bytes_when_one_figure_must_be() {
        // dmlc/xgboost#7140: device_helpers.cuh prints bytes without a unit.
        let t = "Memory allocation error on worker 0: std::bad_alloc: cudaErrorMemoryAllocation: out of memory\n- Free memory: 11310923776\n- Requested memory: 47996\n";
        let e = labeled(t, UnitStyle::Binary);
        let got: Vec<(Option<SizeKey>, u64)> = e.sizes.iter().map(|l| (l.key, l.size.bytes)).collect();
        assert!(got.contains(&(Some(SizeKey::Free), 11310923776)), "{got:?}");
        assert!(got.contains(&(Some(SizeKey::Requested), 47996)), "{got:?}");
        // Small unit-less figures alone stay unread: "Free memory: 12" may be GiB.
        assert!(labeled("Free memory: 12\nTotal memory: 16384\n", UnitStyle::Binary).sizes.is_empty());
    }

    #[test]
    fn hex_flags_and_bare_numbers() {
        // Sizes beside flags: the size, never the flags.
        let e = read("alloc failed: size: 59187712, flags: 0x2");
        assert_eq!(bytes(&e, SizeKey::Requested), Some(59187712));
        assert_eq!(e.sizes.len(), 1, "{:?}", e.sizes);
        let e = read("requested size: 0x4000000");
        assert_eq!(bytes(&e, SizeKey::Requested), Some(0x4000000));
        // A bare number next to a word that is not a size word is not a size.
        let e = read("free: 12, total: 16");
        assert!(e.sizes.is_empty(), "{:?}", e.sizes);
        // MIOpen names the buffer it could not allocate, in bytes.
        let e = read("Memory not available to allocate buffer: 655360000");
        assert_eq!(bytes(&e, SizeKey::Requested), Some(655360000));
    }

    #[test]
    fn any_space_between_number_and_unit() {
        for t in ["Requested : 3.00  GiB", "Requested : 3.00\u{a0}GiB", "Requested : 3.00 \u{a0}GiB"] {
            assert_eq!(bytes(&read(t), SizeKey::Requested), Some(3 << 30), "{t:?}");
        }
    }

    #[test]
    fn implausible_sizes_are_notes() {
        let e = read("requested: 4.5e18 bytes");
        assert!(e.sizes.is_empty());
        assert_eq!(e.notes.len(), 1, "{:?}", e.notes);
        let e = read("allocated: 123456789012345678901 bytes");
        assert!(e.sizes.is_empty() && e.notes.len() == 1, "{:?}", e);
    }

    #[test]
    fn a_paste_with_odd_spaces_keeps_its_units() {
        // CompVis/stable-diffusion#702, re-spaced: two spaces, a no-break space, and a raw
        // Windows-1252 0xA0 byte between numbers and units.
        let text = "OutOfMemoryError: CUDA out of memory. Tried to allocate 192.00  MiB (GPU 0; 4.00\u{a0}GiB total capacity; 3.08 GiB already allocated; 0 bytes free; 3.47 GiB reserved in total by PyTorch)";
        let mut bytes_1252 = text.replace('\u{a0}', "#").into_bytes();
        let at = bytes_1252.iter().position(|&b| b == b'#').unwrap();
        bytes_1252[at] = 0xA0;
        for report in [crate::diagnose_text(text, &crate::Options::default()), crate::diagnose_reader(&bytes_1252[..], &crate::Options::default()).unwrap()] {
            let f = &report.findings[0];
            assert_eq!(f.sizes.get(SizeKey::Requested), Some(192 << 20));
            assert_eq!(f.sizes.get(SizeKey::Total), Some(4 << 30));
        }
    }
}
