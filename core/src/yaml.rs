//! YAML from untrusted bytes, behind limits: size, nesting depth and alias
//! expansion are bounded before any typed model sees the document.
//!
//! The limits are checked on the event stream, before `yaml_serde` builds
//! anything: a billion-laughs document or a 20,000-deep nesting is refused
//! after reading only as many events as it takes to cross a limit.
//! `yaml_serde` keeps its own fixed recursion and repetition limits as a
//! second line of defence.
//!
//! The pre-scan uses `saphyr-parser`, a safe event parser: `libyaml-rs` (the
//! parser inside `yaml_serde`) exposes only `unsafe` functions, and this
//! workspace forbids unsafe code. A document the scanner cannot read is
//! refused as a syntax error; it would be refused by `yaml_serde` too, or is
//! exotic enough that a registry need not accept it.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScanError};
use serde::de::DeserializeOwned;

use crate::diagnostics::Diagnostics;

/// Bounds on one YAML document. The defaults fit every real agent.yaml with
/// a wide margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YamlLimits {
    pub max_bytes: usize,
    /// Open collections (mappings and sequences) at any point, counting
    /// those an alias brings in where it is used.
    pub max_depth: usize,
    /// Aliases (`*name`) a document may use at all.
    pub max_aliases: usize,
    /// Nodes (scalars and collections) in the document once every alias is
    /// expanded: what a deserializer would have to build.
    pub max_nodes: usize,
}

