//! Errors that name the field at fault (`inputs[1].block[0]`, `--block-k`, `chip`).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// The spec file is not valid TOML/JSON or has the wrong structure.
    Syntax(String),
    /// One field has a bad value.
    Field { field: String, message: String },
    /// Several block shapes break the Pallas TPU block rules (Mosaic error E2002).
    IllegalBlocks(Vec<String>),
}

impl PlanError {
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> PlanError {
        PlanError::Field { field: field.into(), message: message.into() }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Syntax(m) => write!(f, "cannot read the spec: {m}"),
            PlanError::Field { field, message } => write!(f, "`{field}`: {message}"),
            PlanError::IllegalBlocks(problems) => {
                write!(f, "illegal block shape (Mosaic would reject it, E2002): {}", problems.join("; "))
            }
        }
    }
}

impl std::error::Error for PlanError {}
