//! The generative-UI contract: each component under `ui_components` becomes
//! a typed `render_<component>` tool the agent calls at runtime (the spec:
//! agent.yaml "generates typed render_* tools"), in the MCP tool shape, with
//! the component's `props` schema as its input schema.

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use super::model::{AgentSpec, UiComponent};

/// Components every renderer provides, so an HTTP tool's `ui_component`
/// may name them without declaring them (the spec's `failed:` state uses
/// `error_card`). Each takes the props listed in [`builtin_props`].
pub const BUILTIN_COMPONENTS: [&str; 4] = ["error_card", "markdown", "progress", "table"];

/// What a built-in component's props are, by name.
pub fn builtin_props(component: &str) -> Option<&'static [&'static str]> {
    match component {
        "error_card" => Some(&["message", "details"]),
        "markdown" => Some(&["text"]),
        "progress" => Some(&["label", "fraction"]),
        "table" => Some(&["columns", "rows"]),
        _ => None,
    }
}

/// The prefix of every generated render tool's name.
pub const RENDER_PREFIX: &str = "render_";

/// One generated render tool, in the MCP tool shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RenderTool {
    /// `render_<component>`.
    pub name: String,
    pub description: String,
    /// The component's props schema; an empty object schema when it
    /// declares none.
    #[serde(rename = "inputSchema")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub input_schema: Json,
}

/// The render tool's name for `component`.
pub fn render_tool_name(component: &str) -> String {
    format!("{RENDER_PREFIX}{component}")
}

/// The typed render tools of `spec`, one per component, in document order.
pub fn render_tools(spec: &AgentSpec) -> Vec<RenderTool> {
    spec.ui_components
        .iter()
        .map(|(name, component)| RenderTool {
            name: render_tool_name(name),
            description: describe(name, component),
            input_schema: component
                .props
                .clone()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        })
        .collect()
}

/// "Shows the email_card component. Its actions: archive and star run
/// gmail_modify_labels directly; reply and summarize ask the agent."
fn describe(name: &str, component: &UiComponent) -> String {
    let mut text = format!("Shows the {name} component to the user.");
    let direct: Vec<String> = component
        .sync_actions
        .iter()
        .map(|(action, a)| format!("{action} runs {} directly", a.tool))
        .collect();
    let asks: Vec<&str> = component.agent_actions.keys().map(String::as_str).collect();
    if !direct.is_empty() {
        text.push_str(&format!(" Actions: {}.", direct.join("; ")));
    }
    match asks.as_slice() {
        [] => {}
        [one] => text.push_str(&format!(" {one} asks the agent.")),
        many => text.push_str(&format!(" {} ask the agent.", many.join(", "))),
    }
    text
}

/// The property names a props schema declares (`None` without `props`,
/// or when the schema does not list `properties`: anything goes).
pub fn prop_names(component: &UiComponent) -> Option<Vec<&str>> {
    let properties = component.props.as_ref()?.get("properties")?.as_object()?;
    Some(properties.keys().map(String::as_str).collect())
}
