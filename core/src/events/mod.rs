//! The AgentLang event format: what runtimes emit for observability,
//! debugging and session replay, and what any compatible viewer reads.
//!
//! The contract is a JSON Schema ([`SCHEMA`], `core/schemas/events.schema.json`,
//! also served by the registry): six event types with their key fields,
//! `tool.result` with an optional `error`, and extra fields only under `x-`
//! names. [`parse`] reads a log in any of three shapes (JSON lines, a JSON
//! array, or the spec's YAML `events:` list), checks every event against
//! the schema and reports every problem with the event's index and field
//! (`events[3].duration_ms`). [`check`] then checks across events: every
//! `tool.result` answers an earlier `tool.call` by `call_id` (once), call
//! ids are unique, timestamps never go backwards for one agent, and, given
//! the agent package, tools called are declared and delegations go to
//! known agents. [`timeline::Timeline`] lays a log out for replay, one lane
//! per agent; the CLI and the catalog's `/replay` page both render it.
//!
//! Untrusted input: the byte and event counts are bounded by [`Limits`],
//! JSON nesting by `serde_json`'s recursion limit, YAML by
//! [`crate::yaml::YamlLimits`]; every check is linear in the number of
//! events (hash maps, one pass), and each event is checked as it is read,
//! so a log is never held twice. Problems are capped per log
//! ([`crate::diagnostics::MAX_DIAGNOSTICS`], then "and N more").

pub mod timeline;

use std::{
    collections::{HashMap, HashSet},
    sync::OnceLock,
};

use jsonschema::{Validator, error::ValidationErrorKind, paths::LocationSegment};
use serde_json::Value as Json;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

use crate::{
    diagnostics::{Diagnostics, index, join},
    names::normalize,
    package::AgentPackage,
    rules::Rule,
    yaml::{YamlLimits, parse_value},
};

/// The event format's JSON Schema (draft 2020-12), as committed.
pub const SCHEMA: &str = include_str!("../../schemas/events.schema.json");

/// The compiled schema, built once per process.
fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Json =
            serde_json::from_str(SCHEMA).expect("the committed events schema is JSON");
        jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .expect("the committed events schema compiles")
    })
}

/// Bounds on one log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_bytes: usize,
    pub max_events: usize,
}

impl Default for Limits {
    /// Generous for a file on disk; the registry's upload uses tighter ones.
    fn default() -> Self {
        Self {
            max_bytes: 64 * 1024 * 1024,
            max_events: 1_000_000,
        }
    }
}

/// The six event types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum EventType {
    #[serde(rename = "agent.think")]
    Think,
    #[serde(rename = "tool.call")]
    ToolCall,
    #[serde(rename = "tool.result")]
    ToolResult,
    #[serde(rename = "agent.delegate")]
    Delegate,
    #[serde(rename = "agent.message")]
    Message,
    #[serde(rename = "context.compact")]
    Compact,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Think => "agent.think",
            EventType::ToolCall => "tool.call",
            EventType::ToolResult => "tool.result",
            EventType::Delegate => "agent.delegate",
            EventType::Message => "agent.message",
            EventType::Compact => "context.compact",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "agent.think" => EventType::Think,
            "tool.call" => EventType::ToolCall,
            "tool.result" => EventType::ToolResult,
            "agent.delegate" => EventType::Delegate,
            "agent.message" => EventType::Message,
            "context.compact" => EventType::Compact,
            _ => return None,
        })
    }
}

/// What happened, by type. Field values have passed the schema.
#[derive(Debug, Clone, PartialEq)]
pub enum EventBody {
    Think {
        agent_id: String,
        content: String,
    },
    ToolCall {
        agent_id: String,
        tool: String,
        input: Option<Json>,
        call_id: String,
    },
    ToolResult {
        call_id: String,
        agent_id: Option<String>,
        output: Option<Json>,
        duration_ms: Option<u64>,
        /// The error's message (a string error, or an object's `message`).
        error: Option<String>,
    },
    Delegate {
        from: String,
        to: String,
        task: String,
    },
    Message {
        agent_id: String,
        role: String,
        content: String,
    },
    Compact {
        agent_id: Option<String>,
        strategy: String,
        tokens_before: u64,
        tokens_after: u64,
    },
}

