//! The outcome test: every record of the resolution corpus (`tests/corpus/resolutions/*.jsonl`,
//! real public threads that say what fixed the failure) through `diagnose`, judged by the
//! fix category that worked. Prints per-family figures, asserts the floors the project has
//! reached, and checks that `kb/outcomes.json` (what fixed each entry, with links, which
//! ranks fixes at run time) is up to date: `OOMDOC_BLESS=1` rewrites it.
//!
//! Measures per record (the first fatal finding):
//! - fix 1: the first fix's category is the one that worked;
//! - top 3: it is among the first three fixes' categories;
//! - harmful: the first fix's category is one the record marks misleading for this case;
//! - reported beside it: a dead end has the category that worked (categories are coarse:
//!   "empty_cache() will not help" and "stop the other process" are both release-other-memory).
//! Ranking uses the outcome counts; the figures are also computed leaving each record's
//! own thread out of the counts ("held out"), which is what a new thread would see; held
//! out, a known regression (`kb/regressions/`) whose links name the record's own thread
//! is dropped too.

use oomdoc_diagnose::advise::{case_facets, rank, workload_facet, Evidence, Ranking, Weights, REGRESSION_FIX};
use oomdoc_diagnose::facts::version::{canonical_package, rules_out, VersionFact};
use oomdoc_kb::version::Requirement;
use oomdoc_diagnose::{diagnose_text, Finding, FixOut, Options};
use oomdoc_kb::outcomes::{CategoryOutcome, EntryOutcomes, Outcomes};
use oomdoc_kb::KnowledgeBase;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
struct Record {
    id: String,
    family: String,
    source_url: String,
    error_text: String,
    category: String,
    #[serde(default)]
    also_ok: Vec<String>,
    #[serde(default)]
    misleading: Vec<String>,
    /// The framework the thread states (free text: `pytorch (mmdetection)`, `jax (AlphaFold)`).
    #[serde(default)]
    framework: Option<String>,
    /// Versions the thread states, by package.
    #[serde(default)]
    versions: BTreeMap<String, serde_json::Value>,
    /// A held-out record (a file whose name contains `heldout`, or `"held_out": true`): measured on its own, never counted in
    /// `kb/outcomes.json`, so the ranking it is judged by was never fitted to it.
    #[serde(default)]
    held_out: bool,
    /// The corpus file the record came from (each held-out file is reported on its own).
    #[serde(skip)]
    file: String,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn corpus() -> Vec<Record> {
    let dir = root().join("tests/corpus/resolutions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect())
        .unwrap_or_default();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        // Every file whose name contains "heldout" is a held-out set, whatever its records say.
        let held_out_file = f.file_name().is_some_and(|n| n.to_string_lossy().contains("heldout"));
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let mut r: Record = serde_json::from_str(line).unwrap_or_else(|e| panic!("{}:{}: {e}", f.display(), i + 1));
            r.held_out |= held_out_file;
            r.file = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            out.push(r);
        }
    }
    out
}

/// The finding a user reads first: the first fatal memory failure, else the first finding.
fn first(findings: &[Finding]) -> Option<&Finding> {
    findings.iter().find(|f| f.first_fatal).or_else(|| findings.first())
}

