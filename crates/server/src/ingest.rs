//! `POST /api/v1/reports`: failed jobs report themselves (`oomdoc run --post`,
//! `oomdoc diagnose --post`, the Slurm epilog in `deploy/`), or log shippers send lines.
//!
//! Every request carries `Authorization: Bearer <token>` (tokens: `oomdoc serve token
//! create`). The body is one of:
//! - a JSON record `{"report": <diagnose/run JSON>, "labels": {…}, "report_id": "…"}`, or
//!   `{"log": "<text>", "labels": {…}}` to have the server diagnose it;
//! - a batch of such records: a JSON array, or NDJSON (one per line);
//! - log-shipper lines (Vector's `message`, Fluent Bit's `log`, with the shipper's own
//!   fields such as `host` or `kubernetes.pod_name`), in the same array or NDJSON form:
//!   lines are grouped by job (pod, job id, or host and file), each group is diagnosed,
//!   and a group with findings is stored as one report;
//! - a plain-text log (`Content-Type: text/plain`) with labels in the query string.
//!
//! Retries are safe: a record's `report_id` (for shipped lines, a hash of the group and
//! its text) stores it once, whichever replica gets the retry.

use crate::{
    error::AppError,
    routes::Shared,
    store::{self, Labels, NewReport, ReportSaved, TokenInfo},
};
use axum::http::{header, HeaderMap};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Records in one batch; more is a 413 (send smaller batches).
pub const MAX_RECORDS: usize = 10_000;

/// The token of the request, checked against the store.
pub async fn authenticate(state: &Shared, headers: &HeaderMap) -> Result<TokenInfo, AppError> {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            AppError::Unauthorized(
                "this needs an API token: send `Authorization: Bearer <token>` (the operator creates one with `oomdoc serve token create NAME --db …`)"
                    .into(),
            )
        })?;
    state
        .db
        .token_by_hash(&store::token_hash(given))
        .await?
        .ok_or_else(|| AppError::Unauthorized("unknown or revoked API token".into()))
}

/// Reads of the team's data: open, or with `--require-token-for-reads` a token too.
pub async fn authorize_read(state: &Shared, headers: &HeaderMap) -> Result<(), AppError> {
    if state.config.require_token_for_reads {
        authenticate(state, headers).await?;
    }
    Ok(())
}

/// An ingestion record as sent (the shape of `oomdoc run --post`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    #[serde(default)]
    report_id: Option<String>,
    #[serde(default)]
    labels: Labels,
    #[serde(default)]
    report: Option<Value>,
    #[serde(default)]
    log: Option<String>,
}

fn one_line(name: &str, v: &str) -> Result<(), AppError> {
    if v.chars().count() > store::MAX_ID_CHARS {
        return Err(AppError::Unprocessable(format!("`{name}` is longer than {} characters", store::MAX_ID_CHARS)));
    }
    if v.chars().any(char::is_control) {
        return Err(AppError::Unprocessable(format!("`{name}` must be one line of text")));
    }
    Ok(())
}

/// Labels are shown on pages and used as filters: short, one line, few.
pub fn validate_labels(l: &Labels) -> Result<(), AppError> {
    for (name, v) in [
        ("job_id", &l.job_id),
        ("cluster", &l.cluster),
        ("host", &l.host),
        ("rank", &l.rank),
        ("user", &l.user),
        ("image", &l.image),
    ] {
        if let Some(v) = v {
            one_line(name, v)?;
        }
    }
    if l.versions.len() + l.extra.len() > 32 {
        return Err(AppError::Unprocessable("at most 32 `versions` and `extra` labels".into()));
    }
    for (k, v) in l.versions.iter().chain(&l.extra) {
        one_line("label name", k)?;
        one_line(k, v)?;
    }
    Ok(())
}

