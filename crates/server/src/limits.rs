//! Resource limits of `oomdoc serve` beyond body sizes: cancelling a request's work when
//! it times out or its client goes away, the cross-request analysis memory budget, the
//! connection cap, and the minimum upload rate (issue 12).

use axum::http::StatusCode;
use std::{
    cell::RefCell,
    path::PathBuf,
    pin::Pin,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    task::{Context, Poll},
    time::{Duration, Instant},
};

/// Analysis memory reserved per byte of dump on disk: the `.hlo.pb` decoder's own bound
/// (decoded memory at most this many bytes per input byte, or it stops with TooLarge,
/// answered 413), and the decoder is handed the request's reservation as its limit.
pub const DEFAULT_MEMORY_FACTOR: u64 = oomdoc_memory::MAX_BYTES_PER_INPUT_BYTE;

/// Limits on work, memory and connections (`oomdoc serve --help` names the flags).
#[derive(Debug, Clone)]
pub struct ResourceLimits {
    /// Total memory all dump analyses running at once may be assumed to use.
    pub analysis_memory_bytes: u64,
    /// A dump analysis is weighed as its bytes on disk (unpacked) times this factor.
    pub analysis_memory_factor: u64,
    /// Entries an archive may hold (files, directories, links: every entry counts).
    pub archive_entries: usize,
    /// Directories an upload may create when unpacked.
    pub archive_dirs: usize,
    /// Open connections at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// A client must send its request headers within this time (also the idle time
    /// allowed on a kept-alive connection).
    pub header_read_timeout: Duration,
    /// After `min_upload_grace`, a request body must keep arriving at this average rate.
    pub min_upload_bytes_per_sec: u64,
    pub min_upload_grace: Duration,
    /// Where uploads are unpacked (`oomdoc-dump-<pid>-*` directories).
    pub temp_dir: PathBuf,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            analysis_memory_bytes: 4096 * crate::config::MIB as u64,
            analysis_memory_factor: DEFAULT_MEMORY_FACTOR,
            archive_entries: 10_000,
            archive_dirs: 1_000,
            max_connections: 512,
            header_read_timeout: Duration::from_secs(10),
            min_upload_bytes_per_sec: 8 * 1024,
            min_upload_grace: Duration::from_secs(10),
            temp_dir: std::env::temp_dir(),
        }
    }
}

/// A refusal with its own status (413, 503 with `Retry-After`, 408).
#[derive(Debug, Clone)]
pub struct Refusal {
    pub status: StatusCode,
    pub message: String,
    /// Seconds, sent as `Retry-After`.
    pub retry_after: Option<u64>,
}

impl Refusal {
    pub fn cancelled() -> Refusal {
        Refusal {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "the request took longer than this server's time limit".into(),
            retry_after: None,
        }
    }
}

// ---------------------------------------------------------------- cancellation

/// Set when the request's future is dropped (timeout, client gone, shutdown) or its
/// deadline passes; the unpack and analysis loops check it and stop.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<CancelInner>);

#[derive(Debug, Default)]
struct CancelInner {
    flag: AtomicBool,
    deadline: Option<Instant>,
}

impl Cancel {
    pub fn new(deadline: Option<Instant>) -> Cancel {
        Cancel(Arc::new(CancelInner {
            flag: AtomicBool::new(false),
            deadline,
        }))
    }

    pub fn with_timeout(timeout: Duration) -> Cancel {
        Cancel::new(Instant::now().checked_add(timeout))
    }

    pub fn cancel(&self) {
        self.0.flag.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.flag.load(Ordering::Relaxed) || self.0.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Cancels when dropped: hold it in the request's future.
    pub fn guard(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }

    /// Run `f` with this token as the thread's current one (see [`cancelled`]).
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<Cancel>);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| *c.borrow_mut() = self.0.take());
            }
        }
        let _restore = Restore(CURRENT.with(|c| c.borrow_mut().replace(self.clone())));
        f()
    }
}

pub struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Cancel>> = const { RefCell::new(None) };
    static RESERVED: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    static TEXT_LIMIT: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Run `f` with `bytes` as the most text this thread's log may decode to (the log limit,
