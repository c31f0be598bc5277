//! MoltSpeak 0.1 transmissions (a message or an encrypted envelope) and
//! batches from untrusted bytes: parsing never panics, and neither do the
//! checks a receiver runs on a parsed message (the PII scan among them,
//! which must stay within its findings cap).
#![no_main]

use agentlang_core::protocol::{
    moltspeak::{Transmission, parse_batch},
    pii,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(transmission) = Transmission::from_slice(data)
        && let Some(message) = transmission.message()
    {
        assert!(message.scan_pii().count() <= pii::MAX_FINDINGS);
        let _ = message.check(1_703_280_000_000);
    }
    let _ = parse_batch(data);
});
