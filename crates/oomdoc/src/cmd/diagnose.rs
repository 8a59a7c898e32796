use crate::cli_error::CliError;
use clap::Args;

#[derive(Args)]
pub struct DiagnoseArgs {}

pub fn run(_args: DiagnoseArgs) -> Result<(), CliError> {
    Err(CliError::usage("`oomdoc diagnose` is not implemented yet"))
}
