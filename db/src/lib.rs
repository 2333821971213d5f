//! All of Berth's SQL. One module per table, free functions named resource first
//! (`job_insert_in_tx`, `node_heartbeat`). A function that takes `impl PgExecutor<'_>`
//! runs on a pool or a transaction; one named `_in_tx` must run inside a transaction and
//! takes `&mut PgConnection`.
//!
//! Queries are checked at compile time (`sqlx::query!`); the offline data lives in the
//! workspace's `.sqlx/`.

pub mod account;
pub mod accounting;
pub mod allocation;
pub mod api_token;
pub mod audit;
pub mod cloud;
pub mod cloud_scaling;
pub mod error;
pub mod event;
pub mod gpu_stats;
pub mod idempotency;
pub mod job;
pub mod job_keepalive;
pub mod job_priority;
pub mod lease;
pub mod membership;
pub mod metrics;
pub mod node;
pub mod node_credential;
pub mod node_report;
pub mod notify;
pub mod output;
pub mod partition;
pub mod pooler;
pub mod preemption;
pub mod qos;
pub mod reservation;
pub mod signal;
pub mod snapshot;
pub mod step;
pub mod usage;
pub mod usage_rollup;
pub mod user;
pub mod webhook;

pub use error::DbError;
pub use pooler::{connect_pools, Pooler, Pooling, Pools};

/// The schema migrations (`migrations/` at the workspace root), applied by the api and
/// the scheduler at start-up and by `#[sqlx::test]`.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// A pool of connections to Berth's database.
pub type Pool = sqlx::PgPool;

/// A transaction on a pooled connection (from [`begin`]).
pub type Tx = sqlx::Transaction<'static, sqlx::Postgres>;

/// How long a session of ours may sit idle inside a transaction before PostgreSQL ends
/// it (`idle_in_transaction_session_timeout`, milliseconds; the default of
/// [`Timeouts::idle_in_transaction`]). Every Berth transaction runs its
/// statements back to back; a transaction left open is one whose task was cancelled
/// mid-way (an HTTP client that went away), and its row locks must not outlive that.
pub const IDLE_IN_TRANSACTION_TIMEOUT_MS: u32 = 5_000;

/// The timeouts of Berth's sessions with PostgreSQL (the `[database]` section of the
/// server's configuration file): session settings sent when a connection opens; zero
/// turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// The longest one statement may run (`statement_timeout`, default 30 s); a statement
    /// that runs longer fails with SQLSTATE 57014 (the api answers 503).
    pub statement: std::time::Duration,
    /// The longest one statement may wait for a lock (`lock_timeout`, default 10 s); a
    /// statement that waits longer fails with SQLSTATE 55P03 (503 at the api). A
    /// transaction may lower it for itself ([`lock_timeout_in_tx`]).
    pub lock: std::time::Duration,
    /// How long a session may sit idle inside a transaction before PostgreSQL ends it
    /// (`idle_in_transaction_session_timeout`, default
    /// [`IDLE_IN_TRANSACTION_TIMEOUT_MS`]).
    pub idle_in_transaction: std::time::Duration,
}

impl Default for Timeouts {
    /// Statement 30 s, lock 10 s, idle in transaction 5 s.
    fn default() -> Self {
        Timeouts {
            statement: std::time::Duration::from_secs(30),
            lock: std::time::Duration::from_secs(10),
            idle_in_transaction: std::time::Duration::from_millis(u64::from(
                IDLE_IN_TRANSACTION_TIMEOUT_MS,
            )),
        }
    }
}

