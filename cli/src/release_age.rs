//! `--min-release-age`: hold back versions published less than a given time
//! ago (pnpm's `minimumReleaseAge`, uv's `exclude-newer`), so a release
//! that turns out malicious within hours never reaches a lock or an
//! install made in those hours. `lock` sends the cutoff to the registry's
//! resolver (`exclude_newer`), which names what it held back; `install`
//! applies it to the agent's own version and warns about pins younger
//! than it, which it keeps: a lock is the publisher's, and installing the
//! same agent must give the same tools.

use std::{fmt, str::FromStr, time::Duration};

use anyhow::{Context, Result};
use serde::{Deserialize, Deserializer};
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// How old a version must be; `0` turns a configured default off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinReleaseAge(Duration);

impl FromStr for MinReleaseAge {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s == "0" {
            return Ok(Self(Duration::ZERO));
        }
        humantime::parse_duration(s)
            .map(Self)
            .map_err(|e| format!("{s:?} is not a duration like 3d, 36h or 90m: {e}"))
    }
}

impl<'de> Deserialize<'de> for MinReleaseAge {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for MinReleaseAge {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for MinReleaseAge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl MinReleaseAge {
    /// Unix seconds: versions published after it are too young. `None`
    /// for an age of zero.
    pub fn cutoff(self) -> Option<i64> {
        if self.0.is_zero() {
            return None;
        }
        let age = i64::try_from(self.0.as_secs()).unwrap_or(i64::MAX);
        Some(
            OffsetDateTime::now_utc()
                .unix_timestamp()
                .saturating_sub(age),
        )
    }
}

/// A cutoff as the registry's `exclude_newer` reads it.
pub fn rfc3339(unix: i64) -> Result<String> {
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .context("the minimum release age reaches before 1970")
}

/// Whether a version published at `published_at` (RFC 3339, as the index
/// spells it) is younger than `cutoff`. A registry that predates
/// `published_at` sends none: such versions are not held back.
pub fn too_young(published_at: Option<&str>, cutoff: i64) -> bool {
    published_at
        .and_then(|p| OffsetDateTime::parse(p, &Rfc3339).ok())
        .is_some_and(|t| t.unix_timestamp() > cutoff)
}

/// The versions the resolver held back, from its `AgentLang-Held-Back`
/// header (`name@version;published=<RFC 3339>`, comma-separated) and the
/// count of all of them (`AgentLang-Held-Back-Count`).
pub fn held_back(headers: &reqwest::header::HeaderMap) -> (Vec<String>, usize) {
    let listed: Vec<String> = headers
        .get("AgentLang-Held-Back")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(", ")
                .filter(|item| !item.is_empty())
                .map(|item| match item.split_once(";published=") {
                    Some((package, at)) => format!("{package} (published {at})"),
                    None => item.to_owned(),
                })
                .collect()
        })
        .unwrap_or_default();
    let count = headers
        .get("AgentLang-Held-Back-Count")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(listed.len());
    (listed, count)
}

/// One line naming what was held back, or `None` when nothing was.
pub fn held_back_note(age: MinReleaseAge, listed: &[String], count: usize) -> Option<String> {
    if count == 0 {
        return None;
    }
    let more = count.saturating_sub(listed.len());
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "held back as younger than {age} (--min-release-age): {}{more}",
        listed.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_as_durations_and_zero_turns_the_default_off() {
        let age: MinReleaseAge = "3d".parse().unwrap();
        assert_eq!(age.0, Duration::from_secs(3 * 86_400));
        assert_eq!(age.to_string(), "3days");
        assert_eq!("0".parse::<MinReleaseAge>().unwrap().cutoff(), None);
        assert!("soon".parse::<MinReleaseAge>().is_err());
        let cutoff = "1h".parse::<MinReleaseAge>().unwrap().cutoff().unwrap();
        let now = OffsetDateTime::now_utc().unix_timestamp();
        assert!((now - 3600 - cutoff).abs() <= 1);
    }

    #[test]
    fn young_is_after_the_cutoff_and_unknown_is_never_young() {
        let at = "2026-11-28T10:00:00Z";
        let t = OffsetDateTime::parse(at, &Rfc3339)
            .unwrap()
            .unix_timestamp();
        assert!(too_young(Some(at), t - 1));
        assert!(!too_young(Some(at), t));
        assert!(!too_young(None, 0));
    }

    #[test]
    fn the_header_reads_back_into_names_and_a_count() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            "AgentLang-Held-Back",
            "a@1.1.0;published=2026-11-28T10:00:00Z, b@2.0.0;published=2026-11-28T11:00:00Z"
                .parse()
                .unwrap(),
        );
        headers.insert("AgentLang-Held-Back-Count", "3".parse().unwrap());
        let (listed, count) = held_back(&headers);
        assert_eq!(listed[0], "a@1.1.0 (published 2026-11-28T10:00:00Z)");
        assert_eq!(count, 3);
        let note = held_back_note("2d".parse().unwrap(), &listed, count).unwrap();
        assert!(
            note.ends_with("b@2.0.0 (published 2026-11-28T11:00:00Z) and 1 more"),
            "{note}"
        );
        assert_eq!(held_back_note("2d".parse().unwrap(), &[], 0), None);
    }
}
