//! What an agent's schemas say of one another, judged by one function,
//! [`check_package`] (or [`check`], one agent.yaml): `agentlang validate`
//! calls it with what the package itself declares, `agentlang lock` and the
//! registry's publish with the locked tools' published schemas too.
//!
//! Two rules:
//!
//! - **An inline schema may narrow the locked tool's, never contradict it**
//!   ([`Rule::SchemaContradictsLocked`]). The published schema stays in
//!   force; the inline one adds to it. A contradiction is a fact the two
//!   state about the same place that cannot both hold. At each place both
//!   schemas describe (the root, then `properties.<name>` and `items`,
//!   recursively), the inline schema contradicts the published one when:
//!   its `type`s share none with the published `type`s (`integer` lies
//!   within `number`); an `enum` or `const` value of it lies outside the
//!   published `enum`/`const`, or is of no published `type`; its lower
//!   bound is above the published upper bound or its upper bound below the
//!   published lower one (`minimum`/`exclusiveMinimum` against
//!   `maximum`/`exclusiveMaximum`, and `minLength`/`maxLength`,
//!   `minItems`/`maxItems`, `minProperties`/`maxProperties`); or it
//!   declares or requires a property the published schema closes out
//!   (`additionalProperties: false`, no `patternProperties`). Anything else
//!   (`$ref`, `allOf`/`anyOf`/`oneOf`/`not`, `pattern`, `format`, places
//!   only one schema describes) is accepted: the rule reports only what it
//!   can decide.
//!
//! - **A route's value fits where it goes** ([`Rule::RouteIncompatible`]).
//!   A route is (a) an HTTP tool's UI state prop (`props: {images:
//!   "{{json.messages[0].images}}"}`): the path is resolved in the tool's
//!   output schema (it must exist where the schema closes its properties,
//!   and not cross a value of another type), the prop must be one of the
//!   component's (where its props are closed, or a built-in's), and the
//!   resolved type must share a type with the prop's schema; and (b) a
//!   sync action's `params` into its tool's input: each param must be an
//!   input property where the input closes its properties (an
//!   `http_tools` entry's `params` always do), its value (a `{{prop}}` of
//!   the component, or a literal) must share a type with the property, and
//!   every required input property must be given. A tool's schemas are its
//!   inline ones (a `tools:` entry's, an `http_tools` entry's `params` and
//!   `output_schema`), else the locked version's published ones; an MCP
//!   server's tools, bash tools and `system://` built-ins are unknown, and
//!   routes through them are not judged.
//!
//! Schemas are untrusted: every walk is bounded in depth ([`MAX_DEPTH`])
//! and follows keys both sides share, so the work is linear in the
//! smaller schema; enum membership is a hash lookup.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value as Json};

// Below agent.yaml's model, never above it: agent.yaml's own checks call
// [`check`], so nothing here reads the package module.
use crate::{
    MemberPath,
    agent::{
        model::{AgentSpec, ParamType, UiComponent},
        template::{Placeholder, placeholders},
        ui::builtin_props,
    },
    diagnostics::{Diagnostics, index, join},
    names::normalize,
    rules::Rule,
};

/// Levels of a schema the walks compare; deeper places are accepted.
pub const MAX_DEPTH: usize = 32;

/// A locked tool's schemas, as its published tool.yaml declares them.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedSchemas {
    /// `name version`, for messages.
    pub label: String,
    pub input_schema: Json,
    pub output_schema: Option<Json>,
}

/// The locked tools' published schemas, by tool name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Published(BTreeMap<String, PublishedSchemas>);

impl Published {
    pub fn new() -> Self {
        Self::default()
    }

    /// `tool`'s published schemas (its tool.yaml's `input_schema` and
    /// `output_schema`); `spec` is the version's tool.yaml as JSON, as the
    /// registry stores and serves it.
    pub fn insert_spec(&mut self, tool: &str, version: &str, spec: &Json) {
        let Some(input) = spec.get("input_schema").filter(|s| s.is_object()) else {
            return;
        };
        self.0.insert(
            normalize(tool),
            PublishedSchemas {
                label: format!("{tool} {version}"),
                input_schema: input.clone(),
                output_schema: spec.get("output_schema").filter(|s| s.is_object()).cloned(),
            },
        );
    }

