//! Builds an [`AgentSpec`] from a parsed YAML value, one section at a time,
//! recording every shape problem with its path. Rules that relate sections to
//! each other live in `validate.rs`.

use indexmap::IndexMap;
use semver::VersionReq;
use yaml_serde::Value;

use super::a2a_endpoint as a2a;
use super::model::*;
use super::permissions::{CronSchedule, PermissionMode};
use super::reader::{Fields, MAX_DESCRIPTION_CHARS, MAX_LABEL_CHARS, Reader, ShapeError, to_json};
use super::template::{self, check_env_template, is_env_name};
use crate::capability::Capability;
use crate::diagnostics::{index, join};
use crate::keys::{EXTENSION_PREFIX, suggest};
use crate::names::{PackageName, Version};

/// Which rules a document is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentRole {
    /// `agent.yaml`: `name`, `version` and `description` are required.
    TopLevel,
    /// A co-located specialist: `name` and `description` are required; the
    /// version is optional because the parent package versions it.
    Subagent,
}

const TOP_KEYS: &[&str] = &[
    "name",
    "version",
    "title",
    "subtitle",
    "description",
    "developer",
    "category",
    "models",
    "tools",
    "mcp_servers",
    "http_tools",
    "bash_tools",
    "permissions",
    "context",
    "delegate",
    "protocols",
    "constraints",
    "ui_components",
    "skills",
];

/// Reads the whole document. The model is only meaningful when `r` recorded
/// nothing; `None` when the document is not a mapping at all.
pub(super) fn read_agent(r: &mut Reader, doc: &Value, role: AgentRole) -> Option<AgentSpec> {
    let f = r.fields(doc, "", TOP_KEYS)?;
    let name = r
        .required(&f, "name")
        .and_then(|v| package_name(r, v, "name"));
    let version = match (f.get("version"), role) {
        (Some(v), _) => strict_version(r, v, "version"),
        (None, AgentRole::TopLevel) => {
            r.error("", ShapeError::Missing("version".into()));
            None
        }
        (None, AgentRole::Subagent) => None,
    };
    // Subagents are routed to by their description, and the catalog shows a
    // top-level agent's: both need one.
    let description = r.req_text_max(&f, "description", MAX_DESCRIPTION_CHARS);

    let title = r.opt_text_max(&f, "title", MAX_LABEL_CHARS);
    let subtitle = r.opt_text_max(&f, "subtitle", MAX_LABEL_CHARS);
    let developer = r.opt_text_max(&f, "developer", MAX_LABEL_CHARS);
    let category = r.opt_text_max(&f, "category", MAX_LABEL_CHARS);
    let models = section(&f, "models", |v, p| models(r, v, p)).unwrap_or_default();
    let tools = section(&f, "tools", |v, p| tools(r, v, p)).unwrap_or_default();
    let mcp_servers = section(&f, "mcp_servers", |v, p| mcp_servers(r, v, p)).unwrap_or_default();
    let http_tools = section(&f, "http_tools", |v, p| http_tools(r, v, p)).unwrap_or_default();
    let bash_tools = section(&f, "bash_tools", |v, p| bash_tools(r, v, p)).unwrap_or_default();
    let permissions = section(&f, "permissions", |v, p| permissions(r, v, p)).flatten();
    let context = section(&f, "context", |v, p| context(r, v, p)).flatten();
    let delegate = section(&f, "delegate", |v, p| static_crew(r, v, p)).flatten();
    let protocols = section(&f, "protocols", |v, p| protocols(r, v, p)).unwrap_or_default();
    let constraints = section(&f, "constraints", |v, p| constraints(r, v, p)).flatten();
    let ui_components =
        section(&f, "ui_components", |v, p| ui_components(r, v, p)).unwrap_or_default();
    let skills = section(&f, "skills", |v, p| skills(r, v, p)).unwrap_or_default();
    // A bad or missing name has been reported already, so the result is an
    // error either way; a stand-in name lets the cross-section rules run
    // too, and one run reports everything.
    let name = name.or_else(|| PackageName::new("unnamed").ok())?;
    let spec = AgentSpec {
        name,
        version,
        title,
        subtitle,
        description,
        developer,
        category,
        models,
        tools,
        mcp_servers,
        http_tools,
        bash_tools,
        permissions,
        context,
        delegate,
        protocols,
        constraints,
        ui_components,
        skills,
        extensions: f.extensions,
    };
    Some(spec)
}

/// Runs `read` on `f[key]` with its path, when the key is present.
fn section<'v, T>(f: &Fields<'v>, key: &str, read: impl FnOnce(&'v Value, &str) -> T) -> Option<T> {
    f.get(key).map(|v| read(v, &f.at(key)))
}

fn package_name(r: &mut Reader, v: &Value, path: &str) -> Option<PackageName> {
    let s = r.string(v, path)?;
    match PackageName::new(s.as_str()) {
        Ok(n) => Some(n),
        Err(e) => {
            r.error(path, format!("{s:?} is not a valid name: {e}"));
            None
        }
    }
}

