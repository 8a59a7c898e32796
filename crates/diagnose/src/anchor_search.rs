//! The scanner's first level: where the next anchor literal starts.
//!
//! Where the CPU has AVX-512 VBMI, a fingerprint search of our own in the manner of
//! Teddy: the anchors come in at most 8 buckets, and for each of the first four bytes of
//! an anchor a 128-entry table gives, per ASCII byte value, the buckets that have an
//! anchor with that byte there. One `vpermi2b` looks up 64 bytes of text in such a table, so
//! four lookups (the text loaded at offsets 0–3) and three ANDs tell, for 64 positions
//! at once, which buckets may start an anchor there; which anchor starts at a candidate,
//! if any, is looked up by its first four bytes in a collision-free table, and the
//! caller's check of that anchor (does a trigger that holds it stand there?) runs right
//! there, so the search goes on in the block it has loaded. Teddy proper (aho-corasick's packed
//! searcher) looks up nibbles with `pshufb`, two lookups per byte and position, and past
//! 32 patterns it needs its "fat" form, 16 bytes per step; the whole-byte table is also
//! more selective, so fewer false candidates. A position passes a bucket when each of its
//! four bytes is that byte of one of the bucket's anchors, in any combination, so anchors
//! that look alike should share a bucket: the scanner's buckets are chosen by measured
//! candidates in reference text (`tools/pick_anchors.py --order`). Elsewhere (no VBMI,
//! more than 8 buckets, an anchor shorter than four bytes or with a non-ASCII or NUL
//! byte) the packed searcher runs over all the anchors: same answers, which a test
//! checks on random text.

use std::sync::OnceLock;

/// Finds the leftmost start of any of a fixed set of literals.
pub struct AnchorSearcher {
    packed: aho_corasick::packed::Searcher,
    prefixes: Prefixes,
    #[cfg(target_arch = "x86_64")]
    vbmi: Option<vbmi::Fingerprints>,
}

impl AnchorSearcher {
    /// A searcher for the anchors of `buckets` (at most 64 in all, none empty).
    /// `vectorized: false` always uses the packed searcher (for comparisons); `true` uses
    /// the VBMI search where it can.
    pub fn new(buckets: &[&[&str]], vectorized: bool) -> AnchorSearcher {
        let packed = aho_corasick::packed::Config::new()
            .match_kind(aho_corasick::packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(buckets.iter().flat_map(|b| b.iter()))
            .build()
            .expect("anchor searcher");
        #[cfg(target_arch = "x86_64")]
        let vbmi = if vectorized && vbmi::available() { vbmi::Fingerprints::new(buckets) } else { None };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = vectorized;
        AnchorSearcher {
            packed,
            prefixes: Prefixes::new(buckets.iter().flat_map(|b| b.iter().copied())),
            #[cfg(target_arch = "x86_64")]
            vbmi,
        }
    }

    /// Which search runs: "avx512-vbmi" or "packed" (Teddy or Rabin-Karp).
    pub fn kind(&self) -> &'static str {
        #[cfg(target_arch = "x86_64")]
        if self.vbmi.is_some() {
            return "avx512-vbmi";
        }
        "packed"
    }

    /// The leftmost position at or after `from` where an anchor starts and lies wholly
    /// within `hay` (none where `from` is past its end).
    #[inline]
    pub fn find_start(&self, hay: &[u8], from: usize) -> Option<usize> {
        self.find_confirmed::<false>(hay, from, |_, _| true).0
    }

    /// [`find_start`](Self::find_start), and the newlines in `hay[from..]` before the
    /// start found (before the end where none is): the vectorized search counts them
    /// in the blocks it loads anyway, so the scanner needs no second pass to number
    /// lines.
    #[inline]
    pub fn find_start_counting(&self, hay: &[u8], from: usize) -> (Option<usize>, u64) {
        self.find_confirmed::<true>(hay, from, |_, _| true)
    }

