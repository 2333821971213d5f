//! One reader of the event table per api process, shared by every event stream and by the
//! webhook dispatcher.
//!
//! The reader ([`run_reader`]) reads new events in commit-safe order (see
//! [`berth_db::event`]) when `NOTIFY berth_events` says some were written, and every
//! second besides, and keeps the last [`RING_EVENTS`] in memory. A stream takes its events
//! from there, filtered in memory (types, subject, what its user may see): its cost is a
//! lookup in memory when the reader publishes, whatever the number of streams, where each
//! stream used to query PostgreSQL every second and re-read its user's accounts every
//! five. A stream that resumes from before what the ring holds reads its way forward from
//! the database first, a page at a time, then follows the ring. The webhook dispatcher
//! takes its events from the ring too when its cursor is within it.
//!
//! Open streams are bounded ([`StreamSlots`]): per principal (`[api]
//! max_event_streams_per_user`, 16 by default) and per process (`max_event_streams`,
//! 4,096); a stream beyond either is refused with 429 naming the limit.

use crate::error::ApiError;
use berth_db::event::{self as db_event, EventCursor, EventRow};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch};

/// How many events the reader keeps for the streams (about a minute of a busy cluster's
/// events; a stream further behind reads from the database until it is within).
pub const RING_EVENTS: usize = 10_000;

/// How many events the reader reads at once.
const READ_BATCH: i64 = 1_000;

/// How often the reader looks for events besides being woken.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// How long a user's coordinated accounts, as streams filter by them, are used before
/// they are read again: a change of memberships reaches open streams within this.
pub const VIEWER_REFRESH: Duration = Duration::from_secs(5);

/// The default most open event streams per principal.
pub const DEFAULT_MAX_STREAMS_PER_PRINCIPAL: usize = 16;

/// The default most open event streams per api process.
pub const DEFAULT_MAX_STREAMS: usize = 4096;

/// The `Retry-After` of a refused stream, seconds.
const STREAM_RETRY_AFTER: u64 = 5;

/// The events read so far, in commit-safe order.
#[derive(Debug, Default)]
struct Ring {
    events: VecDeque<Arc<EventRow>>,
    /// The position from which `events` is complete: every event after it (and up to the
    /// last one held) is held. `None` until the reader's first read.
    start: Option<EventCursor>,
    /// The position of the last event read (where the next read starts).
    end: EventCursor,
}

/// What one stream asks for, matched in memory.
#[derive(Debug, Clone, Default)]
pub struct StreamFilter {
    /// Type patterns (`berth.job.*`, exact types, `*`); `None`: any.
    pub types: Option<Vec<String>>,
    /// Only this subject.
    pub subject: Option<String>,
    /// A user who sees, of jobs' events, only those of their own jobs and of the
    /// accounts they coordinate; `None`: everything (admins, operators).
    pub viewer: Option<String>,
}

impl StreamFilter {
    /// Whether `event` passes, `accounts` being the viewer's coordinated accounts.
    pub fn passes(&self, event: &EventRow, accounts: &[String]) -> bool {
        if let Some(types) = &self.types {
            if !types
                .iter()
                .any(|p| berth_core::event::type_matches(p, &event.event_type))
            {
                return false;
            }
        }
        if self.subject.as_ref().is_some_and(|s| *s != event.subject) {
            return false;
        }
        match &self.viewer {
            Some(viewer) if event.job_id.is_some() => {
                event.user_name.as_deref() == Some(viewer.as_str())
                    || event.account.as_ref().is_some_and(|a| accounts.contains(a))
            }
            _ => true,
        }
    }
}

/// The limits on open streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Per principal (user, node), 0: no limit.
    pub per_principal: usize,
    /// Per api process, 0: no limit.
    pub total: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            per_principal: DEFAULT_MAX_STREAMS_PER_PRINCIPAL,
            total: DEFAULT_MAX_STREAMS,
        }
    }
}

/// The open streams of this process, by principal.
#[derive(Debug, Default)]
struct StreamSlots {
    open: HashMap<String, usize>,
    total: usize,
}

/// An open stream's place among the open streams: released when the stream is dropped
/// (its client went away, or the api stops).
#[derive(Debug)]
pub struct StreamSlot {
    feed: Arc<Feed>,
    principal: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut slots = self.feed.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.total = slots.total.saturating_sub(1);
        if let Some(n) = slots.open.get_mut(&self.principal) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                slots.open.remove(&self.principal);
            }
        }
    }
}

/// Users' coordinated accounts, with when they were read.
type Viewers = HashMap<String, (Arc<Vec<String>>, Instant)>;

/// The shared reader's state (see the module).
#[derive(Debug)]
pub struct Feed {
    ring: RwLock<Ring>,
    /// Bumped each time the reader adds events (streams wait on it).
    published: watch::Sender<u64>,
    /// Users' coordinated accounts, with when they were read.
    viewers: Mutex<Viewers>,
    /// Held while a user's accounts are read (one read for every stream of the user).
    viewer_read: tokio::sync::Mutex<()>,
    slots: Mutex<StreamSlots>,
    limits: StreamLimits,
}

