//! A `GET /v0.1/servers` request as asked for, checked: its keyset
//! cursor, page size and filters.

use agentlang_core::Version;
use base64::Engine as _;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

use crate::ServiceError;

/// Servers per page when `limit` is not given.
pub const DEFAULT_LIMIT: u32 = 30;
/// Most servers per page: a larger `limit` is served as this.
pub const MAX_LIMIT: u32 = 100;
/// Longest `search` that can match a server name (a name's own bound).
pub const MAX_SEARCH_LEN: usize = agentlang_core::mcp::MAX_SERVER_NAME_LEN;

/// Where a page starts: after this `(normalized tool name, version id)`.
/// Sent to clients as an opaque token ([`Cursor::encode`]); a position in
/// an order that publishing never rearranges (names and ids only grow), so
/// a walk of every page meets every server once, however many are
/// published meanwhile.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    pub name: String,
    pub id: i64,
}

const CURSOR_PREFIX: &str = "1:";

impl Cursor {
    /// The token `metadata.nextCursor` carries.
    pub fn encode(&self) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!("{CURSOR_PREFIX}{}:{}", self.id, self.name))
    }

    /// A token [`Cursor::encode`] made; anything else is refused.
    pub fn decode(token: &str) -> Result<Self, String> {
        let bad = || "invalid cursor: send back `metadata.nextCursor` as it came".to_owned();
        if token.len() > 256 {
            return Err(bad());
        }
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| bad())?;
        let text = String::from_utf8(bytes).map_err(|_| bad())?;
        let (id, name) = text
            .strip_prefix(CURSOR_PREFIX)
            .and_then(|rest| rest.split_once(':'))
            .ok_or_else(bad)?;
        let id: i64 = id.parse().map_err(|_| bad())?;
        let name_ok = name.len() <= agentlang_core::names::MAX_NAME_LEN
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if id < 0 || !name_ok {
            return Err(bad());
        }
        Ok(Self {
            name: name.to_owned(),
            id,
        })
    }
}

/// Which versions a list shows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum VersionFilter {
    /// Every version, each an entry.
    All,
    /// Each server's latest version (`isLatest`).
    Latest,
    /// The version of this SemVer precedence, where a server has it.
    Exact(Version),
    /// A version text that is no SemVer version: nothing matches.
    Nothing,
}

/// A checked `GET /v0.1/servers`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListQuery {
    pub after: Option<Cursor>,
    pub limit: u32,
    /// Lowercased; `None` when not given or empty.
    pub search: Option<String>,
    /// Unix seconds.
    pub updated_since: Option<i64>,
    pub version: VersionFilter,
    /// Deleted versions too (always with `updated_since`, as the MCP
    /// document says).
    pub include_deleted: bool,
}

impl ListQuery {
    /// Checks the raw query parameters. A cursor the registry did not
    /// make, a `limit` that is no integer, an `updated_since` that is no
    /// RFC 3339 date-time and an `include_deleted` that is no boolean are
    /// refused (400); a `limit` out of 1..=100 is served as the nearest
    /// bound.
    pub fn parse(
        cursor: Option<&str>,
        limit: Option<&str>,
        search: Option<&str>,
        updated_since: Option<&str>,
        version: Option<&str>,
        include_deleted: Option<&str>,
    ) -> Result<Self, ServiceError> {
        let after = cursor
            .filter(|c| !c.is_empty())
            .map(Cursor::decode)
            .transpose()
            .map_err(ServiceError::Malformed)?;
        let limit = match limit.filter(|l| !l.is_empty()) {
            None => DEFAULT_LIMIT,
            Some(text) => parse_limit(text).ok_or_else(|| {
                ServiceError::Malformed(format!("limit {text:?} is not an integer"))
            })?,
        };
        let updated_since = updated_since
            .filter(|s| !s.is_empty())
            .map(|s| {
                OffsetDateTime::parse(s, &Rfc3339)
                    .map(OffsetDateTime::unix_timestamp)
                    .map_err(|_| {
                        ServiceError::Malformed(format!(
                            "updated_since {s:?} is not an RFC 3339 date-time (such as 2025-08-07T13:15:04Z)"
                        ))
                    })
            })
            .transpose()?;
        let include_deleted = parse_bool("include_deleted", include_deleted)?;
        let version = match version.filter(|v| !v.is_empty()) {
            None => VersionFilter::All,
            Some("latest") => VersionFilter::Latest,
            Some(text) => Version::parse(text).map_or(VersionFilter::Nothing, VersionFilter::Exact),
        };
        Ok(Self {
            after,
            limit,
            search: search
                .filter(|s| !s.is_empty())
                .map(str::to_ascii_lowercase),
            updated_since,
            version,
            include_deleted: include_deleted || updated_since.is_some(),
        })
    }
}

