//! Webhooks, their outbox (`webhook_deliveries`), the delivery log (`webhook_attempts`)
//! and the dispatcher's cursor (`webhook_dispatch`).
//!
//! The dispatcher turns events into deliveries (one per webhook and event: a unique key,
//! so a dispatcher that runs twice over the same events makes nothing twice) under the
//! lock of the one cursor row; senders claim due deliveries with `FOR UPDATE SKIP LOCKED`
//! and a lease, so a sender that dies mid-delivery leaves a delivery that another (or the
//! restarted one) claims again once the lease runs out, with the same `webhook-id`.

use crate::event::EventCursor;
use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};

/// A webhook as stored.
#[derive(Debug, Clone)]
pub struct WebhookRow {
    /// The id.
    pub id: i64,
    /// Its creator.
    pub owner: String,
    /// The creator's role then (`admin`, `operator`, `user`).
    pub owner_role: String,
    /// The endpoint.
    pub url: String,
    /// Subscribed types and patterns.
    pub event_types: Vec<String>,
    /// Account filter.
    pub accounts: Vec<String>,
    /// Partition filter.
    pub partitions: Vec<String>,
    /// Job filter.
    pub job_ids: Vec<i64>,
    /// Node filter.
    pub nodes: Vec<String>,
    /// The owner's note.
    pub description: String,
    /// `whsec_…`.
    pub secret: String,
    /// Whether deliveries are sent.
    pub enabled: bool,
    /// Why it was disabled.
    pub disabled_reason: Option<String>,
    /// Failed attempts in a row.
    pub consecutive_failures: i32,
    /// When the current run of failures began.
    pub failing_since: Option<DateTime<Utc>>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

/// A new webhook.
#[derive(Debug, Clone)]
pub struct NewWebhook<'a> {
    /// Its creator.
    pub owner: &'a str,
    /// The creator's role.
    pub owner_role: &'a str,
    /// The endpoint.
    pub url: &'a str,
    /// Subscribed types and patterns.
    pub event_types: &'a [String],
    /// Account filter.
    pub accounts: &'a [String],
    /// Partition filter.
    pub partitions: &'a [String],
    /// Job filter.
    pub job_ids: &'a [i64],
    /// Node filter.
    pub nodes: &'a [String],
    /// The owner's note.
    pub description: &'a str,
    /// `whsec_…`.
    pub secret: &'a str,
}

/// Stores a webhook.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_insert(
    ex: impl PgExecutor<'_>,
    new: &NewWebhook<'_>,
) -> Result<WebhookRow, DbError> {
    Ok(sqlx::query_as!(
        WebhookRow,
        r#"INSERT INTO webhooks (owner, owner_role, url, event_types, accounts, partitions,
                                 job_ids, nodes, description, secret, owner_recorded)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
                   EXISTS (SELECT 1 FROM users u WHERE u.name = $1))
           RETURNING id, owner, owner_role, url, event_types, accounts, partitions, job_ids,
                     nodes, description, secret, enabled, disabled_reason,
                     consecutive_failures, failing_since, created_at"#,
        new.owner,
        new.owner_role,
        new.url,
        new.event_types,
        new.accounts,
        new.partitions,
        new.job_ids,
        new.nodes,
        new.description,
        new.secret,
    )
    .fetch_one(ex)
    .await?)
}

/// Webhooks of `owner` (every webhook when `None`), oldest first.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_list(
    ex: impl PgExecutor<'_>,
    owner: Option<&str>,
) -> Result<Vec<WebhookRow>, DbError> {
    Ok(sqlx::query_as!(
        WebhookRow,
        r#"SELECT id, owner, owner_role, url, event_types, accounts, partitions, job_ids,
                  nodes, description, secret, enabled, disabled_reason,
                  consecutive_failures, failing_since, created_at
           FROM webhooks WHERE $1::text IS NULL OR owner = $1 ORDER BY id"#,
        owner
    )
    .fetch_all(ex)
    .await?)
}

/// Whether any webhook is enabled (the dispatcher has nothing to deliver otherwise).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_any_enabled(ex: impl PgExecutor<'_>) -> Result<bool, DbError> {
    Ok(
        sqlx::query_scalar!(r#"SELECT EXISTS (SELECT 1 FROM webhooks WHERE enabled) AS "any!""#)
            .fetch_one(ex)
            .await?,
    )
}

/// One webhook.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_get(ex: impl PgExecutor<'_>, id: i64) -> Result<Option<WebhookRow>, DbError> {
    Ok(sqlx::query_as!(
        WebhookRow,
        r#"SELECT id, owner, owner_role, url, event_types, accounts, partitions, job_ids,
                  nodes, description, secret, enabled, disabled_reason,
                  consecutive_failures, failing_since, created_at
           FROM webhooks WHERE id = $1"#,
        id
    )
    .fetch_optional(ex)
    .await?)
}

