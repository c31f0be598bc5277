//! Prompt envelopes: `crypt::open` with a fixed key and AAD must refuse any
//! forged or truncated envelope with an error, never a panic.
#![no_main]

use std::sync::LazyLock;

use agentlang_core::{
    Kind, MemberPath, PackageName, Version,
    crypt::{Aad, PromptKey, open},
};
use libfuzzer_sys::fuzz_target;

static KEY: LazyLock<PromptKey> = LazyLock::new(|| PromptKey::from_bytes([7; 32]));
static AAD: LazyLock<Aad> = LazyLock::new(|| {
    Aad::new(
        Kind::Agent,
        &PackageName::new("fuzz-agent").expect("valid name"),
        &Version::parse("1.0.0").expect("valid version"),
        &MemberPath::new("prompt.yaml").expect("valid path"),
    )
});

fuzz_target!(|data: &[u8]| {
    // A forgery that decrypts would mean the tag check is broken.
    assert!(open(&KEY, &AAD, data).is_err(), "forged envelope opened");
});
