//! Slurm's `MaxJobCount` for the live queue: how many jobs it holds, counted by the
//! database about once a second per api process and kept here between counts (each
//! submission this process admits adds to it), so that a submission costs no count of its
//! own. Several api replicas each admit from their own count, so the queue may pass the
//! limit by what the others admitted within a second: a bound against a runaway client,
//! not an exact quota (per-user limits are QOS `MaxSubmitJobsPerUser`).

use crate::error::ApiError;
use crate::limits::Limits;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a count of the live queue is used before it is read again.
pub const COUNT_FOR: Duration = Duration::from_secs(1);

/// The `Retry-After` of a submission refused because the queue is full, seconds.
pub const QUEUE_FULL_RETRY_AFTER: u64 = 10;

/// This process's count of the live queue (see the module).
#[derive(Debug, Default)]
pub struct LiveQueueCount {
    /// The last count, when it was read, and what this process admitted since.
    counted: Mutex<Option<(Instant, u64)>>,
    /// Held by the one request that reads the count again.
    reading: tokio::sync::Mutex<()>,
}

impl LiveQueueCount {
    /// Admits a submission that adds `adding` jobs to the live queue, or refuses it when
    /// the queue would hold more than `limits.max_job_count` (0: no limit).
    ///
    /// # Errors
    /// [`ApiError::QueueFull`] (503, `Retry-After`); 503 when the database is unreachable.
    pub async fn admit(
        &self,
        pool: &berth_db::Pool,
        limits: &Limits,
        adding: u64,
    ) -> Result<(), ApiError> {
        if limits.max_job_count == 0 {
            return Ok(());
        }
        let fresh = |c: &Option<(Instant, u64)>| c.is_some_and(|(at, _)| at.elapsed() < COUNT_FOR);
        if !fresh(&self.counted.lock().unwrap_or_else(|e| e.into_inner())) {
            // One request reads it again; the others wait for that read (or use the
            // stale count when there is one).
            let stale = self
                .counted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some();
            let reader = if stale {
                self.reading.try_lock().ok()
            } else {
                Some(self.reading.lock().await)
            };
            if let Some(_reader) = reader {
                if !fresh(&self.counted.lock().unwrap_or_else(|e| e.into_inner())) {
                    let since = limits.live_queue_since(chrono::Utc::now());
                    let count = berth_db::job::job_live_count(pool, since).await?;
                    *self.counted.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some((Instant::now(), u64::try_from(count).unwrap_or(0)));
                }
            }
        }
        let mut counted = self.counted.lock().unwrap_or_else(|e| e.into_inner());
        let (_, count) = counted.get_or_insert((Instant::now(), 0));
        if count.saturating_add(adding) > limits.max_job_count {
            tracing::warn!(
                live = *count,
                max_job_count = limits.max_job_count,
                "submission refused: the live queue is full (MaxJobCount)"
            );
            return Err(ApiError::QueueFull {
                limit: limits.max_job_count,
                retry_after: QUEUE_FULL_RETRY_AFTER,
            });
        }
        *count += adding;
        Ok(())
    }
}
