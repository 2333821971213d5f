//! The instance metadata's interruption notice: a worker on a cloud instance watches
//! EC2's instance metadata service (IMDSv2) for a spot interruption notice, and its next
//! sync tells the api, which drains the node and requeues its jobs before the instance
//! goes.
//!
//! Every [`crate::WorkerConfig::metadata_poll_interval`] (5 s by default) it asks for a
//! session token (`PUT {base}/latest/api/token` with
//! `X-aws-ec2-metadata-token-ttl-seconds`) and then for
//! `GET {base}/latest/meta-data/spot/instance-action` with that token: 404 means no
//! notice; 200 carries `{"action": "terminate", "time": "2026-12-01T12:00:00Z"}`. On EC2
//! the base is `http://169.254.169.254`; the local cloud provider serves the same paths
//! per instance (`berth cloud-metadata`).

use berth_core::wire::Interruption;
use std::time::Duration;
use tokio::sync::watch;

/// How long the session tokens asked for last, seconds (EC2's most: 6 hours).
const TOKEN_TTL_SECONDS: u32 = 21_600;

/// How long one metadata request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// Polls `base` every `interval` until it reports an interruption notice, which it sends
/// on `notice` (then it stops: a notice is not withdrawn). Failures (no metadata service,
/// a bad answer) are logged once each time they change and polled again.
pub async fn watch_interruption(
    base: String,
    interval: Duration,
    notice: watch::Sender<Option<Interruption>>,
) {
    let base = base.trim_end_matches('/').to_string();
    let client = match reqwest::Client::builder()
        .no_proxy()
        .timeout(REQUEST_TIMEOUT)
        .build()
    {
        Ok(client) => client,
        Err(err) => {
            tracing::error!(error = %err, "no HTTP client for the instance metadata; interruption notices are not watched");
            return;
        }
    };
    tracing::info!(metadata.url = %base, interval_ms = interval.as_millis() as u64, "watching the instance metadata for interruption notices");
    let mut last_error: Option<String> = None;
    loop {
        match poll(&client, &base).await {
            Ok(Some(found)) => {
                tracing::warn!(action = %found.action, time = %found.time, "interruption notice: the instance is being reclaimed");
                let _ = notice.send(Some(found));
                return;
            }
            Ok(None) => last_error = None,
            Err(err) => {
                if last_error.as_deref() != Some(err.as_str()) {
                    tracing::warn!(metadata.url = %base, error = %err, "could not read the instance metadata; trying again");
                    last_error = Some(err);
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            // Nobody listens any more: the worker is stopping.
            _ = notice.closed() => return,
        }
    }
}

/// One poll: the notice, `None` when there is none (404).
///
/// # Errors
/// What went wrong, in words.
pub async fn poll(client: &reqwest::Client, base: &str) -> Result<Option<Interruption>, String> {
    let token = client
        .put(format!("{base}/latest/api/token"))
        .header(
            "X-aws-ec2-metadata-token-ttl-seconds",
            TOKEN_TTL_SECONDS.to_string(),
        )
        .send()
        .await
        .map_err(|e| format!("token: {e}"))?;
    if !token.status().is_success() {
        return Err(format!("token: HTTP {}", token.status()));
    }
    let token = token.text().await.map_err(|e| format!("token: {e}"))?;
    let answer = client
        .get(format!("{base}/latest/meta-data/spot/instance-action"))
        .header("X-aws-ec2-metadata-token", token.trim())
        .send()
        .await
        .map_err(|e| format!("spot/instance-action: {e}"))?;
    match answer.status().as_u16() {
        404 => Ok(None),
        200 => {
            let text = answer
                .text()
                .await
                .map_err(|e| format!("spot/instance-action: {e}"))?;
            serde_json::from_str::<Interruption>(&text)
                .map(Some)
                .map_err(|e| format!("spot/instance-action: {e}: {text:.200}"))
        }
        status => Err(format!("spot/instance-action: HTTP {status}")),
    }
}
