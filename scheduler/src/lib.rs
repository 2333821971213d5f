//! Berth's scheduler (Slurm's controller). Many may run; one leads.
//!
//! * [`leadership`]: the lease with a fencing term; standbys retry, the leader renews and
//!   steps down when renewal fails.
//! * [`planner`]: the pure planner (`plan(&Snapshot) -> Plan`).
//! * [`dependency`]: `--dependency` evaluation.
//! * [`fairshare`]: usage charging at job end, decay, and the fairshare factors.
//! * [`sim`]: the discrete-event trace replay through the planner.
//! * [`trace`]: workload trace readers for the simulator.
//! * [`snapshot`]: the leader's in-memory snapshot, refreshed each cycle with only the
//!   rows changed since the previous one.
//! * [`cycle`]: one scheduling cycle: refresh the snapshot, plan, commit the plan in one
//!   transaction that checks the term, locks the affected node rows and writes the
//!   allocations (the database's partial unique indexes refuse any GPU or CPU held
//!   twice).
//! * [`cloud`]: node pools that follow the queue: slots offered to the planner, launches
//!   for planned starts, the scaling reconciler.
//! * [`cpus`]: which CPU ids a placement gets, re-checked under the node lock.
//! * [`rollup`]: the accounting reconciler: hourly usage rollups, GPU state samples,
//!   retention of ended jobs.
//! * [`metrics`]: the cluster-wide counters `/metrics` shows, flushed by the leader.
//!
//! A cycle runs when `NOTIFY berth_jobs` arrives (a submission, an end, a node) and on a
//! timer.

pub mod cloud;
pub mod coalesce;
pub mod cpus;
pub mod cycle;
pub mod dependency;
pub mod fairshare;
pub mod leadership;
pub mod metrics;
pub mod planner;
pub mod reconcile;
pub mod rollup;
pub mod sim;
pub mod sim_pools;
pub mod snapshot;
pub mod trace;
pub mod will_run;

use std::future::Future;
use std::time::Duration;

/// The lease role name scheduler leaders hold.
pub const LEASE_ROLE: &str = "scheduler";

/// The scheduler role's configuration.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// PostgreSQL URL.
    pub database_url: String,
    /// This scheduler's identity in the leader lease (unique per process).
    pub instance_id: String,
    /// How long a lease lasts without renewal.
    pub lease_ttl: Duration,
    /// How often the leader renews (and a standby tries to take over).
    pub renew_interval: Duration,
    /// The cycle timer (cycles also run on NOTIFY); the reconcilers run on it too.
    pub cycle_interval: Duration,
    /// The most time between two cycles woken by NOTIFY while notifications keep coming
    /// and the cycles start nothing (default 500 ms); an idle scheduler runs at once and
    /// busy cycles are spaced by their cost (see [`coalesce`]). Notifications that
    /// arrive meanwhile are folded into the next cycle.
    pub cycle_min_interval: Duration,
    /// The leader's snapshot is read whole at least this often (default 60 s), besides
    /// whenever the database server changed (see [`snapshot`]).
    pub full_refresh_interval: Duration,
    /// The planner's weights, backfill depth, fairshare half-life and billing weights.
    pub planner: planner::PlannerConfig,
    /// Silence after which a node is declared DOWN (Slurm's `SlurmdTimeout`; default
    /// 30 s). Must exceed the workers' long-poll hold.
    pub node_timeout: Duration,
    /// When a DOWN node that syncs again returns to service.
    pub return_to_service: reconcile::ReturnToService,
    /// How long an ended job's allocation may stay live before it is resolved and its
    /// node drained (Slurm's `UnkillableStepTimeout`; default 120 s).
    pub completing_timeout: Duration,
    /// The statement, lock and idle-in-transaction timeouts of its database sessions.
    pub db_timeouts: berth_db::Timeouts,
    /// How its connections reach PostgreSQL (`[database] pooler`, `direct_url`): its
    /// `LISTEN` session and the migrations go to the direct URL.
    pub db_pooling: berth_db::Pooling,
    /// The cloud module's settings (node pools).
    pub cloud: cloud::CloudSettings,
    /// The accounting reconciler's settings (usage rollups, retention).
    pub accounting: rollup::AccountingSettings,
}

impl SchedulerConfig {
    /// A configuration with the defaults: lease 3 s renewed every second (a standby
    /// takes over within about 4 s of the leader's death), cycles every 2 s, node timeout
    /// 30 s, `ReturnToService=1`, stuck bound 120 s.
    pub fn new(database_url: impl Into<String>, instance_id: impl Into<String>) -> Self {
        SchedulerConfig {
            database_url: database_url.into(),
            instance_id: instance_id.into(),
            lease_ttl: Duration::from_secs(3),
            renew_interval: Duration::from_secs(1),
            cycle_interval: Duration::from_secs(2),
            cycle_min_interval: Duration::from_millis(500),
            full_refresh_interval: Duration::from_secs(60),
            node_timeout: Duration::from_secs(30),
            return_to_service: reconcile::ReturnToService::NonResponsive,
            completing_timeout: Duration::from_secs(120),
            db_timeouts: berth_db::Timeouts::default(),
            db_pooling: berth_db::Pooling::default(),
            planner: planner::PlannerConfig::default(),
            cloud: cloud::CloudSettings::default(),
            accounting: rollup::AccountingSettings::default(),
        }
    }

    /// The reconcilers' settings.
    pub fn reconcile_settings(&self) -> reconcile::ReconcileSettings {
        reconcile::ReconcileSettings {
            node_timeout: self.node_timeout,
            return_to_service: self.return_to_service,
            completing_timeout: self.completing_timeout,
        }
    }
}

/// Errors of the scheduler role.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// Could not reach the database.
    #[error("database")]
    Database(#[source] berth_db::DbError),
    /// Migrations failed.
    #[error("migrating the database")]
    Migrate(#[source] sqlx::migrate::MigrateError),
}

impl From<berth_db::DbError> for SchedulerError {
    fn from(e: berth_db::DbError) -> Self {
        SchedulerError::Database(e)
    }
}

/// Runs the scheduler (standby until it wins the lease) until `shutdown` resolves; a
/// leader releases its lease on the way out so a standby takes over at once.
///
/// # Errors
/// [`SchedulerError`] when the database cannot be reached at start-up or migrated.
pub async fn run(
    config: SchedulerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), SchedulerError> {
    let pools = berth_db::connect_pools(
        &config.database_url,
        4,
        &config.db_timeouts,
        &config.db_pooling,
    )
    .await?;
    berth_db::migrate(&pools.direct)
        .await
        .map_err(SchedulerError::Migrate)?;
    leadership::run_loop(pools, config, shutdown).await;
    Ok(())
}
