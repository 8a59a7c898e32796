//! Turning what users have into UTF-8 text for the scanner: compressed logs (gzip,
//! zstd, xz, bzip2, recognised by their magic bytes, never by the file name) and
//! UTF-16 text (with a BOM, as Windows PowerShell's `Tee-Object`/`Out-File` write it,
//! or without one, recognised by where the NUL bytes fall). Everything streams:
//! nothing is read ahead beyond a small sniffing prefix.
//!
//! A compressed stream that breaks off (a log rotated while being written, a
//! truncated download) is not an error that loses what was read: the reader ends
//! there and records a note, which the report carries.

use serde::Serialize;
use std::io::{self, Read};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// How the bytes of a log were stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Zstd,
    Xz,
    Bzip2,
}

/// How the text of a log was encoded; in JSON the names the README documents
/// (`utf-8`, `utf-16le`, `utf-16be`, as IANA spells them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub enum Encoding {
    #[default]
    #[serde(rename = "utf-8")]
    Utf8,
    #[serde(rename = "utf-16le")]
    Utf16Le,
    #[serde(rename = "utf-16be")]
    Utf16Be,
}

/// What [`decode`] found out about its input, and what went wrong while reading it.
#[derive(Debug, Clone, Default)]
pub struct InputInfo {
    pub compression: Compression,
    pub encoding: Encoding,
    /// Lines end in a carriage return alone (read as line feeds).
    pub cr_only: bool,
    notes: Arc<Mutex<Vec<String>>>,
}

impl InputInfo {
    /// Problems met while reading (a broken compressed stream), in order.
    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().map(|n| n.clone()).unwrap_or_default()
    }
}

/// A decoded log: UTF-8 bytes (invalid sequences left for the normalizer).
pub struct Decoded<'a> {
    pub reader: Box<dyn Read + 'a>,
    pub info: InputInfo,
}

/// Bytes looked at to recognise compression and encoding.
const SNIFF: usize = 4096;

/// Read up to `n` bytes (fewer only at end of input).
fn read_prefix<R: Read>(r: &mut R, n: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(k) => filled += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// The compression format whose magic bytes start `head`.
pub fn sniff_compression(head: &[u8]) -> Compression {
    const BZ_BLOCK: [u8; 6] = [0x31, 0x41, 0x59, 0x26, 0x53, 0x59];
    const BZ_EOS: [u8; 6] = [0x17, 0x72, 0x45, 0x38, 0x50, 0x90];
    if head.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        Compression::Xz
    } else if head.len() >= 10 && head.starts_with(b"BZh") && (b'1'..=b'9').contains(&head[3]) && (head[4..10] == BZ_BLOCK || head[4..10] == BZ_EOS) {
        Compression::Bzip2
    } else {
        Compression::None
    }
}

/// The text encoding of `head` (the first bytes of the decompressed text), and how
/// many bytes of byte-order mark to skip.
pub fn sniff_encoding(head: &[u8]) -> (Encoding, usize) {
    if head.starts_with(&[0xef, 0xbb, 0xbf]) {
        return (Encoding::Utf8, 3);
    }
    // A BOM is trusted unless the newlines after it are not UTF-16's (text that merely
    // starts with the bytes FF FE).
    if head.starts_with(&[0xff, 0xfe]) && newlines_fit(&head[2..], false) {
        return (Encoding::Utf16Le, 2);
    }
    if head.starts_with(&[0xfe, 0xff]) && newlines_fit(&head[2..], true) {
        return (Encoding::Utf16Be, 2);
    }
    // No BOM: UTF-16 of mostly-ASCII text has a NUL in every other byte; UTF-8 text
    // has almost none. Demand a clear majority on one side and almost none on the other.
    let pairs = head.len() / 2;
    if pairs < 2 {
        return (Encoding::Utf8, 0);
    }
    let (mut even, mut odd) = (0usize, 0usize);
    for pair in head.chunks_exact(2) {
        even += (pair[0] == 0) as usize;
        odd += (pair[1] == 0) as usize;
    }
    if odd * 10 >= pairs * 6 && even * 20 <= pairs {
        (Encoding::Utf16Le, 0)
    } else if even * 10 >= pairs * 6 && odd * 20 <= pairs {
        (Encoding::Utf16Be, 0)
    } else {
        (Encoding::Utf8, 0)
    }
}

