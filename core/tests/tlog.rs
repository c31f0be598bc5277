//! The transparency log's formats against their specifications: RFC 6962
//! roots computed here from the definition, C2SP tile paths from the
//! spec's examples, checkpoints verified as signed notes, proofs that hold
//! and ones that must not.

use agentlang_core::{
    signing::SecretKey,
    tlog::{
        LogEntry, LogKey, LogOp, TILE_WIDTH, Tree, check_consistency, check_inclusion,
        entry_bundle, leaf_hash, open_checkpoint, tile_path,
    },
};
use sha2::{Digest, Sha256};

/// RFC 6962 §2.1, written from its definition: MTH of a list of entries.
fn mth(entries: &[Vec<u8>]) -> [u8; 32] {
    match entries.len() {
        0 => Sha256::digest([]).into(),
        1 => {
            let mut h = Sha256::new();
            h.update([0u8]);
            h.update(&entries[0]);
            h.finalize().into()
        }
        n => {
            // The largest power of two smaller than n.
            let mut k = 1;
            while k * 2 < n {
                k *= 2;
            }
            let mut h = Sha256::new();
            h.update([1u8]);
            h.update(mth(&entries[..k]));
            h.update(mth(&entries[k..]));
            h.finalize().into()
        }
    }
}

fn entry(i: u64) -> Vec<u8> {
    let mut e = LogEntry::new(LogOp::Publish, "2026-11-23T10:30:00Z");
    e.kind = Some("tool".into());
    e.name = Some(format!("tool_{i}"));
    e.version = Some("1.0.0".into());
    e.to_bytes()
}

#[test]
fn entries_are_canonical_json() {
    let mut e = LogEntry::new(LogOp::Yank, "2026-11-23T10:30:00Z");
    e.kind = Some("agent".into());
    e.name = Some("research-assistant".into());
    e.version = Some("1.1.0".into());
    e.account = Some("alice".into());
    e.reason = Some("leaks a key \"here\"".into());
    assert_eq!(
        String::from_utf8(e.to_bytes()).unwrap(),
        r#"{"account":"alice","kind":"agent","name":"research-assistant","op":"yank","reason":"leaks a key \"here\"","time":"2026-11-23T10:30:00Z","v":1,"version":"1.1.0"}"#
    );
}

#[test]
fn roots_are_rfc_6962_roots_for_every_size() {
    let entries: Vec<Vec<u8>> = (0..70).map(entry).collect();
    let mut tree = Tree::default();
    for (i, e) in entries.iter().enumerate() {
        tree.append(e).unwrap();
        assert_eq!(tree.root(), mth(&entries[..=i]), "size {}", i + 1);
    }
    // Every earlier size too, from the same stored hashes.
    for size in 0..=70 {
        assert_eq!(tree.root_at(size).unwrap(), mth(&entries[..size as usize]));
    }
    assert!(tree.root_at(71).is_err());
    // Read back from its stored hashes, it is the same tree.
    let again = Tree::from_stored(70, tree.stored().collect()).unwrap();
    assert_eq!(again.root(), tree.root());
    assert!(Tree::from_stored(71, tree.stored().collect()).is_err());
}

#[test]
fn proofs_hold_and_wrong_ones_do_not() {
    let entries: Vec<Vec<u8>> = (0..300).map(entry).collect();
    let mut tree = Tree::default();
    for e in &entries {
        tree.append(e).unwrap();
    }
    let root = tree.root();
    for index in [0_u64, 1, 127, 255, 256, 299] {
        let proof = tree.inclusion_proof(300, index).unwrap();
        let leaf = leaf_hash(&entries[index as usize]);
        check_inclusion(&proof, 300, root, index, leaf).unwrap();
        // Another entry's leaf, or another index, does not verify.
        let other = leaf_hash(&entries[(index as usize + 1) % 300]);
        assert!(check_inclusion(&proof, 300, root, index, other).is_err());
    }
    for old in [1_u64, 7, 256, 299] {
        let old_root = tree.root_at(old).unwrap();
        let proof = tree.consistency_proof(300, old).unwrap();
        check_consistency(&proof, 300, root, old, old_root).unwrap();
        // A forked history (another root for the old size) does not.
        let mut forked = old_root;
        forked[0] ^= 1;
        assert!(check_consistency(&proof, 300, root, old, forked).is_err());
    }
}

