//! tool.yaml: the spec's web_search example and its dependency parse, and
//! every rule is reported with its path.

use std::collections::BTreeMap;

use agentlang_core::{
    PackageName,
    tool::{Capability, ToolError, ToolKind, ToolSpec, parse_tool},
};
use semver::VersionReq;

const WEB_SEARCH: &[u8] = include_bytes!("fixtures/tools/web_search.tool.yaml");
const WEB_FETCH: &[u8] = include_bytes!("fixtures/tools/web_fetch.tool.yaml");
const BROKEN_FIELDS: &[u8] = include_bytes!("fixtures/tools/broken_fields.tool.yaml");
const BROKEN_INPUT: &[u8] = include_bytes!("fixtures/tools/broken_input_type.tool.yaml");

fn messages(bytes: &[u8]) -> Vec<String> {
    parse_tool(bytes)
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn assert_reports(all: &[String], expected: &str) {
    assert!(
        all.iter().any(|m| m == expected),
        "missing {expected:?} in {all:#?}"
    );
}

fn with_tool(extra: &str) -> Vec<u8> {
    format!(
        "name: t\nversion: 1.0.0\ndescription: d\nkind: mcp\ninput_schema: {{type: object}}\n{extra}"
    )
    .into_bytes()
}

/// Each kind's binding is read with the shape agent.yaml gives the same
/// tool, at its path, and belongs to its kind only.
#[test]
fn bindings_are_read_per_kind_and_refused_on_another() {
    let spec = parse_tool(WEB_SEARCH).unwrap();
    let http = spec.http().expect("web_search binds its endpoint");
    assert_eq!(http.endpoint, "https://search.example/api/search");
    assert!(spec.bash().is_none() && spec.mcp().is_none());

    let bash = "name: t\nversion: 1.0.0\ndescription: d\nkind: bash\ninput_schema: {type: object}\n\
                bash:\n  command: ffmpeg -i {{input}}\n  dependencies:\n    - name: ffmpeg\n";
    let spec = parse_tool(bash.as_bytes()).unwrap();
    assert_eq!(spec.bash().unwrap().command, "ffmpeg -i {{input}}");

    let all = messages(&with_tool(
        "http:\n  endpoint: https://x.example\n  method: GET\n",
    ));
    assert_reports(
        &all,
        "http: only a tool of kind: http has an `http:` section",
    );
    let wrong = "name: t\nversion: 1.0.0\ndescription: d\nkind: http\ninput_schema: {type: object}\n\
                 http:\n  endpoint: https://x.example\n  method: FETCH\n  colour: red\n";
    let all = messages(wrong.as_bytes());
    assert!(
        all.iter().any(|m| m.starts_with("http.method: ")),
        "{all:#?}"
    );
    assert!(
        all.iter().any(|m| m.starts_with("http.colour: ")),
        "{all:#?}"
    );
    let all = messages(
        b"name: t\nversion: 1.0.0\ndescription: d\nkind: bash\ninput_schema: {type: object}\nbash: {}\n",
    );
    assert_reports(&all, "bash: missing required key \"command\"");
}

#[test]
fn web_search_parses() {
    let tool = parse_tool(WEB_SEARCH).unwrap();
    assert_eq!(tool.name().as_str(), "web_search");
    assert_eq!(tool.version().to_string(), "1.2.0");
    assert_eq!(tool.kind(), ToolKind::Http);
    assert_eq!(tool.permissions(), [Capability::Network]);
    assert_eq!(tool.readme().map(|p| p.as_str()), Some("README.md"));
    assert_eq!(tool.input_schema()["required"][0], "query");
    assert_eq!(
        tool.output_schema().unwrap()["properties"]["total_count"]["type"],
        "integer"
    );
    assert_eq!(tool.extensions()["x-maintainer"], "acme");
    let expected: BTreeMap<PackageName, VersionReq> = [(
        PackageName::new("web_fetch").unwrap(),
        VersionReq::parse("^1.0.0").unwrap(),
    )]
    .into();
    assert_eq!(tool.dependency_requirements(), expected);
}

#[test]
fn web_fetch_parses_and_the_dependency_resolves_to_it() {
    let search = parse_tool(WEB_SEARCH).unwrap();
    let fetch = parse_tool(WEB_FETCH).unwrap();
    assert_eq!(fetch.kind(), ToolKind::Builtin);
    assert!(fetch.output_schema().is_none());
    assert!(fetch.dependency_requirements().is_empty());
    let requirement = &search.dependency_requirements()[fetch.name()];
    assert!(requirement.matches(fetch.version().semver()));
}

#[test]
fn json_round_trip_keeps_the_spec_and_revalidates() {
    let tool = parse_tool(WEB_SEARCH).unwrap();
    let json = serde_json::to_value(&tool).unwrap();
    insta::assert_json_snapshot!(json);
    let back: ToolSpec = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back, tool);
    // Stored JSON goes through the same checks on the way back in.
    let mut bad = json;
    bad["permissions"] = serde_json::json!(["teleport"]);
    let err = serde_json::from_value::<ToolSpec>(bad).unwrap_err();
    assert!(
        err.to_string()
            .contains("permissions[0]: unknown capability"),
        "{err}"
    );
}

