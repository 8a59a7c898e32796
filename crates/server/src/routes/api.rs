//! `/api/v1`: the CLI's JSON contracts over HTTP.

use super::{input, Shared};
use crate::{error::AppError, feedback::FeedbackRequest, kb_query::KbFilter};
use axum::{
    extract::{Path, Query, Request, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use oomdoc_kb::KnowledgeBase;
use serde_json::{json, Value};

/// `POST /api/v1/diagnose`: the body is the log (or multipart with `log`/`file`);
/// the answer is exactly `oomdoc diagnose --format json`.
/// With `store_log=1`, the kept diagnosis's page is named in a `Link` header (the body
/// stays the `diagnose --format json` contract).
pub async fn diagnose(State(state): State<Shared>, req: Request) -> Result<axum::response::Response, AppError> {
    use axum::response::IntoResponse;
    let sub = input::read_log(req, state.config.limits.log_bytes).await?;
    let (report, link) = state.diagnose_and_maybe_store(sub).await?;
    let mut r = Json(report).into_response();
    if let Some(link) = link {
        let value = format!("</diagnoses/{link}>; rel=\"alternate\"; type=\"text/html\"");
        r.headers_mut().insert(axum::http::header::LINK, axum::http::HeaderValue::from_str(&value).map_err(|e| AppError::Internal(e.to_string()))?);
    }
    Ok(r)
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
        .map(|f| measured.remove(&f.id).unwrap_or_else(|| crate::store::FixOutcomes { fix: f.id.clone(), ..Default::default() }))
        .collect();
    Ok(Json(json!({
        "entry": entry.id,
        "min_reports_for_rate": crate::stats::MIN_REPORTS_FOR_RATE,
        "fixes": fixes,
    })))
}

/// `POST /api/v1/feedback`: 201 once the report is durably stored; 200 with
/// `"duplicate": true` when it repeats one already counted (same `report_id`, or the same
/// report from the same address within the duplicate window); 429 over the hourly limit.
pub async fn feedback(
    State(state): State<Shared>,
    crate::ClientAddr(client): crate::ClientAddr,
    Json(req): Json<FeedbackRequest>,
) -> Result<(StatusCode, Json<Value>), AppError> {
    let (report, report_id) = req.validate(KnowledgeBase::get())?;
    let (entry, fix) = (report.entry.clone(), report.fix.clone());
    let saved = state.record_feedback(report.clone(), report_id.clone(), client).await?;
    let measured = state.outcomes(entry).await?.remove(&fix).unwrap_or_default();
    let status = if saved.counted { StatusCode::CREATED } else { StatusCode::OK };
    Ok((
        status,
        Json(json!({ "id": saved.id, "duplicate": !saved.counted, "report_id": report_id, "report": report, "measured": measured })),
    ))
}

/// `POST /api/v1/reports`: job-failure reports from jobs and log shippers ([`crate::ingest`]).
pub async fn ingest_reports(State(state): State<Shared>, req: Request) -> Result<(StatusCode, Json<Value>), AppError> {
    let (parts, body) = req.into_parts();
    let limit = state.config.limits.log_bytes;
    let body = axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| AppError::TooLarge { what: "the reports", limit })?;
    let done = crate::ingest::ingest(&state, &parts.headers, parts.uri.query(), &body).await?;
    let status = if done.stored > 0 { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(serde_json::to_value(done).unwrap_or_default())))
}

/// The reports a fleet filter selects, and the filter's window.
pub async fn filtered_reports(
    state: &Shared,
    filter: &crate::fleet::Filter,
    with_report: bool,
) -> Result<(String, Vec<crate::store::ReportRow>, bool), AppError> {
    let query = filter.query(with_report).map_err(AppError::Unprocessable)?;
    let rows = state.db.reports(&query).await?;
    let truncated = rows.len() as u32 >= query.limit;
    let rows = rows.into_iter().filter(|r| filter.matches(r)).collect();
    Ok((query.since.unwrap_or_default(), rows, truncated))
}

/// `GET /api/v1/reports`: the matching reports (JSON, or CSV with `format=csv`).
pub async fn list_reports(
    State(state): State<Shared>,
    headers: HeaderMap,
    Query(filter): Query<crate::fleet::Filter>,
) -> Result<Response, AppError> {
    crate::ingest::authorize_read(&state, &headers).await?;
    let (_, rows, truncated) = filtered_reports(&state, &filter, false).await?;
    Ok(export(&filter, rows, truncated))
}

fn export(filter: &crate::fleet::Filter, rows: Vec<crate::store::ReportRow>, truncated: bool) -> Response {
    if filter.format.as_deref() == Some("csv") {
        let mut r = crate::fleet::csv(&rows).into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/csv; charset=utf-8"));
        r.headers_mut()
            .insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment; filename=\"oomdoc-reports.csv\""));
        return r;
    }
    Json(json!({ "filter": filter, "truncated": truncated, "reports": rows })).into_response()
}

/// `GET /api/v1/reports/{id}`: one report with its diagnosis.
pub async fn report(State(state): State<Shared>, headers: HeaderMap, Path(id): Path<i64>) -> Result<Json<Value>, AppError> {
    crate::ingest::authorize_read(&state, &headers).await?;
    let q = crate::store::ReportQuery { id: Some(id), limit: 1, with_report: true, ..Default::default() };
    let row = state.db.reports(&q).await?.pop().ok_or_else(|| AppError::NotFound(format!("no report {id}")))?;
    Ok(Json(serde_json::to_value(row).unwrap_or_default()))
}

/// `GET /api/v1/fleet`: what the filtered failures add up to ([`crate::fleet::Summary`]),
/// with each entry's measured fixes; `format=csv` exports the reports instead.
pub async fn fleet(
    State(state): State<Shared>,
    headers: HeaderMap,
    Query(filter): Query<crate::fleet::Filter>,
) -> Result<Response, AppError> {
    crate::ingest::authorize_read(&state, &headers).await?;
    let (since, rows, truncated) = filtered_reports(&state, &filter, false).await?;
    if filter.format.as_deref() == Some("csv") {
        return Ok(export(&filter, rows, truncated));
    }
    let summary = crate::fleet::summarize(&filter, since, &rows, truncated);
    let fixes = fixes_of(&state, &summary).await?;
    let mut v = serde_json::to_value(&summary).unwrap_or_default();
    v["fixes"] = serde_json::to_value(fixes).unwrap_or_default();
    Ok(Json(v).into_response())
}

/// For each entry in the view, the fixes users reported on (counts and Wilson interval).
pub async fn fixes_of(
    state: &Shared,
    summary: &crate::fleet::Summary,
) -> Result<std::collections::BTreeMap<String, Vec<crate::store::FixOutcomes>>, AppError> {
    let ids: Vec<String> = summary.by_entry.iter().filter(|e| e.entry != "none").take(50).map(|e| e.entry.clone()).collect();
    let measured = state.outcomes_for(ids).await?;
    Ok(measured.into_iter().map(|(entry, fixes)| (entry, fixes.into_values().collect())).collect())
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
        "database": state.db.backend(),
        "version": env!("CARGO_PKG_VERSION"),
        "kb_entries": KnowledgeBase::get().entries().len(),
    })))
}
