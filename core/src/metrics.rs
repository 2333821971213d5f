//! The cluster-wide counters and histograms of `/metrics` that the scheduler leader keeps
//! in the `cluster_counters` table and every api replica reads: their stored names, label
//! orders and histogram buckets, shared so the writer and the readers agree.
//!
//! A counter is one row per label combination (`labels`: the values joined with
//! [`LABEL_SEPARATOR`] in the order given here). A histogram `h` is the rows
//! `h:bucket` (labels: the bucket's upper bound, as [`bucket_label`] writes it; counts per
//! bucket, not cumulative; `+Inf` last), `h:sum` and `h:count`.

/// Joins label values in a stored counter's `labels`.
pub const LABEL_SEPARATOR: char = '|';

/// Jobs that ended, by `state|partition` (their end state: COMPLETED, FAILED, TIMEOUT,
/// CANCELLED …; a requeued job ends only when its last run does).
pub const JOBS_ENDED: &str = "jobs_ended";
/// Jobs started (placements committed), by `partition`.
pub const PLACEMENTS: &str = "placements";
/// Preemptions, by `mode` (`CANCEL`, `REQUEUE`).
pub const PREEMPTIONS: &str = "preemptions";
/// Scheduling cycles run by leaders (no labels).
pub const CYCLES: &str = "cycles";
/// What pools' instances cost, by `pool`: the sum of their instance types'
/// `price_per_hour` integrated over the time they ran (in the price's currency).
pub const POOL_SPEND: &str = "pool_spend";
/// The histogram of a job's wait in the queue, seconds: from submission (or its
/// `--begin` time, when later) to its start; observed as it starts.
pub const QUEUE_WAIT: &str = "queue_wait_seconds";
/// The histogram of a job's run time, seconds: from its (last) start to its end; observed
/// as it ends.
pub const RUN_TIME: &str = "run_seconds";
/// The histogram of the scheduler's cycle duration, seconds (refresh, plan, commit).
pub const CYCLE_DURATION: &str = "cycle_duration_seconds";

/// [`QUEUE_WAIT`]'s bucket upper bounds, seconds (1 s to a day).
pub const QUEUE_WAIT_BUCKETS: &[f64] = &[
    1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0,
];
/// [`RUN_TIME`]'s bucket upper bounds, seconds (10 s to 3 days).
pub const RUN_TIME_BUCKETS: &[f64] = &[
    10.0, 60.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0, 259200.0,
];
/// [`CYCLE_DURATION`]'s bucket upper bounds, seconds (5 ms to 10 s).
pub const CYCLE_DURATION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The label of a histogram's bucket row: the upper bound (`0.5`, `3600`), or `+Inf`.
pub fn bucket_label(upper: f64) -> String {
    if upper.is_infinite() {
        "+Inf".to_string()
    } else {
        format!("{upper}")
    }
}

/// The index of the bucket `value` falls in (the first whose upper bound is ≥ it), or
/// `bounds.len()` for `+Inf`.
pub fn bucket_index(bounds: &[f64], value: f64) -> usize {
    bounds
        .iter()
        .position(|b| value <= *b)
        .unwrap_or(bounds.len())
}

/// A histogram's per-bucket counts (the last is `+Inf`), sum and count, being built.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramDelta {
    /// Upper bounds (without `+Inf`).
    pub bounds: &'static [f64],
    /// Observations per bucket, `bounds.len() + 1` of them.
    pub counts: Vec<u64>,
    /// Sum of the observations.
    pub sum: f64,
}

impl HistogramDelta {
    /// An empty histogram over `bounds`.
    pub fn new(bounds: &'static [f64]) -> Self {
        HistogramDelta {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
        }
    }

    /// Adds one observation (negative values count as 0).
    pub fn observe(&mut self, value: f64) {
        let value = if value.is_finite() {
            value.max(0.0)
        } else {
            0.0
        };
        self.counts[bucket_index(self.bounds, value)] += 1;
        self.sum += value;
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The stored rows of histogram `name`: (`name:bucket`, bound label, count) for every
    /// bucket, then (`name:sum`, "", sum) and (`name:count`, "", count).
    pub fn rows(&self, name: &str) -> Vec<(String, String, f64)> {
        let mut rows: Vec<(String, String, f64)> = self
            .bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(&self.counts)
            .map(|(b, c)| (format!("{name}:bucket"), bucket_label(b), *c as f64))
            .collect();
        rows.push((format!("{name}:sum"), String::new(), self.sum));
        rows.push((format!("{name}:count"), String::new(), self.count() as f64));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_fall_in_the_first_bucket_that_holds_them() {
        let mut h = HistogramDelta::new(&[1.0, 10.0]);
        for v in [0.5, 1.0, 1.5, 10.0, 11.0, -3.0] {
            h.observe(v);
        }
        assert_eq!(h.counts, vec![3, 2, 1]);
        assert_eq!(h.sum, 0.5 + 1.0 + 1.5 + 10.0 + 11.0);
        let rows = h.rows("w");
        assert_eq!(rows[2], ("w:bucket".into(), "+Inf".into(), 1.0));
        assert_eq!(rows[1].1, "10");
        assert_eq!(
            rows.last().unwrap(),
            &("w:count".into(), String::new(), 6.0)
        );
    }
}