    pub fn get(&self, tool: &str) -> Option<&PublishedSchemas> {
        self.0.get(&normalize(tool))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Both rules over a package's agent and each subagent (`pkg.agent`,
/// `&pkg.subagents`), each problem in its file. With an empty
/// `published`, only what the package itself declares is judged (what
/// `validate` can know, and does, file by file).
pub fn check_package(
    agent: &AgentSpec,
    subagents: &BTreeMap<MemberPath, AgentSpec>,
    published: &Published,
) -> Diagnostics {
    let mut out = check(agent, published).in_file("agent.yaml");
    for (path, spec) in subagents {
        out.extend(check(spec, published).in_file(path.as_str()));
    }
    out
}

/// Both rules over one agent.yaml.
pub fn check(spec: &AgentSpec, published: &Published) -> Diagnostics {
    let mut d = Diagnostics::new();
    for (i, t) in spec.tools.iter().enumerate() {
        let Some(p) = published.get(t.name.as_str()) else {
            continue;
        };
        let at = index("tools", i);
        if let Some(inline) = &t.input_schema {
            let mut w = Walk {
                label: &p.label,
                side: "input_schema",
                d: &mut d,
            };
            w.contradictions(inline, &p.input_schema, &join(&at, "input_schema"), 0);
        }
        if let (Some(inline), Some(theirs)) = (&t.output_schema, &p.output_schema) {
            let mut w = Walk {
                label: &p.label,
                side: "output_schema",
                d: &mut d,
            };
            w.contradictions(inline, theirs, &join(&at, "output_schema"), 0);
        }
    }
    routes(spec, published, &mut d);
    d
}

// ---------------------------------------------------------------- types

/// A set of JSON Schema types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Types(u8);

const TYPE_NAMES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "string", "integer",
];
const NUMBER: u8 = 1 << 4;
const INTEGER: u8 = 1 << 6;

impl Types {
    fn named(name: &str) -> Option<Self> {
        TYPE_NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| Types(1 << i))
    }

    /// Every value of these types: a `number` includes the integers.
    fn widened(self) -> u8 {
        if self.0 & NUMBER != 0 {
            self.0 | INTEGER
        } else {
            self.0
        }
    }

    /// Whether some value is of both.
    fn overlaps(self, other: Types) -> bool {
        self.widened() & other.widened() != 0
    }

    /// Whether a value of type `value` (as [`value_type`] says) is one.
    fn admits(self, value: Types) -> bool {
        self.widened() & value.0 != 0
    }

    fn describe(self) -> String {
        let names: Vec<&str> = (0..TYPE_NAMES.len())
            .filter(|i| self.0 & (1 << i) != 0)
            .map(|i| TYPE_NAMES[i])
            .collect();
        names.join(" or ")
    }
}

/// A schema's `type`s; `None` when it declares none (or not readably).
fn types_of(schema: &Json) -> Option<Types> {
    match schema.get("type")? {
        Json::String(s) => Types::named(s),
        Json::Array(items) => {
            let mut bits = 0;
            for t in items {
                bits |= Types::named(t.as_str()?)?.0;
            }
            (bits != 0).then_some(Types(bits))
        }
        _ => None,
    }
}

/// The type of a value: an integral number is an `integer` (which a
/// `number` schema admits too), any other number only a `number`.
fn value_type(v: &Json) -> Types {
    Types(match v {
        Json::Null => 1,
        Json::Bool(_) => 1 << 1,
        Json::Object(_) => 1 << 2,
        Json::Array(_) => 1 << 3,
        Json::Number(n) if n.is_i64() || n.is_u64() => INTEGER,
        Json::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => INTEGER,
        Json::Number(_) => NUMBER,
        Json::String(_) => 1 << 5,
    })
}

/// A scalar's identity for enum membership (`1` and `1.0` are one
/// number); `None` for objects and arrays, which are not compared.
fn scalar_key(v: &Json) -> Option<String> {
    match v {
        Json::Number(n) => n.as_f64().map(|f| format!("n{f}")),
        Json::Object(_) | Json::Array(_) => None,
        other => Some(other.to_string()),
    }
}

/// Whether an object schema admits no property beyond those it lists.
fn closes_properties(schema: &Map<String, Json>) -> bool {
    schema.get("additionalProperties") == Some(&Json::Bool(false))
        && !schema.contains_key("patternProperties")
}

fn property_names(schema: &Map<String, Json>) -> String {
    let names: Vec<&str> = schema
        .get("properties")
        .and_then(Json::as_object)
        .map(|p| p.keys().map(String::as_str).take(20).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

// ------------------------------------------------- inline against published

struct Walk<'a> {
    /// `web_search 1.2.0`.
    label: &'a str,
    /// `input_schema` or `output_schema`.
    side: &'a str,
    d: &'a mut Diagnostics,
}

/// A bound as the walk compares it: its value and whether it is exclusive.
#[derive(Clone, Copy)]
struct Bound<'k> {
    key: &'k str,
    value: f64,
    exclusive: bool,
}