/// Whether `body` has no line feed, or at least one that is a whole UTF-16 code unit.
fn newlines_fit(body: &[u8], big_endian: bool) -> bool {
    let mut any = false;
    for pair in body.chunks_exact(2) {
        let unit = if big_endian { [pair[1], pair[0]] } else { [pair[0], pair[1]] };
        if unit == [b'\n', 0] {
            return true;
        }
        any |= pair.contains(&b'\n');
    }
    !any
}

/// A zip archive (local file header, or the end record of an empty one).
fn is_zip(head: &[u8]) -> bool {
    head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06")
}

/// UTF-32 text (a BOM, or three NUL bytes in every four): read as UTF-16 it gave nothing.
fn is_utf32(head: &[u8]) -> bool {
    if head.starts_with(&[0xff, 0xfe, 0, 0]) || head.starts_with(&[0, 0, 0xfe, 0xff]) {
        return true;
    }
    let quads = head.len() / 4;
    quads >= 4 && head.chunks_exact(4).filter(|q| q.iter().filter(|&&b| b == 0).count() == 3).count() * 10 >= quads * 9
}

/// What to say about UTF-32 text, which is not read.
pub const UTF32_HINT: &str = "is UTF-32 text, which oomdoc does not read; convert it first: `iconv -f UTF-32 -t UTF-8 log.txt > log.utf8.txt`";

/// What to say about a zip archive, the usual issue attachment, which is not read.
pub const ZIP_HINT: &str = "is a zip archive, which oomdoc does not read (it reads gzip, zstd, xz and bzip2 logs, and .tar.gz); unzip it and diagnose the folder: `unzip logs.zip -d logs && oomdoc diagnose logs`";

/// Decode any log stream: decompress by magic bytes, then transcode UTF-16 to UTF-8.
/// A zip archive is an error that says so ([`ZIP_HINT`]), not a log with no failure in it.
pub fn decode<'a, R: Read + 'a>(mut inner: R) -> io::Result<Decoded<'a>> {
    let head = read_prefix(&mut inner, SNIFF)?;
    if is_zip(&head) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, ZIP_HINT));
    }
    let compression = sniff_compression(&head);
    if compression == Compression::None && is_utf32(&head) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, UTF32_HINT));
    }
    let notes: Arc<Mutex<Vec<String>>> = Arc::default();
    let raw = io::Cursor::new(head).chain(inner);
    let mut text: Box<dyn Read + 'a> = match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(Lenient::new(flate2::read::MultiGzDecoder::new(raw), "gzip", notes.clone())),
        Compression::Zstd => Box::new(Lenient::new(crate::zstd_frames::ZstdReader::new(raw), "zstd", notes.clone())),
        Compression::Xz => Box::new(Lenient::new(XzStreaming::new(raw), "xz", notes.clone())),
        Compression::Bzip2 => Box::new(Lenient::new(bzip2::read::MultiBzDecoder::new(raw), "bzip2", notes.clone())),
    };
    // Sniff the text encoding on the decompressed bytes.
    let head = read_prefix(&mut text, SNIFF)?;
    let (encoding, bom) = sniff_encoding(&head);
    let rest = io::Cursor::new(head[bom..].to_vec()).chain(text);
    let mut utf8: Box<dyn Read + 'a> = match encoding {
        Encoding::Utf8 => Box::new(rest),
        Encoding::Utf16Le => Box::new(Utf16Reader::new(rest, false)),
        Encoding::Utf16Be => Box::new(Utf16Reader::new(rest, true)),
    };
    // Classic Mac line endings: carriage returns and not one line feed.
    let head = read_prefix(&mut utf8, SNIFF)?;
    let cr_only = head.contains(&b'\r') && !head.contains(&b'\n');
    let rest = io::Cursor::new(head).chain(utf8);
    let reader: Box<dyn Read + 'a> = if cr_only { Box::new(CrToLf(rest)) } else { Box::new(rest) };
    Ok(Decoded { reader, info: InputInfo { compression, encoding, cr_only, notes } })
}

/// Open a log file and decode it (see [`decode`]).
pub fn open(path: &Path) -> io::Result<Decoded<'static>> {
    let f = std::fs::File::open(path)?;
    if f.metadata()?.is_dir() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "is a directory"));
    }
    decode(f)
}

