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
    fn name(&self) -> String {
        match self {
            Input::Stdin => "-".into(),
            Input::File(p) => p.display().to_string(),
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
        Input::File(p) => p.display().to_string(),
    }
}

/// Every file under `dir`, sorted, skipping binary files; unreadable directories are noted.
fn walk(dir: &Path, files: &mut Vec<PathBuf>, unreadable: &mut Vec<Unreadable>, skipped: &mut usize) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            unreadable.push(Unreadable { file: dir.display().to_string(), error: e.to_string() });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        // Symlinked directories are not followed (no loops); symlinked files are read.
        let Ok(meta) = std::fs::symlink_metadata(&p) else { continue };
        if meta.is_dir() {
            walk(&p, files, unreadable, skipped);
        } else if meta.is_file() || (meta.file_type().is_symlink() && !p.is_dir()) {
            // (A dangling link is kept: it is reported as unreadable, like a rotated-away log.)
            // A file that cannot be opened is kept, to be reported as unreadable.
            if File::open(&p).is_err() || input::is_probably_log(&p) {
                files.push(p);
            } else {
                *skipped += 1;
            }
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
            walk(p, &mut files, &mut unreadable, &mut skipped);
            inputs.extend(files.into_iter().map(Input::File));
        } else if p.exists() || std::fs::symlink_metadata(p).is_ok() {
            inputs.push(Input::File(p.clone()));
        } else {
            return Err(CliError::usage(format!("cannot read {}: no such file or directory", p.display())));
        }
    }
    if inputs.is_empty() {
        let why = if skipped > 0 { format!(" ({skipped} binary files skipped)") } else { String::new() };
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
        eprintln!("oomdoc: note: {} of {total} logs could not be read and were left out: {}{more}", unreadable.len(), list.join(", "));
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
/// Lines after a message before it counts as complete (the scanner's quiet run).
const FOLLOW_QUIET_LINES: u64 = 10;
/// No new data for this long also completes a message (the job died mid-log).
const FOLLOW_IDLE: Duration = Duration::from_millis(700);

/// `--follow`: read one file as it grows; print each failure once, when complete.
fn follow(args: &DiagnoseArgs, opts: &Options) -> Result<(), CliError> {
    let path = match args.logs.as_slice() {
        [p] if p.as_os_str() != "-" => p.clone(),
        _ => return Err(CliError::usage("--follow reads exactly one log file")),
    };
    if path.is_dir() {
        return Err(CliError::usage(format!("--follow: {} is a directory, not a log file", path.display())));
    }
    let mut file = File::open(&path).map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    let color = color_for(args);
    let mut window: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let mut base: u64 = 1; // line number of window[0]
    let mut partial: Vec<u8> = Vec::new();
    let mut printed: HashSet<(String, u64)> = HashSet::new();
    let mut pos: u64 = 0;
    let mut buf = vec![0u8; 1 << 20];
    let mut last_data = Instant::now();
    let mut dirty = false;
    let mut new_lines = 0usize;
    let mut out = io::stdout();
    loop {
        // Truncated or replaced (log rotation): start again from the top of the new file.
        if let Ok(meta) = std::fs::metadata(&path) {
            let replaced = file.metadata().map(|m| same_file(&m, &meta)).map(|s| !s).unwrap_or(false);
            if meta.len() < pos || replaced {
                if let Ok(f) = File::open(&path) {
                    file = f;
                    pos = 0;
                    window.clear();
                    base = 1;
                    partial.clear();
                    printed.clear();
                }
            }
        }
        file.seek(SeekFrom::Start(pos))?;
        let n = file.read(&mut buf)?;
        if n > 0 {
            pos += n as u64;
            partial.extend_from_slice(&buf[..n]);
            if let Some(cut) = partial.iter().rposition(|&b| b == b'\n') {
                let rest = partial.split_off(cut + 1);
                for l in partial[..cut].split(|&b| b == b'\n') {
                    window.push_back(String::from_utf8_lossy(l).into_owned());
                    new_lines += 1;
                }
                partial = rest;
            }
            last_data = Instant::now();
            dirty = true;
        }
        let idle = last_data.elapsed() >= FOLLOW_IDLE;
        if dirty && (idle || new_lines >= 1000) {
            let mut text: String = window.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n");
            if idle && !partial.is_empty() {
                text.push('\n');
                text.push_str(&String::from_utf8_lossy(&partial));
            }
            let report = diagnose_text(&text, opts);
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
            while base < keep_from && !window.is_empty() {
                window.pop_front();
                base += 1;
            }
            printed.retain(|(_, line)| *line >= base.saturating_sub(FOLLOW_WINDOW as u64));
            new_lines = 0;
            if idle {
                dirty = false;
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
