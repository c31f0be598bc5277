//! PII detection in JSON payloads: which kinds of personal data a value
//! holds and where (`p.params.attendees[0]`).
//!
//! Detected: email addresses, phone numbers (international `+` form with 8–15
//! digits, and the North American `555-123-4567` / `(555) 123-4567` forms),
//! and US social security numbers (`123-45-6789`). Only string values are
//! scanned: a bare JSON number is a quantity, not a phone number. The patterns
//! refuse digits glued to letters or other digits, so UUIDs, dates, hashes
//! and base64 do not match.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

/// A kind of personal data, named as MoltSpeak's `pii_meta.types` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PiiType {
    Email,
    Phone,
    Ssn,
}

impl PiiType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Phone => "phone",
            Self::Ssn => "ssn",
        }
    }
}

impl fmt::Display for PiiType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One piece of personal data: its kind and the path of the string holding it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PiiFinding {
    #[serde(rename = "type")]
    pub pii_type: PiiType,
    /// Dotted path with `[i]` indices, from the root name given to the scan.
    pub path: String,
}

/// Everything a scan found, in document order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PiiReport {
    findings: Vec<PiiFinding>,
}

impl PiiReport {
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    pub fn findings(&self) -> &[PiiFinding] {
        &self.findings
    }

    /// How many pieces of personal data were found.
    pub fn count(&self) -> usize {
        self.findings.len()
    }

    /// The kinds found, each once, sorted.
    pub fn types(&self) -> BTreeSet<PiiType> {
        self.findings.iter().map(|f| f.pii_type).collect()
    }

    /// The fields holding PII, array indices dropped and each field once, in
    /// document order: `p.params.attendees`, as MoltSpeak's `detected_pii`
    /// shows them.
    pub fn fields(&self) -> Vec<String> {
        let mut fields: Vec<String> = Vec::new();
        for f in &self.findings {
            let field = strip_indices(&f.path);
            if !fields.contains(&field) {
                fields.push(field);
            }
        }
        fields
    }
}

impl Serialize for PiiReport {
    /// The `detected_pii` shape of MoltSpeak's E_CONSENT error.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Shape {
            types: Vec<&'static str>,
            count: usize,
            fields: Vec<String>,
        }
        Shape {
            types: self.types().into_iter().map(PiiType::as_str).collect(),
            count: self.count(),
            fields: self.fields(),
        }
        .serialize(s)
    }
}

fn strip_indices(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => in_index = true,
            ']' if in_index => in_index = false,
            _ if !in_index => out.push(c),
            _ => {}
        }
    }
    out
}

struct Patterns {
    /// Each pattern's first capture group is the PII; the surrounding
    /// context only keeps it from matching inside longer tokens.
    by_priority: [(PiiType, Regex); 4],
}

static PATTERNS: LazyLock<Patterns> = LazyLock::new(|| {
    let re = |s: &str| Regex::new(s).expect("PII patterns are valid regexes");
    Patterns {
        by_priority: [
            (
                PiiType::Email,
                re(
                    r"(?i)(?:^|[^a-z0-9._%+-])([a-z0-9._%+-]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\.[a-z]{2,})\b",
                ),
            ),
            (
                PiiType::Phone,
                re(r"(?:^|[^\w+])(\+[1-9][\d ().-]{5,20}\d)(?:$|[^\w])"),
            ),
            (
                PiiType::Phone,
                re(r"(?:^|[^\w.+-])((?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4})(?:$|[^\w.-])"),
            ),
            (
                PiiType::Ssn,
                re(r"(?:^|[^\w-])(\d{3}-\d{2}-\d{4})(?:$|[^\w-])"),
            ),
        ],
    }
});

