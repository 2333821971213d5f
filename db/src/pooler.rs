//! Reaching PostgreSQL through a pooler in transaction mode (PgBouncer's `pool_mode =
//! transaction`), where each transaction of a client may run on another server session.
//!
//! sqlx 0.8 runs every statement with arguments in two round trips, each ended by a
//! `Sync` (`Parse`/`Describe`, then `Bind`/`Execute`), under a *named* prepared statement
//! (`sqlx_s_N`, numbered per connection from 1) even with its statement cache off, and it
//! never closes one it did not cache. Outside a transaction block a pooler in
//! transaction mode may hand the second round trip to another server session (which
//! lacks the statement), and two clients' `sqlx_s_1` meet on one server session ("already
//! exists"). So in [`Pooler::Transaction`] mode each borrowing of a pooled connection is
//! one transaction block: the pool opens it when it lends the connection (`BEGIN`, with
//! the [`Timeouts`](crate::Timeouts) as `SET LOCAL`), a caller's own `BEGIN` joins it, and
//! the pool commits it when the connection comes back (rolls it back when it failed). The
//! pooler must drop the prepared statements when a server session is released
//! (PgBouncer: `server_reset_query = DEALLOCATE ALL`, `server_reset_query_always = 1`).
//! `LISTEN` and the migrator's session advisory lock need a session of their own: they go
//! to [`Pooling::direct_url`].

use crate::{DbError, Pool, Timeouts, ACQUIRE_TIMEOUT};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Executor, Row};

/// How the api's and the scheduler's pooled connections reach PostgreSQL (`[database]
/// pooler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pooler {
    /// Each connection is a session of its own: PostgreSQL itself, or a proxy that keeps
    /// a client on one server session (`"none"`, the default).
    #[default]
    None,
    /// A pooler in transaction mode (`"transaction"`): see the module's documentation.
    Transaction,
}

impl Pooler {
    /// The setting's values, as written in the configuration file.
    pub const VALUES: [&'static str; 2] = ["none", "transaction"];

    /// Parses a configuration value (`"none"`, `"transaction"`); `None` for anything else.
    pub fn parse(value: &str) -> Option<Pooler> {
        match value {
            "none" => Some(Pooler::None),
            "transaction" => Some(Pooler::Transaction),
            _ => None,
        }
    }
}

/// Where a process's connections go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pooling {
    /// How the pooled connections reach PostgreSQL.
    pub pooler: Pooler,
    /// The URL of sessions of their own (`LISTEN`, migrations): PostgreSQL itself, or a
    /// proxy or pooler in session mode in front of it. `None`: the pool's URL. Required
    /// with [`Pooler::Transaction`].
    pub direct_url: Option<String>,
}

/// A process's connections: the pool its work borrows from, and one that opens sessions
/// of their own (`LISTEN`: `sqlx::postgres::PgListener::connect_with(&direct)`;
/// migrations: [`crate::migrate`]`(&direct)`). The direct pool opens no connection by
/// itself.
#[derive(Debug, Clone)]
pub struct Pools {
    /// The pool of [`crate::connect_with`]'s kind.
    pub pool: Pool,
    /// Sessions of their own, with the [`Timeouts`] as startup options.
    pub direct: Pool,
}

/// Opens `url`'s pool of at most `max_connections` (as [`crate::connect_with`] does, or
/// for a pooler in transaction mode as this module describes) and the direct pool of
/// `pooling.direct_url`.
///
/// # Errors
/// [`DbError::Sqlx`] when a URL is malformed or [`Pooler::Transaction`] comes without a
/// direct URL; [`DbError::Unavailable`] when the server cannot be reached.
pub async fn connect_pools(
    url: &str,
    max_connections: u32,
    timeouts: &Timeouts,
    pooling: &Pooling,
) -> Result<Pools, DbError> {
    let direct_options = |url: &str| -> Result<PgConnectOptions, DbError> {
        let options: PgConnectOptions = url.parse()?;
        Ok(options.options(timeouts.session_options()))
    };
    let lazy = |options: PgConnectOptions| {
        PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_lazy_with(options)
    };
    match pooling.pooler {
        Pooler::None => {
            let pool = crate::connect_with(url, max_connections, timeouts).await?;
            let direct = match &pooling.direct_url {
                Some(direct) => lazy(direct_options(direct)?),
                None => pool.clone(),
            };
            Ok(Pools { pool, direct })
        }
        Pooler::Transaction => {
            let Some(direct) = &pooling.direct_url else {
                return Err(DbError::Sqlx(sqlx::Error::Configuration(
                    "a pooler in transaction mode needs a direct URL for LISTEN and migrations"
                        .into(),
                )));
            };
            let direct = lazy(direct_options(direct)?);
            let pool = connect_transaction_pooled(url, max_connections, timeouts).await?;
            Ok(Pools { pool, direct })
        }
    }
}

/// The statements that open a borrowing's transaction block: `BEGIN`, the timeouts for
/// this block, and warnings off for it (a caller's `BEGIN` inside it would warn "there is
/// already a transaction in progress").
fn block_start(timeouts: &Timeouts) -> String {
    let mut sql = "BEGIN".to_string();
    for (name, ms) in timeouts.session_options() {
        sql.push_str(&format!("; SET LOCAL {name} = {ms}"));
    }
    sql.push_str("; SET LOCAL client_min_messages = error");
    sql
}

async fn connect_transaction_pooled(
    url: &str,
    max_connections: u32,
    timeouts: &Timeouts,
) -> Result<Pool, DbError> {
    // No startup options (PgBouncer refuses the `options` parameter, "unsupported
    // startup parameter", unless told to ignore it, and then they would not reach the
    // server), nor `extra_float_digits` (refused likewise; sqlx reads floats in binary),
    // and no statement cache (a cached statement lives on a server session the next
    // borrowing may not get).
    let options: PgConnectOptions = url.parse()?;
    let options = options.statement_cache_capacity(0).extra_float_digits(None);
    let start = std::sync::Arc::new(block_start(timeouts));
    let on_connect = start.clone();
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .after_connect(move |conn, _| {
            let start = on_connect.clone();
            Box::pin(async move {
                conn.execute(start.as_str()).await?;
                Ok(())
            })
        })
        .before_acquire(move |conn, _| {
            let start = start.clone();
            Box::pin(async move {
                conn.execute(start.as_str()).await?;
                Ok(true)
            })
        })
        .after_release(|conn, _| Box::pin(end_block(conn)))
        .connect_with(options)
        .await
        .map_err(DbError::from)
}

/// Ends a borrowing's transaction block when it comes back: commits it when it is still
/// open (the borrower ran its statements in the pool's block), rolls it back when it
/// failed (a statement of the borrower's failed in it: a statement outside a block
/// would have been rolled back too), and keeps the connection. A session that does not
/// answer is closed.
async fn end_block(conn: &mut sqlx::PgConnection) -> Result<bool, sqlx::Error> {
    // A simple query (see `outside_transaction`); inside a failed block it fails with
    // 25P02.
    let asked = conn
        .fetch_one("SELECT pg_catalog.now() = pg_catalog.statement_timestamp()")
        .await;
    match asked {
        Ok(row) => {
            let outside: bool = row.try_get(0)?;
            if !outside {
                conn.execute("COMMIT").await?;
            }
            Ok(true)
        }
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("25P02") => {
            conn.execute("ROLLBACK").await?;
            Ok(true)
        }
        Err(e) => Err(e),
    }
}
