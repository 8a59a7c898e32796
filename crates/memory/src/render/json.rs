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

/// The pretty formatter's method for one event, to call at the shallow levels.
type Pretty<W> = fn(&mut PrettyFormatter<'static>, &mut W) -> io::Result<()>;

impl Layered {
    fn deep(&self) -> bool {
        self.depth > PRETTY_DEPTH
    }

    /// `[` or `{`: one level deeper.
    fn open<W: ?Sized + io::Write>(&mut self, w: &mut W, bracket: &[u8], pretty: Pretty<W>) -> io::Result<()> {
        self.depth += 1;
        if self.deep() {
            w.write_all(bracket)
        } else {
            pretty(&mut self.pretty, w)
        }
    }

    /// `]` or `}`: back up a level.
    fn close<W: ?Sized + io::Write>(&mut self, w: &mut W, bracket: &[u8], pretty: Pretty<W>) -> io::Result<()> {
        let r = if self.deep() { w.write_all(bracket) } else { pretty(&mut self.pretty, w) };
        self.depth -= 1;
        r
    }

    /// Before an array element or an object key: a bare `,` between them when deep.
    fn separate<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool, pretty: fn(&mut PrettyFormatter<'static>, &mut W, bool) -> io::Result<()>) -> io::Result<()> {
        match (self.deep(), first) {
            (true, true) => Ok(()),
            (true, false) => w.write_all(b","),
            (false, _) => pretty(&mut self.pretty, w, first),
        }
    }

    /// After a value, or before an object's value (`:` when deep).
    fn between<W: ?Sized + io::Write>(&mut self, w: &mut W, deep: &[u8], pretty: Pretty<W>) -> io::Result<()> {
        if self.deep() {
            w.write_all(deep)
        } else {
            pretty(&mut self.pretty, w)
        }
    }
}

impl Formatter for Layered {
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[", PrettyFormatter::begin_array)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]", PrettyFormatter::end_array)
    }
    fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.separate(w, first, PrettyFormatter::begin_array_value)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.between(w, b"", PrettyFormatter::end_array_value)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{", PrettyFormatter::begin_object)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}", PrettyFormatter::end_object)
    }
    fn begin_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.separate(w, first, PrettyFormatter::begin_object_key)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.between(w, b":", PrettyFormatter::begin_object_value)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.between(w, b"", PrettyFormatter::end_object_value)
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
