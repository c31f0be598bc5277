//! The transparency log, checked the way an outsider would: over HTTP, with
//! Cloudflare's `signed_note` and `tlog_tiles` crates (ports of Go's sumdb
//! code) verifying the checkpoint's signature and proving inclusion and
//! consistency from the served tiles, never with the registry's own
//! verification code.

use std::collections::HashMap;

use agentlang_core::{
    signing::SecretKey,
    tlog::{Witness, WitnessKey},
};
use app::{
    settings::LogSettings,
    tlog::{LogError, TransparencyLog},
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use signed_note::{Note, StandardVerifier, VerifierList};
use store::Db;
use tlog_tiles::{Checkpoint, Hash, Tile, TileHashReader, TileReader};

use crate::{
    publish::{publish, published, publisher, tool, tool_at},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    every_change_is_an_entry_an_outsider_can_prove,
    witnesses_cosign_the_served_checkpoint,
    a_log_that_does_not_verify_is_not_served,
    start_up_reads_the_right_edge_and_the_audit_the_rest,
    tile_paths_outside_the_tree_are_not_found,
    the_log_page_shows_the_checkpoint_and_links_each_entry,
    every_entry_the_log_accepts_is_served,
    an_entry_too_long_to_frame_is_served_as_a_placeholder,
    a_version_todays_bounds_refuse_is_retired_at_start,
);

/// What an outsider holds after checking a checkpoint.
struct Checked {
    size: u64,
    root: Hash,
    note: String,
}

/// Fetches the key and the checkpoint and verifies the note's signature.
async fn checked_checkpoint(app: &TestApp) -> Checked {
    let vkey = app.get("/log/key").await.text().await.unwrap();
    let verifier = StandardVerifier::new(vkey.trim()).expect("a signed-note verifier key");
    let res = app.get("/log/checkpoint").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()["content-type"],
        "text/plain; charset=utf-8",
        "a note is text"
    );
    let note = res.text().await.unwrap();
    let parsed = Note::from_bytes(note.as_bytes()).expect("a signed note");
    parsed
        .verify(&VerifierList::new(vec![Box::new(verifier)]))
        .expect("signed by the log key");
    let checkpoint = Checkpoint::from_bytes(parsed.text()).expect("a C2SP checkpoint");
    assert_eq!(
        checkpoint.origin(),
        format!("{}/log", app.url.trim_start_matches("http://"))
    );
    Checked {
        size: checkpoint.size(),
        root: *checkpoint.hash(),
        note,
    }
}

