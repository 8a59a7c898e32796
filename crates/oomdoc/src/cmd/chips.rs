//! `oomdoc chips`: the hardware table (crates/hw/data/chips.toml) with a source per number.

use crate::cli_error::CliError;
use clap::{Args, ValueEnum};
use oomdoc_hw::Sourced;
use oomdoc_units::format_bytes;
use std::fmt::Write as _;
use std::io::Write;

#[derive(Args)]
pub struct ChipsArgs {
    /// text: tables then sources; json: the parsed table; toml: the data file itself.
    #[arg(long, value_enum, default_value_t = ChipsFormat::Text)]
    format: ChipsFormat,
    /// Show only TPUs or only GPUs.
    #[arg(long, value_enum)]
    only: Option<Only>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ChipsFormat {
    Text,
    Json,
    Toml,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Only {
    Tpu,
    Gpu,
}

/// A value with `?` when it is UNCONFIRMED.
fn v(s: &Sourced, show: impl Fn(u64) -> String) -> String {
    format!("{}{}", show(s.value), if s.unconfirmed { "?" } else { "" })
}

fn bytes(b: u64) -> String {
    format_bytes(b).replace(".00 ", " ")
}

pub fn run(args: ChipsArgs) -> Result<(), CliError> {
    let t = oomdoc_hw::table();
    let mut out = std::io::stdout().lock();
    match args.format {
        ChipsFormat::Toml => {
            out.write_all(oomdoc_hw::CHIPS_TOML.as_bytes())?;
            return Ok(());
        }
        ChipsFormat::Json => {
            let s = serde_json::to_string_pretty(t).map_err(|e| CliError::usage(e.to_string()))?;
            writeln!(out, "{s}")?;
            return Ok(());
        }
        ChipsFormat::Text => {}
    }
    let mut s = String::new();
    let mut sources: Vec<String> = Vec::new();
    let mut cite = |what: String, x: &Sourced| {
        sources.push(format!("  {what}: {}{}", x.source, if x.unconfirmed { " [UNCONFIRMED]" } else { "" }));
    };
    if args.only != Some(Only::Gpu) {
        let _ = writeln!(s, "TPU (memory per TensorCore unless noted; ? = UNCONFIRMED)");
        let _ = writeln!(s, "  {:<5} {:<12} {:>3} {:>9} {:>10} {:>9} {:>10} {:>9} {:>5}", "chip", "device_kind", "TCs", "megacore", "VMEM", "scoped", "SMEM", "HBM/chip", "MXU");
        for c in &t.tpu {
            let scoped = c.default_scoped_vmem.as_ref().map(|d| v(d, bytes)).unwrap_or_else(|| "n/a".into());
            let _ = writeln!(
                s,
                "  {:<5} {:<12} {:>3} {:>9} {:>10} {:>9} {:>10} {:>9} {:>5}",
                c.name,
                c.device_kind,
                v(&c.tensorcores, |x| x.to_string()),
                if c.megacore { "yes" } else { "no" },
                v(&c.vmem_per_core, bytes),
                scoped,
                v(&c.smem_per_core, bytes),
                v(&c.hbm_per_chip, bytes),
                v(&c.mxu_size, |x| format!("{x}²")),
            );
            for (what, x) in [("TensorCores", &c.tensorcores), ("VMEM", &c.vmem_per_core), ("SMEM", &c.smem_per_core), ("HBM", &c.hbm_per_chip), ("MXU", &c.mxu_size), ("MXUs/TC", &c.mxus_per_core)] {
                cite(format!("{} {what}", c.name), x);
            }
            if let Some(d) = &c.default_scoped_vmem {
                cite(format!("{} default scoped VMEM", c.name), d);
            }
        }
        let _ = writeln!(s);
    }
    if args.only != Some(Only::Tpu) {
        let _ = writeln!(s, "GPU (shared memory per block; opt-in = Triton's \"Hardware limit\"; ? = UNCONFIRMED)");
        let _ = writeln!(s, "  {:<7} {:<24} {:>8} {:>9} {:>9} {:>8} {:>8}", "arch", "family", "static", "opt-in", "per SM", "regs/SM", "threads");
        for g in &t.gpu {
            let _ = writeln!(
                s,
                "  {:<7} {:<24} {:>8} {:>9} {:>9} {:>8} {:>8}",
                g.arch,
                g.family,
                v(&g.shared_static_per_block, |x| x.to_string()),
                v(&g.shared_optin_per_block, |x| x.to_string()),
                v(&g.shared_per_sm, |x| x.to_string()),
                g.registers_per_sm.as_ref().map(|r| v(r, |x| x.to_string())).unwrap_or_else(|| "-".into()),
                v(&g.max_threads_per_block, |x| x.to_string()),
            );
            for (what, x) in [("static shared", &g.shared_static_per_block), ("opt-in shared", &g.shared_optin_per_block), ("shared per SM", &g.shared_per_sm)] {
                cite(format!("{} {what}", g.arch), x);
            }
            for (what, x) in [("registers", &g.registers_per_sm), ("tensor memory", &g.tensor_memory_columns)] {
                if let Some(x) = x {
                    cite(format!("{} {what}", g.arch), x);
                }
            }
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "Sources:");
    for line in sources {
        let _ = writeln!(s, "{line}");
    }
    out.write_all(s.as_bytes())?;
    Ok(())
}