/// What fixed each entry's failures: records grouped by the entry oomdoc reads them as,
/// counted by distinct thread.
fn tally(records: &[Record], diagnosed: &[Option<Finding>]) -> Outcomes {
    // Threads, then by the category that worked, then by the categories that would have misled.
    type Cell = (BTreeSet<String>, BTreeMap<String, BTreeSet<String>>, BTreeMap<String, BTreeSet<String>>);
    let mut entries: BTreeMap<String, (Cell, BTreeMap<String, Cell>)> = BTreeMap::new();
    for (r, f) in records.iter().zip(diagnosed) {
        let Some(f) = f else { continue };
        if r.held_out {
            continue;
        }
        let (all, by_case) = entries.entry(f.id.clone()).or_default();
        let count = |cell: &mut Cell| {
            cell.0.insert(r.source_url.clone());
            cell.1.entry(r.category.clone()).or_default().insert(r.source_url.clone());
            for m in &r.misleading {
                cell.2.entry(m.clone()).or_default().insert(r.source_url.clone());
            }
        };
        count(all);
        for facet in case_facets(f) {
            count(by_case.entry(facet).or_default());
        }
    }
    let counted = |cats: BTreeMap<String, BTreeSet<String>>| -> BTreeMap<String, CategoryOutcome> {
        cats.into_iter().map(|(c, links)| (c, CategoryOutcome { count: links.len() as u64, links: links.into_iter().collect() })).collect()
    };
    let outcomes = |(threads, cats, misled): Cell| EntryOutcomes {
        threads: threads.len() as u64,
        categories: counted(cats),
        by_case: BTreeMap::new(),
        misled: counted(misled),
    };
    Outcomes {
        about: "What fixed each knowledge-base entry's failures in public threads: tests/corpus/resolutions/*.jsonl, each record read by `oomdoc diagnose` and counted under the entry of its first finding, by the fix category the thread says worked (distinct threads); `misled` counts the same threads by the categories the thread shows would not have helped; `by_case` splits the same threads by facts of the case the log states (`oomdoc_diagnose::advise::case_facets`). Written by `OOMDOC_BLESS=1 cargo test -p oomdoc-diagnose --test outcomes`; do not edit by hand.".into(),
        corpus_records: records.iter().filter(|r| !r.held_out).count() as u64,
        entries: entries
            .into_iter()
            .map(|(id, (all, by_case))| {
                let mut e = outcomes(all);
                e.by_case = by_case.into_iter().map(|(facet, cell)| (facet, outcomes(cell))).collect();
                (id, e)
            })
            .collect(),
    }
}

#[derive(Default, Clone, Copy)]
struct Figures {
    records: u32,
    detected: u32,
    fix1: u32,
    top3: u32,
    fix1_same_kind: u32,
    harmful: u32,
    dead_end_worked: u32,
}

impl Figures {
    fn add(&mut self, o: &Figures) {
        self.records += o.records;
        self.detected += o.detected;
        self.fix1 += o.fix1;
        self.top3 += o.top3;
        self.fix1_same_kind += o.fix1_same_kind;
        self.harmful += o.harmful;
        self.dead_end_worked += o.dead_end_worked;
    }
    /// One line of a set's figures: "NAME: N records, detected …".
    fn summary(&self, name: &str) -> String {
        format!(
            "{name}: {} records, detected {}, fix 1 {} ({}), among 1-3 {} ({}), harmful fix 1 {}\n",
            self.records,
            self.detected,
            self.fix1,
            Figures::pct(self.fix1, self.detected),
            self.top3,
            Figures::pct(self.top3, self.detected),
            self.harmful
        )
    }
    fn pct(n: u32, d: u32) -> String {
        if d == 0 {
            "-".into()
        } else {
            format!("{:.0}%", n as f64 * 100.0 / d as f64)
        }
    }
}

/// `fixes` (the finding's) ranked `how` (held out: without this thread's own count).
fn ranked(r: &Record, f: &Finding, mut fixes: Vec<FixOut>, how: Ranking, table: &Outcomes, hold_out: bool) -> Vec<FixOut> {
    if hold_out {
        // A known regression learnt from this very thread does not count for it either.
        fixes.retain(|x| !(x.id.starts_with(REGRESSION_FIX) && x.references.iter().any(|l| l.url == r.source_url)));
    }
    if let Some(entry) = KnowledgeBase::get().by_id(&f.id) {
        // Held out, the thread is taken out of the table before anything is computed from it.
        let without;
        let table = if hold_out {
            without = table.without(&r.source_url);
            &without
        } else {
            table
        };
        let evidence = Evidence::of(entry, table, Weights::default());
        let evidence = evidence.with_case(entry, table, workload_facet(f).as_deref());
        rank(&mut fixes, entry, &evidence, how);
    }
    fixes
}

