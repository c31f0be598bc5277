//! The storage API publish will call, on every backend.

use std::{collections::HashSet, time::Duration};

use agentlang_core::digest::Sha256Digest;
use agentlang_core::{
    Kind, PackageName, Version,
    signing::{KeyId, SecretKey},
    tlog::LogOp,
};
use app::tlog;
use bytes::Bytes;
use serde_json::json;
use store::packages::{DependencyEdge, NewVersion, PublishError, YankChange};

use crate::support::{
    Backend, TestApp, backend_tests,
    seed::{seed_version, test_log_entry},
};

backend_tests!(
    publish_creates_the_package_with_its_owner,
    versions_are_never_reused,
    look_alike_names_are_refused,
    dependencies_are_stored_with_the_version,
    blobs_are_create_only_and_swept_when_unreferenced,
    search_finds_packages_by_name_keyword_and_description,
    versions_list_in_semver_order_and_yank,
    downloads_are_counted_per_day,
    concurrent_publishes_have_one_winner,
    a_batch_answers_each_publish_alone,
    a_batch_publishes_several_versions_of_one_package,
    a_batch_bumps_the_generation_at_its_commit,
    a_key_revoked_before_the_commit_refuses_its_publishes,
);

async fn publish_creates_the_package_with_its_owner(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    let first = seed_version(&app, Kind::Agent, "helper", "1.0.0", "alice")
        .await
        .unwrap();
    assert!(first.new_package);
    let second = seed_version(&app, Kind::Agent, "helper", "1.1.0", "alice")
        .await
        .unwrap();
    assert!(!second.new_package);
    assert_eq!(first.package_id, second.package_id);
    let alice = app.account_id("alice").await;
    assert!(
        app.store()
            .db
            .is_owner(first.package_id, alice)
            .await
            .unwrap()
    );
    let owners = app.store().db.list_owners(first.package_id).await.unwrap();
    assert_eq!(owners.len(), 1);
    // A tool may share an agent's name: kinds are separate namespaces.
    assert!(
        seed_version(&app, Kind::Tool, "helper", "1.0.0", "alice")
            .await
            .unwrap()
            .new_package
    );
}

async fn versions_are_never_reused(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    let published = seed_version(&app, Kind::Tool, "calc", "1.0.0", "alice")
        .await
        .unwrap();
    let v = |s: &str| Version::parse(s).unwrap();
    assert!(
        app.store()
            .db
            .version_exists(published.package_id, &v("1.0.0"))
            .await
            .unwrap()
    );
    assert!(
        !app.store()
            .db
            .version_exists(published.package_id, &v("1.0.1"))
            .await
            .unwrap()
    );

    for again in ["1.0.0", "1.0.0+other-build"] {
        let err = seed_version(&app, Kind::Tool, "calc", again, "alice")
            .await
            .unwrap_err();
        assert!(
            matches!(err, PublishError::VersionExists { .. }),
            "{again}: {err}"
        );
    }

    // Deleted, the version still exists for the purpose of publishing.
    assert!(
        app.store()
            .db
            .delete_version(published.package_id, &v("1.0.0"))
            .await
            .unwrap()
    );
    assert!(
        app.store()
            .db
            .version_exists(published.package_id, &v("1.0.0"))
            .await
            .unwrap()
    );
    let err = seed_version(&app, Kind::Tool, "calc", "1.0.0", "alice")
        .await
        .unwrap_err();
    assert!(matches!(err, PublishError::VersionExists { .. }), "{err}");
    // A prerelease of the same triple is a different version.
    seed_version(&app, Kind::Tool, "calc", "1.0.0-rc.1", "alice")
        .await
        .unwrap();
}