#[test]
fn broken_fields_report_every_problem() {
    insta::assert_debug_snapshot!(messages(BROKEN_FIELDS));
}

#[test]
fn broken_fields_rules_one_by_one() {
    let all = messages(BROKEN_FIELDS);
    for expected in [
        "dependecies: unknown key; did you mean `dependencies`?",
        "name: name must start with an ASCII letter, found '9'",
        "description: must not be empty",
        "kind: unknown tool kind \"grpc\"; expected builtin, mcp, http or bash",
        "readme: path \"../README.md\" climbs out of the package with '..'",
        "output_schema: expected a JSON Schema mapping, found a sequence",
        "dependencies.Web_Fetch: names the same tool as `web-fetch`",
        "dependencies.9bad: name must start with an ASCII letter, found '9'",
        "permissions[1]: unknown capability \"netwrok\"; did you mean `network`?",
        "permissions[2]: `network` is listed twice",
        "permissions[3]: expected a capability name, found a number",
    ] {
        assert_reports(&all, expected);
    }
    for prefix in [
        "version: \"1.2\" is not a valid SemVer 2.0 version",
        "input_schema.properties.query.type: not a valid JSON Schema",
        "input_schema.required: not a valid JSON Schema",
        "dependencies.web_crawl: \"not a req\" is not a version requirement",
        "dependencies.web_index: expected a version requirement string",
    ] {
        assert!(
            all.iter().any(|m| m.starts_with(prefix)),
            "missing {prefix:?} in {all:#?}"
        );
    }
    assert!(!all.iter().any(|m| m.contains("x-ok")));
}

#[test]
fn input_schema_must_describe_an_object() {
    let all = messages(BROKEN_INPUT);
    assert_eq!(
        all,
        [
            "input_schema.type: an MCP input schema must have `type: object`",
            "permissions[1]: unknown capability \"telepathy\"; expected one of network, websocket, p2p, storage, filesystem, keychain, microphone, camera, screen_capture, location, background, notifications, clipboard, shell, oauth, wallet, signing",
        ]
    );
}

#[test]
fn missing_required_keys() {
    assert_eq!(
        messages(b"x-draft: true\n"),
        [
            "name: missing required key",
            "version: missing required key",
            "description: missing required key",
            "kind: missing required key",
            "input_schema: missing required key",
        ]
    );
    assert_eq!(
        messages(b"- a\n"),
        ["tool.yaml must be a mapping, found a sequence"]
    );
}

#[test]
fn self_dependency_is_refused() {
    assert_eq!(
        messages(&with_tool("dependencies: {T: ^1.0.0}\n")),
        ["dependencies.T: a tool cannot depend on itself"]
    );
}

#[test]
fn bare_version_requirement_follows_cargo_rules() {
    let tool = parse_tool(&with_tool("dependencies: {other: \"1.2.0\"}\n")).unwrap();
    let req = &tool.dependency_requirements()[&PackageName::new("other").unwrap()];
    assert_eq!(req, &VersionReq::parse("^1.2.0").unwrap());
    assert!(req.matches(&semver::Version::new(1, 9, 0)));
    assert!(!req.matches(&semver::Version::new(2, 0, 0)));
}

#[test]
fn every_spec_capability_is_accepted() {
    let all = "[network, websocket, p2p, storage, filesystem, keychain, microphone, camera, screen_capture, location, background, notifications, clipboard, shell, oauth, wallet, signing]";
    let tool = parse_tool(&with_tool(&format!("permissions: {all}\n"))).unwrap();
    assert_eq!(tool.permissions(), Capability::ALL);
}