fn strict_version(r: &mut Reader, v: &Value, path: &str) -> Option<Version> {
    let s = r.scalar(v, path)?;
    match Version::parse(&s) {
        Ok(v) => Some(v),
        Err(e @ crate::names::NameError::VersionLabelTooLong { .. }) => {
            r.error(path, e);
            None
        }
        Err(_) => {
            r.error(
                path,
                format!("{s:?} is not a strict SemVer version like 1.0.0"),
            );
            None
        }
    }
}

fn version_req(r: &mut Reader, v: &Value, path: &str) -> Option<VersionReq> {
    let s = r.scalar(v, path)?;
    match crate::names::parse_requirement(&s) {
        Ok(req) => Some(req),
        Err(crate::names::NameError::BadRequirement(text, why)) => {
            r.error(
                path,
                format!("{text:?} is not a valid version requirement: {why}"),
            );
            None
        }
        Err(e) => {
            r.error(path, e);
            None
        }
    }
}

/// A name that becomes part of an identifier at runtime (tool names,
/// component names): letters, digits, `_` and `-`, starting with a letter or
/// `_`.
fn identifier(r: &mut Reader, name: &str, path: &str) -> bool {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        r.error(
            path,
            format!("{name:?} is not a valid identifier (letters, digits, '_' and '-', starting with a letter)"),
        );
    }
    ok
}

/// Checks the `{{...}}` placeholders in every string inside a JSON value.
fn check_templates(r: &mut Reader, v: &Json, path: &str) {
    match v {
        Json::String(s) => {
            if let Err(e) = template::placeholders(s) {
                r.error(path, e);
            }
        }
        Json::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                check_templates(r, item, &index(path, i));
            }
        }
        Json::Object(map) => {
            for (k, item) in map {
                check_templates(r, item, &join(path, k));
            }
        }
        _ => {}
    }
}

/// A mapping of free-form values (options, params, props).
fn json_map(r: &mut Reader, v: &Value, path: &str) -> serde_json::Map<String, Json> {
    r.dict(v, path)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), to_json(v)))
        .collect()
}

/// Free-form data that must be a mapping (tool config, JSON Schemas).
fn json_object(r: &mut Reader, v: &Value, path: &str) -> Option<Json> {
    match v {
        Value::Mapping(_) => Some(to_json(v)),
        _ => {
            r.error(
                path,
                ShapeError::WrongType {
                    expected: "a mapping",
                    found: super::reader::type_name(v),
                },
            );
            None
        }
    }
}

fn models(r: &mut Reader, v: &Value, path: &str) -> IndexMap<String, ModelSpec> {
    let mut out = IndexMap::new();
    for (name, m) in r.dict(v, path) {
        let p = join(path, name);
        let Some(f) = r.fields(m, &p, &["provider", "options"]) else {
            continue;
        };
        let provider = r.req_text(&f, "provider");
        let options = f
            .get("options")
            .map(|o| json_map(r, o, &f.at("options")))
            .unwrap_or_default();
        if let Some(provider) = provider {
            out.insert(
                name.to_owned(),
                ModelSpec {
                    provider,
                    options,
                    extensions: f.extensions,
                },
            );
        }
    }
    out
}

fn tools(r: &mut Reader, v: &Value, path: &str) -> Vec<ToolDecl> {
    let mut out: Vec<ToolDecl> = Vec::new();
    // normalized name -> name as first declared
    let mut declared: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for (i, item) in r.seq(v, path).iter().enumerate() {
        let p = index(path, i);
        let Some(f) = r.fields(
            item,
            &p,
            &["name", "version", "config", "input_schema", "output_schema"],
        ) else {
            continue;
        };
        let Some(name) = r
            .required(&f, "name")
            .and_then(|n| package_name(r, n, &f.at("name")))
        else {
            continue;
        };
        // A map, not a scan of `out`: the check stays linear in the tools.
        match declared.entry(name.normalized()) {
            std::collections::hash_map::Entry::Occupied(prev) => r.error(
                f.at("name"),
                format!(
                    "tool {:?} is already declared (as {:?})",
                    name.as_str(),
                    prev.get()
                ),
            ),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(name.as_str().to_owned());
            }
        }
        let is_delegate = name.as_str() == DELEGATE_TOOL;
        let version = f.get("version").and_then(|v| {
            if is_delegate {
                r.error(
                    f.at("version"),
                    "delegate is a runtime builtin and takes no version",
                );
                None
            } else {
                version_req(r, v, &f.at("version"))
            }
        });
        let config = f.get("config").and_then(|c| {
            let cp = f.at("config");
            if is_delegate {
                delegate_config(r, c, &cp).map(ToolConfig::Delegate)
            } else {
                json_object(r, c, &cp).map(ToolConfig::Other)
            }
        });
        // Valid JSON Schemas (the metaschema, compiled), as tool.yaml's
        // are: the runtime validates with them.
        let input_schema = f
            .get("input_schema")
            .and_then(|s| inline_schema(r, s, &f.at("input_schema"), true));
        let output_schema = f
            .get("output_schema")
            .and_then(|s| inline_schema(r, s, &f.at("output_schema"), false));
        out.push(ToolDecl {
            name,
            version,
            config,
            input_schema,
            output_schema,
            extensions: f.extensions,
        });
    }
    out
}

