//! What the fleet's failures add up to (`/team`, `GET /api/v1/fleet`): one read of the
//! reports in a window ([`crate::store::Store::reports`]), filtered and counted here, so
//! SQLite and PostgreSQL give the same answers.
//!
//! Every reported failure counts, whether oomdoc recognised it or not, so the share of
//! memory failures has an honest denominator (a job that failed for another reason and
//! posted its report counts in it). Shares come with their Wilson 95% interval.

use crate::{
    stats::{wilson_95, Rate},
    store::{ReportQuery, ReportRow},
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Reports read for one view; a window with more is answered from its newest ones and says so.
pub const MAX_REPORTS: u32 = 200_000;

/// Filters of a view, as they appear in its URL (shareable).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// From this UTC day or time (`2026-11-01`, `2026-11-01T12:00:00Z`); default: 30 days ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// `NAME=VALUE` of an extra label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `FRAMEWORK=VERSION`, e.g. `torch=2.5.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `json` (default for the API) or `csv`: the matching reports, one per row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// A day or time as the stores compare it: `YYYY-MM-DDTHH:MM:SS.sssZ` prefixes.
fn normalize_time(s: &str) -> Result<String, String> {
    let s = s.trim();
    let ok = s.len() >= 10
        && s.as_bytes()[..10].iter().enumerate().all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() });
    if !ok || s.len() > 30 || !s.chars().all(|c| c.is_ascii_alphanumeric() || "-:.TZ".contains(c)) {
        return Err(format!("`{s}` is not a UTC day or time (2026-11-01 or 2026-11-01T12:00:00Z)"));
    }
    Ok(if s.len() == 10 { format!("{s}T00:00:00.000Z") } else { s.to_string() })
}

impl Filter {
    /// The store query for the window (the other filters apply to its rows).
    pub fn query(&self, with_report: bool) -> Result<ReportQuery, String> {
        let since = match given(&self.since) {
            Some(s) => normalize_time(s)?,
            None => days_ago(30),
        };
        let until = given(&self.until).map(normalize_time).transpose()?;
        Ok(ReportQuery { since: Some(since), until, limit: MAX_REPORTS, with_report, id: None })
    }

    pub fn matches(&self, r: &ReportRow) -> bool {
        let eq = |want: &Option<String>, have: Option<&str>| given(want).is_none_or(|w| have == Some(w));
        let pair = |want: &Option<String>, map: &BTreeMap<String, String>| {
            given(want).is_none_or(|w| match w.split_once('=') {
                Some((k, v)) => map.get(k.trim()).is_some_and(|have| have == v.trim()),
                None => map.contains_key(w),
            })
        };
        let l = &r.labels;
        eq(&self.job, l.job_id.as_deref())
            && eq(&self.host, l.host.as_deref())
            && eq(&self.cluster, l.cluster.as_deref())
            && eq(&self.user, l.user.as_deref())
            && eq(&self.image, l.image.as_deref())
            && (given(&self.entry).is_none_or(|w| if w == "none" { r.entry.is_none() } else { r.entry.as_deref() == Some(w) }))
            && eq(&self.category, r.category.as_deref())
            && pair(&self.label, &l.extra)
            && pair(&self.version, &l.versions)
    }

    /// The URL query of this filter (without `format`), for links and exports.
    pub fn to_query(&self) -> String {
        let mut f = self.clone();
        f.format = None;
        serde_urlencoded::to_string(&f).unwrap_or_default()
    }
}

/// UTC midnight `days` ago, as the stores compare times.
pub fn days_ago(days: u64) -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let day = (secs / 86_400).saturating_sub(days) as i64;
    format!("{}T00:00:00.000Z", civil_from_days(day))
}

/// Days since 1970-01-01 to `YYYY-MM-DD` (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> String {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Failures in one group.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Count {
    pub reports: u64,
    pub memory_failures: u64,
    /// Share of this group's failures that were memory failures.
    pub memory_share: Option<Rate>,
}

impl Count {
    fn add(&mut self, r: &ReportRow) {
        self.reports += 1;
        self.memory_failures += u64::from(r.memory_failure);
        self.memory_share = wilson_95(self.memory_failures, self.reports);
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Group {
    pub key: String,
    #[serde(flatten)]
    pub count: Count,
}

/// One knowledge-base entry across the fleet: its failures and the jobs they came from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EntryRow {
    pub entry: String,
    pub category: Option<String>,
    pub reports: u64,
    /// Share of all failures in the view.
    pub share: Option<Rate>,
    /// Report ids (newest first, at most 20), to open the jobs.
    pub report_ids: Vec<i64>,
    pub jobs: Vec<String>,
}

/// Failures under one framework version, and what they were.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct VersionRow {
    pub framework: String,
    pub version: String,
    #[serde(flatten)]
    pub count: Count,
    pub first_seen: String,
    pub last_seen: String,
    /// Failures by entry under this version (`none`: nothing recognised).
    pub entries: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub filter: Filter,
    /// The window's start as queried.
    pub since: String,
    /// More reports matched than [`MAX_REPORTS`]: the view counts the newest.
    pub truncated: bool,
    #[serde(flatten)]
    pub total: Count,
    pub by_day: Vec<Group>,
    pub by_entry: Vec<EntryRow>,
    pub by_category: Vec<Group>,
    pub by_host: Vec<Group>,
    pub by_cluster: Vec<Group>,
    pub by_job: Vec<Group>,
    pub by_user: Vec<Group>,
    pub by_version: Vec<VersionRow>,
}

