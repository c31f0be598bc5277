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

/// Migration 0049 stores each version's tool dependencies beside it: a
/// database published to before it must read the same dependencies after,
/// from the new column, in its index entries and version records; agent
/// dependencies stay out of the tool object.
#[tokio::test]
async fn versions_published_before_0049_keep_their_tool_dependencies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("before.db");
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let mut before = sqlx::migrate!("migrations/sqlite");
    before.migrations = before
        .migrations
        .iter()
        .filter(|migration| migration.version < 49)
        .cloned()
        .collect::<Vec<_>>()
        .into();
    before.run(&pool).await.unwrap();
    let digest = "ab".repeat(32);
    for statement in [
        "INSERT INTO accounts (id, username, normalized_username, password_hash, created_at)
         VALUES (1, 'alice', 'alice', 'x', 0)",
        "INSERT INTO packages (id, kind, name, normalized_name, created_at, updated_at)
         VALUES (1, 'tool', 'Weather-Tool', 'weather_tool', 0, 0)",
        "INSERT INTO versions (id, package_id, version, major, minor, patch, sha256, size,
                               manifest, spec, published_by, published_at)
         VALUES (1, 1, '1.0.0', 1, 0, 0, $1, 1, '{}', '{}', 1, 0),
                (2, 1, '2.0.0', 2, 0, 0, $1, 1, '{}', '{}', 1, 0)",
        "INSERT INTO dependencies (version_id, kind, name, normalized_name, requirement)
         VALUES (2, 'tool', 'Geo-Coder', 'geo_coder', '^1.2'),
                (2, 'tool', 'units', 'units', '>=0.3, <2'),
                (2, 'agent', 'helper', 'helper', '^1')",
    ] {
        let query = sqlx::query(statement);
        let query = if statement.contains("$1") {
            query.bind(&digest)
        } else {
            query
        };
        query.execute(&pool).await.unwrap();
    }
    pool.close().await;

    let db = Db::connect(&DatabaseUrl::SqlitePath(path), TIMEOUT, 1)
        .await
        .unwrap();
    let name = agentlang_core::PackageName::new("weather-tool").unwrap();
    let entry = db
        .package_index(agentlang_core::Kind::Tool, &name)
        .await
        .unwrap()
        .expect("the package is indexed");
    let mut dependencies: Vec<(String, BTreeMap<String, String>)> = entry
        .versions
        .iter()
        .map(|v| (v.version.to_string(), v.dependencies.clone()))
        .collect();
    dependencies.sort();
    let written = BTreeMap::from([
        ("Geo-Coder".to_owned(), "^1.2".to_owned()),
        ("units".to_owned(), ">=0.3, <2".to_owned()),
    ]);
    assert_eq!(
        dependencies,
        [
            ("1.0.0".to_owned(), BTreeMap::new()),
            ("2.0.0".to_owned(), written.clone())
        ]
    );
    let version = agentlang_core::Version::parse("2.0.0").unwrap();
    let record = db
        .version_detail(agentlang_core::Kind::Tool, &name, &version)
        .await
        .unwrap()
        .expect("the version is found");
    let recorded: BTreeMap<String, String> =
        serde_json::from_str(&record.version.dependencies).unwrap();
    assert_eq!(recorded, written);
    db.close().await;
}
