//! Cloud node pools' rows: `pools`, their node slots (rows of `nodes` with `pool` set),
//! `cloud_launches`, `pool_cooldowns` and `cloud_events`. The api declares pools and
//! their slots; the scheduler leader's scaling reconciler launches and terminates.

use crate::DbError;
use berth_core::pool::InstanceShape;
use sqlx::PgConnection;
use tracing::instrument;

/// Gives node slot `name` of pool `pool` the shape of an instance type: its CPUs,
/// memory, features and simulated-until-joined GPU rows (`slot-<node>-<i>` uuids), and
/// creates it POWERED_DOWN when it does not exist. A slot with an instance keeps what its
/// worker reported: only POWERED_DOWN and POWERING_UP slots are reshaped. Returns the
/// node id, or `None` when a node of that name exists outside the pool.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn, shape, features), err)]
pub async fn slot_shape_set_in_tx(
    conn: &mut PgConnection,
    pool: &str,
    name: &str,
    shape: &InstanceShape,
    features: &[String],
) -> Result<Option<i64>, DbError> {
    let cpus = i32::try_from(shape.cpus).unwrap_or(i32::MAX);
    let memory = i64::try_from(shape.memory_mib).unwrap_or(i64::MAX);
    let id = sqlx::query_scalar!(
        r#"INSERT INTO nodes (name, hostname, state, pool, cpus, memory_mib, features,
                              reported_cpus, reported_memory_mib, reported_features,
                              power_changed_at)
           VALUES ($1, '', 'POWERED_DOWN', $2, $3, $4, $5, $3, $4, $5, now())
           ON CONFLICT (name) DO UPDATE SET
               cpus = CASE WHEN nodes.state IN ('POWERED_DOWN', 'POWERING_UP')
                           THEN EXCLUDED.cpus ELSE nodes.cpus END,
               memory_mib = CASE WHEN nodes.state IN ('POWERED_DOWN', 'POWERING_UP')
                                 THEN EXCLUDED.memory_mib ELSE nodes.memory_mib END,
               reported_cpus = CASE WHEN nodes.state IN ('POWERED_DOWN', 'POWERING_UP')
                                    THEN EXCLUDED.reported_cpus ELSE nodes.reported_cpus END,
               reported_memory_mib = CASE WHEN nodes.state IN ('POWERED_DOWN', 'POWERING_UP')
                                          THEN EXCLUDED.reported_memory_mib
                                          ELSE nodes.reported_memory_mib END,
               features = EXCLUDED.features,
               reported_features = EXCLUDED.reported_features
           WHERE nodes.pool = $2
           RETURNING id"#,
        name,
        pool,
        cpus,
        memory,
        features
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(id) = id else {
        return Ok(None);
    };
    let reshape = sqlx::query_scalar!(
        r#"SELECT state IN ('POWERED_DOWN', 'POWERING_UP') AS "r!" FROM nodes WHERE id = $1"#,
        id
    )
    .fetch_one(&mut *conn)
    .await?;
    if reshape {
        let n = i32::try_from(shape.gpu_count).unwrap_or(0);
        let memory = i64::try_from(shape.gpu_memory_mib).unwrap_or(i64::MAX);
        sqlx::query!(
            r#"INSERT INTO gpus (node_id, index, uuid, model, memory_mib, kind, present)
               SELECT $1, i, 'slot-' || $2 || '-' || i, $3, $4, 'gpu', true
               FROM generate_series(0, $5 - 1) AS i
               ON CONFLICT (node_id, index) DO UPDATE SET uuid = EXCLUDED.uuid,
                   model = EXCLUDED.model, memory_mib = EXCLUDED.memory_mib,
                   kind = 'gpu', parent = NULL, domain = NULL, present = true"#,
            id,
            name,
            shape.gpu_model,
            memory,
            n
        )
        .execute(&mut *conn)
        .await?;
        sqlx::query!(
            "UPDATE gpus SET present = false WHERE node_id = $1 AND index >= $2 AND present",
            id,
            n
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(Some(id))
}

/// Records a cloud event (and the same in the audit log, actor `scheduler`, method
/// `CLOUD`, path `/v1/pools/<pool>` with the kind, node and reason).
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(conn), err)]
pub async fn cloud_event_insert_in_tx(
    conn: &mut PgConnection,
    pool: &str,
    kind: &str,
    node_name: Option<&str>,
    instance_id: Option<&str>,
    job_id: Option<i64>,
    reason: &str,
) -> Result<(), DbError> {
    sqlx::query!(
        "INSERT INTO cloud_events (pool, node_name, instance_id, job_id, kind, reason)
         VALUES ($1, $2, $3, $4, $5, $6)",
        pool,
        node_name,
        instance_id,
        job_id,
        kind,
        reason
    )
    .execute(&mut *conn)
    .await?;
    let path = format!(
        "/v1/pools/{pool} {kind}{}{}: {reason}",
        node_name.map(|n| format!(" node={n}")).unwrap_or_default(),
        instance_id
            .map(|n| format!(" instance={n}"))
            .unwrap_or_default()
    );
    sqlx::query!(
        "INSERT INTO audit_log (actor, role, method, path, status) VALUES ('scheduler', 'system', 'CLOUD', $1, 200)",
        path
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}
