//! Capabilities an agent may request, the spec's Capability Categories table
//! as code, permission modes and cron schedules.
//!
//! Risk levels are ordered (`Low < Medium < High < Critical`) so the catalog
//! can show the highest risk an agent asks for and the diff page can flag a
//! rise between two versions.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionError {
    #[error("{0:?} is not a known capability")]
    UnknownCapability(String),
    #[error("{0:?} is not a permission mode (user_triggered | on_demand | continuous | scheduled)")]
    UnknownMode(String),
    #[error("{0:?} is not a valid cron expression: {1}")]
    BadCron(String, String),
}

/// How much harm a capability can do in the wrong hands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    Low,
    Medium,
    High,
    Critical,
}

impl fmt::Display for RiskLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RiskLevel::Low => "Low",
            RiskLevel::Medium => "Medium",
            RiskLevel::High => "High",
            RiskLevel::Critical => "Critical",
        })
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

    pub fn capabilities(self) -> impl Iterator<Item = Capability> {
        Capability::ALL
            .iter()
            .copied()
            .filter(move |c| c.category() == self)
    }
}

macro_rules! capabilities {
    ($($variant:ident => $text:literal, $category:ident;)*) => {
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
        }

        impl FromStr for Capability {
            type Err = PermissionError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok(Capability::$variant),)*
                    other => Err(PermissionError::UnknownCapability(other.to_owned())),
                }
            }
        }
    };
}

capabilities! {
    Network => "network", Network;
    Websocket => "websocket", Network;
    P2p => "p2p", Network;
    Storage => "storage", Storage;
    Filesystem => "filesystem", Storage;
    Keychain => "keychain", Storage;
    Microphone => "microphone", Sensors;
    Camera => "camera", Sensors;
    ScreenCapture => "screen_capture", Sensors;
    Location => "location", Sensors;
    Background => "background", System;
    Notifications => "notifications", System;
    Clipboard => "clipboard", System;
    Shell => "shell", System;
    Oauth => "oauth", Identity;
    Wallet => "wallet", Identity;
    Signing => "signing", Identity;
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
    pub const NAMES: &'static [&'static str] =
        &["user_triggered", "on_demand", "continuous", "scheduled"];
}

impl FromStr for PermissionMode {
    type Err = PermissionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "user_triggered" => Ok(PermissionMode::UserTriggered),
            "on_demand" => Ok(PermissionMode::OnDemand),
            "continuous" => Ok(PermissionMode::Continuous),
            "scheduled" => Ok(PermissionMode::Scheduled),
            other => Err(PermissionError::UnknownMode(other.to_owned())),
        }
    }
}

/// A cron expression that `croner` accepts (5 fields, or 6 with seconds).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CronSchedule(String);

impl CronSchedule {
    pub fn new(expr: impl Into<String>) -> Result<Self, PermissionError> {
        let expr = expr.into();
        match croner::Cron::from_str(&expr) {
            Ok(_) => Ok(Self(expr)),
            Err(e) => Err(PermissionError::BadCron(expr, e.to_string())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for CronSchedule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for CronSchedule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
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
    fn names_round_trip_and_unknowns_fail() {
        for (c, name) in Capability::ALL.iter().zip(Capability::NAMES) {
            assert_eq!(name.parse::<Capability>().unwrap(), *c);
        }
        assert_eq!(
            "telepathy".parse::<Capability>(),
            Err(PermissionError::UnknownCapability("telepathy".into()))
        );
        assert_eq!(
            "sometimes".parse::<PermissionMode>(),
            Err(PermissionError::UnknownMode("sometimes".into()))
        );
    }

    #[test]
    fn cron_schedules_are_checked() {
        assert!(CronSchedule::new("0 * * * *").is_ok());
        assert!(CronSchedule::new("*/15 9-17 * * 1-5").is_ok());
        assert!(matches!(
            CronSchedule::new("every hour"),
            Err(PermissionError::BadCron(..))
        ));
        assert!(matches!(
            CronSchedule::new("61 * * * *"),
            Err(PermissionError::BadCron(..))
        ));
    }
}
