//! The MCP Registry's `server.json` as this registry speaks it: the `mcp:`
//! section of a `kind: mcp` tool.yaml (its `packages` and `remotes`,
//! written exactly as server.json writes them, and checked against the
//! MCP schema's own definitions), and the server.json a published version
//! is served as on `/v0.1/servers` ([`server_detail`]).
//!
//! The schema is [`SERVER_SCHEMA`], vendored unedited from the MCP
//! registry's repository (`modelcontextprotocol/registry`,
//! `docs/reference/server-json/draft/server.schema.json` at commit
//! `145c2ec7c424d503a553a50c0efac6c48db407db`: the schema generated from
//! the `2025-12-01` API document at that commit, published later as the
//! `2025-12-11` server.json schema plus URL template variables). The same
//! commit's `docs/reference/api/openapi.yaml` is vendored as
//! `server/tests/api/mcp/openapi.yaml`.

use std::sync::OnceLock;

use jsonschema::{ValidationError, Validator, error::ValidationErrorKind};
use serde::Serialize;
use serde_json::{Map, Value as Json, json};
use yaml_serde::Value;

use crate::{
    diagnostics::{Diagnostics, index, join},
    json_schema::dotted,
    keys::{check_keys, kind_of, suggest},
    names::MAX_NAME_LEN,
};

/// The MCP registry's server.json schema (draft-07), as vendored.
pub const SERVER_SCHEMA: &str = include_str!("../schemas/mcp-server.schema.json");

/// Keys of the `mcp:` section.
const SECTION_KEYS: &[&str] = &["packages", "remotes"];

/// Most entries of `packages`, and of `remotes`.
pub const MAX_ENTRIES: usize = 32;

/// Longest server.json `description`, in characters (the schema's
/// `maxLength`).
pub const MAX_DESCRIPTION_CHARS: usize = 100;

/// Longest server name (the schema's `maxLength`).
pub const MAX_SERVER_NAME_LEN: usize = 200;

/// Longest namespace: a full name is `<namespace>/<tool name>`, and a tool
/// name may be [`MAX_NAME_LEN`] long.
pub const MAX_NAMESPACE_LEN: usize = MAX_SERVER_NAME_LEN - 1 - MAX_NAME_LEN;

/// Transports a package may name (the schema's `LocalTransport`).
const PACKAGE_TRANSPORTS: &[&str] = &["stdio", "streamable-http", "sse"];
/// Transports a remote may name (the schema's `RemoteTransport`).
const REMOTE_TRANSPORTS: &[&str] = &["streamable-http", "sse"];

/// A tool's `mcp:` section, validated: each entry is kept as written (a
/// server.json `Package` or `RemoteTransport` object).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpSection {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    packages: Vec<Json>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    remotes: Vec<Json>,
}

impl McpSection {
    /// server.json `packages`: how to install and run the server locally.
    pub fn packages(&self) -> &[Json] {
        &self.packages
    }
    /// server.json `remotes`: where the server already runs.
    pub fn remotes(&self) -> &[Json] {
        &self.remotes
    }
}

/// The vendored schema, parsed once.
fn schema() -> &'static Json {
    static SCHEMA: OnceLock<Json> = OnceLock::new();
    SCHEMA.get_or_init(|| serde_json::from_str(SERVER_SCHEMA).expect("the vendored schema is JSON"))
}

/// The keys the schema lists for a definition's object (its `properties`,
/// and those of every branch it is made of).
fn defined_keys(definition: &str) -> Vec<&'static str> {
    fn collect<'a>(schema: &'a Json, defs: &'a Json, out: &mut Vec<&'a str>, depth: usize) {
        if depth > 8 {
            return;
        }
        if let Some(props) = schema.get("properties").and_then(Json::as_object) {
            out.extend(props.keys().map(String::as_str));
        }
        if let Some(target) = schema
            .get("$ref")
            .and_then(Json::as_str)
            .and_then(|r| r.strip_prefix("#/definitions/"))
        {
            collect(&defs[target], defs, out, depth + 1);
        }
        for combinator in ["allOf", "anyOf", "oneOf"] {
            for branch in schema
                .get(combinator)
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
            {
                collect(branch, defs, out, depth + 1);
            }
        }
    }
    let defs = &schema()["definitions"];
    let mut keys = Vec::new();
    collect(&defs[definition], defs, &mut keys, 0);
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Checks `packages` and `remotes` with the schema's own definitions of
/// server.json's `packages` and `remotes` (`ServerDetail.properties`),
/// formats included. Compiled once per process.
fn section_validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema = schema();
        let server = &schema["definitions"]["ServerDetail"]["properties"];
        let wrapper = json!({
            "$schema": schema["$schema"],
            "definitions": schema["definitions"],
            "type": "object",
            "properties": {
                "packages": server["packages"],
                "remotes": server["remotes"],
            },
        });
        jsonschema::options()
            .should_validate_formats(true)
            .build(&wrapper)
            .expect("the vendored schema compiles")
    })
}

