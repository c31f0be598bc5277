//! JSON Schemas from untrusted documents (a tool's input and output, a UI
//! component's props, a protocol's messages): checked against their
//! metaschema and compiled, which also catches references that do not
//! resolve and regular expressions that do not parse.
//!
//! Compiling a schema compiles every `pattern` and `patternProperties`
//! regex in it, and a compiled regex costs memory far beyond its text. So
//! the regexes are bounded before anything is compiled: at most
//! [`MAX_REGEXES`] per document ([`RegexBudget`]) and
//! [`MAX_PATTERN_BYTES`] each; each compiles to at most
//! [`REGEX_SIZE_LIMIT`] (and matches with a lazy DFA of at most
//! [`REGEX_DFA_SIZE_LIMIT`]); and the compilations of a process share one
//! budget: at most [`MAX_CONCURRENT_COMPILES`] run at once, the rest wait
//! their turn. What one process holds for schemas at any moment is then
//! bounded whatever arrives at once.

use std::sync::{Condvar, Mutex, PoisonError};

use jsonschema::{PatternOptions, paths::LocationSegment};
use serde_json::Value as Json;

use crate::{
    diagnostics::{Diagnostics, index, join},
    keys::kind_of,
    rules::Rule,
};

/// Most regexes (`pattern` values and `patternProperties` keys) one
/// document's schemas may hold together.
pub const MAX_REGEXES: usize = 100;
/// Longest regex, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1_000;
/// Most memory one compiled regex may take (`regex`'s `size_limit`).
pub const REGEX_SIZE_LIMIT: usize = 256 * 1024;
/// Most memory one regex's lazy DFA may take while matching
/// (`regex`'s `dfa_size_limit`).
pub const REGEX_DFA_SIZE_LIMIT: usize = 256 * 1024;
/// Schema compilations one process runs at once.
pub const MAX_CONCURRENT_COMPILES: usize = 2;

/// Regexes one document may still add; each document starts with
/// [`MAX_REGEXES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegexBudget {
    left: usize,
}

impl Default for RegexBudget {
    fn default() -> Self {
        Self { left: MAX_REGEXES }
    }
}

/// Checks the schema at `path` (a JSON object) against its metaschema (the
/// draft its `$schema` names, 2020-12 when absent) and compiles it, each
/// problem to `diags` at its path. Its regexes are counted against
/// `budget` and bounded first, so a schema over a bound is never compiled.
/// `true` when it is a usable schema.
pub fn check(json: &Json, path: &str, budget: &mut RegexBudget, diags: &mut Diagnostics) -> bool {
    if !check_regexes(json, path, budget, diags) {
        return false;
    }
    let meta = match jsonschema::meta::validator_for(json) {
        Ok(meta) => meta,
        Err(e) => {
            diags.push_rule(
                Rule::SchemaInvalid,
                join(path, "$schema"),
                format!("unsupported metaschema: {e}"),
            );
            return false;
        }
    };
    let before = diags.len();
    for error in meta.iter_errors(json) {
        // The problem sits at the offending keyword (`input_schema.type`).
        diags.push_rule(
            Rule::SchemaInvalid,
            dotted(path, error.instance_path().segments()),
            format!("not a valid JSON Schema: {error}"),
        );
    }
    if diags.len() > before {
        return false;
    }
    if let Err(e) = compile(json) {
        // The error's schema path names the keyword that failed (a
        // `pattern`, a `$ref`), so the problem is reported there.
        diags.push_rule(
            Rule::SchemaInvalid,
            dotted(path, e.schema_path().segments()),
            format!(
                "JSON Schema does not compile: {e} (a regex must parse and compile to at most {} KiB)",
                REGEX_SIZE_LIMIT / 1024
            ),
        );
        return false;
    }
    true
}