    /// The leftmost position at or after `from` where an anchor starts, lies wholly
    /// within `hay`, and `confirm(anchor, position)` says yes (the anchor's index in the
    /// buckets' order, first bucket first; at a position where several anchors start,
    /// each is offered), with the newlines of `hay[from..]` before it (before the end
    /// where none is) where `COUNT`. The search goes on past a refused anchor in the
    /// block it has loaded, instead of starting anew at the next byte: on a log where
    /// every few lines hold an anchor and few of them a trigger, that restart was much
    /// of the time.
    #[inline]
    pub fn find_confirmed<const COUNT: bool>(&self, hay: &[u8], from: usize, mut confirm: impl FnMut(usize, usize) -> bool) -> (Option<usize>, u64) {
        if from >= hay.len() {
            return (None, 0);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(f) = &self.vbmi {
            // SAFETY: `f` exists only where `vbmi::available()` said the CPU has the features.
            return unsafe { f.search::<COUNT>(hay, from, &self.prefixes, &mut confirm) };
        }
        let mut pos = from;
        while let Some(m) = self.packed.find_in(hay, aho_corasick::Span::from(pos..hay.len())) {
            let at = m.start();
            if self.prefixes.any(hay, at, &mut confirm) {
                let newlines = if COUNT { bytecount::count(&hay[from..at], b'\n') as u64 } else { 0 };
                return (Some(at), newlines);
            }
            pos = at + 1;
        }
        (None, if COUNT { bytecount::count(&hay[from..], b'\n') as u64 } else { 0 })
    }
}

/// The anchors by their first four bytes (as many as the shortest anchor has, up to
/// four), in a table with no collisions: telling which anchor starts at a candidate
/// position costs a multiply and one load, whatever the number of anchors (a position
/// the fingerprints let through is most often none).
struct Prefixes {
    /// Per slot: (first bytes, little-endian; range in `order`); an empty range for none.
    slots: Vec<(u32, u16, u16)>,
    /// The bytes of a word that make the key.
    mask: u32,
    multiplier: u32,
    shift: u32,
    /// Anchor indices, those with the same first four bytes together.
    order: Vec<u16>,
    /// Each anchor, with its first eight bytes as a word and their mask.
    anchors: Vec<(Box<[u8]>, u64, u64)>,
}

impl Prefixes {
    fn new<'a>(anchors: impl IntoIterator<Item = &'a str>) -> Prefixes {
        let anchors: Vec<Box<[u8]>> = anchors.into_iter().map(|a| a.as_bytes().into()).collect();
        let n = anchors.iter().map(|a| a.len()).min().unwrap_or(4).clamp(1, 4);
        let mask = if n == 4 { u32::MAX } else { (1u32 << (8 * n)) - 1 };
        let prefix = |a: &[u8]| {
            let mut w = [0u8; 4];
            w[..n].copy_from_slice(&a[..n]);
            u32::from_le_bytes(w)
        };
        let mut keys: Vec<u32> = anchors.iter().map(|a| prefix(a)).collect();
        keys.sort_unstable();
        keys.dedup();
        // A multiplier that spreads the distinct prefixes over the slots without a
        // collision (a few tries at 8 slots per prefix; a larger table if none).
        let mut state: u32 = 0x9E37_79B9;
        let mut bits = (keys.len().max(1) * 8).next_power_of_two().trailing_zeros().max(4);
        let (multiplier, bits) = 'found: loop {
            for _ in 0..1000 {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let m = state | 1;
                let mut seen = std::collections::HashSet::new();
                if keys.iter().all(|k| seen.insert(k.wrapping_mul(m) >> (32 - bits))) {
                    break 'found (m, bits);
                }
            }
            bits += 1;
            assert!(bits <= 24, "anchor prefix table");
        };
        let shift = 32 - bits;
        let mut slots = vec![(0u32, 0u16, 0u16); 1 << bits];
        let mut order = Vec::new();
        for k in keys {
            let start = order.len() as u16;
            order.extend(anchors.iter().enumerate().filter(|(_, a)| prefix(a) == k).map(|(i, _)| i as u16));
            slots[(k.wrapping_mul(multiplier) >> shift) as usize] = (k, start, order.len() as u16);
        }
        let anchors = anchors.into_iter().map(|a| {
            let (w, m) = head_word(&a);
            (a, w, m)
        });
        Prefixes { slots, mask, multiplier, shift, order, anchors: anchors.collect() }
    }

    /// Whether an anchor starts at `at`, lies within `hay`, and `confirm` takes it.
    #[inline(always)]
    fn any(&self, hay: &[u8], at: usize, confirm: &mut impl FnMut(usize, usize) -> bool) -> bool {
        let word = word_at(hay, at);
        let (key, start, end) = self.slots[((word as u32 & self.mask).wrapping_mul(self.multiplier) >> self.shift) as usize];
        if key != word as u32 & self.mask || start == end {
            return false;
        }
        self.any_of(hay, at, word, start, end, confirm)
    }

    fn any_of(&self, hay: &[u8], at: usize, word: u64, start: u16, end: u16, confirm: &mut impl FnMut(usize, usize) -> bool) -> bool {
        for &i in &self.order[start as usize..end as usize] {
            let i = i as usize;
            let (a, w, m) = &self.anchors[i];
            if word & m == *w && at + a.len() <= hay.len() && (a.len() <= 8 || hay[at..].starts_with(a)) && confirm(i, at) {
                return true;
            }
        }
        false
    }
}

