//! Agent-to-agent message languages the registry speaks: CLowl 0.2 and
//! MoltSpeak 0.1.
//!
//! Both take untrusted bytes with a size bound, parse them into typed
//! messages whose constructors and `Deserialize` validate every rule of their
//! spec, and map each failure to the spec's own error code so a server can
//! answer in the protocol it was spoken to. Nothing here reads a clock or a
//! random source: ids and times are arguments.

pub mod canonical;
pub mod clowl;
pub mod moltspeak;
pub mod pii;
