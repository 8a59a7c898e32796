//! What the benchmark binaries share: their flags (`--name VALUE` and switches, `-h`/`--help`
//! printing the usage line, a clear error and exit status 2 for anything else), and the
//! child mode in which a binary is the server itself (`--serve DB`).
#![allow(dead_code)]

use std::fmt::Display;
use std::str::FromStr;

/// The command line after the program name, read one flag at a time.
pub struct Args {
    usage: &'static str,
    rest: std::vec::IntoIter<String>,
}

impl Args {
    /// `usage`: the line `--help` prints, starting with the binary's name.
    pub fn new(usage: &'static str) -> Args {
        Args { usage, rest: std::env::args().skip(1).collect::<Vec<_>>().into_iter() }
    }

    /// The next flag; `-h`/`--help` prints the usage line and exits.
    pub fn next_flag(&mut self) -> Option<String> {
        let flag = self.rest.next()?;
        if flag == "-h" || flag == "--help" {
            println!("{}", self.usage);
            std::process::exit(0);
        }
        Some(flag)
    }

    /// The value after `flag`, as text.
    pub fn text(&mut self, flag: &str) -> Result<String, String> {
        self.rest.next().ok_or_else(|| format!("{flag} needs a value"))
    }

    /// The value after `flag`, parsed.
    pub fn value<T: FromStr>(&mut self, flag: &str) -> Result<T, String>
    where
        T::Err: Display,
    {
        let v = self.text(flag)?;
        v.parse().map_err(|e| format!("{flag} {v}: {e}"))
    }

    /// The error for a flag the binary does not know.
    pub fn unknown(&self, flag: &str) -> String {
        format!("unknown argument `{flag}` (usage: {})", self.usage)
    }
}

/// The parsed options, or the error on stderr as `NAME: error` and exit status 2.
pub fn or_exit<T>(name: &str, parsed: Result<T, String>) -> T {
    parsed.unwrap_or_else(|e| {
        eprintln!("{name}: {e}");
        std::process::exit(2)
    })
}

/// Child mode: be `oomdoc serve` on a loopback port over `db`; never returns.
pub fn serve(db: oomdoc_server::store::Location, feedback: oomdoc_server::store::FeedbackPolicy) -> ! {
    let config = oomdoc_server::Config { addr: "127.0.0.1:0".parse().unwrap(), db, feedback, ..Default::default() };
    match oomdoc_server::serve(config) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("server: {e}");
            std::process::exit(1)
        }
    }
}