/// The eight bytes at `at` as a little-endian word, zero past the end of `hay`.
#[inline]
fn word_at(hay: &[u8], at: usize) -> u64 {
    match hay.get(at..at + 8) {
        Some(w) => u64::from_le_bytes(w.try_into().unwrap()),
        None => {
            let mut w = [0u8; 8];
            let rest = hay.get(at..).unwrap_or(&[]);
            w[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(w)
        }
    }
}

/// Up to the first eight bytes of `a` as a little-endian word, and the mask of those bytes.
fn head_word(a: &[u8]) -> (u64, u64) {
    let n = a.len().min(8);
    let mut w = [0u8; 8];
    w[..n].copy_from_slice(&a[..n]);
    (u64::from_le_bytes(w), if n == 8 { u64::MAX } else { (1u64 << (8 * n)) - 1 })
}

/// Whether this CPU runs the vectorized search (AVX-512 F, BW and VBMI).
pub fn vectorized_search_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return vbmi::available();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The scanner's anchors' searcher, built once. `OOMDOC_ANCHOR_SEARCH=packed` makes it the
/// packed searcher, for measurements.
pub(crate) fn anchor_searcher(buckets: &[&[&str]]) -> &'static AnchorSearcher {
    static A: OnceLock<AnchorSearcher> = OnceLock::new();
    A.get_or_init(|| AnchorSearcher::new(buckets, std::env::var("OOMDOC_ANCHOR_SEARCH").as_deref() != Ok("packed")))
}

/// For each anchor, the patterns that contain it and where: an anchor found in the text
/// is confirmed by comparing only the few patterns that can hold it there, instead of
/// running the patterns' automaton over its whole line. (Most lines that hold an anchor
/// hold no pattern: a log line that mentions memory without failing.)
pub struct AnchorPatterns {
    /// Per first byte: the anchors that start with it (indices into `places`).
    by_first: Vec<Vec<usize>>,
    anchors: Vec<Box<[u8]>>,
    /// Per anchor, every place it occurs in a pattern.
    places: Vec<Vec<Place>>,
}

/// A pattern that holds an anchor `offset` bytes from its start. Before the whole
/// pattern is compared, its first and last eight bytes are, as words: most of the
/// anchors a log holds stand in other words than the patterns'.
struct Place {
    offset: usize,
    pattern: Box<[u8]>,
    head: (u64, u64),
    tail: (u64, u64),
}

