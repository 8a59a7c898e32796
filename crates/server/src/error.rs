//! Errors, request ids, and the outermost middleware that guarantees every
//! failure reaches the client as a clear status with a request id: never a
//! panic, never a bare 500, never a stack trace.

use axum::{
    extract::Request,
    http::{header, HeaderValue, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use futures_util::FutureExt;
use oomdoc_kb::Lang;
use std::{
    panic::AssertUnwindSafe,
    sync::atomic::{AtomicU64, Ordering},
    time::{Instant, SystemTime, UNIX_EPOCH},
};

/// A handler's failure. Internal details are logged with the request id, and
/// the client gets only the id.
#[derive(Debug)]
pub enum AppError {
    NotFound(String),
    BadRequest(String),
    /// A cross-site request or a form without its anti-forgery token ([`crate::csrf`]).
    Forbidden(String),
    /// No valid API token ([`crate::ingest::authenticate`]): 401 with `WWW-Authenticate: Bearer`.
    Unauthorized(String),
    Unprocessable(String),
    TooLarge { what: &'static str, limit: usize },
    NotImplemented(String),
    Internal(String),
    /// A resource limit (`crate::limits`): its own status, message and `Retry-After`.
    Refused(crate::limits::Refusal),
}

/// Attached to error responses; the outer middleware turns it into the final
/// JSON or HTML body, with the request id.
#[derive(Debug, Clone)]
pub struct ErrorInfo {
    pub message: String,
    /// Logged only, never sent.
    pub internal: Option<String>,
}

impl AppError {
    pub fn status(&self) -> StatusCode {
        match self {
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            AppError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            AppError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            AppError::Refused(r) => r.status,
        }
    }
}

impl From<crate::store::StoreError> for AppError {
    fn from(e: crate::store::StoreError) -> Self {
        use crate::store::StoreError as E;
        let refuse = |status, message, retry_after| AppError::Refused(crate::limits::Refusal { status, message, retry_after });
        match e {
            E::Unavailable(m) => refuse(StatusCode::SERVICE_UNAVAILABLE, m, Some(5)),
            E::Full(m) => refuse(StatusCode::INSUFFICIENT_STORAGE, m, Some(60)),
            E::RateLimited { message, retry_after_secs } => refuse(StatusCode::TOO_MANY_REQUESTS, message, Some(retry_after_secs)),
            E::Invalid(m) => AppError::Unprocessable(m),
            E::Internal(m) => AppError::Internal(m),
        }
    }
}

impl From<tokio::task::JoinError> for AppError {
    fn from(e: tokio::task::JoinError) -> Self {
        AppError::Internal(format!("background task failed: {}", panic_message_of_join(e)))
    }
}

impl From<crate::engines::EngineError> for AppError {
    fn from(e: crate::engines::EngineError) -> Self {
        match e {
            crate::engines::EngineError::Unavailable(what) => AppError::NotImplemented(what.to_string()),
            crate::engines::EngineError::BadInput(m) => AppError::Unprocessable(m),
            crate::engines::EngineError::TooLarge(m) => {
                AppError::Refused(crate::limits::Refusal { status: StatusCode::PAYLOAD_TOO_LARGE, message: m, retry_after: None })
            }
        }
    }
}

fn panic_message_of_join(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => format!("panic: {}", panic_message(&*p)),
        Err(e) => e.to_string(),
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".into())
}

pub fn human_bytes(n: usize) -> String {
    oomdoc_units::format_bytes(n as u64)
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut retry_after = None;
        let info = match self {
            AppError::Refused(r) => {
                retry_after = r.retry_after;
                ErrorInfo { message: r.message, internal: None }
            }
            AppError::TooLarge { what, limit } => ErrorInfo {
                message: format!(
                    "{what} is larger than this server's limit of {}; ask the operator to raise it (oomdoc serve --help lists the limits)",
                    human_bytes(limit)
                ),
                internal: None,
            },
            AppError::Internal(detail) => {
                ErrorInfo { message: "internal error; it has been logged".into(), internal: Some(detail) }
            }
            AppError::Unauthorized(m) => {
                let mut resp = status.into_response();
                resp.extensions_mut().insert(ErrorInfo { message: m, internal: None });
                resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"oomdoc\""));
                return resp;
            }
            AppError::NotFound(m)
            | AppError::BadRequest(m)
            | AppError::Forbidden(m)
            | AppError::Unprocessable(m)
            | AppError::NotImplemented(m) => ErrorInfo { message: m, internal: None },
        };
        let mut resp = status.into_response();
        resp.extensions_mut().insert(info);
        if let Some(s) = retry_after {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        resp
    }
}

/// Request ids: a per-process nonce and a counter, so ids from restarts do not collide.
fn new_request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static NONCE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let nonce = *NONCE.get_or_init(|| {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        (t.as_nanos() as u32) ^ std::process::id().rotate_left(16)
    });
    format!("{nonce:08x}-{:06x}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A reverse proxy's `X-Request-Id`, if it looks like one (it is echoed into logs and pages).
fn accepted_request_id(req: &Request) -> Option<String> {
    let v = req.headers().get("x-request-id")?.to_str().ok()?;
    let ok = !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    ok.then(|| v.to_string())
}

#[derive(Debug, Clone)]
pub struct RequestId(pub String);

pub fn wants_json(path: &str) -> bool {
    path.starts_with("/api/") || path == "/healthz" || path.ends_with(".json")
}

/// The outermost layer: request id, panic catching, uniform error bodies,
/// security headers, optional access log.
pub async fn request_context(access_log: bool, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = accepted_request_id(&req).unwrap_or_else(new_request_id);
    req.extensions_mut().insert(RequestId(id.clone()));
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let lang = crate::html::lang_of_query(req.uri().query());

    let mut resp = match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(r) => r,
        Err(p) => {
            eprintln!("oomdoc serve: request {id} {method} {path} panicked: {}", panic_message(&*p));
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    };
    let status = resp.status();
    let handler_made_body = resp.extensions().get::<ErrorInfo>().is_none()
        && resp.headers().get(header::CONTENT_TYPE).is_some_and(|v| {
            v.as_bytes().starts_with(b"text/html") || v.as_bytes().starts_with(b"application/json")
        });
    if (status.is_client_error() || status.is_server_error()) && !handler_made_body {
        resp = finish_error(resp, &id, &method, &path, lang).await;
    }
    let headers = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&id) {
        headers.insert("x-request-id", v);
    }
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    let is_html = headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/html"));
    if is_html && !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        // Defence in depth behind escaping: no inline script can run on our pages.
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(crate::html::CSP));
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    if access_log {
        eprintln!("{id} {method} {path} {} {:.1}ms", resp.status().as_u16(), started.elapsed().as_secs_f64() * 1e3);
    }
    resp
}

