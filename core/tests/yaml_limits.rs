//! Hostile YAML is refused early, with the error that names the limit it
//! crossed.

use agentlang_core::yaml::{YamlError, YamlLimits, from_slice, parse_value};

fn billion_laughs() -> String {
    let mut doc = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for pair in names.windows(2) {
        let (prev, next) = (pair[0], pair[1]);
        let refs = vec![format!("*{prev}"); 9].join(",");
        doc.push_str(&format!("{next}: &{next} [{refs}]\n"));
    }
    doc
}

#[test]
fn billion_laughs_is_refused_for_expansion() {
    let doc = billion_laughs();
    // 72 aliases: under the alias-count limit, so the expansion bound is
    // what refuses it.
    let err = parse_value(doc.as_bytes(), &YamlLimits::default()).unwrap_err();
    assert_eq!(
        err,
        YamlError::TooManyNodes {
            limit: 200_000,
            line: 6
        }
    );
}

#[test]
fn alias_count_is_bounded() {
    let doc = billion_laughs();
    let limits = YamlLimits {
        max_aliases: 10,
        ..YamlLimits::default()
    };
    let err = parse_value(doc.as_bytes(), &limits).unwrap_err();
    assert_eq!(err, YamlError::TooManyAliases { limit: 10 });
}

#[test]
fn few_aliases_are_fine() {
    let doc = "base: &base {a: 1, b: [x, y]}\ncopy: *base\n";
    let value = parse_value(doc.as_bytes(), &YamlLimits::default()).unwrap();
    assert_eq!(value["copy"]["b"][1].as_str(), Some("y"));
}

#[test]
fn block_nesting_20000_deep_is_refused() {
    // Compact block sequences: `- - - x` nests one level per `- `, so 20,000
    // levels fit in 40 KB (indented mappings would need 200 MB).
    let doc = format!("{}x\n", "- ".repeat(20_000));
    let err = parse_value(doc.as_bytes(), &YamlLimits::default()).unwrap_err();
    assert_eq!(err, YamlError::TooDeep { limit: 64, line: 1 });
    // Indented block mappings, one level per line.
    let doc: String = (0..200)
        .map(|depth| format!("{}k:\n", " ".repeat(depth)))
        .collect();
    let err = parse_value(doc.as_bytes(), &YamlLimits::default()).unwrap_err();
    assert_eq!(
        err,
        YamlError::TooDeep {
            limit: 64,
            line: 65
        }
    );
}

#[test]
fn flow_nesting_20000_deep_is_refused() {
    let doc = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
    let err = parse_value(doc.as_bytes(), &YamlLimits::default()).unwrap_err();
    assert_eq!(err, YamlError::TooDeep { limit: 64, line: 1 });
    let doc = format!("{}{}", "{a: ".repeat(20_000), "}".repeat(20_000));
    let err = parse_value(doc.as_bytes(), &YamlLimits::default()).unwrap_err();
    assert_eq!(err, YamlError::TooDeep { limit: 64, line: 1 });
}

#[test]
fn depth_limit_is_configurable_and_exact() {
    let doc = b"a: {b: [c]}\n"; // three collections deep
    let at = |max_depth| YamlLimits {
        max_depth,
        ..YamlLimits::default()
    };
    assert!(parse_value(doc, &at(3)).is_ok());
    assert_eq!(
        parse_value(doc, &at(2)).unwrap_err(),
        YamlError::TooDeep { limit: 2, line: 1 }
    );
}

#[test]
fn aliases_count_towards_depth_where_used() {
    // The anchor is 2 deep; used 2 levels down, it makes 4.
    let doc = b"a: &x [[1]]\nb: {c: *x}\n";
    let limits = YamlLimits {
        max_depth: 3,
        ..YamlLimits::default()
    };
    assert_eq!(
        parse_value(doc, &limits).unwrap_err(),
        YamlError::TooDeep { limit: 3, line: 2 }
    );
    let limits = YamlLimits {
        max_depth: 4,
        ..YamlLimits::default()
    };
    assert!(parse_value(doc, &limits).is_ok());
}

#[test]
fn invalid_utf8_names_the_byte_offset() {
    let doc = b"name: caf\xc3\x28\n";
    assert_eq!(
        parse_value(doc, &YamlLimits::default()).unwrap_err(),
        YamlError::NotUtf8(9)
    );
    assert_eq!(
        YamlError::NotUtf8(9).to_string(),
        "document is not valid UTF-8 (at byte 9)"
    );
}

#[test]
fn oversize_input_is_refused_before_parsing() {
    // Not YAML at all: a parse would fail differently, so the error proves
    // the size check ran first.
    let doc = vec![0xffu8; 2048];
    let limits = YamlLimits {
        max_bytes: 1024,
        ..YamlLimits::default()
    };
    assert_eq!(
        parse_value(&doc, &limits).unwrap_err(),
        YamlError::TooLarge {
            size: 2048,
            limit: 1024
        }
    );
}

#[test]
fn multiple_documents_are_refused() {
    let doc = b"a: 1\n---\nb: 2\n";
    assert_eq!(
        parse_value(doc, &YamlLimits::default()).unwrap_err(),
        YamlError::MultipleDocuments { line: 2 }
    );
}

#[test]
fn syntax_errors_carry_a_line() {
    let doc = b"a: [1, 2\nb: 3\n";
    let YamlError::Syntax(message) = parse_value(doc, &YamlLimits::default()).unwrap_err() else {
        panic!("expected a syntax error");
    };
    assert!(message.contains("line"), "{message}");
}

#[test]
fn typed_deserialization_goes_through_the_same_checks() {
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Doc {
        a: Vec<u32>,
    }
    let doc: Doc = from_slice(b"a: [1, 2]\n", &YamlLimits::default()).unwrap();
    assert_eq!(doc, Doc { a: vec![1, 2] });
    let limits = YamlLimits {
        max_depth: 1,
        ..YamlLimits::default()
    };
    assert_eq!(
        from_slice::<Doc>(b"a: [1, 2]\n", &limits).unwrap_err(),
        YamlError::TooDeep { limit: 1, line: 1 }
    );
}

#[test]
fn empty_document_is_null() {
    let value = parse_value(b"", &YamlLimits::default()).unwrap();
    assert!(value.is_null());
}

#[test]
fn ordinary_yaml_features_pass_the_scan() {
    // The pre-scan uses a different parser than yaml_serde: everyday
    // documents must get through it unchanged.
    let doc = br#"%YAML 1.1
---
name: research-assistant   # a comment
version: 1.0.0
description: |
  Deep research across academic papers.
  Synthesizes findings.
folded: >
  one
  two
plain: multi
  line plain
quoted: "tab\tand \u00e9"
single: 'it''s'
tagged: !!str 123
flow: { id: { type: integer, primary_key: true }, list: [a, "b", 'c'] }
? complex key
: complex value
base: &base { temperature: 0.7 }
merged:
  <<: *base
  max_tokens: 8192
empty:
nulls: ~
...
"#;
    let value = parse_value(doc, &YamlLimits::default()).unwrap();
    assert_eq!(value["name"].as_str(), Some("research-assistant"));
    assert_eq!(value["quoted"].as_str(), Some("tab\tand é"));
    assert_eq!(value["single"].as_str(), Some("it's"));
    assert_eq!(value["plain"].as_str(), Some("multi line plain"));
    assert_eq!(value["flow"]["list"][2].as_str(), Some("c"));
    assert_eq!(value["complex key"].as_str(), Some("complex value"));
    assert!(value["empty"].is_null());
}