/// Waits (at most 10 s) for a checkpoint of at least `size` entries.
async fn checkpoint_of(app: &TestApp, size: u64) -> Checked {
    for _ in 0..100 {
        let checked = checked_checkpoint(app).await;
        if checked.size >= size {
            return checked;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no checkpoint of {size} entries within 10 s");
}

/// Tiles fetched over HTTP before `tlog_tiles` reads them (its reader is
/// synchronous). `tlog_tiles` names tiles in Go sumdb's form, with the
/// height (`tile/8/0/000`); C2SP paths leave it out.
struct FetchedTiles(HashMap<String, Vec<u8>>);

impl FetchedTiles {
    async fn fetch(app: &TestApp, size: u64) -> Self {
        let mut tiles = HashMap::new();
        // Every hash tile a proof in a tree this small can need.
        for level in 0..3u8 {
            let span = 1u64 << (8 * u32::from(level));
            let full = size / (256 * span);
            let partial = (size / span) % 256;
            for n in 0..=full {
                let width = if n < full { 256 } else { partial };
                if width == 0 {
                    continue;
                }
                let path = agentlang_core::tlog::tile_path(Some(level), n, width);
                let res = app.get(&format!("/log/{path}")).await;
                assert_eq!(res.status(), StatusCode::OK, "{path}");
                tiles.insert(path, res.bytes().await.unwrap().to_vec());
            }
        }
        Self(tiles)
    }
}

impl TileReader for FetchedTiles {
    fn height(&self) -> u8 {
        8
    }

    fn read_tiles(&self, tiles: &[Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        tiles
            .iter()
            .map(|t| {
                let c2sp = t.path().replacen("tile/8/", "tile/", 1);
                self.0
                    .get(&c2sp)
                    .cloned()
                    .ok_or(tlog_tiles::Error::IndexesNotInTree)
            })
            .collect()
    }

    fn save_tiles(&self, _tiles: &[Tile], _data: &[Vec<u8>]) {}
}

/// The entries of bundle 0, split on their 2-byte big-endian lengths.
async fn entries(app: &TestApp, size: u64) -> Vec<Value> {
    let path = agentlang_core::tlog::tile_path(None, 0, size);
    let res = app.get(&format!("/log/{path}")).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    assert_eq!(res.headers()["cache-control"], "public, max-age=60");
    let bundle = res.bytes().await.unwrap();
    let mut out = Vec::new();
    let mut rest = &bundle[..];
    while !rest.is_empty() {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        out.push(serde_json::from_slice(&rest[2..2 + len]).expect("an entry is JSON"));
        rest = &rest[2 + len..];
    }
    out
}

fn leaf(entry: &Value) -> Hash {
    // RFC 8785: the registry's bytes are the canonical form of the object.
    tlog_tiles::record_hash(&serde_json_canonicalizer::to_vec(entry).unwrap())
}

async fn every_change_is_an_entry_an_outsider_can_prove(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bob_token = app.account_with_token("bob", &["owners"]).await;
    let v1 = published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;
    let publish_index = v1["log"]["index"]
        .as_i64()
        .expect("publish names its entry");
    let before = checkpoint_of(&app, publish_index as u64 + 1).await;

    // A refused publish writes nothing: not the version, not an entry.
    let other = tool_at(&alice.key, "web_fetch", "1.0.0", &[], 1_800_000_000);
    assert_eq!(
        publish(&app, &alice.token, other).await.status(),
        StatusCode::CONFLICT
    );

    let yank = |path: &'static str| {
        app.request(reqwest::Method::POST, path)
            .bearer_auth(&alice.token)
            .json(&json!({"reason": "leaks tokens"}))
            .send()
    };
    let yanked: Value = yank("/api/v1/tools/web_fetch/1.0.0/yank")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let yank_index = yanked["log"]["index"].as_i64().unwrap();
    assert_eq!(yank_index, publish_index + 1, "{yanked}");
    // Yanking again is no change: the same entry.
    let again: Value = yank("/api/v1/tools/web_fetch/1.0.0/yank")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again["log"]["index"], yank_index);
    let unyanked: Value = app
        .request(
            reqwest::Method::POST,
            "/api/v1/tools/web_fetch/1.0.0/unyank",
        )
        .bearer_auth(&alice.token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(unyanked["log"]["index"], yank_index + 1);
    // The record still names the publish's entry.
    let record: Value = app
        .get("/api/v1/tools/web_fetch/1.0.0")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(record["log"]["index"], publish_index);

    // Owners: an invitation accepted, then the owner removed.
    let res = app
        .request(reqwest::Method::PUT, "/api/v1/tools/web_fetch/owners")
        .bearer_auth(&alice.token)
        .json(&json!({"usernames": ["bob"]}))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.text().await.unwrap());
    let res = app
        .request(reqwest::Method::PUT, "/api/v1/invitations/tools/web_fetch")
        .bearer_auth(&bob_token)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.text().await.unwrap());
    let res = app
        .request(reqwest::Method::DELETE, "/api/v1/tools/web_fetch/owners")
        .bearer_auth(&alice.token)
        .json(&json!({"usernames": ["bob"]}))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.text().await.unwrap());
    // A key revoked.
    let key_id = alice.key.public_key().key_id();
    let res = app
        .request(
            reqwest::Method::DELETE,
            &format!("/api/v1/keys/{}", key_id.as_str()),
        )
        .bearer_auth(&alice.token)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.text().await.unwrap());

    let last = (yank_index + 4) as u64;
    let now = checkpoint_of(&app, last + 1).await;
    assert_eq!(now.size, last + 1, "nothing else was logged");
    let log = entries(&app, now.size).await;
    assert_eq!(log[0]["op"], "genesis");
    let ops: Vec<&str> = log.iter().map(|e| e["op"].as_str().unwrap()).collect();
    // Alice's and Bob's accounts log nothing; Alice's key does.
    assert_eq!(
        ops,
        [
            "genesis",
            "key_add",
            "publish",
            "yank",
            "unyank",
            "owner_add",
            "owner_remove",
            "key_revoke"
        ]
    );
    let entry = &log[publish_index as usize];
    assert_eq!(entry["v"], 1);
    assert_eq!(entry["kind"], "tool");
    assert_eq!(entry["name"], "web_fetch");
    assert_eq!(entry["version"], "1.0.0");
    assert_eq!(entry["sha256"], v1["sha256"]);
    assert_eq!(entry["signer"], key_id.as_str());
    assert_eq!(entry["account"], "alice");
    assert_eq!(log[yank_index as usize]["reason"], "leaks tokens");
    assert_eq!(log[yank_index as usize + 2]["account"], "bob");
    assert_eq!(log[1]["signer"], key_id.as_str());

    // Inclusion of the publish, and consistency with the checkpoint seen
    // before, proved from the tiles alone by tlog_tiles.
    let tiles = FetchedTiles::fetch(&app, now.size).await;
    let reader = TileHashReader::new(now.size, now.root, &tiles);
    let proof = tlog_tiles::prove_record(now.size, publish_index as u64, &reader).unwrap();
    tlog_tiles::check_record(
        &proof,
        now.size,
        now.root,
        publish_index as u64,
        leaf(entry),
    )
    .expect("the publish is in the tree");
    assert!(
        tlog_tiles::check_record(
            &proof,
            now.size,
            now.root,
            publish_index as u64,
            leaf(&log[yank_index as usize])
        )
        .is_err(),
        "another entry does not pass as the publish"
    );
    let consistency = tlog_tiles::prove_tree(now.size, before.size, &reader).unwrap();
    tlog_tiles::check_tree(&consistency, now.size, now.root, before.size, before.root)
        .expect("the log only grew");
    assert_ne!(before.note, now.note);
}

