//! A small walker over a parsed YAML value that builds typed models while
//! recording every problem with its path, instead of stopping at the first
//! like serde's `deny_unknown_fields` does. Shared by agent.yaml, ux.yaml and
//! SKILL.md frontmatter.

use std::collections::BTreeMap;

use yaml_serde::Value;

use crate::{
    diagnostics::{Diagnostics, index, join},
    keys::{EXTENSION_PREFIX, suggest},
};

/// Kept `x-` extension keys of one mapping, in their JSON form.
pub type Extensions = BTreeMap<String, serde_json::Value>;

/// Longest string the reader takes where no tighter bound applies, in
/// characters: what a document says reaches stored specs and pages, so
/// every field has a bound when it is read.
pub const MAX_TEXT_CHARS: usize = 8_192;
/// Longest description (agents, subagents, skills; tools and protocols
/// have the same bound): the catalog and search show it.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;
/// Longest label (`title`, `subtitle`, `developer`, `category`): shown
/// as headings and searched as keywords.
pub const MAX_LABEL_CHARS: usize = 200;
/// Longest key of a mapping with user-chosen keys (model, server, tool,
/// component and variable names).
pub const MAX_KEY_CHARS: usize = 128;

/// Whether `s` is longer than `max` characters; counts only when its
/// bytes could be.
pub fn too_long(s: &str, max: usize) -> Option<usize> {
    if s.len() <= max {
        return None;
    }
    let chars = s.chars().count();
    (chars > max).then_some(chars)
}

/// The shape problems the reader reports; their text is the diagnostic
/// message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// Reported at the unknown key's own path, so the key is not repeated.
    #[error("unknown key; did you mean {suggestion:?}?")]
    UnknownKeySuggest { suggestion: String },
    #[error("unknown key; expected one of: {expected}")]
    UnknownKey { expected: String },
    #[error("missing required key {0:?}")]
    Missing(String),
    #[error("expected {expected}, found {found}")]
    WrongType {
        expected: &'static str,
        found: &'static str,
    },
    #[error("mapping keys must be strings, found {0}")]
    NonStringKey(&'static str),
    #[error("YAML tags like {0} are not supported")]
    Tagged(String),
    #[error("{value} is out of range: {rule}")]
    OutOfRange { value: String, rule: &'static str },
    #[error("must not be empty")]
    Empty,
    #[error("{value:?} is not one of: {expected}")]
    NotOneOf { value: String, expected: String },
    #[error("{0:?} appears more than once")]
    Duplicate(String),
    #[error("is {chars} characters long; at most {max} are allowed")]
    TooLong { chars: usize, max: usize },
}

/// What a YAML value is, for "expected X, found Y" messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// Converts a YAML value into JSON, the form the registry stores free-form
/// data in. Non-string keys are stringified; tags are dropped.
pub fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into()
            } else if let Some(u) = n.as_u64() {
                u.into()
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or(serde_json::Value::Null, serde_json::Value::Number)
            }
        }
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Sequence(seq) => serde_json::Value::Array(seq.iter().map(to_json).collect()),
        Value::Mapping(m) => serde_json::Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::String(s) => s.clone(),
                        other => scalar_text(other).unwrap_or_default(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Value::Tagged(t) => to_json(&t.value),
    }
}

/// A scalar's text as written (numbers and booleans included).
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// One mapping whose keys were checked against a known list.
#[derive(Debug)]
pub struct Fields<'v> {
    pub path: String,
    entries: Vec<(&'v str, &'v Value)>,
    pub extensions: Extensions,
}

impl<'v> Fields<'v> {
    pub fn get(&self, key: &str) -> Option<&'v Value> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The path of one key of this mapping.
    pub fn at(&self, key: &str) -> String {
        join(&self.path, key)
    }
}

/// Accumulates diagnostics while a document is read.
#[derive(Debug, Default)]
pub struct Reader {
    pub diags: Diagnostics,
    /// The regexes the document's JSON Schemas may still hold.
    pub regexes: crate::json_schema::RegexBudget,
}

impl Reader {
    pub fn new() -> Self {
        Self::default()
    }

