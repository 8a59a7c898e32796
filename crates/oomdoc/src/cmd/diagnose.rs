//! `oomdoc diagnose [LOG|-]`.

use crate::cli_error::CliError;
use clap::{Args, ValueEnum};
use oomdoc_diagnose::{diagnose_reader, render, Lang, Options};
use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Read, Write};
use std::path::PathBuf;

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    /// For a terminal (colour when stdout is a terminal and NO_COLOR is unset).
    Text,
    /// The documented JSON contract (see README).
    Json,
    /// For issues and chat.
    Markdown,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Args)]
pub struct DiagnoseArgs {
    /// Log file to read; `-` or nothing reads standard input. Any size: it is streamed.
    pub log: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Language of titles, causes and fixes: en or zh.
    #[arg(long, default_value = "en", value_parser = parse_lang)]
    pub lang: Lang,
    /// Colour in text output.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    /// XLA dump directory (`XLA_FLAGS=--xla_dump_to=DIR`): attach the failing module's
    /// peak and its largest buffers at the peak to each finding that names a module.
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
}

pub fn parse_lang(s: &str) -> Result<Lang, String> {
    Lang::parse(s).ok_or_else(|| format!("unknown language `{s}` (use en or zh)"))
}

pub fn run(args: DiagnoseArgs) -> Result<(), CliError> {
    if let Some(d) = &args.dump {
        if !d.exists() {
            return Err(CliError::usage(format!("--dump {}: no such file or directory", d.display())));
        }
    }
    let opts = Options { lang: args.lang, dump: args.dump.clone(), ..Default::default() };
    let (reader, name): (Box<dyn Read>, String) = match &args.log {
        None => (Box::new(io::stdin().lock()), "standard input".into()),
        Some(p) if p.as_os_str() == "-" => (Box::new(io::stdin().lock()), "standard input".into()),
        Some(p) => {
            if p.is_dir() {
                return Err(CliError::usage(format!("{} is a directory, not a log file", p.display())));
            }
            let f = File::open(p).map_err(|e| CliError::usage(format!("cannot read {}: {e}", p.display())))?;
            (Box::new(BufReader::with_capacity(1 << 16, f)), p.display().to_string())
        }
    };
    let report = diagnose_reader(reader, &opts).map_err(|e| CliError::usage(format!("cannot read {name}: {e}")))?;
    let out = match args.format {
        Format::Json => serde_json::to_string_pretty(&report).expect("report serializes") + "\n",
        Format::Markdown => render::markdown(&report, args.lang),
        Format::Text => {
            let color = match args.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            };
            render::text(&report, args.lang, color)
        }
    };
    let mut stdout = io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    Ok(())
}
