//! Events (CloudEvents 1.0) and webhooks: the wire types of `GET /v1/events` and
//! `/v1/webhooks`, and the event-type patterns webhooks subscribe with.
//!
//! Event types: `berth.job.submitted|started|ended|requeued|preempted|time_limit_warning|
//! held|released`, `berth.node.down|up|drained|resumed|gpu_fault`,
//! `berth.pool.launch|capacity_error|terminated`, `berth.scheduler.leader_changed`,
//! `berth.reservation.started|ended`, and `berth.webhook.test` (sent by
//! `POST /v1/webhooks/{id}/test` only).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Every event type Berth writes.
pub const EVENT_TYPES: &[&str] = &[
    "berth.job.submitted",
    "berth.job.started",
    "berth.job.ended",
    "berth.job.requeued",
    "berth.job.preempted",
    "berth.job.time_limit_warning",
    "berth.job.held",
    "berth.job.released",
    "berth.node.down",
    "berth.node.up",
    "berth.node.drained",
    "berth.node.resumed",
    "berth.node.gpu_fault",
    "berth.pool.launch",
    "berth.pool.capacity_error",
    "berth.pool.terminated",
    "berth.scheduler.leader_changed",
    "berth.reservation.started",
    "berth.reservation.ended",
];

/// The type of the event a webhook test sends.
pub const TEST_EVENT_TYPE: &str = "berth.webhook.test";

/// Whether `pattern` (an exact type, a prefix ending in `.*` such as `berth.job.*`, or
/// `*`) matches event type `event_type`.
pub fn type_matches(pattern: &str, event_type: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    match pattern.strip_suffix('*') {
        Some(prefix) if prefix.ends_with('.') => event_type.starts_with(prefix),
        _ => pattern == event_type,
    }
}

/// Checks a subscription pattern: `*`, a known type, or a prefix of known types ending
/// in `.*` (`berth.job.*`).
///
/// # Errors
/// A message naming the pattern when it matches no event type.
pub fn check_type_pattern(pattern: &str) -> Result<(), String> {
    if pattern == TEST_EVENT_TYPE || EVENT_TYPES.iter().any(|t| type_matches(pattern, t)) {
        if pattern.contains('*') && !(pattern == "*" || pattern.ends_with(".*")) {
            return Err(format!(
                "{pattern:?}: a wildcard only ends a pattern (`berth.job.*`)"
            ));
        }
        return Ok(());
    }
    Err(format!(
        "{pattern:?} matches no event type (berth.job.*, berth.node.*, berth.pool.*, \
         berth.scheduler.*, berth.reservation.* or one of their types)"
    ))
}

/// One event, as CloudEvents 1.0 (JSON format) with Berth's extension attributes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CloudEvent {
    /// `1.0`.
    pub specversion: String,
    /// The event's id (a decimal number; unique within this cluster).
    pub id: String,
    /// `/berth`.
    pub source: String,
    /// `berth.job.ended`, … (see the module documentation).
    #[serde(rename = "type")]
    pub event_type: String,
    /// What it is about: `jobs/123`, `nodes/gpu-7`, `pools/burst`, `scheduler/scheduler`,
    /// `reservations/maint`.
    pub subject: String,
    /// When it happened (RFC 3339).
    pub time: DateTime<Utc>,
    /// `application/json`.
    pub datacontenttype: String,
    /// What changed: for jobs `job_id`, `name`, `user`, `account`, `partition`, `state`,
    /// `reason`, `exit_code`, `exit_signal`, `restart_count`, …; for nodes `node`,
    /// `state`, `previous_state`, `reason`, `pool`.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

/// `GET /v1/events` (JSON): a page of events.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EventList {
    /// The events, in the order the stream serves them (commit-safe order: not always
    /// ascending ids).
    pub items: Vec<CloudEvent>,
    /// The `after` of the next page (the last event's id); `None` when this page was not
    /// full.
    pub next_cursor: Option<String>,
}

/// `GET /v1/events` filters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EventQuery {
    /// Only events after this one (an event id; `Last-Event-ID` does the same for a
    /// stream). Without it a list starts at the oldest event and a stream at the newest.
    pub after: Option<String>,
    /// Page size, 1..=1000 (default 100; lists only).
    pub limit: Option<u32>,
    /// Only these types (comma-separated; `berth.job.*` patterns allowed).
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub event_type: Option<String>,
    /// Only events about this subject (`jobs/123`, `nodes/gpu-7`).
    pub subject: Option<String>,
}

