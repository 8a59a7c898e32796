//! Recognizers: one module per family of messages. Each reads a [`Flat`] block and
//! reports [`Hit`]s: which knowledge-base entry, where in the block, and the numbers
//! and culprit the message states. Grammars follow the message formats documented
//! by the vendors' sources (see each module), not particular log lines.

pub mod cluster;
pub mod codes;
pub mod ecosystem;
pub mod generic;
pub mod ggml;
pub mod gpu_xla;
pub mod host;
pub mod misc;
pub mod prose;
pub mod pytorch;
pub mod runtimes;
pub mod serving;
pub mod tensorflow;
pub mod tpu;
pub mod triton;
pub mod vocabulary;

/// Start triggers owned by the family modules (the scanner adds them to its own list).
pub const MODULE_TRIGGERS: &[&[&str]] =
    &[host::TRIGGERS, cluster::TRIGGERS, ggml::TRIGGERS, runtimes::TRIGGERS, serving::TRIGGERS, ecosystem::TRIGGERS, misc::TRIGGERS, generic::TRIGGERS, prose::TRIGGERS];

use crate::finding::{Allocation, Confidence, Culprit, Derived, SizeKey};
use crate::normalize::Flat;
use oomdoc_kb::{Phase, Platform};
use oomdoc_units::{parse_size_in, PrintedSize, UnitStyle};
use regex::{Captures, Regex};
use std::collections::{BTreeMap, BTreeSet};

/// A printed size: `16.00M`, `2.26 GiB`, `0B`, `3199993600 bytes`, `1.7K`.
///
/// It also matches what is printed where a size should be but is not one — a minus
/// sign, exponent notation (`1e400`, `1E6`: never read as the exa prefix), `nan`/`inf`,
/// a control character inside the number (shown by its stand-in: `␀`, U+FFFD) — so that
/// the grammar still matches, the finding is kept, and [`Hit::size`] drops the value (the
/// units parser rejects such text). The unit may follow up to two spaces, or the
/// replacement of an undecodable one (a CP1252 no-break space): `3.00  GiB` is 3 GiB.
pub const SZ: &str = r"-?(?:[0-9][0-9,]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?(?:[\x00\x{2400}-\x{2421}\x{FFFD}]\S*)?|(?:[nN]a[nN]|[iI]nf(?:inity)?)\b)(?:[\s\x{FFFD}]{0,2}(?:[KMGTPE]i?B|[KMGTPE]|B|bytes?)\b)?";

/// Compile a grammar, substituting `{SZ}` for the size pattern.
pub fn re(pattern: &str) -> Regex {
    let expanded = flexible_spaces(&pattern.replace("{SZ}", SZ));
    Regex::new(&expanded).unwrap_or_else(|e| panic!("bad recognizer regex {pattern}: {e}"))
}

/// Messages get wrapped and re-spaced by terminals and pastes, so a literal space in
/// a grammar matches any run of whitespace, newlines included (outside `[...]`).
fn flexible_spaces(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 16);
    let mut in_class = false;
    let mut escaped = false;
    for ch in p.chars() {
        if escaped {
            out.push(ch);
            escaped = false;
            continue;
        }
        match ch {
            '\\' => {
                escaped = true;
                out.push(ch);
            }
            '[' if !in_class => {
                in_class = true;
                out.push(ch);
            }
            ']' if in_class => {
                in_class = false;
                out.push(ch);
            }
            ' ' if !in_class => out.push_str(r"\s+"),
            _ => out.push(ch),
        }
    }
    out
}

/// Lazily compiled regex.
#[macro_export]
macro_rules! grammar {
    ($name:ident, $pat:expr) => {
        fn $name() -> &'static regex::Regex {
            static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
            RE.get_or_init(|| $crate::recognize::re($pat))
        }
    };
}

/// One recognized message.
#[derive(Debug, Clone)]
pub struct Hit {
    pub id: &'static str,
    /// Byte span in the flat block text.
    pub start: usize,
    pub end: usize,
    pub sizes: Vec<(SizeKey, PrintedSize)>,
    pub derived: Vec<Derived>,
    pub details: BTreeMap<String, serde_json::Value>,
    pub culprit: Culprit,
    pub memory_space: Option<String>,
    pub platform: Option<Platform>,
    pub phase: Option<Phase>,
    pub confidence: Confidence,
    /// Why the confidence is `likely` (the message does not say memory).
    pub confidence_reason: Option<String>,
    /// Sizes that were printed but dropped as implausible, and why.
    pub size_notes: Vec<String>,
    /// Conditions the recognizer knows directly (`early_abort`, `legacy_message`, …).
    pub flags: BTreeSet<&'static str>,
    /// A vendor code printed with this message.
    pub code_in_log: Option<String>,
    /// Lower numbers win when two hits overlap.
    pub priority: u8,
}