/// One record's fixes in each order the test judges, each ranked once from the finding's
/// candidates (every fix that fits the case, `Options::unranked`):
/// - `file`: the knowledge base's order;
/// - `in_sample`: the measured ranking with every count, what `diagnose` shows;
/// - `measured`: for a corpus record, `in_sample`'s fixes re-ranked with the record's own
///   thread out of the counts (a held-out record is in no count: its `in_sample`). The
///   floors are asserted on it, as they were set. Which family-level fixes it keeps was
///   chosen with the thread counted, so it is not quite what a new thread would see;
/// - `candidates_held_out`: every candidate ranked with the thread out of the counts from
///   the start: what a new thread sees. Reported beside `measured`.
struct Orders {
    file: Vec<FixOut>,
    measured: Vec<FixOut>,
    in_sample: Vec<FixOut>,
    candidates_held_out: Vec<FixOut>,
}

impl Orders {
    fn of(r: &Record, f: &Finding, table: &Outcomes) -> Orders {
        let in_sample = ranked(r, f, f.fixes.clone(), Ranking::Measured, table, false);
        Orders {
            file: ranked(r, f, f.fixes.clone(), Ranking::FileOrder, table, false),
            measured: if r.held_out { in_sample.clone() } else { ranked(r, f, in_sample.clone(), Ranking::Measured, table, true) },
            candidates_held_out: ranked(r, f, f.fixes.clone(), Ranking::Measured, table, !r.held_out),
            in_sample,
        }
    }
}

/// Which of a record's orders a table judges.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    File,
    Measured,
    InSample,
    CandidatesHeldOut,
}

impl Order {
    fn of(self, o: &Orders) -> &[FixOut] {
        match self {
            Order::File => &o.file,
            Order::Measured => &o.measured,
            Order::InSample => &o.in_sample,
            Order::CandidatesHeldOut => &o.candidates_held_out,
        }
    }
}

/// Judge one record's finding by its fixes in one order.
fn judge(r: &Record, f: &Finding, fixes: &[FixOut]) -> Figures {
    let cats: Vec<&str> = fixes.iter().map(|x| x.category.as_str()).collect();
    let worked = r.category.as_str();
    let ok = |c: &str| c == worked || r.also_ok.iter().any(|a| a == c);
    Figures {
        records: 1,
        detected: 1,
        fix1: (cats.first() == Some(&worked)) as u32,
        top3: cats.iter().take(3).any(|c| *c == worked) as u32,
        fix1_same_kind: cats.first().is_some_and(|c| ok(c)) as u32,
        harmful: cats.first().is_some_and(|c| r.misleading.iter().any(|m| m == c)) as u32,
        dead_end_worked: f.dead_ends.iter().any(|d| d.category.as_str() == worked) as u32,
    }
}

fn table(title: &str, rows: &BTreeMap<String, Figures>) -> (String, Figures) {
    let mut out = format!("\n{title}\n| family | records | detected | fix 1 | fix 1 or also-ok | among 1-3 | harmful fix 1 | a dead end has the category that worked |\n|---|---|---|---|---|---|---|---|\n");
    let row = |name: &str, x: &Figures| {
        format!(
            "| {name} | {} | {} | {} ({}) | {} | {} ({}) | {} | {} |\n",
            x.records,
            x.detected,
            x.fix1,
            Figures::pct(x.fix1, x.detected),
            x.fix1_same_kind,
            x.top3,
            Figures::pct(x.top3, x.detected),
            x.harmful,
            x.dead_end_worked
        )
    };
    let mut all = Figures::default();
    for (fam, x) in rows {
        all.add(x);
        out += &row(fam, x);
    }
    out += &row("**all**", &all);
    (out, all)
}

/// Per-family figures for the records `keep` selects, by their fixes in `order`.
fn family_rows(records: &[Record], diagnosed: &[Option<(Finding, Orders)>], keep: impl Fn(&Record) -> bool, order: Order) -> BTreeMap<String, Figures> {
    let mut rows: BTreeMap<String, Figures> = BTreeMap::new();
    for (r, d) in records.iter().zip(diagnosed).filter(|(r, _)| keep(r)) {
        let row = rows.entry(r.family.clone()).or_default();
        match d {
            Some((f, o)) => row.add(&judge(r, f, order.of(o))),
            None => row.records += 1,
        }
    }
    rows
}