async fn witnesses_cosign_the_served_checkpoint(backend: Backend) {
    let mut witness = Witness::new("witness.test/w1", SecretKey::generate().unwrap()).unwrap();
    let mut stranger = Witness::new("witness.test/w2", SecretKey::generate().unwrap()).unwrap();
    let vkey = witness.key().vkey();
    let Some(app) = TestApp::builder(backend)
        .config(move |c| c.log.witnesses = vec![vkey])
        .build()
        .await
    else {
        return;
    };
    let served = checkpoint_of(&app, 1).await;
    let post = |note: Vec<u8>| {
        app.request(reqwest::Method::POST, "/log/witness")
            .header("content-type", "text/plain")
            .body(note)
            .send()
    };

    let cosigned = witness
        .cosign(served.note.as_bytes(), 1_790_000_000)
        .unwrap();
    let res = post(cosigned.clone()).await.unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let note = app.get("/log/checkpoint").await.text().await.unwrap();
    assert_eq!(
        note.as_bytes(),
        cosigned.as_slice(),
        "served with the cosignature"
    );
    let (_, cosignatures) = agentlang_core::tlog::open_witnessed_checkpoint(
        note.as_bytes(),
        app.get("/log/key").await.text().await.unwrap().trim(),
        &[WitnessKey::parse(&witness.key().vkey()).unwrap()],
    )
    .unwrap();
    assert_eq!(cosignatures.len(), 1);

    // A witness nobody configured.
    let res = post(stranger.cosign(served.note.as_bytes(), 1).unwrap())
        .await
        .unwrap();
    problem::problem(res, StatusCode::from_u16(403).unwrap(), "unknown-witness").await;
    // A forged cosignature by the configured witness.
    let text = String::from_utf8(cosigned).unwrap();
    let line = text.lines().last().unwrap();
    let sig = line.rsplit(' ').next().unwrap();
    let forged_sig = format!("{}A{}", &sig[..20], &sig[21..]);
    let forged_sig = if forged_sig == sig {
        format!("{}B{}", &sig[..20], &sig[21..])
    } else {
        forged_sig
    };
    let res = post(text.replace(sig, &forged_sig).into_bytes())
        .await
        .unwrap();
    problem::problem(
        res,
        StatusCode::from_u16(422).unwrap(),
        "cosignature-invalid",
    )
    .await;
    // Not a note at all.
    let res = post(b"hello".to_vec()).await.unwrap();
    problem::problem(
        res,
        StatusCode::from_u16(422).unwrap(),
        "cosignature-invalid",
    )
    .await;

    // Once the log moves on, the old checkpoint is stale.
    let alice = publisher(&app, "alice").await;
    published(&app, &alice.token, tool(&alice.key, "calc", "1.0.0", &[])).await;
    checkpoint_of(&app, served.size + 2).await;
    let res = post(witness.cosign(served.note.as_bytes(), 2).unwrap())
        .await
        .unwrap();
    problem::problem(res, StatusCode::from_u16(409).unwrap(), "conflict").await;
}

