//! PromptLang: the spec's example compiles to markdown and XML, and every
//! rule is reported with its path.

use agentlang_core::prompt::{Format, PromptError, Role, parse_prompt};

const RESEARCH: &[u8] = include_bytes!("fixtures/prompts/research.prompt.yaml");
const BROKEN: &[u8] = include_bytes!("fixtures/prompts/broken.prompt.yaml");

fn messages(bytes: &[u8]) -> Vec<String> {
    parse_prompt(bytes)
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn research_example_parses() {
    let prompt = parse_prompt(RESEARCH).unwrap();
    assert_eq!(prompt.role(), Role::User);
    let names: Vec<&str> = prompt.sections().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["mindset", "who_you_are", "your_tools", "workflow"]);
    // The `|` block's final newline is not part of the content.
    assert!(prompt.sections()[0].content.ends_with("something else."));
}

#[test]
fn research_compiles_to_markdown() {
    let prompt = parse_prompt(RESEARCH).unwrap();
    insta::assert_snapshot!(prompt.compile(Format::Markdown));
}

#[test]
fn research_compiles_to_xml() {
    let prompt = parse_prompt(RESEARCH).unwrap();
    insta::assert_snapshot!(prompt.compile(Format::Xml));
}

#[test]
fn block_styles_compile_identically() {
    let clip = b"version: 2\nrole: system\nsections:\n  - name: a\n    content: |\n      hi\n";
    let keep = b"version: 2\nrole: system\nsections:\n  - name: a\n    content: |+\n      hi\n\n\n";
    let strip = b"version: 2\nrole: system\nsections:\n  - name: a\n    content: hi\n";
    let outputs: Vec<String> = [&clip[..], &keep[..], &strip[..]]
        .iter()
        .map(|b| parse_prompt(b).unwrap().compile(Format::Xml))
        .collect();
    assert_eq!(outputs, ["<a>\nhi\n</a>\n"; 3]);
    assert_eq!(
        parse_prompt(strip).unwrap().compile(Format::Markdown),
        "## a\nhi\n"
    );
}

#[test]
fn every_problem_is_reported_with_its_path() {
    insta::assert_debug_snapshot!(messages(BROKEN));
}

#[test]
fn broken_prompt_rules_one_by_one() {
    let all = messages(BROKEN);
    for expected in [
        "version: must be the number 2, found 1",
        "role: unknown role \"narrator\"; expected system, user or assistant",
        "sectons: unknown key; did you mean `sections`?",
        "sections[1].name: section name \"2fast\" must start with a letter or `_`",
        "sections[1].content: must not be empty",
        "sections[2].name: duplicate section name \"mindset\" (first used at sections[0].name)",
        "sections[3].name: section name \"xmlish\" must not start with `xml` (reserved in XML)",
        "sections[4].contnt: unknown key; did you mean `content`?",
        "sections[4].content: missing required key",
        "sections[5]: expected a mapping with `name` and `content`, found a string",
    ] {
        assert!(
            all.iter().any(|m| m == expected),
            "missing {expected:?} in {all:#?}"
        );
    }
    // `x-` keys are extensions, not errors.
    assert!(!all.iter().any(|m| m.contains("x-owner")));
    assert_eq!(all.len(), 10, "{all:#?}");
}

#[test]
fn missing_keys_and_wrong_types() {
    assert_eq!(
        messages(b"x-only: true\n"),
        [
            "version: missing required key",
            "role: missing required key",
            "sections: missing required key"
        ]
    );
    assert_eq!(
        messages(b"version: \"2\"\nrole: [user]\nsections: {a: b}\n"),
        [
            "version: must be the number 2, found the string \"2\"",
            "role: expected a string, found a sequence",
            "sections: expected a sequence, found a mapping"
        ]
    );
    assert_eq!(
        messages(b"version: 2\nrole: user\nsections: []\n"),
        ["sections: must list at least one section"]
    );
    assert_eq!(
        messages(b"version: 2\nrole: user\nsections:\n  - name: a\n    content: 5\n"),
        ["sections[0].content: expected a string, found a number"]
    );
}

#[test]
fn closing_tag_inside_content_is_refused() {
    assert_eq!(
        messages(b"version: 2\nrole: user\nsections:\n  - name: a\n    content: x </a> y\n"),
        ["sections[0].content: contains `</a>`, which would end the section early in XML output"]
    );
}

#[test]
fn not_a_mapping_or_not_yaml() {
    assert_eq!(
        messages(b"- a\n"),
        ["prompt.yaml must be a mapping, found a sequence"]
    );
    assert_eq!(
        messages(b"a: \xff\n"),
        ["document is not valid UTF-8 (at byte 3)"]
    );
}

#[test]
fn role_parses() {
    assert_eq!("assistant".parse::<Role>(), Ok(Role::Assistant));
    assert_eq!(
        "bot".parse::<Role>(),
        Err(PromptError::UnknownRole("bot".into()))
    );
}

#[test]
fn section_names_are_bounded_and_duplicates_found_in_one_pass() {
    let name = |n: usize| format!("s{}", "x".repeat(n - 1));
    let doc = format!(
        "version: 2\nrole: system\nsections:\n  - name: {}\n    content: a\n  - name: {}\n    content: b\n",
        name(64),
        name(65)
    );
    assert_eq!(
        messages(doc.as_bytes()),
        ["sections[1].name: section name is 65 bytes long; at most 64 are allowed"]
    );
    // Many sections, each named twice: every duplicate reported (up to the
    // cap of a problem list), with where the name was first used.
    let mut doc = String::from("version: 2\nrole: system\nsections:\n");
    for i in 0..20_000 {
        doc.push_str(&format!("  - name: s{}\n    content: c\n", i % 10_000));
    }
    let err = parse_prompt(doc.as_bytes()).unwrap_err();
    assert_eq!(err.len(), 10_000);
    assert_eq!(
        err.iter().next().unwrap().to_string(),
        "sections[10000].name: duplicate section name \"s0\" (first used at sections[0].name)"
    );
}