impl Walk<'_> {
    fn push(&mut self, path: String, message: String) {
        self.d
            .push_rule(Rule::SchemaContradictsLocked, path, message);
    }

    /// What `published` says at `path`, for messages.
    fn theirs(&self, what: &str) -> String {
        format!("the published {} of {} says {what}", self.side, self.label)
    }

    fn contradictions(&mut self, inline: &Json, published: &Json, path: &str, depth: usize) {
        let (Some(i), Some(p)) = (inline.as_object(), published.as_object()) else {
            return;
        };
        if depth > MAX_DEPTH || self.d.is_full() {
            return;
        }
        let their_types = types_of(published);
        if let (Some(ours), Some(theirs)) = (types_of(inline), their_types)
            && !ours.overlaps(theirs)
        {
            let message = format!(
                "type {} contradicts the tool's schema: {}",
                ours.describe(),
                self.theirs(&format!("type {}", theirs.describe()))
            );
            self.push(join(path, "type"), message);
        }
        self.values(i, p, their_types, path);
        self.bounds(i, p, path);
        let their_props = p.get("properties").and_then(Json::as_object);
        let closed = closes_properties(p);
        if let Some(ours) = i.get("properties").and_then(Json::as_object) {
            for (name, sub) in ours {
                let at = join(&join(path, "properties"), name);
                match their_props.and_then(|t| t.get(name)) {
                    Some(theirs) => self.contradictions(sub, theirs, &at, depth + 1),
                    None if closed => {
                        let message = format!(
                            "{name:?} cannot be there: {}",
                            self.theirs(&format!(
                                "additionalProperties: false, and its properties are {}",
                                property_names(p)
                            ))
                        );
                        self.push(at, message);
                    }
                    None => {}
                }
            }
        }
        if closed && let Some(required) = i.get("required").and_then(Json::as_array) {
            for (k, name) in required.iter().enumerate() {
                let Some(name) = name.as_str() else { continue };
                if their_props.is_none_or(|t| !t.contains_key(name)) {
                    let message = format!(
                        "requires {name:?}, which cannot be there: {}",
                        self.theirs(&format!(
                            "additionalProperties: false, and its properties are {}",
                            property_names(p)
                        ))
                    );
                    self.push(index(&join(path, "required"), k), message);
                }
            }
        }
        if let (Some(ours @ Json::Object(_)), Some(theirs @ Json::Object(_))) =
            (i.get("items"), p.get("items"))
        {
            self.contradictions(ours, theirs, &join(path, "items"), depth + 1);
        }
    }

    /// `enum` and `const` values of the inline schema inside the published
    /// ones and types.
    fn values(
        &mut self,
        i: &Map<String, Json>,
        p: &Map<String, Json>,
        their_types: Option<Types>,
        path: &str,
    ) {
        let ours: Vec<(String, &Json)> = match (i.get("enum"), i.get("const")) {
            (_, Some(c)) => vec![(join(path, "const"), c)],
            (Some(Json::Array(values)), None) => values
                .iter()
                .enumerate()
                .map(|(k, v)| (index(&join(path, "enum"), k), v))
                .collect(),
            _ => return,
        };
        // The published values, when it lists them; `None` when one of
        // them cannot be compared (an object), so membership is undecided.
        let theirs: Option<(HashSet<String>, &str)> = match (p.get("enum"), p.get("const")) {
            (_, Some(c)) => scalar_key(c).map(|k| (HashSet::from([k]), "const")),
            (Some(Json::Array(values)), None) => values
                .iter()
                .map(scalar_key)
                .collect::<Option<HashSet<String>>>()
                .map(|s| (s, "enum")),
            _ => None,
        };
        for (at, v) in ours {
            if let Some(t) = their_types
                && !t.admits(value_type(v))
            {
                let message = format!(
                    "{v} contradicts the tool's schema: {}",
                    self.theirs(&format!("type {}", t.describe()))
                );
                self.push(at, message);
                continue;
            }
            if let (Some((set, keyword)), Some(key)) = (&theirs, scalar_key(v))
                && !set.contains(&key)
            {
                let message = format!(
                    "{v} contradicts the tool's schema: {}",
                    self.theirs(&format!("{keyword} {}", p[*keyword]))
                );
                self.push(at, message);
            }
        }
    }

    /// Ranges that do not meet: the inline lower bound above the published
    /// upper one, or the inline upper bound below the published lower one.
    fn bounds(&mut self, i: &Map<String, Json>, p: &Map<String, Json>, path: &str) {
        let number = |o: &Map<String, Json>, key: &'static str, exclusive: bool| {
            o.get(key).and_then(Json::as_f64).map(|value| Bound {
                key,
                value,
                exclusive,
            })
        };
        // The tighter of an inclusive and an exclusive bound.
        let lower =
            |o: &Map<String, Json>, inc, exc| match (number(o, inc, false), number(o, exc, true)) {
                (Some(a), Some(b)) => Some(if b.value >= a.value { b } else { a }),
                (a, b) => a.or(b),
            };
        let upper =
            |o: &Map<String, Json>, inc, exc| match (number(o, inc, false), number(o, exc, true)) {
                (Some(a), Some(b)) => Some(if b.value <= a.value { b } else { a }),
                (a, b) => a.or(b),
            };
        // [our lower, their upper, our upper, their lower], per kind of bound.
        let mut pairs: Vec<[Option<Bound>; 4]> = vec![[
            lower(i, "minimum", "exclusiveMinimum"),
            upper(p, "maximum", "exclusiveMaximum"),
            upper(i, "maximum", "exclusiveMaximum"),
            lower(p, "minimum", "exclusiveMinimum"),
        ]];
        for (min, max) in [
            ("minLength", "maxLength"),
            ("minItems", "maxItems"),
            ("minProperties", "maxProperties"),
        ] {
            pairs.push([
                number(i, min, false),
                number(p, max, false),
                number(i, max, false),
                number(p, min, false),
            ]);
        }
        for [our_low, their_high, our_high, their_low] in pairs {
            if let (Some(lo), Some(hi)) = (our_low, their_high)
                && apart(lo, hi)
            {
                let message = format!(
                    "{} {} excludes every value the tool allows: {}",
                    lo.key,
                    lo.value,
                    self.theirs(&format!("{} {}", hi.key, hi.value))
                );
                self.push(join(path, lo.key), message);
            }
            if let (Some(lo), Some(hi)) = (their_low, our_high)
                && apart(lo, hi)
            {
                let message = format!(
                    "{} {} excludes every value the tool allows: {}",
                    hi.key,
                    hi.value,
                    self.theirs(&format!("{} {}", lo.key, lo.value))
                );
                self.push(join(path, hi.key), message);
            }
        }
    }
}

