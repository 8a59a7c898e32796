//! `oomdoc run [OPTIONS] -- CMD [ARGS…]`: run a command, pass its output through
//! untouched, and diagnose it the moment it fails.
//!
//! - stdout and stderr pass through unchanged and unbuffered. When our stdout (or
//!   stderr) is a terminal, the child gets a pseudo-terminal for it, so colours and
//!   progress bars stay; otherwise (CI, `| tee`) plain pipes, byte for byte.
//! - A copy of every complete line goes through a bounded queue to the streaming
//!   scanner (`oomdoc_diagnose::diagnose_reader`) on its own thread: memory stays
//!   bounded whatever the command prints, and the command never waits for the scan. If
//!   the scan falls more than [`SCAN_BACKLOG`] behind, the oldest unscanned output is
//!   left out of it (never out of the pass-through), and the diagnosis says how much.
//! - Non-zero exit or a signal: the diagnosis (the `diagnose` text) goes to stderr after
//!   the command's own output; nothing is added on success. `--report FILE` always
//!   writes the JSON contract, plus `exit_status` and `signal`.
//! - Exit status is the command's (a signal N gives 128+N, like a shell); a command that
//!   cannot be started gives 127 and one line. SIGINT, SIGTERM, SIGHUP and SIGQUIT are
//!   forwarded to the child's process group, and oomdoc waits for it.
//! - `--post URL`: a failed command's report (the `--report` JSON) goes to a team server
//!   ([`super::post`]), after the diagnosis; posting never changes the exit status.
//! - Killed by SIGKILL (or exit status 137): the kernel's evidence is read where it is
//!   readable — cgroup v2 `memory.events` `oom_kill` before and after, `memory.max` of the
//!   cgroup and its parents, and `dmesg` when permitted — and a `host.oom-killer` finding
//!   is added, `certain` when proven, `likely` otherwise.

use super::diagnose::{parse_lang, ColorChoice};
use clap::Args;
use oomdoc_diagnose::{diagnose_reader, diagnose_text, evidence_finding, render, Confidence, Finding, Lang, Options, Report, SizeKey};
use oomdoc_units::format_bytes;
use std::ffi::OsString;
use std::io::{self, IsTerminal, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::collections::VecDeque;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Condvar, Mutex};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args)]
#[command(trailing_var_arg = true)]
pub struct RunArgs {
    /// Write the JSON report (the `diagnose --format json` contract, plus `exit_status` and
    /// `signal`) to FILE, whether the command fails or not.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Make XLA dump its HLO (appends `--xla_dump_to=<temp dir> --xla_dump_hlo_as_proto` to
    /// XLA_FLAGS) and attach the failing module's memory at its peak, as `diagnose --dump` does.
    #[arg(long)]
    pub xla_dump: bool,
    /// With --xla-dump: dump into DIR and keep it (the temporary dump is removed otherwise).
    #[arg(long, value_name = "DIR")]
    pub keep_dump: Option<PathBuf>,
    /// Make a Python child record PyTorch's CUDA allocation history (bounded; its
    /// sitecustomize arms it when torch is imported) and dump a snapshot at the OOM; attach
    /// what was live, by call site, as `diagnose --snapshot` does, and keep the snapshot
    /// (next to --report, else in the temp directory printed).
    #[arg(long)]
    pub record_snapshot: bool,
    /// Never give the command a pseudo-terminal (plain pipes even on a terminal).
    #[arg(long)]
    pub no_pty: bool,
    /// Language of the diagnosis: en or zh.
    #[arg(long, default_value = "en", value_parser = parse_lang)]
    pub lang: Lang,
    /// Colour in the diagnosis (auto: when stderr is a terminal and NO_COLOR is unset).
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    #[command(flatten)]
    pub post: super::post::PostArgs,
    /// The command and its arguments, after `--`.
    #[arg(required = true, num_args = 1.., allow_hyphen_values = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Largest piece of output sent to the scanner at once (a longer line is cut there).
const MAX_PIECE: usize = 1 << 20;
/// Most bytes of output waiting for the scanner. The command's output never waits for
/// the scan (that would slow the command); past this, the oldest waiting output is left
/// out of the scan.
const SCAN_BACKLOG: usize = 32 << 20;
/// After the child exits, how long output still held open by its own children may pause
/// before oomdoc stops waiting for it.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// `DRAIN_GRACE`, or `OOMDOC_RUN_DRAIN_GRACE_MS` where set (tests stretch it to minutes, so
/// that "ended when the output closed, not after the grace" is told without a clock).
fn drain_grace() -> Duration {
    std::env::var("OOMDOC_RUN_DRAIN_GRACE_MS").ok().and_then(|v| v.parse().ok()).map(Duration::from_millis).unwrap_or(DRAIN_GRACE)
}

/// The longest oomdoc keeps passing through output of processes that outlive the command
/// (as long as they keep writing; [`drain_grace`] of silence ends it sooner).
const DRAIN_MAX: Duration = Duration::from_secs(300);
/// Bytes passed through so far, on every stream: the drain after the command's exit
/// goes on while this moves.
static PASSED_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

static CHILD_PGID: AtomicI32 = AtomicI32::new(0);
static PTY_MASTER: AtomicI32 = AtomicI32::new(-1);
/// A signal that arrived before the child had its process group, forwarded once it does.
static PENDING_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let pg = CHILD_PGID.load(Ordering::SeqCst);
    if pg > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(-pg, sig) };
    } else {
        PENDING_SIGNAL.store(sig, Ordering::SeqCst);
    }
}

extern "C" fn forward_winch(_sig: libc::c_int) {
    let m = PTY_MASTER.load(Ordering::SeqCst);
    if m >= 0 {
        copy_winsize(libc::STDOUT_FILENO, m);
    }
}

/// The window size of our terminal (stdout, else stderr) onto the command's pty.
fn copy_winsize(from: RawFd, to: RawFd) {
    // SAFETY: plain ioctls on file descriptors with a properly sized struct.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(from, libc::TIOCGWINSZ, &mut ws) == 0 || libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) == 0 {
            libc::ioctl(to, libc::TIOCSWINSZ, &ws);
        }
    }
}