impl Feed {
    /// An empty feed with these stream limits.
    pub fn new(limits: StreamLimits) -> Arc<Feed> {
        let (published, _) = watch::channel(0);
        Arc::new(Feed {
            ring: RwLock::new(Ring::default()),
            published,
            viewers: Mutex::default(),
            viewer_read: tokio::sync::Mutex::new(()),
            slots: Mutex::default(),
            limits,
        })
    }

    /// Takes a place for a new stream of `principal`.
    ///
    /// # Errors
    /// 429 naming the limit when the principal, or the process, has as many open streams
    /// as it may.
    pub fn open_stream(self: &Arc<Self>, principal: &str) -> Result<StreamSlot, ApiError> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let mine = slots.open.get(principal).copied().unwrap_or(0);
        let limits = self.limits;
        if limits.per_principal > 0 && mine >= limits.per_principal {
            return Err(ApiError::TooManyStreams {
                detail: format!(
                    "{principal} has {mine} open event streams, the most one principal may hold \
                     (max_event_streams_per_user = {}): close one first",
                    limits.per_principal
                ),
                retry_after: STREAM_RETRY_AFTER,
            });
        }
        if limits.total > 0 && slots.total >= limits.total {
            return Err(ApiError::TooManyStreams {
                detail: format!(
                    "this api has {} open event streams, the most it holds (max_event_streams = \
                     {}): try again later",
                    slots.total, limits.total
                ),
                retry_after: STREAM_RETRY_AFTER,
            });
        }
        *slots.open.entry(principal.to_string()).or_default() += 1;
        slots.total += 1;
        Ok(StreamSlot {
            feed: self.clone(),
            principal: principal.to_string(),
        })
    }

    /// How many streams are open (all principals).
    pub fn open_streams(&self) -> usize {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).total
    }

    /// A receiver that changes each time the reader adds events.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.published.subscribe()
    }

    /// The events after `cursor` that the ring holds, at most `limit`, and the position of
    /// the last event the ring holds; `None` when the ring does not hold everything after
    /// `cursor` (the reader has not read yet, or `cursor` is older than what it keeps).
    pub fn after(
        &self,
        cursor: EventCursor,
        limit: usize,
    ) -> Option<(Vec<Arc<EventRow>>, EventCursor)> {
        let ring = self.ring.read().unwrap_or_else(|e| e.into_inner());
        let start = ring.start?;
        if cursor < start {
            return None;
        }
        let from = ring.events.partition_point(|e| (e.xid, e.id) <= cursor);
        let events: Vec<_> = ring.events.range(from..).take(limit).cloned().collect();
        Some((events, ring.end.max(cursor)))
    }

    /// The position of the newest event read (`None` before the first read).
    pub fn latest(&self) -> Option<EventCursor> {
        let ring = self.ring.read().unwrap_or_else(|e| e.into_inner());
        ring.start.map(|_| ring.end)
    }

    /// Adds events read after the ring's end; drops the oldest past [`RING_EVENTS`].
    fn push(&self, rows: Vec<EventRow>, first_read: Option<EventCursor>) {
        let mut ring = self.ring.write().unwrap_or_else(|e| e.into_inner());
        if let Some(start) = first_read {
            ring.start = Some(start);
            ring.end = start;
        }
        for row in rows {
            ring.end = (row.xid, row.id);
            ring.events.push_back(Arc::new(row));
        }
        while ring.events.len() > RING_EVENTS {
            if let Some(old) = ring.events.pop_front() {
                ring.start = Some((old.xid, old.id));
            }
        }
    }

    /// `user`'s coordinated accounts, read at most every [`VIEWER_REFRESH`] for all of
    /// the user's streams.
    ///
    /// # Errors
    /// The database's, when they must be read and cannot be.
    pub async fn viewer_accounts(
        &self,
        pool: &berth_db::Pool,
        user: &str,
    ) -> Result<Arc<Vec<String>>, berth_db::DbError> {
        let cached = |viewers: &Viewers| {
            viewers
                .get(user)
                .filter(|(_, at)| at.elapsed() < VIEWER_REFRESH)
                .map(|(accounts, _)| accounts.clone())
        };
        if let Some(accounts) = cached(&self.viewers.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(accounts);
        }
        let _reading = self.viewer_read.lock().await;
        if let Some(accounts) = cached(&self.viewers.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(accounts);
        }
        let accounts =
            Arc::new(berth_db::membership::membership_coordinated_accounts(pool, user).await?);
        let mut viewers = self.viewers.lock().unwrap_or_else(|e| e.into_inner());
        viewers.retain(|_, (_, at)| at.elapsed() < VIEWER_REFRESH * 12);
        viewers.insert(user.to_string(), (accounts.clone(), Instant::now()));
        Ok(accounts)
    }
}

