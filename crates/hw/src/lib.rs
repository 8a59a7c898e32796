//! The accelerator hardware table: TPU v2–v7x, 8i and 8t and GPUs (NVIDIA sm_70–sm_120, AMD CDNA),
//! with the source of every number.
//!
//! The data lives in `data/chips.toml` and is embedded at compile time, so the table is
//! the same offline as online. Numbers that come from user reports or inference, rather
//! than a vendor or compiler source, carry `unconfirmed = true`; callers that print them
//! should say so.
//!
//! Lookups used by the diagnose engine:
//! * [`gpu_archs_with_shared_limit`] / [`nvidia_archs_with_shared_limit`]: which GPUs print
//!   this `Hardware limit:` in Triton's `out of resource: shared memory`;
//! * [`tpu_chips_with_scoped_vmem_default`]: which TPUs have this default scoped-VMEM limit
//!   (the `limit 16.00M` of an E1001);
//! * [`tpu_chips_with_hbm`]: which TPUs have about this much HBM per JAX device.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The embedded data file (also printed raw by `oomdoc chips --format toml`).
pub const CHIPS_TOML: &str = include_str!("../data/chips.toml");

const MIB: u64 = 1 << 20;

/// One number with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sourced {
    pub value: u64,
    pub source: String,
    /// True when the number is inferred or from user reports, not a vendor/compiler source.
    #[serde(default)]
    pub unconfirmed: bool,
}

/// One TPU generation. Memory numbers are per TensorCore unless the name says per chip.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TpuChip {
    /// Canonical short name: `v5e`, `v6e`, `v7x`, …
    pub name: String,
    /// What `jax.devices()[0].device_kind` prints (`TPU v5 lite`).
    pub device_kind: String,
    /// Other spellings accepted by [`tpu_chip`] (matched after normalisation).
    pub aliases: Vec<String>,
    pub generation: u32,
    /// v4/v5p: one JAX device spans both TensorCores (the grid's "parallel" dims are split).
    pub megacore: bool,
    /// TensorCores per chip.
    pub tensorcores: Sourced,
    pub vmem_per_core: Sourced,
    /// Scoped-VMEM limit a kernel gets without `vmem_limit_bytes` (None: not applicable).
    #[serde(default)]
    pub default_scoped_vmem: Option<Sourced>,
    pub smem_per_core: Sourced,
    pub hbm_per_chip: Sourced,
    /// MXU edge (128 for 128×128 systolic arrays, 256 from v6e).
    pub mxu_size: Sourced,
    pub mxus_per_core: Sourced,
    #[serde(default)]
    pub note: Option<String>,
}

impl TpuChip {
    /// TensorCores one JAX device drives: all of them on megacore chips, one otherwise.
    pub fn cores_per_device(&self) -> u64 {
        if self.megacore {
            self.tensorcores.value
        } else {
            1
        }
    }

    /// HBM one JAX device sees (per chip on v5e/v6e and megacore chips, per core on v2/v3/v7x).
    pub fn hbm_per_device(&self) -> u64 {
        let cores = self.tensorcores.value.max(1);
        self.hbm_per_chip.value / cores * self.cores_per_device()
    }

    /// The scoped-VMEM limit a kernel gets by default, in bytes, if the chip has one.
    pub fn default_scoped_vmem_bytes(&self) -> Option<u64> {
        self.default_scoped_vmem.as_ref().map(|s| s.value)
    }

    /// Largest `vmem_limit_bytes` that can make sense: the physical VMEM of one core.
    /// (The XLA flag `xla_tpu_scoped_vmem_limit_kib` is capped 1 MiB lower.)
    pub fn vmem_limit_ceiling(&self) -> u64 {
        self.vmem_per_core.value
    }

