//! Adaptive coalescing of the scheduler's wake-ups (`NOTIFY berth_jobs`).
//!
//! A notification that finds the scheduler idle (no cycle folded notifications within
//! the cap) runs a cycle at once, as does one that comes after the current interval: a
//! submission on a quiet cluster starts in milliseconds. While
//! notifications keep coming, cycles are spaced by an interval that follows what the
//! cycles do:
//!
//! * a cycle that started jobs sets the interval to the recent cycles' cost (an
//!   exponentially weighted mean of their durations), so that GPUs freed by a stream of
//!   job ends are refilled as fast as the leader can plan, and the leader spends at most
//!   about half its time in cycles woken by notifications;
//! * a cycle woken by notifications that started nothing (held submissions,
//!   cancellations, a partition edit) doubles it, from [`FIRST_STEP`] up to the cap
//!   (`cycle_min_interval`, 500 ms by default), so that a burst of a few hundred such
//!   notifications costs a few cycles, not one each.
//!
//! Notifications that arrive while a cycle is due or running fold into the next one.

use std::time::{Duration, Instant};

/// The interval after the first cycle of a burst that started nothing.
pub const FIRST_STEP: Duration = Duration::from_millis(10);

/// The weight of the newest cycle in the cost's moving mean.
const COST_WEIGHT: f64 = 0.3;

/// When the next cycle woken by notifications runs, from what the last cycles cost and
/// did. Pure: the caller passes the clock's readings.
#[derive(Debug, Clone)]
pub struct Coalescer {
    /// The longest the interval grows (`cycle_min_interval`).
    cap: Duration,
    /// The least time between the end of one cycle and the start of the next woken by
    /// notifications.
    interval: Duration,
    /// The moving mean of the cycles' durations.
    cost: Option<Duration>,
    /// When the last cycle that folded notifications ended.
    last_notified: Option<Instant>,
}

impl Coalescer {
    /// A coalescer whose interval grows to at most `cap`; it starts idle.
    pub fn new(cap: Duration) -> Self {
        Coalescer {
            cap,
            interval: Duration::ZERO,
            cost: None,
            last_notified: None,
        }
    }

    /// When a cycle woken by a notification that arrived at `now` runs: when the interval
    /// since the last cycle that folded notifications has passed (at once if it has).
    /// Only a scheduler that folded none for the cap's length is idle: its interval
    /// starts again from zero. Notifications that come a little slower than the interval
    /// (one every 40 ms from a client submitting held jobs in a loop) keep backing it
    /// off, so that they fold too, and do not cost a cycle each. Cycles of the timer
    /// that folded none do not delay it.
    pub fn due(&mut self, now: Instant) -> Instant {
        match self.last_notified {
            Some(end) if now.saturating_duration_since(end) < self.interval => end + self.interval,
            Some(end) if now.saturating_duration_since(end) < self.cap => now,
            _ => {
                self.interval = Duration::ZERO;
                now
            }
        }
    }

    /// The current interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The moving mean of the cycles' durations (zero before the first).
    pub fn cost(&self) -> Duration {
        self.cost.unwrap_or_default()
    }

