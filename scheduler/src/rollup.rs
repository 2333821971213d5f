//! The accounting reconciler of the scheduler leader: hourly usage rollups, per-minute
//! GPU state samples, and retention.
//!
//! It runs as a task of the leader (started and stopped with its term, like the cloud
//! reconciler), every `rollup_interval`:
//!
//! 1. **Sample** the GPUs' states for the current minute, once per minute
//!    (`berth_db::usage_rollup::cluster_gpu_sample_in_tx`). Berth keeps no history of
//!    node states, so down, planned-down and reserved GPU time are measured by sampling:
//!    each sample stands for its minute. A minute sampled twice (a pass that ran twice in
//!    the minute, or a new leader after a failover) keeps its first sample; a minute no
//!    leader sampled (no leader for that long) is missing from `reported` time, as
//!    Slurm's `Reported` misses time its controller was down.
//! 2. **Roll up** every hour from the one after the last closed hour to the current one
//!    (at most [`MAX_HOURS_PER_PASS`] a pass), each from the raw allocations in its own
//!    transaction that checks the term: an hour that ended more than [`CLOSE_GRACE`]
//!    ago is closed (rolled for good, never rewritten); the current hour (and the one
//!    before it during the grace period) is rolled again each pass, replacing its rows,
//!    so reports show it up to the last pass.
//! 3. **Purge** (with `purge_jobs_after`, slurmdbd's `PurgeJobAfter`): ended jobs whose
//!    end lies more than that before now, and before the end of the last closed hour (so
//!    their usage is in the rollups), in batches of [`PURGE_BATCH`] jobs per
//!    transaction, at most [`PURGE_BATCHES_PER_PASS`] batches a pass, so that a long
//!    history never holds a long lock.
//!
//! Time is an argument ([`pass`]), so the passage of hours can be tested.

use berth_core::priority::BillingWeights;
use berth_core::usage_report::hour_floor;
use berth_db::{lease, usage_rollup, DbError, Pool};
use chrono::{DateTime, DurationRound, Utc};
use std::time::Duration;

use crate::LEASE_ROLE;

/// How long after an hour's end it is closed: time for releases decided in that hour to
/// be committed.
pub const CLOSE_GRACE: chrono::Duration = chrono::Duration::seconds(120);

/// Jobs deleted per retention statement.
pub const PURGE_BATCH: i64 = 5_000;

/// Retention statements per pass.
pub const PURGE_BATCHES_PER_PASS: usize = 20;

/// Hours rolled up per pass at most (a leader catching up after a long outage, or the
/// first run over an existing history, continues next pass).
pub const MAX_HOURS_PER_PASS: usize = 48;

/// Minute samples are kept this long after their hour closed (the hourly rows keep
/// their figures).
pub const SAMPLE_KEEP: chrono::Duration = chrono::Duration::days(2);

/// The accounting settings (`[accounting]` in the server configuration).
#[derive(Debug, Clone, PartialEq)]
pub struct AccountingSettings {
    /// How often the reconciler runs (default 15 s; at most 60 s, or minutes go
    /// unsampled): the current hour in reports is at most this old.
    pub rollup_interval: Duration,
    /// Ended jobs older than this are deleted (slurmdbd's `PurgeJobAfter`); `None`
    /// (the default): never.
    pub purge_jobs_after: Option<Duration>,
}

