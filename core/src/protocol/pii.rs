//! PII detection in JSON payloads: which kinds of personal data a value
//! holds and where (`p.params.attendees[0]`).
//!
//! Detected: email addresses, phone numbers (international `+` form with 8–15
//! digits, and the North American `555-123-4567` / `(555) 123-4567` forms),
//! and US social security numbers (`123-45-6789`). Only string values are
//! scanned: a bare JSON number is a quantity, not a phone number. The patterns
//! refuse digits glued to letters or other digits, so UUIDs, dates, hashes
//! and base64 do not match.

use std::collections::{BTreeMap, BTreeSet, HashSet};
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

/// Findings one scan records at most. Past it the scan stops: the report
/// is enough to refuse the message, and a hostile payload of a million
/// addresses costs no more than one of a thousand.
pub const MAX_FINDINGS: usize = 1000;

/// Everything a scan found, in document order, up to [`MAX_FINDINGS`].
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

    /// How many pieces of personal data were found (at most
    /// [`MAX_FINDINGS`]).
    pub fn count(&self) -> usize {
        self.findings.len()
    }

    /// Whether the scan stopped at [`MAX_FINDINGS`].
    pub fn is_truncated(&self) -> bool {
        self.findings.len() >= MAX_FINDINGS
    }

    /// The kinds found, each once, sorted.
    pub fn types(&self) -> BTreeSet<PiiType> {
        self.findings.iter().map(|f| f.pii_type).collect()
    }

    /// The fields holding PII, array indices dropped and each field once, in
    /// document order: `p.params.attendees`, as MoltSpeak's `detected_pii`
    /// shows them.
    pub fn fields(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        self.findings
            .iter()
            .map(|f| strip_indices(&f.path))
            .filter(|field| seen.insert(field.clone()))
            .collect()
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

/// The kinds of PII in one string, one entry per occurrence, in order (at
/// most [`MAX_FINDINGS`]).
pub fn scan_str(text: &str) -> Vec<PiiType> {
    scan_str_at_most(text, MAX_FINDINGS)
}

/// [`scan_str`], stopping after `most` findings. Linear in the text: each
/// pattern makes one pass, and a match is checked against the spans claimed
/// so far in a sorted map (non-overlapping, so the one claimed span that
/// starts last before the match's end is the only one it can overlap).
fn scan_str_at_most(text: &str, most: usize) -> Vec<PiiType> {
    // Start to (end, kind) of every claimed span.
    let mut claimed: BTreeMap<usize, (usize, PiiType)> = BTreeMap::new();
    'patterns: for (kind, regex) in &PATTERNS.by_priority {
        for caps in regex.captures_iter(text) {
            if claimed.len() >= most {
                break 'patterns;
            }
            let Some(m) = caps.get(1) else { continue };
            if *kind == PiiType::Phone && !plausible_phone(m.as_str()) {
                continue;
            }
            // An earlier, more specific pattern already claimed this text.
            let overlaps = claimed
                .range(..m.end())
                .next_back()
                .is_some_and(|(_, &(end, _))| end > m.start());
            if !overlaps {
                claimed.insert(m.start(), (m.end(), *kind));
            }
        }
    }
    claimed.into_values().map(|(_, kind)| kind).collect()
}

fn plausible_phone(candidate: &str) -> bool {
    let digits = candidate.chars().filter(char::is_ascii_digit).count();
    (10..=15).contains(&digits) || (candidate.starts_with('+') && (8..=15).contains(&digits))
}

/// Scans every string in `value`, naming paths from `root` (`"p"`), and
/// skipping the subtrees whose paths are in `exempt`. Stops after
/// [`MAX_FINDINGS`].
pub fn scan_value(value: &Value, root: &str, exempt: &[&str]) -> PiiReport {
    let mut report = PiiReport::default();
    walk(value, root, exempt, &mut report);
    report
}

fn walk(value: &Value, path: &str, exempt: &[&str], report: &mut PiiReport) {
    let room = MAX_FINDINGS - report.findings.len();
    if room == 0 || exempt.contains(&path) {
        return;
    }
    match value {
        Value::String(s) => {
            for pii_type in scan_str_at_most(s, room) {
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

    #[test]
    fn overlapping_patterns_keep_the_first_claim() {
        // The SSN pattern would match inside the phone number; the phone,
        // claimed first, wins, and a later separate SSN still counts.
        assert_eq!(
            scan_str("+1 415-555-0123 and 078-05-1120"),
            [PiiType::Phone, PiiType::Ssn]
        );
    }

    #[test]
    fn hostile_payloads_are_capped_and_linear() {
        // 144,000 addresses (1 MB): the findings stop at the cap.
        let text = "a@b.cc ".repeat(144_000);
        assert_eq!(scan_str(&text).len(), MAX_FINDINGS);
        let many = Value::Array(vec![Value::String("a@b.cc".into()); 5_000]);
        let report = scan_value(&many, "p", &[]);
        assert_eq!(report.count(), MAX_FINDINGS);
        assert!(report.is_truncated());
        assert_eq!(report.fields(), ["p"]);
    }
}