/// Counts the regexes of `json` against `budget` and checks each one's
/// length. `false` (with the problems in `diags`) when a bound is crossed.
pub fn check_regexes(
    json: &Json,
    path: &str,
    budget: &mut RegexBudget,
    diags: &mut Diagnostics,
) -> bool {
    let mut found = 0usize;
    let mut too_long = false;
    walk(json, path, &mut |at, pattern| {
        found += 1;
        if pattern.len() > MAX_PATTERN_BYTES {
            too_long = true;
            diags.push_with(|| {
                (
                    at.to_owned(),
                    format!(
                        "this regex is {} bytes long; at most {MAX_PATTERN_BYTES} are allowed",
                        pattern.len()
                    ),
                )
            });
        }
    });
    if found > budget.left {
        diags.push(
            path,
            format!(
                "holds {found} regexes (`pattern` and `patternProperties`), and the document may hold at most {MAX_REGEXES} in all its schemas ({} left)",
                budget.left
            ),
        );
        budget.left = 0;
        return false;
    }
    budget.left -= found;
    !too_long
}

/// Keys whose values are instance data, not schemas: a `pattern` inside
/// them is not a regex.
const DATA_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];

/// Calls `found(path, regex)` for every `pattern` string and every
/// `patternProperties` key under `json`.
fn walk(json: &Json, path: &str, found: &mut impl FnMut(&str, &str)) {
    match json {
        Json::Object(map) => {
            for (key, value) in map {
                if DATA_KEYWORDS.contains(&key.as_str()) {
                    continue;
                }
                let at = join(path, key);
                match (key.as_str(), value) {
                    ("pattern", Json::String(pattern)) => found(&at, pattern),
                    ("patternProperties", Json::Object(patterns)) => {
                        for (pattern, schema) in patterns {
                            found(&at, pattern);
                            walk(schema, &join(&at, pattern), found);
                        }
                    }
                    _ => walk(value, &at, found),
                }
            }
        }
        Json::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &index(path, i), found);
            }
        }
        _ => {}
    }
}

/// Compiles `json` with bounded regexes, in one of the process's
/// [`MAX_CONCURRENT_COMPILES`] turns.
fn compile(json: &Json) -> Result<(), jsonschema::ValidationError<'static>> {
    validator(json).map(drop)
}

/// A validator for a schema that passed [`check`] (an agent's or a tool's
/// output schema, to hold events' outputs to), compiled with the same
/// bounded regexes, in one of the process's turns.
pub fn validator(
    json: &Json,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    let _turn = Turn::take();
    jsonschema::options()
        .with_pattern_options(
            PatternOptions::fancy_regex()
                .size_limit(REGEX_SIZE_LIMIT)
                .dfa_size_limit(REGEX_DFA_SIZE_LIMIT),
        )
        .build(json)
}

/// The process's compilations in flight. `core` does no IO, and a
/// compilation is CPU work its callers already run off async workers
/// (the registry validates on blocking threads), so waiting on a condvar
/// here is the plain way to share the budget.
static IN_FLIGHT: Mutex<usize> = Mutex::new(0);
static TURN_FREED: Condvar = Condvar::new();

/// One compilation's turn, given back when dropped.
struct Turn;

impl Turn {
    fn take() -> Self {
        let mut busy = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
        while *busy >= MAX_CONCURRENT_COMPILES {
            busy = TURN_FREED
                .wait(busy)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *busy += 1;
        Turn
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut busy = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
        *busy -= 1;
        TURN_FREED.notify_one();
    }
}

/// A base path plus a JSON Pointer's segments, in our dotted form.
pub fn dotted<'a>(base: &str, segments: impl Iterator<Item = LocationSegment<'a>>) -> String {
    segments.fold(base.to_owned(), |path, segment| match segment {
        LocationSegment::Property(key) => join(&path, &key),
        LocationSegment::Index(i) => index(&path, i),
    })
}