/// An inline JSON Schema at `path`, checked as tool.yaml's are
/// (`json_schema::schema_at`), its regexes counted against the document's.
fn inline_schema(r: &mut Reader, v: &Value, path: &str, is_input: bool) -> Option<Json> {
    crate::json_schema::schema_at(v, path, is_input, &mut r.regexes, &mut r.diags)
}

fn delegate_mode(r: &mut Reader, v: &Value, path: &str) -> Option<DelegateMode> {
    r.one_of(v, path, &["dynamic", "static"], |s| match s {
        "dynamic" => Some(DelegateMode::Dynamic),
        "static" => Some(DelegateMode::Static),
        _ => None,
    })
}

fn delegate_config(r: &mut Reader, v: &Value, path: &str) -> Option<DelegateToolConfig> {
    let f = r.fields(v, path, &["mode", "discovery", "max_depth"])?;
    let mode = f
        .get("mode")
        .and_then(|m| delegate_mode(r, m, &f.at("mode")));
    if mode == Some(DelegateMode::Static) {
        r.error(
            f.at("mode"),
            "the delegate tool orchestrates dynamically; declare a static crew under top-level `delegate:`",
        );
    }
    let discovery = f.get("discovery").and_then(|d| {
        r.one_of(d, &f.at("discovery"), &["directory"], |s| {
            (s == "directory").then_some(Discovery::Directory)
        })
    });
    Some(DelegateToolConfig {
        mode,
        discovery,
        max_depth: r.opt_positive(&f, "max_depth"),
        extensions: f.extensions,
    })
}

fn mcp_servers(r: &mut Reader, v: &Value, path: &str) -> IndexMap<String, McpServer> {
    let mut out = IndexMap::new();
    for (name, s) in r.dict(v, path) {
        let p = join(path, name);
        let Some(f) = r.fields(s, &p, &["command", "args", "env", "tools"]) else {
            continue;
        };
        let command = r.req_text(&f, "command");
        let args = f
            .get("args")
            .map(|a| {
                let ap = f.at("args");
                r.seq(a, &ap)
                    .iter()
                    .enumerate()
                    .filter_map(|(i, arg)| r.scalar(arg, &index(&ap, i)))
                    .collect()
            })
            .unwrap_or_default();
        let mut env = IndexMap::new();
        if let Some(e) = f.get("env") {
            let ep = f.at("env");
            for (key, val) in r.dict(e, &ep) {
                let kp = join(&ep, key);
                if !is_env_name(key) {
                    r.error(
                        &kp,
                        format!("{key:?} is not a valid environment variable name"),
                    );
                    continue;
                }
                let Some(text) = r.scalar(val, &kp) else {
                    continue;
                };
                if let Err(err) = check_env_template(&text) {
                    r.error(&kp, err);
                    continue;
                }
                env.insert(key.to_owned(), text);
            }
        }
        let tools = f.get("tools").map(|t| {
            let tp = f.at("tools");
            let list = r.string_list(t, &tp);
            for (i, tool) in list.iter().enumerate() {
                identifier(r, tool, &index(&tp, i));
            }
            list
        });
        if let Some(command) = command {
            out.insert(
                name.to_owned(),
                McpServer {
                    command,
                    args,
                    env,
                    tools,
                    extensions: f.extensions,
                },
            );
        }
    }
    out
}

fn http_tools(r: &mut Reader, v: &Value, path: &str) -> IndexMap<String, HttpTool> {
    let mut out = IndexMap::new();
    for (name, t) in r.dict(v, path) {
        let p = join(path, name);
        identifier(r, name, &p);
        if let Some(tool) = http_tool(r, t, &p) {
            out.insert(name.to_owned(), tool);
        }
    }
    out
}

