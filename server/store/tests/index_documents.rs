//! Stored index entries (migration 0050) are never stale, on either
//! backend: a journalled change of the package deletes its document in the
//! change's transaction, and a rendering is stored only when nothing it
//! shows changed after the generation it was read at.
//!
//! The PostgreSQL half needs `AGENTLANG_TEST_POSTGRES_URL`; without it,
//! it prints a skip line and passes, except under `CI=true`.

mod common;

use std::time::Duration;

use agentlang_core::Kind;
use agentlang_registry_store::{
    DatabaseUrl, Db, changes::MAX_SPAN, index_documents::NewIndexDocument,
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

fn document(name: &str, body: &str) -> NewIndexDocument {
    NewIndexDocument {
        kind: Kind::Tool,
        normalized_name: name.to_owned(),
        body: body.to_owned(),
        etag: format!("\"{body}\""),
    }
}

async fn stored(db: &Db, name: &str) -> Option<String> {
    db.index_document(Kind::Tool, name)
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
async fn documents_follow_changes(db: &Db) {
    execute(
        db,
        "INSERT INTO packages (kind, name, normalized_name, description, keywords, created_at, updated_at)
         VALUES ('tool', 'alpha', 'alpha', '', '', 0, 0), ('tool', 'beta', 'beta', '', '', 0, 0),
                ('agent', 'alpha', 'alpha', '', '', 0, 0)",
    )
    .await;
    let g0 = db.registry_generation().await.unwrap();
    assert_eq!(
        db.store_index_documents(g0, &[document("alpha", "a0"), document("beta", "b0")])
            .await
            .unwrap(),
        2
    );
    assert_eq!(stored(db, "alpha").await.as_deref(), Some("a0"));
    let read = db
        .index_document(Kind::Tool, "beta")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((read.body.as_str(), read.etag.as_str()), ("b0", "\"b0\""));
    // Another kind of the same name has none.
    assert_eq!(db.index_document(Kind::Agent, "alpha").await.unwrap(), None);
    let undocumented = db.undocumented_packages(0, 10).await.unwrap();
    assert_eq!(undocumented.len(), 1);
    assert_eq!(
        (undocumented[0].kind, undocumented[0].name.as_str()),
        (Kind::Agent, "alpha")
    );

    // A change of alpha deletes its document, in its transaction, and
    // leaves beta's.
    execute(db, &deprecate("alpha", 1)).await;
    let g1 = db.registry_generation().await.unwrap();
    assert!(g1 > g0);
    assert_eq!(stored(db, "alpha").await, None);
    assert_eq!(stored(db, "beta").await.as_deref(), Some("b0"));
    // A rendering read before that change is refused; one read after it
    // is stored; an existing document is kept, not replaced.
    assert_eq!(
        db.store_index_documents(g0, &[document("alpha", "stale")])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        db.store_index_documents(g0, &[document("beta", "b1"), document("alpha", "a1")])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        db.store_index_documents(g1, &[document("alpha", "a1")])
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
        db.store_index_documents(g1, &[document("alpha", "a2")])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        db.store_index_documents(g3, &[document("alpha", "a3")])
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
        "DELETE FROM index_documents WHERE normalized_name = 'alpha'",
    )
    .await;
    assert_eq!(
        db.store_index_documents(g3, &[document("alpha", "a4")])
            .await
            .unwrap(),
        0
    );
    let g4 = db.registry_generation().await.unwrap();
    assert_eq!(
        db.store_index_documents(g4 - MAX_SPAN, &[document("alpha", "a4")])
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
    assert_eq!(db.undocumented_packages(0, 10).await.unwrap().len(), 3);
}

#[tokio::test]
async fn sqlite_documents_follow_changes() {
    let dir = tempfile::tempdir().unwrap();
    let url = DatabaseUrl::SqlitePath(dir.path().join("registry.db"));
    let db = Db::connect(&url, Duration::from_secs(10), 1).await.unwrap();
    documents_follow_changes(&db).await;
    db.close().await;
}

#[tokio::test]
async fn postgres_documents_follow_changes() {
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
    documents_follow_changes(&db).await;

    // A writer whose transaction was open while a rendering was stored
    // journals its change at its commit (the deferred bump), and that
    // deletes the document stored meanwhile.
    let mut writer = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut tx = writer.begin().await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(deprecate("beta", 9)))
        .execute(&mut *tx)
        .await
        .unwrap();
    let generation = db.registry_generation().await.unwrap();
    assert_eq!(
        db.store_index_documents(generation, &[document("beta", "before the commit")])
            .await
            .unwrap(),
        1
    );
    tx.commit().await.unwrap();
    assert_eq!(stored(&db, "beta").await, None);
    drop(writer);

    db.close().await;
    common::drop_postgres_database(&admin_url, &name).await;
}
