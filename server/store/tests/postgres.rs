//! What the PostgreSQL side promises for reads of a large catalog, which
//! only its own planner and storage can show: the public reads are planned
//! once per connection, a search's version heads and an index entry's
//! versions come from an index alone, and a package's row is updated in place.
//!
//! Needs `AGENTLANG_TEST_POSTGRES_URL`; without it the test prints a skip
//! line and passes, except under `CI=true`.

mod common;

use std::{collections::BTreeMap, time::Duration};

use agentlang_core::{Kind, PackageName, Version};
use agentlang_registry_store::{DatabaseUrl, Db, PgPools};
use sqlx::{Connection, Executor};

/// A migrated database of its own, with its URL; dropped by `finish`.
async fn fresh(admin_url: &str, prefix: &str) -> (Db, String, String) {
    let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
    let url = common::fresh_postgres_database(admin_url, &name).await;
    let db = Db::connect(
        &DatabaseUrl::Postgres(url.clone()),
        Duration::from_secs(10),
        1,
    )
    .await
    .unwrap();
    (db, url, name)
}

async fn finish(db: Db, admin_url: &str, name: &str) {
    db.close().await;
    common::drop_postgres_database(admin_url, name).await;
}

const RUNS: i64 = 8;

/// Every public read the planned pool serves, once.
async fn read_once(db: &Db) {
    let name = PackageName::new("weather-tool").unwrap();
    let version = Version::parse("1.0.0").unwrap();
    db.search_page("weather tool1", None, 20, 0).await.unwrap();
    db.search_page("weather tool1", Some(Kind::Tool), 20, 0)
        .await
        .unwrap();
    db.find_package(Kind::Tool, &name).await.unwrap();
    db.version_detail(Kind::Tool, &name, &version)
        .await
        .unwrap();
    db.version_details(1).await.unwrap();
    db.package_index(Kind::Tool, &name).await.unwrap();
    db.packages_by_ids(&[1, 2]).await.unwrap();
    db.version_heads(&[1, 2]).await.unwrap();
    db.version_facts(&[1, 2]).await.unwrap();
}

