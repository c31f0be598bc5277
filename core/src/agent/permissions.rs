//! How an agent asks for capabilities: permission modes and cron schedules.
//! The capability table itself lives in [`crate::capability`], shared with
//! tool.yaml and the catalog.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionError {
    #[error("{0:?} is not a permission mode (user_triggered | on_demand | continuous | scheduled)")]
    UnknownMode(String),
    #[error("{0:?} is not a valid cron expression: {1}")]
    BadCron(String, String),
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
    fn unknown_modes_fail() {
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
