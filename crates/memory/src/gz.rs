//! gzip-compressed inputs: HloProtos written with `--xla_dump_compress_protos`
//! (`*.hlo.pb.gz`, `xla/service/dump.cc`) and profiles saved as `*.xplane.pb.gz`.
//! A file is treated as gzip when it starts with the gzip magic bytes, whatever its
//! name. Decompression streams; how much a file may expand is bounded so that a small
//! crafted file cannot take unbounded time or memory.

use crate::error::MemoryError;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// gzip's magic bytes (RFC 1952).
const MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Largest expansion accepted: compressed size × this + [`SLACK`] (real HloProtos and
/// XSpaces compress 3–20×).
pub const MAX_RATIO: u64 = 200;
pub const SLACK: u64 = 64 << 20;
/// Upper bound of a decompressed file read into memory (an HloProto).
pub const MAX_IN_MEMORY: u64 = 4 << 30;
/// Upper bound of a decompressed file streamed (a profile).
pub const MAX_STREAMED: u64 = 64 << 30;

/// Readers that [`crate::xplane`] can stream and seek forward in.
pub trait ReadSeek: Read + Seek {}
impl<T: Read + Seek> ReadSeek for T {}

/// True when the file starts with the gzip magic bytes.
pub fn is_gzip(path: &Path) -> Result<bool, MemoryError> {
    let mut f = File::open(path).map_err(|e| MemoryError::io(path, e))?;
    let mut head = [0u8; 2];
    let mut n = 0;
    while n < 2 {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(MemoryError::io(path, e)),
        }
    }
    Ok(n == 2 && head == MAGIC)
}

/// `*.gz` names: `x.hlo.pb.gz` → `x.hlo.pb`.
pub fn strip_gz(name: &str) -> &str {
    name.strip_suffix(".gz").unwrap_or(name)
}

fn limit(path: &Path, cap: u64) -> Result<u64, MemoryError> {
    let compressed = std::fs::metadata(path).map_err(|e| MemoryError::io(path, e))?.len();
    Ok(compressed.saturating_mul(MAX_RATIO).saturating_add(SLACK).min(cap))
}

fn decoder(path: &Path) -> Result<flate2::read::MultiGzDecoder<BufReader<File>>, MemoryError> {
    let f = File::open(path).map_err(|e| MemoryError::io(path, e))?;
    Ok(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, f)))
}

fn gz_error(path: &Path, e: std::io::Error) -> MemoryError {
    MemoryError::proto(path, format!("cannot decompress this gzip file: {e} (truncated or corrupt .gz?)"))
}

fn too_big(path: &Path, limit: u64) -> MemoryError {
    MemoryError::proto(path, format!("decompresses to more than {limit} bytes ({MAX_RATIO}× its size, or the cap); refusing it as a likely gzip bomb — gunzip it yourself if it is genuine"))
}

/// The whole file, decompressed when it is gzip.
pub fn read_all(path: &Path) -> Result<Vec<u8>, MemoryError> {
    read_all_capped(path, MAX_IN_MEMORY)
}

/// Only regular files are read: a FIFO blocks on open, `/dev/zero` never ends.
fn regular_file(path: &Path) -> Result<(), MemoryError> {
    let meta = std::fs::metadata(path).map_err(|e| MemoryError::io(path, e))?;
    if meta.is_file() {
        Ok(())
    } else {
        Err(MemoryError::proto(path, "not a regular file (a pipe, socket or device); give the dump's files"))
    }
}

/// [`read_all`], decompressing at most `cap` bytes.
pub fn read_all_capped(path: &Path, cap: u64) -> Result<Vec<u8>, MemoryError> {
    regular_file(path)?;
    if !is_gzip(path)? {
        return std::fs::read(path).map_err(|e| MemoryError::io(path, e));
    }
    let limit = limit(path, cap)?;
    let mut out = Vec::new();
    decoder(path)?.take(limit + 1).read_to_end(&mut out).map_err(|e| gz_error(path, e))?;
    if out.len() as u64 > limit {
        return Err(too_big(path, limit));
    }
    Ok(out)
}

/// A seekable stream of the file's (decompressed) bytes and its (decompressed) length.
/// A gzip file is decompressed once to measure it; its stream seeks forward only.
pub fn open_stream(path: &Path) -> Result<(Box<dyn ReadSeek>, u64), MemoryError> {
    regular_file(path)?;
    if !is_gzip(path)? {
        let f = File::open(path).map_err(|e| MemoryError::io(path, e))?;
        let len = f.metadata().map_err(|e| MemoryError::io(path, e))?.len();
        return Ok((Box::new(BufReader::with_capacity(1 << 16, f)), len));
    }
    let limit = limit(path, MAX_STREAMED)?;
    let len = std::io::copy(&mut decoder(path)?.take(limit + 1), &mut std::io::sink()).map_err(|e| gz_error(path, e))?;
    if len > limit {
        return Err(too_big(path, limit));
    }
    let inner = BufReader::with_capacity(1 << 16, decoder(path)?);
    Ok((Box::new(ForwardSeek { inner, pos: 0 }), len))
}

/// Seek on a forward-only reader by reading and discarding; backward seeks are errors.
pub struct ForwardSeek<R> {
    inner: R,
    pos: u64,
}

impl<R: Read> Read for ForwardSeek<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read> Seek for ForwardSeek<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(_) => None,
        };
        let target = target
            .filter(|&t| t >= self.pos)
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::Unsupported, "a gzip stream seeks forward only"))?;
        let want = target - self.pos;
        let got = std::io::copy(&mut (&mut self.inner).take(want), &mut std::io::sink())?;
        self.pos += got;
        if got != want {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "seek past the end of the gzip stream"));
        }
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn reads_plain_and_gzip_alike_and_seeks_forward() {
        let dir = std::env::temp_dir().join(format!("oomdoc-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let plain = dir.join("a.bin");
        let gz = dir.join("a.bin.gz");
        std::fs::write(&plain, &data).unwrap();
        std::fs::write(&gz, gzip(&data)).unwrap();
        assert!(!is_gzip(&plain).unwrap() && is_gzip(&gz).unwrap());
        assert_eq!(read_all(&gz).unwrap(), data);
        for p in [&plain, &gz] {
            let (mut s, len) = open_stream(p).unwrap();
            assert_eq!(len, data.len() as u64);
            s.seek(SeekFrom::Start(70_000)).unwrap();
            let mut b = [0u8; 3];
            s.read_exact(&mut b).unwrap();
            assert_eq!(b, data[70_000..70_003]);
            s.seek(SeekFrom::Current(10)).unwrap();
            s.read_exact(&mut b).unwrap();
            assert_eq!(b, data[70_013..70_016]);
        }
        let (mut s, _) = open_stream(&gz).unwrap();
        s.seek(SeekFrom::Start(10)).unwrap();
        assert!(s.seek(SeekFrom::Start(5)).is_err());
        assert!(s.seek(SeekFrom::Start(200_000)).is_err());
        // A cut .gz is an error naming the file, not a short read.
        let cut = dir.join("cut.gz");
        let g = gzip(&data);
        std::fs::write(&cut, &g[..g.len() / 2]).unwrap();
        let e = read_all(&cut).unwrap_err().to_string();
        assert!(e.contains("cut.gz") && e.contains("decompress"), "{e}");
        // A bomb (here: more than the cap) is refused.
        let bomb = dir.join("bomb.gz");
        std::fs::write(&bomb, gzip(&vec![0u8; 4 << 20])).unwrap();
        let e = read_all_capped(&bomb, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("gzip bomb"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
