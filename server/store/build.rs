// `sqlx::migrate!` embeds the migration folders at compile time; a new
// migration file must rebuild the crate (sqlx's documented build script).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
