//! `build DIR`: validate, lock (agents), encrypt the prompt, sign and pack
//! into `NAME@VERSION.agent` or `.tool`.

use std::{path::Path, process::ExitCode};

use agentlang_core::Kind;
use anyhow::{Result, bail};

use crate::{args::BuildArgs, build, env::Env, package_check, package_dir, quality, source};

pub fn run(env: &Env, args: &BuildArgs) -> Result<ExitCode> {
    if args.quality {
        quality_gate(env, &args.dir, args.review.deny_warnings())?;
    }
    let built = build::build_dir(env, &args.dir, &args.keys, args.output.as_deref())?;
    env.out.emit(&built.summary, || built.human.clone());
    Ok(ExitCode::SUCCESS)
}

/// `build --quality`: the review of `agentlang quality` first; errors (and
/// warnings with `--deny warnings`) stop the build before anything is
/// locked, signed or written.
fn quality_gate(env: &Env, dir: &Path, deny_warnings: bool) -> Result<()> {
    let tree = source::read_dir(dir)?;
    let shown = dir.display().to_string();
    if package_dir::detect_kind(&tree, &shown)? != Kind::Agent {
        bail!("--quality reviews an agent's prompt; {shown} is not an agent");
    }
    let pkg = package_check::validated(env, &tree, &shown)?;
    let report = quality::review_package(env, &tree, &pkg)?;
    // With --json the build's own summary is the one document on stdout,
    // so the review only decides.
    let passed = if env.out.json {
        report.passes(deny_warnings)
    } else {
        quality::print_report(&env.out, &shown, &report, deny_warnings)
    };
    if !passed {
        bail!(
            "the quality review of {shown} failed ({}{}); nothing was built",
            report.summary(),
            if deny_warnings {
                ", --deny warnings"
            } else {
                ""
            }
        );
    }
    Ok(())
}