/// Deletes a webhook and its deliveries; false when there was none.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_delete(ex: impl PgExecutor<'_>, id: i64) -> Result<bool, DbError> {
    let done = sqlx::query!("DELETE FROM webhooks WHERE id = $1", id)
        .execute(ex)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Enables (clearing its failures and the reason it was disabled) or pauses a webhook.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_set_enabled(
    ex: impl PgExecutor<'_>,
    id: i64,
    enabled: bool,
) -> Result<Option<WebhookRow>, DbError> {
    Ok(sqlx::query_as!(
        WebhookRow,
        r#"UPDATE webhooks
           SET enabled = $2,
               disabled_reason = CASE WHEN $2 THEN NULL ELSE 'paused by its owner' END,
               consecutive_failures = CASE WHEN $2 THEN 0 ELSE consecutive_failures END,
               failing_since = CASE WHEN $2 THEN NULL ELSE failing_since END
           WHERE id = $1
           RETURNING id, owner, owner_role, url, event_types, accounts, partitions, job_ids,
                     nodes, description, secret, enabled, disabled_reason,
                     consecutive_failures, failing_since, created_at"#,
        id,
        enabled
    )
    .fetch_optional(ex)
    .await?)
}

/// Keeps webhooks in step with their owners, in the dispatcher's transaction: a webhook
/// whose owner has a `users` row takes that row's role (a demoted operator's webhook sees
/// what a user sees from then on); one whose owner had a row when it was made and has none
/// now is disabled (`its owner was deleted`). Returns how many webhooks changed.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_follow_owners_in_tx(conn: &mut PgConnection) -> Result<u64, DbError> {
    let roles = sqlx::query!(
        r#"UPDATE webhooks w SET owner_role = u.role
           FROM users u WHERE u.name = w.owner AND w.owner_role <> u.role"#
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    let gone = sqlx::query!(
        r#"UPDATE webhooks w SET enabled = false, disabled_reason = 'its owner was deleted'
           WHERE w.enabled AND w.owner_recorded
             AND NOT EXISTS (SELECT 1 FROM users u WHERE u.name = w.owner)"#
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(roles + gone)
}

/// Locks the dispatcher's cursor for the rest of the transaction (dispatchers of other
/// replicas wait) and returns it.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_dispatch_lock_in_tx(conn: &mut PgConnection) -> Result<EventCursor, DbError> {
    let row = sqlx::query!("SELECT last_xid, last_id FROM webhook_dispatch FOR UPDATE")
        .fetch_one(conn)
        .await?;
    Ok((row.last_xid, row.last_id))
}

/// Moves the dispatcher's cursor.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_dispatch_set_in_tx(
    conn: &mut PgConnection,
    cursor: EventCursor,
) -> Result<(), DbError> {
    sqlx::query!(
        "UPDATE webhook_dispatch SET last_xid = $1, last_id = $2",
        cursor.0,
        cursor.1
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A delivery to make.
#[derive(Debug, Clone)]
pub struct NewDelivery<'a> {
    /// The webhook.
    pub webhook_id: i64,
    /// The event (`None`: a test).
    pub event_id: Option<i64>,
    /// Its type.
    pub event_type: &'a str,
    /// `webhook-id`.
    pub message_id: &'a str,
    /// The CloudEvent to send.
    pub payload: &'a serde_json::Value,
    /// Give up after a failure past this time.
    pub retry_until: DateTime<Utc>,
}

/// Adds a delivery to the outbox, unless this webhook has one for this event already
/// (false then).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_delivery_insert(
    ex: impl PgExecutor<'_>,
    d: &NewDelivery<'_>,
) -> Result<bool, DbError> {
    let id = sqlx::query_scalar!(
        r#"INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, message_id, payload,
                                           retry_until)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (webhook_id, event_id) DO NOTHING RETURNING id"#,
        d.webhook_id,
        d.event_id,
        d.event_type,
        d.message_id,
        d.payload,
        d.retry_until
    )
    .fetch_optional(ex)
    .await?;
    Ok(id.is_some())
}

/// A delivery a sender claimed.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    /// The delivery.
    pub id: i64,
    /// Its webhook.
    pub webhook_id: i64,
    /// `webhook-id`.
    pub message_id: String,
    /// The CloudEvent.
    pub payload: serde_json::Value,
    /// This attempt's number (1, 2, …).
    pub attempts: i32,
    /// Give up after a failure past this time.
    pub retry_until: DateTime<Utc>,
    /// The endpoint.
    pub url: String,
    /// `whsec_…`.
    pub secret: String,
    /// The webhook owner's role.
    pub owner_role: String,
}