/// Each statement prepared on the planned pool's connections, with its
/// generic and custom plans summed over them: the pool hands a read
/// whichever connection is idle. The reads' kept connections are given
/// back first, so that every connection is counted.
async fn prepared_statements(pools: &PgPools) -> BTreeMap<String, (i64, i64)> {
    pools.kept().give_back();
    let pool = pools.planned();
    // Given back, a connection is idle once the pool has pinged it.
    tokio::time::timeout(Duration::from_secs(5), async {
        while pool.num_idle() < pool.size() as usize {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the kept connections are idle again");
    let mut connections = Vec::new();
    for _ in 0..pool.size() {
        connections.push(pool.acquire().await.unwrap());
    }
    let mut plans: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for connection in &mut connections {
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
             WHERE statement NOT LIKE '%pg_prepared_statements%'",
        )
        .fetch_all(&mut **connection)
        .await
        .unwrap();
        for (statement, generic, custom) in rows {
            let sum = plans.entry(statement).or_default();
            sum.0 += generic;
            sum.1 += custom;
        }
    }
    plans
}

#[tokio::test]
async fn public_reads_are_planned_once_per_connection() {
    let Some(admin_url) = common::postgres_admin_url() else {
        return;
    };
    let (db, _, name) = fresh(&admin_url, "plans").await;
    for _ in 0..RUNS {
        read_once(&db).await;
    }
    let Db::Postgres(pools) = &db else {
        unreachable!("a PostgreSQL database")
    };
    let plans = prepared_statements(pools).await;
    finish(db, &admin_url, &name).await;

    // The search page (its count is not needed: no match), the package,
    // the version, its package's versions, the index, and the three id
    // lists.
    assert_eq!(plans.len(), 8, "{plans:#?}");
    for (statement, (generic, custom)) in &plans {
        assert_eq!(
            (*custom, *generic > 0),
            (0, true),
            "planned {custom} times for its values, {generic} generic runs: {statement}"
        );
    }
}

/// The plan of `statement` (with `$1` an array of ids) when the planner
/// may only use an index, on a connection of its own.
async fn index_plan(url: &str, statement: &str) -> String {
    let mut connection = sqlx::PgConnection::connect(url).await.unwrap();
    connection
        .execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
        .await
        .unwrap();
    connection
        .execute(sqlx::AssertSqlSafe(format!("PREPARE read AS {statement}")))
        .await
        .unwrap();
    let lines: Vec<String> = sqlx::query_scalar("EXPLAIN EXECUTE read('{1, 2}')")
        .fetch_all(&mut connection)
        .await
        .unwrap();
    lines.join("\n")
}

/// The [`index_plan`] of the statement the store prepared whose text
/// holds `marker`: the statement as the store sent it.
async fn prepared_plan(db: &Db, url: &str, marker: &str) -> String {
    let Db::Postgres(pools) = db else {
        unreachable!("a PostgreSQL database")
    };
    let prepared = prepared_statements(pools).await;
    let statement = prepared
        .keys()
        .find(|statement| statement.contains(marker))
        .unwrap_or_else(|| panic!("no statement with {marker} was read: {prepared:#?}"));
    index_plan(url, statement).await
}

#[tokio::test]
async fn search_heads_read_the_index_alone() {
    let Some(admin_url) = common::postgres_admin_url() else {
        return;
    };
    let (db, url, name) = fresh(&admin_url, "heads").await;
    // As a search's pages do, several times.
    for _ in 0..RUNS {
        db.version_heads(&[1, 2]).await.unwrap();
    }
    let plan = prepared_plan(&db, &url, "FROM versions").await;
    finish(db, &admin_url, &name).await;
    assert!(
        plan.contains("Index Only Scan using versions_index_entries"),
        "versions_index_entries does not cover the heads:\n{plan}"
    );
}

/// An index entry's versions, with their tool dependencies (migration
/// 0049), come from `versions_index_entries` alone: no heap row and no
/// `dependencies` scan per version. Fails when the entry reads a column
/// the index does not hold.
#[tokio::test]
async fn an_index_entry_reads_the_index_alone() {
    let Some(admin_url) = common::postgres_admin_url() else {
        return;
    };
    let (db, url, name) = fresh(&admin_url, "entries").await;
    let package = PackageName::new("weather-tool").unwrap();
    for _ in 0..RUNS {
        db.package_index(Kind::Tool, &package).await.unwrap();
    }
    let plan = prepared_plan(&db, &url, "tool_dependencies").await;
    finish(db, &admin_url, &name).await;
    assert!(
        plan.contains("Index Only Scan using versions_index_entries"),
        "versions_index_entries does not cover the entry:\n{plan}"
    );
    assert!(!plan.contains("dependencies"), "{plan}");
}

#[tokio::test]
async fn a_packages_row_is_updated_in_place_and_searches_read_no_pending_list() {
    let Some(admin_url) = common::postgres_admin_url() else {
        return;
    };
    let (db, url, name) = fresh(&admin_url, "hot").await;
    let mut connection = sqlx::PgConnection::connect(&url).await.unwrap();
    // Enough packages to fill the first page, were it packed full.
    connection
        .execute(
            "INSERT INTO packages (kind, name, normalized_name, description, keywords,
                                   created_at, updated_at)
             SELECT 'tool', 'tool' || n, 'tool' || n, 'a tool for the weather',
                    'weather forecast', 0, 0
             FROM generate_series(1, 200) AS n",
        )
        .await
        .unwrap();
    // As a publish does: the description, keywords and time, of five
    // packages on the first page.
    let mut tx = connection.begin().await.unwrap();
    for n in 1..=5 {
        sqlx::query(
            "UPDATE packages SET description = 'a tool for the weather',
                                 keywords = 'weather forecast', updated_at = 1
             WHERE normalized_name = $1",
        )
        .bind(format!("tool{n}"))
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    let (updated, in_place): (i64, i64) = sqlx::query_as(
        "SELECT pg_stat_get_xact_tuples_updated('packages'::regclass),
                pg_stat_get_xact_tuples_hot_updated('packages'::regclass)",
    )
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    let options: Vec<String> = sqlx::query_scalar(
        "SELECT unnest(reloptions) FROM pg_class WHERE relname = 'packages_search'",
    )
    .fetch_all(&mut connection)
    .await
    .unwrap();
    drop(connection);
    finish(db, &admin_url, &name).await;
    assert_eq!((updated, in_place), (5, 5));
    assert!(options.iter().any(|o| o == "fastupdate=off"), "{options:?}");
}