/// Whether nothing lies between a lower and an upper bound.
fn apart(lo: Bound<'_>, hi: Bound<'_>) -> bool {
    lo.value > hi.value || (lo.value == hi.value && (lo.exclusive || hi.exclusive))
}

// ----------------------------------------------------------------- routes

/// A tool's schemas as the routes see them, and where they come from.
#[derive(Default)]
struct Known<'a> {
    input: Option<std::borrow::Cow<'a, Json>>,
    output: Option<&'a Json>,
    /// For messages: `gmail_send's input_schema`.
    source: String,
}

/// Every tool of the agent whose schemas are known, by normalized name.
fn known_tools<'a>(spec: &'a AgentSpec, published: &'a Published) -> HashMap<String, Known<'a>> {
    let mut out = HashMap::new();
    for t in &spec.tools {
        let theirs = published.get(t.name.as_str());
        let source = match (&t.input_schema, theirs) {
            (Some(_), _) | (None, None) => t.name.as_str().to_owned(),
            (None, Some(p)) => format!("{} (published)", p.label),
        };
        out.insert(
            normalize(t.name.as_str()),
            Known {
                input: t
                    .input_schema
                    .as_ref()
                    .or(theirs.map(|p| &p.input_schema))
                    .map(std::borrow::Cow::Borrowed),
                output: t
                    .output_schema
                    .as_ref()
                    .or(theirs.and_then(|p| p.output_schema.as_ref())),
                source,
            },
        );
    }
    for (name, h) in &spec.http_tools {
        // Its params are its whole input: the body template may use no
        // other, so the input is closed.
        let mut properties = Map::new();
        let mut required = Vec::new();
        for (param, p) in &h.params {
            let ty = match p.ty {
                ParamType::String => "string",
                ParamType::Integer => "integer",
                ParamType::Number => "number",
                ParamType::Boolean => "boolean",
                ParamType::Array => "array",
                ParamType::Object => "object",
            };
            properties.insert(param.clone(), serde_json::json!({ "type": ty }));
            if p.required == Some(true) {
                required.push(Json::String(param.clone()));
            }
        }
        let input = serde_json::json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        });
        out.insert(
            normalize(name),
            Known {
                input: Some(std::borrow::Cow::Owned(input)),
                output: h.output_schema.as_ref(),
                source: name.clone(),
            },
        );
    }
    out
}

/// One step of a value path: `.key` or `[n]`.
enum Step<'a> {
    Key(&'a str),
    Index,
}

/// `json.messages[0].images` without its root: `messages`, `[0]`, `images`.
fn steps(path: &str) -> Vec<Step<'_>> {
    let mut out = Vec::new();
    for (n, part) in path.split('.').enumerate() {
        let (key, rest) = part.split_once('[').unwrap_or((part, ""));
        if n > 0 && !key.is_empty() {
            out.push(Step::Key(key));
        }
        out.extend(
            rest.split('[')
                .filter(|s| !s.is_empty())
                .map(|_| Step::Index),
        );
    }
    out
}

/// Where a value path leads in a schema.
enum Resolved<'a> {
    Schema(&'a Json),
    /// Not decidable (no schema says).
    Unknown,
    /// The path leaves the schema: why.
    Absent(String),
}

