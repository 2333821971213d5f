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
    parse_submission_full(req).map(|(spec, script, _)| (spec, script))
}

/// The most arguments a batch script may be given (`sbatch job.sh a b …`).
pub const MAX_SCRIPT_ARGS: usize = 4096;

/// [`parse_submission`], with the `sbatch` command's own options (`--test-only` …).
fn parse_submission_full(
    req: &JobCreate,
) -> Result<(JobSpec, String, sbatch::ClientOptions), ApiError> {
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
    if let Some(clusters) = &batch.client.clusters {
        berth_core::cluster::check_clusters(clusters, crate::cluster_name::get(), "--cluster")
            .map_err(|lines| ApiError::BadRequest {
                code: "invalid_option",
                detail: format!("--clusters: {}", lines.join(" ")),
                field: Some("clusters".into()),
                line: None,
            })?;
    }
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
    if req.script_args.len() > MAX_SCRIPT_ARGS {
        return Err(ApiError::bad_field(
            "script_args",
            format!(
                "{} arguments for the script; at most {MAX_SCRIPT_ARGS} are taken",
                req.script_args.len()
            ),
        ));
    }
    if let Some(n) = req.script_args.iter().position(|a| a.contains('\0')) {
        return Err(ApiError::bad_field(
            "script_args",
            format!("argument {} of the script contains a NUL character", n + 1),
        ));
    }
    Ok((spec, batch.script, batch.client))
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
/// 400 for bad options (an `--array` past `MaxArraySize` among them), 409 for an
/// idempotency key reused with another body, 422 for a request no node could ever
/// satisfy or an `--account` that is not the user's, 503 when the database is unreachable
/// or the live queue holds `MaxJobCount` jobs ([`crate::live_queue`]).
pub async fn submit_job(
    state: &crate::AppState,
    user: &str,
    role: berth_core::auth::Role,
    req: &JobCreate,
    idempotency_key: Option<&str>,
) -> Result<(i64, bool), ApiError> {
    let pool = &state.pool;
    let limits = state.limiters.limits();
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

    let prepared = prepare(pool, limits, user, role, req).await?;
    if prepared.test_only {
        return Err(ApiError::bad_field(
            "--test-only",
            "a test-only submission creates no job: send it to POST /v1/jobs/will-run \
             (sbatch --test-only does)",
        ));
    }
    // One job record, an array's too until its tasks start (Slurm's count).
    state.live_queue.admit(pool, limits, 1).await?;
    // Stored with the other submissions of the moment, in one transaction.
    let idempotency = idempotency_key.map(|key| (user.to_string(), key.to_string(), hash));
    let id = state
        .group_commit
        .store(pool, prepared, idempotency)
        .await?;
    Ok((id, true))
}

/// `sbatch --test-only` (`POST /v1/jobs/will-run`): checks the submission exactly as
/// [`submit_job`] does, inserts it in a transaction that is rolled back (so every
/// database rule applies and nothing is kept; the id it drew is never given to a job), and
/// asks `planner` when and where it would start.
///
/// # Errors
/// As [`submit_job`] (400, 403, 422 …); 503 when the database is unreachable; 500 when
/// this api runs without a planner (only an api built without the scheduler).
pub async fn will_run_job(
    state: &crate::AppState,
    user: &str,
    role: berth_core::auth::Role,
    req: &JobCreate,
) -> Result<berth_core::wire::JobWillRun, ApiError> {
    let (pool, planner) = (&state.pool, state.will_run.as_ref());
    let prepared = prepare(pool, state.limiters.limits(), user, role, req).await?;
    let Some(planner) = planner else {
        // Only an api built without the scheduler (its own tests) has none.
        return Err(ApiError::Internal(
            "this api runs without the scheduler's planner: will-run tests are not answered here"
                .into(),
        ));
    };
    let mut tx = berth_db::begin(pool).await?;
    let id = insert_in_tx(&mut tx, &prepared).await?;
    let row = berth_db::snapshot::read_job(&mut tx, id).await?;
    tx.rollback().await.map_err(berth_db::DbError::from)?;
    let row = row.ok_or_else(|| {
        ApiError::Internal(format!("job {id} was not found in its own transaction").into())
    })?;
    Ok((planner.0)(pool.clone(), row).await?)
}

/// A checked submission, ready to insert.
pub(crate) struct Prepared {
    pub(crate) insert: JobInsert,
    pub(crate) partitions: Vec<berth_db::partition::PartitionRow>,
    /// `--test-only` was among the options.
    test_only: bool,
}

/// Inserts a prepared job (holding its partitions against deletion); returns its id.
async fn insert_in_tx(tx: &mut sqlx::PgConnection, prepared: &Prepared) -> Result<i64, ApiError> {
    if let Some(gone) = partitions_gone_in_tx(&mut *tx, prepared).await? {
        return Err(gone);
    }
    Ok(job::job_insert_in_tx(&mut *tx, &prepared.insert).await?)
}

/// Holds the partitions of a prepared job against deletion until the transaction ends;
/// the refusal (400 naming `--partition`) when one was deleted since it was checked.
///
/// # Errors
/// [`DbError`] from the driver.
pub(crate) async fn partitions_gone_in_tx(
    tx: &mut sqlx::PgConnection,
    prepared: &Prepared,
) -> Result<Option<ApiError>, berth_db::DbError> {
    for p in &prepared.partitions {
        if !partition::partition_hold_in_tx(&mut *tx, &p.name).await? {
            return Ok(Some(ApiError::bad_field(
                "--partition",
                format!("partition {} was just deleted", p.name),
            )));
        }
    }
    Ok(None)
}

/// Everything [`submit_job`] checks before storing, and the row it would store.
async fn prepare(
    pool: &Pool,
    limits: &crate::limits::Limits,
    user: &str,
    role: berth_core::auth::Role,
    req: &JobCreate,
) -> Result<Prepared, ApiError> {
    let (spec, script, client) = parse_submission_full(req)?;
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
    let partitions = listed_partitions(pool, &spec).await?;
    let partition = partitions[0].clone();
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
    if let (Some(min), Some(limit)) = (spec.time_min, time_limit) {
        if min as i64 > limit {
            return Err(ApiError::bad_field(
                "--time-min",
                format!("{min} s is longer than the job's time limit ({limit} s)"),
            ));
        }
    }
    let request = spec
        .resource_request_in(&partition.resource_defaults())
        .map_err(|e| ApiError::Unprocessable {
            detail: format!("{}: partition {}: {}", e.option, partition.name, e.message),
            field: Some(e.option.to_string()),
        })?;
    let (nodelist, exclude) = check_node_lists(&spec, &request)?;
    check_satisfiable(pool, &partitions, &spec, &request, &nodelist, &exclude).await?;
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
    let scheduling = scheduling_options(pool, &spec, viewer, limits.max_array_size).await?;

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
        cpus_per_node: positive_i32(request.cpus_per_node, "--cpus-per-task")?,
        mem_per_node_mib: request
            .mem_per_node_mib
            .map(|m| m.min(berth_core::spec::MAX_MEMORY_MIB) as i64),
        nodelist,
        exclude,
        partitions: if partitions.len() > 1 {
            partitions.iter().map(|p| p.name.clone()).collect()
        } else {
            Vec::new()
        },
        time_min: spec.time_min.map(|t| t as i64),
        script_args: req.script_args.clone(),
    };
    Ok(Prepared {
        insert,
        partitions,
        test_only: client.test_only,
    })
}