/// Give every error response the same shape: `{"error":{"status","message","request_id"}}`
/// for the API, an HTML page for browsers.
async fn finish_error(resp: Response, id: &str, method: &axum::http::Method, path: &str, lang: Lang) -> Response {
    let status = resp.status();
    let allow = resp.headers().get(header::ALLOW).cloned();
    let authenticate = resp.headers().get(header::WWW_AUTHENTICATE).cloned();
    let retry_after = resp.headers().get(header::RETRY_AFTER).cloned();
    let info = resp.extensions().get::<ErrorInfo>().cloned();
    let message = match info {
        Some(ErrorInfo { message, internal }) => {
            if let Some(detail) = internal {
                eprintln!("oomdoc serve: request {id} {method} {path} failed: {detail}");
            }
            message
        }
        None => {
            // Errors produced outside our handlers: extractor rejections (their short
            // text body is useful), body limits, timeouts, unknown routes.
            let body = axum::body::to_bytes(resp.into_body(), 4096).await.unwrap_or_default();
            let text = String::from_utf8_lossy(&body).trim().to_string();
            match status {
                StatusCode::INTERNAL_SERVER_ERROR => "internal error; it has been logged".to_string(),
                StatusCode::PAYLOAD_TOO_LARGE => "request body is larger than this server's limit".to_string(),
                StatusCode::REQUEST_TIMEOUT | StatusCode::SERVICE_UNAVAILABLE if text.is_empty() => {
                    "the request took longer than this server's time limit".to_string()
                }
                StatusCode::NOT_FOUND if text.is_empty() => format!("no page at {path}"),
                StatusCode::METHOD_NOT_ALLOWED if text.is_empty() => format!("{method} is not allowed on {path}"),
                _ if text.is_empty() => status.canonical_reason().unwrap_or("error").to_string(),
                _ => text,
            }
        }
    };
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        eprintln!("oomdoc serve: request {id} {method} {path} -> 500");
    }
    let mut out = if wants_json(path) {
        let body = serde_json::json!({ "error": { "status": status.as_u16(), "message": message, "request_id": id } });
        (status, axum::Json(body)).into_response()
    } else {
        let page = crate::html::error_page(status, &message, id, lang);
        (status, crate::html::Page(page)).into_response()
    };
    if let Some(allow) = allow {
        out.headers_mut().insert(header::ALLOW, allow);
    }
    if let Some(retry_after) = retry_after {
        out.headers_mut().insert(header::RETRY_AFTER, retry_after);
    }
    if let Some(v) = authenticate {
        out.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    out.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    out
}

/// Per-route body limit: reject a declared oversize body before reading it, and turn
/// every 413 from the extractors into one message naming the limit.
pub async fn enforce_body_limit(
    axum::extract::State(limit): axum::extract::State<(&'static str, usize)>,
    req: Request,
    next: Next,
) -> Response {
    let (what, max) = limit;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return AppError::TooLarge { what, limit: max }.into_response();
    }
    let resp = next.run(req).await;
    if resp.status() == StatusCode::PAYLOAD_TOO_LARGE && resp.extensions().get::<ErrorInfo>().is_none() {
        return AppError::TooLarge { what, limit: max }.into_response();
    }
    resp
}
