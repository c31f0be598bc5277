//! `/docs/{page}`: the repository's `docs/*.md`, compiled into the binary
//! from a fixed list, so no part of a request ever reaches the filesystem
//! and a clone's docs and the served ones are the same files.

use actix_web::{HttpResponse, web};
use agentlang_web::{pages::DocPage, render_docs};

use super::{CatalogError, html, session::MaybeSession};

/// Each page: its slug under `/docs/` and its markdown, in the order
/// `/docs` lists them.
const PAGES: &[(&str, &str)] = &[
    ("agent-yaml", include_str!("../../../docs/agent-yaml.md")),
    ("prompt-yaml", include_str!("../../../docs/prompt-yaml.md")),
    ("tool-yaml", include_str!("../../../docs/tool-yaml.md")),
    ("ux-yaml", include_str!("../../../docs/ux-yaml.md")),
    ("skills", include_str!("../../../docs/skills.md")),
    (
        "skill-packages",
        include_str!("../../../docs/skill-packages.md"),
    ),
    ("container", include_str!("../../../docs/container.md")),
    ("signatures", include_str!("../../../docs/signatures.md")),
    ("encryption", include_str!("../../../docs/encryption.md")),
    (
        "prompt-grants",
        include_str!("../../../docs/prompt-grants.md"),
    ),
    ("lockfile", include_str!("../../../docs/lockfile.md")),
    ("resolution", include_str!("../../../docs/resolution.md")),
    ("http-api", include_str!("../../../docs/http-api.md")),
    (
        "mcp-registry",
        include_str!("../../../docs/mcp-registry.md"),
    ),
    ("events", include_str!("../../../docs/events.md")),
    ("statuses", include_str!("../../../docs/statuses.md")),
    (
        "publishing-policy",
        include_str!("../../../docs/publishing-policy.md"),
    ),
    // Second factor (TOTP).
    ("two-factor", include_str!("../../../docs/two-factor.md")),
    ("advisories", include_str!("../../../docs/advisories.md")),
    (
        "transparency-log",
        include_str!("../../../docs/transparency-log.md"),
    ),
    ("a2a", include_str!("../../../docs/a2a.md")),
    ("clowl", include_str!("../../../docs/clowl.md")),
    ("moltspeak", include_str!("../../../docs/moltspeak.md")),
    (
        "trusted-publishing",
        include_str!("../../../docs/trusted-publishing.md"),
    ),
    // Staged releases.
    (
        "staged-releases",
        include_str!("../../../docs/staged-releases.md"),
    ),
    ("provenance", include_str!("../../../docs/provenance.md")),
];

/// The README's sections `/docs` shows as its guide.
const GUIDE_SECTIONS: [&str; 2] = ["Publish an agent", "Install and run an agent"];

/// The README's walkthrough, rendered once: the guide `/docs` shows is the
/// text a clone's README has.
pub fn guide() -> &'static str {
    static GUIDE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    GUIDE.get_or_init(|| {
        agentlang_web::render_guide(include_str!("../../../README.md"), &GUIDE_SECTIONS)
    })
}

/// `GET /docs/`: the spelling the README and `new --help` use.
pub async fn docs_slash() -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header((actix_web::http::header::LOCATION, "/docs"))
        .finish()
}

/// (slug, title) of every page, for `/docs`.
pub fn page_list() -> Vec<(String, String)> {
    PAGES
        .iter()
        .map(|(slug, source)| ((*slug).to_owned(), render_docs(source).0))
        .collect()
}

/// `GET /docs/{page}`.
pub async fn show_doc(
    session: MaybeSession,
    page: web::Path<String>,
) -> Result<HttpResponse, CatalogError> {
    let (_, source) = PAGES
        .iter()
        .find(|(slug, _)| *slug == page.as_str())
        .ok_or(CatalogError::NotFound)?;
    let (title, html_body) = render_docs(source);
    html(&DocPage {
        chrome: session.chrome(),
        title,
        html: html_body,
    })
}
