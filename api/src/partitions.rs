//! Partition management (`GET|PUT|DELETE /v1/partitions/{name}`): what Slurm keeps in
//! slurm.conf's `PartitionName=` lines and changes with `scontrol create|update|delete
//! partition`. Admins and operators change partitions; everyone may read them. The
//! scheduler reads partitions every cycle, so a change applies from its next pass.

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::fairshare::valid_name;
use crate::{views, AppState};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use berth_core::wire::{Partition, PartitionSpec, Problem};
use berth_db::partition::{PartitionDelete, PartitionRow};
use berth_db::{account, node, notify, partition, qos, DbError};

async fn partition_view(state: &AppState, name: &str) -> Result<Partition, ApiError> {
    let row = partition::partition_get(&state.pool, Some(name))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no partition {name}")))?;
    let nodes = node::node_list(&state.pool).await?;
    let gpus = node::gpu_list(&state.pool, None).await?;
    Ok(views::partition_view(&row, &nodes, &gpus))
}

/// Show one partition.
#[utoipa::path(get, path = "/v1/partitions/{name}", tag = "partitions", operation_id = "partition_get",
    params(("name" = String, Path, description = "Partition name")),
    responses((status = 200, description = "The partition", body = Partition),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such partition", body = Problem)),
    security(("bearer" = [])))]
pub async fn partition_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<Partition>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    Ok(Json(partition_view(&state, &name).await?))
}

fn seconds(v: Option<u64>, field: &str) -> Result<Option<i64>, ApiError> {
    match v {
        None => Ok(None),
        Some(0) => Err(ApiError::bad_field(field, "must be at least 1 second")),
        Some(s) if s > berth_core::duration::MAX_SECONDS => Err(ApiError::bad_field(
            field,
            "longer than 100 years; leave it out for no limit",
        )),
        Some(s) => Ok(Some(s as i64)),
    }
}

/// A memory setting in MiB: 1 to [`berth_core::spec::MAX_MEMORY_MIB`].
fn mebibytes(v: Option<u64>, field: &str) -> Result<Option<i64>, ApiError> {
    match v {
        None => Ok(None),
        Some(m) if (1..=berth_core::spec::MAX_MEMORY_MIB).contains(&m) => Ok(Some(m as i64)),
        Some(_) => Err(ApiError::bad_field(
            field,
            format!(
                "must be between 1 and {} MiB; leave it out for none",
                berth_core::spec::MAX_MEMORY_MIB
            ),
        )),
    }
}

/// Checks a definition and turns it into the row to store. Accounts and QOS it names
/// must exist (or, for QOS, be among `more_qos`: ones defined alongside it).
///
/// # Errors
/// [`ApiError::BadRequest`] naming the field; [`ApiError`] from the database.
pub(crate) async fn partition_row(
    pool: &berth_db::Pool,
    name: &str,
    spec: PartitionSpec,
    more_qos: &[String],
) -> Result<PartitionRow, ApiError> {
    if !valid_name(name) || name.starts_with('-') {
        return Err(ApiError::bad_field(
            "name",
            "a partition name is 1-64 letters, digits, `_`, `.` or `-`, not starting with `-`",
        ));
    }
    let default_time = seconds(spec.default_time, "default_time")?;
    let max_time = seconds(spec.max_time, "max_time")?;
    if let (Some(d), Some(m)) = (default_time, max_time) {
        if d > m {
            return Err(ApiError::bad_field(
                "default_time",
                "must not exceed max_time",
            ));
        }
    }
    if let Some(bad) = spec.nodes.iter().find(|n| !valid_name(n)) {
        return Err(ApiError::bad_field(
            "nodes",
            format!("{bad:?} is not a node name (letters, digits, `_.-`)"),
        ));
    }
    for a in &spec.allowed_accounts {
        if account::account_get(pool, a).await?.is_none() {
            return Err(ApiError::bad_field(
                "allowed_accounts",
                format!("no account {a}"),
            ));
        }
    }
    for q in &spec.allowed_qos {
        if !more_qos.contains(q) && qos::qos_get(pool, q).await?.is_none() {
            return Err(ApiError::bad_field("allowed_qos", format!("no QOS {q}")));
        }
    }
    let mut nodes = spec.nodes;
    if !nodes.is_empty() {
        // The slots of pools that name this partition stay in its list.
        nodes.extend(berth_db::cloud::pool_slots_of_partition(pool, name).await?);
    }
    nodes.sort();
    nodes.dedup();
    Ok(PartitionRow {
        name: name.to_string(),
        is_default: spec.is_default,
        default_time,
        max_time,
        nodes,
        priority_tier: i32::try_from(spec.priority_tier)
            .map_err(|_| ApiError::bad_field("priority_tier", "too large"))?,
        max_nodes: match spec.max_nodes {
            None => None,
            Some(0) => return Err(ApiError::bad_field("max_nodes", "must be at least 1")),
            Some(n) => {
                Some(i32::try_from(n).map_err(|_| ApiError::bad_field("max_nodes", "too large"))?)
            }
        },
        allowed_accounts: spec.allowed_accounts,
        allowed_qos: spec.allowed_qos,
        def_cpu_per_gpu: match spec.def_cpu_per_gpu {
            None => None,
            Some(n) if (1..=berth_core::sbatch::MAX_COUNT).contains(&n) => Some(n as i32),
            Some(_) => {
                return Err(ApiError::bad_field(
                    "def_cpu_per_gpu",
                    format!("must be between 1 and {}", berth_core::sbatch::MAX_COUNT),
                ))
            }
        },
        def_mem_per_gpu: mebibytes(spec.def_mem_per_gpu, "def_mem_per_gpu")?,
        def_mem_per_cpu: mebibytes(spec.def_mem_per_cpu, "def_mem_per_cpu")?,
        max_mem_per_node: mebibytes(spec.max_mem_per_node, "max_mem_per_node")?,
    })
}

