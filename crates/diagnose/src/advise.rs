//! Applying a knowledge-base entry to a finding: pick the cause, rank the fixes and
//! dead ends that apply, and fill their placeholders with this finding's numbers.

use crate::facts::case::Case;
use crate::facts::version::{rules_out, Requirement};
use crate::facts::Facts;
use crate::finding::{DeadEndOut, Finding, FixOut, Measured, Outcome, Outcomes, RefOut};
use crate::grammar;
use oomdoc_kb::{render, Entry, Lang, Text};

grammar!(api_jax, r"\bjax\.(?:jit|device_put|live_arrays|checkpoint|lax|clear_caches|numpy|block_until_ready|sharding|remat|profiler)|\bimport jax\b|from jax\.sharding|NamedSharding|donate_argnums|\bjnp\.|XLA_PYTHON_CLIENT_|XLA_CLIENT_MEM_FRACTION");
grammar!(api_pallas, r"\bpltpu\.|\bpl\.|pallas");
grammar!(api_pytorch, r"\btorch\.|\bimport torch\b|PYTORCH_\w*ALLOC_CONF|\bDataLoader\(");
grammar!(api_tf_gpu, r"set_memory_growth|TF_FORCE_GPU_ALLOW_GROWTH|TF_GPU_ALLOCATOR|per_process_gpu_memory_fraction|allow_growth|set_(?:virtual|logical)_device_configuration");
grammar!(api_tf, r"\btf\.|\bimport tensorflow\b|\bkeras\.");
grammar!(linux_only, r"\bdmesg\b|\bjournalctl\b|/proc/|/sys/fs/cgroup");
grammar!(training_only, r"\.backward\(|optimizer\.step|zero_grad|accum_steps|gradient_accumulation|gradient_checkpointing|\bcheckpoint\(|jax\.checkpoint|train_step");

/// Whether what a fix's code (or a dead end's action) uses fits the case: another
/// framework's API, a Linux-only tool on macOS or Windows, a training-only change for an
/// inference job. Read from the code itself, so every entry is gated without extra data.
pub fn fits_case(code: &str, case: &Case) -> bool {
    let api_ok = |api: &str, re: &regex::Regex| !re.is_match(code) || case.allows_api(api);
    api_ok("jax", api_jax())
        && api_ok("pallas", api_pallas())
        && api_ok("pytorch", api_pytorch())
        && api_ok("tensorflow", api_tf())
        && api_ok("tensorflow_gpu", api_tf_gpu())
        && !(linux_only().is_match(code) && matches!(case.os.as_deref(), Some("macos" | "windows")))
        && !(training_only().is_match(code) && case.inference())
        // Host-RAM failures of data libraries: no accelerator framework's API.
        && !(case.workload.as_deref() == Some("data") && (api_pytorch().is_match(code) || api_jax().is_match(code) || api_tf().is_match(code)))
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

/// Fill cause, fixes, dead ends and references of `f` from `entry`.
pub fn apply(f: &mut Finding, entry: &Entry, facts: &Facts, lang: Lang) {
    f.title = entry.title.get(lang).to_string();
    let cause = entry.causes.iter().filter(|c| facts.holds(&c.when)).find_map(|c| Some((c, fill_text(&c.text, lang, facts)?)));
    f.cause_confidence = cause.as_ref().map(|(c, _)| cause_confidence(&c.when).to_string());
    f.cause = cause.map(|(_, text)| text);
    let mut applied: Vec<(String, Option<String>)> = Vec::new();
    f.fixes = entry
        .fixes
        .iter()
        .filter(|fx| facts.holds(&fx.when) && versions_allow(&fx.requires, &f.case))
        .filter_map(|fx| {
            let title = fill_text(&fx.title, lang, facts)?;
            let detail = fx.detail.as_ref().and_then(|d| fill_text(d, lang, facts));
            let code = fx.code.as_deref().and_then(|c| fill(c, facts)).or_else(|| fx.code_fallback.as_deref().and_then(|c| fill(c, facts)));
            let raw_code = [fx.code.as_deref(), fx.code_fallback.as_deref()].into_iter().flatten().collect::<Vec<_>>().join("\n");
            if !fits_case(&raw_code, &f.case) {
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
                id: fx.id.clone(),
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
            })
        })
        .collect();
    list_regressions_to_check(f, facts, lang);
    let measured = oomdoc_kb::outcomes::for_entry(&entry.id);
    rank(&mut f.fixes, entry, measured, Ranking::Measured);
    if let Some(m) = measured {
        for fx in &mut f.fixes {
            fx.measured = Some(Measured { fixed: m.count(fx.category.as_str()), threads: m.threads });
        }
        let mut categories: Vec<Outcome> =
            m.categories.iter().map(|(c, o)| Outcome { category: c.clone(), count: o.count, links: o.links.clone() }).collect();
        categories.sort_by(|a, b| b.count.cmp(&a.count).then(a.category.cmp(&b.category)));
        f.outcomes = Some(Outcomes { threads: m.threads, categories });
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
    f.dead_ends = entry
        .dead_ends
        .iter()
        .filter(|d| facts.holds(&d.when) && versions_allow(&d.requires, &f.case) && fits_case(&d.action.en, &f.case))
        .filter_map(|d| {
            Some(DeadEndOut {
                id: d.id.clone(),
                category: d.category,
                action: fill_text(&d.action, lang, facts)?,
                why: fill_text(&d.why, lang, facts)?,
                references: refs(entry, &d.refs),
                verified: entry.dead_end_verified(d),
            })
        })
        .collect();
    f.references = entry.references.iter().map(|r| RefOut { title: r.title.clone(), url: r.url.clone() }).collect();
}

/// How fixes that apply are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// The knowledge-base file's order.
    FileOrder,
    /// Fixes the log's numbers single out (a positive mechanism condition in `when`) first;
    /// then, within each group, the category that fixed the most public threads of this
    /// entry (`kb/outcomes.json`); ties keep the file's order. One fix of each category
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
            "has_sizes" | "no_sizes" | "space_hbm" | "space_vmem" | "training" | "inference" | "serving" | "warning_only" | "fragmentation_possible" | "small_device"
        ))
}

/// Order `fixes` (already gated) and number them from 1.
pub fn rank(fixes: &mut [FixOut], entry: &Entry, measured: Option<&oomdoc_kb::outcomes::EntryOutcomes>, how: Ranking) {
    let position = |id: &str| entry.fixes.iter().position(|f| f.id == id).unwrap_or(usize::MAX);
    // A known regression whose range holds the version the log prints is singled out by
    // the log itself.
    let singled_out = |id: &str| {
        id.starts_with(REGRESSION_FIX) || entry.fixes.iter().find(|f| f.id == id).is_some_and(|f| f.when.iter().any(|w| names_a_mechanism(w)))
    };
    if how == Ranking::Measured {
        fixes.sort_by_key(|fx| {
            let fixed = measured.map_or(0, |m| m.count(fx.category.as_str()));
            (!singled_out(&fx.id), std::cmp::Reverse(fixed), position(&fx.id))
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
        });
    }
    out
}

/// `established` when the cause rests on a mechanism the numbers prove, `hedged` when it
/// names the likeliest explanations because the numbers cannot tell them apart, `generic`
/// for the entry's general cause.
fn cause_confidence(when: &[String]) -> &'static str {
    let hedges = ["fragmentation_possible", "!xla_generated_op", "held_outside_allocator"];
    if when.iter().any(|w| hedges.contains(&w.as_str())) {
        "hedged"
    } else if when.iter().any(|w| names_a_mechanism(w)) {
        "established"
    } else {
        "generic"
    }
}
