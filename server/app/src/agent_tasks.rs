//! The registry's tasks as agents ask for them over CLowl and MoltSpeak:
//! search, read (a package or version record), resolve (an agent.lock) and
//! the CAPS list of a published agent. Both protocol endpoints call these,
//! so the two protocols answer the same data; each maps [`TaskError`] to its
//! own error codes. The work itself is the service layer's
//! (the rest of this crate), so HTTP and protocol answers are the same
//! records.
//!
//! Task data arrives as a JSON object (CLowl `body.d`, MoltSpeak
//! `p.params`) and is checked field by field, unknown keys refused, so an
//! error names the field it concerns.

use std::collections::{BTreeMap, BTreeSet};

use agentlang_core::{Kind, PackageName, Version, lockfile::Lockfile};
use serde_json::{Map, Value, json};

use crate::{
    Registry, ServiceError,
    models::ModelName,
    rate_limits::ClientAddr,
    resolve::{MAX_RESOLVE_MODELS, MAX_RESOLVE_TOOLS, ResolveInput},
    search::SearchQuery,
};

/// Search results per page.
pub const PAGE_SIZE: u32 = 20;
/// The last page a search may ask for.
pub const MAX_PAGE: u32 = 500;
/// The longest search query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 256;

/// The tasks the registry performs, as its CAPS message advertises them.
pub const REGISTRY_TASKS: [&str; 4] = ["search", "read", "resolve", "capabilities"];

/// Why a task could not be done. Fields are paths inside the task data.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("{field}: required field is missing")]
    Missing { field: String },
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// A package, version or model the task names does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The requirements cannot all be met; the explanation says why.
    #[error("the tool requirements cannot be met: {0}")]
    Unresolvable(String),
    /// The work ran out of time (a resolution past its deadline).
    #[error("{0}")]
    TimedOut(String),
    /// Never shown to the sender: logged, answered as an internal error.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl TaskError {
    fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The field concerned, when there is one.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Missing { field } | Self::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The one-line message a sender sees; internal causes are logged here
    /// and replaced.
    pub fn public_message(&self) -> String {
        if let Self::Internal(cause) = self {
            tracing::error!(error = format!("{cause:#}"), "agent task failed");
            return "the registry failed to handle this task; it has been logged".to_owned();
        }
        self.to_string()
    }
}

impl TaskError {
    /// A service error, its fields placed under `prefix` (`body.d`).
    pub fn from_service(e: ServiceError, prefix: &str) -> Self {
        let under = |field: &str| {
            if field.is_empty() {
                prefix.to_owned()
            } else {
                format!("{prefix}.{field}")
            }
        };
        match e {
            ServiceError::NotFound(what) => Self::NotFound(what),
            ServiceError::Validation(errors) => match errors.as_slice() {
                [] => Self::invalid(prefix, "invalid task data"),
                [only] => Self::invalid(under(&only.field), only.message.clone()),
                [first, ..] => Self::invalid(
                    under(&first.field),
                    errors
                        .iter()
                        .map(|e| format!("{}: {}", under(&e.field), e.message))
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
            },
            ServiceError::Malformed(message) => Self::invalid(prefix, message),
            ServiceError::Unsatisfiable { explanation, .. } => {
                Self::Unresolvable(explanation.replace('\n', " "))
            }
            ServiceError::ResolveTimeout(ms) => {
                Self::TimedOut(format!("the resolution took longer than {ms} ms"))
            }
            ServiceError::Internal(cause) => Self::Internal(cause),
            other => Self::Internal(anyhow::anyhow!("{other}")),
        }
    }
}

// ---------------------------------------------------------------------------
// Reading the request

// ---------------------------------------------------------------------------
// Reading task data

/// Task data with its path prefix (`body.d`, `p.params`), read once.
struct Data<'a> {
    map: &'a Map<String, Value>,
    prefix: &'a str,
}

