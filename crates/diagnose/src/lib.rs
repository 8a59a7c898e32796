//! The diagnose engine: finds every accelerator memory failure in a log and
//! explains it with the log's own numbers.
//!
//! Pipeline: [`scan`] streams the input and cuts out small blocks around trigger
//! words → [`normalize`] cleans and re-joins their lines → [`recognize`] reads the
//! messages into hits (entry id, sizes, culprit) → identical failures are merged →
//! [`facts`] computes conditions and numbers → [`advise`] applies the knowledge
//! base entry (cause, ranked fixes, dead ends).
//!
//! ```
//! let report = oomdoc_diagnose::diagnose_text(
//!     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.66 GiB is free.",
//!     &oomdoc_diagnose::Options::default(),
//! );
//! assert_eq!(report.findings[0].id, "pytorch.cuda-oom");
//! assert_eq!(report.findings[0].sizes.requested, Some(2 << 30));
//! ```

pub mod advise;
pub mod anchor_search;
pub mod dump;
pub mod facts;
pub use facts::context;
pub mod snapshot;
pub mod finding;
pub mod hardware;
pub mod multi;
pub mod input;
pub mod live;
#[cfg(target_os = "linux")]
mod mapped;
pub mod normalize;
pub mod recognize;
pub mod render;
pub mod scan;
pub mod sizes;
mod zstd_frames;

pub use finding::*;
pub use multi::{evidence_finding, merge_reports};
pub use oomdoc_kb::Lang;

use facts::Facts;
use oomdoc_kb::{Kind, KnowledgeBase, Phase, Platform, Severity};
use recognize::Hit;
use std::collections::{BTreeSet, HashMap};
use std::io::Read;

/// How to diagnose.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Language of titles, causes and fixes.
    pub lang: Lang,
    /// An XLA dump directory (`--xla_dump_to`): attach the failing module's memory at its peak.
    pub dump: Option<std::path::PathBuf>,
    /// A PyTorch CUDA memory snapshot, read once: attach what was live at its OOM (or
    /// peak), by call site, to each PyTorch memory finding.
    pub snapshot: Option<std::sync::Arc<snapshot::SnapshotInput>>,
    /// A directory a recording job dumps snapshots into (`oomdoc run --record-snapshot`):
    /// when the scan finishes, its newest snapshot is read and attached as `snapshot` is
    /// (which wins when both are set).
    pub snapshot_dir: Option<std::path::PathBuf>,
    /// Threads for the literal search of one log: 0 = every core. Callers that
    /// diagnose many logs at once give each 1 and run the logs in parallel.
    pub threads: usize,
    /// Facts from the running program (the Python package's `diagnose_exception`).
    pub facts: Option<live::LiveFacts>,
    /// Most bytes of text a log may decode to (after decompression): past it the read
    /// fails with [`std::io::ErrorKind::FileTooLarge`]. A server sets its log limit here,
    /// so a 1 MB zstd body cannot become 10 GiB of work; None reads to the end.
    pub max_text_bytes: Option<u64>,
    /// Keep every fix that fits the case, the family-level ones included, in the knowledge
    /// base's order (known regressions first): the candidates a ranking chooses from, for
    /// measuring a ranking on material the embedded one was counted from (the outcome test).
    pub unranked: bool,
}

/// Distinct non-fatal findings kept (warnings, recognized non-memory errors); past
/// this they are counted in `truncated.warnings`.
const MAX_WARNINGS: usize = 1000;
/// Distinct fatal memory failures kept. Far above any real log; it bounds memory
/// against hostile input, and the first fatal failure is always among them.
const MAX_FATAL: usize = 5000;

/// Diagnose a whole log from a reader, streaming. Compressed (gzip, zstd, xz, bzip2)
/// and UTF-16 input is recognised by its bytes and decoded on the fly.
pub fn diagnose_reader<R: Read>(reader: R, opts: &Options) -> std::io::Result<Report> {
    let decoded = input::decode(reader)?;
    let info = decoded.info.clone();
    let mut report = match opts.max_text_bytes {
        Some(max) => diagnose_decoded(input::AtMost::new(decoded.reader, max), opts)?,
        None => diagnose_decoded(decoded.reader, opts)?,
    };
    if (info.compression, info.encoding, info.cr_only) != (input::Compression::None, input::Encoding::Utf8, false) {
        report.input = Some(InputFormat { compression: info.compression, encoding: info.encoding, cr_only: info.cr_only });
    }
    report.notes.extend(info.notes());
    Ok(report)
}