/// The whole server.json schema, compiled once: what every server.json the
/// registry serves satisfies ([`check_server_detail`]).
fn server_validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        jsonschema::options()
            .should_validate_formats(true)
            .build(schema())
            .expect("the vendored schema compiles")
    })
}

/// Every problem of a server.json document against the vendored schema,
/// as `(JSON path, message)`; empty when it is valid.
pub fn check_server_detail(server: &Json) -> Vec<(String, String)> {
    server_validator()
        .iter_errors(server)
        .flat_map(|e| explain(&e))
        .collect()
}

/// Reads the `mcp:` section of tool.yaml (`value`, at `path`), every
/// problem to `diags` at its path. `kind_is_mcp` is whether the tool is of
/// `kind: mcp` (`None` when the kind itself is invalid): the section is
/// only for MCP servers.
pub(crate) fn parse_section(
    value: &Value,
    path: &str,
    kind_is_mcp: Option<bool>,
    diags: &mut Diagnostics,
) -> Option<McpSection> {
    if kind_is_mcp == Some(false) {
        diags.push(
            path,
            "only a tool of `kind: mcp` may have an `mcp:` section (it says where its MCP server is)",
        );
        return None;
    }
    let Value::Mapping(map) = value else {
        diags.push(
            path,
            format!(
                "expected a mapping with `packages` and/or `remotes`, found {}",
                kind_of(value)
            ),
        );
        return None;
    };
    let before = diags.len();
    check_keys(map, SECTION_KEYS, path, diags);
    let packages = entries(map.get("packages"), &join(path, "packages"), diags);
    let remotes = entries(map.get("remotes"), &join(path, "remotes"), diags);
    if packages.is_empty() && remotes.is_empty() && diags.len() == before {
        diags.push(
            path,
            "lists no `packages` and no `remotes`: say how to run the server, or where it runs",
        );
    }
    for (i, package) in packages.iter().enumerate() {
        check_entry(
            package,
            &index(&join(path, "packages"), i),
            "Package",
            PACKAGE_TRANSPORTS,
            diags,
        );
    }
    for (i, remote) in remotes.iter().enumerate() {
        check_entry(
            remote,
            &index(&join(path, "remotes"), i),
            "RemoteTransport",
            REMOTE_TRANSPORTS,
            diags,
        );
    }
    if diags.len() > before {
        return None;
    }
    // The schema last, on a section whose shape is known to be right: its
    // messages then name a field, not a failed `anyOf`.
    let mut instance = Map::new();
    if !packages.is_empty() {
        instance.insert("packages".to_owned(), Json::Array(packages.clone()));
    }
    if !remotes.is_empty() {
        instance.insert("remotes".to_owned(), Json::Array(remotes.clone()));
    }
    let instance = Json::Object(instance);
    for error in section_validator().iter_errors(&instance) {
        for (at, message) in explain(&error) {
            diags.push(dotted_from(path, &at), message);
        }
    }
    (diags.len() == before).then_some(McpSection { packages, remotes })
}

/// A list of at most [`MAX_ENTRIES`] mappings, as JSON.
fn entries(value: Option<&Value>, path: &str, diags: &mut Diagnostics) -> Vec<Json> {
    let Some(value) = value else {
        return Vec::new();
    };
    let Value::Sequence(items) = value else {
        diags.push(path, format!("expected a list, found {}", kind_of(value)));
        return Vec::new();
    };
    if items.len() > MAX_ENTRIES {
        diags.push(
            path,
            format!(
                "lists {} entries; at most {MAX_ENTRIES} are allowed",
                items.len()
            ),
        );
        return Vec::new();
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = index(path, i);
        match item {
            Value::Mapping(_) => match serde_json::to_value(item) {
                Ok(json) => out.push(json),
                Err(e) => diags.push(at, format!("cannot be represented as JSON: {e}")),
            },
            other => diags.push(at, format!("expected a mapping, found {}", kind_of(other))),
        }
    }
    out
}

