//! Berth's REST api. Stateless: every request reads or writes PostgreSQL, so any number of
//! replicas may run behind a load balancer.
//!
//! * [`routes`]: the handlers (`/v1/jobs`, `/v1/nodes`, `/v1/partitions`, the worker
//!   routes, `/healthz`, `/readyz`);
//! * [`job_control`]: hold, release and update of pending jobs;
//! * [`cluster_name`]: the cluster's name (`GET /v1/cluster`, slurmrestd's answers);
//! * [`submit`]: job submission (batch-script parsing, defaults, idempotency);
//! * [`requeue`]: `scontrol requeue`;
//! * [`keepalive`]: keep-alives of salloc's and srun's allocations (`InactiveLimit`);
//! * [`stats`]: GPU usage per job;
//! * [`steps`]: job steps (`srun` inside an allocation) and their output;
//! * [`node_sync`]: the worker protocol (registration, long-poll sync, reports);
//! * [`run_grant`]: the signed grants that prove a run's placement to a forgetful database;
//! * [`auth`]: bearer JWT and API-token verification, JWT minting, the caller's rights;
//! * [`identity`]: users, accounts and memberships;
//! * [`tokens`]: API tokens for CI;
//! * [`audit`]: the audit log of state-changing calls;
//! * [`limits`]: rate, size and time limits;
//! * [`oidc`]: external OpenID Connect issuers through their JWKS;
//! * [`metrics`]: `GET /metrics` (Prometheus), from a snapshot refreshed in the background;
//! * [`tls`]: HTTPS with rustls;
//! * [`events`]: the event stream (`GET /v1/events`, SSE);
//! * [`webhooks`]: webhooks and their delivery reconciler;
//! * [`node_credentials`]: bootstrap tokens and node credentials (how workers join);
//! * [`error`]: the one error → RFC 9457 problem mapping;
//! * [`openapi`]: the utoipa document, checked in at `openapi/berth.json`;
//! * [`slurmrestd`]: the slurmrestd-compatible subset (`/slurm/v0.0.44/`,
//!   `/slurmdb/v0.0.44/`), outside Berth's document.

pub mod accounting;
pub mod audit;
pub mod auth;
pub mod cluster_name;
pub mod console;
pub mod definitions;
pub mod error;
pub mod event_feed;
pub mod events;
pub mod fairshare;
pub mod group_commit;
pub mod identity;
pub mod job_control;
pub mod job_signal;
pub mod keepalive;
pub mod limits;
pub mod live_queue;
pub mod metrics;
pub mod node_credentials;
pub mod node_sync;
pub mod nodes;
pub mod oidc;
pub mod openapi;
pub mod partitions;
pub mod pools;
pub mod requeue;
pub mod reservations;
pub mod routes;
pub mod run_grant;
pub mod slurm_variables;
pub mod slurmrestd;
pub mod stats;
pub mod steps;
pub mod submit;
pub mod tls;
pub mod tokens;
pub mod usage_report;
pub mod views;
pub mod webhooks;

pub use auth::{mint_token, mint_token_with_key};

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{delete, get, post, put};
use axum::Router;
use std::future::Future;
use std::time::Duration;
use tokio::sync::broadcast;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

/// The api role's configuration.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// PostgreSQL URL.
    pub database_url: String,
    /// HS256 secret the api verifies Berth's tokens with (`None`: HS256 tokens are
    /// refused).
    pub jwt_secret: Option<String>,
    /// An Ed25519 or RSA public key (PEM) that verifies Berth's EdDSA or RS256 tokens.
    pub jwt_public_key_pem: Option<Vec<u8>>,
    /// The most connections to hold open to PostgreSQL.
    pub max_connections: u32,
    /// The statement, lock and idle-in-transaction timeouts of those connections.
    pub db_timeouts: berth_db::Timeouts,
    /// How those connections reach PostgreSQL (`[database] pooler`, `direct_url`): the
    /// `LISTEN` sessions and the migrations go to the direct URL.
    pub db_pooling: berth_db::Pooling,
    /// Rate, size and time limits.
    pub limits: limits::Limits,
    /// External OpenID Connect issuers whose tokens are accepted.
    pub oidc: Vec<oidc::OidcIssuer>,
    /// Serve HTTPS with this certificate and key (plain HTTP when `None`).
    pub tls: Option<tls::TlsFiles>,
    /// QOS and partitions from the configuration file, applied at start-up.
    pub definitions: definitions::Definitions,
    /// The scheduler's node timeout (`[scheduler] node_timeout_seconds`, the same value
    /// the scheduler runs with): syncing workers get a lease shorter than it
    /// ([`node_lease`]).
    pub node_timeout: Duration,
    /// The `[webhooks]` settings.
    pub webhooks: webhooks::WebhookSettings,
    /// `[metrics]`: who may scrape `/metrics`, and how often its snapshot is rebuilt.
    pub metrics: metrics::MetricsConfig,
    /// The scheduler's planner for will-run tests (`POST /v1/jobs/will-run`, `sbatch
    /// --test-only`); `None`: such tests are answered 503.
    pub will_run: Option<WillRunPlanner>,
    /// The cluster's name (`cluster_name`, Slurm's `ClusterName`; see [`cluster_name`]).
    pub cluster_name: String,
}