impl<'a> Data<'a> {
    fn new(
        map: &'a Map<String, Value>,
        prefix: &'a str,
        known: &[&str],
    ) -> Result<Self, TaskError> {
        let data = Self { map, prefix };
        if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(TaskError::invalid(
                data.path(key),
                format!("unknown field; expected one of {}", known.join(", ")),
            ));
        }
        Ok(data)
    }

    fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, TaskError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(TaskError::invalid(self.path(key), "must be a string")),
        }
    }

    fn str(&self, key: &str) -> Result<&'a str, TaskError> {
        self.opt_str(key)?.ok_or_else(|| TaskError::Missing {
            field: self.path(key),
        })
    }

    fn kind(&self, key: &str) -> Result<Option<Kind>, TaskError> {
        self.opt_str(key)?
            .map(|k| match k {
                "agent" => Ok(Kind::Agent),
                "tool" => Ok(Kind::Tool),
                _ => Err(TaskError::invalid(
                    self.path(key),
                    format!("{k:?} is not a kind; expected agent or tool"),
                )),
            })
            .transpose()
    }
}

// ---------------------------------------------------------------------------
// search

/// `{q, kind?, page?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchTask {
    pub q: String,
    pub kind: Option<Kind>,
    pub page: u32,
}

impl SearchTask {
    pub fn parse(map: &Map<String, Value>, prefix: &str) -> Result<Self, TaskError> {
        let data = Data::new(map, prefix, &["q", "kind", "page"])?;
        // Empty text lists every package, as the HTTP search does.
        let q = data.str("q")?;
        if q.chars().count() > MAX_QUERY_CHARS {
            return Err(TaskError::invalid(
                data.path("q"),
                format!("must be at most {MAX_QUERY_CHARS} characters"),
            ));
        }
        let page = match map.get("page") {
            None | Some(Value::Null) => 1,
            Some(Value::Number(n)) => n
                .as_u64()
                .and_then(|p| u32::try_from(p).ok())
                .filter(|p| (1..=MAX_PAGE).contains(p))
                .ok_or_else(|| {
                    TaskError::invalid(
                        data.path("page"),
                        format!("must be an integer from 1 to {MAX_PAGE}"),
                    )
                })?,
            Some(_) => {
                return Err(TaskError::invalid(data.path("page"), "must be an integer"));
            }
        };
        Ok(Self {
            q: q.to_owned(),
            kind: data.kind("kind")?,
            page,
        })
    }
}

/// `{results: [{kind, name, version, title, description, category,
/// downloads}], total, page, per_page}`, as `GET /api/v1/search` answers.
pub async fn search(
    registry: &Registry,
    task: &SearchTask,
    prefix: &str,
) -> Result<Value, TaskError> {
    let query = SearchQuery {
        q: task.q.clone(),
        kind: task.kind,
        category: None,
        page: task.page,
        per_page: PAGE_SIZE,
    };
    let page = crate::search::search_packages(registry, &query)
        .await
        .map_err(|e| TaskError::from_service(e, prefix))?;
    to_json(&page)
}

fn to_json(value: &impl serde::Serialize) -> Result<Value, TaskError> {
    serde_json::to_value(value).map_err(|e| TaskError::Internal(e.into()))
}

// ---------------------------------------------------------------------------
// read

/// `{kind, name, version?}`: a package with its versions, or one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadTask {
    pub kind: Kind,
    pub name: PackageName,
    pub version: Option<Version>,
}

impl ReadTask {
    pub fn parse(map: &Map<String, Value>, prefix: &str) -> Result<Self, TaskError> {
        let data = Data::new(map, prefix, &["kind", "name", "version"])?;
        let kind = data.kind("kind")?.ok_or_else(|| TaskError::Missing {
            field: data.path("kind"),
        })?;
        let name = PackageName::new(data.str("name")?)
            .map_err(|e| TaskError::invalid(data.path("name"), e.to_string()))?;
        let version = data
            .opt_str("version")?
            .map(|v| {
                Version::parse(v)
                    .map_err(|e| TaskError::invalid(data.path("version"), e.to_string()))
            })
            .transpose()?;
        Ok(Self {
            kind,
            name,
            version,
        })
    }
}