async fn look_alike_names_are_refused(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    app.create_account("bob", "password-123").await;
    seed_version(&app, Kind::Tool, "web-search", "1.0.0", "alice")
        .await
        .unwrap();

    let err = seed_version(&app, Kind::Tool, "Web_Search", "2.0.0", "bob")
        .await
        .unwrap_err();
    assert!(
        matches!(err, PublishError::NameTaken { ref existing, .. } if existing == "web-search"),
        "{err}"
    );
    let err = seed_version(&app, Kind::Tool, "web-search", "2.0.0", "bob")
        .await
        .unwrap_err();
    assert!(matches!(err, PublishError::NotOwner { .. }), "{err}");
    let err = seed_version(&app, Kind::Tool, "WEB-SEARCH", "2.0.0", "alice")
        .await
        .unwrap_err();
    assert!(
        matches!(err, PublishError::SpelledDifferently { .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "this tool is published as web-search, not WEB-SEARCH"
    );
}

async fn dependencies_are_stored_with_the_version(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    let alice = app.account_id("alice").await;
    let name = PackageName::new("research").unwrap();
    let version = Version::parse("0.2.0").unwrap();
    let digest = Sha256Digest::of(b"research container");
    let deps = vec![
        DependencyEdge {
            kind: Kind::Tool,
            name: PackageName::new("web_search").unwrap(),
            requirement: "^1.2".parse().unwrap(),
        },
        DependencyEdge {
            kind: Kind::Tool,
            name: PackageName::new("calc").unwrap(),
            requirement: ">=0.1, <0.3".parse().unwrap(),
        },
    ];
    let manifest = json!({"name": "research"});
    let published = app
        .store()
        .db
        .publish_version(&NewVersion {
            publisher_identity: None,
            provenance: None,
            kind: Kind::Agent,
            name: name.clone(),
            version,
            sha256: digest,
            size: 18,
            signer_key_id: None,
            manifest: manifest.clone(),
            spec: json!({"name": "research", "tools": {"web_search": "^1.2"}}),
            lockfile: Some(json!({"version": "1"})),
            quality_report: None,
            extras: None,
            max_risk: None,
            prompt_mode: None,
            prompt_key_id: None,
            dependencies: deps.clone(),
            description: "finds papers".to_owned().to_owned(),
            keywords: vec!["research".to_owned(), "papers".to_owned()],
            publisher: alice,
            log_entry: test_log_entry(),
        })
        .await
        .unwrap();
    let edges = app
        .store()
        .db
        .list_dependencies(published.version_id)
        .await
        .unwrap();
    assert_eq!(
        edges,
        deps.iter().rev().cloned().collect::<Vec<_>>(),
        "sorted by name"
    );

    // A duplicated edge fails the whole publish: nothing half-written.
    let twice = vec![deps[0].clone(), deps[0].clone()];
    let v2 = Version::parse("0.3.0").unwrap();
    let err = app
        .store()
        .db
        .publish_version(&NewVersion {
            publisher_identity: None,
            provenance: None,
            kind: Kind::Agent,
            name: name.clone(),
            version: v2.clone(),
            sha256: digest,
            size: 18,
            signer_key_id: None,
            manifest,
            spec: json!({}),
            lockfile: None,
            quality_report: None,
            extras: None,
            max_risk: None,
            prompt_mode: None,
            prompt_key_id: None,
            dependencies: twice,
            description: String::new(),
            keywords: Vec::new(),
            publisher: alice,
            log_entry: test_log_entry(),
        })
        .await;
    assert!(err.is_err());
    assert!(
        !app.store()
            .db
            .version_exists(published.package_id, &v2)
            .await
            .unwrap()
    );
}

async fn blobs_are_create_only_and_swept_when_unreferenced(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let blobs = &app.store().blobs;
    let bytes = Bytes::from_static(b"container of web-search@1.0.0");
    let kept = blobs.put(bytes.clone()).await.unwrap();
    assert_eq!(
        blobs.put(bytes.clone()).await.unwrap(),
        kept,
        "a second write is harmless"
    );
    let orphan = blobs
        .put(Bytes::from_static(b"orphan from a crashed publish"))
        .await
        .unwrap();
    assert_eq!(blobs.get(&kept).await.unwrap().unwrap(), bytes);

    sweep_keeps_referenced(&app, kept, orphan).await;
}

async fn sweep_keeps_referenced(app: &TestApp, kept: Sha256Digest, orphan: Sha256Digest) {
    app.create_account("alice", "password-123").await;
    // seed_version's digest is of "container of {name}@{version}".
    seed_version(app, Kind::Tool, "web-search", "1.0.0", "alice")
        .await
        .unwrap();
    let referenced: HashSet<_> = app
        .store()
        .db
        .referenced_blob_digests()
        .await
        .unwrap()
        .into_iter()
        .collect();
    assert!(referenced.contains(&kept));

    let report = app::sweep::sweep_unreferenced(
        &app.store().db,
        &app.store().blobs,
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    assert!(report.deleted.is_empty(), "young blobs stay: {report:?}");

    let report =
        app::sweep::sweep_unreferenced(&app.store().db, &app.store().blobs, Duration::ZERO)
            .await
            .unwrap();
    assert_eq!(report.deleted, vec![orphan]);
    assert!(app.store().blobs.exists(&kept).await.unwrap());
    assert!(!app.store().blobs.exists(&orphan).await.unwrap());
}

async fn publish_described(
    app: &TestApp,
    kind: Kind,
    name: &str,
    description: &str,
    keywords: &[&str],
) {
    let alice = app.account_id("alice").await;
    let name = PackageName::new(name).unwrap();
    let version = Version::parse("1.0.0").unwrap();
    let digest = Sha256Digest::of(name.as_str().as_bytes());
    let keywords: Vec<String> = keywords.iter().map(|k| (*k).to_owned()).collect();
    app.store()
        .db
        .publish_version(&NewVersion {
            publisher_identity: None,
            provenance: None,
            kind,
            name: name.clone(),
            version: version.clone(),
            sha256: digest,
            size: 1,
            signer_key_id: None,
            manifest: json!({}),
            spec: json!({}),
            lockfile: None,
            quality_report: None,
            extras: None,
            max_risk: None,
            prompt_mode: None,
            prompt_key_id: None,
            dependencies: Vec::new(),
            description: description.to_owned(),
            keywords: keywords.clone(),
            publisher: alice,
            log_entry: test_log_entry(),
        })
        .await
        .unwrap();
}

async fn search_finds_packages_by_name_keyword_and_description(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    publish_described(
        &app,
        Kind::Tool,
        "web-search",
        "Query the web",
        &["internet"],
    )
    .await;
    publish_described(
        &app,
        Kind::Tool,
        "paper_fetch",
        "Fetch papers from arXiv",
        &["research"],
    )
    .await;
    publish_described(
        &app,
        Kind::Agent,
        "research-assistant",
        "Finds and summarizes papers",
        &["search"],
    )
    .await;
    let db = &app.store().db;
    // Ranked ids, shown as names in rank order.
    let names = |ids: Vec<i64>| async move {
        let records = db.packages_by_ids(&ids).await.unwrap();
        ids.iter()
            .map(|id| {
                records
                    .iter()
                    .find(|p| p.id == *id)
                    .unwrap()
                    .name
                    .to_string()
            })
            .collect::<Vec<_>>()
    };
    let search = |q: &'static str, kind: Option<Kind>, limit: i64| async move {
        db.search_live_package_ids(q, kind, limit).await.unwrap()
    };

    // The name outweighs a keyword.
    assert_eq!(
        names(search("search", None, 10).await).await,
        ["web-search", "research-assistant"]
    );
    assert_eq!(
        names(search("search", Some(Kind::Agent), 10).await).await,
        ["research-assistant"]
    );
    assert_eq!(
        names(search("arxiv", None, 10).await).await,
        ["paper_fetch"]
    );
    assert_eq!(
        names(search("intern", None, 10).await).await,
        ["web-search"],
        "prefixes match"
    );
    assert_eq!(
        names(search("papers fetch", None, 10).await).await,
        ["paper_fetch"],
        "every term must match"
    );
    assert_eq!(search("search", None, 1).await.len(), 1, "limited");
    // Operator characters are not syntax.
    assert!(search("\"*) OR (NEAR", None, 10).await.is_empty());
    assert!(search("", None, 10).await.is_empty());

    // The index follows updates: a new release's description is searchable.
    let alice = app.account_id("alice").await;
    let name = PackageName::new("web-search").unwrap();
    let version = Version::parse("1.1.0").unwrap();
    db.publish_version(&NewVersion {
        publisher_identity: None,
        provenance: None,
        kind: Kind::Tool,
        name: name.clone(),
        version: version.clone(),
        sha256: Sha256Digest::of(b"v2"),
        size: 2,
        signer_key_id: None,
        manifest: json!({}),
        spec: json!({}),
        lockfile: None,
        quality_report: None,
        extras: None,
        max_risk: None,
        prompt_mode: None,
        prompt_key_id: None,
        dependencies: Vec::new(),
        description: "Query DuckDuckGo".to_owned(),
        keywords: Vec::new(),
        publisher: alice,
        log_entry: test_log_entry(),
    })
    .await
    .unwrap();
    assert_eq!(
        names(search("duckduckgo", None, 10).await).await,
        ["web-search"]
    );
    assert!(search("internet", None, 10).await.is_empty());
}

async fn versions_list_in_semver_order_and_yank(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    let mut package_id = 0;
    for v in [
        "1.0.0-rc.9",
        "1.0.0-rc.10",
        "0.9.0",
        "1.0.0",
        "10.0.0",
        "2.0.0",
    ] {
        package_id = seed_version(&app, Kind::Tool, "calc", v, "alice")
            .await
            .unwrap()
            .package_id;
    }
    let db = &app.store().db;
    let listed: Vec<String> = db
        .list_versions(package_id)
        .await
        .unwrap()
        .into_iter()
        .map(|v| v.version.to_string())
        .collect();
    assert_eq!(
        listed,
        [
            "10.0.0",
            "2.0.0",
            "1.0.0",
            "1.0.0-rc.10",
            "1.0.0-rc.9",
            "0.9.0"
        ]
    );

    let v = Version::parse("2.0.0").unwrap();
    let entry = test_log_entry();
    let change = |yanked, reason| YankChange {
        yanked,
        reason,
        log_entry: &entry,
    };
    let yanked = db
        .set_yanked(package_id, &v, &change(true, Some("broken build")))
        .await
        .unwrap()
        .expect("the version exists");
    let record = db.find_version(package_id, &v).await.unwrap().unwrap();
    assert!(record.yanked);
    assert_eq!(record.yank_reason.as_deref(), Some("broken build"));
    assert_eq!(record.manifest.0["version"], "2.0.0");
    // The same yank again changes nothing and logs nothing.
    assert_eq!(
        db.set_yanked(package_id, &v, &change(true, Some("broken build")))
            .await
            .unwrap(),
        Some(yanked)
    );
    let unyanked = db
        .set_yanked(package_id, &v, &change(false, Some("ignored")))
        .await
        .unwrap()
        .expect("the version exists");
    assert_eq!(unyanked, yanked + 1, "one entry per change, in order");
    let record = db.find_version(package_id, &v).await.unwrap().unwrap();
    assert!(!record.yanked);
    assert_eq!(record.yank_reason, None);
    assert_eq!(
        db.set_yanked(
            package_id,
            &Version::parse("3.0.0").unwrap(),
            &change(true, None)
        )
        .await
        .unwrap(),
        None
    );
}

async fn downloads_are_counted_per_day(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    let published = seed_version(&app, Kind::Tool, "calc", "1.0.0", "alice")
        .await
        .unwrap();
    let db = &app.store().db;
    // Counted in memory, written by one flush.
    let downloads = app::packages::DownloadCounter::default();
    for _ in 0..3 {
        downloads.record(published.version_id);
    }
    assert_eq!(db.downloads_by_day(published.version_id).await.unwrap(), []);
    downloads.flush(db).await.unwrap();
    let days = db.downloads_by_day(published.version_id).await.unwrap();
    let today = time::OffsetDateTime::now_utc().date().to_string();
    assert_eq!(days, [(today, 3)]);
    let record = db
        .find_version(published.package_id, &Version::parse("1.0.0").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.downloads, 3);
}

async fn concurrent_publishes_have_one_winner(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    app.create_account("bob", "password-123").await;

    // One owner publishing one new version twice at once: one version, and
    // the other attempt is told it exists (not that the name is taken).
    for round in 0..5 {
        let name = format!("twice-{round}");
        let (a, b) = tokio::join!(
            seed_version(&app, Kind::Tool, &name, "1.0.0", "alice"),
            seed_version(&app, Kind::Tool, &name, "1.0.0", "alice"),
        );
        let (ok, err) = match (a, b) {
            (Ok(ok), Err(err)) | (Err(err), Ok(ok)) => (ok, err),
            other => panic!("expected one winner: {other:?}"),
        };
        assert!(ok.new_package);
        assert!(matches!(err, PublishError::VersionExists { .. }), "{err}");
    }

    // Two accounts racing for one new name: one owns it, the other is refused.
    for round in 0..5 {
        let name = format!("contested-{round}");
        let (a, b) = tokio::join!(
            seed_version(&app, Kind::Tool, &name, "1.0.0", "alice"),
            seed_version(&app, Kind::Tool, &name, "1.0.0", "bob"),
        );
        let err = match (a, b) {
            (Ok(_), Err(err)) | (Err(err), Ok(_)) => err,
            other => panic!("expected one winner: {other:?}"),
        };
        assert!(
            matches!(
                err,
                PublishError::NotOwner { .. } | PublishError::NameTaken { .. }
            ),
            "{err}"
        );
        let package = app
            .store()
            .db
            .find_package(Kind::Tool, &PackageName::new(name).unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            app.store().db.list_owners(package.id).await.unwrap().len(),
            1
        );
    }

    // Concurrent writes of one blob both succeed.
    let bytes = Bytes::from(vec![42u8; 64 * 1024]);
    let (a, b) = tokio::join!(
        app.store().blobs.put(bytes.clone()),
        app.store().blobs.put(bytes.clone())
    );
    assert_eq!(a.unwrap(), b.unwrap());
}

/// A tool version for the batch test, with `dependencies`.
fn tool_version(name: &str, publisher: i64, dependencies: Vec<DependencyEdge>) -> NewVersion {
    NewVersion {
        publisher_identity: None,
        provenance: None,
        kind: Kind::Tool,
        name: PackageName::new(name).unwrap(),
        version: Version::parse("1.0.0").unwrap(),
        sha256: Sha256Digest::of(name.as_bytes()),
        size: 1,
        signer_key_id: None,
        manifest: json!({}),
        spec: json!({}),
        lockfile: None,
        quality_report: None,
        extras: None,
        max_risk: None,
        prompt_mode: None,
        prompt_key_id: None,
        dependencies,
        description: String::new(),
        keywords: Vec::new(),
        publisher,
        log_entry: test_log_entry(),
    }
}

/// Publishes committed together: a refusal (read before any write) is
/// answered alone, a failure after writing rolls the batch back and every
/// publish is tried again on its own, so each gets its own answer and
/// nothing of the failed one is stored.
async fn a_batch_answers_each_publish_alone(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    app.create_account("bob", "password-123").await;
    seed_version(&app, Kind::Tool, "bobs", "1.0.0", "bob")
        .await
        .unwrap();
    let alice = app.account_id("alice").await;
    let db = &app.store().db;
    let edge = DependencyEdge {
        kind: Kind::Tool,
        name: PackageName::new("bobs").unwrap(),
        requirement: "^1".parse().unwrap(),
    };
    let mut not_owner = tool_version("bobs", alice, Vec::new());
    not_owner.version = Version::parse("2.0.0").unwrap();
    let batch = [
        tool_version("first", alice, Vec::new()),
        not_owner,
        // The first of the batch took this number a moment ago.
        tool_version("first", alice, Vec::new()),
        tool_version("broken", alice, vec![edge.clone(), edge]),
        tool_version("last", alice, Vec::new()),
    ];
    let results = db.publish_versions(&batch.iter().collect::<Vec<_>>()).await;
    assert_eq!(results.len(), 5);
    let first = results[0].as_ref().expect("first published");
    assert!(
        matches!(results[1], Err(PublishError::NotOwner { .. })),
        "{:?}",
        results[1]
    );
    assert!(
        matches!(results[2], Err(PublishError::VersionExists { .. })),
        "{:?}",
        results[2]
    );
    assert!(
        matches!(results[3], Err(PublishError::Db(_))),
        "{:?}",
        results[3]
    );
    let last = results[4].as_ref().expect("last published");
    assert_ne!(first.log_index, last.log_index);
    for (name, published) in [("first", true), ("broken", false), ("last", true)] {
        let found = db
            .find_package(Kind::Tool, &PackageName::new(name).unwrap())
            .await
            .unwrap();
        assert_eq!(found.is_some(), published, "{name}");
    }
}

/// A batch writes each table once per round, a package's second version
/// in the round after its first: a package created in the batch gets its
/// later versions, the newest release's text, and each version its own
/// edges and log entry.
async fn a_batch_publishes_several_versions_of_one_package(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    let alice = app.account_id("alice").await;
    let db = &app.store().db;
    let on_twice = DependencyEdge {
        kind: Kind::Tool,
        name: PackageName::new("twice").unwrap(),
        requirement: "^1".parse().unwrap(),
    };
    let at = |version: &str, description: &str, dependencies: Vec<DependencyEdge>| NewVersion {
        publisher_identity: None,
        provenance: None,
        version: Version::parse(version).unwrap(),
        description: description.to_owned(),
        ..tool_version("twice", alice, dependencies)
    };
    let batch = [
        at("1.0.0", "first", Vec::new()),
        tool_version("other", alice, vec![on_twice.clone()]),
        at("1.1.0", "newer", vec![on_twice.clone()]),
        at("2.0.0-rc.1", "a prerelease", Vec::new()),
    ];
    let results = db.publish_versions(&batch.iter().collect::<Vec<_>>()).await;
    let published: Vec<_> = results
        .iter()
        .map(|r| r.as_ref().expect("every publish commits"))
        .collect();
    assert!(published[0].new_package && published[1].new_package);
    assert!(!published[2].new_package && !published[3].new_package);
    assert_eq!(published[0].package_id, published[2].package_id);
    assert_eq!(published[0].package_id, published[3].package_id);
    let indexes: HashSet<i64> = published.iter().map(|p| p.log_index).collect();
    assert_eq!(indexes.len(), 4, "{published:?}");
    let twice = db
        .find_package(Kind::Tool, &PackageName::new("twice").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(twice.description, "newer");
    for (n, expected) in [
        (0, vec![]),
        (1, vec![on_twice.clone()]),
        (2, vec![on_twice]),
    ] {
        let edges = db.list_dependencies(published[n].version_id).await.unwrap();
        assert_eq!(edges, expected, "batch[{n}]");
    }
}

async fn a_batch_bumps_the_generation_at_its_commit(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    let alice = app.account_id("alice").await;
    let db = &app.store().db;
    let before = db.registry_generation().await.unwrap();
    let batch = [
        tool_version("one", alice, Vec::new()),
        tool_version("two", alice, Vec::new()),
        tool_version("three", alice, Vec::new()),
    ];
    let results = db.publish_versions(&batch.iter().collect::<Vec<_>>()).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let after = db.registry_generation().await.unwrap();
    match backend {
        // One transaction, one bump, however many rows its triggers saw.
        Backend::PostgresS3 => assert_eq!(after, before + 1),
        Backend::Sqlite => assert!(after > before, "{before} -> {after}"),
    }
    // And a later transaction bumps again: the mark was the batch's alone.
    seed_version(&app, Kind::Tool, "four", "1.0.0", "alice")
        .await
        .unwrap();
    assert!(db.registry_generation().await.unwrap() > after);
}

/// The upload's checks read the signer's key before the body; a revocation
/// after that read is caught by the commit, which reads the key again:
/// the publishes signed with it are refused and store nothing, the rest of
/// the batch commits.
async fn a_key_revoked_before_the_commit_refuses_its_publishes(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    app.create_account("alice", "password-123").await;
    let alice = app.account_id("alice").await;
    let db = &app.store().db;
    let mut key_ids = Vec::new();
    for _ in 0..2 {
        let public = SecretKey::generate().unwrap().public_key();
        let key_id = public.key_id();
        db.insert_signing_key(
            &key_id,
            alice,
            &public.to_spki_pem(),
            &tlog::key_entry(LogOp::KeyAdd, &key_id, "alice"),
        )
        .await
        .unwrap();
        key_ids.push(key_id);
    }
    let [kept, revoked] = [&key_ids[0], &key_ids[1]];
    db.revoke_signing_key(
        alice,
        revoked,
        &tlog::key_entry(LogOp::KeyRevoke, revoked, "alice"),
    )
    .await
    .unwrap()
    .unwrap();
    let signed = |name: &str, key: &KeyId| NewVersion {
        publisher_identity: None,
        provenance: None,
        signer_key_id: Some(key.clone()),
        ..tool_version(name, alice, Vec::new())
    };
    let batch = [
        signed("kept", kept),
        signed("revoked", revoked),
        signed(
            "unknown",
            &SecretKey::generate().unwrap().public_key().key_id(),
        ),
    ];
    let results = db.publish_versions(&batch.iter().collect::<Vec<_>>()).await;
    assert!(results[0].is_ok(), "{:?}", results[0]);
    for refused in &results[1..] {
        assert!(
            matches!(refused, Err(PublishError::KeyRevoked { .. })),
            "{refused:?}"
        );
    }
    // Alone too (a batch of one takes another path).
    let alone = db.publish_version(&signed("alone", revoked)).await;
    assert!(
        matches!(alone, Err(PublishError::KeyRevoked { .. })),
        "{alone:?}"
    );
    for (name, published) in [
        ("kept", true),
        ("revoked", false),
        ("unknown", false),
        ("alone", false),
    ] {
        let found = db
            .find_package(Kind::Tool, &PackageName::new(name).unwrap())
            .await
            .unwrap();
        assert_eq!(found.is_some(), published, "{name}");
    }
}