/// One HTTP tool at `p`: an agent.yaml `http_tools` entry, or a tool
/// package's `http:` binding (the same shape, read by the same code).
pub(crate) fn http_tool(r: &mut Reader, t: &Value, p: &str) -> Option<HttpTool> {
    const KEYS: &[&str] = &[
        "description",
        "endpoint",
        "method",
        "auth",
        "params",
        "body_template",
        "ui_component",
        "output_schema",
    ];
    // `<provider>_token` keys are open-ended, so take them out before the
    // fixed keys are checked.
    let mut oauth_tokens = std::collections::BTreeMap::new();
    let mut rest = t.clone();
    if let Value::Mapping(m) = &mut rest {
        let token_keys: Vec<String> = m
            .keys()
            .filter_map(Value::as_str)
            .filter(|k| k.ends_with("_token") && !k.starts_with(EXTENSION_PREFIX))
            .map(str::to_owned)
            .collect();
        for key in token_keys {
            let val = m.remove(key.as_str()).unwrap_or(Value::Null);
            if let Some(b) = r.bool(&val, &join(p, &key)) {
                oauth_tokens.insert(key, b);
            }
        }
    }
    let f = r.fields(&rest, p, KEYS)?;
    let endpoint = r.req_text(&f, "endpoint");
    let method = r.required(&f, "method").and_then(|m| {
        r.one_of(
            m,
            &f.at("method"),
            &["GET", "POST", "PUT", "PATCH", "DELETE"],
            |s| {
                Some(match s {
                    "GET" => HttpMethod::Get,
                    "POST" => HttpMethod::Post,
                    "PUT" => HttpMethod::Put,
                    "PATCH" => HttpMethod::Patch,
                    "DELETE" => HttpMethod::Delete,
                    _ => return None,
                })
            },
        )
    });
    let auth = f.get("auth").and_then(|a| {
        r.one_of(
            a,
            &f.at("auth"),
            &["none", "bearer", "basic", "api_key"],
            |s| {
                Some(match s {
                    "none" => HttpAuth::None,
                    "bearer" => HttpAuth::Bearer,
                    "basic" => HttpAuth::Basic,
                    "api_key" => HttpAuth::ApiKey,
                    _ => return None,
                })
            },
        )
    });
    let params = f
        .get("params")
        .map(|ps| http_params(r, ps, &f.at("params")))
        .unwrap_or_default();
    let body_template = f.get("body_template").and_then(|b| {
        let bp = f.at("body_template");
        let text = r.string(b, &bp)?;
        match template::placeholders(&text) {
            Ok(found) => {
                for root in found.iter().filter_map(|ph| ph.root()) {
                    if !params.contains_key(root) {
                        r.error(
                            &bp,
                            format!("{{{{{root}}}}} is not one of this tool's params"),
                        );
                    }
                }
            }
            Err(e) => r.error(&bp, e),
        }
        Some(text)
    });
    let ui_component = f
        .get("ui_component")
        .and_then(|u| tool_ui(r, u, &f.at("ui_component")));
    // What the endpoint answers: the source of the `{{json...}}` routes
    // into its UI states, and what events' results are held to.
    let output_schema = f
        .get("output_schema")
        .and_then(|s| inline_schema(r, s, &f.at("output_schema"), false));
    let description = r.opt_text_max(&f, "description", MAX_DESCRIPTION_CHARS);
    Some(HttpTool {
        description,
        endpoint: endpoint?,
        method: method?,
        auth,
        oauth_tokens,
        params,
        body_template,
        ui_component,
        output_schema,
        extensions: f.extensions,
    })
}

fn http_params(r: &mut Reader, v: &Value, path: &str) -> IndexMap<String, HttpParam> {
    const TYPES: &[&str] = &["string", "integer", "number", "boolean", "array", "object"];
    let mut out = IndexMap::new();
    for (name, pv) in r.dict(v, path) {
        let p = join(path, name);
        identifier(r, name, &p);
        let Some(f) = r.fields(pv, &p, &["type", "description", "required", "default"]) else {
            continue;
        };
        let ty = r.required(&f, "type").and_then(|t| {
            r.one_of(t, &f.at("type"), TYPES, |s| {
                Some(match s {
                    "string" => ParamType::String,
                    "integer" => ParamType::Integer,
                    "number" => ParamType::Number,
                    "boolean" => ParamType::Boolean,
                    "array" => ParamType::Array,
                    "object" => ParamType::Object,
                    _ => return None,
                })
            })
        });
        let required = f.get("required").and_then(|b| r.bool(b, &f.at("required")));
        let description = r.opt_text_max(&f, "description", MAX_DESCRIPTION_CHARS);
        if let Some(ty) = ty {
            out.insert(
                name.to_owned(),
                HttpParam {
                    ty,
                    description,
                    required,
                    default: f.get("default").map(to_json),
                    extensions: f.extensions,
                },
            );
        }
    }
    out
}

fn tool_ui(r: &mut Reader, v: &Value, path: &str) -> Option<ToolUi> {
    let f = r.fields(v, path, &["running", "completed", "failed"])?;
    let mut render = |key: &str| {
        let v = f.get(key)?;
        let p = f.at(key);
        let rf = r.fields(v, &p, &["component", "props", "actions"])?;
        let component = r.req_text(&rf, "component");
        if let Some(c) = &component {
            identifier(r, c, &rf.at("component"));
        }
        let props = rf
            .get("props")
            .map(|pv| json_map(r, pv, &rf.at("props")))
            .unwrap_or_default();
        for (k, val) in &props {
            check_templates(r, val, &join(&rf.at("props"), k));
        }
        let actions = rf
            .get("actions")
            .and_then(|a| ui_actions(r, a, &rf.at("actions"), false));
        Some(UiRender {
            component: component?,
            props,
            actions,
            extensions: rf.extensions,
        })
    };
    let running = render("running");
    let completed = render("completed");
    let failed = render("failed");
    Some(ToolUi {
        running,
        completed,
        failed,
        extensions: f.extensions,
    })
}

fn bash_tools(r: &mut Reader, v: &Value, path: &str) -> IndexMap<String, BashTool> {
    let mut out = IndexMap::new();
    for (name, t) in r.dict(v, path) {
        let p = join(path, name);
        identifier(r, name, &p);
        if let Some(tool) = bash_tool(r, t, &p) {
            out.insert(name.to_owned(), tool);
        }
    }
    out
}

