//! The test harness: the one way a test starts a registry.
//!
//! ```text
//! let Some(app) = TestApp::builder(backend)      // SQLite + files, or PostgreSQL + S3
//!     .admins(&["root"])                          // settings, alike in both forms
//!     .user_with_key("alice", &["publish", "keys"])
//!     .build()                                    // None: the backend is skipped
//!     .await
//! else {
//!     return;
//! };
//! app.request(Method::GET, "/api/v1/account").bearer_auth(&app.user("alice").token)
//! ```
//!
//! By default the registry runs in the test's own (actix) runtime, with its
//! storage opened beside it for seeding and for looking behind the API's
//! back ([`TestApp::store`], [`seed`]); `.process()` runs the real binary
//! instead, for what only a process has: SIGKILL, memory, restarts,
//! replicas over shared backends, the command-line client against it. Every
//! setting reaches both forms the same way, as the environment the binary
//! reads. Each registry gets its own folder, a random JWT secret, and on
//! PostgreSQL + S3 its own database and key prefix ([`backends`]); a
//! backend that is not configured skips the test, except under `CI=true`.
//!
//! Used by every suite: the server's `api` (with the catalog and binary
//! tests), `browser`, `replicas` and `hostile`, the end-to-end crate, and
//! the benchmark tools (`examples/`). Not published.

pub mod app;
pub mod backends;
pub mod problem;
pub mod process;
pub mod proxy;
pub mod seed;

pub use app::{Store, TestApp};
pub use backends::Backend;
pub use problem::{expect_status, problem, rule_errors};

/// Generates one test per backend from an `async fn name(Backend)`, on the
/// given test attribute (`#[actix_web::test]`, which an in-process
/// registry needs, by default).
#[macro_export]
macro_rules! backend_tests {
    (#[$test:meta] $($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[$test]
                async fn sqlite() {
                    super::$name($crate::Backend::Sqlite).await;
                }
                #[$test]
                async fn postgres_s3() {
                    super::$name($crate::Backend::PostgresS3).await;
                }
            }
        )*
    };
    ($($name:ident),* $(,)?) => {
        $crate::backend_tests!(#[actix_web::test] $($name),*);
    };
}