impl AnchorPatterns {
    /// `patterns` should each contain one of `anchors` (else they are never confirmed),
    /// and none a newline (a pattern found is within one line); anchor `i` here is
    /// anchor `i` of [`AnchorSearcher::find_confirmed`] where the two are built from
    /// the same list.
    pub fn new<'a>(anchors: impl IntoIterator<Item = &'a str>, patterns: &[&str]) -> AnchorPatterns {
        let mut index = AnchorPatterns { by_first: vec![Vec::new(); 256], anchors: Vec::new(), places: Vec::new() };
        for a in anchors {
            let a = a.as_bytes();
            let mut places = Vec::new();
            for p in patterns {
                let p = p.as_bytes();
                // Every occurrence, overlapping ones too.
                for k in (0..(p.len() + 1).saturating_sub(a.len().max(1))).filter(|&k| p[k..].starts_with(a)) {
                    let tail = &p[p.len().saturating_sub(8)..];
                    places.push(Place { offset: k, pattern: p.into(), head: head_word(p), tail: head_word(tail) });
                }
            }
            if let Some(&first) = a.first() {
                index.by_first[first as usize].push(index.anchors.len());
            }
            index.anchors.push(a.into());
            index.places.push(places);
        }
        index
    }

    /// Whether a pattern lies wholly within `hay` with anchor `anchor` starting at `at`
    /// (the caller knows the anchor is there).
    #[inline]
    pub fn confirms(&self, hay: &[u8], anchor: usize, at: usize) -> bool {
        self.places[anchor].iter().any(|p| {
            let Some(start) = at.checked_sub(p.offset) else { return false };
            let end = start + p.pattern.len();
            end <= hay.len()
                && word_at(hay, start) & p.head.1 == p.head.0
                && word_at(hay, end - p.pattern.len().min(8)) & p.tail.1 == p.tail.0
                && (p.pattern.len() <= 16 || hay[start..end] == *p.pattern)
        })
    }

    /// Whether a pattern lies wholly within `hay[lo..]` with one of its anchors starting
    /// at `at`.
    #[inline]
    pub fn any_at(&self, hay: &[u8], lo: usize, at: usize) -> bool {
        let Some(&first) = hay.get(at) else { return false };
        self.by_first[first as usize].iter().any(|&i| hay[at..].starts_with(&self.anchors[i]) && self.confirms(&hay[lo..], i, at - lo))
    }
}

#[cfg(target_arch = "x86_64")]
mod vbmi {
    use super::Prefixes;
    use std::arch::x86_64::*;

    /// Bytes of each anchor that the tables fingerprint.
    const PREFIX: usize = 4;
    const BUCKETS: usize = 8;

    pub fn available() -> bool {
        is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vbmi")
    }

    pub struct Fingerprints {
        /// Per fingerprinted position: bucket bits for bytes 0–127.
        tables: [[u8; 128]; PREFIX],
        shortest: usize,
    }

    impl Fingerprints {
        /// `None` where there are more than 8 buckets, or an anchor is shorter than the
        /// fingerprint or has a byte the tables can't hold (non-ASCII, or NUL, which pads
        /// the text's last block).
        pub fn new(buckets: &[&[&str]]) -> Option<Fingerprints> {
            let anchors = || buckets.iter().flat_map(|b| b.iter());
            if buckets.len() > BUCKETS || anchors().next().is_none() || anchors().any(|a| a.len() < PREFIX || a.bytes().any(|b| b == 0 || b >= 0x80)) {
                return None;
            }
            let mut f = Fingerprints { tables: [[0; 128]; PREFIX], shortest: usize::MAX };
            for (b, a) in buckets.iter().enumerate().flat_map(|(b, list)| list.iter().map(move |a| (b, a.as_bytes()))) {
                for (table, &byte) in f.tables.iter_mut().zip(a) {
                    table[byte as usize] |= 1 << b;
                }
                f.shortest = f.shortest.min(a.len());
            }
            Some(f)
        }

