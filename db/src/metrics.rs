//! What `/metrics` reads and the scheduler leader writes for it: the `cluster_counters`
//! table (cluster-wide counters and histograms, see [`berth_core::metrics`]) with its
//! flush window in `cluster_counters_state`, and the aggregate reads an api replica's
//! background refresh makes (jobs by state, nodes, GPUs with their latest samples and
//! holders, pools, the leader lease). None of these runs on a scrape.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use tracing::instrument;

/// The window a flush counts: job starts and ends and preemptions in (`from`, `until`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterWindow {
    /// Where the previous flush stopped (exclusive).
    pub from: DateTime<Utc>,
    /// The database's `now()` less the lag (inclusive).
    pub until: DateTime<Utc>,
}

/// Claims the counters for a flush under `term` (`role`: the lease role): locks the
/// `cluster_counters_state` row until the transaction ends, records `term`, and returns
/// the window to count: from where the last flush stopped to `now() - lag_seconds`
/// (empty on the very first flush). `None` when a newer term has flushed: this leader is
/// deposed and must write nothing.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn cluster_counters_claim_in_tx(
    conn: &mut PgConnection,
    role: &str,
    term: i64,
    lag_seconds: f64,
) -> Result<Option<CounterWindow>, DbError> {
    let row = sqlx::query!(
        r#"INSERT INTO cluster_counters_state AS s (role, term, observed_until)
           VALUES ($1, $2, now() - make_interval(secs => $3))
           ON CONFLICT (role) DO UPDATE SET term = EXCLUDED.term
           WHERE s.term <= EXCLUDED.term
           RETURNING s.observed_until AS "from!",
                     (now() - make_interval(secs => $3)) AS "until!""#,
        role,
        term,
        lag_seconds
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| CounterWindow {
        from: r.from,
        until: r.until,
    }))
}

/// Records that everything up to `until` has been counted (inside the claiming
/// transaction).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn cluster_counters_observed_in_tx(
    conn: &mut PgConnection,
    role: &str,
    until: DateTime<Utc>,
) -> Result<(), DbError> {
    sqlx::query!(
        "UPDATE cluster_counters_state SET observed_until = $2, flushed_at = now() WHERE role = $1",
        role,
        until
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Adds `deltas[i]` to counter (`names[i]`, `labels[i]`), creating it at 0 first. Each
/// (name, labels) pair must appear once.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn cluster_counters_add_in_tx(
    conn: &mut PgConnection,
    names: &[String],
    labels: &[String],
    deltas: &[f64],
) -> Result<(), DbError> {
    sqlx::query!(
        r#"INSERT INTO cluster_counters AS c (name, labels, value)
           SELECT * FROM UNNEST($1::text[], $2::text[], $3::float8[])
           ON CONFLICT (name, labels) DO UPDATE SET value = c.value + EXCLUDED.value"#,
        names,
        labels,
        deltas
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// One stored counter (or histogram part).
#[derive(Debug, Clone, PartialEq)]
pub struct CounterRow {
    /// Its name (`jobs_ended`, `queue_wait_seconds:bucket`).
    pub name: String,
    /// Its label values joined with `|`.
    pub labels: String,
    /// Its value.
    pub value: f64,
}

/// Every stored counter.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn cluster_counters_list(ex: impl PgExecutor<'_>) -> Result<Vec<CounterRow>, DbError> {
    Ok(sqlx::query_as!(
        CounterRow,
        "SELECT name, labels, value FROM cluster_counters ORDER BY name, labels"
    )
    .fetch_all(ex)
    .await?)
}

/// A job that started in a flush window.
#[derive(Debug, Clone, PartialEq)]
pub struct JobStartedRow {
    /// Its partition.
    pub partition: String,
    /// How long it waited, seconds: from submission, or its `--begin` time when later, to
    /// its start.
    pub wait_seconds: f64,
}

/// Jobs whose (current) start lies in `window`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_started_in_window(
    ex: impl PgExecutor<'_>,
    window: CounterWindow,
) -> Result<Vec<JobStartedRow>, DbError> {
    Ok(sqlx::query_as!(
        JobStartedRow,
        r#"SELECT partition,
                  GREATEST(EXTRACT(EPOCH FROM start_time
                      - GREATEST(submit_time, COALESCE(begin_time, submit_time)))::float8, 0)
                      AS "wait_seconds!"
           FROM jobs WHERE start_time > $1 AND start_time <= $2"#,
        window.from,
        window.until
    )
    .fetch_all(ex)
    .await?)
}

/// A job that ended in a flush window.
#[derive(Debug, Clone, PartialEq)]
pub struct JobEndedRow {
    /// Its end state.
    pub state: String,
    /// Its partition.
    pub partition: String,
    /// Its (last) run's time, seconds; `None` for a job that never started.
    pub run_seconds: Option<f64>,
}

/// Jobs whose end lies in `window`.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_ended_in_window(
    ex: impl PgExecutor<'_>,
    window: CounterWindow,
) -> Result<Vec<JobEndedRow>, DbError> {
    Ok(sqlx::query_as!(
        JobEndedRow,
        r#"SELECT state, partition,
                  GREATEST(EXTRACT(EPOCH FROM end_time - start_time)::float8, 0) AS run_seconds
           FROM jobs WHERE end_time > $1 AND end_time <= $2"#,
        window.from,
        window.until
    )
    .fetch_all(ex)
    .await?)
}

