//! `oomdoc serve`: the web UI and JSON API over the oomdoc libraries, with the
//! measured fix rates and the team's ingested job failures kept in one store
//! ([`store`]: an embedded SQLite file, or PostgreSQL shared by several replicas).
//!
//! - [`serve`] runs the server until SIGTERM / Ctrl-C (what `oomdoc serve` calls);
//! - [`BackgroundServer`] runs it on a thread (tests, benchmark);
//! - [`routes::router`] is the URL map; [`engines`] is the one place the analysis
//!   libraries are called.

pub mod config;
pub mod csrf;
pub mod engines;
pub mod error;
pub mod feedback;
pub mod host;
pub mod html;
pub mod kb_query;
pub mod retention;
pub mod ingest;
pub mod fleet;
pub mod routes;
pub mod stats;
pub mod limits;
pub mod store;
pub mod tempdir;

pub use config::{Config, Limits};
pub use engines::Engines;

use store::{Feedback, FeedbackMeta, FeedbackSaved, FixOutcomes, Store};
use error::AppError;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use std::{collections::BTreeMap, future::Future, net::SocketAddr, sync::Arc, time::Duration};
use tower::ServiceExt;

/// The OpenAPI 3.1 description of `/api/v1`, served at `/api/v1/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

/// The connection's remote address, put in every request's extensions by [`run`].
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub SocketAddr);

/// The client's address for the per-client feedback rules: the connection's peer, or,
/// with `--trust-forwarded-host` (behind a proxy), the address the proxy appended last
/// to `X-Forwarded-For`.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub Option<std::net::IpAddr>);

impl axum::extract::FromRequestParts<Arc<AppState>> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &Arc<AppState>) -> Result<Self, Self::Rejection> {
        if state.config.origin_policy.trust_forwarded_host {
            let forwarded = parts
                .headers
                .get_all("x-forwarded-for")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .filter_map(|a| a.trim().parse().ok())
                .next_back();
            if forwarded.is_some() {
                return Ok(ClientAddr(forwarded));
            }
        }
        Ok(ClientAddr(parts.extensions.get::<PeerAddr>().map(|p| p.0.ip())))
    }
}

/// How long shutdown waits for requests in flight.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

pub struct AppState {
    pub config: Config,
    pub db: Arc<dyn Store>,
    pub engines: Engines,
    /// Analyses running at once: beyond a few per core they only queue and hold memory
    /// (a 16 MiB log each), so later requests wait here instead.
    analysis_slots: Arc<tokio::sync::Semaphore>,
    /// Memory all dump analyses at once may use (`--analysis-memory-mib`).
    pub budget: Arc<limits::MemoryBudget>,
}

impl AppState {
    pub async fn open(config: Config, engines: Engines) -> Result<Arc<AppState>, String> {
        let db = store::open(&config.db).await.map_err(|e| format!("database {}: {e}", config.db))?;
        retention::sweep(&*db, &config.log_store).await.map_err(|e| e.to_string())?;
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let analysis_slots = Arc::new(tokio::sync::Semaphore::new(2 * cores));
        let budget = limits::MemoryBudget::new(config.resources.analysis_memory_bytes);
        for dir in tempdir::remove_stale(&config.resources.temp_dir) {
            eprintln!("oomdoc serve: removed {} left by a server that is gone", dir.display());
        }
        Ok(Arc::new(AppState { config, db, engines, analysis_slots, budget }))
    }