        /// See [`super::AnchorSearcher::find_confirmed`]: the first position of a block
        /// that the fingerprints pass, where an anchor starts and `confirm` takes it,
        /// with the newlines before it where `COUNT`.
        ///
        /// # Safety
        /// The CPU must have AVX-512 F, BW and VBMI ([`available`]); `from < hay.len()`;
        /// `prefixes` must be of the same anchors.
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
        pub unsafe fn search<const COUNT: bool>(&self, hay: &[u8], from: usize, prefixes: &Prefixes, confirm: &mut impl FnMut(usize, usize) -> bool) -> (Option<usize>, u64) {
            let n = hay.len();
            let count_rest = |from: usize| if COUNT { bytecount::count(&hay[from..], b'\n') as u64 } else { 0 };
            if n - from < self.shortest {
                return (None, count_rest(from));
            }
            let last = n - self.shortest; // the last position an anchor can start at
            let tables: [(__m512i, __m512i); PREFIX] = std::array::from_fn(|k| {
                let t = self.tables[k].as_ptr();
                // SAFETY: each table is 128 bytes.
                unsafe { (_mm512_loadu_si512(t.cast()), _mm512_loadu_si512(t.add(64).cast())) }
            });
            let newline = _mm512_set1_epi8(b'\n' as i8);
            // Newlines of a block at `p` before `at` (or all of it).
            let lines = |text: *const u8, p: usize, at: Option<usize>| -> u64 {
                if !COUNT {
                    return 0;
                }
                // SAFETY: `text` has 64 readable bytes (every block's first load).
                let m = unsafe { _mm512_cmpeq_epi8_mask(_mm512_loadu_si512(text.cast()), newline) };
                let m = match at {
                    Some(at) if at - p < 64 => m & ((1u64 << (at - p)) - 1),
                    _ => m,
                };
                m.count_ones() as u64
            };
            let mut first = |p: usize, mask: u64| first_confirmed(hay, p, mask, last, prefixes, confirm);
            let mut newlines = 0;
            let mut p = from;
            // Two blocks a step, one branch for both (most hold no candidate); the loads
            // at p + k read up to p + 127 + PREFIX - 1.
            while p + 128 + PREFIX - 1 <= n {
                // SAFETY: in bounds by the loop condition.
                let (ta, tb) = unsafe { (hay.as_ptr().add(p), hay.as_ptr().add(p + 64)) };
                // SAFETY: as above.
                let (a, b) = unsafe { (block(&tables, ta), block(&tables, tb)) };
                if a | b != 0 {
                    if let Some(at) = first(p, a).or_else(|| first(p + 64, b)) {
                        return (Some(at), newlines + lines(ta, p, Some(at)) + if at >= p + 64 { lines(tb, p + 64, Some(at)) } else { 0 });
                    }
                }
                newlines += lines(ta, p, None) + lines(tb, p + 64, None);
                p += 128;
            }
            while p + 64 + PREFIX - 1 <= n {
                // SAFETY: in bounds by the loop condition.
                let text = unsafe { hay.as_ptr().add(p) };
                // SAFETY: as above.
                let found = unsafe { block(&tables, text) };
                if let Some(at) = first(p, found) {
                    return (Some(at), newlines + lines(text, p, Some(at)));
                }
                newlines += lines(text, p, None);
                p += 64;
            }
            // The rest (fewer than 64 + PREFIX - 1 bytes): a zero-padded copy. No anchor
            // has a NUL byte, so the padding matches nothing, and candidates are
            // confirmed against `hay` itself.
            if p <= last {
                let mut pad = [0u8; 64 + PREFIX - 1];
                pad[..n - p].copy_from_slice(&hay[p..]);
                // SAFETY: `pad` holds 64 + PREFIX - 1 bytes.
                let found = unsafe { block(&tables, pad.as_ptr()) };
                if let Some(at) = first(p, found) {
                    return (Some(at), newlines + lines(pad.as_ptr(), p, Some(at)));
                }
            }
            (None, newlines + count_rest(p))
        }
    }

    /// The first candidate of a block (at `p`, candidates `mask`) where an anchor starts
    /// that `confirm` takes.
    #[inline(always)]
    fn first_confirmed(hay: &[u8], p: usize, mut mask: u64, last: usize, prefixes: &Prefixes, confirm: &mut impl FnMut(usize, usize) -> bool) -> Option<usize> {
        while mask != 0 {
            let at = p + mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if at > last {
                return None;
            }
            if prefixes.any(hay, at, confirm) {
                return Some(at);
            }
        }
        None
    }

