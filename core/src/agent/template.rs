//! The `{{...}}` placeholders agent.yaml strings may hold: `{{.env.KEY}}` in
//! MCP server environments, `{{name}}` / `{{json.a[0].b}}` in params and
//! props, `{{if x}} ... {{end}}` in HTTP body templates. Checked for syntax
//! here; runtimes do the substitution.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("\"{{{{\" at byte {0} is never closed with \"}}}}\"")]
    Unclosed(usize),
    #[error("empty placeholder \"{{{{}}}}\" at byte {0}")]
    Empty(usize),
    #[error("{0:?} is not a valid placeholder expression")]
    BadExpr(String),
    #[error("\"{{{{end}}}}\" at byte {0} has no matching \"{{{{if ...}}}}\"")]
    StrayEnd(usize),
    #[error("\"{{{{if ...}}}}\" is never closed with \"{{{{end}}}}\"")]
    UnclosedIf,
    #[error("{0:?} is not an environment placeholder like {{{{.env.NAME}}}}")]
    NotEnv(String),
}

/// One placeholder in a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placeholder {
    /// `{{path}}`: a value reference like `messageId` or `json.usage.cost`.
    Value(String),
    /// `{{.env.NAME}}`: an environment variable of the host.
    Env(String),
    /// `{{if path}}`.
    If(String),
    /// `{{end}}`.
    End,
}

impl Placeholder {
    /// The first name a value or condition refers to: `json` for
    /// `json.messages[0]`.
    pub fn root(&self) -> Option<&str> {
        match self {
            Placeholder::Value(p) | Placeholder::If(p) => {
                Some(p.split(['.', '[']).next().unwrap_or(p))
            }
            _ => None,
        }
    }
}

/// Parses every placeholder of `text` and checks that `if`/`end` balance.
pub fn placeholders(text: &str) -> Result<Vec<Placeholder>, TemplateError> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut rest = text;
    let mut offset = 0;
    while let Some(start) = rest.find("{{") {
        let at = offset + start;
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or(TemplateError::Unclosed(at))?;
        let inner = after[..end].trim();
        if inner.is_empty() {
            return Err(TemplateError::Empty(at));
        }
        let placeholder = parse_one(inner)?;
        match placeholder {
            Placeholder::If(_) => depth += 1,
            Placeholder::End => {
                depth = depth.checked_sub(1).ok_or(TemplateError::StrayEnd(at))?;
            }
            _ => {}
        }
        out.push(placeholder);
        let consumed = start + 2 + end + 2;
        offset += consumed;
        rest = &rest[consumed..];
    }
    if depth > 0 {
        return Err(TemplateError::UnclosedIf);
    }
    Ok(out)
}

/// The root names of the `{{name}}` / `{{name.field}}` variables in free
/// text (a prompt section), in order, each with its byte offset. Lenient
/// where [`placeholders`] is strict: a prompt may show other `{{...}}`
/// texts (a template language it explains, an unclosed `{{`), and only a
/// value path is a variable.
pub fn variable_roots(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(start) = text[from..].find("{{") {
        let open = from + start + 2;
        let Some(len) = text[open..].find("}}") else {
            break;
        };
        let inner = text[open..open + len].trim();
        if is_value_path(inner) {
            let root = inner.split(['.', '[']).next().unwrap_or(inner);
            out.push((from + start, root));
        }
        from = open + len + 2;
    }
    out
}

/// Checks a value that may only hold literal text and `{{.env.NAME}}`.
pub fn check_env_template(text: &str) -> Result<(), TemplateError> {
    for p in placeholders(text)? {
        if !matches!(p, Placeholder::Env(_)) {
            return Err(TemplateError::NotEnv(describe(&p)));
        }
    }
    Ok(())
}

fn describe(p: &Placeholder) -> String {
    match p {
        Placeholder::Value(v) => format!("{{{{{v}}}}}"),
        Placeholder::Env(v) => format!("{{{{.env.{v}}}}}"),
        Placeholder::If(v) => format!("{{{{if {v}}}}}"),
        Placeholder::End => "{{end}}".to_owned(),
    }
}

