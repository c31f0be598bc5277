//! How the catalog shows the spec's capability table. The table itself
//! (names, categories, risk levels) lives in [`agentlang_core::capability`];
//! this module adds only presentation: labels, CSS classes, and a
//! conservative reading of names the table lacks.

use std::fmt;

pub use agentlang_core::capability::{Capability, CapabilityCategory, RiskLevel};

/// How a risk level is drawn. A trait because [`RiskLevel`] is core's type;
/// the templates call `risk.label()` and `risk.css_class()`.
pub trait RiskBadge {
    fn label(self) -> &'static str;
    /// CSS class giving the badge its colour; the label text is always shown
    /// beside it, so colour is never the only signal.
    fn css_class(self) -> &'static str;
}

impl RiskBadge for RiskLevel {
    fn label(self) -> &'static str {
        self.as_str()
    }

    fn css_class(self) -> &'static str {
        match self {
            RiskLevel::Low => "risk risk-low",
            RiskLevel::Medium => "risk risk-medium",
            RiskLevel::High => "risk risk-high",
            RiskLevel::Critical => "risk risk-critical",
        }
    }
}

/// A capability's category as the catalog shows it: the spec's category, or
/// `Unlisted` for a name the spec's table does not mention (view models carry
/// names as stored, which a page must still render).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CategoryView {
    Listed(CapabilityCategory),
    Unlisted,
}

impl CategoryView {
    /// The category of a capability name as written in `permissions`.
    pub fn of(capability: &str) -> Self {
        capability
            .parse::<Capability>()
            .map_or(Self::Unlisted, |c| Self::Listed(c.category()))
    }

    /// The spec's risk level. An unlisted capability is rated High: nothing
    /// says it is safe, and a reader should look at it before installing.
    pub fn risk(self) -> RiskLevel {
        match self {
            Self::Listed(category) => category.risk(),
            Self::Unlisted => RiskLevel::High,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Listed(category) => category.as_str(),
            Self::Unlisted => "Unlisted",
        }
    }
}

impl fmt::Display for CategoryView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_capability_in_the_spec_table_has_its_category_and_risk() {
        for capability in Capability::ALL {
            let shown = CategoryView::of(capability.as_str());
            assert_eq!(shown, CategoryView::Listed(capability.category()));
            assert_eq!(shown.risk(), capability.risk(), "{capability}");
        }
        assert_eq!(CategoryView::of("screen_capture").label(), "Sensors");
        assert_eq!(CategoryView::of("wallet").risk(), RiskLevel::Critical);
    }

    #[test]
    fn unlisted_capabilities_are_rated_high() {
        assert_eq!(CategoryView::of("teleport"), CategoryView::Unlisted);
        assert_eq!(CategoryView::Unlisted.risk(), RiskLevel::High);
        assert_eq!(CategoryView::Unlisted.label(), "Unlisted");
    }

    #[test]
    fn levels_order_by_risk_and_have_badges() {
        assert!(RiskLevel::Low < RiskLevel::Medium);
        assert!(RiskLevel::Medium < RiskLevel::High);
        assert!(RiskLevel::High < RiskLevel::Critical);
        assert_eq!(RiskLevel::Critical.label(), "Critical");
        assert_eq!(RiskLevel::Medium.css_class(), "risk risk-medium");
    }
}
