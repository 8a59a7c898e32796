//! The few hardware facts diagnose needs, answered by the hardware table
//! (`oomdoc-hw`). Kept behind two functions so the table can grow freely.

/// TPU chips whose default scoped-VMEM limit equals `limit`: (name, physical VMEM per core).
pub fn tpu_chips_for_scoped_limit(limit: Option<u64>) -> Vec<(&'static str, u64)> {
    const MIB: u64 = 1 << 20;
    // Fallback facts (kernel-memory.md §1, jax `tpu_info.py`) until the table answers.
    let table: &[(&str, u64, u64)] =
        &[("v4", 16 * MIB, 16 * MIB), ("v5e", 16 * MIB, 128 * MIB), ("v5p", 16 * MIB, 64 * MIB), ("v6e", 32 * MIB, 128 * MIB), ("v7x", 32 * MIB, 64 * MIB)];
    match limit {
        Some(l) => table.iter().filter(|c| c.1 == l).map(|c| (c.0, c.2)).collect(),
        None => Vec::new(),
    }
}

/// A label for the GPUs whose per-block shared-memory limit is `limit` bytes.
pub fn gpu_family_for_shared_limit(limit: u64, amd: bool) -> Option<String> {
    let s = match limit {
        49152 => "48 KiB static limit (any NVIDIA GPU; Pascal and older opt-in)",
        65536 if amd => "AMD LDS 64 KiB per workgroup (CDNA/RDNA)",
        65536 => "sm_75 (Turing) or AMD LDS 64 KiB",
        98304 => "sm_70 (Volta)",
        101376 => "sm_86/sm_89/sm_120 (Ampere GA10x, Ada, consumer Blackwell)",
        166912 => "sm_80/sm_87 (A100, Orin)",
        232448 => "sm_90/sm_100 (Hopper H100/H200, Blackwell B200)",
        _ => return None,
    };
    Some(s.to_string())
}
