//! What the store's integration tests share: a PostgreSQL database of
//! their own on the test server (`AGENTLANG_TEST_POSTGRES_URL`).

use std::str::FromStr;

use sqlx::{Connection, Executor};

/// The test server's admin URL; `None` (with a skip line) when it is not
/// set, which fails under `CI=true`.
pub fn postgres_admin_url() -> Option<String> {
    let url = std::env::var("AGENTLANG_TEST_POSTGRES_URL")
        .ok()
        .filter(|v| !v.is_empty());
    if url.is_none() {
        assert!(
            std::env::var("CI").is_err(),
            "AGENTLANG_TEST_POSTGRES_URL is required under CI"
        );
        eprintln!("skipped: AGENTLANG_TEST_POSTGRES_URL is not set");
    }
    url
}

/// A fresh database on the test server, dropped by the caller.
pub async fn fresh_postgres_database(admin_url: &str, name: &str) -> String {
    let mut admin = sqlx::PgConnection::connect(admin_url)
        .await
        .expect("connect to the test PostgreSQL");
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .expect("create a database");
    let options = sqlx::postgres::PgConnectOptions::from_str(admin_url).unwrap();
    let host = options.get_host();
    let port = options.get_port();
    let user = options.get_username();
    format!("postgres://{user}@{host}:{port}/{name}")
}

pub async fn drop_postgres_database(admin_url: &str, name: &str) {
    if let Ok(mut admin) = sqlx::PgConnection::connect(admin_url).await {
        let _ = admin
            .execute(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
            )))
            .await;
    }
}
