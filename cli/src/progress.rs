//! Progress bars for uploads and downloads: drawn on stderr when it is a
//! terminal (and not in `--json` mode), invisible otherwise.

use indicatif::{ProgressBar, ProgressStyle};

use crate::output::Output;

/// A byte-counting bar; `len` is `None` when the size is not known.
pub fn bytes_bar(out: &Output, len: Option<u64>, message: &str) -> ProgressBar {
    if !out.interactive {
        return ProgressBar::hidden();
    }
    let bar = match len {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::no_length(),
    };
    let template = if len.is_some() {
        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}"
    } else {
        "{msg} {spinner} {bytes} {bytes_per_sec}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message.to_owned());
    bar
}

/// A bar counting `len` steps (tiles, files).
pub fn count_bar(out: &Output, len: u64, message: &str) -> ProgressBar {
    if !out.interactive {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {eta}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message.to_owned());
    bar
}
