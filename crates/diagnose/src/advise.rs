//! Applying a knowledge-base entry to a finding: pick the cause, rank the fixes and
//! dead ends that apply, and fill their placeholders with this finding's numbers.

use crate::facts::case::Case;
use crate::facts::version::{rules_out, Requirement};
use crate::facts::Facts;
use crate::finding::{CaseOutcomes, DeadEndOut, Finding, FixOut, Measured, Outcome, Outcomes, RefOut};
use crate::grammar;
use oomdoc_kb::outcomes::{EntryOutcomes, Outcomes as OutcomesTable};
use oomdoc_kb::{render, Entry, KnowledgeBase, Lang, Text};

grammar!(api_jax, r"\bjax\.(?:jit|device_put|live_arrays|checkpoint|lax|clear_caches|numpy|block_until_ready|sharding|remat|profiler)|\bimport jax\b|from jax\.sharding|NamedSharding|donate_argnums|\bjnp\.|XLA_PYTHON_CLIENT_|XLA_CLIENT_MEM_FRACTION");
grammar!(api_pallas, r"\bpltpu\.|\bpl\.|pallas");
grammar!(api_pytorch, r"\btorch\.|\bimport torch\b|PYTORCH_\w*ALLOC_CONF|\bDataLoader\(");
grammar!(api_tf_gpu, r"set_memory_growth|TF_FORCE_GPU_ALLOW_GROWTH|TF_GPU_ALLOCATOR|per_process_gpu_memory_fraction|allow_growth|set_(?:virtual|logical)_device_configuration");
grammar!(api_tf, r"\btf\.|\bimport tensorflow\b|\bkeras\.");
// llama.cpp's own programs take -ngl/-c/-ub on their command line; Ollama starts its runner
// itself and takes the same choices as model options and OLLAMA_* server variables.
grammar!(api_llama_cli, r"\bllama-(?:server|cli)\b");
grammar!(api_ollama, r"\bollama (?:serve|run)\b|\bOLLAMA_[A-Z_]+");
// JAX's GPU client settings (jax docs/gpu_memory_allocation.rst): they size the GPU pool and
// do nothing on a TPU.
grammar!(gpu_client_env, r"XLA_PYTHON_CLIENT_(?:MEM_FRACTION|PREALLOCATE|ALLOCATOR)|XLA_CLIENT_MEM_FRACTION");
grammar!(linux_only, r"\bdmesg\b|\bjournalctl\b|/proc/|/sys/fs/cgroup");
grammar!(training_only, r"\.backward\(|optimizer\.step|zero_grad|accum_steps|gradient_accumulation|gradient_checkpointing|\bcheckpoint\(|jax\.checkpoint|train_step");

/// Whether what a fix's code (or a dead end's action) uses fits the case: another
/// framework's API, a Linux-only tool on macOS or Windows, a training-only change for an
/// inference job, a GPU-only client setting offered as a fix on a TPU. Read from the code
/// itself, so every entry's fixes and dead ends are gated alike without extra data.
pub fn fits_case(code: &str, case: &Case, facts: &Facts, offer: Offer) -> bool {
    let api_ok = |api: &str, re: &regex::Regex| !re.is_match(code) || case.allows_api(api);
    api_ok("jax", api_jax())
        && api_ok("pallas", api_pallas())
        && api_ok("pytorch", api_pytorch())
        && api_ok("tensorflow", api_tf())
        && api_ok("tensorflow_gpu", api_tf_gpu())
        && api_ok("llama.cpp", api_llama_cli())
        && api_ok("ollama", api_ollama())
        && !(linux_only().is_match(code) && matches!(case.os.as_deref(), Some("macos" | "windows")))
        && !(training_only().is_match(code) && case.inference())
        // Host-RAM failures of data libraries: no accelerator framework's API.
        && !(case.workload.as_deref() == Some("data") && (api_pytorch().is_match(code) || api_jax().is_match(code) || api_tf().is_match(code)))
        // JAX's GPU client settings size the GPU pool; a TPU has none. As a dead end on a
        // TPU ("setting XLA_PYTHON_CLIENT_MEM_FRACTION will not help") it is what the dead end
        // is there to say, so it stays.
        && !(offer == Offer::Fix && facts.conditions.contains("tpu") && gpu_client_env().is_match(code))
}

/// What [`fits_case`] gates: a fix to apply, or a dead end (a change that will not help).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    Fix,
    DeadEnd,
}

