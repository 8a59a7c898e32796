use crate::cli_error::CliError;
use clap::Args;

#[derive(Args)]
pub struct ChipsArgs {}

pub fn run(_args: ChipsArgs) -> Result<(), CliError> {
    Err(CliError::usage("`oomdoc chips` is not implemented yet"))
}