    /// Run an analysis engine on the blocking pool, a bounded number at a time.
    async fn analyse<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce() -> Result<T, engines::EngineError> + Send + 'static,
    ) -> Result<T, AppError> {
        let deadline = self.config.request_timeout.max(self.config.upload_timeout);
        self.analyse_until(limits::Cancel::with_timeout(deadline), f).await
    }

    /// [`AppState::analyse`] under `cancel`: dropping this future (timeout, client gone)
    /// cancels it, and the engine stops at its next check ([`limits::cancelled`]). The
    /// slot is held until the engine really returns.
    async fn analyse_until<T: Send + 'static>(
        self: &Arc<Self>,
        cancel: limits::Cancel,
        f: impl FnOnce() -> Result<T, engines::EngineError> + Send + 'static,
    ) -> Result<T, AppError> {
        let _guard = cancel.guard();
        let slot = self.analysis_slots.clone().acquire_owned().await.map_err(|e| AppError::Internal(e.to_string()))?;
        let for_task = cancel.clone();
        let result = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            for_task.run(f)
        })
        .await?;
        match result {
            // The engine stopped because the deadline passed: a timeout, not bad input.
            Err(_) if cancel.is_cancelled() => Err(AppError::Refused(limits::Refusal::cancelled())),
            r => Ok(r?),
        }
    }

    /// Diagnose a log; keep it only when the user ticked the box. With the log kept, also
    /// the key of the diagnosis's own address (`/diagnoses/<link>`).
    pub async fn diagnose_and_maybe_store(
        self: &Arc<Self>,
        sub: routes::input::LogSubmission,
    ) -> Result<(Value, Option<String>), AppError> {
        let diagnose = self.engines.diagnose;
        let lang = sub.lang;
        let store = sub.store;
        let log = Arc::new(sub.bytes);
        let for_engine = log.clone();
        let text_limit = self.config.limits.log_bytes as u64;
        let report = self.analyse(move || limits::with_text_limit(text_limit, || diagnose(&for_engine, lang))).await?;
        let mut link = None;
        if store {
            let policy = self.config.log_store.clone();
            // The largest log the quota can hold (each log also counts its row).
            let limit = policy.max_bytes.map_or(u64::MAX, |m| m.saturating_sub(retention::ROW_OVERHEAD));
            match self.db.store_log(log, &policy).await? {
                Some(stored) => link = Some(stored.link),
                None => {
                    return Err(AppError::TooLarge {
                        what: "the log to keep (store_log=1; without it the log is diagnosed and not kept)",
                        limit: limit.try_into().unwrap_or(usize::MAX),
                    })
                }
            }
        }
        Ok((report, link))
    }

    /// The diagnosis of a kept log, by its address key; diagnosed again on each read, so it
    /// follows the knowledge base the server runs now. `NotFound` once the log is gone.
    pub async fn diagnose_kept(self: &Arc<Self>, link: &str, lang: oomdoc_kb::Lang) -> Result<Value, AppError> {
        let gone = || {
            AppError::NotFound(format!(
                "no kept diagnosis `{link}`: it never existed, or its log was deleted (kept logs are removed after the \
                 server's retention time, or when the space for kept logs is needed)"
            ))
        };
        if !store::is_link(link) {
            return Err(gone());
        }
        let log = self.db.stored_log(link).await?.ok_or_else(gone)?;
        // The kept log is in memory like an uploaded one: it weighs the same in the budget.
        let _reservation = self
            .budget
            .try_reserve((log.len() as u64).saturating_mul(limits::LOG_MEMORY_FACTOR), "this log")
            .map_err(AppError::Refused)?;
        let diagnose = self.engines.diagnose;
        let text_limit = self.config.limits.log_bytes as u64;
        self.analyse(move || limits::with_text_limit(text_limit, || diagnose(&log, lang))).await
    }

    pub async fn outcomes(self: &Arc<Self>, entry: String) -> Result<BTreeMap<String, FixOutcomes>, AppError> {
        Ok(self.db.outcomes(&entry).await?)
    }

    pub async fn outcomes_for(
        self: &Arc<Self>,
        mut entries: Vec<String>,
    ) -> Result<BTreeMap<String, BTreeMap<String, FixOutcomes>>, AppError> {
        entries.sort();
        entries.dedup();
        let mut out = BTreeMap::new();
        for e in entries {
            let o = self.db.outcomes(&e).await?;
            out.insert(e, o);
        }
        Ok(out)
    }

    /// Returns once the report is committed (and fsynced). `client`: the sender's address,
    /// for the per-client rules; `report_id`: the client's idempotency key.
    pub async fn record_feedback(
        self: &Arc<Self>,
        report: Feedback,
        report_id: Option<String>,
        client: Option<std::net::IpAddr>,
    ) -> Result<FeedbackSaved, AppError> {
        let meta = FeedbackMeta {
            report_id,
            client: client.map(|ip| store::client_key(&ip.to_string())),
            policy: self.config.feedback,
        };
        Ok(self.db.record_feedback(&report, &meta).await?)
    }

    /// The memory report of an uploaded dump. `form`: the upload came from the page's
    /// form, which must carry its anti-forgery token ([`csrf::verify_form`]).
    pub async fn memory_report(self: &Arc<Self>, req: axum::extract::Request, form: bool) -> Result<engines::MemoryReport, AppError> {
        let form_headers = form.then(|| req.headers().clone());
        let resources = &self.config.resources;
        let cancel = limits::Cancel::with_timeout(self.config.upload_timeout);
        let _guard = cancel.guard();
        let opts = routes::input::DumpOptions::new(self.config.limits.dump_bytes, resources, cancel.clone());
        let upload = routes::input::read_dump_with(req, &opts).await?;
        if let Some(headers) = &form_headers {
            csrf::verify_form(headers, upload.csrf.as_deref())?;
        }
        // Weigh the analysis before starting it; the reservation and the upload's
        // directory go with the engine and are released when it returns.
        let need = upload.bytes.saturating_mul(resources.analysis_memory_factor);
        let reservation = self.budget.try_reserve(need, "this dump").map_err(AppError::Refused)?;
        let memory = self.engines.memory;
        self.analyse_until(cancel, move || {
            let _reservation = reservation;
            limits::with_reserved(need, || memory(&upload.root))
        })
        .await
    }

    pub async fn plan(self: &Arc<Self>, input: engines::PlanInput) -> Result<Value, AppError> {
        let plan = self.engines.plan;
        self.analyse(move || plan(&input)).await
    }

    pub async fn check_db(self: &Arc<Self>) -> Result<(), AppError> {
        Ok(self.db.check().await?)
    }
}