grammar!(code_setting, r#"(?i)(?:^|[\s"'(.,])-{0,2}([a-z_][a-z0-9_-]*)\s*(?:=|\(|\s)\s*['"]?([0-9]*\.?[0-9]+)\b"#);

/// Whether every numeric setting a fix's code sets, where the log states that setting,
/// moves the way the fix's kind says: a `raise-limit` fix must raise it above the stated
/// value; a fix that lowers a budget (`engine-setting`, `allocator-setting`,
/// `smaller-working-set`) must go below it. `--gpu-memory-utilization 0.95` is no fix for a
/// job the log shows already at 0.95 or above. Settings are compared by name, ignoring
/// case, dashes and underscores; the values stated come from the case (engine arguments,
/// environment variables) and the message (`allowed` as a fraction of the device).
pub fn moves_stated_settings(code: &str, category: oomdoc_kb::FixCategory, case: &Case, facts: &Facts) -> bool {
    use oomdoc_kb::FixCategory as C;
    let raises = match category {
        C::RaiseLimit => true,
        C::EngineSetting | C::AllocatorSetting | C::SmallerWorkingSet => false,
        _ => return true,
    };
    let key = |n: &str| n.to_ascii_lowercase().replace(['-', '_'], "");
    let stated = |name: &str| -> Option<f64> {
        let k = key(name);
        case.settings.iter().find(|(n, _)| key(n) == k).and_then(|(_, v)| v.trim_matches(['"', '\'']).parse::<f64>().ok()).or_else(|| {
            (k == "setperprocessmemoryfraction").then(|| facts.vars.get("memory_fraction_set").and_then(|v| v.parse().ok())).flatten()
        })
    };
    code_setting().captures_iter(code).all(|c| {
        let (Some(now), Ok(target)) = (stated(&c[1]), c[2].parse::<f64>()) else { return true };
        if raises {
            // A cap set to 0 is no cap (PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0): the highest setting.
            (target == 0.0 && now != 0.0) || (now != 0.0 && target > now)
        } else {
            target < now
        }
    })
}

/// Whether the log's versions allow every requirement (`torch>=2.1`): a version the log
/// prints or a message format dates outside a requirement rules the item out.
pub fn versions_allow(requires: &[String], case: &Case) -> bool {
    requires.iter().filter_map(|r| Requirement::parse(r)).all(|req| case.versions.get(&req.library).is_none_or(|fact| !rules_out(fact, &req)))
}

fn fill(t: &str, facts: &Facts) -> Option<String> {
    render(t, |name| facts.vars.get(name).cloned()).ok()
}

fn fill_text(t: &Text, lang: Lang, facts: &Facts) -> Option<String> {
    fill(t.get(lang), facts)
}

fn refs(entry: &Entry, keys: &[String]) -> Vec<RefOut> {
    keys.iter()
        .filter_map(|k| entry.references.iter().find(|r| &r.key == k))
        .map(|r| RefOut { title: r.title.clone(), url: r.url.clone() })
        .collect()
}

/// Fill cause, fixes, dead ends and references of `f` from `entry`; `unranked`: keep every
/// fix that fits the case in file order ([`crate::Options::unranked`]).
pub fn apply(f: &mut Finding, entry: &Entry, facts: &Facts, lang: Lang, unranked: bool) {
    f.title = entry.title.get(lang).to_string();
    let cause = entry.causes.iter().filter(|c| facts.holds(&c.when)).find_map(|c| Some((c, fill_text(&c.text, lang, facts)?)));
    f.cause_confidence = cause.as_ref().map(|(c, _)| cause_confidence(&c.when).to_string());
    f.cause = cause.map(|(_, text)| text);
    f.dead_ends = entry
        .dead_ends
        .iter()
        .filter(|d| facts.holds(&d.when) && versions_allow(&d.requires, &f.case) && fits_case(&d.action.en, &f.case, facts, Offer::DeadEnd))
        .filter_map(|d| {
            Some(DeadEndOut {
                id: d.id.clone(),
                category: d.category,
                action: fill_text(&d.action, lang, facts)?,
                why: fill_text(&d.why, lang, facts)?,
                references: refs(entry, &d.refs),
                verified: entry.dead_end_verified(d),
                verification: entry.dead_end_reliance(d),
            })
        })
        .collect();
    f.fixes = gated_fixes(entry, facts, &f.case, lang, None);
    // The family's fixes for kinds of change this entry has none of; `rank` keeps those the
    // evidence puts among the first three. A kind the entry names as a dead end here is
    // not borrowed: the entry knows better for this failure.
    if let Some(family) = family_entry(entry) {
        let have: std::collections::BTreeSet<_> = f.fixes.iter().map(|fx| fx.category).chain(f.dead_ends.iter().map(|d| d.category)).collect();
        let borrowed: Vec<FixOut> = gated_fixes(family, facts, &f.case, lang, Some(&family.id)).into_iter().filter(|fx| !have.contains(&fx.category)).collect();
        f.fixes.extend(borrowed);
    }
    list_regressions_to_check(f, facts, lang);
    let measured = oomdoc_kb::outcomes::for_entry(&entry.id);
    if !unranked {
        let evidence = Evidence::clone(&Evidence::embedded(entry)).with_case(entry, oomdoc_kb::outcomes::outcomes(), workload_facet(f).as_deref());
        rank(&mut f.fixes, entry, &evidence, Ranking::Measured);
    }
    if let Some(m) = measured {
        for fx in &mut f.fixes {
            fx.measured = Some(Measured { fixed: m.count(fx.category.as_str()), threads: m.threads });
        }
        let by_case = case_facets(f)
            .into_iter()
            .filter_map(|facet| {
                let cell = m.by_case.get(&facet)?;
                Some(CaseOutcomes { facet, threads: cell.threads, categories: outcome_list(cell) })
            })
            .collect();
        let mut misled: Vec<Outcome> = m.misled.iter().map(|(c, o)| Outcome { category: c.clone(), count: o.count, links: o.links.clone() }).collect();
        misled.sort_by(|a, b| b.count.cmp(&a.count).then(a.category.cmp(&b.category)));
        f.outcomes = Some(Outcomes { threads: m.threads, categories: outcome_list(m), by_case, misled });
    }
    // A known regression in the range of a version this log prints: moving to another
    // release is the first fix, with its evidence.
    let known = regressions_for(f, facts, lang);
    if !known.is_empty() {
        f.fixes.splice(0..0, known);
        for (i, fx) in f.fixes.iter_mut().enumerate() {
            fx.rank = i as u32 + 1;
        }
    }
    f.references = entry.references.iter().map(|r| RefOut { title: r.title.clone(), url: r.url.clone() }).collect();
}

/// What fixed these threads, by category, most threads first.
fn outcome_list(m: &EntryOutcomes) -> Vec<Outcome> {
    let mut categories: Vec<Outcome> = m.categories.iter().map(|(c, o)| Outcome { category: c.clone(), count: o.count, links: o.links.clone() }).collect();
    categories.sort_by(|a, b| b.count.cmp(&a.count).then(a.category.cmp(&b.category)));
    categories
}

/// `entry`'s fixes that fit the case, filled with its numbers; `family` names the family
/// entry they are borrowed from (their ids are prefixed with it).
fn gated_fixes(entry: &Entry, facts: &Facts, case: &Case, lang: Lang, family: Option<&str>) -> Vec<FixOut> {
    let mut applied: Vec<(String, Option<String>)> = Vec::new();
    entry
        .fixes
        .iter()
        .filter(|fx| facts.holds(&fx.when) && versions_allow(&fx.requires, case))
        .filter_map(|fx| {
            let title = fill_text(&fx.title, lang, facts)?;
            let detail = fx.detail.as_ref().and_then(|d| fill_text(d, lang, facts));
            let code = fx.code.as_deref().and_then(|c| fill(c, facts)).or_else(|| fx.code_fallback.as_deref().and_then(|c| fill(c, facts)));
            let raw_code = [fx.code.as_deref(), fx.code_fallback.as_deref()].into_iter().flatten().collect::<Vec<_>>().join("\n");
            if !fits_case(&raw_code, case, facts, Offer::Fix) || !moves_stated_settings(code.as_deref().unwrap_or(&raw_code), fx.category, case, facts) {
                return None;
            }
            // `fewer-stages-plain` is the number-free fallback of `fewer-stages`: skip it when
            // the numeric one applied, as with a fix that repeats an earlier one's code.
            let fallback_of_applied = applied.iter().any(|(id, c)| fx.id.starts_with(&format!("{id}-")) || (code.is_some() && c == &code));
            if fallback_of_applied {
                return None;
            }
            applied.push((fx.id.clone(), code.clone()));
            Some(FixOut {
                id: family.map_or_else(|| fx.id.clone(), |fam| format!("{fam}/{}", fx.id)),
                rank: 0,
                category: fx.category,
                title,
                detail,
                code,
                code_lang: fx.code_lang.clone(),
                versions: fx.versions_in(lang),
                references: refs(entry, &fx.refs),
                measured: None,
                verified: entry.fix_verified(fx),
                verification: entry.fix_reliance(fx),
                from_family: family.map(str::to_string),
            })
        })
        .collect()
}

/// The family-level entry for `entry`'s memory: the generic accelerator, host or
/// unknown-space entry, whose fixes hold for any failure of that memory. None for the
/// family entries themselves and for on-chip memories (their fixes are kernel-specific).
fn family_entry(entry: &Entry) -> Option<&'static Entry> {
    let id = match memory_group(entry.memory_space.as_deref()) {
        "device" => "generic.device-oom",
        "host" => "generic.host-oom",
        "any" => "generic.oom",
        _ => return None,
    };
    (entry.id != id).then(|| KnowledgeBase::embedded_by_id(id)).flatten()
}