/// The scheduling options of a submission, checked.
struct Scheduling {
    nice: i32,
    begin_time: Option<chrono::DateTime<chrono::Utc>>,
    array: Option<berth_core::array::ArraySpec>,
}

/// Reads `--nice`, `--begin` and `--array` (its indices below `max_array_size`, Slurm's
/// `MaxArraySize`), and checks that every job `--dependency` names
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
    max_array_size: u32,
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
            let array =
                berth_core::array::parse_array(a).map_err(|e| ApiError::bad_field("--array", e))?;
            berth_core::array::check_max_array_size(&array, max_array_size)
                .map_err(|e| ApiError::bad_field("--array", e))?;
            Some(array)
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

/// The partitions `-p` names, in order (`-p a,b`), or the default partition; each must
/// exist. The first one's defaults, time limits and access rules apply to the job (Slurm
/// checks each; Berth holds a multi-partition job to its first).
///
/// # Errors
/// 400 naming `--partition` and the partition that does not exist.
async fn listed_partitions(
    pool: &Pool,
    spec: &JobSpec,
) -> Result<Vec<berth_db::partition::PartitionRow>, ApiError> {
    let names = spec.partitions();
    if names.is_empty() {
        let default = partition::partition_get(pool, None).await?.ok_or_else(|| {
            ApiError::bad_field("--partition", "no default partition is configured")
        })?;
        return Ok(vec![default]);
    }
    let mut rows = Vec::with_capacity(names.len());
    for name in &names {
        rows.push(
            partition::partition_get(pool, Some(name))
                .await?
                .ok_or_else(|| {
                    ApiError::bad_field("--partition", format!("no partition named {name:?}"))
                })?,
        );
    }
    Ok(rows)
}

