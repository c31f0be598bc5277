//! Typed `p` of the `task`, `tool` and `consent` operations, shaped as the
//! seed's examples show them. Parsing is the validation: every refusal
//! names the path it is about (`p.callback.on_complete`), missing members
//! are `E_MISSING_FIELD`, wrong JSON types and unknown members `E_SCHEMA`,
//! bad values `E_INVALID_PARAM`.

use serde_json::{Map, Value};

use super::MoltError;

/// Bytes of an id (`task_id`) or a short name (`type`, `tool`).
pub const MAX_NAME_BYTES: usize = 128;
/// Bytes of free text (`description`, `purpose`, `human`).
pub const MAX_TEXT_BYTES: usize = 4096;
/// Entries of `data_types`.
pub const MAX_DATA_TYPES: usize = 32;
/// Longest consent: a year.
pub const MAX_DURATION_MS: u64 = 365 * 24 * 3_600_000;

type Result<T> = std::result::Result<T, MoltError>;

fn field(key: &str) -> String {
    format!("p.{key}")
}

fn no_unknown(p: &Map<String, Value>, at: &str, allowed: &[&str]) -> Result<()> {
    match p.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(extra) => Err(MoltError::schema(
            &format!("{at}.{extra}"),
            format!("unknown member; allowed: {}", allowed.join(", ")),
        )),
        None => Ok(()),
    }
}

fn opt_str<'a>(p: &'a Map<String, Value>, key: &str, max: usize) -> Result<Option<&'a str>> {
    match p.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if !s.is_empty() && s.len() <= max => Ok(Some(s)),
        Some(Value::String(_)) => Err(MoltError::invalid(
            &field(key),
            format!("must be 1 to {max} bytes"),
        )),
        Some(_) => Err(MoltError::schema(&field(key), "must be a string")),
    }
}

fn req_str<'a>(p: &'a Map<String, Value>, key: &str, max: usize) -> Result<&'a str> {
    opt_str(p, key, max)?.ok_or_else(|| MoltError::missing(&field(key)))
}

fn opt_object(p: &Map<String, Value>, key: &str) -> Result<Option<Map<String, Value>>> {
    match p.get(key) {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(_) => Err(MoltError::schema(&field(key), "must be an object")),
    }
}

fn opt_u64(p: &Map<String, Value>, key: &str, at: &str) -> Result<Option<u64>> {
    match p.get(key) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            MoltError::schema(&format!("{at}.{key}"), "must be a non-negative integer")
        }),
    }
}

fn opt_bool(p: &Map<String, Value>, key: &str, at: &str) -> Result<Option<bool>> {
    match p.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(MoltError::schema(
            &format!("{at}.{key}"),
            "must be true or false",
        )),
    }
}

fn action<'a>(p: &'a Map<String, Value>, allowed: &[&str]) -> Result<&'a str> {
    let action = req_str(p, "action", MAX_NAME_BYTES)?;
    if allowed.contains(&action) {
        Ok(action)
    } else {
        Err(MoltError::invalid(
            "p.action",
            format!("unknown action {action:?}; one of {}", allowed.join(", ")),
        ))
    }
}

/// `p.action` of a `task`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskAction {
    Create,
    Status,
    Cancel,
}

/// `p.priority`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    Low,
    Normal,
    High,
    Urgent,
}

impl Priority {
    pub const NAMES: [&str; 4] = ["low", "normal", "high", "urgent"];
}

/// `p.callback`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Callback {
    pub on_complete: bool,
    pub on_progress: bool,
    pub progress_interval_ms: Option<u64>,
}

/// `p` of a `task`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPayload {
    pub action: TaskAction,
    pub task_id: String,
    /// Required to create.
    pub task_type: Option<String>,
    pub description: Option<String>,
    pub constraints: Option<Map<String, Value>>,
    /// Unix ms.
    pub deadline: Option<u64>,
    pub priority: Option<Priority>,
    pub callback: Option<Callback>,
    pub input: Option<Map<String, Value>>,
    pub output_format: Option<Map<String, Value>>,
}

