//! Job submission: turns a `JobCreate` (batch script, `sbatch` options, structured spec)
//! into a stored PENDING job, all or nothing, honouring `Idempotency-Key`.

use crate::error::ApiError;
use berth_core::sbatch::{self, SbatchError};
use berth_core::spec::JobSpec;
use berth_core::wire::JobCreate;
use berth_db::job::JobInsert;
use berth_db::{idempotency, job, node, partition, Pool};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

fn sbatch_error(e: SbatchError) -> ApiError {
    let detail = match e.line {
        Some(line) => format!("line {line}: {}: {}", e.option, e.message),
        None => format!("{}: {}", e.option, e.message),
    };
    ApiError::BadRequest {
        code: "invalid_option",
        detail,
        field: Some(e.option),
        line: e.line,
    }
}

/// Parses the submission into a spec and the script to run, and checks the merged spec
/// ([`sbatch::check_spec`]: printable text, counts, memory, times and nice in range).
///
/// # Errors
/// 400 naming the script line and option, or the field.
pub fn parse_submission(req: &JobCreate) -> Result<(JobSpec, String), ApiError> {
    let mut args = req.args.clone();
    let script = req.script.clone().unwrap_or_default();
    if let Some(wrap) = req.spec.as_ref().and_then(|s| s.wrap.clone()) {
        if script.trim().is_empty() && !args.iter().any(|a| a.starts_with("--wrap")) {
            args.push(format!("--wrap={wrap}"));
        }
    }
    if script.trim().is_empty() && !args.iter().any(|a| a.starts_with("--wrap")) {
        return Err(ApiError::bad_field(
            "script",
            "a batch script (or --wrap) is required",
        ));
    }
    let batch = sbatch::parse_batch(&script, &args).map_err(sbatch_error)?;
    let mut spec = batch.spec;
    if let Some(over) = &req.spec {
        sbatch::apply_spec_overrides(&mut spec, over);
    }
    // The structured spec skips the option parser: the merged whole is checked again.
    sbatch::check_spec(&spec).map_err(sbatch_error)?;
    for (field, value) in [
        ("script_name", &req.script_name),
        ("submit_dir", &req.submit_dir),
    ] {
        if let Some(c) = value.as_deref().and_then(berth_core::text::forbidden_char) {
            return Err(ApiError::bad_field(
                field,
                berth_core::text::forbidden_message(c),
            ));
        }
    }
    Ok((spec, batch.script))
}

/// Generic resources this cluster schedules (`--gres` names): GPUs (whole or MIG
/// instances) and GPU shards.
pub const KNOWN_GRES: &[&str] = &["gpu", "shard"];