/// What a will-run planner returns.
pub type WillRunFuture = std::pin::Pin<
    Box<dyn Future<Output = Result<berth_core::wire::JobWillRun, berth_db::DbError>> + Send>,
>;

/// Plans a job that is not stored (`sbatch --test-only`): given the pool and the job's
/// scheduler row (inserted and rolled back by the api, so its id names no job), says when
/// and where it would start. The binary that runs the api supplies the scheduler's
/// planner (`berth_scheduler::will_run`); the api does not link the scheduler.
#[derive(Clone)]
pub struct WillRunPlanner(
    pub  std::sync::Arc<
        dyn Fn(berth_db::Pool, berth_db::snapshot::SchedJobRow) -> WillRunFuture + Send + Sync,
    >,
);

impl std::fmt::Debug for WillRunPlanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WillRunPlanner")
    }
}

/// Errors starting or running the api.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Could not reach the database or migrate it.
    #[error("connecting to the database")]
    Database(#[source] berth_db::DbError),
    /// Migrations failed.
    #[error("migrating the database")]
    Migrate(#[source] sqlx::migrate::MigrateError),
    /// The listener failed.
    #[error("serving HTTP")]
    Io(#[source] std::io::Error),
    /// The TLS certificate or key cannot be used.
    #[error("setting up TLS")]
    Tls(#[source] tls::TlsError),
    /// No usable token key (neither a secret nor a public key, or a bad key).
    #[error("token keys: {0}")]
    Keys(String),
    /// A `[qos.NAME]` or `[partitions.NAME]` definition could not be applied.
    #[error("{0}")]
    Definitions(String),
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The database pool.
    pub pool: berth_db::Pool,
    /// Token verification keys.
    pub keys: auth::Keys,
    /// Node names from `NOTIFY berth_node`, waking long polls (`*` wakes every poll).
    pub node_events: broadcast::Sender<String>,
    /// Per-principal and per-address rate limiters, with the other limits (the output
    /// cap among them).
    pub limiters: limits::RateLimiters,
    /// Verifier of external issuers' tokens.
    pub oidc: oidc::OidcVerifier,
    /// The lease each sync gives its worker ([`node_lease`]); `None`: none.
    pub node_lease: Option<Duration>,
    /// Wakes event streams; the webhook settings.
    pub events: events::EventHub,
    /// `/metrics`: the snapshot a background task refreshes, and this replica's request
    /// durations.
    pub metrics: std::sync::Arc<metrics::Metrics>,
    /// The planner for will-run tests ([`ApiConfig::will_run`]).
    pub will_run: Option<WillRunPlanner>,
    /// Permits to stream `GET /v1/queue` from an open query ([`queue_streams`] of
    /// them): a stream without one reads its rows first, so that clients reading slowly
    /// cannot hold every database connection.
    pub queue_streams: std::sync::Arc<tokio::sync::Semaphore>,
    /// This process's count of the live queue, for `MaxJobCount` ([`live_queue`]).
    pub live_queue: std::sync::Arc<live_queue::LiveQueueCount>,
    /// The committers that store concurrent submissions in one transaction
    /// ([`group_commit`]).
    pub group_commit: group_commit::GroupCommit,
}

/// How many `GET /v1/queue` streams may each hold a database connection while their
/// client reads: a quarter of the pool's `max_connections`, at least one.
pub fn queue_streams(max_connections: u32) -> std::sync::Arc<tokio::sync::Semaphore> {
    std::sync::Arc::new(tokio::sync::Semaphore::new(
        (max_connections as usize / 4).max(1),
    ))
}

/// The lease a worker gets with each successful sync when the scheduler declares a node
/// silent after `node_timeout`: the timeout less a tenth of it, at least 1 s less (30 s
/// gives 27 s, 6 s gives 5 s). A worker stops its runs by the end of its lease (counted
/// from when it sent the sync, which is before the api recorded it), so they are gone
/// before the scheduler can requeue them. `None` when that leaves less than a second.
pub fn node_lease(node_timeout: Duration) -> Option<Duration> {
    let margin = (node_timeout / 10).max(Duration::from_secs(1));
    node_timeout
        .checked_sub(margin)
        .filter(|lease| *lease >= Duration::from_secs(1))
}

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Copies the request id into problem documents, so a user can quote it.
async fn problem_request_id(request: Request, next: Next) -> Response {
    let id = request.headers().get(&REQUEST_ID).cloned();
    let response = next.run(request).await;
    let is_problem = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == error::PROBLEM_JSON.as_bytes());
    let Some(id) = id.filter(|_| is_problem) else {
        return response;
    };
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return Response::from_parts(parts, axum::body::Body::empty());
    };
    let body = match serde_json::from_slice::<berth_core::wire::Problem>(&bytes) {
        Ok(mut problem) => {
            problem.request_id = id.to_str().ok().map(str::to_string);
            serde_json::to_vec(&problem).unwrap_or_else(|_| bytes.to_vec())
        }
        Err(_) => bytes.to_vec(),
    };
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// The router with every route and layer.
pub fn router(state: AppState) -> Router {
    let max_body_bytes = state.limiters.limits().max_body_bytes;
    let request_metrics = state.metrics.clone();
    Router::new()
        .route("/healthz", get(routes::healthz))
        .route("/metrics", get(metrics::metrics_get))
        .route("/readyz", get(routes::readyz))
        .route("/v1/cluster", get(routes::cluster_get))
        .route("/openapi.json", get(openapi::serve_document))
        .route("/v1/jobs", post(routes::job_create).get(routes::job_list))
        .route("/v1/jobs/will-run", post(routes::job_will_run))
        .route("/v1/queue", get(routes::queue_list))
        .route(
            "/v1/jobs/{id}",
            get(routes::job_get).patch(job_control::job_update),
        )
        .route("/v1/jobs/cancel", post(job_control::job_cancel_batch))
        .route("/v1/jobs/hold", post(job_control::job_hold_batch))
        .route("/v1/jobs/release", post(job_control::job_release_batch))
        .route("/v1/jobs/{id}/hold", post(job_control::job_hold))
        .route("/v1/jobs/{id}/priority", get(fairshare::job_priority))
        .route("/v1/fairshare", get(fairshare::fairshare_list))
        .route("/v1/usage", get(usage_report::usage_get))
        .route("/v1/usage/cluster", get(usage_report::usage_cluster_get))
        .route("/v1/qos", get(fairshare::qos_list))
        .route(
            "/v1/qos/{name}",
            get(fairshare::qos_get).put(fairshare::qos_put),
        )
        .route("/v1/jobs/{id}/release", post(job_control::job_release))
        .route("/v1/jobs/{id}/top", post(job_control::job_top))
        .route("/v1/jobs/{id}/cancel", post(routes::job_cancel))
        .route("/v1/jobs/{id}/requeue", post(requeue::job_requeue))
        .route("/v1/jobs/{id}/signal", post(job_signal::job_signal))
        .route("/v1/jobs/{id}/keepalive", post(keepalive::job_keepalive))
        .route("/v1/jobs/{id}/stats", get(stats::job_stats))
        .route("/v1/jobs/{id}/gpu-samples", get(stats::job_gpu_samples))
        .route("/v1/oidc/issuers", get(oidc::oidc_issuer_list))
        .route(
            "/v1/usage/cluster/timeline",
            get(usage_report::usage_cluster_timeline),
        )
        .route("/v1/jobs/{id}/script", get(routes::job_script))
        .route(
            "/v1/jobs/{id}/tasks/{task}/cancel",
            post(job_control::job_task_cancel),
        )
        .route(
            "/v1/jobs/{id}/output",
            get(routes::job_output).post(routes::job_output_upload),
        )
        .route(
            "/v1/jobs/{id}/steps",
            post(steps::step_create).get(steps::step_list),
        )
        .route("/v1/jobs/{id}/steps/{step}", get(steps::step_get))
        .route(
            "/v1/jobs/{id}/steps/{step}/cancel",
            post(steps::step_cancel),
        )
        .route("/v1/jobs/{id}/steps/{step}/input", post(steps::step_input))
        .route(
            "/v1/jobs/{id}/steps/{step}/output",
            get(steps::step_output).post(steps::step_output_upload),
        )
        .route("/v1/nodes", get(routes::node_list))
        .route("/v1/nodes/register", post(routes::node_register))
        .route(
            "/v1/nodes/bootstrap-tokens",
            post(node_credentials::node_bootstrap_create),
        )
        .route("/v1/nodes/join", post(node_credentials::node_join))
        .route(
            "/v1/nodes/{name}/credential",
            post(node_credentials::node_rekey),
        )
        .route(
            "/v1/nodes/{name}",
            get(nodes::node_get).patch(nodes::node_update),
        )
        .route("/v1/nodes/{name}/drain", post(nodes::node_drain))
        .route("/v1/nodes/{name}/resume", post(nodes::node_resume))
        .route("/v1/nodes/{name}/power", post(pools::node_power))
        .route("/v1/pools", get(pools::pool_list))
        .route(
            "/v1/pools/{name}",
            get(pools::pool_get)
                .put(pools::pool_put)
                .delete(pools::pool_delete),
        )
        .route("/v1/nodes/{name}/sync", post(routes::node_sync))
        .route("/v1/partitions", get(routes::partition_list))
        .route(
            "/v1/partitions/{name}",
            get(partitions::partition_get)
                .put(partitions::partition_put)
                .delete(partitions::partition_delete),
        )
        .route(
            "/v1/reservations",
            get(reservations::reservation_list).post(reservations::reservation_create),
        )
        .route(
            "/v1/reservations/{name}",
            get(reservations::reservation_get)
                .patch(reservations::reservation_update)
                .delete(reservations::reservation_delete),
        )
        .route("/v1/whoami", get(identity::whoami))
        .route(
            "/v1/users",
            post(identity::user_create).get(identity::user_list),
        )
        .route(
            "/v1/users/{name}",
            get(identity::user_get).delete(identity::user_delete),
        )
        .route(
            "/v1/accounts",
            post(identity::account_create).get(identity::account_list),
        )
        .route(
            "/v1/accounts/{name}",
            delete(identity::account_delete).patch(identity::account_update),
        )
        .route(
            "/v1/accounts/{name}/users/{user}",
            put(identity::membership_set).delete(identity::membership_delete),
        )
        .route(
            "/v1/tokens",
            post(tokens::token_create).get(tokens::token_list),
        )
        .route("/v1/tokens/{id}", delete(tokens::token_revoke))
        .route("/v1/audit", get(audit::audit_list))
        .route("/v1/accounting/jobs", get(accounting::accounting_job_list))
        .route("/v1/events", get(events::event_list))
        .route(
            "/v1/webhooks",
            post(webhooks::webhook_create).get(webhooks::webhook_list),
        )
        .route(
            "/v1/webhooks/{id}",
            get(webhooks::webhook_get)
                .patch(webhooks::webhook_update)
                .delete(webhooks::webhook_delete),
        )
        .route("/v1/webhooks/{id}/test", post(webhooks::webhook_test))
        .route(
            "/v1/webhooks/{id}/deliveries",
            get(webhooks::webhook_delivery_list),
        )
        .route(
            "/v1/webhooks/{id}/deliveries/{delivery}/redeliver",
            post(webhooks::webhook_redeliver),
        )
        .merge(slurmrestd::routes())
        .fallback(console::fallback)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            audit::record,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::protect,
        ))
        .with_state(state)
        .layer(tower_http::limit::RequestBodyLimitLayer::new(
            max_body_bytes,
        ))
        .layer(axum::middleware::from_fn(error::plain_errors_as_problems))
        .layer(axum::middleware::from_fn(problem_request_id))
        .layer(axum::middleware::from_fn(
            slurmrestd::errors_as_openapi_resp,
        ))
        .layer(TraceLayer::new_for_http())
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .layer(axum::middleware::from_fn_with_state(
            request_metrics,
            metrics::track_requests,
        ))
}