/// How fixes that apply are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// The knowledge-base file's order.
    FileOrder,
    /// Fixes the log's numbers single out (a positive, unhedged mechanism condition in
    /// `when`) first; then, within each group, the category that fixed the most public
    /// threads ([`Evidence::score`]); ties keep the file's order. One fix of each category
    /// comes before a second fix of any category; `investigate` fixes come last.
    Measured,
}

/// Conditions that say what the job is or that the message has numbers, not which
/// mechanism failed: they do not single a fix out.
fn names_a_mechanism(condition: &str) -> bool {
    !(condition.starts_with('!')
        || condition.starts_with("framework_")
        || condition.starts_with("os_")
        || condition.ends_with("_api_ok")
        || matches!(
            condition,
            "has_sizes" | "no_sizes" | "space_hbm" | "space_vmem" | "training" | "inference" | "serving" | "warning_only" | "fragmentation_possible" | "small_device" | "free_covers_request"
            // Which library failed, not which mechanism: its fixes rank by what fixed threads.
            | "nccl_segment"
        ))
}

/// Conditions under which the numbers cannot tell the mechanisms apart: the cause names
/// the likeliest explanations (`hedged`), and a fix they gate is a candidate, not the
/// answer, so it takes its place by what fixed public threads.
const HEDGES: [&str; 4] = ["fragmentation_possible", "!xla_generated_op", "held_outside_allocator", "free_covers_request"];

/// Conditions that establish a cause without saying which fix the job needs, so a fix they
/// gate takes its place by what fixed public threads. A TensorRT tactic skipped for lack of
/// memory is not fatal by itself (the builder goes on with other tactics).
const ESTABLISHES_NOT_FIX: [&str; 1] = ["tactic_skipped"];

/// Conditions that date a fix to releases without the mechanism that would make it work on
/// the reading that gates it, so it is ranked by what fixed public threads: `legacy_message`
/// (a PyTorch message older than 2.1, before expandable segments). There a fragmentation
/// reading's fix is `max_split_size_mb`, which only keeps large blocks from being split from
/// now on and cannot make the free tails already trapped in live segments usable (as
/// expandable segments do by unmapping and remapping their pages). Of the 6 corpus threads
/// where it led, none was fixed by an allocator setting: 4 by a smaller job, 1 by another
/// device, 1 by an upgrade.
const DATES_TO_OLD_RELEASES: [&str; 1] = ["legacy_message"];

/// Whether the log's numbers establish the mechanism a fix with these conditions treats
/// and so which fix it needs ([`ESTABLISHES_NOT_FIX`], [`DATES_TO_OLD_RELEASES`]).
fn singles_out(when: &[String]) -> bool {
    !when.iter().any(|w| DATES_TO_OLD_RELEASES.contains(&w.as_str()))
        && when.iter().any(|w| names_a_mechanism(w) && !ESTABLISHES_NOT_FIX.contains(&w.as_str()) && !DATES_TO_OLD_RELEASES.contains(&w.as_str()))
}

/// Which memory an entry's failure exhausts, coarsely: an accelerator's main memory
/// (device, HBM), the host's, or an on-chip scratchpad (shared memory, VMEM, SMEM, L1,
/// tensor memory). Entries of one group share what usually fixes them.
fn memory_group(space: Option<&str>) -> &'static str {
    match space {
        Some("device" | "hbm") => "device",
        Some("host") => "host",
        Some(_) => "on-chip",
        None => "any",
    }
}

/// What the resolution corpus says fixed failures like this one, from the narrowest
/// level to the broadest: the entry's own threads, its family's (entries sharing the id's
/// prefix: `pytorch.`, `vllm.`, `tpu.`, …), its memory's ([`memory_group`]) and the whole
/// corpus's. Each level speaks for the one below it where that one has few threads of its
/// own ([`Evidence::score`]), so no kind of fix falls back to the file's order for want of
/// threads: it takes the share its family, its memory or the corpus measured.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// The entry's threads whose case shares this finding's workload facet
    /// ([`workload_facet`]), empty where none applies: the narrowest level.
    pub case: EntryOutcomes,
    pub entry: EntryOutcomes,
    pub family: EntryOutcomes,
    pub group: EntryOutcomes,
    pub global: EntryOutcomes,
    pub weights: Weights,
}

/// How many threads' worth of the broader level each level's counts are shrunk toward
/// (the concentration of a Dirichlet prior centred on the broader level's shares): with
/// this many threads of its own, a level's counts and the broader share weigh the same.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// An entry's threads toward its family's share.
    pub entry: f64,
    /// A family's toward its memory's.
    pub family: f64,
    /// A memory's toward the whole corpus's.
    pub group: f64,
    /// What a first fix that misleads costs against one that works: a fix is ranked by the
    /// share of threads it fixed less `harm` times the share whose own text shows it would
    /// not have helped ([`Evidence::utility`]).
    pub harm: f64,
}