/// One bash tool at `p`: an agent.yaml `bash_tools` entry, or a tool
/// package's `bash:` binding (the same shape, read by the same code).
pub(crate) fn bash_tool(r: &mut Reader, t: &Value, p: &str) -> Option<BashTool> {
    let f = r.fields(
        t,
        p,
        &[
            "description",
            "command",
            "help_command",
            "labels",
            "dependencies",
        ],
    )?;
    let command = r.req_text(&f, "command");
    let labels = f.get("labels").and_then(|l| labels(r, l, &f.at("labels")));
    let mut dependencies = Vec::new();
    if let Some(d) = f.get("dependencies") {
        let dp = f.at("dependencies");
        for (i, dep) in r.seq(d, &dp).iter().enumerate() {
            if let Some(dep) = bash_dependency(r, dep, &index(&dp, i)) {
                dependencies.push(dep);
            }
        }
    }
    let description = r.opt_text_max(&f, "description", MAX_DESCRIPTION_CHARS);
    let help_command = r.opt_text(&f, "help_command");
    Some(BashTool {
        description,
        command: command?,
        help_command,
        labels,
        dependencies,
        extensions: f.extensions,
    })
}

/// `labels: {running, finished}`, shared with ux.yaml.
pub(crate) fn labels(r: &mut Reader, v: &Value, path: &str) -> Option<Labels> {
    let f = r.fields(v, path, &["running", "finished"])?;
    Some(Labels {
        running: r.opt_text(&f, "running"),
        finished: r.opt_text(&f, "finished"),
        extensions: f.extensions,
    })
}

fn bash_dependency(r: &mut Reader, v: &Value, path: &str) -> Option<BashDependency> {
    let f = r.fields(v, path, &["name", "check", "install"])?;
    let name = r.req_text(&f, "name");
    let check = r.opt_text(&f, "check");
    let mut install = std::collections::BTreeMap::new();
    if let Some(i) = f.get("install") {
        let ip = f.at("install");
        for (os, cmd) in r.dict(i, &ip) {
            let op = join(&ip, os);
            let os = match os {
                "darwin" => Os::Darwin,
                "linux" => Os::Linux,
                "windows" => Os::Windows,
                other => {
                    r.error(
                        &op,
                        ShapeError::NotOneOf {
                            value: other.to_owned(),
                            expected: "darwin | linux | windows".into(),
                        },
                    );
                    continue;
                }
            };
            if let Some(cmd) = r.text(cmd, &op) {
                install.insert(os, cmd);
            }
        }
    }
    Some(BashDependency {
        name: name?,
        check,
        install,
        extensions: f.extensions,
    })
}

fn capability(r: &mut Reader, name: &str, path: &str) -> Option<Capability> {
    match name.parse::<Capability>() {
        Ok(c) => Some(c),
        Err(e) => {
            let hint = suggest(name, Capability::NAMES)
                .map(|s| format!("; did you mean {s:?}?"))
                .unwrap_or_default();
            r.error(path, format!("{e}{hint}"));
            None
        }
    }
}

fn permissions(r: &mut Reader, v: &Value, path: &str) -> Option<Permissions> {
    let mut known: Vec<&str> = vec!["required", "optional"];
    known.extend_from_slice(Capability::NAMES);
    let f = r.fields(v, path, &known)?;
    let list = |r: &mut Reader, key: &str| -> Vec<Capability> {
        let Some(l) = f.get(key) else {
            return Vec::new();
        };
        let lp = f.at(key);
        let mut out: Vec<Capability> = Vec::new();
        for (i, item) in r.seq(l, &lp).iter().enumerate() {
            let ip = index(&lp, i);
            let Some(name) = r.string(item, &ip) else {
                continue;
            };
            if let Some(c) = capability(r, &name, &ip) {
                if out.contains(&c) {
                    r.error(&ip, ShapeError::Duplicate(name));
                } else {
                    out.push(c);
                }
            }
        }
        out
    };
    let required = list(r, "required");
    let optional = list(r, "optional");
    let lp = f.at("optional");
    for (i, c) in optional.iter().enumerate() {
        if required.contains(c) {
            r.error(
                index(&lp, i),
                format!("{c} is already listed under required"),
            );
        }
    }
    let mut config = std::collections::BTreeMap::new();
    for name in Capability::NAMES {
        let Some(cv) = f.get(name) else { continue };
        let cp = f.at(name);
        let Ok(cap) = name.parse::<Capability>() else {
            continue;
        };
        if !required.contains(&cap) && !optional.contains(&cap) {
            r.error(
                &cp,
                format!("{cap} is configured but not listed under required or optional"),
            );
        }
        if let Some(c) = capability_config(r, cap, cv, &cp) {
            config.insert(cap, c);
        }
    }
    Some(Permissions {
        required,
        optional,
        config,
        extensions: f.extensions,
    })
}

fn cron(r: &mut Reader, v: &Value, path: &str) -> Option<CronSchedule> {
    let s = r.string(v, path)?;
    match CronSchedule::new(s) {
        Ok(c) => Some(c),
        Err(e) => {
            r.error(path, e);
            None
        }
    }
}

