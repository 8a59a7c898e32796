//! The inputs users really have, end to end through `diagnose_reader`: compressed
//! logs, UTF-16 from PowerShell, JSON-lines with whole tracebacks in one field, giant
//! lines, CR-only line endings, floods of distinct findings, broken numbers.
//! Each gives the right finding at the right line, never "nothing found".

use oomdoc_diagnose::{diagnose_file, diagnose_reader, diagnose_text, input, Options, Report};
use oomdoc_kb::{Kind, Severity};
use std::io::Write;
use std::path::PathBuf;

fn log() -> Vec<u8> {
    let mut s = String::new();
    for i in 0..300 {
        s.push_str(&format!("step {i} loss 0.{}\n", i % 10));
    }
    s.push_str(MSG);
    s.push('\n');
    for i in 0..20 {
        s.push_str(&format!("after {i}\n"));
    }
    s.into_bytes()
}

/// tests/corpus/dev.jsonl, record compvis-702-a1111-4gb.
const MSG: &str = "OutOfMemoryError: CUDA out of memory. Tried to allocate 192.00 MiB (GPU 0; 4.00 GiB total capacity; 3.08 GiB already allocated; 0 bytes free; 3.47 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation. See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\nTime taken: 2m 24.41sTorch active/reserved: 3457/3576 MiB, Sys VRAM: 4096/4096 MiB (100.0%)";

fn diagnose(bytes: Vec<u8>) -> Report {
    diagnose_reader(std::io::Cursor::new(bytes), &Options::default()).expect("readable")
}

fn assert_found(r: &Report, line: u64) {
    let f = r.findings.iter().find(|f| f.id == "pytorch.cuda-oom").unwrap_or_else(|| panic!("no finding: {:?}", r.findings.iter().map(|f| &f.id).collect::<Vec<_>>()));
    assert_eq!(f.line, line);
    assert_eq!(f.sizes.requested, Some(192 << 20));
    assert_eq!(f.sizes.total, Some(4 << 30));
}

fn utf16(b: &[u8], be: bool, bom: bool) -> Vec<u8> {
    let s = std::str::from_utf8(b).unwrap();
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
fn utf16_as_powershell_writes_it_and_without_bom() {
    for (be, bom) in [(false, true), (false, false), (true, false), (true, true)] {
        let r = diagnose(utf16(&log(), be, bom));
        assert_found(&r, 301);
        assert_eq!(r.lines_scanned, 322);
        let enc = r.input.expect("input format reported").encoding;
        assert_eq!(enc, if be { input::Encoding::Utf16Be } else { input::Encoding::Utf16Le });
    }
}

#[test]
fn compressed_logs_by_magic_bytes() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&log()).unwrap();
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    bz.write_all(&log()).unwrap();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/inputs");
    let cases = [
        (gz.finish().unwrap(), input::Compression::Gzip),
        (bz.finish().unwrap(), input::Compression::Bzip2),
        (std::fs::read(dir.join("oom.log.zst")).unwrap(), input::Compression::Zstd),
        (std::fs::read(dir.join("oom.log.xz")).unwrap(), input::Compression::Xz),
    ];
    for (bytes, want) in cases {
        let r = diagnose(bytes);
        assert_found(&r, 301);
        assert_eq!(r.input.unwrap().compression, want);
        assert!(r.notes.is_empty());
    }
    // UTF-16 inside gzip, as a PowerShell log that was rotated.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&utf16(&log(), false, true)).unwrap();
    assert_found(&diagnose(gz.finish().unwrap()), 301);
}

#[test]
fn truncated_gzip_keeps_findings_and_says_so() {
    let mut body = log();
    body.extend((0..200_000).map(|i| format!("tail line {i} {}\n", i * 7919 % 104729)).collect::<String>().bytes());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&body).unwrap();
    let full = gz.finish().unwrap();
    let r = diagnose(full[..full.len() * 3 / 4].to_vec());
    assert_found(&r, 301);
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    let text = oomdoc_diagnose::render::text(&r, oomdoc_diagnose::Lang::En, false);
    assert!(text.contains("note: the gzip stream breaks off"), "{text}");
}

#[test]
fn json_lines_with_the_traceback_deep_in_a_long_line() {
    // A JSON-lines record whose message field holds a long preamble, then the traceback.
    let filler = "x".repeat(200 << 10);
    let msg = serde_json::to_string(&format!("{filler}\nTraceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n{MSG}")).unwrap();
    let mut text = String::new();
    for i in 0..10 {
        text.push_str(&format!("{{\"step\": {i}, \"loss\": 0.5}}\n"));
    }
    text.push_str(&format!("{{\"level\": \"error\", \"message\": {msg}}}\n"));
    let r = diagnose_text(&text, &Options::default());
    assert_found(&r, 11);
    let r = diagnose(text.into_bytes());
    assert_found(&r, 11);
}

#[test]
fn a_message_straddling_the_giant_line_cut() {
    // One line longer than the scanner's buffer; the trigger words fall across the point
    // where a line with no newline in the whole buffer is cut.
    let chunk = oomdoc_diagnose::scan::CHUNK;
    let needle = MSG.find("out of memory").unwrap();
    for back in [1030usize, 1024, 1020, 1010, 1000, 990, 700] {
        let pad = chunk - back - needle;
        let mut bytes = vec![b'x'; pad];
        bytes.extend_from_slice(MSG.as_bytes());
        bytes.extend_from_slice(b"\nnext line\n");
        let r = diagnose(bytes);
        let f = r.findings.iter().find(|f| f.id == "pytorch.cuda-oom").unwrap_or_else(|| panic!("missed at {back}"));
        assert_eq!(f.line, 1, "at {back}");
        assert_eq!(f.sizes.requested, Some(192 << 20), "at {back}");
        assert_eq!(r.lines_scanned, 3, "at {back}");
    }
}