/// One event of a log.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub timestamp: OffsetDateTime,
    /// As written, for display.
    pub timestamp_text: String,
    pub body: EventBody,
}

impl Event {
    pub fn event_type(&self) -> EventType {
        match self.body {
            EventBody::Think { .. } => EventType::Think,
            EventBody::ToolCall { .. } => EventType::ToolCall,
            EventBody::ToolResult { .. } => EventType::ToolResult,
            EventBody::Delegate { .. } => EventType::Delegate,
            EventBody::Message { .. } => EventType::Message,
            EventBody::Compact { .. } => EventType::Compact,
        }
    }

    /// The agent the event belongs to, when it names one itself (a
    /// delegation belongs to its `from`).
    pub fn own_agent(&self) -> Option<&str> {
        match &self.body {
            EventBody::Think { agent_id, .. }
            | EventBody::ToolCall { agent_id, .. }
            | EventBody::Message { agent_id, .. } => Some(agent_id),
            EventBody::ToolResult { agent_id, .. } | EventBody::Compact { agent_id, .. } => {
                agent_id.as_deref()
            }
            EventBody::Delegate { from, .. } => Some(from),
        }
    }
}

/// A parsed log's schema-valid events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventLog {
    pub events: Vec<Event>,
    /// Where each event stood in the log (`events[i]` of the file), which
    /// differs from its place in `events` once an event is left out.
    positions: Vec<usize>,
    /// The `call_id`s of `tool.call`s left out for breaking the schema:
    /// a result answering one is no orphan (the call's problem is said).
    broken_calls: HashSet<String>,
}

impl EventLog {
    /// The path of `events[i]` in the log as written.
    pub fn path_of(&self, i: usize) -> String {
        event_path(self.positions.get(i).copied().unwrap_or(i))
    }
}

/// The path of event `i`.
pub fn event_path(i: usize) -> String {
    index("events", i)
}

/// Reads events one at a time as they are parsed, so a log is never held
/// twice (as JSON values and as events) and a bad line costs its
/// diagnostic, kept or only counted, never more.
struct Events<'l> {
    limits: &'l Limits,
    validator: &'static Validator,
    d: Diagnostics,
    events: Vec<Event>,
    positions: Vec<usize>,
    broken_calls: HashSet<String>,
    /// Events seen, good or bad: the next one's index.
    seen: usize,
}

impl Events<'_> {
    /// Room for one more event? Reports the limit the first time it is hit.
    fn admit(&mut self) -> bool {
        if self.seen < self.limits.max_events {
            return true;
        }
        // First, so the cap on problems never hides why reading stopped.
        let mut d = Diagnostics::new();
        d.push(
            "events",
            format!(
                "the log holds more than {0} events; at most {0} are accepted",
                self.limits.max_events
            ),
        );
        d.extend(std::mem::take(&mut self.d));
        self.d = d;
        false
    }

    /// Checks one event against the schema and keeps its typed form.
    fn take(&mut self, v: Json) {
        let i = self.seen;
        self.seen += 1;
        let path = event_path(i);
        if !self.validator.is_valid(&v) {
            if v.get("type").and_then(Json::as_str) == Some("tool.call")
                && let Some(id) = v.get("call_id").and_then(Json::as_str)
            {
                self.broken_calls.insert(id.to_owned());
            }
            for error in self.validator.iter_errors(&v) {
                self.d.push_with(|| {
                    let segments: Vec<String> = error
                        .instance_path()
                        .iter()
                        .map(|s| match s {
                            LocationSegment::Property(p) => p.to_string(),
                            LocationSegment::Index(i) => i.to_string(),
                        })
                        .collect();
                    // The one `anyOf` of the schema, said as the rule it is.
                    let message = if matches!(error.kind(), ValidationErrorKind::AnyOf { .. }) {
                        "a tool.result needs `output` or `error`".to_owned()
                    } else {
                        error.to_string()
                    };
                    (schema_path(&path, &segments), message)
                });
            }
            return;
        }
        if let Some(event) = typed(v, &path, &mut self.d) {
            self.events.push(event);
            self.positions.push(i);
        }
    }

    /// A line or element that is not JSON at all: still event `i`.
    fn unreadable(&mut self, message: impl FnOnce() -> String) {
        let path = event_path(self.seen);
        self.seen += 1;
        self.d.push_with(|| (path, message()));
    }

    /// The good events, and every problem found reading them.
    fn finish(self) -> (EventLog, Diagnostics) {
        let log = EventLog {
            events: self.events,
            positions: self.positions,
            broken_calls: self.broken_calls,
        };
        (log, self.d)
    }
}

