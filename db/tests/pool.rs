//! The pool's guards: a transaction cancelled at any point never leaves its connection
//! inside it for the next borrower, and sessions carry Berth's timeouts.

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Row};
use std::time::Duration;

fn url_of(connect: &PgConnectOptions) -> String {
    format!(
        "postgres://{}@{}:{}/{}",
        connect.get_username(),
        connect.get_host(),
        connect.get_port(),
        connect.get_database().unwrap_or("postgres")
    )
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_transaction_cancelled_at_any_point_leaves_the_next_borrower_outside_it(
    _options: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let pool = berth_db::connect(&url_of(&connect), 1).await.unwrap();
    sqlx::raw_sql("CREATE TABLE probe (id int); INSERT INTO probe VALUES (1)")
        .execute(&pool)
        .await
        .unwrap();
    // A transaction taking a row lock, cancelled (as an HTTP client that went away
    // cancels its handler) after 0, 25, 50, … µs: in its BEGIN, its query, its commit,
    // or not at all.
    let mut cancelled = 0;
    for step in 0..200u64 {
        let work = async {
            let mut tx = berth_db::begin(&pool).await.unwrap();
            sqlx::query("SELECT * FROM probe FOR UPDATE")
                .execute(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
        };
        if tokio::time::timeout(Duration::from_micros(25 * step), work)
            .await
            .is_err()
        {
            cancelled += 1;
        }
        // The next borrower (the pool holds one connection) runs outside any
        // transaction. (A simple query: the extended protocol starts its transaction
        // before its statement's timestamp.)
        let row = sqlx::Executor::fetch_one(&pool, "SELECT now() = statement_timestamp()")
            .await
            .unwrap();
        assert!(
            row.get::<bool, _>(0),
            "after a cancellation at {} µs the next borrower ran inside a transaction",
            25 * step
        );
        // And no lock is left behind: another session takes the row at once.
        let mut other = sqlx::PgConnection::connect_with(&connect).await.unwrap();
        sqlx::query("SET lock_timeout = '2s'")
            .execute(&mut other)
            .await
            .unwrap();
        sqlx::query("BEGIN").execute(&mut other).await.unwrap();
        sqlx::query("SELECT * FROM probe FOR UPDATE")
            .execute(&mut other)
            .await
            .expect("a cancelled transaction still holds its row lock");
        sqlx::query("ROLLBACK").execute(&mut other).await.unwrap();
    }
    assert!(cancelled > 0, "no transaction was cancelled");
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_connection_given_back_outside_a_transaction_is_lent_again(
    _options: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let pool = berth_db::connect(&url_of(&connect), 1).await.unwrap();
    let first: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&pool)
        .await
        .unwrap();
    for _ in 0..20 {
        let mut tx = berth_db::begin(&pool).await.unwrap();
        sqlx::query("SELECT 1").execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(
            pid, first,
            "a healthy connection was closed on its way back"
        );
    }
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn sessions_carry_the_configured_timeouts(
    _options: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let timeouts = berth_db::Timeouts {
        statement: Duration::from_millis(300),
        lock: Duration::from_millis(200),
        idle_in_transaction: Duration::from_secs(4),
    };
    let pool = berth_db::connect_with(&url_of(&connect), 2, &timeouts)
        .await
        .unwrap();
    let settings: (String, String, String) = sqlx::query_as(
        "SELECT current_setting('statement_timeout'), current_setting('lock_timeout'),
                current_setting('idle_in_transaction_session_timeout')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        settings,
        ("300ms".to_string(), "200ms".to_string(), "4s".to_string())
    );
    // A statement past the limit fails as a timeout.
    let slow = sqlx::query("SELECT pg_sleep(2)").execute(&pool).await;
    let err = berth_db::DbError::from(slow.unwrap_err());
    assert!(matches!(err, berth_db::DbError::TimedOut(_)), "{err:?}");
    // Migrations run without those limits (a long one must not fail half-way).
    berth_db::migrate(&pool).await.unwrap();
}

/// `[database] pooler = "transaction"`, here straight against the server (what the pool
/// does is the same whatever is in between; `tests/pgbouncer.rs` puts PgBouncer there):
/// every borrowing is one transaction block carrying the timeouts, committed when the
/// connection comes back, rolled back when a statement failed in it, and the connection
/// is lent again in a clean state; the direct pool opens sessions with the timeouts as
/// startup options, and migrations run on it.
#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn a_transaction_pooled_borrowing_is_one_block_with_the_timeouts(
    _options: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let url = url_of(&connect);
    let timeouts = berth_db::Timeouts {
        statement: Duration::from_millis(300),
        lock: Duration::from_millis(200),
        idle_in_transaction: Duration::from_secs(4),
    };
    let pooling = berth_db::Pooling {
        pooler: berth_db::Pooler::Transaction,
        direct_url: Some(url.clone()),
    };
    let pools = berth_db::connect_pools(&url, 1, &timeouts, &pooling)
        .await
        .unwrap();
    let pool = &pools.pool;
    // The timeouts hold in the block, and the session itself has none of them.
    // (A simple query: the extended protocol starts its transaction before its
    // statement's timestamp.)
    let row = sqlx::Executor::fetch_one(
        pool,
        "SELECT current_setting('statement_timeout'), current_setting('lock_timeout'),
                current_setting('idle_in_transaction_session_timeout'),
                now() = statement_timestamp()",
    )
    .await
    .unwrap();
    let settings: (String, String, String, bool) = (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!(
        settings,
        (
            "300ms".to_string(),
            "200ms".to_string(),
            "4s".to_string(),
            false
        ),
        "the borrowing runs in a block with the timeouts"
    );
    let slow = sqlx::query("SELECT pg_sleep(2)").execute(pool).await;
    let err = berth_db::DbError::from(slow.unwrap_err());
    assert!(matches!(err, berth_db::DbError::TimedOut(_)), "{err:?}");
    // A statement of its own (outside a caller's transaction) is committed when the
    // connection comes back: another session sees it.
    sqlx::query("INSERT INTO users (name) VALUES ('pooled')")
        .execute(pool)
        .await
        .unwrap();
    let other = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(connect.clone())
        .await
        .unwrap();
    let seen: i64 = sqlx::query_scalar("SELECT count(*) FROM users WHERE name = 'pooled'")
        .fetch_one(&other)
        .await
        .unwrap();
    assert_eq!(seen, 1, "the borrowing's statement was committed");
    // A failed statement leaves the (one) connection usable, and a caller's transaction
    // works inside the block: committed, or rolled back when dropped.
    let bad = sqlx::query("INSERT INTO users (name) VALUES ('pooled')")
        .execute(pool)
        .await;
    assert!(bad.is_err(), "a duplicate user");
    let mut tx = berth_db::begin(pool).await.unwrap();
    sqlx::query("INSERT INTO users (name) VALUES ('kept')")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let mut tx = berth_db::begin(pool).await.unwrap();
    sqlx::query("INSERT INTO users (name) VALUES ('dropped')")
        .execute(&mut *tx)
        .await
        .unwrap();
    drop(tx);
    let names: Vec<String> =
        sqlx::query_scalar("SELECT name FROM users WHERE name IN ('kept', 'dropped')")
            .fetch_all(&other)
            .await
            .unwrap();
    assert_eq!(names, vec!["kept".to_string()]);
    // A snapshot transaction still sets its isolation level first.
    let mut tx = berth_db::begin_snapshot(pool).await.unwrap();
    let level: String = sqlx::query_scalar("SELECT current_setting('transaction_isolation')")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(level, "repeatable read");
    drop(tx);
    // The direct pool: the timeouts as startup options, outside any block; migrations.
    // (A simple query: see above.)
    let row = sqlx::Executor::fetch_one(
        &pools.direct,
        "SELECT current_setting('statement_timeout'), now() = statement_timestamp()",
    )
    .await
    .unwrap();
    let direct: (String, bool) = (row.get(0), row.get(1));
    assert_eq!(direct, ("300ms".to_string(), true));
    berth_db::migrate(&pools.direct).await.unwrap();
    // Without a direct URL, transaction pooling is refused.
    let refused = berth_db::connect_pools(
        &url,
        1,
        &timeouts,
        &berth_db::Pooling {
            pooler: berth_db::Pooler::Transaction,
            direct_url: None,
        },
    )
    .await;
    assert!(refused.is_err());
}
