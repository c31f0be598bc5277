//! Human output on a terminal, JSON for scripts (`--json`), no colour when
//! `NO_COLOR` is set or stdout is not a terminal.

use std::{
    io::{IsTerminal, Write},
    sync::atomic::{AtomicBool, Ordering},
};

use serde::Serialize;

/// Set once a reader closed standard output (`| head`): what is printed
/// after that is dropped, and the command finishes what it was doing
/// rather than stopping half-way through a write to disk.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// Set when writing standard output failed for another reason (a full
/// disk behind `>`): `main` then exits non-zero.
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// `-v`: every HTTP request is told on stderr, with its answer's status.
static VERBOSE: AtomicBool = AtomicBool::new(false);
/// `-q`: notes and progress are not printed (errors and warnings are).
static QUIET: AtomicBool = AtomicBool::new(false);

pub fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

/// A line on stderr that is neither an error nor a warning (what was done
/// on the side, what was trusted): `-q` silences it.
pub fn note(text: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("{text}");
    }
}

/// Writes to standard output. `println!` panics when the reader has gone;
/// a closed pipe is the reader's choice (as with ripgrep and cargo), so it
/// ends the output quietly, and any other failure is one `error:` line.
pub fn print_bytes(bytes: &[u8]) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
        Err(e) => {
            if !STDOUT_FAILED.swap(true, Ordering::Relaxed) {
                eprintln!("error: cannot write to standard output: {e}");
            }
        }
    }
}

/// `text` and a newline on standard output, as [`print_bytes`] writes.
pub fn print_line(text: &str) {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    print_bytes(line.as_bytes());
}

/// Whether some output could not be written (not counting a closed pipe).
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}

#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub json: bool,
    pub color: bool,
    pub interactive: bool,
    /// `-q`: no human result lines, notes or progress; `--json` output,
    /// asked for explicitly, is still printed.
    pub quiet: bool,
}

impl Output {
    /// With `-q` and `-v` as the command line gave them; they hold for
    /// the whole process (the HTTP client and `note` read them too).
    pub fn with_levels(json: bool, quiet: bool, verbose: bool) -> Self {
        QUIET.store(quiet, Ordering::Relaxed);
        VERBOSE.store(verbose, Ordering::Relaxed);
        let tty = std::io::stdout().is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            json,
            color: tty && !no_color && !json,
            interactive: std::io::stderr().is_terminal() && !json && !quiet,
            quiet,
        }
    }

    /// Prints either the JSON form or the human lines.
    pub fn emit<T: Serialize>(&self, value: &T, human: impl FnOnce() -> String) {
        if self.json {
            match serde_json::to_string_pretty(value) {
                Ok(s) => print_line(&s),
                Err(e) => eprintln!("error: cannot serialize output: {e}"),
            }
        } else if !self.quiet {
            let text = human();
            if !text.is_empty() {
                print_line(&text);
            }
        }
    }

    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }

    pub fn green(&self, s: &str) -> String {
        self.paint("32", s)
    }

    pub fn yellow(&self, s: &str) -> String {
        self.paint("33", s)
    }

    pub fn red(&self, s: &str) -> String {
        self.paint("31", s)
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    }
}
