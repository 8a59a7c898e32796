use crate::cli_error::CliError;
use clap::Args;

#[derive(Args)]
pub struct PlanArgs {}

pub fn run(_args: PlanArgs) -> Result<(), CliError> {
    Err(CliError::usage("`oomdoc plan` is not implemented yet"))
}