/// Create or replace a partition (admin or operator).
///
/// The body is the partition's whole definition (Slurm's `PartitionName=` line); absent
/// fields take their defaults. Jobs already submitted keep their time limits; pending jobs
/// are placed on the new node set from the scheduler's next pass. Making a partition the
/// default takes that from the previous default.
#[utoipa::path(put, path = "/v1/partitions/{name}", tag = "partitions", operation_id = "partition_put",
    params(("name" = String, Path, description = "Partition name (letters, digits, `_.-`)")),
    request_body = PartitionSpec,
    responses((status = 200, description = "Replaced", body = Partition),
              (status = 201, description = "Created", body = Partition),
              (status = 400, description = "Bad definition (the field is named)", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem)),
    security(("bearer" = [])))]
pub async fn partition_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: Result<Json<PartitionSpec>, JsonRejection>,
) -> Result<(StatusCode, Json<Partition>), ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_staff()?;
    let Json(spec) = body.map_err(|e| rejection("JSON body", e.body_text()))?;
    let row = partition_row(&state.pool, &name, spec, &[]).await?;
    let mut tx = berth_db::begin(&state.pool).await?;
    let created = partition::partition_put_in_tx(&mut tx, &row).await?;
    notify::notify(&mut *tx, notify::JOBS_CHANNEL, "partition").await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(partition = %name, created, by = %caller.name, "partition defined");
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(partition_view(&state, &name).await?)))
}

/// Delete a partition (admin or operator).
///
/// Refused (409) for the default partition and while jobs that have not ended are in it;
/// ended jobs keep the partition's name in their records.
#[utoipa::path(delete, path = "/v1/partitions/{name}", tag = "partitions", operation_id = "partition_delete",
    params(("name" = String, Path, description = "Partition name")),
    responses((status = 204, description = "Deleted"),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not an admin or operator", body = Problem),
              (status = 404, description = "No such partition", body = Problem),
              (status = 409, description = "The default partition, or jobs still in it", body = Problem)),
    security(("bearer" = [])))]
pub async fn partition_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    caller.require_staff()?;
    let mut tx = berth_db::begin(&state.pool).await?;
    match partition::partition_delete_in_tx(&mut tx, &name).await? {
        PartitionDelete::Deleted => {}
        PartitionDelete::Missing => return Err(ApiError::NotFound(format!("no partition {name}"))),
        PartitionDelete::IsDefault => {
            return Err(ApiError::Conflict {
                code: "default_partition",
                detail: format!("{name} is the default partition: make another the default first"),
            })
        }
        PartitionDelete::ActiveJobs(n) => {
            return Err(ApiError::Conflict {
                code: "partition_in_use",
                detail: format!("{n} pending or running jobs are in partition {name}"),
            })
        }
    }
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(partition = %name, by = %caller.name, "partition deleted");
    Ok(StatusCode::NO_CONTENT)
}