#[test]
fn cr_only_line_endings() {
    let bytes: Vec<u8> = log().into_iter().map(|b| if b == b'\n' { b'\r' } else { b }).collect();
    let r = diagnose(bytes);
    assert_found(&r, 301);
    assert!(r.input.unwrap().cr_only);
}

#[test]
fn the_fatal_failure_survives_a_flood_of_distinct_warnings() {
    let mut text = String::new();
    for i in 0..1500 {
        text.push_str(&format!("2024-01-01 00:00:00.000000: W bfc_allocator.cc:1] Allocator (GPU_0_bfc) ran out of memory trying to allocate {i}.00MiB with freed_by_count=0. The caller indicates that this is not a failure, but this may mean that there could be performance gains if more memory were available.\n"));
    }
    text.push_str(MSG);
    text.push('\n');
    let r = diagnose(text.into_bytes());
    let fatal: Vec<_> = r.findings.iter().filter(|f| f.kind == Kind::Oom && f.severity == Severity::Error).collect();
    assert_eq!(fatal.len(), 1);
    assert!(fatal[0].first_fatal);
    assert_eq!(fatal[0].line, 1501);
    let t = r.truncated.expect("folding is reported");
    assert_eq!((t.warnings, t.errors), (500, 0));
    assert_eq!(r.findings.len(), 1001);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["truncated"]["warnings"], 500);
}

#[test]
fn a_broken_number_drops_that_size_and_keeps_the_finding() {
    for bad in ["-2.00 GiB", "nan GiB", "1e400 bytes", "1E6 bytes", "2.0\u{0}0 GiB", "inf GiB"] {
        let text = format!("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {bad}. GPU 0 has a total capacity of 23.65 GiB of which 1.66 GiB is free.");
        let r = diagnose(text.into_bytes());
        let f = r.findings.iter().find(|f| f.id == "pytorch.cuda-oom").unwrap_or_else(|| panic!("lost the finding for {bad:?}"));
        assert_eq!(f.sizes.requested, None, "{bad:?} must not become a size");
        assert_eq!(f.sizes.free, Some(1782411428), "{bad:?}");
    }
}

#[test]
fn the_last_line_without_a_newline_is_counted() {
    for (text, lines) in [("a\nb", 2), ("a\nb\n", 2), ("x", 1), ("", 0), ("\n", 1), ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\nfoo", 2)] {
        assert_eq!(diagnose(text.as_bytes().to_vec()).lines_scanned, lines, "{text:?}");
    }
    // A giant last line with no newline.
    let mut big = b"first\n".to_vec();
    big.extend(std::iter::repeat_n(b'y', oomdoc_diagnose::scan::CHUNK + 10));
    assert_eq!(diagnose(big).lines_scanned, 2);
}

/// A log file gives the report its bytes give when streamed, whichever way it is read:
/// mapped windows for plain text (also after a UTF-8 byte-order mark), the decoders for
/// compressed, UTF-16 and CR-only logs.
#[test]
fn a_file_reports_as_its_bytes_do() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oomdoc-inputs-file");
    std::fs::create_dir_all(&dir).unwrap();
    let mut bom = vec![0xef, 0xbb, 0xbf];
    bom.extend(log());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&log()).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("plain", log()),
        ("bom", bom),
        ("utf16", utf16(&log(), false, true)),
        ("cr", log().iter().map(|&b| if b == b'\n' { b'\r' } else { b }).collect()),
        ("gzip", gz.finish().unwrap()),
        ("empty", Vec::new()),
        ("no-final-newline", b"a\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB".to_vec()),
    ];
    for (name, bytes) in cases {
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        let from_file = diagnose_file(std::fs::File::open(&path).unwrap(), &Options::default()).unwrap();
        let streamed = diagnose(bytes);
        assert_eq!(serde_json::to_value(&from_file).unwrap(), serde_json::to_value(&streamed).unwrap(), "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
    // A file whose size says 0 but that has bytes (procfs) is read, not mapped.
    #[cfg(target_os = "linux")]
    {
        let r = diagnose_file(std::fs::File::open("/proc/self/status").unwrap(), &Options::default()).unwrap();
        assert!(r.lines_scanned > 5, "{}", r.lines_scanned);
    }
}

/// D26, D27: an xz log cut short keeps the text before the cut, as `xz -dc` does (the
/// reference tool recovers 5,536 of this fixture's 5,897 bytes with 200 bytes cut; the
/// whole-chunk reader recovered none), so a failure written just before the cut is found.
#[test]
fn truncated_xz_keeps_the_text_before_the_cut() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/inputs");
    let full = std::fs::read(dir.join("oom.log.xz")).unwrap();
    for cut in [64, 200] {
        let r = diagnose(full[..full.len() - cut].to_vec());
        assert_found(&r, 301);
        assert!(r.bytes_scanned >= 5_300, "cut {cut}: {} bytes", r.bytes_scanned);
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(r.notes[0].contains("xz stream breaks off"), "{:?}", r.notes);
    }
}
