//! The scanner's first level: where the next anchor literal starts.
//!
//! Where the CPU has AVX-512 VBMI, a fingerprint search of our own in the manner of
//! Teddy: the anchors come in at most 8 buckets, and for each of the first four bytes of
//! an anchor a 128-entry table gives, per ASCII byte value, the buckets that have an
//! anchor with that byte there. One `vpermi2b` looks up 64 bytes of text in such a table, so
//! four lookups (the text loaded at offsets 0–3) and three ANDs tell, for 64 positions
//! at once, which buckets may start an anchor there; a candidate is confirmed by
//! comparing the bucket's anchors as 8-byte words. Teddy proper (aho-corasick's packed
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
        if from >= hay.len() {
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(f) = &self.vbmi {
            // SAFETY: `f` exists only where `vbmi::available()` said the CPU has the features.
            return unsafe { f.find_start(hay, from) };
        }
        self.packed.find_in(hay, aho_corasick::Span::from(from..hay.len())).map(|m| m.start())
    }

    /// [`find_start`](Self::find_start), and the newlines in `hay[from..]` before the
    /// start found (before the end where none is): the vectorized search counts them
    /// in the blocks it loads anyway, so the scanner needs no second pass to number
    /// lines.
    #[inline]
    pub fn find_start_counting(&self, hay: &[u8], from: usize) -> (Option<usize>, u64) {
        if from >= hay.len() {
            return (None, 0);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(f) = &self.vbmi {
            // SAFETY: as in `find_start`.
            return unsafe { f.find_start_counting(hay, from) };
        }
        let at = self.find_start(hay, from);
        (at, bytecount::count(&hay[from..at.unwrap_or(hay.len())], b'\n') as u64)
    }
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
    /// Per first byte: the anchors that start with it (indices into `anchors`).
    by_first: Vec<Vec<usize>>,
    /// Each anchor, with (pattern, offset of the anchor in it) for every place it occurs
    /// in a pattern.
    anchors: Vec<(Box<[u8]>, Vec<(usize, usize)>)>,
    patterns: Vec<Box<[u8]>>,
}

