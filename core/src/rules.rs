//! The named rules of the package formats: each a fact a publisher can act
//! on, with its own slug. A problem that breaks one carries it
//! ([`crate::Diagnostic::rule`]): `agentlang validate` prints the slug after
//! the message, and the registry answers with the rule's own problem type
//! (`/problems/<slug>`), so the CLI and the server name a failure alike.
//!
//! Problems without a rule (a missing field, a wrong type) are plain
//! validation failures; a rule is named where the spec gives a fact worth a
//! page of its own. The order here is the order the registry picks a
//! problem type in when one upload breaks several rules: the first listed.

use serde::Serialize;

macro_rules! rules {
    ($( $(#[$doc:meta])* $variant:ident = $slug:literal, $title:literal, $advice:literal; )*) => {
        /// A named rule of agent.yaml, tool.yaml or an events log.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule {
            $( $(#[$doc])* $variant, )*
        }

        impl Rule {
            /// Every rule, in the order the registry prefers them.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),*];

            /// The stable name: the problem type's last segment.
            pub fn slug(self) -> &'static str {
                match self { $(Rule::$variant => $slug,)* }
            }

            /// What breaking it means, in a few words (a problem's `title`).
            pub fn title(self) -> &'static str {
                match self { $(Rule::$variant => $title,)* }
            }

            /// What it checks and what to do, for its page and the docs.
            pub fn advice(self) -> &'static str {
                match self { $(Rule::$variant => $advice,)* }
            }
        }
    };
}

rules! {
    /// A capability configured in a mode the spec does not list for it.
    PermissionMode = "permission-mode",
        "A capability is asked for in a mode it does not allow",
        "Each capability allows only the permission modes the AgentLang spec lists for it (docs/agent-yaml.md, Permissions). Choose one of the modes the error names.";
    /// `scheduled` work without `background` listed as firmly.
    BackgroundRequired = "background-required",
        "Scheduled work without background",
        "A capability in scheduled mode runs while the user is away, which only a host that wakes the agent (background) can do. List background under permissions.required (or optional, when the scheduled capability is optional itself).";
    /// A `context.preserve` or `context.inject` value outside the vocabulary.
    ContextUnknown = "context-unknown",
        "Unknown context value",
        "context.preserve and context.inject take the values docs/agent-yaml.md lists (Context). The error suggests the nearest one.";
    /// An injected context value whose permission is not declared.
    ContextPermission = "context-permission",
        "Injected context needs a permission",
        "Some injected values need a capability (location needs location). Declare it under permissions.required or optional.";
    /// A prompt `{{variable}}` that nothing provides.
    TemplateVariable = "template-variable",
        "A prompt variable nothing provides",
        "A prompt template variable must name a value context.inject provides or a variable prompt.yaml declares. Inject it, declare it, or remove it.";
    /// A subagent's budget (a dynamic specialist's own, or a static crew's
    /// allocations together) above its parent's.
    BudgetExceedsParent = "budget-exceeds-parent",
        "A subagent's budget is above its parent's",
        "A child spends from its parent's budget: a subagent the delegate tool may pick may not have a constraints.budget.max_cost_usd above the parent's, and a static crew's allocations may not add up to more. Lower the children's budgets or raise the parent's.";
    /// An inline JSON Schema that is not a JSON Schema.
    SchemaInvalid = "schema-invalid",
        "An inline schema is not a valid JSON Schema",
        "input_schema and output_schema (in agent.yaml's tools and http_tools entries, and in tool.yaml) and a UI component's props must be valid JSON Schema (the draft 2020-12 metaschema unless $schema names another), and compile. The error names the offending keyword.";
    /// An inline schema that contradicts the locked tool's published one.
    SchemaContradictsLocked = "schema-contradicts-locked",
        "An inline schema contradicts the locked tool's schema",
        "An inline input_schema or output_schema of a registry tool may narrow the schema the locked version publishes, never contradict it (docs/agent-yaml.md, Tool schemas). Fix the inline schema or remove it.";
    /// A route whose source does not fit its destination.
    RouteIncompatible = "route-incompatible",
        "A route sends a value where it does not fit",
        "A tool's output routed to a UI component's props ({{json.path}} resolved in its output_schema), or a component's props sent as a sync action's params to a tool's input, must fit the destination's schema: the path exists, the prop or input property exists where the schema closes its properties, the types share one, required inputs are given (docs/agent-yaml.md, Routes). The error names both ends.";
    /// An agent requires an interface no locked tool provides.
    InterfaceUnprovided = "interface-unprovided",
        "No tool provides a required interface",
        "An agent that requires an interface needs a published tool that declares provides: [interface]. Publish one, or require a tool by name.";
    /// An event log's tool result that does not fit the tool's output schema.
    ToolOutputInvalid = "tool-output-invalid",
        "A tool result does not fit its output schema",
        "A tool.result event's output must validate against the output_schema of the tool its call named.";
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.slug())
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.slug())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_unique_and_lowercase() {
        let mut seen = std::collections::BTreeSet::new();
        for rule in Rule::ALL {
            assert!(seen.insert(rule.slug()), "{rule:?} repeats a slug");
            assert!(
                rule.slug()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{rule:?}"
            );
        }
    }
}

#[cfg(test)]
mod docs {
    use super::Rule;

    /// docs/agent-yaml.md's Rules table names every rule, in this order.
    #[test]
    fn the_reference_table_lists_every_rule_in_order() {
        let doc = include_str!("../../docs/agent-yaml.md");
        let table = doc
            .split("\n## Rules\n")
            .nth(1)
            .expect("docs/agent-yaml.md has a Rules section");
        let listed: Vec<&str> = table
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split('`').next())
            .collect();
        let slugs: Vec<&str> = Rule::ALL.iter().map(|r| r.slug()).collect();
        assert_eq!(listed, slugs);
    }
}
