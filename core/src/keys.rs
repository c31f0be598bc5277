//! Walking a YAML mapping whose keys are a closed set plus `x-` extensions:
//! every unknown key is reported, with the nearest known key as a hint.

use yaml_serde::{Mapping, Value};

use crate::diagnostics::{Diagnostics, join};

/// Prefix of extension keys that every format accepts and ignores.
pub const EXTENSION_PREFIX: &str = "x-";

/// Reports every key of `map` that is not in `known`, not an `x-` key, or
/// not a string. `path` is the mapping's own path.
pub fn check_keys(map: &Mapping, known: &[&str], path: &str, diags: &mut Diagnostics) {
    for key in map.keys() {
        match key.as_str() {
            Some(k) if known.contains(&k) || k.starts_with(EXTENSION_PREFIX) => {}
            Some(k) => diags.push(join(path, k), unknown_key_message(k, known)),
            None => diags.push(
                path,
                format!("keys must be strings, found {}", kind_of(key)),
            ),
        }
    }
}

/// Similarity above which an unknown word is assumed to be a typo of a known
/// one. Jaro-Winkler favours shared prefixes, which is how keys get mistyped.
const SUGGEST_THRESHOLD: f64 = 0.8;

/// The known word closest to `word`, if it is close enough to be a typo. On
/// a tie the later word in `known` wins. Every "did you mean" (keys,
/// capability names) goes through here so they agree on what is close.
pub fn suggest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (*k, strsim::jaro_winkler(word, k)))
        .filter(|(_, score)| *score >= SUGGEST_THRESHOLD)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k)
}

/// "unknown key; did you mean `sections`?" when a known key is close enough
/// to be a typo, else the list of known keys.
pub fn unknown_key_message(key: &str, known: &[&str]) -> String {
    match suggest(key, known) {
        Some(k) => format!("unknown key; did you mean `{k}`?"),
        None => format!(
            "unknown key; expected one of {} (or an `x-` extension key)",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The YAML type of a value, for messages like "expected a string, found a
/// sequence".
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a sequence",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typo_gets_a_suggestion() {
        assert_eq!(
            unknown_key_message("sectons", &["version", "role", "sections"]),
            "unknown key; did you mean `sections`?"
        );
    }

    #[test]
    fn suggest_picks_the_closest_word_above_the_threshold() {
        let known = ["network", "websocket", "screen_capture"];
        assert_eq!(suggest("netwrok", &known), Some("network"));
        assert_eq!(suggest("screen_captur", &known), Some("screen_capture"));
        assert_eq!(suggest("telepathy", &known), None);
        assert_eq!(suggest("network", &[]), None);
    }

    #[test]
    fn unrelated_key_lists_the_known_ones() {
        assert_eq!(
            unknown_key_message("zzz", &["role", "version"]),
            "unknown key; expected one of `role`, `version` (or an `x-` extension key)"
        );
    }

    #[test]
    fn extension_and_non_string_keys() {
        let map: Mapping = yaml_serde::from_str("x-note: 1\nrole: a\nrol: b\n7: c\n").unwrap();
        let mut diags = Diagnostics::new();
        check_keys(&map, &["role"], "top", &mut diags);
        let rendered: Vec<String> = diags.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            [
                "top.rol: unknown key; did you mean `role`?",
                "top: keys must be strings, found a number",
            ]
        );
    }
}
