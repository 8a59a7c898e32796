//! A zstd reader that keeps the text of a cut stream.
//!
//! A decoder must keep the last window of output (up to megabytes) until the frame ends,
//! because later blocks may copy from it. A log still being written, or an upload cut
//! short, never ends its frame, and a plain streaming decoder then loses that window: the
//! end of the log, where the failure is. This reader walks the frame format itself
//! (RFC 8878 §3.1), hands the decoder only whole blocks, and when the input stops inside a
//! frame it ends the frame with an empty last block, so everything decoded comes out.
//! It also reads every frame of a stream (`cat a.zst b.zst`), and skips skippable frames.

use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
use std::io::{self, Read};

const MAGIC: u32 = 0xFD2F_B528;
/// No block's content is larger (RFC 8878 §3.1.1.2.4, Block_Maximum_Size).
const MAX_BLOCK: usize = 128 << 10;
/// An empty raw block with the Last_Block bit: ends a frame cleanly.
const EMPTY_LAST_BLOCK: [u8; 3] = [1, 0, 0];

pub struct ZstdReader<R: Read> {
    src: R,
    decoder: FrameDecoder,
    /// Decoded text not handed out yet, and how much of it was.
    out: Vec<u8>,
    taken: usize,
    /// Inside a frame: whether it carries a content checksum after its last block.
    frame: Option<bool>,
    /// Why the stream stopped early, reported once the text before it is out.
    broken: Option<String>,
    done: bool,
}

impl<R: Read> ZstdReader<R> {
    pub fn new(src: R) -> ZstdReader<R> {
        ZstdReader { src, decoder: FrameDecoder::new(), out: Vec::new(), taken: 0, frame: None, broken: None, done: false }
    }

    /// Decodes the next piece (a frame header or one block) into `out`; false at the end.
    fn advance(&mut self) -> io::Result<bool> {
        let Some(checksum) = self.frame else { return self.start_frame() };
        let mut block = Vec::with_capacity(3);
        if !read_full(&mut self.src, &mut block, 3)? {
            return self.cut(checksum, "a block header");
        }
        let header = u32::from_le_bytes([block[0], block[1], block[2], 0]);
        let last = header & 1 == 1;
        let size = (header >> 3) as usize;
        let content = match (header >> 1) & 3 {
            0 | 2 => size,
            1 => 1,
            _ => return Err(corrupt("a reserved block type")),
        };
        if size > MAX_BLOCK {
            return Err(corrupt(&format!("a block of {size} bytes (at most {MAX_BLOCK})")));
        }
        if !read_full(&mut self.src, &mut block, 3 + content)? {
            return self.cut(checksum, "a block");
        }
        if last && checksum && !read_full(&mut self.src, &mut block, 3 + content + 4)? {
            // Everything is decoded; only the checksum is missing.
            block.truncate(3 + content);
            block.extend_from_slice(&[0; 4]);
        }
        self.decoder.decode_blocks(&mut block.as_slice(), BlockDecodingStrategy::UptoBlocks(1)).map_err(|e| corrupt(&e.to_string()))?;
        if last {
            self.frame = None;
        }
        self.collect();
        Ok(true)
    }

    fn start_frame(&mut self) -> io::Result<bool> {
        let mut head = Vec::with_capacity(18);
        if !read_full(&mut self.src, &mut head, 4)? {
            if !head.is_empty() {
                self.broken = Some(format!("{} stray bytes after the last frame", head.len()));
            }
            return Ok(false);
        }
        let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        if magic & 0xFFFF_FFF0 == 0x184D_2A50 {
            // A skippable frame: a 4-byte length, then that many bytes of user data.
            if !read_full(&mut self.src, &mut head, 8)? {
                return Ok(false);
            }
            let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as u64;
            let skipped = io::copy(&mut (&mut self.src).take(len), &mut io::sink())?;
            return Ok(skipped == len);
        }
        if magic != MAGIC {
            return Err(corrupt("bytes that are not a zstd frame"));
        }
        if !read_full(&mut self.src, &mut head, 5)? {
            self.broken = Some("the stream ends inside a frame header".into());
            return Ok(false);
        }
        let descriptor = head[4];
        let single_segment = descriptor & 0x20 != 0;
        let dict_len = [0, 1, 2, 4][(descriptor & 3) as usize];
        let fcs_len = [usize::from(single_segment), 2, 4, 8][(descriptor >> 6) as usize];
        let len = 5 + usize::from(!single_segment) + dict_len + fcs_len;
        if !read_full(&mut self.src, &mut head, len)? {
            self.broken = Some("the stream ends inside a frame header".into());
            return Ok(false);
        }
        self.decoder.reset(head.as_slice()).map_err(|e| corrupt(&e.to_string()))?;
        self.frame = Some(descriptor & 0x04 != 0);
        Ok(true)
    }