/// Where the text of `file` starts when it is plain UTF-8 that [`decode`] would pass
/// through unchanged but for a byte-order mark (not compressed, not UTF-16, not CR-only):
/// 0, or 3 past a UTF-8 BOM. None otherwise. Reads the head without moving the file's
/// position.
#[cfg(unix)]
pub fn plain_text_start(file: &std::fs::File) -> io::Result<Option<u64>> {
    use std::os::unix::fs::FileExt;
    let mut head = vec![0u8; SNIFF + 3];
    let mut filled = 0;
    while filled < head.len() {
        match file.read_at(&mut head[filled..], filled as u64) {
            Ok(0) => break,
            Ok(k) => filled += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(filled);
    let first = &head[..head.len().min(SNIFF)];
    if sniff_compression(first) != Compression::None || is_zip(first) || is_utf32(first) {
        return Ok(None);
    }
    let (encoding, bom) = sniff_encoding(first);
    if encoding != Encoding::Utf8 {
        return Ok(None);
    }
    // As `decode`: the CR-only test looks at the first SNIFF bytes after the mark.
    let text = &head[bom..(bom + SNIFF).min(head.len())];
    if text.contains(&b'\r') && !text.contains(&b'\n') {
        return Ok(None);
    }
    Ok(Some(bom as u64))
}

/// Whether a file is worth reading as a log when a directory is searched: text
/// (UTF-8 or UTF-16) or a compressed stream. Binary files (checkpoints, protos,
/// images) are skipped: NUL bytes that are not UTF-16's, or many control bytes.
pub fn is_probably_log(path: &Path) -> bool {
    let Ok(mut f) = std::fs::File::open(path) else { return false };
    let Ok(head) = read_prefix(&mut f, SNIFF) else { return false };
    // A zip is taken, to be reported as unreadable with the hint to unzip it.
    if sniff_compression(&head) != Compression::None || is_zip(&head) {
        return true;
    }
    let (enc, _) = sniff_encoding(&head);
    if enc != Encoding::Utf8 {
        return true;
    }
    let control = head.iter().filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x1b | 0x0c)).count();
    !head.contains(&0) && control * 100 <= head.len().max(1)
}

/// At most `max` bytes of a stream; one more is an error of kind
/// [`io::ErrorKind::FileTooLarge`] (not a silent cut: the rest may hold the failure).
pub struct AtMost<R> {
    inner: R,
    left: u64,
    max: u64,
}

impl<R> AtMost<R> {
    pub fn new(inner: R, max: u64) -> Self {
        AtMost { inner, left: max, max }
    }
}

impl<R: Read> Read for AtMost<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // One byte past the limit tells "exactly max" from "more".
        let want = buf.len().min(usize::try_from(self.left.saturating_add(1)).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n as u64 > self.left {
            return Err(io::Error::new(io::ErrorKind::FileTooLarge, format!("the log decompresses to more than {} bytes", self.max)));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Reads carriage returns as line feeds.
struct CrToLf<R>(R);

impl<R: Read> Read for CrToLf<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.read(buf)?;
        for b in &mut buf[..n] {
            if *b == b'\r' {
                *b = b'\n';
            }
        }
        Ok(n)
    }
}

/// A decompressor whose errors end the stream instead of failing the read: what was
/// decoded before the break is kept, and the break is recorded as a note.
struct Lenient<R> {
    inner: R,
    format: &'static str,
    out: u64,
    done: bool,
    notes: Arc<Mutex<Vec<String>>>,
}

impl<R> Lenient<R> {
    fn new(inner: R, format: &'static str, notes: Arc<Mutex<Vec<String>>>) -> Self {
        Lenient { inner, format, out: 0, done: false, notes }
    }
}

impl<R: Read> Read for Lenient<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        loop {
            match self.inner.read(buf) {
                Ok(n) => {
                    self.out += n as u64;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.done = true;
                    let msg = format!(
                        "the {} stream breaks off after {} bytes of text ({e}); the rest of the log could not be read",
                        self.format, self.out
                    );
                    if let Ok(mut n) = self.notes.lock() {
                        n.push(msg);
                    }
                    return Ok(0);
                }
            }
        }
    }
}

