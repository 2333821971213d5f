//! All of Berth's SQL. One module per table, free functions named resource first
//! (`job_insert_in_tx`, `node_heartbeat`). A function that takes `impl PgExecutor<'_>`
//! runs on a pool or a transaction; one named `_in_tx` must run inside a transaction and
//! takes `&mut PgConnection`.
//!
//! Queries are checked at compile time (`sqlx::query!`); the offline data lives in the
//! workspace's `.sqlx/`.

pub mod account;
pub mod allocation;
pub mod api_token;
pub mod audit;
pub mod error;
pub mod gpu_stats;
pub mod idempotency;
pub mod job;
pub mod job_priority;
pub mod lease;
pub mod membership;
pub mod node;
pub mod node_credential;
pub mod node_report;
pub mod notify;
pub mod output;
pub mod partition;
pub mod preemption;
pub mod qos;
pub mod snapshot;
pub mod step;
pub mod usage;
pub mod user;

pub use error::DbError;

/// The schema migrations (`migrations/` at the workspace root), applied by the api and
/// the scheduler at start-up and by `#[sqlx::test]`.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// A pool of connections to Berth's database.
pub type Pool = sqlx::PgPool;

/// How long a session of ours may sit idle inside a transaction before PostgreSQL ends
/// it (`idle_in_transaction_session_timeout`, milliseconds). Every Berth transaction runs
/// its statements back to back; a transaction left open is one whose task was cancelled
/// mid-way (an HTTP client that went away), and its row locks must not outlive that.
pub const IDLE_IN_TRANSACTION_TIMEOUT_MS: u32 = 5_000;

/// Opens a pool of at most `max_connections` connections to `url`.
///
/// # Errors
/// [`DbError::Sqlx`] when the URL is malformed or the server cannot be reached.
pub async fn connect(url: &str, max_connections: u32) -> Result<Pool, DbError> {
    let options: sqlx::postgres::PgConnectOptions = url.parse()?;
    let options = options.options([(
        "idle_in_transaction_session_timeout",
        IDLE_IN_TRANSACTION_TIMEOUT_MS.to_string(),
    )]);
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(std::time::Duration::from_secs(5))
        .connect_with(options)
        .await
        .map_err(DbError::from)
}

/// Makes the current transaction wait at most `ms` milliseconds for any lock (`SET LOCAL
/// lock_timeout`); a statement that would wait longer fails with [`DbError::Sqlx`] and
/// the transaction must be rolled back.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn lock_timeout_in_tx(conn: &mut sqlx::PgConnection, ms: u32) -> Result<(), DbError> {
    sqlx::query(&format!("SET LOCAL lock_timeout = {ms}"))
        .execute(conn)
        .await?;
    Ok(())
}

/// Checks that the database answers a query (readiness).
///
/// # Errors
/// [`DbError`] from the driver (unreachable, pool exhausted …).
pub async fn ping(ex: impl sqlx::PgExecutor<'_>) -> Result<(), DbError> {
    sqlx::query("SELECT 1").execute(ex).await?;
    Ok(())
}