    /// The input stopped inside a frame: end it with an empty last block, so the text
    /// the decoder still holds comes out, and say where it stopped.
    fn cut(&mut self, checksum: bool, inside: &str) -> io::Result<bool> {
        let mut end = EMPTY_LAST_BLOCK.to_vec();
        if checksum {
            end.extend_from_slice(&[0; 4]);
        }
        let _ = self.decoder.decode_blocks(&mut end.as_slice(), BlockDecodingStrategy::UptoBlocks(1));
        self.collect();
        self.frame = None;
        self.broken = Some(format!("the stream ends inside {inside}"));
        Ok(false)
    }

    fn collect(&mut self) {
        if self.taken == self.out.len() {
            self.out.clear();
            self.taken = 0;
        }
        if let Some(text) = self.decoder.collect() {
            self.out.extend_from_slice(&text);
        }
    }
}

impl<R: Read> Read for ZstdReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.taken == self.out.len() && !self.done {
            if !self.advance()? {
                self.done = true;
            }
        }
        if self.taken < self.out.len() {
            let n = buf.len().min(self.out.len() - self.taken);
            buf[..n].copy_from_slice(&self.out[self.taken..self.taken + n]);
            self.taken += n;
            return Ok(n);
        }
        match self.broken.take() {
            Some(why) => Err(io::Error::new(io::ErrorKind::UnexpectedEof, why)),
            None => Ok(0),
        }
    }
}

/// Reads until `buf` holds `len` bytes; false if the input ends first.
fn read_full<R: Read>(src: &mut R, buf: &mut Vec<u8>, len: usize) -> io::Result<bool> {
    let have = buf.len();
    if len > have {
        src.take((len - have) as u64).read_to_end(buf)?;
    }
    Ok(buf.len() >= len)
}

fn corrupt(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("corrupt zstd stream: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` numbered log lines.
    fn text(n: usize) -> Vec<u8> {
        (0..n).map(|i| format!("line {i} of a training log with some words in it\n")).collect::<String>().into_bytes()
    }

    fn decode(z: &[u8]) -> (Vec<u8>, Option<String>) {
        let mut r = ZstdReader::new(z);
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match r.read(&mut buf) {
                Ok(0) => return (out, None),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    /// Raw blocks written by hand: a frame of `blocks` raw blocks holding `text`.
    fn raw_frame(text: &[u8], block: usize, checksum: bool) -> Vec<u8> {
        let mut z = MAGIC.to_le_bytes().to_vec();
        // Descriptor: no content size, not single-segment, checksum flag; window 1 MiB.
        z.push(if checksum { 0x04 } else { 0 });
        z.push(10 << 3); // Window_Descriptor: exponent 10 → 1 MiB
        let chunks: Vec<&[u8]> = text.chunks(block).collect();
        for (i, c) in chunks.iter().enumerate() {
            let last = u32::from(i + 1 == chunks.len());
            let header = last | ((c.len() as u32) << 3);
            z.extend_from_slice(&header.to_le_bytes()[..3]);
            z.extend_from_slice(c);
        }
        if checksum {
            z.extend_from_slice(&[0; 4]);
        }
        z
    }

    #[test]
    fn whole_frames_and_concatenated_frames() {
        let t = text(500);
        let z = raw_frame(&t, 10_000, true);
        assert_eq!(decode(&z), (t.clone(), None));
        let mut two = z.clone();
        two.extend_from_slice(&[0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 9, 9, 9]); // skippable
        two.extend_from_slice(&raw_frame(b"second frame\n", 5, false));
        let mut want = t.clone();
        want.extend_from_slice(b"second frame\n");
        assert_eq!(decode(&two), (want, None));
    }

    #[test]
    fn a_cut_stream_keeps_every_whole_block() {
        let t = text(500);
        let z = raw_frame(&t, 10_000, true);
        for cut in (10..z.len()).step_by(997) {
            let (out, err) = decode(&z[..cut]);
            // Every block that arrived whole comes out; nothing is invented.
            let whole_blocks = (cut - 6) / (10_003);
            assert!(out.len() >= whole_blocks * 10_000, "cut {cut}: {} bytes", out.len());
            assert_eq!(&t[..out.len()], &out[..], "cut {cut}");
            assert!(err.is_some(), "cut {cut} must be reported");
        }
    }

    #[test]
    fn corrupt_input_is_an_error_not_a_panic() {
        for bad in [&b"not zstd at all"[..], &[0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x50, 0xff, 0xff, 0xff][..]] {
            assert!(decode(bad).1.is_some());
        }
    }
}
