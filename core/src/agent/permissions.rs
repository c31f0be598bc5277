//! How an agent asks for capabilities: permission modes and cron schedules.
//! The capability table itself, with the modes each capability allows and
//! the [`PermissionMode`] type, lives in [`crate::capability`], shared with
//! tool.yaml, hosts and the catalog.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use crate::capability::PermissionMode;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionError {
    #[error("{0:?} is not a permission mode (user_triggered | on_demand | continuous | scheduled)")]
    UnknownMode(String),
    #[error("{0:?} is not a valid cron expression: {1}")]
    BadCron(String, String),
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