/// applied after decompression as well as to the body): see [`text_limit`].
pub fn with_text_limit<T>(bytes: u64, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            TEXT_LIMIT.with(|r| r.set(self.0));
        }
    }
    let _restore = Restore(TEXT_LIMIT.with(|r| r.replace(Some(bytes))));
    f()
}

/// The log limit for the current request's decoded text; `None` outside one.
pub fn text_limit() -> Option<u64> {
    TEXT_LIMIT.with(|r| r.get())
}

/// Run `f` with `bytes` as the memory this thread's analysis reserved in the budget
/// (see [`reserved_bytes`]).
pub fn with_reserved<T>(bytes: u64, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            RESERVED.with(|r| r.set(self.0));
        }
    }
    let _restore = Restore(RESERVED.with(|r| r.replace(Some(bytes))));
    f()
}

/// The memory the current request's analysis reserved, for an engine to hand its
/// decoder as a hard limit (`oomdoc_memory::Limits::max_bytes`); `None` outside one.
pub fn reserved_bytes() -> Option<u64> {
    RESERVED.with(|r| r.get())
}

/// Whether the request this thread is working for has been cancelled (engines call
/// this between steps; false outside a request).
pub fn cancelled() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(Cancel::is_cancelled))
}

/// The thread's current token, if any.
pub fn current() -> Option<Cancel> {
    CURRENT.with(|c| c.borrow().clone())
}

/// A reader that fails once its request is cancelled, so a scan loop over it stops.
pub struct CancelReader<R> {
    pub inner: R,
    pub cancel: Cancel,
}

impl<R: std::io::Read> std::io::Read for CancelReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "request cancelled",
            ));
        }
        self.inner.read(buf)
    }
}

// ---------------------------------------------------------------- memory budget

/// Memory all analyses running at once may use. A request reserves its weight before
/// its analysis starts and releases it when the analysis ends (not when the client
/// leaves: the work may still be winding down).
#[derive(Debug)]
pub struct MemoryBudget {
    total: u64,
    used: Mutex<u64>,
    /// Bytes reserved and released since the allocator last returned free memory.
    released: std::sync::atomic::AtomicU64,
}

/// Once this much was reserved and released and nothing is reserved any more (the server
/// is idle), free memory goes back to the system ([`return_free_memory`]).
pub const RETURN_MEMORY_AFTER: u64 = 32 << 20;

/// Give the memory the allocator holds free back to the system. glibc's malloc keeps
/// freed memory in its per-thread arenas for reuse: after a burst of 16 MiB uploads on
/// many threads the idle server stayed at 1.1 GB (reliability report S3). `malloc_trim`
/// releases the free pages of every arena. Other allocators: nothing to do here.
pub fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists, under its locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Run [`return_free_memory`] on its own thread (it walks every arena), one at a time.
fn return_free_memory_soon() {
    static RUNNING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if RUNNING.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    let spawned = std::thread::Builder::new().name("oomdoc-return-memory".into()).spawn(|| {
        return_free_memory();
        RUNNING.store(false, std::sync::atomic::Ordering::Release);
    });
    if spawned.is_err() {
        RUNNING.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// Released on drop.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering;
        let idle = {
            let mut used = self.budget.used.lock().unwrap_or_else(|p| p.into_inner());
            *used = used.saturating_sub(self.bytes);
            *used == 0
        };
        let released = self.budget.released.fetch_add(self.bytes, Ordering::AcqRel) + self.bytes;
        if idle && released >= RETURN_MEMORY_AFTER {
            self.budget.released.store(0, Ordering::Release);
            return_free_memory_soon();
        }
    }
}