/// Records whose first fix is one they mark misleading (measured, or file order).
fn harmful_lines(records: &[Record], diagnosed: &[Option<(Finding, Orders)>]) -> Vec<String> {
    records
        .iter()
        .zip(diagnosed)
        .filter_map(|(r, d)| {
            let (f, o) = d.as_ref()?;
            let measured = judge(r, f, &o.measured);
            let file = judge(r, f, &o.file);
            let set = if r.held_out { format!(" [held-out set {}]", r.file) } else { String::new() };
            (measured.harmful + file.harmful > 0).then(|| {
                format!("{}{set} ({}): harmful in file order {}, measured {}; worked {}, misleading {:?}", r.id, f.id, file.harmful, measured.harmful, r.category, r.misleading)
            })
        })
        .collect()
}

/// The frameworks a project or repository belongs to, for the framework check: a fix that
/// rests on PyTorch's allocator is PyTorch advice, whatever its category.
fn framework_of(project: &str) -> Option<&'static str> {
    let p = project.to_ascii_lowercase();
    // `owner/repo:path@tag`, a project id, or a documentation URL.
    let p = match p.split_once("://") {
        Some((_, rest)) => rest.split('/').next().unwrap_or("").to_string(),
        None => p.split(':').next().unwrap_or("").to_string(),
    };
    match p.as_str() {
        "pytorch" | "pytorch/pytorch" | "torch_npu" | "ascend/pytorch" | "pytorch.org"
        | "docs.pytorch.org" => Some("pytorch"),
        "jax" | "jaxlib" | "jax-ml/jax" | "google/jax" | "jax.readthedocs.io" | "docs.jax.dev" => {
            Some("jax")
        }
        "tensorflow"
        | "keras"
        | "tensorflow/tensorflow"
        | "keras-team/keras"
        | "www.tensorflow.org"
        | "tensorflow.org"
        | "keras.io" => Some("tensorflow"),
        _ => None,
    }
}

/// The frameworks the thread's own `framework` text names.
fn record_frameworks(r: &Record) -> BTreeSet<&'static str> {
    let t = r.framework.as_deref().unwrap_or("").to_ascii_lowercase();
    let mut out = BTreeSet::new();
    if t.contains("torch") {
        out.insert("pytorch");
    }
    if [
        "jax",
        "flax",
        "alphafold",
        "colabfold",
        "trax",
        "pallas",
        "exla",
    ]
    .iter()
    .any(|w| t.contains(w))
    {
        out.insert("jax");
    }
    if ["tensorflow", "keras", "tf "].iter().any(|w| t.contains(w)) {
        out.insert("tensorflow");
    }
    out
}

/// How the first fix contradicts what the thread states of the case, in the terms: it
/// needs a release the stated version rules out, or it is another framework's API. (The third
/// and fourth kinds, a value below the current setting and a dead end that is the resolution,
/// are checked by the engine's own gates and the dead-end column.) Regression fixes are matched
/// on versions already and are not checked again.
fn contradiction(r: &Record, f: &Finding, fix: &FixOut) -> Option<String> {
    if fix.id.starts_with(REGRESSION_FIX) {
        return None;
    }
    let kb = KnowledgeBase::get();
    let entry = kb.by_id(fix.from_family.as_deref().unwrap_or(&f.id))?;
    let item = entry.fixes.iter().find(|x| x.id == fix.id)?;
    for req in item.requires.iter().filter_map(|q| Requirement::parse(q)) {
        let lib = canonical_package(&req.library);
        for (k, v) in &r.versions {
            let Some(v) = v.as_str() else { continue };
            if canonical_package(k) == lib
                && rules_out(&VersionFact::printed(v.trim_start_matches('v')), &req)
            {
                return Some(format!(
                    "`{}` needs {}, the thread states {k} {v}",
                    fix.id,
                    item.requires.join(", ")
                ));
            }
        }
    }
    // The APIs the fix asks the user to call (its identifiers, each with where it is defined),
    // not the behaviours it rests on: the BFC allocator's dump is read in TensorFlow's source
    // and holds for JAX too. A fix written for an unknown framework must give the job's form.
    let text = format!(
        "{} {} {}",
        fix.title,
        fix.detail.as_deref().unwrap_or(""),
        fix.code.as_deref().unwrap_or("")
    );
    let fix_fw: BTreeSet<&str> = entry
        .identifiers
        .iter()
        .filter(|i| text.contains(&i.name))
        .filter_map(|i| framework_of(&i.defined_in))
        .collect();
    let case_fw = record_frameworks(r);
    // Where the log names no framework, a fix that gives each framework's form (and says so
    // for the thread's) fits the case.
    let lower = text.to_ascii_lowercase();
    let names = |fw: &str| match fw {
        "pytorch" => lower.contains("pytorch"),
        "jax" => lower.contains("jax"),
        _ => lower.contains("tensorflow"),
    };
    if f.case.frameworks.is_empty() && case_fw.iter().all(|fw| names(fw)) {
        return None;
    }
    (!fix_fw.is_empty() && !case_fw.is_empty() && fix_fw.is_disjoint(&case_fw)).then(|| {
        format!(
            "`{}` is {} advice, the thread's job is {}",
            fix.id,
            fix_fw.into_iter().collect::<Vec<_>>().join("/"),
            r.framework.as_deref().unwrap_or("")
        )
    })
}

