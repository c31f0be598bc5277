//! Stored answers (migrations 0050, 0051) are never stale, on either
//! backend: a journalled change of the package deletes its answers in the
//! change's transaction, a download flush deletes its record, and a
//! rendering is stored only when nothing it shows changed after it was
//! read.
//!
//! The PostgreSQL half needs `AGENTLANG_TEST_POSTGRES_URL`; without it,
//! it prints a skip line and passes, except under `CI=true`.

mod common;

use std::time::Duration;

use agentlang_core::Kind;
use agentlang_registry_store::{
    DatabaseUrl, Db,
    changes::MAX_SPAN,
    stored_answers::{Answer, NewStoredAnswer},
};
use sqlx::Connection;

/// Runs `sql` on the registry's database, outside the store's API: a
/// change as any writer would make it.
async fn execute(db: &Db, sql: &str) {
    let sql = sqlx::AssertSqlSafe(sql.to_owned());
    match db {
        Db::Sqlite { pool, .. } => sqlx::raw_sql(sql).execute(pool).await.map(drop),
        Db::Postgres(pools) => sqlx::raw_sql(sql).execute(pools.current()).await.map(drop),
    }
    .unwrap_or_else(|e| panic!("{e}"));
}

fn document(name: &str, body: &str) -> NewStoredAnswer {
    NewStoredAnswer {
        kind: Kind::Tool,
        normalized_name: name.to_owned(),
        answer: Answer::Index,
        downloads: 0,
        body: body.to_owned(),
        etag: format!("\"{body}\""),
    }
}

/// A package record of tool `name` rendered showing `downloads`.
fn record(name: &str, body: &str, downloads: i64) -> NewStoredAnswer {
    NewStoredAnswer {
        answer: Answer::Package,
        downloads,
        ..document(name, body)
    }
}

async fn stored(db: &Db, name: &str) -> Option<String> {
    stored_as(db, name, Answer::Index).await
}

async fn stored_as(db: &Db, name: &str, answer: Answer) -> Option<String> {
    db.stored_answer(Kind::Tool, name, answer)
        .await
        .unwrap()
        .map(|d| d.body)
}

/// A change of `name`'s own facts, as the statuses trigger journals it.
fn deprecate(name: &str, log_index: i64) -> String {
    format!(
        "INSERT INTO statuses (package_id, version_id, status, log_index, changed_at)
         SELECT id, {log_index}, 'deprecated', {log_index}, 0 FROM packages
         WHERE normalized_name = '{name}'"
    )
}

