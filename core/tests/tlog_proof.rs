//! c2sp.org/tlog-proof@v1 and the tlog-witness wire helpers: receipts built
//! from a tree verify, and every way one can be wrong is its own error.

use agentlang_core::{
    signing::SecretKey,
    tlog::{
        LogKey, MAX_PROOF_BYTES, ProofError, TlogProof, Tree, Witness, WitnessKey,
        add_checkpoint_body, parse_tlog_size, witness_cosignatures,
    },
};

const ORIGIN: &str = "registry.test/log";

/// A log of `n` entries, its key and checkpoint note.
fn log(n: u64) -> (Tree, Vec<Vec<u8>>, LogKey, Vec<u8>) {
    let key = LogKey::new(ORIGIN, SecretKey::generate().unwrap()).unwrap();
    let mut tree = Tree::default();
    let entries: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("{{\"n\":{i},\"v\":1}}").into_bytes())
        .collect();
    for e in &entries {
        tree.append(e).unwrap();
    }
    let note = key.sign_checkpoint(ORIGIN, n, tree.root()).unwrap();
    (tree, entries, key, note)
}

fn receipt(tree: &Tree, entries: &[Vec<u8>], note: &[u8], index: u64) -> TlogProof {
    TlogProof {
        extra: Some(entries[index as usize].clone()),
        index,
        proof: tree.inclusion_proof(tree.size(), index).unwrap(),
        checkpoint: note.to_vec(),
    }
}

#[test]
fn a_receipt_of_every_entry_round_trips_and_verifies() {
    let (tree, entries, key, note) = log(37);
    for index in 0..37 {
        let proof = receipt(&tree, &entries, &note, index);
        let text = proof.to_text();
        let parsed = TlogProof::parse(&text).unwrap();
        assert_eq!(parsed, proof);
        let (verified, entry) = parsed.verify_extra(&key.verifier_key(), &[], 0).unwrap();
        assert_eq!(entry, entries[index as usize].as_slice());
        assert_eq!(verified.checkpoint.size, 37);
    }
}

#[test]
fn a_wrong_receipt_says_what_is_wrong() {
    let (tree, entries, key, note) = log(10);
    let vkey = key.verifier_key();
    let good = receipt(&tree, &entries, &note, 3);

    let mut other_entry = good.clone();
    other_entry.extra = Some(entries[4].clone());
    assert_eq!(
        other_entry.verify_extra(&vkey, &[], 0).unwrap_err(),
        ProofError::NotIncluded { index: 3 }
    );
    let mut past = good.clone();
    past.index = 10;
    assert_eq!(
        past.verify_extra(&vkey, &[], 0).unwrap_err(),
        ProofError::PastTree {
            index: 10,
            size: 10
        }
    );
    let mut no_entry = good.clone();
    no_entry.extra = None;
    assert_eq!(
        no_entry.verify_extra(&vkey, &[], 0).unwrap_err(),
        ProofError::NoEntry
    );
    let (_, _, stranger, _) = log(1);
    assert!(matches!(
        good.verify_extra(&stranger.verifier_key(), &[], 0),
        Err(ProofError::Checkpoint(_))
    ));

    // Witnesses: counted, and the count is in the error.
    let mut witness = Witness::new("witness.test/w1", SecretKey::generate().unwrap()).unwrap();
    let wkey = WitnessKey::parse(&witness.key().vkey()).unwrap();
    assert_eq!(
        good.verify_extra(&vkey, std::slice::from_ref(&wkey), 1)
            .unwrap_err(),
        ProofError::Witnesses {
            valid: 0,
            required: 1
        }
    );
    let mut cosigned = good;
    cosigned.checkpoint = witness.cosign(&note, 1_790_000_000).unwrap();
    let (verified, _) = cosigned
        .verify_extra(&vkey, std::slice::from_ref(&wkey), 1)
        .unwrap();
    assert_eq!(verified.cosignatures.len(), 1);
}