impl Hit {
    pub fn new(id: &'static str, start: usize, end: usize) -> Hit {
        Hit {
            id,
            start,
            end,
            sizes: Vec::new(),
            derived: Vec::new(),
            details: BTreeMap::new(),
            culprit: Culprit::default(),
            memory_space: None,
            platform: None,
            phase: None,
            confidence: Confidence::Certain,
            confidence_reason: None,
            size_notes: Vec::new(),
            flags: BTreeSet::new(),
            code_in_log: None,
            priority: 50,
        }
    }

    pub fn size(&mut self, key: SizeKey, text: &str) -> &mut Self {
        self.size_in(key, text, UnitStyle::Binary)
    }

    pub fn size_in(&mut self, key: SizeKey, text: &str, style: UnitStyle) -> &mut Self {
        if let Some(p) = parse_size_in(text, style) {
            self.put(key, p);
        }
        self
    }

    /// Set a size unless it is an overflow (then it becomes a note, see [`crate::sizes::not_overflow`]).
    pub fn put(&mut self, key: SizeKey, p: PrintedSize) -> &mut Self {
        if let Some(note) = crate::sizes::not_overflow(&p) {
            let note = format!("{note} ({})", key.name());
            if !self.size_notes.contains(&note) {
                self.size_notes.push(note);
            }
            return self;
        }
        self.sizes.retain(|(k, _)| *k != key);
        self.sizes.push((key, p));
        self
    }

    /// Fill the keys this hit has no size for from the labeled sizes of `text` (tables,
    /// `Label : value` lines, any layout [`crate::sizes::labeled`] reads).
    pub fn labeled_sizes(&mut self, text: &str, style: UnitStyle) -> &mut Self {
        let found = crate::sizes::labeled(text, style);
        for l in found.sizes {
            if let Some(k) = l.key {
                if self.get(k).is_none() {
                    self.sizes.push((k, l.size));
                }
            }
        }
        for n in found.notes {
            if !self.size_notes.contains(&n) {
                self.size_notes.push(n);
            }
        }
        self
    }

    /// Set a size from a capture group if it matched.
    pub fn cap_size(&mut self, key: SizeKey, caps: &Captures, group: &str) -> &mut Self {
        if let Some(m) = caps.name(group) {
            self.size(key, m.as_str());
        }
        self
    }

    pub fn bytes(&mut self, key: SizeKey, bytes: u64, text: String) -> &mut Self {
        self.put(key, PrintedSize { bytes, text, exact: true })
    }

    /// A bare byte count the message prints (`malloc of size N failed`), which no unit vouches
    /// for: one no memory has (an overflow, two numbers run together) becomes a note instead
    /// ([`crate::sizes::plausible`]).
    pub fn plausible_bytes(&mut self, key: SizeKey, bytes: u64) -> &mut Self {
        let p = PrintedSize { bytes, text: bytes.to_string(), exact: true };
        match crate::sizes::plausible(&p) {
            None => self.put(key, p),
            Some(note) => {
                self.size_notes.push(format!("{note} ({})", key.name()));
                self
            }
        }
    }

    pub fn get(&self, key: SizeKey) -> Option<u64> {
        self.sizes.iter().find(|(k, _)| *k == key).map(|(_, p)| p.bytes)
    }

    pub fn detail(&mut self, key: &str, v: impl Into<serde_json::Value>) -> &mut Self {
        self.details.insert(key.to_string(), v.into());
        self
    }

    pub fn derive(&mut self, name: &str, bytes: u64, formula: String) -> &mut Self {
        if !self.derived.iter().any(|d| d.name == name) {
            self.derived.push(Derived { name: name.to_string(), bytes, formula });
        }
        self
    }

    /// Builder steps for a family's defaults (`Hit::new(..).on(..).during(..)`).
    pub fn on(mut self, platform: Platform) -> Self {
        self.platform = Some(platform);
        self
    }

    pub fn during(mut self, phase: Phase) -> Self {
        self.phase = Some(phase);
        self
    }

    pub fn in_space(mut self, space: &str) -> Self {
        self.space(space);
        self
    }

