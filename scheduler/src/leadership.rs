//! Leadership: the loop that holds (or waits for) the scheduler lease and runs cycles
//! while leading.
//!
//! Protocol (river-style, see `berth_db::lease`): every `renew_interval` a standby tries
//! to acquire the lease and the leader renews it; a leader whose renewal fails stops
//! placing at once. Every cycle's commit re-checks the term under a row lock, so a deposed
//! leader that has not noticed yet cannot write. While leading, the reconcilers
//! ([`crate::reconcile`]) run before each timed cycle, under the same term.
//!
//! Wake-ups coalesce adaptively ([`crate::coalesce`]): a `NOTIFY berth_jobs` that finds
//! the scheduler idle runs a cycle at once; while notifications keep coming, cycles are
//! spaced by their cost when they start jobs and back off up to `cycle_min_interval`
//! when they start nothing; notifications that arrive meanwhile (a burst of submissions
//! or cancellations, or the ones sent while a cycle ran) fold into the next cycle. An
//! idle cluster runs only the timer's cycles.

use crate::coalesce::Coalescer;
use crate::{cycle, reconcile, SchedulerConfig, LEASE_ROLE};
use berth_db::{lease, notify, Pool, Pools};
use sqlx::postgres::PgListener;
use std::future::Future;
use std::time::Instant;

/// A `LISTEN berth_jobs` session of `direct`'s (see [`berth_db::Pools`]).
async fn listen(direct: &Pool) -> Option<PgListener> {
    let mut listener = PgListener::connect_with(direct).await.ok()?;
    listener.listen(notify::JOBS_CHANNEL).await.ok()?;
    Some(listener)
}