/// Diagnose a log file: as [`diagnose_reader`] over its bytes, but a plain-text regular
/// file (the usual case) is searched through bounded mapped windows instead of being
/// copied out of the page cache (Linux). A file that shrinks while it is scanned
/// (truncated or rotated) ends the scan there, with a note.
pub fn diagnose_file(file: std::fs::File, opts: &Options) -> std::io::Result<Report> {
    #[cfg(target_os = "linux")]
    if file.metadata()?.is_file() {
        if let Some(start) = input::plain_text_start(&file)? {
            // The head is read back from the file, and only when there are findings.
            let head = || {
                use std::os::unix::fs::FileExt;
                let mut buf = vec![0u8; HEAD_BYTES];
                let n = file.read_at(&mut buf, start).unwrap_or(0);
                buf.truncate(n);
                buf
            };
            if let Some(report) = report_of_scan(opts, |ctx, on_block| scan::scan_file_with(&file, start, ctx, opts.threads, on_block), head)? {
                return Ok(report);
            }
        }
    }
    diagnose_reader(std::io::BufReader::with_capacity(1 << 16, file), opts)
}

/// Diagnose UTF-8 text from a reader, streaming (no decoding).
fn diagnose_decoded<R: Read>(reader: R, opts: &Options) -> std::io::Result<Report> {
    let head = std::cell::RefCell::new(Vec::new());
    let tee = HeadTee { inner: reader, head: &head };
    let report = report_of_scan(opts, |ctx, on_block| scan::scan_with(tee, ctx, opts.threads, on_block).map(Some), || head.take())?;
    Ok(report.expect("a read scan always runs"))
}

/// How much of a log's start is kept for the versions it prints there (startup banners,
/// environment reports, package listings), however far the failure is from them.
const HEAD_BYTES: usize = 64 << 10;

/// A reader that keeps a copy of the first [`HEAD_BYTES`] it passes on.
struct HeadTee<'a, R> {
    inner: R,
    head: &'a std::cell::RefCell<Vec<u8>>,
}

impl<R: Read> Read for HeadTee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut head = self.head.borrow_mut();
        if head.len() < HEAD_BYTES {
            let room = HEAD_BYTES - head.len();
            head.extend_from_slice(&buf[..n.min(room)]);
        }
        Ok(n)
    }
}

/// The report of one scan: its blocks collected into findings, with its totals. `scan`
/// runs the scan (reading or mapped) with a context and a block callback; None when it
/// could not start (a file that cannot be mapped). `head` gives the log's first bytes
/// after the scan; it is called only when there are findings to read versions for.
fn report_of_scan(
    opts: &Options,
    scan: impl FnOnce(&mut scan::LogContext, &mut dyn FnMut(scan::RawBlock)) -> std::io::Result<Option<scan::ScanStats>>,
    head: impl FnOnce() -> Vec<u8>,
) -> std::io::Result<Option<Report>> {
    let mut collector = Collector::default();
    let mut ctx = scan::LogContext::default();
    let Some(stats) = scan(&mut ctx, &mut |block| collector.block(block))? else { return Ok(None) };
    let mut head = Some(head);
    let mut head_bytes: Option<Vec<u8>> = None;
    // A short input in which no block yielded a finding (a title, a few sentences: words the
    // scanner's anchors do not start a block for, such as a title opening with "OOM") is read
    // whole by the prose stage alone (recognize/prose.rs).
    if collector.pending.is_empty() && stats.bytes > 0 && stats.bytes <= HEAD_BYTES as u64 {
        let bytes = head.take().map(|h| h()).unwrap_or_default();
        collector.whole_text_prose(&bytes);
        head_bytes = Some(bytes);
    }
    let head_versions = if collector.pending.is_empty() {
        Default::default()
    } else {
        head_versions(&head_bytes.or_else(|| head.take().map(|h| h())).unwrap_or_default())
    };
    let mut report = collector.finish(&ctx, opts, &head_versions);
    report.lines_scanned = stats.lines;
    report.bytes_scanned = stats.bytes;
    if let Some(at) = stats.shrank_at {
        report.notes.push(format!("the file shrank while it was read (truncated or rotated); scanned up to byte {at}"));
    }
    Ok(Some(report))
}

