//! Time as the registry stores it (Unix seconds) and shows it (RFC 3339).

use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// Now, in Unix seconds (UTC): the unit of every stored timestamp.
pub fn now() -> i64 {
    OffsetDateTime::now_utc().unix_timestamp()
}

/// Unix seconds as RFC 3339 (`2025-01-29T10:30:00Z`), the API's timestamp
/// format.
pub fn rfc3339(unix_seconds: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix_seconds)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}
