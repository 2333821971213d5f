//! `GET /v1/events`: the cluster's events (CloudEvents 1.0), as a paged JSON list or, with
//! `Accept: text/event-stream`, as Server-Sent Events that resume after `Last-Event-ID`.
//!
//! Events are written by database triggers in the transaction of each state change
//! (`migrations/20261201150001_events.sql`) and read in commit-safe order
//! ([`berth_db::event`]): an event is served only once no running transaction can still
//! commit one before it, so a stream resumed on any replica after any event id gets every
//! later event once. One reader per api process ([`crate::event_feed`]) reads them, woken
//! by `NOTIFY berth_events` and every second besides (an event whose transaction committed
//! while an older one still ran is served once that one ends), and every stream takes its
//! events from it, filtered in memory: a stream costs no query of its own once it has
//! caught up. Open streams are bounded per principal and per process (429 beyond).
//!
//! What a caller sees: admins and operators every event; users the events of their own
//! jobs and of jobs of the accounts they coordinate (as `GET /v1/jobs`), and every node,
//! pool, scheduler and reservation event.

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::event_feed::{Feed, StreamFilter, StreamLimits, StreamSlot};
use crate::webhooks::WebhookSettings;
use crate::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use berth_core::event::{check_type_pattern, CloudEvent, EventList, EventQuery};
use berth_core::wire::Problem;
use berth_db::event::{self as db_event, EventCursor, EventFilter, EventRow};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// The LISTEN channel the events trigger notifies.
pub const EVENTS_CHANNEL: &str = "berth_events";

/// How often the dispatcher and the shared reader look for events besides being woken.
pub const POLL_INTERVAL: Duration = crate::event_feed::POLL_INTERVAL;

/// What the event streams and the webhook reconciler of this process share: the wake-up
/// from `NOTIFY berth_events`, the shared reader's events ([`Feed`]) and the webhook
/// settings.
#[derive(Clone)]
pub struct EventHub {
    wake: broadcast::Sender<()>,
    /// The events the shared reader read, and the open streams.
    pub feed: Arc<Feed>,
    /// The `[webhooks]` settings.
    pub webhooks: Arc<WebhookSettings>,
    /// Set when this process made or re-enabled a webhook: its dispatcher asks again
    /// whether any webhook is enabled instead of trusting its last answer.
    pub webhooks_changed: Arc<std::sync::atomic::AtomicBool>,
}

impl Default for EventHub {
    fn default() -> Self {
        EventHub::new(WebhookSettings::default(), StreamLimits::default())
    }
}

impl EventHub {
    /// A hub with these webhook settings and stream limits.
    pub fn new(webhooks: WebhookSettings, streams: StreamLimits) -> Self {
        let (wake, _) = broadcast::channel(16);
        EventHub {
            wake,
            feed: Feed::new(streams),
            webhooks: Arc::new(webhooks),
            webhooks_changed: Arc::default(),
        }
    }

    /// A receiver woken when events may have been written (`NOTIFY berth_events`).
    pub fn subscribe(&self) -> broadcast::Receiver<()> {
        self.wake.subscribe()
    }

    fn wake(&self) {
        let _ = self.wake.send(());
    }
}

