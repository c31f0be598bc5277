//! agent.lock bytes: parsing never panics, and a lockfile that parses writes
//! out to bytes that re-parse to the same value (the determinism the
//! lockfile promises).
#![no_main]

use agentlang_core::lockfile::Lockfile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(lock) = Lockfile::from_slice(data) else {
        return;
    };
    let yaml = lock.to_yaml().expect("a parsed lockfile serializes");
    let back = Lockfile::from_slice(yaml.as_bytes()).expect("written lockfile re-parses");
    assert_eq!(back, lock);
});
