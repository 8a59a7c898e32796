//! Applying a knowledge-base entry to a finding: pick the cause, rank the fixes and
//! dead ends that apply, and fill their placeholders with this finding's numbers.

use crate::facts::case::Case;
use crate::facts::version::{rules_out, Requirement};
use crate::facts::Facts;
use crate::finding::{DeadEndOut, Finding, FixOut, RefOut};
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
    f.cause = entry.causes.iter().filter(|c| facts.holds(&c.when)).find_map(|c| fill_text(&c.text, lang, facts));
    let mut rank = 0;
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
            rank += 1;
            Some(FixOut {
                id: fx.id.clone(),
                rank,
                category: fx.category,
                title,
                detail,
                code,
                code_lang: fx.code_lang.clone(),
                versions: fx.versions.clone(),
                references: refs(entry, &fx.refs),
            })
        })
        .collect();
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
            })
        })
        .collect();
    f.references = entry.references.iter().map(|r| RefOut { title: r.title.clone(), url: r.url.clone() }).collect();
}