async fn a_log_that_does_not_verify_is_not_served(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(&app, &alice.token, tool(&alice.key, "calc", "1.0.0", &[])).await;
    let served = checkpoint_of(&app, 3).await;
    let db = &app.store().db;
    let settings = app.state().config.log.clone();
    let url = app.url.clone();
    // As stored, it opens (the registry's start-up does the same).
    let log = TransparencyLog::open(db, &settings, &url).await.unwrap();
    assert_eq!(log.checkpoint().unwrap().size, served.size);
    assert_eq!(log.audit(db).await.unwrap(), served.size);

    // Under another key, the stored checkpoints are not this log's.
    let other = LogSettings {
        key_pem: Some(SecretKey::generate().unwrap().to_pkcs8_pem().to_string()),
        ..settings.clone()
    };
    let err = TransparencyLog::open(db, &other, &url).await.unwrap_err();
    assert!(
        format!("{err:#}").contains("AGENTLANG_REGISTRY_TLOG_KEY"),
        "{err:#}"
    );

    // History rewritten: an entry changed after it was integrated.
    rewrite(db, "log_entries", 1, b"{}".to_vec()).await;
    // Start-up checks the stored hashes against the signed root, which
    // still holds; the audit that follows recomputes them from the
    // entries, finds the rewrite, and takes the log down.
    let log = TransparencyLog::open(db, &settings, &url).await.unwrap();
    assert_eq!(log.checkpoint().unwrap().size, served.size);
    let err = log.audit(db).await.unwrap_err();
    assert!(
        err.to_string().contains("is not the one the entries give"),
        "{err}"
    );
    assert!(log.checkpoint().is_none());
    assert!(log.broken().is_some());
    assert!(log.sequence(db).await.is_err(), "a broken log sequences on");
}

/// Rewrites row `idx` of the log's `table` (`log_entries` or `log_hashes`)
/// behind the registry's back, on either backend.
async fn rewrite(db: &Db, table: &str, idx: u64, bytes: Vec<u8>) {
    let sql: &'static str = match table {
        "log_entries" => "UPDATE log_entries SET entry = $1 WHERE idx = $2",
        "log_hashes" => "UPDATE log_hashes SET hash = $1 WHERE idx = $2",
        _ => panic!("no such log table {table}"),
    };
    let idx = i64::try_from(idx).unwrap();
    match db {
        Db::Sqlite { pool, .. } => sqlx::query(sql)
            .bind(bytes)
            .bind(idx)
            .execute(pool)
            .await
            .map(drop),
        Db::Postgres(pools) => sqlx::query(sql)
            .bind(bytes)
            .bind(idx)
            .execute(pools.current())
            .await
            .map(drop),
    }
    .unwrap();
}

