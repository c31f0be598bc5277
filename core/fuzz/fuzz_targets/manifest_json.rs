//! manifest.json bytes: parsing never panics, and a manifest that parses
//! re-parses from its canonical bytes (the signature's input) to itself.
#![no_main]

use agentlang_core::container::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(manifest) = Manifest::parse(data) else {
        return;
    };
    let back = Manifest::parse(&manifest.to_bytes()).expect("canonical bytes re-parse");
    assert_eq!(back, manifest);
});
