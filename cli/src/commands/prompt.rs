//! `prompt compile FILE --format markdown|xml`.

use std::{path::Path, process::ExitCode};

use agentlang_core::prompt::{Format, parse_prompt};
use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::{args::PromptFormat, env::Env};

pub fn compile(env: &Env, file: &Path, format: PromptFormat) -> Result<ExitCode> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let prompt = match parse_prompt(&bytes) {
        Ok(p) => p,
        Err(problems) => {
            if !env.out.json {
                for p in problems.lines() {
                    // Listed above the one `error:` line the command ends with.
                    eprintln!("  {} {p}", env.out.red("✗"));
                }
            }
            bail!("{} problem(s) in {}", problems.len(), file.display());
        }
    };
    let text = prompt.compile(match format {
        PromptFormat::Markdown => Format::Markdown,
        PromptFormat::Xml => Format::Xml,
    });
    env.out.emit(
        &json!({ "file": file, "format": format!("{format:?}").to_lowercase(), "text": text }),
        || text.trim_end().to_owned(),
    );
    Ok(ExitCode::SUCCESS)
}
