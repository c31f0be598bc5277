//! What the operator configures for a witness: its key, and the URL the
//! registry submits checkpoints to (a leaf, read by the log and by the
//! submitter).

use agentlang_core::tlog::WitnessKey;

/// A configured witness: its key and, when the registry asks it, the
/// submission prefix (`<vkey>=<URL>`; a bare key is only accepted, via
/// `POST /log/witness`).
#[derive(Debug, Clone)]
pub struct WitnessConfig {
    pub key: WitnessKey,
    pub url: Option<url::Url>,
}

impl WitnessConfig {
    /// Reads `<vkey>` or `<vkey>=<http(s) URL>`. A vkey's base64 may end in
    /// `=`, so the URL starts at the first `=http://` or `=https://`.
    pub fn parse(entry: &str) -> anyhow::Result<Self> {
        let entry = entry.trim();
        let split = ["=http://", "=https://"]
            .iter()
            .filter_map(|p| entry.find(p))
            .min();
        let (vkey, url) = match split {
            Some(at) => (&entry[..at], Some(&entry[at + 1..])),
            None => (entry, None),
        };
        let key = WitnessKey::parse(vkey).map_err(|e| anyhow::anyhow!("{e}"))?;
        let url = url
            .map(|u| {
                url::Url::parse(u.trim_end_matches('/'))
                    .map_err(|e| anyhow::anyhow!("witness {}: the URL {u:?}: {e}", key.name()))
            })
            .transpose()?;
        Ok(Self { key, url })
    }
}
