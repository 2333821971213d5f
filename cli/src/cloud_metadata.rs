//! `berth cloud-metadata --state-dir DIR` (hidden): the local cloud provider's instance
//! metadata service, EC2's IMDSv2 paths under `/<instance-id>/`, read from the
//! provider's state directory ([`berth_cloud::local`]). The provider starts it detached,
//! so that it outlives the scheduler as the instances do; it writes its port to
//! `<state_dir>/metadata.port` once it listens.
//!
//! * `PUT /<id>/latest/api/token` (header `X-aws-ec2-metadata-token-ttl-seconds`, 1 to
//!   21600): a session token.
//! * `GET /<id>/latest/meta-data/spot/instance-action` (header `X-aws-ec2-metadata-token`):
//!   404 without an interruption notice, else `{"action":"terminate","time":"…"}`
//!   ([`berth_cloud::local::interruption_notice`]).
//! * `GET /<id>/latest/meta-data/instance-id`, `…/ami-launch-index`.
//! * `GET /_berth/metadata`: `{"state_dir": "…"}`, how the provider knows the service is
//!   its own.
//!
//! It stops by itself once `metadata.port` no longer names it (its state directory was
//! removed, or another service took over).
//!
//! An id with no instance record answers as a bare instance (launch index 0): a worker
//! started by hand can be pointed at it. A GET without a token issued here is refused
//! (401), as IMDSv2 does.

use anyhow::Context;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone)]
struct Metadata {
    state_dir: PathBuf,
    /// Tokens issued, with when they expire.
    tokens: Arc<Mutex<HashMap<String, Instant>>>,
}

/// Serves the metadata of the instances under `state_dir` on `listen` until the process
/// is stopped.
///
/// # Errors
/// When it cannot listen or write its port file.
pub async fn serve(state_dir: PathBuf, listen: std::net::SocketAddr) -> anyhow::Result<i32> {
    let state_dir = std::fs::canonicalize(&state_dir)
        .with_context(|| format!("--state-dir {}", state_dir.display()))?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("--listen {listen}"))?;
    let port = listener.local_addr()?.port();
    let state = Metadata {
        state_dir: state_dir.clone(),
        tokens: Arc::new(Mutex::new(HashMap::new())),
    };
    let app = Router::new()
        .route("/_berth/metadata", get(whoami))
        .route("/{id}/latest/api/token", put(token))
        .route("/{id}/latest/meta-data/{*item}", get(item))
        .with_state(state);
    let port_file = state_dir.join("metadata.port");
    let tmp = state_dir.join(format!("metadata.port.tmp.{}", std::process::id()));
    std::fs::write(&tmp, format!("{port}\n")).with_context(|| tmp.display().to_string())?;
    std::fs::rename(&tmp, &port_file).with_context(|| port_file.display().to_string())?;
    tracing::info!(port, state_dir = %state_dir.display(), "instance metadata service listening");
    // It stops when its state directory is gone or another service took it over.
    let orphaned = async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            let current = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|p| p.trim().parse::<u16>().ok());
            if current != Some(port) {
                tracing::info!(
                    port,
                    "the state directory no longer names this service; stopping"
                );
                return;
            }
        }
    };
    axum::serve(listener, app)
        .with_graceful_shutdown(orphaned)
        .await?;
    Ok(0)
}

async fn whoami(State(state): State<Metadata>) -> Json<serde_json::Value> {
    Json(serde_json::json!({ "state_dir": state.state_dir.to_string_lossy() }))
}

async fn token(
    State(state): State<Metadata>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> Response {
    if !berth_cloud::local::valid_id(&id) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let ttl = headers
        .get("x-aws-ec2-metadata-token-ttl-seconds")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|ttl| (1..=21_600).contains(ttl));
    let Some(ttl) = ttl else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let token = format!("{:032x}", rand::random::<u128>());
    let now = Instant::now();
    let mut tokens = state.tokens.lock().unwrap_or_else(|e| e.into_inner());
    tokens.retain(|_, until| *until > now);
    tokens.insert(token.clone(), now + Duration::from_secs(ttl));
    token.into_response()
}

async fn item(
    State(state): State<Metadata>,
    UrlPath((id, item)): UrlPath<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if !berth_cloud::local::valid_id(&id) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let valid = headers
        .get("x-aws-ec2-metadata-token")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            let tokens = state.tokens.lock().unwrap_or_else(|e| e.into_inner());
            tokens.get(t).is_some_and(|until| *until > Instant::now())
        });
    if !valid {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    match item.as_str() {
        "instance-id" => id.into_response(),
        "ami-launch-index" => berth_cloud::local::instance_record(&state.state_dir, &id)
            .map_or(0, |r| r.launch_index)
            .to_string()
            .into_response(),
        "spot/instance-action" => {
            match berth_cloud::local::interruption_notice(&state.state_dir, &id) {
                Some(notice) => Json(serde_json::json!({
                    "action": notice.action,
                    "time": notice.time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                }))
                .into_response(),
                None => StatusCode::NOT_FOUND.into_response(),
            }
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