fn parse_one(inner: &str) -> Result<Placeholder, TemplateError> {
    if inner == "end" {
        return Ok(Placeholder::End);
    }
    if let Some(cond) = inner.strip_prefix("if ") {
        let cond = cond.trim();
        return if is_value_path(cond) {
            Ok(Placeholder::If(cond.to_owned()))
        } else {
            Err(TemplateError::BadExpr(inner.to_owned()))
        };
    }
    if let Some(name) = inner.strip_prefix(".env.") {
        return if is_env_name(name) {
            Ok(Placeholder::Env(name.to_owned()))
        } else {
            Err(TemplateError::BadExpr(inner.to_owned()))
        };
    }
    if is_value_path(inner) {
        Ok(Placeholder::Value(inner.to_owned()))
    } else {
        Err(TemplateError::BadExpr(inner.to_owned()))
    }
}

/// An environment variable name as POSIX shells accept it.
pub fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_ident(s: &str) -> bool {
    is_env_name(s)
}

/// `a`, `a.b`, `a[0].b`: identifiers joined by dots, each optionally
/// followed by numeric indices.
fn is_value_path(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|segment| {
            let (name, mut indices) = match segment.find('[') {
                Some(i) => (&segment[..i], &segment[i..]),
                None => (segment, ""),
            };
            if !is_ident(name) {
                return false;
            }
            while let Some(rest) = indices.strip_prefix('[') {
                let Some(close) = rest.find(']') else {
                    return false;
                };
                let digits = &rest[..close];
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return false;
                }
                indices = &rest[close + 1..];
            }
            indices.is_empty()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_templates_parse() {
        let body =
            "{\n\"text\": \"{{text}}\"\n{{if reply_to}}, \"reply_to\": \"{{reply_to}}\"{{end}}\n}";
        let p = placeholders(body).unwrap();
        assert_eq!(
            p,
            [
                Placeholder::Value("text".into()),
                Placeholder::If("reply_to".into()),
                Placeholder::Value("reply_to".into()),
                Placeholder::End,
            ]
        );
        let p = placeholders("{{json.messages[0].images}}").unwrap();
        assert_eq!(p[0].root(), Some("json"));
        check_env_template("{{.env.STRIPE_SECRET_KEY}}").unwrap();
        check_env_template("Bearer {{ .env.TOKEN }}").unwrap();
        check_env_template("plain").unwrap();
    }

    #[test]
    fn variable_roots_skip_what_is_not_a_variable() {
        let text = "It is {{ time }} at {{location.city}}; {{user_profile.name[0]}}. \
                    Go templates look like {{if .X}} or {{ a b }}; {{.env.HOME}} too. {{open";
        let roots: Vec<&str> = variable_roots(text).into_iter().map(|(_, r)| r).collect();
        assert_eq!(roots, ["time", "location", "user_profile"]);
        assert_eq!(variable_roots("x{{a}}")[0], (1, "a"));
    }

    #[test]
    fn broken_templates_fail_with_the_reason() {
        assert_eq!(placeholders("a {{b"), Err(TemplateError::Unclosed(2)));
        assert_eq!(placeholders("{{ }}"), Err(TemplateError::Empty(0)));
        assert_eq!(
            placeholders("{{a b}}"),
            Err(TemplateError::BadExpr("a b".into()))
        );
        assert_eq!(
            placeholders("{{a[x]}}"),
            Err(TemplateError::BadExpr("a[x]".into()))
        );
        // Found by the agent_yaml fuzz target: a stray `]` after an index
        // sliced past the end of the segment and panicked.
        for bad in ["a[0]]b", "a[0]x", "a[0]]", "a]", "a[0][", "a[]"] {
            assert_eq!(
                placeholders(&format!("{{{{{bad}}}}}")),
                Err(TemplateError::BadExpr(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(placeholders("{{a[0][12].b}}").unwrap().len(), 1);
        assert_eq!(placeholders("x{{end}}"), Err(TemplateError::StrayEnd(1)));
        assert_eq!(placeholders("{{if a}}"), Err(TemplateError::UnclosedIf));
        assert_eq!(
            check_env_template("{{.env.1X}}"),
            Err(TemplateError::BadExpr(".env.1X".into()))
        );
        assert_eq!(
            check_env_template("{{env.KEY}}"),
            Err(TemplateError::NotEnv("{{env.KEY}}".into()))
        );
    }
}
