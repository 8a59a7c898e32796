//! The one error type subcommands return: a one-line message and an exit status
//! (2 for usage errors and unreadable input, as documented in the README).

use std::fmt;

#[derive(Debug)]
pub struct CliError {
    message: String,
    code: u8,
    broken_pipe: bool,
}

impl CliError {
    /// Bad arguments or unreadable input: exit status 2.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError { message: message.into(), code: 2, broken_pipe: false }
    }

    pub fn exit_code(&self) -> u8 {
        self.code
    }

    pub fn is_broken_pipe(&self) -> bool {
        self.broken_pipe
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> CliError {
        CliError { broken_pipe: e.kind() == std::io::ErrorKind::BrokenPipe, message: e.to_string(), code: 2 }
    }
}