fn install(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: installs a handler that only calls async-signal-safe functions.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0; // no SA_RESTART: waitpid returns EINTR and is retried
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// A pseudo-terminal: (master, slave).
fn open_pty() -> io::Result<(OwnedFd, OwnedFd)> {
    // SAFETY: standard POSIX pty calls; every returned descriptor is checked and owned.
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        if m < 0 {
            return Err(io::Error::last_os_error());
        }
        let master = OwnedFd::from_raw_fd(m);
        libc::fcntl(m, libc::F_SETFD, libc::FD_CLOEXEC);
        if libc::grantpt(m) != 0 || libc::unlockpt(m) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut name = [0 as libc::c_char; 256];
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if libc::ptsname_r(m, name.as_mut_ptr(), name.len()) != 0 {
            return Err(io::Error::last_os_error());
        }
        // macOS and the BSDs: ptsname (no other thread calls it; oomdoc has none yet).
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let p = libc::ptsname(m);
            if p.is_null() {
                return Err(io::Error::last_os_error());
            }
            let bytes = std::ffi::CStr::from_ptr(p).to_bytes_with_nul();
            if bytes.len() > name.len() {
                return Err(io::Error::new(io::ErrorKind::Other, "pty name too long"));
            }
            for (d, s) in name.iter_mut().zip(bytes) {
                *d = *s as libc::c_char;
            }
        }
        let s = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if s < 0 {
            return Err(io::Error::last_os_error());
        }
        copy_winsize(libc::STDOUT_FILENO, m);
        // No "\n" → "\r\n" in the pty: our own terminal does that once, as without oomdoc.
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(s, &mut t) == 0 {
            t.c_oflag &= !libc::ONLCR;
            libc::tcsetattr(s, libc::TCSANOW, &t);
        }
        Ok((master, OwnedFd::from_raw_fd(s)))
    }
}

/// Where one stream of the child's output goes.
struct Source {
    reader: std::fs::File,
    /// 1 (our stdout) or 2 (our stderr).
    dest: RawFd,
    pty: bool,
}

/// Copy one stream: to our own descriptor at once (no buffering), and complete lines to the scanner.
fn pass_through(mut src: Source, scan: Arc<ScanQueue>, done: SyncSender<()>) {
    // Write straight to the descriptor: std's stdout is line-buffered, which would hold back
    // a progress bar's carriage-return redraws.
    // SAFETY: the descriptor stays open for the life of the process; ManuallyDrop never closes it.
    let mut out = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(src.dest) });
    let mut buf = vec![0u8; 64 << 10];
    let mut pending: Vec<u8> = Vec::new();
    let mut writing = true;
    let mut scanning = true;
    loop {
        let n = match src.reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // A pty master reads EIO once every slave is closed: that is its end of file.
            Err(e) if src.pty && e.raw_os_error() == Some(libc::EIO) => break,
            Err(_) => break,
        };
        let data = &buf[..n];
        PASSED_BYTES.fetch_add(n as u64, Ordering::Relaxed);
        if writing && out.write_all(data).is_err() {
            // Our reader went away (`oomdoc run -- cmd | head`): stop reading this stream
            // too, so the command sees the closed pipe as it would without oomdoc.
            writing = false;
            if !src.pty {
                break;
            }
        }
        if scanning {
            pending.extend_from_slice(data);
            let cut = if pending.len() >= MAX_PIECE { Some(pending.len()) } else { memchr::memrchr(b'\n', &pending).map(|i| i + 1) };
            if let Some(cut) = cut {
                let rest = pending.split_off(cut);
                if !scan.push(std::mem::replace(&mut pending, rest)) {
                    scanning = false;
                    pending.clear();
                }
            }
        }
    }
    if scanning && !pending.is_empty() {
        pending.push(b'\n');
        scan.push(pending);
    }
    scan.sender_done();
    let _ = done.send(());
}

/// Output on its way from the pass-through threads to the scanner: complete lines, in
/// order, at most `budget` bytes. Adding never waits, so the command is never slowed by
/// the scan; when the scan falls further behind than the budget, the oldest waiting
/// pieces are dropped and counted (a failure is printed last: the newest output is the
/// one to keep).
struct ScanQueue {
    state: Mutex<QueueState>,
    ready: Condvar,
    budget: usize,
}

#[derive(Default)]
struct QueueState {
    pieces: VecDeque<Vec<u8>>,
    bytes: usize,
    /// Pass-through threads still adding.
    senders: usize,
    /// The scanner stopped reading.
    reader_gone: bool,
    dropped_bytes: u64,
    dropped_lines: u64,
}