/// The promises every backend keeps, on a migrated database `db`.
async fn answers_follow_changes(db: &Db) {
    execute(
        db,
        "INSERT INTO packages (kind, name, normalized_name, description, keywords, created_at, updated_at)
         VALUES ('tool', 'alpha', 'alpha', '', '', 0, 0), ('tool', 'beta', 'beta', '', '', 0, 0),
                ('agent', 'alpha', 'alpha', '', '', 0, 0)",
    )
    .await;
    let g0 = db.registry_generation().await.unwrap();
    assert_eq!(
        db.store_answers(g0, &[document("alpha", "a0"), document("beta", "b0")])
            .await
            .unwrap(),
        2
    );
    assert_eq!(stored(db, "alpha").await.as_deref(), Some("a0"));
    let read = db
        .stored_answer(Kind::Tool, "beta", Answer::Index)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((read.body.as_str(), read.etag.as_str()), ("b0", "\"b0\""));
    // Another kind of the same name has none.
    assert_eq!(
        db.stored_answer(Kind::Agent, "alpha", Answer::Index)
            .await
            .unwrap(),
        None
    );
    // Every package lacks its record; only the agent its index entry too.
    assert_eq!(db.packages_without_answers(0, 10).await.unwrap().len(), 3);
    assert_eq!(
        db.store_answers(g0, &[record("alpha", "ra0", 0), record("beta", "rb0", 0)])
            .await
            .unwrap(),
        2
    );
    let unanswered = db.packages_without_answers(0, 10).await.unwrap();
    assert_eq!(unanswered.len(), 1);
    assert_eq!(
        (unanswered[0].kind, unanswered[0].name.as_str()),
        (Kind::Agent, "alpha")
    );
    assert_eq!(
        stored_as(db, "alpha", Answer::Package).await.as_deref(),
        Some("ra0")
    );

    // A change of alpha deletes its document, in its transaction, and
    // leaves beta's.
    execute(db, &deprecate("alpha", 1)).await;
    let g1 = db.registry_generation().await.unwrap();
    assert!(g1 > g0);
    assert_eq!(stored(db, "alpha").await, None);
    assert_eq!(stored_as(db, "alpha", Answer::Package).await, None);
    assert_eq!(stored(db, "beta").await.as_deref(), Some("b0"));
    assert_eq!(
        stored_as(db, "beta", Answer::Package).await.as_deref(),
        Some("rb0")
    );
    // A rendering read before that change is refused; one read after it
    // is stored; an existing document is kept, not replaced.
    assert_eq!(
        db.store_answers(g0, &[document("alpha", "stale")])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        db.store_answers(g0, &[document("beta", "b1"), document("alpha", "a1")])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        db.store_answers(g1, &[document("alpha", "a1")])
            .await
            .unwrap(),
        1
    );
    assert_eq!(stored(db, "alpha").await.as_deref(), Some("a1"));
    assert_eq!(stored(db, "beta").await.as_deref(), Some("b0"));

    // A generation the journal does not hold (pruned, or bumped without a
    // row): nothing rendered before it is stored.
    execute(
        db,
        "UPDATE registry_generation SET generation = generation + 1 WHERE id = 1",
    )
    .await;
    execute(db, &deprecate("alpha", 2)).await;
    let g3 = db.registry_generation().await.unwrap();
    assert_eq!(
        db.store_answers(g1, &[document("alpha", "a2")])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        db.store_answers(g3, &[document("alpha", "a3")])
            .await
            .unwrap(),
        1
    );

    // Nor further back than the journal is read (`changes::MAX_SPAN`),
    // though every generation is held and none changed alpha.
    execute(
        db,
        &format!(
            "INSERT INTO registry_changes (generation, scope)
             SELECT generation + n, 'listings'
             FROM registry_generation,
                  (WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {span})
                   SELECT n FROM s) AS steps
             WHERE id = 1;
             UPDATE registry_generation SET generation = generation + {span} WHERE id = 1",
            span = MAX_SPAN + 1
        ),
    )
    .await;
    execute(
        db,
        "DELETE FROM stored_answers WHERE normalized_name = 'alpha'",
    )
    .await;
    assert_eq!(
        db.store_answers(g3, &[document("alpha", "a4")])
            .await
            .unwrap(),
        0
    );
    let g4 = db.registry_generation().await.unwrap();
    assert_eq!(
        db.store_answers(g4 - MAX_SPAN, &[document("alpha", "a4")])
            .await
            .unwrap(),
        1
    );

    // A change journalled as everything deletes every document.
    execute(
        db,
        "UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
         INSERT INTO registry_changes (generation, scope)
         SELECT generation, 'everything' FROM registry_generation WHERE id = 1",
    )
    .await;
    assert_eq!(stored(db, "alpha").await, None);
    assert_eq!(stored(db, "beta").await, None);
    assert_eq!(stored_as(db, "beta", Answer::Package).await, None);
    assert_eq!(db.packages_without_answers(0, 10).await.unwrap().len(), 3);

    downloads_delete_records(db).await;
}

/// A record shows download counts, which the journal does not track: a
/// flush deletes the package's record (not its index entry), and a
/// rendering showing another total than the live versions' is refused.
async fn downloads_delete_records(db: &Db) {
    let sha = "a".repeat(64);
    execute(
        db,
        &format!(
            "INSERT INTO accounts (username, normalized_username, password_hash, created_at)
             VALUES ('alice', 'alice', 'x', 0);
             INSERT INTO versions (package_id, version, major, minor, patch, sha256, size,
                                   manifest, spec, published_by, published_at, downloads,
                                   deleted_at)
             SELECT p.id, v.version, v.major, 0, 0, '{sha}', 1, '{{}}', '{{}}', a.id, 0,
                    v.downloads, v.deleted_at
             FROM packages p, accounts a,
                  (SELECT '1.0.0' AS version, 1 AS major, 3 AS downloads, CAST(NULL AS BIGINT) AS deleted_at
                   UNION ALL SELECT '2.0.0', 2, 4, CAST(NULL AS BIGINT)
                   UNION ALL SELECT '3.0.0', 3, 100, 1) v
             WHERE p.kind = 'tool' AND p.normalized_name = 'beta' AND a.username = 'alice'"
        ),
    )
    .await;
    let generation = db.registry_generation().await.unwrap();
    // The live versions' total is 7 (the deleted version's 100 aside).
    for wrong in [6, 107] {
        assert_eq!(
            db.store_answers(generation, &[record("beta", "wrong", wrong)])
                .await
                .unwrap(),
            0,
            "a record showing {wrong} downloads"
        );
    }
    assert_eq!(
        db.store_answers(
            generation,
            &[document("beta", "b5"), record("beta", "rb5", 7)]
        )
        .await
        .unwrap(),
        2
    );
    assert_eq!(
        stored_as(db, "beta", Answer::Package).await.as_deref(),
        Some("rb5")
    );

    // The flush deletes the record in its transaction and names the
    // package; the index entry, which shows no counts, stays.
    let first = version_id(db, "1.0.0").await;
    let counted = db
        .record_downloads(&[(first, 2)], "2026-11-30")
        .await
        .unwrap();
    assert_eq!(
        counted
            .iter()
            .map(|p| (p.kind, p.name.as_str()))
            .collect::<Vec<_>>(),
        [(Kind::Tool, "beta")]
    );
    assert_eq!(stored_as(db, "beta", Answer::Package).await, None);
    assert_eq!(stored(db, "beta").await.as_deref(), Some("b5"));
    // A rendering read before the flush is refused, one after it stored.
    assert_eq!(
        db.store_answers(generation, &[record("beta", "rb6", 7)])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        db.store_answers(generation, &[record("beta", "rb7", 9)])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        stored_as(db, "beta", Answer::Package).await.as_deref(),
        Some("rb7")
    );
}

