//! Statuses of pinned packages (docs/statuses.md): `lock` and `install`
//! warn, one line per pin, when a pinned version or its package is not
//! `active` (deprecated, with the reason and the successor to use, or
//! archived). A quarantined pin never gets here: the registry refuses to
//! resolve or serve it.

use std::collections::BTreeSet;

use agentlang_core::{Kind, PackageName, Version};
use serde::Deserialize;

use crate::env::Env;

/// A status as the index shows it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Status {
    pub status: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub successor: Option<String>,
}

impl Status {
    /// `deprecated: <reason>; use <successor> instead`.
    fn describe(&self) -> String {
        let mut s = self.status.clone();
        if let Some(reason) = &self.reason {
            s.push_str(": ");
            s.push_str(&crate::client::one_line(reason));
        }
        if let Some(successor) = &self.successor {
            s.push_str(&format!("; use {successor} instead"));
        }
        s
    }
}

/// What of `GET /api/v1/index/{kind}/{name}` the warnings read.
#[derive(Debug, Deserialize)]
struct IndexStatuses {
    #[serde(default)]
    status: Option<Status>,
    #[serde(default)]
    versions: Vec<VersionStatus>,
}

#[derive(Debug, Deserialize)]
struct VersionStatus {
    version: String,
    #[serde(default)]
    status: Option<Status>,
}

/// The most packages looked up for warnings: a lock pins at most a few
/// hundred tools, and a warning is not worth more requests than that.
const MAX_LOOKUPS: usize = 512;

/// The warning lines for these pins: the version's own status, else its
/// package's. A pin whose index cannot be read is skipped (the warning is
/// advice; the lock or install stands on its own).
pub fn warnings(env: &Env, pins: &[(Kind, PackageName, Version)]) -> Vec<String> {
    let Ok(client) = env.anonymous() else {
        return Vec::new();
    };
    let mut seen = BTreeSet::new();
    let mut lines = Vec::new();
    for (kind, name, version) in pins.iter().take(MAX_LOOKUPS) {
        if !seen.insert((kind.as_str(), name.normalized(), version.to_string())) {
            continue;
        }
        let path = format!("/api/v1/index/{}/{name}", kind.plural());
        let Ok(index) = client.send_json::<IndexStatuses>(client.get(&path)) else {
            continue;
        };
        let own = index
            .versions
            .iter()
            .find(|v| Version::parse(&v.version).is_ok_and(|v| v == *version))
            .and_then(|v| v.status.clone());
        let line = match (own, index.status) {
            (Some(s), _) => format!("{kind} {name}@{version} is {}", s.describe()),
            (None, Some(s)) => format!("{kind} {name} (pinned at {version}) is {}", s.describe()),
            (None, None) => continue,
        };
        lines.push(line);
    }
    lines
}

/// Prints [`warnings`] on stderr, each as `warning: ...` (shown with `-q`
/// too, as warnings are).
pub fn warn(env: &Env, pins: &[(Kind, PackageName, Version)]) {
    for line in warnings(env, pins) {
        eprintln!("{} {line}", env.out.yellow("warning:"));
    }
}

/// [`warn`] for the tools and skills a lock pins.
pub fn warn_lock(env: &Env, lock: &agentlang_core::lockfile::Lockfile) {
    let pins: Vec<(Kind, PackageName, Version)> = lock
        .tools
        .iter()
        .map(|(name, t)| (Kind::Tool, name.clone(), t.version.clone()))
        .chain(
            lock.skills
                .iter()
                .map(|(name, s)| (Kind::Skill, name.clone(), s.version.clone())),
        )
        .collect();
    warn(env, &pins);
}

/// [`warn`] for what an install wrote: the agent, its tools and skills.
pub fn warn_install(env: &Env, manifest: &crate::install::InstallManifest) {
    let pins: Vec<(Kind, PackageName, Version)> = std::iter::once(&manifest.agent)
        .chain(&manifest.tools)
        .chain(&manifest.skills)
        .map(|a| (a.kind, a.name.clone(), a.version.clone()))
        .collect();
    warn(env, &pins);
}