/// The weights in use, chosen by leave-one-out on the resolution corpus (each record ranked
/// with its own thread out of every level, its fix 1 and fixes 1-3 judged; the outcome test's
/// `OOMDOC_PRIOR_SWEEP=1` prints the grid). The measure is flat around them: an entry weight
/// of 4 is best (8 or more lets a family outvote a big entry's own threads; 1-2 lets one
/// unusual thread lead), family and memory weights from 2 to 64 change at most one record.
/// Estimating them by moments instead (how much entries differ from their family in the
/// corpus) gives an entry weight of 34, which ranks worse on every measure: the id-prefix
/// families mix failures fixed in different ways (`cuda.*`, `generic.*`).
/// `harm` is 1: a first fix that misleads costs as much as one that works gains, the plain
/// expected number of threads helped less those misled, not a fitted value. On the 516-record
/// corpus (each thread out of every level) it took harmful first fixes from 51 to 31 and fix 1
/// from 231 to 214 (fixes 1-3 unchanged at 366): where a bare message cannot tell a smaller
/// job from an upgrade, a code bug or another process, the conditional "if this began after an
/// upgrade" now leads (`generic.device-oom`: a smaller job fixed 21 of 57 threads and misled
/// 15; another release fixed 13 and misled 2). The sweep (`OOMDOC_PRIOR_SWEEP=1`, every
/// candidate ranked with the thread out): harm 0 gives fix 1 227 and 53 harmful, 0.5 218 and
/// 46, 0.75 211 and 32, 1 214 and 32, 1.5-2 206 and 32, 3 162 and 31; fixes 1-3 stay 361
/// because only the first fix moves (ranking every fix by it lowered fixes 1-3 to 336 at 2).
impl Default for Weights {
    fn default() -> Weights {
        Weights { entry: 4.0, family: 4.0, group: 16.0, harm: 1.0 }
    }
}

/// The facets of a case that split an entry's threads in `kb/outcomes.json` (`by_case`) and
/// in the JSON `outcomes.by_case`: facts the tool derives from the log (`facts::case`, the
/// message's sizes), each `name=value` with a value for every log, so an entry's threads
/// fall into one cell per facet: the workload (`training`, `inference` for inference and
/// serving, `data`, or `unstated`), whether the log prints a version, whether it states
/// settings (engine arguments, allocator configuration), and the device's size where the
/// message gives it (`small`: 4 GiB or less). Shown, not ranked by: leaving each thread out,
/// ranking by any of these cells (shrunk toward the entry) lowered fix 1 on the corpus.
pub fn case_facets(f: &Finding) -> Vec<String> {
    let c = &f.case;
    let stated = |yes: bool| if yes { "stated" } else { "unstated" };
    let workload = match c.workload.as_deref() {
        Some("inference" | "serving") => "inference",
        Some(w) => w,
        None => "unstated",
    };
    let mut out = vec![
        format!("workload={workload}"),
        format!("version={}", stated(c.versions.values().any(|v| v.version.is_some()))),
        format!("settings={}", stated(!c.settings.is_empty())),
    ];
    if let Some(total) = f.sizes.total {
        out.push(format!("device={}", if total <= 4 << 30 { "small" } else { "large" }));
    }
    if host_memory(f) {
        out.push(format!("os={}", c.os.as_deref().unwrap_or("unstated")));
    }
    out
}

/// Whether a finding exhausts the host's memory (its entry's memory space, or a `host.` id).
fn host_memory(f: &Finding) -> bool {
    f.memory_space.as_deref() == Some("host") || f.id.starts_with("host.")
}

/// The facet whose threads rank a finding's fixes before the entry's own: the workload
/// facet of an inference or serving job (`workload=inference`). An entry's threads are
/// mostly training jobs, whose fixes (a smaller batch, accumulation) an engine's user does
/// not make; an engine sizes its memory by its own budgets. A host-memory failure is ranked
/// by the threads of its operating system first (`os=windows|linux|macos`, stated in the
/// log): Windows does not overcommit, so an allocation fails at the commit limit (RAM plus
/// page file), a cap the user sets, while Linux overcommits and kills at the cgroup or
/// physical limit; on the 516-record corpus this put the fix that worked among fixes 1-3 in 3
/// more threads (367 -> 370), fix 1 and harmful unchanged. Other facets are shown, not ranked
/// by (leave-one-out: they lowered fix 1).
pub fn workload_facet(f: &Finding) -> Option<String> {
    if host_memory(f) {
        if let Some(os) = f.case.os.as_deref() {
            return Some(format!("os={os}"));
        }
    }
    f.case.inference().then(|| "workload=inference".to_string())
}

