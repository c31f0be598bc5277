//! CLowl 0.2 messages from untrusted bytes: parsing never panics, and a
//! message that parses survives its own JSON round trip.
#![no_main]

use agentlang_core::protocol::clowl::Message;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(message) = Message::from_slice(data) else {
        return;
    };
    let json = serde_json::to_vec(&message).expect("a CLowl message serializes");
    Message::from_slice(&json).expect("a serialized CLowl message re-parses");
});