#[test]
fn schema_with_unknown_metaschema_is_refused() {
    let bytes = b"name: t\nversion: 1.0.0\ndescription: d\nkind: mcp\ninput_schema: {$schema: 'https://example.com/nope', type: object}\n";
    let all = messages(bytes);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert!(
        all[0].starts_with("input_schema.$schema: unsupported metaschema"),
        "{all:#?}"
    );
}

#[test]
fn schema_with_dangling_reference_does_not_compile() {
    let all = messages(&with_tool("output_schema: {$ref: '#/$defs/missing'}\n"));
    assert_eq!(all.len(), 1, "{all:#?}");
    assert!(
        all[0].starts_with("output_schema: JSON Schema does not compile"),
        "{all:#?}"
    );
}

#[test]
fn wrong_types_for_collections() {
    assert_eq!(
        messages(&with_tool(
            "dependencies: [a]\npermissions: network\nreadme: 3\n"
        )),
        [
            "dependencies: expected a mapping of tool name to version requirement, found a sequence",
            "permissions: expected a list of capability names, found a string",
            "readme: expected a file path, found a number",
        ]
    );
}

#[test]
fn kind_and_capability_parse() {
    assert_eq!("mcp".parse::<ToolKind>(), Ok(ToolKind::Mcp));
    assert_eq!(
        "rpc".parse::<ToolKind>(),
        Err(ToolError::UnknownKind("rpc".into()))
    );
    assert_eq!(
        "screen_capture".parse::<Capability>(),
        Ok(Capability::ScreenCapture)
    );
}

/// A tool whose input schema has `n` `patternProperties` regexes and whose
/// output schema has `m` `pattern`s.
fn with_regexes(n: usize, m: usize) -> Vec<u8> {
    let mut yaml = String::from(
        "name: t\nversion: 1.0.0\ndescription: d\nkind: mcp\ninput_schema:\n  type: object\n  patternProperties:\n",
    );
    for i in 0..n {
        yaml.push_str(&format!("    \"^k{i}_[a-z]+$\": {{type: string}}\n"));
    }
    if m > 0 {
        yaml.push_str("output_schema:\n  type: object\n  properties:\n");
        for i in 0..m {
            yaml.push_str(&format!(
                "    p{i}: {{type: string, pattern: \"^v{i}[0-9]+$\"}}\n"
            ));
        }
    }
    yaml.into_bytes()
}

#[test]
fn a_tool_holds_at_most_100_regexes_in_its_schemas() {
    use agentlang_core::json_schema::MAX_REGEXES;
    assert!(parse_tool(&with_regexes(MAX_REGEXES - 10, 10)).is_ok());
    let all = messages(&with_regexes(MAX_REGEXES - 10, 11));
    assert_eq!(
        all,
        [
            "output_schema: holds 11 regexes (`pattern` and `patternProperties`), and the document may hold at most 100 in all its schemas (10 left)"
        ]
    );
    // The review's 20,000: refused by counting, before any is compiled.
    let all = messages(&with_regexes(20_000, 0));
    assert_eq!(all.len(), 1, "{all:?}");
    assert!(
        all[0].starts_with("input_schema: holds 20000 regexes"),
        "{all:?}"
    );
}

#[test]
fn long_texts_in_tool_yaml_are_refused() {
    let description = "d".repeat(2_001);
    let yaml = format!(
        "name: t\nversion: 1.0.0+{}\ndescription: {description}\nkind: mcp\ninput_schema: {{type: object}}\ndependencies:\n  other: \">={}.0.0\"\n",
        "b".repeat(65),
        "1".repeat(300)
    );
    let all = messages(yaml.as_bytes());
    assert_reports(
        &all,
        "version: the version's build metadata is 65 bytes long; at most 64 are allowed",
    );
    assert_reports(
        &all,
        "description: is 2001 characters long; at most 2000 are allowed",
    );
    assert_reports(
        &all,
        "dependencies.other: the version requirement is 306 bytes long; at most 256 are allowed",
    );
    let at = format!(
        "name: t\nversion: 1.0.0+{}\ndescription: {}\nkind: mcp\ninput_schema: {{type: object}}\n",
        "b".repeat(64),
        "d".repeat(2_000)
    );
    assert!(parse_tool(at.as_bytes()).is_ok());
}
