//! A tool's JSON Schema (input or output) flattened into table rows a reader
//! can scan: one row per field, nested objects and arrays of objects indented.

use serde_json::{Map, Value};

/// Nesting deeper than this is cut off with a marker row: schemas are
/// publisher input and may be arbitrarily deep.
pub const MAX_SCHEMA_DEPTH: usize = 8;
/// At most this many rows are produced; the rest is summarised in one row.
pub const MAX_SCHEMA_ROWS: usize = 400;

/// One field of a schema as the tool page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRow {
    /// 0 for top-level fields, 1 for fields of a nested object, and so on.
    pub depth: usize,
    pub name: String,
    /// Where a nested field lives (`results[]`, `filter.range`), for screen
    /// readers that do not see the indentation.
    pub parent: Option<String>,
    /// E.g. `string`, `integer | null`, `array of object`, `string (one of: a, b)`.
    pub type_label: String,
    pub required: bool,
    pub description: Option<String>,
    /// The default as compact JSON.
    pub default: Option<String>,
}

impl SchemaRow {
    /// Indentation step for the name cell, as a CSS class (`depth-0`…`depth-8`).
    pub fn depth_class(&self) -> String {
        format!("depth-{}", self.depth.min(MAX_SCHEMA_DEPTH))
    }
}

/// Flattens a JSON Schema into rows. An object schema yields one row per
/// property (in document order), recursing into object properties and into
/// the items of arrays of objects. A schema that is not an object with
/// properties (e.g. a bare `{"type": "string"}`) yields a single row named
/// `(value)`; an empty schema yields no rows.
pub fn schema_rows(schema: &Value) -> Vec<SchemaRow> {
    let mut rows = Vec::new();
    match schema.as_object() {
        Some(object) if object.contains_key("properties") => {
            push_properties(object, None, 0, &mut rows);
        }
        Some(object) if object.is_empty() => {}
        Some(object) => rows.push(row("(value)", object, false, 0)),
        None => {}
    }
    if rows.len() > MAX_SCHEMA_ROWS {
        let hidden = rows.len() - MAX_SCHEMA_ROWS;
        rows.truncate(MAX_SCHEMA_ROWS);
        rows.push(marker_row(
            0,
            format!("at least {hidden} more fields not shown"),
        ));
    }
    rows
}

fn push_properties(
    object: &Map<String, Value>,
    parent: Option<&str>,
    depth: usize,
    rows: &mut Vec<SchemaRow>,
) {
    if rows.len() > MAX_SCHEMA_ROWS {
        return;
    }
    if depth > MAX_SCHEMA_DEPTH {
        rows.push(marker_row(depth, "nested too deeply to show".to_owned()));
        return;
    }
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = object.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        let Some(property) = property.as_object() else {
            // `"field": true` in JSON Schema means "anything goes".
            rows.push(SchemaRow {
                depth,
                name: name.clone(),
                parent: parent.map(str::to_owned),
                type_label: "any".to_owned(),
                required: required.contains(&name.as_str()),
                description: None,
                default: None,
            });
            continue;
        };
        let mut field = row(name, property, required.contains(&name.as_str()), depth);
        field.parent = parent.map(str::to_owned);
        rows.push(field);
        let path = match parent {
            Some(parent) => format!("{parent}.{name}"),
            None => name.clone(),
        };
        if property.contains_key("properties") {
            push_properties(property, Some(&path), depth + 1, rows);
        } else if let Some(items) = property.get("items").and_then(Value::as_object)
            && items.contains_key("properties")
        {
            push_properties(items, Some(&format!("{path}[]")), depth + 1, rows);
        }
    }
}