impl Timeouts {
    /// The session settings (name, milliseconds).
    fn session_options(&self) -> [(&'static str, String); 3] {
        let ms = |d: std::time::Duration| d.as_millis().min(i32::MAX as u128).to_string();
        [
            ("statement_timeout", ms(self.statement)),
            ("lock_timeout", ms(self.lock)),
            (
                "idle_in_transaction_session_timeout",
                ms(self.idle_in_transaction),
            ),
        ]
    }
}

/// How long a task waits for a free connection of the pool before
/// [`DbError::Unavailable`].
pub const ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Opens a pool of at most `max_connections` connections to `url`, with the default
/// [`Timeouts`].
///
/// # Errors
/// [`DbError::Sqlx`] when the URL is malformed or the server cannot be reached.
pub async fn connect(url: &str, max_connections: u32) -> Result<Pool, DbError> {
    connect_with(url, max_connections, &Timeouts::default()).await
}

/// Opens a pool of at most `max_connections` connections to `url`, each session with
/// `timeouts`. A connection returned to the pool inside a transaction (which nothing of
/// Berth leaves open on purpose: see [`begin`]) is closed rather than lent again, so its
/// transaction ends with its session instead of capturing the next borrower's work.
///
/// # Errors
/// [`DbError::Sqlx`] when the URL is malformed, [`DbError::Unavailable`] when the server
/// cannot be reached.
pub async fn connect_with(
    url: &str,
    max_connections: u32,
    timeouts: &Timeouts,
) -> Result<Pool, DbError> {
    let options: sqlx::postgres::PgConnectOptions = url.parse()?;
    let options = options.options(timeouts.session_options());
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .after_release(|conn, _| Box::pin(outside_transaction(conn)))
        .connect_with(options)
        .await
        .map_err(DbError::from)
}

/// Whether a connection coming back to the pool is outside any transaction, as sqlx
/// counts them (no query: the pool already pings the connection on its way back, which
/// also runs a rollback queued by a dropped transaction). A transaction sqlx does not
/// count is one whose `BEGIN` was cancelled in flight, which [`begin`] rules out by
/// running every `BEGIN` in a task of its own (sqlx's `Pool::begin` is refused by
/// clippy's `disallowed-methods`).
async fn outside_transaction(conn: &mut sqlx::PgConnection) -> Result<bool, sqlx::Error> {
    use sqlx::Connection;
    let outside = !conn.is_in_transaction();
    if !outside {
        tracing::warn!("a connection came back to the pool inside a transaction; closing it");
    }
    Ok(outside)
}

/// Starts a transaction on a connection from `pool`, safely against cancellation: the
/// `BEGIN` runs in a task of its own, so a caller dropped while it is in flight (an HTTP
/// client that went away) cannot return the connection to the pool inside a transaction
/// (sqlx 0.8's `Pool::begin` can: sqlx issues #4385, #4393). The transaction then rolls
/// back as any dropped [`Tx`] does. Use this instead of `Pool::begin` everywhere.
///
/// # Errors
/// [`DbError::Unavailable`] when no connection can be had, [`DbError`] from the driver.
pub async fn begin(pool: &Pool) -> Result<Tx, DbError> {
    let pool = pool.clone();
    #[allow(clippy::disallowed_methods)]
    let task = tokio::spawn(async move { pool.begin().await });
    match task.await {
        Ok(result) => Ok(result?),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // The runtime is shutting down.
        Err(_) => Err(DbError::Unavailable(sqlx::Error::PoolClosed)),
    }
}

/// A read-only transaction whose reads all see one snapshot (`REPEATABLE READ, READ
/// ONLY`), for a view assembled from several queries that must agree with each other
/// (a pool's row, nodes and events written by one transaction of the scheduler's).
///
/// # Errors
/// As [`begin`].
pub async fn begin_snapshot(pool: &Pool) -> Result<Tx, DbError> {
    let mut tx = begin(pool).await?;
    // Before any query takes the snapshot.
    sqlx::Executor::execute(
        &mut *tx,
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY",
    )
    .await?;
    Ok(tx)
}

/// Runs the migrations on one connection with the statement and lock timeouts off: a
/// migration may rewrite a large table, and a process starting beside another waits for
/// its migrations (an advisory lock) as long as they take.
///
/// # Errors
/// [`sqlx::migrate::MigrateError`] from the migrator or the driver.
pub async fn migrate(pool: &Pool) -> Result<(), sqlx::migrate::MigrateError> {
    // The pool's own options, with the two timeouts off (a later `-c` wins).
    let options = (*pool.connect_options())
        .clone()
        .options([("statement_timeout", "0"), ("lock_timeout", "0")]);
    let one = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(options)
        .await?;
    let result = MIGRATOR.run(&one).await;
    one.close().await;
    result
}

/// Makes the current transaction wait at most `ms` milliseconds for any lock (`SET LOCAL
/// lock_timeout`); a statement that would wait longer fails with [`DbError::TimedOut`]
/// and the transaction must be rolled back.
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
