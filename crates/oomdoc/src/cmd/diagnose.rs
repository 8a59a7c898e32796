//! `oomdoc diagnose [PATH…|-]`: one log, many logs (files and directories, read in
//! parallel, the same failure on many hosts merged), or `--follow` one growing log.

use crate::cli_error::CliError;
use clap::{Args, ValueEnum};
use oomdoc_diagnose::{diagnose_file, diagnose_reader, diagnose_text, input, merge_reports, render, Lang, Options, Report, Unreadable};
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    /// For a terminal (colour when stdout is a terminal and NO_COLOR is unset).
    Text,
    /// The documented JSON contract (see README).
    Json,
    /// For issues and chat.
    Markdown,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Args)]
pub struct DiagnoseArgs {
    /// Logs to read: files, directories (searched recursively; binary files that are not
    /// compressed logs are skipped) and `-` for standard input; nothing reads standard
    /// input. Any size: each is streamed. Several logs are read in parallel and the same
    /// failure in many of them is reported once, with `file`, `files` and `occurrences`.
    #[arg(value_name = "PATH")]
    pub logs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Language of titles, causes and fixes: en or zh.
    #[arg(long, default_value = "en", value_parser = parse_lang)]
    pub lang: Lang,
    /// Colour in text output.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    /// XLA dump directory (`XLA_FLAGS=--xla_dump_to=DIR`) or `jax.profiler.trace` log
    /// directory: attach the failing module's peak and its largest buffers at the peak
    /// to each finding that names a module.
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
    /// PyTorch CUDA memory snapshot (`torch.cuda.memory._dump_snapshot()`): attach what
    /// was live at its OOM (or peak), by the user's call site, to each PyTorch finding.
    #[arg(long, value_name = "FILE")]
    pub snapshot: Option<PathBuf>,
    /// Keep reading one log as it grows (like `tail -f`) and print each failure as soon as
    /// its message is complete (with --format json: one finding object per line). Ctrl-C stops.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Logs read at once (default: every core).
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub post: super::post::PostArgs,
}

pub fn parse_lang(s: &str) -> Result<Lang, String> {
    Lang::parse(s).ok_or_else(|| format!("unknown language `{s}` (use en or zh)"))
}

fn color_for(args: &DiagnoseArgs) -> bool {
    match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

fn render_report(report: &Report, args: &DiagnoseArgs) -> String {
    match args.format {
        Format::Json => serde_json::to_string_pretty(report).expect("report serializes") + "\n",
        Format::Markdown => render::markdown(report, args.lang),
        Format::Text => render::text(report, args.lang, color_for(args)),
    }
}

/// One input: standard input or a file.
enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    /// The log's name in reports (`file`, `files`, `unreadable`): two files whose names
    /// differ only in bytes that are not UTF-8 keep different names ([`oomdoc_units::terminal::path_name`]).
    fn name(&self) -> String {
        match self {
            Input::Stdin => "-".into(),
            Input::File(p) => oomdoc_units::terminal::path_name(p),
        }
    }
}

pub fn run(args: DiagnoseArgs) -> Result<(), CliError> {
    if let Some(d) = &args.dump {
        if !d.exists() {
            return Err(CliError::usage(format!("--dump {}: no such file or directory", d.display())));
        }
    }
    let snapshot = match &args.snapshot {
        Some(p) => Some(std::sync::Arc::new(oomdoc_diagnose::snapshot::SnapshotInput::load(p).map_err(|e| CliError::usage(format!("--snapshot {e}")))?)),
        None => None,
    };
    let opts = Options { lang: args.lang, dump: args.dump.clone(), snapshot, ..Options::default() };
    if args.follow {
        if args.post.post.is_some() {
            return Err(CliError::usage("--post sends one report; it does not work with --follow".to_string()));
        }
        return follow(&args, &opts);
    }
    // One file or standard input: the single-log report, as always.
    let single = match args.logs.as_slice() {
        [] => Some(Input::Stdin),
        [p] if p.as_os_str() == "-" => Some(Input::Stdin),
        [p] if !p.is_dir() => Some(Input::File(p.clone())),
        _ => None,
    };
    let report = match single {
        Some(input) => read_one(&input, &opts).map_err(|e| CliError::usage(e.error))?,
        None => many(&args, &opts)?,
    };
    let mut stdout = io::stdout().lock();
    stdout.write_all(render_report(&report, &args).as_bytes())?;
    stdout.flush()?;
    if args.post.post.is_some() {
        let v = serde_json::to_value(&report).expect("report serializes");
        eprintln!("{}", super::post::post_report(&args.post, &v, None));
    }
    Ok(())
}

