//! `ux.yaml`: optional hints a runtime uses to present the agent
//! (integrations, starter suggestions, tool status labels).

use indexmap::IndexMap;
use serde::Serialize;
use yaml_serde::Value;

use crate::agent::reader::{Extensions, Reader};
use crate::agent::{Labels, PatternError};
use crate::diagnostics::{Diagnostics, index, join};
use crate::yaml::{YamlLimits, parse_value};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UxHints {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub integrations: Vec<Integration>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
    /// Hints per tool the agent declares.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub tools: IndexMap<String, ToolHints>,
    /// Hints per MCP server, then per tool of that server.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub mcp_tools: IndexMap<String, IndexMap<String, ToolHints>>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Integration {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolHints {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Labels>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
    #[serde(flatten)]
    pub extensions: Extensions,
}

/// A website must be a plain http(s) URL (no wildcards).
fn check_website(url: &str) -> Result<(), PatternError> {
    if !(url.starts_with("https://") || url.starts_with("http://")) || url.contains('*') {
        return Err(PatternError::BadUrl(url.to_owned()));
    }
    crate::agent::check_url_pattern(url)
}

fn tool_hints(r: &mut Reader, v: &Value, path: &str) -> IndexMap<String, ToolHints> {
    let mut out = IndexMap::new();
    for (name, h) in r.dict(v, path) {
        let p = join(path, name);
        let Some(f) = r.fields(h, &p, &["labels", "suggestions"]) else {
            continue;
        };
        let labels = f
            .get("labels")
            .and_then(|l| crate::agent::read_labels(r, l, &f.at("labels")));
        let suggestions = r.opt_string_list(&f, "suggestions");
        out.insert(
            name.to_owned(),
            ToolHints {
                labels,
                suggestions,
                extensions: f.extensions,
            },
        );
    }
    out
}

pub fn parse_ux(bytes: &[u8]) -> Result<UxHints, Diagnostics> {
    let doc = parse_value(bytes, &YamlLimits::default())?;
    let mut r = Reader::new();
    let Some(f) = r.fields(
        &doc,
        "",
        &["integrations", "suggestions", "tools", "mcp_tools"],
    ) else {
        return Err(r.finish());
    };
    let mut integrations = Vec::new();
    if let Some(list) = f.get("integrations") {
        for (i, item) in r.seq(list, "integrations").iter().enumerate() {
            let p = index("integrations", i);
            let Some(inf) = r.fields(item, &p, &["name", "website"]) else {
                continue;
            };
            let name = r.req_text(&inf, "name");
            let website = r.opt_text(&inf, "website");
            if let Some(w) = &website
                && let Err(e) = check_website(w)
            {
                r.error(inf.at("website"), e);
            }
            if let Some(name) = name {
                integrations.push(Integration {
                    name,
                    website,
                    extensions: inf.extensions,
                });
            }
        }
    }
    let suggestions = r.opt_string_list(&f, "suggestions");
    let tools = f
        .get("tools")
        .map(|t| tool_hints(&mut r, t, "tools"))
        .unwrap_or_default();
    let mut mcp_tools = IndexMap::new();
    if let Some(m) = f.get("mcp_tools") {
        for (server, tools) in r.dict(m, "mcp_tools") {
            let hints = tool_hints(&mut r, tools, &join("mcp_tools", server));
            mcp_tools.insert(server.to_owned(), hints);
        }
    }
    let diags = r.finish();
    if !diags.is_empty() {
        return Err(diags);
    }
    Ok(UxHints {
        integrations,
        suggestions,
        tools,
        mcp_tools,
        extensions: f.extensions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC_UX: &str = r#"
integrations:
  - name: Gmail
    website: https://gmail.com
suggestions:
  - "Help me catch up on emails"
tools:
  gmail_list_messages:
    labels:
      running: "Loading inbox"
      finished: "Loaded inbox"
    suggestions:
      - "Show my unread emails"
mcp_tools:
  playwright-web:
    web_navigate:
      labels:
        running: "Navigating"
"#;

    #[test]
    fn the_spec_example_parses() {
        let ux = parse_ux(SPEC_UX.as_bytes()).unwrap();
        assert_eq!(
            ux.integrations[0].website.as_deref(),
            Some("https://gmail.com")
        );
        let hints = &ux.tools["gmail_list_messages"];
        assert_eq!(
            hints.labels.as_ref().and_then(|l| l.finished.as_deref()),
            Some("Loaded inbox")
        );
        assert!(ux.mcp_tools["playwright-web"].contains_key("web_navigate"));
    }

    #[test]
    fn problems_are_reported_with_paths() {
        let bad =
            "integrations:\n  - website: gmail.com\ntools:\n  x:\n    label: {}\nsuggestion: []\n";
        let msgs: Vec<String> = parse_ux(bad.as_bytes())
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            [
                "suggestion: unknown key; did you mean \"suggestions\"?",
                "integrations[0]: missing required key \"name\"",
                "integrations[0].website: \"gmail.com\" is not a URL pattern like https://*.example.com/path",
                "tools.x.label: unknown key; did you mean \"labels\"?",
            ]
        );
    }
}
