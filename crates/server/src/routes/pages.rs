//! HTML pages.

use super::{input, Shared};
use crate::{
    error::AppError,
    feedback::FeedbackRequest,
    html::{diagnosis, encode_component, kb as kb_html, tools, Page},
    kb_query::KbFilter,
};
use axum::{
    extract::{Path, Query, Request, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Redirect, Response},
    Form,
};
use oomdoc_kb::{KnowledgeBase, Lang};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
pub struct LangQuery {
    pub lang: Option<String>,
    /// Set after a form feedback post: the fix to thank for.
    pub thanks: Option<String>,
}

impl LangQuery {
    pub fn lang(&self) -> Lang {
        self.lang.as_deref().and_then(Lang::parse).unwrap_or_default()
    }
}

pub async fn diagnose_form(Query(q): Query<LangQuery>) -> Page {
    Page(diagnosis::form_page(q.lang()))
}

/// The form's post. A log the user chose to keep gets its own address: the answer is a
/// redirect there (so the page can be linked and reloaded); otherwise the page itself.
pub async fn diagnose(State(state): State<Shared>, req: Request) -> Result<Response, AppError> {
    let headers = req.headers().clone();
    let sub = input::read_log(req, state.config.limits.log_bytes).await?;
    crate::csrf::verify_form(&headers, sub.csrf.as_deref())?;
    if sub.bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(AppError::BadRequest("the log is empty: paste it or choose a file".into()));
    }
    let lang = sub.lang;
    let (report, link) = state.diagnose_and_maybe_store(sub).await?;
    if let Some(link) = link {
        return Ok(Redirect::to(&diagnosis::kept_href(&link, lang)).into_response());
    }
    let outcomes = state.outcomes_for(finding_ids(&report)).await?;
    Ok(Page(diagnosis::report_page(&report, &outcomes, None, lang)).into_response())
}

fn finding_ids(report: &serde_json::Value) -> Vec<String> {
    report
        .get("findings")
        .and_then(|f| f.as_array())
        .into_iter()
        .flatten()
        .filter_map(|f| f.get("id").and_then(|i| i.as_str()).map(str::to_string))
        .collect()
}

/// `/diagnoses/{link}` (the page) and `/diagnoses/{link}.json` (every finding, as
/// `POST /api/v1/diagnose` answers): the diagnosis of a log its sender chose to keep.
pub async fn kept_diagnosis(
    State(state): State<Shared>,
    Path(file): Path<String>,
    Query(q): Query<LangQuery>,
) -> Result<Response, AppError> {
    let lang = q.lang();
    let (link, json) = match file.strip_suffix(".json") {
        Some(link) => (link, true),
        None => (file.as_str(), false),
    };
    let report = state.diagnose_kept(link, lang).await?;
    let mut r = if json {
        axum::Json(report).into_response()
    } else {
        let outcomes = state.outcomes_for(finding_ids(&report)).await?;
        Page(diagnosis::report_page(&report, &outcomes, Some(link), lang)).into_response()
    };
    // The address is the only key to the log: keep it out of other sites' logs and search indexes.
    r.headers_mut().insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    r.headers_mut().insert("x-robots-tag", HeaderValue::from_static("noindex"));
    Ok(r)
}

pub async fn kb_list(Query(filter): Query<KbFilter>) -> Page {
    let entries = filter.apply(KnowledgeBase::get());
    Page(kb_html::list_page(&filter, &entries))
}

/// `/kb/{id}`, `/kb/{id}.json`, `/kb/{id}.md`; a vendor code (`/kb/E1001`)
/// redirects to the entry's id.
pub async fn kb_entry(
    State(state): State<Shared>,
    Path(file): Path<String>,
    Query(q): Query<LangQuery>,
    req: Request,
) -> Result<Response, AppError> {
    let (key, format) = if let Some(k) = file.strip_suffix(".json") {
        (k, "json")
    } else if let Some(k) = file.strip_suffix(".md") {
        (k, "md")
    } else {
        (file.as_str(), "html")
    };
    let kb = KnowledgeBase::get();
    let entry = kb.lookup(key).ok_or_else(|| AppError::NotFound(format!("no knowledge-base entry `{key}`")))?;
    if entry.id != key {
        let suffix = match format {
            "json" => ".json",
            "md" => ".md",
            _ => "",
        };
        let query = req.uri().query().map(|q| format!("?{q}")).unwrap_or_default();
        return Ok(Redirect::permanent(&format!("/kb/{}{suffix}{query}", encode_component(&entry.id))).into_response());
    }
    let lang = q.lang();
    Ok(match format {
        "json" => axum::Json(entry).into_response(),
        "md" => {
            let mut r = oomdoc_kb::to_markdown(entry, lang).into_response();
            r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/markdown; charset=utf-8"));
            r
        }
        _ => {
            let outcomes = state.outcomes(entry.id.clone()).await?;
            Page(kb_html::entry_page(entry, lang, &outcomes, q.thanks.as_deref())).into_response()
        }
    })
}