/// Preemptions decided in `window`, by mode (`CANCEL`, `REQUEUE`).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn preemption_count_in_window(
    ex: impl PgExecutor<'_>,
    window: CounterWindow,
) -> Result<Vec<(String, i64)>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT mode, count(*) AS "count!" FROM job_preemptions
           WHERE created_at > $1 AND created_at <= $2 GROUP BY mode"#,
        window.from,
        window.until
    )
    .fetch_all(ex)
    .await?;
    Ok(rows.into_iter().map(|r| (r.mode, r.count)).collect())
}

/// What each pool's running instances cost per hour: the sum, over its nodes that have
/// an instance, of their instance type's `price_per_hour` in the pool's spec (a type no
/// longer in the spec counts 0). Pools without instances are left out.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn pool_hourly_spend_all(ex: impl PgExecutor<'_>) -> Result<Vec<(String, f64)>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT n.pool AS "pool!", COALESCE(SUM((
                   SELECT (t->>'price_per_hour')::float8
                   FROM jsonb_array_elements(p.spec->'instance_types') t
                   WHERE t->>'name' = n.instance_type LIMIT 1)), 0)::float8 AS "spend!"
           FROM nodes n JOIN pools p ON p.name = n.pool
           WHERE n.pool IS NOT NULL AND n.instance_id IS NOT NULL
           GROUP BY n.pool ORDER BY n.pool"#
    )
    .fetch_all(ex)
    .await?;
    Ok(rows.into_iter().map(|r| (r.pool, r.spend)).collect())
}

/// Live jobs counted by state, partition and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobCountRow {
    /// PENDING, RUNNING, SUSPENDED or COMPLETING.
    pub state: String,
    /// The partition.
    pub partition: String,
    /// The pending reason (`None` for running jobs, or a pending job not yet looked at).
    pub reason: Option<String>,
    /// Jobs.
    pub count: i64,
}

/// The jobs not yet ended (PENDING, RUNNING, SUSPENDED, COMPLETING), counted by state,
/// partition and reason. A job array's pending master counts once.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_count_live(ex: impl PgExecutor<'_>) -> Result<Vec<JobCountRow>, DbError> {
    Ok(sqlx::query_as!(
        JobCountRow,
        r#"SELECT state, partition, reason, count(*) AS "count!"
           FROM jobs WHERE state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')
           GROUP BY state, partition, reason"#
    )
    .fetch_all(ex)
    .await?)
}

/// A node as the metrics see it.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsNodeRow {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Administrative state (`UP`, `DRAINED`, `POWERED_DOWN` …).
    pub state: String,
    /// Its pool, for a pool slot.
    pub pool: Option<String>,
    /// It holds a live allocation.
    pub busy: bool,
    /// Its usable CPUs are all allocated.
    pub cpus_full: bool,
    /// Its usable CPUs are known (more than none).
    pub cpus_known: bool,
}

