//! Profiles: the `xla.HloProto`s inside a `jax.profiler.trace` XSpace (`<host>.xplane.pb`).
//!
//! XProf finds them on the plane named `/host:metadata`: each event metadata there may
//! carry a stat whose metadata is named `Hlo Proto` (`StatType::kHloProto`; bytes: a
//! serialized `xla.HloProto`)
//! and one named `program_id`; without the latter the event metadata's id is the program
//! id. Field numbers are those of `tsl/profiler/protobuf/xplane.proto`:
//! `XSpace{planes=1, errors=2, warnings=3, hostnames=4}`,
//! `XPlane{id=1, name=2, lines=3, event_metadata=4 (map), stat_metadata=5 (map), stats=6}`,
//! `XEventMetadata{id=1, name=2, metadata=3, display_name=4, stats=5, child_id=6}`,
//! `XStatMetadata{id=1, name=2, description=3}`,
//! `XStat{metadata_id=1, double=2, uint64=3, int64=4, str=5, bytes=6, ref=7}`.
//!
//! The file is streamed: planes other than the metadata plane (trace events, often
//! hundreds of MB) are skipped with a seek, and only one event metadata entry is in
//! memory at a time. What is kept per module is where its HloProto lies in the file.

use crate::error::MemoryError;
use crate::proto::wire::{Reader, Value};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Name of the plane XProf reads HloProtos from (`kMetadataPlaneName`).
pub const METADATA_PLANE: &str = "/host:metadata";

/// One module's HloProto inside an XSpace file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XSpaceModule {
    /// From the HloProto (`hlo_module.name`), not from any file name.
    pub name: String,
    /// The `program_id` stat, else the event metadata id (as XProf does).
    pub program_id: u64,
    /// The XSpace's host name, else the file name before `.xplane.pb`.
    pub host: String,
    pub path: PathBuf,
    /// Byte range of the serialized `xla.HloProto` in the file.
    pub offset: u64,
    pub len: u64,
}

impl XSpaceModule {
    /// The module's HloProto bytes (read from the file again; nothing else is kept).
    pub fn read_proto(&self) -> Result<Vec<u8>, MemoryError> {
        // A `.xplane.pb.gz` is decompressed (again) up to the proto.
        let (mut f, _) = crate::gz::open_stream(&self.path)?;
        f.seek(SeekFrom::Start(self.offset)).map_err(|e| MemoryError::io(&self.path, e))?;
        let len = usize::try_from(self.len).map_err(|_| MemoryError::proto(&self.path, "HloProto larger than memory"))?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(len)
            .map_err(|_| MemoryError::proto(&self.path, format!("cannot allocate {len} bytes for the HloProto")))?;
        f.take(self.len).read_to_end(&mut buf).map_err(|e| MemoryError::io(&self.path, e))?;
        if buf.len() != len {
            return Err(MemoryError::proto(&self.path, "file changed or was truncated since it was listed"));
        }
        Ok(buf)
    }
}

/// The stat name of `StatType::kHloProto` (`tsl/profiler/utils/xplane_schema.cc`).
pub const HLO_PROTO_STAT: &str = "Hlo Proto";

/// Longest plane name, host name or stat name read; longer means this is no XSpace.
const MAX_NAME: u64 = 1 << 16;

struct Stream<R> {
    r: R,
    pos: u64,
    len: u64,
}

impl<R: Read + Seek> Stream<R> {
    fn err(&self, path: &Path, message: &str) -> MemoryError {
        MemoryError::proto(path, format!("byte {}: {message} (is this a jax.profiler / XProf *.xplane.pb?)", self.pos))
    }

