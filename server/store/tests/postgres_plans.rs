//! The public reads run on PostgreSQL connections that plan each prepared
//! statement once (`PgPools::planned`): under the default `auto` mode a
//! search or an id list was planned anew on every run, which cost more than
//! running it.
//!
//! Needs `AGENTLANG_TEST_POSTGRES_URL`; without it the test prints a skip
//! line and passes, except under `CI=true`.

mod common;

use std::{collections::BTreeMap, time::Duration};

use agentlang_core::{Kind, PackageName, Version};
use agentlang_registry_store::{DatabaseUrl, Db};

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

#[tokio::test]
async fn public_reads_are_planned_once_per_connection() {
    let Some(admin_url) = common::postgres_admin_url() else {
        return;
    };
    let name = format!("plans_{}", uuid::Uuid::new_v4().simple());
    let url = common::fresh_postgres_database(&admin_url, &name).await;
    let db = Db::connect(&DatabaseUrl::Postgres(url), Duration::from_secs(10), 1)
        .await
        .unwrap();
    for _ in 0..RUNS {
        read_once(&db).await;
    }
    let Db::Postgres(pools) = &db else {
        unreachable!("a PostgreSQL database")
    };
    // Each connection's prepared statements, summed by statement: the
    // pool hands a read whichever connection is idle.
    let pool = pools.planned();
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
    drop(connections);
    db.close().await;
    common::drop_postgres_database(&admin_url, &name).await;

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
