//! Test support shared by the workspace's test suites.
//!
//! Rust's test harness has no "skipped" outcome, and it captures what a test prints, so a test
//! that returns early because a tool is missing shows as `ok`. These helpers make such a skip
//! visible: the line goes straight to the terminal (around the capture) and, where
//! `scripts/test.sh` sets `OOMDOC_TEST_SKIPS`, into a file its summary counts. In CI (`CI` set
//! to anything but `false`/`0`/empty) a missing dependency that CI installs is a failure instead:
//! a skip there would hide that the test never ran.

use std::io::Write;

/// Whether this run is CI (`CI=true`, as CI services and `.ci/run` set it).
pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| !matches!(v.trim(), "" | "0" | "false" | "False")).unwrap_or(false)
}

/// `test` cannot run because `missing` (something CI installs) is absent: a failure in CI, a
/// visible skip elsewhere. Returns so the caller can `return` after it.
#[track_caller]
pub fn require_in_ci(test: &str, missing: &str) {
    if in_ci() {
        panic!("{test}: {missing}; CI installs it, so its absence is a failure here");
    }
    skip(test, missing);
}

/// `test` does not apply on this machine (`why`): a visible skip, in CI too.
pub fn skip(test: &str, why: &str) {
    let line = format!("skipped: {test}: {why}\n");
    // Straight to the file descriptor: `eprintln!` would be captured by the harness.
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os("OOMDOC_TEST_SKIPS") {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            // One short write per line: appends of this size do not interleave.
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// A global allocator that counts the bytes live and their peak, for tests that bound what a
/// loader allocates. A test binary installs it with
/// `#[global_allocator] static ALLOC: CountingAlloc = CountingAlloc;` and measures with
/// [`peak_allocated_during`]; every thread's allocations count, so such tests run one
/// measurement at a time.
pub struct CountingAlloc;

static LIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static PEAK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Allocations made (and reallocations that grew), ever: a count of work that a clock
/// cannot give deterministically.
static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn grew(bytes: usize) {
    use std::sync::atomic::Ordering::SeqCst;
    let now = LIVE.fetch_add(bytes, SeqCst) + bytes;
    PEAK.fetch_max(now, SeqCst);
    CALLS.fetch_add(1, SeqCst);
}

// SAFETY: every call is passed on to the system allocator unchanged; only counters are added.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = std::alloc::System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), std::sync::atomic::Ordering::SeqCst);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let p = std::alloc::System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, std::sync::atomic::Ordering::SeqCst);
            }
        }
        p
    }
}

/// Runs `f` and returns its result with the peak bytes allocated above what was live when it
/// started (needs [`CountingAlloc`] as the binary's global allocator).
pub fn peak_allocated_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    use std::sync::atomic::Ordering::SeqCst;
    let base = LIVE.load(SeqCst);
    PEAK.store(base, SeqCst);
    let r = f();
    (r, PEAK.load(SeqCst).saturating_sub(base))
}

/// What [`allocations_during`] measured.
#[derive(Debug, Clone, Copy)]
pub struct Allocations {
    /// Peak bytes allocated above what was live when the measurement started.
    pub peak: usize,
    /// Allocations (and growing reallocations) made.
    pub calls: usize,
}

/// Runs `f` and returns its result with its peak bytes and its number of allocations
/// (needs [`CountingAlloc`] as the binary's global allocator).
pub fn allocations_during<T>(f: impl FnOnce() -> T) -> (T, Allocations) {
    let calls = CALLS.load(std::sync::atomic::Ordering::SeqCst);
    let (r, peak) = peak_allocated_during(f);
    (r, Allocations { peak, calls: CALLS.load(std::sync::atomic::Ordering::SeqCst) - calls })
}