/// A JSON array's elements handed to [`Events::take`] as they are parsed;
/// stops (with an error) at the event limit.
struct EachElement<'a, 'l>(&'a mut Events<'l>);

impl<'de> serde::de::DeserializeSeed<'de> for EachElement<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for EachElement<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON array of events")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(v) = seq.next_element::<Json>()? {
            if !self.0.admit() {
                return Err(serde::de::Error::custom(TOO_MANY));
            }
            self.0.take(v);
        }
        Ok(())
    }
}

/// The marker [`EachElement`] stops a JSON array with.
const TOO_MANY: &str = "too many events";

fn schema_path(base: &str, segments: &[String]) -> String {
    segments.iter().fold(base.to_owned(), |p, s| {
        if s.chars().all(|c| c.is_ascii_digit()) {
            format!("{p}[{s}]")
        } else {
            join(&p, s)
        }
    })
}

fn text(v: &Json, key: &str) -> String {
    v.get(key)
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn opt_text(v: &Json, key: &str) -> Option<String> {
    v.get(key).and_then(Json::as_str).map(str::to_owned)
}

fn count(v: &Json, key: &str) -> u64 {
    v.get(key).and_then(Json::as_u64).unwrap_or_default()
}

/// Takes a member out of an event, so its value is not copied.
fn take_member(v: &mut Json, key: &str) -> Option<Json> {
    v.as_object_mut().and_then(|o| o.remove(key))
}

/// Builds the typed event from a schema-valid value; per-event rules the
/// schema cannot say go to `d`.
fn typed(mut v: Json, path: &str, d: &mut Diagnostics) -> Option<Event> {
    let timestamp_text = text(&v, "timestamp");
    let timestamp = match OffsetDateTime::parse(&timestamp_text, &Rfc3339) {
        Ok(t) => t,
        Err(_) => {
            d.push(
                join(path, "timestamp"),
                format!(
                    "{timestamp_text:?} is not an RFC 3339 date-time like 2025-01-29T10:00:00Z"
                ),
            );
            return None;
        }
    };
    let kind = EventType::parse(v.get("type").and_then(Json::as_str).unwrap_or_default())?;
    let body = match kind {
        EventType::Think => EventBody::Think {
            agent_id: text(&v, "agent_id"),
            content: text(&v, "content"),
        },
        EventType::ToolCall => EventBody::ToolCall {
            agent_id: text(&v, "agent_id"),
            tool: text(&v, "tool"),
            input: take_member(&mut v, "input"),
            call_id: text(&v, "call_id"),
        },
        EventType::ToolResult => {
            let error = v.get("error").map(|e| match e {
                Json::String(s) => s.clone(),
                other => text(other, "message"),
            });
            // The schema holds that one of the two is there.
            let output = take_member(&mut v, "output");
            EventBody::ToolResult {
                call_id: text(&v, "call_id"),
                agent_id: opt_text(&v, "agent_id"),
                output,
                duration_ms: v.get("duration_ms").and_then(Json::as_u64),
                error,
            }
        }
        EventType::Delegate => EventBody::Delegate {
            from: text(&v, "from"),
            to: text(&v, "to"),
            task: text(&v, "task"),
        },
        EventType::Message => EventBody::Message {
            agent_id: text(&v, "agent_id"),
            role: text(&v, "role"),
            content: text(&v, "content"),
        },
        EventType::Compact => {
            let (before, after) = (count(&v, "tokens_before"), count(&v, "tokens_after"));
            if after > before {
                d.push(
                    join(path, "tokens_after"),
                    format!("{after} is more than tokens_before ({before}): a compaction shrinks the context"),
                );
            }
            EventBody::Compact {
                agent_id: opt_text(&v, "agent_id"),
                strategy: text(&v, "strategy"),
                tokens_before: before,
                tokens_after: after,
            }
        }
    };
    Some(Event {
        timestamp,
        timestamp_text,
        body,
    })
}

/// Lines before `trimmed` in `text` (which ends with it).
fn skipped_lines(text: &str, trimmed: &str) -> usize {
    text[..text.len() - trimmed.len()].matches('\n').count()
}

/// Where each event of a JSON-lines log is: `lines[i]` is the 1-based line
/// of `events[i]` (blank lines hold no event). `None` for a JSON array or
/// YAML, whose events have no line of their own.
pub fn line_numbers(bytes: &[u8]) -> Option<Vec<usize>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if !trimmed.starts_with('{') {
        return None;
    }
    let skipped = skipped_lines(text, trimmed);
    Some(
        trimmed
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(n, _)| skipped + n + 1)
            .collect(),
    )
}