/// xz through the crate's sans-I/O decoder, fed a buffer at a time: everything decoded
/// before a cut comes out, as `xz -dc` gives it. (The crate's `XzReader` reads each LZMA2
/// chunk, up to 2 MiB of text, whole before decoding it, so a cut lost the chunk's text.)
struct XzStreaming<R> {
    inner: R,
    stream: lzma_rust2::XzStream,
    input: Vec<u8>,
    pos: usize,
    eof: bool,
    done: bool,
}

impl<R: Read> XzStreaming<R> {
    fn new(inner: R) -> Self {
        XzStreaming { inner, stream: lzma_rust2::XzStream::new(true), input: Vec::new(), pos: 0, eof: false, done: false }
    }
}

impl<R: Read> Read for XzStreaming<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() || self.done {
            return Ok(0);
        }
        loop {
            if self.pos >= self.input.len() && !self.eof {
                self.input.resize(64 << 10, 0);
                let n = loop {
                    match self.inner.read(&mut self.input) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                };
                self.input.truncate(n);
                self.pos = 0;
                self.eof = n == 0;
            }
            let bad = |e: io::Error| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
            // `Run` first, also at the end of input: it hands out what the decoder holds.
            let r = self.stream.process(&self.input[self.pos..], buf, lzma_rust2::Action::Run).map_err(bad)?;
            self.pos += r.bytes_consumed;
            if r.status == lzma_rust2::Status::StreamEnd {
                self.done = true;
                return Ok(r.bytes_produced);
            }
            if r.bytes_produced > 0 {
                return Ok(r.bytes_produced);
            }
            if self.eof && r.bytes_consumed == 0 {
                // Nothing more comes out without input: a complete stream ends here; a cut
                // one is an error (after everything before the cut was read).
                let r = self.stream.process(&[], buf, lzma_rust2::Action::Finish).map_err(bad)?;
                if r.status == lzma_rust2::Status::StreamEnd {
                    self.done = true;
                }
                if r.bytes_produced > 0 || self.done {
                    return Ok(r.bytes_produced);
                }
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the xz stream ends before its end marker"));
            }
        }
    }
}

/// Streams UTF-16 (LE or BE) as UTF-8. Unpaired surrogates become U+FFFD, as does a
/// final odd byte; a surrogate pair split across reads is kept together.
struct Utf16Reader<R> {
    inner: R,
    big_endian: bool,
    raw: Vec<u8>,
    /// Decoded UTF-8 not yet handed out, from `out_pos`.
    out: Vec<u8>,
    out_pos: usize,
    eof: bool,
}

impl<R: Read> Utf16Reader<R> {
    fn new(inner: R, big_endian: bool) -> Self {
        Utf16Reader { inner, big_endian, raw: Vec::with_capacity(64 << 10), out: Vec::with_capacity(96 << 10), out_pos: 0, eof: false }
    }

    /// Decode the next piece into `out`. Returns false at the end of input.
    fn refill(&mut self) -> io::Result<bool> {
        self.out.clear();
        self.out_pos = 0;
        while self.out.is_empty() {
            if self.eof && self.raw.is_empty() {
                return Ok(false);
            }
            if !self.eof {
                let start = self.raw.len();
                self.raw.resize(start + (64 << 10), 0);
                let n = loop {
                    match self.inner.read(&mut self.raw[start..]) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => {
                            self.raw.truncate(start);
                            return Err(e);
                        }
                    }
                };
                self.raw.truncate(start + n);
                self.eof = n == 0;
            }
            // Whole code units only; keep a trailing high surrogate for its partner.
            let mut usable = self.raw.len() & !1;
            let unit_at = |i: usize, raw: &[u8], be: bool| if be { u16::from_be_bytes([raw[i], raw[i + 1]]) } else { u16::from_le_bytes([raw[i], raw[i + 1]]) };
            if !self.eof && usable >= 2 && (0xd800..0xdc00).contains(&unit_at(usable - 2, &self.raw, self.big_endian)) {
                usable -= 2;
            }
            let be = self.big_endian;
            let units = (0..usable).step_by(2).map(|i| unit_at(i, &self.raw, be));
            let mut tmp = [0u8; 4];
            for c in char::decode_utf16(units) {
                let c = c.unwrap_or(char::REPLACEMENT_CHARACTER);
                self.out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
            }
            self.raw.drain(..usable);
            if self.eof && !self.raw.is_empty() {
                // A lone final byte (or an unpaired high surrogate at the very end).
                self.out.extend_from_slice(char::REPLACEMENT_CHARACTER.encode_utf8(&mut tmp).as_bytes());
                self.raw.clear();
            }
        }
        Ok(true)
    }
}

