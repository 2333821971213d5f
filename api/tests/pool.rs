//! A bounded database pool: when every connection is busy past the acquire timeout, the
//! api answers 503 with a problem document instead of queueing without end.

use axum::body::Body;
use axum::http::Request;
use berth_api::{auth, limits, oidc, AppState};
use berth_core::auth::Role;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use std::time::Duration;
use tower::ServiceExt;

#[sqlx::test(migrator = "berth_db::MIGRATOR")]
async fn an_exhausted_pool_answers_503(options: PgPoolOptions, connect: PgConnectOptions) {
    let pool = options
        .max_connections(1)
        .acquire_timeout(Duration::from_millis(300))
        .connect_with(connect)
        .await
        .unwrap();
    let state = AppState {
        pool: pool.clone(),
        keys: auth::Keys::from_secret("pool-test-secret"),
        node_events: tokio::sync::broadcast::channel(16).0,
        limiters: limits::RateLimiters::new(limits::Limits::default()),
        oidc: oidc::OidcVerifier::default(),
        node_lease: None,
        events: Default::default(),
        metrics: Default::default(),
        will_run: None,
    };
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
    let state = AppState {
        pool,
        keys: auth::Keys::from_secret("pool-test-secret"),
        node_events: tokio::sync::broadcast::channel(16).0,
        limiters: limits::RateLimiters::new(limits::Limits::default()),
        oidc: oidc::OidcVerifier::default(),
        node_lease: None,
        events: Default::default(),
        metrics: Default::default(),
        will_run: None,
    };
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
