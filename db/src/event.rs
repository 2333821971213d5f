//! The `events` table: CloudEvents written by triggers in the transaction of each state
//! change (see `migrations/20261201150001_events.sql`), read in commit-safe order.
//!
//! Ids come from a sequence, which hands them out in the order transactions ask, not the
//! order they commit: a reader that served every event with `id > last` could step past
//! an event whose transaction commits later with a smaller id, and lose it. So every
//! event keeps its transaction's 64-bit id (`xid`), readers serve only events whose
//! transaction is older than every transaction still running (`xid <
//! pg_snapshot_xmin(pg_current_snapshot())`: all of those have ended, and any later
//! transaction gets a larger xid), and they serve them ordered by `(xid, id)`. Below the
//! horizon the set is final, so a cursor `(xid, id)` never passes an event that shows up
//! later, and an event is served once. A client's cursor is the last event's id; its
//! `(xid, id)` is looked up ([`event_cursor_of`]).

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::PgExecutor;

/// An event as stored.
#[derive(Debug, Clone)]
pub struct EventRow {
    /// The id (CloudEvents `id`).
    pub id: i64,
    /// The writing transaction's 64-bit id.
    pub xid: i64,
    /// CloudEvents `type` (`berth.job.ended`).
    pub event_type: String,
    /// CloudEvents `source` (`/berth`).
    pub source: String,
    /// CloudEvents `subject` (`jobs/123`).
    pub subject: String,
    /// When it happened.
    pub time: DateTime<Utc>,
    /// CloudEvents `data`.
    pub data: serde_json::Value,
    /// The job, for a job's event.
    pub job_id: Option<i64>,
    /// The job's user.
    pub user_name: Option<String>,
    /// The job's account.
    pub account: Option<String>,
    /// The job's partition.
    pub partition: Option<String>,
    /// The node, for a node's or a pool node's event.
    pub node: Option<String>,
}

/// A position in the commit-safe order: the (xid, id) of the last event read.
pub type EventCursor = (i64, i64);

/// What [`event_list`] reads.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Only events after this position.
    pub after: EventCursor,
    /// The most events to return.
    pub limit: i64,
    /// Only types matching one of these `LIKE` patterns (`berth.job.%`); `None`: any.
    pub type_patterns: Option<Vec<String>>,
    /// Only this subject.
    pub subject: Option<String>,
    /// A user who sees, of jobs' events, only those of their own jobs and of
    /// `viewer_accounts`; `None`: everything.
    pub viewer: Option<String>,
    /// The accounts the viewer coordinates.
    pub viewer_accounts: Vec<String>,
}

/// Events after `filter.after` that every reader will see from now on (committed, and
/// older than every running transaction), in commit-safe order.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn event_list(
    ex: impl PgExecutor<'_>,
    filter: &EventFilter,
) -> Result<Vec<EventRow>, DbError> {
    Ok(sqlx::query_as!(
        EventRow,
        r#"SELECT id, xid, type AS event_type, source, subject, time, data, job_id, user_name,
                  account, partition, node
           FROM events
           WHERE (xid, id) > ($1, $2)
             AND xid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
             AND ($3::text[] IS NULL OR type LIKE ANY($3))
             AND ($4::text IS NULL OR subject = $4)
             AND ($5::text IS NULL OR job_id IS NULL OR user_name = $5 OR account = ANY($6))
           ORDER BY xid, id
           LIMIT $7"#,
        filter.after.0,
        filter.after.1,
        filter.type_patterns.as_deref(),
        filter.subject,
        filter.viewer,
        &filter.viewer_accounts,
        filter.limit,
    )
    .fetch_all(ex)
    .await?)
}

/// The position of event `id` (`None`: no such event).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn event_cursor_of(
    ex: impl PgExecutor<'_>,
    id: i64,
) -> Result<Option<EventCursor>, DbError> {
    Ok(
        sqlx::query_scalar!("SELECT xid FROM events WHERE id = $1", id)
            .fetch_optional(ex)
            .await?
            .map(|xid| (xid, id)),
    )
}

/// The position of the newest event every reader sees now ((0, 0) when there is none):
/// where a stream that asked for no past events starts.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn event_cursor_latest(ex: impl PgExecutor<'_>) -> Result<EventCursor, DbError> {
    let row = sqlx::query!(
        r#"SELECT xid, id FROM events
           WHERE xid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
           ORDER BY xid DESC, id DESC LIMIT 1"#
    )
    .fetch_optional(ex)
    .await?;
    Ok(row.map_or((0, 0), |r| (r.xid, r.id)))
}

/// Writes an event that must be written once whatever writes it (a reservation's start
/// or end, which every api replica may notice): `dedupe` is its key. Returns false when
/// it had been written.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn event_insert_once(
    ex: impl PgExecutor<'_>,
    event_type: &str,
    subject: &str,
    data: &serde_json::Value,
    dedupe: &str,
) -> Result<bool, DbError> {
    let inserted = sqlx::query_scalar!(
        r#"INSERT INTO events (type, subject, data, dedupe) VALUES ($1, $2, $3, $4)
           ON CONFLICT (dedupe) WHERE dedupe IS NOT NULL DO NOTHING RETURNING id"#,
        event_type,
        subject,
        data,
        dedupe
    )
    .fetch_optional(ex)
    .await?;
    Ok(inserted.is_some())
}