    pub fn ranked(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    pub fn space(&mut self, s: &str) -> &mut Self {
        self.memory_space = Some(s.to_string());
        self
    }

    /// A memory failure in disguise: `likely`, and why.
    pub fn likely(&mut self, reason: &str) -> &mut Self {
        self.confidence = Confidence::Likely;
        self.confidence_reason = Some(reason.to_string());
        self
    }

    pub fn flag(&mut self, f: &'static str) -> &mut Self {
        self.flags.insert(f);
        self
    }

    pub fn overlaps(&self, other: &Hit) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// Every recognizer, most specific first.
pub fn recognize_all(flat: &Flat) -> Vec<Hit> {
    let mut hits = Vec::new();
    let t = &flat.text;
    tpu::recognize(t, &mut hits);
    gpu_xla::recognize(t, &mut hits);
    pytorch::recognize(t, &mut hits);
    triton::recognize(t, &mut hits);
    tensorflow::recognize(t, &mut hits);
    misc::recognize(t, &mut hits);
    host::recognize(t, &mut hits);
    cluster::recognize(t, &mut hits);
    ggml::recognize(t, &mut hits);
    runtimes::recognize(t, &mut hits);
    serving::recognize(t, &mut hits);
    ecosystem::recognize(t, &mut hits);
    codes::non_memory(t, &mut hits);
    codes::attach_codes(t, &mut hits);
    // Last: only text no family grammar claimed.
    let mut hits = resolve_overlaps(hits);
    generic::recognize(t, &mut hits);
    let mut hits = merge_layers(t, resolve_overlaps(hits));
    // A generic finding in a text that names its runtime is that runtime's; a failure only
    // stated in words counts where nothing else did (see `prose`).
    prose::attribute(t, &mut hits);
    prose::recognize(t, &mut hits);
    hits
}

/// The prose stage alone, over a whole short input none of whose blocks yielded a finding
/// (the scanner starts no block for a title opening with "OOM" or one in lower case).
pub fn prose_only(flat: &Flat) -> Vec<Hit> {
    let mut hits = Vec::new();
    prose::recognize(&flat.text, &mut hits);
    hits
}

/// One failure reported by two layers on adjacent lines, one of them without numbers (Ollama's
/// `llama runner process has terminated: cudaMalloc failed: out of memory` over ggml's
/// `failed to allocate CUDA0 buffer of size N`; a framework's bare line over its allocator's):
/// the same entry on the next line is the same failure, so it is one hit, with the sizes the
/// other layer states, starting where the first report starts. Two hits that both state sizes
/// stay two (two allocations can fail in a row).
fn merge_layers(t: &str, hits: Vec<Hit>) -> Vec<Hit> {
    let mut out: Vec<Hit> = Vec::with_capacity(hits.len());
    for h in hits {
        if let Some(prev) = out.last_mut() {
            let between = t.get(prev.end..h.start).unwrap_or("\n\n");
            let adjacent = prev.end <= h.start && between.len() <= 400 && between.matches('\n').count() <= 1;
            if adjacent && prev.id == h.id && (prev.sizes.is_empty() != h.sizes.is_empty()) {
                let (start, end) = (prev.start, h.end);
                let (mut kept, other) = if prev.sizes.is_empty() { (h, std::mem::replace(prev, Hit::new("", 0, 0))) } else { (std::mem::replace(prev, Hit::new("", 0, 0)), h) };
                kept.start = start;
                kept.end = end;
                for (k, v) in other.details {
                    kept.details.entry(k).or_insert(v);
                }
                kept.flags.extend(other.flags);
                kept.platform = kept.platform.or(other.platform);
                kept.memory_space = kept.memory_space.or(other.memory_space);
                kept.code_in_log = kept.code_in_log.or(other.code_in_log);
                if other.confidence == Confidence::Certain {
                    kept.confidence = Confidence::Certain;
                    kept.confidence_reason = None;
                }
                *prev = kept;
                continue;
            }
        }
        out.push(h);
    }
    out
}

/// Where two hits cover the same text, keep the more specific (lower priority number,
/// then the longer span). A weak, number-less hit of the same failure as a stronger one
/// within 2000 bytes (the OOM killer's constraint line next to its "Killed process" line)
/// adds nothing. O(n log n): a block of thousands of repeated messages (a flood of one
/// failure line) must not cost the square of their number.
fn resolve_overlaps(mut hits: Vec<Hit>) -> Vec<Hit> {
    use std::collections::{BTreeSet, HashMap};
    hits.sort_by_key(|h| (h.priority, std::cmp::Reverse(h.end - h.start), h.start));
    let mut kept: Vec<Hit> = Vec::new();
    // The kept spans as (start, end, index): they never overlap, so in this order their
    // ends never decrease, and the last one starting before a hit's end is the only one
    // that can overlap it.
    let mut spans: BTreeSet<(usize, usize, usize)> = BTreeSet::new();
    // Kept hits of a lower priority number than the current one, per id, by start and
    // by end (for the weak-duplicate test); `kept[lower_upto..]` are not in them yet.
    let mut lower: HashMap<&'static str, (BTreeSet<(usize, usize)>, BTreeSet<(usize, usize)>)> = HashMap::new();
    let mut lower_upto = 0;
    for h in hits {
        while lower_upto < kept.len() && kept[lower_upto].priority < h.priority {
            let k = &kept[lower_upto];
            let (starts, ends) = lower.entry(k.id).or_default();
            starts.insert((k.start, lower_upto));
            ends.insert((k.end, lower_upto));
            lower_upto += 1;
        }
        let near = |set: &BTreeSet<(usize, usize)>, x: usize| set.range((x.saturating_sub(1999), 0)..=(x.saturating_add(1999), usize::MAX)).next().is_some();
        let weak_duplicate = h.priority >= 30
            && h.sizes.is_empty()
            && h.code_in_log.is_none()
            && lower.get(h.id).is_some_and(|(starts, ends)| near(starts, h.end) || near(ends, h.start));
        let overlapped = spans.range(..(h.end, 0, 0)).next_back().is_some_and(|&(start, end, _)| start < h.end && h.start < end);
        if !weak_duplicate && !overlapped {
            spans.insert((h.start, h.end, kept.len()));
            kept.push(h);
        }
    }
    kept.sort_by_key(|h| h.start);
    kept
}

/// Find `needle` and return its offset (cheap pre-check before a regex).
pub fn has(t: &str, needle: &str) -> bool {
    memchr::memmem::find(t.as_bytes(), needle.as_bytes()).is_some()
}

/// Text from `start` up to `max` bytes, cut at a char boundary.
pub fn window(t: &str, start: usize, max: usize) -> &str {
    let mut end = (start + max).min(t.len());
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    &t[start..end]
}

/// Up to `max` bytes of text ending at `end`, cut at a char boundary.
pub fn window_before(t: &str, end: usize, max: usize) -> &str {
    let mut start = end.saturating_sub(max);
    while !t.is_char_boundary(start) {
        start += 1;
    }
    &t[start..end]
}

/// Parse an XLA shape token and fill padded/unpadded bytes into a culprit or allocation.
pub fn shape_bytes(shape: &str) -> (Option<u64>, Option<u64>) {
    match oomdoc_units::Shape::parse(shape) {
        Ok(s) => (s.padded_bytes().ok(), s.unpadded_bytes().ok()),
        Err(_) => (None, None),
    }
}

pub(crate) fn alloc_shape(a: &mut Allocation) {
    if let Some(s) = &a.shape {
        let (p, _) = shape_bytes(s);
        a.padded_bytes_computed = p;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Ollama's report of its runner over ggml's own line (ollama/ollama#11845, verbatim): one
    /// failure, with ggml's size.
    #[test]
    fn one_failure_reported_by_two_layers_is_one_hit() {
        let text = "Error: 500 Internal Server Error: llama runner process has terminated: cudaMalloc failed: out of memory\nggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 8891928576";
        let hits = recognize_all(&crate::normalize::flatten(&text.lines().enumerate().map(|(i, l)| crate::normalize::clean_line(i as u64 + 1, l.as_bytes())).collect::<Vec<_>>()));
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(hits[0].get(SizeKey::Requested), Some(8891928576));
    }

    /// The rule as first written, pair by pair (O(n²)): the reference.
    fn resolve_overlaps_pairwise(mut hits: Vec<Hit>) -> Vec<Hit> {
        hits.sort_by_key(|h| (h.priority, std::cmp::Reverse(h.end - h.start), h.start));
        let mut kept: Vec<Hit> = Vec::new();
        for h in hits {
            let weak_duplicate = h.priority >= 30
                && h.sizes.is_empty()
                && h.code_in_log.is_none()
                && kept.iter().any(|k| k.id == h.id && k.priority < h.priority && (k.start.abs_diff(h.end) < 2000 || h.start.abs_diff(k.end) < 2000));
            if !weak_duplicate && !kept.iter().any(|k| k.overlaps(&h)) {
                kept.push(h);
            }
        }
        kept.sort_by_key(|h| h.start);
        kept
    }

    proptest! {
        /// Random hits (empty spans, equal spans, nested ones, weak and strong of the same
        /// id near and far): the same hits kept as the pairwise rule keeps.
        #[test]
        fn overlaps_resolved_as_pair_by_pair(raw in proptest::collection::vec((0usize..6000, 0usize..2500, 0u8..4, prop_oneof![Just(20u8), Just(30), Just(45), Just(50)], any::<bool>()), 0..60)) {
            const IDS: [&str; 4] = ["host.oom-killer", "pytorch.cuda-oom", "generic.device-oom", "host.compiler-oom"];
            let hits: Vec<Hit> = raw.iter().map(|&(start, len, id, priority, sized)| {
                let mut h = Hit::new(IDS[id as usize], start, start + len % 3000 * (len % 5).min(1));
                h.priority = priority;
                if sized {
                    h.bytes(SizeKey::Requested, 1 << 20, "1 MiB".into());
                }
                h
            }).collect();
            let key = |v: Vec<Hit>| v.into_iter().map(|h| (h.id, h.start, h.end, h.priority)).collect::<Vec<_>>();
            prop_assert_eq!(key(resolve_overlaps(hits.clone())), key(resolve_overlaps_pairwise(hits)));
        }
    }
}
