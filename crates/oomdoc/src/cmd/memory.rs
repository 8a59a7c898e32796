use crate::cli_error::CliError;
use clap::Args;

#[derive(Args)]
pub struct MemoryArgs {}

pub fn run(_args: MemoryArgs) -> Result<(), CliError> {
    Err(CliError::usage("`oomdoc memory` is not implemented yet"))
}