/// The versions a log's head prints, its terminal controls removed.
fn head_versions(head: &[u8]) -> std::collections::BTreeMap<String, facts::version::VersionFact> {
    let text = String::from_utf8_lossy(head);
    facts::version::printed_versions(&oomdoc_units::terminal::clean(&text))
}

/// Diagnose a log held in memory.
pub fn diagnose_text(text: &str, opts: &Options) -> Report {
    diagnose_decoded(text.as_bytes(), opts).expect("reading from memory cannot fail")
}

/// A finding under construction, with what advice needs later.
struct Pending {
    finding: Finding,
    flags: BTreeSet<&'static str>,
    block_text: String,
    /// The block's distinct logger prefixes (source files that logged its lines), for the case.
    prefixes: String,
}

#[derive(Default)]
struct Collector {
    pending: Vec<Pending>,
    index: HashMap<FailureKey, usize>,
    fatal: usize,
    truncated: Truncated,
}

fn is_fatal(f: &Finding) -> bool {
    f.kind == Kind::Oom && f.severity == Severity::Error
}

impl Collector {
    fn block(&mut self, raw: scan::RawBlock) {
        self.block_read_by(raw, recognize::recognize_all);
    }

    /// A whole short input, its lines numbered from 1, read by the prose stage only.
    fn whole_text_prose(&mut self, bytes: &[u8]) {
        let lines: Vec<(u64, Vec<u8>)> =
            bytes.split(|&b| b == b'\n').enumerate().map(|(i, l)| (i as u64 + 1, l.strip_suffix(b"\r").unwrap_or(l).to_vec())).collect();
        self.block_read_by(scan::RawBlock { lines, repeats: Vec::new() }, recognize::prose_only);
    }

    fn block_read_by(&mut self, raw: scan::RawBlock, read: fn(&normalize::Flat) -> Vec<Hit>) {
        let mut lines = Vec::with_capacity(raw.lines.len());
        for (n, l) in &raw.lines {
            match normalize::expand_escaped(l) {
                Some(pieces) => lines.extend(pieces.iter().map(|p| normalize::clean_line(*n, p))),
                None => lines.push(normalize::clean_line(*n, l)),
            }
        }
        let flat = normalize::flatten(&lines);
        // A path under `external/org_tensorflow/` is TensorFlow's code built into another
        // project as a Bazel dependency (jaxlib did so until 2020): not a TensorFlow job.
        let mut prefixes: Vec<&str> = Vec::new();
        for l in &lines {
            if !l.prefix.is_empty() && !l.prefix.contains("external/org_tensorflow/") && !prefixes.contains(&l.prefix.as_str()) && prefixes.len() < 64 {
                prefixes.push(&l.prefix);
            }
        }
        let prefixes = prefixes.join("\n");
        let times = multi::BlockTimes::of(&raw.lines);
        for hit in read(&flat) {
            let copies = 1 + repeated_copies(&raw.repeats, &flat, &hit);
            // A failure seen before is counted, not built again (a flood of one message).
            let key = FailureKey::of_hit(&hit);
            if let Some(&i) = self.index.get(&key) {
                self.pending[i].finding.occurrences += copies;
                continue;
            }
            let mut finding = build(&hit, &flat);
            finding.time = times.before(finding.line);
            finding.occurrences = copies;
            let fatal = is_fatal(&finding);
            let room = if fatal { self.fatal < MAX_FATAL } else { self.pending.len() - self.fatal < MAX_WARNINGS };
            if room {
                self.fatal += fatal as usize;
                self.index.insert(key, self.pending.len());
                // Keep the text around the message for framework and training cues.
                let lo = flat.text[..hit.start].char_indices().rev().nth(3000).map_or(0, |(i, _)| i);
                let hi = recognize::window(&flat.text, hit.start, 6000).len() + hit.start;
                self.pending.push(Pending { finding, flags: hit.flags.clone(), block_text: flat.text[lo..hi].to_string(), prefixes: prefixes.clone() });
            } else if fatal {
                self.truncated.errors += copies;
            } else {
                self.truncated.warnings += copies;
            }
        }
    }

