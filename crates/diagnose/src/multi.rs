//! Many logs at once, and findings from evidence outside a log.
//!
//! [`merge_reports`] turns the reports of several logs (one per host or rank) into one:
//! the same failure in many logs is one finding that keeps the `file` and `line` of its
//! first occurrence, lists every log it appears in (`files`, sorted) and counts all its
//! `occurrences`; different failures stay separate, and the first fatal one across all
//! logs (in the order the logs are given) is marked.
//!
//! [`evidence_finding`] builds a finding for a knowledge-base entry from what a
//! supervisor observed itself (`oomdoc run`: a child killed by SIGKILL, the cgroup's
//! `oom_kill` counter), with the same cause, fixes and dead ends as a log message gets.

use crate::finding::{Confidence, Finding, Report, SizeKey};
use crate::recognize::Hit;
use crate::{build, normalize, Collector, FailureKey, Options, Pending, MAX_FATAL, MAX_WARNINGS};
use oomdoc_kb::{Kind, Severity};
use std::collections::HashMap;

/// Merge the reports of several logs, given in order as `(log name, report)`.
pub fn merge_reports(logs: Vec<(String, Report)>) -> Report {
    let mut out = Report::default();
    let mut index: HashMap<FailureKey, usize> = HashMap::new();
    // (position of the log of the first occurrence, finding)
    let mut merged: Vec<(usize, Finding)> = Vec::new();
    for (pos, (name, report)) in logs.into_iter().enumerate() {
        out.lines_scanned += report.lines_scanned;
        out.bytes_scanned += report.bytes_scanned;
        out.files_scanned += report.files_scanned.max(1);
        out.unreadable.extend(report.unreadable);
        out.notes.extend(report.notes.into_iter().map(|n| format!("{name}: {n}")));
        if let Some(t) = report.truncated {
            let sum = out.truncated.get_or_insert_with(Default::default);
            sum.warnings += t.warnings;
            sum.errors += t.errors;
        }
        for mut f in report.findings {
            let file = f.file.clone().unwrap_or_else(|| name.clone());
            let mut files = std::mem::take(&mut f.files);
            if files.is_empty() {
                files.push(file.clone());
            }
            let key = FailureKey::of_finding(&f);
            match index.get(&key) {
                Some(&i) => {
                    let g = &mut merged[i].1;
                    g.occurrences += f.occurrences;
                    g.files.extend(files);
                    if f.time.is_some() && (g.time.is_none() || f.time < g.time) {
                        g.time = f.time;
                    }
                }
                None if merged.len() < MAX_FATAL + MAX_WARNINGS => {
                    f.file = Some(file);
                    f.files = files;
                    f.first_fatal = false;
                    index.insert(key, merged.len());
                    merged.push((pos, f));
                }
                None => {}
            }
        }
    }
    for (_, f) in &mut merged {
        f.files.sort();
        f.files.dedup();
    }
    merged.sort_by_key(|(pos, f)| (*pos, f.line, f.end_line));
    out.findings = merged.into_iter().map(|(_, f)| f).collect();
    // The first fatal failure: by the lines' dates when every fatal one has a date (the
    // earliest copy counts), otherwise the first in the order the logs were given.
    let fatal: Vec<usize> = (0..out.findings.len()).filter(|&i| out.findings[i].kind == Kind::Oom && out.findings[i].severity == Severity::Error).collect();
    let by_time = !fatal.is_empty() && fatal.iter().all(|&i| out.findings[i].time.is_some());
    let first = if by_time { fatal.iter().copied().min_by(|&a, &b| out.findings[a].time.cmp(&out.findings[b].time)) } else { fatal.first().copied() };
    if let Some(i) = first {
        out.findings[i].first_fatal = true;
    }
    out
}

/// The dates and times a block's lines carry (`2019-06-08 03:44:36.084180`, ISO 8601,
/// Python logging's `2024-01-01 12:00:00,123`), read once per block: a block with
/// thousands of findings looks each one up, never re-reading the lines before it.
pub(crate) struct BlockTimes(Vec<(u64, String)>);

