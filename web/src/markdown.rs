//! Publisher-written markdown (descriptions, READMEs) turned into HTML that is
//! safe to embed: pulldown-cmark renders, ammonia sanitizes with an allow-list.

use std::{collections::HashSet, sync::LazyLock};

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// Relation every link in publisher content carries: no `window.opener`, no
/// referrer leak, and no search-ranking credit for whatever a publisher links.
pub const LINK_REL: &str = "noopener noreferrer nofollow";

/// The heading level publisher content sits under: the page has its `h1`
/// and a section `h2` ("Description"), so content headings start at `h3`.
const CONTAINER_LEVEL: usize = 2;

static SANITIZER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let mut builder = ammonia::Builder::default();
    builder
        .url_schemes(HashSet::from(["http", "https", "mailto"]))
        .link_rel(Some(LINK_REL))
        // Images would load from any origin and track readers; they are
        // turned into links before this point, and raw `<img>` goes here.
        // `h1`/`h2` belong to the page, not to publisher content.
        .rm_tags(["img", "h1", "h2"]);
    builder
});

/// Renders markdown to sanitized HTML. Headings are renumbered to nest under
/// the page's section heading (the outermost becomes `h3`, and no level is
/// skipped even when the source skips one), images become links to the image
/// (no remote loads), raw HTML is filtered by ammonia's allow-list, and only
/// `http`, `https` and `mailto` URLs survive.
pub fn render_markdown(source: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let mut headings = HeadingNester::default();
    let events = Parser::new_ext(source, options).map(|event| match event {
        Event::Start(Tag::Heading {
            level,
            id,
            classes,
            attrs,
        }) => Event::Start(Tag::Heading {
            level: headings.open(level),
            id,
            classes,
            attrs,
        }),
        Event::End(TagEnd::Heading(_)) => Event::End(TagEnd::Heading(headings.close())),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }),
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut unsafe_html = String::with_capacity(source.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut unsafe_html, events);
    SANITIZER.clean(&unsafe_html).to_string()
}

/// The registry's own documentation (the repository's `docs/*.md`, compiled
/// in, so trusted: no sanitizing): the first `h1` becomes the page's title,
/// every other heading gets an `id` to link to (its text, lowercased, with
/// runs of other characters turned into `-`), and links to `other.md#part`
/// become `/docs/other#part` (`README.md` is `/docs`), so one file reads
/// right on GitHub and when served. Returns the title and the HTML.
pub fn render_docs(source: &str) -> (String, String) {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let events: Vec<Event<'_>> = Parser::new_ext(source, options).collect();
    let mut title = String::new();
    let mut out = Vec::with_capacity(events.len());
    // Links to files the registry does not serve, kept as their text.
    let mut unlinked = 0usize;
    let mut i = 0;
    while i < events.len() {
        match &events[i] {
            Event::Start(Tag::Heading { level, .. }) => {
                let end = events[i..]
                    .iter()
                    .position(|e| matches!(e, Event::End(TagEnd::Heading(_))))
                    .map_or(events.len(), |n| i + n);
                let text: String = events[i + 1..end]
                    .iter()
                    .filter_map(|e| match e {
                        Event::Text(t) | Event::Code(t) => Some(t.as_ref()),
                        _ => None,
                    })
                    .collect();
                if *level == HeadingLevel::H1 && title.is_empty() {
                    title = text;
                    i = end + 1;
                    continue;
                }
                out.push(Event::Start(Tag::Heading {
                    level: *level,
                    id: Some(heading_id(&text).into()),
                    classes: Vec::new(),
                    attrs: Vec::new(),
                }));
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title: link_title,
                id,
            }) => match docs_link(dest_url) {
                Some(dest) => out.push(Event::Start(Tag::Link {
                    link_type: *link_type,
                    dest_url: dest.into(),
                    title: link_title.clone(),
                    id: id.clone(),
                })),
                None => unlinked += 1,
            },
            Event::End(TagEnd::Link) if unlinked > 0 => unlinked -= 1,
            other => out.push(other.clone()),
        }
        i += 1;
    }
    let mut html = String::with_capacity(source.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, out.into_iter());
    (title, html)
}