    fn finish(self, ctx: &scan::LogContext, opts: &Options, head_versions: &std::collections::BTreeMap<String, facts::version::VersionFact>) -> Report {
        let truncated = self.truncated;
        // A failure stated only in prose counts where no runtime message in the input yields a
        // finding (recognize/prose.rs): a block of prose beside a real message adds nothing.
        let mut pending = self.pending;
        if pending.iter().any(|p| !p.flags.contains("stated_in_prose")) {
            pending.retain(|p| !p.flags.contains("stated_in_prose"));
        }
        let settings: String = ctx.lines.iter().map(|l| l.1.as_str()).collect::<Vec<_>>().join("\n");
        let mut dump_notes: Vec<String> = Vec::new();
        let late_snapshot = opts.snapshot.is_none().then(|| opts.snapshot_dir.as_deref().and_then(snapshot::newest_in)).flatten().and_then(|p| snapshot::SnapshotInput::load(&p).ok());
        let snapshot = opts.snapshot.as_deref().or(late_snapshot.as_ref());
        let mut findings: Vec<Finding> = pending
            .into_iter()
            .map(|mut p| {
                let f = &mut p.finding;
                // The dump may add the buffers at the peak, which the facts then count.
                // Memory failures only: another error has no failing module to show.
                if let (Some(dir), Kind::Oom) = (&opts.dump, f.kind) {
                    let note = dump::attach(f, dir);
                    if !dump_notes.contains(&note) {
                        dump_notes.push(note);
                    }
                }
                if let Some(snap) = snapshot {
                    if f.framework.is_none() {
                        f.framework = context::frameworks(&p.block_text).first().map(|s| s.to_string());
                    }
                    snapshot::attach(f, snap);
                }
                // The case reads the block and the settings lines kept for the whole log.
                // The logger prefixes stripped from the block's lines name the source files
                // that logged them (`tensorflow/core/...`), so they count for the case too.
                let with_prefixes = if p.prefixes.is_empty() { p.block_text.clone() } else { format!("{}\n{}", p.prefixes, p.block_text) };
                f.case = if settings.is_empty() {
                    facts::case::read(f, &with_prefixes, head_versions)
                } else {
                    facts::case::read(f, &format!("{settings}\n{with_prefixes}"), head_versions)
                };
                let mut facts: Facts = facts::compute(f, &p.flags, &p.block_text);
                if let Some(l) = &opts.facts {
                    live::apply(f, l, &mut facts);
                }
                if f.framework.is_none() {
                    f.framework = context::frameworks(&p.block_text).first().map(|s| s.to_string());
                }
                f.headline = facts::headline(f, &facts, opts.lang);
                match KnowledgeBase::embedded_by_id(&f.id) {
                    Some(entry) => advise::apply(f, entry, &facts, opts.lang, opts.unranked),
                    None => f.title = f.id.clone(),
                }
                p.finding
            })
            .collect();
        findings.sort_by_key(|f| (f.line, f.end_line));
        if let Some(first) = findings.iter_mut().find(|f| is_fatal(f)) {
            first.first_fatal = true;
        }
        let folded = truncated.warnings + truncated.errors > 0;
        Report { findings, truncated: folded.then_some(truncated), notes: dump_notes, ..Report::default() }
    }
}

/// What makes two findings the same failure (a traceback repeated by every worker): the
/// entry, the sizes and what the failure points at, as the finding will have them.
#[derive(PartialEq, Eq, Hash)]
struct FailureKey {
    id: std::borrow::Cow<'static, str>,
    sizes: Sizes,
    op: Option<String>,
    kernel: Option<String>,
    shape: Option<String>,
    node: Option<String>,
}

impl FailureKey {
    /// Read off the hit, so that a failure seen before is counted without building it.
    fn of_hit(hit: &Hit) -> FailureKey {
        let c = &hit.culprit;
        FailureKey { id: hit.id.into(), sizes: hit_sizes(hit), op: c.op.clone(), kernel: c.kernel.clone(), shape: c.shape.clone(), node: c.node.clone() }
    }

