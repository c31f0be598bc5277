//! `events validate FILE [--agent DIR]`, `events replay FILE` and `events
//! schema`: the event format of `core::events`, offline.

use std::{path::Path, process::ExitCode};

use agentlang_core::{
    Diagnostics,
    events::{self, Limits, OutputSchemas, timeline::Timeline},
    package::validate_agent_tree,
};
use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::{output::Output, source};

fn read(file: &Path) -> Result<Vec<u8>> {
    std::fs::read(file).with_context(|| format!("reading {}", file.display()))
}

/// The problems kept (`core::diagnostics` caps them), the "and N more"
/// line, and the count of all.
/// Each problem on a line of its own; in a JSON-lines log, at the line
/// the event is on.
fn print_problems(out: &Output, shown: &str, bytes: &[u8], problems: &Diagnostics) {
    let lines: Vec<String> = match events::line_numbers(bytes) {
        Some(numbers) => events::on_lines(problems, &numbers),
        None => problems.lines().collect(),
    };
    for p in lines {
        eprintln!("{} {shown}: {p}", out.red("error:"));
    }
    eprintln!("{} problem(s) in {shown}", problems.len());
}

pub fn validate(out: &Output, file: &Path, agent: Option<&Path>) -> Result<ExitCode> {
    let shown = file.display().to_string();
    // An install directory's tools are known: their published output
    // schemas hold the results of tools the agent describes no schema of.
    let mut locked = OutputSchemas::new();
    let package = match agent {
        Some(dir) if dir.join(crate::install::MANIFEST_FILE).is_file() => {
            let loaded = crate::install::load_verified(dir)?;
            for spec in loaded.tool_specs() {
                if let Some(schema) = spec.output_schema() {
                    locked.add(spec.name().as_str(), schema.clone());
                }
            }
            Some(loaded.package)
        }
        Some(dir) => {
            let tree = source::read_dir(dir)?;
            Some(validate_agent_tree(&tree).map_err(|d| {
                anyhow::anyhow!(
                    "{} is not a valid agent ({} problem(s); `agentlang validate {}` lists them)",
                    dir.display(),
                    d.len(),
                    dir.display()
                )
            })?)
        }
        None => None,
    };
    let bytes = read(file)?;
    // Every stage in one run: the events that pass the schema are still
    // checked across the log and against the agent's output schemas.
    let (log, problems) = events::validate(&bytes, &Limits::default(), package.as_ref(), locked);
    if problems.is_empty() {
        let agents: std::collections::BTreeSet<String> =
            events::agents_of(&log).into_iter().flatten().collect();
        out.emit(
            &json!({"valid": true, "events": log.events.len(), "agents": agents}),
            || {
                format!(
                    "{} {shown} is valid: {} events, {} agents{}",
                    out.green("✓"),
                    log.events.len(),
                    agents.len(),
                    if package.is_some() {
                        ", every tool declared, every delegation known and every output fitting its schema"
                    } else {
                        ""
                    }
                )
            },
        );
        return Ok(ExitCode::SUCCESS);
    }
    if out.json {
        out.emit(&json!({"valid": false, "problems": problems}), String::new);
    } else {
        print_problems(out, &shown, &bytes, &problems);
    }
    Ok(ExitCode::FAILURE)
}

pub fn replay(out: &Output, file: &Path) -> Result<ExitCode> {
    let shown = file.display().to_string();
    let bytes = read(file)?;
    let log = match events::parse(&bytes, &Limits::default()) {
        Ok(log) => log,
        Err(problems) => {
            if !out.json {
                print_problems(out, &shown, &bytes, &problems);
            }
            bail!(
                "{shown} cannot be replayed; `agentlang events validate {shown}` lists the problems"
            )
        }
    };
    let problems = events::check(&log, None);
    let timeline = Timeline::new(&log, &problems);
    out.emit(&timeline, || timeline.render_text().trim_end().to_owned());
    // A log with problems still replays; the exit code says it has them.
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub fn schema() -> Result<ExitCode> {
    crate::output::print_bytes(events::SCHEMA.as_bytes());
    Ok(ExitCode::SUCCESS)
}