/// Records whose first fix (measured ranking, own thread held out) contradicts the case.
fn contradiction_lines(records: &[Record], diagnosed: &[Option<(Finding, Orders)>]) -> Vec<(bool, String)> {
    records
        .iter()
        .zip(diagnosed)
        .filter_map(|(r, d)| {
            let (f, o) = d.as_ref()?;
            let why = contradiction(r, f, o.measured.first()?)?;
            let set = if r.held_out { format!(" [held-out set {}]", r.file) } else { String::new() };
            Some((r.held_out, format!("{}{set} ({}): {why}", r.id, f.id)))
        })
        .collect()
}

#[test]
fn outcomes() {
    let records = corpus();
    if records.is_empty() {
        eprintln!("no resolution corpus under tests/corpus/resolutions: nothing to measure");
        return;
    }
    // Every candidate fix, unranked: the test ranks them itself, with the record's own thread
    // out of the counts (the embedded ranking was counted with it).
    let opts = Options { unranked: true, ..Options::default() };
    let diagnosed: Vec<Option<Finding>> = records.iter().map(|r| first(&diagnose_text(&r.error_text, &opts).findings).cloned()).collect();

    // kb/outcomes.json is what the records say, and nothing else.
    let fresh = tally(&records, &diagnosed);
    let path = root().join("kb/outcomes.json");
    let text = serde_json::to_string_pretty(&fresh).unwrap() + "\n";
    if std::env::var_os("OOMDOC_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
    } else {
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == text,
            "kb/outcomes.json is stale for the {} records of tests/corpus/resolutions: run `OOMDOC_BLESS=1 cargo test -p oomdoc-diagnose --test outcomes`",
            records.len()
        );
    }

    // Each record's fixes ranked once in each order; every table and list below reads these.
    let diagnosed: Vec<Option<(Finding, Orders)>> = records
        .iter()
        .zip(diagnosed)
        .map(|(r, f)| f.map(|f| {
            let o = Orders::of(r, &f, &fresh);
            (f, o)
        }))
        .collect();

    // Choosing the prior's weights (`advise::Weights`), not part of the measure:
    // OOMDOC_PRIOR_SWEEP=1 prints the corpus figures, each record's own thread out of every
    // level, for a grid of weights.
    if std::env::var_os("OOMDOC_PRIOR_SWEEP").is_some() {
        let kb = KnowledgeBase::get();
        let cases: Vec<(&Record, &Finding, Outcomes)> = records
            .iter()
            .zip(&diagnosed)
            .filter(|(r, _)| !r.held_out)
            .filter_map(|(r, d)| d.as_ref().map(|(f, _)| (r, f, fresh.without(&r.source_url))))
            .collect();
        // The corpus judged with the fixes ranked under weights `w`, each thread out.
        let figures = |w: Weights| {
            let mut fig = Figures::default();
            for (r, f, t) in &cases {
                let Some(entry) = kb.by_id(&f.id) else { continue };
                let mut fixes = f.fixes.clone();
                fixes.retain(|x| !(x.id.starts_with(REGRESSION_FIX) && x.references.iter().any(|l| l.url == r.source_url)));
                rank(&mut fixes, entry, &Evidence::of(entry, t, w), Ranking::Measured);
                fig.add(&judge(r, f, &fixes));
            }
            fig
        };
        let grid = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];
        for entry_w in grid {
            for family_w in grid {
                for group_w in [4.0, 16.0, 64.0] {
                    let fig = figures(Weights { entry: entry_w, family: family_w, group: group_w, ..Weights::default() });
                    println!("prior weights entry {entry_w} family {family_w} group {group_w}: fix 1 {} among 1-3 {} harmful {}", fig.fix1, fig.top3, fig.harmful);
                }
            }
        }
        // What a misled thread costs against a fixed one (`Weights::harm`), the others as set.
        for harm in [0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0] {
            let fig = figures(Weights { harm, ..Weights::default() });
            println!("harm weight {harm}: fix 1 {} among 1-3 {} harmful {}", fig.fix1, fig.top3, fig.harmful);
        }
    }
    let mut report = String::new();
    let mut measured_all = Figures::default();
    // The corpus the ranking counts come from, judged leaving each record's own thread out.
    let in_corpus = |r: &Record| !r.held_out;
    for (title, order) in [
        ("file order (the knowledge base's order, no outcomes)", Order::File),
        ("measured ranking, each record's own thread held out of the counts", Order::Measured),
        ("measured ranking (in-sample)", Order::InSample),
        ("measured ranking from every candidate, each record's own thread held out from the start (what a new thread sees)", Order::CandidatesHeldOut),
    ] {
        let (t, all) = table(title, &family_rows(&records, &diagnosed, in_corpus, order));
        report += &t;
        if order == Order::Measured {
            measured_all = all;
        }
        if order == Order::CandidatesHeldOut {
            report += &all.summary("corpus, every candidate held out from the start");
        }
    }
    // The held-out sets, one per file: threads no count, rule or entry was fitted to.
    let held_out_files: BTreeSet<&str> = records.iter().filter(|r| r.held_out).map(|r| r.file.as_str()).collect();
    for file in held_out_files {
        let (t, h) = table(
            &format!("held-out set ({file}: never counted in kb/outcomes.json), measured ranking"),
            &family_rows(&records, &diagnosed, |r| r.held_out && r.file == file, Order::Measured),
        );
        report += &t;
        report += &h.summary(&format!("held-out set {file}"));
    }
    // All held-out sets together.
    let (t, held_out_all) = table(
        "all held-out sets together (*heldout*.jsonl: never counted in kb/outcomes.json), measured ranking",
        &family_rows(&records, &diagnosed, |r| r.held_out, Order::Measured),
    );
    report += &t;
    report += &held_out_all.summary("held-out sets together");
    report += &format!("\nharmful first fixes (held out of the counts):\n{}\n", harmful_lines(&records, &diagnosed).join("\n"));
    let contradictions = contradiction_lines(&records, &diagnosed);
    report += &format!(
        "\nfirst fixes that contradict what the thread states (a version it rules out, another framework's API): {} in the corpus, {} held out\n{}\n",
        contradictions.iter().filter(|(h, _)| !h).count(),
        contradictions.iter().filter(|(h, _)| *h).count(),
        contradictions.iter().map(|(_, l)| l.as_str()).collect::<Vec<_>>().join("\n")
    );
    if std::env::var_os("OOMDOC_OUTCOMES_DETAIL").is_some() {
        for (r, d) in records.iter().zip(&diagnosed) {
            let Some((f, o)) = d else {
                report += &format!("\n{} [{}]{} worked {}: not detected", r.id, r.family, if r.held_out { " held-out" } else { "" }, r.category);
                continue;
            };
            let fixes: Vec<String> = o.measured.iter().map(|x| format!("{}:{}", x.id, x.category)).collect();
            let dead: Vec<String> = f.dead_ends.iter().map(|x| format!("{}:{}", x.id, x.category)).collect();
            report += &format!(
                "\n{} [{}]{} worked {} misleading {:?}\n  {} case {}\n  fixes {}\n  dead {}\n  cause {}",
                r.id,
                r.family,
                if r.held_out { " held-out" } else { "" },
                r.category,
                r.misleading,
                f.id,
                serde_json::to_string(&f.case).unwrap(),
                fixes.join(", "),
                dead.join(", "),
                f.cause.as_deref().unwrap_or("-").chars().take(160).collect::<String>()
            );
        }
    }
    println!("{report}");
    if let Some(out) = std::env::var_os("OOMDOC_OUTCOMES_REPORT") {
        std::fs::write(out, &report).unwrap();
    }

    // Floors: the figures reached on the corpus as committed (held out). Raise them as the
    // advice improves; a change that lowers one is a regression.
    let m = measured_all;
    assert!(m.detected * 100 >= m.records * FLOOR_DETECTED_PCT, "detected {} of {}", m.detected, m.records);
    assert!(m.fix1 * 100 >= m.detected * FLOOR_FIX1_PCT, "fix 1 right in {} of {}", m.fix1, m.detected);
    assert!(m.top3 * 100 >= m.detected * FLOOR_TOP3_PCT, "among fixes 1-3 in {} of {}", m.top3, m.detected);
    assert!(m.harmful * 100 <= m.detected * CEILING_HARMFUL_PCT, "harmful first fix in {} of {}", m.harmful, m.detected);
    let in_corpus: Vec<&str> = contradictions.iter().filter(|(h, _)| !h).map(|(_, l)| l.as_str()).collect();
    assert!(in_corpus.len() <= CEILING_CONTRADICTIONS, "first fixes that contradict the thread:\n{}", in_corpus.join("\n"));
}

