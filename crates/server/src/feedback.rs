//! Validating a feedback report before it is stored.

use crate::{
    store::{Feedback, Outcome},
    error::AppError,
};
use oomdoc_kb::KnowledgeBase;
use serde::Deserialize;

/// `POST /api/v1/feedback`. Unknown fields are refused, so a client cannot attach a
/// log (or anything else) to a report by accident.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackRequest {
    pub entry: String,
    pub fix: String,
    pub outcome: String,
    #[serde(default)]
    pub platform: Option<String>,
    #[serde(default)]
    pub hardware: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
    /// A client-chosen id (e.g. a UUID) that makes the post idempotent: the same id
    /// again, through any replica, is answered with the first report and not counted twice.
    #[serde(default)]
    pub report_id: Option<String>,
}

const SHORT_FIELD_CHARS: usize = 100;
const NOTE_CHARS: usize = 500;

fn optional(name: &str, v: Option<String>, max_chars: usize) -> Result<Option<String>, AppError> {
    let Some(v) = v else { return Ok(None) };
    let v = v.trim();
    if v.is_empty() {
        return Ok(None);
    }
    if v.chars().count() > max_chars {
        return Err(AppError::Unprocessable(format!("`{name}` is longer than {max_chars} characters")));
    }
    if v.chars().any(|c| c.is_control() && c != '\t') {
        return Err(AppError::Unprocessable(format!("`{name}` must be one line of text")));
    }
    Ok(Some(v.to_string()))
}

impl FeedbackRequest {
    /// The report must name a fix the knowledge base has; outcomes are one of two words.
    /// Returns the report and its `report_id`.
    pub fn validate(self, kb: &KnowledgeBase) -> Result<(Feedback, Option<String>), AppError> {
        let report_id = optional("report_id", self.report_id, crate::store::MAX_ID_CHARS)?;
        let entry = kb
            .by_id(self.entry.trim())
            .ok_or_else(|| AppError::Unprocessable(format!("no knowledge-base entry `{}`", self.entry.trim())))?;
        let fix = self.fix.trim();
        if !entry.fixes.iter().any(|f| f.id == fix) {
            let known: Vec<&str> = entry.fixes.iter().map(|f| f.id.as_str()).collect();
            return Err(AppError::Unprocessable(format!(
                "entry `{}` has no fix `{fix}` (its fixes: {})",
                entry.id,
                known.join(", ")
            )));
        }
        let outcome = Outcome::parse(self.outcome.trim()).ok_or_else(|| {
            AppError::Unprocessable("`outcome` must be \"worked\" or \"did-not-work\"".to_string())
        })?;
        Ok((Feedback {
            entry: entry.id.clone(),
            fix: fix.to_string(),
            outcome,
            platform: optional("platform", self.platform, SHORT_FIELD_CHARS)?,
            hardware: optional("hardware", self.hardware, SHORT_FIELD_CHARS)?,
            version: optional("version", self.version, SHORT_FIELD_CHARS)?,
            note: optional("note", self.note, NOTE_CHARS)?,
        }, report_id))
    }
}