#[derive(Debug, Deserialize)]
pub struct FeedbackForm {
    entry: String,
    fix: String,
    outcome: String,
    platform: Option<String>,
    hardware: Option<String>,
    version: Option<String>,
    note: Option<String>,
    lang: Option<String>,
    csrf: Option<String>,
}

/// The no-script path of the feedback buttons: store, then show the entry with its new counts.
pub async fn feedback(
    State(state): State<Shared>,
    crate::ClientAddr(client): crate::ClientAddr,
    headers: HeaderMap,
    Form(form): Form<FeedbackForm>,
) -> Result<Response, AppError> {
    crate::csrf::verify_form(&headers, form.csrf.as_deref())?;
    let lang = form.lang.as_deref().and_then(Lang::parse).unwrap_or_default();
    let report = FeedbackRequest {
        entry: form.entry,
        fix: form.fix,
        outcome: form.outcome,
        platform: form.platform,
        hardware: form.hardware,
        version: form.version,
        note: form.note,
        report_id: None,
    }
    .validate(KnowledgeBase::get())?;
    let (entry, fix) = (report.0.entry.clone(), report.0.fix.clone());
    state.record_feedback(report.0, report.1, client).await?;
    let lang_q = if lang == Lang::Zh { "&lang=zh" } else { "" };
    let to = format!(
        "/kb/{}?thanks={}{lang_q}#fix-{}",
        encode_component(&entry),
        encode_component(&fix),
        encode_component(&fix)
    );
    Ok(Redirect::to(&to).into_response())
}

pub async fn memory_form(State(state): State<Shared>, Query(q): Query<LangQuery>) -> Page {
    Page(tools::memory_form(q.lang(), state.config.limits.dump_bytes))
}

/// The memory viewer's own HTML report, as `oomdoc memory --format html` writes it.
pub async fn memory(State(state): State<Shared>, req: Request) -> Result<Response, AppError> {
    let report = state.memory_report(req, true).await?;
    let mut r = axum::response::Html(report.html).into_response();
    // The report is a self-contained page with inline style and SVG, and no script.
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'",
        ),
    );
    Ok(r)
}

#[derive(Debug, Deserialize)]
pub struct PlanForm {
    kind: String,
    spec: String,
    #[serde(default)]
    chip: Option<String>,
    #[serde(default)]
    dtype: Option<String>,
    lang: Option<String>,
    #[serde(default)]
    csrf: Option<String>,
}

pub async fn plan_form(Query(q): Query<LangQuery>) -> Page {
    Page(tools::plan_form(q.lang(), None, None))
}

pub async fn plan(State(state): State<Shared>, headers: HeaderMap, Form(form): Form<PlanForm>) -> Result<Response, AppError> {
    crate::csrf::verify_form(&headers, form.csrf.as_deref())?;
    let lang = form.lang.as_deref().and_then(Lang::parse).unwrap_or_default();
    let given = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
    let input = crate::engines::PlanInput {
        kind: form.kind,
        spec: form.spec,
        chip: given(form.chip),
        dtype: given(form.dtype),
        triton_version: None,
    };
    match state.plan(input.clone()).await {
        Ok(plan) => Ok(Page(tools::plan_result(lang, &plan)).into_response()),
        // A bad spec goes back to the form with the message, keeping what was typed.
        Err(AppError::Unprocessable(msg)) => {
            Ok((StatusCode::UNPROCESSABLE_ENTITY, Page(tools::plan_form(lang, Some(&input), Some(&msg)))).into_response())
        }
        Err(e) => Err(e),
    }
}

/// `/team`: the fleet view; filters in the URL.
pub async fn team(
    State(state): State<Shared>,
    headers: HeaderMap,
    Query(filter): Query<crate::fleet::Filter>,
) -> Result<Page, AppError> {
    crate::ingest::authorize_read(&state, &headers).await?;
    let (since, rows, truncated) = super::api::filtered_reports(&state, &filter, false).await?;
    let summary = crate::fleet::summarize(&filter, since, &rows, truncated);
    let fixes = super::api::fixes_of(&state, &summary).await?;
    Ok(Page(crate::html::team::page(&summary, &fixes)))
}