/// Claims up to `limit` due deliveries of enabled webhooks for `sender`, for
/// `lease_seconds`: each counts an attempt. A delivery whose lease ran out (its sender
/// died) is due again.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_delivery_claim(
    ex: impl PgExecutor<'_>,
    sender: &str,
    lease_seconds: f64,
    limit: i64,
) -> Result<Vec<ClaimedDelivery>, DbError> {
    Ok(sqlx::query_as!(
        ClaimedDelivery,
        r#"WITH due AS (
               SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
               WHERE d.state = 'pending' AND d.next_attempt_at <= now() AND w.enabled
                 AND (d.lease_until IS NULL OR d.lease_until < now())
               ORDER BY d.next_attempt_at, d.id
               LIMIT $3
               FOR UPDATE OF d SKIP LOCKED
           )
           UPDATE webhook_deliveries d
           SET lease_until = now() + make_interval(secs => $2), leased_by = $1,
               attempts = d.attempts + 1
           FROM due, webhooks w
           WHERE d.id = due.id AND w.id = d.webhook_id
           RETURNING d.id, d.webhook_id, d.message_id, d.payload, d.attempts, d.retry_until,
                     w.url, w.secret, w.owner_role"#,
        sender,
        lease_seconds,
        limit
    )
    .fetch_all(ex)
    .await?)
}

/// What one attempt came to.
#[derive(Debug, Clone)]
pub struct AttemptOutcome {
    /// The endpoint's HTTP status (`None`: no answer).
    pub status: Option<i32>,
    /// What went wrong (`None`: a 2xx answer).
    pub error: Option<String>,
    /// How long it took, milliseconds.
    pub duration_ms: i64,
    /// For a failure: when to try again (past the delivery's `retry_until`, it fails for
    /// good instead).
    pub retry_at: DateTime<Utc>,
}

/// When a webhook is disabled after failing.
#[derive(Debug, Clone, Copy)]
pub struct DisablePolicy {
    /// Failed attempts in a row (0: never for this alone).
    pub after_failures: i32,
    /// Seconds of failing without a success in between.
    pub after_seconds: f64,
}