fn read_one(input: &Input, opts: &Options) -> Result<Report, Unreadable> {
    let fail = |e: io::Error| Unreadable { file: input.name(), error: format!("cannot read {}: {e}", display_name(input)) };
    match input {
        Input::Stdin => {
            check_stdin().map_err(fail)?;
            widen_stdin_pipe();
            diagnose_reader(io::stdin().lock(), opts).map_err(fail)
        }
        Input::File(p) => {
            // Compressed (gzip, zstd, xz, bzip2) and UTF-16 logs are decoded by the engine;
            // a plain one is searched through mapped windows.
            let r = File::open(p).map_err(fail)?;
            diagnose_file(r, opts).map_err(fail)
        }
    }
}

/// Standard input must be open (`oomdoc diagnose <&-` is an error, not an empty log); on a
/// terminal, a line on stderr says what oomdoc is waiting for.
fn check_stdin() -> io::Result<()> {
    // Rust's runtime opens a closed descriptor 0 on /dev/null at start: both mean no log.
    // SAFETY: fcntl and fstat only ask about descriptor 0.
    let closed = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fcntl(0, libc::F_GETFD) < 0 || (libc::fstat(0, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFCHR && st.st_rdev == libc::makedev(1, 3))
    };
    if closed {
        return Err(io::Error::new(io::ErrorKind::NotFound, "standard input is closed (or /dev/null); give a log file or pipe the log in"));
    }
    if io::stdin().is_terminal() {
        eprintln!("oomdoc: reading the log from standard input (paste it, then Ctrl-D; or give a file: oomdoc diagnose train.log)");
    }
    Ok(())
}

/// A log piped in (`cat train.log | oomdoc diagnose -`) moves through the pipe's buffer,
/// 64 KiB by default on Linux: one wake-up of each side per 64 KiB. A 1 MiB pipe (the
/// unprivileged maximum) cuts those wake-ups sixteenfold. Best effort: a refusal changes
/// nothing but speed.
fn widen_stdin_pipe() {
    #[cfg(target_os = "linux")]
    // SAFETY: fstat and fcntl on descriptor 0 only read and set the pipe's capacity.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(0, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFIFO {
            libc::fcntl(0, libc::F_SETPIPE_SZ, 1 << 20);
        }
    }
}

fn display_name(input: &Input) -> String {
    match input {
        Input::Stdin => "standard input".into(),
        Input::File(_) => input.name(),
    }
}

/// Every file under `dir`, sorted, skipping binary files; unreadable directories are noted.
fn walk(dir: &Path, files: &mut Vec<PathBuf>, unreadable: &mut Vec<Unreadable>, skipped: &mut usize, root: Option<&Path>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            unreadable.push(Unreadable { file: oomdoc_units::terminal::path_name(dir), error: e.to_string() });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        // Symlinked directories are not followed (no loops); symlinked files are read.
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            // A path too long for the system, and the like: listed, never silently left out.
            Err(e) => {
                unreadable.push(Unreadable { file: oomdoc_units::terminal::path_name(&p), error: e.to_string() });
                continue;
            }
        };
        if meta.is_dir() {
            walk(&p, files, unreadable, skipped, root);
            continue;
        }
        // Confined (`oomdoc mcp --root`): a link that leads outside is not followed.
        if let (Some(root), true) = (root, meta.file_type().is_symlink()) {
            if !std::fs::canonicalize(&p).is_ok_and(|real| real.starts_with(root)) {
                unreadable.push(Unreadable { file: oomdoc_units::terminal::path_name(&p), error: "a link that leads outside the directory this server may read".into() });
                continue;
            }
        }
        // What a link points to, stat'ed without opening it: opening a FIFO with no writer
        // blocks, and a device never ends. Only regular files are read.
        let target = if meta.file_type().is_symlink() { std::fs::metadata(&p) } else { Ok(meta) };
        match target {
            // A dangling link is kept: it is reported as unreadable, like a rotated-away log.
            Err(_) => files.push(p),
            Ok(t) if t.is_file() => {
                // A file that cannot be opened is kept, to be reported as unreadable.
                if File::open(&p).is_err() || input::is_probably_log(&p) {
                    files.push(p);
                } else {
                    *skipped += 1;
                }
            }
            // A directory behind a link, a FIFO, socket or device: left alone.
            Ok(_) => {}
        }
    }
}

fn many(args: &DiagnoseArgs, opts: &Options) -> Result<Report, CliError> {
    diagnose_paths(&args.logs, opts, args.jobs)
}

