//! The two dialects' migrations hold one schema: the same tables and
//! columns once migrated (but for what full-text search is made of in
//! each), and one change per migration number in both folders.
//!
//! The PostgreSQL side needs `AGENTLANG_TEST_POSTGRES_URL`; without it the
//! comparison prints a skip line and passes, except under `CI=true`.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
    time::Duration,
};

mod common;

use agentlang_registry_store::{DatabaseUrl, Db};

/// Table to its columns.
type Schema = BTreeMap<String, BTreeSet<String>>;

const TIMEOUT: Duration = Duration::from_secs(10);

/// What each dialect has that the other does not, by design: SQLite's FTS5
/// table (with its shadow tables) and PostgreSQL's tsvector column are the
/// two halves of one full-text index (`dialect.rs`).
const SQLITE_ONLY_TABLES: &[&str] = &[
    "packages_fts",
    "packages_fts_config",
    "packages_fts_data",
    "packages_fts_docsize",
    "packages_fts_idx",
    "sqlite_sequence",
];
const POSTGRES_ONLY_COLUMNS: &[(&str, &str)] = &[("packages", "search_document")];

async fn sqlite_schema(db: &Db) -> Schema {
    let Db::Sqlite { pool, .. } = db else {
        unreachable!("a SQLite database")
    };
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_sqlx%' ESCAPE '\\'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut schema = Schema::new();
    for table in tables {
        if SQLITE_ONLY_TABLES.contains(&table.as_str()) {
            continue;
        }
        let columns: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info($1)")
            .bind(&table)
            .fetch_all(pool)
            .await
            .unwrap();
        schema.insert(table, columns.into_iter().collect());
    }
    schema
}

async fn postgres_schema(db: &Db) -> Schema {
    let Db::Postgres(pools) = db else {
        unreachable!("a PostgreSQL database")
    };
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name NOT LIKE '\\_sqlx%'",
    )
    .fetch_all(pools.current())
    .await
    .unwrap();
    let mut schema = Schema::new();
    for (table, column) in rows {
        if POSTGRES_ONLY_COLUMNS.contains(&(table.as_str(), column.as_str())) {
            continue;
        }
        schema.entry(table).or_default().insert(column);
    }
    schema
}

#[tokio::test]
async fn both_dialects_migrate_to_the_same_tables_and_columns() {
    let Some(admin_url) = common::postgres_admin_url() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Db::connect(
        &DatabaseUrl::SqlitePath(dir.path().join("schema.db")),
        TIMEOUT,
        1,
    )
    .await
    .unwrap();
    let name = format!("schema_{}", uuid::Uuid::new_v4().simple());
    let url = common::fresh_postgres_database(&admin_url, &name).await;
    let postgres = Db::connect(&DatabaseUrl::Postgres(url), TIMEOUT, 1).await;
    let (sqlite_schema, postgres_schema) = match &postgres {
        Ok(postgres) => (
            sqlite_schema(&sqlite).await,
            postgres_schema(postgres).await,
        ),
        Err(e) => {
            common::drop_postgres_database(&admin_url, &name).await;
            panic!("migrating PostgreSQL failed: {e}");
        }
    };
    if let Ok(postgres) = postgres {
        postgres.close().await;
    }
    common::drop_postgres_database(&admin_url, &name).await;

    let mut differences = Vec::new();
    let tables: BTreeSet<&String> = sqlite_schema.keys().chain(postgres_schema.keys()).collect();
    for table in tables {
        let empty = BTreeSet::new();
        let in_sqlite = sqlite_schema.get(table).unwrap_or(&empty);
        let in_postgres = postgres_schema.get(table).unwrap_or(&empty);
        for column in in_sqlite.difference(in_postgres) {
            differences.push(format!("{table}.{column}: only in SQLite"));
        }
        for column in in_postgres.difference(in_sqlite) {
            differences.push(format!("{table}.{column}: only in PostgreSQL"));
        }
    }
    assert!(
        differences.is_empty(),
        "the schemas differ:\n{}",
        differences.join("\n")
    );
    assert!(sqlite_schema.len() > 10, "{sqlite_schema:?}");
}

/// `NNNN_description.sql` of a folder, by number.
fn migrations(folder: &str) -> BTreeMap<u32, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(folder);
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let (number, rest) = name.split_once('_').expect("NNNN_description.sql");
            (
                number.parse().expect("a migration number"),
                rest.trim_end_matches(".sql").to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_number_means_one_change_in_both_folders() {
    let sqlite = migrations("sqlite");
    let postgres = migrations("postgres");
    let clashes: Vec<String> = sqlite
        .iter()
        .filter_map(|(number, change)| {
            let other = postgres.get(number)?;
            (other != change)
                .then(|| format!("{number:04}: {change} (SQLite) vs {other} (PostgreSQL)"))
        })
        .collect();
    assert!(clashes.is_empty(), "{}", clashes.join("\n"));
    // The numbers the two folders share are the schema's common history.
    assert!(sqlite.keys().filter(|n| postgres.contains_key(n)).count() >= 10);
}

#[tokio::test]
async fn a_database_migrated_before_a_renumbering_keeps_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let url = DatabaseUrl::SqlitePath(dir.path().join("old.db"));
    let db = Db::connect(&url, TIMEOUT, 1).await.unwrap();
    let Db::Sqlite { pool, .. } = &db else {
        unreachable!("a SQLite database")
    };
    // As a database migrated before 0024 was renumbered 0028 records it.
    sqlx::query("UPDATE _sqlx_migrations SET version = 24 WHERE version = 28")
        .execute(pool)
        .await
        .unwrap();
    db.close().await;
    let db = Db::connect(&url, TIMEOUT, 1)
        .await
        .expect("the renumbered migration is recognised, not re-run or missing");
    let Db::Sqlite { pool, .. } = &db else {
        unreachable!("a SQLite database")
    };
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE version IN (24, 28)")
            .fetch_all(pool)
            .await
            .unwrap();
    assert_eq!(versions, [28]);
}
