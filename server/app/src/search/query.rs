//! A search as asked for: the query text, filters and page, checked.

use agentlang_core::{Kind, agent::MAX_LABEL_CHARS};

use crate::{FieldError, ServiceError};

/// Most ranked matches considered for one query; pages reach into them.
pub const MAX_CANDIDATES: i64 = store::search::MAX_COUNTED;
pub const DEFAULT_PER_PAGE: u32 = 20;
pub const MAX_PER_PAGE: u32 = 100;
/// Longest search text, in characters.
pub const MAX_QUERY_CHARS: usize = 256;

/// A checked search request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SearchQuery {
    /// Free text, taken literally: only its words reach the search syntax.
    /// Empty lists every package (by name).
    pub q: String,
    pub kind: Option<Kind>,
    /// Compared case-insensitively with agent.yaml's `category`.
    pub category: Option<String>,
    /// 1-based.
    pub page: u32,
    pub per_page: u32,
}

impl SearchQuery {
    /// Checks raw parameters, listing every invalid one.
    pub fn parse(
        q: Option<&str>,
        kind: Option<&str>,
        category: Option<&str>,
        page: Option<u32>,
        per_page: Option<u32>,
    ) -> Result<Self, ServiceError> {
        let mut errors = Vec::new();
        let kind = match kind.filter(|k| !k.is_empty()) {
            None => None,
            Some(k) => match k.parse::<Kind>() {
                Ok(kind) => Some(kind),
                Err(_) => {
                    errors.push(FieldError::new("kind", "must be agent, tool or protocol"));
                    None
                }
            },
        };
        // Both reach the search, its cache key and the page that echoes
        // them: bounded like what they are compared with.
        for (field, text, max) in [
            ("q", q, MAX_QUERY_CHARS),
            ("category", category, MAX_LABEL_CHARS),
        ] {
            if text.is_some_and(|t| t.chars().count() > max) {
                errors.push(FieldError::new(
                    field,
                    format!("must be at most {max} characters"),
                ));
            }
        }
        let page = page.unwrap_or(1);
        if page == 0 {
            errors.push(FieldError::new("page", "must be at least 1"));
        }
        let per_page = per_page.unwrap_or(DEFAULT_PER_PAGE);
        if !(1..=MAX_PER_PAGE).contains(&per_page) {
            errors.push(FieldError::new(
                "per_page",
                format!("must be between 1 and {MAX_PER_PAGE}"),
            ));
        }
        if !errors.is_empty() {
            return Err(ServiceError::Validation(errors));
        }
        Ok(Self {
            q: q.unwrap_or_default().to_owned(),
            kind,
            category: category
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
            page,
            per_page,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked_together() {
        let err = SearchQuery::parse(None, Some("widget"), None, Some(0), Some(500)).unwrap_err();
        let ServiceError::Validation(errors) = err else {
            panic!("expected a validation error, got {err:?}");
        };
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["kind", "page", "per_page"]);
        let long = "q".repeat(MAX_QUERY_CHARS + 1);
        let label = "c".repeat(MAX_LABEL_CHARS + 1);
        let err = SearchQuery::parse(Some(&long), None, Some(&label), None, None).unwrap_err();
        let ServiceError::Validation(errors) = err else {
            panic!("expected a validation error, got {err:?}");
        };
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["q", "category"]);
        let at = "q".repeat(MAX_QUERY_CHARS);
        assert!(SearchQuery::parse(Some(&at), None, None, None, None).is_ok());
        let q = SearchQuery::parse(Some("x"), Some("tools"), Some(" "), None, None).unwrap();
        assert_eq!(q.kind, Some(Kind::Tool));
        assert_eq!(q.category, None);
        assert_eq!((q.page, q.per_page), (1, DEFAULT_PER_PAGE));
    }
}
