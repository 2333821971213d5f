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
