//! Search-term highlighting and HTML escaping for text that is spliced into
//! templates as already-safe markup.

/// At most this many distinct terms are highlighted; a query of hundreds of
/// words would otherwise make highlighting quadratic in page size.
const MAX_TERMS: usize = 16;

/// Escapes the five characters that matter in HTML text and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    push_escaped(&mut out, text);
    out
}

fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            _ => out.push(c),
        }
    }
}

/// The whitespace-separated words of a search query, deduplicated
/// case-insensitively, longest first (so `web_search` wins over `web` where
/// both match), at most [`MAX_TERMS`].
pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query.split_whitespace() {
        if !terms
            .iter()
            .any(|t| t.to_lowercase() == word.to_lowercase())
        {
            terms.push(word.to_owned());
        }
        if terms.len() == MAX_TERMS {
            break;
        }
    }
    terms.sort_by_key(|t| std::cmp::Reverse(t.chars().count()));
    terms
}

/// Returns `text` as escaped HTML with every case-insensitive occurrence of a
/// query term wrapped in `<mark>`. Terms are matched as literal text (no regex,
/// no HTML): matching runs on the raw text and every piece, marked or not, is
/// escaped on output, so a term can never match inside an entity like `&amp;`
/// nor inject markup.
pub fn highlight_terms(text: &str, query: &str) -> String {
    let terms = query_terms(query);
    let mut out = String::with_capacity(text.len() + 32);
    let mut plain_start = 0;
    let mut pos = 0;
    while pos < text.len() {
        let matched = terms
            .iter()
            .find_map(|term| match_len_at(&text[pos..], term));
        match matched {
            Some(len) => {
                push_escaped(&mut out, &text[plain_start..pos]);
                out.push_str("<mark>");
                push_escaped(&mut out, &text[pos..pos + len]);
                out.push_str("</mark>");
                pos += len;
                plain_start = pos;
            }
            None => {
                pos += text[pos..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    push_escaped(&mut out, &text[plain_start..]);
    out
}

/// Byte length of the prefix of `haystack` that equals `term` ignoring case,
/// compared char by char so non-ASCII text stays on char boundaries.
fn match_len_at(haystack: &str, term: &str) -> Option<usize> {
    let mut hay = haystack.char_indices();
    for wanted in term.chars() {
        let (_, found) = hay.next()?;
        if !found.to_lowercase().eq(wanted.to_lowercase()) {
            return None;
        }
    }
    Some(hay.next().map_or(haystack.len(), |(i, _)| i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_every_case_insensitive_occurrence() {
        assert_eq!(
            highlight_terms("Web search and web fetch", "WEB"),
            "<mark>Web</mark> search and <mark>web</mark> fetch"
        );
    }

    #[test]
    fn script_in_text_and_query_is_escaped_not_run() {
        assert_eq!(
            highlight_terms("say <script>alert(1)</script>", "<script>"),
            "say <mark>&lt;script&gt;</mark>alert(1)&lt;/script&gt;"
        );
        assert_eq!(
            highlight_terms("plain text", "<script>alert(1)</script>"),
            "plain text"
        );
    }

    #[test]
    fn regex_metacharacters_are_literal() {
        assert_eq!(highlight_terms("a.b axb", "a.b"), "<mark>a.b</mark> axb");
        assert_eq!(
            highlight_terms("cost (usd)*", "(usd)*"),
            "cost <mark>(usd)*</mark>"
        );
        assert_eq!(highlight_terms("anything", ".*"), "anything");
        assert_eq!(highlight_terms("x[y]z", "[y]"), "x<mark>[y]</mark>z");
    }

    #[test]
    fn never_matches_inside_an_entity() {
        assert_eq!(highlight_terms("R&D", "amp"), "R&amp;D");
        assert_eq!(
            highlight_terms("a \"quote\"", "quot"),
            "a &quot;<mark>quot</mark>e&quot;"
        );
    }

    #[test]
    fn longest_term_wins_and_non_ascii_is_safe() {
        assert_eq!(
            highlight_terms("web_search tool", "web web_search"),
            "<mark>web_search</mark> tool"
        );
        assert_eq!(
            highlight_terms("Größe GRÖSSE", "größe"),
            "<mark>Größe</mark> GRÖSSE"
        );
        assert_eq!(
            highlight_terms("日本語のテキスト", "のテ"),
            "日本語<mark>のテ</mark>キスト"
        );
    }

    #[test]
    fn empty_query_only_escapes() {
        assert_eq!(highlight_terms("<b>", "   "), "&lt;b&gt;");
    }

    #[test]
    fn terms_are_deduplicated_and_capped() {
        assert_eq!(query_terms("Web web WEB fetch"), vec!["fetch", "Web"]);
        let many = (0..40)
            .map(|i| format!("t{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(query_terms(&many).len(), MAX_TERMS);
    }
}