impl Default for YamlLimits {
    fn default() -> Self {
        Self {
            max_bytes: 1024 * 1024,
            max_depth: 64,
            max_aliases: 100,
            max_nodes: 200_000,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum YamlError {
    #[error("document is {size} bytes; the limit is {limit}")]
    TooLarge { size: usize, limit: usize },
    #[error("document is not valid UTF-8 (at byte {0})")]
    NotUtf8(usize),
    #[error("document nests deeper than {limit} levels (line {line})")]
    TooDeep { limit: usize, line: usize },
    #[error("document uses more than {limit} aliases")]
    TooManyAliases { limit: usize },
    #[error("document expands to more than {limit} nodes once aliases are resolved (line {line})")]
    TooManyNodes { limit: usize, line: usize },
    #[error("file holds more than one YAML document (the second starts on line {line})")]
    MultipleDocuments { line: usize },
    #[error("{0}")]
    Syntax(String),
}

/// A YAML error as the one problem of a document, at its root: how every
/// format reader reports input it could not even parse (`parse_value(..)?`).
impl From<YamlError> for Diagnostics {
    fn from(error: YamlError) -> Self {
        let mut diags = Diagnostics::new();
        diags.push("", error.to_string());
        diags
    }
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
    // Size first: nothing is decoded or scanned in an oversize input.
    if bytes.len() > limits.max_bytes {
        return Err(YamlError::TooLarge {
            size: bytes.len(),
            limit: limits.max_bytes,
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| YamlError::NotUtf8(e.valid_up_to()))?;
    scan(text, limits)?;
    Ok(text)
}

/// What an anchored node costs each time an alias repeats it.
#[derive(Debug, Clone, Copy)]
struct Extent {
    nodes: usize,
    /// Collections nested in the node, itself included (0 for a scalar).
    depth: usize,
}

/// One open collection.
#[derive(Debug)]
struct Frame {
    anchor_id: usize,
    nodes_before: usize,
    deepest_child: usize,
}

/// Walks the event stream once, counting depth, aliases and expanded nodes.
fn scan(text: &str, limits: &YamlLimits) -> Result<(), YamlError> {
    let mut open: Vec<Frame> = Vec::new();
    // saphyr numbers anchors from 1; 0 means "no anchor".
    let mut anchors: HashMap<usize, Extent> = HashMap::new();
    let mut nodes = 0usize;
    let mut aliases = 0usize;
    let mut documents = 0usize;

    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| scan_error(&e, limits))?;
        let line = span.start.line();
        match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(YamlError::MultipleDocuments { line });
                }
            }
            Event::SequenceStart(anchor_id, _) | Event::MappingStart(anchor_id, _) => {
                if open.len() + 1 > limits.max_depth {
                    return Err(YamlError::TooDeep {
                        limit: limits.max_depth,
                        line,
                    });
                }
                open.push(Frame {
                    anchor_id,
                    nodes_before: nodes,
                    deepest_child: 0,
                });
                nodes = add_nodes(nodes, 1, limits, line)?;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = open.pop() else {
                    return Err(YamlError::Syntax(format!(
                        "unbalanced collection end at line {line}"
                    )));
                };
                let extent = Extent {
                    nodes: nodes - frame.nodes_before,
                    depth: frame.deepest_child + 1,
                };
                if frame.anchor_id != 0 {
                    anchors.insert(frame.anchor_id, extent);
                }
                if let Some(parent) = open.last_mut() {
                    parent.deepest_child = parent.deepest_child.max(extent.depth);
                }
            }
            Event::Scalar(_, _, anchor_id, _) => {
                nodes = add_nodes(nodes, 1, limits, line)?;
                if anchor_id != 0 {
                    anchors.insert(anchor_id, Extent { nodes: 1, depth: 0 });
                }
            }
            Event::Alias(anchor_id) => {
                aliases += 1;
                if aliases > limits.max_aliases {
                    return Err(YamlError::TooManyAliases {
                        limit: limits.max_aliases,
                    });
                }
                // The parser refuses unknown anchors, and an anchor's node is
                // complete before any alias can name it (YAML has no
                // forward or recursive references).
                let extent = anchors
                    .get(&anchor_id)
                    .copied()
                    .unwrap_or(Extent { nodes: 1, depth: 0 });
                if open.len() + extent.depth > limits.max_depth {
                    return Err(YamlError::TooDeep {
                        limit: limits.max_depth,
                        line,
                    });
                }
                nodes = add_nodes(nodes, extent.nodes, limits, line)?;
                if let Some(parent) = open.last_mut() {
                    parent.deepest_child = parent.deepest_child.max(extent.depth);
                }
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
    }
    Ok(())
}

fn add_nodes(
    nodes: usize,
    more: usize,
    limits: &YamlLimits,
    line: usize,
) -> Result<usize, YamlError> {
    match nodes.checked_add(more) {
        Some(total) if total <= limits.max_nodes => Ok(total),
        _ => Err(YamlError::TooManyNodes {
            limit: limits.max_nodes,
            line,
        }),
    }
}

/// saphyr's scanner counts flow nesting (`[[[`) in a `u8` and reads a
/// whole run of openers ahead, so deep flow nesting reaches it before the
/// parser emits enough events for our count: that error is a depth error too.
const SCANNER_FLOW_DEPTH: usize = u8::MAX as usize;
const SCANNER_DEPTH_MESSAGE: &str = "recursion limit exceeded";

fn scan_error(e: &ScanError, limits: &YamlLimits) -> YamlError {
    let mark = e.marker();
    if e.info() == SCANNER_DEPTH_MESSAGE {
        return YamlError::TooDeep {
            limit: limits.max_depth.min(SCANNER_FLOW_DEPTH),
            line: mark.line(),
        };
    }
    YamlError::Syntax(format!(
        "{} at line {} column {}",
        e.info(),
        mark.line(),
        mark.col() + 1
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_yaml_error_becomes_one_diagnostic_at_the_root() {
        let limits = YamlLimits {
            max_bytes: 4,
            ..YamlLimits::default()
        };
        let diags: Diagnostics = parse_value(b"a: 12345", &limits).unwrap_err().into();
        let rendered: Vec<String> = diags
            .iter()
            .map(|d| format!("{}|{}", d.path, d.message))
            .collect();
        assert_eq!(rendered, ["|document is 8 bytes; the limit is 4"]);
    }
}
