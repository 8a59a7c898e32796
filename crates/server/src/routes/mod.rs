//! URL map. Handlers are thin: read the request, call the library (through
//! [`crate::engines`] or `oomdoc-kb`), render.

pub mod api;
pub mod input;
pub mod pages;

use crate::{
    error::{enforce_body_limit, request_context},
    AppState,
};
use axum::{
    extract::DefaultBodyLimit,
    http::{header, StatusCode},
    middleware::{from_fn, from_fn_with_state},
    response::IntoResponse,
    routing::{get, post},
    Router,
};
use std::sync::Arc;
use tower_http::timeout::TimeoutLayer;

pub type Shared = Arc<AppState>;

pub fn router(state: Shared) -> Router {
    let limits = state.config.limits;
    let timeout = TimeoutLayer::with_status_code(StatusCode::SERVICE_UNAVAILABLE, state.config.request_timeout);
    let upload_timeout = TimeoutLayer::with_status_code(StatusCode::SERVICE_UNAVAILABLE, state.config.upload_timeout);

    let logs = Router::new()
        .route("/", get(pages::diagnose_form).post(pages::diagnose))
        .route("/api/v1/diagnose", post(api::diagnose))
        .route("/api/v1/reports", post(api::ingest_reports).get(api::list_reports))
        .layer(DefaultBodyLimit::max(limits.log_bytes))
        .layer(from_fn_with_state(state.clone(), crate::limits::reserve_log_memory))
        .layer(from_fn_with_state(("the log", limits.log_bytes), enforce_body_limit))
        .layer(timeout.clone());
    let dumps = Router::new()
        .route("/memory", get(pages::memory_form).post(pages::memory))
        .route("/api/v1/memory", post(api::memory))
        .layer(DefaultBodyLimit::max(limits.dump_bytes))
        .layer(from_fn_with_state(("the dump", limits.dump_bytes), enforce_body_limit))
        .layer(upload_timeout);
    let forms = Router::new()
        .route("/feedback", post(pages::feedback))
        .route("/api/v1/feedback", post(api::feedback))
        .route("/plan", get(pages::plan_form).post(pages::plan))
        .route("/api/v1/plan", post(api::plan))
        .layer(DefaultBodyLimit::max(limits.form_bytes))
        .layer(from_fn_with_state(("the form", limits.form_bytes), enforce_body_limit))
        .layer(timeout.clone());
    let reads = Router::new()
        .route("/kb", get(pages::kb_list))
        .route("/kb/{file}", get(pages::kb_entry))
        .route("/api/v1/kb", get(api::kb_list))
        .route("/api/v1/kb/{id}", get(api::kb_entry))
        .route("/api/v1/kb/{id}/outcomes", get(api::kb_outcomes))
        .route("/api/v1/openapi.json", get(api::openapi))
        .route("/api/v1/reports/{id}", get(api::report))
        .route("/api/v1/fleet", get(api::fleet))
        .route("/team", get(pages::team))
        .route("/diagnoses/{link}", get(pages::kept_diagnosis))
        .route("/healthz", get(api::healthz))
        .route("/static/oomdoc.css", get(|| async { static_file("text/css; charset=utf-8", crate::html::CSS) }))
        .route("/static/oomdoc.js", get(|| async { static_file("text/javascript; charset=utf-8", crate::html::JS) }))
        .layer(DefaultBodyLimit::max(limits.form_bytes))
        .layer(timeout);

    let access_log = state.config.access_log;
    Router::new()
        .merge(logs)
        .merge(dumps)
        .merge(forms)
        .merge(reads)
        .fallback(|| async { StatusCode::NOT_FOUND })
        .layer(from_fn_with_state(state.clone(), crate::csrf::guard))
        // Before anything else: a request for another host name (DNS rebinding) is refused.
        .layer(from_fn_with_state(state.clone(), crate::host::guard))
        .with_state(state)
        .layer(from_fn(move |req, next| request_context(access_log, req, next)))
}

fn static_file(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "public, max-age=3600")], body)
}