    /// Upper bound of the XLA flag `--xla_tpu_scoped_vmem_limit_kib`: VMEM − 1 MiB.
    pub fn scoped_vmem_flag_max(&self) -> u64 {
        self.vmem_per_core.value.saturating_sub(MIB)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    Nvidia,
    Amd,
}

/// One GPU architecture (NVIDIA `sm_XY` or AMD `gfxNNN`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuArch {
    pub vendor: Vendor,
    /// `sm_86`, `gfx942`.
    pub arch: String,
    /// NVIDIA compute capability `8.6`.
    #[serde(default)]
    pub compute_capability: Option<String>,
    /// Short product family for messages: `RTX 30xx/A10/A40`. Its names (with `xx` for
    /// any two digits) are also accepted as the arch (`--arch rtx3090`, `A10`).
    pub family: String,
    /// More product names of this arch that `family` does not list (`RTX A6000`).
    #[serde(default)]
    pub names: Vec<String>,
    /// Shared memory a block gets without opting in (48 KiB on NVIDIA).
    pub shared_static_per_block: Sourced,
    /// Opt-in maximum per block (NVIDIA) / LDS per workgroup (AMD): Triton's "Hardware limit".
    pub shared_optin_per_block: Sourced,
    pub shared_per_sm: Sourced,
    #[serde(default)]
    pub registers_per_sm: Option<Sourced>,
    #[serde(default)]
    pub registers_per_block: Option<Sourced>,
    #[serde(default)]
    pub max_registers_per_thread: Option<Sourced>,
    pub max_threads_per_block: Sourced,
    /// Blackwell tensor memory, in 32-bit columns.
    #[serde(default)]
    pub tensor_memory_columns: Option<Sourced>,
    #[serde(default)]
    pub note: Option<String>,
}

/// Kept for callers that think in NVIDIA terms; AMD entries carry `vendor = Amd`.
pub type NvidiaArch = GpuArch;

impl GpuArch {
    /// NVIDIA compute capability as a number (`sm_86` → 86), if this is an NVIDIA arch.
    pub fn sm_number(&self) -> Option<u32> {
        if self.vendor != Vendor::Nvidia {
            return None;
        }
        self.arch.strip_prefix("sm_")?.parse().ok()
    }
}

/// The whole table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareTable {
    pub tpu: Vec<TpuChip>,
    pub gpu: Vec<GpuArch>,
}

/// The parsed table (parsed once; the embedded file is checked by this crate's tests).
pub fn table() -> &'static HardwareTable {
    static TABLE: OnceLock<HardwareTable> = OnceLock::new();
    TABLE.get_or_init(|| match toml::from_str(CHIPS_TOML) {
        Ok(t) => t,
        // Unreachable in a tested build: `tests::table_parses` parses the same bytes.
        Err(e) => panic!("embedded data/chips.toml is invalid: {e}"),
    })
}

/// Lower-case and drop spaces, dashes, underscores and a leading "tpu"/"google" so that
/// `TPU v5 lite`, `tpu-v5-lite`, `v5lite` all compare equal.
fn normalise_chip_name(s: &str) -> String {
    let mut n: String = s
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '_' | '.'))
        .flat_map(|c| c.to_lowercase())
        .collect();
    for prefix in ["google", "cloud", "tpu"] {
        if let Some(rest) = n.strip_prefix(prefix) {
            if !rest.is_empty() {
                n = rest.to_string();
            }
        }
    }
    n
}

/// Find a TPU by name, JAX device kind or alias (`v5e`, `TPU v5 lite`, `trillium`, `ironwood`,
/// `tpu7x`). Case, spaces and dashes do not matter.
pub fn tpu_chip(name_or_alias: &str) -> Option<&'static TpuChip> {
    let wanted = normalise_chip_name(name_or_alias);
    if wanted.is_empty() {
        return None;
    }
    table().tpu.iter().find(|c| {
        normalise_chip_name(&c.name) == wanted
            || normalise_chip_name(&c.device_kind) == wanted
            || c.aliases.iter().any(|a| normalise_chip_name(a) == wanted)
    })
}

/// TPUs whose default scoped-VMEM limit is exactly `bytes` (E1001's "limit 16.00M" → v4/v5e/v5p).
pub fn tpu_chips_with_scoped_vmem_default(bytes: u64) -> Vec<&'static TpuChip> {
    table().tpu.iter().filter(|c| c.default_scoped_vmem_bytes() == Some(bytes)).collect()
}

