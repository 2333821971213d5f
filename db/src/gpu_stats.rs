//! The `job_gpu_stats` table: GPU samples aggregated per job run and GPU.

use crate::DbError;
use chrono::{DateTime, Utc};
use sqlx::PgExecutor;

/// Longest gap between two samples that counts towards energy, seconds (a worker that
/// was away does not get its GPUs' power integrated over the outage).
pub const MAX_SAMPLE_GAP_SECONDS: f64 = 60.0;

/// Folds a node's samples (parallel slices by GPU index) into the stats of the job runs
/// holding those GPUs (live allocations of RUNNING jobs).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_gpu_stats_record(
    ex: impl PgExecutor<'_>,
    node_id: i64,
    indices: &[i32],
    utilization: &[i32],
    memory_used: &[i64],
    power: &[f64],
    temperature: &[i32],
) -> Result<(), DbError> {
    sqlx::query!(
        r#"INSERT INTO job_gpu_stats AS s (job_id, run, node_id, gpu_index, samples,
               utilization_sum, memory_peak_mib, energy_j, last_utilization_pct,
               last_memory_used_mib, last_power_w, last_temperature_c)
           SELECT a.job_id, a.run, a.node_id, x.idx, 1, x.util, x.mem, 0, x.util, x.mem,
                  x.power, x.temp
           FROM UNNEST($2::int[], $3::int[], $4::bigint[], $5::float8[], $6::int[])
                AS x(idx, util, mem, power, temp)
           JOIN allocation_gpus g ON g.node_id = $1 AND g.gpu_index = x.idx AND g.released_at IS NULL
           JOIN allocations a ON a.id = g.allocation_id
           JOIN jobs j ON j.id = a.job_id AND j.restart_count = a.run AND j.state = 'RUNNING'
           ON CONFLICT (job_id, run, node_id, gpu_index) DO UPDATE SET
               samples = s.samples + 1,
               utilization_sum = s.utilization_sum + EXCLUDED.utilization_sum,
               memory_peak_mib = GREATEST(s.memory_peak_mib, EXCLUDED.memory_peak_mib),
               energy_j = s.energy_j + COALESCE(EXCLUDED.last_power_w, 0)
                   * LEAST(GREATEST(EXTRACT(EPOCH FROM now() - s.last_sampled_at)::float8, 0), $7),
               last_utilization_pct = EXCLUDED.last_utilization_pct,
               last_memory_used_mib = EXCLUDED.last_memory_used_mib,
               last_power_w = EXCLUDED.last_power_w,
               last_temperature_c = EXCLUDED.last_temperature_c,
               last_sampled_at = now()"#,
        node_id,
        indices,
        utilization,
        memory_used,
        power,
        temperature,
        MAX_SAMPLE_GAP_SECONDS,
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// One GPU's aggregated usage by a job run, with its node's name.
#[derive(Debug, Clone)]
pub struct JobGpuStatsRow {
    /// The node's name.
    pub node_name: String,
    /// The GPU index.
    pub gpu_index: i32,
    /// Samples.
    pub samples: i64,
    /// Sum of utilisation percentages.
    pub utilization_sum: i64,
    /// Peak memory, MiB.
    pub memory_peak_mib: i64,
    /// Energy, joules.
    pub energy_j: f64,
    /// Latest utilisation.
    pub last_utilization_pct: Option<i32>,
    /// Latest memory.
    pub last_memory_used_mib: Option<i64>,
    /// Latest power.
    pub last_power_w: Option<f64>,
    /// Latest temperature.
    pub last_temperature_c: Option<i32>,
    /// Latest sample's time.
    pub last_sampled_at: DateTime<Utc>,
}

/// The GPU stats of job run (`job_id`, `run`), by node then GPU index.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_gpu_stats_list(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
) -> Result<Vec<JobGpuStatsRow>, DbError> {
    Ok(sqlx::query_as!(
        JobGpuStatsRow,
        r#"SELECT n.name AS node_name, s.gpu_index, s.samples, s.utilization_sum,
                  s.memory_peak_mib, s.energy_j, s.last_utilization_pct, s.last_memory_used_mib,
                  s.last_power_w, s.last_temperature_c, s.last_sampled_at
           FROM job_gpu_stats s JOIN nodes n ON n.id = s.node_id
           WHERE s.job_id = $1 AND s.run = $2
           ORDER BY n.name, s.gpu_index"#,
        job_id,
        run
    )
    .fetch_all(ex)
    .await?)
}