// Measured 2026-11-26 on the 516 corpus records (each record's own thread held out of the
// entry's, family's, memory group's and corpus's counts, and of the known regressions): see the
// README's "Advice measured" for the figures of the commit. The 409 records before session 6
// gave detected 377, fix 1 204 (54%), among 1-3 309 (82%), harmful 30; the 107 records then
// promoted from the three older held-out sets (c-corpus, d-corpus-b, d-corpus-c, measured as
// held out first: detected 81, fix 1 24, among 1-3 55, harmful 9) brought it to detected
// 458, fix 1 231 (50%), among 1-3 362 (79%), harmful 51. Leading with the kind of change
// whose share of fixed threads less its share of misled threads is highest (`Weights::harm`)
// then gave fix 1 214 (47%), among 1-3 366 (80%; 362 from every candidate), harmful 31 (6.8%):
// 20 fewer misleading first fixes for 17 fewer right ones. A pre-2.1 fragmentation reading's
// max_split_size_mb no longer leads (`advise::DATES_TO_OLD_RELEASES`), PyTorch's and
// StreamExecutor's cuDNN/cuBLAS wordings are read as facts, and host failures are ranked by
// their OS's threads: fix 1 220 (48%), among 1-3 370 (81%), harmful 28 (6.1%).
// With the prose stage and the session's recognition (472 detected): fix 1 217 (46%), among
// 1-3 381 (81%), harmful 45 (9.5%). Most of the swing is one near-tie: `generic.device-oom`
// (63 threads) puts "another release" first (12 fixed, 2 misled) over a smaller job (24 fixed,
// 15 misled), and leaving out one thread of either kind flips it, so its 21 threads of the two
// kinds each see the other first here; with 3 fewer threads in the entry the same figures were
// 229, 376 and 30. The in-sample ranking users see is unchanged (fix 1 239, harmful 26).
// The floors follow the corpus as
// committed, a point or two below so that records added do not fail the test by themselves;
// worse advice does. The held-out sets (*heldout*.jsonl) are reported, not asserted: no floor
// is fitted to them.
const FLOOR_DETECTED_PCT: u32 = 88;
const FLOOR_FIX1_PCT: u32 = 45;
const FLOOR_TOP3_PCT: u32 = 79;
const CEILING_HARMFUL_PCT: u32 = 10;
const CEILING_CONTRADICTIONS: usize = 0;