/// TPUs where `bytes` looks like the HBM of one JAX device: at most the device's HBM and
/// at least 85 % of it (the runtime reserves some, e.g. v5e reports 15.75 GiB of 16 GiB).
pub fn tpu_chips_with_hbm(bytes: u64) -> Vec<&'static TpuChip> {
    table()
        .tpu
        .iter()
        .filter(|c| {
            let hbm = c.hbm_per_device() as u128;
            let b = bytes as u128;
            b <= hbm && b * 100 >= hbm * 85
        })
        .collect()
}

/// Find a GPU arch: `sm_86`, `sm86`, `86`, `8.6`, `gfx942` (case-insensitive).
pub fn gpu_arch(name: &str) -> Option<&'static GpuArch> {
    let n = name.trim().to_ascii_lowercase();
    let n = n.strip_prefix("cuda:").unwrap_or(&n);
    let key = if n.starts_with("gfx") {
        n.to_string()
    } else if let Some((major, minor)) = n.split_once('.') {
        format!("sm_{major}{minor}")
    } else {
        let digits = n.trim_start_matches("sm_").trim_start_matches("sm").trim_start_matches("compute_");
        // sm_90a / sm_100a: the arch-specific feature set has the same limits.
        let digits = digits.trim_end_matches(['a', 'f']);
        format!("sm_{digits}")
    };
    table().gpu.iter().find(|g| g.arch == key).or_else(|| gpu_by_product(name))
}

/// Lowercase letters and digits only: `NVIDIA GeForce RTX 4090` → `nvidiageforcertx4090`.
fn squeeze(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_lowercase()).collect()
}

/// A GPU by its product name, as users and `nvidia-smi` write it: `rtx4090`, `H100`,
/// `A100-SXM4-80GB`, `NVIDIA GeForce RTX 3090`, `MI300X`. The names are the table's own
/// (`family` and `names`); the model is matched whole, so `A10` is not `A100`.
fn gpu_by_product(name: &str) -> Option<&'static GpuArch> {
    let mut n = squeeze(name);
    for brand in ["nvidia", "geforce", "tesla", "quadro", "amd", "instinct", "radeon"] {
        n = n.strip_prefix(brand).map(str::to_string).unwrap_or(n);
    }
    // "rtx4090", "a100sxm480gb" → the model: letters, digits, and one letter after them
    // ("mi300x", "l40s", "a10g"); what follows (memory size, form factor) is not the model.
    let model_end = |s: &str| -> usize {
        let b = s.as_bytes();
        let mut i = b.iter().take_while(|c| c.is_ascii_alphabetic()).count();
        let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return s.len();
        }
        i += digits;
        i
    };
    let end = model_end(&n);
    let model = &n[..end];
    // A product name matches the model exactly; `x` in it stands for any digit (`RTX 30xx`).
    let matches = |product: &str, m: &str| {
        let p = squeeze(product);
        p.len() == m.len() && p.chars().zip(m.chars()).all(|(a, b)| a == b || (a == 'x' && b.is_ascii_digit()))
    };
    let suffixed = n[end..].chars().next().filter(|c| c.is_ascii_alphabetic()).map(|c| format!("{model}{c}"));
    let products = |g: &'static GpuArch| g.family.split(['/', ',']).map(str::trim).map(str::to_string).chain(g.names.iter().cloned()).collect::<Vec<_>>();
    // With its letter first ("l40s", "mi300x"), then the bare model ("a10g" → "a10"); the
    // whole squeezed name last ("rtxpro6000", "rtx6000ada").
    let candidates = suffixed.into_iter().chain([model.to_string(), n.clone()]);
    for m in candidates.filter(|m| !m.is_empty()) {
        if let Some(g) = table().gpu.iter().find(|g| products(g).iter().any(|p| matches(p, &m))) {
            return Some(g);
        }
    }
    None
}