fn groups(map: BTreeMap<String, Count>, top: usize) -> Vec<Group> {
    let mut v: Vec<Group> = map.into_iter().map(|(key, count)| Group { key, count }).collect();
    v.sort_by(|a, b| b.count.reports.cmp(&a.count.reports).then_with(|| a.key.cmp(&b.key)));
    v.truncate(top);
    v
}

/// Count `rows` (already filtered), newest first as the store returns them.
pub fn summarize(filter: &Filter, since: String, rows: &[ReportRow], truncated: bool) -> Summary {
    let mut total = Count::default();
    let mut by_day: BTreeMap<String, Count> = BTreeMap::new();
    let mut by_category: BTreeMap<String, Count> = BTreeMap::new();
    let (mut by_host, mut by_cluster, mut by_job, mut by_user) =
        (BTreeMap::<String, Count>::new(), BTreeMap::<String, Count>::new(), BTreeMap::<String, Count>::new(), BTreeMap::<String, Count>::new());
    let mut entries: BTreeMap<String, EntryRow> = BTreeMap::new();
    let mut versions: BTreeMap<(String, String), VersionRow> = BTreeMap::new();
    let none = || "(none)".to_string();
    for r in rows {
        total.add(r);
        by_day.entry(r.created_at.get(..10).unwrap_or("").to_string()).or_default().add(r);
        by_category.entry(r.category.clone().unwrap_or_else(none)).or_default().add(r);
        by_host.entry(r.labels.host.clone().unwrap_or_else(none)).or_default().add(r);
        by_cluster.entry(r.labels.cluster.clone().unwrap_or_else(none)).or_default().add(r);
        by_job.entry(r.labels.job_id.clone().unwrap_or_else(none)).or_default().add(r);
        by_user.entry(r.labels.user.clone().unwrap_or_else(none)).or_default().add(r);
        let entry_key = r.entry.clone().unwrap_or_else(|| "none".into());
        let e = entries.entry(entry_key.clone()).or_insert_with(|| EntryRow {
            entry: entry_key.clone(),
            category: r.category.clone(),
            reports: 0,
            share: None,
            report_ids: Vec::new(),
            jobs: Vec::new(),
        });
        e.reports += 1;
        if e.report_ids.len() < 20 {
            e.report_ids.push(r.id);
        }
        if let Some(job) = &r.labels.job_id {
            if e.jobs.len() < 20 && !e.jobs.contains(job) {
                e.jobs.push(job.clone());
            }
        }
        for (fw, ver) in &r.labels.versions {
            let v = versions.entry((fw.clone(), ver.clone())).or_insert_with(|| VersionRow {
                framework: fw.clone(),
                version: ver.clone(),
                count: Count::default(),
                first_seen: r.created_at.clone(),
                last_seen: r.created_at.clone(),
                entries: BTreeMap::new(),
            });
            v.count.add(r);
            // Rows come newest first.
            v.first_seen = r.created_at.clone();
            *v.entries.entry(entry_key.clone()).or_default() += 1;
        }
    }
    let mut by_entry: Vec<EntryRow> = entries
        .into_values()
        .map(|mut e| {
            e.share = wilson_95(e.reports, total.reports);
            e
        })
        .collect();
    by_entry.sort_by(|a, b| b.reports.cmp(&a.reports).then_with(|| a.entry.cmp(&b.entry)));
    let mut by_version: Vec<VersionRow> = versions.into_values().collect();
    // Per framework, in the order versions first appeared: "before" reads above "after".
    by_version.sort_by(|a, b| a.framework.cmp(&b.framework).then_with(|| a.first_seen.cmp(&b.first_seen)));
    Summary {
        filter: filter.clone(),
        since,
        truncated,
        total,
        by_day: by_day.into_iter().map(|(key, count)| Group { key, count }).collect(),
        by_entry,
        by_category: groups(by_category, 50),
        by_host: groups(by_host, 50),
        by_cluster: groups(by_cluster, 50),
        by_job: groups(by_job, 50),
        by_user: groups(by_user, 50),
        by_version,
    }
}

