use crate::cli_error::CliError;
use clap::Args;

#[derive(Args)]
pub struct ExplainArgs {}

pub fn run(_args: ExplainArgs) -> Result<(), CliError> {
    Err(CliError::usage("`oomdoc explain` is not implemented yet"))
}
