//! Where the CLI keeps its state: `config.toml` (default registry, the
//! runtime `run` hands agents to), `credentials.toml` (a token per registry,
//! mode 0600) and `hosts/*.yaml` (host profiles of your own), in
//! `AGENTLANG_CONFIG_DIR` or the platform's config folder.

use std::{
    collections::BTreeMap,
    fs,
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::release_age::MinReleaseAge;

pub const DEFAULT_REGISTRY: &str = "http://127.0.0.1:8080";

pub fn config_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("AGENTLANG_CONFIG_DIR") {
        return Ok(PathBuf::from(dir));
    }
    dirs::config_dir()
        .map(|d| d.join("agentlang"))
        .context("no config folder on this platform; set AGENTLANG_CONFIG_DIR")
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub registry: Option<String>,
    /// The default of `lock` and `install`'s `--min-release-age` (`3d`).
    pub min_release_age: Option<MinReleaseAge>,
    #[serde(default)]
    pub runtime: RuntimeConfig,
}

/// `[runtime]` in config.toml: what `agentlang run` hands agents to.
///
/// ```toml
/// [runtime]
/// command = "python3 ~/runtimes/langgraph_runner.py"
/// prompt_format = "xml"
/// ```
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    /// A shell command line; it reads the hand-off on standard input.
    pub command: Option<String>,
    /// `markdown` (the default) or `xml`.
    pub prompt_format: Option<String>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct CredentialsFile {
    #[serde(default)]
    registries: BTreeMap<String, Entry>,
}

/// A token stored for one registry by `login` or `register`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub token: String,
    pub username: String,
    /// The token's id on the registry (what `logout` revokes); absent in
    /// files written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// RFC 3339, as the registry said when it minted the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// Where a setting's value came from, as `agentlang config` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A command-line flag.
    Flag,
    /// An environment variable.
    Env,
    /// config.toml or credentials.toml.
    File,
    /// Nothing set it.
    Default,
}

impl Source {
    pub fn describe(&self, flag: &str, var: &str, file: &Path) -> String {
        match self {
            Source::Flag => format!("the {flag} flag"),
            Source::Env => var.to_owned(),
            Source::File => file.display().to_string(),
            Source::Default => "default".to_owned(),
        }
    }
}

/// Everything the commands need to know about where they talk to.
#[derive(Debug)]
pub struct Settings {
    pub dir: PathBuf,
    pub registry: String,
    /// Where `registry` came from.
    pub registry_source: Source,
    pub runtime: RuntimeConfig,
    /// `AGENTLANG_MIN_RELEASE_AGE`, else the config file's.
    pub min_release_age: Option<MinReleaseAge>,
    token_override: Option<(String, Source)>,
}

impl Settings {
    /// `--registry`, else `AGENTLANG_REGISTRY`, else the config file, else
    /// the embedded default.
    pub fn load(registry_flag: Option<String>, token_flag: Option<String>) -> Result<Self> {
        let dir = config_dir()?;
        let config = read_toml::<Config>(&dir.join("config.toml"))?.unwrap_or_default();
        let (registry, registry_source) = match (
            registry_flag,
            env_nonempty("AGENTLANG_REGISTRY"),
            config.registry,
        ) {
            (Some(r), _, _) => (r, Source::Flag),
            (None, Some(r), _) => (r, Source::Env),
            (None, None, Some(r)) => (r, Source::File),
            (None, None, None) => (DEFAULT_REGISTRY.to_owned(), Source::Default),
        };
        let registry = normalize_url(&registry)?;
        let token_override = match token_flag {
            Some(t) => Some((t, Source::Flag)),
            None => env_nonempty("AGENTLANG_TOKEN").map(|t| (t, Source::Env)),
        };
        let min_release_age = match env_nonempty("AGENTLANG_MIN_RELEASE_AGE") {
            Some(age) => Some(
                age.parse::<MinReleaseAge>()
                    .map_err(|e| anyhow::anyhow!("AGENTLANG_MIN_RELEASE_AGE: {e}"))?,
            ),
            None => config.min_release_age,
        };
        Ok(Self {
            dir,
            registry,
            registry_source,
            runtime: config.runtime,
            min_release_age,
            token_override,
        })
    }

    /// `--token`, else `AGENTLANG_TOKEN`, else the credentials file.
    pub fn token(&self) -> Result<Option<String>> {
        Ok(self.token_and_source()?.map(|(token, _)| token))
    }

    /// The token with where it came from ([`Source::File`]: credentials.toml).
    pub fn token_and_source(&self) -> Result<Option<(String, Source)>> {
        if let Some((t, source)) = &self.token_override {
            return Ok(Some((t.clone(), source.clone())));
        }
        Ok(self.stored()?.map(|e| (e.token, Source::File)))
    }

    /// What credentials.toml holds for this registry.
    pub fn stored(&self) -> Result<Option<Entry>> {
        let creds = read_toml::<CredentialsFile>(&self.credentials_path())?.unwrap_or_default();
        Ok(creds.registries.get(&self.registry).cloned())
    }

    /// Removes this registry's token from credentials.toml; false when
    /// there was none.
    pub fn forget_token(&self) -> Result<bool> {
        let path = self.credentials_path();
        let mut creds = read_toml::<CredentialsFile>(&path)?.unwrap_or_default();
        if creds.registries.remove(&self.registry).is_none() {
            return Ok(false);
        }
        let text = toml::to_string(&creds).context("serializing credentials")?;
        write_private(&path, text.as_bytes())?;
        Ok(true)
    }

    pub fn require_token(&self) -> Result<String> {
        self.token()?.with_context(|| {
            format!(
                "not logged in to {}: run `agentlang login` or set AGENTLANG_TOKEN",
                self.registry
            )
        })
    }

    pub fn credentials_path(&self) -> PathBuf {
        self.dir.join("credentials.toml")
    }

    /// Stores a token for the current registry (mode 0600, written
    /// atomically so a crash never leaves half a file).
    pub fn store_token(&self, entry: Entry) -> Result<PathBuf> {
        let path = self.credentials_path();
        let mut creds = read_toml::<CredentialsFile>(&path)?.unwrap_or_default();
        creds.registries.insert(self.registry.clone(), entry);
        let text = toml::to_string(&creds).context("serializing credentials")?;
        write_private(&path, text.as_bytes())?;
        Ok(path)
    }
}

pub fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

pub fn normalize_url(url: &str) -> Result<String> {
    let trimmed = url.trim_end_matches('/');
    if !(trimmed.starts_with("http://") || trimmed.starts_with("https://")) {
        bail!("registry URL {url:?} must start with http:// or https://");
    }
    Ok(trimmed.to_owned())
}

fn read_toml<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>> {
    match fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text)
            .map(Some)
            .with_context(|| format!("reading {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Writes a file readable by its owner only, via a temporary file renamed
/// into place.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().context("path has no parent folder")?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = path.with_extension("tmp");
    let mut file = open_private(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

#[cfg(unix)]
fn open_private(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn open_private(path: &Path) -> std::io::Result<fs::File> {
    fs::File::create(path)
}
