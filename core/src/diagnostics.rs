//! Validation reports every problem at once, each with the path of the value
//! it concerns (`tools[0].version`) and, where it helps, the file it is in.
//!
//! Every problem, up to a point: a list keeps the first
//! [`MAX_DIAGNOSTICS`] and only counts the rest, so a document of a million
//! bad lines costs a counter, not a million messages. Whatever shows a list
//! (its `Display`, its JSON, [`Diagnostics::lines`]) ends with an
//! "and N more problems" line when some were dropped.

use std::fmt;

use serde::{Serialize, Serializer, ser::SerializeSeq};

use crate::rules::Rule;

/// Most problems one list keeps; the rest are counted.
pub const MAX_DIAGNOSTICS: usize = 100;
/// Longest message kept, in characters: messages quote what they are
/// about (a value, a key), which untrusted input makes as long as it likes.
pub const MAX_MESSAGE_CHARS: usize = 1_000;
/// Longest path kept, in characters (paths are built from the input's keys).
pub const MAX_PATH_CHARS: usize = 300;

/// `text` cut to `max` characters, the cut marked with `…`.
pub fn clip(mut text: String, max: usize) -> String {
    // Bytes first: most texts are far below the limit in bytes too.
    if text.len() > max
        && let Some((cut, _)) = text.char_indices().nth(max)
    {
        text.truncate(cut);
        text.push('…');
    }
    text
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The file the problem is in, relative to the package root, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Dotted path with `[i]` indices; empty for the document as a whole.
    pub path: String,
    pub message: String,
    /// The named rule the problem breaks, when it is one
    /// ([`crate::rules`]): the registry's problem type for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<Rule>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}: ")?;
        }
        if self.path.is_empty() {
            f.write_str(&self.message)?;
        } else {
            write!(f, "{}: {}", self.path, self.message)?;
        }
        match self.rule {
            Some(rule) => write!(f, " [{rule}]"),
            None => Ok(()),
        }
    }
}

/// An accumulating list of problems: the first [`MAX_DIAGNOSTICS`] kept,
/// the rest counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    kept: Vec<Diagnostic>,
    dropped: usize,
}

impl Diagnostics {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the next problem would only be counted: callers with a
    /// costly message can skip building it.
    pub fn is_full(&self) -> bool {
        self.kept.len() >= MAX_DIAGNOSTICS
    }

    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.push_with(|| (path, message));
    }

    /// A problem that breaks the named `rule`.
    pub fn push_rule(&mut self, rule: Rule, path: impl Into<String>, message: impl Into<String>) {
        let kept = !self.is_full();
        self.push_with(|| (path, message));
        if kept && let Some(last) = self.kept.last_mut() {
            last.rule = Some(rule);
        }
    }

    /// [`Self::push`] for a problem whose text costs something to build:
    /// `problem` runs only when the problem will be kept.
    pub fn push_with<P: Into<String>, M: Into<String>>(
        &mut self,
        problem: impl FnOnce() -> (P, M),
    ) {
        if self.is_full() {
            self.dropped += 1;
            return;
        }
        let (path, message) = problem();
        self.kept.push(Diagnostic {
            file: None,
            path: clip(path.into(), MAX_PATH_CHARS),
            message: clip(message.into(), MAX_MESSAGE_CHARS),
            rule: None,
        });
    }

    /// Sets `file` on every entry that has none yet.
    pub fn in_file(mut self, file: &str) -> Self {
        for d in &mut self.kept {
            d.file.get_or_insert_with(|| file.to_owned());
        }
        self
    }

    pub fn extend(&mut self, other: Diagnostics) {
        for d in other.kept {
            if self.is_full() {
                self.dropped += 1;
            } else {
                self.kept.push(d);
            }
        }
        self.dropped += other.dropped;
    }

    /// No problem at all, kept or counted.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.dropped == 0
    }

    /// Every problem found, kept or counted.
    pub fn len(&self) -> usize {
        self.kept.len() + self.dropped
    }

    /// The problems kept (at most [`MAX_DIAGNOSTICS`]); [`Self::more`]
    /// says how many more there were.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.kept.iter()
    }

    /// Problems found past the cap, counted but not kept.
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    /// `and N more problems`, when some were dropped.
    pub fn more(&self) -> Option<String> {
        more_line(self.dropped, "problem", "problems")
    }

    /// What a reader sees, one line each: the problems kept, then the
    /// "and N more" line when some were dropped.
    pub fn lines(&self) -> impl Iterator<Item = String> + '_ {
        self.kept.iter().map(ToString::to_string).chain(self.more())
    }

    /// `Ok(())` when empty, else the whole list as an error.
    pub fn into_result(self) -> Result<(), Diagnostics> {
        if self.is_empty() { Ok(()) } else { Err(self) }
    }
}

