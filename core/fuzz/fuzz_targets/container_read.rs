//! Untrusted `.agent` / `.tool` bytes through the container reader with the
//! default limits: gzip, tar, manifest and member checks must refuse hostile
//! input with an error, never a panic or a runaway allocation.
#![no_main]

use agentlang_core::container::{Limits, read};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read(data, &Limits::default());
});