/// Start-up reads the stored hashes of the tree's right edge only (log2 n,
/// whatever the log's size), so the registry answers before anything
/// proportional to the log is read; the background audit reads the rest.
async fn start_up_reads_the_right_edge_and_the_audit_the_rest(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    for version in ["1.0.0", "1.1.0", "1.2.0"] {
        published(&app, &alice.token, tool(&alice.key, "calc", version, &[])).await;
    }
    // genesis, alice's key, three publishes
    let served = checkpoint_of(&app, 5).await;
    let db = &app.store().db;
    let settings = app.state().config.log.clone();
    let url = app.url.clone();
    let edge = agentlang_core::tlog::frontier_indexes(served.size);
    assert!(!edge.contains(&0), "leaf 0 is inside a complete subtree");

    // A database that cannot be read is not a log that failed its audit:
    // the log stays served (the registry tries the audit again).
    let closed = Db::connect(
        &app.state().config.effective_database_url(),
        std::time::Duration::from_secs(5),
        1,
    )
    .await
    .unwrap();
    let log = TransparencyLog::open(&closed, &settings, &url)
        .await
        .unwrap();
    closed.close().await;
    assert!(matches!(log.audit(&closed).await, Err(LogError::Db(_))));
    assert!(log.broken().is_none() && log.checkpoint().is_some());

    // A hash off the edge rewritten: start-up does not read it, so the
    // log opens and serves; the audit recomputes it and takes the log down.
    let leaf0 = db.log_hashes(0, 1).await.unwrap().remove(0);
    rewrite(db, "log_hashes", 0, vec![0; 32]).await;
    let log = TransparencyLog::open(db, &settings, &url).await.unwrap();
    assert_eq!(log.checkpoint().unwrap().size, served.size);
    let err = log.audit(db).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("stored hash 0 is not the one the entries give"),
        "{err}"
    );
    rewrite(db, "log_hashes", 0, leaf0).await;
    let log = TransparencyLog::open(db, &settings, &url).await.unwrap();
    assert_eq!(log.audit(db).await.unwrap(), served.size);

    // A hash on the edge rewritten: the root start-up computes is not the
    // signed one, and the log does not open.
    rewrite(db, "log_hashes", edge[0], vec![0; 32]).await;
    let err = TransparencyLog::open(db, &settings, &url)
        .await
        .unwrap_err();
    assert!(
        format!("{err:#}").contains("do not give the checkpoint's root"),
        "{err:#}"
    );
}

async fn tile_paths_outside_the_tree_are_not_found(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let served = checkpoint_of(&app, 1).await;
    for path in [
        "/log/tile/0/000",       // full: the tree has one entry
        "/log/tile/0/000.p/2",   // wider than the tree
        "/log/tile/entries/001", // past the tree
        "/log/tile/0/x000/000",  // not canonical
        "/log/tile/9/000.p/1",   // no such level yet
        "/log/tile/0/000.p/1/x",
    ] {
        let res = app.get(path).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
    }
    let res = app.get("/log/tile/0/000.p/1").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.bytes().await.unwrap().len(), 32 * served.size as usize);
}

async fn the_log_page_shows_the_checkpoint_and_links_each_entry(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let v1 = published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.3", &[]),
    )
    .await;
    let index = v1["log"]["index"].as_u64().unwrap();
    let checked = checkpoint_of(&app, index + 1).await;

    let res = app.get("/log").await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.unwrap();
    assert!(
        html.contains(&format!("<dd>{}</dd>", checked.size)),
        "{html}"
    );
    assert!(html.contains("href=\"/tools/web_fetch/1.0.3\""), "{html}");
    assert!(html.contains(v1["sha256"].as_str().unwrap()));
    let key = app.get("/log/key").await.text().await.unwrap();
    assert!(html.contains(key.trim()), "the page names the log key");

    // The version page links its entry; the log page highlights it.
    let version = app
        .get("/tools/web_fetch/1.0.3")
        .await
        .text()
        .await
        .unwrap();
    let link = format!("/log?at={index}#entry-{index}");
    assert!(version.contains(&link), "{version}");
    let around = app
        .get(&format!("/log?at={index}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        around.contains(&format!("id=\"entry-{index}\" class=\"is-current\"")),
        "{around}"
    );
    // Past the end, the newest entries.
    let res = app.get("/log?at=999999").await;
    assert_eq!(res.status(), StatusCode::OK);
}

