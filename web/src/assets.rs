//! Static files compiled into the binary. The server answers
//! `GET /static/{name}` from [`lookup`]; templates link them by [`STYLESHEET`]
//! and [`COPY_SCRIPT`].

/// A compiled-in static file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticAsset {
    /// Path the pages link to, under `/static/`.
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static str,
}

pub const STYLESHEET: StaticAsset = StaticAsset {
    path: "/static/style.css",
    content_type: "text/css; charset=utf-8",
    body: include_str!("../static/style.css"),
};

/// Adds copy buttons to `<pre>` snippets; the pages work without it.
pub const COPY_SCRIPT: StaticAsset = StaticAsset {
    path: "/static/copy.js",
    content_type: "text/javascript; charset=utf-8",
    body: include_str!("../static/copy.js"),
};

pub const ALL: [StaticAsset; 2] = [STYLESHEET, COPY_SCRIPT];

/// The asset served at `path` (e.g. `/static/style.css`), if any.
pub fn lookup(path: &str) -> Option<StaticAsset> {
    ALL.into_iter().find(|asset| asset.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_compiled_assets_only() {
        assert_eq!(lookup("/static/style.css"), Some(STYLESHEET));
        assert_eq!(lookup("/static/copy.js"), Some(COPY_SCRIPT));
        assert_eq!(lookup("/static/../Cargo.toml"), None);
        assert!(STYLESHEET.body.contains(":focus-visible"));
    }

    #[test]
    fn assets_reference_no_other_origin() {
        for asset in ALL {
            assert!(!asset.body.contains("http://"), "{}", asset.path);
            assert!(!asset.body.contains("https://"), "{}", asset.path);
            assert!(!asset.body.contains("@import"), "{}", asset.path);
        }
    }
}
