//! Webhooks: `/v1/webhooks` (create, list, show, re-enable, delete, test, deliveries,
//! redelivery) and the reconciler that delivers events to them, in every api replica.
//!
//! Delivery goes through an outbox ([`berth_db::webhook`]):
//! * the dispatcher, under the lock of the one cursor row, reads events after the cursor
//!   in commit-safe order ([`berth_db::event`]) and writes one delivery per (webhook,
//!   event) the webhook wants and its owner may see (a unique key: nothing is made twice);
//! * senders claim due deliveries (`FOR UPDATE SKIP LOCKED`, with a lease), POST them and
//!   record the attempt. A replica killed mid-delivery leaves a claimed delivery whose
//!   lease runs out; another replica (or the restarted one) sends it again with the same
//!   `webhook-id`, which receivers use to drop repeats.
//!
//! Requests follow Standard Webhooks (<https://www.standardwebhooks.com/>): headers
//! `webhook-id` (the delivery's message id), `webhook-timestamp` (Unix seconds) and
//! `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, keyed with
//! the base64-decoded part of the `whsec_…` secret. The body is the CloudEvent (JSON).
//!
//! Failures are retried with exponential backoff (`[webhooks] retry_base_seconds`, doubling
//! up to `retry_max_seconds`) until `retry_for_hours` (default 26) after the delivery was
//! made; a webhook whose deliveries have all failed, without a success in between, for
//! `disable_after_hours` (default 72: three days, as Stripe and Svix do) is disabled
//! (`PATCH {"enabled": true}` re-enables it). A short outage during a burst of events
//! fails many attempts in a row but never disables it; `disable_after_failures` (default
//! 0: off) also disables after that many failed attempts in a row.
//!
//! Requests to loopback, private, link-local (cloud metadata) and other non-public
//! addresses are refused for webhooks of users and operators, checked on the addresses
//! the name resolves to when the request is made (no redirects are followed, no proxy is
//! used), unless `[webhooks] allow_private_networks` is set. Secrets are never logged and
//! never returned after creation.

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::events::{cloud_event, POLL_INTERVAL};
use crate::AppState;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use berth_core::auth::Role;
use berth_core::event::{
    check_type_pattern, type_matches, CloudEvent, Webhook, WebhookAttempt, WebhookCreate,
    WebhookDelivery, WebhookDeliveryList, WebhookList, WebhookUpdate, TEST_EVENT_TYPE,
};
use berth_core::wire::Problem;
use berth_db::event::{self as db_event, EventFilter, EventRow};
use berth_db::webhook::{
    self as db, AttemptOutcome, ClaimedDelivery, DeliveryRow, DisablePolicy, NewDelivery,
    NewWebhook, WebhookRow,
};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `[webhooks]` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookSettings {
    /// Deliver to loopback, private and link-local addresses for everyone (development
    /// and tests; `berth dev` sets it). Admins' webhooks may always.
    pub allow_private_networks: bool,
    /// The first retry's delay; each later one doubles it.
    pub retry_base: Duration,
    /// The longest delay between two attempts.
    pub retry_max: Duration,
    /// How long after it was made a delivery is retried.
    pub retry_for: Duration,
    /// How long one attempt may take.
    pub timeout: Duration,
    /// Disable a webhook after this many failed attempts in a row (0, the default: never
    /// for a count alone).
    pub disable_after_failures: u32,
    /// Disable a webhook that has failed continuously (no success in between) for this
    /// long (default 3 days).
    pub disable_after: Duration,
}

impl Default for WebhookSettings {
    /// Private networks refused; retries after 5 s, 10 s, … up to 2 h apart for 26 h;
    /// 10 s per attempt; disabled after 3 days of failing continuously.
    fn default() -> Self {
        WebhookSettings {
            allow_private_networks: false,
            retry_base: Duration::from_secs(5),
            retry_max: Duration::from_secs(2 * 3600),
            retry_for: Duration::from_secs(26 * 3600),
            timeout: Duration::from_secs(10),
            disable_after_failures: 0,
            disable_after: Duration::from_secs(72 * 3600),
        }
    }
}

impl WebhookSettings {
    /// The lease a sender takes on a delivery: an attempt's timeout and a margin.
    fn lease(&self) -> Duration {
        self.timeout + Duration::from_secs(5)
    }