/// What the schema cannot say well: unknown keys (the schema lets them
/// pass; tool.yaml refuses them, with the key meant) and the transport's
/// type (a wrong one fails every branch of an `anyOf` at once).
fn check_entry(
    entry: &Json,
    path: &str,
    definition: &str,
    transports: &[&str],
    diags: &mut Diagnostics,
) {
    let Json::Object(object) = entry else {
        return;
    };
    let known = defined_keys(definition);
    if let Ok(Value::Mapping(map)) = yaml_serde::to_value(entry) {
        check_keys(&map, &known, path, diags);
    }
    // A package names its transport in `transport`; a remote is one.
    let (transport, transport_path) = if definition == "Package" {
        match object.get("transport") {
            Some(Json::Object(t)) => (Some(t), join(path, "transport")),
            Some(other) => {
                diags.push(
                    join(path, "transport"),
                    format!(
                        "expected a mapping such as `{{type: stdio}}`, found {}",
                        json_kind(other)
                    ),
                );
                return;
            }
            None => (None, String::new()),
        }
    } else {
        (Some(object), path.to_owned())
    };
    let Some(transport) = transport else {
        return;
    };
    if let Ok(Value::Mapping(map)) = yaml_serde::to_value(Json::Object(transport.clone()))
        && definition == "Package"
    {
        let mut known = defined_keys("StreamableHttpTransport");
        known.extend(defined_keys("SseTransport"));
        known.extend(defined_keys("StdioTransport"));
        known.sort_unstable();
        known.dedup();
        check_keys(&map, &known, &transport_path, diags);
    }
    let type_path = join(&transport_path, "type");
    match transport.get("type") {
        None => diags.push(
            type_path,
            format!("missing required key: one of {}", listed(transports)),
        ),
        Some(Json::String(t)) if transports.contains(&t.as_str()) => {}
        Some(Json::String(t)) => {
            let hint = suggest(t, transports)
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            diags.push(
                type_path,
                format!(
                    "unknown transport {t:?}; expected one of {}{hint}",
                    listed(transports)
                ),
            );
        }
        Some(other) => diags.push(
            type_path,
            format!("expected a string, found {}", json_kind(other)),
        ),
    }
}

fn listed(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn json_kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a sequence",
        Json::Object(_) => "a mapping",
    }
}

/// A schema error as `(dotted instance path, message)`s. A failed
/// `anyOf`/`oneOf` is explained by the branch that came closest (the fewest
/// problems, a branch whose discriminating `type` fits first), so the
/// author reads what to change rather than "not valid under any of the
/// schemas".
fn explain(error: &ValidationError<'_>) -> Vec<(String, String)> {
    let branches = match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            Some(context)
        }
        _ => None,
    };
    if let Some(branches) = branches {
        let closest = branches.iter().filter(|b| !b.is_empty()).min_by_key(|b| {
            let misfit = b.iter().any(|e| {
                matches!(
                    e.kind(),
                    ValidationErrorKind::Enum { .. } | ValidationErrorKind::Constant { .. }
                ) && e.instance_path().as_str().ends_with("/type")
            });
            (misfit, b.len())
        });
        if let Some(branch) = closest {
            return branch.iter().flat_map(|e| explain(e)).collect();
        }
    }
    vec![(
        dotted("", error.instance_path().segments()),
        error.masked().to_string(),
    )]
}

/// `at` (a dotted path from [`dotted`] with an empty base) under `base`.
fn dotted_from(base: &str, at: &str) -> String {
    if at.is_empty() {
        base.to_owned()
    } else if at.starts_with('[') {
        format!("{base}{at}")
    } else {
        join(base, at)
    }
}