    /// The candidate mask of the 64 positions starting at `text`.
    ///
    /// # Safety
    /// `text` must have 64 + PREFIX - 1 readable bytes, and the CPU the features.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    unsafe fn block(tables: &[(__m512i, __m512i); PREFIX], text: *const u8) -> u64 {
        // SAFETY: the caller's bound.
        let x: [__m512i; PREFIX] = std::array::from_fn(|k| unsafe { _mm512_loadu_si512(text.add(k).cast()) });
        let mut r = _mm512_set1_epi8(-1);
        let mut high = _mm512_setzero_si512();
        for (x, (lo, hi)) in x.iter().zip(tables) {
            r = _mm512_and_si512(r, _mm512_permutex2var_epi8(*lo, *x, *hi));
            high = _mm512_or_si512(high, *x);
        }
        // The tables see seven bits of a byte: a position with a non-ASCII byte among
        // its four starts no anchor.
        _mm512_test_epi8_mask(r, r) & !_mm512_movepi8_mask(high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BUCKETS: &[&[&str]] = &[&["emory", "lloc", " OOM"], &["E100", "posix_me"], &["SIGKILL", "cudnn co", "ase ", "(OOM"], &["Killed process", "rrno 12]"]];
    const ANCHORS: &[&str] = &["emory", "lloc", " OOM", "E100", "posix_me", "SIGKILL", "cudnn co", "ase ", "(OOM", "Killed process", "rrno 12]"];

    fn both(buckets: &[&[&str]]) -> (AnchorSearcher, AnchorSearcher) {
        (AnchorSearcher::new(buckets, true), AnchorSearcher::new(buckets, false))
    }

    #[test]
    fn the_same_starts_as_the_packed_searcher_at_the_edges() {
        let (v, p) = both(BUCKETS);
        for len in 0usize..200 {
            for (at, a) in [(0usize, "emory"), (3, "Killed process"), (60, "lloc"), (63, "E100"), (64, " OOM"), (len.saturating_sub(4), "lloc")] {
                let mut hay = vec![b'x'; len];
                if at + a.len() <= len {
                    hay[at..at + a.len()].copy_from_slice(a.as_bytes());
                }
                // An anchor cut by the end of the text is none.
                if len >= 3 {
                    hay[len - 3..].copy_from_slice(b"SIG");
                }
                for i in (5..len).step_by(7) {
                    if !(at..at + a.len()).contains(&i) && i + 3 < len {
                        hay[i] = b'\n';
                    }
                }
                for from in [0, 1, at, at + 1, len] {
                    assert_eq!(v.find_start(&hay, from), p.find_start(&hay, from), "len {len} at {at} from {from} {a:?}");
                    assert_eq!(v.find_start_counting(&hay, from), p.find_start_counting(&hay, from), "len {len} at {at} from {from} {a:?}");
                }
            }
        }
    }

    proptest! {
        #[test]
        fn the_same_starts_as_the_packed_searcher(
            pieces in proptest::collection::vec((0usize..ANCHORS.len() + 4, proptest::collection::vec(prop_oneof![Just(b'\n'), any::<u8>()], 0..90)), 0..12),
            from in 0usize..400,
        ) {
            let (v, p) = both(BUCKETS);
            let mut hay = Vec::new();
            for (k, noise) in pieces {
                hay.extend_from_slice(&noise);
                match ANCHORS.get(k) {
                    Some(a) => hay.extend_from_slice(a.as_bytes()),
                    // A near miss, and non-ASCII bytes that alias ASCII in the low seven bits.
                    None => hay.extend_from_slice(&[b'e', b'm', b'o', b'r', 0xF9, b'l', b'l', 0xEF, 0xE3, b' ', b'O', b'O', b'L'][..(k - ANCHORS.len() + 1) * 3]),
                }
            }
            let from = from.min(hay.len());
            let mut at = from;
            // Every start, as the scanner walks them.
            loop {
                let (a, b) = (v.find_start(&hay, at), p.find_start(&hay, at));
                prop_assert_eq!(a, b);
                prop_assert_eq!(v.find_start_counting(&hay, at), (a, hay[at..a.unwrap_or(hay.len())].iter().filter(|&&c| c == b'\n').count() as u64));
                match a { Some(x) => at = x + 1, None => break }
            }
        }
    }

    #[test]
    fn falls_back_where_the_tables_cannot_hold_the_anchors() {
        let nine: Vec<&[&str]> = vec![&["lloc"]; 9];
        for buckets in [&[&["OOM", "emory"][..]][..], &[&["mémoire"]], &nine] {
            let s = AnchorSearcher::new(buckets, true);
            assert_eq!(s.kind(), "packed");
            assert_eq!(s.find_start(b"xx OOM lloc", 0), AnchorSearcher::new(buckets, false).find_start(b"xx OOM lloc", 0));
        }
    }
}
