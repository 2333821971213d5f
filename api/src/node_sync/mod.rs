//! The worker protocol: registration, the long-poll sync (heartbeat, reports, samples in;
//! assignments and cancellations out) and applying job reports exactly once.
//!
//! Every report names a job run, and is applied only when that run is the reporting
//! node's: it holds (or held) the run's batch allocation, or, when the database forgot
//! the placement (a failover with asynchronous replication lost its last commits), the
//! report carries the run's grant ([`crate::run_grant`]). Anything else is refused for
//! that report alone, logged with the node and the job, and listed in the answer
//! ([`SyncResponse::rejected`]) so that the worker stops sending it; so is a report that
//! can never apply. A database that remembers fewer of the node's reports than the
//! worker was told it took (its `acked_seq`) asks the worker to send them again
//! ([`SyncResponse::resend_after`]): the worker's journal, not the database's older
//! memory, decides what ran.

use crate::auth::Keys;
use crate::error::ApiError;
use berth_core::signal::{SignalDelivery, SignalTarget};
use berth_core::state::JobState;
use berth_core::step::{PtyInput, StepTaskKey, StepTaskLaunch, StepTaskReport};
use berth_core::wire::{
    Assignment, Cancellation, Interruption, JobReport, LaunchFault, NodeRegister, RejectedReport,
    ReportKind, ReportSource, RunLimit, RunningJob, SyncRequest, SyncResponse,
};
use berth_db::job::JobRow;
use berth_db::node::{GpuInsert, NodeRow};
use berth_db::{
    allocation, job, node, node_report, notify, preemption, signal, step, DbError, Pool,
};
use std::collections::{BTreeMap, HashMap, HashSet};

mod desired;
mod reports;

pub use desired::*;
pub use reports::*;
/// The longest a sync may be held, seconds.
pub const MAX_WAIT_SECONDS: u32 = 60;

/// The most devices a node may register: the scheduler places jobs on at most this many
/// per node.
pub const MAX_NODE_DEVICES: usize = 128;

/// Registers (or re-registers) a node with its inventory.
///
/// # Errors
/// 400 for an empty name, out-of-range numbers, a device index listed twice, more than
/// [`MAX_NODE_DEVICES`] devices, or a MIG instance or shard not naming its GPU (and a
/// whole GPU naming one); 503 when the database is unreachable.
pub async fn register(pool: &Pool, req: &NodeRegister) -> Result<NodeRow, ApiError> {
    if req.name.is_empty()
        || !req
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    {
        return Err(ApiError::bad_field(
            "name",
            "node names use letters, digits, '_', '.' and '-'",
        ));
    }
    let gpus: Vec<GpuInsert> = req
        .gpus
        .iter()
        .map(|g| {
            Ok(GpuInsert {
                index: i32::try_from(g.index)
                    .map_err(|_| ApiError::bad_field("gpus.index", "too large"))?,
                uuid: g.uuid.clone(),
                model: g.model.clone(),
                memory_mib: i64::try_from(g.memory_mib)
                    .map_err(|_| ApiError::bad_field("gpus.memory_mib", "too large"))?,
                domain: g
                    .domain
                    .map(|d| {
                        i32::try_from(d)
                            .map_err(|_| ApiError::bad_field("gpus.domain", "too large"))
                    })
                    .transpose()?,
                kind: g.kind.as_str().to_string(),
                parent: g
                    .parent
                    .map(|p| {
                        i32::try_from(p)
                            .map_err(|_| ApiError::bad_field("gpus.parent", "too large"))
                    })
                    .transpose()?,
            })
        })
        .collect::<Result<_, ApiError>>()?;
    if gpus.len() > MAX_NODE_DEVICES {
        return Err(ApiError::bad_field(
            "gpus",
            format!(
                "{} devices: a node offers at most {MAX_NODE_DEVICES} (GPUs, MIG instances and shards)",
                gpus.len()
            ),
        ));
    }
    if let Some(bad) = gpus
        .iter()
        .find(|g| (g.kind == "gpu") != g.parent.is_none())
    {
        return Err(ApiError::bad_field(
            "gpus.parent",
            format!(
                "device {}: a MIG instance or shard names the GPU it is part of; a whole GPU names none",
                bad.index
            ),
        ));
    }
    let mut seen = HashSet::new();
    if let Some(dup) = gpus.iter().find(|g| !seen.insert(g.index)) {
        return Err(ApiError::bad_field(
            "gpus.index",
            format!("GPU index {} is listed twice", dup.index),
        ));
    }
    crate::nodes::check_features("features", &req.features)?;
    let reported = node::NodeReported {
        cpus: i32::try_from(req.cpus)
            .ok()
            .filter(|_| req.cpus <= berth_core::cores::MAX_NODE_CPUS)
            .ok_or_else(|| {
                ApiError::bad_field(
                    "cpus",
                    format!(
                        "{} CPUs: a node has at most {}",
                        req.cpus,
                        berth_core::cores::MAX_NODE_CPUS
                    ),
                )
            })?,
        memory_mib: i64::try_from(req.memory_mib)
            .map_err(|_| ApiError::bad_field("memory_mib", "too large"))?,
        features: req.features.clone(),
        weight: req
            .weight
            .map(|w| i32::try_from(w).map_err(|_| ApiError::bad_field("weight", "too large")))
            .transpose()?,
        // One domain per CPU id, or none; a domain number fits a GPU domain's column.
        cpu_domains: per_cpu("cpu_domains", "domains", &req.cpu_domains, req.cpus)?,
        cpu_cores: per_cpu("cpu_cores", "cores", &req.cpu_cores, req.cpus)?,
        cpu_sockets: per_cpu("cpu_sockets", "sockets", &req.cpu_sockets, req.cpus)?,
    };
    let mut reported = reported;
    let mut tx = berth_db::begin(pool).await?;
    // A cloud pool's node: it registers while POWERING_UP (its instance booted) or in
    // service (its worker restarted); a slot without an instance has no worker.
    let slot = berth_db::cloud::pool_slot_lock_in_tx(&mut tx, &req.name).await?;
    if let Some(slot) = &slot {
        if matches!(slot.state.as_str(), "POWERED_DOWN" | "POWERING_DOWN") {
            return Err(ApiError::Conflict {
                code: "node_powered_down",
                detail: format!(
                    "node {} of pool {} is {}: its instance is gone or going",
                    req.name, slot.pool, slot.state
                ),
            });
        }
        for f in &slot.features {
            if !reported.features.contains(f) {
                reported.features.push(f.clone());
            }
        }
    }
    node::node_register_reported_in_tx(&mut tx, &req.name, &req.hostname, &reported, &gpus).await?;
    if slot.is_some()
        && berth_db::cloud::pool_slot_joined_in_tx(&mut tx, &req.name, chrono::Utc::now()).await?
    {
        tracing::info!(node.name = %req.name, "pool node joined: in service");
    }
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "node").await?;
    tx.commit().await.map_err(DbError::from)?;
    node::node_get_by_name(pool, &req.name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("node {} vanished", req.name)))
}