impl BlockTimes {
    pub(crate) fn of(lines: &[(u64, Vec<u8>)]) -> BlockTimes {
        static RE: std::sync::OnceLock<regex::bytes::Regex> = std::sync::OnceLock::new();
        let re = RE.get_or_init(|| {
            regex::bytes::Regex::new(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?").expect("time regex")
        });
        let times = lines
            .iter()
            .filter_map(|(n, l)| {
                let c = re.captures(&l[..l.len().min(160)])?;
                let g = |i: usize| c.get(i).map_or("", |m| std::str::from_utf8(m.as_bytes()).unwrap_or(""));
                let frac = format!("{:0<9}", g(7));
                Some((*n, format!("{}-{}-{}T{}:{}:{}.{}", g(1), g(2), g(3), g(4), g(5), g(6), frac)))
            })
            .collect();
        BlockTimes(times)
    }

    /// When the message at `line` was logged: from that line, or the nearest line before
    /// it that carries a time.
    pub(crate) fn before(&self, line: u64) -> Option<String> {
        let i = self.0.partition_point(|(n, _)| *n <= line);
        i.checked_sub(1).map(|i| self.0[i].1.clone())
    }
}

/// A finding for knowledge-base entry `id` from evidence oomdoc observed itself, not a
/// log line: `evidence` is shown as the excerpt (say what was observed, with numbers);
/// `sizes` are `(key, bytes, as printed)`. The entry's cause, fixes and dead ends apply.
pub fn evidence_finding(
    id: &'static str,
    confidence: Confidence,
    evidence: &str,
    sizes: &[(SizeKey, u64, String)],
    details: &[(&str, serde_json::Value)],
    opts: &Options,
) -> Finding {
    let lines: Vec<_> = evidence.lines().enumerate().map(|(i, l)| normalize::clean_line(i as u64 + 1, l.as_bytes())).collect();
    let flat = normalize::flatten(&lines);
    let mut hit = Hit::new(id, 0, flat.text.len());
    hit.confidence = confidence;
    if let Some(entry) = oomdoc_kb::KnowledgeBase::embedded_by_id(id) {
        hit.platform = Some(entry.platform);
        hit.phase = Some(entry.phase);
        hit.memory_space = entry.memory_space.clone();
    }
    for (k, b, text) in sizes {
        hit.bytes(*k, *b, text.clone());
    }
    for (k, v) in details {
        hit.detail(k, v.clone());
    }
    let finding = build(&hit, &flat);
    let mut collector = Collector::default();
    collector.pending.push(Pending { finding, flags: hit.flags.clone(), block_text: flat.text.clone(), log_sources: String::new() });
    let mut report = collector.finish(&crate::scan::LogContext::default(), opts, &Default::default());
    let mut f = report.findings.remove(0);
    f.line = 0;
    f.end_line = 0;
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose_text;

    const CUDA: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.66 GiB is free.";

    #[test]
    fn same_failure_in_many_logs_is_one_finding() {
        let opts = Options::default();
        let a = diagnose_text(&format!("step 1\n{CUDA}\n"), &opts);
        let b = diagnose_text("all fine\n", &opts);
        let c = diagnose_text(&format!("x\ny\n{CUDA}\n{CUDA}\n"), &opts);
        let m = merge_reports(vec![("host3.log".into(), c), ("host1.log".into(), a), ("host2.log".into(), b)]);
        assert_eq!(m.files_scanned, 3);
        assert_eq!(m.findings.len(), 1);
        let f = &m.findings[0];
        assert_eq!(f.file.as_deref(), Some("host3.log"), "first occurrence in the order given");
        assert_eq!(f.line, 3);
        assert_eq!(f.files, vec!["host1.log".to_string(), "host3.log".to_string()]);
        assert_eq!(f.occurrences, 3);
        assert!(f.first_fatal);
    }

    #[test]
    fn different_failures_stay_separate_and_one_is_first_fatal() {
        let opts = Options::default();
        let a = diagnose_text("ok\n", &opts);
        let b = diagnose_text(&format!("{CUDA}\n"), &opts);
        // Real kernel line, from https://github.com/ShengcaiLiao/QAConv/issues/19 (kb/host/oom-killer.toml).
        let c = diagnose_text("[441280.839852] Out of memory: Killed process 698405 (python) total-vm:49978204kB, anon-rss:12918388kB, file-rss:68668kB, shmem-rss:53352kB, UID:1000 pgtables:49772kB oom_score_adj:0\n", &opts);
        let m = merge_reports(vec![("a".into(), a), ("b".into(), b), ("c".into(), c)]);
        assert_eq!(m.findings.len(), 2);
        assert_eq!(m.findings.iter().filter(|f| f.first_fatal).count(), 1);
        assert!(m.findings[0].first_fatal);
        assert_eq!(m.findings[0].file.as_deref(), Some("b"));
    }

    #[test]
    fn first_fatal_by_the_lines_dates() {
        let opts = Options::default();
        // Real messages (jax-ml/jax#788, tests/corpus/dev.jsonl), each with its logged date.
        let record = |id: &str| -> String {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus/dev.jsonl");
            let text = std::fs::read_to_string(path).unwrap();
            let line = text.lines().find(|l| l.contains(&format!("\"id\": \"{id}\""))).unwrap();
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            v["error_text"].as_str().unwrap().to_string()
        };
        let early = record("jax-788-cudnn-picker-driver");
        let late = record("jax-788-replica-failed-legacy");
        let a = diagnose_text(&late, &opts);
        let b = diagnose_text(&early, &opts);
        assert_eq!(a.findings[0].time.as_deref(), Some("2019-06-13T01:17:08.886805000"));
        let m = merge_reports(vec![("late.log".into(), a), ("early.log".into(), b)]);
        assert_eq!(m.findings[0].file.as_deref(), Some("late.log"), "listed in the order given");
        let fatal: Vec<_> = m.findings.iter().filter(|f| f.first_fatal).collect();
        assert_eq!(fatal.len(), 1);
        assert_eq!(fatal[0].file.as_deref(), Some("early.log"), "but the earlier date is the first fatal");
        assert!(fatal[0].time.as_deref().unwrap().starts_with("2019-06-08T03:44:36"));
    }

    #[test]
    fn evidence_gets_the_entry_advice() {
        let f = evidence_finding(
            "host.oom-killer",
            Confidence::Certain,
            "oomdoc run: the command was killed by SIGKILL; memory.events oom_kill went from 0 to 1",
            &[(SizeKey::Limit, 1 << 30, "memory.max 1073741824".into())],
            &[("signal", serde_json::json!(9))],
            &Options::default(),
        );
        assert_eq!(f.id, "host.oom-killer");
        assert_eq!(f.memory_space.as_deref(), Some("host"));
        assert_eq!(f.sizes.limit, Some(1 << 30));
        assert!(!f.fixes.is_empty());
        assert!(f.first_fatal);
    }
}