/// The registry's `server.json` description of a tool's `description`:
/// whitespace runs as one space, and at most [`MAX_DESCRIPTION_CHARS`]
/// characters, a longer one cut at a character boundary and ended with
/// `…` (so it is never refused for its length, and never claims to be
/// whole when it is not).
pub fn server_description(description: &str) -> String {
    let flat = description.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= MAX_DESCRIPTION_CHARS {
        return flat;
    }
    let cut: String = flat.chars().take(MAX_DESCRIPTION_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// Whether `namespace` may prefix server names: reverse-DNS characters
/// (`[a-zA-Z0-9.-]`), not empty, at most [`MAX_NAMESPACE_LEN`] long, so
/// that `<namespace>/<any tool name>` matches the schema's name pattern
/// and length.
pub fn check_namespace(namespace: &str) -> Result<(), String> {
    if namespace.is_empty() {
        return Err("the MCP namespace is empty".to_owned());
    }
    if namespace.len() > MAX_NAMESPACE_LEN {
        return Err(format!(
            "the MCP namespace {namespace:?} is {} characters long; at most {MAX_NAMESPACE_LEN} are allowed",
            namespace.len()
        ));
    }
    if let Some(bad) = namespace
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '.' || *c == '-'))
    {
        return Err(format!(
            "the MCP namespace {namespace:?} may hold only ASCII letters, digits, '.' and '-' (reverse DNS, such as `com.example.registry`), found {bad:?}"
        ));
    }
    if namespace.starts_with('.') || namespace.ends_with('.') || namespace.contains("..") {
        return Err(format!(
            "the MCP namespace {namespace:?} must be dot-separated labels (such as `com.example.registry`)"
        ));
    }
    Ok(())
}

/// The namespace a registry at `host` (its public URL's host) names its
/// servers under when none is configured: the host's labels reversed
/// (`registry.example.com` gives `com.example.registry`), or
/// `local.agentlang` for a host that is no DNS name (`localhost`, an IP
/// address).
pub fn default_namespace(host: &str) -> String {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let is_ip = host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[');
    if is_ip || !host.contains('.') {
        return "local.agentlang".to_owned();
    }
    let reversed = host.split('.').rev().collect::<Vec<_>>().join(".");
    if check_namespace(&reversed).is_ok() {
        reversed
    } else {
        "local.agentlang".to_owned()
    }
}

/// A server.json (`ServerDetail`) as the registry serves it: what every
/// `/v0.1` answer's `server` holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = McpServerDetail))]
pub struct ServerDetail {
    /// `<namespace>/<tool name>`: the registry's namespace (reverse DNS)
    /// and the tool's name as first published.
    #[cfg_attr(
        feature = "openapi",
        schema(
            example = "com.example.registry/weather",
            pattern = "^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$",
            min_length = 3,
            max_length = 200
        )
    )]
    pub name: String,
    /// The tool's description, whitespace folded, cut to 100 characters
    /// (a cut one ends with `…`).
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 100))]
    pub description: String,
    /// The tool's version as published (build metadata included).
    #[cfg_attr(feature = "openapi", schema(example = "1.4.0", max_length = 255))]
    pub version: String,
    /// tool.yaml's `mcp.packages`, as written (server.json `Package`s).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub packages: Vec<Json>,
    /// tool.yaml's `mcp.remotes`, as written (server.json
    /// `RemoteTransport`s).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub remotes: Vec<Json>,
}

