//! `oomdoc`: a thin command line over the oomdoc libraries. Every flag is defined
//! and documented in the `cmd/` module of its subcommand; this file only dispatches.

pub(crate) mod cli_error;
pub(crate) mod cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Why your accelerator ran out of memory, and exactly what to change.
#[derive(Parser)]
#[command(name = "oomdoc", version, about, long_about = None, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Find every memory failure in a log and explain it with numbers, cause and fixes.
    Diagnose(cmd::diagnose::DiagnoseArgs),
    /// Print a knowledge-base entry by id (tpu.scoped-vmem) or vendor code (E1001).
    Explain(cmd::explain::ExplainArgs),
    /// Memory viewer for XLA dumps: peak, buffers live at the peak, timeline.
    Memory(cmd::memory::MemoryArgs),
    /// Predict on-chip memory of a Pallas TPU or Triton kernel before compiling.
    Plan(cmd::plan::PlanArgs),
    /// Print the accelerator hardware table with sources.
    Chips(cmd::chips::ChipsArgs),
    /// Run a command, pass its output through, and diagnose it when it fails: `oomdoc run -- python train.py`.
    #[cfg(unix)]
    Run(cmd::run::RunArgs),
    /// Model Context Protocol server over stdio, for coding agents (tools: diagnose, explain, plan_pallas, plan_triton, memory).
    Mcp(cmd::mcp::McpArgs),
    /// Run the web UI and JSON API: paste a log, browse the knowledge base, record which fixes worked.
    Serve(cmd::serve::ServeArgs),
}

fn main() -> ExitCode {
    ExitCode::from(run_cli(std::env::args_os()))
}

/// Parse `args` (program name first) and run the command; also the entry point of the
/// Python package's `oomdoc` command (python/src/lib.rs includes this file).
pub fn run_cli<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = Cli::parse_from(args);
    let result = match cli.command {
        // The command's own exit status (128+N for a signal), not oomdoc's.
        #[cfg(unix)]
        Command::Run(a) => return cmd::run::run(a),
        Command::Diagnose(a) => cmd::diagnose::run(a),
        Command::Explain(a) => cmd::explain::run(a),
        Command::Memory(a) => cmd::memory::run(a),
        Command::Plan(a) => cmd::plan::run(a),
        Command::Chips(a) => cmd::chips::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Mcp(a) => cmd::mcp::run(a),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            // A closed pipe (`oomdoc diagnose big.log | head`) is not an error.
            if e.is_broken_pipe() {
                return 0;
            }
            // Messages quote paths and input: never pass their control characters on.
            eprintln!("oomdoc: {}", oomdoc_units::terminal::escape(&e.to_string()));
            e.exit_code()
        }
    }
}