/// GPUs (any vendor) whose per-block shared-memory limit is `bytes`: the opt-in maximum
/// (what Triton prints as "Hardware limit"); if no arch has that opt-in value, those whose
/// static 48 KiB default equals it (ptxas' "0xc000 max").
pub fn gpu_archs_with_shared_limit(bytes: u64) -> Vec<&'static GpuArch> {
    let gpus = &table().gpu;
    let optin: Vec<_> = gpus.iter().filter(|g| g.shared_optin_per_block.value == bytes).collect();
    if !optin.is_empty() {
        return optin;
    }
    gpus.iter().filter(|g| g.shared_static_per_block.value == bytes).collect()
}

/// NVIDIA-only form of [`gpu_archs_with_shared_limit`].
pub fn nvidia_archs_with_shared_limit(bytes: u64) -> Vec<&'static NvidiaArch> {
    gpu_archs_with_shared_limit(bytes).into_iter().filter(|g| g.vendor == Vendor::Nvidia).collect()
}

/// `sm_86/sm_89/sm_120 (RTX 30xx/A10/A40, RTX 40xx/L4/L40, RTX 50xx/RTX PRO 6000)`.
/// Empty input gives an empty string.
pub fn family_label(archs: &[&GpuArch]) -> String {
    if archs.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = archs.iter().map(|a| a.arch.as_str()).collect();
    let families: Vec<&str> = archs.iter().map(|a| a.family.as_str()).collect();
    format!("{} ({})", names.join("/"), families.join(", "))
}