    fn byte(&mut self, path: &Path) -> Result<u8, MemoryError> {
        let mut b = [0u8; 1];
        match self.r.read_exact(&mut b) {
            Ok(()) => {
                self.pos += 1;
                Ok(b[0])
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(self.err(path, "truncated file")),
            Err(e) => Err(MemoryError::io(path, e)),
        }
    }

    fn varint(&mut self, path: &Path) -> Result<u64, MemoryError> {
        let mut result = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = self.byte(path)?;
            if shift == 63 && byte > 1 {
                return Err(self.err(path, "varint longer than 64 bits"));
            }
            result |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(result);
            }
        }
        Err(self.err(path, "varint longer than 10 bytes"))
    }

    fn skip(&mut self, path: &Path, n: u64) -> Result<(), MemoryError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| self.err(path, "field runs past the end of the file"))?;
        let delta = i64::try_from(n).map_err(|_| self.err(path, "field too long"))?;
        self.r.seek(SeekFrom::Current(delta)).map_err(|e| MemoryError::io(path, e))?;
        self.pos = end;
        Ok(())
    }

    fn bytes(&mut self, path: &Path, n: u64) -> Result<Vec<u8>, MemoryError> {
        if self.pos.checked_add(n).map_or(true, |e| e > self.len) {
            return Err(self.err(path, "field runs past the end of the file"));
        }
        let n_us = usize::try_from(n).map_err(|_| self.err(path, "field too long"))?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(n_us).map_err(|_| self.err(path, "field too large to hold in memory"))?;
        buf.resize(n_us, 0);
        self.r.read_exact(&mut buf).map_err(|e| MemoryError::io(path, e))?;
        self.pos += n;
        Ok(buf)
    }

    /// The next key (field, wire type), or `None` at `end`.
    fn key(&mut self, path: &Path, end: u64) -> Result<Option<(u64, u8)>, MemoryError> {
        if self.pos >= end {
            if self.pos > end {
                return Err(self.err(path, "field runs past the end of its message"));
            }
            return Ok(None);
        }
        let key = self.varint(path)?;
        let field = key >> 3;
        if field == 0 {
            return Err(self.err(path, "invalid field number"));
        }
        Ok(Some((field, (key & 7) as u8)))
    }

    /// Skip a value of this wire type.
    fn skip_value(&mut self, path: &Path, wire: u8) -> Result<(), MemoryError> {
        match wire {
            0 => self.varint(path).map(|_| ()),
            1 => self.skip(path, 8),
            2 => {
                let n = self.varint(path)?;
                self.skip(path, n)
            }
            5 => self.skip(path, 4),
            _ => Err(self.err(path, "unsupported wire type (groups or corrupt data)")),
        }
    }

    fn string(&mut self, path: &Path) -> Result<String, MemoryError> {
        let n = self.varint(path)?;
        if n > MAX_NAME {
            return Err(self.err(path, "name longer than 64 KiB"));
        }
        Ok(String::from_utf8_lossy(&self.bytes(path, n)?).into_owned())
    }
}

/// A bytes stat of one event metadata: (stat metadata id, file offset, length, module name
/// if the bytes read as an HloProto).
struct BytesStat {
    metadata_id: u64,
    offset: u64,
    len: u64,
    module_name: Option<String>,
}

struct EventMeta {
    id: u64,
    int_stats: Vec<(u64, u64)>,
    bytes_stats: Vec<BytesStat>,
}

/// Every module's HloProto in an XSpace file, in the order of the metadata plane.
pub fn scan_xspace(path: &Path) -> Result<Vec<XSpaceModule>, MemoryError> {
    // Buffered plain file, or a forward-seeking gzip stream (`*.xplane.pb.gz`).
    let (r, len) = crate::gz::open_stream(path)?;
    let mut s = Stream { r, pos: 0, len };
    let mut modules = Vec::new();
    let mut hostname: Option<String> = None;
    while let Some((field, wire)) = s.key(path, len)? {
        match (field, wire) {
            (1, 2) => {
                let n = s.varint(path)?;
                let end = s.pos.checked_add(n).filter(|&e| e <= len).ok_or_else(|| s.err(path, "plane runs past the end of the file"))?;
                read_plane(&mut s, path, end, &mut modules)?;
            }
            (4, 2) if hostname.is_none() => hostname = Some(s.string(path)?),
            (_, w) => s.skip_value(path, w)?,
        }
    }
    let host = hostname.filter(|h| !h.is_empty()).unwrap_or_else(|| host_from_file_name(path));
    for m in &mut modules {
        m.host = host.clone();
    }
    Ok(modules)
}

/// `host.xplane.pb` → `host`.
pub fn host_from_file_name(path: &Path) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let name = crate::gz::strip_gz(name);
    name.strip_suffix(".xplane.pb").unwrap_or(name).to_string()
}

