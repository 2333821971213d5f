//! The cluster-wide counters `/metrics` shows, kept by the leader in the
//! `cluster_counters` table (see [`berth_core::metrics`] and `berth_db::metrics`).
//!
//! After its cycles (at most once per [`FLUSH_EVERY`]) the leader flushes, in one
//! transaction under its term:
//!
//! * what only it sees: the durations of its scheduling cycles (a histogram) and how many
//!   ran, kept in memory since the previous flush;
//! * what the database records, counted over the window since the previous flush (to
//!   `now()` less [`WINDOW_LAG`], so that transactions that started before then have
//!   committed): jobs started (placements, and their queue wait), jobs ended (by state,
//!   and their run time), preemptions, and what pool instances cost over the window.
//!
//! The window's start is stored with the counters, so each start, end and preemption is
//! counted once whichever leader flushes, across failovers; a flush under an older term
//! than the last one is refused (a deposed leader writes nothing). Cycle durations of a
//! leader that dies before its flush (at most one [`FLUSH_EVERY`]) are lost.

use crate::LEASE_ROLE;
use berth_core::metrics::{self as names, HistogramDelta, LABEL_SEPARATOR};
use berth_db::{metrics as db, DbError, Pool};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The least time between two flushes.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// How far behind `now()` a flush's window stops, seconds: a job ended by a transaction
/// that began before then has committed (api transactions are short: their statements
/// are bounded by the statement and lock timeouts, and none waits on a client).
pub const WINDOW_LAG: f64 = 5.0;

/// The longest window one flush counts, seconds (a cluster without a leader for longer
/// has its older starts and ends left uncounted rather than read in one go).
pub const MAX_WINDOW_SECONDS: i64 = 3600;

/// The leader's unflushed observations.
#[derive(Debug)]
pub struct ClusterCounters {
    cycles: HistogramDelta,
    last_flush: Option<Instant>,
}

impl Default for ClusterCounters {
    fn default() -> Self {
        ClusterCounters {
            cycles: HistogramDelta::new(names::CYCLE_DURATION_BUCKETS),
            last_flush: None,
        }
    }
}

/// What one flush added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flushed {
    /// Jobs started in the window.
    pub started: usize,
    /// Jobs ended in the window.
    pub ended: usize,
    /// Cycles flushed.
    pub cycles: u64,
}

impl ClusterCounters {
    /// Records one scheduling cycle's duration.
    pub fn observe_cycle(&mut self, elapsed: Duration) {
        self.cycles.observe(elapsed.as_secs_f64());
    }

    /// True when a flush is due ([`FLUSH_EVERY`] since the previous one).
    pub fn due(&self, now: Instant) -> bool {
        self.last_flush
            .is_none_or(|last| now.duration_since(last) >= FLUSH_EVERY)
    }

    /// Flushes under `term` (see the module's documentation). Returns `None` when a newer
    /// term has flushed (this leader is deposed; its unflushed observations are dropped).
    /// On an error the observations stay for the next flush.
    ///
    /// # Errors
    /// [`DbError`] from the driver.
    pub async fn flush(&mut self, pool: &Pool, term: i64) -> Result<Option<Flushed>, DbError> {
        self.last_flush = Some(Instant::now());
        let mut tx = berth_db::begin(pool).await?;
        let Some(mut window) =
            db::cluster_counters_claim_in_tx(&mut tx, LEASE_ROLE, term, WINDOW_LAG).await?
        else {
            self.cycles = HistogramDelta::new(names::CYCLE_DURATION_BUCKETS);
            return Ok(None);
        };
        window.from = window
            .from
            .max(window.until - chrono::TimeDelta::seconds(MAX_WINDOW_SECONDS));
        let mut rows = Rows::default();
        let mut flushed = Flushed {
            cycles: self.cycles.count(),
            ..Flushed::default()
        };
        rows.histogram(names::CYCLE_DURATION, &self.cycles);
        rows.add(names::CYCLES, String::new(), self.cycles.count() as f64);
        let mut waits = HistogramDelta::new(names::QUEUE_WAIT_BUCKETS);
        let mut runs = HistogramDelta::new(names::RUN_TIME_BUCKETS);
        if window.until > window.from {
            let started = db::job_started_in_window(&mut *tx, window).await?;
            flushed.started = started.len();
            for s in &started {
                waits.observe(s.wait_seconds);
                rows.add(names::PLACEMENTS, s.partition.clone(), 1.0);
            }
            let ended = db::job_ended_in_window(&mut *tx, window).await?;
            flushed.ended = ended.len();
            for e in &ended {
                if let Some(run) = e.run_seconds {
                    runs.observe(run);
                }
                rows.add(
                    names::JOBS_ENDED,
                    format!("{}{LABEL_SEPARATOR}{}", e.state, e.partition),
                    1.0,
                );
            }
            for (mode, count) in db::preemption_count_in_window(&mut *tx, window).await? {
                rows.add(names::PREEMPTIONS, mode, count as f64);
            }
            let hours = (window.until - window.from).num_milliseconds() as f64 / 3_600_000.0;
            for (pool_name, per_hour) in db::pool_hourly_spend_all(&mut *tx).await? {
                rows.add(names::POOL_SPEND, pool_name, per_hour * hours);
            }
        }
        rows.histogram(names::QUEUE_WAIT, &waits);
        rows.histogram(names::RUN_TIME, &runs);
        let (names_, labels, deltas) = rows.columns();
        db::cluster_counters_add_in_tx(&mut tx, &names_, &labels, &deltas).await?;
        if window.until > window.from {
            db::cluster_counters_observed_in_tx(&mut tx, LEASE_ROLE, window.until).await?;
        }
        tx.commit().await?;
        self.cycles = HistogramDelta::new(names::CYCLE_DURATION_BUCKETS);
        Ok(Some(flushed))
    }
}

/// Counter deltas keyed by (name, labels), so each appears once in the upsert.
#[derive(Debug, Default)]
struct Rows(BTreeMap<(String, String), f64>);

impl Rows {
    fn add(&mut self, name: &str, labels: String, delta: f64) {
        *self.0.entry((name.to_string(), labels)).or_insert(0.0) += delta;
    }

    /// Every bucket, the sum and the count (zeros too, so a histogram exists from the
    /// first flush on).
    fn histogram(&mut self, name: &str, h: &HistogramDelta) {
        for (n, l, v) in h.rows(name) {
            *self.0.entry((n, l)).or_insert(0.0) += v;
        }
    }

    fn columns(self) -> (Vec<String>, Vec<String>, Vec<f64>) {
        let mut names = Vec::with_capacity(self.0.len());
        let mut labels = Vec::with_capacity(self.0.len());
        let mut deltas = Vec::with_capacity(self.0.len());
        for ((n, l), v) in self.0 {
            names.push(n);
            labels.push(l);
            deltas.push(v);
        }
        (names, labels, deltas)
    }
}