/// `problems` with each `events[i]` path said as the line it is on
/// (`line 4` or `line 4, duration_ms`), for people reading a JSON-lines
/// log in an editor; the paths stay `events[i]` for machines.
pub fn on_lines(problems: &Diagnostics, lines: &[usize]) -> Vec<String> {
    problems
        .iter()
        .map(|p| {
            let at = p
                .path
                .strip_prefix("events[")
                .and_then(|rest| rest.split_once(']'))
                .and_then(|(n, rest)| Some((lines.get(n.parse::<usize>().ok()?)?, rest)));
            let rule = p.rule.map(|r| format!(" [{r}]")).unwrap_or_default();
            match at {
                Some((line, "")) => format!("line {line}: {}{rule}", p.message),
                Some((line, rest)) => {
                    let field = rest.strip_prefix('.').unwrap_or(rest);
                    format!("line {line}, {field}: {}{rule}", p.message)
                }
                None => p.to_string(),
            }
        })
        .chain(problems.more())
        .collect()
}

/// Reads a log in whichever of the three shapes the bytes are in (a JSON
/// array, JSON lines, or YAML: a list, or a mapping with an `events:`
/// list) and checks every event against the schema as it is read. Every
/// problem is reported (up to the cap of [`Diagnostics`], the rest
/// counted), each at `events[i]` or one of its fields; a line that is not
/// JSON is event `i` too, so the event limit bounds the work on any input.
pub fn parse(bytes: &[u8], limits: &Limits) -> Result<EventLog, Diagnostics> {
    match read(bytes, limits) {
        (log, d) if d.is_empty() => Ok(log),
        (_, d) => Err(d),
    }
}