/// The family of an entry: its id's prefix (`pytorch` for `pytorch.cuda-oom`).
fn family_of(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

/// Add `o`'s threads and counts to `level` (not its links or facets: a broader level is
/// only shares).
fn add_counts(level: &mut EntryOutcomes, o: &EntryOutcomes) {
    level.threads += o.threads;
    for (category, x) in &o.categories {
        level.categories.entry(category.clone()).or_default().count += x.count;
    }
    for (category, x) in &o.misled {
        level.misled.entry(category.clone()).or_default().count += x.count;
    }
}

impl Evidence {
    /// The evidence for `entry` in `table` (`kb/outcomes.json` at run time), weighed by `weights`.
    pub fn of(entry: &Entry, table: &OutcomesTable, weights: Weights) -> Evidence {
        let group = memory_group(entry.memory_space.as_deref());
        let family = family_of(&entry.id);
        let mut evidence = Evidence { weights, ..Evidence::default() };
        if let Some(own) = table.entries.get(&entry.id) {
            add_counts(&mut evidence.entry, own);
        }
        for (id, outcomes) in &table.entries {
            let space = if *id == entry.id { entry.memory_space.as_deref() } else { KnowledgeBase::embedded_memory_space(id) };
            add_counts(&mut evidence.global, outcomes);
            if family_of(id) == family {
                add_counts(&mut evidence.family, outcomes);
            }
            if group == "any" || memory_group(space) == group {
                add_counts(&mut evidence.group, outcomes);
            }
        }
        evidence
    }

    /// The evidence for `entry` in the embedded `kb/outcomes.json`, computed once per entry.
    pub fn embedded(entry: &Entry) -> std::sync::Arc<Evidence> {
        static CACHE: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<Evidence>>>> = std::sync::OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        if let Some(e) = cache.lock().ok().and_then(|c| c.get(&entry.id).cloned()) {
            return e;
        }
        let e = std::sync::Arc::new(Evidence::of(entry, oomdoc_kb::outcomes::outcomes(), Weights::default()));
        if let Ok(mut c) = cache.lock() {
            c.insert(entry.id.clone(), e.clone());
        }
        e
    }

    /// The share of threads a category fixed, from the broadest level to the narrowest: the
    /// whole corpus's share (one thread's worth spread evenly over the categories, so a kind
    /// no thread has is not zero), then at each narrower level (count + w·broader)/(threads + w)
    /// with that level's weight: the posterior mean of a Dirichlet-multinomial hierarchy.
    pub fn score(&self, category: &str) -> f64 {
        let k = oomdoc_kb::FixCategory::ALL.len() as f64;
        let global = (self.global.count(category) as f64 + 1.0 / k) / (self.global.threads as f64 + 1.0);
        let shrunk = |level: &EntryOutcomes, w: f64, broader: f64| (level.count(category) as f64 + w * broader) / (level.threads as f64 + w);
        let w = self.weights;
        let entry = shrunk(&self.entry, w.entry, shrunk(&self.family, w.family, shrunk(&self.group, w.group, global)));
        shrunk(&self.case, w.entry, entry)
    }

    /// The share of threads whose own text shows a category would not have helped, shrunk
    /// level by level like [`Evidence::score`] (each category on its own: a thread may name
    /// several).
    pub fn harm(&self, category: &str) -> f64 {
        let k = oomdoc_kb::FixCategory::ALL.len() as f64;
        let global = (self.global.misled_count(category) as f64 + 1.0 / k) / (self.global.threads as f64 + 1.0);
        let shrunk = |level: &EntryOutcomes, w: f64, broader: f64| (level.misled_count(category) as f64 + w * broader) / (level.threads as f64 + w);
        let w = self.weights;
        let entry = shrunk(&self.entry, w.entry, shrunk(&self.family, w.family, shrunk(&self.group, w.group, global)));
        shrunk(&self.case, w.entry, entry)
    }

    /// What offering a category first is worth: the share it fixed less `harm` times the
    /// share it misled.
    pub fn utility(&self, category: &str) -> f64 {
        self.score(category) - self.weights.harm * self.harm(category)
    }

    /// These counts with the entry's threads of `facet` (a [`case_facets`] cell of `table`)
    /// as the narrowest level, shrunk toward the entry's with the entry's weight.
    pub fn with_case(mut self, entry: &Entry, table: &OutcomesTable, facet: Option<&str>) -> Evidence {
        self.case = facet.and_then(|k| table.entries.get(&entry.id)?.by_case.get(k)).map(|cell| {
            let mut level = EntryOutcomes::default();
            add_counts(&mut level, cell);
            level
        }).unwrap_or_default();
        self
    }

    /// The share credited to a kind of fix the entry lists none of (a family-level fix fills
    /// the gap): the entry's own threads fixed that way, with no prior. The broader levels'
    /// share of a kind says what fixes failures like this where the knowledge base offers
    /// it; an entry that offers none has no such evidence, so its own threads alone speak.
    pub fn gap_score(&self, category: &str) -> f64 {
        self.entry.count(category) as f64 / (self.entry.threads as f64 + self.weights.entry)
    }
}

/// Order `fixes` (already gated) and number them from 1. Fixes borrowed from the family
/// entry ([`FixOut::from_family`]) stay only when the evidence puts their kind of change
/// among the first three kinds offered; in file order they are dropped.
pub fn rank(fixes: &mut Vec<FixOut>, entry: &Entry, evidence: &Evidence, how: Ranking) {
    let position = |id: &str| entry.fixes.iter().position(|f| f.id == id).unwrap_or(usize::MAX);
    // A known regression matched by a version the log prints is singled out like a
    // mechanism the numbers prove.
    let singled_out = |id: &str| id.starts_with(REGRESSION_FIX) || entry.fixes.iter().find(|f| f.id == id).is_some_and(|f| singles_out(&f.when));
    // Between fixes of equal evidence, the one that fits more of the case first: the
    // conditions its `when` requires (all of which hold, or it would not be here).
    let fit = |id: &str| entry.fixes.iter().find(|f| f.id == id).map_or(0, |f| f.when.iter().filter(|w| !w.starts_with('!')).count());
    if how == Ranking::FileOrder {
        fixes.retain(|fx| fx.from_family.is_none());
    } else {
        let mut kinds: Vec<oomdoc_kb::FixCategory> = Vec::new();
        for fx in fixes.iter().filter(|fx| fx.category != oomdoc_kb::FixCategory::Investigate) {
            if !kinds.contains(&fx.category) {
                kinds.push(fx.category);
            }
        }
        let top = |c: oomdoc_kb::FixCategory| {
            let better = kinds.iter().filter(|k| evidence.score(k.as_str()) > evidence.score(c.as_str())).count();
            better < 3 && evidence.group.count(c.as_str()) > 0
        };
        fixes.retain(|fx| fx.from_family.is_none() || top(fx.category));
    }
    if how == Ranking::Measured {
        let score = |fx: &FixOut| if fx.from_family.is_some() { evidence.gap_score(fx.category.as_str()) } else { evidence.score(fx.category.as_str()) };
        fixes.sort_by(|a, b| {
            (!singled_out(&a.id))
                .cmp(&!singled_out(&b.id))
                .then(score(b).total_cmp(&score(a)))
                .then(evidence.score(b.category.as_str()).total_cmp(&evidence.score(a.category.as_str())))
                .then(fit(&b.id).cmp(&fit(&a.id)))
                .then(position(&a.id).cmp(&position(&b.id)))
        });
        // One fix of each kind before a second of any kind: the first three are three
        // different changes where the entry has them.
        // "Find out more" (a snapshot, a dump) comes after every change that can fix it,
        // unless the numbers single it out.
        let mut seen = std::collections::BTreeSet::new();
        let investigate = |fx: &FixOut| fx.category == oomdoc_kb::FixCategory::Investigate && !singled_out(&fx.id);
        let (later, now): (Vec<FixOut>, Vec<FixOut>) = fixes.iter().cloned().partition(|fx| investigate(fx));
        let (firsts, rest): (Vec<FixOut>, Vec<FixOut>) = now.into_iter().partition(|fx| seen.insert(fx.category));
        for (slot, fx) in fixes.iter_mut().zip(firsts.into_iter().chain(rest).chain(later)) {
            *slot = fx;
        }
        // A family-level fix fills a gap in the entry's advice; it does not lead it, unless
        // the entry's own threads put its kind of change first (at least two, more than any
        // other kind).
        let own_threads_lead = |c: oomdoc_kb::FixCategory| {
            let n = evidence.entry.count(c.as_str());
            n >= 2 && evidence.entry.categories.iter().all(|(k, o)| k == c.as_str() || o.count < n)
        };
        if fixes.first().is_some_and(|fx| fx.from_family.is_some() && !own_threads_lead(fx.category)) {
            if let Some(own) = fixes.iter().position(|fx| fx.from_family.is_none()) {
                let fx = fixes.remove(own);
                fixes.insert(0, fx);
            }
        }
        // The first fix is the one a user follows, and a first fix that misleads costs more
        // than one that does not help: unless the numbers single one out, the first is the
        // entry's kind of change whose share of fixed threads less its share of misled ones
        // is highest (`Evidence::utility`); the rest keep their order by what fixed threads.
        if fixes.first().is_some_and(|fx| !singled_out(&fx.id)) {
            let candidate = |fx: &FixOut| !investigate(fx) && (fx.from_family.is_none() || own_threads_lead(fx.category));
            let best = fixes
                .iter()
                .enumerate()
                .filter(|(_, fx)| candidate(fx))
                .max_by(|(i, a), (j, b)| evidence.utility(a.category.as_str()).total_cmp(&evidence.utility(b.category.as_str())).then(j.cmp(i)))
                .map(|(i, _)| i);
            if let Some(i) = best.filter(|&i| i > 0) {
                let fx = fixes.remove(i);
                fixes.insert(0, fx);
            }
        }
    } else {
        fixes.sort_by_key(|fx| position(&fx.id));
    }
    for (i, fx) in fixes.iter_mut().enumerate() {
        fx.rank = i as u32 + 1;
    }
}

/// The id prefix of a fix from a matched known regression (`regression:<id>`).
pub const REGRESSION_FIX: &str = "regression:";

/// Known regressions of this finding's failure (`kb/regressions/`) in a package this job
/// runs: the log prints its version, the package names the case's framework or engine, or
/// it is one any job may use (a driver, CUDA, a library under the framework). Ollama bundles llama.cpp at its own
/// pin, so llama.cpp build ranges say nothing about an Ollama job.
/// A regression narrower than its entries (`signs`) counts only where the block shows a sign.
fn regressions_of<'a>(f: &'a Finding, facts: &'a Facts) -> impl Iterator<Item = (&'static oomdoc_kb::regression::Regression, Requirement)> + 'a {
    oomdoc_kb::regression::regressions().iter().filter(|r| r.entries.iter().any(|e| *e == f.id)).filter_map(move |r| {
        if !r.signs.is_empty() && !facts.regression_signs.contains(&r.id) {
            return None;
        }
        let req = r.requirement()?;
        let case = &f.case;
        // A package whose version the log prints is one this job has (an engine's banner may
        // be far from the failure's block, which then names no engine).
        let printed = case.versions.get(&req.library).is_some_and(|v| v.version.is_some());
        let ollama_job = case.has("ollama") || case.versions.contains_key("ollama");
        let fits = case.frameworks.is_empty()
            || (printed && !(req.library == "llama.cpp" && ollama_job))
            || match req.library.as_str() {
                "torch" => case.allows_api("pytorch"),
                "jax" | "jaxlib" => case.has("jax"),
                "tensorflow" => case.has("tensorflow"),
                "tensorflow_directml" => case.has("directml"),
                "llama.cpp" => case.has("llama.cpp") && !ollama_job,
                engine @ ("vllm" | "tgi" | "ollama" | "sglang" | "comfyui" | "deepspeed") => case.has(engine),
                _ => true,
            };
        fits.then_some((r, req))
    })
}