/// Every node with whether it holds a live allocation and whether its CPUs are full.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn metrics_node_list(ex: impl PgExecutor<'_>) -> Result<Vec<MetricsNodeRow>, DbError> {
    Ok(sqlx::query_as!(
        MetricsNodeRow,
        r#"SELECT n.id, n.name, n.state, n.pool,
                  (a.live IS NOT NULL) AS "busy!",
                  (n.usable_cpus > 0 AND COALESCE(a.cpus, 0) >= n.usable_cpus) AS "cpus_full!",
                  (n.usable_cpus > 0) AS "cpus_known!"
           FROM nodes n
           LEFT JOIN (SELECT node_id, count(*) AS live, SUM(cardinality(cpu_ids)) AS cpus
                      FROM allocations WHERE released_at IS NULL GROUP BY node_id) a
                  ON a.node_id = n.id
           ORDER BY n.id"#
    )
    .fetch_all(ex)
    .await?)
}

/// A physical GPU (not a MIG instance or shard) with its latest sample.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsGpuRow {
    /// Its node's id.
    pub node_id: i64,
    /// Its index on the node.
    pub index: i32,
    /// UUID.
    pub uuid: String,
    /// Model name.
    pub model: String,
    /// Memory, MiB.
    pub memory_mib: i64,
    /// Latest utilisation, percent.
    pub utilization_pct: Option<i32>,
    /// Latest memory in use, MiB.
    pub memory_used_mib: Option<i64>,
    /// Latest power draw, watts.
    pub power_w: Option<f64>,
    /// Latest temperature, °C.
    pub temperature_c: Option<i32>,
    /// When the latest sample came.
    pub sampled_at: Option<DateTime<Utc>>,
}

/// Every present physical GPU, by node id and index.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn metrics_gpu_list(ex: impl PgExecutor<'_>) -> Result<Vec<MetricsGpuRow>, DbError> {
    Ok(sqlx::query_as!(
        MetricsGpuRow,
        r#"SELECT node_id, index, uuid, model, memory_mib, utilization_pct, memory_used_mib,
                  power_w, temperature_c, sampled_at
           FROM gpus WHERE present AND kind = 'gpu'
           ORDER BY node_id, index"#
    )
    .fetch_all(ex)
    .await?)
}

/// A live hold on a physical GPU (itself, or one of its MIG instances or shards).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsGpuHoldRow {
    /// The node's id.
    pub node_id: i64,
    /// The physical GPU's index.
    pub gpu_index: i32,
    /// The job holding it (or part of it).
    pub job_id: i64,
}

/// Every live GPU hold, mapped to its physical GPU.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn metrics_gpu_holds(ex: impl PgExecutor<'_>) -> Result<Vec<MetricsGpuHoldRow>, DbError> {
    Ok(sqlx::query_as!(
        MetricsGpuHoldRow,
        r#"SELECT ag.node_id, COALESCE(g.parent, g.index) AS "gpu_index!", a.job_id
           FROM allocation_gpus ag
           JOIN allocations a ON a.id = ag.allocation_id
           JOIN gpus g ON g.node_id = ag.node_id AND g.index = ag.gpu_index
           WHERE ag.released_at IS NULL"#
    )
    .fetch_all(ex)
    .await?)
}

/// The scheduler lease as `/metrics` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderRow {
    /// The holder's identity.
    pub holder: String,
    /// The fencing term (1 for the first leader; each takeover by another holder adds 1).
    pub term: i64,
    /// The lease has not expired.
    pub live: bool,
}

/// `role`'s lease, live or not (`None`: no scheduler ever led).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn metrics_leader(
    ex: impl PgExecutor<'_>,
    role: &str,
) -> Result<Option<LeaderRow>, DbError> {
    Ok(sqlx::query_as!(
        LeaderRow,
        r#"SELECT holder, term, (expires_at > now()) AS "live!" FROM leader_lease WHERE role = $1"#,
        role
    )
    .fetch_optional(ex)
    .await?)
}