/// What the fleet view needs from a diagnosis (`diagnose --format json`, or `run`'s with
/// `exit_status`): the first fatal finding's entry and fix category, and whether any
/// finding is a memory failure.
pub fn summarize(report: &Value, labels: &mut Labels) -> Result<(Option<String>, Option<String>, bool, u32), AppError> {
    let findings = report
        .get("findings")
        .and_then(Value::as_array)
        .ok_or_else(|| AppError::Unprocessable("`report` must be oomdoc's diagnosis JSON, with a `findings` list".into()))?;
    let first = findings
        .iter()
        .find(|f| f.get("first_fatal").and_then(Value::as_bool) == Some(true))
        .or_else(|| findings.first());
    let entry = first.and_then(|f| f.get("id")).and_then(Value::as_str).map(str::to_string);
    if let Some(e) = &entry {
        one_line("findings[].id", e)?;
    }
    let category = first
        .and_then(|f| f.get("fixes"))
        .and_then(Value::as_array)
        .and_then(|fixes| fixes.first())
        .and_then(|fix| fix.get("category"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .filter(|c| one_line("category", c).is_ok());
    let memory = findings.iter().any(|f| f.get("kind").and_then(Value::as_str) == Some("oom"));
    if labels.exit_status.is_none() {
        labels.exit_status = report.get("exit_status").and_then(Value::as_i64);
    }
    Ok((entry, category, memory, findings.len().min(u32::MAX as usize) as u32))
}

/// One parsed item of a request body.
enum Item {
    Record(Box<Record>),
    /// A shipper's line: its text and its other fields.
    Line(String, Map<String, Value>),
}

fn item_of(v: Value) -> Result<Item, AppError> {
    let Value::Object(mut map) = v else {
        return Err(AppError::Unprocessable("each record must be a JSON object".into()));
    };
    let is_record = map.contains_key("labels") || map.contains_key("report") || map.contains_key("report_id");
    if is_record {
        let r: Record = serde_json::from_value(Value::Object(map)).map_err(|e| AppError::Unprocessable(format!("record: {e}")))?;
        return Ok(Item::Record(Box::new(r)));
    }
    for key in ["message", "log", "msg"] {
        if let Some(Value::String(text)) = map.remove(key) {
            return Ok(Item::Line(text, map));
        }
    }
    Err(AppError::Unprocessable(
        "a record needs `report` or `log` (with optional `labels`), or a shipped line's `message` or `log`".into(),
    ))
}

/// The body's items: one JSON value, a JSON array, or NDJSON.
fn parse_body(body: &[u8]) -> Result<Vec<Item>, AppError> {
    let text = std::str::from_utf8(body).map_err(|_| AppError::BadRequest("the body is not UTF-8 JSON".into()))?;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(AppError::BadRequest("the body is empty".into()));
    }
    let values: Vec<Value> = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Array(items)) => items,
        Ok(v) => vec![v],
        Err(_) => trimmed
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| serde_json::from_str(l).map_err(|e| AppError::BadRequest(format!("line {}: not JSON: {e}", i + 1))))
            .collect::<Result<_, _>>()?,
    };
    if values.len() > MAX_RECORDS {
        return Err(AppError::Refused(crate::limits::Refusal {
            status: axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            message: format!("{} records in one batch; at most {MAX_RECORDS}", values.len()),
            retry_after: None,
        }));
    }
    values.into_iter().map(item_of).collect()
}

fn field<'a>(map: &'a Map<String, Value>, path: &[&str]) -> Option<&'a str> {
    let mut v = map.get(path[0])?;
    for p in &path[1..] {
        v = v.get(p)?;
    }
    v.as_str().filter(|s| !s.is_empty())
}

/// A shipped line's labels and group key, from the fields Vector, Fluent Bit and their
/// Kubernetes enrichment set.
fn line_labels(map: &Map<String, Value>) -> (String, Labels) {
    let pod = field(map, &["kubernetes", "pod_name"]).or_else(|| field(map, &["pod_name"])).or_else(|| field(map, &["pod"]));
    let mut l = Labels {
        job_id: field(map, &["job_id"]).or_else(|| field(map, &["labels", "job_id"])).map(str::to_string),
        cluster: field(map, &["cluster"]).map(str::to_string),
        host: field(map, &["host"]).or_else(|| field(map, &["hostname"])).or_else(|| field(map, &["kubernetes", "host"])).map(str::to_string),
        image: field(map, &["kubernetes", "container_image"]).or_else(|| field(map, &["image"])).map(str::to_string),
        ..Default::default()
    };
    if let Some(p) = pod {
        l.extra.insert("pod".into(), p.to_string());
    }
    if let Some(ns) = field(map, &["kubernetes", "namespace_name"]) {
        l.extra.insert("namespace".into(), ns.to_string());
    }
    let file = field(map, &["file"]).or_else(|| field(map, &["source"])).or_else(|| field(map, &["path"]));
    let key = format!(
        "{}\0{}\0{}\0{}",
        l.job_id.as_deref().unwrap_or(""),
        pod.unwrap_or(""),
        l.host.as_deref().unwrap_or(""),
        file.unwrap_or("")
    );
    (key, l)
}