/// The root of a tree of these leaf hashes, by `tlog_tiles` alone.
fn root_of(leaves: &[Hash]) -> Hash {
    struct Stored(Vec<Hash>);
    impl tlog_tiles::HashReader for Stored {
        fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<Hash>, tlog_tiles::Error> {
            indexes
                .iter()
                .map(|&i| {
                    self.0
                        .get(i as usize)
                        .copied()
                        .ok_or(tlog_tiles::Error::IndexesNotInTree)
                })
                .collect()
        }
    }
    let mut stored = Stored(Vec::new());
    for (n, leaf) in leaves.iter().enumerate() {
        let added = tlog_tiles::stored_hashes_for_record_hash(n as u64, *leaf, &stored).unwrap();
        stored.0.extend(added);
    }
    tlog_tiles::tree_hash(leaves.len() as u64, &stored).unwrap()
}

/// Bundle 0 of a tree of `size` entries, split on its 2-byte lengths.
async fn raw_entries(app: &TestApp, size: u64) -> Vec<Vec<u8>> {
    let path = agentlang_core::tlog::tile_path(None, 0, size);
    let res = app.get(&format!("/log/{path}")).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    let bundle = res.bytes().await.unwrap();
    let mut out = Vec::new();
    let mut rest = &bundle[..];
    while !rest.is_empty() {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        out.push(rest[2..2 + len].to_vec());
        rest = &rest[2 + len..];
    }
    assert_eq!(out.len() as u64, size);
    out
}

