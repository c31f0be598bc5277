//! tool.yaml: what a `.tool` package provides (name, version, how a runtime
//! reaches it, its JSON Schemas), what it needs (other tools, capabilities),
//! and nothing else besides `x-` extension keys.

use std::{collections::BTreeMap, fmt, str::FromStr};

use semver::VersionReq;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value as Json;
use yaml_serde::{Mapping, Value};

// Re-exported so tool call sites keep one import path; the table itself is
// shared with agent.yaml and the catalog.
pub use crate::capability::Capability;
use crate::{
    agent::{
        BashTool, HttpTool, read_bash_tool, read_http_tool,
        reader::{MAX_DESCRIPTION_CHARS, Reader, too_long},
    },
    diagnostics::{Diagnostics, index, join},
    json_schema::{self, RegexBudget},
    keys::{EXTENSION_PREFIX, check_keys, kind_of, suggest},
    mcp::{self, McpSection},
    names::{PackageName, Version, parse_requirement},
    tree::MemberPath,
    yaml::{YamlLimits, parse_value},
};

const TOP_KEYS: &[&str] = &[
    "name",
    "version",
    "description",
    "kind",
    "input_schema",
    "output_schema",
    "dependencies",
    "provides",
    "permissions",
    "readme",
    "mcp",
    "http",
    "bash",
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool kind {0:?}; expected builtin, mcp, http or bash")]
    UnknownKind(String),
}

/// How a runtime provides the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    Builtin,
    Mcp,
    Http,
    Bash,
}

impl ToolKind {
    pub const ALL: [ToolKind; 4] = [
        ToolKind::Builtin,
        ToolKind::Mcp,
        ToolKind::Http,
        ToolKind::Bash,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Builtin => "builtin",
            ToolKind::Mcp => "mcp",
            ToolKind::Http => "http",
            ToolKind::Bash => "bash",
        }
    }
}

impl fmt::Display for ToolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ToolKind {
    type Err = ToolError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| ToolError::UnknownKind(s.to_owned()))
    }
}

/// A validated tool.yaml. Fields are private so that every `ToolSpec` has
/// passed validation; the registry stores it as JSON and reads it back
/// through the same checks (`Deserialize`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    name: PackageName,
    version: Version,
    description: String,
    kind: ToolKind,
    input_schema: Json,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<Json>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    dependencies: BTreeMap<PackageName, VersionReq>,
    /// Abstract interfaces this tool implements (`provides: [storage]`),
    /// which an agent may require by name ([`crate::interfaces`]).
    #[serde(skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    provides: std::collections::BTreeSet<PackageName>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    permissions: Vec<Capability>,
    #[serde(skip_serializing_if = "Option::is_none")]
    readme: Option<MemberPath>,
    /// Where a `kind: mcp` tool's MCP server is: server.json's `packages`
    /// and `remotes` ([`crate::mcp`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    mcp: Option<McpSection>,
    /// Where a `kind: http` tool is called: an agent.yaml `http_tools`
    /// entry's shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    http: Option<HttpTool>,
    /// What a `kind: bash` tool runs: an agent.yaml `bash_tools` entry's
    /// shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    bash: Option<BashTool>,
    /// `x-` keys, kept as written.
    #[serde(flatten)]
    extensions: BTreeMap<String, Json>,
}

