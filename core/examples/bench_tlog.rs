//! The transparency log's work over 200,000 entries, without IO: what
//! `agentlang log verify` and the registry's start-up verification compute
//! once the bytes have arrived, and what the sequencer does per entry.
//!
//! `cargo run --release -p agentlang-core --example bench_tlog [ENTRIES]`
//!
//! Prints, for publish entries shaped like the registry's:
//! - sequencing: entries appended to the tree (stored hashes), per second;
//! - audit: bundles split, every entry appended, the root compared (the
//!   client's `log verify` after its downloads);
//! - proofs: inclusion and consistency proofs read through `TileProofs`
//!   from in-memory tiles, each tile checked against the root.

use std::time::Instant;

use agentlang_core::{
    signing::SecretKey,
    tlog::{
        LogEntry, LogKey, LogOp, TILE_WIDTH, TileProofs, Tree, check_consistency, check_inclusion,
        entry_bundle, leaf_hash, open_checkpoint, parse_tile_path, split_bundle,
    },
};

fn entry(i: u64) -> Vec<u8> {
    let mut e = LogEntry::new(LogOp::Publish, "2026-11-24T10:00:00Z");
    e.kind = Some("tool".to_owned());
    e.name = Some(format!("tool_{:05}", i / 20));
    e.version = Some(format!("1.{}.0", i % 20));
    e.sha256 = Some(format!("{:064x}", u128::from(i) * 0x9e37_79b9_7f4a_7c15));
    e.signer = Some("3b".repeat(32));
    e.account = Some("seeder".to_owned());
    e.to_bytes().unwrap()
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let entries: Vec<Vec<u8>> = (0..n).map(entry).collect();
    let bytes: usize = entries.iter().map(Vec::len).sum();

    let started = Instant::now();
    let mut tree = Tree::default();
    for e in &entries {
        tree.append(e).unwrap();
    }
    let root = tree.root();
    let sequencing = started.elapsed();

    let bundles: Vec<Vec<u8>> = entries
        .chunks(TILE_WIDTH as usize)
        .map(|c| entry_bundle(c.iter().map(Vec::as_slice)).unwrap())
        .collect();
    let key = LogKey::new("bench.example/log", SecretKey::generate().unwrap()).unwrap();
    let note = key.sign_checkpoint("bench.example/log", n, root).unwrap();

    let started = Instant::now();
    let opened = open_checkpoint(&note, &key.verifier_key()).unwrap();
    let mut audit = Tree::default();
    for bundle in &bundles {
        for e in split_bundle(bundle).unwrap() {
            audit.append(e).unwrap();
        }
    }
    assert_eq!(audit.root(), opened.root);
    let auditing = started.elapsed();

    let fetch = |path: &str| -> Result<Vec<u8>, String> {
        let tile = parse_tile_path(path.strip_prefix("tile/").unwrap()).ok_or("bad path")?;
        let level = tile.level.ok_or("not a hash tile")?;
        tree.hash_tile(n, level, tile.index, tile.width as u32)
            .map_err(|e| e.to_string())
    };
    let proofs = TileProofs::new(n, root, fetch);
    let started = Instant::now();
    let samples = 1_000u64;
    for s in 0..samples {
        let index = s * (n / samples);
        let proof = proofs.inclusion(index).unwrap();
        check_inclusion(&proof, n, root, index, leaf_hash(&entries[index as usize])).unwrap();
        let old = index + 1;
        let proof = proofs.consistency(old).unwrap();
        check_consistency(&proof, n, root, old, tree.root_at(old).unwrap()).unwrap();
    }
    let proving = started.elapsed();

    println!(
        "entries {n} ({:.1} MiB of canonical JSON, {} bundles)",
        bytes as f64 / 1_048_576.0,
        bundles.len()
    );
    println!(
        "sequencing  {:>8.0} ms  {:>10.0} entries/s",
        sequencing.as_secs_f64() * 1e3,
        n as f64 / sequencing.as_secs_f64()
    );
    println!(
        "audit       {:>8.0} ms  (split every bundle, rebuild the tree, compare the root)",
        auditing.as_secs_f64() * 1e3
    );
    println!(
        "proofs      {:>8.3} ms  per inclusion + consistency pair, from tiles checked against the root",
        proving.as_secs_f64() * 1e3 / samples as f64
    );
}
