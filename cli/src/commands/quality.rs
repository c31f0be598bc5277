//! `quality DIR [--deny warnings]`: the quality review of an agent's
//! prompt (see `crate::quality`), printed; exit 1 when it fails.

use std::{path::Path, process::ExitCode};

use agentlang_core::Kind;
use anyhow::{Result, bail};

use crate::{args::ReviewArgs, env::Env, package_check, package_dir, quality, source};

pub fn run(env: &Env, dir: &Path, args: ReviewArgs) -> Result<ExitCode> {
    let tree = source::read_dir(dir)?;
    let shown = dir.display().to_string();
    if package_dir::detect_kind(&tree, &shown)? != Kind::Agent {
        bail!("{shown} is not an agent; only agents have a prompt to review");
    }
    let pkg = package_check::validated(env, &tree, &shown)?;
    let report = quality::review_package(env, &tree, &pkg)?;
    let passed = quality::print_report(&env.out, &shown, &report, args.deny_warnings());
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