impl TaskPayload {
    pub fn parse(p: &Map<String, Value>) -> Result<Self> {
        no_unknown(
            p,
            "p",
            &[
                "action",
                "task_id",
                "type",
                "description",
                "constraints",
                "deadline",
                "priority",
                "callback",
                "input",
                "output_format",
            ],
        )?;
        let action = match action(p, &["create", "status", "cancel"])? {
            "create" => TaskAction::Create,
            "status" => TaskAction::Status,
            _ => TaskAction::Cancel,
        };
        let task_id = req_str(p, "task_id", MAX_NAME_BYTES)?.to_owned();
        let task_type = match action {
            TaskAction::Create => Some(req_str(p, "type", MAX_NAME_BYTES)?.to_owned()),
            _ => opt_str(p, "type", MAX_NAME_BYTES)?.map(str::to_owned),
        };
        let priority = match opt_str(p, "priority", MAX_NAME_BYTES)? {
            None => None,
            Some("low") => Some(Priority::Low),
            Some("normal") => Some(Priority::Normal),
            Some("high") => Some(Priority::High),
            Some("urgent") => Some(Priority::Urgent),
            Some(other) => {
                return Err(MoltError::invalid(
                    "p.priority",
                    format!(
                        "unknown priority {other:?}; one of {}",
                        Priority::NAMES.join(", ")
                    ),
                ));
            }
        };
        let callback = match p.get("callback") {
            None => None,
            Some(Value::Object(c)) => {
                no_unknown(
                    c,
                    "p.callback",
                    &["on_complete", "on_progress", "progress_interval_ms"],
                )?;
                Some(Callback {
                    on_complete: opt_bool(c, "on_complete", "p.callback")?.unwrap_or(false),
                    on_progress: opt_bool(c, "on_progress", "p.callback")?.unwrap_or(false),
                    progress_interval_ms: opt_u64(c, "progress_interval_ms", "p.callback")?,
                })
            }
            Some(_) => return Err(MoltError::schema("p.callback", "must be an object")),
        };
        let output_format = opt_object(p, "output_format")?;
        if let Some(format) = &output_format {
            for key in ["type", "schema"] {
                if format.get(key).is_some_and(|v| !v.is_string()) {
                    return Err(MoltError::schema(
                        &format!("p.output_format.{key}"),
                        "must be a string",
                    ));
                }
            }
        }
        Ok(Self {
            action,
            task_id,
            task_type,
            description: opt_str(p, "description", MAX_TEXT_BYTES)?.map(str::to_owned),
            constraints: opt_object(p, "constraints")?,
            deadline: opt_u64(p, "deadline", "p")?,
            priority,
            callback,
            input: opt_object(p, "input")?,
            output_format,
        })
    }
}

/// `p` of a `tool`.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolPayload {
    List,
    Invoke {
        tool: String,
        input: Map<String, Value>,
    },
}

impl ToolPayload {
    pub fn parse(p: &Map<String, Value>) -> Result<Self> {
        no_unknown(p, "p", &["action", "tool", "input"])?;
        match action(p, &["invoke", "list"])? {
            "list" => Ok(Self::List),
            _ => Ok(Self::Invoke {
                tool: req_str(p, "tool", MAX_NAME_BYTES)?.to_owned(),
                input: opt_object(p, "input")?.unwrap_or_default(),
            }),
        }
    }
}

/// `p.duration` of a consent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Duration {
    /// As long as the session the consent was asked in.
    Session,
    Millis(u64),
}

impl Duration {
    /// `session` or `<n>m`, `<n>h`, `<n>d` (n ≥ 1, at most a year).
    pub fn parse(s: &str) -> Result<Self> {
        const FIELD: &str = "p.duration";
        if s == "session" {
            return Ok(Self::Session);
        }
        let bad = || {
            MoltError::invalid(
                FIELD,
                format!("{s:?} is not \"session\" or <n>m, <n>h, <n>d"),
            )
        };
        let unit = match s.chars().last() {
            Some('m') => 60_000,
            Some('h') => 3_600_000,
            Some('d') => 86_400_000,
            _ => return Err(bad()),
        };
        let n: u64 = s[..s.len() - 1]
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(bad)?;
        match n.checked_mul(unit) {
            Some(ms) if ms <= MAX_DURATION_MS => Ok(Self::Millis(ms)),
            _ => Err(MoltError::invalid(FIELD, "at most a year (365d)")),
        }
    }
}

