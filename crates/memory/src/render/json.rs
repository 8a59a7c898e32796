//! `--format json`: exactly the documented contract (`docs/memory.md`).

use crate::report::MemoryReport;
use serde::Serialize as _;
use serde_json::ser::{Formatter, PrettyFormatter};
use std::io::{self, Write as _};

/// Containers nested up to this deep are pretty-printed; deeper ones go on one line. The
/// report, its modules and their lists are laid out; each timeline point, buffer and
/// memory space is one line: a million-point timeline is a third smaller and faster to
/// write, and still reads (and diffs) line by line.
const PRETTY_DEPTH: usize = 4;

struct Layered {
    pretty: PrettyFormatter<'static>,
    depth: usize,
}

impl Layered {
    fn deep(&self) -> bool {
        self.depth > PRETTY_DEPTH
    }
}

impl Formatter for Layered {
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        if self.deep() {
            w.write_all(b"[")
        } else {
            self.pretty.begin_array(w)
        }
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let r = if self.deep() { w.write_all(b"]") } else { self.pretty.end_array(w) };
        self.depth -= 1;
        r
    }
    fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        match (self.deep(), first) {
            (true, true) => Ok(()),
            (true, false) => w.write_all(b","),
            (false, _) => self.pretty.begin_array_value(w, first),
        }
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.deep() {
            Ok(())
        } else {
            self.pretty.end_array_value(w)
        }
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        if self.deep() {
            w.write_all(b"{")
        } else {
            self.pretty.begin_object(w)
        }
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let r = if self.deep() { w.write_all(b"}") } else { self.pretty.end_object(w) };
        self.depth -= 1;
        r
    }
    fn begin_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        match (self.deep(), first) {
            (true, true) => Ok(()),
            (true, false) => w.write_all(b","),
            (false, _) => self.pretty.begin_object_key(w, first),
        }
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.deep() {
            w.write_all(b":")
        } else {
            self.pretty.begin_object_value(w)
        }
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.deep() {
            Ok(())
        } else {
            self.pretty.end_object_value(w)
        }
    }
}

fn serialize(report: &MemoryReport, out: impl io::Write) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, Layered { pretty: PrettyFormatter::new(), depth: 0 });
    report.serialize(&mut ser)
}

pub fn render(report: &MemoryReport) -> String {
    // Sized once from the report (a timeline point's line is about 100 bytes):
    // a million-point timeline no longer grows the string by doubling and copying.
    let points: usize = report.modules.iter().map(|m| m.timeline.len()).sum();
    let buffers: usize = report.modules.iter().map(|m| m.buffers_at_peak.len()).sum();
    let mut out = Vec::with_capacity(points.saturating_mul(110).saturating_add(buffers.saturating_mul(256)).saturating_add(1 << 16));
    serialize(report, &mut out).expect("report serializes");
    out.push(b'\n');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// [`render`] streamed into `out` (no report-sized string: a million-point timeline is
/// hundreds of MB of JSON). Same bytes as [`render`].
pub fn write_to(report: &MemoryReport, out: impl io::Write) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 20, out);
    serialize(report, &mut out).map_err(io::Error::other)?;
    out.write_all(b"\n")?;
    out.flush()
}