impl MemoryBudget {
    pub fn new(total: u64) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget {
            total,
            used: Mutex::new(0),
            released: std::sync::atomic::AtomicU64::new(0),
        })
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn used(&self) -> u64 {
        *self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserve `bytes`, or say why not: 413 when it can never fit, 503 (retry) when
    /// the budget is taken by other requests now.
    pub fn try_reserve(self: &Arc<Self>, bytes: u64, what: &str) -> Result<Reservation, Refusal> {
        if bytes > self.total {
            return Err(Refusal {
                status: StatusCode::PAYLOAD_TOO_LARGE,
                message: format!(
                    "{what} needs about {} of analysis memory, more than this server's whole budget of {}; \
                     ask the operator to raise --analysis-memory-mib, or run `oomdoc memory` locally",
                    oomdoc_units::format_bytes(bytes),
                    oomdoc_units::format_bytes(self.total)
                ),
                retry_after: None,
            });
        }
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        if *used + bytes > self.total {
            return Err(Refusal {
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: format!(
                    "the server is analysing other dumps: {what} needs about {} of analysis memory and {} of {} is free; retry shortly",
                    oomdoc_units::format_bytes(bytes),
                    oomdoc_units::format_bytes(self.total - *used),
                    oomdoc_units::format_bytes(self.total)
                ),
                retry_after: Some(5),
            });
        }
        *used += bytes;
        Ok(Reservation {
            budget: self.clone(),
            bytes,
        })
    }
}

/// Memory a log diagnosis holds per byte of log: the request body, and the copy handed
/// to the engine (the scan itself streams).
pub const LOG_MEMORY_FACTOR: u64 = 2;

/// Middleware on the log routes: reserve the log's weight in the analysis budget before
/// its body is read (the body is buffered in memory), from its declared length or, when
/// not declared, the log limit; held until the response is ready.
pub async fn reserve_log_memory(
    axum::extract::State(state): axum::extract::State<Arc<crate::AppState>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    // The form page itself (GET) holds nothing.
    if req.method() == axum::http::Method::GET || req.method() == axum::http::Method::HEAD {
        return next.run(req).await;
    }
    let limit = state.config.limits.log_bytes as u64;
    let declared = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let need = declared
        .map_or(limit, |n| n.min(limit))
        .saturating_mul(LOG_MEMORY_FACTOR);
    match state.budget.try_reserve(need, "this log") {
        Ok(reservation) => {
            let resp = next.run(req).await;
            drop(reservation);
            resp
        }
        Err(refusal) => crate::error::AppError::Refused(refusal).into_response(),
    }
}

// ---------------------------------------------------------------- connections

/// The header deadline of a connection under load: when fewer than a quarter of the
/// connections are free, a new one gets at most this long for its request headers, so
/// clients that trickle their headers cycle out faster than legitimate ones queue up.
pub const UNDER_LOAD_HEADER_TIMEOUT: Duration = Duration::from_secs(2);

/// The header deadline for a new connection, given how many connections are free.
pub fn header_deadline(r: &ResourceLimits, free: usize) -> Duration {
    if free.saturating_mul(4) < r.max_connections {
        r.header_read_timeout.min(UNDER_LOAD_HEADER_TIMEOUT)
    } else {
        r.header_read_timeout
    }
}

/// What a connection over the cap gets before it is closed.
pub fn too_many_connections() -> Vec<u8> {
    let body = r#"{"error":{"status":503,"message":"too many connections to this server; retry shortly","request_id":""}}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Answer a connection over the cap with 503 and close it. Draining what the client
/// already sent (for up to 250 ms) lets it read the answer instead of a reset; at most
/// `refusers` connections are drained at once, the rest get the answer only if their
/// socket takes it at once.
pub fn refuse_connection(stream: tokio::net::TcpStream, refusers: &Arc<tokio::sync::Semaphore>) {
    let Ok(permit) = refusers.clone().try_acquire_owned() else {
        // Too many being refused: answer if the socket takes it now, and close.
        let _ = stream.try_write(&too_many_connections());
        drop(stream);
        return;
    };
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let _permit = permit;
        let mut stream = stream;
        let answer = async {
            stream.write_all(&too_many_connections()).await?;
            stream.shutdown().await?;
            let mut sink = [0u8; 4096];
            let mut drained = 0;
            while drained < 64 * 1024 {
                match stream.read(&mut sink).await? {
                    0 => break,
                    n => drained += n,
                }
            }
            Ok::<_, std::io::Error>(())
        };
        // A client sends its request at once; one that trickles is not waited for.
        let _ = tokio::time::timeout(Duration::from_millis(250), answer).await;
    });
}

// ---------------------------------------------------------------- minimum upload rate

/// The error a body read gets when the client sends too slowly.
#[derive(Debug)]
pub struct TooSlow {
    pub min_bytes_per_sec: u64,
}

