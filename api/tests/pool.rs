//! A bounded database pool: when every connection is busy past the acquire timeout, the
//! api answers 503 with a problem document instead of queueing without end.

use axum::body::Body;
use axum::http::Request;
use berth_api::{auth, limits, oidc, AppState};
use berth_core::auth::Role;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use std::time::Duration;
use tower::ServiceExt;

/// The api's state on `pool`, with default limits and `queue_streams(max_connections)`
/// (a quarter of it) stream permits.
fn app_state(pool: sqlx::PgPool, max_connections: u32) -> AppState {
    AppState {
        pool,
        keys: auth::Keys::from_secret("pool-test-secret"),
        node_events: tokio::sync::broadcast::channel(16).0,
        limiters: limits::RateLimiters::new(limits::Limits::default()),
        oidc: oidc::OidcVerifier::default(),
        node_lease: None,
        events: Default::default(),
        metrics: Default::default(),
        will_run: None,
        queue_streams: berth_api::queue_streams(max_connections),
        live_queue: Default::default(),
        group_commit: Default::default(),
    }
}

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn an_exhausted_pool_answers_503(options: PgPoolOptions, connect: PgConnectOptions) {
    let pool = options
        .max_connections(1)
        .acquire_timeout(Duration::from_millis(300))
        .connect_with(connect)
        .await
        .unwrap();
    let state = app_state(pool.clone(), 1);
    let app = berth_api::router(state);
    let token = berth_api::mint_token("pool-test-secret", "alice", Role::Admin, 60);
    let get = |app: axum::Router| {
        let request = Request::get("/v1/jobs")
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        async move { app.oneshot(request).await.unwrap() }
    };
    assert_eq!(get(app.clone()).await.status(), 200);

    let held = pool.acquire().await.unwrap();
    let response = get(app.clone()).await;
    assert_eq!(response.status(), 503);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let body = axum::body::to_bytes(response.into_body(), 1 << 16)
        .await
        .unwrap();
    let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(problem["code"], "unavailable");

    drop(held);
    assert_eq!(get(app).await.status(), 200);
}

/// A TCP front that accepts every connection and closes it (a proxy whose backend is
/// down) makes the database unavailable: 503 with `Retry-After`, never 500 (sqlx
/// reports "unexpected response from SSLRequest: 0x00", a protocol error).
#[tokio::test]
async fn a_front_that_accepts_and_closes_answers_503() {
    let front = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = front.local_addr().unwrap().port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tokio::spawn({
        let accepted = accepted.clone();
        async move {
            while let Ok((mut socket, _)) = front.accept().await {
                accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                // Take what the client sends first (its SSLRequest), then close: a FIN,
                // not the reset that closing with unread data would send.
                let mut first = [0u8; 8];
                let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut first).await;
                drop(socket);
            }
        }
    });
    let connect: PgConnectOptions = format!("postgres://postgres@127.0.0.1:{port}/postgres")
        .parse()
        .unwrap();
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(2))
        .connect_lazy_with(connect);
    let state = app_state(pool, 1);
    let app = berth_api::router(state);
    let token = berth_api::mint_token("pool-test-secret", "alice", Role::Admin, 60);
    for (method, path, body) in [
        ("GET", "/v1/jobs", None),
        ("GET", "/readyz", None),
        (
            "POST",
            "/v1/jobs",
            Some(r##"{"script": "#!/bin/bash\ntrue\n"}"##),
        ),
    ] {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(body.map_or_else(Body::empty, Body::from))
            .unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), 503, "{method} {path}");
        assert_eq!(response.headers()["retry-after"], "2", "{method} {path}");
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(problem["code"], "unavailable", "{method} {path}: {problem}");
    }
    assert!(
        accepted.load(std::sync::atomic::Ordering::SeqCst) >= 3,
        "the api did try the front"
    );
}

/// `GET /v1/queue` as `application/x-ndjson` through `app`: the response, unread.
async fn queue_stream(app: &axum::Router, token: &str) -> axum::response::Response {
    let request = Request::get("/v1/queue")
        .header("authorization", format!("Bearer {token}"))
        .header("accept", "application/x-ndjson")
        .body(Body::empty())
        .unwrap();
    app.clone().oneshot(request).await.unwrap()
}

/// The ids of a queue stream's lines.
fn ids(body: &[u8]) -> Vec<i64> {
    body.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice::<serde_json::Value>(l).unwrap()["id"]
                .as_i64()
                .unwrap()
        })
        .collect()
}

/// A queue stream holds a database connection while its client reads only with one of
/// the api's permits; without one it reads every row first. A client that stops reading
/// is cut off after `QUEUE_STREAM_STALL` (its body ends in an error, not as a shorter
/// list), and its connection is free again.
#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn queue_streams_hold_a_connection_only_with_a_permit(
    options: PgPoolOptions,
    connect: PgConnectOptions,
) {
    let pool = options
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(1))
        .connect_with(connect)
        .await
        .unwrap();
    // Enough jobs for many more 64 KiB pieces than the stream buffers.
    let expected: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO jobs (name, user_name, partition, state, num_nodes, num_tasks, script,
                           stdout_pattern, spec)
         SELECT 'queued-' || i, 'alice', 'gpu', 'PENDING', 1, 1, '#!/bin/sh\n', '/dev/null', '{}'
         FROM generate_series(1, 3000) AS i
         RETURNING id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    // One stream permit.
    let state = app_state(pool.clone(), 4);
    let app = berth_api::router(state);
    let token = berth_api::mint_token("pool-test-secret", "alice", Role::Admin, 60);

    // The first stream takes the permit and, unread, holds its connection.
    let first = queue_stream(&app, &token).await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["content-type"], "application/x-ndjson");
    // The second has none: it reads every row on the other connection, frees it, and
    // is whole.
    let second = queue_stream(&app, &token).await;
    assert_eq!(second.status(), 200);
    let body = axum::body::to_bytes(second.into_body(), 1 << 24)
        .await
        .unwrap();
    assert_eq!(ids(&body), expected);
    // The first, read now, is whole too.
    let body = axum::body::to_bytes(first.into_body(), 1 << 24)
        .await
        .unwrap();
    assert_eq!(ids(&body), expected);

    // A stream whose client stops reading is cut off, and gives its connection back.
    let stalled = queue_stream(&app, &token).await;
    assert_eq!(stalled.status(), 200);
    tokio::time::sleep(berth_api::routes::QUEUE_STREAM_STALL + Duration::from_secs(1)).await;
    assert!(
        axum::body::to_bytes(stalled.into_body(), 1 << 24)
            .await
            .is_err(),
        "a stream cut short must not end as if whole"
    );
    let (a, b) = (pool.acquire().await, pool.acquire().await);
    assert!(a.is_ok() && b.is_ok(), "both connections are free");
}
