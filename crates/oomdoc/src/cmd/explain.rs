//! `oomdoc explain ID|CODE`, like `rustc --explain`.

use crate::cli_error::CliError;
use clap::{Args, ValueEnum};
use oomdoc_kb::{KnowledgeBase, Lang};
use std::io::Write;

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    /// Markdown, readable as plain text.
    Text,
    /// The entry as JSON (the knowledge-base schema).
    Json,
}

#[derive(Args)]
pub struct ExplainArgs {
    /// Entry id (tpu.scoped-vmem), vendor code (E1001) or code name (CompileTimeScopedVmemOom).
    #[arg(required_unless_present = "list")]
    pub key: Option<String>,
    /// List every entry: id, code, kind, platform, title.
    #[arg(long)]
    pub list: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Language: en or zh.
    #[arg(long, default_value = "en", value_parser = super::diagnose::parse_lang)]
    pub lang: Lang,
}

pub fn run(args: ExplainArgs) -> Result<(), CliError> {
    let kb = KnowledgeBase::get();
    let mut out = std::io::stdout().lock();
    if args.list {
        match args.format {
            Format::Json => {
                let list: Vec<_> = kb.entries().iter().map(|e| e.list_row(args.lang)).collect();
                writeln!(out, "{}", serde_json::to_string_pretty(&list).expect("serializes"))?;
            }
            Format::Text => {
                for e in kb.entries() {
                    writeln!(out, "{:<34} {:<6} {:<5} {:<5} {}", e.id, e.code.as_deref().unwrap_or("-"), format!("{:?}", e.kind).to_lowercase(), format!("{:?}", e.platform).to_lowercase(), e.title.get(args.lang))?;
                }
            }
        }
        return Ok(());
    }
    let key = args.key.unwrap_or_default();
    let entry = kb.lookup(&key).ok_or_else(|| {
        CliError::usage(format!("no knowledge-base entry for `{key}` (try `oomdoc explain --list`)"))
    })?;
    match args.format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(entry).expect("serializes"))?,
        Format::Text => write!(out, "{}", oomdoc_kb::to_markdown(entry, args.lang))?,
    }
    Ok(())
}