/// The id of tool beta's `version`.
async fn version_id(db: &Db, version: &str) -> i64 {
    let sql = "SELECT v.id FROM versions v JOIN packages p ON p.id = v.package_id
               WHERE p.normalized_name = 'beta' AND p.kind = 'tool' AND v.version = $1";
    match db {
        Db::Sqlite { pool, .. } => sqlx::query_scalar(sql).bind(version).fetch_one(pool).await,
        Db::Postgres(pools) => {
            sqlx::query_scalar(sql)
                .bind(version)
                .fetch_one(pools.current())
                .await
        }
    }
    .unwrap()
}

#[tokio::test]
async fn sqlite_answers_follow_changes() {
    let dir = tempfile::tempdir().unwrap();
    let url = DatabaseUrl::SqlitePath(dir.path().join("registry.db"));
    let db = Db::connect(&url, Duration::from_secs(10), 1).await.unwrap();
    answers_follow_changes(&db).await;
    db.close().await;
}

#[tokio::test]
async fn postgres_answers_follow_changes() {
    let Some(admin_url) = common::postgres_admin_url() else {
        return;
    };
    let name = format!("documents_{}", uuid::Uuid::new_v4().simple());
    let url = common::fresh_postgres_database(&admin_url, &name).await;
    let db = Db::connect(
        &DatabaseUrl::Postgres(url.clone()),
        Duration::from_secs(10),
        1,
    )
    .await
    .unwrap();
    answers_follow_changes(&db).await;

    // A writer whose transaction was open while a rendering was stored
    // journals its change at its commit (the deferred bump), and that
    // deletes the document stored meanwhile.
    execute(&db, "DELETE FROM stored_answers").await;
    let mut writer = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut tx = writer.begin().await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(deprecate("beta", 9)))
        .execute(&mut *tx)
        .await
        .unwrap();
    let generation = db.registry_generation().await.unwrap();
    assert_eq!(
        db.store_answers(generation, &[document("beta", "before the commit")])
            .await
            .unwrap(),
        1
    );
    tx.commit().await.unwrap();
    assert_eq!(stored(&db, "beta").await, None);

    // A flush in flight (its lock taken, a count added, not committed)
    // while a record is stored: the store waits for its commit, then sees
    // the new total and refuses the record it had rendered before.
    let generation = db.registry_generation().await.unwrap();
    let first = version_id(&db, "1.0.0").await;
    let mut tx = writer.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(0x6167_6c6f_6703_i64)
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("UPDATE versions SET downloads = downloads + 1 WHERE id = $1")
        .bind(first)
        .execute(&mut *tx)
        .await
        .unwrap();
    let store = {
        let db = db.clone();
        tokio::spawn(async move {
            db.store_answers(generation, &[record("beta", "before the flush", 9)])
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!store.is_finished(), "the store waits for the flush's lock");
    tx.commit().await.unwrap();
    assert_eq!(store.await.unwrap(), 0);
    assert_eq!(stored_as(&db, "beta", Answer::Package).await, None);
    drop(writer);

    db.close().await;
    common::drop_postgres_database(&admin_url, &name).await;
}