impl ToolSpec {
    pub fn name(&self) -> &PackageName {
        &self.name
    }
    pub fn version(&self) -> &Version {
        &self.version
    }
    pub fn description(&self) -> &str {
        &self.description
    }
    pub fn kind(&self) -> ToolKind {
        self.kind
    }
    /// A JSON Schema (object) valid against its metaschema.
    pub fn input_schema(&self) -> &Json {
        &self.input_schema
    }
    pub fn output_schema(&self) -> Option<&Json> {
        self.output_schema.as_ref()
    }
    /// Required capabilities, in the order written, without duplicates.
    pub fn permissions(&self) -> &[Capability] {
        &self.permissions
    }
    /// The README member of the container, when tool.yaml names one.
    pub fn readme(&self) -> Option<&MemberPath> {
        self.readme.as_ref()
    }
    pub fn extensions(&self) -> &BTreeMap<String, Json> {
        &self.extensions
    }
    /// A `kind: mcp` tool's MCP server, as server.json's `packages` and
    /// `remotes` say it: the tool's binding, and what the registry serves
    /// on `/v0.1/servers`.
    pub fn mcp(&self) -> Option<&McpSection> {
        self.mcp.as_ref()
    }
    /// A `kind: http` tool's endpoint, method, auth and parameters.
    pub fn http(&self) -> Option<&HttpTool> {
        self.http.as_ref()
    }
    /// A `kind: bash` tool's command and what it needs installed.
    pub fn bash(&self) -> Option<&BashTool> {
        self.bash.as_ref()
    }
    /// Other tools this one needs, with Cargo-style requirements (a bare
    /// `1.2.0` means `^1.2.0`). Names are unique after normalization.
    pub fn dependency_requirements(&self) -> BTreeMap<PackageName, VersionReq> {
        self.dependencies.clone()
    }
    /// The interfaces this tool provides (`provides:`), unique after
    /// normalization.
    pub fn provides(&self) -> &std::collections::BTreeSet<PackageName> {
        &self.provides
    }
}

impl<'de> Deserialize<'de> for ToolSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let json = Json::deserialize(d)?;
        let value = yaml_serde::to_value(&json).map_err(serde::de::Error::custom)?;
        validate(&value).map_err(serde::de::Error::custom)
    }
}

/// Parses and validates tool.yaml with the default YAML limits.
pub fn parse_tool(bytes: &[u8]) -> Result<ToolSpec, Diagnostics> {
    parse_tool_with(bytes, &YamlLimits::default())
}

/// Parses and validates tool.yaml, reporting every problem with its path.
pub fn parse_tool_with(bytes: &[u8], limits: &YamlLimits) -> Result<ToolSpec, Diagnostics> {
    validate(&parse_value(bytes, limits)?)
}