    /// The delay before attempt `attempts + 1` after `attempts` failed: the base doubled
    /// per earlier failure, at most `retry_max`, plus up to a tenth of jitter.
    pub fn retry_delay(&self, attempts: i32) -> Duration {
        let doublings = attempts.saturating_sub(1).clamp(0, 30) as u32;
        let delay = self
            .retry_base
            .saturating_mul(1u32 << doublings)
            .min(self.retry_max);
        delay + delay.mul_f64(rand::random::<f64>() / 10.0)
    }
}

/// The prefix of Standard Webhooks secrets.
pub const SECRET_PREFIX: &str = "whsec_";

/// A new secret: `whsec_` and the base64 of 32 random bytes.
pub fn generate_secret() -> String {
    let key: [u8; 32] = rand::random();
    format!("{SECRET_PREFIX}{}", BASE64.encode(key))
}

/// Checks a given secret (`whsec_` optional, then the base64 of 24 to 64 bytes) and
/// returns it with its prefix.
///
/// # Errors
/// What is wrong with it.
pub fn normalize_secret(secret: &str) -> Result<String, String> {
    let b64 = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    let key = BASE64.decode(b64).map_err(|_| {
        "a Standard Webhooks secret is `whsec_` and base64 (leave it out to have one generated)"
            .to_string()
    })?;
    if !(24..=64).contains(&key.len()) {
        return Err(format!(
            "the secret's key is {} bytes; it must be 24 to 64",
            key.len()
        ));
    }
    Ok(format!("{SECRET_PREFIX}{b64}"))
}

/// The `webhook-signature` of a message: `v1,` and the base64 HMAC-SHA256 of
/// `{id}.{timestamp}.{body}` keyed with the secret's decoded bytes. `None` for a secret
/// that does not decode.
pub fn sign(secret: &str, message_id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let b64 = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    let key = BASE64.decode(b64).ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(message_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(format!("v1,{}", BASE64.encode(mac.finalize().into_bytes())))
}

/// The IPv4 address an IPv6 address carries, for every form that embeds one: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`, RFC 2765), IPv4-compatible
/// (`::a.b.c.d`), NAT64's well-known prefix (`64:ff9b::a.b.c.d`, RFC 6052), 6to4
/// (`2002:AABB:CCDD::/48`, RFC 3056) and Teredo (`2001:0::/32`, the client's address in
/// the last 32 bits, inverted: RFC 4380). Such an address reaches that IPv4 host, so it
/// is judged as that host.
pub fn embedded_ipv4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| {
        std::net::Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
    };
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo]
        | [0, 0, 0, 0, 0xffff, 0, hi, lo]
        | [0, 0, 0, 0, 0, 0, hi, lo]
        | [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(v4(hi, lo)),
        [0x2002, hi, lo, ..] => Some(v4(hi, lo)),
        [0x2001, 0, _, _, _, _, hi, lo] => Some(v4(!hi, !lo)),
        _ => None,
    }
}

/// Whether `ip` is a public unicast address: not loopback, private (RFC 1918, unique
/// local), link-local (169.254.0.0/16 holds cloud metadata services), shared (100.64/10),
/// unspecified, broadcast, multicast, documentation or reserved. An IPv6 address that
/// embeds an IPv4 address ([`embedded_ipv4`]) is judged as that IPv4 address; NAT64's
/// local-use prefix (`64:ff9b:1::/48`) is never public.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_unspecified()
                || v4.is_documentation()
                || o[0] == 0
                || o[0] >= 224
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                || (o[0] == 192 && o[1] == 0 && o[2] == 0))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_ipv4(v6) {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || (s[0] == 0x64 && s[1] == 0xff9b))
        }
    }
}

