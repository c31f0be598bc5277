//! Human output on a terminal, JSON for scripts (`--json`), no colour when
//! `NO_COLOR` is set or stdout is not a terminal.

use std::io::IsTerminal;

use serde::Serialize;

#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub json: bool,
    pub color: bool,
    pub interactive: bool,
}

impl Output {
    pub fn new(json: bool) -> Self {
        let tty = std::io::stdout().is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            json,
            color: tty && !no_color && !json,
            interactive: std::io::stderr().is_terminal() && !json,
        }
    }

    /// Prints either the JSON form or the human lines.
    pub fn emit<T: Serialize>(&self, value: &T, human: impl FnOnce() -> String) {
        if self.json {
            match serde_json::to_string_pretty(value) {
                Ok(s) => println!("{s}"),
                Err(e) => eprintln!("error: cannot serialize output: {e}"),
            }
        } else {
            let text = human();
            if !text.is_empty() {
                println!("{text}");
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
