//! Bounded mapped windows of a regular file, and the SIGBUS guard that makes them safe
//! against a file that shrinks while it is read (Linux).
//!
//! Reading a log with `read()` copies every byte out of the page cache; mapping it
//! lets the search read the cached pages in place. The whole file is never mapped
//! (mapped pages count in the RSS that `/usr/bin/time` reports, and the bound is
//! 64 MiB): the scanner maps one window of [`WINDOW`] bytes at a time, maps the next one
//! while the current one is searched, and unmaps each when done.
//!
//! A mapped file can shrink under the reader (logrotate's `copytruncate`, a job that
//! rewrites its log). Touching a mapped page that now lies wholly past the end of the
//! file raises SIGBUS, which by default kills the process. So before each window the
//! file's current size is read (`fstat`) and nothing past it is mapped, and a SIGBUS
//! handler is installed once per process: when the faulting address lies inside a
//! window a scan registered (a fixed table of atomics, [`SLOTS`]), it maps an anonymous
//! zero page over the faulting page (`MAP_FIXED`), marks the window, and returns, so the
//! access reads zeros; any other SIGBUS is handed to the previous handler (or the default
//! action) as if this one were not there. The scanner hands on a window's blocks only
//! after checking the mark and the size again; if the file shrank, it cuts the window again
//! up to the last complete line before the new end (and before the first zeroed page),
//! stops there, and the report says so in `notes`. Should the zero page itself fail to map
//! (no memory), the handler falls through to the default action, as without it.
//!
//! Async-signal-safety: the handler reads and writes atomics, calls `mmap` and `sigaction`,
//! may call the previous handler or `raise`, and does not allocate, lock or print. POSIX
//! lists `sigaction` and `raise` as async-signal-safe; `mmap` is not on the list, but on
//! Linux (glibc and musl alike) it is a thin wrapper around the system call that takes no
//! user-space lock and allocates nothing, so calling it from a handler cannot deadlock or
//! corrupt user-space state; the kernel serializes it against the faulting access itself.
//! Write-barrier garbage collectors (the Boehm GC's incremental mode) call `mprotect`,
//! equally absent from the list, from their SIGSEGV handlers on the same grounds.
//!
//! Caveats, shared by every reader of a mapped file (ripgrep included): bytes that another
//! process changes while they are read may be seen half old, half new, and a `&[u8]` whose
//! bytes change under it is outside what Rust's memory model describes (the scanner only
//! compares bytes, never trusts them to stay equal between reads: every shrink is checked
//! against the file's size and the fault marks). A file emptied and written again faster
//! than the scanner reaches those bytes is read with its new content, as `read()` would.

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Bytes mapped per window: 8 MiB with MAP_POPULATE measured as fast as 16 or 32 MiB
/// with a warm page cache (and twice as fast cold as leaving the faults to the search), and
/// keeps peak RSS near 36 MiB (two windows).
pub const WINDOW: usize = 8 << 20;

/// Windows that can be registered at once, process-wide: each mapped scan holds two (the
/// one being searched and the next). A scan that finds none free reads the file instead.
const SLOT_COUNT: usize = 64;

struct Slot {
    /// Held by a scan.
    taken: AtomicBool,
    /// The mapped range `[start, end)` of the slot's current window; `end == 0`: none.
    start: AtomicUsize,
    end: AtomicUsize,
    /// The lowest page inside the window where a SIGBUS was answered with a zero page;
    /// `usize::MAX`: none.
    fault: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot { taken: AtomicBool::new(false), start: AtomicUsize::new(0), end: AtomicUsize::new(0), fault: AtomicUsize::new(usize::MAX) };
static SLOTS: [Slot; SLOT_COUNT] = [FREE; SLOT_COUNT];

/// SIGBUS faults answered with a zero page, process-wide (for tests and diagnostics).
pub(crate) static FAULTS: AtomicUsize = AtomicUsize::new(0);

/// The SIGBUS disposition before ours, for every address that is not a window's.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
static INSTALLED: OnceLock<bool> = OnceLock::new();

fn page_size() -> usize {
    static P: OnceLock<usize> = OnceLock::new();
    // SAFETY: sysconf only reads a system constant.
    *P.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    })
}

/// Installs the SIGBUS handler (once per process). False if it could not be installed.
fn install() -> bool {
    *INSTALLED.get_or_init(|| {
        // SAFETY: reading and setting a signal disposition with valid, zeroed structs.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 {
                return false;
            }
            let _ = PREVIOUS.set(old);
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_sigbus as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut new.sa_mask);
            libc::sigaction(libc::SIGBUS, &new, std::ptr::null_mut()) == 0
        }
    })
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler.
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    // Only a fault (si_code > 0), not a SIGBUS sent with kill(), is answered.
    if code > 0 {
        for slot in &SLOTS {
            let end = slot.end.load(Ordering::Acquire);
            if end != 0 && addr < end && addr >= slot.start.load(Ordering::Acquire) {
                let page = addr & !(page_size() - 1);
                // SAFETY: the page lies inside a mapping this process made and still holds
                // (a window is unregistered before it is unmapped); replacing it with a
                // private zero page changes only what that window reads.
                let p = unsafe {
                    libc::mmap(page as *mut libc::c_void, page_size(), libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED, -1, 0)
                };
                if p != libc::MAP_FAILED {
                    slot.fault.fetch_min(page, Ordering::AcqRel);
                    FAULTS.fetch_add(1, Ordering::Relaxed);
                    return; // the access is retried and reads zeros
                }
                break;
            }
        }
    }
    // Not a window's: as if this handler were not installed.
    if let Some(prev) = PREVIOUS.get() {
        let handler = prev.sa_sigaction;
        if handler != libc::SIG_DFL && handler != libc::SIG_IGN {
            // SAFETY: the previous handler was installed for this signal with these flags.
            unsafe {
                if prev.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(handler);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
                    f(sig);
                }
            }
            return;
        }
    }
    // The default action: restore it; a fault is retried and kills the process with
    // SIGBUS as before, a sent signal is raised again.
    // SAFETY: sigaction and raise are async-signal-safe.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
        if code <= 0 {
            libc::raise(libc::SIGBUS);
        }
    }
}

