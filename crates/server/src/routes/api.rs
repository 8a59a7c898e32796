//! `/api/v1`: the CLI's JSON contracts over HTTP.

use super::{input, Shared};
use crate::{error::AppError, feedback::FeedbackRequest, kb_query::KbFilter};
use axum::{
    extract::{Path, Request, State},
    http::{header, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use oomdoc_kb::KnowledgeBase;
use serde_json::{json, Value};

/// `POST /api/v1/diagnose`: the body is the log (or multipart with `log`/`file`);
/// the answer is exactly `oomdoc diagnose --format json`.
pub async fn diagnose(State(state): State<Shared>, req: Request) -> Result<Json<Value>, AppError> {
    let sub = input::read_log(req, state.config.limits.log_bytes).await?;
    Ok(Json(state.diagnose_and_maybe_store(sub).await?))
}

/// `oomdoc explain --list --format json`, filtered like `/kb`.
pub async fn kb_list(axum::extract::Query(filter): axum::extract::Query<KbFilter>) -> Json<Vec<Value>> {
    let lang = filter.lang();
    Json(filter.apply(KnowledgeBase::get()).into_iter().map(|e| e.list_row(lang)).collect())
}

fn find_entry(key: &str) -> Result<&'static oomdoc_kb::Entry, AppError> {
    KnowledgeBase::get().lookup(key).ok_or_else(|| AppError::NotFound(format!("no knowledge-base entry `{key}`")))
}

/// The entry exactly as the knowledge base serializes it (id, vendor code or code name accepted).
pub async fn kb_entry(Path(id): Path<String>) -> Result<Json<&'static oomdoc_kb::Entry>, AppError> {
    Ok(Json(find_entry(&id)?))
}

/// Measured outcomes of every fix of an entry, in the entry's order (unreported fixes have zero counts).
pub async fn kb_outcomes(State(state): State<Shared>, Path(id): Path<String>) -> Result<Json<Value>, AppError> {
    let entry = find_entry(&id)?;
    let mut measured = state.outcomes(entry.id.clone()).await?;
    let fixes: Vec<_> = entry
        .fixes
        .iter()
        .map(|f| measured.remove(&f.id).unwrap_or_else(|| crate::db::FixOutcomes { fix: f.id.clone(), ..Default::default() }))
        .collect();
    Ok(Json(json!({
        "entry": entry.id,
        "min_reports_for_rate": crate::stats::MIN_REPORTS_FOR_RATE,
        "fixes": fixes,
    })))
}

/// `POST /api/v1/feedback`: 201 once the report is durably stored.
pub async fn feedback(
    State(state): State<Shared>,
    Json(req): Json<FeedbackRequest>,
) -> Result<(StatusCode, Json<Value>), AppError> {
    let report = req.validate(KnowledgeBase::get())?;
    let (entry, fix) = (report.entry.clone(), report.fix.clone());
    let id = state.record_feedback(report.clone()).await?;
    let measured = state.outcomes(entry).await?.remove(&fix).unwrap_or_default();
    Ok((StatusCode::CREATED, Json(json!({ "id": id, "report": report, "measured": measured }))))
}

/// `POST /api/v1/memory`: multipart dump files or one archive -> `oomdoc memory --format json`.
pub async fn memory(State(state): State<Shared>, req: Request) -> Result<Json<Value>, AppError> {
    Ok(Json(state.memory_report(req, false).await?.json))
}

/// `POST /api/v1/plan`: `{kind, spec, chip?}` -> `oomdoc plan --format json`.
pub async fn plan(State(state): State<Shared>, Json(input): Json<crate::engines::PlanInput>) -> Result<Json<Value>, AppError> {
    Ok(Json(state.plan(input).await?))
}

pub async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], crate::OPENAPI).into_response()
}

pub async fn healthz(State(state): State<Shared>) -> Result<Json<Value>, AppError> {
    state.check_db().await?;
    Ok(Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "kb_entries": KnowledgeBase::get().entries().len(),
    })))
}
