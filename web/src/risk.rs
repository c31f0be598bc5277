//! The spec's capability categories and their risk levels (agentlang spec,
//! "Capability Categories"), as the catalog shows them.

use std::fmt;

/// Risk level of a capability category, ordered from least to most risky.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RiskLevel {
    Low,
    Medium,
    High,
    Critical,
}

impl RiskLevel {
    pub fn label(self) -> &'static str {
        match self {
            RiskLevel::Low => "Low",
            RiskLevel::Medium => "Medium",
            RiskLevel::High => "High",
            RiskLevel::Critical => "Critical",
        }
    }

    /// CSS class giving the badge its colour; the label text is always shown
    /// beside it, so colour is never the only signal.
    pub fn css_class(self) -> &'static str {
        match self {
            RiskLevel::Low => "risk risk-low",
            RiskLevel::Medium => "risk risk-medium",
            RiskLevel::High => "risk risk-high",
            RiskLevel::Critical => "risk risk-critical",
        }
    }
}

impl fmt::Display for RiskLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A capability category of the spec, plus `Unlisted` for capability names
/// the spec's table does not mention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CapabilityCategory {
    Network,
    Storage,
    Sensors,
    System,
    Identity,
    Unlisted,
}

impl CapabilityCategory {
    /// The category of a capability name as written in `permissions`.
    pub fn of(capability: &str) -> Self {
        match capability {
            "network" | "websocket" | "p2p" => Self::Network,
            "storage" | "filesystem" | "keychain" => Self::Storage,
            "microphone" | "camera" | "screen_capture" | "location" => Self::Sensors,
            "background" | "notifications" | "clipboard" | "shell" => Self::System,
            "oauth" | "wallet" | "signing" => Self::Identity,
            _ => Self::Unlisted,
        }
    }

    /// The spec's risk level. An unlisted capability is rated High: nothing
    /// says it is safe, and a reader should look at it before installing.
    pub fn risk(self) -> RiskLevel {
        match self {
            Self::Network => RiskLevel::Low,
            Self::Storage => RiskLevel::Medium,
            Self::Sensors | Self::System | Self::Unlisted => RiskLevel::High,
            Self::Identity => RiskLevel::Critical,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Network => "Network",
            Self::Storage => "Storage",
            Self::Sensors => "Sensors",
            Self::System => "System",
            Self::Identity => "Identity",
            Self::Unlisted => "Unlisted",
        }
    }
}

impl fmt::Display for CapabilityCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capability_in_the_spec_table_has_its_risk() {
        let table: &[(&str, CapabilityCategory, RiskLevel)] = &[
            ("network", CapabilityCategory::Network, RiskLevel::Low),
            ("websocket", CapabilityCategory::Network, RiskLevel::Low),
            ("p2p", CapabilityCategory::Network, RiskLevel::Low),
            ("storage", CapabilityCategory::Storage, RiskLevel::Medium),
            ("filesystem", CapabilityCategory::Storage, RiskLevel::Medium),
            ("keychain", CapabilityCategory::Storage, RiskLevel::Medium),
            ("microphone", CapabilityCategory::Sensors, RiskLevel::High),
            ("camera", CapabilityCategory::Sensors, RiskLevel::High),
            (
                "screen_capture",
                CapabilityCategory::Sensors,
                RiskLevel::High,
            ),
            ("location", CapabilityCategory::Sensors, RiskLevel::High),
            ("background", CapabilityCategory::System, RiskLevel::High),
            ("notifications", CapabilityCategory::System, RiskLevel::High),
            ("clipboard", CapabilityCategory::System, RiskLevel::High),
            ("shell", CapabilityCategory::System, RiskLevel::High),
            ("oauth", CapabilityCategory::Identity, RiskLevel::Critical),
            ("wallet", CapabilityCategory::Identity, RiskLevel::Critical),
            ("signing", CapabilityCategory::Identity, RiskLevel::Critical),
        ];
        for (capability, category, risk) in table {
            assert_eq!(
                CapabilityCategory::of(capability),
                *category,
                "{capability}"
            );
            assert_eq!(category.risk(), *risk, "{capability}");
        }
    }

    #[test]
    fn unlisted_capabilities_are_rated_high() {
        assert_eq!(
            CapabilityCategory::of("teleport"),
            CapabilityCategory::Unlisted
        );
        assert_eq!(CapabilityCategory::Unlisted.risk(), RiskLevel::High);
    }

    #[test]
    fn levels_order_by_risk() {
        assert!(RiskLevel::Low < RiskLevel::Medium);
        assert!(RiskLevel::Medium < RiskLevel::High);
        assert!(RiskLevel::High < RiskLevel::Critical);
    }
}