fn read_plane<R: Read + Seek>(s: &mut Stream<R>, path: &Path, end: u64, modules: &mut Vec<XSpaceModule>) -> Result<(), MemoryError> {
    let mut name: Option<String> = None;
    let mut events: Vec<EventMeta> = Vec::new();
    let mut stat_names: HashMap<u64, String> = HashMap::new();
    while let Some((field, wire)) = s.key(path, end)? {
        match (field, wire) {
            (2, 2) => {
                let n = s.string(path)?;
                if n != METADATA_PLANE {
                    // Trace events and the like: seek past the rest of the plane.
                    let rest = end - s.pos;
                    return s.skip(path, rest);
                }
                name = Some(n);
            }
            (4, 2) => {
                let n = s.varint(path)?;
                let at = s.pos;
                let entry = s.bytes(path, n)?;
                if let Some(e) = event_metadata_entry(&entry, at).map_err(|e| s_err(path, e))? {
                    if !e.bytes_stats.is_empty() {
                        events.push(e);
                    }
                }
            }
            (5, 2) => {
                let n = s.varint(path)?;
                if n > MAX_NAME * 4 {
                    return Err(s.err(path, "stat metadata entry too long"));
                }
                let entry = s.bytes(path, n)?;
                if let Some((id, stat_name)) = stat_metadata_entry(&entry).map_err(|e| s_err(path, e))? {
                    stat_names.insert(id, stat_name);
                }
            }
            (_, w) => s.skip_value(path, w)?,
        }
    }
    if name.is_none() {
        return Ok(());
    }
    let id_of = |wanted: &str| stat_names.iter().filter(|(_, n)| n.as_str() == wanted).map(|(&id, _)| id).collect::<Vec<_>>();
    let hlo_ids = id_of(HLO_PROTO_STAT);
    let program_ids = id_of("program_id");
    for e in events {
        for b in e.bytes_stats {
            if !hlo_ids.contains(&b.metadata_id) {
                continue;
            }
            let Some(module_name) = b.module_name else {
                return Err(MemoryError::proto(
                    path,
                    format!("byte {}: the `Hlo Proto` stat of event metadata {} is not an xla.HloProto", b.offset, e.id),
                ));
            };
            let program_id = e.int_stats.iter().find(|(m, _)| program_ids.contains(m)).map(|&(_, v)| v).unwrap_or(e.id);
            modules.push(XSpaceModule {
                name: module_name,
                program_id,
                host: String::new(),
                path: path.to_path_buf(),
                offset: b.offset,
                len: b.len,
            });
        }
    }
    Ok(())
}

/// Write a copy of the XSpace at `input` that keeps only the metadata plane (and the
/// host names, errors and warnings): what `oomdoc memory` and XProf's memory viewer
/// read, without the trace events. Returns the bytes written.
pub fn trim_to_metadata(input: &Path, output: &Path) -> Result<u64, MemoryError> {
    use std::io::Write;
    let file = File::open(input).map_err(|e| MemoryError::io(input, e))?;
    let len = file.metadata().map_err(|e| MemoryError::io(input, e))?.len();
    let mut s = Stream {
        r: BufReader::with_capacity(1 << 16, file),
        pos: 0,
        len,
    };
    let mut out = crate::proto::wire::Writer::default();
    while let Some((field, wire)) = s.key(input, len)? {
        if wire != 2 {
            s.skip_value(input, wire)?;
            continue;
        }
        let n = s.varint(input)?;
        let start = s.pos;
        let end = start.checked_add(n).filter(|&e| e <= len).ok_or_else(|| s.err(input, "field runs past the end of the file"))?;
        let keep = if field == 1 {
            // Find the plane's name, then come back to copy it whole if it is the metadata plane.
            let mut name = None;
            while let Some((f, w)) = s.key(input, end)? {
                if (f, w) == (2, 2) {
                    name = Some(s.string(input)?);
                    break;
                }
                s.skip_value(input, w)?;
            }
            s.r.seek(SeekFrom::Start(start)).map_err(|e| MemoryError::io(input, e))?;
            s.pos = start;
            name.as_deref() == Some(METADATA_PLANE)
        } else {
            matches!(field, 2..=4) && n <= MAX_NAME
        };
        if keep {
            // `keep` holds only for fields 1 to 4.
            out.bytes(field as u32, &s.bytes(input, n)?);
        } else {
            s.skip(input, end - s.pos)?;
        }
    }
    let mut f = File::create(output).map_err(|e| MemoryError::io(output, e))?;
    f.write_all(&out.0).map_err(|e| MemoryError::io(output, e))?;
    Ok(out.0.len() as u64)
}