/// [`parse`], keeping what it can: the schema-valid events (each at its
/// place in the log, [`EventLog::path_of`]) beside every problem, so the
/// checks across events still run on the rest of a log with bad events
/// ([`validate`]).
pub fn read(bytes: &[u8], limits: &Limits) -> (EventLog, Diagnostics) {
    let mut d = Diagnostics::new();
    if bytes.len() > limits.max_bytes {
        d.push(
            "",
            format!(
                "the log is {} bytes; at most {} are accepted",
                bytes.len(),
                limits.max_bytes
            ),
        );
        return (EventLog::default(), d);
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        d.push("", "the log is not UTF-8 text");
        return (EventLog::default(), d);
    };
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    let skipped = skipped_lines(text, trimmed);
    let mut events = Events {
        limits,
        validator: validator(),
        d,
        events: Vec::new(),
        positions: Vec::new(),
        broken_calls: HashSet::new(),
        seen: 0,
    };
    if trimmed.starts_with('[') {
        let mut de = serde_json::Deserializer::from_str(trimmed);
        let read = serde::de::DeserializeSeed::deserialize(EachElement(&mut events), &mut de)
            .and_then(|()| de.end());
        match read {
            Ok(()) => {}
            // `admit` has said so.
            Err(e) if e.to_string().starts_with(TOO_MANY) => return events.finish(),
            Err(e) => {
                events
                    .d
                    .push("", format!("not a JSON array of events: {e}"));
                return events.finish();
            }
        }
    } else if trimmed.starts_with('{') {
        // JSON lines: one event per non-blank line.
        for (line_no, line) in trimmed.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            if !events.admit() {
                return events.finish();
            }
            match serde_json::from_str::<Json>(line) {
                Ok(v) => events.take(v),
                // The path names the event; the message keeps the line for
                // a reader of the raw problem.
                Err(e) => events.unreadable(|| {
                    format!("not a JSON object (line {}): {e}", skipped + line_no + 1)
                }),
            }
        }
    } else {
        let yaml_limits = YamlLimits {
            max_bytes: limits.max_bytes,
            max_nodes: limits.max_events.saturating_mul(64).max(1024),
            ..YamlLimits::default()
        };
        let value = match parse_value(bytes, &yaml_limits) {
            Ok(value) => value,
            Err(e) => {
                events.d.extend(Diagnostics::from(e));
                return events.finish();
            }
        };
        let list = match crate::agent::reader::to_json(&value) {
            Json::Array(list) => list,
            Json::Object(mut map) => match map.remove("events") {
                Some(Json::Array(list)) => list,
                Some(_) => {
                    events.d.push("events", "expected a list of events");
                    return events.finish();
                }
                None => {
                    events
                        .d
                        .push("", "expected a list of events or a mapping with `events:`");
                    return events.finish();
                }
            },
            _ => {
                events.d.push(
                    "",
                    "expected JSON lines, a JSON array, or YAML with an `events:` list",
                );
                return events.finish();
            }
        };
        for v in list {
            if !events.admit() {
                return events.finish();
            }
            events.take(v);
        }
    }
    events.finish()
}

/// Which agent each event belongs to: its own `agent_id` (`from` for a
/// delegation), else, for a tool.result, the agent of the call it answers.
/// `None` when nothing says.
pub fn agents_of(log: &EventLog) -> Vec<Option<String>> {
    let mut callers: HashMap<&str, &str> = HashMap::new();
    log.events
        .iter()
        .map(|e| {
            if let EventBody::ToolCall {
                agent_id, call_id, ..
            } = &e.body
            {
                callers.entry(call_id).or_insert(agent_id);
            }
            match (&e.body, e.own_agent()) {
                (_, Some(a)) => Some(a.to_owned()),
                (EventBody::ToolResult { call_id, .. }, None) => {
                    callers.get(call_id.as_str()).map(|a| (*a).to_owned())
                }
                _ => None,
            }
        })
        .collect()
}