/// The shared reader of this process: reads new events when woken (`NOTIFY berth_events`)
/// and every [`POLL_INTERVAL`], adds them to `feed` and publishes. Runs until the process
/// ends; a failed read is tried again a second later.
pub(crate) async fn run_reader(
    pool: berth_db::Pool,
    feed: Arc<Feed>,
    mut wake: broadcast::Receiver<()>,
) {
    let mut published = 0u64;
    loop {
        let start = match feed.latest() {
            Some(_) => None,
            None => match db_event::event_cursor_latest(&pool).await {
                Ok(latest) => Some(latest),
                Err(e) => {
                    tracing::warn!(error = %e, "reading the newest event failed; retrying");
                    tokio::time::sleep(POLL_INTERVAL).await;
                    continue;
                }
            },
        };
        let after = start.or_else(|| feed.latest()).unwrap_or((0, 0));
        match db_event::event_list(
            &pool,
            &db_event::EventFilter {
                after,
                limit: READ_BATCH,
                ..Default::default()
            },
        )
        .await
        {
            Ok(rows) => {
                let full = rows.len() as i64 == READ_BATCH;
                let new = !rows.is_empty() || start.is_some();
                feed.push(rows, start);
                if new {
                    published += 1;
                    feed.published.send_replace(published);
                }
                if full {
                    continue;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading events failed; retrying");
                if start.is_some() {
                    // The first read failed: take the newest position again.
                    tokio::time::sleep(POLL_INTERVAL).await;
                    continue;
                }
            }
        }
        tokio::select! {
            r = wake.recv() => {
                if matches!(r, Err(broadcast::error::RecvError::Closed)) {
                    tokio::time::sleep(POLL_INTERVAL).await;
                }
            }
            () = tokio::time::sleep(POLL_INTERVAL) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(xid: i64, id: i64, user: Option<&str>) -> EventRow {
        EventRow {
            id,
            xid,
            event_type: "berth.job.submitted".into(),
            source: "/berth".into(),
            subject: format!("jobs/{id}"),
            time: chrono::Utc::now(),
            data: serde_json::json!({}),
            job_id: user.map(|_| id),
            user_name: user.map(str::to_string),
            account: None,
            partition: None,
            node: None,
        }
    }

    #[test]
    fn the_ring_answers_only_for_what_it_holds_whole() {
        let feed = Feed::new(StreamLimits::default());
        assert!(feed.after((0, 0), 10).is_none(), "nothing read yet");
        feed.push(vec![row(5, 1, None), row(7, 2, None)], Some((3, 9)));
        let (events, end) = feed.after((3, 9), 10).unwrap();
        assert_eq!(events.iter().map(|e| e.id).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(end, (7, 2));
        let (events, _) = feed.after((5, 1), 10).unwrap();
        assert_eq!(events.iter().map(|e| e.id).collect::<Vec<_>>(), vec![2]);
        assert!(feed.after((2, 0), 10).is_none(), "before the ring's start");
        // Past its capacity the ring forgets the oldest, and says so.
        let many: Vec<_> = (0..RING_EVENTS as i64 + 5)
            .map(|i| row(10 + i, 100 + i, None))
            .collect();
        feed.push(many, None);
        assert!(feed.after((7, 2), 1).is_none());
        let (events, _) = feed.after((14, 104), 1).unwrap();
        assert_eq!(events[0].id, 105);
    }

    #[test]
    fn streams_are_bounded_per_principal_and_in_all() {
        let feed = Feed::new(StreamLimits {
            per_principal: 2,
            total: 3,
        });
        let a1 = feed.open_stream("user:a").unwrap();
        let _a2 = feed.open_stream("user:a").unwrap();
        let refused = feed.open_stream("user:a").unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("max_event_streams_per_user = 2"),
            "{refused}"
        );
        let _b1 = feed.open_stream("user:b").unwrap();
        let refused = feed.open_stream("user:c").unwrap_err();
        assert!(
            refused.to_string().contains("max_event_streams = 3"),
            "{refused}"
        );
        drop(a1);
        assert_eq!(feed.open_streams(), 2);
        assert!(feed.open_stream("user:a").is_ok());
    }

    #[test]
    fn a_user_sees_the_events_of_their_jobs_and_coordinated_accounts_only() {
        let filter = StreamFilter {
            viewer: Some("ann".into()),
            ..Default::default()
        };
        let mut other = row(1, 1, Some("bob"));
        assert!(filter.passes(&row(1, 1, Some("ann")), &[]));
        assert!(!filter.passes(&other, &[]));
        other.account = Some("lab".into());
        assert!(filter.passes(&other, &["lab".into()]));
        assert!(filter.passes(&row(1, 1, None), &[]), "a node's event");
        let typed = StreamFilter {
            types: Some(vec!["berth.node.*".into()]),
            ..Default::default()
        };
        assert!(!typed.passes(&row(1, 1, None), &[]));
    }
}