/// A resolver that keeps only public addresses: a name that resolves to none fails.
struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| is_public(a.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(format!(
                    "{host} resolves to no public address (Berth does not deliver webhooks to \
                     loopback, private or link-local addresses)"
                )
                .into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The literal IP address of a URL's host, if it is one.
fn literal_ip(url: &reqwest::Url) -> Option<IpAddr> {
    url.host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Admin => "admin",
        Role::Operator => "operator",
        _ => "user",
    }
}

fn private_allowed(settings: &WebhookSettings, owner_role: &str) -> bool {
    settings.allow_private_networks || owner_role == "admin"
}

fn webhook_view(row: &WebhookRow) -> Webhook {
    Webhook {
        id: row.id,
        owner: row.owner.clone(),
        url: row.url.clone(),
        events: row.event_types.clone(),
        accounts: row.accounts.clone(),
        partitions: row.partitions.clone(),
        jobs: row.job_ids.clone(),
        nodes: row.nodes.clone(),
        description: row.description.clone(),
        enabled: row.enabled,
        disabled_reason: row.disabled_reason.clone(),
        consecutive_failures: row.consecutive_failures,
        failing_since: row.failing_since,
        created_at: row.created_at,
        secret: None,
    }
}

fn delivery_view(row: &DeliveryRow, attempts: &[db::AttemptRow]) -> WebhookDelivery {
    WebhookDelivery {
        id: row.id,
        webhook_id: row.webhook_id,
        event_id: row.event_id,
        event_type: row.event_type.clone(),
        message_id: row.message_id.clone(),
        state: row.state.clone(),
        attempts: row.attempts,
        next_attempt_at: (row.state == "pending").then_some(row.next_attempt_at),
        last_status: row.last_status,
        last_error: row.last_error.clone(),
        delivered_at: row.delivered_at,
        created_at: row.created_at,
        attempt_log: attempts
            .iter()
            .filter(|a| a.delivery_id == row.id)
            .map(|a| WebhookAttempt {
                attempt: a.attempt,
                at: a.at,
                status: a.status,
                error: a.error.clone(),
                duration_ms: a.duration_ms,
            })
            .collect(),
    }
}

/// A new message id (`webhook-id`): `msg_` and a random UUID.
fn message_id() -> String {
    format!("msg_{}", uuid::Uuid::new_v4().simple())
}

/// The caller's webhook `id` (any webhook for admins); others' are 404.
async fn own_webhook(state: &AppState, caller: &Caller, id: i64) -> Result<WebhookRow, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    match db::webhook_get(&state.pool, id).await? {
        Some(row) if caller.role == Role::Admin || row.owner == caller.name => Ok(row),
        _ => Err(ApiError::NotFound(format!("no webhook {id}"))),
    }
}

/// Create a webhook.
///
/// Events of the given types (exact, `berth.job.*` or `*`) that the caller may see, and
/// that match the account, partition, job and node filters, are POSTed to `url` as
/// CloudEvents, signed as Standard Webhooks says. The answer holds the secret; it is
/// never shown again.
#[utoipa::path(post, path = "/v1/webhooks", tag = "webhooks", operation_id = "webhook_create",
    request_body = WebhookCreate,
    responses((status = 201, description = "The webhook, with its secret", body = Webhook),
              (status = 400, description = "A bad URL, event type or secret", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not allowed", body = Problem)),
    security(("bearer" = [])))]
pub async fn webhook_create(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<WebhookCreate>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    let Json(req) = body.map_err(|e| rejection("JSON body", e.body_text()))?;
    let url = reqwest::Url::parse(req.url.trim())
        .map_err(|e| ApiError::bad_field("url", format!("not a URL: {e}")))?;
    if !matches!(url.scheme(), "https" | "http") || url.host_str().is_none() {
        return Err(ApiError::bad_field(
            "url",
            "must be an https:// (or http://) URL",
        ));
    }
    if req.url.len() > 2048 {
        return Err(ApiError::bad_field("url", "longer than 2048 characters"));
    }
    let role = role_name(caller.role);
    if !private_allowed(&state.events.webhooks, role) {
        if let Some(ip) = literal_ip(&url).filter(|ip| !is_public(*ip)) {
            return Err(ApiError::bad_field(
                "url",
                format!(
                    "{ip} is not a public address: Berth does not deliver webhooks to \
                     loopback, private or link-local addresses"
                ),
            ));
        }
    }
    if req.events.is_empty() {
        return Err(ApiError::bad_field(
            "events",
            "name at least one event type (`berth.job.ended`, `berth.job.*`, `*`)",
        ));
    }
    for t in &req.events {
        check_type_pattern(t).map_err(|e| ApiError::bad_field("events", e))?;
    }
    let secret = match &req.secret {
        Some(s) => normalize_secret(s).map_err(|e| ApiError::bad_field("secret", e))?,
        None => generate_secret(),
    };
    let row = db::webhook_insert(
        &state.pool,
        &NewWebhook {
            owner: &caller.name,
            owner_role: role,
            url: url.as_str(),
            event_types: &req.events,
            accounts: &req.accounts,
            partitions: &req.partitions,
            job_ids: &req.jobs,
            nodes: &req.nodes,
            description: &req.description,
            secret: &secret,
        },
    )
    .await?;
    tracing::info!(webhook.id = row.id, owner = %row.owner, "webhook created");
    state.events.webhooks_changed.store(true, Ordering::Relaxed);
    let mut view = webhook_view(&row);
    view.secret = Some(secret);
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

/// List webhooks (the caller's; every one for admins).
#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks", operation_id = "webhook_list",
    responses((status = 200, description = "The webhooks", body = WebhookList),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not allowed", body = Problem)),
    security(("bearer" = [])))]