impl Default for AccountingSettings {
    fn default() -> Self {
        AccountingSettings {
            rollup_interval: Duration::from_secs(15),
            purge_jobs_after: None,
        }
    }
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassReport {
    /// The term was stale: nothing more was written, the task stops.
    pub deposed: bool,
    /// GPU-model rows sampled for the current minute (0 when it was sampled already).
    pub sampled: u64,
    /// Hours rolled up.
    pub hours_rolled: usize,
    /// Of those, hours closed.
    pub hours_closed: usize,
    /// Jobs deleted by retention.
    pub purged: u64,
}

/// One pass at `now` under `term` (see the module's documentation).
///
/// # Errors
/// [`DbError`] from the driver; what was committed before stays (every step is
/// idempotent, the next pass retries).
pub async fn pass(
    pool: &Pool,
    term: i64,
    now: DateTime<Utc>,
    settings: &AccountingSettings,
    billing: &BillingWeights,
) -> Result<PassReport, DbError> {
    let mut report = PassReport::default();
    let minute = now
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap_or(now);
    if !usage_rollup::cluster_gpu_sampled(pool, minute).await? {
        let mut tx = berth_db::begin(pool).await?;
        if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
            report.deposed = true;
            return Ok(report);
        }
        report.sampled = usage_rollup::cluster_gpu_sample_in_tx(&mut tx, minute).await?;
        tx.commit().await?;
    }

    let current = hour_floor(now);
    let from = match usage_rollup::usage_rollup_last_closed(pool).await? {
        Some(h) => h + chrono::Duration::hours(1),
        None => usage_rollup::usage_rollup_first_activity(pool)
            .await?
            .map(hour_floor)
            .unwrap_or(current)
            .min(current),
    };
    let mut hour = from;
    while hour <= current && report.hours_rolled < MAX_HOURS_PER_PASS {
        let close = hour + chrono::Duration::hours(1) + CLOSE_GRACE <= now;
        let mut tx = berth_db::begin(pool).await?;
        if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
            report.deposed = true;
            return Ok(report);
        }
        if usage_rollup::usage_rollup_hour_in_tx(
            &mut tx,
            hour,
            now,
            close,
            term,
            billing.gpu,
            billing.cpu,
        )
        .await?
        {
            report.hours_rolled += 1;
            report.hours_closed += usize::from(close);
        }
        tx.commit().await?;
        hour += chrono::Duration::hours(1);
    }

    let last_closed = usage_rollup::usage_rollup_last_closed(pool).await?;
    if let (Some(after), Some(closed)) = (settings.purge_jobs_after, last_closed) {
        let after =
            chrono::Duration::from_std(after).unwrap_or_else(|_| chrono::Duration::days(36_500));
        let covered_until = closed + chrono::Duration::hours(1);
        if let Some(cut) = now.checked_sub_signed(after) {
            let cut = cut.min(covered_until);
            for _ in 0..PURGE_BATCHES_PER_PASS {
                let mut tx = berth_db::begin(pool).await?;
                if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
                    report.deposed = true;
                    return Ok(report);
                }
                let n = usage_rollup::job_purge_ended_in_tx(&mut tx, cut, PURGE_BATCH).await?;
                tx.commit().await?;
                report.purged += n;
                if n < PURGE_BATCH as u64 {
                    break;
                }
            }
            if report.purged > 0 {
                tracing::info!(term, purged = report.purged, before = %cut, "purged ended jobs");
            }
        }
    }
    usage_rollup::cluster_gpu_samples_prune(pool, now - SAMPLE_KEEP).await?;
    Ok(report)
}

/// The reconciler's loop for `term`: a [`pass`] every `rollup_interval` until the term
/// turns out stale (the leadership loop aborts it on stepping down too).
pub async fn run(pool: Pool, term: i64, settings: AccountingSettings, billing: BillingWeights) {
    loop {
        match pass(&pool, term, Utc::now(), &settings, &billing).await {
            Ok(r) if r.deposed => {
                tracing::warn!(term, "accounting reconciler: term is stale; stopping");
                return;
            }
            Ok(r) => tracing::debug!(
                term,
                sampled = r.sampled,
                hours = r.hours_rolled,
                closed = r.hours_closed,
                purged = r.purged,
                "accounting pass"
            ),
            Err(e) => tracing::warn!(term, error = %e, "accounting pass failed; retrying"),
        }
        tokio::time::sleep(settings.rollup_interval).await;
    }
}