/// When the log prints no version that a known regression of this failure could be
/// checked against, the fix that suggests another release lists those ranges, so the
/// user can compare their own version (a release the log rules out is not listed).
fn list_regressions_to_check(f: &mut Finding, facts: &Facts, lang: Lang) {
    let listed: Vec<(&oomdoc_kb::regression::Regression, Requirement)> = regressions_of(f, facts)
        .filter(|(_, req)| f.case.versions.get(&req.library).is_none_or(|fact| fact.version.is_none() && !rules_out(fact, req)))
        .take(6)
        .collect();
    let Some(fx) = f.fixes.iter_mut().find(|fx| fx.category == oomdoc_kb::FixCategory::UpgradeOrDowngrade) else { return };
    if listed.is_empty() {
        return;
    }
    let lines: Vec<String> = listed
        .iter()
        .map(|(r, _)| match lang {
            Lang::Zh => format!("{}（{}；改用 {}）", r.affected, r.title.get(lang), r.move_to),
            _ => format!("{} ({}; move to {})", r.affected, r.title.get(lang), r.move_to),
        })
        .collect();
    let ask = match lang {
        Lang::Zh => format!("此日志没有打印可核对的版本。以下是此类失败的已知回归，请对照你的版本：{}。", lines.join("；")),
        _ => format!("This log prints no version to check. Known regressions that cause this failure; compare your version: {}.", lines.join("; ")),
    };
    fx.detail = Some(match fx.detail.take() {
        Some(d) => format!("{d} {ask}"),
        None => ask,
    });
    for (r, _) in &listed {
        fx.references.extend(r.links.iter().map(|l| RefOut { title: r.title.get(lang).to_string(), url: l.clone() }));
    }
}

