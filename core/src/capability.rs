//! The spec's Capability Categories table as code: every capability an
//! agent.yaml `permissions` block or a tool.yaml `permissions` list may name,
//! its category and that category's risk level. One table for agents, tools
//! and the catalog, so a capability added to the spec is added once.
//!
//! Risk levels are ordered (`Low < Medium < High < Critical`) so the catalog
//! can show the highest risk an agent asks for and the diff page can flag a
//! rise between two versions.
//!
//! The same table says in which permission modes each capability may be
//! asked for ([`Capability::modes`]): agent.yaml validation, the host check
//! and the docs read it from here.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A name that is not in the spec's capability table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a known capability")]
pub struct UnknownCapability(pub String);

/// How much harm a capability can do in the wrong hands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    Low,
    Medium,
    High,
    Critical,
}

impl RiskLevel {
    /// The spec's name for the level, e.g. `Critical`.
    pub fn as_str(self) -> &'static str {
        match self {
            RiskLevel::Low => "Low",
            RiskLevel::Medium => "Medium",
            RiskLevel::High => "High",
            RiskLevel::Critical => "Critical",
        }
    }
}

impl FromStr for RiskLevel {
    type Err = String;

    /// The spec's name, as [`RiskLevel::as_str`] writes it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            RiskLevel::Low,
            RiskLevel::Medium,
            RiskLevel::High,
            RiskLevel::Critical,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
        .ok_or_else(|| format!("{s:?} is not a risk level"))
    }
}

impl fmt::Display for RiskLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapabilityCategory {
    Network,
    Storage,
    Sensors,
    System,
    Identity,
}

impl CapabilityCategory {
    pub const ALL: [CapabilityCategory; 5] = [
        CapabilityCategory::Network,
        CapabilityCategory::Storage,
        CapabilityCategory::Sensors,
        CapabilityCategory::System,
        CapabilityCategory::Identity,
    ];

    pub fn risk(self) -> RiskLevel {
        match self {
            CapabilityCategory::Network => RiskLevel::Low,
            CapabilityCategory::Storage => RiskLevel::Medium,
            CapabilityCategory::Sensors | CapabilityCategory::System => RiskLevel::High,
            CapabilityCategory::Identity => RiskLevel::Critical,
        }
    }

    /// The spec's name for the category, e.g. `Sensors`.
    pub fn as_str(self) -> &'static str {
        match self {
            CapabilityCategory::Network => "Network",
            CapabilityCategory::Storage => "Storage",
            CapabilityCategory::Sensors => "Sensors",
            CapabilityCategory::System => "System",
            CapabilityCategory::Identity => "Identity",
        }
    }

    pub fn capabilities(self) -> impl Iterator<Item = Capability> {
        Capability::ALL
            .iter()
            .copied()
            .filter(move |c| c.category() == self)
    }
}

impl fmt::Display for CapabilityCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a host grants a capability (the spec's Permission Modes table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    UserTriggered,
    OnDemand,
    Continuous,
    Scheduled,
}

impl PermissionMode {
    pub const ALL: [PermissionMode; 4] = [
        PermissionMode::UserTriggered,
        PermissionMode::OnDemand,
        PermissionMode::Continuous,
        PermissionMode::Scheduled,
    ];
    pub const NAMES: &'static [&'static str] =
        &["user_triggered", "on_demand", "continuous", "scheduled"];

    /// As agent.yaml spells it: `on_demand`.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::UserTriggered => "user_triggered",
            PermissionMode::OnDemand => "on_demand",
            PermissionMode::Continuous => "continuous",
            PermissionMode::Scheduled => "scheduled",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

use PermissionMode::{Continuous, OnDemand, Scheduled, UserTriggered};

/// Every mode: the spec lists none for the capability, and each mode means
/// something for it.
const ANY_MODE: &[PermissionMode] = &[UserTriggered, OnDemand, Continuous, Scheduled];
/// Only while the user is there to see it.
const ATTENDED: &[PermissionMode] = &[UserTriggered, OnDemand];

macro_rules! capabilities {
    ($($variant:ident => $text:literal, $category:ident, $modes:expr;)*) => {
        /// A capability from the spec's Capability Categories table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Capability {
            $($variant,)*
        }

        impl Capability {
            pub const ALL: &'static [Capability] = &[$(Capability::$variant,)*];
            /// The spellings agent.yaml uses, in table order.
            pub const NAMES: &'static [&'static str] = &[$($text,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Capability::$variant => $text,)*
                }
            }

            pub fn category(self) -> CapabilityCategory {
                match self {
                    $(Capability::$variant => CapabilityCategory::$category,)*
                }
            }

            /// The permission modes agent.yaml may ask for it in, in the
            /// order of the spec's Permission Modes table.
            pub fn modes(self) -> &'static [PermissionMode] {
                match self {
                    $(Capability::$variant => $modes,)*
                }
            }
        }

        impl FromStr for Capability {
            type Err = UnknownCapability;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok(Capability::$variant),)*
                    other => Err(UnknownCapability(other.to_owned())),
                }
            }
        }
    };
}