/// A CSV field: quoted when needed, and never read as a formula by a spreadsheet.
fn csv_field(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{s}") } else { s.to_string() };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

/// The matching reports as CSV, one per row.
pub fn csv(rows: &[ReportRow]) -> String {
    let mut out = String::from(
        "id,created_at,report_id,source,job_id,cluster,host,rank,user,image,exit_status,entry,category,memory_failure,findings,versions,labels\n",
    );
    for r in rows {
        let l = &r.labels;
        let kv = |m: &BTreeMap<String, String>| m.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";");
        let fields = [
            r.id.to_string(),
            r.created_at.clone(),
            r.report_id.clone().unwrap_or_default(),
            r.source.clone(),
            l.job_id.clone().unwrap_or_default(),
            l.cluster.clone().unwrap_or_default(),
            l.host.clone().unwrap_or_default(),
            l.rank.clone().unwrap_or_default(),
            l.user.clone().unwrap_or_default(),
            l.image.clone().unwrap_or_default(),
            l.exit_status.map(|s| s.to_string()).unwrap_or_default(),
            r.entry.clone().unwrap_or_default(),
            r.category.clone().unwrap_or_default(),
            r.memory_failure.to_string(),
            r.findings.to_string(),
            kv(&l.versions),
            kv(&l.extra),
        ];
        out.push_str(&fields.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Labels;

    fn row(id: i64, day: &str, entry: Option<&str>, memory: bool, host: &str, torch: &str) -> ReportRow {
        ReportRow {
            id,
            created_at: format!("{day}T10:00:00.000Z"),
            report_id: None,
            source: "report".into(),
            labels: Labels {
                host: Some(host.into()),
                job_id: Some(format!("job-{id}")),
                versions: [("torch".to_string(), torch.to_string())].into(),
                ..Default::default()
            },
            entry: entry.map(Into::into),
            category: memory.then(|| "smaller-working-set".into()),
            memory_failure: memory,
            findings: u32::from(entry.is_some()),
            report: None,
        }
    }

    #[test]
    fn counts_shares_versions_and_filters() {
        // Newest first, as the store returns them.
        let rows = vec![
            row(4, "2026-11-03", Some("pytorch.cuda-oom"), true, "n2", "2.6.0"),
            row(3, "2026-11-03", Some("pytorch.cuda-oom"), true, "n1", "2.6.0"),
            row(2, "2026-11-02", None, false, "n1", "2.5.1"),
            row(1, "2026-11-01", Some("pytorch.cuda-oom"), true, "n1", "2.5.1"),
        ];
        let s = summarize(&Filter::default(), "x".into(), &rows, false);
        assert_eq!((s.total.reports, s.total.memory_failures), (4, 3));
        assert_eq!(s.by_day.iter().map(|g| g.key.as_str()).collect::<Vec<_>>(), ["2026-11-01", "2026-11-02", "2026-11-03"]);
        assert_eq!(s.by_entry[0].entry, "pytorch.cuda-oom");
        assert_eq!(s.by_entry[0].report_ids, [4, 3, 1]);
        assert_eq!(s.by_entry[1].entry, "none");
        assert_eq!(s.by_host[0].key, "n1");
        let v: Vec<_> = s.by_version.iter().map(|v| (v.version.as_str(), v.count.reports, v.count.memory_failures)).collect();
        assert_eq!(v, [("2.5.1", 2, 1), ("2.6.0", 2, 2)], "before, then after the upgrade");
        let f = Filter { host: Some("n1".into()), version: Some("torch=2.6.0".into()), ..Default::default() };
        assert_eq!(rows.iter().filter(|r| f.matches(r)).map(|r| r.id).collect::<Vec<_>>(), [3]);
        let f = Filter { entry: Some("none".into()), ..Default::default() };
        assert_eq!(rows.iter().filter(|r| f.matches(r)).count(), 1);
        assert!(f.to_query().contains("entry=none"));
    }

    #[test]
    fn csv_quotes_and_defuses_formulas() {
        let mut r = row(1, "2026-11-01", Some("x"), true, "=HYPERLINK(\"evil\")", "2.5.1");
        r.labels.cluster = Some("a,b".into());
        let out = csv(&[r]);
        let line = out.lines().nth(1).unwrap();
        assert!(line.contains("\"'=HYPERLINK(\"\"evil\"\")\"") && line.contains("\"a,b\""), "{line}");
    }

    #[test]
    fn times_and_days() {
        assert_eq!(civil_from_days(0), "1970-01-01");
        assert_eq!(civil_from_days(20_418), "2025-11-26");
        assert_eq!(normalize_time("2026-11-01").unwrap(), "2026-11-01T00:00:00.000Z");
        assert!(normalize_time("yesterday").is_err());
        assert!(normalize_time("2026-11-01'; DROP").is_err());
    }
}