impl ScanQueue {
    fn new(senders: usize, budget: usize) -> Arc<ScanQueue> {
        Arc::new(ScanQueue { state: Mutex::new(QueueState { senders, ..QueueState::default() }), ready: Condvar::new(), budget })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a piece, dropping the oldest waiting ones past the budget; false once the
    /// scanner is gone.
    fn push(&self, piece: Vec<u8>) -> bool {
        let mut s = self.lock();
        if s.reader_gone {
            return false;
        }
        s.bytes += piece.len();
        s.pieces.push_back(piece);
        while s.bytes > self.budget && s.pieces.len() > 1 {
            let old = s.pieces.pop_front().expect("a waiting piece");
            s.bytes -= old.len();
            s.dropped_bytes += old.len() as u64;
            s.dropped_lines += memchr::memchr_iter(b'\n', &old).count() as u64;
        }
        drop(s);
        self.ready.notify_one();
        true
    }

    fn sender_done(&self) {
        self.lock().senders -= 1;
        self.ready.notify_one();
    }

    /// The next piece; None once every sender is done and nothing waits, or when `stop`
    /// is set (the child exited but something still holds its output open).
    fn pop(&self, stop: &AtomicBool) -> Option<Vec<u8>> {
        let mut s = self.lock();
        loop {
            if let Some(p) = s.pieces.pop_front() {
                s.bytes -= p.len();
                return Some(p);
            }
            if s.senders == 0 || stop.load(Ordering::SeqCst) {
                return None;
            }
            s = self.ready.wait_timeout(s, Duration::from_millis(100)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// What was left out of the scan, for the report's notes.
    fn dropped_note(&self) -> Option<String> {
        let s = self.lock();
        (s.dropped_bytes > 0).then(|| {
            format!(
                "the scan fell behind the command's output by more than {} MiB, so {} lines ({}) of it were passed through but not diagnosed; line numbers after that count only the lines scanned",
                self.budget >> 20,
                s.dropped_lines,
                format_bytes(s.dropped_bytes)
            )
        })
    }
}

/// The scanner's side of the queue, as a reader.
struct QueueReader {
    queue: Arc<ScanQueue>,
    cur: Vec<u8>,
    pos: usize,
    stop: Arc<AtomicBool>,
}

impl Read for QueueReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.cur.len() {
            match self.queue.pop(&self.stop) {
                Some(v) => {
                    self.cur = v;
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.cur.len() - self.pos);
        out[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Drop for QueueReader {
    fn drop(&mut self) {
        let mut s = self.queue.lock();
        s.reader_gone = true;
        s.pieces.clear();
        s.bytes = 0;
    }
}

/// How the child ended.
#[derive(Clone, Copy, Debug)]
enum Ended {
    Exited(i32),
    Signaled(i32),
}

impl Ended {
    fn shell_status(self) -> u8 {
        match self {
            Ended::Exited(c) => (c & 0xff) as u8,
            Ended::Signaled(s) => (128 + s).min(255) as u8,
        }
    }
    fn failed(self) -> bool {
        !matches!(self, Ended::Exited(0))
    }
    /// SIGKILL, or a wrapper (shell, launcher) that reports its child's SIGKILL as 137.
    fn killed(self) -> bool {
        matches!(self, Ended::Signaled(libc::SIGKILL) | Ended::Exited(137))
    }
}

/// Wait for the child. With the terminal (`foreground`), job control works as in a shell:
/// when Ctrl-Z stops the command, oomdoc takes the terminal back and stops too; when the
/// shell resumes oomdoc (`fg`), the command gets the terminal and SIGCONT. Without the
/// terminal, or for a stop that is not the terminal's, oomdoc never stops itself.
fn wait_child(pid: libc::pid_t, foreground: bool) -> io::Result<Ended> {
    loop {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        if r == pid {
            if libc::WIFEXITED(status) {
                return Ok(Ended::Exited(libc::WEXITSTATUS(status)));
            }
            if libc::WIFSIGNALED(status) {
                return Ok(Ended::Signaled(libc::WTERMSIG(status)));
            }
            // Ctrl-Z (or a read or write of the terminal from the background) stopped the
            // command: stop with it, as a shell's job would. Any other stop (SIGSTOP from a
            // scheduler's suspend, `kill -STOP`, a debugger) is resumed by whoever sent it;
            // oomdoc keeps waiting and passing output through.
            let from_terminal = matches!(libc::WSTOPSIG(status), libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU);
            if libc::WIFSTOPPED(status) && foreground && from_terminal {
                // SAFETY: terminal and signal calls on our own process group and the child's.
                unsafe {
                    libc::tcsetpgrp(0, libc::getpgrp());
                    libc::kill(libc::getpid(), libc::SIGSTOP);
                    libc::tcsetpgrp(0, pid);
                    libc::kill(-pid, libc::SIGCONT);
                }
            }
            continue;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Runs the command; returns the exit status to give (the command's own).
pub fn run(args: RunArgs) -> u8 {
    match run_inner(args) {
        Ok(code) => code,
        Err((code, msg)) => {
            eprintln!("oomdoc: {}", oomdoc_units::terminal::escape(&msg));
            code
        }
    }
}

fn display_cmd(cmd: &[OsString]) -> String {
    let s = cmd.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ");
    let s = s.replace('\n', " ");
    if s.chars().count() > 80 {
        s.chars().take(79).collect::<String>() + "…"
    } else {
        s
    }
}

/// A regular file's identity and state, to tell whether someone wrote to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

impl FileStamp {
    fn of(m: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp { dev: m.dev(), ino: m.ino(), len: m.len(), mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128 }
    }
}

/// The `--report` file, checked before the command starts (not hours later), and never
/// the command's own log.
struct ReportFile {
    path: PathBuf,
    /// The regular file as it was when the run started.
    at_start: Option<FileStamp>,
}

impl ReportFile {
    /// Refuses a path that cannot be written, and one where the command's stdout or stderr
    /// already goes (`--report out.log … > out.log`, a hard link included). A missing file
    /// is created (empty) now, which proves its directory writable.
    fn prepare(path: &Path) -> Result<ReportFile, String> {
        use std::os::unix::fs::MetadataExt;
        let cannot = |e: &dyn std::fmt::Display| format!("cannot write the report {}: {e}", path.display());
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                std::fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| cannot(&e))?;
                std::fs::metadata(path).map_err(|e| cannot(&e))?
            }
            Err(e) => return Err(cannot(&e)),
        };
        if meta.is_dir() {
            return Err(cannot(&"it is a directory"));
        }
        for (fd, name) in [(libc::STDOUT_FILENO, "standard output"), (libc::STDERR_FILENO, "standard error")] {
            // SAFETY: fstat on our own descriptor into a zeroed struct.
            let same = unsafe {
                let mut st: libc::stat = std::mem::zeroed();
                libc::fstat(fd, &mut st) == 0 && st.st_dev as u64 == meta.dev() && st.st_ino as u64 == meta.ino()
            };
            if same && meta.is_file() {
                return Err(format!(
                    "--report {}: the command's {name} goes to this file, and the report would replace that log; choose another path (nothing was run)",
                    path.display()
                ));
            }
        }
        std::fs::OpenOptions::new().append(true).open(path).map_err(|e| cannot(&e))?;
        Ok(ReportFile { path: path.to_path_buf(), at_start: meta.is_file().then(|| FileStamp::of(&meta)) })
    }

    /// Writes the report, unless the command wrote to this file during the run (it is the
    /// command's log): then nothing is overwritten and the error says so.
    fn write(&self, text: &str) -> Result<(), String> {
        if let (Some(start), Ok(now)) = (self.at_start, std::fs::metadata(&self.path)) {
            if now.is_file() && FileStamp::of(&now) != start {
                return Err(format!(
                    "the report was not written to {}: the file changed during the run (the command writes to it?), and the report would have replaced it; choose another --report path",
                    self.path.display()
                ));
            }
        }
        std::fs::write(&self.path, text).map_err(|e| format!("cannot write the report {}: {e}", self.path.display()))
    }
}

fn run_inner(args: RunArgs) -> Result<u8, (u8, String)> {
    let shown = display_cmd(&args.command);
    // Checked before the command runs, which may take hours.
    let report_file = match &args.report {
        Some(p) => Some(ReportFile::prepare(p).map_err(|e| (2, e))?),
        None => None,
    };
    // The dump directory, when asked for.
    let want_dump = args.xla_dump || args.keep_dump.is_some();
    let dump_dir: Option<(PathBuf, bool)> = if want_dump {
        let (dir, keep) = match &args.keep_dump {
            Some(d) => (d.clone(), true),
            None => {
                let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
                (std::env::temp_dir().join(format!("oomdoc-xla-dump-{}-{nanos}", std::process::id())), false)
            }
        };
        std::fs::create_dir_all(&dir).map_err(|e| (2, format!("cannot create the dump directory {}: {e}", dir.display())))?;
        Some((dir, keep))
    } else {
        None
    };

    let recording = if args.record_snapshot { Some(super::record::Recording::prepare().map_err(|e| (2, e))?) } else { None };

    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    if let Some(r) = &recording {
        r.arm(&mut cmd);
    }
    if let Some((dir, _)) = &dump_dir {
        // Appended to the user's own flags, kept byte for byte.
        let mut flags = std::env::var_os("XLA_FLAGS").unwrap_or_default();
        if !flags.to_string_lossy().trim().is_empty() {
            flags.push(" ");
        }
        flags.push("--xla_dump_to=");
        flags.push(dir.as_os_str());
        flags.push(" --xla_dump_hlo_as_proto");
        cmd.env("XLA_FLAGS", flags);
    }

    // Pseudo-terminals for the streams that go to a terminal; one shared when both do.
    let out_tty = !args.no_pty && io::stdout().is_terminal();
    let err_tty = !args.no_pty && io::stderr().is_terminal();
    let mut sources: Vec<Source> = Vec::new();
    let mut slave_keep: Option<OwnedFd> = None;
    let pty_for = |sources: &mut Vec<Source>, dest: RawFd| -> Option<OwnedFd> {
        let (m, s) = open_pty().ok()?;
        PTY_MASTER.store(m.as_raw_fd(), Ordering::SeqCst);
        sources.push(Source { reader: std::fs::File::from(m), dest, pty: true });
        Some(s)
    };
    if out_tty {
        if let Some(s) = pty_for(&mut sources, libc::STDOUT_FILENO) {
            cmd.stdout(Stdio::from(s.try_clone().map_err(|e| (2, e.to_string()))?));
            if err_tty {
                cmd.stderr(Stdio::from(s.try_clone().map_err(|e| (2, e.to_string()))?));
            } else {
                cmd.stderr(Stdio::piped());
            }
            slave_keep = Some(s);
        } else {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
    } else if err_tty {
        cmd.stdout(Stdio::piped());
        match pty_for(&mut sources, libc::STDERR_FILENO) {
            Some(s) => {
                cmd.stderr(Stdio::from(s.try_clone().map_err(|e| (2, e.to_string()))?));
                slave_keep = Some(s);
            }
            None => {
                cmd.stderr(Stdio::piped());
            }
        }
    } else {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }

    // Its own process group, in the terminal's foreground when we are (so it can read the
    // terminal and Ctrl-C reaches it directly).
    // SAFETY: isatty/tcgetpgrp/getpgrp are plain queries.
    let stdin_fg = unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() };
    // The job's own memory cgroup where one can be made: its OOM kills are then told from
    // others' however fast its processes come and go.
    let before = KernelState::read();
    let job_cgroup = memory_cgroup().and_then(|(dir, events, key, _)| {
        super::job_cgroup::JobCgroup::create(&dir, events, key, before.limit.as_ref().map(|(b, f)| (*b, f.as_path())))
    });
    let cgroup_fd = job_cgroup.as_ref().map(|c| c.procs_fd());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(fd) = cgroup_fd {
                super::job_cgroup::enter(fd);
            }
            libc::setpgid(0, 0);
            if stdin_fg {
                libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                libc::tcsetpgrp(0, libc::getpid());
                libc::signal(libc::SIGTTOU, libc::SIG_DFL);
            }
            Ok(())
        });
    }

    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        install(sig, forward_signal);
    }
    let started = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            if let Some((dir, false)) = &dump_dir {
                let _ = std::fs::remove_dir_all(dir);
            }
            if let Some(r) = &recording {
                r.discard();
            }
            let msg = format!("cannot run `{shown}`: {e}");
            if let Some(file) = &report_file {
                let mut v = serde_json::to_value(Report::default()).expect("report serializes");
                if let Some(o) = v.as_object_mut() {
                    o.insert("exit_status".into(), 127.into());
                    o.insert("signal".into(), serde_json::Value::Null);
                    o.insert("error".into(), msg.clone().into());
                }
                let _ = file.write(&(serde_json::to_string_pretty(&v).expect("serializes") + "\n"));
            }
            return Err((127, msg));
        }
    };
    // The Command holds its copies of the pty slave: drop them, so the master reads end of
    // file as soon as the command (and whatever it started) has closed its own.
    drop(cmd);
    let pid = child.id() as libc::pid_t;
    // SAFETY: the child is ours; setpgid here too closes the race with its own call.
    unsafe { libc::setpgid(pid, pid) };
    CHILD_PGID.store(pid, Ordering::SeqCst);
    if stdin_fg {
        // SAFETY: SIGTTOU ignored while we hand the terminal to the child's group.
        unsafe {
            libc::signal(libc::SIGTTOU, libc::SIG_IGN);
            libc::tcsetpgrp(0, pid);
        }
    }
    // Which processes belong to the job, for telling its OOM kills from others' in a shared cgroup.
    let tree = JobTree::watch(pid);
    let job_cgroup = job_cgroup.filter(|c| c.holds(pid));
    let pending = PENDING_SIGNAL.swap(0, Ordering::SeqCst);
    if pending > 0 {
        // SAFETY: signalling the child's own process group.
        unsafe { libc::kill(-pid, pending) };
    }
    if !sources.is_empty() {
        install(libc::SIGWINCH, forward_winch);
    }
    drop(slave_keep); // only the child holds the pty slave now: its end is our end of file
    if let Some(o) = child.stdout.take() {
        sources.push(Source { reader: std::fs::File::from(OwnedFd::from(o)), dest: libc::STDOUT_FILENO, pty: false });
    }
    if let Some(e) = child.stderr.take() {
        sources.push(Source { reader: std::fs::File::from(OwnedFd::from(e)), dest: libc::STDERR_FILENO, pty: false });
    }

    // The scanner thread and one pass-through thread per stream.
    let queue = ScanQueue::new(sources.len(), SCAN_BACKLOG);
    let stop = Arc::new(AtomicBool::new(false));
    // The dump is read when the scan finishes, after the command has exited and written it,
    // so its buffers count in the facts and fixes as with `diagnose --dump`.
    let mut opts_scan = Options { lang: args.lang, threads: 1, ..Options::default() };
    opts_scan.dump = dump_dir.as_ref().map(|(d, _)| d.clone());
    opts_scan.snapshot_dir = recording.as_ref().map(|r| r.snapshots.clone());
    let reader = QueueReader { queue: queue.clone(), cur: Vec::new(), pos: 0, stop: stop.clone() };
    let scanner = std::thread::spawn(move || diagnose_reader(reader, &opts_scan));
    let (done_tx, done_rx) = sync_channel::<()>(sources.len());
    let n_sources = sources.len();
    for s in sources {
        let queue = queue.clone();
        let done = done_tx.clone();
        std::thread::spawn(move || pass_through(s, queue, done));
    }
    drop(done_tx);

    let ended = wait_child(pid, stdin_fg).map_err(|e| (2, format!("waiting for `{shown}`: {e}")))?;
    let elapsed = started.elapsed();
    CHILD_PGID.store(0, Ordering::SeqCst);
    if stdin_fg {
        // SAFETY: take the terminal back for our own group.
        unsafe { libc::tcsetpgrp(0, libc::getpgrp()) };
    }
    // Processes the command started may outlive it and keep writing to its output: pass
    // that through (and scan it) until they close it, as long as output keeps coming
    // (the grace of silence), at most DRAIN_MAX.
    let drain_note = drain_outliving(&done_rx, n_sources, drain_grace(), DRAIN_MAX, &shown);
    stop.store(true, Ordering::SeqCst);
    tree.stop();
    // A command that succeeded, with no report asked for: nothing will be printed, so the
    // scan still catching up (a flood of lines) is not waited for.
    if !ended.failed() && report_file.is_none() {
        if let Some(n) = &drain_note {
            eprintln!("oomdoc: note: {}", oomdoc_units::terminal::escape(n));
        }
        if let Some((dir, false)) = &dump_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some(kept) = recording.as_ref().and_then(|r| r.finish(None)) {
            eprintln!("oomdoc: note: PyTorch memory snapshot recorded in {}", oomdoc_units::terminal::escape(&kept.display().to_string()));
        }
        return Ok(ended.shell_status());
    }
    let mut report = match scanner.join() {
        Ok(Ok(r)) => r,
        _ => Report::default(),
    };
    report.notes.extend(drain_note.clone());
    report.notes.extend(queue.dropped_note());
    let after = KernelState::read();

    // The kernel's evidence for a SIGKILL.
    let opts = Options { lang: args.lang, threads: 1, ..Options::default() };
    // Killed by SIGKILL, or failed after the OOM killer struck in our cgroup during the run
    // (a launcher such as torchrun exits 1 when a worker it started is OOM-killed).
    let job_kills = job_cgroup.as_ref().and_then(|c| c.oom_kills());
    let oom_counted = matches!((before.oom_kill, after.oom_kill), (Some(b), Some(a)) if a > b) || job_kills.is_some_and(|n| n > 0);
    if ended.killed() || (ended.failed() && oom_counted) {
        let job = Job { pids: tree.pids(), cgroup: job_cgroup.as_ref(), kills: job_kills };
        if let Some(n) = add_kill_finding(&mut report, ended, pid, &job, &before, &after, &shown, &opts) {
            report.notes.push(n);
        }
    }
    if let Some(r) = &recording {
        let keep_in = args.report.as_deref().map(|p| p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")));
        let attached = oomdoc_diagnose::snapshot::newest_in(&r.snapshots);
        if let Some(kept) = r.finish(keep_in) {
            // The findings name the snapshot where it now lies.
            let (was, now) = (attached.map(|p| p.display().to_string()), kept.display().to_string());
            for f in &mut report.findings {
                if let Some(m) = f.memory.as_mut().and_then(|m| m.as_object_mut()) {
                    if m.get("snapshot").and_then(|v| v.as_str()) == was.as_deref() {
                        m.insert("snapshot".into(), now.clone().into());
                    }
                }
            }
            report.notes.push(format!("PyTorch memory snapshot recorded at the failure: {now}"));
        }
    }
    let code = ended.shell_status();
    let mut note = None;
    let mut v = serde_json::to_value(&report).expect("report serializes");
    if let Some(o) = v.as_object_mut() {
        o.insert("exit_status".into(), code.into());
        o.insert("signal".into(), match ended {
            Ended::Signaled(s) => s.into(),
            _ => serde_json::Value::Null,
        });
        o.insert("seconds".into(), serde_json::json!((elapsed.as_secs_f64() * 1000.0).round() / 1000.0));
    }
    if let Some(file) = &report_file {
        let text = serde_json::to_string_pretty(&v).expect("serializes") + "\n";
        if let Err(e) = file.write(&text) {
            note = Some(e);
        }
    }
    // `oomdoc run -- cmd | head`: the command ended by SIGPIPE when its reader left is no
    // failure to explain (a shell prints nothing either), unless its output held one.
    let sigpipe_quiet = matches!(ended, Ended::Signaled(libc::SIGPIPE)) && report.findings.is_empty();
    if ended.failed() && !sigpipe_quiet {
        let color = match args.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        };
        let zh = args.lang == Lang::Zh;
        let how = match (ended, zh) {
            (Ended::Exited(c), false) => format!("exited with status {c}"),
            (Ended::Signaled(s), false) => format!("was killed by {} (status {code})", signal_name(s)),
            (Ended::Exited(c), true) => format!("以状态 {c} 退出"),
            (Ended::Signaled(s), true) => format!("被 {} 终止（状态 {code}）", signal_name(s)),
        };
        let mut err = io::stderr().lock();
        let _ = writeln!(err, "\n── oomdoc: `{}` {how} ──", oomdoc_units::terminal::escape(&shown));
        let _ = err.write_all(render::text(&report, args.lang, color).as_bytes());
        if let Some((dir, true)) = &dump_dir {
            let _ = writeln!(err, "XLA dump kept in {}", dir.display());
        }
        let _ = err.flush();
    }
    if let Some(n) = note {
        eprintln!("oomdoc: {}", oomdoc_units::terminal::escape(&n));
    }
    // Said even on success (the diagnosis, with its notes, is printed only on failure).
    if let (Some(n), false) = (&drain_note, ended.failed()) {
        eprintln!("oomdoc: note: {}", oomdoc_units::terminal::escape(n));
    }
    // A failed job reports itself to the team server; the exit status stays the job's.
    if ended.failed() && !sigpipe_quiet && args.post.post.is_some() {
        eprintln!("{}", super::post::post_report(&args.post, &v, Some(i64::from(code))));
    }
    if let Some((dir, false)) = &dump_dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    Ok(code)
}

/// After the command exited: wait for every stream to close, while output keeps coming
/// (no output for `grace` ends it) and for at most `max`. A note when it ended with a
/// stream still open: the rest of that output is neither shown nor diagnosed.
fn drain_outliving(done: &Receiver<()>, streams: usize, grace: Duration, max: Duration, shown: &str) -> Option<String> {
    let start = Instant::now();
    let mut closed = 0;
    let mut seen = PASSED_BYTES.load(Ordering::Relaxed);
    let mut quiet_since = Instant::now();
    while closed < streams {
        match done.recv_timeout(Duration::from_millis(50)) {
            Ok(()) => {
                closed += 1;
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = PASSED_BYTES.load(Ordering::Relaxed);
        if now != seen {
            seen = now;
            quiet_since = Instant::now();
        }
        let why = if quiet_since.elapsed() >= grace {
            format!("after {:.1} s without output", grace.as_secs_f64())
        } else if start.elapsed() >= max {
            format!("after {} s", max.as_secs())
        } else {
            continue;
        };
        return Some(format!(
            "`{shown}` exited, but a process it started still holds its output open; oomdoc stopped passing that output through {why} (what it writes later is neither shown nor diagnosed)"
        ));
    }
    None
}

fn signal_name(s: i32) -> String {
    let name = match s {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGHUP => "SIGHUP",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGPIPE => "SIGPIPE",
        _ => return format!("signal {s}"),
    };
    name.to_string()
}

/// The processes of the job: the command, its process group and everything descended
/// from it, sampled from /proc while it runs (a process the OOM killer kills has been
/// alive long enough to grow; sampling misses only the very short-lived).
struct JobTree {
    pids: Arc<std::sync::Mutex<std::collections::HashSet<i32>>>,
    done: Arc<AtomicBool>,
}

/// Most pids remembered (a fork bomb must not grow this without bound).
const JOB_TREE_MAX: usize = 1 << 16;

impl JobTree {
    fn watch(root: i32) -> JobTree {
        let pids = Arc::new(std::sync::Mutex::new(std::collections::HashSet::from([root])));
        let done = Arc::new(AtomicBool::new(false));
        let (p, d) = (pids.clone(), done.clone());
        std::thread::spawn(move || {
            while !d.load(Ordering::Relaxed) {
                let found = job_processes(root, &p.lock().map(|s| s.clone()).unwrap_or_default());
                if let Ok(mut set) = p.lock() {
                    for pid in found {
                        if set.len() >= JOB_TREE_MAX {
                            break;
                        }
                        set.insert(pid);
                    }
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        JobTree { pids, done }
    }

    fn stop(&self) {
        self.done.store(true, Ordering::Relaxed);
    }

    fn pids(&self) -> std::collections::HashSet<i32> {
        self.pids.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// Processes now in `pgid`'s process group or descended from a process in `known`.
fn job_processes(pgid: i32, known: &std::collections::HashSet<i32>) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    // pid → (parent, process group), from /proc/PID/stat: "pid (comm) state ppid pgrp …"
    // (comm may hold spaces and parentheses: fields are counted after the last ')').
    let mut procs: Vec<(i32, i32, i32)> = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        let mut f = rest.split_whitespace().skip(1);
        let (Some(ppid), Some(pgrp)) = (f.next().and_then(|v| v.parse().ok()), f.next().and_then(|v| v.parse().ok())) else { continue };
        procs.push((pid, ppid, pgrp));
    }
    let mut members: std::collections::HashSet<i32> = known.clone();
    members.extend(procs.iter().filter(|p| p.2 == pgid).map(|p| p.0));
    // Descendants, to any depth (a process that started its own group or session too).
    loop {
        let before = members.len();
        members.extend(procs.iter().filter(|p| members.contains(&p.1)).map(|p| p.0).collect::<Vec<_>>());
        if members.len() == before || members.len() >= JOB_TREE_MAX {
            break;
        }
    }
    members.into_iter().collect()
}

/// The pid in a kernel OOM-killer line (`Killed process 4321 (python) …`, `oom-kill:… pid=4321,…`).
fn killed_pid(line: &str) -> Option<i32> {
    let after = line.split("Killed process ").nth(1).or_else(|| line.split(",pid=").nth(1))?;
    after.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// What the kernel says about memory kills, read before and after the run.
#[derive(Debug, Default)]
struct KernelState {
    /// Our cgroup v2 directory.
    cgroup: Option<PathBuf>,
    /// `oom_kill` of its `memory.events` (counts kills in the whole subtree).
    oom_kill: Option<u64>,
    /// The smallest `memory.max` of the cgroup and its parents, and where it is set.
    limit: Option<(u64, PathBuf)>,
    /// Seconds since boot (dmesg's clock).
    uptime: Option<f64>,
}

impl KernelState {
    fn read() -> KernelState {
        let Some((cgroup, events, key, limit_file)) = memory_cgroup() else {
            return KernelState { uptime: uptime(), ..Default::default() };
        };
        let oom_kill = std::fs::read_to_string(cgroup.join(events))
            .ok()
            .and_then(|text| text.lines().find_map(|l| l.strip_prefix(key).and_then(|v| v.trim().parse().ok())));
        // The limit may be set on any parent (the container's cgroup): the smallest counts.
        let mut limit: Option<(u64, PathBuf)> = None;
        let mut dir = Some(cgroup.clone());
        while let Some(d) = dir {
            if !d.starts_with("/sys/fs/cgroup") {
                break;
            }
            let value = std::fs::read_to_string(d.join(limit_file)).ok().and_then(|t| t.trim().parse::<u64>().ok());
            // v1 prints "no limit" as a page-rounded i64::MAX (v2 prints "max").
            if let Some(v) = value.filter(|&v| v < 1 << 62) {
                if limit.as_ref().is_none_or(|(l, _)| v < *l) {
                    limit = Some((v, d.join(limit_file)));
                }
            }
            dir = d.parent().map(Path::to_path_buf);
        }
        KernelState { cgroup: Some(cgroup), oom_kill, limit, uptime: uptime() }
    }
}

fn uptime() -> Option<f64> {
    std::fs::read_to_string("/proc/uptime").ok().and_then(|t| t.split_whitespace().next()?.parse().ok())
}

/// Our memory cgroup: (directory, file holding the oom_kill counter, its key, limit file).
/// cgroup v2 (`memory.events`, `memory.max`; also the hybrid layout's `unified/`), else
/// v1's memory controller (`memory.oom_control`, `memory.limit_in_bytes`).
fn memory_cgroup() -> Option<(PathBuf, &'static str, &'static str, &'static str)> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for l in text.lines() {
        if let Some(rel) = l.strip_prefix("0::") {
            let rel = rel.trim().trim_start_matches('/');
            for base in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
                let dir = Path::new(base).join(rel);
                if dir.join("memory.events").exists() {
                    return Some((dir, "memory.events", "oom_kill ", "memory.max"));
                }
            }
        }
    }
    for l in text.lines() {
        let mut parts = l.splitn(3, ':');
        let (Some(_), Some(ctrl), Some(rel)) = (parts.next(), parts.next(), parts.next()) else { continue };
        if ctrl.split(',').any(|c| c == "memory") {
            let dir = Path::new("/sys/fs/cgroup/memory").join(rel.trim().trim_start_matches('/'));
            if dir.join("memory.oom_control").exists() {
                return Some((dir, "memory.oom_control", "oom_kill ", "memory.limit_in_bytes"));
            }
        }
    }
    None
}

/// Kernel OOM-killer lines from `dmesg` printed during the run (when dmesg may be read).
fn dmesg_kills(since_uptime: f64) -> Option<Vec<String>> {
    let out = Command::new("dmesg").stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = Vec::new();
    for l in text.lines() {
        let ts = l.strip_prefix('[').and_then(|r| r.split(']').next()).and_then(|t| t.trim().parse::<f64>().ok());
        if ts.is_some_and(|t| t + 1.0 >= since_uptime) && (l.contains("Killed process") || l.contains("oom-kill:")) {
            lines.push(l.to_string());
        }
    }
    Some(lines)
}

/// What is known of the job's processes when it ended.
struct Job<'a> {
    /// Sampled from /proc while it ran ([`JobTree`]).
    pids: std::collections::HashSet<i32>,
    /// Its own memory cgroup, when one could be made ([`super::job_cgroup`]).
    cgroup: Option<&'a super::job_cgroup::JobCgroup>,
    /// That cgroup's OOM kills: exactly the job's.
    kills: Option<u64>,
}

/// Adds the `host.oom-killer` finding for a SIGKILL, or for a failure after the OOM killer
/// struck in the job's cgroup. A kill is the job's when the kernel names one of its
/// processes (`job`); a kill the kernel names of another process in a shared cgroup is
/// not blamed on the job: None is added then, and the returned note says what happened.
#[allow(clippy::too_many_arguments)]
fn add_kill_finding(report: &mut Report, ended: Ended, pid: i32, job: &Job, before: &KernelState, after: &KernelState, shown: &str, opts: &Options) -> Option<String> {
    let mut evidence = vec![match ended {
        Ended::Signaled(s) => format!("oomdoc run: `{shown}` (pid {pid}) was killed by {} (status {})", signal_name(s), ended.shell_status()),
        Ended::Exited(137) => format!("oomdoc run: `{shown}` (pid {pid}) exited with status 137 (128 + SIGKILL: a process it waited for was killed)"),
        Ended::Exited(c) => format!("oomdoc run: `{shown}` (pid {pid}) exited with status {c} after a process in its cgroup was killed"),
    }];
    let mut details: Vec<(&str, serde_json::Value)> = vec![("exit_status", ended.shell_status().into())];
    // The cgroup counted a kill during the run (of any process in it).
    let mut counted = false;
    match (before.oom_kill, after.oom_kill) {
        (Some(b), Some(a)) => {
            let dir = after.cgroup.as_ref().map(|d| d.display().to_string()).unwrap_or_default();
            if a > b {
                counted = true;
                evidence.push(format!("cgroup {dir}: oom_kill counter went from {b} to {a} during the run"));
            } else if job.kills.is_some_and(|n| n > 0) {
                evidence.push(format!("cgroup {dir}: oom_kill counter stayed at {a} (the job's kills count in its own cgroup, below)"));
            } else {
                evidence.push(format!("cgroup {dir}: oom_kill counter stayed at {a} (no OOM kill counted in this cgroup; the SIGKILL may have come from elsewhere)"));
            }
            details.push(("cgroup_oom_kill_before", b.into()));
            details.push(("cgroup_oom_kill_after", a.into()));
            details.push(("cgroup", dir.into()));
        }
        _ => evidence.push("the memory cgroup's oom_kill counter is not readable here: the OOM killer is not proven".into()),
    }
    if let (Some(cg), Some(n)) = (job.cgroup, job.kills) {
        evidence.push(format!("the job's own cgroup {}: {n} OOM kill(s) of its processes", cg.dir().display()));
        details.push(("job_cgroup_oom_kill", n.into()));
        if n > 0 {
            counted = true;
        } else if counted && !ended.killed() {
            // Every process of the job ran in its own cgroup, which counted no kill.
            return Some(format!(
                "the OOM killer killed a process in this cgroup during the run that is not part of `{shown}` (the job's own cgroup counted no kill); the command's own failure is above"
            ));
        }
    }
    let mut sizes = Vec::new();
    if let Some((limit, path)) = &after.limit {
        evidence.push(format!("memory limit {} ({limit} bytes) in {}", format_bytes(*limit), path.display()));
        sizes.push((SizeKey::Limit, *limit, format!("memory.max {limit}")));
    }
    // Proven: the kernel names a process of the job, or the job itself died of SIGKILL
    // while its cgroup counted a kill.
    let mut proven = match job.kills {
        Some(n) => n > 0,
        None => counted && ended.killed(),
    };
    let mut from_kernel: Option<Finding> = None;
    let dmesg = before.uptime.and_then(dmesg_kills);
    if let Some(lines) = &dmesg {
        // The job's: a pid seen in its tree, or one the kernel's record places in its cgroup.
        let in_cgroup: std::collections::HashSet<i32> =
            lines.iter().filter(|l| job.cgroup.is_some_and(|c| c.named_in(l))).filter_map(|l| killed_pid(l)).collect();
        let (mine, others): (Vec<&String>, Vec<&String>) =
            lines.iter().partition(|l| killed_pid(l).is_some_and(|p| p == pid || job.pids.contains(&p) || in_cgroup.contains(&p)));
        if !mine.is_empty() {
            proven = true;
        } else if !others.is_empty() && !ended.killed() {
            // The OOM killer struck another process in a shared cgroup; the job failed for
            // its own reasons.
            let who = others.iter().filter_map(|l| killed_pid(l)).map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
            return Some(format!(
                "the OOM killer killed process {who} in this cgroup during the run, which is not part of `{shown}`; the command's own failure is above"
            ));
        }
        for l in mine.iter().take(3) {
            evidence.push(format!("dmesg: {l}"));
        }
        for l in others.iter().take(2) {
            evidence.push(format!("dmesg (another process, not the job's): {l}"));
        }
        // The kernel's own line carries the numbers (anon-rss): read it like any log.
        if let Some(l) = mine.last() {
            from_kernel = diagnose_text(l, opts).findings.into_iter().find(|f| f.id == "host.oom-killer");
        }
    } else if counted && !ended.killed() {
        evidence.push("dmesg is not readable here, so which process of the cgroup was killed is not known".into());
    }
    let confidence = if proven { Confidence::Certain } else { Confidence::Likely };
    let text = evidence.join("\n");
    let mut f = match from_kernel {
        Some(mut f) => {
            f.excerpt = text.clone();
            f.line = 0;
            f.end_line = 0;
            if f.sizes.limit.is_none() {
                if let Some((limit, _)) = &after.limit {
                    f.sizes.limit = Some(*limit);
                    f.printed.insert("limit".into(), format!("memory.max {limit}"));
                }
            }
            for (k, v) in &details {
                f.details.insert(k.to_string(), v.clone());
            }
            f
        }
        None => evidence_finding("host.oom-killer", confidence, &text, &sizes, &details, opts),
    };
    f.confidence = confidence;
    let zh = opts.lang == Lang::Zh;
    let verdict = match (proven, counted, ended.killed(), zh) {
        (true, _, true, false) => "killed by the OOM killer".to_string(),
        (true, _, false, false) => "a process of the job was killed by the OOM killer".to_string(),
        (false, true, false, false) => "a process in the job's cgroup was killed by the OOM killer during the run; which one is not known here".to_string(),
        (false, _, _, false) => format!(
            "killed by SIGKILL; no memory evidence (check `dmesg -T | grep -i 'killed process {pid}'`, the cgroup's memory.events, and whether a scheduler, `timeout -s KILL` or a person sent it)"
        ),
        (true, _, true, true) => "被 OOM killer 杀死".to_string(),
        (true, _, false, true) => "任务中的一个进程被 OOM killer 杀死".to_string(),
        (false, true, false, true) => "任务所在 cgroup 中的一个进程在运行期间被 OOM killer 杀死；无法确定是哪一个".to_string(),
        (false, _, _, true) => format!(
            "被 SIGKILL 杀死；没有内存方面的证据（检查 `dmesg -T | grep -i 'killed process {pid}'`、cgroup 的 memory.events，以及是否由调度器、`timeout -s KILL` 或他人发出）"
        ),
    };
    // Without the kernel's record of the kill, the title says so instead of naming the OOM killer.
    let hedged_title = (!proven).then(|| {
        if zh {
            "被 SIGKILL 杀死：最可能是内核的 OOM killer，但没有找到 OOM kill 记录".to_string()
        } else {
            "Killed by SIGKILL: the kernel's OOM killer is the likeliest sender, but no OOM-kill record was found".to_string()
        }
    });
    if let Some(t) = &hedged_title {
        f.title = t.clone();
    }
    let (resident, limit_w) = if zh { ("驻留内存", "内存上限") } else { ("resident", "memory limit") };
    f.headline = match (f.sizes.used, f.sizes.limit) {
        (Some(u), Some(l)) => format!("{verdict}: {} {resident}, {limit_w} {}", format_bytes(u), format_bytes(l)),
        (Some(u), None) => format!("{verdict}: {} {resident}", format_bytes(u)),
        (None, Some(l)) => format!("{verdict}; {limit_w} {}", format_bytes(l)),
        (None, None) => verdict.to_string(),
    };
    // One host OOM finding: the log's own (`Killed`) gains the kernel's evidence.
    if let Some(existing) = report.findings.iter_mut().find(|g| g.id == "host.oom-killer") {
        if proven {
            existing.confidence = Confidence::Certain;
        } else if let Some(t) = &hedged_title {
            existing.title = t.clone();
        }
        existing.headline = f.headline;
        existing.excerpt = format!("{}\n{}", existing.excerpt, text);
        for (k, v) in f.details {
            existing.details.entry(k).or_insert(v);
        }
        if existing.sizes.limit.is_none() {
            existing.sizes.limit = f.sizes.limit;
        }
        return None;
    }
    f.first_fatal = !report.findings.iter().any(|g| g.first_fatal);
    report.findings.push(f);
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The job's output never waits for the scan: with a scanner that reads nothing, 40
    /// MiB go in without blocking (a blocked push would hang this test), at most the
    /// budget waits, the newest output is what is kept, and what was dropped is counted.
    #[test]
    fn a_stalled_scan_never_blocks_the_output_and_keeps_the_newest() {
        let budget = 4 << 20;
        let queue = ScanQueue::new(1, budget);
        let line = b"Killed\n";
        let piece: Vec<u8> = line.repeat((64 << 10) / line.len());
        let pieces = (40 << 20) / piece.len();
        let pusher = {
            let queue = queue.clone();
            let piece = piece.clone();
            std::thread::spawn(move || {
                for i in 0..pieces {
                    let mut p = piece.clone();
                    if i == pieces - 1 {
                        p.extend_from_slice(b"the last line\n");
                    }
                    assert!(queue.push(p));
                    assert!(queue.lock().bytes <= budget, "bounded");
                }
                queue.sender_done();
            })
        };
        pusher.join().unwrap();
        let stop = AtomicBool::new(false);
        let mut kept = Vec::new();
        while let Some(p) = queue.pop(&stop) {
            kept.extend_from_slice(&p);
        }
        assert!(kept.len() <= budget && kept.len() >= budget - piece.len() - 64, "{} bytes kept", kept.len());
        assert!(kept.ends_with(b"the last line\n"));
        let s = queue.lock();
        assert_eq!(s.dropped_bytes as usize + kept.len(), pieces * piece.len() + b"the last line\n".len());
        assert_eq!(s.dropped_lines, s.dropped_bytes / line.len() as u64);
        drop(s);
        assert!(queue.dropped_note().unwrap().contains("passed through but not diagnosed"));
    }

    /// Nothing dropped while the scan keeps up: every piece arrives, in order, and there is no note.
    #[test]
    fn a_scan_that_keeps_up_gets_everything_in_order() {
        let queue = ScanQueue::new(2, 1 << 20);
        let stop = Arc::new(AtomicBool::new(false));
        let mut reader = QueueReader { queue: queue.clone(), cur: Vec::new(), pos: 0, stop };
        for who in [b'a', b'b'] {
            let queue = queue.clone();
            std::thread::spawn(move || {
                for i in 0..1000u32 {
                    assert!(queue.push(format!("{}{i}\n", who as char).into_bytes()));
                }
                queue.sender_done();
            });
        }
        let mut all = String::new();
        reader.read_to_string(&mut all).unwrap();
        for who in ['a', 'b'] {
            let mine: Vec<u32> = all.lines().filter_map(|l| l.strip_prefix(who)).map(|n| n.parse().unwrap()).collect();
            assert_eq!(mine, (0..1000).collect::<Vec<_>>());
        }
        assert_eq!(queue.dropped_note(), None);
    }
}