/// Checks a schema (`json_schema::check`: metaschema, regex bounds,
/// compilation), its regexes counted against the document's `regexes`. MCP
/// requires an input schema to describe an object.
pub(crate) fn schema_at(
    value: &yaml_serde::Value,
    path: &str,
    is_input: bool,
    regexes: &mut RegexBudget,
    diags: &mut Diagnostics,
) -> Option<Json> {
    let json = serde_json::to_value(value)
        .map_err(|e| diags.push(path, format!("cannot be represented as JSON: {e}")))
        .ok()?;
    let Json::Object(object) = &json else {
        diags.push(
            path,
            format!("expected a JSON Schema mapping, found {}", kind_of(value)),
        );
        return None;
    };
    if is_input && object.get("type").and_then(Json::as_str) != Some("object") {
        diags.push(
            join(path, "type"),
            "an MCP input schema must have `type: object`",
        );
    }
    check(&json, path, regexes, diags).then_some(json)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn with_patterns(n: usize) -> Json {
        let props: serde_json::Map<String, Json> = (0..n)
            .map(|i| (format!("^p{i}_[a-z]+$"), json!({"type": "string"})))
            .collect();
        json!({"type": "object", "patternProperties": props})
    }

    fn problems(d: &Diagnostics) -> Vec<String> {
        d.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_document_holds_at_most_the_budget_of_regexes() {
        let mut budget = RegexBudget::default();
        let mut d = Diagnostics::new();
        assert!(check(
            &with_patterns(MAX_REGEXES - 1),
            "input_schema",
            &mut budget,
            &mut d
        ));
        let one = json!({"type": "string", "pattern": "^[a-z]+\\d$"});
        assert!(check(&one, "output_schema", &mut budget, &mut d), "{d}");
        assert!(d.is_empty());
        // The budget is the document's: a third schema finds none left.
        assert!(!check(&one, "props", &mut budget, &mut d));
        assert_eq!(
            problems(&d),
            [
                "props: holds 1 regexes (`pattern` and `patternProperties`), and the document may hold at most 100 in all its schemas (0 left)"
            ]
        );

        let mut d = Diagnostics::new();
        let many = with_patterns(20_000);
        assert!(!check(
            &many,
            "input_schema",
            &mut RegexBudget::default(),
            &mut d
        ));
        assert!(
            problems(&d)[0].starts_with("input_schema: holds 20000 regexes"),
            "{d}"
        );
    }

    #[test]
    fn data_keywords_hold_no_regexes() {
        let schema = json!({
            "type": "object",
            "default": {"pattern": "not a regex"},
            "examples": [{"patternProperties": {"x": 1}}],
            "properties": {"pattern": {"type": "string", "pattern": "^a"}}
        });
        let mut budget = RegexBudget::default();
        let mut d = Diagnostics::new();
        assert!(check(&schema, "s", &mut budget, &mut d), "{d}");
        assert_eq!(budget.left, MAX_REGEXES - 1);
    }

    #[test]
    fn a_regex_is_bounded_in_length_and_compiled_size() {
        let at = "a".repeat(MAX_PATTERN_BYTES);
        let mut d = Diagnostics::new();
        let ok = json!({"type": "string", "pattern": at});
        assert!(check(&ok, "s", &mut RegexBudget::default(), &mut d), "{d}");

        let over = json!({"type": "object", "properties": {"q": {"type": "string", "pattern": format!("{at}b")}}});
        assert!(!check(
            &over,
            "input_schema",
            &mut RegexBudget::default(),
            &mut d
        ));
        assert_eq!(
            problems(&d),
            [
                "input_schema.properties.q.pattern: this regex is 1001 bytes long; at most 1000 are allowed"
            ]
        );

        // Short, but it compiles to far more than the size limit.
        let mut d = Diagnostics::new();
        let huge = json!({"type": "object", "properties": {"q": {"type": "string", "pattern": "(\\w{1,100}){1,50}x"}}});
        assert!(!check(
            &huge,
            "input_schema",
            &mut RegexBudget::default(),
            &mut d
        ));
        let shown = problems(&d);
        assert_eq!(shown.len(), 1);
        assert!(
            shown[0].starts_with("input_schema.properties.q.pattern: JSON Schema does not compile"),
            "{shown:?}"
        );
    }

    #[test]
    fn compilations_share_the_process_turns() {
        // Every turn taken is given back, across threads.
        let schema = with_patterns(50);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let mut d = Diagnostics::new();
                    assert!(
                        check(&schema, "s", &mut RegexBudget::default(), &mut d),
                        "{d}"
                    );
                });
            }
        });
        assert_eq!(*IN_FLIGHT.lock().unwrap(), 0);
    }
}