#[test]
fn tiles_hold_the_hashes_and_paths_follow_c2sp() {
    let entries: Vec<Vec<u8>> = (0..300).map(entry).collect();
    let mut tree = Tree::default();
    for e in &entries {
        tree.append(e).unwrap();
    }
    // Level 0, tile 0: the first 256 leaf hashes; tile 1 holds 44 so far.
    let full = tree.hash_tile(300, 0, 0, TILE_WIDTH as u32).unwrap();
    let leaves: Vec<u8> = entries[..256].iter().flat_map(|e| leaf_hash(e)).collect();
    assert_eq!(full, leaves);
    let partial = tree.hash_tile(300, 0, 1, 44).unwrap();
    let leaves: Vec<u8> = entries[256..].iter().flat_map(|e| leaf_hash(e)).collect();
    assert_eq!(partial, leaves);
    // Level 1, tile 0: the root of the first 256 entries.
    assert_eq!(
        tree.hash_tile(300, 1, 0, 1).unwrap(),
        mth(&entries[..256]).to_vec()
    );
    assert!(tree.hash_tile(300, 0, 1, 45).is_err());

    // c2sp.org/tlog-tiles' own examples.
    assert_eq!(tile_path(Some(0), 1_234_067, 256), "tile/0/x001/x234/067");
    assert_eq!(tile_path(Some(1), 1_234_067, 8), "tile/1/x001/x234/067.p/8");
    assert_eq!(tile_path(None, 2, 256), "tile/entries/002");
    assert_eq!(tile_path(None, 0, 44), "tile/entries/000.p/44");

    let bundle = entry_bundle([b"ab".as_slice(), b"".as_slice(), b"xyz".as_slice()]).unwrap();
    assert_eq!(bundle, b"\x00\x02ab\x00\x00\x00\x03xyz");
    assert!(entry_bundle([vec![0u8; 70_000].as_slice()]).is_none());
}

#[test]
fn checkpoints_are_signed_notes_the_log_key_opens() {
    let key = LogKey::new("registry.example/log", SecretKey::generate().unwrap()).unwrap();
    let vkey = key.verifier_key();
    assert!(vkey.starts_with("registry.example/log+"), "{vkey}");
    let mut tree = Tree::default();
    for i in 0..5 {
        tree.append(&entry(i)).unwrap();
    }
    let note = key
        .sign_checkpoint("registry.example/log", 5, tree.root())
        .unwrap();
    let text = String::from_utf8(note.clone()).unwrap();
    // Origin, size, base64 root, a blank line, then "— name sig".
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "registry.example/log");
    assert_eq!(lines[1], "5");
    assert_eq!(lines[3], "");
    assert!(
        lines[4].starts_with("\u{2014} registry.example/log "),
        "{text}"
    );

    let opened = open_checkpoint(&note, &vkey).unwrap();
    assert_eq!(opened.origin, "registry.example/log");
    assert_eq!(opened.size, 5);
    assert_eq!(opened.root, tree.root());

    // The same note under another key, or altered, does not open.
    let other = LogKey::new("registry.example/log", SecretKey::generate().unwrap()).unwrap();
    assert!(open_checkpoint(&note, &other.verifier_key()).is_err());
    let altered = text.replacen("\n5\n", "\n6\n", 1);
    assert!(open_checkpoint(altered.as_bytes(), &vkey).is_err());
    assert!(LogKey::new("has space", SecretKey::generate().unwrap()).is_err());
}
