//! Live facts: what a running program knows that its log may not say (the Python
//! package reads them from the frameworks already imported when an exception is caught).
//! They only add conditions and values; the finding's sizes stay what the log printed.

use crate::facts::Facts;
use crate::finding::Finding;
use oomdoc_units::format_bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const MIB: u64 = 1 << 20;

/// Facts about the device and settings of the running program.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LiveFacts {
    /// TPU `device_kind` as JAX reports it (`TPU v5 lite`, `TPU v6e`, …).
    pub tpu_device_kind: Option<String>,
    /// Total memory of the failing device in bytes (`torch.cuda.mem_get_info()[1]`, JAX `bytes_limit`).
    pub device_total_bytes: Option<u64>,
    /// Allocator and compiler settings in the environment (`PYTORCH_CUDA_ALLOC_CONF`, `XLA_FLAGS`, …).
    pub env: BTreeMap<String, String>,
}

impl LiveFacts {
    /// `expandable_segments:True` in one of PyTorch's allocator settings.
    pub fn expandable_segments_set(&self) -> bool {
        ["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF"].iter().any(|k| {
            self.env.get(*k).is_some_and(|v| {
                v.split(',').any(|kv| {
                    let mut it = kv.splitn(2, ':');
                    it.next().map(str::trim) == Some("expandable_segments") && it.next().is_some_and(|b| b.trim().eq_ignore_ascii_case("true"))
                })
            })
        })
    }
}

/// Add what the live facts decide to a finding's facts.
pub fn apply(f: &Finding, live: &LiveFacts, x: &mut Facts) {
    let s = &f.sizes;
    if live.expandable_segments_set() {
        // Already set: the fix that suggests it is not offered again.
        x.conditions.insert("expandable_segments_set".into());
    }
    if s.total.is_none() {
        if let Some(total) = live.device_total_bytes {
            x.vars.insert("total".into(), total.to_string());
            x.vars.insert("total_h".into(), format_bytes(total));
            if s.requested.is_some_and(|r| r > total) {
                x.conditions.insert("request_exceeds_capacity".into());
            }
        }
    }
    let chip = live.tpu_device_kind.as_deref().and_then(oomdoc_hw::tpu_chip);
    if let Some(chip) = chip.filter(|_| f.memory_space.as_deref() == Some("vmem")) {
        // The chip is known: its own VMEM decides whether a raised limit can fit.
        let vmem = chip.vmem_per_core.value;
        x.vars.insert("chip_vmem_h".into(), format!("{}: {}", chip.name, format_bytes(vmem)));
        if let Some(covered) = x.vars.get("vmem_limit_bytes").and_then(|v| v.parse::<u64>().ok()) {
            if covered <= vmem.saturating_sub(MIB) {
                x.conditions.insert("request_fits_after_fix".into());
            } else {
                x.conditions.remove("request_fits_after_fix");
            }
        }
        // Above this chip's VMEM minus the 1 MiB the flag keeps, no limit fits the need.
        if let Some(need) = s.used.or(s.requested) {
            if need > vmem.saturating_sub(MIB) {
                x.conditions.insert("need_exceeds_physical_vmem".into());
            } else {
                x.conditions.remove("need_exceeds_physical_vmem");
            }
        }
        if let Some(default) = chip.default_scoped_vmem_bytes() {
            match s.limit {
                Some(limit) if limit == default => {
                    x.conditions.insert("limit_is_default".into());
                }
                Some(_) => {
                    x.conditions.remove("limit_is_default");
                }
                None => {
                    x.vars.insert("limit".into(), default.to_string());
                    x.vars.insert("limit_h".into(), format_bytes(default));
                    x.conditions.insert("limit_is_default".into());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expandable_segments_from_env() {
        let mut l = LiveFacts::default();
        assert!(!l.expandable_segments_set());
        l.env.insert("PYTORCH_CUDA_ALLOC_CONF".into(), "max_split_size_mb:128, expandable_segments:True".into());
        assert!(l.expandable_segments_set());
        l.env.insert("PYTORCH_CUDA_ALLOC_CONF".into(), "expandable_segments:False".into());
        assert!(!l.expandable_segments_set());
    }

    #[test]
    fn live_facts_enter_the_diagnosis() {
        // A message with a large reserved-but-unallocated share (crates/oomdoc/tests/diagnose_cli.rs).
        let log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 1.66 GiB is free. Of the allocated memory 70.09 GiB is allocated by PyTorch, and 6.84 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";
        let plain = crate::diagnose_text(log, &crate::Options::default());
        let mut live = LiveFacts::default();
        live.env.insert("PYTORCH_CUDA_ALLOC_CONF".into(), "expandable_segments:True".into());
        let opts = crate::Options { facts: Some(live), ..Default::default() };
        let with = crate::diagnose_text(log, &opts);
        let mentions = |r: &crate::Report| r.findings[0].fixes.iter().filter(|x| serde_json::to_string(x).unwrap().contains("expandable_segments:True")).count();
        assert!(mentions(&plain) > 0, "the plain diagnosis suggests expandable segments");
        assert!(mentions(&with) < mentions(&plain), "an allocator setting already present is not suggested again");
    }

    #[test]
    fn chip_decides_whether_a_raised_limit_fits() {
        // Real message: https://github.com/vllm-project/tpu-inference/pull/3407 (tests/corpus/dev.jsonl).
        let log = "CompileTimeScopedVmemOom: Ran out of memory in memory space vmem ... for\n%flash_attention.1 = bf16[1,16,25344,80] ... Scoped allocation with size\n37.22M and limit 32.00M exceeded scoped vmem limit by 5.22M.";
        let on = |kind: &str| {
            let live = LiveFacts { tpu_device_kind: Some(kind.into()), ..Default::default() };
            let r = crate::diagnose_text(log, &crate::Options { facts: Some(live), ..Default::default() });
            serde_json::to_string(&r.findings[0]).unwrap()
        };
        // 38 MiB fits under v6e's 128 MiB of VMEM, not under v4's 16 MiB.
        let v6e = on("TPU v6 lite");
        let v4 = on("TPU v4");
        assert!(!v6e.contains("limit-above-physical") && v4.contains("limit-above-physical"), "the chip changes the advice");
    }
}
