//! The few hardware facts diagnose needs, answered by the hardware table
//! (`oomdoc-hw`, `crates/hw/data/chips.toml`, every number with its source).

/// TPU chips whose default scoped-VMEM limit equals `limit`: (name, physical VMEM per core).
pub fn tpu_chips_for_scoped_limit(limit: Option<u64>) -> Vec<(&'static str, u64)> {
    let Some(limit) = limit else { return Vec::new() };
    oomdoc_hw::tpu_chips_with_scoped_vmem_default(limit).into_iter().map(|c| (c.name.as_str(), c.vmem_per_core.value)).collect()
}

/// A label for the GPUs whose per-block shared-memory limit is `limit` bytes
/// (`amd`: the log shows a ROCm/HIP stack, so only AMD parts are named).
pub fn gpu_family_for_shared_limit(limit: u64, amd: bool) -> Option<String> {
    let archs = oomdoc_hw::gpu_archs_with_shared_limit(limit);
    let archs: Vec<_> = if amd {
        let only_amd: Vec<_> = archs.iter().copied().filter(|a| a.arch.starts_with("gfx")).collect();
        if only_amd.is_empty() { archs } else { only_amd }
    } else {
        archs
    };
    if archs.is_empty() {
        return None;
    }
    Some(oomdoc_hw::family_label(&archs))
}

/// TPU chips with more VMEM per core than `limit`: where a "Used X of Y vmem" limit Y is a
/// configured limit below the core's VMEM, which raising can lift. (name, VMEM per core).
pub fn tpu_chips_with_vmem_above(limit: u64) -> Vec<(&'static str, u64)> {
    oomdoc_hw::table().tpu.iter().filter(|c| c.vmem_per_core.value > limit).map(|c| (c.name.as_str(), c.vmem_per_core.value)).collect()
}

/// The most shared memory per block any GPU in the table offers (opt-in maximum / LDS).
pub fn largest_shared_per_block() -> u64 {
    oomdoc_hw::table().gpu.iter().map(|g| g.shared_optin_per_block.value).max().unwrap_or(u64::MAX)
}