fn s_err(path: &Path, e: crate::proto::wire::WireError) -> MemoryError {
    MemoryError::proto(path, format!("byte {}: {} (is this a jax.profiler / XProf *.xplane.pb?)", e.offset, e.message))
}

type W<T> = Result<T, crate::proto::wire::WireError>;

/// A map entry `{key=1, value=2: XEventMetadata}` at file offset `base`.
fn event_metadata_entry(buf: &[u8], base: u64) -> W<Option<EventMeta>> {
    let base_us = base as usize;
    let mut r = Reader::nested(buf, base_us);
    let mut key = None;
    let mut out = None;
    while let Some((field, v, at)) = r.next_field()? {
        match (field, v) {
            (1, v) => key = v.as_u64(),
            (2, Value::Bytes(b)) => out = Some(event_metadata(b, at)?),
            _ => {}
        }
    }
    Ok(out.map(|mut e: EventMeta| {
        if e.id == 0 {
            e.id = key.unwrap_or(0);
        }
        e
    }))
}

fn event_metadata(buf: &[u8], base: usize) -> W<EventMeta> {
    let mut r = Reader::nested(buf, base);
    let mut e = EventMeta {
        id: 0,
        int_stats: Vec::new(),
        bytes_stats: Vec::new(),
    };
    while let Some((field, v, at)) = r.next_field()? {
        match (field, v) {
            (1, v) => e.id = v.as_u64().unwrap_or(0),
            (5, Value::Bytes(b)) => {
                let mut sr = Reader::nested(b, at);
                let mut metadata_id = 0;
                let mut int_value = None;
                let mut bytes_value = None;
                while let Some((f, sv, sat)) = sr.next_field()? {
                    match (f, sv) {
                        (1, sv) => metadata_id = sv.as_u64().unwrap_or(0),
                        (3 | 4 | 7, sv) => int_value = sv.as_u64(),
                        (6, Value::Bytes(bb)) => bytes_value = Some((sat, bb)),
                        _ => {}
                    }
                }
                if let Some(v) = int_value {
                    e.int_stats.push((metadata_id, v));
                }
                if let Some((off, bb)) = bytes_value {
                    e.bytes_stats.push(BytesStat {
                        metadata_id,
                        offset: off as u64,
                        len: bb.len() as u64,
                        module_name: hlo_module_name(bb),
                    });
                }
            }
            _ => {}
        }
    }
    Ok(e)
}

/// `HloProto.hlo_module (1) .name (1)`, if the bytes read as one.
fn hlo_module_name(buf: &[u8]) -> Option<String> {
    let mut r = Reader::new(buf);
    let mut name = None;
    let mut has_assignment = false;
    while let Ok(Some((field, v, _))) = r.next_field() {
        match (field, v) {
            (1, Value::Bytes(m)) => {
                let mut mr = Reader::new(m);
                while let Ok(Some((f, mv, _))) = mr.next_field() {
                    if let (1, Value::Bytes(n)) = (f, mv) {
                        name = Some(String::from_utf8_lossy(n).into_owned());
                        break;
                    }
                }
            }
            (3, Value::Bytes(_)) => has_assignment = true,
            _ => {}
        }
    }
    // An HloProto without buffer assignment still names its module; the analysis says what is missing.
    let _ = has_assignment;
    name
}