/// `-w/--nodelist` and `-x/--exclude`, expanded, checked against each other and `-N` as
/// Slurm does: a list longer than the job's (maximum) node count, or a node both
/// required and excluded, is refused.
///
/// # Errors
/// 400 naming `--nodelist` or `--exclude`.
fn check_node_lists(
    spec: &JobSpec,
    request: &berth_core::resources::ResourceRequest,
) -> Result<(Vec<String>, Vec<String>), ApiError> {
    let nodelist = spec.nodelist_names();
    let exclude = spec.exclude_names();
    let max_nodes = spec.nodes_max.unwrap_or(request.nodes) as usize;
    if nodelist.len() > max_nodes {
        return Err(ApiError::bad_field(
            "--nodelist",
            format!(
                "{} nodes are listed but the job asks for {} (-N): the required node list \
                 includes more nodes than permitted by the node count",
                nodelist.len(),
                max_nodes
            ),
        ));
    }
    if let Some(both) = nodelist.iter().find(|n| exclude.contains(n)) {
        return Err(ApiError::bad_field(
            "--exclude",
            format!("{both} is both required (-w) and excluded (-x)"),
        ));
    }
    Ok((nodelist, exclude))
}

/// The partitions' names for messages: `gpu`, `partitions gpu,cpu`.
fn partition_names(partitions: &[berth_db::partition::PartitionRow]) -> String {
    match partitions {
        [one] => format!("partition {}", one.name),
        many => format!(
            "partitions {}",
            many.iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

/// Refuses a request that no node of its partitions could ever hold (422, naming the
/// option and the resource): more nodes than they have; `-w` naming a node that does not
/// exist or is outside them, or `-x` one that does not exist (400); a `--constraint`
/// feature no node of them has; or, narrowing the nodes step by step, too few nodes left
/// after `-x`, after `--constraint`, with the GPUs, with the CPUs (usable CPUs,
/// [`node::node_capacity_list`]) or with the memory per node asked for; `--mem=0` where
/// the first partition's largest node has more than its `MaxMemPerNode`. Nothing is
/// checked while the partitions have no registered node yet (workers may still be
/// starting).
async fn check_satisfiable(
    pool: &Pool,
    partitions: &[berth_db::partition::PartitionRow],
    spec: &JobSpec,
    request: &berth_core::resources::ResourceRequest,
    nodelist: &[String],
    exclude: &[String],
) -> Result<(), ApiError> {
    let all = node::node_capacity_list(pool).await?;
    let in_partitions = |name: &str| {
        partitions
            .iter()
            .any(|p| p.nodes.is_empty() || p.nodes.iter().any(|n| n == name))
    };
    let members: Vec<&node::NodeCapacity> = all.iter().filter(|n| in_partitions(&n.name)).collect();
    if members.is_empty() {
        return Ok(());
    }
    let where_ = partition_names(partitions);
    let unprocessable = |field: &str, detail: String| ApiError::Unprocessable {
        detail,
        field: Some(field.to_string()),
    };
    // `--mem=0` asks all of each node's usable memory: as Slurm's `_valid_pn_min_mem`
    // does, the largest node of the (first) partition must be within its MaxMemPerNode.
    if let (Some(0), Some(first)) = (request.mem_per_node_mib, partitions.first()) {
        if let Some(max) = first.max_mem_per_node {
            let largest = members
                .iter()
                .filter(|n| first.nodes.is_empty() || first.nodes.contains(&n.name))
                .map(|n| n.memory_mib)
                .max()
                .unwrap_or(0);
            if largest > max {
                return Err(unprocessable(
                    "--mem",
                    format!(
                        "--mem: partition {}: --mem=0 is all of each node's memory, {largest} \
                         MiB on its largest node, more than the partition allows \
                         (MaxMemPerNode={max} MiB)",
                        first.name
                    ),
                ));
            }
        }
    }
    let wanted = request.nodes as usize;
    if wanted > members.len() {
        return Err(unprocessable(
            "--nodes",
            format!(
                "{} nodes requested but {where_} has {}",
                request.nodes,
                members.len()
            ),
        ));
    }
    for name in nodelist {
        if !all.iter().any(|n| &n.name == name) {
            return Err(ApiError::bad_field(
                "--nodelist",
                format!("no node named {name}"),
            ));
        }
        if !in_partitions(name) {
            return Err(ApiError::bad_field(
                "--nodelist",
                format!("node {name} is not in {where_}"),
            ));
        }
    }
    if let Some(name) = exclude.iter().find(|x| !all.iter().any(|n| &n.name == *x)) {
        return Err(ApiError::bad_field(
            "--exclude",
            format!("no node named {name}"),
        ));
    }
    // The nodes that could be the job's, narrowed one requirement at a time; the first
    // requirement that leaves too few is the one named.
    let too_few = |what: String| {
        if wanted == 1 {
            format!("no node of {where_} has {what}")
        } else {
            format!("fewer than {wanted} nodes of {where_} have {what}")
        }
    };
    let mut candidates: Vec<&node::NodeCapacity> = members
        .into_iter()
        .filter(|n| !exclude.contains(&n.name))
        .collect();
    if candidates.len() < wanted {
        return Err(unprocessable(
            "--exclude",
            format!(
                "-x leaves {} node(s) of {where_}; the job needs {wanted}",
                candidates.len()
            ),
        ));
    }
    let constraint = spec
        .constraint
        .as_deref()
        .map(|text| {
            berth_core::constraint::Constraint::parse(text)
                .map(|c| (text, c))
                .map_err(|e| ApiError::bad_field("--constraint", e.to_string()))
        })
        .transpose()?;
    if let Some((text, constraint)) = &constraint {
        for feature in constraint.features() {
            if !candidates
                .iter()
                .any(|n| n.features.iter().any(|f| f == feature))
            {
                return Err(unprocessable(
                    "--constraint",
                    format!("invalid feature specification: no node of {where_} has feature {feature:?}"),
                ));
            }
        }
        candidates.retain(|n| constraint.node_may_match(&n.features));
        if candidates.len() < wanted {
            return Err(unprocessable(
                "--constraint",
                format!(
                    "{} node(s) of {where_} can satisfy --constraint={text}; the job needs {wanted}",
                    candidates.len()
                ),
            ));
        }
    }
    if request.gpus_per_node > 0 {
        // Matching GPUs per node, counted in one pass.
        let wanted_type = request.gpu_type.as_deref().map(str::to_lowercase);
        let mut matching: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
        for g in node::gpu_list(pool, None).await? {
            if (g.kind == "shard") == request.shards
                && wanted_type
                    .as_deref()
                    .is_none_or(|t| g.model.to_lowercase().contains(t))
            {
                *matching.entry(g.node_id).or_default() += 1;
            }
        }
        candidates.retain(|n| {
            matching.get(&n.id).copied().unwrap_or(0) >= request.gpus_per_node as usize
        });
        if candidates.len() < wanted {
            return Err(unprocessable(
                "--gres",
                format!(
                    "{} node(s) with {} {}{} each requested, but {where_} has {} such node(s)",
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
                    candidates.len()
                ),
            ));
        }
    }
    // A node that does not count its CPUs (0) or memory (0) holds any amount. Where
    // cores have several threads a job holds whole cores ([`berth_core::cores`]): with
    // one thread per core (`--hint=nomultithread`), a core per CPU it asks for.
    let cpus = i64::from(request.cpus_per_node);
    let threads = berth_core::cores::hint_threads_per_core(spec.hint.as_deref());
    // The most CPUs a job of these threads per core may ask for on a node: its whole
    // usable cores, each giving the job as many threads as it uses (`None`: any amount).
    let most = |n: &node::NodeCapacity| -> Option<u64> {
        if n.cpus == 0 {
            return None;
        }
        let cores: Vec<u32> = n.cpu_cores.iter().map(|c| (*c).max(0) as u32).collect();
        let (node_threads, usable) = berth_core::cores::CoreLayout::summary(
            &cores,
            n.cpus.clamp(0, i64::from(u32::MAX)) as u32,
        );
        let node_threads = node_threads.max(1);
        let used = threads.map_or(node_threads, |t| t.clamp(1, node_threads));
        Some(u64::from(usable / node_threads) * u64::from(used))
    };
    // In the unit the refusal names: CPUs, or cores with the hint.
    let largest = candidates.iter().filter_map(|n| most(n)).max().unwrap_or(0);
    candidates.retain(|n| most(n).is_none_or(|m| m >= u64::from(request.cpus_per_node)));
    if candidates.len() < wanted {
        let (field, asked) = cpus_asked(spec, request);
        let what = match threads {
            Some(_) => format!("{cpus} cores (one thread of each, --hint)"),
            None => format!("{cpus} CPUs"),
        };
        return Err(unprocessable(
            field,
            format!("{asked}: {} (the largest has {largest})", too_few(what)),
        ));
    }
    if let Some(mem) = request.mem_per_node_mib {
        let mem = i64::try_from(mem).unwrap_or(i64::MAX);
        let largest = candidates.iter().map(|n| n.memory_mib).max().unwrap_or(0);
        candidates.retain(|n| n.memory_mib == 0 || n.memory_mib >= mem);
        if candidates.len() < wanted {
            let option = request.mem_option.unwrap_or("--mem");
            let field = if option.starts_with("--") {
                option
            } else {
                "--mem"
            };
            return Err(unprocessable(
                field,
                format!(
                    "{option} ({mem} MiB per node): {} (the largest has {largest} MiB)",
                    too_few(format!("{mem} MiB of memory"))
                ),
            ));
        }
    }
    // Counts (`a*2`) and matching ORs (`[a|b]`) span the job's nodes: some `wanted` of the
    // nodes left must satisfy the expression together.
    if let Some((text, constraint)) = &constraint {
        let features: Vec<&[String]> = candidates.iter().map(|n| n.features.as_slice()).collect();
        let required: Vec<bool> = candidates
            .iter()
            .map(|n| nodelist.contains(&n.name))
            .collect();
        if constraint.choose(&features, &required, wanted).is_none() {
            return Err(unprocessable(
                "--constraint",
                format!("no {wanted} node(s) of {where_} together satisfy --constraint={text}"),
            ));
        }
    }
    Ok(())
}

/// The option that asked for the CPUs per node, and how it reads (`-c 8`,
/// `-c 2 × 4 tasks per node`, `--cpus-per-gpu=4 × 2 GPUs per node`).
fn cpus_asked(
    spec: &JobSpec,
    r: &berth_core::resources::ResourceRequest,
) -> (&'static str, String) {
    let per_node = |n: u32, what: &str| {
        if n == 1 {
            String::new()
        } else {
            format!(" × {n} {what} per node")
        }
    };
    match r.cpus_option {
        "--cpus-per-gpu" => (
            "--cpus-per-gpu",
            format!(
                "--cpus-per-gpu={}{}",
                spec.cpus_per_gpu.unwrap_or_default(),
                per_node(r.gpus_per_node, "GPUs")
            ),
        ),
        "DefCpuPerGPU" => (
            "--gres",
            format!(
                "the partition's DefCpuPerGPU × {} GPUs per node",
                r.gpus_per_node
            ),
        ),
        "--cpus-per-task" => (
            "--cpus-per-task",
            format!(
                "-c {}{}",
                r.cpus_per_task,
                per_node(r.tasks_per_node, "tasks")
            ),
        ),
        _ => (
            if spec.ntasks_per_node.is_some() {
                "--ntasks-per-node"
            } else {
                "--ntasks"
            },
            format!("{} tasks per node (one CPU each)", r.tasks_per_node),
        ),
    }
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