fn capability_config(
    r: &mut Reader,
    cap: Capability,
    v: &Value,
    path: &str,
) -> Option<CapabilityConfig> {
    let f = r.fields(
        v,
        path,
        &[
            "mode",
            "reason",
            "schedule",
            "wake_triggers",
            "max_runtime",
            "channels",
        ],
    )?;
    let mode = f
        .get("mode")
        .and_then(|m| r.one_of(m, &f.at("mode"), PermissionMode::NAMES, |s| s.parse().ok()));
    let schedule = f
        .get("schedule")
        .and_then(|s| cron(r, s, &f.at("schedule")));
    let mut wake_triggers = Vec::new();
    if let Some(w) = f.get("wake_triggers") {
        let wp = f.at("wake_triggers");
        for (i, t) in r.seq(w, &wp).iter().enumerate() {
            let tp = index(&wp, i);
            let Some(tf) = r.fields(t, &tp, &["schedule"]) else {
                continue;
            };
            if let Some(schedule) = r
                .required(&tf, "schedule")
                .and_then(|s| cron(r, s, &tf.at("schedule")))
            {
                wake_triggers.push(WakeTrigger {
                    schedule,
                    extensions: tf.extensions,
                });
            }
        }
    }
    // A schedule only means something for a scheduled grant, and a
    // scheduled grant needs to say when. Except background's: it wakes for
    // the scheduled capabilities' own schedules, or when the host chooses
    // (as a phone's background refresh does), as the spec's "Hourly inbox
    // check" example leaves it.
    let timed = f.has("schedule") || f.has("wake_triggers");
    match mode {
        Some(PermissionMode::Scheduled) if !timed && cap != Capability::Background => r.error(
            f.at("mode"),
            "mode scheduled needs a schedule or wake_triggers",
        ),
        Some(m) if m != PermissionMode::Scheduled && timed => {
            r.error(path, "schedule and wake_triggers need mode: scheduled")
        }
        _ => {}
    }
    Some(CapabilityConfig {
        mode,
        reason: r.opt_text(&f, "reason"),
        schedule,
        wake_triggers,
        max_runtime: r.opt_positive(&f, "max_runtime"),
        channels: r.opt_string_list(&f, "channels"),
        extensions: f.extensions,
    })
}

fn context(r: &mut Reader, v: &Value, path: &str) -> Option<ContextSpec> {
    let f = r.fields(v, path, &["window", "compaction", "inject"])?;
    let window = f.get("window").and_then(|w| {
        let wf = r.fields(w, &f.at("window"), &["max_tokens", "strategy"])?;
        Some(ContextWindow {
            max_tokens: r.opt_positive(&wf, "max_tokens"),
            strategy: wf.get("strategy").and_then(|s| {
                r.one_of(
                    s,
                    &wf.at("strategy"),
                    &["sliding", "summarize", "truncate"],
                    |s| match s {
                        "sliding" => Some(WindowStrategy::Sliding),
                        "summarize" => Some(WindowStrategy::Summarize),
                        "truncate" => Some(WindowStrategy::Truncate),
                        _ => None,
                    },
                )
            }),
            extensions: wf.extensions,
        })
    });
    let compaction = f.get("compaction").and_then(|c| {
        let cf = r.fields(c, &f.at("compaction"), &["strategy", "trigger", "preserve"])?;
        let strategy = cf.get("strategy").and_then(|s| {
            r.one_of(
                s,
                &cf.at("strategy"),
                &["summarize", "drop_oldest", "checkpoint"],
                |s| match s {
                    "summarize" => Some(CompactionStrategy::Summarize),
                    "drop_oldest" => Some(CompactionStrategy::DropOldest),
                    "checkpoint" => Some(CompactionStrategy::Checkpoint),
                    _ => None,
                },
            )
        });
        let trigger = cf.get("trigger").and_then(|t| {
            let tp = cf.at("trigger");
            let x = r.f64(t, &tp)?;
            if x <= 0.0 || x > 1.0 {
                r.error(
                    &tp,
                    ShapeError::OutOfRange {
                        value: x.to_string(),
                        rule: "must be in (0, 1]",
                    },
                );
                return None;
            }
            Some(x)
        });
        Some(Compaction {
            strategy,
            trigger,
            preserve: r.opt_string_list(&cf, "preserve"),
            extensions: cf.extensions,
        })
    });
    Some(ContextSpec {
        window,
        compaction,
        inject: r.opt_string_list(&f, "inject"),
        extensions: f.extensions,
    })
}

fn static_crew(r: &mut Reader, v: &Value, path: &str) -> Option<StaticCrew> {
    let f = r.fields(v, path, &["mode", "process", "agents"])?;
    let mode = r
        .required(&f, "mode")
        .and_then(|m| delegate_mode(r, m, &f.at("mode")));
    if mode == Some(DelegateMode::Dynamic) {
        r.error(
            f.at("mode"),
            "top-level delegate is a static crew (mode: static); dynamic delegation is configured on the delegate tool",
        );
    }
    let process = r.required(&f, "process").and_then(|p| {
        r.one_of(
            p,
            &f.at("process"),
            &["sequential", "parallel", "hierarchical"],
            |s| match s {
                "sequential" => Some(CrewProcess::Sequential),
                "parallel" => Some(CrewProcess::Parallel),
                "hierarchical" => Some(CrewProcess::Hierarchical),
                _ => None,
            },
        )
    });
    let mut agents = Vec::new();
    if let Some(a) = r.required(&f, "agents") {
        let ap = f.at("agents");
        let items = r.seq(a, &ap);
        if items.is_empty() {
            r.error(&ap, ShapeError::Empty);
        }
        for (i, item) in items.iter().enumerate() {
            let mp = index(&ap, i);
            let Some(mf) = r.fields(item, &mp, &["path", "task", "depends_on", "budget"]) else {
                continue;
            };
            let budget = mf.get("budget").and_then(|b| {
                let bp = mf.at("budget");
                let x = r.f64(b, &bp)?;
                if x < 0.0 {
                    r.error(
                        &bp,
                        ShapeError::OutOfRange {
                            value: x.to_string(),
                            rule: "must not be negative",
                        },
                    );
                    return None;
                }
                Some(x)
            });
            let Some(member_path) = r.req_text(&mf, "path") else {
                continue;
            };
            let member = CrewMember {
                path: member_path,
                task: r.opt_text(&mf, "task"),
                depends_on: r.opt_string_list(&mf, "depends_on"),
                budget,
                extensions: mf.extensions.clone(),
            };
            let file_ok = member.member_path().is_some_and(|p| {
                let n = p.file_name();
                (n.ends_with(".yaml") || n.ends_with(".yml")) && p.as_str() != "agent.yaml"
            });
            if !file_ok {
                r.error(
                    mf.at("path"),
                    format!(
                        "{:?} must be a relative path to a subagent .yaml file inside the package",
                        member.path
                    ),
                );
                continue;
            }
            agents.push(member);
        }
    }
    Some(StaticCrew {
        mode: mode?,
        process: process?,
        agents,
        extensions: f.extensions,
    })
}