/// Wakes this process's event readers on `NOTIFY berth_events`; reconnects by itself (and
/// wakes them after a reconnect, since notifications may have been missed).
pub(crate) async fn forward_events(pool: berth_db::Pool, hub: EventHub) {
    loop {
        match sqlx::postgres::PgListener::connect_with(&pool).await {
            Ok(mut listener) => {
                if listener.listen(EVENTS_CHANNEL).await.is_ok() {
                    hub.wake();
                    loop {
                        match listener.try_recv().await {
                            Ok(_) => hub.wake(),
                            Err(e) => {
                                tracing::warn!(error = %e, "LISTEN berth_events lost; reconnecting");
                                break;
                            }
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "LISTEN berth_events failed; retrying"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The CloudEvent of a stored event.
pub(crate) fn cloud_event(row: &EventRow) -> CloudEvent {
    CloudEvent {
        specversion: "1.0".into(),
        id: row.id.to_string(),
        source: row.source.clone(),
        event_type: row.event_type.clone(),
        subject: row.subject.clone(),
        time: row.time,
        datacontenttype: "application/json".into(),
        data: row.data.clone(),
    }
}

/// `berth.job.*` → the `LIKE` pattern `berth.job.%` (`_` and `%` taken literally).
fn like_pattern(pattern: &str) -> String {
    let escaped = pattern
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    match escaped.strip_suffix('*') {
        Some(prefix) => format!("{prefix}%"),
        None => escaped,
    }
}

/// The position after event `id` (`0`: the beginning).
async fn cursor_after(state: &AppState, field: &str, id: &str) -> Result<EventCursor, ApiError> {
    let id: i64 = id
        .trim()
        .parse()
        .map_err(|_| ApiError::bad_field(field, "not an event id"))?;
    if id == 0 {
        return Ok((0, 0));
    }
    db_event::event_cursor_of(&state.pool, id)
        .await?
        .ok_or_else(|| ApiError::bad_field(field, format!("no event {id}")))
}

/// List or stream events.
///
/// As JSON: a page of events after `after` (or from the oldest), in commit-safe order;
/// follow `next_cursor`. With `Accept: text/event-stream`: Server-Sent Events, each with
/// `id` the event's id, `event` its type and `data` the CloudEvent, from after
/// `Last-Event-ID` (or `after`; by default only new events), kept open. Users see the
/// events of their jobs and of the accounts they coordinate, and every node, pool,
/// scheduler and reservation event. A principal holds at most `[api]
/// max_event_streams_per_user` open streams (16 by default) and an api process
/// `max_event_streams` (4,096): one more is refused with 429, naming the limit.
#[utoipa::path(get, path = "/v1/events", tag = "events", operation_id = "event_list",
    params(EventQuery,
           ("Last-Event-ID" = Option<String>, Header, description = "Resume a stream after this event")),
    responses((status = 200, description = "A page of events, or an event stream", content(
                  (EventList = "application/json"),
                  (String = "text/event-stream"))),
              (status = 400, description = "A bad filter or cursor", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node's or a job's token", body = Problem),
              (status = 429, description = "The caller holds as many open streams as it may (code too_many_streams)", body = Problem)),
    security(("bearer" = [])))]
pub async fn event_list(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    q: Result<Query<EventQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    let q = q
        .map(|Query(v)| v)
        .map_err(|e| rejection("query", e.body_text()))?;
    let stream = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    let types = match &q.event_type {
        Some(types) => Some(
            types
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| {
                    check_type_pattern(t)
                        .map(|()| t.to_string())
                        .map_err(|e| ApiError::bad_field("type", e))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        None => None,
    };
    if types.as_ref().is_some_and(Vec::is_empty) {
        return Err(ApiError::bad_field(
            "type",
            "names no event type (leave it out for every type)",
        ));
    }
    let limit = i64::from(q.limit.unwrap_or(100));
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_field("limit", "must be between 1 and 1000"));
    }
    let last_event_id = headers
        .get("last-event-id")
        .map(|v| {
            v.to_str()
                .map_err(|_| ApiError::bad_field("Last-Event-ID", "not an event id"))
        })
        .transpose()?;
    // A stream takes its place among the open streams before anything else is read.
    let slot = if stream {
        Some(state.events.feed.open_stream(&caller.name)?)
    } else {
        None
    };
    let after = match (last_event_id, &q.after) {
        (Some(id), _) if stream => cursor_after(&state, "Last-Event-ID", id).await?,
        (_, Some(id)) => cursor_after(&state, "after", id).await?,
        _ if stream => match state.events.feed.latest() {
            Some(latest) => latest,
            None => db_event::event_cursor_latest(&state.pool).await?,
        },
        _ => (0, 0),
    };
    let viewer = (!caller.sees_all_jobs()).then(|| caller.name.clone());
    let Some(slot) = slot else {
        let filter = EventFilter {
            after,
            limit,
            type_patterns: types
                .as_ref()
                .map(|types| types.iter().map(|t| like_pattern(t)).collect()),
            subject: q.subject.clone(),
            viewer_accounts: caller.coordinated_accounts(&state).await?,
            viewer,
        };
        let rows = db_event::event_list(&state.pool, &filter).await?;
        let full = rows.len() as i64 == limit;
        return Ok(Json(EventList {
            items: rows.iter().map(cloud_event).collect(),
            next_cursor: full
                .then(|| rows.last().map(|r| r.id.to_string()))
                .flatten(),
        })
        .into_response());
    };
    let follow = Follow {
        pool: state.pool.clone(),
        feed: state.events.feed.clone(),
        published: state.events.feed.subscribe(),
        cursor: after,
        filter: StreamFilter {
            types,
            subject: q.subject.clone(),
            viewer,
        },
        buffer: VecDeque::new(),
        _slot: slot,
    };
    let events = futures_util::stream::unfold(follow, |mut f| async move {
        let event = f.next().await;
        Some((Ok::<_, std::convert::Infallible>(event), f))
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// How many events a stream takes at once (from the shared reader or, while catching up,
/// from the database).
const STREAM_BATCH: usize = 500;

/// One client's stream: takes events after its cursor from the shared reader
/// ([`Feed::after`]), or from the database while it is behind what the reader keeps, and
/// waits for more. Its place among the open streams is released when it is dropped.
struct Follow {
    pool: berth_db::Pool,
    feed: Arc<Feed>,
    published: watch::Receiver<u64>,
    /// The position of the last event looked at (passed to the client or filtered out).
    cursor: db_event::EventCursor,
    filter: StreamFilter,
    buffer: VecDeque<Arc<EventRow>>,
    _slot: StreamSlot,
}

impl Follow {
    /// The next event, waiting as long as it takes.
    async fn next(&mut self) -> Event {
        loop {
            if let Some(row) = self.buffer.pop_front() {
                let data = serde_json::to_string(&cloud_event(&row)).unwrap_or_default();
                return Event::default()
                    .id(row.id.to_string())
                    .event(row.event_type.as_str())
                    .data(data);
            }
            let accounts = match &self.filter.viewer {
                Some(viewer) => match self.feed.viewer_accounts(&self.pool, viewer).await {
                    Ok(accounts) => accounts,
                    Err(e) => {
                        tracing::warn!(error = %e, "reading a stream's accounts failed; retrying");
                        tokio::time::sleep(POLL_INTERVAL).await;
                        continue;
                    }
                },
                None => Arc::default(),
            };
            // Seen before the read, so that events published meanwhile wake the wait.
            self.published.borrow_and_update();
            let (rows, full) = match self.feed.after(self.cursor, STREAM_BATCH) {
                Some((rows, _)) => {
                    let full = rows.len() == STREAM_BATCH;
                    (rows, full)
                }
                None if self.feed.latest().is_none() => (Vec::new(), false),
                // Behind what the reader keeps: a page from the database (every event, so
                // that the cursor moves over those filtered out too).
                None => match db_event::event_list(
                    &self.pool,
                    &EventFilter {
                        after: self.cursor,
                        limit: STREAM_BATCH as i64,
                        ..Default::default()
                    },
                )
                .await
                {
                    Ok(rows) => {
                        let full = rows.len() == STREAM_BATCH;
                        (rows.into_iter().map(Arc::new).collect(), full)
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "reading events for a stream failed; retrying");
                        tokio::time::sleep(POLL_INTERVAL).await;
                        continue;
                    }
                },
            };
            for row in rows {
                self.cursor = (row.xid, row.id);
                if self.filter.passes(&row, &accounts) {
                    self.buffer.push_back(row);
                }
            }
            if full || !self.buffer.is_empty() {
                continue;
            }
            // Wait for the reader's next events (its accounts are read again meanwhile
            // every VIEWER_REFRESH, when events come).
            if self.published.changed().await.is_err() {
                tokio::time::sleep(POLL_INTERVAL).await;
            }
        }
    }
}

/// Writes the start and end events of reservation windows whose boundary passed within
/// the last hour, once each whichever replica sees it first.
///
/// # Errors
/// [`berth_db::DbError`] from the driver.
pub(crate) async fn reservation_boundaries(
    pool: &berth_db::Pool,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), berth_db::DbError> {
    let now_s = now.timestamp();
    for r in berth_db::reservation::reservation_list(pool).await? {
        let flags: Vec<_> = r
            .flags
            .iter()
            .filter_map(|f| berth_core::reservation::ReservationFlag::parse(f))
            .collect();
        let period = berth_core::reservation::period(&flags);
        let windows = berth_core::reservation::windows(
            r.start_time.timestamp(),
            r.end_time.timestamp(),
            period,
            now_s - 3600,
            3,
        );
        for (start, end) in windows {
            for (kind, at) in [("started", start), ("ended", end)] {
                if !(now_s - 3600 < at && at <= now_s) {
                    continue;
                }
                let data = serde_json::json!({
                    "reservation": r.name,
                    "start_time": chrono::DateTime::from_timestamp(start, 0),
                    "end_time": chrono::DateTime::from_timestamp(end, 0),
                    "users": r.users,
                    "accounts": r.accounts,
                    "nodes": r.nodes.iter().map(|n| n.node.clone()).collect::<Vec<_>>(),
                });
                db_event::event_insert_once(
                    pool,
                    &format!("berth.reservation.{kind}"),
                    &format!("reservations/{}", r.name),
                    &data,
                    &format!("reservations/{}/{start}/{kind}", r.name),
                )
                .await?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_patterns_become_literal_like_patterns() {
        assert_eq!(like_pattern("berth.job.*"), "berth.job.%");
        assert_eq!(
            like_pattern("berth.job.time_limit_warning"),
            "berth.job.time\\_limit\\_warning"
        );
        assert_eq!(like_pattern("*"), "%");
    }
}