// The modes column: where the spec lists modes (its comments on microphone
// and background) they are copied; where it shows them in examples
// (camera on_demand and scheduled, notifications on_demand) they are
// included; everything else allows every mode, except three capabilities
// held to attended modes, listed in docs/agent-yaml.md as stricter than the
// spec: clipboard (what the user copied, passwords included, read while no
// one watches), and wallet and signing (a payment or a signature the user
// never saw cannot be taken back).
capabilities! {
    Network => "network", Network, ANY_MODE;
    Websocket => "websocket", Network, ANY_MODE;
    P2p => "p2p", Network, ANY_MODE;
    Storage => "storage", Storage, ANY_MODE;
    Filesystem => "filesystem", Storage, ANY_MODE;
    Keychain => "keychain", Storage, ANY_MODE;
    // The spec: "user_triggered | on_demand | continuous".
    Microphone => "microphone", Sensors, &[UserTriggered, OnDemand, Continuous];
    Camera => "camera", Sensors, ANY_MODE;
    ScreenCapture => "screen_capture", Sensors, ANY_MODE;
    Location => "location", Sensors, ANY_MODE;
    // The spec: "scheduled | continuous"; the user is by definition away.
    Background => "background", System, &[Continuous, Scheduled];
    Notifications => "notifications", System, ANY_MODE;
    Clipboard => "clipboard", System, ATTENDED;
    Shell => "shell", System, ANY_MODE;
    Oauth => "oauth", Identity, ANY_MODE;
    Wallet => "wallet", Identity, ATTENDED;
    Signing => "signing", Identity, ATTENDED;
}

impl Capability {
    pub fn risk(self) -> RiskLevel {
        self.category().risk()
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Capability {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_category_table_matches_the_spec() {
        let table: Vec<(CapabilityCategory, Vec<&str>, RiskLevel)> = CapabilityCategory::ALL
            .into_iter()
            .map(|c| {
                (
                    c,
                    c.capabilities().map(Capability::as_str).collect(),
                    c.risk(),
                )
            })
            .collect();
        use CapabilityCategory::*;
        assert_eq!(
            table,
            [
                (Network, vec!["network", "websocket", "p2p"], RiskLevel::Low),
                (
                    Storage,
                    vec!["storage", "filesystem", "keychain"],
                    RiskLevel::Medium
                ),
                (
                    Sensors,
                    vec!["microphone", "camera", "screen_capture", "location"],
                    RiskLevel::High
                ),
                (
                    System,
                    vec!["background", "notifications", "clipboard", "shell"],
                    RiskLevel::High
                ),
                (
                    Identity,
                    vec!["oauth", "wallet", "signing"],
                    RiskLevel::Critical
                ),
            ]
        );
        assert!(RiskLevel::Low < RiskLevel::Medium);
        assert!(RiskLevel::High < RiskLevel::Critical);
        assert_eq!(
            "wallet".parse::<Capability>().unwrap().risk(),
            RiskLevel::Critical
        );
    }

    #[test]
    fn the_mode_table_follows_the_spec() {
        let modes = |c: Capability| -> Vec<&str> { c.modes().iter().map(|m| m.as_str()).collect() };
        // Listed by the spec's comments.
        assert_eq!(
            modes(Capability::Microphone),
            ["user_triggered", "on_demand", "continuous"]
        );
        assert_eq!(modes(Capability::Background), ["continuous", "scheduled"]);
        // Shown in the spec's examples.
        assert!(
            Capability::Camera
                .modes()
                .contains(&PermissionMode::OnDemand)
        );
        assert!(
            Capability::Camera
                .modes()
                .contains(&PermissionMode::Scheduled)
        );
        assert!(
            Capability::Notifications
                .modes()
                .contains(&PermissionMode::OnDemand)
        );
        // Stricter than the spec (docs/agent-yaml.md lists them).
        let attended: Vec<&str> = Capability::ALL
            .iter()
            .filter(|c| c.modes() == ATTENDED)
            .map(|c| c.as_str())
            .collect();
        assert_eq!(attended, ["clipboard", "wallet", "signing"]);
        // Every capability allows some mode, each in the table's order.
        for c in Capability::ALL {
            assert!(!c.modes().is_empty(), "{c}");
            assert!(c.modes().is_sorted(), "{c}");
        }
    }

    /// docs/agent-yaml.md's mode table says what [`Capability::modes`]
    /// does, for every capability once.
    #[test]
    fn the_docs_mode_table_is_this_table() {
        let doc = include_str!("../../docs/agent-yaml.md");
        let section = doc
            .split("\n## Permissions\n")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .expect("docs/agent-yaml.md has a Permissions section");
        let ticked = |cell: &str| -> Vec<String> {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect()
        };
        let mut listed: Vec<(String, Vec<String>)> = Vec::new();
        for row in section.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let modes = if cells[3] == "all four" {
                PermissionMode::NAMES
                    .iter()
                    .map(|m| (*m).to_owned())
                    .collect()
            } else {
                ticked(cells[3])
            };
            for capability in ticked(cells[1]) {
                listed.push((capability, modes.clone()));
            }
        }
        listed.sort();
        let mut table: Vec<(String, Vec<String>)> = Capability::ALL
            .iter()
            .map(|c| {
                (
                    c.as_str().to_owned(),
                    c.modes().iter().map(|m| m.as_str().to_owned()).collect(),
                )
            })
            .collect();
        table.sort();
        assert_eq!(listed, table);
    }

    #[test]
    fn names_round_trip_and_unknowns_fail() {
        for (c, name) in Capability::ALL.iter().zip(Capability::NAMES) {
            assert_eq!(name.parse::<Capability>().unwrap(), *c);
        }
        assert_eq!(
            "telepathy".parse::<Capability>(),
            Err(UnknownCapability("telepathy".into()))
        );
        assert_eq!(
            UnknownCapability("telepathy".into()).to_string(),
            "\"telepathy\" is not a known capability"
        );
    }
}