/// Fixes from `kb/regressions/`: a regression of one of this entry's failures whose
/// affected range holds a version the log prints (a message-dated range is too coarse).
fn regressions_for(f: &Finding, facts: &Facts, lang: Lang) -> Vec<FixOut> {
    let mut out = Vec::new();
    for (r, req) in regressions_of(f, facts) {
        let Some(fact) = f.case.versions.get(&req.library) else { continue };
        if !fact.printed_within(req.at_least.as_ref(), req.below.as_ref()) {
            continue;
        }
        let reported = match (r.status.as_str(), lang) {
            ("reported", Lang::Zh) => "（依据公开讨论，未在发布说明中核实）",
            ("reported", _) => " (reported in the thread; not checked in release notes)",
            _ => "",
        };
        out.push(FixOut {
            id: format!("{REGRESSION_FIX}{}", r.id),
            rank: 0,
            category: oomdoc_kb::FixCategory::UpgradeOrDowngrade,
            title: format!("{}{}", r.title.get(lang), reported),
            detail: Some(r.fix.get(lang).to_string()),
            code: None,
            code_lang: None,
            versions: Some(format!("{} (this log: {} {})", r.affected, req.library, fact.version.as_deref().unwrap_or("?"))),
            references: r.links.iter().map(|l| RefOut { title: r.quote.clone(), url: l.clone() }).collect(),
            measured: None,
            // Only a range checked in release notes or source counts as verified.
            verified: r.status == "verified",
            verification: if r.status == "verified" { oomdoc_kb::Reliance::Verified } else { oomdoc_kb::Reliance::Unverified },
            from_family: None,
        });
    }
    out
}