/// `Multi-agent orchestration` → `multi-agent-orchestration`.
fn heading_id(text: &str) -> String {
    let mut id = String::with_capacity(text.len());
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() || c == '_' {
            id.push(c);
        } else if !id.is_empty() && !id.ends_with('-') {
            id.push('-');
        }
    }
    id.trim_end_matches('-').to_owned()
}

/// A link between docs pages, as served (`other.md`, or `docs/other.md` from
/// the README); an absolute or in-page link unchanged; `None` for a link to
/// another file of the repository, which the registry does not serve.
fn docs_link(dest: &str) -> Option<String> {
    if dest.contains("://") || dest.starts_with('/') || dest.starts_with('#') {
        return Some(dest.to_owned());
    }
    let (file, fragment) = dest
        .split_once('#')
        .map_or((dest, None), |(f, x)| (f, Some(x)));
    let page = file
        .strip_prefix("docs/")
        .unwrap_or(file)
        .strip_suffix(".md")?;
    let path = if page == "README" {
        "/docs".to_owned()
    } else {
        format!("/docs/{page}")
    };
    Some(match fragment {
        Some(fragment) => format!("{path}#{fragment}"),
        None => path,
    })
}

/// The README's sections named `sections` (`## ` headings), in its order,
/// as HTML by [`render_docs`]: the catalog's guide is the README's own
/// text, so the two cannot drift apart.
pub fn render_guide(readme: &str, sections: &[&str]) -> String {
    let mut kept = String::new();
    let mut keeping = false;
    let mut fenced = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && let Some(heading) = line.strip_prefix("## ") {
            keeping = sections.contains(&heading.trim());
        } else if !fenced && line.starts_with("# ") {
            keeping = false;
        }
        if keeping {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    render_docs(&kept).1
}

const LEVELS: [HeadingLevel; 6] = [
    HeadingLevel::H1,
    HeadingLevel::H2,
    HeadingLevel::H3,
    HeadingLevel::H4,
    HeadingLevel::H5,
    HeadingLevel::H6,
];

/// Maps source heading levels to output levels: a heading goes one level
/// below the nearest enclosing (shallower) source heading, or directly under
/// the container. Relative nesting is kept and no level is ever skipped.
#[derive(Default)]
struct HeadingNester {
    /// (source level, output level) of the open enclosing headings.
    open: Vec<(usize, usize)>,
    current: usize,
}

impl HeadingNester {
    fn open(&mut self, level: HeadingLevel) -> HeadingLevel {
        let source = level as usize;
        while self.open.last().is_some_and(|(s, _)| *s >= source) {
            self.open.pop();
        }
        let parent = self.open.last().map_or(CONTAINER_LEVEL, |(_, out)| *out);
        self.current = (parent + 1).min(LEVELS.len());
        self.open.push((source, self.current));
        LEVELS[self.current - 1]
    }

    fn close(&self) -> HeadingLevel {
        LEVELS[self.current.clamp(1, LEVELS.len()) - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_take_their_title_link_between_pages_and_give_headings_ids() {
        let (title, html) = render_docs(
            "# agent.yaml\n\nSee [the lock](lockfile.md), [identity](agent-yaml.md#identity), \
             [the index](README.md), [a site](https://example.com/x.md) and [here](#models).\n\n\
             ## Multi-agent orchestration\n\n### `x-` keys\n",
        );
        assert_eq!(title, "agent.yaml");
        assert!(!html.contains("<h1"), "{html}");
        for expected in [
            "href=\"/docs/lockfile\"",
            "href=\"/docs/agent-yaml#identity\"",
            "href=\"/docs\"",
            "href=\"https://example.com/x.md\"",
            "href=\"#models\"",
            "<h2 id=\"multi-agent-orchestration\">",
            "<h3 id=\"x-keys\">",
        ] {
            assert!(html.contains(expected), "{expected} in {html}");
        }
    }

    /// Payloads from the usual XSS cheat sheets, in markdown and raw HTML.
    const XSS_CORPUS: &[&str] = &[
        "<script>alert(1)</script>",
        "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
        "<scr<script>ipt>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<img src=\"x\" onerror=\"alert(1)\">",
        "<body onload=alert(1)>",
        "<div onmouseover=\"alert(1)\">hover</div>",
        "<a href=\"javascript:alert(1)\">click</a>",
        "<a href=\"JaVaScRiPt:alert(1)\">click</a>",
        "<a href=\"&#106;avascript:alert(1)\">entity</a>",
        "<a href=\"&#x6A;&#x61;vascript:alert(1)\">hex entity</a>",
        "<a href=\"java\tscript:alert(1)\">tab</a>",
        "[click](javascript:alert(1))",
        "[click](JAVASCRIPT:alert(1))",
        "[click](&#106;avascript:alert(1))",
        "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "<a href=\"data:text/html,<script>alert(1)</script>\">data</a>",
        "![x](javascript:alert(1))",
        "![x\" onerror=\"alert(1)](https://example.com/a.png)",
        "<svg><script>alert(1)</script></svg>",
        "<svg onload=alert(1)>",
        "<svg><a xlink:href=\"javascript:alert(1)\"><text>x</text></a></svg>",
        "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
        "<math href=\"javascript:alert(1)\">CLICK</math>",
        "<iframe src=\"https://evil.example\"></iframe>",
        "<iframe srcdoc=\"<script>alert(1)</script>\"></iframe>",
        "<style>body{background:url(javascript:alert(1))}</style>",
        "<p style=\"background:url(javascript:alert(1))\">styled</p>",
        "<a href=\"https://ok.example\" \" onclick=\"alert(1)\">quote break</a>",
        "<a title='x' onclick='alert(1)'>single quotes</a>",
        "\"><script>alert(1)</script>",
        "'><img src=x onerror=alert(1)>",
        "&lt;script&gt;alert(1)&lt;/script&gt;",
        "<object data=\"javascript:alert(1)\"></object>",
        "<embed src=\"javascript:alert(1)\">",
        "<form action=\"javascript:alert(1)\"><button>go</button></form>",
        "<input autofocus onfocus=alert(1)>",
        "<details open ontoggle=alert(1)>",
        "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">",
        "<base href=\"javascript:alert(1)//\">",
        "<link rel=stylesheet href=\"https://evil.example/x.css\">",
        "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\"></noscript>",
        "<!--<img src=x onerror=alert(1)>-->",
        "[a](<javascript:alert(1)>)",
        "[ref]\n\n[ref]: javascript:alert(1)",
        "<a href=\"vbscript:msgbox(1)\">vb</a>",
    ];

    /// The tags of sanitized output (text cannot hold a raw `<`, ammonia
    /// escapes it), lowercased.
    fn tags(output: &str) -> Vec<String> {
        output
            .split('<')
            .skip(1)
            .map(|rest| {
                rest.split('>')
                    .next()
                    .unwrap_or_default()
                    .to_ascii_lowercase()
            })
            .collect()
    }

    fn assert_harmless(output: &str, payload: &str) {
        for tag in tags(output) {
            let name = tag
                .trim_start_matches('/')
                .split([' ', '\t', '\n', '/'])
                .next();
            assert!(
                !matches!(
                    name,
                    Some(
                        "script"
                            | "iframe"
                            | "style"
                            | "svg"
                            | "math"
                            | "object"
                            | "embed"
                            | "form"
                            | "input"
                            | "meta"
                            | "base"
                            | "link"
                            | "img"
                            | "noscript"
                    )
                ),
                "<{tag}> survived sanitizing {payload:?}: {output}"
            );
            for needle in ["javascript:", "vbscript:", "data:", "style=", "srcdoc"] {
                assert!(
                    !tag.contains(needle),
                    "{needle:?} survived in <{tag}> sanitizing {payload:?}: {output}"
                );
            }
            // An event handler attribute: whitespace, `on<letters>`, `=`.
            let bytes = tag.as_bytes();
            for (i, _) in tag.match_indices("on") {
                let after_space = i > 0 && matches!(bytes[i - 1], b' ' | b'\t' | b'\n' | b'/');
                let rest = &tag[i + 2..];
                let letters = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
                assert!(
                    !(after_space && letters > 0 && rest[letters..].trim_start().starts_with('=')),
                    "event handler survived in <{tag}> sanitizing {payload:?}: {output}"
                );
            }
        }
    }

    #[test]
    fn xss_corpus_is_neutralised() {
        for payload in XSS_CORPUS {
            assert_harmless(&render_markdown(payload), payload);
            // The same payload inside ordinary prose and lists.
            let embedded = format!("Intro text.\n\n- item {payload}\n\n{payload} trailing");
            assert_harmless(&render_markdown(&embedded), payload);
        }
    }

    #[test]
    fn harmless_check_catches_what_it_claims_to() {
        // The checker itself must fail on live payloads, or the corpus test
        // above proves nothing.
        for live in [
            "<a onclick=\"x\">",
            "<a title=\"t\" onmouseover = \"x\">",
            "<img src=x>",
            "<SCRIPT>",
            "<a href=\"javascript:x\">",
            "<a href=\"data:text/html,x\">",
        ] {
            let result = std::panic::catch_unwind(|| assert_harmless(live, live));
            assert!(result.is_err(), "checker missed {live}");
        }
    }

    #[test]
    fn ordinary_markdown_survives() {
        let source = "# Research Assistant\n\n## Usage\n\nSome *emphasis*, **strong** and `code`.\n\n\
            - one\n- two\n\n1. first\n2. second\n\n```rust\nfn main() {}\n```\n\n\
            [Docs](https://docs.example.com/guide) and <https://example.org>.\n\n\
            | a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n";
        let html = render_markdown(source);
        for expected in [
            "<h3>Research Assistant</h3>",
            "<h4>Usage</h4>",
            "<em>emphasis</em>",
            "<strong>strong</strong>",
            "<code>code</code>",
            "<ul>",
            "<li>one</li>",
            "<ol>",
            "<pre><code>fn main() {}",
            "<a href=\"https://docs.example.com/guide\" rel=\"noopener noreferrer nofollow\">Docs</a>",
            "<a href=\"https://example.org\" rel=\"noopener noreferrer nofollow\">",
            "<table>",
            "<th>a</th>",
            "<td>1</td>",
            "<blockquote>",
        ] {
            assert!(html.contains(expected), "missing {expected:?} in {html}");
        }
        assert!(!html.contains("<h1") && !html.contains("<h2"), "{html}");
    }

    #[test]
    fn images_become_links_and_load_nothing() {
        let html = render_markdown("![diagram](https://cdn.example.com/d.png)");
        assert_eq!(
            html.trim(),
            "<p><a href=\"https://cdn.example.com/d.png\" rel=\"noopener noreferrer nofollow\">diagram</a></p>"
        );
    }

    #[test]
    fn headings_nest_under_the_section_without_skipping() {
        let levels = |source: &str| -> Vec<String> {
            render_markdown(source)
                .match_indices("<h")
                .map(|(i, _)| render_markdown(source)[i + 1..i + 3].to_owned())
                .collect()
        };
        assert_eq!(levels("## Sources\n\n#### Deep"), ["h3", "h4"]);
        assert_eq!(
            levels("# A\n## B\n### C\n## D\n# E\n### F"),
            ["h3", "h4", "h5", "h4", "h3", "h4"]
        );
        assert_eq!(
            levels("# 1\n## 2\n### 3\n#### 4\n##### 5\n###### 6"),
            ["h3", "h4", "h5", "h6", "h6", "h6"]
        );
    }
}