/// Diagnose files and directories (and `-`) as `oomdoc diagnose PATH…` does: one file
/// gives its own report; several, or a directory, the merged report. Unreadable files are
/// noted on stderr and in `unreadable`; an error only when nothing could be read.
pub fn diagnose_paths(logs: &[PathBuf], opts: &Options, jobs: Option<usize>) -> Result<Report, CliError> {
    diagnose_paths_within(logs, opts, jobs, None)
}

/// [`diagnose_paths`], reading nothing outside `root` through links in directories.
pub fn diagnose_paths_within(logs: &[PathBuf], opts: &Options, jobs: Option<usize>, root: Option<&Path>) -> Result<Report, CliError> {
    if let [p] = logs {
        if p.as_os_str() != "-" && !p.is_dir() {
            return read_one(&Input::File(p.clone()), opts).map_err(|e| CliError::usage(e.error));
        }
    }
    let mut inputs: Vec<Input> = Vec::new();
    let mut unreadable: Vec<Unreadable> = Vec::new();
    let mut skipped = 0usize;
    let mut stdin_seen = false;
    for p in logs {
        if p.as_os_str() == "-" {
            if !stdin_seen {
                inputs.push(Input::Stdin);
                stdin_seen = true;
            }
        } else if p.is_dir() {
            let mut files = Vec::new();
            walk(p, &mut files, &mut unreadable, &mut skipped, root);
            inputs.extend(files.into_iter().map(Input::File));
        } else if p.exists() || std::fs::symlink_metadata(p).is_ok() {
            inputs.push(Input::File(p.clone()));
        } else {
            return Err(CliError::usage(format!("cannot read {}: no such file or directory", p.display())));
        }
    }
    // The same file named twice, or reached through a link as well: read once.
    {
        use std::os::unix::fs::MetadataExt;
        let mut seen = HashSet::new();
        inputs.retain(|i| match i {
            Input::File(p) => std::fs::metadata(p).map_or(true, |m| seen.insert((m.dev(), m.ino()))),
            Input::Stdin => true,
        });
    }
    if inputs.is_empty() && !unreadable.is_empty() {
        // Nothing readable, but something was there: say what, not "no log files".
        let first = &unreadable[0];
        let more = if unreadable.len() > 1 { format!(" (and {} more)", unreadable.len() - 1) } else { String::new() };
        return Err(CliError::usage(format!("none of the logs could be read: {}: {}{more}", first.file, first.error)));
    }
    if inputs.is_empty() {
        let why = match skipped {
            0 => String::new(),
            1 => " (1 binary file skipped)".to_string(),
            n => format!(" ({n} binary files skipped)"),
        };
        return Err(CliError::usage(format!("no log files found in {}{why}", logs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))));
    }
    let total = inputs.len() + unreadable.len();
    let results = read_parallel(&inputs, opts, jobs);
    let mut reports = Vec::new();
    for (input, r) in inputs.iter().zip(results) {
        match r {
            Ok(rep) => reports.push((input.name(), rep)),
            Err(u) => unreadable.push(u),
        }
    }
    if reports.is_empty() {
        let first = unreadable.first().map(|u| u.error.clone()).unwrap_or_default();
        return Err(CliError::usage(format!("none of the {total} logs could be read ({first})")));
    }
    let mut report = merge_reports(reports);
    if !unreadable.is_empty() {
        let list: Vec<String> = unreadable.iter().take(3).map(|u| u.file.clone()).collect();
        let more = if unreadable.len() > 3 { ", …" } else { "" };
        let list = oomdoc_units::terminal::escape(&list.join(", ")).into_owned();
        eprintln!("oomdoc: note: {} of {total} logs could not be read and were left out: {list}{more}", unreadable.len());
    }
    report.unreadable.extend(unreadable);
    Ok(report)
}

/// A log at least this large is searched on all cores by itself (its parts share them)
/// rather than on one core beside other logs: one huge log among small ones would
/// otherwise run on one core long after the others finish.
const SPLIT_ACROSS_CORES: u64 = 32 << 20;