/// Two slots held by one scan for its windows; released on drop.
pub(crate) struct Slots([usize; 2]);

impl Slots {
    /// Installs the handler and takes two free slots; None if either is impossible.
    pub(crate) fn take() -> Option<Slots> {
        if !install() {
            return None;
        }
        let mut got = Vec::with_capacity(2);
        for (i, s) in SLOTS.iter().enumerate() {
            if got.len() == 2 {
                break;
            }
            if s.taken.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                got.push(i);
            }
        }
        if got.len() < 2 {
            for i in got {
                SLOTS[i].taken.store(false, Ordering::Release);
            }
            return None;
        }
        Some(Slots([got[0], got[1]]))
    }

    /// The slot for the `k`-th window of the scan (windows alternate between the two).
    pub(crate) fn for_window(&self, k: u64) -> usize {
        self.0[(k % 2) as usize]
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        for &i in &self.0 {
            SLOTS[i].end.store(0, Ordering::Release);
            SLOTS[i].taken.store(false, Ordering::Release);
        }
    }
}

/// How the next window's pages are brought in while the current one is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prefetch {
    /// Nothing: the searching threads fault the pages in.
    None,
    /// `MAP_POPULATE`: the mapping thread sets up every page table entry up front.
    Populate,
    /// `madvise(MADV_WILLNEED)`: read-ahead into the page cache, no page tables.
    WillNeed,
}

/// One mapped window: `len` bytes of the file from offset `off`.
pub(crate) struct Window {
    base: *mut libc::c_void,
    map_len: usize,
    lead: usize,
    len: usize,
    slot: usize,
}

// SAFETY: the mapping is read-only and lives until drop; sharing its bytes across
// threads is sharing a `&[u8]`.
unsafe impl Send for Window {}
unsafe impl Sync for Window {}

impl Window {
    /// Maps `len` (> 0) bytes of `file` from `off` (the caller checked they lie within its
    /// current size) and registers the window in `slot` for the SIGBUS guard.
    pub(crate) fn map(file: &File, off: u64, len: usize, slot: usize, prefetch: Prefetch) -> io::Result<Window> {
        let page = page_size() as u64;
        let aligned = off - off % page;
        let lead = (off - aligned) as usize;
        let map_len = lead + len;
        let flags = libc::MAP_PRIVATE | if prefetch == Prefetch::Populate { libc::MAP_POPULATE } else { 0 };
        // SAFETY: a fresh read-only private mapping of an open file; the kernel picks the address.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), map_len, libc::PROT_READ, flags, file.as_raw_fd(), aligned as libc::off_t) };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let s = &SLOTS[slot];
        s.fault.store(usize::MAX, Ordering::Release);
        s.start.store(base as usize, Ordering::Release);
        let rounded = map_len.div_ceil(page as usize) * page as usize;
        s.end.store(base as usize + rounded, Ordering::Release);
        // SAFETY: advice on our own mapping; failure only loses the hint.
        unsafe {
            libc::madvise(base, map_len, libc::MADV_SEQUENTIAL);
            if prefetch == Prefetch::WillNeed {
                libc::madvise(base, map_len, libc::MADV_WILLNEED);
            }
        }
        Ok(Window { base, map_len, lead, len, slot })
    }

    /// Where, in this window's bytes, the first page lies that read as zeros because the
    /// file had shrunk under it (a SIGBUS answered), if any did since the last call. Those
    /// pages stay zeros even if the file grows again.
    pub(crate) fn take_fault(&self) -> Option<usize> {
        let page = SLOTS[self.slot].fault.swap(usize::MAX, Ordering::AcqRel);
        (page != usize::MAX).then(|| (page - self.base as usize).saturating_sub(self.lead))
    }
}

impl AsRef<[u8]> for Window {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `lead + len` bytes are mapped readable from `base` until drop; pages past
        // the file's end read as zeros (the guard above), never fault the process.
        unsafe { std::slice::from_raw_parts((self.base as *const u8).add(self.lead), self.len) }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // Unregister first: no thread touches the window any more, and once unmapped its
        // addresses may be reused by another mapping.
        SLOTS[self.slot].end.store(0, Ordering::Release);
        // SAFETY: unmapping exactly what `map` mapped; no slice of it outlives `self`.
        unsafe {
            libc::munmap(self.base, self.map_len);
        }
    }
}

/// A prefetch mode chosen by `OOMDOC_MAP_PREFETCH` (none, populate, willneed), for
/// measuring; populate by default.
pub(crate) fn prefetch_mode() -> Prefetch {
    static P: OnceLock<Prefetch> = OnceLock::new();
    *P.get_or_init(|| match std::env::var("OOMDOC_MAP_PREFETCH").as_deref() {
        Ok("none") => Prefetch::None,
        Ok("willneed") => Prefetch::WillNeed,
        _ => Prefetch::Populate,
    })
}

/// The window size, `OOMDOC_MAP_WINDOW_MIB` for measuring (0: read the file instead),
/// else [`WINDOW`].
pub(crate) fn window_size() -> usize {
    static W: OnceLock<usize> = OnceLock::new();
    *W.get_or_init(|| std::env::var("OOMDOC_MAP_WINDOW_MIB").ok().and_then(|v| v.parse::<usize>().ok()).filter(|&m| m <= 1024).map_or(WINDOW, |m| m << 20))
}
