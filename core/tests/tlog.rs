//! The transparency log's formats against their specifications: RFC 6962
//! roots computed here from the definition, C2SP tile paths from the
//! spec's examples, checkpoints verified as signed notes, proofs that hold
//! and ones that must not.

use agentlang_core::{
    signing::SecretKey,
    tlog::{
        EntryTooLong, Frontier, LogEntry, LogKey, LogOp, MAX_ENTRY_LEN, StoredHashes, TILE_WIDTH,
        TileAddress, Tree, Witness, WitnessKey, check_consistency, check_inclusion,
        consistency_proof, entry_bundle, frontier_indexes, hash_tile, inclusion_proof,
        is_placeholder, leaf_hash, open_checkpoint, open_witnessed_checkpoint, parse_tile_path,
        root_of, served_entry_bundle, split_bundle, tile_path,
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
    e.to_bytes().unwrap()
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
        String::from_utf8(e.to_bytes().unwrap()).unwrap(),
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
    // Addresses far past any tree are errors, not overflows.
    assert!(tree.hash_tile(300, 9, 0, 1).is_err());
    assert!(tree.hash_tile(300, 63, u64::MAX, 255).is_err());
    assert!(tree.hash_tile(300, 0, 0, 0).is_err());

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
fn an_entry_a_bundle_cannot_frame_is_never_written_and_never_breaks_one() {
    // The longest entry a bundle frames is accepted; one byte more is not.
    let mut entry = LogEntry::new(LogOp::Yank, "2026-01-01T00:00:00Z");
    let base = entry.to_bytes().unwrap().len() + r#","reason":"""#.len();
    entry.reason = Some("r".repeat(MAX_ENTRY_LEN - base));
    let longest = entry.to_bytes().unwrap();
    assert_eq!(longest.len(), MAX_ENTRY_LEN);
    assert!(entry_bundle([longest.as_slice()]).is_some());
    entry.reason = Some("r".repeat(MAX_ENTRY_LEN - base + 1));
    assert_eq!(entry.to_bytes(), Err(EntryTooLong(MAX_ENTRY_LEN + 1)));

    // One a log took before that bound is served as an empty placeholder,
    // and its neighbours as they are.
    let long = vec![b'x'; 70_000];
    let entries = [
        b"{\"a\":1}".as_slice(),
        long.as_slice(),
        b"{\"b\":2}".as_slice(),
    ];
    let bundle = served_entry_bundle(entries);
    let split = split_bundle(&bundle).unwrap();
    assert_eq!(split.len(), 3);
    assert_eq!(split[0], entries[0]);
    assert!(is_placeholder(split[1]) && !is_placeholder(split[0]));
    assert_eq!(split[2], entries[2]);

    // With the placeholder's leaf hash (from the level-0 tile), the tree
    // is the one the real entries give.
    let mut real = Tree::default();
    let mut served = Tree::default();
    for (i, entry) in entries.iter().enumerate() {
        real.append(entry).unwrap();
        if is_placeholder(split[i]) {
            served.append_leaf_hash(leaf_hash(entry)).unwrap();
        } else {
            served.append(split[i]).unwrap();
        }
    }
    assert_eq!(served.root(), real.root());
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

#[test]
fn tile_paths_parse_back_only_in_their_canonical_spelling() {
    for (level, index, width) in [
        (Some(0), 1_234_067, 256),
        (Some(1), 1_234_067, 8),
        (None, 2, 256),
        (None, 0, 44),
        (Some(63), u64::MAX / 1000, 1),
    ] {
        let path = tile_path(level, index, width);
        let tail = path.strip_prefix("tile/").unwrap();
        assert_eq!(
            parse_tile_path(tail),
            Some(TileAddress {
                level,
                index,
                width
            }),
            "{path}"
        );
    }
    for bad in [
        "0/x000/001",
        "0/1",
        "0/0001",
        "64/000",
        "entries/000.p/0",
        "entries/000.p/256",
        "entries/000.p/",
        "0/x001",
        "x/000",
        "0/000/",
        "entries",
        "0/-01",
        "00/000",
    ] {
        assert_eq!(parse_tile_path(bad), None, "{bad}");
    }
}

#[test]
fn witnesses_cosign_checkpoints_and_forged_cosignatures_fail() {
    let key = LogKey::new("registry.example/log", SecretKey::generate().unwrap()).unwrap();
    let mut tree = Tree::default();
    for i in 0..3 {
        tree.append(&entry(i)).unwrap();
    }
    let note = key
        .sign_checkpoint("registry.example/log", 3, tree.root())
        .unwrap();
    let mut witness = Witness::new("witness.example/w1", SecretKey::generate().unwrap()).unwrap();
    let vkey = witness.key().vkey();
    let parsed = WitnessKey::parse(&vkey).unwrap();
    assert_eq!(parsed.vkey(), vkey);
    assert_eq!(parsed.name(), "witness.example/w1");

    let cosigned = witness.cosign(&note, 1_700_000_000).unwrap();
    let (opened, cosignatures) = open_witnessed_checkpoint(
        &cosigned,
        &key.verifier_key(),
        std::slice::from_ref(&parsed),
    )
    .unwrap();
    assert_eq!(opened.size, 3);
    assert_eq!(cosignatures.len(), 1);
    assert_eq!(cosignatures[0].witness, "witness.example/w1");
    assert!(
        cosignatures[0]
            .line
            .starts_with("\u{2014} witness.example/w1 ")
    );
    // The signature is 8 bytes of big-endian time then 64 of Ed25519,
    // after the 4-byte key id.
    use base64::Engine;
    let sig = cosignatures[0].line.rsplit(' ').next().unwrap();
    let sig = base64::engine::general_purpose::STANDARD
        .decode(sig)
        .unwrap();
    assert_eq!(sig.len(), 4 + 8 + 64);
    assert_eq!(&sig[4..12], &1_700_000_000u64.to_be_bytes());

    // Unknown witnesses are ignored; a forged line by a known one fails.
    let (_, none) = open_witnessed_checkpoint(&cosigned, &key.verifier_key(), &[]).unwrap();
    assert!(none.is_empty());
    let text = String::from_utf8(cosigned).unwrap();
    let mut forged_sig = sig.clone();
    forged_sig[12] ^= 1;
    let forged = text.replace(
        &base64::engine::general_purpose::STANDARD.encode(&sig),
        &base64::engine::general_purpose::STANDARD.encode(&forged_sig),
    );
    assert!(open_witnessed_checkpoint(forged.as_bytes(), &key.verifier_key(), &[parsed]).is_err());
    // A cosigner key is not a log key, and ids must match.
    assert!(WitnessKey::parse(&key.verifier_key()).is_err());
    let mut wrong_id = vkey;
    wrong_id.replace_range(19..27, "00000000");
    assert!(WitnessKey::parse(&wrong_id).is_err());
}

#[test]
fn a_frontier_appends_and_roots_like_the_whole_tree_from_log_n_hashes() {
    let entries: Vec<Vec<u8>> = (0..300).map(entry).collect();
    let mut tree = Tree::default();
    let mut frontier = Frontier::default();
    for (i, e) in entries.iter().enumerate() {
        let from = tree.stored_len();
        assert_eq!(frontier.stored_len(), from);
        assert_eq!(
            frontier.append(e).unwrap(),
            tree.append(e).unwrap(),
            "entry {i}"
        );
        assert_eq!(frontier.root(), tree.root());
        let size = i as u64 + 1;
        assert_eq!(frontier_indexes(size).len(), size.count_ones() as usize);
        // Read back from storage: only the edge's hashes are needed.
        let stored: Vec<[u8; 32]> = tree.stored().collect();
        let edge = frontier_indexes(size)
            .into_iter()
            .map(|at| (at, stored[at as usize]))
            .collect();
        let again = Frontier::from_stored(size, edge).unwrap();
        assert_eq!(again.root(), tree.root());
    }
    // Another set of hashes than the edge's is refused.
    let stored: Vec<[u8; 32]> = tree.stored().collect();
    assert!(Frontier::from_stored(300, vec![(0, stored[0])]).is_err());
}

#[test]
fn stored_hashes_read_on_demand_give_the_trees_proofs_and_tiles() {
    let entries: Vec<Vec<u8>> = (0..300).map(entry).collect();
    let mut tree = Tree::default();
    for e in &entries {
        tree.append(e).unwrap();
    }
    let stored: Vec<[u8; 32]> = tree.stored().collect();
    // What the log does: run, fetch what was missing, run again.
    fn fetched<T>(
        stored: &[[u8; 32]],
        f: impl Fn(&StoredHashes) -> Result<T, agentlang_core::tlog::TreeError>,
    ) -> (T, usize) {
        let mut hashes = StoredHashes::default();
        let mut fetches = 0;
        loop {
            match f(&hashes) {
                Ok(t) => return (t, fetches),
                Err(e) => {
                    let missing = hashes.missing();
                    assert!(!missing.is_empty(), "{e}");
                    for at in missing {
                        hashes.insert(at, stored[at as usize]);
                    }
                    fetches += 1;
                }
            }
        }
    }
    let (root, fetches) = fetched(&stored, |h| root_of(300, h));
    assert_eq!((root, fetches), (tree.root(), 1));
    for index in [0_u64, 5, 256, 299] {
        let (proof, fetches) = fetched(&stored, |h| inclusion_proof(300, index, h));
        assert_eq!(
            (proof, fetches),
            (tree.inclusion_proof(300, index).unwrap(), 1)
        );
    }
    let (proof, fetches) = fetched(&stored, |h| consistency_proof(300, 7, h));
    assert_eq!(
        (proof, fetches),
        (tree.consistency_proof(300, 7).unwrap(), 1)
    );
    let (tile, fetches) = fetched(&stored, |h| hash_tile(300, 0, 1, 44, h));
    assert_eq!((tile, fetches), (tree.hash_tile(300, 0, 1, 44).unwrap(), 1));
    // Nothing missing, no answer: a past tile is an error, not a fetch.
    let hashes = StoredHashes::default();
    assert!(hash_tile(300, 0, 1, 45, &hashes).is_err());
    assert!(hashes.missing().is_empty());
}