/// Forwards `NOTIFY berth_node` payloads to the long polls of this process, listening on
/// a session of `direct`'s (see [`berth_db::Pools`]). Reconnects by
/// itself; after a reconnect it wakes every poll (`*`), since notifications may have been
/// missed.
async fn forward_node_events(pool: berth_db::Pool, tx: broadcast::Sender<String>) {
    loop {
        match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(mut listener) => {
                if listener
                    .listen(berth_db::notify::NODE_CHANNEL)
                    .await
                    .is_ok()
                {
                    let _ = tx.send("*".to_string());
                    loop {
                        match listener.try_recv().await {
                            Ok(Some(n)) => {
                                let _ = tx.send(n.payload().to_string());
                            }
                            // The connection was lost (a database restart): the next call
                            // reconnects; notifications may have been missed meanwhile.
                            Ok(None) => {
                                let _ = tx.send("*".to_string());
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "LISTEN connection lost; reconnecting");
                                break;
                            }
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "LISTEN connection failed; retrying"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Connects, migrates, and builds the shared state (spawning the NOTIFY forwarder).
///
/// # Errors
/// [`ServeError::Database`] or [`ServeError::Migrate`].
pub async fn state(config: &ApiConfig) -> Result<AppState, ServeError> {
    let mut keys = match &config.jwt_secret {
        Some(secret) => auth::Keys::from_secret(secret),
        None => auth::Keys::default(),
    };
    if let Some(pem) = &config.jwt_public_key_pem {
        keys = keys.with_public_key_pem(pem).map_err(ServeError::Keys)?;
    }
    if keys.is_empty() {
        return Err(ServeError::Keys(
            "set a jwt_secret or a jwt_public_key".into(),
        ));
    }
    let berth_db::Pools { pool, direct } = berth_db::connect_pools(
        &config.database_url,
        config.max_connections,
        &config.db_timeouts,
        &config.db_pooling,
    )
    .await
    .map_err(ServeError::Database)?;
    berth_db::migrate(&direct)
        .await
        .map_err(ServeError::Migrate)?;
    definitions::apply(&pool, &config.definitions)
        .await
        .map_err(ServeError::Definitions)?;
    let (node_events, _) = broadcast::channel(1024);
    tokio::spawn(forward_node_events(direct.clone(), node_events.clone()));
    let events = events::EventHub::new(
        config.webhooks.clone(),
        event_feed::StreamLimits {
            per_principal: config.limits.max_event_streams_per_principal,
            total: config.limits.max_event_streams,
        },
    );
    tokio::spawn(event_feed::run_reader(
        pool.clone(),
        events.feed.clone(),
        events.subscribe(),
    ));
    tokio::spawn(events::forward_events(direct, events.clone()));
    tokio::spawn(webhooks::run(pool.clone(), events.clone()));
    let limiters = limits::RateLimiters::new(config.limits.clone());
    tokio::spawn({
        let limiters = limiters.clone();
        async move {
            loop {
                tokio::time::sleep(Duration::from_secs(60)).await;
                limiters.shrink();
            }
        }
    });
    let metrics = std::sync::Arc::new(metrics::Metrics::new(config.metrics.clone()));
    tokio::spawn(metrics::refresh_loop(pool.clone(), metrics.clone()));
    Ok(AppState {
        pool,
        keys,
        node_events,
        limiters,
        oidc: oidc::OidcVerifier::new(config.oidc.clone()),
        node_lease: node_lease(config.node_timeout),
        events,
        metrics,
        will_run: config.will_run.clone(),
        queue_streams: queue_streams(config.max_connections),
        live_queue: Default::default(),
        group_commit: Default::default(),
    })
}

/// Serves the api on `listener` until `shutdown` resolves (in-flight requests finish).
/// Runs migrations first.
///
/// # Errors
/// [`ServeError`] when the database cannot be reached or migrated, or the listener fails.
pub async fn serve(
    config: ApiConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let tls = match &config.tls {
        Some(files) => Some(tls::server_config(files).map_err(ServeError::Tls)?),
        None => None,
    };
    cluster_name::set(&config.cluster_name);
    let state = state(&config).await?;
    if let Some(tls) = tls {
        tracing::info!(addr = ?listener.local_addr().ok(), "api listening (HTTPS)");
        return tls::serve(listener, router(state), tls, shutdown).await;
    }
    tracing::info!(addr = ?listener.local_addr().ok(), "api listening");
    // Each write goes out at once: a streamed answer's last piece (`GET /v1/queue` as
    // NDJSON, a job's output) otherwise waits on Nagle's algorithm for the client's
    // delayed acknowledgement (40 ms on Linux).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY could not be set");
        }
    });
    axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
    .map_err(ServeError::Io)
}

#[allow(dead_code)]
fn _assert_header_value(_: HeaderValue) {}