/// Refuses `--gres` entries naming a resource no node offers, as Slurm refuses an
/// "Invalid generic resource (gres) specification" at submission (a job asking for one
/// could never start).
///
/// # Errors
/// 400 naming `--gres` and the unknown resource.
pub fn check_gres(gres: Option<&str>) -> Result<(), ApiError> {
    let Some(gres) = gres.filter(|g| !g.eq_ignore_ascii_case("none")) else {
        return Ok(());
    };
    for item in gres.split(',') {
        let name = item
            .strip_prefix("gres/")
            .unwrap_or(item)
            .split(':')
            .next()
            .unwrap_or_default();
        if !KNOWN_GRES.contains(&name) {
            return Err(ApiError::bad_field(
                "--gres",
                format!(
                    "invalid generic resource {name:?}: this cluster offers {}",
                    KNOWN_GRES.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Applies `--export` to the submission environment: `ALL` (default) keeps it, `NONE`
/// drops it, and `NAME=value` / `NAME` items add or keep single variables. The
/// submitter's umask (`SLURM_UMASK`, which `sbatch` sets) is always kept, as in Slurm.
pub fn exported_environment(
    export: Option<&str>,
    env: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let Some(export) = export else {
        return env.clone();
    };
    let mut out = BTreeMap::new();
    if let Some(umask) = env.get("SLURM_UMASK") {
        out.insert("SLURM_UMASK".to_string(), umask.clone());
    }
    let mut all = false;
    for item in export.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item {
            "ALL" => all = true,
            "NONE" | "NIL" => {}
            _ => match item.split_once('=') {
                Some((k, v)) => {
                    out.insert(k.to_string(), v.to_string());
                }
                None => {
                    if let Some(v) = env.get(item) {
                        out.insert(item.to_string(), v.clone());
                    }
                }
            },
        }
    }
    if all {
        let mut merged = env.clone();
        merged.extend(out);
        merged
    } else {
        out
    }
}

fn request_hash(req: &JobCreate) -> String {
    let body = serde_json::to_vec(req).unwrap_or_default();
    hex::encode(Sha256::digest(&body))
}

fn positive_i32(value: u32, field: &str) -> Result<i32, ApiError> {
    i32::try_from(value)
        .ok()
        .filter(|v| *v >= 1)
        .ok_or_else(|| ApiError::bad_field(field, format!("must be between 1 and {}", i32::MAX)))
}

/// Stores a submission. Returns the job id and whether it was created now (false: the same
/// `Idempotency-Key` and body were seen before, and that job is returned).
///
/// # Errors
/// 400 for bad options, 409 for an idempotency key reused with another body, 422 for a
/// request no node could ever satisfy or an `--account` that is not the user's, 503 when the database is unreachable.
pub async fn submit_job(
    pool: &Pool,
    user: &str,
    role: berth_core::auth::Role,
    req: &JobCreate,
    idempotency_key: Option<&str>,
) -> Result<(i64, bool), ApiError> {
    let hash = request_hash(req);
    if let Some(key) = idempotency_key {
        if key.is_empty() || key.len() > 255 {
            return Err(ApiError::bad_field(
                "Idempotency-Key",
                "must be 1 to 255 characters",
            ));
        }
        if let Some(seen) = idempotency::idempotency_get(pool, user, key).await? {
            return if seen.request_hash == hash {
                Ok((seen.job_id, false))
            } else {
                Err(ApiError::Conflict {
                    code: "idempotency_conflict",
                    detail: "this Idempotency-Key was used with a different request body".into(),
                })
            };
        }
    }

    let (spec, script) = parse_submission(req)?;
    let staff = matches!(
        role,
        berth_core::auth::Role::Admin | berth_core::auth::Role::Operator
    );
    if spec.nice.is_some_and(|n| n < 0) && !staff {
        return Err(ApiError::Forbidden(
            "--nice: only admins and operators may set a negative nice".into(),
        ));
    }
    check_gres(spec.gres.as_deref())?;
    if spec.asks_gpus_and_shards() {
        return Err(ApiError::bad_field(
            "--gres",
            "a job asks for GPUs or for GPU shards, not both",
        ));
    }
    let partition = partition::partition_get(pool, spec.partition.as_deref())
        .await?
        .ok_or_else(|| match &spec.partition {
            Some(p) => ApiError::bad_field("--partition", format!("no partition named {p:?}")),
            None => ApiError::bad_field("--partition", "no default partition is configured"),
        })?;
    // Slurm: no --time takes the partition's DefaultTime; --time=UNLIMITED (or 0) its
    // MaxTime, which may itself be unlimited. A partition without DefaultTime gives its
    // MaxTime (as Slurm does), so such a job is not left over the limit forever.
    let mut time_limit = match spec.time_limit {
        Some(0) => partition.max_time,
        Some(t) if t > berth_core::duration::MAX_SECONDS => {
            return Err(ApiError::bad_field(
                "--time",
                "longer than 100 years; use UNLIMITED for no limit",
            ))
        }
        Some(t) => Some(t as i64),
        None => partition.default_time.or(partition.max_time),
    };
    if let (Some(limit), Some(max)) = (time_limit, partition.max_time) {
        if limit > max {
            return Err(ApiError::bad_field(
                "--time",
                format!(
                    "time limit {limit} s exceeds partition {}'s maximum of {max} s",
                    partition.name
                ),
            ));
        }
    }
    let account =
        crate::identity::submission_account(pool, user, role, spec.account.as_deref()).await?;
    if let Some(name) = spec.reservation.as_deref() {
        crate::reservations::check_submission(pool, name, user, account.as_deref()).await?;
    }
    let request = spec.resource_request();
    check_satisfiable(pool, &partition, &request).await?;
    let qos_name = check_qos_and_partition_limits(
        pool,
        user,
        &spec,
        &partition,
        request.nodes,
        &mut time_limit,
    )
    .await?;
    let viewer = if staff {
        None
    } else {
        Some((
            user,
            berth_db::membership::membership_coordinated_accounts(pool, user).await?,
        ))
    };
    let scheduling = scheduling_options(pool, &spec, viewer).await?;

    let name = spec
        .job_name
        .clone()
        .or_else(|| spec.wrap.as_ref().map(|_| "wrap".to_string()))
        .or_else(|| req.script_name.clone())
        .unwrap_or_else(|| "sbatch".to_string());
    let work_dir = match (&spec.chdir, &req.submit_dir) {
        (Some(dir), Some(base)) if !dir.starts_with('/') => {
            Some(format!("{}/{}", base.trim_end_matches('/'), dir))
        }
        (Some(dir), _) => Some(dir.clone()),
        (None, base) => base.clone(),
    };
    let environment = exported_environment(spec.export.as_deref(), &req.environment);
    let insert = JobInsert {
        name,
        user_name: user.to_string(),
        account,
        partition: partition.name.clone(),
        qos: Some(qos_name),
        num_nodes: positive_i32(request.nodes, "--nodes")?,
        num_tasks: positive_i32(request.ntasks, "--ntasks")?,
        cpus_per_task: positive_i32(request.cpus_per_task, "--cpus-per-task")?,
        gpus_per_node: i32::try_from(request.gpus_per_node)
            .map_err(|_| ApiError::bad_field("--gpus-per-node", "too large"))?,
        gpu_type: request.gpu_type.clone(),
        gres: if request.shards { "shard" } else { "gpu" }.to_string(),
        exclusive: request.exclusive,
        whole_node: request.whole_node,
        mem_mib: spec.mem_mib.map(|m| m as i64),
        time_limit,
        hold: spec.hold,
        script,
        submit_dir: req.submit_dir.clone(),
        work_dir,
        stdout_pattern: spec.output.clone().unwrap_or_else(|| {
            berth_core::pattern::default_output_for(spec.array.is_some()).to_string()
        }),
        stderr_pattern: spec.error.clone(),
        environment: serde_json::to_value(&environment).unwrap_or_default(),
        spec: serde_json::to_value(&spec).unwrap_or_default(),
        reason: Some(
            if spec.hold {
                "JobHeldUser"
            } else if scheduling
                .begin_time
                .is_some_and(|b| b > chrono::Utc::now())
            {
                "BeginTime"
            } else {
                "None"
            }
            .to_string(),
        ),
        nice: scheduling.nice,
        begin_time: scheduling.begin_time,
        dependency: spec.dependency.clone(),
        array_pending: scheduling.array.as_ref().map(|a| a.indices.to_string()),
        array_max_running: scheduling
            .array
            .as_ref()
            .and_then(|a| a.max_running)
            .map(|m| m.min(i32::MAX as u32) as i32),
        array_task_count: scheduling.array.as_ref().map(|a| a.indices.count() as i32),
    };

    let mut tx = berth_db::begin(pool).await?;
    if !partition::partition_hold_in_tx(&mut tx, &partition.name).await? {
        return Err(ApiError::bad_field(
            "--partition",
            format!("partition {} was just deleted", partition.name),
        ));
    }
    let id = job::job_insert_in_tx(&mut tx, &insert).await?;
    if let Some(key) = idempotency_key {
        idempotency::idempotency_insert_in_tx(&mut tx, user, key, &hash, id).await?;
    }
    berth_db::notify::notify(&mut *tx, berth_db::notify::JOBS_CHANNEL, &id.to_string()).await?;
    tx.commit().await.map_err(berth_db::DbError::from)?;
    tracing::info!(job.id = id, user, "job submitted");
    Ok((id, true))
}

/// The scheduling options of a submission, checked.
struct Scheduling {
    nice: i32,
    begin_time: Option<chrono::DateTime<chrono::Utc>>,
    array: Option<berth_core::array::ArraySpec>,
}

/// Reads `--nice`, `--begin` and `--array`, and checks that every job `--dependency` names
/// exists and is visible to the submitter (`viewer`: the user and the accounts they
/// coordinate; `None` for admins and operators). Slurm refuses a dependency on an
/// unknown job at submission; a job the submitter may not see is unknown to them, with
/// the same answer, so a refusal tells nothing about other tenants' jobs.
///
/// # Errors
/// 400 naming the option.
async fn scheduling_options(
    pool: &Pool,
    spec: &JobSpec,
    viewer: Option<(&str, Vec<String>)>,
) -> Result<Scheduling, ApiError> {
    let begin_time = match &spec.begin {
        Some(b) => Some(
            berth_core::begin::parse_begin(b, chrono::Utc::now())
                .map_err(|e| ApiError::bad_field("--begin", e))?,
        ),
        None => None,
    };
    let array = match &spec.array {
        Some(a) => {
            Some(berth_core::array::parse_array(a).map_err(|e| ApiError::bad_field("--array", e))?)
        }
        None => None,
    };
    if let Some(d) = &spec.dependency {
        // The syntax was checked by the sbatch parser; collect the job ids it names.
        let ids: Vec<i64> = d
            .split([',', '?'])
            .filter_map(|item| item.split_once(':'))
            .flat_map(|(_, ids)| ids.split(':'))
            .filter_map(|id| id.split(['+', '_']).next()?.parse().ok())
            .collect();
        if !ids.is_empty() {
            let (who, accounts) = match &viewer {
                Some((user, accounts)) => (Some(*user), accounts.as_slice()),
                None => (None, &[][..]),
            };
            let found = job::job_visible_ids(pool, &ids, who, accounts).await?;
            if let Some(missing) = ids.iter().find(|id| !found.contains(id)) {
                return Err(ApiError::bad_field(
                    "--dependency",
                    format!("job {missing} named in --dependency={d} does not exist"),
                ));
            }
        }
    }
    Ok(Scheduling {
        nice: spec.nice.unwrap_or(0),
        begin_time,
        array,
    })
}

/// Refuses (422) a request that no node of the partition could ever hold: more nodes than
/// it has, or more GPUs per node than its largest node. Nothing is checked while the
/// partition has no registered node yet (workers may still be starting).
async fn check_satisfiable(
    pool: &Pool,
    partition: &berth_db::partition::PartitionRow,
    request: &berth_core::resources::ResourceRequest,
) -> Result<(), ApiError> {
    let nodes = node::node_list(pool).await?;
    let members: Vec<_> = nodes
        .iter()
        .filter(|n| partition.nodes.is_empty() || partition.nodes.contains(&n.name))
        .collect();
    if members.is_empty() {
        return Ok(());
    }
    if request.nodes as usize > members.len() {
        return Err(ApiError::Unprocessable {
            detail: format!(
                "{} nodes requested but partition {} has {}",
                request.nodes,
                partition.name,
                members.len()
            ),
            field: Some("--nodes".into()),
        });
    }
    if request.gpus_per_node > 0 {
        // Matching GPUs per node, counted in one pass.
        let wanted = request.gpu_type.as_deref().map(str::to_lowercase);
        let mut matching: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
        for g in node::gpu_list(pool, None).await? {
            if (g.kind == "shard") == request.shards
                && wanted
                    .as_deref()
                    .is_none_or(|t| g.model.to_lowercase().contains(t))
            {
                *matching.entry(g.node_id).or_default() += 1;
            }
        }
        let fitting = members
            .iter()
            .filter(|n| matching.get(&n.id).copied().unwrap_or(0) >= request.gpus_per_node as usize)
            .count();
        if fitting < request.nodes as usize {
            return Err(ApiError::Unprocessable {
                detail: format!(
                    "{} node(s) with {} {}{} each requested, but partition {} has {} such node(s)",
                    request.nodes,
                    request.gpus_per_node,
                    request
                        .gpu_type
                        .as_deref()
                        .map(|t| format!("{t} "))
                        .unwrap_or_default(),
                    if request.shards {
                        "GPU shard(s)"
                    } else {
                        "GPU(s)"
                    },
                    partition.name,
                    fitting
                ),
                field: Some("--gres".into()),
            });
        }
    }
    Ok(())
}

/// Checks the QOS (`-q/--qos`, default `normal`) and the partition's limits at submission:
/// the QOS exists and the partition allows it and the job's account, the node count is
/// within the partition's `MaxNodes`, the time limit within the QOS's `MaxWall` (a job
/// without one gets `MaxWall`), and the user is under `MaxSubmitJobsPerUser`. Returns the
/// QOS name.
async fn check_qos_and_partition_limits(
    pool: &Pool,
    user: &str,
    spec: &berth_core::spec::JobSpec,
    partition: &berth_db::partition::PartitionRow,
    nodes: u32,
    time_limit: &mut Option<i64>,
) -> Result<String, ApiError> {
    let qos_name = spec.qos.clone().unwrap_or_else(|| "normal".to_string());
    let qos = berth_db::qos::qos_get(pool, &qos_name)
        .await?
        .ok_or_else(|| ApiError::bad_field("--qos", format!("no QOS named {qos_name:?}")))?;
    if !partition.allowed_qos.is_empty() && !partition.allowed_qos.contains(&qos_name) {
        return Err(ApiError::bad_field(
            "--qos",
            format!(
                "partition {} allows QOS {} only",
                partition.name,
                partition.allowed_qos.join(",")
            ),
        ));
    }
    if !partition.allowed_accounts.is_empty() {
        let account = match &spec.account {
            Some(a) => a.clone(),
            None => berth_db::usage::usage_default_accounts(pool)
                .await?
                .into_iter()
                .find(|(u, _)| u == user)
                .map(|(_, a)| a)
                .unwrap_or_else(|| "root".to_string()),
        };
        if !partition.allowed_accounts.contains(&account) {
            return Err(ApiError::bad_field(
                "--account",
                format!(
                    "partition {} allows accounts {} only",
                    partition.name,
                    partition.allowed_accounts.join(",")
                ),
            ));
        }
    }
    if let Some(max) = partition.max_nodes {
        if i64::from(nodes) > i64::from(max) {
            return Err(ApiError::bad_field(
                "--nodes",
                format!(
                    "partition {} allows at most {max} nodes per job",
                    partition.name
                ),
            ));
        }
    }
    if let Some(max) = qos.max_wall {
        match *time_limit {
            Some(limit) if limit > max => {
                return Err(ApiError::bad_field(
                    "--time",
                    format!("time limit {limit} s exceeds QOS {qos_name}'s MaxWall of {max} s"),
                ))
            }
            Some(_) => {}
            None => *time_limit = Some(max),
        }
    }
    if let Some(max) = qos.max_submit_jobs_per_user {
        let active = berth_db::qos::qos_user_active_jobs(pool, &qos_name, user).await?;
        if active >= i64::from(max) {
            return Err(ApiError::Conflict {
                code: "qos_max_submit_jobs_per_user",
                detail: format!(
                    "QOSMaxSubmitJobPerUserLimit: {user} already has {active} jobs in QOS {qos_name} (MaxSubmitJobsPerUser={max})"
                ),
            });
        }
    }
    Ok(qos_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gpus_are_generic_resources_here() {
        assert!(check_gres(None).is_ok());
        assert!(check_gres(Some("gpu:h100:4")).is_ok());
        assert!(check_gres(Some("gres/gpu:2")).is_ok());
        assert!(check_gres(Some("none")).is_ok());
        let err = check_gres(Some("gpu:1,nvme:1")).unwrap_err();
        assert!(format!("{err:?}").contains("nvme"), "{err:?}");
        assert!(check_gres(Some("foo:1")).is_err());
    }

    #[test]
    fn export_rules() {
        let env: BTreeMap<String, String> = [
            ("A".to_string(), "1".to_string()),
            ("B".to_string(), "2".to_string()),
        ]
        .into();
        assert_eq!(exported_environment(None, &env), env);
        assert!(exported_environment(Some("NONE"), &env).is_empty());
        let some = exported_environment(Some("A,C=3"), &env);
        assert_eq!(some.get("A").map(String::as_str), Some("1"));
        assert_eq!(some.get("C").map(String::as_str), Some("3"));
        assert!(!some.contains_key("B"));
        let all = exported_environment(Some("ALL,C=3"), &env);
        assert_eq!(all.len(), 3);
        // The submitter's umask stays whatever is exported.
        let mut env = env;
        env.insert("SLURM_UMASK".to_string(), "0027".to_string());
        let none = exported_environment(Some("NONE"), &env);
        assert_eq!(none.len(), 1);
        assert_eq!(none["SLURM_UMASK"], "0027");
    }
}