/// The kinds of PII in one string, one entry per occurrence, in order.
pub fn scan_str(text: &str) -> Vec<PiiType> {
    let mut spans: Vec<(usize, usize, PiiType)> = Vec::new();
    for (kind, regex) in &PATTERNS.by_priority {
        for caps in regex.captures_iter(text) {
            let Some(m) = caps.get(1) else { continue };
            if *kind == PiiType::Phone && !plausible_phone(m.as_str()) {
                continue;
            }
            // An earlier, more specific pattern already claimed this text.
            let overlaps = spans.iter().any(|&(s, e, _)| m.start() < e && s < m.end());
            if !overlaps {
                spans.push((m.start(), m.end(), *kind));
            }
        }
    }
    spans.sort_by_key(|&(start, _, _)| start);
    spans.into_iter().map(|(_, _, kind)| kind).collect()
}

fn plausible_phone(candidate: &str) -> bool {
    let digits = candidate.chars().filter(char::is_ascii_digit).count();
    (10..=15).contains(&digits) || (candidate.starts_with('+') && (8..=15).contains(&digits))
}

/// Scans every string in `value`, naming paths from `root` (`"p"`), and
/// skipping the subtrees whose paths are in `exempt`.
pub fn scan_value(value: &Value, root: &str, exempt: &[&str]) -> PiiReport {
    let mut report = PiiReport::default();
    walk(value, root, exempt, &mut report);
    report
}

fn walk(value: &Value, path: &str, exempt: &[&str], report: &mut PiiReport) {
    if exempt.contains(&path) {
        return;
    }
    match value {
        Value::String(s) => {
            for pii_type in scan_str(s) {
                report.findings.push(PiiFinding {
                    pii_type,
                    path: path.to_owned(),
                });
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{i}]"), exempt, report);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                walk(item, &format!("{path}.{key}"), exempt, report);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_each_kind() {
        assert_eq!(
            scan_str("mail jane.doe+x@example.co.uk now"),
            [PiiType::Email]
        );
        assert_eq!(scan_str("call +44 20 7946 0958"), [PiiType::Phone]);
        assert_eq!(scan_str("call +14155550123."), [PiiType::Phone]);
        assert_eq!(
            scan_str("(415) 555-0123 or 415.555.0123"),
            [PiiType::Phone, PiiType::Phone]
        );
        assert_eq!(scan_str("ssn 123-45-6789"), [PiiType::Ssn]);
        assert_eq!(
            scan_str("a@b.io, +1 415 555 0123, 078-05-1120"),
            [PiiType::Email, PiiType::Phone, PiiType::Ssn]
        );
    }

    #[test]
    fn ignores_lookalikes() {
        for text in [
            "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
            "2024-10-01",
            "10:00-12:00",
            "count 1000.0 1000.0\nmean 50.2 75.8",
            "base64:H4sIAAAAAAAAA...",
            "sha256:abc123...",
            "research-2024-001",
            "1703280000000",
            "email",
            "user at example dot com",
            "version 1.2.3-45.6789",
        ] {
            assert_eq!(scan_str(text), [], "{text}");
        }
    }

    #[test]
    fn reports_paths_types_count_and_fields() {
        let p = json!({"params": {"attendees": ["jane@example.com", "bob@example.com"], "n": 4155550123_u64},
                       "note": "ring 415-555-0123", "human": "user:john@example.com"});
        let report = scan_value(&p, "p", &["p.human"]);
        assert_eq!(
            report.findings(),
            [
                PiiFinding {
                    pii_type: PiiType::Email,
                    path: "p.params.attendees[0]".into()
                },
                PiiFinding {
                    pii_type: PiiType::Email,
                    path: "p.params.attendees[1]".into()
                },
                PiiFinding {
                    pii_type: PiiType::Phone,
                    path: "p.note".into()
                },
            ]
        );
        assert_eq!(report.fields(), ["p.params.attendees", "p.note"]);
        assert_eq!(
            serde_json::to_value(&report).unwrap(),
            json!({"types": ["email", "phone"], "count": 3, "fields": ["p.params.attendees", "p.note"]})
        );
        assert_eq!(scan_value(&p, "p", &[]).count(), 4);
    }
}
