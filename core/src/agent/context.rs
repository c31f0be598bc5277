//! The vocabulary of agent.yaml's `context`: what `compaction.preserve` may
//! keep and what `inject` may ask the runtime to fill in, each injected
//! value with the capability it needs. One table, read by validation, the
//! host check (what an injection implies) and the prompt's template
//! variables (an injected value is one).

use crate::capability::Capability;

/// `context.compaction.preserve`: what compaction must never drop. The
/// spec's two; a runtime knows no others.
pub const PRESERVE: &[&str] = &["tool_results", "user_messages"];

/// One value `context.inject` may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Injected {
    /// As agent.yaml spells it, and as the prompt's `{{name}}` reads it.
    pub name: &'static str,
    /// What the runtime fills in.
    pub meaning: &'static str,
    /// The capability the host must grant before the runtime may fill it
    /// in; `None` when the runtime has it anyway.
    pub needs: Option<Capability>,
}

/// `context.inject`: the spec's three. `time` is the runtime's clock and
/// `user_profile` the runtime's own user store (the spec: "from runtime
/// user store"), so neither asks the host for anything; `location` comes
/// from a sensor, "if permitted".
pub const INJECT: &[Injected] = &[
    Injected {
        name: "time",
        meaning: "the current timestamp",
        needs: None,
    },
    Injected {
        name: "location",
        meaning: "the user's location (GPS or IP), when the host grants it",
        needs: Some(Capability::Location),
    },
    Injected {
        name: "user_profile",
        meaning: "the user's profile from the runtime's user store",
        needs: None,
    },
];

/// Every injectable name, for "did you mean".
pub const INJECT_NAMES: &[&str] = &["time", "location", "user_profile"];

/// The vocabulary entry for `name`.
pub fn injected(name: &str) -> Option<&'static Injected> {
    INJECT.iter().find(|i| i.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_the_table() {
        let names: Vec<&str> = INJECT.iter().map(|i| i.name).collect();
        assert_eq!(names, INJECT_NAMES);
        assert_eq!(
            injected("location").and_then(|i| i.needs),
            Some(Capability::Location)
        );
        assert_eq!(injected("tiem"), None);
    }

    /// docs/agent-yaml.md's vocabulary table is this one.
    #[test]
    fn the_docs_table_is_this_table() {
        let doc = include_str!("../../../docs/agent-yaml.md");
        let section = doc
            .split("\n## Context\n")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .expect("docs/agent-yaml.md has a Context section");
        let unticked = |cell: &str| cell.trim().trim_matches('`').to_owned();
        let rows: Vec<(String, String, String)> = section
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').collect();
                (unticked(cells[1]), unticked(cells[2]), unticked(cells[4]))
            })
            .collect();
        let mut want: Vec<(String, String, String)> = PRESERVE
            .iter()
            .map(|p| ("preserve".to_owned(), (*p).to_owned(), String::new()))
            .collect();
        want.extend(INJECT.iter().map(|i| {
            (
                "inject".to_owned(),
                i.name.to_owned(),
                i.needs.map(|c| c.as_str().to_owned()).unwrap_or_default(),
            )
        }));
        assert_eq!(rows, want);
    }
}