/// The server.json of one published version of a `kind: mcp` tool:
/// `<namespace>/<name>` as its name, the tool's version as published, its
/// description as [`server_description`] makes it, and the `packages` and
/// `remotes` of its `mcp:` section (`mcp`: the stored tool.yaml `mcp`
/// value, as [`McpSection`] serializes).
pub fn server_detail(
    namespace: &str,
    name: &str,
    version: &str,
    description: &str,
    mcp: Option<&Json>,
) -> ServerDetail {
    let list = |key: &str| {
        mcp.and_then(|m| m.get(key))
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default()
    };
    ServerDetail {
        name: format!("{namespace}/{name}"),
        description: server_description(description),
        version: version.to_owned(),
        packages: list("packages"),
        remotes: list("remotes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{YamlLimits, parse_value};

    fn section(yaml: &str) -> Result<McpSection, Vec<String>> {
        let value = parse_value(yaml.as_bytes(), &YamlLimits::default()).unwrap();
        let mut diags = Diagnostics::new();
        parse_section(&value, "mcp", Some(true), &mut diags)
            .ok_or_else(|| diags.iter().map(ToString::to_string).collect())
    }

    const GOOD: &str = r#"
packages:
  - registryType: npm
    registryBaseUrl: https://registry.npmjs.org
    identifier: "@acme/weather-mcp"
    version: 1.4.0
    runtimeHint: npx
    transport:
      type: stdio
    packageArguments:
      - type: named
        name: --units
        value: metric
    environmentVariables:
      - name: WEATHER_API_KEY
        isRequired: true
        isSecret: true
remotes:
  - type: streamable-http
    url: https://weather.acme.example/mcp
    headers:
      - name: Authorization
        value: "Bearer {token}"
        variables:
          token: {isSecret: true}
"#;

    #[test]
    fn a_section_written_as_server_json_is_kept_as_written() {
        let s = section(GOOD).unwrap();
        assert_eq!(s.packages().len(), 1);
        assert_eq!(s.packages()[0]["identifier"], "@acme/weather-mcp");
        assert_eq!(s.packages()[0]["transport"], json!({"type": "stdio"}));
        assert_eq!(s.remotes()[0]["type"], "streamable-http");
        // What the registry then serves satisfies the whole schema.
        let stored = serde_json::to_value(&s).unwrap();
        let detail = serde_json::to_value(server_detail(
            "com.example",
            "weather",
            "1.0.0+build.7",
            &"Forecasts. ".repeat(30),
            Some(&stored),
        ))
        .unwrap();
        assert_eq!(check_server_detail(&detail), Vec::new());
        assert_eq!(detail["name"], "com.example/weather");
        assert_eq!(detail["packages"], stored["packages"]);
    }

    #[test]
    fn every_problem_is_named_by_its_path() {
        let problems = section(
            r#"
packages:
  - registryType: npm
    identifer: x
    transport: {type: http}
  - registryType: pypi
    identifier: y
    version: latest
    transport: {type: stdio}
    fileSha256: nothex
remotes:
  - type: sse
  - {type: streamable-http, url: "ftp://x"}
extra: 1
"#,
        )
        .unwrap_err();
        let has = |needle: &str| problems.iter().any(|p| p.contains(needle));
        assert!(has("mcp.extra: unknown key"), "{problems:#?}");
        assert!(
            has("mcp.packages[0].identifer: unknown key; did you mean `identifier`?"),
            "{problems:#?}"
        );
        assert!(
            has("mcp.packages[0].transport.type: unknown transport \"http\""),
            "{problems:#?}"
        );
    }

    #[test]
    fn schema_problems_name_the_field() {
        let problems = section(
            r#"
packages:
  - registryType: pypi
    identifier: y
    version: latest
    transport: {type: stdio}
    fileSha256: nothex
remotes:
  - type: sse
  - {type: streamable-http, url: "ftp://x"}
"#,
        )
        .unwrap_err();
        let has = |needle: &str| problems.iter().any(|p| p.starts_with(needle));
        assert!(has("mcp.packages[0].version:"), "{problems:#?}");
        assert!(has("mcp.packages[0].fileSha256:"), "{problems:#?}");
        assert!(has("mcp.remotes[0]:"), "{problems:#?}");
        assert!(
            problems
                .iter()
                .any(|p| p.contains("\"url\" is a required property")),
            "{problems:#?}"
        );
        assert!(has("mcp.remotes[1].url:"), "{problems:#?}");
    }

    #[test]
    fn a_section_is_bounded_and_not_empty() {
        let many = format!(
            "remotes:\n{}",
            "  - {type: sse, url: \"https://x.example/sse\"}\n".repeat(MAX_ENTRIES + 1)
        );
        assert!(section(&many).unwrap_err()[0].contains("at most 32"));
        assert!(section("{}").unwrap_err()[0].contains("no `packages` and no `remotes`"));
        assert!(section("packages: 3").unwrap_err()[0].contains("expected a list"));
    }

    #[test]
    fn descriptions_are_cut_honestly() {
        assert_eq!(
            server_description("  Short\n and  sweet. "),
            "Short and sweet."
        );
        let long = "é".repeat(150);
        let cut = server_description(&long);
        assert_eq!(cut.chars().count(), MAX_DESCRIPTION_CHARS);
        assert!(cut.ends_with('…'));
        assert_eq!(server_description(&"a".repeat(100)), "a".repeat(100));
    }

    #[test]
    fn namespaces_are_reverse_dns() {
        assert_eq!(
            default_namespace("registry.example.com"),
            "com.example.registry"
        );
        assert_eq!(default_namespace("127.0.0.1"), "local.agentlang");
        assert_eq!(default_namespace("localhost"), "local.agentlang");
        assert_eq!(default_namespace("[::1]"), "local.agentlang");
        assert!(check_namespace("com.example").is_ok());
        assert!(check_namespace("io.github.user-1").is_ok());
        for bad in [
            "",
            "com/example",
            "com..example",
            ".com",
            "com_example",
            &"a".repeat(136),
        ] {
            assert!(check_namespace(bad).is_err(), "{bad}");
        }
        let name = format!(
            "{}/{}",
            "a".repeat(MAX_NAMESPACE_LEN),
            "b".repeat(MAX_NAME_LEN)
        );
        assert_eq!(name.len(), MAX_SERVER_NAME_LEN);
    }
}