fn row(name: &str, schema: &Map<String, Value>, required: bool, depth: usize) -> SchemaRow {
    SchemaRow {
        depth,
        name: name.to_owned(),
        parent: None,
        type_label: type_label(schema),
        required,
        description: schema
            .get("description")
            .or_else(|| schema.get("title"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        default: schema.get("default").map(Value::to_string),
    }
}

fn marker_row(depth: usize, note: String) -> SchemaRow {
    SchemaRow {
        depth,
        name: "…".to_owned(),
        parent: None,
        type_label: String::new(),
        required: false,
        description: Some(note),
        default: None,
    }
}

fn type_label(schema: &Map<String, Value>) -> String {
    let mut label = match schema.get("type") {
        Some(Value::String(ty)) => ty.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        _ => {
            if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
                format!("see {reference}")
            } else if let Some(kind) = ["oneOf", "anyOf", "allOf"]
                .into_iter()
                .find(|k| schema.contains_key(*k))
            {
                let alternatives = schema[kind]
                    .as_array()
                    .map(|alts| {
                        alts.iter()
                            .filter_map(Value::as_object)
                            .map(type_label)
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default();
                let joiner = if kind == "allOf" { " & " } else { " | " };
                alternatives.join(joiner)
            } else if schema.contains_key("properties") {
                "object".to_owned()
            } else {
                "any".to_owned()
            }
        }
    };
    if label == "array"
        && let Some(items) = schema.get("items").and_then(Value::as_object)
    {
        label = format!("array of {}", type_label(items));
    }
    if let Some(choices) = schema.get("enum").and_then(Value::as_array) {
        let choices: Vec<String> = choices.iter().map(Value::to_string).collect();
        label = format!("{label} (one of: {})", choices.join(", "));
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        label = format!("{label} ({format})");
    }
    label
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn summary(rows: &[SchemaRow]) -> Vec<String> {
        rows.iter()
            .map(|r| {
                format!(
                    "{}{} : {}{}{}{}",
                    "  ".repeat(r.depth),
                    r.name,
                    r.type_label,
                    if r.required { " [required]" } else { "" },
                    r.default
                        .as_deref()
                        .map(|d| format!(" = {d}"))
                        .unwrap_or_default(),
                    r.description
                        .as_deref()
                        .map(|d| format!(" -- {d}"))
                        .unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn spec_web_search_input_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search query"},
                "max_results": {"type": "integer", "default": 10}
            },
            "required": ["query"]
        });
        assert_eq!(
            summary(&schema_rows(&schema)),
            [
                "query : string [required] -- Search query",
                "max_results : integer = 10",
            ]
        );
    }

    #[test]
    fn spec_web_search_output_schema_nests_array_items() {
        let schema = json!({
            "type": "object",
            "properties": {
                "results": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string"},
                            "url": {"type": "string", "format": "uri"},
                            "snippet": {"type": "string"}
                        },
                        "required": ["url"]
                    }
                },
                "total_count": {"type": "integer"}
            }
        });
        assert_eq!(
            summary(&schema_rows(&schema)),
            [
                "results : array of object",
                "  title : string",
                "  url : string (uri) [required]",
                "  snippet : string",
                "total_count : integer",
            ]
        );
        let rows = schema_rows(&schema);
        assert_eq!(rows[1].parent.as_deref(), Some("results[]"));
        assert_eq!(rows[0].parent, None);
    }

    #[test]
    fn nested_objects_unions_enums_and_refs() {
        let schema = json!({
            "properties": {
                "filter": {
                    "type": "object",
                    "properties": {
                        "since": {"type": ["string", "null"]},
                        "order": {"type": "string", "enum": ["asc", "desc"], "default": "desc"}
                    }
                },
                "shape": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                "linked": {"$ref": "#/definitions/thing"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "anything": true
            },
            "required": ["shape", "anything"]
        });
        assert_eq!(
            summary(&schema_rows(&schema)),
            [
                "filter : object",
                "  since : string | null",
                "  order : string (one of: \"asc\", \"desc\") = \"desc\"",
                "shape : string | integer [required]",
                "linked : see #/definitions/thing",
                "tags : array of string",
                "anything : any [required]",
            ]
        );
    }

    #[test]
    fn scalar_and_empty_schemas() {
        assert_eq!(
            summary(&schema_rows(
                &json!({"type": "string", "description": "Plain text"})
            )),
            ["(value) : string -- Plain text"]
        );
        assert!(schema_rows(&json!({})).is_empty());
        assert!(schema_rows(&json!("not a schema")).is_empty());
    }

    #[test]
    fn depth_and_size_are_bounded() {
        let mut deep = json!({"type": "string"});
        for _ in 0..50 {
            deep = json!({"type": "object", "properties": {"inner": deep}});
        }
        let rows = schema_rows(&deep);
        assert_eq!(rows[2].parent.as_deref(), Some("inner.inner"));
        assert!(rows.len() <= MAX_SCHEMA_DEPTH + 2, "{}", rows.len());
        assert_eq!(
            rows.last().and_then(|r| r.description.as_deref()),
            Some("nested too deeply to show")
        );

        let wide: Map<String, Value> = (0..1000)
            .map(|i| (format!("f{i}"), json!({"type": "integer"})))
            .collect();
        let rows = schema_rows(&json!({"properties": wide}));
        assert_eq!(rows.len(), MAX_SCHEMA_ROWS + 1);
        assert_eq!(
            rows.last().and_then(|r| r.description.as_deref()),
            Some("at least 600 more fields not shown")
        );
    }
}