async fn every_entry_the_log_accepts_is_served(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    // Every field of the entries at its bound: the longest name, a version
    // with the longest pre-release and build metadata, the longest reason.
    let name = format!("t{}", "o".repeat(63));
    let version = format!("1.0.0-{}+{}", "a".repeat(64), "b".repeat(64));
    published(&app, &alice.token, tool(&alice.key, &name, &version, &[])).await;
    let yank = |reason: String| {
        app.request(
            reqwest::Method::POST,
            &format!("/api/v1/tools/{name}/{version}/yank"),
        )
        .bearer_auth(&alice.token)
        .json(&json!({ "reason": reason }))
        .send()
    };
    // Past a field's bound is refused where it is read, and writes nothing.
    problem(
        yank("r".repeat(501)).await.unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    let past = format!("1.0.0+{}", "b".repeat(65));
    assert!(agentlang_core::Version::parse(&past).is_err());
    let yanked: Value = yank("r".repeat(500)).await.unwrap().json().await.unwrap();
    let size = yanked["log"]["index"].as_u64().unwrap() + 1;
    let checked = checkpoint_of(&app, size).await;
    // Whatever the log took, its bundles serve, and the entries they hold
    // give the root the checkpoint signs.
    let entries = raw_entries(&app, checked.size).await;
    assert!(entries.iter().all(|e| !e.is_empty()), "no placeholder");
    let leaves: Vec<Hash> = entries.iter().map(|e| tlog_tiles::record_hash(e)).collect();
    assert_eq!(root_of(&leaves), checked.root);
    // And no entry the store would take is past what a bundle frames.
    let mut long = agentlang_core::tlog::LogEntry::new(
        agentlang_core::tlog::LogOp::Yank,
        "2026-01-01T00:00:00Z",
    );
    long.reason = Some("r".repeat(70_000));
    assert!(app::tlog::check_servable(&long).is_err());
}

async fn an_entry_too_long_to_frame_is_served_as_a_placeholder(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(&app, &alice.token, tool(&alice.key, "calc", "1.0.0", &[])).await;
    // What a registry from before entries were bounded could hold: the
    // entry of `x@1.0.0+<70,000 characters>`, written straight to the
    // table as that registry's append did.
    let poison = format!(
        r#"{{"account":"alice","kind":"tool","name":"x","op":"publish","time":"2026-01-01T00:00:00Z","v":1,"version":"1.0.0+{}"}}"#,
        "b".repeat(70_000)
    );
    let insert = "INSERT INTO log_entries (idx, entry, created_at)
                  SELECT COALESCE(MAX(idx) + 1, 0), $1, 0 FROM log_entries";
    match &app.store().db {
        Db::Sqlite { pool, .. } => sqlx::query(insert)
            .bind(poison.as_bytes().to_vec())
            .execute(pool)
            .await
            .map(drop),
        Db::Postgres(pools) => sqlx::query(insert)
            .bind(poison.as_bytes().to_vec())
            .execute(pools.current())
            .await
            .map(drop),
    }
    .unwrap();
    // Entries after it are served and provable too.
    let after = published(&app, &alice.token, tool(&alice.key, "calc", "1.1.0", &[])).await;
    let size = after["log"]["index"].as_u64().unwrap() + 1;
    let checked = checkpoint_of(&app, size).await;
    let entries = raw_entries(&app, checked.size).await;
    let placeholder = entries
        .iter()
        .position(|e| e.is_empty())
        .expect("the long entry's placeholder");
    assert_eq!(placeholder as u64, size - 2);
    for (i, entry) in entries.iter().enumerate() {
        if i != placeholder {
            serde_json::from_slice::<Value>(entry).expect("an entry is JSON");
        }
    }
    // The placeholder's leaf hash is in the level-0 tile; with it, the
    // entries give the signed root.
    let tile = app
        .get(&format!(
            "/log/{}",
            agentlang_core::tlog::tile_path(Some(0), 0, checked.size)
        ))
        .await
        .bytes()
        .await
        .unwrap();
    let leaves: Vec<Hash> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            if i == placeholder {
                Hash(tile[32 * i..32 * (i + 1)].try_into().unwrap())
            } else {
                tlog_tiles::record_hash(e)
            }
        })
        .collect();
    assert_eq!(
        leaves[placeholder],
        tlog_tiles::record_hash(poison.as_bytes())
    );
    assert_eq!(root_of(&leaves), checked.root);
}

async fn a_version_todays_bounds_refuse_is_retired_at_start(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(&app, &alice.token, tool(&alice.key, "calc", "1.0.0", &[])).await;
    published(&app, &alice.token, tool(&alice.key, "calc", "1.1.0", &[])).await;
    // What a registry from before versions were bounded could hold: a row
    // whose text no `Version` parses today.
    let long = format!("1.0.0+{}", "b".repeat(70_000));
    let update = "UPDATE versions SET version = $1 WHERE version = '1.0.0'";
    match &app.store().db {
        Db::Sqlite { pool, .. } => sqlx::query(update)
            .bind(&long)
            .execute(pool)
            .await
            .map(drop),
        Db::Postgres(pools) => sqlx::query(update)
            .bind(&long)
            .execute(pools.current())
            .await
            .map(drop),
    }
    .unwrap();
    // What start-up runs before it serves.
    let retired = app::packages::retire_unreadable_versions(&app.store().db)
        .await
        .unwrap();
    assert_eq!(retired, 1);
    // The package reads again, without the row it could not type.
    let res = app.get("/api/v1/tools/calc").await;
    assert_eq!(res.status(), StatusCode::OK);
    let package: Value = res.json().await.unwrap();
    let versions: Vec<&str> = package["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["1.1.0"]);
    assert_eq!(app.get("/tools/calc").await.status(), StatusCode::OK);
}