/// Diagnose every input, `jobs` at a time (default: every core); results in input order.
fn read_parallel(inputs: &[Input], opts: &Options, jobs: Option<usize>) -> Vec<Result<Report, Unreadable>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = jobs.unwrap_or(cores).clamp(1, inputs.len().max(1));
    let slots: Vec<Mutex<Option<Result<Report, Unreadable>>>> = inputs.iter().map(|_| Mutex::new(None)).collect();
    let store = |i: usize, r| *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    // Large logs first, one at a time on every core; then the rest in parallel, each
    // searched on one thread (a single log uses every core itself).
    let large = |input: &Input| workers > 1 && matches!(input, Input::File(p) if std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() >= SPLIT_ACROSS_CORES));
    let mut rest = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        if large(input) {
            store(i, read_one(input, opts));
        } else {
            rest.push(i);
        }
    }
    let opts = &Options { threads: if workers > 1 { 1 } else { opts.threads }, ..opts.clone() };
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..workers.min(rest.len()) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = rest.get(k) else { break };
                store(i, read_one(&inputs[i], opts));
            });
        }
    });
    slots
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()).unwrap_or_else(|| Err(Unreadable { file: String::new(), error: "not read".into() })))
        .collect()
}

/// Lines kept while following (a failure message with its report fits well inside).
const FOLLOW_WINDOW: usize = 4000;
/// Bytes kept while following, whatever the line lengths (1 MiB JSON records).
const FOLLOW_WINDOW_BYTES: usize = 32 << 20;
/// Longest line kept whole; a longer one keeps its first and last half of this.
const FOLLOW_LINE_MAX: usize = 1 << 20;
/// Lines after a message before it counts as complete (the scanner's quiet run).
const FOLLOW_QUIET_LINES: u64 = 10;
/// No new data for this long also completes a message (the job died mid-log).
const FOLLOW_IDLE: Duration = Duration::from_millis(700);

/// A line of at most [`FOLLOW_LINE_MAX`] bytes: an overlong one keeps its head and tail,
/// where a runtime puts its message, with ` … ` between.
fn cap_line(line: &mut Vec<u8>) {
    if line.len() > FOLLOW_LINE_MAX {
        let half = FOLLOW_LINE_MAX / 2;
        line.splice(half..line.len() - half, *b" \xe2\x80\xa6 ");
    }
}

/// Bytes kept of the start of a followed file, and of what was read last.
const FINGERPRINT: usize = 4096;