fn protocols(r: &mut Reader, v: &Value, path: &str) -> Vec<ProtocolDecl> {
    let mut out: Vec<ProtocolDecl> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, item) in r.seq(v, path).iter().enumerate() {
        let p = index(path, i);
        let Some(f) = r.fields(item, &p, &["name", "version", "endpoint"]) else {
            continue;
        };
        let Some(name) = r.req_text(&f, "name") else {
            continue;
        };
        let bare = name.strip_prefix("custom/").unwrap_or(&name);
        if PackageName::new(bare).is_err() {
            r.error(
                f.at("name"),
                format!("{name:?} is not a protocol name like a2a or custom/<name>"),
            );
            continue;
        }
        if !seen.insert(name.clone()) {
            r.error(f.at("name"), ShapeError::Duplicate(name.clone()));
        }
        let version = f
            .get("version")
            .and_then(|v| version_req(r, v, &f.at("version")));
        let endpoint = f.get("endpoint").and_then(|e| {
            let at = f.at("endpoint");
            if name != a2a::PROTOCOL {
                r.error(
                    &at,
                    format!("only the a2a protocol takes an endpoint, not {name}"),
                );
                return None;
            }
            a2a_endpoint(r, e, &at)
        });
        out.push(ProtocolDecl {
            name,
            version,
            endpoint,
            extensions: f.extensions,
        });
    }
    out
}

/// `endpoint: {url, binding}` of the a2a protocol: where A2A clients reach
/// the agent, as its Agent Card will say.
fn a2a_endpoint(r: &mut Reader, v: &Value, path: &str) -> Option<a2a::Endpoint> {
    let f = r.fields(v, path, &["url", "binding"])?;
    let url =
        r.req_text_max(&f, "url", a2a::MAX_URL_LEN).and_then(|u| {
            match a2a::EndpointUrl::parse(&u) {
                Ok(url) => Some(url),
                Err(e) => {
                    r.error(f.at("url"), e);
                    None
                }
            }
        });
    let binding = r.required(&f, "binding").and_then(|b| {
        r.one_of(
            b,
            &f.at("binding"),
            &a2a::Binding::NAMES,
            a2a::Binding::from_name,
        )
    });
    Some(a2a::Endpoint {
        url: url?,
        binding: binding?,
        extensions: f.extensions,
    })
}

fn constraints(r: &mut Reader, v: &Value, path: &str) -> Option<Constraints> {
    let f = r.fields(v, path, &["budget", "limits", "sandbox"])?;
    let budget = f.get("budget").and_then(|b| {
        let bf = r.fields(
            b,
            &f.at("budget"),
            &[
                "max_cost_usd",
                "tolerance",
                "input_1m_price",
                "output_1m_price",
            ],
        )?;
        let mut money = |key: &str, max: Option<f64>| -> Option<f64> {
            let v = bf.get(key)?;
            let p = bf.at(key);
            let x = r.f64(v, &p)?;
            let (ok, rule) = match max {
                Some(m) => (x >= 0.0 && x <= m, "must be in [0, 1]"),
                None => (x >= 0.0, "must not be negative"),
            };
            if !ok {
                r.error(
                    &p,
                    ShapeError::OutOfRange {
                        value: x.to_string(),
                        rule,
                    },
                );
                return None;
            }
            Some(x)
        };
        Some(Budget {
            max_cost_usd: money("max_cost_usd", None),
            tolerance: money("tolerance", Some(1.0)),
            input_1m_price: money("input_1m_price", None),
            output_1m_price: money("output_1m_price", None),
            extensions: bf.extensions,
        })
    });
    let limits = f.get("limits").and_then(|l| {
        let lf = r.fields(
            l,
            &f.at("limits"),
            &["max_turns", "max_delegation_depth", "timeout"],
        )?;
        Some(Limits {
            max_turns: r.opt_u64(&lf, "max_turns"),
            max_delegation_depth: r.opt_positive(&lf, "max_delegation_depth"),
            timeout: r.opt_positive(&lf, "timeout"),
            extensions: lf.extensions,
        })
    });
    let sandbox = f.get("sandbox").and_then(|s| {
        let sf = r.fields(
            s,
            &f.at("sandbox"),
            &[
                "disk_quota",
                "max_exec_time",
                "allowed_paths",
                "allowed_urls",
            ],
        )?;
        let allowed_paths = r.opt_string_list(&sf, "allowed_paths");
        for (i, p) in allowed_paths.iter().enumerate() {
            if let Err(why) = super::patterns::check_path_pattern(p) {
                r.error(index(&sf.at("allowed_paths"), i), why);
            }
        }
        let allowed_urls = r.opt_string_list(&sf, "allowed_urls");
        for (i, u) in allowed_urls.iter().enumerate() {
            if let Err(why) = super::patterns::check_url_pattern(u) {
                r.error(index(&sf.at("allowed_urls"), i), why);
            }
        }
        Some(Sandbox {
            disk_quota: r.opt_positive(&sf, "disk_quota"),
            max_exec_time: r.opt_positive(&sf, "max_exec_time"),
            allowed_paths,
            allowed_urls,
            extensions: sf.extensions,
        })
    });
    Some(Constraints {
        budget,
        limits,
        sandbox,
        extensions: f.extensions,
    })
}