fn validate(value: &Value) -> Result<ToolSpec, Diagnostics> {
    let mut diags = Diagnostics::new();
    let Value::Mapping(top) = value else {
        diags.push(
            "",
            format!("tool.yaml must be a mapping, found {}", kind_of(value)),
        );
        return Err(diags);
    };
    check_keys(top, TOP_KEYS, "", &mut diags);

    let name = required_str(top, "name", &mut diags).and_then(|s| {
        PackageName::new(s)
            .map_err(|e| diags.push("name", e.to_string()))
            .ok()
    });
    let version = required_str(top, "version", &mut diags).and_then(|s| {
        Version::parse(s)
            .map_err(|e| diags.push("version", e.to_string()))
            .ok()
    });
    let description = required_str(top, "description", &mut diags).and_then(|s| {
        if s.trim().is_empty() {
            diags.push("description", "must not be empty");
            None
        } else if let Some(chars) = too_long(s, MAX_DESCRIPTION_CHARS) {
            diags.push(
                "description",
                format!("is {chars} characters long; at most {MAX_DESCRIPTION_CHARS} are allowed"),
            );
            None
        } else {
            Some(s.to_owned())
        }
    });
    let kind = required_str(top, "kind", &mut diags).and_then(|s| {
        s.parse::<ToolKind>()
            .map_err(|e| diags.push("kind", e.to_string()))
            .ok()
    });

    // One budget of regexes for the document's schemas together.
    let mut regexes = RegexBudget::default();
    let input_schema = match top.get("input_schema") {
        None => {
            diags.push("input_schema", "missing required key");
            None
        }
        Some(v) => json_schema::schema_at(v, "input_schema", true, &mut regexes, &mut diags),
    };
    let output_schema = top
        .get("output_schema")
        .map(|v| json_schema::schema_at(v, "output_schema", false, &mut regexes, &mut diags));

    let dependencies = match top.get("dependencies") {
        None => BTreeMap::new(),
        Some(Value::Mapping(map)) => dependencies(map, name.as_ref(), &mut diags),
        Some(v) => {
            diags.push(
                "dependencies",
                format!(
                    "expected a mapping of tool name to version requirement, found {}",
                    kind_of(v)
                ),
            );
            BTreeMap::new()
        }
    };

    let provides = match top.get("provides") {
        None => std::collections::BTreeSet::new(),
        Some(Value::Sequence(items)) => provides(items, name.as_ref(), &mut diags),
        Some(v) => {
            diags.push(
                "provides",
                format!("expected a list of interface names, found {}", kind_of(v)),
            );
            std::collections::BTreeSet::new()
        }
    };

    let permissions = match top.get("permissions") {
        None => Vec::new(),
        Some(Value::Sequence(items)) => permissions(items, &mut diags),
        Some(v) => {
            diags.push(
                "permissions",
                format!("expected a list of capability names, found {}", kind_of(v)),
            );
            Vec::new()
        }
    };

    let readme = match top.get("readme") {
        None => None,
        Some(Value::String(s)) => MemberPath::new(s.as_str())
            .map_err(|e| diags.push("readme", e.to_string()))
            .ok(),
        Some(v) => {
            diags.push(
                "readme",
                format!("expected a file path, found {}", kind_of(v)),
            );
            None
        }
    };

    let mcp = top
        .get("mcp")
        .and_then(|v| mcp::parse_section(v, "mcp", kind.map(|k| k == ToolKind::Mcp), &mut diags));

    let http = binding(
        top,
        "http",
        kind,
        ToolKind::Http,
        &mut diags,
        read_http_tool,
    );
    // agent.yaml's http_tools entry carries its output schema; a tool
    // package has one, at the top level.
    if http.as_ref().is_some_and(|h| h.output_schema.is_some()) {
        diags.push(
            "http.output_schema",
            "a tool package declares output_schema at the top level of tool.yaml, not under http",
        );
    }
    let bash = binding(
        top,
        "bash",
        kind,
        ToolKind::Bash,
        &mut diags,
        read_bash_tool,
    );

    let mut extensions = BTreeMap::new();
    for (key, value) in top {
        if let Some(k) = key.as_str().filter(|k| k.starts_with(EXTENSION_PREFIX))
            && let Some(json) = to_json(value, k, &mut diags)
        {
            extensions.insert(k.to_owned(), json);
        }
    }

    match (name, version, description, kind, input_schema) {
        (Some(name), Some(version), Some(description), Some(kind), Some(input_schema))
            if diags.is_empty() =>
        {
            Ok(ToolSpec {
                name,
                version,
                description,
                kind,
                input_schema,
                output_schema: output_schema.flatten(),
                dependencies,
                provides,
                permissions,
                readme,
                mcp,
                http,
                bash,
                extensions,
            })
        }
        _ => Err(diags),
    }
}

/// A stored tool spec's `http:` or `bash:` binding as the YAML section a
/// publisher writes (`http:\n  endpoint: ...`), with its key; for pages.
pub fn binding_yaml(spec: &Json) -> Option<(&'static str, String)> {
    let key = ["http", "bash"]
        .into_iter()
        .find(|key| spec.get(key).is_some_and(|v| !v.is_null()))?;
    let section = serde_json::json!({ key: spec[key] });
    Some((key, yaml_serde::to_string(&section).ok()?))
}

/// The `key:` binding of a tool of kind `wanted`, read as agent.yaml reads
/// the same entry; refused on a tool of another kind.
fn binding<T>(
    top: &Mapping,
    key: &str,
    kind: Option<ToolKind>,
    wanted: ToolKind,
    diags: &mut Diagnostics,
    read: impl FnOnce(&mut Reader, &Value, &str) -> Option<T>,
) -> Option<T> {
    let value = top.get(key)?;
    if kind.is_some_and(|k| k != wanted) {
        diags.push(
            key,
            format!("only a tool of kind: {wanted} has an `{key}:` section"),
        );
        return None;
    }
    let mut reader = Reader::new();
    let read = read(&mut reader, value, key);
    diags.extend(reader.finish());
    read
}

fn required_str<'a>(map: &'a Mapping, key: &str, diags: &mut Diagnostics) -> Option<&'a str> {
    match map.get(key) {
        None => {
            diags.push(key, "missing required key");
            None
        }
        Some(Value::String(s)) => Some(s),
        Some(v) => {
            diags.push(key, format!("expected a string, found {}", kind_of(v)));
            None
        }
    }
}