/// A version record, or a package with its versions, as `GET
/// /api/v1/{kind}/{name}[/{version}]` answers.
pub async fn read(registry: &Registry, task: &ReadTask, prefix: &str) -> Result<Value, TaskError> {
    let from_service = |e| TaskError::from_service(e, prefix);
    match &task.version {
        Some(version) => to_json(
            &crate::packages::get_version(registry, task.kind, &task.name, version)
                .await
                .map_err(from_service)?,
        ),
        None => to_json(
            &crate::packages::get_package(registry, task.kind, &task.name)
                .await
                .map_err(from_service)?,
        ),
    }
}

// ---------------------------------------------------------------------------
// resolve

/// `{tools, models?, lock?}`. `tools` is either the agent.yaml list
/// (`[{"name": "web_search", "version": "^1.2.0"}]`) or a map of name to
/// requirement (`{"web_search": "^1.2.0", "web_fetch": null}`); `models` a
/// list of model names; `lock` an existing agent.lock, as YAML text or as
/// its JSON object, whose tool versions are kept while they still fit.
#[derive(Debug, Clone)]
pub struct ResolveTask {
    pub input: ResolveInput,
}

impl ResolveTask {
    pub fn parse(map: &Map<String, Value>, prefix: &str) -> Result<Self, TaskError> {
        let data = Data::new(map, prefix, &["tools", "models", "lock"])?;
        let tools_path = data.path("tools");
        let mut requirements = BTreeMap::new();
        let mut add = |path: String, name: &str, req: Option<&Value>| -> Result<(), TaskError> {
            let name = PackageName::new(name)
                .map_err(|e| TaskError::invalid(path.clone(), e.to_string()))?;
            let req = match req {
                None | Some(Value::Null) => None,
                Some(Value::String(r)) => Some(
                    agentlang_core::names::parse_requirement(r)
                        .map_err(|e| TaskError::invalid(path.clone(), e.to_string()))?,
                ),
                Some(_) => {
                    return Err(TaskError::invalid(path, "the requirement must be a string"));
                }
            };
            if requirements.insert(name.clone(), req).is_some() {
                return Err(TaskError::invalid(path, format!("{name} is named twice")));
            }
            Ok(())
        };
        let too_many = |field: String, limit: usize| {
            TaskError::invalid(field, format!("at most {limit} entries are allowed"))
        };
        let count = match map.get("tools") {
            Some(Value::Object(tools)) => tools.len(),
            Some(Value::Array(tools)) => tools.len(),
            _ => 0,
        };
        if count > MAX_RESOLVE_TOOLS {
            return Err(too_many(tools_path, MAX_RESOLVE_TOOLS));
        }
        if let Some(Value::Array(models)) = map.get("models")
            && models.len() > MAX_RESOLVE_MODELS
        {
            return Err(too_many(data.path("models"), MAX_RESOLVE_MODELS));
        }
        match map.get("tools") {
            None => return Err(TaskError::Missing { field: tools_path }),
            Some(Value::Object(tools)) => {
                for (name, req) in tools {
                    add(format!("{tools_path}.{name}"), name, Some(req))?;
                }
            }
            Some(Value::Array(tools)) => {
                for (i, tool) in tools.iter().enumerate() {
                    let path = format!("{tools_path}[{i}]");
                    let Value::Object(tool) = tool else {
                        return Err(TaskError::invalid(path, "must be {name, version?}"));
                    };
                    let item = Data::new(tool, &path, &["name", "version"])?;
                    add(path.clone(), item.str("name")?, tool.get("version"))?;
                }
            }
            Some(_) => {
                return Err(TaskError::invalid(
                    tools_path,
                    "must be a list of {name, version?} or a map of name to requirement",
                ));
            }
        }
        let models = match map.get("models") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let path = format!("{}[{i}]", data.path("models"));
                    m.as_str()
                        .ok_or_else(|| TaskError::invalid(path.clone(), "must be a string"))
                        .and_then(|m| ModelName::parse(m).map_err(|e| TaskError::invalid(path, e)))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(TaskError::invalid(
                    data.path("models"),
                    "must be a list of model names",
                ));
            }
        };
        let lock_path = data.path("lock");
        let lock = match map.get("lock") {
            None | Some(Value::Null) => None,
            Some(Value::String(yaml)) => Some(
                Lockfile::from_slice(yaml.as_bytes())
                    .map_err(|e| TaskError::invalid(lock_path, e.to_string()))?,
            ),
            Some(object @ Value::Object(_)) => Some(
                serde_json::from_value::<Lockfile>(object.clone())
                    .map_err(|e| TaskError::invalid(lock_path, e.to_string()))?,
            ),
            Some(_) => {
                return Err(TaskError::invalid(
                    lock_path,
                    "must be agent.lock as YAML text or as a JSON object",
                ));
            }
        };
        Ok(Self {
            input: ResolveInput {
                tools: requirements,
                // The agent-protocol task names tools and models only.
                skills: BTreeMap::new(),
                models: models.iter().map(|m| m.as_str().to_owned()).collect(),
                lock,
                exclude_newer: None,
            },
        })
    }
}