/// What one ingestion request did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Ingested {
    /// Reports newly stored.
    pub stored: u32,
    /// Reports already stored under the same `report_id` (a retry): not stored again.
    pub duplicates: u32,
    /// Shipped line groups with no failure in them: not stored.
    pub without_findings: u32,
    pub reports: Vec<Value>,
}

impl Ingested {
    fn saved(&mut self, saved: ReportSaved, entry: &Option<String>, report_id: &Option<String>) {
        if saved.created {
            self.stored += 1;
        } else {
            self.duplicates += 1;
        }
        self.reports.push(json!({ "id": saved.id, "created": saved.created, "entry": entry, "report_id": report_id }));
    }
}

async fn diagnose_text(state: &Shared, text: String) -> Result<Value, AppError> {
    let diagnose = state.engines.diagnose;
    state.analyse(move || diagnose(text.as_bytes(), oomdoc_kb::Lang::En)).await
}

/// Store one report (diagnosed by the job or here).
async fn store_report(
    state: &Shared,
    token: &TokenInfo,
    source: &str,
    report_id: Option<String>,
    mut labels: Labels,
    report: Value,
    out: &mut Ingested,
) -> Result<(), AppError> {
    if let Some(id) = &report_id {
        one_line("report_id", id)?;
    }
    validate_labels(&labels)?;
    let (entry, category, memory_failure, findings) = summarize(&report, &mut labels)?;
    let new = NewReport {
        report_id: report_id.clone(),
        token_id: Some(token.id),
        source: source.to_string(),
        labels,
        entry: entry.clone(),
        category,
        memory_failure,
        findings,
        report,
    };
    let saved = state.db.add_report(&new).await?;
    out.saved(saved, &entry, &report_id);
    Ok(())
}

/// Labels of a plain-text log from the query string (`?job_id=…&host=…&version.torch=2.5.1`).
fn query_labels(query: Option<&str>) -> Result<(Option<String>, Labels), AppError> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query.unwrap_or("")).map_err(|e| AppError::BadRequest(format!("query: {e}")))?;
    let mut l = Labels::default();
    let mut report_id = None;
    for (k, v) in pairs {
        match k.as_str() {
            "report_id" => report_id = Some(v),
            "job_id" => l.job_id = Some(v),
            "cluster" => l.cluster = Some(v),
            "host" => l.host = Some(v),
            "rank" => l.rank = Some(v),
            "user" => l.user = Some(v),
            "image" => l.image = Some(v),
            "exit_status" => {
                l.exit_status = Some(v.parse().map_err(|_| AppError::Unprocessable("`exit_status` must be an integer".into()))?)
            }
            _ => {
                if let Some(fw) = k.strip_prefix("version.") {
                    l.versions.insert(fw.to_string(), v);
                } else if let Some(name) = k.strip_prefix("label.") {
                    l.extra.insert(name.to_string(), v);
                } else {
                    return Err(AppError::Unprocessable(format!("unknown label `{k}` (extra labels are `label.NAME=…`)")));
                }
            }
        }
    }
    Ok((report_id, l))
}