/// The node's drain reason for an interruption notice:
/// `reclaimed: spot interruption notice (terminate at 2026-12-01T12:00:00Z)`.
pub fn reclaim_reason(notice: &Interruption) -> String {
    format!(
        "reclaimed: spot interruption notice ({} at {})",
        notice.action,
        notice
            .time
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )
}

/// The node's instance has an interruption notice (a spot reclaim), which only the node
/// itself reports (the sync is authenticated as it): the node drains with
/// [`reclaim_reason`] (a `reclaim` cloud event when it belongs to a pool), and every job
/// run on it is stopped and requeued as a `PreemptMode=REQUEUE` preemption is
/// ([`job::job_reclaim_in_tx`]: PENDING again with its restart count one higher, a
/// `reclaimed` event; `--no-requeue` jobs end NODE_FAIL). The node's next answer lists
/// those runs as cancellations marked `reclaimed`, with the seconds left until the
/// notice's time as their grace. A notice repeated in later syncs changes nothing more.
///
/// # Errors
/// 400 for an action that is not a word; 503 when the database is unreachable.
pub async fn reclaim(
    pool: &Pool,
    node_row: &NodeRow,
    notice: &Interruption,
) -> Result<(), ApiError> {
    if notice.action.is_empty()
        || notice.action.len() > 32
        || !notice
            .action
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ApiError::bad_field(
            "interruption.action",
            "a word: terminate, stop or hibernate",
        ));
    }
    let reason = reclaim_reason(notice);
    let mut tx = berth_db::begin(pool).await?;
    let drained = node::node_reclaim_drain(&mut *tx, node_row.id, &reason).await?;
    let cloud = node::node_cloud_get(&mut *tx, node_row.id).await?;
    let pool_name = cloud.as_ref().and_then(|c| c.pool.clone());
    let instance_id = cloud.as_ref().and_then(|c| c.instance_id.clone());
    if drained {
        tracing::warn!(node.name = %node_row.name, %reason, "node drained: its instance is being reclaimed");
        if let Some(pool_name) = &pool_name {
            berth_db::cloud::cloud_event_insert_in_tx(
                &mut tx,
                pool_name,
                "reclaim",
                Some(&node_row.name),
                instance_id.as_deref(),
                None,
                &reason,
            )
            .await?;
        }
    }
    let mut seen = HashSet::new();
    for live in allocation::allocation_live_runs_on_node(&mut *tx, node_row.id).await? {
        if !seen.insert(live.job_id)
            || !matches!(
                live.job_state.as_str(),
                "RUNNING" | "SUSPENDED" | "COMPLETING"
            )
        {
            continue;
        }
        let nodes = allocation::allocation_list_for_jobs(&mut *tx, &[live.job_id]).await?;
        let outcome =
            job::job_reclaim_in_tx(&mut tx, live.job_id, live.run, &node_row.name, notice.time)
                .await?;
        if outcome == job::NodeFailOutcome::Unchanged {
            continue;
        }
        tracing::warn!(job.id = live.job_id, job.run = live.run, node.name = %node_row.name, ?outcome,
            "job stopped: its node's instance is being reclaimed");
        if let Some(pool_name) = &pool_name {
            let what = match outcome {
                job::NodeFailOutcome::Requeued { .. } => "requeued",
                _ => "ended NODE_FAIL (--no-requeue)",
            };
            berth_db::cloud::cloud_event_insert_in_tx(
                &mut tx,
                pool_name,
                "reclaim",
                Some(&node_row.name),
                instance_id.as_deref(),
                Some(live.job_id),
                &format!("job {} run {} {what}: {reason}", live.job_id, live.run),
            )
            .await?;
        }
        // Every node of the run stops it at its next sync.
        for a in &nodes {
            notify::notify(&mut *tx, notify::NODE_CHANNEL, &a.node_name).await?;
        }
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, &live.job_id.to_string()).await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    Ok(())
}