/// `POST /v1/webhooks`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookCreate {
    /// Where to POST events (`https://…`; `http://` too).
    pub url: String,
    /// The event types to receive: exact types, `berth.job.*`-style prefixes or `*`.
    pub events: Vec<String>,
    /// Only events of jobs of these accounts (empty: any).
    #[serde(default)]
    pub accounts: Vec<String>,
    /// Only events of jobs in these partitions (empty: any).
    #[serde(default)]
    pub partitions: Vec<String>,
    /// Only events of these jobs (empty: any).
    #[serde(default)]
    pub jobs: Vec<i64>,
    /// Only events of these nodes (empty: any).
    #[serde(default)]
    pub nodes: Vec<String>,
    /// The signing secret (Standard Webhooks: `whsec_` and the base64 of 24 to 64 random
    /// bytes); one is generated when absent. Shown once, in the answer to this call.
    pub secret: Option<String>,
    /// A note for the owner.
    #[serde(default)]
    pub description: String,
}

/// `PATCH /v1/webhooks/{id}`: re-enable (or disable) a webhook.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookUpdate {
    /// `true` re-enables a webhook that was disabled after sustained failure (its failure
    /// count starts again); `false` pauses it.
    pub enabled: Option<bool>,
}

/// A webhook (never with its secret, except in the answer to its creation).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Webhook {
    /// The id.
    pub id: i64,
    /// Who made it (it receives only what they may see).
    pub owner: String,
    /// The endpoint.
    pub url: String,
    /// The subscribed types and patterns.
    pub events: Vec<String>,
    /// Account filter (empty: any).
    pub accounts: Vec<String>,
    /// Partition filter (empty: any).
    pub partitions: Vec<String>,
    /// Job filter (empty: any).
    pub jobs: Vec<i64>,
    /// Node filter (empty: any).
    pub nodes: Vec<String>,
    /// The owner's note.
    pub description: String,
    /// False once disabled after sustained failure (or paused by its owner).
    pub enabled: bool,
    /// Why it was disabled.
    pub disabled_reason: Option<String>,
    /// Failed attempts in a row.
    pub consecutive_failures: i32,
    /// When the current run of failures began.
    pub failing_since: Option<DateTime<Utc>>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// The signing secret: only in the answer to `POST /v1/webhooks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// `GET /v1/webhooks`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookList {
    /// The caller's webhooks (every webhook for admins).
    pub items: Vec<Webhook>,
}

/// One attempt at a delivery.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookAttempt {
    /// 1, 2, …
    pub attempt: i32,
    /// When it was made.
    pub at: DateTime<Utc>,
    /// The endpoint's HTTP status (`None`: no answer).
    pub status: Option<i32>,
    /// What went wrong.
    pub error: Option<String>,
    /// How long it took, milliseconds.
    pub duration_ms: i64,
}

/// One event's delivery to one webhook.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookDelivery {
    /// The delivery's id (for redelivery).
    pub id: i64,
    /// The webhook.
    pub webhook_id: i64,
    /// The event (`None` for a test).
    pub event_id: Option<i64>,
    /// Its type.
    pub event_type: String,
    /// The `webhook-id` header it is sent with (the same on every attempt).
    pub message_id: String,
    /// `pending` (to be sent or retried), `delivered`, `failed` (gave up).
    pub state: String,
    /// Attempts so far.
    pub attempts: i32,
    /// When the next attempt is due (pending only).
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The last answer's HTTP status.
    pub last_status: Option<i32>,
    /// The last error.
    pub last_error: Option<String>,
    /// When it was delivered.
    pub delivered_at: Option<DateTime<Utc>>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// Its attempts, oldest first.
    pub attempt_log: Vec<WebhookAttempt>,
}

/// `GET /v1/webhooks/{id}/deliveries`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookDeliveryList {
    /// Newest first.
    pub items: Vec<WebhookDelivery>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_types_and_prefixes() {
        assert!(type_matches("berth.job.*", "berth.job.ended"));
        assert!(!type_matches("berth.job.*", "berth.node.down"));
        assert!(type_matches("*", "berth.node.down"));
        assert!(type_matches("berth.job.ended", "berth.job.ended"));
        assert!(!type_matches("berth.job.end", "berth.job.ended"));
        assert!(check_type_pattern("berth.job.*").is_ok());
        assert!(check_type_pattern("berth.node.gpu_fault").is_ok());
        assert!(check_type_pattern("berth.jobs.*").is_err());
        assert!(check_type_pattern("berth.*.ended").is_err());
    }
}