/// `established` when the cause rests on a mechanism the numbers prove, `hedged` when it
/// names the likeliest explanations because the numbers cannot tell them apart, `generic`
/// for the entry's general cause.
fn cause_confidence(when: &[String]) -> &'static str {
    if when.iter().any(|w| HEDGES.contains(&w.as_str())) {
        "hedged"
    } else if when.iter().any(|w| names_a_mechanism(w)) {
        "established"
    } else {
        "generic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomdoc_kb::outcomes::{CategoryOutcome, EntryOutcomes, Outcomes as Table};
    use oomdoc_kb::FixCategory as C;

    /// A device-memory entry of family `testfam` with fixes of three kinds, two of one kind
    /// (the second fits a training job).
    fn entry() -> Entry {
        let fix = |id: &str, category: &str, when: &str| {
            format!("[[fixes]]\nid = \"{id}\"\ncategory = \"{category}\"\nwhen = [{when}]\nrefs = [\"r\"]\ntitle = {{ en = \"{id}\", zh = \"{id}\" }}\n")
        };
        let text = format!(
            "id = \"testfam.device\"\nkind = \"oom\"\nplatform = \"other\"\nphase = \"runtime\"\nmemory_space = \"device\"\ntitle = {{ en = \"t\", zh = \"t\" }}\nsummary = {{ en = \"s\", zh = \"s\" }}\n{}{}{}{}[[references]]\nkey = \"r\"\ntitle = \"r\"\nurl = \"https://example.org/r\"\n",
            fix("smaller", "smaller-working-set", ""),
            fix("upgrade", "upgrade-or-downgrade", ""),
            fix("free", "release-other-memory", ""),
            fix("smaller-for-training", "smaller-working-set", "\"training\""),
        );
        let (kb, errors) = KnowledgeBase::load_from([("t.toml".to_string(), text)]);
        assert!(errors.is_empty(), "{errors:?}");
        kb.by_id("testfam.device").unwrap().clone()
    }

    fn outcomes(threads: u64, counts: &[(&str, u64)]) -> EntryOutcomes {
        let categories = counts
            .iter()
            .map(|(c, n)| (c.to_string(), CategoryOutcome { count: *n, links: (0..*n).map(|i| format!("https://example.org/{c}/{threads}/{i}")).collect() }))
            .collect();
        EntryOutcomes { threads, categories, by_case: Default::default(), misled: Default::default() }
    }

    fn table(entries: &[(&str, EntryOutcomes)]) -> Table {
        Table { entries: entries.iter().map(|(id, o)| (id.to_string(), o.clone())).collect(), ..Table::default() }
    }

    fn fix(id: &str, category: C, from_family: Option<&str>) -> FixOut {
        FixOut {
            id: id.into(),
            rank: 0,
            category,
            title: id.into(),
            detail: None,
            code: None,
            code_lang: None,
            versions: None,
            references: Vec::new(),
            measured: None,
            verified: false,
            verification: oomdoc_kb::Reliance::General,
            from_family: from_family.map(str::to_string),
        }
    }

    fn ids(fixes: &[FixOut]) -> Vec<&str> {
        fixes.iter().map(|f| f.id.as_str()).collect()
    }

    #[test]
    fn an_entry_without_threads_borrows_its_familys_evidence_not_the_file_order() {
        let e = entry();
        // No thread of its own; its family (another `testfam.` entry) was fixed by upgrades.
        let t = table(&[("testfam.other", outcomes(6, &[("upgrade-or-downgrade", 5), ("smaller-working-set", 1)]))]);
        let ev = Evidence::of(&e, &t, Weights::default());
        assert!(ev.score("upgrade-or-downgrade") > ev.score("smaller-working-set"));
        let mut fixes = vec![fix("smaller", C::SmallerWorkingSet, None), fix("upgrade", C::UpgradeOrDowngrade, None), fix("free", C::ReleaseOtherMemory, None)];
        rank(&mut fixes, &e, &ev, Ranking::Measured);
        assert_eq!(ids(&fixes), ["upgrade", "smaller", "free"]);
        assert_eq!(fixes.iter().map(|f| f.rank).collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn with_no_family_evidence_the_corpus_speaks_and_no_share_is_zero() {
        let e = entry();
        // Only an unrelated host entry has threads: the corpus level orders the kinds.
        let t = table(&[("host.oom-killer", outcomes(10, &[("release-other-memory", 7), ("raise-limit", 3)]))]);
        let ev = Evidence::of(&e, &t, Weights::default());
        assert!(ev.score("release-other-memory") > ev.score("smaller-working-set"));
        assert!(ev.score("kernel-config") > 0.0, "a kind no thread has still has a share");
        let total: f64 = C::ALL.iter().map(|c| ev.score(c.as_str())).sum();
        assert!((total - 1.0).abs() < 1e-9, "the shares are a distribution: {total}");
        let mut fixes = vec![fix("smaller", C::SmallerWorkingSet, None), fix("free", C::ReleaseOtherMemory, None)];
        rank(&mut fixes, &e, &ev, Ranking::Measured);
        assert_eq!(ids(&fixes), ["free", "smaller"]);
    }

    #[test]
    fn an_entrys_own_threads_outweigh_its_family_once_it_has_many() {
        let e = entry();
        let family = ("testfam.other", outcomes(20, &[("upgrade-or-downgrade", 20)]));
        // Two threads of its own do not outvote twenty of the family's...
        let few = table(&[("testfam.device", outcomes(2, &[("smaller-working-set", 2)])), family.clone()]);
        let ev = Evidence::of(&e, &few, Weights::default());
        assert!(ev.score("upgrade-or-downgrade") > ev.score("smaller-working-set"));
        // ...thirty do.
        let many = table(&[("testfam.device", outcomes(30, &[("smaller-working-set", 30)])), family]);
        let ev = Evidence::of(&e, &many, Weights::default());
        assert!(ev.score("smaller-working-set") > ev.score("upgrade-or-downgrade"));
    }

    #[test]
    fn a_borrowed_kind_is_credited_with_the_entrys_own_threads_only() {
        let e = entry();
        // The memory's threads were mostly fixed by a bigger device, but this entry's by a
        // smaller job; the entry lists no bigger-device fix, so the family-level one follows
        // the entry's own kinds.
        let t = table(&[
            ("testfam.device", outcomes(3, &[("smaller-working-set", 2), ("release-other-memory", 1)])),
            ("generic.device-oom", outcomes(40, &[("bigger-device", 40)])),
        ]);
        let ev = Evidence::of(&e, &t, Weights::default());
        assert!(ev.score("bigger-device") > ev.score("release-other-memory"), "the prior favours the bigger device");
        assert_eq!(ev.gap_score("bigger-device"), 0.0);
        let mut fixes = vec![
            fix("smaller", C::SmallerWorkingSet, None),
            fix("free", C::ReleaseOtherMemory, None),
            fix("generic.device-oom/bigger-device", C::BiggerDevice, Some("generic.device-oom")),
        ];
        rank(&mut fixes, &e, &ev, Ranking::Measured);
        assert_eq!(ids(&fixes), ["smaller", "free", "generic.device-oom/bigger-device"]);
        // In file order a family-level fix is not offered.
        rank(&mut fixes, &e, &ev, Ranking::FileOrder);
        assert_eq!(ids(&fixes), ["smaller", "free"]);
    }

    #[test]
    fn between_fixes_of_equal_evidence_the_one_that_fits_more_of_the_case_leads() {
        let e = entry();
        let t = table(&[("testfam.device", outcomes(4, &[("smaller-working-set", 4)]))]);
        let ev = Evidence::of(&e, &t, Weights::default());
        let mut fixes = vec![fix("smaller", C::SmallerWorkingSet, None), fix("smaller-for-training", C::SmallerWorkingSet, None), fix("upgrade", C::UpgradeOrDowngrade, None)];
        rank(&mut fixes, &e, &ev, Ranking::Measured);
        // The training fix (its `when` holds for this case) first; then one of each kind
        // before a second of the same kind.
        assert_eq!(ids(&fixes), ["smaller-for-training", "upgrade", "smaller"]);
    }

    #[test]
    fn leaving_a_thread_out_takes_it_out_of_every_count() {
        let mut o = outcomes(3, &[("smaller-working-set", 2), ("upgrade-or-downgrade", 1)]);
        o.by_case.insert("workload=training".into(), outcomes(1, &[("upgrade-or-downgrade", 1)]));
        let link = o.categories["upgrade-or-downgrade"].links[0].clone();
        o.by_case.get_mut("workload=training").unwrap().categories.get_mut("upgrade-or-downgrade").unwrap().links = vec![link.clone()];
        let t = table(&[("testfam.device", o)]).without(&link);
        let left = &t.entries["testfam.device"];
        assert_eq!(left.threads, 2);
        assert_eq!(left.count("upgrade-or-downgrade"), 0);
        assert!(left.by_case.is_empty(), "{:?}", left.by_case);
        // Every thread gone: the entry is gone.
        let only = table(&[("testfam.device", outcomes(1, &[("smaller-working-set", 1)]))]);
        let link = only.entries["testfam.device"].categories["smaller-working-set"].links[0].clone();
        assert!(only.without(&link).entries.is_empty());
    }

    #[test]
    fn an_inference_job_is_ranked_by_the_entrys_inference_threads_first() {
        let e = entry();
        // Most of the entry's threads (training jobs) were fixed by a smaller job; its three
        // inference threads by an upgrade.
        let mut o = outcomes(12, &[("smaller-working-set", 9), ("upgrade-or-downgrade", 3)]);
        o.by_case.insert("workload=inference".into(), outcomes(3, &[("upgrade-or-downgrade", 3)]));
        let t = table(&[("testfam.device", o)]);
        let plain = Evidence::of(&e, &t, Weights::default());
        assert!(plain.score("smaller-working-set") > plain.score("upgrade-or-downgrade"));
        let inference = Evidence::of(&e, &t, Weights::default()).with_case(&e, &t, Some("workload=inference"));
        assert!(inference.score("upgrade-or-downgrade") > inference.score("smaller-working-set"));
        // No cell (or no facet): the entry's evidence unchanged.
        let none = Evidence::of(&e, &t, Weights::default()).with_case(&e, &t, Some("workload=data"));
        assert_eq!(none.score("smaller-working-set"), plain.score("smaller-working-set"));
        let total: f64 = C::ALL.iter().map(|c| inference.score(c.as_str())).sum();
        assert!((total - 1.0).abs() < 1e-9, "still a distribution: {total}");
    }

    #[test]
    fn gpu_client_settings_are_no_fix_on_a_tpu_but_stay_a_dead_end() {
        let case = Case::default();
        let mut tpu = Facts::default();
        tpu.conditions.insert("tpu".into());
        let code = "XLA_PYTHON_CLIENT_MEM_FRACTION=.5 python train.py";
        assert!(!fits_case(code, &case, &tpu, Offer::Fix));
        assert!(fits_case(code, &case, &tpu, Offer::DeadEnd));
        assert!(fits_case(code, &case, &Facts::default(), Offer::Fix));
    }
}