    // Callers hand over temporaries (error values, `format!` strings), so
    // taking them by value keeps every call site short.
    #[allow(clippy::needless_pass_by_value)]
    pub fn error(&mut self, path: impl Into<String>, message: impl ToString) {
        self.diags.push(path, message.to_string());
    }

    pub fn finish(self) -> Diagnostics {
        self.diags
    }

    fn wrong_type(&mut self, path: &str, expected: &'static str, v: &Value) {
        if let Value::Tagged(t) = v {
            self.error(path, ShapeError::Tagged(t.tag.to_string()));
        } else {
            self.error(
                path,
                ShapeError::WrongType {
                    expected,
                    found: type_name(v),
                },
            );
        }
    }

    /// The entries of a mapping with user-chosen keys (model names, tool
    /// names), in document order. Null reads as empty: `video_player:` with
    /// nothing after it is an empty declaration.
    pub fn dict<'v>(&mut self, v: &'v Value, path: &str) -> Vec<(&'v str, &'v Value)> {
        match v {
            Value::Null => Vec::new(),
            Value::Mapping(m) => m
                .iter()
                .filter_map(|(k, val)| match k {
                    Value::String(s) => match too_long(s, MAX_KEY_CHARS) {
                        None => Some((s.as_str(), val)),
                        Some(chars) => {
                            self.error(
                                path,
                                format!(
                                    "a key {}",
                                    ShapeError::TooLong {
                                        chars,
                                        max: MAX_KEY_CHARS
                                    }
                                ),
                            );
                            None
                        }
                    },
                    other => {
                        self.error(path, ShapeError::NonStringKey(type_name(other)));
                        None
                    }
                })
                .collect(),
            other => {
                self.wrong_type(path, "a mapping", other);
                Vec::new()
            }
        }
    }

    /// A mapping with a fixed set of keys. Unknown keys are reported (with a
    /// suggestion when one is close); `x-` keys are kept as extensions.
    pub fn fields<'v>(&mut self, v: &'v Value, path: &str, known: &[&str]) -> Option<Fields<'v>> {
        let raw = match v {
            Value::Null => Vec::new(),
            Value::Mapping(_) => self.dict(v, path),
            other => {
                self.wrong_type(path, "a mapping", other);
                return None;
            }
        };
        let mut fields = Fields {
            path: path.to_owned(),
            entries: Vec::with_capacity(raw.len()),
            extensions: Extensions::new(),
        };
        for (key, val) in raw {
            if key.starts_with(EXTENSION_PREFIX) {
                fields.extensions.insert(key.to_owned(), to_json(val));
            } else if known.contains(&key) {
                fields.entries.push((key, val));
            } else {
                let err = match suggest(key, known) {
                    Some(s) => ShapeError::UnknownKeySuggest {
                        suggestion: s.to_owned(),
                    },
                    None => ShapeError::UnknownKey {
                        expected: known.join(", "),
                    },
                };
                self.error(join(path, key), err);
            }
        }
        Some(fields)
    }

    /// A required value: reports a missing key at the mapping's path.
    pub fn required<'v>(&mut self, f: &Fields<'v>, key: &str) -> Option<&'v Value> {
        let v = f.get(key);
        if v.is_none() {
            self.error(&f.path, ShapeError::Missing(key.to_owned()));
        }
        v
    }

    /// A string of at most [`MAX_TEXT_CHARS`] characters.
    pub fn string(&mut self, v: &Value, path: &str) -> Option<String> {
        self.string_max(v, path, MAX_TEXT_CHARS)
    }

    /// A string of at most `max` characters.
    pub fn string_max(&mut self, v: &Value, path: &str, max: usize) -> Option<String> {
        match v {
            Value::String(s) => {
                if let Some(chars) = too_long(s, max) {
                    self.error(path, ShapeError::TooLong { chars, max });
                    return None;
                }
                Some(s.clone())
            }
            other => {
                self.wrong_type(path, "a string", other);
                None
            }
        }
    }

    /// A string that may not be blank, of at most [`MAX_TEXT_CHARS`]
    /// characters.
    pub fn text(&mut self, v: &Value, path: &str) -> Option<String> {
        self.text_max(v, path, MAX_TEXT_CHARS)
    }

    /// A string that may not be blank, of at most `max` characters.
    pub fn text_max(&mut self, v: &Value, path: &str, max: usize) -> Option<String> {
        let s = self.string_max(v, path, max)?;
        if s.trim().is_empty() {
            self.error(path, ShapeError::Empty);
            return None;
        }
        Some(s)
    }

    /// A scalar read as text: `version: 1` and `version: "1"` both give "1".
    pub fn scalar(&mut self, v: &Value, path: &str) -> Option<String> {
        match scalar_text(v) {
            Some(s) => {
                if let Some(chars) = too_long(&s, MAX_TEXT_CHARS) {
                    self.error(
                        path,
                        ShapeError::TooLong {
                            chars,
                            max: MAX_TEXT_CHARS,
                        },
                    );
                    return None;
                }
                Some(s)
            }
            None => {
                self.wrong_type(path, "a string", v);
                None
            }
        }
    }

    pub fn opt_text(&mut self, f: &Fields<'_>, key: &str) -> Option<String> {
        f.get(key).and_then(|v| self.text(v, &f.at(key)))
    }

    pub fn req_text(&mut self, f: &Fields<'_>, key: &str) -> Option<String> {
        self.required(f, key).and_then(|v| self.text(v, &f.at(key)))
    }

    /// An optional text of at most `max` characters.
    pub fn opt_text_max(&mut self, f: &Fields<'_>, key: &str, max: usize) -> Option<String> {
        f.get(key).and_then(|v| self.text_max(v, &f.at(key), max))
    }

    /// A required text of at most `max` characters.
    pub fn req_text_max(&mut self, f: &Fields<'_>, key: &str, max: usize) -> Option<String> {
        self.required(f, key)
            .and_then(|v| self.text_max(v, &f.at(key), max))
    }

    pub fn bool(&mut self, v: &Value, path: &str) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            other => {
                self.wrong_type(path, "true or false", other);
                None
            }
        }
    }

    pub fn u64(&mut self, v: &Value, path: &str) -> Option<u64> {
        match v {
            Value::Number(n) if n.as_u64().is_some() => n.as_u64(),
            Value::Number(n) if n.as_i64().is_some() => {
                self.error(
                    path,
                    ShapeError::OutOfRange {
                        value: n.to_string(),
                        rule: "must not be negative",
                    },
                );
                None
            }
            other => {
                self.wrong_type(path, "a whole number", other);
                None
            }
        }
    }

    pub fn opt_u64(&mut self, f: &Fields<'_>, key: &str) -> Option<u64> {
        f.get(key).and_then(|v| self.u64(v, &f.at(key)))
    }

    /// A whole number of at least 1.
    pub fn opt_positive(&mut self, f: &Fields<'_>, key: &str) -> Option<u64> {
        let n = self.opt_u64(f, key)?;
        if n == 0 {
            self.error(
                f.at(key),
                ShapeError::OutOfRange {
                    value: "0".into(),
                    rule: "must be at least 1",
                },
            );
            return None;
        }
        Some(n)
    }

    /// A finite number (integers accepted).
    pub fn f64(&mut self, v: &Value, path: &str) -> Option<f64> {
        match v {
            Value::Number(n) => match n.as_f64() {
                Some(x) if x.is_finite() => Some(x),
                _ => {
                    self.error(
                        path,
                        ShapeError::OutOfRange {
                            value: n.to_string(),
                            rule: "must be a finite number",
                        },
                    );
                    None
                }
            },
            other => {
                self.wrong_type(path, "a number", other);
                None
            }
        }
    }

    /// A list; null reads as empty.
    pub fn seq<'v>(&mut self, v: &'v Value, path: &str) -> &'v [Value] {
        match v {
            Value::Null => &[],
            Value::Sequence(s) => s,
            other => {
                self.wrong_type(path, "a list", other);
                &[]
            }
        }
    }

    /// A list of non-blank strings, each reported at `path[i]`.
    pub fn string_list(&mut self, v: &Value, path: &str) -> Vec<String> {
        self.seq(v, path)
            .iter()
            .enumerate()
            .filter_map(|(i, item)| self.text(item, &index(path, i)))
            .collect()
    }

    pub fn opt_string_list(&mut self, f: &Fields<'_>, key: &str) -> Vec<String> {
        f.get(key)
            .map(|v| self.string_list(v, &f.at(key)))
            .unwrap_or_default()
    }

    /// One of a closed set of words, parsed by `parse`.
    pub fn one_of<T>(
        &mut self,
        v: &Value,
        path: &str,
        expected: &[&str],
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<T> {
        let s = self.string(v, path)?;
        let parsed = parse(&s);
        if parsed.is_none() {
            self.error(
                path,
                ShapeError::NotOneOf {
                    value: s,
                    expected: expected.join(" | "),
                },
            );
        }
        parsed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(s: &str) -> Value {
        yaml_serde::from_str(s).unwrap()
    }

    #[test]
    fn unknown_keys_get_a_suggestion_and_extensions_are_kept() {
        let v = yaml("name: a\ndesciption: b\nzzz: 1\nx-team: core\n");
        let mut r = Reader::new();
        let f = r.fields(&v, "", &["name", "description"]).unwrap();
        assert_eq!(f.get("name").and_then(Value::as_str), Some("a"));
        assert_eq!(f.extensions["x-team"], serde_json::json!("core"));
        let msgs: Vec<String> = r.finish().iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "desciption: unknown key; did you mean \"description\"?",
                "zzz: unknown key; expected one of: name, description",
            ]
        );
    }

    #[test]
    fn texts_and_keys_are_bounded() {
        let at = "é".repeat(MAX_LABEL_CHARS);
        let over = "é".repeat(MAX_LABEL_CHARS + 1);
        let long_key = "k".repeat(MAX_KEY_CHARS + 1);
        let v = yaml(&format!(
            "a: {at}\nb: {over}\nc: {}\nd:\n  {}: 1\n  {long_key}: 2\n",
            "x".repeat(MAX_TEXT_CHARS + 1),
            "k".repeat(MAX_KEY_CHARS)
        ));
        let mut r = Reader::new();
        let f = r.fields(&v, "", &["a", "b", "c", "d"]).unwrap();
        assert_eq!(r.opt_text_max(&f, "a", MAX_LABEL_CHARS), Some(at));
        assert_eq!(r.opt_text_max(&f, "b", MAX_LABEL_CHARS), None);
        assert_eq!(r.opt_text(&f, "c"), None);
        let d = f.get("d").unwrap();
        assert_eq!(r.dict(d, "d").len(), 1);
        let msgs: Vec<String> = r.finish().iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                format!(
                    "b: is {} characters long; at most {MAX_LABEL_CHARS} are allowed",
                    MAX_LABEL_CHARS + 1
                ),
                format!(
                    "c: is {} characters long; at most {MAX_TEXT_CHARS} are allowed",
                    MAX_TEXT_CHARS + 1
                ),
                format!(
                    "d: a key is {} characters long; at most {MAX_KEY_CHARS} are allowed",
                    MAX_KEY_CHARS + 1
                ),
            ]
        );
    }

    #[test]
    fn wrong_types_and_ranges_are_reported_with_their_path() {
        let v = yaml("a: [1]\nb: -3\nc: .nan\n");
        let mut r = Reader::new();
        let f = r.fields(&v, "root", &["a", "b", "c"]).unwrap();
        assert_eq!(r.opt_text(&f, "a"), None);
        assert_eq!(r.opt_u64(&f, "b"), None);
        assert_eq!(f.get("c").and_then(|c| r.f64(c, "root.c")), None);
        assert_eq!(r.req_text(&f, "d"), None);
        let msgs: Vec<String> = r.finish().iter().map(ToString::to_string).collect();
        assert_eq!(
            msgs,
            [
                "root.a: expected a string, found a list",
                "root.b: -3 is out of range: must not be negative",
                "root.c: .nan is out of range: must be a finite number",
                "root: missing required key \"d\"",
            ]
        );
    }
}
