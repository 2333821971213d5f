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