fn resolve<'a>(schema: &'a Json, steps: &[Step<'_>], shown: &str) -> Resolved<'a> {
    let mut at = schema;
    let mut walked = shown.split(['.', '[']).next().unwrap_or(shown).to_owned();
    for (n, step) in steps.iter().enumerate() {
        if n >= MAX_DEPTH {
            return Resolved::Unknown;
        }
        let Some(o) = at.as_object() else {
            return Resolved::Unknown;
        };
        let types = types_of(at);
        match step {
            Step::Key(key) => {
                if let Some(sub) = o.get("properties").and_then(|p| p.get(*key)) {
                    at = sub;
                } else if types.is_some_and(|t| !t.admits(Types(1 << 2))) {
                    return Resolved::Absent(format!(
                        "{walked} is {}, not an object with {key:?}",
                        types.map(Types::describe).unwrap_or_default()
                    ));
                } else if closes_properties(o) {
                    return Resolved::Absent(format!(
                        "{walked} has no {key:?} (its properties: {}; additionalProperties: false)",
                        property_names(o)
                    ));
                } else if let Some(extra @ Json::Object(_)) = o.get("additionalProperties") {
                    at = extra;
                } else {
                    return Resolved::Unknown;
                }
                walked = format!("{walked}.{key}");
            }
            Step::Index => {
                if let Some(items @ Json::Object(_)) = o.get("items") {
                    at = items;
                } else if types.is_some_and(|t| !t.admits(Types(1 << 3))) {
                    return Resolved::Absent(format!(
                        "{walked} is {}, not an array",
                        types.map(Types::describe).unwrap_or_default()
                    ));
                } else {
                    return Resolved::Unknown;
                }
                walked = format!("{walked}[]");
            }
        }
    }
    Resolved::Schema(at)
}

/// The one `{{path}}` a value is, when it is nothing else (its type is
/// then the type of what the path names); `None` for literals and texts.
fn sole_placeholder(v: &Json) -> Option<String> {
    let text = v.as_str()?.trim();
    let inner = text.strip_prefix("{{")?.strip_suffix("}}")?;
    if inner.contains("{{") {
        return None;
    }
    match placeholders(text).ok()?.as_slice() {
        [Placeholder::Value(p)] => Some(p.clone()),
        _ => None,
    }
}

/// What a route carries: a known type (and what to call it), or nothing
/// decidable.
fn carried(
    v: &Json,
    from: impl Fn(&str) -> Result<Option<(Types, String)>, String>,
) -> Result<Option<(Types, String)>, String> {
    match sole_placeholder(v) {
        Some(path) => from(&path),
        // A text with placeholders in it, or a literal.
        None => Ok(Some((value_type(v), format!("the value {v}")))),
    }
}

/// Where a component prop leads: its schema, unknown, or absent (with
/// the component's props for the message).
enum Prop<'a> {
    Schema(&'a Json),
    Unknown,
    Absent(String),
}

fn prop_of<'a>(spec: &'a AgentSpec, component: &str, prop: &str) -> Prop<'a> {
    if let Some(c) = spec.ui_components.get(component) {
        let Some(props) = c.props.as_ref().and_then(Json::as_object) else {
            return Prop::Unknown;
        };
        if let Some(s) = props.get("properties").and_then(|p| p.get(prop)) {
            return Prop::Schema(s);
        }
        if closes_properties(props) {
            return Prop::Absent(property_names(props));
        }
        return Prop::Unknown;
    }
    match builtin_props(component) {
        Some(names) if !names.contains(&prop) => Prop::Absent(names.join(", ")),
        _ => Prop::Unknown,
    }
}

fn routes(spec: &AgentSpec, published: &Published, d: &mut Diagnostics) {
    let tools = known_tools(spec, published);
    // (a) An HTTP tool's output into its UI states' component props.
    for (name, h) in &spec.http_tools {
        let Some(ui) = &h.ui_component else { continue };
        let base = join(&join("http_tools", name), "ui_component");
        let output = tools.get(&normalize(name)).and_then(|k| k.output);
        for (status, render) in ui.states() {
            let state = join(&base, status);
            let component = render.component.as_str();
            for (prop, value) in &render.props {
                let at = join(&join(&state, "props"), prop);
                let dest = match prop_of(spec, component, prop) {
                    Prop::Absent(props) => {
                        d.push_rule(
                            Rule::RouteIncompatible,
                            at,
                            format!(
                                "{name}'s {status} state sends {prop:?} to {component}, which has no such prop (its props: {props})"
                            ),
                        );
                        continue;
                    }
                    Prop::Unknown => continue,
                    Prop::Schema(s) => s,
                };
                let Some(dest_types) = types_of(dest) else {
                    continue;
                };
                let source = carried(value, |path| {
                    if path.split(['.', '[']).next() != Some("json") {
                        return Ok(None);
                    }
                    let Some(out) = output else { return Ok(None) };
                    match resolve(out, &steps(path), path) {
                        Resolved::Schema(s) => Ok(types_of(s).map(|t| {
                            (
                                t,
                                format!(
                                    "{{{{{path}}}}} ({} in {name}'s output_schema)",
                                    t.describe()
                                ),
                            )
                        })),
                        Resolved::Unknown => Ok(None),
                        Resolved::Absent(why) => Err(format!(
                            "{{{{{path}}}}} is not in {name}'s output_schema: {why}"
                        )),
                    }
                });
                match source {
                    Err(why) => d.push_rule(Rule::RouteIncompatible, at, why),
                    Ok(Some((types, what))) if !dest_types.overlaps(types) => d.push_rule(
                        Rule::RouteIncompatible,
                        at,
                        format!(
                            "{what} does not fit {component}'s prop {prop:?}, which is {}",
                            dest_types.describe()
                        ),
                    ),
                    Ok(_) => {}
                }
            }
            if let Some(actions) = &render.actions {
                let props = spec
                    .ui_components
                    .get(component)
                    .and_then(|c| c.props.as_ref());
                sync_routes(
                    &tools,
                    component,
                    props,
                    actions,
                    &join(&state, "actions"),
                    d,
                );
            }
        }
    }
    // (b) Components' props into the tools their sync actions call.
    for (name, c) in &spec.ui_components {
        sync_routes(
            &tools,
            name,
            c.props.as_ref(),
            c,
            &join("ui_components", name),
            d,
        );
    }
}