/// An integer, clamped to 1..=[`MAX_LIMIT`]; `None` when it is none.
fn parse_limit(text: &str) -> Option<u32> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if negative {
        return Some(1);
    }
    let value = digits.trim_start_matches('0').parse::<u64>().unwrap_or(
        if digits.trim_start_matches('0').is_empty() {
            0
        } else {
            u64::MAX
        },
    );
    Some(value.clamp(1, u64::from(MAX_LIMIT)) as u32)
}

/// A boolean query parameter: `true` or `false` (any case); absent is
/// `false`.
pub fn parse_bool(name: &str, value: Option<&str>) -> Result<bool, ServiceError> {
    match value.map(str::to_ascii_lowercase).as_deref() {
        None | Some("") | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(ServiceError::Malformed(format!(
            "{name} {other:?} is not a boolean (true or false)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(limit: &str) -> Result<ListQuery, ServiceError> {
        ListQuery::parse(None, Some(limit), None, None, None, None)
    }

    #[test]
    fn cursors_round_trip_and_nothing_else_is_one() {
        let cursor = Cursor {
            name: "web_search".to_owned(),
            id: 42,
        };
        assert_eq!(Cursor::decode(&cursor.encode()).unwrap(), cursor);
        for bad in ["", "nope", "MTpmb28", "!!!", &"A".repeat(300)] {
            assert!(Cursor::decode(bad).is_err(), "{bad}");
        }
        // Upper case or punctuation is no normalized name.
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("1:3:Web-Search");
        assert!(Cursor::decode(&forged).is_err());
    }

    #[test]
    fn limits_are_integers_served_within_bounds() {
        assert_eq!(parse("10").unwrap().limit, 10);
        assert_eq!(parse("1000").unwrap().limit, MAX_LIMIT);
        assert_eq!(parse("99999999999999999999999").unwrap().limit, MAX_LIMIT);
        assert_eq!(parse("0").unwrap().limit, 1);
        assert_eq!(parse("-3").unwrap().limit, 1);
        assert_eq!(
            ListQuery::parse(None, None, None, None, None, None)
                .unwrap()
                .limit,
            DEFAULT_LIMIT
        );
        for bad in ["ten", "1.5", "-", "1e3"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn filters_are_read_as_the_mcp_document_says() {
        let q = ListQuery::parse(
            None,
            None,
            Some("Weather"),
            Some("2025-08-07T13:15:04.280Z"),
            Some("latest"),
            None,
        )
        .unwrap();
        assert_eq!(q.search.as_deref(), Some("weather"));
        assert_eq!(q.updated_since, Some(1_754_572_504));
        assert_eq!(q.version, VersionFilter::Latest);
        // updated_since includes the deleted.
        assert!(q.include_deleted);
        let q = ListQuery::parse(None, None, None, None, Some("1.0.0+b"), Some("TRUE")).unwrap();
        assert!(matches!(q.version, VersionFilter::Exact(_)));
        assert!(q.include_deleted);
        let q = ListQuery::parse(None, None, None, None, Some("^1"), None).unwrap();
        assert_eq!(q.version, VersionFilter::Nothing);
        assert!(ListQuery::parse(None, None, None, Some("yesterday"), None, None).is_err());
        assert!(ListQuery::parse(None, None, None, None, None, Some("yes")).is_err());
        assert!(ListQuery::parse(Some("garbage"), None, None, None, None, None).is_err());
    }
}
