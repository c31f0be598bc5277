//! Which host a command checks against: a built-in profile by name, a host
//! file of your own in `<config>/hosts/NAME.yaml`, or a host file by path;
//! and the host's report as `check` and `install --host` print it.

use std::{fs, path::Path};

use agentlang_core::host::{HostProfile, HostReport, Outcome};
use anyhow::{Context, Result, bail};

use crate::{config, output::Output};

/// Host files are small; a file larger than this is not one.
const MAX_HOST_FILE_BYTES: u64 = 64 * 1024;

fn read_host_file(path: &Path) -> Result<HostProfile> {
    let meta = fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.len() > MAX_HOST_FILE_BYTES {
        bail!("{} is larger than a host file can be", path.display());
    }
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    HostProfile::parse(&bytes).with_context(|| format!("{} is not a host file", path.display()))
}

fn user_hosts_dir() -> Result<std::path::PathBuf> {
    Ok(config::config_dir()?.join("hosts"))
}

/// The host files in `<config>/hosts/`, each named after its host.
pub fn user_hosts() -> Result<Vec<HostProfile>> {
    let dir = user_hosts_dir()?;
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut hosts = Vec::new();
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    for path in paths {
        let host = read_host_file(&path)?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if stem != host.name.as_str() {
            bail!(
                "{} defines host {}; name the file {}.yaml",
                path.display(),
                host.name,
                host.name
            );
        }
        if HostProfile::find_builtin(host.name.as_str()).is_some() {
            bail!(
                "{} redefines the built-in host {}; give your host another name",
                path.display(),
                host.name
            );
        }
        hosts.push(host);
    }
    Ok(hosts)
}

/// `--host NAME|FILE`.
pub fn resolve(arg: &str) -> Result<HostProfile> {
    if arg.ends_with(".yaml") || arg.ends_with(".yml") || arg.contains('/') {
        return read_host_file(Path::new(arg));
    }
    if let Some(host) = HostProfile::find_builtin(arg) {
        return Ok(host.clone());
    }
    let mine = user_hosts()?;
    if let Some(host) = mine.iter().find(|h| h.name.as_str() == arg) {
        return Ok(host.clone());
    }
    let names: Vec<String> = HostProfile::builtin_names()
        .into_iter()
        .map(str::to_owned)
        .chain(mine.iter().map(|h| h.name.to_string()))
        .collect();
    bail!(
        "unknown host {arg:?}; known hosts: {} (add one as {}/{arg}.yaml)",
        names.join(", "),
        user_hosts_dir()?.display()
    )
}

/// One line per capability: ✓ granted, ↓ downgraded, ~ degraded, ✗ refused.
pub fn render_report(out: &Output, report: &HostReport) -> String {
    if report.capabilities.is_empty() {
        return format!("  {} the agent asks for no capabilities", out.green("✓"));
    }
    let mut lines = Vec::new();
    for d in &report.capabilities {
        let need = if d.required { "required" } else { "optional" };
        let (mark, what) = match d.outcome {
            Outcome::Granted => (
                out.green("✓"),
                match d.granted_mode {
                    Some(m) => format!("granted ({})", mode(m)),
                    None => "granted".to_owned(),
                },
            ),
            Outcome::Downgraded => (
                out.yellow("↓"),
                format!(
                    "downgraded: {} → {}",
                    d.requested_mode.map(mode).unwrap_or_default(),
                    d.granted_mode.map(mode).unwrap_or_default()
                ),
            ),
            Outcome::Degraded => (
                out.yellow("~"),
                format!("degraded: {}", d.reason.as_deref().unwrap_or("not granted")),
            ),
            Outcome::Refused => (
                out.red("✗"),
                format!("refused: {}", d.reason.as_deref().unwrap_or("not granted")),
            ),
        };
        lines.push(format!(
            "  {mark} {:<15} {need:<9} {what}",
            d.capability.as_str()
        ));
    }
    if report.asks_user {
        lines.push(format!(
            "  (host {} asks the user before it grants each capability)",
            report.host
        ));
    }
    lines.join("\n")
}

fn mode(m: agentlang_core::agent::PermissionMode) -> &'static str {
    use agentlang_core::agent::PermissionMode::*;
    match m {
        UserTriggered => "user_triggered",
        OnDemand => "on_demand",
        Continuous => "continuous",
        Scheduled => "scheduled",
    }
}