/// `v4/v5e/v5p` for a list of TPUs.
pub fn tpu_label(chips: &[&TpuChip]) -> String {
    chips.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_parses_and_every_number_has_a_source() {
        let t: HardwareTable = toml::from_str(CHIPS_TOML).expect("chips.toml parses");
        assert!(t.tpu.len() >= 7 && t.gpu.len() >= 10);
        let mut all: Vec<&Sourced> = Vec::new();
        for c in &t.tpu {
            all.extend([&c.tensorcores, &c.vmem_per_core, &c.smem_per_core, &c.hbm_per_chip, &c.mxu_size, &c.mxus_per_core]);
            all.extend(c.default_scoped_vmem.iter());
        }
        for g in &t.gpu {
            all.extend([&g.shared_static_per_block, &g.shared_optin_per_block, &g.shared_per_sm, &g.max_threads_per_block]);
            all.extend(g.registers_per_sm.iter().chain(&g.registers_per_block).chain(&g.max_registers_per_thread));
        }
        for s in all {
            assert!(s.source.len() > 5 && s.value > 0, "{s:?}");
        }
    }

    #[test]
    fn tpu_aliases() {
        assert_eq!(tpu_chip("v5e").unwrap().name, "v5e");
        assert_eq!(tpu_chip("TPU v5 lite").unwrap().name, "v5e");
        assert_eq!(tpu_chip("tpu-v5-lite-podslice").unwrap().name, "v5e");
        assert_eq!(tpu_chip("Trillium").unwrap().name, "v6e");
        assert_eq!(tpu_chip("TPU v6 lite").unwrap().name, "v6e");
        assert_eq!(tpu_chip("ironwood").unwrap().name, "v7x");
        assert_eq!(tpu_chip("TPU7x").unwrap().name, "v7x");
        assert_eq!(tpu_chip("TPU v5").unwrap().name, "v5p");
        assert_eq!(tpu_chip("v4").unwrap().name, "v4");
        assert!(tpu_chip("v9z").is_none());
        assert!(tpu_chip("").is_none());
        assert!(tpu_chip("tpu").is_none());
    }

    #[test]
    fn tpu_numbers() {
        let v5e = tpu_chip("v5e").unwrap();
        assert_eq!(v5e.default_scoped_vmem_bytes(), Some(16 * MIB));
        assert_eq!(v5e.vmem_per_core.value, 128 * MIB);
        assert_eq!(v5e.mxu_size.value, 128);
        assert_eq!(tpu_chip("v6e").unwrap().mxu_size.value, 256);
        assert_eq!(tpu_chip("v6e").unwrap().default_scoped_vmem_bytes(), Some(32 * MIB));
        assert_eq!(tpu_chip("v7x").unwrap().hbm_per_device(), 96 << 30);
        assert_eq!(tpu_chip("v4").unwrap().hbm_per_device(), 32 << 30);
        let names = |v: Vec<&TpuChip>| tpu_label(&v);
        assert_eq!(names(tpu_chips_with_scoped_vmem_default(16 * MIB)), "v4/v5e/v5p");
        assert_eq!(names(tpu_chips_with_scoped_vmem_default(32 * MIB)), "v6e/v7x");
        // v5e's runtime reports 15.75G of HBM.
        assert_eq!(names(tpu_chips_with_hbm(15 * (1 << 30) + 768 * MIB)), "v3/v5e");
        assert!(tpu_chips_with_hbm(u64::MAX).is_empty());
    }

    /// TPU 8i and 8t as jax 0.12.0.1's tpu_info.py describes them, found by their JAX device kind.
    #[test]
    fn tpu_generation_8() {
        let i = tpu_chip("TPU8i").unwrap();
        assert_eq!((i.name.as_str(), i.vmem_per_core.value, i.tensorcores.value), ("8i", 192 * MIB, 2));
        assert_eq!(i.hbm_per_device(), 309_000_000_000 / 2);
        let t = tpu_chip("tpu 8t").unwrap();
        assert_eq!((t.name.as_str(), t.vmem_per_core.value, t.tensorcores.value), ("8t", 128 * MIB, 1));
        assert_eq!(t.hbm_per_device(), 231_000_000_000);
        assert_eq!(t.scoped_vmem_flag_max(), 127 * MIB);
        assert!(i.default_scoped_vmem_bytes().is_none() && t.default_scoped_vmem_bytes().is_none());
    }

    #[test]
    fn gpu_lookups() {
        let label = |v: Vec<&GpuArch>| family_label(&v);
        assert_eq!(
            label(nvidia_archs_with_shared_limit(101376)),
            "sm_86/sm_89/sm_120 (RTX 30xx/A10/A40, RTX 40xx/L4/L40, RTX 50xx/RTX PRO 6000)"
        );
        assert_eq!(label(nvidia_archs_with_shared_limit(232448)), "sm_90/sm_100 (H100/H200/GH200, B200/GB200)");
        assert_eq!(label(nvidia_archs_with_shared_limit(65536)), "sm_75 (T4, RTX 20xx)");
        let any65536 = gpu_archs_with_shared_limit(65536);
        assert!(any65536.iter().any(|g| g.arch == "gfx942"));
        assert_eq!(nvidia_archs_with_shared_limit(49152).len(), 9);
        assert!(gpu_archs_with_shared_limit(12345).is_empty());
        assert_eq!(family_label(&[]), "");
        assert_eq!(gpu_arch("sm_90a").unwrap().arch, "sm_90");
        assert_eq!(gpu_arch("8.6").unwrap().arch, "sm_86");
        assert_eq!(gpu_arch("86").unwrap().arch, "sm_86");
        assert_eq!(gpu_arch("SM120").unwrap().arch, "sm_120");
        assert_eq!(gpu_arch("gfx942").unwrap().sm_number(), None);
        assert_eq!(gpu_arch("sm_100").unwrap().sm_number(), Some(100));
        assert!(gpu_arch("sm_999").is_none());
        // Product names, as users and nvidia-smi write them.
        for (name, arch) in [
            ("rtx4090", "sm_89"),
            ("RTX 3090", "sm_86"),
            ("NVIDIA GeForce RTX 4090", "sm_89"),
            ("H100", "sm_90"),
            ("h100-sxm5-80gb", "sm_90"),
            ("A100", "sm_80"),
            ("NVIDIA A100-SXM4-40GB", "sm_80"),
            ("A10", "sm_86"),
            ("A10G", "sm_86"),
            ("T4", "sm_75"),
            ("V100", "sm_70"),
            ("L40S", "sm_89"),
            ("RTX A6000", "sm_86"),
            ("B200", "sm_100"),
            ("MI300X", "gfx942"),
            ("RTX PRO 6000", "sm_120"),
        ] {
            assert_eq!(gpu_arch(name).map(|g| g.arch.as_str()), Some(arch), "{name}");
        }
        assert!(gpu_arch("A1000").is_none(), "not A100 nor A10");
        assert!(gpu_arch("rtx").is_none());
    }
}