impl AnchorPatterns {
    /// `patterns` should each contain one of `anchors` (else they are never confirmed).
    pub fn new<'a>(anchors: impl IntoIterator<Item = &'a str>, patterns: &[&str]) -> AnchorPatterns {
        let mut index = AnchorPatterns { by_first: vec![Vec::new(); 256], anchors: Vec::new(), patterns: patterns.iter().map(|p| p.as_bytes().into()).collect() };
        for a in anchors {
            let a = a.as_bytes();
            let Some(&first) = a.first() else { continue };
            let mut places = Vec::new();
            for (t, p) in patterns.iter().enumerate() {
                // Every occurrence, overlapping ones too.
                places.extend(p.as_bytes().windows(a.len()).enumerate().filter(|(_, w)| *w == a).map(|(k, _)| (t, k)));
            }
            index.by_first[first as usize].push(index.anchors.len());
            index.anchors.push((a.into(), places));
        }
        index
    }

    /// Whether a pattern lies wholly within `hay[lo..]` with one of its anchors starting
    /// at `at`.
    #[inline]
    pub fn any_at(&self, hay: &[u8], lo: usize, at: usize) -> bool {
        let Some(&first) = hay.get(at) else { return false };
        for &i in &self.by_first[first as usize] {
            let (anchor, places) = &self.anchors[i];
            if !hay[at..].starts_with(anchor) {
                continue;
            }
            for &(t, k) in places {
                if at >= lo + k && hay[at - k..].starts_with(&self.patterns[t]) {
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(target_arch = "x86_64")]
mod vbmi {
    use std::arch::x86_64::*;

    /// Bytes of each anchor that the tables fingerprint.
    const PREFIX: usize = 4;
    const BUCKETS: usize = 8;

    pub fn available() -> bool {
        is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vbmi")
    }

    /// An anchor as its first (up to) eight bytes in a little-endian word, with the mask
    /// of those bytes, and the whole literal for longer ones.
    struct Anchor {
        word: u64,
        mask: u64,
        bytes: Box<[u8]>,
    }

    pub struct Fingerprints {
        /// Per fingerprinted position: bucket bits for bytes 0–127.
        tables: [[u8; 128]; PREFIX],
        buckets: [Vec<Anchor>; BUCKETS],
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
            let mut f = Fingerprints { tables: [[0; 128]; PREFIX], buckets: Default::default(), shortest: usize::MAX };
            for (b, a) in buckets.iter().enumerate().flat_map(|(b, list)| list.iter().map(move |a| (b, a.as_bytes()))) {
                for (table, &byte) in f.tables.iter_mut().zip(a) {
                    table[byte as usize] |= 1 << b;
                }
                let n = a.len().min(8);
                let mut word = [0u8; 8];
                word[..n].copy_from_slice(&a[..n]);
                let mask = if n == 8 { u64::MAX } else { (1u64 << (8 * n)) - 1 };
                f.buckets[b].push(Anchor { word: u64::from_le_bytes(word), mask, bytes: a.into() });
                f.shortest = f.shortest.min(a.len());
            }
            Some(f)
        }

        /// See [`super::AnchorSearcher::find_start`].
        ///
        /// # Safety
        /// The CPU must have AVX-512 F, BW and VBMI ([`available`]); `from < hay.len()`.
        #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
        pub unsafe fn find_start(&self, hay: &[u8], from: usize) -> Option<usize> {
            // SAFETY: the caller's.
            unsafe { self.search::<false>(hay, from).0 }
        }

        /// See [`super::AnchorSearcher::find_start_counting`].
        ///
        /// # Safety
        /// As [`Self::find_start`].
        #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
        pub unsafe fn find_start_counting(&self, hay: &[u8], from: usize) -> (Option<usize>, u64) {
            // SAFETY: the caller's.
            unsafe { self.search::<true>(hay, from) }
        }

        /// The search, with the newline count where `COUNT`.
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
        unsafe fn search<const COUNT: bool>(&self, hay: &[u8], from: usize) -> (Option<usize>, u64) {
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
            let mut newlines = 0;
            let mut p = from;
            // Two blocks a step, one branch for both (most hold no candidate); the loads
            // at p + k read up to p + 127 + PREFIX - 1.
            while p + 128 + PREFIX - 1 <= n {
                // SAFETY: in bounds by the loop condition.
                let (ta, tb) = unsafe { (hay.as_ptr().add(p), hay.as_ptr().add(p + 64)) };
                // SAFETY: as above.
                let (a, b) = unsafe { (block(&tables, ta), block(&tables, tb)) };
                if a.0 | b.0 != 0 {
                    if let Some(at) = self.confirm(hay, p, a, last).or_else(|| self.confirm(hay, p + 64, b, last)) {
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
                if let Some(at) = self.confirm(hay, p, found, last) {
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
                if let Some(at) = self.confirm(hay, p, found, last) {
                    return (Some(at), newlines + lines(pad.as_ptr(), p, Some(at)));
                }
            }
            (None, newlines + count_rest(p))
        }

        /// The first candidate of a block (at `p`) that is an anchor.
        #[inline]
        fn confirm(&self, hay: &[u8], p: usize, (mut mask, buckets): (u64, __m512i), last: usize) -> Option<usize> {
            if mask == 0 {
                return None;
            }
            // SAFETY: a vector is 64 bytes.
            let buckets: [u8; 64] = unsafe { std::mem::transmute(buckets) };
            while mask != 0 {
                let i = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let at = p + i;
                if at > last {
                    return None;
                }
                let mut bits = buckets[i];
                let word = match hay.get(at..at + 8) {
                    Some(w) => u64::from_le_bytes(w.try_into().unwrap()),
                    None => {
                        let mut w = [0u8; 8];
                        let k = hay.len() - at;
                        w[..k].copy_from_slice(&hay[at..]);
                        u64::from_le_bytes(w)
                    }
                };
                while bits != 0 {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    for a in &self.buckets[b] {
                        if word & a.mask == a.word && at + a.bytes.len() <= hay.len() && (a.bytes.len() <= 8 || hay[at..].starts_with(&a.bytes)) {
                            return Some(at);
                        }
                    }
                }
            }
            None
        }
    }

    /// The candidate mask of the 64 positions starting at `text` and each position's
    /// bucket bits.
    ///
    /// # Safety
    /// `text` must have 64 + PREFIX - 1 readable bytes, and the CPU the features.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    unsafe fn block(tables: &[(__m512i, __m512i); PREFIX], text: *const u8) -> (u64, __m512i) {
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
        let mask = _mm512_test_epi8_mask(r, r) & !_mm512_movepi8_mask(high);
        (mask, r)
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