fn sync_routes(
    tools: &HashMap<String, Known<'_>>,
    component: &str,
    props: Option<&Json>,
    actions: &UiComponent,
    base: &str,
    d: &mut Diagnostics,
) {
    for (action, a) in &actions.sync_actions {
        let Some(known) = tools.get(&normalize(&a.tool)) else {
            continue;
        };
        let Some(input) = known.input.as_deref().and_then(Json::as_object) else {
            continue;
        };
        let tool = &a.tool;
        let at = join(&join(&join(base, "sync_actions"), action), "params");
        let inputs = input.get("properties").and_then(Json::as_object);
        for (param, value) in &a.params {
            let pat = join(&at, param);
            let Some(dest) = inputs.and_then(|p| p.get(param)) else {
                if closes_properties(input) {
                    d.push_rule(
                        Rule::RouteIncompatible,
                        pat,
                        format!(
                            "{action} sends {param:?} to {tool}, whose input takes no such property (its properties: {}; from {})",
                            property_names(input),
                            known.source
                        ),
                    );
                }
                continue;
            };
            let Some(dest_types) = types_of(dest) else {
                continue;
            };
            let source = carried(value, |path| {
                let Some(props) = props else { return Ok(None) };
                let root = path.split(['.', '[']).next().unwrap_or(path);
                let Some(schema) = props.get("properties").and_then(|p| p.get(root)) else {
                    return Ok(None);
                };
                match resolve(schema, &steps(path), path) {
                    Resolved::Schema(s) => Ok(types_of(s).map(|t| {
                        (
                            t,
                            format!("{{{{{path}}}}} ({} in {component}'s props)", t.describe()),
                        )
                    })),
                    Resolved::Unknown => Ok(None),
                    Resolved::Absent(why) => Err(format!(
                        "{{{{{path}}}}} is not in {component}'s props: {why}"
                    )),
                }
            });
            match source {
                Err(why) => d.push_rule(Rule::RouteIncompatible, pat, why),
                Ok(Some((types, what))) if !dest_types.overlaps(types) => d.push_rule(
                    Rule::RouteIncompatible,
                    pat,
                    format!(
                        "{what} does not fit {tool}'s input property {param:?}, which is {} (from {})",
                        dest_types.describe(),
                        known.source
                    ),
                ),
                Ok(_) => {}
            }
        }
        if let Some(required) = input.get("required").and_then(Json::as_array) {
            let missing: Vec<&str> = required
                .iter()
                .filter_map(Json::as_str)
                .filter(|r| !a.params.contains_key(*r))
                .collect();
            if !missing.is_empty() {
                d.push_rule(
                    Rule::RouteIncompatible,
                    at,
                    format!(
                        "{action} calls {tool} without {}, which its input requires (from {})",
                        missing.join(", "),
                        known.source
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// An agent.yaml with `body` under its top level.
    fn agent(body: &str) -> AgentSpec {
        let yaml = format!("name: a\nversion: 1.0.0\ndescription: d\n{body}");
        crate::agent::parse_agent(yaml.as_bytes()).unwrap_or_else(|d| panic!("{d}"))
    }

    fn shown(d: &Diagnostics) -> Vec<String> {
        d.iter().map(ToString::to_string).collect()
    }

    /// The published web_search: what every contradiction case narrows.
    fn published() -> Published {
        let mut p = Published::new();
        p.insert_spec(
            "web_search",
            "1.2.0",
            &json!({
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "minLength": 1, "maxLength": 200},
                        "max_results": {"type": "integer", "minimum": 1, "maximum": 50},
                        "mode": {"enum": ["fast", "deep"]},
                        "tags": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                },
                "output_schema": {
                    "type": "object",
                    "properties": {"total_count": {"type": "integer"}}
                }
            }),
        );
        p
    }

    #[test]
    fn an_inline_schema_may_narrow_never_contradict() {
        let cases: &[(&str, &[&str])] = &[
            // Narrowing: fewer values, a subset of the enum, integer within number.
            (
                "{type: object, properties: {query: {type: string, maxLength: 80}, max_results: {type: integer, maximum: 10}, mode: {enum: [fast]}}, required: [query, max_results]}",
                &[],
            ),
            // What the rule cannot decide is accepted.
            (
                "{type: object, properties: {query: {anyOf: [{type: integer}]}, tags: {$ref: '#/$defs/x'}}, $defs: {x: {type: array}}}",
                &[],
            ),
            (
                "{type: object, properties: {query: {type: integer}}}",
                &[
                    "tools[0].input_schema.properties.query.type: type integer contradicts the tool's schema: the published input_schema of web_search 1.2.0 says type string [schema-contradicts-locked]",
                ],
            ),
            (
                "{type: object, properties: {mode: {enum: [fast, slow]}}}",
                &[
                    "tools[0].input_schema.properties.mode.enum[1]: \"slow\" contradicts the tool's schema: the published input_schema of web_search 1.2.0 says enum [\"fast\",\"deep\"] [schema-contradicts-locked]",
                ],
            ),
            (
                "{type: object, properties: {max_results: {const: 2.5}}}",
                &[
                    "tools[0].input_schema.properties.max_results.const: 2.5 contradicts the tool's schema: the published input_schema of web_search 1.2.0 says type integer [schema-contradicts-locked]",
                ],
            ),
            (
                "{type: object, properties: {max_results: {minimum: 60}, query: {maxLength: 0}}}",
                &[
                    "tools[0].input_schema.properties.max_results.minimum: minimum 60 excludes every value the tool allows: the published input_schema of web_search 1.2.0 says maximum 50 [schema-contradicts-locked]",
                    "tools[0].input_schema.properties.query.maxLength: maxLength 0 excludes every value the tool allows: the published input_schema of web_search 1.2.0 says minLength 1 [schema-contradicts-locked]",
                ],
            ),
            (
                "{type: object, properties: {max_results: {exclusiveMaximum: 1}}}",
                &[
                    "tools[0].input_schema.properties.max_results.exclusiveMaximum: exclusiveMaximum 1 excludes every value the tool allows: the published input_schema of web_search 1.2.0 says minimum 1 [schema-contradicts-locked]",
                ],
            ),
            (
                "{type: object, properties: {lang: {type: string}}, required: [query, region]}",
                &[
                    "tools[0].input_schema.properties.lang: \"lang\" cannot be there: the published input_schema of web_search 1.2.0 says additionalProperties: false, and its properties are query, max_results, mode, tags [schema-contradicts-locked]",
                    "tools[0].input_schema.required[1]: requires \"region\", which cannot be there: the published input_schema of web_search 1.2.0 says additionalProperties: false, and its properties are query, max_results, mode, tags [schema-contradicts-locked]",
                ],
            ),
            (
                "{type: object, properties: {tags: {items: {type: number}}}}",
                &[
                    "tools[0].input_schema.properties.tags.items.type: type number contradicts the tool's schema: the published input_schema of web_search 1.2.0 says type string [schema-contradicts-locked]",
                ],
            ),
        ];
        for (schema, expected) in cases {
            let spec = agent(&format!(
                "tools:\n  - name: web_search\n    version: ^1.2.0\n    input_schema: {schema}\n"
            ));
            let got = shown(&check(&spec, &published()));
            assert_eq!(&got, expected, "{schema}");
            // Without the published schema nothing is contradicted.
            assert!(check(&spec, &Published::new()).is_empty(), "{schema}");
        }
        // Output schemas alike.
        let spec = agent(
            "tools:\n  - name: web_search\n    output_schema: {type: object, properties: {total_count: {type: string}}}\n",
        );
        assert_eq!(
            shown(&check(&spec, &published())),
            [
                "tools[0].output_schema.properties.total_count.type: type string contradicts the tool's schema: the published output_schema of web_search 1.2.0 says type integer [schema-contradicts-locked]"
            ]
        );
    }

    #[test]
    fn a_deep_schema_is_compared_only_to_the_depth_bound() {
        let mut inline = json!({"type": "string"});
        let mut theirs = json!({"type": "integer"});
        for _ in 0..(MAX_DEPTH + 10) {
            inline = json!({"type": "object", "properties": {"x": inline}});
            theirs = json!({"type": "object", "properties": {"x": theirs}});
        }
        let mut d = Diagnostics::new();
        Walk {
            label: "t 1.0.0",
            side: "input_schema",
            d: &mut d,
        }
        .contradictions(&inline, &theirs, "s", 0);
        assert!(d.is_empty(), "{d}");
    }

    const UI: &str = r#"
ui_components:
  gallery:
    props:
      type: object
      properties:
        images: {type: array, items: {type: string}}
        cost: {type: number}
        id: {type: string}
      additionalProperties: false
    sync_actions:
      send:
        tool: notify
        params: {chat: "{{id}}"}
http_tools:
  notify:
    endpoint: /api/notify
    method: POST
    params:
      chat: {type: integer, required: true}
      text: {type: string}
"#;

    fn ui_agent(extra: &str) -> Vec<String> {
        let yaml = format!("name: a\nversion: 1.0.0\ndescription: d\n{UI}{extra}");
        match crate::agent::parse_agent(yaml.as_bytes()) {
            Ok(_) => Vec::new(),
            Err(d) => d.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn routes_fit_where_they_go() {
        let headshot = |props: &str, output: &str| {
            format!(
                "  generate:\n    endpoint: /api/gen\n    method: POST\n    output_schema: {output}\n    ui_component:\n      completed:\n        component: gallery\n        props: {props}\n"
            )
        };
        let output = "{type: object, properties: {messages: {type: array, items: {type: object, properties: {images: {type: array}}, additionalProperties: false}}, usage: {type: object, properties: {cost_usd: {type: number}}}}}";
        let send = "ui_components.gallery.sync_actions.send.params";
        let cases: Vec<(String, Vec<String>)> = vec![
            // The spec's example, fitting.
            (
                headshot(
                    "{images: \"{{json.messages[0].images}}\", cost: \"{{json.usage.cost_usd}}\"}",
                    output,
                ),
                vec![format!(
                    "{send}.chat: {{{{id}}}} (string in gallery's props) does not fit notify's input property \"chat\", which is integer (from notify) [route-incompatible]"
                )],
            ),
            (
                headshot(
                    "{images: \"{{json.usage.cost_usd}}\", cost: \"{{json.messages[0].photos}}\", size: 3, id: 7}",
                    output,
                ),
                vec![
                    "http_tools.generate.ui_component.completed.props.images: {{json.usage.cost_usd}} (number in generate's output_schema) does not fit gallery's prop \"images\", which is array [route-incompatible]".to_owned(),
                    "http_tools.generate.ui_component.completed.props.cost: {{json.messages[0].photos}} is not in generate's output_schema: json.messages[] has no \"photos\" (its properties: images; additionalProperties: false) [route-incompatible]".to_owned(),
                    "http_tools.generate.ui_component.completed.props.size: generate's completed state sends \"size\" to gallery, which has no such prop (its props: images, cost, id) [route-incompatible]".to_owned(),
                    "http_tools.generate.ui_component.completed.props.id: the value 7 does not fit gallery's prop \"id\", which is string [route-incompatible]".to_owned(),
                    format!(
                        "{send}.chat: {{{{id}}}} (string in gallery's props) does not fit notify's input property \"chat\", which is integer (from notify) [route-incompatible]"
                    ),
                ],
            ),
        ];
        for (tool, expected) in cases {
            let got: Vec<String> = ui_agent(&tool)
                .into_iter()
                .filter(|p| p.ends_with("[route-incompatible]"))
                .collect();
            assert_eq!(got, expected, "{tool}");
        }
    }

    #[test]
    fn sync_params_fit_the_tools_input() {
        let yaml = "name: a\nversion: 1.0.0\ndescription: d\nui_components:\n  card:\n    props: {type: object, properties: {id: {type: integer}, note: {type: object}}}\n    sync_actions:\n      ok:\n        tool: notify\n        params: {chat: \"{{id}}\", text: \"id {{id}}\"}\n      bad:\n        tool: notify\n        params: {text: \"{{note}}\", extra: true}\n      system:\n        tool: system://download_file\n        params: {url: \"{{id}}\"}\nhttp_tools:\n  notify:\n    endpoint: /api/notify\n    method: POST\n    params:\n      chat: {type: integer, required: true}\n      text: {type: string}\n";
        let got: Vec<String> = match crate::agent::parse_agent(yaml.as_bytes()) {
            Ok(_) => Vec::new(),
            Err(d) => d.iter().map(ToString::to_string).collect(),
        };
        let base = "ui_components.card.sync_actions.bad.params";
        assert_eq!(
            got,
            [
                format!(
                    "{base}.text: {{{{note}}}} (object in card's props) does not fit notify's input property \"text\", which is string (from notify) [route-incompatible]"
                ),
                format!(
                    "{base}.extra: bad sends \"extra\" to notify, whose input takes no such property (its properties: chat, text; from notify) [route-incompatible]"
                ),
                format!(
                    "{base}: bad calls notify without chat, which its input requires (from notify) [route-incompatible]"
                ),
            ]
        );
    }

    #[test]
    fn routes_into_a_locked_tool_use_its_published_input() {
        let spec = agent(
            "tools:\n  - name: web_search\nui_components:\n  box:\n    props: {type: object, properties: {q: {type: boolean}}}\n    sync_actions:\n      go:\n        tool: web_search\n        params: {query: \"{{q}}\"}\n",
        );
        assert!(check(&spec, &Published::new()).is_empty());
        assert_eq!(
            shown(&check(&spec, &published())),
            [
                "ui_components.box.sync_actions.go.params.query: {{q}} (boolean in box's props) does not fit web_search's input property \"query\", which is string (from web_search 1.2.0 (published)) [route-incompatible]"
            ]
        );
    }
}