    /// The same key, of a finding built (the reports of several logs are merged by it).
    fn of_finding(f: &Finding) -> FailureKey {
        let c = &f.culprit;
        FailureKey { id: f.id.clone().into(), sizes: f.sizes.clone(), op: c.op.clone(), kernel: c.kernel.clone(), shape: c.shape.clone(), node: c.node.clone() }
    }
}

/// Copies of the hit's line that the scanner counted instead of keeping (see
/// [`scan::RawBlock::repeats`]): each would have given the same hit. A message over
/// several lines is not multiplied by a repeat of one of them.
fn repeated_copies(repeats: &[(u64, u64)], flat: &normalize::Flat, hit: &Hit) -> u64 {
    if repeats.is_empty() {
        return 0;
    }
    let line = flat.line_at(hit.start);
    if flat.line_at(hit.end.saturating_sub(1).max(hit.start)) != line {
        return 0;
    }
    repeats.binary_search_by_key(&line, |r| r.0).map_or(0, |i| repeats[i].1)
}

/// The sizes a hit states, by the contract's keys.
fn hit_sizes(hit: &Hit) -> Sizes {
    let mut sizes = Sizes::default();
    for (k, p) in &hit.sizes {
        *sizes.slot(*k) = Some(p.bytes);
    }
    sizes
}

/// Turn a recognizer hit into a finding (before advice).
fn build(hit: &Hit, flat: &normalize::Flat) -> Finding {
    let entry = KnowledgeBase::embedded_by_id(hit.id);
    let kind = entry.map_or(Kind::Oom, |e| e.kind);
    let severity = if hit.flags.contains("warning_only") { Severity::Warning } else { entry.map_or(Severity::Error, |e| e.severity) };
    let sizes = hit_sizes(hit);
    let printed = hit.sizes.iter().map(|(k, p)| (k.name().to_string(), p.text.clone())).collect();
    let code = hit.code_in_log.clone().or_else(|| entry.and_then(|e| e.code.clone()));
    let excerpt = excerpt(&flat.text, hit.start, hit.end);
    let mut f = Finding {
        id: hit.id.to_string(),
        code,
        code_in_log: hit.code_in_log.is_some(),
        kind,
        severity,
        confidence: hit.confidence,
        confidence_reason: hit.confidence_reason.clone(),
        size_notes: hit.size_notes.clone(),
        first_fatal: false,
        title: String::new(),
        platform: hit.platform.or(entry.map(|e| e.platform)).unwrap_or(Platform::Other),
        phase: hit.phase.or(entry.map(|e| e.phase)).unwrap_or(Phase::Runtime),
        memory_space: hit.memory_space.clone().or_else(|| entry.and_then(|e| e.memory_space.clone())),
        sizes,
        printed,
        derived: hit.derived.clone(),
        details: hit.details.clone(),
        headline: String::new(),
        line: flat.line_at(hit.start),
        end_line: flat.line_at(hit.end.saturating_sub(1).max(hit.start)),
        occurrences: 1,
        framework: None,
        exception: context::exception_near(&flat.text, hit.start),
        status: context::status_near(&flat.text, hit.start),
        culprit: hit.culprit.clone(),
        case: facts::case::Case::default(),
        cause: None,
        fixes: Vec::new(),
        dead_ends: Vec::new(),
        outcomes: None,
        cause_confidence: None,
        references: Vec::new(),
        excerpt,
        memory: None,
        file: None,
        files: Vec::new(),
        time: None,
    };
    if kind == Kind::Other {
        f.severity = if f.severity == Severity::Warning { Severity::Warning } else { Severity::Error };
    }
    f
}

/// The message text, at most 6 lines and 1200 characters.
fn excerpt(t: &str, start: usize, end: usize) -> String {
    // Bounded both ways: a block pasted as one long line must not cost its length per finding.
    let before = recognize::window_before(t, start, 2000);
    let line_start = start - before.len() + before.rfind('\n').map_or(0, |i| i + 1);
    let end = end.max(start).min(t.len());
    let after = recognize::window(t, end, 2000);
    let line_end = end + after.find('\n').unwrap_or(after.len());
    let s = &t[line_start..line_end];
    let mut out: String = s.lines().take(6).collect::<Vec<_>>().join("\n");
    if out.chars().count() > 1200 {
        out = out.chars().take(1200).collect::<String>() + "…";
    }
    out
}
