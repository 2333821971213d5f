//! What the database benchmarks share, included by each with
//! `#[path = "scratch.rs"] mod scratch;`: a scratch database made afresh from the
//! migrations, command-line numbers, and a median.
// Each benchmark uses a part of it.
#![allow(dead_code)]

use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use std::time::Duration;

/// Runs `sql` (one or more statements); panics naming it when it fails.
pub async fn exec(pool: &PgPool, sql: &str) {
    sqlx::raw_sql(sql).execute(pool).await.expect(sql);
}

/// The `i`th command-line argument as a number, else `default`.
pub fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// The median of some durations (the upper one of an even count).
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A scratch database on `DATABASE_URL`'s server (default: PostgreSQL on
/// 127.0.0.1:5432) with its parameters, dropped and created again, with Berth's
/// migrations.
pub struct Scratch {
    /// Connections to it, without a statement timeout (fills take long).
    pub pool: PgPool,
    /// Its URL (for a server the benchmark starts on it).
    pub url: String,
    admin: PgPool,
    name: String,
}

impl Scratch {
    /// Makes database `name` afresh and connects `connections` connections to it.
    pub async fn create(name: &str, connections: u32) -> Scratch {
        let url = std::env::var("DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let admin = PgPoolOptions::new()
            .max_connections(1)
            .connect(&url)
            .await
            .unwrap();
        exec(
            &admin,
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        )
        .await;
        exec(&admin, &format!("CREATE DATABASE {name}")).await;
        // The same server and parameters (`?sslmode=disable` …), another database.
        let (path, params) = url
            .split_once('?')
            .map_or((url.as_str(), ""), |(p, q)| (p, q));
        let base = path.rsplit_once('/').map_or(path, |(b, _)| b);
        let timeouts = berth_db::Timeouts {
            statement: Duration::ZERO,
            ..Default::default()
        };
        let url = match params {
            "" => format!("{base}/{name}"),
            params => format!("{base}/{name}?{params}"),
        };
        let pool = berth_db::connect_with(&url, connections, &timeouts)
            .await
            .unwrap();
        berth_db::migrate(&pool).await.unwrap();
        Scratch {
            pool,
            url,
            admin,
            name: name.to_string(),
        }
    }

    /// Closes the connections and drops the database (kept when `KEEP` is set, for a
    /// look with psql).
    pub async fn drop(self) {
        self.pool.close().await;
        if std::env::var_os("KEEP").is_some() {
            return;
        }
        exec(
            &self.admin,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        )
        .await;
    }
}