/// `POST /api/v1/reports`.
pub async fn ingest(state: &Shared, headers: &HeaderMap, query: Option<&str>, body: &[u8]) -> Result<Ingested, AppError> {
    let token = authenticate(state, headers).await?;
    let ctype = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    let mut out = Ingested::default();
    if ctype.starts_with("text/plain") {
        let (report_id, labels) = query_labels(query)?;
        let report = diagnose_text(state, String::from_utf8_lossy(body).into_owned()).await?;
        store_report(state, &token, "log", report_id, labels, report, &mut out).await?;
        return Ok(out);
    }
    let mut groups: BTreeMap<String, (Labels, String)> = BTreeMap::new();
    for item in parse_body(body)? {
        match item {
            Item::Record(r) => {
                let r = *r;
                let (source, report) = match (r.report, r.log) {
                    (Some(report), None) => ("report", report),
                    (None, Some(log)) => ("log", diagnose_text(state, log).await?),
                    _ => return Err(AppError::Unprocessable("a record has either `report` or `log`".into())),
                };
                store_report(state, &token, source, r.report_id, r.labels, report, &mut out).await?;
            }
            Item::Line(text, fields) => {
                let (key, labels) = line_labels(&fields);
                let group = groups.entry(key).or_insert_with(|| (labels, String::new()));
                group.1.push_str(text.trim_end_matches(['\r', '\n']));
                group.1.push('\n');
            }
        }
    }
    for (key, (labels, text)) in groups {
        let report = diagnose_text(state, text.clone()).await?;
        if report.get("findings").and_then(Value::as_array).is_none_or(|f| f.is_empty()) {
            out.without_findings += 1;
            continue;
        }
        // A shipper that retries the same batch sends the same group: store it once.
        let digest = store::sha256(format!("{key}\0{text}").as_bytes());
        let report_id = Some(format!("lines-{}", store::hex_prefix(&digest, 16)));
        store_report(state, &token, "lines", report_id, labels, report, &mut out).await?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_diagnosis() {
        let report = json!({"findings": [
            {"id": "generic.warning", "kind": "other", "first_fatal": false, "fixes": []},
            {"id": "pytorch.cuda-oom", "kind": "oom", "first_fatal": true, "fixes": [{"id": "x", "category": "smaller-working-set"}]}
        ], "exit_status": 1});
        let mut l = Labels::default();
        let (entry, category, memory, n) = summarize(&report, &mut l).unwrap();
        assert_eq!(entry.as_deref(), Some("pytorch.cuda-oom"));
        assert_eq!(category.as_deref(), Some("smaller-working-set"));
        assert!(memory);
        assert_eq!((n, l.exit_status), (2, Some(1)));
        assert!(summarize(&json!({"no": 1}), &mut l).is_err());
    }

    #[test]
    fn bodies_of_every_shape() {
        let one = br#"{"report": {"findings": []}, "labels": {"host": "n1"}}"#;
        assert!(matches!(parse_body(one).unwrap().as_slice(), [Item::Record(_)]));
        let array = br#"[{"message": "a", "host": "n1"}, {"log": "b", "kubernetes": {"pod_name": "p"}}]"#;
        assert!(matches!(parse_body(array).unwrap().as_slice(), [Item::Line(..), Item::Line(..)]));
        let ndjson = b"{\"message\": \"a\"}\n\n{\"labels\": {}, \"log\": \"x\"}\n";
        assert!(matches!(parse_body(ndjson).unwrap().as_slice(), [Item::Line(..), Item::Record(_)]));
        assert!(parse_body(b"{\"message\": \"a\"}\nnot json").is_err());
        assert!(parse_body(br#"{"labels": {"nope": 1}, "log": "x"}"#).is_err(), "unknown label fields are refused");
        let (key, l) = line_labels(json!({"kubernetes": {"pod_name": "train-0", "namespace_name": "ml"}, "host": "n1"}).as_object().unwrap());
        assert!(key.contains("train-0") && l.extra["pod"] == "train-0" && l.host.as_deref() == Some("n1"));
    }

    #[test]
    fn labels_from_a_query() {
        let (rid, l) = query_labels(Some("job_id=42&host=n1&version.torch=2.5.1&label.team=ml&exit_status=1&report_id=r1")).unwrap();
        assert_eq!(rid.as_deref(), Some("r1"));
        assert_eq!((l.job_id.as_deref(), l.exit_status), (Some("42"), Some(1)));
        assert_eq!(l.versions["torch"], "2.5.1");
        assert_eq!(l.extra["team"], "ml");
        assert!(query_labels(Some("bogus=1")).is_err());
        assert!(validate_labels(&Labels { host: Some("a\u{1b}[2J".into()), ..Default::default() }).is_err());
    }
}