/// Holds or waits for the lease and schedules while leading, until `shutdown`.
pub async fn run_loop(
    pools: Pools,
    config: SchedulerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let ttl = config.lease_ttl.as_secs_f64();
    let mut term: Option<i64> = None;
    let mut led_since = Instant::now();
    let settings = config.reconcile_settings();
    let mut renew = tokio::time::interval(config.renew_interval);
    let mut cycle_timer = tokio::time::interval(config.cycle_interval);
    // A cycle that overran its interval is not followed by the missed ticks' cycles.
    cycle_timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let Pools { pool, direct } = pools;
    let mut listener = listen(&direct).await;
    // The snapshot the leader keeps between cycles; a new term starts from a full read.
    let new_cache = || cycle::SnapshotCache::with_full_refresh(config.full_refresh_interval);
    let mut cache = new_cache();
    // A cycle woken by notifications, due at this time; how many it folds.
    let mut woken: Option<Instant> = None;
    let mut folded: u64 = 0;
    let mut notified_at: Option<Instant> = None;
    // What spaces the cycles woken by notifications.
    let mut coalescer = Coalescer::new(config.cycle_min_interval);
    let cloud = crate::cloud::Cloud::new(config.cloud.clone());
    let mut cloud_task: Option<(i64, tokio::task::JoinHandle<()>)> = None;
    let mut rollup_task: Option<(i64, tokio::task::JoinHandle<()>)> = None;
    // `/metrics`' cluster-wide counters (cycle durations; starts, ends, preemptions).
    let mut counters = crate::metrics::ClusterCounters::default();
    tokio::pin!(shutdown);
    loop {
        let mut run_cycle = false;
        let mut run_reconcile = false;
        let mut trigger = "timer";
        let due = woken;
        tokio::select! {
            _ = &mut shutdown => break,
            _ = renew.tick() => {
                let result = match term {
                    Some(t) => lease::lease_renew(&pool, LEASE_ROLE, &config.instance_id, t, ttl)
                        .await
                        .map(|ok| ok.then_some(t)),
                    None => lease::lease_acquire(&pool, LEASE_ROLE, &config.instance_id, ttl).await,
                };
                match (term, result) {
                    (None, Ok(Some(t))) => {
                        tracing::info!(term = t, instance = %config.instance_id, "became leader");
                        term = Some(t);
                        led_since = Instant::now();
                        cache = new_cache();
                        run_cycle = true;
                        trigger = "lease";
                    }
                    (Some(t), Ok(None)) | (Some(t), Err(_)) => {
                        tracing::warn!(term = t, "lost the lease; stepping down");
                        term = None;
                    }
                    _ => {}
                }
            }
            _ = cycle_timer.tick() => {
                run_cycle = true;
                run_reconcile = true;
            }
            n = async {
                match listener.as_mut() {
                    Some(l) => l.recv().await.map(|_| ()),
                    None => std::future::pending().await,
                }
            } => {
                match n {
                    Ok(()) => {
                        folded += 1;
                        if woken.is_none() {
                            let now = Instant::now();
                            let due = coalescer.due(now);
                            notified_at = Some(now);
                            if due <= now {
                                // Idle: run now, not at the timer's next tick.
                                run_cycle = true;
                                trigger = "notify";
                            } else {
                                woken = Some(due);
                            }
                        }
                    }
                    Err(_) => listener = None,
                }
            }
            _ = tokio::time::sleep_until(due.unwrap_or_else(Instant::now).into()), if due.is_some() => {
                run_cycle = true;
                trigger = "notify";
            }
        }
        if listener.is_none() {
            listener = listen(&direct).await;
        }
        if let (Some(t), true) = (term, run_reconcile) {
            match reconcile::reconcile(&pool, t, led_since.elapsed(), &settings).await {
                Ok(report) if report.deposed => {
                    tracing::warn!(term = t, "term is stale; stepping down");
                    term = None;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(term = t, error = %e, "reconcile failed; retrying next time")
                }
            }
        }
        // The cloud reconciler runs while this process leads, under its term.
        match (term, &cloud_task) {
            (Some(t), Some((running, task))) if *running == t && !task.is_finished() => {}
            (Some(t), _) => {
                // A new term, or the reconciler ended (a panic in it must not stop
                // scaling until the next failover): (re)start it.
                if let Some((_, task)) = cloud_task.take() {
                    task.abort();
                }
                cloud_task = Some((t, tokio::spawn(cloud.clone().run(pool.clone(), t))));
            }
            (None, Some(_)) => {
                if let Some((_, task)) = cloud_task.take() {
                    task.abort();
                }
            }
            (None, None) => {}
        }
        // The accounting reconciler (usage rollups, retention) likewise.
        match (term, &rollup_task) {
            (Some(t), Some((running, task))) if *running == t && !task.is_finished() => {}
            (Some(t), _) => {
                if let Some((_, task)) = rollup_task.take() {
                    task.abort();
                }
                rollup_task = Some((
                    t,
                    tokio::spawn(crate::rollup::run(
                        pool.clone(),
                        t,
                        config.accounting.clone(),
                        config.planner.billing,
                    )),
                ));
            }
            (None, Some(_)) => {
                if let Some((_, task)) = rollup_task.take() {
                    task.abort();
                }
            }
            (None, None) => {}
        }
        if run_cycle {
            // This cycle sees whatever the notifications so far announced.
            woken = None;
        }
        if let (Some(t), true) = (term, run_cycle) {
            let started_at = Instant::now();
            // How long the first notification it folds waited for it.
            let waited_ms = notified_at.take().map_or(0, |n| {
                started_at.saturating_duration_since(n).as_millis() as u64
            });
            let outcome =
                cycle::run_cycle_with_cloud(&pool, t, &config.planner, &mut cache, Some(&cloud))
                    .await;
            let ended = Instant::now();
            let elapsed = ended - started_at;
            counters.observe_cycle(elapsed);
            let started = match &outcome {
                Ok(cycle::Outcome::Committed { started }) => *started as u64,
                _ => 0,
            };
            coalescer.after_cycle(ended, elapsed, started, folded > 0);
            if counters.due(ended) {
                if let Err(e) = counters.flush(&pool, t).await {
                    tracing::warn!(term = t, error = %e, "metrics flush failed; retrying next time");
                }
            }
            tracing::debug!(
                term = t,
                trigger,
                notifications = folded,
                waited_ms,
                full_read = ?cache.last_full,
                elapsed_ms = elapsed.as_millis() as u64,
                next_interval_ms = coalescer.interval().as_millis() as u64,
                "cycle ran"
            );
            folded = 0;
            match outcome {
                Ok(cycle::Outcome::Committed { started }) if started > 0 => {
                    tracing::info!(term = t, started, "cycle committed");
                }
                Ok(cycle::Outcome::Committed { .. }) => {}
                Ok(cycle::Outcome::Deposed) => {
                    tracing::warn!(term = t, "term is stale; stepping down");
                    term = None;
                }
                Err(e) => tracing::warn!(term = t, error = %e, "cycle failed; retrying next time"),
            }
        }
    }
    if let Some((_, task)) = cloud_task.take() {
        task.abort();
    }
    if let Some((_, task)) = rollup_task.take() {
        task.abort();
    }
    if let Some(t) = term {
        if let Err(e) = lease::lease_release(&pool, LEASE_ROLE, &config.instance_id, t).await {
            tracing::warn!(error = %e, "could not release the lease");
        } else {
            tracing::info!(term = t, "released the lease");
        }
    }
}
