//! Rebuilds berth-db when a migration changes: `sqlx::migrate!` embeds `migrations/` at
//! compile time, and Cargo does not know to re-run it otherwise (sqlx's documented build
//! script).

fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