fn ui_components(r: &mut Reader, v: &Value, path: &str) -> IndexMap<String, UiComponent> {
    let mut out = IndexMap::new();
    for (name, c) in r.dict(v, path) {
        let p = join(path, name);
        identifier(r, name, &p);
        if let Some(component) = ui_actions(r, c, &p, true) {
            out.insert(name.to_owned(), component);
        }
    }
    out
}

/// `sync_actions` and `agent_actions` (a component, or a tool UI's
/// actions), and a component's `props` schema.
fn ui_actions(r: &mut Reader, v: &Value, path: &str, component: bool) -> Option<UiComponent> {
    let known: &[&str] = if component {
        &["props", "sync_actions", "agent_actions"]
    } else {
        &["sync_actions", "agent_actions"]
    };
    let f = r.fields(v, path, known)?;
    // Checked as a tool's input schema is: it becomes one.
    let props = f.get("props").and_then(|p| {
        crate::json_schema::schema_at(p, &f.at("props"), true, &mut r.regexes, &mut r.diags)
    });
    let mut sync_actions = IndexMap::new();
    if let Some(s) = f.get("sync_actions") {
        let sp = f.at("sync_actions");
        for (name, a) in r.dict(s, &sp) {
            let ap = join(&sp, name);
            let Some(af) = r.fields(a, &ap, &["tool", "params"]) else {
                continue;
            };
            let tool = r.req_text(&af, "tool");
            let params = params(r, &af);
            if let Some(tool) = tool {
                sync_actions.insert(
                    name.to_owned(),
                    SyncAction {
                        tool,
                        params,
                        extensions: af.extensions,
                    },
                );
            }
        }
    }
    let mut agent_actions = IndexMap::new();
    if let Some(a) = f.get("agent_actions") {
        let ap = f.at("agent_actions");
        if let Value::Sequence(_) = a {
            // List form: bare action names, no params.
            for name in r.string_list(a, &ap) {
                if agent_actions.contains_key(&name) {
                    r.error(&ap, ShapeError::Duplicate(name));
                } else {
                    agent_actions.insert(
                        name,
                        AgentAction {
                            params: serde_json::Map::new(),
                            extensions: Extensions::new(),
                        },
                    );
                }
            }
        } else {
            for (name, action) in r.dict(a, &ap) {
                let np = join(&ap, name);
                let Some(af) = r.fields(action, &np, &["params"]) else {
                    continue;
                };
                let params = params(r, &af);
                agent_actions.insert(
                    name.to_owned(),
                    AgentAction {
                        params,
                        extensions: af.extensions,
                    },
                );
            }
        }
    }
    Some(UiComponent {
        props,
        sync_actions,
        agent_actions,
        extensions: f.extensions,
    })
}

fn params(r: &mut Reader, f: &Fields<'_>) -> serde_json::Map<String, Json> {
    let Some(p) = f.get("params") else {
        return serde_json::Map::new();
    };
    let pp = f.at("params");
    let map = json_map(r, p, &pp);
    for (k, v) in &map {
        check_templates(r, v, &join(&pp, k));
    }
    map
}

fn skills(r: &mut Reader, v: &Value, path: &str) -> Vec<SkillRef> {
    let mut out: Vec<SkillRef> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, item) in r.seq(v, path).iter().enumerate() {
        let p = index(path, i);
        let Some(f) = r.fields(item, &p, &["name", "version"]) else {
            continue;
        };
        let Some(name) = r
            .required(&f, "name")
            .and_then(|n| package_name(r, n, &f.at("name")))
        else {
            continue;
        };
        if !seen.insert(name.clone()) {
            r.error(f.at("name"), ShapeError::Duplicate(name.to_string()));
            continue;
        }
        let version = f
            .get("version")
            .and_then(|v| version_req(r, v, &f.at("version")));
        out.push(SkillRef {
            name,
            version,
            extensions: f.extensions,
        });
    }
    out
}