impl std::fmt::Display for TooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the upload is slower than this server's minimum of {} per second",
            oomdoc_units::format_bytes(self.min_bytes_per_sec)
        )
    }
}

impl std::error::Error for TooSlow {}

/// Whether an error (or one of its sources) is a [`TooSlow`].
pub fn is_too_slow(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err.is::<TooSlow>() {
            return true;
        }
        cur = err.source();
    }
    false
}

/// A request body that fails with [`TooSlow`] when, after a grace period, fewer bytes
/// than `rate × (elapsed − grace)` have arrived.
pub struct MinRateBody<B> {
    inner: B,
    rate: u64,
    started: Instant,
    grace: Duration,
    received: u64,
    timer: Pin<Box<tokio::time::Sleep>>,
    failed: bool,
}

impl<B> MinRateBody<B> {
    pub fn new(inner: B, rate: u64, grace: Duration) -> MinRateBody<B> {
        let started = Instant::now();
        let mut body = MinRateBody {
            inner,
            rate: rate.max(1),
            started,
            grace,
            received: 0,
            timer: Box::pin(tokio::time::sleep(grace)),
            failed: false,
        };
        body.reset_timer();
        body
    }

    /// The moment the average rate would fall below the minimum with no more data.
    fn deadline(&self) -> Instant {
        let allowed = Duration::from_secs_f64(self.received as f64 / self.rate as f64);
        self.started + self.grace + allowed.min(Duration::from_secs(365 * 24 * 3600))
    }

    fn reset_timer(&mut self) {
        let d = self.deadline();
        self.timer.as_mut().reset(tokio::time::Instant::from_std(d));
    }
}

impl<B> hyper::body::Body for MinRateBody<B>
where
    B: hyper::body::Body<Data = axum::body::Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if this.failed {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received += data.len() as u64;
                    this.reset_timer();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.failed = true;
                    Poll::Ready(Some(Err(Box::new(TooSlow {
                        min_bytes_per_sec: this.rate,
                    }))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

use std::future::Future as _;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_refuses_what_never_fits_with_413_and_a_busy_budget_with_503() {
        let b = MemoryBudget::new(100);
        assert_eq!(
            b.try_reserve(101, "the dump").unwrap_err().status,
            StatusCode::PAYLOAD_TOO_LARGE
        );
        let r1 = b.try_reserve(60, "the dump").unwrap();
        let busy = b.try_reserve(50, "the dump").unwrap_err();
        assert_eq!(busy.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(busy.retry_after.is_some());
        let r2 = b.try_reserve(40, "the dump").unwrap();
        assert_eq!(b.used(), 100);
        drop(r1);
        assert_eq!(b.used(), 40);
        drop(r2);
        assert_eq!(b.used(), 0);
        assert!(b.try_reserve(100, "the dump").is_ok());
    }

    #[test]
    fn headers_get_less_time_when_connections_run_short() {
        let r = ResourceLimits {
            max_connections: 100,
            ..Default::default()
        };
        assert_eq!(header_deadline(&r, 100), Duration::from_secs(10));
        assert_eq!(header_deadline(&r, 25), Duration::from_secs(10));
        assert_eq!(header_deadline(&r, 24), UNDER_LOAD_HEADER_TIMEOUT);
        let quick = ResourceLimits {
            header_read_timeout: Duration::from_secs(1),
            ..r
        };
        assert_eq!(header_deadline(&quick, 0), Duration::from_secs(1));
    }

    #[test]
    fn a_dropped_guard_cancels_and_the_current_token_is_scoped() {
        let c = Cancel::new(None);
        assert!(!cancelled());
        c.run(|| {
            assert!(!cancelled());
            drop(c.guard());
            assert!(cancelled());
        });
        assert!(!cancelled(), "the token is the thread's only inside run");
        assert_eq!(with_reserved(42, reserved_bytes), Some(42));
        assert_eq!(reserved_bytes(), None);
        let past = Cancel::new(Some(Instant::now()));
        assert!(past.is_cancelled(), "a passed deadline cancels");
        let mut r = CancelReader {
            inner: &b"abc"[..],
            cancel: c,
        };
        let mut s = String::new();
        assert!(std::io::Read::read_to_string(&mut r, &mut s).is_err());
    }
}