/// `and N more <things>` for `n > 0`: the one spelling of a cut list.
pub fn more_line(n: usize, one: &str, many: &str) -> Option<String> {
    match n {
        0 => None,
        1 => Some(format!("and 1 more {one}")),
        n => Some(format!("and {n} more {many}")),
    }
}

/// The kept problems only; read [`Diagnostics::dropped`] first where the
/// count matters.
impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.kept.into_iter()
    }
}

/// A list of problems, ending with a document-wide `and N more problems`
/// entry when some were dropped, so the JSON shape stays a list.
impl Serialize for Diagnostics {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let more = self.more().map(|message| Diagnostic {
            file: None,
            path: String::new(),
            message,
            rule: None,
        });
        let mut seq = s.serialize_seq(Some(self.kept.len() + usize::from(more.is_some())))?;
        for d in self.kept.iter().chain(more.as_ref()) {
            seq.serialize_element(d)?;
        }
        seq.end()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, line) in self.lines().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            f.write_str(&line)?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// Joins a parent path and a key: `join("tools[0]", "version")`.
pub fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// Appends an index: `index("tools", 0)` is `tools[0]`.
pub fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn many(n: usize) -> Diagnostics {
        let mut d = Diagnostics::new();
        for i in 0..n {
            d.push(index("events", i), "bad");
        }
        d
    }

    #[test]
    fn a_list_keeps_the_cap_and_counts_the_rest() {
        let at_cap = many(MAX_DIAGNOSTICS);
        assert_eq!(at_cap.iter().count(), MAX_DIAGNOSTICS);
        assert_eq!(at_cap.dropped(), 0);
        assert_eq!(at_cap.more(), None);
        assert_eq!(at_cap.lines().count(), MAX_DIAGNOSTICS);

        let over = many(MAX_DIAGNOSTICS + 1);
        assert_eq!(over.iter().count(), MAX_DIAGNOSTICS);
        assert_eq!(over.len(), MAX_DIAGNOSTICS + 1);
        assert_eq!(over.more().as_deref(), Some("and 1 more problem"));

        let lots = many(100_000);
        assert_eq!(lots.len(), 100_000);
        let last = lots.lines().last().unwrap();
        assert_eq!(
            last,
            format!("and {} more problems", 100_000 - MAX_DIAGNOSTICS)
        );
        assert!(lots.to_string().ends_with(&last));
        assert!(!lots.is_empty());
    }

    #[test]
    fn long_texts_are_clipped() {
        let mut d = Diagnostics::new();
        d.push(
            "a".repeat(MAX_PATH_CHARS + 1),
            "é".repeat(MAX_MESSAGE_CHARS + 1),
        );
        d.push("b".repeat(MAX_PATH_CHARS), "c".repeat(MAX_MESSAGE_CHARS));
        let kept: Vec<&Diagnostic> = d.iter().collect();
        assert_eq!(kept[0].path, format!("{}…", "a".repeat(MAX_PATH_CHARS)));
        assert_eq!(
            kept[0].message,
            format!("{}…", "é".repeat(MAX_MESSAGE_CHARS))
        );
        assert_eq!(kept[1].path.len(), MAX_PATH_CHARS);
        assert_eq!(kept[1].message.len(), MAX_MESSAGE_CHARS);
    }

    #[test]
    fn extending_keeps_the_cap_and_adds_the_counts() {
        let mut a = many(MAX_DIAGNOSTICS - 1);
        a.extend(many(MAX_DIAGNOSTICS + 5));
        assert_eq!(a.iter().count(), MAX_DIAGNOSTICS);
        assert_eq!(a.len(), 2 * MAX_DIAGNOSTICS + 4);
        assert_eq!(a.dropped(), MAX_DIAGNOSTICS + 4);
    }

    #[test]
    fn json_ends_with_the_more_line() {
        let json = serde_json::to_value(many(MAX_DIAGNOSTICS + 3)).unwrap();
        let items = json.as_array().unwrap();
        assert_eq!(items.len(), MAX_DIAGNOSTICS + 1);
        assert_eq!(
            items.last().unwrap(),
            &serde_json::json!({"path": "", "message": "and 3 more problems"})
        );
        let json = serde_json::to_value(many(2)).unwrap();
        assert_eq!(json.as_array().unwrap().len(), 2);
    }
}
