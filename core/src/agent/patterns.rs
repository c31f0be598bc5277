//! Sandbox patterns: `allowed_paths` (relative, may use `*`) and
//! `allowed_urls` (`http(s)://host[:port][/path]`, the host may start with a
//! `*.` wildcard label).

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("{0:?} is absolute; sandbox paths are relative to the agent's workspace")]
    AbsolutePath(String),
    #[error("{0:?} climbs out of the workspace with '..'")]
    ParentDir(String),
    #[error("{0:?} holds a backslash or control character")]
    BadPathChar(String),
    #[error("{0:?} is not a URL pattern like https://*.example.com/path")]
    BadUrl(String),
    #[error("{0:?} uses scheme {1:?}; only http, https, ws and wss are allowed")]
    BadScheme(String, String),
    #[error("{0:?} has a wildcard outside the leading host label")]
    BadWildcard(String),
}

pub fn check_path_pattern(p: &str) -> Result<(), PatternError> {
    if p.starts_with('/') || p.starts_with('~') {
        return Err(PatternError::AbsolutePath(p.to_owned()));
    }
    if p.chars().any(|c| c == '\\' || c.is_control()) {
        return Err(PatternError::BadPathChar(p.to_owned()));
    }
    if p.split('/').any(|c| c == "..") {
        return Err(PatternError::ParentDir(p.to_owned()));
    }
    Ok(())
}

pub fn check_url_pattern(u: &str) -> Result<(), PatternError> {
    let bad = || PatternError::BadUrl(u.to_owned());
    let (scheme, rest) = u.split_once("://").ok_or_else(bad)?;
    if !matches!(scheme, "http" | "https" | "ws" | "wss") {
        return Err(PatternError::BadScheme(u.to_owned(), scheme.to_owned()));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad());
    }
    let host = match authority.rsplit_once(':') {
        Some((h, port)) => {
            if port.parse::<u16>().is_err() {
                return Err(bad());
            }
            h
        }
        None => authority,
    };
    if host.is_empty() {
        return Err(bad());
    }
    for (i, label) in host.split('.').enumerate() {
        if label == "*" {
            if i != 0 {
                return Err(PatternError::BadWildcard(u.to_owned()));
            }
            continue;
        }
        if label.contains('*') {
            return Err(PatternError::BadWildcard(u.to_owned()));
        }
        let ok = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !ok {
            return Err(bad());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_patterns_pass() {
        for p in ["./output", "./data", "output/*.csv"] {
            check_path_pattern(p).unwrap();
        }
        for u in [
            "https://api.example.com",
            "https://*.googleapis.com",
            "http://127.0.0.1:8080/api",
        ] {
            check_url_pattern(u).unwrap();
        }
    }

    #[test]
    fn bad_patterns_fail_with_the_reason() {
        assert!(matches!(
            check_path_pattern("/etc"),
            Err(PatternError::AbsolutePath(_))
        ));
        assert!(matches!(
            check_path_pattern("./a/../../b"),
            Err(PatternError::ParentDir(_))
        ));
        assert!(matches!(
            check_url_pattern("api.example.com"),
            Err(PatternError::BadUrl(_))
        ));
        assert!(matches!(
            check_url_pattern("ftp://example.com"),
            Err(PatternError::BadScheme(..))
        ));
        assert!(matches!(
            check_url_pattern("https://api.*.com"),
            Err(PatternError::BadWildcard(_))
        ));
        assert!(matches!(
            check_url_pattern("https://exa mple.com"),
            Err(PatternError::BadUrl(_))
        ));
        assert!(matches!(
            check_url_pattern("https://example.com:99999"),
            Err(PatternError::BadUrl(_))
        ));
    }
}