/// Cross-event rules (see the module docs); with `package`, also the
/// agent's declarations. Problems are reported at the later event.
pub fn check(log: &EventLog, package: Option<&AgentPackage>) -> Diagnostics {
    let mut d = Diagnostics::new();
    // call_id -> (index of the call, its agent, answered yet)
    let mut calls: HashMap<&str, (usize, &str, bool)> = HashMap::new();
    // agent -> (last timestamp, index of that event)
    let mut last_seen: HashMap<String, (OffsetDateTime, usize)> = HashMap::new();
    let agents = agents_of(log);
    for (i, e) in log.events.iter().enumerate() {
        let path = log.path_of(i);
        match &e.body {
            EventBody::ToolCall {
                agent_id, call_id, ..
            } => {
                if let Some((first, _, _)) = calls.get(call_id.as_str()) {
                    d.push(
                        join(&path, "call_id"),
                        format!("{call_id:?} is already the id of {}", log.path_of(*first)),
                    );
                } else {
                    calls.insert(call_id, (i, agent_id, false));
                }
            }
            EventBody::ToolResult {
                call_id, agent_id, ..
            } => match calls.get_mut(call_id.as_str()) {
                // The call broke the schema, which is reported there.
                None if log.broken_calls.contains(call_id.as_str()) => {}
                None => d.push(
                    join(&path, "call_id"),
                    format!("{call_id:?} answers no earlier tool.call"),
                ),
                Some((first, _, true)) => d.push(
                    join(&path, "call_id"),
                    format!(
                        "the tool.call {call_id:?} ({}) was already answered",
                        log.path_of(*first)
                    ),
                ),
                Some((first, caller, answered)) => {
                    *answered = true;
                    if let Some(a) = agent_id
                        && a != caller
                    {
                        d.push(
                            join(&path, "agent_id"),
                            format!(
                                "{a:?} answers a call that {caller:?} made ({})",
                                log.path_of(*first)
                            ),
                        );
                    }
                }
            },
            _ => {}
        }
        if let Some(agent) = &agents[i] {
            match last_seen.get(agent) {
                Some((previous, at)) if e.timestamp < *previous => d.push(
                    join(&path, "timestamp"),
                    format!(
                        "{} is earlier than {agent}'s previous event ({}, {}): time goes backwards",
                        e.timestamp_text,
                        log.path_of(*at),
                        log.events[*at].timestamp_text
                    ),
                ),
                _ => {
                    last_seen.insert(agent.clone(), (e.timestamp, i));
                }
            }
        }
    }
    if let Some(pkg) = package {
        check_against_package(log, pkg, &mut d);
    }
    d
}

/// Every problem of every stage in one run: each event against the
/// schema, then the checks across events (with `package`, against the
/// agent too) and each result's output against its tool's output schema,
/// over the events that passed, each problem at the event's place in the
/// log. The output schemas are the package's inline ones, then `locked`
/// (a locked or installed tool's published one, for tools the package
/// does not describe inline).
pub fn validate(
    bytes: &[u8],
    limits: &Limits,
    package: Option<&AgentPackage>,
    locked: OutputSchemas,
) -> (EventLog, Diagnostics) {
    let (log, mut d) = read(bytes, limits);
    d.extend(check(&log, package));
    let mut outputs = package.map(OutputSchemas::of_package).unwrap_or_default();
    for (tool, schema) in locked.0 {
        outputs.0.entry(tool).or_insert(schema);
    }
    check_outputs(&log, &outputs, &mut d);
    (log, d)
}

/// The output schemas `tool.result` outputs are held to, by tool name
/// (as events name tools).
#[derive(Debug, Clone, Default)]
pub struct OutputSchemas(HashMap<String, Json>);

impl OutputSchemas {
    pub fn new() -> Self {
        Self::default()
    }

    /// The inline ones of an agent package: its and its subagents'
    /// `tools:` entries' and `http_tools` entries' `output_schema`s (the
    /// first declared, when two files declare one tool).
    pub fn of_package(pkg: &AgentPackage) -> Self {
        let mut out = Self::new();
        for spec in std::iter::once(&pkg.agent).chain(pkg.subagents.values()) {
            for t in &spec.tools {
                if let Some(s) = &t.output_schema {
                    out.add(t.name.as_str(), s.clone());
                }
            }
            for (name, h) in &spec.http_tools {
                if let Some(s) = &h.output_schema {
                    out.add(name, s.clone());
                }
            }
        }
        out
    }