    /// Takes a cycle that ended at `end`, took `elapsed`, started `started` jobs, and
    /// folded notifications (`notified`) or only ran on the timer or a new term.
    pub fn after_cycle(&mut self, end: Instant, elapsed: Duration, started: u64, notified: bool) {
        if notified {
            self.last_notified = Some(end);
        }
        let cost = match self.cost {
            None => elapsed,
            Some(mean) => mean.mul_f64(1.0 - COST_WEIGHT) + elapsed.mul_f64(COST_WEIGHT),
        };
        self.cost = Some(cost);
        let floor = cost.min(self.cap);
        if started > 0 {
            self.interval = floor;
        } else if notified {
            self.interval = (self.interval * 2).max(FIRST_STEP).max(floor).min(self.cap);
        } else {
            // A timer's cycle that started nothing says nothing about the notifications.
            self.interval = self.interval.max(floor);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP: Duration = Duration::from_millis(500);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn an_idle_scheduler_runs_at_once() {
        let mut c = Coalescer::new(CAP);
        let now = Instant::now();
        assert_eq!(c.due(now), now);
        // After a burst backed the interval off to the cap …
        for _ in 0..10 {
            c.after_cycle(now, ms(2), 0, true);
        }
        assert_eq!(c.interval(), CAP);
        // … a timer's cycle that folded nothing does not delay the next notification …
        c.after_cycle(now + ms(900), ms(2), 0, false);
        assert_eq!(c.due(now + ms(1000)), now + ms(1000));
        // … and the interval starts again from nothing.
        assert_eq!(c.interval(), Duration::ZERO);
        c.after_cycle(now + ms(1003), ms(2), 0, true);
        assert_eq!(c.interval(), FIRST_STEP);
    }

    #[test]
    fn cycles_that_start_nothing_back_off_to_the_cap() {
        let mut c = Coalescer::new(CAP);
        let end = Instant::now();
        let mut seen = Vec::new();
        for _ in 0..10 {
            c.after_cycle(end, ms(2), 0, true);
            seen.push(c.interval().as_millis());
        }
        assert_eq!(seen, [10, 20, 40, 80, 160, 320, 500, 500, 500, 500]);
        // A notification 5 ms after the last cycle waits for the interval.
        assert_eq!(c.due(end + ms(5)), end + CAP);
        // One that comes after a quiet interval runs at once.
        assert_eq!(c.due(end + ms(600)), end + ms(600));
    }

    #[test]
    fn notifications_a_little_slower_than_the_interval_fold_too() {
        // 200 held submissions from a loop, one every 40 ms (8 s), none of which starts
        // a job; cycles take 5 ms. Each finds the 10 ms first step passed, but the
        // scheduler was not idle: the interval keeps backing off.
        let mut c = Coalescer::new(CAP);
        let t0 = Instant::now();
        let mut due: Option<Instant> = None;
        let mut cycles = 0;
        for i in 0..200u32 {
            let at = t0 + ms(40) * i;
            if let Some(d) = due.filter(|d| *d <= at) {
                cycles += 1;
                c.after_cycle(d + ms(5), ms(5), 0, true);
                due = None;
            }
            if due.is_none() {
                let d = c.due(at);
                if d <= at {
                    // Runs at once, before the next notification.
                    cycles += 1;
                    c.after_cycle(at + ms(5), ms(5), 0, true);
                } else {
                    due = Some(d);
                }
            }
        }
        if due.is_some() {
            cycles += 1;
        }
        // One cycle per 500 ms once backed off, and the few while it grows.
        assert!(cycles <= 8 * 2 + 8, "{cycles} cycles for 200 notifications");
        // A notification after a quiet cap's length runs at once, the interval reset.
        let quiet = t0 + ms(40) * 200 + CAP * 2;
        assert_eq!(c.due(quiet), quiet);
        assert_eq!(c.interval(), Duration::ZERO);
    }

    #[test]
    fn cycles_that_start_jobs_run_as_often_as_they_cost() {
        let mut c = Coalescer::new(CAP);
        let end = Instant::now();
        for _ in 0..6 {
            c.after_cycle(end, ms(1), 0, true);
        }
        assert_eq!(c.interval(), ms(320));
        c.after_cycle(end, ms(20), 3, true);
        // The mean moved towards 20 ms, and the interval follows it.
        assert!(
            c.interval() > ms(1) && c.interval() < ms(20),
            "{:?}",
            c.interval()
        );
        for _ in 0..30 {
            c.after_cycle(end, ms(20), 1, true);
        }
        assert!(c.interval() > ms(19) && c.interval() <= ms(20));
        // Expensive cycles are spaced by their cost, up to the cap.
        for _ in 0..30 {
            c.after_cycle(end, ms(2_000), 1, false);
        }
        assert_eq!(c.interval(), CAP);
    }

    #[test]
    fn a_burst_of_notifications_costs_a_few_cycles() {
        // 600 notifications, one every 7 ms (4.2 s), none of which starts a job; cycles
        // take 5 ms.
        let mut c = Coalescer::new(CAP);
        let t0 = Instant::now();
        let mut due: Option<Instant> = None;
        let mut cycles = 0;
        for i in 0..600u32 {
            let at = t0 + ms(7) * i;
            // Cycles due before this notification run first.
            if let Some(d) = due.filter(|d| *d <= at) {
                cycles += 1;
                c.after_cycle(d + ms(5), ms(5), 0, true);
                due = None;
            }
            if due.is_none() {
                due = Some(c.due(at));
            }
        }
        if due.is_some() {
            cycles += 1;
        }
        assert!(cycles <= 20, "{cycles} cycles");
        assert!(cycles >= 8, "{cycles} cycles");
    }
}