#[test]
fn parsing_is_strict_and_bounded() {
    let (tree, entries, _, note) = log(5);
    let text = String::from_utf8(receipt(&tree, &entries, &note, 2).to_text()).unwrap();
    let malformed = |t: &str| {
        assert!(
            matches!(
                TlogProof::parse(t.as_bytes()),
                Err(ProofError::Malformed(_))
            ),
            "{t:?}"
        );
    };
    malformed(&text.replacen("c2sp.org/tlog-proof@v1", "c2sp.org/tlog-proof@v2", 1));
    malformed(&text.replacen("index 2", "index 02", 1));
    malformed(&text.replacen("index 2", "index -2", 1));
    malformed(&text.replacen("index 2", "index", 1));
    malformed(&text.replacen("\nextra ", "\nextra !", 1));
    malformed(text.split("\n\n").next().unwrap());
    // A proof line that is not a hash.
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "AAAA";
    malformed(&(lines.join("\n") + "\n"));

    // 64 proof lines are more than any tree needs.
    let hash = "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n".repeat(64);
    let long = format!(
        "c2sp.org/tlog-proof@v1\nindex 0\n{hash}\n{}",
        String::from_utf8_lossy(&note)
    );
    assert_eq!(
        TlogProof::parse(long.as_bytes()).unwrap_err(),
        ProofError::TooManyProofLines
    );
    let huge = vec![b'a'; MAX_PROOF_BYTES + 1];
    assert_eq!(TlogProof::parse(&huge).unwrap_err(), ProofError::TooLong);
    // No extra line is allowed by the format.
    let bare = text
        .lines()
        .filter(|l| !l.starts_with("extra "))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    assert_eq!(TlogProof::parse(bare.as_bytes()).unwrap().extra, None);
}

#[test]
fn witness_wire_helpers_follow_tlog_witness() {
    let (tree, _, key, note) = log(9);
    let proof = tree.consistency_proof(9, 4).unwrap();
    let body = add_checkpoint_body(4, &proof, &note);
    let text = String::from_utf8(body).unwrap();
    assert!(text.starts_with("old 4\n"));
    assert!(text.ends_with(&String::from_utf8(note.clone()).unwrap()));
    assert_eq!(
        text.split("\n\n").next().unwrap().lines().count(),
        1 + proof.len()
    );
    assert_eq!(
        add_checkpoint_body(0, &[], &note),
        [b"old 0\n\n".as_slice(), &note].concat()
    );

    assert_eq!(parse_tlog_size(b"12\n"), Some(12));
    assert_eq!(parse_tlog_size(b"0\n"), Some(0));
    for bad in [&b"12"[..], b"012\n", b"-1\n", b"\n", b"x\n", b"1 2\n"] {
        assert_eq!(parse_tlog_size(bad), None, "{bad:?}");
    }

    // A witness's answer: its lines verify; a damaged one is refused; one
    // by another key carries nothing.
    let mut witness = Witness::new("witness.test/w1", SecretKey::generate().unwrap()).unwrap();
    let wkey = WitnessKey::parse(&witness.key().vkey()).unwrap();
    let cosigned = witness.cosign(&note, 1_790_000_000).unwrap();
    let answer = &cosigned[note.len()..];
    let got = witness_cosignatures(&note, &key.verifier_key(), &wkey, answer).unwrap();
    assert_eq!(got.len(), 1);
    let mut damaged = answer.to_vec();
    let at = damaged.len() - 6;
    damaged[at] = if damaged[at] == b'A' { b'B' } else { b'A' };
    assert!(witness_cosignatures(&note, &key.verifier_key(), &wkey, &damaged).is_err());
    let mut other = Witness::new("witness.test/w2", SecretKey::generate().unwrap()).unwrap();
    let by_other = other.cosign(&note, 1).unwrap();
    assert!(
        witness_cosignatures(&note, &key.verifier_key(), &wkey, &by_other[note.len()..]).is_err()
    );
    assert!(witness_cosignatures(&note, &key.verifier_key(), &wkey, b"hello\n").is_err());
}
