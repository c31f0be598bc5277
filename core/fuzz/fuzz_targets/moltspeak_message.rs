//! MoltSpeak 0.1 transmissions (a message or an encrypted envelope) and
//! batches from untrusted bytes: parsing never panics.
#![no_main]

use agentlang_core::protocol::moltspeak::{Transmission, parse_batch};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = Transmission::from_slice(data);
    let _ = parse_batch(data);
});