/// Records the heartbeat and samples of a sync, folds the samples into the stats of the
/// jobs holding those GPUs, and drains the node for any GPU fault it reports.
///
/// # Errors
/// 503 when the database is unreachable.
pub async fn heartbeat(pool: &Pool, node_row: &NodeRow, req: &SyncRequest) -> Result<(), ApiError> {
    // One sample per GPU index (the last one sent): the stats upsert may touch a row once.
    let mut by_index = BTreeMap::new();
    for sample in &req.samples {
        by_index.insert(sample.index, sample);
    }
    let s: Vec<_> = by_index.into_values().collect();
    let indices: Vec<i32> = s.iter().map(|x| x.index as i32).collect();
    let utilization: Vec<i32> = s
        .iter()
        .map(|x| x.utilization_pct.min(100) as i32)
        .collect();
    let memory: Vec<i64> = s.iter().map(|x| x.memory_used_mib as i64).collect();
    let power: Vec<f64> = s.iter().map(|x| x.power_w).collect();
    let temperature: Vec<i32> = s.iter().map(|x| x.temperature_c as i32).collect();
    node::node_heartbeat(
        pool,
        node_row.id,
        &indices,
        &utilization,
        &memory,
        &power,
        &temperature,
    )
    .await?;
    if !s.is_empty() {
        berth_db::gpu_stats::job_gpu_stats_record(
            pool,
            node_row.id,
            &indices,
            &utilization,
            &memory,
            &power,
            &temperature,
        )
        .await?;
        berth_db::gpu_stats::job_gpu_samples_record(
            pool,
            node_row.id,
            &indices,
            &utilization,
            &memory,
            &power,
        )
        .await?;
    }
    if let Some(fault) = req.gpu_faults.first() {
        let reason = req
            .gpu_faults
            .iter()
            .map(berth_core::stats::GpuFault::reason)
            .collect::<Vec<_>>()
            .join("; ");
        if node::node_drain(pool, node_row.id, &reason).await? {
            tracing::warn!(node.name = %node_row.name, gpu = fault.index, %reason, "node drained for a GPU fault");
        }
    }
    node::node_drain_settle(pool, node_row.id).await?;
    Ok(())
}

/// A registration's per-CPU list `field` (`values` of what, e.g. `cores`) as stored: one
/// entry per CPU id of the node's `cpus`, or none (400 naming the field otherwise, or for a
/// value past `i32`).
fn per_cpu(field: &str, what: &str, values: &[u32], cpus: u32) -> Result<Vec<i32>, ApiError> {
    if !values.is_empty() && values.len() != cpus as usize {
        return Err(ApiError::bad_field(
            field,
            format!(
                "{} {what} for {cpus} CPUs: one per CPU id, or none",
                values.len()
            ),
        ));
    }
    values
        .iter()
        .map(|v| i32::try_from(*v).map_err(|_| ApiError::bad_field(field, "too large")))
        .collect()
}