/// The least time between two rows of a GPU's time series (`job_gpu_samples`), seconds:
/// a worker syncs more often, and the charts need no finer grain.
pub const SERIES_INTERVAL_SECONDS: f64 = 10.0;

/// Appends a node's samples (parallel slices by GPU index) to the time series of the job
/// runs holding those GPUs (live allocations of RUNNING jobs), skipping a GPU whose
/// latest row is younger than [`SERIES_INTERVAL_SECONDS`].
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_gpu_samples_record(
    ex: impl PgExecutor<'_>,
    node_id: i64,
    indices: &[i32],
    utilization: &[i32],
    memory_used: &[i64],
    power: &[f64],
) -> Result<(), DbError> {
    sqlx::query!(
        r#"INSERT INTO job_gpu_samples (job_id, run, node_id, gpu_index, utilization_pct,
               memory_used_mib, power_w)
           SELECT a.job_id, a.run, a.node_id, x.idx, LEAST(GREATEST(x.util, 0), 100),
                  GREATEST(x.mem, 0), CASE WHEN x.power >= 0 THEN x.power END
           FROM UNNEST($2::int[], $3::int[], $4::bigint[], $5::float8[]) AS x(idx, util, mem, power)
           JOIN allocation_gpus g ON g.node_id = $1 AND g.gpu_index = x.idx AND g.released_at IS NULL
           JOIN allocations a ON a.id = g.allocation_id
           JOIN jobs j ON j.id = a.job_id AND j.restart_count = a.run AND j.state = 'RUNNING'
           WHERE NOT EXISTS (
               SELECT 1 FROM job_gpu_samples p
               WHERE p.job_id = a.job_id AND p.run = a.run AND p.node_id = a.node_id
                 AND p.gpu_index = x.idx
                 AND p.sampled_at > now() - make_interval(secs => $6))
           ON CONFLICT DO NOTHING"#,
        node_id,
        indices,
        utilization,
        memory_used,
        power,
        SERIES_INTERVAL_SECONDS,
    )
    .execute(ex)
    .await?;
    Ok(())
}

/// One point of a GPU's time series: the samples of one time bucket.
#[derive(Debug, Clone)]
pub struct GpuSampleBucketRow {
    /// The node's name.
    pub node_name: String,
    /// The GPU index.
    pub gpu_index: i32,
    /// The bucket's start.
    pub bucket: DateTime<Utc>,
    /// Mean utilisation in the bucket, percent.
    pub utilization_pct: f64,
    /// Highest memory in use in the bucket, MiB.
    pub memory_used_mib: i64,
    /// Mean power in the bucket, watts (`None` when the GPU reports none).
    pub power_w: Option<f64>,
}

/// The first and last sample times of job run (`job_id`, `run`), or `None` without any.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_gpu_samples_span(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
) -> Result<Option<(DateTime<Utc>, DateTime<Utc>)>, DbError> {
    let row = sqlx::query!(
        r#"SELECT min(sampled_at) AS first, max(sampled_at) AS last
           FROM job_gpu_samples WHERE job_id = $1 AND run = $2"#,
        job_id,
        run
    )
    .fetch_one(ex)
    .await?;
    Ok(row.first.zip(row.last))
}

/// The time series of job run (`job_id`, `run`) from `since` on, in buckets of
/// `step_seconds` aligned to the Unix epoch: by node, GPU index, then time.
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn job_gpu_samples_list(
    ex: impl PgExecutor<'_>,
    job_id: i64,
    run: i32,
    since: Option<DateTime<Utc>>,
    step_seconds: f64,
) -> Result<Vec<GpuSampleBucketRow>, DbError> {
    Ok(sqlx::query_as!(
        GpuSampleBucketRow,
        r#"SELECT n.name AS node_name, s.gpu_index,
                  date_bin(make_interval(secs => $4), s.sampled_at, TIMESTAMPTZ 'epoch') AS "bucket!",
                  avg(s.utilization_pct)::float8 AS "utilization_pct!",
                  max(s.memory_used_mib) AS "memory_used_mib!",
                  avg(s.power_w)::float8 AS power_w
           FROM job_gpu_samples s JOIN nodes n ON n.id = s.node_id
           WHERE s.job_id = $1 AND s.run = $2 AND ($3::timestamptz IS NULL OR s.sampled_at >= $3)
           GROUP BY n.name, s.gpu_index, 3
           ORDER BY n.name, s.gpu_index, 3"#,
        job_id,
        run,
        since,
        step_seconds,
    )
    .fetch_all(ex)
    .await?)
}