impl<R: Read> Read for Utf16Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.out_pos >= self.out.len() && !self.refill()? {
            return Ok(0);
        }
        let n = buf.len().min(self.out.len() - self.out_pos);
        buf[..n].copy_from_slice(&self.out[self.out_pos..self.out_pos + n]);
        self.out_pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn all(d: Decoded<'_>) -> String {
        let mut s = String::new();
        let mut r = d.reader;
        r.read_to_string(&mut s).unwrap();
        s
    }

    const MSG: &str = "step 1\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. 内存\n";

    fn utf16(s: &str, be: bool, bom: bool) -> Vec<u8> {
        let mut out = Vec::new();
        if bom {
            out.extend_from_slice(if be { &[0xfe, 0xff] } else { &[0xff, 0xfe] });
        }
        for u in s.encode_utf16() {
            out.extend_from_slice(&if be { u.to_be_bytes() } else { u.to_le_bytes() });
        }
        out
    }

    #[test]
    fn utf16_every_form() {
        for (be, bom) in [(false, true), (false, false), (true, true), (true, false)] {
            let d = decode(io::Cursor::new(utf16(MSG, be, bom))).unwrap();
            assert_eq!(d.info.encoding, if be { Encoding::Utf16Be } else { Encoding::Utf16Le });
            assert_eq!(all(d), MSG, "be={be} bom={bom}");
        }
    }

    #[test]
    fn utf16_surrogates_across_reads() {
        // A long text with astral characters at every offset parity.
        let s: String = (0..50_000).map(|i| if i % 7 == 0 { '😀' } else { 'a' }).collect();
        let d = decode(io::Cursor::new(utf16(&s, false, true))).unwrap();
        assert_eq!(all(d), s);
    }

    #[test]
    fn encoding_names_are_the_documented_ones() {
        let names: Vec<String> = [Encoding::Utf8, Encoding::Utf16Le, Encoding::Utf16Be].iter().map(|e| serde_json::to_string(e).unwrap()).collect();
        assert_eq!(names, ["\"utf-8\"", "\"utf-16le\"", "\"utf-16be\""]);
    }

    #[test]
    fn at_most_counts_decompressed_bytes() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![b'x'; 1 << 20]).unwrap();
        let gz = gz.finish().unwrap();
        let d = decode(io::Cursor::new(gz)).unwrap();
        let e = io::copy(&mut AtMost::new(d.reader, 100_000), &mut io::sink()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        let mut exact = String::new();
        AtMost::new(io::Cursor::new(b"abc".to_vec()), 3).read_to_string(&mut exact).unwrap();
        assert_eq!(exact, "abc");
    }

    #[test]
    fn utf32_says_to_convert_it() {
        let mut b = vec![0xff, 0xfe, 0, 0];
        for c in "torch.OutOfMemoryError: CUDA out of memory.\n".chars() {
            b.extend_from_slice(&(c as u32).to_le_bytes());
        }
        assert!(decode(io::Cursor::new(b.clone())).err().unwrap().to_string().contains("UTF-32"));
        // Without its BOM too; UTF-16 is not taken for it.
        assert!(decode(io::Cursor::new(b[4..].to_vec())).err().unwrap().to_string().contains("UTF-32"));
        assert!(decode(io::Cursor::new(utf16(MSG, false, false))).is_ok());
    }

    #[test]
    fn a_zip_says_to_unzip_it() {
        let mut zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00".to_vec();
        zip.extend_from_slice(&[0x55; 200]);
        let e = decode(io::Cursor::new(zip)).err().expect("a zip is an error");
        assert!(e.to_string().contains("unzip it"), "{e}");
    }

    #[test]
    fn plain_utf8_and_bom() {
        assert_eq!(all(decode(io::Cursor::new(MSG.as_bytes().to_vec())).unwrap()), MSG);
        let mut b = vec![0xef, 0xbb, 0xbf];
        b.extend_from_slice(MSG.as_bytes());
        assert_eq!(all(decode(io::Cursor::new(b)).unwrap()), MSG);
        assert_eq!(all(decode(io::Cursor::new(Vec::new())).unwrap()), "");
    }

    fn gz(b: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_and_gzip_of_utf16() {
        let d = decode(io::Cursor::new(gz(MSG.as_bytes()))).unwrap();
        assert_eq!(d.info.compression, Compression::Gzip);
        assert_eq!(all(d), MSG);
        let d = decode(io::Cursor::new(gz(&utf16(MSG, false, true)))).unwrap();
        assert_eq!((d.info.compression, d.info.encoding), (Compression::Gzip, Encoding::Utf16Le));
        assert_eq!(all(d), MSG);
        // Concatenated members (logrotate's copytruncate + append).
        let mut two = gz(b"a\n");
        two.extend(gz(b"b\n"));
        assert_eq!(all(decode(io::Cursor::new(two)).unwrap()), "a\nb\n");
    }

    #[test]
    fn bzip2_and_xz_and_zstd() {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
        e.write_all(MSG.as_bytes()).unwrap();
        let d = decode(io::Cursor::new(e.finish().unwrap())).unwrap();
        assert_eq!(d.info.compression, Compression::Bzip2);
        assert_eq!(all(d), MSG);

        // xz: a stream made by the reference encoder (`printf 'hello xz\n' | xz -c`).
        let stream: &[u8] = &[
            0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0x00, 0x04, 0xe6, 0xd6, 0xb4, 0x46, 0x02, 0x00, 0x21, 0x01, 0x16, 0x00, 0x00, 0x00, 0x74, 0x2f,
            0xe5, 0xa3, 0x01, 0x00, 0x08, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20, 0x78, 0x7a, 0x0a, 0x00, 0x00, 0x00, 0x00, 0xc1, 0x49, 0x3a, 0xfa,
            0x63, 0x52, 0x14, 0x5a, 0x00, 0x01, 0x21, 0x09, 0x6c, 0x18, 0xc5, 0xd5, 0x1f, 0xb6, 0xf3, 0x7d, 0x01, 0x00, 0x00, 0x00, 0x00, 0x04,
            0x59, 0x5a,
        ];
        let d = decode(io::Cursor::new(stream.to_vec())).unwrap();
        assert_eq!(d.info.compression, Compression::Xz);
        assert_eq!(all(d), "hello xz\n");
        // Two streams one after the other, as `cat a.xz b.xz`.
        let d = decode(io::Cursor::new([stream, stream].concat())).unwrap();
        assert_eq!(all(d), "hello xz\nhello xz\n");

        // zstd: a frame made by the reference encoder (`printf 'hello zstd\n' | zstd -c`).
        let frame: &[u8] = &[
            0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58, 0x59, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20, 0x7a, 0x73, 0x74, 0x64, 0x0a, 0x6c, 0x57,
            0xf9, 0x51,
        ];
        let d = decode(io::Cursor::new(frame.to_vec())).unwrap();
        assert_eq!(d.info.compression, Compression::Zstd);
        assert_eq!(all(d), "hello zstd\n");
    }

    #[test]
    fn truncated_gzip_keeps_what_was_read_and_says_so() {
        let text: String = (0..20_000).map(|i| format!("line {i} of a training log\n")).collect();
        let full = gz(text.as_bytes());
        let cut = full[..full.len() / 2].to_vec();
        let d = decode(io::Cursor::new(cut)).unwrap();
        let info = d.info.clone();
        let got = all(d);
        assert!(got.len() > 1000 && text.starts_with(&got), "kept a prefix of the text");
        assert_eq!(info.notes().len(), 1, "{:?}", info.notes());
        assert!(info.notes()[0].contains("gzip"));
    }

    #[test]
    fn cr_only_lines() {
        let d = decode(io::Cursor::new(b"a\rb\rc".to_vec())).unwrap();
        assert!(d.info.cr_only);
        assert_eq!(all(d), "a\nb\nc");
        // CRLF and tqdm's CR redraws inside LF lines are left alone.
        let d = decode(io::Cursor::new(b"a\r\nb 10%\rb 20%\n".to_vec())).unwrap();
        assert!(!d.info.cr_only);
        assert_eq!(all(d), "a\r\nb 10%\rb 20%\n");
    }

    #[test]
    fn text_that_looks_like_magic_is_text() {
        for t in ["BZh9 is not a header here\n", "\x1f not gzip\n"] {
            let d = decode(io::Cursor::new(t.as_bytes().to_vec())).unwrap();
            assert_eq!(d.info.compression, Compression::None);
        }
    }
}