    /// `tool`'s output schema (a locked or installed tool's), unless one
    /// is already known.
    pub fn add(&mut self, tool: &str, schema: Json) {
        self.0.entry(normalize(tool)).or_insert(schema);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Each `tool.result`'s `output` against the output schema of the tool its
/// call named ([`Rule::ToolOutputInvalid`]), at the offending value. Each
/// schema is compiled once (with `json_schema`'s bounded regexes), and
/// each output validated once: linear in the log.
pub fn check_outputs(log: &EventLog, schemas: &OutputSchemas, d: &mut Diagnostics) {
    if schemas.is_empty() {
        return;
    }
    let mut called: HashMap<&str, &str> = HashMap::new();
    // tool -> its compiled schema, or None when it does not compile (a
    // schema that passed validation does).
    let mut compiled: HashMap<String, Option<Validator>> = HashMap::new();
    for (i, e) in log.events.iter().enumerate() {
        match &e.body {
            EventBody::ToolCall { tool, call_id, .. } => {
                called.entry(call_id).or_insert(tool);
            }
            EventBody::ToolResult {
                call_id,
                output: Some(output),
                ..
            } => {
                let Some(tool) = called.get(call_id.as_str()) else {
                    continue;
                };
                let key = normalize(tool);
                let Some(schema) = schemas.0.get(&key) else {
                    continue;
                };
                let validator = compiled
                    .entry(key)
                    .or_insert_with(|| crate::json_schema::validator(schema).ok());
                let Some(validator) = validator else { continue };
                let base = join(&log.path_of(i), "output");
                for error in validator.iter_errors(output) {
                    d.push_rule(
                        Rule::ToolOutputInvalid,
                        crate::json_schema::dotted(&base, error.instance_path().segments()),
                        format!("{error} ({tool}'s output_schema)"),
                    );
                    if d.is_full() {
                        return;
                    }
                }
            }
            _ => {}
        }
    }
}

/// Every name an agent of the package can be known by: its name, a
/// subagent's name, a subagent's file stem (how a static crew refers to
/// it), normalized like package names.
fn known_agents(pkg: &AgentPackage) -> HashSet<String> {
    let mut known: HashSet<String> = HashSet::new();
    known.insert(pkg.agent.name.normalized());
    for (path, spec) in &pkg.subagents {
        known.insert(spec.name.normalized());
        let file = path.file_name();
        let stem = file
            .strip_suffix(".yaml")
            .or_else(|| file.strip_suffix(".yml"))
            .unwrap_or(file);
        known.insert(normalize(stem));
    }
    if let Some(crew) = &pkg.agent.delegate {
        for member in &crew.agents {
            known.insert(normalize(member.id()));
        }
    }
    known
}

fn check_against_package(log: &EventLog, pkg: &AgentPackage, d: &mut Diagnostics) {
    let known = known_agents(pkg);
    let specs: Vec<&crate::agent::AgentSpec> = std::iter::once(&pkg.agent)
        .chain(pkg.subagents.values())
        .collect();
    let spec_of = |agent: &str| {
        let n = normalize(agent);
        specs.iter().copied().find(|s| s.name.normalized() == n)
    };
    for (i, e) in log.events.iter().enumerate() {
        let path = log.path_of(i);
        match &e.body {
            EventBody::ToolCall { agent_id, tool, .. } => {
                let declared = match spec_of(agent_id) {
                    Some(spec) => spec.can_call(tool),
                    // An agent id the package does not name (a crew id, a
                    // runtime's own label): any agent of the package may
                    // have made the call.
                    None => specs.iter().any(|s| s.can_call(tool)),
                };
                if !declared {
                    d.push(
                        join(&path, "tool"),
                        format!("{tool:?} is not a tool {agent_id} declares"),
                    );
                }
            }
            EventBody::Delegate { to, .. } if !known.contains(&normalize(to)) => {
                let mut names: Vec<&String> = known.iter().collect();
                names.sort();
                d.push(
                    join(&path, "to"),
                    format!(
                        "{to:?} is not an agent of the package (agents: {})",
                        names
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_schema_compiles() {
        let _ = validator();
        let schema: Json = serde_json::from_str(SCHEMA).unwrap();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
    }
}