/// Records attempt `attempt` of delivery `id` in the log, and its outcome: delivered, or
/// pending again at `retry_at` (failed for good past its `retry_until`); the webhook's
/// failure count follows, and a webhook failing past `policy` is disabled. An outcome of
/// an attempt that is no longer the delivery's latest (its lease ran out and another
/// sender claimed it) is only logged.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_delivery_finish_in_tx(
    conn: &mut PgConnection,
    id: i64,
    attempt: i32,
    outcome: &AttemptOutcome,
    policy: DisablePolicy,
) -> Result<(), DbError> {
    sqlx::query!(
        r#"INSERT INTO webhook_attempts (delivery_id, attempt, status, error, duration_ms)
           VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING"#,
        id,
        attempt,
        outcome.status,
        outcome.error,
        outcome.duration_ms
    )
    .execute(&mut *conn)
    .await?;
    let webhook = if outcome.error.is_none() {
        sqlx::query_scalar!(
            r#"UPDATE webhook_deliveries
               SET state = 'delivered', delivered_at = now(), last_status = $2, last_error = NULL,
                   last_attempt_at = now(), lease_until = NULL
               WHERE id = $1 AND state = 'pending' RETURNING webhook_id"#,
            id,
            outcome.status
        )
        .fetch_optional(&mut *conn)
        .await?
    } else {
        sqlx::query_scalar!(
            r#"UPDATE webhook_deliveries
               SET state = CASE WHEN now() >= retry_until THEN 'failed' ELSE 'pending' END,
                   next_attempt_at = $3, last_status = $4, last_error = $5,
                   last_attempt_at = now(), lease_until = NULL
               WHERE id = $1 AND state = 'pending' AND attempts = $2 RETURNING webhook_id"#,
            id,
            attempt,
            outcome.retry_at,
            outcome.status,
            outcome.error
        )
        .fetch_optional(&mut *conn)
        .await?
    };
    let Some(webhook) = webhook else {
        return Ok(());
    };
    if outcome.error.is_none() {
        sqlx::query!(
            "UPDATE webhooks SET consecutive_failures = 0, failing_since = NULL WHERE id = $1",
            webhook
        )
        .execute(&mut *conn)
        .await?;
    } else {
        sqlx::query!(
            r#"UPDATE webhooks
               SET consecutive_failures = consecutive_failures + 1,
                   failing_since = COALESCE(failing_since, now()),
                   enabled = enabled AND NOT (
                       ($2 > 0 AND consecutive_failures + 1 >= $2)
                       OR COALESCE(failing_since, now()) <= now() - make_interval(secs => $3)),
                   disabled_reason = CASE
                       WHEN enabled AND (($2 > 0 AND consecutive_failures + 1 >= $2)
                            OR COALESCE(failing_since, now()) <= now() - make_interval(secs => $3))
                       THEN format('disabled: every delivery failed since %s (%s failed attempts in a row)',
                                   COALESCE(failing_since, now()), consecutive_failures + 1)
                       ELSE disabled_reason END
               WHERE id = $1"#,
            webhook,
            policy.after_failures,
            policy.after_seconds
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// A delivery as stored.
#[derive(Debug, Clone)]
pub struct DeliveryRow {
    /// The id.
    pub id: i64,
    /// The webhook.
    pub webhook_id: i64,
    /// The event (`None`: a test).
    pub event_id: Option<i64>,
    /// Its type.
    pub event_type: String,
    /// `webhook-id`.
    pub message_id: String,
    /// `pending`, `delivered`, `failed`.
    pub state: String,
    /// Attempts so far.
    pub attempts: i32,
    /// When the next attempt is due.
    pub next_attempt_at: DateTime<Utc>,
    /// The last HTTP status.
    pub last_status: Option<i32>,
    /// The last error.
    pub last_error: Option<String>,
    /// When it was delivered.
    pub delivered_at: Option<DateTime<Utc>>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

/// A webhook's deliveries, newest first, at most `limit`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_delivery_list(
    ex: impl PgExecutor<'_>,
    webhook_id: i64,
    limit: i64,
) -> Result<Vec<DeliveryRow>, DbError> {
    Ok(sqlx::query_as!(
        DeliveryRow,
        r#"SELECT id, webhook_id, event_id, event_type, message_id, state, attempts,
                  next_attempt_at, last_status, last_error, delivered_at, created_at
           FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2"#,
        webhook_id,
        limit
    )
    .fetch_all(ex)
    .await?)
}

/// One attempt in the log.
#[derive(Debug, Clone)]
pub struct AttemptRow {
    /// The delivery.
    pub delivery_id: i64,
    /// 1, 2, …
    pub attempt: i32,
    /// When.
    pub at: DateTime<Utc>,
    /// The HTTP status.
    pub status: Option<i32>,
    /// The error.
    pub error: Option<String>,
    /// Milliseconds.
    pub duration_ms: i64,
}

/// The attempts of these deliveries, by delivery and attempt.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_attempt_list(
    ex: impl PgExecutor<'_>,
    delivery_ids: &[i64],
) -> Result<Vec<AttemptRow>, DbError> {
    Ok(sqlx::query_as!(
        AttemptRow,
        r#"SELECT delivery_id, attempt, at, status, error, duration_ms FROM webhook_attempts
           WHERE delivery_id = ANY($1) ORDER BY delivery_id, attempt"#,
        delivery_ids
    )
    .fetch_all(ex)
    .await?)
}

/// Sends delivery `id` of webhook `webhook_id` again now, with the same `webhook-id`
/// (whatever became of it), retrying until `retry_until` if it fails. `None` when the
/// webhook has no such delivery.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_delivery_redeliver(
    ex: impl PgExecutor<'_>,
    webhook_id: i64,
    id: i64,
    retry_until: DateTime<Utc>,
) -> Result<Option<DeliveryRow>, DbError> {
    Ok(sqlx::query_as!(
        DeliveryRow,
        r#"UPDATE webhook_deliveries
           SET state = 'pending', next_attempt_at = now(), retry_until = $3, lease_until = NULL
           WHERE id = $2 AND webhook_id = $1
           RETURNING id, webhook_id, event_id, event_type, message_id, state, attempts,
                     next_attempt_at, last_status, last_error, delivered_at, created_at"#,
        webhook_id,
        id,
        retry_until
    )
    .fetch_optional(ex)
    .await?)
}

/// Every webhook delivery in the outbox, counted by state (`pending`, `delivered`,
/// `failed`): one grouped count, for `/metrics`' snapshot refresh (never a scrape).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn webhook_delivery_counts(
    ex: impl PgExecutor<'_>,
) -> Result<Vec<(String, u64)>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT state AS "state!", count(*) AS "n!" FROM webhook_deliveries GROUP BY state"#
    )
    .fetch_all(ex)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.state, u64::try_from(r.n).unwrap_or(0)))
        .collect())
}
