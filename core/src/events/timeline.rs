//! A log laid out for replay: one lane per agent (in order of first
//! appearance), one row per event, tool calls folded together with their
//! results and durations, delegations as arrows between two lanes,
//! compactions with their token counts, and errors marked. The terminal
//! (`agentlang events replay`) and the catalog's `/replay` page render the
//! same rows, so a log looks the same wherever it is replayed.
//!
//! Texts (names and ids included) are clipped ([`MAX_TEXT_CHARS`]) and lanes bounded
//! ([`MAX_LANES`]; agents beyond share the last lane), so what a renderer
//! produces is bounded by the number of events.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value as Json;
use time::OffsetDateTime;

use super::{EventBody, EventLog, agents_of};
use crate::diagnostics::Diagnostics;

/// Longest text (content, input, output) a row carries, in characters.
pub const MAX_TEXT_CHARS: usize = 400;
/// Most lanes; agents beyond the last share it (its label says so).
pub const MAX_LANES: usize = 12;
/// The lane label of events no agent is named for.
pub const UNKNOWN_AGENT: &str = "(unknown)";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lane {
    pub agent: String,
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Index of the `tool.result` event.
    pub result_index: usize,
    pub output: Option<String>,
    pub error: Option<String>,
    /// `duration_ms` as reported, else the time between call and result.
    pub duration_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Item {
    Think {
        content: String,
    },
    Message {
        role: String,
        content: String,
    },
    ToolCall {
        tool: String,
        call_id: String,
        input: Option<String>,
        /// `None` while no result answered the call.
        outcome: Option<Outcome>,
    },
    /// A result with no call to fold into.
    OrphanResult {
        call_id: String,
        output: Option<String>,
        error: Option<String>,
    },
    Delegate {
        from_lane: usize,
        to_lane: usize,
        to: String,
        task: String,
    },
    Compact {
        strategy: String,
        tokens_before: u64,
        tokens_after: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// Index of the event in the log.
    pub index: usize,
    pub timestamp: String,
    /// Milliseconds since the log's first event (negative when a clock went
    /// backwards).
    pub offset_ms: i64,
    pub lane: usize,
    pub item: Item,
    /// Problems [`super::check`] found with this event or its result.
    pub problems: Vec<String>,
}

impl Row {
    /// An error to highlight: a failed or unanswered tool call, an orphan
    /// result, or a problem in the log.
    pub fn is_error(&self) -> bool {
        !self.problems.is_empty()
            || match &self.item {
                Item::ToolCall { outcome, .. } => {
                    outcome.as_ref().is_none_or(|o| o.error.is_some())
                }
                Item::OrphanResult { .. } => true,
                _ => false,
            }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Timeline {
    pub lanes: Vec<Lane>,
    pub rows: Vec<Row>,
    /// Agents folded into the last lane because there were too many.
    pub overflow_agents: usize,
    pub event_count: usize,
    pub error_count: usize,
    /// Problems past the cap of [`Diagnostics`], counted but not attached
    /// to any row: renderers say "and N more problems".
    pub more_problems: usize,
}

/// Clips to [`MAX_TEXT_CHARS`] characters, marking the cut.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

fn compact_json(v: &Json) -> String {
    match v {
        Json::String(s) => clip(s),
        other => clip(&other.to_string()),
    }
}

fn millis(from: OffsetDateTime, to: OffsetDateTime) -> i64 {
    i64::try_from((to - from).whole_milliseconds()).unwrap_or(i64::MAX)
}

/// The problems of `check`, by event index (parsed from their paths).
fn problems_by_event(problems: &Diagnostics) -> HashMap<usize, Vec<String>> {
    let mut out: HashMap<usize, Vec<String>> = HashMap::new();
    for p in problems.iter() {
        let index = p
            .path
            .strip_prefix("events[")
            .and_then(|rest| rest.split_once(']'))
            .and_then(|(n, _)| n.parse::<usize>().ok());
        if let Some(i) = index {
            out.entry(i).or_default().push(p.to_string());
        }
    }
    out
}

impl Timeline {
    /// Lays out `log`; `problems` (from [`super::check`]) are attached to
    /// the rows they concern.
    pub fn new(log: &EventLog, problems: &Diagnostics) -> Self {
        let agents = agents_of(log);
        let mut lanes: Vec<Lane> = Vec::new();
        let mut lane_of: HashMap<String, usize> = HashMap::new();
        let mut overflow = 0usize;
        let mut lane = |name: &str, lanes: &mut Vec<Lane>| -> usize {
            if let Some(&l) = lane_of.get(name) {
                return l;
            }
            let l = if lanes.len() < MAX_LANES {
                lanes.push(Lane { agent: clip(name) });
                lanes.len() - 1
            } else {
                overflow += 1;
                MAX_LANES - 1
            };
            lane_of.insert(name.to_owned(), l);
            l
        };
        let mut by_event = problems_by_event(problems);
        let start = log.events.first().map(|e| e.timestamp);
        let mut rows: Vec<Row> = Vec::with_capacity(log.events.len());
        // call_id -> row index of its call
        let mut call_rows: HashMap<&str, usize> = HashMap::new();
        for (i, e) in log.events.iter().enumerate() {
            let agent = agents[i].as_deref().unwrap_or(UNKNOWN_AGENT);
            let own_lane = lane(agent, &mut lanes);
            let problems = by_event.remove(&i).unwrap_or_default();
            let item = match &e.body {
                EventBody::Think { content, .. } => Item::Think {
                    content: clip(content),
                },
                EventBody::Message { role, content, .. } => Item::Message {
                    role: clip(role),
                    content: clip(content),
                },
                EventBody::ToolCall {
                    tool,
                    input,
                    call_id,
                    ..
                } => {
                    call_rows.entry(call_id).or_insert(rows.len());
                    Item::ToolCall {
                        tool: clip(tool),
                        call_id: clip(call_id),
                        input: input.as_ref().map(compact_json),
                        outcome: None,
                    }
                }
                EventBody::ToolResult {
                    call_id,
                    output,
                    duration_ms,
                    error,
                    ..
                } => {
                    let call_row = call_rows.get(call_id.as_str()).copied();
                    let open = call_row
                        .filter(|&r| matches!(rows[r].item, Item::ToolCall { outcome: None, .. }));
                    if let Some(r) = open {
                        let called_at = log.events[rows[r].index].timestamp;
                        let duration = duration_ms
                            .or_else(|| u64::try_from(millis(called_at, e.timestamp)).ok());
                        let row = &mut rows[r];
                        if let Item::ToolCall { outcome, .. } = &mut row.item {
                            *outcome = Some(Outcome {
                                result_index: i,
                                output: output.as_ref().map(compact_json),
                                error: error.as_deref().map(clip),
                                duration_ms: duration,
                            });
                        }
                        row.problems.extend(problems);
                        continue;
                    }
                    Item::OrphanResult {
                        call_id: clip(call_id),
                        output: output.as_ref().map(compact_json),
                        error: error.as_deref().map(clip),
                    }
                }
                EventBody::Delegate { to, task, .. } => Item::Delegate {
                    from_lane: own_lane,
                    to_lane: lane(to, &mut lanes),
                    to: clip(to),
                    task: clip(task),
                },
                EventBody::Compact {
                    strategy,
                    tokens_before,
                    tokens_after,
                    ..
                } => Item::Compact {
                    strategy: clip(strategy),
                    tokens_before: *tokens_before,
                    tokens_after: *tokens_after,
                },
            };
            rows.push(Row {
                index: i,
                timestamp: e.timestamp_text.clone(),
                offset_ms: start.map_or(0, |s| millis(s, e.timestamp)),
                lane: own_lane,
                item,
                problems,
            });
        }
        if overflow > 0
            && let Some(last) = lanes.last_mut()
        {
            last.agent = format!("{} and {overflow} more", last.agent);
        }
        let error_count = rows.iter().filter(|r| r.is_error()).count();
        Self {
            lanes,
            rows,
            overflow_agents: overflow,
            event_count: log.events.len(),
            error_count,
            more_problems: problems.dropped(),
        }
    }

    /// `and N more problems`, when the problems were more than the cap.
    pub fn more(&self) -> Option<String> {
        crate::diagnostics::more_line(self.more_problems, "problem", "problems")
    }

    /// The log as terminal lines: a lane legend, then one line per row.
    pub fn render_text(&self) -> String {
        let width = self
            .lanes
            .iter()
            .map(|l| l.agent.chars().count())
            .max()
            .unwrap_or(0)
            .min(24);
        let mut out = String::new();
        out.push_str(&format!(
            "{} events, {} agents: {}\n",
            self.event_count,
            self.lanes.len(),
            self.lanes
                .iter()
                .map(|l| l.agent.as_str())
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        for row in &self.rows {
            let agent = &self.lanes[row.lane].agent;
            let mark = if row.is_error() { "!" } else { " " };
            let line = match &row.item {
                Item::Think { content } => format!("think    {}", one_line(content)),
                Item::Message { role, content } => {
                    format!("message  {role}: {}", one_line(content))
                }
                Item::ToolCall {
                    tool,
                    input,
                    outcome,
                    ..
                } => {
                    let args = input.as_deref().map(one_line).unwrap_or_default();
                    let result = match outcome {
                        None => "→ no result".to_owned(),
                        Some(o) => {
                            let took = o
                                .duration_ms
                                .map(|ms| format!(" in {ms} ms"))
                                .unwrap_or_default();
                            match (&o.error, &o.output) {
                                (Some(err), _) => format!("→ error{took}: {}", one_line(err)),
                                (None, Some(out)) => format!("→ ok{took}: {}", one_line(out)),
                                (None, None) => format!("→ ok{took}"),
                            }
                        }
                    };
                    format!("tool     {tool}({args}) {result}")
                }
                Item::OrphanResult {
                    call_id,
                    output,
                    error,
                } => format!(
                    "result   for unknown call {call_id}: {}",
                    one_line(error.as_deref().or(output.as_deref()).unwrap_or(""))
                ),
                Item::Delegate {
                    to_lane, task, to, ..
                } => {
                    let target = &self.lanes[*to_lane].agent;
                    let shown = if target == to { to } else { target };
                    format!("delegate → {shown}: {}", one_line(task))
                }
                Item::Compact {
                    strategy,
                    tokens_before,
                    tokens_after,
                } => format!("compact  {strategy}: {tokens_before} → {tokens_after} tokens"),
            };
            out.push_str(&format!(
                "{mark}{:>10}  {agent:<width$}  {line}\n",
                seconds(row.offset_ms),
            ));
            for p in &row.problems {
                out.push_str(&format!("{:>13}problem: {p}\n", ""));
            }
        }
        if let Some(more) = self.more() {
            out.push_str(&format!("{more} not shown\n"));
        }
        out
    }
}

/// `+1.250s`.
pub fn seconds(offset_ms: i64) -> String {
    let sign = if offset_ms < 0 { "-" } else { "+" };
    let ms = offset_ms.unsigned_abs();
    format!("{sign}{}.{:03}s", ms / 1000, ms % 1000)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