/// `p` of a `consent`.
#[derive(Debug, Clone, PartialEq)]
pub enum ConsentPayload {
    Request {
        data_types: Vec<String>,
        purpose: String,
        duration: Duration,
        human: String,
    },
    /// Withdraws a token this registry issued.
    Revoke { proof: String },
}

impl ConsentPayload {
    pub fn parse(p: &Map<String, Value>) -> Result<Self> {
        match action(p, &["request", "revoke"])? {
            "revoke" => {
                no_unknown(
                    p,
                    "p",
                    &["action", "proof", "data_types", "purpose", "human"],
                )?;
                Ok(Self::Revoke {
                    proof: req_str(p, "proof", super::consent::MAX_TOKEN_BYTES)?.to_owned(),
                })
            }
            _ => {
                no_unknown(
                    p,
                    "p",
                    &["action", "data_types", "purpose", "duration", "human"],
                )?;
                let data_types = match p.get("data_types") {
                    None => return Err(MoltError::missing("p.data_types")),
                    Some(Value::Array(items)) => items,
                    Some(_) => return Err(MoltError::schema("p.data_types", "must be an array")),
                };
                if data_types.is_empty() || data_types.len() > MAX_DATA_TYPES {
                    return Err(MoltError::invalid(
                        "p.data_types",
                        format!("must list 1 to {MAX_DATA_TYPES} data types"),
                    ));
                }
                let data_types = data_types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| match t {
                        Value::String(s) if !s.is_empty() && s.len() <= MAX_NAME_BYTES => {
                            Ok(s.clone())
                        }
                        _ => Err(MoltError::invalid(
                            &format!("p.data_types[{i}]"),
                            format!("must be a string of 1 to {MAX_NAME_BYTES} bytes"),
                        )),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Self::Request {
                    data_types,
                    purpose: req_str(p, "purpose", MAX_TEXT_BYTES)?.to_owned(),
                    duration: Duration::parse(req_str(p, "duration", MAX_NAME_BYTES)?)?,
                    human: req_str(p, "human", MAX_TEXT_BYTES)?.to_owned(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::moltspeak::ErrorCode;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        }
    }

    fn err(r: Result<impl std::fmt::Debug>) -> (ErrorCode, String) {
        let e = r.unwrap_err();
        (e.code, e.field.unwrap())
    }

    #[test]
    fn tasks_parse_as_the_seed_writes_them() {
        let t = TaskPayload::parse(&map(json!({"action": "create", "task_id": "t-1",
            "type": "search", "deadline": 1, "priority": "high",
            "callback": {"on_complete": true, "on_progress": true, "progress_interval_ms": 300000},
            "output_format": {"type": "structured", "schema": "x", "include": ["a"]}})))
        .unwrap();
        assert_eq!(t.priority, Some(Priority::High));
        assert!(t.callback.unwrap().on_complete);
        assert_eq!(
            err(TaskPayload::parse(&map(
                json!({"action": "create", "task_id": "t", "type": "x", "callback": {"on_complete": "yes"}})
            ))),
            (ErrorCode::Schema, "p.callback.on_complete".into())
        );
        assert_eq!(
            err(TaskPayload::parse(&map(
                json!({"action": "create", "task_id": "t"})
            ))),
            (ErrorCode::MissingField, "p.type".into())
        );
        assert_eq!(
            err(TaskPayload::parse(&map(
                json!({"action": "fly", "task_id": "t"})
            ))),
            (ErrorCode::InvalidParam, "p.action".into())
        );
    }

    #[test]
    fn consent_durations() {
        assert_eq!(Duration::parse("1h").unwrap(), Duration::Millis(3_600_000));
        assert_eq!(Duration::parse("session").unwrap(), Duration::Session);
        for bad in ["0m", "h", "10y", "366d", "-1d"] {
            assert!(Duration::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            err(ConsentPayload::parse(&map(
                json!({"action": "request", "data_types": ["email", 3], "purpose": "p", "duration": "1h", "human": "h"})
            ))),
            (ErrorCode::InvalidParam, "p.data_types[1]".into())
        );
    }
}