/// Resolves into an agent.lock: `{"lockfile": <YAML text>, "lock": <the
/// same as JSON>}`, by the resolver `POST /api/v1/resolve` uses.
pub async fn resolve(
    registry: &Registry,
    client: &ClientAddr,
    task: &ResolveTask,
    prefix: &str,
) -> Result<Value, TaskError> {
    let lock = crate::resolve::resolve_lock(registry, client, task.input.clone())
        .await
        .map_err(|e| TaskError::from_service(e, prefix))?;
    let yaml = lock.to_yaml().map_err(|e| TaskError::Internal(e.into()))?;
    Ok(json!({"lockfile": yaml, "lock": to_json(&lock)?}))
}

// ---------------------------------------------------------------------------
// capabilities of a published agent

/// What a published agent's CAPS message advertises, from its stored spec:
/// `tool:<name>` for each tool it declares (registry, HTTP and bash tools),
/// `mcp:<server>` for each MCP server and `protocol:<name>` for each
/// protocol, sorted and without repeats.
pub fn agent_supports(spec: &Value) -> Vec<String> {
    let mut supports = BTreeSet::new();
    let names_in_list = |key: &str| {
        spec.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|item| item.get("name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let keys_of = |key: &str| {
        spec.get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|m| m.keys().cloned())
            .collect::<Vec<_>>()
    };
    for tool in names_in_list("tools")
        .into_iter()
        .chain(keys_of("http_tools"))
        .chain(keys_of("bash_tools"))
    {
        supports.insert(format!("tool:{tool}"));
    }
    for server in keys_of("mcp_servers") {
        supports.insert(format!("mcp:{server}"));
    }
    for protocol in names_in_list("protocols") {
        supports.insert(format!("protocol:{protocol}"));
    }
    supports.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn search_data_is_checked_field_by_field() {
        let task = SearchTask::parse(
            &map(json!({"q": "web", "kind": "tool", "page": 2})),
            "body.d",
        )
        .unwrap();
        assert_eq!(
            task,
            SearchTask {
                q: "web".into(),
                kind: Some(Kind::Tool),
                page: 2
            }
        );
        let err = SearchTask::parse(&map(json!({})), "body.d").unwrap_err();
        assert!(
            matches!(err, TaskError::Missing { ref field } if field == "body.d.q"),
            "{err}"
        );
        let err = SearchTask::parse(&map(json!({"q": "x", "page": 0})), "p.params").unwrap_err();
        assert_eq!(err.field(), Some("p.params.page"));
        let err = SearchTask::parse(&map(json!({"q": "x", "kind": "skill"})), "d").unwrap_err();
        assert_eq!(
            err.to_string(),
            "d.kind: \"skill\" is not a kind; expected agent or tool"
        );
        let err = SearchTask::parse(&map(json!({"q": "x", "qq": 1})), "d").unwrap_err();
        assert_eq!(err.field(), Some("d.qq"));
    }

    #[test]
    fn read_data_needs_a_kind_and_a_valid_name() {
        let task = ReadTask::parse(
            &map(json!({"kind": "agent", "name": "research-assistant", "version": "1.0.0"})),
            "d",
        )
        .unwrap();
        assert_eq!(task.version, Some(Version::parse("1.0.0").unwrap()));
        let err = ReadTask::parse(&map(json!({"name": "x"})), "d").unwrap_err();
        assert_eq!(err.field(), Some("d.kind"));
        let err =
            ReadTask::parse(&map(json!({"kind": "tool", "name": "9lives"})), "d").unwrap_err();
        assert_eq!(err.field(), Some("d.name"));
        let err = ReadTask::parse(
            &map(json!({"kind": "tool", "name": "x", "version": "1.0"})),
            "d",
        )
        .unwrap_err();
        assert_eq!(err.field(), Some("d.version"));
    }

    #[test]
    fn resolve_data_takes_both_tool_forms_and_a_lock() {
        let list = ResolveTask::parse(
            &map(json!({"tools": [{"name": "web_search", "version": "^1.2"}, {"name": "web_fetch"}]})),
            "d",
        )
        .unwrap();
        let by_map = ResolveTask::parse(
            &map(json!({"tools": {"web_search": "^1.2", "web_fetch": null}})),
            "d",
        )
        .unwrap();
        assert_eq!(list.input.tools, by_map.input.tools);
        assert_eq!(list.input.tools.len(), 2);

        let lock = "version: \"1\"\nresolved_at: \"2025-01-29T10:30:00Z\"\ntools:\n  web_search:\n    version: 1.2.0\n    hash: sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n";
        let pinned = ResolveTask::parse(
            &map(json!({"tools": {"web_search": "^1"}, "lock": lock, "models": ["gpt-4o"]})),
            "d",
        )
        .unwrap();
        assert_eq!(pinned.input.lock.unwrap().tool_pins().len(), 1);
        assert_eq!(pinned.input.models, ["gpt-4o"]);

        let err = ResolveTask::parse(&map(json!({"tools": {"x": "not a req"}})), "d").unwrap_err();
        assert_eq!(err.field(), Some("d.tools.x"));
        let err = ResolveTask::parse(&map(json!({"tools": [{"name": "x"}, {"name": "x"}]})), "d")
            .unwrap_err();
        assert!(err.to_string().contains("named twice"), "{err}");
        let err =
            ResolveTask::parse(&map(json!({"tools": {}, "lock": "tools: 3"})), "d").unwrap_err();
        assert_eq!(err.field(), Some("d.lock"));
        let err = ResolveTask::parse(&map(json!({})), "d").unwrap_err();
        assert!(matches!(err, TaskError::Missing { .. }));
    }

    #[test]
    fn agent_caps_come_from_tools_servers_and_protocols() {
        let spec = json!({
            "name": "research-assistant",
            "tools": [{"name": "web_search", "version": "^1.2.0"}, {"name": "web_fetch"}],
            "http_tools": {"weather": {}},
            "mcp_servers": {"github": {}},
            "protocols": [{"name": "a2a", "version": "^1.0.0"}, {"name": "custom/acme-sync"}],
        });
        assert_eq!(
            agent_supports(&spec),
            [
                "mcp:github",
                "protocol:a2a",
                "protocol:custom/acme-sync",
                "tool:weather",
                "tool:web_fetch",
                "tool:web_search"
            ]
        );
        assert!(agent_supports(&json!({"name": "bare"})).is_empty());
    }
}