pub async fn webhook_list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<WebhookList>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    let owner = (caller.role != Role::Admin).then_some(caller.name.as_str());
    let rows = db::webhook_list(&state.pool, owner).await?;
    Ok(Json(WebhookList {
        items: rows.iter().map(webhook_view).collect(),
    }))
}

/// Show a webhook (without its secret).
#[utoipa::path(get, path = "/v1/webhooks/{id}", tag = "webhooks", operation_id = "webhook_get",
    params(("id" = i64, Path, description = "Webhook id")),
    responses((status = 200, description = "The webhook", body = Webhook),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such webhook (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn webhook_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<Webhook>, ApiError> {
    let row = own_webhook(&state, &caller, id).await?;
    Ok(Json(webhook_view(&row)))
}

/// Re-enable (or pause) a webhook.
#[utoipa::path(patch, path = "/v1/webhooks/{id}", tag = "webhooks", operation_id = "webhook_update",
    params(("id" = i64, Path, description = "Webhook id")),
    request_body = WebhookUpdate,
    responses((status = 200, description = "The webhook", body = Webhook),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such webhook (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn webhook_update(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
    body: Result<Json<WebhookUpdate>, JsonRejection>,
) -> Result<Json<Webhook>, ApiError> {
    let row = own_webhook(&state, &caller, id).await?;
    let Json(req) = body.map_err(|e| rejection("JSON body", e.body_text()))?;
    let Some(enabled) = req.enabled else {
        return Ok(Json(webhook_view(&row)));
    };
    let row = db::webhook_set_enabled(&state.pool, id, enabled)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no webhook {id}")))?;
    state.events.webhooks_changed.store(true, Ordering::Relaxed);
    Ok(Json(webhook_view(&row)))
}

/// Delete a webhook (its pending deliveries are dropped).
#[utoipa::path(delete, path = "/v1/webhooks/{id}", tag = "webhooks", operation_id = "webhook_delete",
    params(("id" = i64, Path, description = "Webhook id")),
    responses((status = 204, description = "Deleted"),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such webhook (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn webhook_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    own_webhook(&state, &caller, id).await?;
    db::webhook_delete(&state.pool, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Send a test event (`berth.webhook.test`) to a webhook.
///
/// The delivery goes through the outbox like any other (see its deliveries).
#[utoipa::path(post, path = "/v1/webhooks/{id}/test", tag = "webhooks", operation_id = "webhook_test",
    params(("id" = i64, Path, description = "Webhook id")),
    responses((status = 202, description = "The test delivery, queued", body = WebhookDelivery),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such webhook (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn webhook_test(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Response, ApiError> {
    let row = own_webhook(&state, &caller, id).await?;
    let message = message_id();
    let event = CloudEvent {
        specversion: "1.0".into(),
        id: message.clone(),
        source: "/berth".into(),
        event_type: TEST_EVENT_TYPE.into(),
        subject: format!("webhooks/{id}"),
        time: chrono::Utc::now(),
        datacontenttype: "application/json".into(),
        data: serde_json::json!({ "webhook_id": id, "requested_by": caller.name }),
    };
    let payload = serde_json::to_value(&event).map_err(|e| ApiError::Internal(Box::new(e)))?;
    db::webhook_delivery_insert(
        &state.pool,
        &NewDelivery {
            webhook_id: row.id,
            event_id: None,
            event_type: TEST_EVENT_TYPE,
            message_id: &message,
            payload: &payload,
            retry_until: retry_until(&state.events.webhooks),
        },
    )
    .await?;
    let delivery = db::webhook_delivery_list(&state.pool, id, 20)
        .await?
        .into_iter()
        .find(|d| d.message_id == message)
        .ok_or_else(|| ApiError::NotFound(format!("no webhook {id}")))?;
    Ok((StatusCode::ACCEPTED, Json(delivery_view(&delivery, &[]))).into_response())
}

/// `GET /v1/webhooks/{id}/deliveries` filters.
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveryQuery {
    /// The most deliveries, newest first, 1..=1000 (default 100).
    pub limit: Option<u32>,
}

/// List a webhook's deliveries with their attempts (newest first).
#[utoipa::path(get, path = "/v1/webhooks/{id}/deliveries", tag = "webhooks",
    operation_id = "webhook_delivery_list",
    params(("id" = i64, Path, description = "Webhook id"), DeliveryQuery),
    responses((status = 200, description = "The deliveries", body = WebhookDeliveryList),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such webhook (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn webhook_delivery_list(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
    q: Result<Query<DeliveryQuery>, QueryRejection>,
) -> Result<Json<WebhookDeliveryList>, ApiError> {
    let q = q
        .map(|Query(v)| v)
        .map_err(|e| rejection("query", e.body_text()))?;
    own_webhook(&state, &caller, id).await?;
    let limit = i64::from(q.limit.unwrap_or(100));
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_field("limit", "must be between 1 and 1000"));
    }
    let rows = db::webhook_delivery_list(&state.pool, id, limit).await?;
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let attempts = db::webhook_attempt_list(&state.pool, &ids).await?;
    Ok(Json(WebhookDeliveryList {
        items: rows.iter().map(|r| delivery_view(r, &attempts)).collect(),
    }))
}

/// Send a delivery again now, with the same `webhook-id`.
#[utoipa::path(post, path = "/v1/webhooks/{id}/deliveries/{delivery}/redeliver", tag = "webhooks",
    operation_id = "webhook_redeliver",
    params(("id" = i64, Path, description = "Webhook id"),
           ("delivery" = i64, Path, description = "Delivery id")),
    responses((status = 202, description = "The delivery, queued again", body = WebhookDelivery),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such webhook or delivery (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn webhook_redeliver(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, delivery)): Path<(i64, i64)>,
) -> Result<Response, ApiError> {
    own_webhook(&state, &caller, id).await?;
    let row = db::webhook_delivery_redeliver(
        &state.pool,
        id,
        delivery,
        retry_until(&state.events.webhooks),
    )
    .await?
    .ok_or_else(|| ApiError::NotFound(format!("webhook {id} has no delivery {delivery}")))?;
    Ok((StatusCode::ACCEPTED, Json(delivery_view(&row, &[]))).into_response())
}

fn retry_until(settings: &WebhookSettings) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() + chrono::Duration::from_std(settings.retry_for).unwrap_or_default()
}

/// Whether webhook `h` wants event `e`: a subscribed type, made after the webhook, seen
/// by its owner (`coordinated`: the accounts a user owner coordinates), and through its
/// filters.
fn wants(h: &WebhookRow, e: &EventRow, coordinated: &[String]) -> bool {
    if e.time < h.created_at || !h.event_types.iter().any(|p| type_matches(p, &e.event_type)) {
        return false;
    }
    if h.owner_role == "user" && e.job_id.is_some() {
        let own = e.user_name.as_deref() == Some(h.owner.as_str());
        let coordinates = e.account.as_ref().is_some_and(|a| coordinated.contains(a));
        if !own && !coordinates {
            return false;
        }
    }
    let within = |filter: &[String], value: &Option<String>| {
        filter.is_empty() || value.as_ref().is_some_and(|v| filter.contains(v))
    };
    within(&h.accounts, &e.account)
        && within(&h.partitions, &e.partition)
        && within(&h.nodes, &e.node)
        && (h.job_ids.is_empty() || e.job_id.is_some_and(|j| h.job_ids.contains(&j)))
}

/// Turns the events after the dispatcher's cursor into deliveries; returns how many
/// events it read (a full batch: call again). The events come from this process's shared
/// reader ([`crate::event_feed`]) when its cursor is within what the reader keeps, else
/// from the database.
async fn dispatch(
    pool: &berth_db::Pool,
    settings: &WebhookSettings,
    feed: &crate::event_feed::Feed,
) -> Result<usize, ApiError> {
    const BATCH: usize = 500;
    let mut tx = berth_db::begin(pool).await?;
    let cursor = db::webhook_dispatch_lock_in_tx(&mut tx).await?;
    let events: Vec<Arc<EventRow>> = match feed.after(cursor, BATCH) {
        Some((events, _)) => events,
        None => db_event::event_list(
            &mut *tx,
            &EventFilter {
                after: cursor,
                limit: BATCH as i64,
                ..Default::default()
            },
        )
        .await?
        .into_iter()
        .map(Arc::new)
        .collect(),
    };
    let Some(last) = events.last() else {
        return Ok(0);
    };
    let last = (last.xid, last.id);
    // Owners' current roles, and no deliveries for a deleted owner.
    db::webhook_follow_owners_in_tx(&mut tx).await?;
    let hooks: Vec<WebhookRow> = db::webhook_list(&mut *tx, None)
        .await?
        .into_iter()
        .filter(|h| h.enabled)
        .collect();
    let mut coordinated: HashMap<String, Vec<String>> = HashMap::new();
    for h in hooks.iter().filter(|h| h.owner_role == "user") {
        if !coordinated.contains_key(&h.owner) {
            let accounts =
                berth_db::membership::membership_coordinated_accounts(&mut *tx, &h.owner).await?;
            coordinated.insert(h.owner.clone(), accounts);
        }
    }
    let until = retry_until(settings);
    let mut made = 0;
    for e in &events {
        for h in &hooks {
            let none = Vec::new();
            if !wants(h, e, coordinated.get(&h.owner).unwrap_or(&none)) {
                continue;
            }
            let payload = serde_json::to_value(cloud_event(e)).unwrap_or_default();
            if db::webhook_delivery_insert(
                &mut *tx,
                &NewDelivery {
                    webhook_id: h.id,
                    event_id: Some(e.id),
                    event_type: &e.event_type,
                    message_id: &message_id(),
                    payload: &payload,
                    retry_until: until,
                },
            )
            .await?
            {
                made += 1;
            }
        }
    }
    db::webhook_dispatch_set_in_tx(&mut tx, last).await?;
    tx.commit().await.map_err(berth_db::DbError::from)?;
    if made > 0 {
        tracing::debug!(deliveries = made, "webhook deliveries queued");
    }
    Ok(events.len())
}

/// The two HTTP clients of senders: one that reaches only public addresses, one that
/// reaches any (for admins' webhooks and where private networks are allowed).
struct Senders {
    public: reqwest::Client,
    any: reqwest::Client,
}

impl Senders {
    fn new(settings: &WebhookSettings) -> Result<Senders, reqwest::Error> {
        let base = || {
            reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(settings.timeout)
                .connect_timeout(settings.timeout.min(Duration::from_secs(5)))
                .user_agent(concat!("Berth-Webhooks/", env!("CARGO_PKG_VERSION")))
        };
        Ok(Senders {
            public: base().dns_resolver(Arc::new(PublicOnly)).build()?,
            any: base().build()?,
        })
    }
}

/// An error and its causes, on one line.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// Makes one attempt at a claimed delivery.
async fn attempt(
    senders: &Senders,
    settings: &WebhookSettings,
    d: &ClaimedDelivery,
) -> AttemptOutcome {
    let started = Instant::now();
    let fail = |status: Option<i32>, error: String| AttemptOutcome {
        status,
        error: Some(error),
        duration_ms: started.elapsed().as_millis() as i64,
        retry_at: chrono::Utc::now()
            + chrono::Duration::from_std(settings.retry_delay(d.attempts)).unwrap_or_default(),
    };
    let url = match reqwest::Url::parse(&d.url) {
        Ok(u) => u,
        Err(e) => return fail(None, format!("bad URL: {e}")),
    };
    let private_ok = private_allowed(settings, &d.owner_role);
    if !private_ok {
        if let Some(ip) = literal_ip(&url).filter(|ip| !is_public(*ip)) {
            return fail(
                None,
                format!(
                    "refused: {ip} is not a public address (Berth does not deliver webhooks to \
                     loopback, private or link-local addresses)"
                ),
            );
        }
    }
    let body = serde_json::to_vec(&d.payload).unwrap_or_default();
    let timestamp = chrono::Utc::now().timestamp();
    let Some(signature) = sign(&d.secret, &d.message_id, timestamp, &body) else {
        return fail(None, "the webhook's secret does not decode".into());
    };
    let client = if private_ok {
        &senders.any
    } else {
        &senders.public
    };
    let result = client
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &d.message_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body)
        .send()
        .await;
    match result {
        Ok(response) => {
            let status = response.status();
            if status.is_success() {
                AttemptOutcome {
                    status: Some(i32::from(status.as_u16())),
                    error: None,
                    duration_ms: started.elapsed().as_millis() as i64,
                    retry_at: chrono::Utc::now(),
                }
            } else {
                fail(
                    Some(i32::from(status.as_u16())),
                    format!("the endpoint answered {status}"),
                )
            }
        }
        Err(e) => fail(None, error_chain(&e.without_url())),
    }
}

/// Claims due deliveries and sends them, concurrently; returns how many it claimed.
async fn send_due(
    pool: &berth_db::Pool,
    senders: &Senders,
    settings: &WebhookSettings,
    me: &str,
) -> Result<usize, ApiError> {
    const BATCH: i64 = 16;
    let claimed =
        db::webhook_delivery_claim(pool, me, settings.lease().as_secs_f64(), BATCH).await?;
    let outcomes =
        futures_util::future::join_all(claimed.iter().map(|d| attempt(senders, settings, d))).await;
    let policy = DisablePolicy {
        after_failures: i32::try_from(settings.disable_after_failures).unwrap_or(i32::MAX),
        after_seconds: settings.disable_after.as_secs_f64(),
    };
    for (d, outcome) in claimed.iter().zip(&outcomes) {
        match &outcome.error {
            None => tracing::debug!(
                webhook.id = d.webhook_id,
                delivery.id = d.id,
                "webhook delivered"
            ),
            Some(error) => tracing::info!(webhook.id = d.webhook_id, delivery.id = d.id,
                attempt = d.attempts, %error, "webhook delivery failed"),
        }
        let mut tx = berth_db::begin(pool).await?;
        db::webhook_delivery_finish_in_tx(&mut tx, d.id, d.attempts, outcome, policy).await?;
        tx.commit().await.map_err(berth_db::DbError::from)?;
    }
    Ok(claimed.len())
}

/// How long the dispatcher trusts its answer to "is any webhook enabled?".
const ENABLED_TTL: Duration = Duration::from_secs(2);

/// How often the dispatcher's cursor moves while no webhook is enabled.
const IDLE_DISPATCH: Duration = Duration::from_secs(10);

/// The webhook reconciler of one api replica: the dispatcher (woken by new events, and
/// every second), the reservation boundary writer, and the senders. Runs until the
/// process ends; each failed round is retried by the next.
pub(crate) async fn run(pool: berth_db::Pool, hub: crate::events::EventHub) {
    let settings = hub.webhooks.clone();
    let senders = match Senders::new(&settings) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "webhook senders cannot start");
            return;
        }
    };
    let me = format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple());
    let send_wake = Arc::new(tokio::sync::Notify::new());
    tokio::spawn({
        let pool = pool.clone();
        let settings = settings.clone();
        let send_wake = send_wake.clone();
        async move {
            loop {
                match send_due(&pool, &senders, &settings, &me).await {
                    Ok(n) if n > 0 => continue,
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "sending webhooks failed; retrying"),
                }
                tokio::select! {
                    () = send_wake.notified() => {}
                    () = tokio::time::sleep(POLL_INTERVAL) => {}
                }
            }
        }
    });
    // Woken when the shared reader has read new events.
    let mut published = hub.feed.subscribe();
    let mut last_boundaries = Instant::now() - Duration::from_secs(60);
    // Whether any webhook is enabled, as last asked (and when); while none is, new events
    // cost no dispatch: the cursor only moves every `IDLE_DISPATCH` (a webhook made
    // meanwhile still gets every event from its creation on, see `wants`).
    let mut any_enabled: Option<(Instant, bool)> = None;
    let mut last_dispatch = Instant::now() - IDLE_DISPATCH;
    loop {
        if last_boundaries.elapsed() >= Duration::from_secs(5) {
            last_boundaries = Instant::now();
            if let Err(e) = crate::events::reservation_boundaries(&pool, chrono::Utc::now()).await {
                tracing::warn!(error = %e, "writing reservation events failed; retrying");
            }
        }
        published.borrow_and_update();
        if hub.webhooks_changed.swap(false, Ordering::Relaxed) {
            any_enabled = None;
        }
        let enabled = match any_enabled {
            Some((at, enabled)) if at.elapsed() < ENABLED_TTL => enabled,
            _ => {
                let enabled = db::webhook_any_enabled(&pool).await.unwrap_or(true);
                any_enabled = Some((Instant::now(), enabled));
                enabled
            }
        };
        let idle = !enabled && last_dispatch.elapsed() < IDLE_DISPATCH;
        if idle {
            tokio::select! {
                _ = published.changed() => {}
                () = tokio::time::sleep(POLL_INTERVAL) => {}
            }
            continue;
        }
        loop {
            last_dispatch = Instant::now();
            match dispatch(&pool, &settings, &hub.feed).await {
                Ok(n) => {
                    if n > 0 {
                        send_wake.notify_one();
                    }
                    if n < 500 {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "dispatching webhooks failed; retrying");
                    break;
                }
            }
        }
        tokio::select! {
            _ = published.changed() => {}
            () = tokio::time::sleep(POLL_INTERVAL) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's example: secret
    /// `whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw`, id `msg_p5jXN8AQM9LWM0D4loKWxJek`,
    /// timestamp 1614265330, body `{"test": 2432232314}`.
    #[test]
    fn signature_matches_the_specification_example() {
        let sig = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(
            sig.as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
    }

    #[test]
    fn secrets_are_checked_and_generated() {
        let s = generate_secret();
        assert!(s.starts_with("whsec_"));
        assert_eq!(normalize_secret(&s).unwrap(), s);
        assert!(normalize_secret("whsec_c2hvcnQ=").is_err());
        assert!(normalize_secret("not base64!").is_err());
    }

    #[test]
    fn private_and_metadata_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "::7f00:1",
            "::a00:1",
            // Every IPv4-embedding form of a loopback, private or metadata address.
            "::ffff:0:127.0.0.1",
            "::ffff:0:a9fe:a9fe",
            "::ffff:0:10.0.0.1",
            "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::a00:1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::1",
            "2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo, client 127.0.0.1
            "2001:0:4136:e378:8000:63bf:5601:5601", // Teredo, client 169.254.169.254
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "2606:4700::1111",
            "::ffff:93.184.216.34",
            "::ffff:0:93.184.216.34",
            "64:ff9b::93.184.216.34",
            "2002:5db8:d822::1",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
        assert_eq!(
            embedded_ipv4("::ffff:0:1.2.3.4".parse().unwrap()),
            Some("1.2.3.4".parse().unwrap())
        );
        assert_eq!(
            embedded_ipv4("2001:0:4136:e378:8000:63bf:80ff:fffe".parse().unwrap()),
            Some("127.0.0.1".parse().unwrap())
        );
    }

    #[test]
    fn retries_back_off_exponentially_up_to_the_maximum() {
        let s = WebhookSettings::default();
        let d1 = s.retry_delay(1);
        let d3 = s.retry_delay(3);
        assert!(d1 >= Duration::from_secs(5) && d1 <= Duration::from_millis(5500));
        assert!(d3 >= Duration::from_secs(20) && d3 <= Duration::from_secs(22));
        assert!(s.retry_delay(40) <= Duration::from_secs(2 * 3600 + 720));
    }
}