/// What the followed file held where it was read: its first bytes and the bytes just
/// before the read position. A file truncated and written again past the old position
/// between two polls (copytruncate, then a burst) never looks shorter; these bytes differ.
#[derive(Default)]
struct Fingerprint {
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Fingerprint {
    /// Note `bytes`, read at `at` (reads are in order, from 0).
    fn read(&mut self, at: u64, bytes: &[u8]) {
        if at == self.head.len() as u64 && self.head.len() < FINGERPRINT {
            let take = (FINGERPRINT - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
        }
        let keep = bytes.len().min(FINGERPRINT);
        let old = (FINGERPRINT - keep).min(self.tail.len());
        self.tail.drain(..self.tail.len() - old);
        self.tail.extend_from_slice(&bytes[bytes.len() - keep..]);
    }

    /// Whether `file`, read up to `pos`, still holds those bytes where they were.
    #[cfg(unix)]
    fn holds(&self, file: &File, pos: u64) -> bool {
        use std::os::unix::fs::FileExt;
        let same = |want: &[u8], at: u64| {
            let mut got = vec![0u8; want.len()];
            file.read_exact_at(&mut got, at).is_ok() && got == want
        };
        same(&self.head, 0) && same(&self.tail, pos - self.tail.len() as u64)
    }

    #[cfg(not(unix))]
    fn holds(&self, _file: &File, _pos: u64) -> bool {
        true
    }
}

/// `--follow`: read one file as it grows; print each failure once, when complete.
fn follow(args: &DiagnoseArgs, opts: &Options) -> Result<(), CliError> {
    let path = match args.logs.as_slice() {
        [p] if p.as_os_str() != "-" => p.clone(),
        _ => return Err(CliError::usage("--follow reads exactly one log file")),
    };
    // Checked before opening: opening a FIFO with no writer blocks.
    match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => return Err(CliError::usage(format!("--follow: {} is a directory, not a log file", path.display()))),
        Ok(m) if !m.is_file() => return Err(CliError::usage(format!("--follow needs a regular file; {} is not one (a pipe or device: use `oomdoc diagnose -` on a stream)", path.display()))),
        _ => {}
    }
    let mut file = File::open(&path).map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    let color = color_for(args);
    let mut window: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let mut window_bytes = 0usize;
    let mut base: u64 = 1; // line number of window[0]
    let mut partial: Vec<u8> = Vec::new();
    let mut printed: HashSet<(String, u64)> = HashSet::new();
    let mut pos: u64 = 0;
    let mut buf = vec![0u8; 1 << 20];
    let mut last_data = Instant::now();
    let mut dirty = false;
    let mut new_lines = 0usize;
    let mut new_bytes = 0usize;
    // The path names a new file (rename rotation): the old one is read to its end first,
    // so what was written just before the rename is not lost.
    let mut rotated = false;
    let mut seen = Fingerprint::default();
    let mut out = io::stdout();
    loop {
        if let Ok(meta) = std::fs::metadata(&path) {
            let replaced = file.metadata().map(|m| !same_file(&m, &meta)).unwrap_or(false);
            if replaced {
                rotated = true;
            } else if meta.len() < pos || (!rotated && pos > 0 && !seen.holds(&file, pos)) {
                // Truncated in place (copytruncate), perhaps already written past the old
                // position again: what was there is gone; start again at the top.
                seen = Fingerprint::default();
                pos = 0;
                window.clear();
                window_bytes = 0;
                base = 1;
                partial.clear();
                printed.clear();
            }
        }
        file.seek(SeekFrom::Start(pos))?;
        let n = file.read(&mut buf)?;
        if n > 0 {
            seen.read(pos, &buf[..n]);
            pos += n as u64;
            // Only the new bytes are searched for line ends: a long line costs its length once.
            let mut start = 0;
            for cut in memchr::memchr_iter(b'\n', &buf[..n]) {
                partial.extend_from_slice(&buf[start..cut]);
                cap_line(&mut partial);
                let line = String::from_utf8_lossy(&partial).into_owned();
                partial.clear();
                window_bytes += line.len();
                new_bytes += line.len();
                window.push_back(line);
                new_lines += 1;
                start = cut + 1;
            }
            partial.extend_from_slice(&buf[start..n]);
            if partial.len() > 2 * FOLLOW_LINE_MAX {
                cap_line(&mut partial);
            }
            last_data = Instant::now();
            dirty = true;
        }
        let drained_old = n == 0 && rotated;
        let idle = last_data.elapsed() >= FOLLOW_IDLE || drained_old;
        if dirty && (idle || new_lines >= 1000 || new_bytes >= FOLLOW_WINDOW_BYTES / 4) {
            let mut text: String = window.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n");
            if idle && !partial.is_empty() {
                text.push('\n');
                text.push_str(&String::from_utf8_lossy(&partial));
            }
            let report = diagnose_text(&text, opts);
            drop(text);
            let last_line = base + window.len() as u64 - 1;
            // What to keep afterwards: a short tail for context, not the printed messages,
            // and all of any message still being written.
            let mut keep_from = base + window.len().saturating_sub(16) as u64;
            let mut pending_from: Option<u64> = None;
            for mut f in report.findings {
                f.line += base - 1;
                f.end_line += base - 1;
                let complete = idle || last_line >= f.end_line + FOLLOW_QUIET_LINES;
                if !complete {
                    let from = f.line.saturating_sub(8).max(base);
                    pending_from = Some(pending_from.map_or(from, |p| p.min(from)));
                    continue;
                }
                keep_from = keep_from.max(f.end_line + 1);
                if !printed.insert((f.id.clone(), f.line)) {
                    continue;
                }
                f.first_fatal = false;
                let one = Report { findings: vec![f], ..Default::default() };
                let s = match args.format {
                    Format::Json => serde_json::to_string(&one.findings[0]).expect("serializes") + "\n",
                    Format::Markdown => render::markdown(&one, args.lang),
                    Format::Text => render::text(&one, args.lang, color) + "\n",
                };
                out.write_all(s.as_bytes())?;
                out.flush()?;
            }
            if let Some(p) = pending_from {
                keep_from = keep_from.min(p);
            }
            // Bounded whatever happens.
            if window.len() > FOLLOW_WINDOW {
                keep_from = keep_from.max(base + (window.len() - FOLLOW_WINDOW) as u64);
            }
            while !window.is_empty() && (base < keep_from || window_bytes > FOLLOW_WINDOW_BYTES) {
                if let Some(l) = window.pop_front() {
                    window_bytes -= l.len();
                }
                base += 1;
            }
            printed.retain(|(_, line)| *line >= base.saturating_sub(FOLLOW_WINDOW as u64));
            new_lines = 0;
            new_bytes = 0;
            if idle {
                dirty = false;
            }
        }
        if drained_old {
            // Everything of the old file has been read and printed: go on with the new one.
            if let Ok(f) = File::open(&path) {
                file = f;
                seen = Fingerprint::default();
                pos = 0;
                window.clear();
                window_bytes = 0;
                base = 1;
                partial.clear();
                printed.clear();
                rotated = false;
                continue;
            }
        }
        if n == 0 {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    true
}