fn to_json(value: &Value, path: &str, diags: &mut Diagnostics) -> Option<Json> {
    serde_json::to_value(value)
        .map_err(|e| diags.push(path, format!("cannot be represented as JSON: {e}")))
        .ok()
}

/// The most interfaces one tool may provide.
pub const MAX_PROVIDES: usize = 32;

/// `provides:`: interface names, spelled as package names are (an agent
/// requires one in the place of a tool name), unique after normalization,
/// never the tool's own name.
fn provides(
    items: &[Value],
    own_name: Option<&PackageName>,
    diags: &mut Diagnostics,
) -> std::collections::BTreeSet<PackageName> {
    let mut out = std::collections::BTreeSet::new();
    if items.len() > MAX_PROVIDES {
        diags.push(
            "provides",
            format!(
                "lists {} interfaces; at most {MAX_PROVIDES} are allowed",
                items.len()
            ),
        );
        return out;
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("provides[{i}]");
        let Value::String(raw) = item else {
            diags.push(
                &path,
                format!("expected an interface name, found {}", kind_of(item)),
            );
            continue;
        };
        let name = match PackageName::new(raw.as_str()) {
            Ok(name) => name,
            Err(e) => {
                diags.push(&path, format!("not an interface name: {e}"));
                continue;
            }
        };
        if own_name.is_some_and(|own| own.normalized() == name.normalized()) {
            diags.push(
                &path,
                "a tool cannot provide an interface named like itself: tool names and interface names are kept apart",
            );
            continue;
        }
        if let Some(first) = seen.get(&name.normalized()) {
            diags.push(
                &path,
                format!("names the same interface as provides[{first}]"),
            );
            continue;
        }
        seen.insert(name.normalized(), i);
        out.insert(name);
    }
    out
}

fn dependencies(
    map: &Mapping,
    own_name: Option<&PackageName>,
    diags: &mut Diagnostics,
) -> BTreeMap<PackageName, VersionReq> {
    let mut deps = BTreeMap::new();
    // normalized name -> name as first written, to catch look-alikes.
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (key, value) in map {
        let Some(key) = key.as_str() else {
            diags.push(
                "dependencies",
                format!("tool names must be strings, found {}", kind_of(key)),
            );
            continue;
        };
        let path = join("dependencies", key);
        let name = match PackageName::new(key) {
            Ok(name) => Some(name),
            Err(e) => {
                diags.push(&path, e.to_string());
                None
            }
        };
        let requirement = match value {
            Value::String(s) => parse_requirement(s)
                .map_err(|e| diags.push(&path, e.to_string()))
                .ok(),
            other => {
                diags.push(
                    &path,
                    format!("expected a version requirement string such as \"^1.2.0\", found {} (quote it)", kind_of(other)),
                );
                None
            }
        };
        let Some(name) = name else { continue };
        if own_name.is_some_and(|own| own.normalized() == name.normalized()) {
            diags.push(&path, "a tool cannot depend on itself");
            continue;
        }
        if let Some(first) = seen.get(&name.normalized()) {
            diags.push(&path, format!("names the same tool as `{first}`"));
            continue;
        }
        seen.insert(name.normalized(), key.to_owned());
        if let Some(requirement) = requirement {
            deps.insert(name, requirement);
        }
    }
    deps
}

fn permissions(items: &[Value], diags: &mut Diagnostics) -> Vec<Capability> {
    let mut capabilities: Vec<Capability> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = index("permissions", i);
        let Value::String(s) = item else {
            diags.push(
                &path,
                format!("expected a capability name, found {}", kind_of(item)),
            );
            continue;
        };
        match s.parse::<Capability>() {
            Ok(c) if capabilities.contains(&c) => {
                diags.push(&path, format!("`{c}` is listed twice"))
            }
            Ok(c) => capabilities.push(c),
            Err(_) => {
                let hint = suggest(s, Capability::NAMES)
                    .map(|n| format!("; did you mean `{n}`?"))
                    .unwrap_or_else(|| {
                        format!("; expected one of {}", Capability::NAMES.join(", "))
                    });
                diags.push(&path, format!("unknown capability {s:?}{hint}"));
            }
        }
    }
    capabilities
}