/// A map entry `{key=1, value=2: XStatMetadata}` → (id, name).
fn stat_metadata_entry(buf: &[u8]) -> W<Option<(u64, String)>> {
    let mut r = Reader::new(buf);
    let mut key = None;
    let mut found = None;
    while let Some((field, v, _)) = r.next_field()? {
        match (field, v) {
            (1, v) => key = v.as_u64(),
            (2, Value::Bytes(b)) => {
                let mut sr = Reader::new(b);
                let (mut id, mut name) = (None, String::new());
                while let Some((f, sv, _)) = sr.next_field()? {
                    match (f, sv) {
                        (1, sv) => id = sv.as_u64(),
                        (2, Value::Bytes(n)) => name = String::from_utf8_lossy(n).into_owned(),
                        _ => {}
                    }
                }
                found = Some((id, name));
            }
            _ => {}
        }
    }
    Ok(found.and_then(|(id, name)| id.or(key).map(|id| (id, name))))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Appends one field to `out` with the crate's protobuf writer.
    fn field_bytes(field: u32, b: &[u8], out: &mut Vec<u8>) {
        let mut w = crate::proto::wire::Writer(std::mem::take(out));
        w.bytes(field, b);
        *out = w.0;
    }
    fn field_int(field: u32, v: u64, out: &mut Vec<u8>) {
        let mut w = crate::proto::wire::Writer(std::mem::take(out));
        w.int(field, v);
        *out = w.0;
    }

    /// An XSpace with a big trace plane, a metadata plane holding one fake HloProto
    /// (program id from the stat) and one without a program_id stat.
    fn xspace() -> Vec<u8> {
        let mut trace_plane = Vec::new();
        field_int(1, 7, &mut trace_plane);
        field_bytes(2, b"/host:CPU", &mut trace_plane);
        field_bytes(3, &vec![0u8; 5000], &mut trace_plane);

        let hlo = |name: &str| {
            let mut module = Vec::new();
            field_bytes(1, name.as_bytes(), &mut module);
            let mut p = Vec::new();
            field_bytes(1, &module, &mut p);
            p
        };
        let event = |id: u64, name: &str, program_id: Option<u64>| {
            let mut em = Vec::new();
            field_int(1, id, &mut em);
            field_bytes(2, name.as_bytes(), &mut em);
            let mut st = Vec::new();
            field_int(1, 11, &mut st);
            field_bytes(6, &hlo(name), &mut st);
            field_bytes(5, &st, &mut em);
            if let Some(pid) = program_id {
                let mut st = Vec::new();
                field_int(1, 12, &mut st);
                field_int(3, pid, &mut st);
                field_bytes(5, &st, &mut em);
            }
            let mut entry = Vec::new();
            field_int(1, id, &mut entry);
            field_bytes(2, &em, &mut entry);
            entry
        };
        let stat = |id: u64, name: &str| {
            let mut sm = Vec::new();
            field_int(1, id, &mut sm);
            field_bytes(2, name.as_bytes(), &mut sm);
            let mut entry = Vec::new();
            field_int(1, id, &mut entry);
            field_bytes(2, &sm, &mut entry);
            entry
        };
        let mut meta = Vec::new();
        field_int(1, 8, &mut meta);
        field_bytes(2, METADATA_PLANE.as_bytes(), &mut meta);
        field_bytes(4, &event(3, "jit_f", Some(34)), &mut meta);
        field_bytes(4, &event(5, "jit_g", None), &mut meta);
        field_bytes(5, &stat(11, HLO_PROTO_STAT), &mut meta);
        field_bytes(5, &stat(12, "program_id"), &mut meta);

        let mut space = Vec::new();
        field_bytes(1, &trace_plane, &mut space);
        field_bytes(1, &meta, &mut space);
        field_bytes(4, b"worker0", &mut space);
        space
    }

    #[test]
    fn finds_modules_on_the_metadata_plane() {
        let dir = std::env::temp_dir().join(format!("oomdoc-xplane-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("h.xplane.pb");
        std::fs::write(&p, xspace()).unwrap();
        let m = scan_xspace(&p).unwrap();
        assert_eq!(
            m.iter().map(|m| (m.name.as_str(), m.program_id, m.host.as_str())).collect::<Vec<_>>(),
            [("jit_f", 34, "worker0"), ("jit_g", 5, "worker0")]
        );
        let bytes = m[0].read_proto().unwrap();
        let trimmed = dir.join("t.xplane.pb");
        let n = trim_to_metadata(&p, &trimmed).unwrap();
        assert!(n < 1000, "{n}");
        assert_eq!(scan_xspace(&trimmed).unwrap().len(), 2);
        assert_eq!(hlo_module_name(&bytes).as_deref(), Some("jit_f"));
        // Every truncation is an error or a shorter list, never a panic.
        let full = xspace();
        for cut in (0..full.len()).step_by(13) {
            std::fs::write(&p, &full[..cut]).unwrap();
            let _ = scan_xspace(&p);
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