/// Accept connections until `shutdown` resolves, then let requests in flight finish.
pub async fn run(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let purger = retention::spawn(&state);
    let resources = state.config.resources.clone();
    let app = routes::router(state);
    let connections = Arc::new(tokio::sync::Semaphore::new(resources.max_connections.max(1)));
    let refusers = Arc::new(tokio::sync::Semaphore::new(128));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        eprintln!("oomdoc serve: accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Over the connection cap: a 503 and close, so slow clients cannot
                // take every file descriptor.
                let Ok(permit) = connections.clone().try_acquire_owned() else {
                    limits::refuse_connection(stream, &refusers);
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let (rate, grace) = (resources.min_upload_bytes_per_sec, resources.min_upload_grace);
                let service = hyper_util::service::TowerToHyperService::new(app.clone().map_request(
                    move |mut req: hyper::Request<hyper::body::Incoming>| {
                        req.extensions_mut().insert(PeerAddr(peer));
                        req.map(|b| axum::body::Body::new(limits::MinRateBody::new(b, rate, grace)))
                    },
                ));
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(limits::header_deadline(&resources, connections.available_permits()))
                    .serve_connection(TokioIo::new(stream), service);
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _permit = permit;
                    let _ = conn.await;
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    purger.abort();
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(SHUTDOWN_GRACE) => eprintln!("oomdoc serve: requests still running after {SHUTDOWN_GRACE:?}; stopping anyway"),
    }
    Ok(())
}

fn runtime(workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        // SQLite calls and analyses; analyses are further bounded by `analysis_slots`.
        .max_blocking_threads(64)
        .enable_all()
        .build()
}

/// SIGTERM (service managers, `docker stop`) or Ctrl-C.
async fn termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// `oomdoc serve`: open and migrate the database, listen, serve until SIGTERM / Ctrl-C.
pub fn serve(config: Config) -> Result<(), String> {
    let addr = config.addr;
    let rt = runtime(config.workers).map_err(|e| format!("cannot start the runtime: {e}"))?;
    rt.block_on(async move {
        let state = AppState::open(config, Engines::default()).await?;
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let bound = listener.local_addr().map_err(|e| e.to_string())?;
        eprintln!("oomdoc serve: listening on http://{bound} (database {}, {})", state.config.db, state.db.backend());
        run(listener, state, termination()).await.map_err(|e| e.to_string())?;
        eprintln!("oomdoc serve: stopped");
        Ok(())
    })
}

/// A server on its own thread and runtime; stops (gracefully) on [`BackgroundServer::stop`] or drop.
pub struct BackgroundServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BackgroundServer {
    /// Bind `config.addr` (port 0 picks a free one) and start serving.
    pub fn start(config: Config, engines: Engines) -> Result<BackgroundServer, String> {
        let rt = runtime(config.workers).map_err(|e| e.to_string())?;
        let addr = config.addr;
        let state = rt.block_on(AppState::open(config, engines))?;
        let listener = rt
            .block_on(tokio::net::TcpListener::bind(addr))
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let bound = listener.local_addr().map_err(|e| e.to_string())?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("oomdoc-serve".into())
            .spawn(move || {
                let _ = rt.block_on(run(listener, state, async {
                    let _ = rx.await;
                }));
            })
            .map_err(|e| e.to_string())?;
        Ok(BackgroundServer { addr: bound, stop: Some(tx), thread: Some(thread) })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}
